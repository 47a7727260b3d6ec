"""Snapshot progress as it is kept in the offsets (pure): per collection, how far the scan got."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from bson import json_util
from bson.errors import BSONError

_CANONICAL = json_util.CANONICAL_JSON_OPTIONS

# BSON comparison order of the types an _id can have (an array cannot be an _id): MongoDB compares
# values only within one of these brackets, so scans walk them in turn.
ID_TYPE_BRACKETS: tuple[tuple[str, ...], ...] = (
    ("minKey",),
    ("null",),
    ("double", "int", "long", "decimal"),
    ("string", "symbol"),
    ("object",),
    ("binData",),
    ("objectId",),
    ("bool",),
    ("date",),
    ("timestamp",),
    ("regex",),
    # After regex in MongoDB's order, before maxKey (not in the documented list, but valid _ids):
    ("dbPointer",),
    ("javascript",),
    ("javascriptWithScope",),
    ("maxKey",),
)


@dataclass(frozen=True, slots=True)
class ScanPosition:
    """Where a collection scan continues: the ``_id`` type bracket and the last ``_id`` read in it."""

    bracket: int = 0
    last_id: Any = None
    has_last: bool = False

    def to_offset(self) -> dict[str, Any]:
        return {
            "bracket": self.bracket,
            # canonical extended JSON keeps the BSON type (int vs long vs double) of the last key
            "last_key": json_util.dumps({"v": self.last_id}, json_options=_CANONICAL) if self.has_last else None,
        }

    @classmethod
    def from_offset(cls, record: Mapping[str, Any]) -> ScanPosition:
        last = record.get("last_key")
        if last is None:
            return cls(int(record.get("bracket", 0)))
        return cls(int(record["bracket"]), json_util.loads(str(last), json_options=_CANONICAL)["v"], True)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Documents of one scan step, and where the scan continues after them."""

    documents: list[Mapping[str, Any]]
    end: ScanPosition
    bracket: int = 0
    """The ``_id`` type bracket every document of the chunk is in."""
    read_ns: int | None = None
    """Wall-clock nanoseconds no later than the server read any of the documents, when the scanner knows.

    A snapshot read carries it as its time (``source.ts_ns``), however long the document waits
    before it is produced (back-pressure, or held back to the end as a collection's last document):
    a change made after the read must order after it, and a read stamped late would overtake it.
    """

    def position_after(self, document: Mapping[str, Any]) -> ScanPosition:
        """Where the scan continues after ``document`` of this chunk."""
        return ScanPosition(self.bracket, document["_id"], True)


@dataclass(frozen=True, slots=True)
class CollectionProgress:
    scan: ScanPosition = field(default_factory=ScanPosition)
    done: bool = False
    documents: int = 0

    def to_offset(self) -> dict[str, Any]:
        return {**self.scan.to_offset(), "done": self.done, "documents": self.documents}

    @classmethod
    def from_offset(cls, record: Mapping[str, Any]) -> CollectionProgress:
        return cls(ScanPosition.from_offset(record), bool(record.get("done")), int(record.get("documents", 0)))


@dataclass(frozen=True, slots=True)
class SnapshotState:
    """An unfinished snapshot's progress: per collection, how far its scan got.

    Stored (by ``engine.source_offset.SourceOffset``) under ``snapshot``, with ``initsync: true`` and the
    position streaming resumes from once the snapshot completes.
    """

    collections: Mapping[str, CollectionProgress] = field(default_factory=lambda: MappingProxyType({}))

    def with_collection(self, namespace: str, progress: CollectionProgress) -> SnapshotState:
        updated = dict(self.collections)
        updated[namespace] = progress
        return replace(self, collections=MappingProxyType(updated))

    def progress(self, namespace: str) -> CollectionProgress:
        return self.collections.get(namespace, CollectionProgress())

    @property
    def done(self) -> int:
        """How many collections are copied completely."""
        return sum(p.done for p in self.collections.values())

    def to_offset(self) -> dict[str, Any]:
        """``{namespace: {"bracket", "last_key", "done", "documents"}}``, namespaces sorted."""
        return {ns: p.to_offset() for ns, p in sorted(self.collections.items())}

    @classmethod
    def from_offset(cls, record: Mapping[str, Any]) -> SnapshotState:
        """Inverse of :meth:`to_offset`; raises ``ValueError`` naming the collection of a malformed entry."""
        collections = {}
        for ns, progress in record.items():
            try:
                collections[str(ns)] = CollectionProgress.from_offset(progress)
            except (AttributeError, BSONError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"snapshot progress of {ns!r} is unreadable: {progress!r} ({exc})") from None
        return cls(MappingProxyType(collections))
