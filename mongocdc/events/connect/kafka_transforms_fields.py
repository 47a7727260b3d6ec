"""Kafka Connect's field-level transforms that pick, add or move fields of the key or value, registered by
:mod:`kafka_transforms`: ``InsertField``, ``ReplaceField``, ``MaskField``, ``ValueToKey``, ``ExtractField``
(with ``SingleFieldPath``'s ``V1``/``V2`` field paths) and ``HoistField``, each on the schema and schemaless
paths as Connect 4.3.1 runs them.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    boolean,
    choice,
    invalid,
    java_split,
    listing,
    option,
)
from mongocdc.events.connect.data import (
    INT32,
    INT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING,
    TIMESTAMP_SCHEMA,
    ConnectRecord,
    DataError,
    Field,
    Schema,
    Struct,
    timestamp_from_millis,
)
from mongocdc.events.connect.java_lang import (
    HashMap,
    big_decimal,
    f32,
    hash_set_order,
    java_class,
    qualified_name,
    wrap,
)
from mongocdc.events.connect.kafka_transforms_common import (
    _basics,
    _build_struct,
    _get,
    _non_empty_list,
    _non_empty_string,
    _require_map,
    _require_struct,
    _required_text,
    _Side,
)
from mongocdc.events.connect.values import as_double, as_long


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
