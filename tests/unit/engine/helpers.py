"""What the engine's unit tests share (and the command line's, for the incremental snapshot): MongoDB's order
of ``_id``s and the chunk queries, the model collection the incremental snapshotter runs against, the snapshot
runner's collections."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping, Sequence
from typing import Any

from mongocdc.engine.incremental import ID_TYPE_BRACKETS, id_bracket
from mongocdc.engine.incremental_snapshot import IncrementalSnapshotter
from mongocdc.events.changes import SignalChange, StreamedChange, convert_change
from mongocdc.events.position import Position
from mongocdc.events.signals import WindowClose, WindowOpen, serialize_signal
from mongocdc.sources.base import StreamItem
from tests.unit.engine.fakes import change


def sort_key(value: Any) -> tuple[int, Any]:
    bracket = id_bracket(value)
    return (bracket, 0 if value is None else value)


def matches(query: Mapping[str, Any], value: Any) -> bool:
    """Evaluate the ``_id`` clauses :meth:`IncrementalSnapshotState.chunk_query` builds."""
    if "$and" in query:
        return all(matches(clause, value) for clause in query["$and"])
    (name, condition), *rest = query.items()
    assert name == "_id" and not rest, query
    for op, arg in condition.items():
        if op == "$type":
            if not set(arg) & set(ID_TYPE_BRACKETS[id_bracket(value)]):
                return False
        elif op in ("$gt", "$lte"):
            if id_bracket(arg) != id_bracket(value):
                return False
            if op == "$gt" and not sort_key(value) > sort_key(arg):
                return False
            if op == "$lte" and not sort_key(value) <= sort_key(arg):
                return False
        else:
            raise AssertionError(op)
    return True


NS = "shop.orders"


class Model:
    """``shop.orders`` with integer ``_id``s, and one change stream over it and the signal collection.

    It is the snapshotter's chunk reader and watermark writer; the change stream is a queue the
    writer appends to (as MongoDB does with the watermark inserts) and the test's writes too.
    """

    def __init__(self, ids: Sequence[int]) -> None:
        self.documents = {i: {"_id": i, "v": 0} for i in ids}
        self.stream: deque[StreamItem] = deque()
        self.watermarks: list[Position] = []
        self.sec = 1000

    def position(self) -> Position:
        self.sec += 1
        return Position(self.sec, 1, Position.token_bytes({"_data": f"{self.sec:08d}"}))

    # the change stream's view of the signal collection
    def signal(self, document: Mapping[str, Any], operation: str = "insert") -> None:
        self.stream.append(SignalChange(operation, document, document["_id"], self.position()))

    def update_next(self, doc_id: int) -> None:
        """Another client updates ``doc_id``; the change is the next the stream delivers."""
        self.documents[doc_id]["v"] += 1
        raw = change(doc_id, "update")
        raw["fullDocument"] = dict(self.documents[doc_id])
        item = convert_change(raw, rs="rs0")
        assert isinstance(item, StreamedChange)
        self.stream.appendleft(StreamedChange(item.event, self.position()))

    # ChunkReader
    def maximum_key(self, namespace: str, query: Mapping[str, Any]) -> tuple[bool, Any]:
        assert namespace == NS and not query
        return (True, max(self.documents)) if self.documents else (False, None)

    def chunk(self, namespace: str, query: Mapping[str, Any], limit: int) -> list[Mapping[str, Any]]:
        ids = sorted((i for i in self.documents if matches(query, i)), key=sort_key)[:limit]
        return [dict(self.documents[i]) for i in ids]

    # WatermarkWriter
    def write_watermark(self, kind: Any, chunk_id: str, strategy: Any = "insert_insert") -> str:
        signal = WindowOpen.for_chunk(chunk_id) if kind == "open" else WindowClose.for_chunk(chunk_id)
        self.signal(serialize_signal(signal))
        self.watermarks.append(self.stream[-1].position)
        return signal.id


def snapshotter(model: Model, **kwargs: Any) -> IncrementalSnapshotter:
    return IncrementalSnapshotter(reader=model, writer=model, captured=lambda: [NS, "shop.other"], **kwargs)


def execute(signal_id: str, snapshot_type: str = "incremental") -> dict[str, Any]:
    return {"_id": signal_id, "type": "execute-snapshot", "data": {"data-collections": [NS], "type": snapshot_type}}


MIXED_IDS: list[Any] = [3, 1, 2.5, "b", "a", {"k": 1}, None, True, 10, "c", 7]


def collections() -> dict[str, list[dict[str, Any]]]:
    return {
        "shop.orders": [{"_id": i, "n": str(i)} for i in MIXED_IDS],
        "shop.customers": [{"_id": f"c{i}"} for i in range(5)],
        "shop.single": [{"_id": 1}],
        "shop.empty": [],
    }


def expected_ids() -> Counter[tuple[str, str]]:
    return Counter((ns, repr(d["_id"])) for ns, docs in collections().items() for d in docs)
