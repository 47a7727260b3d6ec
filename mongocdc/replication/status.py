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
