"""``GroupOffsetsPoller``: the source groups' committed offsets, read on a thread of their own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mongocdc.errors import MongocdcError

log = logging.getLogger("mongocdc.replication")

GroupOffsets = dict[str, dict[tuple[str, int], int]]
"""Committed offsets by group, then by ``(topic, partition)``."""


class GroupOffsetsPoller:
    """Reads the source groups' committed offsets every ``interval_s`` on a thread of its own.

    The admin requests take a while on a cluster with many groups; the copy loop only picks up the
    latest result (``take``), so checkpoints never stall copying.
    """

    def __init__(self, fetch: Callable[[], GroupOffsets], interval_s: float) -> None:
        self._fetch = fetch
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._latest: GroupOffsets | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="mongocdc-checkpoints", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                offsets = self._fetch()
            except MongocdcError as exc:
                log.warning("cannot read the source consumer groups' offsets for checkpoints: %s", exc)
            else:
                with self._lock:
                    self._latest = offsets
            self._stop.wait(self._interval_s)

    def take(self) -> GroupOffsets | None:
        """The offsets read since the last call, or ``None`` when none were."""
        with self._lock:
            latest, self._latest = self._latest, None
        return latest

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout_s)
