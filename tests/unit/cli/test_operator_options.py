"""The real command's global options before or after the command, ``-v``/``-q``, JSON error records and
suggestions said once (no services)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli.helpers import connector_dir, mongocdc


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """The in-process tests configure logging: leave it as it was for the next tests."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    libraries = {name: logging.getLogger(name).level for name in ("pymongo", "py4j", "mongocdc.kafka.librdkafka")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, saved in libraries.items():
        logging.getLogger(name).setLevel(saved)


# --- global options before or after the command ---------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "conf/c.yaml", "offsets", "show", "-o", "json"],
        ["offsets", "show", "-c", "conf/c.yaml", "-o", "json"],
        ["-o", "json", "offsets", "show", "-c", "conf/c.yaml"],
        ["-o", "json", "-c", "conf/c.yaml", "--log-level", "error", "offsets", "show"],
        ["offsets", "show", "--log-level", "error", "-c", "conf/c.yaml", "--output", "json"],
    ],
)
def test_config_output_and_log_level_go_before_or_after_the_command(tmp_path: Path, args: list[str]) -> None:
    connector_dir(tmp_path)
    done = mongocdc(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["sec"] == 7


def test_the_commands_own_output_wins_over_the_global_one(tmp_path: Path) -> None:
    connector_dir(tmp_path)
    done = mongocdc("-o", "json", "offsets", "show", "-c", "conf/c.yaml", "-o", "table", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stored offsets" in done.stdout and not done.stdout.startswith("[")


@pytest.mark.parametrize(
    ("args", "env", "warned"),
    [
        ([], {}, True),
        (["-q"], {}, True),  # -q: warnings and errors
        (["-qq"], {}, False),  # -qq: errors only
        (["-q", "-q"], {}, False),
        (["-q"], {"MONGOCDC_LOG_LEVEL": "error"}, True),  # the command line beats the environment
        (["--log-level", "error"], {}, False),
    ],
)
def test_q_and_qq_say_less_before_or_after_the_command(
    tmp_path: Path, args: list[str], env: dict[str, str], warned: bool
) -> None:
    env = {"MONGOCDC_TOPIC_PREFIX": "shop", "MONGOCDC_NOPE": "x", **env}  # an unknown variable: one warning
    for where in ("before", "after"):
        argv = [*args, "config", "show", "-o", "json"] if where == "before" else ["config", "show", "-o", "json", *args]
        done = mongocdc(*argv, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert ("MONGOCDC_NOPE is not a mongocdc setting" in done.stderr) is warned, (where, done.stderr)


def test_v_logs_debug_lines(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("topic.prefix: shop\n")
    quiet = mongocdc("config", "show", "-c", "c.yaml", cwd=tmp_path)
    verbose = mongocdc("config", "show", "-c", "c.yaml", "-v", cwd=tmp_path)
    assert "DEBUG" not in quiet.stderr
    assert f"DEBUG   mongocdc.config: read config file c.yaml (a relative path in it is relative to {tmp_path})" in (
        verbose.stderr
    )


def test_vv_lets_the_client_libraries_debug_lines_through() -> None:
    from mongocdc.cli.state import State

    state = State()
    state.set_logging(verbose=1)
    assert logging.getLogger("pymongo").getEffectiveLevel() == logging.WARNING  # -v: mongocdc's own debug lines
    state.set_logging(verbose=1)
    assert logging.getLogger().level == logging.DEBUG
    assert logging.getLogger("pymongo").getEffectiveLevel() == logging.DEBUG  # -vv: pymongo's too
    assert logging.getLogger("py4j").getEffectiveLevel() == logging.DEBUG


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--log-level", "info", "config", "show", "-v"], "--log-level and -v both set how much is logged"),
        (["-q", "config", "show", "--log-level", "debug"], "--log-level and -q both set how much is logged"),
        (["-v", "config", "show", "-q"], "-v and -q both set how much is logged"),
    ],
)
def test_two_ways_of_saying_how_much_to_log_are_a_usage_error(tmp_path: Path, args: list[str], said: str) -> None:
    done = mongocdc(*args, env={"MONGOCDC_TOPIC_PREFIX": "shop"}, cwd=tmp_path)
    assert done.returncode == 2
    assert said in done.stderr
    assert done.stdout == ""


def test_a_log_level_variable_is_overridden_by_v_without_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("topic.prefix: shop\n")
    done = mongocdc("config", "show", "-c", "c.yaml", "-v", env={"MONGOCDC_LOG_LEVEL": "error"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "DEBUG" in done.stderr


# --- errors as JSON records; suggestions once -------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--log-format", "json", "offsets", "show", "--offsets", "sqlite:none.db"], {}),
        (["offsets", "show", "--offsets", "sqlite:none.db", "--log-format", "json"], {}),
        (["offsets", "show", "--offsets", "sqlite:none.db"], {"MONGOCDC_LOG_FORMAT": "json"}),
    ],
)
def test_json_log_format_makes_the_final_error_a_json_record(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    done = mongocdc(*args, env=env, cwd=tmp_path)
    assert done.returncode == 3
    (line,) = done.stderr.splitlines()
    record = json.loads(line)
    assert record["level"] == "error" and record["exit_code"] == 3 and record["logger"] == "mongocdc"
    assert record["message"].startswith(f"the offset store {tmp_path / 'none.db'} does not exist")
    assert record["hint"].startswith("check offset.storage.file.filename")
    assert "ts" in record


def test_json_error_records_keep_secrets_out(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "mongodb.connection.string: mongodb://app:s3cret@h:27017/\ntopic.prefix: 'bad prefix'\n"
    )
    done = mongocdc("--log-format", "json", "config", "validate", "-c", "c.yaml", cwd=tmp_path)
    assert done.returncode == 3
    record = json.loads(done.stderr.splitlines()[-1])
    assert record["exit_code"] == 3 and "topic.prefix" in record["message"]
    assert "s3cret" not in done.stderr


def test_json_log_format_makes_a_usage_error_a_json_record_too(tmp_path: Path) -> None:
    done = mongocdc("--log-format", "json", "offsets", "shw", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    record = json.loads(line)
    assert record["exit_code"] == 2 and record["message"] == "No such command 'shw'. Did you mean 'show'?"
    assert record["hint"] == "try 'mongocdc offsets --help' for help"


def test_the_text_error_lines_are_unchanged_without_json(tmp_path: Path) -> None:
    done = mongocdc("offsets", "show", "--offsets", "sqlite:none.db", cwd=tmp_path)
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: the offset store") and lines[1].startswith("hint: check")


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["offsets", "shw"], "Did you mean 'show'?"),
        (["ofsets", "show"], "Did you mean 'offsets'?"),
        (["offsets", "show", "--nme", "x"], "Did you mean '--name'?"),
    ],
)
def test_did_you_mean_is_said_once(tmp_path: Path, args: list[str], suggestion: str) -> None:
    done = mongocdc(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count(suggestion) == 1, done.stderr


def test_a_misspelt_property_is_suggested_once(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("topic.prefx: shop\nkafka.lingr.ms: 5\n")
    done = mongocdc("config", "show", "-c", "c.yaml", cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.count("did you mean 'topic.prefix'?") == 1, done.stderr


def test_py4j_logs_go_through_the_formatter_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Spark's Python side (py4j) logs through Python's logging: with --log-format json, as JSON records."""
    from mongocdc.cli.state import LogFormat, State

    State().set_logging(fmt=LogFormat.json, verbose=2)
    logging.getLogger("py4j.clientserver").info("Closing down clientserver connection")
    (line,) = capsys.readouterr().err.splitlines()
    assert json.loads(line)["logger"] == "py4j.clientserver"
