"""One partition's checkpointer: when its offset is committed, which offset, and how.

The streaming loop and the snapshot follow the same commit policy, written here once (in the spirit of
quix-streams' ``Checkpoint``). A task numbers each record before it produces it (:meth:`Checkpointer.record`,
whose return value is the record's ``on_ack``) and adds the offset after each item it handled
(:attr:`Checkpointer.add`); the checkpointer decides the rest:

- *when*: every ``offset.flush.interval.ms`` (:meth:`Checkpointer.tick`), sooner when the task asks
  (:meth:`Checkpointer.commit_soon`, after a heartbeat), and with a transactional store at each transaction
  boundary too (``TransactionBoundary``);
- *what*: at least once, the newest offset all of whose records Kafka acknowledged (``AckTracker``), so an
  offset never runs ahead of Kafka; exactly once, the offset that covers every record produced so far, committed
  with the Kafka transaction that holds those records (``engine/exactly_once.py``);
- *only when something changed*: an offset equal to the last one committed is not written again (exactly once,
  a transaction that holds records is committed even then, with that offset after them);
- *the end*: :meth:`Checkpointer.close` (a graceful stop) flushes the producer, waits for every delivery report
  and commits; :meth:`Checkpointer.close_on_error` aborts the open transaction (exactly once: the half-produced
  item is never read committed) or commits what was acknowledged before the failure (at least once).

The offset becomes JSON only when it is committed (``SourceOffset.to_record``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

from mongocdc.engine.acks import AckTracker
from mongocdc.engine.exactly_once import TransactionBoundary, is_transactional
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.offsets.base import OffsetStore

_log = logging.getLogger("mongocdc.engine")

ERROR_FLUSH_TIMEOUT_S = 5.0
"""How long a task that fails waits for Kafka's acknowledgements before committing what it has (at least once)."""


class Producer(Protocol):
    """What the checkpointer needs of the sink: its flush, the "wait for every delivery report" of a stop."""

    def flush(self, timeout: float | None = None) -> None: ...


def _never() -> bool:
    return False


class Checkpointer:
    """Commits one partition's offset to its store; see the module docstring.

    ``transaction_offset``: exactly once, the offset that covers every record produced so far (called with
    ``lock`` held; default: the newest offset added). ``lock``: held by an exactly-once commit, so that a task
    whose threads produce under the same lock never has a record in a transaction its offset does not cover
    (default: a lock of the checkpointer's own, for a task with one producing thread). ``on_commit`` hears of
    each commit the checkpointer makes, with the offset written (``None``: nothing new to write).

    At least once, :meth:`commit` is called from one thread at a time (the acknowledgements may come from any).
    """

    def __init__(
        self,
        store: OffsetStore,
        connector: str,
        partition: str,
        producer: Producer,
        *,
        flush_interval_s: float,
        boundary: TransactionBoundary,
        clock: Callable[[], float] = time.monotonic,
        transaction_offset: Callable[[], SourceOffset | None] | None = None,
        lock: threading.Lock | None = None,
        on_commit: Callable[[SourceOffset | None], None] | None = None,
        log: logging.Logger = _log,
    ) -> None:
        self._store = store
        self._connector = connector
        self._partition = partition
        self._producer = producer
        self._flush_interval_s = flush_interval_s
        self._boundary = boundary
        self._clock = clock
        self._tracker: AckTracker[SourceOffset] = AckTracker()
        """The offset after each item, against the records produced before it."""
        self.add: Callable[[SourceOffset], None] = self._tracker.add_position
        """Every record of the items up to an offset was handed to the producer: the offset is committable once
        Kafka acknowledged them all (exactly once: at the next commit, with them). The tracker's own method: the
        streaming loop adds one offset per item."""
        self._transaction_offset = transaction_offset or self._tracker.latest
        self._lock = lock or threading.Lock()
        self._on_commit = on_commit
        self._log = log
        self._transactional = store if is_transactional(store) else None
        """The store when its commits are Kafka transactions of the sink's records (``exactly.once.support``)."""
        self._last: SourceOffset | None = None
        self._committed_records = 0
        """Records numbered when the last transaction was committed."""
        self._transaction_began = clock()
        self._next_commit = clock() + flush_interval_s

    # -- what the task tells it ---------------------------------------------------------

    def record(self) -> Callable[[], None]:
        """Number the next record before it is handed to the producer; returns its acknowledgement, the
        producer's ``on_ack`` (a task calls it itself for a record that was never sent: nothing to wait for)."""
        tracker = self._tracker
        return partial(tracker.acked, tracker.issue())

    # -- what it tells the task ---------------------------------------------------------

    @property
    def transactional(self) -> bool:
        """Whether commits are Kafka transactions (``exactly.once.support``), not acknowledged offsets."""
        return self._transactional is not None

    @property
    def in_flight(self) -> int:
        """Records produced but not yet acknowledged (back-pressure, the in-flight gauge)."""
        return self._tracker.in_flight

    @property
    def last_committed(self) -> SourceOffset | None:
        """The offset this checkpointer wrote last (``None``: none yet)."""
        return self._last

    def _transaction_records(self) -> int:
        """Exactly once: records produced into the open transaction."""
        return self._tracker.issued - self._committed_records

    # -- when ---------------------------------------------------------------------------

    def start_interval(self) -> None:
        """The next interval commit is due ``flush_interval_s`` from now (a loop calls it as it starts)."""
        self._next_commit = self._clock() + self._flush_interval_s

    def commit_soon(self) -> None:
        """Make the next :meth:`tick` commit (a heartbeat: a quiet task still records where it stands)."""
        self._next_commit = min(self._next_commit, self._clock())

    def due(self, caught_up: Callable[[], bool] = _never) -> bool:
        """Whether a commit is due now: the flush interval elapsed, or (exactly once) the open transaction reached
        its boundary (``caught_up``: whether the task has handed Kafka all it read; asked last, it may wait)."""
        now = self._clock()
        if now >= self._next_commit:
            return True
        return self._transactional is not None and self._boundary.due(
            self._transaction_records(), caught_up, now, self._transaction_began
        )

    def full(self) -> bool:
        """Exactly once with ``transaction.boundary=poll``: the open transaction holds ``max_records`` records
        (a task whose producing threads cannot ask whether they are caught up commits on this alone)."""
        boundary = self._boundary
        return (
            self._transactional is not None
            and boundary.mode == "poll"
            and self._transaction_records() >= boundary.max_records
        )

    def tick(self, caught_up: Callable[[], bool] = _never) -> bool:
        """Commit if :meth:`due`, then start the next interval; returns whether it committed."""
        if self._transactional is None and self._clock() < self._next_commit:
            return False  # at least once between two commits, the common case: decided without asking more
        if not self.due(caught_up):
            return False
        self.commit()
        self._next_commit = self._clock() + self._flush_interval_s
        return True

    # -- what, and how ------------------------------------------------------------------

    def commit(self) -> SourceOffset | None:
        """Commit what is committable now, if it is new; returns the offset written (``None``: nothing new).

        At least once: the newest offset all of whose records Kafka acknowledged. Exactly once: the offset that
        covers every record produced, with the transaction that holds them (also when the offset did not change
        but records were produced)."""
        if self._transactional is not None:
            committed = self._commit_transaction()
        else:
            committed = self._write(self._tracker.committable())
        if self._on_commit is not None:
            self._on_commit(committed)
        return committed

    def commit_offset(self, offset: SourceOffset) -> SourceOffset | None:
        """Commit ``offset`` itself, if it is new: an offset known to cover everything produced (a snapshot's start,
        before anything is)."""
        committed = self._write(offset)
        if self._on_commit is not None:
            self._on_commit(committed)
        return committed

    def _commit_transaction(self) -> SourceOffset | None:
        with self._lock:
            offset = self._transaction_offset()
            issued = self._tracker.issued
            held = issued != self._committed_records
            committed = self._write(offset, even_if_unchanged=held)
            self._committed_records = issued
            self._transaction_began = self._clock()
            return committed

    def _write(self, offset: SourceOffset | None, *, even_if_unchanged: bool = False) -> SourceOffset | None:
        """The last-commit check, and the store's commit: the only moment the offset becomes JSON."""
        if offset is None or (offset == self._last and not even_if_unchanged):
            return None
        self._store.commit(self._connector, self._partition, offset.to_record())
        self._last = offset
        return offset

    # -- the end ------------------------------------------------------------------------

    def close(self, flush_timeout_s: float | None = None, *, flush_transaction: bool = True) -> SourceOffset | None:
        """A graceful stop (the task has stopped reading): flush the producer, wait for every delivery report
        (at most ``flush_timeout_s``), then :meth:`commit`. ``flush_transaction=False``: exactly once, commit
        without the flush (the transaction's commit waits for its records itself)."""
        if self._transactional is None or flush_transaction:
            self._producer.flush(flush_timeout_s)
        return self.commit()

    def close_on_error(self) -> None:
        """A task that fails: exactly once, abort the open transaction (the item being handled may be half
        produced; nothing of it is committed); at least once, flush briefly and commit what was acknowledged.
        Never raises at least once: the task's own error is the one to report."""
        if self._transactional is not None:
            self._transactional.abort()
            return
        try:
            self._producer.flush(ERROR_FLUSH_TIMEOUT_S)
        except Exception as exc:  # the sink may be what failed; commit only what was acknowledged
            self._log.warning("could not flush Kafka while stopping on an error: %s", exc)
        try:
            self.commit()
        except Exception:
            self._log.exception("could not commit the last acknowledged offset")
