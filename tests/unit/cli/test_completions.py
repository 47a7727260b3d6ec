"""The generated completions run in real shells, `completions install` puts them where the shells and `man`
find them, and the man page and every `--help` carry examples that parse as shown (no services)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mongocdc.cli import docs
from mongocdc.config import PROPERTIES
from tests.unit.cli.helpers import REPO, mongocdc, parse_command_line

BASH = REPO / "completions" / "mongocdc.bash"
ZSH = REPO / "completions" / "_mongocdc"
FISH = REPO / "completions" / "mongocdc.fish"
needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (apt-get install zsh)")
needs_fish = pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (apt-get install fish)")


def run_shell(argv: list[str], script: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([*argv, script], capture_output=True, text=True, cwd=cwd, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- bash ------------------------------------------------------------------------------------


def bash_complete(line: list[str], cwd: Path) -> list[str]:
    """What bash's completion function offers for the last word of ``line``, as bash itself runs it."""
    words = " ".join(shlex.quote(w) for w in line)
    script = (
        f"source {shlex.quote(str(BASH))}; complete -p mongocdc >/dev/null || exit 9; "
        f'COMP_WORDS=({words}); COMP_CWORD={len(line) - 1}; _mongocdc; printf "%s\\n" "${{COMPREPLY[@]}}"'
    )
    return [w for w in run_shell(["bash", "--norc", "--noprofile", "-c"], script, cwd).splitlines() if w]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "connector.yaml").write_text("topic.prefix: shop\n")
    (tmp_path / "stream").write_text("a file named like a command\n")
    return tmp_path


def test_bash_completes_commands_never_files(workdir: Path) -> None:
    top = bash_complete(["mongocdc", ""], workdir)
    assert {"stream", "topic", "offsets", "completions", "version"} <= set(top)
    assert "connector.yaml" not in top and "--log-level" not in top
    assert bash_complete(["mongocdc", "topic", ""], workdir) == ["compare", "dump", "list"]
    assert bash_complete(["mongocdc", "signal", "send", "p"], workdir) == ["pause-snapshot"]
    assert bash_complete(["mongocdc", "topic", "dump", "orders", ""], workdir) == []  # a topic: no file names


def test_bash_completes_each_commands_options_and_their_values(workdir: Path) -> None:
    dump = bash_complete(["mongocdc", "topic", "dump", "--"], workdir)
    assert {"--partition", "--offset", "--format", "--raw", "--key-only", "--output", "--config"} <= set(dump)
    assert "--warehouse" not in dump  # spark run's
    assert bash_complete(["mongocdc", "--log-level", ""], workdir) == ["debug", "info", "warning", "warn", "error"]
    assert bash_complete(["mongocdc", "topic", "dump", "t", "-o", "j"], workdir) == ["json"]
    assert bash_complete(["mongocdc", "spark", "run", "--format", ""], workdir) == ["auto", "delta", "parquet"]
    assert bash_complete(["mongocdc", "topic", "dump", "t", "--format", ""], workdir) == []  # a format string
    assert bash_complete(["mongocdc", "-c", "conn"], workdir) == ["connector.yaml"]
    assert bash_complete(["mongocdc", "stream", "--config", "con"], workdir) == ["connector.yaml"]
    # an option's value is not taken for a command: after -c FILE the command is still completed
    assert bash_complete(["mongocdc", "-c", "topic", "str"], workdir) == ["stream"]
    assert "--topic-prefix" in bash_complete(["mongocdc", "-c", "connector.yaml", "stream", "--t"], workdir)


# --- zsh -------------------------------------------------------------------------------------

ZSH_STUBS = r"""
compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
_describe() { local -a items; items=("${(@P)4}"); print -rl -- "${items[@]%%:*}" }
_files() { print -r -- '<files>' }
_message() { print -r -- '<message>' }
"""


def zsh_complete(line: list[str], cwd: Path) -> list[str]:
    """What the zsh function offers, run by a real zsh with the completion system's builtins recording."""
    words = " ".join(shlex.quote(w) for w in line)
    script = f"{ZSH_STUBS}\nwords=({words}); CURRENT={len(line)}\nsource {shlex.quote(str(ZSH))}"
    return run_shell(["zsh", "-f", "-c"], script, cwd).splitlines()


@needs_zsh
def test_zsh_completes_subcommands_options_and_values_never_files_as_commands(workdir: Path) -> None:
    subprocess.run(["zsh", "-n", str(ZSH)], check=True, timeout=60)
    top = zsh_complete(["mongocdc", ""], workdir)
    assert {"stream", "topic", "offsets", "completions"} <= set(top) and "<files>" not in top
    assert zsh_complete(["mongocdc", "topic", ""], workdir) == ["compare", "dump", "list"]
    options = zsh_complete(["mongocdc", "-c", "connector.yaml", "topic", "dump", "--"], workdir)
    assert {"--partition", "--offset", "--format", "--raw", "--output", "--help"} <= set(options)
    assert "--warehouse" not in options
    assert zsh_complete(["mongocdc", "topic", "dump", "t", "-o", ""], workdir) == ["table", "json"]
    assert zsh_complete(["mongocdc", "--log-level", ""], workdir) == ["debug", "info", "warning", "warn", "error"]
    assert zsh_complete(["mongocdc", "stream", "-c", ""], workdir) == ["<files>"]
    assert zsh_complete(["mongocdc", "topic", "dump", ""], workdir) == ["<message>"]  # TOPIC, not files


@needs_zsh
def test_zsh_finds_the_installed_completion_through_compinit(tmp_path: Path) -> None:
    done = mongocdc("completions", "install", "--shell", "zsh", env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / ".local" / "share" / "zsh" / "site-functions"
    assert f"fpath=({folder} $fpath)" in done.stderr
    compinit = f"autoload -Uz compinit; compinit -u -d {tmp_path}/dump"
    script = f"fpath=({folder} $fpath); {compinit}; print -r -- $_comps[mongocdc]"
    assert run_shell(["zsh", "-f", "-c"], script, tmp_path, env={"HOME": str(tmp_path)}).strip() == "_mongocdc"


def zsh_interactive(line: str, until: str, cwd: Path) -> str:
    """What an interactive zsh with ``compinit`` lists when Tab is pressed after ``line`` (a pseudo-terminal,
    ``zpty``), read until ``until`` shows (the subprocess timeout is the deadline)."""
    script = "\n".join(
        [
            "zmodload zsh/zpty",
            "zpty z 'zsh -f -i'",
            "zpty -w z "
            + shlex.quote(
                f"PS1='> '; LISTMAX=1000; fpath=({ZSH.parent} $fpath); autoload -Uz compinit; "
                f"compinit -u -d {cwd}/dump; print READY"
            ),
            "zpty -r z line '*READY*'",
            f"zpty -w -n z {shlex.quote(line)}$'\\t'",
            f"zpty -r z out {shlex.quote('*' + until + '*')}",
            'print -r -- "$out"',
            "zpty -d z",
        ]
    )
    return run_shell(["zsh", "-f", "-c"], script, cwd, env={"HOME": str(cwd), "TERM": "dumb"})


@needs_zsh
def test_zsh_lists_commands_and_option_values_at_a_real_prompt(workdir: Path) -> None:
    listed = zsh_interactive("mongocdc ", "version", workdir)
    assert "topic" in listed and "completions" in listed
    assert "connector.yaml" not in listed  # a file is no command
    listed = zsh_interactive("mongocdc topic ", "list", workdir)
    assert "compare" in listed and "dump" in listed
    listed = zsh_interactive("mongocdc spark run --format ", "parquet", workdir)
    assert "auto" in listed and "delta" in listed


# --- fish ------------------------------------------------------------------------------------


def fish_complete(line: str, home: Path) -> list[str]:
    """fish's own completion of ``line`` (``complete -C``), the script loaded from where fish looks for it."""
    # fish loads a completion for a command it finds on PATH: the venv's mongocdc
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    out = run_shell(["fish", "-c"], f"complete -C {shlex.quote(line)}", home, env=env)
    return [entry.split("\t")[0] for entry in out.splitlines()]


@needs_fish
def test_fish_loads_the_installed_completion_and_completes_option_values(tmp_path: Path) -> None:
    subprocess.run(["fish", "--no-execute", str(FISH)], check=True, timeout=60)
    done = mongocdc("completions", "install", "--shell", "fish", env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".config" / "fish" / "completions" / "mongocdc.fish").read_text() == FISH.read_text()
    (tmp_path / "connector.yaml").write_text("")
    assert {"compare", "dump", "list"} <= set(fish_complete("mongocdc topic ", tmp_path))
    assert fish_complete("mongocdc topic dump t --output ", tmp_path) == ["json", "table"]
    assert fish_complete("mongocdc spark run --format ", tmp_path) == ["auto", "delta", "parquet"]
    assert "--partition" in fish_complete("mongocdc topic dump t --", tmp_path)
    assert fish_complete("mongocdc stream --config conn", tmp_path) == ["connector.yaml"]


# --- completions install ---------------------------------------------------------------------


def test_install_puts_the_completion_and_the_man_page_in_the_user_directories(tmp_path: Path) -> None:
    done = mongocdc("completions", "install", "--shell", "bash", "-o", "json", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    bash_file = tmp_path / ".local" / "share" / "bash-completion" / "completions" / "mongocdc"
    man_file = tmp_path / ".local" / "share" / "man" / "man1" / "mongocdc.1"
    installed = json.loads(done.stdout)["installed"]
    assert installed == [{"what": "bash", "path": str(bash_file)}, {"what": "man", "path": str(man_file)}]
    assert bash_file.read_text() == BASH.read_text()  # the installed version's, the same as the checked-in one
    assert man_file.read_text() == (REPO / "man" / "mongocdc.1").read_text()
    found = subprocess.run(
        ["man", "-w", "mongocdc"], capture_output=True, text=True, timeout=60, check=False,
        env={"MANPATH": str(tmp_path / ".local" / "share" / "man"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    if shutil.which("man") is not None:
        assert found.stdout.strip() == str(man_file), found.stderr


def test_bash_completion_finds_the_installed_script_by_itself(tmp_path: Path) -> None:
    loader = Path("/usr/share/bash-completion/bash_completion")
    if not loader.exists():
        pytest.skip("the bash-completion package is not installed")
    assert mongocdc("completions", "install", "--shell", "bash", env={"HOME": str(tmp_path)}).returncode == 0
    script = f". {loader}; _completion_loader mongocdc; complete -p mongocdc"
    out = run_shell(["bash", "--norc", "--noprofile", "-c"], script, tmp_path, env={"HOME": str(tmp_path)})
    assert "-F _mongocdc mongocdc" in out


def test_install_under_a_prefix_and_the_default_shell(tmp_path: Path) -> None:
    prefix = tmp_path / "usr-local"
    done = mongocdc("completions", "install", "--prefix", str(prefix), env={"SHELL": "/usr/bin/fish"})
    assert done.returncode == 0, done.stderr
    assert (prefix / "share" / "fish" / "vendor_completions.d" / "mongocdc.fish").read_text() == FISH.read_text()
    assert (prefix / "share" / "man" / "man1" / "mongocdc.1").exists()


def test_install_without_a_known_shell_or_a_writable_prefix_is_a_usage_error(tmp_path: Path) -> None:
    unknown = mongocdc("completions", "install", env={"SHELL": "/bin/tcsh", "HOME": str(tmp_path)})
    assert unknown.returncode == 2
    assert "cannot tell which shell to install the completion of: $SHELL is tcsh" in unknown.stderr
    assert "give --shell bash, --shell zsh or --shell fish" in unknown.stderr
    blocked = tmp_path / "file"
    blocked.write_text("")
    refused = mongocdc("completions", "install", "--shell", "zsh", "--prefix", str(blocked))
    assert refused.returncode == 2
    assert f"cannot write {blocked}/share/zsh/site-functions/_mongocdc" in refused.stderr
    assert "choose a --prefix you may write to" in refused.stderr


def test_show_prints_the_script_of_a_shell() -> None:
    done = mongocdc("completions", "show", "zsh")
    assert (done.returncode, done.stdout) == (0, ZSH.read_text())
    wrong = mongocdc("completions", "show", "tcsh")
    assert wrong.returncode == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish'" in wrong.stderr


# --- the man page and the examples -----------------------------------------------------------


def test_man_page_has_examples_choices_defaults_and_every_environment_variable() -> None:
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    page = subprocess.run(
        ["man", "-l", str(REPO / "man" / "mongocdc.1")], capture_output=True, text=True, timeout=60, check=True,
        env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    ).stdout  # fmt: skip
    examples_part = page.split("\nEXAMPLES\n")[1].split("\nEXIT STATUS\n")[0]
    assert "mongocdc topic dump shop.inventory.orders -p 0 --offset -5 -o json" in examples_part
    environment = page.split("\nENVIRONMENT\n")[1]
    for prop in PROPERTIES.values():
        assert prop.env_var in environment, prop.env_var
    assert "MONGOCDC_KAFKA_<KEY>" in environment and "MONGOCDC_LOG_LEVEL" in environment
    log_level = page.split("--log-level debug|info|warning|warn|error\n")[1].split("\n\n")[0]
    assert "One of: debug, info, warning, warn, error. Default: info." in log_level  # choices and default
    spark_format = page.split("--format auto|delta|parquet\n")[1].split("\n\n")[0]
    assert "Default: auto." in spark_format


def test_every_command_has_examples_that_parse_as_shown() -> None:
    root = docs.root_command()
    man = (REPO / "man" / "mongocdc.1").read_text()
    missing = [node.name or "mongocdc" for node in docs.walk(root) if not docs.examples(node.command)]
    assert missing == []
    for node in docs.walk(root):
        for example in docs.examples(node.command):
            argv = shlex.split(example)
            if argv[0] == "sudo":
                argv = argv[1:]
            argv = argv[: argv.index(">")] if ">" in argv else argv
            assert argv[0] == "mongocdc" and all(name in argv for name in node.path), example
            parse_command_line(argv[1:])
            assert docs._roff(example) in man, example
