"""``mongocdc failover translate``: a consumer group's committed source offsets as target offsets.

Per partition: the committed offset on the source (or, with the source unreachable, the last one the
replicator checkpointed), the target offset from the offset syncs and checkpoints on the target
(``translation.resolve``: never past a record the group has not consumed), by record timestamp when
no sync covers the topic, and how many records the group may see again. ``apply`` writes the result
to the group on the target, only while the group has no active members there.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from mongocdc.errors import ConfigError, GroupActiveError, PartialTranslationError, UnreachableError, UsageError
from mongocdc.replication.clients import Cluster
from mongocdc.replication.naming import NameFilter, TopicRenamer
from mongocdc.replication.provenance import origin_on
from mongocdc.replication.translation import Checkpoint, Choice, Method, OffsetSync, Point, choose, translate
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.failover")


@dataclass(frozen=True)
class PartitionTranslation:
    """One row: ``partition`` is the source partition (``None`` for a key-partitioned copy, translated per target
    partition); ``again``: how many records the group reads again from ``target_offset`` (``None``: not known);
    ``reason``: why a committed partition is not translated."""

    topic: str
    partition: int | None
    committed: int | None
    target_topic: str | None
    target_partition: int | None
    target_offset: int | None
    method: Method
    again: int | None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TranslationReport:
    """The translation of one group, and what ``--apply`` / ``--dry-run`` did with it."""

    group: str
    source: str
    source_reachable: bool
    rows: list[PartitionTranslation] = field(default_factory=list)
    action: str = "shown"  # "shown", "would write" (--dry-run), "written" (--apply)
    unchecked: list[tuple[str, int]] = field(default_factory=list)
    """With the source unreachable: replicated partitions of the group's topics without a checkpoint of the group
    (the group may have committed there after the last checkpoint, or never)."""

    @property
    def untranslated(self) -> list[PartitionTranslation]:
        """Rows of partitions the group committed on whose target offset could not be found."""
        return [row for row in self.rows if row.committed is not None and row.target_offset is None]

    @property
    def warnings(self) -> list[str]:
        """What an operator must know before moving the group: each partition that is not translated, named."""
        found = [
            f"{row.topic}[{row.partition}] (committed {row.committed}) cannot be translated: {row.reason or 'unknown'}"
            for row in self.untranslated
        ]
        found += [
            f"{topic}[{partition}] has no checkpoint of group {self.group}: if the group committed an offset there "
            "after the replicator's last checkpoint, it is not translated"
            for topic, partition in self.unchecked
        ]
        return found

    @property
    def offsets(self) -> dict[tuple[str, int], int]:
        """What ``--apply`` writes: target offset by ``(target topic, partition)`` for every translated row."""
        return {
            (row.target_topic, row.target_partition): row.target_offset
            for row in self.rows
            if row.target_topic is not None and row.target_partition is not None and row.target_offset is not None
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "source": self.source,
            "source_reachable": self.source_reachable,
            "action": self.action,
            "partitions": [row.to_dict() for row in self.rows],
            "untranslated": [[row.topic, row.partition] for row in self.untranslated],
            "unchecked": [list(tp) for tp in self.unchecked],
        }


@dataclass(frozen=True)
class TranslateOptions:
    """Where the replicator keeps its records and how it names things (the same settings as ``replicate``)."""

    syncs_topic: str = "mongocdc-offset-syncs.internal"
    checkpoints_topic: str = "mongocdc-checkpoints.internal"
    rename_format: str = "${topic}"
    source_alias: str | None = None
    topics: tuple[str, ...] = (".*",)
    topics_exclude: tuple[str, ...] = ()
    source_timeout_s: float = 10.0
    backoff: Backoff = field(default_factory=Backoff)


class Translator:
    """Translates consumer groups from ``source`` to ``target`` (``source`` may be down, or ``None``)."""

    def __init__(self, source: Cluster | None, target: Cluster, options: TranslateOptions) -> None:
        self.source = source
        self.target = target
        self.options = options

    def translate(self, group: str) -> TranslationReport:
        self.target.connect(self.options.backoff)
        reachable = self.source is not None and self.source.reachable(self.options.source_timeout_s)
        syncs = [s for m in self.target.read_all(self.options.syncs_topic) if (s := _sync(m)) is not None]
        checkpoints = [
            c for m in self.target.read_all(self.options.checkpoints_topic) if (c := _checkpoint(m)) is not None
        ]
        source_id = self._source_identity(group, reachable, checkpoints)
        syncs = [s for s in syncs if s.source == source_id]
        checkpoints = [c for c in checkpoints if c.source == source_id]
        selected = NameFilter(self.options.topics, self.options.topics_exclude)
        mine = {(c.topic, c.partition): c for c in checkpoints if c.group == group}
        if reachable:
            assert self.source is not None
            everywhere = self.source.committed(group)
            committed = {tp: offset for tp, offset in everywhere.items() if selected(tp[0])}
            if not committed:
                raise UsageError(
                    f"consumer group {group} has no committed offsets on the source cluster at {self.source.bootstrap}"
                    + (" on the replicated topics" if everywhere else " (the group does not exist there)"),
                    hint="check the group name (`kafka-consumer-groups --list` on the source); nothing was translated "
                    "or written",
                )
        else:
            committed = {tp: c.upstream for tp, c in mine.items() if selected(tp[0])}
            if not committed:
                where = self.source.bootstrap if self.source is not None else "(no --source given)"
                raise UnreachableError(
                    f"the source cluster {where} is unreachable and the target holds no checkpoint of group {group} "
                    f"(from source {source_id}) in {self.options.checkpoints_topic}",
                    hint="bring the source back, or check the group name and that `mongocdc replicate` ran with "
                    "--groups matching it (checkpoints are written every emit.checkpoints.interval.seconds)",
                )
        report = TranslationReport(group, source_id, reachable)
        report.rows = self._rows(committed, syncs, checkpoints, mine, source_id, reachable)
        if not reachable:
            topics = {topic for topic, _ in committed}
            known = {(s.topic, s.partition) for s in syncs if s.topic in topics}
            report.unchecked = sorted(known - set(committed))
        for warning in report.warnings:
            log.warning("%s", warning)
        return report

    def _source_identity(self, group: str, reachable: bool, checkpoints: list[Checkpoint]) -> str:
        if self.options.source_alias:
            return self.options.source_alias
        if reachable:
            assert self.source is not None
            return self.source.identity(None)
        known = sorted({c.source for c in checkpoints if c.group == group})
        if len(known) == 1:
            log.info("source unreachable: translating from the checkpoints of source cluster %s", known[0])
            return known[0]
        if not known:
            raise UnreachableError(
                f"the source cluster is unreachable and the target holds no checkpoint of group {group}",
                hint="bring the source back, or check the group name and that `mongocdc replicate` checkpointed it",
            )
        raise ConfigError(
            f"the source cluster is unreachable and the target holds checkpoints of group {group} from several "
            f"source clusters: {', '.join(known)}",
            hint="name the one to translate from: set source.cluster.alias to its id (in the config file or "
            "MONGOCDC_SOURCE_CLUSTER_ALIAS)",
        )

    def _rows(
        self,
        committed: dict[tuple[str, int], int],
        syncs: list[OffsetSync],
        checkpoints: list[Checkpoint],
        mine: dict[tuple[str, int], Checkpoint],
        source_id: str,
        reachable: bool,
    ) -> list[PartitionTranslation]:
        points: dict[tuple[str, int], list[Point]] = {}
        where: dict[tuple[str, int], tuple[str, int]] = {}
        records: list[OffsetSync | Checkpoint] = [*syncs, *checkpoints]
        for record in records:
            key = (record.topic, record.partition)
            points.setdefault(key, []).append(record.point)
            where[key] = (record.target_topic, record.target_partition)
        renamer = TopicRenamer(self.options.rename_format, source_id)
        target_counts = self.target.topics()
        rows: list[PartitionTranslation] = []
        by_timestamp: dict[str, dict[int, int]] = {}
        for (topic, partition), offset in sorted(committed.items()):
            key = (topic, partition)
            target_topic, target_partition = where.get(key, (renamer(topic), partition))
            if target_topic not in target_counts:
                rows.append(
                    PartitionTranslation(
                        topic, partition, offset, target_topic, None, None, "none", None,
                        f"{target_topic} does not exist on the target cluster",
                    )
                )  # fmt: skip
                continue
            if key in points:
                choice = self._choose(source_id, topic, partition, offset, points[key], target_topic, target_partition)
                rows.append(
                    PartitionTranslation(
                        topic,
                        partition,
                        offset,
                        target_topic,
                        target_partition,
                        choice.offset,
                        choice.method,
                        choice.again,
                    )
                )
                continue
            if not reachable or self.source is None:
                rows.append(
                    PartitionTranslation(
                        topic, partition, offset, target_topic, None, None, "none", None,
                        "no offset sync covers it, and the source cluster is not there to read timestamps from",
                    )
                )  # fmt: skip
                continue
            ts = _first_unconsumed_time(self.source, topic, partition, offset)
            by_timestamp.setdefault(topic, {})[partition] = ts if ts is not None else -1
        for topic, times in sorted(by_timestamp.items()):
            rows.extend(self._by_timestamp(topic, times, committed, renamer(topic), target_counts[renamer(topic)]))
        return rows

    def _choose(
        self,
        source_id: str,
        topic: str,
        partition: int,
        committed: int,
        points: list[Point],
        target_topic: str,
        target_partition: int,
    ) -> Choice:
        """Start at the point at or below ``committed`` (the target's start when there is none), read the target
        partition from there to its end and pick the offset that reads least again (``translation.choose``)."""
        low_offset, high_offset = self.target.watermarks(target_topic, target_partition)
        low = translate(points, committed)
        start = low_offset if low is None else max(low.downstream, low_offset)
        known = [] if low is None else [p.back for p in points if p.upstream == low.upstream and p.back >= 0]
        back = max(known, default=0)  # records of the target's own below it: consumed
        above = [p for p in points if p.upstream > committed]
        back_above: int | None = None  # at or above it: not consumed; in between: not known
        if low is not None and low.upstream == committed:
            back_above = back if known else None
        elif above:
            nearest = min(p.upstream for p in above)
            known = [p.back for p in above if p.upstream == nearest and p.back >= 0]
            back_above = max(known) if known else None
        records = (
            (msg.offset(), hop.offset if hop is not None and hop.partition == partition else None)
            for msg in self.target.read_range(target_topic, target_partition, start, high_offset)
            for hop in (origin_on(msg.headers(), source_id, topic),)
        )
        return choose(records, high_offset, committed, back, back_above)

    def _by_timestamp(
        self,
        topic: str,
        times: dict[int, int],
        committed: dict[tuple[str, int], int],
        target_topic: str,
        target_count: int,
    ) -> list[PartitionTranslation]:
        """No sync covers ``topic``: the earliest target offset with a timestamp at or after the first record the
        group has not consumed. With as many partitions on both sides, per partition; otherwise records were
        partitioned by key, so every target partition starts at the earliest such time over all source partitions.
        """
        assert self.source is not None
        source_count = self.source.topics().get(topic, 0)
        rows: list[PartitionTranslation] = []

        def seek(partition: int, ts: int) -> int:
            if ts < 0:  # the group consumed everything, and no record tells the time: start at the end
                return self.target.watermarks(target_topic, partition)[1]
            return self.target.offset_for_time(target_topic, partition, ts)

        if source_count == target_count:
            for partition, ts in sorted(times.items()):
                rows.append(
                    PartitionTranslation(
                        topic,
                        partition,
                        committed[(topic, partition)],
                        target_topic,
                        partition,
                        seek(partition, ts),
                        "timestamp",
                        None,
                    )
                )
            return rows
        known = [ts for ts in times.values() if ts >= 0]
        earliest = min(known) if known else -1
        for partition in range(target_count):
            offset = seek(partition, earliest)
            rows.append(PartitionTranslation(topic, None, None, target_topic, partition, offset, "timestamp", None))
        return rows

    def apply(self, report: TranslationReport, *, dry_run: bool, allow_partial: bool = False) -> TranslationReport:
        """Write the translated offsets to the group on the target (or, with ``dry_run``, only check that it could).

        Refused (``PartialTranslationError``) when a partition the group committed on is not translated,
        unless ``allow_partial``: the group would start there by its ``auto.offset.reset`` and may skip records.
        """
        missing = report.untranslated
        if missing and not allow_partial:
            names = ", ".join(f"{row.topic}[{row.partition}]" for row in missing)
            raise PartialTranslationError(
                f"group {report.group} committed offsets on {len(missing)} partition(s) that cannot be translated: "
                f"{names}; no offset of the group was changed",
                hint="on those partitions the group would start by its auto.offset.reset (the Java default, latest, "
                "skips records); check that `mongocdc replicate` copies them, or pass --allow-partial to write the "
                "others",
            )
        state = self.target.group_state(report.group)
        if state.members:
            raise GroupActiveError(
                f"consumer group {report.group} has {state.members} active member(s) on the target cluster at "
                f"{self.target.bootstrap} (state {state.state}); its offsets were not changed",
                hint="stop the group's consumers on the target (Kafka refuses offset changes under running members), "
                "then run the command again",
            )
        offsets = report.offsets
        if not dry_run and offsets:
            self.target.alter_offsets(report.group, offsets)
        report.action = "would write" if dry_run else "written"
        return report

    def close(self) -> None:
        self.target.close()
        if self.source is not None:
            self.source.close()


def _sync(msg: Any) -> OffsetSync | None:
    return OffsetSync.parse(msg.key(), msg.value())


def _checkpoint(msg: Any) -> Checkpoint | None:
    return Checkpoint.parse(msg.key(), msg.value())


def _first_unconsumed_time(source: Cluster, topic: str, partition: int, offset: int) -> int | None:
    """The timestamp of the record at ``offset`` (the first the group has not consumed), or of the last consumed one
    when the group is at the end (errs early: that record is read again)."""
    ts = source.record_timestamp(topic, partition, offset)
    if ts is None and offset > 0:
        ts = source.record_timestamp(topic, partition, offset - 1)
    return ts
