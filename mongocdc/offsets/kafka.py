"""``KafkaOffsetStore``: offsets in a compacted Kafka topic, laid out as Kafka Connect lays them out.

One record per connector and source partition:

* key: ``["<connector>",{"partition":"<partition>"}]`` (compact JSON, the same bytes every time, so
  compaction keeps exactly one record per key);
* value: ``{"offset":{...},"updated_at":"<ISO 8601 UTC>"}`` (the offset is the record the SQLite
  store keeps); a delete is a tombstone (``null`` value).

Reading replays the topic from the beginning up to the high watermarks taken when the read started:
the latest record of a key wins, a tombstone removes it. A commit returns once the broker
acknowledged the record to every in-sync replica (idempotent producer, ``acks=all``), and the high
watermark includes it then, so the next read sees it.

The store of a running connector (``owner``) fences: its producer is transactional with ``transactional.id``
``mongocdc-offsets-<connector>``, ``connect`` calls ``init_transactions`` (which fences an older instance of the
same connector), and each commit is a transaction of its own. A fenced store raises ``FencedError`` (exit 7)
and writes nothing more. The replay reads committed records only (``isolation.level=read_committed``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from mongocdc.errors import ConfigError, FencedError, UnreachableError
from mongocdc.kafka.admin import KafkaAdmin
from mongocdc.kafka.config import DURABLE, JAVA_PARTITIONER, NO_AUTO_CREATE
from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.offsets.base import OffsetRecord
from mongocdc.offsets.connect import parse_connect_key
from mongocdc.retry import Backoff

T = TypeVar("T")

log = logging.getLogger("mongocdc.kafka")

PRODUCER_FORCED: dict[str, Any] = {
    # Never let a metadata request create the topic with the broker's defaults (not compacted).
    **NO_AUTO_CREATE,
    # A commit is durable when it returns: idempotent, acknowledged by every in-sync replica.
    **DURABLE,
    # The Java client's partition for a key, as a Kafka Connect worker writes offsets.
    **JAVA_PARTITIONER,
    "linger.ms": 0,
}
CONSUMER_FORCED: dict[str, Any] = {
    **NO_AUTO_CREATE,
    "isolation.level": "read_committed",
    # A replay ends at the end of the log, which a fetch reports at once instead of after its 500 ms wait for
    # more: the last offset of a transactional topic is a commit marker, never delivered, so a replay always
    # waits for that report (a connector's start and every `offsets` command waited 0.5-1 s for it).
    "fetch.wait.max.ms": 10,
}


def transactional_id(connector: str) -> str:
    """The ``transactional.id`` of a connector's offset producer: one live producer per connector."""
    return f"mongocdc-offsets-{connector}"


_TOPIC_HINT = "mongocdc creates the topic compacted when it does not exist"


def record_key(connector: str, partition: str) -> bytes:
    """The record key of a connector's partition: ``["<connector>",{"partition":"<partition>"}]``."""
    return json.dumps([connector, {"partition": partition}], separators=(",", ":"), ensure_ascii=False).encode()


def parse_key(raw: bytes | None) -> tuple[str, str] | None:
    """``(connector, partition)`` of a key written by :func:`record_key`; ``None`` for any other key."""
    parsed = parse_connect_key(raw)
    if parsed is None:
        return None
    connector, partition = parsed
    if set(partition) == {"partition"} and isinstance(partition["partition"], str):
        return connector, partition["partition"]
    return None


def record_value(offset: Mapping[str, Any], updated_at: datetime) -> bytes:
    """The record value: ``{"offset":{...},"updated_at":"<ISO UTC>"}`` (sorted keys, compact)."""
    body = {"offset": dict(offset), "updated_at": updated_at.astimezone(UTC).isoformat(timespec="milliseconds")}
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def parse_value(raw: bytes, fallback_time: datetime) -> tuple[dict[str, Any], datetime]:
    """``(offset, updated_at)`` of a record value; raises ``ValueError`` when it is not one."""
    body = json.loads(raw)
    if not isinstance(body, dict) or not isinstance(body.get("offset"), dict):
        raise ValueError("expected a JSON object with an 'offset' object")
    offset: dict[str, Any] = body["offset"]
    updated_at = fallback_time
    if isinstance(body.get("updated_at"), str):
        updated_at = datetime.fromisoformat(body["updated_at"])
        if updated_at.tzinfo is None:
            updated_at = updated_at.replace(tzinfo=UTC)
    return offset, updated_at


@dataclass(slots=True)
class _Latest:
    """The newest record seen for one key while replaying the topic."""

    partition: int
    timestamp_ms: int
    value: bytes | None


class KafkaOffsetStore:
    """Offsets in the compacted topic ``topic`` (``offset.storage.topic``).

    The Kafka clients are created on first use. :meth:`connect` checks the cluster answers (retrying
    with a ``Backoff``), then creates the topic compacted when it is absent, or checks an existing
    one is compacted; every operation does the same once (without retries) when ``connect`` was not
    called. ``settings`` is the librdkafka configuration (``Settings.kafka_client``). ``owner`` is the connector
    that runs on this store (``stream``, ``snapshot``): its writes are transactional and fence an older instance
    (the module docstring).
    """

    def __init__(
        self,
        settings: Mapping[str, str],
        topic: str,
        *,
        partitions: int = 25,
        replication_factor: int = -1,
        timeout_s: float = 30.0,
        commit_timeout_s: float = 60.0,
        owner: str | None = None,
    ) -> None:
        self._settings = dict(settings)
        self.owner = owner
        self._fenced: FencedError | None = None
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout_s = timeout_s
        self.commit_timeout_s = commit_timeout_s
        self._endpoint = Endpoint.of(
            settings,
            servers="kafka.bootstrap.servers (or --bootstrap-servers)",
            access_hint=f"grant the mongocdc principal read, write, create and describe-configs on topic {topic} "
            "(offset.storage.topic)"
            + (f", and write and describe on transactional id {transactional_id(owner)}" if owner else "")
            + ", or check the kafka.sasl.* settings",
        )
        self._admin: KafkaAdmin | None = None
        self._producer: KafkaProducer | None = None
        self._consumer: KafkaConsumer | None = None
        self._ready = False
        self._topic_exists = False
        self._backoff: Backoff | None = None
        self._lock = threading.RLock()

    @property
    def bootstrap(self) -> str:
        return self._endpoint.bootstrap

    def __repr__(self) -> str:
        return f"KafkaOffsetStore(topic={self.topic!r}, bootstrap={self.bootstrap!r})"

    # --- clients -------------------------------------------------------------

    def _admin_client(self) -> KafkaAdmin:
        if self._admin is None:
            self._admin = KafkaAdmin(
                self._settings, self._endpoint, purpose=f"offset store {self.topic}", timeout_s=self.timeout_s
            )
        return self._admin

    def _producer_client(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = KafkaProducer(
                self._settings,
                self._endpoint,
                defaults={"message.timeout.ms": int(self.commit_timeout_s * 1000)},
                forced=PRODUCER_FORCED
                if self.owner is None
                else {**PRODUCER_FORCED, "transactional.id": transactional_id(self.owner)},
                purpose=f"offset store {self.topic}",
                room_timeout_s=self.commit_timeout_s,
                note="; the previous offset is still the stored one",
            )
        return self._producer

    def _consumer_client(self) -> KafkaConsumer:
        if self._consumer is None:
            self._consumer = KafkaConsumer(
                self._settings,
                self._endpoint,
                forced=CONSUMER_FORCED,
                purpose="offsets",
                timeout_s=self.timeout_s,
            )
        return self._consumer

    # --- the topic -------------------------------------------------------------

    def connect(self, backoff: Backoff | None = None, *, create_topic: bool = True) -> None:
        """Reach the cluster (retrying with ``backoff``), then create or check the offset topic.

        With ``create_topic=False`` an absent topic reads as empty and is created by the first write
        (``offsets show`` changes nothing).
        """
        with self._lock:
            if self._ready:
                return
            self._backoff = backoff
            admin = self._admin_client()
            admin.reach(backoff, topic=self.topic, note=f"; the offsets are in topic {self.topic} there")
            if self._settled("waiting for the leaders of", lambda: admin.partitions(self.topic)) is None:
                if not create_topic:
                    self._ready = True
                    return
                self._create_topic()
            self._check_compacted()
            self._topic_exists = True
            if self.owner is not None:
                self._fence_others()
            self._ready = True

    def _fence_others(self) -> None:
        """Register the owner's ``transactional.id``: an older instance of the connector is fenced by it."""
        assert self.owner is not None
        try:
            self._settled(
                "registering the transactional producer of",
                lambda: self._producer_client().init_transactions(self.commit_timeout_s),
            )
        except FencedError as exc:
            raise self._fence(exc) from exc
        log.info(
            "connector %r holds its offsets in %s (transactional.id %s; an older instance of it is fenced)",
            self.owner,
            self.topic,
            transactional_id(self.owner),
        )

    def _fence(self, exc: FencedError) -> FencedError:
        """The connector's ``FencedError``, kept: nothing is written after it."""
        if self._fenced is None:
            self._fenced = FencedError(
                f"connector {self.owner!r} was fenced: another instance of it started and took over its offsets in "
                f"{self.topic} at {self._endpoint.where} (transactional.id {transactional_id(self.owner or '')}); "
                f"this one stops and commits nothing more ({exc.message})",
                hint="run one instance per connector: stop the other one before starting this one again, or give "
                "one of them another name",
            )
        return self._fenced

    @property
    def exists(self) -> bool:
        """Whether the offset topic exists (asking creates nothing: an unconnected store connects as a reader)."""
        if not self._ready:
            self.connect(create_topic=False)
        return self._topic_exists

    def _settled(self, doing: str, call: Callable[[], T]) -> T:
        """``call``, retried with the ``connect`` backoff while the cluster cannot serve the topic (unreachable,
        or partitions without a leader: a broker starting or failing over); at once without one."""
        if self._backoff is None:
            return call()
        return self._backoff.run(f"{doing} {self.topic} at {self._endpoint.where}", call, retry_on=(UnreachableError,))

    def _ensure_ready(self) -> None:
        if not self._ready:
            self.connect()

    def _create_topic(self) -> None:
        created = self._admin_client().create_topic(
            self.topic,
            self.partitions,
            replication_factor=self.replication_factor,
            configs={"cleanup.policy": "compact"},
            refused_hint="adjust offset.storage.partitions and offset.storage.replication.factor to the cluster, "
            "or create the topic yourself with cleanup.policy=compact",
        )
        if created:
            log.info(
                "created offset topic %s (compacted, %d %s, replication factor %s)",
                self.topic,
                self.partitions,
                "partition" if self.partitions == 1 else "partitions",
                "broker default" if self.replication_factor == -1 else self.replication_factor,
            )

    def _check_compacted(self) -> None:
        entry = self._admin_client().topic_configs(self.topic).get("cleanup.policy")
        policy = str(entry.value) if entry is not None and entry.value is not None else "delete"
        if {p.strip() for p in policy.split(",")} != {"compact"}:
            raise ConfigError(
                f"offset.storage.topic {self.topic!r} has cleanup.policy={policy}, but offsets need a compacted "
                "topic (cleanup.policy=compact): with deletion, stored positions expire and are lost",
                hint=f"make it compacted: kafka-configs.sh --bootstrap-server {self.bootstrap} --alter "
                f"--entity-type topics --entity-name {self.topic} --add-config cleanup.policy=compact; or set "
                f"offset.storage.topic (--offsets kafka:TOPIC) to a topic that does not exist yet ({_TOPIC_HINT})",
            )

    # --- reading -----------------------------------------------------------------

    def _replay(self) -> dict[tuple[str, str], OffsetRecord]:
        """Every live record, read from the beginning to the high watermarks of now."""
        self._ensure_ready()
        if not self._topic_exists:
            return {}
        admin, consumer = self._admin_client(), self._consumer_client()

        def ends() -> dict[int, tuple[int, int]]:
            return consumer.ends(self.topic, admin.partitions(self.topic, created=True) or [])

        ranges = self._settled("reading the ends of", ends)
        latest: dict[tuple[str, str], _Latest] = {}
        foreign = 0
        for msg in consumer.read(self.topic, ranges):
            key = parse_key(msg.key())
            if key is None:
                foreign += 1
                continue
            partition = msg.partition()
            _, timestamp_ms = msg.timestamp()
            seen = latest.get(key)
            # Offsets order one partition; across partitions (the topic grew) the later write wins.
            if seen is None or seen.partition == partition or timestamp_ms >= seen.timestamp_ms:
                latest[key] = _Latest(partition, timestamp_ms, msg.value())
        if foreign:
            log.debug("offset topic %s: skipped %d records whose key mongocdc did not write", self.topic, foreign)
        return self._decode(latest)

    def _decode(self, latest: Mapping[tuple[str, str], _Latest]) -> dict[tuple[str, str], OffsetRecord]:
        records: dict[tuple[str, str], OffsetRecord] = {}
        for (connector, partition), entry in latest.items():
            if entry.value is None:
                continue  # a tombstone: deleted
            written = datetime.fromtimestamp(max(entry.timestamp_ms, 0) / 1000, tz=UTC)
            try:
                offset, updated_at = parse_value(entry.value, written)
            except ValueError as exc:
                log.warning(
                    "offset topic %s: ignoring the unreadable record of %s/%s: %s",
                    self.topic,
                    connector,
                    partition,
                    exc,
                )
                continue
            records[(connector, partition)] = OffsetRecord(connector, partition, offset, updated_at)
        return records

    # --- writing -------------------------------------------------------------------

    def _produce(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Produce ``(key, value)`` records and return once every one is acknowledged (``acks=all``)."""
        if self._fenced is not None:
            raise self._fenced
        self._ensure_ready()
        if not self._topic_exists:
            self._create_topic()
            self._check_compacted()
            self._topic_exists = True
        producer = self._producer_client()

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                producer.delivery_failed(err, msg)

        def send() -> None:
            for key, value in records:
                producer.produce(self.topic, value, key, on_delivery=delivered)

        if self.owner is not None:
            try:
                producer.transaction(send, self.commit_timeout_s, what=f"offset records in {self.topic}")
            except FencedError as exc:
                raise self._fence(exc) from exc
            return
        send()
        producer.flush(
            self.commit_timeout_s + 5,
            what=f"offset record(s) written to {self.topic}",
            hint="check the brokers are up; the previous offset is still the stored one",
        )

    # --- OffsetStore -----------------------------------------------------------------

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._replay().get((connector, partition))
        return None if record is None else dict(record.offset)

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        """Write the partition's offset; it is durable (acknowledged by every in-sync replica) on return."""
        value = record_value(offset, datetime.now(UTC))
        with self._lock:
            self._produce([(record_key(connector, partition), value)])

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        with self._lock:
            replayed = self._replay()
        return [r for key, r in sorted(replayed.items()) if connector is None or key[0] == connector]

    def delete(self, connector: str, partition: str | None = None) -> int:
        """Write a tombstone for each stored partition (or the one given); returns how many were removed."""
        with self._lock:
            keys = [
                key
                for key in sorted(self._replay())
                if key[0] == connector and (partition is None or key[1] == partition)
            ]
            self._produce([(record_key(*key), None) for key in keys])
        return len(keys)

    def close(self) -> None:
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
            if self._producer is not None:
                self._producer.wait(self.commit_timeout_s)
                self._producer = None
            self._admin = None
            self._ready = False
            self._topic_exists = False
