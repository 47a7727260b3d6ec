"""The Structured Streaming application: Kafka source → per-collection merge → state tables.

Runs in the driver, in-process (``mongocdc spark run``) or as the application ``spark-submit``
starts (``mongocdc/spark/entry.py``). One micro-batch:

1. parse the Debezium envelopes of the batch's records (``merge.parse_records``): tombstones,
   transaction and heartbeat topics are read past;
2. per collection in the batch, merge the changes into its state table (``sinks``) and, with
   ``--changelog``, append them to its changelog;
3. Spark records the batch in the checkpoint only after that, so a restarted job continues
   after the last applied batch, and a batch cut short by a crash is applied again (the merge
   is idempotent).

Next to Spark's own files the job keeps ``<checkpoint>/mongocdc/``: ``job.json`` (what runs,
since when, how it ended) and ``progress/<batch>.json`` (Spark's progress report of each
batch), which ``mongocdc spark status`` reads.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from mongocdc import __version__
from mongocdc.errors import SparkJobError
from mongocdc.signals import on_stop_signals
from mongocdc.spark import merge as m
from mongocdc.spark.hadoop_fs import HadoopFs
from mongocdc.spark.options import JobOptions, changelog_path
from mongocdc.spark.sinks import (
    BatchSize,
    Compaction,
    Snapshots,
    TableRows,
    append_changelog,
    state_table,
)

log = logging.getLogger("mongocdc.spark")

STATE_DIR = "mongocdc"
KEEP_PROGRESS = 200
_POLL_S = 1
HEARTBEAT_EVERY_S = 5.0
"""How often the running job rewrites ``job.json`` (its ``updated_at``), besides after every batch: ``spark
status`` calls a running job whose ``job.json`` is much older than this stale."""
COMMIT_WAIT_S = 30.0
"""How long a stopping job waits for Spark to commit the batch it just applied before it stops the query."""
STILL_RUNNING_EVERY_S = 10.0
"""How often a long batch says what it is doing."""


def job_dir(checkpoint: str) -> str:
    return f"{checkpoint.rstrip('/')}/{STATE_DIR}"


@dataclass
class BatchApplier:
    """The ``foreachBatch`` function: applies one micro-batch of Kafka records to the tables."""

    spark: SparkSession
    options: JobOptions
    schema: StructType | None = None
    applied: dict[str, int] = field(default_factory=dict)
    """Change events applied per ``<db>.<collection>`` by this process."""
    compaction: Compaction | None = None
    snapshots: Snapshots | None = None
    """Loads each Delta table's new version after the job's commits (``sinks.Snapshots``; with ``compaction``)."""
    table_rows: TableRows = field(default_factory=TableRows)
    """Row-count bounds of the Delta tables this job writes (``sinks.TableRows``)."""
    doing: tuple[int, float, str] | None = None
    """While a batch runs: its id, when it began (monotonic) and what it does now, for the "still running" lines."""
    stop: threading.Event | None = None
    """Set once the job is to stop: a batch that has not begun yet does not begin (``StopBeforeBatch``)."""
    last_applied: int | None = None
    """The id of the last batch this process applied to the end."""
    _said_at: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.schema is None and self.options.columns:
            self.schema = m.parse_schema(self.options.columns)
        if self.compaction is None:
            self.snapshots = Snapshots(self.spark)
            self.compaction = Compaction(self.spark, snapshots=self.snapshots)

    @property
    def payload(self) -> StructType:
        return m.payload_schema(self.schema)

    def expired_before(self, newest_ts_ms: int) -> int | None:
        """The ``_ts_ms`` below which a collection's delete markers may go, given its batch's newest change."""
        retention = self.options.delete_retention_ms
        return None if retention is None else newest_ts_ms - retention

    def changes(self, records: DataFrame) -> DataFrame:
        return m.project(m.parse_records(records, self.options.skip_topics), self.schema)

    def __call__(self, records: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        self.doing = (batch_id, started, "reading its records from Kafka")
        if self.stop is not None and self.stop.is_set():  # (after ``doing``: the stopping loop reads both)
            self.doing = None
            _quiet_query_end(self.spark)
            raise StopBeforeBatch(f"{STOP_BEFORE_BATCH} {batch_id}")
        log.info("batch %d: %s", batch_id, self.doing[2])
        changes = self.changes(records).persist()
        try:
            counts = (
                changes.groupBy(*m.COLLECTION_COLUMNS)
                .agg(*map(F.expr, ("count(1) AS count", "count_if(_op = 'd') AS deletes", "max(_ts_ms) AS newest")))
                .collect()
            )
            total = sum(int(row["count"]) for row in counts)
            log.info(
                "batch %d: %s to apply to %d %s (read in %.1f s)",
                batch_id,
                _changes(total),
                len(counts),
                "collection" if len(counts) == 1 else "collections",
                time.monotonic() - started,
            )
            for row in sorted(counts, key=lambda r: (r["_db"], r["_collection"])):
                db, collection = row["_db"], row["_collection"]
                subset = changes.where((F.col("_db") == db) & (F.col("_collection") == collection)).drop(
                    *m.COLLECTION_COLUMNS
                )
                self.doing = (batch_id, started, f"applying {_changes(int(row['count']))} to {db}.{collection}")
                log.info("batch %d: %s", batch_id, self.doing[2])
                table = state_table(
                    self.spark,
                    self.options.table_format,
                    self.options.warehouse,
                    db,
                    collection,
                    self.payload,
                    self.compaction,
                    self.table_rows,
                )
                size = BatchSize(int(row["count"]), int(row["deletes"]), self.expired_before(int(row["newest"])))
                table.apply(subset, size)
                if self.options.changelog:
                    append_changelog(
                        self.spark,
                        self.options.table_format,
                        changelog_path(self.options.warehouse, db, collection),
                        subset,
                        batch_id,
                        app_id=f"mongocdc:{self.options.checkpoint}",
                        compaction=self.compaction,
                    )
                name = f"{db}.{collection}"
                self.applied[name] = self.applied.get(name, 0) + int(row["count"])
                log.info("batch %d: %s applied to %s", batch_id, _changes(int(row["count"])), name)
            seconds = time.monotonic() - started
            rate = f" ({total / seconds:,.0f}/s)" if seconds > 0 and total else ""
            log.info("batch %d done: %s in %.1f s%s", batch_id, _changes(total), seconds, rate)
            self.last_applied = batch_id
        finally:
            self.doing = None
            changes.unpersist()

    def still_running(self, every_s: float, now: float) -> str | None:
        """A line about the running batch once it ran ``every_s`` since it began or since the last such line."""
        doing = self.doing
        if doing is None:
            return None
        batch_id, started, what = doing
        last = max(started, self._said_at)
        if now - last < every_s:
            return None
        self._said_at = now
        return f"batch {batch_id} still running after {now - started:.0f} s: {what}"


STOP_BEFORE_BATCH = "mongocdc: the job is stopping, so it did not begin batch"


class StopBeforeBatch(Exception):  # noqa: N818 - what it says is what happened, not an error
    """Raised by a batch that began after the stop was asked for: it applies nothing and is not committed
    (a restart applies it), and the query ends with it, which ``run`` takes for the stop it is."""


class _WithoutStopBeforeBatch(logging.Filter):
    """py4j logs every exception of a Python callback with its traceback: not the stop's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], StopBeforeBatch))


def _quiet_query_end(spark: SparkSession) -> None:
    """The query ends with ``StopBeforeBatch``: Spark would log it as an error, with its plan and stack."""
    try:
        jvm: Any = spark.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.OFF
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(STREAM_EXECUTION_LOGGER, level)
    except Exception as error:  # noqa: BLE001 - only a log line is at stake
        log.debug("could not quiet %s: %s", STREAM_EXECUTION_LOGGER, error)


STREAM_EXECUTION_LOGGER = "org.apache.spark.sql.execution.streaming.MicroBatchExecution"


def _changes(n: int) -> str:
    return f"{n:,} change" if n == 1 else f"{n:,} changes"


MIN_PARTITIONS_PER_CORE = 3
"""Default Spark tasks per core a micro-batch is read in: a topic has often fewer partitions than the
job has cores (Debezium topics often one), and parsing the envelopes is most of a batch's reading."""


def min_partitions_for(options: JobOptions, cores: int) -> int:
    """The Kafka source's ``minPartitions`` (0: one Spark task per Kafka partition)."""
    if options.min_partitions is not None:
        return options.min_partitions
    return MIN_PARTITIONS_PER_CORE * max(1, cores)


KAFKA_CONSUMER_DEFAULTS = {
    # A micro-batch reads offset ranges that are already in the log, so a fetch has nothing to wait
    # for; with the consumer's default of 500 ms, the fetches that reach the end of a range sat at the
    # broker that long, and reading 100 k records took 1.3 s instead of 0.4 s here.
    "fetch.max.wait.ms": "10",
    # A connector with exactly.once.support commits its records in transactions: read only committed ones, so
    # an aborted transaction's records (written again after the connector's restart) never reach the table.
    "isolation.level": "read_committed",
}
"""Java consumer properties the Kafka source gets unless ``--kafka-option`` sets them."""


def kafka_source_options(options: JobOptions, cores: int) -> dict[str, str]:
    """The options of Spark's Kafka source for the CDC topics (without the subscription)."""
    source = {
        "kafka.bootstrap.servers": options.bootstrap_servers,
        "startingOffsets": options.starting_offsets.value,
        # A topic deleted and re-created, or records aged out before they were read, must not stop the job.
        "failOnDataLoss": "false",
        # mongocdc's __mongocdc.clusterTime header orders changes (merge.parse_records)
        "includeHeaders": "true",
    }
    if options.max_offsets_per_trigger is not None:
        source["maxOffsetsPerTrigger"] = str(options.max_offsets_per_trigger)
    min_partitions = min_partitions_for(options, cores)
    if min_partitions:
        source["minPartitions"] = str(min_partitions)
    for key, value in {**KAFKA_CONSUMER_DEFAULTS, **options.kafka_options}.items():
        source[f"kafka.{key}"] = value
    return source


def read_kafka(spark: SparkSession, options: JobOptions) -> DataFrame:
    """The streaming DataFrame of the CDC topics."""
    reader = spark.readStream.format("kafka").options(
        **kafka_source_options(options, spark.sparkContext.defaultParallelism)
    )
    if options.topic_pattern is not None:
        reader = reader.option("subscribePattern", options.topic_pattern)
    else:
        reader = reader.option("subscribe", ",".join(options.topics))
    return reader.load()


def start(spark: SparkSession, options: JobOptions, applier: BatchApplier | None = None) -> StreamingQuery:
    """Start the streaming query (it runs until stopped, or until caught up with ``--once``)."""
    records = read_kafka(spark, options)
    writer = (
        records.writeStream.queryName(options.query_name)
        .option("checkpointLocation", options.checkpoint)
        .foreachBatch(applier or BatchApplier(spark, options))
    )
    if options.once:
        writer = writer.trigger(availableNow=True)
    elif options.trigger_interval:
        writer = writer.trigger(processingTime=options.trigger_interval)
    return writer.start()


class ProgressLog:
    """``<checkpoint>/mongocdc/``: the job description and one progress report per batch."""

    def __init__(self, spark: SparkSession, options: JobOptions) -> None:
        self.fs = HadoopFs(spark)
        self.base = job_dir(options.checkpoint)
        self.options = options
        self.seen: dict[int, bool] = {}
        """Batch ids written, and whether their report had rows (an idle trigger reports the next id empty)."""
        self.kept: list[str] | None = None
        """The progress files there, oldest first (listed at the first report, then kept here: a listing per batch
        was a round trip to the JVM per file)."""
        self.started_at = datetime.now(UTC).isoformat()
        self.status = "starting"
        self.beaten_at = 0.0

    def write_job(self, status: str, error: str | None = None) -> None:
        o = self.options
        self.status, self.beaten_at = status, time.monotonic()
        doc = {
            "mongocdc_version": __version__,
            "status": status,
            "started_at": self.started_at,
            "updated_at": datetime.now(UTC).isoformat(),
            "heartbeat_every_s": HEARTBEAT_EVERY_S,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "error": error,
            "query_name": o.query_name,
            "topics": list(o.topics),
            "topic_pattern": o.topic_pattern,
            "bootstrap_servers": o.bootstrap_servers,
            "warehouse": o.warehouse,
            "format": o.table_format.value,
            "changelog": o.changelog,
            "once": o.once,
        }
        self.fs.replace_text(f"{self.base}/job.json", json.dumps(doc, indent=2) + "\n")  # status reads it any time

    def heartbeat(self, now: float, *, force: bool = False) -> None:
        """Rewrite ``job.json`` as it is (a new ``updated_at``) once ``HEARTBEAT_EVERY_S`` passed, or now."""
        if force or now - self.beaten_at >= HEARTBEAT_EVERY_S:
            self.write_job(self.status)

    def is_new(self, report: Mapping[str, Any]) -> bool:
        batch = int(report.get("batchId", -1))
        if batch < 0:
            return False
        return batch not in self.seen or (not self.seen[batch] and bool(report.get("numInputRows")))

    def record(self, reports: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """Write the reports not written yet; return them."""
        new = [r for r in reports if self.is_new(r)]
        if not new:
            return new
        if self.kept is None:  # the reports a run before this one left, listed once
            self.kept = sorted(n for n in self.fs.names(f"{self.base}/progress") if n.endswith(".json"))
        kept = self.kept
        for report in new:
            batch = int(report["batchId"])
            self.seen[batch] = bool(report.get("numInputRows"))
            name = f"{batch:020d}.json"
            self.fs.write_text(f"{self.base}/progress/{name}", json.dumps(report) + "\n")
            if name not in kept[-1:]:  # (an idle trigger's report and its batch's share a name)
                kept.append(name)
        excess = max(0, len(kept) - KEEP_PROGRESS)
        for old in kept[:excess]:
            self.fs.delete(f"{self.base}/progress/{old}")
        del kept[:excess]
        return new


def _new_reports(query: StreamingQuery, progress_log: ProgressLog) -> list[dict[str, Any]]:
    """The query's progress reports that ``progress_log`` has not written yet, oldest first, as Spark's JSON.

    Read from the newest back to the first one already written, each as one JSON string. PySpark's
    ``recentProgress`` converts every report Spark keeps (up to 100) field by field through Py4J, about 50 ms a
    report: polled every second while batches ran, it took 0.3 s of the driver a second after six batches and
    more than a core after a hundred.
    """
    recent: Any = query._jsq.recentProgress()  # the JVM's array, not converted
    new: list[dict[str, Any]] = []
    for index in range(len(recent) - 1, -1, -1):
        report = json.loads(recent[index].json())
        if not progress_log.is_new(report):
            break
        new.append(report)
    return new[::-1]


@dataclass
class RunSummary:
    batches: int = 0
    rows: int = 0
    applied: dict[str, int] = field(default_factory=dict)
    stopped_by_signal: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "rows": self.rows, "applied": dict(self.applied)}


@contextmanager
def _stop_on_signals(stop: threading.Event, now: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` (the job stops after its current batch); a second one sets ``now``
    too (the running batch is cancelled: it is not committed, so the next start applies it again)."""

    def handler(signum: signal.Signals) -> None:
        if stop.is_set():
            log.warning(
                "received %s again: stopping now (the running batch is applied again at the next start)", signum.name
            )
            now.set()
            return
        log.info("received %s: stopping after the current batch", signum.name)
        stop.set()

    with on_stop_signals(handler, main_thread_only=True):
        yield


@dataclass
class _Stopping:
    """The query loop once the stop was asked for: the running batch ends and Spark commits it first."""

    applier: BatchApplier
    fs: HadoopFs
    checkpoint: str
    now: threading.Event
    since: float | None = None
    said: bool = False

    def ready(self, at: float) -> bool:
        """Whether the query may be stopped now without cutting a batch short."""
        if self.since is None:
            self.since = at
        if self.now.is_set():
            return True
        doing = self.applier.doing
        if doing is not None:
            if not self.said:
                self.said = True
                log.info("stopping after batch %d (%s)", doing[0], doing[2])
            return False
        last = self.applier.last_applied
        if last is None or at - self.since > COMMIT_WAIT_S:
            return True
        return self.fs.exists(f"{self.checkpoint.rstrip('/')}/commits/{last}")


def run(
    spark: SparkSession,
    options: JobOptions,
    *,
    stop: threading.Event | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> RunSummary:
    """Run the job until caught up (``--once``), or until ``stop`` is set / SIGTERM / SIGINT (after the
    current batch: a batch that had begun is applied and committed, none begins after it)."""
    stop = stop or threading.Event()
    now = threading.Event()
    progress_log = ProgressLog(spark, options)
    applier = BatchApplier(spark, options, stop=stop)
    summary = RunSummary(applied=applier.applied)
    stopping = _Stopping(applier, progress_log.fs, options.checkpoint, now)
    progress_log.write_job("running")
    quiet = _WithoutStopBeforeBatch()
    logging.getLogger("py4j.clientserver").addFilter(quiet)
    try:
        with _stop_on_signals(stop, now):
            query = start(spark, options, applier)
            topics = ", ".join(options.topics) if options.topics else f"topics matching {options.topic_pattern}"
            log.info("query %s started: waiting for the first batch of %s", options.query_name, topics)
            try:
                while not _ended(query):
                    _record(query, progress_log, summary, on_progress)
                    line = applier.still_running(STILL_RUNNING_EVERY_S, time.monotonic())
                    if line is not None:
                        log.info("%s", line)
                    if stop.is_set():
                        if not summary.stopped_by_signal:
                            summary.stopped_by_signal = True
                            progress_log.write_job("stopping")
                        if stopping.ready(time.monotonic()):
                            query.stop()
                            break
                    progress_log.heartbeat(time.monotonic())
            finally:
                _record(query, progress_log, summary, on_progress)
            exception = query.exception()
            # the stop's own ends: a batch that began after the stop, or the batch a second signal cut short
            stopped_query = stop.is_set() and (now.is_set() or STOP_BEFORE_BATCH in str(exception))
            if exception is not None and not stopped_query:
                raise SparkJobError(
                    f"the streaming query failed: {_first_line(str(exception))}",
                    hint="run again with --log-level debug for Spark's log; the checkpoint is intact, so a "
                    "restart continues after the last applied batch",
                )
            summary.stopped_by_signal = summary.stopped_by_signal or stop.is_set()
    except SparkJobError as error:
        progress_log.write_job("failed", error.message)
        raise
    except Exception as error:
        progress_log.write_job("failed", _first_line(str(error)))
        raise
    finally:
        logging.getLogger("py4j.clientserver").removeFilter(quiet)
        if applier.snapshots is not None:
            applier.snapshots.wait()
    progress_log.write_job("stopped" if summary.stopped_by_signal or not options.once else "finished")
    return summary


def _ended(query: StreamingQuery) -> bool:
    """Wait up to ``_POLL_S`` for the query to end; whether it did (its error, if any: ``query.exception()``)."""
    try:
        return bool(query.awaitTermination(_POLL_S))
    except StreamingQueryException:
        return True


def _record(
    query: StreamingQuery,
    progress_log: ProgressLog,
    summary: RunSummary,
    on_progress: Callable[[dict[str, Any]], None] | None,
) -> None:
    new = progress_log.record(_new_reports(query, progress_log))
    if new:
        progress_log.heartbeat(time.monotonic(), force=True)
    for report in new:
        if report.get("numInputRows"):
            summary.batches += 1
            summary.rows += int(report["numInputRows"])
        if on_progress is not None:
            on_progress(dict(report))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the application ``spark-submit`` runs (its configuration comes from spark-submit)."""
    import sys

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    options = JobOptions.from_args(sys.argv[1:] if argv is None else argv)
    spark = SparkSession.builder.appName(f"mongocdc {options.query_name}").getOrCreate()
    try:
        summary = run(spark, options)
    except SparkJobError as error:
        sys.stderr.write(f"error: {error.message}\n")
        if error.hint:
            sys.stderr.write(f"hint: {error.hint}\n")
        return int(error.exit_code)
    finally:
        spark.stop()
    sys.stdout.write(json.dumps({"status": "stopped", **summary.to_dict()}) + "\n")
    return 0
