"""``failover translate`` refusals against a real broker: active members, no checkpoints, ``--dry-run``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.helpers import run_cli, wait_until
from tests.integration.replication.conftest import (
    committed,
    consume,
    create_topic,
    make_records,
    produce,
    start_replicator,
    write_config,
)

pytestmark = pytest.mark.kafka

CLOSED = "127.0.0.1:9"


@pytest.fixture(scope="module")
def replicated(kafka_bootstrap: str, second_kafka: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A topic replicated A → B and a group with a checkpoint on B."""
    a, b = kafka_bootstrap, second_kafka
    topic, group = f"fe-{uuid.uuid4().hex[:8]}", f"fe-group-{uuid.uuid4().hex[:6]}"
    create_topic(a, topic, 1)
    produce(a, topic, make_records("r", 20))
    consume(a, group, topic, 8)
    config = write_config(tmp_path_factory.mktemp("fe"))
    proc = start_replicator(config, a, b, topic, f"fe-{uuid.uuid4().hex[:6]}", "--groups", group)
    try:
        wait_until(lambda: any('"checkpoints": 1' in line for line in proc.stdout_lines), "a checkpoint")
    finally:
        assert proc.stop() == 0, proc.stderr
    return {"a": a, "b": b, "topic": topic, "group": group, "config": str(config)}


def translate(r: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = run_cli("--config", r["config"], "failover", "translate", "--target", r["b"], *args)
    return result.returncode, result.stdout, result.stderr


def test_apply_refused_while_the_group_has_active_members_on_the_target(replicated: dict[str, str]) -> None:
    member = Consumer({"bootstrap.servers": replicated["b"], "group.id": replicated["group"]})
    member.subscribe([replicated["topic"]])
    try:
        wait_until(lambda: bool(member.poll(0.2) or member.assignment()), "the member to join", timeout=60)
        code, out, err = translate(replicated, "--group", replicated["group"], "--source", replicated["a"], "--apply")
    finally:
        member.close()
    assert code == 2, err
    assert f"error: consumer group {replicated['group']} has 1 active member(s) on the target cluster" in err
    assert "its offsets were not changed" in err and "hint: stop the group's consumers" in err
    assert committed(replicated["b"], replicated["group"], replicated["topic"], 1) == {}


def test_dry_run_shows_what_apply_would_write_and_writes_nothing(replicated: dict[str, str]) -> None:
    code, out, err = translate(replicated, "--group", replicated["group"], "--source", CLOSED, "--dry-run",
                               "--output", "json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["action"] == "would write" and report["source_reachable"] is False
    assert [(row["partition"], row["committed"], row["target_offset"], row["method"], row["again"])
            for row in report["partitions"]] == [(0, 8, 8, "exact", 0)]  # fmt: skip
    assert committed(replicated["b"], replicated["group"], replicated["topic"], 1) == {}
    code, out, err = translate(replicated, "--group", replicated["group"], "--source", CLOSED, "--dry-run")
    assert code == 0, err
    assert "(unreachable: from checkpoints): offsets --apply would write" in " ".join(out.split())
    code, out, err = translate(replicated, "--group", replicated["group"], "--source", CLOSED)
    assert code == 0, err
    assert f"group {replicated['group']} from" in out and "(unreachable: from checkpoints): offsets shown" in out


def test_source_unreachable_and_no_checkpoint_exits_4(replicated: dict[str, str]) -> None:
    code, _, err = translate(replicated, "--group", "never-seen", "--source", CLOSED)
    assert code == 4
    assert "no checkpoint of group never-seen" in err and "hint:" in err


def test_timestamp_method_when_no_sync_covers_the_topic(replicated: dict[str, str], tmp_path: Path) -> None:
    """A topic copied by something else (no syncs): translated by timestamp, never past an unread record."""
    a, b = replicated["a"], replicated["b"]
    topic, group = f"ts-{uuid.uuid4().hex[:8]}", f"ts-{uuid.uuid4().hex[:6]}"
    records = make_records("t", 10)
    for bootstrap in (a, b):
        create_topic(bootstrap, topic, 1)
        produce(bootstrap, topic, records)
    consume(a, group, topic, 4)
    code, out, err = translate(replicated, "--group", group, "--source", a, "--output", "json")
    assert code == 0, err
    assert [(r["method"], r["target_offset"]) for r in json.loads(out)["partitions"]] == [("timestamp", 4)]


def test_a_committed_partition_that_cannot_be_translated_is_named_and_apply_refuses(
    replicated: dict[str, str],
) -> None:
    """A group that also committed on a topic nobody copies: warned about by name; --apply writes nothing unless
    --allow-partial, which writes the other partitions."""
    a, b, topic = replicated["a"], replicated["b"], replicated["topic"]
    other, group = f"uncopied-{uuid.uuid4().hex[:8]}", f"partial-{uuid.uuid4().hex[:6]}"
    create_topic(a, other, 1)
    produce(a, other, make_records("u", 5))
    committer = Consumer({"bootstrap.servers": a, "group.id": group, "enable.auto.commit": False})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(other, 0, 2)], asynchronous=False)
    finally:
        committer.close()

    code, out, err = translate(replicated, "--group", group, "--source", a, "--output", "json")
    assert code == 0, err
    assert f"{other}[0] (committed 2) cannot be translated: {other} does not exist on the target cluster" in err
    report = json.loads(out)
    assert report["untranslated"] == [[other, 0]]
    assert {(row["topic"], row["method"]) for row in report["partitions"]} == {(topic, "exact"), (other, "none")}

    code, _, err = translate(replicated, "--group", group, "--source", a, "--apply")
    assert code == 2, err
    assert f"error: group {group} committed offsets on 1 partition(s) that cannot be translated: {other}[0]" in err
    assert "--allow-partial" in err
    assert committed(b, group, topic, 1) == {}  # nothing written

    code, _, err = translate(replicated, "--group", group, "--source", a, "--apply", "--allow-partial")
    assert code == 0, err
    assert committed(b, group, topic, 1) == {0: 3}


def test_a_group_with_no_committed_offsets_on_the_source_is_an_error_naming_it(replicated: dict[str, str]) -> None:
    code, out, err = translate(replicated, "--group", "nosuch", "--source", replicated["a"], "--apply")
    assert (code, out) == (2, ""), err
    assert f"error: consumer group nosuch has no committed offsets on the source cluster at {replicated['a']} " in err
    assert "(the group does not exist there)" in err
    assert committed(replicated["b"], "nosuch", replicated["topic"], 1) == {}
