"""``mongocdc status``: a worker group's workers and the connector's tasks (Kafka Connect's connector status)."""

from __future__ import annotations

from typing import Annotated, Any, Final

import typer

from mongocdc.cli import render
from mongocdc.cli.options import OFFSETS, OutputOpt, examples, one_shot, settings_flags
from mongocdc.cli.state import Output, state

STATUS_EXAMPLES: Final = examples(
    "mongocdc status -c connector.yaml",
    "mongocdc status -c connector.yaml --group-id shop-workers -o json",
    "mongocdc status -c connector.yaml --restart 1",
)

RestartOpt = Annotated[
    int | None,
    typer.Option(
        "--restart",
        help="Restart this task (its id) when it is FAILED or FINISHED, as Kafka Connect's POST "
        "/connectors/<name>/tasks/<id>/restart: the worker holding it starts it again; then show the status.",
        metavar="TASK",
        min=0,
        show_default=False,
    ),
]


def _position(task: dict[str, Any]) -> str:
    position = task["position"]
    return "" if position is None else f"sec={position['sec']} ord={position['ord']}"


def _lag(task: dict[str, Any]) -> str:
    lag = task["lag_seconds"]
    return "" if lag is None else f"{lag:g} s"


@settings_flags("kafka.bootstrap.servers", OFFSETS, "name", "group.id")
@one_shot
def status(ctx: typer.Context, output: OutputOpt = Output.table, restart: RestartOpt = None) -> None:
    """Show a worker group's workers, the tasks each holds, and each task's state, position, lag and last error.

    Read from the group coordinator (group.id), the group's tasks topic and the offset store, as Kafka Connect's
    GET /connectors/<name>/status. A task is RUNNING when a worker holds it, UNASSIGNED while the group
    rebalances or no worker runs, REMOVED when its shard left the cluster, FAILED (with its error) when its run
    failed: its worker keeps it, and runs its other tasks, until --restart TASK; FINISHED when its run ended
    (snapshot.mode=initial_only after the snapshot). Its lag is the time since the cluster time of its stored
    position (on an idle replica set up to about 10 s, MongoDB's no-op write interval).
    """
    from mongocdc import wiring_fleet
    from mongocdc.errors import UsageError

    settings = state(ctx).settings()
    if settings.group_id is None:
        raise UsageError(
            "mongocdc status reads a worker group, and group.id is not set",
            hint="pass --group-id GROUP (or set group.id in the configuration); for a connector run by one process, "
            "`mongocdc offsets show` gives its stored positions",
        )
    if restart is not None:
        wiring_fleet.restart_task(settings, restart)
    result = wiring_fleet.group_status(settings)
    if output is Output.json:
        render.print_json(result)
        return
    render.table(
        f"connector {result['name']}: group {result['group']} ({result['group_state']}, "
        f"{len(result['workers'])} worker{'' if len(result['workers']) == 1 else 's'})",
        ["task", "partition", "state", "worker", "position", "lag", "snapshot", "last error"],
        [
            [
                t["id"],
                t["partition"],
                t["state"],
                t["worker_id"],
                _position(t),
                _lag(t),
                t["snapshot"],
                t["last_error"],
            ]
            for t in result["tasks"]
        ],
    )
