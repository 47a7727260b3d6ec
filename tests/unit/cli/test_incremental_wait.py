"""``snapshot --incremental --wait`` from the connector's notifications: the notifications a real snapshotter
sends, folded into per-collection counts; the notification records read back; the fallback's warning."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from mongocdc.cli.incremental_wait import STOPPED, NotificationProgress, collection_rows
from mongocdc.events.notifications import Notification, decode_value, encode_value, incremental_snapshot
from tests.unit.cli.helpers import mongocdc
from tests.unit.engine.helpers import NS, Model, execute, snapshotter

pytestmark = pytest.mark.usefixtures("clean_env")


def test_a_snapshot_is_followed_chunk_by_chunk_with_exact_counts_from_the_snapshotters_notifications() -> None:
    notes: list[Notification] = []

    def notify(kind: Any, *, signal_id: str | None = None, **data: object) -> None:
        notes.append(incremental_snapshot(kind, "orders-connector", signal_id=signal_id, **data))

    model = Model(range(10))
    snap = snapshotter(model, chunk_size=4, notify=notify)
    ticks = itertools.count()
    progress = NotificationProgress("s1", 4, clock=lambda: float(next(ticks)))
    other = NotificationProgress("another-signal", 4)
    model.signal(execute("s1"))
    seen: list[tuple[int, bool]] = []
    while model.stream:
        snap.on_item(model.stream.popleft())
        for note in notes[len(seen) :]:
            progress.apply(note)
            other.apply(note)
            c = progress.report.collections[NS]
            seen.append((c.documents, c.done))
    # two empty chunks (the _id types below numbers), then chunks of 4, 4 and 2
    assert [n.type for n in notes] == ["STARTED"] + ["IN_PROGRESS"] * 4 + [
        "TABLE_SCAN_COMPLETED",
        "IN_PROGRESS",
        "COMPLETED",
    ]
    # the count follows the full chunks; the scan's completion gives the exact total
    assert seen == [(0, False), (0, False), (0, False), (4, False), (8, False), (10, True), (10, True), (10, True)]
    assert progress.report.completed and progress.finished and not other.started
    scan = notes[5].additional_data  # as Debezium's TABLE_SCAN_COMPLETED
    assert dict(scan) == {
        "connector_name": "orders-connector",
        "data_collections": NS,
        "scanned_collection": NS,
        "total_rows_scanned": "10",
        "status": "SUCCEEDED",
    }
    report = progress.refresh({NS: 12})
    assert collection_rows(report)[0][:3] == [NS, 10, 12] and collection_rows(report)[0][-1] == "done"
    assert report.seconds > 0 and report.collections[NS].seconds > 0


def test_a_stop_of_some_collections_goes_on_and_a_stop_of_all_ends_the_wait() -> None:
    progress = NotificationProgress("s1", 100)

    def note(kind: Any, **data: object) -> None:
        progress.apply(incremental_snapshot(kind, "c", signal_id="s1", **data))

    note("STARTED", data_collections=["db.a", "db.b", "db.c"])
    note("IN_PROGRESS", current_collection_in_progress="db.a", maximum_key="9", last_processed_key="5")
    note("ABORTED", data_collections=["db.c"])  # Debezium's notification of a stop of some collections
    assert not progress.finished
    assert [row[-1] for row in collection_rows(progress.report)] == ["reading", "waiting", STOPPED]
    note("ABORTED")
    assert progress.finished and not progress.report.completed
    assert [row[-1] for row in collection_rows(progress.report)] == [STOPPED, STOPPED, STOPPED]


@pytest.mark.parametrize("schemas", [False, True])
def test_notification_records_read_back(schemas: bool) -> None:
    note = incremental_snapshot("IN_PROGRESS", "c", signal_id="s1", timestamp_ms=5, data_collections=["db.a"])
    assert decode_value(encode_value(note, schemas_enable=schemas)) == note
    assert decode_value(None) is None and decode_value(b"not json") is None and decode_value(b'{"id": 1}') is None


def test_waiting_without_the_sink_channel_says_progress_comes_late_and_how_to_follow_it(tmp_path: Path) -> None:
    done = mongocdc(
        "snapshot", "--incremental", "--collections", "db.a", "--wait", "--channel", "kafka",
        "--topic-prefix", "app", "--bootstrap-servers", "127.0.0.1:9",
        env={"MONGOCDC_CONNECT_MAX_ATTEMPTS": "1", "MONGOCDC_CONNECT_TIMEOUT_MS": "500",
             "MONGOCDC_SIGNAL_ENABLED_CHANNELS": "source,kafka"}, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr  # Kafka is not there: the signal cannot be sent
    assert "notification.enabled.channels has no 'sink'" in done.stderr
    assert "written every offset.flush.interval.ms (60000 ms)" in done.stderr
    assert "notification.enabled.channels=sink" in done.stderr


def test_the_offsets_fallback_reports_mongodbs_estimates_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from mongocdc import wiring
    from mongocdc.cli import commands_snapshot
    from mongocdc.config import load_settings
    from mongocdc.engine.snapshot import CollectionReport, SnapshotReport

    stored = SnapshotReport(completed=True)
    stored.collections["db.a"] = CollectionReport("db.a", 0, documents=40, done=True)
    monkeypatch.setattr(commands_snapshot, "wait_for_incremental", lambda *args, **kwargs: stored)
    monkeypatch.setattr(wiring, "estimated_counts", lambda settings, namespaces: dict.fromkeys(namespaces, 42))
    settings = load_settings(None, {}, {"topic.prefix": "app"})
    report = commands_snapshot._wait(settings, None, "s1", threading.Event(), None)
    assert collection_rows(report) == [["db.a", 40, 42, "0.0", "-", "done"]]


def test_an_empty_collection_reads_0_of_0_and_an_unknown_estimate_is_a_question_mark() -> None:
    progress = NotificationProgress("s1", 10)
    for note in (
        incremental_snapshot("STARTED", "c", signal_id="s1", data_collections=["db.empty", "db.big"]),
        incremental_snapshot("TABLE_SCAN_COMPLETED", "c", signal_id="s1", data_collections=["db.empty", "db.big"],
                             scanned_collection="db.empty", total_rows_scanned=0, status="EMPTY"),
        incremental_snapshot("IN_PROGRESS", "c", signal_id="s1", current_collection_in_progress="db.big",
                             maximum_key="99", last_processed_key="9"),
    ):  # fmt: skip
        progress.apply(note)
    rows = {row[0]: row for row in collection_rows(progress.refresh({}))}
    assert rows["db.empty"][1:3] == [0, 0] and rows["db.empty"][-1] == "done"
    assert rows["db.big"][1:3] == [10, "?"] and rows["db.big"][-1] == "reading"
