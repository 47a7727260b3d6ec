"""BSON → the JSON text Debezium's MongoDB connector writes, character for character.

Debezium renders documents with the MongoDB Java driver's ``JsonWriter``; what it writes is the
oracle (checked against Debezium itself by the compatibility suite), not the extended-JSON spec:

* ``after``, ``before`` and ``updateDescription.updatedFields``: ``JsonMode.STRICT`` with
  indentation switched on but empty indent and new-line strings, so ``{"a": 1,"b": [1,2]}``
  (``": "`` after a name, a bare ``,`` between elements). Every Int64 is
  ``{"$numberLong": "5"}``, dates ``{"$date": <millis>}``, binaries
  ``{"$binary": "<base64>", "$type": "00"}``, regular expressions
  ``{"$regex": "…", "$options": "…"}``, doubles Java's ``Double.toString`` (``145.81``,
  ``1.0E300``, bare ``NaN``/``Infinity``).
* the key's ``id``: ``JsonMode.RELAXED`` with the same spacing, of the ``_id`` value alone.
* strings: the Java writer escapes ``"`` ``\\`` and ``\\b\\f\\n\\r\\t``, and writes ``\\uXXXX``
  (lower-case hex) for every UTF-16 unit whose Unicode category is not a letter (other than a
  modifier letter), digit, number, space separator, punctuation or symbol: control and format
  characters, marks, line/paragraph separators, unassigned code points and both halves of every
  character beyond the Basic Multilingual Plane. Everything else is written as it is.

The document path decodes the BSON once (C), swaps the values whose JSON differs from plain JSON
for their extended-JSON objects in place, and lets the C JSON encoder write the text; doubles that
Java writes in scientific notation go through a placeholder the encoder cannot produce otherwise
(a lone surrogate, which no UTF-8 string decodes to).

Known differences, all in values MongoDB has deprecated since 2011 and no current driver writes:
a ``symbol`` is written as a plain string, ``undefined`` as ``null``, a ``DBPointer`` as a
``{"$ref", "$id"}`` document (Java: ``{"$symbol": …}``, ``{"$undefined": true}``, the same
document). Java 17's ``Double.toString`` occasionally prints one digit more than the shortest
text that reads back as the same double (fixed in Java 19); mongocdc prints the shortest, except
for ``Double.MIN_VALUE``, which Java 17 prints as ``4.9E-324``.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import bson
from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.binary import Binary
from bson.codec_options import CodecOptions, DatetimeConversion, TypeDecoder, TypeRegistry
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.raw_bson import RawBSONDocument

_DECODE: CodecOptions[dict[str, Any]] = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS)
# The Java writer's compact form: ": " after a name, "," between elements, nothing else.
_encode_string = json.JSONEncoder(ensure_ascii=False).encode
_RELAXED = json_util.RELAXED_JSON_OPTIONS

# Unicode categories the Java writer copies as they are (Character.getType); all others are escaped.
_RAW_CATEGORIES = frozenset(
    ("Lu", "Ll", "Lt", "Lo", "Nd", "Nl", "No", "Zs", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So")
)
_PLACEHOLDER = "\udc00"  # a lone surrogate: never produced by decoding UTF-8


@functools.cache
def _java_escapes() -> re.Pattern[str]:
    """Characters the Java writer escapes and Python's JSON encoder does not (built on first use)."""
    ranges: list[str] = ["\x7f"]
    start = None
    for code in range(0x80, 0x10000):
        escaped = unicodedata.category(chr(code)) not in _RAW_CATEGORIES
        if escaped and start is None:
            start = code
        elif not escaped and start is not None:
            ranges.append(_range(start, code - 1))
            start = None
    if start is not None:
        ranges.append(_range(start, 0xFFFF))
    ranges.append(_range(0x10000, 0x10FFFF))
    return re.compile("[" + "".join(ranges) + "]")


def _range(first: int, last: int) -> str:
    return f"\\U{first:08x}" if first == last else f"\\U{first:08x}-\\U{last:08x}"


def _unit_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # Java sees two UTF-16 units, both surrogates, both escaped
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _java_text(text: str) -> str:
    """Escape what the Java writer escapes beyond JSON's own escapes (on already-encoded JSON)."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _java_escapes().sub(_unit_escape, text)


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``145.81``, ``1.0E300``, ``1.0E-4``, ``NaN``, ``-Infinity``."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    magnitude = abs(value)
    if magnitude == 0.0 or 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python writes these ranges in plain decimal notation, as Java does
    if magnitude == 5e-324:  # Double.MIN_VALUE: Java 17 prints two digits
        return "-4.9E-324" if value < 0 else "4.9E-324"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    first = len(digits) + exponent - 1  # the decimal exponent of the first significant digit
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{first}"


def _binary(data: bytes, subtype: int) -> dict[str, str]:
    return {"$binary": base64.b64encode(data).decode("ascii"), "$type": f"{subtype:02X}"}


def _regex_options(flags: int | str) -> str:
    if isinstance(flags, str):
        return flags
    return "".join(letter for letter, bit in _REGEX_FLAGS if flags & bit)


_REGEX_FLAGS = (
    ("i", re.IGNORECASE),
    ("l", re.LOCALE),
    ("m", re.MULTILINE),
    ("s", re.DOTALL),
    ("u", re.UNICODE),
    ("x", re.VERBOSE),
)


# The fast path: the BSON decoder itself converts each value whose JSON differs from plain JSON
# (a TypeRegistry decoder per Python type it decodes to, called by the C decoder as it meets the
# value), so no Python code walks the strings, numbers, documents and arrays; the C JSON encoder
# then writes the text. Code scopes and DBRef fields are decoded (so converted) before their
# Code/DBRef is.


class _Convert(TypeDecoder):
    """The conversion of one decoded type, called by the BSON decoder with the value alone."""

    def __init__(self, python_type: type, convert: Callable[[Any], Any]) -> None:
        self._python_type = python_type
        # The registry stores ``transform_bson`` as it finds it: the plain function, no bound method.
        self.transform_bson = convert  # type: ignore[method-assign,assignment]

    @property
    def bson_type(self) -> Any:
        return self._python_type

    def transform_bson(self, value: Any) -> Any:  # replaced per instance
        raise NotImplementedError


def _strict_double(value: float) -> Any:
    """The double itself where the encoder writes Java's text, else Java's text between placeholders."""
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7 or magnitude == 0.0 or value != value or magnitude == math.inf:
        return value  # the encoder's text is Java's here (NaN and Infinity bare, as Java)
    return _PLACEHOLDER + java_double(value) + _PLACEHOLDER


def _relaxed_double(value: float) -> Any:
    if value != value or math.isinf(value):
        return {"$numberDouble": java_double(value)}
    return _strict_double(value)


_DECIMAL_SPECIAL = 0x6000000000000000  # both combination bits: infinity, NaN or the rarely used large form
_DECIMAL_MAX_COEFFICIENT = 10**34 - 1


def decimal128_text(value: Decimal128) -> str:
    """``str(value)`` (the text of ``decimal.Decimal``, which is Java's ``Decimal128.toString()``), faster.

    Finite values in the usual encoding are written from their coefficient and exponent with the
    decimal arithmetic specification's to-scientific-string rule; anything else goes to ``str``.
    """
    high, low = value.__getstate__()
    if high & _DECIMAL_SPECIAL == _DECIMAL_SPECIAL:
        return str(value)
    coefficient = (high & 0x1FFFFFFFFFFFF) << 64 | low
    if coefficient > _DECIMAL_MAX_COEFFICIENT:
        return str(value)
    exponent = (high >> 49 & 0x3FFF) - 6176
    digits = str(coefficient)
    if exponent == 0:
        text = digits
    else:
        point = exponent + len(digits)  # digits before the decimal point in plain notation
        if exponent < 0 and point > -6:
            text = digits[:point] + "." + digits[point:] if point > 0 else "0." + "0" * -point + digits
        else:
            text = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + f"E{point - 1:+d}"
    return "-" + text if high >> 63 else text


def _code(value: Code) -> dict[str, Any]:
    if value.scope is None:
        return {"$code": str(value)}
    return {"$code": str(value), "$scope": value.scope}


def _relaxed_date(value: DatetimeMS) -> dict[str, Any]:
    millis = int(value)
    if 0 <= millis <= _LAST_MS_OF_9999:
        return {"$date": _iso_millis(millis)}
    return {"$date": {"$numberLong": str(millis)}}


def _relaxed_binary(data: bytes, subtype: int) -> dict[str, Any]:
    return {"$binary": {"base64": base64.b64encode(data).decode("ascii"), "subType": f"{subtype:02X}"}}


_COMMON: dict[type, Callable[[Any], Any]] = {
    ObjectId: lambda value: {"$oid": str(value)},
    Timestamp: lambda value: {"$timestamp": {"t": value.time, "i": value.inc}},
    Decimal128: lambda value: {"$numberDecimal": decimal128_text(value)},
    MinKey: lambda value: {"$minKey": 1},
    MaxKey: lambda value: {"$maxKey": 1},
    Code: _code,
    DBRef: lambda value: dict(value.as_doc()),
}
_STRICT: dict[type, Callable[[Any], Any]] = {
    **_COMMON,
    float: _strict_double,
    Int64: lambda value: {"$numberLong": str(value)},  # Int64 is an int: str() is its digits
    DatetimeMS: lambda value: {"$date": int(value)},
    bytes: lambda value: _binary(value, 0),
    Binary: lambda value: _binary(bytes(value), value.subtype),
    Regex: lambda value: {"$regex": str(value.pattern), "$options": _regex_options(value.flags)},
}
_RELAXED_TYPES: dict[type, Callable[[Any], Any]] = {
    **_COMMON,
    float: _relaxed_double,
    Int64: int,
    DatetimeMS: _relaxed_date,
    bytes: lambda value: _relaxed_binary(value, 0),
    Binary: lambda value: _relaxed_binary(bytes(value), value.subtype),
    Regex: lambda value: {
        "$regularExpression": {"pattern": str(value.pattern), "options": _regex_options(value.flags)}
    },
}


def _converting(converters: dict[type, Callable[[Any], Any]]) -> CodecOptions[dict[str, Any]]:
    registry = TypeRegistry([_Convert(kind, convert) for kind, convert in converters.items()])
    return CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS, type_registry=registry)


_DECODE_STRICT = _converting(_STRICT)
_DECODE_RELAXED = _converting(_RELAXED_TYPES)
# JsonWriter with indentation on but empty indent/new-line strings (Debezium's COMPACT_JSON_SETTINGS).
_encode_compact = json.JSONEncoder(separators=(",", ": "), ensure_ascii=False, check_circular=False).encode
# JsonWriter's defaults (BsonDocument.toJson()): ", " between elements.
_encode_spaced = json.JSONEncoder(separators=(", ", ": "), ensure_ascii=False, check_circular=False).encode


def _bson(document: Mapping[str, Any] | RawBSONDocument) -> bytes:
    return bytes(document.raw) if isinstance(document, RawBSONDocument) else bson.encode(document)


def _decoded(document: Mapping[str, Any] | RawBSONDocument) -> dict[str, Any]:
    return bson.decode(_bson(document), _DECODE)


def _text(converted: dict[str, Any], encode: Callable[[Any], str]) -> str:
    text = encode(converted)
    if _PLACEHOLDER in text:  # doubles in Java's scientific notation: the placeholders' quotes go
        text = text.replace('"' + _PLACEHOLDER, "").replace(_PLACEHOLDER + '"', "")
    return _java_text(text)


def document_to_json(document: Mapping[str, Any] | RawBSONDocument) -> str:
    """Render one BSON document as Debezium renders ``after`` and ``before`` (strict, compact)."""
    converted = bson.decode(_bson(document), _DECODE_STRICT)
    text = _encode_compact(converted)
    if _PLACEHOLDER in text:  # doubles in Java's scientific notation (see _text)
        return _java_text(text.replace('"' + _PLACEHOLDER, "").replace(_PLACEHOLDER + '"', ""))
    text = _java_text(text)
    _decoded_texts.last = (text, converted)
    return text


_decoded_texts = threading.local()
"""This thread's last :func:`document_to_json` text with the JSON tree it was written from."""


def decoded_json(text: str) -> Any:
    """``json.loads(text)`` for the text :func:`document_to_json` returned last on this thread (this very object),
    without parsing it: the tree it was written from, handed over once (the caller may change it); ``None`` for any
    other text, or when that tree held what the writer spells otherwise (doubles in Java's scientific notation)."""
    last = getattr(_decoded_texts, "last", None)
    if last is None or last[0] is not text:
        return None
    _decoded_texts.last = None
    return last[1]


def update_to_json(document: Mapping[str, Any] | RawBSONDocument) -> str:
    """Render ``updateDescription.updatedFields`` as Debezium does: ``BsonDocument.toJson()``.

    That is the Java writer's default: relaxed extended JSON with ``", "`` between elements
    (``{"a": 1, "d": {"$date": "2024-01-01T00:00:00Z"}}``), unlike ``after``.
    """
    return _text(bson.decode(_bson(document), _DECODE_RELAXED), _encode_spaced)


def document_to_json_pure(document: Mapping[str, Any] | RawBSONDocument, *, mode: str = "strict") -> str:
    """The same text written by a plain recursive writer: the reference the fast paths are tested against.

    ``mode``: ``strict`` (:func:`document_to_json`), ``update`` (:func:`update_to_json`) or
    ``key`` (:func:`value_to_json`'s form for a document).
    """
    strict = mode == "strict"
    separator = ", " if mode == "update" else ","
    return _java_text(_write(_decoded(document), strict=strict, separator=separator))


# --- the recursive writer (keys, and the reference for documents) --------------------------------


def _write(value: Any, *, strict: bool, separator: str = ",") -> str:
    kind = type(value)
    if kind is dict:
        return (
            "{"
            + separator.join(
                f"{_encode_string(k)}: {_write(v, strict=strict, separator=separator)}" for k, v in value.items()
            )
            + "}"
        )
    if kind is list:
        return "[" + separator.join(_write(v, strict=strict, separator=separator) for v in value) + "]"
    if kind is str:
        return _encode_string(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is int:
        return str(value)
    if kind is float:
        if not strict and (value != value or math.isinf(value)):
            return _write({"$numberDouble": java_double(value)}, strict=strict, separator=separator)
        return java_double(value)
    if kind is Decimal128:  # str() itself, not the fast path's decimal128_text
        return _write({"$numberDecimal": str(value)}, strict=strict, separator=separator)
    if kind is Code:
        scope = None if value.scope is None else dict(value.scope)
        code: dict[str, Any] = {"$code": str(value)} if scope is None else {"$code": str(value), "$scope": scope}
        return _write(code, strict=strict, separator=separator)
    if kind is DBRef:
        return _write(dict(value.as_doc()), strict=strict, separator=separator)
    converters = _STRICT if strict else _RELAXED_TYPES
    convert = converters.get(kind)
    if convert is None:
        raise TypeError(f"cannot render a {kind.__name__} as JSON")
    return _write(convert(value), strict=strict, separator=separator)


_LAST_MS_OF_9999 = 253402300799999


def _iso_millis(millis: int) -> str:
    """Java's ``ISO_OFFSET_DATE_TIME`` in UTC: seconds always, the fraction only as long as needed."""
    moment = datetime.fromtimestamp(millis // 1000, tz=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = millis % 1000
    if fraction:
        text += "." + f"{fraction:03d}".rstrip("0")
    return text + "Z"


def value_to_json(value: Any) -> str:
    """Render a document's ``_id`` as Debezium renders the key's ``id`` (relaxed, compact).

    ``ObjectId`` → ``{"$oid": "…"}``, ``1004`` → ``1004``, ``"abc"`` → ``"abc"``,
    ``{"a": 1, "b": "x"}`` → ``{"a": 1,"b": "x"}``.
    """
    kind = type(value)
    if kind is ObjectId:
        return f'{{"$oid": "{value}"}}'
    if kind is str:
        return _java_text(_encode_string(value))
    if kind is int and -(2**63) <= value < 2**63:
        return str(value)
    if isinstance(value, RawBSONDocument):
        value = bson.decode(value.raw, _DECODE)
    else:
        value = bson.decode(bson.encode({"_": value}), _DECODE)["_"]
    return _java_text(_write(value, strict=False))


def json_to_document(text: str) -> Any:
    """Parse relaxed, canonical or strict (legacy) extended JSON back into BSON values."""
    return json_util.loads(text, json_options=_RELAXED)


def raw_id_to_json(document: RawBSONDocument) -> str:
    """``value_to_json(document["_id"])`` of a raw document (a change's ``documentKey``), read from its bytes.

    An ObjectId ``_id`` (the usual key) is written straight from its twelve bytes; other ones go
    through :func:`raw_document_id`. Raises ``KeyError`` when the document has no ``_id``.
    """
    raw = document.raw
    if raw[4] == 0x07 and raw[5:9] == b"_id\x00":
        return '{"$oid": "' + raw[9:21].hex() + '"}'
    return value_to_json(raw_document_id(document))


def raw_document_id(document: RawBSONDocument) -> Any:
    """The ``_id`` of a raw document without inflating the whole document.

    MongoDB stores ``_id`` first; the common key types are read straight from the bytes, anything
    else (or an ``_id`` that is not first) through a full decode.
    """
    raw = document.raw
    kind = raw[4]
    if raw[5:9] == b"_id\x00":
        at = 9
        if kind == 0x07:
            return ObjectId(bytes(raw[at : at + 12]))
        if kind == 0x02:
            size = int.from_bytes(raw[at : at + 4], "little", signed=True)
            return bytes(raw[at + 4 : at + 3 + size]).decode("utf-8")
        if kind == 0x10:
            return int.from_bytes(raw[at : at + 4], "little", signed=True)
        if kind == 0x12:
            return Int64(int.from_bytes(raw[at : at + 8], "little", signed=True))
    return bson.decode(raw)["_id"]
