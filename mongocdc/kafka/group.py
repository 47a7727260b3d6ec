"""A worker group on Kafka's consumer-group protocol: its tasks topic and one worker's membership.

A connector run by a worker group (``group.id``) has a *tasks topic*: one partition per task, whose records
say which source partition the task captures (``TaskDefinition``; the latest record of a partition counts,
and the topic is compacted, keyed by the task). Each worker is a member of the consumer group ``group.id``
subscribed to that topic (``GroupMember``), so Kafka's group coordinator assigns every task partition to
exactly one live worker, with the cooperative-sticky assignor: a rebalance moves only the tasks that must
move, and a worker gives a task up (``on_revoked``) before another one gets it. A member reads its
partitions from the beginning (it never commits a position), which is how it learns its tasks'
definitions; a definition written later (a shard removed) reaches the member that holds the task.

Nothing is decided here: the worker (``engine/fleet.py``) starts and stops the tasks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from mongocdc.errors import ConfigError
from mongocdc.kafka.admin import KafkaAdmin
from mongocdc.kafka.client import KafkaClient
from mongocdc.kafka.config import DURABLE, NO_AUTO_CREATE
from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer

log = logging.getLogger("mongocdc.group")

ACTIVE = "active"
REMOVED = "removed"


def tasks_topic_name(group_id: str) -> str:
    """The default tasks topic of a group (``group.tasks.topic`` unset)."""
    return f"mongocdc-tasks.{group_id}"


def status_topic_name(group_id: str) -> str:
    """The default status topic of a group (``status.storage.topic`` unset)."""
    return f"mongocdc-status.{group_id}"


@dataclass(frozen=True, slots=True)
class TaskDefinition:
    """What task ``index`` (the tasks topic's partition) captures: ``partition`` of ``connector``."""

    index: int
    connector: str
    partition: str
    state: str = ACTIVE
    restart: str | None = None
    """On a record that asks the task's holder to start it again after it failed or finished: the request's id."""

    @property
    def removed(self) -> bool:
        return self.state == REMOVED

    def key(self) -> bytes:
        return json.dumps({"connector": self.connector, "task": self.index}, separators=(",", ":")).encode()

    def value(self) -> bytes:
        body: dict[str, str] = {"connector": self.connector, "partition": self.partition, "state": self.state}
        if self.restart is not None:
            body["restart"] = self.restart
        return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def parse(cls, index: int, raw: bytes | None) -> TaskDefinition | None:
        """The definition a record of partition ``index`` holds; ``None`` for a record mongocdc did not write."""
        if raw is None:
            return None
        try:
            body = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(body, dict) or not isinstance(body.get("partition"), str):
            return None
        state = REMOVED if body.get("state") == REMOVED else ACTIVE
        restart = body.get("restart") if isinstance(body.get("restart"), str) else None
        return cls(index, str(body.get("connector", "")), body["partition"], state, restart)


def latest_definitions(tasks: Mapping[int, TaskDefinition]) -> dict[str, TaskDefinition]:
    """The definitions by source partition (a partition defined twice keeps its lowest task)."""
    by_partition: dict[str, TaskDefinition] = {}
    for index in sorted(tasks):
        by_partition.setdefault(tasks[index].partition, tasks[index])
    return by_partition


class _GroupTopic:
    """A topic of a worker group's own (tasks, status): its client settings, endpoint and admin client."""

    def __init__(self, settings: Mapping[str, Any], topic: str, *, purpose: str, access: str, timeout_s: float) -> None:
        """``purpose``: what the topic is, for errors (``tasks topic``); ``access``: the grants it needs and the
        setting that names it, for the hint of an authorization error."""
        self.topic = topic
        self._settings = dict(settings)
        self.timeout_s = timeout_s
        self.endpoint = Endpoint.of(
            settings,
            servers="kafka.bootstrap.servers (or --bootstrap-servers)",
            access_hint=f"grant the mongocdc principal read, write, create and describe on topic {topic} "
            f"{access}, or check the kafka.sasl.* settings",
        )
        self._admin = KafkaAdmin(settings, self.endpoint, purpose=f"{purpose} {topic}", timeout_s=timeout_s)


class TasksTopic(_GroupTopic):
    """The tasks topic of a group: read, created with the first tasks, grown by a task, a task removed."""

    def __init__(self, settings: Mapping[str, Any], topic: str, *, group_id: str, timeout_s: float = 30.0) -> None:
        access = f"(group.tasks.topic), read on group {group_id}"
        super().__init__(settings, topic, purpose="tasks topic", access=access, timeout_s=timeout_s)

    def exists(self) -> bool:
        return self._admin.partitions(self.topic) is not None

    def partitions(self) -> int:
        return len(self._admin.partitions(self.topic) or [])

    def definitions(self) -> dict[int, TaskDefinition]:
        """The latest definition of every task partition that has one."""
        found = self._admin.partitions(self.topic)
        if not found:
            return {}
        consumer = KafkaConsumer(
            self._settings,
            self.endpoint,
            forced={**NO_AUTO_CREATE, "isolation.level": "read_committed"},
            purpose="tasks",
            timeout_s=self.timeout_s,
        )
        try:
            tasks: dict[int, TaskDefinition] = {}
            for msg in consumer.read_to_end(self.topic, found):
                definition = TaskDefinition.parse(msg.partition(), msg.value())
                if definition is not None:
                    tasks[msg.partition()] = definition
            return tasks
        finally:
            consumer.close()

    def create(self, connector: str, partitions: list[str]) -> bool:
        """Create the topic with one partition per source partition, each defined; ``False`` when it exists."""
        created = self._admin.create_topic(
            self.topic,
            max(len(partitions), 1),
            configs={"cleanup.policy": "compact"},
            refused_hint="create it yourself, compacted, with one partition per task, or set group.tasks.topic",
        )
        if not created:
            return False
        self.define(connector, partitions)
        return True

    def define(self, connector: str, partitions: list[str]) -> None:
        """Task ``i`` captures ``partitions[i]`` (the topic has that many partitions)."""
        count = self.partitions()
        if count < len(partitions):
            self._admin.add_partitions(self.topic, len(partitions))
        self.write([TaskDefinition(i, connector, p) for i, p in enumerate(partitions)])
        shown = ", ".join(f"task {i} {p}" for i, p in enumerate(partitions))
        log.info("the tasks in %s: %s", self.topic, shown)

    def add(self, connector: str, partition: str) -> TaskDefinition:
        """A task for ``partition``: its old task again when it had one, else a new partition of the topic."""
        known = latest_definitions(self.definitions()).get(partition)
        if known is not None:
            definition = TaskDefinition(known.index, connector, partition)
        else:
            count = self.partitions()
            self._admin.add_partitions(self.topic, count + 1)
            definition = TaskDefinition(count, connector, partition)
        self.write([definition])
        return definition

    def remove(self, definition: TaskDefinition) -> None:
        self.write([TaskDefinition(definition.index, definition.connector, definition.partition, REMOVED)])

    def request_restart(self, definition: TaskDefinition, request: str) -> None:
        """Ask the worker holding the task to start it again (it reads every new record of its task's partition)."""
        self.write([TaskDefinition(definition.index, definition.connector, definition.partition, ACTIVE, request)])

    def write(self, definitions: list[TaskDefinition]) -> None:
        """Write ``definitions``, each to its task's partition, and wait until every one is acknowledged.

        A producer of its own each time (tasks change seldom): it learns the partitions the topic has now.
        """
        producer = KafkaProducer(
            self._settings,
            self.endpoint,
            forced={**NO_AUTO_CREATE, **DURABLE, "linger.ms": 0},
            purpose=f"tasks topic {self.topic}",
            room_timeout_s=self.timeout_s,
        )
        for definition in definitions:
            producer.produce(self.topic, definition.value(), definition.key(), partition=definition.index)
        producer.flush(self.timeout_s, what=f"task definitions written to {self.topic}", hint="check the brokers")

    def admin(self) -> KafkaAdmin:
        return self._admin


class StatusTopic(_GroupTopic):
    """Where the workers of a group say each task's state (``RUNNING``, ``UNASSIGNED``, ``FAILED`` with its error), as
    Kafka Connect's ``status.storage.topic``: compacted, one record per connector and task, the latest counts.

    Writing is best effort (a status is information, never a reason to stop a task): ``publish`` queues the record
    and returns, ``close`` waits a little for what is queued.
    """

    def __init__(self, settings: Mapping[str, Any], topic: str, *, group_id: str, timeout_s: float = 30.0) -> None:
        super().__init__(settings, topic, purpose="status topic", access="(status.storage.topic)", timeout_s=timeout_s)
        self._producer: KafkaProducer | None = None

    def ensure(self) -> None:
        """Create the topic (compacted, one partition) when it does not exist."""
        if self._admin.partitions(self.topic) is None:
            self._admin.create_topic(
                self.topic,
                1,
                configs={"cleanup.policy": "compact"},
                refused_hint="create it yourself, compacted, or set status.storage.topic",
            )

    @staticmethod
    def key(connector: str, task: int) -> bytes:
        return json.dumps([connector, {"task": task}], separators=(",", ":")).encode()

    def publish(self, connector: str, task: int, status: Mapping[str, Any]) -> None:
        if self._producer is None:
            self._producer = KafkaProducer(
                self._settings,
                self.endpoint,
                forced={**NO_AUTO_CREATE, **DURABLE, "linger.ms": 5},
                purpose=f"status topic {self.topic}",
                room_timeout_s=self.timeout_s,
            )
        value = json.dumps(dict(status), separators=(",", ":"), sort_keys=True, default=str).encode()
        self._producer.produce(self.topic, value, self.key(connector, task))
        self._producer.poll(0)

    def read(self, connector: str) -> dict[int, dict[str, Any]]:
        """The latest status of each task of ``connector``."""
        found = self._admin.partitions(self.topic)
        if not found:
            return {}
        consumer = KafkaConsumer(
            self._settings, self.endpoint, forced=NO_AUTO_CREATE, purpose="status", timeout_s=self.timeout_s
        )
        statuses: dict[int, dict[str, Any]] = {}
        try:
            for msg in consumer.read_to_end(self.topic, found):
                try:
                    key, value = json.loads(msg.key() or b"null"), json.loads(msg.value() or b"null")
                except ValueError:
                    continue
                if isinstance(key, list) and len(key) == 2 and key[0] == connector and isinstance(value, dict):
                    statuses[int(key[1].get("task", -1))] = value
            return statuses
        finally:
            consumer.close()

    def close(self) -> None:
        if self._producer is not None:
            left = self._producer.wait(min(self.timeout_s, 5.0))
            if left:
                log.warning("%d task status record(s) not written to %s", left, self.topic)
            self._producer = None


class GroupListener(Protocol):
    """What a member tells its worker, on the thread that calls :meth:`GroupMember.poll`."""

    def on_assigned(self, tasks: list[int]) -> None:
        """A rebalance gave this member these tasks (none: it is in the group, a standby)."""
        ...

    def on_revoked(self, tasks: list[int]) -> None:
        """Give these tasks up; the revocation completes (and another worker gets them) when this returns."""
        ...

    def on_lost(self, tasks: list[int]) -> None:
        """These tasks were taken away without a revocation (this member's session expired)."""
        ...

    def on_definition(self, definition: TaskDefinition) -> None:
        """A record of an assigned task's partition (read from its first one on after each assignment)."""
        ...

    def on_caught_up(self, task: int) -> None:
        """Every record of an assigned task's partition so far was handed over (its end, once per arrival)."""
        ...


class GroupMember(KafkaClient):
    """One worker's membership of the group ``group_id``, subscribed to the tasks topic ``topic``."""

    kind: ClassVar[str] = "group member"

    def __init__(
        self,
        settings: Mapping[str, Any],
        topic: str,
        *,
        group_id: str,
        listener: GroupListener,
        session_timeout_ms: int,
        client_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        self.topic = topic
        self.group_id = group_id
        self.listener = listener
        endpoint = Endpoint.of(
            settings,
            servers="kafka.bootstrap.servers (or --bootstrap-servers)",
            access_hint=f"grant the mongocdc principal read on group {group_id} and read and describe on topic "
            f"{topic}, or check the kafka.sasl.* settings",
        )
        super().__init__(
            Consumer,
            settings,
            endpoint,
            defaults={
                "heartbeat.interval.ms": max(session_timeout_ms // 3, 100),
                "topic.metadata.refresh.interval.ms": 3000,  # a task added (the topic grown) is seen within seconds
                "client.id": client_id,
            },
            forced={
                **NO_AUTO_CREATE,
                "group.id": group_id,
                "session.timeout.ms": session_timeout_ms,
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
            },
            purpose=f"worker of group {group_id}",
            timeout_s=timeout_s,
        )
        self._held: set[int] = set()
        self._callback_failure: BaseException | None = None

    @property
    def member_id(self) -> str:
        try:
            return str(self._client.memberid() or "")
        except (KafkaException, RuntimeError):
            return ""

    def join(self) -> None:
        """Subscribe: the group's next rebalance gives this member its share of the tasks (through ``poll``)."""
        self._client.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)

    def _guard(self, call: Callable[[], None]) -> None:
        """Run a listener callback; keep its failure for ``poll`` to raise (librdkafka's callbacks must return)."""
        try:
            call()
        except BaseException as exc:  # raised by poll(), in the worker's own thread
            if self._callback_failure is None:
                self._callback_failure = exc

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        tasks = sorted(tp.partition for tp in partitions if tp.topic == self.topic)
        consumer.incremental_assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in tasks])
        self._held.update(tasks)
        self._guard(lambda: self.listener.on_assigned(tasks))  # also when empty: the member is in the group

    def _revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        tasks = sorted(tp.partition for tp in partitions if tp.topic == self.topic)
        if tasks:
            self._guard(lambda: self.listener.on_revoked(tasks))
        self._held.difference_update(tasks)
        consumer.incremental_unassign(partitions)

    def _lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        tasks = sorted(tp.partition for tp in partitions if tp.topic == self.topic)
        if tasks:
            self._guard(lambda: self.listener.on_lost(tasks))
        self._held.difference_update(tasks)
        consumer.incremental_unassign(partitions)

    @property
    def held(self) -> list[int]:
        return sorted(self._held)

    def poll(self, timeout_s: float) -> None:
        """Serve the group (rebalances call the listener) and hand over the task records that arrived."""
        self.check()
        messages = self._client.consume(64, timeout_s)
        self._raise_failure()
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self._caught_up(msg.partition())
                    continue
                if err.fatal():
                    raise self.endpoint.failed(KafkaException(err), f"reading the tasks of group {self.group_id}")
                log.debug("tasks topic %s: %s", self.topic, err.str())
                continue
            definition = TaskDefinition.parse(msg.partition(), msg.value())
            if definition is None or msg.partition() not in self._held:
                continue
            self._guard(lambda d=definition: self.listener.on_definition(d))  # type: ignore[misc]
            self._raise_failure()

    def _caught_up(self, partition: int) -> None:
        if partition in self._held:
            self._guard(lambda: self.listener.on_caught_up(partition))
            self._raise_failure()

    def _raise_failure(self) -> None:
        failure, self._callback_failure = self._callback_failure, None
        if failure is not None:
            raise failure

    def leave(self) -> None:
        """Leave the group (the listener gives up what it still holds first, through ``on_revoked``)."""
        try:
            self._client.close()
        except (KafkaException, RuntimeError) as exc:
            log.debug("leaving group %s: %s", self.group_id, exc)
        self._callback_failure = None


def check_connector(definition: TaskDefinition, connector: str, topic: str) -> None:
    """A tasks topic is one connector's: a definition of another one is a configuration mistake (exit 3)."""
    if definition.connector and definition.connector != connector:
        raise ConfigError(
            f"the tasks topic {topic} holds tasks of connector {definition.connector!r}, not of {connector!r}: "
            "two connectors share a group.id",
            hint="give each connector a group.id of its own (or set group.tasks.topic), or run the same configuration "
            "in every worker of the group",
        )
