"""Rendering results: JSON lines for scripts, rich tables for people. Data goes to stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from mongocdc.cli.state import Output

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=str, sort_keys=False) + "\n")
    sys.stdout.flush()


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    t = Table(title=title, show_lines=False)
    for column in columns:
        t.add_column(column, overflow="fold")
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    stdout.print(t)


def emit(
    output: Output, data: Any, columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None
) -> None:
    """One result, in the format the operator asked for."""
    if output is Output.json:
        print_json(data)
    else:
        table(title, columns, rows)
