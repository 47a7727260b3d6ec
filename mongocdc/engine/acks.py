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
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued = -1
        self._pending: set[int] = set()
        self._positions: deque[tuple[int, P]] = deque()
        self._committable: P | None = None

    def issue(self) -> int:
        """Number the next record before it is handed to the producer."""
        with self._lock:
            self._issued += 1
            self._pending.add(self._issued)
            return self._issued

    def acked(self, seq: int) -> None:
        """Kafka acknowledged record ``seq``."""
        with self._lock:
            self._pending.discard(seq)

    def add_position(self, position: P) -> None:
        """Everything up to ``position`` has been handed to the producer."""
        with self._lock:
            self._positions.append((self._issued, position))

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._pending)

    def committable(self) -> P | None:
        """The newest position all of whose records were acknowledged (``None`` if none yet)."""
        with self._lock:
            low = min(self._pending) if self._pending else self._issued + 1
            while self._positions and self._positions[0][0] < low:
                self._committable = self._positions.popleft()[1]
            return self._committable
