"""The incremental snapshot's DBLog window and its progress state.

The property test runs whole incremental snapshots against a model collection and its change
stream, with writers interleaved anywhere (before, inside and after each chunk's window), and
checks that replaying what was emitted gives the collection and that no read ever overwrites a
newer change.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocdc.engine.incremental import (
    ID_TYPE_BRACKETS,
    IncrementalSnapshotState,
    SnapshotWindow,
    WindowError,
    WindowState,
    document_key,
    id_bracket,
    key_from_json,
    key_to_json,
)
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.events.codec import value_to_json
from mongocdc.events.position import Position
from tests.unit.engine.helpers import matches, sort_key

NS = "shop.orders"
OTHER = "shop.customers"


def key(value: Any) -> str:
    return value_to_json(value)


# --------------------------------------------------------------------------- type brackets


@pytest.mark.parametrize(
    ("value", "bracket"),
    [
        (MinKey(), "minKey"),
        (None, "null"),
        (1, "int"),
        (Int64(2**40), "long"),
        (2.5, "double"),
        (Decimal128("1.5"), "decimal"),
        ("a", "string"),
        ({"k": 1}, "object"),
        (b"\x01", "binData"),
        (Binary(b"\x01", 4), "binData"),
        (uuid.UUID(int=1), "binData"),
        (ObjectId(), "objectId"),
        (True, "bool"),
        (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "date"),
        (Timestamp(1, 2), "timestamp"),
        (Regex("a"), "regex"),
        (re.compile("a"), "regex"),
        (MaxKey(), "maxKey"),
    ],
)
def test_every_id_type_has_its_bracket(value: Any, bracket: str) -> None:
    assert bracket in ID_TYPE_BRACKETS[id_bracket(value)]


def test_javascript_ids_have_their_brackets_and_arrays_are_refused() -> None:
    from bson.code import Code

    assert ID_TYPE_BRACKETS[id_bracket(Code("x"))] == ("javascript",)
    assert ID_TYPE_BRACKETS[id_bracket(Code("x", {"a": 1}))] == ("javascriptWithScope",)
    assert id_bracket(Code("x")) < id_bracket(MaxKey())
    with pytest.raises(ValueError, match="no BSON type bracket"):
        id_bracket([1, 2])


def test_keys_keep_their_bson_type_in_the_offsets() -> None:
    for value in (1, Int64(1), 1.0, Decimal128("1"), "1", None, ObjectId(), MinKey(), {"a": Int64(2)}):
        restored = key_from_json(key_to_json(value))
        assert restored == value
        assert type(restored) is type(value)
    assert key_to_json(Int64(7)) == '{"$numberLong": "7"}'


# --------------------------------------------------------------------------- the window


def docs(*ids: Any) -> list[dict[str, Any]]:
    return [{"_id": i, "v": f"read-{i}"} for i in ids]


def test_changes_inside_the_window_drop_their_keys_and_the_rest_is_emitted_in_order() -> None:
    window = SnapshotWindow()
    window.open("c1", NS, docs(1, 2, 3, 4))
    assert window.state is WindowState.PENDING
    assert not window.on_stream_event(NS, key(2))  # before the open watermark: precedes the read
    assert window.watermark_open("c1")
    assert window.state is WindowState.OPEN
    assert window.on_stream_event(NS, key(3))
    assert not window.on_stream_event(NS, key(3))  # already dropped
    assert not window.on_stream_event(NS, key(9))  # not in the chunk
    assert not window.on_stream_event(OTHER, key(1))  # same _id in another collection
    assert len(window) == 3
    assert window.watermark_close("c1") == docs(1, 2, 4)
    assert window.state is WindowState.IDLE
    assert window.deduplicated == 1
    assert not window.on_stream_event(NS, key(1))  # after the close: nothing buffered


def test_keys_are_the_relaxed_json_of_the_id_as_in_change_events() -> None:
    oid = ObjectId()
    window = SnapshotWindow()
    window.open("c1", NS, docs(oid, "7", 7))
    window.watermark_open("c1")
    assert window.on_stream_event(NS, json.dumps({"$oid": str(oid)}))
    assert window.on_stream_event(NS, '"7"')
    assert window.watermark_close("c1") == docs(7)
    assert document_key({"_id": Int64(7)}) == "7"
    with pytest.raises(ValueError, match="no '_id'"):
        document_key({"x": 1})


def test_stale_watermarks_of_other_chunks_are_ignored() -> None:
    window = SnapshotWindow()
    assert not window.watermark_open("old")
    assert window.watermark_close("old") is None
    window.open("new", NS, docs(1))
    assert not window.watermark_open("old")
    assert window.watermark_close("old") is None
    assert window.state is WindowState.PENDING
    assert window.watermark_open("new")
    assert not window.watermark_open("new")  # a repeated open changes nothing
    assert window.watermark_close("new") == docs(1)
    assert window.watermark_close("new") is None


def test_driving_the_window_out_of_order_is_a_bug() -> None:
    window = SnapshotWindow()
    window.open("c1", NS, docs(1))
    with pytest.raises(WindowError, match="still pending"):
        window.open("c2", NS, docs(2))
    with pytest.raises(WindowError, match="came before its open watermark"):
        window.watermark_close("c1")


def test_an_empty_chunk_closes_with_nothing_to_emit() -> None:
    window = SnapshotWindow()
    window.open("c1", NS, [])
    window.watermark_open("c1")
    assert window.watermark_close("c1") == []


def test_cancel_drops_the_chunk_and_its_watermarks() -> None:
    window = SnapshotWindow()
    window.open("c1", NS, docs(1))
    window.watermark_open("c1")
    window.cancel()
    assert window.state is WindowState.IDLE and len(window) == 0
    assert window.watermark_close("c1") is None
    window.open("c2", NS, docs(2))  # ready for the next chunk


# --------------------------------------------------------------------------- progress state


def test_a_collection_is_walked_bracket_by_bracket_up_to_its_maximum_key() -> None:
    state = IncrementalSnapshotState.start("snap-1", [NS, OTHER, NS])
    assert state.collections == (NS, OTHER)
    assert state.current == NS and state.remaining == (OTHER,)
    assert not state.has_maximum_key
    state = state.with_maximum_key("m")
    assert state.maximum_bracket == 3
    assert state.chunk_query() == {"_id": {"$type": ["minKey"]}}
    state = state.next_bracket().next_bracket()
    assert state.bracket == 2
    assert state.chunk_query() == {"_id": {"$type": ["double", "int", "long", "decimal"]}}
    state = state.after_chunk(Int64(5), 2)
    assert state.chunk_query() == {
        "$and": [{"_id": {"$type": ["double", "int", "long", "decimal"]}}, {"_id": {"$gt": Int64(5)}}]
    }
    assert state.documents == 2 and state.total_documents == 2
    state = state.next_bracket()
    assert state.bracket == 3 and not state.has_last_key
    assert state.chunk_query() == {"$and": [{"_id": {"$type": ["string", "symbol"]}}, {"_id": {"$lte": "m"}}]}
    state = state.after_chunk("c", 1)
    assert state.chunk_query() == {
        "$and": [{"_id": {"$type": ["string", "symbol"]}}, {"_id": {"$gt": "c"}}, {"_id": {"$lte": "m"}}]
    }
    state = state.next_bracket()  # the maximum key's bracket is done: next collection
    assert state.current == OTHER
    assert not state.has_maximum_key and state.bracket == 0 and state.documents == 0
    assert state.total_documents == 3
    state = state.finish_collection()
    assert not state.running and state.current is None


def test_the_additional_filter_joins_the_chunk_and_maximum_key_queries() -> None:
    state = IncrementalSnapshotState.start("s", [NS, OTHER], {NS: {"status": "open", "n": Int64(3)}})
    assert state.maximum_key_query() == {"status": "open", "n": Int64(3)}
    state = state.with_maximum_key(10).next_bracket().next_bracket()
    assert state.chunk_query() == {
        "$and": [
            {"_id": {"$type": ["double", "int", "long", "decimal"]}},
            {"_id": {"$lte": 10}},
            {"status": "open", "n": Int64(3)},
        ]
    }
    state = state.finish_collection()
    assert state.maximum_key_query() == {}
    assert state.conditions == ()


def test_chunks_must_stay_in_their_bracket() -> None:
    state = IncrementalSnapshotState.start("s", [NS]).with_maximum_key(ObjectId())
    with pytest.raises(ValueError, match="not in the current bracket"):
        state.after_chunk(5, 1)
    with pytest.raises(ValueError, match="at least one document"):
        state.after_chunk(MinKey(), 0)
    with pytest.raises(ValueError, match="was not read yet"):
        IncrementalSnapshotState.start("s", [NS]).chunk_query()
    with pytest.raises(ValueError, match="no collection left"):
        IncrementalSnapshotState("s").finish_collection()
    with pytest.raises(ValueError, match="has no BSON type bracket"):
        IncrementalSnapshotState.start("s", [NS]).with_maximum_key([1])


def test_more_collections_join_the_running_snapshot_once() -> None:
    state = IncrementalSnapshotState.start("s", [NS]).with_maximum_key(3).after_chunk(MinKey(), 1)
    state = state.add_collections([NS, OTHER, "shop.items"], {NS: {"x": 1}, OTHER: {"y": 1}})
    assert state.collections == (NS, OTHER, "shop.items")
    assert state.filter_for(NS) is None  # already queued: unchanged
    assert state.filter_for(OTHER) == {"y": 1}
    assert state.has_last_key  # the current collection's progress is kept


def test_stop_some_or_all_collections() -> None:
    state = IncrementalSnapshotState.start("s", [NS, OTHER, "shop.items"], {OTHER: {"y": 1}})
    state = state.with_maximum_key(9).after_chunk(MinKey(), 1)
    kept = state.stop([OTHER, "shop.unknown"])
    assert kept.collections == (NS, "shop.items")
    assert kept.has_last_key and kept.has_maximum_key  # the current one goes on
    assert kept.conditions == ()
    moved = state.stop([NS])
    assert moved.current == OTHER
    assert not moved.has_last_key and not moved.has_maximum_key and moved.documents == 0
    stopped = state.stop()
    assert not stopped.running
    assert stopped.total_documents == 1 and stopped.snapshot_id == "s"


def test_pause_and_resume() -> None:
    state = IncrementalSnapshotState.start("s", [NS])
    assert state.pause().paused
    assert not state.pause().resume().paused
    assert state.pause().collections == (NS,)


def test_progress_data_matches_debeziums_in_progress_notification() -> None:
    state = IncrementalSnapshotState.start("s", [NS, OTHER])
    assert state.progress_data() == {
        "data_collections": f"{NS},{OTHER}",
        "current_collection_in_progress": NS,
        "maximum_key": "<null>",
        "last_processed_key": "<null>",
    }
    oid = ObjectId()
    state = state.with_maximum_key(oid).next_bracket().next_bracket().after_chunk(4, 1)
    assert state.progress_data()["maximum_key"] == json.dumps({"$oid": str(oid)})
    assert state.progress_data()["last_processed_key"] == "4"


def test_offset_record_layout() -> None:
    state = IncrementalSnapshotState.start("ad-hoc-1", [NS, OTHER], {OTHER: {"tier": Int64(2)}})
    state = state.with_maximum_key(Int64(100)).next_bracket().next_bracket().after_chunk(42, 10).pause()
    record = state.to_offset()
    assert SourceOffset(Position(1, 1), incremental=state).to_record()["incremental_snapshot"] == record
    assert record == {
        "id": "ad-hoc-1",
        "collections": [NS, OTHER],
        "conditions": {OTHER: '{"tier": {"$numberLong": "2"}}'},
        "bracket": 2,
        "last_key": '{"$numberInt": "42"}',
        "maximum_key": '{"$numberLong": "100"}',
        "paused": True,
        "documents": 10,
        "total_documents": 10,
    }
    assert IncrementalSnapshotState.from_offset(json.loads(json.dumps(record))) == state


def test_a_null_id_is_not_an_unknown_maximum_key() -> None:
    state = IncrementalSnapshotState.start("s", [NS]).with_maximum_key(None)
    assert state.to_offset()["maximum_key"] == "null"
    restored = IncrementalSnapshotState.from_offset(state.to_offset())
    assert restored.has_maximum_key and restored.maximum_key is None and restored.maximum_bracket == 1


bson_keys = st.one_of(
    st.none(),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.floats(allow_nan=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.binary(max_size=8).map(lambda b: Binary(b, 0)),
    st.booleans(),
    st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(9999, 1, 1), timezones=st.just(dt.UTC)).map(
        lambda d: d.replace(microsecond=(d.microsecond // 1000) * 1000)
    ),
    st.decimals(min_value=-(10**20), max_value=10**20, allow_nan=False, allow_infinity=False, places=2).map(
        lambda d: Decimal128(str(d))
    ),
    st.just(MinKey()),
    st.just(MaxKey()),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
)
namespaces = st.lists(st.sampled_from([NS, OTHER, "shop.items", "a.b.c"]), max_size=4)


@st.composite
def states(draw: st.DrawFn) -> IncrementalSnapshotState:
    collections = draw(namespaces)
    state = IncrementalSnapshotState.start(
        draw(st.text(min_size=1, max_size=8)),
        collections,
        {ns: {"f": draw(bson_keys)} for ns in collections if draw(st.booleans())},
    )
    if state.running and draw(st.booleans()):
        maximum = draw(bson_keys)
        state = state.with_maximum_key(maximum)
        while state.running and state.bracket < state.maximum_bracket and draw(st.booleans()):
            state = state.next_bracket()
        if state.running and state.has_maximum_key and draw(st.booleans()):
            last = draw(bson_keys.filter(lambda k: id_bracket(k) == state.bracket))
            state = state.after_chunk(last, draw(st.integers(1, 5000)))
    if draw(st.booleans()):
        state = state.pause()
    return state


@settings(max_examples=200)
@given(states())
def test_offset_round_trip(state: IncrementalSnapshotState) -> None:
    record = json.loads(json.dumps(state.to_offset()))  # JSON-safe as stored
    assert IncrementalSnapshotState.from_offset(record) == state


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": 5}, "'id' has the wrong type: 5"),
        ({"collections": "shop.orders"}, "'collections' has the wrong type"),
        ({"collections": [1]}, "'collections' must hold strings"),
        ({"bracket": True}, "'bracket' has the wrong type: True"),
        ({"bracket": 15}, "'bracket' 15 is not a type bracket"),
        ({"last_key": '{"$numberInt": "x"}'}, "'last_key' is not extended JSON"),
        ({"maximum_key": 5}, "'maximum_key' has the wrong type: 5"),
        ({"conditions": {NS: 1}}, "condition of 'shop.orders' is not text"),
        ({"conditions": {NS: "{nope"}}, "condition of 'shop.orders' is not extended JSON"),
        ({"documents": "3"}, "'documents' has the wrong type"),
    ],
)
def test_malformed_offsets_name_the_field(change: dict[str, Any], message: str) -> None:
    record = IncrementalSnapshotState.start("s", [NS]).to_offset() | change
    with pytest.raises(ValueError, match=re.escape(message)):
        IncrementalSnapshotState.from_offset(record)


# --------------------------------------------------------------------------- the window against a model collection

# Keys of three brackets (null, numbers, strings) so the walk crosses brackets; compared as MongoDB does.
MODEL_KEYS: list[Any] = [None, 0, 1, 2, 3, 4, 5, "a", "b", "c", "d"]


@dataclass
class Emitted:
    kind: str  # "read", "insert", "update", "delete"
    namespace: str
    key: Any
    version: int


@dataclass
class Model:
    """A collection (and a second one sharing its keys), its change stream, and the engine's loop."""

    chunk_size: int
    source: dict[str, dict[Any, int]] = field(default_factory=lambda: {NS: {}, OTHER: {}})
    oplog: list[tuple[Any, ...]] = field(default_factory=list)
    consumed: int = 0
    version: int = 0
    emitted: list[Emitted] = field(default_factory=list)
    window: SnapshotWindow = field(default_factory=SnapshotWindow)
    state: IncrementalSnapshotState = field(default_factory=lambda: IncrementalSnapshotState.start("snap", [NS]))
    stage: str = "need-chunk"  # → opened → read → waiting → need-chunk …, or done
    chunk: int = 0
    chunk_docs: list[dict[str, Any]] = field(default_factory=list)

    def write(self, namespace: str, doc_id: Any, delete: bool) -> None:
        """Another client writes; the change enters the stream (the oplog) in commit order."""
        docs = self.source[namespace]
        if delete and doc_id not in docs:
            return
        self.version += 1
        if delete:
            del docs[doc_id]
            op = "delete"
        else:
            op = "update" if doc_id in docs else "insert"
            docs[doc_id] = self.version
        self.oplog.append(("change", namespace, op, doc_id, self.version))

    def advance(self) -> None:
        """The engine's next step of the chunk protocol (open watermark, read, close watermark)."""
        chunk_id = f"chunk-{self.chunk}"
        if self.stage == "need-chunk":
            self.oplog.append(("open", chunk_id))
            self.stage = "opened"
        elif self.stage == "opened":
            self.chunk_docs = self.read_chunk()
            self.stage = "read"
        elif self.stage == "read":
            self.oplog.append(("close", chunk_id))
            self.window.open(chunk_id, NS, self.chunk_docs)
            self.stage = "waiting"

    def read_chunk(self) -> list[dict[str, Any]]:
        """What the engine does between the watermarks: read until a chunk has documents or all is read."""
        while self.state.running:
            docs = self.source[NS]
            if not self.state.has_maximum_key:
                if not docs:
                    self.state = self.state.finish_collection()
                    continue
                self.state = self.state.with_maximum_key(max(docs, key=sort_key))
            query = self.state.chunk_query()
            ids = sorted((i for i in docs if matches(query, i)), key=sort_key)[: self.chunk_size]
            if ids:
                return [{"_id": i, "version": docs[i]} for i in ids]
            self.state = self.state.next_bracket()
        return []

    def consume(self) -> None:
        """The streaming loop takes the next change stream entry (it is busy while a chunk is read)."""
        if self.consumed >= len(self.oplog) or self.stage in ("opened", "read"):
            return
        entry = self.oplog[self.consumed]
        self.consumed += 1
        if entry[0] == "change":
            _, namespace, op, doc_id, version = entry
            self.emitted.append(Emitted(op, namespace, doc_id, version))
            self.window.on_stream_event(namespace, value_to_json(doc_id))
        elif entry[0] == "open":
            self.window.watermark_open(entry[1])
        else:
            reads = self.window.watermark_close(entry[1])
            assert reads is not None, "the close watermark of the chunk in flight is never stale"
            for doc in reads:
                self.emitted.append(Emitted("read", NS, doc["_id"], doc["version"]))
            if self.chunk_docs:
                last = self.chunk_docs[-1]["_id"]
                self.state = self.state.after_chunk(last, len(self.chunk_docs))
                if len(self.chunk_docs) < self.chunk_size:
                    self.state = self.state.next_bracket()
            self.chunk += 1
            self.stage = "need-chunk" if self.state.running else "done"

    def finish(self) -> None:
        for _ in range(10_000):
            if self.stage == "done" and self.consumed == len(self.oplog):
                return
            if self.consumed < len(self.oplog) and self.stage not in ("opened", "read"):
                self.consume()
            else:
                self.advance()
        raise AssertionError("the snapshot did not finish")


writes = st.tuples(st.just("write"), st.sampled_from([NS, NS, NS, OTHER]), st.sampled_from(MODEL_KEYS), st.booleans())
steps = st.lists(
    st.one_of(writes, st.just(("consume",)), st.just(("advance",))),
    max_size=120,
)


@settings(max_examples=400, deadline=None)
@given(
    initial=st.lists(st.sampled_from(MODEL_KEYS), unique=True),
    chunk_size=st.integers(min_value=1, max_value=4),
    script=steps,
)
def test_window_emits_the_collection_and_never_overwrites_a_newer_change(
    initial: list[Any], chunk_size: int, script: list[tuple[Any, ...]]
) -> None:
    model = Model(chunk_size)
    for doc_id in initial:  # present before streaming starts: only the snapshot can emit them
        model.version += 1
        model.source[NS][doc_id] = model.version
    for step in script:
        if step[0] == "write":
            model.write(step[1], step[2], step[3])
        elif step[0] == "consume":
            model.consume()
        else:
            model.advance()
    model.finish()
    assert not model.state.running

    # Replaying the topic (latest event per key wins, deletes remove) gives the collections.
    replay: dict[str, dict[Any, int]] = {NS: {}, OTHER: {}}
    for event in model.emitted:
        if event.kind == "delete":
            replay[event.namespace].pop(event.key, None)
        else:
            replay[event.namespace][event.key] = event.version
    assert replay == model.source

    # No event, read or streamed, goes back in time for its key: a read never overwrites a newer change.
    latest: dict[tuple[str, Any], int] = {}
    for event in model.emitted:
        seen = latest.get((event.namespace, event.key), 0)
        assert event.version >= seen, (event, seen)
        latest[(event.namespace, event.key)] = event.version

    # Streamed changes come out exactly once each, in commit order, never held back by the window.
    streamed = [(e.namespace, e.kind, e.key, e.version) for e in model.emitted if e.kind != "read"]
    assert streamed == [entry[1:] for entry in model.oplog if entry[0] == "change"]
