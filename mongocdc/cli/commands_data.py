"""``mongocdc discover`` and ``mongocdc topic list|dump|compare``."""

from __future__ import annotations

import base64
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from click.core import ParameterSource

from mongocdc.cli import render
from mongocdc.cli.options import OutputOpt, OutputRecordsOpt, examples, one_shot, settings_flags
from mongocdc.cli.record_format import OFFSET_FORMS, RecordFormat, format_help, parse_offsets
from mongocdc.cli.state import Output, state
from mongocdc.cli.times import time_help
from mongocdc.errors import ExitCode, UsageError

if TYPE_CHECKING:  # the reader imports confluent_kafka: not for --help
    from mongocdc.kafka.reader import DumpRecord, StartAt


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


DISCOVER_EXAMPLES: Final = examples(
    "mongocdc discover --connection-string 'mongodb://mongo1:27017/?replicaSet=rs0'",
    "mongocdc discover -c connector.yaml -o json",
)


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


topic_app = typer.Typer(
    help="Inspect Kafka topics.",
    no_args_is_help=True,
    epilog=examples("mongocdc topic list shop. --bootstrap-servers kafka1:9092"),
)


TABLE_VALUE_WIDTH: Final = 100
"""The longest key or value a ``topic dump`` table shows; a longer one ends in ``…`` (``-o json`` and ``--raw``
print them whole)."""


def _one_line(decoded: Any) -> str:
    """A decoded key or value as one table cell: compact JSON, text as it is, ``null`` for none."""
    text = decoded if isinstance(decoded, str) else json.dumps(decoded, separators=(",", ":"))
    return text if len(text) <= TABLE_VALUE_WIDTH else text[: TABLE_VALUE_WIDTH - 1] + "…"


def _iso_ms(timestamp_ms: int | None) -> str:
    if timestamp_ms is None:
        return "-"
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _DumpTable:
    """``topic dump -o table``: the records read so far, as one table, printed when the reader waits (so a
    ``--follow`` prints a table per burst of records) and at the end."""

    COLUMNS: Final = ("partition", "offset", "timestamp", "key", "value", "headers")

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.rows: list[list[Any]] = []

    def add(self, record: Any) -> None:
        headers = ",".join(f"{k}={_one_line(decode_bytes(v))}" for k, v in record.headers)
        self.rows.append(
            [
                record.partition,
                record.offset,
                _iso_ms(record.timestamp_ms),
                _one_line(decode_bytes(record.key)),
                _one_line(decode_bytes(record.value)),
                headers,
            ]
        )

    def flush(self) -> None:
        if self.rows:
            render.table(self.topic, self.COLUMNS, self.rows)
            self.rows = []


@topic_app.command(
    "dump",
    epilog=examples(
        "mongocdc topic dump shop.inventory.orders -n 10",
        "mongocdc topic dump shop.inventory.orders -p 0 --offset -5 -o json",
        "mongocdc topic dump shop.inventory.orders --offset @2026-11-26T10:00:00Z --key-only",
        "mongocdc topic dump shop.inventory.orders --offset @2026-11-26T10:00:00Z --offset e@2026-11-26T11:00:00Z",
        "mongocdc topic dump shop.inventory.orders --format '%p:%o %T %k\\t%s\\n'",
    ),
)
@settings_flags("kafka.bootstrap.servers")
def dump(
    ctx: typer.Context,
    topic: Annotated[
        str, typer.Argument(help="Topic to read, e.g. <topic.prefix>.<db>.<collection>.", show_default=False)
    ],
    output: OutputRecordsOpt = Output.table,
    partition: Annotated[
        list[int] | None,
        typer.Option(
            "--partition",
            "-p",
            help="Read only this partition (repeat for more) [default: all].",
            min=0,
            show_default=False,
        ),
    ] = None,
    offset: Annotated[
        list[str] | None,
        typer.Option(
            "--offset",
            metavar="beginning|end|N|-N|@TIME|e@TIME",
            help=f"Where to start in each partition, as kcat's -o: {OFFSET_FORMS}. TIME is "
            f"{time_help('ms')}. [default: beginning]",
            show_default=False,
        ),
    ] = None,
    timestamp: Annotated[
        str | None,
        typer.Option(
            "--timestamp",
            metavar="TIME",
            help=f"Start at the first record at or after this time (the same as --offset @TIME): {time_help('ms')}.",
            show_default=False,
        ),
    ] = None,
    record_format: Annotated[
        str | None,
        typer.Option("--format", metavar="FMT", help=format_help(), show_default=False),
    ] = None,
    key_only: Annotated[
        bool, typer.Option("--key-only", help="Print only each record's key, as it is, one per line.")
    ] = False,
    raw: Annotated[
        bool,
        typer.Option("--raw", help="Print only each record's value, as it is (no JSON reformatting), one per line."),
    ] = False,
    max_messages: Annotated[
        int | None,
        typer.Option("--max-messages", "-n", help="Stop after this many records.", min=1, show_default=False),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Stop when no record arrives for this many seconds.", min=0.1)
    ] = 10.0,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep waiting for new records.")] = False,
) -> None:
    """Print a topic's records: a table, JSON lines (key and value decoded), or as they are (--raw, --key-only,
    --format).

    By default every partition is read from its beginning to its end; --offset and --timestamp start elsewhere,
    -p reads some partitions only, --follow keeps waiting for new records. -o table shows keys and values on one
    line each, longer than 100 characters shortened; -o json prints one object per record.
    """
    modes = _dump_modes(ctx, record_format=record_format, key_only=key_only, raw=raw)
    start = parse_offsets(offset or [], timestamp)
    text_format = RecordFormat.compile(record_format if record_format is not None else "%k\\n" if key_only else "%s\\n")
    table = _DumpTable(topic) if output is Output.table and not modes else None
    _dump_records(
        ctx,
        topic,
        start,
        partitions=partition,
        max_messages=max_messages,
        timeout=timeout,
        follow=follow,
        text_format=text_format if modes else None,
        table=table,
    )


def _dump_modes(ctx: typer.Context, *, record_format: str | None, key_only: bool, raw: bool) -> list[str]:
    """The as-they-are output options given (--format, --key-only, --raw): at most one, and not with --output."""
    modes = [name for name, given in (("--format", record_format), ("--key-only", key_only), ("--raw", raw)) if given]
    if len(modes) > 1:
        raise UsageError(f"give one of {', '.join(modes)}", hint="--key-only is --format '%k\\n', --raw '%s\\n'")
    if modes and ctx.get_parameter_source("output") is ParameterSource.COMMANDLINE:
        raise UsageError(
            f"{modes[0]} prints records as they are: it takes no --output",
            hint="leave out -o, or leave out " + modes[0],
        )
    return modes


def _dump_records(
    ctx: typer.Context,
    topic: str,
    start: StartAt,
    *,
    partitions: list[int] | None,
    max_messages: int | None,
    timeout: float,
    follow: bool,
    text_format: RecordFormat | None,
    table: _DumpTable | None,
) -> None:
    """Read ``topic`` and print each record: rendered by ``text_format`` when given, else into ``table`` when
    given, else as a JSON line."""
    from mongocdc.kafka.reader import TopicReader

    settings = state(ctx).settings()
    reader = TopicReader(settings.kafka_client)
    try:
        records = reader.read(
            topic,
            start,
            partitions=partitions,
            max_messages=max_messages,
            timeout=timeout,
            follow=follow,
            on_idle=table.flush if table is not None else None,
        )
        for record in records:
            if text_format is not None:
                sys.stdout.buffer.write(text_format.render(record))
                sys.stdout.buffer.flush()
            elif table is not None:
                table.add(record)
            else:
                render.print_json(_dump_json(record))
        if table is not None:
            table.flush()
    finally:
        reader.close()


def _dump_json(record: DumpRecord) -> dict[str, Any]:
    """``topic dump -o json``: one record, its key, value and headers decoded."""
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp_ms,
        "key": decode_bytes(record.key),
        "value": decode_bytes(record.value),
        "headers": {k: decode_bytes(v) for k, v in record.headers},
    }


@topic_app.command("list", epilog=examples("mongocdc topic list", "mongocdc topic list shop. -o json"))
@settings_flags("kafka.bootstrap.servers")
def list_topics(
    ctx: typer.Context,
    prefix: Annotated[
        str | None,
        typer.Argument(
            help="List only the topics whose names start with this, e.g. <topic.prefix>.", show_default=False
        ),
    ] = None,
    output: OutputOpt = Output.table,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Give up a request after this many seconds.", min=0.1)
    ] = 10.0,
) -> None:
    """List the cluster's topics with their partitions and messages (from each partition's low and high offsets).

    The message count is the sum over partitions of the high offset minus the low one: exact for a topic of
    plain records, an upper bound for a compacted topic or one written in transactions.
    """
    from mongocdc.kafka.reader import TopicReader

    settings = state(ctx).settings()
    reader = TopicReader(settings.kafka_client)
    try:
        names = {t: n for t, n in reader.topics(timeout=timeout).items() if prefix is None or t.startswith(prefix)}
        listed = []
        for topic, count in names.items():
            marks = reader.watermarks(topic, count, timeout=timeout)
            listed.append({"topic": topic, "partitions": count, "messages": sum(high - low for low, high in marks)})
    finally:
        reader.close()
    rows = [[t["topic"], t["partitions"], t["messages"]] for t in listed]
    render.emit(output, listed, ["topic", "partitions", "messages"], rows, title="topics")


@topic_app.command(
    "compare",
    epilog=examples(
        "mongocdc topic compare dbserver1 -c mongocdc.yaml",
        "mongocdc topic compare dbserver1 --prefix shop --bootstrap-servers kafka1:9092 -o json",
    ),
)
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
