"""``KafkaSink``: change events to Kafka, with an acknowledgement callback per record."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, Final

from mongocdc.config.topic_creation import TopicCreation
from mongocdc.errors import ConfigError, FencedError, TransformFailedError, UnreachableError
from mongocdc.events.connect.chain import Output, RecordPipeline
from mongocdc.events.connect.data import DataError
from mongocdc.events.model import ChangeEvent
from mongocdc.kafka.admin import KafkaAdmin
from mongocdc.kafka.config import DURABLE, JAVA_PARTITIONER
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.sink")

AckCallback = Callable[[], None]
"""Called once Kafka acknowledged the record it was given with."""

PRODUCER_DEFAULTS: Final[dict[str, Any]] = {
    **DURABLE,
    # Same partition for a key as the Java client's default partitioner.
    **JAVA_PARTITIONER,
    "linger.ms": 5,
    "compression.type": "none",
}


class KafkaSink:
    """Produces records and reports, per record, when Kafka acknowledged it.

    The producer (idempotent, ``acks=all``, the Java client's partitioner; the user's ``kafka.*`` keys win)
    is created on first use. Transient broker errors are logged as warnings (librdkafka retries them);
    fatal errors and rejected records are kept and raised from the next call as a ``DeliveryError``.

    Before the first record to a topic, the topic is looked up as Kafka Connect's source tasks do: one that
    exists is used; a missing one is created by the admin client with its ``creation`` group's settings
    (``topic.creation.*``); without ``creation`` it is left to the broker's auto-creation, or refused at once
    (``ConfigError``, exit 3) when the broker has ``auto.create.topics.enable=false``. ``admin_settings`` are
    the admin client's librdkafka settings (the producer's when not given); ``timeout_s`` bounds its requests.
    """

    def __init__(
        self,
        settings: Mapping[str, str],
        *,
        creation: TopicCreation | None = None,
        admin_settings: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        transactional_id: str | None = None,
        transaction_timeout_s: float = 60.0,
        records: RecordPipeline | None = None,
    ) -> None:
        self._settings = dict(settings)
        self.records = records
        """The connector's transforms and converters (``None``: records are produced as the codec wrote them)."""
        self.transactional_id = transactional_id
        self._transaction_timeout_s = transaction_timeout_s
        self._transaction_lock = threading.Lock()
        self._in_transaction = False
        self.transaction_records = 0
        """Records produced in the open transaction (0 when none is open)."""
        self._endpoint = Endpoint.of(settings, servers="kafka.bootstrap.servers (or --bootstrap-servers)")
        self._producer: KafkaProducer | None = None
        self._creation = creation
        self._admin_settings = dict(admin_settings if admin_settings is not None else settings)
        self._admin: KafkaAdmin | None = None
        self._timeout_s = timeout_s
        self._topics: set[str] = set()
        """Topics known to exist (or left to the broker to create): checked once each."""
        self._topics_lock = threading.Lock()
        self.produced = 0
        self.acknowledged = 0
        self.dropped = 0
        """Records a transform dropped (acknowledged without being produced)."""

    @property
    def bootstrap(self) -> str:
        return self._endpoint.bootstrap

    def _client(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = KafkaProducer(
                self._settings,
                self._endpoint,
                defaults=PRODUCER_DEFAULTS,
                forced=None if self.transactional_id is None else {"transactional.id": self.transactional_id},
                note="; nothing after it was committed",
                redo=": the event is read again from the stored offset",
            )
        return self._producer

    def connect(self, backoff: Backoff, attempt_timeout_s: float = 10.0) -> None:
        """Make sure the cluster answers before anything is read from MongoDB (retries with ``backoff``)."""
        producer = self._client()
        producer.reach(backoff, timeout_s=attempt_timeout_s)
        if self.transactional_id is not None:
            # Fences the producer of an older owner of this id: its next transactional request fails.
            backoff.run(
                f"registering transactional.id {self.transactional_id} at {self._endpoint.where}",
                lambda: producer.init_transactions(self._transaction_timeout_s),
                retry_on=(UnreachableError,),
            )

    def check(self) -> None:
        """Raise the first delivery failure seen, if any."""
        if self._producer is not None:
            self._producer.check()

    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        headers: list[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
        on_ack: AckCallback | None = None,
        converted: bool = False,
    ) -> bool:
        """Queue one record; ``on_ack`` runs (from a later ``poll``/``flush``) once Kafka acknowledged it. Returns
        whether it was queued (``False``: a transform dropped it).

        With a record pipeline (:attr:`records`), the record, as the codec wrote it with its schemas, first goes
        through the connector's transforms and converters, as Kafka Connect's would: what comes out is produced
        (to the topic and partition a transform chose), and a record a transform dropped is acknowledged at once,
        so its position is committed as a delivered one's would be (Connect commits the offsets of filtered
        records too). A record the chain cannot handle raises ``TransformFailedError`` (exit 3).

        ``converted``: ``key`` and ``value`` are what the chain writes already (:meth:`fused_record`).

        While the producer's queue is full this serves delivery reports until there is room (or a delivery failed).
        """
        if self.records is not None and not converted:
            output = self._transformed(topic, key, value, headers, partition)
            if output is None:
                self.dropped += 1
                if on_ack is not None:
                    on_ack()
                return False
            topic, key, value, headers, partition = (
                output.topic,
                output.key,
                output.value,
                output.headers,
                output.partition,
            )
        producer = self._client()
        producer.check()
        if topic not in self._topics:
            self._ensure_topic(topic)
        if self.transactional_id is not None:
            self._begin()
        try:
            producer.produce(
                topic,
                value,
                key,
                -1 if partition is None else partition,
                headers=headers,
                on_delivery=partial(self._delivered, producer, on_ack),  # no closure per record: a report is one call
            )
        except FencedError as exc:
            raise self._fenced(exc) from exc
        self.produced += 1
        producer.poll(0)  # a failure it serves is raised by the next call
        return True

    def fused_record(self, topic: str, event: ChangeEvent) -> tuple[bytes, bytes] | None:
        """A change's key and value as the connector's chain writes them, when the chain's fused writer writes this
        change straight from the event (``ExtractNewDocumentState`` alone: ``RecordPipeline.fused_record``); produce
        them with ``converted=True``. ``None``: encode the record with the codec and :meth:`produce` it."""
        records = self.records
        if records is None or event.after is None:
            return None
        return records.for_this_thread().fused_record(topic, event.key_json, event.after)

    def _transformed(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, str | bytes | None]] | None,
        partition: int | None,
    ) -> Output | None:
        assert self.records is not None
        try:
            return self.records.for_this_thread().process(topic, key, value, headers, partition)
        except DataError as exc:
            raise TransformFailedError.of(self.records, topic, key, exc) from exc

    def _admin_client(self) -> KafkaAdmin:
        if self._admin is None:
            self._admin = KafkaAdmin(
                self._admin_settings, self._endpoint, purpose="topic creation", timeout_s=self._timeout_s
            )
        return self._admin

    def _not_created(self, topics: list[str]) -> ConfigError:
        """The topics are missing and nothing will create them: exit 3 naming them and both fixes."""
        named = ", ".join(topics)
        many = len(topics) > 1
        return ConfigError(
            f"topic{'s' if many else ''} {named} {'do' if many else 'does'} not exist and {self._endpoint.where} "
            "does not create topics on the first record (auto.create.topics.enable=false)",
            hint=f"create {'them' if many else 'it'} (kafka-topics.sh --bootstrap-server {self.bootstrap} --create "
            f"--topic {topics[0]}{', …' if many else ''}), or have mongocdc create its topics, as Kafka Connect does: "
            "set topic.creation.default.replication.factor and topic.creation.default.partitions (-1 takes the "
            "broker's default)",
        )

    def require_topics(self, topics: Iterable[str]) -> None:
        """Before anything is read: without ``creation``, refuse at once the ``topics`` (known at start) that do not
        exist on a broker that will not create them, naming every one (with ``creation`` each is created lazily,
        before its first record, as Kafka Connect does)."""
        if self._creation is not None:
            return
        wanted = list(dict.fromkeys(topics))
        with self._topics_lock:
            admin = self._admin_client()
            existing = admin.topics()
            missing = [topic for topic in wanted if topic not in existing]
            if missing and admin.broker_config("auto.create.topics.enable") == "false":
                raise self._not_created(missing)
            self._topics.update(wanted)

    def _ensure_topic(self, topic: str) -> None:
        """Make sure ``topic`` exists, or will be created by the broker (see the class docstring)."""
        with self._topics_lock:
            if topic in self._topics:
                return
            admin = self._admin_client()
            if not admin.topic_exists(topic):
                if self._creation is not None:
                    group = self._creation.group_for(topic)
                    created = admin.create_topic(
                        topic,
                        group.partitions,
                        replication_factor=group.replication_factor,
                        configs=group.configs,
                        refused_hint=f"adjust the topic.creation.{group.name}.* settings to the cluster, or create "
                        f"topic {topic} yourself",
                    )
                    if created:
                        log.info("created topic %s (topic.creation %s)", topic, group.describe())
                elif admin.broker_config("auto.create.topics.enable") == "false":
                    raise self._not_created([topic])
            self._topics.add(topic)

    def _delivered(self, producer: KafkaProducer, on_ack: AckCallback | None, err: Any, msg: Any) -> None:
        """A record's delivery report: a failure is kept for the next call, an acknowledgement counted and passed on."""
        if err is not None:
            producer.delivery_failed(err, msg)
            return
        self.acknowledged += 1
        if on_ack is not None:
            on_ack()

    def poll(self, timeout: float = 0.0) -> None:
        """Serve delivery reports."""
        if self._producer is not None:
            self._producer.poll(timeout)
            self._producer.check()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued record is acknowledged (or failed); raise on failure or timeout."""
        if self._producer is not None:
            self._producer.flush(
                timeout, what="events", hint="check the brokers; nothing past the last acknowledged event was committed"
            )

    # --- transactions (``transactional_id``) ----------------------------------------------

    def _begin(self) -> None:
        """Open a transaction unless one is open; count the record about to be produced in it."""
        with self._transaction_lock:
            if not self._in_transaction:
                try:
                    self._client().begin_transaction()
                except FencedError as exc:
                    raise self._fenced(exc) from exc
                self._in_transaction = True
            self.transaction_records += 1

    def _fenced(self, exc: FencedError) -> FencedError:
        return FencedError(
            f"the task's producer (transactional.id {self.transactional_id}) was fenced: another instance of the "
            f"connector took the task over; this one stops, and what it produced since its last commit is aborted "
            f"({exc.message})",
            hint="run one instance per connector: stop the other one before starting this one again, or give one of "
            "them another name",
        )

    def commit_transaction(self, records: Iterable[tuple[str, bytes, bytes | None]] = ()) -> int:
        """Produce ``records`` (``(topic, key, value)``: the offset record) in the open transaction and commit it
        with every record produced since the last commit; returns how many records it held. The caller makes
        sure no other thread produces meanwhile."""
        assert self.transactional_id is not None, "a transactional sink only"
        producer = self._client()
        try:
            for topic, key, value in records:
                self._begin()
                producer.produce(topic, value, key)
        except FencedError as exc:
            raise self._fenced(exc) from exc
        with self._transaction_lock:
            if not self._in_transaction:
                return 0
            held = self.transaction_records
            self._in_transaction = False
            self.transaction_records = 0
        try:
            producer.commit_transaction(self._transaction_timeout_s, what=f"{held} records")
        except FencedError as exc:
            raise self._fenced(exc) from exc
        return held

    def abort_transaction(self) -> None:
        """Abort the open transaction, if any: a ``read_committed`` consumer never sees its records."""
        if self.transactional_id is None or self._producer is None:
            return
        with self._transaction_lock:
            if not self._in_transaction:
                return
            self._in_transaction = False
            self.transaction_records = 0
        self._producer.abort_transaction(self._transaction_timeout_s)

    def close(self) -> None:
        self._producer = None
