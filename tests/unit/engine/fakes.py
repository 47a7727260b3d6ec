"""Scripted stand-ins for the engine's unit tests: a change source, collection scanners and a sink.

They replace MongoDB and Kafka only in unit tests of the engine's own logic; integration tests
use the real services.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from bson import Timestamp

from mongocdc.errors import DeliveryError
from mongocdc.events.changes import convert_change
from mongocdc.events.position import Position
from mongocdc.events.snapshot import ID_TYPE_BRACKETS, Chunk, ScanPosition
from mongocdc.sources.base import Idle, StreamItem

START = Position(999, 0, Position.token_bytes({"_data": "start"}))


def change(i: int, op: str = "insert", coll: str = "orders") -> dict[str, Any]:
    doc: dict[str, Any] = {
        "_id": {"_data": f"{i:08d}"},
        "operationType": op,
        "clusterTime": Timestamp(1000 + i, 1),
        "ns": {"db": "shop", "coll": coll},
        "documentKey": {"_id": i},
    }
    if op != "delete":
        doc["fullDocument"] = {"_id": i, "n": i}
    return doc


class ScriptedSource:
    """Replays a fixed change history; can fail at a chosen index; sets ``stop`` when exhausted."""

    def __init__(
        self, history: list[dict[str, Any]], stop: threading.Event, fail_at: int | None = None, start: Position = START
    ) -> None:
        self.items = [convert_change(c, rs="rs0") for c in history]
        self.stop = stop
        self.fail_at = fail_at
        self.start = start
        self.index = 0
        self._position: Position | None = None
        self.opened_at: Position | None = None
        self.reconnects = 0
        self.elections = 0

    def open(self, start: Position | None) -> None:
        self.opened_at = start
        self.index = 0
        if start is not None:
            tokens = [self.start.resume_token] + [item.position.resume_token for item in self.items]
            self.index = tokens.index(start.resume_token)
            self._position = start
        else:
            self._position = self.start

    @property
    def position(self) -> Position | None:
        return self._position

    def next(self) -> StreamItem:
        if self.fail_at is not None and self.index == self.fail_at:
            raise RuntimeError(f"scripted crash at {self.index}")
        if self.index >= len(self.items):
            self.stop.set()
            assert self._position is not None
            return Idle(self._position)
        item = self.items[self.index]
        self.index += 1
        self._position = item.position
        return item

    def close(self) -> None:
        pass


def bracket_of(value: Any) -> int:
    names = {bool: "bool", int: "int", float: "double", str: "string", dict: "object", type(None): "null"}
    kind = names.get(type(value))
    if kind is None:
        raise TypeError(type(value))
    return next(i for i, b in enumerate(ID_TYPE_BRACKETS) if kind in b)


def order_key(value: Any) -> Any:
    """A total order within one bracket for the value types the scripted collections use."""
    if value is None:
        return 0
    if isinstance(value, dict):
        return sorted(value.items())
    return value


class ScriptedScanner:
    """A collection as a list of documents, scanned like ``CollectionScanner`` (bracket by bracket)."""

    def __init__(
        self,
        namespace: str,
        documents: list[Mapping[str, Any]],
        fetch_size: int = 2,
        fail_after_chunks: int | None = None,
        on_chunk: Callable[[int], None] | None = None,
        read_ns_base: int | None = None,
    ) -> None:
        self.read_ns_base = read_ns_base
        """Chunk ``n`` (from 1) carries ``read_ns_base + n`` as its time of read; ``None``: no time."""
        self.namespace = namespace
        self.documents = sorted(documents, key=lambda d: (bracket_of(d["_id"]), order_key(d["_id"])))
        self.fetch_size = fetch_size
        self.fail_after_chunks = fail_after_chunks
        self.on_chunk = on_chunk
        self.chunks_served = 0

    def estimated_count(self) -> int:
        return len(self.documents)

    def chunks(self, start: ScanPosition | None = None) -> Iterator[Chunk]:
        position = start or ScanPosition()
        while position.bracket < len(ID_TYPE_BRACKETS):
            bracket = position.bracket
            candidates = [
                d
                for d in self.documents
                if bracket_of(d["_id"]) == bracket
                and (not position.has_last or order_key(d["_id"]) > order_key(position.last_id))
            ]
            documents = candidates[: self.fetch_size]
            if documents:
                position = ScanPosition(bracket, documents[-1]["_id"], True)
            if len(documents) < self.fetch_size:
                position = ScanPosition(bracket + 1)
            if documents:
                if self.fail_after_chunks is not None and self.chunks_served >= self.fail_after_chunks:
                    raise RuntimeError(f"scripted crash in {self.namespace}")
                self.chunks_served += 1
                if self.on_chunk is not None:
                    self.on_chunk(self.chunks_served)
                read_ns = None if self.read_ns_base is None else self.read_ns_base + self.chunks_served
                yield Chunk(documents, position, bracket, read_ns)


class RecordingSink:
    """Stands in for the producer in engine unit tests: acknowledges on poll/flush, or refuses."""

    def __init__(self, refuse_after: int | None = None) -> None:
        self.records: list[tuple[str, bytes | None, bytes | None]] = []
        self.meta: list[tuple[Any, int | None]] = []
        """Per record: its headers and the partition it was sent to (None: the partitioner's choice)."""
        self._pending: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.refuse_after = refuse_after

    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        headers: Any = None,
        partition: int | None = None,
        on_ack: Callable[[], None] | None = None,
        converted: bool = False,
    ) -> bool:
        with self._lock:
            self.records.append((topic, key, value))
            self.meta.append((headers, partition))
            if on_ack is not None:
                self._pending.append(on_ack)
        return True

    def fused_record(self, topic: str, event: Any) -> tuple[bytes, bytes] | None:
        return None  # no transform chain: the codec writes every record

    def poll(self, timeout: float = 0.0) -> None:
        self._deliver()

    def flush(self, timeout: float | None = None) -> None:
        self._deliver()

    def _deliver(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for callback in pending:
            if self.refuse_after is not None and self.refuse_after <= 0:
                raise DeliveryError("Kafka rejected an event")
            if self.refuse_after is not None:
                self.refuse_after -= 1
            callback()
