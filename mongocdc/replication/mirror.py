"""``Replicator``: the copy loop of ``mongocdc replicate``, its offset syncs and its checkpoints.

Commit order, followed by :meth:`Replicator.commit` every ``replication.flush.interval.ms`` and on a
graceful stop:

1. poll a batch from the source (the consumer never commits on its own);
2. produce the copies to the target (idempotent producer, ``acks=all``);
3. take the delivery reports that have arrived (a failed copy stops the loop before anything is
   committed). The periodic commit does not wait for the copies still in flight: it goes as far as
   each partition's acknowledged copies reach (reports of a partition arrive in produce order), so
   copying never pauses for a commit. The last commit, on a graceful stop, flushes everything;
4. write the offset syncs (points of each partition's ``FrontierTracker``); the last commit waits
   for their acknowledgement. A sync lost in a crash is made up on restart: the copies written
   after the last sync on the target are found by their provenance (``_scan_tail``);
5. commit the source offsets of ``src.consumer.group.id`` up to the acknowledged copies.

A crash anywhere in between copies records again after the restart (at-least-once), never fewer.

Partitioning: when the target topic has as many partitions as the source topic (always so for the
topics the replicator creates), a record keeps its partition and the partition's order, and offset
translation is exact. Otherwise records are partitioned by key (``murmur2_random``, the Java
client's default partitioner: same key, same partition), order holds per key only, and groups of
such topics are translated by timestamp.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from mongocdc.errors import ConfigError, MongocdcError, UnreachableError
from mongocdc.kafka.config import DURABLE, JAVA_PARTITIONER, NO_AUTO_CREATE
from mongocdc.replication.clients import Cluster
from mongocdc.replication.naming import NameFilter, TopicRenamer
from mongocdc.replication.provenance import HEADER, HopEncoder, hops, origin_on
from mongocdc.replication.translation import Checkpoint, FrontierTracker, OffsetSync, Point
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.replication")

COPY_PRODUCER_FORCED: dict[str, Any] = {**DURABLE, **JAVA_PARTITIONER, **NO_AUTO_CREATE}
COPY_PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 5, "compression.type": "none"}
COPY_CONSUMER_DEFAULTS: dict[str, Any] = {
    # librdkafka stops fetching while its queue is full and by default waits a whole second before
    # looking again: the copy loop drained the queue long before and sat idle for most of that second
    "fetch.queue.backoff.ms": 20,
}


@dataclass(frozen=True)
class ReplicatorOptions:
    """What ``replicate`` does, from the settings (``wiring.replicator`` builds it)."""

    name: str
    group_id: str
    topics: tuple[str, ...] = (".*",)
    topics_exclude: tuple[str, ...] = ()
    groups: tuple[str, ...] = (".*",)
    groups_exclude: tuple[str, ...] = ()
    rename_format: str = "${topic}"
    provenance: bool = True
    syncs_topic: str = "mongocdc-offset-syncs.internal"
    checkpoints_topic: str = "mongocdc-checkpoints.internal"
    source_alias: str | None = None
    target_alias: str | None = None
    flush_interval_s: float = 1.0
    checkpoint_interval_s: float = 10.0
    refresh_interval_s: float = 30.0
    replication_factor: int = -1
    batch_size: int = 2048
    poll_timeout_s: float = 0.5
    shutdown_timeout_s: float = 30.0
    backoff: Backoff = field(default_factory=Backoff)


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


class _Interrupted(Exception):
    """Copying stopped while waiting for room in the producer's queue (a stop was asked for)."""


class _Partition:
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
        self.on_delivery: Callable[[Any, Any], None] | None = None  # the copies' delivery reports
        self.skips = 0
        self.next_offset = start
        self.done = start  # the source offset after the last record whose copy is acknowledged
        self.committed = start
        self.early: dict[int, list[int]] = {}
        self.seq = seq
        self.last_sync: Point | None = None  # nothing written yet: the first sync is written before copying
        self.start_point: Point | None = None  # the partition's start, to write to its own slot (START_SLOT)
        self.target_low = 0  # the target partition's first offset when replication of it started here


class Replicator:
    """Copies the selected topics from ``source`` to ``target`` until stopped (see the module docstring)."""

    def __init__(self, source: Cluster, target: Cluster, options: ReplicatorOptions) -> None:
        self.source = source
        self.target = target
        self.options = options
        self.stats = ReplicationStats()
        self.source_id = ""
        self.target_id = ""
        self._parts: dict[tuple[str, int], _Partition] = {}
        self._topic_counts: dict[str, int] = {}
        self._syncs: dict[tuple[str, int], OffsetSync] = {}
        self._points: dict[tuple[str, int], list[Point]] = {}
        self._starts: set[tuple[str, int]] = set()  # partitions whose start sync is on the target
        self._checkpointed: dict[tuple[str, str, int], tuple[int, int]] = {}
        self._consumer: Any = None  # KafkaConsumer once started
        self._producer: Any = None  # KafkaProducer once started
        self._topics = NameFilter(
            options.topics,
            options.topics_exclude,
            always_excluded=(options.syncs_topic, options.checkpoints_topic),
        )
        self._groups = NameFilter(options.groups, options.groups_exclude, always_excluded=(options.group_id,))
        self._renamer: TopicRenamer | None = None
        self._rate_mark = (time.monotonic(), 0)
        self._stop: threading.Event | None = None
        self._stop_seen: float | None = None  # when the copy loop saw the stop: the shutdown timeout runs from it
        self._unflushed = False  # the last flush gave up: close() drops what is left instead of waiting
        self._stalled = False  # the producer's queue is full: said once, until the target acknowledges again

    # --- start ---------------------------------------------------------------------------

    def start(self) -> None:
        """Reach both clusters, name them, create the internal topics, restore the syncs and assign partitions."""
        self.source.connect(self.options.backoff)
        self.target.connect(self.options.backoff)
        self.source_id = self.source.identity(self.options.source_alias)
        self.target_id = self.target.identity(self.options.target_alias)
        self._renamer = TopicRenamer(self.options.rename_format, self.source_id)
        if self.source_id == self.target_id and self._renamer.is_identity:
            raise ConfigError(
                f"the source and the target are the same cluster ({self.source_id}) and topic.rename.format is "
                "${topic}: every record would be copied onto itself",
                hint="point --target at another cluster, or rename the copies (topic.rename.format: ${topic}.replica)",
            )
        log.info(
            "replicating %s (%s) → %s (%s)",
            self.source.bootstrap,
            self.source_id,
            self.target.bootstrap,
            self.target_id,
        )
        self.target.ensure_compacted(self.options.syncs_topic, self.options.replication_factor)
        self.target.ensure_compacted(self.options.checkpoints_topic, self.options.replication_factor)
        self._load_syncs()
        self._producer = self.target.producer(
            forced={**COPY_PRODUCER_FORCED, "on_delivery": self._delivered},
            defaults=COPY_PRODUCER_DEFAULTS,
            on_full=self._waiting_for_room,
            note="; nothing after it was committed",
            redo=": the record is copied again from the committed source offset",
        )
        self._consumer = self.source.consumer(self.options.group_id, COPY_CONSUMER_DEFAULTS)
        self.refresh()

    def _load_syncs(self) -> None:
        for msg in self.target.read_all(self.options.syncs_topic):
            sync = OffsetSync.parse(msg.key(), msg.value())
            if sync is None or sync.source != self.source_id:
                continue
            key = (sync.topic, sync.partition)
            self._points.setdefault(key, []).append(sync.point)
            if sync.seq == 0:
                self._starts.add(key)
            latest = self._syncs.get(key)
            if latest is None or sync.seq >= latest.seq:
                self._syncs[key] = sync

    def refresh(self) -> None:
        """Pick up new topics and partitions matching ``topics``; create their target topics when absent."""
        assert self._renamer is not None
        source_topics = self.source.topics()
        selected = self._topics.select(source_topics)
        grown = [(t, source_topics[t], self._topic_counts.get(t, 0)) for t in selected]
        grown = [(topic, count, known) for topic, count, known in grown if count > known]
        assignments: dict[tuple[str, int], int] = {}
        added: list[_Partition] = []
        if grown:
            target_topics = self.target.topics()
            # read with the admin client: asking the copying consumer makes librdkafka hold its
            # first fetch back for about a second
            committed = self.source.committed(self.options.group_id)
            for topic, count, known in grown:
                target_topic = self._renamer(topic)
                keep = self._target_topic_for(topic, target_topic, count, known, target_topics)
                for partition in range(known, count):
                    part = self._init_partition(topic, partition, target_topic, keep, committed)
                    assignments[(topic, partition)] = part.next_offset
                    added.append(part)
                self._topic_counts[topic] = count
        if added:
            self._sync_before_copying(added)
        if assignments:
            self._consumer.add(assignments)
            log.info("replicating %d more partitions: %s", len(assignments), _describe(assignments))
        self.stats.topics = len(self._topic_counts)
        self.stats.partitions = len(self._parts)

    def _target_topic_for(
        self, topic: str, target_topic: str, count: int, known: int, target_topics: dict[str, int]
    ) -> bool:
        """Create or grow the target topic; whether partitions are kept (same count) or chosen by key."""
        target_count = target_topics.get(target_topic)
        if target_count is None:
            configs = self.source.topic_configs(topic)
            self.target.create_topic(target_topic, count, configs, self.options.replication_factor)
            log.info("created %s on the target (%d partitions, configs %s)", target_topic, count, configs or "default")
            return True
        if known and target_count == known:
            kept = any(part.keep for (t, _), part in self._parts.items() if t == topic)
            if kept:  # the source topic grew: grow the copy so partitions stay aligned
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

    def _init_partition(
        self, topic: str, partition: int, target_topic: str, keep: bool, committed: dict[tuple[str, int], int]
    ) -> _Partition:
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
            sync = self._syncs.get((topic, partition))
            older = self._points.get((topic, partition), [])
            if sync is not None and (sync.target_topic, sync.target_partition) == (target_topic, partition):
                tracker = FrontierTracker(
                    sync.upstream, sync.downstream, pending=sync.pending, older=older, back=sync.back
                )
                seq = sync.seq
                if (topic, partition) not in self._starts:  # written by an older version: the earliest point known
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
        part = _Partition(topic, partition, target_topic, keep, tracker, encoder, start, seq)
        part.early = early
        part.start_point = start_point
        part.target_low = target_low
        self._parts[(topic, partition)] = part
        part.on_delivery = self._acknowledger(part.acks) if keep else self._delivered
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

    # --- the loop ------------------------------------------------------------------------

    def run(
        self,
        stop: threading.Event,
        on_status: Callable[[ReplicationStats], None] | None = None,
        status_interval_s: float = 10.0,
    ) -> ReplicationStats:
        """Copy until ``stop`` is set, then commit what the target acknowledged (the commit order above).

        Once ``stop`` is set, copying stops at once (also while waiting for room in a full producer
        queue) and every wait is bounded by ``shutdown_timeout_s``: when the target has not acknowledged
        everything by then, the source offsets are committed up to the copies it did acknowledge and
        ``UnreachableError`` (exit 4) names the target and the timeout.
        """
        self._stop = stop
        if self._consumer is None:
            self.start()
        opts = self.options
        consume = self._consumer.consume
        poller = _GroupOffsetsPoller(self.group_offsets, opts.checkpoint_interval_s)
        poller.start()
        try:
            with _fewer_young_collections():
                self._loop(stop, consume, poller, on_status, status_interval_s)
        except _Interrupted:
            pass
        finally:
            self._stopping()
            poller.stop(timeout_s=max(0.0, self._left()))
        if not self._flush():
            self._unflushed = True
            self.commit(acknowledged_only=True)
            raise self._shutdown_timeout()
        self.commit(drain=True)
        try:
            self.emit_checkpoints()
        except MongocdcError as exc:  # the copies are committed; a missed checkpoint is written next time
            log.warning("no final checkpoints: %s", exc)
        if self._unflushed:
            raise self._shutdown_timeout()
        return self.status()

    def _stopping(self) -> None:
        if self._stop_seen is None:
            self._stop_seen = time.monotonic()

    def _left(self) -> float:
        """Seconds left of the shutdown timeout (it runs from the stop; the whole timeout before one)."""
        if self._stop_seen is None:
            if self._stop is None or not self._stop.is_set():
                return self.options.shutdown_timeout_s
            self._stopping()
        assert self._stop_seen is not None
        return self._stop_seen + self.options.shutdown_timeout_s - time.monotonic()

    def _shutdown_timeout(self) -> UnreachableError:
        flight = len(self._producer) if self._producer is not None else 0
        waiting = sum(len(part.events) for part in self._parts.values())
        return UnreachableError(
            f"stopped without the target Kafka cluster at {self.target.bootstrap} acknowledging {flight} record(s) "
            f"within the shutdown timeout ({self.options.shutdown_timeout_s:g} s): the source offsets of group "
            f"{self.options.group_id} were committed up to the acknowledged copies only; {waiting} record(s) after "
            "them are copied again at the next start",
            hint=f"check that the target cluster at {self.target.bootstrap} is up and reachable "
            "(dest.kafka.bootstrap.servers); --shutdown-timeout SECONDS waits longer for its acknowledgements",
        )

    def _loop(
        self,
        stop: threading.Event,
        consume: Callable[[int, float], list[Any]],
        poller: _GroupOffsetsPoller,
        on_status: Callable[[ReplicationStats], None] | None,
        status_interval_s: float,
    ) -> None:
        opts = self.options
        now = time.monotonic()
        next_commit = now + opts.flush_interval_s
        next_refresh = now + opts.refresh_interval_s
        next_status = now + status_interval_s
        while not stop.is_set():
            messages = consume(opts.batch_size, opts.poll_timeout_s)
            if messages:
                if self.source.client_log.down:
                    self.source.client_log.answered()
                self._copy(messages)
            else:
                self._producer.poll(0)
            self._producer.check()
            now = time.monotonic()
            if now >= next_commit:
                self.commit()
                next_commit = now + opts.flush_interval_s
                offsets = poller.take()
                if offsets is not None:  # right after a commit, so the frontiers are fresh
                    self.emit_checkpoints(offsets, wait=False)
            if now >= next_refresh:
                self.refresh()
                next_refresh = now + opts.refresh_interval_s
            if on_status is not None and now >= next_status:
                on_status(self.status())
                next_status = now + status_interval_s

    def _copy(self, messages: list[Any]) -> None:
        """Produce a copy of each record (or note the original of a record that came from the target).

        The loop runs once per record: what belongs to a partition is looked up when the partition
        changes (a batch comes in runs of one partition), not per record.
        """
        now_ms = int(time.time() * 1000)
        parts = self._parts
        produce = self._producer.produce
        target_id = self.target_id
        provenance = self.options.provenance
        copied = size = 0
        part: Any = None
        partition = -1
        target_topic, target_partition = "", -1
        on_delivery: Any = None
        encoder: Any = None
        done: Any = None
        try:
            for msg in messages:
                if msg.error() is not None:
                    self._consumer.consume_error(msg.error(), "copying")
                    continue
                if msg.partition() != partition or msg.topic() != part.topic:
                    partition = msg.partition()
                    part = parts[(msg.topic(), partition)]
                    target_topic, target_partition = part.target_topic, part.target_partition
                    on_delivery, encoder, done = part.on_delivery, part.encoder, part.events.append
                offset = msg.offset()
                headers = msg.headers()
                if headers is not None:
                    for header in headers:
                        if header[0] == HEADER:
                            hop = origin_on(headers, target_id, target_topic)
                            break
                    else:
                        hop = None
                    if hop is not None:
                        counterpart = hop.offset if part.keep and hop.partition == partition else None
                        done((offset, counterpart))
                        part.skips += 1
                        part.next_offset = offset + 1
                        self.stats.skipped_loops += 1
                        continue
                if provenance:
                    stamp = (HEADER, encoder(offset, now_ms))
                    if headers is None:
                        headers = [stamp]
                    else:
                        headers.append(stamp)  # a new list per call of ``Message.headers()``, ours to change
                kind, ts = msg.timestamp()
                value = msg.value()
                produce(
                    target_topic,
                    value,
                    msg.key(),
                    target_partition,
                    timestamp=ts if kind else 0,
                    headers=headers,
                    on_delivery=on_delivery,
                )
                done(offset)
                part.next_offset = offset + 1
                copied += 1
                if value is not None:
                    size += len(value)
        finally:  # also when a stop interrupts the batch
            self.stats.copied += copied
            self.stats.bytes += size
        self._producer.poll(0)

    def _waiting_for_room(self, since: float) -> None:
        """The producer's queue is full (the target is slow or down) since ``since``: said once when that lasts a
        second; give up when a stop was asked for."""
        if not self._stalled and time.monotonic() - since >= 1.0:
            self._stalled = True
            log.warning(
                "the producer's queue is full: copying waits for the target cluster at %s to acknowledge copies",
                self.target.bootstrap,
            )
        if self._stop is not None and self._stop.is_set():
            self._stopping()
            raise _Interrupted

    def _acknowledger(self, acks: list[int]) -> Callable[[Any, Any], None]:
        """The delivery report callback of one kept partition's copies: no lookup per report."""
        append = acks.append
        producer = self._producer

        def acknowledged(err: Any, msg: Any) -> None:
            if err is None:
                append(msg.offset())
            else:
                producer.delivery_failed(err, msg)

        return acknowledged

    def _delivered(self, err: Any, msg: Any) -> None:
        """The other delivery reports (internal records, copies partitioned by key): only failures matter.

        Reports are served by ``poll``/``flush`` on the copy loop's thread; a kept partition's copies
        report to its own callback (``_acknowledger``).
        """
        if err is not None and self._producer is not None:
            self._producer.delivery_failed(err, msg)

    # --- commit, syncs, checkpoints ---------------------------------------------------------

    def _flush(self) -> bool:
        """Wait for every delivery report; ``False`` when the shutdown timeout ran out first (only after a stop)."""
        while True:
            left = self._producer.wait(0.2)
            self._producer.check()
            if left == 0:
                return True
            if self._stop is not None and self._stop.is_set() and self._left() <= 0:
                return False

    def commit(self, *, drain: bool = False, acknowledged_only: bool = False) -> None:
        """Take the delivery reports, update the frontiers, write the offset syncs, commit the source offsets.

        The order is the module docstring's: nothing is committed on the source before the target
        acknowledged the copies up to it. With ``drain`` (a graceful stop) every copy in flight and
        the syncs are waited for, so everything read is committed. Partitions copied by key (a
        target with another partition count) have no per-partition order of reports, so a commit
        with any of them in flight drains too. After a stop the waits are bounded by the shutdown
        timeout; when it runs out, or with ``acknowledged_only`` (the target did not acknowledge
        everything in time), only what was acknowledged is committed and no sync is written (a
        restart finds the copies after the last sync by their provenance).
        """
        if self._producer is None:
            return
        if not acknowledged_only:
            drain = drain or any(part.tracker is None and part.events for part in self._parts.values())
        drained = False
        if drain:
            drained = self._flush()
            if not drained:
                self._unflushed = acknowledged_only = True
        else:
            self._producer.poll(0)
            self._producer.check()
        if (self.target.client_log.down or self._stalled) and any(part.acks for part in self._parts.values()):
            self.target.client_log.answered()
            self._stalled = False
        now_ms = int(time.time() * 1000)
        syncs = 0
        for part in self._parts.values():
            if part.events and (part.tracker is not None or drained):
                self._apply(part, drained=drained)
            if acknowledged_only:
                continue
            tracker = part.tracker
            if tracker is not None and tracker.point != part.last_sync:
                self._write_sync(part, now_ms)
                syncs += 1
                if tracker.dropped:
                    log.warning(
                        "%s[%d]: too many target offsets wait for records that have not come back; translation of "
                        "this partition stays at %d",
                        part.topic,
                        part.partition,
                        tracker.frontier,
                    )
        if syncs:
            if drained and not self._flush():
                self._unflushed = True
            self.stats.syncs += syncs
        offsets = {
            (part.topic, part.partition): part.done for part in self._parts.values() if part.done != part.committed
        }
        if offsets:
            self._consumer.commit(offsets, doing=f"committing the offsets of group {self.options.group_id}")
            for key, offset in offsets.items():
                self._parts[key].committed = offset
            self.stats.commits += 1

    def _write_sync(self, part: _Partition, now_ms: int) -> None:
        """Write the current point of ``part`` as its next sync (not waiting for the acknowledgement)."""
        tracker = part.tracker
        assert tracker is not None
        part.seq += 1
        sync = OffsetSync(
            self.source_id,
            part.topic,
            part.partition,
            tracker.upstream,
            tracker.frontier,
            part.target_topic,
            part.partition,
            seq=part.seq,
            ts=now_ms,
            pending=tuple(tracker.pending_ranges()),
            back=self._back(tracker.back),
        )
        self._produce_internal(self.options.syncs_topic, sync.key(), sync.value())
        part.last_sync = tracker.point

    def _back(self, back: int) -> int:
        """``Point.back`` as written: not known (-1) without provenance headers (copies look like the target's own)."""
        return back if self.options.provenance else -1

    def _sync_before_copying(self, parts: list[_Partition]) -> None:
        """Write each new partition's start (its own slot, once) and its current point, and wait for them.

        Before anything is copied, so that every offset a group may commit from the start of the copied
        range on has a point at or below it, whatever happened to the replicator before (a restart, a
        crash, a sync compacted away).
        """
        now_ms = int(time.time() * 1000)
        written = 0
        for part in parts:
            tracker = part.tracker
            if tracker is None:
                continue
            start = part.start_point
            if start is not None:
                sync = OffsetSync(
                    self.source_id,
                    part.topic,
                    part.partition,
                    start.upstream,
                    start.downstream,
                    part.target_topic,
                    part.partition,
                    seq=0,
                    ts=now_ms,
                    back=self._back(start.back),
                )
                self._produce_internal(self.options.syncs_topic, sync.key(), sync.value())
                self._starts.add((part.topic, part.partition))
                part.start_point = None
                part.last_sync = start
                written += 1
            if tracker.point != part.last_sync:
                self._write_sync(part, now_ms)
                written += 1
        if written:
            self._flush()
            self.stats.syncs += written

    def _apply(self, part: _Partition, *, drained: bool) -> None:
        """Feed the records processed since the last commit whose copies are acknowledged to the frontier.

        ``drained``: every copy produced has its report (after a flush). Otherwise the reports of a
        partition arrive in produce order, so the records up to the last acknowledged copy (and the
        loop skips right after it) are done; the rest wait for the next commit.
        """
        tracker = part.tracker
        if tracker is None:  # copied by key: commit() drained first
            part.events = []
            part.skips = 0
            part.done = part.next_offset
            return
        events, acks = part.events, part.acks[:]
        part.acks.clear()  # the same list: the partition's delivery callback appends to it
        n = len(events)
        if not part.skips and not part.early and acks:
            k = len(acks)
            if k > n:
                raise MongocdcError(
                    f"{part.topic}[{part.partition}]: {n} copies sent but {k} acknowledged offsets seen"
                )
            if (k == n or not drained) and events[k - 1] - events[0] == k - 1 and acks[-1] - acks[0] == k - 1:
                tracker.advance_run(events[0], acks[0], k)
                part.events = events[k:]
                part.done = events[k - 1] + 1
                return
        ack = iter(acks)
        left = len(acks)
        early = part.early
        applied = 0
        for event in events:
            if isinstance(event, int):
                if not left:
                    break
                left -= 1
                offset, positions = event, [next(ack)]
            else:
                offset, counterpart = event
                positions = [] if counterpart is None else [counterpart]
                part.skips -= 1
            if early:
                positions += early.pop(offset, [])
            tracker.advance(offset, *positions, returned=None if isinstance(event, int) else event[1])
            part.done = offset + 1
            applied += 1
        part.events = events[applied:]
        if left or (drained and part.events):
            raise MongocdcError(
                f"{part.topic}[{part.partition}]: {n - len(part.events)} records done but {len(acks)} acknowledged "
                f"offsets seen and {len(part.events)} records left after a flush"
            )

    def _produce_internal(self, topic: str, key: bytes, value: bytes) -> None:
        self._producer.produce(topic, value, key)

    def group_offsets(self) -> dict[str, dict[tuple[str, int], int]]:
        """The committed offsets of every selected group on the source (admin requests: they block)."""
        return {group: self.source.committed(group) for group in self.source.group_ids() if self._groups(group)}

    def emit_checkpoints(
        self, offsets: dict[str, dict[tuple[str, int], int]] | None = None, *, wait: bool = True
    ) -> int:
        """Write, for each selected source group, its committed offsets translated to the target.

        ``offsets`` are the groups' committed offsets (read now when ``None``). Only offsets that
        changed since the last checkpoint are written; with ``wait`` this returns once the target
        acknowledged them. Returns how many were written.
        """
        if self._producer is None or not self._parts:
            return 0
        if offsets is None:
            offsets = self.group_offsets()
        now_ms = int(time.time() * 1000)
        written = 0
        for group, committed_offsets in sorted(offsets.items()):
            for (topic, partition), committed in committed_offsets.items():
                part = self._parts.get((topic, partition))
                if part is None or part.tracker is None:
                    continue
                point = part.tracker.at(committed)
                if point is None:  # below the start of the copied range: nothing below the target's start is read
                    point = Point(committed, part.target_low, -1)
                key = (group, topic, partition)
                if self._checkpointed.get(key) == (committed, point.downstream):
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
                    back=self._back(point.back),
                )
                self._produce_internal(self.options.checkpoints_topic, checkpoint.key(), checkpoint.value())
                self._checkpointed[key] = (committed, point.downstream)
                written += 1
        if written:
            if wait:
                self._flush()
            else:
                self._producer.poll(0)
            self.stats.checkpoints += written
        return written

    # --- status and close ------------------------------------------------------------------

    def status(self) -> ReplicationStats:
        """The stats with the current lag and the copy rate since the previous call."""
        lag = 0
        known = False
        for part in self._parts.values():
            high = self._consumer.cached_high(part.topic, part.partition)
            if high is not None:
                known = True
                lag += max(0, high - part.next_offset)
        self.stats.lag = lag if known else None
        now = time.monotonic()
        then, count = self._rate_mark
        total = self.stats.copied + self.stats.skipped_loops
        if now > then:
            self.stats.records_per_s = round((total - count) / (now - then), 1)
        self._rate_mark = (now, total)
        return self.stats

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            if self._producer.wait(max(0.0, min(5.0, self._left()))) > 0:
                self._producer.purge()  # the target does not answer: what is left is copied again next time
                self._producer.wait(0)
            self._producer = None
        self.source.close()
        self.target.close()


YOUNG_GC_THRESHOLD = 20_000
_gc_lock = threading.Lock()
_gc_users = 0
_gc_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def _fewer_young_collections() -> Iterator[None]:
    """Run the copy loop with the cyclic collector's youngest generation collected less often.

    Every record allocates a few short-lived, acyclic objects (the consumed message, its header list,
    the delivery report's message), so the default threshold of 700 ran a young collection every
    150 records or so, about 7 % of the loop's CPU. Collections still run, every 20,000 allocations.
    Process-wide, so counted: the previous threshold comes back when the last running loop ends.
    """
    global _gc_users, _gc_saved
    with _gc_lock:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            if _gc_saved[0] and _gc_saved[0] < YOUNG_GC_THRESHOLD:
                gc.set_threshold(YOUNG_GC_THRESHOLD, *_gc_saved[1:])
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_saved is not None:
                gc.set_threshold(*_gc_saved)
                _gc_saved = None


def _describe(assignments: dict[tuple[str, int], int]) -> str:
    shown = ", ".join(f"{topic}[{partition}]@{offset}" for (topic, partition), offset in list(assignments.items())[:10])
    return shown + (f" and {len(assignments) - 10} more" if len(assignments) > 10 else "")


class _GroupOffsetsPoller:
    """Reads the source groups' committed offsets every ``interval_s`` on a thread of its own.

    The admin requests take a while on a cluster with many groups; the copy loop only picks up the
    latest result (``take``), so checkpoints never stall copying.
    """

    def __init__(self, fetch: Callable[[], dict[str, dict[tuple[str, int], int]]], interval_s: float) -> None:
        self._fetch = fetch
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._latest: dict[str, dict[tuple[str, int], int]] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="mongocdc-checkpoints", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                offsets = self._fetch()
            except MongocdcError as exc:
                log.warning("cannot read the source consumer groups' offsets for checkpoints: %s", exc)
            else:
                with self._lock:
                    self._latest = offsets
            self._stop.wait(self._interval_s)

    def take(self) -> dict[str, dict[tuple[str, int], int]] | None:
        with self._lock:
            latest, self._latest = self._latest, None
        return latest

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout_s)
