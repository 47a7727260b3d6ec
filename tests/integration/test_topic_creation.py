"""Topics on a broker that does not create them (``auto.create.topics.enable=false``): ``topic.creation.*``.

As Kafka Connect does for a Debezium connector, mongocdc creates a missing change event, heartbeat or
transaction topic through the admin client before the first record to it, with the settings of the first
``topic.creation`` group that matches it; without those settings it stops at once with exit 3 naming the
topic, instead of timing out on UNKNOWN_TOPIC_OR_PART.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from pymongo import MongoClient

from mongocdc.errors import ExitCode
from tests.integration.helpers import CliProcess, read_topic, run_cli, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]


@pytest.fixture(scope="module")
def strict_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker that creates no topic on a first record or metadata request."""
    from tests.services.kafka import KafkaBroker

    config = {"auto.create.topics.enable": "false"}
    with KafkaBroker(config=config, data_dir=tmp_path_factory.mktemp("kafka-strict")) as broker:
        yield broker.bootstrap


def write_config(tmp_path: Path, mongo_uri: str, bootstrap: str, db: str, prefix: str, **extra: Any) -> Path:
    config = tmp_path / "mongocdc.json"
    settings = {
        "name": f"it-{prefix}",
        "mongodb.connection.string": mongo_uri,
        "topic.prefix": prefix,
        "kafka.bootstrap.servers": bootstrap,
        "offset.storage.file.filename": str(tmp_path / "offsets.db"),
        "database.include.list": db,
        "poll.interval.ms": 200,
        "offset.flush.interval.ms": 500,
        **extra,
    }
    config.write_text(json.dumps(settings))
    return config


def partitions_of(bootstrap: str, topic: str) -> int | None:
    info = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics.get(topic)
    if info is None or info.error is not None:
        return None
    return len(info.partitions)


def topic_config(bootstrap: str, topic: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    return str(entries[name].value)


def names() -> tuple[str, str]:
    return f"it_{uuid.uuid4().hex[:10]}", f"p{uuid.uuid4().hex[:8]}"


def test_missing_topics_without_topic_creation_exit_3_at_once_naming_them_all(
    tmp_path: Path, mongo_uri: str, strict_kafka: str
) -> None:
    """Checked before anything is read: every captured collection's topic and the heartbeat topic."""
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db]["items"].insert_one({"_id": 1})
    client[db]["orders"].insert_one({"_id": 1})
    config = write_config(tmp_path, mongo_uri, strict_kafka, db, prefix, **{"heartbeat.interval.ms": 1000})
    started = time.monotonic()
    result = run_cli("-c", str(config), "snapshot")
    assert result.returncode == ExitCode.CONFIG, result.stderr
    assert time.monotonic() - started < 25  # was exit 1 after waiting out UNKNOWN_TOPIC_OR_PART
    missing = f"{prefix}.{db}.items, {prefix}.{db}.orders, __debezium-heartbeat.{prefix}"
    assert f"error: topics {missing} do not exist" in result.stderr
    assert "auto.create.topics.enable=false" in result.stderr
    assert "--create --topic" in result.stderr and "topic.creation.default.replication.factor" in result.stderr
    assert partitions_of(strict_kafka, f"{prefix}.{db}.items") is None


def test_topic_creation_groups_create_the_data_topics_with_their_settings(
    tmp_path: Path, mongo_uri: str, strict_kafka: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db]["items"].insert_many([{"_id": i} for i in range(5)])
    client[db]["big"].insert_many([{"_id": i} for i in range(7)])
    config = write_config(
        tmp_path,
        mongo_uri,
        strict_kafka,
        db,
        prefix,
        **{
            "topic.creation.default.replication.factor": -1,
            "topic.creation.default.partitions": 2,
            "topic.creation.default.compression.type": "lz4",
            "topic.creation.groups": "large",
            "topic.creation.large.include": rf"{prefix}\.{db}\.big",
            "topic.creation.large.partitions": 3,
        },
    )
    result = run_cli("-c", str(config), "snapshot")
    assert result.returncode == 0, result.stderr
    items, big = f"{prefix}.{db}.items", f"{prefix}.{db}.big"
    assert partitions_of(strict_kafka, items) == 2
    assert topic_config(strict_kafka, items, "compression.type") == "lz4"
    assert partitions_of(strict_kafka, big) == 3  # the large group's count
    assert topic_config(strict_kafka, big, "compression.type") != "lz4"  # configs are the group's own
    assert len(read_topic(strict_kafka, items)) == 5 and len(read_topic(strict_kafka, big)) == 7


def test_heartbeat_and_transaction_topics_are_created_too(tmp_path: Path, mongo_uri: str, strict_kafka: str) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db]["items"].insert_one({"_id": "before"})
    config = write_config(
        tmp_path,
        mongo_uri,
        strict_kafka,
        db,
        prefix,
        **{
            "topic.creation.default.replication.factor": 1,
            "topic.creation.default.partitions": 2,
            "heartbeat.interval.ms": 200,
            "provide.transaction.metadata": True,
        },
    )
    stream = CliProcess("-c", str(config), "stream")
    try:
        heartbeat, transactions = f"__debezium-heartbeat.{prefix}", f"{prefix}.transaction"
        wait_until(lambda: bool(read_topic(strict_kafka, f"{prefix}.{db}.items")), "the snapshot's record")
        with client.start_session() as session, session.start_transaction():
            client[db]["items"].insert_one({"_id": "in-txn"}, session=session)
        client[db]["items"].insert_one({"_id": "after"})  # the next change ends the transaction: END
        wait_until(lambda: len(read_topic(strict_kafka, transactions)) >= 2, "BEGIN and END")
        wait_until(lambda: bool(read_topic(strict_kafka, heartbeat)), "a heartbeat")
        assert stream.stop() == 0, stream.stderr
    finally:
        stream.kill()
    assert partitions_of(strict_kafka, heartbeat) == 2 and partitions_of(strict_kafka, transactions) == 2
    assert f"created topic {transactions} (topic.creation group default" in stream.stderr


def test_a_collection_created_while_streaming_with_no_topic_is_exit_3_at_its_first_change(
    tmp_path: Path, mongo_uri: str, strict_kafka: str
) -> None:
    """A topic not known at start (the collection did not exist yet) is checked before its first record."""
    db, prefix = names()
    config = write_config(tmp_path, mongo_uri, strict_kafka, db, prefix)
    stream = CliProcess("-c", str(config), "stream")
    try:
        stream.wait_for_log("change stream open at")  # streaming: the snapshot found nothing to copy
        MongoClient(mongo_uri)[db]["late"].insert_one({"_id": 1})
        wait_until(lambda: stream.proc.poll() is not None, "mongocdc to stop on the missing topic")
        code = stream.stop()  # it has exited: this only collects its output
    finally:
        stream.kill()
    assert code == ExitCode.CONFIG, stream.stderr
    assert f"error: topic {prefix}.{db}.late does not exist" in stream.stderr
