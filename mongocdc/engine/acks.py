"""Which source position may be committed: the last one whose records Kafka all acknowledged."""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

P = TypeVar("P")


class AckTracker(Generic[P]):
    """Orders positions against record sequence numbers.

    Records are numbered (``issue``) before they are produced. After the records
    of a change are produced, its position is added with the last sequence
    number issued so far. A position becomes committable once every record
    with a sequence number up to that one was acknowledged; acknowledgements
    may arrive in any order (records go to many partitions).

    Every operation is amortised O(1), and the tracker holds at most one
    position per record still in flight (plus one), however long commits wait.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._low = 0
        """Every record numbered below this was acknowledged."""
        self._acked_ahead: set[int] = set()
        self._positions: deque[tuple[int, P]] = deque()
        self._committable: P | None = None

    def issue(self) -> int:
        """Number the next record before it is handed to the producer."""
        with self._lock:
            seq = self._next
            self._next += 1
            return seq

    def acked(self, seq: int) -> None:
        """Kafka acknowledged record ``seq``."""
        with self._lock:
            if seq != self._low:
                self._acked_ahead.add(seq)
                return
            self._low += 1
            while self._low in self._acked_ahead:
                self._acked_ahead.remove(self._low)
                self._low += 1

    def add_position(self, position: P) -> None:
        """Everything up to ``position`` has been handed to the producer."""
        with self._lock:
            last = self._next - 1
            if self._positions and self._positions[-1][0] == last:
                self._positions[-1] = (last, position)  # no record since: the newer position supersedes
            else:
                self._positions.append((last, position))
            self._drain()

    def _drain(self) -> None:
        while self._positions and self._positions[0][0] < self._low:
            self._committable = self._positions.popleft()[1]

    @property
    def issued(self) -> int:
        """Records numbered so far."""
        return self._next

    def latest(self) -> P | None:
        """The newest position added, acknowledged or not (``None`` if none yet): what a Kafka transaction that
        holds every record produced so far covers."""
        with self._lock:
            return self._positions[-1][1] if self._positions else self._committable

    @property
    def in_flight(self) -> int:
        """Records produced but not yet acknowledged."""
        with self._lock:
            return self._next - self._low - len(self._acked_ahead)

    @property
    def pending_positions(self) -> int:
        with self._lock:
            return len(self._positions)

    def committable(self) -> P | None:
        """The newest position all of whose records were acknowledged (``None`` if none yet)."""
        with self._lock:
            self._drain()
            return self._committable
