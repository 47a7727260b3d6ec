"""Exactly once, even after kill -9 (``exactly.once.support``), against a real broker and the test server.

A connector is killed with SIGKILL at random points across its initial snapshot, streaming under concurrent
inserts, updates, deletes and re-inserts over int, string and ObjectId ``_id``s, MongoDB transactions (with
transaction metadata) and an incremental snapshot; a ``read_committed`` consumer then replays every topic and
finds each change exactly once: none missing, none stale, none twice (same key and source position).
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId, json_util
from pymongo import MongoClient

from mongocdc.errors import ExitCode
from tests.integration.helpers import CliProcess, run_cli, wait_until
from tests.integration.helpers_connector import collection_state, mixed_documents, read_committed, write_config

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]

KILLS = int(os.environ.get("MONGOCDC_TEST_EXACTLY_ONCE_KILLS", "100"))
"""SIGKILLs of the crash test (the issue's 100 by default)."""


def decoded(msg: Any) -> tuple[str, dict[str, Any] | None]:
    key = msg.key().decode()
    value = msg.value()
    return key, None if value is None else json.loads(value)


def replay(records: list[Any]) -> dict[str, Any]:
    """The collection a consumer rebuilds: the latest ``after`` per key, deletes applied."""
    state: dict[str, Any] = {}
    for msg in records:
        key, value = decoded(msg)
        id_text = json.loads(key)["id"]
        if value is None:
            continue
        if value["op"] == "d":
            state.pop(id_text, None)
        elif value["after"] is not None:
            state[id_text] = json_util.loads(value["after"])
    return state


def duplicates(records: list[Any]) -> list[tuple[Any, ...]]:
    """Changes a consumer would see twice: a streamed change of the same key at the same source position, an
    initial-snapshot read of the same key, an incremental-snapshot read of the same key, a tombstone more."""
    seen: Counter[tuple[Any, ...]] = Counter()
    tombstones: Counter[str] = Counter()
    deletes: Counter[str] = Counter()
    for msg in records:
        key, value = decoded(msg)
        if value is None:
            tombstones[key] += 1
            continue
        source = value["source"]
        if value["op"] == "r":
            seen[("read", key, source["snapshot"] == "incremental")] += 1
            continue
        deletes[key] += value["op"] == "d"
        seen[("change", key, value["op"], source["ts_ms"], source["ord"], source.get("txnNumber"))] += 1
    extra = [("tombstones", key) for key in tombstones.keys() | deletes.keys() if tombstones[key] != deletes[key]]
    return [k for k, n in seen.items() if n > 1] + extra


class Workload(threading.Thread):
    """Inserts, updates, deletes and re-inserts over int, string and ObjectId ``_id``s, and now and then a
    transaction over two collections, until stopped."""

    def __init__(self, uri: str, db: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.client: MongoClient[dict[str, Any]] = MongoClient(uri)
        self.db = self.client[db]
        self.random = random.Random(seed)
        self.done = threading.Event()
        self.count = 0
        self.transactions = 0

    def key(self) -> Any:
        n = self.random.randrange(60)
        return [n, f"k{n}", ObjectId(f"{n:024x}")][n % 3]

    def run(self) -> None:
        coll = self.db.c
        while not self.done.is_set():
            step = self.random.random()
            key = self.key()
            if step < 0.05:
                with self.client.start_session() as session, session.start_transaction():
                    self.db.c.update_one({"_id": key}, {"$inc": {"txn": 1}}, upsert=True, session=session)
                    self.db.t.insert_one({"_id": ObjectId(), "for": key}, session=session)
                self.transactions += 1
            elif step < 0.45:
                coll.update_one({"_id": key}, {"$set": {"v": self.count}}, upsert=True)
            elif step < 0.7:
                coll.delete_one({"_id": key})
            else:  # an insert, or the re-insert of a deleted key
                coll.replace_one({"_id": key}, {"_id": key, "v": self.count, "pad": "p" * 50}, upsert=True)
            self.count += 1
            self.done.wait(0.003)  # pacing, so the two cores are not all the workload's

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=30)
        self.client.close()


def eos_config(tmp_path: Path, mongo_uri: str, bootstrap: str, db: str, prefix: str, **extra: Any) -> Path:
    return write_config(
        tmp_path,
        mongo_uri,
        bootstrap,
        db,
        prefix,
        {
            "exactly.once.support": "required",
            "offset.storage": "kafka",
            "offset.storage.topic": f"{prefix}-offsets",
            "offset.storage.partitions": 1,
            "provide.transaction.metadata": True,
            "snapshot.fetch.size": 100,
            "max.batch.size": 200,
            "max.queue.size": 1000,
            "signal.data.collection": f"{db}.signals",
            "incremental.snapshot.chunk.size": 100,
            "collection.exclude.list": f"{db}\\.signals",
            **extra,
        },
    )


def check_topics(bootstrap: str, client: MongoClient[dict[str, Any]], db: str, prefix: str) -> dict[str, list[Any]]:
    """Every data topic replays to its collection, with no change twice; returns the records read."""
    records = {c: read_committed(bootstrap, f"{prefix}.{db}.{c}") for c in ("big", "c", "t", "inc")}
    for c, recs in records.items():
        assert replay(recs) == collection_state(client, db, c), f"{c}: missing or stale documents"
        assert duplicates(recs) == [], f"{c}: changes delivered twice"
    return records


@dataclass(frozen=True)
class Capture:
    """A fresh database of the test server to capture, its client, and a topic prefix of the test's own."""

    client: MongoClient[dict[str, Any]]
    db: str
    prefix: str


@pytest.fixture
def capture(mongo_uri: str) -> Iterator[Capture]:
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    try:
        yield Capture(client, f"it_{uuid.uuid4().hex[:12]}", f"p{uuid.uuid4().hex[:8]}")
    finally:
        client.close()


@pytest.mark.timeout(1200)  # 100 restarts of the connector: about 4 minutes on 2 idle cores
def test_kill_9_at_random_points_then_a_read_committed_consumer_sees_every_change_exactly_once(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, capture: Capture
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    client, db, prefix = capture.client, capture.db, capture.prefix
    client[db].big.insert_many(mixed_documents(1500))
    client[db].inc.insert_many([{"_id": i, "v": i} for i in range(600)])
    config = eos_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix)
    workload = Workload(mongo_uri, db, seed)
    workload.start()
    signalled = False
    try:
        for kill in range(KILLS):
            if kill == KILLS // 3:  # an incremental snapshot, carried on across the kills that follow
                client[db].signals.insert_one(
                    {"_id": "inc-1", "type": "execute-snapshot", "data": {"data-collections": [f"{db}.inc"]}}
                )
                signalled = True
            proc = CliProcess("--config", str(config), "stream")
            try:
                # a random point: mostly while it snapshots or streams (producing and committing), sometimes while
                # it starts (registering its transactional.id, loading its offset, opening the change stream)
                if rng.random() < 0.2:
                    proc.wait_for_log("exactly-once delivery (transactional.id", timeout=60)
                    threading.Event().wait(rng.uniform(0.0, 0.5))
                else:
                    wait_until(
                        lambda proc=proc: (
                            proc.proc.poll() is not None
                            or any("snapshot of" in line or "change stream open" in line for line in proc.stderr_lines)
                        ),
                        "the connector to snapshot or stream",
                    )
                    threading.Event().wait(rng.uniform(0.0, 1.2))
            finally:
                proc.proc.send_signal(signal.SIGKILL)
                proc.proc.wait(timeout=30)
            assert proc.proc.returncode == -signal.SIGKILL, f"seed {seed}, kill {kill}: exited early\n{proc.stderr}"
    finally:
        workload.stop()
    assert signalled and workload.count > 1000 and workload.transactions > 10, f"seed {seed}"
    final = CliProcess("--config", str(config), "stream")
    try:

        def caught_up() -> bool:
            stored = json.loads(run_cli("--config", str(config), "offsets", "show", "--output", "json").stdout)
            if not stored or "incremental_snapshot" in stored[0] or stored[0].get("initsync"):
                return False
            try:
                check_topics(kafka_bootstrap, client, db, prefix)
            except AssertionError as exc:
                if "twice" in str(exc):
                    raise
                return False
            return True

        wait_until(caught_up, f"every topic to replay to its collection (seed {seed})", timeout=240, interval=1)
    finally:
        assert final.stop() == 0, final.stderr
    records = check_topics(kafka_bootstrap, client, db, prefix)
    reads = [decoded(m)[1] for m in records["inc"]]
    assert sum(1 for v in reads if v and v["source"]["snapshot"] == "incremental") > 0
    assert sum(1 for v in reads if v and v["source"]["snapshot"] in ("true", "last")) == 600  # initial, once each
    # transaction metadata: each transaction's BEGIN and END once, END counting its events exactly
    metadata = [decoded(m)[1] for m in read_committed(kafka_bootstrap, f"{prefix}.transaction")]
    begins = Counter(v["id"] for v in metadata if v and v["status"] == "BEGIN")
    ends = {v["id"]: v for v in metadata if v and v["status"] == "END"}
    assert begins and set(begins.values()) == {1}, f"seed {seed}"
    assert len(ends) == len([v for v in metadata if v and v["status"] == "END"])
    in_transactions: Counter[str] = Counter()
    for c in ("c", "t"):
        for msg in records[c]:
            value = decoded(msg)[1]
            if value is not None and value.get("transaction"):
                in_transactions[value["transaction"]["id"]] += 1
    for txn_id, end in ends.items():
        assert end["event_count"] == in_transactions[txn_id], f"seed {seed}: transaction {txn_id}"


def test_a_second_exactly_once_instance_fences_the_first_and_nothing_is_duplicated_or_lost(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, capture: Capture
) -> None:
    client, db, prefix = capture.client, capture.db, capture.prefix
    client[db].big.insert_many(mixed_documents(500))
    config = eos_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix)
    workload = Workload(mongo_uri, db, 7)
    first = CliProcess("--config", str(config), "stream")
    second: CliProcess | None = None
    try:
        first.wait_for_log("change stream open")
        workload.start()
        wait_until(lambda: len(read_committed(kafka_bootstrap, f"{prefix}.{db}.c")) > 50, "streamed changes")
        second = CliProcess("--config", str(config), "stream")
        assert first.proc.wait(timeout=90) == ExitCode.FENCED, first.stderr
        assert "was fenced" in first.stderr and "hint: run one instance per connector" in first.stderr
        second.wait_for_log("change stream open")
        wait_until(lambda: workload.count > 600, "changes while the second one streams")
        workload.stop()
        for c in ("big", "c"):
            expected = collection_state(client, db, c)
            wait_until(
                lambda c=c, expected=expected: (
                    replay(read_committed(kafka_bootstrap, f"{prefix}.{db}.{c}")) == expected
                ),
                f"{c} to replay to its collection",
                timeout=90,
                interval=0.5,
            )
        assert second.stop() == 0, second.stderr
    finally:
        workload.stop()
        first.kill()
        if second is not None:
            second.kill()
    for c in ("big", "c", "t"):
        assert duplicates(read_committed(kafka_bootstrap, f"{prefix}.{db}.{c}")) == [], c


def test_at_least_once_sigterm_at_random_points_still_delivers_each_change_once(
    tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, capture: Capture
) -> None:
    """Without exactly.once.support a graceful stop commits what Kafka acknowledged: no change twice."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    client, db, prefix = capture.client, capture.db, capture.prefix
    client[db].big.insert_many(mixed_documents(4000))
    client[db].inc.insert_many([{"_id": i, "v": i} for i in range(500)])
    config = eos_config(tmp_path, mongo_uri, kafka_bootstrap, db, prefix, **{"exactly.once.support": "disabled"})
    workload = Workload(mongo_uri, db, seed)
    workload.start()
    try:
        for _ in range(15):
            proc = CliProcess("--config", str(config), "stream")
            proc.wait_for_log(f"it-{prefix}/", timeout=60)  # the task's plan: it is running
            threading.Event().wait(rng.uniform(0.2, 1.5))
            assert proc.stop(signal.SIGTERM) == 0, f"seed {seed}\n{proc.stderr}"
    finally:
        workload.stop()
    final = CliProcess("--config", str(config), "stream")
    try:
        wait_until(
            lambda: all(
                replay(read_committed(kafka_bootstrap, f"{prefix}.{db}.{c}")) == collection_state(client, db, c)
                for c in ("big", "c", "t")
            ),
            f"every topic to replay to its collection (seed {seed})",
            timeout=120,
            interval=1,
        )
    finally:
        assert final.stop() == 0, final.stderr
    for c in ("big", "c", "t", "inc"):
        assert duplicates(read_committed(kafka_bootstrap, f"{prefix}.{db}.{c}")) == [], f"seed {seed}: {c}"
