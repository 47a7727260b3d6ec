"""``Worker``: what a group worker does with what the group says, with a scripted membership and real threads.

The group protocol itself (Kafka's coordinator) is exercised by ``tests/integration/test_fleet.py``; here each
poll of the membership plays the next scripted event, and the tasks are threads that run until stopped.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest

from mongocdc.engine.connector import ConnectorTask, Plan, SnapshotKind, TaskResult
from mongocdc.engine.fleet import HeldTask, TaskGone, Worker
from mongocdc.errors import ConfigError, FencedError


@dataclass(frozen=True)
class Definition:
    index: int
    partition: str
    removed: bool = False
    restart: str | None = None


class FakeTask:
    """Runs until its stop event is set (or fails with ``error`` once started)."""

    def __init__(self, stop: threading.Event, error: BaseException | None = None, *, ends: bool = False) -> None:
        self.stop = stop
        self.error = error
        self.ends = ends
        self.started = threading.Event()
        self.finished = threading.Event()

    def run(self) -> TaskResult:
        self.started.set()
        try:
            if self.error is not None:
                raise self.error
            if not self.ends:
                self.stop.wait(30)
            return TaskResult(Plan(SnapshotKind.NONE, True, "test"))
        finally:
            self.finished.set()


class ScriptedMember:
    """Each poll plays the next scripted step (a call on the worker); with none left, it sets ``stop``."""

    def __init__(self, worker: Worker, steps: list[Callable[[Worker], None]], stop: threading.Event) -> None:
        self.worker = worker
        self.steps = deque(steps)
        self.stop = stop
        self.joined = self.left = False

    def join(self) -> None:
        self.joined = True

    def poll(self, timeout_s: float) -> None:
        if self.steps:
            self.steps.popleft()(self.worker)
        else:
            self.stop.set()

    def leave(self) -> None:
        self.left = True

    @property
    def member_id(self) -> str:
        return "m-1"


class Tasks:
    """The task factory: records what it built and released, in order."""

    def __init__(
        self,
        *,
        fail: dict[str, BaseException] | None = None,
        gone: set[str] | None = None,
        ends: set[str] | None = None,
    ) -> None:
        self.built: dict[str, FakeTask] = {}
        self.events: list[str] = []
        self.fail = fail or {}  # each fails once: built again (a restart), it runs
        self.gone = gone or set()
        self.ends = ends or set()

    def __call__(self, index: int, partition: str, stop: threading.Event) -> HeldTask:
        if partition in self.gone:
            raise TaskGone(f"{partition} is not in the shard list")
        task = FakeTask(stop, self.fail.pop(partition, None), ends=partition in self.ends)
        self.built[partition] = task
        self.events.append(f"build {partition}")

        def release() -> None:
            assert task.finished.is_set(), "released while it still runs"
            self.events.append(f"release {partition}")

        return HeldTask(cast(ConnectorTask, task), release)


def make(
    steps: list[Callable[[Worker], None]],
    tasks: Tasks,
    on_task_state: Callable[[int, str, str, BaseException | None], None] | None = None,
    settle_s: float = 0.0,
) -> tuple[Worker, threading.Event]:
    stop = threading.Event()
    members: list[ScriptedMember] = []

    def member(worker: Worker) -> ScriptedMember:
        members.append(ScriptedMember(worker, steps, stop))
        return members[0]

    return Worker(member, tasks, stop, connector="c", on_task_state=on_task_state, settle_s=settle_s), stop


def assign(*defs: Definition) -> list[Callable[[Worker], None]]:
    """The steps of an assignment: assigned, each task's definition read, each partition caught up."""
    steps: list[Callable[[Worker], None]] = [lambda w: w.on_assigned([d.index for d in defs])]
    for d in defs:
        steps.append(lambda w, d=d: w.on_definition(d))  # type: ignore[misc]
        steps.append(lambda w, d=d: w.on_caught_up(d.index))  # type: ignore[misc]
    return steps


def until(condition: Callable[[], bool]) -> Callable[[Worker], None]:
    """A step that waits (bounded) for ``condition``: the tasks' threads run on their own."""

    def wait(_: Worker) -> None:
        deadline = threading.Event()
        for _attempt in range(300):
            if condition():
                return
            deadline.wait(0.01)
        raise AssertionError("condition not reached")

    return wait


def test_assigned_tasks_start_once_their_partition_is_read_and_a_revoked_one_is_stopped_and_released_first() -> None:
    tasks = Tasks()
    seen: dict[str, Any] = {}

    def revoke(worker: Worker) -> None:
        worker.on_revoked([1])
        # the revocation completes only after the task stopped and was released
        seen["after_revoke"] = list(tasks.events)
        seen["held"] = dict(worker.tasks)

    steps = [
        *assign(Definition(0, "rs0"), Definition(1, "rs1")),
        until(lambda: len(tasks.built) == 2 and all(t.started.is_set() for t in tasks.built.values())),
        revoke,
    ]
    worker, _ = make(steps, tasks)
    worker.run()
    assert seen["after_revoke"] == ["build rs0", "build rs1", "release rs1"]
    assert seen["held"] == {0: "rs0"}
    assert tasks.events[-1] == "release rs0"  # a graceful stop gives the rest up before leaving
    assert cast(ScriptedMember, worker.member).left


def test_a_definition_saying_the_partition_was_removed_ends_its_task_and_a_removed_task_never_starts() -> None:
    tasks = Tasks()
    steps = [
        *assign(Definition(0, "rs0"), Definition(1, "rs1", removed=True)),
        until(lambda: "rs0" in tasks.built and tasks.built["rs0"].started.is_set()),
        lambda w: w.on_definition(Definition(0, "rs0", removed=True)),
        lambda w: None,
    ]
    worker, _ = make(steps, tasks)
    worker.run()
    assert tasks.events == ["build rs0", "release rs0"]
    assert "rs1" not in tasks.built


def test_a_lost_assignment_stops_the_tasks_and_the_worker_exits_fenced() -> None:
    tasks = Tasks()
    steps = [
        *assign(Definition(0, "rs0")),
        until(lambda: "rs0" in tasks.built and tasks.built["rs0"].started.is_set()),
        lambda w: w.on_lost([0]),
    ]
    worker, _ = make(steps, tasks)
    with pytest.raises(FencedError) as fenced:
        worker.run()
    assert "lost its tasks" in fenced.value.message
    assert tasks.events == ["build rs0", "release rs0"]


def test_a_failed_task_is_kept_failed_while_the_worker_runs_its_other_tasks_until_a_restart_request() -> None:
    boom = RuntimeError("boom")
    tasks = Tasks(fail={"rs1": boom})
    seen: dict[str, Any] = {}

    def look(worker: Worker) -> None:
        seen.update(tasks=dict(worker.tasks), failed=dict(worker.failed), events=list(tasks.events))

    steps = [
        *assign(Definition(0, "rs0"), Definition(1, "rs1")),
        until(lambda: "rs1" in tasks.built and tasks.built["rs1"].finished.is_set()),
        lambda w: None,  # the worker judges the ended task
        lambda w: w.on_caught_up(1),  # a later record of its partition: not a reason to start it again
        look,
        lambda w: w.on_definition(Definition(1, "rs1", restart="r-1")),
        until(lambda: tasks.events.count("build rs1") == 2 and tasks.built["rs1"].started.is_set()),
    ]
    worker, stop = make(steps, tasks)
    worker.run()
    assert seen["tasks"] == {0: "rs0"} and seen["failed"] == {1: "rs1"}
    assert sorted(seen["events"]) == ["build rs0", "build rs1", "release rs1"]  # rs0 still runs
    assert worker.failed == {}
    assert sorted(tasks.events) == ["build rs0", "build rs1", "build rs1", "release rs0", "release rs1", "release rs1"]


def test_a_configuration_error_in_a_task_stops_the_worker_after_the_others_are_released() -> None:
    bad = ConfigError("collection.include.list: bad")
    tasks = Tasks(fail={"rs1": bad})
    steps = [*assign(Definition(0, "rs0"), Definition(1, "rs1")), *[lambda w: None] * 100]
    worker, _ = make(steps, tasks)
    with pytest.raises(ConfigError) as failed:
        worker.run()
    assert failed.value is bad
    assert sorted(tasks.events) == ["build rs0", "build rs1", "release rs0", "release rs1"]


def test_a_task_whose_run_ends_is_finished_and_not_started_again_while_the_worker_holds_it() -> None:
    tasks = Tasks(ends={"rs0"})
    said: list[tuple[int, str]] = []
    seen: dict[str, Any] = {}
    steps = [
        *assign(Definition(0, "rs0")),
        until(lambda: "rs0" in tasks.built and tasks.built["rs0"].finished.is_set()),
        lambda w: None,
        lambda w: w.on_definition(Definition(0, "rs0")),
        lambda w: w.on_caught_up(0),
        lambda w: seen.update(finished=dict(w.finished), tasks=dict(w.tasks)),
    ]
    worker, _ = make(steps, tasks, lambda i, p, state, e: said.append((i, state)))
    worker.run()
    assert seen == {"finished": {0: "rs0"}, "tasks": {}}
    assert tasks.events == ["build rs0", "release rs0"]
    assert said == [(0, "RUNNING"), (0, "FINISHED")]


def test_a_task_whose_source_partition_is_gone_does_not_start() -> None:
    tasks = Tasks(gone={"rs1"})
    steps = [*assign(Definition(0, "rs0"), Definition(1, "rs1")), lambda w: None]
    worker, _ = make(steps, tasks)
    worker.run()
    assert tasks.events == ["build rs0", "release rs0"]


def test_each_tasks_state_is_published_running_unassigned_or_failed_with_its_error() -> None:
    boom = RuntimeError("boom")
    tasks = Tasks(fail={"rs1": boom})
    said: list[tuple[int, str, str, str | None]] = []

    def publish(index: int, partition: str, state: str, error: BaseException | None) -> None:
        said.append((index, partition, state, None if error is None else str(error)))
        if state == "FAILED":
            raise OSError("the status topic is down")  # logged, never a reason to stop

    steps = [
        *assign(Definition(0, "rs0"), Definition(1, "rs1")),
        until(lambda: "rs1" in tasks.built and tasks.built["rs1"].finished.is_set()),
        lambda w: None,
    ]
    worker, _ = make(steps, tasks, publish)
    worker.run()
    assert (0, "rs0", "RUNNING", None) in said and (1, "rs1", "RUNNING", None) in said
    assert (1, "rs1", "FAILED", "boom") in said
    assert said[-1] == (0, "rs0", "UNASSIGNED", None)


def test_the_first_assignments_tasks_start_once_no_rebalance_touched_the_worker_for_the_settle_time() -> None:
    tasks = Tasks()
    seen: dict[str, Any] = {}

    def look(worker: Worker) -> None:
        seen["built_before_settling"] = list(tasks.events)

    steps = [
        *assign(Definition(0, "rs0"), Definition(1, "rs1")),
        look,
        lambda w: w.on_revoked([1]),  # another worker joined: task 1 moves before anything started
        lambda w: threading.Event().wait(0.4),  # no rebalance for the settle time
        until(lambda: "rs0" in tasks.built and tasks.built["rs0"].started.is_set()),
        lambda w: w.on_assigned([2]),  # assigned once settled (a stopped worker's task): starts at once
        lambda w: w.on_definition(Definition(2, "rs2")),
        lambda w: w.on_caught_up(2),
        lambda w: seen.update(rs2_built="rs2" in tasks.built),
    ]
    worker, _ = make(steps, tasks, settle_s=0.3)
    worker.run()
    assert seen["built_before_settling"] == []
    assert "rs1" not in tasks.built  # never started here, never handed over
    assert seen["rs2_built"]


def test_a_task_that_fails_while_the_worker_stops_is_the_workers_failure() -> None:
    class FailsOnStop(Tasks):
        def __call__(self, index: int, partition: str, stop: threading.Event) -> HeldTask:
            held = super().__call__(index, partition, stop)
            task = cast(FakeTask, held.task)

            def run() -> TaskResult:
                task.started.set()
                try:
                    stop.wait(30)
                    raise RuntimeError("the last commit failed")
                finally:
                    task.finished.set()

            task.run = run  # type: ignore[method-assign]
            return held

    tasks = FailsOnStop()
    steps = [*assign(Definition(0, "rs0")), until(lambda: "rs0" in tasks.built and tasks.built["rs0"].started.is_set())]
    worker, _ = make(steps, tasks)
    with pytest.raises(RuntimeError, match="the last commit failed"):
        worker.run()
