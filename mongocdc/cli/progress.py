"""Snapshot progress for people: rich progress bars on a terminal, periodic log lines elsewhere."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from mongocdc.cli import render
from mongocdc.cli.state import Output

if TYPE_CHECKING:
    from mongocdc.engine.snapshot import SnapshotReport

log = logging.getLogger("mongocdc.snapshot")


class SnapshotProgressView:
    """Receives ``SnapshotReport`` updates (``update``) and shows them; a context manager."""

    def __init__(self, *, log_interval_s: float = 10.0, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._bars: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._log_interval = log_interval_s
        self._next_log = time.monotonic() + log_interval_s
        self._started = time.monotonic()

    def __enter__(self) -> SnapshotProgressView:
        if self._console.is_terminal:
            self._bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]:>9} docs/s"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self._console,
                transient=False,
            )
            self._bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._bars is not None:
            self._bars.stop()

    def update(self, report: SnapshotReport) -> None:
        if self._bars is not None:
            for ns, c in report.collections.items():
                rate = f"{c.documents / c.seconds:,.0f}" if c.seconds > 0 else "-"
                total = max(c.estimated, c.documents) or None
                if ns not in self._tasks:
                    self._tasks[ns] = self._bars.add_task(ns, total=total, rate=rate)
                self._bars.update(self._tasks[ns], completed=c.documents, total=total, rate=rate)
            return
        now = time.monotonic()
        if now >= self._next_log or report.completed:
            self._next_log = now + self._log_interval
            left = sum(not c.done for c in report.collections.values())
            log.info(
                "snapshot: %d documents read in %.0f s, %d of %d collections left",
                report.documents,
                now - self._started,
                left,
                len(report.collections),
            )


def render_summary(output: Output, report: SnapshotReport) -> None:
    """The summary table (or JSON) after a snapshot."""
    data = report.to_dict()
    rows = [
        [
            ns,
            c.documents,
            f"{c.seconds:.1f}",
            f"{c.documents / c.seconds:,.0f}" if c.seconds > 0 else "-",
            "done" if c.done else "not finished",
        ]
        for ns, c in sorted(report.collections.items())
    ]
    render.emit(output, data, ["collection", "documents", "seconds", "docs/s", "state"], rows, title="snapshot")
