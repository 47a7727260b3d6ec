"""Kafka Connect's data model: schemas, structs, headers and records, as the transforms and converters see them.

Pure. A Debezium connector hands Kafka Connect ``SourceRecord``s whose keys and values are ``Struct``s with
``Schema``s; single message transforms turn records into records, and the converters turn what comes out
into bytes. This module is that middle: :class:`Schema` (``ConnectSchema``: type, optionality, default, name,
version, doc, parameters, fields or element schemas), :class:`Struct`, :class:`Header` and
:class:`ConnectRecord` (``SourceRecord``'s topic, partition, key, value, timestamp and headers).

Values are Python values: ``int`` for the integer types, ``float``, ``bool``, ``str``, ``bytes``, ``list``,
``dict`` (a map), :class:`Struct`; the logical types as ``decimal.Decimal`` (``Decimal``) and an aware UTC
``datetime`` (``Date``, ``Time``, ``Timestamp``, all ``java.util.Date`` in Connect).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final


class DataError(ValueError):
    """Connect's ``DataException``: a record a transform or converter cannot handle (the task fails on it)."""


class Type(StrEnum):
    """``Schema.Type``, spelt as JsonConverter writes it."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float"
    FLOAT64 = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def primitive(self) -> bool:
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)

    @property
    def java_name(self) -> str:
        """The name Connect's messages use (``Schema.Type.toString``): ``INT32``, ``FLOAT64``, …"""
        return {Type.FLOAT32: "FLOAT32", Type.FLOAT64: "FLOAT64"}.get(self, self.name)


DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
DATE: Final = "org.apache.kafka.connect.data.Date"
TIME: Final = "org.apache.kafka.connect.data.Time"
TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"
DECIMAL_SCALE: Final = "scale"
EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class Field:
    """``Field``: a struct's field, its position and schema."""

    name: str
    index: int
    schema: Schema


@dataclass(frozen=True, slots=True)
class Schema:
    """``ConnectSchema``. Equal when every attribute is, as in Connect (transforms compare schemas)."""

    type: Type
    optional: bool = False
    default: Any = None
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: tuple[tuple[str, str], ...] | None = None
    """In insertion order (Connect keeps a ``LinkedHashMap``); ``None`` when the schema has none."""
    fields: tuple[Field, ...] = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None
    _by_name: Mapping[str, Field] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if self.fields:
            object.__setattr__(self, "_by_name", {f.name: f for f in self.fields})

    def field(self, name: str) -> Field | None:
        """The field called ``name``, or ``None`` (Connect's ``schema.field(name)``)."""
        if self.type is not Type.STRUCT:
            raise DataError("Cannot look up fields on non-struct type")
        return self._by_name.get(name)

    @property
    def params(self) -> dict[str, str]:
        return dict(self.parameters or ())

    def with_(self, **changes: Any) -> Schema:
        """A copy with ``changes`` (``name=``, ``optional=``, …)."""
        if "fields" in changes:
            changes["_by_name"] = {}
        return replace(self, **changes)

    def __str__(self) -> str:
        return f"Schema{{{self.name + ':' if self.name else ''}{self.type.java_name}}}"


def struct_schema(
    fields: Iterable[tuple[str, Schema]],
    *,
    name: str | None = None,
    optional: bool = False,
    version: int | None = None,
    doc: str | None = None,
    parameters: Mapping[str, str] | None = None,
    default: Any = None,
) -> Schema:
    """A struct schema with ``fields`` in order (``SchemaBuilder.struct()``); a repeated name is an error."""
    built: list[Field] = []
    seen: set[str] = set()
    for name_, schema in fields:
        if name_ in seen:
            raise DataError(f"Cannot create field because of field name duplication {name_}")
        seen.add(name_)
        built.append(Field(name_, len(built), schema))
    return Schema(
        Type.STRUCT,
        optional=optional,
        default=default,
        name=name,
        version=version,
        doc=doc,
        parameters=None if parameters is None else tuple(parameters.items()),
        fields=tuple(built),
    )


def field_schema(schema: Schema, name: str) -> Schema:
    """``schema.field(name).schema()``: the field must be there (Java fails on the null otherwise)."""
    found = schema.field(name)
    if found is None:
        raise DataError(f"No field {name} in schema {schema}")
    return found.schema


class StructBuilder:
    """``SchemaBuilder.struct()``: a name, optionality, version, doc, parameters and fields in order, with the
    builder's checks on each field added (an empty name, a null schema, a repeated name)."""

    __slots__ = ("name", "optional", "version", "doc", "parameters", "fields")

    def __init__(self, name: str | None = None, *, optional: bool = False) -> None:
        self.name = name
        self.optional = optional
        self.version: int | None = None
        self.doc: str | None = None
        self.parameters: Mapping[str, str] | None = None
        self.fields: dict[str, Schema] = {}

    def add(self, name: str, schema: Schema | None) -> None:
        if not name:
            raise DataError("fieldName cannot be null.")
        if schema is None:
            raise DataError(f"fieldSchema for field {name} cannot be null.")
        if name in self.fields:
            raise DataError(f"Cannot create field because of field name duplication {name}")
        self.fields[name] = schema

    def build(self) -> Schema:
        return struct_schema(
            self.fields.items(),
            name=self.name,
            optional=self.optional,
            version=self.version,
            doc=self.doc,
            parameters=self.parameters,
        )


def array_schema(items: Schema, *, optional: bool = False, name: str | None = None) -> Schema:
    return Schema(Type.ARRAY, optional=optional, name=name, value_schema=items)


def map_schema(keys: Schema, values: Schema, *, optional: bool = False, name: str | None = None) -> Schema:
    return Schema(Type.MAP, optional=optional, name=name, key_schema=keys, value_schema=values)


def primitive(kind: Type, *, optional: bool = False) -> Schema:
    return Schema(kind, optional=optional)


STRING: Final = Schema(Type.STRING)
OPTIONAL_STRING: Final = Schema(Type.STRING, optional=True)
INT8: Final = Schema(Type.INT8)
INT16: Final = Schema(Type.INT16)
INT32: Final = Schema(Type.INT32)
OPTIONAL_INT32: Final = Schema(Type.INT32, optional=True)
INT64: Final = Schema(Type.INT64)
OPTIONAL_INT64: Final = Schema(Type.INT64, optional=True)
FLOAT32: Final = Schema(Type.FLOAT32)
FLOAT64: Final = Schema(Type.FLOAT64)
OPTIONAL_FLOAT64: Final = Schema(Type.FLOAT64, optional=True)
BOOLEAN: Final = Schema(Type.BOOLEAN)
OPTIONAL_BOOLEAN: Final = Schema(Type.BOOLEAN, optional=True)
BYTES: Final = Schema(Type.BYTES)
OPTIONAL_BYTES: Final = Schema(Type.BYTES, optional=True)
DATE_SCHEMA: Final = Schema(Type.INT32, name=DATE, version=1)
TIME_SCHEMA: Final = Schema(Type.INT32, name=TIME, version=1)
TIMESTAMP_SCHEMA: Final = Schema(Type.INT64, name=TIMESTAMP, version=1)
OPTIONAL_TIMESTAMP_SCHEMA: Final = Schema(Type.INT64, optional=True, name=TIMESTAMP, version=1)

_RANGES: Final = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


def validate_value(schema: Schema | None, value: Any, where: str = "") -> None:
    """``ConnectSchema.validateValue``: raise ``DataError`` when ``value`` does not fit ``schema``."""
    if schema is None:
        return
    if value is None:
        if not schema.optional:
            raise DataError(
                f'Invalid value: null used for required field: "{where}", schema type: {schema.type.java_name}'
            )
        return
    ok: bool
    kind = schema.type
    if schema.name in (DATE, TIME, TIMESTAMP):
        ok = isinstance(value, dt.datetime)
    elif schema.name == DECIMAL:
        ok = isinstance(value, decimal.Decimal)
    elif kind in _RANGES:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind in (Type.FLOAT32, Type.FLOAT64):
        ok = isinstance(value, float)
    elif kind is Type.BOOLEAN:
        ok = isinstance(value, bool)
    elif kind is Type.STRING:
        ok = isinstance(value, str)
    elif kind is Type.BYTES:
        ok = isinstance(value, (bytes, bytearray))
    elif kind is Type.ARRAY:
        ok = isinstance(value, list)
        if ok:
            for item in value:
                validate_value(schema.value_schema, item, "entry")
    elif kind is Type.MAP:
        ok = isinstance(value, dict)
        if ok:
            for k, v in value.items():
                validate_value(schema.key_schema, k, "key")
                validate_value(schema.value_schema, v, "value")
    else:
        ok = isinstance(value, Struct)
        if ok and value.schema != schema:
            raise DataError("Struct schemas do not match.")
    if not ok:
        raise DataError(
            f"Invalid Java object for schema with type {kind.java_name}: {type(value).__name__}"
            + (f' for field: "{where}"' if where else "")
        )


class Struct:
    """``Struct``: values by field, in the schema's field order; ``get`` gives a field's default for a null."""

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema, values: Mapping[str, Any] | None = None) -> None:
        if schema.type is not Type.STRUCT:
            raise DataError(f"Not a struct schema: {schema}")
        self.schema = schema
        self._values: dict[str, Any] = {}
        if values:
            for name, value in values.items():
                self.put(name, value)

    def _field(self, name: str) -> Field:
        found = self.schema.field(name)
        if found is None:
            raise DataError(f"{name} is not a valid field name")
        return found

    def put(self, name: str, value: Any) -> Struct:
        found = self._field(name)
        validate_value(found.schema, value, name)
        self._values[name] = value
        return self

    def get(self, name: str) -> Any:
        """The value, or the field's default when it is null (``Struct.get``)."""
        found = self._field(name)
        value = self._values.get(name)
        return found.schema.default if value is None else value

    def get_without_default(self, name: str) -> Any:
        self._field(name)
        return self._values.get(name)

    def get_checked(self, name: str, kind: Type) -> Any:
        """``getString``/``getInt64``/``getStruct``…: the field must exist and be of type ``kind``; the value as
        stored, without the field's default (``getCheckType``)."""
        found = self._field(name)
        if found.schema.type is not kind:
            raise DataError(f"Field '{name}' is not of type {kind.java_name}")
        return self._values.get(name)

    def has(self, name: str) -> bool:
        return self.schema.field(name) is not None

    def items(self) -> Iterator[tuple[Field, Any]]:
        """Each field with its value as stored (no default)."""
        for f in self.schema.fields:
            yield f, self._values.get(f.name)

    def validate(self) -> None:
        for f in self.schema.fields:
            validate_value(f.schema, self._values.get(f.name), f.name)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Struct)
            and other.schema == self.schema
            and all(self._values.get(f.name) == other._values.get(f.name) for f in self.schema.fields)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ",".join(f"{f.name}={self._values.get(f.name)!r}" for f in self.schema.fields)
        return f"Struct{{{inner}}}"


@dataclass(frozen=True, slots=True)
class Header:
    """``ConnectHeader``: a key, and a value with its schema (``None`` when schemaless)."""

    key: str
    schema: Schema | None
    value: Any


def string_header(key: str, value: str | None) -> Header:
    return Header(key, OPTIONAL_STRING if value is None else STRING, value)


@dataclass(frozen=True, slots=True)
class ConnectRecord:
    """``SourceRecord`` as far as transforms and converters see it (the source partition and offset stay with the
    engine: a transform cannot change them). ``headers`` is in order, keys may repeat.

    ``shared_headers``: Connect's headers are mutable and a record made with ``newRecord`` gets a copy of them,
    but Debezium's tombstone shares the very ``ConnectHeaders`` of the delete before it, so a header a transform
    adds in place to the delete (``record.headers().add``, as ``ExtractNewDocumentState``'s ``add.headers``
    does) is on the tombstone too. A transform that adds headers in place to the record it was handed also
    appends them to this list, which the pipeline hands to the tombstone that follows (``chain.RecordPipeline``);
    ``None`` on a record a transform made (``new_record``), whose headers are its own."""

    topic: str
    partition: int | None
    key_schema: Schema | None
    key: Any
    value_schema: Schema | None
    value: Any
    timestamp: int | None = None
    headers: tuple[Header, ...] = ()
    shared_headers: list[Header] | None = field(default=None, compare=False)

    def new_record(self, **changes: Any) -> ConnectRecord:
        """``newRecord``: the same record with ``changes`` (``topic=``, ``value=``, ``headers=``, …), with
        headers of its own."""
        changes.setdefault("shared_headers", None)
        return replace(self, **changes)

    def add_headers_in_place(self, added: Sequence[Header]) -> ConnectRecord:
        """``record.headers().add(…)`` for each of ``added``: the record with them, and every record sharing this
        one's headers (see ``shared_headers``) gets them too."""
        if self.shared_headers is not None:
            self.shared_headers.extend(added)
        return replace(self, headers=self.headers + tuple(added))

    def header_values(self, key: str) -> Sequence[Header]:
        return [h for h in self.headers if h.key == key]

    def last_header(self, key: str) -> Header | None:
        found = None
        for h in self.headers:
            if h.key == key:
                found = h
        return found


def timestamp_from_millis(millis: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=millis)


def millis_of(value: dt.datetime) -> int:
    """``java.util.Date.getTime()`` of ``value`` (naive values are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def schema_type_of(value: Any) -> Type | None:
    """``ConnectSchema.schemaType(value.getClass())``: the type a schemaless value is written as."""
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, (bytes, bytearray)):
        return Type.BYTES
    if isinstance(value, list):
        return Type.ARRAY
    if isinstance(value, dict):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    return None
