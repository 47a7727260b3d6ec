"""Retrying with exponential backoff (the ``connect.*`` properties), for MongoDB and Kafka alike."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity

from mongocdc.config import redact_text

log = logging.getLogger("mongocdc.retry")

T = TypeVar("T")

RETRIES_HINT = "connect.max.attempts and connect.backoff.* tune the retries"
"""What a hint says about the ``connect.*`` retries of the long-running commands."""


def first_line(text: str) -> str:
    """The first non-empty line of ``text`` (an error's message without what follows it)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry policy: first delay, doubling up to a cap, at most ``max_attempts`` attempts in all."""

    initial_delay_s: float = 1.0
    max_delay_s: float = 120.0
    max_attempts: int = 16
    tuning: str = RETRIES_HINT
    """What the hint of a failure after these attempts says changes them (a one-shot command's ``--timeout``)."""

    @classmethod
    def once(cls, tuning: str) -> Backoff:
        """One attempt, no retry: a one-shot command's (``tuning`` says how to wait longer)."""
        return cls(max_attempts=1, tuning=tuning)

    def delays(self) -> list[float]:
        """The waits between attempts, in order (``max_attempts - 1`` of them)."""
        return [min(self.max_delay_s, self.initial_delay_s * 2**i) for i in range(max(0, self.max_attempts - 1))]

    def run(
        self,
        what: str,
        attempt: Callable[[], T],
        *,
        retry_on: tuple[type[BaseException], ...],
        sleep: Callable[[float], None] = time.sleep,
        describe: Callable[[BaseException], str] = str,
    ) -> T:
        """Call ``attempt`` until it succeeds; log each retry in one line; re-raise the last error.

        A retry's line says ``what`` (which names the host), the attempt and the delay before the next,
        and the first line of ``describe(error)`` (a client's summary of its error, its message by default).
        """

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            delay = state.next_action.sleep if state.next_action else 0.0
            log.warning(
                "%s: attempt %d/%d failed, next in %.1f s: %s",
                what,
                state.attempt_number,
                self.max_attempts,
                delay,
                redact_text(first_line(describe(exc))) if exc is not None else "",
            )

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(max(1, self.max_attempts)),
            wait=tenacity.wait_exponential(multiplier=self.initial_delay_s, max=self.max_delay_s),
            retry=tenacity.retry_if_exception_type(retry_on),
            before_sleep=before_sleep,
            sleep=sleep,
            reraise=True,
        )
        return retrying(attempt)
