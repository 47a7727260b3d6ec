"""Graceful stop on the POSIX signals SIGTERM and SIGINT: stop reading, flush, commit, then exit 0 or 130."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

from mongocdc.errors import ExitCode
from mongocdc.signals import on_stop_signals

log = logging.getLogger("mongocdc")


class GracefulStop:
    """SIGTERM/SIGINT set ``event``; the loop then stops reading, flushes and commits."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def _handle(self, signum: signal.Signals) -> None:
        if self.signal is None:
            log.info("received %s: stopping after the events in flight are acknowledged", signum.name)
            self.signal = int(signum)
        self.event.set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGTERM and SIGINT inside the block; the previous handlers come back after it."""
        with on_stop_signals(self._handle):
            yield

    @property
    def exit_code(self) -> int:
        return int(ExitCode.INTERRUPTED) if self.signal == signal.SIGINT else int(ExitCode.OK)
