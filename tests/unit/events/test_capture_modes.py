"""Update, replace and delete events in each capture mode, over recorded change documents.

``recorded/capture_modes.jsonl`` holds the same update as MongoDB returns it for each
``capture.mode`` (and ``capture.mode.full.update.type``), plus pre-images present and absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bson import json_util

from mongocdc.events.changes import StreamedChange, convert_change
from mongocdc.events.model import ChangeEvent, Op

RECORDED = Path(__file__).parent / "recorded" / "capture_modes.jsonl"
PRE = {"_id": 1001, "name": "Sally", "phone": "555-0100"}
POST = {"_id": 1001, "name": "Sally", "email": "sally@example.com"}


@pytest.fixture
def changes() -> list[dict[str, Any]]:
    return [json_util.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]


def event_of(change: dict[str, Any]) -> ChangeEvent:
    item = convert_change(change, rs="rs0")
    assert isinstance(item, StreamedChange)
    return item.event


def doc(text: str | None) -> Any:
    return None if text is None else json_util.loads(text)


def assert_update_description(event: ChangeEvent) -> None:
    assert event.op is Op.UPDATE
    assert event.update_description is not None
    desc = event.update_description.to_json_dict()
    assert json.loads(desc["updatedFields"]) == {"email": "sally@example.com"}
    assert desc["removedFields"] == ["phone"]


@pytest.mark.parametrize(
    ("index", "mode", "after", "before"),
    [
        (0, "change_streams", None, None),
        (1, "change_streams_update_full (lookup)", POST, None),
        (2, "change_streams_update_full (lookup after a delete)", None, None),
        (3, "change_streams_with_pre_image", None, PRE),
        (4, "change_streams_with_pre_image (no pre-image stored)", None, None),
        (5, "change_streams_update_full_with_pre_image", POST, PRE),
        (6, "change_streams_update_full (post_image)", POST, None),
    ],
)
def test_update_in_each_capture_mode(
    changes: list[dict[str, Any]], index: int, mode: str, after: Any, before: Any
) -> None:
    event = event_of(changes[index])
    assert_update_description(event)
    assert doc(event.after) == after, mode
    assert doc(event.before) == before, mode
    value = event.source
    assert (value.db, value.collection, value.sec) == ("inventory", "customers", 1706214100 + index)


def test_lookup_of_a_deleted_document_still_flows_with_after_null(changes: list[dict[str, Any]]) -> None:
    change = changes[2]
    assert "fullDocument" in change and change["fullDocument"] is None
    event = event_of(change)
    assert event.after is None and event.update_description is not None


def test_delete_carries_the_pre_image_as_before(changes: list[dict[str, Any]]) -> None:
    event = event_of(changes[7])
    assert event.op is Op.DELETE
    assert event.after is None
    assert doc(event.before) == POST


def test_replace_carries_both_images(changes: list[dict[str, Any]]) -> None:
    event = event_of(changes[8])
    assert event.op is Op.UPDATE and event.update_description is None
    assert doc(event.after) == {"_id": 1001, "name": "Sally K"}
    assert doc(event.before) == POST
