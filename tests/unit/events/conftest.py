from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bson import json_util

RECORDED = Path(__file__).parent / "recorded" / "changes.jsonl"


def load_recorded() -> list[dict[str, Any]]:
    """Change documents as a MongoDB 7.0 replica set returns them (extended JSON, one per line)."""
    return [json_util.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]


@pytest.fixture
def recorded() -> list[dict[str, Any]]:
    return load_recorded()
