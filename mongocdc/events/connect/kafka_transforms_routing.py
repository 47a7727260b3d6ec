"""Kafka Connect's transforms that route records or work on their topic, headers, schema metadata and
timestamps, and its predicates, registered by :mod:`kafka_transforms`: ``RegexRouter``, ``TimestampRouter``,
``HeaderFrom``, ``InsertHeader``, ``DropHeaders``, ``SetSchemaMetadata``, ``TimestampConverter``, ``Filter``
and the predicates ``TopicNameMatches``, ``RecordIsTombstone`` and ``HasHeaderKey``.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    boolean,
    is_blank,
    option,
    text,
)
from mongocdc.events.connect.data import (
    DATE,
    DATE_SCHEMA,
    DECIMAL,
    INT64,
    STRING,
    TIME,
    TIME_SCHEMA,
    TIMESTAMP,
    TIMESTAMP_SCHEMA,
    ConnectRecord,
    DataError,
    Header,
    Schema,
    Struct,
    Type,
    millis_of,
    timestamp_from_millis,
)
from mongocdc.events.connect.java_lang import (
    HashMap,
    class_name,
)
from mongocdc.events.connect.java_time import MILLIS_PER_DAY, DateFormat
from mongocdc.events.connect.kafka_transforms_common import (
    _basics,
    _build_struct,
    _date_format,
    _expand,
    _get,
    _int_option,
    _non_empty_list,
    _non_empty_string,
    _regex,
    _require_map,
    _require_struct,
    _required_text,
    _Side,
    _valid_string,
)
from mongocdc.events.connect.values import parse_string


class RegexRouter:
    """``RegexRouter``: a topic the whole ``regex`` matches becomes ``Matcher.replaceFirst(replacement)``."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.regex = _regex("regex", _required_text(options, "regex"))
        self.replacement = _required_text(options, "replacement")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if self.regex.fullmatch(record.topic) is None:
            return record
        first = self.regex.search(record.topic)
        assert first is not None
        topic = record.topic[: first.start()] + _expand(first, self.replacement) + record.topic[first.end() :]
        return record.new_record(topic=topic)


class TimestampRouter:
    """``TimestampRouter``: ``topic.format`` with ``${topic}`` and ``${timestamp}`` (the record's timestamp in UTC as
    the ``SimpleDateFormat`` pattern ``timestamp.format``); a record without a timestamp fails."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.topic_format = text(options, "topic.format", "${topic}-${timestamp}")
        self.timestamp_format = text(options, "timestamp.format", "yyyyMMdd")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record}")
        try:  # Connect builds the format on first use, so a bad pattern fails the record, not the configuration
            stamp = DateFormat(self.timestamp_format).format(record.timestamp)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", stamp)
        return record.new_record(topic=topic)


def _header_check(schema: Schema | None, value: Any) -> None:
    """``ConnectHeaders.checkSchemaMatches``: a header's value must be of its schema's Java class."""
    if schema is None:
        return
    if value is None:
        if not schema.optional:
            raise DataError(f"A null value requires an optional schema but was {schema}")
        return
    kind = schema.type
    ok = {
        Type.BYTES: isinstance(value, (bytes, bytearray))
        or (isinstance(value, decimal.Decimal) and schema.name == DECIMAL),
        Type.STRING: isinstance(value, str),
        Type.BOOLEAN: isinstance(value, bool),
        Type.FLOAT32: isinstance(value, float),
        Type.FLOAT64: isinstance(value, float),
        Type.ARRAY: isinstance(value, list),
        Type.MAP: isinstance(value, dict),
        Type.STRUCT: isinstance(value, Struct),
    }.get(kind)
    if ok is None:  # the integer types, and the logical dates among them
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, dt.datetime)
            and (schema.name in (DATE, TIME) and kind is Type.INT32 or schema.name == TIMESTAMP and kind is Type.INT64)
        )
    if not ok:
        raise DataError(f"The value {value} is not compatible with the schema {schema}")


class HeaderFrom:
    """``HeaderFrom$Key``/``$Value``: copies or moves the named fields into headers (``fields`` and ``headers``
    pair up), each header with its field's schema."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.fields = _non_empty_list(options, "fields")
        self.headers = _non_empty_list(options, "headers")
        if len(self.fields) != len(self.headers):
            raise ConnectConfigError("'fields' config must have the same number of elements as 'headers' config.")
        self.move = _valid_string(options, "operation", ["move", "copy"]) == "move"
        self.with_default = boolean(options, "replace.null.with.default", True)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.side.schema(record)
        value = self.side.value(record)
        purpose = f"header {'move' if self.move else 'copy'}"
        headers = list(record.headers)
        if schema is None:
            source = _require_map(value, purpose)
            updated = HashMap.copy_of(source)
            for name, header in zip(self.fields, self.headers, strict=True):
                if self.move:
                    updated.remove(name)
                headers.append(Header(header, None, source.get(name)))
            return self.side.record(record, None, updated.to_dict(), headers=tuple(headers))
        struct = _require_struct(value, purpose)
        updated_schema, updated_value = schema, struct
        if self.move:
            moved = set(self.fields)
            updated_schema = _build_struct(
                ((f.name, f.schema) for f in schema.fields if f.name not in moved), _basics(schema)
            )
            updated_value = Struct(updated_schema)
            for f in updated_schema.fields:
                updated_value.put(f.name, _get(struct, f.name, self.with_default))
        for name, header in zip(self.fields, self.headers, strict=True):
            field_value = _get(struct, name, self.with_default) if struct.schema.field(name) is not None else None
            found = schema.field(name)
            if found is None:
                raise DataError(f"Cannot read the schema of field {name}: the record has no such field")
            _header_check(found.schema, field_value)
            headers.append(Header(header, found.schema, field_value))
        return self.side.record(record, updated_schema, updated_value, headers=tuple(headers))


class InsertHeader:
    """``InsertHeader``: adds header ``header`` with ``value.literal`` as ``Values.parseString`` reads it (a number,
    boolean, date, array or map literal gets its type; anything else is a string)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.header = _required_text(options, "header")
        schema, value = parse_string(_required_text(options, "value.literal"))
        self.literal = Header(self.header, schema, value)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        return record.new_record(headers=(*record.headers, self.literal))


class DropHeaders:
    """``DropHeaders``: removes every header whose key ``headers`` names."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.headers = set(_non_empty_list(options, "headers"))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        return record.new_record(headers=tuple(h for h in record.headers if h.key not in self.headers))


class SetSchemaMetadata:
    """``SetSchemaMetadata$Key``/``$Value``: replaces the schema's name and/or version (a struct is rebuilt on the
    new schema); a record without a schema fails unless its key or value is null, and so does one whose schema is
    not a struct's (Connect 4.3.1 copies the schema's field list, which only a struct schema has)."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.name = option(options, "schema.name")
        self.version = _int_option(options, "schema.version")
        self.with_default = boolean(options, "replace.null.with.default", True)
        if self.name is None and self.version is None:
            raise ConnectConfigError("Neither schema name nor version configured")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        schema = self.side.schema(record)
        if value is None and schema is None:
            return record
        if schema is None:
            raise DataError("Schema required for [updating schema metadata]")
        if schema.type is not Type.STRUCT:  # Connect copies ``schema.fields()``, which only a struct has
            raise DataError("Cannot list fields on non-struct type")
        updated = schema.with_(
            name=self.name if self.name is not None else schema.name,
            version=self.version if self.version is not None else schema.version,
        )
        if isinstance(value, Struct):
            rebuilt = Struct(updated)
            for f in updated.fields:
                rebuilt.put(f.name, _get(value, f.name, self.with_default))
            value = rebuilt
        return self.side.record(record, updated, value)


_UNITS: Final = {"seconds": 1000, "milliseconds": 1, "microseconds": 1000, "nanoseconds": 1_000_000}


def _div(value: int, divisor: int) -> int:
    """Java's integer division (toward zero)."""
    quotient = abs(value) // divisor
    return quotient if value >= 0 else -quotient


def _saturating_multiply(value: int, factor: int) -> int:
    """``TimeUnit.toMillis``-style conversion: saturates at ``Long.MIN_VALUE``/``MAX_VALUE``."""
    return max(-(2**63), min(2**63 - 1, value * factor))


class TimestampConverter:
    """``TimestampConverter$Key``/``$Value``: converts the whole key or value (``field`` empty) or one top-level
    field between ``string`` (``format``, a ``SimpleDateFormat`` pattern in UTC), ``unix`` (a long in
    ``unix.precision``), and Connect's ``Date``, ``Time`` and ``Timestamp``."""

    _TARGETS: Final = ("string", "unix", "Date", "Time", "Timestamp")

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.field = text(options, "field", "")
        self.target = _valid_string(options, "target.type", self._TARGETS)
        pattern = text(options, "format", "")
        self.precision = _valid_string(options, "unix.precision", list(_UNITS)[::-1], "milliseconds")
        self.with_default = boolean(options, "replace.null.with.default", True)
        if self.target == "string" and is_blank(pattern):
            raise ConnectConfigError(
                "TimestampConverter requires format option to be specified when using string timestamps"
            )
        self.format = None if is_blank(pattern) else _date_format("format", pattern)

    def _target_schema(self, optional: bool) -> Schema:
        schema = {
            "string": STRING,
            "unix": INT64,
            "Date": DATE_SCHEMA,
            "Time": TIME_SCHEMA,
            "Timestamp": TIMESTAMP_SCHEMA,
        }[self.target]
        return schema.with_(optional=True) if optional else schema

    @staticmethod
    def _source_type(schema: Schema) -> str:
        if schema.name == TIMESTAMP:
            return "Timestamp"
        if schema.name == DATE:
            return "Date"
        if schema.name == TIME:
            return "Time"
        if schema.type is Type.STRING:
            return "string"
        if schema.type is Type.INT64:
            return "unix"
        raise DataError(f"Schema {schema} does not correspond to a known timestamp type format")

    def _convert(self, value: Any, source: str | None) -> Any:
        if value is None:
            return None
        if source is None:
            if isinstance(value, dt.datetime):
                source = "Timestamp"
            elif isinstance(value, int) and not isinstance(value, bool):
                source = "unix"
            elif isinstance(value, str):
                source = "string"
            else:
                raise DataError(f"TimestampConverter does not support class {class_name(value)} objects as timestamps")
        millis = self._to_millis(value, source)
        return self._from_millis(millis)

    def _to_millis(self, value: Any, source: str) -> int:
        if source == "string":
            if not isinstance(value, str):
                raise DataError(f"Expected string timestamp to be a String, but found class {class_name(value)}")
            if self.format is None:
                raise DataError("TimestampConverter has no format to parse a string timestamp with")
            parsed = self.format.parse(value)
            if parsed is None:
                raise DataError(
                    f"Could not parse timestamp: value ({value}) does not match pattern ({self.format.pattern})"
                )
            return parsed
        if source == "unix":
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected Unix timestamp to be a Long, but found class {class_name(value)}")
            if self.precision == "seconds":
                return _saturating_multiply(value, 1000)
            return _div(value, _UNITS[self.precision])
        if not isinstance(value, dt.datetime):
            raise DataError(f"Expected {source} to be a java.util.Date, but found class {class_name(value)}")
        return millis_of(value)

    def _from_millis(self, millis: int) -> Any:
        if self.target == "string":
            assert self.format is not None
            return self.format.format(millis)
        if self.target == "unix":
            if self.precision == "seconds":
                return _div(millis, 1000)
            return _saturating_multiply(millis, _UNITS[self.precision])
        if self.target == "Date":
            millis -= millis % MILLIS_PER_DAY
        elif self.target == "Time":
            millis %= MILLIS_PER_DAY
        try:
            return timestamp_from_millis(millis)
        except OverflowError:
            raise DataError(f"Timestamp {millis} is out of the range mongocdc represents") from None

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.side.schema(record)
        value = self.side.value(record)
        if schema is None:
            if value is None or not self.field:
                return self.side.record(record, None, self._convert(value, None))
            source = _require_map(value, "converting timestamp formats")
            updated = HashMap.copy_of(source)
            updated.put(self.field, self._convert(source.get(self.field), None))
            return self.side.record(record, None, updated.to_dict())
        if not self.field:
            return self.side.record(
                record, self._target_schema(schema.optional), self._convert(value, self._source_type(schema))
            )
        struct = None if value is None else _require_struct(value, "converting timestamp formats")
        fields = [
            (f.name, self._target_schema(f.schema.optional) if f.name == self.field else f.schema)
            for f in schema.fields
        ]
        updated_schema = _build_struct(fields, _basics(schema))
        if schema.optional:
            updated_schema = updated_schema.with_(optional=True)
        if schema.default is not None:
            updated_schema = updated_schema.with_(default=self._struct(schema.default, updated_schema))
        return self.side.record(
            record, updated_schema, None if struct is None else self._struct(struct, updated_schema)
        )

    def _struct(self, value: Struct, schema: Schema) -> Struct:
        updated = Struct(schema)
        for f in value.schema.fields:
            original = _get(value, f.name, self.with_default)
            if f.name == self.field:
                original = self._convert(original, self._source_type(f.schema))
            updated.put(f.name, original)
        return updated


class Filter:
    """``Filter``: drops every record (used with a predicate)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        del options

    def apply(self, record: ConnectRecord) -> None:
        del record


# --- the predicates -----------------------------------------------------------------------------------------------


class TopicNameMatches:
    """``TopicNameMatches``: the whole topic matches ``pattern``."""

    def __init__(self, options: Mapping[str, str]) -> None:
        value = _required_text(options, "pattern")
        _non_empty_string("pattern", value)
        self.pattern = _regex("pattern", value)

    def test(self, record: ConnectRecord) -> bool:
        return self.pattern.fullmatch(record.topic) is not None


class RecordIsTombstone:
    """``RecordIsTombstone``: the value is null."""

    def __init__(self, options: Mapping[str, str]) -> None:
        del options

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None


class HasHeaderKey:
    """``HasHeaderKey``: at least one header is called ``name``."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.name = _required_text(options, "name")
        _non_empty_string("name", self.name)

    def test(self, record: ConnectRecord) -> bool:
        return any(h.key == self.name for h in record.headers)
