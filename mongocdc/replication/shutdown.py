"""``Shutdown``: a stop asked for, and the shutdown timeout that runs from when the copy loop saw it."""

from __future__ import annotations

import threading
import time


class Interrupted(Exception):
    """Copying stopped while waiting for room in the producer's queue (a stop was asked for)."""


class Shutdown:
    """The stop event of a run and ``timeout_s``, the time every wait after it may take in all.

    Before a stop each wait may take the whole timeout; the clock starts when the loop sees the stop
    (``seen``), or when a wait first finds the event set.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.event: threading.Event | None = None
        self._seen_at: float | None = None

    @property
    def requested(self) -> bool:
        return self.event is not None and self.event.is_set()

    def seen(self) -> None:
        """The loop saw the stop: the shutdown timeout runs from now (the first call counts)."""
        if self._seen_at is None:
            self._seen_at = time.monotonic()

    def left(self) -> float:
        """Seconds left of the shutdown timeout (the whole timeout before a stop)."""
        if self._seen_at is None:
            if not self.requested:
                return self.timeout_s
            self.seen()
        assert self._seen_at is not None
        return self._seen_at + self.timeout_s - time.monotonic()

    def expired(self) -> bool:
        """A stop was asked for and its timeout ran out."""
        return self.requested and self.left() <= 0

    def interrupt(self) -> None:
        """Raise ``Interrupted`` when a stop was asked for (a wait that must end at once)."""
        if self.requested:
            self.seen()
            raise Interrupted
