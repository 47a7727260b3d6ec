"""Signals: what operators (and the connector itself) ask a running connector to do (pure).

Two channels carry them, in Debezium's formats:

- **The signal collection** (``signal.data.collection``, ``<database>.<collection>``): a document
  ``{"_id": …, "type": …, "data": …}``. ``data`` is a sub-document (as in Debezium's MongoDB
  examples) or the same object as JSON text (the column layout Debezium's relational connectors
  use); it may be absent when a signal needs no data. ``_id`` is any BSON value: a string is the
  signal's id as it is, an ObjectId (what MongoDB assigns when the insert has none) its hex string,
  anything else its relaxed extended JSON. Other top-level fields are ignored.
- **The Kafka signal topic** (``signal.kafka.topic``): a record whose key is the connector's
  ``topic.prefix`` and whose value is JSON ``{"type": …, "data": {…}}`` plus an optional ``"id"``.
  A record with another key is meant for another connector and is skipped, as is a record without
  a value; without ``"id"`` the signal is named ``<topic.prefix>@<record offset>``, as Debezium
  keeps the record offset with a Kafka signal.

Signal types (``type``) and their ``data``:

``execute-snapshot``
    ``data-collections`` (required): an array of regular expressions, each matched against the
    whole ``<database>.<collection>`` name. A name whose parts contain dots is written with each
    part in double quotes, ``"inventory"."orders.2024"``, and then means exactly that collection
    (a ``"`` inside a quoted part is doubled). An empty array is valid and does nothing, as in
    Debezium: :attr:`ExecuteSnapshot.noop_reason` says so for the log.
    ``type``: ``incremental`` (default) or ``blocking``, in any letter case.
    ``additional-conditions``: an array of ``{"data-collection": <pattern>, "filter": <query>}``;
    the filter is a MongoDB query document, as a sub-document / JSON object or as JSON text
    (extended JSON for BSON types: ``{"$oid": …}``, ``{"$date": …}``; the mongo shell's unquoted
    keys and single-quoted strings are accepted too). SQL conditions (``color='blue'``, from
    Debezium's relational examples) are rejected with that explanation.
``stop-snapshot``
    ``data-collections`` (optional patterns; absent or empty stops the whole incremental
    snapshot), ``type``: ``incremental`` (Debezium requires it; absent means incremental here).
``pause-snapshot`` / ``resume-snapshot``
    ``type``: ``incremental`` (optional).
``log``
    ``message`` (required): written to the connector's log.
``snapshot-window-open`` / ``snapshot-window-close``
    the incremental snapshot's watermarks, written by the connector itself into the signal
    collection (``_id`` = ``<chunk id>-open`` / ``<chunk id>-close``, ``payload: ""``, exactly as
    Debezium writes them); with the ``insert_delete`` watermarking strategy the delete of the open
    watermark closes the window instead (:func:`window_close_for_deleted`). They are never
    accepted from Kafka.

Unknown fields in ``data`` are errors (a misspelt ``data-collection`` would otherwise silently do
nothing); every problem raises :class:`InvalidSignalError` naming the signal and what is wrong.
:func:`serialize_signal` and :func:`serialize_kafka_signal` write what the parsers read back.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Final

from bson import ObjectId, json_util
from bson.errors import BSONError

from mongocdc.errors import ExitCode, MongocdcError
from mongocdc.events.codec import value_to_json

_JSON_OPTIONS: Final = json_util.RELAXED_JSON_OPTIONS.with_options(tz_aware=True)
_JSON_ERRORS: Final = (ValueError, TypeError, KeyError, OverflowError, BSONError)

OPEN_SUFFIX: Final = "-open"
CLOSE_SUFFIX: Final = "-close"

# Top-level query operators MongoDB accepts in a filter; any other "$…" key there is a mistake.
_TOP_LEVEL_OPERATORS: Final = frozenset({"$and", "$or", "$nor", "$expr", "$jsonSchema", "$text", "$where", "$comment"})


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


# --------------------------------------------------------------------------- parsing


def parse_signal(document: Mapping[str, Any]) -> Signal:
    """A document of the signal collection (as the change stream's ``fullDocument`` has it)."""
    if "_id" not in document:
        raise InvalidSignalError("<no _id>", "the document has no '_id'")
    signal_id = _id_text(document["_id"])
    signal_type = _signal_type(signal_id, document.get("type"))
    if signal_type in (SignalType.WINDOW_OPEN, SignalType.WINDOW_CLOSE):
        return WindowOpen(signal_id) if signal_type is SignalType.WINDOW_OPEN else WindowClose(signal_id)
    return _build(signal_id, signal_type, _data(signal_id, document.get("data")))


def parse_kafka_signal(
    key: str | bytes | None, value: str | bytes | None, *, topic_prefix: str, offset: int
) -> Signal | None:
    """A record of the Kafka signal topic; ``None`` when it is not for this connector or has no value.

    ``offset`` is the record's offset in the topic: it names a signal whose value has no ``"id"``.
    """
    if isinstance(key, bytes):
        try:
            key = key.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if key != topic_prefix or value is None or len(value) == 0:
        return None
    fallback_id = f"{topic_prefix}@{offset}"
    try:
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        record = json_util.loads(text, json_options=_JSON_OPTIONS)
    except (UnicodeDecodeError, *_JSON_ERRORS) as exc:
        raise InvalidSignalError(fallback_id, f"the record value is not JSON: {exc}") from None
    if not isinstance(record, Mapping):
        raise InvalidSignalError(
            fallback_id, f'the record value must be a JSON object {{"type": …, "data": {{…}}}}, got {_kind(record)}'
        )
    raw_id = record.get("id")
    if raw_id is None or raw_id == "":
        signal_id = fallback_id
    elif isinstance(raw_id, str):
        signal_id = raw_id
    else:
        raise InvalidSignalError(fallback_id, f"'id' must be a string, got {_kind(raw_id)}")
    signal_type = _signal_type(signal_id, record.get("type"))
    if signal_type in (SignalType.WINDOW_OPEN, SignalType.WINDOW_CLOSE):
        raise InvalidSignalError(
            signal_id,
            f"{signal_type.value!r} is a watermark the connector writes to its signal collection; "
            "it is never sent through Kafka",
        )
    return _build(signal_id, signal_type, _data(signal_id, record.get("data")))


def _id_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, ObjectId):
        return str(value)
    return value_to_json(value)


_USER_TYPES: Final = tuple(t.value for t in SignalType if t not in (SignalType.WINDOW_OPEN, SignalType.WINDOW_CLOSE))


def _signal_type(signal_id: str, raw: Any) -> SignalType:
    if raw is None:
        raise InvalidSignalError(signal_id, f"it has no 'type' (one of {_listing(_USER_TYPES)})")
    if not isinstance(raw, str):
        raise InvalidSignalError(signal_id, f"'type' must be a string, got {_kind(raw)}")
    try:
        return SignalType(raw)
    except ValueError:
        pass
    raise InvalidSignalError(
        signal_id, f"unknown signal type {raw!r}{_did_you_mean(raw, _USER_TYPES)}; known types: {_listing(_USER_TYPES)}"
    )


def _data(signal_id: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = json_util.loads(raw, json_options=_JSON_OPTIONS)
        except _JSON_ERRORS as exc:
            raise InvalidSignalError(signal_id, f"'data' is not valid JSON: {exc}") from None
        if not isinstance(parsed, Mapping):
            raise InvalidSignalError(signal_id, f"'data' must be a JSON object, got {_kind(parsed)}")
        return dict(parsed)
    raise InvalidSignalError(signal_id, f"'data' must be a sub-document or JSON object text, got {_kind(raw)}")


def _build(signal_id: str, signal_type: SignalType, data: dict[str, Any]) -> Signal:
    if signal_type is SignalType.EXECUTE_SNAPSHOT:
        return _execute_snapshot(signal_id, data)
    if signal_type is SignalType.STOP_SNAPSHOT:
        _fields(signal_id, signal_type, data, ("data-collections", "type"))
        _incremental_only(signal_id, data, "stop")
        raw = data.get("data-collections")
        patterns = () if raw is None else _patterns(signal_id, raw)
        return StopSnapshot(signal_id, patterns)
    if signal_type in (SignalType.PAUSE_SNAPSHOT, SignalType.RESUME_SNAPSHOT):
        _fields(signal_id, signal_type, data, ("type",))
        _incremental_only(signal_id, data, "pause" if signal_type is SignalType.PAUSE_SNAPSHOT else "resume")
        return PauseSnapshot(signal_id) if signal_type is SignalType.PAUSE_SNAPSHOT else ResumeSnapshot(signal_id)
    assert signal_type is SignalType.LOG, signal_type
    _fields(signal_id, signal_type, data, ("message",))
    message = data.get("message")
    if message is None:
        raise InvalidSignalError(signal_id, "a log signal needs 'data.message' (the text to write to the log)")
    if not isinstance(message, str):
        raise InvalidSignalError(signal_id, f"'message' must be a string, got {_kind(message)}")
    return LogSignal(signal_id, message)


def _execute_snapshot(signal_id: str, data: dict[str, Any]) -> ExecuteSnapshot:
    _fields(signal_id, SignalType.EXECUTE_SNAPSHOT, data, ("data-collections", "type", "additional-conditions"))
    if data.get("data-collections") is None:
        raise InvalidSignalError(
            signal_id,
            "execute-snapshot needs 'data-collections': an array of regular expressions matching "
            '<database>.<collection> names, like ["inventory\\\\.orders"] (an empty array does nothing)',
        )
    patterns = _patterns(signal_id, data["data-collections"])
    snapshot_type = SnapshotType.INCREMENTAL
    raw_type = data.get("type")
    if raw_type is not None:
        if not isinstance(raw_type, str):
            raise InvalidSignalError(signal_id, f"'type' must be a string, got {_kind(raw_type)}")
        try:
            snapshot_type = SnapshotType(raw_type.lower())
        except ValueError:
            raise InvalidSignalError(
                signal_id, f"snapshot 'type' must be 'incremental' or 'blocking', got {raw_type!r}"
            ) from None
    conditions = _conditions(signal_id, data.get("additional-conditions"))
    return ExecuteSnapshot(signal_id, patterns, snapshot_type, conditions)


_FIELD_NOTES: Final = {
    "additional-condition": "'additional-condition' (one SQL condition for every table, deprecated in Debezium) is "
    'not supported: use \'additional-conditions\': [{"data-collection": …, "filter": {…}}]',
    "surrogate-key": "'surrogate-key' is not supported: MongoDB collections are always read in _id order",
}


def _fields(signal_id: str, signal_type: SignalType, data: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for name in data:
        if name in allowed:
            continue
        if name in _FIELD_NOTES:
            raise InvalidSignalError(signal_id, _FIELD_NOTES[name])
        accepted = _listing(allowed)
        raise InvalidSignalError(
            signal_id,
            f"{signal_type.value} does not take 'data.{name}'{_did_you_mean(name, allowed)}; it accepts {accepted}",
        )


def _incremental_only(signal_id: str, data: Mapping[str, Any], verb: str) -> None:
    raw = data.get("type")
    if raw is None:
        return
    if not isinstance(raw, str):
        raise InvalidSignalError(signal_id, f"'type' must be a string, got {_kind(raw)}")
    if raw.lower() != SnapshotType.INCREMENTAL:
        raise InvalidSignalError(
            signal_id, f"only an incremental snapshot can be told to {verb}: 'type' must be 'incremental', got {raw!r}"
        )


def _patterns(signal_id: str, raw: Any, where: str = "data-collections") -> tuple[DataCollectionPattern, ...]:
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise InvalidSignalError(
            signal_id, f"'{where}' must be an array of strings (regular expressions), got {_kind(raw)}"
        )
    patterns: list[DataCollectionPattern] = []
    for index, item in enumerate(raw):
        patterns.append(_pattern(signal_id, item, f"{where}[{index}]"))
    return tuple(patterns)


def _pattern(signal_id: str, item: Any, where: str) -> DataCollectionPattern:
    if not isinstance(item, str):
        raise InvalidSignalError(signal_id, f"'{where}' must be a string, got {_kind(item)}")
    try:
        return DataCollectionPattern.parse(item)
    except ValueError as exc:
        raise InvalidSignalError(signal_id, f"'{where}' {item!r} {exc}") from None


def _conditions(signal_id: str, raw: Any) -> tuple[AdditionalCondition, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise InvalidSignalError(
            signal_id,
            '\'additional-conditions\' must be an array of {"data-collection": …, "filter": …} objects, '
            f"got {_kind(raw)}",
        )
    conditions: list[AdditionalCondition] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"additional-conditions[{index}]"
        if not isinstance(item, Mapping):
            raise InvalidSignalError(
                signal_id, f'\'{where}\' must be an object {{"data-collection": …, "filter": …}}, got {_kind(item)}'
            )
        for name in item:
            if name not in ("data-collection", "filter"):
                hint = _did_you_mean(name, ("data-collection", "filter"))
                raise InvalidSignalError(
                    signal_id, f"'{where}' has an unknown field {name!r}{hint}; it takes 'data-collection' and 'filter'"
                )
        if "data-collection" not in item:
            raise InvalidSignalError(signal_id, f"'{where}' has no 'data-collection' (the collection it filters)")
        if "filter" not in item:
            raise InvalidSignalError(signal_id, f"'{where}' has no 'filter' (a MongoDB query document)")
        pattern = _pattern(signal_id, item["data-collection"], f"{where}.data-collection")
        if pattern.text in seen:
            raise InvalidSignalError(
                signal_id, f"'{where}' repeats the data collection {pattern.text!r}: give one filter per collection"
            )
        seen.add(pattern.text)
        conditions.append(AdditionalCondition(pattern, _filter(signal_id, item["filter"], f"{where}.filter")))
    return tuple(conditions)


def _filter(signal_id: str, raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        document = dict(raw)
    elif isinstance(raw, str):
        document = _filter_text(signal_id, raw, where)
    else:
        raise InvalidSignalError(
            signal_id, f"'{where}' must be a MongoDB query document (an object or JSON text), got {_kind(raw)}"
        )
    for name in document:
        if not isinstance(name, str):
            raise InvalidSignalError(signal_id, f"'{where}' has a non-string field name {name!r}")
        if name.startswith("$") and name not in _TOP_LEVEL_OPERATORS:
            raise InvalidSignalError(
                signal_id,
                f"'{where}' uses {name!r} at the top level, where MongoDB accepts only fields and "
                f"{_listing(sorted(_TOP_LEVEL_OPERATORS))}",
            )
    return document


def _filter_text(signal_id: str, raw: str, where: str) -> dict[str, Any]:
    text = raw.strip()
    if not text:
        raise InvalidSignalError(
            signal_id, f"'{where}' is empty: give a MongoDB query document such as {_FILTER_EXAMPLE}"
        )
    if not text.startswith("{"):
        raise InvalidSignalError(
            signal_id,
            f"'{where}' {raw!r} is not a MongoDB query document: write it as JSON such as {_FILTER_EXAMPLE} "
            "(SQL conditions such as color='blue' are for Debezium's relational connectors)",
        )
    try:
        parsed = json_util.loads(text, json_options=_JSON_OPTIONS)
    except _JSON_ERRORS as exc:
        try:
            parsed = json_util.loads(_shell_to_json(text), json_options=_JSON_OPTIONS)
        except _JSON_ERRORS:
            raise InvalidSignalError(
                signal_id,
                f"'{where}' is not valid JSON ({exc}): write it as JSON such as {_FILTER_EXAMPLE}, with extended "
                'JSON for BSON types ({"$oid": "…"}, {"$date": "…"})',
            ) from None
    if not isinstance(parsed, Mapping):
        raise InvalidSignalError(signal_id, f"'{where}' must be a JSON object, got {_kind(parsed)}")
    return dict(parsed)


_FILTER_EXAMPLE: Final = '{"color": "blue"}'
_BARE_WORD: Final = re.compile(r"[A-Za-z_$][\w$]*")


def _shell_to_json(text: str) -> str:
    """The mongo shell's relaxed object syntax → JSON: quote bare keys, turn 'single' into "double" quotes."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif ch == "'":
            j = i + 1
            chars: list[str] = []
            while j < n and text[j] != "'":
                if text[j] == "\\" and j + 1 < n:
                    chars.append("'" if text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                    continue
                chars.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(chars) + '"')
            i = j + 1
        else:
            match = _BARE_WORD.match(text, i)
            if match is None or (i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$.")):
                out.append(ch)
                i += 1
                continue
            word = match.group()
            k = match.end()
            while k < n and text[k].isspace():
                k += 1
            out.append(json.dumps(word) if k < n and text[k] == ":" else word)
            i = match.end()
    return "".join(out)


def _kind(value: Any) -> str:
    """A JSON-ish name for the type of ``value``, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def _listing(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True, slots=True)
class KafkaSignalRecord:
    """What ``mongocdc signal send --channel kafka`` produces to the signal topic."""

    key: str
    value: str


def signal_data(signal: Signal) -> dict[str, Any] | None:
    """The ``data`` object of ``signal`` (``None`` for the watermarks, which carry ``payload: ""``)."""
    if isinstance(signal, ExecuteSnapshot):
        data: dict[str, Any] = {
            "data-collections": [p.text for p in signal.data_collections],
            "type": signal.snapshot_type.value,
        }
        if signal.additional_conditions:
            data["additional-conditions"] = [
                {"data-collection": c.data_collection.text, "filter": dict(c.filter)}
                for c in signal.additional_conditions
            ]
        return data
    if isinstance(signal, StopSnapshot):
        data = {"type": SnapshotType.INCREMENTAL.value}
        if signal.data_collections:
            data["data-collections"] = [p.text for p in signal.data_collections]
        return data
    if isinstance(signal, PauseSnapshot | ResumeSnapshot):
        return {"type": SnapshotType.INCREMENTAL.value}
    if isinstance(signal, LogSignal):
        return {"message": signal.message}
    if isinstance(signal, WindowOpen | WindowClose):
        return None
    raise TypeError(f"not a signal this module knows: {signal!r}")


def serialize_signal(signal: Signal) -> dict[str, Any]:
    """The signal collection document for ``signal``, ``data`` as a sub-document; :func:`parse_signal` reads it."""
    document: dict[str, Any] = {"_id": signal.id, "type": signal.type.value}
    data = signal_data(signal)
    if data is None:
        document["payload"] = ""
    else:
        document["data"] = data
    return document


def serialize_kafka_signal(signal: Signal, *, topic_prefix: str) -> KafkaSignalRecord:
    """The Kafka signal record for ``signal``; :func:`parse_kafka_signal` reads it back."""
    data = signal_data(signal)
    if data is None:
        raise ValueError(f"{signal.type.value} is written to the signal collection only, never to Kafka")
    value = {"id": signal.id, "type": signal.type.value, "data": data}
    return KafkaSignalRecord(topic_prefix, json_util.dumps(value, json_options=_JSON_OPTIONS))
