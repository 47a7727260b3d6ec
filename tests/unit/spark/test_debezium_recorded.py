"""The job over what the real Debezium 3.6.1 MongoDB connector wrote (tests/unit/events/recorded/debezium).

Every record of the recording's topics, in both ``schemas.enable`` settings, goes through the job's batch
function as Spark's Kafka source would hand it over (per partition in offset order, cut into batches
anywhere, a batch applied twice): initial snapshot reads at the time of the read (``ord`` -1), streamed
changes at their ``wallTime``, two transactions, an incremental snapshot at its watermarks, tombstones,
transaction and heartbeat topics. Each table must then hold exactly what MongoDB held at the end of the
workload (``input.jsonl``), document for document, BSON value for BSON value.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import bson
import pytest
from bson import json_util

from mongocdc.events.codec import value_to_json
from tests.spark_support import records
from tests.unit.events.helpers import RECORDED, debezium_records

pytestmark = pytest.mark.spark

PREFIX = "dbz"
_CANONICAL = json_util.CANONICAL_JSON_OPTIONS


def expected_collections() -> dict[str, dict[str, bytes]]:
    """``<db>.<collection>`` → the key's ``id`` (Debezium's relaxed JSON of the ``_id``) → BSON of the
    document, at the end of the workload."""
    state: dict[str, dict[str, bytes]] = defaultdict(dict)

    def apply(operation: dict[str, Any]) -> None:
        ns, after = operation["ns"], operation.get("after")
        key_source = after if after is not None else (operation.get("before") or operation.get("filter"))
        key = value_to_json(json_util.loads(json.dumps(key_source["_id"]), json_options=_CANONICAL))
        if after is None:
            state[ns].pop(key, None)
        else:
            state[ns][key] = bson.encode(json_util.loads(json.dumps(after), json_options=_CANONICAL))

    for line in (RECORDED / "input.jsonl").read_text().splitlines():
        step = json.loads(line)
        if step["op"] == "transaction":
            for operation in step["operations"]:
                apply(operation)
        elif step["op"] != "signal":
            apply(step)
    return state


def table_collections(spark: Any, warehouse: str, names: list[str]) -> dict[str, dict[str, bytes]]:
    """The same from the job's tables: ``_key``, and the document's JSON (Debezium's) read back as BSON."""
    from mongocdc.spark.options import table_path
    from mongocdc.spark.sinks import read_table

    found: dict[str, dict[str, bytes]] = {}
    for name in names:
        db, _, collection = name.partition(".")
        rows = read_table(spark, table_path(warehouse, db, collection)).collect()
        found[name] = {r["_key"]: bson.encode(json_util.loads(r["document"])) for r in rows}
    return found


def kafka_rows(schemas: bool) -> dict[tuple[str, int], list[tuple[str, int, int, bytes | None, bytes | None]]]:
    """The recording's records of the topics the job reads (``dbz.*`` and the heartbeats), per partition."""
    partitions: dict[tuple[str, int], list[tuple[str, int, int, bytes | None, bytes | None]]] = defaultdict(list)
    for record in debezium_records(schemas):
        if record["topic"] == "connect-offsets":
            continue
        key = None if record["key"] is None else record["key"].encode()
        value = None if record["value"] is None else record["value"].encode()
        partitions[(record["topic"], record["partition"])].append(
            (record["topic"], record["partition"], record["offset"], key, value)
        )
    for rows in partitions.values():
        rows.sort(key=lambda row: row[2])
    return partitions


@pytest.mark.parametrize(
    ("schemas", "table_format", "cut"),
    [(False, "delta", False), (False, "parquet", True), (True, "delta", True)],
    ids=["schemas-false-delta-one-batch", "schemas-false-parquet-batches", "schemas-true-delta-batches"],
)
def test_the_job_turns_debeziums_records_into_the_collections_mongodb_holds(
    spark: Any, tmp_path: Path, schemas: bool, table_format: str, cut: bool
) -> None:
    """``cut``: every partition's first half in one batch, the rest in the next, which is applied twice."""
    from mongocdc.spark.job import BatchApplier
    from mongocdc.spark.options import JobOptions, TableFormat, skip_topics_regex

    assert all(
        r["key_encoding"] in (None, "utf-8") and r["value_encoding"] in (None, "utf-8")
        for r in debezium_records(schemas)
    )
    expected = expected_collections()
    names = sorted(expected)
    partitions = kafka_rows(schemas)
    if cut:
        first = [row for rows in partitions.values() for row in rows[: len(rows) // 2]]
        rest = [row for rows in partitions.values() for row in rows[len(rows) // 2 :]]
        batches = [first, rest, rest]
    else:
        batches = [[row for rows in partitions.values() for row in rows]]
    warehouse = str(tmp_path / "warehouse")
    apply = BatchApplier(
        spark,
        JobOptions(
            bootstrap_servers="unused:9092",
            warehouse=warehouse,
            checkpoint=str(tmp_path / "checkpoint"),
            table_format=TableFormat(table_format),
            skip_topics=skip_topics_regex(PREFIX, "transaction", "__debezium-heartbeat"),
        ),
    )
    for number, batch in enumerate(batches):
        apply(records(spark, batch), min(number, 1))
    assert set(apply.applied) == {*names, "inventory.dbz_signals"}  # the watermarks: Debezium writes them too
    assert table_collections(spark, warehouse, names) == {name: expected[name] for name in names}


def test_typed_columns_of_debeziums_documents(spark: Any) -> None:
    from mongocdc.spark import merge as m

    schema = m.parse_schema(
        "int32_min INT, int64_max BIGINT, int64_min BIGINT, decimal DECIMAL(8, 4), double_big DOUBLE,"
        " double_nan DOUBLE, double_neg_inf DOUBLE, double_whole INT, oid STRING, date TIMESTAMP,"
        " date_year_1 TIMESTAMP, date_before_1970 TIMESTAMP, uuid BINARY"
    )
    rows = [row for (topic, _), part in kafka_rows(False).items() if topic == "dbz.inventory.types" for row in part]
    changes = m.project(m.parse_records(records(spark, rows)), schema)
    # dates as epoch milliseconds: Python's datetime cannot take year 1 from PySpark
    dates = ("date", "date_year_1", "date_before_1970")
    read = changes.where("_op = 'r'").selectExpr("*", *[f"unix_millis(`{d}`) AS `{d}_ms`" for d in dates])
    snapshot = {json.loads(r["_key"]): r.asDict() for r in read.drop(*dates).collect()}
    numbers, scalars, binaries = snapshot["numbers"], snapshot["scalars"], snapshot["binaries"]
    assert math.isnan(numbers["double_nan"])
    assert [numbers[k] for k in ("int32_min", "int64_max", "int64_min", "decimal", "double_big", "double_neg_inf")] == [
        -(2**31),
        2**63 - 1,
        -(2**63),
        Decimal("1234.5678"),
        1e300,
        -math.inf,
    ]
    assert numbers["double_whole"] == 3
    assert scalars["oid"] == "65f0a1b2c3d4e5f6a7b80001"
    assert [scalars[f"{d}_ms"] for d in dates] == [1709210096789, -62135596800000, -14182940000]
    assert bytes(binaries["uuid"]).hex() == "0f8fad5bd9cb469fa16570867728950e"
