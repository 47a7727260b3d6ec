"""Signals against the real broker and the MongoDB test server: `mongocdc signal send` through both channels,
the Kafka signal channel's reading and commits, incremental-snapshot watermarks, and notification records."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId
from pymongo import MongoClient

from mongocdc.config.properties import WatermarkingStrategy
from mongocdc.events.notifications import incremental_snapshot
from mongocdc.events.signals import (
    ExecuteSnapshot,
    LogSignal,
    WindowClose,
    WindowOpen,
    parse_kafka_signal,
    parse_signal,
)
from mongocdc.sinks.kafka.notifications import NotificationSink
from mongocdc.sources.kafka.signals import KafkaSignalChannel, KafkaSignalSender
from mongocdc.sources.mongo.signal_collection import SignalCollectionWriter
from tests.integration.helpers import read_topic, run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]


@pytest.fixture
def names() -> tuple[str, str]:
    """A database and a topic prefix of this test only."""
    return f"sig_{uuid.uuid4().hex[:12]}", f"p{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client(mongo_uri: str, names: tuple[str, str]) -> Iterator[MongoClient[dict[str, Any]]]:
    mongo: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    yield mongo
    mongo.drop_database(names[0])
    mongo.close()


def config(tmp_path: Path, mongo_uri: str, bootstrap: str, db: str, prefix: str, **extra: Any) -> Path:
    path = tmp_path / "mongocdc.yaml"
    values: dict[str, Any] = {
        "mongodb.connection.string": mongo_uri,
        "kafka.bootstrap.servers": bootstrap,
        "topic.prefix": prefix,
        "signal.data.collection": f"{db}.debezium_signal",
        "signal.enabled.channels": "source,kafka",
        **{k.replace("__", "."): v for k, v in extra.items()},
    }
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()))
    return path


def send(path: Path, *args: str) -> dict[str, Any]:
    result = run_cli("--config", str(path), "signal", "send", *args, "--output", "json")
    assert result.returncode == 0, result.stderr
    shown: dict[str, Any] = json.loads(result.stdout)
    return shown


def test_source_channel_inserts_a_debezium_signal_document(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, names: tuple[str, str], client: MongoClient[dict[str, Any]]
) -> None:
    db, prefix = names
    path = config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix)
    oid = "65a000000000000000000000"
    shown = send(
        path,
        "execute-snapshot",
        "--collections",
        rf"{db}\.orders",
        "--filter",
        f'{db}.orders={{"status": "open", "_id": {{"$gt": {{"$oid": "{oid}"}}}}}}',
        "--id",
        "ad-hoc-1",
    )
    assert shown["id"] == "ad-hoc-1" and shown["channel"] == "source" and shown["collection"] == f"{db}.debezium_signal"
    documents = list(client[db]["debezium_signal"].find())
    assert documents == [
        {
            "_id": "ad-hoc-1",
            "type": "execute-snapshot",
            "data": {
                "data-collections": [rf"{db}\.orders"],
                "type": "incremental",
                "additional-conditions": [
                    {"data-collection": f"{db}.orders", "filter": {"status": "open", "_id": {"$gt": ObjectId(oid)}}}
                ],
            },
        }
    ]
    signal = parse_signal(documents[0])  # what the connector reads back
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.select([f"{db}.orders", f"{db}.other"]).namespaces == (f"{db}.orders",)
    assert signal.filter_for(f"{db}.orders") == {"status": "open", "_id": {"$gt": ObjectId(oid)}}

    logged = send(path, "log", "--message", "hello")
    assert len(logged["id"]) == 36  # a generated UUID
    stored = client[db]["debezium_signal"].find_one({"_id": logged["id"]})
    assert stored == {"_id": logged["id"], "type": "log", "data": {"message": "hello"}}


def test_kafka_channel_produces_a_record_keyed_by_the_topic_prefix(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, names: tuple[str, str]
) -> None:
    db, prefix = names
    path = config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix)
    shown = send(path, "pause-snapshot", "--channel", "kafka", "--id", "pause-1")
    topic = f"{prefix}-signal"  # Debezium's default signal.kafka.topic
    assert shown == {
        "id": "pause-1",
        "type": "pause-snapshot",
        "channel": "kafka",
        "topic": topic,
        "partition": 0,
        "offset": 0,
        "key": prefix,
        "data": {"type": "incremental"},
    }
    second = send(path, "execute-snapshot", "--channel", "kafka", "--collections", "inventory\\.orders")
    records = read_topic(kafka_bootstrap, topic, timeout=30)
    assert [(r.partition(), r.offset(), r.key()) for r in records] == [(0, 0, prefix.encode()), (0, 1, prefix.encode())]
    assert json.loads(records[0].value()) == {
        "id": "pause-1",
        "type": "pause-snapshot",
        "data": {"type": "incremental"},
    }
    value = json.loads(records[1].value())
    assert value == {
        "id": second["id"],
        "type": "execute-snapshot",
        "data": {"data-collections": ["inventory\\.orders"], "type": "incremental"},
    }
    parsed = parse_kafka_signal(records[1].key(), records[1].value(), topic_prefix=prefix, offset=1)
    assert isinstance(parsed, ExecuteSnapshot) and parsed.id == second["id"]


def test_kafka_channel_topic_can_be_set(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, names: tuple[str, str]
) -> None:
    db, prefix = names
    topic = f"signals-{uuid.uuid4().hex[:8]}"
    path = config(
        tmp_path,
        mongo_uri,
        kafka_bootstrap,
        db,
        prefix,
        signal__enabled__channels="kafka",
        signal__kafka__topic=topic,
        signal__kafka__bootstrap__servers=kafka_bootstrap,
        kafka__bootstrap__servers="127.0.0.1:9",  # not used by the signal clients
    )
    shown = send(path, "log", "-m", "to a named topic")
    assert shown["channel"] == "kafka" and shown["topic"] == topic
    [record] = read_topic(kafka_bootstrap, topic, timeout=30)
    assert record.key() == prefix.encode()


def test_kafka_signal_channel_reads_its_own_signals_and_commits_after_handling(
    kafka_bootstrap: str, names: tuple[str, str]
) -> None:
    _, prefix = names
    topic = f"{prefix}-signal"
    settings = {"bootstrap.servers": kafka_bootstrap}
    sender = KafkaSignalSender(settings, topic)
    sender.send(prefix, {"id": "one", "type": "log", "data": {"message": "first"}})
    sender.send("another-connector", {"id": "other", "type": "log", "data": {"message": "not ours"}})
    sender.send(prefix, {"type": "lgo", "data": {}})  # invalid: logged and skipped
    no_id = sender.send(prefix, '{"type": "pause-snapshot", "data": {"type": "incremental"}}')
    assert no_id.id == f"{prefix}@3"

    group = f"g-{uuid.uuid4().hex[:8]}"
    channel = KafkaSignalChannel(settings, topic, group, prefix)
    try:
        read = poll_all(channel, expected=2)
        assert [(s.id, s.type.value) for s in read] == [("one", "log"), (f"{prefix}@3", "pause-snapshot")]
        assert isinstance(read[0], LogSignal) and read[0].message == "first"
    finally:
        channel.close()  # not committed: read again
    again = KafkaSignalChannel(settings, topic, group, prefix)
    try:
        assert [s.id for s in poll_all(again, expected=2)] == ["one", f"{prefix}@3"]
        again.commit()
    finally:
        again.close()
    sender.send(prefix, {"id": "later", "type": "log", "data": {"message": "after the commit"}})
    resumed = KafkaSignalChannel(settings, topic, group, prefix)
    try:
        assert [s.id for s in poll_all(resumed, expected=1)] == ["later"]
    finally:
        resumed.close()


def poll_all(channel: KafkaSignalChannel, expected: int, attempts: int = 60) -> list[Any]:
    signals: list[Any] = []
    for _ in range(attempts):
        signals += channel.poll(timeout=0.5)
        if len(signals) >= expected:
            break
    signals += channel.poll(timeout=0.5)  # nothing more arrives
    return signals


@pytest.mark.parametrize("strategy", ["insert_insert", "insert_delete"])
def test_watermarks_follow_the_strategy(
    strategy: WatermarkingStrategy, names: tuple[str, str], client: MongoClient[dict[str, Any]]
) -> None:
    db, _ = names
    collection = client[db]["debezium_signal"]
    writer = SignalCollectionWriter(client, f"{db}.debezium_signal")
    with collection.watch() as stream:
        assert writer.write_watermark("open", "chunk-1", strategy) == "chunk-1-open"
        closed = writer.write_watermark("close", "chunk-1", strategy)
        events = [stream.next(), stream.next()]
    opened = events[0]
    assert opened["operationType"] == "insert"
    assert opened["fullDocument"] == {"_id": "chunk-1-open", "type": "snapshot-window-open", "payload": ""}
    assert isinstance(parse_signal(opened["fullDocument"]), WindowOpen)
    if strategy == "insert_insert":
        assert closed == "chunk-1-close"
        assert events[1]["operationType"] == "insert"
        assert events[1]["fullDocument"] == {"_id": "chunk-1-close", "type": "snapshot-window-close", "payload": ""}
        assert isinstance(parse_signal(events[1]["fullDocument"]), WindowClose)
        assert collection.count_documents({}) == 2
    else:
        assert closed == "chunk-1-open"
        assert events[1]["operationType"] == "delete"
        assert events[1]["documentKey"] == {"_id": "chunk-1-open"}
        assert collection.count_documents({}) == 0


def test_notification_sink_writes_debezium_notifications(kafka_bootstrap: str) -> None:
    topic = f"notifications-{uuid.uuid4().hex[:8]}"
    sink = NotificationSink({"bootstrap.servers": kafka_bootstrap}, topic)
    sink.notify(
        incremental_snapshot(
            "STARTED", "my-connector", signal_id="ad-hoc-1", timestamp_ms=1_695_817_046_353, data_collections=["a.b"]
        )
    )
    sink.notify(incremental_snapshot("COMPLETED", "my-connector", signal_id="ad-hoc-1", timestamp_ms=1))
    sink.flush(30)
    records = read_topic(kafka_bootstrap, topic, timeout=30)
    assert [json.loads(r.key()) for r in records] == [{"id": "ad-hoc-1"}, {"id": "ad-hoc-1"}]
    assert json.loads(records[0].value()) == {
        "id": "ad-hoc-1",
        "aggregate_type": "Incremental Snapshot",
        "type": "STARTED",
        "additional_data": {"connector_name": "my-connector", "data_collections": "a.b"},
        "timestamp": 1_695_817_046_353,
    }
    assert json.loads(records[1].value())["type"] == "COMPLETED"


def test_notification_sink_with_schemas(kafka_bootstrap: str) -> None:
    topic = f"notifications-{uuid.uuid4().hex[:8]}"
    sink = NotificationSink({"bootstrap.servers": kafka_bootstrap}, topic, schemas_enable=True)
    sink.notify(incremental_snapshot("PAUSED", "c", signal_id="x", timestamp_ms=5))
    sink.flush(30)
    [record] = read_topic(kafka_bootstrap, topic, timeout=30)
    key, value = json.loads(record.key()), json.loads(record.value())
    assert key["schema"]["name"] == "io.debezium.connector.common.NotificationKey" and key["payload"] == {"id": "x"}
    assert value["schema"]["name"] == "io.debezium.connector.common.Notification"
    assert [f["field"] for f in value["schema"]["fields"]] == [
        "id",
        "type",
        "aggregate_type",
        "additional_data",
        "timestamp",
    ]
    assert value["payload"]["type"] == "PAUSED"


def test_snapshot_wait_reads_an_unreachable_offset_store_once_and_exits_4(
    tmp_path: Path, kafka_bootstrap: str, names: tuple[str, str]
) -> None:
    """`snapshot --incremental --wait` sends its signal, then follows the stored offsets: a store that does not
    answer is one short attempt and exit 4 naming it, not the connect.* retries (16 attempts) of `stream`."""
    import time

    _, prefix = names
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {
                "topic.prefix": prefix,
                "signal.enabled.channels": "source,kafka",
                "signal.kafka.bootstrap.servers": kafka_bootstrap,  # the signal goes through
                "kafka.bootstrap.servers": "127.0.0.1:9",  # the offset store's cluster does not answer
                "offset.storage": "kafka",
                "offset.storage.topic": f"{prefix}-offsets",
            }
        )
    )
    started = time.monotonic()
    result = run_cli(
        "-c", str(path), "snapshot", "--incremental", "--collections", "db\\.c", "--channel", "kafka", "--wait"
    )
    assert result.returncode == 4, result.stderr
    assert time.monotonic() - started < 30
    assert "error: Kafka at 127.0.0.1:9 is unreachable after 1 attempt" in result.stderr
    assert len(read_topic(kafka_bootstrap, f"{prefix}-signal", timeout=30)) == 1  # the signal was sent first
