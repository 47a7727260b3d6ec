"""A periodic commit goes as far as the acknowledged copies reach, without waiting for the rest.

Pure code: the partition state and the frontier tracker, no Kafka (the integration tests run the
whole loop against two brokers).
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from mongocdc.errors import MongocdcError
from mongocdc.replication.mirror import Replicator, ReplicatorOptions, _Partition
from mongocdc.replication.provenance import HopEncoder
from mongocdc.replication.translation import FrontierTracker, Point


def replicator() -> Replicator:
    clusters: Any = None
    return Replicator(clusters, clusters, ReplicatorOptions(name="t", group_id="t"))


def partition(start: int = 100, target_start: int = 0) -> _Partition:
    tracker = FrontierTracker(start, target_start)
    return _Partition("orders", 0, "orders", True, tracker, HopEncoder("c", "orders", 0), start, 0)


def sent(part: _Partition, *events: Any) -> None:
    for event in events:
        part.events.append(event)
        if not isinstance(event, int):
            part.skips += 1
        part.next_offset = (event if isinstance(event, int) else event[0]) + 1


def test_only_the_acknowledged_prefix_is_done_and_the_rest_waits() -> None:
    r, part = replicator(), partition()
    sent(part, *range(100, 110))
    part.acks.extend(range(0, 4))  # reports of the first four copies arrived
    r._apply(part, drained=False)
    assert part.done == 104 and part.tracker is not None and part.tracker.point == Point(104, 4)
    assert part.events == list(range(104, 110)) and part.acks == []
    part.acks.extend(range(4, 10))
    r._apply(part, drained=True)
    assert part.done == 110 and part.tracker.point == Point(110, 10) and part.events == []
    assert part.tracker.at(107) == Point(107, 7)  # every offset on the way still translates exactly


def test_loop_skips_are_done_only_up_to_the_first_unacknowledged_copy() -> None:
    r, part = replicator(), partition()
    # 100 copied, 101 came from the target (its original is target offset 1), 102 copied, 103 skipped
    sent(part, 100, (101, 1), 102, (103, None))
    part.acks.append(0)  # only the copy of 100 is acknowledged
    r._apply(part, drained=False)
    assert part.done == 102 and part.events == [102, (103, None)] and part.skips == 1
    assert part.tracker is not None and part.tracker.point == Point(102, 2)
    part.acks.append(2)
    r._apply(part, drained=False)
    assert part.done == 104 and part.events == [] and part.skips == 0
    assert part.tracker.point == Point(104, 3)


def test_no_report_yet_changes_nothing() -> None:
    r, part = replicator(), partition()
    sent(part, 100, 101)
    r._apply(part, drained=False)
    assert part.done == 100 and part.events == [100, 101]


def test_more_reports_than_copies_or_copies_left_after_a_flush_is_an_error() -> None:
    r, part = replicator(), partition()
    sent(part, 100)
    part.acks.extend([0, 1])
    with pytest.raises(MongocdcError, match="acknowledged"):
        r._apply(part, drained=False)
    part = partition()
    sent(part, 100, 101)
    part.acks.append(0)
    with pytest.raises(MongocdcError, match="left after a flush"):
        r._apply(part, drained=True)


class NothingInFlight:
    """A producer with no reports to serve and nothing failed."""

    def poll(self, timeout_s: float = 0.0) -> int:
        return 0

    def check(self) -> None:
        pass


def test_a_partition_the_source_group_coordinator_refused_fails_the_commit() -> None:
    from mongocdc.errors import ConfigError
    from mongocdc.replication.clients import Cluster
    from tests.unit.kafka.stubs import CLOSED, Coordinator, consumer_answered_by

    r = Replicator(
        Cluster(CLOSED, role="source", prefix="src.kafka."),
        Cluster(CLOSED, role="target", prefix="dest.kafka."),
        ReplicatorOptions(name="t", group_id="g"),
    )
    r._producer = NothingInFlight()
    coordinator = Coordinator(refused={1: KafkaError.GROUP_AUTHORIZATION_FAILED})
    r._consumer = consumer_answered_by(coordinator)
    for number in (0, 1):
        part = _Partition(
            "orders", number, "orders", True, FrontierTracker(100, 0), HopEncoder("c", "orders", 0), 100, 0
        )
        part.last_sync = part.tracker.point if part.tracker is not None else None  # no sync to write
        part.done = 110  # copies acknowledged up to here
        r._parts[("orders", number)] = part
    with pytest.raises(ConfigError, match=r"committing the offsets of group g for orders\[1\]: GROUP_AUTHORIZATION"):
        r.commit()
    assert coordinator.requests == [[("orders", 0, 110), ("orders", 1, 110)]]
    assert [part.committed for part in r._parts.values()] == [100, 100]  # neither counts as committed
