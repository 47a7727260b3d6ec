"""The ``OffsetStore`` protocol and its record type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    """One stored offset: a connector's position in one source partition."""

    connector: str
    partition: str
    offset: Mapping[str, Any]
    updated_at: datetime


class OffsetStore(Protocol):
    """Keeps positions. ``commit`` is atomic per record: a reader sees the old or the new offset."""

    @property
    def exists(self) -> bool:
        """Whether the store is there (a reader opens a missing store without creating it: ``False``)."""

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        """The stored offset, or ``None`` when this partition has none."""

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        """Replace the partition's offset with ``offset`` (a JSON-ready mapping)."""

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        """Every stored offset, optionally of one connector, ordered by connector and partition."""

    def delete(self, connector: str, partition: str | None = None) -> int:
        """Delete one partition's offset, or all of a connector's; returns how many were removed."""

    def close(self) -> None:
        """Release the store's resources."""
