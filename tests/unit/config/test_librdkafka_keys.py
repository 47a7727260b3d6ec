"""``kafka.*``, ``src.kafka.*`` and ``dest.kafka.*`` keys checked against librdkafka's property names."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mongocdc.config import librdkafka, load_settings, loading


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "_WARNED_CLIENT_KEYS", set())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "mongocdc.config"]


def test_an_unknown_key_is_a_warning_with_the_closest_property_and_is_passed_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("kafka:\n  lingr.ms: 5\n  linger.ms: 7\nsrc.kafka.security.protocl: SSL\n")
    with caplog.at_level(logging.WARNING):
        settings = load_settings(config, {}, {})
    said = _warnings(caplog)
    assert len(said) == 2, said
    assert said[0].startswith(f"kafka.lingr.ms (config file {config}) is not a librdkafka {librdkafka.VERSION}")
    assert "did you mean 'kafka.linger.ms'?" in said[0]
    assert "did you mean 'src.kafka.security.protocol'?" in said[1]
    assert settings.kafka_client["lingr.ms"] == "5"  # librdkafka decides when a client is made
    assert settings.src_kafka_client["security.protocl"] == "SSL"


def test_keys_librdkafka_knows_are_not_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = {"MONGOCDC_KAFKA_LINGER_MS": "5", "MONGOCDC_DEST_KAFKA_SECURITY_PROTOCOL": "SSL"}
    overrides = {"kafka.bootstrap.servers": "k:9092", "src.kafka.bootstrap.servers": "s:9092"}
    with caplog.at_level(logging.WARNING):
        load_settings(None, env, overrides)
    assert _warnings(caplog) == []


def test_an_unknown_key_from_the_environment_names_its_variable_once_per_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {"MONGOCDC_KAFKA_BOOTSTRAP_SERVER": "k:9092"}
    with caplog.at_level(logging.WARNING):
        load_settings(None, env, {})
        load_settings(None, env, {})
    (said,) = _warnings(caplog)
    assert "kafka.bootstrap.server (environment variable MONGOCDC_KAFKA_BOOTSTRAP_SERVER)" in said
    assert "did you mean 'kafka.bootstrap.servers'?" in said


def test_a_misspelt_secret_key_is_warned_about_without_its_value_and_stays_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("kafka.sasl.pasword: hunter2\n")
    with caplog.at_level(logging.WARNING):
        settings = load_settings(config, {}, {})
    (said,) = _warnings(caplog)
    assert "did you mean 'kafka.sasl.password'?" in said and "hunter2" not in said
    assert "hunter2" not in repr(settings)
    assert settings.as_properties()["kafka.sasl.pasword"] == "********"


def test_a_key_without_a_close_property_gets_no_suggestion(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        load_settings(None, {}, {"kafka.completely.different": "x"})
    (said,) = _warnings(caplog)
    assert "did you mean" not in said
    assert "is not a librdkafka" in said
