"""Signals as records of the Kafka signal topic (``signal.kafka.topic``), read and written (pure).

A record's key is the connector's ``topic.prefix`` and its value JSON ``{"type": …, "data": {…}}``
plus an optional ``"id"``; without one the signal is named ``<topic.prefix>@<record offset>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bson import json_util

from mongocdc.events.signals.data import (
    JSON_ERRORS,
    JSON_OPTIONS,
    kind,
    read_data,
    read_type,
    signal_data,
    signal_from_data,
)
from mongocdc.events.signals.model import InvalidSignalError, Signal, SignalType


@dataclass(frozen=True, slots=True)
class KafkaSignalRecord:
    """What ``mongocdc signal send --channel kafka`` produces to the signal topic."""

    key: str
    value: str


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
        record = json_util.loads(text, json_options=JSON_OPTIONS)
    except (UnicodeDecodeError, *JSON_ERRORS) as exc:
        raise InvalidSignalError(fallback_id, f"the record value is not JSON: {exc}") from None
    if not isinstance(record, Mapping):
        raise InvalidSignalError(
            fallback_id, f'the record value must be a JSON object {{"type": …, "data": {{…}}}}, got {kind(record)}'
        )
    raw_id = record.get("id")
    if raw_id is None or raw_id == "":
        signal_id = fallback_id
    elif isinstance(raw_id, str):
        signal_id = raw_id
    else:
        raise InvalidSignalError(fallback_id, f"'id' must be a string, got {kind(raw_id)}")
    signal_type = read_type(signal_id, record.get("type"))
    if signal_type in (SignalType.WINDOW_OPEN, SignalType.WINDOW_CLOSE):
        raise InvalidSignalError(
            signal_id,
            f"{signal_type.value!r} is a watermark the connector writes to its signal collection; "
            "it is never sent through Kafka",
        )
    return signal_from_data(signal_id, signal_type, read_data(signal_id, record.get("data")))


def serialize_kafka_signal(signal: Signal, *, topic_prefix: str) -> KafkaSignalRecord:
    """The Kafka signal record for ``signal``; :func:`parse_kafka_signal` reads it back."""
    data = signal_data(signal)
    if data is None:
        raise ValueError(f"{signal.type.value} is written to the signal collection only, never to Kafka")
    value = {"id": signal.id, "type": signal.type.value, "data": data}
    return KafkaSignalRecord(topic_prefix, json_util.dumps(value, json_options=JSON_OPTIONS))
