"""Serialise change events as Debezium MongoDB connector records (EVENT_FORMAT.md).

Keys and values are compact JSON as Kafka Connect's JsonConverter writes
them; with ``schemas.enable`` they are wrapped as ``{"schema", "payload"}``.
"""

from __future__ import annotations

import functools
import json
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from mongocdc import __version__
from mongocdc.events.model import ChangeEvent, SnapshotMarker, SourceInfo

CONNECTOR = "mongodb"

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_string: Callable[[str], str] = json.encoder.encode_basestring
"""``_dumps`` of a ``str`` (the C function it calls for one), without the encoder's own checks."""


def topic_for(prefix: str, db: str, collection: str) -> str:
    """Data topic of a collection: ``<topic.prefix>.<db>.<collection>``."""
    return f"{prefix}.{db}.{collection}"


def _json_field(name: str) -> dict[str, Any]:
    return {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1, "field": name}


def _field(kind: str, field: str, optional: bool = True, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "optional": optional, **extra, "field": field}


def key_schema(prefix: str, db: str, collection: str) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [_field("string", "id", optional=False)],
        "optional": False,
        "name": f"{prefix}.{db}.{collection}.Key",
    }


_SOURCE_FIELDS: list[dict[str, Any]] = [
    _field("string", "version", optional=False),
    _field("string", "connector", optional=False),
    _field("string", "name", optional=False),
    _field("int64", "ts_ms", optional=False),
    _field(
        "string",
        "snapshot",
        name="io.debezium.data.Enum",
        version=1,
        parameters={"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
        default="false",
    ),
    _field("string", "db", optional=False),
    _field("string", "sequence"),
    _field("int64", "ts_us"),
    _field("int64", "ts_ns"),
    _field("string", "collection", optional=False),
    _field("int32", "ord", optional=False),
    _field("string", "lsid"),
    _field("int64", "txnNumber"),
    _field("int64", "wallTime"),
]

_UPDATE_DESCRIPTION_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "array", "items": {"type": "string", "optional": False}, "optional": True, "field": "removedFields"},
        _json_field("updatedFields"),
        {
            "type": "array",
            "items": {
                "type": "struct",
                "fields": [_field("string", "field", optional=False), _field("int32", "size", optional=False)],
                "optional": False,
                "name": "io.debezium.connector.mongodb.changestream.truncatedarray",
                "version": 1,
            },
            "optional": True,
            "field": "truncatedArrays",
        },
    ],
    "optional": True,
    "name": "io.debezium.connector.mongodb.changestream.updatedescription",
    "version": 1,
    "field": "updateDescription",
}

_TRANSACTION_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        _field("string", "id", optional=False),
        _field("int64", "total_order", optional=False),
        _field("int64", "data_collection_order", optional=False),
    ],
    "optional": True,
    "name": "event.block",
    "version": 1,
    "field": "transaction",
}


def value_schema(prefix: str, db: str, collection: str) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [
            _json_field("before"),
            _json_field("after"),
            _UPDATE_DESCRIPTION_SCHEMA,
            {
                "type": "struct",
                "fields": _SOURCE_FIELDS,
                "optional": False,
                "name": "io.debezium.connector.mongo.Source",
                "version": 1,
                "field": "source",
            },
            _field("string", "op"),
            _field("int64", "ts_ms"),
            _TRANSACTION_SCHEMA,
        ],
        "optional": False,
        "name": f"{prefix}.{db}.{collection}.Envelope",
    }


def key_payload(event: ChangeEvent) -> dict[str, Any]:
    return {"id": event.key_json}


def source_payload(s: SourceInfo, prefix: str) -> dict[str, Any]:
    """The ``source`` block, in the field order of Debezium 3.6's MongoDB ``Source`` struct."""
    return {
        "version": __version__,
        "connector": CONNECTOR,
        "name": prefix,
        "ts_ms": s.ts_ms,
        "snapshot": s.snapshot.value,
        "db": s.db,
        "sequence": None,
        "ts_us": s.ts_us,
        "ts_ns": s.ts_ns,
        "collection": s.collection,
        "ord": s.ord,
        "lsid": s.lsid,
        "txnNumber": s.txn_number,
        "wallTime": s.wall_time_ms,
    }


def _transaction_payload(event: ChangeEvent) -> dict[str, Any] | None:
    txn = event.transaction
    if txn is None:
        return None
    return {"id": txn.id, "total_order": txn.total_order, "data_collection_order": txn.data_collection_order}


def value_payload(event: ChangeEvent, prefix: str, processed_ms: int) -> dict[str, Any]:
    """The envelope as a JSON-ready dictionary."""
    return {
        "before": event.before,
        "after": event.after,
        "updateDescription": event.update_description.to_json_dict() if event.update_description else None,
        "source": source_payload(event.source, prefix),
        "op": event.op.value,
        "ts_ms": processed_ms,
        "transaction": _transaction_payload(event),
    }


HEARTBEAT_KEY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [_field("string", "serverName", optional=False)],
    "optional": False,
    "name": "io.debezium.connector.common.ServerNameKey",
    "version": 1,
}
HEARTBEAT_VALUE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [_field("int64", "ts_ms", optional=False)],
    "optional": False,
    "name": "io.debezium.connector.common.Heartbeat",
    "version": 1,
}


def heartbeat_record(prefix: str, now_ms: int, schemas_enable: bool = False) -> tuple[bytes, bytes]:
    """Key and value of a heartbeat: ``{"serverName": <topic.prefix>}`` and ``{"ts_ms": <now>}``."""
    key: dict[str, Any] = {"serverName": prefix}
    value: dict[str, Any] = {"ts_ms": now_ms}
    if schemas_enable:
        key = {"schema": HEARTBEAT_KEY_SCHEMA, "payload": key}
        value = {"schema": HEARTBEAT_VALUE_SCHEMA, "payload": value}
    return _dumps(key).encode(), _dumps(value).encode()


def run_id() -> str:
    """A time-ordered UUID (version 7), as Debezium names each run of a task."""
    millis = time.time_ns() // 1_000_000
    value = (millis & (2**48 - 1)) << 80 | 0x7 << 76 | secrets.randbits(12) << 64 | 0b10 << 62 | secrets.randbits(62)
    return str(uuid.UUID(int=value))


CONTEXT_HEADER_PREFIX = "__debezium.context."


def context_headers(prefix: str, task_id: int, run: str) -> tuple[tuple[str, bytes], ...]:
    """Debezium's ``extended.headers.enabled`` headers of every data record and tombstone."""
    return (
        (CONTEXT_HEADER_PREFIX + "connectorLogicalName", prefix.encode()),
        (CONTEXT_HEADER_PREFIX + "taskId", str(task_id).encode()),
        (CONTEXT_HEADER_PREFIX + "connectorName", CONNECTOR.encode()),
        (CONTEXT_HEADER_PREFIX + "runId", run.encode()),
    )


CLUSTER_TIME_HEADER = "__mongocdc.clusterTime"
"""mongocdc's own header on a data record with a place in MongoDB's oplog: the cluster time, as canonical extended
JSON (``{"$timestamp":{"t":<seconds>,"i":<increment>}}``). Debezium 3.6's value has the increment (``source.ord``)
but not the seconds once MongoDB gives ``wallTime`` (6.0+: ``source.ts_ms`` is then the primary's wall clock, which
can step back at an election); the cluster time never goes back, so the Spark job orders changes by it. Not on
initial or blocking snapshot reads (they have no place in the oplog) nor on tombstones."""


def cluster_time_header(sec: int, ord: int) -> tuple[str, bytes]:  # noqa: A002 - Debezium's name
    return CLUSTER_TIME_HEADER, f'{{"$timestamp":{{"t":{sec},"i":{ord}}}}}'.encode()


@dataclass(frozen=True, slots=True)
class EnvelopeCodec:
    """Turns change events into Kafka key and value bytes (and headers) for one connector task."""

    prefix: str
    schemas_enable: bool = False
    extended_headers: bool = True
    """Debezium's ``extended.headers.enabled``: the ``__debezium.context.*`` headers on data records."""
    task_id: int = 0
    run: str = field(default_factory=run_id)
    headers: list[tuple[str, str | bytes | None]] | None = field(init=False, compare=False, repr=False)
    """The headers of a data record or tombstone (``None``: no headers); the same list every time."""

    def __post_init__(self) -> None:
        headers: list[tuple[str, str | bytes | None]] | None = None
        if self.extended_headers:
            headers = list(context_headers(self.prefix, self.task_id, self.run))
        object.__setattr__(self, "headers", headers)

    def headers_for(self, source: SourceInfo) -> list[tuple[str, str | bytes | None]]:
        """The headers of a data record: the connector's (:attr:`headers`) and, for a change or an incremental
        snapshot read, its cluster time (:data:`CLUSTER_TIME_HEADER`)."""
        if source.read_ns is not None:
            return self.headers or []
        return [*(self.headers or ()), cluster_time_header(source.sec, source.ord)]

    def for_task(self, task_id: int) -> EnvelopeCodec:
        """The same codec for another task of the connector (its own ``taskId`` header)."""
        return replace(self, task_id=task_id)

    def topic(self, event: ChangeEvent) -> str:
        return topic_for(self.prefix, event.source.db, event.source.collection)

    def key(self, event: ChangeEvent) -> bytes:
        payload = '{"id":' + _string(event.key_json) + "}"  # _dumps(key_payload(event))
        if self.schemas_enable:  # _dumps({"schema": key_schema(…), "payload": key_payload(event)})
            source = event.source
            return (_schema_heads(self.prefix, source.db, source.collection)[0] + payload + "}").encode()
        return payload.encode()

    def value(self, event: ChangeEvent, processed_ms: int) -> bytes:
        # The same bytes as _dumps(value_payload(...)) (wrapped as _dumps({"schema": value_schema(…), "payload":
        # …}) with schemas), assembled from parts: the schema and most of the source block are the same for every
        # change of a collection, so those parts are cached.
        update = event.update_description
        before, after = event.before, event.after
        source = event.source
        return "".join(
            (
                _schema_heads(self.prefix, source.db, source.collection)[1] if self.schemas_enable else "",
                '{"before":',
                "null" if before is None else _string(before),
                ',"after":',
                "null" if after is None else _string(after),
                ',"updateDescription":',
                "null" if update is None else _dumps(update.to_json_dict()),
                ',"source":',
                _source_json(event.source, self.prefix),
                ',"op":"',
                event.op,  # a str enum: joined as its value
                '","ts_ms":',
                str(processed_ms),
                ',"transaction":',
                "null" if event.transaction is None else _dumps(_transaction_payload(event)),
                "}}" if self.schemas_enable else "}",
            )
        ).encode()


@functools.lru_cache(maxsize=1024)
def _schema_heads(prefix: str, db: str, collection: str) -> tuple[str, str]:
    """``{"schema":<key schema>,"payload":`` and the same with the value schema, of one collection's records."""
    return (
        '{"schema":' + _dumps(key_schema(prefix, db, collection)) + ',"payload":',
        '{"schema":' + _dumps(value_schema(prefix, db, collection)) + ',"payload":',
    )


def _source_json(s: SourceInfo, prefix: str) -> str:
    """``_dumps(source_payload(s, prefix))``, from cached constant parts and the per-change numbers."""
    head, middle, tail = _source_parts(prefix, s.snapshot, s.db, s.collection)
    read_ns = s.read_ns
    if read_ns is None:  # SourceInfo.ts_ms/ts_us/ts_ns, computed once
        ts_ms = s.wall_time_ms if s.wall_time_ms is not None else s.sec * 1000
        ts_us, ts_ns = ts_ms * 1000, ts_ms * 1_000_000
    else:
        ts_ms, ts_us, ts_ns = read_ns // 1_000_000, read_ns // 1000, read_ns
    return "".join(
        (
            head,
            str(ts_ms),
            middle,
            str(ts_us),
            ',"ts_ns":',
            str(ts_ns),
            tail,
            str(s.ord),
            ',"lsid":',
            _json_or_null(s.lsid),
            ',"txnNumber":',
            "null" if s.txn_number is None else str(s.txn_number),
            ',"wallTime":',
            "null" if s.wall_time_ms is None else str(s.wall_time_ms),
            "}",
        )
    )


@functools.lru_cache(maxsize=1024)
def _source_parts(prefix: str, snapshot: SnapshotMarker, db: str, collection: str) -> tuple[str, str, str]:
    """The parts of the ``source`` JSON that are the same for every change of one collection."""
    head = f'{{"version":{_dumps(__version__)},"connector":{_dumps(CONNECTOR)},"name":{_dumps(prefix)},"ts_ms":'
    middle = f',"snapshot":{_dumps(snapshot.value)},"db":{_dumps(db)},"sequence":null,"ts_us":'
    tail = f',"collection":{_dumps(collection)},"ord":'
    return head, middle, tail


def _json_or_null(text: str | None) -> str:
    return "null" if text is None else _dumps(text)


def unwrap(value: dict[str, Any]) -> dict[str, Any]:
    """Return the payload of a record with or without the ``schema``/``payload`` wrapper."""
    if set(value) == {"schema", "payload"} and isinstance(value["payload"], dict):
        return value["payload"]
    return value
