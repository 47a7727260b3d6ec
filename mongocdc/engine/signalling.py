"""Signals and incremental snapshots inside the streaming loop (DBLog watermarks).

The streaming thread drives everything, so the window is opened before the stream
can reach the open watermark. Per chunk: write the open watermark → read the
chunk (buffered in the window) → write the close watermark → keep streaming;
stream events for buffered keys drop them from the buffer while the window is
open; at the close watermark the rest is emitted as ``op=r`` reads with
``source.snapshot=incremental``. Stream events are never held back.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from mongocdc.engine.incremental import IncrementalSnapshotState, SnapshotWindow
from mongocdc.engine.source_offset import SourceOffset
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

log = logging.getLogger("mongocdc.signals")


class ChunkReader(Protocol):
    def maximum_key(self, namespace: str, query: Mapping[str, Any]) -> tuple[bool, Any]: ...

    def chunk(self, namespace: str, query: Mapping[str, Any], limit: int) -> list[Mapping[str, Any]]: ...


class WatermarkWriter(Protocol):
    def write_watermark(self, kind: Any, chunk_id: str, strategy: Any = "insert_insert") -> str: ...


class SignalSource(Protocol):
    def poll(self, timeout: float = 0.0, max_records: int = 100) -> list[Signal]: ...

    def commit(self) -> None: ...


Notify = Callable[..., None]
"""``notify(type, signal_id=..., **additional_data)``: a Debezium notification (log and/or sink)."""


class IncrementalSnapshotter:
    """Handles signals (from the signal collection and the Kafka channel) and runs incremental snapshots."""

    def __init__(
        self,
        *,
        reader: ChunkReader,
        writer: WatermarkWriter,
        emit_read: Callable[[str, Mapping[str, Any]], None],
        captured: Callable[[], Sequence[str]],
        chunk_size: int = 1024,
        strategy: str = "insert_insert",
        kafka_signals: SignalSource | None = None,
        notify: Notify | None = None,
        blocking_snapshot: Callable[[Sequence[str]], None] | None = None,
        state: IncrementalSnapshotState | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._emit_read = emit_read
        self._captured = captured
        self._chunk_size = chunk_size
        self._strategy = strategy
        self._kafka = kafka_signals
        self._notify = notify or (lambda *args, **kwargs: None)
        self._blocking = blocking_snapshot
        self.state = state
        self.window = SnapshotWindow()
        self._chunk: tuple[str, Any, int] | None = None  # chunk id, last key, count
        self.reads = 0
        self.ignored_signals = 0
        self.completed_id: str | None = None

    def bind_emit(self, emit_read: Callable[[str, Mapping[str, Any]], None]) -> None:
        """Where reads go: the streaming task produces them at its current position."""
        self._emit_read = emit_read

    # -- offsets ------------------------------------------------------------------------

    def restore(self, offset: SourceOffset | None) -> None:
        """Pick up a stored offset's incremental snapshot progress (and the last completed id)."""
        if offset is None:
            return
        if self.state is None:
            self.state = offset.incremental
        if offset.completed_incremental is not None:
            self.completed_id = offset.completed_incremental

    # -- the stream ------------------------------------------------------------------------

    def on_data_event(self, namespace: str, key_json: str) -> None:
        """A change streamed for ``namespace``: a buffered read of that key is stale now."""
        self.window.on_stream_event(namespace, key_json)

    def on_signal_document(self, operation: str, document: Mapping[str, Any] | None, document_id: Any) -> None:
        """A change in the signal collection: a signal (insert) or a watermark (insert, or delete)."""
        closing = window_close_for_deleted(document_id) if operation == "delete" else None
        if closing is not None:
            self._on_close(closing.chunk_id)
        if operation == "delete":
            return
        if operation not in ("insert", "replace") or document is None:
            return
        try:
            signal = parse_signal(document)
        except InvalidSignalError as invalid:
            self.ignored_signals += 1
            log.error("ignored %s", invalid.message)
            return
        self.handle(signal)

    def poll_kafka(self) -> None:
        if self._kafka is None:
            return
        signals = self._kafka.poll(0.0)
        for signal in signals:
            self.handle(signal)
        if signals:
            self._kafka.commit()

    def handle(self, signal: Signal) -> None:
        if isinstance(signal, WindowOpen):
            self.window.watermark_open(signal.chunk_id)
        elif isinstance(signal, WindowClose):
            self._on_close(signal.chunk_id)
        elif isinstance(signal, LogSignal):
            log.info("signal %s: %s", signal.id, signal.message)
        elif isinstance(signal, ExecuteSnapshot):
            self._execute(signal)
        elif isinstance(signal, StopSnapshot):
            self._stop(signal)
        elif isinstance(signal, PauseSnapshot | ResumeSnapshot):
            self._pause_or_resume(signal)

    def _pause_or_resume(self, signal: PauseSnapshot | ResumeSnapshot) -> None:
        pause = isinstance(signal, PauseSnapshot)
        if self.state is None or not self.state.running or self.state.paused == pause:
            log.info("signal %s: no incremental snapshot to %s", signal.id, "pause" if pause else "resume")
            return
        self.state = self.state.pause() if pause else self.state.resume()
        self._notify("PAUSED" if pause else "RESUMED", signal_id=self.state.snapshot_id)
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
            if self._blocking is None:
                log.error("signal %s: blocking snapshots are not available here", signal.id)
                return
            log.info("blocking snapshot of %s (signal %s): streaming pauses", ", ".join(namespaces), signal.id)
            self._blocking(namespaces)
            log.info("blocking snapshot done: streaming resumes")
            return
        conditions = {ns: dict(f) for ns in namespaces if (f := signal.filter_for(ns)) is not None}
        if self.state is not None and self.state.running:
            self.state = self.state.add_collections(namespaces, conditions)
            log.info("incremental snapshot %s: added %s", self.state.snapshot_id, ", ".join(namespaces))
            return
        self.state = IncrementalSnapshotState.start(signal.id, namespaces, conditions)
        log.info("incremental snapshot %s of %s started", signal.id, ", ".join(namespaces))
        self._notify("STARTED", signal_id=signal.id, data_collections=namespaces)

    def _stop(self, signal: StopSnapshot) -> None:
        if self.state is None or not self.state.running:
            log.info("signal %s: no incremental snapshot is running", signal.id)
            return
        current = self.state.current
        if signal.stops_all:
            self.state = self.state.stop()
        else:
            self.state = self.state.stop(signal.select(self.state.collections).namespaces)
        if self.state.current != current:
            self.window.cancel()
            self._chunk = None
        log.info("incremental snapshot stopped for %s (signal %s)", "all" if signal.stops_all else "some", signal.id)
        self._notify("ABORTED", signal_id=self.state.snapshot_id)

    # -- chunks ----------------------------------------------------------------------------

    def _on_close(self, chunk_id: str) -> None:
        if self._chunk is None or self._chunk[0] != chunk_id or self.state is None:
            return
        reads = self.window.watermark_close(chunk_id)
        if reads is None:
            return
        namespace = self.state.current
        assert namespace is not None
        for document in reads:
            self._emit_read(namespace, document)
        self.reads += len(reads)
        _, last_key, count = self._chunk
        self._chunk = None
        if count:
            self.state = self.state.after_chunk(last_key, count)
        if count < self._chunk_size:
            finished = self.state.current
            self.state = self.state.next_bracket()
            if self.state.current != finished:
                self._notify("TABLE_SCAN_COMPLETED", signal_id=self.state.snapshot_id, data_collection=finished)
        self._notify("IN_PROGRESS", signal_id=self.state.snapshot_id, **self.state.progress_data())
        if not self.state.running:
            self._completed(self.state.snapshot_id)

    def _completed(self, snapshot_id: str) -> None:
        log.info("incremental snapshot %s completed", snapshot_id)
        self.completed_id = snapshot_id
        self._notify("COMPLETED", signal_id=snapshot_id)

    def maybe_next_chunk(self) -> None:
        """Start the next chunk when a snapshot runs, is not paused, and no window is in flight."""
        if self._chunk is not None or self.state is None or not self.state.running or self.state.paused:
            return
        state = self.state
        while state.running and not state.has_maximum_key:
            namespace = state.current
            assert namespace is not None
            found, key = self._reader.maximum_key(namespace, state.maximum_key_query())
            if found:
                state = state.with_maximum_key(key)
            else:
                log.info("incremental snapshot: %s is empty", namespace)
                state = state.finish_collection()
                self._notify("TABLE_SCAN_COMPLETED", signal_id=state.snapshot_id, data_collection=namespace)
        self.state = state
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
