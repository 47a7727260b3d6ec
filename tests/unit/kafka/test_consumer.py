"""Commits are checked per partition: a partition the group coordinator refused fails the commit.

The confluent-kafka consumer is replaced by a stand-in that answers the commit as a coordinator would
(no broker needed); the signal channel's commit goes through the same check.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from mongocdc.errors import ConfigError, ExitCode, MongocdcError, UnreachableError
from mongocdc.sources.kafka.signals import KafkaSignalChannel
from tests.unit.kafka.stubs import CLOSED, Coordinator, consumer_answered_by


def test_a_commit_every_partition_accepted_returns() -> None:
    coordinator = Coordinator()
    consumer_answered_by(coordinator).commit({("t", 0): 5, ("t", 1): 7}, doing="committing group g")
    assert coordinator.requests == [[("t", 0, 5), ("t", 1, 7)]]


def test_a_partition_refused_fails_the_commit_naming_it() -> None:
    consumer = consumer_answered_by(Coordinator(refused={1: KafkaError.OFFSET_METADATA_TOO_LARGE}))
    with pytest.raises(MongocdcError) as caught:
        consumer.commit({("t", 0): 5, ("t", 1): 7}, doing="committing group g")
    assert "committing group g for t[1]: OFFSET_METADATA_TOO_LARGE: refused" in caught.value.message
    assert "t[0]" not in caught.value.message


def test_a_partition_refused_for_lack_of_rights_is_a_configuration_error() -> None:
    consumer = consumer_answered_by(Coordinator(refused={0: KafkaError.GROUP_AUTHORIZATION_FAILED}))
    with pytest.raises(ConfigError) as caught:
        consumer.commit({("t", 0): 5}, doing="committing group g")
    assert caught.value.exit_code == ExitCode.CONFIG


def test_a_commit_the_coordinator_did_not_answer_is_exit_4() -> None:
    consumer = consumer_answered_by(Coordinator(raises=KafkaError.REQUEST_TIMED_OUT))
    with pytest.raises(UnreachableError):
        consumer.commit({("t", 0): 5}, doing="committing group g")


def test_nothing_to_commit_is_no_request() -> None:
    coordinator = Coordinator()
    consumer_answered_by(coordinator).commit({}, doing="committing group g")
    assert coordinator.requests == []


def test_the_signal_channel_reports_a_refused_partition_and_keeps_its_signals_pending() -> None:
    channel = KafkaSignalChannel(CLOSED, "app-signal", "g", "app")
    channel._consumer = consumer_answered_by(Coordinator(refused={0: KafkaError.UNKNOWN_TOPIC_OR_PART}))
    channel._pending = {0: 3}
    with pytest.raises(MongocdcError, match=r"app-signal\[0\]: UNKNOWN_TOPIC_OR_PART"):
        channel.commit()
    assert channel._pending == {0: 3}  # read again after a restart
