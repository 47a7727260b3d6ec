"""The offset of one source partition, typed (pure): the position and everything that rides with it.

mongocdc's counterpart of Debezium's ``MongoDbOffsetContext``. A frozen :class:`SourceOffset` is what a
restart continues from; :meth:`SourceOffset.to_record` writes the JSON map an ``OffsetStore`` keeps,
:meth:`SourceOffset.from_record` reads one back. This module is the only place that knows the
record's top-level keys; each part writes and reads its own sub-record::

    {"sec": 1769860800, "ord": 3,              # Position: the cluster time of the last change,
     "resume_token": "<Base64 of BSON>",       #   the token to resume after (null: start at sec/ord)
     "initsync": true,                         # an initial snapshot is unfinished (the position is
     "snapshot": {"<db>.<coll>": {...}},       #   where streaming resumes after it): SnapshotState
     "incremental_snapshot": {...},            # a running incremental snapshot: IncrementalSnapshotState
     "incremental_snapshot_completed": "<id>", # the id of the last incremental snapshot that completed
     "signal_offsets": {"0": 12},              # the kafka signal channel: the next offset to read, by partition
     "transaction": {...},                     # the transaction the stream is in: TransactionState
     "server_id": "<topic.prefix>"}            # the topic.prefix it was written for (ServerOffsets)

A key is absent when its part is (``resume_token`` is always written). The stores write a record
with its keys sorted, so the bytes depend on the content only: records of earlier versions, and
those ``engine/adoption.py`` translates from Debezium's, load unchanged. The record's fields are
Debezium's where both connectors have them (``sec``, ``ord``, ``resume_token``, ``initsync``).

The engine hands these values around instead of records: the streaming loop registers one per stream
item with the ``AckTracker`` (the snapshot runner one per chunk) and only the committed one is turned
into a record, at commit.

Below the type, what the offset commands share with it: a record read or described for a person
(:func:`read_offset`, :func:`shown_record`, :func:`describe_offset`, :class:`OffsetChange`) and the
positions an operator types, checked (:func:`parse_resume_token`, :func:`checked_epoch_seconds`): a bad
one is a ``UsageError`` (exit 2) naming the option it came from.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import bson

from mongocdc.engine.incremental import IncrementalSnapshotState
from mongocdc.engine.transactions import TransactionState
from mongocdc.errors import UsageError
from mongocdc.events.position import Position
from mongocdc.events.snapshot import SnapshotState

if TYPE_CHECKING:
    from mongocdc.offsets.base import OffsetRecord, OffsetStore

log = logging.getLogger("mongocdc.engine")

SEC: Final = "sec"
ORD: Final = "ord"
RESUME_TOKEN: Final = "resume_token"  # noqa: S105 (a field name, not a secret)
INITSYNC: Final = "initsync"
SNAPSHOT: Final = "snapshot"
INCREMENTAL: Final = "incremental_snapshot"
INCREMENTAL_COMPLETED: Final = "incremental_snapshot_completed"
TRANSACTION: Final = "transaction"
SIGNAL_OFFSETS: Final = "signal_offsets"
SERVER_ID: Final = "server_id"


_new = tuple.__new__


def as_json(value: object) -> str:
    """A stored value as an error message shows it: as JSON, the form it is stored in (not Python's repr)."""
    return json.dumps(value, default=str, ensure_ascii=False)


def encode_token(token: bytes | None) -> str | None:
    """A resume token's stored form: Base64 of its BSON (Debezium's form too); ``None`` without one."""
    return base64.b64encode(token).decode("ascii") if token else None


def decode_token(text: str) -> bytes:
    """The BSON of a stored resume token; raises ``ValueError`` when ``text`` is not Base64 of a BSON document."""
    try:
        token = base64.b64decode(text, validate=True)
        bson.decode(token)
    except (binascii.Error, bson.errors.BSONError, ValueError) as exc:
        raise ValueError(f"offset 'resume_token' is not base64 of a BSON document: {exc}") from exc
    return token


class SourceOffset(NamedTuple):
    """Where one source partition stands, and the state a restart continues with.

    Immutable, and its parts are too. A named tuple rather than a frozen dataclass: the streaming
    loop builds one per stream item, and a frozen dataclass's ``__init__`` (one ``object.__setattr__``
    per field) cost about a microsecond more per event there, a tenth of the loop's own work.
    """

    position: Position
    """Where streaming continues: after this change. While an initial snapshot is unfinished, the
    position recorded when it began."""
    snapshot: SnapshotState | None = None
    """An unfinished initial snapshot's progress (stored with ``initsync: true``); ``None`` otherwise."""
    incremental: IncrementalSnapshotState | None = None
    """A running incremental snapshot's progress (one with no collection left is not stored)."""
    transaction: TransactionState | None = None
    """The current or last transaction, with ``provide.transaction.metadata``."""
    completed_incremental: str | None = None
    """The id of the last incremental snapshot that completed (``snapshot --incremental --wait`` looks for it)."""
    signal_offsets: tuple[tuple[int, int], ...] | None = None
    """The ``kafka`` signal channel's next offset to read, ``(partition, offset)`` per partition: the task's own,
    so that each task reads each signal once wherever it runs (``None``: the channel was not read yet)."""

    def to_record(self) -> dict[str, Any]:
        """The JSON-ready record a store keeps (the layout is in the module docstring)."""
        position = self.position
        record: dict[str, Any] = {
            SEC: position.sec,
            ORD: position.ord,
            RESUME_TOKEN: encode_token(position.resume_token),
        }
        if self.snapshot is not None:
            record[INITSYNC] = True
            record[SNAPSHOT] = self.snapshot.to_offset()
        if self.incremental is not None and self.incremental.running:
            record[INCREMENTAL] = self.incremental.to_offset()
        if self.completed_incremental is not None:
            record[INCREMENTAL_COMPLETED] = self.completed_incremental
        if self.transaction is not None:
            record[TRANSACTION] = self.transaction.to_offset()
        if self.signal_offsets is not None:
            record[SIGNAL_OFFSETS] = {str(partition): offset for partition, offset in self.signal_offsets}
        return record

    @classmethod
    def streaming(
        cls,
        position: Position,
        incremental: IncrementalSnapshotState | None,
        transaction: TransactionState | None,
        completed_incremental: str | None,
        signal_offsets: tuple[tuple[int, int], ...] | None = None,
    ) -> SourceOffset:
        """``SourceOffset(position, None, incremental, transaction, completed_incremental, signal_offsets)``, built
        without the named tuple's keyword handling: the streaming loop builds one per stream item (half the cost)."""
        return _new(cls, (position, None, incremental, transaction, completed_incremental, signal_offsets))

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SourceOffset:
        """Inverse of :meth:`to_record`; raises ``ValueError`` naming the part of a malformed record."""
        return cls._read(record, drop_unreadable_incremental=False)

    @classmethod
    def restore(cls, record: Mapping[str, Any] | None) -> SourceOffset | None:
        """What a starting connector continues from (``None`` without a stored record).

        As :meth:`from_record`, except that unreadable incremental snapshot progress is logged and
        dropped, so the connector streams on (the snapshot can be asked for again).
        """
        return None if record is None else cls._read(record, drop_unreadable_incremental=True)

    @classmethod
    def _read(cls, record: Mapping[str, Any], *, drop_unreadable_incremental: bool) -> SourceOffset:
        if not isinstance(record, Mapping):
            raise ValueError(f"an offset record is a JSON object, got {as_json(record)}")
        try:
            sec = int(record[SEC])
            ord_ = int(record[ORD])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"offset record needs integer 'sec' and 'ord', got {as_json(dict(record))}") from exc
        raw_token = record.get(RESUME_TOKEN)
        position = Position(sec, ord_, decode_token(str(raw_token)) if raw_token else None)
        snapshot = None
        if record.get(INITSYNC):
            progress = record.get(SNAPSHOT)
            progress = {} if progress is None else progress
            if not isinstance(progress, Mapping):
                raise ValueError(f"offset 'snapshot' is not an object: {as_json(progress)}")
            snapshot = SnapshotState.from_offset(progress)
        incremental = None
        raw_incremental = record.get(INCREMENTAL)
        if raw_incremental:
            try:
                if not isinstance(raw_incremental, Mapping):
                    raise ValueError(f"incremental snapshot offset is not an object: {as_json(raw_incremental)}")
                incremental = IncrementalSnapshotState.from_offset(raw_incremental)
            except ValueError as exc:
                if not drop_unreadable_incremental:
                    raise
                log.error("the stored incremental snapshot progress is unreadable (%s); it is dropped", exc)
            if incremental is not None and not incremental.running:
                incremental = None
        completed = record.get(INCREMENTAL_COMPLETED)
        raw_transaction = record.get(TRANSACTION)
        if raw_transaction is not None and not isinstance(raw_transaction, Mapping):
            raise ValueError(f"transaction state is not an object: {as_json(raw_transaction)}")
        return cls(
            position,
            snapshot=snapshot,
            incremental=incremental,
            transaction=None if raw_transaction is None else TransactionState.from_offset(raw_transaction),
            completed_incremental=completed if isinstance(completed, str) else None,
            signal_offsets=_signal_offsets(record.get(SIGNAL_OFFSETS)),
        )


def _signal_offsets(raw: object) -> tuple[tuple[int, int], ...] | None:
    """``{"0": 12}`` → ``((0, 12),)``; ``ValueError`` for anything else."""
    if raw is None:
        return None
    try:
        if not isinstance(raw, Mapping):
            raise TypeError
        return tuple(sorted((int(partition), int(offset)) for partition, offset in raw.items()))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"offset 'signal_offsets' is not an object of partition: offset, got {as_json(raw)}") from exc


class ServerOffsets:
    """A running connector's offset store, keyed by ``topic.prefix`` as Kafka Connect keys Debezium's offsets.

    Debezium's source partition is ``{"server_id": "<topic.prefix>"}``, so a connector whose prefix changed finds no
    offset in Kafka Connect and starts afresh (``snapshot.mode`` decides; the new topics get their snapshot). Each
    offset this store commits carries the prefix it was written for (``server_id``), and a stored offset of another
    prefix is not loaded (logged); an offset without one (written before, by ``offsets set`` or ``offsets import``)
    loads as it is. Everything else goes to the wrapped store (``transactional`` and ``abort`` of an exactly-once
    task's store too).
    """

    def __init__(self, store: OffsetStore, prefix: str) -> None:
        self._store = store
        self.prefix = prefix

    @property
    def exists(self) -> bool:
        return self._store.exists

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        return self._store.records(connector)

    def delete(self, connector: str, partition: str | None = None) -> int:
        return self._store.delete(connector, partition)

    def close(self) -> None:
        self._store.close()

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        record = self._store.load(connector, partition)
        if record is None:
            return None
        stored = record.get(SERVER_ID)
        if stored is not None and stored != self.prefix:
            log.warning(
                "%s/%s: the stored offset was written for topic.prefix %r, not %r: it is not used, and the connector "
                "starts afresh (snapshot.mode decides), as Kafka Connect keys Debezium's offsets by topic.prefix; "
                "set topic.prefix back to %r to continue from it",
                connector,
                partition,
                stored,
                self.prefix,
                stored,
            )
            return None
        return dict(record)

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        self._store.commit(connector, partition, {**offset, SERVER_ID: self.prefix})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


# --- what the offset commands read, show and are given ------------------------------------


MAX_TIMESTAMP_SECONDS: Final = 2**32 - 1
"""The largest seconds of a cluster time: a BSON Timestamp's seconds are 32 bits."""
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")


def read_offset(record: Mapping[str, Any]) -> SourceOffset | str:
    """A stored record read through ``SourceOffset``, or why it cannot be read.

    Debezium's records read the same way: their position fields (``sec``, ``ord``, ``resume_token``,
    ``initsync``) are the ones mongocdc's records share with them, and the rest is not looked at.
    """
    try:
        return SourceOffset.from_record(record)
    except ValueError as exc:
        return str(exc)


def shown_record(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored offset record as the operator sees it: its fields as stored, but the resume token as its
    `_data` hex string (what MongoDB shows in a change event's `_id` and Debezium logs), not the stored
    Base64 of its BSON. The store keeps its own form; a token that does not read is shown as stored."""
    if record is None:
        return None
    shown = dict(record)
    stored = shown.get(RESUME_TOKEN)
    if isinstance(stored, str) and stored:
        # not Base64 of BSON (Debezium 1.x wrote the hex `_data` itself): shown as it is
        with contextlib.suppress(ValueError):
            shown[RESUME_TOKEN] = Position(0, 0, decode_token(stored)).describe_token()
    return shown


def iso_seconds(seconds: int) -> str:
    """Epoch seconds as ISO 8601 in UTC, ``Z`` for the zone."""
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def describe_offset(record: Mapping[str, Any] | None, missing: str) -> str:
    """One line for a person: ``sec=… (time) ord=… token=…``; ``missing`` when there is no offset."""
    if record is None:
        return missing
    offset = read_offset(record)
    if isinstance(offset, str):
        return f"unreadable ({offset})"
    sec = offset.position.sec
    when = f" ({iso_seconds(sec)})" if 0 < sec <= MAX_TIMESTAMP_SECONDS else ""
    token = offset.position.describe_token() if offset.position.resume_token else "none"
    extra = " initsync" if offset.snapshot is not None else ""
    return f"sec={sec}{when} ord={offset.position.ord} token={token}{extra}"


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """What happens to one source partition's stored offset."""

    partition: str
    action: str
    """``deleted``, ``moved`` (to a time), ``set`` (to a resume token), ``imported`` or ``exported``."""
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def to_dict(self, connector: str) -> dict[str, Any]:
        return {
            "connector": connector,
            "partition": self.partition,
            "action": self.action,
            "before": shown_record(self.before),
            "after": shown_record(self.after),
        }

    def described(self) -> tuple[str, str]:
        """Before and after, each in one line for a person (``describe_offset``)."""
        return describe_offset(self.before, "no offset"), describe_offset(self.after, "deleted")


def checked_epoch_seconds(milliseconds: int, value: str, now: datetime | None = None) -> int:
    """The whole seconds of ``--to-timestamp`` ``value`` (``milliseconds``, as parsed); a ``UsageError`` (exit 2)
    when they are out of a cluster time's range or in the future (after ``now``).

    Fractions of a second are dropped, so the position is never after the time asked for.
    """
    seconds = milliseconds // 1000
    current = int((now or datetime.now(UTC)).timestamp())
    if seconds < 1 or seconds > MAX_TIMESTAMP_SECONDS:
        raise UsageError(
            f"--to-timestamp {value!r} is out of range (epoch seconds from 1 to {MAX_TIMESTAMP_SECONDS})",
            hint="a bare number is epoch seconds: give milliseconds with their unit (1795687200000ms), "
            "or ISO 8601 (2026-11-26T10:00:00Z)",
        )
    if seconds > current:
        raise UsageError(
            f"--to-timestamp {value!r} ({iso_seconds(seconds)}) is in the future: every change until then would "
            "be skipped",
            hint="give a past time: ISO 8601 (2026-11-26T10:00:00Z), 1795687200s or 1795687200000ms",
        )
    return seconds


def parse_resume_token(text: str) -> dict[str, Any]:
    """The token document of ``--resume-token``.

    Accepted: the ``_data`` hex string MongoDB shows (and ``offsets show`` prints), the document as
    extended JSON, or the stored form (Base64 of the BSON document, as Debezium stores it and Kafka
    Connect's ``GET /connectors/<name>/offsets`` shows it).
    A string of hex digits is always taken as ``_data``. Every form is checked to be a change stream
    token: its ``_data`` starts with the cluster time (byte 0x82, a KeyString timestamp, as MongoDB and
    Debezium write it); anything else is a ``UsageError`` (exit 2) saying what a token looks like.
    """
    from bson import json_util
    from bson.binary import Binary

    hint = (
        "a resume token's `_data` is hex starting with 82 (its cluster time), e.g. 8263A1B2C3000000012B…; "
        "pass the `_data` string of a change event's `_id` (hex digits, as mongosh shows it), the whole token "
        'as extended JSON, e.g. \'{"_data": "8263…"}\', or the stored Base64 form Kafka Connect shows for Debezium'
    )
    stripped = text.strip()
    if not stripped.startswith("{"):
        if _HEX.fullmatch(stripped):
            return _checked_token({"_data": stripped.upper()}, hint)
        try:
            stored = bson.decode(decode_token(stripped))
        except ValueError:
            stored = None
        if not stored or "_data" not in stored:
            raise UsageError(
                f"--resume-token {text!r} is neither a hex `_data` string, a JSON document nor a stored token",
                hint=hint,
            )
        return _checked_token(stored, hint)
    try:
        document = json_util.loads(stripped)
    except Exception as exc:  # json_util raises ValueError, TypeError or bson errors for bad input
        raise UsageError(f"--resume-token is not valid extended JSON: {exc}", hint=hint) from None
    if not isinstance(document, dict) or "_data" not in document:
        raise UsageError("--resume-token must be a document with a `_data` field", hint=hint)
    data = document["_data"]
    if isinstance(data, str):
        if not _HEX.fullmatch(data):
            raise UsageError(f"the resume token's `_data` {data!r} is not an even number of hex digits", hint=hint)
        document["_data"] = data.upper()
    elif not isinstance(data, Binary | bytes):
        raise UsageError("the resume token's `_data` must be a hex string (or binary, MongoDB 3.6)", hint=hint)
    return _checked_token(dict(document), hint)


def _checked_token(token: dict[str, Any], hint: str) -> dict[str, Any]:
    """``token`` when its ``_data`` starts with a cluster time, the first field of every change stream token."""
    data = token.get("_data")
    raw = bytes.fromhex(data) if isinstance(data, str) and _HEX.fullmatch(data) else data
    if not isinstance(raw, bytes) or not raw.startswith(b"\x82"):
        shown = data if isinstance(data, str) else repr(data)
        raise UsageError(
            f"--resume-token: `_data` {shown} is not a MongoDB change stream resume token (it does not start with "
            "a cluster time, 82…)",
            hint=hint,
        )
    return token
