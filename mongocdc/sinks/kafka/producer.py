"""``KafkaSink``: change events to Kafka, with an acknowledgement callback per record."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final

from mongocdc.kafka.config import DURABLE, JAVA_PARTITIONER
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.retry import Backoff

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
    """

    def __init__(self, settings: Mapping[str, str]) -> None:
        self._settings = dict(settings)
        self._endpoint = Endpoint.of(settings, servers="kafka.bootstrap.servers (or --bootstrap-servers)")
        self._producer: KafkaProducer | None = None
        self.produced = 0
        self.acknowledged = 0

    @property
    def bootstrap(self) -> str:
        return self._endpoint.bootstrap

    def _client(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = KafkaProducer(
                self._settings,
                self._endpoint,
                defaults=PRODUCER_DEFAULTS,
                note="; nothing after it was committed",
                redo=": the event is read again from the stored offset",
            )
        return self._producer

    def connect(self, backoff: Backoff, attempt_timeout_s: float = 10.0) -> None:
        """Make sure the cluster answers before anything is read from MongoDB (retries with ``backoff``)."""
        self._client().reach(backoff, timeout_s=attempt_timeout_s)

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
    ) -> None:
        """Queue one record; ``on_ack`` runs (from a later ``poll``/``flush``) once Kafka acknowledged it.

        While the producer's queue is full this serves delivery reports until there is room (or a delivery failed).
        """
        producer = self._client()
        producer.check()
        producer.produce(
            topic,
            value,
            key,
            -1 if partition is None else partition,
            headers=headers,
            on_delivery=partial(self._delivered, producer, on_ack),  # no closure per record: a report is one call
        )
        self.produced += 1
        producer.poll(0)  # a failure it serves is raised by the next call

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

    def close(self) -> None:
        self._producer = None
