"""``mongocdc offsets show|reset|set|import|export``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
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
    from mongocdc.engine.source_offset import OffsetChange
    from mongocdc.offsets.base import OffsetRecord, OffsetStore
    from mongocdc.offsets.connect_locations import ConnectLocation

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


def parse_epoch_seconds(value: str, now: datetime | None = None) -> int:
    """Epoch seconds of ``--to-timestamp`` (``times.parse_time_ms``: ISO 8601, ``…s``, ``…ms``, a bare number
    of seconds); a ``UsageError`` (exit 2) when it is no time, out of a cluster time's range or in the future
    (``source_offset.checked_epoch_seconds``). Fractions of a second are dropped."""
    from mongocdc.engine.source_offset import checked_epoch_seconds

    return checked_epoch_seconds(parse_time_ms(value, "--to-timestamp", bare="s"), value, now)


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
        before, after = change.described()
        lines.append(f"  {change.partition}: {before}\n  {' ' * len(change.partition)}  → {after}")
    typer.echo("\n".join(lines), err=True)
    typer.confirm(
        f"apply {'this change' if len(changes) == 1 else f'these {len(changes)} changes'}?", abort=True, err=True
    )


def _refuse_running(store: OffsetStore, connector: str, settings: Settings) -> None:
    """``FencedError`` (exit 7) when ``connector`` runs on the (SQLite) store now, or its worker group (``group.id``)
    has workers: it would overwrite the change at its next commit (``offsets.edits.refuse_running``)."""
    from mongocdc.offsets.edits import refuse_running

    if settings.group_id is not None:
        from mongocdc import wiring_fleet

        wiring_fleet.refuse_while_group_runs(
            settings,
            "a change of its offsets would be overwritten by the next commit of its tasks",
            hint="stop the group's workers first (SIGTERM), then change the offsets",
        )
    refuse_running(store, connector)


def _edit(
    settings: Settings,
    plan: Callable[[dict[str, dict[str, Any]]], list[OffsetChange]],
    yes: bool,
    *,
    require_store: bool = False,
    write: bool = True,
) -> list[OffsetChange]:
    """The changes ``plan`` makes of the connector's stored records (by partition), confirmed and written:
    refused while the connector runs, asked for unless ``yes``, written under its lock (``offsets.edits``).
    ``require_store``: a missing store is an error; ``write``: false for a dry run. A store is created by its
    first write only."""
    from mongocdc import wiring
    from mongocdc.offsets.edits import missing_store, store_location, write_offsets

    connector = settings.name
    store = wiring.offset_store(settings, create=False)
    try:
        if require_store and not store.exists:
            raise missing_store(settings)
        changes = plan({r.partition: dict(r.offset) for r in store.records(connector)})
        if changes and write:
            _refuse_running(store, connector, settings)
            _confirm(connector, store_location(settings), changes, yes)
            write_offsets(store, connector, [(c.partition, c.after) for c in changes])
    finally:
        store.close()
    return changes


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
        [[connector, c.partition, c.action, *c.described()] for c in changes],
        title=title,
    )


def mongocdc_partitions(settings: Settings, partition: str | None) -> list[str]:
    """The source partitions mongocdc streams for ``settings``: ``--partition``, else asked of MongoDB."""
    if partition is not None:
        return [partition]
    from mongocdc.wiring_plan import source_partitions

    if settings.mongodb_connection_string is None:
        raise ConfigError(
            "mongodb.connection.string is not set, and it is needed to know mongocdc's source partition",
            hint="set mongodb.connection.string (or --connection-string), or pass --partition (the replica set "
            "name, or `cluster` when streaming through mongos)",
        )
    return source_partitions(settings)  # the partitions `stream` would capture: wiring_plan.ConnectorPlan


def _echo_notes(output: Output, notes: Sequence[tuple[str, str]]) -> None:
    if output is Output.table:
        for partition, note in notes:
            typer.echo(f"note ({partition}): {note}", err=True)


def _show_row(connector: str, partition: str, record: Mapping[str, Any]) -> list[Any]:
    """The ``offsets show`` table's cells of one stored record (JSON output shows the record itself)."""
    from mongocdc.engine.source_offset import read_offset

    offset = read_offset(record)
    if isinstance(offset, str):
        return [connector, partition, "", "", f"unreadable: {offset}", ""]
    position = offset.position
    initsync = "yes" if offset.snapshot is not None else ""
    return [connector, partition, position.sec, position.ord, position.describe_token(), initsync]


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
    from mongocdc.engine.source_offset import shown_record
    from mongocdc.offsets.edits import store_location

    settings = state(ctx).settings()
    everyone = _stored_records(settings)
    records = everyone if all_connectors else [r for r in everyone if r.connector == settings.name]
    if not records and not all_connectors:
        others = sorted({r.connector for r in everyone})
        raise UsageError(
            f"connector {settings.name!r} has no stored offsets in {store_location(settings)}",
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
    from mongocdc.engine.offset_changes import reset_changes

    seconds = parse_epoch_seconds(to_timestamp) if to_timestamp is not None else None
    _require_yes_or_terminal(yes)
    settings = state(ctx).settings()

    def plan(stored: dict[str, dict[str, Any]]) -> list[OffsetChange]:
        changes = reset_changes(stored, partition, seconds)
        if seconds is not None and not changes:
            raise _no_partition(settings.name, "move")
        return changes

    # nothing to delete without a store (moving a partition creates it)
    changes = _edit(settings, plan, yes, require_store=seconds is None)
    _render(output, settings.name, changes, partition)


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
    from mongocdc.engine.offset_changes import token_change
    from mongocdc.engine.source_offset import parse_resume_token

    document = parse_resume_token(resume_token)
    _require_yes_or_terminal(yes)
    settings = state(ctx).settings()
    changes = _edit(
        settings,
        lambda stored: [token_change(stored, _token_partition(settings.name, stored, partition), document)],
        yes,
    )
    _render(output, settings.name, changes)


def _token_partition(connector: str, stored: Mapping[str, Any], partition: str | None) -> str:
    """The partition ``offsets set`` sets: ``--partition``, else the connector's one stored partition."""
    if partition is not None:
        return partition
    if not stored:
        raise _no_partition(connector, "set")
    if len(stored) > 1:
        raise UsageError(
            f"connector {connector!r} has offsets for {len(stored)} partitions "
            f"({', '.join(sorted(stored))}); a resume token belongs to one of them",
            hint="pass --partition to say which",
        )
    return next(iter(stored))


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
    from mongocdc.engine.adoption import choose_debezium_offsets
    from mongocdc.engine.offset_changes import adopt
    from mongocdc.engine.source_offset import OffsetChange
    from mongocdc.offsets.connect_locations import read_connect_offsets

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
    signals = bool(settings.signal_data_collection)
    translated = [adopt(target, source, debezium, signal_collection=signals) for target, source in chosen]
    action = "would import" if dry_run else "imported"

    def plan(stored: dict[str, dict[str, Any]]) -> list[OffsetChange]:
        changes = [OffsetChange(a.target, action, stored.get(a.target), a.offset) for a in translated]
        _echo_notes(output, [(a.target, n) for a in translated for n in a.notes])
        return changes

    changes = _edit(settings, plan, yes, write=not dry_run)
    _emit_changes(output, settings.name, changes, [a.to_dict() for a in translated], "offsets adopted")


def _handover(
    ctx: typer.Context, dry_run: bool, yes: bool, connector_name: str | None, connect: tuple[Any, Any, Any, Any]
) -> tuple[Settings, str, ConnectLocation, str]:
    """What ``offsets import`` and ``export`` both need: consent to write, the settings, ``topic.prefix``,
    Kafka Connect's offset storage (``connect_location`` of the four ``--connect-*`` options) and the
    Debezium connector's name (``--connector-name``, else ``--name``)."""
    from mongocdc import wiring
    from mongocdc.offsets.connect_locations import connect_location

    if not dry_run:
        _require_yes_or_terminal(yes)
    settings = state(ctx).settings()
    prefix = settings.require("topic.prefix")
    bootstrap, kafka, topic, file = connect
    location = connect_location(settings, bootstrap, kafka, topic, file, timeout_s=wiring.request_timeout_s(settings))
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
    from mongocdc.engine.offset_changes import debezium_record, exported_record
    from mongocdc.engine.source_offset import OffsetChange
    from mongocdc.offsets.connect_locations import export_notes, read_connect_offsets, write_connect_offset
    from mongocdc.offsets.edits import store_location

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
    record = exported_record(_stored_records(settings, settings.name), settings.name, store_location(settings))
    exported = debezium_record(record.offset, debezium, prefix)
    found = read_connect_offsets(location, missing_file_ok=True)
    before = next((o.offset for o in found if o.key == exported.key), None)
    notes = [*exported.notes, *export_notes(location, found, debezium, exported.key, prefix)]
    if not dry_run:
        _echo_notes(output, [(record.partition, n) for n in notes])
        change = OffsetChange(record.partition, "exported", before, exported.offset)
        _confirm(debezium, location.describe(), [change], yes)
    written = write_connect_offset(location, exported.key, exported.value, dry_run=dry_run)
    change = OffsetChange(record.partition, "would export" if dry_run else "exported", before, exported.offset)
    if dry_run:
        _echo_notes(output, [(record.partition, n) for n in notes])
    extra = exported.to_dict(debezium, written, notes, dry_run=dry_run)
    _emit_changes(output, settings.name, [change], [extra], "offsets adopted")


def _stored_records(settings: Settings, connector: str | None = None) -> list[OffsetRecord]:
    """The records in the settings' store (of ``connector``, else all); the store must exist (``missing_store``)."""
    from mongocdc import wiring
    from mongocdc.offsets.edits import missing_store

    store = wiring.offset_store(settings, create=False)
    try:
        if not store.exists:
            raise missing_store(settings)
        return store.records(connector)
    finally:
        store.close()
