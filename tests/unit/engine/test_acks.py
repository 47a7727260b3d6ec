"""The acknowledgement tracker never lets an offset run ahead of Kafka."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mongocdc.engine.acks import AckTracker


def test_position_waits_for_all_its_records() -> None:
    tracker: AckTracker[str] = AckTracker()
    a = tracker.issue()
    b = tracker.issue()
    tracker.add_position("p1")
    c = tracker.issue()
    tracker.add_position("p2")
    assert tracker.committable() is None
    tracker.acked(b)
    assert tracker.committable() is None
    tracker.acked(a)
    assert tracker.committable() == "p1"
    tracker.acked(c)
    assert tracker.committable() == "p2"
    assert tracker.in_flight == 0


def test_positions_without_records_follow_their_predecessors() -> None:
    tracker: AckTracker[str] = AckTracker()
    tracker.add_position("start")
    assert tracker.committable() == "start"
    seq = tracker.issue()
    tracker.add_position("after-record")
    tracker.add_position("idle")
    assert tracker.committable() == "start"
    tracker.acked(seq)
    assert tracker.committable() == "idle"


@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=30), st.randoms())
def test_committable_never_passes_an_unacknowledged_record(records_per_change: list[int], rnd: object) -> None:
    import random

    assert isinstance(rnd, random.Random)
    tracker: AckTracker[int] = AckTracker()
    owner: dict[int, int] = {}
    for change, count in enumerate(records_per_change):
        for _ in range(count):
            owner[tracker.issue()] = change
        tracker.add_position(change)
    order = list(owner)
    rnd.shuffle(order)
    acked: set[int] = set()
    for seq in order:
        tracker.acked(seq)
        acked.add(seq)
        committed = tracker.committable()
        if committed is not None:
            assert all(s in acked for s, c in owner.items() if c <= committed)
    assert tracker.committable() == len(records_per_change) - 1


def test_positions_held_stay_bounded_by_records_in_flight() -> None:
    tracker: AckTracker[int] = AckTracker()
    for i in range(10_000):
        seq = tracker.issue()
        tracker.add_position(i)
        tracker.add_position(i)  # idle polls between changes add no entries
        tracker.acked(seq)
    assert tracker.pending_positions <= 1
    assert tracker.committable() == 9_999
    held = []
    for i in range(5):
        held.append(tracker.issue())
        tracker.add_position(100_000 + i)
    assert tracker.in_flight == 5
    assert tracker.pending_positions == 5
    for seq in reversed(held):
        tracker.acked(seq)
    assert tracker.in_flight == 0
    assert tracker.committable() == 100_004
