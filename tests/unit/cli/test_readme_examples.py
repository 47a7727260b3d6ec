"""Every ``mongocdc`` command in the README's shell blocks is one the real command tree takes as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.unit.cli.helpers import parse_command_line

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_commands() -> list[str]:
    commands = []
    # each fence opens a block at the start of a line and the next one closes it (a block in another language,
    # python or yaml, is skipped as a whole)
    for language, block in re.findall(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", README.read_text(), flags=re.S | re.M):
        if language not in ("", "sh", "bash", "shell", "console"):
            continue
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("mongocdc "):
                commands.append(line)
    return commands


def test_the_readme_shows_commands() -> None:
    assert len(readme_commands()) >= 10


@pytest.mark.parametrize("example", readme_commands())
def test_a_readme_command_parses_as_shown(example: str) -> None:
    argv = shlex.split(example, comments=True)
    for end in ("|", ">", "&&", ";"):
        argv = argv[: argv.index(end)] if end in argv else argv
    parse_command_line(argv[1:])  # a usage error (unknown option or command, bad value) raises here
