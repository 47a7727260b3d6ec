"""The ``kafka`` signal channel: signals as records of ``signal.kafka.topic``, keyed by ``topic.prefix``.

As in Debezium's ``KafkaSignalChannel``: a record's key must equal the
connector's ``topic.prefix`` (records for other connectors sharing the topic
are skipped), its value is a JSON object ``{"id", "type", "data": {...}}``
(``mongocdc.events.signals`` parses and writes them), and the topic has one
partition: both classes here create it so when it is missing, and
``KafkaSignalSender`` always writes to partition 0, the partition Debezium reads.

``KafkaSignalChannel`` reads with a consumer group (``signal.kafka.groupId``)
but assigns the partitions itself, never rebalancing. Where it reads from is
the task's own: ``positions`` (the next offset of each partition, from the
start on) rides in the task's offset, and ``start_at`` gives the stored one
back, so each task of a connector (one per shard) reads every signal once
whichever worker runs it, and a signal is read again only when the offset
that followed it was not committed. Without a stored position (the task's
first run, an offset written by an earlier version) it starts at the group's
committed offset (the earliest without one). The group's offsets are still
committed by ``commit()``, which the engine calls once it has handled every
signal ``poll()`` returned, for the tools that watch consumer groups.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mongocdc.events.signals import InvalidSignalError, Signal, parse_kafka_signal
from mongocdc.kafka.admin import KafkaAdmin
from mongocdc.kafka.config import DURABLE
from mongocdc.kafka.consumer import COMMITTED, KafkaConsumer
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.retry import Backoff

if TYPE_CHECKING:
    from mongocdc.config import Settings

log = logging.getLogger("mongocdc.kafka.signals")

SIGNAL_TOPIC_SUFFIX: Final = "-signal"
"""``signal.kafka.topic`` defaults to ``<topic.prefix>-signal`` (Debezium's default)."""

_SERVERS: Final = "signal.kafka.bootstrap.servers (or kafka.bootstrap.servers)"


def signal_topic(settings: Settings) -> str:
    """``signal.kafka.topic``, or ``<topic.prefix>-signal`` when it is unset (``topic.prefix`` is then required)."""
    if settings.signal_kafka_topic:
        return settings.signal_kafka_topic
    return settings.require("topic.prefix") + SIGNAL_TOPIC_SUFFIX


def _encode_key(prefix: str) -> bytes:
    return prefix.encode("utf-8")


def _endpoint(settings: Mapping[str, str]) -> Endpoint:
    return Endpoint.of(settings, servers=_SERVERS)


class KafkaSignalChannel:
    """Reads the signals addressed to one connector (record key == ``prefix``) from ``topic``.

    The consumer is created on first use (and creates the topic with one
    partition if it is missing). Records with another key or without a value
    are skipped; invalid signals (``InvalidSignalError``) are logged as warnings
    and skipped. Both are committed with the rest, as Debezium does. A signal
    without an ``id`` is named ``<topic.prefix>@<offset>``. ``settings`` are the
    librdkafka settings (``kafka.config.signal_client_config``).
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
        self._endpoint = _endpoint(settings)
        self.topic = topic
        self.group_id = group_id
        self.prefix = prefix
        self._key = _encode_key(prefix)
        self.timeout_s = timeout_s
        self._consumer: KafkaConsumer | None = None
        self._pending: dict[int, int] = {}  # partition -> next offset, read but not committed
        self._start: dict[int, int] = {}
        self._positions: dict[int, int] = {}
        self.positions: tuple[tuple[int, int], ...] | None = None
        """``(partition, next offset)`` of each partition read so far (from the open on): what the task's offset
        keeps; ``None`` until the channel is opened (by the first ``poll``)."""

    def start_at(self, positions: Mapping[int, int] | None) -> None:
        """Read each partition from this offset (the task's stored one) when the channel opens next; a partition
        without one starts at the group's committed offset."""
        self._start = dict(positions or {})

    @property
    def bootstrap(self) -> str:
        return self._endpoint.bootstrap

    def _client(self) -> KafkaConsumer:
        if self._consumer is not None:
            return self._consumer
        consumer = KafkaConsumer(
            self._settings,
            self._endpoint,
            group_id=self.group_id,
            defaults={"auto.offset.reset": "earliest", "session.timeout.ms": 10000},
            forced={"enable.auto.offset.store": False},
            purpose=f"signal topic {self.topic}",
            timeout_s=self.timeout_s,
        )
        admin = KafkaAdmin(
            self._settings, self._endpoint, purpose=f"signal topic {self.topic}", timeout_s=self.timeout_s
        )
        partitions = _ensure_topic(admin, self.topic)
        if len(partitions) > 1:
            log.warning(
                "signal topic %s has %d partitions; signals are read from all of them but only partition 0 keeps "
                "their order (Debezium reads partition 0 only): give it one partition",
                self.topic,
                len(partitions),
            )
        # Assigned, not subscribed: no rebalancing. The task's stored positions say where to start; a partition
        # without one starts at the group's committed offset, else at its beginning (auto.offset.reset earliest).
        positions = {p: self._start[p] for p in partitions if p in self._start}
        missing = [p for p in partitions if p not in positions]
        if missing:
            committed = consumer.committed(self.topic, missing)
            for p in missing:
                positions[p] = committed[p] if p in committed else consumer.watermarks(self.topic, p)[0]
        consumer.assign({(self.topic, p): positions[p] if positions[p] >= 0 else COMMITTED for p in partitions})
        self._positions = positions
        self.positions = tuple(sorted(positions.items()))
        shown = ", ".join(f"[{p}]@{o}" for p, o in sorted(positions.items()))
        log.info(
            "reading signals for %s from %s %s (%s; group %s)",
            self.prefix,
            self.topic,
            shown,
            "the task's stored position" if self._start else "the group's committed offset",
            self.group_id,
        )
        self._consumer = consumer
        return consumer

    def poll(self, timeout: float = 0.0, max_records: int = 100) -> list[Signal]:
        """The valid signals that arrived, in offset order; waits up to ``timeout`` seconds for the first record."""
        consumer = self._client()
        consumer.check()
        signals: list[Signal] = []
        for msg in consumer.consume(max_records, timeout):
            err = msg.error()
            if err is not None:
                consumer.consume_error(err, f"reading signals from {self.topic}")
                continue
            partition, offset = msg.partition() or 0, msg.offset() or 0
            self._pending[partition] = offset + 1
            self._positions[partition] = offset + 1
            self.positions = tuple(sorted(self._positions.items()))
            signal = self._decode(msg, partition, offset)
            if signal is not None:
                signals.append(signal)
        return signals

    def _decode(self, msg: Any, partition: int, offset: int) -> Signal | None:
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
        """Commit every record ``poll`` returned so far (call it once the engine handled those signals).

        A partition the group coordinator refused fails the commit (the signals are read again after a restart).
        """
        if self._consumer is None or not self._pending:
            return
        self._consumer.commit(
            {(self.topic, p): o for p, o in sorted(self._pending.items())},
            doing=f"committing the signals read from {self.topic} for group {self.group_id}",
        )
        self._pending.clear()

    def close(self) -> None:
        """Leave without committing: opened again, it reads from the position ``start_at`` gave last (the task's
        stored offset), so signals whose offset was not committed are read again."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._pending.clear()


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
        self._endpoint = _endpoint(settings)
        self.topic = topic
        self.timeout_s = timeout_s  # bounds each request to the cluster and the wait for the acknowledgement
        self._ready = False

    @property
    def bootstrap(self) -> str:
        return self._endpoint.bootstrap

    def connect(self, backoff: Backoff | None = None) -> None:
        """Reach the cluster (retrying unreachable brokers with ``backoff``) and make sure the topic exists.

        ``send`` does this itself (once, without retries) when it was not called.
        """
        admin = KafkaAdmin(self._settings, self._endpoint, purpose="signal sender", timeout_s=self.timeout_s)
        admin.reach(backoff, topic=self.topic)
        _ensure_topic(admin, self.topic)
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
        producer = KafkaProducer(
            self._settings,
            self._endpoint,
            defaults={**DURABLE, "message.timeout.ms": int(self.timeout_s * 1000)},
            purpose="signal sender",
            room_timeout_s=self.timeout_s,
        )
        written: list[tuple[int, int]] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                producer.delivery_failed(err, msg)
            else:
                written.append((msg.partition(), msg.offset()))

        producer.produce(self.topic, payload, _encode_key(prefix), 0, on_delivery=delivered)
        producer.flush(self.timeout_s + 5, what="signal", hint=self._endpoint.reach_hint())
        partition, offset = written[0]
        raw_id = parsed.get("id")
        signal_id = raw_id if isinstance(raw_id, str) and raw_id else f"{prefix}@{offset}"
        log.info("signal %s (%s) written to %s for %s", signal_id, parsed.get("type"), self.topic, prefix)
        return SentSignal(signal_id, self.topic, partition, offset)


def _ensure_topic(admin: KafkaAdmin, topic: str) -> list[int]:
    """The partitions of ``topic``, after creating it with one partition (broker replication default) if missing."""
    partitions = admin.partitions(topic)
    if partitions is not None:
        return partitions
    hint = "create it with one partition, or set signal.kafka.topic to an existing topic"
    if admin.create_topic(topic, 1, refused_hint=hint):
        log.info("created signal topic %s (1 partition)", topic)
    return admin.partitions(topic, created=True) or []
