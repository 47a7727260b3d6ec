"""What a change source hands the engine: the closed union of stream items, and the source protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mongocdc.events.changes import ControlChange, SignalChange, StreamedChange
from mongocdc.events.position import Position


@dataclass(frozen=True, slots=True)
class Idle:
    """Nothing to emit: no change arrived within one poll, or the change was filtered out.

    ``position`` is where the stream stands now (the post-batch resume token of an empty poll, or the
    filtered change's position), so a quiet or filtered stream still moves its offset forward.
    """

    position: Position


StreamItem = StreamedChange | ControlChange | SignalChange | Idle
"""Everything ``ChangeSource.next`` returns; the engine handles each kind (``match`` with ``assert_never``)."""


class ChangeSource(Protocol):
    """One change stream as the streaming loop drives it (``MongoChangeStreamSource``, ``ReadAheadSource``)."""

    def open(self, start: Position | None) -> None:
        """Open after ``start``, or at the present when there is none."""

    def next(self) -> StreamItem:
        """The next item, waiting at most one poll interval (then an ``Idle``)."""

    @property
    def position(self) -> Position | None:
        """The position after the last item returned (after ``open``: where the stream starts)."""

    @property
    def reconnects(self) -> int:
        """How often the stream lost its connection and was reopened (a metric)."""

    @property
    def elections(self) -> int:
        """Primary elections the client saw since it connected (a metric)."""

    def close(self) -> None: ...
