"""What a checkpoint says about the streaming query, read without starting Spark.

From Spark's own files: ``offsets/<batch>`` (the Kafka offsets each batch ends at) and
``commits/<batch>`` (batches completed). From the job's ``mongocdc/`` directory: ``job.json``
(what runs, since when, how it ended) and ``progress/<batch>.json`` (Spark's progress reports:
rows, rows per second, and the offsets behind the latest at the end of each batch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mongocdc.errors import UsageError

STATE_DIR = "mongocdc"  # the same as job.STATE_DIR (job imports pyspark; this module must not)
RECENT = 10


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

    def to_dict(self) -> dict[str, Any]:
        last = self.last_report or {}
        latest = self.reports[-1] if self.reports else {}
        recent = [r for r in self.reports if r.get("numInputRows")][-RECENT:]
        duration_ms = sum(int((r.get("durationMs") or {}).get("triggerExecution", 0)) for r in recent)
        rows = sum(int(r.get("numInputRows") or 0) for r in recent)
        return {
            "checkpoint": self.checkpoint,
            "status": self.job.get("status", "unknown"),
            "started_at": self.job.get("started_at"),
            "updated_at": self.job.get("updated_at"),
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
            "lag": lag_of(latest) if latest else None,
            "offsets": self.offsets,
        }


def _rate(value: Any) -> float | None:
    try:
        return None if value is None else round(float(value), 1)
    except (TypeError, ValueError):
        return None


def read_status(checkpoint: str) -> CheckpointStatus:
    """The status of the query whose checkpoint is at ``checkpoint``; ``UsageError`` when there is none."""
    root = local_path(checkpoint)
    if not (root / "offsets").is_dir() and not (root / STATE_DIR / "job.json").is_file():
        raise UsageError(
            f"{checkpoint} is not the checkpoint of a mongocdc spark job (no offsets/ and no {STATE_DIR}/job.json)",
            hint="pass the --checkpoint the job runs with (default: <warehouse>/_mongocdc/checkpoint)",
        )
    status = CheckpointStatus(checkpoint=str(root))
    job_file = root / STATE_DIR / "job.json"
    if job_file.is_file():
        status.job = json.loads(job_file.read_text(encoding="utf-8"))
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
