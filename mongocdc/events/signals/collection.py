"""Signals as documents of the signal collection (``signal.data.collection``), read and written (pure).

A document is ``{"_id": …, "type": …, "data": …}``; ``data`` is a sub-document or the same
object as JSON text, and may be absent when a signal needs none. The incremental snapshot's
watermarks carry ``payload: ""`` instead, exactly as Debezium writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import ObjectId

from mongocdc.events.codec import value_to_json
from mongocdc.events.signals.data import read_data, read_type, signal_data, signal_from_data
from mongocdc.events.signals.model import InvalidSignalError, Signal, SignalType, WindowClose, WindowOpen


def parse_signal(document: Mapping[str, Any]) -> Signal:
    """A document of the signal collection (as the change stream's ``fullDocument`` has it)."""
    if "_id" not in document:
        raise InvalidSignalError("<no _id>", "the document has no '_id'")
    signal_id = _id_text(document["_id"])
    signal_type = read_type(signal_id, document.get("type"))
    if signal_type in (SignalType.WINDOW_OPEN, SignalType.WINDOW_CLOSE):
        return WindowOpen(signal_id) if signal_type is SignalType.WINDOW_OPEN else WindowClose(signal_id)
    return signal_from_data(signal_id, signal_type, read_data(signal_id, document.get("data")))


def _id_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, ObjectId):
        return str(value)
    return value_to_json(value)


def serialize_signal(signal: Signal) -> dict[str, Any]:
    """The signal collection document for ``signal``, ``data`` as a sub-document; :func:`parse_signal` reads it."""
    document: dict[str, Any] = {"_id": signal.id, "type": signal.type.value}
    data = signal_data(signal)
    if data is None:
        document["payload"] = ""
    else:
        document["data"] = data
    return document
