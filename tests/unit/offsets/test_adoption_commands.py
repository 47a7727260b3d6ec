"""``mongocdc offsets import|export`` in process over a standalone worker's offsets file and SQLite (no services).

The topic side, against the suite's real broker, is ``tests/integration/test_offsets_adoption.py``.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import bson
import pytest

from mongocdc.cli.main import run
from mongocdc.engine.adoption import debezium_key
from mongocdc.errors import ExitCode
from mongocdc.offsets.connect import decode_offsets_file, write_offsets_file
from mongocdc.offsets.sqlite import SqliteOffsetStore

DATA = "8269A1B2C3000000032B042C0100296E5A1004"
TOKEN = base64.b64encode(bson.encode({"_data": DATA})).decode()  # stored as Debezium stores it
KEY = debezium_key("dbz", "app")


pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def connect_file(tmp_path: Path) -> Path:
    path = tmp_path / "connect.offsets"
    write_offsets_file(
        path,
        [
            (KEY, json.dumps({"sec": -1, "ord": -1, "resume_token": TOKEN}, separators=(",", ":")).encode()),
            (debezium_key("other", "app"), b'{"sec":1,"ord":1}'),
        ],
    )
    return path


def cli(tmp_path: Path, *args: str) -> int:
    return run(["offsets", *args, "--offsets", f"sqlite:{tmp_path / 'offsets.db'}", "--name", "app"])


def stored(tmp_path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    try:
        return {(r.connector, r.partition): dict(r.offset) for r in store.records()}
    finally:
        store.close()


def importing(tmp_path: Path, path: Path, *args: str) -> int:
    return cli(
        tmp_path,
        "import",
        "--from-kafka-connect",
        "--connect-offsets-file",
        str(path),
        "--connector-name",
        "dbz",
        "--topic-prefix",
        "app",
        "--partition",
        "rs0",
        *args,
    )


def exporting(tmp_path: Path, path: Path, *args: str) -> int:
    return cli(
        tmp_path,
        "export",
        "--to-kafka-connect",
        "--connect-offsets-file",
        str(path),
        "--connector-name",
        "dbz",
        "--topic-prefix",
        "app",
        *args,
    )


def test_import_then_export_round_trips_through_the_file(
    tmp_path: Path, connect_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert importing(tmp_path, connect_file, "--yes", "-o", "json") == ExitCode.OK
    done = json.loads(capsys.readouterr().out)
    after = {"sec": 0x69A1B2C3, "ord": 3, "resume_token": TOKEN}
    shown = {**after, "resume_token": DATA}  # the output shows the token's `_data` hex string
    assert [(d["partition"], d["action"], d["before"], d["after"]) for d in done] == [("rs0", "imported", None, shown)]
    assert done[0]["debezium"]["read_from"] == str(connect_file)
    assert done[0]["debezium"]["offset"]["resume_token"] == DATA
    assert stored(tmp_path) == {("app", "rs0"): after}

    assert exporting(tmp_path, connect_file, "--yes", "-o", "json") == ExitCode.OK
    done = json.loads(capsys.readouterr().out)
    assert done[0]["action"] == "exported" and done[0]["before"]["sec"] == -1
    value = b'{"sec":1772204739,"ord":3,"resume_token":"' + TOKEN.encode() + b'"}'
    assert done[0]["debezium"]["value"] == value.decode()
    assert done[0]["rest"] == {
        "method": "PATCH",
        "path": "/connectors/dbz/offsets",
        "body": {"offsets": [{"partition": {"server_id": "app"}, "offset": json.loads(value)}]},
    }
    entries = decode_offsets_file(connect_file.read_bytes())
    assert entries[KEY] == value
    assert entries[debezium_key("other", "app")] == b'{"sec":1,"ord":1}'  # the other connector's offset is kept


def test_dry_runs_write_nothing_and_need_no_confirmation(
    tmp_path: Path, connect_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = connect_file.read_bytes()
    assert importing(tmp_path, connect_file, "--dry-run", "-o", "json") == ExitCode.OK
    assert json.loads(capsys.readouterr().out)[0]["action"] == "would import"
    assert not (tmp_path / "offsets.db").exists()  # a dry run does not even create the store
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit("app", "rs0", {"sec": 5, "ord": 1, "resume_token": TOKEN, "initsync": True, "snapshot": {}})
    store.close()
    assert exporting(tmp_path, connect_file, "--dry-run") == ExitCode.OK
    out, err = capsys.readouterr()
    assert "would export" in out and "again from the start" in err
    assert connect_file.read_bytes() == before


def test_export_creates_the_file_of_a_worker_that_never_ran(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit("app", "rs0", {"sec": 5, "ord": 1, "resume_token": TOKEN})
    store.close()
    path = tmp_path / "new.offsets"
    assert exporting(tmp_path, path, "--yes") == ExitCode.OK
    assert decode_offsets_file(path.read_bytes()) == {
        KEY: b'{"sec":5,"ord":1,"resume_token":"' + TOKEN.encode() + b'"}'
    }


def test_without_a_terminal_or_yes_nothing_is_written(tmp_path: Path, connect_file: Path) -> None:
    assert importing(tmp_path, connect_file) == ExitCode.USAGE
    assert stored(tmp_path) == {}


def test_what_to_adopt_must_be_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(tmp_path, "import", "--yes") == ExitCode.USAGE
    assert "--from-kafka-connect" in capsys.readouterr().err
    assert cli(tmp_path, "export", "--yes") == ExitCode.USAGE
    assert "--to-kafka-connect" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--connector-name", "nobody"], ExitCode.USAGE, "it holds offsets of 'dbz', 'other'"),
        (["--topic-prefix", "inventory"], ExitCode.CONFIG, "mongocdc's topic.prefix is 'inventory'"),
        (["--connect-offsets-topic", "t"], ExitCode.USAGE, "takes no topic"),
        (["--connect-kafka", "nonsense"], ExitCode.USAGE, "takes no topic"),
    ],
)
def test_bad_input_is_exit_2_or_3(
    tmp_path: Path, connect_file: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, says: str
) -> None:
    assert importing(tmp_path, connect_file, "--yes", *args) == code
    assert says in capsys.readouterr().err
    assert stored(tmp_path) == {}


def test_a_file_that_is_not_an_offsets_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "bogus"
    bogus.write_text("sec=1\n")
    assert importing(tmp_path, bogus, "--yes") == ExitCode.USAGE
    assert "not a Kafka Connect standalone offsets file" in capsys.readouterr().err
    assert importing(tmp_path, tmp_path / "missing", "--yes") == ExitCode.USAGE
    assert "there is no file" in capsys.readouterr().err


def test_a_value_that_is_not_an_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "connect.offsets"
    write_offsets_file(path, [(KEY, b'{"sec":1,"ord":1,"resume_token":"zz"}')])
    assert importing(tmp_path, path, "--yes") == ExitCode.USAGE
    assert "is neither Base64" in capsys.readouterr().err
    write_offsets_file(path, [(KEY, b"[1,2]")])
    assert importing(tmp_path, path, "--yes") == ExitCode.USAGE
    assert "is not a JSON object" in capsys.readouterr().err


def test_export_needs_one_stored_partition(
    tmp_path: Path, connect_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exporting(tmp_path, connect_file, "--yes") == ExitCode.CONFIG  # no store at all: it is not created
    assert f"the offset store {tmp_path / 'offsets.db'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "offsets.db").exists()
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.close()
    assert exporting(tmp_path, connect_file, "--yes") == ExitCode.USAGE
    assert "has no stored offsets" in capsys.readouterr().err
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit("app", "shard0", {"sec": 5, "ord": 1, "resume_token": TOKEN})
    store.commit("app", "shard1", {"sec": 6, "ord": 1, "resume_token": TOKEN})
    store.close()
    before = connect_file.read_bytes()
    assert exporting(tmp_path, connect_file, "--yes") == ExitCode.CONFIG
    assert "each shard's replica set" in capsys.readouterr().err
    assert connect_file.read_bytes() == before


def test_import_without_partition_needs_the_connection_string(
    tmp_path: Path, connect_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli(
        tmp_path,
        "import",
        "--from-kafka-connect",
        "--connect-offsets-file",
        str(connect_file),
        "--connector-name",
        "dbz",
        "--topic-prefix",
        "app",
        "--yes",
    )
    assert code == ExitCode.CONFIG
    assert "--partition" in capsys.readouterr().err


def test_export_says_which_other_offsets_of_the_connector_debezium_might_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "connect.offsets"
    write_offsets_file(
        path,
        [
            (debezium_key("dbz", "app", "rs0"), b'{"sec":1,"ord":1}'),
            (debezium_key("dbz", "inventory"), b'{"sec":2,"ord":1}'),
        ],
    )
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    store.commit("app", "rs0", {"sec": 5, "ord": 1, "resume_token": TOKEN})
    store.close()
    assert exporting(tmp_path, path, "--yes", "-o", "json") == ExitCode.OK
    notes = json.loads(capsys.readouterr().out)[0]["notes"]
    assert any("older offsets under" in n and '"rs":"rs0"' in n for n in notes)
    assert any("server_id 'inventory'" in n and "it reads that one" in n for n in notes)
    fresh = tmp_path / "fresh.offsets"
    assert exporting(tmp_path, fresh, "--yes") == ExitCode.OK
    assert "does not exist yet" in capsys.readouterr().err


def test_a_connect_kafka_option_librdkafka_does_not_know_is_a_warning_with_the_closest_property(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mongocdc.config import load_settings, loading
    from mongocdc.offsets.connect_locations import connect_location

    monkeypatch.setattr(loading, "_WARNED_CLIENT_KEYS", set())
    settings = load_settings(None, {}, {})
    with caplog.at_level(logging.WARNING):
        location = connect_location(settings, "k:9092", ["security.protocl=SSL", "linger.ms=5"], "t", None)
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1, said
    assert said[0].startswith("security.protocl (--connect-kafka) is not a librdkafka")
    assert "did you mean 'security.protocol'?" in said[0]
    assert location.client["security.protocl"] == "SSL"  # passed on: librdkafka decides
