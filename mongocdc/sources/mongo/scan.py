"""Chunked, ``_id``-ordered collection scans for snapshots.

A fresh scan is one ``_id``-ordered cursor over the whole collection: MongoDB sorts ``_id`` values
of different types in BSON comparison order, one type bracket after the other, so the cursor reads
every bracket in turn without a query per bracket (a server without a type-bracketed index plan
runs each of those as a full scan, empty brackets included).

Without a snapshot filter every query is hinted to the ``_id`` index (``hint({_id: 1})``): the
plan mongod picks for an ``_id`` sort anyway, and one a server that would otherwise scan and sort
the whole collection before its first batch (the Python SecantusDB test server) then follows. A
server that refuses the hint (a collection without that index) is asked again without it.

A scan resumes from (bracket, last key) after a crash. MongoDB compares values only within one
type bracket (``$gt: 5`` never matches a string), so what is left is read bracket by bracket, in
MongoDB's sort order, each with ``$type`` and a ``$gt`` on the last key read.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

import bson
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import ASCENDING, MongoClient
from pymongo.errors import CursorNotFound, OperationFailure, PyMongoError

from mongocdc.events.snapshot import ID_TYPE_BRACKETS, Chunk, ScanPosition
from mongocdc.sources.mongo.client import raise_for_privileges
from mongocdc.sources.read_ahead import read_ahead

log = logging.getLogger("mongocdc.mongo.scan")

_RAW: CodecOptions[RawBSONDocument] = CodecOptions(document_class=RawBSONDocument)

# BSON element type byte -> index of its bracket in ID_TYPE_BRACKETS.
_TYPE_CODES = {
    "minKey": 0xFF, "null": 0x0A, "double": 0x01, "int": 0x10, "long": 0x12, "decimal": 0x13,
    "string": 0x02, "symbol": 0x0E, "object": 0x03, "binData": 0x05, "objectId": 0x07, "bool": 0x08,
    "date": 0x09, "timestamp": 0x11, "regex": 0x0B, "dbPointer": 0x0C, "javascript": 0x0D,
    "javascriptWithScope": 0x0F, "maxKey": 0x7F,
}  # fmt: skip
_BRACKET_OF_TYPE = {_TYPE_CODES[name]: i for i, names in enumerate(ID_TYPE_BRACKETS) for name in names}
_ID_FIRST = b"_id\x00"
ID_INDEX: list[tuple[str, int]] = [("_id", ASCENDING)]


def id_bracket(document: Mapping[str, Any]) -> int | None:
    """The ``_id`` type bracket of ``document`` (``None`` for a type no bracket holds).

    A stored document's first element is its ``_id``, so a raw document's type byte is read
    without decoding anything; other documents encode their ``_id`` once.
    """
    raw = getattr(document, "raw", None)
    if raw is None or raw[5:9] != _ID_FIRST:
        raw = bson.encode({"_id": document["_id"]})
    return _BRACKET_OF_TYPE.get(raw[4])


def bracket_runs(documents: list[Mapping[str, Any]], first: int) -> Iterator[tuple[int, list[Mapping[str, Any]]]]:
    """``documents`` (in ``_id`` order) cut where their ``_id`` type bracket changes.

    Brackets only grow along an ``_id``-ordered cursor, so a batch whose first and last documents
    share one is one run; only a batch that crosses a bracket boundary is looked at document by
    document. A document of no known bracket stays in the run before it.
    """
    last = id_bracket(documents[-1])
    if last is None or last == first:
        yield first, documents
        return
    start, current = 0, first
    for i, document in enumerate(documents):
        bracket = id_bracket(document)
        if bracket is not None and bracket != current:
            if i > start:
                yield current, documents[start:i]
            start, current = i, bracket
    yield current, documents[start:]


class CollectionScanner:
    """Reads one collection in ``_id`` order, ``fetch_size`` documents per chunk."""

    def __init__(
        self,
        client: MongoClient[Any],
        db: str,
        collection: str,
        *,
        fetch_size: int = 2048,
        filter: Mapping[str, Any] | None = None,
    ) -> None:
        # Raw BSON: documents go to the JSON codec as bytes, never decoded to dicts and encoded again.
        self._collection = client[db][collection].with_options(codec_options=_RAW)
        self._fetch_size = fetch_size
        self._filter = dict(filter) if filter else None
        self.namespace = f"{db}.{collection}"
        # With a snapshot filter the planner may know a better index than _id's (and sort after it).
        self._hint: list[tuple[str, int]] | None = None if self._filter else ID_INDEX

    def estimated_count(self) -> int:
        try:
            return int(self._collection.estimated_document_count())
        except OperationFailure:
            return 0

    def _query(self, position: ScanPosition) -> dict[str, Any]:
        clauses: list[dict[str, Any]] = [{"_id": {"$type": list(ID_TYPE_BRACKETS[position.bracket])}}]
        if position.has_last:
            clauses.append({"_id": {"$gt": position.last_id}})
        if self._filter:
            clauses.append(self._filter)
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def chunks(self, start: ScanPosition | None = None) -> Iterator[Chunk]:
        """Every document after ``start``, in chunks; ``Chunk.end`` is the resume point after it.

        A fresh scan is one ``_id``-ordered cursor over every type bracket; a resumed one, one
        cursor per bracket from the resume point on. Either is read ``fetch_size`` documents at a
        time (one round trip per chunk), one chunk ahead of the caller (:func:`read_ahead`), and a
        chunk never spans two brackets. A cursor the server dropped (CursorNotFound) is reopened
        after the last key read.
        """
        position = start or ScanPosition()
        whole = position == ScanPosition()
        while position.bracket < len(ID_TYPE_BRACKETS):
            bracket = position.bracket
            try:
                if whole:
                    for chunk in self._whole_chunks():
                        position = chunk.end
                        yield chunk
                    position = ScanPosition(len(ID_TYPE_BRACKETS))
                    break
                for documents, exhausted, read_ns in read_ahead(self._batches(self._query(position)), self.namespace):
                    position = (
                        ScanPosition(bracket + 1) if exhausted else ScanPosition(bracket, documents[-1]["_id"], True)
                    )
                    if documents:
                        yield Chunk(documents, position, bracket, read_ns)
            except CursorNotFound:
                log.warning("the snapshot cursor of %s expired; reopening after the last key read", self.namespace)
                whole = False
                continue
            except OperationFailure as exc:
                raise_for_privileges(exc, f"read {self.namespace} for the snapshot")
                raise
            if position.bracket == bracket:  # an empty bracket
                position = ScanPosition(bracket + 1)

    def _whole_chunks(self) -> Iterator[Chunk]:
        """The fresh scan's chunks: one cursor over the whole collection, cut at bracket boundaries.

        Each chunk ends after its last document (the bracket and ``_id``); the last chunk of the
        collection ends past every bracket.
        """
        bracket = 0
        for documents, exhausted, read_ns in read_ahead(self._batches(self._filter or {}), self.namespace):
            if not documents:
                continue
            first = id_bracket(documents[0])
            bracket = bracket if first is None else first
            runs = list(bracket_runs(documents, bracket))
            for i, (bracket, run) in enumerate(runs):
                if exhausted and i == len(runs) - 1:
                    end = ScanPosition(len(ID_TYPE_BRACKETS))
                else:
                    end = ScanPosition(bracket, run[-1]["_id"], True)
                yield Chunk(run, end, bracket, read_ns)

    def _batches(self, query: Mapping[str, Any]) -> Iterator[tuple[list[Mapping[str, Any]], bool, int]]:
        """``(documents, cursor exhausted, read_ns)`` of one ``_id``-ordered cursor, ``fetch_size`` documents each.

        ``read_ns`` is taken before the server was asked for any of the documents: before the query
        for the first chunk, and for each later one before the chunk *before* it was collected, since
        a chunk's first documents can come from the server batch that completed the one before (a
        server batch is never larger than ``fetch_size``, the cursor's batch size).
        """
        previous = current = time.time_ns()
        cursor, first = self._open(query)
        with cursor:
            batch: list[Mapping[str, Any]] = []
            for document in itertools.chain((first,), cursor) if first is not None else ():
                batch.append(document)
                if len(batch) == self._fetch_size:
                    yield batch, False, previous
                    batch = []
                    previous, current = current, time.time_ns()
            yield batch, True, previous

    def _open(self, query: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any] | None]:
        """The ``_id``-ordered cursor of ``query`` and its first document (``None``: no documents).

        Hinted to the ``_id`` index unless a snapshot filter is set; a server that refuses the hint
        (the find fails naming it) gets the query again without it, for this and every later query.
        """
        while True:
            cursor = self._collection.find(query, batch_size=self._fetch_size).sort("_id", ASCENDING)
            if self._hint is not None:
                cursor = cursor.hint(self._hint)
            try:
                return cursor, next(cursor, None)
            except OperationFailure as exc:
                cursor.close()
                if self._hint is None or "hint" not in str(exc).lower():
                    raise
                log.info("%s refused a hint of its _id index (%s); reading without it", self.namespace, exc)
                self._hint = None


SYSTEM_DATABASES = frozenset({"admin", "config", "local"})


def captured_collections(
    client: MongoClient[Any],
    *,
    scope: str,
    target: str | None,
    include: Any,
) -> list[tuple[str, str]]:
    """``(db, collection)`` pairs a snapshot copies: real collections (no views, no ``system.*``) in scope,
    kept by ``include(db, coll)``, sorted."""
    try:
        return _captured_collections(client, scope=scope, target=target, include=include)
    except OperationFailure as exc:
        raise_for_privileges(exc, "list the databases and collections to snapshot")
        raise


def _captured_collections(
    client: MongoClient[Any], *, scope: str, target: str | None, include: Any
) -> list[tuple[str, str]]:
    if scope == "collection" and target:
        db, _, coll = target.partition(".")
        pairs = [(db, coll)]
    else:
        databases = [target] if scope == "database" and target else client.list_database_names()
        pairs = [
            (db, name)
            for db in databases
            if db not in SYSTEM_DATABASES
            for name in client[db].list_collection_names(filter={"type": "collection"})
            if not name.startswith("system.")
        ]
    return sorted(p for p in pairs if include(*p))


def database_names(client: MongoClient[Any]) -> list[str] | None:
    """The deployment's databases, or ``None`` when the user may not list them."""
    try:
        return [name for name in client.list_database_names() if name not in SYSTEM_DATABASES]
    except OperationFailure:
        return None


class QueryReader:
    """Reads of the incremental snapshot: a collection's maximum ``_id`` and ``_id``-ordered chunks."""

    def __init__(self, client: MongoClient[Any]) -> None:
        self._client = client

    def _collection(self, namespace: str) -> Any:
        db, _, coll = namespace.partition(".")
        return self._client[db][coll]

    def estimated_count(self, namespace: str) -> int | None:
        """The collection's document count from its metadata (no scan), ``None`` when it cannot be had."""
        try:
            return int(self._collection(namespace).estimated_document_count())
        except PyMongoError:
            return None

    def maximum_key(self, namespace: str, query: Mapping[str, Any]) -> tuple[bool, Any]:
        """``(found, _id)`` of the document with the greatest ``_id`` matching ``query``."""
        try:
            docs = list(self._collection(namespace).find(query, {"_id": 1}).sort("_id", -1).limit(1))
        except OperationFailure as exc:
            raise_for_privileges(exc, f"read {namespace} for the incremental snapshot")
            raise
        return (True, docs[0]["_id"]) if docs else (False, None)

    def chunk(self, namespace: str, query: Mapping[str, Any], limit: int) -> list[Mapping[str, Any]]:
        try:
            cursor = self._collection(namespace).find(query, batch_size=limit)
            return list(cursor.sort("_id", ASCENDING).limit(limit))
        except OperationFailure as exc:
            raise_for_privileges(exc, f"read {namespace} for the incremental snapshot")
            raise
