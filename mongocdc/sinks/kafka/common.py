"""Client configuration and error translation shared by the Kafka wrappers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from mongocdc.errors import ConfigError, UnreachableError

log = logging.getLogger("mongocdc.kafka")
librdkafka_log = logging.getLogger("mongocdc.kafka.librdkafka")


def client_config(settings: Mapping[str, str], **defaults: Any) -> dict[str, Any]:
    """librdkafka settings: our defaults, overridden by the user's ``kafka.*`` keys."""
    config: dict[str, Any] = dict(defaults)
    config.update(settings)
    config["logger"] = librdkafka_log
    return config


def describe_error(err: KafkaError) -> str:
    return f"{err.name()}: {err.str()}"


def raise_for_client_error(exc: KafkaException, bootstrap: str) -> None:
    """Translate a client construction or request failure into a ``MongocdcError``."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        if err.code() == KafkaError._INVALID_ARG:
            raise ConfigError(
                f"invalid Kafka client setting: {err.str()}",
                hint="check the kafka.* keys of the configuration against librdkafka's CONFIGURATION.md",
            ) from exc
        if err.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT):
            raise UnreachableError(
                f"Kafka at {bootstrap} is unreachable: {err.str()}",
                hint="check kafka.bootstrap.servers (or --bootstrap-servers) and that the brokers are up",
            ) from exc
    raise UnreachableError(f"Kafka request to {bootstrap} failed: {exc}") from exc
