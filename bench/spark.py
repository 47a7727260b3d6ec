"""The Spark job against a plain Spark read-and-write of the same Kafka topic, and its merge alone.

The events are Kafka-shaped change records (a Debezium value around a ~1 KB document; 60 %
updates of existing keys, 20 % inserts, 10 % deletes, 10 % replays of older events) generated
by Spark and staged as Parquet, then produced to a topic of ``--partitions`` partitions on a
Kafka broker started here (or ``--bootstrap-servers``). Both sides run in one local session.

* **job (the target)**: a table of ``--spark-rows`` documents is built from snapshot reads (not
  timed); then the clock runs around the job itself, ``mongocdc.spark.job.run`` with ``--once``
  over the topic and a fresh checkpoint: what ``mongocdc spark run --once`` does after the
  session is up (Kafka source, parse, merge by position, the Delta or Parquet table, the
  checkpoint). Baseline: the plain Structured Streaming copy of the same topic into a table of
  the same format (``readStream.format("kafka")`` → ``writeStream.format(<format>)``, also
  ``availableNow`` with a checkpoint): reading and writing the data with nothing in between.
* **merge alone (no target)**: the job's ``BatchApplier`` applies the staged Parquet events as
  one batch; baseline ``spark.read.parquet(events).write.format(<format>)``. No Kafka on either
  side, so this shows the merge's own cost against the cheapest possible copy.

Each side runs ``--repeat`` times after ``--spark-warmup`` uncounted warm-up rounds (3; none with
``--no-warmup``), alternating which goes first; the ratio is of the median rates. The warm-up rounds
are reported too: the JVM's JIT compiles the job's generated code over its first few batches (the
job's plans are many more than the plain copy's one), so the first rounds show what a freshly started
job pays, the counted ones what a running stream pays per batch. Target: job ratio ≥ 0.5.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import Timing, comparison, create_topics, kafka_broker, median, ratio_row

log = logging.getLogger("bench.spark")

TARGET_RATIO = 0.5
DOC_PAD = 900


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spark-rows", type=int, default=100_000, help="rows of the spark benchmark's table (100000)")
    parser.add_argument(
        "--spark-events", type=int, default=100_000, help="change events the spark benchmark applies (100000)"
    )
    parser.add_argument(
        "--spark-format", choices=("auto", "delta", "parquet"), default="auto", help="spark table format (auto)"
    )
    parser.add_argument(
        "--spark-warmup",
        type=int,
        default=3,
        help="uncounted warm-up rounds of each spark comparison (3; the JIT settles over the first batches)",
    )
    parser.add_argument(
        "--spark-small-events",
        type=int,
        default=200,
        help="changes per small batch of the spark benchmark's latency row (200; 0: skip)",
    )


def _session(table_format: str) -> Any:
    """A local session configured as ``mongocdc spark run`` configures its own (``launcher.plan_conf``).

    The job's JVM settings (heap, collector, code cache, partition counts) are part of what it does, and
    the plain copy runs in the same session, so both sides get them.
    """
    from mongocdc.spark.launcher import LaunchPlan, plan_conf, prepare, start_session
    from mongocdc.spark.options import JobOptions, TableFormat
    from mongocdc.spark.packages import ensure_packages
    from tests.spark_support import ivy_dir

    options = JobOptions(bootstrap_servers="unused", warehouse="unused", checkpoint="unused", topics=("unused",))
    plan, spark_packages = prepare(LaunchPlan(options, requested_format=TableFormat(table_format)))
    conf = {**plan_conf(plan, spark_packages), "spark.jars.ivy": str(ivy_dir()), "spark.ui.enabled": "false"}
    ensure_packages(conf["spark.jars.packages"].split(","), ivy_dir())
    session = start_session(plan, conf)
    heap = session.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    log.info("spark: driver heap %.1f GB, %s", heap / 2**30, conf.get("spark.driver.extraJavaOptions", ""))
    return session


def _events(spark: Any, path: str, *, first: int, count: int, kind: str, later: int = 0, partitions: int = 3) -> None:
    """Write ``count`` Kafka-shaped change records for keys from ``first`` as Parquet (``later``: ms added to ts_ms)."""
    from pyspark.sql import functions as F  # noqa: N812

    ids = spark.range(count).withColumn("i", F.col("id"))
    # hex digests, not a run of one letter: a run compresses to nothing and made the baseline's write nearly free
    digests = [F.sha2(F.concat(F.col("i").cast("string"), F.lit(f"/{n}")), 256) for n in range(DOC_PAD // 64 + 1)]
    pad = F.substring(F.concat(*digests), 1, DOC_PAD)
    if kind == "snapshot":
        op, key, ts, ord_ = F.lit("r"), F.col("i") + first, F.lit(1_000_000), F.lit(1)
    else:
        bucket = F.col("i") % 10
        op = F.when(bucket < 6, "u").when(bucket < 8, "c").when(bucket < 9, "d").otherwise("u")
        # updates and deletes hit existing keys, inserts new ones; bucket 9 replays an old update
        key = F.when(bucket.isin(6, 7), F.col("i") + first).otherwise(F.col("i"))
        ts = F.when(bucket == 9, F.lit(1_500_000)).otherwise(F.lit(2_000_000 + later) + F.col("i"))
        ord_ = F.lit(1)
    doc = F.to_json(
        F.struct(key.alias("_id"), F.lit("customer").alias("name"), F.col("i").alias("qty"), pad.alias("note"))
    )
    source = F.struct(
        ts.alias("ts_ms"), ord_.alias("ord"), F.lit("bench").alias("db"), F.lit("orders").alias("collection")
    )
    value = F.to_json(
        F.struct(
            F.when(op == "d", F.lit(None)).otherwise(doc).alias("after"),
            source.alias("source"),
            op.alias("op"),
            F.lit(0).alias("ts_ms"),
        )
    )
    rows = ids.select(
        F.lit("bench.bench.orders").alias("topic"),
        (F.col("i") % partitions).cast("int").alias("partition"),
        F.col("i").alias("offset"),
        F.to_json(F.struct(key.cast("string").alias("id"))).cast("binary").alias("key"),
        value.cast("binary").alias("value"),
    )
    rows.write.mode("overwrite").parquet(path)


def _compare(
    args: argparse.Namespace, name: str, mongocdc: Callable[[str], Timing], baseline: Callable[[str], Timing]
) -> dict[str, Any]:
    """``--repeat`` runs of each side after ``--spark-warmup`` warm-up rounds, alternating which goes first."""
    warm: dict[str, list[float]] = {"mongocdc": [], "baseline": []}
    rounds = [(f"warmup{n}", True) for n in range(args.spark_warmup if args.warmup else 0)]
    rounds += [(str(rep), False) for rep in range(args.repeat)]
    mine: list[Timing] = []
    bare: list[Timing] = []
    for number, (tag, warmup) in enumerate(rounds):
        sides = [("baseline", baseline), ("mongocdc", mongocdc)]
        for side, fn in sides if number % 2 == 0 else list(reversed(sides)):
            timing = fn(tag)
            if warmup:
                warm[side].append(round(timing.seconds, 2))
            else:
                (bare if side == "baseline" else mine).append(timing)
            log.info(
                "spark %s %s run %s: %d events in %.2f s = %.0f/s",
                name,
                side,
                tag,
                timing.items,
                timing.seconds,
                timing.rate,
            )
    return {**comparison(mine, bare, TARGET_RATIO), "warmup_seconds": warm}


def bench_spark(args: argparse.Namespace) -> dict[str, Any]:
    from mongocdc.spark import environment
    from mongocdc.spark.job import BatchApplier, kafka_source_options, run
    from mongocdc.spark.launcher import resolve_format
    from mongocdc.spark.options import JobOptions, TableFormat

    versions = {"pyspark": environment.pyspark_version(), "delta_spark": environment.delta_version()}
    table_format = resolve_format(TableFormat(args.spark_format), versions["delta_spark"] is not None)
    fmt = table_format.value
    root = Path(tempfile.mkdtemp(prefix="mongocdc-bench-spark-"))
    with kafka_broker(args) as (bootstrap, kafka):
        started = time.perf_counter()
        spark = _session(args.spark_format)
        log.info("spark: local session up in %.1f s (format %s)", time.perf_counter() - started, fmt)
        try:
            snapshot, changes = str(root / "snapshot"), str(root / "changes")
            parts = args.partitions
            _events(spark, snapshot, first=0, count=args.spark_rows, kind="snapshot", partitions=parts)
            _events(spark, changes, first=args.spark_rows, count=args.spark_events, kind="changes", partitions=parts)
            topic = f"bench-spark-{uuid.uuid4().hex[:8]}"  # a given cluster may hold an earlier run's topic
            create_topics(bootstrap, [topic], parts, append_time=False)
            spark.read.parquet(changes).select("key", "value", "partition").write.format("kafka").option(
                "kafka.bootstrap.servers", bootstrap
            ).option("topic", topic).save()

            def options_for(tag: str, **more: Any) -> JobOptions:
                return JobOptions(
                    bootstrap_servers=bootstrap,
                    warehouse=str(root / f"wh-{tag}"),
                    checkpoint=str(root / f"cp-{tag}"),
                    table_format=table_format,
                    **more,
                )

            def with_table(options: JobOptions) -> BatchApplier:
                apply = BatchApplier(spark, options)
                apply(spark.read.parquet(snapshot), 0)  # the table, not timed
                return apply

            def clean(*paths: str) -> None:
                for path in paths:
                    shutil.rmtree(path, ignore_errors=True)

            def job_mongocdc(tag: str) -> Timing:
                options = options_for(f"job-{tag}", topics=(topic,), once=True)
                with_table(options)
                t0 = time.perf_counter()
                summary = run(spark, options)
                seconds = time.perf_counter() - t0
                clean(options.warehouse, options.checkpoint)
                if summary.rows != args.spark_events:
                    raise RuntimeError(f"the job read {summary.rows} records of {args.spark_events}")
                return Timing(args.spark_events, seconds)

            def job_baseline(tag: str) -> Timing:
                out, checkpoint = str(root / f"plain-job-{tag}"), str(root / f"plain-cp-{tag}")
                # the same Kafka source settings as the job's, so the ratio measures what the job does
                # with the records, not how it reads them
                source = kafka_source_options(options_for(f"plain-{tag}"), spark.sparkContext.defaultParallelism)
                records = spark.readStream.format("kafka").options(**source).option("subscribe", topic).load()
                t0 = time.perf_counter()
                query = records.writeStream.format(fmt).option("checkpointLocation", checkpoint)
                query.trigger(availableNow=True).start(out).awaitTermination()
                seconds = time.perf_counter() - t0
                clean(out, checkpoint)
                return Timing(args.spark_events, seconds)

            def merge_mongocdc(tag: str) -> Timing:
                options = options_for(f"merge-{tag}")
                apply = with_table(options)
                t0 = time.perf_counter()
                apply(spark.read.parquet(changes), 1)
                seconds = time.perf_counter() - t0
                clean(options.warehouse)
                return Timing(args.spark_events, seconds)

            def merge_baseline(tag: str) -> Timing:
                out = str(root / f"plain-merge-{tag}")
                t0 = time.perf_counter()
                spark.read.parquet(changes).write.format(fmt).mode("overwrite").save(out)
                seconds = time.perf_counter() - t0
                clean(out)
                return Timing(args.spark_events, seconds)

            job = _compare(args, "job", job_mongocdc, job_baseline)
            merge = _compare(args, "merge", merge_mongocdc, merge_baseline)
            small = (
                _small_batches(spark, args, root, snapshot, options_for("small")) if args.spark_small_events else None
            )
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)
    return {
        "small_batches": small,
        "events": args.spark_events,
        "table_rows": args.spark_rows,
        "format": fmt,
        "kafka": kafka,
        "partitions": args.partitions,
        **versions,
        **job,
        "merge_alone": merge,
    }


def _small_batches(spark: Any, args: argparse.Namespace, root: Path, snapshot: str, options: Any) -> dict[str, Any]:
    """Seconds per small micro-batch (``--spark-small-events`` changes) into the same table: the fixed cost of a batch.

    What a streaming job with a short trigger interval pays every batch. The plain read-and-write of the
    same small batch is shown next to it; there is no target.
    """
    from mongocdc.spark.job import BatchApplier

    count = args.spark_small_events
    apply = BatchApplier(spark, options)
    apply(spark.read.parquet(snapshot), 0)  # the table, not timed
    mine: list[float] = []
    bare: list[float] = []
    for n in range(args.repeat + 1):  # the first batch of each side is a warm-up
        changes = str(root / f"small-{n}")
        # each batch newer than the one before: its updates and deletes of the same keys all apply
        _events(spark, changes, first=args.spark_rows + n * count, count=count, kind="changes", later=n * 1_000_000)
        t0 = time.perf_counter()
        apply(spark.read.parquet(changes), n + 1)
        mine.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        spark.read.parquet(changes).write.format(options.table_format.value).mode("overwrite").save(
            str(root / f"small-plain-{n}")
        )
        bare.append(time.perf_counter() - t0)
        log.info("spark small batch %d: mongocdc %.2f s, plain read+write %.2f s", n, mine[-1], bare[-1])
    return {"events": count, "mongocdc_s": median(mine[1:]), "baseline_s": median(bare[1:])}


def render(result: dict[str, Any]) -> list[str]:
    """Lines of the report table for the spark benchmark."""
    size = f"{result['events'] // 1000} k -> {result['table_rows'] // 1000} k rows, {result['format']}"
    merge = result["merge_alone"]
    lines = [
        ratio_row(f"spark job from Kafka ({size})", result),
        f"  spark job runs (events/s): mongocdc {result['mongocdc']['rates']}  "
        f"plain streaming copy {result['baseline']['rates']}",
        f"  warm-up rounds (s, not counted; the JIT settles): mongocdc {result['warmup_seconds']['mongocdc']}  "
        f"plain streaming copy {result['warmup_seconds']['baseline']}",
        f"  merge alone, events staged in Parquet (no target): ratio {merge['ratio']:.2f}, events/s mongocdc "
        f"{merge['mongocdc']['rates']}  plain read+write {merge['baseline']['rates']}",
    ]
    small = result.get("small_batches")
    if small:
        lines.append(
            f"  small batches ({small['events']} changes -> {result['table_rows'] // 1000} k rows, median s per "
            f"batch): mongocdc {small['mongocdc_s']:.2f}  plain read+write {small['baseline_s']:.2f}  (no target)"
        )
    return lines
