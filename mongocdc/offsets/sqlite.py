"""The default offset store: one SQLite file in WAL mode with an atomic upsert per record."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mongocdc.errors import ConfigError
from mongocdc.offsets.base import OffsetRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS offsets (
    connector  TEXT NOT NULL,
    partition  TEXT NOT NULL,
    offset     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (connector, partition)
)
"""
_COLUMNS = ("connector", "partition", "offset", "updated_at")

log = logging.getLogger("mongocdc.offsets")


class SqliteOffsetStore:
    """Offsets in ``offset.storage.file.filename``; safe against crashes at any point.

    With ``create=False`` (the commands that read or edit offsets) a missing file is an empty store
    that ``exists`` says is missing; it is created by the first write, as a Kafka store's topic is, and
    read once it appears (``snapshot --incremental --wait`` follows a connector that starts later).
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # one connection, shared by the tasks of several replica sets
        self._db: sqlite3.Connection | None = None
        if create or self._on_disk():
            self._db = self._open()

    @property
    def exists(self) -> bool:
        """Whether the store's file exists (it always does once opened)."""
        return self._db is not None or self._on_disk()

    def _on_disk(self) -> bool:
        return str(self.path) == ":memory:" or self.path.exists()

    def _open(self) -> sqlite3.Connection:
        where = "check offset.storage.file.filename (or --offsets sqlite:PATH) points at a writable file"
        new = not self._on_disk()
        try:
            if str(self.path) != ":memory:":
                self._make_directory(where)
            db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute(_SCHEMA)
            columns = [row[1] for row in db.execute("PRAGMA table_info(offsets)")]
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the offset store {self.path}: {exc}", hint=where) from exc
        if not set(_COLUMNS) <= set(columns):
            db.close()
            raise ConfigError(
                f"{self.path} is not a mongocdc offset store: it has a table `offsets` of other columns "
                f"({', '.join(columns)}; mongocdc's are {', '.join(_COLUMNS)})",
                hint="point offset.storage.file.filename (or --offsets sqlite:PATH) at a file of its own; "
                "this one was left unchanged",
            )
        if new and str(self.path) != ":memory:":
            log.info("created the offset store %s", self.path.absolute())
        return db

    def _reader(self) -> sqlite3.Connection | None:
        """The connection, opened when the file appeared since; ``None`` while there is no file."""
        if self._db is None and self._on_disk():
            self._db = self._open()
        return self._db

    def _writer(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _make_directory(self, where: str) -> None:
        """Create the store's directory; a regular file in the way is named (not "File exists")."""
        for parent in reversed(self.path.parents):
            if parent.exists() and not parent.is_dir():
                raise ConfigError(
                    f"cannot create the offset store {self.path}: {parent} is a file, not a directory", hint=where
                )
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        with self._lock:
            db = self._reader()
            if db is None:
                return None
            row = db.execute(
                "SELECT offset FROM offsets WHERE connector = ? AND partition = ?", (connector, partition)
            ).fetchone()
        if row is None:
            return None
        value: dict[str, Any] = json.loads(row[0])
        return value

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self._lock:
            self._writer().execute(
                "INSERT INTO offsets (connector, partition, offset, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (connector, partition) DO UPDATE SET offset = excluded.offset, "
                "updated_at = excluded.updated_at",
                (connector, partition, json.dumps(dict(offset), sort_keys=True), now),
            )

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        query = "SELECT connector, partition, offset, updated_at FROM offsets"
        params: tuple[str, ...] = ()
        if connector is not None:
            query += " WHERE connector = ?"
            params = (connector,)
        query += " ORDER BY connector, partition"
        with self._lock:
            db = self._reader()
            rows = [] if db is None else db.execute(query, params).fetchall()
        return [OffsetRecord(c, p, json.loads(o), datetime.fromisoformat(u)) for c, p, o, u in rows]

    def delete(self, connector: str, partition: str | None = None) -> int:
        with self._lock:
            db = self._reader()
            if db is None:
                return 0
            if partition is None:
                cur = db.execute("DELETE FROM offsets WHERE connector = ?", (connector,))
            else:
                cur = db.execute("DELETE FROM offsets WHERE connector = ? AND partition = ?", (connector, partition))
            return cur.rowcount

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
