"""Incremental snapshots driven by signals while streaming continues (real broker, MongoDB test server)."""

from __future__ import annotations

import json
import re
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from bson import json_util
from pymongo import MongoClient

from tests.integration.helpers import CliProcess, decode, read_topic, run_cli, wait_until
from tests.integration.helpers_connector import Writer, collection_state, mixed_documents, replay, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]


def names() -> tuple[str, str]:
    return f"inc_{uuid.uuid4().hex[:12]}", f"p{uuid.uuid4().hex[:8]}"


def config_for(tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, db: str, prefix: str, **extra: Any) -> Path:
    return write_config(
        tmp_path,
        mongo_uri,
        kafka_bootstrap,
        db,
        prefix,
        {
            "snapshot.mode": "no_data",
            "signal.data.collection": f"{db}.signals",
            "signal.enabled.channels": "source,kafka",
            "signal.poll.interval.ms": 100,  # Kafka signals (pause, stop) act within a few chunks
            "incremental.snapshot.chunk.size": 50,
            "notification.enabled.channels": "log,sink",
            "notification.sink.topic.name": f"{prefix}.notifications",
            "collection.exclude.list": f"{db}\\.signals",
            **extra,
        },
    )


def reads(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    return [v for _, v in (decode(m) for m in read_topic(bootstrap, topic)) if v and v["op"] == "r"]


def test_incremental_snapshot_with_concurrent_writers_and_a_kill_9_replays_to_each_collection(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].a.insert_many(mixed_documents(600))
    client[db].b.insert_many([{"_id": i, "v": i} for i in range(400)])
    config = config_for(tmp_path, mongo_uri, kafka_bootstrap, db, prefix)
    writers = [Writer(mongo_uri, db, "a"), Writer(mongo_uri, db, "b")]
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        for w in writers:
            w.start()
        sent = run_cli(
            "--config",
            str(config),
            "signal",
            "send",
            "execute-snapshot",
            "--collections",
            f"{db}\\.(a|b)",
            "--output",
            "json",
        )
        assert sent.returncode == 0, sent.stderr
        wait_until(lambda: len(reads(kafka_bootstrap, f"{prefix}.{db}.a")) > 100, "incremental reads")
    finally:
        stream.proc.send_signal(signal.SIGKILL)
        stream.proc.wait(timeout=30)
    stored = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert stored and "incremental_snapshot" in stored[0]  # progress survives the crash
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("continuing incremental snapshot")
        stream.wait_for_log("completed", timeout=120)
        for w in writers:
            w.stop()
        expected = {c: collection_state(client, db, c) for c in ("a", "b")}
        for c in ("a", "b"):
            wait_until(
                lambda c=c: replay(kafka_bootstrap, f"{prefix}.{db}.{c}") == expected[c],
                f"topic {c} to replay to the collection",
                timeout=90,
            )
    finally:
        for w in writers:
            w.stop()
        assert stream.stop() == 0, stream.stderr
    markers = {v["source"]["snapshot"] for v in reads(kafka_bootstrap, f"{prefix}.{db}.b")}
    assert markers == {"incremental"}
    notes = [decode(m)[1] for m in read_topic(kafka_bootstrap, f"{prefix}.notifications")]
    kinds = [n["type"] for n in notes if n]
    assert "STARTED" in kinds and "COMPLETED" in kinds and "IN_PROGRESS" in kinds
    client.close()


def test_pause_resume_stop_through_both_channels_and_malformed_signals_are_ignored(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].big.insert_many([{"_id": i} for i in range(3000)])
    config = config_for(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, **{"incremental.snapshot.chunk.size": 20})
    topic = f"{prefix}.{db}.big"
    stream = CliProcess("--config", str(config), "stream")

    def send(*args: str) -> None:
        result = run_cli("--config", str(config), "signal", "send", *args)
        assert result.returncode == 0, result.stderr

    try:
        stream.wait_for_log("change stream open")
        # malformed signals: logged with their id, ignored, the connector keeps running
        client[db].signals.insert_one({"_id": "bad-type", "type": "explode", "data": {}})
        client[db].signals.insert_one(
            {"_id": "bad-regex", "type": "execute-snapshot", "data": {"data-collections": ["(unclosed"]}}
        )
        client[db].signals.insert_one(
            {
                "_id": "bad-filter",
                "type": "execute-snapshot",
                "data": {
                    "data-collections": [f"{db}.big"],
                    "additional-conditions": [{"data-collection": f"{db}.big", "filter": "{not json"}],
                },
            }
        )
        client[db].signals.insert_one({"_id": "empty", "type": "execute-snapshot", "data": {"data-collections": []}})
        client[db].signals.insert_one({"_id": "no-collections", "type": "execute-snapshot", "data": {"typo": 1}})
        for bad in ("'bad-type'", "'bad-regex'", "'bad-filter'", "'no-collections'"):
            stream.wait_for_log(bad)  # each malformed signal is logged, in the order they were written
        assert stream.proc.poll() is None

        send("execute-snapshot", "--collections", f"{db}\\.big", "--channel", "source")
        wait_until(lambda: len(reads(kafka_bootstrap, topic)) >= 40, "the snapshot to start")
        send("pause-snapshot", "--channel", "kafka")
        stream.wait_for_log("incremental snapshot paused")
        paused_at = len(reads(kafka_bootstrap, topic))
        client[db].big.insert_one({"_id": "while-paused"})
        wait_until(
            lambda: any(decode(m)[1] and decode(m)[1]["op"] == "c" for m in read_topic(kafka_bootstrap, topic)),
            "streaming to go on while paused",
        )
        assert len(reads(kafka_bootstrap, topic)) <= paused_at + 20  # at most the chunk in flight
        send("resume-snapshot", "--channel", "source")
        stream.wait_for_log("incremental snapshot resumed")
        wait_until(lambda: len(reads(kafka_bootstrap, topic)) > paused_at + 40, "reads after resuming")
        send("stop-snapshot", "--channel", "kafka")
        stream.wait_for_log("incremental snapshot stopped")
        stopped_at = len(reads(kafka_bootstrap, topic))
        client[db].big.insert_one({"_id": "after-stop"})
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) >= stopped_at + 2, "streaming after the stop")
        assert len(reads(kafka_bootstrap, topic)) <= stopped_at + 20
        assert stopped_at < 3000
    finally:
        assert stream.stop() == 0, stream.stderr
    assert "signal 'empty'" in stream.stderr or "does nothing" in stream.stderr
    notes = [decode(m)[1] for m in read_topic(kafka_bootstrap, f"{prefix}.notifications")]
    kinds = {n["type"] for n in notes if n}
    assert {"STARTED", "PAUSED", "RESUMED", "ABORTED"} <= kinds
    client.close()


def test_blocking_snapshot_pauses_streaming_then_resumes(tmp_path: Path, mongo_uri: str, kafka_bootstrap: str) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].blk.insert_many([{"_id": i} for i in range(200)])
    config = config_for(tmp_path, mongo_uri, kafka_bootstrap, db, prefix)
    topic = f"{prefix}.{db}.blk"
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        sent = run_cli(
            "--config",
            str(config),
            "signal",
            "send",
            "execute-snapshot",
            "--collections",
            f"{db}\\.blk",
            "--snapshot-type",
            "blocking",
        )
        assert sent.returncode == 0, sent.stderr
        stream.wait_for_log("blocking snapshot done")
        client[db].blk.insert_one({"_id": "after"})
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 201, "the reads and the later insert")
    finally:
        assert stream.stop() == 0, stream.stderr
    values = [decode(m)[1] for m in read_topic(kafka_bootstrap, topic)]
    snapshot_reads = [v for v in values if v["op"] == "r"]
    assert len(snapshot_reads) == 200
    markers = [v["source"]["snapshot"] for v in snapshot_reads]
    assert markers.count("last") == 1 and set(markers) == {"true", "last"}  # Debezium's markers
    assert [v["op"] for v in values].count("c") == 1
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert "initsync" not in offsets[0]  # the stored offset stayed a streaming position
    client.close()


@pytest.mark.parametrize("strategy", ["insert_insert", "insert_delete"])
def test_snapshot_incremental_wait_reports_completion(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, strategy: str
) -> None:
    """--wait follows the connector's notifications: the offsets, flushed every 10 minutes here, never say
    it completed; the report counts each collection's documents read and its estimated size."""
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].small.insert_many([{"_id": i, "keep": i % 2 == 0} for i in range(120)])
    client[db].big.insert_many([{"_id": i} for i in range(420)])
    config = config_for(
        tmp_path,
        mongo_uri,
        kafka_bootstrap,
        db,
        prefix,
        **{"incremental.snapshot.watermarking.strategy": strategy, "offset.flush.interval.ms": 600_000},
    )
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        result = run_cli(
            "--config",
            str(config),
            "snapshot",
            "--incremental",
            "--collections",
            f"{db}\\.small",
            "--filter",
            f'{db}.small={{"keep": true}}',
            "--wait",
            "--timeout",
            "90",
            "--output",
            "json",
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["snapshot"]["completed"] is True and report["snapshot"]["documents"] == 60
        small = report["snapshot"]["collections"][f"{db}.small"]
        assert small["documents"] == 60 and small["estimated"] == 120 and small["done"] is True
        assert "notification.enabled.channels has no 'sink'" not in result.stderr
        wait_until(lambda: len(reads(kafka_bootstrap, f"{prefix}.{db}.small")) == 60, "the filtered reads")
        table = run_cli("--config", str(config), "snapshot", "--incremental", "--collections", f"{db}\\.big",
                        "--wait", "--timeout", "90")  # fmt: skip
        assert table.returncode == 0, table.stderr
        row = next(line for line in table.stdout.splitlines() if f"{db}.big" in line)
        cells = [cell.strip() for cell in re.split("[│|]", row) if cell.strip()]
        assert cells[:3] == [f"{db}.big", "420", "420"] and cells[-1] == "done", table.stdout
        assert "{" not in table.stdout  # no dict in a table cell
        assert re.search(r"incremental snapshot \S+ completed: 420 documents in [\d.]+ s", table.stderr), table.stderr
    finally:
        assert stream.stop() == 0, stream.stderr
    ids = sorted(json_util.loads(v["after"])["_id"] for v in reads(kafka_bootstrap, f"{prefix}.{db}.small"))
    assert ids == list(range(0, 120, 2))
    bad = run_cli("--config", str(config), "snapshot", "--collections", "x")
    assert bad.returncode == 2 and "--incremental" in bad.stderr
    client.close()


def test_a_captured_signal_collection_is_streamed_as_data_with_its_watermarks(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    """As Debezium: when the include lists capture the signal collection, its signals and the watermarks an
    incremental snapshot writes there are records of its topic (and still act as signals)."""
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].small.insert_many([{"_id": i} for i in range(30)])
    config = config_for(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, **{"collection.exclude.list": ""})
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        client[db].signals.insert_one(
            {"_id": "sig-1", "type": "execute-snapshot", "data": {"data-collections": [f"{db}.small"]}}
        )
        wait_until(lambda: len(reads(kafka_bootstrap, f"{prefix}.{db}.small")) == 30, "the incremental reads")
        wait_until(
            lambda: any("close" in decode(m)[0]["id"] for m in read_topic(kafka_bootstrap, f"{prefix}.{db}.signals")),
            "a close watermark in the signal collection's topic",
        )
    finally:
        assert stream.stop() == 0, stream.stderr
    values = {k["id"]: v for k, v in (decode(m) for m in read_topic(kafka_bootstrap, f"{prefix}.{db}.signals"))}
    assert all(v is not None and v["op"] == "c" and v["source"]["snapshot"] == "false" for v in values.values())
    assert values.pop('"sig-1"')["after"] == (
        '{"_id": "sig-1","type": "execute-snapshot","data": {"data-collections": ["' + db + '.small"]}}'
    )
    kinds = [json_util.loads(v["after"])["type"] for v in values.values()]
    assert kinds and set(kinds) == {"snapshot-window-open", "snapshot-window-close"}
    assert kinds.count("snapshot-window-open") == kinds.count("snapshot-window-close")
    client.close()
