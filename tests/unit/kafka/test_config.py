"""librdkafka configurations: precedence, and mongocdc's properties turned into librdkafka's."""

from __future__ import annotations

from typing import Any

from mongocdc.config import load_settings
from mongocdc.kafka.config import client_config, producer_settings, signal_client_config


def settings(**properties: object) -> Any:
    return load_settings(None, {}, {"topic.prefix": "app", **properties})


def test_defaults_yield_to_the_users_keys_and_those_to_what_the_client_needs() -> None:
    config = client_config(
        {"acks": "1", "linger.ms": "50"}, defaults={"acks": "all", "linger.ms": 5, "a": 1}, forced={"acks": "all"}
    )
    assert config == {"acks": "all", "linger.ms": "50", "a": 1}


def test_max_queue_size_bounds_the_producers_queue() -> None:
    config = producer_settings(settings(**{"max.queue.size": 5000, "max.queue.size.in.bytes": 1_000_001}))
    assert config["queue.buffering.max.messages"] == "5000"
    assert config["queue.buffering.max.kbytes"] == "977"  # rounded up to whole KiB
    assert config["bootstrap.servers"] == "localhost:9092"


def test_unset_queue_limits_leave_librdkafkas_defaults_and_kafka_settings_win() -> None:
    assert "queue.buffering.max.messages" not in producer_settings(settings())
    assert "queue.buffering.max.kbytes" not in producer_settings(settings())
    explicit = settings(**{"max.queue.size": 5000, "kafka.queue.buffering.max.messages": "9000"})
    assert producer_settings(explicit)["queue.buffering.max.messages"] == "9000"


def test_signal_bootstrap_servers_win_over_kafkas() -> None:
    assert signal_client_config(settings())["bootstrap.servers"] == "localhost:9092"
    other = settings(**{"signal.kafka.bootstrap.servers": "signals:9092", "kafka.security.protocol": "SSL"})
    assert signal_client_config(other) == {**other.kafka_client, "bootstrap.servers": "signals:9092"}
