"""The signalling collection (``signal.data.collection``): signals in, incremental-snapshot watermarks out.

Operators (``mongocdc signal send --channel source``) insert signal documents
``{_id, type, data}`` (``mongocdc.events.signals.serialize_signal``); the
connector sees them in its change stream. Incremental snapshots mark each
chunk's window with DBLog watermarks written here, in the shape Debezium's
MongoDB connector writes them::

    {"_id": "<chunk id>-open",  "type": "snapshot-window-open",  "payload": ""}
    {"_id": "<chunk id>-close", "type": "snapshot-window-close", "payload": ""}

With the ``insert_delete`` strategy the window is closed by deleting the open
document instead of inserting a close document, so the collection does not
grow; the change stream then shows a delete whose ``documentKey._id`` is
``<chunk id>-open`` (a delete event carries no ``type``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.errors import ConnectionFailure, OperationFailure

from mongocdc.config.properties import WatermarkingStrategy
from mongocdc.errors import ConfigError, UnreachableError
from mongocdc.events.signals import WindowClose, WindowOpen, serialize_signal
from mongocdc.sources.mongo.client import failure_summary, raise_for_privileges

log = logging.getLogger("mongocdc.mongo.signals")

WatermarkKind = Literal["open", "close"]

_WRITE_HINT: Final = (
    "grant the connector's user the readWrite role on the database of signal.data.collection (signals and "
    "incremental-snapshot watermarks are written there), or point signal.data.collection at a collection it may write"
)


class SignalCollectionWriter:
    """Writes signals and incremental-snapshot watermarks to ``signal.data.collection``.

    Every write is acknowledged by MongoDB (the client's write concern) before
    the method returns. Privilege refusals become a ``ConfigError`` (exit 3)
    naming what was refused and the role to grant; a connection lost during a
    write becomes an ``UnreachableError`` (exit 4). The client is the
    caller's: it is not closed here.
    """

    def __init__(self, client: MongoClient[Any], namespace: str) -> None:
        database, dot, collection = namespace.partition(".")
        if not dot or not database or not collection:
            raise ConfigError(
                f"signal.data.collection {namespace!r} is not <database>.<collection>",
                hint="set signal.data.collection to the signalling collection, e.g. inventory.debezium_signal",
            )
        self.namespace = namespace
        self._collection: Collection[Any] = client[database][collection]

    def send(self, document: Mapping[str, Any]) -> Any:
        """Insert one signal document (as ``serialize_signal`` builds it) and return its ``_id``.

        Without an ``_id`` MongoDB assigns an ObjectId, which is returned.
        """
        signal = dict(document)
        self._write(f"insert a signal into {self.namespace}", lambda: self._collection.insert_one(signal))
        log.info("signal %s (%s) written to %s", signal["_id"], signal.get("type"), self.namespace)
        return signal["_id"]

    def write_watermark(
        self, kind: WatermarkKind, chunk_id: str, strategy: WatermarkingStrategy = "insert_insert"
    ) -> str:
        """Mark the low (``open``) or high (``close``) end of a chunk's window; return the ``_id`` written or deleted.

        ``open`` inserts ``<chunk id>-open``. ``close`` inserts ``<chunk id>-close``
        with ``insert_insert`` and deletes ``<chunk id>-open`` with ``insert_delete``.
        ``chunk_id`` must be new for every chunk (a UUID, as Debezium's): inserting
        an ``_id`` twice fails with pymongo's ``DuplicateKeyError``.
        """
        if strategy not in ("insert_insert", "insert_delete"):
            raise ValueError(f"unknown watermarking strategy {strategy!r}; expected insert_insert or insert_delete")
        if kind == "close" and strategy == "insert_delete":
            return self.delete_watermark(chunk_id)
        if kind == "open":
            document = serialize_signal(WindowOpen.for_chunk(chunk_id))
        elif kind == "close":
            document = serialize_signal(WindowClose.for_chunk(chunk_id))
        else:
            raise ValueError(f"unknown watermark kind {kind!r}; expected open or close")
        self._write(
            f"write the {kind} watermark of an incremental snapshot chunk to {self.namespace}",
            lambda: self._collection.insert_one(document),
        )
        return str(document["_id"])

    def delete_watermark(self, chunk_id: str, kind: WatermarkKind = "open") -> str:
        """Delete a chunk's watermark document (``<chunk id>-open`` by default); return its ``_id``.

        This closes the window under ``insert_delete``, and cleans up after
        ``insert_insert``. Deleting a document that is not there is not an error.
        """
        document_id = (WindowOpen.for_chunk(chunk_id) if kind == "open" else WindowClose.for_chunk(chunk_id)).id
        self._write(
            f"delete an incremental snapshot watermark from {self.namespace}",
            lambda: self._collection.delete_one({"_id": document_id}),
        )
        return document_id

    def _write(self, what: str, operation: Callable[[], object]) -> None:
        try:
            operation()
        except OperationFailure as exc:
            try:
                raise_for_privileges(exc, what)
            except ConfigError as error:
                raise ConfigError(error.message, hint=_WRITE_HINT) from exc
            raise
        except ConnectionFailure as exc:
            raise UnreachableError(
                f"MongoDB became unreachable while trying to {what}: {failure_summary(exc)}",
                hint="check the network and that the servers are up, then try again",
            ) from exc
