"""``mongocdc offsets show|reset|set``."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mongocdc.cli import render
from mongocdc.cli.options import BootstrapOpt, NameOpt, OffsetsOpt, OutputOpt
from mongocdc.cli.state import Output, state
from mongocdc.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.offsets.base import OffsetStore

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

_MAX_TIMESTAMP_SECONDS = 2**32 - 1  # a BSON Timestamp's seconds are 32 bits
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")


def _token_text(offset: Mapping[str, Any], width: int = 28) -> str:
    """The resume token's ``_data`` (or extended JSON), shortened for a table (JSON output keeps it whole)."""
    from mongocdc.events.position import Position

    try:
        text = Position.from_offset(offset).describe_token()
    except ValueError:
        text = str(offset.get("resume_token", ""))
    if len(text) <= width:
        return text
    return f"{text[: width - 9]}…{text[-8:]}"


# --- parsing what the operator typed (a bad value is invalid configuration: exit 3) ---------


def parse_epoch_seconds(value: str, now: datetime | None = None) -> int:
    """Epoch seconds of ``--to-timestamp``: ISO 8601 (UTC when it has no offset) or epoch seconds.

    Fractions of a second are dropped, so the position is never after the time asked for.
    """
    text = value.strip()
    if text.isdigit():
        seconds = int(text)
    else:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ConfigError(
                f"--to-timestamp {value!r} is neither an ISO 8601 time nor epoch seconds",
                hint="for example --to-timestamp 2026-01-31T12:00:00Z or --to-timestamp 1769860800",
            ) from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        seconds = int(parsed.timestamp())
    current = int((now or datetime.now(UTC)).timestamp())
    if seconds < 1 or seconds > _MAX_TIMESTAMP_SECONDS:
        raise ConfigError(
            f"--to-timestamp {value!r} is out of range (epoch seconds from 1 to {_MAX_TIMESTAMP_SECONDS})",
            hint="give the time in epoch seconds (not milliseconds) or as ISO 8601",
        )
    if seconds > current:
        raise ConfigError(
            f"--to-timestamp {value!r} ({_iso(seconds)}) is in the future: every change until then would be skipped",
            hint="give a past time, in epoch seconds (not milliseconds) or ISO 8601",
        )
    return seconds


def parse_resume_token(text: str) -> dict[str, Any]:
    """The token document of ``--resume-token``.

    Accepted: the ``_data`` hex string MongoDB shows, the document as extended JSON, or the stored
    form (base64 of the BSON document, the ``resume_token`` of ``offsets show --output json``).
    A string of hex digits is always taken as ``_data``.
    """
    from bson import json_util
    from bson.binary import Binary

    from mongocdc.events.position import Position

    hint = (
        "pass the `_data` string of a change event's `_id` (hex digits, as mongosh shows it), the whole token "
        'as extended JSON, e.g. \'{"_data": "8263…"}\', or the resume_token of `offsets show --output json`'
    )
    stripped = text.strip()
    if not stripped.startswith("{"):
        if _HEX.fullmatch(stripped):
            return {"_data": stripped.upper()}
        try:
            stored = Position.from_offset({"sec": 0, "ord": 0, "resume_token": stripped}).token_document()
        except ValueError:
            stored = None
        if not stored or "_data" not in stored:
            raise ConfigError(
                f"--resume-token {text!r} is neither a hex `_data` string, a JSON document nor a stored token",
                hint=hint,
            )
        return stored
    try:
        document = json_util.loads(stripped)
    except Exception as exc:  # json_util raises ValueError, TypeError or bson errors for bad input
        raise ConfigError(f"--resume-token is not valid extended JSON: {exc}", hint=hint) from None
    if not isinstance(document, dict) or "_data" not in document:
        raise ConfigError("--resume-token must be a document with a `_data` field", hint=hint)
    data = document["_data"]
    if isinstance(data, str):
        if not _HEX.fullmatch(data):
            raise ConfigError(f"the resume token's `_data` {data!r} is not an even number of hex digits", hint=hint)
        document["_data"] = data.upper()
    elif not isinstance(data, Binary | bytes):
        raise ConfigError("the resume token's `_data` must be a hex string (or binary, MongoDB 3.6)", hint=hint)
    result: dict[str, Any] = dict(document)
    return result


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
            "before": self.before,
            "after": self.after,
        }


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def describe_offset(offset: Mapping[str, Any] | None, missing: str) -> str:
    """One line for a person: ``sec=… (time) ord=… token=…``; ``missing`` when there is no offset."""
    if offset is None:
        return missing
    sec = offset.get("sec")
    when = f" ({_iso(sec)})" if isinstance(sec, int) and 0 < sec <= _MAX_TIMESTAMP_SECONDS else ""
    token = _token_text(offset) if offset.get("resume_token") else "none"
    extra = " initsync" if offset.get("initsync") else ""
    return f"sec={sec}{when} ord={offset.get('ord')} token={token}{extra}"


def _store_location(settings: Settings) -> str:
    if settings.offset_storage == "kafka":
        return f"kafka:{settings.offset_storage_topic} on {settings.kafka_client.get('bootstrap.servers')}"
    return f"{settings.offset_storage}:{settings.offset_storage_file_filename}"


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


def _apply(store: OffsetStore, connector: str, changes: Sequence[OffsetChange]) -> None:
    for change in changes:
        if change.after is None:
            store.delete(connector, change.partition)
        else:
            store.commit(connector, change.partition, change.after)


def _render(output: Output, connector: str, changes: Sequence[OffsetChange], partition: str | None = None) -> None:
    if not changes and output is Output.table:
        which = "offsets" if partition is None else f"offset for partition {partition!r}"
        typer.echo(f"nothing to change: connector {connector!r} has no stored {which}", err=True)
        return
    render.emit(
        output,
        [change.to_dict(connector) for change in changes],
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
        title="offsets changed",
    )


def register(app: typer.Typer) -> None:
    offsets_app = typer.Typer(help="Read and edit stored connector offsets.", no_args_is_help=True)

    @offsets_app.command("show")
    def show(
        ctx: typer.Context,
        output: OutputOpt = Output.table,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
        bootstrap_servers: BootstrapOpt = None,
        all_connectors: bool = typer.Option(False, "--all", help="Show every connector in the store, not only --name."),
    ) -> None:
        """Show each source partition's stored position (sec, ord, resume token, updated at)."""
        from mongocdc import wiring

        settings = state(ctx).settings(offsets=offsets, name=name, bootstrap_servers=bootstrap_servers)
        store = wiring.offset_store(settings, create=False)
        try:
            records = store.records(None if all_connectors else settings.name)
        finally:
            store.close()
        data = [
            {
                "connector": r.connector,
                "partition": r.partition,
                **dict(r.offset),
                "updated_at": r.updated_at.isoformat(),
            }
            for r in records
        ]
        rows = [
            [
                r.connector,
                r.partition,
                r.offset.get("sec"),
                r.offset.get("ord"),
                _token_text(dict(r.offset)),
                "yes" if r.offset.get("initsync") else "",
                r.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
            ]
            for r in records
        ]
        render.emit(
            output,
            data,
            ["connector", "partition", "sec", "ord", "resume token", "initsync", "updated at"],
            rows,
            title="stored offsets",
        )

    @offsets_app.command("reset")
    def reset(
        ctx: typer.Context,
        partition: PartitionOpt = None,
        to_timestamp: Annotated[
            str | None,
            typer.Option(
                "--to-timestamp",
                help="Move the position to this time instead of deleting it: ISO 8601 (UTC when no offset is "
                "given) or epoch seconds; streaming restarts with the first change at or after it.",
                show_default=False,
            ),
        ] = None,
        yes: YesOpt = False,
        output: OutputOpt = Output.table,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
        bootstrap_servers: BootstrapOpt = None,
    ) -> None:
        """Delete a connector's stored offsets (every partition or one), or move them to a time.

        Without an offset the next start follows snapshot.mode (or streams from then on). Stop the
        connector first: a running one writes its own position at its next commit.
        """
        from mongocdc import wiring

        seconds = parse_epoch_seconds(to_timestamp) if to_timestamp is not None else None
        _require_yes_or_terminal(yes)
        settings = state(ctx).settings(offsets=offsets, name=name, bootstrap_servers=bootstrap_servers)
        connector = settings.name
        store = wiring.offset_store(settings)
        try:
            stored = {r.partition: dict(r.offset) for r in store.records(connector)}
            if seconds is None:
                targets = [p for p in sorted(stored) if partition is None or p == partition]
                changes = [OffsetChange(p, "deleted", stored[p], None) for p in targets]
            else:
                targets = [partition] if partition is not None else sorted(stored)
                if not targets:
                    raise _no_partition(connector, "move")
                after = {"sec": seconds, "ord": 0, "resume_token": None}
                changes = [OffsetChange(p, "moved", stored.get(p), dict(after)) for p in targets]
            if changes:
                _confirm(connector, _store_location(settings), changes, yes)
                _apply(store, connector, changes)
        finally:
            store.close()
        _render(output, connector, changes, partition)

    @offsets_app.command("set")
    def set_(
        ctx: typer.Context,
        resume_token: Annotated[
            str,
            typer.Option(
                "--resume-token",
                help="Resume token to continue after: the `_data` hex string MongoDB shows in a change "
                "event's _id, the whole token as an extended JSON document, or the resume_token printed by "
                "`offsets show --output json` (base64).",
                show_default=False,
            ),
        ],
        partition: SetPartitionOpt = None,
        yes: YesOpt = False,
        output: OutputOpt = Output.table,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
        bootstrap_servers: BootstrapOpt = None,
    ) -> None:
        """Set a connector's position to a resume token: streaming continues with the change after it.

        sec and ord are kept from the stored offset (0 when there is none). With several stored
        partitions, --partition says which one. Stop the connector first.
        """
        from mongocdc import wiring
        from mongocdc.events.position import Position

        token = Position.token_bytes(parse_resume_token(resume_token))
        _require_yes_or_terminal(yes)
        settings = state(ctx).settings(offsets=offsets, name=name, bootstrap_servers=bootstrap_servers)
        connector = settings.name
        store = wiring.offset_store(settings)
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
            after = Position(
                sec=_int_field(before, "sec"), ord=_int_field(before, "ord"), resume_token=token
            ).to_offset()
            changes = [OffsetChange(partition, "set", before, after)]
            _confirm(connector, _store_location(settings), changes, yes)
            _apply(store, connector, changes)
        finally:
            store.close()
        _render(output, connector, changes)

    app.add_typer(offsets_app, name="offsets")


def _int_field(offset: Mapping[str, Any] | None, field: str) -> int:
    """An integer field of a stored offset, 0 when there is no offset or the field is not a number."""
    if offset is None:
        return 0
    try:
        return int(offset.get(field) or 0)
    except (TypeError, ValueError):
        return 0
