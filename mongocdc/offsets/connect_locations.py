"""Where a Kafka Connect cluster keeps source offsets, read and written: ``offsets import`` and ``export``.

A :class:`ConnectLocation` is the offsets topic of a Connect cluster (with the librdkafka settings of a
client of that cluster) or a standalone worker's offsets file. :func:`read_connect_offsets` gives every
live offset stored there, :func:`write_connect_offset` writes one as a worker would: the bytes are
:mod:`mongocdc.offsets.connect`'s, the topic's reads and writes :mod:`mongocdc.offsets.connect_topic`'s
(imported only for a topic, so a file is read without loading the Kafka client). A location that is not
there, or holds no Connect offsets, is a ``UsageError`` (exit 2) saying which option names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mongocdc.errors import UsageError
from mongocdc.offsets.connect import (
    DEFAULT_TOPIC,
    ConnectOffset,
    OffsetsFileError,
    live_offsets,
    read_offsets_file,
    write_offsets_file,
)

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.offsets.connect_topic import ConnectOffsetsTopic


@dataclass(frozen=True, slots=True)
class ConnectLocation:
    """Where a Connect cluster keeps source offsets: a topic (with its client settings) or a standalone file."""

    client: dict[str, Any]
    topic: str
    file: Path | None
    timeout_s: float

    def describe(self) -> str:
        if self.file is not None:
            return f"file {self.file}"
        return f"topic {self.topic} on {self.client.get('bootstrap.servers')}"


def connect_location(
    settings: Settings,
    bootstrap_servers: str | None,
    options: Sequence[str] | None,
    topic: str | None,
    file: Path | None,
    *,
    timeout_s: float = 30.0,
) -> ConnectLocation:
    """The Connect offsets the operator named: ``--connect-offsets-file``, or the topic (``--connect-offsets-topic``,
    default ``connect-offsets``) on the cluster of ``--connect-bootstrap-servers`` (default: the configuration's),
    its client the configuration's ``kafka.*`` settings with the ``--connect-kafka KEY=VALUE`` ``options`` over them.
    ``timeout_s`` bounds each request to that cluster."""
    from mongocdc.config import check_librdkafka_key

    if file is not None and (topic is not None or bootstrap_servers is not None or options):
        raise UsageError(
            "--connect-offsets-file names a standalone worker's file: it takes no topic or Kafka client options",
            hint="give either --connect-offsets-file or --connect-offsets-topic (with its cluster), not both",
        )
    client: dict[str, Any] = dict(settings.kafka_client)
    if bootstrap_servers is not None:
        client["bootstrap.servers"] = bootstrap_servers
    for option in options or ():
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--connect-kafka {option!r} is not KEY=VALUE",
                hint="for example --connect-kafka security.protocol=SASL_SSL (a librdkafka property)",
            )
        check_librdkafka_key("", key.strip(), "--connect-kafka")
        client[key.strip()] = value
    return ConnectLocation(client, topic or DEFAULT_TOPIC, file, timeout_s)


def read_connect_offsets(location: ConnectLocation, *, missing_file_ok: bool = False) -> list[ConnectOffset]:
    """Every live offset stored at ``location`` (``UsageError`` when there is no such topic or file; a
    missing file holds nothing with ``missing_file_ok``, as for a standalone worker that never ran)."""
    if location.file is not None:
        try:
            return live_offsets(read_offsets_file(location.file))
        except FileNotFoundError:
            if missing_file_ok and location.file.parent.is_dir():
                return []
            raise UsageError(
                f"there is no file {location.file}: no Kafka Connect offsets there",
                hint="pass the standalone worker's offset.storage.file.filename (see its worker properties)",
            ) from None
        except OffsetsFileError as exc:
            raise UsageError(
                f"{location.file} is not a Kafka Connect standalone offsets file: {exc}",
                hint="pass the standalone worker's offset.storage.file.filename (a Java-serialised map); "
                "distributed workers keep offsets in a topic (--connect-offsets-topic)",
            ) from None
        except OSError as exc:
            raise UsageError(f"cannot read {location.file}: {exc}") from None
    topic = _offsets_topic(location)
    try:
        return live_offsets(topic.read())
    finally:
        topic.close()


def write_connect_offset(location: ConnectLocation, key: bytes, value: bytes, *, dry_run: bool) -> str:
    """Write one offset record at ``location``; returns where it went (or would go, with ``dry_run``)."""
    if location.file is not None:
        if not dry_run:
            try:
                write_offsets_file(location.file, [(key, value)])
            except OSError as exc:
                raise UsageError(f"cannot write {location.file}: {exc}") from None
        return str(location.file)
    topic = _offsets_topic(location)
    try:
        if dry_run:
            return f"{location.topic}[{topic.partition_for(key)}]"
        return topic.write([(key, value)])[0]
    finally:
        topic.close()


def _offsets_topic(location: ConnectLocation) -> ConnectOffsetsTopic:
    from mongocdc.offsets.connect_topic import ConnectOffsetsTopic

    return ConnectOffsetsTopic(location.client, location.topic, timeout_s=location.timeout_s)


def export_notes(
    location: ConnectLocation, found: Sequence[ConnectOffset], connector: str, key: bytes, prefix: str
) -> list[str]:
    """What to know before writing ``connector``'s offset under ``key`` (for ``topic.prefix`` ``prefix``) at
    ``location``, given the offsets ``found`` there: a file not there yet, and the connector's other offsets
    (older keys of the same server, which Debezium ignores now, or offsets of another ``topic.prefix``)."""
    notes: list[str] = []
    if location.file is not None and not location.file.exists():
        notes.append(f"{location.file} does not exist yet: it is created, and the worker reads it when it starts")
    others = [o for o in found if o.connector == connector and o.key != key]
    older = [o for o in others if o.partition.get("server_id") == prefix]
    if older:
        keys = ", ".join(o.key.decode(errors="replace") for o in older)
        notes.append(f"connector {connector!r} also has older offsets under {keys}: Debezium ignores them now")
    for servers in sorted({str(o.partition.get("server_id")) for o in others} - {prefix}):
        notes.append(
            f"connector {connector!r} also has an offset for server_id {servers!r}: if its topic.prefix is "
            f"{servers!r}, it reads that one and not this one (written for topic.prefix {prefix!r})"
        )
    return notes
