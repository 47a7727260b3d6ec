"""``KafkaConsumer``: assigned partitions (never a rebalance), bounded reads, commits checked per partition.

Every consumer of mongocdc assigns its partitions itself. ``read`` reads ranges of partitions to their
given ends (a compacted topic replayed, a partition's tail, an offsets topic); ``watermarks`` waits out a
new topic's leader election; ``commit`` is synchronous and raises when the commit as a whole or any one
partition of it failed (a group coordinator may accept some partitions and refuse others).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from confluent_kafka import OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError, KafkaException, TopicPartition

from mongocdc.kafka.client import KafkaClient
from mongocdc.kafka.config import READER
from mongocdc.kafka.errors import SETTLING_CODES, Endpoint, code_of, describe

log = logging.getLogger("mongocdc.kafka")

BEGINNING = OFFSET_BEGINNING
"""The offset that means a partition's first record."""

COMMITTED = OFFSET_INVALID
"""The offset that means where the group committed (``auto.offset.reset`` when it did not)."""

_NOT_YET = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC})

Offsets = Mapping[tuple[str, int], int]
"""An offset per ``(topic, partition)``."""


class KafkaConsumer(KafkaClient):
    """A consumer of ``endpoint`` that never commits on its own.

    ``group_id`` is the group whose offsets ``commit`` writes; without one the consumer gets a group of its
    own that it never joins (``mongocdc-<purpose>-<uuid>``). ``defaults`` (``READER`` when not given) come
    before the user's settings, ``forced`` after them.
    """

    kind: ClassVar[str] = "consumer"

    def __init__(
        self,
        settings: Mapping[str, Any],
        endpoint: Endpoint,
        *,
        group_id: str | None = None,
        defaults: Mapping[str, Any] | None = None,
        forced: Mapping[str, Any] | None = None,
        purpose: str = "reader",
        timeout_s: float = 10.0,
    ) -> None:
        self.group_id = group_id or f"mongocdc-{purpose.replace(' ', '-')}-{uuid.uuid4()}"
        fixed = {"group.id": self.group_id, "enable.auto.commit": False, **(forced or {})}
        base = READER if defaults is None else defaults
        super().__init__(
            Consumer, settings, endpoint, defaults=base, forced=fixed, purpose=purpose, timeout_s=timeout_s
        )

    # --- assignment ---------------------------------------------------------------------

    def assign(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Read exactly these partitions, each from its offset (or ``BEGINNING``, ``COMMITTED``)."""
        self._client.assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])

    def add(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Read these partitions too, each from its offset."""
        self._client.incremental_assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])

    def unassign(self) -> None:
        self._client.unassign()

    def consume(self, count: int, timeout_s: float) -> list[Any]:
        """Up to ``count`` messages (records, or errors to hand to ``consume_error``), waiting up to ``timeout_s``."""
        return self._client.consume(count, timeout_s)  # type: ignore[no-any-return]

    def consume_error(self, err: KafkaError, doing: str) -> None:
        """A message's error while consuming on and on: a partition's end and a topic not there yet are normal,
        transient errors are logged (librdkafka retries them), a fatal one is raised."""
        code = err.code()
        if code == KafkaError._PARTITION_EOF:
            return
        if err.fatal():
            raise self.endpoint.failed(err, doing)
        if code in _NOT_YET:
            log.debug("%s: %s is not available yet: %s", self.endpoint.where, doing, err.str())
        else:
            log.warning("%s: %s: %s (retrying)", self.endpoint.where, doing, describe(err))

    # --- offsets ---------------------------------------------------------------------

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """``(low, high)`` offsets of a partition, asked of its leader (retried while leadership settles)."""
        self.check()
        timeout_s = self.timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                low, high = self._client.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout_s, cached=False
                )
                return int(low), int(high)
            except KafkaException as exc:
                doing = f"reading the offsets of {topic}[{partition}]"
                if code_of(exc) not in SETTLING_CODES:
                    raise self.endpoint.failed(exc, doing) from exc
                if time.monotonic() > deadline:  # no leader answered: the cluster cannot serve it (exit 4)
                    raise self.endpoint.unreachable(
                        f"{topic}[{partition}] has no leader that answers after {timeout_s:g} s while {doing} "
                        f"({describe(exc.args[0]) if exc.args else exc})"
                    ) from exc
                time.sleep(0.1)

    def committed(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """The group's committed offset of each partition; a partition without one is left out."""
        self.check()
        try:
            found = self._client.committed([TopicPartition(topic, p) for p in partitions], timeout=self.timeout_s)
        except KafkaException as exc:
            raise self.endpoint.failed(exc, f"reading the offsets group {self.group_id} committed on {topic}") from exc
        return {tp.partition: int(tp.offset) for tp in found if tp.error is None and tp.offset >= 0}

    def cached_high(self, topic: str, partition: int) -> int | None:
        """The high watermark the last fetch saw (no request); ``None`` when none is known yet."""
        try:
            _, high = self._client.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
        except KafkaException:
            return None
        return int(high) if high >= 0 else None

    def offsets_for_times(self, times: Offsets) -> dict[tuple[str, int], int]:
        """The earliest offset of each partition whose timestamp is at least the given one (ms); -1 when none."""
        wanted = [TopicPartition(t, p, ts) for (t, p), ts in times.items()]
        try:
            found = self._client.offsets_for_times(wanted, timeout=self.timeout_s)
        except KafkaException as exc:
            raise self.endpoint.failed(exc, "looking up offsets by time") from exc
        return {(tp.topic, tp.partition): int(tp.offset) for tp in found}

    def commit(self, offsets: Offsets, *, doing: str) -> None:
        """Commit ``offsets`` for the group and wait; raise when the commit or any partition of it failed.

        A commit with nothing in it is no commit (``_NO_OFFSET``).
        """
        if not offsets:
            return
        self.check()
        request = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        try:
            result = self._client.commit(offsets=request, asynchronous=False)
        except KafkaException as exc:
            if code_of(exc) == KafkaError._NO_OFFSET:
                return
            raise self.endpoint.failed(exc, doing) from exc
        refused = [tp for tp in result or [] if tp.error is not None]
        if refused:
            raise self.endpoint.partitions_failed(refused, doing)

    # --- bounded reads -----------------------------------------------------------------

    def read(
        self, topic: str, ranges: Mapping[int, tuple[int, int]], *, idle_timeout_s: float | None = None
    ) -> Iterator[Any]:
        """The records of each partition from its start up to (not including) its end, as they come (each
        partition in offset order); ``ranges`` is ``{partition: (start, end)}`` (start may be ``BEGINNING``).

        A partition is done at its end or at the end of its log (a read-committed consumer stops at the last
        stable offset). ``UnreachableError`` when nothing arrives for ``idle_timeout_s`` (the request timeout
        when not given).
        """
        idle_timeout_s = self.timeout_s if idle_timeout_s is None else idle_timeout_s
        pending = {p: end for p, (start, end) in ranges.items() if end > start}
        if not pending:
            return
        self.check()
        self._client.assign([TopicPartition(topic, p, ranges[p][0]) for p in pending])
        try:
            last_progress = time.monotonic()
            while pending:
                batch: list[Any] = self._client.consume(1000, 0.2)
                if not batch:
                    self.check()
                    if time.monotonic() - last_progress > idle_timeout_s:
                        raise self.endpoint.unreachable(
                            f"reading {topic} got nothing for {idle_timeout_s:.0f} s (partitions "
                            f"{', '.join(map(str, sorted(pending)))} unfinished)"
                        )
                    continue
                last_progress = time.monotonic()
                for msg in batch:
                    partition = msg.partition()
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            pending.pop(partition, None)
                            continue
                        raise self.endpoint.failed(err, f"reading {topic}[{partition}]")
                    end = pending.get(partition)
                    if end is None:
                        continue
                    offset = msg.offset()
                    if offset >= end:
                        del pending[partition]
                        continue
                    if offset + 1 >= end:
                        del pending[partition]
                    yield msg
        finally:
            self._client.unassign()

    def ends(self, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
        """``{partition: (BEGINNING, high watermark)}`` of the partitions that hold records now (``read``'s ranges)."""
        ends: dict[int, tuple[int, int]] = {}
        for p in partitions:
            low, high = self.watermarks(topic, p)
            if high > low:
                ends[p] = (BEGINNING, high)
        return ends

    def read_to_end(self, topic: str, partitions: list[int]) -> Iterator[Any]:
        """Every record of ``partitions`` of ``topic`` up to each partition's end of now (``read``)."""
        return self.read(topic, self.ends(topic, partitions))

    def close(self) -> None:
        """Leave (without committing); a consumer that cannot say goodbye to the cluster is closed anyway."""
        try:
            self._client.close()
        except (KafkaException, RuntimeError) as exc:
            log.debug("closing a Kafka consumer of %s: %s", self.endpoint.where, exc)
