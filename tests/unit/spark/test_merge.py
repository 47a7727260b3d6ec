"""The merge as DataFrame functions, on small data without Kafka (one shared local[2] session)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from mongocdc.engine.transactions import TransactionRecord
from mongocdc.events.changes import session_id
from mongocdc.events.envelope import heartbeat_record
from tests.spark_support import LSID, PREFIX, Topic, documents, envelope, records

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
        t.add(envelope("r", "k1", {"v": "snapshot"}, ts_ms=1000, snapshot="incremental")),  # read before the delete
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


def values(state: Any) -> dict[Any, Any]:
    return {k: d["v"] for k, d in live(state).items()}


def test_snapshot_reads_order_before_streamed_changes_of_the_same_position(spark: Any) -> None:
    t = Topic(ORDERS)
    # an incremental read is at its closing watermark's cluster time (seconds × 1000, increment), as is
    # a streamed change whose wallTime is that second's first millisecond
    streamed = t.add(envelope("u", 1, {"v": "streamed"}, ts_ms=2000, ord=5))
    read_same = t.add(envelope("r", 1, {"v": "read"}, ts_ms=2000, ord=5, snapshot="incremental"))
    read_newer = t.add(envelope("r", 2, {"v": "read"}, ts_ms=2000, ord=6, snapshot="incremental"))
    older = t.add(envelope("u", 2, {"v": "streamed"}, ts_ms=2000, ord=5))
    # an initial snapshot read has ord -1: it orders before a change of the same millisecond
    read_first = t.add(envelope("r", 3, {"v": "initial"}, ts_ms=1000, snapshot="true"))
    update = t.add(envelope("u", 3, {"v": "later"}, ts_ms=1000, ord=2))
    # a transaction's events share one position; their order in the transaction decides, not the offset
    txn_second = t.add(envelope("u", 4, {"v": "second"}, ts_ms=4000, ord=9, txn_order=2))
    txn_first = t.add(envelope("u", 4, {"v": "first"}, ts_ms=4000, ord=9, txn_order=1))
    state = state_after(spark, [streamed, older, update, txn_second], [read_same, read_newer, read_first, txn_first])
    assert values(state) == {1: "streamed", 2: "read", 3: "later", 4: "second"}
    # arrival order does not matter
    state = state_after(spark, [read_same, read_first, txn_first], [streamed, update, txn_second])
    assert values(state) == {1: "streamed", 3: "later", 4: "second"}


def test_initial_snapshot_reads_order_by_their_read_time_against_streamed_changes(spark: Any) -> None:
    """Debezium 3.6's initial (and blocking) snapshot reads carry the time of the read (``source.ts_ms``,
    ``ord`` -1), streamed changes their ``wallTime`` and the cluster time's increment: a read never
    overwrites a change made after it, and a change made before it (streamed by an earlier run, or
    replayed later) never overwrites the read, whatever order they arrive in."""
    t = Topic(ORDERS)
    rows = [
        t.add(envelope("c", 1, {"v": "before the snapshot"}, ts_ms=1_700_000_000_100, ord=3)),
        t.add(envelope("u", 2, {"v": "before the snapshot"}, ts_ms=1_700_000_004_999, ord=40)),
        t.add(envelope("d", 3, None, ts_ms=1_700_000_000_200, ord=1)),
        t.add(envelope("r", 1, {"v": "read"}, ts_ms=1_700_000_005_000, snapshot="true")),
        t.add(envelope("r", 2, {"v": "read"}, ts_ms=1_700_000_005_001, snapshot="true")),
        t.add(envelope("r", 3, {"v": "read"}, ts_ms=1_700_000_005_002, snapshot="true")),  # inserted again since
        t.add(envelope("r", 4, {"v": "read"}, ts_ms=1_700_000_005_003, snapshot="true")),
        t.add(envelope("r", 5, {"v": "read"}, ts_ms=1_700_000_005_004, snapshot="last")),
        # streamed after the snapshot: changes made after the reads (the same millisecond for key 4)
        t.add(envelope("u", 1, {"v": "after"}, ts_ms=1_700_000_005_001, ord=1)),
        t.add(envelope("u", 4, {"v": "after"}, ts_ms=1_700_000_005_003, ord=1)),
        t.add(envelope("d", 5, None, ts_ms=1_700_000_009_000, ord=2)),
    ]
    expected = {1: "after", 2: "read", 3: "read", 4: "after"}
    assert values(state_after(spark, rows)) == expected
    for cut in (3, 6, 9):
        assert values(state_after(spark, rows[cut:], rows[:cut])) == expected  # the older half last
        assert values(state_after(spark, rows[:cut], rows[cut:], rows[:cut])) == expected  # and replayed
    assert markers(state_after(spark, rows[8:], rows[:8])) == {5: 1_700_000_009_000}


def test_incremental_reads_order_at_their_watermark_against_streamed_changes(spark: Any) -> None:
    """An incremental read is at the closing watermark's cluster time: ``ts_ms`` its seconds × 1000,
    ``ord`` its increment. A change streamed after the watermark has a later cluster time, so its
    ``wallTime`` is in the same second with a higher increment, or in a later second: it wins. A change
    of an earlier second loses; one earlier in the watermark's own second (a higher ``wallTime``, a lower
    increment) ranks after the read, which holds the same document (the window dropped every key
    changed while it was open)."""
    t = Topic(ORDERS)
    watermark_s, watermark_ord = 1_700_000_007, 41
    read = {"ts_ms": watermark_s * 1000, "ord": watermark_ord, "snapshot": "incremental"}
    rows = [
        t.add(envelope("u", 1, {"v": "earlier second"}, ts_ms=watermark_s * 1000 - 1, ord=80)),
        t.add(envelope("u", 2, {"v": "read"}, ts_ms=watermark_s * 1000 + 300, ord=12)),  # before the window
        *(t.add(envelope("r", k, {"v": "read"}, **read)) for k in range(1, 6)),
        t.add(envelope("u", 3, {"v": "after, same second"}, ts_ms=watermark_s * 1000 + 600, ord=55)),
        t.add(envelope("u", 4, {"v": "after, same millisecond"}, ts_ms=watermark_s * 1000, ord=42)),
        t.add(envelope("d", 5, None, ts_ms=watermark_s * 1000 + 1000, ord=1)),
        # MongoDB before 6.0: no wallTime, ts_ms is the cluster seconds × 1000 as the read's
        t.add(envelope("u", 6, {"v": "streamed"}, ts_ms=watermark_s * 1000, ord=40, wall_time=False)),
        t.add(envelope("r", 6, {"v": "read"}, **read)),
        t.add(envelope("r", 7, {"v": "read"}, **read)),
        t.add(envelope("u", 7, {"v": "streamed"}, ts_ms=watermark_s * 1000, ord=42, wall_time=False)),
    ]
    expected = {1: "read", 2: "read", 3: "after, same second", 4: "after, same millisecond", 6: "read", 7: "streamed"}
    assert values(state_after(spark, rows)) == expected
    for cut in (2, 7, 11):
        assert values(state_after(spark, rows[cut:], rows[:cut])) == expected
    assert markers(state_after(spark, rows)) == {5: watermark_s * 1000 + 1000}


def test_parse_reads_both_envelopes_and_skips_tombstones_metadata_topics_and_partial_updates(spark: Any) -> None:
    from mongocdc.spark import merge as m
    from mongocdc.spark.options import skip_topics_regex

    orders, users = Topic(ORDERS), Topic("it.crm.users", partition=2)
    txn = f"{session_id(LSID)}:1"
    begin = TransactionRecord("BEGIN", txn, 1000)
    end = TransactionRecord("END", txn, 1100, 1, (("shop.orders", 1),))
    rows = [
        orders.add(envelope("c", {"$oid": "64b000000000000000000001"}, {"v": 1}, ts_ms=1000)),
        orders.add(envelope("d", 7, None, ts_ms=1100)),
        orders.add((json.dumps({"id": "7"}).encode(), None)),  # tombstone after the delete
        orders.add(envelope("u", 8, None, ts_ms=1200)),  # update without the full document
        users.add(envelope("c", "u1", {"name": "Ann"}, ts_ms=1000, db="crm", collection="users", wrapped=True)),
        ("it.transaction", 0, 0, begin.key_bytes(), begin.value_bytes()),
        ("it.transaction", 0, 1, end.key_bytes(True), end.value_bytes(True)),
        ("__debezium-heartbeat.it", 0, 0, *heartbeat_record(PREFIX, 1000)),
        ("__debezium-heartbeat.it", 0, 1, *heartbeat_record(PREFIX, 2000, schemas_enable=True)),
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


def test_an_election_to_a_primary_whose_clock_is_behind_keeps_oplog_order(spark: Any) -> None:
    """Records as mongocdc writes them across an election: the cluster time goes on increasing (its seconds
    stay at the old primary's until the new primary's clock catches up, the increment grows), while
    ``wallTime`` (Debezium's ``source.ts_ms``) steps back 2 s. The job orders by the cluster time of the
    ``__mongocdc.clusterTime`` header: the later change wins, in any batching and arrival order. The same
    records without the header (Debezium's own) can only be ordered by wall time, and the earlier change wins."""
    sec = 1_700_000_010  # the old primary's last cluster second
    behind = (sec - 2) * 1000  # the new primary's wall clock

    def rec(op: str, key: int, doc: Any, cluster: tuple[int, int], wall: int, headers: bool = True, **kw: Any) -> Any:
        return envelope(op, key, doc, ts_ms=wall, ord=cluster[1], cluster_sec=cluster[0], with_headers=headers, **kw)

    def workload(headers: bool) -> list[Any]:
        t = Topic(ORDERS)
        return [
            # the old primary
            t.add(rec("c", 1, {"v": "old primary"}, (sec, 1), sec * 1000 + 400, headers)),
            t.add(rec("u", 1, {"v": "old primary, later"}, (sec, 2), sec * 1000 + 800, headers)),
            t.add(rec("c", 3, {"v": "inserted"}, (sec, 3), sec * 1000 + 900, headers)),
            # the election: the new primary's clock is 2 s behind; the cluster time goes on
            t.add(rec("u", 1, {"v": "new primary"}, (sec, 4), behind + 100, headers)),
            t.add(rec("d", 3, None, (sec, 5), behind + 150, headers)),
            t.add(rec("c", 2, {"v": "new primary"}, (sec, 6), behind + 200, headers)),
            # the new primary's clock passes the cluster time's second
            t.add(rec("u", 2, {"v": "next second"}, (sec + 1, 1), behind + 1100, headers)),
            # an incremental read at a watermark after that, then a change after the watermark
            t.add(rec("r", 4, {"v": "read"}, (sec + 1, 2), (sec + 1) * 1000, headers, snapshot="incremental")),
            t.add(rec("u", 4, {"v": "after the watermark"}, (sec + 1, 3), behind + 1300, headers)),
        ]

    rows = workload(headers=True)
    assert all(len(row) == 6 and row[5][-1][0] == "__mongocdc.clusterTime" for row in rows)
    expected = {1: "new primary", 2: "next second", 4: "after the watermark"}
    assert values(state_after(spark, rows)) == expected
    for cut in (2, 4, 6, 8):
        assert values(state_after(spark, rows[cut:], rows[:cut])) == expected  # the older half arrives last
        assert values(state_after(spark, rows[:cut], rows[cut:], rows[:cut])) == expected  # and replayed
    assert markers(state_after(spark, rows)) == {3: sec * 1000 + 999}
    # Debezium's records (no header) have only the wall time: the old primary's changes win
    debezium = values(state_after(spark, workload(headers=False)))
    assert debezium[1] == "old primary, later" and 3 in debezium


@pytest.mark.parametrize("semi_join", [False, True], ids=["all-markers", "markers-of-the-batch-keys"])
def test_one_aggregate_against_the_markers_picks_what_the_decision_applies(spark: Any, semi_join: bool) -> None:
    """``winning_changes`` (a MERGE batch's source: one aggregate of the batch, documents included, and the
    markers) gives exactly the changes ``Decision.applied`` gives against a state of markers: duplicates,
    replays, a delete and a change at one position, a transaction's events, changes without a document, a
    stale change older than a marker, one newer than it and a batch applied again."""
    from mongocdc.spark import merge as m

    t = Topic(ORDERS)
    earlier = [
        t.add(envelope("c", "k1", {"v": 1}, ts_ms=1000)),
        t.add(envelope("d", "k1", None, ts_ms=2000)),
        t.add(envelope("d", "k2", None, ts_ms=2000)),
        t.add(envelope("d", "k5", None, ts_ms=9000)),
    ]
    batch = [
        t.add(envelope("u", "k1", {"v": "stale"}, ts_ms=1500)),  # older than k1's marker
        t.add(envelope("c", "k2", {"v": "back"}, ts_ms=3000)),  # newer than k2's marker
        t.add(envelope("u", "k3", {"v": "a"}, ts_ms=4000, ord=1)),
        t.add(envelope("u", "k3", {"v": "a"}, ts_ms=4000, ord=1)),  # an exact duplicate: one of the two
        t.add(envelope("u", "k3", {"v": "older"}, ts_ms=3999, ord=7)),
        t.add(envelope("u", "k4", {"v": "first"}, ts_ms=5000, ord=2, txn_order=1)),
        t.add(envelope("d", "k4", None, ts_ms=5000, ord=2, txn_order=2)),  # a transaction's delete after its update
        t.add(envelope("u", "k6", None, ts_ms=6000)),  # no document: decides nothing
        t.add(envelope("c", "k7", {"v": "new"}, ts_ms=7000)),
        t.add(envelope("r", "k7", {"v": "read"}, ts_ms=7000, snapshot="incremental")),  # a read before it
    ]
    markers = m.delete_markers(state_after(spark, earlier)).localCheckpoint()
    again = batch + batch  # a batch applied again: the same records at the same offsets

    def applied(rows: list[Any], state: Any) -> list[tuple[Any, ...]]:
        cached = changes(spark, rows).localCheckpoint()
        decided = m.Decision(state, cached).applied()
        got = m.winning_changes(state, cached, semi_join=semi_join)
        columns = [*m.META_COLUMNS, m.DOCUMENT]
        expected = sorted(tuple(r) for r in decided.select(*columns).collect())
        assert sorted(tuple(r) for r in got.select(*columns).collect()) == expected
        return expected

    won = applied(batch, markers)
    assert {json.loads(r[0]): (r[1], r[-1] and json.loads(r[-1])["v"]) for r in won} == {
        "k2": ("c", "back"),
        "k3": ("u", "a"),
        "k4": ("d", None),
        "k7": ("c", "new"),
    }
    assert len(applied(again, markers)) == 4
    assert len(applied(batch, None)) == 5  # k1's stale update wins without its marker
    # a typed column's name may hold a dot: it is a column of its own, not a struct's field
    dotted = changes(spark, batch).withColumnRenamed(m.DOCUMENT, "doc.v").localCheckpoint()
    got = m.winning_changes(markers, dotted, semi_join=semi_join).select("_key", "`doc.v`").collect()
    want = m.Decision(markers, dotted).applied().select("_key", "`doc.v`").collect()
    assert sorted(tuple(r) for r in got) == sorted(tuple(r) for r in want)
    assert len(want) == 5  # k6's update without a document counts here: nothing says it is partial
