"""``Replicator``: ``mongocdc replicate``, one direction from a source cluster to a target cluster.

The replicator assigns itself every partition of the selected source topics (no consumer-group
rebalances: one replicator per direction) and runs the copy loop until stopped. The work is split by
concern:

* ``topics``: which source topics are copied, their names and topics on the target;
* ``partitions``: one partition's state and where its copying starts (offset syncs, the target's tail);
* ``copying``: a batch of records copied, the delivery reports, the wait for room in a full queue;
* ``commits``: the commit order (acknowledged copies → frontiers → offset syncs → source commits);
* ``syncs``, ``checkpoints``: the records written to the target's internal topics;
* ``poller``: the source groups' offsets, read on a thread of their own; ``status``: stats, lag, rate;
* ``shutdown``: a stop and its timeout; ``mongocdc.gc_tuning``: the cyclic collector while a copy loop runs.

Partitioning: when the target topic has as many partitions as the source topic (always so for the
topics the replicator creates), a record keeps its partition and the partition's order, and offset
translation is exact. Otherwise records are partitioned by key (``murmur2_random``, the Java
client's default partitioner: same key, same partition), order holds per key only, and groups of
such topics are translated by timestamp.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mongocdc.errors import ConfigError, MongocdcError, UnreachableError
from mongocdc.gc_tuning import fewer_young_collections
from mongocdc.kafka.config import DURABLE, JAVA_PARTITIONER, NO_AUTO_CREATE
from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.replication.checkpoints import CheckpointWriter
from mongocdc.replication.clients import Cluster
from mongocdc.replication.commits import Committer
from mongocdc.replication.copying import Copier, FullQueue, acknowledger
from mongocdc.replication.naming import NameFilter, TopicRenamer
from mongocdc.replication.partitions import CopiedPartition, PartitionOpener
from mongocdc.replication.poller import GroupOffsets, GroupOffsetsPoller
from mongocdc.replication.shutdown import Interrupted, Shutdown
from mongocdc.replication.status import ReplicationStats, StatusMeter
from mongocdc.replication.syncs import StoredSyncs, SyncWriter
from mongocdc.replication.topics import TopicMirror, describe_assignments
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
    """What ``replicate`` does, from the settings (``wiring_replication.replicator`` builds it)."""

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
class _Session:
    """What ``Replicator.start`` built: the two copying clients and the parts of the loop that use them."""

    producer: KafkaProducer
    consumer: KafkaConsumer
    topics: TopicMirror
    opener: PartitionOpener
    syncs: SyncWriter
    checkpoints: CheckpointWriter
    copier: Copier
    committer: Committer


class Replicator:
    """Copies the selected topics from ``source`` to ``target`` until stopped (see the module docstring)."""

    def __init__(self, source: Cluster, target: Cluster, options: ReplicatorOptions) -> None:
        self.source = source
        self.target = target
        self.options = options
        self.stats = ReplicationStats()
        self.source_id = ""
        self.target_id = ""
        self._parts: dict[tuple[str, int], CopiedPartition] = {}
        self._shutdown = Shutdown(options.shutdown_timeout_s)
        self._full_queue = FullQueue(target.bootstrap, self._shutdown)
        self._meter = StatusMeter(self.stats)
        self._session: _Session | None = None

    # --- start ---------------------------------------------------------------------------

    def start(self) -> None:
        """Reach both clusters, name them, create the internal topics, restore the syncs and assign partitions."""
        options = self.options
        self.source.connect(options.backoff)
        self.target.connect(options.backoff)
        self.source_id = self.source.identity(options.source_alias)
        self.target_id = self.target.identity(options.target_alias)
        renamer = TopicRenamer(options.rename_format, self.source_id)
        if self.source_id == self.target_id and renamer.is_identity:
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
        self.target.ensure_compacted(options.syncs_topic, options.replication_factor)
        self.target.ensure_compacted(options.checkpoints_topic, options.replication_factor)
        stored = StoredSyncs.load(self.target, options.syncs_topic, self.source_id)
        producer = self.target.producer(
            forced=COPY_PRODUCER_FORCED,
            defaults=COPY_PRODUCER_DEFAULTS,
            on_full=self._full_queue,
            note="; nothing after it was committed",
            redo=": the record is copied again from the committed source offset",
        )
        consumer = self.source.consumer(options.group_id, COPY_CONSUMER_DEFAULTS)
        selected = NameFilter(
            options.topics, options.topics_exclude, always_excluded=(options.syncs_topic, options.checkpoints_topic)
        )
        groups = NameFilter(options.groups, options.groups_exclude, always_excluded=(options.group_id,))
        syncs = SyncWriter(producer, options.syncs_topic, self.source_id, options.provenance, stored)
        self._session = _Session(
            producer=producer,
            consumer=consumer,
            topics=TopicMirror(self.source, self.target, selected, renamer, options.replication_factor),
            opener=PartitionOpener(self.source, self.target, self.source_id, stored),
            syncs=syncs,
            checkpoints=CheckpointWriter(
                self.source, groups, producer, options.checkpoints_topic, self.source_id, options.provenance
            ),
            copier=Copier(self._parts, consumer, producer, self.target_id, options.provenance, self.stats),
            committer=Committer(
                self._parts,
                producer,
                consumer,
                syncs,
                options.group_id,
                target_log=self.target.client_log,
                full_queue=self._full_queue,
                shutdown=self._shutdown,
                stats=self.stats,
            ),
        )
        self.refresh()

    def _started(self) -> _Session:
        if self._session is None:
            raise RuntimeError("the replicator was not started")
        return self._session

    def refresh(self) -> None:
        """Pick up new topics and partitions matching ``topics``; create their target topics when absent."""
        session = self._started()
        grown = session.topics.grown()
        assignments: dict[tuple[str, int], int] = {}
        added: list[CopiedPartition] = []
        if grown:
            target_topics = self.target.topics()
            # read with the admin client: asking the copying consumer makes librdkafka hold its
            # first fetch back for about a second
            committed = self.source.committed(self.options.group_id)
            for topic in grown:
                keep = session.topics.prepare(topic, target_topics, self._kept)
                for partition in range(topic.known, topic.count):
                    part = session.opener.open(topic.topic, partition, topic.target_topic, keep, committed)
                    part.on_delivery = acknowledger(part.acks, session.producer) if keep else None
                    self._parts[(topic.topic, partition)] = part
                    assignments[(topic.topic, partition)] = part.next_offset
                    added.append(part)
                session.topics.counts[topic.topic] = topic.count
        if added:
            written = session.syncs.write_before_copying(added, int(time.time() * 1000))
            if written:
                session.committer.flush()
                self.stats.syncs += written
        if assignments:
            session.consumer.add(assignments)
            log.info("replicating %d more partitions: %s", len(assignments), describe_assignments(assignments))
        self.stats.topics = len(session.topics.counts)
        self.stats.partitions = len(self._parts)

    def _kept(self, topic: str) -> bool:
        """Whether the partitions of ``topic`` copied so far keep their partition on the target."""
        return any(part.keep for (t, _), part in self._parts.items() if t == topic)

    # --- the loop ------------------------------------------------------------------------

    def run(
        self,
        stop: threading.Event,
        on_status: Callable[[ReplicationStats], None] | None = None,
        status_interval_s: float = 10.0,
    ) -> ReplicationStats:
        """Copy until ``stop`` is set, then commit what the target acknowledged (``commits``' order).

        Once ``stop`` is set, copying stops at once (also while waiting for room in a full producer
        queue) and every wait is bounded by ``shutdown_timeout_s``: when the target has not acknowledged
        everything by then, the source offsets are committed up to the copies it did acknowledge and
        ``UnreachableError`` (exit 4) names the target and the timeout.
        """
        shutdown = self._shutdown
        shutdown.event = stop
        if self._session is None:
            self.start()
        session = self._started()
        poller = GroupOffsetsPoller(session.checkpoints.group_offsets, self.options.checkpoint_interval_s)
        poller.start()
        try:
            with fewer_young_collections():
                self._loop(session, stop, poller, on_status, status_interval_s)
        except Interrupted:
            pass
        finally:
            shutdown.seen()
            poller.stop(timeout_s=max(0.0, shutdown.left()))
        committer = session.committer
        if not committer.flush():
            committer.unflushed = True
            committer.commit(acknowledged_only=True)
            raise self._shutdown_timeout()
        committer.commit(drain=True)
        try:
            self.emit_checkpoints()
        except MongocdcError as exc:  # the copies are committed; a missed checkpoint is written next time
            log.warning("no final checkpoints: %s", exc)
        if committer.unflushed:
            raise self._shutdown_timeout()
        return self.status()

    def _shutdown_timeout(self) -> UnreachableError:
        flight = len(self._session.producer) if self._session is not None else 0
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
        session: _Session,
        stop: threading.Event,
        poller: GroupOffsetsPoller,
        on_status: Callable[[ReplicationStats], None] | None,
        status_interval_s: float,
    ) -> None:
        opts = self.options
        consume, copy, producer = session.consumer.consume, session.copier.copy, session.producer
        source_log = self.source.client_log
        now = time.monotonic()
        next_commit = now + opts.flush_interval_s
        next_refresh = now + opts.refresh_interval_s
        next_status = now + status_interval_s
        while not stop.is_set():
            messages = consume(opts.batch_size, opts.poll_timeout_s)
            if messages:
                if source_log.down:
                    source_log.answered()
                copy(messages)
            else:
                producer.poll(0)
            producer.check()
            now = time.monotonic()
            if now >= next_commit:
                session.committer.commit()
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

    def commit(self, *, drain: bool = False, acknowledged_only: bool = False) -> None:
        """Commit what the target acknowledged (``Committer.commit``); nothing before ``start``."""
        if self._session is not None:
            self._session.committer.commit(drain=drain, acknowledged_only=acknowledged_only)

    def group_offsets(self) -> GroupOffsets:
        """The committed offsets of every selected group on the source (admin requests: they block)."""
        return self._started().checkpoints.group_offsets()

    def emit_checkpoints(self, offsets: GroupOffsets | None = None, *, wait: bool = True) -> int:
        """Write, for each selected source group, its committed offsets translated to the target.

        ``offsets`` are the groups' committed offsets (read now when ``None``). Only offsets that
        changed since the last checkpoint are written; with ``wait`` this returns once the target
        acknowledged them. Returns how many were written.
        """
        session = self._session
        if session is None or not self._parts:
            return 0
        if offsets is None:
            offsets = session.checkpoints.group_offsets()
        written = session.checkpoints.write(offsets, self._parts)
        if written:
            if wait:
                session.committer.flush()
            else:
                session.producer.poll(0)
            self.stats.checkpoints += written
        return written

    # --- status and close ------------------------------------------------------------------

    def status(self) -> ReplicationStats:
        """The stats with the current lag and the copy rate since the previous call."""
        return self._meter.measure(self._parts.values(), self._session.consumer if self._session else None)

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.consumer.close()
            producer = session.producer
            if producer.wait(max(0.0, min(5.0, self._shutdown.left()))) > 0:
                producer.purge()  # the target does not answer: what is left is copied again next time
                producer.wait(0)
        self.source.close()
        self.target.close()
