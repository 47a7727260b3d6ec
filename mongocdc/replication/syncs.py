"""Offset syncs on the target (``offset-syncs.topic``): read back at start, written as frontiers move.

A sync is one partition's ``FrontierTracker`` point (``translation.OffsetSync``), keyed by partition and a
slot, so compaction keeps an exponentially spaced history; the partition's first point (the start of the
copied range, sequence 0) has a slot of its own that is never replaced. Every start writes each new
partition's start (once) and current point before anything is copied (``write_before_copying``), so
every offset a group may commit has a point at or below it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mongocdc.kafka.producer import KafkaProducer
from mongocdc.replication.clients import Cluster
from mongocdc.replication.translation import OffsetSync, Point

if TYPE_CHECKING:
    from mongocdc.replication.partitions import CopiedPartition


def written_back(back: int, provenance: bool) -> int:
    """``Point.back`` as written: not known (-1) without provenance headers (copies look like the target's own)."""
    return back if provenance else -1


@dataclass
class StoredSyncs:
    """What the syncs topic holds for one source cluster, by ``(topic, partition)``."""

    latest: dict[tuple[str, int], OffsetSync] = field(default_factory=dict)
    points: dict[tuple[str, int], list[Point]] = field(default_factory=dict)
    starts: set[tuple[str, int]] = field(default_factory=set)
    """Partitions whose start sync (sequence 0) is on the target."""

    @classmethod
    def load(cls, target: Cluster, topic: str, source_id: str) -> StoredSyncs:
        stored = cls()
        for msg in target.read_all(topic):
            sync = OffsetSync.parse(msg.key(), msg.value())
            if sync is None or sync.source != source_id:
                continue
            key = (sync.topic, sync.partition)
            stored.points.setdefault(key, []).append(sync.point)
            if sync.seq == 0:
                stored.starts.add(key)
            latest = stored.latest.get(key)
            if latest is None or sync.seq >= latest.seq:
                stored.latest[key] = sync
        return stored


class SyncWriter:
    """Writes the syncs of the partitions copied from ``source_id`` to ``topic`` through ``producer`` (not waiting
    for their acknowledgement: the commit that follows does, or the next one)."""

    def __init__(
        self, producer: KafkaProducer, topic: str, source_id: str, provenance: bool, stored: StoredSyncs
    ) -> None:
        self._producer = producer
        self.topic = topic
        self.source_id = source_id
        self.provenance = provenance
        self._starts = stored.starts

    def _produce(
        self, part: CopiedPartition, point: Point, seq: int, now_ms: int, pending: tuple[tuple[int, int], ...] = ()
    ) -> None:
        sync = OffsetSync(
            self.source_id,
            part.topic,
            part.partition,
            point.upstream,
            point.downstream,
            part.target_topic,
            part.partition,
            seq=seq,
            ts=now_ms,
            pending=pending,
            back=written_back(point.back, self.provenance),
        )
        self._producer.produce(self.topic, sync.value(), sync.key())

    def write(self, part: CopiedPartition, now_ms: int) -> None:
        """Write the current point of ``part`` as its next sync."""
        tracker = part.tracker
        assert tracker is not None
        part.seq += 1
        point = tracker.point
        self._produce(part, point, part.seq, now_ms, tuple(tracker.pending_ranges()))
        part.last_sync = point

    def write_before_copying(self, parts: Iterable[CopiedPartition], now_ms: int) -> int:
        """Write each new partition's start (its own slot, once) and its current point; how many were written.

        Before anything is copied, so that every offset a group may commit from the start of the copied
        range on has a point at or below it, whatever happened to the replicator before (a restart, a
        crash, a sync compacted away).
        """
        written = 0
        for part in parts:
            tracker = part.tracker
            if tracker is None:
                continue
            start = part.start_point
            if start is not None:
                self._produce(part, start, 0, now_ms)
                self._starts.add((part.topic, part.partition))
                part.start_point = None
                part.last_sync = start
                written += 1
            if tracker.point != part.last_sync:
                self.write(part, now_ms)
                written += 1
        return written
