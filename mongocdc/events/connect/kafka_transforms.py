"""Kafka Connect 4.3.1's own single message transforms and predicates (``connect-transforms``), as Connect runs them.

Registered by their Java class names in :data:`TRANSFORMS` and :data:`PREDICATES` (``chain.py`` merges them):
``RegexRouter``, ``TimestampRouter``, ``InsertField``, ``ReplaceField``, ``MaskField``, ``ValueToKey``,
``ExtractField``, ``HoistField``, ``Cast``, ``Flatten``, ``HeaderFrom``, ``InsertHeader``, ``DropHeaders``,
``SetSchemaMetadata``, ``TimestampConverter``, ``Filter`` (each with its ``$Key``/``$Value`` variants where Kafka
has them) and the predicates ``TopicNameMatches``, ``RecordIsTombstone``, ``HasHeaderKey``. Each takes every
option its Java class defines in 4.3.1, refuses what that class's ``ConfigDef`` refuses, and fails (``DataError``)
on the records the Java class throws on, whatever Java exception that is.

Matching Connect byte for byte needs some of the JVM's own behaviour, written here in Python:

* ``java.util.HashMap``'s iteration order (JDK 17) for the maps the schemaless paths build (:class:`_HashMap`): a
  schemaless value is a ``dict`` whose order is the Java map's iteration order, and JsonConverter writes it so.
* Java's numeric conversions (narrowing casts, ``Float``/``Double`` parsing and printing, ``float`` rounding).
* ``java.text.SimpleDateFormat`` in UTC and English, with the hybrid Julian/Gregorian calendar, formatting and
  lenient parsing (:class:`_DateFormat`), for TimestampRouter, TimestampConverter and the dates Connect's
  ``Values`` writes.
* ``Values.parseString`` (InsertHeader's literal) and the ``Values.convertTo*`` MaskField's replacement uses.
* ``SchemaUtil.copySchemaBasics``, ``Requirements`` and ``SchemaBuilder``'s field checks.

Known limits (corners Debezium's records do not reach): a schemaless value remembers no Java class, so an integer
in a schemaless map is taken for a ``Long`` and a float for a ``Double`` (a schemaless value cast to ``float32`` is
written as a double); ``SimpleDateFormat`` parsing knows the zone names ``UTC`` and ``GMT`` only and ignores the
week-based fields; an instant outside Python's years 1 to 9999 fails the record; a ``HashMap`` bin of eight or
more colliding keys is not modelled.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
import struct as _struct
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from mongocdc.events.codec import java_double
from mongocdc.events.connect.base import (
    ConnectConfigError,
    PredicateFactory,
    Transform,
    TransformFactory,
    boolean,
    choice,
    invalid,
    java_regex,
    java_split,
    java_trim,
    listing,
    option,
    text,
)
from mongocdc.events.connect.data import (
    DATE,
    DECIMAL,
    DECIMAL_SCALE,
    TIME,
    TIMESTAMP,
    ConnectRecord,
    DataError,
    Field,
    Header,
    Schema,
    Struct,
    Type,
    millis_of,
    schema_type_of,
    struct_schema,
    timestamp_from_millis,
)
from mongocdc.events.connect.json import java_float

_PREFIX: Final = "org.apache.kafka.connect.transforms."

# --- Java numbers ---------------------------------------------------------------------------------------------

_INT_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


def _wrap(value: int, bits: int) -> int:
    """Two's complement narrowing of an integer (``(int) aLong``, ``BigInteger.intValue``)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _saturate(value: float, bits: int) -> int:
    """``(int)`` / ``(long)`` of a double: NaN is 0, out of range saturates, else truncated toward zero."""
    if value != value:
        return 0
    high = (1 << (bits - 1)) - 1
    if value >= high:
        return high
    if value <= -high - 1:
        return -high - 1
    return int(value)


def _f32(value: float) -> float:
    """``(float) aDouble``: the nearest single-precision value (as a Python float)."""
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


def _f32_exact(value: Fraction) -> float:
    """The single nearest to an exact value, rounded once (``Float.parseFloat``, ``(float) aLong``)."""
    try:
        approx = float(value)
    except OverflowError:
        return math.copysign(math.inf, value)
    single = _f32(approx)
    if math.isinf(single) or Fraction(approx) == value or single == approx:
        return single
    other = _f32_step(single, up=single < approx)
    low, high = sorted((single, other))
    middle = (Fraction(low) + Fraction(high)) / 2
    if Fraction(approx) != middle:  # the double was not a tie between two singles: one rounding was enough
        return single
    return high if value > middle else low


_JAVA_FLOAT: Final = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")


def _is_blank(value: str | None) -> bool:
    return value is None or not java_trim(value)


def _parse_decimal_text(value: str) -> Fraction:
    """``Double.parseDouble``'s syntax (decimal only) as an exact value; ``ValueError`` as NumberFormatException."""
    trimmed = java_trim(value)
    if not _JAVA_FLOAT.fullmatch(trimmed):
        raise ValueError(f'For input string: "{value}"')
    body = trimmed.rstrip("fFdD") if not trimmed.endswith("Infinity") else trimmed
    if body.lstrip("+-") == "NaN":
        return Fraction(0)  # callers check for NaN / Infinity first
    return Fraction(decimal.Decimal(body))


def _parse_double(value: str) -> float:
    trimmed = java_trim(value)
    if _JAVA_FLOAT.fullmatch(trimmed) and trimmed.lstrip("+-") in ("NaN", "Infinity"):
        return float(trimmed.replace("Infinity", "inf"))
    exact = _parse_decimal_text(value)
    try:
        return float(exact)
    except OverflowError:
        return math.copysign(math.inf, exact)


def _parse_float(value: str) -> float:
    trimmed = java_trim(value)
    if _JAVA_FLOAT.fullmatch(trimmed) and trimmed.lstrip("+-") in ("NaN", "Infinity"):
        return float(trimmed.replace("Infinity", "inf"))
    return _f32_exact(_parse_decimal_text(value))


_JAVA_INT: Final = re.compile(r"[+-]?[0-9]+")


def _parse_int(value: str, bits: int) -> int:
    """``Long.parseLong`` / ``Integer.parseInt`` / ``Short.parseShort`` / ``Byte.parseByte``."""
    if not _JAVA_INT.fullmatch(value):
        raise ValueError(f'For input string: "{value}"')
    number = int(value)
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise ValueError(f'Value out of range. Value:"{value}"')
    return number


def _java_number_text(kind: str, value: Any) -> str:
    """``toString`` of a Java number, ``kind`` its class."""
    if kind == "Float":
        return java_float(value)
    if kind == "Double":
        return java_double(value)
    return str(value)


def _to_integer(kind: str, value: Any, bits: int) -> int:
    """``Number.byteValue`` / ``shortValue`` / ``intValue`` / ``longValue`` of a ``kind`` number."""
    if kind in ("Float", "Double"):
        return _wrap(_saturate(value, 32), bits) if bits < 32 else _saturate(value, bits)
    return _wrap(int(value), bits)


def _to_float32(kind: str, value: Any) -> float:
    """``Number.floatValue``."""
    if kind in ("Float", "Double"):
        return _f32(value)
    return _f32_exact(Fraction(value))


def _to_float64(kind: str, value: Any) -> float:
    """``Number.doubleValue`` (a ``BigDecimal`` or ``Long`` rounded once; beyond the doubles, an infinity)."""
    del kind  # every class's doubleValue is the nearest double, which float() gives
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


# --- the Java class of a value --------------------------------------------------------------------------------

_NUMBERS: Final = ("Byte", "Short", "Integer", "Long", "Float", "Double", "BigDecimal")
_KIND_OF_TYPE: Final = {
    Type.INT8: "Byte",
    Type.INT16: "Short",
    Type.INT32: "Integer",
    Type.INT64: "Long",
    Type.FLOAT32: "Float",
    Type.FLOAT64: "Double",
    Type.BOOLEAN: "Boolean",
    Type.STRING: "String",
    Type.BYTES: "byte[]",
    Type.ARRAY: "List",
    Type.MAP: "Map",
    Type.STRUCT: "Struct",
}
_CLASS_NAMES: Final = {
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
    "List": "java.util.ArrayList",
    "Map": "java.util.HashMap",
    "Struct": "org.apache.kafka.connect.data.Struct",
}


def _kind(schema: Schema | None, value: Any) -> str:
    """The Java class of ``value``: from its schema when it has one (the Java class the schema asks for), else from
    the Python type (an integer as a ``Long``, a float as a ``Double``, as in a map JsonConverter reads)."""
    if schema is not None:
        if schema.name in (DATE, TIME, TIMESTAMP):
            return "Date"
        if schema.name == DECIMAL:
            return "BigDecimal"
        return _KIND_OF_TYPE[schema.type]
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Long"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, decimal.Decimal):
        return "BigDecimal"
    if isinstance(value, str):
        return "String"
    if isinstance(value, (bytes, bytearray)):
        return "byte[]"
    if isinstance(value, dt.datetime):
        return "Date"
    if isinstance(value, list):
        return "List"
    if isinstance(value, dict):
        return "Map"
    if isinstance(value, Struct):
        return "Struct"
    return type(value).__name__


def _class_name(value: Any) -> str:
    """``value.getClass().getName()`` as Connect's messages print it (``null`` for null)."""
    if value is None:
        return "null"
    kind = _kind(None, value)
    return _CLASS_NAMES.get(kind, kind)


# --- java.util.HashMap ------------------------------------------------------------------------------------------


def _java_hash(key: Any) -> int:
    """``key.hashCode()`` as an unsigned 32-bit value (``String``, ``Long``, ``Boolean``, ``Double``, null)."""
    if key is None:
        return 0
    if isinstance(key, str):
        h = 0
        data = key.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
        return h
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        bits = key & 0xFFFFFFFFFFFFFFFF
        return (bits ^ (bits >> 32)) & 0xFFFFFFFF
    if isinstance(key, float):
        raw: int = _struct.unpack(">Q", _struct.pack(">d", key))[0]
        return (raw ^ (raw >> 32)) & 0xFFFFFFFF
    return 0


def _table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at or above ``capacity`` (1 for 0 or 1)."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


class _HashMap:
    """A ``java.util.HashMap`` (JDK 17) as far as its iteration order goes: bins by ``hash ^ (hash >>> 16)`` masked
    by the table size, each bin in insertion order; the table grows as Java's does. :meth:`to_dict` is the map
    in that order (a bin of eight or more colliding keys, a tree in Java, is not modelled)."""

    __slots__ = ("_entries", "_threshold", "_capacity")

    def __init__(self, initial_capacity: int | None = None) -> None:
        self._entries: dict[Any, Any] = {}
        self._threshold = 0 if initial_capacity is None else _table_size_for(initial_capacity)
        self._capacity = 0

    @classmethod
    def copy_of(cls, source: Mapping[Any, Any]) -> _HashMap:
        """``new HashMap<>(source)``: pre-sized from the source's size, then filled in its order."""
        copy = cls()
        if source:
            wanted = int(len(source) / 0.75 + 1.0)
            if wanted > copy._threshold:
                copy._threshold = _table_size_for(wanted)
        for key, value in source.items():
            copy.put(key, value)
        return copy

    def put(self, key: Any, value: Any) -> None:
        if self._capacity == 0:
            self._resize()
        if key in self._entries:
            self._entries[key] = value
            return
        self._entries[key] = value
        if len(self._entries) > self._threshold:
            self._resize()

    def remove(self, key: Any) -> None:
        self._entries.pop(key, None)

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

    def to_dict(self) -> dict[Any, Any]:
        mask = max(self._capacity, 1) - 1

        def bin_of(position_key: tuple[int, Any]) -> tuple[int, int]:
            h = _java_hash(position_key[1])
            return ((h ^ (h >> 16)) & mask, position_key[0])

        ordered = sorted(enumerate(self._entries), key=bin_of)
        return {key: self._entries[key] for _, key in ordered}


def _hash_set_order(items: Iterable[str]) -> list[str]:
    """``new HashSet<>(collection)``'s iteration order."""
    values = list(items)
    table = _HashMap(max(int(len(values) / 0.75) + 1, 16))
    for item in values:
        table.put(item, True)
    return list(table.to_dict())


# --- options as Connect's ConfigDef reads them ------------------------------------------------------------------


def _required_text(options: Mapping[str, str], name: str) -> str:
    value = option(options, name, required=True)
    assert value is not None
    return value


def _int_option(options: Mapping[str, str], name: str) -> int | None:
    """An ``INT`` option without a default (``Integer.parseInt`` of the trimmed value)."""
    value = option(options, name)
    if value is None:
        return None
    try:
        return _parse_int(value, 32)
    except ValueError:
        raise invalid(name, value, "Not a number of type INT") from None


def _non_empty_list(options: Mapping[str, str], name: str) -> list[str]:
    """A required ``LIST`` option with ``NonEmptyListValidator``."""
    _required_text(options, name)
    values = listing(options, name)
    if not values:
        raise invalid(name, "[]", "Empty list")
    return values


def _non_empty_string(name: str, value: str | None) -> None:
    """``ConfigDef.NonEmptyString``."""
    if value is not None and not value:
        raise invalid(name, value, "String must be non-empty")


def _valid_string(options: Mapping[str, str], name: str, allowed: Sequence[str], default: str | None = None) -> str:
    """``ConfigDef.ValidString.in(...)`` (case-sensitive); a required option when ``default`` is ``None``."""
    value = _required_text(options, name) if default is None else text(options, name, default)
    if value not in allowed:
        raise invalid(name, value, f"String must be one of: {', '.join(allowed)}")
    return value


def _regex(name: str, pattern: str, reason: str = "Invalid regex: ") -> re.Pattern[str]:
    """A ``java.util.regex.Pattern`` (``RegexValidator``: a pattern that does not compile is refused)."""
    try:
        return java_regex(pattern)
    except re.error as exc:
        raise invalid(name, pattern, f"{reason}{exc}") from None


def _expand(match: re.Match[str], replacement: str) -> str:
    """``Matcher.appendExpandedReplacement``: ``$n`` (the longest group number that exists), ``${name}``, ``\\x``;
    ``DataError`` where Java throws (an illegal or missing group reference)."""
    out: list[str] = []
    groups = match.re.groups
    cursor = 0
    while cursor < len(replacement):
        ch = replacement[cursor]
        if ch == "\\":
            cursor += 1
            if cursor == len(replacement):
                raise DataError("character to be escaped is missing")
            out.append(replacement[cursor])
            cursor += 1
        elif ch == "$":
            cursor += 1
            if cursor == len(replacement):
                raise DataError("Illegal group reference: group index is missing")
            if replacement[cursor] == "{":
                cursor += 1
                start = cursor
                while cursor < len(replacement) and replacement[cursor].isascii() and replacement[cursor].isalnum():
                    cursor += 1
                name = replacement[start:cursor]
                if not name:
                    raise DataError("named capturing group has 0 length name")
                if cursor == len(replacement) or replacement[cursor] != "}":
                    raise DataError("named capturing group is missing trailing '}'")
                cursor += 1
                if name not in match.re.groupindex:
                    raise DataError(f"No group with name {{{name}}}")
                number = match.re.groupindex[name]
            else:
                digit = replacement[cursor]
                if not ("0" <= digit <= "9"):
                    raise DataError("Illegal group reference")
                number = int(digit)
                cursor += 1
                while cursor < len(replacement) and "0" <= replacement[cursor] <= "9":
                    longer = number * 10 + int(replacement[cursor])
                    if longer > groups:
                        break
                    number = longer
                    cursor += 1
                if number > groups:
                    raise DataError(f"No group {number}")
            group = match.group(number)
            if group is not None:
                out.append(group)
        else:
            out.append(ch)
            cursor += 1
    return "".join(out)


# --- schemas and Requirements ---------------------------------------------------------------------------------


def _basics(source: Schema) -> dict[str, Any]:
    """``SchemaUtil.copySchemaBasics``: the name, version, doc and parameters (not optionality nor default)."""
    return {"name": source.name, "version": source.version, "doc": source.doc, "parameters": source.parameters}


def _build_struct(fields: Iterable[tuple[str, Schema]], basics: Mapping[str, Any] | None = None) -> Schema:
    """``SchemaBuilder.struct()`` with ``fields``: an empty or repeated field name is refused, as the builder does."""
    listed = list(fields)
    for name, _ in listed:
        if not name:
            raise DataError("fieldName cannot be null.")
    built = struct_schema(listed)
    return built.with_(**basics) if basics else built


def _require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {_class_name(value)}")
    return value


def _require_map(value: Any, purpose: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise DataError(f"Only Map objects supported in absence of schema for [{purpose}], found: {_class_name(value)}")
    return value


def _get(value: Struct, name: str, with_default: bool) -> Any:
    """``Struct.get`` (a null field's default) or ``getWithoutDefault``: ``replace.null.with.default``."""
    return value.get(name) if with_default else value.get_without_default(name)


def _logical(kind: Type, name: str, optional: bool = False) -> Schema:
    return Schema(kind, optional=optional, name=name, version=1)


_DATE_SCHEMA: Final = _logical(Type.INT32, DATE)
_TIME_SCHEMA: Final = _logical(Type.INT32, TIME)
_TIMESTAMP_SCHEMA: Final = _logical(Type.INT64, TIMESTAMP)
_MILLIS_PER_DAY: Final = 86_400_000


# --- the calendar: java.util.GregorianCalendar in UTC -----------------------------------------------------------

_CUTOVER_DAY: Final = -141_427
"""1582-10-15, the first Gregorian day, in days since 1970-01-01 (before it the calendar is Julian)."""
_EPOCH_JDN: Final = 2_440_588


def _gregorian_jdn(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045


def _julian_jdn(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083


def _civil_from_jdn(jdn: int, gregorian: bool) -> tuple[int, int, int]:
    if gregorian:
        a = jdn + 32044
        b = (4 * a + 3) // 146097
        c = a - 146097 * b // 4
    else:
        b = 0
        c = jdn + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = 100 * b + d - 4800 + m // 10
    return year, month, day


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a (lenient: any month or day) date in the hybrid calendar; ``year`` is proleptic
    (0 is 1 BC)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    days = _gregorian_jdn(year, month, 1) - _EPOCH_JDN + day - 1
    if days < _CUTOVER_DAY:
        days = _julian_jdn(year, month, 1) - _EPOCH_JDN + day - 1
    return days


@dataclass(frozen=True, slots=True)
class _Fields:
    """A UTC instant's calendar fields (``GregorianCalendar``): the proleptic ``year`` (0 is 1 BC)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    milli: int
    weekday: int
    """1 = Sunday … 7 = Saturday (``Calendar.DAY_OF_WEEK``)."""
    day_of_year: int


def _fields(millis: int) -> _Fields:
    days, in_day = divmod(millis, _MILLIS_PER_DAY)
    gregorian = days >= _CUTOVER_DAY
    year, month, day = _civil_from_jdn(days + _EPOCH_JDN, gregorian)
    first = _days_from_civil(year, 1, 1)
    return _Fields(
        year,
        month,
        day,
        in_day // 3_600_000,
        in_day // 60_000 % 60,
        in_day // 1000 % 60,
        in_day % 1000,
        (days + 4) % 7 + 1,
        days - first + 1,
    )


def _week_of_year(f: _Fields) -> tuple[int, int]:
    """``WEEK_OF_YEAR`` and the week year, weeks starting on Sunday, the week of 1 January the first."""
    next_first = _days_from_civil(f.year + 1, 1, 1)
    days = _days_from_civil(f.year, f.month, f.day)
    if days >= next_first - (next_first + 4) % 7:
        return 1, f.year + 1
    jan1_weekday = (_days_from_civil(f.year, 1, 1) + 4) % 7
    return (f.day_of_year - 1 + jan1_weekday) // 7 + 1, f.year


# --- java.text.SimpleDateFormat (UTC, English) ------------------------------------------------------------------

_PATTERN_LETTERS: Final = "GyMdkHmsSEDFwWahKzZYuXL"
_NUMERIC_LETTERS: Final = "ydkHmsSDFwWhKuY"
_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS: Final = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


class _DateFormat:
    """``java.text.SimpleDateFormat`` of a pattern, in UTC and English (the JVM's ``en`` default): ``format`` and
    lenient ``parse``, as TimestampRouter, TimestampConverter and ``Values`` use it. ``ValueError`` for a pattern
    Java refuses (``IllegalArgumentException``)."""

    __slots__ = ("pattern", "_items")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._items = self._compile(pattern)

    @staticmethod
    def _compile(pattern: str) -> list[tuple[str, int] | str]:
        items: list[tuple[str, int] | str] = []

        def literal(chunk: str) -> None:
            if items and isinstance(items[-1], str):
                items[-1] += chunk
            else:
                items.append(chunk)

        i = 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "'":
                if i + 1 < len(pattern) and pattern[i + 1] == "'":
                    literal("'")
                    i += 2
                    continue
                j = i + 1
                quoted: list[str] = []
                while True:
                    if j >= len(pattern):
                        raise ValueError("Unterminated quote")
                    if pattern[j] == "'":
                        if j + 1 < len(pattern) and pattern[j + 1] == "'":
                            quoted.append("'")
                            j += 2
                            continue
                        break
                    quoted.append(pattern[j])
                    j += 1
                literal("".join(quoted))
                i = j + 1
            elif ("a" <= ch <= "z") or ("A" <= ch <= "Z"):
                if ch not in _PATTERN_LETTERS:
                    raise ValueError(f"Illegal pattern character '{ch}'")
                j = i
                while j < len(pattern) and pattern[j] == ch:
                    j += 1
                if ch == "X" and j - i > 3:
                    raise ValueError(f"invalid ISO 8601 format: length={j - i}")
                items.append((ch, j - i))
                i = j
            else:
                literal(ch)
                i += 1
        return items

    # formatting

    def format(self, millis: int) -> str:
        f = _fields(millis)
        out: list[str] = []
        for item in self._items:
            if isinstance(item, str):
                out.append(item)
            else:
                out.append(self._field_text(f, *item))
        return "".join(out)

    @staticmethod
    def _field_text(f: _Fields, letter: str, count: int) -> str:
        year_of_era = f.year if f.year > 0 else 1 - f.year
        if letter == "G":
            return "AD" if f.year > 0 else "BC"
        if letter in "yY":
            year = year_of_era
            if letter == "Y":
                week_year = _week_of_year(f)[1]
                year = week_year if week_year > 0 else 1 - week_year
            if count == 2:
                return f"{year % 100:02d}"
            return f"{year:0{count}d}"
        if letter in "ML":
            if count >= 4:
                return _MONTHS[f.month - 1]
            if count == 3:
                return _MONTHS[f.month - 1][:3]
            return f"{f.month:0{count}d}"
        if letter == "E":
            name = _WEEKDAYS[f.weekday - 1]
            return name if count >= 4 else name[:3]
        if letter == "a":
            return "AM" if f.hour < 12 else "PM"
        if letter == "z":
            return "Coordinated Universal Time" if count >= 4 else "UTC"
        if letter == "Z":
            return "+0000"
        if letter == "X":
            return "Z"
        number = {
            "d": f.day,
            "H": f.hour,
            "k": f.hour or 24,
            "K": f.hour % 12,
            "h": f.hour % 12 or 12,
            "m": f.minute,
            "s": f.second,
            "S": f.milli,
            "D": f.day_of_year,
            "F": (f.day - 1) // 7 + 1,
            "u": (f.weekday + 5) % 7 + 1,
            "w": _week_of_year(f)[0],
            "W": (f.day - 1 + (f.weekday - 1 - (f.day - 1)) % 7) // 7 + 1,
        }[letter]
        return f"{number:0{count}d}"

    # parsing

    def parse(self, source: str) -> int | None:
        """The instant ``source`` starts with (``parse(String)``: trailing text is ignored), or ``None``."""
        values: dict[str, int] = {}
        order: list[str] = []
        ambiguous = False
        position = 0

        def put(name: str, value: int) -> None:
            values[name] = value
            if name in order:
                order.remove(name)
            order.append(name)

        for index, item in enumerate(self._items):
            if isinstance(item, str):
                if source[position : position + len(item)] != item:
                    return None
                position += len(item)
                continue
            letter, count = item
            following = self._items[index + 1] if index + 1 < len(self._items) else None
            obey = isinstance(following, tuple) and (
                following[0] in _NUMERIC_LETTERS or (following[0] in "ML" and following[1] <= 2)
            )
            minus_next = isinstance(following, str) and following.startswith("-")
            parsed = self._parse_field(source, position, letter, count, obey, minus_next, put)
            if parsed is None:
                return None
            position, flag = parsed
            ambiguous = ambiguous or flag
        if position == 0:
            return None
        return self._instant(values, order, ambiguous)

    def _parse_field(
        self,
        source: str,
        start: int,
        letter: str,
        count: int,
        obey: bool,
        minus_next: bool,
        put: Callable[[str, int], None],
    ) -> tuple[int, bool] | None:
        position = start
        while True:
            if position >= len(source):
                return None
            if source[position] not in " \t":
                break
            position += 1
        actual_start = position
        if letter in _NUMERIC_LETTERS or (letter in "ML" and count <= 2):
            limit = start + count if obey else len(source)
            if obey and limit > len(source):
                return None
            number = _parse_number(source[:limit], position)
            if number is None:
                return None
            value, position = number
            if (
                minus_next
                and value < 0
                and (
                    (position < len(source) and source[position] != "-")
                    or (position == len(source) and source[position - 1] == "-")
                )
            ):
                value, position = -value, position - 1
            if letter in "yY":
                ambiguous = False
                if count <= 2 and position - actual_start == 2 and source[actual_start:position].isdigit():
                    century_start = _century_start_year()
                    ambiguous = value == century_start % 100
                    value += century_start // 100 * 100 + (100 if value < century_start % 100 else 0)
                put("year", value)
                return position, ambiguous
            field, adjusted = {
                "M": ("month", value - 1),
                "L": ("month", value - 1),
                "d": ("day", value),
                "H": ("hour", value),
                "k": ("hour", 0 if value == 24 else value),
                "K": ("hour12", value),
                "h": ("hour12", 0 if value == 12 else value),
                "m": ("minute", value),
                "s": ("second", value),
                "S": ("milli", value),
                "D": ("day_of_year", value),
            }.get(letter, ("ignored", value))
            put(field, adjusted)
            return position, False
        if letter in "ML":
            found = _match_name(source, position, _MONTHS) or _match_name(source, position, [m[:3] for m in _MONTHS])
            if found is None:
                return None
            put("month", found[0])
            return found[1], False
        if letter == "E":
            found = _match_name(source, position, _WEEKDAYS) or _match_name(
                source, position, [d[:3] for d in _WEEKDAYS]
            )
            return None if found is None else (found[1], False)
        if letter == "a":
            found = _match_name(source, position, ["AM", "PM"])
            if found is None:
                return None
            put("am_pm", found[0])
            return found[1], False
        if letter == "G":
            found = _match_name(source, position, ["BC", "AD"])
            if found is None:
                return None
            put("era", found[0])
            return found[1], False
        zone = _parse_zone(source, position, letter, count)
        if zone is None:
            return None
        put("offset", zone[0])
        return zone[1], False

    @staticmethod
    def _instant(values: Mapping[str, int], order: Sequence[str], ambiguous: bool) -> int:
        year = values.get("year", 1970)
        if values.get("era", 1) == 0:
            year = 1 - year
        if "day_of_year" in values and order.index("day_of_year") > max(
            (order.index(k) for k in ("month", "day") if k in values), default=-1
        ):
            days = _days_from_civil(year, 1, 1) + values["day_of_year"] - 1
        else:
            days = _days_from_civil(year, values.get("month", 0) + 1, values.get("day", 1))
        hour = values.get("hour", 0)
        if "hour12" in values and (
            "hour" not in values or order.index("hour12") > order.index("hour") or "am_pm" in values
        ):
            hour = values["hour12"] + 12 * values.get("am_pm", 0)
        millis = (
            days * _MILLIS_PER_DAY
            + hour * 3_600_000
            + values.get("minute", 0) * 60_000
            + values.get("second", 0) * 1000
            + values.get("milli", 0)
            - values.get("offset", 0)
        )
        if ambiguous and millis < _century_start_millis():
            shifted = dict(values)
            shifted["year"] = values["year"] + 100
            return _DateFormat._instant(shifted, order, False)
        return millis


def _century_start_millis() -> int:
    """``SimpleDateFormat``'s default century: two-digit years fall within 80 years before and 20 after now."""
    now = int(time.time() * 1000)
    f = _fields(now)
    return (_days_from_civil(f.year - 80, f.month, f.day)) * _MILLIS_PER_DAY + now % _MILLIS_PER_DAY


def _century_start_year() -> int:
    return _fields(_century_start_millis()).year


def _parse_number(source: str, position: int) -> tuple[int, int] | None:
    """``DecimalFormat.parse`` as SimpleDateFormat configures it (integers only, no grouping, a leading ``-``)."""
    negative = source.startswith("-", position)
    index = position + 1 if negative else position
    start = index
    while index < len(source) and unicodedata.category(source[index]) == "Nd":
        index += 1
    if index == start:
        return None
    number = int("".join(str(unicodedata.digit(ch)) for ch in source[start:index]))
    if source.startswith("E", index):
        exponent_at = index + 1
        minus = source.startswith("-", exponent_at)
        digits_at = exponent_at + 1 if minus else exponent_at
        end = digits_at
        while end < len(source) and source[end].isdigit():
            end += 1
        if end > digits_at:
            exponent = int(source[digits_at:end])
            number = number // 10**exponent if minus else number * 10**exponent
            index = end
    number = -number if negative else number
    value = _wrap(number, 32) if -(2**63) <= number < 2**63 else _saturate(float(number), 32)
    return value, index


def _match_name(source: str, position: int, names: Sequence[str]) -> tuple[int, int] | None:
    """``SimpleDateFormat.matchString``: the longest name ``source`` has at ``position``, ignoring case."""
    best: tuple[int, int] | None = None
    for index, name in enumerate(names):
        matches = bool(name) and source[position : position + len(name)].lower() == name.lower()
        if matches and (best is None or len(name) > best[1] - position):
            best = (index, position + len(name))
    return best


def _parse_zone(source: str, position: int, letter: str, count: int) -> tuple[int, int] | None:
    """A zone offset in millis and the position after it (``z``, ``Z``: ``+hhmm``, ``GMT+hh:mm``, ``UTC``; ``X``:
    ``Z`` or ``+hh``, ``+hhmm``, ``+hh:mm`` by count)."""
    ch = source[position]
    if letter == "X":
        if ch == "Z":
            return 0, position + 1
        if ch not in "+-":
            return None
        return _numeric_zone(source, position + 1, 1 if ch == "+" else -1, count, count == 3)
    if ch in "+-":
        return _numeric_zone(source, position + 1, 1 if ch == "+" else -1, 0, False)
    if source[position : position + 3].upper() == "GMT":
        after = position + 3
        if after < len(source) and source[after] in "+-":
            return _numeric_zone(source, after + 1, 1 if source[after] == "+" else -1, 0, True)
        return 0, after
    found = _match_name(source, position, ["Coordinated Universal Time", "UTC", "Greenwich Mean Time"])
    return None if found is None else (0, found[1])


def _numeric_zone(source: str, index: int, sign: int, count: int, colon: bool) -> tuple[int, int] | None:
    """``SimpleDateFormat.subParseNumericZone``."""

    def at(i: int) -> str:
        return source[i] if i < len(source) else ""

    if not at(index).isdigit():
        return None
    hours = int(at(index))
    index += 1
    if at(index).isdigit():
        hours = hours * 10 + int(at(index))
        index += 1
    elif count > 0 or not colon:
        return None
    if hours > 23:
        return None
    minutes = 0
    if count != 1:
        if colon:
            if at(index) != ":":
                return None
            index += 1
        if not (at(index).isdigit() and at(index + 1).isdigit()):
            return None
        minutes = int(source[index : index + 2])
        index += 2
        if minutes > 59:
            return None
    return sign * (hours * 60 + minutes) * 60_000, index


def _date_format(name: str, pattern: str) -> _DateFormat:
    try:
        return _DateFormat(pattern)
    except ValueError as exc:
        raise ConnectConfigError(
            f"TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: {pattern}"
            f" ({exc})"
        ) from None


# --- Connect's Values --------------------------------------------------------------------------------------------

_ISO_DATE: Final = _DateFormat("yyyy-MM-dd")
_ISO_TIME: Final = _DateFormat("HH:mm:ss.SSS'Z'")
_ISO_TIMESTAMP: Final = _DateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")


def _date_text(value: dt.datetime) -> str:
    """``Values.dateFormatFor(date).format(date)`` (the JVM's zone is UTC): before a day past the epoch a time,
    a whole day a date, else a timestamp."""
    millis = millis_of(value)
    if millis < _MILLIS_PER_DAY:
        return _ISO_TIME.format(millis)
    if millis % _MILLIS_PER_DAY == 0:
        return _ISO_DATE.format(millis)
    return _ISO_TIMESTAMP.format(millis)


def _as_long(kind: str, value: Any, schema: Schema | None) -> int:
    """``Values.asLong``."""
    if kind in _NUMBERS:
        return _to_integer(kind, value, 64)
    if kind == "String":
        try:
            return _wrap(int(_big_decimal(value)), 64)
        except ValueError:
            pass
    if schema is not None and kind == "Date" and schema.name in (DATE, TIME, TIMESTAMP):
        millis = millis_of(value)
        return millis // _MILLIS_PER_DAY if schema.name == DATE else millis
    raise DataError(f"Unable to convert {value} ({_class_name(value)}) to a number")


def _as_double(kind: str, value: Any, schema: Schema | None) -> float:
    """``Values.asDouble``."""
    if kind in _NUMBERS:
        return _to_float64(kind, value)
    if kind == "String":
        try:
            return float(_big_decimal(value))
        except ValueError:
            pass
        except OverflowError:
            return math.inf
    return float(_as_long(kind, value, schema))


_BIG_DECIMAL: Final = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _big_decimal(value: str) -> decimal.Decimal:
    """``new BigDecimal(text)``; ``ValueError`` as NumberFormatException."""
    if not _BIG_DECIMAL.fullmatch(value):
        raise ValueError(f"Character array is missing \"exponent\" mark 'e' or 'E'. ({value})")
    return decimal.Decimal(value)


_SchemaAndValue = tuple[Schema | None, Any]
_INT8: Final = Schema(Type.INT8)
_INT16: Final = Schema(Type.INT16)
_INT32: Final = Schema(Type.INT32)
_INT64: Final = Schema(Type.INT64)
_FLOAT32: Final = Schema(Type.FLOAT32)
_FLOAT64: Final = Schema(Type.FLOAT64)
_BOOLEAN: Final = Schema(Type.BOOLEAN)
_STRING: Final = Schema(Type.STRING)
_OPTIONAL_STRING: Final = Schema(Type.STRING, optional=True)
_OPTIONAL_INT32: Final = Schema(Type.INT32, optional=True)
_OPTIONAL_INT64: Final = Schema(Type.INT64, optional=True)


def _convert_to(to: Schema, value: Any) -> Any:
    """``Values.convertTo(toSchema, null, value)`` for the schemas ``parseString`` aligns elements with."""
    if value is None:
        if to.optional:
            return None
        raise DataError("Unable to convert a null value to a schema that requires a value")
    kind = _kind(None, value)
    target = to.type
    if target in _INT_BITS:
        if target is Type.INT32 and to.name in (DATE, TIME) or target is Type.INT64 and to.name == TIMESTAMP:
            if isinstance(value, dt.datetime):
                return value
            number = _as_long(kind, value, None)
            return timestamp_from_millis(number * _MILLIS_PER_DAY if to.name == DATE else number)
        if kind == "Boolean":
            raise DataError(f"Unable to convert {value} ({_class_name(value)}) to a number")
        return _wrap(_as_long(kind, value, None), _INT_BITS[target])
    if target is Type.FLOAT32:
        return _f32(_as_double(kind, value, None))
    if target is Type.FLOAT64:
        return _as_double(kind, value, None)
    if target is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        return _as_long(kind, value, None) != 0
    if target is Type.STRING:
        return _values_text(value)
    if target is Type.BYTES:
        if isinstance(value, (bytes, decimal.Decimal)):
            return value
        raise DataError(f"Unable to convert {value} ({_class_name(value)}) to {to}")
    if target is Type.ARRAY:
        if isinstance(value, list):
            return value
    elif target is Type.MAP:
        if isinstance(value, dict):
            return value
    elif isinstance(value, Struct):
        return value
    raise DataError(f"Unable to convert {value} ({_class_name(value)}) to {to}")


def _values_text(value: Any, embedded: bool = False) -> str:
    """``Values.convertToString`` (``append``) of a value whose numbers are typed as ``parseString`` types them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, (int, decimal.Decimal)):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if embedded else value
    if isinstance(value, (bytes, bytearray)):
        encoded = base64.b64encode(value).decode("ascii")
        return f'"{encoded}"' if embedded else encoded
    if isinstance(value, list):
        return "[" + ",".join(_values_text(item, True) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_values_text(k, True) + ":" + _values_text(v, True) for k, v in value.items()) + "}"
    if isinstance(value, dt.datetime):
        return _date_text(value)
    raise DataError(f"Failed to serialize unexpected value type {type(value).__name__}: {value}")


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
        while _is_blank(self.next_token) and self.index < len(self.original):
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
            return _BOOLEAN, True
        if self._single_token_literal(embedded, "false"):
            return _BOOLEAN, False
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._array()
            if tokens.can_consume("{"):
                return self._map()
        except DataError:
            tokens.rewind_to(start)
        token = tokens.next()
        if _is_blank(token):
            return _STRING, token
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
        return _STRING, self.tokens.original

    def _quoted(self) -> _SchemaAndValue:
        parts: list[str] = []
        while self.tokens.has_next():
            if self.tokens.can_consume('"'):
                break
            parts.append(self.tokens.next())
        content = "".join(parts)
        return _parse_as_temporal(content) or (_STRING, content)

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
    formats = {13: (_TIME_SCHEMA, _ISO_TIME), 24: (_TIMESTAMP_SCHEMA, _ISO_TIMESTAMP), 10: (_DATE_SCHEMA, _ISO_DATE)}
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
        number = _big_decimal(token)
    except ValueError:
        return None
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if number == number.to_integral_value(rounding=decimal.ROUND_FLOOR):
        integral = int(number)
        if -(2**63) <= integral < 2**63:
            for schema, bits in ((_INT8, 8), (_INT16, 16), (_INT32, 32)):
                if -(1 << (bits - 1)) <= integral < (1 << (bits - 1)):
                    return schema, integral
            return _INT64, integral
    single = _f32_exact(Fraction(number))
    if not math.isinf(single) and exponent != 0:
        return _FLOAT32, single
    try:
        double = float(number)
    except OverflowError:
        double = math.inf
    if not math.isinf(double) and exponent != 0:
        return _FLOAT64, double
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
        return _STRING, literal
    parsed = _ValueParser(literal).parse(False)
    return (None, None) if parsed is None else parsed


# --- the transforms -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Side:
    """The part of the record a ``$Key`` or ``$Value`` variant works on."""

    key: bool

    def schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema if self.key else record.value_schema

    def value(self, record: ConnectRecord) -> Any:
        return record.key if self.key else record.value

    def record(self, record: ConnectRecord, schema: Schema | None, value: Any, **more: Any) -> ConnectRecord:
        if self.key:
            return record.new_record(key_schema=schema, key=value, **more)
        return record.new_record(value_schema=schema, value=value, **more)


KEY: Final = _Side(True)
VALUE: Final = _Side(False)


class RegexRouter:
    """``RegexRouter``: a topic the whole ``regex`` matches becomes ``Matcher.replaceFirst(replacement)``."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.regex = _regex("regex", _required_text(options, "regex"))
        self.replacement = _required_text(options, "replacement")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if self.regex.fullmatch(record.topic) is None:
            return record
        first = self.regex.search(record.topic)
        assert first is not None
        topic = record.topic[: first.start()] + _expand(first, self.replacement) + record.topic[first.end() :]
        return record.new_record(topic=topic)


class TimestampRouter:
    """``TimestampRouter``: ``topic.format`` with ``${topic}`` and ``${timestamp}`` (the record's timestamp in UTC as
    the ``SimpleDateFormat`` pattern ``timestamp.format``); a record without a timestamp fails."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.topic_format = text(options, "topic.format", "${topic}-${timestamp}")
        self.timestamp_format = text(options, "timestamp.format", "yyyyMMdd")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record}")
        try:  # Connect builds the format on first use, so a bad pattern fails the record, not the configuration
            stamp = _DateFormat(self.timestamp_format).format(record.timestamp)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", stamp)
        return record.new_record(topic=topic)


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
            updated = _HashMap.copy_of(_require_map(value, "field insertion"))
            if self.topic:
                updated.put(self.topic.name, record.topic)
            if self.partition and record.partition is not None:
                updated.put(self.partition.name, record.partition)
            if self.offset:
                raise DataError("Only SinkRecord supported for [field insertion], found: SourceRecord")
            if self.timestamp and record.timestamp is not None:
                updated.put(self.timestamp.name, record.timestamp)
            if self.static and self.static_value is not None:
                updated.put(self.static.name, self.static_value)
            return self.side.record(record, None, updated.to_dict())
        struct = _require_struct(value, "field insertion")
        fields = [(f.name, f.schema) for f in struct.schema.fields]
        for spec, required, optional in (
            (self.topic, _STRING, _OPTIONAL_STRING),
            (self.partition, _INT32, _OPTIONAL_INT32),
            (self.offset, _INT64, _OPTIONAL_INT64),
            (self.timestamp, _TIMESTAMP_SCHEMA, _TIMESTAMP_SCHEMA.with_(optional=True)),
            (self.static, _STRING, _OPTIONAL_STRING),
        ):
            if spec is not None:
                fields.append((spec.name, optional if spec.optional else required))
        schema = _build_struct(fields, _basics(struct.schema))
        updated_struct = Struct(schema)
        for f in struct.schema.fields:
            updated_struct.put(f.name, _get(struct, f.name, self.with_default))
        if self.topic:
            updated_struct.put(self.topic.name, record.topic)
        if self.partition and record.partition is not None:
            updated_struct.put(self.partition.name, record.partition)
        if self.offset:
            raise DataError("Only SinkRecord supported for [field insertion], found: SourceRecord")
        if self.timestamp and record.timestamp is not None:
            updated_struct.put(self.timestamp.name, timestamp_from_millis(record.timestamp))
        if self.static and self.static_value is not None:
            updated_struct.put(self.static.name, self.static_value)
        return self.side.record(record, schema, updated_struct)


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
            updated = _HashMap(len(source))
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
        kind = _kind(schema, value)
        if self.replacement is not None:
            return self._replaced(kind, value, self.replacement)
        if kind in _MASKS:
            return _MASKS[kind]
        if kind == "Date":
            return timestamp_from_millis(0)
        if kind == "List":
            return []
        if kind == "Map":
            return {}
        raise DataError(f"Cannot mask value of type: class {_CLASS_NAMES.get(kind, kind)}")

    @staticmethod
    def _replaced(kind: str, value: Any, replacement: str) -> Any:
        try:
            if kind == "String":
                return replacement
            if kind in ("Byte", "Short", "Integer", "Long"):
                bits = {"Byte": 8, "Short": 16, "Integer": 32, "Long": 64}[kind]
                return _wrap(_as_long("String", replacement, None), bits)
            if kind == "Float":
                return _f32(_as_double("String", replacement, None))
            if kind == "Double":
                return _as_double("String", replacement, None)
            if kind == "BigDecimal":
                return _big_decimal(replacement)
        except ValueError:
            raise DataError(f"Unable to convert {replacement} (class java.lang.String) to number") from None
        raise DataError(f"Cannot mask value of type class {_CLASS_NAMES.get(kind, kind)} with custom replacement.")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        schema = self.side.schema(record)
        if schema is None:
            source = _require_map(value, "mask fields")
            updated = _HashMap.copy_of(source)
            for name in _hash_set_order(self.fields):
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
            key = _HashMap(len(self.fields))
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
            hoisted = _HashMap()
            hoisted.put(self.field, value)
            return self.side.record(record, None, hoisted.to_dict())
        wrapper = _build_struct([(self.field, schema)])
        return self.side.record(record, wrapper, Struct(wrapper).put(self.field, value))


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
        self.casts = _HashMap()
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
            updated = _HashMap.copy_of(source)
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
        if millis % _MILLIS_PER_DAY:
            raise DataError("Kafka Connect Date type should not have any time fields set to non-zero values.")
        return millis // _MILLIS_PER_DAY, "Integer"
    if schema.name == TIME:
        if not 0 <= millis < _MILLIS_PER_DAY:
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
                f"Cast transformation was passed a value of type class {_class_name(value)} which is not supported"
                " by Connect's data API"
            )
        source = inferred
    if source not in _CAST_INPUT:
        raise DataError(
            f"Cast transformation does not support casting from {source.java_name}; supported types are "
            f"{_types_text(_CAST_INPUT)}"
        )
    kind = _kind(schema, value)
    if kind == "Float":  # a Java Float holds a single; a value read as a double is rounded to one first
        value = _f32(value)
    if schema is not None and schema.name is not None and target is not Type.STRING and kind == "Date":
        value, kind = _encode_date(schema, value)
    try:
        if target is Type.STRING:
            if kind == "Date":
                return _date_text(value)
            if kind == "byte[]":
                return base64.b64encode(value).decode("ascii")
            if kind == "Boolean":
                return "true" if value else "false"
            if kind in _NUMBERS:
                return _java_number_text(kind, value)
            return str(value)
        if kind == "Boolean":
            flag = bool(value)
            if target is Type.BOOLEAN:
                return flag
            if target in (Type.FLOAT32, Type.FLOAT64):
                return 1.0 if flag else 0.0
            return 1 if flag else 0
        if kind == "String":
            if target in _INT_BITS:
                return _parse_int(value, _INT_BITS[target])
            if target is Type.FLOAT32:
                return _parse_float(value)
            if target is Type.FLOAT64:
                return _parse_double(value)
            return value.lower() == "true"
        if kind in _NUMBERS:
            if target in _INT_BITS:
                return _to_integer(kind, value, _INT_BITS[target])
            if target is Type.FLOAT32:
                return _to_float32(kind, value)
            if target is Type.FLOAT64:
                return _to_float64(kind, value)
            return _to_integer(kind, value, 64) != 0
    except ValueError:
        raise DataError(f"Value ({value}) was out of range for requested data type") from None
    raise DataError(f"Unexpected type in Cast transformation: class {_CLASS_NAMES.get(kind, kind)}")


_FLAT: Final = (
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
    Type.ARRAY,
)


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
                    f"Flatten transformation was passed a value of type class {_class_name(item)} which is not "
                    "supported by Connect's data API"
                )
            if kind in _FLAT:
                out[name] = item
            elif kind is Type.MAP:
                self._flatten_map(item, name, out)
            else:
                raise DataError(
                    f"Flatten transformation does not support class {_class_name(item)} for record without "
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


def _header_check(schema: Schema | None, value: Any) -> None:
    """``ConnectHeaders.checkSchemaMatches``: a header's value must be of its schema's Java class."""
    if schema is None:
        return
    if value is None:
        if not schema.optional:
            raise DataError(f"A null value requires an optional schema but was {schema}")
        return
    kind = schema.type
    ok = {
        Type.BYTES: isinstance(value, (bytes, bytearray))
        or (isinstance(value, decimal.Decimal) and schema.name == DECIMAL),
        Type.STRING: isinstance(value, str),
        Type.BOOLEAN: isinstance(value, bool),
        Type.FLOAT32: isinstance(value, float),
        Type.FLOAT64: isinstance(value, float),
        Type.ARRAY: isinstance(value, list),
        Type.MAP: isinstance(value, dict),
        Type.STRUCT: isinstance(value, Struct),
    }.get(kind)
    if ok is None:  # the integer types, and the logical dates among them
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, dt.datetime)
            and (schema.name in (DATE, TIME) and kind is Type.INT32 or schema.name == TIMESTAMP and kind is Type.INT64)
        )
    if not ok:
        raise DataError(f"The value {value} is not compatible with the schema {schema}")


class HeaderFrom:
    """``HeaderFrom$Key``/``$Value``: copies or moves the named fields into headers (``fields`` and ``headers``
    pair up), each header with its field's schema."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.fields = _non_empty_list(options, "fields")
        self.headers = _non_empty_list(options, "headers")
        if len(self.fields) != len(self.headers):
            raise ConnectConfigError("'fields' config must have the same number of elements as 'headers' config.")
        self.move = _valid_string(options, "operation", ["move", "copy"]) == "move"
        self.with_default = boolean(options, "replace.null.with.default", True)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.side.schema(record)
        value = self.side.value(record)
        purpose = f"header {'move' if self.move else 'copy'}"
        headers = list(record.headers)
        if schema is None:
            source = _require_map(value, purpose)
            updated = _HashMap.copy_of(source)
            for name, header in zip(self.fields, self.headers, strict=True):
                if self.move:
                    updated.remove(name)
                headers.append(Header(header, None, source.get(name)))
            return self.side.record(record, None, updated.to_dict(), headers=tuple(headers))
        struct = _require_struct(value, purpose)
        updated_schema, updated_value = schema, struct
        if self.move:
            moved = set(self.fields)
            updated_schema = _build_struct(
                ((f.name, f.schema) for f in schema.fields if f.name not in moved), _basics(schema)
            )
            updated_value = Struct(updated_schema)
            for f in updated_schema.fields:
                updated_value.put(f.name, _get(struct, f.name, self.with_default))
        for name, header in zip(self.fields, self.headers, strict=True):
            field_value = _get(struct, name, self.with_default) if struct.schema.field(name) is not None else None
            found = schema.field(name)
            if found is None:
                raise DataError(f"Cannot read the schema of field {name}: the record has no such field")
            _header_check(found.schema, field_value)
            headers.append(Header(header, found.schema, field_value))
        return self.side.record(record, updated_schema, updated_value, headers=tuple(headers))


class InsertHeader:
    """``InsertHeader``: adds header ``header`` with ``value.literal`` as ``Values.parseString`` reads it (a number,
    boolean, date, array or map literal gets its type; anything else is a string)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.header = _required_text(options, "header")
        schema, value = parse_string(_required_text(options, "value.literal"))
        self.literal = Header(self.header, schema, value)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        return record.new_record(headers=(*record.headers, self.literal))


class DropHeaders:
    """``DropHeaders``: removes every header whose key ``headers`` names."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.headers = set(_non_empty_list(options, "headers"))

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        return record.new_record(headers=tuple(h for h in record.headers if h.key not in self.headers))


class SetSchemaMetadata:
    """``SetSchemaMetadata$Key``/``$Value``: replaces the schema's name and/or version (a struct is rebuilt on the
    new schema); a record without a schema fails unless its key or value is null, and so does one whose schema is
    not a struct's (Connect 4.3.1 copies the schema's field list, which only a struct schema has)."""

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.name = option(options, "schema.name")
        self.version = _int_option(options, "schema.version")
        self.with_default = boolean(options, "replace.null.with.default", True)
        if self.name is None and self.version is None:
            raise ConnectConfigError("Neither schema name nor version configured")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        schema = self.side.schema(record)
        if value is None and schema is None:
            return record
        if schema is None:
            raise DataError("Schema required for [updating schema metadata]")
        if schema.type is not Type.STRUCT:  # Connect copies ``schema.fields()``, which only a struct has
            raise DataError("Cannot list fields on non-struct type")
        updated = schema.with_(
            name=self.name if self.name is not None else schema.name,
            version=self.version if self.version is not None else schema.version,
        )
        if isinstance(value, Struct):
            rebuilt = Struct(updated)
            for f in updated.fields:
                rebuilt.put(f.name, _get(value, f.name, self.with_default))
            value = rebuilt
        return self.side.record(record, updated, value)


_UNITS: Final = {"seconds": 1000, "milliseconds": 1, "microseconds": 1000, "nanoseconds": 1_000_000}


def _div(value: int, divisor: int) -> int:
    """Java's integer division (toward zero)."""
    quotient = abs(value) // divisor
    return quotient if value >= 0 else -quotient


def _saturating_multiply(value: int, factor: int) -> int:
    """``TimeUnit.toMillis``-style conversion: saturates at ``Long.MIN_VALUE``/``MAX_VALUE``."""
    return max(-(2**63), min(2**63 - 1, value * factor))


class TimestampConverter:
    """``TimestampConverter$Key``/``$Value``: converts the whole key or value (``field`` empty) or one top-level
    field between ``string`` (``format``, a ``SimpleDateFormat`` pattern in UTC), ``unix`` (a long in
    ``unix.precision``), and Connect's ``Date``, ``Time`` and ``Timestamp``."""

    _TARGETS: Final = ("string", "unix", "Date", "Time", "Timestamp")

    def __init__(self, options: Mapping[str, str], side: _Side) -> None:
        self.side = side
        self.field = text(options, "field", "")
        self.target = _valid_string(options, "target.type", self._TARGETS)
        pattern = text(options, "format", "")
        self.precision = _valid_string(options, "unix.precision", list(_UNITS)[::-1], "milliseconds")
        self.with_default = boolean(options, "replace.null.with.default", True)
        if self.target == "string" and _is_blank(pattern):
            raise ConnectConfigError(
                "TimestampConverter requires format option to be specified when using string timestamps"
            )
        self.format = None if _is_blank(pattern) else _date_format("format", pattern)

    def _target_schema(self, optional: bool) -> Schema:
        schema = {
            "string": _STRING,
            "unix": _INT64,
            "Date": _DATE_SCHEMA,
            "Time": _TIME_SCHEMA,
            "Timestamp": _TIMESTAMP_SCHEMA,
        }[self.target]
        return schema.with_(optional=True) if optional else schema

    @staticmethod
    def _source_type(schema: Schema) -> str:
        if schema.name == TIMESTAMP:
            return "Timestamp"
        if schema.name == DATE:
            return "Date"
        if schema.name == TIME:
            return "Time"
        if schema.type is Type.STRING:
            return "string"
        if schema.type is Type.INT64:
            return "unix"
        raise DataError(f"Schema {schema} does not correspond to a known timestamp type format")

    def _convert(self, value: Any, source: str | None) -> Any:
        if value is None:
            return None
        if source is None:
            if isinstance(value, dt.datetime):
                source = "Timestamp"
            elif isinstance(value, int) and not isinstance(value, bool):
                source = "unix"
            elif isinstance(value, str):
                source = "string"
            else:
                raise DataError(f"TimestampConverter does not support class {_class_name(value)} objects as timestamps")
        millis = self._to_millis(value, source)
        return self._from_millis(millis)

    def _to_millis(self, value: Any, source: str) -> int:
        if source == "string":
            if not isinstance(value, str):
                raise DataError(f"Expected string timestamp to be a String, but found class {_class_name(value)}")
            if self.format is None:
                raise DataError("TimestampConverter has no format to parse a string timestamp with")
            parsed = self.format.parse(value)
            if parsed is None:
                raise DataError(
                    f"Could not parse timestamp: value ({value}) does not match pattern ({self.format.pattern})"
                )
            return parsed
        if source == "unix":
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected Unix timestamp to be a Long, but found class {_class_name(value)}")
            if self.precision == "seconds":
                return _saturating_multiply(value, 1000)
            return _div(value, _UNITS[self.precision])
        if not isinstance(value, dt.datetime):
            raise DataError(f"Expected {source} to be a java.util.Date, but found class {_class_name(value)}")
        return millis_of(value)

    def _from_millis(self, millis: int) -> Any:
        if self.target == "string":
            assert self.format is not None
            return self.format.format(millis)
        if self.target == "unix":
            if self.precision == "seconds":
                return _div(millis, 1000)
            return _saturating_multiply(millis, _UNITS[self.precision])
        if self.target == "Date":
            millis -= millis % _MILLIS_PER_DAY
        elif self.target == "Time":
            millis %= _MILLIS_PER_DAY
        try:
            return timestamp_from_millis(millis)
        except OverflowError:
            raise DataError(f"Timestamp {millis} is out of the range mongocdc represents") from None

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.side.schema(record)
        value = self.side.value(record)
        if schema is None:
            if value is None or not self.field:
                return self.side.record(record, None, self._convert(value, None))
            source = _require_map(value, "converting timestamp formats")
            updated = _HashMap.copy_of(source)
            updated.put(self.field, self._convert(source.get(self.field), None))
            return self.side.record(record, None, updated.to_dict())
        if not self.field:
            return self.side.record(
                record, self._target_schema(schema.optional), self._convert(value, self._source_type(schema))
            )
        struct = None if value is None else _require_struct(value, "converting timestamp formats")
        fields = [
            (f.name, self._target_schema(f.schema.optional) if f.name == self.field else f.schema)
            for f in schema.fields
        ]
        updated_schema = _build_struct(fields, _basics(schema))
        if schema.optional:
            updated_schema = updated_schema.with_(optional=True)
        if schema.default is not None:
            updated_schema = updated_schema.with_(default=self._struct(schema.default, updated_schema))
        return self.side.record(
            record, updated_schema, None if struct is None else self._struct(struct, updated_schema)
        )

    def _struct(self, value: Struct, schema: Schema) -> Struct:
        updated = Struct(schema)
        for f in value.schema.fields:
            original = _get(value, f.name, self.with_default)
            if f.name == self.field:
                original = self._convert(original, self._source_type(f.schema))
            updated.put(f.name, original)
        return updated


class Filter:
    """``Filter``: drops every record (used with a predicate)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        del options

    def apply(self, record: ConnectRecord) -> None:
        del record


# --- the predicates -----------------------------------------------------------------------------------------------


class TopicNameMatches:
    """``TopicNameMatches``: the whole topic matches ``pattern``."""

    def __init__(self, options: Mapping[str, str]) -> None:
        value = _required_text(options, "pattern")
        _non_empty_string("pattern", value)
        self.pattern = _regex("pattern", value)

    def test(self, record: ConnectRecord) -> bool:
        return self.pattern.fullmatch(record.topic) is not None


class RecordIsTombstone:
    """``RecordIsTombstone``: the value is null."""

    def __init__(self, options: Mapping[str, str]) -> None:
        del options

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None


class HasHeaderKey:
    """``HasHeaderKey``: at least one header is called ``name``."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.name = _required_text(options, "name")
        _non_empty_string("name", self.name)

    def test(self, record: ConnectRecord) -> bool:
        return any(h.key == self.name for h in record.headers)


# --- registration ---------------------------------------------------------------------------------------------


def _sided(name: str, cls: Callable[[Mapping[str, str], _Side], Transform]) -> dict[str, TransformFactory]:
    """The ``$Key`` and ``$Value`` variants of a transform."""
    return {
        f"{_PREFIX}{name}$Key": lambda options: cls(options, KEY),
        f"{_PREFIX}{name}$Value": lambda options: cls(options, VALUE),
    }


TRANSFORMS: Final[dict[str, TransformFactory]] = {
    _PREFIX + "RegexRouter": RegexRouter,
    _PREFIX + "TimestampRouter": TimestampRouter,
    _PREFIX + "ValueToKey": ValueToKey,
    _PREFIX + "InsertHeader": InsertHeader,
    _PREFIX + "DropHeaders": DropHeaders,
    _PREFIX + "Filter": Filter,
    **_sided("InsertField", InsertField),
    **_sided("ReplaceField", ReplaceField),
    **_sided("MaskField", MaskField),
    **_sided("ExtractField", ExtractField),
    **_sided("HoistField", HoistField),
    **_sided("Cast", Cast),
    **_sided("Flatten", Flatten),
    **_sided("HeaderFrom", HeaderFrom),
    **_sided("SetSchemaMetadata", SetSchemaMetadata),
    **_sided("TimestampConverter", TimestampConverter),
}

PREDICATES: Final[dict[str, PredicateFactory]] = {
    _PREFIX + "predicates.TopicNameMatches": TopicNameMatches,
    _PREFIX + "predicates.RecordIsTombstone": RecordIsTombstone,
    _PREFIX + "predicates.HasHeaderKey": HasHeaderKey,
}

__all__ = ["PREDICATES", "TRANSFORMS", "parse_string"]
