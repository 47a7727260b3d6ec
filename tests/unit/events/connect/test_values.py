"""Connect's ``Values`` (``mongocdc/events/connect/values.py``) and the JVM behaviour beneath it and the transforms and
converters (``java_lang.py``: Java's classes, numbers and ``HashMap``; ``java_time.py``: its calendar,
``SimpleDateFormat`` and ``Date.toString``) against the real Kafka Connect 4.3.1 classes.

Most of what these modules do is compared with Connect by the cases of ``test_kafka_transforms`` (InsertHeader's
literals, HeaderFrom's typed headers, Cast, MaskField, TimestampRouter and TimestampConverter) and
``test_converters`` (StringConverter, CloudEvents' ``time``). The cases of :data:`CASES` add what those leave,
through Connect (one JVM for the module, ``tests/oracle``) and mongocdc's chain: a ``HashMap`` bin that outgrows
eight keys, in a transform's map and in StringConverter's text, and the dates about the epoch and the Gregorian
cutover that ``Values`` writes. The plain tests at the end pin what JDK 17 printed for what the cases cannot carry.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pytest

from mongocdc.events.connect.data import STRING, Schema, Type
from mongocdc.events.connect.java_lang import HashMap
from mongocdc.events.connect.java_time import DateFormat, date_to_string
from mongocdc.events.connect.values import convert_to_string, parse_string
from tests.oracle.recorded import run_cases

T = "org.apache.kafka.connect.transforms."
COLLIDING = ["f50", "f6", "f72", "f1010", "f94", "f1032", "f115", "f1054", "f137"]
"""Nine keys whose hashes share a bin of a table of 16: Java's ``HashMap`` grows the table to 32 instead of making
the bin a tree (``treeifyBin``), which splits the bin."""
JDK_ORDER = ["f50", "f72", "f94", "f115", "f137", "f6", "f1010", "f1032", "f1054"]
"""The order JDK 17's ``HashMap`` iterates :data:`COLLIDING` in, put in that order."""


def _record(schema: dict[str, Any] | None, payload: Any) -> dict[str, Any]:
    value = json.dumps({"schema": schema, "payload": payload})
    return {"topic": "values.topic", "partition": None, "key": None, "value": value, "timestamp": 5, "headers": []}


def _transform(cls: str, **options: str) -> dict[str, str]:
    return {"transforms": "t", "transforms.t.type": T + cls, **{f"transforms.t.{k}": v for k, v in options.items()}}


COLLIDING_MAP = {key: number for number, key in enumerate(COLLIDING)}
STRING_TO_INT32 = {
    "type": "map",
    "keys": {"type": "string", "optional": False},
    "values": {"type": "int32", "optional": False},
    "optional": False,
}
DATES = [
    "1500-03-05",
    "1582-10-04",
    "1582-10-15T00:00:00.001Z",
    "1969-12-31T23:59:59.999Z",
    "1970-01-01",
    "1970-01-01T23:59:59.999Z",
    "1970-01-02",
    "2024-02-29",
    "9999-12-31T23:59:59.999Z",
    "[1500-03-05,1970-01-02]",
]
CASES: dict[str, tuple[dict[str, str], list[dict[str, Any]]]] = {
    "hash-map-bin-outgrows-eight-keys-copied": (
        _transform("InsertField$Value", **{"static.field": "s", "static.value": "v"}),
        [_record(None, COLLIDING_MAP)],
    ),
    "hash-map-bin-outgrows-eight-keys-sized": (
        _transform("ReplaceField$Value", exclude="nothing"),
        [_record(None, COLLIDING_MAP)],
    ),
    "hash-map-bin-outgrows-eight-keys-string-converter": (
        {"value.converter": "org.apache.kafka.connect.storage.StringConverter"},
        [_record(STRING_TO_INT32, COLLIDING_MAP)],
    ),
    **{
        f"header-date-{number}": (_transform("InsertHeader", header="d", **{"value.literal": date}), [_record(None, 1)])
        for number, date in enumerate(DATES)
    },
}


def test_the_cases_match_connect() -> None:
    """Each case's differences between Connect and mongocdc (one JVM run for all): none."""
    assert run_cases(CASES).differences == dict.fromkeys(CASES, [])


# --- without the JVM: what JDK 17 printed ---------------------------------------------------------------------


def test_hash_map_order_is_javas() -> None:
    """Orders printed by JDK 17 for these insertions (``HashMap()`` then a ``new HashMap<>(map)`` copy)."""
    keys = ["topic", "f", "zeta", "alpha", "partition", "static", "ts", "a1", "b2", "c3"]
    table = HashMap()
    for key in keys:
        table.put(key, 1)
    assert list(table.to_dict()) == ["zeta", "a1", "b2", "c3", "partition", "static", "f", "alpha", "topic", "ts"]
    copy = HashMap.copy_of(table.to_dict())
    for key in ("new1", "Aa", "BB"):
        copy.put(key, 2)
    assert list(copy.to_dict()) == [
        "zeta",
        "Aa",
        "BB",
        "new1",
        "static",
        "f",
        "a1",
        "b2",
        "c3",
        "partition",
        "alpha",
        "topic",
        "ts",
    ]


def test_a_hash_map_bin_of_nine_grows_the_table() -> None:
    table = HashMap()
    for key in COLLIDING:
        table.put(key, 1)
    assert list(table.to_dict()) == JDK_ORDER
    table.remove("f6")
    assert list(table.to_dict()) == [key for key in JDK_ORDER if key != "f6"]


def test_simple_date_format_matches_jdk17() -> None:
    """Texts and instants printed by JDK 17's SimpleDateFormat in UTC (hybrid Julian/Gregorian calendar)."""
    packed = DateFormat("yyyyMMddHHmmss")
    assert packed.format(-62135596800000) == "00010103000000"  # 0001-01-01 proleptic is 3 January, Julian
    assert packed.format(-12219292800001) == "15821004235959"  # the day before the Gregorian cutover
    assert packed.parse("20240102030405") == 1704164645000
    everything = DateFormat("EEE, d MMM yyyy hh:mm a z Z X w W D F u G k K")
    assert everything.format(1795624612476) == "Wed, 25 Nov 2026 04:36 PM UTC +0000 Z 48 4 329 4 3 AD 16 4"
    lenient = DateFormat("yyyy-MM-dd")
    assert lenient.parse("2024-13-45x") == 1739491200000
    assert lenient.parse(" 2024-1-5") == 1704412800000
    assert lenient.parse("x2024-01-05") is None
    with pytest.raises(ValueError, match="Illegal pattern character 'q'"):
        DateFormat("yyyy-qq")
    with pytest.raises(ValueError, match="Unterminated quote"):
        DateFormat("yyyy'T")


@pytest.mark.parametrize(
    ("millis", "text"),
    [
        (0, "Thu Jan 01 00:00:00 UTC 1970"),
        (-12219292800001, "Thu Oct 04 23:59:59 UTC 1582"),
        (-12219292800000, "Fri Oct 15 00:00:00 UTC 1582"),
        (-62135596800000, "Mon Jan 03 00:00:00 UTC 1"),
        (1795624612302, "Wed Nov 25 16:36:52 UTC 2026"),
        (253402300799999, "Fri Dec 31 23:59:59 UTC 9999"),
    ],
)
def test_date_to_string_is_jdk17s(millis: int, text: str) -> None:
    assert date_to_string(millis) == text


@pytest.mark.parametrize(
    ("literal", "schema_type", "value"),
    [
        ("42", Type.INT8, 42),
        ("-129", Type.INT16, -129),
        ("1.5", Type.FLOAT32, 1.5),
        ("1e40", Type.FLOAT64, 1e40),
        ("true", Type.BOOLEAN, True),
        ("true}", Type.STRING, "true}"),
        ("[1, 2.5]", Type.ARRAY, [1.0, 2.5]),
        ("[1, null]", Type.STRING, "[1, null]"),
        ('{"a": 1}', Type.MAP, {"a": 1}),
        ("2024-03-05", Type.INT32, dt.datetime(2024, 3, 5, tzinfo=dt.UTC)),
        ("123456789012345678901234", Type.BYTES, decimal.Decimal("123456789012345678901234")),
    ],
)
def test_parse_string(literal: str, schema_type: Type, value: Any) -> None:
    schema, parsed = parse_string(literal)
    assert schema is not None and schema.type is schema_type
    assert parsed == value


def test_parse_string_null_and_empty() -> None:
    assert parse_string("null") == (None, None)
    assert parse_string("") == (STRING, "")


def test_convert_to_string_of_float32_decimals_and_dates() -> None:
    """SimpleHeaderConverter writes a ``Float`` as Java prints it, a ``BigDecimal`` without a negative zero, and dates
    by ``Values.dateFormatFor`` (a time of day for any instant before 1970-01-02)."""
    assert convert_to_string(None) is None
    assert convert_to_string(0.10000000149011612, Schema(Type.FLOAT32)) == "0.1"
    assert convert_to_string(0.10000000149011612) == "0.10000000149011612"
    assert convert_to_string([0.10000000149011612], Schema(Type.ARRAY, value_schema=Schema(Type.FLOAT32))) == "[0.1]"
    assert convert_to_string(decimal.Decimal("-0.00")) == "0.00"
    assert convert_to_string(decimal.Decimal("-1E+3")) == "-1E+3"
    assert convert_to_string(dt.datetime(1969, 12, 31, tzinfo=dt.UTC)) == "00:00:00.000Z"
    assert convert_to_string(dt.datetime(1500, 3, 5, 1, tzinfo=dt.UTC)) == "01:00:00.000Z"
    assert convert_to_string(dt.datetime(2024, 3, 5, tzinfo=dt.UTC)) == "2024-03-05"
    assert convert_to_string(dt.datetime(1970, 1, 1, 1, 2, 3, 4000, tzinfo=dt.UTC)) == "01:02:03.004Z"
    assert convert_to_string(dt.datetime(2024, 3, 5, 1, tzinfo=dt.UTC)) == "2024-03-05T01:00:00.000Z"
