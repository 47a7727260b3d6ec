"""``KafkaSink``: a thin, typed wrapper over confluent-kafka's idempotent producer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from mongocdc.errors import DeliveryError, OversizedEventError, UnreachableError
from mongocdc.retry import Backoff
from mongocdc.sinks.kafka.common import client_config, describe_error, log, raise_for_client_error

AckCallback = Callable[[], None]
"""Called once Kafka acknowledged the record it was given with."""

PRODUCER_DEFAULTS: dict[str, Any] = {
    "enable.idempotence": True,
    "acks": "all",
    # Same partition for a key as the Java client's default partitioner.
    "partitioner": "murmur2_random",
    "linger.ms": 5,
    "compression.type": "none",
}


class KafkaSink:
    """Produces records and reports, per record, when Kafka acknowledged it.

    The producer is created on first use. Transient broker errors are logged
    as warnings (librdkafka retries them); fatal errors and rejected records
    are kept and raised from the next call as a ``DeliveryError``.
    """

    def __init__(self, settings: Mapping[str, str]) -> None:
        self._settings = dict(settings)
        self._producer: Producer | None = None
        self._failure: DeliveryError | None = None
        self._lock = threading.Lock()
        self.produced = 0
        self.acknowledged = 0

    @property
    def bootstrap(self) -> str:
        return str(self._settings.get("bootstrap.servers", ""))

    def _client(self) -> Producer:
        if self._producer is None:
            config = client_config(self._settings, **PRODUCER_DEFAULTS)
            config["error_cb"] = self._on_error
            try:
                self._producer = Producer(config)
            except KafkaException as exc:
                raise_for_client_error(exc, self.bootstrap)
        assert self._producer is not None
        return self._producer

    def connect(self, backoff: Backoff, attempt_timeout_s: float = 10.0) -> None:
        """Make sure the cluster answers before anything is read from MongoDB (retries with ``backoff``)."""
        producer = self._client()

        def probe() -> None:
            try:
                producer.list_topics(timeout=attempt_timeout_s)
            except KafkaException as exc:
                raise _KafkaUnavailableError(str(exc.args[0].str() if exc.args else exc)) from exc

        try:
            backoff.run(f"connecting to Kafka at {self.bootstrap}", probe, retry_on=(_KafkaUnavailableError,))
        except _KafkaUnavailableError as exc:
            raise UnreachableError(
                f"Kafka at {self.bootstrap} is unreachable after {backoff.max_attempts} attempts: {exc}",
                hint="check kafka.bootstrap.servers (or --bootstrap-servers), the kafka.* security settings and "
                "that the brokers are up; connect.max.attempts and connect.backoff.* tune the retries",
            ) from exc

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self._fail(DeliveryError(f"Kafka producer failed fatally: {describe_error(err)}"))
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            log.warning("all Kafka brokers at %s are down; retrying: %s", self.bootstrap, err.str())
        else:
            log.warning("Kafka: %s", describe_error(err))

    def _fail(self, error: DeliveryError) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = error

    def check(self) -> None:
        """Raise the first delivery failure seen, if any."""
        if self._failure is not None:
            raise self._failure

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
        """Queue one record; ``on_ack`` runs (from a later ``poll``/``flush``) once Kafka acknowledged it."""
        self.check()
        producer = self._client()

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                self._fail(self._delivery_error(err, msg))
                return
            self.acknowledged += 1
            if on_ack is not None:
                on_ack()

        while True:
            try:
                if partition is None:
                    producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered)
                else:
                    producer.produce(
                        topic, value=value, key=key, headers=headers, partition=partition, on_delivery=delivered
                    )
                break
            except BufferError:
                # Local queue full: serve delivery reports until there is room.
                producer.poll(0.1)
                self.check()
            except KafkaException as exc:
                err = exc.args[0]
                if isinstance(err, KafkaError) and err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                    raise OversizedEventError(
                        f"the event for key {_show_key(key)} in {topic} is {len(value or b'')} bytes, "
                        f"more than Kafka accepts ({err.str()}); nothing after it was committed",
                        hint="raise kafka.message.max.bytes and the topic's max.message.bytes (and the broker's "
                        "message.max.bytes), then start again: the event is read again from the stored offset",
                    ) from exc
                raise DeliveryError(f"cannot produce to {topic}: {exc}") from exc
        self.produced += 1
        producer.poll(0)

    @staticmethod
    def _delivery_error(err: KafkaError, msg: Message) -> DeliveryError:
        where = f"{msg.topic()} (key {_show_key(msg.key())})"
        if err.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
            return OversizedEventError(
                f"Kafka rejected an event for {where} as too large: {err.str()}",
                hint="raise the topic's max.message.bytes and kafka.message.max.bytes",
            )
        if err.code() == KafkaError._MSG_TIMED_OUT:
            return UnreachableDeliveryError(f"Kafka did not acknowledge an event for {where} in time: {err.str()}")
        return DeliveryError(f"Kafka rejected an event for {where}: {describe_error(err)}")

    def poll(self, timeout: float = 0.0) -> None:
        """Serve delivery reports."""
        if self._producer is not None:
            self._producer.poll(timeout)
        self.check()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued record is acknowledged (or failed); raise on failure or timeout."""
        if self._producer is None:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            left = self._producer.flush(remaining)
            self.check()
            if left == 0:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise UnreachableError(
                    f"Kafka at {self.bootstrap} did not acknowledge {left} events within {timeout:.0f} s",
                    hint="check the brokers; nothing past the last acknowledged event was committed",
                )

    def close(self) -> None:
        self._producer = None


def _show_key(key: bytes | str | None) -> str:
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    return str(key)


class _KafkaUnavailableError(Exception):
    pass


class UnreachableDeliveryError(DeliveryError):
    exit_code = UnreachableError.exit_code
