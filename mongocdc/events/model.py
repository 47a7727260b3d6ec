"""The change event: a pure value produced by sources and serialised by the envelope."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Op(StrEnum):
    """Debezium operation codes."""

    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    READ = "r"


class SnapshotMarker(StrEnum):
    """Values of ``source.snapshot``."""

    FALSE = "false"
    TRUE = "true"
    FIRST = "first"
    FIRST_IN_DATA_COLLECTION = "first_in_data_collection"
    LAST_IN_DATA_COLLECTION = "last_in_data_collection"
    LAST = "last"
    INCREMENTAL = "incremental"


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where a change came from (the ``source`` block without the connector-wide fields)."""

    db: str
    collection: str
    sec: int
    """Cluster time seconds of the change (0 for snapshot reads before streaming)."""
    ord: int
    """Cluster time increment."""
    wall_time_ms: int | None = None
    """Wall clock time of the change on MongoDB 6.0+ (epoch milliseconds)."""
    snapshot: SnapshotMarker = SnapshotMarker.FALSE
    rs: str | None = None
    lsid: str | None = None
    txn_number: int | None = None

    @property
    def ts_ms(self) -> int:
        """Debezium's ``source.ts_ms``: the wall time when known, else cluster seconds × 1000."""
        if self.wall_time_ms is not None:
            return self.wall_time_ms
        return self.sec * 1000


@dataclass(frozen=True, slots=True)
class UpdateDescription:
    """What an update changed, as MongoDB reports it."""

    updated_fields_json: str
    removed_fields: tuple[str, ...] = ()
    truncated_arrays: tuple[tuple[str, int], ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "removedFields": list(self.removed_fields),
            "updatedFields": self.updated_fields_json,
            "truncatedArrays": [{"field": f, "size": s} for f, s in self.truncated_arrays],
        }


@dataclass(frozen=True, slots=True)
class TransactionBlock:
    """The ``transaction`` block of a data event inside a multi-document transaction."""

    id: str
    total_order: int
    data_collection_order: int


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One captured change of one document.

    ``key_json`` is the document's ``_id`` as relaxed extended JSON (the
    string inside the Kafka key), ``after``/``before`` full documents as
    relaxed extended JSON text or ``None``.
    """

    op: Op
    key_json: str
    source: SourceInfo
    after: str | None = None
    before: str | None = None
    update_description: UpdateDescription | None = None
    transaction: TransactionBlock | None = None

    @property
    def namespace(self) -> str:
        return f"{self.source.db}.{self.source.collection}"
