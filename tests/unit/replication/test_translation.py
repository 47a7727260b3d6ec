"""Offset translation: the rule, the frontier tracker, the sync and checkpoint records.

The property tests build a whole replication history, active/active included: a source partition
A that interleaves its own records with copies of the target's, a target partition B that
interleaves its own records with copies of A's, holes on both sides. Whatever the history, the
syncs kept and the committed offset, the translated offset must never be past a record the group
has not consumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mongocdc.replication.translation import (
    Checkpoint,
    FrontierTracker,
    OffsetSync,
    Point,
    choose,
    resolve,
    sync_slot,
    translate,
)

# --- the rule on hand-made points --------------------------------------------------------


def test_translate_takes_the_point_at_or_below_the_committed_offset() -> None:
    points = [Point(0, 0), Point(10, 7), Point(20, 15)]
    assert translate(points, 10) == Point(10, 7)
    assert translate(points, 19) == Point(10, 7)
    assert translate(points, 25) == Point(20, 15)
    assert translate(points, -1) is None


def test_resolve_methods() -> None:
    points = [Point(5, 100), Point(10, 105)]
    assert resolve(10, points, 90).method == "exact"
    assert resolve(10, points, 90).offset == 105
    assert resolve(12, points, 90) == resolve(12, points, 90)
    sync = resolve(12, points, 90)
    assert (sync.offset, sync.method, sync.again) == (105, "sync", 2)
    early = resolve(3, points, 90)
    assert (early.offset, early.method) == (90, "earliest")
    assert resolve(3, [], 90).method == "none"
    assert resolve(3, points, None).method == "none"


def test_active_passive_tracker_is_exact_after_every_record() -> None:
    tracker = FrontierTracker(0, 0)
    for offset in range(100):
        tracker.advance(offset, 50 + offset if offset else 50)
    # the copies start at target offset 50: everything below it is (vacuously) not a counterpart
    tracker2 = FrontierTracker(0, 50)
    for offset in range(100):
        tracker2.advance(offset, 50 + offset)
    for committed in range(101):
        assert tracker2.at(committed) == Point(committed, 50 + committed)
    assert tracker2.at(500) == Point(100, 150)
    # the first tracker started at 0 but nothing covered 0..49: its frontier waits there, safe
    assert tracker.frontier == 0


def test_advance_run_equals_record_by_record() -> None:
    a, b = FrontierTracker(3, 10), FrontierTracker(3, 10)
    a.advance_run(3, 10, 50)
    for i in range(50):
        b.advance(3 + i, 10 + i)
    assert a.point == b.point
    assert all(a.at(c) == b.at(c) for c in range(0, 60))


def test_a_hole_holds_the_frontier_until_it_is_covered() -> None:
    tracker = FrontierTracker(0, 0)
    tracker.advance(0, 0)
    tracker.advance(1, 2)  # target offset 1 is a record of the target's own, not seen yet
    tracker.advance(2, 3)
    assert tracker.point == Point(3, 1)
    assert tracker.pending_ranges() == [(2, 4)]
    tracker.advance(3, 1)  # its copy came back from the source
    assert tracker.point == Point(4, 4)
    assert tracker.at(3) == Point(3, 1)


def test_records_read_again_after_a_restart_only_add_counterparts() -> None:
    tracker = FrontierTracker(10, 20)
    tracker.advance(8, 25)  # a duplicate copy of an already processed record
    assert tracker.point == Point(10, 20)
    tracker.advance(10, 20)
    assert tracker.point == Point(11, 21)


def test_history_trimming_keeps_older_points_usable() -> None:
    tracker = FrontierTracker(0, 0, max_segments=4)
    for offset in range(0, 40, 2):  # gaps in the source: every record starts a new segment
        tracker.advance(offset, offset // 2)
    for committed in range(0, 41):
        point = tracker.at(committed)
        assert point is not None
        assert point.upstream <= committed
        # the true frontier for committed c is ceil(c / 2): never past it
        assert point.downstream <= (committed + 1) // 2


def test_pending_is_capped_and_a_capped_tracker_stays_behind() -> None:
    tracker = FrontierTracker(0, 0, max_pending=3)
    for i in range(10):
        tracker.advance(i, i + 1)
    assert tracker.pending_count == 3
    assert tracker.dropped == 7
    tracker.advance(10, 0)
    assert tracker.frontier == 4  # 0 then 1..3 pending; 4.. were dropped


def test_pending_ranges_are_limited_lowest_first() -> None:
    tracker = FrontierTracker(0, 0)
    for i, position in enumerate([2, 3, 5, 9, 10, 11]):
        tracker.advance(i, position)
    assert tracker.pending_ranges() == [(2, 4), (5, 6), (9, 12)]
    assert tracker.pending_ranges(limit=2) == [(2, 4), (5, 6)]


@pytest.mark.parametrize(("sequence", "slot"), [(0, -1), (1, 0), (2, 1), (3, 0), (4, 2), (12, 2), (2**30, 24)])
def test_sync_slot_counts_trailing_zeros(sequence: int, slot: int) -> None:
    assert sync_slot(sequence) == slot


def test_sync_and_checkpoint_records_round_trip() -> None:
    sync = OffsetSync("cl", "orders", 2, 10, 7, "orders.replica", 2, seq=4, ts=123, pending=((9, 11),))
    assert OffsetSync.parse(sync.key(), sync.value()) == sync
    assert b'"slot":2' in sync.key()
    checkpoint = Checkpoint("cl", "billing", "orders", 1, 5, 4, "orders", 1, ts=9)
    assert Checkpoint.parse(checkpoint.key(), checkpoint.value()) == checkpoint
    assert OffsetSync.parse(sync.key(), None) is None
    assert OffsetSync.parse(b"[1]", b"{}") is None
    assert Checkpoint.parse(b'{"source":"a"}', b'{"upstream":"x"}') is None


# --- property: never past an unconsumed record ------------------------------------------


@dataclass
class History:
    """A replication history of one partition pair, built to be consistent."""

    source: list[tuple[int, str, int]]  # (source offset, "local"/"copy", local index on the source or target)
    target: dict[int, tuple[str, int]]  # target offset → ("local", index on the target) or ("copy", source offset)
    processed: int  # records of ``source`` the replicator has processed
    target_start: int


@st.composite
def histories(draw: st.DrawFn) -> History:
    a_local = draw(st.integers(0, 25))
    b_local = draw(st.integers(0, 12))
    came_back = draw(st.integers(0, b_local))  # target records copied to the source so far (in order)
    kinds = draw(st.permutations(["a"] * a_local + ["b"] * came_back))
    source: list[tuple[int, str, int]] = []
    offset = draw(st.integers(0, 5))
    a_index = b_index = 0
    for kind in kinds:
        if kind == "a":
            source.append((offset, "local", a_index))
            a_index += 1
        else:
            source.append((offset, "copy", b_index))
            b_index += 1
        offset += 1 + draw(st.sampled_from([0, 0, 0, 1, 3]))  # gaps: compaction, transaction markers
    processed = draw(st.integers(0, len(source)))
    copied = [s for s in source[:processed] if s[1] == "local"]
    # the target interleaves its own records with copies of the processed local source records, with holes
    order = draw(st.permutations(["b"] * b_local + ["c"] * len(copied)))
    target: dict[int, tuple[str, int]] = {}
    position = draw(st.integers(0, 5))
    target_start = position
    b_seen = c_seen = 0
    for kind in order:
        if draw(st.integers(0, 9)) == 0:
            position += 1  # a hole
        if kind == "b":
            target[position] = ("local", b_seen)
            b_seen += 1
        else:
            target[position] = ("copy", copied[c_seen][0])
            c_seen += 1
        position += 1
    return History(source, target, processed, target_start)


def run_tracker(history: History) -> tuple[FrontierTracker, list[Point]]:
    local_position = {index: pos for pos, (kind, index) in history.target.items() if kind == "local"}
    copy_position = {src: pos for pos, (kind, src) in history.target.items() if kind == "copy"}
    start = history.source[0][0] if history.source else 0
    tracker = FrontierTracker(start, history.target_start)
    points = [tracker.point]
    for offset, kind, index in history.source[: history.processed]:
        counterpart = copy_position[offset] if kind == "local" else local_position[index]
        tracker.advance(offset, counterpart)
        points.append(tracker.point)
    return tracker, points


def first_unconsumed(history: History, committed: int) -> int:
    """The smallest target offset holding a record the group (committed ``committed`` on the source) has not read."""
    back_on_source = {index: offset for offset, kind, index in history.source if kind == "copy"}
    unconsumed = []
    for position, (kind, ref) in history.target.items():
        source_offset = ref if kind == "copy" else back_on_source.get(ref)
        if source_offset is None or source_offset >= committed:
            unconsumed.append(position)
    return min(unconsumed, default=2**62)


@settings(max_examples=400, deadline=None)
@given(history=histories(), data=st.data())
def test_translation_never_skips_an_unconsumed_record(history: History, data: st.DataObject) -> None:
    tracker, points = run_tracker(history)
    kept = data.draw(st.lists(st.sampled_from(points), unique=True)) if points else []
    end = history.source[-1][0] + 2 if history.source else 3
    committed = data.draw(st.integers(0, end))
    for candidates in (kept, points):
        resolved = resolve(committed, candidates, history.target_start)
        if resolved.offset is not None:
            assert resolved.offset <= first_unconsumed(history, committed)
    at = tracker.at(committed)
    if at is not None:
        assert at.downstream <= first_unconsumed(history, committed)


@settings(max_examples=200, deadline=None)
@given(history=histories())
def test_active_passive_translation_is_exact_at_every_processed_offset(history: History) -> None:
    assume(all(kind == "local" for _, kind, _ in history.source))
    assume(all(kind == "copy" for kind, _ in history.target.values()))
    positions = sorted(history.target)
    assume(positions == list(range(history.target_start, history.target_start + len(positions))))
    tracker, _ = run_tracker(history)
    for offset, _, _ in history.source[: history.processed]:
        point = tracker.at(offset)
        assert point is not None
        assert point.downstream == first_unconsumed(history, offset) or not history.target


@settings(max_examples=200, deadline=None)
@given(history=histories(), data=st.data())
def test_a_restored_tracker_continues_with_the_same_points(history: History, data: st.DataObject) -> None:
    """A replicator restarted from its last sync (point + pending ranges) computes what it would have."""
    local_position = {index: pos for pos, (kind, index) in history.target.items() if kind == "local"}
    copy_position = {src: pos for pos, (kind, src) in history.target.items() if kind == "copy"}
    records = history.source[: history.processed]
    cut = data.draw(st.integers(0, len(records)))
    start = history.source[0][0] if history.source else 0
    whole = FrontierTracker(start, history.target_start)
    first = FrontierTracker(start, history.target_start)

    def counterpart(offset: int, kind: str, index: int) -> int:
        return copy_position[offset] if kind == "local" else local_position[index]

    for record in records[:cut]:
        first.advance(record[0], counterpart(*record))
    restored = FrontierTracker(first.upstream, first.frontier, pending=first.pending_ranges(limit=10**6))
    for record in records[:cut]:
        whole.advance(record[0], counterpart(*record))
    for record in records[cut:]:
        whole.advance(record[0], counterpart(*record))
        restored.advance(record[0], counterpart(*record))
        assert restored.point == whole.point


# --- choosing where to resume: the target partition read from a point ----------------------


@st.composite
def target_partitions(draw: st.DrawFn) -> tuple[list[tuple[int, int | None]], int]:
    """A target partition after restarts and crashes: runs of copies (each run starts at or below where the
    previous one ended: a crash copies again from the last commit), records of the target's own in between."""
    records: list[tuple[int, int | None]] = []
    offset = draw(st.integers(0, 3))
    source = 0
    for _ in range(draw(st.integers(1, 4))):
        source = max(0, source - draw(st.integers(0, 6)))  # a crash: copied again from an earlier commit
        for _ in range(draw(st.integers(0, 10))):
            if draw(st.integers(0, 5)) == 0:
                records.append((offset, None))  # the target's own
            else:
                records.append((offset, source))
                source += 1
            offset += 1 + (1 if draw(st.integers(0, 12)) == 0 else 0)  # a hole: a marker or compaction
    return records, offset


def reads(records: list[tuple[int, int | None]], start: int) -> list[int]:
    """The identities read when resuming at ``start`` (a copy: its source offset; the target's own: -1 - offset)."""
    return [source if source is not None else -1 - offset for offset, source in records if offset >= start]


@settings(max_examples=400, deadline=None)
@given(partition=target_partitions(), data=st.data())
def test_choose_reads_everything_not_consumed_and_counts_what_is_read_again(
    partition: tuple[list[tuple[int, int | None]], int], data: st.DataObject
) -> None:
    records, end = partition
    committed = data.draw(st.integers(0, 40))
    own = [offset for offset, source in records if source is None]
    back = data.draw(st.sampled_from([0, *[o + 1 for o in own]]))  # own records below it came back below committed

    def consumed(identity: int) -> bool:
        return identity < committed if identity >= 0 else -1 - identity < back

    needed = {i for i in reads(records, 0) if not consumed(i)}
    choice = choose(records, end, committed, back, back)
    got = reads(records, choice.offset)
    assert needed <= set(got)  # nothing missed
    again = sum(1 for n, i in enumerate(got) if consumed(i) or i in got[:n])
    assert choice.again == again  # the count is what the group reads again
    assert choice.method == ("exact" if again == 0 else "sync")
    for offset, _ in records:  # no later start that misses nothing reads less
        if offset > choice.offset and needed <= set(reads(records, offset)):
            raise AssertionError(f"{offset} misses nothing and is later than {choice.offset}")
    # not knowing whether the own records between back and a later point came back: never past them, count unknown
    later = data.draw(st.integers(back, end + 1))
    unsure = choose(records, end, committed, back, later)
    in_doubt = [o for o in own if back <= o < later]
    if in_doubt:
        assert unsure.offset <= min(in_doubt) and unsure.again is None and unsure.method == "unknown"
    else:
        assert unsure == choice


def test_choose_uses_the_copies_written_after_a_crash_when_they_read_less() -> None:
    first = [(i, i) for i in range(100)]  # copied once, then a crash before anything was committed
    again = [(100 + i, i) for i in range(100)]  # copied again from 0
    choice = choose(first + again, 200, 40, 0, 0)
    assert (choice.offset, choice.again, choice.method) == (140, 0, "exact")
    assert choose(first + again, 200, 0, 0, 0) == choose(first + again, 200, 0, 0, 0)
    assert choose(first + again, 200, 0, 0, 0).offset == 100
    assert choose(first, 100, 100, 0, 0).offset == 100  # everything consumed: resume at the end
    # a copy run that stops part way: resume at the first copies, and count the second copies read again
    partial = first + [(100 + i, i) for i in range(60)]
    choice = choose(partial, 160, 40, 0, 0)
    assert (choice.offset, choice.again, choice.method) == (60, 40, "sync")  # the second copies of 0..39


@settings(max_examples=200, deadline=None)
@given(history=histories())
def test_back_is_one_past_the_last_record_of_the_target_that_came_back(history: History) -> None:
    """Records of the target's own come back in their order: below ``back`` every one has (``Point.back``)."""
    local_position = {index: pos for pos, (kind, index) in history.target.items() if kind == "local"}
    copy_position = {src: pos for pos, (kind, src) in history.target.items() if kind == "copy"}
    start = history.source[0][0] if history.source else 0
    tracker = FrontierTracker(start, history.target_start)
    expected = history.target_start
    for offset, kind, index in history.source[: history.processed]:
        if kind == "local":
            tracker.advance(offset, copy_position[offset])
        else:
            tracker.advance(offset, local_position[index], returned=local_position[index])
            expected = local_position[index] + 1
        assert tracker.point.back == expected
        point = tracker.at(offset + 1)
        assert point is not None and point.back == expected
        came_back = {local_position[i] for o, k, i in history.source if k == "copy" and o <= offset}
        assert all(pos in came_back for pos in local_position.values() if pos < expected)


def test_sync_and_checkpoint_records_carry_back_and_the_point() -> None:
    sync = OffsetSync("cl", "orders", 2, 10, 7, "orders", 2, seq=0, ts=1, back=9)
    parsed = OffsetSync.parse(sync.key(), sync.value())
    assert parsed == sync and parsed is not None and parsed.point.back == 9
    assert b'"slot":-1' in sync.key()  # the start has a slot of its own
    checkpoint = Checkpoint("cl", "g", "orders", 1, 50, 40, "orders", 1, ts=2, point_upstream=45, back=12)
    parsed_checkpoint = Checkpoint.parse(checkpoint.key(), checkpoint.value())
    assert parsed_checkpoint == checkpoint and parsed_checkpoint is not None
    assert (parsed_checkpoint.point.upstream, parsed_checkpoint.point.downstream, parsed_checkpoint.point.back) == (
        45, 40, 12,
    )  # fmt: skip
    legacy = Checkpoint.parse(checkpoint.key(), b'{"upstream":50,"downstream":40,"target_topic":"orders",'
                                               b'"target_partition":1}')  # fmt: skip
    assert legacy is not None and (legacy.point.upstream, legacy.point.back) == (50, -1)
