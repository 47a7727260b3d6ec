"""One instance per connector: a second ``mongocdc stream`` of the same connector is fenced (exit 7).

SQLite store: the second one does not start (the first holds the connector's lock). Kafka store: the second one
takes over (its transactional offset producer fences the first, which stops at its next commit).
"""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from mongocdc.errors import ExitCode
from mongocdc.offsets.kafka import KafkaOffsetStore
from tests.integration.helpers import CliProcess, decode, read_topic, run_cli, wait_until
from tests.integration.helpers_connector import write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]


def ids_in(bootstrap: str, topic: str) -> set[Any]:
    """The ``_id`` of every change in ``topic`` (Debezium's key: ``{"id": "<_id as JSON>"}``)."""
    keys = [decode(m)[0] for m in read_topic(bootstrap, topic)]
    return {json.loads(key.get("payload", key)["id"]) for key in keys}


def config_in(directory: Path, *args: Any, **extra: Any) -> Path:
    directory.mkdir(exist_ok=True)
    return write_config(directory, *args, **extra)


def test_sqlite_a_second_instance_of_a_connector_exits_7_at_once_and_the_first_keeps_streaming(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    store = tmp_path / "offsets.db"
    config = config_in(
        tmp_path / "a", mongo_uri, kafka_bootstrap, db_name, prefix, offset_storage_file_filename=str(store)
    )
    topic = f"{prefix}.{db_name}.c"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    coll = client[db_name].c
    first = CliProcess("--config", str(config), "stream")
    later: list[CliProcess] = []
    try:
        first.wait_for_log("change stream open")
        coll.insert_one({"_id": 1})
        wait_until(lambda: ids_in(kafka_bootstrap, topic) == {1}, "the first insert in Kafka")

        second = run_cli("--config", str(config), "stream", timeout=60)
        assert second.returncode == ExitCode.FENCED, second.stderr
        assert (
            f"error: connector 'it-{prefix}' is already running: process {first.proc.pid} holds its offsets in {store}"
            in second.stderr
        )
        assert "hint: run one instance per connector" in second.stderr
        assert "change stream" not in second.stderr and "snapshot" not in second.stderr  # it read nothing

        snapshot = run_cli("--config", str(config), "snapshot", timeout=60)  # a snapshot of it as well
        assert snapshot.returncode == ExitCode.FENCED, snapshot.stderr
        assert f"error: connector 'it-{prefix}' is already running" in snapshot.stderr

        # the store's commands that change offsets refuse too; reading them is fine
        reset = run_cli("--config", str(config), "offsets", "reset", "--yes")
        assert reset.returncode == ExitCode.FENCED, reset.stderr
        assert "this one cannot change its offsets" in reset.stderr
        shown = run_cli("--config", str(config), "offsets", "show", "--output", "json")
        assert shown.returncode == 0, shown.stderr

        coll.insert_one({"_id": 2})
        wait_until(lambda: ids_in(kafka_bootstrap, topic) == {1, 2}, "the first instance streaming on")
        assert first.proc.poll() is None

        # another connector on the same store runs side by side
        other_prefix = f"q{uuid.uuid4().hex[:8]}"
        other_config = config_in(
            tmp_path / "b", mongo_uri, kafka_bootstrap, db_name, other_prefix, offset_storage_file_filename=str(store)
        )
        other = CliProcess("--config", str(other_config), "stream")
        later.append(other)
        other.wait_for_log("change stream open")
        coll.insert_one({"_id": 3})
        wait_until(lambda: 3 in ids_in(kafka_bootstrap, f"{other_prefix}.{db_name}.c"), "the other connector's change")

        # killed without a chance to clean up, the first one leaves its lock to the next instance
        first.proc.kill()
        assert first.proc.wait(timeout=30) == -signal.SIGKILL
        coll.insert_one({"_id": 4})
        restarted = CliProcess("--config", str(config), "stream")
        later.append(restarted)
        wait_until(lambda: {3, 4} <= ids_in(kafka_bootstrap, topic), "the restarted instance's changes")
        assert restarted.proc.poll() is None
        assert restarted.stop(signal.SIGTERM) == 0, restarted.stderr
        assert other.stop(signal.SIGTERM) == 0, other.stderr
    finally:
        first.kill()
        for proc in later:
            proc.kill()
        client.close()


def test_kafka_store_a_second_instance_fences_the_first_which_exits_7_and_nothing_is_lost(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    offsets_topic = f"{prefix}-offsets"
    config = write_config(
        tmp_path,
        mongo_uri,
        kafka_bootstrap,
        db_name,
        prefix,
        {"offset.storage": "kafka", "offset.storage.topic": offsets_topic, "offset.storage.partitions": 1},
    )
    connector = f"it-{prefix}"
    topic = f"{prefix}.{db_name}.c"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    coll = client[db_name].c

    def stored() -> dict[str, Any] | None:
        store = KafkaOffsetStore({"bootstrap.servers": kafka_bootstrap}, offsets_topic, timeout_s=20)
        try:
            records = store.records(connector)
            return dict(records[0].offset) if records else None
        finally:
            store.close()

    first = CliProcess("--config", str(config), "stream")
    second: CliProcess | None = None
    try:
        first.wait_for_log("change stream open")
        coll.insert_one({"_id": 1})
        wait_until(lambda: ids_in(kafka_bootstrap, topic) == {1}, "the first insert in Kafka")
        wait_until(lambda: stored() is not None, "the first instance's committed offset")

        second = CliProcess("--config", str(config), "stream")
        second.wait_for_log("an older instance of it is fenced")
        coll.insert_one({"_id": 2})  # the first one's next commit is refused
        assert first.proc.wait(timeout=60) == ExitCode.FENCED, first.stderr
        assert f"connector '{connector}' was fenced" in first.stderr
        assert "commits nothing more" in first.stderr
        fenced_at = stored()

        coll.insert_one({"_id": 3})
        wait_until(lambda: {1, 2, 3} <= ids_in(kafka_bootstrap, topic), "every change in Kafka")
        assert second.proc.poll() is None
        assert second.stop(signal.SIGTERM) == 0, second.stderr
    finally:
        first.kill()
        if second is not None:
            second.kill()
        client.close()
    # the last committed offset is the second instance's (after the third insert, which only it read)
    # (the first one exited when it was fenced: a later position was committed by the second one)
    last = stored()
    assert fenced_at is not None and last is not None
    assert (last["sec"], last["ord"]) > (fenced_at["sec"], fenced_at["ord"])
    assert ids_in(kafka_bootstrap, topic) == {1, 2, 3}  # nothing lost
