"""The incremental snapshotter: signals and incremental snapshots inside the streaming loop (DBLog watermarks).

Data flows one way. The streaming task hands over every stream item (:meth:`IncrementalSnapshotter.on_item`)
and carries out the :class:`Step` that comes back: the reads to emit at the current position, the
blocking snapshots to run while streaming waits. Everything else the snapshotter needs (where to read
chunks, where to write watermarks, the Kafka signal channel, notifications) it is given when it is
built; its progress goes into the offset as it is (``SourceOffset.incremental``), encoded only when
an offset is committed.

The streaming thread drives everything, so a chunk's window is opened before the stream can reach
its open watermark. Per chunk: write the open watermark → read the chunk (buffered in the window,
:mod:`mongocdc.engine.incremental`) → write the close watermark → keep streaming; stream events for
buffered keys drop them from the buffer while the window is open; at the close watermark the rest
is returned as reads (``op=r``, ``source.snapshot=incremental``). Stream events are never held back.

Signals come from the signal collection, as stream items (``SignalChange``), and from the Kafka
channel, which is read at most every ``signal.poll.interval.ms``. Where the Kafka channel goes on is in
the task's offset (``SourceOffset.signal_offsets``, registered with the item whose step carried the
signals out), so a task reads each signal once wherever it runs, and a signal whose offset was not
committed before a crash is read again. The group's offsets are also committed once the step was
carried out (at the next item, or at :meth:`IncrementalSnapshotter.close` after a graceful stop).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, assert_never

from mongocdc.engine.incremental import IncrementalSnapshotState, SnapshotWindow
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.events.changes import ControlChange, SignalChange, StreamedChange
from mongocdc.events.signals import (
    ExecuteSnapshot,
    InvalidSignalError,
    LogSignal,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SnapshotType,
    StopSnapshot,
    WindowClose,
    WindowOpen,
    parse_signal,
    window_close_for_deleted,
)
from mongocdc.sources.base import Idle, StreamItem

log = logging.getLogger("mongocdc.signals")


class ChunkReader(Protocol):
    def maximum_key(self, namespace: str, query: Mapping[str, Any]) -> tuple[bool, Any]: ...

    def chunk(self, namespace: str, query: Mapping[str, Any], limit: int) -> list[Mapping[str, Any]]: ...


class WatermarkWriter(Protocol):
    def write_watermark(self, kind: Any, chunk_id: str, strategy: Any = "insert_insert") -> str: ...


class SignalSource(Protocol):
    positions: tuple[tuple[int, int], ...] | None
    """The next offset to read of each partition (``None`` until the channel is first read): the task's offset
    keeps it, and ``start_at`` gives it back when the task starts again, wherever it runs."""

    def start_at(self, positions: Mapping[int, int] | None) -> None: ...

    def poll(self, timeout: float = 0.0, max_records: int = 100) -> list[Signal]: ...

    def commit(self) -> None: ...

    def close(self) -> None: ...


Notify = Callable[..., None]
"""``notify(type, signal_id=..., **additional_data)``: a Debezium notification (log and/or sink)."""


@dataclass(frozen=True, slots=True)
class BlockingSnapshot:
    """An ``execute-snapshot`` signal of ``type: blocking``: copy ``namespaces`` while streaming waits."""

    signal_id: str
    namespaces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Step:
    """What the streaming task does for the snapshotter after a stream item, in this order."""

    reads: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """``(namespace, document)`` of each incremental read, to emit at the current position, in ``_id`` order."""
    blocking: tuple[BlockingSnapshot, ...] = ()
    """Blocking snapshots signals asked for."""


NOTHING: Final = Step()
"""The step of almost every item (one object, not one per item)."""


class IncrementalSnapshotter:
    """Handles signals (from the signal collection and the Kafka channel) and runs incremental snapshots."""

    def __init__(
        self,
        *,
        reader: ChunkReader,
        writer: WatermarkWriter,
        captured: Callable[[], Sequence[str]],
        chunk_size: int = 1024,
        strategy: str = "insert_insert",
        kafka_signals: SignalSource | None = None,
        signal_poll_interval_s: float = 5.0,
        notify: Notify | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._captured = captured
        self._chunk_size = chunk_size
        self._strategy = strategy
        self._kafka = kafka_signals
        self._poll_interval_s = signal_poll_interval_s
        self._next_poll = float("-inf")
        self._signals_to_commit = False
        """Kafka signals were read: commit them once their step was carried out."""
        self._notify = notify or (lambda *args, **kwargs: None)
        self._clock = clock
        self._state: IncrementalSnapshotState | None = None
        self._completed_id: str | None = None
        self.window = SnapshotWindow()
        self._chunk: tuple[str, Any, int] | None = None  # chunk id, last key, count
        self._reads: list[tuple[str, Mapping[str, Any]]] = []
        self._blocking: list[BlockingSnapshot] = []

    # -- what the offset carries ----------------------------------------------------------

    @property
    def state(self) -> IncrementalSnapshotState | None:
        """The running incremental snapshot's progress (``SourceOffset.incremental``), ``None`` when none runs."""
        state = self._state
        return state if state is not None and state.running else None

    @property
    def completed_id(self) -> str | None:
        """The id of the last incremental snapshot that completed (``SourceOffset.completed_incremental``)."""
        return self._completed_id

    @property
    def signal_offsets(self) -> tuple[tuple[int, int], ...] | None:
        """Where the ``kafka`` signal channel goes on (``SourceOffset.signal_offsets``): past every signal whose
        step was handed to the streaming task, which registers it with the offset of the same item."""
        return self._kafka.positions if self._kafka is not None else None

    def restore(self, offset: SourceOffset | None) -> None:
        """Continue from the stored offset (``None``: there is none): its incremental snapshot progress and last
        completed id. A window in flight before is dropped; its watermarks, if the stream replays them, are stale."""
        self._state = offset.incremental if offset is not None else None
        self._completed_id = offset.completed_incremental if offset is not None else None
        if self._kafka is not None:
            stored = offset.signal_offsets if offset is not None else None
            self._kafka.start_at(dict(stored) if stored is not None else None)
        self.window.cancel()
        self._chunk = None

    # -- the stream ------------------------------------------------------------------------

    def on_item(self, item: StreamItem) -> Step:
        """Take one stream item (after the streaming task emitted its own records); returns what to do now.

        Reads the Kafka signal channel when ``signal.poll.interval.ms`` has passed, and starts the next
        chunk when a snapshot runs, is not paused, and no window is in flight.
        """
        if self._signals_to_commit:  # the step of the signals read last time was carried out
            self._commit_signals()
        match item:
            case StreamedChange():
                # A change streamed for the chunk's collection: a buffered read of that key is stale now.
                self.window.on_stream_event(item.event.namespace, item.event.key_json)
            case SignalChange():
                self._on_signal_document(item.operation_type, item.document, item.document_id)
            case ControlChange() | Idle():
                pass
            case _:
                assert_never(item)
        if self._kafka is not None:
            now = self._clock()
            if now >= self._next_poll:
                self._next_poll = now + self._poll_interval_s
                signals = self._kafka.poll(0.0)
                for signal in signals:
                    self._handle(signal)
                self._signals_to_commit = bool(signals)
        self._next_chunk()
        if not self._reads and not self._blocking:
            return NOTHING
        step = Step(tuple(self._reads), tuple(self._blocking))
        self._reads.clear()
        self._blocking.clear()
        return step

    def close(self, *, carried_out: bool) -> None:
        """Stop reading signals; with ``carried_out`` (a graceful stop), the last step was carried out and
        the Kafka signals it came from are committed first."""
        if self._kafka is None:
            return
        if carried_out and self._signals_to_commit:
            self._commit_signals()
        self._signals_to_commit = False
        self._next_poll = float("-inf")
        self._kafka.close()

    def _commit_signals(self) -> None:
        assert self._kafka is not None
        self._signals_to_commit = False
        self._kafka.commit()

    def _on_signal_document(self, operation: str, document: Mapping[str, Any] | None, document_id: Any) -> None:
        """A change in the signal collection: a signal (insert) or a watermark (insert, or delete)."""
        if operation == "delete":
            closing = window_close_for_deleted(document_id)
            if closing is not None:
                self._on_close(closing.chunk_id)
            return
        if operation not in ("insert", "replace") or document is None:
            return
        try:
            signal = parse_signal(document)
        except InvalidSignalError as invalid:
            log.error("ignored %s", invalid.message)
            return
        self._handle(signal)

    def _handle(self, signal: Signal) -> None:
        match signal:
            case WindowOpen():
                self.window.watermark_open(signal.chunk_id)
            case WindowClose():
                self._on_close(signal.chunk_id)
            case LogSignal():
                log.info("signal %s: %s", signal.id, signal.message)
            case ExecuteSnapshot():
                self._execute(signal)
            case StopSnapshot():
                self._stop(signal)
            case PauseSnapshot() | ResumeSnapshot():
                self._pause_or_resume(signal)

    def _pause_or_resume(self, signal: PauseSnapshot | ResumeSnapshot) -> None:
        pause = isinstance(signal, PauseSnapshot)
        if self._state is None or not self._state.running or self._state.paused == pause:
            log.info("signal %s: no incremental snapshot to %s", signal.id, "pause" if pause else "resume")
            return
        self._state = self._state.pause() if pause else self._state.resume()
        self._notify("PAUSED" if pause else "RESUMED", signal_id=self._state.snapshot_id)
        log.info("incremental snapshot %s (signal %s)", "paused" if pause else "resumed", signal.id)

    def _execute(self, signal: ExecuteSnapshot) -> None:
        if signal.noop_reason:
            log.warning("signal %s does nothing: %s", signal.id, signal.noop_reason)
            return
        selection = signal.select(self._captured())
        for pattern in selection.unmatched:
            log.warning("signal %s: %s matches no captured collection", signal.id, pattern)
        if not selection.namespaces:
            log.warning("signal %s selects no captured collection: nothing to snapshot", signal.id)
            return
        namespaces = list(selection.namespaces)
        if signal.snapshot_type is SnapshotType.BLOCKING:
            self._blocking.append(BlockingSnapshot(signal.id, tuple(namespaces)))
            return
        conditions = {ns: dict(f) for ns in namespaces if (f := signal.filter_for(ns)) is not None}
        if self._state is not None and self._state.running:
            self._state = self._state.add_collections(namespaces, conditions)
            log.info("incremental snapshot %s: added %s", self._state.snapshot_id, ", ".join(namespaces))
            return
        self._state = IncrementalSnapshotState.start(signal.id, namespaces, conditions)
        log.info("incremental snapshot %s of %s started", signal.id, ", ".join(namespaces))
        self._notify("STARTED", signal_id=signal.id, data_collections=namespaces)

    def _stop(self, signal: StopSnapshot) -> None:
        if self._state is None or not self._state.running:
            log.info("signal %s: no incremental snapshot is running", signal.id)
            return
        current = self._state.current
        if signal.stops_all:
            self._state = self._state.stop()
        else:
            stopped = signal.select(self._state.collections).namespaces
            self._state = self._state.stop(stopped)
        if self._state.current != current:
            self.window.cancel()
            self._chunk = None
        log.info("incremental snapshot stopped for %s (signal %s)", "all" if signal.stops_all else "some", signal.id)
        if signal.stops_all:
            self._notify("ABORTED", signal_id=self._state.snapshot_id)
        else:  # as Debezium: the collections taken out of a snapshot that goes on
            self._notify("ABORTED", signal_id=self._state.snapshot_id, data_collections=list(stopped))

    # -- chunks ----------------------------------------------------------------------------

    def _on_close(self, chunk_id: str) -> None:
        if self._chunk is None or self._chunk[0] != chunk_id or self._state is None:
            return
        reads = self.window.watermark_close(chunk_id)
        if reads is None:
            return
        namespace = self._state.current
        assert namespace is not None
        self._reads.extend((namespace, document) for document in reads)
        _, last_key, count = self._chunk
        self._chunk = None
        if count:
            self._state = self._state.after_chunk(last_key, count)
        if count < self._chunk_size:
            before = self._state
            self._state = self._state.next_bracket()
            if self._state.current != before.current:
                self._table_scan_completed(before, "SUCCEEDED")
        self._notify("IN_PROGRESS", signal_id=self._state.snapshot_id, **self._state.progress_data())
        if not self._state.running:
            self._completed(self._state.snapshot_id)

    def _table_scan_completed(self, state: IncrementalSnapshotState, status: str) -> None:
        """Debezium's ``TABLE_SCAN_COMPLETED`` for ``state``'s current collection, read to its end."""
        self._notify(
            "TABLE_SCAN_COMPLETED",
            signal_id=state.snapshot_id,
            data_collections=state.collections,
            scanned_collection=state.current,
            total_rows_scanned=state.documents,
            status=status,
        )

    def _completed(self, snapshot_id: str) -> None:
        log.info("incremental snapshot %s completed", snapshot_id)
        self._completed_id = snapshot_id
        self._notify("COMPLETED", signal_id=snapshot_id)

    def _next_chunk(self) -> None:
        """Start the next chunk when a snapshot runs, is not paused, and no window is in flight."""
        if self._chunk is not None or self._state is None or not self._state.running or self._state.paused:
            return
        state = self._state
        while state.running and not state.has_maximum_key:
            namespace = state.current
            assert namespace is not None
            found, key = self._reader.maximum_key(namespace, state.maximum_key_query())
            if found:
                state = state.with_maximum_key(key)
            else:
                log.info("incremental snapshot: %s is empty", namespace)
                self._table_scan_completed(state, "EMPTY")
                state = state.finish_collection()
        self._state = state
        if not state.running:
            self._completed(state.snapshot_id)
            return
        namespace = state.current
        assert namespace is not None
        chunk_id = str(uuid.uuid4())
        self._writer.write_watermark("open", chunk_id, self._strategy)
        documents = self._reader.chunk(namespace, state.chunk_query(), self._chunk_size)
        self.window.open(chunk_id, namespace, documents)
        last = documents[-1]["_id"] if documents else None
        self._chunk = (chunk_id, last, len(documents))
        self._writer.write_watermark("close", chunk_id, self._strategy)
