"""``mongocdc offsets reset|set`` in process with a SQLite store: parsing, prompts, exit codes (no services)."""

from __future__ import annotations

import base64
import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bson
import pytest

from mongocdc.cli.commands_offsets import parse_epoch_seconds
from mongocdc.cli.main import run
from mongocdc.engine.source_offset import parse_resume_token
from mongocdc.errors import ExitCode, UsageError
from mongocdc.offsets.sqlite import SqliteOffsetStore

TOKEN = "8263A1B2C3000000012B022C0100296E5A1004"
TOKEN_SEC, TOKEN_ORD = 0x63A1B2C3, 1  # the cluster time TOKEN starts with (82, then seconds and increment)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "offsets.db"
    store = SqliteOffsetStore(path)
    store.commit("app", "rs0", {"sec": 1769860800, "ord": 3, "resume_token": _b64({"_data": "82AA"})})
    store.commit("app", "rs1", {"sec": 1769860900, "ord": 1, "resume_token": None, "initsync": True})
    store.commit("other", "rs0", {"sec": 5, "ord": 0, "resume_token": None})
    store.close()
    return path


def _b64(token: dict[str, Any]) -> str:
    return base64.b64encode(bson.encode(token)).decode("ascii")


def stored(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    store = SqliteOffsetStore(path)
    try:
        return {(r.connector, r.partition): dict(r.offset) for r in store.records()}
    finally:
        store.close()


def offsets_cli(path: Path, *args: str) -> int:
    return run(["offsets", *args, "--offsets", f"sqlite:{path}", "--name", "app"])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1769860800", 1769860800),
        ("2026-01-31T12:00:00Z", 1769860800),
        ("2026-01-31T13:00:00+01:00", 1769860800),
        ("2026-01-31T12:00:00", 1769860800),  # no offset: UTC
        ("2026-01-31T12:00:00.999Z", 1769860800),  # fractions dropped: never after the time asked for
        ("2026-01-31", 1769817600),
        ("1769860800s", 1769860800),
        ("1769860800999ms", 1769860800),  # milliseconds with their unit, fractions of a second dropped
    ],
)
def test_timestamps_are_iso_8601_or_epoch_seconds(text: str, seconds: int) -> None:
    assert parse_epoch_seconds(text, now=NOW) == seconds


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("yesterday", "--to-timestamp 'yesterday' is not a time"),
        ("", "is not a time"),
        ("1769860800 ms", "is not a time"),
        ("1769860800000", "out of range"),  # milliseconds
        ("0", "out of range"),
        ("2026-07-01T00:00:00Z", "in the future"),
    ],
)
def test_bad_timestamps_are_usage_errors(text: str, says: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_epoch_seconds(text, now=NOW)
    assert says in caught.value.message and caught.value.hint


def test_resume_tokens_are_data_strings_or_extended_json() -> None:
    assert parse_resume_token(TOKEN) == {"_data": TOKEN}
    assert parse_resume_token(TOKEN.lower()) == {"_data": TOKEN}  # as MongoDB writes them
    assert parse_resume_token(f' {{"_data": "{TOKEN}"}} ') == {"_data": TOKEN}
    binary = parse_resume_token('{"_data": {"$binary": {"base64": "gmM=", "subType": "00"}}}')
    assert bytes(binary["_data"]) == b"\x82c"
    # the stored form, as `offsets show --output json` prints it: moving offsets between stores
    assert parse_resume_token(_b64({"_data": TOKEN})) == {"_data": TOKEN}


@pytest.mark.parametrize(
    "text",
    [
        *("", "xyz", "ABC", "{", '{"token": "82AA"}', '{"_data": "8"}', '{"_data": 5}', "[1]", _b64({"token": "82AA"})),
        # hex, but not a change stream token: its `_data` does not start with a cluster time (82)
        *("deadbeef", '{"_data": "DEADBEEF"}', _b64({"_data": "DEADBEEF"})),
        '{"_data": {"$binary": {"base64": "3q0=", "subType": "00"}}}',
    ],
)
def test_bad_resume_tokens_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_resume_token(text)
    assert caught.value.hint and "hex starting with 82 (its cluster time)" in caught.value.hint


def test_set_refuses_what_is_not_a_resume_token_with_exit_2(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = stored(db)
    assert offsets_cli(db, "set", "--resume-token", "deadbeef", "-p", "rs1", "--yes") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "error: --resume-token: `_data` DEADBEEF is not a MongoDB change stream resume token" in err
    assert "hint: a resume token's `_data` is hex starting with 82 (its cluster time)" in err
    assert stored(db) == before


# --- the commands ----------------------------------------------------------------------------


def test_reset_deletes_every_partition_of_the_connector(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert offsets_cli(db, "reset", "--yes", "--output", "json") == ExitCode.OK
    done = json.loads(capsys.readouterr().out)
    assert [(c["partition"], c["action"], c["after"]) for c in done] == [
        ("rs0", "deleted", None),
        ("rs1", "deleted", None),
    ]
    assert done[0]["before"]["sec"] == 1769860800 and done[0]["connector"] == "app"
    assert list(stored(db)) == [("other", "rs0")]


def test_reset_one_partition_and_a_missing_one(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert offsets_cli(db, "reset", "--partition", "rs1", "--yes") == ExitCode.OK
    out = capsys.readouterr().out
    assert "rs1" in out and "deleted" in out
    assert set(stored(db)) == {("app", "rs0"), ("other", "rs0")}
    assert offsets_cli(db, "reset", "--partition", "rs9", "--yes") == ExitCode.OK
    assert "nothing to change" in capsys.readouterr().err


def test_reset_to_a_timestamp_moves_every_partition(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert offsets_cli(db, "reset", "--to-timestamp", "2026-01-01T00:00:00Z", "--yes", "-o", "json") == 0
    done = json.loads(capsys.readouterr().out)
    assert [c["action"] for c in done] == ["moved", "moved"]
    after = {"sec": 1767225600, "ord": 0, "resume_token": None}
    assert stored(db)[("app", "rs0")] == after and stored(db)[("app", "rs1")] == after
    assert stored(db)[("other", "rs0")]["sec"] == 5


def test_reset_to_a_timestamp_can_create_a_partition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.db"
    assert offsets_cli(empty, "reset", "--to-timestamp", "1700000000", "--yes") == ExitCode.USAGE
    assert "--partition" in capsys.readouterr().err
    assert offsets_cli(empty, "reset", "--to-timestamp", "1700000000", "-p", "rs0", "--yes") == ExitCode.OK
    assert stored(empty) == {("app", "rs0"): {"sec": 1700000000, "ord": 0, "resume_token": None}}


def test_set_takes_sec_and_ord_from_the_token_and_stores_its_document(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert offsets_cli(db, "set", "--resume-token", TOKEN, "-p", "rs1", "--yes", "-o", "json") == ExitCode.OK
    (done,) = json.loads(capsys.readouterr().out)
    assert done["action"] == "set" and done["before"]["initsync"] is True
    expected = {"sec": TOKEN_SEC, "ord": TOKEN_ORD, "resume_token": _b64({"_data": TOKEN})}  # Debezium's form
    assert stored(db)[("app", "rs1")] == expected
    assert done["after"] == {**expected, "resume_token": TOKEN}  # shown as the `_data` hex string
    # a token too short to hold a whole cluster time keeps the stored sec and ord
    assert offsets_cli(db, "set", "--resume-token", TOKEN[:10], "-p", "rs0", "--yes") == ExitCode.OK
    assert stored(db)[("app", "rs0")] == {"sec": 1769860800, "ord": 3, "resume_token": _b64({"_data": TOKEN[:10]})}


def test_set_needs_a_partition_when_several_or_none_are_stored(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert offsets_cli(db, "set", "--resume-token", TOKEN, "--yes") == ExitCode.USAGE
    assert "rs0, rs1" in capsys.readouterr().err
    empty = tmp_path / "empty.db"
    assert offsets_cli(empty, "set", "--resume-token", TOKEN, "--yes") == ExitCode.USAGE
    assert offsets_cli(empty, "set", "--resume-token", TOKEN, "-p", "cluster", "--yes") == ExitCode.OK
    assert stored(empty)[("app", "cluster")] == {
        "sec": TOKEN_SEC,
        "ord": TOKEN_ORD,
        "resume_token": _b64({"_data": TOKEN}),
    }


def test_set_with_a_single_stored_partition_needs_no_partition(db: Path) -> None:
    assert run(["offsets", "set", "--resume-token", TOKEN, "--offsets", f"sqlite:{db}", "--name", "other", "-y"]) == 0
    assert stored(db)[("other", "rs0")]["resume_token"] == _b64({"_data": TOKEN})


@pytest.mark.parametrize(
    "argv",
    [["reset"], ["reset", "--to-timestamp", "2026-01-01T00:00:00Z"], ["set", "--resume-token", TOKEN, "-p", "rs0"]],
)
def test_without_yes_and_no_terminal_nothing_changes_and_exit_is_2(
    db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = stored(db)
    assert offsets_cli(db, *argv) == ExitCode.USAGE
    assert "--yes" in capsys.readouterr().err
    assert stored(db) == before


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["reset", "--to-timestamp", "soon", "--yes"], ExitCode.USAGE),
        (["set", "--resume-token", "not-a-token", "--yes"], ExitCode.USAGE),
    ],
)
def test_bad_timestamp_and_bad_token_exit_2(
    db: Path, argv: list[str], code: ExitCode, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stored(db)
    assert offsets_cli(db, *argv) == code
    assert capsys.readouterr().err.startswith("error: --")
    assert stored(db) == before


def test_the_prompt_shows_before_and_after_and_applies_on_yes(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert offsets_cli(db, "reset", "--to-timestamp", "1767225600", "-p", "rs0") == ExitCode.OK
    err = capsys.readouterr().err
    assert "offsets of connector 'app' in sqlite:" in err
    assert "rs0: sec=1769860800 (2026-01-31T12:00:00Z) ord=3 token=82AA" in err
    assert "→ sec=1767225600 (2026-01-01T00:00:00Z) ord=0 token=none" in err
    assert "apply this change?" in err
    assert stored(db)[("app", "rs0")]["sec"] == 1767225600


def test_declining_the_prompt_changes_nothing(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stored(db)
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    assert offsets_cli(db, "reset") == ExitCode.INTERRUPTED
    assert "aborted" in capsys.readouterr().err
    assert stored(db) == before


def test_an_offsets_file_of_another_program_exits_3_and_stays_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as theirs:
        theirs.execute("CREATE TABLE offsets (topic TEXT, position INTEGER)")
        theirs.execute("INSERT INTO offsets VALUES ('t', 1)")
    theirs.close()
    for argv in (["show", "--all"], ["reset", "--yes"]):
        assert run(["offsets", *argv, "--offsets", f"sqlite:{path}"]) == ExitCode.CONFIG
        err = capsys.readouterr().err
        assert f"error: {path} is not a mongocdc offset store: it has a table `offsets` of other columns" in err
        assert "(topic, position; mongocdc's are connector, partition, offset, updated_at)" in err
        assert "hint: point offset.storage.file.filename (or --offsets sqlite:PATH) at a file of its own" in err
    with sqlite3.connect(path) as theirs:
        assert theirs.execute("SELECT * FROM offsets").fetchall() == [("t", 1)]
    theirs.close()


def test_an_offsets_path_under_a_regular_file_exits_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state").write_text("not a directory")
    path = tmp_path / "state" / "sub" / "offsets.db"
    assert run(["offsets", "show", "--all", "--offsets", f"sqlite:{path}"]) == ExitCode.CONFIG  # reading: not there
    assert f"error: the offset store {path} does not exist" in capsys.readouterr().err
    moved = ["offsets", "reset", "--to-timestamp", "1700000000", "-p", "rs0", "--yes"]
    assert run([*moved, "--offsets", f"sqlite:{path}"]) == ExitCode.CONFIG  # writing: it cannot be created
    err = capsys.readouterr().err
    assert f"error: cannot create the offset store {path}: {tmp_path / 'state'} is a file, not a directory" in err
    assert "File exists" not in err and "hint: check offset.storage.file.filename" in err


# --- how tokens are shown ---------------------------------------------------------------------

LONG_TOKEN = TOKEN + "0A" * 60  # real tokens (with a document key) run past 100 hex digits


def test_tables_and_json_show_the_whole_resume_token_as_its_data_hex_string(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whole, as MongoDB and Debezium's logs show it: the stored Base64 of BSON is for the store only."""
    from tests.unit.cli.helpers import mongocdc

    assert offsets_cli(db, "set", "--resume-token", LONG_TOKEN, "-p", "rs0", "--yes") == ExitCode.OK
    table = capsys.readouterr().out
    assert table.count(LONG_TOKEN) == 1 and "…" not in table  # the after column; the table never shortens it
    assert stored(db)[("app", "rs0")]["resume_token"] == _b64({"_data": LONG_TOKEN})  # stored as Debezium does
    store = ["--offsets", f"sqlite:{db}", "--name", "app"]
    shown = mongocdc("offsets", "show", *store, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    (row,) = [line for line in shown.stdout.splitlines() if "rs0" in line]
    assert LONG_TOKEN in row and "…" not in shown.stdout
    as_json = mongocdc("offsets", "show", *store, "-o", "json", cwd=tmp_path)
    assert [r["resume_token"] for r in json.loads(as_json.stdout)] == [LONG_TOKEN, None]
    # what `offsets show` prints is what `offsets set` takes: a position moves between stores as it is shown
    other = tmp_path / "other.db"
    moved = mongocdc(
        "offsets",
        "set",
        "--resume-token",
        LONG_TOKEN,
        "-p",
        "rs0",
        "--offsets",
        f"sqlite:{other}",
        "--name",
        "app",
        "--yes",
        "-o",
        "json",
        cwd=tmp_path,
    )
    assert moved.returncode == 0, moved.stderr
    (change,) = json.loads(moved.stdout)
    assert change["before"] is None and change["after"]["resume_token"] == LONG_TOKEN
    assert stored(other)[("app", "rs0")] == stored(db)[("app", "rs0")]


def test_reset_shows_the_deleted_token_as_hex_and_an_unreadable_one_as_stored(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SqliteOffsetStore(db)
    store.commit("app", "rs1", {"sec": 1, "ord": 0, "resume_token": "not base64 of BSON"})
    store.close()
    assert offsets_cli(db, "reset", "--yes", "-o", "json") == ExitCode.OK
    done = {c["partition"]: c["before"]["resume_token"] for c in json.loads(capsys.readouterr().out)}
    assert done == {"rs0": "82AA", "rs1": "not base64 of BSON"}


def test_a_token_with_type_bits_is_shown_whole_as_extended_json_and_taken_back(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`_data` alone would drop `_typeBits` (a document key with doubles): such a token is shown as its document."""
    from bson.binary import Binary

    token = {"_data": TOKEN, "_typeBits": Binary(b"@")}
    store = SqliteOffsetStore(db)
    store.commit("app", "rs0", {"sec": 1, "ord": 1, "resume_token": _b64(token)})
    store.close()
    assert offsets_cli(db, "show", "-o", "json") == ExitCode.OK
    shown = json.loads(capsys.readouterr().out)[0]["resume_token"]
    assert json.loads(shown) == {"_data": TOKEN, "_typeBits": {"$binary": {"base64": "QA==", "subType": "00"}}}
    assert offsets_cli(db, "set", "--resume-token", shown, "-p", "rs1", "--yes") == ExitCode.OK
    assert stored(db)[("app", "rs1")]["resume_token"] == _b64(token)


def test_reading_or_deleting_offsets_never_creates_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A store looked for where there is none (another directory, a typo) is said, with the path looked at."""
    missing = tmp_path / "elsewhere" / "offsets.db"
    for args in (["show"], ["show", "--all"], ["reset", "--yes"], ["reset", "-p", "rs0", "--yes"]):
        assert offsets_cli(missing, *args) == ExitCode.CONFIG, args
        err = capsys.readouterr().err
        assert f"error: the offset store {missing} does not exist" in err, args
        assert "hint: check offset.storage.file.filename (or --offsets sqlite:PATH)" in err
        assert "relative to the file's directory" in err
    assert not missing.parent.exists()


def test_the_offsets_of_a_running_connector_are_not_changed_exit_7(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stored(db)
    running = SqliteOffsetStore(db, owner="app")  # as `mongocdc stream` holds it
    try:
        assert offsets_cli(db, "reset", "--yes") == ExitCode.FENCED
        assert offsets_cli(db, "set", "--resume-token", TOKEN, "-p", "rs0", "--yes") == ExitCode.FENCED
        assert offsets_cli(db, "reset", "--to-timestamp", "1700000000", "--yes") == ExitCode.FENCED
        err = capsys.readouterr().err
        assert f"error: connector 'app' is already running: process {os.getpid()} holds its offsets in {db}" in err
        assert "this one cannot change its offsets" in err
        assert stored(db) == before
        assert offsets_cli(db, "show") == ExitCode.OK  # reading takes no lock
        # another connector of the same store is not running
        assert run(["offsets", "reset", "--offsets", f"sqlite:{db}", "--name", "other", "--yes"]) == ExitCode.OK
    finally:
        running.close()
    assert offsets_cli(db, "reset", "--yes") == ExitCode.OK  # stopped: it can be changed
