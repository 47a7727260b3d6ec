"""Keys and values on the wire, field by field against EVENT_FORMAT.md."""

from __future__ import annotations

import json
from typing import Any

from bson import Int64, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocdc import __version__
from mongocdc.events.changes import StreamedChange, convert_change
from mongocdc.events.codec import value_to_json
from mongocdc.events.envelope import EnvelopeCodec, topic_for, unwrap
from mongocdc.events.model import ChangeEvent, Op, SnapshotMarker, SourceInfo, TransactionBlock


def event_of(change: dict[str, Any]) -> ChangeEvent:
    item = convert_change(change, rs="rs0")
    assert isinstance(item, StreamedChange)
    return item.event


def test_key_encoding_matches_debezium() -> None:
    assert value_to_json(ObjectId("596e275826f08b2730779e1f")) == '{"$oid": "596e275826f08b2730779e1f"}'
    assert value_to_json(1004) == "1004"
    assert value_to_json(Int64(1004)) == "1004"
    assert value_to_json("abc") == '"abc"'


def test_key_bytes_are_compact_json(recorded: list[dict[str, Any]]) -> None:
    codec = EnvelopeCodec("fulfillment")
    key = codec.key(event_of(recorded[0]))
    assert key == b'{"id":"{\\"$oid\\": \\"65a0b1c2d3e4f5a6b7c8d9e0\\"}"}'
    assert json.loads(codec.key(event_of(recorded[2]))) == {"id": "1004"}


def test_value_has_every_field(recorded: list[dict[str, Any]]) -> None:
    codec = EnvelopeCodec("fulfillment")
    event = event_of(recorded[1])
    value = json.loads(codec.value(event, processed_ms=1704988200000))
    assert list(value) == ["before", "after", "updateDescription", "source", "op", "ts_ms", "transaction"]
    assert value["op"] == "u"
    assert value["ts_ms"] == 1704988200000
    assert value["before"] is None
    assert json.loads(value["after"])["age"] == 32
    assert value["updateDescription"]["removedFields"] == ["joined"]
    assert value["transaction"] is None
    source = value["source"]
    assert source["version"] == __version__
    assert source["connector"] == "mongodb"
    assert source["name"] == "fulfillment"
    assert source["ts_ms"] == 1704988099456
    assert source["snapshot"] == "false"
    assert (source["db"], source["collection"], source["ord"]) == ("inventory", "customers", 2)
    assert list(source) == [
        "version",
        "connector",
        "name",
        "ts_ms",
        "snapshot",
        "db",
        "sequence",
        "ts_us",
        "ts_ns",
        "collection",
        "ord",
        "lsid",
        "txnNumber",
        "wallTime",
    ]  # Debezium 3.6's Source struct: no rs
    assert (source["ts_us"], source["ts_ns"]) == (1704988099456000, 1704988099456000000)
    assert source["wallTime"] == 1704988099456
    assert source["lsid"] is None and source["txnNumber"] is None
    assert codec.topic(event) == "fulfillment.inventory.customers" == topic_for("fulfillment", "inventory", "customers")


def test_delete_value(recorded: list[dict[str, Any]]) -> None:
    value = json.loads(EnvelopeCodec("p").value(event_of(recorded[3]), 1))
    assert value["op"] == "d" and value["after"] is None and value["updateDescription"] is None


def test_transaction_block_is_written() -> None:
    event = ChangeEvent(
        Op.CREATE,
        "7",
        SourceInfo("d", "c", 5, 1, lsid="abc", txn_number=4),
        after='{"_id": 7}',
        transaction=TransactionBlock("abc:4", 2, 1),
    )
    value = json.loads(EnvelopeCodec("p").value(event, 1))
    assert value["transaction"] == {"id": "abc:4", "total_order": 2, "data_collection_order": 1}
    assert value["source"]["lsid"] == "abc" and value["source"]["txnNumber"] == 4


def test_snapshot_read_marker() -> None:
    event = ChangeEvent(Op.READ, "1", SourceInfo("d", "c", 0, 0, snapshot=SnapshotMarker.LAST), after='{"_id": 1}')
    value = json.loads(EnvelopeCodec("p").value(event, 1))
    assert value["op"] == "r" and value["source"]["snapshot"] == "last"


def test_schemas_enable_wraps_key_and_value(recorded: list[dict[str, Any]]) -> None:
    codec = EnvelopeCodec("fulfillment", schemas_enable=True)
    event = event_of(recorded[0])
    key = json.loads(codec.key(event))
    assert key["schema"]["name"] == "fulfillment.inventory.customers.Key"
    assert key["schema"]["fields"] == [{"type": "string", "optional": False, "field": "id"}]
    value = json.loads(codec.value(event, 5))
    assert value["schema"]["name"] == "fulfillment.inventory.customers.Envelope"
    schema_fields = [f["field"] for f in value["schema"]["fields"]]
    payload = value["payload"]
    assert set(payload) <= set(schema_fields)
    source_fields = next(f for f in value["schema"]["fields"] if f["field"] == "source")["fields"]
    assert set(payload["source"]) == {f["field"] for f in source_fields}
    plain = json.loads(EnvelopeCodec("fulfillment").value(event, 5))
    assert unwrap(value) == plain == unwrap(plain)


def test_fast_key_and_value_bytes_equal_the_dictionary_rendering(recorded: list[dict[str, Any]]) -> None:
    from mongocdc.events.envelope import _dumps, key_schema, value_payload, value_schema

    codec = EnvelopeCodec("fulfillment")
    events = [event_of(c) for c in recorded if c["operationType"] in ("insert", "update", "replace", "delete")]
    events.append(
        ChangeEvent(
            Op.CREATE,
            "7",
            SourceInfo("d", "c", 5, 1, lsid="abc", txn_number=4),
            after='{"_id": 7, "é": 1}',
            transaction=TransactionBlock("abc:4", 2, 1),
        )
    )
    wrapped = EnvelopeCodec("fulfillment", schemas_enable=True)
    for event in events:
        assert codec.value(event, 1234) == _dumps(value_payload(event, "fulfillment", 1234)).encode()
        db, coll = event.source.db, event.source.collection
        assert (
            wrapped.value(event, 1234)
            == _dumps(
                {"schema": value_schema("fulfillment", db, coll), "payload": value_payload(event, "fulfillment", 1234)}
            ).encode()
        )
        assert (
            wrapped.key(event)
            == _dumps({"schema": key_schema("fulfillment", db, coll), "payload": {"id": event.key_json}}).encode()
        )


_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
_longs = st.integers(min_value=0, max_value=2**53)


@settings(max_examples=300)
@given(
    prefix=_texts.filter(bool),
    source=st.builds(
        SourceInfo,
        db=_texts,
        collection=_texts,
        sec=_longs,
        ord=st.integers(min_value=0, max_value=2**31),
        wall_time_ms=st.none() | _longs,
        snapshot=st.sampled_from(SnapshotMarker),
        rs=st.none() | _texts,
        lsid=st.none() | _texts,
        txn_number=st.none() | _longs,
        read_ns=st.none() | _longs,
    ),
    before=st.none() | _texts,
    after=st.none() | _texts,
    op=st.sampled_from(Op),
    processed=_longs,
)
def test_value_bytes_equal_the_dictionary_rendering_for_any_source(
    prefix: str, source: SourceInfo, before: str | None, after: str | None, op: Op, processed: int
) -> None:
    from mongocdc.events.envelope import _dumps, value_payload

    event = ChangeEvent(op, "1", source, after=after, before=before)
    assert EnvelopeCodec(prefix).value(event, processed) == _dumps(value_payload(event, prefix, processed)).encode()


def test_a_change_and_an_incremental_read_carry_their_cluster_time_in_a_header_of_mongocdcs_own() -> None:
    """``__mongocdc.clusterTime``: what Debezium's value lacks once MongoDB gives ``wallTime`` (``source.ts_ms``
    is then the wall clock); an initial snapshot read has no place in the oplog and gets none."""
    codec = EnvelopeCodec("p")
    context = list(codec.headers or [])
    change = SourceInfo("d", "c", sec=1_700_000_010, ord=7, wall_time_ms=1_700_000_008_100)
    incremental = SourceInfo("d", "c", sec=1_700_000_011, ord=2, snapshot=SnapshotMarker.INCREMENTAL)
    initial = SourceInfo("d", "c", sec=0, ord=-1, snapshot=SnapshotMarker.TRUE, read_ns=1_700_000_000_000_000_000)
    stamp = b'{"$timestamp":{"t":1700000010,"i":7}}'
    assert codec.headers_for(change) == [*context, ("__mongocdc.clusterTime", stamp)]
    assert json.loads(stamp) == {"$timestamp": {"t": 1_700_000_010, "i": 7}}
    assert codec.headers_for(incremental)[-1] == ("__mongocdc.clusterTime", b'{"$timestamp":{"t":1700000011,"i":2}}')
    assert codec.headers_for(initial) == context
    assert EnvelopeCodec("p", extended_headers=False).headers_for(change) == [("__mongocdc.clusterTime", stamp)]
