"""``TopicReader``: reads a topic from the beginning, an offset, its end or a time (``topic dump``, ``topic compare``),
and lists a cluster's topics with their offsets (``topic list``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from mongocdc.errors import UsageError
from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.logs import ClientLog

log = logging.getLogger("mongocdc.kafka")


@dataclass(frozen=True, slots=True)
class StartAt:
    """Where reading starts in each partition (kcat's ``-o``): the beginning (nothing set), an ``offset``, the
    ``from_end``-th record before the end, the ``end`` (only records written from now on), or the first record
    at or after ``timestamp_ms``; and where it stops (kcat's ``-o e@``): before the first record at or after
    ``until_ms``."""

    offset: int | None = None
    timestamp_ms: int | None = None
    from_end: int | None = None
    end: bool = False
    until_ms: int | None = None


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
                hint="list topics with mongocdc topic list; data topics are named <topic.prefix>.<db>.<collection>",
            )
        return sorted(info.partitions)

    def topics(self, timeout: float = 10.0) -> dict[str, int]:
        """Every topic on the cluster, sorted by name, with its partition count."""
        self._consumer.timeout_s = timeout
        metadata = self._consumer.metadata()
        return {name: len(metadata.topics[name].partitions) for name in sorted(metadata.topics)}

    def watermarks(self, topic: str, partitions: int, timeout: float = 10.0) -> list[tuple[int, int]]:
        """``(low, high)`` offsets of each of the first ``partitions`` partitions of ``topic``."""
        self._consumer.timeout_s = timeout
        return [self._consumer.watermarks(topic, p) for p in range(partitions)]

    def _starts(self, topic: str, partitions: list[int], start: StartAt) -> tuple[dict[int, int], set[int]]:
        """Each partition's first offset to read, and the partitions with nothing to read before their end."""
        consumer = self._consumer
        marks = {p: consumer.watermarks(topic, p) for p in partitions}
        if start.timestamp_ms is not None:
            found = consumer.offsets_for_times({(topic, p): start.timestamp_ms for p in partitions})
            # -1: no record at or after the time, so reading starts at the end
            starts = {p: found[(topic, p)] if found[(topic, p)] >= 0 else marks[p][1] for p in partitions}
        elif start.offset is not None:
            starts = {p: max(start.offset, marks[p][0]) for p in partitions}
        elif start.from_end is not None:
            starts = {p: max(marks[p][1] - start.from_end, marks[p][0]) for p in partitions}
        elif start.end:
            starts = {p: marks[p][1] for p in partitions}
        else:
            starts = {p: marks[p][0] for p in partitions}
        return starts, {p for p in partitions if starts[p] >= marks[p][1]}

    def read(
        self,
        topic: str,
        start: StartAt,
        *,
        partitions: Sequence[int] | None = None,
        max_messages: int | None = None,
        timeout: float = 10.0,
        follow: bool = False,
        on_idle: Callable[[], None] | None = None,
    ) -> Iterator[DumpRecord]:
        """Yield records of ``partitions`` (every partition when not given) until each reached its end (or
        forever with ``follow``) or its first record at or after ``start.until_ms``; ``on_idle`` is called
        whenever a wait for the next record came back empty.

        ``timeout`` bounds each request and the wait for the next record when not following.
        """
        consumer = self._consumer
        consumer.timeout_s = timeout
        existing = self._partitions(topic)
        chosen = sorted(set(partitions)) if partitions else existing
        missing = [p for p in chosen if p not in existing]
        if missing:
            raise UsageError(
                f"topic {topic!r} has no partition {', '.join(map(str, missing))} "
                f"(it has {len(existing)}: {existing[0]}-{existing[-1]})",
                hint="give a partition it has, or leave -p out to read them all",
            )
        starts, at_end = self._starts(topic, chosen, start)
        if not follow and at_end >= set(chosen):
            return
        until: set[int] = set()  # the partitions that reached start.until_ms
        log.debug("reading %s from offsets %s", topic, starts)
        consumer.assign({(topic, p): offset for p, offset in starts.items()})
        count = 0
        last_progress = time.monotonic()
        while max_messages is None or count < max_messages:
            batch = consumer.consume(1, 0.2)
            if not batch:
                if on_idle is not None:
                    on_idle()
                if not follow and time.monotonic() - last_progress > timeout:
                    return
                continue
            msg = batch[0]
            last_progress = time.monotonic()
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition() or 0)
                    if not follow and at_end | until >= set(chosen):
                        return
                    continue
                raise self._endpoint.failed(err, f"reading {topic}")
            partition = msg.partition() or 0
            at_end.discard(partition)
            _, ts = msg.timestamp()
            if partition in until:
                continue
            if start.until_ms is not None and ts >= start.until_ms:
                until.add(partition)
                if until >= set(chosen):
                    return
                continue
            raw_headers: Any = msg.headers() or []
            yield DumpRecord(
                topic=msg.topic() or topic,
                partition=partition,
                offset=msg.offset() or 0,
                timestamp_ms=ts if ts >= 0 else None,
                key=msg.key(),
                value=msg.value(),
                headers=tuple((str(k), v) for k, v in raw_headers),
            )
            count += 1

    def close(self) -> None:
        self._consumer.close()
