"""The recording of the real Debezium 3.6.1 MongoDB connector (``recorded/debezium/``, see its README): the records
it wrote and the change events it consumed, for the events' and the Spark job's tests."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).parent / "recorded" / "debezium"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON lines of ``path``, or of ``path.gz`` when only the compressed file is there."""
    if not path.exists():
        path = path.with_name(path.name + ".gz")
        text = gzip.decompress(path.read_bytes()).decode()
    else:
        text = path.read_text()
    for line in text.splitlines():
        yield json.loads(line)


def debezium_records(schemas: bool) -> list[dict[str, Any]]:
    return list(read_jsonl(RECORDED / f"schemas-{str(schemas).lower()}" / "records.jsonl"))


def change_events(schemas: bool) -> list[dict[str, Any]]:
    return list(read_jsonl(RECORDED / f"schemas-{str(schemas).lower()}" / "changes.jsonl"))
