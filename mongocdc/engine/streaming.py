"""The streaming loop of one connector task: change stream → envelopes → Kafka → offsets."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from mongocdc.engine.checkpoint import Checkpointer
from mongocdc.engine.exactly_once import TransactionBoundary
from mongocdc.engine.incremental_snapshot import NOTHING, IncrementalSnapshotter, Step
from mongocdc.engine.metrics import Metrics
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.transactions import TransactionRecord, TransactionTracker
from mongocdc.errors import OversizedEventError
from mongocdc.events.changes import ControlChange, SignalChange, StreamedChange
from mongocdc.events.codec import document_to_json, value_to_json
from mongocdc.events.envelope import EnvelopeCodec, heartbeat_record
from mongocdc.events.model import ChangeEvent, Op, SnapshotMarker, SourceInfo
from mongocdc.events.position import Position
from mongocdc.gc_tuning import fewer_young_collections
from mongocdc.offsets.base import OffsetStore
from mongocdc.sources.base import ChangeSource, Idle, StreamItem

log = logging.getLogger("mongocdc.engine")


def _always(linger_s: float = 0.0) -> bool:
    return True


class Sink(Protocol):
    """What the loop needs from a record sink."""

    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        headers: list[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
        on_ack: Callable[[], None] | None = None,
        converted: bool = False,
    ) -> bool:
        """Queue the record; ``False`` when the connector's transforms dropped it (``on_ack`` has run).
        ``converted``: the key and value are what the connector's chain writes (from :meth:`fused_record`)."""
        ...

    def fused_record(self, topic: str, event: ChangeEvent) -> tuple[bytes, bytes] | None:
        """The change's key and value as the connector's chain writes them, when it writes them straight from the
        event; ``None``: the codec writes the record and :meth:`produce` takes it through the chain."""
        ...

    def poll(self, timeout: float = 0.0) -> None: ...

    def flush(self, timeout: float | None = None) -> None: ...


@dataclass(slots=True)
class StreamStats:
    """Counters a status line and the summary report."""

    events: dict[str, int] = field(default_factory=lambda: {"c": 0, "u": 0, "d": 0, "r": 0})
    tombstones: int = 0
    control_events: int = 0
    skipped: int = 0
    commits: int = 0
    heartbeats: int = 0
    last_committed: Position | None = None

    @property
    def total(self) -> int:
        return sum(self.events.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": dict(self.events),
            "total": self.total,
            "tombstones": self.tombstones,
            "control_events": self.control_events,
            "skipped": self.skipped,
            "heartbeats": self.heartbeats,
            "commits": self.commits,
            "last_committed": SourceOffset(self.last_committed).to_record() if self.last_committed else None,
        }


@dataclass(frozen=True, slots=True)
class StreamOptions:
    connector: str
    partition: str
    flush_interval_s: float = 60.0
    tombstones_on_delete: bool = True
    skipped_operations: frozenset[str] = frozenset()
    """Operation codes (``c``, ``u``, ``d``) not written to Kafka (``skipped.operations``)."""
    oversize_mode: str = "fail"
    """``cursor.oversize.handling.mode``: ``fail`` stops with the key; ``skip`` logs, counts and goes on."""
    oversize_threshold: int = 0
    """Events larger than this many bytes count as oversized (0: only what Kafka refuses)."""
    heartbeat_interval_s: float = 0.0
    """``heartbeat.interval.ms`` / 1000: 0 turns heartbeats off."""
    heartbeat_topic: str = ""
    transaction_topic: str = ""
    """``<topic.prefix>.<topic.transaction>`` with ``provide.transaction.metadata``; empty: no metadata."""
    transaction_idle_end_ms: int | None = None
    """END of an open transaction after this long idle (None: at the next change, as Debezium)."""
    flush_timeout_s: float | None = None
    """How long a graceful stop waits for Kafka's acknowledgements (None: until they come)."""
    transaction_boundary: TransactionBoundary = TransactionBoundary()
    """Where a transaction ends when the store is transactional (``exactly.once.support``)."""


class StreamingTask:
    """Streams one source partition until ``stop`` is set.

    Commit order (followed by :meth:`commit` and at stop): stop reading →
    flush the producer → wait for every delivery report → commit the last
    fully acknowledged position. Between flushes, the task's
    :class:`~mongocdc.engine.checkpoint.Checkpointer` commits only positions
    whose records Kafka has all acknowledged, so an offset never runs ahead
    of Kafka (exactly once: at each transaction boundary, with the records).
    """

    def __init__(
        self,
        source: ChangeSource,
        sink: Sink,
        store: OffsetStore,
        codec: EnvelopeCodec,
        options: StreamOptions,
        *,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        on_status: Callable[[StreamStats], None] | None = None,
        metrics: Metrics | None = None,
        snapshotter: IncrementalSnapshotter | None = None,
        blocking_snapshot: Callable[[Sequence[str]], object] | None = None,
        rs: str | None = None,
    ) -> None:
        self.source = source
        self.sink = sink
        self.store = store
        self.codec = codec
        self.options = options
        self.stop = stop or threading.Event()
        self._clock = clock
        self._wall_ms = wall_clock_ms
        self._checkpointer = Checkpointer(
            store,
            options.connector,
            options.partition,
            sink,
            flush_interval_s=options.flush_interval_s,
            boundary=options.transaction_boundary,
            clock=clock,
            on_commit=self._committed,
            log=log,
        )
        """Commits the offset after each item (its position, and the state that rides with it): when, and which."""
        self.snapshotter = snapshotter
        self._blocking_snapshot = blocking_snapshot
        """Copies collections while streaming waits (``ConnectorTask.blocking_snapshot``); ``None``: not here."""
        self.transactions: TransactionTracker | None = None
        self.rs = rs
        self._on_status = on_status
        self.metrics = metrics or Metrics(options.connector)
        self.metrics.register_partition(options.partition)
        self._reconnects_seen = 0
        self._elections_seen = 0
        self.stats = StreamStats()
        self._next_status = clock()

    def _restore(self) -> Position | None:
        """Load the stored offset: the position to resume after, plus the transaction and snapshot state it carries."""
        offset = SourceOffset.restore(self.store.load(self.options.connector, self.options.partition))
        if self.options.transaction_topic:
            self.transactions = TransactionTracker(
                self.options.transaction_idle_end_ms, offset.transaction if offset is not None else None
            )
        if self.snapshotter is not None:
            self.snapshotter.restore(offset)
            if self.snapshotter.state is not None and self.snapshotter.state.running:
                log.info("continuing incremental snapshot %s", self.snapshotter.state.snapshot_id)
        return None if offset is None else offset.position

    def _offset_at(self, position: Position) -> SourceOffset:
        """The offset after the item at ``position``: what rides with it is taken now, encoded only at commit."""
        snapshotter = self.snapshotter
        transactions = self.transactions
        transaction = transactions.state if transactions is not None else None
        if snapshotter is None:
            return SourceOffset.streaming(position, None, transaction, None)
        return SourceOffset.streaming(
            position, snapshotter.state, transaction, snapshotter.completed_id, snapshotter.signal_offsets
        )

    def _transaction_records(self, records: list[TransactionRecord]) -> None:
        """BEGIN/END records on ``<topic.prefix>.<topic.transaction>``, keyed by the transaction id."""
        schemas = self.codec.schemas_enable
        for record in records:
            self._produce(self.options.transaction_topic, record.key_bytes(schemas), record.value_bytes(schemas))

    def _add_position(self, position: Position) -> None:
        self._checkpointer.add(self._offset_at(position))

    def _emit_read(self, namespace: str, document: Mapping[str, Any]) -> None:
        """An incremental snapshot read (``op=r``, ``source.snapshot=incremental``) at the current position."""
        position = self.source.position or Position(0, 0)
        db, _, coll = namespace.partition(".")
        source = SourceInfo(db, coll, position.sec, position.ord, snapshot=SnapshotMarker.INCREMENTAL, rs=self.rs)
        event = ChangeEvent(Op.READ, value_to_json(document["_id"]), source, after=document_to_json(document))
        self._emit(event)

    def run(self) -> StreamStats:
        """Stream until ``stop`` is set; then stop reading, flush, and commit. Returns the counters.

        While it runs, the cyclic collector's youngest generation is collected less often
        (``gc_tuning``): every change allocates a handful of short-lived objects.
        """
        with fewer_young_collections():
            return self._run()

    def _run(self) -> StreamStats:
        start = self._restore()
        self._log_start(start)
        self.source.open(start)
        self.metrics.set_connected(self.options.partition, True)
        try:
            self._note_opened(start)
            self._loop()
            self._observe_source()
            self.commit()
            if self.snapshotter is not None:
                self.snapshotter.close(carried_out=True)
        except BaseException:
            self._checkpointer.close_on_error()
            if self.snapshotter is not None:
                self.snapshotter.close(carried_out=False)
            raise
        finally:
            self.source.close()
            self.metrics.set_connected(self.options.partition, False)
        return self.stats

    def _log_start(self, start: Position | None) -> None:
        """Say where streaming starts: now (no stored offset), at a time, or after a resume token."""
        connector, partition = self.options.connector, self.options.partition
        if start is None:
            log.info("no stored offset for %s/%s: streaming changes from now on", connector, partition)
        elif start.resume_token is None:
            log.info("starting %s/%s at sec=%d ord=%d (no resume token)", connector, partition, start.sec, start.ord)
        else:
            log.info(
                "resuming %s/%s after sec=%d ord=%d, resume token %s",
                connector,
                partition,
                start.sec,
                start.ord,
                start.describe_token(),
            )

    def _note_opened(self, start: Position | None) -> None:
        """Log where the change stream opened; on a first start, remember it, so that changes made while the
        connector is stopped later are not missed."""
        opened_at = self.source.position
        if opened_at is None:
            return
        log.info("change stream open at sec=%d ord=%d", opened_at.sec, opened_at.ord)
        if start is None:
            self._add_position(opened_at)

    def _caught_up(self) -> Callable[[], bool]:
        """Whether the task has handed Kafka every change the source read (``transaction.boundary=poll``): the
        source's own answer, after waiting ``linger_s`` for more; a source that cannot tell always is."""
        linger_s = self.options.transaction_boundary.linger_s
        source_caught_up: Callable[[float], bool] = getattr(self.source, "caught_up", _always)

        def caught_up() -> bool:
            return source_caught_up(linger_s)

        return caught_up

    def _loop(self) -> None:
        """Read, handle and checkpoint change stream items until ``stop`` is set."""
        checkpointer = self._checkpointer
        checkpointer.start_interval()
        heartbeat_every = self.options.heartbeat_interval_s
        next_heartbeat = self._clock() + heartbeat_every
        next_observe = self._clock()
        snapshotter = self.snapshotter
        caught_up = self._caught_up()
        while not self.stop.is_set():
            item = self.source.next()
            self._handle(item)
            if snapshotter is not None:
                step = snapshotter.on_item(item)
                if step is not NOTHING:
                    self._carry_out(step)
            self._add_position(item.position)
            if not isinstance(item, StreamedChange):
                self.sink.poll(0)  # after a produce the sink has just served delivery reports
            if self._clock() >= next_observe:
                self._observe_source()
                next_observe = self._clock() + 0.5
            if heartbeat_every > 0 and self._clock() >= next_heartbeat:
                # A quiet connector still records where it stands, so it does not fall off the oplog.
                self._heartbeat(item.position)
                next_heartbeat = self._clock() + heartbeat_every
                checkpointer.commit_soon()
            # at least once: every offset.flush.interval.ms; exactly once: at each transaction boundary too
            checkpointer.tick(caught_up)

    def _handle(self, item: StreamItem) -> None:
        """The records of one change stream item: a change's event, the transaction metadata, a control event."""
        match item:
            case StreamedChange():
                self._emit(item.event)
            case ControlChange():
                if self.transactions is not None:
                    self._transaction_records(self.transactions.on_control())
                self.stats.control_events += 1
                log.info("%s event on %s.%s", item.operation_type, item.db, item.collection)
            case SignalChange():
                if item.event is not None:  # the signal collection is captured too
                    self._emit(item.event)
            case Idle():
                if self.transactions is not None:  # a quiet stream ends an open transaction
                    self._transaction_records(self.transactions.on_idle(self._wall_ms()))
            case _:
                assert_never(item)

    def _carry_out(self, step: Step) -> None:
        """What the incremental snapshotter returned for an item: its reads, then the blocking snapshots."""
        for namespace, document in step.reads:
            self._emit_read(namespace, document)
        for blocking in step.blocking:
            namespaces = ", ".join(blocking.namespaces)
            if self._blocking_snapshot is None:
                log.error("signal %s: blocking snapshots are not available here", blocking.signal_id)
                continue
            log.info("blocking snapshot of %s (signal %s): streaming pauses", namespaces, blocking.signal_id)
            self._blocking_snapshot(blocking.namespaces)
            log.info("blocking snapshot done: streaming resumes")

    def _observe_source(self) -> None:
        reconnects = self.source.reconnects
        while self._reconnects_seen < reconnects:
            self._reconnects_seen += 1
            self.metrics.record_disconnect(self.options.partition)
            self.metrics.set_connected(self.options.partition, True)
        elections = self.source.elections
        while self._elections_seen < elections:
            self._elections_seen += 1
            self.metrics.record_election(self.options.partition)
        self.metrics.set_in_flight(self._checkpointer.in_flight)

    def _heartbeat(self, position: Position) -> None:
        """A heartbeat record after ``position``: Debezium's, on partition 0 of the heartbeat topic."""
        prefix = self.codec.prefix
        key, value = heartbeat_record(prefix, self._wall_ms(), self.codec.schemas_enable)
        self._produce(self.options.heartbeat_topic or f"__debezium-heartbeat.{prefix}", key, value, partition=0)
        self._add_position(position)
        self.stats.heartbeats += 1

    def _skip(self, reason: str) -> None:
        self.stats.skipped += 1
        self.metrics.record_skipped(self.options.partition, reason)

    def _emit(self, event: ChangeEvent) -> None:
        options = self.options
        op: str = event.op._value_  # the member's own attribute: ``.value`` goes through a descriptor
        if op in options.skipped_operations:
            self._skip("skipped_operation")
            return
        now_ms = self._wall_ms()
        if self.transactions is not None and event.op is not Op.READ:
            before, event = self.transactions.on_event(event, now_ms)
            self._transaction_records(before)
        codec = self.codec
        topic = codec.topic(event)
        # the connector's chain writing the record straight from the event, when it can (its fused writer)
        written = None if options.oversize_threshold else self.sink.fused_record(topic, event)
        if written is not None:
            key, value = written
        else:
            key = codec.key(event)
            value = codec.value(event, now_ms)
        try:
            if options.oversize_threshold and len(value) > options.oversize_threshold:
                raise OversizedEventError(
                    f"the event for key {key.decode('utf-8', 'replace')} in {topic} is {len(value)} bytes, more than "
                    f"cursor.oversize.skip.threshold={options.oversize_threshold}"
                )
            self._produce(topic, key, value, codec.headers_for(event.source), converted=written is not None)
        except OversizedEventError as oversized:
            if options.oversize_mode != "skip":
                raise
            log.warning("skipped (cursor.oversize.handling.mode=skip): %s", oversized.message)
            self._skip("oversized")
            return
        self.stats.events[op] += 1
        source = event.source
        self.metrics.record_event(options.partition, op, source.ts_ms, now_ms, sec=source.sec, ord=source.ord)
        if op == "d" and options.tombstones_on_delete:
            self._produce(topic, key, None, codec.headers)
            self.stats.tombstones += 1

    def _produce(
        self,
        topic: str,
        key: bytes,
        value: bytes | None,
        headers: list[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
        converted: bool = False,
    ) -> None:
        ack = self._checkpointer.record()
        try:
            if (
                self.sink.produce(
                    topic, key, value, headers=headers, partition=partition, on_ack=ack, converted=converted
                )
                is False
            ):
                self.metrics.record_skipped(self.options.partition, "transform")  # dropped by the connector's chain
        except OversizedEventError:
            ack()  # never sent: nothing to wait for
            raise

    def _committed(self, offset: SourceOffset | None) -> None:
        """After each commit of the checkpointer (``offset``: what it wrote, ``None``: nothing new): the counters,
        the metrics and the status report."""
        if offset is not None:
            position = offset.position
            self.stats.commits += 1
            self.stats.last_committed = position
            self.metrics.record_commit(self.options.partition)
            log.debug("committed sec=%d ord=%d", position.sec, position.ord)
        if self._on_status is None:
            return
        if self._checkpointer.transactional:  # a transaction may end every change: report at the flush interval
            if self._clock() < self._next_status:
                return
            self._next_status = self._clock() + self.options.flush_interval_s
        self._on_status(self.stats)

    def commit(self) -> None:
        """Flush the producer, wait for every delivery report, then commit the last acknowledged position."""
        self._checkpointer.close(self.options.flush_timeout_s)
