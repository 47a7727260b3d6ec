"""Checkpoints on the target (``checkpoints.topic``): each selected source group's committed offsets, translated.

A checkpoint is a group's committed offset with the point of the partition's ``FrontierTracker`` at or below
it (``FrontierTracker.at``: exact while the offset is in the run-length history, an older sync's point
otherwise; the target's start below the first point): every committed partition gets one, and only what
changed since the last one is written again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from mongocdc.kafka.producer import KafkaProducer
from mongocdc.replication.clients import Cluster
from mongocdc.replication.naming import NameFilter
from mongocdc.replication.partitions import CopiedPartition
from mongocdc.replication.poller import GroupOffsets
from mongocdc.replication.syncs import written_back
from mongocdc.replication.translation import Checkpoint, Point


class CheckpointWriter:
    """Reads the ``groups`` selected on ``source`` and writes their checkpoints to ``topic`` through ``producer``."""

    def __init__(
        self,
        source: Cluster,
        groups: NameFilter,
        producer: KafkaProducer,
        topic: str,
        source_id: str,
        provenance: bool,
    ) -> None:
        self.source = source
        self.groups = groups
        self._producer = producer
        self.topic = topic
        self.source_id = source_id
        self.provenance = provenance
        self._written: dict[tuple[str, str, int], tuple[int, int]] = {}

    def group_offsets(self) -> GroupOffsets:
        """The committed offsets of every selected group on the source (admin requests: they block)."""
        return {group: self.source.committed(group) for group in self.source.group_ids() if self.groups(group)}

    def write(self, offsets: GroupOffsets, parts: Mapping[tuple[str, int], CopiedPartition]) -> int:
        """Write the checkpoints of the groups' ``offsets`` on the copied ``parts`` that changed since the last
        ones (not waiting for their acknowledgement); how many were written."""
        now_ms = int(time.time() * 1000)
        written = 0
        for group, committed_offsets in sorted(offsets.items()):
            for (topic, partition), committed in committed_offsets.items():
                part = parts.get((topic, partition))
                if part is None or part.tracker is None:
                    continue
                point = part.tracker.at(committed)
                if point is None:  # below the start of the copied range: nothing below the target's start is read
                    point = Point(committed, part.target_low, -1)
                key = (group, topic, partition)
                if self._written.get(key) == (committed, point.downstream):
                    continue
                checkpoint = Checkpoint(
                    self.source_id,
                    group,
                    topic,
                    partition,
                    committed,
                    point.downstream,
                    part.target_topic,
                    part.partition,
                    ts=now_ms,
                    point_upstream=point.upstream,
                    back=written_back(point.back, self.provenance),
                )
                self._producer.produce(self.topic, checkpoint.value(), checkpoint.key())
                self._written[key] = (committed, point.downstream)
                written += 1
        return written
