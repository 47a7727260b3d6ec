"""The copy loop's inner part: a batch of source records produced to the target, and their delivery reports.

Each copy keeps its key, value, headers, timestamp and (when the partition is kept) its partition, and gets
a provenance header; a record whose provenance says it was read from the target topic on the target cluster
is not copied back, and its original's offset is noted (``provenance.origin_on``). Each kept partition's
delivery callback appends its copies' target offsets to the partition's list (reports of a partition arrive
in produce order); the commit takes them from there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.replication.partitions import CopiedPartition
from mongocdc.replication.provenance import HEADER, origin_on
from mongocdc.replication.shutdown import Shutdown
from mongocdc.replication.status import ReplicationStats

log = logging.getLogger("mongocdc.replication")


class FullQueue:
    """What copying does while the producer's queue is full (the target is slow or down): says so once when
    that lasts a second (until the target acknowledges again: ``acknowledged``), and gives up when a stop was
    asked for. ``KafkaProducer`` calls it while it waits for room."""

    def __init__(self, target: str, shutdown: Shutdown) -> None:
        self.target = target
        self.shutdown = shutdown
        self.stalled = False

    def __call__(self, since: float) -> None:
        if not self.stalled and time.monotonic() - since >= 1.0:
            self.stalled = True
            log.warning(
                "the producer's queue is full: copying waits for the target cluster at %s to acknowledge copies",
                self.target,
            )
        self.shutdown.interrupt()

    def acknowledged(self) -> None:
        self.stalled = False


def acknowledger(acks: list[int], producer: KafkaProducer) -> Callable[[Any, Any], None]:
    """The delivery report callback of one kept partition's copies: no lookup per report."""
    append = acks.append

    def acknowledged(err: Any, msg: Any) -> None:
        if err is None:
            append(msg.offset())
        else:
            producer.delivery_failed(err, msg)

    return acknowledged


class Copier:
    """Copies batches of records of the ``parts`` read by ``consumer`` through ``producer`` to the target cluster
    ``target_id`` (with provenance headers when ``provenance``), counting in ``stats``."""

    def __init__(
        self,
        parts: Mapping[tuple[str, int], CopiedPartition],
        consumer: KafkaConsumer,
        producer: KafkaProducer,
        target_id: str,
        provenance: bool,
        stats: ReplicationStats,
    ) -> None:
        self.parts = parts
        self.consumer = consumer
        self.producer = producer
        self.target_id = target_id
        self.provenance = provenance
        self.stats = stats

    def copy(self, messages: list[Any]) -> None:
        """Produce a copy of each record (or note the original of a record that came from the target).

        The loop runs once per record: what belongs to a partition is looked up when the partition
        changes (a batch comes in runs of one partition), not per record.
        """
        now_ms = int(time.time() * 1000)
        parts = self.parts
        produce = self.producer.produce
        target_id = self.target_id
        provenance = self.provenance
        stats = self.stats
        copied = size = 0
        part: Any = None
        partition = -1
        target_topic, target_partition = "", -1
        on_delivery: Any = None
        encoder: Any = None
        done: Any = None
        try:
            for msg in messages:
                if msg.error() is not None:
                    self.consumer.consume_error(msg.error(), "copying")
                    continue
                if msg.partition() != partition or msg.topic() != part.topic:
                    partition = msg.partition()
                    part = parts[(msg.topic(), partition)]
                    target_topic, target_partition = part.target_topic, part.target_partition
                    on_delivery, encoder, done = part.on_delivery, part.encoder, part.events.append
                offset = msg.offset()
                headers = msg.headers()
                if headers is not None:
                    for header in headers:
                        if header[0] == HEADER:
                            hop = origin_on(headers, target_id, target_topic)
                            break
                    else:
                        hop = None
                    if hop is not None:
                        counterpart = hop.offset if part.keep and hop.partition == partition else None
                        done((offset, counterpart))
                        part.skips += 1
                        part.next_offset = offset + 1
                        stats.skipped_loops += 1
                        continue
                if provenance:
                    stamp = (HEADER, encoder(offset, now_ms))
                    if headers is None:
                        headers = [stamp]
                    else:
                        headers.append(stamp)  # a new list per call of ``Message.headers()``, ours to change
                kind, ts = msg.timestamp()
                value = msg.value()
                produce(
                    target_topic,
                    value,
                    msg.key(),
                    target_partition,
                    timestamp=ts if kind else 0,
                    headers=headers,
                    on_delivery=on_delivery,
                )
                done(offset)
                part.next_offset = offset + 1
                copied += 1
                if value is not None:
                    size += len(value)
        finally:  # also when a stop interrupts the batch
            stats.copied += copied
            stats.bytes += size
        self.producer.poll(0)
