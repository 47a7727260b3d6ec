"""The worker-group benchmark: a connector with N shard tasks run by 1, 2 and 3 ``mongocdc stream`` workers.

A Kafka broker and a sharded stand-in (``tests/services/sharded.py``: a SecantusDB replica set per shard) of its
own. For each worker count, in the same run: the workers start on an empty database (each task commits its
first position), stop, ``--fleet-events`` changes are written spread over the shards, and the workers start
again; the clock runs from their start to the broker's append time of the last event (so it includes joining
the group, the rebalance and each task's start: the coordination cost) and, apart, from the first event's
append time to the last one (streaming alone).

On one machine the workers share its cores: more workers do not add capacity here, so the rows show what the
group costs, not how it scales out (each worker would have a machine of its own in production).

Then the time to hand a task over: with two workers running, the holder of task 0 is stopped (SIGTERM,
graceful) or killed (SIGKILL), and once its process is gone one change is written to its shard; the time from
the signal to the broker's append time of that change (what the task's consumers wait), and apart how long
the graceful stop itself took (flush, commit, leaving the group). A graceful handover is the leaving worker's
flush and commit plus one rebalance; a crash waits out ``session.timeout.ms`` first
(``--fleet-session-timeout-ms``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymongo

from bench.common import EndOffsets, create_topics, kafka_broker
from mongocdc.kafka.admin import KafkaAdmin
from mongocdc.kafka.errors import Endpoint

log = logging.getLogger("bench.fleet")

REPO = Path(__file__).resolve().parents[1]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fleet-shards", type=int, default=3, help="fleet: shard replica sets, one task each (3)")
    parser.add_argument("--fleet-events", type=int, default=15_000, help="fleet: changes per run (15000)")
    parser.add_argument(
        "--fleet-session-timeout-ms", type=int, default=10_000, help="fleet: session.timeout.ms (10000, Connect's)"
    )


class Worker:
    """One ``mongocdc stream`` process; its log goes to a file read for the events the benchmark waits on."""

    def __init__(self, config: Path, log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mongocdc", "--config", str(config), "stream"],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=120)
        self._log.close()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout:.0f} s")
        time.sleep(0.05)


class Connector:
    """One connector (its own group, topics and database) over the benchmark's cluster."""

    def __init__(self, workdir: Path, bootstrap: str, cluster: Any, shards: int, session_ms: int, tag: str) -> None:
        self.prefix = f"b{uuid.uuid4().hex[:8]}"
        self.db = f"fleet_{self.prefix}"
        self.group = f"bench-{self.prefix}"
        self.topic = f"{self.prefix}.{self.db}.orders"
        self.tasks_topic = f"mongocdc-tasks.{self.group}"
        self.bootstrap = bootstrap
        self.cluster = cluster
        self.shards = shards
        self.workdir = workdir / tag
        self.workdir.mkdir()
        self.config = self.workdir / "connector.yaml"
        self.config.write_text(
            "\n".join(
                [
                    f"name: bench-{self.prefix}",
                    f"mongodb.connection.string: {cluster.config_uri!r}",
                    "mongodb.connection.mode: replica_set",
                    f"topic.prefix: {self.prefix}",
                    f"database.include.list: {self.db}",
                    "offset.storage: kafka",
                    f"offset.storage.topic: {self.prefix}-offsets",
                    "offset.storage.partitions: 1",
                    f"group.id: {self.group}",
                    f"session.timeout.ms: {session_ms}",
                    f"kafka.bootstrap.servers: {bootstrap!r}",
                ]
            )
            + "\n"
        )
        create_topics(bootstrap, [self.topic], 3)
        self.admin = KafkaAdmin({"bootstrap.servers": bootstrap}, Endpoint.of({"bootstrap.servers": bootstrap}))
        self.workers: list[Worker] = []
        self.clients = {
            name: pymongo.MongoClient(cluster.uri_of(server)) for name, server in sorted(cluster.shards.items())
        }

    def start(self, n: int) -> list[Worker]:
        started = [Worker(self.config, self.workdir / f"worker-{len(self.workers) + i}.log") for i in range(n)]
        self.workers += started
        return started

    def assignment(self) -> dict[int, tuple[int, ...]]:
        _, members = self.admin.group_members(self.group, self.tasks_topic)
        return {int(m.client_id.rsplit("-", 1)[1]): m.partitions for m in members}

    def streaming(self, live: list[Worker]) -> bool:
        """Every task held by one of ``live`` and each holder's change streams open."""
        held = self.assignment()
        pids = {w.proc.pid: w for w in live}
        tasks = sorted(t for pid, ts in held.items() if pid in pids for t in ts)
        if tasks != list(range(self.shards)) or set(held) != set(pids):
            return False
        return all(pids[pid].log().count("change stream open") >= len(ts) for pid, ts in held.items())

    def holder(self, task: int) -> Worker:
        pid = next(pid for pid, ts in self.assignment().items() if task in ts)
        return next(w for w in self.workers if w.proc.pid == pid)

    def write(self, count: int) -> None:
        """``count`` inserts spread over the shards, written in parallel (one thread per shard)."""
        per_shard = count // self.shards

        def load(name: str) -> None:
            coll = self.clients[name][self.db].orders
            for start in range(0, per_shard, 500):
                coll.insert_many(
                    [{"_id": f"{name}-{i}", "pad": "x" * 900} for i in range(start, min(start + 500, per_shard))]
                )

        threads = [threading.Thread(target=load, args=(name,)) for name in self.clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def stop_all(self) -> None:
        for worker in self.workers:
            worker.stop()

    def close(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(Exception):
                worker.stop(signal.SIGKILL)
        for client in self.clients.values():
            client.close()


def rate_run(workdir: Path, bootstrap: str, cluster: Any, args: argparse.Namespace, n_workers: int) -> dict[str, Any]:
    connector = Connector(
        workdir, bootstrap, cluster, args.fleet_shards, args.fleet_session_timeout_ms, f"rate-{n_workers}"
    )
    try:
        first = connector.start(n_workers)
        wait_until(lambda: connector.streaming(first), "tasks streaming")
        time.sleep(1.5)  # past offset.flush.interval.ms: every task committed its position (no events: nothing lost)
        connector.stop_all()
        events = args.fleet_events // args.fleet_shards * args.fleet_shards
        connector.write(events)
        ends = EndOffsets(bootstrap, connector.topic)
        try:
            started = time.time()
            second = connector.start(n_workers)
            ends.wait_for(events, timeout=600, failed=lambda: any(w.proc.poll() is not None for w in second))
            last, first_append = ends.last_append_time(), ends.first_append_time()
        finally:
            ends.close()
        connector.stop_all()
        return {
            "workers": n_workers,
            "tasks": args.fleet_shards,
            "events": events,
            "events_per_s": round(events / (last - started), 1),
            "streaming_events_per_s": round(events / max(last - first_append, 1e-3), 1),
            "first_event_after_s": round(first_append - started, 2),
        }
    finally:
        connector.close()


def handover_run(workdir: Path, bootstrap: str, cluster: Any, args: argparse.Namespace) -> dict[str, float]:
    connector = Connector(workdir, bootstrap, cluster, args.fleet_shards, args.fleet_session_timeout_ms, "handover")
    ends = EndOffsets(bootstrap, connector.topic)
    try:
        live = connector.start(2)
        wait_until(lambda: connector.streaming(live), "tasks streaming")
        shard00 = connector.clients["shard00"][connector.db].orders
        result: dict[str, float] = {}
        for kind, sig in (("graceful", signal.SIGTERM), ("crash", signal.SIGKILL)):
            leaving = connector.holder(0)
            count = ends.total()
            signalled = time.time()
            leaving.proc.send_signal(sig)
            leaving.proc.wait(timeout=120)  # the probe is written once the holder is gone: only the next one reads it
            result[f"{kind}_exit_s"] = round(time.time() - signalled, 2)
            shard00.insert_one({"_id": f"probe-{kind}"})
            ends.wait_for(count + 1, timeout=120 + args.fleet_session_timeout_ms / 1000)
            result[f"{kind}_s"] = round(ends.last_append_time() - signalled, 2)
            leaving.stop()
            live = [w for w in live if w is not leaving]
            live += connector.start(1)
            wait_until(lambda live=live: connector.streaming(live), "tasks streaming again")  # type: ignore[misc]
        connector.stop_all()
        return result
    finally:
        ends.close()
        connector.close()


@contextlib.contextmanager
def _cluster(shards: int, workdir: Path) -> Iterator[Any]:
    from tests.services.sharded import ShardedCluster

    with ShardedCluster(shards=shards, data_dir=workdir / "cluster") as cluster:
        yield cluster


def bench_fleet(args: argparse.Namespace) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="mongocdc-bench-fleet-") as tmp,
        kafka_broker(args) as (bootstrap, kafka),
        _cluster(args.fleet_shards, Path(tmp)) as cluster,
    ):
        workdir = Path(tmp)
        rows = []
        for n in (1, 2, 3):
            log.info("fleet: %d task(s) on %d worker(s)", args.fleet_shards, n)
            rows.append(rate_run(workdir, bootstrap, cluster, args, n))
        log.info("fleet: handover times")
        handover = handover_run(workdir, bootstrap, cluster, args)
    return {
        "kafka": kafka,
        "mongodb": f"{args.fleet_shards} SecantusDB shard replica sets (tests/services/sharded.py)",
        "session_timeout_ms": args.fleet_session_timeout_ms,
        "rows": rows,
        "handover": handover,
    }


def render(result: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"worker group: {result['rows'][0]['tasks']} shard tasks, {result['rows'][0]['events']:,} changes per run "
        "(one machine: the workers share its cores, so this is the group's coordination cost, not scale-out)",
        f"{'workers':<10}{'events/s incl. start':>22}{'events/s streaming':>20}{'first event after':>20}",
    ]
    for row in result["rows"]:
        lines.append(
            f"{row['workers']:<10}{row['events_per_s']:>22,.0f}{row['streaming_events_per_s']:>20,.0f}"
            f"{row['first_event_after_s']:>19.1f}s"
        )
    handover = result["handover"]
    lines.append(
        f"task handover (2 workers): graceful stop {handover['graceful_s']:.1f} s (of which the stop itself "
        f"{handover['graceful_exit_s']:.1f} s), crash {handover['crash_s']:.1f} s "
        f"(session.timeout.ms {result['session_timeout_ms']})"
    )
    return lines
