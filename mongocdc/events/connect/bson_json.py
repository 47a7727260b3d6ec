"""The Java driver's ``BsonDocument.parse`` and ``BsonDocument.toJson`` in canonical extended JSON, as Debezium
3.6.1's MongoDB transforms use them (split out of ``mongo_data``, which builds on it).

It is written from the Java driver's ``JsonReader``/``JsonWriter`` and follows them step by step, oddities
included, since what comes out is what a sink has been built against:

* The text is read as ``BsonDocument.parse`` reads it (:func:`parse_document`): a bare integer is an Int32 when it
  fits 32 bits, else an Int64; a number with a fraction or exponent, ``NaN`` and ``Infinity`` a double; the
  extended-JSON objects (``$oid``, ``$numberLong``, ``$date``, ``$binary`` old and new, ``$uuid``,
  ``$regex``/``$regularExpression``, ``$timestamp``, ``$code`` with or without ``$scope``, …) their BSON values,
  with the driver's fallback to a plain document where it has one. Values are :class:`Bson`, documents ``dict``
  and arrays ``list``.
* :func:`canonical_json` writes a parsed document back as MongoEventRouter writes an outbox payload it does not
  expand: canonical extended JSON, indented.

INT64 values are :class:`JavaLong` (an ``int`` subclass): Connect tells an ``Integer`` from a ``Long`` when it
validates a struct, and so must the checks built on these values.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import uuid
from collections.abc import Callable
from decimal import DecimalException
from enum import StrEnum
from typing import Any, Final

from bson.decimal128 import Decimal128

from mongocdc.events.codec import decimal128_text, java_double, value_to_json
from mongocdc.events.connect.base import java_trim
from mongocdc.events.connect.data import DataError
from mongocdc.events.connect.json import Raw

# --- BSON values as BsonDocument.parse gives them -------------------------------------------------------------


class BsonType(StrEnum):
    """``org.bson.BsonType`` (Java's enum constants, which is also how they print)."""

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


_INT32_RANGE: Final = range(-(2**31), 2**31)
_INT64_RANGE: Final = range(-(2**63), 2**63)


class JavaLong(int):
    """An INT64 value: Connect's ``Long`` as opposed to ``Integer`` (see the module docstring)."""

    __slots__ = ()


class Bson:
    """A BSON value other than a document (``dict``) or an array (``list``): ``BsonValue``, with Java's ``equals``.

    ``value`` is what Debezium's converter makes of it where that is a plain value (``str`` for strings, code,
    symbols, ObjectIds (hex) and Decimal128s (their text), ``int`` for an INT32, :class:`JavaLong` for an INT64,
    ``float``, ``bool``, ``None``), else: milliseconds for a date, ``(seconds, increment)`` for a timestamp (each
    a signed 32-bit ``int``, as ``BsonTimestamp`` holds them), ``(subtype, bytes)`` for a binary,
    ``(pattern, options)`` for a regular expression (options sorted, as ``BsonRegularExpression`` keeps them),
    ``(code, scope document)`` for JavaScript with scope, ``(namespace, ObjectId hex)`` for a DBPointer.
    """

    __slots__ = ("type", "value")

    def __init__(self, kind: BsonType, value: Any) -> None:
        self.type = kind
        self.value = value

    def _key(self) -> Any:
        value = self.value
        if self.type is BsonType.DOUBLE:  # Double.compare: NaN equals NaN, 0.0 differs from -0.0
            return ("NaN",) if value != value else (value, math.copysign(1.0, value))
        if self.type is BsonType.JAVASCRIPT_WITH_SCOPE:
            return value[0]  # the scope (a dict) is compared in __eq__, not hashed
        return value

    def __eq__(self, other: object) -> bool:
        if type(other) is not Bson or other.type is not self.type:
            return False
        if self.type is BsonType.JAVASCRIPT_WITH_SCOPE:
            return bool(self.value == other.value)
        return bool(self._key() == other._key())

    def __hash__(self) -> int:
        return hash((self.type, self._key()))

    def __repr__(self) -> str:
        return f"Bson({self.type}, {self.value!r})"


_TRUE: Final = Bson(BsonType.BOOLEAN, True)
_FALSE: Final = Bson(BsonType.BOOLEAN, False)
_NULL: Final = Bson(BsonType.NULL, None)


def bson_type(value: Any) -> BsonType:
    """``getBsonType``: the type of a parsed value."""
    if type(value) is dict:
        return BsonType.DOCUMENT
    if type(value) is list:
        return BsonType.ARRAY
    kind: BsonType = value.type
    return kind


# --- parsing (org.bson.json.JsonReader) -------------------------------------------------------------------------

_Pairs = tuple[tuple[str, Any], ...]
"""A JSON object as Python's reader hands it over: its members in order."""


def parse_document(text: str) -> dict[str, Any]:
    """``BsonDocument.parse(text)``: the document, in order, a repeated name keeping its first place and last value.

    The text is JSON as Debezium writes it (Python's JSON reader plus the extended-JSON rules of the Java driver's
    ``JsonReader``); the driver's other input forms (shell constructors, unquoted names, single quotes, trailing
    commas) are refused. Text the driver refuses raises ``DataError``.
    """
    try:
        node = json.loads(text, object_pairs_hook=tuple, strict=False)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"Invalid JSON document: {exc}") from None
    if type(node) is not tuple or (node and node[0][0] in _EXTENDED and type(_object(node)) is Bson):
        raise DataError(f"Invalid JSON document, expected a document: {text[:80]}")
    return _document(node)


def _document(pairs: _Pairs) -> dict[str, Any]:
    return {name: _value(node) for name, node in pairs}


def _value(node: Any) -> Any:
    kind = type(node)
    if kind is str:
        return Bson(BsonType.STRING, node)
    if kind is tuple:
        return _object(node)
    if kind is int:
        if node in _INT32_RANGE:
            return Bson(BsonType.INT32, node)
        return Bson(BsonType.INT64, _long(node))
    if kind is float:
        return Bson(BsonType.DOUBLE, node)
    if kind is list:
        return [_value(item) for item in node]
    if kind is bool:
        return _TRUE if node else _FALSE
    return _NULL


def _long(number: int) -> JavaLong:
    if number not in _INT64_RANGE:
        raise DataError(f"Invalid JSON number {number}: out of range for a long")
    return JavaLong(number)


def _object(pairs: _Pairs) -> Any:
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


def _bad(pairs: _Pairs, reason: str) -> DataError:
    return DataError(f"Invalid extended JSON {pairs[0][0]}: {reason}")


def _only(pairs: _Pairs) -> Any:
    """The value of a one-member object."""
    if len(pairs) != 1:
        raise _bad(pairs, f"unexpected member {pairs[1][0]!r}")
    return pairs[0][1]


def _text(pairs: _Pairs, value: Any) -> str:
    if type(value) is not str:
        raise _bad(pairs, f"expected a string, found {value!r}")
    return value


def _int_token(value: Any) -> int | None:
    """A bare JSON integer as the scanner reads it (``None`` for anything else)."""
    if type(value) is not int:
        return None
    return int(_long(value))


def _base64(pairs: _Pairs, text: str) -> bytes:
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


def _read_binary(pairs: _Pairs) -> Bson | None:
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
        return Bson(BsonType.BINARY, (subtype, data))
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
    return Bson(BsonType.BINARY, (subtype, data))


_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _read_uuid(pairs: _Pairs) -> Bson:
    text = _text(pairs, _only(pairs))
    if not _UUID.fullmatch(text):
        raise _bad(pairs, f"invalid UUID {text!r}")
    return Bson(BsonType.BINARY, (4, uuid.UUID(text).bytes))


def _read_regex(pairs: _Pairs) -> Bson | None:
    """The legacy ``{"$regex": …, "$options": …}`` (either order); a mismatch is a plain document."""
    first, value = pairs[0]
    other = "$options" if first == "$regex" else "$regex"
    if type(value) is not str or len(pairs) != 2 or pairs[1][0] != other or type(pairs[1][1]) is not str:
        return None
    pattern, options = (value, pairs[1][1]) if first == "$regex" else (pairs[1][1], value)
    return Bson(BsonType.REGULAR_EXPRESSION, (pattern, "".join(sorted(options))))


def _read_code(pairs: _Pairs) -> Bson:
    code = _text(pairs, pairs[0][1])
    if len(pairs) == 1:
        return Bson(BsonType.JAVASCRIPT, code)
    if pairs[1][0] != "$scope" or type(pairs[1][1]) is not tuple or len(pairs) != 2:
        raise _bad(pairs, "expected $scope")
    return Bson(BsonType.JAVASCRIPT_WITH_SCOPE, (code, _document(pairs[1][1])))


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


def _iso_millis(pairs: _Pairs, text: str) -> int:
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


def _read_date(pairs: _Pairs) -> Bson:
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
    return Bson(BsonType.DATE_TIME, millis)


def _read_key(pairs: _Pairs) -> Bson:
    """``$minKey``/``$maxKey``: the value must be the integer 1."""
    value = _only(pairs)
    if type(value) is not int or value != 1:
        raise _bad(pairs, f"expected 1, found {value!r}")
    return Bson(BsonType.MIN_KEY if pairs[0][0] == "$minKey" else BsonType.MAX_KEY, None)


_OBJECT_ID: Final = re.compile(r"[0-9a-fA-F]{24}")


def _read_object_id(pairs: _Pairs) -> Bson:
    text = _text(pairs, _only(pairs))
    if not _OBJECT_ID.fullmatch(text):
        raise _bad(pairs, f"invalid hexadecimal representation of an ObjectId: [{text}]")
    return Bson(BsonType.OBJECT_ID, text.lower())


def _two(pairs: _Pairs, first: str, second: str) -> dict[str, Any]:
    """The members of ``{"$x": {first: …, second: …}}`` (either order, nothing else)."""
    inner = _only(pairs)
    if type(inner) is not tuple or len(inner) != 2 or {name for name, _ in inner} != {first, second}:
        raise _bad(pairs, f"expected {first!r} and {second!r}")
    return dict(inner)


def _read_regular_expression(pairs: _Pairs) -> Bson:
    members = _two(pairs, "pattern", "options")
    pattern, options = _text(pairs, members["pattern"]), _text(pairs, members["options"])
    return Bson(BsonType.REGULAR_EXPRESSION, (pattern, "".join(sorted(options))))


def _read_symbol(pairs: _Pairs) -> Bson:
    return Bson(BsonType.SYMBOL, _text(pairs, _only(pairs)))


def _int32(number: int) -> int:
    """``long.intValue()``: the low 32 bits, signed."""
    number &= 0xFFFFFFFF
    return number - 2**32 if number >= 2**31 else number


def _read_timestamp(pairs: _Pairs) -> Bson:
    members = _two(pairs, "t", "i")
    seconds, increment = _int_token(members["t"]), _int_token(members["i"])
    if seconds is None or increment is None:
        raise _bad(pairs, "expected integers t and i")
    return Bson(BsonType.TIMESTAMP, (_int32(seconds), _int32(increment)))


def _read_undefined(pairs: _Pairs) -> Bson:
    value = _only(pairs)
    if value is not True and value != "true":
        raise _bad(pairs, f"expected true, found {value!r}")
    return Bson(BsonType.UNDEFINED, None)


_JAVA_INTEGER: Final = re.compile(r"[+-]?\d+")


def _read_number_long(pairs: _Pairs) -> Bson:
    text = _text(pairs, _only(pairs))
    if not _JAVA_INTEGER.fullmatch(text) or int(text) not in _INT64_RANGE:
        raise _bad(pairs, f"cannot convert {text!r} to a long")
    return Bson(BsonType.INT64, JavaLong(int(text)))


def _read_number_int(pairs: _Pairs) -> Bson:
    text = _text(pairs, _only(pairs))
    if not _JAVA_INTEGER.fullmatch(text) or int(text) not in _INT32_RANGE:
        raise _bad(pairs, f"cannot convert {text!r} to an integer")
    return Bson(BsonType.INT32, int(text))


_JAVA_DOUBLE: Final = re.compile(r"([+-]?)(?:(NaN)|(Infinity)|((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?)")


def _read_number_double(pairs: _Pairs) -> Bson:
    """``Double.valueOf`` (decimal forms, ``NaN``, ``Infinity``; surrounding blanks ignored)."""
    text = _text(pairs, _only(pairs))
    match = _JAVA_DOUBLE.fullmatch(java_trim(text))
    if match is None:
        raise _bad(pairs, f"cannot convert {text!r} to a double")
    sign, nan, infinity, digits = match.groups()
    value = math.nan if nan else math.inf if infinity else float(digits)
    return Bson(BsonType.DOUBLE, -value if sign == "-" else value)


def _read_number_decimal(pairs: _Pairs) -> Bson:
    text = _text(pairs, _only(pairs))
    try:
        return Bson(BsonType.DECIMAL128, decimal128_text(Decimal128(text)))
    except (DecimalException, ValueError, TypeError):
        raise _bad(pairs, f"cannot convert {text!r} to a Decimal128") from None


def _read_db_pointer(pairs: _Pairs) -> Bson:
    members = _two(pairs, "$ref", "$id")
    oid = members["$id"]
    if type(oid) is not tuple or not oid or oid[0][0] != "$oid":
        raise _bad(pairs, "expected an $oid")
    return Bson(BsonType.DB_POINTER, (_text(pairs, members["$ref"]), _read_object_id(oid).value))


_EXTENDED: Final[dict[str, Callable[[_Pairs], Bson | None]]] = {
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


# --- writing (org.bson.json.JsonWriter, EXTENDED mode, indented) --------------------------------------------------


def _canonical_node(value: Any) -> Any:
    """The JSON tree the Java writer writes for ``value`` in canonical extended JSON."""
    if type(value) is dict:
        return {name: _canonical_node(item) for name, item in value.items()}
    if type(value) is list:
        return [_canonical_node(item) for item in value]
    kind, data = value.type, value.value
    if kind is BsonType.STRING:
        return data
    if kind is BsonType.BOOLEAN:
        return Raw("true" if data else "false")
    if kind is BsonType.NULL:
        return Raw("null")
    if kind in (BsonType.INT32, BsonType.INT64):
        return {"$numberInt" if kind is BsonType.INT32 else "$numberLong": str(int(data))}
    if kind is BsonType.DOUBLE:
        return {"$numberDouble": java_double(data)}
    if kind is BsonType.OBJECT_ID:
        return {"$oid": data}
    if kind is BsonType.DECIMAL128:
        return {"$numberDecimal": data}
    if kind is BsonType.BINARY:
        return {"$binary": {"base64": base64.b64encode(data[1]).decode("ascii"), "subType": f"{data[0]:02X}"}}
    if kind is BsonType.DATE_TIME:
        return {"$date": {"$numberLong": str(data)}}
    if kind is BsonType.TIMESTAMP:  # written unsigned
        return {"$timestamp": {"t": Raw(str(data[0] & 0xFFFFFFFF)), "i": Raw(str(data[1] & 0xFFFFFFFF))}}
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
