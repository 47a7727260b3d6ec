"""The replication settings: ``src.kafka.*`` / ``dest.kafka.*`` pass-through, defaults, validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from mongocdc.config import is_known_property, load_settings
from mongocdc.errors import ConfigError


def test_src_and_dest_client_settings_from_file_env_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "src.kafka:\n  security.protocol: SASL_SSL\n  sasl.password: hunter2\n"
        "dest.kafka.bootstrap.servers: b1:9092\ndest.kafka.linger.ms: 20\nkafka.linger.ms: 1\n"
    )
    settings = load_settings(
        config,
        {"MONGOCDC_DEST_KAFKA_SASL_USERNAME": "bob", "MONGOCDC_SRC_KAFKA_LINGER_MS": "7"},
        {"src.kafka.bootstrap.servers": "a1:9092,a2:9092"},
    )
    assert dict(settings.src_kafka_client) == {
        "bootstrap.servers": "a1:9092,a2:9092",
        "security.protocol": "SASL_SSL",
        "sasl.password": "hunter2",
        "linger.ms": "7",
    }
    assert dict(settings.dest_kafka_client) == {
        "bootstrap.servers": "b1:9092",
        "linger.ms": "20",
        "sasl.username": "bob",
    }
    assert settings.kafka_client["linger.ms"] == "1"  # the connector's own clients are separate
    shown = settings.as_properties()
    assert shown["src.kafka.sasl.password"] == "********"
    assert shown["dest.kafka.sasl.username"] == "bob"
    assert "hunter2" not in repr(settings)
    assert settings.get("src.kafka.security.protocol") == "SASL_SSL"
    assert is_known_property("dest.kafka.ssl.ca.location")
    assert not is_known_property("src.kafka.")


def test_replication_defaults() -> None:
    settings = load_settings(None, {}, {})
    assert settings.topics == (".*",)
    assert settings.topic_rename_format == "${topic}"
    assert settings.provenance_header_enable is True
    assert settings.emit_checkpoints_interval_seconds == 10
    assert settings.src_consumer_group_id is None
    assert dict(settings.src_kafka_client) == {}


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("topic.rename.format", "replica", "must contain ${topic}"),
        ("topic.rename.format", "${topic}/x", "only letters"),
        ("groups", "billing[", "not a valid regular expression"),
        ("src.kafka.bootstrap.servers", "a:1,,b:2", "without blanks"),
        ("emit.checkpoints.interval.seconds", "0", ">= 1"),
    ],
)
def test_invalid_replication_settings_name_the_property(name: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, {}, {name: value})
    assert name in info.value.message and problem in info.value.message
