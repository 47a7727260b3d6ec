"""Builds a worker of a group (``group.id``) from ``Settings``: ``mongocdc/engine/fleet.py`` over ``kafka/group.py``.

Kept apart from ``wiring.py`` (whose factories it uses) so that group mode stays one module. The deployment and
its source partitions come from ``wiring_plan.connector_plan``, as ``wiring.connector``'s do; a task is built when
the worker takes it, by ``ConnectorPlan.open_source`` and ``ConnectorPlan.task``: a MongoDB client of its source
partition, a producer (``KafkaSink``; under exactly-once delivery the task's transactional one) and an offset store
whose transactional producer has the task's own ``transactional.id`` (``mongocdc-offsets-<connector>-<partition>``),
which fences the task's previous owner; all of it is released when the worker gives the task up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mongocdc import wiring

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.engine.fleet import HeldTask, Worker
    from mongocdc.engine.metrics import Metrics
    from mongocdc.engine.snapshot import ProgressCallback
    from mongocdc.engine.streaming import StreamStats
    from mongocdc.kafka.group import TasksTopic
    from mongocdc.sources.mongo.client import Client

log = logging.getLogger("mongocdc.group")


def tasks_topic(settings: Settings) -> str:
    from mongocdc.kafka.group import tasks_topic_name

    return settings.group_tasks_topic or tasks_topic_name(settings.require("group.id"))


def status_topic(settings: Settings) -> str:
    from mongocdc.kafka.group import status_topic_name

    return settings.status_storage_topic or status_topic_name(settings.require("group.id"))


def worker_client_id(settings: Settings) -> str:
    """How a worker names itself to the group (``mongocdc status`` shows it): connector, host and process."""
    return f"mongocdc-{settings.name}-{socket.gethostname()}-{os.getpid()}"


class ShardListKeeper:
    """Keeps the tasks topic in step with a sharded cluster's shard list (run by the worker holding task 0).

    Every ``mongodb.poll.interval.ms`` the shard list is read; when it changed since the last look (or on the
    first look), each shard without an active task gets one and each active task whose shard is gone is marked
    removed: its holder ends it.
    """

    def __init__(self, settings: Settings, seed: Client, topic: TasksTopic) -> None:
        self.settings = settings
        self.seed = seed
        self.topic = topic
        self.interval_s = settings.mongodb_poll_interval_ms / 1000
        self._due = 0.0
        self._seen: frozenset[str] | None = None

    def poll_if_due(self) -> None:
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + self.interval_s
        try:
            self.reconcile()
        except Exception as exc:  # retried at the next poll
            log.warning("could not compare the shard list with the group's tasks (retried): %s", exc)

    def reconcile(self) -> None:
        from mongocdc.kafka.group import latest_definitions
        from mongocdc.sources.mongo.shards import replica_set_shards

        current = frozenset(str(shard.replica_set) for shard in replica_set_shards(self.seed))
        if current == self._seen:
            return
        defined = latest_definitions(self.topic.definitions())
        for name in sorted(current):
            known = defined.get(name)
            if known is None or known.removed:
                added = self.topic.add(self.settings.name, name)
                log.info("shard replica set %s joined the cluster: it is task %d", name, added.index)
        for name, definition in sorted(defined.items()):
            if name not in current and not definition.removed:
                self.topic.remove(definition)
                log.info("shard replica set %s left the cluster: its task %d ends", name, definition.index)
        self._seen = current


@contextlib.contextmanager
def worker(
    settings: Settings,
    *,
    stop: threading.Event,
    on_status: Callable[[StreamStats], None] | None = None,
    on_progress: ProgressCallback | None = None,
    metrics: Metrics | None = None,
    on_change: Callable[[Worker], None] | None = None,
) -> Iterator[Worker]:
    """A worker of the group ``group.id``, ready to ``run``; resources closed on exit.

    Start-up order: MongoDB (must answer, with change streams), the offset topic (created or checked), the
    event topics known at start, the tasks topic (created with one task per source partition by the first
    worker of the group); the group is joined in ``run()``.
    """
    from mongocdc.engine.fleet import HeldTask, TaskGone, Worker
    from mongocdc.engine.metrics import Metrics
    from mongocdc.kafka.group import GroupMember, TasksTopic
    from mongocdc.wiring_plan import TaskCommon, connector_plan

    group_id = settings.require("group.id")
    envelope = wiring.codec(settings)
    metrics = metrics or Metrics(settings.name)
    common = TaskCommon(envelope, metrics, wiring.exactly_once(settings), on_status, on_progress)
    with contextlib.ExitStack() as resources:
        plan = resources.enter_context(connector_plan(settings))
        wiring.warn_unmatched_includes(settings, plan.seed)
        # The offset topic exists (created compacted) before a task needs it, and registering the connector's own
        # transactional id fences an instance of it started without group.id (the tasks have ids of their own).
        wiring.offset_store(settings, owner=True).close()
        checker = wiring.kafka_sink(settings)
        try:
            plan.require_start_topics(checker)
        finally:
            checker.close()
        partitions = plan.partitions
        topic = tasks_topic(settings)
        tasks = TasksTopic(
            settings.kafka_client, topic, group_id=group_id, timeout_s=wiring.request_timeout_s(settings)
        )
        _define_tasks(settings, tasks, partitions, per_shard=plan.per_shard)
        say = resources.enter_context(_task_states(settings))
        worker_id = worker_client_id(settings)
        log.info(
            "worker of group %s for connector %r: %s, tasks in %s",
            group_id,
            settings.name,
            f"one task per shard replica set ({', '.join(partitions)})"
            if plan.per_shard
            else f"one task ({plan.topology.kind.replace('_', ' ')} {plan.topology.partition})",
            topic,
        )

        def build(index: int, partition: str, stop_task: threading.Event) -> HeldTask:
            with contextlib.ExitStack() as held:
                source = plan.open_source(partition, held)
                if source is None:
                    raise TaskGone(f"shard replica set {partition} is not in the cluster's shard list")
                # the task's own transactional.id: registering it fences the worker that held the task before
                # (an exactly-once task's transactional sink fences the last owner's too)
                store = wiring.offset_store(settings, owner=True, task=partition)
                held.callback(store.close)
                # index: the taskId header is the task's number in the group
                task = plan.task(source, index, common, store=store, stop=stop_task, resources=held)
                held.callback(metrics.forget_partition, partition)  # the next owner reports the task now
                return HeldTask(task, held.pop_all().close)

        def member(listener: Worker) -> GroupMember:
            return GroupMember(
                settings.kafka_client,
                topic,
                group_id=group_id,
                listener=listener,
                session_timeout_ms=settings.session_timeout_ms,
                client_id=worker_id,
                timeout_s=wiring.request_timeout_s(settings),
            )

        keeper = ShardListKeeper(settings, plan.seed, tasks) if plan.per_shard else None
        yield Worker(
            member,
            build,
            stop,
            connector=settings.name,
            keeper=keeper,
            on_change=on_change,
            on_task_state=say,
            settle_s=settings.group_settle_ms / 1000,
        )


def _define_tasks(settings: Settings, tasks: TasksTopic, partitions: list[str], *, per_shard: bool) -> None:
    """Create the tasks topic with one task per source partition, or check the one there: the same connector, and
    (one partition) the same partition; a topic whose creator stopped before defining the tasks gets them."""
    from mongocdc.errors import ConfigError
    from mongocdc.kafka.group import check_connector

    if tasks.create(settings.name, partitions):
        return
    group_id, topic = settings.require("group.id"), tasks.topic
    defined = tasks.definitions()
    for definition in defined.values():
        check_connector(definition, settings.name, topic)
    if not defined:  # its creator stopped before defining the tasks: define them (the same definitions)
        tasks.define(settings.name, partitions)
    active = sorted(d.partition for d in defined.values() if not d.removed)
    if defined and not per_shard and active != partitions:
        raise ConfigError(
            f"the tasks topic {topic} of group {group_id!r} defines the tasks {', '.join(active) or 'none'}, "
            f"but this configuration captures {', '.join(partitions)} (mongodb.connection.mode="
            f"{settings.mongodb_connection_mode}): the workers of a group must run the same configuration",
            hint="run every worker with the same configuration; to change how the cluster is captured, "
            "give the group a new group.id (or delete the tasks topic while no worker runs)",
        )


@contextlib.contextmanager
def _task_states(settings: Settings) -> Iterator[Callable[[int, str, str, BaseException | None], None]]:
    """The status topic (created when absent) and what the worker calls to say a task's state there."""
    from mongocdc.kafka.group import StatusTopic

    timeout_s = wiring.request_timeout_s(settings)
    group_id = settings.require("group.id")
    statuses = StatusTopic(settings.kafka_client, status_topic(settings), group_id=group_id, timeout_s=timeout_s)
    statuses.ensure()
    worker_id = worker_client_id(settings)

    def say(index: int, partition: str, state: str, error: BaseException | None) -> None:
        statuses.publish(
            settings.name,
            index,
            {
                "state": state,
                "partition": partition,
                "worker_id": worker_id,
                "trace": None if error is None else f"{type(error).__name__}: {error}",
                "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            },
        )

    try:
        yield say
    finally:
        statuses.close()


def group_status(settings: Settings) -> dict[str, Any]:
    """The group's workers and the connector's tasks, as Kafka Connect's ``GET /connectors/<name>/status`` gives them.

    Read from the group coordinator (members and the tasks each was assigned), the tasks topic (which source
    partition each task captures) and the offset store (each task's stored position; its lag is the time since
    the cluster time of that position, which MongoDB's periodic no-op writes advance on an idle replica set).
    """
    from mongocdc.errors import UsageError
    from mongocdc.kafka.admin import KafkaAdmin
    from mongocdc.kafka.group import StatusTopic, TasksTopic

    group_id = settings.require("group.id")
    topic = tasks_topic(settings)
    timeout_s = wiring.request_timeout_s(settings)
    tasks = TasksTopic(settings.kafka_client, topic, group_id=group_id, timeout_s=timeout_s)
    admin = KafkaAdmin(settings.kafka_client, tasks.endpoint, purpose=f"group {group_id}", timeout_s=timeout_s)
    admin.reach(wiring.backoff(settings))
    if not tasks.exists():
        raise UsageError(
            f"worker group {group_id!r} has no tasks topic {topic} at {tasks.endpoint.where}: no worker of it has "
            "started",
            hint="start a worker (`mongocdc stream -c CONFIG` with this group.id), or check --group-id and "
            "group.tasks.topic",
        )
    definitions = tasks.definitions()
    state, members = admin.group_members(group_id, topic)
    statuses = StatusTopic(settings.kafka_client, status_topic(settings), group_id=group_id, timeout_s=timeout_s)
    said = statuses.read(settings.name)
    store = wiring.offset_store(settings, create=False)
    try:
        offsets = {r.partition: r for r in store.records(settings.name)} if store.exists else {}
    finally:
        store.close()
    holder = {task: member for member in members for task in member.partitions}
    now = time.time()
    shown_tasks: list[dict[str, Any]] = []
    for index, definition in sorted(definitions.items()):
        member = holder.get(index)
        record = offsets.get(definition.partition)
        sec = int(record.offset.get("sec", 0)) if record is not None else 0
        last = said.get(index, {})
        ended = last.get("state") if last.get("partition") == definition.partition else None
        failed = ended == "FAILED"
        if definition.removed:
            task_state = "REMOVED"
        elif member is not None:
            # a task its holder said FAILED or FINISHED stays with that worker (until a restart request)
            held_ended = ended in ("FAILED", "FINISHED") and last.get("worker_id") == member.client_id
            task_state = str(ended) if held_ended else "RUNNING"
            failed = failed and held_ended
        else:
            task_state = str(ended) if ended in ("FAILED", "FINISHED") else "UNASSIGNED"
        shown_tasks.append(
            {
                "id": index,
                "partition": definition.partition,
                "state": task_state,
                "worker_id": member.client_id if member is not None else None,
                "position": None if record is None else {"sec": sec, "ord": int(record.offset.get("ord", 0))},
                "lag_seconds": round(max(now - sec, 0.0), 1) if sec > 0 else None,
                "committed_at": None if record is None else record.updated_at.isoformat(),
                "snapshot": _snapshot_running(record.offset if record is not None else {}),
                "last_error": last.get("trace") if failed else None,
                "failed_at": last.get("at") if failed else None,
                "failed_on": last.get("worker_id") if failed else None,
            }
        )
    states = {t["state"] for t in shown_tasks}
    return {
        "name": settings.name,
        "type": "source",
        # as Kafka Connect's: the connector runs while a worker of its group does; FAILED when every task failed
        "connector": {
            "state": "RUNNING" if members else "FAILED" if states == {"FAILED"} else "UNASSIGNED",
            "worker_id": members[0].client_id if members else None,
        },
        "group": group_id,
        "group_state": state,
        "tasks_topic": topic,
        "workers": [
            {
                "worker_id": m.client_id,
                "member_id": m.member_id,
                "host": m.host,
                "tasks": [
                    {"id": t, "partition": definitions[t].partition if t in definitions else None} for t in m.partitions
                ],
            }
            for m in members
        ],
        "tasks": shown_tasks,
    }


def restart_task(settings: Settings, task: int) -> dict[str, Any]:
    """Ask the worker holding ``task`` to start it again (Kafka Connect's ``POST .../tasks/<id>/restart``): a record
    of the task's partition of the tasks topic, which its holder reads. The task must be FAILED or FINISHED
    (``UsageError``, exit 2, otherwise); the status before the request is returned."""
    import uuid

    from mongocdc.errors import UsageError
    from mongocdc.kafka.group import TasksTopic

    shown = group_status(settings)
    tasks = {t["id"]: t for t in shown["tasks"]}
    if task not in tasks:
        raise UsageError(
            f"connector {settings.name!r} has no task {task} "
            f"(its tasks: {', '.join(map(str, sorted(tasks))) or 'none'})",
            hint="`mongocdc status` lists the tasks and their states",
        )
    state = tasks[task]["state"]
    if state not in ("FAILED", "FINISHED"):
        raise UsageError(
            f"task {task} ({tasks[task]['partition']}) of connector {settings.name!r} is {state}, not FAILED or "
            "FINISHED: there is nothing to restart",
            hint="a running task restarts when its worker stops (SIGTERM): the group gives it to another worker",
        )
    if tasks[task]["worker_id"] is None:
        raise UsageError(
            f"task {task} ({tasks[task]['partition']}) of connector {settings.name!r} is {state} and no worker holds "
            "it: there is no worker to restart it",
            hint="start a worker (`mongocdc stream` with this group.id): it takes the task and starts it",
        )
    topic = TasksTopic(
        settings.kafka_client,
        tasks_topic(settings),
        group_id=settings.require("group.id"),
        timeout_s=wiring.request_timeout_s(settings),
    )
    definition = topic.definitions()[task]
    topic.request_restart(definition, uuid.uuid4().hex)
    log.info("asked worker %s to restart task %d (%s)", tasks[task]["worker_id"], task, definition.partition)
    return shown


def _snapshot_running(offset: Mapping[str, Any]) -> str | None:
    """``initial`` or ``incremental`` while the stored offset says such a snapshot is unfinished."""
    if offset.get("initsync"):
        return "initial"
    if offset.get("incremental_snapshot"):
        return "incremental"
    return None


def refuse_while_group_runs(settings: Settings, what: str, *, hint: str | None = None) -> None:
    """``FencedError`` (exit 7) when workers of ``group.id`` run the connector; ``what`` says what would go wrong."""
    from mongocdc.errors import FencedError
    from mongocdc.kafka.admin import KafkaAdmin
    from mongocdc.kafka.errors import Endpoint

    group_id = settings.require("group.id")
    endpoint = Endpoint.of(settings.kafka_client, servers="kafka.bootstrap.servers (or --bootstrap-servers)")
    admin = KafkaAdmin(settings.kafka_client, endpoint, purpose=f"group {group_id}")
    admin.reach(wiring.backoff(settings))
    _, members = admin.group_members(group_id, tasks_topic(settings))
    if members:
        raise FencedError(
            f"connector {settings.name!r} is running in worker group {group_id!r} ({len(members)} "
            f"worker{'' if len(members) == 1 else 's'}): {what}",
            hint=hint
            or "stop the group's workers first (SIGTERM), or use `mongocdc snapshot --incremental`, which asks the "
            "running connector for a snapshot",
        )
