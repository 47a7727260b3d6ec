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
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from mongocdc.events.position import Position
from mongocdc.sources.base import ChangeSource, StreamItem

log = logging.getLogger("mongocdc.mongo.read_ahead")

T = TypeVar("T")
S = TypeVar("S", bound=ChangeSource)
_END = object()


class _Handoff(Generic[T]):
    """A bounded queue from one reader thread to one caller, that a closed caller stops waiting on."""

    def __init__(self, limit: int) -> None:
        self._queue: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=max(1, limit))
        self.closed = threading.Event()

    def put(self, item: Any, error: BaseException | None = None) -> bool:
        """Queue ``item`` (or ``error``); ``False`` once the caller closed, when nobody will take it."""
        while not self.closed.is_set():
            try:
                self._queue.put((item, error), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def get(self) -> Any:
        item, error = self._queue.get()
        if error is not None:
            raise error
        return item


def read_ahead(items: Iterator[T], name: str) -> Iterator[T]:
    """``items``, produced one ahead by a thread of their own.

    Closing this iterator (or leaving it early) stops the thread after the item it is on and closes
    ``items`` there (which closes a cursor it holds). At most two items are held besides the
    caller's: the one queued and the one being read.
    """
    handoff: _Handoff[T] = _Handoff(1)

    def pump() -> None:
        try:
            for item in items:
                if not handoff.put(item):
                    return
            handoff.put(_END)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            handoff.put(None, exc)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=pump, name=f"read-ahead {name}", daemon=True)
    thread.start()
    try:
        while True:
            item = handoff.get()
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
    """

    def __init__(self, inner: S, *, limit: int, name: str = "change stream", join_timeout_s: float = 30.0) -> None:
        self._inner = inner
        self._limit = limit
        self._name = name
        self._join_timeout_s = join_timeout_s
        self._handoff: _Handoff[Any] | None = None
        self._thread: threading.Thread | None = None
        self._position: Position | None = None

    @property
    def inner(self) -> S:
        """The source read ahead (its own type, so ``wiring`` reaches what only it has)."""
        return self._inner

    def open(self, start: Position | None) -> None:
        self._inner.open(start)
        self._position = self._inner.position
        handoff: _Handoff[Any] = _Handoff(self._limit)
        self._handoff = handoff
        self._thread = threading.Thread(
            target=self._pump, args=(handoff,), name=f"read-ahead {self._name}", daemon=True
        )
        self._thread.start()

    def _pump(self, handoff: _Handoff[Any]) -> None:
        while not handoff.closed.is_set():
            try:
                item = self._inner.next()
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                handoff.put(None, exc)
                return
            if not handoff.put(item):
                return

    def next(self) -> StreamItem:
        if self._handoff is None:
            raise RuntimeError("open() the source first")
        item: StreamItem = self._handoff.get()
        self._position = item.position
        return item

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
        """Stop the reader after the item it is on (at most one poll interval), then close the inner source."""
        if self._handoff is not None:
            self._handoff.closed.set()
        if self._thread is not None:
            self._thread.join(self._join_timeout_s)
            if self._thread.is_alive():
                log.warning(
                    "the %s reader did not stop within %.0f s; closing its stream under it",
                    self._name,
                    self._join_timeout_s,
                )
        self._handoff = None
        self._thread = None
        self._inner.close()
