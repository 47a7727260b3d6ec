"""`mongocdc signal send …` without services: option parsing, validation errors and exit codes, channel choice."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pymongo.errors import OperationFailure

from mongocdc.cli import commands_signal
from mongocdc.cli.main import run
from mongocdc.errors import ExitCode
from mongocdc.events.signals import ExecuteSnapshot, LogSignal, PauseSnapshot, Signal, StopSnapshot

SEND = ["signal", "send"]


pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Signal]]:
    """Signals the command would write, by channel (nothing is written)."""
    calls: list[tuple[str, Signal]] = []

    def fake_send(settings: Any, channel: commands_signal.Channel, signal: Signal) -> commands_signal.Sent:
        calls.append((channel.value, signal))
        where = "inventory.debezium_signal" if channel is commands_signal.Channel.source else "p-signal[0]@7"
        return commands_signal.Sent(signal.id, channel, where, {"where": where})

    monkeypatch.setattr(commands_signal, "send_signal", fake_send)
    return calls


def send(*args: str) -> int:
    return run([*SEND, *args])


# --- what is written -------------------------------------------------------------


def test_execute_snapshot_builds_the_debezium_signal(
    sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    code = send(
        "execute-snapshot",
        "--collections",
        r"inventory\.orders",
        "--collections",
        r"shop\..*",
        "--filter",
        'inventory.orders={"status": "open", "_id": {"$gt": {"$oid": "65a000000000000000000000"}}}',
        "--id",
        "ad-hoc-1",
        "--output",
        "json",
    )
    assert code == ExitCode.OK
    (channel, signal) = sent[0]
    assert channel == "source"  # the default signal.enabled.channels
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.id == "ad-hoc-1"
    assert [p.text for p in signal.data_collections] == [r"inventory\.orders", r"shop\..*"]
    assert signal.snapshot_type == "incremental"
    assert signal.filter_for("inventory.orders") is not None
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == "ad-hoc-1"
    assert shown["type"] == "execute-snapshot"
    assert shown["channel"] == "source"
    assert shown["data"]["data-collections"] == [r"inventory\.orders", r"shop\..*"]
    assert shown["data"]["additional-conditions"][0]["data-collection"] == "inventory.orders"
    assert shown["data"]["additional-conditions"][0]["filter"] == {
        "status": "open",
        "_id": {"$gt": {"$oid": "65a000000000000000000000"}},
    }


def test_blocking_snapshot_and_a_generated_id(
    sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert send("execute-snapshot", "--collections", "a\\.b", "--snapshot-type", "blocking") == ExitCode.OK
    signal = sent[0][1]
    assert isinstance(signal, ExecuteSnapshot) and signal.snapshot_type == "blocking"
    assert len(signal.id) == 36  # a UUID
    out = capsys.readouterr().out
    assert signal.id in out and "Signal sent" in out


def test_stop_pause_resume_and_log(sent: list[tuple[str, Signal]]) -> None:
    assert send("stop-snapshot") == ExitCode.OK
    assert send("stop-snapshot", "--collections", "a\\.b") == ExitCode.OK
    assert send("pause-snapshot") == ExitCode.OK
    assert send("resume-snapshot") == ExitCode.OK
    assert send("log", "--message", "hello from the operator") == ExitCode.OK
    stop_all, stop_one, pause, resume, log = (signal for _, signal in sent)
    assert isinstance(stop_all, StopSnapshot) and stop_all.stops_all
    assert isinstance(stop_one, StopSnapshot) and [p.text for p in stop_one.data_collections] == ["a\\.b"]
    assert isinstance(pause, PauseSnapshot)
    assert resume.type == "resume-snapshot"
    assert isinstance(log, LogSignal) and log.message == "hello from the operator"


def test_the_channel_is_the_first_enabled_one_unless_chosen(
    sent: list[tuple[str, Signal]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONGOCDC_SIGNAL_ENABLED_CHANNELS", "kafka")
    assert send("pause-snapshot") == ExitCode.OK
    monkeypatch.setenv("MONGOCDC_SIGNAL_ENABLED_CHANNELS", "kafka,source")
    assert send("pause-snapshot") == ExitCode.OK
    assert send("pause-snapshot", "--channel", "kafka") == ExitCode.OK
    assert [channel for channel, _ in sent] == ["kafka", "source", "kafka"]


# --- refused before anything is written --------------------------------------------


def test_bad_regex_exits_3_naming_the_pattern(
    sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert send("execute-snapshot", "--collections", "ok", "--collections", "inventory(") == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert err.startswith("error: execute-snapshot signal not sent: 'data-collections[1]' 'inventory(' is not a valid")
    assert "regular expression" in err
    assert "hint: data-collections[N] is the N-th --collections option" in err
    assert sent == []


def test_bad_regex_in_stop_snapshot_exits_3(sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]) -> None:
    assert send("stop-snapshot", "--collections", "[a-") == ExitCode.CONFIG
    assert "stop-snapshot signal not sent" in capsys.readouterr().err
    assert sent == []


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("inventory.orders={bad", "'additional-conditions[0].filter' is not valid JSON"),
        ("inventory.orders=[1, 2]", "is not a MongoDB query document"),
        ("inventory.orders=color='blue'", "SQL conditions such as color='blue'"),
        ('inventory.orders={"$set": {"a": 1}}', "uses '$set' at the top level"),
    ],
)
def test_bad_filter_json_exits_3_with_the_reason(
    value: str, reason: str, sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert send("execute-snapshot", "--collections", "inventory\\.orders", "--filter", value) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "error: execute-snapshot signal not sent:" in err and reason in err
    assert "additional-conditions[N] is the N-th --filter option" in err
    assert sent == []


@pytest.mark.parametrize("value", ["inventory.orders", "={}", "inventory.orders="])
def test_filter_without_collection_or_json_exits_3(
    value: str, sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert send("execute-snapshot", "--collections", "x", "--filter", value) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert f"error: --filter {value!r} is not DB.COLL=JSON" in err
    assert "hint: write the collection, an equals sign and the query" in err
    assert sent == []


def test_filter_for_an_unselected_collection_is_sent_with_a_warning(
    sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert send("execute-snapshot", "--collections", "a\\.b", "--filter", 'c.d={"x": 1}') == ExitCode.OK
    assert "--filter c.d: no --collections pattern selects c.d" in capsys.readouterr().err
    assert len(sent) == 1


def test_missing_collections_or_message_is_a_usage_error(
    sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert send("execute-snapshot") == ExitCode.USAGE
    assert "--collections" in capsys.readouterr().err
    assert send("log") == ExitCode.USAGE
    assert "Missing option '--message'" in capsys.readouterr().err
    assert send("execute-snapshot", "--collections", "x", "--snapshot-type", "full") == ExitCode.USAGE
    assert send("pause-snapshot", "--channel", "jmx") == ExitCode.USAGE
    assert send("no-such-signal") == ExitCode.USAGE
    assert sent == []


def test_a_channel_the_connector_does_not_read_exits_3(
    sent: list[tuple[str, Signal]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert send("pause-snapshot", "--channel", "kafka") == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "error: --channel kafka: the connector does not read it (signal.enabled.channels is source)" in err
    assert "hint: use --channel source, or add kafka to signal.enabled.channels" in err
    monkeypatch.setenv("MONGOCDC_SIGNAL_ENABLED_CHANNELS", "none")
    assert send("pause-snapshot") == ExitCode.CONFIG
    assert "signal.enabled.channels is none: the connector reads no signals" in capsys.readouterr().err
    assert sent == []


# --- what each channel needs, and failures while writing ---------------------------


def test_source_channel_needs_the_signal_collection_and_a_connection_string(capsys: pytest.CaptureFixture[str]) -> None:
    assert send("pause-snapshot") == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "signal.data.collection, mongodb.connection.string" in err
    assert "MONGOCDC_SIGNAL_DATA_COLLECTION" in err and "--connection-string" in err


def test_kafka_channel_needs_the_topic_prefix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONGOCDC_SIGNAL_ENABLED_CHANNELS", "kafka")
    assert send("log", "-m", "hi") == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "error: topic.prefix is required by this command but is not set" in err
    assert "--topic-prefix" in err


def test_invalid_signal_collection_setting_exits_3(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONGOCDC_SIGNAL_DATA_COLLECTION", "no-dot")
    assert send("pause-snapshot") == ExitCode.CONFIG
    assert "signal.data.collection: invalid value 'no-dot'" in capsys.readouterr().err


class _RefusingCollection:
    def insert_one(self, document: object) -> None:
        raise OperationFailure("not authorized on inventory to execute command { insert: ... }", code=13)


class _RefusingClient:
    closed = False

    def __getitem__(self, name: str) -> dict[str, _RefusingCollection]:
        return {"debezium_signal": _RefusingCollection()}

    def close(self) -> None:
        _RefusingClient.closed = True


def test_write_refused_for_lack_of_privileges_exits_3_with_the_role_to_grant(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mongocdc import wiring

    monkeypatch.setattr(wiring, "mongo_client", lambda settings: _RefusingClient())
    monkeypatch.setenv("MONGOCDC_SIGNAL_DATA_COLLECTION", "inventory.debezium_signal")
    code = send("log", "-m", "hi", "--connection-string", "mongodb://app:s3cret@db1/")
    err = capsys.readouterr().err
    assert code == ExitCode.CONFIG
    assert "error: the MongoDB user may not insert a signal into inventory.debezium_signal" in err
    assert "hint: grant the connector's user the readWrite role on the database of signal.data.collection" in err
    assert "s3cret" not in err
    assert _RefusingClient.closed


@pytest.mark.usefixtures("fast_retries")
def test_unreachable_kafka_exits_4(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONGOCDC_SIGNAL_ENABLED_CHANNELS", "kafka")
    argv = ["log", "-m", "hi", "--topic-prefix", "p", "--bootstrap-servers", "127.0.0.1:9", "--timeout", "0.5"]
    assert send(*argv) == ExitCode.UNREACHABLE
    err = capsys.readouterr().err
    assert "error: Kafka at 127.0.0.1:9 is unreachable after 1 attempt" in err
    assert "hint: check signal.kafka.bootstrap.servers (or kafka.bootstrap.servers)" in err


def test_every_signal_command_and_option_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["signal", "send", "--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    for command in ("execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log"):
        assert command in out
    assert run(["signal", "send", "execute-snapshot", "--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    for flag in ("--collections REGEX", "--filter DB.COLL=JSON", "--snapshot-type", "--channel", "--id ID", "--output"):
        assert flag in out
