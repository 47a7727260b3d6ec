"""An in-process offset store, for tests and for one-shot runs."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from mongocdc.offsets.base import OffsetRecord


class MemoryOffsetStore:
    def __init__(self) -> None:
        self._records: dict[tuple[str, str], OffsetRecord] = {}

    @property
    def exists(self) -> bool:
        return True

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        record = self._records.get((connector, partition))
        return None if record is None else copy.deepcopy(dict(record.offset))

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        self._records[(connector, partition)] = OffsetRecord(
            connector, partition, copy.deepcopy(dict(offset)), datetime.now(UTC)
        )

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        return [r for k, r in sorted(self._records.items()) if connector is None or r.connector == connector]

    def delete(self, connector: str, partition: str | None = None) -> int:
        keys = [k for k in self._records if k[0] == connector and (partition is None or k[1] == partition)]
        for k in keys:
            del self._records[k]
        return len(keys)

    def close(self) -> None:
        pass
