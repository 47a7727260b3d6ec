"""The ``data`` object of each signal type, read into a ``Signal`` and written back (pure).

Both formats carry it (``collection`` for the signal collection's documents, ``kafka_record``
for the signal topic's records): ``signal_from_data`` checks every field and raises
``InvalidSignalError`` naming the signal and what is wrong; ``signal_data`` writes what it reads.
A filter of ``additional-conditions`` may be given as JSON text, also in the mongo shell's
relaxed syntax (``shell_json``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from bson import json_util
from bson.errors import BSONError

from mongocdc.events.signals.model import (
    AdditionalCondition,
    DataCollectionPattern,
    ExecuteSnapshot,
    InvalidSignalError,
    LogSignal,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalType,
    SnapshotType,
    StopSnapshot,
    WindowClose,
    WindowOpen,
)
from mongocdc.events.signals.shell_json import shell_to_json

JSON_OPTIONS: Final = json_util.RELAXED_JSON_OPTIONS.with_options(tz_aware=True)
"""How signals' JSON is read and written: relaxed extended JSON, aware datetimes."""
JSON_ERRORS: Final = (ValueError, TypeError, KeyError, OverflowError, BSONError)
"""What ``json_util.loads`` raises for text that is not (extended) JSON."""

# Top-level query operators MongoDB accepts in a filter; any other "$…" key there is a mistake.
_TOP_LEVEL_OPERATORS: Final = frozenset({"$and", "$or", "$nor", "$expr", "$jsonSchema", "$text", "$where", "$comment"})

_USER_TYPES: Final = tuple(t.value for t in SignalType if t not in (SignalType.WINDOW_OPEN, SignalType.WINDOW_CLOSE))


def read_type(signal_id: str, raw: Any) -> SignalType:
    """A signal's ``type`` field; a missing, misspelt or unknown one raises ``InvalidSignalError``."""
    if raw is None:
        raise InvalidSignalError(signal_id, f"it has no 'type' (one of {_listing(_USER_TYPES)})")
    if not isinstance(raw, str):
        raise InvalidSignalError(signal_id, f"'type' must be a string, got {kind(raw)}")
    try:
        return SignalType(raw)
    except ValueError:
        pass
    raise InvalidSignalError(
        signal_id, f"unknown signal type {raw!r}{_did_you_mean(raw, _USER_TYPES)}; known types: {_listing(_USER_TYPES)}"
    )


def read_data(signal_id: str, raw: Any) -> dict[str, Any]:
    """A signal's ``data`` field as a dict: a sub-document, JSON object text, or nothing (``{}``)."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = json_util.loads(raw, json_options=JSON_OPTIONS)
        except JSON_ERRORS as exc:
            raise InvalidSignalError(signal_id, f"'data' is not valid JSON: {exc}") from None
        if not isinstance(parsed, Mapping):
            raise InvalidSignalError(signal_id, f"'data' must be a JSON object, got {kind(parsed)}")
        return dict(parsed)
    raise InvalidSignalError(signal_id, f"'data' must be a sub-document or JSON object text, got {kind(raw)}")


def signal_from_data(signal_id: str, signal_type: SignalType, data: dict[str, Any]) -> Signal:
    """The signal of a user-sent type (not a watermark) from its ``data``, every field checked."""
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
        raise InvalidSignalError(signal_id, f"'message' must be a string, got {kind(message)}")
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
            raise InvalidSignalError(signal_id, f"'type' must be a string, got {kind(raw_type)}")
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
        raise InvalidSignalError(signal_id, f"'type' must be a string, got {kind(raw)}")
    if raw.lower() != SnapshotType.INCREMENTAL:
        raise InvalidSignalError(
            signal_id, f"only an incremental snapshot can be told to {verb}: 'type' must be 'incremental', got {raw!r}"
        )


def _patterns(signal_id: str, raw: Any, where: str = "data-collections") -> tuple[DataCollectionPattern, ...]:
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise InvalidSignalError(
            signal_id, f"'{where}' must be an array of strings (regular expressions), got {kind(raw)}"
        )
    patterns: list[DataCollectionPattern] = []
    for index, item in enumerate(raw):
        patterns.append(_pattern(signal_id, item, f"{where}[{index}]"))
    return tuple(patterns)


def _pattern(signal_id: str, item: Any, where: str) -> DataCollectionPattern:
    if not isinstance(item, str):
        raise InvalidSignalError(signal_id, f"'{where}' must be a string, got {kind(item)}")
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
            f"got {kind(raw)}",
        )
    conditions: list[AdditionalCondition] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"additional-conditions[{index}]"
        if not isinstance(item, Mapping):
            raise InvalidSignalError(
                signal_id, f'\'{where}\' must be an object {{"data-collection": …, "filter": …}}, got {kind(item)}'
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
            signal_id, f"'{where}' must be a MongoDB query document (an object or JSON text), got {kind(raw)}"
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
        parsed = json_util.loads(text, json_options=JSON_OPTIONS)
    except JSON_ERRORS as exc:
        try:
            parsed = json_util.loads(shell_to_json(text), json_options=JSON_OPTIONS)
        except JSON_ERRORS:
            raise InvalidSignalError(
                signal_id,
                f"'{where}' is not valid JSON ({exc}): write it as JSON such as {_FILTER_EXAMPLE}, with extended "
                'JSON for BSON types ({"$oid": "…"}, {"$date": "…"})',
            ) from None
    if not isinstance(parsed, Mapping):
        raise InvalidSignalError(signal_id, f"'{where}' must be a JSON object, got {kind(parsed)}")
    return dict(parsed)


_FILTER_EXAMPLE: Final = '{"color": "blue"}'


def kind(value: Any) -> str:
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
