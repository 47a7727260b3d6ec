"""``Worker``: one process of a worker group (``group.id``), running the tasks the group assigns it.

The group is Kafka's consumer group (``mongocdc/kafka/group.py``): its coordinator assigns each task (a
partition of the tasks topic, whose record names the source partition) to exactly one live worker. The worker's
thread polls the group (heartbeats go on in librdkafka's own thread) and runs each task it holds on a thread of
its own, as ``ConnectorGroup`` does in one process:

* assigned: the task's definition is read from its partition; once the partition is read to its end, the task
  is built (``TaskFactory``: its offset store registers the task's ``transactional.id``, fencing the previous
  owner, before its offset is loaded) and started;
* revoked (another worker joined, or this one leaves): the task stops reading, flushes, commits what Kafka
  acknowledged and releases its resources *before* the revocation completes, so the next owner starts
  where it stopped, with nothing read twice;
* lost (this worker's session expired: it was paused, cut off or too slow, and the group gave its tasks to
  the others): the tasks stop and the worker fails with ``FencedError`` (exit 7) — its offset commits are
  refused anyway, since the new owner's registration fenced them;
* a definition that says the source partition was removed ends its task (as ``ConnectorGroup.end``).

A task that fails is left FAILED, as Kafka Connect leaves one: it is released, its error goes to the status topic,
and it stays assigned to this worker, which runs its other tasks and stays in the group; a restart request
(``mongocdc status --restart TASK`` writes it to the task's partition of the tasks topic) starts it again. A task
whose run ends on its own (``snapshot.mode=initial_only`` after its snapshot) is FINISHED: released, and not
started again while this worker holds it. Only a failure that is every task's (``ConfigError``: the
configuration) or this worker's (``FencedError``) stops the worker: its other tasks commit and are released, it
leaves the group and the error is raised. A graceful stop (``stop``) does the same without an error. The worker
holding task 0 also looks after the task list (``TaskListKeeper``): shards that join or leave the cluster become
task definitions.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from mongocdc.engine.connector import ConnectorTask, Plan, SnapshotKind, TaskResult, merge_results
from mongocdc.errors import ConfigError, FencedError

log = logging.getLogger("mongocdc.group")


class Definition(Protocol):
    """A task's definition (``mongocdc.kafka.group.TaskDefinition``)."""

    @property
    def index(self) -> int: ...

    @property
    def partition(self) -> str: ...

    @property
    def removed(self) -> bool: ...

    @property
    def restart(self) -> str | None:
        """The id of a restart request (``mongocdc status --restart``), on the record that asks for it."""
        ...


class Membership(Protocol):
    """What the worker needs of its group membership (``mongocdc.kafka.group.GroupMember``)."""

    def join(self) -> None: ...

    def poll(self, timeout_s: float) -> None: ...

    def leave(self) -> None: ...

    @property
    def member_id(self) -> str: ...


@dataclass(slots=True)
class HeldTask:
    """A task this worker built: the task, and what releases its resources (clients, store, sink)."""

    task: ConnectorTask
    release: Callable[[], None]


TaskFactory = Callable[[int, str, threading.Event], HeldTask]
"""Builds the task of ``(task index, source partition)`` with the stop event given; its store fences the
previous owner of the task before the factory returns. ``TaskGone`` when the source partition is not there."""


class TaskGone(Exception):
    """The source partition of a task is not in the source any more (a shard removed): the task does not start."""


@dataclass(slots=True)
class _Running:
    definition: Definition
    thread: threading.Thread
    stop: threading.Event
    held: HeldTask | None = None
    gone: bool = False
    ending: bool = False
    error: BaseException | None = None
    result: TaskResult | None = None
    on_its_own: bool = False
    """The run ended without being asked to stop (a failure, or a run with an end: ``initial_only``)."""
    done: threading.Event = field(default_factory=threading.Event)


FAILED = "FAILED"
FINISHED = "FINISHED"


def stops_the_worker(error: BaseException) -> bool:
    """A task's failure that is not the task's alone: the configuration (every task has it) or a fenced worker."""
    return isinstance(error, ConfigError | FencedError)


class TaskListKeeper(Protocol):
    """The worker holding task 0 keeps the task list in step with the source (shards joining or leaving)."""

    def poll_if_due(self) -> None: ...


class Worker:
    """Run the tasks the group assigns until ``stop`` is set (or a failure that is not one task's alone); see the
    module docstring."""

    POLL_S = 0.2

    def __init__(
        self,
        member_factory: Callable[[Worker], Membership],
        task_factory: TaskFactory,
        stop: threading.Event,
        *,
        connector: str,
        keeper: TaskListKeeper | None = None,
        on_change: Callable[[Worker], None] | None = None,
        on_task_state: Callable[[int, str, str, BaseException | None], None] | None = None,
        settle_s: float = 0.0,
    ) -> None:
        self.connector = connector
        self.settle_s = settle_s
        self._settled = settle_s <= 0
        self._membership_changed = time.monotonic()
        self._waiting: set[int] = set()  # caught up before the group settled: started once it has
        self.stop = stop
        self._task_factory = task_factory
        self._keeper = keeper
        self._on_change = on_change
        self._on_task_state = on_task_state
        self._assigned: set[int] = set()
        self._definitions: dict[int, Definition] = {}
        self._running: dict[int, _Running] = {}
        self._ended: dict[int, tuple[str, Definition, BaseException | None]] = {}  # FAILED / FINISHED, still held
        self._results: dict[str, TaskResult] = {}
        self._lost = False
        self._wake = threading.Event()
        self.joined = False
        self.leaving = False
        self.member = member_factory(self)

    # --- what the group says (called from poll, on this worker's thread) -------------------------

    def on_assigned(self, tasks: list[int]) -> None:
        self._membership_changed = time.monotonic()
        if tasks:
            log.info("the group assigned task(s) %s to this worker", ", ".join(map(str, tasks)))
        elif not self.joined:
            log.info("joined the group; no task for this worker yet (a standby)")
        self._assigned.update(tasks)
        self.joined = True
        self._changed()

    def on_revoked(self, tasks: list[int]) -> None:
        self._membership_changed = time.monotonic()
        self._waiting.difference_update(tasks)
        held = [t for t in tasks if t in self._running]
        if held:
            log.info("the group moves task(s) %s to another worker: stopping and committing them first", held)
        self._stop_tasks(held)
        self._assigned.difference_update(tasks)
        for task in tasks:
            self._definitions.pop(task, None)
            self._ended.pop(task, None)  # its next owner starts it again (as a Connect worker does)
        self._changed()

    def on_lost(self, tasks: list[int]) -> None:
        self._waiting.difference_update(tasks)
        log.warning(
            "this worker lost task(s) %s: it did not answer the group within session.timeout.ms, and the group gave "
            "them to the others",
            ", ".join(map(str, tasks)),
        )
        self._lost = True
        for task in tasks:
            running = self._running.get(task)
            if running is not None:
                running.stop.set()
        self._stop_tasks(tasks)
        self._assigned.difference_update(tasks)
        for task in tasks:
            self._ended.pop(task, None)
        self._changed()

    def on_definition(self, definition: Definition) -> None:
        self._definitions[definition.index] = definition
        ended = self._ended.get(definition.index)
        if ended is not None and definition.restart is not None and not definition.removed:
            if definition.index not in self._assigned or self.stop.is_set() or self.leaving:
                return
            log.info(
                "task %d (%s): restart requested (%s): starting it again",
                definition.index,
                definition.partition,
                ended[0],
            )
            del self._ended[definition.index]
            self._start(definition)
            return
        running = self._running.get(definition.index)
        if running is None:
            return
        if definition.removed or definition.partition != running.definition.partition:
            log.info("%s left: its task stops reading and commits what Kafka acknowledged", definition.partition)
            self._stop_tasks([definition.index])

    def on_caught_up(self, task: int) -> None:
        definition = self._definitions.get(task)
        if definition is None or definition.removed or task in self._running or task not in self._assigned:
            return
        if task in self._ended:
            return  # FAILED or FINISHED: started again on a restart request only
        if self.stop.is_set() or self.leaving:
            return  # stopping: the next owner starts it
        if not self._settled:
            if not self._waiting:
                log.info(
                    "waiting for the group to settle (no rebalance for group.settle.ms=%d) before starting tasks",
                    round(self.settle_s * 1000),
                )
            self._waiting.add(task)
            return
        self._start(definition)

    def _settle(self) -> None:
        """The first assignment's tasks start once no rebalance touched this worker for ``settle_s``: workers that
        start together do not start every task in the first one and then hand most of them over."""
        if self._settled or not self.joined or time.monotonic() - self._membership_changed < self.settle_s:
            return
        self._settled = True
        waiting, self._waiting = sorted(self._waiting), set()
        log.info("the group settled: starting task(s) %s", ", ".join(map(str, waiting)) or "none")
        for task in waiting:
            self.on_caught_up(task)

    # --- running -----------------------------------------------------------------------------------

    @property
    def serving(self) -> bool:
        """Joined the group and not leaving it: ready, whatever its share of the tasks (none is a share too)."""
        return self.joined and not self.leaving

    @property
    def tasks(self) -> dict[int, str]:
        """The tasks this worker runs now: index → source partition."""
        return {index: r.definition.partition for index, r in sorted(self._running.items())}

    @property
    def failed(self) -> dict[int, str]:
        """The tasks this worker holds FAILED (until a restart request): index → source partition."""
        return {i: d.partition for i, (state, d, _) in sorted(self._ended.items()) if state == FAILED}

    @property
    def finished(self) -> dict[int, str]:
        """The tasks this worker holds whose run ended (FINISHED): index → source partition."""
        return {i: d.partition for i, (state, d, _) in sorted(self._ended.items()) if state == FINISHED}

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self)

    def _start(self, definition: Definition) -> None:
        """Start the task on a thread of its own, which builds it first: the group is served meanwhile (connecting
        to MongoDB and registering the task's producer take seconds, and a rebalance may come)."""
        log.info("task %d (%s): taking it over", definition.index, definition.partition)
        stop = threading.Event()
        thread = threading.Thread(
            target=self._work, name=f"task-{definition.partition}", daemon=True, args=(definition.index,)
        )
        self._running[definition.index] = _Running(definition, thread, stop)
        thread.start()
        self._changed()

    def _work(self, index: int) -> None:
        running = self._running[index]
        definition = running.definition
        try:
            try:
                running.held = self._task_factory(definition.index, definition.partition, running.stop)
            except TaskGone as gone:
                log.warning("task %d (%s) does not start: %s", definition.index, definition.partition, gone)
                running.gone = True
                return
            if running.stop.is_set():
                return  # given up while it was built: its store's registration fenced the old owner, no more
            self._say(definition, "RUNNING", None)
            running.result = running.held.task.run()
        except BaseException as exc:  # judged by the worker's thread
            running.error = exc
        finally:
            running.on_its_own = not running.stop.is_set()
            running.done.set()
            self._wake.set()

    def _stop_tasks(self, tasks: list[int]) -> None:
        """Stop these tasks (each commits what Kafka acknowledged) and release them; then judge how each ended."""
        stopping = [self._running[t] for t in tasks if t in self._running]
        for running in stopping:
            running.ending = True
            running.stop.set()
        for running in stopping:
            running.thread.join()
            if running.held is not None:
                with contextlib.suppress(Exception):
                    running.held.release()
            self._running.pop(running.definition.index, None)
            self._judge_end(running)

    def _judge_end(self, running: _Running) -> None:
        """A released task: FAILED (the worker's failure when it is not the task's alone), FINISHED, or given up."""
        definition, error = running.definition, running.error
        index = definition.index
        if running.result is not None:
            self._results[definition.partition] = running.result
        if error is not None:
            # the worker stopping (SIGTERM) exits with a task's last failure, as a connector without group.id does
            if stops_the_worker(error) or self._lost or self.leaving or self.stop.is_set():
                if self._failure is None:
                    self._failure = error
                if not isinstance(error, FencedError):
                    log.error("task %d (%s) failed: %s", index, definition.partition, error)
                    self._say(definition, FAILED, error)
                return
            self._say(definition, FAILED, error)
            if running.on_its_own and index in self._assigned:
                log.error(
                    "task %d (%s) failed: %s; this worker runs its other tasks and keeps the failed one until it is "
                    "restarted (mongocdc status --restart %d)",
                    index,
                    definition.partition,
                    error,
                    index,
                )
                self._ended[index] = (FAILED, definition, error)
            else:
                log.error("task %d (%s) failed while it was given up: %s", index, definition.partition, error)
        elif running.gone:
            return
        elif running.on_its_own and index in self._assigned and not self.leaving and not self.stop.is_set():
            log.info("task %d (%s): its run ended (FINISHED); it is not started again", index, definition.partition)
            self._say(definition, FINISHED, None)
            self._ended[index] = (FINISHED, definition, None)
        else:
            log.info("task %d (%s): stopped and released", index, definition.partition)
            if not self._lost:
                self._say(definition, "UNASSIGNED", None)

    def _say(self, definition: Definition, state: str, error: BaseException | None) -> None:
        """Tell ``on_task_state`` (the status topic); its failure is logged, never raised."""
        if self._on_task_state is None:
            return
        try:
            self._on_task_state(definition.index, definition.partition, state, error)
        except Exception as exc:
            log.warning("could not publish the state of task %d (%s): %s", definition.index, state, exc)

    _failure: BaseException | None = None

    def _judge(self) -> None:
        """Tasks that ended on their own are released: FAILED or FINISHED, held until a restart request."""
        ended = [index for index, running in self._running.items() if running.done.is_set()]
        if ended:
            self._stop_tasks(sorted(ended))
            self._changed()

    def run(self) -> TaskResult:
        """Join, run the assigned tasks until ``stop`` (or a failure), give them up, leave; the merged result."""
        self.member.join()
        try:
            while not self.stop.is_set() and self._failure is None and not self._lost:
                self.member.poll(self.POLL_S)
                self._settle()
                self._judge()
                if self._keeper is not None and 0 in self._running:
                    self._keeper.poll_if_due()
        finally:
            self.leaving = True
            started = time.monotonic()
            self._stop_tasks(sorted(self._running))
            self._assigned.clear()
            self._changed()
            self.member.leave()
            log.info("left the group (tasks given up in %.1f s)", time.monotonic() - started)
        if self._lost and self._failure is None:
            self._failure = FencedError(
                f"this worker of connector {self.connector!r} lost its tasks: it did not answer the group within "
                "session.timeout.ms (paused, cut off or overloaded) and the group gave them to the other workers; "
                "it stops without committing",
                hint="restart it to rejoin the group; raise session.timeout.ms if the pauses are expected",
            )
        if self._failure is not None:
            raise self._failure
        if not self._results:
            return TaskResult(Plan(SnapshotKind.NONE, True, "a worker of a group"))
        return merge_results(self._results)
