"""The Spark job against the MERGE a Delta user would write by hand, over the same Kafka topics.

The events are Kafka-shaped change records (a Debezium value around a ~1 KB document; 60 %
updates of existing keys, 20 % inserts, 10 % deletes, 10 % replays of older events) generated
by Spark and staged as Parquet, then produced to a topic of ``--partitions`` partitions on a
Kafka broker started here (or ``--bootstrap-servers``). Every side runs in one local session,
reads its topic with the same Kafka source options (``job.kafka_source_options``) and writes Delta.

The yardstick is ``bench/handwritten_merge.py``: Structured Streaming ``foreachBatch``, the batch's
latest change per key (``row_number`` by ``source.ts_ms``/``source.ord``) and one ``MERGE`` (matched
delete / update all / not matched insert all), Delta's documented CDC upsert. Three shapes, target
mongocdc ≥ 1.0 of the hand-written MERGE on each:

* **job** (events/s): ``--spark-events`` events into a table of ``--spark-rows`` rows (built from
  snapshot reads, not timed), one ``availableNow`` run over the topic with a fresh checkpoint:
  ``mongocdc.spark.job.run`` with ``--once`` (what ``mongocdc spark run --once`` does once the
  session is up) against the hand-written query. The plain Structured Streaming copy of the topic
  (``readStream.format("kafka")`` → ``writeStream.format("delta")``) runs in the same rotation as
  information (no target: it neither parses nor merges);
* **large table** (seconds per batch): ``--spark-large-batch`` (10 k) event batches into a table of
  ``--spark-large-rows`` (1 M) rows;
* **small batches** (seconds per batch): ``--spark-small-events`` (200) change batches into the
  ``--spark-rows`` table.

The batch shapes read a topic of ``--spark-batches`` batches with ``maxOffsetsPerTrigger`` set to the
batch size, so one run is a sequence of micro-batches; a batch's time is Spark's ``triggerExecution``
(planning, the batch function, the checkpoint commit). Each side keeps its own table across rounds;
every round has a fresh topic of newer events. Each comparison runs ``--spark-warmup`` uncounted
rounds (the JIT compiles the job's generated code over its first few batches) and ``--repeat`` counted
ones, alternating which side goes first; ratios are of medians.
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

from bench.common import Timing, comparison, create_topics, kafka_broker, median, ratio_row, summarise

log = logging.getLogger("bench.spark")

TARGET_RATIO = 1.0
DOC_PAD = 900


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spark-rows", type=int, default=100_000, help="rows of the spark benchmark's table (100000)")
    parser.add_argument(
        "--spark-events", type=int, default=100_000, help="change events the spark benchmark applies (100000)"
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
    parser.add_argument(
        "--spark-large-rows",
        type=int,
        default=1_000_000,
        help="rows of the spark benchmark's large table (1000000; 0: skip the large-table row)",
    )
    parser.add_argument(
        "--spark-large-batch", type=int, default=10_000, help="changes per batch into the large table (10000)"
    )
    parser.add_argument("--spark-batches", type=int, default=5, help="micro-batches per round of the batch rows (5)")
    parser.add_argument(
        "--spark-no-copy", action="store_true", help="leave the plain streaming copy (information only) out"
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
    # a change's cluster time, as mongocdc's streaming loop writes it (envelope.CLUSTER_TIME_HEADER): the seconds
    # of its ts_ms and an increment that grows with it
    stamp = F.format_string('{"$timestamp":{"t":%d,"i":%d}}', (ts / 1000).cast("long"), ts % 1000 + 1)
    header = F.struct(F.lit("__mongocdc.clusterTime").alias("key"), stamp.cast("binary").alias("value"))
    headers = F.when(F.lit(kind == "snapshot"), F.lit(None)).otherwise(F.array(header))
    rows = ids.select(
        F.lit("bench.bench.orders").alias("topic"),
        (F.col("i") % partitions).cast("int").alias("partition"),
        F.col("i").alias("offset"),
        F.to_json(F.struct(key.cast("string").alias("id"))).cast("binary").alias("key"),
        value.cast("binary").alias("value"),
        headers.alias("headers"),
    )
    rows.write.mode("overwrite").parquet(path)


def _rounds(args: argparse.Namespace) -> list[tuple[str, bool]]:
    rounds = [(f"warmup{n}", True) for n in range(args.spark_warmup if args.warmup else 0)]
    return rounds + [(str(rep), False) for rep in range(args.repeat)]


def _compare(args: argparse.Namespace, name: str, sides: dict[str, Callable[[str], Timing]]) -> dict[str, Any]:
    """Warm-up and counted rounds of every side, rotating which goes first; the summary of each side."""
    warm: dict[str, list[float]] = {side: [] for side in sides}
    counted: dict[str, list[Timing]] = {side: [] for side in sides}
    order = list(sides)
    for number, (tag, warmup) in enumerate(_rounds(args)):
        shift = number % len(order)
        for side in order[shift:] + order[:shift]:
            timing = sides[side](tag)
            if warmup:
                warm[side].append(round(timing.seconds, 2))
            else:
                counted[side].append(timing)
            log.info(
                "spark %s %s run %s: %d events in %.2f s = %.0f/s",
                name,
                side,
                tag,
                timing.items,
                timing.seconds,
                timing.rate,
            )
    result = {**comparison(counted["mongocdc"], counted["handwritten"], TARGET_RATIO), "warmup_seconds": warm}
    if "copy" in counted:
        result["copy"] = summarise(counted["copy"])
    return result


def bench_spark(args: argparse.Namespace) -> dict[str, Any]:
    from bench.handwritten_merge import apply_batch
    from mongocdc.spark import environment
    from mongocdc.spark.job import kafka_source_options, run
    from mongocdc.spark.options import JobOptions, TableFormat

    versions = {"pyspark": environment.pyspark_version(), "delta_spark": environment.delta_version()}
    if versions["delta_spark"] is None:
        raise RuntimeError("the spark benchmark compares Delta tables: install delta-spark (pip install -e '.[spark]')")
    root = Path(tempfile.mkdtemp(prefix="mongocdc-bench-spark-"))
    with kafka_broker(args) as (bootstrap, kafka):
        started = time.perf_counter()
        spark = _session("delta")
        log.info("spark: local session up in %.1f s", time.perf_counter() - started)
        parts = args.partitions
        try:

            def options_for(tag: str, **more: Any) -> JobOptions:
                return JobOptions(
                    bootstrap_servers=bootstrap,
                    warehouse=str(root / f"wh-{tag}"),
                    checkpoint=str(root / f"cp-{tag}-{uuid.uuid4().hex[:6]}"),
                    table_format=TableFormat.delta,
                    **more,
                )

            def topic_of(path: str) -> str:
                topic = f"bench-spark-{uuid.uuid4().hex[:8]}"  # a given cluster may hold an earlier run's topic
                create_topics(bootstrap, [topic], parts, append_time=False)
                spark.read.parquet(path).select("key", "value", "partition", "headers").write.format("kafka").option(
                    "kafka.bootstrap.servers", bootstrap
                ).option("topic", topic).save()
                return topic

            def source(topic: str, **more: str) -> Any:
                # the job's own Kafka source settings, so the ratio measures what each side does with the records
                options = kafka_source_options(options_for("source"), spark.sparkContext.defaultParallelism)
                return spark.readStream.format("kafka").options(**options, **more).option("subscribe", topic).load()

            def handwritten_query(topic: str, table: str, **more: str) -> list[dict[str, Any]]:
                """The hand-written foreachBatch MERGE over ``topic`` until caught up; its progress reports."""
                checkpoint = str(root / f"hw-cp-{uuid.uuid4().hex[:6]}")
                query = (
                    source(topic, **more)
                    .writeStream.option("checkpointLocation", checkpoint)
                    .foreachBatch(lambda records, _batch: apply_batch(spark, table, records))
                    .trigger(availableNow=True)
                    .start()
                )
                query.awaitTermination()
                reports = [dict(p) if isinstance(p, dict) else _as_dict(p) for p in query.recentProgress]
                shutil.rmtree(checkpoint, ignore_errors=True)
                return reports

            def clean(*paths: str) -> None:
                for path in paths:
                    shutil.rmtree(path, ignore_errors=True)

            snapshot, changes = str(root / "snapshot"), str(root / "changes")
            _events(spark, snapshot, first=0, count=args.spark_rows, kind="snapshot", partitions=parts)
            _events(spark, changes, first=args.spark_rows, count=args.spark_events, kind="changes", partitions=parts)
            topic = topic_of(changes)

            def job_mongocdc(tag: str) -> Timing:
                options = options_for(f"job-{tag}", topics=(topic,), once=True)
                _first_version(spark, options, snapshot)  # the table, not timed
                t0 = time.perf_counter()
                summary = run(spark, options)
                seconds = time.perf_counter() - t0
                clean(options.warehouse, options.checkpoint)
                if summary.rows != args.spark_events:
                    raise RuntimeError(f"the job read {summary.rows} records of {args.spark_events}")
                return Timing(args.spark_events, seconds)

            def job_handwritten(tag: str) -> Timing:
                table = str(root / f"hw-job-{tag}")
                apply_batch(spark, table, spark.read.parquet(snapshot))  # the table, not timed
                t0 = time.perf_counter()
                reports = handwritten_query(topic, table)
                seconds = time.perf_counter() - t0
                clean(table)
                rows = sum(int(r.get("numInputRows") or 0) for r in reports)
                if rows != args.spark_events:
                    raise RuntimeError(f"the hand-written MERGE read {rows} records of {args.spark_events}")
                return Timing(args.spark_events, seconds)

            def job_copy(tag: str) -> Timing:
                out, checkpoint = str(root / f"plain-job-{tag}"), str(root / f"plain-cp-{tag}")
                t0 = time.perf_counter()
                query = source(topic).writeStream.format("delta").option("checkpointLocation", checkpoint)
                query.trigger(availableNow=True).start(out).awaitTermination()
                seconds = time.perf_counter() - t0
                clean(out, checkpoint)
                return Timing(args.spark_events, seconds)

            sides = {"mongocdc": job_mongocdc, "handwritten": job_handwritten}
            if not args.spark_no_copy:
                sides["copy"] = job_copy
            job = _compare(args, "job", sides)
            large = None
            if args.spark_large_rows:
                large = _batches(
                    args,
                    spark,
                    root,
                    "large table",
                    rows=args.spark_large_rows,
                    batch=args.spark_large_batch,
                    topic_of=topic_of,
                    options_for=options_for,
                    handwritten_query=handwritten_query,
                )
            small = None
            if args.spark_small_events:
                small = _batches(
                    args,
                    spark,
                    root,
                    "small batches",
                    rows=args.spark_rows,
                    batch=args.spark_small_events,
                    topic_of=topic_of,
                    options_for=options_for,
                    handwritten_query=handwritten_query,
                )
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)
    return {
        "small_batches": small,
        "large_table": large,
        "events": args.spark_events,
        "table_rows": args.spark_rows,
        "format": "delta",
        "kafka": kafka,
        "partitions": args.partitions,
        **versions,
        **job,
    }


def _first_version(spark: Any, options: Any, snapshot: str) -> None:
    """mongocdc's table of the documents at ``snapshot``, written by the job's applier (not timed), once the
    applier's load of the new version in the background has ended too (it would run into the timed batches)."""
    from mongocdc.spark.job import BatchApplier

    builder = BatchApplier(spark, options)
    builder(spark.read.parquet(snapshot), 0)
    if builder.snapshots is not None:
        builder.snapshots.wait()


def _as_dict(progress: Any) -> dict[str, Any]:
    import json

    return dict(json.loads(progress.json))


def _batches(
    args: argparse.Namespace,
    spark: Any,
    root: Path,
    name: str,
    *,
    rows: int,
    batch: int,
    topic_of: Callable[[str], str],
    options_for: Callable[..., Any],
    handwritten_query: Callable[..., list[dict[str, Any]]],
) -> dict[str, Any]:
    """Seconds per micro-batch of ``batch`` changes into a table of ``rows`` rows, both sides, rounds alternating.

    Each side builds its table once (not timed); every round produces a fresh topic of ``--spark-batches``
    batches of changes newer than the last round's, and each side reads it with ``maxOffsetsPerTrigger`` =
    ``batch``. A batch's time is Spark's ``triggerExecution`` of it.
    """
    from bench.handwritten_merge import apply_batch
    from mongocdc.spark.job import run

    tag = name.replace(" ", "-")
    snapshot = str(root / f"{tag}-snapshot")
    t0 = time.perf_counter()
    _events(spark, snapshot, first=0, count=rows, kind="snapshot", partitions=args.partitions)
    warehouse_options = options_for(f"{tag}-mongocdc")
    _first_version(spark, warehouse_options, snapshot)
    handwritten_table = str(root / f"{tag}-handwritten")
    apply_batch(spark, handwritten_table, spark.read.parquet(snapshot))
    shutil.rmtree(snapshot, ignore_errors=True)
    log.info("spark %s: two tables of %d rows built in %.0f s (not timed)", name, rows, time.perf_counter() - t0)
    per_batch: dict[str, list[float]] = {"mongocdc": [], "handwritten": []}
    warm: dict[str, list[float]] = {"mongocdc": [], "handwritten": []}
    total = batch * args.spark_batches
    for number, (round_tag, warmup) in enumerate(_rounds(args)):
        changes = str(root / f"{tag}-changes-{round_tag}")
        # each round newer than the last: its updates and deletes of the same keys all apply
        first = rows + number * total
        _events(spark, changes, first=first, count=total, kind="changes", later=(number + 1) * 10_000_000)
        topic = topic_of(changes)
        sides = ["mongocdc", "handwritten"] if number % 2 == 0 else ["handwritten", "mongocdc"]
        for side in sides:
            if side == "mongocdc":
                options = options_for(f"{tag}-mongocdc", topics=(topic,), once=True, max_offsets_per_trigger=batch)
                reports: list[dict[str, Any]] = []
                run(spark, options, on_progress=reports.append)
                shutil.rmtree(options.checkpoint, ignore_errors=True)
            else:
                reports = handwritten_query(topic, handwritten_table, maxOffsetsPerTrigger=str(batch))
            seconds = [r["durationMs"]["triggerExecution"] / 1000 for r in reports if r.get("numInputRows")]
            read = sum(int(r.get("numInputRows") or 0) for r in reports)
            if read != total:
                raise RuntimeError(f"spark {name}: {side} read {read} records of {total}")
            (warm if warmup else per_batch)[side].extend(round(s, 3) for s in seconds)
            log.info("spark %s %s round %s: s per batch %s", name, side, round_tag, [round(s, 2) for s in seconds])
        shutil.rmtree(changes, ignore_errors=True)
    mine, theirs = median(per_batch["mongocdc"]), median(per_batch["handwritten"])
    return {
        "rows": rows,
        "events": batch,
        "batches": len(per_batch["mongocdc"]),
        "mongocdc_s": mine,
        "handwritten_s": theirs,
        "ratio": round(theirs / mine, 3) if mine else 0.0,
        "target_ratio": TARGET_RATIO,
        "target_met": bool(mine) and theirs / mine >= TARGET_RATIO,
        "seconds": per_batch,
        "warmup_seconds": warm,
    }


def render(result: dict[str, Any]) -> list[str]:
    """Lines of the report table for the spark benchmark (the baseline column: the hand-written MERGE)."""
    size = f"{result['events'] // 1000} k -> {result['table_rows'] // 1000} k rows"
    lines = [
        ratio_row(f"spark job vs hand-written MERGE ({size})", result),
        f"  spark job runs (events/s): mongocdc {result['mongocdc']['rates']}  "
        f"hand-written MERGE {result['baseline']['rates']}",
    ]
    copy = result.get("copy")
    if copy:
        lines.append(f"  plain streaming copy (no target, information): events/s {copy['rates']}")
    warm = result["warmup_seconds"]
    lines.append(
        "  warm-up rounds (s, not counted; the JIT settles): "
        + "  ".join(f"{side} {seconds}" for side, seconds in warm.items())
    )
    for key, label in (("large_table", "large table"), ("small_batches", "small batches")):
        rows = result.get(key)
        if rows:
            lines.append(
                f"  {label} ({rows['events']:,} changes -> {rows['rows'] // 1000} k rows, median s per batch of "
                f"{rows['batches']}): mongocdc {rows['mongocdc_s']:.2f}  "
                f"hand-written MERGE {rows['handwritten_s']:.2f}  "
                f"ratio {rows['ratio']:.2f} >= {rows['target_ratio']}  {'met' if rows['target_met'] else 'NOT met'}"
            )
    return lines
