"""cProfile over every thread (mongocdc snapshots and streams on worker threads)."""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class ThreadProfiles:
    """Collects one ``cProfile.Profile`` per thread started while it is active, plus the caller's."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _start_in_thread(self, frame: FrameType, event: str, arg: Any) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        with self._lock:
            self.profiles.append(profile)
        profile.enable()

    @contextmanager
    def active(self) -> Iterator[ThreadProfiles]:
        main = cProfile.Profile()
        self.profiles.append(main)
        threading.setprofile(self._start_in_thread)
        main.enable()
        try:
            yield self
        finally:
            main.disable()
            threading.setprofile(None)

    def stats(self) -> pstats.Stats:
        merged: pstats.Stats | None = None
        for profile in self.profiles:
            try:
                profile.create_stats()
            except Exception:  # a thread still running: take what it recorded
                continue
            if not getattr(profile, "stats", None):
                continue
            if merged is None:
                merged = pstats.Stats(profile)
            else:
                merged.add(profile)
        if merged is None:
            raise RuntimeError("nothing was profiled")
        return merged


def top_functions(stats: pstats.Stats, *, limit: int = 25, exclude_idle: bool = True) -> list[dict[str, Any]]:
    """The functions with the most own time (``tottime``), with their share of all own time.

    Time spent waiting (lock acquires, ``select``/``poll``, ``Event.wait``, ``sleep``) is listed
    separately by ``exclude_idle``: it is where threads block, not where they work.
    """
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    rows: list[tuple[str, int, float, float]] = []
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in raw.items():
        label = _label(file, line, name)
        if not (exclude_idle and _is_idle(label)):
            rows.append((label, calls, tottime, cumtime))
    total = sum(r[2] for r in rows) or 1.0
    rows.sort(key=lambda r: r[2], reverse=True)
    return [
        {
            "function": label,
            "calls": calls,
            "own_s": round(tottime, 3),
            "own_share": round(tottime / total, 4),
            "cumulative_s": round(cumtime, 3),
        }
        for label, calls, tottime, cumtime in rows[:limit]
    ]


def cumulative(stats: pstats.Stats, names: list[str]) -> dict[str, float]:
    """Cumulative seconds of the functions whose label contains each of ``names``."""
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    result: dict[str, float] = {}
    for wanted in names:
        best = 0.0
        for (file, line, name), (_cc, _calls, _tottime, cumtime, _callers) in raw.items():
            if wanted in _label(file, line, name):
                best = max(best, cumtime)
        result[wanted] = round(best, 3)
    return result


def busy_seconds(stats: pstats.Stats) -> float:
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    return sum(t for (f, ln, n), (_c, _k, t, _u, _r) in raw.items() if not _is_idle(_label(f, ln, n)))


_IDLE = (
    "acquire' of '_thread.lock",
    "acquire' of '_thread.RLock",
    "method 'poll' of 'select.poll'",
    "select.select",
    "time.sleep",
    "method 'flush' of 'cimpl.Producer'",  # waits for the broker's acknowledgements
    "get_watermark_offsets",  # the benchmark's own completion check
    "method 'list_topics'",  # start-up
)


def _is_idle(label: str) -> bool:
    return any(marker in label for marker in _IDLE)


def _label(file: str, line: int, name: str) -> str:
    if file == "~":
        return name
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    if "/mongocdc/" in file:
        file = "mongocdc/" + file.split("/mongocdc/", 1)[1]
    elif "/bench/" in file:
        file = "bench/" + file.split("/bench/", 1)[1]
    return f"{file}:{line}({name})"


def render(stats: pstats.Stats, *, sort: str = "tottime", limit: int = 30) -> str:
    buffer = io.StringIO()
    stats.stream = buffer  # type: ignore[attr-defined]
    stats.sort_stats(sort).print_stats(limit)
    return buffer.getvalue()
