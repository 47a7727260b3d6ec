"""Snapshot progress for people: rich progress bars on a terminal, periodic log lines elsewhere."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING

import typer
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
    """Receives ``SnapshotReport`` updates (``update``) and shows them; a context manager.

    On a terminal: a bar per collection with its live rate, and what the snapshot does once a scan is past
    its last document (the remaining ``_id`` types, the final flush and commit). Elsewhere (a file, a pipe,
    a log collector): a plain line every ``log_interval_s`` and one when the final flush begins, never a bar;
    the line at the end is the connector's (``snapshot completed: …`` or ``snapshot interrupted after …``).
    """

    def __init__(self, *, log_interval_s: float = 10.0, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._bars: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._phase_task: TaskID | None = None
        self._phase = ""
        self._log_interval = log_interval_s
        self._next_log = time.monotonic() + log_interval_s

    @property
    def estimate_after_s(self) -> float:
        """How far into a snapshot its collections should be counted: a terminal's bars show the totals after a
        second, a plain display from its first line on (a snapshot done sooner asks MongoDB for no count)."""
        return 1.0 if self._console.is_terminal else self._log_interval / 2

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
            self._draw(self._bars, report)
            return
        now = time.monotonic()
        if now >= self._next_log or (report.phase and report.phase != self._phase):
            self._next_log = now + self._log_interval
            log.info("snapshot: %s", progress_line(report))
        self._phase = report.phase

    def _draw(self, bars: Progress, report: SnapshotReport) -> None:
        for ns, c in report.collections.items():
            rate = _rate(c.rate)
            total = max(c.estimated, c.documents) if c.estimated else None  # 0: not counted (yet)
            description = f"{ns} [dim]({c.phase})[/dim]" if c.phase and not c.done else ns
            if ns not in self._tasks:
                self._tasks[ns] = bars.add_task(description, total=total, rate=rate)
            bars.update(self._tasks[ns], description=description, completed=c.documents, total=total, rate=rate)
        if report.phase and self._phase_task is None:
            self._phase_task = bars.add_task(report.phase, total=None, rate="")
        elif not report.phase and self._phase_task is not None:
            bars.remove_task(self._phase_task)
            self._phase_task = None
        bars.refresh()  # updates come every progress interval: each one is shown, not only every tenth


def progress_line(report: SnapshotReport) -> str:
    """``12,000 of about 20,100 documents read in 6 s (2,000 docs/s), 1 of 2 collections left; …`` (without
    ``of about …`` while a collection being read has not been counted)."""
    left = sum(not c.done for c in report.collections.values())
    if all(c.estimated or c.done for c in report.collections.values()):
        estimated = sum(max(c.estimated, c.documents) for c in report.collections.values())
        line = f"{report.documents:,} of about {estimated:,} documents read in {report.seconds:.0f} s"
    else:
        line = f"{report.documents:,} documents read in {report.seconds:.0f} s"
    if report.rate is not None:
        line += f" ({report.rate:,.0f} docs/s)"
    count = len(report.collections)
    line += f", {left} of {count} {'collection' if count == 1 else 'collections'} left"
    doing = [f"{ns}: {c.phase}" for ns, c in sorted(report.collections.items()) if c.phase and not c.done]
    if report.phase:
        doing = [report.phase]
    if doing:
        line += "; " + ", ".join(doing)
    return line


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:,.0f}"


def render_summary(output: Output, report: SnapshotReport) -> None:
    """The summary table (or JSON) after a snapshot."""
    data = report.to_dict()
    rows = [
        [
            ns,
            c.documents,
            f"{c.seconds:.1f}",
            _rate(c.rate),
            "done" if c.done else "not finished",
        ]
        for ns, c in sorted(report.collections.items())
    ]
    if output is Output.table and not rows:  # an empty table says less than a sentence
        if report.completed:
            typer.echo("snapshot: no collection to copy (none exists yet, or none is included)")
        else:
            typer.echo("snapshot: stopped before any collection was read")
        return
    render.emit(output, data, ["collection", "documents", "seconds", "docs/s", "state"], rows, title="snapshot")
