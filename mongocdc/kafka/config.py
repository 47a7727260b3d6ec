"""librdkafka configurations: mongocdc's properties and each client's needs, in one precedence order.

A client's configuration is ``defaults`` (what mongocdc prefers), overridden by the user's settings (the
``kafka.*``, ``src.kafka.*``, ``dest.kafka.*`` keys without their prefix: ``Settings.kafka_client`` and its
kin), overridden by ``forced`` (what the client's correctness depends on, e.g. ``acks=all`` for a durable
write). The rest of this module turns mongocdc's own properties into librdkafka settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mongocdc.config import Settings

NO_AUTO_CREATE: Final[Mapping[str, Any]] = {"allow.auto.create.topics": False}
"""Never let a metadata request create a topic with the broker's defaults."""

DURABLE: Final[Mapping[str, Any]] = {"enable.idempotence": True, "acks": "all"}
"""A record is acknowledged once every in-sync replica has it, written once however often it is retried."""

JAVA_PARTITIONER: Final[Mapping[str, Any]] = {"partitioner": "murmur2_random"}
"""A key's partition as the Java client's default partitioner picks it (Kafka Connect, Debezium)."""

READER: Final[Mapping[str, Any]] = {
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
}
"""A consumer that assigns its partitions, commits nothing and says when it reached a partition's end."""


def client_config(
    settings: Mapping[str, Any],
    *,
    defaults: Mapping[str, Any] | None = None,
    forced: Mapping[str, Any] | None = None,
    error_cb: Callable[[Any], None] | None = None,
    logger: Any = None,
) -> dict[str, Any]:
    """``defaults`` < ``settings`` < ``forced``, with the error callback and the logger of librdkafka's lines."""
    config: dict[str, Any] = dict(defaults or {})
    config.update(settings)
    config.update(forced or {})
    if error_cb is not None:
        config["error_cb"] = error_cb
    if logger is not None:
        config["logger"] = logger
    return config


def producer_settings(settings: Settings) -> dict[str, str]:
    """The change event producer's librdkafka settings: ``kafka.*``, and the queue limits of ``max.queue.size*``.

    ``max.queue.size`` bounds the events read but not yet sent (librdkafka's
    ``queue.buffering.max.messages``; producing waits while it is full),
    ``max.queue.size.in.bytes`` their size (``queue.buffering.max.kbytes``); an
    explicit ``kafka.queue.buffering.*`` setting wins.
    """
    config = dict(settings.kafka_client)
    if settings.max_queue_size is not None:
        config.setdefault("queue.buffering.max.messages", str(settings.max_queue_size))
    if settings.max_queue_size_in_bytes > 0:
        config.setdefault("queue.buffering.max.kbytes", str(-(-settings.max_queue_size_in_bytes // 1024)))
    return config


def signal_client_config(settings: Settings) -> dict[str, str]:
    """librdkafka settings of the signal clients: the ``kafka.*`` keys, ``signal.kafka.bootstrap.servers`` first."""
    config = dict(settings.kafka_client)
    if settings.signal_kafka_bootstrap_servers:
        config["bootstrap.servers"] = settings.signal_kafka_bootstrap_servers
    return config
