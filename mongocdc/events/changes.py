"""Turn MongoDB change stream documents into change events (pure, no I/O).

A change document is what a change stream returns, as a ``dict`` or as raw BSON
(``RawBSONDocument``, what ``MongoChangeStreamSource`` reads: sub-documents stay raw
and go to JSON without being decoded): ``_id`` (the resume
token), ``operationType``, ``ns``, ``documentKey``, ``clusterTime`` (a BSON
Timestamp), ``wallTime`` (6.0+), ``fullDocument``, ``updateDescription``,
``fullDocumentBeforeChange``, and ``lsid``/``txnNumber`` inside transactions.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

import bson
from bson import Timestamp
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument

from mongocdc.events.codec import document_to_json, raw_id_to_json, update_to_json, value_to_json
from mongocdc.events.model import ChangeEvent, Op, SourceInfo, UpdateDescription
from mongocdc.events.position import Position

DATA_OPERATIONS = frozenset({"insert", "update", "replace", "delete"})


class MalformedChangeError(ValueError):
    """A change document lacks a field every MongoDB change event has."""


@dataclass(frozen=True, slots=True)
class ControlChange:
    """A change stream event that carries no document change (drop, rename, invalidate …)."""

    operation_type: str
    db: str | None
    collection: str | None
    position: Position

    @property
    def ends_stream(self) -> bool:
        """MongoDB closes the stream after ``invalidate``."""
        return self.operation_type == "invalidate"


@dataclass(frozen=True, slots=True)
class SignalChange:
    """A change in the signal collection (``signal.data.collection``): a signal or a snapshot watermark.

    ``event`` is the same change as a data event when the include lists capture the signal
    collection too: Debezium then writes its changes (signals and watermarks) to its topic.
    """

    operation_type: str
    document: Mapping[str, Any] | None
    document_id: Any
    position: Position
    event: ChangeEvent | None = None


class StreamedChange(NamedTuple):
    """A data change together with the position right after it (a named tuple: one is built per change)."""

    event: ChangeEvent
    position: Position


def _get(change: Mapping[str, Any], field: str) -> Any:
    try:
        return change[field]
    except KeyError:
        raise MalformedChangeError(f"change event has no {field!r} field") from None


def _epoch_ms(value: Any) -> int | None:
    """``wallTime`` in epoch milliseconds: a ``DatetimeMS`` (raw changes are read so) or a ``datetime``."""
    if type(value) is DatetimeMS:
        return int(value)
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1000)


def position_of(change: Mapping[str, Any]) -> Position:
    """Cluster time and resume token of a change document."""
    cluster_time = _get(change, "clusterTime")
    if not isinstance(cluster_time, Timestamp):
        raise MalformedChangeError(
            f"change event clusterTime must be a BSON Timestamp, got {type(cluster_time).__name__}"
        )
    token = _get(change, "_id")
    return Position(sec=cluster_time.time, ord=cluster_time.inc, resume_token=Position.token_bytes(token))


def session_id(lsid: Any) -> str | None:
    """The logical session id as Debezium writes it: the ``lsid`` document as strict JSON.

    ``{"id": {"$binary": "<base64>","$type": "04"}}`` (with ``uid`` too when the server adds it);
    a transaction's id is this text, ``:`` and the ``txnNumber``.
    """
    if lsid is None:
        return None
    if isinstance(lsid, RawBSONDocument | Mapping):
        return document_to_json(lsid)
    return value_to_json(lsid)


class Transforms(Protocol):
    """Field exclusions and renames (``mongocdc.events.transforms.FieldTransforms``)."""

    def apply_document(self, db: str, coll: str, doc: dict[str, Any]) -> dict[str, Any]: ...

    def apply_update_description(
        self, db: str, coll: str, updated_fields: Mapping[str, Any], removed_fields: Sequence[str]
    ) -> tuple[Mapping[str, Any], Sequence[str]]: ...


def _document(doc: Any, ns: tuple[str, str], transforms: Transforms | None) -> str:
    if transforms is not None:
        doc = transforms.apply_document(ns[0], ns[1], _as_dict(doc))
    return document_to_json(doc)


def _as_dict(document: Any) -> Any:
    """Transforms rebuild documents: give them plain dicts, nested ones included, not raw BSON."""
    return bson.decode(document.raw) if isinstance(document, RawBSONDocument) else document


def _update_description(
    raw: Mapping[str, Any] | None, ns: tuple[str, str], transforms: Transforms | None
) -> UpdateDescription | None:
    if raw is None:
        return None
    updated: Mapping[str, Any] = raw.get("updatedFields") or {}
    removed_raw: Sequence[str] = raw.get("removedFields") or ()
    if transforms is not None:
        updated, removed_raw = transforms.apply_update_description(ns[0], ns[1], _as_dict(updated), removed_raw)
    removed = tuple(str(f) for f in removed_raw)
    truncated = tuple((str(t["field"]), int(t["newSize"])) for t in (raw.get("truncatedArrays") or ()))
    return UpdateDescription(update_to_json(updated), removed, truncated)


def top_level(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """A raw document's top-level fields as a plain dict (sub-documents stay raw), else the mapping itself.

    A ``RawBSONDocument`` decodes its top level once, but every lookup goes through the ``Mapping``
    machinery (and a missing key through a ``KeyError``); a change is looked up a dozen times.
    """
    return dict(document.items()) if isinstance(document, RawBSONDocument) else document


def namespace_of(change: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(ns.db, ns.coll)`` of a change (``None`` where missing)."""
    ns = change.get("ns")
    if isinstance(ns, RawBSONDocument):
        return _raw_namespace(bytes(ns.raw))
    if not ns:
        return None, None
    return ns.get("db"), ns.get("coll")


@functools.lru_cache(maxsize=1024)
def _raw_namespace(raw: bytes) -> tuple[Any, Any]:
    """The namespace of a raw ``ns``: every change of a collection has the same bytes, decoded once."""
    ns = bson.decode(raw)
    return ns.get("db"), ns.get("coll")


def _key_json(operation: str, document_key: Any) -> str:
    """The key's ``id`` text from ``documentKey``: a raw one is read without decoding the whole key."""
    if isinstance(document_key, RawBSONDocument):
        try:
            return raw_id_to_json(document_key)
        except KeyError:
            raise MalformedChangeError(f"{operation} event documentKey has no _id") from None
    key = top_level(document_key)
    if "_id" not in key:
        raise MalformedChangeError(f"{operation} event documentKey has no _id")
    return value_to_json(key["_id"])


def convert_change(
    change: Mapping[str, Any], *, rs: str | None = None, transforms: Transforms | None = None
) -> StreamedChange | ControlChange:
    """Convert one change document; non-data events come back as :class:`ControlChange`."""
    change = top_level(change)
    operation = _get(change, "operationType")
    position = position_of(change)
    db, coll = namespace_of(change)
    if operation not in DATA_OPERATIONS:
        return ControlChange(str(operation), db, coll, position)
    if db is None or coll is None:
        raise MalformedChangeError(f"{operation} event has no ns.db/ns.coll")
    key_json = _key_json(operation, _get(change, "documentKey"))
    txn_number = change.get("txnNumber")
    source = SourceInfo(
        str(db),
        str(coll),
        position.sec,
        position.ord,
        _epoch_ms(change.get("wallTime")),
        rs=rs,
        # Debezium sets both or neither: a session without a transaction number is no transaction.
        lsid=session_id(change.get("lsid")) if txn_number is not None else None,
        txn_number=int(txn_number) if txn_number is not None and change.get("lsid") is not None else None,
    )
    ns_pair = (source.db, source.collection)
    before = change.get("fullDocumentBeforeChange")
    if before is not None:
        before = _document(before, ns_pair, transforms)
    if operation == "insert" or operation == "replace":  # a replace is an update with no updateDescription
        after = change.get("fullDocument")
        event = ChangeEvent(
            Op.CREATE if operation == "insert" else Op.UPDATE,
            key_json,
            source,
            None if after is None else _document(after, ns_pair, transforms),
            before,
        )
    elif operation == "update":
        after = change.get("fullDocument")
        event = ChangeEvent(
            Op.UPDATE,
            key_json,
            source,
            None if after is None else _document(after, ns_pair, transforms),
            before,
            _update_description(change.get("updateDescription"), ns_pair, transforms),
        )
    else:
        event = ChangeEvent(Op.DELETE, key_json, source, None, before)
    return StreamedChange(event, position)
