"""``mongocdc replicate`` between two real brokers: active/active, crash and restart, topic configs."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.integration.helpers import CliProcess, read_topic, run_cli, wait_until
from tests.integration.replication.conftest import (
    PROVENANCE,
    Record,
    cluster_id,
    committed,
    consume,
    count_records,
    create_topic,
    make_records,
    produce,
    read_internal,
    start_replicator,
    write_config,
)

pytestmark = pytest.mark.kafka


def statuses(proc: CliProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in list(proc.stdout_lines) if line.startswith("{")]


def caught_up(proc: CliProcess, copied: int, skipped: int) -> bool:
    if proc.proc.poll() is not None:
        raise AssertionError(f"replicate exited with {proc.proc.returncode}:\n{proc.stderr}")
    last = statuses(proc)[-1:] or [{}]
    return last[0].get("copied") == copied and last[0].get("skipped_loops") == skipped and last[0].get("lag") == 0


def test_active_active_each_cluster_holds_every_record_once(
    kafka_bootstrap: str, second_kafka: str, tmp_path: Path
) -> None:
    a, b = kafka_bootstrap, second_kafka
    topic, group = f"aa-{uuid.uuid4().hex[:8]}", f"aa-group-{uuid.uuid4().hex[:6]}"
    for bootstrap in (a, b):
        create_topic(bootstrap, topic, 3)
    config = write_config(tmp_path)
    on_a, on_b = make_records("a", 100), make_records("b", 100, start_ts=1_710_000_000_000)
    produce(a, topic, on_a[:50])
    produce(b, topic, on_b[:50])
    forward = start_replicator(config, a, b, topic, f"aa-ab-{uuid.uuid4().hex[:6]}", "--groups", group)
    backward = start_replicator(config, b, a, topic, f"aa-ba-{uuid.uuid4().hex[:6]}", "--groups", group)
    try:
        produce(a, topic, on_a[50:])  # more writes on both sides while both replicators run
        produce(b, topic, on_b[50:])
        wait_until(lambda: caught_up(forward, 100, 100) and caught_up(backward, 100, 100), "both directions quiet")

        # a consumer group reads part of A (its own records and copies of B's, interleaved)
        first = consume(a, group, topic, 120)
        offsets_a = committed(a, group, topic)

        def checkpointed() -> bool:
            latest = {
                key["partition"]: value["upstream"]
                for key, value in read_internal(b, "mongocdc-checkpoints.internal")
                if key["group"] == group and key["topic"] == topic
            }
            return latest == offsets_a

        wait_until(checkpointed, f"checkpoints of {group} on B")
    finally:
        assert forward.stop() == 0, forward.stderr
        assert backward.stop() == 0, backward.stderr

    everything = Counter([*on_a, *on_b])
    for bootstrap in (a, b):
        held = Counter(Record.of(m) for m in read_topic(bootstrap, topic))
        assert held == everything  # every record once per cluster: nothing looped, nothing lost
    # a copy keeps the origin's partition, key, headers and timestamp and names where it came from
    a_id = cluster_id(a)
    originals = {m.key(): m for m in read_topic(a, topic)}
    for msg in read_topic(b, topic):
        hops = [json.loads(v) for k, v in msg.headers() or [] if k == PROVENANCE]
        if msg.key().startswith(b"a-"):
            assert len(hops) == 1
            source = originals[msg.key()]
            assert hops[0]["cluster"] == a_id and hops[0]["topic"] == topic
            assert (hops[0]["partition"], hops[0]["offset"]) == (source.partition(), source.offset())
            assert msg.partition() == source.partition() and msg.timestamp() == source.timestamp()
        else:
            assert hops == []  # B's own records carry no provenance on B

    # the group moves to B: it misses nothing it had not read on A, and reads little twice
    result = run_cli("--config", str(config), "failover", "translate", "--group", group, "--source", a,
                     "--target", b, "--apply", "--output", "json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["source_reachable"] is True and report["action"] == "written"
    rest = consume(b, group, topic, None)
    read = Counter(Record.of(m) for m in [*first, *rest])
    assert set(read) == set(everything)
    assert max(read.values()) <= 2
    # each partition reads again exactly what the report says (records of B's own that came back to A, and
    # copies of records the group read on A): never "exact" with re-reads
    seen = {m.key() for m in first}
    again: Counter[int] = Counter()
    for msg in rest:
        again[msg.partition()] += msg.key() in seen
        seen.add(msg.key())
    rows = {row["partition"]: row for row in report["partitions"]}
    for partition, row in rows.items():
        assert row["again"] == again[partition], (row, again)
        assert row["method"] == ("exact" if again[partition] == 0 else "sync"), row


def test_restart_after_a_crash_copies_everything_and_translation_catches_up(
    kafka_bootstrap: str, second_kafka: str, tmp_path: Path
) -> None:
    """kill -9 before anything was committed or synced: the restart copies again (at-least-once) and the
    frontier still reaches the end of the target, past the duplicates."""
    a, b = kafka_bootstrap, second_kafka
    topic, name = f"crash-{uuid.uuid4().hex[:8]}", f"crash-{uuid.uuid4().hex[:6]}"
    create_topic(a, topic, 2, {"cleanup.policy": "compact", "retention.ms": "86400000"})
    records = make_records("k", 400)
    produce(a, topic, records)
    slow = write_config(tmp_path, **{"replication.flush.interval.ms": 600000})
    proc = start_replicator(slow, a, b, topic, name)
    wait_until(lambda: count_records(b, topic) == 400, "400 copies on B")
    proc.kill()
    assert committed(a, name, topic, 2) == {}  # nothing was committed: all will be copied again

    # the copy took the source's topic configs
    admin = AdminClient({"bootstrap.servers": b})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["cleanup.policy"].value == "compact" and configs["retention.ms"].value == "86400000"

    group = f"reader-{uuid.uuid4().hex[:6]}"
    consume(a, group, topic, None)  # a group that has read everything on A
    proc = start_replicator(write_config(tmp_path), a, b, topic, name, "--groups", group)
    try:
        wait_until(lambda: caught_up(proc, 400, 0), "the restarted replicator to catch up")
    finally:
        assert proc.stop() == 0, proc.stderr
    held = Counter(Record.of(m) for m in read_topic(b, topic))
    assert set(held) == set(records) and sum(held.values()) == 800  # every record, copied twice

    latest: dict[int, dict[str, Any]] = {}
    for key, value in read_internal(b, "mongocdc-offset-syncs.internal"):
        if key["topic"] == topic and value["seq"] >= latest.get(key["partition"], {}).get("seq", -1):
            latest[key["partition"]] = value
    ends = {p: end for p, end in committed(a, name, topic, 2).items()}
    for partition, value in latest.items():
        low_high = admin_watermark(b, topic, partition)
        assert value["upstream"] == ends[partition]
        assert value["downstream"] == low_high  # the frontier passed both sets of copies
    result = run_cli("--config", str(write_config(tmp_path)), "failover", "translate", "--group", group,
                     "--source", a, "--target", b, "--output", "json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["partitions"]
    assert {row["target_offset"] for row in rows} == {admin_watermark(b, topic, row["partition"]) for row in rows}


def admin_watermark(bootstrap: str, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{uuid.uuid4().hex[:6]}"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
    finally:
        consumer.close()


def test_rename_format_and_at_least_once_resume(kafka_bootstrap: str, second_kafka: str, tmp_path: Path) -> None:
    """``${topic}.replica``; a graceful stop commits, and a restart copies only what is new."""
    a, b = kafka_bootstrap, second_kafka
    topic, name = f"ren-{uuid.uuid4().hex[:8]}", f"ren-{uuid.uuid4().hex[:6]}"
    create_topic(a, topic, 3)
    produce(a, topic, make_records("x", 60))
    config = write_config(tmp_path)
    proc = start_replicator(config, a, b, topic, name, "--rename-format", "${topic}.replica")
    try:
        wait_until(lambda: caught_up(proc, 60, 0), "60 copies")
    finally:
        assert proc.stop() == 0, proc.stderr
    assert sum(committed(a, name, topic).values()) == 60
    produce(a, topic, make_records("y", 15, start_ts=1_710_000_000_000))
    proc = start_replicator(config, a, b, topic, name, "--rename-format", "${topic}.replica")
    try:
        wait_until(lambda: caught_up(proc, 15, 0), "15 more copies")
    finally:
        assert proc.stop() == 0, proc.stderr
    copies = read_topic(b, f"{topic}.replica")
    assert len(copies) == 75 and len({m.key() for m in copies}) == 75  # nothing copied twice
    assert count_records(b, topic) <= 0  # nothing under the source's own name


def test_an_idle_replicator_prints_no_status_lines_and_its_summary_is_in_words(
    kafka_bootstrap: str, second_kafka: str, tmp_path: Path
) -> None:
    """Status lines come when something was copied (or the lag changed), never "copied 0" every interval."""
    import time

    a, b = kafka_bootstrap, second_kafka
    topic, name = f"idle-{uuid.uuid4().hex[:8]}", f"idle-{uuid.uuid4().hex[:6]}"
    create_topic(a, topic, 1)
    produce(a, topic, make_records("i", 30))
    config = write_config(tmp_path)
    proc = CliProcess("--config", str(config), "replicate", "--source", a, "--target", b, "--topics", topic,
                      "--name", name, "--status-interval", "0.2")  # fmt: skip
    try:
        proc.wait_for_log("30 in all, 0 behind")
        said = [line for line in proc.stderr_lines if "copied " in line]
        # ten status intervals with nothing to copy: the old loop said "copied 0 records (0/s)" at each
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            assert [line for line in proc.stderr_lines if "copied " in line] == said, proc.stderr
            time.sleep(0.1)
        produce(a, topic, make_records("j", 5))
        proc.wait_for_log("35 in all, 0 behind")
    finally:
        assert proc.stop() == 0, proc.stderr
    summary = "".join(proc.stdout_lines)
    assert "records copied" in summary and "35" in summary
    assert "skipped_loops" not in summary and "records_per_s" not in summary
