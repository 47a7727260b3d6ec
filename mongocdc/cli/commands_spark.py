"""``mongocdc spark run|status``: the downstream PySpark job that turns CDC topics into tables.

``run``'s options are declared once, in ``mongocdc.spark.run_flags`` (``with_run_flags`` makes them its Typer
options); it has ``JobOptions.from_cli`` check its flags and build the job's options from them and
the config file (``topic.prefix``, ``kafka.bootstrap.servers`` and the other ``kafka.*`` client
settings), then launches the job in this process or through ``spark-submit``
(``mongocdc.spark.launcher``); pyspark is imported only once the job starts. ``status`` reads the
checkpoint without starting Spark.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mongocdc.cli import render
from mongocdc.cli.options import OutputLinesOpt, OutputOpt, examples, settings_flags
from mongocdc.cli.state import LogFormat, LogLevel, Output, state
from mongocdc.errors import UsageError
from mongocdc.spark.options import DEFAULT_CHECKPOINT, JobOptions, default_checkpoint, parse_pairs
from mongocdc.spark.run_flags import CHECKPOINT, RUN_FLAGS, Flag

if TYPE_CHECKING:
    from mongocdc.spark.installation import SparkHome

log = logging.getLogger("mongocdc.cli.spark")


def option_info(flag: Flag) -> Any:
    """The ``typer.Option`` of one of ``spark run``'s options (``spark/run_flags``)."""
    return typer.Option(*flag.decls, help=flag.help, metavar=flag.metavar, min=flag.min, show_default=flag.show_default)


def typer_option(flag: Flag) -> Any:
    """The Typer declaration of one of ``spark run``'s options: its type and ``option_info``."""
    return Annotated[flag.kind | None if flag.optional else flag.kind, option_info(flag)]


def with_run_flags(command: Callable[..., None]) -> Callable[..., None]:
    """``command(ctx, flags, …)`` as a command whose options are ``RUN_FLAGS`` (after ``ctx``, before its others):
    it receives their values as the mapping ``flags``, by ``Flag.param``."""
    signature = inspect.signature(command, eval_str=True)
    ctx, _flags, *rest = signature.parameters.values()
    declared = [
        inspect.Parameter(
            flag.param,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if flag.required else flag.default,
            annotation=typer_option(flag),
        )
        for flag in RUN_FLAGS
    ]

    @functools.wraps(command)
    def with_flags(**kwargs: Any) -> None:
        flags = {flag.param: kwargs.pop(flag.param) for flag in RUN_FLAGS}
        command(flags=flags, **kwargs)

    with_flags.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[ctx, *declared, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in rest)]
    )
    return with_flags


CheckpointOpt = Annotated[str | None, option_info(CHECKPOINT)]


def _render_run(output: Output, result: dict[str, Any], warehouse: str) -> None:
    if output is Output.json:
        render.print_json(result)
        return
    if result.get("submitted"):
        render.table("spark job finished", ["", "value"], [["master", result["master"]]])
        return
    rows: list[list[Any]] = [["batches", result["batches"]], ["records read", result["rows"]]]
    rows += [[f"applied to {name}", n] for name, n in sorted(result["applied"].items())]
    rows.append(["warehouse", warehouse])
    render.table("spark job stopped", ["", "count"], rows)


def _render_status(output: Output, data: dict[str, Any]) -> None:
    if output is Output.json:
        render.print_json(data)
        return
    hidden = {"offsets", "lag_by_topic", "not_updated_for_s"}
    rows = [[key.replace("_", " "), value] for key, value in data.items() if key not in hidden]
    for topic, lag in sorted(data["lag_by_topic"].items()):
        rows.append([f"lag {topic}", lag])
    for topic, partitions in sorted(data["offsets"].items()):
        rows.append([f"offsets {topic}", ", ".join(f"{p}:{o}" for p, o in sorted(partitions.items()))])
    render.table("spark job status", ["", "value"], rows)


spark_app = typer.Typer(
    help="The downstream PySpark job that turns CDC topics into tables.",
    no_args_is_help=True,
    epilog=examples("mongocdc spark run -c connector.yaml --warehouse /data/warehouse"),
)


@spark_app.command(
    "run",
    epilog=examples(
        "mongocdc spark run -c connector.yaml --warehouse /data/warehouse",
        "mongocdc spark run --bootstrap-servers kafka1:9092 --topic-prefix shop --warehouse s3a://lake/shop --once",
        "mongocdc spark run -c connector.yaml --warehouse /data/warehouse --columns 'name:string,qty:int' --once",
    ),
)
@settings_flags("kafka.bootstrap.servers", "topic.prefix")
@with_run_flags
def spark_run(ctx: typer.Context, flags: Mapping[str, Any], output: OutputLinesOpt = Output.table) -> None:
    """Run the Spark job that keeps one table per collection up to date (latest document per key)."""
    from mongocdc.spark import launcher

    invocation = state(ctx)
    conf = parse_pairs(flags["conf"] or (), "--conf")
    options = JobOptions.from_cli(invocation.settings, flags)
    plan = launcher.LaunchPlan.from_cli(
        options,
        flags,
        conf=conf,
        spark_home=_spark_home(),
        spark_log_level="INFO" if invocation.log_level is LogLevel.debug else "ERROR",
        json_logs=invocation.log_format is LogFormat.json,
    )
    if flags["dry_run"]:
        command = launcher.dry_run_command(plan)
        if output is Output.json:
            render.print_json({"status": "dry run", "command": command})
        else:
            typer.echo(command)
        return

    def on_progress(report: dict[str, Any]) -> None:
        if output is Output.json:
            render.print_json({"status": "batch", "batch": report.get("batchId"), "rows": report.get("numInputRows")})

    result = launcher.launch(plan, on_progress=on_progress)
    _render_run(output, result, plan.options.warehouse)


def _spark_home() -> SparkHome | None:
    """Where the single binary, which has no pyspark, runs the job (``None``: here, or through the installed
    pyspark's ``spark-submit``); a Python with the spark extra found instead runs the command itself, and its
    exit code is this one's."""
    from mongocdc.spark import installation

    if not installation.frozen():
        return None
    found = installation.find(os.environ)
    if isinstance(found, installation.SparkPython):
        raise typer.Exit(installation.hand_over(found, sys.argv[1:], os.environ))
    return found


@spark_app.command(
    "status",
    epilog=examples(
        "mongocdc spark status --warehouse /data/warehouse",
        "mongocdc spark status --checkpoint /data/warehouse/_mongocdc/checkpoint -o json",
        "mongocdc -c connector.yaml spark status --warehouse /data/warehouse --stale-after 120",
    ),
)
@settings_flags("kafka.bootstrap.servers")
def spark_status(
    ctx: typer.Context,
    checkpoint: CheckpointOpt = None,
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            metavar="PATH",
            help=f"Warehouse of the job; its checkpoint is <warehouse>/{DEFAULT_CHECKPOINT} unless --checkpoint.",
            show_default=False,
        ),
    ] = None,
    stale_after: Annotated[
        float,
        typer.Option(
            "--stale-after",
            min=1,
            metavar="SECONDS",
            help="Call a job that says it runs 'stale' when its job.json was not rewritten for this long (a running "
            "job rewrites it every 5 s and after every batch), or at once when its process is gone from this host.",
        ),
    ] = 60.0,
    output: OutputOpt = Output.table,
) -> None:
    """Show the streaming query's progress from its checkpoint: whether it still runs, batches, rows/s, lag
    (against the topics' end offsets now, asked of the job's broker or --bootstrap-servers), offsets."""
    from mongocdc.spark.status import read_status, status_with_lag

    if checkpoint is None and warehouse is None:
        raise UsageError("give --checkpoint or --warehouse", hint="the same as the job runs with")
    location = checkpoint or default_checkpoint(warehouse or "")
    status = read_status(location)
    invocation = state(ctx)
    client = dict(invocation.settings().kafka_client)
    if "kafka.bootstrap.servers" not in invocation.overrides and invocation.config is None:
        client.pop("bootstrap.servers", None)  # the job's own broker (job.json), not the default address
    _render_status(output, status_with_lag(status, client, stale_after_s=stale_after))
