"""Active/passive failover and failback with two real brokers, the primary stopped in between.

A → B replication; a consumer group reads part of A and commits; A goes down; ``failover translate
--apply`` moves the group to B from the checkpoints alone; the group continues on B and, together with
what it read on A, has read every record exactly once with keys, values, headers and timestamps intact.
Then A comes back, B → A replicates only what was produced on B meanwhile, and the group moves back.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.helpers import run_cli, wait_until
from tests.integration.replication.conftest import (
    Record,
    committed,
    consume,
    count_records,
    create_topic,
    make_records,
    produce,
    read_internal,
    start_replicator,
    write_config,
)
from tests.services.kafka import KafkaBroker

pytestmark = pytest.mark.kafka


def wait_for_checkpoint(bootstrap: str, topic: str, group: str, offsets: dict[int, int], config: Path) -> None:
    def caught_up() -> bool:
        latest: dict[int, int] = {}
        for key, value in read_internal(bootstrap, "mongocdc-checkpoints.internal"):
            if key["group"] == group and key["topic"] == topic:
                latest[key["partition"]] = value["upstream"]
        return latest == offsets

    wait_until(caught_up, f"checkpoints of {group} at {offsets}", timeout=60)


def translate(config: Path, *args: str) -> dict[str, object]:
    result = run_cli("--config", str(config), "failover", "translate", *args, "--output", "json", timeout=120)
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def test_failover_to_the_secondary_and_back(own_kafka: KafkaBroker, second_kafka: str, tmp_path: Path) -> None:
    primary = own_kafka  # cluster A: the test halts and restarts it
    a = primary.bootstrap
    b = second_kafka
    topic, group = f"orders-{uuid.uuid4().hex[:8]}", f"billing-{uuid.uuid4().hex[:6]}"
    config = write_config(tmp_path)
    create_topic(a, topic, 3, {"cleanup.policy": "compact"})
    originals = make_records("a", 300)
    produce(a, topic, originals)

    # --- A → B, the group reads part of A -------------------------------------------------
    forward = start_replicator(config, a, b, topic, f"a-to-b-{uuid.uuid4().hex[:6]}", "--groups", group)
    try:
        wait_until(lambda: count_records(b, topic) == 300, "300 copies on B", timeout=90)
        first = consume(a, group, topic, 140)
        on_a = committed(a, group, topic)
        assert sum(on_a.values()) == 140
        wait_for_checkpoint(b, topic, group, on_a, config)
    finally:
        assert forward.stop() == 0, forward.stderr
    status = [json.loads(line) for line in forward.stdout_lines]
    assert status[-1]["status"] == "stopped" and status[-1]["copied"] == 300 and status[-1]["lag"] == 0
    assert any(line["status"] == "replicating" for line in status[:-1])

    # the copy keeps partition, key, value, headers (plus one provenance header) and timestamp
    admin_topics = read_internal(b, "mongocdc-offset-syncs.internal")
    assert any(key["topic"] == topic for key, _ in admin_topics)

    # --- A goes down: translate from the checkpoints on B and move the group --------------
    primary.halt()
    report = translate(config, "--group", group, "--source", a, "--target", b, "--apply")
    assert report["source_reachable"] is False and report["action"] == "written"
    rows = report["partitions"]
    assert isinstance(rows, list) and len(rows) == len(on_a)
    assert {row["method"] for row in rows} == {"exact"}
    assert {row["partition"]: row["committed"] for row in rows} == on_a
    assert all(row["target_offset"] == row["committed"] for row in rows)  # B holds only copies: same offsets
    assert committed(b, group, topic) == on_a

    rest = consume(b, group, topic, None)
    seen = Counter(Record.of(m) for m in [*first, *rest])
    assert set(seen) == set(originals)  # nothing missing, keys, values, headers and timestamps equal
    assert max(seen.values()) == 1  # exact translation: nothing read twice
    for msg in rest:
        provenance = [json.loads(v) for k, v in msg.headers() if k == "mongocdc.provenance"]
        assert len(provenance) == 1 and provenance[0]["topic"] == topic
        assert provenance[0]["partition"] == msg.partition() and provenance[0]["offset"] == msg.offset()

    # --- producers move to B; A comes back; B → A copies only what is new -------------------
    during = make_records("b", 50, start_ts=1_710_000_000_000)
    produce(b, topic, during)
    primary.start()
    back = start_replicator(config, b, a, topic, f"b-to-a-{uuid.uuid4().hex[:6]}", "--groups", group)
    try:
        wait_until(lambda: count_records(a, topic) == 350, "the 50 new records on A", timeout=90)
        consume(b, group, topic, 50)  # the group keeps reading on B meanwhile
        later = make_records("c", 20, start_ts=1_720_000_000_000)
        produce(b, topic, later)
        wait_until(lambda: count_records(a, topic) == 370, "the 20 later records on A", timeout=90)
        on_b = committed(b, group, topic)
        wait_for_checkpoint(a, topic, group, on_b, config)
    finally:
        assert back.stop() == 0, back.stderr
    final = json.loads(back.stdout_lines[-1])
    assert final["copied"] == 70 and final["skipped_loops"] == 300  # provenance stopped the 300 copies of A's records

    on_a_records = Counter(Record.of(m).key for m in consume(a, f"check-{uuid.uuid4().hex[:6]}", topic, None))
    assert len(on_a_records) == 370 and max(on_a_records.values()) == 1  # each record once on A

    # --- the group moves back to A and reads exactly what it had not read on B ----------------
    report = translate(config, "--group", group, "--source", b, "--target", a, "--apply")
    assert report["source_reachable"] is True
    rows = report["partitions"]
    assert isinstance(rows, list)
    assert {(row["method"], row["again"]) for row in rows} == {("exact", 0)}  # A's own records came back to B
    after = consume(a, group, topic, None)
    assert Counter(Record.of(m) for m in after) == Counter(later)
