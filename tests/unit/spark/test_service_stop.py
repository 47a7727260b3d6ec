"""`spark run` as a service, without Spark: the JVM starts with SIGTERM ignored, the stop waits for the running
batch and its commit, a batch that begins after the stop applies nothing, and the Delta reader switch."""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from mongocdc.spark import environment
from mongocdc.spark.launcher import DELETION_VECTORS, LaunchPlan, jvm_ignoring_sigterm, plan_conf
from mongocdc.spark.options import JobOptions, TableFormat

OPTIONS = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c", table_format=TableFormat.delta)


def ignored_signals(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn in /proc status")


def test_the_jvm_pyspark_starts_inside_ignores_sigterm_and_sigint_and_nothing_else_changes() -> None:
    from pyspark import java_gateway

    original = java_gateway.Popen

    def pyspark_preexec() -> None:  # what pyspark gives its Popen
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with jvm_ignoring_sigterm():
        child = java_gateway.Popen(["sleep", "30"], preexec_fn=pyspark_preexec)  # type: ignore[attr-defined]
    try:
        mask = ignored_signals(child.pid)
        assert mask & (1 << (signal.SIGTERM - 1)) and mask & (1 << (signal.SIGINT - 1))
        child.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(0.3)  # still there
    finally:
        child.kill()
        child.wait()
    assert java_gateway.Popen is original
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN  # this process still handles it


class FakeFs:
    def __init__(self) -> None:
        self.files: set[str] = set()

    def exists(self, path: str) -> bool:
        return path in self.files


def stopping() -> tuple[Any, FakeFs, threading.Event]:
    from mongocdc.spark.job import BatchApplier, _Stopping

    applier = BatchApplier(spark=None, options=OPTIONS, compaction=object())  # type: ignore[arg-type]
    fs, now = FakeFs(), threading.Event()
    return _Stopping(applier, fs, "/c/", now), fs, now  # type: ignore[arg-type]


def test_the_stop_waits_for_the_running_batch_then_for_its_commit() -> None:
    from mongocdc.spark.job import COMMIT_WAIT_S

    state, fs, _ = stopping()
    state.applier.doing = (7, 0.0, "applying 3 changes to shop.orders")
    assert not state.ready(100.0)
    state.applier.doing, state.applier.last_applied = None, 7
    assert not state.ready(101.0)  # applied, not committed yet
    fs.files.add("/c/commits/7")
    assert state.ready(102.0)

    late, _, _ = stopping()
    late.applier.last_applied = 8
    assert not late.ready(0.0)
    assert late.ready(COMMIT_WAIT_S + 1)  # a commit that never comes does not hold the stop forever


def test_between_batches_the_stop_is_at_once_and_a_second_signal_does_not_wait() -> None:
    idle, _, _ = stopping()
    assert idle.ready(0.0)
    busy, _, now = stopping()
    busy.applier.doing = (3, 0.0, "reading its records from Kafka")
    now.set()
    assert busy.ready(1.0)


def test_a_batch_that_begins_after_the_stop_applies_nothing() -> None:
    from mongocdc.spark.job import STOP_BEFORE_BATCH, BatchApplier, StopBeforeBatch

    stop = threading.Event()
    applier = BatchApplier(spark=None, options=OPTIONS, compaction=object(), stop=stop)  # type: ignore[arg-type]
    stop.set()
    with pytest.raises(StopBeforeBatch, match=f"{STOP_BEFORE_BATCH} 5"):
        applier(None, 5)  # type: ignore[arg-type]  # its records are never looked at
    assert applier.doing is None and applier.last_applied is None and applier.applied == {}


def test_deletion_vectors_are_on_for_new_delta_tables_unless_switched_off() -> None:
    spark_packages = environment.packages_for_installed()
    assert plan_conf(LaunchPlan(OPTIONS), spark_packages)[DELETION_VECTORS] == "true"
    assert plan_conf(LaunchPlan(OPTIONS, deletion_vectors=False), spark_packages)[DELETION_VECTORS] == "false"
    # a --conf still wins
    forced = LaunchPlan(OPTIONS, deletion_vectors=False, conf={DELETION_VECTORS: "true"})
    assert plan_conf(forced, spark_packages)[DELETION_VECTORS] == "true"
