"""Debezium MongoDB offsets ↔ mongocdc offsets (pure): positions, snapshots, transactions, partitions, errors."""

from __future__ import annotations

import base64
import json
from typing import Any

import bson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.engine.adoption import (
    JAVA_NULL_ARRAY,
    choose_debezium_offsets,
    debezium_key,
    from_debezium,
    parse_debezium_token,
    to_debezium,
)
from mongocdc.engine.incremental import IncrementalSnapshotState
from mongocdc.errors import ConfigError, ExitCode, MongocdcError, UsageError
from mongocdc.offsets.connect import ConnectOffset, connect_value, parse_connect_key

DATA = "8269A1B2C3000000032B042C0100296E5A1004"
RAW = bson.encode({"_data": DATA})
TOKEN = base64.b64encode(RAW).decode()


def found(connector: str, partition: dict[str, str], offset: dict[str, Any] | None = None) -> ConnectOffset:
    from mongocdc.offsets.connect import connect_key

    key = connect_key(connector, partition)
    value = offset or {"sec": 1, "ord": 1}
    return ConnectOffset(key, connector, partition, value, json.dumps(value).encode(), "connect-offsets[0]@0")


# --- Debezium → mongocdc ----------------------------------------------------------------------


def test_a_streaming_position_keeps_its_token_byte_for_byte() -> None:
    adopted = from_debezium({"sec": 1769860800, "ord": 3, "resume_token": TOKEN})
    assert adopted.offset == {"sec": 1769860800, "ord": 3, "resume_token": TOKEN}
    assert adopted.notes == ()


def test_a_token_without_an_event_takes_its_cluster_time_from_the_token() -> None:
    adopted = from_debezium({"sec": -1, "ord": -1, "resume_token": TOKEN})
    assert (adopted.offset["sec"], adopted.offset["ord"]) == (0x69A1B2C3, 3)


def test_a_token_that_does_not_say_its_time_keeps_sec_0() -> None:
    raw = base64.b64encode(bson.encode({"_data": "00AB"})).decode()
    adopted = from_debezium({"sec": -1, "ord": -1, "resume_token": raw})
    assert (adopted.offset["sec"], adopted.offset["ord"]) == (0, 0)
    assert adopted.notes and "token alone" in adopted.notes[0]


def test_debezium_1x_stored_the_data_hex_string() -> None:
    assert parse_debezium_token(DATA) == RAW
    adopted = from_debezium({"sec": 5, "ord": 1, "resume_token": DATA})
    assert base64.b64decode(adopted.offset["resume_token"]) == RAW


def test_a_position_without_a_token_resumes_at_its_time() -> None:
    assert from_debezium({"sec": 1769860800, "ord": 0}).offset == {"sec": 1769860800, "ord": 0, "resume_token": None}
    assert from_debezium({"sec": "1769860800", "ord": "2"}).offset["ord"] == 2  # Debezium reads numbers in text too


@pytest.mark.parametrize(
    ("offset", "says"),
    [
        ({"sec": 1, "ord": 1, "resume_token": "not a token!"}, "neither Base64"),
        ({"sec": 1, "ord": 1, "resume_token": base64.b64encode(bson.encode({"x": 1})).decode()}, "neither Base64"),
        ({"sec": 1, "ord": 1, "resume_token": 7}, "not a string"),
        ({"sec": -1, "ord": -1}, "neither a resume token nor a cluster time"),
        ({"ord": 1}, "neither a resume token nor a cluster time"),
        ({"sec": "soon", "ord": 1}, "'sec' is not an integer"),
        ({"sec": True, "ord": 1}, "'sec' is not an integer"),
        ({"sec": 2**33, "ord": 1, "resume_token": TOKEN}, "out of range"),
        ({"sec": 1, "ord": 1, "incremental_snapshot_collections": "[{"}, "not JSON"),
        ({"sec": 1, "ord": 1, "incremental_snapshot_collections": "{}"}, "not a JSON list"),
        (
            {
                "sec": 1,
                "ord": 1,
                "incremental_snapshot_collections": json.dumps(
                    [
                        {
                            "incremental_snapshot_collections_id": "db.c",
                            "incremental_snapshot_collections_additional_condition": "(status = 'A')",
                        }
                    ]
                ),
            },
            "filter of db.c is not a JSON document",
        ),
    ],
)
def test_what_is_not_a_debezium_offset_is_exit_2(offset: dict[str, Any], says: str) -> None:
    with pytest.raises(UsageError) as caught:
        from_debezium(offset)
    assert says in caught.value.message and caught.value.hint
    assert caught.value.exit_code == ExitCode.USAGE


def test_an_unfinished_initial_snapshot_is_run_again_from_the_start() -> None:
    adopted = from_debezium({"sec": 1769860800, "ord": 3, "resume_token": TOKEN, "initsync": True})
    assert adopted.offset == {"sec": 1769860800, "ord": 3, "resume_token": TOKEN, "initsync": True, "snapshot": {}}
    assert "again from the start" in adopted.notes[0]


def test_transaction_counters_are_dropped_with_a_note() -> None:
    adopted = from_debezium(
        {
            "sec": 9,
            "ord": 2,
            "lsid": '{"id": {"$binary": "…"}}',
            "txnNumber": 4,
            "resume_token": TOKEN,
            "transaction_id": "abc:4",
            "transaction_data_collection_order_db.c": 3,
        }
    )
    assert adopted.offset == {"sec": 9, "ord": 2, "resume_token": TOKEN}
    assert len(adopted.notes) == 1 and "new BEGIN" in adopted.notes[0]


def test_unknown_fields_are_named() -> None:
    adopted = from_debezium({"sec": 9, "ord": 2, "resume_token": TOKEN, "h": 123, "rs": "rs0"})
    assert adopted.notes == ("fields mongocdc does not use were left out: h, rs",)


def test_an_incremental_snapshot_continues_with_its_collections_and_filters() -> None:
    collections = [
        {"incremental_snapshot_collections_id": "db.a", "incremental_snapshot_collections_additional_condition": None},
        {"incremental_snapshot_collections_id": "nodot", "incremental_snapshot_collections_additional_condition": None},
        {
            "incremental_snapshot_collections_id": "db.b",
            "incremental_snapshot_collections_additional_condition": '({"n": {"$gt": 5}})',
        },
    ]
    adopted = from_debezium(
        {
            "sec": 9,
            "ord": 2,
            "resume_token": TOKEN,
            "incremental_snapshot_primary_key": "aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b",
            "incremental_snapshot_maximum_key": JAVA_NULL_ARRAY,
            "incremental_snapshot_collections": json.dumps(collections),
            "incremental_snapshot_correlation_id": None,
        },
        new_snapshot_id="debezium-dbz",
    )
    state = IncrementalSnapshotState.from_offset(adopted.offset["incremental_snapshot"])
    assert state.snapshot_id == "debezium-dbz"
    assert state.collections == ("db.a", "db.b")
    assert state.filter_for("db.b") == {"n": {"$gt": 5}}
    assert "db.a is read again from its first document, then db.b" in adopted.notes[0]


def test_an_empty_incremental_snapshot_list_is_no_snapshot() -> None:
    adopted = from_debezium({"sec": 9, "ord": 2, "resume_token": TOKEN, "incremental_snapshot_collections": "[]"})
    assert "incremental_snapshot" not in adopted.offset


# --- mongocdc → Debezium ------------------------------------------------------------------------


def test_export_writes_the_position_in_debeziums_field_order() -> None:
    exported = to_debezium({"sec": 1769860800, "ord": 3, "resume_token": TOKEN})
    assert connect_value(exported.offset) == (b'{"sec":1769860800,"ord":3,"resume_token":"' + TOKEN.encode() + b'"}')
    assert connect_value(to_debezium({"sec": 5, "ord": 0, "resume_token": None}).offset) == b'{"sec":5,"ord":0}'


def test_export_of_an_unfinished_snapshot_is_debeziums_initsync() -> None:
    exported = to_debezium(
        {
            "sec": 5,
            "ord": 1,
            "resume_token": TOKEN,
            "initsync": True,
            "snapshot": {"db.a": {"bracket": 0, "last_key": None, "done": True, "documents": 3}},
            "transaction": {"id": "x:1", "ended": False, "data_collections": [["db.a", 1]]},
        }
    )
    assert list(exported.offset) == ["sec", "ord", "resume_token", "initsync"]
    assert "1 collections done" in exported.notes[0] and "again from the start" in exported.notes[0]


def test_export_of_an_open_transaction_carries_its_session_and_counts() -> None:
    state = {"v": 1, "id": "4e3f:12", "ended": False, "data_collections": [["db.b", 1], ["db.a", 2]]}
    exported = to_debezium({"sec": 5, "ord": 1, "resume_token": TOKEN, "transaction": state}).offset
    assert exported["lsid"] == "4e3f" and exported["txnNumber"] == 12 and exported["transaction_id"] == "4e3f:12"
    assert exported["transaction_data_collection_order_db.a"] == 2
    ended = to_debezium({"sec": 5, "ord": 1, "resume_token": TOKEN, "transaction": {**state, "ended": True}}).offset
    assert list(ended) == ["sec", "ord", "resume_token"]


def test_export_of_a_paused_incremental_snapshot_says_it_resumes() -> None:
    state = IncrementalSnapshotState.start("sig", ["db.a"]).pause()
    exported = to_debezium({"sec": 5, "ord": 1, "resume_token": TOKEN, "incremental_snapshot": state.to_offset()})
    assert exported.offset["incremental_snapshot_correlation_id"] == "sig"
    assert "no longer paused" in exported.notes[0]


@pytest.mark.parametrize(
    "offset",
    [
        {"ord": 1},
        {"sec": 1, "ord": 1, "resume_token": "%%%"},
        {"sec": 1, "ord": 1, "resume_token": TOKEN, "incremental_snapshot": {"id": 5}},
    ],
)
def test_a_broken_mongocdc_offset_is_exit_2(offset: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        to_debezium(offset)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.one_of(st.none(), st.binary(min_size=1, max_size=40).map(lambda b: "82" + b.hex().upper())),
)
def test_a_streaming_position_survives_the_round_trip(sec: int, ord_: int, data: str | None) -> None:
    token = None if data is None else base64.b64encode(bson.encode({"_data": data})).decode()
    offset = {"sec": sec, "ord": ord_, "resume_token": token}
    value = json.loads(connect_value(to_debezium(offset).offset))
    assert from_debezium(value).offset == offset


# --- which stored offsets ------------------------------------------------------------------------


def test_the_current_key_goes_to_mongocdcs_one_partition() -> None:
    current = found("dbz", {"server_id": "app"})
    legacy = found("dbz", {"server_id": "app", "rs": "rs0"})
    chosen = choose_debezium_offsets(
        [legacy, current, found("x", {"server_id": "app"})], "dbz", "app", ["rs0"], where="t"
    )
    assert chosen == [("rs0", current)]


def test_older_per_replica_set_keys_go_to_the_partitions_of_the_same_name() -> None:
    rs0 = found("dbz", {"server_id": "app", "rs": "rs0"})
    rs1 = found("dbz", {"server_id": "app", "rs": "rs1"})
    assert choose_debezium_offsets([rs1, rs0], "dbz", "app", ["rs0", "rs1"], where="t") == [("rs0", rs0), ("rs1", rs1)]
    cluster = found("dbz", {"server_id": "app", "rs": "cluster"})
    assert choose_debezium_offsets([cluster], "dbz", "app", ["cluster"], where="t") == [("cluster", cluster)]
    assert choose_debezium_offsets([rs1], "dbz", "app", ["mine"], where="t", explicit=True) == [("mine", rs1)]
    with pytest.raises(UsageError, match="none is for mongocdc's partitions"):
        choose_debezium_offsets([rs1], "dbz", "app", ["rs0"], where="t")


@pytest.mark.parametrize(
    ("stored", "partitions", "error", "says"),
    [
        ([], ["rs0"], UsageError, "it holds no offsets at all"),
        ([found("other", {"server_id": "app"})], ["rs0"], UsageError, "it holds offsets of 'other'"),
        ([found("dbz", {"table": "t"})], ["rs0"], UsageError, "not a Debezium MongoDB connector's"),
        ([found("dbz", {"server_id": "inventory"})], ["rs0"], ConfigError, "topic.prefix 'inventory'"),
        ([found("dbz", {"server_id": "app"})], ["shard0", "shard1"], ConfigError, "each shard's replica set"),
    ],
)
def test_offsets_that_cannot_be_adopted(
    stored: list[ConnectOffset], partitions: list[str], error: type[MongocdcError], says: str
) -> None:
    with pytest.raises(error) as caught:
        choose_debezium_offsets(stored, "dbz", "app", partitions, where="topic connect-offsets")
    assert says in caught.value.message and caught.value.hint
    assert caught.value.exit_code in (ExitCode.USAGE, ExitCode.CONFIG)


def test_debezium_keys_parse_back() -> None:
    assert parse_connect_key(debezium_key("dbz", "app", "rs0")) == ("dbz", {"rs": "rs0", "server_id": "app"})
