"""Conversion of recorded MongoDB change documents into change events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bson import ObjectId, Timestamp, json_util

from mongocdc.events.changes import ControlChange, MalformedChangeError, StreamedChange, convert_change
from mongocdc.events.model import Op, SnapshotMarker
from mongocdc.events.position import Position


def streamed(change: dict[str, Any]) -> StreamedChange:
    item = convert_change(change, rs="rs0")
    assert isinstance(item, StreamedChange)
    return item


def test_insert_carries_full_document_key_and_source(recorded: list[dict[str, Any]]) -> None:
    item = streamed(recorded[0])
    event = item.event
    assert event.op is Op.CREATE
    assert event.key_json == '{"$oid": "65a0b1c2d3e4f5a6b7c8d9e0"}'
    assert event.after is not None
    after = json_util.loads(event.after)
    assert after == recorded[0]["fullDocument"]
    assert event.before is None and event.update_description is None
    s = event.source
    assert (s.db, s.collection, s.sec, s.ord, s.rs) == ("inventory", "customers", 1704988098, 1, "rs0")
    assert s.wall_time_ms == 1704988098123
    assert s.ts_ms == 1704988098123  # wall time on MongoDB 6.0+
    assert s.snapshot is SnapshotMarker.FALSE
    assert s.lsid is None and s.txn_number is None
    assert item.position == Position(1704988098, 1, Position.token_bytes(recorded[0]["_id"]))


def test_update_carries_update_description_and_looked_up_document(recorded: list[dict[str, Any]]) -> None:
    event = streamed(recorded[1]).event
    assert event.op is Op.UPDATE
    assert event.update_description is not None
    desc = event.update_description.to_json_dict()
    assert json.loads(desc["updatedFields"]) == {"age": 32}
    assert desc["removedFields"] == ["joined"]
    assert desc["truncatedArrays"] == [{"field": "tags", "size": 1}]
    assert json_util.loads(event.after or "null")["age"] == 32


def test_update_without_lookup_has_no_after_and_keeps_bson_types(recorded: list[dict[str, Any]]) -> None:
    event = streamed(recorded[9]).event
    assert event.after is None
    assert event.source.wall_time_ms is None
    assert event.source.ts_ms == 1704988107 * 1000  # cluster time seconds × 1000 before MongoDB 6.0
    assert event.update_description is not None
    fields = json.loads(event.update_description.updated_fields_json)
    assert fields == {"address.city": "Rome", "n": {"$numberDecimal": "1.10"}}
    assert event.update_description.truncated_arrays == ()


def test_replace_is_an_update_with_the_new_document(recorded: list[dict[str, Any]]) -> None:
    event = streamed(recorded[2]).event
    assert event.op is Op.UPDATE
    assert event.key_json == "1004"
    assert event.update_description is None
    assert json_util.loads(event.after or "null")["first_name"] == "Anne Marie"


def test_delete_has_no_after(recorded: list[dict[str, Any]]) -> None:
    event = streamed(recorded[3]).event
    assert event.op is Op.DELETE
    assert event.key_json == '"abc"'
    assert event.after is None and event.before is None
    assert event.namespace == "inventory.orders"


def test_transaction_fields_are_carried(recorded: list[dict[str, Any]]) -> None:
    """Debezium writes the session as the lsid document in strict JSON (the UUID as $binary subtype 04)."""
    event = streamed(recorded[4]).event
    assert event.source.lsid == (
        '{"id": {"$binary": "3K3UaY2bQ+GWoM3F6S1n3A==","$type": "04"},'
        '"uid": {"$binary": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","$type": "00"}}'
    )
    assert event.source.txn_number == 4


def test_a_session_without_a_transaction_number_is_no_transaction(recorded: list[dict[str, Any]]) -> None:
    change = {k: v for k, v in recorded[4].items() if k != "txnNumber"}
    source = streamed(change).event.source
    assert (source.lsid, source.txn_number) == (None, None)


@pytest.mark.parametrize(
    ("index", "operation", "db", "coll"),
    [
        (5, "drop", "inventory", "orders"),
        (6, "rename", "inventory", "customers"),
        (7, "dropDatabase", "inventory", None),
        (8, "invalidate", None, None),
    ],
)
def test_non_data_events_are_control_changes(
    recorded: list[dict[str, Any]], index: int, operation: str, db: str | None, coll: str | None
) -> None:
    item = convert_change(recorded[index])
    assert isinstance(item, ControlChange)
    assert (item.operation_type, item.db, item.collection) == (operation, db, coll)
    assert item.ends_stream == (operation == "invalidate")
    assert item.position.sec == recorded[index]["clusterTime"].time


def test_pre_image_is_carried_as_before() -> None:
    change = {
        "_id": {"_data": "01"},
        "operationType": "update",
        "clusterTime": Timestamp(10, 1),
        "ns": {"db": "d", "coll": "c"},
        "documentKey": {"_id": ObjectId("65a0b1c2d3e4f5a6b7c8d9e0")},
        "fullDocumentBeforeChange": {"_id": ObjectId("65a0b1c2d3e4f5a6b7c8d9e0"), "v": 1},
        "fullDocument": {"_id": ObjectId("65a0b1c2d3e4f5a6b7c8d9e0"), "v": 2},
        "updateDescription": {"updatedFields": {"v": 2}, "removedFields": []},
    }
    event = streamed(change).event
    assert json_util.loads(event.before or "null")["v"] == 1
    assert json_util.loads(event.after or "null")["v"] == 2


@pytest.mark.parametrize("missing", ["_id", "operationType", "clusterTime", "documentKey"])
def test_malformed_change_names_the_missing_field(recorded: list[dict[str, Any]], missing: str) -> None:
    change = dict(recorded[0])
    del change[missing]
    with pytest.raises(MalformedChangeError, match=missing):
        convert_change(change)


def test_cluster_time_must_be_a_timestamp(recorded: list[dict[str, Any]]) -> None:
    change = dict(recorded[0])
    change["clusterTime"] = 1704988098
    with pytest.raises(MalformedChangeError, match="BSON Timestamp"):
        convert_change(change)
