"""Snapshot progress: bars on a terminal, log lines elsewhere, and the summary."""

from __future__ import annotations

import io
import json
import logging

import pytest
from rich.console import Console

from mongocdc.cli.progress import SnapshotProgressView, render_summary
from mongocdc.cli.state import Output
from mongocdc.engine.snapshot import (
    FINAL_FLUSH,
    SCANNED,
    SCANNING_OTHER_ID_TYPES,
    CollectionReport,
    SnapshotReport,
)


def report(done: bool) -> SnapshotReport:
    r = SnapshotReport(completed=done)
    r.collections["shop.orders"] = CollectionReport(
        "shop.orders", 1000, documents=1000 if done else 400, seconds=2.0, done=done
    )
    r.collections["shop.empty"] = CollectionReport("shop.empty", 0, done=True)
    return r


def test_terminal_shows_a_bar_per_collection_with_counts() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with SnapshotProgressView(console=console) as view:
        view.update(report(False))
        view.update(report(True))
    text = out.getvalue()
    assert "shop.orders" in text and "1000/1000" in text and "500 docs/s" in text
    assert "shop.empty" in text


def test_terminal_bar_has_a_live_rate_and_says_what_happens_past_the_last_document() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    running = report(False)  # 400 documents in 2 s, not done
    with SnapshotProgressView(console=console) as view:
        view.update(running)
        assert "200 docs/s" in out.getvalue()  # while the collection is read, not once it is done
        running.collections["shop.orders"].phase = SCANNING_OTHER_ID_TYPES
        view.update(running)
        running.collections["shop.orders"].phase = SCANNED
        running.phase = FINAL_FLUSH
        view.update(running)
    text = out.getvalue()
    assert f"shop.orders ({SCANNING_OTHER_ID_TYPES})" in text
    assert FINAL_FLUSH in text


def test_non_terminal_logs_plain_progress_lines_and_never_draws_a_bar(caplog: pytest.LogCaptureFixture) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False)
    running = report(False)
    running.seconds = 4.0
    with (
        caplog.at_level(logging.INFO, logger="mongocdc.snapshot"),
        SnapshotProgressView(console=console, log_interval_s=3600) as view,
    ):
        view.update(running)  # within the interval: nothing
        assert caplog.records == []
        running.collections["shop.orders"].phase = SCANNED
        running.phase = FINAL_FLUSH
        view.update(running)  # the final flush begins: said at once
        view.update(running)  # and once
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "snapshot: 400 of about 1,000 documents read in 4 s (100 docs/s), 1 of 2 collections left; "
        "final flush to Kafka and commit"
    ]
    assert out.getvalue() == ""  # no bar, no redraw


def test_before_a_collection_is_counted_lines_and_bars_show_no_total(caplog: pytest.LogCaptureFixture) -> None:
    """A collection not counted yet (the snapshot asks only after ``estimate_after_s``) has no "of about" and
    no bar total, rather than a total equal to what was read so far."""
    running = report(False)
    running.seconds = 4.0
    running.collections["shop.orders"].estimated = 0
    out = io.StringIO()
    with (
        caplog.at_level(logging.INFO, logger="mongocdc.snapshot"),
        SnapshotProgressView(console=Console(file=io.StringIO()), log_interval_s=0) as plain,
        SnapshotProgressView(console=Console(file=out, force_terminal=True, width=120)) as bars,
    ):
        plain.update(running)
        bars.update(running)
    line = caplog.records[-1].getMessage()
    assert line == "snapshot: 400 documents read in 4 s (100 docs/s), 1 of 2 collections left"
    assert "400/?" in out.getvalue() and "400/400" not in out.getvalue()
    assert plain.estimate_after_s == 0 and bars.estimate_after_s == 1.0


def test_periodic_lines_name_a_collection_past_its_last_document(caplog: pytest.LogCaptureFixture) -> None:
    running = report(False)
    running.seconds = 2.0
    running.collections["shop.orders"].phase = SCANNING_OTHER_ID_TYPES
    with (
        caplog.at_level(logging.INFO, logger="mongocdc.snapshot"),
        SnapshotProgressView(console=Console(file=io.StringIO()), log_interval_s=0) as view,
    ):
        view.update(running)
    assert (
        caplog.records[-1]
        .getMessage()
        .endswith(f"(200 docs/s), 1 of 2 collections left; shop.orders: {SCANNING_OTHER_ID_TYPES}")
    )


def test_an_interrupted_collection_in_the_summary_has_its_seconds_and_rate(capsys: pytest.CaptureFixture[str]) -> None:
    render_summary(Output.table, report(False))
    row = next(line for line in capsys.readouterr().out.splitlines() if "shop.orders" in line)
    assert "400" in row and "2.0" in row and "200" in row and "not finished" in row


def test_summary_json(capsys: pytest.CaptureFixture[str]) -> None:
    render_summary(Output.json, report(True))
    data = json.loads(capsys.readouterr().out)
    assert data["completed"] is True and data["documents"] == 1000
    assert data["collections"]["shop.orders"] == {"documents": 1000, "estimated": 1000, "seconds": 2.0, "done": True}


def test_a_snapshot_of_no_collection_is_said_in_a_sentence_not_an_empty_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    render_summary(Output.table, SnapshotReport(completed=True))
    assert capsys.readouterr().out == "snapshot: no collection to copy (none exists yet, or none is included)\n"
    render_summary(Output.table, SnapshotReport(completed=False))
    assert capsys.readouterr().out == "snapshot: stopped before any collection was read\n"
    render_summary(Output.json, SnapshotReport(completed=True))
    assert json.loads(capsys.readouterr().out)["collections"] == {}
