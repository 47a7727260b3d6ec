"""The commit of ``replicate``: the target's acknowledgements become frontiers, offset syncs and source commits.

Commit order, followed by :meth:`Committer.commit` every ``replication.flush.interval.ms`` and on a
graceful stop:

1. poll a batch from the source (the consumer never commits on its own);
2. produce the copies to the target (idempotent producer, ``acks=all``);
3. take the delivery reports that have arrived (a failed copy stops the loop before anything is
   committed). The periodic commit does not wait for the copies still in flight: it goes as far as
   each partition's acknowledged copies reach (reports of a partition arrive in produce order), so
   copying never pauses for a commit. The last commit, on a graceful stop, flushes everything;
4. write the offset syncs (points of each partition's ``FrontierTracker``); the last commit waits
   for their acknowledgement. A sync lost in a crash is made up on restart: the copies written
   after the last sync on the target are found by their provenance (``PartitionOpener._scan_tail``);
5. commit the source offsets of ``src.consumer.group.id`` up to the acknowledged copies (a partition the
   group coordinator refuses fails the commit).

A crash anywhere in between copies records again after the restart (at-least-once), never fewer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from mongocdc.errors import MongocdcError
from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.logs import ClientLog
from mongocdc.kafka.producer import KafkaProducer
from mongocdc.replication.copying import FullQueue
from mongocdc.replication.partitions import CopiedPartition
from mongocdc.replication.shutdown import Shutdown
from mongocdc.replication.status import ReplicationStats
from mongocdc.replication.syncs import SyncWriter

log = logging.getLogger("mongocdc.replication")


class Committer:
    """Commits what the target acknowledged of the ``parts``, for the source group ``group_id``."""

    def __init__(
        self,
        parts: Mapping[tuple[str, int], CopiedPartition],
        producer: KafkaProducer,
        consumer: KafkaConsumer,
        syncs: SyncWriter,
        group_id: str,
        *,
        target_log: ClientLog,
        full_queue: FullQueue,
        shutdown: Shutdown,
        stats: ReplicationStats,
    ) -> None:
        self.parts = parts
        self.producer = producer
        self.consumer = consumer
        self.syncs = syncs
        self.group_id = group_id
        self.target_log = target_log
        self.full_queue = full_queue
        self.shutdown = shutdown
        self.stats = stats
        self.unflushed = False
        """The last flush gave up (the shutdown timeout ran out): what is left is dropped, not waited for."""

    def flush(self) -> bool:
        """Wait for every delivery report; ``False`` when the shutdown timeout ran out first (only after a stop)."""
        while True:
            left = self.producer.wait(0.2)
            self.producer.check()
            if left == 0:
                return True
            if self.shutdown.expired():
                return False

    def commit(self, *, drain: bool = False, acknowledged_only: bool = False) -> None:
        """Take the delivery reports, update the frontiers, write the offset syncs, commit the source offsets.

        The order is the module docstring's: nothing is committed on the source before the target
        acknowledged the copies up to it. With ``drain`` (a graceful stop) every copy in flight and
        the syncs are waited for, so everything read is committed. Partitions copied by key (a
        target with another partition count) have no per-partition order of reports, so a commit
        with any of them in flight drains too. After a stop the waits are bounded by the shutdown
        timeout; when it runs out, or with ``acknowledged_only`` (the target did not acknowledge
        everything in time), only what was acknowledged is committed and no sync is written (a
        restart finds the copies after the last sync by their provenance).
        """
        parts = self.parts.values()
        if not acknowledged_only:
            drain = drain or any(part.tracker is None and part.events for part in parts)
        drained = False
        if drain:
            drained = self.flush()
            if not drained:
                self.unflushed = acknowledged_only = True
        else:
            self.producer.poll(0)
            self.producer.check()
        if (self.target_log.down or self.full_queue.stalled) and any(part.acks for part in parts):
            self.target_log.answered()
            self.full_queue.acknowledged()
        now_ms = int(time.time() * 1000)
        syncs = 0
        for part in parts:
            if part.events and (part.tracker is not None or drained):
                apply_acknowledged(part, drained=drained)
            if acknowledged_only:
                continue
            tracker = part.tracker
            if tracker is not None and tracker.point != part.last_sync:
                self.syncs.write(part, now_ms)
                syncs += 1
                if tracker.dropped:
                    log.warning(
                        "%s[%d]: too many target offsets wait for records that have not come back; translation of "
                        "this partition stays at %d",
                        part.topic,
                        part.partition,
                        tracker.frontier,
                    )
        if syncs:
            if drained and not self.flush():
                self.unflushed = True
            self.stats.syncs += syncs
        offsets = {(part.topic, part.partition): part.done for part in parts if part.done != part.committed}
        if offsets:
            self.consumer.commit(offsets, doing=f"committing the offsets of group {self.group_id}")
            for key, offset in offsets.items():
                self.parts[key].committed = offset
            self.stats.commits += 1


def apply_acknowledged(part: CopiedPartition, *, drained: bool) -> None:
    """Feed the records processed since the last commit whose copies are acknowledged to the frontier.

    ``drained``: every copy produced has its report (after a flush). Otherwise the reports of a
    partition arrive in produce order, so the records up to the last acknowledged copy (and the
    loop skips right after it) are done; the rest wait for the next commit.
    """
    tracker = part.tracker
    if tracker is None:  # copied by key: the commit drained first
        part.events = []
        part.skips = 0
        part.done = part.next_offset
        return
    events, acks = part.events, part.acks[:]
    part.acks.clear()  # the same list: the partition's delivery callback appends to it
    n = len(events)
    if not part.skips and not part.early and acks:
        k = len(acks)
        if k > n:
            raise MongocdcError(f"{part.topic}[{part.partition}]: {n} copies sent but {k} acknowledged offsets seen")
        if (k == n or not drained) and events[k - 1] - events[0] == k - 1 and acks[-1] - acks[0] == k - 1:
            tracker.advance_run(events[0], acks[0], k)
            part.events = events[k:]
            part.done = events[k - 1] + 1
            return
    ack = iter(acks)
    left = len(acks)
    early = part.early
    applied = 0
    for event in events:
        if isinstance(event, int):
            if not left:
                break
            left -= 1
            offset, positions = event, [next(ack)]
        else:
            offset, counterpart = event
            positions = [] if counterpart is None else [counterpart]
            part.skips -= 1
        if early:
            positions += early.pop(offset, [])
        tracker.advance(offset, *positions, returned=None if isinstance(event, int) else event[1])
        part.done = offset + 1
        applied += 1
    part.events = events[applied:]
    if left or (drained and part.events):
        raise MongocdcError(
            f"{part.topic}[{part.partition}]: {n - len(part.events)} records done but {len(acks)} acknowledged "
            f"offsets seen and {len(part.events)} records left after a flush"
        )
