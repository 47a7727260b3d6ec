"""Where librdkafka's log lines go: ``mongocdc.kafka.librdkafka``, or a ``ClientLog`` that summarises outages."""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

log = logging.getLogger("mongocdc.kafka")
librdkafka_log = logging.getLogger("mongocdc.kafka.librdkafka")

_CONNECTION_FAILURE = re.compile(
    r"connect to .* failed|connection refused|disconnected|receive failed|send failed|failed to resolve|"
    r"timed out|brokers are down|connection (?:setup|reset)|broker transport failure|host unreachable",
    re.IGNORECASE,
)


class ClientLog:
    """librdkafka's log lines for one cluster's clients, with its connection failures summarised.

    While the cluster is down, librdkafka logs a failed connection attempt to each broker every few
    hundred milliseconds to seconds, from each client: hundreds of ERROR lines that say the same. The
    first one is logged (a WARNING naming the cluster and its role), the rest are counted, and when the
    cluster answers again (``answered``) one line says so with the count: one line per change of state.
    Other lines go to ``mongocdc.kafka.librdkafka`` as before. confluent-kafka calls ``log`` with
    librdkafka's facility, client name and message. ``logger`` is where the summary lines go.
    """

    def __init__(self, role: str, bootstrap: str, logger: logging.Logger = log) -> None:
        self.role = role
        self.bootstrap = bootstrap
        self.down = False
        self.suppressed = 0
        self._logger = logger
        self._lock = threading.Lock()

    def log(self, level: int, fmt: str, *args: Any) -> None:
        message = str(args[-1]) if args else fmt
        if _CONNECTION_FAILURE.search(message):
            if level >= logging.WARNING:
                self.failed(message)
                return
            if self.down:  # an informational disconnect (also an idle one) is only counted while down
                with self._lock:
                    self.suppressed += 1
                return
        librdkafka_log.log(level, fmt, *args)

    def failed(self, reason: str) -> None:
        """A connection to the cluster failed: logged when it is the first since the cluster last answered."""
        with self._lock:
            if self.down:
                self.suppressed += 1
                return
            self.down = True
            self.suppressed = 0
        self._logger.warning(
            "%s does not answer: %s (retrying; further connection errors are counted, not shown, until it answers "
            "again)",
            self._where(),
            reason.strip(),
        )

    def answered(self) -> None:
        """The cluster answered a request: logged when it was down."""
        if not self.down:
            return
        with self._lock:
            if not self.down:
                return
            self.down = False
            suppressed = self.suppressed
        self._logger.warning(
            "%s answers again (%d more connection errors while it was down)", self._where(), suppressed
        )

    def _where(self) -> str:
        """``the <role> Kafka cluster at <servers>``, or ``Kafka at <servers>`` without a role."""
        return f"the {self.role} Kafka cluster at {self.bootstrap}" if self.role else f"Kafka at {self.bootstrap}"
