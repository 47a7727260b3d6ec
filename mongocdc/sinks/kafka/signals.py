"""The ``kafka`` signal channel: signals as records of ``signal.kafka.topic``, keyed by ``topic.prefix``.

As in Debezium's ``KafkaSignalChannel``: a record's key must equal the
connector's ``topic.prefix`` (records for other connectors sharing the topic
are skipped), its value is a JSON object ``{"id", "type", "data": {...}}``
(``mongocdc.events.signals`` parses and writes them), and the topic has one
partition: both classes here create it so when it is missing, and
``KafkaSignalSender`` always writes to partition 0, the partition Debezium reads.

``KafkaSignalChannel`` reads with a consumer group (``signal.kafka.groupId``)
but assigns the partitions itself, never rebalancing. Offsets are committed
only by ``commit()``, which the engine calls once it has handled every signal
``poll()`` returned: a signal read but not handled before a crash is read again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from mongocdc.errors import ConfigError, DeliveryError, MongocdcError, UnreachableError
from mongocdc.events.signals import InvalidSignalError, Signal, parse_kafka_signal
from mongocdc.retry import Backoff
from mongocdc.sinks.kafka.common import client_config, describe_error, raise_for_client_error

if TYPE_CHECKING:
    from mongocdc.config import Settings

log = logging.getLogger("mongocdc.kafka.signals")

SIGNAL_TOPIC_SUFFIX: Final = "-signal"
"""``signal.kafka.topic`` defaults to ``<topic.prefix>-signal`` (Debezium's default)."""

_NOT_YET: Final = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC)
_BROKERS_HINT: Final = "check signal.kafka.bootstrap.servers (or kafka.bootstrap.servers) and that the brokers are up"
_TRANSIENT: Final = (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT)


def signal_topic(settings: Settings) -> str:
    """``signal.kafka.topic``, or ``<topic.prefix>-signal`` when it is unset (``topic.prefix`` is then required)."""
    if settings.signal_kafka_topic:
        return settings.signal_kafka_topic
    return settings.require("topic.prefix") + SIGNAL_TOPIC_SUFFIX


def signal_client_config(settings: Settings) -> dict[str, str]:
    """librdkafka settings of the signal clients: the ``kafka.*`` keys, ``signal.kafka.bootstrap.servers`` first."""
    config = dict(settings.kafka_client)
    if settings.signal_kafka_bootstrap_servers:
        config["bootstrap.servers"] = settings.signal_kafka_bootstrap_servers
    return config


def _encode_key(prefix: str) -> bytes:
    return prefix.encode("utf-8")


class KafkaSignalChannel:
    """Reads the signals addressed to one connector (record key == ``prefix``) from ``topic``.

    The consumer is created on first use (and creates the topic with one
    partition if it is missing). Records with another key or without a value
    are skipped; invalid signals (``InvalidSignalError``) are logged as warnings
    and skipped. Both are committed with the rest, as Debezium does. A signal
    without an ``id`` is named ``<topic.prefix>@<offset>``.
    """

    def __init__(
        self,
        settings: Mapping[str, str],
        topic: str,
        group_id: str,
        prefix: str,
        *,
        timeout_s: float = 10.0,
    ) -> None:
        self._settings = dict(settings)
        self.topic = topic
        self.group_id = group_id
        self.prefix = prefix
        self._key = _encode_key(prefix)
        self.timeout_s = timeout_s
        self._consumer: Consumer | None = None
        self._pending: dict[int, int] = {}  # partition -> next offset, read but not committed
        self._fatal: MongocdcError | None = None

    @property
    def bootstrap(self) -> str:
        return str(self._settings.get("bootstrap.servers", ""))

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self._fatal = MongocdcError(f"the Kafka signal consumer failed fatally: {describe_error(err)}")
        else:
            log.warning("Kafka (signal topic %s): %s", self.topic, describe_error(err))

    def _client(self) -> Consumer:
        if self._consumer is not None:
            return self._consumer
        config = client_config(
            self._settings,
            **{
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
            },
        )
        config.update(
            {
                "group.id": self.group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "error_cb": self._on_error,
            }
        )
        try:
            consumer = Consumer(config)
        except KafkaException as exc:
            raise_for_client_error(exc, self.bootstrap)
        partitions = _ensure_topic(self._settings, self.topic, self.timeout_s)
        if len(partitions) > 1:
            log.warning(
                "signal topic %s has %d partitions; signals are read from all of them but only partition 0 keeps "
                "their order (Debezium reads partition 0 only): give it one partition",
                self.topic,
                len(partitions),
            )
        # Assigned, not subscribed: no rebalancing; the group's committed offsets say where to start.
        consumer.assign([TopicPartition(self.topic, p) for p in partitions])
        log.info("reading signals for %s from %s (group %s)", self.prefix, self.topic, self.group_id)
        self._consumer = consumer
        return consumer

    def poll(self, timeout: float = 0.0, max_records: int = 100) -> list[Signal]:
        """The valid signals that arrived, in offset order; waits up to ``timeout`` seconds for the first record."""
        consumer = self._client()
        if self._fatal is not None:
            raise self._fatal
        signals: list[Signal] = []
        for msg in consumer.consume(num_messages=max_records, timeout=timeout):
            err = msg.error()
            if err is not None:
                self._on_message_error(err)
                continue
            partition, offset = msg.partition() or 0, msg.offset() or 0
            self._pending[partition] = offset + 1
            signal = self._decode(msg, partition, offset)
            if signal is not None:
                signals.append(signal)
        return signals

    def _on_message_error(self, err: KafkaError) -> None:
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.code() in _NOT_YET:
            log.debug("signal topic %s is not available yet: %s", self.topic, err.str())
        elif err.code() in _TRANSIENT:
            log.warning("Kafka at %s (signal topic %s): %s; retrying", self.bootstrap, self.topic, err.str())
        elif err.fatal():
            raise MongocdcError(f"reading signals from {self.topic}: {describe_error(err)}")
        else:
            log.warning("reading signals from %s: %s", self.topic, describe_error(err))

    def _decode(self, msg: Message, partition: int, offset: int) -> Signal | None:
        where = f"{self.topic}[{partition}]@{offset}"
        key = msg.key()
        if key != self._key:
            shown = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
            log.debug(
                "skipping record %s: its key %r is not this connector's topic.prefix %r", where, shown, self.prefix
            )
            return None
        try:
            signal = parse_kafka_signal(key, msg.value(), topic_prefix=self.prefix, offset=offset)
        except InvalidSignalError as exc:
            log.warning("skipping the signal at %s: %s", where, exc.message)
            return None
        if signal is None:
            log.warning("skipping the record at %s: it has no value", where)
        return signal

    def commit(self) -> None:
        """Commit every record ``poll`` returned so far (call it once the engine handled those signals)."""
        if self._consumer is None or not self._pending:
            return
        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(self._pending.items())]
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError._NO_OFFSET:
                return
            raise UnreachableError(
                f"could not commit the signals read from {self.topic} for group {self.group_id}: {exc}",
                hint="the signals will be read again after a restart; check the brokers",
            ) from exc
        self._pending.clear()

    def close(self) -> None:
        """Leave without committing: signals returned by ``poll`` but not ``commit``-ted are read again next time."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


@dataclass(frozen=True, slots=True)
class SentSignal:
    """Where ``KafkaSignalSender.send`` wrote a signal, once Kafka acknowledged it."""

    id: str
    topic: str
    partition: int
    offset: int


class KafkaSignalSender:
    """Writes signal records to ``topic`` (key = the connector's ``topic.prefix``) and waits for Kafka's ack.

    The topic is created with one partition when it does not exist (as
    Debezium requires); records always go to partition 0.
    """

    def __init__(self, settings: Mapping[str, str], topic: str, *, timeout_s: float = 30.0) -> None:
        self._settings = dict(settings)
        self.topic = topic
        self.timeout_s = timeout_s  # bounds each request to the cluster and the wait for the acknowledgement
        self._ready = False

    @property
    def bootstrap(self) -> str:
        return str(self._settings.get("bootstrap.servers", ""))

    def connect(self, backoff: Backoff | None = None) -> None:
        """Reach the cluster and make sure the topic exists, retrying unreachable brokers with ``backoff``.

        ``send`` does this itself (once, without retries) when it was not called.
        """

        def attempt() -> None:
            _ensure_topic(self._settings, self.topic, self.timeout_s)

        if backoff is None:
            attempt()
        else:
            try:
                backoff.run(f"connecting to Kafka at {self.bootstrap}", attempt, retry_on=(UnreachableError,))
            except UnreachableError as exc:
                raise UnreachableError(
                    f"Kafka at {self.bootstrap} is unreachable after {backoff.max_attempts} attempts: {exc.message}",
                    hint=_BROKERS_HINT + "; connect.max.attempts and connect.backoff.* tune the retries",
                ) from exc
        self._ready = True

    def send(self, prefix: str, value: str | bytes | Mapping[str, Any]) -> SentSignal:
        """Produce one signal record keyed ``prefix``; return its id and position once Kafka acknowledged it.

        ``value`` is the record value: JSON text (``serialize_kafka_signal(...).value``)
        or a JSON-serialisable mapping. The id is the value's ``"id"``, else
        ``<prefix>@<offset>`` (how the connector names such a signal). Raises
        ``UnreachableError`` when Kafka does not acknowledge it in time,
        ``DeliveryError`` when Kafka refuses it.
        """
        if isinstance(value, Mapping):
            payload = json.dumps(dict(value), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        else:
            payload = value.encode("utf-8") if isinstance(value, str) else value
        try:
            parsed = json.loads(payload)
        except ValueError as exc:
            raise ValueError(f"a signal record value must be a JSON object: {exc}") from None
        if not isinstance(parsed, dict):
            raise ValueError("a signal record value must be a JSON object")
        if not self._ready:
            self.connect()
        config = client_config(
            self._settings,
            **{"acks": "all", "enable.idempotence": True, "message.timeout.ms": int(self.timeout_s * 1000)},
        )
        try:
            producer = Producer(config)
        except KafkaException as exc:
            raise_for_client_error(exc, self.bootstrap)
        outcome: dict[str, Any] = {}

        def delivered(err: KafkaError | None, msg: Message) -> None:
            outcome["error"] = err
            outcome["partition"] = msg.partition()
            outcome["offset"] = msg.offset()

        try:
            producer.produce(self.topic, key=_encode_key(prefix), value=payload, partition=0, on_delivery=delivered)
        except KafkaException as exc:
            raise DeliveryError(f"cannot produce the signal to {self.topic}: {exc}") from exc
        deadline = time.monotonic() + self.timeout_s + 5
        while not outcome and time.monotonic() < deadline:
            producer.flush(min(1.0, max(0.0, deadline - time.monotonic())))
        if not outcome:
            raise UnreachableError(
                f"Kafka at {self.bootstrap} did not acknowledge the signal within {self.timeout_s:.0f} s",
                hint=_BROKERS_HINT,
            )
        err = outcome["error"]
        if err is not None:
            if err.code() == KafkaError._MSG_TIMED_OUT:
                raise UnreachableError(
                    f"Kafka at {self.bootstrap} did not acknowledge the signal to {self.topic}: {err.str()}",
                    hint=_BROKERS_HINT,
                )
            raise DeliveryError(f"Kafka refused the signal to {self.topic}: {describe_error(err)}")
        partition, offset = int(outcome["partition"]), int(outcome["offset"])
        raw_id = parsed.get("id")
        signal_id = raw_id if isinstance(raw_id, str) and raw_id else f"{prefix}@{offset}"
        log.info("signal %s (%s) written to %s for %s", signal_id, parsed.get("type"), self.topic, prefix)
        return SentSignal(signal_id, self.topic, partition, offset)


def _ensure_topic(settings: Mapping[str, str], topic: str, timeout_s: float) -> list[int]:
    """The partitions of ``topic``, after creating it with one partition (broker replication default) if missing."""
    bootstrap = str(settings.get("bootstrap.servers", ""))
    try:
        admin = AdminClient(client_config(settings))
        metadata = admin.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        raise_for_client_error(exc, bootstrap)
    info = metadata.topics.get(topic)
    error = info.error if info is not None else None
    if info is not None and error is None and info.partitions:
        return sorted(info.partitions)
    if error is not None and error.code() not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE):
        raise MongocdcError(f"describing the signal topic {topic}: {describe_error(error)}")
    future = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=-1)])[topic]
    try:
        future.result(timeout=timeout_s)
        log.info("created signal topic %s (1 partition)", topic)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if not (isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS):
            reason = err.str() if isinstance(err, KafkaError) else str(exc)
            raise ConfigError(
                f"the signal topic {topic} does not exist and Kafka refused to create it: {reason}",
                hint="create it with one partition, or set signal.kafka.topic to an existing topic",
            ) from exc
    except TimeoutError as exc:
        raise UnreachableError(
            f"Kafka at {bootstrap} did not create the signal topic {topic} within {timeout_s:.0f} s"
        ) from exc
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            info = admin.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except KafkaException as exc:
            raise_for_client_error(exc, bootstrap)
        partitions = info.partitions if info is not None and info.error is None else {}
        if partitions and all(p.leader >= 0 for p in partitions.values()):
            return sorted(partitions)
        time.sleep(0.1)
    raise UnreachableError(f"the signal topic {topic} has no partition leader after {timeout_s:.0f} s")
