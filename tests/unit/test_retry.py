"""Backoff timings follow connect.backoff.initial.delay.ms, connect.backoff.max.delay.ms and connect.max.attempts."""

from __future__ import annotations

import logging

import pytest

from mongocdc.retry import Backoff


class Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"refused #{self.calls}")
        return "connected"


def test_delays_double_from_the_initial_delay_up_to_the_cap() -> None:
    assert Backoff(1.0, 120.0, 16).delays() == [1, 2, 4, 8, 16, 32, 64, 120, 120, 120, 120, 120, 120, 120, 120]
    assert Backoff(0.5, 3.0, 5).delays() == [0.5, 1.0, 2.0, 3.0]


def test_run_sleeps_exactly_those_delays_with_a_fake_clock(caplog: pytest.LogCaptureFixture) -> None:
    slept: list[float] = []
    backoff = Backoff(1.0, 5.0, 6)
    with caplog.at_level(logging.WARNING, logger="mongocdc.retry"):
        assert backoff.run("connecting", Flaky(4), retry_on=(ConnectionError,), sleep=slept.append) == "connected"
    assert slept == [1.0, 2.0, 4.0, 5.0]
    retries = [r.getMessage() for r in caplog.records]
    assert retries[0] == "connecting failed (attempt 1 of 6): refused #1; retrying in 1.0 s"
    assert retries[-1] == "connecting failed (attempt 4 of 6): refused #4; retrying in 5.0 s"


def test_run_gives_up_after_max_attempts_with_the_last_error() -> None:
    slept: list[float] = []
    flaky = Flaky(100)
    with pytest.raises(ConnectionError, match="refused #3"):
        Backoff(0.01, 1.0, 3).run("connecting", flaky, retry_on=(ConnectionError,), sleep=slept.append)
    assert flaky.calls == 3 and slept == [0.01, 0.02]


def test_other_errors_are_not_retried() -> None:
    def broken() -> None:
        raise ValueError("bad")

    slept: list[float] = []
    with pytest.raises(ValueError):
        Backoff().run("x", broken, retry_on=(ConnectionError,), sleep=slept.append)
    assert slept == []
