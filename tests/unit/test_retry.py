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
    assert retries[0] == "connecting: attempt 1/6 failed, next in 1.0 s: refused #1"
    assert retries[-1] == "connecting: attempt 4/6 failed, next in 5.0 s: refused #4"


def test_a_retry_is_one_line_with_the_first_line_of_the_described_error(caplog: pytest.LogCaptureFixture) -> None:
    def fails() -> None:
        raise ConnectionError("h:1: refused, Topology Description: <...>\n  servers: [...]\n")

    with caplog.at_level(logging.WARNING, logger="mongocdc.retry"), pytest.raises(ConnectionError):
        Backoff(0.5, 1.0, 2).run(
            "connecting to h:1",
            fails,
            retry_on=(ConnectionError,),
            sleep=lambda _: None,
            describe=lambda exc: str(exc).replace(", Topology Description: <...>", ""),
        )
    assert [r.getMessage() for r in caplog.records] == [
        "connecting to h:1: attempt 1/2 failed, next in 0.5 s: h:1: refused"
    ]


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
