"""Transaction metadata (``provide.transaction.metadata=true``): BEGIN/END records and ``transaction`` blocks.

Pure: no I/O. :class:`TransactionTracker` is fed the captured data events of
one change stream in stream order and says which transaction records to
produce before each one, and which ``transaction`` block the event carries.

A MongoDB transaction is identified by ``source.lsid`` + ``source.txn_number``
(id ``"<lsid>:<txnNumber>"``, EVENT_FORMAT.md). A committed transaction's
changes are consecutive in the change stream, so a transaction is over as soon
as a change outside it arrives (a non-transactional event or another
transaction's event): its END record is produced before that change, with that
change's ``source.ts_ms``, never in the middle of the transaction. That is
Debezium's behaviour. With ``idle_end_ms`` set, a stream idle for that long, or a
control event such as ``drop``, ends it too (END then carries the transaction's
last ``source.ts_ms``): a consumer waiting for END does not wait for the next change.

Restart safety
--------------
The reference connector resets its counters on restart, so a transaction
interrupted by a restart gets a second BEGIN and wrong ``total_order`` /
``data_collection_order`` / END counts. Here the tracker's state is stored
with the committed offset: :attr:`TransactionTracker.state` taken *right after*
the tracker was called for a stream item and that item's records (transaction
records first, then the data record) were handed to the producer, belongs with
*that item's* position (``SourceOffset.transaction``). A tracker built with that
state, on a change stream resumed after that position, continues the counters,
does not emit BEGIN again, and does not emit a second END for a transaction
whose END was already produced.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mongocdc.events.java import java_hashmap_order
from mongocdc.events.model import ChangeEvent, TransactionBlock

log = logging.getLogger("mongocdc.engine")

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

STATE_VERSION = 1
"""Version of the record :meth:`TransactionState.to_offset` writes."""

KEY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [{"type": "string", "optional": False, "field": "id"}],
    "optional": False,
    "name": "io.debezium.connector.common.TransactionMetadataKey",
    "version": 1,
}
"""Kafka Connect JSON schema of the key, as Debezium's ``SchemaFactory.transactionKeySchema``."""

_EVENT_COUNT_PER_DATA_COLLECTION: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "data_collection"},
        {"type": "int64", "optional": False, "field": "event_count"},
    ],
    "optional": True,
    "name": "event.collection",
    "version": 1,
}

VALUE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "status"},
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": True, "field": "event_count"},
        {"type": "array", "items": _EVENT_COUNT_PER_DATA_COLLECTION, "optional": True, "field": "data_collections"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
    ],
    "optional": False,
    "name": "io.debezium.connector.common.TransactionMetadataValue",
    "version": 1,
}
"""Kafka Connect JSON schema of the value (Debezium's ``transactionValueSchema``, in its field order)."""


def transaction_id(lsid: str, txn_number: int) -> str:
    """The transaction id of EVENT_FORMAT.md: ``"<lsid>:<txnNumber>"``."""
    return f"{lsid}:{txn_number}"


def transaction_id_of(event: ChangeEvent) -> str | None:
    """The id of the transaction ``event`` belongs to, or ``None`` outside a transaction."""
    source = event.source
    if source.lsid is None or source.txn_number is None:
        return None
    return transaction_id(source.lsid, source.txn_number)


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """One record of the transaction topic (``<topic.prefix>.<topic.transaction>``), independent of the topic."""

    status: Literal["BEGIN", "END"]
    id: str
    ts_ms: int
    """BEGIN: ``source.ts_ms`` of the transaction's first event; END: of the change that ended it."""
    event_count: int | None = None
    """END only: how many data events the transaction produced."""
    data_collections: tuple[tuple[str, int], ...] | None = None
    """END only: ``(<db>.<collection>, event count)`` in the order Debezium lists them (its ``HashMap``'s)."""

    def key_payload(self) -> dict[str, Any]:
        return {"id": self.id}

    def value_payload(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "id": self.id,
            "event_count": self.event_count,
            "data_collections": (
                None
                if self.data_collections is None
                else [{"data_collection": name, "event_count": count} for name, count in self.data_collections]
            ),
            "ts_ms": self.ts_ms,
        }

    def key_bytes(self, schemas_enable: bool = False) -> bytes:
        """The key as JsonConverter writes it: ``{"id": …}``, wrapped with its schema when ``schemas_enable``."""
        payload = self.key_payload()
        if schemas_enable:
            return _dumps({"schema": KEY_SCHEMA, "payload": payload}).encode()
        return _dumps(payload).encode()

    def value_bytes(self, schemas_enable: bool = False) -> bytes:
        """The value as JsonConverter writes it, wrapped as ``{"schema", "payload"}`` when ``schemas_enable``."""
        payload = self.value_payload()
        if schemas_enable:
            return _dumps({"schema": VALUE_SCHEMA, "payload": payload}).encode()
        return _dumps(payload).encode()


@dataclass(frozen=True, slots=True)
class TransactionState:
    """Counters of the current (or last) transaction: what the offset stores so a restart continues them.

    The offset record (:meth:`to_offset`, under ``transaction`` in ``SourceOffset``'s record)::

        {"v": 1, "id": "<lsid>:<txnNumber>", "begin_emitted": true, "ended": false, "total_order": 3,
         "data_collections": [["db.orders", 2], ["db.customers", 1]], "first_ts_ms": 1, "last_ts_ms": 2}
    """

    id: str
    begin_emitted: bool = False
    ended: bool = False
    total_order: int = 0
    collections: tuple[tuple[str, int], ...] = ()
    """Events per ``<db>.<collection>``, in order of first appearance."""
    first_ts_ms: int = 0
    last_ts_ms: int = 0

    def to_offset(self) -> dict[str, Any]:
        return {
            "v": STATE_VERSION,
            "id": self.id,
            "begin_emitted": self.begin_emitted,
            "ended": self.ended,
            "total_order": self.total_order,
            "data_collections": [[name, count] for name, count in self.collections],
            "first_ts_ms": self.first_ts_ms,
            "last_ts_ms": self.last_ts_ms,
        }

    @classmethod
    def from_offset(cls, record: Mapping[str, Any]) -> TransactionState:
        """Inverse of :meth:`to_offset`; raises ``ValueError`` on a malformed record.

        ``id`` and ``data_collections`` are required; a record written by hand may leave out the rest:
        ``begin_emitted`` (a stored transaction had its BEGIN produced), ``ended`` (false),
        ``total_order`` (the sum of the collection counts) and the times (0).
        """
        try:
            version = record.get("v", STATE_VERSION)
            if version != STATE_VERSION:
                raise ValueError(f"unknown transaction state version {version!r}")
            collections = tuple((str(name), int(count)) for name, count in record["data_collections"])
            counted = sum(count for _, count in collections)
            total = int(record.get("total_order", counted))
            if total != counted:
                raise ValueError(
                    f"transaction state of {record['id']!r}: total_order {total} ≠ sum of collection counts"
                )
            return cls(
                id=str(record["id"]),
                begin_emitted=bool(record.get("begin_emitted", True)),
                ended=bool(record.get("ended", False)),
                total_order=total,
                collections=collections,
                first_ts_ms=int(record.get("first_ts_ms", 0)),
                last_ts_ms=int(record.get("last_ts_ms", 0)),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"transaction state is unreadable: {exc}") from None


class TransactionTracker:
    """Recognises transactions in a stream of data events and numbers their events.

    Call :meth:`on_event` for every captured data event that will be produced,
    in stream order; :meth:`on_control` for every control event (``drop``,
    ``rename``, ``invalidate`` …); :meth:`on_idle` on idle polls. Each returns
    the transaction records to produce *before* anything else of that item.
    ``processed_ms`` is any millisecond clock, the same for all calls; it only
    measures idleness.
    """

    def __init__(self, idle_end_ms: int | None = None, state: TransactionState | None = None) -> None:
        if idle_end_ms is not None and idle_end_ms < 0:
            raise ValueError("idle_end_ms must be >= 0")
        self.idle_end_ms = idle_end_ms
        self._txn = state
        """The current (or last) transaction; a restart passes the stored one to continue its counters."""
        self._last_activity_ms: int | None = None

    @property
    def state(self) -> TransactionState | None:
        """What to store with the offset of the item just processed, ``None`` before any transaction.

        Take it after the item's records were handed to the producer and store it with that item's
        position: the state describes the stream *after* that position.
        """
        return self._txn

    @property
    def open_transaction(self) -> str | None:
        """The id of the transaction whose END is still to come."""
        txn = self._txn
        return None if txn is None or txn.ended else txn.id

    # -- feeding ------------------------------------------------------------

    def on_event(self, event: ChangeEvent, processed_ms: int) -> tuple[list[TransactionRecord], ChangeEvent]:
        """Records to produce before ``event``, and ``event`` with its ``transaction`` block (if in one)."""
        self._last_activity_ms = processed_ms
        txn_id = transaction_id_of(event)
        before: list[TransactionRecord] = []
        txn = self._txn
        if txn is None or txn.id != txn_id:
            before.extend(self._end(event.source.ts_ms))
            if txn_id is None:
                return before, event
            txn = TransactionState(txn_id, first_ts_ms=event.source.ts_ms)
        elif txn.ended:
            log.warning(
                "change of transaction %s arrived after its END (idle longer than %d ms inside a transaction)",
                txn_id,
                self.idle_end_ms,
            )
        if not txn.begin_emitted:
            before.append(TransactionRecord("BEGIN", txn.id, txn.first_ts_ms))
        namespace = event.namespace
        counts = dict(txn.collections)
        order = counts[namespace] = counts.get(namespace, 0) + 1
        txn = TransactionState(
            txn.id,
            True,
            txn.ended,
            txn.total_order + 1,
            tuple(counts.items()),
            txn.first_ts_ms,
            event.source.ts_ms,
        )
        self._txn = txn
        block = TransactionBlock(txn.id, txn.total_order, order)
        return before, event._replace(transaction=block)

    def on_control(self) -> list[TransactionRecord]:
        """A control event (drop, rename, invalidate …) ends the open transaction when ``idle_end_ms`` is set."""
        return [] if self.idle_end_ms is None else self._end(None)

    def on_idle(self, processed_ms: int) -> list[TransactionRecord]:
        """On an idle poll: END of the open transaction once nothing arrived for ``idle_end_ms``."""
        if self.open_transaction is None or self.idle_end_ms is None:
            return []
        if self._last_activity_ms is None:  # restored from an offset: the idle time starts now
            self._last_activity_ms = processed_ms
        if processed_ms - self._last_activity_ms < self.idle_end_ms:
            return []
        return self._end(None)

    def _end(self, ts_ms: int | None) -> list[TransactionRecord]:
        """END of the open transaction, at ``ts_ms`` (the change that ended it) or at its last change."""
        txn = self._txn
        if txn is None or txn.ended:
            return []
        self._txn = dataclasses.replace(txn, ended=True)
        counts = dict(txn.collections)
        return [
            TransactionRecord(
                "END",
                txn.id,
                txn.last_ts_ms if ts_ms is None else ts_ms,
                event_count=txn.total_order,
                # Debezium lists them in its HashMap's iteration order, not in order of appearance.
                data_collections=tuple((name, counts[name]) for name in java_hashmap_order(counts)),
            )
        ]
