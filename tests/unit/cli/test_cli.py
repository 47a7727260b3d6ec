"""The command line: exit codes, error messages, help text, redaction, generated docs (no services)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
import typer

from mongocdc.cli import docs
from mongocdc.cli.main import app, run
from mongocdc.cli.options import OFFSETS, settings_flags
from mongocdc.cli.state import state
from mongocdc.config import PROPERTIES, Settings
from mongocdc.errors import ExitCode
from tests.unit.cli.helpers import REPO, mongocdc

GROUPS = [
    "discover",
    "snapshot",
    "stream",
    "signal",
    "offsets",
    "failover",
    "replicate",
    "topic",
    "spark",
    "config",
    "version",
]


pytestmark = pytest.mark.usefixtures("clean_env")


def test_help_lists_every_command_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    for group in GROUPS:
        assert f"  {group} " in out or f"  {group}\n" in out, group


def test_version_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    from mongocdc import __version__

    assert run(["version"]) == ExitCode.OK
    assert capsys.readouterr().out == f"mongocdc {__version__}\n"


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["no-such-command"]) == ExitCode.USAGE
    assert "No such command" in capsys.readouterr().err
    assert run(["offsets", "show", "--output", "xml"]) == ExitCode.USAGE


def test_invalid_configuration_exits_3_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("topic.prefix: '9bad prefix'\ntombstone.on.delete: false\n")
    assert run(["--config", str(config), "config", "validate"]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "topic.prefix" in err and "9bad prefix" in err
    assert "tombstone.on.delete" in err and "tombstones.on.delete" in err  # the closest known name


def test_missing_config_file_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--config", str(tmp_path / "absent.yaml"), "config", "show"]) == ExitCode.CONFIG
    assert "absent.yaml" in capsys.readouterr().err


def test_group_mode_without_the_kafka_offset_store_exits_3_and_status_without_a_group_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("name: c\nmongodb.connection.string: mongodb://127.0.0.1:1/\ntopic.prefix: p\n")
    assert run(["--config", str(config), "stream", "--group-id", "fleet"]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "group.id ('fleet') needs offset.storage: kafka" in err and "offset.storage is sqlite" in err
    assert run(["--config", str(config), "status"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "group.id is not set" in err and "mongocdc offsets show" in err


def test_stream_requires_a_topic_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["stream", "--connection-string", "mongodb://127.0.0.1:1/"]) == ExitCode.CONFIG
    assert "topic.prefix" in capsys.readouterr().err


def test_unreachable_mongodb_exits_4_naming_the_host(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(
        [
            "discover",
            "--timeout",
            "0.3",
            "--connection-string",
            "mongodb://u:hunter2@127.0.0.1:9/?directConnection=true",
        ]
    )
    err = capsys.readouterr().err
    assert code == ExitCode.UNREACHABLE
    assert "MongoDB at 127.0.0.1:9 is unreachable after 1 attempt: 127.0.0.1:9: " in err
    assert "Topology Description" not in err and "configured timeouts" not in err  # pymongo's dump is left out
    assert "hunter2" not in err


def test_one_shot_commands_make_one_short_attempt_whatever_connect_max_attempts_says() -> None:
    """``discover`` retried 16 times with 30 s server selection (~26 minutes) before exit 4: now one attempt of
    --timeout (5 s unless given) and a hint that names it; the subprocess's 60 s limit fails the test otherwise."""
    env = {"MONGOCDC_CONNECT_MAX_ATTEMPTS": "16", "MONGOCDC_MONGODB_SERVER_SELECTION_TIMEOUT_MS": "30000"}
    started = time.monotonic()
    done = mongocdc("discover", "--connection-string", "mongodb://127.0.0.1:9/?directConnection=true", env=env)
    elapsed = time.monotonic() - started
    assert done.returncode == ExitCode.UNREACHABLE, done.stderr
    assert 4.5 < elapsed < 20, elapsed  # the default --timeout, 5 s, once
    assert "unreachable after 1 attempt" in done.stderr
    assert "--timeout sets how long the one attempt waits" in done.stderr
    assert "mongocdc.retry" not in done.stderr  # no retry, so no retry warning


@pytest.mark.parametrize(
    "command",
    [
        ["offsets", "show", "--offsets", "kafka:connect-offsets"],
        ["offsets", "reset", "--yes", "--offsets", "kafka:connect-offsets"],
        ["signal", "send", "log", "-m", "hi", "--channel", "kafka", "--topic-prefix", "shop"],
        ["snapshot", "--incremental", "--collections", "db.c", "--channel", "kafka", "--topic-prefix", "shop"],
        ["failover", "translate", "--group", "g", "--target", "127.0.0.1:9"],
    ],
    ids=["offsets-show", "offsets-reset", "signal-send", "snapshot-incremental", "failover-translate"],
)
def test_one_shot_kafka_commands_fail_within_their_timeout(command: list[str]) -> None:
    env = {
        "MONGOCDC_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9",
        "MONGOCDC_CONNECT_MAX_ATTEMPTS": "16",
        "MONGOCDC_SIGNAL_ENABLED_CHANNELS": "source,kafka",
    }
    timeout = [] if command[0] == "snapshot" else ["--timeout", "1"]
    started = time.monotonic()
    done = mongocdc(*command, *timeout, env=env)
    elapsed = time.monotonic() - started
    assert done.returncode == ExitCode.UNREACHABLE, done.stderr
    assert elapsed < 20, elapsed
    assert "127.0.0.1:9 is unreachable after 1 attempt" in done.stderr
    assert "--timeout sets how long the one attempt waits" in done.stderr


def test_stream_retries_with_one_line_per_attempt() -> None:
    """``stream`` keeps the connect.* retries; each retry is one line: host, attempt n/N, next delay, error."""
    env = {
        "MONGOCDC_CONNECT_MAX_ATTEMPTS": "2",
        "MONGOCDC_CONNECT_BACKOFF_INITIAL_DELAY_MS": "10",
        "MONGOCDC_CONNECT_TIMEOUT_MS": "300",
        "MONGOCDC_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9",
    }
    done = mongocdc("stream", "--topic-prefix", "shop", "--connection-string", "mongodb://127.0.0.1:9/", env=env)
    assert done.returncode == ExitCode.UNREACHABLE, done.stderr
    retries = [line for line in done.stderr.splitlines() if "mongocdc.retry" in line]
    assert len(retries) == 1, done.stderr
    assert retries[0].endswith(
        "connecting to Kafka at 127.0.0.1:9: attempt 1/2 failed, next in 0.0 s: "
        "Failed to get metadata: Local: Broker transport failure"
    )
    assert "unreachable after 2 attempts" in done.stderr
    assert "connect.max.attempts and connect.backoff.* tune the retries" in done.stderr


def test_unexpected_error_exits_1_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("secret mongodb://u:pw@h/ inside")

    monkeypatch.setattr("mongocdc.cli.state.load_settings", boom)
    assert run(["config", "show"]) == ExitCode.UNEXPECTED
    err = capsys.readouterr().err
    assert "unexpected ZeroDivisionError" in err and "report it" in err
    assert "Traceback" not in err and "pw@" not in err
    with pytest.raises(ZeroDivisionError):
        run(["--traceback", "config", "show"])


def test_config_show_redacts_secrets_and_honours_precedence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "mongodb:\n  connection.string: mongodb://app:s3cret@db1:27017/?replicaSet=rs0\n"
        "topic.prefix: fromfile\nkafka.sasl.password: kafkapw\nname: fromfile\n"
    )
    monkeypatch.setenv("MONGOCDC_TOPIC_PREFIX", "fromenv")
    monkeypatch.setenv("MONGOCDC_NAME", "fromenv")
    assert run(["--config", str(config), "config", "show", "--output", "json", "--name", "fromflag"]) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out and "kafkapw" not in out
    shown = {name: entry["value"] for name, entry in json.loads(out).items()}
    assert shown["mongodb.connection.string"].startswith("mongodb://app:")
    assert shown["topic.prefix"] == "fromenv"
    assert shown["name"] == "fromflag"


def test_offsets_show_on_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mongocdc.offsets.sqlite import SqliteOffsetStore

    store = tmp_path / "o.db"
    SqliteOffsetStore(store).close()  # a store no connector committed to yet (a missing one is an error)
    assert run(["offsets", "show", "--offsets", f"sqlite:{store}", "--all", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert run(["offsets", "show", "--offsets", f"sqlite:{store}", "--name", "nope"]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"error: connector 'nope' has no stored offsets in sqlite:{store}" in captured.err
    assert "holds no offsets yet" in captured.err


def test_offsets_show_of_a_connector_with_no_offsets_names_the_stored_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "o.db"
    sqlite = ["--offsets", f"sqlite:{store}"]
    assert (
        run(["offsets", "reset", *sqlite, "--name", "app", "--partition", "rs0", "--to-timestamp", "100", "--yes"]) == 0
    )
    capsys.readouterr()
    assert run(["offsets", "show", *sqlite, "--name", "nope", "--output", "json"]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.out == "" and "has offsets of 'app': pass --name, or --all" in captured.err
    assert run(["offsets", "show", *sqlite, "--name", "app", "--output", "json"]) == 0
    assert [r["partition"] for r in json.loads(capsys.readouterr().out)] == ["rs0"]


def test_every_command_and_option_has_help_text() -> None:
    root = typer.main.get_command(app)
    missing = []
    for node in docs.walk(root):
        if not (node.command.help or node.command.short_help):
            missing.append(node.name or "mongocdc")
        for param in node.command.params:
            if isinstance(param, click.Option) and not param.help:
                missing.append(f"{node.name} {param.opts[0]}")
            if isinstance(param, click.Argument) and not getattr(param, "help", None):
                missing.append(f"{node.name} {param.name}")
    assert missing == []


def test_options_that_set_properties_are_the_flags_their_settings_rows_declare() -> None:
    root = typer.main.get_command(app)
    options = [option for node in docs.walk(root) for option in docs.options_of(node.command)]
    for prop in PROPERTIES.values():
        if prop.flag is None:
            continue
        assert prop.name in prop.flag.help, f"the help of {prop.flag.option} names {prop.name}"
        declared = [o for o in options if prop.flag.option in o.opts and o.help == prop.flag.help]
        assert declared, f"no command takes {prop.flag.option}"
        assert all(o.metavar == prop.flag.metavar for o in declared)


def test_settings_flags_override_the_properties_they_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    worker = tmp_path / "connect-distributed.properties"
    worker.write_text("bootstrap.servers=w1:9092\n")  # --bootstrap-servers wins over the worker's
    values = {
        "name": "fromflag",
        "mongodb.connection.string": "mongodb://db1:27017/?replicaSet=rs0",
        "topic.prefix": "fromflag",
        "kafka.bootstrap.servers": "k1:9092",
        "src.kafka.bootstrap.servers": "s1:9092",
        "dest.kafka.bootstrap.servers": "t1:9092",
        "topics": "orders.*",
        "topic.rename.format": "${topic}.replica",
        "groups": "app.*",
        "metrics.port": "9100",
        "metrics.host": "0.0.0.0",
        "group.id": "fleet",
        "worker.config": str(worker),
    }
    assert set(values) == {name for name, prop in PROPERTIES.items() if prop.flag}
    monkeypatch.setenv("MONGOCDC_TOPIC_PREFIX", "fromenv")
    monkeypatch.setenv("MONGOCDC_GROUPS", "fromenv")
    seen: list[Settings] = []
    probe = typer.Typer()

    @probe.command()
    @settings_flags(*values, OFFSETS)
    def show(ctx: typer.Context) -> None:
        seen.append(state(ctx).settings())

    argv = ["--offsets", "kafka:offsets-topic"]
    for name, value in values.items():
        flag = PROPERTIES[name].flag
        assert flag is not None
        argv += [flag.option, value]
    typer.main.get_command(probe).main(argv, standalone_mode=False)
    settings = seen[0]
    for name, value in values.items():
        assert PROPERTIES[name].render(settings.get(name)) == PROPERTIES[name].render(PROPERTIES[name].parse(value))
    assert settings.offset_storage == "kafka" and settings.offset_storage_topic == "offsets-topic"
    typer.main.get_command(probe).main([], standalone_mode=False)
    assert seen[1].topic_prefix == "fromenv" and seen[1].groups == ("fromenv",)


def test_generated_docs_are_fresh() -> None:
    stale = docs.stale(REPO)
    assert stale == [], "run `python -m mongocdc.cli.docs` and commit the result"


def test_completions_and_man_page_name_every_command() -> None:
    bash = (REPO / "completions" / "mongocdc.bash").read_text()
    man = (REPO / "man" / "mongocdc.1").read_text()
    for group in GROUPS:
        assert group in bash and group in man
    assert "\\-\\-max\\-messages" in man and "--max-messages" in bash


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ("ConfigError", ExitCode.CONFIG),
        ("UnreachableError", ExitCode.UNREACHABLE),
        ("ResumePositionLostError", ExitCode.RESUME_LOST),
        ("DeliveryError", ExitCode.UNEXPECTED),
    ],
)
def test_each_error_class_maps_to_its_exit_code_with_message_and_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: str, code: ExitCode
) -> None:
    from mongocdc import errors

    def fail(*args: object, **kwargs: object) -> None:
        raise getattr(errors, error)("what went wrong at mongodb://u:pw@db1/", hint="what to do next")

    monkeypatch.setattr("mongocdc.cli.state.load_settings", fail)
    assert run(["config", "show"]) == code
    err = capsys.readouterr().err
    assert err == "error: what went wrong at mongodb://u:********@db1/\nhint: what to do next\n"


@pytest.mark.usefixtures("fast_retries")
def test_unreachable_kafka_stops_stream_with_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "stream",
        "--topic-prefix",
        "p",
        "--bootstrap-servers",
        "127.0.0.1:9",
        "--connection-string",
        "mongodb://127.0.0.1:9/",
        "--offsets",
        f"sqlite:{tmp_path / 'o.db'}",
    ]
    assert run(argv) == ExitCode.UNREACHABLE
    err = capsys.readouterr().err
    assert "error: Kafka at 127.0.0.1:9 is unreachable after 2 attempts" in err
    assert "hint: check kafka.bootstrap.servers" in err


@pytest.mark.usefixtures("fast_retries")
def test_unreachable_kafka_stops_topic_dump_with_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["topic", "dump", "t", "--bootstrap-servers", "127.0.0.1:9", "--timeout", "0.5"]) == 4
    err = capsys.readouterr().err
    assert "Kafka at 127.0.0.1:9 is unreachable" in err
    # one warning for the outage, not librdkafka's line per connection attempt (dozens in half a second)
    assert len(err.splitlines()) <= 3, err
    assert "Kafka at 127.0.0.1:9 does not answer" in err


@pytest.mark.usefixtures("fast_retries")
def test_json_logs_are_json_lines_with_credentials_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = "mongodb://admin:topsecret@127.0.0.1:9/?directConnection=true"
    argv = ["--log-format", "json", "stream", "--topic-prefix", "p", "--connection-string", uri]
    argv += ["--bootstrap-servers", "127.0.0.1:9", "--offsets", f"sqlite:{tmp_path / 'o.db'}"]
    assert run(argv) == ExitCode.UNREACHABLE
    lines = capsys.readouterr().err.splitlines()
    logs = [json.loads(line) for line in lines if line.startswith("{")]
    assert logs, lines
    retry = next(entry for entry in logs if "attempt 1/2 failed" in entry["message"])
    assert retry["level"] == "warning" and retry["logger"].startswith("mongocdc")
    assert "T" in retry["ts"] and retry["ts"].endswith("+00:00")
    assert all("topsecret" not in line for line in lines)
    assert all(line.startswith("{") for line in lines)  # the final error too: one JSON record, hint and code in it
    final = json.loads(lines[-1])
    assert final["level"] == "error" and final["exit_code"] == ExitCode.UNREACHABLE
    assert final["message"].startswith("Kafka at 127.0.0.1:9 is unreachable")
    assert final["hint"]


@pytest.mark.parametrize(
    ("args", "config"),
    [
        (["version"], None),  # the output is still buffered when the command returns
        (["config", "show", "-c"], "topic.prefix: shop\n"),  # a rich table, written while the command runs
    ],
)
def test_a_closed_pipe_exits_0_quietly(tmp_path: Path, args: list[str], config: str | None) -> None:
    """``mongocdc … | head -3``: the reader is gone before the output is written; no traceback, no "bug"."""
    if config is not None:
        (tmp_path / "c.yaml").write_text(config)
        args = [*args, str(tmp_path / "c.yaml")]
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONGOCDC_") or k.startswith("MONGOCDC_TEST_")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mongocdc", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path,
            env=env,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_kubernetes_service_variables_named_mongocdc_are_ignored_with_a_warning_each(tmp_path: Path) -> None:
    """A Service named ``mongocdc`` puts ``MONGOCDC_SERVICE_HOST``, ``MONGOCDC_PORT``, … into every pod."""
    env = {"MONGOCDC_TOPIC_PREFIX": "shop", "MONGOCDC_SERVICE_HOST": "10.0.0.7", "MONGOCDC_PORT": "tcp://10.0.0.7:80"}
    done = mongocdc("config", "show", "--output", "json", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"shop"' in done.stdout  # the settings that are settings still apply
    for var in ("MONGOCDC_SERVICE_HOST", "MONGOCDC_PORT"):
        assert done.stderr.count(f"environment variable {var} is not a mongocdc setting and is ignored") == 1


@pytest.mark.parametrize(("level", "warned"), [("warn", True), ("WARNING", True), ("Debug", True), ("ERROR", False)])
def test_log_level_takes_any_case_and_warn(tmp_path: Path, level: str, warned: bool) -> None:
    env = {"MONGOCDC_TOPIC_PREFIX": "shop", "MONGOCDC_NOPE": "x"}  # an unknown variable: one WARNING line
    done = mongocdc("--log-level", level, "config", "show", "--output", "json", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("MONGOCDC_NOPE is not a mongocdc setting" in done.stderr) is warned


@pytest.mark.parametrize("spelling", ["--bootstrap-servers", "--bootstrap-server"])
def test_bootstrap_servers_is_also_spelt_as_kafkas_tools_spell_it(tmp_path: Path, spelling: str) -> None:
    done = mongocdc("config", "show", "--topic-prefix", "app", spelling, "k1:9092", "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kafka.bootstrap.servers"]["value"] == "k1:9092"


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_flag_prints_the_version_without_a_command(flag: str) -> None:
    from mongocdc import __version__

    done = mongocdc(flag)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"mongocdc {__version__}\n", "")


def test_the_stream_status_line_counts_every_op_and_speaks_in_singular_when_one() -> None:
    from mongocdc.cli.commands_stream import status_line
    from mongocdc.engine.streaming import StreamStats

    one = StreamStats(events={"c": 1, "u": 0, "d": 0, "r": 0}, commits=1)
    assert status_line(one) == "streamed 1 event (c=1 u=0 d=0 r=0), 1 commit"
    reads = StreamStats(events={"c": 2, "u": 1, "d": 0, "r": 5}, commits=3)
    assert status_line(reads) == "streamed 8 events (c=2 u=1 d=0 r=5), 3 commits"  # incremental reads counted


def test_config_validate_names_every_property_stream_needs_and_prints_json(tmp_path: Path) -> None:
    empty = mongocdc("config", "validate", cwd=tmp_path)
    assert empty.returncode == 3
    assert "topic.prefix, mongodb.connection.string" in empty.stderr  # both named at once, with how to set them
    assert "--topic-prefix" in empty.stderr
    uri = "mongodb://h:27017/?replicaSet=rs0"
    ok = mongocdc("config", "validate", "--topic-prefix", "app", "--connection-string", uri, "-o", "json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {"valid": True, "name": "mongocdc", "topic.prefix": "app"}


def test_waiting_for_an_incremental_snapshot_no_connector_takes_up_is_exit_4_saying_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    from mongocdc.cli.commands_snapshot import wait_for_incremental
    from mongocdc.config import load_settings
    from mongocdc.errors import ExitCode, UnreachableError

    settings = load_settings(
        None, {}, {"topic.prefix": "app", "name": "orders", "offset.storage.file.filename": str(tmp_path / "o.db")}
    )
    with caplog.at_level(logging.WARNING), pytest.raises(UnreachableError) as raised:
        wait_for_incremental(settings, "sig-1", threading.Event(), timeout_s=0.2)
    assert raised.value.exit_code == ExitCode.UNREACHABLE
    assert "no connector took up incremental snapshot sig-1 within 0.2 s" in str(raised.value)
    assert "--name orders" in (raised.value.hint or "")
    said = [r.getMessage() for r in caplog.records]
    assert any(f"the offset store {tmp_path / 'o.db'} does not exist" in m for m in said), said
    assert not (tmp_path / "o.db").exists()  # waiting reads the store: it never creates one

    from mongocdc.offsets.sqlite import SqliteOffsetStore

    SqliteOffsetStore(tmp_path / "o.db").close()  # a store without the connector's offsets
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(UnreachableError):
        wait_for_incremental(settings, "sig-1", threading.Event(), timeout_s=0.2)
    assert any("connector 'orders' has no stored offsets" in r.getMessage() for r in caplog.records)


def test_a_table_never_breaks_a_value_even_into_a_pipe(tmp_path: Path) -> None:
    """Piped output is rich's 80 columns; a wider table is printed at its own width, each value whole."""
    uri = "mongodb://h1.example.net:27017,h2.example.net:27017,h3.example.net:27017/?replicaSet=rs0&w=majority"
    done = mongocdc("config", "show", "--topic-prefix", "app", "--connection-string", uri, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "mongodb.connection.string" in line]
    assert len(rows) == 1 and uri in rows[0]  # the property name and the value whole, on one line
    assert "…" not in done.stdout
