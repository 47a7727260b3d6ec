"""A real Kafka Connect worker running the real Debezium MongoDB connector, for tests.

Debezium's records are the oracle for the event format mongocdc writes. Nothing needs
installing beyond Java 17+ and Maven: :func:`ensure_connect_dist` resolves the Kafka Connect
runtime (the worker's classpath) and the Debezium MongoDB connector (a plugin directory of
its own, isolated by ``plugin.path`` as in a production installation) from Maven Central
once, into a cache directory, and :class:`KafkaConnect` runs one worker against a broker
(``tests/services/kafka.py``), standalone (offsets in a file) or distributed (a single
worker; offsets, configs and statuses in topics on the broker, as in production).

Usage::

    with KafkaBroker() as kafka, KafkaConnect(kafka.bootstrap, schemas_enable=False) as connect:
        connect.create_connector("dbz", {"connector.class": DEBEZIUM_MONGODB_CONNECTOR, ...})
        connect.wait_until_running("dbz")

Command line (from the repository root)::

    python -m tests.services.connect --fetch-only   # only resolves the jars (scripts/bootstrap)
    python -m tests.services.connect --bootstrap 127.0.0.1:PORT [--standalone] [--schemas]
                                                    # prints the REST URL, runs until SIGTERM/SIGINT

The cache lives in ``<root>/<kafka version>-debezium-<debezium version>/dist`` (``lib/`` for
the worker, ``plugins/debezium-connector-mongodb/`` for the connector); ``<root>`` is the
``cache_dir`` argument, else ``$MONGOCDC_TEST_CONNECT_CACHE``, else
``$MONGOCDC_TEST_CACHE_DIR/connect``, else ``<repo>/.cache/connect``. Both versions are
properties of ``connect-pom.xml`` next to this file; its ``kafka.version`` must be the test
broker's (``kafka-pom.xml``).

As for the broker, a dynamic AppCDS archive (``<version dir>/cds``) recorded by the first
worker that exits cleanly speeds up later starts; ``MONGOCDC_TEST_KAFKA_CDS=0`` disables it.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from tests.services import jvm
from tests.services.jvm import HOST, JVM_OPTIONS
from tests.services.kafka import KAFKA_VERSION, KafkaServiceError

__all__ = [
    "CACHE_ENV",
    "DEBEZIUM_MONGODB_CONNECTOR",
    "DEBEZIUM_VERSION",
    "JSON_CONVERTER",
    "ConnectDistribution",
    "ConnectServiceError",
    "KafkaConnect",
    "connect_cache_root",
    "ensure_connect_dist",
    "main",
]

POM_FILE: Final = Path(__file__).with_name("connect-pom.xml")
CACHE_ENV: Final = "MONGOCDC_TEST_CONNECT_CACHE"
DEBEZIUM_MONGODB_CONNECTOR: Final = "io.debezium.connector.mongodb.MongoDbConnector"
JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
PLUGIN_NAME: Final = "debezium-connector-mongodb"
_REST_TIMEOUT_S: Final = 30.0
_POLL_S: Final = 0.05

# The worker: Connect and Debezium together need a little more than the broker's heap.
CONNECT_JVM_OPTIONS: Final[tuple[str, ...]] = (*JVM_OPTIONS, "-Xmx768m")

T = TypeVar("T")
Mode = Literal["standalone", "distributed"]

log = logging.getLogger(__name__)


class ConnectServiceError(RuntimeError):
    """The Connect classpath could not be resolved, or the worker or a connector failed."""


_POM_PROPERTIES: Final = jvm.pom_properties(POM_FILE, ["kafka.version", "debezium.version"], ConnectServiceError)
CONNECT_KAFKA_VERSION: Final[str] = _POM_PROPERTIES["kafka.version"]
"""The Kafka Connect version the worker runs (``connect-pom.xml``; must be the broker's)."""
DEBEZIUM_VERSION: Final[str] = _POM_PROPERTIES["debezium.version"]
"""The Debezium MongoDB connector version (``connect-pom.xml``)."""


# ---------------------------------------------------------------------------------------
# Classpath


@dataclass(frozen=True)
class ConnectDistribution:
    """A resolved Kafka Connect worker classpath and plugin path."""

    home: Path

    @property
    def lib(self) -> Path:
        """The worker's classpath (every jar in it)."""
        return self.home / "lib"

    @property
    def plugin_path(self) -> Path:
        """The worker's ``plugin.path``: one directory per plugin below it."""
        return self.home / "plugins"

    @property
    def debezium_dir(self) -> Path:
        return self.plugin_path / PLUGIN_NAME


def connect_cache_root(cache_dir: Path | None = None) -> Path:
    """The directory under which ``<versions>/dist`` caches are kept."""
    return jvm.cache_root(cache_dir, CACHE_ENV, "connect")


def _run_maven(profile: str, output_dir: Path) -> None:
    jvm.run_maven(
        POM_FILE,
        output_dir,
        profile=profile,
        fetching="Kafka Connect and Debezium",
        failed=lambda code: (
            f"Maven failed to resolve the {profile!r} profile of {POM_FILE.name} (Kafka Connect "
            f"{CONNECT_KAFKA_VERSION}, Debezium {DEBEZIUM_VERSION}; exit {code}):"
        ),
        error=ConnectServiceError,
    )


def _fill(home: Path) -> None:
    staged = ConnectDistribution(home)
    _run_maven("worker", staged.lib)
    _run_maven("plugin", staged.debezium_dir)


def ensure_connect_dist(cache_dir: Path | None = None) -> ConnectDistribution:
    """Return the Kafka Connect worker classpath and the plugin path holding Debezium.

    The first call resolves them with Maven (from Maven Central, through ``~/.m2``) into
    ``connect_cache_root(cache_dir) / "<kafka>-debezium-<debezium>" / "dist"``; later calls,
    also from other processes, return at once without running Maven. Everything is copied
    into a temporary directory renamed into place when complete, under a file lock, so
    concurrent or interrupted runs never expose a half-filled cache. Editing
    ``connect-pom.xml`` invalidates the cache.
    """
    if CONNECT_KAFKA_VERSION != KAFKA_VERSION:
        raise ConnectServiceError(
            f"{POM_FILE.name} has kafka.version {CONNECT_KAFKA_VERSION}, but the test broker "
            f"(kafka-pom.xml) runs {KAFKA_VERSION}: keep them equal"
        )
    version_dir = connect_cache_root(cache_dir) / f"{CONNECT_KAFKA_VERSION}-debezium-{DEBEZIUM_VERSION}"
    relative = ConnectDistribution(Path())
    home = jvm.resolve_once(
        POM_FILE,
        version_dir / "dist",
        required=[
            relative.lib / f"connect-runtime-{CONNECT_KAFKA_VERSION}.jar",
            relative.debezium_dir / f"{PLUGIN_NAME}-{DEBEZIUM_VERSION}.jar",
        ],
        fill=_fill,
        what=f"Kafka Connect {CONNECT_KAFKA_VERSION} and Debezium {DEBEZIUM_VERSION}",
        error=ConnectServiceError,
    )
    return ConnectDistribution(home)


# ---------------------------------------------------------------------------------------
# Worker


class _PortInUse(ConnectServiceError):
    """Another process took the REST port between our probe and the worker's bind."""


class KafkaConnect(jvm.JvmService):
    """One Kafka Connect worker (standalone or single-worker distributed) on a loopback port.

    ``start()`` writes the worker's properties into a data directory (a temporary one unless
    ``data_dir`` is given), launches ``ConnectStandalone`` or ``ConnectDistributed`` and
    returns once the REST API reports the worker healthy. ``stop()`` shuts it down gracefully
    (SIGTERM: connectors stop and commit their offsets; SIGKILL only after ``stop_timeout``).

    Both converters are ``JsonConverter`` with ``schemas.enable`` = ``schemas_enable``, as the
    Debezium documentation's examples run. In distributed mode the offsets, configs and
    statuses live in the topics ``offsets_topic``/``config_topic``/``status_topic``
    (``<group id>-offsets`` ...; Connect creates them with its default partition counts: 25,
    1, 5); in standalone mode offsets go to ``offsets_file``. ``worker_config`` overrides or
    adds worker properties.

    The worker's log4j log is ``log_path`` (``<data_dir>/logs/connect.log``), the JVM's own
    output ``<data_dir>/logs/stdout.log``; every error raised carries the tail of both.
    """

    _error = ConnectServiceError
    _retry = _PortInUse  # also after a CDS failure: the archive is gone then
    _port_in_use = _PortInUse
    _what = "the Connect worker"
    _name = "Connect"
    _exited = "Kafka Connect exited with code {code}"
    _log_name = "connect.log"
    _temp_prefix = "mongocdc-connect-"
    _base_jvm_options = CONNECT_JVM_OPTIONS
    _deadline_per_attempt = True

    def __init__(
        self,
        bootstrap: str,
        *,
        mode: Mode = "distributed",
        schemas_enable: bool = False,
        worker_config: Mapping[str, str] | None = None,
        group_id: str | None = None,
        data_dir: Path | None = None,
        dist: ConnectDistribution | None = None,
        startup_timeout: float = 120.0,
        stop_timeout: float = 60.0,
        log_level: str = "INFO",
        jvm_options: Sequence[str] = (),
    ) -> None:
        if mode not in ("standalone", "distributed"):
            raise ValueError(f"mode must be 'standalone' or 'distributed', not {mode!r}")
        super().__init__(worker_config, data_dir, startup_timeout, stop_timeout, jvm_options, log_level)
        self.bootstrap = bootstrap
        self.mode: Mode = mode
        self.schemas_enable = schemas_enable
        self.group_id = group_id or f"mongocdc-connect-{uuid.uuid4().hex[:8]}"
        self._dist = dist
        self._port: int | None = None

    # -- properties ------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise ConnectServiceError("the Connect worker has not been started")
        return self._port

    @property
    def rest_url(self) -> str:
        """``http://127.0.0.1:PORT`` of the worker's REST API (known once started)."""
        return f"http://{HOST}:{self.port}"

    @property
    def offsets_file(self) -> Path:
        """Standalone mode: the worker's ``offset.storage.file.filename``."""
        return self.data_dir / "connect.offsets"

    @property
    def offsets_topic(self) -> str:
        return self._extra_config.get("offset.storage.topic", f"{self.group_id}-offsets")

    @property
    def config_topic(self) -> str:
        return self._extra_config.get("config.storage.topic", f"{self.group_id}-configs")

    @property
    def status_topic(self) -> str:
        return self._extra_config.get("status.storage.topic", f"{self.group_id}-status")

    # -- lifecycle -------------------------------------------------------------------

    def stop(self) -> bool:
        """Stop the worker gracefully (SIGTERM, then SIGKILL after ``stop_timeout``).

        Returns True if it exited by itself. A temporary data directory is removed (so are
        standalone offsets); a given ``data_dir`` is kept. Idempotent.
        """
        graceful = self._halt()
        self._port = None
        self._remove_temp_dir()
        return graceful

    def __repr__(self) -> str:
        where = self.rest_url if self._port is not None else "not started"
        state = "running" if self.running else "stopped"
        return f"<KafkaConnect {CONNECT_KAFKA_VERSION} {self.mode} {where} {state}>"

    # -- REST API --------------------------------------------------------------------

    def request(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """One REST call; returns (HTTP status, decoded JSON body or None). Never raises on 4xx/5xx."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(  # noqa: S310 - a loopback http URL of our own
            self.rest_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=_REST_TIMEOUT_S) as response:  # noqa: S310
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def _ok(self, method: str, path: str, body: object = None, *, expect: Sequence[int] = (200,)) -> Any:
        status, answer = self.request(method, path, body)
        if status not in expect:
            raise ConnectServiceError(f"{method} {path} answered {status}: {answer}\n{self.logs_tail()}")
        return answer

    def create_connector(self, name: str, config: Mapping[str, str], *, timeout: float | None = None) -> Any:
        """Create (or reconfigure) connector ``name`` (``PUT /connectors/<name>/config``).

        A distributed worker refuses writes while it rebalances (409); those are retried
        until ``timeout`` (default ``startup_timeout``).
        """
        path = f"/connectors/{urllib.parse.quote(name, safe='')}/config"
        payload = {key: str(value) for key, value in config.items()}

        def attempt() -> Any:
            status, answer = self.request("PUT", path, payload)
            if status in (200, 201):
                return answer if answer is not None else {}
            if status == 409:  # rebalance in progress, or the worker is still joining
                return None
            raise ConnectServiceError(f"PUT {path} answered {status}: {answer}\n{self.logs_tail()}")

        return self.wait_for(attempt, f"connector {name!r} to be accepted", timeout)

    def delete_connector(self, name: str) -> None:
        self._ok("DELETE", f"/connectors/{urllib.parse.quote(name, safe='')}", expect=(200, 204, 404))

    def connectors(self) -> list[str]:
        answer = self._ok("GET", "/connectors")
        return list(answer)

    def connector_status(self, name: str) -> dict[str, Any] | None:
        """``GET /connectors/<name>/status``, or None while the worker does not know it yet."""
        status, answer = self.request("GET", f"/connectors/{urllib.parse.quote(name, safe='')}/status")
        if status == 404:
            return None
        if status != 200:
            raise ConnectServiceError(f"status of connector {name!r} answered {status}: {answer}")
        return dict(answer)

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/<name>/offsets``: the committed ``{"partition", "offset"}`` pairs."""
        answer = self._ok("GET", f"/connectors/{urllib.parse.quote(name, safe='')}/offsets")
        return list(answer.get("offsets", []))

    def wait_until_running(self, name: str, *, tasks: int = 1, timeout: float | None = None) -> dict[str, Any]:
        """Wait until connector ``name`` and at least ``tasks`` tasks report RUNNING.

        Raises at once, with the failure trace and the log tail, if the connector or a task
        reports FAILED.
        """

        def running() -> dict[str, Any] | None:
            status = self.connector_status(name)
            if status is None:
                return None
            states = [status["connector"], *status.get("tasks", [])]
            failed = [state for state in states if state.get("state") == "FAILED"]
            if failed:
                traces = "\n".join(str(state.get("trace", "")) for state in failed)
                raise ConnectServiceError(f"connector {name!r} failed:\n{traces}\n{self.logs_tail()}")
            task_states = [task.get("state") for task in status.get("tasks", [])]
            if (
                status["connector"].get("state") == "RUNNING"
                and len(task_states) >= tasks
                and all(state == "RUNNING" for state in task_states)
            ):
                return status
            return None

        return self.wait_for(running, f"connector {name!r} to run", timeout)

    def wait_for(self, condition: Callable[[], T | None], what: str, timeout: float | None = None) -> T:
        """Poll ``condition`` until it returns something other than None (or False).

        Fails with the log tail when the worker exits or ``timeout`` (default
        ``startup_timeout``) passes. Between polls it waits on the worker process, so a
        worker that dies ends the wait at once.
        """
        deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
        while True:
            self._check_alive()
            result = condition()
            if result is not None and result is not False:
                return result
            if time.monotonic() > deadline:
                raise ConnectServiceError(f"timed out waiting for {what}\n{self.logs_tail()}")
            self._pause(_POLL_S)

    # -- internals -------------------------------------------------------------------

    def worker_properties(self) -> dict[str, str]:
        """The worker's properties as written to ``worker.properties`` (REST port once started)."""
        schemas = "true" if self.schemas_enable else "false"
        props = {
            "bootstrap.servers": self.bootstrap,
            "key.converter": JSON_CONVERTER,
            "value.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": schemas,
            "value.converter.schemas.enable": schemas,
            "offset.flush.interval.ms": "1000",
            "plugin.path": "",
            # Only plugins with ServiceLoader manifests (Kafka's and Debezium's have them): no
            # reflective scan of every jar, which costs seconds at each start.
            "plugin.discovery": "service_load",
            "listeners": "",
            "rest.advertised.host.name": HOST,
        }
        if self._port is not None:
            props["listeners"] = f"http://{HOST}:{self._port}"
            props["rest.advertised.port"] = str(self._port)
        if self._dist is not None:
            props["plugin.path"] = str(self._dist.plugin_path)
        if self.mode == "standalone":
            props["offset.storage.file.filename"] = str(self.data_dir / "connect.offsets")
        else:
            props.update(
                {
                    "group.id": self.group_id,
                    "offset.storage.topic": self.offsets_topic,
                    "config.storage.topic": self.config_topic,
                    "status.storage.topic": self.status_topic,
                    "offset.storage.replication.factor": "1",
                    "config.storage.replication.factor": "1",
                    "status.storage.replication.factor": "1",
                    # One worker: nothing to wait for when it (re)joins.
                    "scheduled.rebalance.max.delay.ms": "0",
                }
            )
        props.update(self._extra_config)
        return props

    def _prepare_start(self) -> Callable[[], None]:
        dist = self._dist if self._dist is not None else ensure_connect_dist()
        java = jvm.find_java(KafkaServiceError)  # the error the lookup shared with kafka.py always raised
        self._prepare_data_dir()
        return functools.partial(self._launch, java, dist)

    def _prepare_retry(self, exc: Exception, *, last: bool) -> bool:
        self._port = None
        return not last

    def _log_ready(self) -> None:
        log.info(
            "Kafka Connect %s (%s) ready on %s in %.2fs",
            CONNECT_KAFKA_VERSION,
            self.mode,
            self.rest_url,
            self.startup_seconds,
        )

    def _write_files(self, dist: ConnectDistribution) -> Path:
        self._dist = dist
        return self._write_config(
            "worker.properties",
            self.worker_properties(),
            "[%d] %p %X{connector.context}%m (%c:%L)%n",
            [
                # Quiet the chattiest INFO loggers (every client's full config dump, Jetty, Reflections).
                "logger.clients.name = org.apache.kafka.clients",
                "logger.clients.level = WARN",
                "logger.common.name = org.apache.kafka.common",
                "logger.common.level = WARN",
                "logger.jetty.name = org.eclipse.jetty",
                "logger.jetty.level = WARN",
                "logger.mongo.name = org.mongodb.driver",
                "logger.mongo.level = WARN",
            ],
        )

    def _launch(self, java: str, dist: ConnectDistribution) -> None:
        if self._port is None:
            (self._port,) = jvm.free_ports(1)
        self._write_files(dist)
        main = (
            "org.apache.kafka.connect.cli.ConnectStandalone"
            if self.mode == "standalone"
            else "org.apache.kafka.connect.cli.ConnectDistributed"
        )
        worker = str(self.data_dir / "worker.properties")
        self._spawn(*self._java_command(java, dist.lib, dist.home, main, worker))

    def _halt(self) -> bool:
        graceful = super()._halt()
        if not graceful:
            log.warning("Kafka Connect did not stop within %.0fs and was killed", self.stop_timeout)
        return graceful

    def _wait_until_ready(self, deadline: float) -> None:
        # GET /health (KIP-1017) answers 503 until the worker finished starting (a distributed
        # worker: joined its group and read the config topic), then 200.
        last = "no answer"
        while True:
            self._check_alive()
            try:
                status, answer = self.request("GET", "/health")
            except (OSError, urllib.error.URLError) as exc:
                status, answer = 0, str(exc)
            if status == 200:
                return
            last = f"{status}: {answer}"
            if time.monotonic() > deadline:
                raise ConnectServiceError(
                    f"Kafka Connect was not healthy within {self.startup_timeout:.0f}s ({last})\n{self.logs_tail()}"
                )
            self._pause(_POLL_S)


# ---------------------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.services.connect [--fetch-only]``; see the module docstring."""
    command = jvm.ServiceCommand(
        "tests.services.connect",
        "Run a Kafka Connect worker with the Debezium MongoDB connector on its plugin path, print its REST URL "
        "on stdout and stop it cleanly on SIGTERM/SIGINT.",
        fetch_help="only resolve the Connect classpath and the Debezium plugin into the cache (prints its directory)",
    )
    parser = command.parser
    parser.add_argument("--bootstrap", help="the Kafka bootstrap servers (required unless --fetch-only)")
    parser.add_argument("--standalone", action="store_true", help="standalone mode (offsets in a file)")
    parser.add_argument("--schemas", action="store_true", help="JsonConverter schemas.enable=true")
    parser.add_argument("--data-dir", type=Path, help="keep the worker's files here (default: a temp dir)")
    parser.add_argument("--startup-timeout", type=float, default=120.0)
    args = command.parse(argv)
    if args.fetch_only:
        print(ensure_connect_dist().home, flush=True)
        return 0
    if not args.bootstrap:
        parser.error("--bootstrap is required")

    connect = KafkaConnect(
        args.bootstrap,
        mode="standalone" if args.standalone else "distributed",
        schemas_enable=args.schemas,
        data_dir=args.data_dir,
        startup_timeout=args.startup_timeout,
    )
    return command.serve(
        connect, "Kafka Connect", address=lambda: connect.rest_url, details=lambda: f"worker log {connect.log_path}"
    )


if __name__ == "__main__":
    sys.exit(main())
