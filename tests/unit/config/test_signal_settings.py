"""Signal, incremental snapshot and notification properties: Debezium names and defaults, validation messages."""

from __future__ import annotations

import pytest

from mongocdc.config import PROPERTIES, Settings, load_settings
from mongocdc.errors import ConfigError


def load(**overrides: object) -> Settings:
    return load_settings(None, {}, {k.replace("__", "."): v for k, v in overrides.items()})


def error(**overrides: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load(**overrides)
    return caught.value.message


def test_debezium_names_and_defaults() -> None:
    settings = Settings()
    assert settings.signal_data_collection is None
    assert settings.signal_enabled_channels == ("source",)
    assert settings.signal_kafka_topic is None  # <topic.prefix>-signal
    assert settings.signal_kafka_bootstrap_servers is None  # kafka.bootstrap.servers
    assert settings.signal_kafka_groupId == "kafka-signal"
    assert settings.incremental_snapshot_chunk_size == 1024
    assert settings.incremental_snapshot_watermarking_strategy == "insert_insert"
    assert settings.notification_enabled_channels == ()
    assert settings.notification_sink_topic_name is None
    for name in (
        "signal.data.collection",
        "signal.enabled.channels",
        "signal.kafka.topic",
        "signal.kafka.bootstrap.servers",
        "signal.kafka.groupId",
        "incremental.snapshot.chunk.size",
        "incremental.snapshot.watermarking.strategy",
        "notification.enabled.channels",
        "notification.sink.topic.name",
    ):
        assert name in PROPERTIES


def test_every_property_can_be_set_from_the_environment() -> None:
    settings = load_settings(
        None,
        {
            "MONGOCDC_SIGNAL_DATA_COLLECTION": "inventory.debezium_signal",
            "MONGOCDC_SIGNAL_ENABLED_CHANNELS": "source,kafka",
            "MONGOCDC_SIGNAL_KAFKA_TOPIC": "inventory-signal",
            "MONGOCDC_SIGNAL_KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092",
            "MONGOCDC_SIGNAL_KAFKA_GROUPID": "signals-of-inventory",
            "MONGOCDC_INCREMENTAL_SNAPSHOT_CHUNK_SIZE": "500",
            "MONGOCDC_INCREMENTAL_SNAPSHOT_WATERMARKING_STRATEGY": "INSERT_DELETE",
            "MONGOCDC_NOTIFICATION_ENABLED_CHANNELS": "sink,log",
            "MONGOCDC_NOTIFICATION_SINK_TOPIC_NAME": "inventory.notifications",
        },
        {},
    )
    assert settings.signal_data_collection == "inventory.debezium_signal"
    assert settings.signal_enabled_channels == ("source", "kafka")
    assert settings.signal_kafka_topic == "inventory-signal"
    assert settings.signal_kafka_bootstrap_servers == "k1:9092,k2:9092"
    assert settings.signal_kafka_groupId == "signals-of-inventory"
    assert settings.incremental_snapshot_chunk_size == 500
    assert settings.incremental_snapshot_watermarking_strategy == "insert_delete"
    assert settings.notification_enabled_channels == ("log", "sink")
    assert settings.notification_sink_topic_name == "inventory.notifications"
    assert load_settings(None, {}, settings.as_properties(redact=False)) == settings


def test_channel_lists_accept_yaml_lists_case_and_none() -> None:
    assert load(signal__enabled__channels=["KAFKA"]).signal_enabled_channels == ("kafka",)
    assert load(signal__enabled__channels="none").signal_enabled_channels == ()
    assert load(notification__enabled__channels="log").notification_enabled_channels == ("log",)
    assert Settings().as_properties()["notification.enabled.channels"] == "none"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("signals", "expected <database>.<collection> (for example inventory.debezium_signal)"),
        ("inventory.", "expected <database>.<collection>"),
        ("in ventory.signals", "a database name must not contain ' '"),
        ("inventory.system.signals", "system.* collections cannot be captured"),
        ("inventory.sig$nal", "a collection name must not contain '$'"),
    ],
)
def test_bad_signal_data_collection(value: str, reason: str) -> None:
    message = error(signal__data__collection=value)
    assert f"signal.data.collection: invalid value {value!r} from the command line: {reason}" in message


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        (
            "signal.enabled.channels",
            "source,jmx",
            "unknown value 'jmx'; expected a comma-separated list of source, kafka",
        ),
        ("signal.enabled.channels", "", "write none for no flag"),
        (
            "notification.enabled.channels",
            "log,jmx",
            "unknown value 'jmx'; expected a comma-separated list of log, sink",
        ),
        ("incremental.snapshot.watermarking.strategy", "insert", "expected one of insert_insert, insert_delete"),
        ("incremental.snapshot.chunk.size", 0, "expected a whole number >= 1"),
        ("signal.kafka.topic", "bad topic", "expected a Kafka topic name"),
        ("notification.sink.topic.name", "a/b", "expected a Kafka topic name"),
        ("signal.kafka.bootstrap.servers", "k1:9092, ,k2", "expected a comma-separated list of host:port"),
        ("signal.kafka.groupId", " ", "expected a non-empty string"),
    ],
)
def test_bad_values_name_the_key_and_what_is_accepted(name: str, value: object, reason: str) -> None:
    message = error(**{name.replace(".", "__"): value})
    assert f"{name}: invalid value {value!r}" in message
    assert reason in message


def test_sink_notifications_need_a_topic() -> None:
    message = error(notification__enabled__channels="log,sink")
    assert "notification.sink.topic.name is required when notification.enabled.channels includes sink" in message
    assert "remove sink from notification.enabled.channels" in message
    settings = load(notification__enabled__channels="sink", notification__sink__topic__name="inventory.notifications")
    assert settings.notification_sink_topic_name == "inventory.notifications"
    assert load(notification__sink__topic__name="unused").notification_enabled_channels == ()


def test_a_bad_channel_list_does_not_add_a_misleading_topic_problem() -> None:
    message = error(notification__enabled__channels="sink,smoke")
    assert "unknown value 'smoke'" in message
    assert "notification.sink.topic.name is required" not in message


def test_direct_construction_checks_the_sink_topic_too() -> None:
    with pytest.raises(ConfigError, match="notification.sink.topic.name is required"):
        Settings(notification_enabled_channels=("sink",))
