"""The merge as DataFrame functions, on small data without Kafka (one shared local[2] session)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from tests.spark_support import Topic, documents, envelope, records

pytestmark = pytest.mark.spark

ORDERS = "it.shop.orders"


def changes(spark: Any, rows: list[Any], skip: str | None = None) -> Any:
    from mongocdc.spark import merge as m

    return m.parse_records(records(spark, rows), skip).drop(*m.COLLECTION_COLUMNS)


def state_after(spark: Any, *batches: list[Any], broadcast: bool = True, whole_state: bool = False) -> Any:
    """Merge the batches one after the other into an empty state (as the job does batch by batch)."""
    from mongocdc.spark import merge as m

    state = None
    for batch in batches:
        state = m.merge(state, changes(spark, batch), broadcast=broadcast, whole_state=whole_state).localCheckpoint()
    return state


def live(state: Any) -> dict[Any, dict[str, Any]]:
    from mongocdc.spark import merge as m

    return documents(m.live_rows(state))


def markers(state: Any) -> dict[Any, int]:
    from mongocdc.spark import merge as m

    return {json.loads(r["_key"]): r["_ts_ms"] for r in m.delete_markers(state).collect()}


def test_duplicates_and_out_of_order_replays_give_the_newest_document_in_any_batching(spark: Any) -> None:
    t = Topic(ORDERS)
    rows = [
        t.add(envelope("c", 1, {"v": "a"}, ts_ms=1000)),
        t.add(envelope("u", 1, {"v": "b"}, ts_ms=2000)),
        t.add(envelope("u", 2, {"v": "new"}, ts_ms=3000)),
        # the connector crashed and delivered again from an older offset: at-least-once replays
        t.add(envelope("c", 1, {"v": "a"}, ts_ms=1000)),
        t.add(envelope("c", 2, {"v": "old"}, ts_ms=2500)),
        t.add(envelope("u", 1, {"v": "b"}, ts_ms=2000)),
        t.add(envelope("u", 1, {"v": "b"}, ts_ms=2000)),
    ]
    expected = {1: {"_id": 1, "v": "b"}, 2: {"_id": 2, "v": "new"}}
    assert live(state_after(spark, rows)) == expected
    # the same records cut into batches anywhere, and a batch applied twice (Spark re-runs a failed batch)
    for cut in (1, 3, 5):
        assert live(state_after(spark, rows[:cut], rows[cut:], rows[cut:])) == expected
    for permutation in itertools.islice(itertools.permutations(rows), 0, 5040, 1499):
        assert live(state_after(spark, list(permutation[:4]), list(permutation[4:]))) == expected


@pytest.mark.parametrize(
    ("broadcast", "whole_state"), [(True, False), (False, True)], ids=["broadcast-keys", "whole-state-no-hint"]
)
def test_deletes_followed_by_stale_reads_and_replays_stay_deleted(
    spark: Any, broadcast: bool, whole_state: bool
) -> None:
    t = Topic(ORDERS)
    first = [
        t.add(envelope("c", "k1", {"v": 1}, ts_ms=1000)),
        t.add(envelope("d", "k1", None, ts_ms=2000)),
        t.add(envelope("c", "k2", {"v": 1}, ts_ms=1000)),
    ]
    stale = [
        t.add(envelope("r", "k1", {"v": "snapshot"}, ts_ms=1500, snapshot="incremental")),  # read before the delete
        t.add(envelope("c", "k1", {"v": 1}, ts_ms=1000)),  # replay of the insert
        t.add(envelope("u", "k1", {"v": 2}, ts_ms=1800)),  # replay of an update older than the delete
        t.add(envelope("d", "k2", None, ts_ms=2000)),
        t.add(envelope("u", "k2", {"v": "lost"}, ts_ms=1900)),  # older than the delete in the same batch
    ]
    state = state_after(spark, first, stale, broadcast=broadcast, whole_state=whole_state)
    assert live(state) == {}
    assert markers(state) == {"k1": 2000, "k2": 2000}
    # a newer insert brings the key back; its marker gives way
    state = state_after(
        spark,
        first,
        stale,
        [t.add(envelope("c", "k1", {"v": "again"}, ts_ms=3000))],
        broadcast=broadcast,
        whole_state=whole_state,
    )
    assert live(state) == {"k1": {"_id": "k1", "v": "again"}}
    assert markers(state) == {"k2": 2000}


def test_snapshot_reads_order_before_streamed_changes_of_the_same_position(spark: Any) -> None:
    t = Topic(ORDERS)
    streamed = t.add(envelope("u", 1, {"v": "streamed"}, ts_ms=2000, ord=5))
    read_same = t.add(envelope("r", 1, {"v": "read"}, ts_ms=2000, ord=5, snapshot="incremental"))
    read_newer = t.add(envelope("r", 2, {"v": "read"}, ts_ms=2000, ord=6, snapshot="incremental"))
    older = t.add(envelope("u", 2, {"v": "streamed"}, ts_ms=2000, ord=5))
    read_first = t.add(envelope("r", 3, {"v": "initial"}, ts_ms=1000, ord=1, snapshot="true"))
    update = t.add(envelope("u", 3, {"v": "later"}, ts_ms=1000, ord=2))
    # a transaction's events share one position; their order in the transaction decides, not the offset
    txn_second = t.add(envelope("u", 4, {"v": "second"}, ts_ms=4000, ord=9, txn_order=2))
    txn_first = t.add(envelope("u", 4, {"v": "first"}, ts_ms=4000, ord=9, txn_order=1))
    state = state_after(spark, [streamed, older, update, txn_second], [read_same, read_newer, read_first, txn_first])
    assert {k: d["v"] for k, d in live(state).items()} == {1: "streamed", 2: "read", 3: "later", 4: "second"}
    # arrival order does not matter
    state = state_after(spark, [read_same, read_first, txn_first], [streamed, update, txn_second])
    assert {k: d["v"] for k, d in live(state).items()} == {1: "streamed", 3: "later", 4: "second"}


def test_parse_reads_both_envelopes_and_skips_tombstones_metadata_topics_and_partial_updates(spark: Any) -> None:
    from mongocdc.spark import merge as m
    from mongocdc.spark.options import skip_topics_regex

    orders, users = Topic(ORDERS), Topic("it.crm.users", partition=2)
    rows = [
        orders.add(envelope("c", {"$oid": "64b000000000000000000001"}, {"v": 1}, ts_ms=1000)),
        orders.add(envelope("d", 7, None, ts_ms=1100)),
        orders.add((json.dumps({"id": "7"}).encode(), None)),  # tombstone after the delete
        orders.add(envelope("u", 8, None, ts_ms=1200)),  # update without the full document
        users.add(envelope("c", "u1", {"name": "Ann"}, ts_ms=1000, db="crm", collection="users", wrapped=True)),
        ("it.transaction", 0, 0, b'{"id":"lsid:1"}', b'{"status":"BEGIN","id":"lsid:1","ts_ms":1}'),
        ("__debezium-heartbeat.it", 0, 0, b'{"serverName":"it"}', b'{"ts_ms":1000}'),
    ]
    parsed = m.parse_records(records(spark, rows), skip_topics_regex("it", "transaction", "__debezium-heartbeat"))
    got = sorted(
        (
            (r["_db"], r["_collection"], json.loads(r["_key"]), r["_op"], r["_kafka_partition"], r["_kafka_offset"])
            for r in parsed.collect()
        ),
        key=str,
    )
    expected = [
        ("crm", "users", "u1", "c", 2, 0),
        ("shop", "orders", 7, "d", 0, 1),
        ("shop", "orders", 8, "u", 0, 3),
        ("shop", "orders", {"$oid": "64b000000000000000000001"}, "c", 0, 0),
    ]
    assert got == sorted(expected, key=str)
    # the update without a document decides nothing; the typed projection reads the document's fields
    applied = m.applicable(parsed)
    assert sorted(r["_op"] for r in applied.collect()) == ["c", "c", "d"]
    schema = m.parse_schema(m.parse_schema("name STRING, v INT").json())
    projected = m.project(parsed.where("_collection = 'users'"), schema).collect()
    assert [(r["name"], r["v"]) for r in projected] == [("Ann", None)]
    assert "document" not in projected[0].asDict()
