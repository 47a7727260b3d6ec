"""``mongocdc spark run|status``: the downstream PySpark job that turns CDC topics into tables.

``run`` has ``JobOptions.from_cli`` check its flags and build the job's options from them and
the config file (``topic.prefix``, ``kafka.bootstrap.servers`` and the other ``kafka.*`` client
settings), then launches the job in this process or through ``spark-submit``
(``mongocdc.spark.launcher``); pyspark is imported only once the job starts. ``status`` reads the
checkpoint without starting Spark.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from mongocdc.cli import render
from mongocdc.cli.options import OutputLinesOpt, OutputOpt, examples, settings_flags
from mongocdc.cli.state import LogFormat, LogLevel, Output, state
from mongocdc.errors import UsageError
from mongocdc.spark.options import (
    DEFAULT_CHECKPOINT,
    DEFAULT_DELETE_RETENTION,
    JobOptions,
    StartingOffsets,
    TableFormat,
    default_checkpoint,
    parse_pairs,
    split_list,
)

log = logging.getLogger("mongocdc.cli.spark")

WarehouseOpt = Annotated[
    str,
    typer.Option(
        "--warehouse",
        metavar="PATH",
        help="Where the tables go: a local directory or any Hadoop filesystem URI (hdfs://, s3a://, abfss://…); "
        "one table per collection at <warehouse>/<db>/<collection>.",
    ),
]
CheckpointOpt = Annotated[
    str | None,
    typer.Option(
        "--checkpoint",
        metavar="PATH",
        help="Checkpoint directory of the streaming query: a restarted job continues after the last applied batch. "
        f"Default: <warehouse>/{DEFAULT_CHECKPOINT}.",
        show_default=False,
    ),
]


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
def spark_run(
    ctx: typer.Context,
    warehouse: WarehouseOpt,
    topics: Annotated[
        list[str] | None,
        typer.Option(
            "--topics",
            metavar="TOPIC[,TOPIC…]",
            help="CDC topics to read (repeat, or comma-separate). Default: every <topic.prefix>.* topic.",
            show_default=False,
        ),
    ] = None,
    topic_pattern: Annotated[
        str | None,
        typer.Option(
            "--topic-pattern",
            metavar="REGEX",
            help="Read every topic whose whole name matches, now or later (e.g. 'dbserver1\\..*').",
            show_default=False,
        ),
    ] = None,
    checkpoint: CheckpointOpt = None,
    once: Annotated[
        bool,
        typer.Option("--once", help="Apply every record there is now, then stop (a batch run: availableNow)."),
    ] = False,
    trigger_interval: Annotated[
        str | None,
        typer.Option(
            "--trigger-interval",
            metavar="DURATION",
            help="Start a micro-batch at most this often, e.g. '30 seconds'. Default: as soon as the last ends.",
            show_default=False,
        ),
    ] = None,
    table_format: Annotated[
        TableFormat,
        typer.Option(
            "--format",
            help="Table format: delta (Delta Lake, MERGE), parquet (versioned directories), or auto (delta when "
            "delta-spark is installed).",
        ),
    ] = TableFormat.auto,
    changelog: Annotated[
        bool,
        typer.Option(
            "--changelog",
            help="Also append every change event to <warehouse>/_changelog/<db>/<collection>.",
        ),
    ] = False,
    columns: Annotated[
        str | None,
        typer.Option(
            "--columns",
            metavar="SCHEMA",
            help="Project the document to typed columns: 'name:string,qty:int' or Spark DDL "
            "('name STRING, qty INT'). Default: one JSON string column, document.",
            show_default=False,
        ),
    ] = None,
    schema_file: Annotated[
        Path | None,
        typer.Option(
            "--schema-file",
            metavar="FILE",
            help="Like --columns, from a file holding Spark DDL or a Spark JSON schema.",
            show_default=False,
        ),
    ] = None,
    starting_offsets: Annotated[
        StartingOffsets,
        typer.Option(
            "--starting-offsets",
            help="Where a new checkpoint starts in each topic (a restarted job always continues from its checkpoint).",
        ),
    ] = StartingOffsets.earliest,
    max_offsets_per_trigger: Annotated[
        int | None,
        typer.Option(
            "--max-offsets-per-trigger",
            min=1,
            metavar="N",
            help="Read at most N records per micro-batch (over all partitions).",
            show_default=False,
        ),
    ] = None,
    min_partitions: Annotated[
        int | None,
        typer.Option(
            "--min-partitions",
            min=0,
            metavar="N",
            help="Read each micro-batch in at least N Spark tasks, splitting large Kafka partitions, so a "
            "topic with fewer partitions than cores still uses every core. Default: 3 per core of the job; "
            "0: one task per Kafka partition.",
            show_default=False,
        ),
    ] = None,
    delete_retention: Annotated[
        str,
        typer.Option(
            "--delete-retention",
            metavar="DURATION",
            help="Keep each deleted key's marker at least this long after the delete, in source time (7d, 36h, "
            "90m, 30s, 500ms, or forever). A replay of older changes that arrives after its marker went can bring "
            "the document back until the delete is replayed too: keep it above the topics' retention to be safe.",
        ),
    ] = DEFAULT_DELETE_RETENTION,
    kafka_option: Annotated[
        list[str] | None,
        typer.Option(
            "--kafka-option",
            metavar="KEY=VALUE",
            help="Java Kafka client property for the Spark job (repeat), e.g. sasl.jaas.config=…; added to those "
            "translated from the config's kafka.* settings.",
            show_default=False,
        ),
    ] = None,
    master: Annotated[
        str,
        typer.Option(
            "--master",
            help="Spark master: local[*], local[N], spark://HOST:PORT, yarn or k8s://URL. A non-local master "
            "runs through spark-submit.",
        ),
    ] = "local[*]",
    conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            metavar="KEY=VALUE",
            help="Spark configuration property (repeat), e.g. spark.executor.memory=4g; applied last.",
            show_default=False,
        ),
    ] = None,
    packages: Annotated[
        list[str] | None,
        typer.Option(
            "--packages",
            metavar="GROUP:ARTIFACT:VERSION",
            help="More Maven packages for the job (repeat, or comma-separate), resolved like the Kafka source.",
            show_default=False,
        ),
    ] = None,
    jars: Annotated[
        list[str] | None,
        typer.Option(
            "--jars",
            metavar="JAR[,JAR…]",
            help="Use these jars instead of resolving the Kafka source and Delta from Maven (offline clusters).",
            show_default=False,
        ),
    ] = None,
    submit: Annotated[
        bool,
        typer.Option("--submit", help="Run through spark-submit even on a local master (default: in-process)."),
    ] = False,
    deletion_vectors: Annotated[
        bool,
        typer.Option(
            "--deletion-vectors/--no-deletion-vectors",
            help="Create Delta tables with deletion vectors (a MERGE marks the rows it replaces instead of "
            "rewriting their files; readers need Delta 2.3+ or another engine that supports them). "
            "--no-deletion-vectors: tables any Delta reader can read. Applies to tables the job creates.",
        ),
    ] = True,
    ui: Annotated[
        bool,
        typer.Option(
            "--ui",
            help="Start the Spark UI (off by default: spark.ui.enabled=false; --conf spark.ui.enabled=true is the "
            "same). Its address is logged when Spark has started.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the exact spark-submit command line and do nothing."),
    ] = False,
    query_name: Annotated[
        str, typer.Option("--query-name", help="Name of the streaming query (Spark UI, logs, status).")
    ] = "mongocdc",
    output: OutputLinesOpt = Output.table,
) -> None:
    """Run the Spark job that keeps one table per collection up to date (latest document per key)."""
    from mongocdc.spark import installation, launcher

    conf_pairs = parse_pairs(conf or (), "--conf")
    options = JobOptions.from_cli(
        state(ctx).settings,
        warehouse=warehouse,
        checkpoint=checkpoint,
        topics=topics or (),
        topic_pattern=topic_pattern,
        once=once,
        trigger_interval=trigger_interval,
        changelog=changelog,
        columns=columns,
        schema_file=schema_file,
        starting_offsets=starting_offsets,
        max_offsets_per_trigger=max_offsets_per_trigger,
        min_partitions=min_partitions,
        delete_retention=delete_retention,
        kafka_options=kafka_option or (),
        query_name=query_name,
    )
    spark_home = None
    if installation.frozen():  # the single binary: no pyspark here, the job runs where Spark is
        found = installation.find(os.environ)
        if isinstance(found, installation.SparkPython):
            raise typer.Exit(installation.hand_over(found, sys.argv[1:], os.environ))
        spark_home = found
    plan = launcher.LaunchPlan(
        spark_home=spark_home,
        options=options,
        master=master,
        conf=conf_pairs,
        packages=split_list(packages or ()),
        jars=split_list(jars or ()),
        submit=submit,
        requested_format=table_format,
        spark_log_level="INFO" if state(ctx).log_level is LogLevel.debug else "ERROR",
        json_logs=state(ctx).log_format is LogFormat.json,
        ui=ui,
        deletion_vectors=deletion_vectors,
    )
    if dry_run:
        plan, spark_packages = launcher.prepare(plan)
        command = launcher.submit_command(plan, launcher.plan_conf(plan, spark_packages))
        if output is Output.json:
            render.print_json({"status": "dry run", "command": launcher.printable(command)})
        else:
            typer.echo(launcher.printable(command))
        return

    def on_progress(report: dict[str, Any]) -> None:
        if output is Output.json:
            render.print_json({"status": "batch", "batch": report.get("batchId"), "rows": report.get("numInputRows")})

    result = launcher.launch(plan, on_progress=on_progress)
    _render_run(output, result, plan.options.warehouse)


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
