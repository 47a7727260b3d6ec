"""Failover after replicator restarts and crashes, with consumers mongocdc did not write.

A → B with a restart in between: SIGTERM after everything was copied, or part way through a copy;
kill -9 part way through a copy that had committed nothing; kill -9 after copying records it had not
committed yet, above a commit. A group on Kafka's Java client reads part of A and commits offset 0 on
the partitions it did not read (the Java client commits every assigned partition), a confluent-kafka
group reads another part (committing only the partitions it read); A goes down; ``failover translate
--apply`` moves both groups to B from the checkpoints; the Java group resumes on B with
``auto.offset.reset=latest`` (the Java default, which skips whatever has no committed offset; once with
``group.protocol=consumer``), the other with the setting it had on A. Each must miss nothing, and on
each partition read again exactly as many records as the report said (``exact`` only where that is 0).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException

from tests.integration.helpers import CliProcess, run_cli, wait_until
from tests.integration.replication.conftest import (
    JavaGroupReader,
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

PARTITIONS = 4


def statuses(proc: CliProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in list(proc.stdout_lines) if line.startswith("{")]


def caught_up(proc: CliProcess, copied: int) -> bool:
    if proc.proc.poll() is not None:
        raise AssertionError(f"replicate exited with {proc.proc.returncode}:\n{proc.stderr}")
    last = statuses(proc)[-1:] or [{}]
    return last[0].get("copied") == copied and last[0].get("lag") == 0


def translate_apply(config: Path, group: str, source: str, target: str) -> dict[str, Any]:
    result = run_cli("--config", str(config), "failover", "translate", "--group", group, "--source", source,
                     "--target", target, "--apply", "--output", "json", timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["action"] == "written" and report["untranslated"] == []
    return report


def check_report(report: dict[str, Any], again: dict[int, int], committed: dict[int, int]) -> None:
    """Every committed partition translated, and what the group read again per partition is what was reported."""
    rows = {row["partition"]: row for row in report["partitions"]}
    assert {p: row["committed"] for p, row in rows.items()} == committed
    for partition, row in rows.items():
        assert row["target_offset"] is not None, row
        assert row["again"] == again.get(partition, 0), (partition, row, again)
        assert row["method"] == ("exact" if row["again"] == 0 else "sync"), row


@pytest.mark.parametrize("restart", ["sigterm", "sigterm-during", "kill", "kill-after-commit"])
def test_failover_after_a_restart_misses_nothing_and_counts_what_is_read_again(
    own_kafka: KafkaBroker, second_kafka: str, java_reader: JavaGroupReader, tmp_path: Path, restart: str
) -> None:
    a, b = own_kafka, second_kafka  # A: each test halts it (the failover), and it is back for the next
    protocol = "consumer" if restart == "kill" else "classic"  # the Java group: KIP-848's protocol in one case
    topic = f"rs-{restart}-{uuid.uuid4().hex[:8]}"
    java_group, python_group = f"java-{uuid.uuid4().hex[:6]}", f"py-{uuid.uuid4().hex[:6]}"
    name = f"rs-{uuid.uuid4().hex[:6]}"
    create_topic(a.bootstrap, topic, PARTITIONS)
    first = make_records("p", 2000)
    produce(a.bootstrap, topic, first)
    config = write_config(tmp_path)
    groups = ("--groups", f"{java_group}|{python_group}")

    def copies_on_b() -> int:
        try:
            return sum(high_watermarks(b, topic, PARTITIONS).values()) if topic in list_topics(b) else 0
        except KafkaException:  # the new topic's leaders are not settled yet
            return 0

    slow = write_config(tmp_path, **{"replication.flush.interval.ms": 600000})
    if restart == "sigterm":  # a clean stop after everything was copied
        proc = start_replicator(config, a.bootstrap, b, topic, name, *groups)
        wait_until(lambda: caught_up(proc, 2000), "2000 copies")
        assert proc.stop() == 0, proc.stderr
        copied_again = 1000
    elif restart == "sigterm-during":  # a clean stop part way through a slowed-down copy
        throttled = write_config(
            tmp_path, **{"dest.kafka.queue.buffering.max.messages": 20, "dest.kafka.linger.ms": 100}
        )
        proc = start_replicator(throttled, a.bootstrap, b, topic, name, *groups)
        wait_until(lambda: copies_on_b() >= 300, "300 copies on B")
        assert proc.stop() == 0, proc.stderr
        done = sum(committed(a.bootstrap, name, topic, PARTITIONS).values())
        assert 300 <= done < 2000 and copies_on_b() == done  # stopped part way, everything copied committed
        copied_again = 3000 - done
    elif restart == "kill":  # kill -9 part way through a copy that committed nothing: all is copied again
        proc = start_replicator(slow, a.bootstrap, b, topic, name, *groups)
        wait_until(lambda: copies_on_b() >= 1000, "1000 copies on B")
        proc.kill()
        copied_again = 3000
    else:  # the first 1000 copied and committed; kill -9 after copying the next 1000 (not committed)
        proc = start_replicator(config, a.bootstrap, b, topic, name, *groups)
        wait_until(lambda: sum(committed(a.bootstrap, name, topic, PARTITIONS).values()) == 2000, "a commit")
        assert proc.stop() == 0, proc.stderr
        produce(a.bootstrap, topic, make_records("r", 1000, start_ts=1_705_000_000_000))
        proc = start_replicator(slow, a.bootstrap, b, topic, name, *groups)
        wait_until(lambda: copies_on_b() == 3000, "3000 copies on B")
        proc.kill()
        first = [*first, *make_records("r", 1000, start_ts=1_705_000_000_000)]
        copied_again = 2000  # the 1000 not committed again (second copies), then the 1000 new ones
    more = make_records("q", 1000, start_ts=1_710_000_000_000)
    produce(a.bootstrap, topic, more)
    proc = start_replicator(config, a.bootstrap, b, topic, name, *groups)
    try:
        wait_until(lambda: caught_up(proc, copied_again), f"{copied_again} copies after the restart", timeout=120)
        # the Java group reads partitions 0 and 1 only, and commits 0 on 2 and 3
        on_a_java = java_reader(a.bootstrap, java_group, topic, 700, "0,1", "earliest", protocol)
        assert on_a_java.committed[2] == 0 and on_a_java.committed[3] == 0
        on_a_python = python_group_read(a.bootstrap, python_group, topic, 1500, reset="earliest")
        for group, read in ((java_group, on_a_java), (python_group, on_a_python)):
            wait_until(lambda g=group, r=read: checkpointed(b, topic, g) == r.committed, f"checkpoints of {group}")
    finally:
        assert proc.stop() == 0, proc.stderr

    a.halt()
    everything = {r.key.decode() for r in [*first, *more]}
    java_report = translate_apply(config, java_group, a.bootstrap, b)
    assert java_report["source_reachable"] is False
    on_b_java = java_reader(b, java_group, topic, -1, "all", "latest", protocol)
    read = {key for _, _, key in [*on_a_java.records, *on_b_java.records]}
    assert everything - read == set()  # missing: 0
    check_report(java_report, read_again(on_a_java.records, on_b_java.records), on_a_java.committed)
    if restart == "kill-after-commit":  # from offset 0, the second copies of the records not committed are read again
        assert all(row["again"] > 0 for row in java_report["partitions"] if row["committed"] == 0)

    python_report = translate_apply(config, python_group, a.bootstrap, b)
    on_b_python = python_group_read(b, python_group, topic, None, reset="earliest")  # as on A
    read = {key for _, _, key in [*on_a_python.records, *on_b_python.records]}
    assert everything - read == set()
    check_report(python_report, read_again(on_a_python.records, on_b_python.records), on_a_python.committed)


def list_topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)
