"""``SqliteOffsetStore`` opened by a reader (``create=False``): a missing file is an empty store, never created
by reading; the first write creates it, and a file that appears later is read."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mongocdc.offsets.sqlite import SqliteOffsetStore


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
