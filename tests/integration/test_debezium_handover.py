"""End to end: Debezium → mongocdc → Debezium on one change history, with no gap, no duplicate, no re-snapshot.

The real Debezium MongoDB connector 3.6.1.Final runs in a distributed Kafka Connect worker
(``tests/services/connect.py``) against the suite's MongoDB server and broker:

1. documents in place, Debezium starts: its initial snapshot, then the first part of the workload;
2. Debezium is stopped gracefully (``PUT /connectors/<name>/stop``: its tasks commit their offsets);
   writes go on meanwhile;
3. ``mongocdc offsets import --from-kafka-connect`` adopts its offset, ``mongocdc stream`` captures
   what was written since and the second part, and stops on SIGTERM; writes go on meanwhile;
4. ``mongocdc offsets export --to-kafka-connect`` hands the position back, Debezium is resumed
   (``PUT /connectors/<name>/resume``) and captures the rest.

The data topic then holds every change exactly once, in order per key, each key in one partition
(Kafka's murmur2 partition of the same key bytes), and the snapshot's reads only once; the
events of step 3 are mongocdc's (``source.version``), the others Debezium's.
"""

from __future__ import annotations

import base64
import json
import shutil
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pytest
from pymongo import MongoClient
from pymongo.collection import Collection

from mongocdc import __version__
from mongocdc.engine.adoption import debezium_key, to_debezium
from mongocdc.events.java import default_partition, java_hashmap_order
from mongocdc.events.position import token_cluster_time
from mongocdc.offsets.connect import connect_value
from mongocdc.offsets.sqlite import SqliteOffsetStore
from tests.integration.helpers import CliProcess, murmur2_partition, read_topic, run_cli, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb, pytest.mark.timeout(900)]

DEBEZIUM_VERSION = "3.6.1.Final"
OFFSETS_PARTITIONS = 25  # Connect's default for the offsets topic it creates
PARTITIONS = 3  # the suite's broker creates topics with 3 partitions; Debezium is told the same
WAIT_S = 180.0


@pytest.fixture
def connect(kafka_bootstrap: str) -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("Kafka Connect needs Java 17+")
    from tests.services.connect import KafkaConnect

    worker = KafkaConnect(kafka_bootstrap, mode="distributed", worker_config={"offset.flush.interval.ms": "1000"})
    with worker:
        yield worker


class Workload:
    """Writes whose change events can be told apart: each insert, update and delete is one identity."""

    def __init__(self, collection: Collection[dict[str, Any]]) -> None:
        self.collection = collection
        self.expected: list[tuple[str, int, str | None]] = []
        self.part_of: dict[tuple[str, int, str | None], str] = {}
        self.records = 0
        self.next_id = 1
        self.last_time: Any = None

    def _expect(self, event: tuple[str, int, str | None], part: str) -> None:
        self.expected.append(event)
        self.part_of[event] = part

    def _session_write(self, action: Any) -> None:
        with self.collection.database.client.start_session() as session:
            action(session)
            self.last_time = session.operation_time

    def seed(self, count: int) -> None:
        """Documents in place before Debezium starts: its snapshot reads them."""
        for _ in range(count):
            self.collection.insert_one({"_id": self.next_id, "v": "seed"})
            self._expect(("r", self.next_id, "seed"), "seed")
            self.next_id += 1
        self.records += count

    def part(self, name: str) -> None:
        """Three inserts, an update of an older document and of a new one, and a delete."""
        ids = []
        for _ in range(3):
            doc_id, self.next_id = self.next_id, self.next_id + 1
            self._session_write(lambda s, i=doc_id: self.collection.insert_one({"_id": i, "v": f"{name}-c"}, session=s))
            self._expect(("c", doc_id, f"{name}-c"), name)
            ids.append(doc_id)
        for doc_id in (1, ids[0]):
            value = f"{name}-u{doc_id}"
            self._session_write(
                lambda s, i=doc_id, v=value: self.collection.update_one({"_id": i}, {"$set": {"v": v}}, session=s)
            )
            self._expect(("u", doc_id, value), name)
        self._session_write(lambda s, i=ids[1]: self.collection.delete_one({"_id": i}, session=s))
        self._expect(("d", ids[1], None), name)
        self.records += 7  # 6 events and the delete's tombstone


def identity(msg: Any) -> tuple[str, int, str | None] | None:
    """(op, _id, v) of a change event; ``None`` for a tombstone."""
    if msg.value() is None:
        return None
    value = json.loads(msg.value())
    doc_id = json.loads(json.loads(msg.key())["id"])
    after = json.loads(value["after"]) if value.get("after") else None
    return value["op"], doc_id, None if after is None else after["v"]


class Handover:
    """One run's names, config file, workload and checks, shared by the distributed and standalone tests."""

    def __init__(self, tmp_path: Path, mongo_uri: str, kafka_bootstrap: str) -> None:
        run = uuid.uuid4().hex[:8]
        self.db_name, self.prefix, self.name = f"handover_{run}", f"ho{run}", f"dbz-{run}"
        self.topic = f"{self.prefix}.{self.db_name}.items"
        self.bootstrap = kafka_bootstrap
        self.mongo_uri = mongo_uri
        self.tmp_path = tmp_path
        self.client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
        self.work = Workload(self.client[self.db_name]["items"])
        self.config = tmp_path / "mongocdc.yaml"
        self.config.write_text(
            "\n".join(
                [
                    f"name: {json.dumps(self.name)}",
                    f"mongodb.connection.string: {json.dumps(mongo_uri)}",
                    f"topic.prefix: {json.dumps(self.prefix)}",
                    f"collection.include.list: {json.dumps(self.db_name + chr(92) + '.items')}",
                    f"offset.storage.file.filename: {json.dumps(str(tmp_path / 'offsets.db'))}",
                    "offset.flush.interval.ms: 500",
                    "poll.interval.ms: 200",
                    "kafka:",
                    f"  bootstrap.servers: {json.dumps(kafka_bootstrap)}",
                ]
            )
            + "\n"
        )

    def connector_config(self) -> dict[str, str]:
        return {
            "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
            "tasks.max": "1",
            "mongodb.connection.string": self.mongo_uri,
            "topic.prefix": self.prefix,
            "collection.include.list": f"{self.db_name}\\.items",
            "snapshot.mode": "initial",
            "topic.creation.default.partitions": str(PARTITIONS),
            "topic.creation.default.replication.factor": "1",
        }

    def settled(self, what: str) -> None:
        wait_until(
            lambda: len(read_topic(self.bootstrap, self.topic, timeout=30)) >= self.work.records, what, WAIT_S, 0.5
        )

    def mongocdc(self, *args: str) -> dict[str, Any]:
        """Run ``mongocdc offsets …`` with the run's configuration; its one JSON result."""
        result = run_cli("--config", str(self.config), "offsets", *args, "--yes", "--output", "json")
        assert result.returncode == 0, result.stderr
        [change] = json.loads(result.stdout)
        return dict(change)

    def stream(self, part: str) -> None:
        """``mongocdc stream``: catch up, write ``part``, stop with SIGTERM."""
        stream = CliProcess("--config", str(self.config), "stream")
        try:
            stream.wait_for_log("change stream open", timeout=WAIT_S)
            self.settled("mongocdc's catching up")
            self.work.part(part)
            self.settled(f"mongocdc's {part}")
        finally:
            code = stream.stop(signal.SIGTERM)
        assert code == 0, stream.stderr

    def stored(self) -> dict[str, Any]:
        store = SqliteOffsetStore(self.tmp_path / "offsets.db")
        try:
            [mine] = store.records(self.name)
        finally:
            store.close()
        return dict(mine.offset)

    def check(self, mongocdc_parts: tuple[str, ...]) -> None:
        """Every change exactly once, in the order made, every key in one partition, written by whom it should."""
        time.sleep(3)  # anything extra (a duplicate, a second snapshot) would arrive now
        work = self.work
        records = read_topic(self.bootstrap, self.topic, timeout=30)
        seen = [identity(m) for m in records]
        events = [s for s in seen if s is not None]
        assert Counter(events) == Counter(work.expected), "a change is missing or duplicated"
        assert len(events) == len(work.expected)
        assert sum(1 for s in seen if s is None) == sum(1 for op, _, _ in work.expected if op == "d")
        partitions: dict[bytes, set[int]] = {}
        for msg in records:
            partitions.setdefault(msg.key(), set()).add(msg.partition())
        assert all(found == {murmur2_partition(key, PARTITIONS)} for key, found in partitions.items())
        order = {event: i for i, event in enumerate(work.expected)}
        per_partition: dict[int, list[int]] = {}
        for msg, event in zip(records, seen, strict=True):
            if event is not None:
                per_partition.setdefault(msg.partition(), []).append(order[event])
        assert all(made == sorted(made) for made in per_partition.values())
        for msg, event in zip(records, seen, strict=True):
            if event is not None:
                version = json.loads(msg.value())["source"]["version"]
                assert version == (__version__ if work.part_of[event] in mongocdc_parts else DEBEZIUM_VERSION), event

    def close(self) -> None:
        self.client.close()


def debezium_offset(offsets: list[dict[str, Any]], prefix: str, after: Any) -> dict[str, Any] | None:
    """Debezium's stored offset once it is at or past the cluster time ``after`` (``None`` before)."""
    for entry in offsets:
        offset = entry["offset"]
        if entry["partition"] != {"server_id": prefix} or not offset.get("resume_token"):
            continue
        at = (offset["sec"], offset["ord"])
        if at[0] < 0:  # a token without an event (the stream's high-water mark): its own time, if it says
            token = bson.decode(base64.b64decode(offset["resume_token"]))
            at = token_cluster_time(token) or (2**32, 0)
        if at >= (after.time, after.inc):
            return dict(offset)
    return None


def test_debezium_to_mongocdc_and_back(tmp_path: Path, mongo_uri: str, kafka_bootstrap: str, connect: Any) -> None:
    run = Handover(tmp_path, mongo_uri, kafka_bootstrap)
    name, prefix, work = run.name, run.prefix, run.work

    def debezium_state() -> str | None:
        status = connect.connector_status(name)
        return None if status is None else str(status["connector"]["state"])

    # 1. Debezium: snapshot, then part 1
    work.seed(5)
    connect.create_connector(name, run.connector_config())
    connect.wait_until_running(name)
    run.settled("Debezium's snapshot")
    work.part("p1")
    run.settled("Debezium's part 1")

    # 2. Debezium stops; its last position is committed
    status, answer = connect.request("PUT", f"/connectors/{name}/stop")
    assert status in (202, 204), answer
    connect.wait_for(lambda: debezium_state() == "STOPPED", "Debezium to stop", WAIT_S)
    last_p1 = work.last_time
    connect.wait_for(
        lambda: debezium_offset(connect.connector_offsets(name), prefix, last_p1), "Debezium's offset", WAIT_S
    )
    work.part("p2a")  # while nothing captures

    # 3. mongocdc adopts the offset and streams
    change = run.mongocdc("import", "--from-kafka-connect", "--connect-offsets-topic", connect.offsets_topic)
    assert change["notes"] == [] and "initsync" not in change["after"]
    run.stream("p2b")
    work.part("p3a")  # while nothing captures

    # 4. Debezium takes the position back
    handed = run.mongocdc("export", "--to-kafka-connect", "--connect-offsets-topic", connect.offsets_topic)
    mine = run.stored()
    assert handed["after"]["resume_token"] == bson.decode(base64.b64decode(mine["resume_token"]))["_data"]  # hex
    assert handed["debezium"]["key"] == debezium_key(name, prefix).decode()
    (written_offset,) = handed["rest"]["body"]["offsets"]  # what Connect stores: the token as Base64 of BSON
    assert written_offset["offset"]["resume_token"] == mine["resume_token"]
    assert connect.connector_offsets(name) == [{"partition": {"server_id": prefix}, "offset": written_offset["offset"]}]
    # in the offsets topic: Debezium's record and ours, same key bytes, same partition, the same serialisation
    key = debezium_key(name, prefix)
    written = [m for m in read_topic(kafka_bootstrap, connect.offsets_topic, timeout=30) if m.key() == key]
    assert [m.partition() for m in written] == [default_partition(key, OFFSETS_PARTITIONS)] * len(written)
    debeziums, ours = written[0].value(), written[-1].value()
    assert list(json.loads(debeziums)) == java_hashmap_order(json.loads(debeziums))
    assert connect_value(json.loads(debeziums)) == debeziums
    assert ours == connect_value(to_debezium(mine).offset) == handed["debezium"]["value"].encode()
    status, answer = connect.request("PUT", f"/connectors/{name}/resume")
    assert status in (202, 204), answer
    connect.wait_until_running(name)
    run.settled("Debezium's catching up")
    work.part("p3b")
    run.settled("Debezium's part 3")

    run.check(mongocdc_parts=("p2a", "p2b"))
    connect.delete_connector(name)
    run.close()


def test_standalone_worker_offsets_file(tmp_path: Path, mongo_uri: str, kafka_bootstrap: str) -> None:
    """The same hand-over through a standalone worker's offsets file, the worker stopped in between."""
    if shutil.which("java") is None:
        pytest.skip("Kafka Connect needs Java 17+")
    from tests.services.connect import KafkaConnect

    run = Handover(tmp_path, mongo_uri, kafka_bootstrap)
    name, work = run.name, run.work
    worker = KafkaConnect(
        kafka_bootstrap,
        mode="standalone",
        data_dir=tmp_path / "connect",
        worker_config={"offset.flush.interval.ms": "1000"},
    )
    try:
        work.seed(3)
        worker.start()
        worker.create_connector(name, run.connector_config())
        worker.wait_until_running(name)
        run.settled("Debezium's snapshot")
        work.part("p1")
        run.settled("Debezium's part 1")
        last_p1 = work.last_time
        assert worker.stop(), "the standalone worker did not stop gracefully"
        work.part("p2a")

        change = run.mongocdc(
            "import",
            "--from-kafka-connect",
            "--connect-offsets-file",
            str(worker.offsets_file),
            "--connector-name",
            name,
        )
        assert change["debezium"]["read_from"] == str(worker.offsets_file)
        assert debezium_offset([change["debezium"]], run.prefix, last_p1) is not None  # committed on stop
        run.stream("p2b")
        work.part("p3a")
        handed = run.mongocdc("export", "--to-kafka-connect", "--connect-offsets-file", str(worker.offsets_file))
        assert handed["before"] == change["debezium"]["offset"]

        worker.start()  # a standalone worker keeps no connector configuration: create it again
        worker.create_connector(name, run.connector_config())
        worker.wait_until_running(name)
        (written_offset,) = handed["rest"]["body"]["offsets"]  # as Connect stores it: the token as Base64 of BSON
        assert worker.connector_offsets(name) == [
            {"partition": {"server_id": run.prefix}, "offset": written_offset["offset"]}
        ]
        run.settled("Debezium's catching up")
        work.part("p3b")
        run.settled("Debezium's part 3")
        run.check(mongocdc_parts=("p2a", "p2b"))
    finally:
        worker.stop()
        run.close()
