"""`mongocdc topic dump` against the real broker: start positions, limits, follow, JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer

from tests.integration.helpers import REPO, CliProcess, cli_env, run_cli, wait_until

pytestmark = pytest.mark.kafka

T0 = (int(time.time()) // 60 * 60 - 3600) * 1000
"""The records' timestamps start an hour ago, at a whole minute: within the broker's retention (records of long
ago are deleted by its retention check, at any time during a run)."""


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def produce(
    bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, int]], partition: int = 0
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value, timestamp in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            timestamp=timestamp,
            partition=partition,
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
            (b'{"id":"1"}', b'{"op":"c","n":1}', T0),
            (b'{"id":"1"}', None, T0 + 1000),
            (b"plain-key", b"not json", T0 + 2000),
        ],
    )
    return name


def test_dump_from_the_beginning_decodes_json_and_headers(kafka_bootstrap: str, topic: str) -> None:
    records = dump(kafka_bootstrap, topic)
    assert [r["offset"] for r in records] == [0, 1, 2]
    first = records[0]
    assert first["topic"] == topic and first["partition"] == 0
    assert first["key"] == {"id": "1"} and first["value"] == {"op": "c", "n": 1}
    assert first["timestamp"] == T0
    assert first["headers"] == {"origin": "test", "binary": {"base64": "/wA="}}
    assert records[1]["value"] is None  # a tombstone
    assert records[2]["key"] == "plain-key" and records[2]["value"] == "not json"


def test_dump_from_an_offset_a_timestamp_and_with_a_limit(kafka_bootstrap: str, topic: str) -> None:
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--offset", "1")] == [1, 2]
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--timestamp", str(T0 + 1000))] == [1, 2]
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--timestamp", iso(T0 + 2000))] == [2]
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--max-messages", "2")] == [0, 1]


def test_every_time_option_takes_iso_8601_and_numbers_with_their_unit(kafka_bootstrap: str, topic: str) -> None:
    for when in (f"{T0 // 1000 + 1}s", f"{T0 + 1000}ms", iso(T0 + 1000), str(T0 + 1000)):
        assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--timestamp", when)] == [1, 2], when
        assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--offset", f"@{when}")] == [1, 2], when
    assert [r["offset"] for r in dump(kafka_bootstrap, topic, "--offset", f"s@{T0 + 1500}ms")] == [2]


@pytest.fixture
def two_partitions(kafka_bootstrap: str) -> str:
    """Records 0-2 in partition 0 and 10-13 in partition 1 (values ``p<partition>-<n>``)."""
    name = f"dump-{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, name, [(b"k", f"p0-{n}".encode(), T0 + n) for n in range(3)], 0)
    produce(kafka_bootstrap, name, [(b"k", f"p1-{n}".encode(), T0 + n) for n in range(10, 14)], 1)
    return name


def values(bootstrap: str, *args: str) -> list[str]:
    return sorted(str(r["value"]) for r in dump(bootstrap, *args))


def test_offsets_and_partitions_as_kcat_takes_them(kafka_bootstrap: str, two_partitions: str) -> None:
    name = two_partitions
    assert values(kafka_bootstrap, name, "-p", "1") == ["p1-10", "p1-11", "p1-12", "p1-13"]
    assert values(kafka_bootstrap, name, "-p", "1", "-p", "0", "--offset", "2") == ["p0-2", "p1-12", "p1-13"]
    assert values(kafka_bootstrap, name, "--offset", "-1") == ["p0-2", "p1-13"]  # the last record of each
    assert values(kafka_bootstrap, name, "--offset", "-2", "-p", "1") == ["p1-12", "p1-13"]
    assert values(kafka_bootstrap, name, "--offset", "-100", "-p", "0") == ["p0-0", "p0-1", "p0-2"]
    assert values(kafka_bootstrap, name, "--offset", "beginning", "-p", "0") == ["p0-0", "p0-1", "p0-2"]
    assert values(kafka_bootstrap, name, "--offset", f"@{T0 + 12}", "-p", "1") == ["p1-12", "p1-13"]
    started = time.monotonic()
    assert values(kafka_bootstrap, name, "--offset", "end") == []
    assert time.monotonic() - started < 5  # at the end at once, not after the idle --timeout
    missing = run_cli("topic", "dump", name, "-p", "7", "--bootstrap-servers", kafka_bootstrap)
    assert missing.returncode == 2
    assert f"topic {name!r} has no partition 7 (it has 3: 0-2)" in missing.stderr


def test_e_at_stops_each_partition_before_a_time_even_when_following(kafka_bootstrap: str, two_partitions: str) -> None:
    name = two_partitions
    assert values(kafka_bootstrap, name, "--offset", f"e@{T0 + 2}") == ["p0-0", "p0-1"]  # p1 starts at T0 + 10
    window = values(kafka_bootstrap, name, "--offset", f"@{T0 + 1}", "--offset", f"e@{T0 + 12}")
    assert window == ["p0-1", "p0-2", "p1-10", "p1-11"]
    started = time.monotonic()
    result = run_cli(
        "topic", "dump", name, "-p", "0", "-p", "1", "--offset", f"e@{T0 + 1}", "--follow", "--raw",
        "--bootstrap-servers", kafka_bootstrap,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "p0-0\n"  # and it ended: both partitions reached the time
    assert time.monotonic() - started < 60


def test_end_follows_only_new_records(kafka_bootstrap: str, two_partitions: str) -> None:
    follower = CliProcess(
        "--log-level", "debug", "topic", "dump", two_partitions, "--offset", "end", "--raw", "--follow", "-n", "1",
        "--bootstrap-servers", kafka_bootstrap,
    )  # fmt: skip
    try:
        follower.wait_for_log(f"reading {two_partitions} from offsets {{0: 3, 1: 4, 2: 0}}")
        produce(kafka_bootstrap, two_partitions, [(b"k", b"new", T0 + 100)], 1)
        assert follower.proc.wait(timeout=30) == 0
    finally:
        follower.kill()
    assert follower.stdout_lines == ["new\n"]


def test_bad_offsets_and_formats_are_usage_errors_saying_what_is_expected(kafka_bootstrap: str, topic: str) -> None:
    cases = [
        (["--offset", "yesterday"], "--offset 'yesterday' is not a start position", "beginning, end"),
        (["--offset", "@soon"], "--offset @ 'soon' is not a time", "ISO 8601"),
        (["--format", "%k %x"], "unknown token %x at character 4", "%k %s %v"),
        (["--format", "%k\\q"], "unknown escape \\q", "\\n \\t"),
        (["--raw", "--key-only"], "give one of --key-only, --raw", "--key-only is --format"),
        (["--raw", "-o", "json"], "--raw prints records as they are: it takes no --output", "leave out -o"),
        (["--offset", "1", "--timestamp", "1s"], "--offset 1 and --timestamp 1s: give one start position", "@TIME"),
        (["--offset", "e@1s", "--offset", "e@2s"], "--offset e@1s and --offset e@2s: give one stop position", "e@TIME"),
        (["--offset", "e@never"], "--offset e@ 'never' is not a time", "ISO 8601"),
    ]
    for args, says, hint in cases:
        result = run_cli("topic", "dump", topic, *args, "--bootstrap-servers", kafka_bootstrap, "--timeout", "5")
        assert result.returncode == 2, (args, result.stderr)
        assert says in result.stderr and hint in result.stderr, (args, result.stderr)
        assert result.stdout == "" and "Traceback" not in result.stderr


def raw_dump(bootstrap: str, *args: str) -> bytes:
    result = subprocess.run(
        [sys.executable, "-m", "mongocdc", "topic", "dump", *args, "--bootstrap-servers", bootstrap,
         "--timeout", "5"],
        capture_output=True, stdin=subprocess.DEVNULL, env=cli_env(), cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_format_raw_and_key_only_print_the_bytes_as_they_are(kafka_bootstrap: str) -> None:
    name = f"dump-{uuid.uuid4().hex[:8]}"
    spaced = b'{"b":  2, "a" : 1}'  # JSON whose spacing and order a reformatting would change
    produce(kafka_bootstrap, name, [(b"key-1", spaced, T0), (None, None, T0 + 1)], 2)
    fmt = "%t|%p|%o|%T|%k|%K|%s|%S|%h|%v%%\\t\\n"
    assert raw_dump(kafka_bootstrap, name, "--format", fmt) == (
        f"{name}|2|0|{T0}|key-1|5|".encode() + spaced + b"|18|origin=test,binary=\xff\x00|" + spaced
        + b"%\t\n"
        + f"{name}|2|1|{T0 + 1}||-1||-1|".encode() + b"origin=test,binary=\xff\x00|%\t\n"
    )  # fmt: skip
    assert raw_dump(kafka_bootstrap, name, "--raw") == spaced + b"\n\n"  # a tombstone is an empty line
    assert raw_dump(kafka_bootstrap, name, "--key-only") == b"key-1\n\n"


def test_table_output_is_a_table_with_a_row_per_record(kafka_bootstrap: str, topic: str) -> None:
    result = run_cli("topic", "dump", topic, "--bootstrap-servers", kafka_bootstrap, "--timeout", "5")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "partition" in line)
    for column in ("partition", "offset", "timestamp", "key", "value", "headers"):
        assert column in header
    rows = [line for line in lines if iso(T0)[:16] in line]
    assert len(rows) == 3  # one line per record, not pretty-printed JSON
    assert '{"id":"1"}' in rows[0] and '{"op":"c","n":1}' in rows[0] and iso(T0) in rows[0]
    assert "null" in rows[1] and "not json" in rows[2]
    assert not any(line.strip() in ("{", "}") for line in lines)


def test_topic_list_counts_the_messages_of_each_topic(kafka_bootstrap: str, two_partitions: str) -> None:
    prefix = two_partitions[:-2]
    result = run_cli("topic", "list", prefix, "--bootstrap-servers", kafka_bootstrap, "-o", "json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert {"topic": two_partitions, "partitions": 3, "messages": 7} in listed
    assert all(t["topic"].startswith(prefix) for t in listed)
    table = run_cli("topic", "list", two_partitions, "--bootstrap-servers", kafka_bootstrap)
    assert table.returncode == 0, table.stderr
    (row,) = [line for line in table.stdout.splitlines() if two_partitions in line]
    assert [cell.strip() for cell in row.split("│")[1:4]] == [two_partitions, "3", "7"]


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
        produce(kafka_bootstrap, topic, [(b"k", b'{"late": true}', T0 + 3000)])
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
    assert "--timestamp 'yesterday' is not a time" in bad.stderr
    assert "epoch seconds with s (--timestamp 1795687200s)" in bad.stderr  # what is expected


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
