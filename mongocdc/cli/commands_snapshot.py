"""``mongocdc snapshot``: copy the included collections into Kafka and exit."""

from __future__ import annotations

import typer

from mongocdc.cli.metrics_server import serve_metrics
from mongocdc.cli.options import (
    BootstrapOpt,
    ConnectionStringOpt,
    MetricsPortOpt,
    NameOpt,
    OffsetsOpt,
    OutputOpt,
    TopicPrefixOpt,
)
from mongocdc.cli.progress import SnapshotProgressView, render_summary
from mongocdc.cli.signals import GracefulStop
from mongocdc.cli.state import Output, state


def register(app: typer.Typer) -> None:
    @app.command()
    def snapshot(
        ctx: typer.Context,
        output: OutputOpt = Output.table,
        connection_string: ConnectionStringOpt = None,
        topic_prefix: TopicPrefixOpt = None,
        bootstrap_servers: BootstrapOpt = None,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
        metrics_port: MetricsPortOpt = None,
    ) -> None:
        """Copy every included collection into Kafka as read (op=r) events, then exit; resumable."""
        from mongocdc import wiring
        from mongocdc.engine.metrics import Metrics

        settings = state(ctx).settings(
            connection_string=connection_string,
            topic_prefix=topic_prefix,
            bootstrap_servers=bootstrap_servers,
            offsets=offsets,
            name=name,
            metrics_port=metrics_port,
        )
        metrics = Metrics(settings.name)
        stopper = GracefulStop()
        with (
            stopper.installed(),
            serve_metrics(metrics, settings.metrics_port),
            SnapshotProgressView() as progress,
            wiring.connector(settings, stop=stopper.event, on_progress=progress.update, metrics=metrics) as task,
        ):
            result = task.run(snapshot_only=True)
        if result.snapshot is not None:
            render_summary(output, result.snapshot)
        if stopper.exit_code:
            raise typer.Exit(stopper.exit_code)
