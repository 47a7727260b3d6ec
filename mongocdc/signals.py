"""The stop signals (SIGTERM and SIGINT) of mongocdc's long-running work, handled in one place.

``on_stop_signals`` installs a handler of both for the length of a ``with`` block and puts the previous
handlers back after it; ``ignore_sigterm`` is the ``preexec_fn`` of a child process that must not end on
SIGTERM (the Spark JVM and ``spark-submit``: the Python side stops them after their batch). Who handles
what: ``cli/graceful_stop`` (``stream``, ``snapshot``, ``replicate``: stop reading, flush, commit),
``spark/job`` (the job stops after its batch, a second signal at once) and ``spark/launcher`` (waiting
for ``spark-submit``'s job to stop).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
"""What a service manager (SIGTERM) or a terminal (SIGINT, Ctrl-C) sends to stop a process."""


@contextmanager
def on_stop_signals(handler: Callable[[signal.Signals], None], *, main_thread_only: bool = False) -> Iterator[None]:
    """Call ``handler`` with the signal on SIGTERM and SIGINT inside the block; the previous handlers come
    back after it.

    Python handles signals in its main thread only: elsewhere ``signal.signal`` raises ``ValueError``, or,
    with ``main_thread_only``, the block runs without handlers (a job run from a thread stops by its event).
    """
    if main_thread_only and threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        handler(signal.Signals(signum))

    previous = {sig: signal.signal(sig, handle) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def ignore_sigterm() -> None:
    """Ignore SIGTERM in this process (a child's ``preexec_fn``: a program started so keeps it ignored)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
