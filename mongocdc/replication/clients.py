"""``Cluster``: one Kafka cluster as replication and failover see it, over ``mongocdc.kafka``'s clients.

Its role (``source`` or ``target``) names it in every error and hint (``Endpoint``), its ``ClientLog``
says an outage once for all its clients, and it adds what replication means by its requests: the cluster's
identity (or its alias), the configs a copied topic takes, the compacted internal topics, a compacted
topic read to its end, one record's timestamp, a time's offset. Admin requests and plain reads go to one
admin client and one reader, created on first use.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from mongocdc.errors import ConfigError, MongocdcError, UnreachableError
from mongocdc.kafka.admin import GroupState, KafkaAdmin
from mongocdc.kafka.config import READER
from mongocdc.kafka.consumer import KafkaConsumer, Offsets
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.logs import ClientLog
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.replication")

_NOT_COPIED = frozenset({"message.timestamp.type"})  # copies keep the source timestamps (CreateTime)
COMPACTED_CONFIGS = {"cleanup.policy": "compact"}


class Cluster:
    """One Kafka cluster: ``role`` is ``source`` or ``target``, ``prefix`` the settings prefix of its client keys."""

    def __init__(self, settings: Mapping[str, str], *, role: str, prefix: str, timeout_s: float = 10.0) -> None:
        self.settings = dict(settings)
        self.role = role
        self.prefix = prefix
        self.timeout_s = timeout_s
        flag = "--source" if role == "source" else "--target"
        self.client_log = ClientLog(role, str(settings.get("bootstrap.servers", "")), log)
        self.endpoint = Endpoint.of(
            settings,
            role=role,
            prefix=prefix,
            servers=f"{flag} ({prefix}bootstrap.servers)",
            client_log=self.client_log,
        )
        self._admin: KafkaAdmin | None = None
        self._reader: KafkaConsumer | None = None

    @property
    def bootstrap(self) -> str:
        return self.endpoint.bootstrap

    def __repr__(self) -> str:
        return f"Cluster({self.role}, {self.bootstrap!r})"

    def failed(self, exc: BaseException, doing: str) -> MongocdcError:
        """A ``MongocdcError`` for a failed request (``Endpoint.failed``)."""
        return self.endpoint.failed(exc, doing)

    # --- clients -----------------------------------------------------------------------

    def admin(self) -> KafkaAdmin:
        if self._admin is None:
            self._admin = KafkaAdmin(self.settings, self.endpoint, timeout_s=self.timeout_s)
        return self._admin

    def consumer(self, group_id: str | None = None, defaults: Mapping[str, Any] | None = None) -> KafkaConsumer:
        """A consumer that never commits on its own; ``defaults`` come before the user's ``<prefix>*`` keys."""
        return KafkaConsumer(
            self.settings,
            self.endpoint,
            group_id=group_id,
            defaults={"auto.offset.reset": "earliest", **(defaults or {})},
            timeout_s=self.timeout_s,
        )

    def producer(self, *, forced: Mapping[str, Any], defaults: Mapping[str, Any], **options: Any) -> KafkaProducer:
        """A producer: ``defaults`` < the user's ``<prefix>*`` keys < ``forced``; ``options`` as ``KafkaProducer``'s."""
        return KafkaProducer(
            self.settings, self.endpoint, defaults=defaults, forced=forced, timeout_s=self.timeout_s, **options
        )

    def _reader_client(self) -> KafkaConsumer:
        if self._reader is None:
            self._reader = self.consumer(defaults={"enable.partition.eof": False})
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._admin = None

    # --- reachability and identity -------------------------------------------------------

    def connect(self, backoff: Backoff) -> None:
        """Wait until the cluster answers (retrying with ``backoff``); ``UnreachableError`` (exit 4) otherwise."""
        self.admin().reach(backoff)

    def reachable(self, timeout_s: float | None = None) -> bool:
        """One attempt, no retries: whether the cluster answers within ``timeout_s``."""
        try:
            self.admin().reach(None, timeout_s=timeout_s)
        except UnreachableError as exc:
            log.warning("%s", exc.message)
            return False
        return True

    def identity(self, alias: str | None) -> str:
        """``alias`` when set, else the cluster id the brokers report."""
        if alias:
            return alias
        cluster_id = self.admin().cluster_id()
        if not cluster_id:
            raise ConfigError(
                f"{self.endpoint.where} reports no cluster id",
                hint=f"set {self.role}.cluster.alias to a name both replication directions use for it",
            )
        return cluster_id

    # --- topics --------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Partition count by topic name."""
        return self.admin().topics()

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The configs set on ``topic`` itself (not broker defaults), minus those a copy must not take."""
        entries = self.admin().topic_configs(topic, set_on_topic=True)
        return {
            name: str(entry.value)
            for name, entry in entries.items()
            if name not in _NOT_COPIED and entry.value is not None
        }

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str], replication_factor: int) -> bool:
        """Create ``topic`` unless it exists; whether this call created it."""
        return self.admin().create_topic(
            topic,
            partitions,
            replication_factor=replication_factor,
            configs=configs,
            refused_hint=f"set replication.factor to what the {self.role} cluster allows, or create {topic} yourself",
        )

    def add_partitions(self, topic: str, count: int) -> None:
        """Grow ``topic`` to ``count`` partitions."""
        self.admin().add_partitions(topic, count)

    def ensure_compacted(self, topic: str, replication_factor: int) -> None:
        """Create the one-partition compacted internal topic ``topic`` when it is absent."""
        if self.create_topic(topic, 1, COMPACTED_CONFIGS, replication_factor):
            log.info("created the compacted topic %s on the %s cluster", topic, self.role)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """``(low, high)`` offsets of a partition, waiting out a new topic's leader election."""
        return self._reader_client().watermarks(topic, partition)

    # --- reading -------------------------------------------------------------------------

    def read_range(self, topic: str, partition: int, start: int, end: int) -> Iterator[Any]:
        """Every record of ``topic[partition]`` from ``start`` up to (not including) ``end``."""
        if end <= start:
            return
        consumer = self.consumer(defaults=READER)
        try:
            yield from consumer.read(topic, {partition: (start, end)}, idle_timeout_s=max(30.0, self.timeout_s))
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
        offset = self._reader_client().offsets_for_times({(topic, partition): ts})[(topic, partition)]
        if offset < 0:
            return self.watermarks(topic, partition)[1]
        return offset

    # --- consumer groups -----------------------------------------------------------------

    def group_ids(self) -> list[str]:
        return self.admin().group_ids()

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by ``(topic, partition)`` (partitions without one are left out)."""
        return self.admin().committed(group)

    def group_state(self, group: str) -> GroupState:
        return self.admin().group_state(group)

    def alter_offsets(self, group: str, offsets: Offsets) -> None:
        self.admin().alter_offsets(group, offsets)
