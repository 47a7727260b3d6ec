"""``mongocdc discover`` and ``mongocdc topic dump|compare``."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from mongocdc.cli import render
from mongocdc.cli.options import OutputOpt, one_shot, settings_flags
from mongocdc.cli.state import Output, state
from mongocdc.errors import ExitCode, UsageError


def decode_bytes(raw: bytes | None) -> Any:
    """JSON when the bytes are JSON, text when they are UTF-8, else ``{"base64": …}``."""
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_timestamp(value: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (UTC when it has no offset)."""
    if value.isdigit():
        return int(value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"--timestamp {value!r} is neither epoch milliseconds nor an ISO 8601 time",
            hint="for example --timestamp 2026-01-31T12:00:00Z or --timestamp 1769860800000",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


@settings_flags("mongodb.connection.string")
@one_shot
def discover(ctx: typer.Context, output: OutputOpt = Output.table) -> None:
    """Connect through the seed hosts and report the topology (replica set, sharded cluster or standalone)."""
    from mongocdc import wiring
    from mongocdc.sources.mongo.topology import discover as discover_topology

    settings = state(ctx).settings()
    client = wiring.mongo_client(settings)
    try:
        topology = discover_topology(client)
    finally:
        client.close()
    data = topology.to_dict()
    if topology.kind == "standalone":
        data["capturable"] = False
        data["reason"] = "standalone server: no oplog; run it as a single-member replica set"
    else:
        data["capturable"] = True
    rows: list[list[Any]] = [["kind", topology.kind], ["version", topology.version]]
    if topology.kind == "replica_set":
        rows += [["replica set", topology.replica_set], ["primary", topology.primary]]
        rows += [["member", m] for m in topology.members]
    elif topology.kind == "sharded":
        rows += [[f"shard {s.name}", f"{s.replica_set or '-'}: {', '.join(s.hosts)}"] for s in topology.shards]
    else:
        rows.append(["capturable", data["reason"]])
    render.emit(output, data, ["field", "value"], rows, title="MongoDB topology")


topic_app = typer.Typer(help="Inspect Kafka topics.", no_args_is_help=True)


@topic_app.command("dump")
@settings_flags("kafka.bootstrap.servers")
def dump(
    ctx: typer.Context,
    topic: Annotated[
        str, typer.Argument(help="Topic to read, e.g. <topic.prefix>.<db>.<collection>.", show_default=False)
    ],
    output: OutputOpt = Output.table,
    offset: Annotated[
        int | None, typer.Option("--offset", help="Start at this offset in every partition.", show_default=False)
    ] = None,
    timestamp: Annotated[
        str | None,
        typer.Option(
            "--timestamp",
            help="Start at the first record at or after this time (ISO 8601 or epoch ms).",
            show_default=False,
        ),
    ] = None,
    max_messages: Annotated[
        int | None,
        typer.Option("--max-messages", "-n", help="Stop after this many records.", min=1, show_default=False),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Stop when no record arrives for this many seconds.", min=0.1)
    ] = 10.0,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep waiting for new records.")] = False,
) -> None:
    """Print a topic's records (key, value decoded from JSON, headers) from the beginning, an offset or a time."""
    from mongocdc.kafka.reader import StartAt, TopicReader

    if offset is not None and timestamp is not None:
        raise typer.BadParameter("give --offset or --timestamp, not both")
    settings = state(ctx).settings()
    start = StartAt(offset=offset, timestamp_ms=parse_timestamp(timestamp) if timestamp else None)
    reader = TopicReader(settings.kafka_client)
    try:
        for record in reader.read(topic, start, max_messages=max_messages, timeout=timeout, follow=follow):
            item = {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "timestamp": record.timestamp_ms,
                "key": decode_bytes(record.key),
                "value": decode_bytes(record.value),
                "headers": {k: decode_bytes(v) for k, v in record.headers},
            }
            if output is Output.json:
                render.print_json(item)
            else:
                when = (
                    datetime.fromtimestamp(record.timestamp_ms / 1000, tz=UTC).isoformat()
                    if record.timestamp_ms is not None
                    else "-"
                )
                render.stdout.rule(f"{record.topic} [{record.partition}] @{record.offset}  {when}")
                render.stdout.print_json(data={"key": item["key"], "value": item["value"], "headers": item["headers"]})
    finally:
        reader.close()


@topic_app.command("compare")
@settings_flags("kafka.bootstrap.servers")
def compare_topics(
    ctx: typer.Context,
    reference_prefix: Annotated[
        str,
        typer.Argument(
            help="topic.prefix of the reference connector (Debezium) that captured the same source.",
            show_default=False,
        ),
    ],
    prefix: Annotated[
        str | None,
        typer.Option("--prefix", help="topic.prefix of the compared side [default: the config's].", show_default=False),
    ] = None,
    output: OutputOpt = Output.table,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Stop reading a topic when no record arrives for this long.", min=0.1)
    ] = 10.0,
) -> None:
    """Compare mongocdc's topics with Debezium's, record by record (exit 6 when they differ).

    Run Debezium's MongoDB connector and mongocdc on the same source with two topic
    prefixes, stop both, then compare: every data, transaction and heartbeat topic of the
    two prefixes is read to its end and matched per topic and key. Only what cannot be equal
    is ignored: the prefix, the connector version, wall-clock times, an update's looked-up
    document read later, and the number of heartbeats.

    Example: mongocdc -c mongocdc.yaml topic compare dbserver1
    """
    from mongocdc.events.compare import Record, compare
    from mongocdc.kafka.reader import StartAt, TopicReader

    settings = state(ctx).settings()
    compared_prefix = prefix or settings.topic_prefix
    if not compared_prefix:
        raise UsageError(
            "no topic prefix to compare with",
            hint="give --prefix, or a config (-c) with mongocdc's topic.prefix",
        )
    if compared_prefix == reference_prefix:
        raise UsageError(
            f"both sides have the topic prefix {reference_prefix!r}",
            hint="run the two connectors with different topic.prefix values and give Debezium's as the argument",
        )
    heartbeat = settings.topic_heartbeat_prefix
    reader = TopicReader(settings.kafka_client)
    try:
        names = reader.topics(timeout=timeout)
        records: dict[str, list[Record]] = {reference_prefix: [], compared_prefix: []}
        for side in records:
            wanted = [t for t in names if t.startswith(side + ".") or t == f"{heartbeat}.{side}"]
            for topic in wanted:
                for r in reader.read(topic, StartAt(), timeout=timeout):
                    records[side].append(Record(r.topic, r.partition, r.key, r.value, r.headers))
    finally:
        reader.close()
    if not records[reference_prefix]:
        raise UsageError(
            f"no topics of the prefix {reference_prefix!r} on {settings.kafka_client.get('bootstrap.servers')}",
            hint="give the topic.prefix the Debezium connector was configured with",
        )
    result = compare(
        records[reference_prefix],
        records[compared_prefix],
        reference_prefix=reference_prefix,
        compared_prefix=compared_prefix,
        heartbeat_prefix=heartbeat,
        partitions=names,
    )
    if output is Output.json:
        render.print_json(result.to_dict())
    else:
        rows = [[topic, a, b] for topic, (a, b) in sorted(result.records.items())]
        render.emit(output, result.to_dict(), ["topic", reference_prefix, compared_prefix], rows, title="records")
        for difference in result.differences:
            render.stdout.print(difference.describe(), markup=False, highlight=False)
        verdict = "identical" if result.identical else f"{len(result.differences)} differences"
        render.stdout.print(verdict, markup=False, highlight=False)
    if not result.identical:
        raise typer.Exit(int(ExitCode.DIFFERENT))
