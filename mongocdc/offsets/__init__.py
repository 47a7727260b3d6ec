"""Offset stores: where each connector keeps its position per source partition."""

from mongocdc.offsets.base import OffsetRecord, OffsetStore
from mongocdc.offsets.memory import MemoryOffsetStore
from mongocdc.offsets.sqlite import SqliteOffsetStore

__all__ = ["MemoryOffsetStore", "OffsetRecord", "OffsetStore", "SqliteOffsetStore"]
