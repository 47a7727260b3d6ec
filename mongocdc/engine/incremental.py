"""Incremental snapshots while streaming goes on: DBLog watermark windows (pure, no I/O, no clock).

An incremental snapshot reads each collection in ``_id`` order, one chunk at a time, and merges
the reads into the change stream without ever letting a read overwrite a newer change. Per chunk
(the ``insert_insert`` watermarking of Debezium, whose signal documents this follows):

1. write the *open* watermark ``{_id: "<chunk>-open", type: "snapshot-window-open"}`` into the
   signal collection;
2. read the chunk: ``find(state.chunk_query()).sort("_id", 1).limit(chunk size)``;
3. write the *close* watermark ``{_id: "<chunk>-close", type: "snapshot-window-close"}``;
4. ``window.open(chunk_id, namespace, documents)`` buffers the chunk by document key;
5. keep streaming. When the open watermark comes through the stream, ``window.watermark_open``;
   every data change of the collection seen after it drops its key from the buffer
   (``window.on_stream_event``): that change is emitted by the stream, and it is at least as new
   as the read. Changes seen before the open watermark precede the read and drop nothing;
6. when the close watermark comes through, ``window.watermark_close`` returns the documents left:
   emit them as reads (``op: r``, ``source.snapshot: incremental``), then advance the state
   (``after_chunk``) and go to 1 for the next chunk.

Every change committed after the read comes through the stream after the read's events, so
replaying the topic (latest event per key wins) gives the collection's state, and the window never
holds a stream event back. Watermarks of another chunk (replayed from before a restart) are ignored.

Chunks walk the ``_id`` type brackets in MongoDB's sort order (numbers, strings, objects, binData,
ObjectId, …), because ``$gt`` only compares values of one bracket; the maximum key, read when a
collection starts, bounds the walk: later brackets are not read, and in its own bracket nothing
above it is (documents inserted after it come through the stream).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from bson import DBRef, Decimal128, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.code import Code
from bson.datetime_ms import DatetimeMS

from mongocdc.events.codec import value_to_json
from mongocdc.events.snapshot import ID_TYPE_BRACKETS

_KEY_JSON: Final = json_util.CANONICAL_JSON_OPTIONS.with_options(tz_aware=True)


_BRACKET: Final = {name: index for index, names in enumerate(ID_TYPE_BRACKETS) for name in names}


def id_bracket(value: Any) -> int:
    """The index in :data:`ID_TYPE_BRACKETS` of the bracket an ``_id`` value sorts in."""
    if isinstance(value, MinKey):
        return 0
    if value is None:
        return 1
    if isinstance(value, bool):
        return 7
    if isinstance(value, int | float | Decimal128):
        return 2
    if isinstance(value, Code):  # a str subclass
        return _BRACKET["javascript"] if value.scope is None else _BRACKET["javascriptWithScope"]
    if isinstance(value, str):
        return 3
    if isinstance(value, Mapping | DBRef):
        return 4
    if isinstance(value, bytes | uuid.UUID):  # bson.Binary is a bytes
        return 5
    if isinstance(value, ObjectId):
        return 6
    if isinstance(value, datetime | DatetimeMS):
        return 8
    if isinstance(value, Timestamp):
        return 9
    if isinstance(value, Regex | re.Pattern):
        return 10
    if isinstance(value, MaxKey):
        return _BRACKET["maxKey"]
    raise ValueError(f"an _id of Python type {type(value).__name__} has no BSON type bracket")


def key_to_json(value: Any) -> str:
    """Canonical extended JSON of a key: keeps the BSON type (int vs long vs double) in the offsets."""
    return json_util.dumps(value, json_options=_KEY_JSON)


def key_from_json(text: str) -> Any:
    return json_util.loads(text, json_options=_KEY_JSON)


def document_key(document: Mapping[str, Any]) -> str:
    """The window's key of a document: its ``_id`` as relaxed extended JSON, as in ``ChangeEvent.key_json``."""
    try:
        return value_to_json(document["_id"])
    except KeyError:
        raise ValueError("a snapshot document has no '_id'") from None


# --------------------------------------------------------------------------- the window


class WindowError(RuntimeError):
    """The window was driven out of order (a bug in the caller, never a data condition)."""


class WindowState(StrEnum):
    IDLE = "idle"
    """No chunk buffered."""
    PENDING = "pending"
    """A chunk is buffered; its open watermark has not come through the stream yet."""
    OPEN = "open"
    """Between the open and the close watermark: stream changes drop buffered keys."""


class SnapshotWindow:
    """The DBLog window of one chunk: buffered reads, minus the keys the stream changed meanwhile.

    Not thread-safe: the streaming loop owns it.
    """

    def __init__(self) -> None:
        self._state = WindowState.IDLE
        self._chunk_id: str | None = None
        self._namespace: str | None = None
        self._buffer: dict[str, Mapping[str, Any]] = {}
        self.deduplicated = 0
        """Reads dropped because the stream changed their key inside the window (for metrics and tests)."""

    @property
    def state(self) -> WindowState:
        return self._state

    @property
    def chunk_id(self) -> str | None:
        return self._chunk_id

    @property
    def namespace(self) -> str | None:
        return self._namespace

    def __len__(self) -> int:
        return len(self._buffer)

    def open(self, chunk_id: str, namespace: str, documents: Iterable[Mapping[str, Any]]) -> None:
        """Buffer the chunk read between ``chunk_id``'s watermarks (call before consuming the stream further)."""
        if self._state is not WindowState.IDLE:
            raise WindowError(f"chunk {chunk_id!r} opened while chunk {self._chunk_id!r} is still {self._state}")
        self._buffer = {document_key(d): d for d in documents}
        self._chunk_id = chunk_id
        self._namespace = namespace
        self._state = WindowState.PENDING

    def watermark_open(self, chunk_id: str) -> bool:
        """The open watermark ``chunk_id`` came through the stream; ``False`` when it is not this window's."""
        if self._state is not WindowState.PENDING or chunk_id != self._chunk_id:
            return False
        self._state = WindowState.OPEN
        return True

    def on_stream_event(self, namespace: str, key_json: str) -> bool:
        """A data change of ``namespace`` with document key ``key_json`` was emitted by the stream.

        Returns whether it dropped a buffered read. The event itself is never held back.
        """
        if self._state is not WindowState.OPEN or namespace != self._namespace:
            return False
        if self._buffer.pop(key_json, None) is None:
            return False
        self.deduplicated += 1
        return True

    def watermark_close(self, chunk_id: str) -> list[Mapping[str, Any]] | None:
        """The close watermark ``chunk_id`` came through: the reads to emit now, in ``_id`` order.

        ``None`` when the watermark is not this window's (a stale one, replayed after a restart).
        """
        if self._state is WindowState.IDLE or chunk_id != self._chunk_id:
            return None
        if self._state is WindowState.PENDING:
            raise WindowError(f"the close watermark of chunk {chunk_id!r} came before its open watermark")
        documents = list(self._buffer.values())
        self.cancel()
        return documents

    def cancel(self) -> None:
        """Drop the buffered chunk (its collection was stopped); later watermarks of it are ignored."""
        self._state = WindowState.IDLE
        self._chunk_id = None
        self._namespace = None
        self._buffer = {}


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True, slots=True)
class IncrementalSnapshotState:
    """Progress of one incremental snapshot, as kept in the offsets (``SourceOffset.incremental``).

    ``collections`` lists what is left, the one being read first. Keys are stored as canonical
    extended JSON text; ``maximum_key_json`` is ``None`` until the current collection's maximum key
    was read (the text ``"null"`` is the BSON null ``_id``). Every change returns a new state.

    The offset record (:meth:`to_offset`)::

        {"id": "<signal id>", "collections": ["db.current", "db.next"],
         "conditions": {"db.next": "<filter, canonical extended JSON>"},
         "bracket": 2, "last_key": "{\"$numberInt\": \"42\"}", "maximum_key": "{\"$oid\": \"…\"}",
         "paused": false, "documents": 10, "total_documents": 10}
    """

    snapshot_id: str
    collections: tuple[str, ...] = ()
    conditions: tuple[tuple[str, str], ...] = ()
    """``(namespace, additional filter as canonical extended JSON)``, sorted by namespace."""
    bracket: int = 0
    last_key_json: str | None = None
    maximum_key_json: str | None = None
    paused: bool = False
    documents: int = 0
    """Documents read (emitted as reads) from the current collection so far."""
    total_documents: int = 0

    @classmethod
    def start(
        cls,
        snapshot_id: str,
        collections: Sequence[str],
        conditions: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> IncrementalSnapshotState:
        """A new snapshot of ``collections`` (in that order, each once), with optional per-namespace filters."""
        return cls(snapshot_id).add_collections(collections, conditions)

    # -- reading

    @property
    def running(self) -> bool:
        return bool(self.collections)

    @property
    def current(self) -> str | None:
        return self.collections[0] if self.collections else None

    @property
    def remaining(self) -> tuple[str, ...]:
        """The collections after the current one."""
        return self.collections[1:]

    @property
    def has_last_key(self) -> bool:
        return self.last_key_json is not None

    @property
    def last_key(self) -> Any:
        if self.last_key_json is None:
            raise ValueError("no key was read yet in this bracket")
        return key_from_json(self.last_key_json)

    @property
    def has_maximum_key(self) -> bool:
        return self.maximum_key_json is not None

    @property
    def maximum_key(self) -> Any:
        if self.maximum_key_json is None:
            raise ValueError(f"the maximum key of {self.current!r} was not read yet")
        return key_from_json(self.maximum_key_json)

    @property
    def maximum_bracket(self) -> int:
        return id_bracket(self.maximum_key)

    def filter_for(self, namespace: str) -> dict[str, Any] | None:
        for ns, text in self.conditions:
            if ns == namespace:
                value = json_util.loads(text, json_options=_KEY_JSON)
                assert isinstance(value, dict)
                return value
        return None

    def maximum_key_query(self) -> dict[str, Any]:
        """The filter to read the current collection's maximum key with: ``find(q).sort("_id", -1).limit(1)``."""
        self._require_running()
        return self.filter_for(self.collections[0]) or {}

    def chunk_query(self) -> dict[str, Any]:
        """The filter of the next chunk: ``find(q).sort("_id", 1).limit(chunk size)``.

        The current bracket's types, above the last key read, not above the maximum key when this is
        its bracket, and the collection's additional filter.
        """
        self._require_running()
        maximum_bracket = self.maximum_bracket
        if self.bracket > maximum_bracket:
            raise ValueError(f"bracket {self.bracket} is past the maximum key's bracket {maximum_bracket}")
        clauses: list[dict[str, Any]] = [{"_id": {"$type": list(ID_TYPE_BRACKETS[self.bracket])}}]
        if self.last_key_json is not None:
            clauses.append({"_id": {"$gt": self.last_key}})
        if self.bracket == maximum_bracket:
            clauses.append({"_id": {"$lte": self.maximum_key}})
        condition = self.filter_for(self.collections[0])
        if condition:
            clauses.append(condition)
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def progress_data(self) -> dict[str, str]:
        """The ``additional_data`` of Debezium's ``IN_PROGRESS`` incremental snapshot notification
        (without ``connector_name``); keys as relaxed extended JSON, ``<null>`` when not read yet."""
        return {
            "data_collections": ",".join(self.collections),
            "current_collection_in_progress": self.current or "<none>",
            "maximum_key": value_to_json(self.maximum_key) if self.has_maximum_key else "<null>",
            "last_processed_key": value_to_json(self.last_key) if self.has_last_key else "<null>",
        }

    # -- changes

    def with_maximum_key(self, key: Any) -> IncrementalSnapshotState:
        """The current collection's maximum ``_id``, read when it starts; the walk begins at bracket 0."""
        self._require_running()
        id_bracket(key)  # refuse a key the walk could not reach
        return replace(self, maximum_key_json=key_to_json(key), bracket=0, last_key_json=None)

    def after_chunk(self, last_key: Any, count: int) -> IncrementalSnapshotState:
        """A chunk of ``count`` documents ending at ``last_key`` was emitted (its window closed)."""
        self._require_running()
        if count < 1:
            raise ValueError("a chunk has at least one document; after an empty one call next_bracket()")
        if id_bracket(last_key) != self.bracket:
            raise ValueError(
                f"key {value_to_json(last_key)} is not in the current bracket {ID_TYPE_BRACKETS[self.bracket]}"
            )
        return replace(
            self,
            last_key_json=key_to_json(last_key),
            documents=self.documents + count,
            total_documents=self.total_documents + count,
        )

    def next_bracket(self) -> IncrementalSnapshotState:
        """The current bracket has nothing more to read (an empty or short chunk): on to the next one,
        or to the next collection after the maximum key's bracket."""
        self._require_running()
        if self.bracket >= self.maximum_bracket:
            return self.finish_collection()
        return replace(self, bracket=self.bracket + 1, last_key_json=None)

    def finish_collection(self) -> IncrementalSnapshotState:
        """The current collection is done (or empty): the next one starts with its maximum key unknown."""
        self._require_running()
        finished = self.collections[0]
        return replace(
            self,
            collections=self.collections[1:],
            conditions=tuple((ns, f) for ns, f in self.conditions if ns != finished),
            bracket=0,
            last_key_json=None,
            maximum_key_json=None,
            documents=0,
        )

    def add_collections(
        self, namespaces: Sequence[str], conditions: Mapping[str, Mapping[str, Any]] | None = None
    ) -> IncrementalSnapshotState:
        """Queue more collections (an ``execute-snapshot`` while this one runs); queued ones stay as they are."""
        added = [ns for ns in dict.fromkeys(namespaces) if ns not in self.collections]
        new_conditions = dict(self.conditions)
        for ns in added:
            condition = (conditions or {}).get(ns)
            if condition:
                new_conditions[ns] = json_util.dumps(dict(condition), json_options=_KEY_JSON)
        return replace(
            self, collections=self.collections + tuple(added), conditions=tuple(sorted(new_conditions.items()))
        )

    def stop(self, namespaces: Iterable[str] | None = None) -> IncrementalSnapshotState:
        """Remove ``namespaces`` (all when ``None``). When the current one goes, so does its progress:
        the caller cancels its window when ``current`` changed."""
        drop = set(self.collections) if namespaces is None else set(namespaces)
        kept = tuple(ns for ns in self.collections if ns not in drop)
        conditions = tuple((ns, f) for ns, f in self.conditions if ns not in drop)
        if kept[:1] == self.collections[:1]:
            return replace(self, collections=kept, conditions=conditions)
        return replace(
            self,
            collections=kept,
            conditions=conditions,
            bracket=0,
            last_key_json=None,
            maximum_key_json=None,
            documents=0,
        )

    def pause(self) -> IncrementalSnapshotState:
        return replace(self, paused=True)

    def resume(self) -> IncrementalSnapshotState:
        return replace(self, paused=False)

    def _require_running(self) -> None:
        if not self.collections:
            raise ValueError(f"incremental snapshot {self.snapshot_id!r} has no collection left")

    # -- offsets

    def to_offset(self) -> dict[str, Any]:
        """JSON-safe record (the layout is in the class docstring)."""
        return {
            "id": self.snapshot_id,
            "collections": list(self.collections),
            "conditions": dict(self.conditions),
            "bracket": self.bracket,
            "last_key": self.last_key_json,
            "maximum_key": self.maximum_key_json,
            "paused": self.paused,
            "documents": self.documents,
            "total_documents": self.total_documents,
        }

    @classmethod
    def from_offset(cls, record: Mapping[str, Any]) -> IncrementalSnapshotState:
        """Inverse of :meth:`to_offset`; raises ``ValueError`` naming the field of a malformed record."""

        def need(name: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
            value = record.get(name)
            if value is None and optional:
                return None
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"incremental snapshot offset: {name!r} has the wrong type: {value!r}")
            return value

        snapshot_id = need("id", str)
        collections = need("collections", list)
        if not all(isinstance(ns, str) for ns in collections):
            raise ValueError(f"incremental snapshot offset: 'collections' must hold strings: {collections!r}")
        conditions = need("conditions", dict, optional=True) or {}
        for ns, text in conditions.items():
            if not isinstance(text, str):
                raise ValueError(f"incremental snapshot offset: condition of {ns!r} is not text: {text!r}")
            _parse_key_text(f"condition of {ns!r}", text)
        bracket = need("bracket", int)
        if not 0 <= bracket < len(ID_TYPE_BRACKETS):
            raise ValueError(f"incremental snapshot offset: 'bracket' {bracket} is not a type bracket")
        last_key = need("last_key", str, optional=True)
        maximum_key = need("maximum_key", str, optional=True)
        for name, text in (("last_key", last_key), ("maximum_key", maximum_key)):
            if text is not None:
                _parse_key_text(repr(name), text)
        paused = need("paused", bool, optional=True) or False
        documents = need("documents", int, optional=True) or 0
        total = need("total_documents", int, optional=True) or 0
        return cls(
            snapshot_id,
            tuple(collections),
            tuple(sorted(conditions.items())),
            bracket,
            last_key,
            maximum_key,
            paused,
            documents,
            total,
        )


def _parse_key_text(what: str, text: str) -> None:
    try:
        key_from_json(text)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"incremental snapshot offset: {what} is not extended JSON: {exc}") from None
