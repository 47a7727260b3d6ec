"""Typed columns (``--columns``) from the documents' JSON, as SQL text built once per schema.

Debezium 3.6 writes ``after`` in the MongoDB Java driver's *strict* JSON: every Int64 as
``{"$numberLong": "5"}``, Decimal128 as ``{"$numberDecimal": "1.50"}``, dates as
``{"$date": <epoch millis>}``, ObjectIds as ``{"$oid": "…"}``, binaries as
``{"$binary": "<base64>", "$type": "00"}`` and doubles as Java prints them (``1.0E300``, bare
``NaN``/``Infinity``/``-Infinity``, which Spark's JSON reader takes with ``allowNonNumericNumbers``).
Older topics (mongocdc before 0.2) hold relaxed extended JSON: plain numbers, ``{"$date": "<ISO-8601>"}``,
``{"$binary": {"base64": …, "subType": …}}``, ``{"$numberDouble": "NaN"}``; canonical extended JSON
nests ``{"$date": {"$numberLong": "…"}}``. Spark's JSON reader turns every one of those objects into
``NULL`` for a numeric, timestamp or binary column, so the document is read with each such leaf as a
string (Spark then gives the leaf's JSON text: ``{"$numberLong":"5"}``, ``5``, ``"NaN"``) and each leaf
is converted by an expression of its own:

* integers (``TINYINT`` … ``BIGINT``): ``$numberLong``/``$numberInt``/``$numberDouble``/``$numberDecimal``
  unwrapped; a double with a fractional part or out of range is ``NULL`` (never truncated);
* ``FLOAT``/``DOUBLE``/``DECIMAL``: the same, with ``NaN``/``Infinity`` for the floating types;
* ``TIMESTAMP``: ``$date`` as epoch milliseconds (also nested in ``$numberLong``) or an ISO-8601 string,
  a plain ISO-8601 string, and a plain number as seconds (as Spark reads numbers);
  ``TIMESTAMP_NTZ`` and ``DATE``: a ``$date`` in UTC, a plain string as Spark casts it;
* ``BINARY``: ``$binary`` (strict or relaxed) or a plain base64 string;
* ``STRING``: ``$oid``, ``$symbol`` and the number wrappers unwrapped; any other object or array stays
  its JSON text, as Spark's reader gives it;
* structs, arrays and maps are converted field by field, element by element.

A value that does not convert is ``NULL`` (``try_cast``: never an error, with or without ANSI mode).
The one ambiguity: Spark gives a JSON string's *content*, so a string field whose text is exactly an
extended JSON wrapper (``{"$oid":"…"}``) reads as the value it spells.

The SQL has no backslashes (character classes instead), so it means the same whatever
``spark.sql.parser.escapedStringLiterals`` says.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

JSON_OPTIONS = {"allowNonNumericNumbers": "true"}
"""Java's ``NaN``, ``Infinity`` and ``-Infinity`` are bare tokens in Debezium's documents (Spark's default too)."""

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_FRACTIONAL = (FloatType, DoubleType, DecimalType)
_CONVERTED = (*_INTEGRAL, *_FRACTIONAL, StringType, TimestampType, TimestampNTZType, DateType, BinaryType)

_EPOCH_NTZ = "TIMESTAMP_NTZ '1970-01-01 00:00:00'"
_MAX_MILLIS = 9_223_372_036_854_775
"""Dates beyond this many milliseconds from the epoch overflow Spark's microsecond timestamps."""
_MAX_SECONDS = _MAX_MILLIS // 1000


def _space(pattern: str) -> str:
    """A regular expression for compact JSON that also matches with spaces between the tokens.

    ``pattern`` uses ``~`` where JSON allows blanks; no backslashes anywhere (``[{]``, ``[$]``).
    """
    return "^" + pattern.replace("~", "[ ]*") + "$"


def _lit(text: str) -> str:
    """A SQL string literal of a pattern (which holds no quote and no backslash, so nothing to escape)."""
    assert "'" not in text and "\\" not in text, text
    return f"'{text}'"


_SPECIAL = '"(NaN|-?Infinity)"'
"""How Spark gives a bare ``NaN``/``Infinity``/``-Infinity`` leaf read as a string: quoted."""
_NUMBER = _space(f'(?:[{{]~"[$]number(?:Long|Int|Double|Decimal)"~:~"([^"]*)"~[}}]|{_SPECIAL})')
"""A number wrapper or a quoted ``NaN``; ``$1$2`` is the number's text."""
_STRING = _space(
    '(?:[{]~"[$]oid"~:~"([0-9a-fA-F]{24})"~[}]|[{]~"[$]number(?:Long|Int|Double|Decimal)"~:~"([^"]*)"~[}]'
    f'|[{{]~"[$]symbol"~:~"([^"]*)"~[}}]|{_SPECIAL})'
)
"""The wrappers a string column unwraps; ``$1$2$3$4`` is the text."""
_DATE_MILLIS = _space('[{]~"[$]date"~:~(?:(-?[0-9]+)|[{]~"[$]numberLong"~:~"(-?[0-9]+)"~[}])~[}]')
"""A strict (``{"$date": <millis>}``) or canonical (``{"$date": {"$numberLong": "<millis>"}}``) date: ``$1$2``."""
_DATE_TEXT = _space('[{]~"[$]date"~:~"([^"]*)"~[}]')
"""A relaxed date, ``{"$date": "<ISO-8601>"}``: ``$1``."""
_BINARY = _space(
    '[{]~"[$]binary"~:~(?:"([A-Za-z0-9+/=]*)"~,~"[$]type"~:~"[0-9a-fA-F]{1,2}"'
    '|[{]~"base64"~:~"([A-Za-z0-9+/=]*)"~,~"subType"~:~"[0-9a-fA-F]{1,2}"~[}])~[}]'
)
"""A strict (``{"$binary": "<base64>", "$type": "00"}``) or relaxed binary: ``$1$2`` is the base64."""
_PLAIN_NUMBER = "^-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$"


def raw_schema(data_type: DataType) -> DataType:
    """The schema the document is read with: every leaf :func:`convert` handles read as its JSON text."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, raw_schema(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(raw_schema(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(data_type.keyType, raw_schema(data_type.valueType), True)
    if isinstance(data_type, _CONVERTED):
        return StringType()
    return data_type


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _replace(text: str, pattern: str, groups: int) -> str:
    """``text``, or its groups when it matches ``pattern`` as a whole (a group that took no part is empty)."""
    return f"regexp_replace({text}, {_lit(pattern)}, '{''.join(f'${n}' for n in range(1, groups + 1))}')"


def _is_object(text: str) -> str:
    return f"startswith({text}, '{{')"


def _integral(text: str, sql_type: str) -> str:
    """An integer, also from a double without a fractional part; ``NULL`` when it does not fit."""
    number = _replace(text, _NUMBER, 2)
    as_double = f"try_cast({number} AS DOUBLE)"
    whole = f"try_cast(CASE WHEN {as_double} = floor({as_double}) THEN {as_double} END AS {sql_type})"
    return f"coalesce(try_cast({number} AS {sql_type}), {whole})"


def _date_millis(text: str) -> str:
    """The epoch milliseconds of a strict or canonical ``$date`` Spark's timestamps hold; ``NULL`` otherwise."""
    millis = f"try_cast({_replace(text, _DATE_MILLIS, 2)} AS BIGINT)"
    return f"CASE WHEN {millis} BETWEEN -{_MAX_MILLIS} AND {_MAX_MILLIS} THEN {millis} END"


def _date_instant(text: str) -> str:
    """The instant of a relaxed ``$date`` (ISO-8601 text); ``NULL`` otherwise."""
    return f"try_cast({_replace(text, _DATE_TEXT, 1)} AS TIMESTAMP)"


def _timestamp(text: str) -> str:
    seconds = f"try_cast({text} AS DECIMAL(38, 6))"
    plain = (
        f"CASE WHEN {text} RLIKE {_lit(_PLAIN_NUMBER)} THEN "
        f"CASE WHEN {seconds} BETWEEN -{_MAX_SECONDS} AND {_MAX_SECONDS} THEN timestamp_seconds({seconds}) END "
        f"ELSE try_cast({text} AS TIMESTAMP) END"
    )
    dated = f"coalesce(timestamp_millis({_date_millis(text)}), {_date_instant(text)})"
    return f"CASE WHEN {_is_object(text)} THEN {dated} ELSE {plain} END"


def _utc_ntz(text: str) -> str:
    """A ``$date`` as its UTC wall time (``TIMESTAMP_NTZ``), or ``NULL``."""
    return (
        f"coalesce(timestampadd(MILLISECOND, {_date_millis(text)}, {_EPOCH_NTZ}), "
        f"timestampadd(MICROSECOND, unix_micros({_date_instant(text)}), {_EPOCH_NTZ}))"
    )


def _timestamp_ntz(text: str) -> str:
    return f"CASE WHEN {_is_object(text)} THEN {_utc_ntz(text)} ELSE try_cast({text} AS TIMESTAMP_NTZ) END"


def _date(text: str) -> str:
    return f"CASE WHEN {_is_object(text)} THEN CAST({_utc_ntz(text)} AS DATE) ELSE try_cast({text} AS DATE) END"


def _binary(text: str) -> str:
    return f"try_to_binary({_replace(text, _BINARY, 2)}, 'base64')"


def _string(text: str) -> str:
    return _replace(text, _STRING, 4)


def convert(expr: str, data_type: DataType, fresh: Iterator[int] | None = None) -> str:
    """SQL turning ``expr`` (a value read with :func:`raw_schema`) into ``data_type``."""
    fresh = fresh if fresh is not None else itertools.count()
    if isinstance(data_type, StructType):
        if not data_type.fields:
            return expr
        fields = ", ".join(
            f"{convert(f'{expr}.{_quote(f.name)}', f.dataType, fresh)} AS {_quote(f.name)}" for f in data_type.fields
        )
        return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct({fields}) END"
    if isinstance(data_type, ArrayType):
        element = f"_e{next(fresh)}"
        return f"transform({expr}, {element} -> {convert(element, data_type.elementType, fresh)})"
    if isinstance(data_type, MapType):
        key, value = f"_k{next(fresh)}", f"_v{next(fresh)}"
        return f"transform_values({expr}, ({key}, {value}) -> {convert(value, data_type.valueType, fresh)})"
    if isinstance(data_type, _INTEGRAL):
        return _integral(expr, data_type.simpleString())
    if isinstance(data_type, _FRACTIONAL):
        return f"try_cast({_replace(expr, _NUMBER, 2)} AS {data_type.simpleString()})"
    if isinstance(data_type, TimestampType):
        return _timestamp(expr)
    if isinstance(data_type, TimestampNTZType):
        return _timestamp_ntz(expr)
    if isinstance(data_type, DateType):
        return _date(expr)
    if isinstance(data_type, BinaryType):
        return _binary(expr)
    if isinstance(data_type, StringType):
        return _string(expr)
    return expr


DOC = "_mongocdc_doc"
"""The column holding the document read with :func:`raw_schema`, between the two projections."""


@functools.lru_cache(maxsize=16)
def _plan(schema_json: str) -> tuple[StructType, tuple[str, ...]]:
    schema = StructType.fromJson(json.loads(schema_json))
    raw = raw_schema(schema)
    assert isinstance(raw, StructType)
    return raw, tuple(f"{convert(f'{DOC}.{_quote(f.name)}', f.dataType)} AS {_quote(f.name)}" for f in schema.fields)


def projection(schema: StructType) -> tuple[StructType, list[str]]:
    """The schema to read the document with, and one ``<expression> AS <column>`` per column of ``schema``.

    Built once per schema (a micro-batch builds its plans anew, the text stays the same).
    """
    raw, fields = _plan(schema.json())
    return raw, list(fields)
