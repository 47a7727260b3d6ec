"""``mongocdc stream``."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from types import FrameType

import typer

from mongocdc.cli import render
from mongocdc.cli.options import BootstrapOpt, ConnectionStringOpt, NameOpt, OffsetsOpt, OutputOpt, TopicPrefixOpt
from mongocdc.cli.state import Output, state
from mongocdc.errors import ExitCode

log = logging.getLogger("mongocdc.stream")


class GracefulStop:
    """SIGTERM/SIGINT set ``event``; the loop then stops reading, flushes and commits."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signal is None:
            log.info("received %s: stopping after the events in flight are acknowledged", signal.Signals(signum).name)
            self.signal = signum
        self.event.set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGTERM and SIGINT inside the block; the previous handlers come back after it."""
        previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    @property
    def exit_code(self) -> int:
        return int(ExitCode.INTERRUPTED) if self.signal == signal.SIGINT else int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    @app.command()
    def stream(
        ctx: typer.Context,
        output: OutputOpt = Output.table,
        connection_string: ConnectionStringOpt = None,
        topic_prefix: TopicPrefixOpt = None,
        bootstrap_servers: BootstrapOpt = None,
        offsets: OffsetsOpt = None,
        name: NameOpt = None,
    ) -> None:
        """Stream every change into Kafka until SIGTERM/SIGINT, resuming from the stored offset."""
        from mongocdc import wiring
        from mongocdc.engine.streaming import StreamStats

        settings = state(ctx).settings(
            connection_string=connection_string,
            topic_prefix=topic_prefix,
            bootstrap_servers=bootstrap_servers,
            offsets=offsets,
            name=name,
        )
        stopper = GracefulStop()

        def on_status(stats: StreamStats) -> None:
            if output is Output.json:
                render.print_json({"status": "streaming", "at": datetime.now(UTC).isoformat(), **stats.to_dict()})
            else:
                log.info(
                    "streamed %d events (c=%d u=%d d=%d), %d commits",
                    stats.total,
                    stats.events["c"],
                    stats.events["u"],
                    stats.events["d"],
                    stats.commits,
                )

        with stopper.installed(), wiring.streaming_task(settings, stop=stopper.event, on_status=on_status) as task:
            stats = task.run()
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
