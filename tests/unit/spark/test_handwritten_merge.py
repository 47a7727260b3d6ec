"""The five cases the hand-written MERGE (bench/handwritten_merge.py) gets wrong, and mongocdc gets right.

Each test runs the same Kafka-shaped batches (built by the real ``EnvelopeCodec``, as the connector
writes them) through the hand-written ``foreachBatch`` MERGE a Delta user would write (latest change per
key by ``source.ts_ms``/``source.ord``, matched delete / update all / not matched insert all) and through
mongocdc's batch function, both into real Delta tables. mongocdc's table must equal what MongoDB held;
the hand-written one is shown to differ, so the case is documented honestly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.spark_support import Topic, envelope, records

pytestmark = pytest.mark.spark

ORDERS = "it.shop.orders"


def run_both(spark: Any, tmp_path: Path, batches: list[list[Any]]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """The batches applied one by one by mongocdc (Delta, MERGE) and by the hand-written MERGE.

    Returns each table as ``_id`` → document (``None``: a row whose document is NULL). Each batch is one
    Spark partition in the order given, as a Kafka partition's records arrive.
    """
    from bench.handwritten_merge import apply_batch, documents
    from mongocdc.spark.job import BatchApplier
    from mongocdc.spark.options import JobOptions, TableFormat, table_path
    from mongocdc.spark.sinks import read_table

    warehouse = str(tmp_path / "wh")
    options = JobOptions(
        bootstrap_servers="unused:9092",
        warehouse=warehouse,
        checkpoint=str(tmp_path / "cp"),
        table_format=TableFormat.delta,
    )
    mongocdc = BatchApplier(spark, options)
    handwritten = str(tmp_path / "handwritten")
    for number, batch in enumerate(batches):
        mongocdc(records(spark, batch).coalesce(1), number)
        apply_batch(spark, handwritten, records(spark, batch).coalesce(1))
    ours = {
        json.loads(row["_key"]): json.loads(row["document"])
        for row in read_table(spark, table_path(warehouse, "shop", "orders")).collect()
    }
    theirs = {json.loads(k): None if d is None else json.loads(d) for k, d in documents(spark, handwritten).items()}
    return ours, theirs


def test_a_duplicate_delivered_after_the_delete_does_not_bring_the_row_back(spark: Any, tmp_path: Path) -> None:
    t = Topic(ORDERS)
    first = [
        t.add(envelope("c", 1, {"v": "a"}, ts_ms=1000)),
        t.add(envelope("c", 2, {"v": "b"}, ts_ms=1100)),
        t.add(envelope("d", 1, None, ts_ms=2000)),
    ]
    # the connector restarted from an offset before the insert (at-least-once) and delivers it again
    replay = [t.add(envelope("c", 1, {"v": "a"}, ts_ms=1000))]
    ours, theirs = run_both(spark, tmp_path, [first, replay])
    assert ours == {2: {"_id": 2, "v": "b"}}
    assert theirs == {1: {"_id": 1, "v": "a"}, 2: {"_id": 2, "v": "b"}}  # the deleted row is back


def test_an_older_incremental_snapshot_read_does_not_overwrite_newer_data(spark: Any, tmp_path: Path) -> None:
    t = Topic(ORDERS)
    first = [t.add(envelope("c", 1, {"v": "old"}, ts_ms=1000)), t.add(envelope("u", 1, {"v": "new"}, ts_ms=5500))]
    # a chunk read at a watermark before the update, delivered after it (a snapshot resumed after a restart)
    stale_read = [t.add(envelope("r", 1, {"v": "old"}, ts_ms=5000, ord=3, snapshot="incremental"))]
    ours, theirs = run_both(spark, tmp_path, [first, stale_read])
    assert ours == {1: {"_id": 1, "v": "new"}}
    assert theirs == {1: {"_id": 1, "v": "old"}}


@pytest.mark.parametrize("first_op", ["u", "c"], ids=["update-then-delete", "insert-then-delete"])
def test_a_transactions_change_and_delete_at_the_same_position_leave_no_row(
    spark: Any, tmp_path: Path, first_op: str
) -> None:
    """A transaction's events share one cluster time (``ts_ms``, ``ord``); only their order in the
    transaction (``transaction.total_order``) says the delete came last."""
    t = Topic(ORDERS)
    before = [t.add(envelope("c", 1, {"v": "before"}, ts_ms=1000)), t.add(envelope("c", 9, {"v": "x"}, ts_ms=1000))]
    key = 1 if first_op == "u" else 2
    txn = [
        t.add(envelope(first_op, key, {"v": "in the transaction"}, ts_ms=3000, ord=4, txn_order=1)),
        t.add(envelope("d", key, None, ts_ms=3000, ord=4, txn_order=2)),
    ]
    ours, theirs = run_both(spark, tmp_path, [before, txn])
    expected = {9: {"_id": 9, "v": "x"}} if first_op == "u" else {1: {"_id": 1, "v": "before"}, 9: {"_id": 9, "v": "x"}}
    assert ours == expected
    assert theirs == {**expected, key: {"_id": key, "v": "in the transaction"}}  # the deleted key has a row


def test_an_update_whose_lookup_found_nothing_keeps_the_document(spark: Any, tmp_path: Path) -> None:
    """``capture.mode=change_streams_update_full``: an update whose look-up ran after a later delete has
    ``after`` null. The delete follows (in a later batch here); until it does, the document stays."""
    t = Topic(ORDERS)
    first = [t.add(envelope("c", 1, {"v": "a"}, ts_ms=1000))]
    lookup_missed = [t.add(envelope("u", 1, None, ts_ms=2000))]
    ours, theirs = run_both(spark, tmp_path, [first, lookup_missed])
    assert ours == {1: {"_id": 1, "v": "a"}}
    assert theirs == {1: None}  # a row with a NULL document
