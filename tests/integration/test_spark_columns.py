"""Typed columns (``--columns``) through the whole job: real Kafka, Spark's Kafka source, Delta tables."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from bson import Decimal128, Int64, ObjectId
from confluent_kafka import Producer

from tests.spark_support import envelope

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

OID = "64b000000000000000000007"


def produce(bootstrap: str, records: list[tuple[str, bytes, bytes | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for topic, key, value in records:
        producer.produce(topic, value=value, key=key)
    assert producer.flush(30) == 0


def test_a_typed_batch_reads_kafka_once_and_decodes_extended_json(
    spark: Any, tmp_path: Path, kafka_bootstrap: str
) -> None:
    """Two collections in one batch: Spark's ``numInputRows`` (what the source read) equals the records
    produced, so the batch's cached changes serve both collections' merges (each collection's merge read
    and parsed Kafka again before: 1 + 2 × collections reads). The extended JSON of the documents
    (``$numberLong``, ``$numberDecimal``, ``$date``, ``$oid``) becomes the requested types."""
    from mongocdc.spark.job import run
    from mongocdc.spark.options import JobOptions, TableFormat, table_path
    from mongocdc.spark.sinks import read_table

    prefix = f"c{uuid.uuid4().hex[:8]}"
    moment = datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    out: list[tuple[str, bytes, bytes | None]] = []
    for collection in ("orders", "returns"):
        topic = f"{prefix}.shop.{collection}"
        for n in range(1, 6):
            doc = {"qty": Int64(n * 10), "price": Decimal128(f"{n}.25"), "at": moment, "ref": ObjectId(OID)}
            key, value = envelope("c", n, doc, ts_ms=1000 + n, collection=collection)
            out.append((topic, key, value))
        key, value = envelope("d", 5, None, ts_ms=2000, collection=collection)
        out += [(topic, key, value), (topic, key, None)]  # the delete and its tombstone
    produce(kafka_bootstrap, out)
    options = JobOptions(
        bootstrap_servers=kafka_bootstrap,
        warehouse=str(tmp_path / "wh"),
        checkpoint=str(tmp_path / "cp"),
        topic_pattern=rf"{prefix}\..*",
        table_format=TableFormat.delta,
        once=True,
        columns="qty BIGINT, price DECIMAL(10, 2), at TIMESTAMP, ref STRING",
    )
    reports: list[dict[str, Any]] = []
    summary = run(spark, options, on_progress=reports.append)
    assert summary.rows == len(out) == 14
    assert sum(int(r.get("numInputRows") or 0) for r in reports) == len(out)
    for collection in ("orders", "returns"):
        table = read_table(spark, table_path(options.warehouse, "shop", collection))
        rows = sorted((r["_key"], r["qty"], r["price"], r["at"], r["ref"]) for r in table.collect())
        assert rows == [
            (str(n), n * 10, Decimal(f"{n}.25"), datetime(2024, 5, 1, 12, 0, 0, 250000), OID) for n in range(1, 5)
        ]
