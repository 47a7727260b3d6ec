"""Chunked, ``_id``-ordered collection scans for snapshots.

MongoDB compares ``_id`` values only within one BSON type bracket (``$gt: 5``
never matches a string), so a collection whose ``_id`` types differ is read
bracket by bracket, in MongoDB's sort order, each with ``$type`` and a ``$gt``
on the last key read. A scan can resume from (bracket, last key) after a crash.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import ASCENDING, MongoClient
from pymongo.errors import CursorNotFound, OperationFailure, PyMongoError

from mongocdc.events.snapshot import ID_TYPE_BRACKETS, Chunk, ScanPosition
from mongocdc.sources.mongo.client import raise_for_privileges
from mongocdc.sources.read_ahead import read_ahead

log = logging.getLogger("mongocdc.mongo.scan")

_RAW: CodecOptions[RawBSONDocument] = CodecOptions(document_class=RawBSONDocument)


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

        One ``_id``-ordered cursor per type bracket, read ``fetch_size`` documents at a time (one
        round trip per chunk), one chunk ahead of the caller (:func:`read_ahead`); a cursor the
        server dropped (CursorNotFound) is reopened after the last key read.
        """
        position = start or ScanPosition()
        while position.bracket < len(ID_TYPE_BRACKETS):
            bracket = position.bracket
            try:
                for documents, exhausted, read_ns in read_ahead(self._batches(position), self.namespace):
                    position = (
                        ScanPosition(bracket + 1) if exhausted else ScanPosition(bracket, documents[-1]["_id"], True)
                    )
                    if documents:
                        yield Chunk(documents, position, bracket, read_ns)
            except CursorNotFound:
                log.warning("the snapshot cursor of %s expired; reopening after the last key read", self.namespace)
                continue
            except OperationFailure as exc:
                raise_for_privileges(exc, f"read {self.namespace} for the snapshot")
                raise
            if position.bracket == bracket:  # an empty bracket
                position = ScanPosition(bracket + 1)

    def _batches(self, position: ScanPosition) -> Iterator[tuple[list[Mapping[str, Any]], bool, int]]:
        """``(documents, bracket exhausted, read_ns)`` of one bracket's cursor, ``fetch_size`` documents each.

        ``read_ns`` is taken before the server was asked for any of the documents: before the query
        for the first chunk, and for each later one before the chunk *before* it was collected, since
        a chunk's first documents can come from the server batch that completed the one before (a
        server batch is never larger than ``fetch_size``, the cursor's batch size).
        """
        previous = current = time.time_ns()
        cursor = self._collection.find(self._query(position), batch_size=self._fetch_size).sort("_id", ASCENDING)
        with cursor:
            batch: list[Mapping[str, Any]] = []
            for document in cursor:
                batch.append(document)
                if len(batch) == self._fetch_size:
                    yield batch, False, previous
                    batch = []
                    previous, current = current, time.time_ns()
            yield batch, True, previous


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
