"""Offset stores: where each connector keeps its position per source partition.

``KafkaOffsetStore`` is imported on first use, so importing this package does not load confluent_kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongocdc.offsets.base import OffsetRecord, OffsetStore
from mongocdc.offsets.memory import MemoryOffsetStore
from mongocdc.offsets.sqlite import SqliteOffsetStore

if TYPE_CHECKING:
    from mongocdc.offsets.kafka import KafkaOffsetStore

__all__ = ["KafkaOffsetStore", "MemoryOffsetStore", "OffsetRecord", "OffsetStore", "SqliteOffsetStore"]


def __getattr__(name: str) -> Any:
    if name == "KafkaOffsetStore":
        from mongocdc.offsets.kafka import KafkaOffsetStore

        return KafkaOffsetStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
