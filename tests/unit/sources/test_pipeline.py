"""The change stream's options per capture mode, its pipeline, and split events read through the source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pytest
from bson import Timestamp, json_util
from bson.raw_bson import RawBSONDocument

from mongocdc.errors import ExitCode, MalformedEventError, UnreachableError
from mongocdc.events.changes import StreamedChange
from mongocdc.events.position import Position
from mongocdc.sources.base import Idle
from mongocdc.sources.mongo.preimages import check_pre_images, enable_command, images_enabled, needs_images
from mongocdc.sources.mongo.stream import (
    RAW_CHANGES,
    SPLIT_LARGE_EVENT_STAGE,
    MongoChangeStreamSource,
    change_stream_pipeline,
    full_document_option,
)

SPLIT = Path(__file__).parents[1] / "events" / "recorded" / "split_fragments.jsonl"
MATCH = {"$match": {"operationType": {"$in": ["insert", "update"]}}}
PROJECT = {"$project": {"fullDocument.secret": 0}}
INTERNAL = {"$match": {"ns.db": "inventory"}}


def test_pipeline_is_empty_by_default() -> None:
    assert change_stream_pipeline() == []


@pytest.mark.parametrize(
    ("order", "expected"),
    [("internal_first", [INTERNAL, MATCH, PROJECT]), ("user_first", [MATCH, PROJECT, INTERNAL])],
)
def test_pipeline_order(order: str, expected: list[dict[str, Any]]) -> None:
    assert change_stream_pipeline(internal=[INTERNAL], user=[MATCH, PROJECT], order=order) == expected


@pytest.mark.parametrize("order", ["internal_first", "user_first"])
def test_split_stage_is_always_last(order: str) -> None:
    stages = change_stream_pipeline(internal=[INTERNAL], user=[MATCH], order=order, oversize_mode="split")
    assert stages[-1] == SPLIT_LARGE_EVENT_STAGE == {"$changeStreamSplitLargeEvent": {}}
    assert len(stages) == 3
    assert change_stream_pipeline(oversize_mode="skip") == []


@pytest.mark.parametrize(
    ("mode", "full_update_type", "full", "before"),
    [
        ("change_streams", "lookup", None, None),
        ("change_streams", "post_image", None, None),
        ("change_streams_update_full", "lookup", "updateLookup", None),
        ("change_streams_update_full", "post_image", "required", None),
        ("change_streams_with_pre_image", "lookup", None, "whenAvailable"),
        ("change_streams_with_pre_image", "post_image", None, "whenAvailable"),
        ("change_streams_update_full_with_pre_image", "lookup", "updateLookup", "whenAvailable"),
        ("change_streams_update_full_with_pre_image", "post_image", "required", "whenAvailable"),
    ],
)
def test_watch_options_per_capture_mode(mode: str, full_update_type: str, full: str | None, before: str | None) -> None:
    assert full_document_option(mode, full_update_type) == full
    source = MongoChangeStreamSource(
        FakeClient([]),  # type: ignore[arg-type]
        connector="t",
        capture_mode=mode,
        full_update_type=full_update_type,
        pipeline=[MATCH],
        oversize_mode="split",
    )
    options = source._watch_options(None)
    assert options.get("full_document") == full
    assert options.get("full_document_before_change") == before
    assert options["pipeline"] == [MATCH, SPLIT_LARGE_EVENT_STAGE]
    assert needs_images(mode, full_update_type) == (before is not None or full == "required")


def test_no_pipeline_option_without_stages() -> None:
    source = MongoChangeStreamSource(FakeClient([]), connector="t")  # type: ignore[arg-type]
    assert "pipeline" not in source._watch_options(None)


# --- split events through the source -----------------------------------------------


class FakeStream:
    """``try_next`` hands out the scripted items as raw BSON (``None``: an empty poll), ``resume_token`` after them."""

    def __init__(self, items: list[dict[str, Any] | None]) -> None:
        self._items: Iterator[dict[str, Any] | None] = iter(items)
        self.resume_token: Any = {"_data": "00"}

    def try_next(self) -> RawBSONDocument | None:
        item = next(self._items, None)
        if item is None:
            return None
        change = RawBSONDocument(bson.encode(item))  # as the source reads them
        self.resume_token = change["_id"]
        return change

    def close(self) -> None:
        pass


class FakeAdmin:
    def command(self, name: str) -> dict[str, Any]:
        return {"ok": 1, "operationTime": Timestamp(1706214000, 1)}


class FakeClient:
    """A client whose database ``inventory`` can be watched (``capture.scope=database``)."""

    def __init__(self, items: list[dict[str, Any] | None]) -> None:
        self.items = items
        self.admin = FakeAdmin()
        self.watched: list[dict[str, Any]] = []

    def get_database(self, name: str, codec_options: Any = None) -> FakeClient:
        assert name == "inventory"
        assert codec_options is RAW_CHANGES  # change documents are read as raw BSON
        return self

    def watch(self, **options: Any) -> FakeStream:
        self.watched.append(options)
        return FakeStream(self.items)


def recorded_fragments() -> list[dict[str, Any]]:
    return [json_util.loads(line) for line in SPLIT.read_text().splitlines() if line.strip()]


def test_source_hands_out_one_event_at_the_last_fragments_position() -> None:
    fragments = recorded_fragments()
    client = FakeClient([fragments[0], fragments[1], None, fragments[2], fragments[3]])
    source = MongoChangeStreamSource(
        client,  # type: ignore[arg-type]
        connector="t",
        scope="database",
        target="inventory",
        oversize_mode="split",
    )
    source.open(None)
    assert client.watched[0]["pipeline"] == [SPLIT_LARGE_EVENT_STAGE]
    start = source.position
    # an empty poll in the middle of the fragments keeps the position before the event
    idle = source.next()
    assert isinstance(idle, Idle) and idle.position == start
    item = source.next()
    assert isinstance(item, StreamedChange)
    assert item.position == Position(1706214200, 3, Position.token_bytes(fragments[2]["_id"]))
    assert json_util.loads(item.event.before or "null")["n"] == 1
    assert json_util.loads(item.event.after or "null")["n"] == 2
    following = source.next()
    assert isinstance(following, StreamedChange) and following.event.key_json == "1002"


# --- pre-image check ---------------------------------------------------------------


class FakeDatabase:
    def __init__(self, collections: dict[str, dict[str, Any]]) -> None:
        self.collections = collections

    def list_collections(self, filter: dict[str, Any]) -> list[dict[str, Any]]:
        names = filter["name"]["$in"]
        return [{"name": n, "options": o} for n, o in self.collections.items() if n in names]


class FakeImagesClient:
    def __init__(self, databases: dict[str, dict[str, dict[str, Any]]]) -> None:
        self.databases = databases

    def __getitem__(self, name: str) -> FakeDatabase:
        return FakeDatabase(self.databases.get(name, {}))


def test_check_pre_images_names_the_coll_mod_command_for_each_collection_without_them() -> None:
    client = FakeImagesClient(
        {"inventory": {"orders": {"changeStreamPreAndPostImages": {"enabled": True}}, "customers": {}}}
    )
    warnings = check_pre_images(client, [("inventory", "orders"), ("inventory", "customers")])  # type: ignore[arg-type]
    assert len(warnings) == 1
    assert "inventory.customers" in warnings[0] and "before: null" in warnings[0]
    assert 'db.runCommand({collMod: "customers", changeStreamPreAndPostImages: {enabled: true}})' in warnings[0]
    post = check_pre_images(client, [("inventory", "customers")], post_images=True)  # type: ignore[arg-type]
    assert "fails the change stream" in post[0]


def test_images_enabled_reads_list_collections_options() -> None:
    assert images_enabled({"changeStreamPreAndPostImages": {"enabled": True}})
    assert not images_enabled({"changeStreamPreAndPostImages": {"enabled": False}})
    assert not images_enabled({})
    assert not images_enabled(None)
    assert enable_command("c") == 'db.runCommand({collMod: "c", changeStreamPreAndPostImages: {enabled: true}})'


# --- events mongocdc cannot read ---------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "says"),
    [
        (
            [{"_id": {"_data": "8200"}, "operationType": "insert", "ns": {"db": "inventory", "coll": "orders"}}],
            "no 'clusterTime' field",
        ),
        ("split out of order", "fragment"),
    ],
)
def test_a_malformed_change_event_stops_the_stream_with_its_own_error(items: Any, says: str) -> None:
    """Exit 1, not 4: MongoDB answered, and waiting or retrying would meet the same event again."""
    if items == "split out of order":
        items = [recorded_fragments()[1]]
    source = MongoChangeStreamSource(
        FakeClient(items),  # type: ignore[arg-type]
        connector="t",
        scope="database",
        target="inventory",
        oversize_mode="split",
    )
    source.open(None)
    with pytest.raises(MalformedEventError) as caught:
        source.next()
    assert says in caught.value.message and "cannot read" in caught.value.message
    assert caught.value.exit_code == ExitCode.UNEXPECTED == 1
    assert not isinstance(caught.value, UnreachableError)
    assert caught.value.hint is not None and "not committed past it" in caught.value.hint
