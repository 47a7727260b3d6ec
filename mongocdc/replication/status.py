"""``ReplicationStats`` and how ``replicate`` measures its lag and copy rate."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.replication.partitions import CopiedPartition


@dataclass
class ReplicationStats:
    """What the replicator did so far; ``lag`` is the sum over partitions of records not yet copied."""

    copied: int = 0
    skipped_loops: int = 0
    bytes: int = 0
    commits: int = 0
    syncs: int = 0
    checkpoints: int = 0
    topics: int = 0
    partitions: int = 0
    lag: int | None = None
    records_per_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary_rows(self) -> list[list[Any]]:
        """The stats as ``[what, value]`` rows in words, for the summary table a stop prints."""
        return [
            ["records copied", self.copied],
            ["records not copied back (they came from the target)", self.skipped_loops],
            ["bytes copied", self.bytes],
            ["records behind (lag)", "unknown" if self.lag is None else self.lag],
            ["copy rate, last interval (records/s)", self.records_per_s],
            ["source offset commits", self.commits],
            ["offset syncs written", self.syncs],
            ["group checkpoints written", self.checkpoints],
            ["topics", self.topics],
            ["partitions", self.partitions],
        ]


class StatusGate:
    """Which periodic statuses are worth a line: one where records were copied or skipped or the lag changed
    since the last line said; an idle replicator says nothing (not "copied 34 records (0/s)" every interval)."""

    def __init__(self) -> None:
        self._said: tuple[int, int, int | None] | None = None
        self._copied_then = 0

    def news(self, stats: ReplicationStats) -> int | None:
        """The records copied since the last line when ``stats`` is worth one (remembered as said), else ``None``."""
        now = (stats.copied, stats.skipped_loops, stats.lag)
        if now == self._said:
            return None
        self._said = now
        new, self._copied_then = stats.copied - self._copied_then, stats.copied
        return new


class StatusMeter:
    """Fills in ``stats``' lag (from the high watermarks the copying consumer last fetched, no request) and its
    copy rate since the previous ``measure``."""

    def __init__(self, stats: ReplicationStats) -> None:
        self.stats = stats
        self._mark = (time.monotonic(), 0)

    def measure(self, parts: Iterable[CopiedPartition], consumer: KafkaConsumer | None) -> ReplicationStats:
        stats = self.stats
        if consumer is not None:
            lag = 0
            known = False
            for part in parts:
                high = consumer.cached_high(part.topic, part.partition)
                if high is not None:
                    known = True
                    lag += max(0, high - part.next_offset)
            stats.lag = lag if known else None
        now = time.monotonic()
        then, count = self._mark
        total = stats.copied + stats.skipped_loops
        if now > then:
            stats.records_per_s = round((total - count) / (now - then), 1)
        self._mark = (now, total)
        return stats
