"""Reassemble change events split by ``$changeStreamSplitLargeEvent`` (pure, no I/O).

With ``cursor.oversize.handling.mode=split`` the change stream pipeline ends with
``$changeStreamSplitLargeEvent`` (MongoDB 6.0.9+): an event larger than 16 MiB arrives as
``m`` consecutive fragments, each carrying ``splitEvent: {fragment: n, of: m}`` (``n`` from 1),
its own ``_id`` (a resume token) and some of the event's top-level fields. Merging the
fragments' fields gives the original change document; its ``_id`` is the last fragment's,
the only token after which resuming neither repeats nor loses part of the event.
Events small enough to travel whole have no ``splitEvent`` (some servers send
``{fragment: 1, of: 1}``), and pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongocdc.events.changes import MalformedChangeError

SPLIT_FIELD = "splitEvent"


class SplitEventError(MalformedChangeError):
    """Fragments of a split change event that do not form one whole event."""


def fragment_of(change: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(n, m)`` of a fragment, or ``None`` for a change document that was not split."""
    split = change.get(SPLIT_FIELD)
    if split is None:
        return None
    try:
        n, m = int(split["fragment"]), int(split["of"])
    except (KeyError, TypeError, ValueError):
        raise SplitEventError(f"splitEvent must be {{fragment: n, of: m}}, got {split!r}") from None
    if m < 1 or not 1 <= n <= m:
        raise SplitEventError(f"splitEvent fragment {n} of {m} is out of range")
    return n, m


def merge_fragments(fragments: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One change document from all fragments of a split event, in order; ``_id`` is the last fragment's."""
    if not fragments:
        raise SplitEventError("no fragments to merge")
    expected = len(fragments)
    merged: dict[str, Any] = {}
    for index, fragment in enumerate(fragments, start=1):
        where = fragment_of(fragment)
        if where != (index, expected):
            raise SplitEventError(f"expected fragment {index} of {expected}, got {_describe(where)}")
        for field, value in fragment.items():
            if field not in ("_id", SPLIT_FIELD):
                merged.setdefault(field, value)
    merged["_id"] = fragments[-1]["_id"]
    return merged


def _describe(where: tuple[int, int] | None) -> str:
    return "a change without splitEvent" if where is None else f"fragment {where[0]} of {where[1]}"


class FragmentBuffer:
    """Collects the fragments of one split event at a time; ``add`` returns the whole event when complete.

    The caller must not treat a fragment's ``_id`` as a position: until ``add`` returns a
    document, the stream's position is still the one before the first fragment. After a lost
    connection the stream resumes from there and delivers every fragment again, so the caller
    ``clear``s the buffer when it reopens the stream.
    """

    def __init__(self) -> None:
        self._fragments: list[Mapping[str, Any]] = []

    @property
    def pending(self) -> bool:
        """Whether some fragments of an event arrived and the rest have not yet."""
        return bool(self._fragments)

    def clear(self) -> None:
        self._fragments = []

    def add(self, change: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The complete change document, or ``None`` while fragments of it are still missing."""
        where = fragment_of(change)
        if where is None:
            if self._fragments:
                raise SplitEventError(
                    f"a change without splitEvent arrived after {len(self._fragments)} fragment(s) of a split event"
                )
            return change
        n, m = where
        if n != len(self._fragments) + 1:
            got = len(self._fragments)
            self._fragments = []
            raise SplitEventError(f"fragment {n} of {m} arrived after {got} fragment(s): fragments are missing")
        self._fragments.append(change)
        if n < m:
            return None
        fragments, self._fragments = self._fragments, []
        return merge_fragments(fragments)
