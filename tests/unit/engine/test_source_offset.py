"""The typed offset record: its layout, records of earlier versions, round trips and malformed records."""

from __future__ import annotations

import json
import logging
from types import MappingProxyType
from typing import Any

import pytest
from bson import Int64
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.engine.incremental import IncrementalSnapshotState
from mongocdc.engine.source_offset import SourceOffset, decode_token, encode_token
from mongocdc.engine.transactions import TransactionState
from mongocdc.events.position import Position
from mongocdc.events.snapshot import CollectionProgress, ScanPosition, SnapshotState
from mongocdc.offsets.sqlite import SqliteOffsetStore

TOKEN = Position.token_bytes({"_data": "8265A0B1C2000000012B022C0100296E5A1004"})
TOKEN_TEXT = "NwAAAAJfZGF0YQAnAAAAODI2NUEwQjFDMjAwMDAwMDAxMkIwMjJDMDEwMDI5NkU1QTEwMDQAAA=="

# Records as mongocdc wrote them before the offset had a type (one per kind of state).
EARLIER_RECORDS: list[dict[str, Any]] = [
    {"sec": 1769860800, "ord": 3, "resume_token": TOKEN_TEXT},
    {"sec": 1700000000, "ord": 0, "resume_token": None},
    {
        "sec": 1769860800,
        "ord": 3,
        "resume_token": TOKEN_TEXT,
        "initsync": True,
        "snapshot": {
            "shop.customers": {"bracket": 15, "last_key": None, "done": True, "documents": 5},
            "shop.orders": {"bracket": 2, "last_key": '{"v": {"$numberLong": "7"}}', "done": False, "documents": 4},
        },
    },
    {"sec": 5, "ord": 1, "resume_token": None, "initsync": True, "snapshot": {}},
    {
        "sec": 1769860801,
        "ord": 1,
        "resume_token": TOKEN_TEXT,
        "incremental_snapshot": {
            "id": "ad-hoc-1",
            "collections": ["shop.orders", "shop.customers"],
            "conditions": {"shop.customers": '{"tier": {"$numberLong": "2"}}'},
            "bracket": 2,
            "last_key": '{"$numberInt": "42"}',
            "maximum_key": '{"$numberLong": "100"}',
            "paused": True,
            "documents": 10,
            "total_documents": 10,
        },
        "incremental_snapshot_completed": "ad-hoc-0",
    },
    {"sec": 1769860802, "ord": 2, "resume_token": TOKEN_TEXT, "incremental_snapshot_completed": "ad-hoc-1"},
    {
        "sec": 1769860803,
        "ord": 4,
        "resume_token": TOKEN_TEXT,
        "transaction": {
            "v": 1,
            "id": "4e3f0a1c:12",
            "begin_emitted": True,
            "ended": False,
            "total_order": 3,
            "data_collections": [["shop.orders", 2], ["shop.customers", 1]],
            "first_ts_ms": 1769860803000,
            "last_ts_ms": 1769860803001,
        },
    },
]


def test_the_token_is_stored_as_base64_of_its_bson() -> None:
    assert encode_token(TOKEN) == TOKEN_TEXT and decode_token(TOKEN_TEXT) == TOKEN
    assert encode_token(None) is None and encode_token(b"") is None


@pytest.mark.parametrize("record", EARLIER_RECORDS, ids=lambda r: "+".join(sorted(r)))
def test_records_of_earlier_versions_load_and_are_written_back_byte_for_byte(record: dict[str, Any]) -> None:
    offset = SourceOffset.from_record(record)
    assert offset.to_record() == record
    # what the stores write: the keys sorted (SQLite's column, the Kafka topic's value)
    assert json.dumps(offset.to_record(), sort_keys=True) == json.dumps(record, sort_keys=True)


def test_each_part_is_read_into_its_type(tmp_path: Any) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    for index, record in enumerate(EARLIER_RECORDS):
        store.commit("app", f"p{index}", record)
    read = [SourceOffset.from_record(r.offset) for r in store.records("app")]
    assert read[0] == SourceOffset(Position(1769860800, 3, TOKEN))
    assert read[1] == SourceOffset(Position(1700000000, 0))
    snapshot = read[2].snapshot
    assert snapshot is not None and snapshot.done == 1
    assert snapshot.progress("shop.orders") == CollectionProgress(ScanPosition(2, Int64(7), True), False, 4)
    assert read[3].snapshot == SnapshotState()
    incremental = read[4].incremental
    assert incremental is not None and incremental.paused and incremental.current == "shop.orders"
    assert read[4].completed_incremental == "ad-hoc-0" and read[5].incremental is None
    transaction = read[6].transaction
    assert transaction == TransactionState(
        "4e3f0a1c:12", True, False, 3, (("shop.orders", 2), ("shop.customers", 1)), 1769860803000, 1769860803001
    )


def test_an_incremental_snapshot_with_nothing_left_is_not_stored() -> None:
    finished = IncrementalSnapshotState.start("s", ["shop.orders"]).finish_collection()
    record = SourceOffset(Position(1, 1), incremental=finished, completed_incremental="s").to_record()
    assert record == {"sec": 1, "ord": 1, "resume_token": None, "incremental_snapshot_completed": "s"}


tokens = st.one_of(st.none(), st.text(min_size=1, max_size=12).map(lambda t: Position.token_bytes({"_data": t})))
positions = st.builds(Position, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), tokens)
namespaces = st.sampled_from(["shop.orders", "shop.customers", "a.b.c"])
progress = st.builds(
    CollectionProgress,
    st.one_of(
        st.builds(ScanPosition, st.integers(0, 14)),
        st.builds(lambda b, k: ScanPosition(b, k, True), st.just(2), st.integers(-(2**31), 2**31 - 1)),
    ),
    st.booleans(),
    st.integers(0, 10**9),
)
snapshots = st.dictionaries(namespaces, progress, max_size=3).map(lambda c: SnapshotState(MappingProxyType(c)))
incrementals = st.builds(
    lambda ns, paused: IncrementalSnapshotState.start("snap", ns, {ns[0]: {"n": Int64(paused)}}).pause(),
    st.lists(namespaces, min_size=1, max_size=3),
    st.booleans(),
)
transactions = st.builds(
    lambda counts, ended: TransactionState("lsid:1", True, ended, sum(counts.values()), tuple(counts.items()), 1, 2),
    st.dictionaries(namespaces, st.integers(1, 50), min_size=1, max_size=3),
    st.booleans(),
)


@given(
    positions,
    st.one_of(st.none(), snapshots),
    st.one_of(st.none(), incrementals),
    st.one_of(st.none(), transactions),
    st.one_of(st.none(), st.text(min_size=1, max_size=8)),
)
def test_every_offset_round_trips_through_its_json_record(
    position: Position,
    snapshot: SnapshotState | None,
    incremental: IncrementalSnapshotState | None,
    transaction: TransactionState | None,
    completed: str | None,
) -> None:
    offset = SourceOffset(position, snapshot, incremental, transaction, completed)
    stored = json.loads(json.dumps(offset.to_record()))
    restored = SourceOffset.from_record(stored)
    assert restored.to_record() == offset.to_record()
    assert restored == offset


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"ord": 1}, "integer 'sec' and 'ord'"),
        ({"sec": "x", "ord": 1}, "integer 'sec' and 'ord'"),
        ({"sec": 1, "ord": 1, "resume_token": "not base64!"}, "base64"),
        ({"sec": 1, "ord": 1, "initsync": True, "snapshot": []}, "'snapshot' is not an object"),
        ({"sec": 1, "ord": 1, "initsync": True, "snapshot": {"a.b": {"bracket": "x"}}}, "progress of 'a.b'"),
        ({"sec": 1, "ord": 1, "incremental_snapshot": {"id": 5}}, "'id' has the wrong type"),
        ({"sec": 1, "ord": 1, "transaction": "t"}, "transaction state is not an object"),
        ({"sec": 1, "ord": 1, "transaction": {"id": "t"}}, "transaction state is unreadable"),
        ({"sec": 1, "ord": 1, "transaction": {"v": 2, "id": "t", "data_collections": []}}, "version 2"),
    ],
)
def test_a_malformed_record_is_refused_naming_its_part(record: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SourceOffset.from_record(record)


def test_a_starting_connector_drops_unreadable_incremental_progress(caplog: pytest.LogCaptureFixture) -> None:
    record = {"sec": 1, "ord": 2, "resume_token": None, "incremental_snapshot": {"id": 5}}
    with caplog.at_level(logging.ERROR):
        restored = SourceOffset.restore(record)
    assert restored == SourceOffset(Position(1, 2))
    assert "incremental snapshot progress is unreadable" in caplog.text
    assert SourceOffset.restore(None) is None
    with pytest.raises(ValueError, match="integer 'sec'"):
        SourceOffset.restore({"ord": 1})  # without a position there is nothing to continue from


def test_the_kafka_signal_channels_position_round_trips_and_a_malformed_one_is_refused() -> None:
    offset = SourceOffset(Position(1, 2), signal_offsets=((0, 12), (1, 3)))
    record = offset.to_record()
    assert record["signal_offsets"] == {"0": 12, "1": 3}
    assert SourceOffset.from_record(json.loads(json.dumps(record))) == offset
    assert "signal_offsets" not in SourceOffset(Position(1, 2)).to_record()
    with pytest.raises(ValueError, match="'signal_offsets' is not an object"):
        SourceOffset.from_record({"sec": 1, "ord": 2, "signal_offsets": [12]})


# --- offsets keyed by topic.prefix (ServerOffsets) --------------------------------------------------------------


def test_a_connectors_offsets_carry_its_topic_prefix_and_another_prefix_starts_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mongocdc.engine.source_offset import ServerOffsets
    from mongocdc.offsets.memory import MemoryOffsetStore

    store = MemoryOffsetStore()
    old = ServerOffsets(store, "dbserver1")
    old.commit("inventory", "rs0", {"sec": 1, "ord": 2, "resume_token": None})
    assert store.load("inventory", "rs0") == {"sec": 1, "ord": 2, "resume_token": None, "server_id": "dbserver1"}
    assert old.load("inventory", "rs0") == {"sec": 1, "ord": 2, "resume_token": None, "server_id": "dbserver1"}
    renamed = ServerOffsets(store, "dbserver2")
    with caplog.at_level(logging.WARNING, logger="mongocdc.engine"):
        assert renamed.load("inventory", "rs0") is None  # as Kafka Connect: another prefix, another key
    assert "written for topic.prefix 'dbserver1', not 'dbserver2'" in caplog.text
    # an offset written without a prefix (before, or by offsets set/import) loads as it is
    store.commit("inventory", "rs1", {"sec": 5, "ord": 1, "resume_token": None})
    assert renamed.load("inventory", "rs1") == {"sec": 5, "ord": 1, "resume_token": None}
    assert SourceOffset.from_record(old.load("inventory", "rs0") or {}).position.sec == 1  # nothing else changes
    assert [r.partition for r in renamed.records("inventory")] == ["rs0", "rs1"]
    assert renamed.delete("inventory", "rs1") == 1 and renamed.exists


def test_the_wrapped_stores_own_attributes_show_through() -> None:
    from mongocdc.engine.exactly_once import is_transactional
    from mongocdc.engine.source_offset import ServerOffsets
    from mongocdc.offsets.memory import MemoryOffsetStore

    class Transactional(MemoryOffsetStore):
        transactional = True

    assert is_transactional(ServerOffsets(Transactional(), "p"))
    assert not is_transactional(ServerOffsets(MemoryOffsetStore(), "p"))
