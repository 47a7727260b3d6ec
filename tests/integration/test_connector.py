"""The complete connector against the real broker and the MongoDB test server: snapshots with concurrent
writes, kill -9 during snapshot and streaming, heartbeats, metrics, per-shard streams and Kafka outages."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import signal
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from bson import Decimal128, json_util
from confluent_kafka.admin import AdminClient
from pymongo import MongoClient

from mongocdc.events.java import java_hashmap_order
from tests.integration.helpers import (
    CliProcess,
    TopicSize,
    decode,
    murmur2_partition,
    read_topic,
    run_cli,
    wait_until,
)
from tests.integration.helpers_connector import Writer, collection_state, mixed_documents, replay, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]


def names() -> tuple[str, str]:
    return f"it_{uuid.uuid4().hex[:12]}", f"p{uuid.uuid4().hex[:8]}"


def test_snapshot_then_streaming_with_concurrent_writes_replays_to_each_collection(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].mixed.insert_many(mixed_documents(500))
    client[db].plain.insert_many([{"_id": i, "v": Decimal128("1.5")} for i in range(300)])
    config = write_config(
        tmp_path, mongo_uri, kafka_bootstrap, db, prefix, snapshot_fetch_size=64, snapshot_max_threads=2
    )
    writer = Writer(mongo_uri, db, "plain")
    writer.start()
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("snapshot completed")
        wait_until(lambda: writer.count > 50, "concurrent writes")
        writer.stop()
        expected = {c: collection_state(client, db, c) for c in ("mixed", "plain")}
        wait_until(
            lambda: replay(kafka_bootstrap, f"{prefix}.{db}.plain") == expected["plain"],
            "the plain topic to replay to the collection",
            timeout=90,
        )
    finally:
        writer.stop()
        code = stream.stop()
    assert code == 0, stream.stderr
    assert replay(kafka_bootstrap, f"{prefix}.{db}.mixed") == expected["mixed"]
    # Debezium's markers: every read "true" but the very last of the whole snapshot, "last" (here in
    # "plain", the last collection in name order); reads carry ord -1, no wallTime and the time of the read.
    reads = {
        c: [v for m in read_topic(kafka_bootstrap, f"{prefix}.{db}.{c}") if (v := decode(m)[1]) and v["op"] == "r"]
        for c in ("mixed", "plain")
    }
    assert [v["source"]["snapshot"] for v in reads["mixed"]] == ["true"] * 500
    plain_markers = [v["source"]["snapshot"] for v in reads["plain"]]
    # (the scan may also read documents the writer inserted while it ran)
    assert len(plain_markers) >= 300 and plain_markers.count("last") == 1 and set(plain_markers) == {"true", "last"}
    all_reads = reads["mixed"] + reads["plain"]
    assert {(v["source"]["ord"], v["source"]["wallTime"]) for v in all_reads} == {(-1, None)}
    assert all(v["source"]["ts_ms"] <= v["ts_ms"] for v in all_reads)
    assert len({v["source"]["ts_ms"] for v in all_reads}) > 1  # the time of each read, not one start time
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert len(offsets) == 1 and "initsync" not in offsets[0]
    client.close()


def test_kill_9_during_snapshot_then_restart_loses_nothing(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    total = 20_000  # large enough that the kill lands long before the snapshot's end
    client[db].big.insert_many([{"_id": i, "pad": "y" * 200} for i in range(total)])
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, snapshot_fetch_size=50)
    topic = f"{prefix}.{db}.big"
    stream = CliProcess("--config", str(config), "stream")
    try:
        with TopicSize(kafka_bootstrap, topic) as size:
            wait_until(lambda: size() >= 200, "part of the snapshot in Kafka", interval=0.01)
    finally:
        stream.proc.send_signal(signal.SIGKILL)
        stream.proc.wait(timeout=30)
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert offsets and offsets[0].get("initsync") is True  # the snapshot was interrupted
    client[db].big.insert_one({"_id": "after-crash"})
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("snapshot completed", timeout=120)
        expected = collection_state(client, db, "big")
        wait_until(lambda: replay(kafka_bootstrap, topic) == expected, "the topic to replay to the collection")
    finally:
        assert stream.stop() == 0, stream.stderr
    assert "continuing the interrupted snapshot" in stream.stderr
    ids = [decode(m)[0]["id"] for m in read_topic(kafka_bootstrap, topic)]
    assert len(ids) < 2 * (total + 1)  # resumed from its progress, not started over
    client.close()


def test_snapshot_command_without_a_terminal_interrupted_then_resumed_reports_real_seconds_and_rates(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    """stderr a pipe: plain log lines, never a bar; SIGINT mid-snapshot: a summary with the seconds the
    scan ran and its rate (it said 0.0 s and "-"), and one line saying so; the resumed run ends in one line."""
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    total = 20_000
    client[db].big.insert_many([{"_id": i, "pad": "y" * 200} for i in range(total)])
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, snapshot_fetch_size=50)
    topic = f"{prefix}.{db}.big"
    snapshot = CliProcess("--config", str(config), "snapshot")
    with TopicSize(kafka_bootstrap, topic) as size:
        wait_until(lambda: size() >= 200, "part of the snapshot in Kafka", interval=0.01)
    assert snapshot.stop(signal.SIGINT) == 130, snapshot.stderr
    row = next(line for line in snapshot.stdout_lines if f"{db}.big" in line)
    cells = [cell.strip() for cell in re.split("[│|]", row) if cell.strip()]
    assert cells[0] == f"{db}.big" and cells[-1] == "not finished", row
    documents, seconds, rate = int(cells[1]), float(cells[2]), float(cells[3].replace(",", ""))
    assert 0 < documents < total and seconds > 0 and rate > 0, row
    interrupted = [line for line in snapshot.stderr_lines if "snapshot interrupted after" in line]
    assert len(interrupted) == 1 and re.search(r"[\d,]+ documents in [\d.]+ s \([\d,]+ docs/s\)", interrupted[0])
    assert "━" not in snapshot.stderr and "\r" not in snapshot.stderr  # no bar, no redraw

    resumed = run_cli("--config", str(config), "snapshot")
    assert resumed.returncode == 0, resumed.stderr
    ends = [line for line in resumed.stderr.splitlines() if "snapshot completed" in line]
    assert len(ends) == 1 and "docs/s" in ends[0] and "read before the interruption" in ends[0], resumed.stderr
    assert "━" not in resumed.stderr and "\r" not in resumed.stderr
    client.close()


def test_kill_9_during_streaming_then_restart_loses_nothing(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, offset_flush_interval_ms=200)
    topic = f"{prefix}.{db}.orders"
    stream = CliProcess("--config", str(config), "stream")
    writer = Writer(mongo_uri, db, "orders")
    try:
        stream.wait_for_log("change stream open")
        writer.start()
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) > 100, "streamed changes")
    finally:
        stream.proc.send_signal(signal.SIGKILL)
        stream.proc.wait(timeout=30)
    wait_until(lambda: writer.count > 200, "writes while mongocdc is down")
    writer.stop()
    stream = CliProcess("--config", str(config), "stream")
    try:
        expected = collection_state(client, db, "orders")
        wait_until(lambda: replay(kafka_bootstrap, topic) == expected, "the topic to replay to the collection")
    finally:
        assert stream.stop() == 0, stream.stderr
    client.close()


def test_heartbeats_and_prometheus_metrics(tmp_path: Path, mongo_uri: str, kafka_bootstrap: str) -> None:
    db, prefix = names()
    from tests.services.mongo import free_port

    port = free_port()
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, heartbeat_interval_ms=300)
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    stream = CliProcess("--config", str(config), "stream", "--metrics-port", str(port), "--output", "json")
    try:
        stream.wait_for_log("change stream open")
        client[db].c.insert_one({"_id": 1})
        client[db].c.delete_one({"_id": 1})
        wait_until(lambda: len(read_topic(kafka_bootstrap, f"__debezium-heartbeat.{prefix}")) >= 2, "heartbeats")

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:  # noqa: S310
                return str(response.read().decode())

        wait_until(lambda: 'op="delete"' in scrape() and "} 1" in scrape(), "the metrics to count the events")
        for probe in ("health", "ready"):  # the probes, next to the metrics
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{probe}", timeout=5) as answer:  # noqa: S310
                assert answer.status == 200
                assert json.loads(answer.read())["status"] == ("up" if probe == "health" else "ready")
        text = scrape()
        assert f'mongocdc_events_total{{connector="it-{prefix}"' in text
        assert "mongocdc_milliseconds_behind_source" in text
    finally:
        assert stream.stop() == 0, stream.stderr
        client.close()
    heartbeats = read_topic(kafka_bootstrap, f"__debezium-heartbeat.{prefix}")
    key, value = decode(heartbeats[0])
    assert key == {"serverName": prefix} and isinstance(value, dict) and value["ts_ms"] > 0
    # as Debezium: all on partition 0 (of the broker's default 3), as {"ts_ms":…} without headers
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    assert len(topics[f"__debezium-heartbeat.{prefix}"].partitions) == 3
    assert {m.partition() for m in heartbeats} == {0} and all(not m.headers() for m in heartbeats)
    assert all(m.key() == b'{"serverName":"%s"}' % prefix.encode() for m in heartbeats)
    assert all(re.fullmatch(rb'\{"ts_ms":\d+\}', m.value()) for m in heartbeats)
    status = [json.loads(line) for line in stream.stdout_lines if line.startswith("{")]
    assert any("metrics" in s for s in status)
    # JSON lines, each an object with its status: the status lines, the initial snapshot's summary, the stop
    assert len(status) == len([line for line in stream.stdout_lines if line.strip()])
    assert {s["status"] for s in status[:-2]} == {"streaming"}
    assert status[-2]["status"] == "snapshot" and status[-2]["completed"] is True
    assert status[-1]["status"] == "stopped"


def test_per_shard_streams_share_topics_keep_offsets_per_replica_set_and_follow_shards_joining_and_leaving(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    """mongodb.connection.mode=replica_set against a config server stand-in (tests/services/sharded.py)."""
    from tests.services.sharded import ShardedCluster

    db, prefix = names()
    with ShardedCluster(shards=2, data_dir=tmp_path / "cluster") as cluster:
        config = write_config(
            tmp_path,
            cluster.config_uri,
            kafka_bootstrap,
            db,
            prefix,
            mongodb_connection_mode="replica_set",
            mongodb_poll_interval_ms=300,
        )
        topic = f"{prefix}.{db}.orders"
        clients = {name: MongoClient(cluster.uri_of(server)) for name, server in cluster.shards.items()}
        for i, client in enumerate(clients.values()):
            client[db].orders.insert_one({"_id": f"snap{i}"})  # copied by each shard's snapshot
        stream = CliProcess("--config", str(config), "stream")
        stop_later = contextlib.ExitStack()
        try:
            wait_until(lambda: stream.stderr.count("change stream open") == 2, "both shard streams", timeout=90)
            for i, client in enumerate(clients.values()):
                client[db].orders.insert_one({"_id": f"live{i}"})
            wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 4, "events of both shards in one topic")
            added = cluster.add_shard()
            new_client: MongoClient[dict[str, Any]] = MongoClient(cluster.uri_of(added))
            wait_until(lambda: stream.stderr.count("change stream open") == 3, "the new shard's stream", timeout=90)
            new_client[db].orders.insert_one({"_id": "on-new-shard"})
            wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 5, "the new shard's events")
            new_client.close()
            removed = cluster.shards["shard00"]
            cluster.remove_shard("shard00", stop_server=False)  # removeShard completed; its server still runs
            stop_later.callback(removed.stop)
            wait_until(lambda: "shard00-rs left: its task stops" in stream.stderr, "the removed shard's task to end")
            clients["shard01"][db].orders.insert_one({"_id": "after-shard00-left"})
            wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 6, "a change of a shard still in the cluster")
            assert stream.proc.poll() is None
        finally:
            code = stream.stop()
            for client in clients.values():
                client.close()
            stop_later.close()
        assert code == 0, stream.stderr
    records = [decode(m) for m in read_topic(kafka_bootstrap, topic)]
    by_id = {json.loads(k["id"]): v for k, v in records}
    assert set(by_id) == {"snap0", "snap1", "live0", "live1", "on-new-shard", "after-shard00-left"}
    # Debezium 3.6's source has no `rs`: each shard's own snapshot shows in its markers (one document per
    # shard, so each is the `last` read of a snapshot of its own), the shards' streams in the offsets below.
    assert all("rs" not in v["source"] for v in by_id.values())
    assert [(by_id[i]["op"], by_id[i]["source"]["snapshot"]) for i in ("snap0", "snap1")] == [("r", "last")] * 2
    assert {by_id[i]["op"] for i in ("live0", "live1", "on-new-shard", "after-shard00-left")} == {"c"}
    assert {by_id[i]["source"]["snapshot"] for i in ("live0", "live1", "on-new-shard")} == {"false"}
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert sorted(o["partition"] for o in offsets) == ["shard00-rs", "shard01-rs", "shard02-rs"]


def test_kafka_outage_while_streaming_loses_nothing_and_a_long_one_exits_4(tmp_path: Path, mongo_uri: str) -> None:
    from tests.services.kafka import KafkaBroker

    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    with KafkaBroker(num_partitions=1, data_dir=tmp_path / "kafka") as broker:
        config = write_config(tmp_path, mongo_uri, broker.bootstrap, db, prefix, kafka_message_timeout_ms=60000)
        topic = f"{prefix}.{db}.c"
        stream = CliProcess("--config", str(config), "stream")
        try:
            stream.wait_for_log("change stream open")
            client[db].c.insert_one({"_id": "before"})
            wait_until(lambda: len(read_topic(broker.bootstrap, topic)) == 1, "the first event")
            broker.halt()
            client[db].c.insert_many([{"_id": f"during{i}"} for i in range(20)])
            broker.start()
            wait_until(lambda: len(read_topic(broker.bootstrap, topic)) == 21, "events buffered during the outage")
            assert stream.proc.poll() is None
        finally:
            assert stream.stop() == 0, stream.stderr
        ids = [json.loads(decode(m)[0]["id"]) for m in read_topic(broker.bootstrap, topic)]
        assert ids == ["before"] + [f"during{i}" for i in range(20)]

        # an outage longer than kafka.message.timeout.ms: exit 4, nothing committed past what Kafka acknowledged
        config = write_config(tmp_path, mongo_uri, broker.bootstrap, db, prefix, kafka_message_timeout_ms=2000)
        stream = CliProcess("--config", str(config), "stream")
        try:
            stream.wait_for_log("change stream open")
            broker.halt()
            client[db].c.insert_one({"_id": "lost-connection"})
            assert stream.proc.wait(timeout=60) == 4, stream.stderr
        finally:
            stream.kill()
        assert "did not acknowledge" in stream.stderr
        broker.start()
        # the unacknowledged change was not committed: the restart delivers it
        stream = CliProcess("--config", str(config), "stream")
        try:
            wait_until(lambda: len(read_topic(broker.bootstrap, topic)) == 22, "the event after the restart")
        finally:
            assert stream.stop() == 0, stream.stderr
    client.close()


def test_snapshot_command_with_filters_field_rules_and_skipped_operations(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].users.insert_many(
        [
            {"_id": i, "name": f"u{i}", "secret": "pw", "address": {"zip": "1000", "city": "x"}, "active": i % 2 == 0}
            for i in range(10)
        ]
    )
    config = write_config(
        tmp_path,
        mongo_uri,
        kafka_bootstrap,
        db,
        prefix,
        {
            "database.include.list": f"{db},{db}_missing",
            "snapshot.collection.filter.overrides": f"{db}.users",
            f"snapshot.collection.filter.overrides.{db}.users": '{"active": true}',
            "field.exclude.list": f"{db}.users.secret",
            "field.renames": f"{db}.users.address.zip:postcode",
            "skipped.operations": "d",
        },
    )
    result = run_cli("--config", str(config), "snapshot", "--output", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["completed"] is True and summary["collections"][f"{db}.users"]["documents"] == 5
    assert f"'{db}_missing' matches no database" in result.stderr
    topic = f"{prefix}.{db}.users"
    docs = [json_util.loads(decode(m)[1]["after"]) for m in read_topic(kafka_bootstrap, topic)]
    assert sorted(d["_id"] for d in docs) == [0, 2, 4, 6, 8]  # the snapshot filter
    assert all("secret" not in d and d["address"] == {"postcode": "1000", "city": "x"} for d in docs)
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert "initsync" not in offsets[0]  # completed: a later `stream` continues from the recorded position

    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        client[db].users.delete_one({"_id": 0})  # skipped: d
        client[db].users.update_one({"_id": 2}, {"$set": {"secret": "new", "name": "renamed"}})
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 6, "the update")
    finally:
        assert stream.stop() == 0, stream.stderr
    values = [decode(m)[1] for m in read_topic(kafka_bootstrap, topic)]
    assert [v["op"] for v in values].count("d") == 0
    update = next(v for v in values if v["op"] == "u")
    assert json.loads(update["updateDescription"]["updatedFields"]) == {"name": "renamed"}
    assert "secret" not in update["after"]
    client.close()


def test_wrong_credentials_and_missing_privileges_are_configuration_errors(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    """Found only at connect time, reported as exit 3 with the fix, never as a traceback."""
    from tests.services.sharded import ShardedCluster

    with ShardedCluster(shards=1, data_dir=tmp_path / "c", credentials=("cdc", "right-pw")) as cluster:
        server = next(iter(cluster.shards.values()))
        good = cluster.uri_of(server)
        wrong = good.replace("right-pw", "wrong-pw")
        result = run_cli("discover", "--connection-string", wrong)
        assert result.returncode == 3, result.stderr
        assert "refused the credentials" in result.stderr and "wrong-pw" not in result.stderr
        assert "Traceback" not in result.stderr

        admin: MongoClient[dict[str, Any]] = MongoClient(good)
        admin["admin"].command("createUser", "weak", pwd="weak-pw", roles=[])
        admin.close()
        weak = good.replace("cdc:right-pw", "weak:weak-pw")
        db, prefix = names()
        config = write_config(tmp_path, weak, kafka_bootstrap, db, prefix)
        result = run_cli("--config", str(config), "snapshot")
        assert result.returncode == 3, result.stderr
        assert "error: the MongoDB user may not" in result.stderr and "hint: grant" in result.stderr
        assert "Traceback" not in result.stderr and "weak-pw" not in result.stderr


def test_transaction_metadata_for_a_multi_collection_transaction(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db, prefix = names()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    client[db].orders.insert_one({"_id": "seed"})
    client[db].lines.insert_one({"_id": "seed"})
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, {"provide.transaction.metadata": True})
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        with client.start_session() as session, session.start_transaction():
            client[db].orders.insert_one({"_id": 1}, session=session)
            client[db].lines.insert_one({"_id": 10}, session=session)
            client[db].lines.insert_one({"_id": 11}, session=session)
            session_id = session.session_id["id"]
        wait_until(lambda: len(read_topic(kafka_bootstrap, f"{prefix}.{db}.lines")) == 3, "the transaction's events")
        # as Debezium: no END while the stream is idle (mongocdc polls every 200 ms here) ...
        time.sleep(2)
        assert len(read_topic(kafka_bootstrap, f"{prefix}.transaction")) == 1
        client[db].orders.insert_one({"_id": "after"})  # ... but when the next change arrives
        wait_until(lambda: len(read_topic(kafka_bootstrap, f"{prefix}.transaction")) == 2, "BEGIN and END")
    finally:
        assert stream.stop() == 0, stream.stderr
    messages = read_topic(kafka_bootstrap, f"{prefix}.transaction")
    begin, end = (decode(m)[1] for m in messages)
    assert (begin["status"], end["status"]) == ("BEGIN", "END")
    assert [decode(m)[0] for m in messages] == [{"id": begin["id"]}] * 2
    assert {m.partition() for m in messages} == {murmur2_partition(messages[0].key(), 3)}
    # the transaction id is the session document in Java's strict JSON, then the transaction number
    lsid = '{"id": {"$binary": "' + base64.b64encode(session_id).decode() + '","$type": "04"}}'
    assert begin["id"] == end["id"] and end["id"].startswith(lsid + ":")
    assert end["event_count"] == 3 and begin["event_count"] is None and begin["data_collections"] is None
    collections = [(c["data_collection"], c["event_count"]) for c in end["data_collections"]]
    assert sorted(collections) == [(f"{db}.lines", 2), (f"{db}.orders", 1)]
    assert [c for c, _ in collections] == java_hashmap_order([f"{db}.orders", f"{db}.lines"])
    values = [decode(m)[1] for t in ("orders", "lines") for m in read_topic(kafka_bootstrap, f"{prefix}.{db}.{t}")]
    in_txn = [v for v in values if v["op"] == "c" and v["transaction"]]  # the seeds are snapshot reads
    after = next(v for v in values if v["op"] == "c" and v["transaction"] is None)
    assert sorted(v["transaction"]["total_order"] for v in in_txn) == [1, 2, 3]
    assert all(v["transaction"]["id"] == end["id"] for v in in_txn)
    assert {(v["source"]["lsid"], v["source"]["txnNumber"]) for v in in_txn} == {(lsid, int(end["id"].split(":")[-1]))}
    assert after["source"]["lsid"] is None and after["source"]["txnNumber"] is None
    # BEGIN at the transaction's time, END at the time of the change that ended it
    assert begin["ts_ms"] == in_txn[0]["source"]["ts_ms"] and end["ts_ms"] == after["source"]["ts_ms"]
    client.close()
