"""A Debezium connector configuration pasted as it is (Kafka Connect REST JSON), run by ``mongocdc stream -c``."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

from pymongo import MongoClient

from tests.integration.helpers import CliProcess, read_topic, run_cli, wait_until


def test_a_rest_body_streams_with_its_converters_schemas_and_delay(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}.{db_name}.orders"
    connector = tmp_path / "inventory-connector.json"
    connector.write_text(
        json.dumps(
            {
                "name": f"it-{prefix}",
                "config": {
                    "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
                    "tasks.max": "1",
                    "mongodb.connection.string": mongo_uri,
                    "topic.prefix": prefix,
                    "collection.include.list": f"{db_name}\\.orders",
                    "snapshot.delay.ms": "1500",
                    "cursor.max.await.time.ms": "300",
                    "max.queue.size": "4096",
                    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "key.converter.schemas.enable": "true",
                    "value.converter.schemas.enable": "true",
                    "transforms": "unwrap",
                    "transforms.unwrap.type": "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState",
                    "transforms.unwrap.add.fields": "op",
                    "errors.tolerance": "all",
                    "errors.deadletterqueue.topic.name": "dlq",
                },
            },
            indent=2,
        )
    )
    offsets = f"sqlite:{tmp_path / 'offsets.db'}"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db_name].orders.insert_many([{"_id": 1, "qty": 1}, {"_id": 2, "qty": 2}])

    validated = run_cli("config", "validate", "-c", str(connector))
    assert validated.returncode == 0, validated.stderr
    assert validated.stderr.count("no effect in mongocdc") == 1  # only the dead letter queue: sink connectors' own

    stream = CliProcess("stream", "-c", str(connector), "--bootstrap-servers", kafka_bootstrap, "--offsets", offsets)
    try:
        stream.wait_for_log("before the snapshot (snapshot.delay.ms)")
        stream.wait_for_log("change stream open")
        client[db_name].orders.insert_one({"_id": 3, "qty": 3})
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 3, "the snapshot reads and the insert")
    finally:
        code = stream.stop(signal.SIGTERM)
    assert code == 0, stream.stderr
    assert stream.stderr.count("no effect in mongocdc") == 1
    assert "errors.deadletterqueue.topic.name" in stream.stderr and "transforms.unwrap" not in stream.stderr
    assert "ExtractNewDocumentState" in stream.stderr  # the converters and the chain in force are logged at start

    records = read_topic(kafka_bootstrap, topic)
    values = [json.loads(r.value()) for r in records]
    keys = [json.loads(r.key()) for r in records]
    assert all(set(v) == {"schema", "payload"} for v in values)  # the converters' schemas.enable=true
    assert all(set(k) == {"schema", "payload"} for k in keys)
    # flattened by the connector's ExtractNewDocumentState: the documents themselves, with the added __op
    payloads = sorted((v["payload"] for v in values), key=lambda p: p["_id"])
    assert payloads == [
        {"_id": 1, "qty": 1, "__op": "r"},
        {"_id": 2, "qty": 2, "__op": "r"},
        {"_id": 3, "qty": 3, "__op": "c"},
    ]
    assert [k["payload"] for k in keys if k["payload"]["id"] == 3] == [{"id": 3}]  # the key's id typed, as Debezium's

    shown = run_cli("offsets", "show", "-c", str(connector), "--offsets", offsets, "--output", "json")
    assert shown.returncode == 0, shown.stderr
    assert [o["connector"] for o in json.loads(shown.stdout)] == [f"it-{prefix}"]  # the REST body's name


def test_a_connector_whose_topic_prefix_changed_starts_afresh_as_in_kafka_connect(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    """Kafka Connect keys Debezium's offsets by topic.prefix: a new prefix snapshots into its new topics."""
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    name = f"c{uuid.uuid4().hex[:8]}"
    offsets = f"sqlite:{tmp_path / 'offsets.db'}"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db_name].orders.insert_many([{"_id": 1, "qty": 1}, {"_id": 2, "qty": 2}])

    def run(prefix: str) -> CliProcess:
        connector = tmp_path / f"{prefix}.json"
        config = {
            "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
            "mongodb.connection.string": mongo_uri,
            "topic.prefix": prefix,
            "collection.include.list": f"{db_name}\\.orders",
            "cursor.max.await.time.ms": "300",
        }
        connector.write_text(json.dumps({"name": name, "config": config}))
        return CliProcess("stream", "-c", str(connector), "--bootstrap-servers", kafka_bootstrap, "--offsets", offsets)

    first, second = f"{name}a", f"{name}b"
    stream = run(first)
    try:
        wait_until(lambda: len(read_topic(kafka_bootstrap, f"{first}.{db_name}.orders")) == 2, "the first snapshot")
    finally:
        assert stream.stop(signal.SIGTERM) == 0, stream.stderr
    stream = run(second)
    try:
        wait_until(lambda: len(read_topic(kafka_bootstrap, f"{second}.{db_name}.orders")) == 2, "the new snapshot")
    finally:
        assert stream.stop(signal.SIGTERM) == 0, stream.stderr
    assert f"written for topic.prefix {first!r}, not {second!r}" in stream.stderr
    # and the first prefix's topic got nothing more
    assert len(read_topic(kafka_bootstrap, f"{first}.{db_name}.orders")) == 2
