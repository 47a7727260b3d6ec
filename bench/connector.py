"""mongocdc itself, through the library API (``load_settings`` → ``wiring.connector`` → ``run``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import CPU, EndOffsets, PeerClock, Timing, settings_overrides
from mongocdc import wiring
from mongocdc.config import Settings, load_settings
from mongocdc.engine.connector import ConnectorGroup, ConnectorTask, TaskResult
from mongocdc.engine.metrics import Metrics

log = logging.getLogger("bench")


def settings(
    *,
    uri: str,
    bootstrap: str,
    name: str,
    prefix: str,
    namespace: str,
    workdir: Path,
    extra: Mapping[str, object] | None = None,
) -> Settings:
    overrides = settings_overrides(
        uri=uri,
        bootstrap=bootstrap,
        name=name,
        prefix=prefix,
        namespace=namespace,
        offsets_file=str(workdir / f"{name}.offsets.db"),
        extra=extra,
    )
    return load_settings(None, {}, overrides)  # no environment: the run does not depend on MONGOCDC_* variables


def _runner(group: ConnectorGroup) -> ConnectorGroup | ConnectorTask:
    """The replica set's one ``ConnectorTask``, run directly.

    ``ConnectorGroup.run`` runs it on a thread of its own and waits for that thread, which would add to
    every measured run; that latency is reported on its own instead.
    """
    if len(group.tasks) == 1:
        return next(iter(group.tasks.values()))
    return group


def snapshot(config: Settings, *, peer: tuple[str, str] | None = None) -> Timing:
    """One ``snapshot_only`` run; the clock covers ``run()`` (scan, produce, flush, commit), not start-up.

    ``peer`` (bootstrap servers, topic): also measure the run as the comparison with Debezium does
    (``Timing.peer``: from entering ``wiring.connector`` to the broker's append of the last record,
    first record, steady rate, CPU, this process's peak RSS); the topic must hold this run's records only.
    """
    stop = threading.Event()
    metrics = Metrics(config.name)
    clock = PeerClock("self") if peer else None
    began = time.perf_counter()
    with wiring.connector(config, stop=stop, metrics=metrics) as group:
        cpu = CPU.sample()
        started = time.perf_counter()
        result: TaskResult = _runner(group).run(snapshot_only=True)
        ended = time.perf_counter()
        used = CPU.since(cpu, CPU.sample())
        peer_cpu = clock.cpu() if clock else {}
        peak = clock.peak_rss_mb() if clock else 0.0
    assert result.snapshot is not None and result.snapshot.completed, result
    documents = result.snapshot.documents
    timing = Timing(documents, ended - started, {"start-up (not timed)": started - began, **used})
    if clock and peer:
        ends = EndOffsets(*peer)
        try:
            timing.peer = clock.finish(ends, documents, peer_cpu, peak)
        finally:
            ends.close()
    return timing


def group_latency(config: Settings) -> float:
    """Seconds ``ConnectorGroup.run(snapshot_only=True)`` takes beyond its task's own ``run`` (one run)."""
    stop = threading.Event()
    with wiring.connector(config, stop=stop, metrics=Metrics(config.name)) as group:
        task = _runner(group)
        task_seconds: list[float] = []
        original = task.run

        def timed_run(*, snapshot_only: bool = False) -> TaskResult:
            started = time.perf_counter()
            try:
                return original(snapshot_only=snapshot_only)
            finally:
                task_seconds.append(time.perf_counter() - started)

        task.run = timed_run  # type: ignore[method-assign]
        started = time.perf_counter()
        group.run(snapshot_only=True)
        total = time.perf_counter() - started
    return total - task_seconds[0]


def position_before_writes(config: Settings, *, timeout: float = 60.0) -> None:
    """Run once with ``snapshot.mode=no_data`` on the empty collection and stop: the offset then holds 'now'."""
    stop = threading.Event()
    metrics = Metrics(config.name)
    errors: list[BaseException] = []
    with wiring.connector(config, stop=stop, metrics=metrics) as group:

        def run() -> None:
            try:
                group.run()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=run, name="bench-position", daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not _connected(metrics):
            if errors or time.monotonic() > deadline:
                stop.set()
                thread.join()
                raise RuntimeError(f"mongocdc did not open its change stream: {errors}")
            time.sleep(0.02)
        stop.set()
        thread.join()
    if errors:
        raise errors[0]


def _connected(metrics: Metrics) -> bool:
    partitions: dict[str, Any] = metrics.to_dict()["partitions"]
    return any(p.get("connected") for p in partitions.values())


def stream(config: Settings, bootstrap: str, topic: str, count: int, *, timeout: float = 600.0) -> Timing:
    """Resume from the stored offset; the clock runs from ``run()`` until Kafka appended the last of ``count`` events.

    The end is the broker's append time of the newest record (the topic uses ``LogAppendTime``),
    so completion is polled only every 100 ms and the poll hardly competes with the run for the CPU.
    """
    stop = threading.Event()
    metrics = Metrics(config.name)
    errors: list[BaseException] = []
    ends = EndOffsets(bootstrap, topic)
    try:
        clock = PeerClock("self")
        began = time.perf_counter()
        with wiring.connector(config, stop=stop, metrics=metrics) as group:

            def run() -> None:
                try:
                    _runner(group).run()
                except BaseException as exc:
                    errors.append(exc)
                    stop.set()

            thread = threading.Thread(target=run, name="bench-stream", daemon=True)
            cpu = CPU.sample()
            started_wall, started = time.time(), time.perf_counter()
            thread.start()
            try:
                transactional = config.exactly_once_support != "disabled"
                seen = ends.wait_for(
                    count,
                    timeout=timeout,
                    failed=lambda: bool(errors),
                    delivered=(lambda: int(metrics.to_dict()["events_total"])) if transactional else None,
                )
                used = CPU.since(cpu, CPU.sample())  # to the moment the end was seen (at most 0.1 s idle)
                peer_cpu, peak = clock.cpu(), clock.peak_rss_mb()
            finally:
                stop.set()
                thread.join()
            stopped = time.perf_counter()
        if errors:
            raise errors[0]
        finished_wall = ends.last_append_time()
        streamed = int(metrics.to_dict()["events_total"])
        timing = Timing(
            streamed,
            finished_wall - started_wall,
            {
                "start-up (not timed)": started - began,
                "completion seen (poll lag)": seen - started - (finished_wall - started_wall),
                "graceful stop (not timed)": stopped - seen,
                **used,
            },
        )
        timing.peer = clock.finish(ends, streamed, peer_cpu, peak)
        return timing
    finally:
        ends.close()
