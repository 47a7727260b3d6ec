"""Change documents read as raw BSON (what the change stream source reads) convert exactly like dicts."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import bson
import pytest
from bson import Decimal128, Int64, MaxKey, ObjectId, json_util
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

from mongocdc.events.changes import ControlChange, MalformedChangeError, StreamedChange, convert_change, namespace_of
from mongocdc.events.codec import raw_id_to_json, value_to_json
from mongocdc.events.split import FragmentBuffer
from mongocdc.events.transforms import FieldTransforms
from tests.unit.events.conftest import load_recorded

RECORDED = Path(__file__).parent / "recorded"


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json_util.loads(line) for line in (RECORDED / name).read_text().splitlines() if line.strip()]


ALL_RECORDED = load_recorded() + _jsonl("transactions.jsonl") + _jsonl("capture_modes.jsonl")


def raw(change: dict[str, Any]) -> RawBSONDocument:
    return RawBSONDocument(bson.encode(change))


AS_THE_SOURCE_READS: CodecOptions[RawBSONDocument] = CodecOptions(
    document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_MS
)
"""``sources/mongo/stream.RAW_CHANGES``: raw, with ``wallTime`` as milliseconds."""


def raw_ms(change: dict[str, Any]) -> RawBSONDocument:
    return bson.decode(bson.encode(change), AS_THE_SOURCE_READS)


def _comparable(item: StreamedChange | ControlChange) -> Any:
    """JSON texts compared as values (bsonjs and json_util may space them differently)."""
    if isinstance(item, ControlChange):
        return item
    event = item.event
    update = event.update_description
    texts = [event.after, event.before, update.updated_fields_json if update else None]
    return (
        [json.loads(t) if t is not None else None for t in texts],
        event.op,
        json.loads(event.key_json),
        event.source,
        update.removed_fields if update else None,
        update.truncated_arrays if update else None,
        item.position,
    )


@pytest.mark.parametrize("as_raw", [raw, raw_ms], ids=["datetime", "milliseconds"])
@pytest.mark.parametrize("index", range(len(ALL_RECORDED)))
def test_raw_change_converts_like_the_decoded_one(index: int, as_raw: Any) -> None:
    change = ALL_RECORDED[index]
    from_dict = convert_change(change, rs="rs0")
    from_raw = convert_change(as_raw(change), rs="rs0")
    assert _comparable(from_raw) == _comparable(from_dict)
    if isinstance(from_dict, StreamedChange):
        # the resume token's bytes are the change's _id bytes, not a re-encoding
        assert from_raw.position.resume_token == bson.encode(change["_id"])


def test_raw_documents_pass_through_field_transforms() -> None:
    transforms = FieldTransforms(
        exclude=["inventory.customers.email", "inventory.customers.address.zip"],
        renames=["inventory.customers.first_name:given_name"],
    )
    updates = [c for c in ALL_RECORDED if c.get("operationType") in ("insert", "update", "replace")]
    assert updates
    for change in updates:
        from_dict = convert_change(change, rs="rs0", transforms=transforms)
        from_raw = convert_change(raw(change), rs="rs0", transforms=transforms)
        assert _comparable(from_raw) == _comparable(from_dict)
    insert = next(c for c in updates if c["ns"]["coll"] == "customers" and "email" in (c.get("fullDocument") or {}))
    item = convert_change(raw(insert), rs="rs0", transforms=transforms)
    assert isinstance(item, StreamedChange) and item.event.after is not None
    after = json.loads(item.event.after)
    assert after == {"_id": 1004, "given_name": "Anne Marie"}


def test_raw_split_fragments_reassemble() -> None:
    fragments = _jsonl("split_fragments.jsonl")
    buffer = FragmentBuffer()
    whole = [w for w in (buffer.add(raw(f)) for f in fragments) if w is not None]
    reference = FragmentBuffer()
    decoded = [w for w in (reference.add(f) for f in fragments) if w is not None]
    assert len(whole) == len(decoded) == 2
    for got, want in zip(whole, decoded, strict=True):
        assert _comparable(convert_change(got, rs="rs0")) == _comparable(convert_change(want, rs="rs0"))


def test_a_wall_time_read_as_milliseconds_is_the_source_timestamp() -> None:
    change = next(c for c in ALL_RECORDED if c.get("operationType") == "insert" and "wallTime" in c)
    change = {**change, "wallTime": dt.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=dt.UTC)}
    item = convert_change(raw_ms(change), rs="rs0")
    assert isinstance(item, StreamedChange)
    assert item.event.source.wall_time_ms == 1714564800123
    assert item.event.source.ts_ms == 1714564800123


@pytest.mark.parametrize(
    "key",
    [
        ObjectId("65a1b2c3d4e5f60718293a4b"),
        "a\u2028b",
        1004,
        Int64(2**40),
        2.5,
        Decimal128("1.10"),
        {"a": 1, "b": "x"},
        MaxKey(),
    ],
    ids=["objectid", "string", "int32", "int64", "double", "decimal", "document", "maxkey"],
)
def test_the_key_read_from_raw_bytes_is_the_decoded_keys_text(key: Any) -> None:
    document_key = RawBSONDocument(bson.encode({"_id": key}))
    assert raw_id_to_json(document_key) == value_to_json(key)


def test_a_raw_document_key_without_id_is_a_malformed_change() -> None:
    change = next(c for c in ALL_RECORDED if c.get("operationType") == "insert")
    with pytest.raises(MalformedChangeError, match="documentKey has no _id"):
        convert_change(raw_ms({**change, "documentKey": {"shard": 1}}), rs="rs0")


def test_the_namespace_of_raw_and_decoded_changes() -> None:
    change = {"ns": {"db": "inventory", "coll": "orders"}}
    assert namespace_of(raw_ms(change)) == namespace_of(change) == ("inventory", "orders")
    assert namespace_of(raw_ms({"ns": {"db": "inventory"}})) == ("inventory", None)  # a database-wide event
    assert namespace_of({}) == (None, None)
