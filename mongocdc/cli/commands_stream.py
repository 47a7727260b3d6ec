"""``mongocdc stream``."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import typer

from mongocdc.cli import render
from mongocdc.cli.graceful_stop import GracefulStop
from mongocdc.cli.metrics_server import Health, serve_metrics
from mongocdc.cli.options import CONNECTOR_FLAGS, OutputLinesOpt, examples, settings_flags
from mongocdc.cli.progress import SnapshotProgressView, render_summary
from mongocdc.cli.state import Output, state

if TYPE_CHECKING:
    from collections.abc import Callable

    from mongocdc.config import Settings
    from mongocdc.engine.connector import TaskResult
    from mongocdc.engine.fleet import Worker
    from mongocdc.engine.metrics import Metrics
    from mongocdc.engine.streaming import StreamStats

log = logging.getLogger("mongocdc.stream")


def status_line(stats: StreamStats) -> str:
    """``streamed 1 event (c=1 u=0 d=0 r=0), 1 commit``: every op counted (``r`` for incremental snapshot reads)."""
    total, commits = stats.total, stats.commits
    counts = " ".join(f"{op}={stats.events.get(op, 0)}" for op in ("c", "u", "d", "r"))
    return (
        f"streamed {total} event{'' if total == 1 else 's'} ({counts}), {commits} commit{'' if commits == 1 else 's'}"
    )


STREAM_EXAMPLES: Final = examples(
    "mongocdc stream -c connector.yaml",
    "mongocdc stream --connection-string 'mongodb://mongo1/?replicaSet=rs0' --topic-prefix shop --bootstrap-servers k1:9092",  # noqa: E501
    "mongocdc stream -c connector.yaml --group-id shop-workers --metrics-port 9404 --metrics-host 0.0.0.0",
)


@settings_flags(*CONNECTOR_FLAGS, "group.id", "metrics.port", "metrics.host")
def stream(ctx: typer.Context, output: OutputLinesOpt = Output.table) -> None:
    """Stream every change into Kafka until SIGTERM/SIGINT, resuming from the stored offset.

    With --group-id (group.id), run as one worker of a group: the processes with the same configuration and group
    share the connector's tasks (one per source partition), and a stopped worker's tasks move to the others.
    """
    from mongocdc import wiring
    from mongocdc.engine.metrics import Metrics

    settings = state(ctx).settings()
    metrics = Metrics(settings.name)
    stopper = GracefulStop()
    said = [""]

    def on_status(stats: StreamStats) -> None:
        if output is Output.json:
            render.print_json(
                {
                    "status": "streaming",
                    "at": datetime.now(UTC).isoformat(),
                    **stats.to_dict(),
                    "metrics": metrics.to_dict(),
                }
            )
        else:
            line = status_line(stats)
            if line != said[0]:  # a stop's last commits change nothing: say each state once
                log.info(line)
                said[0] = line

    health = Health()
    if settings.group_id is not None:
        result = _run_worker(settings, stopper, health, metrics, on_status)
        _summary(output, result, stopper)
        return
    with (
        stopper.installed(),
        serve_metrics(metrics, settings.metrics_port, settings.metrics_host, health),
        SnapshotProgressView() as progress,
        wiring.connector(
            settings,
            stop=stopper.event,
            on_status=on_status,
            on_progress=progress.update,
            metrics=metrics,
            estimate_after_s=progress.estimate_after_s,
        ) as task,
    ):
        health.set_ready(tasks=sorted(task.tasks))
        try:
            result = task.run()
        except BaseException as exc:
            health.set_failed(str(exc))
            raise
        finally:
            health.set_not_ready("stopping")
    _summary(output, result, stopper)


def _run_worker(
    settings: Settings,
    stopper: GracefulStop,
    health: Health,
    metrics: Metrics,
    on_status: Callable[[StreamStats], None],
) -> TaskResult:
    """Group mode (``group.id``): run the tasks the group assigns this worker until SIGTERM/SIGINT."""
    from mongocdc import wiring_fleet

    def changed(worker: Worker) -> None:
        if not worker.serving:
            return
        detail: dict[str, object] = {"group": settings.group_id, "tasks": sorted(worker.tasks.values())}
        failed = sorted(worker.failed.values())
        if failed:
            detail["failed"] = failed
        if failed and not worker.tasks:  # alive (/health), but serving nothing until a restart
            health.set_not_ready("every task of this worker failed", **detail)
        else:
            health.set_ready(**detail)

    with (
        stopper.installed(),
        serve_metrics(metrics, settings.metrics_port, settings.metrics_host, health),
        wiring_fleet.worker(
            settings, stop=stopper.event, on_status=on_status, metrics=metrics, on_change=changed
        ) as worker,
    ):
        try:
            return worker.run()
        except BaseException as exc:
            health.set_failed(str(exc))
            raise
        finally:
            health.set_not_ready("stopping")


def _summary(output: Output, result: TaskResult, stopper: GracefulStop) -> None:
    from mongocdc.engine.streaming import StreamStats

    if result.snapshot is not None:
        if output is Output.json:  # a line of the stream's JSON lines, with its status as every line has
            render.print_json({"status": "snapshot", **result.snapshot.to_dict()})
        else:
            render_summary(output, result.snapshot)
    stats = result.stream or StreamStats()
    summary = {"status": "stopped", **stats.to_dict()}
    if output is Output.json:
        render.print_json(summary)
    else:
        rows = [[op, n] for op, n in stats.events.items()] + [
            ["tombstones", stats.tombstones],
            ["commits", stats.commits],
        ]
        render.table("stream stopped", ["", "count"], rows)
    if stopper.exit_code:
        raise typer.Exit(stopper.exit_code)
