"""Kafka Connect's transforms that rewrite the types and shape of the key or value, registered by
:mod:`kafka_transforms`: ``Cast`` (one type for the whole key or value, or ``field:type`` pairs, with
``Cast.castValueToType``'s conversions and logical dates) and ``Flatten`` (nested structs and maps become
top-level fields named by their path), on the schema and schemaless paths as Connect 4.3.1 runs them.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    boolean,
    invalid,
    java_split,
    listing,
    text,
)
from mongocdc.events.connect.data import (
    DATE,
    TIME,
    ConnectRecord,
    DataError,
    Schema,
    Struct,
    Type,
    millis_of,
    schema_type_of,
)
from mongocdc.events.connect.java_lang import (
    INT_BITS,
    NUMBERS,
    HashMap,
    class_name,
    f32,
    java_class,
    number_text,
    parse_double,
    parse_float,
    parse_int,
    qualified_name,
    to_float32,
    to_float64,
    to_integer,
)
from mongocdc.events.connect.java_time import MILLIS_PER_DAY
from mongocdc.events.connect.kafka_transforms_common import (
    _basics,
    _build_struct,
    _get,
    _require_map,
    _require_struct,
    _required_text,
    _Side,
)
from mongocdc.events.connect.values import date_text

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
