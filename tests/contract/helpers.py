"""Polling helpers for the contract tests: every wait has a deadline and a condition."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pymongo.change_stream import ChangeStream

Doc = dict[str, Any]

#: How long a test waits for an event the server should deliver.
EVENT_TIMEOUT = 10.0
#: maxAwaitTimeMS for streams that are only polled.
POLL_AWAIT_MS = 200
#: Pause between polls when the server answers an empty getMore at once.
_POLL_INTERVAL = 0.02


def next_change(stream: ChangeStream[Doc], timeout: float = EVENT_TIMEOUT) -> Doc:
    """The next event of ``stream``; fails the test if none arrives before the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        started = time.monotonic()
        event = stream.try_next()
        if event is not None:
            return event
        if not stream.alive:
            raise AssertionError("change stream closed before an event arrived")
        now = time.monotonic()
        if now >= deadline:
            raise AssertionError(f"no change event within {timeout}s")
        if now - started < _POLL_INTERVAL:
            # The server did not block on getMore: poll gently until the deadline.
            time.sleep(_POLL_INTERVAL)


def changes(stream: ChangeStream[Doc], count: int, timeout: float = EVENT_TIMEOUT) -> list[Doc]:
    """The next ``count`` events of ``stream``, within one overall deadline."""
    deadline = time.monotonic() + timeout
    return [next_change(stream, max(0.0, deadline - time.monotonic())) for _ in range(count)]


def changes_until(
    stream: ChangeStream[Doc], is_last: Callable[[Doc], bool], timeout: float = EVENT_TIMEOUT, limit: int = 1000
) -> list[Doc]:
    """Events up to and including the first one for which ``is_last`` holds."""
    deadline = time.monotonic() + timeout
    seen: list[Doc] = []
    while len(seen) < limit:
        event = next_change(stream, max(0.0, deadline - time.monotonic()))
        seen.append(event)
        if is_last(event):
            return seen
    raise AssertionError(f"no closing event among the first {limit} events: {seen[-5:]}")


def key_of(event: Doc) -> object:
    """``documentKey._id`` of a change event."""
    document_key = event.get("documentKey")
    assert isinstance(document_key, dict), f"event without documentKey: {event}"
    return document_key.get("_id")


def is_marker(marker_id: object) -> Callable[[Doc], bool]:
    """Predicate: the event is the insert of the document with ``_id == marker_id``."""

    def check(event: Doc) -> bool:
        return event.get("operationType") == "insert" and key_of(event) == marker_id

    return check
