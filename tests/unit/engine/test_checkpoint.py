"""The checkpointer: when a partition's offset is committed, which one, and how a task's end commits it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from mongocdc.engine.checkpoint import ERROR_FLUSH_TIMEOUT_S, Checkpointer
from mongocdc.engine.exactly_once import TransactionBoundary
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.events.position import Position
from mongocdc.offsets.memory import MemoryOffsetStore

POLL = TransactionBoundary()
"""The default boundary (``poll``); at least once it is never asked."""


def at(sec: int) -> SourceOffset:
    return SourceOffset(Position(sec, 1))


class Store(MemoryOffsetStore):
    """A store that remembers each commit's ``sec`` (at least once)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.commits: list[int] = []
        self.fail = fail

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        if self.fail:
            raise RuntimeError("the store is gone")
        self.commits.append(offset["sec"])
        super().commit(connector, partition, offset)


class TransactionalStore(Store):
    """A store whose commits are transactions (exactly once): counts them and the aborts."""

    transactional = True

    def __init__(self) -> None:
        super().__init__()
        self.aborted = 0

    def abort(self) -> None:
        self.aborted += 1


class Producer:
    """Holds each record's acknowledgement until a flush delivers them all (or fails)."""

    def __init__(self, fail: bool = False) -> None:
        self.pending: list[Callable[[], None]] = []
        self.flushes: list[float | None] = []
        self.fail = fail

    def flush(self, timeout: float | None = None) -> None:
        self.flushes.append(timeout)
        if self.fail:
            raise RuntimeError("Kafka is gone")
        pending, self.pending = self.pending, []
        for ack in pending:
            ack()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def checkpointer(
    store: Store,
    producer: Producer | None = None,
    *,
    boundary: TransactionBoundary = POLL,
    clock: Clock | None = None,
    **options: Any,
) -> Checkpointer:
    return Checkpointer(
        store,
        "c1",
        "rs0",
        producer or Producer(),
        flush_interval_s=10.0,
        boundary=boundary,
        clock=clock or Clock(),
        **options,
    )


def produce(cp: Checkpointer, producer: Producer, records: int, offset: SourceOffset) -> list[Callable[[], None]]:
    """``records`` records of one item, then its offset; their acknowledgements are also the producer's."""
    acks = [cp.record() for _ in range(records)]
    producer.pending.extend(acks)
    cp.add(offset)
    return acks


# -- at least once: what is committable ------------------------------------------------


def test_at_least_once_commits_only_what_kafka_acknowledged() -> None:
    store, producer = Store(), Producer()
    cp = checkpointer(store, producer)
    first = produce(cp, producer, 2, at(1))
    second = produce(cp, producer, 1, at(2))
    assert cp.commit() is None and store.commits == []
    second[0]()  # out of order: the first item's records are still in flight
    assert cp.commit() is None and cp.in_flight == 2
    for ack in first:
        ack()
    assert cp.commit() == at(2) and store.commits == [2]
    assert SourceOffset.from_record(store.load("c1", "rs0") or {}) == at(2)


def test_an_offset_equal_to_the_last_committed_is_not_written_again() -> None:
    store, producer = Store(), Producer()
    cp = checkpointer(store, producer)
    produce(cp, producer, 1, at(1))
    producer.flush()
    assert cp.commit() == at(1)
    assert cp.commit() is None
    cp.add(at(1))  # the same offset again (an idle poll at the same position)
    assert cp.commit() is None and store.commits == [1] and cp.last_committed == at(1)


def test_a_record_never_sent_is_acknowledged_by_the_task() -> None:
    store = Store()
    cp = checkpointer(store)
    ack = cp.record()  # the producer refused it before queueing (oversized): nothing to wait for
    cp.add(at(3))
    assert cp.in_flight == 1
    ack()
    assert cp.in_flight == 0 and cp.commit() == at(3)


# -- when --------------------------------------------------------------------------------


def test_tick_commits_every_flush_interval_and_starts_the_next() -> None:
    store, producer, clock = Store(), Producer(), Clock()
    cp = checkpointer(store, producer, clock=clock)
    produce(cp, producer, 1, at(1))
    producer.flush()
    clock.now = 9.9
    assert not cp.tick() and store.commits == []
    clock.now = 10.0
    assert cp.tick() and store.commits == [1]
    clock.now = 19.9  # the next interval runs from the commit
    assert not cp.due()
    clock.now = 20.0
    assert cp.due()


def test_start_interval_restarts_the_interval_from_now() -> None:
    clock = Clock()
    cp = checkpointer(Store(), clock=clock)
    clock.now = 15.0  # e.g. opening the change stream took this long
    cp.start_interval()
    assert not cp.due()
    clock.now = 25.0
    assert cp.due()


def test_commit_soon_makes_the_next_tick_commit() -> None:
    store, producer, clock = Store(), Producer(), Clock()
    cp = checkpointer(store, producer, clock=clock)
    produce(cp, producer, 1, at(1))
    producer.flush()
    clock.now = 1.0
    cp.commit_soon()
    assert cp.tick() and store.commits == [1]
    assert not cp.due()  # a fresh interval after it


def test_at_least_once_ignores_the_transaction_boundary() -> None:
    asked: list[bool] = []

    def caught_up() -> bool:
        asked.append(True)
        return True

    cp = checkpointer(Store(), boundary=TransactionBoundary("poll", max_records=1))
    cp.record()
    cp.add(at(1))
    assert not cp.due(caught_up) and not cp.full() and asked == []


# -- exactly once ------------------------------------------------------------------------


def test_exactly_once_commits_the_newest_offset_with_its_unacknowledged_records() -> None:
    store, producer = TransactionalStore(), Producer()
    cp = checkpointer(store, producer)
    assert cp.transactional
    produce(cp, producer, 2, at(1))
    produce(cp, producer, 1, at(2))
    assert cp.commit() == at(2) and store.commits == [2]  # nothing acknowledged: the transaction holds them


def test_exactly_once_commits_a_transaction_with_records_even_at_the_same_offset() -> None:
    store, producer = TransactionalStore(), Producer()
    cp = checkpointer(store, producer)
    produce(cp, producer, 1, at(1))
    assert cp.commit() == at(1)
    assert cp.commit() is None  # nothing produced, offset unchanged: no transaction
    produce(cp, producer, 1, at(1))  # a record (a heartbeat) at the same position
    assert cp.commit() == at(1) and store.commits == [1, 1]


def test_poll_boundary_ends_a_transaction_at_max_records_or_when_caught_up() -> None:
    answers = [False, True]
    asked: list[bool] = []

    def caught_up() -> bool:
        asked.append(True)
        return answers.pop(0)

    cp = checkpointer(TransactionalStore(), boundary=TransactionBoundary("poll", max_records=3))
    assert not cp.due(caught_up) and asked == []  # an empty transaction never ends, nothing is asked
    cp.record()
    cp.add(at(1))
    assert not cp.due(caught_up)  # one record, the reader has more in hand
    assert cp.due(caught_up)  # one record, caught up
    cp.record()
    cp.record()
    assert cp.full() and cp.due(caught_up) and len(asked) == 2  # max_records: the reader is not asked
    cp.commit()
    assert not cp.full()  # the next transaction is empty


def test_interval_boundary_ends_a_transaction_on_the_clock() -> None:
    clock = Clock()
    boundary = TransactionBoundary("interval", max_records=1, interval_s=5.0)
    cp = checkpointer(TransactionalStore(), boundary=boundary, clock=clock)
    cp.record()
    cp.record()
    cp.add(at(1))
    assert not cp.full() and not cp.due()  # interval: no record count ends it
    clock.now = 5.0
    assert cp.due()
    cp.commit()
    clock.now = 9.0
    cp.record()
    assert not cp.due()  # the transaction began at the commit
    clock.now = 10.0
    assert cp.due()


def test_a_transaction_commit_holds_the_tasks_lock_and_commits_its_offset() -> None:
    lock = threading.Lock()
    held: list[bool] = []

    def transaction_offset() -> SourceOffset:
        held.append(lock.locked())
        return at(7)

    store = TransactionalStore()
    cp = checkpointer(store, transaction_offset=transaction_offset, lock=lock)
    cp.record()
    cp.add(at(1))
    assert cp.commit() == at(7) and held == [True] and store.commits == [7]
    assert not lock.locked()


# -- what a commit tells the task ----------------------------------------------------


def test_on_commit_hears_each_commit_with_what_it_wrote() -> None:
    heard: list[SourceOffset | None] = []
    store, producer = Store(), Producer()
    cp = checkpointer(store, producer, on_commit=heard.append)
    produce(cp, producer, 1, at(1))
    cp.commit()
    producer.flush()
    cp.commit()
    cp.commit_offset(at(5))
    cp.commit_offset(at(5))
    assert heard == [None, at(1), at(5), None]


# -- the end ---------------------------------------------------------------------------


def test_close_flushes_then_commits_everything_acknowledged() -> None:
    store, producer = Store(), Producer()
    cp = checkpointer(store, producer)
    produce(cp, producer, 3, at(4))
    assert cp.close(2.5) == at(4) and producer.flushes == [2.5] and store.commits == [4]


def test_close_of_a_transaction_flushes_unless_told_not_to() -> None:
    producer = Producer()
    cp = checkpointer(TransactionalStore(), producer)
    produce(cp, producer, 1, at(1))
    assert cp.close(flush_transaction=False) == at(1) and producer.flushes == []
    produce(cp, producer, 1, at(2))
    assert cp.close(3.0) == at(2) and producer.flushes == [3.0]


def test_close_on_error_aborts_the_open_transaction_and_commits_nothing() -> None:
    store, producer = TransactionalStore(), Producer()
    cp = checkpointer(store, producer)
    produce(cp, producer, 1, at(1))
    cp.close_on_error()
    assert store.aborted == 1 and store.commits == [] and producer.flushes == []


def test_close_on_error_commits_what_was_acknowledged_even_if_the_flush_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, producer = Store(), Producer(fail=True)
    cp = checkpointer(store, producer)
    produce(cp, producer, 1, at(1))[0]()
    produce(cp, producer, 1, at(2))  # never acknowledged
    with caplog.at_level(logging.WARNING, logger="mongocdc.engine"):
        cp.close_on_error()
    assert producer.flushes == [ERROR_FLUSH_TIMEOUT_S] and store.commits == [1]
    assert "could not flush Kafka" in caplog.text


def test_close_on_error_never_raises_a_failed_commit(caplog: pytest.LogCaptureFixture) -> None:
    store, producer = Store(fail=True), Producer()
    cp = checkpointer(store, producer)
    produce(cp, producer, 1, at(1))
    with caplog.at_level(logging.ERROR, logger="mongocdc.engine"):
        cp.close_on_error()  # the task's own error is the one to report
    assert "could not commit the last acknowledged offset" in caplog.text
    assert cp.last_committed is None
