"""The Debezium side of the snapshot and streaming benchmarks (``--peer debezium``).

The real Debezium MongoDB connector (``tests/services/connect.py``'s version, from Maven Central) in
one Kafka Connect standalone worker, started once per benchmark; its JVM start-up is reported apart,
as mongocdc's start-up is. Each run gets a fresh connector (its own name and ``topic.prefix``) with
the properties mongocdc is given (``connector_config``), and each run is done the way the mongocdc
side does it:

* **snapshot**: the connector is created with ``snapshot.mode=initial`` over a loaded collection;
* **streaming**: before the writes, the connector is created with ``snapshot.mode=no_data`` on the
  empty collection and stopped (``PUT /connectors/<name>/stop``) once it has an offset, as mongocdc
  runs once with ``no_data`` and stops; a heartbeat (``heartbeat.interval.ms``) is what gives an idle
  Debezium connector an offset, and it is switched off again while the connector is stopped. After
  the writes the connector is resumed (``PUT /connectors/<name>/resume``) and replays them from its
  stored offset.

The producer: Connect's source producers are idempotent with ``acks=all`` (Kafka 4's defaults, set
here explicitly as ``producer.*`` worker properties), like mongocdc's; Connect also sets
``max.in.flight.requests.per.connection=1`` and Kafka 4's ``linger.ms`` is 5, mongocdc's too.
Offsets are flushed every 60 s (``offset.flush.interval.ms``, mongocdc's and Connect's default).
The JVM runs with the tests' options but with the full C2 JIT (``-XX:TieredStopAtLevel=4``), as the
benchmark's broker does.

Both sides are measured alike (``bench.common.PeerClock``): from the start request (creating or
resuming the connector) to the broker's append time of the first and last record, CPU-seconds of the
tool's process (the Connect JVM's, from ``/proc/<pid>/stat``), of the MongoDB server and of the Kafka
broker, and the tool's peak RSS (the JVM's ``VmHWM``, reset before each run).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.common import EndOffsets, PeerClock, Timing, create_topics

log = logging.getLogger("bench")

CONNECT_JVM_OPTIONS = ("-XX:TieredStopAtLevel=4",)
WORKER_CONFIG = {
    "producer.acks": "all",
    "producer.enable.idempotence": "true",
    "offset.flush.interval.ms": "60000",
}
HEARTBEAT_MS = 100
SNAPSHOT_FETCH_SIZE = 2048
"""Both tools' ``snapshot.fetch.size``: mongocdc's default, given to Debezium too."""
_STATUS_EVERY_S = 2.0


def connector_config(uri: str, prefix: str, namespace: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Debezium connector's properties for one run (mongocdc gets the same through ``bench.common``)."""
    from tests.services.connect import DEBEZIUM_MONGODB_CONNECTOR

    return {
        "connector.class": DEBEZIUM_MONGODB_CONNECTOR,
        "tasks.max": "1",
        "mongodb.connection.string": uri,
        "topic.prefix": prefix,
        "capture.scope": "collection",
        "capture.target": namespace,
        "collection.include.list": re.escape(namespace),
        # mongocdc's default (Debezium's 0 leaves the batch size to the server: 101 documents, then 16 MB)
        "snapshot.fetch.size": str(SNAPSHOT_FETCH_SIZE),
        **(extra or {}),
    }


@dataclass
class DebeziumWorker:
    """One Kafka Connect standalone worker with the Debezium MongoDB connector on its plugin path."""

    connect: Any
    startup_seconds: float
    version: str
    overrides: Mapping[str, str]
    """Connector properties given with ``--debezium-option``, over every run's own."""

    def config(self, uri: str, prefix: str, namespace: str, mode: str) -> dict[str, str]:
        return {**connector_config(uri, prefix, namespace, {"snapshot.mode": mode}), **self.overrides}

    @property
    def pid(self) -> int:
        pid = self.connect.pid
        if pid is None:
            raise RuntimeError("the Connect worker is not running")
        return int(pid)

    def failed(self, name: str) -> bool:
        """Whether the connector or its task reports FAILED (raises with the trace if so)."""
        status = self.connect.connector_status(name)
        if status is None:
            return False
        for state in [status["connector"], *status.get("tasks", [])]:
            if state.get("state") == "FAILED":
                raise RuntimeError(f"Debezium connector {name} failed: {state.get('trace', '')[:3000]}")
        return False

    def put(self, name: str, action: str) -> None:
        """``PUT /connectors/<name>/<action>`` (``stop``, ``resume``)."""
        status, answer = self.connect.request("PUT", f"/connectors/{name}/{action}")
        if status not in (200, 202, 204):
            raise RuntimeError(f"PUT /connectors/{name}/{action} answered {status}: {answer}")

    def log_size(self) -> int:
        try:
            return int(self.connect.log_path.stat().st_size)
        except OSError:
            return 0

    def errors_since(self, offset: int) -> list[str]:
        """The ``ERROR`` lines the worker logged after ``offset`` (a failed snapshot, a lost connection)."""
        try:
            with self.connect.log_path.open("rb") as log_file:
                log_file.seek(offset)
                text = log_file.read().decode("utf-8", "replace")
        except OSError:
            return []
        return [line[:500] for line in text.splitlines() if "] ERROR " in line]

    def remove(self, name: str) -> None:
        self.connect.delete_connector(name)


@contextmanager
def worker(bootstrap: str, overrides: Mapping[str, str] | None = None) -> Iterator[DebeziumWorker]:
    """Start the worker (the JVM start-up is timed and reported, not counted in any run)."""
    from tests.services.connect import DEBEZIUM_VERSION, KafkaConnect, ensure_connect_dist

    dist = ensure_connect_dist()
    connect = KafkaConnect(
        bootstrap,
        mode="standalone",
        schemas_enable=False,
        worker_config=WORKER_CONFIG,
        dist=dist,
        jvm_options=CONNECT_JVM_OPTIONS,
        log_level="WARN",
    )
    started = time.perf_counter()
    connect.start()
    seconds = time.perf_counter() - started
    log.info("Kafka Connect with Debezium %s started in %.1f s (not counted)", DEBEZIUM_VERSION, seconds)
    try:
        yield DebeziumWorker(connect, seconds, DEBEZIUM_VERSION, dict(overrides or {}))
    finally:
        connect.stop()


def _throttled(check: Any) -> Any:
    """``check`` called at most every ``_STATUS_EVERY_S`` (a REST call costs the JVM CPU too)."""
    last = [time.monotonic()]

    def call() -> bool:
        now = time.monotonic()
        if now - last[0] < _STATUS_EVERY_S:
            return False
        last[0] = now
        return bool(check())

    return call


def _measure(
    dbz: DebeziumWorker, name: str, bootstrap: str, topic: str, count: int, start: Any, timeout: float
) -> Timing:
    """Run ``start()`` (which creates or resumes connector ``name``) and measure until ``topic`` holds ``count``."""
    ends = EndOffsets(bootstrap, topic)
    log_from = dbz.log_size()
    try:
        clock = PeerClock(dbz.pid)
        started = time.perf_counter()
        start()
        requested = time.perf_counter()
        ends.wait_for(count, timeout=timeout, failed=_throttled(lambda: dbz.failed(name)))
        cpu, peak = clock.cpu(), clock.peak_rss_mb()
        dbz.remove(name)
        run = clock.finish(ends, ends.total(), cpu, peak)
    finally:
        ends.close()
    errors = dbz.errors_since(log_from)
    if errors:
        log.warning("Debezium %s logged %d errors, the first: %s", name, len(errors), errors[0])
    phases = {"REST request (timed)": requested - started, "errors logged": float(len(errors))}
    return Timing(run.items, run.seconds, phases, peer=run)


def snapshot(
    dbz: DebeziumWorker,
    *,
    uri: str,
    bootstrap: str,
    name: str,
    prefix: str,
    namespace: str,
    count: int,
    timeout: float = 900.0,
) -> Timing:
    """A fresh connector with ``snapshot.mode=initial``; done when its topic holds the ``count`` documents."""
    config = dbz.config(uri, prefix, namespace, "initial")
    topic = f"{prefix}.{namespace}"
    return _measure(dbz, name, bootstrap, topic, count, lambda: dbz.connect.create_connector(name, config), timeout)


def position_before_writes(
    dbz: DebeziumWorker, *, uri: str, bootstrap: str, name: str, prefix: str, namespace: str, timeout: float = 120.0
) -> None:
    """Create connector ``name`` with ``no_data`` on the empty collection, let it store a position, stop it.

    An idle Debezium connector produces nothing, so nothing would commit its offset: a heartbeat
    record every ``HEARTBEAT_MS`` does, and is switched off again while the connector is stopped,
    so the measured run has the configuration mongocdc has.
    """
    heartbeat_topic = f"__debezium-heartbeat.{prefix}"
    create_topics(bootstrap, [heartbeat_topic], 1)
    config = dbz.config(uri, prefix, namespace, "no_data")
    dbz.connect.create_connector(name, {**config, "heartbeat.interval.ms": str(HEARTBEAT_MS)})
    beats = EndOffsets(bootstrap, heartbeat_topic)
    try:
        beats.wait_for(1, timeout=timeout, failed=_throttled(lambda: dbz.failed(name)), interval=0.05)
    finally:
        beats.close()
    dbz.put(name, "stop")
    dbz.connect.wait_for(lambda: _state(dbz, name) == "STOPPED", f"connector {name} to stop", timeout)
    offsets = dbz.connect.wait_for(lambda: dbz.connect.connector_offsets(name) or None, f"{name}'s offsets", timeout)
    log.info("Debezium %s stored %s", name, offsets)
    dbz.connect.create_connector(name, config)  # no heartbeat; a stopped connector stays stopped
    if _state(dbz, name) != "STOPPED":
        raise RuntimeError(f"connector {name} left the STOPPED state when reconfigured")


def _state(dbz: DebeziumWorker, name: str) -> str | None:
    status = dbz.connect.connector_status(name)
    return None if status is None else str(status["connector"].get("state"))


def stream(
    dbz: DebeziumWorker,
    *,
    bootstrap: str,
    name: str,
    prefix: str,
    namespace: str,
    count: int,
    timeout: float = 900.0,
) -> Timing:
    """Resume the stopped connector ``name``; done when its topic holds the ``count`` replayed changes."""
    topic = f"{prefix}.{namespace}"

    def resume() -> None:
        dbz.put(name, "resume")

    return _measure(dbz, name, bootstrap, topic, count, resume, timeout)
