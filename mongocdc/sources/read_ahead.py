"""Reading MongoDB one step ahead of the caller, in a thread of its own.

A cursor's next batch is a round trip to the server (a ``getMore``) and the server's work behind
it. Read in line, that time adds to the caller's (converting, enveloping, producing); read ahead by
a thread, it overlaps with it: the socket wait releases the GIL, so on a machine with a core to
spare for the server, the server prepares the next batch while the caller works on this one. This
is Debezium's shape too: its change stream and snapshot readers fill a queue that the Kafka Connect
task thread drains.

Two forms: :func:`read_ahead` for an iterator (the snapshot's chunks), :class:`ReadAheadSource`
for a change source (``sources.base.ChangeSource``). In both, the wrapped reader runs
only in the thread once started (a generator, a pymongo cursor, are not to be driven from two
threads), its exceptions are raised in the caller after the items read before them, and the
number of items held ahead is bounded.

A change source's items are handed over in runs: everything the reader converts from the batch it
has in hand (up to :data:`RUN_ITEMS` items) goes over at once. Handing over item by item woke the
waiting caller once per change (a lock release, a thread switch and a wait for the GIL, several
microseconds of CPU each time, for about a quarter of a change's own work); a run is one wake-up.
A run ends when the next item would need the server (the source's ``buffered()`` says so), so a
change is never held back waiting for later ones.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from mongocdc.events.position import Position
from mongocdc.sources.base import ChangeSource, Idle, StreamItem

log = logging.getLogger("mongocdc.mongo.read_ahead")

T = TypeVar("T")
S = TypeVar("S", bound=ChangeSource)
_END = object()

RUN_ITEMS = 256
"""The most items a change source's reader hands over at once (about 10 ms of its work)."""


class _Handoff:
    """A bounded hand-over of runs of items from one reader thread to one caller, that a closed caller stops.

    The bound counts items, not runs: a run is queued while fewer than ``limit`` items are.
    """

    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self._runs: deque[tuple[list[Any], BaseException | None]] = deque()
        self._held = 0
        self._ready = threading.Condition(threading.Lock())
        self.closed = threading.Event()

    def put(self, run: list[Any], error: BaseException | None = None) -> bool:
        """Queue ``run`` (then ``error``, if any); ``False`` once the caller closed, when nobody will take it."""
        with self._ready:
            while self._held >= self._limit:
                if self.closed.is_set():
                    return False
                self._ready.wait(0.1)
            if self.closed.is_set():
                return False
            if run:
                self._runs.append((run, None))
                self._held += len(run)
            if error is not None:
                self._runs.append(([], error))
            self._ready.notify()
        return True

    def wait_ready(self, timeout_s: float) -> bool:
        """Whether a run (or the reader's error) is waiting, after waiting up to ``timeout_s`` for one."""
        with self._ready:
            if not self._runs and timeout_s > 0:
                self._ready.wait(timeout_s)
            return bool(self._runs)

    def get(self) -> list[Any]:
        """The next run; raises the reader's error once the runs before it were taken."""
        with self._ready:
            while not self._runs:
                self._ready.wait()
            run, error = self._runs.popleft()
            self._held -= len(run)
            self._ready.notify()
        if error is not None:
            raise error
        return run


def read_ahead(items: Iterator[T], name: str) -> Iterator[T]:
    """``items``, produced one ahead by a thread of their own.

    Closing this iterator (or leaving it early) stops the thread after the item it is on and closes
    ``items`` there (which closes a cursor it holds). At most two items are held besides the
    caller's: the one queued and the one being read.
    """
    handoff = _Handoff(1)

    def pump() -> None:
        try:
            for item in items:
                if not handoff.put([item]):
                    return
            handoff.put([_END])
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            handoff.put([], exc)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=pump, name=f"read-ahead {name}", daemon=True)
    thread.start()
    try:
        while True:
            (item,) = handoff.get()
            if item is _END:
                return
            yield item
    finally:
        handoff.closed.set()
        thread.join()


class ReadAheadSource(Generic[S]):
    """A change source whose items are read by a thread, up to ``limit`` ahead of :meth:`next`.

    The inner source is opened by the caller's thread, then read only by the reader thread until
    :meth:`close`. :attr:`position` is the position of the last item :meth:`next` returned (or of
    the opened stream before any), not the reader's: what the caller has seen is what counts for
    offsets and for the incremental snapshot's reads. Counters the engine reads (``reconnects``,
    ``elections``) are the inner source's.

    The reader hands its items over in runs (the module's docstring says why): after each item it
    reads on while the inner source's ``buffered()`` says the next one is in hand (a source without
    ``buffered`` hands over item by item), up to :data:`RUN_ITEMS`.
    """

    STOP_CHECK_S = 0.2
    """How often :meth:`next`, waiting for the reader, looks at ``stop``."""
    STOPPED_JOIN_S = 1.0
    """How long :meth:`close` waits for the reader once ``stop`` is set (it may be retrying a gone server)."""

    def __init__(
        self,
        inner: S,
        *,
        limit: int,
        name: str = "change stream",
        join_timeout_s: float = 30.0,
        stop: threading.Event | None = None,
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._name = name
        self._join_timeout_s = join_timeout_s
        self._stop = stop
        self._handoff: _Handoff | None = None
        self._thread: threading.Thread | None = None
        self._position: Position | None = None
        self._taken: deque[StreamItem] = deque()
        """The rest of the run last taken from the reader, handed out by :meth:`next` one by one."""

    @property
    def inner(self) -> S:
        """The source read ahead (its own type, so ``wiring`` reaches what only it has)."""
        return self._inner

    def open(self, start: Position | None) -> None:
        self._inner.open(start)
        self._position = self._inner.position
        self._taken.clear()
        handoff = _Handoff(self._limit)
        self._handoff = handoff
        self._thread = threading.Thread(
            target=self._pump, args=(handoff,), name=f"read-ahead {self._name}", daemon=True
        )
        self._thread.start()

    def _pump(self, handoff: _Handoff) -> None:
        inner = self._inner
        buffered: Callable[[], bool] = getattr(inner, "buffered", _never)
        most = max(1, min(RUN_ITEMS, self._limit))
        while not handoff.closed.is_set():
            run: list[StreamItem] = []
            try:
                run.append(inner.next())
                while len(run) < most and buffered():
                    run.append(inner.next())
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                handoff.put(run, exc)
                return
            if not handoff.put(run):
                return

    def next(self) -> StreamItem:
        """The next item; once ``stop`` is set, an ``Idle`` at the caller's position when the reader has nothing in
        hand: a reader retrying a server that is gone (``connect.max.attempts``: minutes) does not hold the stop up."""
        taken = self._taken
        if not taken:
            handoff = self._handoff
            if handoff is None:
                raise RuntimeError("open() the source first")
            stop = self._stop
            if stop is not None and self._position is not None:
                while not handoff.wait_ready(self.STOP_CHECK_S):
                    if stop.is_set():
                        return Idle(self._position)
            taken.extend(handoff.get())
        item = taken.popleft()
        self._position = item.position
        return item

    def caught_up(self, linger_s: float = 0.0) -> bool:
        """Whether every item the reader has read so far was returned by :meth:`next`, and no more came within
        ``linger_s`` (what a transaction that ends at ``transaction.boundary=poll`` waits for)."""
        if self._taken:
            return False
        return self._handoff is None or not self._handoff.wait_ready(linger_s)

    @property
    def position(self) -> Position | None:
        return self._position

    @property
    def reconnects(self) -> int:
        return self._inner.reconnects

    @property
    def elections(self) -> int:
        return self._inner.elections

    def close(self) -> None:
        """Stop the reader after the run it is on (at most one poll interval), then close the inner source."""
        if self._handoff is not None:
            self._handoff.closed.set()
        if self._thread is not None:
            stopping = self._stop is not None and self._stop.is_set()
            self._thread.join(min(self._join_timeout_s, self.STOPPED_JOIN_S) if stopping else self._join_timeout_s)
            if self._thread.is_alive():
                log.warning(
                    "the %s reader did not stop within %.0f s; closing its stream under it",
                    self._name,
                    self._join_timeout_s,
                )
        self._handoff = None
        self._thread = None
        self._taken.clear()
        self._inner.close()


def _never() -> bool:
    return False
