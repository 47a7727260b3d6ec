"""Contract: change-stream behaviour mongocdc turns into Debezium events."""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from collections.abc import Callable

import pymongo
import pytest
from bson import Int64, ObjectId, Timestamp
from pymongo.database import Database
from pymongo.errors import OperationFailure, PyMongoError

from tests.contract.conftest import Doc, make_client
from tests.contract.helpers import (
    POLL_AWAIT_MS,
    changes,
    changes_until,
    is_marker,
    key_of,
    next_change,
)
from tests.services.mongo import MongoServer


def _marker() -> str:
    return f"marker-{uuid.uuid4().hex}"


# -- event shape (collection-level watch) ---------------------------------------


def test_collection_watch_insert_event_fields(db: Database[Doc]) -> None:
    """insert: operationType, ns {db, coll}, documentKey {_id}, fullDocument as inserted."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": 1, "name": "a", "nested": {"x": [1, 2]}})
        event = next_change(stream)
    assert event["operationType"] == "insert"
    assert event["ns"] == {"db": db.name, "coll": "c"}
    assert event["documentKey"] == {"_id": 1}
    assert event["fullDocument"] == {"_id": 1, "name": "a", "nested": {"x": [1, 2]}}


def test_change_event_id_is_resume_token(db: Database[Doc]) -> None:
    """An event's _id is its resume token: a document with a string _data; the stream's resume_token follows it."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": "a"})
        coll.insert_one({"_id": "b"})
        first, second = changes(stream, 2)
        assert stream.resume_token == second["_id"]
    for event in (first, second):
        token = event["_id"]
        assert isinstance(token, dict) and isinstance(token.get("_data"), str) and token["_data"], token
    assert first["_id"] != second["_id"]


def test_change_event_cluster_time_is_bson_timestamp(db: Database[Doc]) -> None:
    """clusterTime is a BSON Timestamp (seconds, increment) near the current time."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": 1})
        event = next_change(stream)
    cluster_time = event["clusterTime"]
    assert isinstance(cluster_time, Timestamp), type(cluster_time)
    assert abs(cluster_time.time - time.time()) < 300


def test_change_event_wall_time_is_datetime(db: Database[Doc]) -> None:
    """wallTime is a BSON date near the current time."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": 1})
        event = next_change(stream)
    wall_time = event.get("wallTime")
    assert isinstance(wall_time, datetime.datetime), event
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert abs((wall_time.replace(tzinfo=None) - now).total_seconds()) < 300


def test_events_have_increasing_cluster_time(db: Database[Doc]) -> None:
    """Events arrive in commit order with strictly increasing clusterTime."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        for index in range(6):
            coll.insert_one({"_id": index})
        events = changes(stream, 6)
    assert [key_of(event) for event in events] == list(range(6))
    times = [event["clusterTime"] for event in events]
    assert all(isinstance(value, Timestamp) for value in times), times
    assert all(earlier < later for earlier, later in zip(times, times[1:], strict=False)), times


def test_document_key_keeps_bson_type_of_id(db: Database[Doc]) -> None:
    """documentKey._id keeps the BSON type of the document's _id (int, long, double, string, ObjectId)."""
    coll = db["c"]
    ids: list[object] = [7, Int64(2**40), 2.5, "7", ObjectId()]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        for value in ids:
            coll.insert_one({"_id": value})
        events = changes(stream, len(ids))
    keys = [key_of(event) for event in events]
    assert keys == ids
    assert [type(key) for key in keys] == [type(value) for value in ids]


def test_update_event_has_update_description(db: Database[Doc]) -> None:
    """update: updateDescription with updatedFields (dotted paths), removedFields and truncatedArrays."""
    coll = db["c"]
    coll.insert_one({"_id": 1, "a": 1, "b": {"c": 1, "d": 2}, "gone": True})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.update_one({"_id": 1}, {"$set": {"a": 2, "b.c": 5}, "$unset": {"gone": ""}})
        event = next_change(stream)
    assert event["operationType"] == "update"
    assert event["documentKey"] == {"_id": 1}
    assert event["ns"] == {"db": db.name, "coll": "c"}
    description = event.get("updateDescription")
    assert isinstance(description, dict), event
    assert description["updatedFields"] == {"a": 2, "b.c": 5}
    assert description["removedFields"] == ["gone"]
    assert description["truncatedArrays"] == []


def test_update_description_reports_truncated_arrays(db: Database[Doc]) -> None:
    """A pipeline update that shortens an array is reported in updateDescription.truncatedArrays."""
    coll = db["c"]
    # The padding keeps the oplog delta smaller than the document; otherwise mongod
    # logs the pipeline update as a full replacement (a 'replace' event).
    coll.insert_one({"_id": 1, "arr": [1, 2, 3, 4, 5], "padding": "x" * 4096})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.update_one({"_id": 1}, [{"$set": {"arr": {"$slice": ["$arr", 2]}}}])
        event = next_change(stream)
    description = event.get("updateDescription")
    assert isinstance(description, dict), event
    assert description["truncatedArrays"] == [{"field": "arr", "newSize": 2}]
    assert description["updatedFields"] == {}
    assert description["removedFields"] == []


def test_update_lookup_returns_current_document(db: Database[Doc]) -> None:
    """full_document='updateLookup': an update event carries the document as it is after the update."""
    coll = db["c"]
    coll.insert_one({"_id": 1, "a": 1, "keep": "x"})
    with coll.watch(full_document="updateLookup", max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.update_one({"_id": 1}, {"$set": {"a": 2}})
        event = next_change(stream)
    assert event["operationType"] == "update"
    assert event["fullDocument"] == {"_id": 1, "a": 2, "keep": "x"}


def test_update_without_lookup_has_no_full_document(db: Database[Doc]) -> None:
    """Without updateLookup an update event has no fullDocument."""
    coll = db["c"]
    coll.insert_one({"_id": 1, "a": 1})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.update_one({"_id": 1}, {"$set": {"a": 2}})
        event = next_change(stream)
    assert event["operationType"] == "update"
    assert event.get("fullDocument") is None, event


def test_replace_event_fields(db: Database[Doc]) -> None:
    """replace: operationType 'replace', documentKey, fullDocument is the replacement, no updateDescription."""
    coll = db["c"]
    coll.insert_one({"_id": 1, "a": 1})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.replace_one({"_id": 1}, {"b": 2})
        event = next_change(stream)
    assert event["operationType"] == "replace"
    assert event["documentKey"] == {"_id": 1}
    assert event["fullDocument"] == {"_id": 1, "b": 2}
    assert "updateDescription" not in event


def test_delete_event_fields(db: Database[Doc]) -> None:
    """delete: operationType 'delete', ns, documentKey, no fullDocument (no pre-image by default)."""
    coll = db["c"]
    coll.insert_one({"_id": 1, "a": 1})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.delete_one({"_id": 1})
        event = next_change(stream)
    assert event["operationType"] == "delete"
    assert event["documentKey"] == {"_id": 1}
    assert event["ns"] == {"db": db.name, "coll": "c"}
    assert event.get("fullDocument") is None, event


def test_drop_collection_emits_drop_then_invalidate(db: Database[Doc]) -> None:
    """Dropping a watched collection emits 'drop' then 'invalidate', and the stream ends."""
    coll = db["c"]
    coll.insert_one({"_id": 1})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.drop()
        drop, invalidate = changes(stream, 2)
        assert drop["operationType"] == "drop"
        assert drop["ns"] == {"db": db.name, "coll": "c"}
        assert invalidate["operationType"] == "invalidate"
        assert stream.try_next() is None
        assert not stream.alive


def test_start_after_invalidate_token_resumes(db: Database[Doc]) -> None:
    """start_after an invalidate event's token opens a new stream on the re-created collection."""
    coll = db["c"]
    coll.insert_one({"_id": 1})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.drop()
        _, invalidate = changes(stream, 2)
    assert invalidate["operationType"] == "invalidate"
    with coll.watch(start_after=invalidate["_id"], max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": "again"})
        event = next_change(stream)
    assert event["operationType"] == "insert"
    assert key_of(event) == "again"


# -- scopes ------------------------------------------------------------------


def test_database_watch_sees_every_collection_of_its_database(
    client: pymongo.MongoClient[Doc], db: Database[Doc], db_name_factory: Callable[[], str]
) -> None:
    """db.watch() delivers changes of all collections in that database and none of other databases."""
    other = client[db_name_factory()]
    marker = _marker()
    with db.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        db["one"].insert_one({"_id": "in-one"})
        other["one"].insert_one({"_id": "elsewhere"})
        db["two"].insert_one({"_id": "in-two"})
        db["one"].insert_one({"_id": marker})
        events = changes_until(stream, is_marker(marker))
    assert [(event["ns"]["coll"], key_of(event)) for event in events] == [
        ("one", "in-one"),
        ("two", "in-two"),
        ("one", marker),
    ]
    assert {event["ns"]["db"] for event in events} == {db.name}


def test_client_watch_sees_every_database(
    client: pymongo.MongoClient[Doc], db: Database[Doc], db_name_factory: Callable[[], str]
) -> None:
    """client.watch() (whole deployment) delivers changes from every database."""
    other = client[db_name_factory()]
    names = {db.name, other.name}
    marker = _marker()
    with client.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        db["c"].insert_one({"_id": "first"})
        other["d"].insert_one({"_id": "second"})
        db["c"].insert_one({"_id": marker})
        events = [event for event in changes_until(stream, is_marker(marker)) if event.get("ns", {}).get("db") in names]
    assert [(event["ns"]["db"], event["ns"]["coll"], key_of(event)) for event in events] == [
        (db.name, "c", "first"),
        (other.name, "d", "second"),
        (db.name, "c", marker),
    ]


def test_watch_pipeline_match_filters_events(db: Database[Doc]) -> None:
    """A $match stage in the watch pipeline filters events server-side (here: by ns.coll)."""
    marker = _marker()
    pipeline: list[Doc] = [{"$match": {"ns.coll": {"$in": ["wanted"]}}}]
    with db.watch(pipeline, max_await_time_ms=POLL_AWAIT_MS) as stream:
        db["unwanted"].insert_one({"_id": 1})
        db["wanted"].insert_one({"_id": 2})
        db["unwanted"].insert_one({"_id": 3})
        db["wanted"].insert_one({"_id": marker})
        events = changes_until(stream, is_marker(marker))
    assert [(event["ns"]["coll"], key_of(event)) for event in events] == [("wanted", 2), ("wanted", marker)]


# -- resuming ----------------------------------------------------------------


def test_resume_after_token_replays_later_events(db: Database[Doc]) -> None:
    """resume_after an event's token, on a new stream after the old one closed, delivers exactly the later events."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": "a"})
        token = next_change(stream)["_id"]
    coll.insert_one({"_id": "b"})
    coll.update_one({"_id": "b"}, {"$set": {"x": 1}})
    coll.delete_one({"_id": "a"})
    with coll.watch(resume_after=token, max_await_time_ms=POLL_AWAIT_MS) as stream:
        events = changes(stream, 3)
    assert [(event["operationType"], key_of(event)) for event in events] == [
        ("insert", "b"),
        ("update", "b"),
        ("delete", "a"),
    ]


def test_start_after_token_replays_later_events(db: Database[Doc]) -> None:
    """start_after an event's token delivers exactly the later events."""
    coll = db["c"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        coll.insert_one({"_id": "a"})
        token = next_change(stream)["_id"]
    coll.insert_one({"_id": "b"})
    coll.insert_one({"_id": "c"})
    with coll.watch(start_after=token, max_await_time_ms=POLL_AWAIT_MS) as stream:
        events = changes(stream, 2)
    assert [key_of(event) for event in events] == ["b", "c"]


def test_start_at_operation_time_includes_that_operation(client: pymongo.MongoClient[Doc], db: Database[Doc]) -> None:
    """start_at_operation_time = a write's operationTime delivers that write and the later ones."""
    coll = db["c"]
    coll.insert_one({"_id": "before"})
    with client.start_session(causal_consistency=True) as session:
        coll.insert_one({"_id": "at"}, session=session)
        operation_time = session.operation_time
    assert isinstance(operation_time, Timestamp), f"no operationTime reported: {operation_time!r}"
    coll.insert_one({"_id": "after"})
    with coll.watch(start_at_operation_time=operation_time, max_await_time_ms=POLL_AWAIT_MS) as stream:
        events = changes(stream, 2)
    assert [key_of(event) for event in events] == ["at", "after"]


def test_post_batch_resume_token_on_idle_stream(db: Database[Doc]) -> None:
    """An idle stream (try_next() -> None) still has a resume token (postBatchResumeToken) that resumes correctly."""
    coll = db["c"]
    coll.insert_one({"_id": "seed"})
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        assert stream.try_next() is None
        token = stream.resume_token
    assert isinstance(token, dict) and token.get("_data"), token
    coll.insert_one({"_id": "after"})
    with coll.watch(resume_after=token, max_await_time_ms=POLL_AWAIT_MS) as stream:
        event = next_change(stream)
    assert key_of(event) == "after"


def test_resume_token_outside_history_fails_with_history_error(db: Database[Doc]) -> None:
    """Resuming from a mongod-format token older than the oplog fails with 286 ChangeStreamHistoryLost (or 260).

    The token is a v1 high-water-mark token (KeyString: Timestamp(1, 1), version 1,
    tokenType 0, txnOpIndex 0, fromInvalidate false), long before any oplog entry.
    """
    coll = db["c"]
    coll.insert_one({"_id": 1})
    ancient = {"_data": "82" + "00000001" + "00000001" + "2B0229296E04"}
    with (
        pytest.raises(OperationFailure) as failure,
        coll.watch(resume_after=ancient, max_await_time_ms=POLL_AWAIT_MS) as stream,
    ):
        next_change(stream, timeout=5)
    assert failure.value.code in (260, 286), failure.value.details


def test_garbage_resume_token_is_rejected(db: Database[Doc]) -> None:
    """A resume token that is not a token at all is refused, not silently read as 'now'."""
    coll = db["c"]
    coll.insert_one({"_id": 1})
    with (
        pytest.raises(OperationFailure),
        coll.watch(resume_after={"_data": "not-a-resume-token"}, max_await_time_ms=POLL_AWAIT_MS) as stream,
    ):
        next_change(stream, timeout=5)


def test_data_survives_server_restart(server_factory: Callable[[], MongoServer]) -> None:
    """Documents written before a clean restart are there after it (persistent storage)."""
    server = server_factory()
    name = f"cdc_{uuid.uuid4().hex[:16]}"
    mongo_client = make_client(server.uri)
    try:
        mongo_client[name]["c"].insert_many([{"_id": index} for index in range(10)])
    finally:
        mongo_client.close()
    server.restart()
    mongo_client = make_client(server.uri)
    try:
        assert sorted(doc["_id"] for doc in mongo_client[name]["c"].find()) == list(range(10))
    finally:
        mongo_client.close()


def test_resume_token_survives_server_restart(server_factory: Callable[[], MongoServer]) -> None:
    """A token taken before a restart resumes after it: events from before and after the restart follow it."""
    server = server_factory()
    name = f"cdc_{uuid.uuid4().hex[:16]}"
    mongo_client = make_client(server.uri)
    try:
        coll = mongo_client[name]["c"]
        with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
            coll.insert_one({"_id": "a"})
            token = next_change(stream)["_id"]
        coll.insert_one({"_id": "b"})
    finally:
        mongo_client.close()
    server.restart()
    mongo_client = make_client(server.uri)
    try:
        coll = mongo_client[name]["c"]
        coll.insert_one({"_id": "c"})
        with coll.watch(resume_after=token, max_await_time_ms=POLL_AWAIT_MS) as stream:
            events = changes(stream, 2)
        assert [key_of(event) for event in events] == ["b", "c"]
    finally:
        mongo_client.close()


# -- awaiting ----------------------------------------------------------------


def test_max_await_time_ms_blocks_idle_get_more(db: Database[Doc]) -> None:
    """On an idle stream, getMore waits about maxAwaitTimeMS before returning empty."""
    coll = db["c"]
    coll.insert_one({"_id": "seed"})
    with coll.watch(max_await_time_ms=1500) as stream:
        started = time.monotonic()
        event = stream.try_next()
        elapsed = time.monotonic() - started
    assert event is None
    assert 1.2 <= elapsed < 10, elapsed


def test_await_wakes_when_event_arrives(db: Database[Doc]) -> None:
    """A getMore blocked in maxAwaitTimeMS returns soon after a matching write, not at the timeout."""
    coll = db["c"]
    coll.insert_one({"_id": "seed"})
    errors: list[PyMongoError] = []

    def write() -> None:
        try:
            coll.insert_one({"_id": "late"})
        except PyMongoError as exc:
            errors.append(exc)

    with coll.watch(max_await_time_ms=8000) as stream:
        timer = threading.Timer(0.5, write)
        started = time.monotonic()
        timer.start()
        try:
            event = stream.try_next()
        finally:
            timer.join()
        elapsed = time.monotonic() - started
    assert not errors, errors
    assert event is not None and key_of(event) == "late", event
    assert elapsed < 5, elapsed
