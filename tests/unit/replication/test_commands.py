"""``mongocdc replicate`` and ``failover translate``: error paths, exit codes and messages (no broker needed)."""

from __future__ import annotations

import pytest

from mongocdc.cli.main import run
from mongocdc.errors import ExitCode

CLOSED = "127.0.0.1:9"  # nothing listens on the discard port


@pytest.fixture(autouse=True)
def _fast_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONGOCDC_CONNECT_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("MONGOCDC_CONNECT_TIMEOUT_MS", "500")


def test_replicate_source_unreachable_exits_4_naming_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["replicate", "--source", CLOSED, "--target", CLOSED]) == ExitCode.UNREACHABLE
    err = capsys.readouterr().err
    assert f"error: the source Kafka cluster at {CLOSED} is unreachable after 1 attempt" in err
    assert "hint: check --source (src.kafka.bootstrap.servers)" in err
    assert "Traceback" not in err


def test_replicate_bad_topics_regex_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["replicate", "--source", CLOSED, "--target", CLOSED, "--topics", "orders("]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "topics: invalid value 'orders(' from the command line" in err
    assert "not a valid regular expression" in err


def test_replicate_bad_rename_format_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replicate", "--source", CLOSED, "--target", CLOSED, "--rename-format", "${cluster}.x"]
    assert run(argv) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "topic.rename.format: invalid value '${cluster}.x'" in err and "unknown placeholder ${cluster}" in err


def test_replicate_without_target_exits_3_saying_how_to_set_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["replicate", "--source", CLOSED]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "error: dest.kafka.bootstrap.servers is required by this command but is not set" in err
    assert "MONGOCDC_DEST_KAFKA_BOOTSTRAP_SERVERS" in err and "--target" in err


def test_replicate_bad_client_setting_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MONGOCDC_SRC_KAFKA_NO_SUCH_SETTING", "1")
    assert run(["replicate", "--source", CLOSED, "--target", CLOSED]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "invalid Kafka client setting for the source Kafka cluster" in err and "no.such.setting" in err


def test_translate_target_unreachable_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["failover", "translate", "--group", "g", "--target", CLOSED]) == ExitCode.UNREACHABLE
    err = capsys.readouterr().err
    assert f"the target Kafka cluster at {CLOSED} is unreachable" in err
    assert "hint: check --target (dest.kafka.bootstrap.servers)" in err


def test_translate_without_group_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["failover", "translate", "--target", CLOSED]) == ExitCode.USAGE
    assert "--group" in capsys.readouterr().err


def test_translate_apply_and_dry_run_together_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["failover", "translate", "--group", "g", "--target", CLOSED, "--apply", "--dry-run"]
    assert run(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "give --apply (write the offsets) or --dry-run (only check and show), not both" in err
