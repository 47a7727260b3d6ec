"""``ConnectOffsetsTopic``: read and write a Kafka Connect worker's offsets topic as the worker does.

The record format is :mod:`mongocdc.offsets.connect`. Reading replays every partition from the
beginning to its end at the time of the read (committed records only, as a worker with exactly-once
source support reads it). Writing puts each record in the partition the worker's own producer would
pick for its key (the Java client's murmur2 partition), so the worker's log keeps one key in one
partition and compaction keeps its newest value; a write returns once every in-sync replica has it.
The topic is never created: a worker creates it, so a missing topic means a wrong name or cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongocdc.errors import UsageError
from mongocdc.events.java import default_partition
from mongocdc.kafka.config import DURABLE, NO_AUTO_CREATE
from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.offsets.connect import DEFAULT_TOPIC


class ConnectOffsetsTopic:
    """The offsets topic ``topic`` of a Connect cluster reached with the librdkafka ``settings``."""

    def __init__(self, settings: Mapping[str, Any], topic: str = DEFAULT_TOPIC, *, timeout_s: float = 30.0) -> None:
        self._settings = dict(settings)
        self.topic = topic
        self.timeout_s = timeout_s
        self._endpoint = Endpoint.of(
            settings,
            servers="--connect-bootstrap-servers (default: kafka.bootstrap.servers)",
            security="the Kafka client options (--connect-kafka KEY=VALUE)",
            access_hint=f"grant the principal read, write and describe on topic {topic}, or pass the Connect "
            "cluster's credentials with --connect-kafka sasl.username=… --connect-kafka sasl.password=…",
            refused_error=UsageError,
        )
        self._consumer: KafkaConsumer | None = None
        self._producer: KafkaProducer | None = None

    @property
    def bootstrap(self) -> str:
        return self._endpoint.bootstrap

    def __repr__(self) -> str:
        return f"ConnectOffsetsTopic(topic={self.topic!r}, bootstrap={self.bootstrap!r})"

    def _consumer_client(self) -> KafkaConsumer:
        if self._consumer is None:
            self._consumer = KafkaConsumer(
                self._settings,
                self._endpoint,
                forced={**NO_AUTO_CREATE, "isolation.level": "read_committed"},
                purpose="connect-offsets",
                timeout_s=self.timeout_s,
            )
        return self._consumer

    def _producer_client(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = KafkaProducer(
                self._settings,
                self._endpoint,
                forced={**NO_AUTO_CREATE, **DURABLE, "linger.ms": 0, "message.timeout.ms": int(self.timeout_s * 1000)},
                purpose=f"Kafka Connect offsets topic {self.topic}",
                room_timeout_s=self.timeout_s,
            )
        return self._producer

    def partitions(self) -> list[int]:
        """The topic's partitions; ``UsageError`` (exit 2) when the topic does not exist."""
        partitions = self._consumer_client().partitions(self.topic)
        if partitions is None:
            raise UsageError(
                f"there is no topic {self.topic!r} on {self.bootstrap}: no Kafka Connect offsets there",
                hint="pass the Connect workers' offset.storage.topic with --connect-offsets-topic (and their "
                "cluster with --connect-bootstrap-servers); a connector with exactly-once support may have its "
                "own offsets.storage.topic; a standalone worker keeps offsets in a file (--connect-offsets-file)",
            )
        return partitions

    def read(self) -> list[tuple[bytes | None, bytes | None, str]]:
        """Every record up to each partition's end of now, as ``(key, value, where)`` in log order."""
        consumer = self._consumer_client()
        return [
            (msg.key(), msg.value(), f"{self.topic}[{msg.partition()}]@{msg.offset()}")
            for msg in consumer.read_to_end(self.topic, self.partitions())
        ]

    def partition_for(self, key: bytes) -> int:
        """The partition a Connect worker writes ``key`` to."""
        return default_partition(key, len(self.partitions()))

    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> list[str]:
        """Write ``(key, value)`` records, each to its key's partition; returns where each one went
        (``<topic>[<partition>]@<offset>``) once every in-sync replica acknowledged it."""
        count = len(self.partitions())
        producer = self._producer_client()
        where: list[str | None] = [None] * len(records)

        def delivered(index: int) -> Any:
            def callback(err: Any, msg: Any) -> None:
                if err is not None:
                    producer.delivery_failed(err, msg)
                else:
                    where[index] = f"{msg.topic()}[{msg.partition()}]@{msg.offset()}"

            return callback

        for i, (key, value) in enumerate(records):
            producer.produce(self.topic, value, key, default_partition(key, count), on_delivery=delivered(i))
        producer.flush(
            self.timeout_s + 5,
            what=f"record(s) written to {self.topic}",
            hint="check the brokers are up; the write may or may not have happened: run the command again",
        )
        return [w for w in where if w is not None]

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            self._producer.wait(self.timeout_s)
            self._producer = None
