"""What a checkpoint says about the streaming query, read without starting Spark.

From Spark's own files: ``offsets/<batch>`` (the Kafka offsets each batch ends at) and
``commits/<batch>`` (batches completed). From the job's ``mongocdc/`` directory: ``job.json``
(what runs, since when, how it ended) and ``progress/<batch>.json`` (Spark's progress reports:
rows, rows per second, and the offsets behind the latest at the end of each batch).

A running job rewrites ``job.json`` every few seconds (``heartbeat_every_s``) and after every batch, with
its pid and host: a job whose ``job.json`` says ``running`` but was not rewritten for ``stale_after_s``, or
whose process is gone (same host), is ``stale`` (``liveness``). The lag is measured against the topics'
current end offsets, asked of the broker (``end_offsets``), not against what the last batch planned.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mongocdc.errors import MongocdcError, UsageError

STATE_DIR = "mongocdc"  # the same as job.STATE_DIR (job imports pyspark; this module must not)
RECENT = 10
STALE_AFTER_S = 60.0
"""A job that says it runs and whose ``job.json`` was not rewritten for this long is ``stale`` (it rewrites it
every ``job.HEARTBEAT_EVERY_S``, 5 s, and after every batch)."""
LIVE_STATES = ("starting", "running", "stopping")


def local_path(location: str) -> Path:
    """A checkpoint location as a local path (``file:`` URIs too); other filesystems are refused."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else location).expanduser()
    raise UsageError(
        f"{location}: mongocdc spark status reads local checkpoints only ({parsed.scheme}: is not local)",
        hint="copy the checkpoint's offsets/, commits/ and mongocdc/ directories to a local directory and point "
        "--checkpoint at it",
    )


def _batch_files(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def _source_offsets(path: Path) -> dict[str, dict[str, int]]:
    """The Kafka offsets in a checkpoint ``offsets/<batch>`` file (``v1``, metadata, then one line per source)."""
    offsets: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[2:]:
        line = line.strip()
        if not line.startswith("{"):
            continue
        for topic, partitions in json.loads(line).items():
            offsets.setdefault(topic, {}).update({str(p): int(o) for p, o in partitions.items()})
    return offsets


def _offsets_map(value: Any) -> dict[str, dict[str, int]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in value.items() if isinstance(parts, dict)}


def lag_of(report: dict[str, Any]) -> int | None:
    """Records between the batch's end offsets and the latest offsets Kafka had then (all partitions)."""
    total, known = 0, False
    for source in report.get("sources") or []:
        end, latest = _offsets_map(source.get("endOffset")), _offsets_map(source.get("latestOffset"))
        for topic, partitions in latest.items():
            for partition, offset in partitions.items():
                if partition in end.get(topic, {}):
                    total += max(0, offset - end[topic][partition])
                    known = True
    return total if known else None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (one of another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Liveness:
    """Whether the job that wrote ``job.json`` still runs, as far as its heartbeat and its pid tell."""

    status: str
    """The job's state, ``stale`` for a job that says it runs but has stopped writing ``job.json``."""
    not_updated_for_s: float | None
    """Seconds since ``job.json`` was last written (``None`` when it has no time)."""
    process: str
    """``alive``, ``gone`` (the job's pid does not exist on this host) or ``unknown`` (another host, no pid, or
    a job that is not running)."""


def liveness(
    job: Mapping[str, Any],
    now: datetime,
    stale_after_s: float = STALE_AFTER_S,
    *,
    host: str | None = None,
    alive: Callable[[int], bool] = pid_alive,
) -> Liveness:
    """A job that says it runs is ``stale`` when its ``job.json`` was not written for ``stale_after_s``, or at
    once when it was written on this host by a process that no longer exists (killed, crashed)."""
    status = str(job.get("status", "unknown"))
    age = None
    try:
        updated = datetime.fromisoformat(str(job["updated_at"]))
        age = max(0.0, (now - (updated if updated.tzinfo else updated.replace(tzinfo=UTC))).total_seconds())
    except (KeyError, TypeError, ValueError):
        pass
    if status not in LIVE_STATES:
        return Liveness(status, age, "unknown")
    process = "unknown"
    pid = job.get("pid")
    if isinstance(pid, int) and job.get("host") == (host if host is not None else socket.gethostname()):
        process = "alive" if alive(pid) else "gone"
    if process == "gone" or age is None or age > stale_after_s:
        return Liveness("stale", age, process)
    return Liveness(status, age, process)


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 4 min``, ``3 d 2 h``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


EndOffsets = dict[str, dict[str, tuple[int, int]]]
"""``topic → partition → (low, high)`` watermarks, as the broker has them now."""


def lag_against(offsets: Mapping[str, Mapping[str, int]], ends: EndOffsets) -> tuple[int, dict[str, int]]:
    """Records in the topics that the job has not applied: per partition, its end offset less the committed
    offset (a partition the job has not read yet: from its first offset). Returns the total and per topic."""
    by_topic: dict[str, int] = {}
    for topic, partitions in ends.items():
        done = offsets.get(topic, {})
        by_topic[topic] = sum(
            max(0, high - max(low, done[partition])) if partition in done else max(0, high - low)
            for partition, (low, high) in partitions.items()
        )
    return sum(by_topic.values()), by_topic


def end_offsets(
    client: Mapping[str, str], topics: Iterable[str], pattern: str | None, timeout_s: float = 5.0
) -> EndOffsets:
    """Each topic's watermarks now: ``topics`` and every topic whose whole name matches ``pattern``
    (mongocdc's Kafka layer, ``client``: librdkafka settings with ``bootstrap.servers``)."""
    from mongocdc.kafka.reader import TopicReader

    reader = TopicReader(client)
    counts = reader.topics(timeout=timeout_s)
    wanted = set(topics)
    if pattern is not None:
        wanted |= {name for name in counts if re.fullmatch(pattern, name)}
    return {
        topic: {str(p): mark for p, mark in enumerate(reader.watermarks(topic, counts[topic], timeout=timeout_s))}
        for topic in sorted(wanted)
        if topic in counts
    }


@dataclass
class CheckpointStatus:
    checkpoint: str
    job: dict[str, Any] = field(default_factory=dict)
    last_committed_batch: int | None = None
    last_planned_batch: int | None = None
    offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    reports: list[dict[str, Any]] = field(default_factory=list)

    @property
    def batches_committed(self) -> int:
        return 0 if self.last_committed_batch is None else self.last_committed_batch + 1

    @property
    def last_report(self) -> dict[str, Any] | None:
        with_rows = [r for r in self.reports if r.get("numInputRows")]
        return with_rows[-1] if with_rows else (self.reports[-1] if self.reports else None)

    def topics(self) -> tuple[list[str], str | None]:
        """The topics the job reads: those it named and those of its offsets; its pattern."""
        named = [str(t) for t in self.job.get("topics") or []]
        return sorted({*named, *self.offsets}), self.job.get("topic_pattern")

    def to_dict(
        self,
        *,
        now: datetime | None = None,
        stale_after_s: float = STALE_AFTER_S,
        ends: EndOffsets | None = None,
        ends_error: str | None = None,
    ) -> dict[str, Any]:
        """What ``spark status`` shows; ``ends``: the topics' end offsets now (the lag is measured against them;
        without them, against the offsets the last batch saw, and ``lag_source`` says so)."""
        last = self.last_report or {}
        latest = self.reports[-1] if self.reports else {}
        recent = [r for r in self.reports if r.get("numInputRows")][-RECENT:]
        duration_ms = sum(int((r.get("durationMs") or {}).get("triggerExecution", 0)) for r in recent)
        rows = sum(int(r.get("numInputRows") or 0) for r in recent)
        alive = liveness(self.job, now or datetime.now(UTC), stale_after_s)
        if ends is not None:
            lag: int | None
            lag, lag_by_topic = lag_against(self.offsets, ends)
            lag_source = "broker"
        else:
            lag, lag_by_topic = (lag_of(latest) if latest else None), {}
            lag_source = f"last batch ({ends_error})" if ends_error else "last batch"
        return {
            "checkpoint": self.checkpoint,
            "status": alive.status if self.job else "unknown",
            "job_status": self.job.get("status", "unknown"),
            "started_at": self.job.get("started_at"),
            "updated_at": self.job.get("updated_at"),
            "not_updated_for": None if alive.not_updated_for_s is None else duration_text(alive.not_updated_for_s),
            "not_updated_for_s": None if alive.not_updated_for_s is None else round(alive.not_updated_for_s, 1),
            "pid": self.job.get("pid"),
            "host": self.job.get("host"),
            "process": alive.process,
            "error": self.job.get("error"),
            "warehouse": self.job.get("warehouse"),
            "format": self.job.get("format"),
            "batches_committed": self.batches_committed,
            "last_committed_batch": self.last_committed_batch,
            "in_flight_batch": self.last_planned_batch
            if self.last_planned_batch is not None and self.last_planned_batch != self.last_committed_batch
            else None,
            "last_batch_at": last.get("timestamp"),
            "last_batch_rows": int(last.get("numInputRows") or 0) if last else None,
            "input_rows_per_second": _rate(last.get("inputRowsPerSecond")),
            "processed_rows_per_second": _rate(last.get("processedRowsPerSecond")),
            "recent_rows_per_second": round(rows * 1000 / duration_ms, 1) if duration_ms else None,
            "lag": lag,
            "lag_by_topic": lag_by_topic,
            "lag_source": lag_source,
            "offsets": self.offsets,
        }


def _rate(value: Any) -> float | None:
    try:
        return None if value is None else round(float(value), 1)
    except (TypeError, ValueError):
        return None


def _read_job(path: Path, attempts: int = 20) -> dict[str, Any]:
    """``job.json`` (``{}`` when there is none); a running job replaces it whole every few seconds, but a
    filesystem that cannot move a file over another leaves a moment without it: read again then."""
    for attempt in range(attempts):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return dict(doc) if isinstance(doc, dict) else {}
        except FileNotFoundError:
            if attempt == 0 and not path.parent.is_dir():
                return {}
        except ValueError:
            pass
        time.sleep(0.05)
    return {}


def read_status(checkpoint: str) -> CheckpointStatus:
    """The status of the query whose checkpoint is at ``checkpoint``; ``UsageError`` when there is none."""
    root = local_path(checkpoint)
    if not (root / "offsets").is_dir() and not (root / STATE_DIR / "job.json").is_file():
        raise UsageError(
            f"{checkpoint} is not the checkpoint of a mongocdc spark job (no offsets/ and no {STATE_DIR}/job.json)",
            hint="pass the --checkpoint the job runs with (default: <warehouse>/_mongocdc/checkpoint)",
        )
    status = CheckpointStatus(checkpoint=str(root))
    status.job = _read_job(root / STATE_DIR / "job.json")
    commits, planned = _batch_files(root / "commits"), _batch_files(root / "offsets")
    status.last_committed_batch = commits[-1] if commits else None
    status.last_planned_batch = planned[-1] if planned else None
    if status.last_committed_batch is not None and (root / "offsets" / str(status.last_committed_batch)).is_file():
        status.offsets = _source_offsets(root / "offsets" / str(status.last_committed_batch))
    progress = root / STATE_DIR / "progress"
    if progress.is_dir():
        for path in sorted(progress.glob("*.json")):
            try:
                status.reports.append(json.loads(path.read_text(encoding="utf-8")))
            except ValueError:
                continue  # a report being written
    return status


def status_with_lag(
    status: CheckpointStatus,
    client: Mapping[str, str],
    *,
    stale_after_s: float = STALE_AFTER_S,
    timeout_s: float = 5.0,
) -> dict[str, Any]:
    """``status.to_dict()`` with the lag against the topics' end offsets now (``client``: librdkafka settings;
    without ``bootstrap.servers``, the job's own); a broker that does not answer leaves the last batch's."""
    topics, pattern = status.topics()
    settings = dict(client)
    if not settings.get("bootstrap.servers") and status.job.get("bootstrap_servers"):
        settings["bootstrap.servers"] = str(status.job["bootstrap_servers"])
    if not settings.get("bootstrap.servers") or not (topics or pattern):
        return status.to_dict(stale_after_s=stale_after_s, ends_error="no broker or topics known")
    try:
        ends = end_offsets(settings, topics, pattern, timeout_s)
    except MongocdcError as error:
        return status.to_dict(stale_after_s=stale_after_s, ends_error=f"the broker did not answer: {error.message}")
    return status.to_dict(stale_after_s=stale_after_s, ends=ends)
