"""Kafka Connect's ``Values`` (``org.apache.kafka.connect.data.Values``, Kafka 4.3.1): a value's text, and a literal's
schema and value (pure).

* :func:`convert_to_string` is ``Values.convertToString``: what SimpleHeaderConverter writes for a header, and what
  ``convertTo`` makes of a value for a string schema. Numbers as Java prints their class (the schema tells a
  ``Float`` from a ``Double``), strings and bytes (Base64) as they are, quoted inside an array (``[a,b]``), a map
  (``{k:v}``) or a struct (``{"field":value}``, null fields by their defaults), dates by ``Values.dateFormatFor``
  (:func:`date_text`).
* :func:`date_text` is ``dateFormatFor(date).format(date)`` in UTC: an instant before 1970-01-02 as an ISO 8601
  time of day, one at midnight as a date, any other as a timestamp, in ``java.util``'s calendar
  (:mod:`java_time`).
* :func:`parse_string` is ``Values.parseString``, which InsertHeader reads its literal with: a number gets the
  narrowest of ``Byte`` … ``Long``, ``Float``, ``Double``, else a ``BigDecimal``; ``true``/``false``, ISO dates,
  times and timestamps, arrays and maps (their elements aligned to a common schema by ``convertTo``) get
  theirs; anything else is the whole literal as a string. A date outside Python's years 1 to 9999 is read as
  text.
* :func:`as_long` and :func:`as_double` are ``Values.asLong``/``asDouble`` of a value without a schema (MaskField's
  replacement, ``convertTo``'s elements).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import unicodedata
from fractions import Fraction
from typing import Any, Final

from mongocdc.events.connect.base import is_blank, java_trim
from mongocdc.events.connect.data import (
    BOOLEAN,
    DATE,
    DATE_SCHEMA,
    DECIMAL,
    DECIMAL_SCALE,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    TIME,
    TIME_SCHEMA,
    TIMESTAMP,
    TIMESTAMP_SCHEMA,
    DataError,
    Schema,
    Struct,
    Type,
    millis_of,
    timestamp_from_millis,
)
from mongocdc.events.connect.java_lang import (
    INT_BITS,
    NUMBERS,
    big_decimal,
    class_name,
    f32,
    f32_exact,
    java_class,
    number_text,
    to_float64,
    to_integer,
    wrap,
)
from mongocdc.events.connect.java_time import MILLIS_PER_DAY, DateFormat

_ISO_DATE: Final = DateFormat("yyyy-MM-dd")
_ISO_TIME: Final = DateFormat("HH:mm:ss.SSS'Z'")
_ISO_TIMESTAMP: Final = DateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")

# --- convertToString ----------------------------------------------------------------------------------------------


def convert_to_string(value: Any, schema: Schema | None = None) -> str | None:
    """``Values.convertToString``: ``value`` as text (see the module docstring), ``None`` for null; ``schema`` tells
    the Java class of its numbers."""
    return None if value is None else _text(value, schema, embedded=False)


def _text(value: Any, schema: Schema | None, embedded: bool) -> str:
    """``Values.append``: a string or bytes ``embedded`` in an array, a map or a struct is quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return number_text(java_class(schema, value), value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if embedded else value
    if isinstance(value, (bytes, bytearray)):
        encoded = base64.b64encode(value).decode("ascii")
        return f'"{encoded}"' if embedded else encoded
    if isinstance(value, list):
        items = None if schema is None else schema.value_schema
        return "[" + ",".join(_text(item, items, True) for item in value) + "]"
    if isinstance(value, dict):
        keys = None if schema is None else schema.key_schema
        values = None if schema is None else schema.value_schema
        return "{" + ",".join(_text(k, keys, True) + ":" + _text(v, values, True) for k, v in value.items()) + "}"
    if isinstance(value, Struct):
        fields = (
            _text(f.name, None, True) + ":" + _text(value.get(f.name), f.schema, True) for f in value.schema.fields
        )
        return "{" + ",".join(fields) + "}"
    if isinstance(value, dt.datetime):
        return date_text(value)
    raise DataError(f"Failed to serialize unexpected value type {type(value).__name__}: {value}")


def date_text(value: dt.datetime) -> str:
    """``Values.dateFormatFor(date).format(date)`` (the JVM's zone is UTC): before a day past the epoch a time,
    a whole day a date, else a timestamp."""
    millis = millis_of(value)
    if millis < MILLIS_PER_DAY:
        return _ISO_TIME.format(millis)
    if millis % MILLIS_PER_DAY == 0:
        return _ISO_DATE.format(millis)
    return _ISO_TIMESTAMP.format(millis)


# --- asLong, asDouble, convertTo ----------------------------------------------------------------------------------


def as_long(value: Any) -> int:
    """``Values.asLong`` of a value without a schema."""
    kind = java_class(None, value)
    if kind in NUMBERS:
        return to_integer(kind, value, 64)
    if kind == "String":
        try:
            return wrap(int(big_decimal(value)), 64)
        except ValueError:
            pass
    raise DataError(f"Unable to convert {value} ({class_name(value)}) to a number")


def as_double(value: Any) -> float:
    """``Values.asDouble`` of a value without a schema (``BigDecimal.doubleValue`` of a string: an infinity beyond
    the doubles, as ``float()`` of a ``Decimal``)."""
    kind = java_class(None, value)
    if kind in NUMBERS:
        return to_float64(value)
    if kind == "String":
        try:
            return float(big_decimal(value))
        except ValueError:
            pass
    return float(as_long(value))


_SchemaAndValue = tuple[Schema | None, Any]


def _convert_to(to: Schema, value: Any) -> Any:
    """``Values.convertTo(toSchema, null, value)`` for the schemas ``parseString`` aligns elements with."""
    if value is None:
        if to.optional:
            return None
        raise DataError("Unable to convert a null value to a schema that requires a value")
    target = to.type
    if target in INT_BITS:
        if target is Type.INT32 and to.name in (DATE, TIME) or target is Type.INT64 and to.name == TIMESTAMP:
            if isinstance(value, dt.datetime):
                return value
            number = as_long(value)
            return timestamp_from_millis(number * MILLIS_PER_DAY if to.name == DATE else number)
        if isinstance(value, bool):
            raise DataError(f"Unable to convert {value} ({class_name(value)}) to a number")
        return wrap(as_long(value), INT_BITS[target])
    if target is Type.FLOAT32:
        return f32(as_double(value))
    if target is Type.FLOAT64:
        return as_double(value)
    if target is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        return as_long(value) != 0
    if target is Type.STRING:
        return _text(value, None, embedded=False)
    if target is Type.BYTES:
        if isinstance(value, (bytes, decimal.Decimal)):
            return value
        raise DataError(f"Unable to convert {value} ({class_name(value)}) to {to}")
    if target is Type.ARRAY:
        if isinstance(value, list):
            return value
    elif target is Type.MAP:
        if isinstance(value, dict):
            return value
    elif isinstance(value, Struct):
        return value
    raise DataError(f"Unable to convert {value} ({class_name(value)}) to {to}")


# --- parseString ----------------------------------------------------------------------------------------------------


class _Tokens:
    """``Values.Parser``: the literal cut into tokens at unescaped ``: , { } [ ] "``."""

    __slots__ = ("original", "index", "next_token", "previous_token")

    def __init__(self, original: str) -> None:
        self.original = original
        self.index = 0
        self.next_token: str | None = None
        self.previous_token: str | None = None

    def mark(self) -> int:
        return self.index - (len(self.next_token) if self.next_token is not None else 0)

    def rewind_to(self, position: int) -> None:
        self.index = position
        self.next_token = None
        self.previous_token = None

    def has_next(self) -> bool:
        return self.next_token is not None or self.index < len(self.original)

    def next(self) -> str:
        if self.next_token is not None:
            self.previous_token, self.next_token = self.next_token, None
        else:
            self.previous_token = self._consume()
        return self.previous_token

    def next_n(self, n: int) -> str | None:
        start = self.mark()
        for _ in range(n):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start : self.index]

    def _consume(self) -> str:
        escaped = False
        start = self.index
        text_ = self.original
        while self.index < len(text_):
            ch = text_[self.index]
            if ch == "\\":
                escaped = not escaped
            elif ch in ':,{}[]"':
                if not escaped:
                    if start < self.index:
                        return text_[start : self.index]
                    self.index += 1
                    return text_[start : start + 1]
                escaped = False
            else:
                escaped = False
            self.index += 1
        return text_[start : self.index]

    def can_consume(self, expected: str) -> bool:
        if self.next_token is None:
            if not self.has_next():
                return False
            self.next_token = self._consume()
        while is_blank(self.next_token) and self.index < len(self.original):
            self.next_token = self._consume()
        if java_trim(self.next_token) == expected:
            self.next_token = None
            return True
        return False


class _ValueParser:
    """``Values.ValueParser``: a literal's schema and value (``Values.parseString``)."""

    def __init__(self, literal: str) -> None:
        self.tokens = _Tokens(literal)

    def _single_token_literal(self, embedded: bool, literal: str) -> bool:
        start = self.tokens.mark()
        if self.tokens.can_consume(literal) and (embedded or not self.tokens.has_next()):
            return True
        self.tokens.rewind_to(start)
        return False

    def parse(self, embedded: bool) -> _SchemaAndValue | None:
        tokens = self.tokens
        if not tokens.has_next():
            return None
        if embedded and tokens.can_consume('"'):
            return self._quoted()
        if self._single_token_literal(embedded, "null"):
            return None
        if self._single_token_literal(embedded, "true"):
            return BOOLEAN, True
        if self._single_token_literal(embedded, "false"):
            return BOOLEAN, False
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._array()
            if tokens.can_consume("{"):
                return self._map()
        except DataError:
            tokens.rewind_to(start)
        token = tokens.next()
        if is_blank(token):
            return STRING, token
        return self._next_token(embedded, java_trim(token))

    def _next_token(self, embedded: bool, token: str) -> _SchemaAndValue:
        first = token[0]
        digit = unicodedata.category(first) == "Nd"
        if digit:
            temporal = self._temporal_tokens(token)
            if temporal is not None:
                return temporal
        if digit or first in "+-":
            number = _parse_as_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataError("Failed to parse embedded value")
        return STRING, self.tokens.original

    def _quoted(self) -> _SchemaAndValue:
        parts: list[str] = []
        while self.tokens.has_next():
            if self.tokens.can_consume('"'):
                break
            parts.append(self.tokens.next())
        content = "".join(parts)
        return _parse_as_temporal(content) or (STRING, content)

    def _array(self) -> _SchemaAndValue:
        tokens = self.tokens
        result: list[Any] = []
        merged = _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("]"):
                if merged.common is not None:
                    items = merged.common
                    return Schema(Type.ARRAY, value_schema=items), [_convert_to(items, v) for v in result]
                return Schema(Type.ARRAY), result
            if tokens.can_consume(","):
                raise DataError(f"Unable to parse an empty array element: {tokens.original}")
            element = self.parse(True)
            merged.merge(element)
            result.append(None if element is None else element[1])
            position = tokens.mark()
            if tokens.can_consume("]"):
                tokens.rewind_to(position)
            elif not tokens.can_consume(","):
                raise DataError("Array elements missing ',' delimiter")
        raise DataError(f"Array is missing terminating ']': {tokens.original}")

    def _map(self) -> _SchemaAndValue:
        tokens = self.tokens
        result: dict[Any, Any] = {}
        keys, values = _SchemaMerger(), _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("}"):
                if keys.common is not None and values.common is not None:
                    k, v = keys.common, values.common
                    aligned = {_convert_to(k, key): _convert_to(v, value) for key, value in result.items()}
                    return Schema(Type.MAP, key_schema=k, value_schema=v), aligned
                if keys.common is not None:
                    k = keys.common
                    return Schema(Type.MAP, key_schema=k), {_convert_to(k, key): v for key, v in result.items()}
                return Schema(Type.MAP), result
            if tokens.can_consume(","):
                raise DataError(f"Unable to parse a map entry with no key or value: {tokens.original}")
            key = self.parse(True)
            if key is None or key[1] is None:
                raise DataError(f"Map entry may not have a null key: {tokens.original}")
            if not tokens.can_consume(":"):
                raise DataError(f"Map entry is missing ':' at {tokens.index} in {tokens.original}")
            value = self.parse(True)
            try:
                result[key[1]] = None if value is None else value[1]
            except TypeError:  # a list or map as a key: Java allows it, a Python dict does not
                raise DataError(f"Unsupported map key: {tokens.original}") from None
            tokens.can_consume(",")
            keys.merge(key)
            values.merge(value)
        raise DataError(f"Map is missing terminating '}}': {tokens.original}")

    def _temporal_tokens(self, token: str) -> _SchemaAndValue | None:
        position = self.tokens.mark()
        remainder = self.tokens.next_n(4)
        if remainder is not None:
            temporal = _parse_as_temporal(token + remainder)
            if temporal is not None:
                return temporal
        self.tokens.rewind_to(position)
        return _parse_as_temporal(token)


def _parse_as_temporal(token: str) -> _SchemaAndValue | None:
    token = token.replace("\\:", ":")
    formats = {13: (TIME_SCHEMA, _ISO_TIME), 24: (TIMESTAMP_SCHEMA, _ISO_TIMESTAMP), 10: (DATE_SCHEMA, _ISO_DATE)}
    chosen = formats.get(len(token))
    if chosen is None:
        return None
    millis = chosen[1].parse(token)
    if millis is None:
        return None
    try:
        return chosen[0], timestamp_from_millis(millis)
    except OverflowError:  # beyond Python's datetime: read as text instead
        return None


def _parse_as_number(token: str) -> _SchemaAndValue | None:
    try:
        number = big_decimal(token)
    except ValueError:
        return None
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if number == number.to_integral_value(rounding=decimal.ROUND_FLOOR):
        integral = int(number)
        if -(2**63) <= integral < 2**63:
            for schema, bits in ((INT8, 8), (INT16, 16), (INT32, 32)):
                if -(1 << (bits - 1)) <= integral < (1 << (bits - 1)):
                    return schema, integral
            return INT64, integral
    single = f32_exact(Fraction(number))
    if not math.isinf(single) and exponent != 0:
        return FLOAT32, single
    try:
        double = float(number)
    except OverflowError:
        double = math.inf
    if not math.isinf(double) and exponent != 0:
        return FLOAT64, double
    return Schema(Type.BYTES, name=DECIMAL, version=1, parameters=((DECIMAL_SCALE, str(-exponent)),)), number


class _SchemaMerger:
    """``Values.SchemaMerger``: the common schema of a parsed array's elements or a map's keys or values."""

    __slots__ = ("common", "compatible")

    _WIDER: Final = {Type.INT8: 0, Type.INT16: 1, Type.INT32: 2, Type.INT64: 3, Type.FLOAT32: 4, Type.FLOAT64: 5}

    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True

    def merge(self, latest: _SchemaAndValue | None) -> None:
        if latest is None or latest[0] is None or not self.compatible:
            return
        schema = latest[0]
        if self.common is None:
            self.common = schema
            return
        previous = self.common
        if previous.type is not schema.type:
            ranks = self._WIDER
            if previous.type in ranks and schema.type in ranks:
                self.common = previous if ranks[previous.type] > ranks[schema.type] else schema
            else:
                self.common = None
        elif previous.optional == schema.optional:
            self.common = previous if previous.optional else schema
        elif previous != schema:
            self.common = None
        self.compatible = self.common is not None


def parse_string(literal: str | None) -> _SchemaAndValue:
    """``Values.parseString``: the schema and value of a literal (``None, None`` for null)."""
    if literal is None:
        return None, None
    if not literal:
        return STRING, literal
    parsed = _ValueParser(literal).parse(False)
    return (None, None) if parsed is None else parsed


__all__ = ["as_double", "as_long", "convert_to_string", "date_text", "parse_string"]
