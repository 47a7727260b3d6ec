"""The target cluster goes down under a running replicator, then SIGTERM.

The stop must take at most ``--shutdown-timeout`` (plus the process's own start and exit), even with the
producer's queue full of copies the target cannot take; only what the target acknowledged is committed;
exit 4 names the target cluster and the timeout; librdkafka's connection errors come as one line per
change of state, not by the hundred. When the target is back, a restart copies what was not acknowledged
and a group moved to the target misses nothing and reads again exactly what the report says.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import CliProcess, run_cli, wait_until
from tests.integration.replication.conftest import (
    checkpointed,
    committed,
    create_topic,
    high_watermarks,
    make_records,
    produce,
    python_group_read,
    read_again,
    start_replicator,
    write_config,
)
from tests.services.kafka import KafkaBroker

pytestmark = pytest.mark.kafka

PARTITIONS = 3
SHUTDOWN_TIMEOUT = 4


def statuses(proc: CliProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in list(proc.stdout_lines) if line.startswith("{")]


def copied(proc: CliProcess) -> int:
    if proc.proc.poll() is not None:
        raise AssertionError(f"replicate exited with {proc.proc.returncode}:\n{proc.stderr}")
    last = statuses(proc)[-1:] or [{}]
    return int(last[0].get("copied", 0))


def test_sigterm_with_the_target_down_stops_within_the_timeout_and_commits_only_what_was_acknowledged(
    kafka_bootstrap: str, own_kafka: KafkaBroker, tmp_path: Path
) -> None:
    cluster_b = own_kafka  # the test halts it under the replicator and brings it back
    a, b = kafka_bootstrap, cluster_b.bootstrap
    topic, name, group = f"down-{uuid.uuid4().hex[:8]}", f"down-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(a, topic, PARTITIONS)
    first = make_records("f", 600)
    produce(a, topic, first)
    # a small producer queue: with the target down it fills at once and the copy loop waits for room
    config = write_config(tmp_path, **{"dest.kafka.queue.buffering.max.messages": 100})
    proc = start_replicator(config, a, b, topic, name, "--groups", group, "--shutdown-timeout", str(SHUTDOWN_TIMEOUT))
    try:
        wait_until(lambda: copied(proc) == 600 and sum(committed(a, name, topic, PARTITIONS).values()) == 600,
                   "600 copies committed")  # fmt: skip
        cluster_b.halt()
        later = make_records("l", 2000, start_ts=1_710_000_000_000)
        produce(a, topic, later)
        wait_until(lambda: "does not answer" in proc.stderr, "the target reported down")
        wait_until(lambda: "the producer's queue is full" in proc.stderr, "copies the target cannot take")
        began = time.monotonic()
        code = proc.stop(signal.SIGTERM, timeout=60)
        took = time.monotonic() - began
    finally:
        proc.kill()
    assert code == 4, proc.stderr
    assert took < SHUTDOWN_TIMEOUT + 8, f"the stop took {took:.1f} s"
    stderr = proc.stderr
    assert f"error: stopped without the target Kafka cluster at {b} acknowledging" in stderr
    assert f"within the shutdown timeout ({SHUTDOWN_TIMEOUT} s)" in stderr
    assert f"hint: check that the target cluster at {b} is up" in stderr and "--shutdown-timeout" in stderr
    assert "connect.max.attempts" not in stderr
    # one line when the target went down, none of librdkafka's repeated connection errors
    assert stderr.count("does not answer") == 1, stderr
    assert stderr.count("Connect to") <= 1 and stderr.count("Connection refused") <= 1, stderr
    assert sum(committed(a, name, topic, PARTITIONS).values()) == 600  # only the acknowledged copies

    # the target is back: a restart copies the rest, and a group moves over without missing anything
    cluster_b.start()
    proc = start_replicator(config, a, b, topic, name, "--groups", group)
    try:
        wait_until(lambda: sum(high_watermarks(b, topic, PARTITIONS).values()) >= 2600, "the rest on B", timeout=120)
        on_a = python_group_read(a, group, topic, 1300, reset="earliest")
        wait_until(lambda: checkpointed(b, topic, group) == on_a.committed, "checkpoints of the group")
    finally:
        assert proc.stop() == 0, proc.stderr
    result = run_cli("--config", str(config), "failover", "translate", "--group", group, "--source", a,
                     "--target", b, "--apply", "--output", "json", timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    on_b = python_group_read(b, group, topic, None, reset="earliest")
    everything = {r.key.decode() for r in [*first, *later]}
    assert everything - {key for _, _, key in [*on_a.records, *on_b.records]} == set()
    again = read_again(on_a.records, on_b.records)
    for row in report["partitions"]:
        assert row["again"] == again.get(row["partition"], 0), (row, again)
