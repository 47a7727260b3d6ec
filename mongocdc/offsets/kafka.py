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
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

# The package exports these without marking them re-exported (mypy --strict: no implicit re-export).
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType  # type: ignore[attr-defined]

from mongocdc.errors import ConfigError, DeliveryError, MongocdcError, UnreachableError
from mongocdc.offsets.base import OffsetRecord
from mongocdc.retry import Backoff
from mongocdc.sinks.kafka.common import client_config, describe_error, log, raise_for_client_error

FORCED: dict[str, Any] = {
    # Never let a metadata request create the topic with the broker's defaults (not compacted).
    "allow.auto.create.topics": False,
}
PRODUCER_FORCED: dict[str, Any] = {
    **FORCED,
    # A commit is durable when it returns: idempotent, acknowledged by every in-sync replica.
    "enable.idempotence": True,
    "acks": "all",
    # The Java client's partition for a key, as a Kafka Connect worker writes offsets.
    "partitioner": "murmur2_random",
    "linger.ms": 0,
}
_UNREACHABLE_CODES = (
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError._MSG_TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
)
_SETTLING_CODES = (
    # A new topic's partitions, or a partition whose leader moves, answer these for a moment.
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
)
_TOPIC_HINT = "mongocdc creates the topic compacted when it does not exist"


def record_key(connector: str, partition: str) -> bytes:
    """The record key of a connector's partition: ``["<connector>",{"partition":"<partition>"}]``."""
    return json.dumps([connector, {"partition": partition}], separators=(",", ":"), ensure_ascii=False).encode()


def parse_key(raw: bytes | None) -> tuple[str, str] | None:
    """``(connector, partition)`` of a key written by :func:`record_key`; ``None`` for any other key."""
    if raw is None:
        return None
    try:
        key = json.loads(raw)
    except ValueError:
        return None
    if (
        isinstance(key, list)
        and len(key) == 2
        and isinstance(key[0], str)
        and isinstance(key[1], dict)
        and set(key[1]) == {"partition"}
        and isinstance(key[1]["partition"], str)
    ):
        return key[0], key[1]["partition"]
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
    called. ``settings`` is the librdkafka configuration (``Settings.kafka_client``).
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
    ) -> None:
        self._settings = dict(settings)
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout_s = timeout_s
        self.commit_timeout_s = commit_timeout_s
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._ready = False
        self._topic_exists = False
        self._lock = threading.RLock()

    @property
    def bootstrap(self) -> str:
        return str(self._settings.get("bootstrap.servers", ""))

    def __repr__(self) -> str:
        return f"KafkaOffsetStore(topic={self.topic!r}, bootstrap={self.bootstrap!r})"

    # --- clients -------------------------------------------------------------

    def _on_error(self, err: KafkaError) -> None:
        """Transient broker errors are warnings (librdkafka retries them); fatal ones surface on the call."""
        if err.fatal():
            log.error("Kafka client of the offset store failed fatally: %s", describe_error(err))
        else:
            log.warning("Kafka (offset store %s): %s", self.topic, describe_error(err))

    def _config(self, forced: Mapping[str, Any], **defaults: Any) -> dict[str, Any]:
        config = client_config(self._settings, **defaults)
        config.update(forced)
        config["error_cb"] = self._on_error
        return config

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            try:
                self._admin = AdminClient(self._config(FORCED))
            except KafkaException as exc:
                raise_for_client_error(exc, self.bootstrap)
        assert self._admin is not None
        return self._admin

    def _producer_client(self) -> Producer:
        if self._producer is None:
            config = self._config(PRODUCER_FORCED, **{"message.timeout.ms": int(self.commit_timeout_s * 1000)})
            try:
                self._producer = Producer(config)
            except KafkaException as exc:
                raise_for_client_error(exc, self.bootstrap)
        assert self._producer is not None
        return self._producer

    def _consumer_client(self) -> Consumer:
        if self._consumer is None:
            config = self._config(
                {
                    **FORCED,
                    "group.id": f"mongocdc-offsets-{uuid.uuid4()}",  # never joined: partitions are assigned
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                }
            )
            try:
                self._consumer = Consumer(config)
            except KafkaException as exc:
                raise_for_client_error(exc, self.bootstrap)
        assert self._consumer is not None
        return self._consumer

    def _kafka_failed(self, exc: KafkaException, doing: str) -> MongocdcError:
        """A ``MongocdcError`` for a failed request (unreachable → exit 4, refused → the broker's reason)."""
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError):
            if err.code() in _UNREACHABLE_CODES:
                return UnreachableError(
                    f"Kafka at {self.bootstrap} is unreachable while {doing}: {err.str()}",
                    hint="check kafka.bootstrap.servers (or --bootstrap-servers), the kafka.* security settings "
                    "and that the brokers are up",
                )
            if err.code() in (
                KafkaError.TOPIC_AUTHORIZATION_FAILED,
                KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                KafkaError.SASL_AUTHENTICATION_FAILED,
            ):
                return ConfigError(
                    f"Kafka refused {doing}: {describe_error(err)}",
                    hint=f"grant the mongocdc principal read, write, create and describe-configs on topic "
                    f"{self.topic} (offset.storage.topic), or check the kafka.sasl.* settings",
                )
            return MongocdcError(f"Kafka failed while {doing}: {describe_error(err)}")
        return MongocdcError(f"Kafka failed while {doing}: {exc}")

    # --- the topic -------------------------------------------------------------

    def connect(self, backoff: Backoff | None = None, *, create_topic: bool = True) -> None:
        """Reach the cluster (retrying with ``backoff``), then create or check the offset topic.

        With ``create_topic=False`` an absent topic reads as empty and is created by the first write
        (``offsets show`` changes nothing).
        """
        with self._lock:
            if self._ready:
                return
            admin = self._admin_client()

            def probe() -> Any:
                try:
                    return admin.list_topics(self.topic, timeout=self.timeout_s)
                except KafkaException as exc:
                    raise _KafkaUnavailableError(str(exc.args[0].str() if exc.args else exc)) from exc

            try:
                if backoff is None:
                    metadata = probe()
                else:
                    metadata = backoff.run(
                        f"connecting to Kafka at {self.bootstrap}", probe, retry_on=(_KafkaUnavailableError,)
                    )
            except _KafkaUnavailableError as exc:
                attempts = f" after {backoff.max_attempts} attempts" if backoff is not None else ""
                raise UnreachableError(
                    f"Kafka at {self.bootstrap} is unreachable{attempts}: {exc}; the offsets are in topic "
                    f"{self.topic} there",
                    hint="check kafka.bootstrap.servers (or --bootstrap-servers), the kafka.* security settings and "
                    "that the brokers are up; connect.max.attempts and connect.backoff.* tune the retries",
                ) from exc
            self._ensure_topic(metadata, create=create_topic)
            self._ready = True

    def _ensure_ready(self) -> None:
        if not self._ready:
            self.connect()

    def _ensure_topic(self, metadata: Any, *, create: bool) -> None:
        info = metadata.topics.get(self.topic)
        error: KafkaError | None = info.error if info is not None else None
        if info is None or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            if not create:
                return
            self._create_topic()
        elif error is not None:
            raise self._kafka_failed(KafkaException(error), f"describing topic {self.topic}")
        self._check_compacted()
        self._topic_exists = True

    def _create_topic(self) -> None:
        new = NewTopic(
            self.topic,
            num_partitions=self.partitions,
            replication_factor=self.replication_factor,
            config={"cleanup.policy": "compact"},
        )
        future = self._admin_client().create_topics([new], operation_timeout=self.timeout_s)[self.topic]
        try:
            future.result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return  # created meanwhile by another instance; its configuration is checked next
            if isinstance(err, KafkaError) and err.code() in (
                KafkaError.INVALID_REPLICATION_FACTOR,
                KafkaError.INVALID_PARTITIONS,
                KafkaError.POLICY_VIOLATION,
                KafkaError.INVALID_CONFIG,
            ):
                raise ConfigError(
                    f"Kafka refused to create the offset topic {self.topic} with {self.partitions} partitions and "
                    f"replication factor {self.replication_factor}: {err.str()}",
                    hint="adjust offset.storage.partitions and offset.storage.replication.factor to the cluster, "
                    "or create the topic yourself with cleanup.policy=compact",
                ) from exc
            raise self._kafka_failed(exc, f"creating topic {self.topic}") from exc
        except TimeoutError as exc:
            raise UnreachableError(
                f"Kafka at {self.bootstrap} did not create the offset topic {self.topic} within {self.timeout_s:.0f} s"
            ) from exc
        log.info(
            "created offset topic %s (compacted, %d partitions, replication factor %s)",
            self.topic,
            self.partitions,
            "broker default" if self.replication_factor == -1 else self.replication_factor,
        )
        self._wait_for_partitions()

    def _wait_for_partitions(self) -> list[int]:
        """The topic's partitions, once the metadata shows every one of them with a leader."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                metadata = self._admin_client().list_topics(self.topic, timeout=self.timeout_s)
            except KafkaException as exc:
                raise self._kafka_failed(exc, f"reading the metadata of topic {self.topic}") from exc
            info = metadata.topics.get(self.topic)
            if (
                info is not None
                and info.error is None
                and info.partitions
                and all(p.leader >= 0 for p in info.partitions.values())
            ):
                return sorted(info.partitions)
            if time.monotonic() > deadline:
                reason = info.error.str() if info is not None and info.error is not None else "no leaders yet"
                raise UnreachableError(
                    f"the offset topic {self.topic} on {self.bootstrap} is not available ({reason})",
                    hint="check the brokers hosting the topic's partitions are up",
                )
            time.sleep(0.1)

    def _check_compacted(self) -> None:
        resource = ConfigResource(ResourceType.TOPIC, self.topic)
        future = self._admin_client().describe_configs([resource], request_timeout=self.timeout_s)[resource]
        try:
            entries: dict[str, Any] = future.result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            raise self._kafka_failed(exc, f"describing the configuration of topic {self.topic}") from exc
        except TimeoutError as exc:
            raise UnreachableError(
                f"Kafka at {self.bootstrap} did not describe topic {self.topic} within {self.timeout_s:.0f} s"
            ) from exc
        entry = entries.get("cleanup.policy")
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
        consumer = self._consumer_client()
        ends = {p: high for p, (low, high) in self._watermarks(consumer).items() if high > low}
        if not ends:
            return {}
        latest: dict[tuple[str, str], _Latest] = {}
        foreign = 0
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in ends])
        try:
            pending = set(ends)
            last_progress = time.monotonic()
            while pending:
                msg = consumer.poll(0.2)
                if msg is None:
                    if time.monotonic() - last_progress > self.timeout_s:
                        raise UnreachableError(
                            f"could not read the offset topic {self.topic} on {self.bootstrap} to its end: no "
                            f"record for {self.timeout_s:.0f} s (partitions {sorted(pending)} unfinished)",
                            hint="check the brokers hosting the topic's partitions are up",
                        )
                    continue
                last_progress = time.monotonic()
                partition = msg.partition() or 0
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard(partition)
                        continue
                    raise self._kafka_failed(KafkaException(err), f"reading topic {self.topic}")
                offset = msg.offset() or 0
                if partition not in ends or offset >= ends[partition]:
                    pending.discard(partition)  # written after the read started
                    continue
                if offset + 1 >= ends[partition]:
                    pending.discard(partition)
                key = parse_key(msg.key())
                if key is None:
                    foreign += 1
                    continue
                _, timestamp_ms = msg.timestamp()
                seen = latest.get(key)
                # Offsets order one partition; across partitions (the topic grew) the later write wins.
                if seen is None or seen.partition == partition or timestamp_ms >= seen.timestamp_ms:
                    latest[key] = _Latest(partition, timestamp_ms, msg.value())
        finally:
            consumer.unassign()
        if foreign:
            log.debug("offset topic %s: skipped %d records whose key mongocdc did not write", self.topic, foreign)
        return self._decode(latest)

    def _watermarks(self, consumer: Consumer) -> dict[int, tuple[int, int]]:
        """Low and high watermark of each partition, asked of the leaders (retried while leadership settles)."""
        marks: dict[int, tuple[int, int]] = {}
        deadline = time.monotonic() + self.timeout_s
        for p in self._wait_for_partitions():
            while True:
                try:
                    marks[p] = consumer.get_watermark_offsets(
                        TopicPartition(self.topic, p), timeout=self.timeout_s, cached=False
                    )
                    break
                except KafkaException as exc:
                    err = exc.args[0] if exc.args else None
                    settling = isinstance(err, KafkaError) and err.code() in _SETTLING_CODES
                    if not settling or time.monotonic() > deadline:
                        raise self._kafka_failed(exc, f"reading the end offsets of topic {self.topic}") from exc
                    time.sleep(0.1)
        return marks

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
        self._ensure_ready()
        if not self._topic_exists:
            self._create_topic()
            self._check_compacted()
            self._topic_exists = True
        producer = self._producer_client()
        failures: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                failures.append(err)

        for key, value in records:
            try:
                producer.produce(self.topic, key=key, value=value, on_delivery=delivered)
            except BufferError:
                producer.flush(self.commit_timeout_s)
                producer.produce(self.topic, key=key, value=value, on_delivery=delivered)
            except KafkaException as exc:
                raise DeliveryError(f"cannot write to the offset topic {self.topic}: {exc}") from exc
        left = producer.flush(self.commit_timeout_s + 5)
        if left:
            raise UnreachableError(
                f"Kafka at {self.bootstrap} did not acknowledge the offset write to {self.topic} within "
                f"{self.commit_timeout_s:.0f} s",
                hint="check the brokers are up; the previous offset is still the stored one",
            )
        if failures:
            err = failures[0]
            if err.code() in _UNREACHABLE_CODES:
                raise UnreachableError(
                    f"Kafka at {self.bootstrap} did not acknowledge the offset write to {self.topic}: {err.str()}",
                    hint="check the brokers are up; the previous offset is still the stored one",
                )
            raise DeliveryError(f"Kafka rejected the offset write to {self.topic}: {describe_error(err)}")

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
                with contextlib.suppress(KafkaException, RuntimeError):
                    self._consumer.close()
                self._consumer = None
            if self._producer is not None:
                self._producer.flush(self.commit_timeout_s)
                self._producer = None
            self._admin = None
            self._ready = False
            self._topic_exists = False


class _KafkaUnavailableError(Exception):
    pass
