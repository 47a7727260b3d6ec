"""MongoDB documents as Debezium 3.6.1's MongoDB transforms read them: the Java driver's ``BsonDocument.parse``,
Debezium's ``MongoDataConverter`` (BSON → Connect schema and struct) with its name adjusters, and
``BsonDocument.toJson`` in canonical extended JSON. The reading and writing of extended JSON (``BsonDocument.parse``,
:class:`Bson`, :func:`canonical_json`) live in ``bson_json``; this module re-exports them.

ExtractNewDocumentState (``unwrap``) and MongoEventRouter (``debezium_transforms``) both build on these Debezium
classes, and so both use this module. It is written from the Java driver's ``JsonReader``/``JsonWriter`` and
Debezium's ``MongoDataConverter``, ``FieldNameSelector`` and ``SchemaNameAdjuster``, and follows them step by step,
oddities included, since what comes out is what a sink has been built against:

* :class:`MongoDataConverter` first turns a document into a "schema map" whose keys are Java objects (BSON values,
  lists of them, maps of maps) compared with Java's ``equals``, then builds the schema from it and fills the
  struct from the document. It keeps that two-step shape with the same data structures (:class:`Bson`,
  :class:`_JList`, :class:`_JMap`), so that equal nested arrays merge, the last document of an array of documents
  wins a nested field's schema, an array field whose name ends its parent's name loses its nesting
  (``array.encoding=document``), and every record Debezium refuses is refused: mixed arrays
  (``array.encoding=array``), a primitive next to a document or an array in the same array
  (``array.encoding=document``: "Cannot create field because of field name duplication _0"),
  MinKey/MaxKey/Symbol/DBPointer fields ("… is not a valid field name"), JavaScript with scope, an empty field
  name, and so on, each as ``data.DataError``.
* Field and schema names go through an adjustment mode (:class:`NameAdjuster`, ``field.name.adjustment.mode``,
  ``schema.name.adjustment.mode``: ``avro`` puts ``_`` for what Avro refuses, ``avro_unicode`` ``_uXXXX``; a field
  name may not keep a ``.``, a schema name may). Names that become the same are not refused (Debezium's adjusters
  mean to, but never do): in a document they share one field (the first one's schema, the last one's value); in
  a document inside an array (``array.encoding=document``) the record fails on the duplicate field.

INT64 values in the structs the converter builds are :class:`JavaLong` (an ``int`` subclass): Connect tells an
``Integer`` from a ``Long`` when it validates a struct, and so must the checks here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

from mongocdc.events.connect.bson_json import (
    Bson,
    BsonType,
    JavaLong,
    bson_type,
    canonical_json,
    parse_document,
)
from mongocdc.events.connect.data import (
    OPTIONAL_BOOLEAN,
    OPTIONAL_BYTES,
    OPTIONAL_FLOAT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    OPTIONAL_TIMESTAMP_SCHEMA,
    DataError,
    Schema,
    Struct,
    StructBuilder,
    Type,
    array_schema,
    field_schema,
    struct_schema,
    timestamp_from_millis,
)

__all__ = [
    "ADJUSTMENT_MODES",
    "Bson",
    "BsonType",
    "JavaLong",
    "MongoDataConverter",
    "NameAdjuster",
    "bson_type",
    "canonical_json",
    "parse_document",
]

# --- names: SchemaNameAdjuster and FieldNameSelector -----------------------------------------------------------

ADJUSTMENT_MODES: Final = ("none", "avro", "avro_unicode")
"""The values of ``field.name.adjustment.mode`` and ``schema.name.adjustment.mode``."""


class NameAdjuster:
    """``SchemaNameAdjuster`` of an adjustment mode (:data:`ADJUSTMENT_MODES`): ``none`` keeps a name, ``avro``
    replaces each UTF-16 unit Avro refuses with ``_`` (keeping a leading digit after it), ``avro_unicode`` with
    ``_uXXXX``; a field namer (``field_names``) refuses ``.``, a schema-name adjuster accepts it. Two names that
    become the same are not an error: Debezium's adjusters mean to fail the record then, but build their memory
    of replaced names afresh for every name, so never do."""

    def __init__(self, mode: str, *, field_names: bool = False) -> None:
        self.keep = mode == "none"
        self.unicode = mode == "avro_unicode"
        first = "a-zA-Z" if self.unicode else "a-zA-Z_"
        rest = first + "0-9" + ("" if field_names else ".")
        self._first = re.compile(f"[{first}]")
        self._rest = re.compile(f"[{rest}]")
        self._valid = re.compile(f"(?:[{first}][{rest}]*)?")

    def adjust(self, name: str) -> str:
        if self.keep or self._valid.fullmatch(name):
            return name
        out: list[str] = []
        for position, unit in enumerate(_utf16_units(name)):
            if (self._first if position == 0 else self._rest).fullmatch(unit):
                out.append(unit)
            elif self.unicode:
                code = f"{ord(unit):x}"
                out.append("_u" + ("00" + code if len(code) <= 2 else code))
            else:
                out.append("_" + unit if position == 0 and unit.isdecimal() else "_")
        return "".join(out)


def _utf16_units(text: str) -> Iterator[str]:
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            yield chr(0xD800 + (code >> 10))
            yield chr(0xDC00 + (code & 0x3FF))
        else:
            yield ch


class _FieldNamer:
    """``FieldNameSelector.defaultNonRelationalSelector``: the adjuster behind a cache of names."""

    def __init__(self, adjuster: NameAdjuster) -> None:
        self.adjuster = adjuster
        self._cache: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        found = self._cache.get(name)
        if found is None:
            if len(self._cache) >= 10_000:
                self._cache.clear()
            self._cache[name] = found = self.adjuster.adjust(name)
        return found


# --- the schema map's Java collections ------------------------------------------------------------------------


class _JList(tuple[Any, ...]):
    """A ``List`` of BSON values used as a map key (the primitive elements of an array)."""

    __slots__ = ()


class _JMap(dict[Any, Any]):
    """A ``LinkedHashMap`` used as a value and as a key: ordered, equal regardless of order, hashable (never changed
    once it is a key). A map of one entry, ``Map.of(k, v)``, is the plain tuple ``(k, v)`` instead."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


# --- MongoDataConverter ------------------------------------------------------------------------------------------

_REGEX_SCHEMA: Final = struct_schema(
    [("regex", OPTIONAL_STRING), ("options", OPTIONAL_STRING)], name="io.debezium.mongodb.regex", optional=True
)
_EMPTY_STRUCT: Final = struct_schema([], optional=True)
_STRING_ARRAY: Final = array_schema(OPTIONAL_STRING, optional=True)
_SCALAR_SCHEMAS: Final = {
    BsonType.NULL: OPTIONAL_STRING,
    BsonType.STRING: OPTIONAL_STRING,
    BsonType.JAVASCRIPT: OPTIONAL_STRING,
    BsonType.OBJECT_ID: OPTIONAL_STRING,
    BsonType.DECIMAL128: OPTIONAL_STRING,
    BsonType.DOUBLE: OPTIONAL_FLOAT64,
    BsonType.BINARY: OPTIONAL_BYTES,
    BsonType.INT32: OPTIONAL_INT32,
    BsonType.INT64: OPTIONAL_INT64,
    BsonType.DATE_TIME: OPTIONAL_TIMESTAMP_SCHEMA,
    BsonType.TIMESTAMP: OPTIONAL_TIMESTAMP_SCHEMA,
    BsonType.BOOLEAN: OPTIONAL_BOOLEAN,
}
_NO_CONNECT_VALUE: Final = frozenset(
    (
        BsonType.MIN_KEY,
        BsonType.MAX_KEY,
        BsonType.UNDEFINED,
        BsonType.SYMBOL,
        BsonType.DB_POINTER,
        BsonType.REGULAR_EXPRESSION,
        BsonType.JAVASCRIPT_WITH_SCOPE,
    )
)


def _named(parent: str | None, key: str) -> str:
    """``parent + "." + key`` as Java concatenates it (a null name prints ``null``)."""
    return f"{'null' if parent is None else parent}.{key}"


def _ints_fit(schema: Schema, value: Any) -> None:
    """Connect's ``Integer``/``Long`` distinction, which Python's ``int`` loses (see :class:`JavaLong`)."""
    kind = schema.type
    if value is None:
        return
    if kind is Type.INT32 and type(value) is JavaLong:
        raise DataError("Invalid Java object for schema with type INT32: class java.lang.Long")
    if kind is Type.INT64 and schema.name is None and type(value) is int:
        raise DataError("Invalid Java object for schema with type INT64: class java.lang.Integer")
    if kind is Type.ARRAY and type(value) is list and schema.value_schema is not None:
        items = schema.value_schema
        if items.type in (Type.INT32, Type.INT64, Type.ARRAY):
            for item in value:
                _ints_fit(items, item)


def _put(struct: Struct, key: str, value: Any) -> None:
    found = struct.schema.field(key)
    if found is None:
        raise DataError(f"{key} is not a valid field name")
    _ints_fit(found.schema, value)
    struct.put(key, value)


def _java_value(value: Bson) -> Any:
    """``getObject``: the Connect value of a BSON value (``None`` for those Debezium has none for)."""
    kind = value.type
    if kind is BsonType.DATE_TIME:
        return _date(value.value)
    if kind is BsonType.TIMESTAMP:
        return _date(1000 * value.value[0])
    if kind is BsonType.BINARY:
        return value.value[1]
    if kind in _NO_CONNECT_VALUE:
        return None
    return value.value


def _date(millis: int) -> dt.datetime:
    try:
        return timestamp_from_millis(millis)
    except OverflowError:
        raise DataError(f"Date {millis} ms from the epoch is outside the years 1 to 9999 mongocdc represents") from None


class MongoDataConverter:
    """``MongoDataConverter``: schema maps, schemas and structs (see the module docstring), for
    ``array.encoding`` ``array`` or ``document`` (``document_encoding``) and a ``field.name.adjustment.mode``
    (:data:`ADJUSTMENT_MODES`; any but ``none`` also leaves an empty array out of the struct, Debezium's
    ``sanitizeValue``)."""

    def __init__(self, *, document_encoding: bool = False, name_adjustment: str = "none") -> None:
        self.document_encoding = document_encoding
        self.sanitize_value = name_adjustment != "none"
        self.namer: Callable[[str], str] = (
            _FieldNamer(NameAdjuster(name_adjustment, field_names=True)) if self.sanitize_value else str
        )

    # schema maps ------------------------------------------------------------------------------------------

    def parse_bson_document(self, document: dict[str, Any]) -> _JMap:
        """``parseBsonDocument``: name → ``(traversed array, ARRAY)``, ``(schema map, DOCUMENT)`` or
        ``(value, type)``."""
        result = _JMap()
        for key, value in document.items():
            kind = type(value)
            if kind is Bson:
                result[key] = (value, value.type)
            elif kind is list:
                result[key] = (self._traverse_array(value), BsonType.ARRAY)
            else:
                result[key] = (self.parse_bson_document(value), BsonType.DOCUMENT)
        return result

    def _traverse_array(self, array: list[Any]) -> _JMap:
        """``traverseArray``: nested arrays (merged when equal), then the documents (``array`` encoding: one merged
        schema map; ``document``: one ``{index: schema map}`` each, in place), then the primitives as one list."""
        unified = _JMap()
        primitives: list[Bson] = []
        merged = _JMap()
        field_schemas: dict[str, list[Schema]] = {}
        index = 0
        for value in array:
            kind = type(value)
            if kind is list:
                unified[self._traverse_array(value)] = BsonType.ARRAY
            elif kind is dict:
                schema_map = self.parse_bson_document(value)
                if self.document_encoding:
                    unified[_JMap({index: schema_map})] = BsonType.DOCUMENT
                    index += 1
                else:
                    self._merge(merged, schema_map, field_schemas)
            else:
                primitives.append(value)
        if merged:
            unified[merged] = BsonType.DOCUMENT
        if primitives:
            types = {value.type for value in primitives}
            unified[_JList(primitives)] = primitives[0].type if len(types) == 1 else BsonType.ARRAY
        return unified

    def _merge(self, base: _JMap, document: _JMap, field_schemas: dict[str, list[Schema]]) -> None:
        """``mergeSchemas``: the last document's entry wins a name (keeping the name's first place); a non-document
        entry whose schema differs from one seen before for the name fails. (Debezium's merge function compares
        the entry with the document's map, which is never equal, so the incoming entry always wins.)"""
        for field, entry in document.items():
            obj, kind = entry
            schema = self._sub_schema(kind)
            seen = field_schemas.setdefault(field, [])
            if schema not in seen:
                seen.append(schema)
            if not (kind is BsonType.DOCUMENT and obj) and len(seen) > 1:
                raise DataError(f"Array elements with different Bson types are not supported: field {field}")
            base[field] = entry

    # schemas ----------------------------------------------------------------------------------------------

    def _sub_schema(self, kind: BsonType) -> Schema:
        """``getSchema``: the schema of an array element or of a merged field."""
        found = _SCALAR_SCHEMAS.get(kind)
        if found is not None:
            return found
        if kind is BsonType.ARRAY:
            return _EMPTY_STRUCT if self.document_encoding else _STRING_ARRAY
        if kind is BsonType.DOCUMENT:
            return _EMPTY_STRUCT
        raise DataError(f"The value type {kind} is not supported for sub schema")

    def build_schema(self, schema_map: _JMap, builder: StructBuilder) -> None:
        """``buildSchema``: a field of ``builder`` per entry of the schema map, unless it has one by that name."""
        for key, entry in schema_map.items():
            self._schema(self.namer(key), entry, builder)

    def _schema(self, key: str, entry: tuple[Any, BsonType], builder: StructBuilder) -> None:
        """``schema``: the field ``key`` for ``entry`` unless the builder has one already."""
        if key in builder.fields:
            return
        obj, kind = entry
        found = _SCALAR_SCHEMAS.get(kind)
        if found is not None:
            builder.add(key, found)
        elif kind is BsonType.DOCUMENT:
            if not obj:
                builder.add(key, _EMPTY_STRUCT)
                return
            document = StructBuilder(_named(builder.name, key), optional=True)
            for name, entry in obj.items():
                self._schema(self.namer(name), entry, document)
            builder.add(key, document.build())
        elif kind is BsonType.ARRAY:
            self._array_schema(key, obj, builder)
        elif kind is BsonType.REGULAR_EXPRESSION:
            builder.add(key, _REGEX_SCHEMA)
        elif kind is BsonType.JAVASCRIPT_WITH_SCOPE:  # Debezium casts the value to a Map here
            raise DataError("JavaScript with scope is not supported (class BsonJavaScriptWithScope cannot be cast)")
        # any other type (MinKey, MaxKey, Undefined, Symbol, DBPointer) gets no field

    def _array_schema(self, key: str, unified: _JMap, builder: StructBuilder) -> None:
        if not unified:
            if self.document_encoding:
                builder.add(key, struct_schema([], name=_named(builder.name, key), optional=True))
            else:
                builder.add(key, _STRING_ARRAY)
            return
        if not self.document_encoding:
            for obj in unified:
                if type(obj) is _JMap:
                    nested = StructBuilder(_named(builder.name, key), optional=True)
                    self._nested_array(key, obj, builder, nested, False)
                else:
                    self._simple_array(key, obj, builder, False)
            return
        if builder.name is None:
            raise DataError(f"Cannot name the schema of array {key} in a schema without a name")
        document = StructBuilder(builder.name if builder.name.endswith(key) else f"{builder.name}.{key}", optional=True)
        field_index = 0
        for obj in unified:
            if type(obj) is _JList:
                self._element_fields(document, obj)
            elif type(obj) is _JMap and obj and type(next(iter(obj))) is int:  # {index: schema map} of a document
                for index, schema_map in obj.items():
                    element = StructBuilder(f"{document.name}._{index}", optional=True)
                    self._element_document(element, schema_map)
                    if element.fields:
                        document.add(f"_{index}", element.build())
            elif obj:  # a nested array's unified map
                element = StructBuilder(f"{document.name}._{field_index}", optional=True)
                self._element_document(element, obj)
                if element.fields:
                    document.add(f"_{field_index}", element.build())
                    field_index += 1
        if document.name != builder.name:
            builder.add(key, document.build())
        else:
            for name, schema in document.fields.items():
                builder.add(name, schema)

    def _element_fields(self, builder: StructBuilder, values: _JList) -> None:
        """``parseArrayLists``: ``_0``, ``_1``, … by position in the list of primitives."""
        for index, value in enumerate(values):
            builder.add(f"_{index}", self._sub_schema(value.type))

    def _element_document(self, element: StructBuilder, schema_map: _JMap) -> None:
        """``parseMapLists``: the fields of an array's document, or ``_0``, … for a nested array's primitives. (Its
        branch for an entry mapping more than one object is never taken: every entry maps one.)"""
        for name, value in schema_map.items():
            if type(value) is tuple:  # a document's field (a list's or a nested array's entries map to a type)
                entry_key = self.namer(name)
                obj, kind = value
                if kind in (BsonType.ARRAY, BsonType.DOCUMENT) and not obj:  # an empty array or document
                    element.add(
                        entry_key, struct_schema([], name=self.namer(f"{element.name}.{entry_key}"), optional=True)
                    )
                elif kind is BsonType.ARRAY:
                    nested = StructBuilder(f"{element.name}.{entry_key}", optional=True)
                    self._schema(entry_key, value, nested)
                    element.add(entry_key, nested.build())
                elif kind is BsonType.DOCUMENT:
                    self._schema(entry_key, value, element)
                else:
                    element.add(entry_key, self._sub_schema(kind))
            elif type(name) is _JList and name:
                self._element_fields(element, name)

    def _nested_array(
        self, key: str, schema_map: _JMap, builder: StructBuilder, nested: StructBuilder, deep: bool
    ) -> None:
        """``handleNestedArray``: an array of documents (``array<struct>``) or of arrays (``array<array<…>>``)."""
        for doc_key, doc_value in schema_map.items():
            if type(doc_key) is _JList:
                self._simple_array(key, doc_key, builder, True)
            elif type(doc_key) is _JMap:
                if doc_value is BsonType.ARRAY:
                    self._simple_array(key, doc_key.values(), builder, True)
                elif doc_value is BsonType.DOCUMENT:
                    self._nested_array(key, doc_key, builder, StructBuilder(optional=True), True)
            elif type(doc_value) is tuple:  # a document's field
                name = self.namer(doc_key)
                self._sub_schema(doc_value[1])  # validateSingleTypeMap
                self._schema(name, doc_value, nested)
        if nested.fields and key not in builder.fields:
            items = nested.build()
            if deep:
                builder.add(key, array_schema(array_schema(items, optional=True), optional=True))
            else:
                builder.add(key, array_schema(items, optional=True))

    def _simple_array(self, key: str, values: Any, builder: StructBuilder, deep: bool) -> None:
        """``handleSimpleArray``: ``array<T>`` when every element has T's schema."""
        if key in builder.fields:
            return
        items = list(values)
        if not all(type(value) is Bson for value in items):  # the BsonTypes of an array nested three deep
            raise DataError("Arrays nested three deep are not supported (class BsonType cannot be cast to BsonValue)")
        if not items:
            raise DataError("Arrays nested three deep are not supported (index 0 out of bounds for length 0)")
        schemas = {self._sub_schema(value.type) for value in items}
        if len(schemas) > 1:
            raise DataError(f"Array elements with different Bson types are not supported: {items}")
        element = array_schema(self._sub_schema(items[0].type), optional=True)
        builder.add(key, array_schema(element, optional=True) if deep else element)

    # structs ----------------------------------------------------------------------------------------------

    def build_struct(self, name: str, value: Any, schema: Schema, struct: Struct) -> None:
        """``buildStruct``: put field ``name`` of a document (``value``) into ``struct`` (of ``schema``) under its
        adjusted name."""
        key = self.namer(name)
        kind = type(value)
        if kind is Bson:
            bson = value.type
            if bson is BsonType.UNDEFINED:
                return
            if bson is BsonType.REGULAR_EXPRESSION:
                regex = Struct(field_schema(schema, key))
                _put(regex, "regex", value.value[0])
                _put(regex, "options", value.value[1])
                _put(struct, key, regex)
            elif bson is BsonType.JAVASCRIPT_WITH_SCOPE:
                raise DataError(f"JavaScript with scope is not supported (field {key})")
            else:
                _put(struct, key, _java_value(value))
        elif kind is dict:
            found = schema.field(key)
            if found is None:
                raise DataError(f"Can't find field: {key} in schema {schema.name}")
            _put(struct, key, self.to_struct(value, found.schema))
        elif not value:
            if self.sanitize_value:
                return
            _put(struct, key, Struct(field_schema(schema, key)) if self.document_encoding else [])
        elif self.document_encoding:
            elements_schema = field_schema(schema, key)
            elements = Struct(elements_schema)
            for index, element in enumerate(value):
                self.build_struct(f"_{index}", element, elements_schema, elements)
            _put(struct, key, elements)
        else:
            array = field_schema(schema, key)
            items = array.value_schema if array.type is Type.ARRAY else array
            assert items is not None
            _put(struct, key, self._array(value, items))

    def _array(self, array: list[Any], schema: Schema) -> list[Any]:
        """``buildArray``: documents as structs of ``schema``; a nested array's documents as structs of its element
        schema, and an empty nested array left out."""
        values: list[Any] = []
        for value in array:
            kind = type(value)
            if kind is list:
                inner: list[Any] = []
                for item in value:
                    if type(item) is list:
                        inner.append(self._array(item, schema))
                    elif type(item) is dict:
                        if schema.value_schema is None:
                            raise DataError(f"Schema {schema} has no element schema for a nested document")
                        inner.append(self.to_struct(item, schema.value_schema))
                    else:
                        inner.append(_java_value(item))
                if inner:
                    values.append(inner)
            elif kind is dict:
                values.append(self.to_struct(value, schema))
            else:
                values.append(_java_value(value))
        return values

    def to_struct(self, document: dict[str, Any], schema: Schema) -> Struct:
        """A document as a struct of ``schema`` (:meth:`build_struct` for each of its fields)."""
        struct = Struct(schema)
        for name, value in document.items():
            self.build_struct(name, value, schema, struct)
        return struct
