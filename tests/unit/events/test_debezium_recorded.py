"""mongocdc's records against what the real Debezium 3.6.1 wrote for the same change events.

``recorded/debezium/`` holds every record Debezium's MongoDB connector wrote in Kafka Connect for a
workload covering every BSON and ``_id`` type, every update form, transactions and snapshots, and
the change events it consumed (see its README). Here each recorded change event goes through
mongocdc's conversion, transaction tracking and envelope, and the records must be Debezium's byte
for byte: key, partition, headers, value, tombstones, transaction topic. Only what cannot be equal
is replaced on both sides: the connector version, the processing time (``ts_ms``), the run id.
The initial snapshot's reads are compared on their documents and keys (their times are the read's).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import bson
import pytest
from bson import json_util
from bson.raw_bson import RawBSONDocument

from mongocdc.engine.transactions import TransactionTracker
from mongocdc.events.changes import StreamedChange, convert_change
from mongocdc.events.codec import document_to_json, value_to_json
from mongocdc.events.envelope import CONTEXT_HEADER_PREFIX, EnvelopeCodec, heartbeat_record
from mongocdc.events.java import default_partition
from mongocdc.events.model import ChangeEvent, Op
from tests.unit.events.helpers import RECORDED, change_events, debezium_records, read_jsonl

PREFIX = "dbz"
PARTITIONS = 3


def _normal(value: str | None) -> Any:
    """A value with what cannot be equal replaced: the version and the processing time."""
    if value is None:
        return None
    data = json.loads(value)
    payload = data["payload"] if set(data) == {"schema", "payload"} else data
    if isinstance(payload, dict) and "source" in payload:
        payload["source"]["version"] = "<version>"
        payload["ts_ms"] = "<processed>"
    return data


def _headers(headers: list[dict[str, Any]] | list[tuple[str, Any]] | None) -> list[tuple[str, str]]:
    out = []
    for header in headers or []:
        name, value = (header["key"], header["value"]) if isinstance(header, dict) else header
        text = value.decode() if isinstance(value, bytes) else value
        out.append((name, "<run>" if name == CONTEXT_HEADER_PREFIX + "runId" else text))
    return out


def mongocdc_stream(schemas: bool) -> list[dict[str, Any]]:
    """The records mongocdc writes for the recorded change events, in Debezium's record layout."""
    codec = EnvelopeCodec(PREFIX, schemas_enable=schemas)
    tracker = TransactionTracker()
    out: list[dict[str, Any]] = []

    def add(topic: str, key: bytes, value: bytes | None, headers: Any) -> None:
        out.append(
            {
                "topic": topic,
                "partition": default_partition(key, PARTITIONS),
                "key": key.decode(),
                "value": None if value is None else value.decode(),
                "headers": headers,
            }
        )

    for change in change_events(schemas):
        raw = RawBSONDocument(bson.encode(json_util.loads(json.dumps(change))))
        item = convert_change(raw)
        assert isinstance(item, StreamedChange)
        before, event = tracker.on_event(item.event, 0)
        for record in before:
            add(f"{PREFIX}.transaction", record.key_bytes(schemas), record.value_bytes(schemas), None)
        add(codec.topic(event), codec.key(event), codec.value(event, 0), codec.headers)
        if event.op is Op.DELETE:
            add(codec.topic(event), codec.key(event), None, codec.headers)
    return out


def streamed(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Streamed data records and transaction records per (topic, key), in order."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        topic = record["topic"]
        if not topic.startswith(PREFIX + "."):
            continue
        value = record["value"]
        payload = _normal(value)
        if payload is not None and set(payload) == {"schema", "payload"}:
            payload = payload["payload"]
        if isinstance(payload, dict) and payload.get("op") == "r":
            continue
        grouped[(topic, record["key"])].append(
            {
                "partition": record["partition"],
                "value": _normal(value),
                "headers": _headers(record["headers"]),
            }
        )
    return grouped


@pytest.mark.parametrize("schemas", [False, True], ids=["schemas.enable=false", "schemas.enable=true"])
def test_streamed_records_are_debeziums(schemas: bool) -> None:
    theirs = streamed(debezium_records(schemas))
    ours = streamed(mongocdc_stream(schemas))
    assert set(ours) == set(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key
    # The recording covers what it claims to.
    ops = [r["value"] for rs in theirs.values() for r in rs]
    assert any(v is None for v in ops)  # tombstones
    assert sum(1 for (topic, _), _ in theirs.items() if topic == f"{PREFIX}.transaction") == 2


def test_initial_snapshot_reads_have_debeziums_keys_documents_and_partitions() -> None:
    """Every document the snapshot read, rendered by mongocdc from the workload's input."""
    documents: dict[str, dict[str, Any]] = {}
    for step in read_jsonl(RECORDED / "input.jsonl"):
        if step.get("phase") == "snapshot" and step.get("after") is not None:
            document = json_util.loads(json.dumps(step["after"]))
            documents.setdefault(f"{PREFIX}.{step['ns']}", {})[value_to_json(document["_id"])] = document
    reads = 0
    for record in debezium_records(False):
        value = json.loads(record["value"]) if record["value"] else None
        if not value or value.get("op") != "r" or value["source"]["snapshot"] not in ("true", "last"):
            continue
        key_id = json.loads(record["key"])["id"]
        document = documents[record["topic"]][key_id]
        key = json.dumps({"id": key_id}, separators=(",", ":"), ensure_ascii=False).encode()
        assert record["key"] == key.decode()
        assert record["partition"] == default_partition(key, PARTITIONS)
        assert value["after"] == document_to_json(RawBSONDocument(bson.encode(document)))
        source = value["source"]
        assert (source["ord"], source["wallTime"], source["lsid"]) == (-1, None, None)
        assert source["ts_ns"] // 1000 == source["ts_us"] and source["ts_us"] // 1000 == source["ts_ms"]
        reads += 1
    assert reads == sum(len(d) for d in documents.values()) > 40


@pytest.mark.parametrize("schemas", [False, True], ids=["schemas.enable=false", "schemas.enable=true"])
def test_heartbeats_are_debeziums(schemas: bool) -> None:
    beats = [r for r in debezium_records(schemas) if r["topic"] == f"__debezium-heartbeat.{PREFIX}"]
    assert beats
    for beat in beats:
        ts_ms = json.loads(beat["value"])
        ts_ms = ts_ms["payload"]["ts_ms"] if schemas else ts_ms["ts_ms"]
        key, value = heartbeat_record(PREFIX, ts_ms, schemas)
        assert (key.decode(), value.decode(), beat["partition"], beat["headers"]) == (
            beat["key"],
            beat["value"],
            0,
            [],
        )


def test_value_schema_is_debeziums() -> None:
    """With schemas.enable, the Connect schema of keys and values is Debezium's, field for field."""
    codec = EnvelopeCodec(PREFIX, schemas_enable=True)
    seen = 0
    for record in debezium_records(True):
        if not record["topic"].startswith(f"{PREFIX}.inventory.") or record["value"] is None:
            continue
        key_schema = json.loads(record["key"])["schema"]
        value_schema = json.loads(record["value"])["schema"]
        payload = json.loads(record["value"])["payload"]
        db, collection = payload["source"]["db"], payload["source"]["collection"]
        event = ChangeEvent(Op.READ, "1", _source(db, collection))
        assert json.loads(codec.key(event))["schema"] == key_schema
        ours = json.loads(codec.value(event, 0))["schema"]
        assert ours == value_schema
        seen += 1
    assert seen > 50


def _source(db: str, collection: str) -> Any:
    from mongocdc.events.model import SourceInfo

    return SourceInfo(db, collection, 0, 0)
