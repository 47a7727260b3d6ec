"""The shared local Spark session of the Spark tests, and helpers to feed the job Kafka-shaped rows.

One ``local[2]`` session per test run (``spark`` fixture in tests/conftest.py): each cold start
costs seconds. The Kafka source and Delta Lake come from the Ivy directory scripts/bootstrap
fills (``.cache/spark/ivy``, or ``$MONGOCDC_TEST_CACHE_DIR/spark/ivy``), so tests never download.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def ivy_dir() -> Path:
    shared = os.environ.get("MONGOCDC_TEST_CACHE_DIR", "").strip()
    root = Path(shared).expanduser().resolve() if shared else REPO / ".cache"
    return root / "spark" / "ivy"


def session_conf(ivy: Path) -> dict[str, str]:
    from mongocdc.spark.environment import packages_for_installed
    from mongocdc.spark.launcher import DELTA_CONF, JOB_CONF, LOCAL_CONF

    packages = packages_for_installed()
    return {
        "spark.jars.packages": ",".join(packages.coordinates(with_delta=True)),
        "spark.jars.ivy": str(ivy),
        **JOB_CONF,
        **DELTA_CONF,
        **LOCAL_CONF,
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "1g",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
    }


def start_session(ivy: Path) -> Any:
    from pyspark.sql import SparkSession

    from mongocdc.spark.packages import ensure_packages

    conf = session_conf(ivy)
    ensure_packages(conf["spark.jars.packages"].split(","), ivy)
    builder = SparkSession.builder.master("local[2]").appName("mongocdc-tests")
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


# --- Kafka-shaped records -------------------------------------------------------------------


def envelope(
    op: str,
    key: Any,
    doc: dict[str, Any] | None,
    *,
    ts_ms: int,
    ord: int = 1,  # noqa: A002
    db: str = "shop",
    collection: str = "orders",
    snapshot: str = "false",
    txn_order: int | None = None,
    wrapped: bool = False,
) -> tuple[bytes, bytes]:
    """A Debezium key and value as mongocdc writes them (``wrapped``: with the JsonConverter schema wrapper)."""
    key_json = json.dumps(key)
    value: dict[str, Any] = {
        "before": None,
        "after": None if doc is None else json.dumps({"_id": key, **doc}),
        "updateDescription": None,
        "source": {
            "version": "0.1.0",
            "connector": "mongodb",
            "name": "it",
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": db,
            "collection": collection,
            "ord": ord,
        },
        "op": op,
        "ts_ms": ts_ms + 5,
        "transaction": None if txn_order is None else {"id": "lsid:1", "total_order": txn_order},
    }
    key_doc: dict[str, Any] = {"id": key_json}
    if wrapped:
        value = {"schema": {"type": "struct", "fields": []}, "payload": value}
        key_doc = {"schema": {"type": "struct"}, "payload": key_doc}
    return json.dumps(key_doc).encode(), json.dumps(value).encode()


def records(spark: Any, rows: Iterable[tuple[str, int, int, bytes | None, bytes | None]]) -> Any:
    """A DataFrame shaped like Spark's Kafka source: (topic, partition, offset, key, value)."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
        ]
    )
    return spark.createDataFrame(
        [(t, p, o, None if k is None else bytearray(k), None if v is None else bytearray(v)) for t, p, o, k, v in rows],
        schema,
    )


class Topic:
    """Appends records to one partition of a topic, numbering offsets like Kafka."""

    def __init__(self, name: str, partition: int = 0) -> None:
        self.name, self.partition, self.next_offset = name, partition, 0

    def add(self, key_value: tuple[bytes, bytes | None]) -> tuple[str, int, int, bytes | None, bytes | None]:
        row = (self.name, self.partition, self.next_offset, key_value[0], key_value[1])
        self.next_offset += 1
        return row


def documents(df: Any) -> dict[Any, dict[str, Any]]:
    """``_key`` (decoded) → document of a table whose payload is the JSON ``document`` column."""
    return {json.loads(r["_key"]): json.loads(r["document"]) for r in df.collect()}
