"""Reassembly of ``$changeStreamSplitLargeEvent`` fragments (recorded in ``recorded/split_fragments.jsonl``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bson import json_util

from mongocdc.events.changes import MalformedChangeError, StreamedChange, convert_change
from mongocdc.events.model import Op
from mongocdc.events.position import Position
from mongocdc.events.split import FragmentBuffer, SplitEventError, fragment_of, merge_fragments

RECORDED = Path(__file__).parent / "recorded" / "split_fragments.jsonl"


@pytest.fixture
def fragments() -> list[dict[str, Any]]:
    """An update of a large document with its pre-image in 3 fragments, then one small insert."""
    return [json_util.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]


def test_fragments_merge_into_one_update_with_the_last_token(fragments: list[dict[str, Any]]) -> None:
    merged = merge_fragments(fragments[:3])
    assert "splitEvent" not in merged
    assert merged["_id"] == fragments[2]["_id"]
    assert merged["fullDocument"] == fragments[1]["fullDocument"]
    assert merged["fullDocumentBeforeChange"] == fragments[2]["fullDocumentBeforeChange"]
    item = convert_change(merged, rs="rs0")
    assert isinstance(item, StreamedChange)
    event = item.event
    assert event.op is Op.UPDATE and event.key_json == "1001"
    assert json_util.loads(event.after or "null")["n"] == 2
    assert json_util.loads(event.before or "null")["n"] == 1
    assert event.update_description is not None
    assert event.source.wall_time_ms == 1706214200500
    assert item.position == Position(1706214200, 3, Position.token_bytes(fragments[2]["_id"]))


def test_buffer_returns_the_whole_event_only_after_the_last_fragment(fragments: list[dict[str, Any]]) -> None:
    buffer = FragmentBuffer()
    assert buffer.add(fragments[0]) is None and buffer.pending
    assert buffer.add(fragments[1]) is None and buffer.pending
    whole = buffer.add(fragments[2])
    assert whole is not None and not buffer.pending
    assert whole == merge_fragments(fragments[:3])
    # an event that was not split passes through unchanged
    assert buffer.add(fragments[3]) is fragments[3]


def test_single_fragment_event_passes_through_without_split_event(fragments: list[dict[str, Any]]) -> None:
    # some servers mark every event {fragment: 1, of: 1}
    change = {**fragments[3], "splitEvent": {"fragment": 1, "of": 1}}
    whole = FragmentBuffer().add(change)
    assert whole is not None and "splitEvent" not in whole
    assert whole["_id"] == fragments[3]["_id"] and whole["fullDocument"] == fragments[3]["fullDocument"]


def test_missing_fragment_is_an_error(fragments: list[dict[str, Any]]) -> None:
    buffer = FragmentBuffer()
    buffer.add(fragments[0])
    with pytest.raises(SplitEventError, match="fragment 3 of 3 arrived after 1"):
        buffer.add(fragments[2])
    assert not buffer.pending


def test_unsplit_change_in_the_middle_of_fragments_is_an_error(fragments: list[dict[str, Any]]) -> None:
    buffer = FragmentBuffer()
    buffer.add(fragments[0])
    with pytest.raises(SplitEventError, match="without splitEvent"):
        buffer.add(fragments[3])


def test_cleared_buffer_accepts_the_replayed_fragments(fragments: list[dict[str, Any]]) -> None:
    buffer = FragmentBuffer()
    buffer.add(fragments[0])
    buffer.add(fragments[1])
    buffer.clear()  # the stream reopened before the event and delivers every fragment again
    assert [buffer.add(f) for f in fragments[:2]] == [None, None]
    assert buffer.add(fragments[2]) == merge_fragments(fragments[:3])


def test_merge_checks_order_and_count(fragments: list[dict[str, Any]]) -> None:
    with pytest.raises(SplitEventError, match="expected fragment 1 of 3, got fragment 2 of 3"):
        merge_fragments([fragments[1], fragments[0], fragments[2]])
    with pytest.raises(SplitEventError, match="expected fragment 1 of 2"):
        merge_fragments(fragments[:2])
    with pytest.raises(SplitEventError, match="no fragments"):
        merge_fragments([])


@pytest.mark.parametrize("split", [{"fragment": 0, "of": 2}, {"fragment": 3, "of": 2}, {"of": 2}, "x"])
def test_malformed_split_event_is_refused(split: object) -> None:
    with pytest.raises(SplitEventError):
        fragment_of({"splitEvent": split})
    assert issubclass(SplitEventError, MalformedChangeError)
