"""Launchers for the MongoDB wire-protocol servers the tests can run against.

No registry ships a real ``mongod``, so the integration and contract tests run
against a MongoDB *surrogate* installed from a package registry.  Each
candidate has one class here with the same interface:

* ``ensure_installed()`` fetches the server from its registry, idempotently
  (pip into the current interpreter's environment for the Python servers,
  Maven resolution of a checked-in pom into ``<repo>/.cache/<name>/lib`` for
  the Java ones; Java artefacts are built in a temporary directory and renamed
  into place).
* ``start()`` launches it on a free loopback port and returns once ``hello``
  answers (or raises ``ServerStartError`` at the deadline), ``stop()`` ends
  it, ``restart()`` stops and starts it on the same port and data directory,
  so data and the change-stream history survive where the server persists
  them (``persistent``), and ``uri`` is a pymongo connection string for it.
  Instances are context managers.

``server_from_env()`` / ``start_default_server()`` pick the candidate named by
``MONGOCDC_TEST_MONGODB_SERVER`` (default: ``DEFAULT_SERVER``, the most
faithful one according to ``tests/contract``; see ``tests/README.md``).

``python -m tests.services.mongo [NAME]`` installs and starts a server, prints
its URI on one line and runs until SIGTERM/SIGINT; ``--install`` only installs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import ClassVar, Self

import pymongo
import pymongo.errors

from tests.services.jvm import StopOnExit, file_lock, find_java, free_ports

__all__ = [
    "CANDIDATES",
    "DEFAULT_SERVER",
    "SERVER_ENV",
    "MongoJavaServer",
    "MongoServer",
    "MorphiumServer",
    "Nx27017Server",
    "SecantusRsServer",
    "SecantusServer",
    "ServerStartError",
    "cache_dir",
    "free_port",
    "selected_server_name",
    "server_class",
    "server_from_env",
    "start_default_server",
]

SERVER_ENV = "MONGOCDC_TEST_MONGODB_SERVER"
CACHE_ENV = "MONGOCDC_TEST_CACHE_DIR"
LOOPBACK = "127.0.0.1"

REPO_ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCES = Path(__file__).resolve().parent / "java"


class ServerStartError(RuntimeError):
    """The server process died or did not answer ``hello`` before the deadline."""


class InstallError(RuntimeError):
    """Fetching or building a candidate failed."""


def cache_dir() -> Path:
    """``<repo>/.cache`` unless ``MONGOCDC_TEST_CACHE_DIR`` says otherwise."""
    return Path(os.environ.get(CACHE_ENV) or REPO_ROOT / ".cache")


def free_port(host: str = LOOPBACK) -> int:
    """A currently free TCP port on ``host`` (the OS picks it); on loopback also one that no other test process of
    the machine (a parallel pytest-xdist worker) has claimed (``tests.services.jvm.free_ports``)."""
    if host == LOOPBACK:
        return free_ports(1)[0]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _run(cmd: list[str], *, cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InstallError(
            f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )


def _install_lock(name: str) -> contextlib.AbstractContextManager[None]:
    """One install of ``name`` at a time across processes (parallel pytest-xdist workers start servers at once)."""
    return file_lock(cache_dir() / f".{name}.install.lock")


def _installed(distribution: str, version: str) -> bool:
    try:
        return importlib.metadata.version(distribution) == version
    except importlib.metadata.PackageNotFoundError:
        return False


def _pip_install(requirement: str, distribution: str, version: str) -> None:
    """Install ``requirement`` into the running interpreter's environment unless present."""
    if _installed(distribution, version):
        return
    with _install_lock(distribution):
        importlib.invalidate_caches()
        if _installed(distribution, version):  # another process installed it while we waited
            return
        _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement])


def _distribution_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _java() -> str:
    return find_java(InstallError, "java not found on PATH (Java 17+ is needed)")


def _install_java_artifacts(name: str, pom: Path, sources: list[Path]) -> Path:
    """Resolve ``pom``'s dependencies into ``.cache/<name>/lib`` and compile ``sources``.

    Idempotent: a stamp of the pom and sources' hash marks a finished install.
    Work happens in a temporary sibling directory that is renamed into place.
    """
    digest = hashlib.sha256()
    for path in [pom, *sources]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    stamp = digest.hexdigest()
    target = cache_dir() / name
    stamp_file = target / "STAMP"
    if stamp_file.exists() and stamp_file.read_text().strip() == stamp:
        return target
    with _install_lock(name):
        if stamp_file.exists() and stamp_file.read_text().strip() == stamp:  # installed while we waited
            return target
        return _build_java_artifacts(name, pom, sources, stamp, target)


def _build_java_artifacts(name: str, pom: Path, sources: list[Path], stamp: str, target: Path) -> Path:
    stamp_file = target / "STAMP"
    cache_dir().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=cache_dir()))
    try:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise InstallError("mvn not found on PATH (Maven 3 is needed)")
        _run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={work / 'lib'}",
            ]
        )
        if sources:
            javac = shutil.which("javac")
            if javac is None:
                raise InstallError("javac not found on PATH (a JDK 17+ is needed)")
            _run(
                [
                    javac,
                    "-d",
                    str(work / "classes"),
                    "-cp",
                    str(work / "lib") + os.sep + "*",
                    *map(str, sources),
                ]
            )
        (work / "STAMP").write_text(stamp + "\n")
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        try:
            work.rename(target)
        except OSError:
            # Another process finished the same install first; keep theirs if complete.
            if not (stamp_file.exists() and stamp_file.read_text().strip() == stamp):
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return target


def _port_taken(message: str) -> bool:
    lowered = message.lower()
    return "address already in use" in lowered or "errno 98" in lowered


class MongoServer(StopOnExit):
    """One MongoDB wire-protocol server process on a loopback port."""

    name: ClassVar[str]
    #: Data (and the change-stream history) survive ``restart()``.
    persistent: ClassVar[bool] = True
    #: Seconds ``start()`` waits for ``hello`` to answer.
    startup_timeout: ClassVar[float] = 60.0

    def __init__(self, *, data_dir: Path | None = None, port: int | None = None, host: str = LOOPBACK) -> None:
        self.host = host
        self._port = port
        self._data_dir = data_dir
        self._own_data_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self.startup_seconds: float | None = None

    # -- per-candidate hooks -------------------------------------------------

    @classmethod
    def ensure_installed(cls) -> None:
        """Fetch the server from its registry unless it is already there."""
        raise NotImplementedError

    @classmethod
    def installed_version(cls) -> str:
        """The version of the installed server package."""
        raise NotImplementedError

    def _command(self, port: int, data_dir: Path) -> list[str]:
        raise NotImplementedError

    def _uri_options(self) -> str:
        return "directConnection=true"

    # -- common interface ----------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{self.name} server has not been started")
        return self._port

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise RuntimeError(f"{self.name} server has not been started")
        return self._data_dir

    @property
    def uri(self) -> str:
        """A pymongo connection URI for the running server."""
        return f"mongodb://{self.host}:{self.port}/?{self._uri_options()}"

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Launch the server and wait (with a deadline) until ``hello`` answers."""
        if self.running:
            return
        self.ensure_installed()
        if self._data_dir is None:
            self._own_data_dir = Path(tempfile.mkdtemp(prefix=f"mongocdc-{self.name}-"))
            self._data_dir = self._own_data_dir
        self._data_dir.mkdir(parents=True, exist_ok=True)
        chosen_port = self._port is None
        self._log_path = self._data_dir / f"{self.name}.log"
        began = time.monotonic()
        for attempt in range(1, 4):
            if self._port is None:
                self._port = free_port(self.host)
            with self._log_path.open("ab") as log:
                self._proc = subprocess.Popen(
                    self._command(self._port, self._data_dir),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self._data_dir,
                    start_new_session=True,
                )
            try:
                self._wait_until_ready(began + self.startup_timeout)
            except ServerStartError as exc:
                self._terminate()
                # A port this call chose was taken by another process before the server bound it: try another.
                if not (chosen_port and attempt < 3 and _port_taken(str(exc))):
                    raise
                self._port = None
                continue
            except BaseException:
                self._terminate()
                raise
            break
        self.startup_seconds = time.monotonic() - began

    def stop(self) -> None:
        """Stop the server and remove its data unless the caller supplied ``data_dir``."""
        self._terminate()
        if self._own_data_dir is not None:
            shutil.rmtree(self._own_data_dir, ignore_errors=True)
            self._own_data_dir = None
            self._data_dir = None

    def restart(self) -> None:
        """Stop and start again on the same port and data directory."""
        self._terminate()
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} port={self._port} running={self.running}>"

    # -- helpers -------------------------------------------------------------

    def _log_tail(self, chars: int = 3000) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")[-chars:]

    def _wait_until_ready(self, deadline: float) -> None:
        last_error: Exception | None = None
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise ServerStartError(f"{self.name} exited with code {code} during start-up:\n{self._log_tail()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerStartError(
                    f"{self.name} did not answer hello within {self.startup_timeout}s "
                    f"(last error: {last_error}):\n{self._log_tail()}"
                )
            client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(
                self.host,
                self.port,
                directConnection=True,
                serverSelectionTimeoutMS=int(max(50, min(500, remaining * 1000))),
                connectTimeoutMS=500,
            )
            try:
                client.admin.command("hello")
                return
            except pymongo.errors.PyMongoError as exc:
                last_error = exc
            finally:
                client.close()

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


class SecantusServer(MongoServer):
    """SecantusDB's Python MongoDB server (PyPI ``secantusdb``) over WiredTiger.

    Advertises itself as the primary of a single-node replica set named
    ``secantus``; persists data and its oplog in ``data_dir``.
    """

    name = "secantus"
    distribution = "SecantusDB"
    version = "0.7.0b3"
    repl_set = "secantus"

    @classmethod
    def ensure_installed(cls) -> None:
        _pip_install(f"secantusdb=={cls.version}", cls.distribution, cls.version)

    @classmethod
    def installed_version(cls) -> str:
        return _distribution_version(cls.distribution)

    def _command(self, port: int, data_dir: Path) -> list[str]:
        # An explicit, empty config file stops secantusd.toml auto-discovery
        # (./, ~/.secantus/, /etc/secantus/) from changing the server's settings.
        config = data_dir / "secantusd.toml"
        config.touch()
        return [
            sys.executable,
            "-m",
            "secantus",
            "--host",
            self.host,
            "--port",
            str(port),
            "--storage-path",
            str(data_dir / "wiredtiger"),
            "--log-level",
            "WARNING",
            "--config",
            str(config),
        ]

    def _uri_options(self) -> str:
        return f"replicaSet={self.repl_set}"


class SecantusRsServer(MongoServer):
    """SecantusDB's Rust MongoDB server ``secantusd-rs`` (crates.io ``secantus-mdb``).

    Same storage format and replica-set advertisement as ``SecantusServer``,
    faster per operation.  Installing compiles it (and WiredTiger) with cargo
    into ``.cache/secantus-rs``: several minutes on two cores.  The crate
    declares rust-version 1.98; it builds with the 1.95 toolchain here only
    with ``--ignore-rust-version``.
    """

    name = "secantus-rs"
    crate = "secantus-mdb"
    version = "0.5.3-beta.196"
    repl_set = "secantus"

    @classmethod
    def binary(cls) -> Path:
        return cache_dir() / cls.name / "bin" / "secantusd-rs"

    @classmethod
    def ensure_installed(cls) -> None:
        target = cache_dir() / cls.name
        stamp_file = target / "STAMP"

        def installed() -> bool:
            return stamp_file.exists() and stamp_file.read_text().strip() == cls.version and cls.binary().exists()

        if installed():
            return
        with _install_lock(cls.name):
            if not installed():  # else another process built it while we waited
                cls._build(target)

    @classmethod
    def _build(cls, target: Path) -> None:
        cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
        if not Path(cargo).exists():
            raise InstallError("cargo not found (a Rust toolchain is needed to build secantusd-rs)")
        cache_dir().mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{cls.name}-", dir=cache_dir()))
        try:
            _run(
                [
                    cargo,
                    "install",
                    cls.crate,
                    "--version",
                    cls.version,
                    "--locked",
                    "--ignore-rust-version",
                    "--root",
                    str(work / "root"),
                    "--target-dir",
                    str(work / "target"),
                ]
            )
            final = work / "final"
            (final / "bin").mkdir(parents=True)
            (work / "root" / "bin" / "secantusd-rs").rename(final / "bin" / "secantusd-rs")
            (final / "STAMP").write_text(cls.version + "\n")
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            final.rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @classmethod
    def installed_version(cls) -> str:
        return cls.version if cls.binary().exists() else "not installed"

    def _command(self, port: int, data_dir: Path) -> list[str]:
        config = data_dir / "secantusd.toml"
        config.touch()
        return [
            str(self.binary()),
            "--host",
            self.host,
            "--port",
            str(port),
            "--storage-path",
            str(data_dir / "wiredtiger"),
            "--log-level",
            "WARNING",
            "--cache-size",
            "256M",
            "--config",
            str(config),
        ]

    def _uri_options(self) -> str:
        return f"replicaSet={self.repl_set}"


class Nx27017Server(MongoServer):
    """NX-27017 (PyPI ``nx-27017``): a MongoDB wire-protocol server over SQLite.

    Its ``hello`` has no ``setName``, so pymongo needs ``directConnection``.
    """

    name = "nx"
    distribution = "nx-27017"
    version = "0.8.1"

    @classmethod
    def ensure_installed(cls) -> None:
        _pip_install(f"nx-27017=={cls.version}", cls.distribution, cls.version)

    @classmethod
    def installed_version(cls) -> str:
        return _distribution_version(cls.distribution)

    def _command(self, port: int, data_dir: Path) -> list[str]:
        script = Path(sys.executable).with_name("nx-27017")
        return [
            str(script),
            "--host",
            self.host,
            "--port",
            str(port),
            "--data-dir",
            str(data_dir / "sqlite"),
            "--log-file",
            str(data_dir / "nx-27017.daemon.log"),
            "--pid-file",
            str(data_dir / "nx-27017.pid"),
        ]


class MongoJavaServer(MongoServer):
    """bwaldvogel mongo-java-server (Maven Central) with its H2 MVStore backend.

    Started by ``tests/services/java/MongoJavaServerLauncher.java``, which
    enables the oplog and makes ``hello`` claim a one-member replica set
    ``rs0`` (see that file for the exact shims).
    """

    name = "mongo-java-server"
    version = "1.47.0"
    pom = JAVA_SOURCES / "mongo-java-server.pom.xml"
    sources = (JAVA_SOURCES / "MongoJavaServerLauncher.java",)
    repl_set = "rs0"

    @classmethod
    def ensure_installed(cls) -> None:
        _install_java_artifacts(cls.name, cls.pom, list(cls.sources))

    @classmethod
    def installed_version(cls) -> str:
        jar = cache_dir() / cls.name / "lib" / f"mongo-java-server-core-{cls.version}.jar"
        return cls.version if jar.exists() else "not installed"

    def _command(self, port: int, data_dir: Path) -> list[str]:
        home = cache_dir() / self.name
        classpath = os.pathsep.join([str(home / "lib") + os.sep + "*", str(home / "classes")])
        return [
            _java(),
            "-Xmx512m",
            "-cp",
            classpath,
            "MongoJavaServerLauncher",
            "--host",
            self.host,
            "--port",
            str(port),
            "--data-file",
            str(data_dir / "mongo-java-server.mv"),
            "--repl-set",
            self.repl_set,
        ]

    def _uri_options(self) -> str:
        return f"replicaSet={self.repl_set}"


class MorphiumServer(MongoServer):
    """Morphium's ``MorphiumServer`` (Maven Central ``de.caluga:morphium``).

    Only 5.1.9 is obtainable from the registry here; its server wraps the
    in-memory driver, keeps nothing across restarts, always answers with
    snappy-compressed messages (pymongo then needs ``python-snappy``) and
    knows no ``insert`` command.  Kept only to measure it.
    """

    name = "morphium"
    version = "5.1.9"
    persistent = False
    pom = JAVA_SOURCES / "morphium.pom.xml"

    @classmethod
    def ensure_installed(cls) -> None:
        _install_java_artifacts(cls.name, cls.pom, [])
        _pip_install("python-snappy==0.7.3", "python-snappy", "0.7.3")

    @classmethod
    def installed_version(cls) -> str:
        jar = cache_dir() / cls.name / "lib" / f"morphium-{cls.version}.jar"
        return cls.version if jar.exists() else "not installed"

    def _command(self, port: int, data_dir: Path) -> list[str]:
        return [
            _java(),
            "-Xmx512m",
            "-cp",
            str(cache_dir() / self.name / "lib") + os.sep + "*",
            "de.caluga.morphium.server.MorphiumServer",
            "--host",
            self.host,
            "--port",
            str(port),
        ]


CANDIDATES: dict[str, type[MongoServer]] = {
    cls.name: cls for cls in (SecantusServer, SecantusRsServer, Nx27017Server, MongoJavaServer, MorphiumServer)
}

#: The most faithful candidate by the contract suite (tests/README.md).
DEFAULT_SERVER = SecantusServer.name


def selected_server_name() -> str:
    """The candidate named by ``MONGOCDC_TEST_MONGODB_SERVER``, else ``DEFAULT_SERVER``."""
    name = os.environ.get(SERVER_ENV, "").strip() or DEFAULT_SERVER
    if name not in CANDIDATES:
        raise ValueError(f"{SERVER_ENV}={name!r}: expected one of {', '.join(sorted(CANDIDATES))}")
    return name


def server_class(name: str | None = None) -> type[MongoServer]:
    return CANDIDATES[name or selected_server_name()]


def server_from_env(*, data_dir: Path | None = None, port: int | None = None) -> MongoServer:
    """An unstarted server of the candidate selected by the environment."""
    return server_class()(data_dir=data_dir, port=port)


def start_default_server(*, data_dir: Path | None = None, port: int | None = None) -> MongoServer:
    """Install (if needed) and start the selected candidate; the caller stops it."""
    server = server_from_env(data_dir=data_dir, port=port)
    server.start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.services.mongo",
        description="Start a MongoDB wire-protocol server for mongocdc, print its URI, run until SIGTERM/SIGINT.",
    )
    parser.add_argument(
        "name", nargs="?", choices=sorted(CANDIDATES), help=f"candidate (default: ${SERVER_ENV} or {DEFAULT_SERVER})"
    )
    parser.add_argument("--port", type=int, default=None, help="loopback port (default: a free one)")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep data here (default: a temporary directory)")
    parser.add_argument("--install", action="store_true", help="only install the candidate (idempotent), then exit")
    args = parser.parse_args(argv)
    cls = server_class(args.name)
    if args.install:
        cls.ensure_installed()
        print(f"{cls.name} {cls.installed_version()}", flush=True)
        return 0

    stop_requested = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = cls(data_dir=args.data_dir, port=args.port)
    server.start()
    try:
        print(server.uri, flush=True)
        while not stop_requested.wait(1.0):
            if not server.running:
                print(f"{server.name} exited unexpectedly", file=sys.stderr)
                return 1
    finally:
        with contextlib.suppress(Exception):
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
