"""What the command line's unit tests share: the real command run as a process, a connector's directory, the
command tree's parsing of a command line."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import click

from mongocdc.cli import docs
from mongocdc.offsets.sqlite import SqliteOffsetStore

REPO = Path(__file__).resolve().parents[3]


def mongocdc(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The real command, in an environment without the caller's ``MONGOCDC_*`` settings plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MONGOCDC_") or k.startswith("MONGOCDC_TEST_")}
    clean.pop("COLUMNS", None)  # rich's width for a pipe: its default, 80
    return subprocess.run(
        [sys.executable, "-m", "mongocdc", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=clean | (env or {}),
        text=True,
        timeout=60,
        check=False,
    )


def connector_dir(root: Path) -> Path:
    """``root/conf/c.yaml`` keeping its offsets in ``state/offsets.db`` (relative), with one stored offset."""
    conf = root / "conf"
    conf.mkdir()
    (conf / "c.yaml").write_text("name: app\ntopic.prefix: shop\noffset.storage.file.filename: state/offsets.db\n")
    store = SqliteOffsetStore(conf / "state" / "offsets.db")
    store.commit("app", "rs0", {"sec": 7, "ord": 1, "resume_token": None})
    store.close()
    return conf


def parse_command_line(argv: list[str]) -> None:
    """``argv`` parsed by the real command tree, as click parses it before running a command."""
    root = docs.root_command()
    ctx = root.make_context("mongocdc", list(argv))
    command: click.Command = root
    while isinstance(command, click.Group):
        with warnings.catch_warnings():  # click 8.2 deprecates protected_args, where 8.1 keeps the command
            warnings.simplefilter("ignore", DeprecationWarning)
            args = [*ctx.protected_args, *ctx.args]
        if not args:
            return
        name, sub, rest = command.resolve_command(ctx, args)
        assert sub is not None, argv
        ctx = sub.make_context(name, rest, parent=ctx)
        command = sub
