"""A real, single-node Apache Kafka broker for mongocdc's tests and demos.

Nothing needs installing beyond Java 17+ and Maven: :func:`ensure_kafka_classpath`
resolves Kafka and its runtime dependencies from Maven Central once, into a cache
directory, and :class:`KafkaBroker` runs ``kafka.Kafka`` from that classpath in KRaft
mode (combined broker + controller) on free loopback ports, with freshly formatted
storage of its own.

Usage::

    with KafkaBroker() as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap})

Command line (from the repository root)::

    python -m tests.services.kafka               # prints 127.0.0.1:PORT, runs until
                                                 # SIGTERM/SIGINT
    python -m tests.services.kafka --fetch-only  # only resolves the classpath (CI)

The cache lives in ``<root>/<kafka version>/lib``; ``<root>`` is the ``cache_dir``
argument, else ``$MONGOCDC_TEST_KAFKA_CACHE``, else ``$MONGOCDC_TEST_CACHE_DIR/kafka`` (the
root all test services share), else ``<repo>/.cache/kafka``. The Kafka version is the
``kafka.version`` property of ``kafka-pom.xml`` next to this file.

JVM start-up is cut roughly in half by dynamic AppCDS archives kept next to the cache
(``<root>/<version>/cds``); the first broker start records them (and is slower, also
to stop). ``MONGOCDC_TEST_KAFKA_CDS=0`` disables that.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Final, Self
from xml.etree import ElementTree

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

__all__ = [
    "CACHE_ENV",
    "CDS_ENV",
    "SHARED_CACHE_ENV",
    "KAFKA_VERSION",
    "KafkaBroker",
    "KafkaServiceError",
    "ensure_kafka_classpath",
    "kafka_cache_root",
    "main",
]

log = logging.getLogger(__name__)

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
POM_FILE: Final = Path(__file__).with_name("kafka-pom.xml")
CACHE_ENV: Final = "MONGOCDC_TEST_KAFKA_CACHE"
# MONGOCDC_TEST_* variables are ignored by mongocdc's settings loader, while other
# MONGOCDC_KAFKA_* ones would be passed to librdkafka (mongocdc/config/loading.py).
CDS_ENV: Final = "MONGOCDC_TEST_KAFKA_CDS"
SHARED_CACHE_ENV: Final = "MONGOCDC_TEST_CACHE_DIR"
_STAMP: Final = ".mongocdc-complete"
_MAVEN_TIMEOUT_S: Final = 1800.0
_HOST: Final = "127.0.0.1"
_WARMUP_GROUP: Final = "__mongocdc_warmup"

JVM_OPTIONS: Final[tuple[str, ...]] = (
    "-Xms256m",
    "-Xmx512m",
    # Start-up over peak throughput: C1 only, the serial collector, no hsperfdata.
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:-UsePerfData",
    "-Xshare:auto",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    # Otherwise log4j's shutdown hook stops logging before Kafka is done shutting down.
    "-Dlog4j2.shutdownHookEnabled=false",
)


class KafkaServiceError(RuntimeError):
    """The Kafka classpath could not be resolved or the broker did not start."""


def _read_kafka_version() -> str:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.parse(POM_FILE).getroot()
    node = root.find("m:properties/m:kafka.version", ns)
    version = "" if node is None or node.text is None else node.text.strip()
    if not version:
        raise KafkaServiceError(f"{POM_FILE} has no <kafka.version> property")
    return version


KAFKA_VERSION: Final[str] = _read_kafka_version()
"""The Apache Kafka version the broker runs (from ``kafka-pom.xml``)."""


# ---------------------------------------------------------------------------------------
# Classpath


def kafka_cache_root(cache_dir: Path | None = None) -> Path:
    """The directory under which ``<version>/lib`` caches are kept."""
    if cache_dir is not None:
        return cache_dir.expanduser().resolve()
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env).expanduser().resolve()
    shared = os.environ.get(SHARED_CACHE_ENV, "").strip()
    if shared:
        return Path(shared).expanduser().resolve() / "kafka"
    return REPO_ROOT / ".cache" / "kafka"


def _pom_digest() -> str:
    return hashlib.sha256(POM_FILE.read_bytes()).hexdigest()


def _is_complete(lib: Path, digest: str) -> bool:
    try:
        stamp = (lib / _STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return stamp == digest and (lib / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _run_maven(output_dir: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaServiceError("Maven ('mvn') is not on PATH; it is needed to fetch Kafka")
    command = [
        mvn,
        "-q",
        "-B",
        "-Dstyle.color=never",
        "-f",
        str(POM_FILE),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={output_dir}",
    ]
    try:
        result = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_MAVEN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        message = f"Maven did not finish within {_MAVEN_TIMEOUT_S:.0f}s"
        raise KafkaServiceError(message) from exc
    if result.returncode != 0:
        raise KafkaServiceError(
            f"Maven failed to resolve Kafka {KAFKA_VERSION} (exit {result.returncode}):\n"
            + _tail(result.stdout + result.stderr)
        )


def ensure_kafka_classpath(cache_dir: Path | None = None) -> Path:
    """Return a directory holding Kafka's jars and all their runtime dependencies.

    The first call resolves them with Maven (from Maven Central, through ``~/.m2``)
    into ``kafka_cache_root(cache_dir) / KAFKA_VERSION / "lib"``; later calls, also
    from other processes, return at once without running Maven. The jars are copied
    into a temporary directory that is renamed into place when complete, under a file
    lock, so concurrent or interrupted runs never expose a half-filled cache. Editing
    ``kafka-pom.xml`` invalidates the cache.
    """
    version_dir = kafka_cache_root(cache_dir) / KAFKA_VERSION
    lib = version_dir / "lib"
    digest = _pom_digest()
    if _is_complete(lib, digest):
        return lib

    version_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(version_dir / ".lock"):
        if _is_complete(lib, digest):  # another process finished while we waited
            return lib
        for stale in [*version_dir.glob("lib.tmp-*"), *version_dir.glob("lib.old-*")]:
            shutil.rmtree(stale, ignore_errors=True)  # left by an interrupted run
        started = time.monotonic()
        log.info("Resolving Kafka %s with Maven into %s (once)", KAFKA_VERSION, lib)
        tmp = Path(tempfile.mkdtemp(prefix="lib.tmp-", dir=version_dir))
        try:
            _run_maven(tmp)
            (tmp / _STAMP).write_text(digest + "\n", encoding="utf-8")
            if not _is_complete(tmp, digest):
                raise KafkaServiceError(f"Maven copied no kafka_2.13-{KAFKA_VERSION}.jar")
            if lib.exists():  # resolved from an older kafka-pom.xml
                old = version_dir / f"lib.old-{uuid.uuid4().hex}"
                lib.rename(old)
                tmp.rename(lib)
                shutil.rmtree(old, ignore_errors=True)
            else:
                tmp.rename(lib)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        elapsed = time.monotonic() - started
        log.info("Resolved Kafka %s in %.1fs", KAFKA_VERSION, elapsed)
    return lib


# ---------------------------------------------------------------------------------------
# JVM helpers


def _find_java() -> str:
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise KafkaServiceError("Java 17+ ('java') is not on PATH or in JAVA_HOME")
    return java


def _cds_enabled() -> bool:
    value = os.environ.get(CDS_ENV, "1").strip().lower()
    return value not in {"0", "false", "no", "off"}


class _SharedArchive:
    """A dynamic AppCDS archive for one JVM entry point (``-XX:ArchiveClassesAtExit``).

    A run without an archive records the classes it loads into a private file that is
    renamed into place only after that JVM exited normally; later runs map it, which
    roughly halves JVM start-up. The name fingerprints the JVM build, options and
    classpath, so a changed JDK or cache gets a new archive. An archive that a failed
    JVM was using is deleted (see :meth:`discard`).
    """

    _STALE_AFTER_S: Final = 3600.0

    def __init__(self, command: Sequence[str], lib: Path) -> None:
        self.in_use = False
        self._recording: Path | None = None
        self._path: Path | None = None
        if not _cds_enabled():
            return
        java = Path(os.path.realpath(command[0]))
        parts = list(command)
        with contextlib.suppress(OSError):
            parts.append((lib / _STAMP).read_text(encoding="utf-8").strip())
        home = java.parent.parent
        for file in (java, home / "lib" / "server" / "libjvm.so", home / "lib" / "modules"):
            with contextlib.suppress(OSError):
                stat = file.stat()
                parts.append(f"{file}:{stat.st_size}:{stat.st_mtime_ns}")
        digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
        self._path = lib.parent / "cds" / f"{command[-1]}-{digest}.jsa"

    def jvm_options(self) -> list[str]:
        """Options for the next run: use the archive, or record one."""
        self.in_use = False
        self._recording = None
        if self._path is None:
            return []
        if self._path.is_file():
            self.in_use = True
            return [f"-XX:SharedArchiveFile={self._path}"]
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            now = time.time()
            for stale in self._path.parent.glob("*.tmp"):  # from killed recordings
                if now - stale.stat().st_mtime > self._STALE_AFTER_S:
                    stale.unlink(missing_ok=True)
        except OSError:
            return []  # e.g. a read-only cache: run without CDS
        token = uuid.uuid4().hex
        self._recording = self._path.with_name(f"{self._path.stem}.{token}.tmp")
        # -Xlog: without it the recording JVM lists every class it cannot archive.
        return [f"-XX:ArchiveClassesAtExit={self._recording}", "-Xlog:cds*=off"]

    def finish(self, *, clean_exit: bool) -> None:
        """After the JVM exited: keep a recording made by a cleanly exited JVM."""
        recording, self._recording = self._recording, None
        if recording is None or self._path is None:
            return
        try:
            if clean_exit and recording.is_file() and recording.stat().st_size > 0:
                os.replace(recording, self._path)
        except OSError:
            log.debug("could not keep CDS archive %s", recording, exc_info=True)
        finally:
            recording.unlink(missing_ok=True)

    def discard(self) -> bool:
        """Delete the archive if the last run used it; True if it did."""
        if not self.in_use or self._path is None:
            return False
        self.in_use = False
        log.warning("JVM failed with CDS archive %s; deleting it", self._path)
        self._path.unlink(missing_ok=True)
        return True


def _looks_like_cds_failure(exit_code: int, output: str) -> bool:
    lowered = output.lower()
    return exit_code in (-6, 134) or "shared archive" in lowered or "[cds]" in lowered


def _kill(proc: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM, then SIGKILL after ``grace_s``; True if it exited without SIGKILL."""
    if proc.poll() is not None:
        return True
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False
    return True


# ---------------------------------------------------------------------------------------
# Broker

_handed_out_ports: set[int] = set()
_ports_lock = threading.Lock()


def _free_ports(count: int) -> list[int]:
    """Loopback ports free now and not handed out before by this process."""
    with _ports_lock, contextlib.ExitStack() as stack:
        ports: list[int] = []
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            stack.enter_context(sock)
            sock.bind((_HOST, 0))
            port: int = sock.getsockname()[1]
            if port not in _handed_out_ports:
                ports.append(port)
        _handed_out_ports.update(ports)
        return ports


def _new_cluster_id() -> str:
    """A random id in Kafka's ``Uuid`` format: URL-safe base64, no leading dash."""
    while True:
        raw = uuid.uuid4().bytes
        cluster_id = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if not cluster_id.startswith("-"):
            return cluster_id


def _read_cluster_id(meta_properties: Path) -> str | None:
    """The ``cluster.id`` of formatted Kafka storage, or None if it is not formatted."""
    try:
        text = meta_properties.read_text(encoding="latin-1")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "cluster.id" and value.strip():
            return value.strip()
    return None


def _properties_escape(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
    return "".join(ch if ord(ch) < 0x7F else f"\\u{ord(ch):04x}" for ch in escaped)


def _can_connect(port: int) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _read_tail(path: Path, lines: int = 40) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            return _tail(handle.read().decode("utf-8", "replace"), lines)
    except OSError:
        return "(missing)"


class _Retry(KafkaServiceError):
    """A start-up failure that a fresh attempt may not hit."""


class _PortInUse(_Retry):
    """Another process took a port between our probe and the broker's bind."""


class KafkaBroker:
    """A single-node Kafka (KRaft, broker + controller) on free loopback ports.

    ``start()`` prepares a data directory (a temporary one unless ``data_dir`` is
    given) with freshly formatted storage, launches the JVM and returns once an
    AdminClient sees the broker. ``stop()`` shuts it down (SIGTERM, then SIGKILL after
    ``stop_timeout``) and removes a temporary data directory; ``restart()`` stops and
    starts it on the same ports, data and cluster id (for outage tests). A given
    ``data_dir`` that already holds formatted storage is reused, not reformatted. As a
    context manager it starts and stops. Independent instances run side by side.

    Broker logs go to ``log_path`` (``<data_dir>/logs/server.log``), the JVM's own
    output to ``<data_dir>/logs/stdout.log``.
    """

    def __init__(
        self,
        *,
        num_partitions: int = 1,
        config: Mapping[str, str] | None = None,
        data_dir: Path | None = None,
        lib_dir: Path | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 20.0,
        jvm_options: Sequence[str] = (),
        log_level: str = "INFO",
    ) -> None:
        """Prepare (but do not start) a broker.

        ``config`` overrides or adds ``server.properties`` entries. ``lib_dir``
        defaults to ``ensure_kafka_classpath()``.
        """
        if num_partitions < 1:
            raise ValueError("num_partitions must be at least 1")
        self.num_partitions = num_partitions
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.startup_seconds: float | None = None
        """Wall time the last successful ``start()`` took."""
        self._extra_config = dict(config or {})
        self._lib_dir = lib_dir
        self._jvm_options = tuple(jvm_options)
        self._log_level = log_level
        self._given_data_dir = None if data_dir is None else data_dir.expanduser().resolve()
        self._data_dir: Path | None = None
        self._cluster_id: str | None = None
        self._formatted = False
        self._ports: tuple[int, int] | None = None  # (PLAINTEXT, CONTROLLER)
        self._proc: subprocess.Popen[bytes] | None = None
        self._proc_archive: _SharedArchive | None = None
        self._output: IO[bytes] | None = None
        self._proc_finalizer: weakref.finalize[[subprocess.Popen[bytes], float], KafkaBroker] | None = None
        self._dir_finalizer: weakref.finalize[[Path, bool], KafkaBroker] | None = None

    # -- properties ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"`` of the PLAINTEXT listener (known once started)."""
        return f"{_HOST}:{self.port}"

    @property
    def port(self) -> int:
        if self._ports is None:
            raise KafkaServiceError("the broker has not been started")
        return self._ports[0]

    @property
    def cluster_id(self) -> str:
        """The id the broker's storage is formatted with (known once started)."""
        if self._cluster_id is None:
            raise KafkaServiceError("the broker has not been started")
        return self._cluster_id

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise KafkaServiceError("the broker has not been started")
        return self._data_dir

    @property
    def log_path(self) -> Path:
        """The broker's log4j log (``<data_dir>/logs/server.log``)."""
        return self.data_dir / "logs" / "server.log"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Start the broker (if not running) and wait until it serves metadata.

        Raises :class:`KafkaServiceError`, with the tail of the broker's logs, if it
        exits or is not ready within ``startup_timeout`` seconds.
        """
        if self.running:
            return self
        self._halt()  # reap a broker that died on its own
        started = time.monotonic()
        deadline = started + self.startup_timeout
        lib = self._lib_dir if self._lib_dir is not None else ensure_kafka_classpath()
        java = _find_java()
        self._prepare_data_dir()
        ports_fixed = self._ports is not None  # a restart keeps its address
        attempts = 3
        for attempt in range(1, attempts + 1):
            try:
                self._launch(java, lib)
                self._wait_until_ready(deadline)
            except _Retry as exc:
                self._halt()
                if attempt == attempts or (ports_fixed and isinstance(exc, _PortInUse)):
                    raise
                reason = str(exc).splitlines()[0]
                log.info("Kafka start attempt %d failed, retrying: %s", attempt, reason)
                if isinstance(exc, _PortInUse):
                    self._ports = None
            except BaseException:
                self._halt()
                raise
            else:
                self.startup_seconds = time.monotonic() - started
                log.info(
                    "Kafka %s ready on %s (cluster %s) in %.2fs",
                    KAFKA_VERSION,
                    self.bootstrap,
                    self._cluster_id,
                    self.startup_seconds,
                )
                return self
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Shut the broker down: SIGTERM, then SIGKILL after ``stop_timeout`` seconds.

        The ports are released. A temporary data directory is removed, so a later
        ``start()`` brings up a new, empty cluster; a given ``data_dir`` is kept and a
        later ``start()`` brings its cluster back (on new ports). Idempotent.
        """
        self._halt()
        self._ports = None
        if self._dir_finalizer is not None:
            self._dir_finalizer()  # rmtree
            self._dir_finalizer = None
            self._data_dir = None
            self._cluster_id = None
            self._formatted = False

    def halt(self) -> None:
        """Stop the broker process but keep its ports, data and cluster id (an outage).

        A later ``start()`` brings the same cluster back at the same address, as a broker
        that comes back after a crash or a network partition would.
        """
        self._halt()

    def restart(self) -> Self:
        """Stop and start again on the same ports, data and cluster id."""
        self._halt()
        return self.start()

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.bootstrap if self._ports is not None else "not started"
        state = "running" if self.running else "stopped"
        return f"<KafkaBroker {KAFKA_VERSION} {where} {state}>"

    # -- internals -------------------------------------------------------------------

    def _prepare_data_dir(self) -> None:
        if self._data_dir is None:
            if self._given_data_dir is None:
                self._data_dir = Path(tempfile.mkdtemp(prefix="mongocdc-kafka-")).resolve()
                # Removed by stop(), or at the latest at interpreter exit.
                self._dir_finalizer = weakref.finalize(self, shutil.rmtree, self._data_dir, True)
            else:
                self._data_dir = self._given_data_dir
                self._data_dir.mkdir(parents=True, exist_ok=True)
        if self._cluster_id is None:
            existing = _read_cluster_id(self._data_dir / "kafka-data" / "meta.properties")
            self._formatted = existing is not None
            self._cluster_id = existing or _new_cluster_id()

    def _server_properties(self) -> dict[str, str]:
        assert self._ports is not None
        port, controller_port = self._ports
        plaintext = f"PLAINTEXT://{_HOST}:{port}"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{_HOST}:{controller_port}",
            "listeners": f"{plaintext},CONTROLLER://{_HOST}:{controller_port}",
            "advertised.listeners": plaintext,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "kafka-data"),
            "num.partitions": str(self.num_partitions),
            "auto.create.topics.enable": "true",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
        }
        props.update(self._extra_config)
        return props

    def _write_files(self) -> Path:
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        props = self._server_properties()
        lines = [f"{key}={_properties_escape(value)}" for key, value in props.items()]
        (self.data_dir / "server.properties").write_text("\n".join(lines) + "\n")
        log4j = [
            "status = error",
            "appender.file.type = File",
            "appender.file.name = FILE",
            "appender.file.fileName = ${sys:kafka.logs.dir}/server.log",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = [%d] %p %m (%c)%n",
            f"rootLogger.level = {self._log_level}",
            "rootLogger.appenderRef.file.ref = FILE",
            "logger.request.name = kafka.request.logger",
            "logger.request.level = WARN",
        ]
        (self.data_dir / "log4j2.properties").write_text("\n".join(log4j) + "\n")
        return logs

    def _java_command(self, java: str, lib: Path, main: str, *args: str) -> tuple[list[str], _SharedArchive]:
        jvm = [java, *JVM_OPTIONS, *self._jvm_options, "-cp", str(lib / "*"), main]
        archive = _SharedArchive(jvm, lib)
        command = [
            *jvm[:-3],
            *archive.jvm_options(),
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            *jvm[-3:],
            *args,
        ]
        return command, archive

    def _format_storage(self, java: str, lib: Path) -> None:
        assert self._cluster_id is not None
        shutil.rmtree(self.data_dir / "kafka-data", ignore_errors=True)
        for _ in range(2):
            command, archive = self._java_command(
                java,
                lib,
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                self._cluster_id,
                "--config",
                str(self.data_dir / "server.properties"),
            )
            result = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=max(30.0, self.startup_timeout),
                check=False,
                cwd=self.data_dir,
            )
            output = result.stdout + result.stderr
            archive.finish(clean_exit=result.returncode == 0)
            if result.returncode == 0:
                self._formatted = True
                return
            if not (_looks_like_cds_failure(result.returncode, output) and archive.discard()):
                break
        raise KafkaServiceError(f"formatting Kafka storage failed (exit {result.returncode}):\n" + _tail(output))

    def _launch(self, java: str, lib: Path) -> None:
        if self._ports is None:
            port, controller_port = _free_ports(2)
            self._ports = (port, controller_port)
        logs = self._write_files()
        if not self._formatted:
            self._format_storage(java, lib)
        config = str(self.data_dir / "server.properties")
        command, self._proc_archive = self._java_command(java, lib, "kafka.Kafka", config)
        self._output = (logs / "stdout.log").open("ab")
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            cwd=self.data_dir,
            # Own session: a terminal's Ctrl-C reaches only us, and we stop it cleanly.
            start_new_session=True,
        )
        self._proc_finalizer = weakref.finalize(self, _kill, self._proc, 5.0)

    def _halt(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            graceful = _kill(proc, self.stop_timeout)
            if self._proc_archive is not None:
                self._proc_archive.finish(clean_exit=graceful and proc.returncode in (0, 143))
        self._proc_archive = None
        if self._proc_finalizer is not None:
            self._proc_finalizer.detach()
            self._proc_finalizer = None
        if self._output is not None:
            self._output.close()
            self._output = None

    def _logs_tail(self) -> str:
        logs = self.data_dir / "logs"
        stdout = _read_tail(logs / "stdout.log", 20)
        server = _read_tail(logs / "server.log")
        return f"--- {logs / 'stdout.log'} (tail) ---\n{stdout}\n--- {logs / 'server.log'} (tail) ---\n{server}"

    def _check_alive(self) -> None:
        assert self._proc is not None
        code = self._proc.poll()
        if code is None:
            return
        tail = self._logs_tail()
        message = f"Kafka broker exited with code {code} during start-up\n{tail}"
        if "Address already in use" in tail:
            raise _PortInUse(message)
        archive = self._proc_archive
        if archive is not None and _looks_like_cds_failure(code, tail) and archive.discard():
            raise _Retry(message)
        raise KafkaServiceError(message)

    def _pause(self, seconds: float) -> None:
        """Wait up to ``seconds``, returning early if the broker process exits."""
        assert self._proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=seconds)

    def _timeout(self, what: str) -> KafkaServiceError:
        return KafkaServiceError(f"Kafka broker {what} within {self.startup_timeout:.0f}s\n{self._logs_tail()}")

    def _wait_until_ready(self, deadline: float) -> None:
        port = self.port
        # A plain TCP probe first: cheap, and quiet unlike librdkafka's connect errors.
        while not _can_connect(port):
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._timeout(f"did not listen on {self.bootstrap}")
            self._pause(0.05)

        admin = AdminClient(
            {
                "bootstrap.servers": self.bootstrap,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
                "log_level": 0,  # connection errors are expected here; keep stderr clean
            }
        )
        last_error = "no answer"
        while True:
            self._check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout(f"did not serve metadata ({last_error})")
            try:
                metadata = admin.list_topics(timeout=min(2.0, remaining))
            except KafkaException as exc:
                last_error = str(exc)
                self._pause(0.05)
                continue
            if metadata.cluster_id != self._cluster_id:
                raise KafkaServiceError(
                    f"{self.bootstrap} answered with cluster id {metadata.cluster_id}, "
                    f"not {self._cluster_id}: another broker holds the port"
                )
            if metadata.brokers:
                break
            last_error = "no brokers in metadata yet"
            self._pause(0.05)

        self._warm_up(admin, deadline)

    def _warm_up(self, admin: AdminClient, deadline: float) -> None:
        """Make the broker set up what clients would otherwise wait for. Best effort.

        Looking up a group's coordinator creates __consumer_offsets now, so a test's
        first consumer joins in ~0.2s instead of ~3s (librdkafka re-queries an
        unavailable coordinator once a second). An idempotent producer's connection
        makes the broker fetch a producer-id block from the controller now, so the
        first idempotent produce takes ~0.1s instead of ~0.6s, without a "Coordinator
        load in progress" warning on stderr.
        """
        timeout = max(0.1, min(5.0, deadline - time.monotonic()))
        with contextlib.suppress(Exception):
            futures = admin.describe_consumer_groups([_WARMUP_GROUP], request_timeout=timeout)
            producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "log_level": 0})
            producer.list_topics(timeout=timeout)  # connected: InitProducerId is sent
            for future in futures.values():
                future.exception(timeout=timeout)
            producer.flush(0)


# ---------------------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.services.kafka [--fetch-only]``; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.services.kafka",
        description="Run a single-node Kafka broker, print its bootstrap address on "
        "stdout and stop it cleanly on SIGTERM/SIGINT.",
    )
    parser.add_argument(
        "--fetch-only",
        action="store_true",
        help="only resolve the Kafka classpath into the cache (prints its directory)",
    )
    parser.add_argument("--partitions", type=int, default=1, help="num.partitions")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep broker data here, reused if it holds Kafka storage (default: a temp dir, removed on exit)",
    )
    parser.add_argument("--startup-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")

    stop_requested = threading.Event()
    serving = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if not serving:  # fetching or starting: abort; Maven and the JVM are cleaned up
            raise SystemExit(128 + signum)
        stop_requested.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    if args.fetch_only:
        print(ensure_kafka_classpath(), flush=True)
        return 0

    with KafkaBroker(
        num_partitions=args.partitions,
        data_dir=args.data_dir,
        startup_timeout=args.startup_timeout,
    ) as broker:
        serving = True
        print(broker.bootstrap, flush=True)
        log.info("cluster id %s; broker log %s", broker.cluster_id, broker.log_path)
        while not stop_requested.wait(timeout=1.0):
            if not broker.running:
                log.error("Kafka broker exited unexpectedly; see %s", broker.log_path)
                return 1
        log.info("stopping Kafka broker")
    return 0


if __name__ == "__main__":
    sys.exit(main())
