"""A stopped connector's stored offsets changed by an operator (the ``offsets`` commands).

Where the settings' store is (:func:`store_location`) and the error when it is not there
(:func:`missing_store`: the commands that read or edit offsets never create a store); the check that the
connector does not run on a SQLite store (:func:`refuse_running`: it would overwrite the change at its
next commit); and the change written under the connector's lock (:func:`write_offsets`), so that it
cannot start meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mongocdc.errors import ConfigError
from mongocdc.offsets.base import OffsetStore
from mongocdc.offsets.sqlite import ConnectorLock, SqliteOffsetStore

if TYPE_CHECKING:
    from mongocdc.config import Settings


def store_location(settings: Settings) -> str:
    """The offset store the settings name, in the form ``--offsets`` takes (the Kafka one with its cluster)."""
    if settings.offset_storage == "kafka":
        return f"kafka:{settings.offset_storage_topic} on {settings.kafka_client.get('bootstrap.servers')}"
    return f"{settings.offset_storage}:{settings.offset_storage_file_filename}"


def missing_store(settings: Settings) -> ConfigError:
    """The offset store the settings name does not exist: where it was looked for, and what to check.

    The commands that read or edit offsets never create a store (a write creates it, as ``stream`` does):
    a store looked for in the wrong place is said, not answered with an empty one.
    """
    if settings.offset_storage == "kafka":
        servers = settings.kafka_client.get("bootstrap.servers")
        return ConfigError(
            f"the offset store kafka:{settings.offset_storage_topic} on {servers} does not exist (no such topic): "
            "no connector has committed offsets there",
            hint="check offset.storage.topic (or --offsets kafka:TOPIC) and kafka.bootstrap.servers; "
            "`mongocdc stream` creates the topic at its first commit",
        )
    path = Path(settings.offset_storage_file_filename).absolute()
    return ConfigError(
        f"the offset store {path} does not exist: no connector has committed offsets there",
        hint="check offset.storage.file.filename (or --offsets sqlite:PATH): a relative path in a config file is "
        "relative to the file's directory; on the command line or in MONGOCDC_OFFSET_STORAGE_FILE_FILENAME, to the "
        f"working directory ({Path.cwd()}); `mongocdc stream` creates the store at its first commit",
    )


def refuse_running(store: OffsetStore, connector: str) -> None:
    """``FencedError`` (exit 7) when ``connector`` runs on the (SQLite) store now. A Kafka store cannot tell
    without fencing a running instance: that is not checked."""
    if isinstance(store, SqliteOffsetStore):
        pid = store.running(connector)
        if pid is not None:
            raise ConnectorLock(store.path, connector).running(pid, doing="change its offsets")


def write_offsets(store: OffsetStore, connector: str, writes: Iterable[tuple[str, Mapping[str, Any] | None]]) -> None:
    """Write each ``(partition, record)`` (``None``: delete the partition's offset); on a SQLite store under the
    connector's lock, so the connector cannot start meanwhile."""
    held: ConnectorLock | None = None
    if isinstance(store, SqliteOffsetStore) and str(store.path) != ":memory:" and store.path.parent.is_dir():
        held = ConnectorLock(store.path, connector)
        try:
            held.acquire(doing="change its offsets")
        except OSError:  # no lock file can be made there: the store's own write says why, if it fails
            held = None
    try:
        for partition, record in writes:
            if record is None:
                store.delete(connector, partition)
            else:
                store.commit(connector, partition, record)
    finally:
        if held is not None:
            held.release()
