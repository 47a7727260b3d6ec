"""What :mod:`kafka_transforms`' transforms share: the ``org.apache.kafka.connect.transforms.`` prefix of their
Java class names, their options as Connect's ``ConfigDef`` reads and refuses them (required, ``INT``,
non-empty ``LIST``, ``ValidString``, regexes and ``Matcher``'s ``$n``/``${name}`` replacement, date formats),
``SchemaUtil.copySchemaBasics``, ``Requirements`` and ``SchemaBuilder``'s field checks, and the ``$Key``/``$Value``
side (:data:`KEY`, :data:`VALUE`) a sided transform works on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    invalid,
    java_regex,
    listing,
    option,
    text,
)
from mongocdc.events.connect.data import (
    ConnectRecord,
    DataError,
    Schema,
    Struct,
    struct_schema,
)
from mongocdc.events.connect.java_lang import (
    class_name,
    parse_int,
)
from mongocdc.events.connect.java_time import DateFormat

_PREFIX: Final = "org.apache.kafka.connect.transforms."

# --- options as Connect's ConfigDef reads them ------------------------------------------------------------------


def _required_text(options: Mapping[str, str], name: str) -> str:
    value = option(options, name, required=True)
    assert value is not None
    return value


def _int_option(options: Mapping[str, str], name: str) -> int | None:
    """An ``INT`` option without a default (``Integer.parseInt`` of the trimmed value)."""
    value = option(options, name)
    if value is None:
        return None
    try:
        return parse_int(value, 32)
    except ValueError:
        raise invalid(name, value, "Not a number of type INT") from None


def _non_empty_list(options: Mapping[str, str], name: str) -> list[str]:
    """A required ``LIST`` option with ``NonEmptyListValidator``."""
    _required_text(options, name)
    values = listing(options, name)
    if not values:
        raise invalid(name, "[]", "Empty list")
    return values


def _non_empty_string(name: str, value: str | None) -> None:
    """``ConfigDef.NonEmptyString``."""
    if value is not None and not value:
        raise invalid(name, value, "String must be non-empty")


def _valid_string(options: Mapping[str, str], name: str, allowed: Sequence[str], default: str | None = None) -> str:
    """``ConfigDef.ValidString.in(...)`` (case-sensitive); a required option when ``default`` is ``None``."""
    value = _required_text(options, name) if default is None else text(options, name, default)
    if value not in allowed:
        raise invalid(name, value, f"String must be one of: {', '.join(allowed)}")
    return value


def _regex(name: str, pattern: str, reason: str = "Invalid regex: ") -> re.Pattern[str]:
    """A ``java.util.regex.Pattern`` (``RegexValidator``: a pattern that does not compile is refused)."""
    try:
        return java_regex(pattern)
    except re.error as exc:
        raise invalid(name, pattern, f"{reason}{exc}") from None


def _expand(match: re.Match[str], replacement: str) -> str:
    """``Matcher.appendExpandedReplacement``: ``$n`` (the longest group number that exists), ``${name}``, ``\\x``;
    ``DataError`` where Java throws (an illegal or missing group reference)."""
    out: list[str] = []
    groups = match.re.groups
    cursor = 0
    while cursor < len(replacement):
        ch = replacement[cursor]
        if ch == "\\":
            cursor += 1
            if cursor == len(replacement):
                raise DataError("character to be escaped is missing")
            out.append(replacement[cursor])
            cursor += 1
        elif ch == "$":
            cursor += 1
            if cursor == len(replacement):
                raise DataError("Illegal group reference: group index is missing")
            if replacement[cursor] == "{":
                cursor += 1
                start = cursor
                while cursor < len(replacement) and replacement[cursor].isascii() and replacement[cursor].isalnum():
                    cursor += 1
                name = replacement[start:cursor]
                if not name:
                    raise DataError("named capturing group has 0 length name")
                if cursor == len(replacement) or replacement[cursor] != "}":
                    raise DataError("named capturing group is missing trailing '}'")
                cursor += 1
                if name not in match.re.groupindex:
                    raise DataError(f"No group with name {{{name}}}")
                number = match.re.groupindex[name]
            else:
                digit = replacement[cursor]
                if not ("0" <= digit <= "9"):
                    raise DataError("Illegal group reference")
                number = int(digit)
                cursor += 1
                while cursor < len(replacement) and "0" <= replacement[cursor] <= "9":
                    longer = number * 10 + int(replacement[cursor])
                    if longer > groups:
                        break
                    number = longer
                    cursor += 1
                if number > groups:
                    raise DataError(f"No group {number}")
            group = match.group(number)
            if group is not None:
                out.append(group)
        else:
            out.append(ch)
            cursor += 1
    return "".join(out)


# --- schemas and Requirements ---------------------------------------------------------------------------------


def _basics(source: Schema) -> dict[str, Any]:
    """``SchemaUtil.copySchemaBasics``: the name, version, doc and parameters (not optionality nor default)."""
    return {"name": source.name, "version": source.version, "doc": source.doc, "parameters": source.parameters}


def _build_struct(fields: Iterable[tuple[str, Schema]], basics: Mapping[str, Any] | None = None) -> Schema:
    """``SchemaBuilder.struct()`` with ``fields``: an empty or repeated field name is refused, as the builder does."""
    listed = list(fields)
    for name, _ in listed:
        if not name:
            raise DataError("fieldName cannot be null.")
    built = struct_schema(listed)
    return built.with_(**basics) if basics else built


def _require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {class_name(value)}")
    return value


def _require_map(value: Any, purpose: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise DataError(f"Only Map objects supported in absence of schema for [{purpose}], found: {class_name(value)}")
    return value


def _get(value: Struct, name: str, with_default: bool) -> Any:
    """``Struct.get`` (a null field's default) or ``getWithoutDefault``: ``replace.null.with.default``."""
    return value.get(name) if with_default else value.get_without_default(name)


def _date_format(name: str, pattern: str) -> DateFormat:
    try:
        return DateFormat(pattern)
    except ValueError as exc:
        raise ConnectConfigError(
            f"TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: {pattern}"
            f" ({exc})"
        ) from None


# --- the $Key/$Value side ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Side:
    """The part of the record a ``$Key`` or ``$Value`` variant works on."""

    key: bool

    def schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema if self.key else record.value_schema

    def value(self, record: ConnectRecord) -> Any:
        return record.key if self.key else record.value

    def record(self, record: ConnectRecord, schema: Schema | None, value: Any, **more: Any) -> ConnectRecord:
        if self.key:
            return record.new_record(key_schema=schema, key=value, **more)
        return record.new_record(value_schema=schema, value=value, **more)


KEY: Final = _Side(True)
VALUE: Final = _Side(False)
