"""The signals a connector understands (pure): their types, the collection patterns they select
with, and the error a signal that cannot be carried out raises.

``mongocdc.events.signals`` describes the fields of each type; ``data``, ``collection`` and
``kafka_record`` read and write them in Debezium's formats.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Final

from mongocdc.errors import ExitCode, MongocdcError

OPEN_SUFFIX: Final = "-open"
CLOSE_SUFFIX: Final = "-close"


class InvalidSignalError(MongocdcError):
    """A signal that cannot be carried out as written; the message names the signal and the problem.

    The connector logs it and goes on (the signal is skipped); ``mongocdc signal send`` refuses to
    write it (exit code 2).
    """

    exit_code = ExitCode.USAGE

    def __init__(self, signal_id: str, reason: str) -> None:
        super().__init__(
            f"signal {signal_id!r} is invalid: {reason}",
            hint="The signal is ignored. Correct it and send it again; "
            "`mongocdc signal send --help` shows the accepted fields.",
        )
        self.signal_id = signal_id
        self.reason = reason


class SignalType(StrEnum):
    """The ``type`` of a signal."""

    EXECUTE_SNAPSHOT = "execute-snapshot"
    STOP_SNAPSHOT = "stop-snapshot"
    PAUSE_SNAPSHOT = "pause-snapshot"
    RESUME_SNAPSHOT = "resume-snapshot"
    LOG = "log"
    WINDOW_OPEN = "snapshot-window-open"
    WINDOW_CLOSE = "snapshot-window-close"


class SnapshotType(StrEnum):
    """``data.type`` of ``execute-snapshot``."""

    INCREMENTAL = "incremental"
    BLOCKING = "blocking"


# --------------------------------------------------------------------------- data collections


@dataclass(frozen=True, slots=True)
class DataCollectionPattern:
    """One entry of ``data-collections``: a regular expression over ``<database>.<collection>``,
    or a double-quoted exact name. Build it with :meth:`parse`; equal when the text is equal."""

    text: str
    literal: str | None = field(default=None, compare=False)
    """The exact namespace when the entry is a quoted name, else ``None``."""
    regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str) -> DataCollectionPattern:
        """Raises ``ValueError`` with the reason when ``text`` is neither a quoted name nor a regular expression."""
        if not text:
            raise ValueError("is empty")
        if '"' in text:
            return cls(text, literal=_parse_quoted_name(text))
        try:
            regex = re.compile(text)
        except re.error as exc:
            raise ValueError(f"is not a valid regular expression: {exc}") from None
        return cls(text, regex=regex)

    @classmethod
    def exact(cls, namespace: str) -> DataCollectionPattern:
        """The pattern matching exactly ``namespace`` (``<database>.<collection>``), in quoted form."""
        return cls.parse(quote_namespace(namespace))

    def matches(self, namespace: str) -> bool:
        if self.literal is not None:
            return namespace == self.literal
        assert self.regex is not None, "build patterns with DataCollectionPattern.parse"
        return self.regex.fullmatch(namespace) is not None


def quote_namespace(namespace: str) -> str:
    """``db.orders.2024`` → ``"db"."orders.2024"`` (the database is the part before the first dot)."""
    db, dot, collection = namespace.partition(".")
    if not dot or not db or not collection:
        raise ValueError(f"{namespace!r} is not <database>.<collection>")
    return ".".join('"' + part.replace('"', '""') + '"' for part in (db, collection))


def _parse_quoted_name(text: str) -> str:
    """``"db"."coll.x"`` (or ``db."coll.x"``) → ``db.coll.x``; a doubled quote inside a quoted part is one quote."""
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            chars: list[str] = []
            i += 1
            while True:
                if i >= n:
                    raise ValueError(f"has an unclosed double quote (quoted names look like {_QUOTED_EXAMPLE})")
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        chars.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(text[i])
                i += 1
            part = "".join(chars)
        else:
            end = text.find(".", i)
            end = n if end < 0 else end
            part = text[i:end]
            if '"' in part:
                raise ValueError(
                    f"has a double quote inside an unquoted part (quoted names look like {_QUOTED_EXAMPLE})"
                )
            i = end
        if not part:
            raise ValueError(f"has an empty name part (quoted names look like {_QUOTED_EXAMPLE})")
        parts.append(part)
        if i >= n:
            break
        if text[i] != ".":
            raise ValueError(f"has text after a closing double quote (quoted names look like {_QUOTED_EXAMPLE})")
        i += 1
    if len(parts) != 2:
        raise ValueError(
            f"names {len(parts)} parts; a quoted name is exactly <database>.<collection>, like {_QUOTED_EXAMPLE}"
        )
    return f"{parts[0]}.{parts[1]}"


_QUOTED_EXAMPLE: Final = '"inventory"."orders.2024"'


@dataclass(frozen=True, slots=True)
class AdditionalCondition:
    """``{"data-collection": <pattern>, "filter": <MongoDB query document>}``."""

    data_collection: DataCollectionPattern
    filter: Mapping[str, Any] = field(hash=False)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which namespaces a signal's ``data-collections`` select among the known ones."""

    namespaces: tuple[str, ...]
    """In the order of the patterns, then of the namespaces given; each once."""
    unmatched: tuple[str, ...] = ()
    """Patterns (as written) that matched no namespace: worth a warning in the log."""
    unused_conditions: tuple[str, ...] = ()
    """``additional-conditions`` patterns that apply to no selected namespace."""


def _select(patterns: tuple[DataCollectionPattern, ...], namespaces: Iterable[str]) -> tuple[list[str], list[str]]:
    known = list(dict.fromkeys(namespaces))
    chosen: dict[str, None] = {}
    unmatched: list[str] = []
    for pattern in patterns:
        hits = [ns for ns in known if pattern.matches(ns)]
        if not hits:
            unmatched.append(pattern.text)
        chosen.update(dict.fromkeys(hits))
    return list(chosen), unmatched


# --------------------------------------------------------------------------- signals


@dataclass(frozen=True, slots=True)
class Signal:
    """Base of every signal: ``id`` names it in logs and notifications."""

    id: str
    type: ClassVar[SignalType]


@dataclass(frozen=True, slots=True)
class ExecuteSnapshot(Signal):
    """Snapshot the selected collections: incrementally while streaming goes on, or blocking it."""

    type: ClassVar[SignalType] = SignalType.EXECUTE_SNAPSHOT
    data_collections: tuple[DataCollectionPattern, ...] = ()
    snapshot_type: SnapshotType = SnapshotType.INCREMENTAL
    additional_conditions: tuple[AdditionalCondition, ...] = ()

    @property
    def noop_reason(self) -> str | None:
        """Why this signal does nothing (an empty ``data-collections``), or ``None``."""
        if self.data_collections:
            return None
        return "'data-collections' is empty, so there is nothing to snapshot (Debezium ignores such a signal too)"

    def select(self, namespaces: Iterable[str]) -> Selection:
        """The namespaces to snapshot among ``namespaces`` (the captured collections)."""
        chosen, unmatched = _select(self.data_collections, namespaces)
        unused = tuple(
            c.data_collection.text
            for c in self.additional_conditions
            if not any(c.data_collection.matches(ns) for ns in chosen)
        )
        return Selection(tuple(chosen), tuple(unmatched), unused)

    def filter_for(self, namespace: str) -> Mapping[str, Any] | None:
        """The additional filter of ``namespace``: the first condition whose pattern matches it."""
        for condition in self.additional_conditions:
            if condition.data_collection.matches(namespace):
                return condition.filter
        return None


@dataclass(frozen=True, slots=True)
class StopSnapshot(Signal):
    """Stop the incremental snapshot, or only remove the selected collections from it."""

    type: ClassVar[SignalType] = SignalType.STOP_SNAPSHOT
    data_collections: tuple[DataCollectionPattern, ...] = ()

    @property
    def stops_all(self) -> bool:
        return not self.data_collections

    def select(self, namespaces: Iterable[str]) -> Selection:
        """The namespaces to remove among ``namespaces`` (those the running snapshot still has)."""
        chosen, unmatched = _select(self.data_collections, namespaces)
        return Selection(tuple(chosen), tuple(unmatched))


@dataclass(frozen=True, slots=True)
class PauseSnapshot(Signal):
    type: ClassVar[SignalType] = SignalType.PAUSE_SNAPSHOT


@dataclass(frozen=True, slots=True)
class ResumeSnapshot(Signal):
    type: ClassVar[SignalType] = SignalType.RESUME_SNAPSHOT


@dataclass(frozen=True, slots=True)
class LogSignal(Signal):
    type: ClassVar[SignalType] = SignalType.LOG
    message: str = ""


@dataclass(frozen=True, slots=True)
class WindowOpen(Signal):
    """The low watermark of an incremental snapshot chunk (``_id`` = ``<chunk id>-open``)."""

    type: ClassVar[SignalType] = SignalType.WINDOW_OPEN

    @classmethod
    def for_chunk(cls, chunk_id: str) -> WindowOpen:
        return cls(chunk_id + OPEN_SUFFIX)

    @property
    def chunk_id(self) -> str:
        return self.id.removesuffix(OPEN_SUFFIX)


@dataclass(frozen=True, slots=True)
class WindowClose(Signal):
    """The high watermark of an incremental snapshot chunk (``_id`` = ``<chunk id>-close``)."""

    type: ClassVar[SignalType] = SignalType.WINDOW_CLOSE

    @classmethod
    def for_chunk(cls, chunk_id: str) -> WindowClose:
        return cls(chunk_id + CLOSE_SUFFIX)

    @property
    def chunk_id(self) -> str:
        return self.id.removesuffix(CLOSE_SUFFIX)


def window_close_for_deleted(document_id: Any) -> WindowClose | None:
    """Under ``incremental.snapshot.watermarking.strategy=insert_delete`` the connector deletes the open
    watermark instead of inserting a close one: the delete of ``<chunk>-open`` in the signal collection
    closes that chunk's window. ``None`` for the delete of any other document."""
    if isinstance(document_id, str) and document_id.endswith(OPEN_SUFFIX):
        return WindowClose.for_chunk(document_id.removesuffix(OPEN_SUFFIX))
    return None
