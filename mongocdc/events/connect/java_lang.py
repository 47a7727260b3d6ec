"""What Java computes for Kafka Connect's values, where the bytes Connect writes depend on it (pure; JDK 17, the JVM of
Kafka Connect 4.3.1 and Debezium 3.6.1).

* The Java class Connect holds a value in (:func:`java_class`): the one its schema asks for (``Integer`` for an
  ``INT32``, ``Date`` for a logical date, ``BigDecimal`` for a decimal), else the one JsonConverter reads a
  schemaless value into (an integer is a ``Long``, a float a ``Double``, a map a ``HashMap``); and its
  ``getClass().getName()`` (:func:`class_name`), which Connect's messages print.
* ``java.lang``'s numbers: narrowing casts (``(int) aLong``, ``(long) aDouble``), ``float`` rounding,
  ``Number.intValue()`` and its kin, ``Integer.parseInt`` … ``Double.parseDouble``, ``new BigDecimal(text)``, and
  their ``toString`` (:func:`number_text`).
* ``hashCode`` of the classes whose hash the value alone decides (:func:`hash_code`), and ``java.util.HashMap``'s
  iteration order (:class:`HashMap`), the order Connect writes a map in.

A Python value remembers no Java class, so a schemaless integer is taken for a ``Long`` and a float for a
``Double`` (as JsonConverter reads them); a ``HashMap`` bin of more than eight keys in a table of 64 or more,
a tree in Java, is not modelled.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct as _struct
from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from mongocdc.events.codec import java_double
from mongocdc.events.connect.base import java_trim
from mongocdc.events.connect.data import DATE, DECIMAL, TIME, TIMESTAMP, Schema, Type, schema_type_of
from mongocdc.events.connect.json import java_float
from mongocdc.events.java import java_string_hash

# --- the Java class of a value --------------------------------------------------------------------------------

_CLASS_OF_TYPE: Final = {
    Type.INT8: "Byte",
    Type.INT16: "Short",
    Type.INT32: "Integer",
    Type.INT64: "Long",
    Type.FLOAT32: "Float",
    Type.FLOAT64: "Double",
    Type.BOOLEAN: "Boolean",
    Type.STRING: "String",
    Type.BYTES: "byte[]",
    Type.ARRAY: "ArrayList",
    Type.MAP: "HashMap",
    Type.STRUCT: "Struct",
}
_QUALIFIED: Final = {
    "Byte": "java.lang.Byte",
    "Short": "java.lang.Short",
    "Integer": "java.lang.Integer",
    "Long": "java.lang.Long",
    "Float": "java.lang.Float",
    "Double": "java.lang.Double",
    "BigDecimal": "java.math.BigDecimal",
    "Boolean": "java.lang.Boolean",
    "String": "java.lang.String",
    "byte[]": "[B",
    "Date": "java.util.Date",
    "ArrayList": "java.util.ArrayList",
    "HashMap": "java.util.HashMap",
    "Struct": "org.apache.kafka.connect.data.Struct",
}
NUMBERS: Final = ("Byte", "Short", "Integer", "Long", "Float", "Double", "BigDecimal")
"""The classes of :func:`java_class` that are ``java.lang.Number``\\ s."""
INT_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


def java_class(schema: Schema | None, value: Any) -> str:
    """The simple name of the Java class Connect holds ``value`` in: from its schema when it has one (``Integer`` for
    an ``INT32``, ``Date`` for a ``Timestamp``, …), else from the Python type, as JsonConverter reads a schemaless
    value (an integer as a ``Long``, a float as a ``Double``)."""
    if schema is not None:
        if schema.name in (DATE, TIME, TIMESTAMP):
            return "Date"
        if schema.name == DECIMAL:
            return "BigDecimal"
        return _CLASS_OF_TYPE[schema.type]
    if isinstance(value, decimal.Decimal):
        return "BigDecimal"
    if isinstance(value, dt.datetime):
        return "Date"
    kind = schema_type_of(value)
    return type(value).__name__ if kind is None else _CLASS_OF_TYPE[kind]


def qualified_name(kind: str) -> str:
    """``getName()`` of the class :func:`java_class` names ``kind`` (``java.lang.Integer``, ``[B``)."""
    return _QUALIFIED.get(kind, kind)


def class_name(value: Any) -> str:
    """``value.getClass().getName()`` of a schemaless value, as Connect's messages print it (``null`` for null)."""
    return "null" if value is None else qualified_name(java_class(None, value))


# --- numbers --------------------------------------------------------------------------------------------------


def wrap(value: int, bits: int) -> int:
    """Two's complement narrowing of an integer (``(int) aLong``, ``BigInteger.intValue``)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def saturate(value: float, bits: int) -> int:
    """``(int)`` / ``(long)`` of a double: NaN is 0, out of range saturates, else truncated toward zero."""
    if value != value:
        return 0
    high = (1 << (bits - 1)) - 1
    if value >= high:
        return high
    if value <= -high - 1:
        return -high - 1
    return int(value)


def f32(value: float) -> float:
    """``(float) aDouble``: the nearest single-precision value (as a Python float), an infinity beyond the floats."""
    try:
        single: float = _struct.unpack("f", _struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return single


def _f32_step(value: float, up: bool) -> float:
    """The next single-precision value above (``up``) or below ``value`` (a finite single)."""
    bits: int = _struct.unpack("<i", _struct.pack("<f", value))[0]
    if value == 0.0:
        bits = 1 if up else -(2**31) + 1
    elif (value > 0) == up:
        bits += 1
    else:
        bits -= 1
    stepped: float = _struct.unpack("<f", _struct.pack("<i", bits))[0]
    return stepped


def f32_exact(value: Fraction) -> float:
    """The single nearest to an exact value, rounded once (``Float.parseFloat``, ``(float) aLong``)."""
    try:
        approx = float(value)
    except OverflowError:
        return math.copysign(math.inf, value)
    single = f32(approx)
    if math.isinf(single) or Fraction(approx) == value or single == approx:
        return single
    other = _f32_step(single, up=single < approx)
    low, high = sorted((single, other))
    middle = (Fraction(low) + Fraction(high)) / 2
    if Fraction(approx) != middle:  # the double was not a tie between two singles: one rounding was enough
        return single
    return high if value > middle else low


_JAVA_FLOAT: Final = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")


def _parse_decimal_text(value: str) -> Fraction:
    """``Double.parseDouble``'s syntax (decimal only) as an exact value; ``ValueError`` as NumberFormatException."""
    trimmed = java_trim(value)
    if not _JAVA_FLOAT.fullmatch(trimmed):
        raise ValueError(f'For input string: "{value}"')
    body = trimmed.rstrip("fFdD") if not trimmed.endswith("Infinity") else trimmed
    if body.lstrip("+-") == "NaN":
        return Fraction(0)  # callers check for NaN / Infinity first
    return Fraction(decimal.Decimal(body))


def parse_double(value: str) -> float:
    """``Double.parseDouble``; ``ValueError`` as NumberFormatException."""
    trimmed = java_trim(value)
    if _JAVA_FLOAT.fullmatch(trimmed) and trimmed.lstrip("+-") in ("NaN", "Infinity"):
        return float(trimmed.replace("Infinity", "inf"))
    exact = _parse_decimal_text(value)
    try:
        return float(exact)
    except OverflowError:
        return math.copysign(math.inf, exact)


def parse_float(value: str) -> float:
    """``Float.parseFloat``; ``ValueError`` as NumberFormatException."""
    trimmed = java_trim(value)
    if _JAVA_FLOAT.fullmatch(trimmed) and trimmed.lstrip("+-") in ("NaN", "Infinity"):
        return float(trimmed.replace("Infinity", "inf"))
    return f32_exact(_parse_decimal_text(value))


_JAVA_INT: Final = re.compile(r"[+-]?[0-9]+")


def parse_int(value: str, bits: int) -> int:
    """``Long.parseLong`` / ``Integer.parseInt`` / ``Short.parseShort`` / ``Byte.parseByte``."""
    if not _JAVA_INT.fullmatch(value):
        raise ValueError(f'For input string: "{value}"')
    number = int(value)
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise ValueError(f'Value out of range. Value:"{value}"')
    return number


_BIG_DECIMAL: Final = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def big_decimal(value: str) -> decimal.Decimal:
    """``new BigDecimal(text)``; ``ValueError`` as NumberFormatException."""
    if not _BIG_DECIMAL.fullmatch(value):
        raise ValueError(f"Character array is missing \"exponent\" mark 'e' or 'E'. ({value})")
    return decimal.Decimal(value)


def number_text(kind: str, value: Any) -> str:
    """``toString`` of a Java number, ``kind`` its class (a ``BigDecimal`` has no negative zero)."""
    if kind == "Float":
        return java_float(value)
    if kind == "Double":
        return java_double(value)
    if kind == "BigDecimal":
        return str(value.copy_abs() if value.is_zero() else value)
    return str(value)


def to_integer(kind: str, value: Any, bits: int) -> int:
    """``Number.byteValue`` / ``shortValue`` / ``intValue`` / ``longValue`` of a ``kind`` number."""
    if kind in ("Float", "Double"):
        return wrap(saturate(value, 32), bits) if bits < 32 else saturate(value, bits)
    return wrap(int(value), bits)


def to_float32(kind: str, value: Any) -> float:
    """``Number.floatValue``."""
    if kind in ("Float", "Double"):
        return f32(value)
    return f32_exact(Fraction(value))


def to_float64(value: Any) -> float:
    """``Number.doubleValue`` (a ``BigDecimal`` or ``Long`` rounded once; beyond the doubles, an infinity): every
    class's is the nearest double, which ``float()`` gives."""
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


# --- hashCode and java.util.HashMap -----------------------------------------------------------------------------


def hash_code(kind: str, value: Any) -> int | None:
    """``value.hashCode()`` as an unsigned 32-bit number, ``kind`` its class (:func:`java_class`), for the classes
    whose hash the value alone decides (strings, numbers but ``BigDecimal``, booleans); ``None`` for the others."""
    if kind == "String":
        return java_string_hash(value)
    if kind in ("Byte", "Short", "Integer"):
        return int(value) & 0xFFFFFFFF
    if kind == "Boolean":
        return 1231 if value else 1237
    if kind == "Float":
        return int(_struct.unpack(">I", _struct.pack(">f", f32(value)))[0])
    if kind in ("Long", "Double"):
        bits = int(value) if kind == "Long" else _struct.unpack(">q", _struct.pack(">d", value))[0]
        bits &= 0xFFFFFFFFFFFFFFFF
        return (bits ^ (bits >> 32)) & 0xFFFFFFFF
    return None


def _table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at or above ``capacity`` (1 for 0 or 1)."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


_TREEIFY_THRESHOLD: Final = 8
_MIN_TREEIFY_CAPACITY: Final = 64


class HashMap:
    """A ``java.util.HashMap`` (JDK 17) as far as its iteration order goes: bins by ``hash ^ (hash >>> 16)`` masked
    by the table size, each bin in insertion order; the table grows as Java's does, past its threshold and when a
    bin passes eight keys while the table is under 64 (``treeifyBin``). The keys hash as the Java class
    ``key_schema`` asks for (:func:`java_class`), null as 0. :meth:`to_dict` is the map in that order, or in
    insertion order when a key's hash is not modelled (:func:`hash_code`)."""

    __slots__ = ("_entries", "_spread", "_bins", "_threshold", "_capacity", "_key_schema")

    def __init__(self, initial_capacity: int | None = None, key_schema: Schema | None = None) -> None:
        self._entries: dict[Any, Any] = {}
        self._spread: dict[Any, int | None] = {}
        """Each key's ``hash ^ (hash >>> 16)`` (``None`` when not modelled)."""
        self._bins: Counter[int] = Counter()
        self._threshold = 0 if initial_capacity is None else _table_size_for(initial_capacity)
        self._capacity = 0
        self._key_schema = key_schema

    @classmethod
    def copy_of(cls, source: Mapping[Any, Any]) -> HashMap:
        """``new HashMap<>(source)``: pre-sized from the source's size, then filled in its order."""
        copy = cls()
        if source:
            wanted = int(len(source) / 0.75 + 1.0)
            if wanted > copy._threshold:
                copy._threshold = _table_size_for(wanted)
        for key, value in source.items():
            copy.put(key, value)
        return copy

    def _spread_of(self, key: Any) -> int | None:
        if key is None:
            return 0
        h = hash_code(java_class(self._key_schema, key), key)
        return None if h is None else h ^ (h >> 16)

    def put(self, key: Any, value: Any) -> None:
        if self._capacity == 0:
            self._resize()
        if key in self._entries:
            self._entries[key] = value
            return
        self._entries[key] = value
        spread = self._spread[key] = self._spread_of(key)
        if spread is not None:
            index = spread & (self._capacity - 1)
            self._bins[index] += 1
            if self._bins[index] > _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY:
                self._resize()
        if len(self._entries) > self._threshold:
            self._resize()

    def remove(self, key: Any) -> None:
        if key in self._entries:
            del self._entries[key]
            spread = self._spread.pop(key)
            if spread is not None:
                self._bins[spread & (self._capacity - 1)] -= 1

    def _resize(self) -> None:
        old_capacity, old_threshold = self._capacity, self._threshold
        new_threshold = 0
        if old_capacity > 0:
            new_capacity = old_capacity << 1
            if old_capacity >= 16:
                new_threshold = old_threshold << 1
        elif old_threshold > 0:
            new_capacity = old_threshold
        else:
            new_capacity, new_threshold = 16, 12
        if new_threshold == 0:
            new_threshold = int(new_capacity * 0.75)
        self._capacity, self._threshold = new_capacity, new_threshold
        mask = new_capacity - 1
        self._bins = Counter(spread & mask for spread in self._spread.values() if spread is not None)

    def to_dict(self) -> dict[Any, Any]:
        mask = max(self._capacity, 1) - 1
        bins: dict[Any, int] = {}
        for key, spread in self._spread.items():
            if spread is None:
                return dict(self._entries)
            bins[key] = spread & mask
        return {key: self._entries[key] for key in sorted(self._entries, key=bins.__getitem__)}


def hash_set_order(items: Iterable[str]) -> list[str]:
    """``new HashSet<>(collection)``'s iteration order."""
    values = list(items)
    table = HashMap(max(int(len(values) / 0.75) + 1, 16))
    for item in values:
        table.put(item, True)
    return list(table.to_dict())


__all__ = [
    "INT_BITS",
    "NUMBERS",
    "HashMap",
    "big_decimal",
    "class_name",
    "f32",
    "f32_exact",
    "hash_code",
    "hash_set_order",
    "java_class",
    "number_text",
    "parse_double",
    "parse_float",
    "parse_int",
    "qualified_name",
    "saturate",
    "to_float32",
    "to_float64",
    "to_integer",
    "wrap",
]
