"""``mongocdc completions show|install``: the shell completions and the man page of the installed version.

Both are generated from the command tree by ``docs.py`` when asked for, so they always match the installed
mongocdc (the checked-in ``completions/`` and ``man/`` are the same text, for packagers and the wheel).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from mongocdc.cli import render
from mongocdc.cli.options import OutputOpt, examples
from mongocdc.cli.state import Output
from mongocdc.errors import UsageError


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


completions_app = typer.Typer(
    help="Shell completions and the man page: print them, or install them where shells and man find them.",
    no_args_is_help=True,
    epilog=examples("mongocdc completions install", "mongocdc completions show bash"),
)


def _text(what: str) -> str:
    from mongocdc.cli import docs

    root = docs.root_command()
    generate = {"bash": docs.bash, "zsh": docs.zsh, "fish": docs.fish, "man": docs.man}[what]
    return generate(root)


@completions_app.command(
    "show",
    epilog=examples("mongocdc completions show bash", "mongocdc completions show zsh > ~/.zfunc/_mongocdc"),
)
def show(shell: Annotated[Shell, typer.Argument(help="The shell to print the completion script of.")]) -> None:
    """Print the completion script of a shell (`source <(mongocdc completions show bash)` loads it at once)."""
    sys.stdout.write(_text(shell.value))


@dataclass(frozen=True)
class Target:
    what: str
    path: Path


def _env_dir(var: str, fallback: Path) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else fallback


def targets(shell: Shell, prefix: Path | None) -> list[Target]:
    """Where the completion of ``shell`` and the man page go: under ``prefix`` as a system's packages put them,
    else in the user's directories (XDG's, as bash-completion, fish and man-db look there)."""
    if prefix is not None:
        share = prefix / "share"
        where = {
            Shell.bash: share / "bash-completion" / "completions" / "mongocdc",
            Shell.zsh: share / "zsh" / "site-functions" / "_mongocdc",
            Shell.fish: share / "fish" / "vendor_completions.d" / "mongocdc.fish",
        }
        man = share / "man" / "man1" / "mongocdc.1"
    else:
        home = Path.home()
        data = _env_dir("XDG_DATA_HOME", home / ".local" / "share")
        config = _env_dir("XDG_CONFIG_HOME", home / ".config")
        where = {
            Shell.bash: _env_dir("BASH_COMPLETION_USER_DIR", data / "bash-completion") / "completions" / "mongocdc",
            Shell.zsh: data / "zsh" / "site-functions" / "_mongocdc",
            Shell.fish: config / "fish" / "completions" / "mongocdc.fish",
        }
        man = data / "man" / "man1" / "mongocdc.1"
    return [Target(shell.value, where[shell]), Target("man", man)]


def _notes(shell: Shell, installed: list[Target], prefix: Path | None) -> list[str]:
    notes = []
    if shell is Shell.zsh:
        folder = installed[0].path.parent
        notes.append(
            f"zsh finds it when {folder} is in $fpath before compinit runs: add "
            f"fpath=({folder} $fpath) to ~/.zshrc above compinit, then start a new shell"
        )
    elif shell is Shell.bash:
        notes.append("bash loads it in new shells through bash-completion (the bash-completion package)")
    else:
        notes.append("fish loads it in new shells")
    man_dir = installed[1].path.parent.parent
    notes.append(
        f"man finds the page when {man_dir} is on its path (man-db adds <dir>/share/man of every <dir>/bin on "
        f'PATH); else: export MANPATH="{man_dir}:$MANPATH"'
        if prefix is None
        else f"man finds the page when {man_dir} is on its path"
    )
    return notes


@completions_app.command(
    "install",
    epilog=examples(
        "mongocdc completions install",
        "mongocdc completions install --shell zsh",
        "sudo mongocdc completions install --shell bash --prefix /usr/local",
    ),
)
def install(
    shell: Annotated[
        Shell | None,
        typer.Option(
            "--shell",
            help="The shell to install the completion of [default: the one $SHELL names].",
            show_default=False,
        ),
    ] = None,
    prefix: Annotated[
        Path | None,
        typer.Option(
            "--prefix",
            help="Install under PREFIX/share (as packages do, e.g. /usr/local) instead of your user directories.",
            show_default=False,
        ),
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Install the completion of a shell and the man page where the shell and man find them.

    Your user directories by default: ~/.local/share/bash-completion/completions, ~/.local/share/zsh/site-functions,
    ~/.config/fish/completions and ~/.local/share/man/man1 (XDG_DATA_HOME and XDG_CONFIG_HOME when set).
    """
    if shell is None:
        name = Path(os.environ.get("SHELL", "")).name
        if name not in Shell.__members__:
            raise UsageError(
                f"cannot tell which shell to install the completion of: $SHELL is {name or 'not set'}",
                hint="give --shell bash, --shell zsh or --shell fish",
            )
        shell = Shell(name)
    installed = targets(shell, prefix)
    for target in installed:
        try:
            target.path.parent.mkdir(parents=True, exist_ok=True)
            target.path.write_text(_text(target.what))
        except OSError as exc:
            raise UsageError(
                f"cannot write {target.path}: {exc.strerror or exc}",
                hint="choose a --prefix you may write to, or leave --prefix out to install in your user directories",
            ) from None
    notes = _notes(shell, installed, prefix)
    data = {"installed": [{"what": t.what, "path": str(t.path)} for t in installed], "notes": notes}
    render.emit(output, data, ["installed", "path"], [[t.what, t.path] for t in installed], title="installed")
    if output is Output.table:
        for note in notes:
            render.stderr.print(f"note: {note}", markup=False, highlight=False)
