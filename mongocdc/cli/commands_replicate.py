"""``mongocdc replicate`` and ``mongocdc failover translate``: cross-cluster replication and consumer failover."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from mongocdc.cli import render
from mongocdc.cli.graceful_stop import GracefulStop
from mongocdc.cli.options import OutputLinesOpt, OutputOpt, examples, one_shot, settings_flags
from mongocdc.cli.state import Output, state

if TYPE_CHECKING:
    from mongocdc.replication.failover import TranslationReport
    from mongocdc.replication.status import ReplicationStats

log = logging.getLogger("mongocdc.replicate")

REPLICATION_FLAGS: Final = ("src.kafka.bootstrap.servers", "dest.kafka.bootstrap.servers", "topics")
"""The two clusters and the topics, which both commands take."""

failover_app = typer.Typer(
    help="Move consumer groups between replicated Kafka clusters.",
    no_args_is_help=True,
    epilog=examples("mongocdc failover translate -c replicate.yaml --group orders-app"),
)


@failover_app.command(
    "translate",
    epilog=examples(
        "mongocdc failover translate -c replicate.yaml --group orders-app",
        "mongocdc failover translate -c replicate.yaml --group orders-app --apply",
    ),
)
@settings_flags(*REPLICATION_FLAGS)
@one_shot
def failover_translate(
    ctx: typer.Context,
    group: Annotated[
        str, typer.Option("--group", "-g", metavar="GROUP", help="Consumer group whose offsets are translated.")
    ],
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="Write the translated offsets to the group on the target (refused, exit 2, while the group has "
            "active members there).",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Check and show what --apply would write, without writing anything."),
    ] = False,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="With --apply: write the translated partitions even when some committed partition cannot be "
            "translated (refused otherwise, exit 2, naming them).",
        ),
    ] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Translate a consumer group's committed offsets on the source cluster to offsets on the target.

    Per partition: the committed source offset, the target offset and how many records the group
    will read again from there (read from the target's copies and their provenance): exact (none),
    sync (that many), unknown (?); timestamp for topics without offset syncs, none when it cannot be
    translated (warned, and --apply refuses). Works with the source cluster unreachable, from the
    checkpoints `replicate` keeps on the target. Never past a record the group has not consumed.
    """
    from mongocdc import wiring_replication

    if apply and dry_run:
        raise typer.BadParameter("give --apply (write the offsets) or --dry-run (only check and show), not both")
    settings = state(ctx).settings()
    translator = wiring_replication.failover_translator(settings)
    try:
        report = translator.translate(group)
        if apply or dry_run:
            report = translator.apply(report, dry_run=dry_run or not apply, allow_partial=allow_partial)
    finally:
        translator.close()
    _render_translation(output, report)


REPLICATE_EXAMPLES: Final = examples(
    r"mongocdc replicate --source kafka-a:9092 --target kafka-b:9092 --topics 'shop\..*'",
    "mongocdc replicate -c replicate.yaml --status-interval 30",
)


@settings_flags(*REPLICATION_FLAGS, "groups", "topic.rename.format", "name")
def replicate(
    ctx: typer.Context,
    status_interval: Annotated[
        float,
        typer.Option(
            "--status-interval",
            metavar="SECONDS",
            help="Seconds between status lines; a replicator with nothing new (nothing copied, the lag "
            "unchanged) prints none.",
            min=0.1,
        ),
    ] = 10.0,
    shutdown_timeout: Annotated[
        float,
        typer.Option(
            "--shutdown-timeout",
            metavar="SECONDS",
            help="On SIGTERM/SIGINT, how long to wait for the target to acknowledge the copies in flight; then "
            "commit only what it acknowledged and exit 4.",
            min=0.0,
        ),
    ] = 30.0,
    output: OutputLinesOpt = Output.table,
) -> None:
    """Copy topics to a second Kafka cluster until SIGTERM/SIGINT, with offset syncs and group checkpoints.

    At-least-once: source offsets are committed only after the target acknowledged the copies. Each
    copy keeps key, value, headers, timestamp and partition and gets a mongocdc.provenance header;
    records that came from the target are never copied back (active/active). A stop takes at most
    --shutdown-timeout, even with the target down (exit 4 when it did not acknowledge everything).
    """
    from mongocdc import wiring_replication
    from mongocdc.replication.status import StatusGate

    settings = state(ctx).settings()
    stopper = GracefulStop()
    gate = StatusGate()

    def on_status(stats: ReplicationStats) -> None:
        new = gate.news(stats)
        if new is None:  # idle: nothing copied or skipped, the lag unchanged since the last line
            return
        if output is Output.json:
            render.print_json({"status": "replicating", "at": datetime.now(UTC).isoformat(), **stats.to_dict()})
        else:
            log.info("%s", status_line(stats, new))

    replicator = wiring_replication.replicator(settings, shutdown_timeout_s=shutdown_timeout)
    with stopper.installed():
        try:
            stats = replicator.run(stopper.event, on_status, status_interval)
        finally:
            replicator.close()
    if output is Output.json:
        render.print_json({"status": "stopped", **stats.to_dict()})
    else:
        render.table("replication stopped", ["", "count"], stats.summary_rows())
    if stopper.exit_code:
        raise typer.Exit(stopper.exit_code)


def status_line(stats: ReplicationStats, new: int) -> str:
    """One status line in words: what was copied since the last line, in all, and how far behind."""
    lag = "lag unknown" if stats.lag is None else f"{stats.lag:,} behind"
    line = f"copied {new:,} {_records(new)} ({stats.records_per_s:,.0f}/s), {stats.copied:,} in all, {lag}"
    if stats.skipped_loops:
        line += f"; {stats.skipped_loops:,} not copied back (they came from the target)"
    return line


def _records(n: int) -> str:
    return "record" if n == 1 else "records"


_TITLES: Final = {"would write": "offsets --apply would write"}
"""The table title of a report's ``action`` where "offsets <action>" does not read (``--dry-run``)."""


def _render_translation(output: Output, report: TranslationReport) -> None:
    rows: list[list[Any]] = [
        [
            row.topic,
            "*" if row.partition is None else row.partition,
            "—" if row.committed is None else row.committed,
            row.target_topic or "—",
            "—" if row.target_partition is None else row.target_partition,
            "—" if row.target_offset is None else row.target_offset,
            row.method,
            "?" if row.again is None else row.again,
        ]
        for row in report.rows
    ]
    source = report.source + ("" if report.source_reachable else " (unreachable: from checkpoints)")
    render.emit(
        output,
        report.to_dict(),
        ["topic", "partition", "committed", "target topic", "target partition", "target offset", "method", "again"],
        rows,
        title=f"group {report.group} from {source}: " + _TITLES.get(report.action, f"offsets {report.action}"),
    )
