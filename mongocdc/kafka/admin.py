"""``KafkaAdmin``: topics (create, grow, describe), the cluster's id and consumer groups, as mongocdc asks them.

Every request waits up to the client's ``timeout_s`` and fails as ``Endpoint.failed`` says. A topic this
client creates is ready when ``create_topic`` returns: each partition has a leader.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

# The package exports these without marking them re-exported (mypy --strict: no implicit re-export).
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from mongocdc.errors import ConfigError, MongocdcError, UnreachableError
from mongocdc.kafka.client import KafkaClient
from mongocdc.kafka.config import NO_AUTO_CREATE
from mongocdc.kafka.consumer import Offsets
from mongocdc.kafka.errors import INVALID_TOPIC_CODES, Endpoint, code_of, reason

log = logging.getLogger("mongocdc.kafka")

TOPIC_CONFIG_SET = frozenset({ConfigSource.DYNAMIC_TOPIC_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG})
"""Where a config set on the topic itself (not a broker or cluster default) comes from."""


@dataclass(frozen=True, slots=True)
class GroupState:
    """A consumer group as the cluster describes it (``DEAD`` with no members when it does not exist)."""

    state: str
    members: int


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A member of a consumer group as the coordinator describes it, with the partitions it was assigned."""

    member_id: str
    client_id: str
    host: str
    partitions: tuple[int, ...]


class KafkaAdmin(KafkaClient):
    """An admin client of ``endpoint`` (metadata requests never create a topic: ``NO_AUTO_CREATE``)."""

    kind: ClassVar[str] = "admin client"

    def __init__(
        self, settings: Mapping[str, Any], endpoint: Endpoint, *, purpose: str = "", timeout_s: float = 10.0
    ) -> None:
        super().__init__(AdminClient, settings, endpoint, forced=NO_AUTO_CREATE, purpose=purpose, timeout_s=timeout_s)

    def _result(self, future: Any, doing: str) -> Any:
        """The result of one request's future, waited for a little longer than the request may take."""
        try:
            return future.result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            raise self.endpoint.failed(exc, doing) from exc
        except TimeoutError as exc:
            raise self.endpoint.unreachable(f"no answer within {self.timeout_s:.0f} s while {doing}") from exc

    # --- topics --------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Partition count by topic name (topics the metadata reports an error for are left out)."""
        metadata = self.metadata()
        return {name: len(info.partitions) for name, info in metadata.topics.items() if info.error is None}

    def create_topic(
        self,
        topic: str,
        partitions: int,
        *,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        refused_hint: str = "",
    ) -> bool:
        """Create ``topic`` unless it exists and wait until each partition has a leader; whether this call created it.

        A topic the cluster will not create as asked (replication factor, partitions, a policy, a config) is a
        ``ConfigError`` with ``refused_hint``.
        """
        self.check()
        new = NewTopic(
            topic, num_partitions=partitions, replication_factor=replication_factor, config=dict(configs or {})
        )
        future = self._client.create_topics([new], operation_timeout=self.timeout_s)[topic]
        doing = f"creating topic {topic}"
        try:
            future.result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            code = code_of(exc)
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                return False  # created meanwhile by another client
            if code in INVALID_TOPIC_CODES:
                raise ConfigError(
                    f"{self.endpoint.where} refused to create topic {topic} with {partitions} partition(s) and "
                    f"replication factor {replication_factor}: {reason(exc)}",
                    hint=refused_hint or "create the topic yourself",
                ) from exc
            raise self.endpoint.failed(exc, doing) from exc
        except TimeoutError as exc:
            raise self.endpoint.unreachable(f"no answer within {self.timeout_s:.0f} s while {doing}") from exc
        self.partitions(topic, at_least=partitions, created=True)
        return True

    def add_partitions(self, topic: str, count: int) -> None:
        """Grow ``topic`` to ``count`` partitions and wait for their leaders."""
        self.check()
        future = self._client.create_partitions([NewPartitions(topic, count)], operation_timeout=self.timeout_s)
        self._result(future[topic], f"adding partitions to {topic}")
        self.partitions(topic, at_least=count, created=True)

    def topic_configs(self, topic: str, *, set_on_topic: bool = False) -> dict[str, Any]:
        """The configs of ``topic`` by name (``ConfigEntry``: ``.value``, ``.source``); with ``set_on_topic`` only
        those set on the topic itself, not broker or cluster defaults."""
        self.check()
        resource = ConfigResource(ResourceType.TOPIC, topic)
        future = self._client.describe_configs([resource], request_timeout=self.timeout_s)[resource]
        entries: dict[str, Any] = self._result(future, f"describing the configs of topic {topic}")
        if set_on_topic:
            return {name: entry for name, entry in entries.items() if entry.source in TOPIC_CONFIG_SET}
        return entries

    def topic_exists(self, topic: str) -> bool:
        """Whether the cluster has ``topic`` (whatever its partitions' leaders are doing)."""
        info = self.metadata(topic).topics.get(topic)
        if info is None:
            return False
        return info.error is None or info.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART

    def broker_config(self, name: str) -> str | None:
        """The value of broker config ``name`` on one of the cluster's brokers; ``None`` when the cluster does not
        say (no broker in the metadata, or describing broker configs is not allowed)."""
        self.check()
        brokers = sorted(self.metadata().brokers)
        if not brokers:
            return None
        resource = ConfigResource(ResourceType.BROKER, str(brokers[0]))
        future = self._client.describe_configs([resource], request_timeout=self.timeout_s)[resource]
        try:
            entries: dict[str, Any] = self._result(future, f"describing the configs of broker {brokers[0]}")
        except UnreachableError:
            raise
        except MongocdcError as exc:  # refused (the principal may not describe broker configs), or not answered
            log.debug("%s: cannot read broker config %s: %s", self.endpoint.where, name, exc)
            return None
        entry = entries.get(name)
        return None if entry is None or entry.value is None else str(entry.value)

    # --- the cluster and its groups ------------------------------------------------------

    def cluster_id(self) -> str | None:
        self.check()
        future = self._client.describe_cluster(request_timeout=self.timeout_s)
        described = self._result(future, "describing the cluster")
        cluster_id = getattr(described, "cluster_id", None)
        return str(cluster_id) if cluster_id else None

    def group_ids(self) -> list[str]:
        self.check()
        future = self._client.list_consumer_groups(request_timeout=self.timeout_s)
        return sorted(group.group_id for group in self._result(future, "listing consumer groups").valid)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by ``(topic, partition)`` (partitions without one are left out)."""
        self.check()
        request = [ConsumerGroupTopicPartitions(group)]
        future = self._client.list_consumer_group_offsets(request, request_timeout=self.timeout_s)[group]
        result = self._result(future, f"reading the committed offsets of group {group}")
        return {
            (tp.topic, tp.partition): int(tp.offset)
            for tp in result.topic_partitions or []
            if tp.offset >= 0 and tp.error is None
        }

    def _describe_group(self, group: str) -> Any | None:
        """The group's description, ``None`` when the group does not exist."""
        self.check()
        future = self._client.describe_consumer_groups([group], request_timeout=self.timeout_s)[group]
        try:
            return self._result(future, f"describing group {group}")
        except MongocdcError as exc:
            if code_of(exc.__cause__) == KafkaError.GROUP_ID_NOT_FOUND:
                return None
            raise

    def group_state(self, group: str) -> GroupState:
        described = self._describe_group(group)
        if described is None:
            return GroupState("DEAD", 0)
        state = getattr(described.state, "name", str(described.state))
        return GroupState(state, len(described.members or []))

    def group_members(self, group: str, topic: str) -> tuple[str, list[GroupMember]]:
        """The group's state (``STABLE``, ``PREPARING_REBALANCE``, ``EMPTY``, ``DEAD`` when it does not exist…) and
        its members, each with the partitions of ``topic`` assigned to it."""
        described = self._describe_group(group)
        if described is None:
            return "DEAD", []
        members = []
        for member in described.members or []:
            assignment = getattr(member, "assignment", None)
            parts = getattr(assignment, "topic_partitions", None) or []
            members.append(
                GroupMember(
                    str(member.member_id),
                    str(member.client_id),
                    str(member.host),
                    tuple(sorted(tp.partition for tp in parts if tp.topic == topic)),
                )
            )
        state = getattr(described.state, "name", str(described.state))
        return state, sorted(members, key=lambda m: (m.client_id, m.member_id))

    def alter_offsets(self, group: str, offsets: Offsets) -> None:
        """Set the group's committed offsets; raise when the request or any partition of it failed."""
        self.check()
        partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        request = [ConsumerGroupTopicPartitions(group, partitions)]
        future = self._client.alter_consumer_group_offsets(request, request_timeout=self.timeout_s)[group]
        doing = f"writing the offsets of group {group}"
        result = self._result(future, doing)
        refused = [tp for tp in result.topic_partitions or [] if tp.error is not None]
        if refused:
            raise self.endpoint.partitions_failed(refused, doing)
