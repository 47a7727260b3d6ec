"""Snapshot progress: bars on a terminal, log lines elsewhere, and the summary."""

from __future__ import annotations

import io
import json
import logging

import pytest
from rich.console import Console

from mongocdc.cli.progress import SnapshotProgressView, render_summary
from mongocdc.cli.state import Output
from mongocdc.engine.snapshot import CollectionReport, SnapshotReport


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


def test_non_terminal_logs_progress_lines(caplog: pytest.LogCaptureFixture) -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    with (
        caplog.at_level(logging.INFO, logger="mongocdc.snapshot"),
        SnapshotProgressView(console=console, log_interval_s=0) as view,
    ):
        view.update(report(False))
    assert "snapshot: 400 documents read" in caplog.text and "1 of 2 collections left" in caplog.text


def test_summary_json(capsys: pytest.CaptureFixture[str]) -> None:
    render_summary(Output.json, report(True))
    data = json.loads(capsys.readouterr().out)
    assert data["completed"] is True and data["documents"] == 1000
    assert data["collections"]["shop.orders"] == {"documents": 1000, "estimated": 1000, "seconds": 2.0, "done": True}
