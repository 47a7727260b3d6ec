"""A worker group (``group.id``): several ``mongocdc stream`` processes share a sharded cluster's tasks.

Real components: the suite's Kafka broker (its group coordinator assigns the tasks), the sharded stand-in of
``tests/services/sharded.py`` (a SecantusDB replica set per shard), ``mongocdc stream`` processes. Each test has
its own group, connector, topics and database; the workers are killed by the fixture whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from mongocdc.errors import ExitCode
from mongocdc.kafka.admin import KafkaAdmin
from mongocdc.kafka.errors import Endpoint
from mongocdc.offsets.kafka import KafkaOffsetStore
from tests.integration.helpers import CliProcess, decode, read_topic, run_cli, wait_until
from tests.integration.helpers_connector import write_config
from tests.services.mongo import free_port
from tests.services.sharded import ShardedCluster

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms: a crashed worker's tasks move after 6 s
Doc = dict[str, Any]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShardedCluster]:
    with ShardedCluster(shards=3, data_dir=tmp_path_factory.mktemp("fleet")) as sharded:
        yield sharded


class Fleet:
    """The workers of one group, started from one configuration; ``close`` kills what still runs."""

    def __init__(
        self, tmp_path: Path, cluster: ShardedCluster, bootstrap: str, db: str | None = None, **extra: Any
    ) -> None:
        self.cluster = cluster
        self.bootstrap = bootstrap
        self.db = db or f"it_{uuid.uuid4().hex[:12]}"
        self.prefix = f"p{uuid.uuid4().hex[:8]}"
        self.group = f"g-{self.prefix}"
        self.connector = f"it-{self.prefix}"
        self.offsets_topic = f"{self.prefix}-offsets"
        self.tasks_topic = f"mongocdc-tasks.{self.group}"
        self.topic = f"{self.prefix}.{self.db}.orders"
        properties = {
            "mongodb.connection.mode": "replica_set",
            "mongodb.poll.interval.ms": 500,
            "offset.storage": "kafka",
            "offset.storage.topic": self.offsets_topic,
            "offset.storage.partitions": 1,
            "group.id": self.group,
            "session.timeout.ms": SESSION_MS,
            **extra,
        }
        self.config = write_config(tmp_path, cluster.config_uri, bootstrap, self.db, self.prefix, properties)
        self.workers: list[CliProcess] = []
        self.admin = KafkaAdmin({"bootstrap.servers": bootstrap}, Endpoint.of({"bootstrap.servers": bootstrap}))
        self.clients: dict[str, MongoClient[Doc]] = {}

    def start(self, n: int = 1, *args: str) -> list[CliProcess]:
        started = [CliProcess("--config", str(self.config), "stream", *args) for _ in range(n)]
        self.workers += started
        return started

    def client(self, shard: str) -> MongoClient[Doc]:
        if shard not in self.clients:
            self.clients[shard] = MongoClient(self.cluster.uri_of(self.cluster.shards[shard]))
        return self.clients[shard]

    def assignment(self) -> dict[int, tuple[int, ...]]:
        """Each live worker's tasks, by process id (from the group coordinator's description)."""
        _, members = self.admin.group_members(self.group, self.tasks_topic)
        return {int(m.client_id.rsplit("-", 1)[1]): m.partitions for m in members}

    def holder(self, task: int) -> CliProcess:
        pids = [pid for pid, tasks in self.assignment().items() if task in tasks]
        assert len(pids) == 1, self.assignment()
        return next(w for w in self.workers if w.proc.pid == pids[0])

    def streams_open(self, worker: CliProcess) -> int:
        return worker.stderr.count("change stream open")

    def ids(self) -> Counter[str]:
        """How often each ``_id`` was written to the topic as a create or a snapshot read (a duplicate counts twice)."""
        found: Counter[str] = Counter()
        for msg in read_topic(self.bootstrap, self.topic, timeout=30):
            key, value = decode(msg)
            if value is not None and value["op"] in ("c", "r"):
                found[json.loads(key["id"])] += 1
        return found

    def stored(self) -> dict[str, Doc]:
        store = KafkaOffsetStore({"bootstrap.servers": self.bootstrap}, self.offsets_topic, timeout_s=20)
        try:
            return {r.partition: dict(r.offset) for r in store.records(self.connector)}
        finally:
            store.close()

    def logs(self) -> str:
        """Every worker's stderr, for a failure message."""
        return "\n".join(f"--- worker {w.proc.pid} (exit {w.proc.poll()}) ---\n{w.stderr}" for w in self.workers)

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        """``wait_until``, whose failure shows what each worker logged."""
        try:
            wait_until(condition, what, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def stop(self, worker: CliProcess, timeout: float = 60.0) -> int:
        """SIGTERM ``worker`` and wait for its exit code; a worker that does not exit fails with its stderr."""
        try:
            return worker.stop(signal.SIGTERM, timeout=timeout)
        except subprocess.TimeoutExpired:
            worker.proc.send_signal(signal.SIGABRT)  # with PYTHONFAULTHANDLER set, its threads' stacks go to stderr
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=10)
            raise AssertionError(
                f"worker {worker.proc.pid} did not exit {timeout:.0f} s after SIGTERM\n{self.logs()}"
            ) from None

    def close(self) -> None:
        for worker in self.workers:
            worker.kill()
        for client in self.clients.values():
            client.close()


@pytest.fixture
def fleet(tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str) -> Iterator[Fleet]:
    group = Fleet(tmp_path, cluster, kafka_bootstrap)
    try:
        yield group
    finally:
        group.close()


class Writer(threading.Thread):
    """Inserts ``<shard>-<n>`` into each shard's ``orders`` in turn until stopped."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(daemon=True)
        self.fleet = fleet
        self.done = threading.Event()
        self.written: list[str] = []

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            for shard in sorted(self.fleet.cluster.shards):
                _id = f"{shard}-{n}"
                self.fleet.client(shard)[self.fleet.db].orders.insert_one({"_id": _id})
                self.written.append(_id)
            n += 1
            self.done.wait(0.02)

    def stop(self) -> list[str]:
        self.done.set()
        self.join(timeout=30)
        return self.written


def shares(fleet: Fleet, n_workers: int) -> bool:
    """Every task held by exactly one of ``n_workers`` live workers, none holding more than its share."""
    assignment = fleet.assignment()
    tasks = sorted(t for held in assignment.values() for t in held)
    n_tasks = len(fleet.cluster.shards)
    most = -(-n_tasks // n_workers)
    return (
        len(assignment) == n_workers
        and tasks == list(range(n_tasks))
        and all(len(held) <= most for held in assignment.values())
    )


def all_streaming(fleet: Fleet) -> bool:
    """Each live worker has a change stream open per task it holds (counted since it started)."""
    live = {w.proc.pid: w for w in fleet.workers if w.proc.poll() is None}
    return all(fleet.streams_open(live[pid]) >= len(tasks) for pid, tasks in fleet.assignment().items() if pid in live)


def test_three_workers_share_the_tasks_and_a_graceful_stop_hands_them_over_with_nothing_lost_or_twice(
    fleet: Fleet,
) -> None:
    workers = fleet.start(3)
    wait_until(lambda: shares(fleet, 3), "three workers holding one task each", timeout=120)
    wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
    wait_until(lambda: len(fleet.stored()) == 3, "every task's first commit")

    shown = run_cli("--config", str(fleet.config), "status", "--output", "json")
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    assert status["name"] == fleet.connector and status["group"] == fleet.group
    assert status["type"] == "source" and status["connector"]["state"] == "RUNNING"
    assert sorted(int(w["worker_id"].rsplit("-", 1)[1]) for w in status["workers"]) == sorted(
        w.proc.pid for w in workers
    )
    assert sorted(len(w["tasks"]) for w in status["workers"]) == [1, 1, 1]
    assert [(t["id"], t["partition"], t["state"]) for t in status["tasks"]] == [
        (0, "shard00-rs", "RUNNING"),
        (1, "shard01-rs", "RUNNING"),
        (2, "shard02-rs", "RUNNING"),
    ]
    assert all(t["position"]["sec"] > 0 and t["lag_seconds"] is not None for t in status["tasks"])
    table = run_cli("--config", str(fleet.config), "status")
    assert table.returncode == 0, table.stderr
    assert table.stdout.count("RUNNING") == 3 and f"group {fleet.group}" in table.stdout
    snapshot = run_cli("--config", str(fleet.config), "snapshot")  # would run the group's connector a second time
    assert snapshot.returncode == ExitCode.FENCED, snapshot.stderr
    assert f"is running in worker group '{fleet.group}' (3 workers)" in snapshot.stderr
    reset = run_cli("--config", str(fleet.config), "offsets", "reset", "--yes")  # the tasks would overwrite it
    assert reset.returncode == ExitCode.FENCED, reset.stderr
    assert "a change of its offsets would be overwritten" in reset.stderr

    writer = Writer(fleet)
    writer.start()
    try:
        wait_until(lambda: len(fleet.ids()) >= 30, "changes of every shard in Kafka")
        leaving = fleet.holder(0)
        assert leaving.stop(signal.SIGTERM) == 0, leaving.stderr
        assert "stopping and committing them first" in leaving.stderr or "left the group" in leaving.stderr
        wait_until(lambda: shares(fleet, 2), "the two others holding every task", timeout=60)
        taker = fleet.holder(0)
        wait_until(lambda: "task 0 (shard00-rs): taking it over" in taker.stderr, "task 0 taken over")
        wait_until(lambda: all_streaming(fleet), "every task streaming again", timeout=60)
        mark = len(writer.written)
        wait_until(lambda: len(fleet.ids()) >= mark + 30, "changes after the handover")
    finally:
        written = writer.stop()
    wait_until(lambda: set(written) <= set(fleet.ids()), "every change in Kafka", timeout=60)
    counted = fleet.ids()
    assert set(counted) == set(written)  # nothing lost
    assert [i for i, n in counted.items() if n > 1] == []  # nothing twice: the handover committed first
    for worker in fleet.workers:
        if worker.proc.poll() is None:
            assert worker.stop(signal.SIGTERM) == 0, worker.stderr
    assert sorted(fleet.stored()) == ["shard00-rs", "shard01-rs", "shard02-rs"]


def test_a_killed_workers_tasks_resume_elsewhere_after_the_session_timeout_with_nothing_lost(fleet: Fleet) -> None:
    fleet.start(2)
    wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
    wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
    writer = Writer(fleet)
    writer.start()
    try:
        wait_until(lambda: len(fleet.ids()) >= 30, "changes of every shard in Kafka")
        killed = fleet.holder(0)
        killed.proc.kill()
        assert killed.proc.wait(timeout=30) == -signal.SIGKILL
        survivor = next(w for w in fleet.workers if w is not killed)
        # the coordinator waits out the killed worker's session, then gives its tasks to the survivor
        wait_until(lambda: shares(fleet, 1), "the survivor holding every task", timeout=SESSION_MS / 1000 + 60)
        wait_until(lambda: "task 0 (shard00-rs): taking it over" in survivor.stderr, "task 0 resumed")
        wait_until(lambda: fleet.streams_open(survivor) >= 3, "every task streaming on the survivor", timeout=60)
        mark = len(writer.written)
        wait_until(lambda: len(fleet.ids()) >= mark + 30, "changes after the takeover")
    finally:
        written = writer.stop()
    wait_until(lambda: set(written) <= set(fleet.ids()), "every change in Kafka", timeout=60)
    assert set(fleet.ids()) == set(written)  # nothing lost (at least once: what the killed one sent twice may repeat)
    assert survivor.stop(signal.SIGTERM) == 0, survivor.stderr


def test_a_paused_worker_whose_tasks_moved_is_fenced_when_it_comes_back_and_commits_nothing(fleet: Fleet) -> None:
    fleet.start(2)
    wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
    wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
    paused = fleet.holder(0)
    other = next(w for w in fleet.workers if w is not paused)
    orders = fleet.client("shard00")[fleet.db].orders
    orders.insert_one({"_id": "before-pause"})
    wait_until(lambda: "before-pause" in fleet.ids(), "a change of shard00 in Kafka")
    wait_until(lambda: position(fleet) > (0, 0), "the first owner's commit")
    paused.proc.send_signal(signal.SIGSTOP)
    paused_at = position(fleet)
    try:
        wait_until(lambda: shares(fleet, 1), "the other worker holding every task", timeout=SESSION_MS / 1000 + 60)
        wait_until(lambda: "task 0 (shard00-rs): taking it over" in other.stderr, "task 0 taken over")
        wait_until(lambda: "its previous owner is fenced" in other.stderr, "the task's new owner registered")
        orders.insert_one({"_id": "while-paused"})
        wait_until(lambda: "while-paused" in fleet.ids(), "the new owner streaming shard00")
        wait_until(lambda: position(fleet) > paused_at, "the new owner's commit past the paused one's")
        before = position(fleet)
    finally:
        paused.proc.send_signal(signal.SIGCONT)
    assert paused.proc.wait(timeout=60) == ExitCode.FENCED, paused.stderr
    assert "lost its tasks" in paused.stderr or "was fenced" in paused.stderr
    assert position(fleet) >= before  # the paused one committed nothing (its position was older)
    orders.insert_one({"_id": "after-fence"})
    wait_until(lambda: "after-fence" in fleet.ids(), "the new owner streaming on")
    assert other.proc.poll() is None
    assert other.stop(signal.SIGTERM) == 0, other.stderr


def position(fleet: Fleet) -> tuple[int, int]:
    """The stored position of shard00's task: ``(sec, ord)``, ``(0, 0)`` before its first commit."""
    offset = fleet.stored().get("shard00-rs") or {}
    return int(offset.get("sec", 0)), int(offset.get("ord", 0))


def test_an_incremental_snapshot_goes_on_where_it_was_when_its_task_moves_to_another_worker(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    db = f"it_{uuid.uuid4().hex[:12]}"
    fleet = Fleet(
        tmp_path,
        cluster,
        kafka_bootstrap,
        db,
        **{
            "snapshot.mode": "no_data",
            "signal.data.collection": f"{db}.signals",
            "incremental.snapshot.chunk.size": 50,
            "collection.exclude.list": f"{db}\\.signals",
        },
    )
    big = f"{fleet.prefix}.{db}.big"

    def reads() -> set[int]:
        return {
            json.loads(decode(m)[0]["id"])
            for m in read_topic(kafka_bootstrap, big, timeout=30)
            if (decode(m)[1] or {}).get("op") == "r"
        }

    try:
        shard00 = fleet.client("shard00")[db]
        shard00.big.insert_many([{"_id": i, "pad": "x" * 200} for i in range(3000)])
        fleet.start(2)
        wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
        wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
        leaving = fleet.holder(0)
        shard00.signals.insert_one(
            {"_id": "snap-1", "type": "execute-snapshot", "data": {"data-collections": [f"{db}.big"]}}
        )
        wait_until(lambda: len(reads()) >= 300, "the incremental snapshot under way")
        assert leaving.stop(signal.SIGTERM) == 0, leaving.stderr
        read_before = reads()
        assert len(read_before) < 3000, "the snapshot ended before its task moved: nothing tested"
        taker = next(w for w in fleet.workers if w is not leaving)
        wait_until(lambda: "task 0 (shard00-rs): taking it over" in taker.stderr, "task 0 taken over")
        wait_until(lambda: "continuing incremental snapshot" in taker.stderr, "the snapshot continued")
        wait_until(lambda: reads() == set(range(3000)), "every document read", timeout=120)
        assert taker.stop(signal.SIGTERM) == 0, taker.stderr
    finally:
        fleet.close()


def test_heartbeats_keep_coming_from_the_new_owner_of_a_moved_task_and_its_offsets_keep_advancing(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    """``heartbeat.interval.ms`` after a graceful handover: one task (the cluster read as one replica set), so every
    heartbeat on ``__debezium-heartbeat.<topic.prefix>`` is that task's; offsets are flushed every 60 s, so a commit
    within the test comes from a heartbeat."""
    fleet = Fleet(
        tmp_path,
        cluster,
        kafka_bootstrap,
        **{"mongodb.connection.mode": "sharded", "heartbeat.interval.ms": 300, "offset.flush.interval.ms": 60000},
    )
    heartbeats = f"__debezium-heartbeat.{fleet.prefix}"

    def beats() -> list[int]:
        found = []
        for msg in read_topic(kafka_bootstrap, heartbeats, timeout=30):
            key, value = decode(msg)
            assert key == {"serverName": fleet.prefix}, key
            found.append(int((value or {})["ts_ms"]))
        return found

    def stored() -> tuple[int, int]:
        offset = fleet.stored().get("configRS") or {}
        return int(offset.get("sec", 0)), int(offset.get("ord", 0))

    client: MongoClient[Doc] = MongoClient(cluster.config_uri)
    try:
        first = fleet.start(1)[0]
        wait_until(lambda: fleet.streams_open(first) >= 1, "the first worker streaming", timeout=120)
        client[fleet.db].skipped.insert_one({"_id": "moves-the-position"})  # not captured: only a heartbeat commits
        wait_until(lambda: len(beats()) >= 3 and stored() > (0, 0), "heartbeats and a commit by the first worker")
        second = fleet.start(1)[0]
        wait_until(lambda: shares(fleet, 2) or len(fleet.assignment()) == 2, "the second worker in the group")
        assert first.stop(signal.SIGTERM) == 0, first.stderr
        moved_at_ms = int(time.time() * 1000)
        before = stored()
        wait_until(lambda: "task 0 (configRS): taking it over" in second.stderr, "the task taken over", timeout=60)
        wait_until(lambda: fleet.streams_open(second) >= 1, "the second worker streaming", timeout=60)
        wait_until(lambda: sum(ts > moved_at_ms for ts in beats()) >= 3, "heartbeats from the new owner")
        client[fleet.db].skipped.insert_one({"_id": "after-the-move"})
        wait_until(lambda: stored() > before, "the new owner's heartbeat committing a later position")
        assert second.stop(signal.SIGTERM) == 0, second.stderr
    finally:
        client.close()
        fleet.close()


def kafka_signals(db: str) -> dict[str, Any]:
    """Settings of a connector that streams only (no snapshot) and takes signals from the ``kafka`` channel too."""
    return {
        "snapshot.mode": "no_data",
        "signal.data.collection": f"{db}.signals",
        "signal.enabled.channels": "source,kafka",
        "signal.poll.interval.ms": 200,
        "collection.exclude.list": f"{db}\\.signals",
    }


def snapshot_reads(bootstrap: str, topic: str) -> Counter[int]:
    """How many times each integer ``_id`` of ``topic`` was read by a snapshot (``op: r``)."""
    found: Counter[int] = Counter()
    for msg in read_topic(bootstrap, topic, timeout=30):
        key, value = decode(msg)
        if (value or {}).get("op") == "r":
            found[json.loads(key["id"])] += 1
    return found


def test_a_kafka_signal_sent_after_its_task_moved_runs_once_on_the_new_owner_and_one_handled_before_never_again(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    """The ``kafka`` signal channel in a group: ``execute-snapshot`` of a collection only shard00 holds, once before
    task 0 moves and once after (then a blocking one and a last incremental one): each is run exactly once."""
    db = f"it_{uuid.uuid4().hex[:12]}"
    fleet = Fleet(
        tmp_path,
        cluster,
        kafka_bootstrap,
        db,
        **kafka_signals(db),
        **{"incremental.snapshot.chunk.size": 50},
    )
    big = f"{fleet.prefix}.{db}.big"

    def reads() -> Counter[int]:
        return snapshot_reads(kafka_bootstrap, big)

    def send(signal_id: str, *args: str) -> None:
        sent = run_cli(
            "--config", str(fleet.config), "signal", "send", "execute-snapshot", "--channel", "kafka",
            "--collections", f"{db}.big", "--id", signal_id, *args,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr

    def completed() -> str | None:
        return (fleet.stored().get("shard00-rs") or {}).get("incremental_snapshot_completed")

    try:
        fleet.client("shard00")[db].big.insert_many([{"_id": i} for i in range(120)])
        fleet.start(2)
        wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
        wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
        send("before-move")
        wait_until(lambda: completed() == "before-move", "the first snapshot completed and committed")
        assert reads() == Counter(dict.fromkeys(range(120), 1))
        leaving = fleet.holder(0)
        wait_until(lambda: "reading signals for" in leaving.stderr, "the channel read by task 0's first owner")
        assert leaving.stop(signal.SIGTERM) == 0, leaving.stderr
        taker = next(w for w in fleet.workers if w is not leaving)
        wait_until(lambda: "task 0 (shard00-rs): taking it over" in taker.stderr, "task 0 taken over", timeout=60)
        wait_until(lambda: fleet.streams_open(taker) >= 3, "every task streaming on the other worker", timeout=60)
        send("after-move")
        wait_until(lambda: completed() == "after-move", "the second snapshot completed on the new owner", timeout=90)
        assert reads() == Counter(dict.fromkeys(range(120), 2))  # the first signal was not run again
        send("blocking-after-move", "--snapshot-type", "blocking")  # a blocking snapshot on the new owner
        wait_until(lambda: min(reads().values()) >= 3, "the blocking snapshot's reads")
        send("last")
        wait_until(lambda: completed() == "last", "the last snapshot completed")
        assert reads() == Counter(dict.fromkeys(range(120), 4))  # each signal once
        assert "blocking snapshot done: streaming resumes" in taker.stderr
        assert taker.stop(signal.SIGTERM) == 0, taker.stderr
    finally:
        fleet.close()


def test_each_task_keeps_its_own_kafka_signal_position_a_signal_the_others_handled_while_it_was_failed_still_runs(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    """Every task of a connector reads the ``kafka`` signal channel; where each goes on is in its own offset, not
    the channel's consumer group (which the other tasks moved past the signal while task 0 was FAILED)."""
    with ShardedCluster(shards=3, data_dir=tmp_path / "cluster") as cluster:
        db = f"it_{uuid.uuid4().hex[:12]}"
        fleet = Fleet(
            tmp_path,
            cluster,
            kafka_bootstrap,
            db,
            **RETRY_BUDGET,
            **kafka_signals(db),
        )
        big = f"{fleet.prefix}.{db}.big"

        def reads() -> Counter[int]:
            return snapshot_reads(kafka_bootstrap, big)

        def completed(partition: str) -> str | None:
            return (fleet.stored().get(partition) or {}).get("incremental_snapshot_completed")

        try:
            fleet.client("shard00")[db].big.insert_many([{"_id": i} for i in range(60)])
            (worker,) = fleet.start(1)
            wait_until(lambda: shares(fleet, 1), "the worker holding every task", timeout=120)
            wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
            wait_until(
                lambda: all("signal_offsets" in o for o in fleet.stored().values()) and len(fleet.stored()) == 3,
                "each task's signal position in its offset",
            )
            cluster.shards["shard00"].stop()
            wait_until(lambda: "task 0 (shard00-rs) failed" in worker.stderr, "task 0 failing")
            sent = run_cli(
                "--config", str(fleet.config), "signal", "send", "execute-snapshot", "--channel", "kafka",
                "--collections", f"{db}.big", "--id", "while-failed",
            )  # fmt: skip
            assert sent.returncode == 0, sent.stderr
            wait_until(  # the others read it (it selects nothing on their shards) and the group's offset moved past it
                lambda: all(fleet.stored()[p]["signal_offsets"] == {"0": 1} for p in ("shard01-rs", "shard02-rs")),
                "the other tasks handling the signal",
            )
            wait_until(lambda: signal_group_offset(fleet) == 1, "the signal group's offset past the signal")
            cluster.shards["shard00"].start()
            restarted = run_cli("--config", str(fleet.config), "status", "--restart", "0")
            assert restarted.returncode == 0, restarted.stderr
            wait_until(lambda: completed("shard00-rs") == "while-failed", "task 0 running the signal", timeout=90)
            assert reads() == Counter(dict.fromkeys(range(60), 1))
            assert "the task's stored position" in worker.stderr
            assert worker.stop(signal.SIGTERM) == 0, worker.stderr
        finally:
            fleet.close()


def signal_group_offset(fleet: Fleet) -> int:
    """The offset the ``kafka`` signal channel's consumer group (``signal.kafka.groupId``) committed on partition 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": fleet.bootstrap, "group.id": "kafka-signal"})
    try:
        (found,) = consumer.committed([TopicPartition(f"{fleet.prefix}-signal", 0)], timeout=10)
        return int(found.offset)
    finally:
        consumer.close()


def test_a_task_whose_run_ends_is_finished_stays_with_its_worker_and_is_not_run_again_when_it_moves(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    """``snapshot.mode=initial_only``: each task snapshots its shard and ends; it is FINISHED, not restarted by its
    worker, and a worker that takes it over finds it done in its offset (nothing is read again)."""
    fleet = Fleet(tmp_path, cluster, kafka_bootstrap, **{"snapshot.mode": "initial_only"})
    try:
        written = []
        for shard in sorted(cluster.shards):
            docs = [{"_id": f"{shard}-{i}"} for i in range(20)]
            fleet.client(shard)[fleet.db].orders.insert_many(docs)
            written += [d["_id"] for d in docs]
        workers = fleet.start(2)
        wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
        wait_until(
            lambda: [t["state"] for t in task_states(fleet).values()] == ["FINISHED"] * 3,
            "every task FINISHED",
            timeout=120,
        )
        assert fleet.ids() == Counter(dict.fromkeys(written, 1))
        states = task_states(fleet)
        assert all(t["worker_id"] is not None for t in states.values())  # still assigned
        assert all(w.proc.poll() is None for w in workers)
        for worker, tasks in zip(workers, held(fleet, workers), strict=True):  # not started again by its worker
            assert worker.stderr.count("its run ended (FINISHED)") == len(tasks), worker.stderr
        leaving = fleet.holder(0)
        taker = next(w for w in workers if w is not leaving)
        assert leaving.stop(signal.SIGTERM) == 0, leaving.stderr
        wait_until(lambda: shares(fleet, 1), "the other worker holding every task", timeout=60)
        wait_until(lambda: taker.stderr.count("its run ended (FINISHED)") == 3, "the moved tasks FINISHED again")
        wait_until(
            lambda: all(t["state"] == "FINISHED" and t["worker_id"].endswith(f"-{taker.proc.pid}")
                        for t in task_states(fleet).values()),
            "every task FINISHED with the other worker",
        )  # fmt: skip
        assert "snapshot.mode=initial_only and the snapshot is complete" in taker.stderr
        assert fleet.ids() == Counter(dict.fromkeys(written, 1))  # nothing read again
        assert fleet.streams_open(taker) == 0
        assert taker.stop(signal.SIGTERM) == 0, taker.stderr
    finally:
        fleet.close()


def held(fleet: Fleet, workers: list[CliProcess]) -> list[tuple[int, ...]]:
    assignment = fleet.assignment()
    return [assignment.get(w.proc.pid, ()) for w in workers]


def test_workers_started_together_wait_for_the_group_to_settle_and_each_starts_only_its_own_task(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    """``group.settle.ms``: three workers started at once; none starts a task it then hands to another."""
    fleet = Fleet(tmp_path, cluster, kafka_bootstrap, **{"group.settle.ms": 6000})
    try:
        workers = fleet.start(3)
        wait_until(lambda: shares(fleet, 3), "three workers holding one task each", timeout=120)
        wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
        for worker in workers:
            assert worker.stderr.count(": taking it over") == 1, worker.stderr
            assert "stopping and committing them first" not in worker.stderr, worker.stderr
            assert "waiting for the group to settle" in worker.stderr
        assert sorted(len(tasks) for tasks in fleet.assignment().values()) == [1, 1, 1]
        for worker in workers:
            assert worker.stop(signal.SIGTERM) == 0, worker.stderr
    finally:
        fleet.close()


def probe(port: int, path: str) -> tuple[int, Doc]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())
    except OSError:
        return 0, {}


def test_one_task_runs_on_one_worker_the_other_is_a_ready_standby_that_takes_it_over(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    fleet = Fleet(tmp_path, cluster, kafka_bootstrap, **{"mongodb.connection.mode": "sharded"})  # one task
    ports = [free_port(), free_port()]
    try:
        first = fleet.start(1, "--metrics-port", str(ports[0]))[0]
        wait_until(lambda: probe(ports[0], "/ready")[1].get("tasks") == ["configRS"], "the first worker's task")
        standby = fleet.start(1, "--metrics-port", str(ports[1]))[0]
        wait_until(
            lambda: probe(ports[1], "/ready") == (200, {"status": "ready", "group": fleet.group, "tasks": []}),
            "the standby ready",
        )
        assert probe(ports[0], "/health") == (200, {"status": "up"})
        client: MongoClient[Doc] = MongoClient(cluster.config_uri)  # the replica set captured (no mongos here)
        try:
            client[fleet.db].orders.insert_one({"_id": "before"})
            wait_until(lambda: "before" in fleet.ids(), "the first worker's change")
            assert first.stop(signal.SIGTERM) == 0, first.stderr
            wait_until(lambda: probe(ports[1], "/ready")[1].get("tasks") == ["configRS"], "the standby holding it")
            client[fleet.db].orders.insert_one({"_id": "after"})
            wait_until(lambda: "after" in fleet.ids(), "the standby streaming")
        finally:
            client.close()
        assert fleet.ids() == Counter({"before": 1, "after": 1})
        assert standby.stop(signal.SIGTERM) == 0, standby.stderr
    finally:
        fleet.close()


def test_a_worker_whose_configuration_captures_other_tasks_than_the_group_defines_exits_3(
    tmp_path: Path, fleet: Fleet
) -> None:
    (worker,) = fleet.start(1)
    wait_until(lambda: shares(fleet, 1), "the group's tasks assigned", timeout=120)
    other = tmp_path / "other.yaml"
    other.write_text(
        fleet.config.read_text().replace('mongodb.connection.mode: "replica_set"', "mongodb.connection.mode: sharded")
    )
    result = run_cli("--config", str(other), "stream", timeout=120)
    assert result.returncode == ExitCode.CONFIG, result.stderr
    assert "the workers of a group must run the same configuration" in result.stderr
    assert "shard00-rs, shard01-rs, shard02-rs" in result.stderr
    assert worker.proc.poll() is None
    assert worker.stop(signal.SIGTERM) == 0, worker.stderr


def test_a_starting_worker_fences_an_instance_of_the_connector_run_without_group_id(
    tmp_path: Path, fleet: Fleet
) -> None:
    alone = tmp_path / "alone.yaml"
    alone.write_text("\n".join(line for line in fleet.config.read_text().splitlines() if "group.id" not in line))
    standalone = CliProcess("--config", str(alone), "stream")
    fleet.workers.append(standalone)  # killed by the fixture whatever happens
    wait_until(lambda: fleet.streams_open(standalone) >= 3, "the standalone instance streaming every shard")
    (worker,) = fleet.start(1)
    wait_until(lambda: shares(fleet, 1), "the worker holding every task", timeout=120)
    orders = fleet.client("shard01")[fleet.db].orders
    orders.insert_one({"_id": "after-the-worker"})  # the standalone one's next commit is refused
    assert standalone.proc.wait(timeout=60) == ExitCode.FENCED, standalone.stderr
    assert f"connector '{fleet.connector}' was fenced" in standalone.stderr
    wait_until(lambda: "after-the-worker" in fleet.ids(), "the worker streaming")
    assert worker.stop(signal.SIGTERM) == 0, worker.stderr


def test_group_mode_needs_the_kafka_offset_store(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "name: c\nmongodb.connection.string: mongodb://127.0.0.1:1/?replicaSet=rs0\ntopic.prefix: p\n"
        "kafka.bootstrap.servers: 127.0.0.1:1\ngroup.id: fleet\n"
    )
    result = run_cli("--config", str(config), "stream", timeout=60)
    assert result.returncode == ExitCode.CONFIG, result.stderr
    assert "group.id ('fleet') needs offset.storage: kafka" in result.stderr


def test_a_shard_added_while_the_group_runs_becomes_a_task_and_a_removed_one_ends_its_task(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    with ShardedCluster(shards=2, data_dir=tmp_path / "cluster") as cluster:
        fleet = Fleet(tmp_path, cluster, kafka_bootstrap)
        try:
            workers = fleet.start(2)
            fleet.wait_until(lambda: shares(fleet, 2), "two workers holding one task each", timeout=120)
            fleet.wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
            added = cluster.add_shard()
            assert added.repl_set == "shard02-rs"
            fleet.wait_until(lambda: shares(fleet, 2), "the new shard's task assigned", timeout=90)
            fleet.wait_until(
                lambda: any("task 2 (shard02-rs): taking it over" in w.stderr for w in workers), "the new task started"
            )
            fleet.client("shard02")[fleet.db].orders.insert_one({"_id": "on-new-shard"})
            fleet.wait_until(lambda: "on-new-shard" in fleet.ids(), "the new shard's change in Kafka", timeout=90)

            removed = cluster.shards["shard00"]
            fleet.client("shard00")  # connected before the shard is dropped from the list
            cluster.remove_shard("shard00", stop_server=False)
            try:
                fleet.wait_until(
                    lambda: any("shard00-rs left: its task stops" in w.stderr for w in workers),
                    "the removed shard's task to end",
                    timeout=90,
                )
                fleet.client("shard01")[fleet.db].orders.insert_one({"_id": "after-shard00-left"})
                fleet.wait_until(
                    lambda: "after-shard00-left" in fleet.ids(), "a shard still in the cluster streaming on"
                )
                assert all(w.proc.poll() is None for w in workers)
            finally:
                removed.stop()
            for worker in workers:
                assert fleet.stop(worker) == 0, fleet.logs()
        finally:
            fleet.close()


RETRY_BUDGET = {  # a task whose server is gone fails after a few seconds of retries
    "connect.max.attempts": 2,
    "connect.backoff.initial.delay.ms": 100,
    "connect.backoff.max.delay.ms": 200,
    "mongodb.server.selection.timeout.ms": 1000,
    # not connect.timeout.ms: it bounds Kafka's requests (the tasks topic's first write among them), not MongoDB's;
    # at 1 s a worker on a loaded machine exited 4 at start-up and the group never had its two workers
}


def task_states(fleet: Fleet) -> dict[int, Doc]:
    shown = run_cli("--config", str(fleet.config), "status", "--output", "json")
    assert shown.returncode == 0, shown.stderr
    return {t["id"]: t for t in json.loads(shown.stdout)["tasks"]}


def test_a_failed_task_is_failed_in_status_its_worker_runs_the_others_and_a_restart_brings_it_back(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    """As in Kafka Connect: a task that fails is marked FAILED (with its error) and stays with its worker, which
    keeps its other tasks and its place in the group; ``status --restart TASK`` starts it again."""
    with ShardedCluster(shards=3, data_dir=tmp_path / "cluster") as cluster:
        fleet = Fleet(tmp_path, cluster, kafka_bootstrap, **RETRY_BUDGET)
        ports = [free_port(), free_port()]
        try:
            for port in ports:
                fleet.start(1, "--metrics-port", str(port))
            fleet.wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
            fleet.wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
            pid, (failing, other) = next((p, t) for p, t in fleet.assignment().items() if len(t) == 2)
            busy = next(w for w in fleet.workers if w.proc.pid == pid)
            port = ports[fleet.workers.index(busy)]
            shard = {task: f"shard{task:02d}" for task in range(3)}

            cluster.shards[shard[failing]].stop()  # its server gone for longer than the retries: the task fails
            fleet.wait_until(lambda: f"task {failing} ({shard[failing]}-rs) failed" in busy.stderr, "the task failing")
            assert busy.proc.poll() is None, busy.stderr  # the worker runs on
            fleet.client(shard[other])[fleet.db].orders.insert_one({"_id": "on-its-other-task"})
            fleet.wait_until(lambda: "on-its-other-task" in fleet.ids(), "the worker's other task streaming")
            fleet.wait_until(lambda: task_states(fleet)[failing]["state"] == "FAILED", "status saying FAILED")
            states = task_states(fleet)
            assert states[failing]["worker_id"].endswith(f"-{pid}")  # still assigned to its worker
            assert "unreachable" in states[failing]["last_error"], states[failing]
            assert states[failing]["failed_on"].endswith(f"-{pid}")
            assert [states[t]["state"] for t in sorted(states) if t != failing] == ["RUNNING", "RUNNING"]
            table = run_cli("--config", str(fleet.config), "status")
            assert table.returncode == 0 and table.stdout.count("FAILED") == 1, table.stdout
            assert pid in fleet.assignment()  # in the group, holding both tasks
            assert sorted(fleet.assignment()[pid]) == sorted([failing, other])
            assert probe(port, "/health") == (200, {"status": "up"})
            assert probe(port, "/ready")[1]["failed"] == [f"{shard[failing]}-rs"]

            running = run_cli("--config", str(fleet.config), "status", "--restart", str(other))
            assert running.returncode == ExitCode.USAGE, running.stderr
            assert "is RUNNING, not FAILED or FINISHED" in running.stderr
            unknown = run_cli("--config", str(fleet.config), "status", "--restart", "9")
            assert unknown.returncode == ExitCode.USAGE and "has no task 9" in unknown.stderr, unknown.stderr

            cluster.shards[shard[other]].stop()  # every task of the worker failed: alive, not ready
            fleet.wait_until(
                lambda: f"task {other} ({shard[other]}-rs) failed" in busy.stderr, "its other task failing"
            )
            fleet.wait_until(lambda: probe(port, "/ready")[0] == 503, "the worker not ready")
            assert probe(port, "/ready")[1]["reason"] == "every task of this worker failed"
            assert probe(port, "/health") == (200, {"status": "up"}) and busy.proc.poll() is None

            for task in (failing, other):
                cluster.shards[shard[task]].start()
                restarted = run_cli("--config", str(fleet.config), "status", "--restart", str(task))
                assert restarted.returncode == 0, restarted.stderr
            fleet.wait_until(
                lambda: all(t["state"] == "RUNNING" for t in task_states(fleet).values()), "every task RUNNING again"
            )
            assert busy.stderr.count("restart requested") == 2
            for task in (failing, other):
                fleet.client(shard[task])[fleet.db].orders.insert_one({"_id": f"after-restart-{task}"})
            fleet.wait_until(
                lambda: (
                    {"after-restart-0", "after-restart-1", "after-restart-2"} & set(fleet.ids())
                    >= {f"after-restart-{failing}", f"after-restart-{other}"}
                ),
                "the restarted tasks streaming",
            )
            fleet.wait_until(lambda: probe(port, "/ready")[0] == 200, "the worker ready again")
            for worker in fleet.workers:
                assert fleet.stop(worker) == 0, fleet.logs()
        finally:
            fleet.close()


def test_with_exactly_once_a_killed_workers_tasks_resume_elsewhere_with_every_change_once(
    tmp_path: Path, cluster: ShardedCluster, kafka_bootstrap: str
) -> None:
    """exactly.once.support in a group: each task's transactional producer (``mongocdc-<name>-<partition>``)
    moves with the task; the new owner's registration aborts what the killed worker left open. The connector has a
    transform chain (its records routed to a topic of their own, with a header added): every worker applies it."""
    from tests.integration.helpers_connector import read_committed

    chain = {
        "transforms": "route,mark",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": ".*\\.orders",
        "transforms.route.replacement": "$0-routed",
        "transforms.mark.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.mark.header": "via",
        "transforms.mark.value.literal": "fleet",
    }
    fleet = Fleet(tmp_path, cluster, kafka_bootstrap, **{"exactly.once.support": "required", **chain})
    fleet.topic += "-routed"

    def created() -> Counter[str]:
        found: Counter[str] = Counter()
        for msg in read_committed(kafka_bootstrap, fleet.topic):
            key, value = decode(msg)
            if value is not None and value["op"] in ("c", "r"):
                found[json.loads(key["id"])] += 1
        return found

    try:
        fleet.start(2)
        wait_until(lambda: shares(fleet, 2), "two workers sharing three tasks", timeout=120)
        wait_until(lambda: all_streaming(fleet), "every task streaming", timeout=120)
        assert all("exactly-once delivery (transactional.id" in w.stderr for w in fleet.workers)
        writer = Writer(fleet)
        writer.start()
        try:
            wait_until(lambda: len(created()) >= 30, "changes of every shard in Kafka")
            killed = fleet.holder(0)
            killed.proc.kill()
            assert killed.proc.wait(timeout=30) == -signal.SIGKILL
            survivor = next(w for w in fleet.workers if w is not killed)
            wait_until(lambda: shares(fleet, 1), "the survivor holding every task", timeout=SESSION_MS / 1000 + 60)
            wait_until(lambda: fleet.streams_open(survivor) >= 3, "every task streaming on the survivor", timeout=60)
            mark = len(writer.written)
            wait_until(lambda: len(created()) >= mark + 30, "changes after the takeover")
        finally:
            written = writer.stop()
        wait_until(lambda: set(written) <= set(created()), "every change in Kafka", timeout=60)
        assert survivor.stop(signal.SIGTERM) == 0, survivor.stderr
        counts = created()
        assert set(counts) == set(written)  # nothing lost
        assert [i for i, n in counts.items() if n > 1] == []  # and nothing twice, read committed
        assert all(("via", b"fleet") in (msg.headers() or []) for msg in read_committed(kafka_bootstrap, fleet.topic))
    finally:
        fleet.close()


def test_sigterm_ends_a_worker_promptly_while_a_task_retries_a_shard_whose_server_is_gone(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    """A stop is honoured while a task's change stream retries its gone server (the default retries: minutes)."""
    with ShardedCluster(shards=2, data_dir=tmp_path / "cluster") as cluster:
        fleet = Fleet(tmp_path, cluster, kafka_bootstrap)
        try:
            (worker,) = fleet.start(1)
            fleet.wait_until(lambda: shares(fleet, 1), "the worker holding both tasks", timeout=120)
            fleet.wait_until(lambda: fleet.streams_open(worker) >= 2, "every task streaming", timeout=120)
            cluster.shards["shard00"].stop()
            fleet.wait_until(
                lambda: "change stream lost its connection" in worker.stderr, "the task retrying its gone server"
            )
            started = time.monotonic()
            assert fleet.stop(worker, timeout=60) == 0, fleet.logs()
            assert time.monotonic() - started < 30, fleet.logs()  # not the retries against the gone server (minutes)
        finally:
            fleet.close()
