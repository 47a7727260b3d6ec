"""Both sinks apply micro-batches of several collections idempotently (Kafka-shaped rows, no Kafka)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.spark_support import Topic, documents, envelope, records

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("table_format", ["delta", "delta-rewrite", "parquet"])
def test_batches_of_several_collections_become_tables_and_a_rerun_batch_changes_nothing(
    spark: Any, tmp_path: Path, table_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delta``: small batches go through MERGE; ``delta-rewrite``: every batch counts as large (one overwrite)."""
    from mongocdc.spark import sinks

    if table_format == "delta-rewrite":
        monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 0)
        table_format = "delta"
    else:
        monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 10**9)
    from mongocdc.spark.job import BatchApplier
    from mongocdc.spark.options import JobOptions, TableFormat, changelog_path, table_path
    from mongocdc.spark.sinks import HadoopFs, parquet_versions, read_changelog, read_table

    warehouse = str(tmp_path / "wh")
    options = JobOptions(
        bootstrap_servers="unused:9092",
        warehouse=warehouse,
        checkpoint=str(tmp_path / "cp"),
        table_format=TableFormat(table_format),
        changelog=True,
        skip_topics=r"it\.transaction",
    )
    apply = BatchApplier(spark, options)
    orders, users = Topic("it.shop.orders"), Topic("it.crm.users")
    user = {"db": "crm", "collection": "users"}
    batch0 = [
        orders.add(envelope("r", 1, {"qty": 1}, ts_ms=1000, snapshot="true")),
        orders.add(envelope("r", 2, {"qty": 2}, ts_ms=1000, snapshot="true")),
        orders.add(envelope("c", 3, {"qty": 3}, ts_ms=2000)),
        users.add(envelope("c", "ann", {"age": 30}, ts_ms=2000, **user)),
        ("it.transaction", 0, 0, b'{"id":"x"}', b'{"status":"END","id":"x"}'),
    ]
    batch1 = [
        orders.add(envelope("u", 1, {"qty": 10}, ts_ms=3000)),
        orders.add(envelope("d", 2, None, ts_ms=3000, ord=2)),
        orders.add((b'{"id":"2"}', None)),
        orders.add(envelope("r", 2, {"qty": 2}, ts_ms=1000, snapshot="true")),  # a stale replay after the delete
        users.add(envelope("c", "bob", {"age": 40}, ts_ms=3000, **user)),
        users.add(envelope("u", "ann", {"age": 31}, ts_ms=3500, **user)),
    ]
    apply(records(spark, batch0), 0)
    orders_table = table_path(warehouse, "shop", "orders")
    assert documents(read_table(spark, orders_table)) == {
        1: {"_id": 1, "qty": 1},
        2: {"_id": 2, "qty": 2},
        3: {"_id": 3, "qty": 3},
    }
    apply(records(spark, batch1), 1)
    apply(records(spark, batch1), 1)  # Spark runs a batch again when the last attempt did not commit
    expected_orders = {1: {"_id": 1, "qty": 10}, 3: {"_id": 3, "qty": 3}}
    expected_users = {"ann": {"_id": "ann", "age": 31}, "bob": {"_id": "bob", "age": 40}}
    assert documents(read_table(spark, orders_table)) == expected_orders
    assert documents(read_table(spark, table_path(warehouse, "crm", "users"))) == expected_users
    assert apply.applied == {"shop.orders": 3 + 3 + 3, "crm.users": 1 + 2 + 2}

    changelog = read_changelog(spark, changelog_path(warehouse, "shop", "orders"))
    ops = sorted((r["_batch_id"], r["_op"], json.loads(r["_key"])) for r in changelog.collect())
    assert ops == [(0, "c", 3), (0, "r", 1), (0, "r", 2), (1, "d", 2), (1, "r", 2), (1, "u", 1)]

    if table_format == "parquet":
        fs = HadoopFs(spark)
        assert parquet_versions(fs, orders_table) == [1, 2, 3]  # one version per applied batch, the last 3 kept
        apply(records(spark, []), 2)
        apply(records(spark, batch1), 3)
        assert parquet_versions(fs, orders_table) == [2, 3, 4]
        assert len(fs.names(f"{orders_table}/_versions")) == 3
        assert documents(read_table(spark, orders_table)) == expected_orders
