"""cProfile across threads, reduced to the thread that does the work.

mongocdc copies and streams on worker threads, and pymongo and the benchmark harness run
threads of their own that mostly wait (server monitors, the completion check). cProfile
profiles one thread each, so a profile is started in every thread created while
:meth:`ThreadProfiles.active` is on; :meth:`ThreadProfiles.worker` is the one with the most
function calls: the thread that reads, converts and produces.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

StatsTable = dict[tuple[str, int, str], tuple[int, int, float, float, Any]]

BREAKDOWN: tuple[tuple[str, str, str], ...] = (
    # (what, file suffix, function): cumulative time of each, where present; rows may nest.
    ("MongoDB reads: snapshot chunk queries (CollectionScanner.chunks)", "scan.py", "chunks"),
    ("MongoDB reads: pymongo find cursor (Cursor.next)", "cursor.py", "next"),
    ("MongoDB reads: change stream (ChangeStream.try_next)", "change_stream.py", "try_next"),
    ("  of which waiting for the server (socket recv_into)", "~", "<method 'recv_into' of '_socket.socket' objects>"),
    ("  of which BSON decoding (bson decode_all)", "~", "<built-in method bson._cbson._decode_all>"),
    ("change document -> ChangeEvent (convert_change)", "changes.py", "convert_change"),
    ("  of which resume token re-encoding (position_of)", "changes.py", "position_of"),
    ("collection filter per event (is_collection_included)", "settings.py", "is_collection_included"),
    ("document BSON -> JSON (document_to_json)", "codec.py", "document_to_json"),
    ("  of which dict -> BSON re-encoding (bson.encode)", "bson/__init__.py", "encode"),
    ("  of which BSON decoding for JSON (bson.decode)", "bson/__init__.py", "decode"),
    ("  of which the JSON text (json encoder)", "~", "<method 'encode' of 'json.encoder.JSONEncoder' objects>"),
    ("key JSON (value_to_json, bson.json_util)", "codec.py", "value_to_json"),
    ("snapshot event construction (SnapshotRunner._event)", "snapshot.py", "_event"),
    ("envelope value JSON (EnvelopeCodec.value)", "envelope.py", "value"),
    ("envelope key JSON (EnvelopeCodec.key)", "envelope.py", "key"),
    ("baseline envelope JSON (_envelope)", "baseline.py", "_envelope"),
    ("KafkaSink.produce (produce + poll + ack callbacks)", "producer.py", "produce"),
    ("baseline produce (produce + poll)", "baseline.py", "_produce"),
    ("loop: extra KafkaSink.poll per change", "producer.py", "poll"),
    ("loop: _observe_source per change", "streaming.py", "_observe_source"),
    ("loop: AckTracker.add_position per change", "acks.py", "add_position"),
    ("loop: Metrics.record_event per change", "metrics.py", "record_event"),
)


class ThreadProfiles:
    """One ``cProfile.Profile`` per thread started while :meth:`active`, plus the caller's."""

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

    def per_thread(self) -> list[pstats.Stats]:
        out: list[pstats.Stats] = []
        for profile in self.profiles:
            try:
                out.append(pstats.Stats(profile))
            except (TypeError, ValueError):  # a thread that recorded nothing
                continue
        return out

    def worker(self) -> pstats.Stats:
        threads = self.per_thread()
        if not threads:
            raise RuntimeError("nothing was profiled")
        return max(threads, key=lambda s: int(s.total_calls))  # type: ignore[attr-defined]


def _table(stats: pstats.Stats) -> StatsTable:
    table: StatsTable = stats.stats  # type: ignore[attr-defined]
    return table


def total_seconds(stats: pstats.Stats) -> float:
    return float(stats.total_tt)  # type: ignore[attr-defined]


def top_functions(stats: pstats.Stats, *, limit: int = 25) -> list[dict[str, Any]]:
    """The functions with the most own time (``tottime``) and their share of the thread's time."""
    rows = [
        (_label(file, line, name), calls, tottime, cumtime)
        for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in _table(stats).items()
    ]
    total = total_seconds(stats) or 1.0
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


def breakdown(stats: pstats.Stats) -> list[dict[str, Any]]:
    """Cumulative time of the pipeline's stages (``BREAKDOWN``) present in ``stats``."""
    total = total_seconds(stats) or 1.0
    table = _table(stats)
    rows: list[dict[str, Any]] = []
    for what, file_suffix, function in BREAKDOWN:
        seconds = 0.0
        calls = 0
        for (file, _line, name), (_cc, ncalls, _tottime, cumtime, _callers) in table.items():
            if name == function and (file == file_suffix if file_suffix == "~" else file.endswith(file_suffix)):
                seconds += cumtime
                calls += ncalls
        if calls:
            rows.append(
                {"stage": what, "calls": calls, "seconds": round(seconds, 3), "share": round(seconds / total, 4)}
            )
    return rows


def _label(file: str, line: int, name: str) -> str:
    if file == "~":
        return name
    for marker in ("/site-packages/", "/lib/python3.11/", "/lib/python3.12/", "/lib/python3.13/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    for package in ("mongocdc", "bench"):
        if f"/{package}/" in file:
            file = package + "/" + file.split(f"/{package}/", 1)[1]
            break
    return f"{file}:{line}({name})"
