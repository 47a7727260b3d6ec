"""End to end: MongoDB test server → `mongocdc stream` → real Kafka → `mongocdc spark run --once` → tables."""

from __future__ import annotations

import json
import re
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId, json_util
from pymongo import MongoClient

from tests.integration.helpers import CliProcess, run_cli, wait_until
from tests.integration.helpers_connector import key_id, topic_counts, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb, pytest.mark.spark]


def collection_rows(collection: Any) -> dict[str, dict[str, Any]]:
    """A collection as the table should hold it: key id → the document as relaxed extended JSON."""
    relaxed = json_util.RELAXED_JSON_OPTIONS
    return {key_id(doc["_id"]): json.loads(json_util.dumps(doc, json_options=relaxed)) for doc in collection.find()}


def table_rows(spark: Any, warehouse: Path, db: str, collection: str) -> dict[str, dict[str, Any]]:
    from mongocdc.spark.options import table_path
    from mongocdc.spark.sinks import read_table

    table = read_table(spark, table_path(str(warehouse), db, collection))
    return {row["_key"]: json.loads(row["document"]) for row in table.collect()}


def spark_once(config: Path, warehouse: Path, ivy: Path) -> dict[str, Any]:
    result = run_cli(
        "--config",
        str(config),
        "spark",
        "run",
        "--once",
        "--warehouse",
        str(warehouse),
        "--master",
        "local[2]",
        "--conf",
        f"spark.jars.ivy={ivy}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--changelog",
        "--output",
        "json",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    # it says what it does, without Ivy's report (the packages were resolved before) or the Spark UI
    assert ":: resolving dependencies ::" not in result.stderr and "modules in use" not in result.stderr
    assert "Setting default log level" not in result.stderr, result.stderr
    assert "starting Spark on local[2] in this process" in result.stderr
    assert "no Spark UI (--ui starts it)" in result.stderr
    assert "waiting for the first batch of topics matching" in result.stderr
    summary = dict(json.loads(result.stdout.splitlines()[-1]))
    if summary["batches"]:
        assert re.search(r"batch \d+: reading its records from Kafka", result.stderr)
        assert re.search(r"batch \d+ done: [\d,]+ changes? in [\d.]+ s", result.stderr)
    return summary


def test_spark_once_keeps_tables_equal_to_the_collections_and_a_restart_reprocesses_nothing(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, spark: Any, spark_ivy_dir: Path
) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db_name, prefix)
    warehouse = tmp_path / "warehouse"
    topics = [f"{prefix}.{db_name}.customers", f"{prefix}.{db_name}.orders"]
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    db = client[db_name]
    oid = ObjectId()
    # there before the connector starts: snapshot reads
    db.customers.insert_many([{"_id": 1, "name": "Sally"}, {"_id": oid, "name": "George"}, {"_id": "s", "n": 1}])
    db.orders.insert_many([{"_id": i, "qty": i, "lines": [{"sku": f"x{i}"}]} for i in range(1, 41)])

    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        db.customers.update_one({"_id": 1}, {"$set": {"email": "sally@example.com"}})
        db.orders.delete_one({"_id": 40})
        db.orders.insert_one({"_id": 41, "qty": 41})
        # 3 reads + 1 update; 40 reads + delete + tombstone + insert
        wait_until(lambda: topic_counts(kafka_bootstrap, topics) == [4, 43], "the first changes in Kafka")

        first = spark_once(config, warehouse, spark_ivy_dir)
        assert first["rows"] == 4 + 43 and first["batches"] >= 1
        assert first["applied"] == {f"{db_name}.customers": 4, f"{db_name}.orders": 42}  # tombstone skipped
        assert table_rows(spark, warehouse, db_name, "customers") == collection_rows(db.customers)
        assert table_rows(spark, warehouse, db_name, "orders") == collection_rows(db.orders)
        assert len(collection_rows(db.orders)) == 40

        db.customers.replace_one({"_id": oid}, {"name": "George W"})
        db.customers.delete_one({"_id": "s"})
        db.orders.update_many({"qty": {"$lt": 5}}, {"$inc": {"qty": 100}})
        db.orders.delete_one({"_id": 1})
        db.orders.insert_one({"_id": 1, "qty": "back"})
        wait_until(lambda: topic_counts(kafka_bootstrap, topics) == [4 + 3, 43 + 7], "the later changes in Kafka")
    finally:
        code = stream.stop(signal.SIGTERM)
    assert code == 0, stream.stderr

    second = spark_once(config, warehouse, spark_ivy_dir)
    assert second["rows"] == 3 + 7  # only what came after the first run
    assert table_rows(spark, warehouse, db_name, "customers") == collection_rows(db.customers)
    assert table_rows(spark, warehouse, db_name, "orders") == collection_rows(db.orders)

    status = run_cli("spark", "status", "--warehouse", str(warehouse), "--output", "json")
    assert status.returncode == 0, status.stderr
    before = json.loads(status.stdout)
    assert before["status"] == "finished" and before["lag"] == 0
    assert before["offsets"] and sum(sum(p.values()) for p in before["offsets"].values()) == 4 + 3 + 43 + 7

    third = spark_once(config, warehouse, spark_ivy_dir)  # the same checkpoint, nothing new
    assert third["rows"] == 0 and third["batches"] == 0
    after = json.loads(run_cli("spark", "status", "--warehouse", str(warehouse), "--output", "json").stdout)
    assert after["batches_committed"] == before["batches_committed"]
    assert after["offsets"] == before["offsets"]
    from mongocdc.spark.options import changelog_path
    from mongocdc.spark.sinks import read_changelog

    changelog = read_changelog(spark, changelog_path(str(warehouse), db_name, "orders"))
    assert changelog.count() == 42 + 6  # every change event exactly once over the three runs
    client.close()
