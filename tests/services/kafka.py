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

import base64
import contextlib
import functools
import logging
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, Self

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tests.services import jvm
from tests.services.jvm import CDS_ENV, HOST, JVM_OPTIONS, SHARED_CACHE_ENV

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

POM_FILE: Final = Path(__file__).with_name("kafka-pom.xml")
CACHE_ENV: Final = "MONGOCDC_TEST_KAFKA_CACHE"
_WARMUP_GROUP: Final = "__mongocdc_warmup"


class KafkaServiceError(RuntimeError):
    """The Kafka classpath could not be resolved or the broker did not start."""


KAFKA_VERSION: Final[str] = jvm.pom_properties(POM_FILE, ["kafka.version"], KafkaServiceError)["kafka.version"]
"""The Apache Kafka version the broker runs (from ``kafka-pom.xml``)."""


# ---------------------------------------------------------------------------------------
# Classpath


def kafka_cache_root(cache_dir: Path | None = None) -> Path:
    """The directory under which ``<version>/lib`` caches are kept."""
    return jvm.cache_root(cache_dir, CACHE_ENV, "kafka")


def _run_maven(output_dir: Path) -> None:
    jvm.run_maven(
        POM_FILE,
        output_dir,
        fetching="Kafka",
        failed=lambda code: f"Maven failed to resolve Kafka {KAFKA_VERSION} (exit {code}):",
        error=KafkaServiceError,
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
    return jvm.resolve_once(
        POM_FILE,
        kafka_cache_root(cache_dir) / KAFKA_VERSION / "lib",
        required=[Path(f"kafka_2.13-{KAFKA_VERSION}.jar")],
        fill=_run_maven,
        what=f"Kafka {KAFKA_VERSION}",
        error=KafkaServiceError,
    )


# ---------------------------------------------------------------------------------------
# Broker


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


def _can_connect(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


class _Retry(KafkaServiceError):
    """A start-up failure that a fresh attempt may not hit."""


class _PortInUse(_Retry):
    """Another process took a port between our probe and the broker's bind."""


class KafkaBroker(jvm.JvmService):
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

    _error = KafkaServiceError
    _retry = _Retry
    _port_in_use = _PortInUse
    _what = "the broker"
    _name = "Kafka"
    _exited = "Kafka broker exited with code {code} during start-up"
    _log_name = "server.log"
    _temp_prefix = "mongocdc-kafka-"
    _base_jvm_options = JVM_OPTIONS

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
        join: KafkaBroker | None = None,
        node_id: int = 1,
    ) -> None:
        """Prepare (but do not start) a broker.

        ``config`` overrides or adds ``server.properties`` entries. ``lib_dir``
        defaults to ``ensure_kafka_classpath()``. With ``join`` (a started broker) this one is a
        broker-only node ``node_id`` of that broker's cluster, whose controller it registers with
        (a second broker to hold a topic's partitions, for tests that take them offline).
        """
        if num_partitions < 1:
            raise ValueError("num_partitions must be at least 1")
        if (join is None) != (node_id == 1):
            raise ValueError("a joining broker needs a node_id other than 1, the first broker's")
        super().__init__(config, data_dir, startup_timeout, stop_timeout, jvm_options, log_level)
        self.num_partitions = num_partitions
        self.node_id = node_id
        self._join = join
        self._lib_dir = lib_dir
        self._cluster_id: str | None = join.cluster_id if join is not None else None
        self._formatted = False
        self._ports: tuple[int, int] | None = None  # (PLAINTEXT, CONTROLLER)
        self._ports_fixed = False  # a restart keeps its address

    # -- properties ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"`` of the PLAINTEXT listener (known once started)."""
        return f"{HOST}:{self.port}"

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

    # -- lifecycle -------------------------------------------------------------------

    def stop(self) -> None:
        """Shut the broker down: SIGTERM, then SIGKILL after ``stop_timeout`` seconds.

        The ports are released. A temporary data directory is removed, so a later
        ``start()`` brings up a new, empty cluster; a given ``data_dir`` is kept and a
        later ``start()`` brings its cluster back (on new ports). Idempotent.
        """
        self._halt()
        self._ports = None
        if self._remove_temp_dir():
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

    def __repr__(self) -> str:
        where = self.bootstrap if self._ports is not None else "not started"
        state = "running" if self.running else "stopped"
        return f"<KafkaBroker {KAFKA_VERSION} {where} {state}>"

    # -- internals -------------------------------------------------------------------

    def _prepare_start(self) -> Callable[[], None]:
        lib = self._lib_dir if self._lib_dir is not None else ensure_kafka_classpath()
        java = jvm.find_java(KafkaServiceError)
        self._prepare_data_dir()
        self._ports_fixed = self._ports is not None
        return functools.partial(self._launch, java, lib)

    def _prepare_retry(self, exc: Exception, *, last: bool) -> bool:
        port_clash = isinstance(exc, _PortInUse)
        if last or (port_clash and self._ports_fixed):
            return False
        if port_clash:
            self._ports = None
        return True

    def _log_ready(self) -> None:
        log.info(
            "Kafka %s ready on %s (cluster %s) in %.2fs",
            KAFKA_VERSION,
            self.bootstrap,
            self._cluster_id,
            self.startup_seconds,
        )

    def _prepare_data_dir(self) -> None:
        super()._prepare_data_dir()
        if self._cluster_id is None:
            existing = _read_cluster_id(self.data_dir / "kafka-data" / "meta.properties")
            self._formatted = existing is not None
            self._cluster_id = existing or _new_cluster_id()

    def _server_properties(self) -> dict[str, str]:
        assert self._ports is not None
        port, controller_port = self._ports
        plaintext = f"PLAINTEXT://{HOST}:{port}"
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{controller_port}",
            "listeners": f"{plaintext},CONTROLLER://{HOST}:{controller_port}",
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
            **self._joined(),
            **self._extra_config,
        }

    def _joined(self) -> dict[str, str]:
        """A joining broker's settings: broker-only, its node id, the first broker's controller."""
        if self._join is None or self._ports is None or self._join._ports is None:
            return {}
        return {
            "process.roles": "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"1@{HOST}:{self._join._ports[1]}",
            "listeners": f"PLAINTEXT://{HOST}:{self._ports[0]}",
        }

    def _write_files(self) -> Path:
        return self._write_config(
            "server.properties",
            self._server_properties(),
            "[%d] %p %m (%c)%n",
            ["logger.request.name = kafka.request.logger", "logger.request.level = WARN"],
        )

    def _format_storage(self, java: str, lib: Path) -> None:
        assert self._cluster_id is not None
        shutil.rmtree(self.data_dir / "kafka-data", ignore_errors=True)
        for _ in range(2):
            command, archive = self._java_command(
                java,
                lib,
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
            if not (jvm.looks_like_cds_failure(result.returncode, output) and archive.discard()):
                break
        raise KafkaServiceError(f"formatting Kafka storage failed (exit {result.returncode}):\n" + jvm.tail(output))

    def _launch(self, java: str, lib: Path) -> None:
        if self._ports is None:
            port, controller_port = jvm.free_ports(2)
            self._ports = (port, controller_port)
        self._write_files()
        if not self._formatted:
            self._format_storage(java, lib)
        config = str(self.data_dir / "server.properties")
        self._spawn(*self._java_command(java, lib, lib, "kafka.Kafka", config))

    def _timeout(self, what: str) -> KafkaServiceError:
        return KafkaServiceError(f"Kafka broker {what} within {self.startup_timeout:.0f}s\n{self.logs_tail()}")

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
    command = jvm.ServiceCommand(
        "tests.services.kafka",
        "Run a single-node Kafka broker, print its bootstrap address on stdout and stop it cleanly on SIGTERM/SIGINT.",
        fetch_help="only resolve the Kafka classpath into the cache (prints its directory)",
    )
    command.parser.add_argument("--partitions", type=int, default=1, help="num.partitions")
    command.parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep broker data here, reused if it holds Kafka storage (default: a temp dir, removed on exit)",
    )
    command.parser.add_argument("--startup-timeout", type=float, default=60.0)
    args = command.parse(argv)
    if args.fetch_only:
        print(ensure_kafka_classpath(), flush=True)
        return 0

    broker = KafkaBroker(num_partitions=args.partitions, data_dir=args.data_dir, startup_timeout=args.startup_timeout)
    return command.serve(
        broker,
        "Kafka broker",
        address=lambda: broker.bootstrap,
        details=lambda: f"cluster id {broker.cluster_id}; broker log {broker.log_path}",
    )


if __name__ == "__main__":
    sys.exit(main())
