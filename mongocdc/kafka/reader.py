"""``TopicReader``: reads a topic from the beginning, an offset or a time (``topic dump``, ``topic compare``)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from mongocdc.errors import UsageError
from mongocdc.kafka.consumer import BEGINNING, KafkaConsumer
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.logs import ClientLog


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
        bootstrap = str(settings.get("bootstrap.servers", ""))
        self._endpoint = Endpoint.of(
            settings,
            servers="kafka.bootstrap.servers (or --bootstrap-servers)",
            client_log=ClientLog("", bootstrap),  # one line per outage, not librdkafka's line per connection try
        )
        self.bootstrap = self._endpoint.bootstrap
        self._consumer = KafkaConsumer(settings, self._endpoint, purpose="dump")

    def _partitions(self, topic: str) -> list[int]:
        info = self._consumer.metadata(topic).topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            reason = info.error.str() if info is not None and info.error is not None else "no partitions"
            raise UsageError(
                f"topic {topic!r} does not exist on {self.bootstrap} ({reason})",
                hint="list topics with your Kafka tools; data topics are named <topic.prefix>.<db>.<collection>",
            )
        return sorted(info.partitions)

    def topics(self, timeout: float = 10.0) -> dict[str, int]:
        """Every topic on the cluster, sorted by name, with its partition count."""
        self._consumer.timeout_s = timeout
        metadata = self._consumer.metadata()
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

        ``timeout`` bounds each request and the wait for the next record when not following.
        """
        consumer = self._consumer
        consumer.timeout_s = timeout
        partitions = self._partitions(topic)
        offsets = dict.fromkeys(((topic, p) for p in partitions), BEGINNING)
        if start.offset is not None:
            if start.offset < 0:
                raise UsageError(f"--offset must be >= 0, got {start.offset}")
            offsets = dict.fromkeys(offsets, start.offset)
        elif start.timestamp_ms is not None:
            offsets = consumer.offsets_for_times(dict.fromkeys(offsets, start.timestamp_ms))
        consumer.assign(offsets)
        at_end: set[int] = set()
        count = 0
        last_progress = time.monotonic()
        while max_messages is None or count < max_messages:
            batch = consumer.consume(1, 0.2)
            if not batch:
                if not follow and time.monotonic() - last_progress > timeout:
                    return
                continue
            msg = batch[0]
            last_progress = time.monotonic()
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition() or 0)
                    if not follow and at_end >= set(partitions):
                        return
                    continue
                raise self._endpoint.failed(err, f"reading {topic}")
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
