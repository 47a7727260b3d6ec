"""What Debezium 3.6.1's transforms (``outbox``'s MongoEventRouter, ``debezium_transforms``' ByLogicalTableRouter
and HeaderToValue) share: Debezium's option validators (``Field::isBoolean``, ``isRegex``, …), its
``Configuration`` readings, ``Requirements.requireStruct``, Java's string concatenation and ``replaceFirst``, and
Kafka's ``LRUCache``. Moved out of ``debezium_transforms`` unchanged, so both modules import them from below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, Generic, TypeVar

from mongocdc.events.connect.base import (
    invalid,
    java_regex,
    java_replacement,
    java_split,
    java_trim,
)
from mongocdc.events.connect.data import (
    DataError,
    Schema,
    Struct,
)

K = TypeVar("K")
V = TypeVar("V")


def _jstr(text: str | None) -> str:
    """A string as Java's ``+`` concatenates it (``null`` for none)."""
    return "null" if text is None else text


def _require_struct(value: Any, purpose: str) -> Struct:
    """``Requirements.requireStruct``."""
    if not isinstance(value, Struct):
        found = "null" if value is None else type(value).__name__
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {found}")
    return value


def _is_envelope(schema: Schema | None) -> bool:
    """``SmtManager.isValidEnvelope``: a value schema named ``….Envelope``."""
    return schema is not None and schema.name is not None and schema.name.endswith(".Envelope")


def _replace_first(pattern: re.Pattern[str], replacement: str, text: str) -> str:
    """``matcher.replaceFirst(replacement)`` (the text is known to match the whole pattern)."""
    try:
        return pattern.sub(java_replacement(replacement), text, count=1)
    except (re.error, IndexError) as exc:
        raise DataError(f"Illegal replacement {replacement!r}: {exc}") from None


class _Lru(Generic[K, V]):
    """Kafka's ``LRUCache`` (``LinkedHashMap`` in access order): a hit moves to the end, the eldest goes beyond
    ``size`` (a size of 0 or less caches nothing). Keys are compared by equality; a key that cannot be hashed
    is looked up by comparing it with each one."""

    __slots__ = ("_size", "_entries")

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[Any, tuple[K, V]] = {}

    def _slot(self, key: K) -> Any:
        try:
            hash(key)
        except TypeError:
            return next((slot for slot, (k, _) in self._entries.items() if k == key), ("unhashable", id(key)))
        return ("key", key)

    def get(self, key: K) -> V | None:
        slot = self._slot(key)
        entry = self._entries.pop(slot, None)
        if entry is None:
            return None
        self._entries[slot] = entry
        return entry[1]

    def put(self, key: K, value: V) -> None:
        slot = self._slot(key)
        self._entries.pop(slot, None)
        self._entries[slot] = (key, value)
        while len(self._entries) > max(self._size, 0):
            del self._entries[next(iter(self._entries))]


# --- Debezium's Configuration: raw option text and its validators --------------------------------------------


def _lenient_boolean(value: str | None, default: bool) -> bool:
    """``Configuration.getBoolean``: ``true``/``false`` in any case once trimmed, anything else the default."""
    if value is not None:
        lowered = java_trim(value).lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    return default


def _check_boolean(name: str, value: str | None) -> None:
    """``Field::isBoolean``."""
    if value is not None and java_trim(value).lower() not in ("true", "false"):
        raise invalid(name, value, "Either 'true' or 'false' is expected")


def _check_regex(name: str, value: str | None) -> None:
    """``Field::isRegex``."""
    if value is not None:
        try:
            java_regex(value)
        except re.error as exc:
            raise invalid(name, value, f"A valid regular expressions is expected, but {exc}") from None


def _check_required(name: str, value: str | None) -> None:
    """``Field::isRequired``."""
    if value is None or not java_trim(value):
        raise invalid(name, value, "A value is required")


def _check_choice(name: str, value: str | None, allowed: Sequence[str]) -> str:
    """An enumerated option (``Field.withEnum``): one of ``allowed`` once trimmed, in any case."""
    probe = "" if value is None else java_trim(value).lower()
    if value is None or probe not in allowed:
        raise invalid(name, value, f"Value must be one of {', '.join(allowed)}")
    return probe


_JAVA_INT: Final = re.compile(r"[+-]?\d+")


def _check_int(name: str, value: str | None) -> None:
    """``Field::isInteger`` (``Integer.parseInt``: no spaces)."""
    if value is not None and not (_JAVA_INT.fullmatch(value) and -(2**31) <= int(value) < 2**31):
        raise invalid(name, value, "An integer is expected")


def _config_list(value: str | None) -> list[str]:
    """``Configuration.getList``: comma-separated, items trimmed, nothing for no value."""
    return [] if value is None else [java_trim(item) for item in java_split(value, ",")]
