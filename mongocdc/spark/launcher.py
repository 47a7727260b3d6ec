"""Launching the job: in this process, or through ``spark-submit`` on any Spark master.

Plain Python until the job starts. ``plan_conf`` decides the Spark configuration (the Kafka
and Delta packages matched to the installed pyspark, or the ``--jars`` given instead; Delta's
session extension; small shuffles on a local master; the user's ``--conf`` last, so it wins),
``submit_command`` the exact ``spark-submit`` command line (``--dry-run`` prints it), and
``launch`` runs the pre-flight checks (pyspark, Java 17+, packages resolvable) and then the job.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mongocdc import __version__
from mongocdc.config import redact_text
from mongocdc.errors import SparkEnvironmentError, SparkJobError
from mongocdc.signals import ignore_sigterm, on_stop_signals
from mongocdc.spark import environment, packages
from mongocdc.spark.installation import SparkHome
from mongocdc.spark.options import JobOptions, TableFormat, split_list

log = logging.getLogger("mongocdc.spark")

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # MERGE marks the rows it replaces instead of rewriting each file it touches (readers: Delta 2.3+)
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    # a commit would otherwise rebuild the new version's full file list only for its usage metrics
    "spark.databricks.delta.commitStats.collect": "false",
}
DELETION_VECTORS = "spark.databricks.delta.properties.defaults.enableDeletionVectors"
"""The default of ``delta.enableDeletionVectors`` for new tables (``--no-deletion-vectors``: ``false``). A
table with deletion vectors needs a reader that supports them (Delta 2.3+, delta-rs, DuckDB's delta)."""
JOB_CONF = {
    # each micro-batch's parsed changes are cached once and dropped after the batch: building the
    # cache uncompressed is a quarter faster, and it lives for one batch only
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    # one micro-batch compiles about 130 generated classes (the merge's queries and Delta's own); with
    # Spark's default cache of 100 every batch compiled about 70 of them again and the JIT warmed them up
    # again: a third of a 100 k batch's CPU time
    "spark.sql.codegen.cache.maxEntries": "1000",
    # PySpark records the Python call site of every DataFrame and Column call in the JVM, for error messages: four
    # to five more Py4J round trips per call. A micro-batch builds its queries anew with a few hundred such calls.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
LOCAL_CONF = {
    # one machine: shuffles are already one partition per core, and re-planning between the stages of
    # every query (each stage its own Spark job) cost more than it saved (about 7 % of a 100 k batch)
    "spark.sql.adaptive.enabled": "false",
}
"""Settings of local runs (``--master local[...]``) besides the partition counts set from the cores."""
LOCAL_GC = "-XX:+UseParallelGC"
JSON_LOGS = "-Dlog4j2.configurationFile=classpath:org/apache/spark/log4j2-json-layout.properties"
"""The driver JVM's log4j configuration with ``--log-format json``: Spark's own JSON layout (``ts``, ``level``,
``msg``, ``logger``, one record a line on stderr). ``spark.log.structuredLogging.enabled`` is not enough: Spark
turns structured logging off for a driver started in-process (its "pyspark-shell")."""
"""The local driver's collector. In a local run the driver is also the executor, and a batch allocates
a copy of every document several times (parsed, cached, joined, encoded): collecting it took G1 1.5-2.3
CPU-seconds of a 100 k batch on Spark's default 1 GB heap and 0.8-1.0 on 3 GB, the throughput collector 0.2 on 3 GB."""
DRIVER_MEMORY_SHARE = 4
DRIVER_MEMORY_MIN_GB = 1
DRIVER_MEMORY_MAX_GB = 8
"""A local run's heap: a ``DRIVER_MEMORY_SHARE``-th of the machine's memory (or of its cgroup's limit),
between these bounds. Spark's own default, 1 GB, collected garbage for a third of a 100 k batch's CPU time."""
ENTRY = Path(__file__).with_name("entry.py")


@dataclass(frozen=True)
class LaunchPlan:
    """How to run the job: where (``master``), with what Spark configuration, in-process or submitted."""

    options: JobOptions
    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)
    packages: tuple[str, ...] = ()
    jars: tuple[str, ...] = ()
    submit: bool = False
    """Through ``spark-submit`` even on a local master (a non-local master always is)."""
    requested_format: TableFormat = TableFormat.auto
    spark_log_level: str = "ERROR"
    json_logs: bool = False
    """``--log-format json``: the driver JVM's log4j lines are JSON records too (``JSON_LOGS``)."""
    ui: bool = False
    """Start the Spark UI (``spark.ui.enabled``; off by default: a batch job needs no web server and port)."""
    deletion_vectors: bool = True
    """Delta tables the job creates use deletion vectors (``DELETION_VECTORS``); off: any Delta reader reads them."""
    spark_home: SparkHome | None = None
    """The Spark installation a mongocdc without pyspark (the single binary) submits the job to."""

    @classmethod
    def from_cli(
        cls,
        options: JobOptions,
        flags: Mapping[str, Any],
        *,
        conf: Mapping[str, str],
        spark_home: SparkHome | None,
        spark_log_level: str,
        json_logs: bool,
    ) -> LaunchPlan:
        """The plan of ``spark run``'s launch flags (``flags``: by ``run_flags.Flag.param``; ``conf``: its
        ``--conf`` pairs, checked first) for the job ``options``."""
        return cls(
            spark_home=spark_home,
            options=options,
            master=flags["master"],
            conf=conf,
            packages=split_list(flags["packages"] or ()),
            jars=split_list(flags["jars"] or ()),
            submit=flags["submit"],
            requested_format=flags["table_format"],
            spark_log_level=spark_log_level,
            json_logs=json_logs,
            ui=flags["ui"],
            deletion_vectors=flags["deletion_vectors"],
        )

    @property
    def is_local(self) -> bool:
        return self.master == "local" or self.master.startswith("local[")

    @property
    def through_submit(self) -> bool:
        return self.submit or not self.is_local or self.spark_home is not None

    @property
    def ships_modules(self) -> bool:
        """``--py-files`` with mongocdc's modules: the driver's Python has no mongocdc of its own."""
        return not self.is_local or self.spark_home is not None

    @property
    def app_name(self) -> str:
        return f"mongocdc {self.options.query_name}"


def resolve_format(requested: TableFormat, delta_installed: bool) -> TableFormat:
    """``auto``: Delta when delta-spark is installed, else Parquet; ``delta`` without delta-spark is an error."""
    if requested is TableFormat.auto:
        return TableFormat.delta if delta_installed else TableFormat.parquet
    if requested is TableFormat.delta and not delta_installed:
        raise SparkEnvironmentError(
            "--format delta needs delta-spark, which is not installed",
            hint="install the spark extra (pip install 'mongocdc[spark]'), or use --format parquet",
        )
    return requested


def prepare(plan: LaunchPlan) -> tuple[LaunchPlan, environment.SparkPackages]:
    """The plan with its table format decided, and the packages matching the installed Spark."""
    if plan.spark_home is not None:  # Delta's Python half is not in a Spark installation: Parquet
        home = plan.spark_home
        spark_packages = environment.SparkPackages(spark_version=home.version, scala=home.scala, delta=None)
    else:
        spark_packages = environment.packages_for_installed()  # SparkEnvironmentError without pyspark
    table_format = resolve_format(plan.requested_format, spark_packages.delta is not None)
    return replace(plan, options=replace(plan.options, table_format=table_format)), spark_packages


def plan_conf(plan: LaunchPlan, spark_packages: environment.SparkPackages) -> dict[str, str]:
    """The Spark configuration of the run (the user's ``--conf`` applied last)."""
    delta = plan.options.table_format is TableFormat.delta
    conf: dict[str, str] = {}
    coordinates = [] if plan.jars else spark_packages.coordinates(with_delta=delta)
    coordinates += list(plan.packages)
    if coordinates:
        conf["spark.jars.packages"] = ",".join(coordinates)
    if plan.jars:
        conf["spark.jars"] = ",".join(plan.jars)
    conf.update(JOB_CONF)
    if delta:
        conf.update(DELTA_CONF)
        conf[DELETION_VECTORS] = "true" if plan.deletion_vectors else "false"
    if plan.is_local:
        cores = str(max(2, os.cpu_count() or 2))
        conf.update(LOCAL_CONF)
        conf["spark.sql.shuffle.partitions"] = cores
        if delta:
            # Delta rebuilds a table's file list after every commit in this many tasks (50 by default):
            # on one machine that was most of a small batch's time
            conf["spark.databricks.delta.snapshotPartitions"] = cores
        # the job's Python: this one, or a Spark installation's (this one is the binary, which is no Python)
        python = str(plan.spark_home.python) if plan.spark_home else sys.executable
        conf["spark.pyspark.python"] = python
        conf["spark.pyspark.driver.python"] = python
        conf.update(local_jvm_conf(machine_memory(), os.environ))
        # quiet from the JVM's start, not only once the session exists (JSON logs bring their own configuration)
        if plan.spark_log_level != "INFO" and not plan.json_logs:
            options = conf["spark.driver.extraJavaOptions"]
            conf["spark.driver.extraJavaOptions"] = f"{options} -Dlog4j2.configurationFile={quiet_log4j()}"
    conf["spark.ui.showConsoleProgress"] = "false"
    conf["spark.ui.enabled"] = "true" if plan.ui else "false"
    if plan.json_logs:
        conf["spark.driver.extraJavaOptions"] = f"{conf.get('spark.driver.extraJavaOptions', '')} {JSON_LOGS}".strip()
    conf.update(plan.conf)
    return conf


QUIET_LOG4J = """\
# mongocdc spark run: Spark's own log from the JVM's start, errors only (--log-level debug: Spark's defaults)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# pyspark's gateway counts as a shell: Spark would switch its console to this logger's level (WARN when
# unset) and say so; the same level as the root's, so nothing is switched or said
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def quiet_log4j() -> Path:
    """A log4j2 configuration that keeps a local run's JVM to errors (no "default log4j profile", no host
    name warning) until the session's own log level applies."""
    target = Path(tempfile.gettempdir()) / f"mongocdc-{__version__}-log4j2.properties"
    if not target.is_file() or target.read_text() != QUIET_LOG4J:
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(QUIET_LOG4J)
        partial.replace(target)
    return target


def local_jvm_conf(memory_bytes: int | None, env: Mapping[str, str]) -> dict[str, str]:
    """The driver JVM of a local run: its heap (unless ``SPARK_DRIVER_MEMORY`` sets it) and collector.

    ``memory_bytes``: what the machine (or its cgroup) has; ``None`` when unknown leaves Spark's default heap.
    """
    conf = {"spark.driver.extraJavaOptions": LOCAL_GC}
    if memory_bytes is not None and not env.get("SPARK_DRIVER_MEMORY"):
        gigabytes = memory_bytes // (DRIVER_MEMORY_SHARE * 2**30)
        conf["spark.driver.memory"] = f"{min(DRIVER_MEMORY_MAX_GB, max(DRIVER_MEMORY_MIN_GB, gigabytes))}g"
    return conf


CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def machine_memory(limits: Sequence[str] = CGROUP_LIMITS) -> int | None:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit when lower."""
    try:
        total: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        total = None
    for path in limits:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" (cgroup v2) means no limit
            total = int(text) if total is None else min(total, int(text))
    return total


BUNDLED_ZIP = Path(__file__).with_name("mongocdc-py.zip")
"""The single binary's copy of mongocdc's modules (``scripts/mongocdc.spec``): it has no ``.py`` files to zip."""


def py_files_zip() -> Path:
    """mongocdc's own modules as one zip for ``--py-files`` (the driver on a cluster imports them)."""
    if BUNDLED_ZIP.is_file():
        return BUNDLED_ZIP
    root = Path(__file__).resolve().parents[1]
    target = Path(tempfile.gettempdir()) / f"mongocdc-{__version__}-py.zip"
    return target if target.is_file() else _write_zip(root, target)


def _write_zip(root: Path, target: Path) -> Path:
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, path.relative_to(root.parent).as_posix())
    partial.replace(target)
    return target


def submit_command(plan: LaunchPlan, conf: Mapping[str, str], *, py_files: Path | None = None) -> list[str]:
    """The ``spark-submit`` command line that runs the job."""
    spark_submit = plan.spark_home.spark_submit if plan.spark_home else packages.spark_submit_path()
    command = [str(spark_submit), "--master", plan.master, "--name", plan.app_name]
    if plan.ships_modules:
        written = Path(tempfile.gettempdir()) / f"mongocdc-{__version__}-py.zip"  # py_files_zip's
        command += ["--py-files", str(py_files or (BUNDLED_ZIP if BUNDLED_ZIP.is_file() else written))]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, str(ENTRY), *plan.options.to_args()]


def dry_run_command(plan: LaunchPlan) -> str:
    """The ``spark-submit`` command line ``plan`` would run, as ``printable`` (``--dry-run``)."""
    plan, spark_packages = prepare(plan)
    return printable(submit_command(plan, plan_conf(plan, spark_packages)))


def printable(command: Sequence[str]) -> str:
    """A command line as a shell would take it, credentials redacted."""
    return shlex.join(redact_text(word) for word in command)


def ivy_dir(conf: Mapping[str, str], spark_version: str) -> Path:
    configured = conf.get("spark.jars.ivy")
    return Path(configured).expanduser().resolve() if configured else packages.default_ivy_dir(spark_version)


def preflight(plan: LaunchPlan, conf: Mapping[str, str], spark_packages: environment.SparkPackages) -> dict[str, str]:
    """Java 17+ present and every package resolvable, before any Spark starts; returns the configuration
    to start with. Packages are resolved (downloaded on a first run, said so) by a throw-away
    ``spark-submit`` whose output is read, not shown; a run in this process then gets the resolved jars as
    ``spark.jars``, so its JVM does not resolve them again and print Ivy's report."""
    environment.require_java()
    conf = dict(conf)
    coordinates = [c for c in conf.get("spark.jars.packages", "").split(",") if c]
    if coordinates:
        ivy = ivy_dir(conf, spark_packages.spark_version)
        repositories = conf.get("spark.jars.repositories")
        # the user's Ivy settings, else mongocdc's (no local Maven repository: packages.IVY_SETTINGS), for the
        # resolution here and for spark-submit's own
        settings = conf.setdefault(packages.IVY_SETTINGS_CONF, str(packages.ivy_settings(ivy)))
        fetched = packages.ensure_packages(coordinates, ivy, repositories, on_fetch=_say_resolving, settings=settings)
        if fetched:
            log.info("resolved Spark packages %s", ", ".join(fetched))
        else:
            log.debug("Spark packages %s: in %s already", ", ".join(coordinates), ivy)
        if not plan.through_submit:
            jars = packages.resolved_jars(coordinates, ivy, repositories, settings)
            if jars:
                del conf["spark.jars.packages"]
                given = [j for j in conf.get("spark.jars", "").split(",") if j]
                conf["spark.jars"] = ",".join([*given, *map(str, jars)])
    return conf


def _say_resolving(coordinates: Sequence[str], ivy: Path) -> None:
    log.info(
        "resolving Spark packages %s from Maven into %s (once: later runs find them there)",
        ", ".join(coordinates),
        ivy,
    )


def launch(
    plan: LaunchPlan,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the job as planned; return its summary (in-process) or spark-submit's outcome."""
    plan, spark_packages = prepare(plan)
    conf = preflight(plan, plan_conf(plan, spark_packages), spark_packages)
    if plan.through_submit:
        return _run_submit(plan, conf)
    return _run_in_process(plan, conf, on_progress)


def _run_submit(plan: LaunchPlan, conf: Mapping[str, str]) -> dict[str, Any]:
    py_files = py_files_zip() if plan.ships_modules else None
    command = submit_command(plan, conf, py_files=py_files)
    log.info("running %s", printable(command))
    env = dict(os.environ)
    if plan.spark_home is not None:
        env["SPARK_HOME"] = str(plan.spark_home.home)
        env["PYSPARK_PYTHON"] = str(plan.spark_home.python)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    # spark-submit's JVM ignores SIGTERM as an in-process one does (its Python driver, the job, stops after
    # its batch), and this process waits for it to end instead of leaving it behind
    with _waiting_through_stops():
        result = subprocess.run(
            command,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
            preexec_fn=ignore_sigterm,  # noqa: PLW1509
        )
    if result.returncode != 0:
        raise SparkJobError(
            f"spark-submit exited with {result.returncode}",
            hint="its output above says why; mongocdc spark status --checkpoint shows where the job stood",
        )
    return {"status": "stopped", "submitted": True, "master": plan.master}


@contextmanager
def _waiting_through_stops() -> Iterator[None]:
    """SIGTERM and SIGINT to this process while it waits for spark-submit: said, and waited through (the
    process group's signal reaches the job itself, which stops after its batch)."""

    def handler(signum: signal.Signals) -> None:
        log.info("received %s: waiting for the Spark job to stop after its batch", signum.name)

    with on_stop_signals(handler, main_thread_only=True):
        yield


def start_session(plan: LaunchPlan, conf: Mapping[str, str]) -> Any:
    """A Spark session in this process on ``plan.master`` with ``conf`` (the JVM starts with its settings)."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # py4j says at INFO that its callback server starts and every command it receives
    logging.getLogger("py4j").setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    builder = SparkSession.builder.master(plan.master).appName(plan.app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    log.info("starting Spark on %s in this process", plan.master)
    started = time.monotonic()
    try:
        with jvm_ignoring_sigterm():
            spark = builder.getOrCreate()
    except PySparkRuntimeError as error:
        raise SparkJobError(
            f"Spark did not start: {error}",
            hint="Spark's own output above says why (a --conf value, the Java runtime, a jar in --jars)",
        ) from error
    spark.sparkContext.setLogLevel(plan.spark_log_level)
    ui = spark.sparkContext.uiWebUrl
    log.info(
        "Spark %s started in %.0f s; %s",
        spark.version,
        time.monotonic() - started,
        f"its UI is at {ui}" if ui else "no Spark UI (--ui starts it)",
    )
    return spark


@contextmanager
def jvm_ignoring_sigterm() -> Iterator[None]:
    """Spark's driver JVM, started inside, ignores SIGTERM; this Python process handles it (``job.run``).

    A service manager stops a job by signalling every process of it: systemd's ``KillMode=control-group``
    (its default) the whole cgroup, ``kill -TERM -PGID``, ``timeout`` and ``tini -g`` the process group.
    The JVM's own SIGTERM handler runs its shutdown hooks, which stop the SparkContext under the running
    batch, so the batch failed and the job ended as a crash. A JVM started with SIGTERM ignored keeps it
    ignored (HotSpot installs no handler for a shutdown signal that is ignored at its start, as ``nohup``
    relies on for SIGHUP) from its first instruction: the Python side stops the query after its current
    batch and then stops the JVM itself. pyspark starts the JVM with a ``preexec_fn`` of its own (which
    ignores SIGINT), so its ``Popen`` gets one that also ignores SIGTERM while the session starts. The JVM
    still ends with this process: it exits when its standard input (a pipe from this process) closes."""
    try:
        from pyspark import java_gateway
    except ImportError:
        yield
        return
    original = getattr(java_gateway, "Popen", None)
    if original is None:  # a pyspark that starts its JVM differently: SIGTERM then reaches it as before
        yield
        return

    def popen(command: Any, **kwargs: Any) -> Any:
        given = kwargs.get("preexec_fn")

        def preexec() -> None:
            if given is not None:
                given()
            ignore_sigterm()

        return original(command, **{**kwargs, "preexec_fn": preexec})

    setattr(java_gateway, "Popen", popen)  # noqa: B010 - pyspark's module global, set back below
    try:
        yield
    finally:
        setattr(java_gateway, "Popen", original)  # noqa: B010


def _run_in_process(
    plan: LaunchPlan, conf: Mapping[str, str], on_progress: Callable[[dict[str, Any]], None] | None
) -> dict[str, Any]:
    from mongocdc.spark import job

    spark = start_session(plan, conf)
    try:
        summary = job.run(spark, plan.options, on_progress=on_progress)
    finally:
        spark.stop()
    return {"status": "stopped", **summary.to_dict()}
