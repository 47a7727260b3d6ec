"""``mongocdc signal send execute-snapshot|stop-snapshot|pause-snapshot|resume-snapshot|log``.

Each command builds the signal from its options, checks it with the parser the
connector uses (``mongocdc.events.signals``; a bad pattern or filter exits 3
before anything is written), writes it through the ``source`` channel (a
document inserted into ``signal.data.collection``) or the ``kafka`` channel (a
record keyed by ``topic.prefix`` in ``signal.kafka.topic``), and prints its id.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from bson import json_util

from mongocdc.cli import render
from mongocdc.cli.options import OutputOpt, examples, one_shot, settings_flags
from mongocdc.cli.state import Output, state
from mongocdc.errors import ConfigError

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.events.signals import Signal

log = logging.getLogger("mongocdc.cli.signal")


class Channel(StrEnum):
    source = "source"
    kafka = "kafka"


class SnapshotKind(StrEnum):
    incremental = "incremental"
    blocking = "blocking"


ChannelOpt = Annotated[
    Channel | None,
    typer.Option(
        "--channel",
        help="Where to write the signal: source (a document in signal.data.collection) or kafka (a record in "
        "signal.kafka.topic keyed by topic.prefix). Default: the first of signal.enabled.channels.",
        show_default=False,
    ),
]
IdOpt = Annotated[
    str | None,
    typer.Option(
        "--id",
        metavar="ID",
        help="Id of the signal, quoted back in the connector's log and notifications. Default: a random UUID.",
        show_default=False,
    ),
]
CollectionsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--collections",
        metavar="REGEX",
        help="Regular expression matched against whole <database>.<collection> names (repeat for more); "
        'a name whose parts contain dots can be given exactly as "db"."coll.x".',
        show_default=False,
    ),
]
FilterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--filter",
        metavar="DB.COLL=JSON",
        help="Additional condition DB.COLL=JSON: snapshot only the documents of DB.COLL matching the query, e.g. "
        'inventory.orders=\'{"status": "open"}\' (extended JSON for BSON types; repeat for more collections).',
        show_default=False,
    ),
]
SnapshotTypeOpt = Annotated[
    SnapshotKind,
    typer.Option(
        "--snapshot-type",
        help="incremental (chunks interleaved with streaming) or blocking (streaming pauses until it is done).",
    ),
]


def _hint(reason: str) -> str:
    if "additional-conditions[" in reason:
        where = "additional-conditions[N] is the N-th --filter option (counting from 0); "
    elif "data-collections[" in reason:
        where = "data-collections[N] is the N-th --collections option (counting from 0); "
    else:
        where = ""
    return where + "fix it and send the signal again (nothing was written)"


@dataclass(frozen=True)
class Sent:
    """Where a signal was written."""

    signal_id: str
    channel: Channel
    destination: str
    details: dict[str, Any]


def parse_filters(filters: list[str]) -> list[dict[str, str]]:
    """``DB.COLL=JSON`` options as Debezium's ``additional-conditions`` entries (the JSON is checked later)."""
    conditions = []
    for text in filters:
        collection, equals, query = text.partition("=")
        collection, query = collection.strip(), query.strip()
        if not equals or not collection or not query:
            raise ConfigError(
                f"--filter {text!r} is not DB.COLL=JSON",
                hint='write the collection, an equals sign and the query, e.g. --filter inventory.orders=\'{"status": '
                '"open"}\'',
            )
        conditions.append({"data-collection": collection, "filter": query})
    return conditions


def build_signal(signal_type: str, signal_id: str, data: dict[str, Any]) -> Signal:
    """The signal as the connector will read it; ``ConfigError`` (exit 3) when it would reject it."""
    from mongocdc.events.signals import InvalidSignalError, parse_signal

    try:
        return parse_signal({"_id": signal_id, "type": signal_type, "data": data})
    except InvalidSignalError as exc:
        raise ConfigError(f"{signal_type} signal not sent: {exc.reason}", hint=_hint(exc.reason)) from exc


def _warn_unmatched_filters(signal: Signal) -> None:
    """A --filter whose collection no --collections pattern selects filters nothing: say so (it is not an error)."""
    from mongocdc.events.signals import ExecuteSnapshot

    if not isinstance(signal, ExecuteSnapshot):
        return
    for condition in signal.additional_conditions:
        name = condition.data_collection.literal or condition.data_collection.text
        if not any(pattern.matches(name) for pattern in signal.data_collections):
            log.warning(
                "--filter %s: no --collections pattern selects %s, so this filter applies to nothing",
                condition.data_collection.text,
                name,
            )


def choose_channel(settings: Settings, requested: Channel | None) -> Channel:
    """``--channel``, or the first of ``signal.enabled.channels``; a channel the connector does not read is refused."""
    enabled = settings.signal_enabled_channels
    if not enabled:
        raise ConfigError(
            "signal.enabled.channels is none: the connector reads no signals",
            hint="set signal.enabled.channels to source, kafka or source,kafka (as the running connector has it)",
        )
    if requested is None:
        return Channel(enabled[0])
    if requested.value not in enabled:
        raise ConfigError(
            f"--channel {requested.value}: the connector does not read it (signal.enabled.channels is "
            f"{','.join(enabled)})",
            hint=f"use --channel {enabled[0]}, or add {requested.value} to signal.enabled.channels where the "
            "connector runs (and here)",
        )
    return requested


def send_signal(settings: Settings, channel: Channel, signal: Signal) -> Sent:
    """Write ``signal`` through ``channel``; return where it went."""
    from mongocdc import wiring
    from mongocdc.events.signals import serialize_kafka_signal, serialize_signal

    if channel is Channel.source:
        from mongocdc.sources.mongo.signal_collection import SignalCollectionWriter

        namespace = settings.require("signal.data.collection", "mongodb.connection.string")
        document = serialize_signal(signal)
        client = wiring.mongo_client(settings)
        try:
            SignalCollectionWriter(client, namespace).send(document)
        finally:
            client.close()
        return Sent(signal.id, channel, namespace, {"collection": namespace})

    from mongocdc.kafka.config import signal_client_config
    from mongocdc.sources.kafka.signals import KafkaSignalSender, signal_topic

    prefix = settings.require("topic.prefix")
    record = serialize_kafka_signal(signal, topic_prefix=prefix)
    topic = signal_topic(settings)
    sender = KafkaSignalSender(signal_client_config(settings), topic, timeout_s=wiring.request_timeout_s(settings))
    sender.connect(wiring.backoff(settings))
    sent = sender.send(record.key, record.value)
    return Sent(
        sent.id,
        channel,
        f"{sent.topic}[{sent.partition}]@{sent.offset}",
        {"topic": sent.topic, "partition": sent.partition, "offset": sent.offset, "key": record.key},
    )


def _run(
    ctx: typer.Context,
    signal_type: str,
    data: dict[str, Any],
    *,
    signal_id: str | None,
    channel: Channel | None,
    output: Output,
) -> None:
    from mongocdc.events.signals import signal_data

    signal = build_signal(signal_type, signal_id or str(uuid.uuid4()), data)
    _warn_unmatched_filters(signal)
    settings = state(ctx).settings()
    chosen = choose_channel(settings, channel)
    sent = send_signal(settings, chosen, signal)
    # BSON values of filters ({"$oid": …}) as relaxed extended JSON, as the signal was written
    written = json.loads(json_util.dumps(signal_data(signal), json_options=json_util.RELAXED_JSON_OPTIONS))
    result = {
        "id": sent.signal_id,
        "type": signal_type,
        "channel": chosen.value,
        **sent.details,
        "data": written,
    }
    rows = [
        ["id", sent.signal_id],
        ["type", signal_type],
        ["channel", chosen.value],
        ["written to", sent.destination],
    ]
    render.emit(output, result, ["field", "value"], rows, title="Signal sent")


SIGNAL_FLAGS: Final = ("mongodb.connection.string", "kafka.bootstrap.servers", "topic.prefix")
"""Where the two channels write: the source cluster, and the Kafka cluster with the connector's key."""

signal_app = typer.Typer(
    help="Send signals to a running connector.",
    no_args_is_help=True,
    epilog=examples("mongocdc signal send log -c connector.yaml -m 'are signals read?'"),
)
send_app = typer.Typer(
    help="Write a signal for a running connector through the source or kafka channel and print its id.",
    no_args_is_help=True,
    epilog=examples("mongocdc signal send execute-snapshot -c connector.yaml --collections shop.orders"),
)
signal_app.add_typer(send_app, name="send")


@send_app.command(
    "execute-snapshot",
    epilog=examples(
        r"mongocdc signal send execute-snapshot -c connector.yaml --collections 'shop\.orders'",
        'mongocdc signal send execute-snapshot -c connector.yaml --collections shop.orders --filter \'shop.orders={"status": "open"}\'',  # noqa: E501
        r"mongocdc signal send execute-snapshot -c connector.yaml --collections 'shop\..*' --snapshot-type blocking",
    ),
)
@settings_flags(*SIGNAL_FLAGS)
@one_shot
def execute_snapshot(
    ctx: typer.Context,
    collections: CollectionsOpt = None,
    filters: FilterOpt = None,
    snapshot_type: SnapshotTypeOpt = SnapshotKind.incremental,
    signal_id: IdOpt = None,
    channel: ChannelOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Snapshot the collections matching --collections now: incrementally while streaming goes on, or blocking."""
    if not collections:
        raise typer.BadParameter(
            "give at least one, e.g. --collections 'inventory\\.orders' (a regular expression over "
            "<database>.<collection>)",
            param_hint="'--collections'",
        )
    data: dict[str, Any] = {"data-collections": list(collections), "type": snapshot_type.value}
    if filters:
        data["additional-conditions"] = parse_filters(filters)
    _run(ctx, "execute-snapshot", data, signal_id=signal_id, channel=channel, output=output)


@send_app.command(
    "stop-snapshot",
    epilog=examples(
        "mongocdc signal send stop-snapshot -c connector.yaml",
        "mongocdc signal send stop-snapshot -c connector.yaml --collections shop.orders",
    ),
)
@settings_flags(*SIGNAL_FLAGS)
@one_shot
def stop_snapshot(
    ctx: typer.Context,
    collections: CollectionsOpt = None,
    signal_id: IdOpt = None,
    channel: ChannelOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Stop the running incremental snapshot, or only drop the collections matching --collections from it."""
    data: dict[str, Any] = {"type": "incremental"}
    if collections:
        data["data-collections"] = list(collections)
    _run(ctx, "stop-snapshot", data, signal_id=signal_id, channel=channel, output=output)


@send_app.command("pause-snapshot", epilog=examples("mongocdc signal send pause-snapshot -c connector.yaml"))
@settings_flags(*SIGNAL_FLAGS)
@one_shot
def pause_snapshot(
    ctx: typer.Context, signal_id: IdOpt = None, channel: ChannelOpt = None, output: OutputOpt = Output.table
) -> None:
    """Pause the running incremental snapshot after its current chunk; streaming goes on."""
    _run(ctx, "pause-snapshot", {"type": "incremental"}, signal_id=signal_id, channel=channel, output=output)


@send_app.command("resume-snapshot", epilog=examples("mongocdc signal send resume-snapshot -c connector.yaml"))
@settings_flags(*SIGNAL_FLAGS)
@one_shot
def resume_snapshot(
    ctx: typer.Context, signal_id: IdOpt = None, channel: ChannelOpt = None, output: OutputOpt = Output.table
) -> None:
    """Resume a paused incremental snapshot where it stopped."""
    _run(ctx, "resume-snapshot", {"type": "incremental"}, signal_id=signal_id, channel=channel, output=output)


@send_app.command("log", epilog=examples("mongocdc signal send log -c connector.yaml -m 'are signals read?'"))
@settings_flags(*SIGNAL_FLAGS)
@one_shot
def log_signal(
    ctx: typer.Context,
    message: Annotated[
        str,
        typer.Option(
            "--message", "-m", metavar="TEXT", help="Text the connector writes to its log when it reads the signal."
        ),
    ],
    signal_id: IdOpt = None,
    channel: ChannelOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Make the connector write a message to its log (to check that signals reach it)."""
    _run(ctx, "log", {"message": message}, signal_id=signal_id, channel=channel, output=output)
