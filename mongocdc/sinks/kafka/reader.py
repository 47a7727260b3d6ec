"""``TopicReader``: reads a topic from the beginning, an offset or a time (``topic dump``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from mongocdc.errors import MongocdcError, UnreachableError, UsageError
from mongocdc.sinks.kafka.common import client_config, raise_for_client_error


@dataclass(frozen=True, slots=True)
class StartAt:
    """Where reading starts: the beginning, an offset (each partition) or a timestamp (ms)."""

    offset: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DumpRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


class TopicReader:
    """A group-less consumer that assigns every partition of one topic itself."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        config = client_config(
            settings,
            **{
                "group.id": f"mongocdc-dump-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
        self.bootstrap = str(settings.get("bootstrap.servers", ""))
        try:
            self._consumer = Consumer(config)
        except KafkaException as exc:
            raise_for_client_error(exc, self.bootstrap)

    def _partitions(self, topic: str, timeout: float) -> list[int]:
        try:
            metadata = self._consumer.list_topics(topic, timeout=timeout)
        except KafkaException as exc:
            raise_for_client_error(exc, self.bootstrap)
        info = metadata.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            reason = info.error.str() if info is not None and info.error is not None else "no partitions"
            raise UsageError(
                f"topic {topic!r} does not exist on {self.bootstrap} ({reason})",
                hint="list topics with your Kafka tools; data topics are named <topic.prefix>.<db>.<collection>",
            )
        return sorted(info.partitions)

    def topics(self, timeout: float = 10.0) -> dict[str, int]:
        """Every topic on the cluster, sorted by name, with its partition count."""
        try:
            metadata = self._consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            raise_for_client_error(exc, self.bootstrap)
        return {name: len(metadata.topics[name].partitions) for name in sorted(metadata.topics)}

    def read(
        self,
        topic: str,
        start: StartAt,
        *,
        max_messages: int | None = None,
        timeout: float = 10.0,
        follow: bool = False,
    ) -> Iterator[DumpRecord]:
        """Yield records until every partition reached its end (or forever with ``follow``).

        ``timeout`` bounds the wait for the next record when not following.
        """
        partitions = self._partitions(topic, timeout)
        assignment = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions]
        if start.offset is not None:
            if start.offset < 0:
                raise UsageError(f"--offset must be >= 0, got {start.offset}")
            assignment = [TopicPartition(topic, p, start.offset) for p in partitions]
        elif start.timestamp_ms is not None:
            wanted = [TopicPartition(topic, p, start.timestamp_ms) for p in partitions]
            try:
                assignment = self._consumer.offsets_for_times(wanted, timeout=timeout)
            except KafkaException as exc:
                raise_for_client_error(exc, self.bootstrap)
        self._consumer.assign(assignment)
        at_end: set[int] = set()
        count = 0
        last_progress = time.monotonic()
        while max_messages is None or count < max_messages:
            msg = self._consumer.poll(0.2)
            if msg is None:
                if not follow and time.monotonic() - last_progress > timeout:
                    return
                continue
            last_progress = time.monotonic()
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition() or 0)
                    if not follow and at_end >= set(partitions):
                        return
                    continue
                if err.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
                    raise UnreachableError(f"Kafka at {self.bootstrap} is unreachable: {err.str()}")
                raise MongocdcError(f"reading {topic}: {err.str()}")
            at_end.discard(msg.partition() or 0)
            _, ts = msg.timestamp()
            raw_headers: Any = msg.headers() or []
            yield DumpRecord(
                topic=msg.topic() or topic,
                partition=msg.partition() or 0,
                offset=msg.offset() or 0,
                timestamp_ms=ts if ts >= 0 else None,
                key=msg.key(),
                value=msg.value(),
                headers=tuple((str(k), v) for k, v in raw_headers),
            )
            count += 1

    def close(self) -> None:
        self._consumer.close()
