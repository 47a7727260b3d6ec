"""Debezium's notification format (``notification.enabled.channels``), shared by its writer and its reader.

A notification is ``{"id", "aggregate_type", "type", "additional_data", "timestamp"}``:
``id`` is the id of the ``execute-snapshot`` signal that started the snapshot
(Debezium's correlation id), ``aggregate_type`` is ``Incremental Snapshot``,
``type`` one of ``NOTIFICATION_TYPES``, ``additional_data`` a string → string
map that always holds ``connector_name``, and ``timestamp`` epoch milliseconds.

In ``notification.sink.topic.name`` a record's key is ``{"id": …}`` and its value the
notification, with or without the Kafka Connect JSON envelope (``schemas.enable``), as
Debezium's ``SinkNotificationChannel`` writes them: ``encode_key``/``encode_value`` here,
``decode_value`` for the reader. Pure: the channels that write them are
``mongocdc/sinks/kafka/notifications.py``, the reader ``mongocdc/sources/kafka/notifications.py``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

INCREMENTAL_SNAPSHOT: Final = "Incremental Snapshot"
"""``aggregate_type`` of every incremental snapshot notification."""

NotificationType = Literal[
    "STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED", "ABORTED", "PAUSED", "RESUMED"
]
NOTIFICATION_TYPES: Final[tuple[str, ...]] = get_args(NotificationType)

# additional_data keys Debezium uses (IncrementalSnapshotNotificationService).
CONNECTOR_NAME: Final = "connector_name"
DATA_COLLECTIONS: Final = "data_collections"
CURRENT_COLLECTION_IN_PROGRESS: Final = "current_collection_in_progress"
MAXIMUM_KEY: Final = "maximum_key"
LAST_PROCESSED_KEY: Final = "last_processed_key"
SCANNED_COLLECTION: Final = "scanned_collection"
TOTAL_ROWS_SCANNED: Final = "total_rows_scanned"
STATUS: Final = "status"
"""``TABLE_SCAN_COMPLETED`` status: ``SUCCEEDED``, ``EMPTY``, ``SKIPPED``, ``UNKNOWN_SCHEMA`` …"""

KEY_SCHEMA_NAME: Final = "io.debezium.connector.common.NotificationKey"
VALUE_SCHEMA_NAME: Final = "io.debezium.connector.common.Notification"

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@dataclass(frozen=True, slots=True)
class Notification:
    """One Debezium notification; build incremental snapshot ones with ``incremental_snapshot``."""

    id: str
    type: str
    aggregate_type: str = INCREMENTAL_SNAPSHOT
    additional_data: Mapping[str, str] = field(default_factory=dict)
    timestamp: int = 0
    """Epoch milliseconds."""

    def to_dict(self) -> dict[str, Any]:
        """The value's payload, fields in the order of Debezium's ``Notification`` schema."""
        return {
            "id": self.id,
            "type": self.type,
            "aggregate_type": self.aggregate_type,
            "additional_data": dict(self.additional_data),
            "timestamp": self.timestamp,
        }


def incremental_snapshot(
    notification_type: NotificationType,
    connector_name: str,
    *,
    signal_id: str | None = None,
    timestamp_ms: int | None = None,
    **additional_data: object,
) -> Notification:
    """An ``Incremental Snapshot`` notification.

    ``signal_id`` is the id of the ``execute-snapshot`` signal (a random UUID
    when unknown); ``additional_data`` keywords (``data_collections=…``,
    ``scanned_collection=…``) are added as strings next to ``connector_name``,
    lists and tuples joined with ``,`` as Debezium joins collection names.
    """
    if notification_type not in NOTIFICATION_TYPES:
        raise ValueError(f"unknown notification type {notification_type!r}; expected one of {NOTIFICATION_TYPES}")
    data = {CONNECTOR_NAME: connector_name}
    for key, value in additional_data.items():
        data[key] = ",".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
    return Notification(
        id=signal_id or str(uuid.uuid4()),
        type=notification_type,
        additional_data=data,
        timestamp=int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
    )


def encode_key(notification: Notification, *, schemas_enable: bool = False) -> bytes:
    """Record key ``{"id": …}`` (Debezium's ``NotificationKey``)."""
    payload = {"id": notification.id}
    if schemas_enable:
        schema = {
            "type": "struct",
            "fields": [{"type": "string", "optional": False, "field": "id"}],
            "optional": False,
            "name": KEY_SCHEMA_NAME,
            "version": 1,
        }
        return _dumps({"schema": schema, "payload": payload}).encode("utf-8")
    return _dumps(payload).encode("utf-8")


def encode_value(notification: Notification, *, schemas_enable: bool = False) -> bytes:
    """Record value: the notification (Debezium's ``Notification`` struct)."""
    payload = notification.to_dict()
    if schemas_enable:
        schema = {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "id"},
                {"type": "string", "optional": False, "field": "type"},
                {"type": "string", "optional": False, "field": "aggregate_type"},
                {
                    "type": "map",
                    "keys": {"type": "string", "optional": False},
                    "values": {"type": "string", "optional": False},
                    "optional": True,
                    "field": "additional_data",
                },
                {"type": "int64", "optional": False, "field": "timestamp"},
            ],
            "optional": False,
            "name": VALUE_SCHEMA_NAME,
            "version": 1,
        }
        return _dumps({"schema": schema, "payload": payload}).encode("utf-8")
    return _dumps(payload).encode("utf-8")


def decode_value(value: bytes | None) -> Notification | None:
    """The notification a record's value holds (with or without the Connect JSON envelope); ``None`` for a
    tombstone or a value that is not one (another writer sharing the topic)."""
    if not value:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if isinstance(data, dict) and "payload" in data and "schema" in data:
        data = data["payload"]
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("type"), str):
        return None
    extra = data.get("additional_data")
    return Notification(
        id=data["id"],
        type=data["type"],
        aggregate_type=str(data.get("aggregate_type", "")),
        additional_data={str(k): str(v) for k, v in extra.items()} if isinstance(extra, dict) else {},
        timestamp=int(data.get("timestamp") or 0),
    )
