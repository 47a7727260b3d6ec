"""What the engine knows of exactly-once delivery (``exactly.once.support``): when a transaction ends.

With a transactional store (``sinks/kafka/exactly_once.TransactionalOffsets``) a commit is a Kafka transaction
that holds every record produced since the last one and the offset after them, so the engine commits the
newest offset handed to the producer (not the newest acknowledged one, as at least once does), commits only
where that offset covers every record produced, and aborts instead of committing when it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeGuard

from mongocdc.offsets.base import OffsetStore


class TransactionalStore(OffsetStore, Protocol):
    """An offset store whose ``commit`` commits the sink's open transaction together with the offset."""

    @property
    def transactional(self) -> bool: ...

    def abort(self) -> None:
        """Abort the open transaction: none of its records, and no offset after them, is ever read committed."""


def is_transactional(store: OffsetStore) -> TypeGuard[TransactionalStore]:
    return bool(getattr(store, "transactional", False))


@dataclass(frozen=True, slots=True)
class TransactionBoundary:
    """Kafka Connect's ``transaction.boundary``: where a transaction of change events ends.

    ``poll``: once the task has handed Kafka every change read so far (the reader has nothing more in hand),
    or after ``max_records`` records, whichever comes first; ``interval``: every ``interval_s`` seconds.
    """

    mode: Literal["poll", "interval"] = "poll"
    max_records: int = 2048
    interval_s: float = 60.0
    linger_s: float = 0.0
    """``poll``: how long the task waits for more changes once it has handed Kafka all it read, before it commits
    (the reader converts its next run meanwhile: without a wait, a backlog is committed in runs of a few hundred)."""

    def due(self, records: int, caught_up: Callable[[], bool], now: float, began: float) -> bool:
        """Whether a transaction of ``records`` records, begun at ``began``, ends now (``caught_up`` is asked last:
        it may wait ``linger_s``)."""
        if records <= 0:
            return False
        if self.mode == "interval":
            return now - began >= self.interval_s
        return records >= self.max_records or caught_up()
