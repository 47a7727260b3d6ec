"""What the JVM test services share: the Kafka broker (``kafka.py``) and Kafka Connect (``connect.py``).

* Maven resolution of a checked-in pom into a cache directory, once (:func:`resolve_once`,
  :func:`run_maven`): the jars are copied into a temporary directory that is renamed into
  place when complete, under a file lock, and a stamp holding the pom's SHA-256
  (``.mongocdc-complete``) marks a finished cache, so editing the pom invalidates it.
* Java discovery (:func:`find_java`) and dynamic AppCDS archives (:class:`SharedArchive`,
  ``MONGOCDC_TEST_KAFKA_CDS=0`` disables them).
* :class:`JvmService`, the life cycle of one JVM process: a data directory (temporary unless
  given), its properties and log4j2 files, start with retries (a port taken by
  another process, a CDS archive the JVM failed with), graceful stop (SIGTERM, then SIGKILL),
  the tails of its logs.
* Process helpers for every test service: free loopback ports (claimed across the machine's test
  processes, so parallel pytest-xdist workers never pick the same one), :func:`kill`, log tails,
  :class:`StopOnExit` (``with service:`` ends with ``service.stop()``) and
  :class:`ServiceCommand` (a service's command line, stopped by SIGTERM/SIGINT).
"""

from __future__ import annotations

import argparse
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, ClassVar, Final, Self
from xml.etree import ElementTree

__all__ = [
    "CDS_ENV",
    "HOST",
    "JVM_OPTIONS",
    "PORT_CLAIMS_ENV",
    "REPO_ROOT",
    "SHARED_CACHE_ENV",
    "STAMP",
    "JvmService",
    "SharedArchive",
    "ServiceCommand",
    "StopOnExit",
    "cache_root",
    "file_lock",
    "find_java",
    "free_ports",
    "kill",
    "looks_like_cds_failure",
    "pom_properties",
    "properties_escape",
    "read_tail",
    "resolve_once",
    "run_maven",
    "tail",
]

log = logging.getLogger(__name__)

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
# MONGOCDC_TEST_* variables are ignored by mongocdc's settings loader, while other
# MONGOCDC_KAFKA_* ones would be passed to librdkafka (mongocdc/config/loading.py).
CDS_ENV: Final = "MONGOCDC_TEST_KAFKA_CDS"
SHARED_CACHE_ENV: Final = "MONGOCDC_TEST_CACHE_DIR"
STAMP: Final = ".mongocdc-complete"
HOST: Final = "127.0.0.1"
_MAVEN_TIMEOUT_S: Final = 1800.0

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


# ---------------------------------------------------------------------------------------
# Maven classpath caches


def pom_properties(pom: Path, names: Sequence[str], error: type[Exception]) -> dict[str, str]:
    """The ``<properties>`` ``names`` of ``pom``; ``error`` if one is missing or empty."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.parse(pom).getroot()
    found: dict[str, str] = {}
    for name in names:
        node = root.find(f"m:properties/m:{name}", ns)
        value = "" if node is None or node.text is None else node.text.strip()
        if not value:
            raise error(f"{pom} has no <{name}> property")
        found[name] = value
    return found


def cache_root(cache_dir: Path | None, env: str, name: str) -> Path:
    """``cache_dir``, else ``$env``, else ``$MONGOCDC_TEST_CACHE_DIR/<name>``, else ``<repo>/.cache/<name>``."""
    if cache_dir is not None:
        return cache_dir.expanduser().resolve()
    given = os.environ.get(env, "").strip()
    if given:
        return Path(given).expanduser().resolve()
    shared = os.environ.get(SHARED_CACHE_ENV, "").strip()
    if shared:
        return Path(shared).expanduser().resolve() / name
    return REPO_ROOT / ".cache" / name


def _is_complete(directory: Path, digest: str, required: Sequence[Path]) -> bool:
    try:
        stamp = (directory / STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return stamp == digest and all((directory / path).is_file() for path in required)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if need be): one-time installs and builds into the shared
    cache, which parallel pytest-xdist workers (and other checkouts sharing ``.cache``) may start at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def tail(text: str, lines: int = 40) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_maven(
    pom: Path,
    output_dir: Path,
    *,
    fetching: str,
    failed: Callable[[int], str],
    error: type[Exception],
    profile: str | None = None,
) -> None:
    """Copy the runtime dependencies of ``pom`` (its ``profile``) into ``output_dir``.

    ``error`` if Maven is missing (it is needed to fetch ``fetching``), times out, or fails
    (then ``failed(exit code)`` heads the message, above the tail of Maven's output).
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise error(f"Maven ('mvn') is not on PATH; it is needed to fetch {fetching}")
    profiles = [] if profile is None else ["-P", profile]
    command = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(pom), *profiles, "dependency:copy-dependencies"]
    command += ["-DincludeScope=runtime", f"-DoutputDirectory={output_dir}"]
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
        raise error(f"Maven did not finish within {_MAVEN_TIMEOUT_S:.0f}s") from exc
    if result.returncode != 0:
        raise error(failed(result.returncode) + "\n" + tail(result.stdout + result.stderr))


def resolve_once(
    pom: Path,
    target: Path,
    *,
    required: Sequence[Path],
    fill: Callable[[Path], None],
    what: str,
    error: type[Exception],
) -> Path:
    """Return ``target``, a cache directory filled by ``fill`` (Maven) from ``pom``, filling it first if need be.

    ``target`` is complete when its stamp holds the SHA-256 of ``pom`` and the files
    ``required`` (relative to it) exist; then this returns at once, also in other processes.
    Otherwise, under a file lock (``<target's parent>/.lock``), ``fill`` fills a temporary
    sibling ``<name>.tmp-*`` that is renamed into place once stamped and complete (an older
    ``target`` is moved aside to ``<name>.old-*`` and removed), so concurrent or interrupted
    runs never expose a half-filled cache. ``error`` if ``fill`` left a required file out.
    """
    version_dir, name = target.parent, target.name
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    if _is_complete(target, digest, required):
        return target

    version_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(version_dir / ".lock"):
        if _is_complete(target, digest, required):  # another process finished while we waited
            return target
        for stale in [*version_dir.glob(f"{name}.tmp-*"), *version_dir.glob(f"{name}.old-*")]:
            shutil.rmtree(stale, ignore_errors=True)  # left by an interrupted run
        started = time.monotonic()
        log.info("Resolving %s with Maven into %s (once)", what, target)
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}.tmp-", dir=version_dir))
        try:
            fill(tmp)
            (tmp / STAMP).write_text(digest + "\n", encoding="utf-8")
            if not _is_complete(tmp, digest, required):
                raise error("Maven copied no " + " or ".join(path.name for path in required))
            if target.exists():  # resolved from an older pom
                old = version_dir / f"{name}.old-{uuid.uuid4().hex}"
                target.rename(old)
                tmp.rename(target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("Resolved %s in %.1fs", what, time.monotonic() - started)
    return target


# ---------------------------------------------------------------------------------------
# Java and class-data sharing


def find_java(error: type[Exception], missing: str = "Java 17+ ('java') is not on PATH or in JAVA_HOME") -> str:
    """``$JAVA_HOME/bin/java``, else ``java`` on PATH; ``error(missing)`` if neither exists."""
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise error(missing)
    return java


def _cds_enabled() -> bool:
    value = os.environ.get(CDS_ENV, "1").strip().lower()
    return value not in {"0", "false", "no", "off"}


class SharedArchive:
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
            parts.append((lib / STAMP).read_text(encoding="utf-8").strip())
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


def looks_like_cds_failure(exit_code: int, output: str) -> bool:
    """Whether a JVM that exited with ``exit_code`` and ``output`` may have failed on its CDS archive."""
    lowered = output.lower()
    return exit_code in (-6, 134) or "shared archive" in lowered or "[cds]" in lowered


# ---------------------------------------------------------------------------------------
# Processes, ports, logs


def kill(proc: subprocess.Popen[bytes], grace_s: float) -> bool:
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


_handed_out_ports: set[int] = set()
_ports_lock = threading.Lock()
PORT_CLAIMS_ENV: Final = "MONGOCDC_TEST_PORT_CLAIMS"
_PORT_CLAIM_S: Final = 3600.0


def _port_claims_dir() -> Path | None:
    """Where the processes of the machine's test runs (pytest-xdist workers, other checkouts) claim the ports they
    hand out: ``$MONGOCDC_TEST_PORT_CLAIMS``, else ``<tmp>/mongocdc-test-ports``; None if it cannot be made."""
    given = os.environ.get(PORT_CLAIMS_ENV, "").strip()
    directory = Path(given) if given else Path(tempfile.gettempdir()) / "mongocdc-test-ports"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return directory


def _claim_port(directory: Path | None, port: int) -> bool:
    """Claim ``port`` for this process for an hour (a file ``<port>`` created exclusively); False if another
    process claimed it within the hour. A claim outlives its probe on purpose: a service that stops and starts
    again on the same port (a restart, an outage test) finds it still free of other test services."""
    if directory is None:
        return True
    claim = directory / str(port)
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                if time.time() - claim.stat().st_mtime < _PORT_CLAIM_S:
                    return False
                claim.unlink()  # stale: claimed more than an hour ago
            except FileNotFoundError:
                pass
            except OSError:
                return False
            continue
        except OSError:
            return True  # a read-only or full temp directory: fall back to the probe alone
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{os.getpid()}\n")
        return True
    return False


def free_ports(count: int) -> list[int]:
    """Loopback ports free now, not handed out before by this process, nor within the hour by another test process
    of this machine (parallel pytest-xdist workers probe at the same time: the kernel may offer the same port to two
    of them before either service binds it)."""
    directory = _port_claims_dir()
    with _ports_lock, contextlib.ExitStack() as stack:
        ports: list[int] = []
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            stack.enter_context(sock)
            sock.bind((HOST, 0))
            port: int = sock.getsockname()[1]
            if port not in _handed_out_ports and port not in ports and _claim_port(directory, port):
                ports.append(port)
        _handed_out_ports.update(ports)
        return ports


def properties_escape(value: str) -> str:
    """``value`` escaped for a Java ``.properties`` file."""
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
    return "".join(ch if ord(ch) < 0x7F else f"\\u{ord(ch):04x}" for ch in escaped)


def read_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of the file (of its last 64 KiB), or ``(missing)``."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            return tail(handle.read().decode("utf-8", "replace"), lines)
    except OSError:
        return "(missing)"


class StopOnExit:
    """A test service as a context manager: leaving the ``with`` block calls ``stop()``."""

    def stop(self) -> object:
        raise NotImplementedError

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class ServiceCommand:
    """The command line of a JVM service (``python -m <module> [--fetch-only]``).

    :meth:`parse` installs handlers for SIGTERM and SIGINT. Until :meth:`serve` has the
    service started, a signal aborts with ``SystemExit(128 + signal)``, so that Maven and a
    starting JVM are cleaned up; afterwards it stops the service and ends :meth:`serve`.
    """

    def __init__(self, module: str, description: str, fetch_help: str) -> None:
        self.parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
        self.parser.add_argument("--fetch-only", action="store_true", help=fetch_help)
        self._serving = False
        self._stop_requested = threading.Event()

    def parse(self, argv: Sequence[str] | None) -> argparse.Namespace:
        """Parse ``argv``, log INFO to stderr, install the signal handlers."""
        args = self.parser.parse_args(argv)
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        return args

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._serving:  # fetching or starting: abort; Maven and the JVM are cleaned up
            raise SystemExit(128 + signum)
        self._stop_requested.set()

    def serve(self, service: JvmService, name: str, address: Callable[[], str], details: Callable[[], str]) -> int:
        """Start ``service``, print ``address()`` on stdout, log ``details()``, stop it on a signal.

        Returns 0, or 1 if the service exited on its own first.
        """
        with service:
            self._serving = True
            print(address(), flush=True)
            log.info("%s", details())
            while not self._stop_requested.wait(timeout=1.0):
                if not service.running:
                    log.error("%s exited unexpectedly; see %s", name, service.log_path)
                    return 1
            log.info("stopping %s", name)
        return 0


# ---------------------------------------------------------------------------------------
# A JVM service's life cycle


class JvmService(StopOnExit):
    """One JVM process run from a Maven-resolved classpath, with a data directory of its own.

    Subclasses set the class attributes, write their files with :meth:`_write_config`,
    start the JVM in ``_launch`` (returned by :meth:`_prepare_start`) with
    :meth:`_java_command` and :meth:`_spawn`, and wait for it in :meth:`_wait_until_ready`.
    The JVM's own output goes to ``<data_dir>/logs/stdout.log``, its log4j log to
    ``<data_dir>/logs/<_log_name>`` (:attr:`log_path`).
    """

    _error: ClassVar[type[Exception]]
    """What the service raises."""
    _retry: ClassVar[type[Exception]]
    """A start-up failure that a fresh attempt may not hit (``start()`` retries it)."""
    _port_in_use: ClassVar[type[Exception]]
    """Another process took a port between our probe and the JVM's bind (a ``_retry``)."""
    _what: ClassVar[str]
    """``"the broker"``: what "has not been started"."""
    _name: ClassVar[str]
    """``"Kafka"``: whose start attempt failed, in the log."""
    _exited: ClassVar[str]
    """The message when the JVM exited during start-up, with ``{code}``."""
    _log_name: ClassVar[str]
    _temp_prefix: ClassVar[str]
    _base_jvm_options: ClassVar[tuple[str, ...]]
    _deadline_per_attempt: ClassVar[bool] = False
    """Whether each start attempt gets ``startup_timeout`` (else all of them together)."""

    def __init__(
        self,
        config: Mapping[str, str] | None,
        data_dir: Path | None,
        startup_timeout: float,
        stop_timeout: float,
        jvm_options: Sequence[str],
        log_level: str,
    ) -> None:
        """``config``: properties that override or add to the service's own."""
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.startup_seconds: float | None = None
        """Wall time the last successful ``start()`` took."""
        self._extra_config = dict(config or {})
        self._jvm_options = tuple(jvm_options)
        self._log_level = log_level
        self._given_data_dir = None if data_dir is None else data_dir.expanduser().resolve()
        self._data_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._proc_archive: SharedArchive | None = None
        self._output: IO[bytes] | None = None
        self._proc_finalizer: weakref.finalize[[subprocess.Popen[bytes], float], JvmService] | None = None
        self._dir_finalizer: weakref.finalize[[Path, bool], JvmService] | None = None

    # -- properties ------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise self._error(f"{self._what} has not been started")
        return self._data_dir

    @property
    def log_path(self) -> Path:
        """The log4j log: ``<data_dir>/logs/server.log`` (the broker), ``connect.log`` (Kafka Connect)."""
        return self.data_dir / "logs" / self._log_name

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Start the JVM (if not running) and wait until it is ready.

        Raises the service's error, with the tail of its logs, if it exits or is not ready
        within ``startup_timeout`` seconds.
        """
        if self.running:
            return self
        self._halt()  # reap a JVM that died on its own
        started = time.monotonic()
        launch = self._prepare_start()
        attempts = 3
        for attempt in range(1, attempts + 1):
            deadline = (time.monotonic() if self._deadline_per_attempt else started) + self.startup_timeout
            try:
                launch()
                self._wait_until_ready(deadline)
            except self._retry as exc:
                self._halt()
                if not self._prepare_retry(exc, last=attempt == attempts):
                    raise
                reason = str(exc).splitlines()[0]
                log.info("%s start attempt %d failed, retrying: %s", self._name, attempt, reason)
            except BaseException:
                self._halt()
                raise
            else:
                self.startup_seconds = time.monotonic() - started
                self._log_ready()
                return self
        raise AssertionError("unreachable")

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def logs_tail(self) -> str:
        """The tails of the JVM's output and of its log4j log."""
        if self._data_dir is None:
            return f"(no logs: {self._what} was never started)"
        logs = self._data_dir / "logs"
        stdout = read_tail(logs / "stdout.log", 20)
        main = read_tail(logs / self._log_name)
        return f"--- {logs / 'stdout.log'} (tail) ---\n{stdout}\n--- {logs / self._log_name} (tail) ---\n{main}"

    # -- hooks -----------------------------------------------------------------------

    def _prepare_start(self) -> Callable[[], None]:
        """Before the first attempt: resolve what the JVM needs; returns what launches it."""
        raise NotImplementedError

    def _wait_until_ready(self, deadline: float) -> None:
        raise NotImplementedError

    def _prepare_retry(self, exc: Exception, *, last: bool) -> bool:
        """After a failed attempt (the JVM halted): False to give up, else ready the next one."""
        return not last

    def _log_ready(self) -> None:
        pass

    # -- internals -------------------------------------------------------------------

    def _prepare_data_dir(self) -> None:
        if self._data_dir is not None:
            return
        if self._given_data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix=self._temp_prefix)).resolve()
            # Removed by stop(), or at the latest at interpreter exit.
            self._dir_finalizer = weakref.finalize(self, shutil.rmtree, self._data_dir, True)
        else:
            self._data_dir = self._given_data_dir
            self._data_dir.mkdir(parents=True, exist_ok=True)

    def _remove_temp_dir(self) -> bool:
        """Remove a temporary data directory (a given one is kept); True if there was one."""
        if self._dir_finalizer is None:
            return False
        self._dir_finalizer()  # rmtree
        self._dir_finalizer = None
        self._data_dir = None
        return True

    def _write_config(self, name: str, props: Mapping[str, str], pattern: str, loggers: Sequence[str]) -> Path:
        """Write ``<data_dir>/<name>`` and ``log4j2.properties``; returns (and makes) the logs directory."""
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        lines = [f"{key}={properties_escape(value)}" for key, value in props.items()]
        (self.data_dir / name).write_text("\n".join(lines) + "\n")
        log4j = [
            "status = error",
            "appender.file.type = File",
            "appender.file.name = FILE",
            "appender.file.fileName = ${sys:kafka.logs.dir}/" + self._log_name,
            "appender.file.layout.type = PatternLayout",
            f"appender.file.layout.pattern = {pattern}",
            f"rootLogger.level = {self._log_level}",
            "rootLogger.appenderRef.file.ref = FILE",
            *loggers,
        ]
        (self.data_dir / "log4j2.properties").write_text("\n".join(log4j) + "\n")
        return logs

    def _java_command(
        self, java: str, classpath: Path, home: Path, main: str, *args: str
    ) -> tuple[list[str], SharedArchive]:
        """The command running ``main`` from the jars in ``classpath``, with the CDS archive kept below ``home``."""
        jvm = [java, *self._base_jvm_options, *self._jvm_options, "-cp", str(classpath / "*"), main]
        archive = SharedArchive(jvm, home)
        command = [
            *jvm[:-3],
            *archive.jvm_options(),
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            *jvm[-3:],
            *args,
        ]
        return command, archive

    def _spawn(self, command: Sequence[str], archive: SharedArchive) -> None:
        """Start the JVM in the background, its output appended to ``logs/stdout.log``."""
        self._proc_archive = archive
        self._output = (self.data_dir / "logs" / "stdout.log").open("ab")
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            cwd=self.data_dir,
            # Own session: a terminal's Ctrl-C reaches only us, and we stop it cleanly.
            start_new_session=True,
        )
        self._proc_finalizer = weakref.finalize(self, kill, self._proc, 5.0)

    def _halt(self) -> bool:
        """Stop the JVM (SIGTERM, SIGKILL after ``stop_timeout``); True unless it had to be killed."""
        proc, self._proc = self._proc, None
        graceful = True
        if proc is not None:
            graceful = kill(proc, self.stop_timeout)
            if self._proc_archive is not None:
                self._proc_archive.finish(clean_exit=graceful and proc.returncode in (0, 143))
        self._proc_archive = None
        if self._proc_finalizer is not None:
            self._proc_finalizer.detach()
            self._proc_finalizer = None
        if self._output is not None:
            self._output.close()
            self._output = None
        return graceful

    def _check_alive(self) -> None:
        """Raise if the JVM exited: ``_port_in_use`` or ``_retry`` if another attempt may succeed."""
        if self._proc is None:
            raise self._error(f"{self._what} is not running")
        code = self._proc.poll()
        if code is None:
            return
        logs = self.logs_tail()
        message = self._exited.format(code=code) + "\n" + logs
        if "Address already in use" in logs:
            raise self._port_in_use(message)
        archive = self._proc_archive
        if archive is not None and looks_like_cds_failure(code, logs) and archive.discard():
            raise self._retry(message)  # the archive is gone now
        raise self._error(message)

    def _pause(self, seconds: float) -> None:
        """Wait up to ``seconds``, returning early if the JVM exits."""
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=seconds)
