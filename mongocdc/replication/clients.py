"""``Cluster``: one Kafka cluster as replication and failover see it, thin over confluent-kafka's clients.

Admin requests (identity, topics and their configs, consumer groups and their offsets), plain reads
(a compacted topic to its end, a range of a partition, one record's timestamp) and the clients the
copy loop uses. Every failed request becomes a ``MongocdcError``: unreachable → exit 4 naming the
cluster's role and address, refused or invalid settings → the broker's reason.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

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
from mongocdc.kafka.config import client_config
from mongocdc.kafka.errors import describe as describe_error
from mongocdc.kafka.logs import ClientLog
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.replication")

_UNREACHABLE = (
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError._MSG_TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
)
_SETTLING = (
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
)
_COPIED_CONFIG_SOURCES = (ConfigSource.DYNAMIC_TOPIC_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG)
_NOT_COPIED = frozenset({"message.timestamp.type"})  # copies keep the source timestamps (CreateTime)
COMPACTED_CONFIGS = {"cleanup.policy": "compact"}


class _Unavailable(Exception):
    pass


@dataclass(frozen=True, slots=True)
class GroupState:
    """A consumer group as the cluster describes it."""

    state: str
    members: int


class Cluster:
    """One Kafka cluster: ``role`` is ``source`` or ``target``, ``prefix`` the settings prefix of its client keys."""

    def __init__(self, settings: Mapping[str, str], *, role: str, prefix: str, timeout_s: float = 10.0) -> None:
        self.settings = dict(settings)
        self.role = role
        self.prefix = prefix
        self.timeout_s = timeout_s
        self._admin: AdminClient | None = None
        self._reader: Consumer | None = None
        self.client_log = ClientLog(role, self.bootstrap, log)

    @property
    def bootstrap(self) -> str:
        return str(self.settings.get("bootstrap.servers", ""))

    def __repr__(self) -> str:
        return f"Cluster({self.role}, {self.bootstrap!r})"

    # --- errors ------------------------------------------------------------------------

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            log.error("Kafka (%s %s) failed fatally: %s", self.role, self.bootstrap, describe_error(err))
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            self.client_log.failed(err.str())
        else:
            log.debug("Kafka (%s %s): %s", self.role, self.bootstrap, describe_error(err))

    def unreachable(self, detail: str, *, attempts: int | None = None) -> UnreachableError:
        tried = f" after {attempts} attempt{'' if attempts == 1 else 's'}" if attempts else ""
        flag = "--source" if self.role == "source" else "--target"
        return UnreachableError(
            f"the {self.role} Kafka cluster at {self.bootstrap} is unreachable{tried}: {detail}",
            hint=f"check {flag} ({self.prefix}bootstrap.servers), the {self.prefix}* security settings and that "
            "the brokers are up; connect.max.attempts and connect.backoff.* tune the retries",
        )

    def failed(self, exc: BaseException, doing: str) -> MongocdcError:
        """A ``MongocdcError`` for a failed request: unreachable → exit 4, bad settings → 3, else the reason."""
        err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        if isinstance(err, KafkaError):
            if err.code() in _UNREACHABLE:
                return self.unreachable(f"{doing}: {err.str()}")
            if err.code() == KafkaError._INVALID_ARG:
                return ConfigError(
                    f"invalid Kafka client setting for the {self.role} cluster: {err.str()}",
                    hint=f"check the {self.prefix}* keys against librdkafka's CONFIGURATION.md",
                )
            if err.code() in (
                KafkaError.TOPIC_AUTHORIZATION_FAILED,
                KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                KafkaError.GROUP_AUTHORIZATION_FAILED,
                KafkaError.SASL_AUTHENTICATION_FAILED,
            ):
                return ConfigError(
                    f"the {self.role} cluster at {self.bootstrap} refused {doing}: {describe_error(err)}",
                    hint=f"check the {self.prefix}sasl.* settings and the principal's ACLs",
                )
            return MongocdcError(f"the {self.role} cluster at {self.bootstrap} failed {doing}: {describe_error(err)}")
        return MongocdcError(f"the {self.role} cluster at {self.bootstrap} failed {doing}: {exc}")

    # --- clients -----------------------------------------------------------------------

    def config(self, forced: Mapping[str, Any] | None = None, **defaults: Any) -> dict[str, Any]:
        """librdkafka settings: ``defaults`` < the user's ``src.kafka.*``/``dest.kafka.*`` keys < ``forced``."""
        return client_config(
            self.settings, defaults=defaults, forced=forced, error_cb=self._on_error, logger=self.client_log
        )

    def admin(self) -> AdminClient:
        if self._admin is None:
            try:
                self._admin = AdminClient(self.config())
            except KafkaException as exc:
                raise self.failed(exc, "creating an admin client") from exc
        return self._admin

    def consumer(self, group_id: str | None = None, overrides: Mapping[str, Any] | None = None) -> Consumer:
        """A consumer that never commits on its own (``enable.auto.commit=false``)."""
        defaults: dict[str, Any] = {"auto.offset.reset": "earliest", **(overrides or {})}
        forced = {"group.id": group_id or f"mongocdc-reader-{uuid.uuid4()}", "enable.auto.commit": False}
        try:
            return Consumer(self.config(forced, **defaults))
        except KafkaException as exc:
            raise self.failed(exc, "creating a consumer") from exc

    def producer(self, forced: Mapping[str, Any], **defaults: Any) -> Producer:
        try:
            return Producer(self.config(forced, **defaults))
        except KafkaException as exc:
            raise self.failed(exc, "creating a producer") from exc

    def _reader_client(self) -> Consumer:
        if self._reader is None:
            self._reader = self.consumer(overrides={"enable.partition.eof": False})
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._admin = None

    # --- reachability and identity -------------------------------------------------------

    def _probe(self, timeout_s: float) -> None:
        try:
            self.admin().list_topics(timeout=timeout_s)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            raise _Unavailable(err.str() if isinstance(err, KafkaError) else str(exc)) from exc
        self.client_log.answered()

    def connect(self, backoff: Backoff) -> None:
        """Wait until the cluster answers (retrying with ``backoff``); ``UnreachableError`` (exit 4) otherwise."""
        try:
            backoff.run(
                f"connecting to the {self.role} Kafka cluster at {self.bootstrap}",
                lambda: self._probe(self.timeout_s),
                retry_on=(_Unavailable,),
            )
        except _Unavailable as exc:
            raise self.unreachable(str(exc), attempts=backoff.max_attempts) from exc

    def reachable(self, timeout_s: float | None = None) -> bool:
        """One attempt, no retries: whether the cluster answers within ``timeout_s``."""
        try:
            self._probe(self.timeout_s if timeout_s is None else timeout_s)
        except _Unavailable as exc:
            log.warning("the %s cluster at %s does not answer: %s", self.role, self.bootstrap, exc)
            return False
        return True

    def identity(self, alias: str | None) -> str:
        """``alias`` when set, else the cluster id the brokers report."""
        if alias:
            return alias
        try:
            described = self.admin().describe_cluster(request_timeout=self.timeout_s).result()
        except KafkaException as exc:
            raise self.failed(exc, "describing the cluster") from exc
        cluster_id = getattr(described, "cluster_id", None)
        if not cluster_id:
            side = "source" if self.role == "source" else "target"
            raise ConfigError(
                f"the {self.role} cluster at {self.bootstrap} reports no cluster id",
                hint=f"set {side}.cluster.alias to a name both replication directions use for it",
            )
        return str(cluster_id)

    # --- topics --------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Partition count by topic name."""
        try:
            metadata = self.admin().list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise self.failed(exc, "listing topics") from exc
        return {name: len(info.partitions) for name, info in metadata.topics.items() if info.error is None}

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The configs set on ``topic`` itself (not broker defaults), minus those a copy must not take."""
        resource = ConfigResource(ResourceType.TOPIC, topic)
        try:
            entries = self.admin().describe_configs([resource], request_timeout=self.timeout_s)[resource].result()
        except KafkaException as exc:
            raise self.failed(exc, f"describing the configs of {topic}") from exc
        copied: dict[str, str] = {}
        for name, entry in entries.items():
            source = entry.source
            if source in _COPIED_CONFIG_SOURCES and name not in _NOT_COPIED and entry.value is not None:
                copied[name] = str(entry.value)
        return copied

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str], replication_factor: int) -> bool:
        """Create ``topic`` unless it exists; whether this call created it."""
        new = NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor, config=dict(configs))
        try:
            self.admin().create_topics([new], operation_timeout=self.timeout_s)[topic].result()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return False
            raise self.failed(exc, f"creating topic {topic}") from exc
        self.wait_for_topic(topic, partitions)
        return True

    def wait_for_topic(self, topic: str, partitions: int) -> None:
        """Wait until metadata shows ``topic`` with a leader for each partition (a new topic settles)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                info = self.admin().list_topics(topic, timeout=self.timeout_s).topics.get(topic)
            except KafkaException as exc:
                raise self.failed(exc, f"reading the metadata of {topic}") from exc
            if (
                info is not None
                and info.error is None
                and len(info.partitions) >= partitions
                and all(p.leader >= 0 for p in info.partitions.values())
            ):
                return
            if time.monotonic() > deadline:
                raise self.unreachable(f"topic {topic} has no leader for every partition after {self.timeout_s:.0f} s")
            time.sleep(0.05)

    def add_partitions(self, topic: str, count: int) -> None:
        """Grow ``topic`` to ``count`` partitions."""
        try:
            self.admin().create_partitions([NewPartitions(topic, count)], operation_timeout=self.timeout_s)[
                topic
            ].result()
        except KafkaException as exc:
            raise self.failed(exc, f"adding partitions to {topic}") from exc
        self.wait_for_topic(topic, count)

    def ensure_compacted(self, topic: str, replication_factor: int) -> None:
        """Create the one-partition compacted internal topic ``topic`` when it is absent."""
        if self.create_topic(topic, 1, COMPACTED_CONFIGS, replication_factor):
            log.info("created the compacted topic %s on the %s cluster", topic, self.role)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """``(low, high)`` offsets of a partition, waiting out a new topic's leader election."""
        consumer = self._reader_client()
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=self.timeout_s)
                return int(low), int(high)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if not (isinstance(err, KafkaError) and err.code() in _SETTLING) or time.monotonic() > deadline:
                    raise self.failed(exc, f"reading the offsets of {topic}[{partition}]") from exc
                time.sleep(0.1)

    # --- reading -------------------------------------------------------------------------

    def read_range(self, topic: str, partition: int, start: int, end: int) -> Iterator[Any]:
        """Every record of ``topic[partition]`` from ``start`` up to (not including) ``end``."""
        if end <= start:
            return
        consumer = self.consumer(overrides={"enable.partition.eof": True})
        try:
            consumer.assign([TopicPartition(topic, partition, start)])
            deadline = time.monotonic() + max(30.0, self.timeout_s)
            while True:
                batch: list[Any] = consumer.consume(1000, 0.5)
                for msg in batch:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            return
                        raise self.failed(KafkaException(err), f"reading {topic}[{partition}]")
                    if msg.offset() >= end:
                        return
                    yield msg
                    if msg.offset() + 1 >= end:
                        return
                if batch:
                    deadline = time.monotonic() + max(30.0, self.timeout_s)
                elif time.monotonic() > deadline:
                    raise self.unreachable(f"reading {topic}[{partition}] from {start} to {end} timed out")
        finally:
            consumer.close()

    def read_all(self, topic: str) -> list[Any]:
        """Every record of a (small, compacted) topic up to its current end, partition by partition."""
        counts = self.topics()
        if topic not in counts:
            return []
        records: list[Any] = []
        for partition in range(counts[topic]):
            low, high = self.watermarks(topic, partition)
            records.extend(self.read_range(topic, partition, low, high))
        return records

    def record_timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp (epoch ms) of the record at ``offset``, or of the first one after it; ``None`` when none."""
        low, high = self.watermarks(topic, partition)
        for msg in self.read_range(topic, partition, max(low, offset), high):
            kind, ts = msg.timestamp()
            return int(ts) if kind else None
        return None

    def offset_for_time(self, topic: str, partition: int, ts: int) -> int:
        """The earliest offset whose timestamp is at least ``ts`` (the partition's end when there is none)."""
        consumer = self._reader_client()
        try:
            found = consumer.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=self.timeout_s)
        except KafkaException as exc:
            raise self.failed(exc, f"looking up a time in {topic}[{partition}]") from exc
        offset = int(found[0].offset)
        if offset < 0:
            return self.watermarks(topic, partition)[1]
        return offset

    # --- consumer groups -----------------------------------------------------------------

    def group_ids(self) -> list[str]:
        try:
            listed = self.admin().list_consumer_groups(request_timeout=self.timeout_s).result()
        except KafkaException as exc:
            raise self.failed(exc, "listing consumer groups") from exc
        return sorted(group.group_id for group in listed.valid)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by ``(topic, partition)`` (partitions without one are left out)."""
        request = [ConsumerGroupTopicPartitions(group)]
        try:
            result = self.admin().list_consumer_group_offsets(request, request_timeout=self.timeout_s)[group].result()
        except KafkaException as exc:
            raise self.failed(exc, f"reading the committed offsets of group {group}") from exc
        return {
            (tp.topic, tp.partition): int(tp.offset)
            for tp in result.topic_partitions or []
            if tp.offset >= 0 and tp.error is None
        }

    def group_state(self, group: str) -> GroupState:
        try:
            described = self.admin().describe_consumer_groups([group], request_timeout=self.timeout_s)[group].result()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.GROUP_ID_NOT_FOUND:
                return GroupState("DEAD", 0)
            raise self.failed(exc, f"describing group {group}") from exc
        state = getattr(described.state, "name", str(described.state))
        return GroupState(state, len(described.members or []))

    def alter_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        partitions = [
            TopicPartition(topic, partition, offset) for (topic, partition), offset in sorted(offsets.items())
        ]
        request = [ConsumerGroupTopicPartitions(group, partitions)]
        try:
            result = self.admin().alter_consumer_group_offsets(request, request_timeout=self.timeout_s)[group].result()
        except KafkaException as exc:
            raise self.failed(exc, f"writing the offsets of group {group}") from exc
        refused = [tp for tp in result.topic_partitions or [] if tp.error is not None]
        if refused:
            detail = ", ".join(f"{tp.topic}[{tp.partition}]: {tp.error.str()}" for tp in refused)
            raise MongocdcError(f"the {self.role} cluster refused offsets of group {group}: {detail}")


BEGINNING = OFFSET_BEGINNING
