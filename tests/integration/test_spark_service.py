"""`mongocdc spark run` as a service, with a real broker and real topics: SIGTERM to its process group (as systemd,
`kill -TERM -PGID`, `timeout` and `tini -g` send it) stops it after its batch with exit 0 and state `stopped`;
after SIGKILL `spark status` calls it stale; the lag is measured against the topic's end offsets; the tables
can be read by engines that know nothing of mongocdc (Delta without deletion vectors, Parquet through
`_latest` with pyarrow alone)."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.helpers import CliProcess, run_cli, wait_until
from tests.spark_support import envelope

# each test starts Spark twice or waits for a heartbeat; a busy CI machine needs longer than the suite's 300 s
pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.timeout(900)]


def produce(bootstrap: str, topic: str, db: str, keys: range) -> None:
    """Inserts of documents ``{_id: k, qty: k}`` in Debezium's envelope, as mongocdc writes them."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for k in keys:
        key, value = envelope("c", k, {"qty": k}, ts_ms=1_700_000_000_000 + k, db=db)
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


class SparkJob(CliProcess):
    """``mongocdc spark run`` started as the leader of a process group of its own, its stderr collected."""

    def __init__(self, bootstrap: str, topic: str, warehouse: Path, ivy: Path, *more: str) -> None:
        command = ["spark", "run", "--bootstrap-servers", bootstrap, "--topics", topic, "--warehouse", str(warehouse)]
        command += ["--master", "local[2]", "--conf", f"spark.jars.ivy={ivy}"]
        super().__init__(*command, "--conf", "spark.sql.shuffle.partitions=2", *more, new_session=True)

    def wait_for(self, text: str, timeout: float = 400) -> None:
        self.wait_for_log(text, timeout)

    def signal_group(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)

    def wait(self, timeout: float = 400) -> int:
        return super().wait(timeout)

    def group_left(self) -> list[int]:
        """The processes still in the job's process group (its JVM included)."""
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[2]) == self.proc.pid and fields[0] != "Z":
                    left.append(int(entry.name))
        return left

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.signal_group(signal.SIGKILL)
            self.proc.wait(timeout=30)


def status(warehouse: Path, *more: str) -> dict[str, Any]:
    result = run_cli("spark", "status", "--warehouse", str(warehouse), "--output", "json", *more)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def job_json(warehouse: Path) -> dict[str, Any]:
    from mongocdc.spark.status import read_status

    job = read_status(str(warehouse / "_mongocdc" / "checkpoint")).job
    assert job, "no job.json"
    return job


def committed(warehouse: Path) -> list[int]:
    commits = warehouse / "_mongocdc" / "checkpoint" / "commits"
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit()) if commits.is_dir() else []


def table_keys(spark: Any, warehouse: Path, db: str) -> set[int]:
    from mongocdc.spark.options import table_path
    from mongocdc.spark.sinks import read_table

    return {json.loads(row["_key"]) for row in read_table(spark, table_path(str(warehouse), db, "orders")).collect()}


def test_sigterm_to_the_process_group_stops_after_the_batch_and_a_restart_loses_nothing(
    tmp_path: Path, kafka_bootstrap: str, spark_ivy_dir: Path, spark: Any
) -> None:
    db = f"svc_{uuid.uuid4().hex[:8]}"
    topic = f"it.{db}.orders"
    warehouse = tmp_path / "warehouse"
    produce(kafka_bootstrap, topic, db, range(3000))
    job = SparkJob(
        kafka_bootstrap, topic, warehouse, spark_ivy_dir, "--max-offsets-per-trigger", "500", "--no-deletion-vectors"
    )
    try:
        job.wait_for("batch 1: reading its records from Kafka")  # batch 0 is committed, batch 1 runs
        running = job_json(warehouse)
        assert running["status"] == "running" and running["pid"] == job.proc.pid
        job.signal_group(signal.SIGTERM)  # the Python launcher and the driver JVM alike
        code = job.wait()
    finally:
        job.kill()
    assert code == 0, job.stderr
    assert "received SIGTERM: stopping after the current batch" in job.stderr
    assert "this is a bug" not in job.stderr and "Traceback" not in job.stderr, job.stderr
    wait_until(lambda: not job.group_left(), "the job's JVM to end with it", timeout=30)
    stopped = job_json(warehouse)
    assert stopped["status"] == "stopped" and stopped["error"] is None
    # every committed batch is in the table, and nothing of a batch that was not committed: one document per
    # record up to the committed offsets (each record inserts a key of its own)
    done = committed(warehouse)
    assert done and done[-1] >= 1
    applied = sum(status(warehouse)["offsets"][topic].values())
    assert 0 < applied < 3000  # (maxOffsetsPerTrigger shares its 500 out among the topic's partitions)
    assert len(table_keys(spark, warehouse, db)) == applied
    # Delta without deletion vectors: any Delta reader (protocol 1/2, no table features) reads it
    first_commit = (warehouse / db / "orders" / "_delta_log" / f"{0:020d}.json").read_text()
    actions = [json.loads(line) for line in first_commit.splitlines()]
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    metadata = next(a["metaData"] for a in actions if "metaData" in a)
    assert "deletionVectors" not in json.dumps(protocol)
    assert metadata["configuration"].get("delta.enableDeletionVectors") == "false"

    # 4 more after the stop: status measures the lag against the broker's end offsets, not the last plan
    produce(kafka_bootstrap, topic, db, range(3000, 3004))
    after_stop = status(warehouse)
    assert after_stop["status"] == "stopped" and after_stop["lag_source"] == "broker"
    assert after_stop["lag"] == 3004 - applied and after_stop["lag_by_topic"] == {topic: after_stop["lag"]}

    again = SparkJob(kafka_bootstrap, topic, warehouse, spark_ivy_dir, "--once", "--no-deletion-vectors")
    try:
        code = again.wait()
    finally:
        again.kill()
    assert code == 0, again.stderr
    assert table_keys(spark, warehouse, db) == set(range(3004))
    finished = status(warehouse)
    assert (finished["status"], finished["lag"], finished["lag_source"]) == ("finished", 0, "broker")
    # it said what it was doing, from the start to each batch's collections
    for line in (
        "starting Spark on local[2] in this process",
        "query mongocdc started: waiting for the first batch of " + topic,
        ": reading its records from Kafka",
        f"changes to {db}.orders",  # "batch N: applying 2,504 changes to <db>.orders", before the apply
        " done: ",
    ):
        assert line in again.stderr, again.stderr


def test_after_sigkill_status_says_the_job_is_stale_and_a_parquet_table_reads_with_pyarrow_alone(
    tmp_path: Path, kafka_bootstrap: str, spark_ivy_dir: Path
) -> None:
    import pyarrow.parquet as pq

    db = f"svc_{uuid.uuid4().hex[:8]}"
    topic = f"it.{db}.orders"
    warehouse = tmp_path / "warehouse"
    produce(kafka_bootstrap, topic, db, range(40))
    job = SparkJob(kafka_bootstrap, topic, warehouse, spark_ivy_dir, "--format", "parquet")
    try:
        job.wait_for("batch 0 done")
        wait_until(lambda: committed(warehouse) == [0], "batch 0's commit")
        live = status(warehouse)
        assert (live["status"], live["process"]) == ("running", "alive")
        beat = job_json(warehouse)["updated_at"]
        wait_until(lambda: job_json(warehouse)["updated_at"] != beat, "a heartbeat while the job waits", timeout=30)
        job.signal_group(signal.SIGKILL)
        assert job.wait() == -signal.SIGKILL
    finally:
        job.kill()
    assert job_json(warehouse)["status"] == "running"  # nobody was left to say otherwise
    dead = status(warehouse)
    assert (dead["status"], dead["job_status"], dead["process"]) == ("stale", "running", "gone")
    assert dead["not_updated_for"] is not None
    # another host's job (pid unknown here) is stale once its heartbeat is older than --stale-after
    doc = job_json(warehouse)
    doc["host"] = "elsewhere"
    (warehouse / "_mongocdc" / "checkpoint" / "mongocdc" / "job.json").write_text(json.dumps(doc))
    assert status(warehouse)["process"] == "unknown"
    time.sleep(1.1)  # the heartbeat must be older than the smallest --stale-after (1 s)
    assert status(warehouse, "--stale-after", "1")["status"] == "stale"
    shown = run_cli("spark", "status", "--warehouse", str(warehouse), "--stale-after", "1")
    assert "not updated for" in shown.stdout and "stale" in shown.stdout

    # the Parquet table, by an engine that reads plain Parquet: _latest names the newest version's documents
    orders = warehouse / db / "orders"
    latest = (orders / "_latest").read_text().strip()
    assert latest.startswith("_versions/") and latest.endswith("/rows")
    rows = pq.read_table(orders / latest).to_pylist()
    assert sorted(json.loads(r["_key"]) for r in rows) == list(range(40))
    assert all(json.loads(r["document"])["qty"] == json.loads(r["_key"]) for r in rows)
