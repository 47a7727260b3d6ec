"""librdkafka's connection errors for a cluster that is down: one line when it goes down, one when it is back."""

from __future__ import annotations

import logging

import pytest

from mongocdc.kafka.logs import ClientLog

FAIL = (
    "127.0.0.1:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: Connection refused (after 0ms in state CONNECT)"
)


def test_repeated_connection_errors_are_one_line_per_change_of_state(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    clients = ClientLog("target", "b1:9092")
    for _ in range(300):
        clients.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-1", FAIL)
    clients.log(
        logging.INFO, "%s [%s] %s", "FAIL", "rdkafka#consumer-2", "b1:9092/1: Disconnected (after 5ms in state UP)"
    )
    clients.log(logging.WARNING, "%s [%s] %s", "CONFWARN", "rdkafka#consumer-2", "a property is ignored")
    clients.answered()
    clients.answered()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("the target Kafka cluster at b1:9092 does not answer: 127.0.0.1:9092/bootstrap: Connect")
    assert "CONFWARN [rdkafka#consumer-2] a property is ignored" in lines[1]
    assert (
        lines[2] == "the target Kafka cluster at b1:9092 answers again (300 more connection errors while it was down)"
    )
    assert len(lines) == 3
    # back up: an informational disconnect passes through as before, a failure is reported again
    clients.log(
        logging.INFO, "%s [%s] %s", "FAIL", "rdkafka#consumer-2", "b1:9092/1: Disconnected (after 9ms in state UP)"
    )
    clients.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-1", FAIL)
    assert [r.levelname for r in caplog.records[3:]] == ["INFO", "WARNING"]
    assert "does not answer" in caplog.records[4].getMessage()
