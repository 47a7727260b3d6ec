"""``mongocdc offsets show|reset|set`` as a process, over a SQLite file and over a Kafka topic."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bson
import pytest

from mongocdc.offsets.base import OffsetStore
from mongocdc.offsets.kafka import KafkaOffsetStore, record_key
from mongocdc.offsets.sqlite import SqliteOffsetStore
from tests.integration.helpers import REPO, cli_env, read_topic, run_cli

TOKEN = "8263A1B2C3000000012B022C0100296E5A1004"
RS0 = {"sec": 1769860800, "ord": 3, "resume_token": base64.b64encode(bson.encode({"_data": "82AA"})).decode()}
RS1 = {"sec": 1769860900, "ord": 1, "resume_token": None}


@dataclass
class Target:
    """One offset store as the CLI addresses it (``args``) and as the test reads it (``open``)."""

    kind: str
    args: list[str]
    path: Path | None = None
    topic: str | None = None
    bootstrap: str | None = None

    def open(self) -> OffsetStore:
        if self.path is not None:
            return SqliteOffsetStore(self.path)
        assert self.topic is not None and self.bootstrap is not None
        return KafkaOffsetStore({"bootstrap.servers": self.bootstrap}, self.topic, partitions=3, timeout_s=20)

    def stored(self) -> dict[str, dict[str, Any]]:
        store = self.open()
        try:
            return {r.partition: dict(r.offset) for r in store.records("app")}
        finally:
            store.close()

    def seed(self) -> None:
        store = self.open()
        try:
            store.commit("app", "rs0", RS0)
            store.commit("app", "rs1", RS1)
            store.commit("other", "rs0", RS1)
        finally:
            store.close()


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("kafka", id="kafka", marks=pytest.mark.kafka),
    ]
)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        path = tmp_path / "offsets.db"
        found = Target("sqlite", ["--offsets", f"sqlite:{path}", "--name", "app"], path=path)
    else:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        topic = f"offsets-{uuid.uuid4().hex[:10]}"
        args = ["--offsets", f"kafka:{topic}", "--bootstrap-servers", bootstrap, "--name", "app"]
        found = Target("kafka", args, topic=topic, bootstrap=bootstrap)
    found.seed()
    yield found


def offsets(target: Target, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("offsets", *args, *target.args)


def without_terminal(target: Target, *args: str) -> subprocess.CompletedProcess[str]:
    """Like ``run_cli`` with stdin from /dev/null, as under cron or in a pipeline."""
    return subprocess.run(
        [sys.executable, "-m", "mongocdc", "offsets", *args, *target.args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
        cwd=REPO,
        check=False,
    )


def test_show_lists_the_connector_partitions(target: Target) -> None:
    result = offsets(target, "show", "--output", "json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert [(s["connector"], s["partition"], s["sec"], s["ord"]) for s in shown] == [
        ("app", "rs0", 1769860800, 3),
        ("app", "rs1", 1769860900, 1),
    ]
    table = offsets(target, "show")
    assert table.returncode == 0 and "82AA" in table.stdout and "rs1" in table.stdout


def test_reset_deletes_one_partition_then_all(target: Target) -> None:
    result = offsets(target, "reset", "--partition", "rs1", "--yes", "--output", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"connector": "app", "partition": "rs1", "action": "deleted", "before": RS1, "after": None}
    ]
    assert target.stored() == {"rs0": RS0}
    result = offsets(target, "reset", "--yes")
    assert result.returncode == 0, result.stderr
    assert "rs0" in result.stdout and "deleted" in result.stdout
    assert target.stored() == {}
    other = run_cli("offsets", "show", "--all", "--output", "json", *target.args)
    assert [(s["connector"], s["partition"]) for s in json.loads(other.stdout)] == [("other", "rs0")]
    if target.topic is not None:  # a delete is a tombstone in the topic
        assert target.bootstrap is not None
        key = record_key("app", "rs1")
        written = [m for m in read_topic(target.bootstrap, target.topic, timeout=30) if m.key() == key]
        assert written[-1].value() is None


def test_reset_to_a_timestamp_moves_every_partition(target: Target) -> None:
    result = offsets(target, "reset", "--to-timestamp", "2026-01-01T00:00:00Z", "--yes", "--output", "json")
    assert result.returncode == 0, result.stderr
    after = {"sec": 1767225600, "ord": 0, "resume_token": None}
    assert [(c["partition"], c["action"], c["after"]) for c in json.loads(result.stdout)] == [
        ("rs0", "moved", after),
        ("rs1", "moved", after),
    ]
    assert target.stored() == {"rs0": after, "rs1": after}
    result = offsets(target, "reset", "--to-timestamp", "1700000000", "--partition", "rs1", "--yes")
    assert result.returncode == 0, result.stderr
    assert "moved" in result.stdout and "2023-11-14" in result.stdout  # the table shows the new position's time
    assert target.stored()["rs1"] == {"sec": 1700000000, "ord": 0, "resume_token": None}


def test_set_stores_the_token_and_takes_sec_and_ord_from_it(target: Target) -> None:
    result = offsets(target, "set", "--resume-token", TOKEN.lower(), "--partition", "rs1", "--yes", "-o", "json")
    assert result.returncode == 0, result.stderr
    token = base64.b64encode(bson.encode({"_data": TOKEN})).decode()
    expected = {"sec": 0x63A1B2C3, "ord": 1, "resume_token": token}  # TOKEN's cluster time
    (change,) = json.loads(result.stdout)
    assert change["before"] == RS1 and change["after"] == {**expected, "resume_token": TOKEN}  # shown as hex
    assert target.stored() == {"rs0": RS0, "rs1": expected}
    shown = json.loads(offsets(target, "show", "-o", "json").stdout)
    assert [r["resume_token"] for r in shown] == ["82AA", TOKEN]
    as_json = json.dumps({"_data": TOKEN[:10]})
    result = offsets(target, "set", "--resume-token", as_json, "--partition", "rs0", "--yes")
    assert result.returncode == 0, result.stderr
    assert target.stored()["rs0"]["resume_token"] == base64.b64encode(bson.encode({"_data": TOKEN[:10]})).decode()


def test_set_with_several_partitions_needs_one(target: Target) -> None:
    result = offsets(target, "set", "--resume-token", TOKEN, "--yes")
    assert result.returncode == 2
    assert "rs0, rs1" in result.stderr and "--partition" in result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["reset"],
        ["reset", "--to-timestamp", "2026-01-01T00:00:00Z"],
        ["set", "--resume-token", TOKEN, "--partition", "rs0"],
    ],
)
def test_without_yes_and_no_terminal_exit_2_and_nothing_changes(target: Target, argv: list[str]) -> None:
    result = without_terminal(target, *argv)
    assert result.returncode == 2, result.stderr
    assert "error: refusing to change offsets" in result.stderr and "pass --yes" in result.stderr
    assert result.stdout == ""
    assert target.stored() == {"rs0": RS0, "rs1": RS1}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["reset", "--to-timestamp", "last tuesday"], "--to-timestamp 'last tuesday' is not a time"),
        (["reset", "--to-timestamp", "1769860800000"], "out of range"),
        (["set", "--resume-token", "zz-not-hex", "--partition", "rs0"], "--resume-token 'zz-not-hex'"),
        (["set", "--resume-token", '{"_data": ', "--partition", "rs0"], "not valid extended JSON"),
        (["set", "--resume-token", "deadbeef", "--partition", "rs0"], "is not a MongoDB change stream resume token"),
    ],
)
def test_bad_timestamp_or_token_is_exit_2_and_nothing_changes(target: Target, argv: list[str], says: str) -> None:
    result = offsets(target, *argv, "--yes")
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "hint: " in result.stderr
    assert target.stored() == {"rs0": RS0, "rs1": RS1}


def test_unreachable_kafka_store_exits_4(tmp_path: Path) -> None:
    config = tmp_path / "fast.yaml"
    config.write_text("connect.max.attempts: 1\nconnect.timeout.ms: 500\n")
    result = run_cli(
        "--config",
        str(config),
        "offsets",
        "show",
        "--offsets",
        "kafka:offsets",
        "--bootstrap-servers",
        "127.0.0.1:9",
    )
    assert result.returncode == 4, result.stderr
    assert "error: Kafka at 127.0.0.1:9 is unreachable" in result.stderr
    assert "hint: check kafka.bootstrap.servers" in result.stderr


@pytest.mark.kafka
def test_switching_from_sqlite_to_kafka_as_the_readme_shows(tmp_path: Path, kafka_bootstrap: str) -> None:
    path = tmp_path / "offsets.db"
    old = Target("sqlite", ["--offsets", f"sqlite:{path}", "--name", "app"], path=path)
    old.seed()
    topic = f"offsets-{uuid.uuid4().hex[:10]}"
    new = Target(
        "kafka",
        ["--offsets", f"kafka:{topic}", "--bootstrap-servers", kafka_bootstrap, "--name", "app"],
        topic=topic,
        bootstrap=kafka_bootstrap,
    )
    shown = offsets(old, "show", "--output", "json")
    assert shown.returncode == 0, shown.stderr
    for record in json.loads(shown.stdout):
        moved = offsets(new, "reset", "--partition", record["partition"], "--to-timestamp", str(record["sec"]), "--yes")
        assert moved.returncode == 0, moved.stderr
        if record["resume_token"]:
            token = record["resume_token"]
            result = offsets(new, "set", "--partition", record["partition"], "--resume-token", token, "--yes")
            assert result.returncode == 0, result.stderr
    assert new.stored() == {"rs0": {**RS0, "ord": 0}, "rs1": {**RS1, "ord": 0}}


@pytest.mark.kafka
def test_reading_a_missing_offsets_topic_is_exit_3_and_creates_no_topic(kafka_bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient

    topic = f"offsets-{uuid.uuid4().hex[:10]}"
    missing = Target("kafka", ["--offsets", f"kafka:{topic}", "--bootstrap-servers", kafka_bootstrap, "--name", "app"])
    for argv in (["show"], ["show", "--all"], ["reset", "--yes"]):
        result = offsets(missing, *argv)
        assert result.returncode == 3, result.stderr
        assert f"error: the offset store kafka:{topic} on {kafka_bootstrap} does not exist" in result.stderr
        assert "hint: check offset.storage.topic" in result.stderr
    assert topic not in AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=20).topics
