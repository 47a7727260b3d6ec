"""The default offset store: one SQLite file in WAL mode with an atomic upsert per record.

A connector that runs on the store (``owner``: ``stream``, ``snapshot``) holds an exclusive lock of its own
(``fcntl.flock`` on ``<file>.<connector>.lock`` next to the database, holding its pid) for as long as it runs;
the operating system releases it when the process ends, however it ends. Several connectors share one file, each
with its own lock; a second instance of the same connector fails at start with ``FencedError`` (exit 7).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mongocdc.errors import ConfigError, FencedError
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


def lock_path(store: str | Path, connector: str) -> Path:
    """The lock file of ``connector`` on the store ``store``: ``<store>.<connector, %-quoted>.lock``."""
    path = Path(store)
    return path.with_name(f"{path.name}.{quote(connector, safe='')}.lock")


class ConnectorLock:
    """The exclusive lock of one connector on one store (``flock``: released by the OS when the process dies)."""

    def __init__(self, store: str | Path, connector: str) -> None:
        self.store = Path(store)
        self.connector = connector
        self.path = lock_path(store, connector)
        self._fd: int | None = None

    def acquire(self, *, doing: str = "start") -> None:
        """Take the lock and write this process's pid into it; ``FencedError`` (this one cannot ``doing``) when
        another process holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pid = _read_pid(fd)
            os.close(fd)
            raise self.running(pid, doing=doing) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def holder(self) -> int | None:
        """The pid of the process that holds the lock now (0 when it did not say), ``None`` when none does.

        Takes the lock for a moment to ask, and releases it at once."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:  # no lock file (or none can be there): nobody holds it
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return _read_pid(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def running(self, pid: int | None, *, doing: str = "start") -> FencedError:
        """The error that says the connector is running (in process ``pid``) and this one cannot ``doing``."""
        by = f"process {pid}" if pid else "another process"
        return FencedError(
            f"connector {self.connector!r} is already running: {by} holds its offsets in {self.store} "
            f"(lock {self.path}); this one cannot {doing}",
            hint="run one instance per connector: stop the other one first (or wait for it to end), or give this "
            "one another name (`name`) to run a second connector on the same store",
        )

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0)
    except (OSError, ValueError):
        return 0


class SqliteOffsetStore:
    """Offsets in ``offset.storage.file.filename``; safe against crashes at any point.

    With ``create=False`` (the commands that read or edit offsets) a missing file is an empty store
    that ``exists`` says is missing; it is created by the first write, as a Kafka store's topic is, and
    read once it appears (``snapshot --incremental --wait`` follows a connector that starts later).

    With ``owner`` (the connector that runs on it) the store takes that connector's lock first (the module
    docstring) and keeps it until ``close``.
    """

    def __init__(self, path: str | Path, *, create: bool = True, owner: str | None = None) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # one connection, shared by the tasks of several replica sets
        self._db: sqlite3.Connection | None = None
        self._owned: ConnectorLock | None = None
        if owner is not None and str(self.path) != ":memory:":
            where = "check offset.storage.file.filename (or --offsets sqlite:PATH) points at a writable file"
            self._make_directory(where)
            owned = ConnectorLock(self.path, owner)
            try:
                owned.acquire()
            except OSError as exc:
                raise ConfigError(f"cannot create the lock file {owned.path}: {exc}", hint=where) from exc
            self._owned = owned
        try:
            if create or self._on_disk():
                self._db = self._open()
        except BaseException:
            self.close()
            raise

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

    def running(self, connector: str) -> int | None:
        """The pid of the process running ``connector`` on this store (0: unknown), ``None`` when none runs."""
        if str(self.path) == ":memory:":
            return None
        return ConnectorLock(self.path, connector).holder()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        if self._owned is not None:
            self._owned.release()
            self._owned = None
