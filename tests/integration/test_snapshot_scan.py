"""CollectionScanner against the MongoDB test server: one cursor for a fresh scan, brackets to resume."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import bson
import pytest
from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Timestamp
from pymongo import MongoClient, monitoring

from mongocdc.events.snapshot import ID_TYPE_BRACKETS, ScanPosition
from mongocdc.sources.mongo.scan import CollectionScanner, id_bracket


class Finds(monitoring.CommandListener):
    def __init__(self) -> None:
        self.filters: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "find":
            self.filters.append(dict(event.command.get("filter", {})))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def _bytes(ids: list[Any]) -> list[bytes]:
    """``_id``s as BSON, comparable whether a sub-document came back raw or decoded."""
    return [bson.encode({"v": v}) for v in ids]


def _ids() -> list[Any]:
    """``_id``s of seven brackets, several per bracket, inserted out of order."""
    return [
        ObjectId(),
        "b",
        3,
        MaxKey(),
        Int64(2),
        {"k": 1},
        "a",
        ObjectId(),
        1.5,
        Binary(b"\x01"),
        Decimal128("7"),
        MinKey(),
        {"k": 0},
        Timestamp(5, 1),
        "c",
        *range(100, 140),
    ]


@pytest.fixture
def scanned(mongo_uri: str) -> Iterator[tuple[CollectionScanner, Finds, list[Any]]]:
    finds = Finds()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri, event_listeners=[finds])
    db = f"scan_{uuid.uuid4().hex[:10]}"
    client[db].c.insert_many([{"_id": _id, "pad": "x" * 10} for _id in _ids()])
    expected = [d["_id"] for d in client[db].c.find({}, {"_id": 1}).sort("_id", 1)]
    finds.filters.clear()
    try:
        yield CollectionScanner(client, db, "c", fetch_size=4), finds, expected
    finally:
        client.drop_database(db)
        client.close()


def test_a_fresh_scan_is_one_cursor_and_its_chunks_never_span_two_brackets(
    scanned: tuple[CollectionScanner, Finds, list[Any]],
) -> None:
    scanner, finds, expected = scanned
    chunks = list(scanner.chunks())
    assert _bytes([d["_id"] for c in chunks for d in c.documents]) == _bytes(expected)
    assert finds.filters == [{}]  # no query per type bracket, no probe of an empty one
    for chunk in chunks:
        assert {id_bracket(d) for d in chunk.documents} == {chunk.bracket}
    assert chunks[-1].end == ScanPosition(len(ID_TYPE_BRACKETS))


def test_a_scan_resumed_from_any_chunk_end_reads_exactly_the_rest(
    scanned: tuple[CollectionScanner, Finds, list[Any]],
) -> None:
    scanner, finds, expected = scanned
    chunks = list(scanner.chunks())
    read = 0
    for chunk in chunks[:-1]:
        read += len(chunk.documents)
        rest = [d["_id"] for c in scanner.chunks(chunk.end) for d in c.documents]
        assert _bytes(rest) == _bytes(expected[read:]), f"resumed after {chunk.end}"
    finds.filters.clear()
    assert list(scanner.chunks(chunks[-1].end)) == []
    assert finds.filters == []


class Hints(Finds):
    def __init__(self) -> None:
        super().__init__()
        self.hints: list[Any] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        super().started(event)
        if event.command_name == "find":
            self.hints.append(event.command.get("hint"))


def test_every_query_without_a_filter_is_hinted_to_the_id_index_and_a_refused_hint_is_dropped(
    mongo_uri: str,
) -> None:
    hints = Hints()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri, event_listeners=[hints])
    db = f"scan_{uuid.uuid4().hex[:10]}"
    client[db].c.insert_many([{"_id": _id, "pad": "x"} for _id in _ids()])
    expected = [d["_id"] for d in client[db].c.find({}, {"_id": 1}).sort("_id", 1)]
    try:
        scanner = CollectionScanner(client, db, "c", fetch_size=4)
        hints.hints.clear()
        chunks = list(scanner.chunks())
        resumed = list(scanner.chunks(chunks[0].end))
        assert _bytes([d["_id"] for c in chunks for d in c.documents]) == _bytes(expected)
        assert hints.hints and all(h == {"_id": 1} for h in hints.hints), hints.hints
        assert sum(len(c.documents) for c in resumed) == len(expected) - len(chunks[0].documents)

        filtered = CollectionScanner(client, db, "c", fetch_size=4, filter={"pad": "x"})
        hints.hints.clear()
        assert sum(len(c.documents) for c in filtered.chunks()) == len(expected)
        assert hints.hints == [None]  # the planner picks the index for a filter

        refused = CollectionScanner(client, db, "c", fetch_size=4)
        refused._hint = [("no_such_field", 1)]  # as a collection without an _id index refuses the hint
        hints.hints.clear()
        assert _bytes([d["_id"] for c in refused.chunks() for d in c.documents]) == _bytes(expected)
        assert hints.hints == [{"no_such_field": 1}, None]
    finally:
        client.drop_database(db)
        client.close()
