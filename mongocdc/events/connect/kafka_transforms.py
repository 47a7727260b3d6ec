"""Kafka Connect 4.3.1's own single message transforms and predicates (``connect-transforms``), as Connect runs them.

Registered by their Java class names in :data:`TRANSFORMS` and :data:`PREDICATES` (``chain.py`` merges them):
``RegexRouter``, ``TimestampRouter``, ``InsertField``, ``ReplaceField``, ``MaskField``, ``ValueToKey``,
``ExtractField``, ``HoistField``, ``Cast``, ``Flatten``, ``HeaderFrom``, ``InsertHeader``, ``DropHeaders``,
``SetSchemaMetadata``, ``TimestampConverter``, ``Filter`` (each with its ``$Key``/``$Value`` variants where Kafka
has them) and the predicates ``TopicNameMatches``, ``RecordIsTombstone``, ``HasHeaderKey``. Each takes every
option its Java class defines in 4.3.1, refuses what that class's ``ConfigDef`` refuses, and fails (``DataError``)
on the records the Java class throws on, whatever Java exception that is.

Matching Connect byte for byte needs some of the JVM's own behaviour, which the modules below this one write in
Python: the Java class of a value, Java's numeric conversions and ``java.util.HashMap``'s iteration order (the
order of the maps the schemaless paths build, which JsonConverter writes) in :mod:`java_lang`;
``SimpleDateFormat`` with the hybrid Julian/Gregorian calendar (TimestampRouter, TimestampConverter) in
:mod:`java_time`; ``Values.parseString`` (InsertHeader's literal), ``dateFormatFor`` (Cast to a string) and the
``Values.convertTo*`` MaskField's replacement uses in :mod:`values`. Here: ``SchemaUtil.copySchemaBasics``,
``Requirements`` and ``SchemaBuilder``'s field checks.

Known limits (corners Debezium's records do not reach): a schemaless value cast to ``float32`` is written as a
double (a schemaless value remembers no Java class, :mod:`java_lang`); an instant outside Python's years 1 to
9999 fails the record.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    PredicateFactory,
    Transform,
    TransformFactory,
    boolean,
    choice,
    invalid,
    is_blank,
    java_regex,
    java_split,
    listing,
    option,
    text,
)
from mongocdc.events.connect.data import (
    DATE,
    DATE_SCHEMA,
    DECIMAL,
    INT32,
    INT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING,
    TIME,
    TIME_SCHEMA,
    TIMESTAMP,
    TIMESTAMP_SCHEMA,
    ConnectRecord,
    DataError,
    Field,
    Header,
    Schema,
    Struct,
    Type,
    millis_of,
    schema_type_of,
    struct_schema,
    timestamp_from_millis,
)
from mongocdc.events.connect.java_lang import (
    INT_BITS,
    NUMBERS,
    HashMap,
    big_decimal,
    class_name,
    f32,
    hash_set_order,
    java_class,
    number_text,
    parse_double,
    parse_float,
    parse_int,
    qualified_name,
    to_float32,
    to_float64,
    to_integer,
    wrap,
)
from mongocdc.events.connect.java_time import MILLIS_PER_DAY, DateFormat
from mongocdc.events.connect.values import as_double, as_long, date_text, parse_string

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


# --- the transforms -------------------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class _Insertion:
    """``InsertField.InsertionSpec``: a field name, ``?`` (optional, the default) or ``!`` (required) after it."""

    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> _Insertion | None:
        if spec is None:
            return None
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        return cls(spec, True)


class InsertField:
    """``InsertField$Key``/``$Value``: adds the topic, partition, offset (sink records only: a source record fails),
    timestamp and a static string as fields of a struct (after its fields, in that order) or entries of a map;
    a null key or value is passed on."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.topic = _Insertion.parse(option(options, "topic.field"))
        self.partition = _Insertion.parse(option(options, "partition.field"))
        self.offset = _Insertion.parse(option(options, "offset.field"))
        self.timestamp = _Insertion.parse(option(options, "timestamp.field"))
        self.static = _Insertion.parse(option(options, "static.field"))
        self.static_value = option(options, "static.value")
        self.with_default = boolean(options, "replace.null.with.default", True)
        if not any((self.topic, self.partition, self.offset, self.timestamp, self.static)):
            raise ConnectConfigError("No field insertion configured")
        if self.static is not None and self.static_value is None:
            raise invalid("static.value", None, f"No value specified for static field: {self.static}")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        if self.side.schema(record) is None:
            updated = HashMap.copy_of(_require_map(value, "field insertion"))
            self._insert(record, updated.put, lambda millis: millis)
            return self.side.record(record, None, updated.to_dict())
        struct = _require_struct(value, "field insertion")
        fields = [(f.name, f.schema) for f in struct.schema.fields]
        for spec, required, optional in (
            (self.topic, STRING, OPTIONAL_STRING),
            (self.partition, INT32, OPTIONAL_INT32),
            (self.offset, INT64, OPTIONAL_INT64),
            (self.timestamp, TIMESTAMP_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA),
            (self.static, STRING, OPTIONAL_STRING),
        ):
            if spec is not None:
                fields.append((spec.name, optional if spec.optional else required))
        schema = _build_struct(fields, _basics(struct.schema))
        updated_struct = Struct(schema)
        for f in struct.schema.fields:
            updated_struct.put(f.name, _get(struct, f.name, self.with_default))
        self._insert(record, updated_struct.put, timestamp_from_millis)
        return self.side.record(record, schema, updated_struct)

    def _insert(self, record: ConnectRecord, put: Callable[[str, Any], Any], timestamp: Callable[[int], Any]) -> None:
        """The fields ``put`` into the new value, in Connect's order (a timestamp as ``timestamp`` makes it)."""
        if self.topic:
            put(self.topic.name, record.topic)
        if self.partition and record.partition is not None:
            put(self.partition.name, record.partition)
        if self.offset:
            raise DataError("Only SinkRecord supported for [field insertion], found: SourceRecord")
        if self.timestamp and record.timestamp is not None:
            put(self.timestamp.name, timestamp(record.timestamp))
        if self.static and self.static_value is not None:
            put(self.static.name, self.static_value)


class ReplaceField:
    """``ReplaceField$Key``/``$Value``: keeps the fields ``include`` names (all when empty) less those ``exclude``
    names, renamed by ``renames`` (``old:new`` pairs). The old names ``whitelist``/``blacklist`` are gone from
    Kafka 4, so Connect 4.3.1 ignores them, and so does this."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.exclude = set(listing(options, "exclude"))
        self.include = set(listing(options, "include"))
        self.renames: dict[str, str] = {}
        for mapping in listing(options, "renames"):
            parts = java_split(mapping, ":")
            if len(parts) != 2:
                raise invalid("renames", listing(options, "renames"), f"Invalid rename mapping: {mapping}")
            self.renames[parts[0]] = parts[1]
        self.reverse = {new: old for old, new in self.renames.items()}
        self.with_default = boolean(options, "replace.null.with.default", True)

    def _kept(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        if self.side.schema(record) is None:
            source = _require_map(value, "field replacement")
            updated = HashMap(len(source))
            for name, item in source.items():
                if self._kept(name):
                    updated.put(self.renames.get(name, name), item)
            return self.side.record(record, None, updated.to_dict())
        struct = _require_struct(value, "field replacement")
        schema = _build_struct(
            ((self.renames.get(f.name, f.name), f.schema) for f in struct.schema.fields if self._kept(f.name)),
            _basics(struct.schema),
        )
        updated_struct = Struct(schema)
        for f in schema.fields:
            updated_struct.put(f.name, _get(struct, self.reverse.get(f.name, f.name), self.with_default))
        return self.side.record(record, schema, updated_struct)


_MASKS: Final[Mapping[str, Any]] = {
    "Boolean": False,
    "Byte": 0,
    "Short": 0,
    "Integer": 0,
    "Long": 0,
    "Float": 0.0,
    "Double": 0.0,
    "BigDecimal": decimal.Decimal(0),
    "String": "",
}


class MaskField:
    """``MaskField$Key``/``$Value``: the named fields' values become their type's "empty" value (0, false, "",
    the epoch, an empty list or map), or ``replacement`` converted to a number or string field's type; null stays
    null; other types (bytes, structs, booleans with a replacement, …) fail the record."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.fields = _non_empty_list(options, "fields")
        self.replacement = option(options, "replacement")
        _non_empty_string("replacement", self.replacement)
        self.with_default = boolean(options, "replace.null.with.default", True)

    def _masked(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            return None
        kind = java_class(schema, value)
        if self.replacement is not None:
            return self._replaced(kind, value, self.replacement)
        if kind in _MASKS:
            return _MASKS[kind]
        if kind == "Date":
            return timestamp_from_millis(0)
        if kind == "ArrayList":
            return []
        if kind == "HashMap":
            return {}
        raise DataError(f"Cannot mask value of type: class {qualified_name(kind)}")

    @staticmethod
    def _replaced(kind: str, value: Any, replacement: str) -> Any:
        try:
            if kind == "String":
                return replacement
            if kind in ("Byte", "Short", "Integer", "Long"):
                bits = {"Byte": 8, "Short": 16, "Integer": 32, "Long": 64}[kind]
                return wrap(as_long(replacement), bits)
            if kind == "Float":
                return f32(as_double(replacement))
            if kind == "Double":
                return as_double(replacement)
            if kind == "BigDecimal":
                return big_decimal(replacement)
        except ValueError:
            raise DataError(f"Unable to convert {replacement} (class java.lang.String) to number") from None
        raise DataError(f"Cannot mask value of type class {qualified_name(kind)} with custom replacement.")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        schema = self.side.schema(record)
        if schema is None:
            source = _require_map(value, "mask fields")
            updated = HashMap.copy_of(source)
            for name in hash_set_order(self.fields):
                updated.put(name, self._masked(None, source.get(name)))
            return self.side.record(record, None, updated.to_dict())
        struct = _require_struct(value, "mask fields")
        masked = Struct(struct.schema)
        names = set(self.fields)
        for f in struct.schema.fields:
            original = _get(struct, f.name, self.with_default)
            masked.put(f.name, self._masked(f.schema, original) if f.name in names else original)
        return self.side.record(record, schema, masked)


class ValueToKey:
    """``ValueToKey``: the key becomes a struct (or map) of the named fields of the value."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.fields = _non_empty_list(options, "fields")
        self.with_default = boolean(options, "replace.null.with.default", True)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value_schema is None:
            source = _require_map(record.value, "copying fields from value to key")
            key = HashMap(len(self.fields))
            for name in self.fields:
                key.put(name, source.get(name))
            return record.new_record(key_schema=None, key=key.to_dict())
        value = _require_struct(record.value, "copying fields from value to key")
        fields: list[tuple[str, Schema]] = []
        for name in self.fields:
            found = value.schema.field(name)
            if found is None:
                raise DataError(f"Field does not exist: {name}")
            fields.append((name, found.schema))
        key_schema = _build_struct(fields)
        key_struct = Struct(key_schema)
        for name in self.fields:
            key_struct.put(name, _get(value, name, self.with_default))
        return record.new_record(key_schema=key_schema, key=key_struct, value_schema=value.schema)


def _field_path(path: str, version: str) -> list[str]:
    """``SingleFieldPath``'s steps: ``V1`` the whole text, ``V2`` dotted steps with backtick-quoted names."""
    if version == "V1":
        return [path]
    steps: list[str] = []
    index = 0
    while 0 <= index < len(path):
        if path[index] != "`":
            start = index
            index = path.find(".", index)
            if index >= 0:
                steps.append(path[start:index])
                index += 1
            else:
                steps.append(path[start:])
            continue
        backtick_at = index
        index += 1
        start = index
        name: list[str] = []
        while True:
            index = path.find("`", index)
            if index == -1:
                raise _incomplete_backtick(path, backtick_at)
            escaped = path[index - 1] == "\\"
            if index >= len(path) - 1:
                if escaped:
                    raise _incomplete_backtick(path, backtick_at)
                name.append(path[start:index])
                steps.append("".join(name))
                index += 1
                break
            if path[index + 1] != ".":
                index += 1
                continue
            if escaped:
                name.append(path[start : index - 1] + "`")
                index += 1
                start = index
                continue
            name.append(path[start:index])
            steps.append("".join(name))
            index += 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


def _incomplete_backtick(path: str, at: int) -> ConnectConfigError:
    return ConnectConfigError(
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position {at}"
        " to escape it"
    )


class ExtractField:
    """``ExtractField$Key``/``$Value``: the key or value becomes one of its fields (a nested one with
    ``field.syntax.version=V2``); a field the schema lacks fails the record, a null passes."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.path = _required_text(options, "field")
        version = choice(options, "field.syntax.version", "V1", ["V1", "V2"])
        self.steps = _field_path(self.path, version)
        self.with_default = boolean(options, "replace.null.with.default", True)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.side.schema(record)
        value = self.side.value(record)
        if schema is None:
            current = None if value is None else _require_map(value, "field extraction")
            for step in self.steps[:-1]:
                if current is None:
                    break
                nested = current.get(step)
                current = None if nested is None else _require_map(nested, "nested field access")
            return self.side.record(record, None, None if current is None else current.get(self.steps[-1]))
        if value is not None:
            _require_struct(value, "field extraction")
        found = self._field(schema)
        if found is None:
            raise DataError(f"Unknown field: {self.path}")
        return self.side.record(record, found.schema, None if value is None else self._value(value))

    def _field(self, schema: Schema) -> Field | None:
        current = schema
        for step in self.steps[:-1]:
            found = current.field(step)
            if found is None:
                return None
            current = found.schema
        return current.field(self.steps[-1])

    def _value(self, struct: Struct) -> Any:
        current = struct
        for step in self.steps[:-1]:
            if current.schema.field(step) is None:
                return None
            nested = current.get(step)
            if nested is None:
                return None
            current = _require_struct(nested, "nested field access")
        if current.schema.field(self.steps[-1]) is None:
            return None
        return _get(current, self.steps[-1], self.with_default)


class HoistField:
    """``HoistField$Key``/``$Value``: the key or value becomes the one field ``field`` of a new struct (a map
    without a schema)."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.field = _required_text(options, "field")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.side.schema(record)
        value = self.side.value(record)
        if schema is None:
            hoisted = HashMap()
            hoisted.put(self.field, value)
            return self.side.record(record, None, hoisted.to_dict())
        wrapper = _build_struct([(self.field, schema)])
        return self.side.record(record, wrapper, Struct(wrapper).put(self.field, value))


_CAST_INPUT: Final = (
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
)
_CAST_OUTPUT: Final = _CAST_INPUT[:-1]


def _types_text(types: Sequence[Type]) -> str:
    return "[" + ", ".join(t.java_name for t in types) + "]"


def _cast_type(name: str) -> Type:
    """``Schema.Type.valueOf(name.toUpperCase())`` limited to Cast's output types."""
    upper = name.upper()
    found = next((t for t in Type if t.java_name == upper), None)
    if found is None:
        raise ConnectConfigError(f"Invalid type found in casting spec: {name}")
    if found not in _CAST_OUTPUT:
        raise ConnectConfigError(
            f"Cast transformation does not support casting to {found.java_name}; supported types are "
            f"{_types_text(_CAST_OUTPUT)}"
        )
    return found


class Cast:
    """``Cast$Key``/``$Value``: ``spec`` is one type for the whole key or value, or ``field:type`` pairs for the
    top-level fields of a struct or map; types int8 … float64, boolean and string. Logical dates become their
    numbers (or ISO text), bytes become Base64 text; other inputs fail the record."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        _required_text(options, "spec")
        mappings = listing(options, "spec")
        if not mappings:
            raise ConnectConfigError("Must specify at least one field to cast.")
        self.casts = HashMap()
        self.whole: Type | None = None
        for mapping in mappings:
            parts = java_split(mapping, ":")
            if len(parts) > 2:
                raise invalid("renames", mappings, f"Invalid rename mapping: {mapping}")
            if not parts:  # Java indexes past the end of the split and fails the configuration
                raise ConnectConfigError(f"Invalid cast mapping: {mapping}")
            if len(parts) == 1:
                self.whole = _cast_type(parts[0].strip())
            else:
                self.casts.put(parts[0].strip(), _cast_type(parts[1].strip()))
        if self.whole is not None and len(mappings) > 1:
            raise ConnectConfigError(
                "Cast transformations that specify a type to cast the entire value to may only specify a single "
                "cast in their spec"
            )
        self.fields: dict[str, Type] = self.casts.to_dict()
        self.with_default = boolean(options, "replace.null.with.default", True)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            if self.whole is not None:
                return self.side.record(record, None, _cast(None, value, self.whole))
            source = _require_map(value, "cast types")
            updated = HashMap.copy_of(source)
            for name, target in self.fields.items():
                updated.put(name, _cast(None, source.get(name), target))
            return self.side.record(record, None, updated.to_dict())
        updated_schema = self._schema(schema)
        if self.whole is not None:
            return self.side.record(record, updated_schema, _cast(schema, value, self.whole))
        struct = _require_struct(value, "cast types")
        updated_struct = Struct(updated_schema)
        for f in struct.schema.fields:
            original = _get(struct, f.name, self.with_default)
            cast_to = self.fields.get(f.name)
            updated_struct.put(f.name, original if cast_to is None else _cast(f.schema, original, cast_to))
        return self.side.record(record, updated_schema, updated_struct)

    def _schema(self, schema: Schema) -> Schema:
        updated: Schema
        if self.whole is not None:
            updated = Schema(self.whole, **_basics(schema))
        else:
            fields: list[tuple[str, Schema]] = []
            for f in schema.fields:
                target = self.fields.get(f.name)
                if target is None:
                    fields.append((f.name, f.schema))
                    continue
                cast_schema = Schema(target, optional=f.schema.optional)
                if f.schema.default is not None:
                    cast_schema = cast_schema.with_(default=_cast(f.schema, f.schema.default, target))
                fields.append((f.name, cast_schema))
            updated = _build_struct(fields, _basics(schema))
        if schema.optional:
            updated = updated.with_(optional=True)
        if schema.default is not None:
            updated = updated.with_(default=_cast(schema, schema.default, updated.type))
        return updated


def _encode_date(schema: Schema, value: dt.datetime) -> tuple[int, str]:
    """``Date``/``Time``/``Timestamp.fromLogical``: the number a logical date is stored as, and its Java class."""
    millis = millis_of(value)
    if schema.name == DATE:
        if millis % MILLIS_PER_DAY:
            raise DataError("Kafka Connect Date type should not have any time fields set to non-zero values.")
        return millis // MILLIS_PER_DAY, "Integer"
    if schema.name == TIME:
        if not 0 <= millis < MILLIS_PER_DAY:
            raise DataError("Kafka Connect Time type should not have any date fields set to non-zero values.")
        return millis, "Integer"
    return millis, "Long"


def _cast(schema: Schema | None, value: Any, target: Type) -> Any:
    """``Cast.castValueToType``."""
    if value is None:
        return None
    if schema is not None:
        source = schema.type
    else:
        inferred = schema_type_of(value)
        if inferred is None:
            raise DataError(
                f"Cast transformation was passed a value of type class {class_name(value)} which is not supported"
                " by Connect's data API"
            )
        source = inferred
    if source not in _CAST_INPUT:
        raise DataError(
            f"Cast transformation does not support casting from {source.java_name}; supported types are "
            f"{_types_text(_CAST_INPUT)}"
        )
    kind = java_class(schema, value)
    if kind == "Float":  # a Java Float holds a single; a value read as a double is rounded to one first
        value = f32(value)
    if schema is not None and schema.name is not None and target is not Type.STRING and kind == "Date":
        value, kind = _encode_date(schema, value)
    try:
        if target is Type.STRING:
            if kind == "Date":
                return date_text(value)
            if kind == "byte[]":
                return base64.b64encode(value).decode("ascii")
            if kind == "Boolean":
                return "true" if value else "false"
            if kind in NUMBERS:
                return number_text(kind, value)
            return str(value)
        if kind == "Boolean":
            flag = bool(value)
            if target is Type.BOOLEAN:
                return flag
            if target in (Type.FLOAT32, Type.FLOAT64):
                return 1.0 if flag else 0.0
            return 1 if flag else 0
        if kind == "String":
            if target in INT_BITS:
                return parse_int(value, INT_BITS[target])
            if target is Type.FLOAT32:
                return parse_float(value)
            if target is Type.FLOAT64:
                return parse_double(value)
            return value.lower() == "true"
        if kind in NUMBERS:
            if target in INT_BITS:
                return to_integer(kind, value, INT_BITS[target])
            if target is Type.FLOAT32:
                return to_float32(kind, value)
            if target is Type.FLOAT64:
                return to_float64(value)
            return to_integer(kind, value, 64) != 0
    except ValueError:
        raise DataError(f"Value ({value}) was out of range for requested data type") from None
    raise DataError(f"Unexpected type in Cast transformation: class {qualified_name(kind)}")


_FLAT: Final = (*_CAST_INPUT, Type.ARRAY)


class Flatten:
    """``Flatten$Key``/``$Value``: nested structs (maps without a schema) become top-level fields named by their
    path joined with ``delimiter``; a nested field is optional when an ancestor is, and takes a default from the
    ancestors' defaults; arrays are kept whole; map fields of a struct fail the record."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.delimiter = text(options, "delimiter", ".")

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self.delimiter + name

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(_require_map(value, "flattening"), "", flat)
            return self.side.record(record, None, flat)
        struct = _require_struct(value, "flattening")
        fields: list[tuple[str, Schema]] = []
        self._flatten_schema(schema, "", fields, schema.optional, schema.default)
        flat_schema = _build_struct(fields, _basics(schema))
        flat_struct = Struct(flat_schema)
        self._flatten_struct(struct, "", flat_struct)
        return self.side.record(record, flat_schema, flat_struct)

    def _flatten_map(self, source: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in source.items():
            name = self._name(prefix, key)
            if item is None:
                out[name] = None
                continue
            kind = schema_type_of(item)
            if kind is None:
                raise DataError(
                    f"Flatten transformation was passed a value of type class {class_name(item)} which is not "
                    "supported by Connect's data API"
                )
            if kind in _FLAT:
                out[name] = item
            elif kind is Type.MAP:
                self._flatten_map(item, name, out)
            else:
                raise DataError(
                    f"Flatten transformation does not support class {class_name(item)} for record without "
                    f"schemas (for field {name})."
                )

    def _flatten_schema(
        self, schema: Schema, prefix: str, out: list[tuple[str, Schema]], optional: bool, parent_default: Any
    ) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            field_optional = optional or f.schema.optional
            default = f.schema.default
            if default is None and parent_default is not None:
                default = parent_default.get(f.name)
            if f.schema.type in _FLAT:
                flat = Schema(
                    f.schema.type,
                    value_schema=f.schema.value_schema if f.schema.type is Type.ARRAY else None,
                    **_basics(f.schema),
                )
                if field_optional:
                    flat = flat.with_(optional=True)
                if default is not None:
                    flat = flat.with_(default=default)
                out.append((name, flat))
            elif f.schema.type is Type.STRUCT:
                self._flatten_schema(f.schema, name, out, field_optional, default)
            else:
                raise DataError(
                    f"Flatten transformation does not support {f.schema.type.java_name} for record with schemas "
                    f"(for field {name})."
                )

    def _flatten_struct(self, struct: Struct | None, prefix: str, out: Struct) -> None:
        if struct is None:
            return
        for f in struct.schema.fields:
            name = self._name(prefix, f.name)
            if f.schema.type in _FLAT:
                out.put(name, struct.get(f.name))
            elif f.schema.type is Type.STRUCT:
                self._flatten_struct(struct.get(f.name), name, out)
            else:
                raise DataError(
                    f"Flatten transformation does not support {f.schema.type.java_name} for record with schemas "
                    f"(for field {name})."
                )


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


# --- registration ---------------------------------------------------------------------------------------------


def _sided(name: str, cls: Callable[[Mapping[str, str], _Side], Transform]) -> dict[str, TransformFactory]:
    """The ``$Key`` and ``$Value`` variants of a transform."""
    return {
        f"{_PREFIX}{name}$Key": lambda options: cls(options, KEY),
        f"{_PREFIX}{name}$Value": lambda options: cls(options, VALUE),
    }


TRANSFORMS: Final[dict[str, TransformFactory]] = {
    _PREFIX + "RegexRouter": RegexRouter,
    _PREFIX + "TimestampRouter": TimestampRouter,
    _PREFIX + "ValueToKey": ValueToKey,
    _PREFIX + "InsertHeader": InsertHeader,
    _PREFIX + "DropHeaders": DropHeaders,
    _PREFIX + "Filter": Filter,
    **_sided("InsertField", InsertField),
    **_sided("ReplaceField", ReplaceField),
    **_sided("MaskField", MaskField),
    **_sided("ExtractField", ExtractField),
    **_sided("HoistField", HoistField),
    **_sided("Cast", Cast),
    **_sided("Flatten", Flatten),
    **_sided("HeaderFrom", HeaderFrom),
    **_sided("SetSchemaMetadata", SetSchemaMetadata),
    **_sided("TimestampConverter", TimestampConverter),
}

PREDICATES: Final[dict[str, PredicateFactory]] = {
    _PREFIX + "predicates.TopicNameMatches": TopicNameMatches,
    _PREFIX + "predicates.RecordIsTombstone": RecordIsTombstone,
    _PREFIX + "predicates.HasHeaderKey": HasHeaderKey,
}

__all__ = ["PREDICATES", "TRANSFORMS"]
