"""The snapshot: every included collection copied as ``op=r`` events, resumable chunk by chunk.

Collections are read in parallel (``snapshot.max.threads``), each by ``_id``-ordered
chunks. Progress (the last chunk of each collection whose records Kafka all
acknowledged) is committed with ``initsync: true``, so an interrupted snapshot
continues where it stopped instead of starting over.

Each worker holds back the last document it read, so the last document of the whole
snapshot gets Debezium's ``source.snapshot: "last"`` (every other read is ``"true"``, as
Debezium's MongoDB connector writes them); a chunk's end is registered only once every
document of it was handed to the producer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

import bson
from bson.raw_bson import RawBSONDocument

from mongocdc.engine.checkpoint import Checkpointer
from mongocdc.engine.exactly_once import TransactionBoundary
from mongocdc.engine.metrics import Metrics
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import Sink
from mongocdc.events.codec import document_to_json, raw_document_id, value_to_json
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.model import ChangeEvent, Op, SnapshotMarker, SourceInfo
from mongocdc.events.position import Position
from mongocdc.events.snapshot import Chunk, CollectionProgress, ScanPosition, SnapshotState
from mongocdc.offsets.base import OffsetStore

log = logging.getLogger("mongocdc.snapshot")

DocumentTransform = Callable[[str, str, Mapping[str, Any]], Mapping[str, Any]]


class Scanner(Protocol):
    """One collection, read in ``_id`` order."""

    namespace: str

    def estimated_count(self) -> int: ...

    def chunks(self, start: ScanPosition | None = None) -> Iterator[Chunk]: ...


SCANNING_OTHER_ID_TYPES = "checking the remaining _id types"
"""A collection's phase once a scan is past the last ``_id`` of a type: the next type brackets are queried."""
SCANNED = "scan done"
"""A collection's phase once its scan finished: its last document is held back until every collection is read."""
FINAL_FLUSH = "final flush to Kafka and commit"
"""The snapshot's phase once every scan finished: the held-back documents, the producer's flush, the commit."""


@dataclass(slots=True)
class CollectionReport:
    namespace: str
    estimated: int = 0
    """MongoDB's estimated count, 0 while not known (asked only once the snapshot runs ``estimate_after_s``)."""
    documents: int = 0
    seconds: float = 0.0
    """Seconds this run spent on the collection so far (live while it is being read)."""
    done: bool = False
    resumed_from: int = 0
    """Documents an interrupted snapshot had read before this run (counted in ``documents``, not in ``rate``)."""
    phase: str = ""
    """What the scan does besides reading documents (``SCANNING_OTHER_ID_TYPES``, ``SCANNED``), else empty."""
    running_since: float | None = None
    """The runner's clock when this run's scan of the collection began, while it runs."""

    @property
    def rate(self) -> float | None:
        """Documents per second this run read, ``None`` before a measurable time passed."""
        return (self.documents - self.resumed_from) / self.seconds if self.seconds > 0 else None


@dataclass(slots=True)
class SnapshotReport:
    collections: dict[str, CollectionReport] = field(default_factory=dict)
    completed: bool = False
    seconds: float = 0.0
    """Seconds since this run of the snapshot began (live while it runs)."""
    phase: str = ""
    """What the whole snapshot does once the scans are over (``FINAL_FLUSH``), else empty."""

    @property
    def documents(self) -> int:
        return sum(c.documents for c in self.collections.values())

    @property
    def rate(self) -> float | None:
        """Documents per second this run read over all collections, ``None`` before a measurable time passed."""
        read = sum(c.documents - c.resumed_from for c in self.collections.values())
        return read / self.seconds if self.seconds > 0 else None

    def summary(self) -> str:
        """``20,100 documents in 10.2 s (1,970 docs/s)``: what this run read, how long it took, how fast."""
        read = sum(c.documents - c.resumed_from for c in self.collections.values())
        text = f"{read:,} {'document' if read == 1 else 'documents'} in {self.seconds:.1f} s"
        rate = self.rate
        if rate is not None:
            text += f" ({rate:,.0f} docs/s)"
        resumed = self.documents - read
        if resumed:
            text += f", {self.documents:,} with the {resumed:,} read before the interruption"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "completed": self.completed,
            "documents": self.documents,
            "collections": {
                ns: {"documents": c.documents, "estimated": c.estimated, "seconds": round(c.seconds, 3), "done": c.done}
                for ns, c in sorted(self.collections.items())
            },
        }


ProgressCallback = Callable[[SnapshotReport], None]


@dataclass(frozen=True, slots=True)
class SnapshotOptions:
    connector: str
    partition: str
    rs: str | None = None
    max_threads: int = 1
    flush_interval_s: float = 60.0
    progress_interval_s: float = 0.5
    max_in_flight: int = 4_000
    """Records produced but not yet acknowledged before reading waits (bounds memory)."""
    transaction_boundary: TransactionBoundary = TransactionBoundary()
    """Where a transaction ends when the store is transactional (``exactly.once.support``): ``poll`` ends one
    every ``max_records`` documents, ``interval`` every ``interval_s``."""
    estimate_after_s: float = 5.0
    """Seconds into the snapshot before the collections still being read are counted (MongoDB's estimated
    count, on a thread of its own) for progress displays and the rows-estimated metric: a snapshot done
    sooner asks MongoDB for nothing but its documents, as Debezium's does. 5 s is half the interval of a plain
    display's lines, so its first line has the totals; a terminal's bars ask sooner
    (``SnapshotProgressView.estimate_after_s``)."""


class _Held:
    """The last document a worker read, the chunk it came from, and the time of its read."""

    __slots__ = ("chunk", "document", "read_ns")

    def __init__(self, document: Mapping[str, Any], chunk: Chunk) -> None:
        self.document = document
        self.chunk = chunk
        # The scanner's time of the read, else now (when the document left the scanner), never later.
        self.read_ns = chunk.read_ns if chunk.read_ns is not None else time.time_ns()

    @property
    def end(self) -> ScanPosition:
        return self.chunk.end


class SnapshotRunner:
    """Runs one snapshot of one source partition; see the module docstring."""

    def __init__(
        self,
        sink: Sink,
        store: OffsetStore,
        codec: EnvelopeCodec,
        options: SnapshotOptions,
        *,
        stop: threading.Event | None = None,
        transform: DocumentTransform | None = None,
        on_progress: ProgressCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        metrics: Metrics | None = None,
    ) -> None:
        self.sink = sink
        self.store = store
        self.codec = codec
        self.options = options
        self.stop = stop or threading.Event()
        self._transform = transform
        self._on_progress = on_progress
        self._clock = clock
        self._wall_ms = wall_clock_ms
        self._lock = threading.Lock()
        """Guards the progress; exactly once, also each document's produce against a commit (the checkpointer's)."""
        self._checkpointer = Checkpointer(
            store,
            options.connector,
            options.partition,
            sink,
            flush_interval_s=options.flush_interval_s,
            boundary=options.transaction_boundary,
            clock=clock,
            transaction_offset=self._transaction_offset,
            lock=self._lock,
            log=log,
        )
        """Commits the progress after each chunk end (exactly once, after each document): when, and which."""
        self._resume = Position(0, 0)
        """Where streaming resumes once the snapshot completed (the offset's position meanwhile)."""
        self._state: SnapshotState | None = None
        self.report = SnapshotReport()
        self.metrics = metrics or Metrics(options.connector)
        self._rows_reported: dict[str, int] = {}
        self._done_reported: set[str] = set()
        self._since_check = 0
        self._started = clock()
        self._exact: dict[str, tuple[_Held, int]] = {}
        """Exactly once: per collection, the last document produced since its last registered chunk end, and the
        collection's documents counting it; a commit stores the scan right after it."""
        self._scanners: dict[str, Scanner] = {}
        self._estimates_asked = False

    # -- producing ------------------------------------------------------------------

    def _event(self, namespace: str, document: Mapping[str, Any], marker: SnapshotMarker, read_ns: int) -> ChangeEvent:
        assert self._state is not None
        db, _, coll = namespace.partition(".")
        if self._transform is not None:
            if isinstance(document, RawBSONDocument):
                document = bson.decode(document.raw)
            document = self._transform(db, coll, document)
        # As Debezium: the time of the read (to the nanosecond), no position (ord -1), no wall time.
        source = SourceInfo(
            db=db,
            collection=coll,
            sec=self._resume.sec,
            ord=-1,
            snapshot=marker,
            rs=self.options.rs,
            read_ns=read_ns,
        )
        key = raw_document_id(document) if isinstance(document, RawBSONDocument) else document["_id"]
        return ChangeEvent(Op.READ, value_to_json(key), source, after=document_to_json(document))

    def _produce(self, namespace: str, held: _Held, marker: SnapshotMarker, documents: int) -> None:
        """Produce ``held``'s document, the ``documents``-th of ``namespace``."""
        # Back-pressure: a scan outruns Kafka easily; hold memory flat by waiting for acknowledgements.
        self._since_check += 1
        if self._since_check >= 256:
            self._since_check = 0
            while self._checkpointer.in_flight >= self.options.max_in_flight and not self.stop.is_set():
                self.sink.poll(0.05)
        event = self._event(namespace, held.document, marker, held.read_ns)
        topic = self.codec.topic(event)
        written = self.sink.fused_record(topic, event)  # the chain writing it straight from the event, if it can
        if written is not None:
            key, value = written
        else:
            key, value = self.codec.key(event), self.codec.value(event, self._wall_ms())
        converted = written is not None
        checkpointer = self._checkpointer
        if not checkpointer.transactional:
            self._send(topic, key, value, converted)
            return
        # Exactly once: a commit (which holds this lock) covers exactly the documents produced before it.
        with self._lock:
            self._send(topic, key, value, converted)
            self._exact[namespace] = (held, documents)
            full = checkpointer.full()
        if full:
            checkpointer.commit()

    def _send(self, topic: str, key: bytes, value: bytes, converted: bool) -> None:
        """Hand one record to the producer, numbered for the checkpointer."""
        queued = self.sink.produce(
            topic, key, value, headers=self.codec.headers, on_ack=self._checkpointer.record(), converted=converted
        )
        if queued is False:  # dropped by the connector's transforms
            self.metrics.record_skipped(self.options.partition, "transform")

    def _register(self, namespace: str, end: ScanPosition, documents: int, done: bool = False) -> None:
        """Everything of ``namespace`` up to ``end`` was handed to the producer."""
        with self._lock:
            assert self._state is not None
            self._state = self._state.with_collection(namespace, CollectionProgress(end, done, documents))
            self._checkpointer.add(SourceOffset(self._resume, snapshot=self._state))
            self._exact.pop(namespace, None)

    # -- one collection ---------------------------------------------------------------

    def _copy(self, scanner: Scanner) -> tuple[bool, _Held | None]:
        """Copy one collection except its last document, which is returned (held back).

        Returns whether the scan finished, and the held-back document (``None`` for an empty collection).
        """
        ns = scanner.namespace
        report = self.report.collections[ns]
        assert self._state is not None
        progress = self._state.progress(ns)
        started = report.running_since = self._clock()
        held: _Held | None = None
        emitted = progress.documents
        try:
            for chunk in scanner.chunks(progress.scan):
                report.phase = ""
                for document in chunk.documents:
                    if self.stop.is_set():
                        if held is not None:  # graceful stop: deliver what was read, resume right after it
                            emitted += 1
                            self._produce(ns, held, SnapshotMarker.TRUE, emitted)
                            report.documents = emitted
                            self._register(ns, held.chunk.position_after(held.document), emitted)
                        return False, None
                    if held is not None:
                        emitted += 1
                        self._produce(ns, held, SnapshotMarker.TRUE, emitted)
                        report.documents = emitted
                        if held.chunk is not chunk:  # the held document closed the previous chunk
                            self._register(ns, held.end, emitted)
                    held = _Held(document, chunk)
                if chunk.end.bracket > chunk.bracket:  # past this type's last _id: the next types are queried
                    report.phase = SCANNING_OTHER_ID_TYPES
            report.phase = SCANNED
            return True, held
        finally:
            report.running_since = None
            report.seconds = self._clock() - started

    # -- the whole snapshot ------------------------------------------------------------

    def run(self, scanners: Sequence[Scanner], resume: Position, state: SnapshotState | None = None) -> SnapshotReport:
        """Copy every collection not done yet (per ``state``, the progress of an interrupted snapshot);
        commit progress, with ``resume`` as the offset's position; on ``stop``, commit and return early."""
        state = state or SnapshotState()
        self._resume = resume
        self._state = state
        self._started = self._clock()
        pending = [s for s in scanners if not state.progress(s.namespace).done]
        self._scanners = {s.namespace: s for s in scanners}
        self._estimates_asked = False
        for scanner in scanners:
            progress = state.progress(scanner.namespace)
            self.report.collections[scanner.namespace] = CollectionReport(
                scanner.namespace,
                documents=progress.documents,
                done=progress.done,
                resumed_from=progress.documents,
            )
        log.info(
            "snapshot of %d %s (%d to do) with %d %s",
            len(scanners),
            "collection" if len(scanners) == 1 else "collections",
            len(pending),
            self.options.max_threads,
            "thread" if self.options.max_threads == 1 else "threads",
        )
        self._checkpointer.commit_offset(SourceOffset(resume, snapshot=state))
        partition = self.options.partition
        self.metrics.snapshot_started(partition, dict.fromkeys(self.report.collections))
        for ns, c in self.report.collections.items():
            self._rows_reported[ns] = c.documents
            if c.done:
                self._done_reported.add(ns)
                self.metrics.snapshot_collection_done(partition, ns)
        held: dict[str, _Held | None] = {}
        finished: set[str] = set()
        try:
            with ThreadPoolExecutor(max(1, self.options.max_threads), thread_name_prefix="snapshot") as pool:
                futures = {pool.submit(self._copy, s): s.namespace for s in pending}
                self._supervise(futures)
                for future, ns in futures.items():
                    done, held[ns] = future.result()
                    if done:
                        finished.add(ns)
            interrupted = self.stop.is_set()
            self.report.phase = FINAL_FLUSH
            self._notify()
            self._finish({ns: held[ns] for ns in finished}, whole_snapshot=not interrupted)
            self._checkpointer.close(flush_transaction=False)  # exactly once, the transaction's commit flushes
            self.report.phase = ""
            if interrupted:
                self._notify()
                log.info(
                    "snapshot interrupted after %s: it continues where it stopped on the next start",
                    self.report.summary(),
                )
                return self.report
            self.report.completed = all(c.done for c in self.report.collections.values())
        except BaseException:
            self.stop.set()
            self._checkpointer.close_on_error()
            self._notify()
            self.metrics.snapshot_finished(partition, aborted=True)
            raise
        self._notify()
        self.metrics.snapshot_finished(partition, aborted=not self.report.completed)
        return self.report

    def _ask_estimates(self, namespaces: Sequence[str]) -> None:
        """Count ``namespaces`` on a thread of their own: the scans never wait for MongoDB's answer."""
        scanners = [self._scanners[ns] for ns in namespaces if ns in self._scanners]
        if not scanners:
            return
        partition = self.options.partition

        def count() -> None:
            for scanner in scanners:
                try:
                    estimated = scanner.estimated_count()
                except Exception as exc:  # a display's figure: never a reason to fail the snapshot
                    log.debug("no estimated count for %s: %s", scanner.namespace, exc)
                    continue
                self.report.collections[scanner.namespace].estimated = estimated
                self.metrics.snapshot_estimated(partition, scanner.namespace, estimated)

        threading.Thread(target=count, name="snapshot-estimates", daemon=True).start()

    def _supervise(self, futures: Mapping[Future[tuple[bool, _Held | None]], str]) -> None:
        """Serve delivery reports, commit periodically and report progress while workers copy."""
        self._checkpointer.start_interval()
        remaining = set(futures)
        while remaining:
            done, _ = wait(remaining, timeout=self.options.progress_interval_s, return_when=FIRST_EXCEPTION)
            remaining -= done
            for future in done:
                if future.exception() is not None:
                    self.stop.set()
                    for other in remaining:
                        other.cancel()
                    wait(remaining)
                    raise future.exception()  # type: ignore[misc]
            self.sink.poll(0)
            self._checkpointer.tick()
            self._notify()

    def _finish(self, held: Mapping[str, _Held | None], *, whole_snapshot: bool) -> None:
        """Emit the held-back last document of each finished collection, the very last one marked ``last``."""
        order = [ns for ns in sorted(held) if held[ns] is not None]
        for index, ns in enumerate(order):
            item = held[ns]
            assert item is not None
            report = self.report.collections[ns]
            last = whole_snapshot and index == len(order) - 1
            marker = SnapshotMarker.LAST if last else SnapshotMarker.TRUE
            report.documents += 1
            self._produce(ns, item, marker, report.documents)
            self._register(ns, item.end, report.documents, done=True)
            report.done, report.phase = True, ""
        for ns, item in held.items():
            if item is None and not self.report.collections[ns].done:  # an empty collection
                self._register(ns, ScanPosition(), 0, done=True)
                self.report.collections[ns].done, self.report.collections[ns].phase = True, ""

    def _transaction_offset(self) -> SourceOffset:
        """Exactly once: the offset that covers every document produced (the scan of a collection right after its
        last document produced, where no chunk end was registered since). The checkpointer asks with ``_lock``
        held, so no document is produced meanwhile."""
        assert self._state is not None
        state = self._state
        for namespace, (held, documents) in self._exact.items():
            after = held.chunk.position_after(held.document)
            state = state.with_collection(namespace, CollectionProgress(after, False, documents))
        return SourceOffset(self._resume, snapshot=state)

    def _notify(self) -> None:
        now = self._clock()
        self.report.seconds = now - self._started
        if not self._estimates_asked and self.report.seconds >= self.options.estimate_after_s:
            self._estimates_asked = True
            self._ask_estimates([ns for ns, c in self.report.collections.items() if not c.done])
        for ns, c in self.report.collections.items():
            since = c.running_since
            if since is not None:  # the scan runs: its time so far, for a live rate
                c.seconds = now - since
            new_rows = c.documents - self._rows_reported.get(ns, 0)
            if new_rows:
                self.metrics.snapshot_rows(self.options.partition, ns, new_rows)
                self._rows_reported[ns] = c.documents
            if c.done and ns not in self._done_reported:
                self._done_reported.add(ns)
                self.metrics.snapshot_collection_done(self.options.partition, ns)
        self.metrics.set_in_flight(self._checkpointer.in_flight)
        if self._on_progress is not None:
            self._on_progress(self.report)
