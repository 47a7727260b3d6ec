"""Typed columns (``--columns``) from Debezium's strict JSON documents, and from older topics' relaxed JSON."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from bson import Decimal128, Int64, ObjectId
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS

from tests.spark_support import Topic, envelope, records

pytestmark = pytest.mark.spark

SCHEMA = (
    "n BIGINT, small INT, whole INT, fraction INT, huge INT, x DOUBLE, nan DOUBLE, inf FLOAT, neg DOUBLE,"
    " dec DECIMAL(10, 2), ts TIMESTAMP, ntz TIMESTAMP_NTZ, day DATE, early TIMESTAMP, far TIMESTAMP,"
    " oid STRING, long_text STRING, text STRING, sub_json STRING, bin BINARY, flag BOOLEAN,"
    " arr ARRAY<BIGINT>, sub STRUCT<k: BIGINT, `when`: TIMESTAMP, `odd name`: DECIMAL(5, 1)>,"
    " m MAP<STRING, BIGINT>, missing BIGINT"
)
MOMENT = datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)  # 1700000000123 ms
OID = "64b000000000000000000001"


def typed(spark: Any, rows: list[Any], schema: str = SCHEMA) -> tuple[Any, dict[Any, Any]]:
    """The projected changes, and ``_key`` (decoded) → row as a dict."""
    from mongocdc.spark import merge as m

    projected = m.project(m.parse_records(records(spark, rows)), m.parse_schema(schema))
    return projected, {json.loads(r["_key"]): r.asDict(recursive=True) for r in projected.collect()}


def test_typed_columns_read_debeziums_strict_json_as_the_requested_types(spark: Any) -> None:
    """``after`` as Debezium 3.6 writes it: ``{"$numberLong": "5"}``, ``{"$date": <millis>}``, ``{"$oid": …}``,
    ``{"$numberDecimal": …}``, ``{"$binary": …, "$type": …}``, doubles as Java prints them (``1.0E300``,
    bare ``NaN``/``Infinity``). Spark's JSON reader alone makes each of these ``NULL``."""
    from mongocdc.spark import merge as m

    t = Topic("it.shop.orders")
    doc = {
        "n": Int64(5),
        "small": 7,
        "whole": 5.0,  # a double without a fraction (what mongosh writes for 5)
        "fraction": 5.5,  # not an integer: NULL rather than truncated
        "huge": Int64(2**40),  # does not fit an INT: NULL
        "x": 1e300,
        "nan": math.nan,
        "inf": math.inf,
        "neg": -math.inf,
        "dec": Decimal128("12.50"),
        "ts": MOMENT,
        "ntz": MOMENT,
        "day": datetime(2024, 2, 29, 23, 59, tzinfo=UTC),  # a UTC date, whatever the session's time zone
        "early": datetime(1960, 1, 1, tzinfo=UTC),
        "far": DatetimeMS(2**62),  # beyond Spark's timestamps: NULL, not an error
        "oid": ObjectId(OID),
        "long_text": Int64(-9),
        "text": "plain",
        "sub_json": {"a": Int64(1), "b": [1, 2]},
        "bin": Binary(b"\x00\x01\xff", 0),
        "flag": True,
        "arr": [Int64(7), 3, 4.0],
        "sub": {"k": Int64(9), "when": MOMENT, "odd name": Decimal128("1.5")},
        "m": {"a": Int64(1), "b": 2},
    }
    key, value = envelope("c", 1, doc, ts_ms=1000)
    assert b'{\\"$numberLong\\": \\"5\\"}' in value and b'{\\"$date\\": 1700000000123}' in value
    assert b'"x\\": 1.0E300' in value and b'\\"nan\\": NaN' in value
    projected, rows = typed(spark, [t.add((key, value))])
    assert projected.select(*[f.name for f in m.parse_schema(SCHEMA).fields]).schema.simpleString() == (
        m.parse_schema(SCHEMA).simpleString()
    )
    row = rows[1]
    assert math.isnan(row.pop("nan"))
    assert row.pop("inf") == math.inf and row.pop("neg") == -math.inf
    assert {k: v for k, v in row.items() if not k.startswith("_")} == {
        "n": 5,
        "small": 7,
        "whole": 5,
        "fraction": None,
        "huge": None,
        "x": 1e300,
        "dec": Decimal("12.50"),
        "ts": datetime(2023, 11, 14, 22, 13, 20, 123000),  # the session's time zone is UTC
        "ntz": datetime(2023, 11, 14, 22, 13, 20, 123000),
        "day": date(2024, 2, 29),
        "early": datetime(1960, 1, 1),
        "far": None,
        "oid": OID,
        "long_text": "-9",
        "text": "plain",
        "sub_json": '{"a":{"$numberLong":"1"},"b":[1,2]}',
        "bin": bytearray(b"\x00\x01\xff"),
        "flag": True,
        "arr": [7, 3, 4],
        "sub": {"k": 9, "when": datetime(2023, 11, 14, 22, 13, 20, 123000), "odd name": Decimal("1.5")},
        "m": {"a": 1, "b": 2},
        "missing": None,
    }


def test_typed_columns_read_the_relaxed_and_canonical_json_of_older_topics(spark: Any) -> None:
    t = Topic("it.shop.orders")
    relaxed = (
        '{"_id": 2, "n": 5, "small": {"$numberInt": "7"}, "x": {"$numberDouble": "1.0E300"},'
        ' "nan": {"$numberDouble": "NaN"}, "inf": {"$numberDouble": "Infinity"}, "neg": {"$numberDouble": "-Infinity"},'
        ' "dec": {"$numberDecimal": "1E+1"}, "ts": {"$date": "2023-11-14T22:13:20.123Z"},'
        ' "ntz": {"$date": "2023-11-14T22:13:20.123Z"}, "day": {"$date": "2024-02-29T23:59:00Z"},'
        ' "early": {"$date": {"$numberLong": "-315619200000"}}, "far": 1700000000,'
        ' "oid": {"$oid": "64b000000000000000000001"}, "long_text": {"$numberLong": "-9"}, "text": "plain",'
        ' "bin": {"$binary": {"base64": "AAH/", "subType": "00"}}, "arr": [{"$numberLong": "7"}, 3],'
        ' "sub": {"k": 9, "when": "2023-11-14T22:13:20.123Z", "odd name": 1.5}}'
    )
    _, rows = typed(spark, [t.add(envelope("c", 2, {}, ts_ms=1000, after_json=relaxed))])
    row = rows[2]
    assert math.isnan(row["nan"]) and row["inf"] == math.inf and row["neg"] == -math.inf
    moment = datetime(2023, 11, 14, 22, 13, 20, 123000)
    assert [row[k] for k in ("n", "small", "x", "dec", "ts", "ntz", "day", "early", "far")] == [
        5,
        7,
        1e300,
        Decimal("10.00"),
        moment,
        moment,
        date(2024, 2, 29),
        datetime(1960, 1, 1),
        datetime(2023, 11, 14, 22, 13, 20),  # a plain number is seconds, as Spark reads it
    ]
    assert [row[k] for k in ("oid", "long_text", "text", "bin", "arr")] == [
        OID,
        "-9",
        "plain",
        bytearray(b"\x00\x01\xff"),
        [7, 3],
    ]
    assert row["sub"] == {"k": 9, "when": moment, "odd name": Decimal("1.5")}


def test_documents_with_nan_and_infinity_are_kept_whole(spark: Any, tmp_path: Path) -> None:
    """Java writes non-finite doubles as bare ``NaN``/``Infinity``/``-Infinity`` (not JSON): the document is
    kept as it is in the JSON column, and the typed columns around such a value are still read."""
    from pyspark.sql import Row

    from mongocdc.spark import merge as m
    from mongocdc.spark.job import BatchApplier
    from mongocdc.spark.options import JobOptions, table_path
    from mongocdc.spark.sinks import read_table

    t = Topic("it.shop.orders")
    rows = [
        t.add(envelope("c", 1, {"x": math.nan, "n": Int64(1)}, ts_ms=1000)),
        t.add(envelope("c", 2, {"sub": {"y": [math.inf, -math.inf]}, "n": Int64(2)}, ts_ms=1000)),
        t.add(envelope("u", 1, {"x": -math.inf, "n": Int64(3)}, ts_ms=2000)),
    ]
    expected_text = {json.loads(json.loads(v)["after"])["_id"]: json.loads(v)["after"] for _, _, _, _, v in rows[1:]}
    parsed = m.parse_records(records(spark, rows))
    assert {json.loads(r["_key"]): r["document"] for r in parsed.where("_ts_ms > 1000 OR _key = '2'").collect()} == (
        expected_text
    )
    projected, _ = typed(spark, rows, "n BIGINT, x DOUBLE, sub STRUCT<y: ARRAY<DOUBLE>>")
    got = sorted((r["_kafka_offset"], r["n"], r["x"], r["sub"]) for r in projected.collect())
    assert math.isnan(got[0][2])
    assert [g[:2] + g[3:] for g in got] == [(0, 1, None), (1, 2, Row(y=[math.inf, -math.inf])), (2, 3, None)]
    assert [g[2] for g in got[1:]] == [None, -math.inf]
    for columns in (None, "n BIGINT, x DOUBLE"):
        warehouse = str(tmp_path / ("json" if columns is None else "typed"))
        options = JobOptions(
            bootstrap_servers="unused:9092", warehouse=warehouse, checkpoint=warehouse, columns=columns
        )
        BatchApplier(spark, options)(records(spark, rows), 0)
        table = {json.loads(r["_key"]): r for r in read_table(spark, table_path(warehouse, "shop", "orders")).collect()}
        assert sorted(table) == [1, 2]
        if columns is None:
            assert {k: r["document"] for k, r in table.items()} == expected_text
            assert json.loads(table[1]["document"])["x"] == -math.inf  # Python's json reads Java's tokens
        else:
            assert (table[1]["n"], table[1]["x"], table[2]["n"], table[2]["x"]) == (3, -math.inf, 2, None)


def test_typed_tables_keep_the_requested_types_through_both_sinks(spark: Any, tmp_path: Path) -> None:
    from mongocdc.spark import merge as m
    from mongocdc.spark.job import BatchApplier
    from mongocdc.spark.options import JobOptions, TableFormat, table_path
    from mongocdc.spark.sinks import read_table

    schema = "qty INT, total DECIMAL(12, 2), at TIMESTAMP, owner STRING"
    t = Topic("it.shop.orders")
    batches = [
        [
            t.add(envelope("r", 1, {"qty": Int64(1), "owner": ObjectId(OID)}, ts_ms=1000, snapshot="true")),
            t.add(envelope("c", 2, {"qty": 2.0, "total": 5, "at": MOMENT}, ts_ms=2000)),
        ],
        [
            t.add(envelope("u", 1, {"qty": Int64(10), "total": Decimal128("19.99"), "at": MOMENT}, ts_ms=3000)),
            t.add(envelope("u", 2, None, ts_ms=3500)),  # no full document: decides nothing
            t.add(envelope("d", 2, None, ts_ms=4000)),
        ],
    ]
    for table_format in (TableFormat.delta, TableFormat.parquet):
        warehouse = str(tmp_path / table_format.value)
        apply = BatchApplier(
            spark,
            JobOptions(
                bootstrap_servers="unused:9092",
                warehouse=warehouse,
                checkpoint=str(tmp_path / f"cp-{table_format.value}"),
                table_format=table_format,
                columns=schema,
            ),
        )
        for number, batch in enumerate(batches):
            apply(records(spark, batch), number)
        table = read_table(spark, table_path(warehouse, "shop", "orders"))
        fields = {f.name: f.dataType for f in table.schema.fields}
        assert {name: fields[name] for name in ("qty", "total", "at", "owner")} == {
            f.name: f.dataType for f in m.parse_schema(schema).fields
        }
        assert [(r["_key"], r["qty"], r["total"], r["owner"]) for r in table.collect()] == [
            ("1", 10, Decimal("19.99"), None)
        ]
