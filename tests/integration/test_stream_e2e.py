"""End to end: MongoDB test server → `mongocdc stream` → real Kafka broker, stop with SIGTERM, resume."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId, json_util
from pymongo import MongoClient

from mongocdc import __version__
from tests.integration.helpers import CliProcess, decode, murmur2_partition, read_topic, run_cli, wait_until
from tests.integration.helpers_connector import topic_counts, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]

PARTITIONS = 3


def test_stream_stop_resume_delivers_every_change_exactly_once(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db_name, prefix)
    customers_topic, orders_topic = f"{prefix}.{db_name}.customers", f"{prefix}.{db_name}.orders"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    db = client[db_name]
    oid = ObjectId()
    # (topic, op, _id) in commit order: the expected change log
    expected: list[tuple[str, str, Any]] = []

    stream = CliProcess("--config", str(config), "stream", "--output", "json")
    try:
        stream.wait_for_log("change stream open")
        db.customers.insert_one({"_id": 1001, "name": "Sally", "tags": ["a", "b", "c"]})
        db.customers.insert_one({"_id": oid, "name": "George"})
        db.customers.insert_one({"_id": "str-id", "name": "Edward"})
        db.customers.update_one({"_id": 1001}, {"$set": {"email": "sally@example.com"}, "$unset": {"tags": ""}})
        db.customers.replace_one({"_id": oid}, {"name": "George W"})
        db.customers.delete_one({"_id": "str-id"})
        db.orders.insert_many([{"_id": i, "qty": i} for i in range(1, 4)])
        db.orders.update_one({"_id": 2}, {"$inc": {"qty": 10}})
        db.orders.delete_one({"_id": 3})
        db.skipped.insert_one({"_id": 1})
        expected += [
            (customers_topic, "c", 1001),
            (customers_topic, "c", oid),
            (customers_topic, "c", "str-id"),
            (customers_topic, "u", 1001),
            (customers_topic, "u", oid),
            (customers_topic, "d", "str-id"),
            (orders_topic, "c", 1),
            (orders_topic, "c", 2),
            (orders_topic, "c", 3),
            (orders_topic, "u", 2),
            (orders_topic, "d", 3),
        ]
        wait_until(
            lambda: topic_counts(kafka_bootstrap, [customers_topic, orders_topic]) == [7, 6],
            "the first changes in Kafka",
        )
    finally:
        code = stream.stop(signal.SIGTERM)
    assert code == 0, stream.stderr
    final = json.loads(stream.stdout_lines[-1])
    assert final["status"] == "stopped"
    assert final["events"] == {"c": 6, "u": 3, "d": 2, "r": 0}
    assert final["tombstones"] == 2

    shown = run_cli("--config", str(config), "offsets", "show", "--output", "json")
    assert shown.returncode == 0, shown.stderr
    offsets = json.loads(shown.stdout)
    assert len(offsets) == 1
    assert offsets[0]["connector"] == f"it-{prefix}"
    assert offsets[0]["sec"] > 0 and offsets[0]["resume_token"]

    # Changes made while mongocdc is stopped are picked up from the stored offset.
    db.customers.insert_one({"_id": 1003, "name": "Anne"})
    db.customers.update_one({"_id": 1001}, {"$set": {"name": "Sally K"}})
    db.orders.delete_one({"_id": 1})
    expected += [(customers_topic, "c", 1003), (customers_topic, "u", 1001), (orders_topic, "d", 1)]

    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("resuming")
        wait_until(
            lambda: topic_counts(kafka_bootstrap, [customers_topic, orders_topic]) == [9, 8],
            "the changes made while stopped",
        )
        db.orders.insert_one({"_id": 9, "qty": 9})
        expected.append((orders_topic, "c", 9))
        wait_until(
            lambda: topic_counts(kafka_bootstrap, [customers_topic, orders_topic]) == [9, 9],
            "a change made after the restart",
        )
    finally:
        code = stream.stop(signal.SIGTERM)
    assert code == 0, stream.stderr
    marker = "mongocdc.stream: "
    said = [line.split(marker)[1] for line in stream.stderr.splitlines() if f"{marker}streamed" in line]
    assert said and said[-1] == "streamed 4 events (c=2 u=1 d=1 r=0), 1 commit"  # the stop's count, said once
    assert all(a != b for a, b in zip(said, said[1:], strict=False)), said  # an unchanged status is not repeated
    client.close()

    records = read_topic(kafka_bootstrap, customers_topic) + read_topic(kafka_bootstrap, orders_topic)
    data = [(m, *decode(m)) for m in records]
    seen = [(m.topic(), value["op"], json_util.loads(key["id"])) for m, key, value in data if value is not None]
    # exactly once: the same multiset of changes, and per key the same order as MongoDB committed them
    assert sorted(map(repr, seen)) == sorted(map(repr, expected))
    for key in {repr(k) for _, _, k in expected}:
        assert [op for _, op, k in seen if repr(k) == key] == [op for _, op, k in expected if repr(k) == key]
    assert read_topic(kafka_bootstrap, f"{prefix}.{db_name}.skipped") == []

    for msg, key, value in data:
        assert msg.partition() == murmur2_partition(msg.key(), PARTITIONS)
        assert set(key) == {"id"}
        if value is None:
            continue
        check_envelope(msg.topic(), value, prefix, db_name)

    by_key = {(m.topic(), m.key()): [] for m, _, _ in data}
    for m, _, value in data:
        by_key[(m.topic(), m.key())].append((m.offset(), value))
    for records_of_key in by_key.values():
        for (offset, value), following in zip(records_of_key, records_of_key[1:] + [(None, "end")], strict=True):
            if value is not None and value["op"] == "d":
                assert following[1] is None and following[0] == offset + 1, "a tombstone follows each delete"

    # Debezium's text, byte for byte: keys in relaxed JSON, `after` in Java's strict JSON with compact spacing,
    # `updatedFields` in relaxed JSON with ", ", empty removedFields/truncatedArrays null
    oid_json = '{"$oid": "' + str(oid) + '"}'
    keys = {m.key() for m, _, _ in data}
    assert {
        b'{"id":"1001"}',
        b'{"id":"\\"str-id\\""}',
        b'{"id":"' + oid_json.replace('"', '\\"').encode() + b'"}',
    } <= keys
    inserts = {json_util.loads(k["id"]): v["after"] for _, k, v in data if v and v["op"] == "c"}
    assert inserts[1001] == '{"_id": 1001,"name": "Sally","tags": ["a","b","c"]}'
    assert inserts[oid] == '{"_id": ' + oid_json + ',"name": "George"}'
    updates = [v for _, k, v in data if v and v["op"] == "u" and json_util.loads(k["id"]) == 1001]
    assert updates[0]["updateDescription"] == {
        "removedFields": ["tags"],
        "updatedFields": '{"email": "sally@example.com"}',
        "truncatedArrays": None,
    }
    assert updates[1]["updateDescription"]["updatedFields"] == '{"name": "Sally K"}'
    assert updates[1]["updateDescription"]["removedFields"] is None
    inc = next(v for _, k, v in data if v and v["op"] == "u" and k == {"id": "2"})
    assert inc["updateDescription"] == {"removedFields": None, "updatedFields": '{"qty": 12}', "truncatedArrays": None}
    replace = next(v for _, k, v in data if v and v["op"] == "u" and json_util.loads(k["id"]) == oid)
    assert replace["after"] == '{"_id": ' + oid_json + ',"name": "George W"}' and replace["updateDescription"] is None

    # data records and tombstones carry Debezium's context headers, one runId per run of mongocdc; a
    # streamed change (not a tombstone, not an initial snapshot read) also its cluster time, mongocdc's own
    runs = set()
    for msg, _, value in data:
        headers = [(k, v.decode()) for k, v in msg.headers() or []]
        if value is not None and value["source"]["snapshot"] == "false":
            name, cluster_time = headers.pop()
            assert name == "__mongocdc.clusterTime"
            stamp = json.loads(cluster_time)["$timestamp"]
            assert stamp["i"] == value["source"]["ord"] and stamp["t"] * 1000 <= value["source"]["ts_ms"] + 1000
        assert [k for k, _ in headers] == [f"__debezium.context.{n}" for n in CONTEXT_HEADERS]
        assert headers[:3] == [
            ("__debezium.context.connectorLogicalName", prefix),
            ("__debezium.context.taskId", "0"),
            ("__debezium.context.connectorName", "mongodb"),
        ]
        runs.add(headers[3][1])
    assert len(runs) == 2


CONTEXT_HEADERS = ["connectorLogicalName", "taskId", "connectorName", "runId"]
SOURCE_FIELDS = [
    "version",
    "connector",
    "name",
    "ts_ms",
    "snapshot",
    "db",
    "sequence",
    "ts_us",
    "ts_ns",
    "collection",
    "ord",
    "lsid",
    "txnNumber",
    "wallTime",
]


def check_envelope(topic: str, value: dict[str, Any], prefix: str, db_name: str) -> None:
    """Every field of the value and its source block, in Debezium 3.6.1's order (no `rs`, no top-level ts_us)."""
    assert list(value) == ["before", "after", "updateDescription", "source", "op", "ts_ms", "transaction"]
    op = value["op"]
    assert op in ("c", "u", "d")
    assert isinstance(value["ts_ms"], int) and value["ts_ms"] > 1_600_000_000_000
    assert value["transaction"] is None
    assert value["before"] is None  # no pre-image capture mode
    if op == "c":
        assert isinstance(value["after"], str) and value["updateDescription"] is None
    if op == "d":
        assert value["after"] is None and value["updateDescription"] is None
    source = value["source"]
    assert source["version"] == __version__
    assert source["connector"] == "mongodb"
    assert source["name"] == prefix
    assert source["db"] == db_name
    assert topic == f"{prefix}.{db_name}.{source['collection']}"
    assert source["snapshot"] == "false"
    assert isinstance(source["ord"], int) and source["ord"] >= 0
    assert isinstance(source["ts_ms"], int) and source["ts_ms"] > 1_600_000_000_000
    assert source["lsid"] is None and source["txnNumber"] is None
    assert list(source) == SOURCE_FIELDS
    assert source["sequence"] is None
    assert source["ts_us"] == source["ts_ms"] * 1000 and source["ts_ns"] == source["ts_ms"] * 1_000_000
    assert isinstance(source["wallTime"], int) and source["wallTime"] > 1_600_000_000_000


def test_sigint_stops_gracefully_with_exit_130(tmp_path: Path, mongo_uri: str, kafka_bootstrap: str) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db_name, prefix, offset_flush_interval_ms=3_600_000)
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        client[db_name].c.insert_one({"_id": 1})
        wait_until(lambda: len(read_topic(kafka_bootstrap, f"{prefix}.{db_name}.c")) == 1, "the insert in Kafka")
    finally:
        code = stream.stop(signal.SIGINT)
        client.close()
    assert code == 130, stream.stderr
    # the flush interval never elapsed: the offset was committed by the graceful stop
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert len(offsets) == 1 and offsets[0]["sec"] > 0


def test_standalone_refusal_and_discover_report(mongo_uri: str) -> None:
    result = run_cli("discover", "--output", "json", "--connection-string", mongo_uri)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kind"] in ("replica_set", "sharded")
    assert report["capturable"] is True
    if report["kind"] == "replica_set":
        assert report["replica_set"] and report["primary"] in report["members"]


def test_oversized_document_stops_with_a_clear_error_and_loses_nothing(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db_name, prefix)
    topic = f"{prefix}.{db_name}.docs"
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    stream = CliProcess("--config", str(config), "stream")
    try:
        stream.wait_for_log("change stream open")
        client[db_name].docs.insert_one({"_id": "small-before", "v": 1})
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 1, "the small document in Kafka")
        client[db_name].docs.insert_one({"_id": "big", "blob": "x" * 1_500_000})
        client[db_name].docs.insert_one({"_id": "small-after", "v": 2})
        code = stream.proc.wait(timeout=60)
    finally:
        stream.kill()
        client.close()
    assert code == 3, stream.stderr
    assert 'error: the record for key {"id":"\\"big\\""}' in stream.stderr
    assert "more than the producer for Kafka at" in stream.stderr
    assert "hint: raise kafka.message.max.bytes" in stream.stderr
    assert "Traceback" not in stream.stderr
    # Nothing lost: the committed offset stops before the oversized change, so a restart reads it again.
    offsets = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
    assert len(offsets) == 1
    restarted = CliProcess("--config", str(config), "stream")
    try:
        assert restarted.proc.wait(timeout=60) == 3
    finally:
        restarted.kill()
    assert 'the record for key {"id":"\\"big\\""}' in restarted.stderr
    assert [decode(m)[0]["id"] for m in read_topic(kafka_bootstrap, topic)] == ['"small-before"']


def test_lost_resume_point_exits_5_with_the_remedy(
    request: pytest.FixtureRequest, tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, mongo_server_name: str
) -> None:
    """A stored position older than the oplog: exit 5, never a silent skip.

    Needs a server that reports ChangeStreamHistoryLost/InvalidResumeToken for a mongod-format
    token; the test servers that do not are listed in tests/contract/conftest.py's KNOWN_GAPS.
    """
    from mongocdc.engine.source_offset import SourceOffset
    from mongocdc.events.position import Position
    from mongocdc.offsets.sqlite import SqliteOffsetStore
    from tests.contract.conftest import KNOWN_GAPS

    gap = KNOWN_GAPS.get(mongo_server_name, {}).get("test_resume_token_outside_history_fails_with_history_error")
    if gap:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{mongo_server_name}: {gap}"))
    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db_name, prefix)
    topology = json.loads(run_cli("discover", "--output", "json", "--connection-string", mongo_uri).stdout)
    partition = topology["replica_set"] if topology["kind"] == "replica_set" else "cluster"
    ancient = Position(1, 1, Position.token_bytes({"_data": "82" + "00000001" + "00000001" + "2B0229296E04"}))
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit(f"it-{prefix}", partition, SourceOffset(ancient).to_record())
    store.close()
    result = run_cli("--config", str(config), "stream")
    assert result.returncode == 5, result.stderr
    assert "no longer in MongoDB's oplog" in result.stderr
    assert "mongocdc offsets reset" in result.stderr and "snapshot.mode=when_needed" in result.stderr


def test_a_resume_token_the_server_refuses_exits_5_with_the_remedy(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str
) -> None:
    """A stored token the server cannot read as its own (damaged, or another deployment's): exit 5 and the
    re-snapshot, as for a lost position, not exit 1 as for a bug (MongoDB answers FailedToParse)."""
    from mongocdc.engine.source_offset import SourceOffset
    from mongocdc.events.position import Position
    from mongocdc.offsets.sqlite import SqliteOffsetStore

    db_name = f"it_{uuid.uuid4().hex[:12]}"
    prefix = f"p{uuid.uuid4().hex[:8]}"
    config = write_config(tmp_path, mongo_uri, kafka_bootstrap, db_name, prefix)
    topology = json.loads(run_cli("discover", "--output", "json", "--connection-string", mongo_uri).stdout)
    partition = topology["replica_set"] if topology["kind"] == "replica_set" else "cluster"
    foreign = Position(1, 1, Position.token_bytes({"_data": "not-a-resume-token"}))
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit(f"it-{prefix}", partition, SourceOffset(foreign).to_record())
    store.close()
    result = run_cli("--config", str(config), "stream")
    assert result.returncode == 5, result.stderr
    assert "MongoDB refused the stored resume token" in result.stderr
    assert "mongocdc offsets reset --yes" in result.stderr and "snapshot.mode=when_needed" in result.stderr
