"""``KafkaOffsetStore`` against the real broker, and one contract both offset stores satisfy."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from mongocdc.errors import ConfigError, ExitCode, FencedError
from mongocdc.offsets.base import OffsetStore
from mongocdc.offsets.kafka import KafkaOffsetStore, record_key, record_value, transactional_id
from mongocdc.offsets.sqlite import SqliteOffsetStore
from mongocdc.retry import Backoff
from tests.integration.helpers import read_topic, wait_until

OFFSET = {"sec": 1769860800, "ord": 3, "resume_token": "HgAAAAJfZGF0YQAOAAAAODI2MzQ1Njc4OUFCAAA="}


def new_topic() -> str:
    return f"offsets-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def topic() -> str:
    return new_topic()


@pytest.fixture
def kafka_store(kafka_bootstrap: str) -> Iterator[Callable[..., KafkaOffsetStore]]:
    """Opens stores on the test broker (3 partitions unless told) and closes them after the test."""
    opened: list[KafkaOffsetStore] = []

    def open_store(topic: str, partitions: int = 3, **kwargs: Any) -> KafkaOffsetStore:
        store = KafkaOffsetStore(
            {"bootstrap.servers": kafka_bootstrap}, topic, partitions=partitions, timeout_s=20, **kwargs
        )
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    client = admin(bootstrap)  # kept alive until the future resolves
    entries = client.describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def create_topic(bootstrap: str, topic: str, partitions: int, policy: str) -> None:
    client = admin(bootstrap)
    futures = client.create_topics([NewTopic(topic, partitions, 1, config={"cleanup.policy": policy})])
    futures[topic].result(timeout=30)


def topic_partitions(bootstrap: str, topic: str) -> int:
    return len(admin(bootstrap).list_topics(timeout=30).topics[topic].partitions)


def topic_exists(bootstrap: str, topic: str) -> bool:
    return topic in admin(bootstrap).list_topics(timeout=30).topics


def records_of(bootstrap: str, topic: str, connector: str, partition: str) -> list[Any]:
    key = record_key(connector, partition)
    return [m for m in read_topic(bootstrap, topic, timeout=30) if m.key() == key]


# --- the Kafka store -----------------------------------------------------------------------


@pytest.mark.kafka
def test_round_trip_in_the_documented_record_format(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    store = kafka_store(topic)
    assert store.load("app", "rs0") is None
    store.commit("app", "rs0", OFFSET)
    assert store.load("app", "rs0") == OFFSET
    # Durable on return: an independent reader sees the record at once, no wait needed.
    (msg,) = records_of(kafka_bootstrap, topic, "app", "rs0")
    assert msg.key() == b'["app",{"partition":"rs0"}]'
    value = json.loads(msg.value())
    assert value["offset"] == OFFSET
    updated = datetime.fromisoformat(value["updated_at"])
    assert updated.utcoffset() is not None and updated.utcoffset().total_seconds() == 0
    assert abs((datetime.now(UTC) - updated).total_seconds()) < 60


@pytest.mark.kafka
def test_overwrite_keeps_the_latest_under_one_key(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    store = kafka_store(topic)
    for n in range(3):
        store.commit("app", "rs0", {**OFFSET, "ord": n})
    assert store.load("app", "rs0") == {**OFFSET, "ord": 2}
    assert [r.partition for r in store.records("app")] == ["rs0"]
    written = records_of(kafka_bootstrap, topic, "app", "rs0")
    assert len(written) == 3 and len({m.partition() for m in written}) == 1  # same key bytes, same partition


@pytest.mark.kafka
def test_delete_writes_tombstones(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    store = kafka_store(topic)
    store.commit("app", "rs0", OFFSET)
    store.commit("app", "rs1", OFFSET)
    store.commit("other", "rs0", OFFSET)
    assert store.delete("app", "rs0") == 1
    assert store.load("app", "rs0") is None
    assert records_of(kafka_bootstrap, topic, "app", "rs0")[-1].value() is None
    assert store.delete("app", "rs0") == 0  # nothing left to delete: no second tombstone
    assert len(records_of(kafka_bootstrap, topic, "app", "rs0")) == 2
    assert store.delete("app") == 1
    assert [(r.connector, r.partition) for r in store.records()] == [("other", "rs0")]
    store.commit("app", "rs0", {**OFFSET, "ord": 9})  # a key written again after its tombstone
    assert store.load("app", "rs0") == {**OFFSET, "ord": 9}


@pytest.mark.kafka
def test_records_lists_every_connector_in_order(kafka_store: Callable[..., KafkaOffsetStore], topic: str) -> None:
    store = kafka_store(topic)
    for connector, partition in [("b", "rs1"), ("a", "rs2"), ("b", "cluster"), ("a", "rs0")]:
        store.commit(connector, partition, {"sec": 1, "ord": 0, "who": f"{connector}/{partition}"})
    listed = store.records()
    assert [(r.connector, r.partition) for r in listed] == [("a", "rs0"), ("a", "rs2"), ("b", "cluster"), ("b", "rs1")]
    assert all(r.offset["who"] == f"{r.connector}/{r.partition}" for r in listed)
    assert all(r.updated_at.tzinfo is not None for r in listed)
    assert [r.partition for r in store.records("b")] == ["cluster", "rs1"]


@pytest.mark.kafka
def test_a_second_instance_sees_what_the_first_committed(
    kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    first = kafka_store(topic)
    first.commit("app", "rs0", OFFSET)
    first.commit("app", "rs1", OFFSET)
    first.delete("app", "rs1")
    first.close()
    second = kafka_store(topic)
    assert second.load("app", "rs0") == OFFSET
    assert second.load("app", "rs1") is None
    second.commit("app", "rs0", {**OFFSET, "ord": 4})
    assert kafka_store(topic).load("app", "rs0") == {**OFFSET, "ord": 4}


@pytest.mark.kafka
def test_the_topic_is_created_compacted_with_the_configured_partitions(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    kafka_store(topic, partitions=5).connect(Backoff(max_attempts=1))
    assert topic_config(kafka_bootstrap, topic)["cleanup.policy"] == "compact"
    assert topic_partitions(kafka_bootstrap, topic) == 5


@pytest.mark.kafka
def test_the_creation_log_line_counts_partitions_in_words(
    kafka_store: Callable[..., KafkaOffsetStore], topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="mongocdc"):
        kafka_store(topic, partitions=1).connect(Backoff(max_attempts=1))
    assert any(f"created offset topic {topic} (compacted, 1 partition, " in m for m in caplog.messages)


@pytest.mark.kafka
def test_an_existing_compacted_topic_is_used_as_it_is(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    create_topic(kafka_bootstrap, topic, 2, "compact")
    store = kafka_store(topic, partitions=7)
    store.commit("app", "rs0", OFFSET)
    assert store.load("app", "rs0") == OFFSET
    assert topic_partitions(kafka_bootstrap, topic) == 2


@pytest.mark.kafka
@pytest.mark.parametrize("policy", ["delete", "compact,delete"])
def test_an_existing_topic_that_is_not_compacted_is_refused(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str, policy: str
) -> None:
    create_topic(kafka_bootstrap, topic, 1, policy)
    store = kafka_store(topic)
    with pytest.raises(ConfigError) as caught:
        store.connect()
    assert caught.value.exit_code == ExitCode.CONFIG
    assert topic in caught.value.message and f"cleanup.policy={policy}" in caught.value.message
    assert caught.value.hint and "cleanup.policy=compact" in caught.value.hint and topic in caught.value.hint
    with pytest.raises(ConfigError):
        store.commit("app", "rs0", OFFSET)
    assert read_topic(kafka_bootstrap, topic) == []


@pytest.mark.kafka
def test_reading_a_missing_topic_does_not_create_it(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    store = kafka_store(topic)
    store.connect(create_topic=False)
    assert store.records() == [] and store.load("app", "rs0") is None
    assert not topic_exists(kafka_bootstrap, topic)
    store.commit("app", "rs0", OFFSET)  # the first write creates it, compacted
    assert topic_config(kafka_bootstrap, topic)["cleanup.policy"] == "compact"
    assert store.load("app", "rs0") == OFFSET


@pytest.mark.kafka
def test_records_mongocdc_did_not_write_are_skipped(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    store = kafka_store(topic)
    store.commit("app", "rs0", OFFSET)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b'["app",{"server_id":"x","rs":"rs0"}]', value=b'{"sec":1}')  # Kafka Connect's
    producer.produce(topic, key=b"plain", value=b"text")
    producer.produce(topic, key=record_key("app", "rs1"), value=b"not json")
    assert producer.flush(30) == 0
    assert [(r.partition, r.offset) for r in store.records()] == [("rs0", OFFSET)]


@pytest.mark.kafka
def test_across_partitions_the_later_write_wins(
    kafka_bootstrap: str, kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    """After partitions are added a key can move: its records in two partitions are ordered by time."""
    store = kafka_store(topic)
    store.commit("app", "rs0", OFFSET)
    (home,) = {m.partition() for m in records_of(kafka_bootstrap, topic, "app", "rs0")}
    other = (home + 1) % 3
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    old = record_value({**OFFSET, "ord": 100}, datetime(2020, 1, 1, tzinfo=UTC))
    producer.produce(topic, key=record_key("app", "rs0"), value=old, partition=other, timestamp=now_ms - 3_600_000)
    assert producer.flush(30) == 0
    assert store.load("app", "rs0") == OFFSET
    new = record_value({**OFFSET, "ord": 200}, datetime.now(UTC))
    producer.produce(topic, key=record_key("app", "rs0"), value=new, partition=other, timestamp=now_ms + 60_000)
    assert producer.flush(30) == 0
    assert store.load("app", "rs0") == {**OFFSET, "ord": 200}


# --- one contract, both stores ---------------------------------------------------------------


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("kafka", id="kafka", marks=pytest.mark.kafka),
    ]
)
def reopenable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], OffsetStore]]:
    """Opens the store under test; every call opens a new instance over the same data."""
    opened: list[OffsetStore] = []
    topic = new_topic()

    def open_store() -> OffsetStore:
        store: OffsetStore
        if request.param == "sqlite":
            store = SqliteOffsetStore(tmp_path / "offsets.db")
        else:
            bootstrap = request.getfixturevalue("kafka_bootstrap")
            store = KafkaOffsetStore({"bootstrap.servers": bootstrap}, topic, partitions=3, timeout_s=20)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def test_contract_load_commit_overwrite(reopenable: Callable[[], OffsetStore]) -> None:
    store = reopenable()
    assert store.load("app", "rs0") is None and store.records() == []
    nested = {"sec": 7, "ord": 1, "resume_token": None, "initsync": True, "snapshot": {"left": ["db.a", "db.b"]}}
    store.commit("app", "rs0", nested)
    assert store.load("app", "rs0") == nested
    store.commit("app", "rs0", OFFSET)
    assert store.load("app", "rs0") == OFFSET
    loaded = store.load("app", "rs0")
    assert loaded is not None
    loaded["sec"] = 0  # a copy: changing it changes nothing stored
    assert store.load("app", "rs0") == OFFSET
    assert store.load("app", "rs1") is None and store.load("other", "rs0") is None


def test_contract_records_and_delete(reopenable: Callable[[], OffsetStore]) -> None:
    store = reopenable()
    store.commit("b", "rs0", {"sec": 1, "ord": 0})
    store.commit("a", "rs1", {"sec": 2, "ord": 0})
    store.commit("a", "rs0", {"sec": 3, "ord": 0})
    store.commit("a", "é-rs", {"sec": 4, "ord": 0})
    everything = store.records()
    assert [(r.connector, r.partition) for r in everything] == [("a", "rs0"), ("a", "rs1"), ("a", "é-rs"), ("b", "rs0")]
    assert [r.offset["sec"] for r in everything] == [3, 2, 4, 1]
    assert all(r.updated_at.tzinfo is not None for r in everything)
    assert [r.partition for r in store.records("a")] == ["rs0", "rs1", "é-rs"]
    assert store.records("nobody") == []
    assert store.delete("a", "rs1") == 1
    assert store.delete("a", "rs1") == 0
    assert store.delete("nobody") == 0
    assert store.delete("a") == 2
    assert [(r.connector, r.partition) for r in store.records()] == [("b", "rs0")]


def test_contract_a_new_instance_sees_committed_state(reopenable: Callable[[], OffsetStore]) -> None:
    first = reopenable()
    first.commit("app", "rs0", OFFSET)
    first.commit("app", "rs1", {"sec": 1, "ord": 1})
    first.delete("app", "rs1")
    first.close()
    second = reopenable()
    assert second.load("app", "rs0") == OFFSET
    assert [r.partition for r in second.records("app")] == ["rs0"]


def test_contract_updated_at_moves_forward(reopenable: Callable[[], OffsetStore]) -> None:
    store = reopenable()
    store.commit("app", "rs0", {"sec": 1, "ord": 0})
    (first,) = store.records()
    later = first.updated_at + timedelta(milliseconds=2)  # stored with millisecond precision
    wait_until(lambda: datetime.now(UTC) >= later, "the clock to pass the first commit", timeout=5)
    store.commit("app", "rs0", {"sec": 2, "ord": 0})
    (second,) = store.records()
    assert second.updated_at > first.updated_at


# --- a broker whose partitions have no leader -------------------------------------------------


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """A cluster of two brokers: the first (broker and controller) and a second, broker 2, that holds the
    partitions a test puts on it and halts to leave them without a leader while the first answers."""
    from tests.services.kafka import KafkaBroker

    with (
        KafkaBroker(data_dir=tmp_path_factory.mktemp("kafka-1")) as first,
        KafkaBroker(join=first, node_id=2, data_dir=tmp_path_factory.mktemp("kafka-2")) as second,
    ):
        yield first, second


def on_broker_2(bootstrap: str, topic: str) -> None:
    """A compacted topic whose one partition lives on broker 2 only."""
    client = admin(bootstrap)  # held until the creation is done
    new = NewTopic(topic, 1, -1, replica_assignment=[[2]], config={"cleanup.policy": "compact"})
    client.create_topics([new])[topic].result(timeout=30)


def test_stream_retries_a_leaderless_offset_topic_then_exits_4_naming_the_broker(
    two_brokers: tuple[Any, Any], tmp_path: Path, mongo_uri: str
) -> None:
    """The offset topic's partition has no leader (its broker is down) while the cluster answers: `stream`
    retries with the connect.* backoff, one line per attempt, then exits 4 naming the partition and the broker
    (it was exit 1, `_UNKNOWN_PARTITION` while reading the watermarks)."""
    from tests.integration.helpers import run_cli

    first, second = two_brokers
    topic = new_topic()
    on_broker_2(first.bootstrap, topic)
    second.halt()
    try:
        config = tmp_path / "c.yaml"
        config.write_text(
            "connect.max.attempts: 2\nconnect.backoff.initial.delay.ms: 100\nconnect.timeout.ms: 1000\n"
            f"topic.prefix: p{uuid.uuid4().hex[:6]}\nmongodb.connection.string: {json.dumps(mongo_uri)}\n"
        )
        result = run_cli(
            "-c", str(config), "stream", "--bootstrap-servers", first.bootstrap, "--offsets", f"kafka:{topic}"
        )
    finally:
        second.start()
    assert result.returncode == ExitCode.UNREACHABLE, result.stderr
    leaderless = f"{topic}[0]: no leader (their replicas are on broker 2, which is down or fenced)"
    retries = [line for line in result.stderr.splitlines() if "mongocdc.retry" in line]
    assert len(retries) == 1 and "attempt 1/2 failed, next in 0.1 s" in retries[0], result.stderr
    assert leaderless in retries[0]
    assert f"error: Kafka at {first.bootstrap} is unreachable: {leaderless}" in result.stderr


def test_the_store_waits_for_a_leader_that_comes_back_during_start_up(
    two_brokers: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A broker still starting (the partition's leader missing for seconds) is waited for with the backoff:
    the stored offsets are read once it leads, instead of a failure."""
    import threading

    first, second = two_brokers
    topic = new_topic()
    on_broker_2(first.bootstrap, topic)
    settings = {"bootstrap.servers": first.bootstrap}
    writer = KafkaOffsetStore(settings, topic, timeout_s=20)
    writer.commit("inventory", "rs0", OFFSET)
    writer.close()
    second.halt()
    restart = threading.Thread(target=second.start)
    store = KafkaOffsetStore(settings, topic, timeout_s=1)
    try:
        with caplog.at_level(logging.WARNING, logger="mongocdc.retry"):
            restart.start()
            store.connect(Backoff(0.5, 2.0, 60))
            assert store.load("inventory", "rs0") == OFFSET
    finally:
        restart.join()
        store.close()
    assert any(f"{topic}[0]: no leader" in r.getMessage() for r in caplog.records)  # it did wait


def test_watermarks_of_a_leaderless_partition_are_unreachable_not_a_bug(two_brokers: tuple[Any, Any]) -> None:
    """Reading the ends of a partition without a leader fails as the cluster being unreachable (exit 4, retried
    by the store), no longer as an unexpected error (exit 1) once its wait is over."""
    from mongocdc.errors import UnreachableError
    from mongocdc.kafka.consumer import KafkaConsumer
    from mongocdc.kafka.errors import Endpoint

    first, second = two_brokers
    topic = new_topic()
    on_broker_2(first.bootstrap, topic)
    settings = {"bootstrap.servers": first.bootstrap}
    consumer = KafkaConsumer(settings, Endpoint.of(settings), timeout_s=1)
    second.halt()
    try:
        with pytest.raises(UnreachableError) as caught:
            consumer.watermarks(topic, 0)
    finally:
        consumer.close()
        second.start()
    assert caught.value.exit_code == ExitCode.UNREACHABLE
    assert f"{topic}[0] has no leader that answers after 1 s" in caught.value.message


def test_a_second_owner_fences_the_first_which_commits_nothing_after(
    kafka_store: Callable[..., KafkaOffsetStore], topic: str
) -> None:
    first = kafka_store(topic, owner="fenced-connector")
    first.connect()
    first.commit("fenced-connector", "rs0", {"n": 1})
    second = kafka_store(topic, owner="fenced-connector")
    second.connect()  # init_transactions: the first one is fenced now
    with pytest.raises(FencedError) as fenced:
        first.commit("fenced-connector", "rs0", {"n": 2})
    assert fenced.value.exit_code == ExitCode.FENCED
    assert "connector 'fenced-connector' was fenced" in fenced.value.message
    assert "mongocdc-offsets-fenced-connector" in fenced.value.message
    with pytest.raises(FencedError):  # and stays fenced: nothing is written after
        first.delete("fenced-connector")
    reader = kafka_store(topic)
    assert [dict(r.offset) for r in reader.records("fenced-connector")] == [{"n": 1}]
    second.commit("fenced-connector", "rs0", {"n": 3})
    assert second.load("fenced-connector", "rs0") == {"n": 3}
    assert [dict(r.offset) for r in kafka_store(topic).records("fenced-connector")] == [{"n": 3}]
    # another connector on the same topic is not fenced by it
    other = kafka_store(topic, owner="other-connector")
    other.connect()
    other.commit("other-connector", "rs0", {"n": 4})
    second.commit("fenced-connector", "rs0", {"n": 5})
    assert {r.connector: dict(r.offset) for r in kafka_store(topic).records()} == {
        "fenced-connector": {"n": 5},
        "other-connector": {"n": 4},
    }


def test_an_open_transaction_of_a_dead_instance_is_not_read_and_is_aborted_by_the_next(
    kafka_store: Callable[..., KafkaOffsetStore], topic: str, kafka_bootstrap: str
) -> None:
    kafka_store(topic).connect()  # creates the topic
    dead = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": transactional_id("crashed")})
    dead.init_transactions(20)
    dead.begin_transaction()
    dead.produce(topic, record_value({"n": 1}, datetime.now(UTC)), record_key("crashed", "rs0"))
    dead.flush(20)  # written, never committed: the process died in its transaction
    restarted = kafka_store(topic, owner="crashed")
    restarted.connect()  # aborts the open transaction (read_committed readers skip it)
    assert restarted.load("crashed", "rs0") is None
    # read committed whatever the client settings say (librdkafka's default; read_uncommitted shows the record)
    told_otherwise = KafkaOffsetStore(
        {"bootstrap.servers": kafka_bootstrap, "isolation.level": "read_uncommitted"}, topic, timeout_s=20
    )
    try:
        assert told_otherwise.load("crashed", "rs0") is None
    finally:
        told_otherwise.close()
    restarted.commit("crashed", "rs0", {"n": 2})
    assert kafka_store(topic).load("crashed", "rs0") == {"n": 2}
