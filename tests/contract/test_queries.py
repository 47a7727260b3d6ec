"""Contract: the reads mongocdc's snapshot phase relies on (_id order, ranges, find options)."""

from __future__ import annotations

import datetime
import os
import random
from typing import Any

import pymongo
from bson import Int64, ObjectId, Timestamp
from pymongo import monitoring
from pymongo.database import Database

from tests.contract.conftest import Doc, Target, make_client


def _insert_shuffled(db: Database[Doc], ids: list[Any]) -> None:
    shuffled = list(ids)
    random.Random(42).shuffle(shuffled)
    db["c"].insert_many([{"_id": value, "v": index} for index, value in enumerate(shuffled)], ordered=True)


def _ids(db: Database[Doc], query: Doc | None = None) -> list[Any]:
    return [doc["_id"] for doc in db["c"].find(query or {}, {"_id": 1}).sort("_id", pymongo.ASCENDING)]


def test_id_sort_objectid(db: Database[Doc]) -> None:
    """Sorting on _id orders ObjectIds by their 12 bytes."""
    ids = [ObjectId(os.urandom(12)) for _ in range(30)]
    _insert_shuffled(db, ids)
    assert _ids(db) == sorted(ids, key=lambda oid: oid.binary)


def test_id_sort_strings_binary_order(db: Database[Doc]) -> None:
    """Sorting on _id orders strings by UTF-8 bytes (simple collation): 'B' < 'a', '10' < '9'."""
    ids = ["b", "B", "a", "aa", "", "é", "Z", "10", "9", "a b", "ä", "\U0001f600"]
    _insert_shuffled(db, ids)
    assert _ids(db) == sorted(ids, key=lambda text: text.encode())


def test_id_sort_mixed_numeric_types(db: Database[Doc]) -> None:
    """int32, int64 and double _ids sort together by numeric value and keep their BSON types."""
    ids: list[Any] = [3, Int64(1), 2.5, -1.5, Int64(10**12), 7, 0.25, Int64(-(2**40)), 100, 99.5]
    _insert_shuffled(db, ids)
    expected = sorted(ids, key=float)
    got = _ids(db)
    assert got == expected
    assert [type(value) for value in got] == [type(value) for value in expected]


def test_id_sort_bson_cross_type_order(db: Database[Doc]) -> None:
    """Sorting on _id follows BSON type order.

    null < numbers < strings < objects < binData < ObjectId < bool < date < timestamp.
    """
    ordered: list[Any] = [
        None,
        -5,
        2.5,
        Int64(10),
        "",
        "a",
        {"k": 1},
        b"\x01\x02",  # binData subtype 0
        ObjectId("000000000000000000000001"),
        ObjectId("ffffffffffffffffffffffff"),
        False,
        True,
        datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
        Timestamp(5, 1),
    ]
    _insert_shuffled(db, ordered)
    got = _ids(db)
    normalized = [
        value.replace(tzinfo=datetime.UTC) if isinstance(value, datetime.datetime) else value for value in got
    ]
    assert normalized == ordered
    assert [type(value) for value in normalized] == [type(value) for value in ordered]


def test_id_range_numeric_is_type_bracketed(db: Database[Doc]) -> None:
    """$gt/$lt on a number compares numerically across int/long/double and matches no strings."""
    ids: list[Any] = [1, Int64(2), 2.5, 3, Int64(4), 5.5, "3", "4", ObjectId()]
    _insert_shuffled(db, ids)
    assert _ids(db, {"_id": {"$gt": 2, "$lt": 5}}) == [2.5, 3, Int64(4)]
    assert _ids(db, {"_id": {"$gt": Int64(4)}}) == [5.5]
    assert _ids(db, {"_id": {"$lt": 2.0}}) == [1]


def test_id_range_string_is_type_bracketed(db: Database[Doc]) -> None:
    """$gt/$lt on a string compares strings only."""
    ids: list[Any] = ["a", "b", "bb", "c", "d", 5, ObjectId()]
    _insert_shuffled(db, ids)
    assert _ids(db, {"_id": {"$gt": "b", "$lt": "d"}}) == ["bb", "c"]
    assert _ids(db, {"_id": {"$gt": "c"}}) == ["d"]


def test_id_range_objectid(db: Database[Doc]) -> None:
    """$gt/$lt on an ObjectId compares ObjectIds by bytes."""
    ids = sorted((ObjectId(os.urandom(12)) for _ in range(20)), key=lambda oid: oid.binary)
    _insert_shuffled(db, [*ids, "x", 1])
    assert _ids(db, {"_id": {"$gt": ids[4], "$lt": ids[15]}}) == ids[5:15]


def test_id_keyset_pagination(db: Database[Doc]) -> None:
    """find({_id: {$gt: last}}).sort(_id).limit(n) pages through a collection exactly once."""
    ids = [ObjectId(os.urandom(12)) for _ in range(53)]
    _insert_shuffled(db, ids)
    seen: list[ObjectId] = []
    last: ObjectId | None = None
    for _ in range(100):
        query: Doc = {} if last is None else {"_id": {"$gt": last}}
        page = [doc["_id"] for doc in db["c"].find(query).sort("_id", pymongo.ASCENDING).limit(10)]
        if not page:
            break
        assert len(page) <= 10
        seen.extend(page)
        last = page[-1]
    assert seen == sorted(ids, key=lambda oid: oid.binary)


class _BatchRecorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.batches: list[tuple[str, int]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name in ("find", "getMore"):
            cursor = event.reply.get("cursor", {})
            batch = cursor.get("firstBatch", cursor.get("nextBatch", []))
            self.batches.append((event.command_name, len(batch)))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_find_sort_limit_batch_size(mongo_target: Target, db: Database[Doc]) -> None:
    """find with sort, limit and batch_size: right documents, right order, batches no larger than asked."""
    db["c"].insert_many([{"_id": index, "n": index} for index in range(25)])
    recorder = _BatchRecorder()
    watched = make_client(mongo_target.uri, event_listeners=[recorder])
    try:
        cursor = watched[db.name]["c"].find({}, sort=[("n", pymongo.DESCENDING)], limit=20, batch_size=7)
        docs = list(cursor)
    finally:
        watched.close()
    assert [doc["n"] for doc in docs] == list(range(24, 4, -1))
    assert recorder.batches[0] == ("find", 7), recorder.batches
    assert all(size <= 7 for _, size in recorder.batches), recorder.batches
    assert sum(size for _, size in recorder.batches) == 20, recorder.batches
    assert sum(1 for name, _ in recorder.batches if name == "getMore") >= 2, recorder.batches
