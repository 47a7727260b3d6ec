"""The one mapping of Kafka's errors onto mongocdc's (exit codes, messages naming the cluster, hints)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from mongocdc.errors import (
    ConfigError,
    DeliveryError,
    ExitCode,
    FencedError,
    MongocdcError,
    OversizedEventError,
    UnreachableDeliveryError,
    UnreachableError,
    UsageError,
)
from mongocdc.kafka.errors import Endpoint

KAFKA = Endpoint("b1:9092", servers="kafka.bootstrap.servers (or --bootstrap-servers)")
TARGET = Endpoint("b2:9092", role="target", prefix="dest.kafka.")


def error(code: int, text: str = "reason") -> KafkaException:
    return KafkaException(KafkaError(code, text))


@pytest.mark.parametrize(
    ("code", "kind", "exit_code"),
    [
        (KafkaError._TRANSPORT, UnreachableError, ExitCode.UNREACHABLE),
        (KafkaError._ALL_BROKERS_DOWN, UnreachableError, ExitCode.UNREACHABLE),
        (KafkaError._TIMED_OUT, UnreachableError, ExitCode.UNREACHABLE),
        (KafkaError.REQUEST_TIMED_OUT, UnreachableError, ExitCode.UNREACHABLE),
        (KafkaError._INVALID_ARG, ConfigError, ExitCode.CONFIG),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, ConfigError, ExitCode.CONFIG),
        (KafkaError.GROUP_AUTHORIZATION_FAILED, ConfigError, ExitCode.CONFIG),
        (KafkaError.SASL_AUTHENTICATION_FAILED, ConfigError, ExitCode.CONFIG),
        (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ConfigError, ExitCode.CONFIG),
        (KafkaError.UNKNOWN_MEMBER_ID, MongocdcError, ExitCode.UNEXPECTED),
        (KafkaError._FENCED, FencedError, ExitCode.FENCED),
        (KafkaError.PRODUCER_FENCED, FencedError, ExitCode.FENCED),
        (KafkaError.INVALID_PRODUCER_EPOCH, FencedError, ExitCode.FENCED),
    ],
)
def test_a_failed_request_maps_onto_the_error_tree(code: int, kind: type[MongocdcError], exit_code: int) -> None:
    failure = KAFKA.failed(error(code), "listing topics")
    assert type(failure) is kind and failure.exit_code == exit_code
    assert "Kafka at b1:9092" in failure.message and "reason" in failure.message
    assert failure.hint or kind is MongocdcError


def test_messages_and_hints_name_the_cluster_its_role_and_its_settings() -> None:
    unreachable = TARGET.failed(error(KafkaError._TRANSPORT, "Connection refused"), "listing topics")
    assert unreachable.message == (
        "the target Kafka cluster at b2:9092 is unreachable while listing topics: Connection refused"
    )
    assert unreachable.hint == (
        "check dest.kafka.bootstrap.servers, the dest.kafka.* security settings and that the brokers are up"
    )
    invalid = TARGET.failed(error(KafkaError._INVALID_ARG, "No such configuration property"), "creating a producer")
    assert invalid.hint is not None and "dest.kafka.* keys" in invalid.hint
    refused = TARGET.failed(error(KafkaError.GROUP_AUTHORIZATION_FAILED), "committing")
    assert refused.hint == "check the dest.kafka.sasl.* settings and the principal's ACLs"


def test_an_owner_chooses_what_a_refusal_is_and_what_to_grant() -> None:
    endpoint = Endpoint("b:9092", access_hint="grant read on topic t", refused_error=UsageError)
    refused = endpoint.failed(error(KafkaError.TOPIC_AUTHORIZATION_FAILED), "reading topic t")
    assert isinstance(refused, UsageError) and refused.exit_code == ExitCode.USAGE
    assert refused.hint == "grant read on topic t"


def test_an_unreachable_cluster_after_retries_says_how_often_it_was_tried() -> None:
    assert (
        KAFKA.unreachable("refused", attempts=1).message == "Kafka at b1:9092 is unreachable after 1 attempt: refused"
    )
    twice = KAFKA.unreachable("refused", attempts=2)
    assert twice.message == "Kafka at b1:9092 is unreachable after 2 attempts: refused"
    assert twice.hint is not None and twice.hint.startswith("check kafka.bootstrap.servers (or --bootstrap-servers)")
    assert twice.hint.endswith("connect.max.attempts and connect.backoff.* tune the retries")


@pytest.mark.parametrize(
    ("code", "kind", "exit_code"),
    [
        (KafkaError.MSG_SIZE_TOO_LARGE, OversizedEventError, ExitCode.CONFIG),
        (KafkaError.RECORD_LIST_TOO_LARGE, OversizedEventError, ExitCode.CONFIG),
        (KafkaError._MSG_TIMED_OUT, UnreachableDeliveryError, ExitCode.UNREACHABLE),
        (KafkaError._TRANSPORT, UnreachableDeliveryError, ExitCode.UNREACHABLE),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, DeliveryError, ExitCode.UNEXPECTED),
    ],
)
def test_a_failed_delivery_maps_onto_the_error_tree(code: int, kind: type[DeliveryError], exit_code: int) -> None:
    failure = TARGET.delivery_failed(
        KafkaError(code, "why"), "a copy", note="; nothing after it was committed", redo=""
    )
    assert type(failure) is kind and failure.exit_code == exit_code
    assert failure.message.endswith("; nothing after it was committed")
    assert isinstance(failure, DeliveryError)


def test_a_delivery_the_cluster_did_not_acknowledge_is_also_an_unreachable_error() -> None:
    failure = KAFKA.delivery_failed(KafkaError(KafkaError._MSG_TIMED_OUT, "timed out"), "the record", note="", redo="")
    assert isinstance(failure, UnreachableError)
    assert failure.message == "Kafka at b1:9092 did not acknowledge the record in time: timed out"


def test_a_record_too_large_to_queue_says_which_settings_to_raise() -> None:
    failure = TARGET.produce_failed(
        error(KafkaError.MSG_SIZE_TOO_LARGE, "too big"), "the record for key k in t", 2_000_000, note="", redo=""
    )
    assert isinstance(failure, OversizedEventError)
    assert "2000000 bytes" in failure.message and failure.hint is not None
    assert "dest.kafka.message.max.bytes" in failure.hint
    other = TARGET.produce_failed(error(KafkaError._UNKNOWN_TOPIC, "no topic"), "the record", 1, note="", redo="")
    assert type(other) is DeliveryError


def test_partitions_refused_in_one_request_are_all_named_with_the_first_ones_kind() -> None:
    class Refused:
        def __init__(self, partition: int, code: int) -> None:
            self.topic, self.partition, self.error = "orders", partition, KafkaError(code, "no")

    failure = KAFKA.partitions_failed(
        [Refused(1, KafkaError.GROUP_AUTHORIZATION_FAILED), Refused(3, KafkaError.UNKNOWN_TOPIC_OR_PART)], "committing"
    )
    assert isinstance(failure, ConfigError)
    assert "orders[1]: GROUP_AUTHORIZATION_FAILED: no" in failure.message
    assert "orders[3]: UNKNOWN_TOPIC_OR_PART: no" in failure.message


@pytest.mark.parametrize("code", [KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH])
def test_a_fenced_producer_is_a_fenced_error_whichever_way_it_is_reported(code: int) -> None:
    fatal = KafkaError(code, "fenced by a newer producer", fatal=True)
    for mapped in (
        KAFKA.failed(KafkaException(fatal), "committing the transaction"),
        KAFKA.fatal(fatal, "producer"),  # the error callback's fatal error
        KAFKA.delivery_failed(fatal, "the offset record", note="", redo=""),
    ):
        assert type(mapped) is FencedError and mapped.exit_code == ExitCode.FENCED == 7
        assert "fenced" in mapped.message and "b1:9092" in mapped.message
        assert mapped.hint is not None and "one instance per connector" in mapped.hint


def test_another_fatal_producer_error_is_still_a_delivery_error() -> None:
    mapped = KAFKA.fatal(KafkaError(KafkaError._GAPLESS_GUARANTEE, "gap", fatal=True), "producer")
    assert type(mapped) is DeliveryError and mapped.exit_code == ExitCode.UNEXPECTED
