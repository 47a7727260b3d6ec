"""Debezium 3.6.1's own single message transforms: the MongoDB outbox router, the logical-table router and
HeaderToValue, record for record as Debezium's classes transform them.

* ``io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter`` (:class:`MongoEventRouter`): the
  ``after`` JSON of an outbox collection's inserts is parsed into a struct the way Debezium's
  ``MongoDataConverter`` does (:class:`MongoDataConverter`, array encoding ``array``), the payload field left a
  JSON string (the document as the Java driver's ``toJson`` writes it, canonical extended JSON, indented) unless
  ``collection.expand.json.payload``, then ``EventRouterDelegate`` routes it: the topic from ``route.by.field``
  through ``route.topic.regex``/``route.topic.replacement``, the key from ``collection.field.event.key``
  (``aggregateid`` by default, Debezium's relational default), an ``id`` header, the timestamp from
  ``collection.field.event.timestamp`` or the event's ``ts_ms``, ``collection.fields.additional.placement``
  (``envelope``, ``header``, ``partition``, with aliases), ``collection.field.event.schema.version``,
  ``route.tombstone.on.empty.payload``, ``collection.field.additional.missing``. Deletes and tombstones are
  dropped, updates dropped or fatal by ``table.op.invalid.behavior`` (the name Debezium's code reads; its
  documented ``collection.op.invalid.behavior`` has no effect in 3.6.1), records that are not change events
  pass unchanged. The value schema caches are Debezium's: per payload schema (per version with
  ``collection.field.event.schema.version``) for the transform's life, so a schema's name keeps the routed
  topic of the first event it was built for. ``collection.field.event.type`` is read by no code in 3.6.1.
  The ``tracing.*`` options only act when OpenTelemetry is on the worker's class path (then Debezium records
  spans and adds trace propagation headers), which the Debezium MongoDB connector's plugin does not ship:
  accepted, without effect, as there.
* ``io.debezium.transforms.ByLogicalTableRouter`` (:class:`ByLogicalTableRouter`): ``topic.regex`` →
  ``topic.replacement``, the key's schema renamed ``<topic>.Key`` (``schema.name.adjustment.mode``) with the
  physical table's field added (``key.enforce.uniqueness``, ``key.field.name``, ``key.field.regex``,
  ``key.field.replacement``), an envelope's schema renamed ``<topic>.Envelope`` with ``before``/``after``
  ``<topic>.Value``, schemas cached per original schema (``logical.table.cache.size``, LRU) as Debezium caches
  them. A MongoDB change event's ``before`` is a JSON string, not a struct: Debezium fails on it, and so does this.
* ``io.debezium.transforms.HeaderToValue`` (:class:`HeaderToValue`): ``headers`` → ``fields`` (dotted names nest),
  ``operation`` ``move`` or ``copy``, with ``ConnectRecordUtil``'s schema building and its cache of 64 updated
  schemas per value schema.

Options are read as Debezium's ``Configuration`` reads them (raw text, no trimming, Debezium's validators);
the Kafka classes Debezium delegates to (``RegexRouter``) trim theirs. A record Debezium fails on raises
``DataError``. Debezium's bounded concurrent caches (segmented LRUs of 64 and 10 000 entries) are plain LRUs of
the same size here: they differ only in which entry goes once more schemas than that have been seen.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import enum
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from bson import Decimal128

from mongocdc.events.codec import decimal128_text, java_double, value_to_json
from mongocdc.events.connect.base import (
    ConnectConfigError,
    TransformFactory,
    invalid,
    java_regex,
    java_replacement,
)
from mongocdc.events.connect.data import (
    EPOCH,
    OPTIONAL_BOOLEAN,
    OPTIONAL_BYTES,
    OPTIONAL_FLOAT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING,
    ConnectRecord,
    DataError,
    Header,
    Schema,
    Struct,
    Type,
    struct_schema,
)
from mongocdc.events.connect.json import Raw

K = TypeVar("K")
V = TypeVar("V")

_JAVA_WHITESPACE: Final = "".join(map(chr, range(0x21)))


def _java_trim(text: str) -> str:
    """``String.trim()``: every character up to U+0020 off both ends."""
    return text.strip(_JAVA_WHITESPACE)


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split`` on a literal separator: no separator gives ``[text]``, trailing empty parts are dropped."""
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _jstr(text: str | None) -> str:
    """A string as Java's ``+`` concatenates it (``null`` for none)."""
    return "null" if text is None else text


def _require_struct(value: Any, purpose: str) -> Struct:
    """``Requirements.requireStruct``."""
    if not isinstance(value, Struct):
        found = "null" if value is None else type(value).__name__
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {found}")
    return value


def _typed(value: Struct, name: str, kind: Type) -> Any:
    """``Struct.getString``/``getInt32``/``getInt64``: the field must be of ``kind``; the value as stored."""
    found = value.schema.field(name)
    if found is None:
        raise DataError(f"{name} is not a valid field name")
    if found.schema.type is not kind:
        raise DataError(f"Field '{name}' is not of type {kind.java_name}")
    return value.get_without_default(name)


def _is_envelope(schema: Schema | None) -> bool:
    """``SmtManager.isValidEnvelope``: a value schema named ``….Envelope``."""
    return schema is not None and schema.name is not None and schema.name.endswith(".Envelope")


def _replace_first(pattern: re.Pattern[str], replacement: str, text: str) -> str:
    """``matcher.replaceFirst(replacement)`` (the text is known to match the whole pattern)."""
    try:
        return pattern.sub(java_replacement(replacement), text, count=1)
    except (re.error, IndexError) as exc:
        raise DataError(f"Illegal replacement {replacement!r}: {exc}") from None


class _Builder:
    """``SchemaBuilder.struct()``: fields in order, Connect's checks on each one added."""

    __slots__ = ("name", "optional", "version", "doc", "parameters", "fields")

    def __init__(self, name: str | None, *, optional: bool = False) -> None:
        self.name = name
        self.optional = optional
        self.version: int | None = None
        self.doc: str | None = None
        self.parameters: Mapping[str, str] | None = None
        self.fields: dict[str, Schema] = {}

    def has(self, name: str) -> bool:
        return name in self.fields

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


def _new_struct(schema: Schema | None) -> Struct:
    """``new Struct(schema)``."""
    if schema is None:
        raise DataError("Cannot create a Struct without a schema")
    return Struct(schema)


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
        lowered = _java_trim(value).lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    return default


def _check_boolean(name: str, value: str | None) -> None:
    """``Field::isBoolean``."""
    if value is not None and _java_trim(value).lower() not in ("true", "false"):
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
    if value is None or not _java_trim(value):
        raise invalid(name, value, "A value is required")


def _check_choice(name: str, value: str | None, allowed: Sequence[str]) -> str:
    """An enumerated option (``Field.withEnum``): one of ``allowed`` once trimmed, in any case."""
    probe = "" if value is None else _java_trim(value).lower()
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
    return [] if value is None else [_java_trim(item) for item in _java_split(value, ",")]


# =============================================================================================================
# BSON documents as Debezium's MongoDB transforms read them: the ``after`` JSON parsed as ``BsonDocument.parse``
# parses it, Debezium's ``MongoDataConverter`` (array encoding ``array``, field names as they are) turning it
# into Connect's schema and struct, and the canonical extended JSON ``BsonDocument.toJson`` writes. Kept apart
# from the routers: ExtractNewDocumentState uses the same converter.
# =============================================================================================================


class BsonType(enum.Enum):
    """``org.bson.BsonType`` (the ones JSON can hold)."""

    DOUBLE = "DOUBLE"
    STRING = "STRING"
    DOCUMENT = "DOCUMENT"
    ARRAY = "ARRAY"
    BINARY = "BINARY"
    UNDEFINED = "UNDEFINED"
    OBJECT_ID = "OBJECT_ID"
    BOOLEAN = "BOOLEAN"
    DATE_TIME = "DATE_TIME"
    NULL = "NULL"
    REGULAR_EXPRESSION = "REGULAR_EXPRESSION"
    DB_POINTER = "DB_POINTER"
    JAVASCRIPT = "JAVASCRIPT"
    SYMBOL = "SYMBOL"
    JAVASCRIPT_WITH_SCOPE = "JAVASCRIPT_WITH_SCOPE"
    INT32 = "INT32"
    TIMESTAMP = "TIMESTAMP"
    INT64 = "INT64"
    DECIMAL128 = "DECIMAL128"
    MIN_KEY = "MIN_KEY"
    MAX_KEY = "MAX_KEY"


@dataclass(frozen=True, slots=True, eq=False)
class Bson:
    """A BSON value plain JSON has no type for. ``value``: INT64 an ``int``; OBJECT_ID the hex text; DECIMAL128
    a ``Decimal128``; BINARY ``(subtype, bytes)``; DATE_TIME the milliseconds; TIMESTAMP ``(t, i)``;
    REGULAR_EXPRESSION ``(pattern, options)`` (options sorted, as ``BsonRegularExpression`` keeps them);
    JAVASCRIPT the code; JAVASCRIPT_WITH_SCOPE ``(code, scope document)``; SYMBOL the text; DB_POINTER
    ``(namespace, ObjectId hex)``; UNDEFINED, MIN_KEY, MAX_KEY ``None``.

    The other BSON values are Python's own: a document ``dict`` (in order), an array ``list``, STRING ``str``,
    BOOLEAN ``bool``, NULL ``None``, INT32 ``int``, DOUBLE ``float``."""

    type: BsonType
    value: Any = None


def bson_type(value: Any) -> BsonType:
    if isinstance(value, Bson):
        return value.type
    if isinstance(value, dict):
        return BsonType.DOCUMENT
    if isinstance(value, list):
        return BsonType.ARRAY
    if isinstance(value, str):
        return BsonType.STRING
    if isinstance(value, bool):
        return BsonType.BOOLEAN
    if value is None:
        return BsonType.NULL
    if isinstance(value, int):
        return BsonType.INT32
    if isinstance(value, float):
        return BsonType.DOUBLE
    raise TypeError(f"not a BSON value: {type(value).__name__}")


# --- parsing (org.bson.json.JsonReader) -------------------------------------------------------------------------


def _integer(text: str) -> Any:
    """A JSON integer: INT32 when it fits, else INT64 (``JsonScanner``)."""
    number = int(text)
    if -(2**31) <= number < 2**31:
        return number
    if -(2**63) <= number < 2**63:
        return Bson(BsonType.INT64, number)
    raise ValueError(f'For input string: "{text}"')


def _long_text(value: Any) -> int:
    if not isinstance(value, str) or not _JAVA_INT.fullmatch(value) or not -(2**63) <= int(value) < 2**63:
        raise ValueError(f"not a 64-bit integer: {value!r}")
    return int(value)


def _int_value(value: Any) -> int:
    """An INT32 or INT64 read where the reader wants a number."""
    if isinstance(value, Bson) and value.type is BsonType.INT64:
        return int(value.value)
    if bson_type(value) is BsonType.INT32:
        return int(value)
    raise ValueError(f"not an integer: {value!r}")


def _date_millis(value: Any) -> int:
    if isinstance(value, str):
        moment = dt.datetime.fromisoformat(value)
        if moment.tzinfo is None:
            raise ValueError(f"not an ISO-8601 date with an offset: {value}")
        return (moment - EPOCH) // dt.timedelta(milliseconds=1)
    return _int_value(value)


def _only(pairs: list[tuple[str, Any]], *names: str) -> dict[str, Any]:
    """The wrapper's members, which must be exactly ``names``."""
    found = dict(pairs)
    if len(pairs) != len(names) or set(found) != set(names):
        raise ValueError(f"JSON reader expected {', '.join(names)} but found {', '.join(k for k, _ in pairs)}")
    return found


def _binary(pairs: list[tuple[str, Any]]) -> Bson | None:
    """``{"$binary": "<base64>", "$type": "<hex>"}`` (either order) or ``{"$binary": {"base64", "subType"}}``;
    ``None`` when it is neither (then it is a document, as the Java reader decides)."""
    found = dict(pairs)
    if len(pairs) == 2 and set(found) == {"$binary", "$type"}:
        data, subtype = found["$binary"], found["$type"]
    elif len(pairs) == 1 and isinstance(found.get("$binary"), dict) and set(found["$binary"]) == {"base64", "subType"}:
        data, subtype = found["$binary"]["base64"], found["$binary"]["subType"]
    else:
        return None
    if not isinstance(data, str) or not isinstance(subtype, str):
        return None
    try:
        return Bson(BsonType.BINARY, (int(subtype, 16) & 0xFF, base64.b64decode(data, validate=True)))
    except (ValueError, binascii.Error):
        return None


def _regex(pairs: list[tuple[str, Any]]) -> Bson | None:
    """``{"$regex": "…", "$options": "…"}`` (either order); ``None`` when it is not (a query operator)."""
    found = dict(pairs)
    if len(pairs) != 2 or set(found) != {"$regex", "$options"}:
        return None
    pattern, options = found["$regex"], found["$options"]
    if not isinstance(pattern, str) or not isinstance(options, str):
        return None
    return Bson(BsonType.REGULAR_EXPRESSION, (pattern, "".join(sorted(options))))


def _code(pairs: list[tuple[str, Any]]) -> Bson:
    found = dict(pairs)
    if len(pairs) == 1:
        code = _only(pairs, "$code")["$code"]
        if isinstance(code, str):
            return Bson(BsonType.JAVASCRIPT, code)
    elif isinstance(found.get("$code"), str) and isinstance(_only(pairs, "$code", "$scope")["$scope"], dict):
        return Bson(BsonType.JAVASCRIPT_WITH_SCOPE, (found["$code"], found["$scope"]))
    raise ValueError("JSON reader expected a $code string")


def _single(pairs: list[tuple[str, Any]], name: str) -> Any:
    return _only(pairs, name)[name]


def _timestamp(pairs: list[tuple[str, Any]]) -> Bson:
    inner = _single(pairs, "$timestamp")
    if not isinstance(inner, dict) or set(inner) != {"t", "i"}:
        raise ValueError("JSON reader expected $timestamp {t, i}")
    return Bson(BsonType.TIMESTAMP, (_int_value(inner["t"]) & 0xFFFFFFFF, _int_value(inner["i"]) & 0xFFFFFFFF))


def _regular_expression(pairs: list[tuple[str, Any]]) -> Bson:
    inner = _single(pairs, "$regularExpression")
    if not isinstance(inner, dict) or set(inner) != {"pattern", "options"}:
        raise ValueError("JSON reader expected $regularExpression {pattern, options}")
    return Bson(BsonType.REGULAR_EXPRESSION, (str(inner["pattern"]), "".join(sorted(str(inner["options"])))))


def _db_pointer(pairs: list[tuple[str, Any]]) -> Bson:
    inner = _single(pairs, "$dbPointer")
    oid = inner.get("$id") if isinstance(inner, dict) else None
    if not isinstance(oid, Bson) or oid.type is not BsonType.OBJECT_ID or not isinstance(inner.get("$ref"), str):
        raise ValueError("JSON reader expected $dbPointer {$ref, $id}")
    return Bson(BsonType.DB_POINTER, (inner["$ref"], oid.value))


def _object_id(pairs: list[tuple[str, Any]]) -> Bson:
    text = _single(pairs, "$oid")
    if not isinstance(text, str) or not re.fullmatch(r"[0-9a-fA-F]{24}", text):
        raise ValueError(f"invalid ObjectId {text!r}")
    return Bson(BsonType.OBJECT_ID, text.lower())


def _decimal(pairs: list[tuple[str, Any]]) -> Bson:
    text = _single(pairs, "$numberDecimal")
    try:
        return Bson(BsonType.DECIMAL128, Decimal128(text))
    except (TypeError, ArithmeticError) as exc:
        raise ValueError(f"invalid Decimal128 {text!r}") from exc


def _double(pairs: list[tuple[str, Any]]) -> float:
    text = _single(pairs, "$numberDouble")
    if not isinstance(text, str):
        raise ValueError("JSON reader expected a $numberDouble string")
    return float(text)


def _int32(pairs: list[tuple[str, Any]]) -> int:
    number = _long_text(_single(pairs, "$numberInt"))
    if not -(2**31) <= number < 2**31:
        raise ValueError(f"not a 32-bit integer: {number}")
    return number


def _key(pairs: list[tuple[str, Any]], name: str, kind: BsonType) -> Bson:
    if _single(pairs, name) not in (1, True):
        raise ValueError(f"JSON reader expected {name}: 1")
    return Bson(kind)


_WRAPPERS: Final[dict[str, Callable[[list[tuple[str, Any]]], Any]]] = {
    "$oid": _object_id,
    "$numberLong": lambda pairs: Bson(BsonType.INT64, _long_text(_single(pairs, "$numberLong"))),
    "$numberInt": _int32,
    "$numberDouble": _double,
    "$numberDecimal": _decimal,
    "$date": lambda pairs: Bson(BsonType.DATE_TIME, _date_millis(_single(pairs, "$date"))),
    "$timestamp": _timestamp,
    "$regularExpression": _regular_expression,
    "$code": _code,
    "$symbol": lambda pairs: Bson(BsonType.SYMBOL, str(_single(pairs, "$symbol"))),
    "$undefined": lambda pairs: _key(pairs, "$undefined", BsonType.UNDEFINED),
    "$minKey": lambda pairs: _key(pairs, "$minKey", BsonType.MIN_KEY),
    "$maxKey": lambda pairs: _key(pairs, "$maxKey", BsonType.MAX_KEY),
    "$dbPointer": _db_pointer,
}
_MAYBE_WRAPPERS: Final[dict[str, Callable[[list[tuple[str, Any]]], Bson | None]]] = {
    "$binary": _binary,
    "$type": _binary,
    "$regex": _regex,
    "$options": _regex,
}


def _object(pairs: list[tuple[str, Any]]) -> Any:
    """An object the way ``JsonReader`` reads it: an extended-JSON wrapper by its first name, else a document
    (a repeated name keeps its first place and its last value)."""
    if pairs:
        first = pairs[0][0]
        wrapper = _WRAPPERS.get(first)
        if wrapper is not None:
            return wrapper(pairs)
        maybe = _MAYBE_WRAPPERS.get(first)
        if maybe is not None:
            found = maybe(pairs)
            if found is not None:
                return found
    return dict(pairs)


def parse_document(text: str) -> dict[str, Any]:
    """``BsonDocument.parse``: the JSON Debezium writes for ``after``/``before`` (strict mode: ``{"$date": 0}``,
    ``{"$numberLong": "5"}``, bare ``NaN``), relaxed or canonical extended JSON, into BSON values (:class:`Bson`).
    Raises ``ValueError`` for text the Java reader refuses."""
    document = json.loads(text, object_pairs_hook=_object, parse_int=_integer)
    if not isinstance(document, dict):
        raise ValueError("readStartDocument can only be called when CurrentBSONType is DOCUMENT")
    return document


# --- writing (org.bson.json.JsonWriter, EXTENDED mode, indented) --------------------------------------------------


def _canonical_node(value: Any) -> Any:
    """The JSON tree the Java writer writes for ``value`` in canonical extended JSON."""
    kind = bson_type(value)
    if kind is BsonType.DOCUMENT:
        return {name: _canonical_node(item) for name, item in value.items()}
    if kind is BsonType.ARRAY:
        return [_canonical_node(item) for item in value]
    if kind is BsonType.STRING:
        return value
    if kind is BsonType.BOOLEAN:
        return Raw("true" if value else "false")
    if kind is BsonType.NULL:
        return Raw("null")
    if kind is BsonType.INT32:
        return {"$numberInt": str(value)}
    if kind is BsonType.DOUBLE:
        return {"$numberDouble": java_double(value)}
    data = value.value
    if kind is BsonType.INT64:
        return {"$numberLong": str(data)}
    if kind is BsonType.OBJECT_ID:
        return {"$oid": data}
    if kind is BsonType.DECIMAL128:
        return {"$numberDecimal": decimal128_text(data)}
    if kind is BsonType.BINARY:
        return {"$binary": {"base64": base64.b64encode(data[1]).decode("ascii"), "subType": f"{data[0]:02X}"}}
    if kind is BsonType.DATE_TIME:
        return {"$date": {"$numberLong": str(data)}}
    if kind is BsonType.TIMESTAMP:
        return {"$timestamp": {"t": Raw(str(data[0])), "i": Raw(str(data[1]))}}
    if kind is BsonType.REGULAR_EXPRESSION:
        return {"$regularExpression": {"pattern": data[0], "options": data[1]}}
    if kind is BsonType.JAVASCRIPT:
        return {"$code": data}
    if kind is BsonType.JAVASCRIPT_WITH_SCOPE:
        return {"$code": data[0], "$scope": _canonical_node(data[1])}
    if kind is BsonType.SYMBOL:
        return {"$symbol": data}
    if kind is BsonType.DB_POINTER:
        return {"$dbPointer": {"$ref": data[0], "$id": {"$oid": data[1]}}}
    if kind is BsonType.UNDEFINED:
        return {"$undefined": Raw("true")}
    return {"$minKey" if kind is BsonType.MIN_KEY else "$maxKey": Raw("1")}


def _write_indented(node: Any, indentation: str, out: list[str]) -> None:
    """``StrictCharacterStreamJsonWriter`` with ``indent``: each name and array element on its own line."""
    if isinstance(node, Raw):
        out.append(node)
    elif isinstance(node, str):
        out.append(value_to_json(node))
    elif isinstance(node, dict | list):
        items = list(node.items()) if isinstance(node, dict) else [(None, item) for item in node]
        opening, closing = ("{", "}") if isinstance(node, dict) else ("[", "]")
        if not items:
            out.append(opening + closing)
            return
        inner = indentation + "  "
        out.append(opening)
        for position, (name, item) in enumerate(items):
            out.append(",\n" + inner if position else "\n" + inner)
            if name is not None:
                out.append(value_to_json(name) + ": ")
            _write_indented(item, inner, out)
        out.append("\n" + indentation + closing)


def canonical_json(document: dict[str, Any]) -> str:
    """``document.toJson(JsonWriterSettings(EXTENDED, indent, "\\n"))``: canonical extended JSON, two spaces an
    indentation level, strings escaped as the Java writer escapes them."""
    out: list[str] = []
    _write_indented(_canonical_node(document), "", out)
    return "".join(out)


# --- MongoDataConverter ----------------------------------------------------------------------------------------

DOCUMENT_NAME_REGEX: Final = "io.debezium.mongodb.regex"
_REGEX_SCHEMA: Final = struct_schema(
    [("regex", OPTIONAL_STRING), ("options", OPTIONAL_STRING)], name=DOCUMENT_NAME_REGEX, optional=True
)
_STRING_ARRAY: Final = Schema(Type.ARRAY, optional=True, value_schema=OPTIONAL_STRING)
_EMPTY_STRUCT: Final = struct_schema([], optional=True)
_STRINGS: Final = frozenset(
    (BsonType.NULL, BsonType.STRING, BsonType.JAVASCRIPT, BsonType.OBJECT_ID, BsonType.DECIMAL128)
)
_SIMPLE_SCHEMAS: Final = {
    BsonType.DOUBLE: OPTIONAL_FLOAT64,
    BsonType.BINARY: OPTIONAL_BYTES,
    BsonType.INT32: OPTIONAL_INT32,
    BsonType.INT64: OPTIONAL_INT64,
    BsonType.DATE_TIME: OPTIONAL_TIMESTAMP_SCHEMA,
    BsonType.TIMESTAMP: OPTIONAL_TIMESTAMP_SCHEMA,
    BsonType.BOOLEAN: OPTIONAL_BOOLEAN,
    **{kind: OPTIONAL_STRING for kind in _STRINGS},
}


def _sub_schema(kind: BsonType) -> Schema:
    """``MongoDataConverter.getSchema`` (array encoding ``array``)."""
    simple = _SIMPLE_SCHEMAS.get(kind)
    if simple is not None:
        return simple
    if kind is BsonType.ARRAY:
        return _STRING_ARRAY
    if kind is BsonType.DOCUMENT:
        return _EMPTY_STRUCT
    raise DataError(f"The value type {kind.value} is not supported for sub schema")


class _ArrayShape:
    """``traverseArray``'s map: a shape per nested array, then the merged shape of the array's documents, then the
    list of its scalars, each with its type. Java's map drops a nested array equal to an earlier one; keeping it
    changes nothing, as it repeats what the first one did."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[Any, BsonType]] = []

    def __len__(self) -> int:
        return len(self.entries)


_INTEGERS: Final = frozenset((Type.INT8, Type.INT16, Type.INT32, Type.INT64))


class JavaLong(int):
    """An INT64 the converter made (a ``java.lang.Long``): Connect refuses it where an INT32 goes, and a plain
    ``int`` (an ``Integer``) where an INT64 goes, which :func:`_check_java_ints` checks."""

    __slots__ = ()


def _check_java_ints(schema: Schema, value: Any) -> None:
    """The part of ``ConnectSchema.validateValue`` Python's ``int`` cannot see: ``Integer`` versus ``Long``."""
    if value is None or isinstance(value, bool):
        return
    if schema.type is Type.ARRAY and isinstance(value, list) and schema.value_schema is not None:
        for item in value:
            _check_java_ints(schema.value_schema, item)
    elif (
        schema.type in _INTEGERS
        and isinstance(value, int)
        and isinstance(value, JavaLong) != (schema.type is Type.INT64)
    ):
        found = "java.lang.Long" if isinstance(value, JavaLong) else "java.lang.Integer"
        raise DataError(f"Invalid Java object for schema with type {schema.type.java_name}: class {found}")


def _get_object(value: Any, kind: BsonType) -> Any:
    """``MongoDataConverter.getObject``: a BSON scalar as Connect's value (``None`` for the unsupported ones)."""
    if kind in (BsonType.STRING, BsonType.DOUBLE, BsonType.INT32, BsonType.BOOLEAN):
        return value
    if not isinstance(value, Bson):
        return None
    data = value.value
    if kind is BsonType.INT64:
        return JavaLong(data)
    if kind in (BsonType.OBJECT_ID, BsonType.JAVASCRIPT):
        return data
    if kind is BsonType.DECIMAL128:
        return decimal128_text(data)
    if kind is BsonType.BINARY:
        return bytes(data[1])
    if kind is BsonType.DATE_TIME:
        return _date(data)
    if kind is BsonType.TIMESTAMP:
        seconds = data[0] - 2**32 if data[0] >= 2**31 else data[0]  # BsonTimestamp.getTime() is an int
        return _date(1000 * seconds)
    return None


def _date(millis: int) -> dt.datetime:
    try:
        return EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError:
        raise DataError(f"date {millis} ms is beyond the years 1 to 9999") from None


def _field_schema(schema: Schema | None, name: str) -> Schema:
    found = None if schema is None else schema.field(name)
    if found is None:
        raise DataError(f"Can't find field: {name} in schema {schema}")
    return found.schema


class MongoDataConverter:
    """Debezium's ``MongoDataConverter`` with array encoding ``array`` and field names as they are: a BSON document
    (:func:`parse_document`) → a schema map (:meth:`parse`) → fields of a struct schema (:meth:`build_schema`) →
    the struct's values (:meth:`build_struct`). Documents in an array share one merged struct schema; an array
    mixing element types, a regular expression or JavaScript with scope inside an array, or a JavaScript with
    scope anywhere, fails as in Debezium; MinKey, MaxKey, symbols and DBPointers fail when put (Debezium
    builds no field for them), undefined values are left out."""

    def parse(self, document: Mapping[str, Any]) -> dict[str, tuple[Any, BsonType]]:
        """``parseBsonDocument``: per field, its shape (a nested schema map, an array's :class:`_ArrayShape`, or
        the value) and its type."""
        shapes: dict[str, tuple[Any, BsonType]] = {}
        for name, value in document.items():
            kind = bson_type(value)
            if kind is BsonType.ARRAY:
                shapes[name] = (self._traverse_array(value), kind)
            elif kind is BsonType.DOCUMENT:
                shapes[name] = (self.parse(value), kind)
            else:
                shapes[name] = (value, kind)
        return shapes

    def _traverse_array(self, array: Sequence[Any]) -> _ArrayShape:
        shape = _ArrayShape()
        merged: dict[str, tuple[Any, BsonType]] = {}
        field_schemas: dict[str, set[Schema]] = {}
        scalars: list[Any] = []
        for value in array:
            kind = bson_type(value)
            if kind is BsonType.ARRAY:
                shape.entries.append((self._traverse_array(value), kind))
            elif kind is BsonType.DOCUMENT:
                self._merge(merged, self.parse(value), field_schemas)
            else:
                scalars.append(value)
        if merged:
            shape.entries.append((merged, BsonType.DOCUMENT))
        if scalars:
            kinds = list(dict.fromkeys(bson_type(value) for value in scalars))
            shape.entries.append((scalars, kinds[0] if len(kinds) == 1 else BsonType.ARRAY))
        return shape

    @staticmethod
    def _merge(
        base: dict[str, tuple[Any, BsonType]],
        document: dict[str, tuple[Any, BsonType]],
        field_schemas: dict[str, set[Schema]],
    ) -> None:
        """``mergeSchemas``: the last document's shape of each field wins; a field whose schema differs between
        the documents fails unless it is a non-empty document."""
        for name, (shape, kind) in document.items():
            seen = field_schemas.setdefault(name, set())
            seen.add(_sub_schema(kind))
            if not (kind is BsonType.DOCUMENT and shape) and len(seen) > 1:
                raise DataError(f"Array elements with different Bson types are not supported: {name}")
            base[name] = (shape, kind)

    def build_schema(self, shapes: Mapping[str, tuple[Any, BsonType]], builder: _Builder) -> None:
        """``buildSchema``: a field per entry the builder does not have yet."""
        for name, (shape, kind) in shapes.items():
            self._schema(name, shape, kind, builder)

    def _schema(self, name: str, shape: Any, kind: BsonType, builder: _Builder) -> None:
        if builder.has(name):
            return
        simple = _SIMPLE_SCHEMAS.get(kind)
        if simple is not None:
            builder.add(name, simple)
        elif kind is BsonType.JAVASCRIPT_WITH_SCOPE:
            raise DataError(
                f"JavaScript with scope in field {name} is not supported (a ClassCastException in Debezium)"
            )
        elif kind is BsonType.REGULAR_EXPRESSION:
            builder.add(name, _REGEX_SCHEMA)
        elif kind is BsonType.DOCUMENT:
            if not shape:
                builder.add(name, _EMPTY_STRUCT)
            else:
                document = _Builder(f"{_jstr(builder.name)}.{name}", optional=True)
                for child, (child_shape, child_kind) in shape.items():
                    self._schema(child, child_shape, child_kind, document)
                builder.add(name, document.build())
        elif kind is BsonType.ARRAY and not shape:
            builder.add(name, _STRING_ARRAY)
        elif kind is BsonType.ARRAY:
            for element, _ in shape.entries:
                if isinstance(element, _ArrayShape | dict):
                    nested = _Builder(f"{_jstr(builder.name)}.{name}", optional=True)
                    self._nested_array(name, element, builder, nested, nested=False)
                else:
                    self._simple_array(name, element, builder, nested=False)

    def _nested_array(self, name: str, shape: Any, builder: _Builder, elements: _Builder, *, nested: bool) -> None:
        """``handleNestedArray``: arrays of documents and of arrays."""
        pairs: list[tuple[Any, Any]] = shape.entries if isinstance(shape, _ArrayShape) else list(shape.items())
        for key, value in pairs:
            if isinstance(key, list):
                self._simple_array(name, key, builder, nested=True)
            elif isinstance(key, _ArrayShape | dict):
                if value is BsonType.ARRAY and not builder.has(name):
                    raise DataError(f"Arrays nested three deep in field {name} are not supported (Debezium fails)")
                if value is BsonType.DOCUMENT:
                    self._nested_array(name, key, builder, _Builder(None, optional=True), nested=True)
            else:
                child_shape, child_kind = value  # a document's field: (shape, type)
                _sub_schema(child_kind)
                self._schema(key, child_shape, child_kind, elements)
        if elements.fields and not builder.has(name):
            items = Schema(Type.ARRAY, optional=True, value_schema=elements.build())
            builder.add(name, Schema(Type.ARRAY, optional=True, value_schema=items) if nested else items)

    @staticmethod
    def _simple_array(name: str, values: Sequence[Any], builder: _Builder, *, nested: bool) -> None:
        """``handleSimpleArray``: an array of scalars of one schema."""
        if builder.has(name):
            return
        if len({_sub_schema(bson_type(value)) for value in values}) > 1:
            raise DataError(f"Array elements with different Bson types are not supported: {name}")
        items = Schema(Type.ARRAY, optional=True, value_schema=_sub_schema(bson_type(values[0])))
        builder.add(name, Schema(Type.ARRAY, optional=True, value_schema=items) if nested else items)

    def build_struct(self, name: str, value: Any, schema: Schema, target: Struct) -> None:
        """``buildStruct``: put field ``name`` of a document into ``target`` (of ``schema``)."""
        kind = bson_type(value)
        converted: Any
        if kind is BsonType.REGULAR_EXPRESSION:
            converted = _new_struct(_field_schema(schema, name))
            converted.put("regex", value.value[0])
            converted.put("options", value.value[1])
        elif kind is BsonType.ARRAY:
            if not value:
                converted = []
            else:
                field_schema = _field_schema(schema, name)
                array_schema = field_schema.value_schema if field_schema.type is Type.ARRAY else field_schema
                converted = self._build_array(value, array_schema)
        elif kind is BsonType.DOCUMENT:
            document_schema = _field_schema(schema, name)
            converted = _new_struct(document_schema)
            for child, item in value.items():
                self.build_struct(child, item, document_schema, converted)
        else:
            converted = _get_object(value, kind)
        if kind is not BsonType.UNDEFINED:
            target.put(name, converted)
            _check_java_ints(_field_schema(target.schema, name), converted)

    def _build_array(self, array: Sequence[Any], schema: Schema | None) -> list[Any]:
        values: list[Any] = []
        for value in array:
            kind = bson_type(value)
            if kind is BsonType.ARRAY:
                inner: list[Any] = []
                for item in value:
                    item_kind = bson_type(item)
                    if item_kind is BsonType.ARRAY:
                        inner.append(self._build_array(item, schema))
                    elif item_kind is BsonType.DOCUMENT:
                        inner.append(self._document(item, None if schema is None else schema.value_schema))
                    else:
                        inner.append(_get_object(item, item_kind))
                if inner:
                    values.append(inner)
            elif kind is BsonType.DOCUMENT:
                values.append(self._document(value, schema))
            else:
                values.append(_get_object(value, kind))
        return values

    def _document(self, document: Mapping[str, Any], schema: Schema | None) -> Struct:
        built = _new_struct(schema)
        assert schema is not None
        for name, item in document.items():
            self.build_struct(name, item, schema, built)
        return built


# =============================================================================================================
# MongoEventRouter
# =============================================================================================================

MONGO_EVENT_ROUTER: Final = "io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter"
BY_LOGICAL_TABLE_ROUTER: Final = "io.debezium.transforms.ByLogicalTableRouter"
HEADER_TO_VALUE: Final = "io.debezium.transforms.HeaderToValue"

DEBEZIUM_TIMESTAMP: Final = Schema(Type.INT64, name="io.debezium.time.Timestamp", version=1)

_COLLECTION_TO_TABLE: Final = {
    "collection.field.event.id": "table.field.event.id",
    "collection.field.event.key": "table.field.event.key",
    "collection.field.event.type": "table.field.event.type",
    "collection.field.event.timestamp": "table.field.event.timestamp",
    "collection.field.event.payload": "table.field.event.payload",
    "collection.fields.additional.placement": "table.fields.additional.placement",
    "collection.field.additional.missing": "table.field.additional.missing",
    "collection.field.event.schema.version": "table.field.event.schema.version",
    "route.by.field": "route.by.field",
    "route.topic.regex": "route.topic.regex",
    "route.topic.replacement": "route.topic.replacement",
    "route.tombstone.on.empty.payload": "route.tombstone.on.empty.payload",
    "table.op.invalid.behavior": "table.op.invalid.behavior",
    "tracing.span.context.field": "tracing.span.context.field",
    "tracing.operation.name": "tracing.operation.name",
    "tracing.with.context.field.only": "tracing.with.context.field.only",
}
"""``MongoEventRouter.convertConfigMap``: the options it hands its ``EventRouterDelegate``, by the delegate's names
(every other option is dropped, ``table.*`` ones included, except ``table.op.invalid.behavior``, the name both
definitions share)."""

_PLACEMENTS: Final = ("header", "envelope", "partition")


@dataclass(frozen=True, slots=True)
class _AdditionalField:
    placement: str | None
    """``header``, ``envelope``, ``partition``, or ``None`` for a word Debezium does not know (it fails on it)."""
    field: str
    alias: str


def _additional_fields(value: str | None) -> list[_AdditionalField]:
    """``parseAdditionalFieldsConfig``: ``field:placement[:alias]`` items."""
    found = []
    for item in _java_split(value, ",") if value is not None else []:
        parts = _java_split(item, ":")
        word = _java_trim(parts[1]).lower()
        name = _java_trim(parts[0])
        found.append(
            _AdditionalField(
                word if word in _PLACEMENTS else None, name, _java_trim(parts[2]) if len(parts) == 3 else name
            )
        )
    return found


def _check_event_router(config: Mapping[str, str]) -> None:
    """``EventRouterDelegate.configure``'s ``smtManager.validate`` over ``EventRouterConfigDefinition``."""
    placement = config.get("table.fields.additional.placement")
    if placement is not None:
        for item in _java_split(placement, ","):
            if len(_java_split(item, ":")) not in (2, 3):
                raise invalid(
                    "table.fields.additional.placement",
                    placement,
                    f"A comma-separated list of valid String pairs or trios is expected but got: {placement}",
                )
    _check_choice(
        "table.field.additional.missing", config.get("table.field.additional.missing", "error"), ("error", "ignore")
    )
    _check_regex("route.topic.regex", config.get("route.topic.regex"))
    _check_boolean("route.tombstone.on.empty.payload", config.get("route.tombstone.on.empty.payload"))
    _check_choice(
        "table.op.invalid.behavior", config.get("table.op.invalid.behavior", "warn"), ("warn", "error", "fatal")
    )


class MongoEventRouter:
    """``MongoEventRouter`` with its ``EventRouterDelegate`` (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._timestamp_field = options.get("collection.field.event.timestamp")
        self._expand_payload = _lenient_boolean(options.get("collection.expand.json.payload"), False)
        self._payload_field = options.get("collection.field.event.payload", "payload")
        self._converter = MongoDataConverter()

        config = {table: options[name] for name, table in _COLLECTION_TO_TABLE.items() if name in options}
        config.setdefault("table.field.event.id", "_id")
        _check_event_router(config)
        self._fatal_updates = _java_trim(config.get("table.op.invalid.behavior", "warn")).lower() == "fatal"
        self._event_id = config["table.field.event.id"]
        self._event_key = config.get("table.field.event.key", "aggregateid")
        self._event_timestamp = config.get("table.field.event.timestamp")
        self._payload = config.get("table.field.event.payload", "payload")
        self._route_by = config.get("route.by.field", "aggregatetype")
        self._schema_version = config.get("table.field.event.schema.version")
        self._tombstone_on_empty = _lenient_boolean(config.get("route.tombstone.on.empty.payload"), False)
        regex = _java_trim(config.get("route.topic.regex", "(?<routedByValue>.*)"))
        try:
            self._route_regex = java_regex(regex)
        except re.error as exc:
            raise invalid("regex", regex, f"Invalid regex: {exc}") from None
        self._route_replacement = _java_trim(config.get("route.topic.replacement", "outbox.event.${routedByValue}"))
        self._additional = _additional_fields(config.get("table.fields.additional.placement"))
        self._ignore_missing = _java_trim(config.get("table.field.additional.missing", "error")).lower() == "ignore"
        self._only_headers = not any(f.placement == "envelope" for f in self._additional)
        self._schemas_by_payload: _Lru[Schema, Schema] = _Lru(10_000)
        self._schemas_by_version: dict[int | None, Schema] = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value is None:
            return None
        if not _is_envelope(record.value_schema):
            return record
        envelope = _require_struct(record.value, "Detect Debezium Operation")
        op = _typed(envelope, "op", Type.STRING)
        if op is None:
            raise DataError("The change event has no op")
        if op == "d":
            return None
        if op == "u":
            if self._fatal_updates:
                raise DataError(f"Unexpected update message received {record.key}, fail.")
            return None
        try:
            expanded = self._expand_after(record)
        except ValueError:  # Debezium logs it and carries on with the record as it was, which then fails below
            expanded = record
        return self._route(record, envelope, expanded)

    # --- MongoEventRouter.expandAfterField -----------------------------------------------------------------------

    def _expand_after(self, record: ConnectRecord) -> ConnectRecord:
        schema = record.value_schema
        assert schema is not None
        after_field = schema.field("after")
        if after_field is None:
            raise DataError("Unknown field: after")
        envelope = _require_struct(record.value, "Detect Debezium Operation")
        after = envelope.get("after")
        if not isinstance(after, str):
            raise DataError(f"Unable to expand non-String after field: {type(after).__name__}")
        document = parse_document(after)
        after_schema = self._after_schema(after_field.schema.name, document)
        after_struct = self._after_struct(after_schema, document)
        value_schema = struct_schema(
            [(f.name, f.schema) for f in schema.fields if f.name != "after"] + [("after", after_schema)],
            name=schema.name,
        )
        value = Struct(value_schema)
        for f in schema.fields:
            if f.name != "after":
                value.put(f.name, envelope.get(f.name))
        value.put("after", after_struct)
        return record.new_record(value_schema=value_schema, value=value)

    def _stringified(self, name: str, value: Any) -> bool:
        return name == self._payload_field and not self._expand_payload and isinstance(value, dict)

    def _after_schema(self, name: str | None, document: Mapping[str, Any]) -> Schema:
        shapes = self._converter.parse(document)
        builder = _Builder(name)
        for field, value in document.items():
            if field == self._timestamp_field:
                builder.add(field, DEBEZIUM_TIMESTAMP)
            elif self._stringified(field, value):
                builder.add(field, OPTIONAL_STRING)
        self._converter.build_schema(shapes, builder)
        return builder.build()

    def _after_struct(self, schema: Schema, document: Mapping[str, Any]) -> Struct:
        built = Struct(schema)
        for field, value in document.items():
            if field == self._timestamp_field:
                if bson_type(value) is not BsonType.INT64:
                    raise DataError(
                        f"Value expected to be of type INT64 is of unexpected type {bson_type(value).value}"
                    )
                built.put(field, JavaLong(value.value))
            elif self._stringified(field, value):
                built.put(field, canonical_json(value))
            else:
                self._converter.build_struct(field, value, schema, built)
        return built

    # --- EventRouterDelegate.apply -----------------------------------------------------------------------------------

    def _route(self, original: ConnectRecord, envelope: Struct, record: ConnectRecord) -> ConnectRecord:
        after_schema, after = self._after_of(record)
        event = _require_struct(after, "Read Outbox Event")
        payload_field = after_schema.field(self._payload)
        if payload_field is None:
            raise DataError(f"Unable to find payload field {self._payload} in event")
        payload_schema = payload_field.schema
        timestamp = self._timestamp(envelope, event)
        event_id = event.get(self._event_id)
        payload = event.get(self._payload)
        headers = [*record.headers, Header("id", _field_schema(after_schema, self._event_id), event_id)]

        value_schema: Schema | None = None
        value: Struct | None = None
        if not self._only_headers:
            if self._schema_version is None:
                value_schema = self._value_schema(
                    payload_schema, after_schema, _typed(event, self._route_by, Type.STRING)
                )
            else:
                value_schema = self._versioned_schema(
                    payload_schema,
                    after_schema,
                    _typed(event, self._schema_version, Type.INT32),
                    _typed(event, self._route_by, Type.STRING),
                )
            value = Struct(value_schema).put("payload", payload)

        partition: int | None = None
        for extra in self._additional:
            if self._ignore_missing and not event.has(extra.field):
                continue
            if extra.placement == "envelope":
                assert value is not None
                value.put(extra.alias, event.get(extra.field))
            elif extra.placement == "header":
                found = event.get(extra.field)
                headers.append(Header(extra.alias, _field_schema(after_schema, extra.field), found))
            elif extra.placement == "partition":
                partition = _typed(event, extra.field, Type.INT32)
            else:
                raise DataError(f"Unknown placement for additional field {extra.field}")

        deleted = payload is None or (isinstance(payload, str) and not _java_trim(payload))
        out_schema: Schema | None
        out_value: Any
        if deleted and self._tombstone_on_empty:
            out_schema, out_value = None, None
        elif self._only_headers:
            out_schema, out_value = payload_schema, payload
        else:
            out_schema, out_value = value_schema, value

        key = event.get(self._event_key)
        topic = _typed(event, self._route_by, Type.STRING)
        if topic is None:
            raise DataError(f"The routing field {self._route_by} is null")
        if self._route_regex.fullmatch(topic):
            topic = _replace_first(self._route_regex, self._route_replacement, topic)
        return original.new_record(
            topic=topic,
            partition=partition,
            key_schema=_field_schema(after_schema, self._event_key),
            key=key,
            value_schema=out_schema,
            value=out_value,
            timestamp=timestamp,
            headers=tuple(headers),
        )

    @staticmethod
    def _after_of(record: ConnectRecord) -> tuple[Schema, Any]:
        """``ExtractField.Value`` of ``after``."""
        schema = record.value_schema
        assert schema is not None
        envelope = _require_struct(record.value, "field extraction")
        found = schema.field("after")
        if found is None:
            raise DataError("Unknown field: after")
        return found.schema, envelope.get("after")

    def _timestamp(self, envelope: Struct, event: Struct) -> int | None:
        """``getEventTimestampMs``: the configured field's milliseconds, else the event's ``ts_ms``. The field, when
        the document has it, is always the ``io.debezium.time.Timestamp`` the expansion made of a NumberLong."""
        field = "ts_ms" if self._event_timestamp is None else self._event_timestamp
        if field != "ts_ms" and not event.has(field):
            raise DataError(f"Unable to find timestamp field {field} in event")
        millis: int | None = _typed(envelope if self._event_timestamp is None else event, field, Type.INT64)
        return millis

    def _schema_builder(self, payload_schema: Schema, event_schema: Schema, topic: str | None) -> _Builder:
        builder = _Builder(_routed_schema_name(event_schema.name, topic))
        builder.add("payload", payload_schema)
        for extra in self._additional:
            if extra.placement == "envelope":
                found = event_schema.field(extra.field)
                if found is None:
                    if not self._ignore_missing:
                        raise DataError(f"Unable to find field {extra.field} in event")
                    continue
                builder.add(extra.alias, found.schema)
        return builder

    def _value_schema(self, payload_schema: Schema, event_schema: Schema, topic: str | None) -> Schema:
        cached = self._schemas_by_payload.get(payload_schema)
        if cached is None:
            cached = self._schema_builder(payload_schema, event_schema, topic).build()
            self._schemas_by_payload.put(payload_schema, cached)
        return cached

    def _versioned_schema(
        self, payload_schema: Schema, event_schema: Schema, version: int | None, topic: str | None
    ) -> Schema:
        if version not in self._schemas_by_version:
            builder = self._schema_builder(payload_schema, event_schema, topic)
            builder.version = version
            self._schemas_by_version[version] = builder.build()
        return self._schemas_by_version[version]


def _routed_schema_name(name: str | None, topic: str | None) -> str:
    """``getSchemaName``: the routed topic before the event schema's last name part."""
    if name is None:
        return _jstr(topic)
    head, dot, tail = name.rpartition(".")
    if not dot:
        return f"{_jstr(topic)}.{name}"
    return f"{head}.{_jstr(topic)}.{tail}"


# =============================================================================================================
# Schema name adjustment (SchemaNameAdjuster)
# =============================================================================================================

_ADJUSTMENT_MODES: Final = ("none", "avro", "avro_unicode")


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _ascii_letter(unit: int) -> bool:
    return ord("a") <= unit <= ord("z") or ord("A") <= unit <= ord("Z")


def adjust_schema_name(mode: str, name: str) -> str:
    """``SchemaNameAdjuster`` of ``schema.name.adjustment.mode``: ``avro`` replaces each character an Avro name
    cannot have by ``_`` (a leading digit keeps itself after it), ``avro_unicode`` by ``_uXXXX`` (``_`` included).
    Two names may get the same replacement: Debezium's adjusters make a fresh conflict tracker for every name
    (``handler.firstTimeOnly()`` inside the adjusting lambda), so they never detect a conflict."""
    if mode == "none" or not name:
        return name
    unicode = mode == "avro_unicode"

    def first_ok(unit: int) -> bool:
        return _ascii_letter(unit) or (not unicode and unit == ord("_"))

    def replace(unit: int) -> str:
        if not unicode:
            return "_"
        digits = f"{unit:x}"
        return "_u" + ("00" + digits if len(digits) <= 2 else digits)

    units = _utf16_units(name)
    out: list[str] = []
    changed = False
    for position, unit in enumerate(units):
        if first_ok(unit) or (position and (unit == ord(".") or ord("0") <= unit <= ord("9"))):
            out.append(chr(unit))
            continue
        out.append(replace(unit))
        changed = True
        if not position and not unicode and not 0xD800 <= unit <= 0xDFFF and unicodedata.category(chr(unit)) == "Nd":
            out.append(chr(unit))
    return "".join(out) if changed else name


# =============================================================================================================
# ByLogicalTableRouter
# =============================================================================================================


class ByLogicalTableRouter:
    """``ByLogicalTableRouter`` (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        topic_regex = options.get("topic.regex")
        topic_replacement = options.get("topic.replacement")
        key_field_regex = options.get("key.field.regex")
        key_field_replacement = options.get("key.field.replacement")
        _check_required("topic.regex", topic_regex)
        _check_regex("topic.regex", topic_regex)
        _check_required("topic.replacement", topic_replacement)
        _check_boolean("key.enforce.uniqueness", options.get("key.enforce.uniqueness"))
        _check_regex("key.field.regex", key_field_regex)
        if _java_trim(key_field_regex or "") and not _java_trim(key_field_replacement or ""):
            raise ConnectConfigError("key.field.replacement must be non-empty if key.field.regex is set.")
        mode = _check_choice(
            "schema.name.adjustment.mode", options.get("schema.name.adjustment.mode", "none"), _ADJUSTMENT_MODES
        )
        _check_int("logical.table.cache.size", options.get("logical.table.cache.size"))
        assert topic_regex is not None and topic_replacement is not None

        self._topic_regex = java_regex(topic_regex)
        self._topic_replacement = topic_replacement
        self._key_field_regex = java_regex(key_field_regex) if key_field_regex and _java_trim(key_field_regex) else None
        self._key_field_replacement = key_field_replacement or ""
        self._key_field_name = options.get("key.field.name", "__dbz__physicalTableIdentifier")
        self._enforce_uniqueness = _lenient_boolean(options.get("key.enforce.uniqueness"), True)
        self._mode = mode
        size = int(options.get("logical.table.cache.size", "16"))
        self._key_schemas: _Lru[Schema, Schema] = _Lru(size)
        self._envelope_schemas: _Lru[Schema, Schema] = _Lru(size)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        topic = record.topic
        if not self._topic_regex.fullmatch(topic):
            return record
        new_topic = _replace_first(self._topic_regex, self._topic_replacement, topic)
        if not new_topic:
            return record
        key_schema: Schema | None = None
        key: Struct | None = None
        if record.key is not None:
            old_key = _require_struct(record.key, "Updating schema")
            key_schema = self._key_schema(old_key.schema, new_topic)
            key = self._key(key_schema, old_key, topic)
        if record.value is None or not _is_envelope(record.value_schema):
            return record.new_record(topic=new_topic, key_schema=key_schema, key=key)
        envelope = _require_struct(record.value, "Updating schema")
        envelope_schema = self._envelope_schema(envelope.schema, new_topic)
        return record.new_record(
            topic=new_topic,
            key_schema=key_schema,
            key=key,
            value_schema=envelope_schema,
            value=self._envelope(envelope_schema, envelope),
        )

    @staticmethod
    def _copy(source: Schema, *, fields: bool) -> _Builder:
        """``copySchemaExcludingName``: version, doc, parameters, optionality and (``fields``) the fields."""
        builder = _Builder(None, optional=source.optional)
        builder.version = source.version
        builder.doc = source.doc
        builder.parameters = source.params or None
        if fields:
            if source.type is not Type.STRUCT:
                raise DataError("Cannot list fields on non-struct type")
            for f in source.fields:
                builder.add(f.name, f.schema)
        return builder

    def _key_schema(self, old: Schema, topic: str) -> Schema:
        cached = self._key_schemas.get(old)
        if cached is None:
            builder = self._copy(old, fields=True)
            builder.name = adjust_schema_name(self._mode, topic + ".Key")
            if self._enforce_uniqueness:
                builder.add(self._key_field_name, STRING)
            cached = builder.build()
            self._key_schemas.put(old, cached)
        return cached

    def _key(self, schema: Schema, old: Struct, old_topic: str) -> Struct:
        key = Struct(schema)
        for f in old.schema.fields:
            key.put(f.name, old.get_without_default(f.name))
        if self._enforce_uniqueness:
            identifier = old_topic
            if self._key_field_regex is not None and self._key_field_regex.fullmatch(old_topic):
                identifier = _replace_first(self._key_field_regex, self._key_field_replacement, old_topic)
            key.put(self._key_field_name, identifier)
        return key

    def _envelope_schema(self, old: Schema, topic: str) -> Schema:
        cached = self._envelope_schemas.get(old)
        if cached is None:
            before = old.field("before")
            if before is None:
                raise DataError("The envelope has no before field")
            value_builder = self._copy(before.schema, fields=True)
            value_builder.name = adjust_schema_name(self._mode, topic + ".Value")
            value_schema = value_builder.build()
            builder = self._copy(old, fields=False)
            for f in old.fields:
                builder.add(f.name, value_schema if f.name in ("before", "after") else f.schema)
            builder.name = adjust_schema_name(self._mode, topic + ".Envelope")
            cached = builder.build()
            self._envelope_schemas.put(old, cached)
        return cached

    @staticmethod
    def _envelope(schema: Schema, old: Struct) -> Struct:
        envelope = Struct(schema)
        value_schema = _field_schema(schema, "before")
        for f in old.schema.fields:
            value = old.get(f.name)
            if f.name in ("before", "after") and value is not None:
                row = _require_struct(value, "Updating schema")
                value = Struct(value_schema)
                for column in row.schema.fields:
                    value.put(column.name, row.get_without_default(column.name))
            envelope.put(f.name, value)
        return envelope


# =============================================================================================================
# HeaderToValue (with ConnectRecordUtil.makeNewSchema/makeUpdatedValue)
# =============================================================================================================

_ROOT: Final = "payload"


@dataclass(frozen=True, slots=True)
class _NewEntry:
    name: str
    schema: Schema | None
    value: Any


def _contained(name: str, nested: Sequence[str]) -> bool:
    """``isContainedIn``: some dotted name contains ``name.`` (anywhere, as Debezium checks)."""
    return any(name + "." in candidate for candidate in nested)


def _entry_field(destination: str, current: str, level: int) -> str | None:
    """``getFieldName``: the field an entry adds to the struct at ``current``/``level``, if any."""
    names = _java_split(destination, ".")
    if len(names) == 1 and current == _ROOT:
        return names[0]
    if len(names) == level + 1 and names[0 if level == 0 else level - 1] == current:
        return names[level]
    return None


def _new_parents(current: str, schema: Schema, nested: Sequence[str], level: int) -> list[str]:
    """``getNewParentFieldsAtLevel``: struct fields a dotted name needs that the schema does not have."""
    parents: list[str] = []
    for candidate in nested:
        parts = _java_split(candidate, ".")
        here = (level == 0 and current == _ROOT) or (0 < level < len(parts) and parts[level - 1] == current)
        if here and level < len(parts) - 1:
            name = parts[level]
            if schema.field(name) is None and name not in parents:
                parents.append(name)
    return parents


def _parent_child(destination: str, parent: str, current: str, level: int) -> str | None:
    """``getNestedFieldNameForParent``: the field a dotted name puts in a new top-level parent struct. Below the
    top level Debezium compares the dotted path so far with the parent's (undotted) name, which never matches:
    a new parent there stays an empty struct."""
    parts = _java_split(destination, ".")
    if level == 0 and current == _ROOT and len(parts) > 1 and parts[0] == parent:
        return parts[1]
    return None


def _validate_nested(schema: Schema, nested: Sequence[str]) -> None:
    for candidate in nested:
        current = schema
        for part in _java_split(candidate, ".")[:-1]:
            found = current.field(part)
            if found is None:
                break
            if found.schema.type.primitive:
                raise DataError(
                    f"Field '{part}' is a primitive type, not a struct. Cannot add nested field '{candidate}'."
                )
            current = found.schema


def _new_schema(current: str, old: Schema, entries: Sequence[_NewEntry], nested: Sequence[str], level: int) -> Schema:
    """``buildNewSchema``: ``old`` with the entries' fields, at every level their dotted names reach."""
    if old.type.primitive:
        return old
    builder = _Builder(old.name)
    builder.version = old.version
    builder.doc = old.doc
    builder.parameters = old.params or None
    if old.type is not Type.STRUCT:
        raise DataError("Cannot list fields on non-struct type")
    for f in old.fields:
        builder.add(
            f.name,
            _new_schema(f.name, f.schema, entries, nested, level + 1) if _contained(f.name, nested) else f.schema,
        )
    for entry in entries:
        name = _entry_field(entry.name, current, level)
        if name is not None and not builder.has(name):
            builder.add(name, entry.schema)
    for parent in _new_parents(current, old, nested, level):
        children = _Builder(None, optional=True)
        for entry in entries:
            child = _parent_child(entry.name, parent, current, level)
            if child is not None:
                children.add(child, entry.schema)
        builder.add(parent, children.build())
    return builder.build()


def _updated_value(
    current: str, old: Struct, entries: Sequence[_NewEntry], schema: Schema, nested: Sequence[str], level: int
) -> Struct:
    """``buildUpdatedValue``: ``old``'s non-null fields (defaults applied) and the entries' values."""
    updated = Struct(schema)
    for f in old.schema.fields:
        value = old.get(f.name)
        if value is None:
            continue
        if _contained(f.name, nested):
            inner = _require_struct(value, "Nested field")
            value = _updated_value(f.name, inner, entries, _field_schema(schema, f.name), nested, level + 1)
        updated.put(f.name, value)
    for entry in entries:
        name = _entry_field(entry.name, current, level)
        if name is not None:
            updated.put(name, entry.value)
    for parent in _new_parents(current, old.schema, nested, level):
        parent_field = schema.field(parent)
        if parent_field is not None:
            children = Struct(parent_field.schema)
            for entry in entries:
                child = _parent_child(entry.name, parent, current, level)
                if child is not None:
                    children.put(child, entry.value)
            updated.put(parent, children)
    return updated


class HeaderToValue:
    """``HeaderToValue`` (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        for name in ("fields", "headers"):
            value = options.get(name)
            _check_required(name, value)
            items = _config_list(value)
            if any(" " in item for item in items):
                raise invalid(name, items, "Element(s) containing space not permitted")
            if "" in items:
                raise invalid(name, items, "Empty string element(s) not permitted")
        operation = options.get("operation")
        _check_required("operation", operation)
        self._move = _check_choice("operation", operation, ("move", "copy")) == "move"
        self._fields = _config_list(options.get("fields"))
        self._headers = _config_list(options.get("headers"))
        if len(self._fields) != len(self._headers):
            raise ConnectConfigError("'fields' config must have the same number of elements as 'headers' config.")
        self._schemas: _Lru[Schema, Schema] = _Lru(64)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value is None:
            return record
        value = _require_struct(record.value, "Header field insertion")
        entries = [
            _NewEntry(self._fields[self._headers.index(h.key)], h.schema, h.value)
            for h in record.headers
            if h.key in self._headers
        ]
        if not entries:
            return record
        nested = [entry.name for entry in entries if "." in entry.name]
        schema = self._schemas.get(value.schema)
        if schema is None:
            _validate_nested(value.schema, nested)
            schema = _new_schema(_ROOT, value.schema, entries, nested, 0)
            self._schemas.put(value.schema, schema)
        updated = _updated_value(_ROOT, value, entries, schema, nested, 0)
        headers = record.headers
        if self._move:
            headers = tuple(h for h in headers if h.key not in self._headers)
        return record.new_record(value_schema=schema, value=updated, headers=headers)


TRANSFORMS: Final[dict[str, TransformFactory]] = {
    MONGO_EVENT_ROUTER: MongoEventRouter,
    BY_LOGICAL_TABLE_ROUTER: ByLogicalTableRouter,
    HEADER_TO_VALUE: HeaderToValue,
}
