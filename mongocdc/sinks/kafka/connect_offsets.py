"""``ConnectOffsetsTopic``: read and write a Kafka Connect worker's offsets topic as the worker does.

The record format is :mod:`mongocdc.offsets.connect`. Reading replays every partition from the
beginning to its end at the time of the read (committed records only, as a worker with exactly-once
source support reads it). Writing puts each record in the partition the worker's own producer would
pick for its key (the Java client's murmur2 partition), so the worker's log keeps one key in one
partition and compaction keeps its newest value; a write returns once every in-sync replica has it.
The topic is never created: a worker creates it, so a missing topic means a wrong name or cluster.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from mongocdc.errors import DeliveryError, MongocdcError, UnreachableError, UsageError
from mongocdc.events.java import default_partition
from mongocdc.offsets.connect import DEFAULT_TOPIC
from mongocdc.sinks.kafka.common import client_config, describe_error, raise_for_client_error

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


class ConnectOffsetsTopic:
    """The offsets topic ``topic`` of a Connect cluster reached with the librdkafka ``settings``."""

    def __init__(self, settings: Mapping[str, Any], topic: str = DEFAULT_TOPIC, *, timeout_s: float = 30.0) -> None:
        self._settings = dict(settings)
        self.topic = topic
        self.timeout_s = timeout_s
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None

    @property
    def bootstrap(self) -> str:
        return str(self._settings.get("bootstrap.servers", ""))

    def __repr__(self) -> str:
        return f"ConnectOffsetsTopic(topic={self.topic!r}, bootstrap={self.bootstrap!r})"

    def _client(self, kind: type, **forced: Any) -> Any:
        config = client_config(self._settings)
        config.update({"allow.auto.create.topics": False, **forced})
        try:
            return kind(config)
        except KafkaException as exc:
            raise_for_client_error(exc, self.bootstrap)

    def _consumer_client(self) -> Consumer:
        if self._consumer is None:
            self._consumer = self._client(
                Consumer,
                **{
                    "group.id": f"mongocdc-connect-offsets-{uuid.uuid4()}",  # never joined: partitions are assigned
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed",
                },
            )
        return self._consumer

    def _producer_client(self) -> Producer:
        if self._producer is None:
            self._producer = self._client(
                Producer,
                **{
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 0,
                    "message.timeout.ms": int(self.timeout_s * 1000),
                },
            )
        return self._producer

    def _failed(self, exc: KafkaException | KafkaError, doing: str) -> MongocdcError:
        err = exc if isinstance(exc, KafkaError) else (exc.args[0] if exc.args else None)
        if isinstance(err, KafkaError) and err.code() in _UNREACHABLE:
            return UnreachableError(
                f"Kafka at {self.bootstrap} is unreachable while {doing}: {err.str()}",
                hint="check --connect-bootstrap-servers (default: kafka.bootstrap.servers), the Kafka client "
                "options (--connect-kafka KEY=VALUE) and that the brokers are up",
            )
        if isinstance(err, KafkaError) and err.code() in (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
            KafkaError.SASL_AUTHENTICATION_FAILED,
        ):
            return UsageError(
                f"Kafka refused {doing}: {describe_error(err)}",
                hint=f"grant the principal read, write and describe on topic {self.topic}, or pass the Connect "
                "cluster's credentials with --connect-kafka sasl.username=… --connect-kafka sasl.password=…",
            )
        detail = describe_error(err) if isinstance(err, KafkaError) else str(exc)
        return MongocdcError(f"Kafka failed while {doing}: {detail}")

    def partitions(self) -> list[int]:
        """The topic's partitions; ``UsageError`` (exit 2) when the topic does not exist."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                metadata = self._consumer_client().list_topics(self.topic, timeout=self.timeout_s)
            except KafkaException as exc:
                raise self._failed(exc, f"reading the metadata of topic {self.topic}") from exc
            info = metadata.topics.get(self.topic)
            error: KafkaError | None = info.error if info is not None else None
            if info is None or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                raise UsageError(
                    f"there is no topic {self.topic!r} on {self.bootstrap}: no Kafka Connect offsets there",
                    hint="pass the Connect workers' offset.storage.topic with --connect-offsets-topic (and their "
                    "cluster with --connect-bootstrap-servers); a connector with exactly-once support may have its "
                    "own offsets.storage.topic; a standalone worker keeps offsets in a file (--connect-offsets-file)",
                )
            if error is not None:
                raise self._failed(error, f"describing topic {self.topic}")
            if info.partitions and all(p.leader >= 0 for p in info.partitions.values()):
                return sorted(info.partitions)
            if time.monotonic() > deadline:
                raise UnreachableError(
                    f"topic {self.topic} on {self.bootstrap} has partitions without a leader",
                    hint="check the brokers hosting the topic's partitions are up",
                )
            time.sleep(0.1)

    def read(self) -> list[tuple[bytes | None, bytes | None, str]]:
        """Every record up to each partition's end of now, as ``(key, value, where)`` in log order."""
        consumer = self._consumer_client()
        ends: dict[int, int] = {}
        for p in self.partitions():
            low, high = self._watermarks(consumer, p)
            if high > low:
                ends[p] = high
        entries: list[tuple[bytes | None, bytes | None, str]] = []
        if not ends:
            return entries
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in ends])
        try:
            pending = set(ends)
            last_progress = time.monotonic()
            while pending:
                msg = consumer.poll(0.2)
                if msg is None:
                    if time.monotonic() - last_progress > self.timeout_s:
                        raise UnreachableError(
                            f"could not read topic {self.topic} on {self.bootstrap} to its end: nothing for "
                            f"{self.timeout_s:.0f} s (partitions {sorted(pending)} unfinished)",
                            hint="check the brokers are up, and that no transaction on the topic stays open",
                        )
                    continue
                last_progress = time.monotonic()
                partition = msg.partition() or 0
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard(partition)
                        continue
                    raise self._failed(err, f"reading topic {self.topic}")
                offset = msg.offset() or 0
                if partition not in pending or offset >= ends[partition]:
                    pending.discard(partition)
                    continue
                entries.append((msg.key(), msg.value(), f"{self.topic}[{partition}]@{offset}"))
                if offset + 1 >= ends[partition]:
                    pending.discard(partition)
        finally:
            consumer.unassign()
        return entries

    def _watermarks(self, consumer: Consumer, partition: int) -> tuple[int, int]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=self.timeout_s, cached=False
                )
                return int(low), int(high)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if not (isinstance(err, KafkaError) and err.code() in _SETTLING) or time.monotonic() > deadline:
                    raise self._failed(exc, f"reading the end offsets of topic {self.topic}") from exc
                time.sleep(0.1)

    def partition_for(self, key: bytes) -> int:
        """The partition a Connect worker writes ``key`` to."""
        return default_partition(key, len(self.partitions()))

    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> list[str]:
        """Write ``(key, value)`` records, each to its key's partition; returns where each one went
        (``<topic>[<partition>]@<offset>``) once every in-sync replica acknowledged it."""
        count = len(self.partitions())
        producer = self._producer_client()
        results: list[str | KafkaError | None] = [None] * len(records)

        def delivered(index: int) -> Any:
            def callback(err: KafkaError | None, msg: Message) -> None:
                results[index] = err if err is not None else f"{msg.topic()}[{msg.partition()}]@{msg.offset()}"

            return callback

        for i, (key, value) in enumerate(records):
            try:
                producer.produce(
                    self.topic, key=key, value=value, partition=default_partition(key, count), on_delivery=delivered(i)
                )
            except KafkaException as exc:
                raise DeliveryError(f"cannot write to topic {self.topic}: {exc}") from exc
        left = producer.flush(self.timeout_s + 5)
        if left:
            raise UnreachableError(
                f"Kafka at {self.bootstrap} did not acknowledge the write to {self.topic} within "
                f"{self.timeout_s:.0f} s",
                hint="check the brokers are up; the write may or may not have happened: run the command again",
            )
        where: list[str] = []
        for result in results:
            if isinstance(result, KafkaError):
                raise self._failed(result, f"writing to topic {self.topic}")
            assert result is not None
            where.append(result)
        return where

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            self._producer.flush(self.timeout_s)
            self._producer = None
