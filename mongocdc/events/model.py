"""The change event: a pure value produced by sources and serialised by the envelope."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple


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


class SourceInfo(NamedTuple):
    """Where a change came from (the ``source`` block without the connector-wide fields).

    Immutable. A named tuple rather than a frozen dataclass, as :class:`ChangeEvent` and
    ``engine.source_offset.SourceOffset``: one is built per change, and a frozen dataclass's ``__init__``
    (one ``object.__setattr__`` per field) cost about 1.5 µs of it.
    """

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
    """The replica set the change came from (not in the envelope: Debezium 3.x's has no ``rs``)."""
    lsid: str | None = None
    """The session of a transaction's change, as Debezium writes it: the ``lsid`` document as strict JSON."""
    txn_number: int | None = None
    read_ns: int | None = None
    """Initial snapshot reads: when the document was read (epoch nanoseconds), Debezium's ``source.ts_*``."""

    @property
    def ts_ms(self) -> int:
        """Debezium's ``source.ts_ms``: the read time of a snapshot read, the wall time of a change when
        known, else cluster seconds × 1000."""
        if self.read_ns is not None:
            return self.read_ns // 1_000_000
        if self.wall_time_ms is not None:
            return self.wall_time_ms
        return self.sec * 1000

    @property
    def ts_us(self) -> int:
        return self.read_ns // 1000 if self.read_ns is not None else self.ts_ms * 1000

    @property
    def ts_ns(self) -> int:
        return self.read_ns if self.read_ns is not None else self.ts_ms * 1_000_000


@dataclass(frozen=True, slots=True)
class UpdateDescription:
    """What an update changed, as MongoDB reports it."""

    updated_fields_json: str
    removed_fields: tuple[str, ...] = ()
    truncated_arrays: tuple[tuple[str, int], ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        """Debezium's struct: an empty list is ``null``, as Debezium leaves the field unset."""
        return {
            "removedFields": list(self.removed_fields) or None,
            "updatedFields": self.updated_fields_json,
            "truncatedArrays": [{"field": f, "size": s} for f, s in self.truncated_arrays] or None,
        }


@dataclass(frozen=True, slots=True)
class TransactionBlock:
    """The ``transaction`` block of a data event inside a multi-document transaction."""

    id: str
    total_order: int
    data_collection_order: int


class ChangeEvent(NamedTuple):
    """One captured change of one document (immutable; a named tuple for the reason :class:`SourceInfo` is).

    ``key_json`` is the document's ``_id`` as Debezium writes it inside the Kafka key
    (relaxed extended JSON, ``codec.value_to_json``), ``after``/``before`` full documents as
    Debezium writes them (strict JSON, ``codec.document_to_json``) or ``None``.
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
