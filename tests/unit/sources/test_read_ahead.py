"""``read_ahead``: a snapshot cursor's batches read one ahead by a thread, in order, errors and early stops kept."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mongocdc.sources.read_ahead import read_ahead


def test_items_arrive_in_order_and_all() -> None:
    assert list(read_ahead(iter(range(1000)), "t")) == list(range(1000))


def test_the_next_item_is_read_while_the_caller_works_on_this_one() -> None:
    second_requested = threading.Event()

    def batches() -> Iterator[int]:
        yield 1
        second_requested.set()
        yield 2

    items = read_ahead(batches(), "t")
    assert next(items) == 1
    # The caller holds item 1; the thread goes on to item 2 without being asked.
    assert second_requested.wait(10)
    assert list(items) == [2]


def test_an_error_of_the_source_is_raised_in_the_caller_after_the_items_before_it() -> None:
    def batches() -> Iterator[int]:
        yield 1
        raise LookupError("cursor gone")

    items = read_ahead(batches(), "t")
    assert next(items) == 1
    with pytest.raises(LookupError, match="cursor gone"):
        next(items)


def test_leaving_early_stops_the_thread_and_closes_the_source() -> None:
    closed = threading.Event()
    produced: list[int] = []

    def batches() -> Iterator[int]:
        try:
            for n in range(1_000_000):
                produced.append(n)
                yield n
        finally:
            closed.set()  # what closes the cursor in CollectionScanner._batches

    items = read_ahead(batches(), "t")
    assert next(items) == 0
    items.close()
    assert closed.is_set()  # close() returns only after the thread closed the source
    assert len(produced) <= 3  # the one handed over, one queued, one being read: no runaway reading
    assert not any(t.name == "read-ahead t" for t in threading.enumerate())


class Item:
    def __init__(self, position: int, kind: str = "change") -> None:
        self.position = position
        self.kind = kind


class ScriptedSource:
    """A change source that returns its script's items, then idles at the last position; or raises."""

    def __init__(self, script: list[object]) -> None:
        self.script = list(script)
        self.reads = 0
        self.opened_at: object = "closed"
        self.closed = False
        self.reconnects = 3
        self.elections = 1
        self.readers: set[str] = set()

    def open(self, start: object) -> None:
        self.opened_at = start

    @property
    def position(self) -> object:
        return "opened" if self.reads == 0 else self.reads

    def next(self) -> Item:
        self.readers.add(threading.current_thread().name)
        self.reads += 1
        if self.script:
            step = self.script.pop(0)
            if isinstance(step, BaseException):
                raise step
            assert isinstance(step, Item)
            return step
        return Item(self.reads, "idle")

    def close(self) -> None:
        self.closed = True


def test_a_source_read_ahead_hands_over_its_items_in_order_with_the_callers_position() -> None:
    from mongocdc.sources.read_ahead import ReadAheadSource

    inner = ScriptedSource([Item(10), Item(11), Item(12)])
    source = ReadAheadSource(inner, limit=2)
    source.open("start")
    assert inner.opened_at == "start"
    assert source.position == "opened"  # before any item: where the stream was opened
    assert [source.next().position for _ in range(3)] == [10, 11, 12]
    assert source.position == 12  # the last item handed over, whatever the reader has read since
    assert (source.reconnects, source.elections) == (3, 1)
    source.close()
    assert inner.closed
    assert inner.readers == {"read-ahead change stream"}  # the inner source is read by the thread only


def test_a_source_read_ahead_raises_the_readers_error_after_the_items_before_it() -> None:
    from mongocdc.errors import UnreachableError
    from mongocdc.sources.read_ahead import ReadAheadSource

    source = ReadAheadSource(ScriptedSource([Item(1), UnreachableError("MongoDB unreachable")]), limit=8)
    source.open(None)
    assert source.next().position == 1
    with pytest.raises(UnreachableError, match="unreachable"):
        source.next()
    source.close()


def test_a_source_read_ahead_holds_at_most_its_limit_ahead() -> None:
    from mongocdc.sources.read_ahead import ReadAheadSource

    inner = ScriptedSource([])
    source = ReadAheadSource(inner, limit=5)
    source.open(None)
    deadline = time.monotonic() + 10
    while inner.reads < 6 and time.monotonic() < deadline:  # 5 queued and one more read, waiting to be queued
        time.sleep(0.01)
    assert inner.reads == 6
    source.next()
    source.close()
    assert inner.reads <= 8  # one freed slot, one more read at most, no runaway reading


class FakeCursor:
    """A find cursor over ``documents`` that serves batches of ``batch_size`` and notes when each was served."""

    def __init__(self, documents: list[dict[str, int]], batch_size: int, served: list[int]) -> None:
        self.documents, self.batch_size, self.served = documents, batch_size, served
        self._served = self._serve()

    def sort(self, *_: object) -> FakeCursor:
        return self

    def hint(self, *_: object) -> FakeCursor:
        return self

    def close(self) -> None:
        return None

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def __iter__(self) -> Iterator[dict[str, int]]:
        return self

    def __next__(self) -> dict[str, int]:
        return next(self._served)

    def _serve(self) -> Iterator[dict[str, int]]:
        for index, document in enumerate(self.documents):
            if index % self.batch_size == 0:
                time.sleep(0.002)  # the server's time for a batch: lets the clock move between batches
            self.served.append(time.time_ns())  # when the server had read this document, at the latest
            yield document


class FakeCollection:
    def __init__(self, documents: list[dict[str, int]], served: list[int]) -> None:
        self.documents, self.served = documents, served

    def with_options(self, **_: object) -> FakeCollection:
        return self

    def find(self, query: dict[str, Any], batch_size: int) -> FakeCursor:
        # A fresh scan asks for everything at once; a resumed one bracket by bracket (the documents'
        # int _ids are all in the numbers bracket).
        numbers = "_id" not in query or "int" in query["_id"]["$type"]
        return FakeCursor(self.documents if numbers else [], batch_size, self.served)


def test_each_chunk_is_stamped_no_later_than_the_server_read_any_of_its_documents() -> None:
    from mongocdc.sources.mongo.scan import CollectionScanner

    served: list[int] = []
    collection = FakeCollection([{"_id": i} for i in range(7)], served)
    scanner = CollectionScanner({"db": {"c": collection}}, "db", "c", fetch_size=2)  # type: ignore[arg-type]
    chunks = []
    for chunk in scanner.chunks():
        chunks.append(chunk)
        time.sleep(0.002)  # the caller's work on the chunk (what a late stamp would include)
    assert [[d["_id"] for d in c.documents] for c in chunks] == [[0, 1], [2, 3], [4, 5], [6]]
    for chunk in chunks:
        assert chunk.read_ns is not None
        assert all(chunk.read_ns <= served[d["_id"]] for d in chunk.documents)


class BatchedSource(ScriptedSource):
    """A scripted source whose first ``in_hand`` items are one batch already read (``buffered``); reading
    past them waits for ``more`` (a ``getMore`` that has nothing yet)."""

    def __init__(self, script: list[object], in_hand: int) -> None:
        super().__init__(script)
        self.in_hand = in_hand
        self.more = threading.Event()
        self.reads_when_taken: list[int] = []

    def buffered(self) -> bool:
        return self.reads < self.in_hand

    def next(self) -> Item:
        if self.reads >= self.in_hand:
            assert self.more.wait(10)
        else:
            time.sleep(0.002)  # converting an item takes time: a caller handed items one by one gets the first early
        return super().next()


def test_a_batch_in_hand_is_handed_over_as_one_run() -> None:
    from mongocdc.sources.read_ahead import ReadAheadSource

    inner = BatchedSource([Item(n) for n in range(1, 11)], in_hand=10)
    source = ReadAheadSource(inner, limit=2048)
    source.open(None)
    first = source.next()
    assert first.position == 1
    assert inner.reads >= 10  # the caller got item 1 only once the reader had the whole batch: one wake-up, not ten
    assert [source.next().position for _ in range(9)] == list(range(2, 11))
    inner.more.set()
    source.close()


def test_a_run_ends_where_the_next_item_needs_the_server() -> None:
    from mongocdc.sources.read_ahead import ReadAheadSource

    inner = BatchedSource([Item(n) for n in range(1, 5)], in_hand=3)
    source = ReadAheadSource(inner, limit=2048)
    source.open(None)
    # Items 1-3 are in hand; the 4th read waits for the server: 1-3 must not wait with it.
    assert [source.next().position for _ in range(3)] == [1, 2, 3]
    assert not inner.more.is_set()
    inner.more.set()
    assert source.next().position == 4
    assert source.position == 4
    source.close()


def test_the_readers_error_comes_after_the_items_of_its_run() -> None:
    from mongocdc.errors import UnreachableError
    from mongocdc.sources.read_ahead import ReadAheadSource

    inner = BatchedSource([Item(1), Item(2), UnreachableError("MongoDB unreachable")], in_hand=5)
    source = ReadAheadSource(inner, limit=2048)
    source.open(None)
    assert [source.next().position for _ in range(2)] == [1, 2]
    with pytest.raises(UnreachableError, match="unreachable"):
        source.next()
    source.close()


class GatedSource(ScriptedSource):
    """Each item waits for its gate: the test decides when the reader has the next one."""

    def __init__(self, count: int) -> None:
        super().__init__([Item(i) for i in range(count)])
        self.gates = [threading.Event() for _ in range(count)]

    def next(self) -> Item:
        index = self.reads
        if index < len(self.gates):
            self.gates[index].wait(30)
        return super().next()


def test_caught_up_when_nothing_more_came_within_the_linger() -> None:
    """transaction.boundary=poll: the task commits once it has handed over all the reader read and no more came."""
    from mongocdc.sources.read_ahead import ReadAheadSource

    inner = GatedSource(3)
    source = ReadAheadSource(inner, limit=8)
    source.open(None)
    inner.gates[0].set()
    assert source.next().position == 0
    assert source.caught_up(0.05)  # the reader waits on the server: nothing more within 50 ms
    timer = threading.Timer(0.05, inner.gates[1].set)
    timer.start()
    assert not source.caught_up(30.0)  # the next change came while lingering: the transaction goes on
    assert source.next().position == 1
    inner.gates[2].set()
    source.close()
    timer.join()


class RetryingSource(ScriptedSource):
    """After its script, ``next`` blocks as a stream retrying a server that is gone does (minutes of attempts)."""

    def __init__(self, script: list[object]) -> None:
        super().__init__(script)
        self.gone = threading.Event()
        self.released = threading.Event()

    def next(self) -> Item:
        if not self.script:
            self.gone.set()
            self.released.wait(30)
        return super().next()


def test_a_stop_is_not_held_up_by_a_reader_retrying_a_gone_server() -> None:
    from mongocdc.sources.base import Idle
    from mongocdc.sources.read_ahead import ReadAheadSource

    stop = threading.Event()
    inner = RetryingSource([Item(7)])
    source = ReadAheadSource(inner, limit=8, stop=stop)
    source.open(None)
    try:
        assert source.next().position == 7
        assert inner.gone.wait(10)
        stop.set()
        started = time.monotonic()
        item = source.next()  # nothing will come: an idle item at the caller's position, so the loop sees the stop
        assert isinstance(item, Idle) and item.position == 7
        source.close()  # the reader is not waited for a join_timeout_s
        assert time.monotonic() - started < ReadAheadSource.STOPPED_JOIN_S + 2
        assert inner.closed
    finally:
        inner.released.set()


def test_until_the_stop_next_waits_for_a_reader_that_retries() -> None:
    from mongocdc.sources.read_ahead import ReadAheadSource

    stop = threading.Event()
    inner = RetryingSource([Item(1)])
    source = ReadAheadSource(inner, limit=8, stop=stop)
    source.open(None)
    assert source.next().position == 1
    assert inner.gone.wait(10)
    threading.Timer(0.5, inner.released.set).start()
    assert source.next().position == 2  # the reader's next item, once its retries ended (no idle item before)
    source.close()
