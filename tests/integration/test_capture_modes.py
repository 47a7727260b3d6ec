"""Capture modes end to end: MongoDB → `mongocdc stream` → Kafka, one change log per mode.

Measured on the default test server (secantus): collMod/create with changeStreamPreAndPostImages,
fullDocument updateLookup/whenAvailable/required, fullDocumentBeforeChange whenAvailable, user
pipeline stages and $changeStreamSplitLargeEvent (it marks every event {fragment: 1, of: 1}) all
behave as on MongoDB 7.0, so no test here is an expected failure on it. Events over 16 MiB (real
fragments) are not produced here: Kafka would refuse such a record anyway; the reassembly is
covered by tests/unit/events/test_split.py and tests/unit/sources/test_pipeline.py.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bson import json_util
from pymongo import MongoClient
from pymongo.database import Database

from tests.integration.helpers import CliProcess, decode, read_topic, wait_until
from tests.integration.test_stream_e2e import write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]

DOC = {"_id": 1, "name": "Sally", "phone": "555-0100"}
UPDATED = {"_id": 1, "name": "Sally", "email": "sally@example.com"}


@pytest.fixture
def database(mongo_uri: str) -> Iterator[Database[dict[str, Any]]]:
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    name = f"it_{uuid.uuid4().hex[:12]}"
    try:
        yield client[name]
    finally:
        client.drop_database(name)
        client.close()


def values(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    return [v for m in read_topic(bootstrap, topic) if (v := decode(m)[1]) is not None]


def run_stream(
    tmp_path: Path,
    mongo_uri: str,
    bootstrap: str,
    db: Database[dict[str, Any]],
    properties: dict[str, Any],
    changes: Callable[[], None],
    expected: int,
) -> tuple[list[dict[str, Any]], str]:
    """Start `mongocdc stream`, make ``changes``, wait for ``expected`` data events; values and stderr."""
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, bootstrap, db.name, prefix, properties, snapshot_mode="no_data")
    topic = f"{prefix}.{db.name}.customers"
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        changes()
        wait_until(lambda: len(values(bootstrap, topic)) >= expected, f"{expected} events in {topic}")
    finally:
        code = stream.stop(signal.SIGTERM)
    assert code == 0, stream.stderr
    return values(bootstrap, topic), stream.stderr


def doc(text: str | None) -> Any:
    return None if text is None else json_util.loads(text)


@pytest.mark.parametrize(
    ("mode", "full_update_type", "after", "before"),
    [
        ("change_streams", "lookup", None, None),
        ("change_streams_update_full", "lookup", UPDATED, None),
        ("change_streams_update_full", "post_image", UPDATED, None),
        ("change_streams_with_pre_image", "lookup", None, DOC),
        ("change_streams_update_full_with_pre_image", "lookup", UPDATED, DOC),
        ("change_streams_update_full_with_pre_image", "post_image", UPDATED, DOC),
    ],
)
def test_update_and_delete_per_capture_mode(
    tmp_path: Path,
    mongo_uri: str,
    kafka_bootstrap: str,
    database: Database[dict[str, Any]],
    mode: str,
    full_update_type: str,
    after: Any,
    before: Any,
) -> None:
    database.create_collection("customers", changeStreamPreAndPostImages={"enabled": True})

    def changes() -> None:
        database.customers.insert_one(dict(DOC))
        database.customers.update_one({"_id": 1}, {"$set": {"email": "sally@example.com"}, "$unset": {"phone": ""}})
        database.customers.delete_one({"_id": 1})

    properties = {"capture.mode": mode, "capture.mode.full.update.type": full_update_type}
    events, stderr = run_stream(tmp_path, mongo_uri, kafka_bootstrap, database, properties, changes, 3)
    assert "changeStreamPreAndPostImages" not in stderr  # enabled: no start-up warning
    create, update, delete = events
    assert (create["op"], update["op"], delete["op"]) == ("c", "u", "d")
    assert doc(create["after"]) == DOC
    assert doc(update["after"]) == after
    assert doc(update["before"]) == before
    assert update["updateDescription"]["removedFields"] == ["phone"]
    assert delete["after"] is None
    assert doc(delete["before"]) == (UPDATED if before is not None else None)


def test_pre_image_mode_warns_at_start_and_streams_before_null(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, database: Database[dict[str, Any]]
) -> None:
    database.create_collection("customers")  # without changeStreamPreAndPostImages

    def changes() -> None:
        database.customers.insert_one(dict(DOC))
        database.customers.update_one({"_id": 1}, {"$set": {"email": "sally@example.com"}, "$unset": {"phone": ""}})

    properties = {"capture.mode": "change_streams_update_full_with_pre_image"}
    events, stderr = run_stream(tmp_path, mongo_uri, kafka_bootstrap, database, properties, changes, 2)
    assert f"collection {database.name}.customers does not store pre- and post-images" in stderr
    assert 'db.runCommand({collMod: "customers", changeStreamPreAndPostImages: {enabled: true}})' in stderr
    update = events[1]
    assert update["op"] == "u" and update["before"] is None and doc(update["after"]) == UPDATED


def test_cursor_pipeline_and_split_mode(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, database: Database[dict[str, Any]]
) -> None:
    database.create_collection("customers")

    def changes() -> None:
        database.customers.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
        database.customers.update_one({"_id": 1}, {"$set": {"n": 10}})
        database.customers.delete_one({"_id": 2})
        database.customers.insert_one({"_id": 3, "n": 3})

    properties = {
        "cursor.pipeline": '[{"$match": {"operationType": {"$ne": "delete"}}}]',
        "cursor.pipeline.order": "user_first",
        "cursor.oversize.handling.mode": "split",
    }
    events, _ = run_stream(tmp_path, mongo_uri, kafka_bootstrap, database, properties, changes, 4)
    assert [(e["op"], doc(e["after"])["_id"]) for e in events] == [("c", 1), ("c", 2), ("u", 1), ("c", 3)]
    assert doc(events[2]["after"]) == {"_id": 1, "n": 10}
