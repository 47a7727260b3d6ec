"""``CopiedPartition``: one source partition being copied; ``PartitionOpener``: where its copying starts.

A partition starts at the source group's committed offset (the partition's first record when there is
none). When the target partition is the same partition of a topic with as many partitions (``keep``), its
``FrontierTracker`` continues from the last offset sync of it, or starts at the target's end; copies the
target holds past the last sync (an unclean stop) are recognised by their provenance (``_scan_tail``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mongocdc.replication.clients import Cluster
from mongocdc.replication.provenance import HopEncoder, hops
from mongocdc.replication.syncs import StoredSyncs
from mongocdc.replication.translation import FrontierTracker, Point

log = logging.getLogger("mongocdc.replication")


class CopiedPartition:
    """The state of one source partition: where it goes, what is in flight, its frontier."""

    __slots__ = (
        "acks",
        "committed",
        "done",
        "early",
        "encoder",
        "events",
        "keep",
        "last_sync",
        "next_offset",
        "on_delivery",
        "partition",
        "seq",
        "skips",
        "start_point",
        "target_low",
        "target_partition",
        "target_topic",
        "topic",
        "tracker",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        target_topic: str,
        keep: bool,
        tracker: FrontierTracker | None,
        encoder: HopEncoder,
        start: int,
        seq: int,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.target_topic = target_topic
        self.keep = keep
        self.target_partition = partition if keep else -1
        self.tracker = tracker
        self.encoder = encoder
        self.events: list[Any] = []  # source offsets copied (int), or (offset, counterpart | None) for loop skips
        self.acks: list[int] = []  # target offsets acknowledged, in produce order
        # the copies' delivery reports (None: the producer keeps a failure, nothing else to do)
        self.on_delivery: Callable[[Any, Any], None] | None = None
        self.skips = 0
        self.next_offset = start
        self.done = start  # the source offset after the last record whose copy is acknowledged
        self.committed = start
        self.early: dict[int, list[int]] = {}
        self.seq = seq
        self.last_sync: Point | None = None  # nothing written yet: the first sync is written before copying
        self.start_point: Point | None = None  # the partition's start, to write to its own slot (START_SLOT)
        self.target_low = 0  # the target partition's first offset when replication of it started here


class PartitionOpener:
    """Opens the partitions copied from ``source`` (named ``source_id``) to ``target``, given the ``stored`` syncs."""

    def __init__(self, source: Cluster, target: Cluster, source_id: str, stored: StoredSyncs) -> None:
        self.source = source
        self.target = target
        self.source_id = source_id
        self.stored = stored

    def open(
        self, topic: str, partition: int, target_topic: str, keep: bool, committed: dict[tuple[str, int], int]
    ) -> CopiedPartition:
        """The state of ``topic[partition]`` copied to ``target_topic`` (same partition when ``keep``), starting
        at the group's ``committed`` offset."""
        low, _ = self.source.watermarks(topic, partition)
        committed_offset = committed.get((topic, partition), -1)
        start = committed_offset if committed_offset >= 0 else low
        if start < low:
            log.warning("%s[%d]: records %d to %d were deleted before they were copied", topic, partition, start, low)
            start = low
        encoder = HopEncoder(self.source_id, topic, partition)
        tracker: FrontierTracker | None = None
        seq = 0
        early: dict[int, list[int]] = {}
        start_point: Point | None = None
        target_low = 0
        if keep:
            target_low, target_high = self.target.watermarks(target_topic, partition)
            sync = self.stored.latest.get((topic, partition))
            older = self.stored.points.get((topic, partition), [])
            if sync is not None and (sync.target_topic, sync.target_partition) == (target_topic, partition):
                tracker = FrontierTracker(
                    sync.upstream, sync.downstream, pending=sync.pending, older=older, back=sync.back
                )
                seq = sync.seq
                if (topic, partition) not in self.stored.starts:  # written by an older version: the earliest point
                    start_point = min([*older, sync.point])
            else:
                tracker = FrontierTracker(start, target_low)
                start_point = tracker.point
                if committed_offset >= 0 and target_high > target_low:
                    log.warning(
                        "%s[%d]: no offset sync on the target; translation of this partition starts at offset %d",
                        topic,
                        partition,
                        start,
                    )
            if target_high > tracker.frontier:  # copies written after the last sync (an unclean stop), or none yet
                threshold = max(start, tracker.upstream)
                early = self._scan_tail(topic, partition, target_topic, tracker, target_high, threshold)
        part = CopiedPartition(topic, partition, target_topic, keep, tracker, encoder, start, seq)
        part.early = early
        part.start_point = start_point
        part.target_low = target_low
        return part

    def _scan_tail(
        self, topic: str, partition: int, target_topic: str, tracker: FrontierTracker, end: int, threshold: int
    ) -> dict[int, list[int]]:
        """After an unclean stop: find our copies written after the last sync, so the frontier can pass them.

        A copy of a record below ``threshold`` is covered now; a copy of a later record is covered
        when that record is copied again.
        """
        early: dict[int, list[int]] = {}
        found = 0
        for msg in self.target.read_range(target_topic, partition, tracker.frontier, end):
            trail = hops(msg.headers())
            if not trail:
                continue
            hop = trail[-1]
            if (hop.cluster, hop.topic, hop.partition) != (self.source_id, topic, partition):
                continue
            found += 1
            if hop.offset < threshold:
                tracker.cover(msg.offset())
            else:
                early.setdefault(hop.offset, []).append(msg.offset())
        if found:
            log.info("%s[%d]: found %d copies written after the last offset sync", topic, partition, found)
        return early
