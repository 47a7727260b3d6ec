"""``TopicMirror``: which source topics are copied, what they are called on the target, and their target topics.

A target topic the replicator creates has the source topic's partition count and the configs set on the
source topic; when the source topic grows, so does its copy, so that every record keeps its partition. A
target topic that exists with another partition count gets records partitioned by key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from mongocdc.replication.clients import Cluster
from mongocdc.replication.naming import NameFilter, TopicRenamer

log = logging.getLogger("mongocdc.replication")


@dataclass(frozen=True, slots=True)
class GrownTopic:
    """A selected source topic with partitions not copied yet: ``known`` of its ``count`` are."""

    topic: str
    target_topic: str
    count: int
    known: int


class TopicMirror:
    """The topics ``selected`` on ``source`` and their copies on ``target`` (named by ``renamer``)."""

    def __init__(
        self, source: Cluster, target: Cluster, selected: NameFilter, renamer: TopicRenamer, replication_factor: int
    ) -> None:
        self.source = source
        self.target = target
        self.selected = selected
        self.renamer = renamer
        self.replication_factor = replication_factor
        self.counts: dict[str, int] = {}
        """Partitions copied so far, by source topic."""

    def grown(self) -> list[GrownTopic]:
        """The selected source topics with partitions not copied yet (new topics, or topics that grew)."""
        source_topics = self.source.topics()
        grown = []
        for topic in self.selected.select(source_topics):
            count, known = source_topics[topic], self.counts.get(topic, 0)
            if count > known:
                grown.append(GrownTopic(topic, self.renamer(topic), count, known))
        return grown

    def prepare(self, grown: GrownTopic, target_topics: dict[str, int], kept: Callable[[str], bool]) -> bool:
        """Create or grow the target topic of ``grown``; whether partitions are kept (same count) or chosen by key.

        ``target_topics`` are the target's partition counts, ``kept(topic)`` whether the partitions copied so far
        kept theirs.
        """
        topic, target_topic, count, known = grown.topic, grown.target_topic, grown.count, grown.known
        target_count = target_topics.get(target_topic)
        if target_count is None:
            configs = self.source.topic_configs(topic)
            self.target.create_topic(target_topic, count, configs, self.replication_factor)
            log.info("created %s on the target (%d partitions, configs %s)", target_topic, count, configs or "default")
            return True
        if known and target_count == known and kept(topic):
            # the source topic grew: grow the copy so partitions stay aligned
            self.target.add_partitions(target_topic, count)
            return True
        if target_count == count:
            return True
        log.warning(
            "%s has %d partitions on the source but %s has %d on the target: records are partitioned by key there, "
            "and consumer groups of this topic are translated by timestamp",
            topic,
            count,
            target_topic,
            target_count,
        )
        return False


def describe_assignments(assignments: dict[tuple[str, int], int]) -> str:
    """``topic[partition]@offset`` of the first ten, and how many more."""
    shown = ", ".join(f"{topic}[{partition}]@{offset}" for (topic, partition), offset in list(assignments.items())[:10])
    return shown + (f" and {len(assignments) - 10} more" if len(assignments) > 10 else "")
