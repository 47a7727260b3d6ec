"""Helpers to fill and read the two Kafka clusters of the replication tests.

The clusters are fixtures of tests/conftest.py: ``kafka_bootstrap`` (the suite's broker) is cluster A,
``second_kafka`` cluster B, one more broker per test run (or ``MONGOCDC_TEST_KAFKA_BOOTSTRAP_2``); a test
that stops a broker uses ``own_kafka``, a broker of its module's own.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import CliProcess, read_topic, wait_until

PROVENANCE = "mongocdc.provenance"


@dataclass(frozen=True)
class Record:
    key: bytes
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int

    @classmethod
    def of(cls, msg: Any) -> Record:
        headers = tuple((k, v) for k, v in (msg.headers() or []) if k != PROVENANCE)
        return cls(msg.key(), msg.value(), headers, msg.timestamp()[1])


def create_topic(bootstrap: str, topic: str, partitions: int = 3, config: dict[str, str] | None = None) -> None:
    """``retention.ms`` is -1 unless ``config`` sets it: the records' timestamps are from 2023-2024, and the broker's
    7-day retention would otherwise delete them at its next check, in the middle of a test."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"retention.ms": "-1", **(config or {})}
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)
    wait_until(lambda: topic in admin.list_topics(timeout=5).topics, f"topic {topic}")


def make_records(prefix: str, count: int, start_ts: int = 1_700_000_000_000) -> list[Record]:
    return [
        Record(
            f"{prefix}-{i}".encode(),
            None if i % 17 == 5 else f'{{"n":{i},"from":"{prefix}"}}'.encode(),
            (("trace", f"t{i}".encode()), ("bin", b"\x00\xff")),
            start_ts + i,
        )
        for i in range(count)
    ]


def produce(bootstrap: str, topic: str, records: list[Record]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    errors: list[object] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for r in records:
        producer.produce(
            topic, value=r.value, key=r.key, headers=list(r.headers), timestamp=r.timestamp, on_delivery=delivered
        )
    assert producer.flush(30) == 0
    assert errors == []


def group_read(
    bootstrap: str, group: str, topic: str, count: int | None, *, reset: str, timeout: float
) -> tuple[list[Any], dict[int, int]]:
    """A confluent-kafka member of ``group``: reads ``count`` records of ``topic`` (``None``: up to the end), commits
    exactly what it read and leaves; the records and the offsets committed, by partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": reset,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while count is None or len(got) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"group {group} read {len(got)} of {count} records of {topic}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    eof.add(msg.partition())
                    assignment = {tp.partition for tp in consumer.assignment()}
                    if count is None and assignment and eof >= assignment:
                        break
                continue
            eof.discard(msg.partition())
            got.append(msg)
        commits: dict[int, int] = {}
        for msg in got:
            commits[msg.partition()] = max(commits.get(msg.partition(), 0), msg.offset() + 1)
        if commits:
            consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in commits.items()], asynchronous=False)
    finally:
        consumer.close()
    return got, commits


def consume(bootstrap: str, group: str, topic: str, count: int | None, timeout: float = 60.0) -> list[Any]:
    """Read ``count`` records (or up to the end) with consumer group ``group``, commit exactly what was read, leave."""
    return group_read(bootstrap, group, topic, count, reset="earliest", timeout=timeout)[0]


def committed(bootstrap: str, group: str, topic: str, partitions: int = 3) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    except KafkaException:
        return {}
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def count_records(bootstrap: str, topic: str) -> int:
    try:
        return len(read_topic(bootstrap, topic, timeout=20))
    except KafkaException:
        return -1


def write_config(tmp_path: Path, **extra: object) -> Path:
    """A config file with short intervals so the tests do not wait on the defaults."""
    settings: dict[str, object] = {
        "emit.checkpoints.interval.seconds": 1,
        "replication.flush.interval.ms": 200,
        "refresh.topics.interval.seconds": 1,
        "connect.max.attempts": 3,
        "connect.backoff.initial.delay.ms": 200,
        "connect.timeout.ms": 3000,
        **extra,
    }
    path = tmp_path / f"replicate-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text("".join(f"{k}: {v!r}\n" if isinstance(v, str) else f"{k}: {v}\n" for k, v in settings.items()))
    return path


def start_replicator(config: Path, source: str, target: str, topics: str, name: str, *extra: str) -> CliProcess:
    proc = CliProcess(
        "--config",
        str(config),
        "replicate",
        "--source",
        source,
        "--target",
        target,
        "--topics",
        topics,
        "--name",
        name,
        "--output",
        "json",
        "--status-interval",
        "0.3",
        *extra,
    )
    proc.wait_for_log("replicating", timeout=60)
    return proc


def read_internal(bootstrap: str, topic: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    import json

    return [
        (json.loads(m.key()), json.loads(m.value()))
        for m in read_topic(bootstrap, topic, timeout=20)
        if m.value() is not None
    ]


def cluster_id(bootstrap: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return str(admin.describe_cluster().result(10).cluster_id)


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{uuid.uuid4().hex[:6]}"})
    try:
        return {
            p: int(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]) for p in range(partitions)
        }
    finally:
        consumer.close()


def checkpointed(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """The committed offsets of ``group`` the newest checkpoints on ``bootstrap`` hold, by partition."""
    latest: dict[int, int] = {}
    for key, value in read_internal(bootstrap, "mongocdc-checkpoints.internal"):
        if key["group"] == group and key["topic"] == topic:
            latest[key["partition"]] = value["upstream"]
    return latest


@dataclass(frozen=True)
class Read:
    """What one consumer group member read (partition, offset, key) and committed (partition → offset)."""

    records: list[tuple[int, int, str]]
    committed: dict[int, int]


class JavaGroupReader:
    """``java/GroupReader.java``: a consumer group member on Kafka's own Java client (subscribe, poll, commitSync).

    Compiled once per test session against the test broker's kafka-clients jar.
    """

    def __init__(self, classes: Path, classpath: str) -> None:
        self.classes = classes
        self.classpath = classpath

    def __call__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        count: int,
        partitions: str = "all",
        reset: str = "earliest",
        protocol: str = "classic",
    ) -> Read:
        import subprocess

        result = subprocess.run(
            ["java", "-cp", f"{self.classes}{os.pathsep}{self.classpath}", "GroupReader",
             bootstrap, group, topic, str(count), partitions, reset, protocol],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-4000:]
        records: list[tuple[int, int, str]] = []
        committed: dict[int, int] = {}
        for line in result.stdout.splitlines():
            parts = line.split(" ")
            if parts[0] == "committed":
                committed[int(parts[1])] = int(parts[2])
            elif len(parts) == 3:
                records.append((int(parts[0]), int(parts[1]), parts[2]))
        return Read(records, committed)


@pytest.fixture(scope="session")
def java_reader(tmp_path_factory: pytest.TempPathFactory) -> JavaGroupReader:
    import shutil
    import subprocess

    from tests.services.kafka import ensure_kafka_classpath

    if shutil.which("javac") is None:
        pytest.skip("javac (JDK 17+) is needed for the Java consumer")
    lib = ensure_kafka_classpath()
    jars = [str(p) for p in sorted(lib.glob("*.jar")) if not p.name.startswith(("kafka_2", "kafka-server", "scala"))]
    classpath = os.pathsep.join(jars)
    classes = tmp_path_factory.mktemp("java-reader")
    source = Path(__file__).with_name("java") / "GroupReader.java"
    subprocess.run(["javac", "-d", str(classes), "-cp", classpath, str(source)], check=True, timeout=300)
    return JavaGroupReader(classes, classpath)


def python_group_read(bootstrap: str, group: str, topic: str, count: int | None, reset: str = "latest") -> Read:
    """A confluent-kafka group member: reads ``count`` records (``None``: up to the end), commits what it read."""
    got, commits = group_read(bootstrap, group, topic, count, reset=reset, timeout=120)
    return Read([(m.partition(), m.offset(), m.key().decode()) for m in got], commits)


def read_again(before: list[tuple[int, int, str]], after: list[tuple[int, int, str]]) -> dict[int, int]:
    """Per partition of ``after``: how many records it read whose key was read before (in ``before`` or earlier)."""
    seen = {key for _, _, key in before}
    again: dict[int, int] = {}
    for partition, _, key in after:
        again.setdefault(partition, 0)
        if key in seen:
            again[partition] += 1
        seen.add(key)
    return again
