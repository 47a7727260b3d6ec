"""A periodic commit goes as far as the acknowledged copies reach, without waiting for the rest, and fails when
the source group's coordinator refuses a partition.

The partition state and the frontier tracker are pure code; the commit runs against stand-ins of the
confluent-kafka clients (the integration tests run the whole loop against two brokers).
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from mongocdc.errors import ConfigError, MongocdcError
from mongocdc.kafka.logs import ClientLog
from mongocdc.replication.commits import Committer, apply_acknowledged
from mongocdc.replication.copying import FullQueue
from mongocdc.replication.partitions import CopiedPartition
from mongocdc.replication.provenance import HopEncoder
from mongocdc.replication.shutdown import Shutdown
from mongocdc.replication.status import ReplicationStats
from mongocdc.replication.translation import FrontierTracker, Point
from tests.unit.kafka.stubs import Coordinator, consumer_answered_by


def partition(start: int = 100, target_start: int = 0, number: int = 0) -> CopiedPartition:
    tracker = FrontierTracker(start, target_start)
    return CopiedPartition("orders", number, "orders", True, tracker, HopEncoder("c", "orders", number), start, 0)


def sent(part: CopiedPartition, *events: Any) -> None:
    for event in events:
        part.events.append(event)
        if not isinstance(event, int):
            part.skips += 1
        part.next_offset = (event if isinstance(event, int) else event[0]) + 1


def test_only_the_acknowledged_prefix_is_done_and_the_rest_waits() -> None:
    part = partition()
    sent(part, *range(100, 110))
    part.acks.extend(range(0, 4))  # reports of the first four copies arrived
    apply_acknowledged(part, drained=False)
    assert part.done == 104 and part.tracker is not None and part.tracker.point == Point(104, 4)
    assert part.events == list(range(104, 110)) and part.acks == []
    part.acks.extend(range(4, 10))
    apply_acknowledged(part, drained=True)
    assert part.done == 110 and part.tracker.point == Point(110, 10) and part.events == []
    assert part.tracker.at(107) == Point(107, 7)  # every offset on the way still translates exactly


def test_loop_skips_are_done_only_up_to_the_first_unacknowledged_copy() -> None:
    part = partition()
    # 100 copied, 101 came from the target (its original is target offset 1), 102 copied, 103 skipped
    sent(part, 100, (101, 1), 102, (103, None))
    part.acks.append(0)  # only the copy of 100 is acknowledged
    apply_acknowledged(part, drained=False)
    assert part.done == 102 and part.events == [102, (103, None)] and part.skips == 1
    assert part.tracker is not None and part.tracker.point == Point(102, 2)
    part.acks.append(2)
    apply_acknowledged(part, drained=False)
    assert part.done == 104 and part.events == [] and part.skips == 0
    assert part.tracker.point == Point(104, 3)


def test_no_report_yet_changes_nothing() -> None:
    part = partition()
    sent(part, 100, 101)
    apply_acknowledged(part, drained=False)
    assert part.done == 100 and part.events == [100, 101]


def test_more_reports_than_copies_or_copies_left_after_a_flush_is_an_error() -> None:
    part = partition()
    sent(part, 100)
    part.acks.extend([0, 1])
    with pytest.raises(MongocdcError, match="acknowledged"):
        apply_acknowledged(part, drained=False)
    part = partition()
    sent(part, 100, 101)
    part.acks.append(0)
    with pytest.raises(MongocdcError, match="left after a flush"):
        apply_acknowledged(part, drained=True)


class NothingInFlight:
    """A producer with no reports to serve and nothing failed."""

    def poll(self, timeout_s: float = 0.0) -> int:
        return 0

    def check(self) -> None:
        pass


def test_a_partition_the_source_group_coordinator_refused_fails_the_commit() -> None:
    coordinator = Coordinator(refused={1: KafkaError.GROUP_AUTHORIZATION_FAILED})
    parts = {}
    for number in (0, 1):
        part = partition(number=number)
        part.last_sync = part.tracker.point if part.tracker is not None else None  # no sync to write
        part.done = 110  # copies acknowledged up to here
        parts[("orders", number)] = part
    shutdown = Shutdown(30.0)
    committer = Committer(
        parts,
        NothingInFlight(),  # type: ignore[arg-type]
        consumer_answered_by(coordinator),
        None,  # type: ignore[arg-type]  # no sync is written
        "g",
        target_log=ClientLog("target", "b:9092"),
        full_queue=FullQueue("b:9092", shutdown),
        shutdown=shutdown,
        stats=ReplicationStats(),
    )
    with pytest.raises(ConfigError, match=r"committing the offsets of group g for orders\[1\]: GROUP_AUTHORIZATION"):
        committer.commit()
    assert coordinator.requests == [[("orders", 0, 110), ("orders", 1, 110)]]
    assert [part.committed for part in parts.values()] == [100, 100]  # neither counts as committed
