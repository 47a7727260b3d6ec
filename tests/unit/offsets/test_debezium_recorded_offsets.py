"""The offsets topic of a real run of Debezium MongoDB 3.6.1.Final in Kafka Connect 4.3.1 (no services).

``recorded/debezium_offsets_topic.jsonl`` is every record of the worker's ``connect-offsets`` topic
(25 partitions) as ``tests/services/record_debezium.py`` recorded it: connector ``dbz``, topic.prefix
``dbz``, against the SecantusDB test server; an initial snapshot, a streaming workload with two
transactions (``provide.transaction.metadata``), an incremental snapshot and heartbeats. mongocdc must
read every one of them as Debezium does, and write the same bytes for the same positions.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from mongocdc.engine.adoption import debezium_key, debezium_lsid, from_debezium, to_debezium
from mongocdc.engine.incremental import IncrementalSnapshotState
from mongocdc.errors import UsageError
from mongocdc.events.java import default_partition, java_hashmap_order
from mongocdc.offsets.connect import connect_value, live_offsets

RECORDED = Path(__file__).parent / "recorded" / "debezium_offsets_topic.jsonl"
RECORDS = [json.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]
OFFSETS_PARTITIONS = 25


def values() -> list[tuple[bytes, dict[str, Any]]]:
    return [(r["value"].encode(), json.loads(r["value"])) for r in RECORDS]


def test_every_record_has_debeziums_key_in_connects_partition() -> None:
    key = debezium_key("dbz", "dbz")
    assert {r["key"].encode() for r in RECORDS} == {key}
    assert {r["partition"] for r in RECORDS} == {default_partition(key, OFFSETS_PARTITIONS)}


def test_every_value_is_jackson_over_a_hashmap() -> None:
    for raw, offset in values():
        assert connect_value(offset) == raw
        assert list(offset) == java_hashmap_order(offset)


def test_the_live_offset_is_the_last_record() -> None:
    entries: list[tuple[bytes | None, bytes | None, str]] = [
        (r["key"].encode(), r["value"].encode(), f"connect-offsets[{r['partition']}]@{r['offset']}") for r in RECORDS
    ]
    [live] = live_offsets(entries)
    assert live.where == f"connect-offsets[4]@{RECORDS[-1]['offset']}"


def test_every_position_imports() -> None:
    kinds: dict[str, int] = {}
    for _, offset in values():
        if not offset:  # written with Debezium's notifications before its snapshot began
            with pytest.raises(UsageError, match="empty"):
                from_debezium(offset)
            kinds["empty"] = kinds.get("empty", 0) + 1
            continue
        adopted = from_debezium(offset).offset
        assert adopted["resume_token"] == offset["resume_token"]
        if offset.get("initsync"):
            kind = "initsync"
            assert adopted["initsync"] is True and adopted["snapshot"] == {}
        elif "incremental_snapshot_collections" in offset:
            kind = "incremental"
            state = IncrementalSnapshotState.from_offset(adopted["incremental_snapshot"])
            assert state.snapshot_id == "incremental-1"
            assert state.collections == ("inventory.incr", "inventory.customers")
        elif "transaction_id" in offset:
            kind = "transaction"
            assert "transaction" not in adopted
        else:
            kind = "stream"
            assert set(adopted) == {"sec", "ord", "resume_token"}
        if offset["sec"] >= 0:
            assert (adopted["sec"], adopted["ord"]) == (offset["sec"], offset["ord"])
        kinds[kind] = kinds.get(kind, 0) + 1
    assert set(kinds) == {"empty", "initsync", "incremental", "transaction", "stream"}


def test_streaming_positions_export_to_the_same_bytes() -> None:
    exported = 0
    for raw, offset in values():
        if set(offset) == {"sec", "ord", "resume_token"} and offset["sec"] >= 0:
            assert connect_value(to_debezium(offset).offset) == raw
            exported += 1
    assert exported > 20


def test_a_position_inside_a_transaction_exports_to_the_same_bytes() -> None:
    """The second event of transaction 32 (two collections, two events each so far)."""
    raw, offset = next((r, o) for r, o in values() if "transaction_data_collection_order_inventory.customers" in o)
    session = uuid.UUID(bytes=base64.b64decode("38pKJlmUTOCJWGg5ddHMgQ=="))
    assert debezium_lsid(str(session)) == offset["lsid"]
    mongocdc = {
        "sec": offset["sec"],
        "ord": offset["ord"],
        "resume_token": offset["resume_token"],
        "transaction": {
            "v": 1,
            "id": f"{session}:32",
            "begin_emitted": True,
            "ended": False,
            "total_order": 4,
            "data_collections": [["inventory.orders", 2], ["inventory.customers", 2]],
            "first_ts_ms": 0,
            "last_ts_ms": 0,
        },
    }
    assert connect_value(to_debezium(mongocdc).offset) == raw
