"""Rendering results: JSON lines for scripts, rich tables for people. Data goes to stdout."""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from mongocdc.cli.state import Output


class _Console(Console):
    """A rich console that lets a closed pipe reach the command line's entry point, which exits 0 quietly
    (``mongocdc topic dump … | head -3``); rich's own handling exits 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of the output closed it")


_UNBOUNDED = 1_000_000
"""A width no table reaches: what a table measures at it is the width it needs to break no value."""

stdout = _Console(soft_wrap=True)
stderr = _Console(stderr=True, soft_wrap=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=str, sort_keys=False) + "\n")
    sys.stdout.flush()


def cell(value: Any) -> str:
    """A value as a table shows it, in words rather than Python's reprs: nothing for ``None``, ``true``/``false``,
    an enum's value, a list's items separated by commas, a mapping as ``key=value`` pairs."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={cell(v)}" for k, v in value.items())
    if isinstance(value, set | frozenset):
        return ", ".join(sorted(cell(v) for v in value))
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    return str(value)


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table whose values are never broken: wider than the terminal (or than rich's 80 columns for a
    pipe), it is printed at its own width and the terminal wraps the line, not the value."""
    t = Table(title=title, show_lines=False)
    for column in columns:
        t.add_column(column, no_wrap=True)
    for row in rows:
        t.add_row(*(cell(v) for v in row))
    natural = Measurement.get(stdout, stdout.options.update_width(_UNBOUNDED), t).maximum
    if natural <= stdout.width:
        stdout.print(t)
    else:  # rich never prints wider than its console: a console as wide as the table
        _Console(soft_wrap=True, width=natural).print(t)


def emit(
    output: Output, data: Any, columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None
) -> None:
    """One result, in the format the operator asked for."""
    if output is Output.json:
        print_json(data)
    else:
        table(title, columns, rows)
