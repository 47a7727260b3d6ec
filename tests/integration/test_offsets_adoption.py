"""``mongocdc offsets import --from-kafka-connect`` / ``export --to-kafka-connect`` as processes, against the
suite's real Kafka broker (an offsets topic laid out as a Connect worker creates it: compacted, 25 partitions)
and, for the partition's name, the suite's MongoDB server.

The bytes themselves are checked against Debezium's and Connect's own classes in
``tests/unit/offsets/test_connect_format.py``; the whole hand-over with a real Debezium in Kafka Connect is
``test_debezium_handover.py``.
"""

from __future__ import annotations

import base64
import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pymongo import MongoClient

from mongocdc.engine.adoption import debezium_key
from mongocdc.events.java import default_partition
from mongocdc.offsets.kafka import KafkaOffsetStore
from mongocdc.offsets.sqlite import SqliteOffsetStore
from tests.integration.helpers import read_topic, run_cli

pytestmark = pytest.mark.kafka

PARTITIONS = 25
TOKEN_DATA = "8269A1B2C3000000032B042C0100296E5A1004"
LATER_DATA = "8269A1B2D0000000012B042C0100296E5A1004"
TOKEN = base64.b64encode(bson.encode({"_data": TOKEN_DATA})).decode()  # as Debezium stores it
LATER = base64.b64encode(bson.encode({"_data": LATER_DATA})).decode()


def create_offsets_topic(bootstrap: str, partitions: int = PARTITIONS) -> str:
    """A topic as a Connect worker creates its offset.storage.topic."""
    topic = f"connect-offsets-{uuid.uuid4().hex[:10]}"
    client = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config={"cleanup.policy": "compact"})
    client.create_topics([new])[topic].result(timeout=30)
    return topic


def connect_write(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    """Write records as a Connect worker's producer does (the Java client's murmur2 partition of the key)."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


@pytest.fixture
def offsets_topic(kafka_bootstrap: str) -> Iterator[str]:
    topic = create_offsets_topic(kafka_bootstrap)
    yield topic
    AdminClient({"bootstrap.servers": kafka_bootstrap}).delete_topics([topic])


def adopt(tmp_path: Path, bootstrap: str, command: str, *args: str) -> Any:
    flag = "--from-kafka-connect" if command == "import" else "--to-kafka-connect"
    return run_cli(
        "offsets",
        command,
        flag,
        "--offsets",
        f"sqlite:{tmp_path / 'offsets.db'}",
        "--name",
        "app",
        "--topic-prefix",
        "app",
        "--bootstrap-servers",
        bootstrap,
        *args,
    )


def stored(tmp_path: Path) -> dict[str, dict[str, Any]]:
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    try:
        return {r.partition: dict(r.offset) for r in store.records("app")}
    finally:
        store.close()


def value(offset: dict[str, Any]) -> bytes:
    return json.dumps(offset, separators=(",", ":")).encode()


def test_import_takes_the_newest_record_of_debeziums_key(
    tmp_path: Path, kafka_bootstrap: str, offsets_topic: str
) -> None:
    key = debezium_key("dbz", "app")
    connect_write(
        kafka_bootstrap,
        offsets_topic,
        [
            (key, value({"sec": 1772204739, "ord": 3, "resume_token": TOKEN})),
            (debezium_key("dbz", "app", "rs0"), value({"sec": 1, "ord": 1, "resume_token": TOKEN})),  # 1.x: ignored
            (debezium_key("someone-else", "app"), value({"sec": 2, "ord": 1})),
            (key, value({"sec": -1, "ord": -1, "resume_token": LATER})),
        ],
    )
    common = ("--connect-offsets-topic", offsets_topic, "--connector-name", "dbz", "--partition", "rs0")
    dry = adopt(tmp_path, kafka_bootstrap, "import", *common, "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)[0]["action"] == "would import" and stored(tmp_path) == {}
    result = adopt(tmp_path, kafka_bootstrap, "import", *common, "--yes", "-o", "json")
    assert result.returncode == 0, result.stderr
    done = json.loads(result.stdout)
    # shown with the token's `_data` hex string; stored in Debezium's form
    assert done[0]["debezium"]["offset"] == {"sec": -1, "ord": -1, "resume_token": LATER_DATA}
    assert done[0]["after"] == {"sec": 0x69A1B2D0, "ord": 1, "resume_token": LATER_DATA}
    assert done[0]["debezium"]["read_from"].startswith(f"{offsets_topic}[{default_partition(key, PARTITIONS)}]@")
    assert stored(tmp_path) == {"rs0": {"sec": 0x69A1B2D0, "ord": 1, "resume_token": LATER}}


@pytest.mark.mongodb
def test_import_names_the_partition_after_the_replica_set(
    tmp_path: Path, kafka_bootstrap: str, offsets_topic: str, mongo_uri: str
) -> None:
    connect_write(kafka_bootstrap, offsets_topic, [(debezium_key("dbz", "app"), value({"sec": 5, "ord": 1}))])
    result = adopt(
        tmp_path,
        kafka_bootstrap,
        "import",
        "--connect-offsets-topic",
        offsets_topic,
        "--connector-name",
        "dbz",
        "--connection-string",
        mongo_uri,
        "--yes",
    )
    assert result.returncode == 0, result.stderr
    with MongoClient(mongo_uri, serverSelectionTimeoutMS=10_000) as client:
        replica_set = client.admin.command("hello")["setName"]
    assert stored(tmp_path) == {replica_set: {"sec": 5, "ord": 1, "resume_token": None}}


def test_export_writes_debeziums_bytes_to_connects_partition(
    tmp_path: Path, kafka_bootstrap: str, offsets_topic: str
) -> None:
    key = debezium_key("dbz", "app")
    connect_write(kafka_bootstrap, offsets_topic, [(key, value({"sec": -1, "ord": -1, "resume_token": TOKEN}))])
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit("app", "rs0", {"sec": 0x69A1B2D0, "ord": 1, "resume_token": LATER})
    store.close()
    common = ("--connect-offsets-topic", offsets_topic, "--connector-name", "dbz")
    dry = adopt(tmp_path, kafka_bootstrap, "export", *common, "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)[0]
    partition = default_partition(key, PARTITIONS)
    assert planned["debezium"]["would_go_to"] == f"{offsets_topic}[{partition}]"
    assert len(read_topic(kafka_bootstrap, offsets_topic, timeout=30)) == 1
    result = adopt(tmp_path, kafka_bootstrap, "export", *common, "--yes", "-o", "json")
    assert result.returncode == 0, result.stderr
    done = json.loads(result.stdout)[0]
    assert done["before"] == {"sec": -1, "ord": -1, "resume_token": TOKEN_DATA}  # shown as hex
    assert done["after"]["resume_token"] == LATER_DATA
    # the REST request and the written value are what Kafka Connect takes: Debezium's stored form
    assert done["rest"]["body"]["offsets"][0]["offset"]["resume_token"] == LATER
    assert json.loads(done["debezium"]["value"])["resume_token"] == LATER
    records = read_topic(kafka_bootstrap, offsets_topic, timeout=30)
    assert [(m.partition(), m.key(), m.value()) for m in records] == [
        (partition, key, value({"sec": -1, "ord": -1, "resume_token": TOKEN})),
        (partition, key, b'{"sec":1772204752,"ord":1,"resume_token":"' + LATER.encode() + b'"}'),
    ]
    assert done["debezium"]["written_to"] == f"{offsets_topic}[{partition}]@1"


def test_the_kafka_offset_store_adopts_too(tmp_path: Path, kafka_bootstrap: str, offsets_topic: str) -> None:
    connect_write(kafka_bootstrap, offsets_topic, [(debezium_key("dbz", "app"), value({"sec": 7, "ord": 2}))])
    store_topic = f"mongocdc-offsets-{uuid.uuid4().hex[:10]}"
    result = run_cli(
        "offsets",
        "import",
        "--from-kafka-connect",
        "--offsets",
        f"kafka:{store_topic}",
        "--bootstrap-servers",
        kafka_bootstrap,
        "--name",
        "app",
        "--topic-prefix",
        "app",
        "--connect-offsets-topic",
        offsets_topic,
        "--connector-name",
        "dbz",
        "--partition",
        "cluster",
        "--yes",
    )
    assert result.returncode == 0, result.stderr
    store = KafkaOffsetStore({"bootstrap.servers": kafka_bootstrap}, store_topic, partitions=3, timeout_s=20)
    try:
        assert store.load("app", "cluster") == {"sec": 7, "ord": 2, "resume_token": None}
    finally:
        store.close()


def test_a_deleted_offset_is_no_offset(tmp_path: Path, kafka_bootstrap: str, offsets_topic: str) -> None:
    key = debezium_key("dbz", "app")
    connect_write(kafka_bootstrap, offsets_topic, [(key, value({"sec": 7, "ord": 2})), (key, None)])
    result = adopt(
        tmp_path,
        kafka_bootstrap,
        "import",
        "--connect-offsets-topic",
        offsets_topic,
        "--connector-name",
        "dbz",
        "--partition",
        "rs0",
        "--yes",
    )
    assert result.returncode == 2
    assert "no stored offsets of connector 'dbz'" in result.stderr and "it holds no offsets at all" in result.stderr


def test_no_such_topic_is_exit_2(tmp_path: Path, kafka_bootstrap: str) -> None:
    for command in ("import", "export"):
        result = adopt(
            tmp_path,
            kafka_bootstrap,
            command,
            "--connect-offsets-topic",
            f"absent-{uuid.uuid4().hex[:8]}",
            "--partition" if command == "import" else "--connector-name",
            "rs0" if command == "import" else "dbz",
            "--yes",
        )
        if command == "export":  # no offset store yet: that is said first (exit 3), and none is created
            assert result.returncode == 3 and "the offset store" in result.stderr and "does not exist" in result.stderr
            assert not (tmp_path / "offsets.db").exists()
            continue
        assert result.returncode == 2, result.stderr
        assert "there is no topic" in result.stderr and "--connect-offsets-topic" in result.stderr


def test_bad_client_options_are_exit_2_and_an_unreachable_cluster_exit_4(tmp_path: Path, kafka_bootstrap: str) -> None:
    result = adopt(tmp_path, kafka_bootstrap, "import", "--connect-kafka", "nonsense", "--partition", "rs0", "--yes")
    assert result.returncode == 2 and "is not KEY=VALUE" in result.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    config = tmp_path / "mongocdc.yaml"
    config.write_text("connect.timeout.ms: 3000\n")
    result = run_cli(
        "--config",
        str(config),
        "offsets",
        "import",
        "--from-kafka-connect",
        "--offsets",
        f"sqlite:{tmp_path / 'offsets.db'}",
        "--topic-prefix",
        "app",
        "--connect-bootstrap-servers",
        closed,
        "--partition",
        "rs0",
        "--yes",
    )
    assert result.returncode == 4, result.stderr
    assert closed in result.stderr
