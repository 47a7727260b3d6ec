"""One connector task for one source partition: snapshot when the mode asks for it, then stream.

``plan`` decides from ``snapshot.mode`` and the stored offset what a start does;
``ConnectorTask`` carries it out and, with ``snapshot.mode=when_needed``,
re-snapshots when the stored resume position has left the oplog.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol

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
    snapshot_estimate_after_s: float = 5.0
    """When a snapshot asks MongoDB for its collections' estimated counts (``SnapshotOptions.estimate_after_s``)."""

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
            log.info("snapshot completed: %s", report.summary())
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
                transaction_boundary=self.options.stream.transaction_boundary,
                estimate_after_s=self.options.snapshot_estimate_after_s,
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


class PartitionWatcher(Protocol):
    """What :class:`ConnectorGroup` needs of whatever finds the partitions that join or leave the source.

    ``sources.mongo.shards.ShardWatcher`` is one: it reads a sharded cluster's shard list. A poll calls
    back for each change, and its callbacks (made by ``wiring``) call :meth:`ConnectorGroup.add` and
    :meth:`ConnectorGroup.end`.
    """

    def seconds_until_due(self) -> float:
        """How long until the next poll is due."""
        ...

    def poll_if_due(self) -> object:
        """Poll when due; a failure is logged and the poll retried when due again, not raised."""
        ...

    def poll_once(self) -> object:
        """Poll now; a failure is raised."""
        ...


class ConnectorGroup:
    """The connector's tasks, one per source partition, each on a thread of its own.

    A replica set, or a sharded cluster streamed through mongos, is one partition, and its task runs on
    the group's ``stop`` event. With ``mongodb.connection.mode=replica_set`` each shard replica set is a
    partition, and a ``watcher`` is polled while the tasks stream: a shard that joins the cluster gets a
    task (:meth:`add`); the task of one that leaves is ended (:meth:`end`: it stops reading and commits
    what Kafka acknowledged, as on a graceful stop) while the others go on. Such tasks have stop events
    of their own, which the group sets when ``stop`` is set. The first failure of a task stops every
    task (after each commits what Kafka acknowledged) and is raised; but a task whose shard has left the
    cluster may fail once the shard's servers are shut down, so the failure of a task is first checked
    against a fresh poll, and only logged when the shard is gone.
    """

    TICK_S: ClassVar[float] = 0.2
    """How soon a watching group passes ``stop`` on to its tasks' own events."""

    def __init__(
        self,
        tasks: Mapping[str, ConnectorTask],
        stop: threading.Event,
        *,
        watcher: PartitionWatcher | None = None,
    ) -> None:
        self.tasks = dict(tasks)
        self.stop = stop
        self._watcher = watcher
        self._snapshot_only = False
        self._threads: dict[str, threading.Thread] = {}
        self._ended: set[str] = set()
        self._results: dict[str, TaskResult] = {}
        self._failures: dict[str, BaseException] = {}
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()

    def run(self, *, snapshot_only: bool = False) -> TaskResult:
        """Run every task until each is done (``snapshot_only``) or ``stop`` is set; the merged result."""
        self._snapshot_only = snapshot_only
        for partition, task in sorted(self.tasks.items()):
            self._start(partition, task)
        if self._watcher is not None:
            self._watch(self._watcher, poll=not snapshot_only)
        for thread in self._threads.values():
            thread.join()
        self._judge_failures(None)
        if self._errors:
            raise self._errors[0]
        return merge_results(self._results)

    def add(self, partition: str, task: ConnectorTask) -> None:
        """Start ``task`` for a partition that joined while the group runs (a watcher callback).

        A partition that left and joins again gets the new task once its old one has ended.
        """
        previous = self._threads.get(partition)
        if previous is not None:
            self.end(partition)
            previous.join()
        self._ended.discard(partition)
        self.tasks[partition] = task
        self._start(partition, task)

    def end(self, partition: str) -> None:
        """End the task of a partition that left the source (a watcher callback); the others go on."""
        task = self.tasks.get(partition)
        if task is None or partition in self._ended:
            return
        if task.stop is self.stop:
            raise ValueError(f"the task of {partition} runs on the group's stop event: ending it would end every task")
        log.info("%s left: its task stops reading and commits what Kafka acknowledged", partition)
        self._ended.add(partition)
        task.stop.set()

    def _start(self, partition: str, task: ConnectorTask) -> None:
        log.info("starting the task for replica set %s", partition)
        thread = threading.Thread(target=self._work, args=(partition, task), name=f"task-{partition}", daemon=True)
        self._threads[partition] = thread
        thread.start()

    def _work(self, partition: str, task: ConnectorTask) -> None:
        try:
            result = task.run(snapshot_only=self._snapshot_only)
            with self._lock:
                self._results[partition] = result
        except BaseException as exc:  # judged and handed to the caller by the group's thread
            with self._lock:
                self._failures[partition] = exc
            if self._watcher is None:
                self.stop.set()
        finally:
            self._wake.set()

    def _watch(self, watcher: PartitionWatcher, *, poll: bool) -> None:
        """Until ``stop`` is set or the tasks are done: judge failures, poll the watcher when due.

        The tasks are done when none runs and not all of them were ended because their partition left
        (with every shard gone, the group waits for the next one, as it would for a shard renamed in two
        steps).
        """
        while True:
            self._wake.clear()
            self._judge_failures(watcher if poll else None)
            if self.stop.is_set() or self._done():
                break
            if poll:
                watcher.poll_if_due()
            self._wake.wait(min(self.TICK_S, watcher.seconds_until_due()) if poll else self.TICK_S)
        if self.stop.is_set():
            for task in self.tasks.values():
                task.stop.set()

    def _done(self) -> bool:
        running = any(thread.is_alive() for thread in self._threads.values())
        return not running and not self._ended.issuperset(self._threads)

    def _judge_failures(self, watcher: PartitionWatcher | None) -> None:
        """A failed task stops the group, unless its partition has left (checked by a poll of ``watcher``)."""
        with self._lock:
            failures, self._failures = self._failures, {}
        for partition, exc in sorted(failures.items()):
            if partition not in self._ended and watcher is not None:
                with contextlib.suppress(Exception):  # the list cannot be read: the failure stands
                    watcher.poll_once()
            if partition in self._ended:
                log.warning("the task of %s, which has left, ended with an error: %s", partition, exc)
                continue
            self._errors.append(exc)
            self.stop.set()
