"""`mongocdc topic dump` against the real broker: start positions, limits, follow, JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Producer

from tests.integration.helpers import REPO, CliProcess, cli_env, run_cli, wait_until

pytestmark = pytest.mark.kafka


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value, timestamp in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            timestamp=timestamp,
            partition=0,
            headers=[("origin", b"test"), ("binary", b"\xff\x00")],
        )
    assert producer.flush(30) == 0


def dump(bootstrap: str, *args: str) -> list[dict[str, object]]:
    result = run_cli("topic", "dump", *args, "--bootstrap-servers", bootstrap, "--output", "json", "--timeout", "5")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def topic(kafka_bootstrap: str) -> str:
    name = f"dump-{uuid.uuid4().hex[:8]}"
    produce(
        kafka_bootstrap,
        name,
        [
            (b'{"id":"1"}', b'{"op":"c","n":1}', 1_700_000_000_000),
            (b'{"id":"1"}', None, 1_700_000_001_000),
            (b"plain-key", b"not json", 1_700_000_002_000),
        ],
    )
    return name


def test_dump_from_the_beginning_decodes_json_and_headers(kafka_bootstrap: str, topic: str) -> None:
    records = dump(kafka_bootstrap, topic)
    assert [r["offset"] for r in records] == [0, 1, 2]
    first = records[0]
    assert first["topic"] == topic and first["partition"] == 0
    assert first["key"] == {"id": "1"} and first["value"] == {"op": "c", "n": 1}
    assert first["timestamp"] == 1_700_000_000_000
    assert first["headers"] == {"origin": "test", "binary": {"base64": "/wA="}}
    assert records[1]["value"] is None  # a tombstone
    assert records[2]["key"] == "plain-key" and records[2]["value"] == "not json"


def test_dump_from_an_offset_a_timestamp_and_with_a_limit(kafka_bootstrap: str, topic: str) -> None:
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--offset", "1")] == [1, 2]
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--timestamp", "1700000001000")] == [1, 2]
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--timestamp", "2023-11-14T22:13:22Z")] == [2]
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--max-messages", "2")] == [0, 1]


def test_follow_waits_for_new_records(kafka_bootstrap: str, topic: str) -> None:
    follower = CliProcess(
        "topic",
        "dump",
        topic,
        "--bootstrap-servers",
        kafka_bootstrap,
        "--output",
        "json",
        "--follow",
        "--max-messages",
        "4",
    )
    try:
        wait_until(lambda: len(follower.stdout_lines) == 3, "the existing records")
        assert follower.proc.poll() is None  # still following at the end of the topic
        produce(kafka_bootstrap, topic, [(b"k", b'{"late": true}', 1_700_000_003_000)])
        assert follower.proc.wait(timeout=30) == 0
    finally:
        follower.kill()
    assert json.loads(follower.stdout_lines[3])["value"] == {"late": True}


def test_missing_topic_and_bad_timestamp_are_usage_errors(kafka_bootstrap: str) -> None:
    missing = run_cli(
        "topic", "dump", f"absent-{uuid.uuid4().hex[:8]}", "--bootstrap-servers", kafka_bootstrap, "--timeout", "5"
    )
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    bad = run_cli("topic", "dump", "t", "--bootstrap-servers", kafka_bootstrap, "--timestamp", "yesterday")
    assert bad.returncode == 2
    assert "--timestamp 'yesterday' is neither epoch milliseconds nor an ISO 8601 time" in bad.stderr


def _envelope(prefix: str, after: str, ts_ms: int) -> bytes:
    source = {"version": prefix, "connector": "mongodb", "name": prefix, "ts_ms": 1, "db": "d", "collection": "c"}
    return json.dumps({"after": after, "source": source, "op": "c", "ts_ms": ts_ms}).encode()


def test_compare_finds_no_difference_between_equal_records_and_names_a_changed_one(kafka_bootstrap: str) -> None:
    reference, same, other = (f"p{uuid.uuid4().hex[:8]}" for _ in range(3))
    produce(kafka_bootstrap, f"{reference}.d.c", [(b'{"id":"1"}', _envelope(reference, '{"a": 1}', 5), 1)])
    produce(kafka_bootstrap, f"{same}.d.c", [(b'{"id":"1"}', _envelope(same, '{"a": 1}', 9), 1)])
    produce(kafka_bootstrap, f"{other}.d.c", [(b'{"id":"1"}', _envelope(other, '{"a":1}', 5), 1)])
    common = ("--bootstrap-servers", kafka_bootstrap, "--timeout", "5", "--output", "json")

    result = run_cli("topic", "compare", reference, "--prefix", same, *common)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["identical"] is True
    assert report["records"] == {"<prefix>.d.c": {"reference": 1, "compared": 1}}

    result = run_cli("topic", "compare", reference, "--prefix", other, *common)
    assert result.returncode == 6, result.stderr
    (difference,) = json.loads(result.stdout)["differences"]
    assert difference["where"] == "after"
    assert (difference["reference"], difference["compared"]) == ('{"a": 1}', '{"a":1}')


def test_compare_with_an_unknown_reference_prefix_is_a_usage_error(kafka_bootstrap: str) -> None:
    result = run_cli(
        "topic", "compare", f"none{uuid.uuid4().hex[:8]}", "--prefix", "x", "--bootstrap-servers", kafka_bootstrap
    )
    assert result.returncode == 2
    assert "no topics of the prefix" in result.stderr and "topic.prefix the Debezium connector" in result.stderr


@pytest.mark.parametrize("output", ["json", "table"])
def test_dump_into_a_closed_pipe_exits_0_quietly(kafka_bootstrap: str, topic: str, output: str) -> None:
    """``mongocdc topic dump … | head -3`` where the reader is gone before the first record is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mongocdc", "topic", "dump", topic, "--bootstrap-servers", kafka_bootstrap,
             "--output", output, "--timeout", "5"],
            stdout=write_end, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=cli_env(), cwd=REPO,
            text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr and "Traceback" not in done.stderr
