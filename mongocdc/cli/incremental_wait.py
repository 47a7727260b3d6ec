"""``snapshot --incremental --wait`` following the connector's notifications (``notification.enabled.channels``
with ``sink``) as they are written, instead of its stored offsets, which it flushes only every
``offset.flush.interval.ms``.

What the notifications say (Debezium's ``Incremental Snapshot`` notifications, matched on the signal's id):
``STARTED`` lists the collections; ``IN_PROGRESS`` follows every chunk, naming the collection being read and
the last key of a full chunk (``<null>`` after a short chunk, which ends an ``_id`` type); ``TABLE_SCAN_COMPLETED``
gives a collection's rows scanned; ``COMPLETED`` and ``ABORTED`` end it. A collection being read counts
``incremental.snapshot.chunk.size`` documents per full chunk (the count is exact once its scan completed);
the totals are MongoDB's estimated counts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mongocdc.cli.progress import SnapshotProgressView
from mongocdc.engine.snapshot import CollectionReport, SnapshotReport
from mongocdc.events.notifications import (
    CURRENT_COLLECTION_IN_PROGRESS,
    DATA_COLLECTIONS,
    INCREMENTAL_SNAPSHOT,
    LAST_PROCESSED_KEY,
    SCANNED_COLLECTION,
    TOTAL_ROWS_SCANNED,
    Notification,
)

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.sources.kafka.notifications import NotificationReader

log = logging.getLogger("mongocdc.snapshot")

PAUSED = "paused"
STOPPED = "stopped"
_NO_KEY = frozenset({"<null>", '"<null>"', ""})


class NotificationProgress:
    """One incremental snapshot's progress, from its notifications (``apply``), as a ``SnapshotReport``."""

    def __init__(self, signal_id: str, chunk_size: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.signal_id = signal_id
        self.chunk_size = chunk_size
        self.report = SnapshotReport()
        self.started = False
        self.aborted = False
        self._clock = clock
        self._begun = clock()
        self._full_chunks: dict[str, int] = {}

    @property
    def finished(self) -> bool:
        return self.report.completed or self.aborted

    def _collection(self, namespace: str) -> CollectionReport:
        found = self.report.collections.get(namespace)
        if found is None:
            found = self.report.collections[namespace] = CollectionReport(namespace, 0)
        return found

    def apply(self, note: Notification) -> None:
        if note.id != self.signal_id or note.aggregate_type != INCREMENTAL_SNAPSHOT:
            return
        data = note.additional_data
        self.started = True
        now = self._clock()
        if note.type == "STARTED":
            for ns in _names(data.get(DATA_COLLECTIONS)):
                self._collection(ns)
        elif note.type == "IN_PROGRESS":
            current = data.get(CURRENT_COLLECTION_IN_PROGRESS, "<none>")
            if current != "<none>":
                c = self._collection(current)
                if c.running_since is None:
                    c.running_since = now
                if data.get(LAST_PROCESSED_KEY, "") not in _NO_KEY:  # a full chunk
                    self._full_chunks[current] = self._full_chunks.get(current, 0) + 1
                    c.documents = max(c.documents, self._full_chunks[current] * self.chunk_size)
        elif note.type == "TABLE_SCAN_COMPLETED":
            c = self._collection(data.get(SCANNED_COLLECTION, ""))
            scanned = data.get(TOTAL_ROWS_SCANNED, "")
            c.documents = int(scanned) if scanned.isdigit() else c.documents
            c.done, c.phase = True, ""
            if c.running_since is not None:
                c.seconds, c.running_since = now - c.running_since, None
        elif note.type == "COMPLETED":
            self.report.completed = True
            self.report.phase = ""
        elif note.type == "ABORTED":
            stopped = _names(data.get(DATA_COLLECTIONS))
            for ns in stopped or [ns for ns, c in self.report.collections.items() if not c.done]:
                self._collection(ns).phase, self._collection(ns).running_since = STOPPED, None
            if not stopped:
                self.aborted = True
        elif note.type in ("PAUSED", "RESUMED"):
            self.report.phase = PAUSED if note.type == "PAUSED" else ""

    def refresh(self, estimates: Mapping[str, int | None]) -> SnapshotReport:
        """The report with the elapsed times brought up to now and the estimates known so far."""
        now = self._clock()
        self.report.seconds = now - self._begun
        for ns, c in self.report.collections.items():
            if c.running_since is not None:
                c.seconds = now - c.running_since
            estimate = estimates.get(ns)
            if estimate is not None:
                c.estimated = estimate
        return self.report


def _names(joined: str | None) -> list[str]:
    return [ns for ns in (joined or "").split(",") if ns]


class Estimates:
    """MongoDB's estimated counts of collections, asked on a thread of their own (MongoDB may be slow to
    answer, or not reachable from here: the counts are then unknown, the progress goes on)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.counts: dict[str, int | None] = {}
        self._asked: set[str] = set()
        self._threads: list[threading.Thread] = []

    def ask(self, namespaces: Iterable[str]) -> None:
        new = [ns for ns in namespaces if ns not in self._asked]
        if not new:
            return
        self._asked.update(new)
        thread = threading.Thread(target=self._count, args=(new,), name="estimates", daemon=True)
        thread.start()
        self._threads.append(thread)

    def settle(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` in all for the counts still being asked (the final report has them)."""
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _count(self, namespaces: list[str]) -> None:
        from mongocdc import wiring

        try:
            self.counts.update(wiring.estimated_counts(self._settings, namespaces))
        except Exception as exc:  # noqa: BLE001 - the estimates are a nicety: the progress goes on without them
            log.debug("no estimated counts for %s: %s", ", ".join(namespaces), exc)


def follow_notifications(
    settings: Settings,
    reader: NotificationReader,
    signal_id: str,
    stop: threading.Event,
    *,
    timeout_s: float | None,
    on_timeout: Callable[[bool], Exception],
) -> SnapshotReport:
    """Show the snapshot ``signal_id``'s progress from its notifications until it completed or was aborted
    (or ``stop`` is set); past ``timeout_s``, raise ``on_timeout(taken up)``."""
    progress = NotificationProgress(signal_id, settings.incremental_snapshot_chunk_size)
    estimates = Estimates(settings)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    with SnapshotProgressView() as view:
        while not progress.finished and not stop.is_set():
            for note in reader.poll(0.5):
                progress.apply(note)
            estimates.ask(progress.report.collections)
            view.update(progress.refresh(estimates.counts))
            if not progress.finished and deadline is not None and time.monotonic() > deadline:
                raise on_timeout(progress.started)
    estimates.settle(5.0)
    report = progress.refresh(estimates.counts)
    if report.completed:
        log.info("incremental snapshot %s completed: %s", signal_id, report.summary())
    elif progress.aborted:
        log.warning("incremental snapshot %s was stopped by a stop-snapshot signal: %s", signal_id, report.summary())
    return report


def collection_rows(report: SnapshotReport) -> list[list[Any]]:
    """``collection, read, estimated, seconds, docs/s, state`` rows of an incremental snapshot's report."""
    rows: list[list[Any]] = []
    for ns, c in sorted(report.collections.items()):
        if c.done:
            state = "done"
        elif c.phase:
            state = c.phase
        elif c.running_since is not None or c.documents:
            state = "reading"
        else:
            state = "waiting"
        rate = "-" if c.rate is None else f"{c.rate:,.0f}"
        estimated = "?" if not c.estimated and not (c.done and not c.documents) else c.estimated  # 0: not known
        rows.append([ns, c.documents, estimated, f"{c.seconds:.1f}", rate, state])
    return rows
