"""One connector task for one source partition: snapshot when the mode asks for it, then stream.

``plan`` decides from ``snapshot.mode`` and the stored offset what a start does;
``ConnectorTask`` carries it out and, with ``snapshot.mode=when_needed``,
re-snapshots when the stored resume position has left the oplog.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mongocdc.engine.incremental_snapshot import IncrementalSnapshotter
from mongocdc.engine.metrics import Metrics
from mongocdc.engine.snapshot import ProgressCallback, Scanner, SnapshotOptions, SnapshotReport, SnapshotRunner
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import Sink, StreamingTask, StreamOptions, StreamStats
from mongocdc.errors import ResumePositionLostError
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.position import Position
from mongocdc.events.snapshot import SnapshotState
from mongocdc.offsets.base import OffsetStore
from mongocdc.sources.base import ChangeSource

log = logging.getLogger("mongocdc.connector")


class SnapshotKind(StrEnum):
    NONE = "none"
    FRESH = "fresh"
    RESUME = "resume"


@dataclass(frozen=True, slots=True)
class Plan:
    snapshot: SnapshotKind
    stream: bool
    reason: str


def plan(mode: str, offset: SourceOffset | None, *, snapshot_only: bool = False) -> Plan:
    """What a start does, given ``snapshot.mode`` and the stored offset (``None`` when there is none)."""
    interrupted = offset is not None and offset.snapshot is not None
    if snapshot_only:
        if interrupted:
            return Plan(SnapshotKind.RESUME, False, "an interrupted snapshot continues")
        return Plan(SnapshotKind.FRESH, False, "snapshot requested")
    if mode == "no_data":
        return Plan(SnapshotKind.NONE, True, "snapshot.mode=no_data: streaming only")
    if interrupted:
        return Plan(SnapshotKind.RESUME, mode != "initial_only", "an interrupted snapshot continues")
    if mode == "always":
        return Plan(SnapshotKind.FRESH, True, "snapshot.mode=always: a snapshot at every start")
    if offset is None:
        return Plan(SnapshotKind.FRESH, mode != "initial_only", "no stored offset: initial snapshot")
    if mode == "initial_only":
        return Plan(SnapshotKind.NONE, False, "snapshot.mode=initial_only and the snapshot is complete")
    return Plan(SnapshotKind.NONE, True, "resuming from the stored offset")


@dataclass(frozen=True, slots=True)
class TaskOptions:
    stream: StreamOptions
    """What streaming needs (and the connector, partition and commit interval the snapshot shares)."""
    rs: str | None = None
    snapshot_mode: str = "initial"
    snapshot_max_threads: int = 1
    snapshot_delay_s: float = 0.0
    """``snapshot.delay.ms``: the wait before a snapshot begins (only when one runs)."""
    streaming_delay_s: float = 0.0
    """``streaming.delay.ms``: the wait after a completed snapshot before streaming begins."""
    start_at: Position | None = None
    """``capture.start.op.time``: where streaming starts when there is no offset and no snapshot runs."""

    @property
    def connector(self) -> str:
        return self.stream.connector

    @property
    def partition(self) -> str:
        return self.stream.partition


@dataclass(slots=True)
class TaskResult:
    plan: Plan
    snapshot: SnapshotReport | None = None
    stream: StreamStats | None = None
    resnapshots: int = 0


class ConnectorTask:
    """Snapshot (per ``plan``) and stream one source partition until ``stop`` is set."""

    def __init__(
        self,
        *,
        source: ChangeSource,
        current_position: Callable[[], Position],
        scanners: Callable[..., Sequence[Scanner]],
        sink: Sink,
        store: OffsetStore,
        codec: EnvelopeCodec,
        options: TaskOptions,
        stop: threading.Event | None = None,
        transform: Callable[..., Any] | None = None,
        on_status: Callable[[StreamStats], None] | None = None,
        on_progress: ProgressCallback | None = None,
        metrics: Metrics | None = None,
        snapshotter: IncrementalSnapshotter | None = None,
    ) -> None:
        self.source = source
        self.current_position = current_position
        self.scanners = scanners
        self.sink = sink
        self.store = store
        self.codec = codec
        self.options = options
        self.stop = stop or threading.Event()
        self.transform = transform
        self.on_status = on_status
        self.on_progress = on_progress
        self.metrics = metrics or Metrics(options.connector)
        self.snapshotter = snapshotter

    def _offset(self) -> SourceOffset | None:
        return SourceOffset.restore(self.store.load(self.options.connector, self.options.partition))

    def _commit(self, offset: SourceOffset) -> None:
        self.store.commit(self.options.connector, self.options.partition, offset.to_record())

    def snapshot(
        self, kind: SnapshotKind, offset: SourceOffset | None, *, keep_stream_position: bool
    ) -> SnapshotReport:
        """Run a fresh or interrupted snapshot; returns its report (``completed`` false when stopped)."""
        if kind is SnapshotKind.RESUME:
            assert offset is not None and offset.snapshot is not None
            resume, state = offset.position, offset.snapshot
            log.info("continuing the interrupted snapshot (%d collections done)", state.done)
        else:
            resume = self.current_position()
            if keep_stream_position and offset is not None:
                resume = offset.position
            state = SnapshotState()
            log.info("snapshot starts; streaming will resume from sec=%d ord=%d", resume.sec, resume.ord)
        runner = self._snapshot_runner(self.store)
        report = runner.run(self.scanners(), resume, state)
        if report.completed:
            # Streaming continues from where the snapshot began; initsync and progress are dropped.
            self._commit(SourceOffset(resume))
            log.info("snapshot completed: %d documents", report.documents)
        return report

    def stream(self) -> StreamStats:
        task = StreamingTask(
            self.source,
            self.sink,
            self.store,
            self.codec,
            self.options.stream,
            stop=self.stop,
            on_status=self.on_status,
            metrics=self.metrics,
            snapshotter=self.snapshotter,
            blocking_snapshot=self.blocking_snapshot,
            rs=self.options.rs,
        )
        return task.run()

    def _snapshot_runner(self, store: OffsetStore) -> SnapshotRunner:
        return SnapshotRunner(
            self.sink,
            store,
            self.codec,
            SnapshotOptions(
                connector=self.options.connector,
                partition=self.options.partition,
                rs=self.options.rs,
                max_threads=self.options.snapshot_max_threads,
                flush_interval_s=self.options.stream.flush_interval_s,
            ),
            stop=self.stop,
            transform=self.transform,
            on_progress=self.on_progress,
            metrics=self.metrics,
        )

    def blocking_snapshot(self, namespaces: Sequence[str]) -> SnapshotReport:
        """A snapshot of ``namespaces`` while streaming waits (``execute-snapshot`` with ``type: blocking``).

        Its progress is kept in memory: the stored offset stays the streaming position, so a crash
        in the middle streams on from there (the blocking snapshot is not resumed).
        """
        from mongocdc.offsets.memory import MemoryOffsetStore

        runner = self._snapshot_runner(MemoryOffsetStore())
        return runner.run(self.scanners(namespaces), self.source.position or self.current_position())

    def _delay(self, seconds: float, before: str) -> bool:
        """Wait ``seconds`` (``snapshot.delay.ms``, ``streaming.delay.ms``); ``False`` when stopped meanwhile."""
        if seconds <= 0:
            return True
        log.info("%s/%s: waiting %.3g s before %s", self.options.connector, self.options.partition, seconds, before)
        return not self.stop.wait(seconds)

    def _start_at_configured_time(self, offset: SourceOffset | None, snapshot_only: bool) -> bool:
        """Store ``start_at`` as the offset where streaming would start at the present (no offset, no snapshot)."""
        start = self.options.start_at
        if start is None or offset is not None or snapshot_only:
            return False
        if plan(self.options.snapshot_mode, None).snapshot is not SnapshotKind.NONE:
            return False  # a snapshot decides where streaming starts
        log.info(
            "%s/%s: no stored offset; capture.start.op.time: streaming starts at sec=%d ord=%d",
            self.options.connector,
            self.options.partition,
            start.sec,
            start.ord,
        )
        self._commit(SourceOffset(start))
        return True

    def run(self, *, snapshot_only: bool = False) -> TaskResult:
        offset = self._offset()
        if self._start_at_configured_time(offset, snapshot_only):
            offset = self._offset()
        decided = plan(self.options.snapshot_mode, offset, snapshot_only=snapshot_only)
        log.info("%s/%s: %s", self.options.connector, self.options.partition, decided.reason)
        result = TaskResult(decided)
        if decided.snapshot is not SnapshotKind.NONE:
            if not self._delay(self.options.snapshot_delay_s, "the snapshot (snapshot.delay.ms)"):
                return result
            result.snapshot = self.snapshot(decided.snapshot, offset, keep_stream_position=snapshot_only)
            if not result.snapshot.completed:
                return result
            if decided.stream and not self._delay(
                self.options.streaming_delay_s, "streaming after the snapshot (streaming.delay.ms)"
            ):
                return result
        if not decided.stream or self.stop.is_set():
            return result
        while True:
            try:
                result.stream = self.stream()
                return result
            except ResumePositionLostError as lost:
                if self.options.snapshot_mode != "when_needed" or result.resnapshots:
                    raise
                log.warning(
                    "%s; snapshot.mode=when_needed: deleting the stored offset and taking a new snapshot",
                    lost.message,
                )
                result.resnapshots += 1
                self.store.delete(self.options.connector, self.options.partition)
                result.snapshot = self.snapshot(SnapshotKind.FRESH, None, keep_stream_position=False)
                if not result.snapshot.completed:
                    return result


def merge_results(results: Mapping[str, TaskResult]) -> TaskResult:
    """One result for several source partitions (collections keyed ``<partition>/<db.coll>``)."""
    if len(results) == 1:
        return next(iter(results.values()))
    merged = TaskResult(Plan(SnapshotKind.NONE, True, "several partitions"))
    for partition, result in sorted(results.items()):
        merged.resnapshots += result.resnapshots
        if result.snapshot is not None:
            if merged.snapshot is None:
                merged.snapshot = SnapshotReport(completed=True)
            merged.snapshot.completed = merged.snapshot.completed and result.snapshot.completed
            for ns, report in result.snapshot.collections.items():
                merged.snapshot.collections[f"{partition}/{ns}"] = report
        if result.stream is not None:
            if merged.stream is None:
                merged.stream = StreamStats()
            for op, n in result.stream.events.items():
                merged.stream.events[op] += n
            merged.stream.tombstones += result.stream.tombstones
            merged.stream.commits += result.stream.commits
            merged.stream.skipped += result.stream.skipped
            merged.stream.heartbeats += result.stream.heartbeats
    return merged


class ConnectorGroup:
    """Several source partitions (one per shard replica set), each task on its own thread.

    ``tasks.max`` groups the replica sets into tasks for reporting; every replica set
    still streams on its own thread, as docs/ARCHITECTURE.md says. ``poll_new`` (called every
    ``poll_interval_s``) returns tasks for shards added since the start, which join
    the running ones. The first failure stops every task (after each commits what
    Kafka acknowledged) and is raised.
    """

    def __init__(
        self,
        tasks: Mapping[str, ConnectorTask],
        stop: threading.Event,
        *,
        poll_new: Callable[[], Mapping[str, ConnectorTask]] | None = None,
        poll_interval_s: float = 30.0,
    ) -> None:
        self.tasks = dict(tasks)
        self.stop = stop
        self._poll_new = poll_new
        self._poll_interval_s = poll_interval_s

    def run(self, *, snapshot_only: bool = False) -> TaskResult:
        results: dict[str, TaskResult] = {}
        errors: list[BaseException] = []
        lock = threading.Lock()

        def work(partition: str, task: ConnectorTask) -> None:
            try:
                result = task.run(snapshot_only=snapshot_only)
                with lock:
                    results[partition] = result
            except BaseException as exc:  # handed to the caller below
                with lock:
                    errors.append(exc)
                self.stop.set()

        threads: dict[str, threading.Thread] = {}

        def start(partition: str, task: ConnectorTask) -> None:
            log.info("starting the task for replica set %s", partition)
            thread = threading.Thread(target=work, args=(partition, task), name=f"task-{partition}", daemon=True)
            threads[partition] = thread
            thread.start()

        for partition, task in sorted(self.tasks.items()):
            start(partition, task)
        next_poll = time.monotonic() + self._poll_interval_s
        while self._poll_new is not None and not snapshot_only and any(t.is_alive() for t in threads.values()):
            if self.stop.wait(0.2):
                break
            if self._poll_new is not None and not snapshot_only and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + self._poll_interval_s
                for partition, task in self._poll_new().items():
                    if partition not in threads:
                        self.tasks[partition] = task
                        start(partition, task)
        for thread in threads.values():
            thread.join()
        if errors:
            raise errors[0]
        return merge_results(results)
