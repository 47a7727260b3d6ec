"""The real-Kafka test service (tests/services/kafka.py) against real brokers.

Self-contained (no conftest): needs Java 17+ and Maven; the first run fetches Kafka
from Maven Central into .cache/kafka.
"""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient

from tests.services import kafka as kafka_service
from tests.services.kafka import KafkaBroker, KafkaServiceError, ensure_kafka_classpath

pytestmark = pytest.mark.kafka

REPO_ROOT = Path(__file__).resolve().parents[2]


def _produce(bootstrap: str, topic: str, key: bytes, value: bytes) -> None:
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
    assert producer.flush(30) == 0, "message not delivered within 30s"
    assert errors == []


def _consume_one(bootstrap: str, topic: str, timeout: float = 30.0) -> tuple[bytes, bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            key, value = msg.key(), msg.value()
            assert isinstance(key, bytes)
            assert isinstance(value, bytes)
            return key, value
        raise AssertionError(f"no message on {topic} at {bootstrap} within {timeout}s")
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def two_brokers() -> Iterator[tuple[KafkaBroker, KafkaBroker]]:
    ensure_kafka_classpath()  # once, before the parallel starts
    first, second = KafkaBroker(), KafkaBroker()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for started in [pool.submit(first.start), pool.submit(second.start)]:
                started.result()
        yield first, second
    finally:
        first.stop()
        second.stop()


def test_two_brokers_side_by_side(two_brokers: tuple[KafkaBroker, KafkaBroker]) -> None:
    first, second = two_brokers
    assert first.running
    assert second.running
    assert first.bootstrap != second.bootstrap
    assert first.bootstrap.startswith("127.0.0.1:")
    assert first.cluster_id != second.cluster_id

    topic = f"side-by-side-{uuid.uuid4().hex[:8]}"  # same name on both clusters
    _produce(first.bootstrap, topic, b"key-1", b"value on the first cluster")
    _produce(second.bootstrap, topic, b"key-2", b"value on the second cluster")

    assert _consume_one(first.bootstrap, topic) == (b"key-1", b"value on the first cluster")
    assert _consume_one(second.bootstrap, topic) == (
        b"key-2",
        b"value on the second cluster",
    )

    for broker in (first, second):
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
        assert metadata.cluster_id == broker.cluster_id
        assert len(metadata.topics[topic].partitions) == 1  # num.partitions default


def test_restart_and_reuse_of_a_given_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka"
    with KafkaBroker(data_dir=data_dir, num_partitions=3) as broker:
        bootstrap, cluster_id = broker.bootstrap, broker.cluster_id
        _produce(bootstrap, "durable", b"k", b"survives restarts")
        broker.restart()
        assert (broker.bootstrap, broker.cluster_id) == (bootstrap, cluster_id)
        assert _consume_one(bootstrap, "durable") == (b"k", b"survives restarts")
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert len(metadata.topics["durable"].partitions) == 3
    assert not broker.running
    assert (data_dir / "kafka-data" / "meta.properties").is_file()  # a given dir is kept

    with KafkaBroker(data_dir=data_dir) as again:  # storage reused, not reformatted
        assert again.cluster_id == cluster_id
        assert _consume_one(again.bootstrap, "durable") == (b"k", b"survives restarts")


def test_start_failure_raises_with_log_tail() -> None:
    broker = KafkaBroker(config={"num.io.threads": "not-a-number"}, startup_timeout=30)
    with pytest.raises(KafkaServiceError, match="num.io.threads"):
        broker.start()
    assert not broker.running
    data_dir = broker.data_dir
    assert data_dir.is_dir()
    broker.stop()
    assert not data_dir.exists()  # a temporary data dir is removed by stop()


def test_cached_classpath_does_not_run_maven(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = ensure_kafka_classpath()

    def no_maven(output_dir: Path) -> None:
        raise AssertionError("Maven ran although the classpath is cached")

    monkeypatch.setattr(kafka_service, "_run_maven", no_maven)
    assert ensure_kafka_classpath() == lib
    assert (lib / f"kafka_2.13-{kafka_service.KAFKA_VERSION}.jar").is_file()


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError(f"no output within {timeout}s")
    return proc.stdout.readline().strip()


def test_cli_prints_bootstrap_and_stops_on_sigterm(tmp_path: Path) -> None:
    ensure_kafka_classpath()
    stderr = (tmp_path / "stderr.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.services.kafka"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    try:
        bootstrap = _read_line(proc, timeout=90)
        assert bootstrap.startswith("127.0.0.1:"), (tmp_path / "stderr.log").read_text()
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert metadata.brokers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "stopping Kafka broker" in (tmp_path / "stderr.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
