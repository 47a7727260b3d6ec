"""``SqliteOffsetStore`` opened by a reader (``create=False``): a missing file is an empty store, never created
by reading; the first write creates it, and a file that appears later is read."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mongocdc.errors import ExitCode, FencedError
from mongocdc.offsets.sqlite import SqliteOffsetStore, lock_path


def test_a_reader_of_a_missing_file_sees_an_empty_store_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state" / "offsets.db"
    store = SqliteOffsetStore(path, create=False)
    assert not store.exists
    assert store.records() == [] and store.load("app", "rs0") is None and store.delete("app") == 0
    store.close()
    assert not path.parent.exists()


def test_the_first_write_creates_the_store_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "state" / "offsets.db"
    store = SqliteOffsetStore(path, create=False)
    with caplog.at_level(logging.INFO, logger="mongocdc.offsets"):
        store.commit("app", "rs0", {"sec": 1, "ord": 2})
    assert store.exists and path.exists()
    assert [r.getMessage() for r in caplog.records] == [f"created the offset store {path}"]
    store.close()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mongocdc.offsets"):
        reopened = SqliteOffsetStore(path)  # an existing store is not "created"
    assert reopened.load("app", "rs0") == {"sec": 1, "ord": 2}
    reopened.close()
    assert caplog.records == []


def test_a_store_created_after_the_reader_opened_it_is_read(tmp_path: Path) -> None:
    """``snapshot --incremental --wait`` opens the store before the connector it waits for has made it."""
    path = tmp_path / "offsets.db"
    reader = SqliteOffsetStore(path, create=False)
    assert reader.records() == []
    writer = SqliteOffsetStore(path)
    writer.commit("app", "rs0", {"sec": 3, "ord": 1})
    writer.close()
    assert reader.exists
    assert [(r.connector, r.partition) for r in reader.records()] == [("app", "rs0")]
    reader.close()


def test_an_owner_holds_its_connectors_lock_until_it_closes(tmp_path: Path) -> None:
    path = tmp_path / "offsets.db"
    first = SqliteOffsetStore(path, owner="inventory")
    try:
        assert lock_path(path, "inventory").read_text().strip() == str(os.getpid())
        assert first.running("inventory") == os.getpid()
        with pytest.raises(FencedError) as fenced:
            SqliteOffsetStore(path, owner="inventory")
        assert fenced.value.exit_code == ExitCode.FENCED == 7
        assert fenced.value.message == (
            f"connector 'inventory' is already running: process {os.getpid()} holds its offsets in {path} "
            f"(lock {lock_path(path, 'inventory')}); this one cannot start"
        )
        assert fenced.value.hint is not None and "one instance per connector" in fenced.value.hint
        other = SqliteOffsetStore(path, owner="orders")  # another connector of the same file has a lock of its own
        other.close()
        reader = SqliteOffsetStore(path, create=False)  # a reader takes no lock
        assert reader.running("orders") is None
        reader.close()
    finally:
        first.close()
    assert SqliteOffsetStore(path, create=False).running("inventory") is None
    SqliteOffsetStore(path, owner="inventory").close()  # released: the next instance starts


def test_the_lock_of_a_process_killed_with_sigkill_is_released(tmp_path: Path) -> None:
    path = tmp_path / "offsets.db"
    code = (
        "import sys; from mongocdc.offsets.sqlite import SqliteOffsetStore; "
        f"SqliteOffsetStore({str(path)!r}, owner='a/b c'); print('locked', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        assert lock_path(path, "a/b c").name == "offsets.db.a%2Fb%20c.lock"  # a name is no path
        assert SqliteOffsetStore(path, create=False).running("a/b c") == holder.pid
        with pytest.raises(FencedError, match=f"process {holder.pid} holds"):
            SqliteOffsetStore(path, owner="a/b c")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    SqliteOffsetStore(path, owner="a/b c").close()


def test_a_store_in_memory_takes_no_lock(tmp_path: Path) -> None:
    first = SqliteOffsetStore(":memory:", owner="x")
    SqliteOffsetStore(":memory:", owner="x").close()
    first.close()
