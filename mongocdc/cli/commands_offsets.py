"""``mongocdc offsets show|reset|set|import|export``."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from mongocdc.cli import render
from mongocdc.cli.options import OFFSETS, OutputOpt, examples, one_shot, settings_flags
from mongocdc.cli.state import Output, state
from mongocdc.cli.times import parse_time_ms, time_help
from mongocdc.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.engine.source_offset import SourceOffset
    from mongocdc.offsets.base import OffsetStore
    from mongocdc.offsets.connect import ConnectOffset

PartitionOpt = Annotated[
    str | None,
    typer.Option(
        "--partition",
        "-p",
        help="Source partition to reset: a replica set name, or `cluster` when streaming through mongos "
        "(default: every stored partition of the connector).",
        show_default=False,
    ),
]
SetPartitionOpt = Annotated[
    str | None,
    typer.Option(
        "--partition",
        "-p",
        help="Source partition the token belongs to: a replica set name, or `cluster` when streaming through "
        "mongos (required when the connector has offsets for several partitions).",
        show_default=False,
    ),
]
YesOpt = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Apply without the confirmation prompt (required when stdin is not a terminal)."),
]

ConnectBootstrapOpt = Annotated[
    str | None,
    typer.Option(
        "--connect-bootstrap-servers",
        help="Kafka cluster holding the Connect workers' offsets topic (default: kafka.bootstrap.servers).",
        show_default=False,
    ),
]
ConnectKafkaOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--connect-kafka",
        metavar="KEY=VALUE",
        help="A librdkafka property for the client of that cluster, e.g. security.protocol=SASL_SSL "
        "(repeatable; the configuration's kafka.* settings apply unless overridden).",
        show_default=False,
    ),
]
ConnectTopicOpt = Annotated[
    str | None,
    typer.Option(
        "--connect-offsets-topic",
        help="The Connect workers' offset.storage.topic, or the connector's own offsets.storage.topic "
        "(default: connect-offsets).",
        show_default=False,
    ),
]
ConnectFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--connect-offsets-file",
        help="A standalone worker's offset.storage.file.filename instead of a topic (stop the worker first).",
        show_default=False,
    ),
]
ConnectorNameOpt = Annotated[
    str | None,
    typer.Option(
        "--connector-name",
        help="The Debezium connector's name in Kafka Connect (default: name).",
        show_default=False,
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show what would be written, with the notes, and write nothing.")
]

_MAX_TIMESTAMP_SECONDS = 2**32 - 1  # a BSON Timestamp's seconds are 32 bits
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")


def read_offset(record: Mapping[str, Any]) -> SourceOffset | str:
    """A stored record read through ``SourceOffset``, or why it cannot be read.

    Debezium's records read the same way: their position fields (``sec``, ``ord``, ``resume_token``,
    ``initsync``) are the ones mongocdc's records share with them, and the rest is not looked at.
    """
    from mongocdc.engine.source_offset import SourceOffset

    try:
        return SourceOffset.from_record(record)
    except ValueError as exc:
        return str(exc)


def shown_record(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored offset record as the operator sees it: its fields as stored, but the resume token as its
    `_data` hex string (what MongoDB shows in a change event's `_id` and Debezium logs), not the stored
    Base64 of its BSON. The store keeps its own form; a token that does not read is shown as stored."""
    from mongocdc.engine.source_offset import RESUME_TOKEN, decode_token
    from mongocdc.events.position import Position

    if record is None:
        return None
    shown = dict(record)
    stored = shown.get(RESUME_TOKEN)
    if isinstance(stored, str) and stored:
        # not Base64 of BSON (Debezium 1.x wrote the hex `_data` itself): shown as it is
        with contextlib.suppress(ValueError):
            shown[RESUME_TOKEN] = Position(0, 0, decode_token(stored)).describe_token()
    return shown


# --- parsing what the operator typed (a bad value is a usage error: exit 2) ---------


def parse_epoch_seconds(value: str, now: datetime | None = None) -> int:
    """Epoch seconds of ``--to-timestamp`` (``times.parse_time_ms``: ISO 8601, ``…s``, ``…ms``, a bare number
    of seconds); a ``UsageError`` (exit 2) when it is no time, out of a cluster time's range or in the future.

    Fractions of a second are dropped, so the position is never after the time asked for.
    """
    seconds = parse_time_ms(value, "--to-timestamp", bare="s") // 1000
    current = int((now or datetime.now(UTC)).timestamp())
    if seconds < 1 or seconds > _MAX_TIMESTAMP_SECONDS:
        raise UsageError(
            f"--to-timestamp {value!r} is out of range (epoch seconds from 1 to {_MAX_TIMESTAMP_SECONDS})",
            hint="a bare number is epoch seconds: give milliseconds with their unit (1795687200000ms), "
            "or ISO 8601 (2026-11-26T10:00:00Z)",
        )
    if seconds > current:
        raise UsageError(
            f"--to-timestamp {value!r} ({_iso(seconds)}) is in the future: every change until then would be skipped",
            hint="give a past time: ISO 8601 (2026-11-26T10:00:00Z), 1795687200s or 1795687200000ms",
        )
    return seconds


def parse_resume_token(text: str) -> dict[str, Any]:
    """The token document of ``--resume-token``.

    Accepted: the ``_data`` hex string MongoDB shows (and ``offsets show`` prints), the document as
    extended JSON, or the stored form (Base64 of the BSON document, as Debezium stores it and Kafka
    Connect's ``GET /connectors/<name>/offsets`` shows it).
    A string of hex digits is always taken as ``_data``. Every form is checked to be a change stream
    token: its ``_data`` starts with the cluster time (byte 0x82, a KeyString timestamp, as MongoDB and
    Debezium write it); anything else is a ``UsageError`` (exit 2) saying what a token looks like.
    """
    import bson
    from bson import json_util
    from bson.binary import Binary

    from mongocdc.engine.source_offset import decode_token

    hint = (
        "a resume token's `_data` is hex starting with 82 (its cluster time), e.g. 8263A1B2C3000000012B…; "
        "pass the `_data` string of a change event's `_id` (hex digits, as mongosh shows it), the whole token "
        'as extended JSON, e.g. \'{"_data": "8263…"}\', or the stored Base64 form Kafka Connect shows for Debezium'
    )
    stripped = text.strip()
    if not stripped.startswith("{"):
        if _HEX.fullmatch(stripped):
            return _checked_token({"_data": stripped.upper()}, hint)
        try:
            stored = bson.decode(decode_token(stripped))
        except ValueError:
            stored = None
        if not stored or "_data" not in stored:
            raise UsageError(
                f"--resume-token {text!r} is neither a hex `_data` string, a JSON document nor a stored token",
                hint=hint,
            )
        return _checked_token(stored, hint)
    try:
        document = json_util.loads(stripped)
    except Exception as exc:  # json_util raises ValueError, TypeError or bson errors for bad input
        raise UsageError(f"--resume-token is not valid extended JSON: {exc}", hint=hint) from None
    if not isinstance(document, dict) or "_data" not in document:
        raise UsageError("--resume-token must be a document with a `_data` field", hint=hint)
    data = document["_data"]
    if isinstance(data, str):
        if not _HEX.fullmatch(data):
            raise UsageError(f"the resume token's `_data` {data!r} is not an even number of hex digits", hint=hint)
        document["_data"] = data.upper()
    elif not isinstance(data, Binary | bytes):
        raise UsageError("the resume token's `_data` must be a hex string (or binary, MongoDB 3.6)", hint=hint)
    return _checked_token(dict(document), hint)


def _checked_token(token: dict[str, Any], hint: str) -> dict[str, Any]:
    """``token`` when its ``_data`` starts with a cluster time, the first field of every change stream token."""
    data = token.get("_data")
    raw = bytes.fromhex(data) if isinstance(data, str) and _HEX.fullmatch(data) else data
    if not isinstance(raw, bytes) or not raw.startswith(b"\x82"):
        shown = data if isinstance(data, str) else repr(data)
        raise UsageError(
            f"--resume-token: `_data` {shown} is not a MongoDB change stream resume token (it does not start with "
            "a cluster time, 82…)",
            hint=hint,
        )
    return token


# --- the change ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """What happens to one source partition's stored offset."""

    partition: str
    action: str
    """``deleted``, ``moved`` (to a time) or ``set`` (to a resume token)."""
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def to_dict(self, connector: str) -> dict[str, Any]:
        return {
            "connector": connector,
            "partition": self.partition,
            "action": self.action,
            "before": shown_record(self.before),
            "after": shown_record(self.after),
        }


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def describe_offset(record: Mapping[str, Any] | None, missing: str) -> str:
    """One line for a person: ``sec=… (time) ord=… token=…``; ``missing`` when there is no offset."""
    if record is None:
        return missing
    offset = read_offset(record)
    if isinstance(offset, str):
        return f"unreadable ({offset})"
    sec = offset.position.sec
    when = f" ({_iso(sec)})" if 0 < sec <= _MAX_TIMESTAMP_SECONDS else ""
    token = offset.position.describe_token() if offset.position.resume_token else "none"
    extra = " initsync" if offset.snapshot is not None else ""
    return f"sec={sec}{when} ord={offset.position.ord} token={token}{extra}"


def _store_location(settings: Settings) -> str:
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


def _require_yes_or_terminal(yes: bool) -> None:
    if not yes and not sys.stdin.isatty():
        raise UsageError(
            "refusing to change offsets without a confirmation, and stdin is not a terminal to ask on",
            hint="pass --yes to apply the change without a prompt",
        )


def _no_partition(connector: str, what: str) -> UsageError:
    return UsageError(
        f"connector {connector!r} has no stored offsets to {what}",
        hint="pass --partition (the replica set name, or `cluster` when streaming through mongos) to create one, "
        "or --name for another connector; `mongocdc offsets show --all` lists what is stored",
    )


def _confirm(connector: str, where: str, changes: Sequence[OffsetChange], yes: bool) -> None:
    """Show each change (before → after) on stderr and ask; declining aborts (nothing is written)."""
    if yes:
        return
    lines = [f"offsets of connector {connector!r} in {where}:"]
    for change in changes:
        before = describe_offset(change.before, "no offset")
        after = describe_offset(change.after, "deleted")
        lines.append(f"  {change.partition}: {before}\n  {' ' * len(change.partition)}  → {after}")
    typer.echo("\n".join(lines), err=True)
    typer.confirm(
        f"apply {'this change' if len(changes) == 1 else f'these {len(changes)} changes'}?", abort=True, err=True
    )


def _refuse_running(store: OffsetStore, connector: str, settings: Settings) -> None:
    """``FencedError`` (exit 7) when ``connector`` runs on the (SQLite) store now, or its worker group (``group.id``)
    has workers: it would overwrite the change at its next commit. A Kafka store cannot tell without fencing a
    running instance that is not in a group: that is not checked."""
    from mongocdc.offsets.sqlite import ConnectorLock, SqliteOffsetStore

    if settings.group_id is not None:
        from mongocdc import wiring_fleet

        wiring_fleet.refuse_while_group_runs(
            settings,
            "a change of its offsets would be overwritten by the next commit of its tasks",
            hint="stop the group's workers first (SIGTERM), then change the offsets",
        )

    if isinstance(store, SqliteOffsetStore):
        pid = store.running(connector)
        if pid is not None:
            raise ConnectorLock(store.path, connector).running(pid, doing="change its offsets")


def _apply(store: OffsetStore, connector: str, changes: Sequence[OffsetChange]) -> None:
    """Write ``changes``; on a SQLite store under the connector's lock, so the connector cannot start meanwhile."""
    from mongocdc.offsets.sqlite import ConnectorLock, SqliteOffsetStore

    held: ConnectorLock | None = None
    if isinstance(store, SqliteOffsetStore) and str(store.path) != ":memory:" and store.path.parent.is_dir():
        held = ConnectorLock(store.path, connector)
        try:
            held.acquire(doing="change its offsets")
        except OSError:  # no lock file can be made there: the store's own write says why, if it fails
            held = None
    try:
        for change in changes:
            if change.after is None:
                store.delete(connector, change.partition)
            else:
                store.commit(connector, change.partition, change.after)
    finally:
        if held is not None:
            held.release()


def _render(output: Output, connector: str, changes: Sequence[OffsetChange], partition: str | None = None) -> None:
    if not changes and output is Output.table:
        which = "offsets" if partition is None else f"offset for partition {partition!r}"
        typer.echo(f"nothing to change: connector {connector!r} has no stored {which}", err=True)
        return
    _emit_changes(output, connector, changes, [{} for _ in changes], "offsets changed")


def _emit_changes(
    output: Output, connector: str, changes: Sequence[OffsetChange], extra: Sequence[dict[str, Any]], title: str
) -> None:
    """Offset changes as a table (before and after described) or as records (with ``extra`` fields each)."""
    render.emit(
        output,
        [{**change.to_dict(connector), **more} for change, more in zip(changes, extra, strict=True)],
        ["connector", "partition", "action", "before", "after"],
        [
            [
                connector,
                c.partition,
                c.action,
                describe_offset(c.before, "no offset"),
                describe_offset(c.after, "deleted"),
            ]
            for c in changes
        ],
        title=title,
    )


# --- Kafka Connect (Debezium) offsets ------------------------------------------------------


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
) -> ConnectLocation:
    """The Connect offsets the operator named: ``--connect-offsets-file``, or the topic on the cluster."""
    from mongocdc import wiring
    from mongocdc.config import check_librdkafka_key
    from mongocdc.offsets.connect import DEFAULT_TOPIC

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
    return ConnectLocation(client, topic or DEFAULT_TOPIC, file, wiring.request_timeout_s(settings))


def read_connect_offsets(location: ConnectLocation, *, missing_file_ok: bool = False) -> list[ConnectOffset]:
    """Every live offset stored at ``location`` (``UsageError`` when there is no such topic or file; a
    missing file holds nothing with ``missing_file_ok``, as for a standalone worker that never ran)."""
    from mongocdc.offsets.connect import OffsetsFileError, live_offsets, read_offsets_file

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
    from mongocdc.offsets.connect_topic import ConnectOffsetsTopic

    topic = ConnectOffsetsTopic(location.client, location.topic, timeout_s=location.timeout_s)
    try:
        return live_offsets(topic.read())
    finally:
        topic.close()


def write_connect_offset(location: ConnectLocation, key: bytes, value: bytes, *, dry_run: bool) -> str:
    """Write one offset record at ``location``; returns where it went (or would go, with ``dry_run``)."""
    from mongocdc.offsets.connect import write_offsets_file

    if location.file is not None:
        if not dry_run:
            try:
                write_offsets_file(location.file, [(key, value)])
            except OSError as exc:
                raise UsageError(f"cannot write {location.file}: {exc}") from None
        return str(location.file)
    from mongocdc.offsets.connect_topic import ConnectOffsetsTopic

    topic = ConnectOffsetsTopic(location.client, location.topic, timeout_s=location.timeout_s)
    try:
        if dry_run:
            return f"{location.topic}[{topic.partition_for(key)}]"
        return topic.write([(key, value)])[0]
    finally:
        topic.close()


def mongocdc_partitions(settings: Settings, partition: str | None) -> list[str]:
    """The source partitions mongocdc streams for ``settings``: ``--partition``, else asked of MongoDB."""
    if partition is not None:
        return [partition]
    from mongocdc import wiring
    from mongocdc.sources.mongo.shards import shards_behind
    from mongocdc.sources.mongo.topology import discover

    if settings.mongodb_connection_string is None:
        raise ConfigError(
            "mongodb.connection.string is not set, and it is needed to know mongocdc's source partition",
            hint="set mongodb.connection.string (or --connection-string), or pass --partition (the replica set "
            "name, or `cluster` when streaming through mongos)",
        )
    client = wiring.mongo_client(settings)
    try:
        topology = discover(client)
        topology.require_change_streams()
        if topology.kind == "sharded" and settings.mongodb_connection_mode == "replica_set":
            return sorted(str(s.replica_set) for s in shards_behind(client))
        return [topology.partition]
    finally:
        client.close()


def _rest_body(connector: str, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> dict[str, Any]:
    """The ``PATCH /connectors/<name>/offsets`` request that writes the same offset (Kafka Connect 3.6+)."""
    return {
        "method": "PATCH",
        "path": f"/connectors/{connector}/offsets",
        "body": {"offsets": [{"partition": dict(partition), "offset": dict(offset)}]},
    }


def _echo_notes(output: Output, notes: Sequence[tuple[str, str]]) -> None:
    if output is Output.table:
        for partition, note in notes:
            typer.echo(f"note ({partition}): {note}", err=True)


def _render_adoption(
    output: Output, connector: str, changes: Sequence[OffsetChange], extra: Sequence[dict[str, Any]]
) -> None:
    _emit_changes(output, connector, changes, extra, "offsets adopted")


def _show_row(connector: str, partition: str, record: Mapping[str, Any]) -> list[Any]:
    """The ``offsets show`` table's cells of one stored record (JSON output shows the record itself)."""
    offset = read_offset(record)
    if isinstance(offset, str):
        return [connector, partition, "", "", f"unreadable: {offset}", ""]
    position = offset.position
    initsync = "yes" if offset.snapshot is not None else ""
    return [connector, partition, position.sec, position.ord, position.describe_token(), initsync]


_ADOPTION_HELP = (
    "Stop the source connector first (Debezium: `PUT /connectors/<name>/stop`, Kafka 3.5+, or delete it; "
    "mongocdc: SIGTERM) so its last position is flushed and nothing overwrites the adopted one."
)


STORE_FLAGS: Final = (OFFSETS, "name", "kafka.bootstrap.servers")
"""Which offset store, and whose offsets in it."""


offsets_app = typer.Typer(
    help="Read and edit stored connector offsets.",
    no_args_is_help=True,
    epilog=examples("mongocdc offsets show -c connector.yaml"),
)


@offsets_app.command(
    "show",
    epilog=examples(
        "mongocdc offsets show -c connector.yaml", "mongocdc offsets show --offsets sqlite:offsets.db --all -o json"
    ),
)
@settings_flags(*STORE_FLAGS)
@one_shot
def show(
    ctx: typer.Context,
    output: OutputOpt = Output.table,
    all_connectors: bool = typer.Option(False, "--all", help="Show every connector in the store, not only --name."),
) -> None:
    """Show each source partition's stored position (sec, ord, resume token, updated at).

    The resume token is shown whole as its `_data` hex string, as MongoDB shows it in a change
    event's _id and `offsets set --resume-token` takes it (the store keeps Debezium's form, Base64
    of the token's BSON). A connector with no stored offsets is an error (exit 2) naming the
    connectors the store has.
    """
    from mongocdc import wiring

    settings = state(ctx).settings()
    store = wiring.offset_store(settings, create=False)
    try:
        if not store.exists:
            raise missing_store(settings)
        everyone = store.records()
    finally:
        store.close()
    records = everyone if all_connectors else [r for r in everyone if r.connector == settings.name]
    if not records and not all_connectors:
        others = sorted({r.connector for r in everyone})
        raise UsageError(
            f"connector {settings.name!r} has no stored offsets in {_store_location(settings)}",
            hint=f"the store has offsets of {', '.join(map(repr, others))}: pass --name, or --all to list them"
            if others
            else "the store holds no offsets yet: the connector has not committed a position here (check --offsets)",
        )
    data = [
        {
            "connector": r.connector,
            "partition": r.partition,
            **(shown_record(r.offset) or {}),
            "updated_at": r.updated_at.isoformat(),
        }
        for r in records
    ]
    rows = [
        _show_row(r.connector, r.partition, r.offset) + [r.updated_at.strftime("%Y-%m-%d %H:%M:%S")] for r in records
    ]
    render.emit(
        output,
        data,
        ["connector", "partition", "sec", "ord", "resume token", "initsync", "updated at"],
        rows,
        title="stored offsets",
    )


@offsets_app.command(
    "reset",
    epilog=examples(
        "mongocdc offsets reset -c connector.yaml --yes",
        "mongocdc offsets reset -c connector.yaml --partition rs0 --to-timestamp 2026-11-26T10:00:00Z --yes",
    ),
)
@settings_flags(*STORE_FLAGS)
@one_shot
def reset(
    ctx: typer.Context,
    partition: PartitionOpt = None,
    to_timestamp: Annotated[
        str | None,
        typer.Option(
            "--to-timestamp",
            help="Move the position to this time instead of deleting it; streaming restarts with the first "
            f"change at or after it. {time_help('s')}.",
            show_default=False,
        ),
    ] = None,
    yes: YesOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Delete a connector's stored offsets (every partition or one), or move them to a time.

    Without an offset the next start follows snapshot.mode (or streams from then on). Stop the
    connector first: a running one writes its own position at its next commit.
    """
    from mongocdc import wiring
    from mongocdc.engine.source_offset import SourceOffset
    from mongocdc.events.position import Position

    seconds = parse_epoch_seconds(to_timestamp) if to_timestamp is not None else None
    _require_yes_or_terminal(yes)
    settings = state(ctx).settings()
    connector = settings.name
    store = wiring.offset_store(settings, create=False)
    try:
        if not store.exists and seconds is None:  # nothing to delete (moving a partition creates the store)
            raise missing_store(settings)
        stored = {r.partition: dict(r.offset) for r in store.records(connector)}
        if seconds is None:
            targets = [p for p in sorted(stored) if partition is None or p == partition]
            changes = [OffsetChange(p, "deleted", stored[p], None) for p in targets]
        else:
            targets = [partition] if partition is not None else sorted(stored)
            if not targets:
                raise _no_partition(connector, "move")
            after = SourceOffset(Position(seconds, 0)).to_record()
            changes = [OffsetChange(p, "moved", stored.get(p), after) for p in targets]
        if changes:
            _refuse_running(store, connector, settings)
            _confirm(connector, _store_location(settings), changes, yes)
            _apply(store, connector, changes)
    finally:
        store.close()
    _render(output, connector, changes, partition)


@offsets_app.command(
    "set",
    epilog=examples(
        "mongocdc offsets set -c connector.yaml --partition rs0 --resume-token 82692F0B28000000012B0429296E1404 --yes"
    ),
)
@settings_flags(*STORE_FLAGS)
@one_shot
def set_(
    ctx: typer.Context,
    resume_token: Annotated[
        str,
        typer.Option(
            "--resume-token",
            help="Resume token to continue after: the `_data` hex string MongoDB shows in a change "
            "event's _id (as `offsets show` prints it), the whole token as an extended JSON document, or "
            "the stored form, Base64 of its BSON (Debezium's resume_token, as Kafka Connect shows it).",
            show_default=False,
        ),
    ],
    partition: SetPartitionOpt = None,
    yes: YesOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Set a connector's position to a resume token: streaming continues with the change after it.

    sec and ord are the token's cluster time (kept from the stored offset, or 0, when the token is too
    short to hold one). A value that is not a resume token is refused (exit 2). With several stored
    partitions, --partition says which one. Stop the connector first.
    """
    from mongocdc import wiring
    from mongocdc.engine.source_offset import SourceOffset
    from mongocdc.events.position import Position, token_cluster_time

    document = parse_resume_token(resume_token)
    token = Position.token_bytes(document)
    cluster_time = token_cluster_time(document)
    _require_yes_or_terminal(yes)
    settings = state(ctx).settings()
    connector = settings.name
    store = wiring.offset_store(settings, create=False)
    try:
        stored = {r.partition: dict(r.offset) for r in store.records(connector)}
        if partition is None:
            if not stored:
                raise _no_partition(connector, "set")
            if len(stored) > 1:
                raise UsageError(
                    f"connector {connector!r} has offsets for {len(stored)} partitions "
                    f"({', '.join(sorted(stored))}); a resume token belongs to one of them",
                    hint="pass --partition to say which",
                )
            partition = next(iter(stored))
        before = stored.get(partition)
        previous = read_offset(before) if before is not None else None
        kept = previous.position if previous is not None and not isinstance(previous, str) else Position(0, 0)
        sec, ord_ = cluster_time if cluster_time is not None else (kept.sec, kept.ord)
        after = SourceOffset(Position(sec, ord_, token)).to_record()
        changes = [OffsetChange(partition, "set", before, after)]
        _refuse_running(store, connector, settings)
        _confirm(connector, _store_location(settings), changes, yes)
        _apply(store, connector, changes)
    finally:
        store.close()
    _render(output, connector, changes)


@offsets_app.command(
    "import",
    epilog=examples(
        "mongocdc offsets import -c connector.yaml --from-kafka-connect --connector-name inventory-connector --dry-run",
        "mongocdc offsets import -c connector.yaml --from-kafka-connect --connect-offsets-file connect.offsets --yes",
    ),
)
@settings_flags(*STORE_FLAGS, "topic.prefix", "mongodb.connection.string")
@one_shot
def import_(
    ctx: typer.Context,
    from_kafka_connect: Annotated[
        bool,
        typer.Option(
            "--from-kafka-connect",
            help="Read a Debezium MongoDB connector's offsets from Kafka Connect's offset storage.",
        ),
    ] = False,
    connector_name: ConnectorNameOpt = None,
    connect_offsets_topic: ConnectTopicOpt = None,
    connect_bootstrap_servers: ConnectBootstrapOpt = None,
    connect_kafka: ConnectKafkaOpt = None,
    connect_offsets_file: ConnectFileOpt = None,
    partition: Annotated[
        str | None,
        typer.Option(
            "--partition",
            "-p",
            help="mongocdc partition to import into: the replica set name, or `cluster` when streaming through "
            "mongos (default: asked of MongoDB through mongodb.connection.string).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Adopt a stopped Debezium MongoDB connector's offsets: mongocdc continues at its resume token.

    Reads the connector's offset from Kafka Connect (the offsets topic, or a standalone worker's
    file), translates it and stores it in mongocdc's offset store under --name: `mongocdc stream`
    then resumes after the same change, with no snapshot and no gap. An unfinished initial
    snapshot is run again from the start (as Debezium would); an incremental snapshot continues
    with its current collection read again. Stop the Debezium connector first
    (`PUT /connectors/<name>/stop` or delete it) so its last position is flushed; on a running
    Connect cluster (Kafka 3.6+) `GET /connectors/<name>/offsets` shows the offset read here.
    """
    from mongocdc import wiring
    from mongocdc.engine.adoption import choose_debezium_offsets, from_debezium

    if not from_kafka_connect:
        raise UsageError(
            "say where the offsets come from: --from-kafka-connect",
            hint="mongocdc offsets import --from-kafka-connect [--connector-name NAME] [--connect-offsets-topic T]",
        )
    settings, prefix, location, debezium = _handover(
        ctx,
        dry_run,
        yes,
        connector_name,
        (connect_bootstrap_servers, connect_kafka, connect_offsets_topic, connect_offsets_file),
    )
    found = read_connect_offsets(location)
    targets = mongocdc_partitions(settings, partition)
    chosen = choose_debezium_offsets(
        found, debezium, prefix, targets, where=location.describe(), explicit=partition is not None
    )
    translated = []
    for target, source in chosen:
        if source.offset is None:
            raise UsageError(
                f"the offset of {source.key.decode(errors='replace')} in {source.where} is not a JSON object",
                hint="it was not written by Kafka Connect's JsonConverter; inspect it with `mongocdc topic dump`",
            )
        result = from_debezium(source.offset, new_snapshot_id=f"debezium-{debezium}")
        notes = list(result.notes)
        adopted = read_offset(result.offset)
        if not isinstance(adopted, str) and adopted.incremental is not None and not settings.signal_data_collection:
            notes.append("set signal.data.collection (as Debezium's) so mongocdc continues the incremental snapshot")
        translated.append((target, source, result.offset, notes))
    store = wiring.offset_store(settings, create=False)  # the first write creates it
    try:
        stored = {r.partition: dict(r.offset) for r in store.records(settings.name)}
        action = "would import" if dry_run else "imported"
        changes = [OffsetChange(t, action, stored.get(t), after) for t, _, after, _ in translated]
        _echo_notes(output, [(t, n) for t, _, _, ns in translated for n in ns])
        if not dry_run:
            _refuse_running(store, settings.name, settings)
            _confirm(settings.name, _store_location(settings), changes, yes)
            _apply(store, settings.name, changes)
    finally:
        store.close()
    extra = [
        {
            "debezium": {
                "connector": source.connector,
                "partition": source.partition,
                "offset": shown_record(source.offset),
                "read_from": source.where,
            },
            "notes": ns,
        }
        for _, source, _, ns in translated
    ]
    _render_adoption(output, settings.name, changes, extra)


def _handover(
    ctx: typer.Context, dry_run: bool, yes: bool, connector_name: str | None, connect: tuple[Any, Any, Any, Any]
) -> tuple[Settings, str, Any, str]:
    """What ``offsets import`` and ``export`` both need: consent to write, the settings, ``topic.prefix``,
    Kafka Connect's offset storage (``connect_location`` of the four ``--connect-*`` options) and the
    Debezium connector's name (``--connector-name``, else ``--name``)."""
    if not dry_run:
        _require_yes_or_terminal(yes)
    settings = state(ctx).settings()
    prefix = settings.require("topic.prefix")
    bootstrap, kafka, topic, file = connect
    location = connect_location(settings, bootstrap, kafka, topic, file)
    return settings, prefix, location, connector_name or settings.name


@offsets_app.command(
    "export",
    epilog=examples(
        "mongocdc offsets export -c connector.yaml --to-kafka-connect --connector-name inventory --dry-run -o json",
        "mongocdc offsets export -c connector.yaml --to-kafka-connect --connect-offsets-topic connect-offsets --yes",
    ),
)
@settings_flags(*STORE_FLAGS, "topic.prefix")
@one_shot
def export(
    ctx: typer.Context,
    to_kafka_connect: Annotated[
        bool,
        typer.Option(
            "--to-kafka-connect",
            help="Write the offsets into Kafka Connect's offset storage as the Debezium MongoDB connector would.",
        ),
    ] = False,
    connector_name: ConnectorNameOpt = None,
    connect_offsets_topic: ConnectTopicOpt = None,
    connect_bootstrap_servers: ConnectBootstrapOpt = None,
    connect_kafka: ConnectKafkaOpt = None,
    connect_offsets_file: ConnectFileOpt = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Hand mongocdc's position to a Debezium MongoDB connector: it resumes at the same resume token.

    Writes the offset under the key Debezium reads ({"server_id": "<topic.prefix>"} for connector
    --connector-name), with the bytes Debezium writes, into the partition of the offsets topic
    Kafka Connect's own producer would choose (or into a standalone worker's file). Stop mongocdc
    first (SIGTERM), and keep the Debezium connector stopped or deleted until the write is done.
    A running Connect cluster (Kafka 3.6+) can take the same offset through its REST API instead,
    `PATCH /connectors/<name>/offsets` on the stopped connector: `--dry-run --output json` prints
    the request.
    """
    from mongocdc import wiring
    from mongocdc.engine.adoption import debezium_partition, to_debezium
    from mongocdc.offsets.connect import connect_key, connect_value

    if not to_kafka_connect:
        raise UsageError(
            "say where the offsets go: --to-kafka-connect",
            hint="mongocdc offsets export --to-kafka-connect [--connector-name NAME] [--connect-offsets-topic T]",
        )
    settings, prefix, location, debezium = _handover(
        ctx,
        dry_run,
        yes,
        connector_name,
        (connect_bootstrap_servers, connect_kafka, connect_offsets_topic, connect_offsets_file),
    )
    store = wiring.offset_store(settings, create=False)
    try:
        if not store.exists:
            raise missing_store(settings)
        records = store.records(settings.name)
    finally:
        store.close()
    if not records:
        raise UsageError(
            f"connector {settings.name!r} has no stored offsets in {_store_location(settings)}: nothing to export",
            hint="pass --name (and --offsets) of the mongocdc connector; `mongocdc offsets show --all` lists them",
        )
    if len(records) > 1:
        raise ConfigError(
            f"connector {settings.name!r} streams each shard's replica set on its own "
            f"({', '.join(r.partition for r in records)}), but Debezium 3.x streams the whole cluster through "
            "mongos from one resume token: there is no Debezium offset for several shard positions",
            hint="switch mongocdc to mongodb.connection.mode=sharded first (a new position: `offsets reset`, "
            "then stream), or keep Debezium's own offsets",
        )
    record = records[0]
    result = to_debezium(record.offset)
    partition_map = debezium_partition(prefix)
    key = connect_key(debezium, partition_map)
    value = connect_value(result.offset)
    found = read_connect_offsets(location, missing_file_ok=True)
    before = next((o.offset for o in found if o.key == key), None)
    notes = list(result.notes)
    if location.file is not None and not location.file.exists():
        notes.append(f"{location.file} does not exist yet: it is created, and the worker reads it when it starts")
    others = [o for o in found if o.connector == debezium and o.key != key]
    older = [o for o in others if o.partition.get("server_id") == prefix]
    if older:
        keys = ", ".join(o.key.decode(errors="replace") for o in older)
        notes.append(f"connector {debezium!r} also has older offsets under {keys}: Debezium ignores them now")
    for servers in sorted({str(o.partition.get("server_id")) for o in others} - {prefix}):
        notes.append(
            f"connector {debezium!r} also has an offset for server_id {servers!r}: if its topic.prefix is "
            f"{servers!r}, it reads that one and not this one (written for topic.prefix {prefix!r})"
        )
    if not dry_run:
        _echo_notes(output, [(record.partition, n) for n in notes])
        change = OffsetChange(record.partition, "exported", before, result.offset)
        _confirm(debezium, location.describe(), [change], yes)
    written = write_connect_offset(location, key, value, dry_run=dry_run)
    change = OffsetChange(record.partition, "would export" if dry_run else "exported", before, result.offset)
    if dry_run:
        _echo_notes(output, [(record.partition, n) for n in notes])
    extra = {
        "debezium": {
            "connector": debezium,
            "partition": partition_map,
            "key": key.decode("utf-8"),
            "value": value.decode("utf-8"),
            "written_to" if not dry_run else "would_go_to": written,
        },
        "rest": _rest_body(debezium, partition_map, result.offset),
        "notes": notes,
    }
    _render_adoption(output, settings.name, [change], [extra])
