"""Connector metrics: counters, gauges, derived values with a fake clock, thread safety, exposition text."""

from __future__ import annotations

import json
import threading

import pytest

from mongocdc.engine.metrics import Metrics, render_prometheus
from mongocdc.events.model import Op
from tests.unit.engine.exposition import parse_exposition, sample


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- streaming ----------------------------------------------------------------------------


def test_events_are_counted_per_operation_and_partition() -> None:
    metrics = Metrics("inventory", clock=FakeClock())
    for op in ["c", "c", "u", "d", Op.READ, Op.CREATE]:
        metrics.record_event("rs0", op, 1_000)
    metrics.record_event("rs1", "update", 1_000)  # names work as well as codes

    data = metrics.to_dict()
    assert data["partitions"]["rs0"]["events"] == {"create": 3, "update": 1, "delete": 1, "read": 1}
    assert data["partitions"]["rs0"]["events_total"] == 6
    assert data["partitions"]["rs1"]["events"] == {"create": 0, "update": 1, "delete": 0, "read": 0}
    assert data["events_total"] == 7


def test_milliseconds_behind_source_is_processing_time_minus_source_time_of_the_last_event() -> None:
    clock = FakeClock(2_000.0)
    metrics = Metrics("c", clock=clock)
    assert metrics.to_dict()["partitions"] == {}
    metrics.register_partition("rs0")
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_behind_source"] == -1

    metrics.record_event("rs0", "c", source_ts_ms=1_000_000, now_ms=1_000_250)
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_behind_source"] == 250
    metrics.record_event("rs0", "c", source_ts_ms=1_000_900, now_ms=1_001_000)
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_behind_source"] == 100

    metrics.record_event("rs0", "u", source_ts_ms=1_999_000)  # now_ms from the clock: 2_000_000
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_behind_source"] == 1_000

    metrics.record_event("rs0", "u", source_ts_ms=None, now_ms=2_000_500)  # no source time: value kept
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_behind_source"] == 1_000


def test_milliseconds_since_last_event_is_computed_when_read() -> None:
    clock = FakeClock(100.0)
    metrics = Metrics("c", clock=clock)
    metrics.register_partition("rs0")
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_since_last_event"] == -1

    metrics.record_event("rs0", "c", 99_000)  # processed at clock time 100 s
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_since_last_event"] == 0
    clock.now = 102.5
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_since_last_event"] == 2_500
    clock.now = 103.0
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_since_last_event"] == 3_000

    metrics.record_event("rs0", "c", 99_000, now_ms=103_500)  # an engine clock slightly ahead: never negative
    assert metrics.to_dict()["partitions"]["rs0"]["milliseconds_since_last_event"] == 0


def test_source_position_of_the_last_event() -> None:
    metrics = Metrics("c", clock=FakeClock())
    metrics.register_partition("rs0")
    assert metrics.to_dict()["partitions"]["rs0"]["source_event_position"] is None
    metrics.record_event("rs0", "c", 5_000, sec=5, ord=1)
    metrics.record_event("rs0", "u", 5_000, sec=5, ord=2)
    assert metrics.to_dict()["partitions"]["rs0"]["source_event_position"] == {"sec": 5, "ord": 2}
    metrics.record_event("rs0", "u", 6_000)  # an event without a position keeps the last one
    assert metrics.to_dict()["partitions"]["rs0"]["source_event_position"] == {"sec": 5, "ord": 2}


def test_counters_and_gauges() -> None:
    metrics = Metrics("c", clock=FakeClock())
    metrics.set_connected("rs0", True)
    assert metrics.to_dict()["partitions"]["rs0"]["connected"] is True
    metrics.record_disconnect("rs0")
    metrics.record_disconnect("rs0")
    assert metrics.to_dict()["partitions"]["rs0"]["connected"] is False
    metrics.set_connected("rs0", True)
    metrics.record_election("rs0")
    metrics.record_skipped("rs0", "oversized")
    metrics.record_skipped("rs0", "skipped_operation", 3)
    metrics.record_skipped("rs0", "oversized")
    metrics.record_commit("rs0")
    metrics.set_in_flight(42)

    data = metrics.to_dict()
    rs0 = data["partitions"]["rs0"]
    assert rs0["connected"] is True
    assert rs0["disconnects"] == 2
    assert rs0["primary_elections"] == 1
    assert rs0["skipped"] == {"oversized": 2, "skipped_operation": 3}
    assert rs0["offset_commits"] == 1
    assert data["kafka_records_in_flight"] == 42
    metrics.set_in_flight(0)
    assert metrics.to_dict()["kafka_records_in_flight"] == 0


# -- snapshot -----------------------------------------------------------------------------


def test_snapshot_progress_completion_and_duration() -> None:
    clock = FakeClock(1_000.0)
    metrics = Metrics("c", clock=clock)
    metrics.register_partition("rs0")
    before = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert before == {
        "running": False,
        "completed": False,
        "aborted": False,
        "duration_seconds": 0.0,
        "total_collections": 0,
        "remaining_collections": 0,
        "collections": {},
    }

    metrics.snapshot_started("rs0", {"shop.orders": 1_000, "shop.customers": 10})
    metrics.snapshot_rows("rs0", "shop.orders", 500)
    metrics.snapshot_rows("rs0", "shop.orders", 500)
    metrics.snapshot_collection_done("rs0", "shop.orders")
    clock.now = 1_012.5
    running = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert running["running"] is True
    assert running["completed"] is False
    assert running["duration_seconds"] == 12.5
    assert running["total_collections"] == 2
    assert running["remaining_collections"] == 1
    assert running["collections"] == {
        "shop.customers": {"rows_scanned": 0, "rows_estimated": 10, "done": False},
        "shop.orders": {"rows_scanned": 1_000, "rows_estimated": 1_000, "done": True},
    }

    metrics.snapshot_rows("rs0", "shop.customers", 12)  # estimates are estimates
    metrics.snapshot_collection_done("rs0", "shop.customers")
    clock.now = 1_020.0
    metrics.snapshot_finished("rs0", aborted=False)
    clock.now = 2_000.0  # the duration stops at the end
    done = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert (done["running"], done["completed"], done["aborted"]) == (False, True, False)
    assert done["duration_seconds"] == 20.0
    assert done["remaining_collections"] == 0
    assert done["collections"]["shop.customers"]["rows_scanned"] == 12


def test_an_aborted_snapshot_and_a_new_one_that_starts_afresh() -> None:
    clock = FakeClock(0.0)
    metrics = Metrics("c", clock=clock)
    metrics.snapshot_started("rs0", {"a.x": 5})
    metrics.snapshot_rows("rs0", "a.x", 2)
    clock.now = 3.0
    metrics.snapshot_finished("rs0", aborted=True)
    aborted = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert (aborted["running"], aborted["completed"], aborted["aborted"]) == (False, False, True)
    assert aborted["remaining_collections"] == 1
    assert aborted["duration_seconds"] == 3.0

    clock.now = 10.0
    metrics.snapshot_started("rs0", {"a.y": 7})
    again = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert (again["running"], again["completed"], again["aborted"]) == (True, False, False)
    assert again["collections"] == {"a.y": {"rows_scanned": 0, "rows_estimated": 7, "done": False}}
    assert again["duration_seconds"] == 0.0


def test_rows_of_a_collection_not_announced_at_the_start_are_still_counted() -> None:
    metrics = Metrics("c", clock=FakeClock())
    metrics.snapshot_started("rs0", {})
    metrics.snapshot_rows("rs0", "a.late", 4)
    snapshot = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert snapshot["collections"] == {"a.late": {"rows_scanned": 4, "rows_estimated": None, "done": False}}
    text = parse_exposition(metrics.to_prometheus())
    assert (
        sample(text, "mongocdc_snapshot_rows_scanned_total", connector="c", partition="rs0", collection="a.late") == 4
    )
    assert text["mongocdc_snapshot_rows_estimated"].samples == {}


# -- thread safety --------------------------------------------------------------------------


def test_totals_are_exact_when_several_threads_record_at_once() -> None:
    metrics = Metrics("c")
    threads, per_thread = 8, 5_000
    barrier = threading.Barrier(threads)

    def work(i: int) -> None:
        partition = f"rs{i % 2}"
        barrier.wait()
        for n in range(per_thread):
            metrics.record_event(partition, "cudr"[n % 4], 0, sec=n, ord=i)
            if n % 10 == 0:
                metrics.record_skipped(partition, "oversized")
                metrics.snapshot_rows(partition, "db.coll", 2)
            if n % 100 == 0:
                metrics.to_dict()  # readers interleave with writers

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    data = metrics.to_dict()
    assert data["events_total"] == threads * per_thread
    for partition in ("rs0", "rs1"):
        p = data["partitions"][partition]
        assert p["events"] == dict.fromkeys(["create", "update", "delete", "read"], threads // 2 * per_thread // 4)
        assert p["skipped"] == {"oversized": threads // 2 * per_thread // 10}
        assert p["snapshot"]["collections"]["db.coll"]["rows_scanned"] == threads // 2 * per_thread // 10 * 2


# -- to_dict ---------------------------------------------------------------------------------


def test_to_dict_has_stable_keys_and_is_json_ready() -> None:
    metrics = Metrics("inventory", clock=FakeClock())
    metrics.register_partition("rs0")
    empty = metrics.to_dict()
    metrics.record_event("rs0", "c", 1, sec=1, ord=1)
    metrics.record_skipped("rs0", "oversized")
    metrics.snapshot_started("rs0", {"a.b": 1})
    full = metrics.to_dict()

    assert list(empty) == ["connector", "events_total", "kafka_records_in_flight", "partitions"]
    assert list(full) == list(empty)
    assert empty["connector"] == "inventory"
    assert (
        list(full["partitions"]["rs0"])
        == list(empty["partitions"]["rs0"])
        == [
            "connected",
            "events",
            "events_total",
            "milliseconds_behind_source",
            "milliseconds_since_last_event",
            "source_event_position",
            "disconnects",
            "primary_elections",
            "skipped",
            "offset_commits",
            "snapshot",
            "transactions",
        ]
    )
    assert list(full["partitions"]["rs0"]["snapshot"]) == list(empty["partitions"]["rs0"]["snapshot"])
    assert json.loads(json.dumps(full)) == full


# -- Prometheus exposition ------------------------------------------------------------------

COUNTERS = {
    "mongocdc_events_total",
    "mongocdc_events_skipped_total",
    "mongocdc_disconnects_total",
    "mongocdc_primary_elections_total",
    "mongocdc_offset_commits_total",
    "mongocdc_snapshot_rows_scanned_total",
    "mongocdc_transactions_committed_total",
    "mongocdc_transactions_aborted_total",
    "mongocdc_transaction_records_total",
    "mongocdc_transaction_commit_seconds_total",
}
GAUGES = {
    "mongocdc_connected",
    "mongocdc_milliseconds_behind_source",
    "mongocdc_milliseconds_since_last_event",
    "mongocdc_source_event_position_sec",
    "mongocdc_source_event_position_ord",
    "mongocdc_snapshot_running",
    "mongocdc_snapshot_completed",
    "mongocdc_snapshot_aborted",
    "mongocdc_snapshot_duration_seconds",
    "mongocdc_snapshot_total_collections",
    "mongocdc_snapshot_remaining_collections",
    "mongocdc_snapshot_rows_estimated",
    "mongocdc_kafka_records_in_flight",
    "mongocdc_transaction_last_records",
    "mongocdc_transaction_last_commit_milliseconds",
}


def busy_metrics() -> tuple[Metrics, FakeClock]:
    clock = FakeClock(1_000.0)
    metrics = Metrics("inventory", clock=clock)
    metrics.set_connected("rs0", True)
    metrics.record_event("rs0", "c", source_ts_ms=999_000, sec=999, ord=3)
    metrics.record_event("rs0", "d", source_ts_ms=999_400, sec=999, ord=4)
    metrics.record_disconnect("rs1")
    metrics.record_election("rs1")
    metrics.record_commit("rs0")
    metrics.record_skipped("rs0", "oversized")
    metrics.set_in_flight(7)
    metrics.snapshot_started("rs1", {"shop.orders": 100})
    metrics.snapshot_rows("rs1", "shop.orders", 40)
    clock.now = 1_002.0
    return metrics, clock


def test_exposition_has_help_and_type_for_every_family_and_the_values() -> None:
    metrics, _ = busy_metrics()
    families = parse_exposition(metrics.to_prometheus())

    assert set(families) == COUNTERS | GAUGES
    for name, family in families.items():
        assert family.help, name
        assert family.type == ("counter" if name in COUNTERS else "gauge"), name
        assert name.endswith("_total") == (family.type == "counter"), name
        for labels, _ in family.samples.items():
            assert dict(labels)["connector"] == "inventory"

    def value(name: str, **labels: str) -> float:
        return sample(families, name, connector="inventory", **labels)

    assert value("mongocdc_events_total", partition="rs0", op="create") == 1
    assert value("mongocdc_events_total", partition="rs0", op="delete") == 1
    assert value("mongocdc_events_total", partition="rs0", op="update") == 0
    assert value("mongocdc_events_total", partition="rs1", op="read") == 0
    assert value("mongocdc_events_skipped_total", partition="rs0", reason="oversized") == 1
    assert value("mongocdc_milliseconds_behind_source", partition="rs0") == 600
    assert value("mongocdc_milliseconds_behind_source", partition="rs1") == -1
    assert value("mongocdc_milliseconds_since_last_event", partition="rs0") == 2_000
    assert value("mongocdc_milliseconds_since_last_event", partition="rs1") == -1
    assert value("mongocdc_source_event_position_sec", partition="rs0") == 999
    assert value("mongocdc_source_event_position_ord", partition="rs0") == 4
    assert ("partition", "rs1") not in {
        label for labels in families["mongocdc_source_event_position_sec"].samples for label in labels
    }
    assert value("mongocdc_connected", partition="rs0") == 1
    assert value("mongocdc_connected", partition="rs1") == 0
    assert value("mongocdc_disconnects_total", partition="rs1") == 1
    assert value("mongocdc_primary_elections_total", partition="rs1") == 1
    assert value("mongocdc_offset_commits_total", partition="rs0") == 1
    assert value("mongocdc_kafka_records_in_flight") == 7
    assert value("mongocdc_snapshot_running", partition="rs1") == 1
    assert value("mongocdc_snapshot_running", partition="rs0") == 0
    assert value("mongocdc_snapshot_duration_seconds", partition="rs1") == 2.0
    assert value("mongocdc_snapshot_total_collections", partition="rs1") == 1
    assert value("mongocdc_snapshot_remaining_collections", partition="rs1") == 1
    assert value("mongocdc_snapshot_rows_scanned_total", partition="rs1", collection="shop.orders") == 40
    assert value("mongocdc_snapshot_rows_estimated", partition="rs1", collection="shop.orders") == 100


def test_exposition_is_stable_text() -> None:
    metrics, _ = busy_metrics()
    text = metrics.to_prometheus()
    assert text == metrics.to_prometheus()
    assert '\nmongocdc_events_total{connector="inventory",partition="rs0",op="create"} 1\n' in text
    assert "\n# TYPE mongocdc_milliseconds_behind_source gauge\n" in text
    assert '\nmongocdc_snapshot_duration_seconds{connector="inventory",partition="rs1"} 2.0\n' in text
    assert text.endswith('mongocdc_kafka_records_in_flight{connector="inventory"} 7\n')


@pytest.mark.parametrize(
    "awkward",
    ['quote"d', "back\\slash", "new\nline", 'all\\"three\n', "ünïcödé", "{braces},=commas"],
)
def test_label_values_are_escaped(awkward: str) -> None:
    metrics = Metrics(f"conn-{awkward}", clock=FakeClock())
    metrics.record_skipped(f"rs-{awkward}", f"why-{awkward}")
    metrics.snapshot_started(f"rs-{awkward}", {f"db.{awkward}": 3})
    text = metrics.to_prometheus()

    assert all(line.count("\n") == 0 for line in text.splitlines())
    families = parse_exposition(text)
    labels = {"connector": f"conn-{awkward}", "partition": f"rs-{awkward}"}
    assert sample(families, "mongocdc_events_skipped_total", reason=f"why-{awkward}", **labels) == 1
    assert sample(families, "mongocdc_snapshot_rows_estimated", collection=f"db.{awkward}", **labels) == 3


def test_exposition_escapes_label_values_exactly() -> None:
    metrics = Metrics('a"b\\c\nd', clock=FakeClock())
    metrics.set_in_flight(1)
    assert 'mongocdc_kafka_records_in_flight{connector="a\\"b\\\\c\\nd"} 1\n' in metrics.to_prometheus()


def test_special_float_values_are_rendered_as_prometheus_spells_them() -> None:
    data = Metrics("c").to_dict()
    data["kafka_records_in_flight"] = float("nan")
    assert 'mongocdc_kafka_records_in_flight{connector="c"} NaN\n' in render_prometheus(data)
    data["kafka_records_in_flight"] = float("inf")
    assert 'mongocdc_kafka_records_in_flight{connector="c"} +Inf\n' in render_prometheus(data)


def test_transactions_are_counted_per_partition_with_their_size_and_commit_time() -> None:
    metrics = Metrics("inventory", clock=FakeClock())
    metrics.register_partition("rs1")
    metrics.record_transaction("rs0", 100, 0.010)
    metrics.record_transaction("rs0", 300, 0.030)
    metrics.record_transaction_aborted("rs0")
    partitions = metrics.to_dict()["partitions"]
    assert partitions["rs1"]["transactions"] is None  # at least once: no transactions, no series
    assert partitions["rs0"]["transactions"] == {
        "committed": 2,
        "aborted": 1,
        "records": 400,
        "commit_seconds": 0.04,
        "average_records": 200.0,
        "average_commit_milliseconds": 20.0,
        "last_records": 300,
        "last_commit_milliseconds": 30.0,
    }
    families = parse_exposition(metrics.to_prometheus())
    rs0 = (("connector", "inventory"), ("partition", "rs0"))
    assert families["mongocdc_transactions_committed_total"].samples == {rs0: 2.0}
    assert families["mongocdc_transactions_aborted_total"].samples == {rs0: 1.0}
    assert families["mongocdc_transaction_records_total"].samples == {rs0: 400.0}
    assert families["mongocdc_transaction_last_commit_milliseconds"].samples == {rs0: 30.0}
