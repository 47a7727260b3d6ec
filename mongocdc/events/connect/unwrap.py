"""Debezium 3.6.1's ``io.debezium.connector.mongodb.transforms.ExtractNewDocumentState``, the MongoDB "unwrap" SMT.

A MongoDB change event carries its documents as JSON text (``after``, ``before``,
``updateDescription.updatedFields``). This transform replaces the envelope with the document itself, parsed into
a Connect struct with a schema derived from the document, and replaces the key ``{"id": "<JSON of _id>"}`` with a
struct holding the typed ``_id`` as ``id``. It is written from Debezium's source (``ExtractNewDocumentState``,
``MongoDataConverter``, ``AbstractExtractNewRecordState``, ``DefaultDeleteHandlingStrategy``, ``FieldNameSelector``,
``SchemaNameAdjuster``) and Kafka Connect's ``ExtractField`` and ``Flatten``, and follows them step by step,
oddities included, since what comes out is what a sink has been built against:

* The text is read as the Java driver's ``BsonDocument.parse`` reads it (:func:`parse_document`): a bare integer
  is an Int32 when it fits 32 bits, else an Int64; a number with a fraction or exponent, ``NaN`` and
  ``Infinity`` a double; the extended-JSON objects (``$oid``, ``$numberLong``, ``$date``, ``$binary`` old and new,
  ``$regex``/``$regularExpression``, ``$timestamp``, ``$code`` with or without ``$scope``, …) their BSON values,
  with the driver's fallback to a plain document where it has one.
* ``MongoDataConverter`` first turns a document into a "schema map" whose keys are Java objects (BSON values,
  lists of them, maps of maps) compared with Java's ``equals``, then builds the schema from it and fills the
  struct from the document. :class:`_Converter` keeps that two-step shape with the same data structures
  (:class:`_V`, :class:`_JList`, :class:`_JMap`), so that equal nested arrays merge, the last document of an
  array of documents wins a nested field's schema, an array field whose name ends its parent's name loses its
  nesting, and every record Debezium refuses is refused: mixed arrays (``array.encoding=array``), a primitive
  next to a document or an array in the same array (``array.encoding=document``: "Cannot create field because
  of field name duplication _0"), MinKey/MaxKey/Symbol/DBPointer fields ("… is not a valid field name"),
  JavaScript with scope, an empty field name, and so on. Those raise ``data.DataError`` naming the record's key
  and the settings.
* Field names go through ``field.name.adjustment.mode`` (``avro``: ``_`` for what Avro refuses; ``avro_unicode``:
  ``_uXXXX``), value schema names through the matching schema-name adjuster one dot-separated segment at a
  time. Names that become the same are not refused (Debezium's adjusters mean to, but never do): in a document
  they share one field (the first one's schema, the last one's value); in a document inside an array
  (``array.encoding=document``) the record fails on the duplicate field.

Options (every one ``configure`` reads in 3.6.1): ``delete.tombstone.handling.mode`` (``drop``, ``tombstone``,
``rewrite``, ``rewrite-with-tombstone``, ``delete-to-tombstone``), ``delete.tombstone.handling.mode.rewrite-with-id``,
``array.encoding`` (``array``, ``document``), ``flatten.struct`` and ``flatten.struct.delimiter``, ``add.fields`` and
``add.fields.prefix``, ``add.headers`` and ``add.headers.prefix``, ``field.name.adjustment.mode``. ``route.by.field``
and ``replace.null.with.default`` are accepted and have no effect, as in Debezium (the MongoDB transform never
routes, and its ``before``/``after`` are strings, never structs with defaults). The options Debezium 2.x removed
(``delete.handling.mode``, ``drop.tombstones``, ``sanitize.field.names``, ``operation.header``) are ignored as
unknown, as Connect ignores them.

Records whose key schema's name does not end in ``.Key`` (heartbeats, transaction metadata) pass through untouched;
those whose value schema's name does not end in ``.Envelope`` too, after the ``add.headers`` headers are added.

INT64 values in the structs this transform builds are :class:`JavaLong` (an ``int`` subclass): Connect tells an
``Integer`` from a ``Long`` when it validates a struct, and so must the checks here.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import DecimalException
from typing import Any, Final

from bson.decimal128 import Decimal128

from mongocdc.events.codec import decimal128_text, java_double
from mongocdc.events.connect.base import ConnectConfigError, TransformFactory
from mongocdc.events.connect.data import (
    OPTIONAL_BOOLEAN,
    OPTIONAL_BYTES,
    OPTIONAL_FLOAT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    OPTIONAL_TIMESTAMP_SCHEMA,
    ConnectRecord,
    DataError,
    Header,
    Schema,
    Struct,
    Type,
    array_schema,
    string_header,
    struct_schema,
    timestamp_from_millis,
)

CLASS_NAME: Final = "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"

# --- BSON values as BsonDocument.parse gives them -------------------------------------------------------------

# BsonType names (Java's enum constants, which is also how they print).
DOUBLE: Final = "DOUBLE"
STRING: Final = "STRING"
DOCUMENT: Final = "DOCUMENT"
ARRAY: Final = "ARRAY"
BINARY: Final = "BINARY"
UNDEFINED: Final = "UNDEFINED"
OBJECT_ID: Final = "OBJECT_ID"
BOOLEAN: Final = "BOOLEAN"
DATE_TIME: Final = "DATE_TIME"
NULL: Final = "NULL"
REGULAR_EXPRESSION: Final = "REGULAR_EXPRESSION"
DB_POINTER: Final = "DB_POINTER"
JAVASCRIPT: Final = "JAVASCRIPT"
SYMBOL: Final = "SYMBOL"
JAVASCRIPT_WITH_SCOPE: Final = "JAVASCRIPT_WITH_SCOPE"
INT32: Final = "INT32"
TIMESTAMP: Final = "TIMESTAMP"
INT64: Final = "INT64"
DECIMAL128: Final = "DECIMAL128"
MIN_KEY: Final = "MIN_KEY"
MAX_KEY: Final = "MAX_KEY"

_INT32_RANGE: Final = range(-(2**31), 2**31)
_INT64_RANGE: Final = range(-(2**63), 2**63)


class JavaLong(int):
    """An INT64 value: Connect's ``Long`` as opposed to ``Integer`` (see the module docstring)."""

    __slots__ = ()


class _V:
    """A BSON value other than a document or an array (``BsonValue``), with Java's ``equals``.

    ``value`` is what Debezium's converter makes of it where that is a plain value (``str`` for strings, code,
    ObjectIds (hex) and Decimal128s (their text), ``int``/:class:`JavaLong`, ``float``, ``bool``, ``None``),
    else: milliseconds for a date, ``(seconds, increment)`` for a timestamp, ``(subtype, bytes)`` for a
    binary, ``(pattern, options)`` for a regular expression, ``(code, scope)`` for JavaScript with scope,
    ``(namespace, ObjectId hex)`` for a DBPointer.
    """

    __slots__ = ("type", "value")

    def __init__(self, kind: str, value: Any) -> None:
        self.type = kind
        self.value = value

    def _key(self) -> Any:
        value = self.value
        if self.type == DOUBLE:  # Double.compare: NaN equals NaN, 0.0 differs from -0.0
            return ("NaN",) if value != value else (value, math.copysign(1.0, value))
        if self.type == JAVASCRIPT_WITH_SCOPE:
            return value[0]  # the scope (a dict) is compared in __eq__, not hashed
        return value

    def __eq__(self, other: object) -> bool:
        if type(other) is not _V or other.type != self.type:
            return False
        if self.type == JAVASCRIPT_WITH_SCOPE:
            return bool(self.value == other.value)
        return bool(self._key() == other._key())

    def __hash__(self) -> int:
        return hash((self.type, self._key()))

    def __repr__(self) -> str:
        return f"_V({self.type}, {self.value!r})"


_TRUE: Final = _V(BOOLEAN, True)
_FALSE: Final = _V(BOOLEAN, False)
_NULL: Final = _V(NULL, None)

BsonValue = Any
"""A parsed value: ``dict`` (document), ``list`` (array) or :class:`_V`."""


def parse_document(text: str) -> dict[str, BsonValue]:
    """``BsonDocument.parse(text)``: the document, in order, a repeated name keeping its first place and last value.

    The text is JSON as Debezium writes it (Python's JSON reader plus the extended-JSON rules of the Java driver's
    ``JsonReader``); the driver's other input forms (shell constructors, unquoted names, single quotes, trailing
    commas) are refused.
    """
    try:
        node = json.loads(text, object_pairs_hook=tuple, strict=False)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"Invalid JSON document: {exc}") from None
    if type(node) is not tuple or (node and node[0][0] in _EXTENDED and _object(node).__class__ is _V):
        raise DataError(f"Invalid JSON document, expected a document: {text[:80]}")
    return _document(node)


def _document(pairs: tuple[tuple[str, Any], ...]) -> dict[str, BsonValue]:
    return {name: _value(node) for name, node in pairs}


def _value(node: Any) -> BsonValue:
    kind = type(node)
    if kind is str:
        return _V(STRING, node)
    if kind is tuple:
        return _object(node)
    if kind is int:
        if node in _INT32_RANGE:
            return _V(INT32, node)
        return _V(INT64, _long(node))
    if kind is float:
        return _V(DOUBLE, node)
    if kind is list:
        return [_value(item) for item in node]
    if kind is bool:
        return _TRUE if node else _FALSE
    return _NULL


def _long(number: int) -> JavaLong:
    if number not in _INT64_RANGE:
        raise DataError(f"Invalid JSON number {number}: out of range for a long")
    return JavaLong(number)


def _object(pairs: tuple[tuple[str, Any], ...]) -> BsonValue:
    """An object: an extended-JSON value when its first name says so (``JsonReader.visitExtendedJSON``)."""
    if pairs:
        first = pairs[0][0]
        if first[:1] == "$":
            reader = _EXTENDED.get(first)
            if reader is not None:
                found = reader(pairs)
                if found is not None:
                    return found
    return _document(pairs)


def _bad(pairs: tuple[tuple[str, Any], ...], reason: str) -> DataError:
    return DataError(f"Invalid extended JSON {pairs[0][0]}: {reason}")


def _only(pairs: tuple[tuple[str, Any], ...]) -> Any:
    """The value of a one-member object."""
    if len(pairs) != 1:
        raise _bad(pairs, f"unexpected member {pairs[1][0]!r}")
    return pairs[0][1]


def _text(pairs: tuple[tuple[str, Any], ...], value: Any) -> str:
    if type(value) is not str:
        raise _bad(pairs, f"expected a string, found {value!r}")
    return value


def _int_token(value: Any) -> int | None:
    """A bare JSON integer as the scanner reads it (``None`` for anything else)."""
    if type(value) is not int:
        return None
    return int(_long(value))


def _base64(pairs: tuple[tuple[str, Any], ...], text: str) -> bytes:
    """``Base64.getDecoder().decode``: the standard alphabet, padding optional."""
    if len(text) % 4 and "=" not in text:
        text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(pairs, f"illegal Base64 {text!r}") from None


_HEX: Final = re.compile(r"[+-]?[0-9a-fA-F]+")


def _subtype(value: Any) -> int | None:
    """``readBinarySubtypeFromExtendedJson``: a hex string or an Int32 (``None`` when neither)."""
    if type(value) is str:
        if not _HEX.fullmatch(value):
            return None
        number = int(value, 16)
        return number & 0xFF if number in _INT32_RANGE else None
    if type(value) is int and value in _INT32_RANGE:
        return value & 0xFF
    return None


def _read_binary(pairs: tuple[tuple[str, Any], ...]) -> _V | None:
    first, value = pairs[0]
    if first == "$binary" and type(value) is tuple:  # {"$binary": {"base64": …, "subType": …}}
        names = [name for name, _ in value]
        if names[:1] == ["base64"]:
            order = ("base64", "subType")
        elif names[:1] == ["subType"]:
            order = ("subType", "base64")
        else:
            raise _bad(pairs, f"unexpected key {names[:1]}")
        if tuple(names) != order:
            raise _bad(pairs, "expected base64 and subType")
        members = dict(value)
        subtype = _subtype(members["subType"])
        if subtype is None:
            raise _bad(pairs, f"invalid subType {members['subType']!r}")
        data = _base64(pairs, _text(pairs, members["base64"]))
        _only(pairs)
        return _V(BINARY, (subtype, data))
    # the legacy {"$binary": "<base64>", "$type": "<hex>"} (either order); a mismatch is a plain document
    if first == "$binary":
        if type(value) is not str:
            return None
        data = _base64(pairs, value)
        if len(pairs) < 2 or pairs[1][0] != "$type":
            return None
        subtype = _subtype(pairs[1][1])
    else:
        subtype = _subtype(value)
        if subtype is None or len(pairs) < 2 or pairs[1][0] != "$binary" or type(pairs[1][1]) is not str:
            return None
        data = _base64(pairs, pairs[1][1])
    if subtype is None or len(pairs) != 2:
        return None
    return _V(BINARY, (subtype, data))


_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _read_uuid(pairs: tuple[tuple[str, Any], ...]) -> _V:
    text = _text(pairs, _only(pairs))
    if not _UUID.fullmatch(text):
        raise _bad(pairs, f"invalid UUID {text!r}")
    return _V(BINARY, (4, uuid.UUID(text).bytes))


def _read_regex(pairs: tuple[tuple[str, Any], ...]) -> _V | None:
    """The legacy ``{"$regex": …, "$options": …}`` (either order); a mismatch is a plain document."""
    first, value = pairs[0]
    other = "$options" if first == "$regex" else "$regex"
    if type(value) is not str or len(pairs) != 2 or pairs[1][0] != other or type(pairs[1][1]) is not str:
        return None
    pattern, options = (value, pairs[1][1]) if first == "$regex" else (pairs[1][1], value)
    return _V(REGULAR_EXPRESSION, (pattern, "".join(sorted(options))))


def _read_code(pairs: tuple[tuple[str, Any], ...]) -> _V:
    code = _text(pairs, pairs[0][1])
    if len(pairs) == 1:
        return _V(JAVASCRIPT, code)
    if pairs[1][0] != "$scope" or type(pairs[1][1]) is not tuple or len(pairs) != 2:
        raise _bad(pairs, "expected $scope")
    return _V(JAVASCRIPT_WITH_SCOPE, (code, _document(pairs[1][1])))


_ISO_DATE: Final = re.compile(r"([+-]?\d{4,9})-(\d{2})-(\d{2})")
_ISO_OFFSET_DATE_TIME: Final = re.compile(
    r"([+-]?\d{4,9})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{0,9}))?)?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2})(?::(\d{2}))?)"
)


_MONTH_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _iso_millis(pairs: tuple[tuple[str, Any], ...], text: str) -> int:
    """``DateTimeFormatter.parse``: ``ISO_LOCAL_DATE`` for ten characters, else ``ISO_OFFSET_DATE_TIME``."""
    match = (_ISO_DATE if len(text) == 10 else _ISO_OFFSET_DATE_TIME).fullmatch(text)
    if match is None:
        raise _bad(pairs, f"failed to parse string as a date: {text!r}")
    groups = match.groups()
    year, month, day = int(groups[0]), int(groups[1]), int(groups[2])
    hour = minute = second = nanos = offset = 0
    if len(groups) > 3:
        hour, minute, second = int(groups[3]), int(groups[4]), int(groups[5] or 0)
        nanos = int((groups[6] or "").ljust(9, "0"))
        if groups[8]:
            offset = int(groups[9]) * 3600 + int(groups[10]) * 60 + int(groups[11] or 0)
            offset = -offset if groups[8] == "-" else offset
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    last_day = 29 if month == 2 and leap else _MONTH_DAYS[month - 1] if 1 <= month <= 12 else 0
    if not (1 <= day <= last_day and hour < 24 and minute < 60 and second < 60 and abs(offset) <= 18 * 3600):
        raise _bad(pairs, f"failed to parse string as a date: {text!r}")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    return seconds * 1000 + nanos // 1_000_000


def _read_date(pairs: tuple[tuple[str, Any], ...]) -> _V:
    value = pairs[0][1]
    if type(value) is tuple:
        if not value or value[0][0] != "$numberLong":
            raise _bad(pairs, "expected $numberLong within $date")
        millis = int(_read_number_long(value).value)
    elif (number := _int_token(value)) is not None:
        millis = number
    elif type(value) is str:
        millis = _iso_millis(pairs, value)
    else:
        raise _bad(pairs, f"expected an integer or string, found {value!r}")
    _only(pairs)
    return _V(DATE_TIME, millis)


def _read_key(pairs: tuple[tuple[str, Any], ...]) -> _V:
    """``$minKey``/``$maxKey``: the value must be the integer 1."""
    value = _only(pairs)
    if type(value) is not int or value != 1:
        raise _bad(pairs, f"expected 1, found {value!r}")
    return _V(MIN_KEY if pairs[0][0] == "$minKey" else MAX_KEY, None)


_OBJECT_ID: Final = re.compile(r"[0-9a-fA-F]{24}")


def _read_object_id(pairs: tuple[tuple[str, Any], ...]) -> _V:
    text = _text(pairs, _only(pairs))
    if not _OBJECT_ID.fullmatch(text):
        raise _bad(pairs, f"invalid hexadecimal representation of an ObjectId: [{text}]")
    return _V(OBJECT_ID, text.lower())


def _two(pairs: tuple[tuple[str, Any], ...], first: str, second: str) -> dict[str, Any]:
    """The members of ``{"$x": {first: …, second: …}}`` (either order, nothing else)."""
    inner = _only(pairs)
    if type(inner) is not tuple or len(inner) != 2 or {name for name, _ in inner} != {first, second}:
        raise _bad(pairs, f"expected {first!r} and {second!r}")
    return dict(inner)


def _read_regular_expression(pairs: tuple[tuple[str, Any], ...]) -> _V:
    members = _two(pairs, "pattern", "options")
    pattern, options = _text(pairs, members["pattern"]), _text(pairs, members["options"])
    return _V(REGULAR_EXPRESSION, (pattern, "".join(sorted(options))))


def _read_symbol(pairs: tuple[tuple[str, Any], ...]) -> _V:
    return _V(SYMBOL, _text(pairs, _only(pairs)))


def _int32(number: int) -> int:
    """``long.intValue()``: the low 32 bits, signed."""
    number &= 0xFFFFFFFF
    return number - 2**32 if number >= 2**31 else number


def _read_timestamp(pairs: tuple[tuple[str, Any], ...]) -> _V:
    members = _two(pairs, "t", "i")
    seconds, increment = _int_token(members["t"]), _int_token(members["i"])
    if seconds is None or increment is None:
        raise _bad(pairs, "expected integers t and i")
    return _V(TIMESTAMP, (_int32(seconds), _int32(increment)))


def _read_undefined(pairs: tuple[tuple[str, Any], ...]) -> _V:
    value = _only(pairs)
    if value is not True and value != "true":
        raise _bad(pairs, f"expected true, found {value!r}")
    return _V(UNDEFINED, None)


_JAVA_INTEGER: Final = re.compile(r"[+-]?\d+")


def _read_number_long(pairs: tuple[tuple[str, Any], ...]) -> _V:
    text = _text(pairs, _only(pairs))
    if not _JAVA_INTEGER.fullmatch(text) or int(text) not in _INT64_RANGE:
        raise _bad(pairs, f"cannot convert {text!r} to a long")
    return _V(INT64, JavaLong(int(text)))


def _read_number_int(pairs: tuple[tuple[str, Any], ...]) -> _V:
    text = _text(pairs, _only(pairs))
    if not _JAVA_INTEGER.fullmatch(text) or int(text) not in _INT32_RANGE:
        raise _bad(pairs, f"cannot convert {text!r} to an integer")
    return _V(INT32, int(text))


_JAVA_BLANKS: Final = "".join(map(chr, range(33)))
"""What Java's ``String.trim`` removes."""
_JAVA_DOUBLE: Final = re.compile(r"([+-]?)(?:(NaN)|(Infinity)|((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?)")


def _read_number_double(pairs: tuple[tuple[str, Any], ...]) -> _V:
    """``Double.valueOf`` (decimal forms, ``NaN``, ``Infinity``; surrounding blanks ignored)."""
    text = _text(pairs, _only(pairs))
    match = _JAVA_DOUBLE.fullmatch(text.strip(_JAVA_BLANKS))
    if match is None:
        raise _bad(pairs, f"cannot convert {text!r} to a double")
    sign, nan, infinity, digits = match.groups()
    value = math.nan if nan else math.inf if infinity else float(digits)
    return _V(DOUBLE, -value if sign == "-" else value)


def _read_number_decimal(pairs: tuple[tuple[str, Any], ...]) -> _V:
    text = _text(pairs, _only(pairs))
    try:
        return _V(DECIMAL128, decimal128_text(Decimal128(text)))
    except (DecimalException, ValueError, TypeError):
        raise _bad(pairs, f"cannot convert {text!r} to a Decimal128") from None


def _read_db_pointer(pairs: tuple[tuple[str, Any], ...]) -> _V:
    members = _two(pairs, "$ref", "$id")
    oid = members["$id"]
    if type(oid) is not tuple or not oid or oid[0][0] != "$oid":
        raise _bad(pairs, "expected an $oid")
    return _V(DB_POINTER, (_text(pairs, members["$ref"]), _read_object_id(oid).value))


_EXTENDED: Final[dict[str, Callable[[tuple[tuple[str, Any], ...]], _V | None]]] = {
    "$binary": _read_binary,
    "$type": _read_binary,
    "$uuid": _read_uuid,
    "$regex": _read_regex,
    "$options": _read_regex,
    "$code": _read_code,
    "$date": _read_date,
    "$maxKey": _read_key,
    "$minKey": _read_key,
    "$oid": _read_object_id,
    "$regularExpression": _read_regular_expression,
    "$symbol": _read_symbol,
    "$timestamp": _read_timestamp,
    "$undefined": _read_undefined,
    "$numberLong": _read_number_long,
    "$numberInt": _read_number_int,
    "$numberDouble": _read_number_double,
    "$numberDecimal": _read_number_decimal,
    "$dbPointer": _read_db_pointer,
}


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


# --- names: FieldNameSelector and SchemaNameAdjuster -----------------------------------------------------------


class _Adjuster:
    """A ``SchemaNameAdjuster`` of ``field.name.adjustment.mode``: ``avro`` replaces each UTF-16 unit Avro refuses
    with ``_`` (keeping a leading digit after it), ``avro_unicode`` with ``_uXXXX``; a field namer refuses ``.``, a
    schema-name adjuster accepts it. Two names that become the same are not an error: Debezium's adjusters mean to
    fail the record then, but build their memory of replaced names afresh for every name, so never do."""

    def __init__(self, *, unicode: bool, field_names: bool) -> None:
        self.unicode = unicode
        first = "a-zA-Z" if unicode else "a-zA-Z_"
        rest = first + "0-9" + ("" if field_names else ".")
        self._first = re.compile(f"[{first}]")
        self._rest = re.compile(f"[{rest}]")
        self._valid = re.compile(f"(?:[{first}][{rest}]*)?")

    def adjust(self, name: str) -> str:
        if self._valid.fullmatch(name):
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

    def __init__(self, adjuster: _Adjuster) -> None:
        self.adjuster = adjuster
        self._cache: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        found = self._cache.get(name)
        if found is None:
            if len(self._cache) >= 10_000:
                self._cache.clear()
            self._cache[name] = found = self.adjuster.adjust(name)
        return found


# --- MongoDataConverter ------------------------------------------------------------------------------------------

_REGEX_SCHEMA: Final = struct_schema(
    [("regex", OPTIONAL_STRING), ("options", OPTIONAL_STRING)], name="io.debezium.mongodb.regex", optional=True
)
_EMPTY_STRUCT: Final = struct_schema([], optional=True)
_STRING_ARRAY: Final = array_schema(OPTIONAL_STRING, optional=True)
_SCALAR_SCHEMAS: Final = {
    NULL: OPTIONAL_STRING,
    STRING: OPTIONAL_STRING,
    JAVASCRIPT: OPTIONAL_STRING,
    OBJECT_ID: OPTIONAL_STRING,
    DECIMAL128: OPTIONAL_STRING,
    DOUBLE: OPTIONAL_FLOAT64,
    BINARY: OPTIONAL_BYTES,
    INT32: OPTIONAL_INT32,
    INT64: OPTIONAL_INT64,
    DATE_TIME: OPTIONAL_TIMESTAMP_SCHEMA,
    TIMESTAMP: OPTIONAL_TIMESTAMP_SCHEMA,
    BOOLEAN: OPTIONAL_BOOLEAN,
}


def _named(parent: str | None, key: str) -> str:
    """``parent + "." + key`` as Java concatenates it (a null name prints ``null``)."""
    return f"{'null' if parent is None else parent}.{key}"


def _shape(document: dict[str, BsonValue]) -> tuple[Any, ...] | None:
    """The names, types and nesting of a document without arrays (``None`` when it has one)."""
    shape: list[tuple[str, Any]] = []
    for key, value in document.items():
        kind = type(value)
        if kind is _V:
            shape.append((key, value.type))
        elif kind is dict:
            inner = _shape(value)
            if inner is None:
                return None
            shape.append((key, inner))
        else:
            return None
    return tuple(shape)


class _Builder:
    """``SchemaBuilder.struct()``: a name, optionality and fields in order; a repeated or empty name is refused."""

    __slots__ = ("name", "optional", "fields")

    def __init__(self, name: str | None = None, *, optional: bool = False) -> None:
        self.name = name
        self.optional = optional
        self.fields: dict[str, Schema] = {}

    def add(self, name: str, schema: Schema) -> None:
        if not name:
            raise DataError("fieldName cannot be null.")
        if name in self.fields:
            raise DataError(f"Cannot create field because of field name duplication {name}")
        self.fields[name] = schema

    def build(self) -> Schema:
        return struct_schema(self.fields.items(), name=self.name, optional=self.optional)


def _field_schema(schema: Schema, key: str) -> Schema:
    """``schema.field(key).schema()``, failing as Java's null dereference does."""
    found = schema.field(key)
    if found is None:
        raise DataError(f"No field {key} in schema {schema.name}")
    return found.schema


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


def _java_value(value: _V) -> Any:
    """``getObject``: the Connect value of a BSON value (``None`` for those Debezium has none for)."""
    kind = value.type
    if kind == DATE_TIME:
        return _date(value.value)
    if kind == TIMESTAMP:
        return _date(1000 * value.value[0])
    if kind == BINARY:
        return value.value[1]
    if kind in (MIN_KEY, MAX_KEY, UNDEFINED, SYMBOL, DB_POINTER, REGULAR_EXPRESSION, JAVASCRIPT_WITH_SCOPE):
        return None
    return value.value


def _date(millis: int) -> dt.datetime:
    try:
        return timestamp_from_millis(millis)
    except OverflowError:
        raise DataError(f"Date {millis} ms from the epoch is outside the years 1 to 9999 mongocdc represents") from None


class _Converter:
    """``MongoDataConverter``: schema maps, schemas and structs (see the module docstring)."""

    def __init__(self, *, document_encoding: bool, namer: Callable[[str], str] | None, sanitize_value: bool) -> None:
        self.document_encoding = document_encoding
        self.namer: Callable[[str], str] = namer or str
        self.sanitize_value = sanitize_value

    # schema maps ------------------------------------------------------------------------------------------

    def parse_document(self, document: dict[str, BsonValue]) -> _JMap:
        """``parseBsonDocument``: name → ``(traversed array, ARRAY)``, ``(schema map, DOCUMENT)`` or
        ``(value, type)``."""
        result = _JMap()
        for key, value in document.items():
            kind = type(value)
            if kind is _V:
                result[key] = (value, value.type)
            elif kind is list:
                result[key] = (self.traverse_array(value), ARRAY)
            else:
                result[key] = (self.parse_document(value), DOCUMENT)
        return result

    def traverse_array(self, array: list[BsonValue]) -> _JMap:
        """``traverseArray``: nested arrays (merged when equal), then the documents (``array`` encoding: one merged
        schema map; ``document``: one ``{index: schema map}`` each, in place), then the primitives as one list."""
        unified = _JMap()
        primitives: list[_V] = []
        merged = _JMap()
        field_schemas: dict[str, list[Schema]] = {}
        index = 0
        for value in array:
            kind = type(value)
            if kind is list:
                unified[self.traverse_array(value)] = ARRAY
            elif kind is dict:
                schema_map = self.parse_document(value)
                if self.document_encoding:
                    unified[_JMap({index: schema_map})] = DOCUMENT
                    index += 1
                else:
                    self._merge(merged, schema_map, field_schemas)
            else:
                primitives.append(value)
        if merged:
            unified[merged] = DOCUMENT
        if primitives:
            types = {value.type for value in primitives}
            unified[_JList(primitives)] = primitives[0].type if len(types) == 1 else ARRAY
        return unified

    def _merge(self, base: _JMap, document: _JMap, field_schemas: dict[str, list[Schema]]) -> None:
        """``mergeSchemas``: the last document's entry wins a name (keeping the name's first place); a non-document
        entry whose schema differs from one seen before for the name fails. (Debezium's merge function compares
        the entry with the document's map, which is never equal, so the incoming entry always wins.)"""
        for field, entry in document.items():
            obj, kind = entry
            schema = self.schema_for(kind)
            seen = field_schemas.setdefault(field, [])
            if schema not in seen:
                seen.append(schema)
            if not (kind == DOCUMENT and obj) and len(seen) > 1:
                raise DataError(f"Array elements with different Bson types are not supported: field {field}")
            base[field] = entry

    # schemas ----------------------------------------------------------------------------------------------

    def schema_for(self, kind: str) -> Schema:
        """``getSchema``: the schema of an array element or of a merged field."""
        found = _SCALAR_SCHEMAS.get(kind)
        if found is not None:
            return found
        if kind == ARRAY:
            return _EMPTY_STRUCT if self.document_encoding else _STRING_ARRAY
        if kind == DOCUMENT:
            return _EMPTY_STRUCT
        raise DataError(f"The value type {kind} is not supported for sub schema")

    def build_schema(self, schema_map: _JMap, builder: _Builder) -> None:
        for key, entry in schema_map.items():
            self.schema(self.namer(key), entry, builder)

    def schema(self, key: str, entry: tuple[Any, str], builder: _Builder) -> None:
        """``schema``: the field ``key`` for ``entry`` unless the builder has one already."""
        if key in builder.fields:
            return
        obj, kind = entry
        found = _SCALAR_SCHEMAS.get(kind)
        if found is not None:
            builder.add(key, found)
        elif kind == DOCUMENT:
            if not obj:
                builder.add(key, _EMPTY_STRUCT)
                return
            document = _Builder(_named(builder.name, key), optional=True)
            for name, entry in obj.items():
                self.schema(self.namer(name), entry, document)
            builder.add(key, document.build())
        elif kind == ARRAY:
            self._array_schema(key, obj, builder)
        elif kind == REGULAR_EXPRESSION:
            builder.add(key, _REGEX_SCHEMA)
        elif kind == JAVASCRIPT_WITH_SCOPE:  # Debezium casts the value to a Map here
            raise DataError("JavaScript with scope is not supported (class BsonJavaScriptWithScope cannot be cast)")
        # any other type (MinKey, MaxKey, Undefined, Symbol, DBPointer) gets no field

    def _array_schema(self, key: str, unified: _JMap, builder: _Builder) -> None:
        if not unified:
            if self.document_encoding:
                builder.add(key, struct_schema([], name=_named(builder.name, key), optional=True))
            else:
                builder.add(key, _STRING_ARRAY)
            return
        if not self.document_encoding:
            for obj in unified:
                if type(obj) is _JMap:
                    self._nested_array(key, obj, builder, _Builder(_named(builder.name, key), optional=True), False)
                else:
                    self._simple_array(key, obj, builder, False)
            return
        if builder.name is None:
            raise DataError(f"Cannot name the schema of array {key} in a schema without a name")
        document = _Builder(builder.name if builder.name.endswith(key) else f"{builder.name}.{key}", optional=True)
        field_index = 0
        for obj in unified:
            if type(obj) is _JList:
                self._element_fields(document, obj)
            elif type(obj) is _JMap and obj and type(next(iter(obj))) is int:  # {index: schema map} of a document
                for index, schema_map in obj.items():
                    element = _Builder(f"{document.name}._{index}", optional=True)
                    self._element_document(element, schema_map)
                    if element.fields:
                        document.add(f"_{index}", element.build())
            elif obj:  # a nested array's unified map
                element = _Builder(f"{document.name}._{field_index}", optional=True)
                self._element_document(element, obj)
                if element.fields:
                    document.add(f"_{field_index}", element.build())
                    field_index += 1
        if document.name != builder.name:
            builder.add(key, document.build())
        else:
            for name, schema in document.fields.items():
                builder.add(name, schema)

    def _element_fields(self, builder: _Builder, values: _JList) -> None:
        """``parseArrayLists``: ``_0``, ``_1``, … by position in the list of primitives."""
        for index, value in enumerate(values):
            builder.add(f"_{index}", self.schema_for(value.type))

    def _element_document(self, element: _Builder, schema_map: _JMap) -> None:
        """``parseMapLists``: the fields of an array's document, or ``_0``, … for a nested array's primitives. (Its
        branch for an entry mapping more than one object is never taken: every entry maps one.)"""
        for name, value in schema_map.items():
            if type(value) is tuple:  # a document's field (a list's or a nested array's entries map to a type)
                entry_key = self.namer(name)
                obj, kind = value
                if kind in (ARRAY, DOCUMENT) and not obj:  # an empty array or document
                    element.add(
                        entry_key, struct_schema([], name=self.namer(f"{element.name}.{entry_key}"), optional=True)
                    )
                elif kind == ARRAY:
                    nested = _Builder(f"{element.name}.{entry_key}", optional=True)
                    self.schema(entry_key, value, nested)
                    element.add(entry_key, nested.build())
                elif kind == DOCUMENT:
                    self.schema(entry_key, value, element)
                else:
                    element.add(entry_key, self.schema_for(kind))
            elif type(name) is _JList and name:
                self._element_fields(element, name)

    def _nested_array(self, key: str, schema_map: _JMap, builder: _Builder, nested: _Builder, deep: bool) -> None:
        """``handleNestedArray``: an array of documents (``array<struct>``) or of arrays (``array<array<…>>``)."""
        for doc_key, doc_value in schema_map.items():
            if type(doc_key) is _JList:
                self._simple_array(key, doc_key, builder, True)
            elif type(doc_key) is _JMap:
                if doc_value == ARRAY:
                    self._simple_array(key, doc_key.values(), builder, True)
                elif doc_value == DOCUMENT:
                    self._nested_array(key, doc_key, builder, _Builder(optional=True), True)
            elif type(doc_value) is tuple:  # a document's field
                name = self.namer(doc_key)
                self.schema_for(doc_value[1])  # validateSingleTypeMap
                self.schema(name, doc_value, nested)
        if nested.fields and key not in builder.fields:
            items = nested.build()
            if deep:
                builder.add(key, array_schema(array_schema(items, optional=True), optional=True))
            else:
                builder.add(key, array_schema(items, optional=True))

    def _simple_array(self, key: str, values: Any, builder: _Builder, deep: bool) -> None:
        """``handleSimpleArray``: ``array<T>`` when every element has T's schema."""
        if key in builder.fields:
            return
        items = list(values)
        if not all(type(value) is _V for value in items):  # the BsonTypes of an array nested three deep
            raise DataError("Arrays nested three deep are not supported (class BsonType cannot be cast to BsonValue)")
        if not items:
            raise DataError("Arrays nested three deep are not supported (index 0 out of bounds for length 0)")
        schemas = {self.schema_for(value.type) for value in items}
        if len(schemas) > 1:
            raise DataError(f"Array elements with different Bson types are not supported: {items}")
        element = array_schema(self.schema_for(items[0].type), optional=True)
        builder.add(key, array_schema(element, optional=True) if deep else element)

    # structs ----------------------------------------------------------------------------------------------

    def build_struct(self, name: str, value: BsonValue, schema: Schema, struct: Struct) -> None:
        """``buildStruct``: put ``value`` into ``struct`` (of ``schema``) under its adjusted name."""
        key = self.namer(name)
        kind = type(value)
        if kind is _V:
            bson = value.type
            if bson == UNDEFINED:
                return
            if bson == REGULAR_EXPRESSION:
                regex = Struct(_field_schema(schema, key))
                _put(regex, "regex", value.value[0])
                _put(regex, "options", value.value[1])
                _put(struct, key, regex)
            elif bson == JAVASCRIPT_WITH_SCOPE:
                raise DataError(f"JavaScript with scope is not supported (field {key})")
            else:
                _put(struct, key, _java_value(value))
        elif kind is dict:
            found = schema.field(key)
            if found is None:
                raise DataError(f"Can't find field: {key} in schema {schema.name}")
            document = Struct(found.schema)
            for child, child_value in value.items():
                self.build_struct(child, child_value, found.schema, document)
            _put(struct, key, document)
        elif not value:
            if self.sanitize_value:
                return
            _put(struct, key, Struct(_field_schema(schema, key)) if self.document_encoding else [])
        elif self.document_encoding:
            elements_schema = _field_schema(schema, key)
            elements = Struct(elements_schema)
            for index, element in enumerate(value):
                self.build_struct(f"_{index}", element, elements_schema, elements)
            _put(struct, key, elements)
        else:
            field_schema = _field_schema(schema, key)
            items = field_schema.value_schema if field_schema.type is Type.ARRAY else field_schema
            assert items is not None
            _put(struct, key, self._array(value, items))

    def _array(self, array: list[BsonValue], schema: Schema) -> list[Any]:
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
                        inner.append(self._struct_of(item, schema.value_schema))
                    else:
                        inner.append(_java_value(item))
                if inner:
                    values.append(inner)
            elif kind is dict:
                values.append(self._struct_of(value, schema))
            else:
                values.append(_java_value(value))
        return values

    def _struct_of(self, document: dict[str, BsonValue], schema: Schema) -> Struct:
        struct = Struct(schema)
        for name, value in document.items():
            self.build_struct(name, value, schema, struct)
        return struct


# --- options ---------------------------------------------------------------------------------------------------

_TOMBSTONE_MODES: Final = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_ENCODINGS: Final = ("array", "document")
_ADJUSTMENT_MODES: Final = ("none", "avro", "avro_unicode")
_HOSTS: Final[dict[str, str | None]] = {
    "id": "transaction",
    "total_order": "transaction",
    "data_collection_order": "transaction",
    "op": None,
    "ts_ms": None,
    "ts_us": None,
    "ts_ns": None,
    "updateDescription": "updateDescription",
}
"""``determineStruct``: the struct of an unqualified ``add.fields``/``add.headers`` name (else ``source``)."""


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split`` with a literal separator: trailing empty strings removed."""
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _enum(options: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = options.get(name, default)
    if value is None or value.strip().lower() not in allowed:
        raise ConnectConfigError(
            f"The '{name}' value '{value}' is invalid: Value must be one of {', '.join(allowed)} "
            "(Unable to validate config.)"
        )
    return value.strip().lower()


def _boolean(options: Mapping[str, str], name: str, default: bool, *, validated: bool) -> bool:
    """Debezium's ``getBoolean``: ``true``/``false`` in any case, trimmed; anything else the default, or refused when
    the option is one the transform validates."""
    value = options.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if validated:
        raise ConnectConfigError(
            f"The '{name}' value '{value}' is invalid: Either 'true' or 'false' is expected "
            "(Unable to validate config.)"
        )
    return default


@dataclass(frozen=True, slots=True)
class FieldReference:
    """An ``add.fields``/``add.headers`` item: ``field``, ``struct.field`` or either with ``:new_name``."""

    struct: str | None
    """The envelope struct holding the field (``source``, ``transaction``, ``updateDescription``), ``None`` for the
    envelope's own ``op``, ``ts_ms``, ``ts_us``, ``ts_ns``."""
    field: str
    new_field: str

    @classmethod
    def parse(cls, prefix: str, item: str) -> FieldReference:
        parts = _java_split(item, ":")
        if not parts or len(parts) > 2:
            raise ConnectConfigError(f"Unexpected field name: {item}")
        splits = _java_split(parts[0], ".")
        if not splits:
            raise ConnectConfigError(f"Unexpected field name: {item}")
        field = splits[0] if len(splits) == 1 else splits[1]
        struct = _HOSTS.get(field, "source") if len(splits) == 1 else splits[0]
        if len(parts) == 2:
            new_field = prefix + parts[1]
        else:
            new_field = prefix + (field if len(splits) == 1 else f"{struct}_{field}")
        return cls(struct, field, new_field)

    @staticmethod
    def parse_list(prefix: str, text: str) -> tuple[FieldReference, ...]:
        if not text:
            return ()
        return tuple(FieldReference.parse(prefix, item.strip()) for item in _java_split(text, ","))

    def schema(self, envelope: Schema) -> Schema | None:
        """``getSchema``: an optional copy of the field's schema (type, name, version, doc, parameters only)."""
        parent = envelope if self.struct is None else _field_schema(envelope, self.struct)
        found = parent.field(self.field) or envelope.field(self.field)
        if found is None:
            return None
        original = found.schema
        return Schema(
            original.type,
            optional=True,
            name=original.name,
            version=original.version,
            doc=original.doc,
            parameters=original.parameters,
            value_schema=original.value_schema if original.type is Type.ARRAY else None,
        )

    def value(self, envelope: Struct) -> Any:
        """``getValue``: the field of its struct (or of the envelope when the struct has none); ``None`` when the
        struct is null (``transaction`` in a snapshot)."""
        parent = envelope if self.struct is None else envelope.get_without_default(self.struct)
        if parent is None:
            return None
        if not isinstance(parent, Struct):
            raise DataError(f"{self.struct} is not a struct")
        holder = parent if parent.has(self.field) else envelope
        return holder.get_without_default(self.field)


# --- the transform ----------------------------------------------------------------------------------------------


class ExtractNewDocumentState:
    """The transform (see the module docstring); one per connector, as Connect builds it from the options."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.mode = _enum(options, "delete.tombstone.handling.mode", "tombstone", _TOMBSTONE_MODES)
        document_encoding = _enum(options, "array.encoding", "array", _ENCODINGS) == "document"
        self.flatten = _boolean(options, "flatten.struct", False, validated=True)
        self.delimiter = options.get("flatten.struct.delimiter", "_")
        self.flat_delimiter = self.delimiter.strip(_JAVA_BLANKS)  # Flatten's own ConfigDef trims it
        self.rewrite_with_id = _boolean(
            options, "delete.tombstone.handling.mode.rewrite-with-id", False, validated=False
        )
        self.add_fields = FieldReference.parse_list(
            options.get("add.fields.prefix", "__"), options.get("add.fields", "")
        )
        self.add_headers = FieldReference.parse_list(
            options.get("add.headers.prefix", "__"), options.get("add.headers", "")
        )
        adjustment = options.get("field.name.adjustment.mode", "none").strip().lower()
        if adjustment not in _ADJUSTMENT_MODES:
            raise ConnectConfigError(
                f"Invalid value {options.get('field.name.adjustment.mode')} for field.name.adjustment.mode: "
                f"must be one of {', '.join(_ADJUSTMENT_MODES)}"
            )
        namer: _FieldNamer | None = None
        self.schema_namer: _Adjuster | None = None
        if adjustment != "none":
            unicode = adjustment == "avro_unicode"
            namer = _FieldNamer(_Adjuster(unicode=unicode, field_names=True))
            self.schema_namer = _Adjuster(unicode=unicode, field_names=False)
        self.converter = _Converter(document_encoding=document_encoding, namer=namer, sanitize_value=namer is not None)
        self.rewrite = self.mode in ("rewrite", "rewrite-with-tombstone")
        self._setting = (
            f"{CLASS_NAME} with array.encoding={'document' if document_encoding else 'array'}, "
            f"flatten.struct={'true' if self.flatten else 'false'}, field.name.adjustment.mode={adjustment}"
        )
        self._schemas: dict[Schema, Schema] = {}
        self._by_shape: dict[tuple[Any, ...], Schema] = {}
        self._flat: dict[int, tuple[Schema, Schema]] = {}

    # Transform ----------------------------------------------------------------------------------------------

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        key_schema = record.key_schema
        if key_schema is None or key_schema.name is None or not key_schema.name.endswith(".Key"):
            return record
        try:
            return self._apply(record)
        except DataError as exc:
            raise DataError(f"{self._setting} cannot transform the record with key {record.key!r}: {exc}") from None

    def _apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = record.value
        if self.add_headers:  # in place, as Debezium adds them: a tombstone sharing them gets them too
            record = record.add_headers_in_place(self._headers(value))
        key_document = parse_document('{ "id" : ' + self._key_text(record) + "}")
        if value is None:  # a tombstone
            if self.mode != "rewrite-with-tombstone":
                return None
            return self._new_record(record, key_document, {})
        value_schema = record.value_schema
        if value_schema is None or value_schema.name is None or not value_schema.name.endswith(".Envelope"):
            return record
        if not isinstance(value, Struct):
            raise DataError(f"Only Struct objects supported for [field extraction], found: {type(value).__name__}")
        after = self._extract(value, "after")
        update = self._extract(value, "updateDescription")
        deletion = after is None and update is None
        if deletion:
            if self.mode == "drop":
                return None
            document_text = self._extract(value, "before") if self.rewrite else None
        else:
            document_text = after
        value_document: dict[str, BsonValue] = {}
        if document_text is not None:
            if not isinstance(document_text, str):
                raise DataError(f"Expected the document as JSON text, found {type(document_text).__name__}")
            value_document = parse_document(document_text)
        elif not deletion:
            value_document = self._partial_update(update, key_document)
        if self.rewrite:
            value_document["__deleted"] = _TRUE if deletion else _FALSE
            if self.rewrite_with_id and "_id" not in value_document:
                value_document["_id"] = key_document["id"]
        return self._new_record(record, key_document, value_document)

    @staticmethod
    def _extract(envelope: Struct, name: str) -> Any:
        """``ExtractField.Value``: the envelope's field (with its default), which must exist."""
        if not envelope.has(name):
            raise DataError(f"Unknown field: {name}")
        return envelope.get(name)

    @staticmethod
    def _key_text(record: ConnectRecord) -> str:
        """``ExtractField.Key("id")``'s value, ``toString()``-ed."""
        key = record.key
        if key is None:
            raise DataError("The record has no key")
        if not isinstance(key, Struct):
            raise DataError(f"Only Struct objects supported for [field extraction], found: {type(key).__name__}")
        if not key.has("id"):
            raise DataError("Unknown field: id")
        found = key.get("id")
        if found is None:
            raise DataError("The key's id is null")
        if isinstance(found, bool):
            return "true" if found else "false"
        if isinstance(found, float):
            return java_double(found)
        return str(found)

    def _partial_update(self, update: Any, key_document: dict[str, BsonValue]) -> dict[str, BsonValue]:
        """``getPartialUpdateDocument``: the updated fields (names as MongoDB gives them, ``a.b`` included), less
        the removed ones among them, and ``_id`` from the key."""
        if not isinstance(update, Struct):
            raise DataError(f"Only Struct objects supported for [updateDescription], found: {type(update).__name__}")
        document: dict[str, BsonValue] = {}
        updated = self._extract(update, "updatedFields")
        if updated is not None:
            document.update(parse_document(updated))
        for name in self._extract(update, "removedFields") or ():
            document.pop(name, None)
        if "_id" not in document:
            document["_id"] = key_document["id"]
        if self.flatten:
            renamed: dict[str, BsonValue] = {}
            for name, value in document.items():
                renamed[name.replace(".", self.delimiter)] = value
            document = renamed
        return document

    def _headers(self, value: Any) -> tuple[Header, ...]:
        """``makeHeaders``: each ``add.headers`` field as an (optional) header; a tombstone gets only ``op`` = ``d``."""
        if value is None:
            return tuple(string_header(ref.new_field, "d") for ref in self.add_headers if ref.field == "op")
        if not isinstance(value, Struct):
            raise DataError(f"The record's value is not a struct: {type(value).__name__}")
        headers: list[Header] = []
        for ref in self.add_headers:
            schema = ref.schema(value.schema)
            if schema is not None:
                headers.append(Header(ref.new_field, schema, ref.value(value)))
        return tuple(headers)

    def _new_record(
        self, record: ConnectRecord, key_document: dict[str, BsonValue], value_document: dict[str, BsonValue]
    ) -> ConnectRecord:
        """``newRecord``: the key ``{id}`` and the value document as structs (the value with the ``add.fields``)."""
        converter = self.converter
        key_schema = self._schema_of(key_document, None, ())
        key = converter._struct_of(key_document, key_schema)
        value_schema: Schema | None = None
        value: Struct | None = None
        if value_document:
            envelope = record.value
            assert isinstance(envelope, Struct) and envelope.schema.name is not None
            name = envelope.schema.name
            if name.endswith(".Envelope"):
                name = name[: -len(".Envelope")]
            if self.schema_namer is not None:
                name = ".".join(self.schema_namer.adjust(segment) for segment in _java_split(name, "."))
            added = tuple(
                (ref.new_field, schema)
                for ref in self.add_fields
                if (schema := ref.schema(envelope.schema)) is not None
            )
            value_schema = self._schema_of(value_document, name, added)
            value = converter._struct_of(value_document, value_schema)
            for ref in self.add_fields:
                value.put(ref.new_field, ref.value(envelope))
        record = record.new_record(key_schema=key_schema, key=key, value_schema=value_schema, value=value)
        return self._flattened(record) if self.flatten else record

    def _schema_of(
        self, document: dict[str, BsonValue], name: str | None, added: tuple[tuple[str, Schema], ...]
    ) -> Schema:
        """The schema ``MongoDataConverter`` builds for ``document`` (named ``name``), with the ``add.fields`` fields
        ``added``; one object per distinct schema, so that the converters' per-schema caches hit. A document without
        arrays is looked up by its shape first (names, types and nesting decide its schema then)."""
        shape = _shape(document)
        cache_key = None if shape is None else (name, shape, added)
        if cache_key is not None:
            found = self._by_shape.get(cache_key)
            if found is not None:
                return found
        builder = _Builder(name)
        self.converter.build_schema(self.converter.parse_document(document), builder)
        for field_name, schema in added:
            builder.add(field_name, schema)
        built = builder.build()
        interned = self._schemas.setdefault(built, built)
        if len(self._schemas) > 1024:
            self._schemas.clear()
        if cache_key is not None:
            if len(self._by_shape) > 4096:
                self._by_shape.clear()
            self._by_shape[cache_key] = interned
        return interned

    # Flatten.Value ----------------------------------------------------------------------------------------------

    def _flattened(self, record: ConnectRecord) -> ConnectRecord:
        """Kafka's ``Flatten.Value`` with the delimiter: nested structs' fields become ``outer<delimiter>inner``."""
        value = record.value
        if value is None:
            return record
        assert isinstance(value, Struct) and record.value_schema is not None
        cached = self._flat.get(id(record.value_schema))
        if cached is not None and cached[0] is record.value_schema:
            flat = cached[1]
        else:
            fields: list[tuple[str, Schema]] = []
            self._flat_fields(record.value_schema, "", record.value_schema.optional, fields)
            flat = struct_schema(
                fields,
                name=record.value_schema.name,
                version=record.value_schema.version,
                doc=record.value_schema.doc,
                parameters=record.value_schema.params if record.value_schema.parameters is not None else None,
            )
            if len(self._flat) >= 1024:
                self._flat.clear()
            self._flat[id(record.value_schema)] = (record.value_schema, flat)
        flat_value = Struct(flat)
        self._flat_values(value, "", flat_value)
        return record.new_record(value_schema=flat, value=flat_value)

    def _flat_name(self, prefix: str, name: str) -> str:
        return name if not prefix else f"{prefix}{self.flat_delimiter}{name}"

    def _flat_fields(self, schema: Schema, prefix: str, optional: bool, out: list[tuple[str, Schema]]) -> None:
        for f in schema.fields:
            name = self._flat_name(prefix, f.name)
            field_optional = optional or f.schema.optional
            if f.schema.type is Type.STRUCT:
                self._flat_fields(f.schema, name, field_optional, out)
            elif f.schema.type is Type.MAP:
                raise DataError(f"Flatten transformation does not support MAP (for field {name}).")
            else:
                out.append((name, f.schema if f.schema.optional == field_optional else f.schema.with_(optional=True)))

    def _flat_values(self, struct: Struct, prefix: str, out: Struct) -> None:
        for f, _ in struct.items():
            name = self._flat_name(prefix, f.name)
            if f.schema.type is Type.STRUCT:
                inner = struct.get(f.name)
                if inner is not None:
                    self._flat_values(inner, name, out)
            else:
                out.put(name, struct.get(f.name))


def _factory(options: Mapping[str, str]) -> ExtractNewDocumentState:
    return ExtractNewDocumentState(options)


TRANSFORMS: Final[dict[str, TransformFactory]] = {CLASS_NAME: _factory}
