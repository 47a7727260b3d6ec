"""The notification channels (``notification.enabled.channels``): where a connector's notifications go.

The format, Debezium's (``Notification``, ``incremental_snapshot`` and the record's key and value), is
``mongocdc/events/notifications.py``, shared with the reader of the topic
(``mongocdc/sources/kafka/notifications.py``).

Two channels share the ``notify(notification)`` interface: ``NotificationLog``
(``log``: one INFO line per notification) and ``NotificationSink`` (``sink``: a
record in ``notification.sink.topic.name`` with key ``{"id": …}``, wrapped in
the Kafka Connect JSON envelope with ``schemas.enable``, as Debezium's
``SinkNotificationChannel`` writes them). confluent_kafka is imported only when
a ``NotificationSink`` is built.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mongocdc.events.notifications import Notification, encode_key, encode_value

if TYPE_CHECKING:
    from mongocdc.sinks.kafka.producer import KafkaSink

__all__ = ["NotificationLog", "NotificationSink"]

log = logging.getLogger("mongocdc.notifications")

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class NotificationLog:
    """The ``log`` channel: one INFO line per notification on the ``mongocdc.notifications`` logger."""

    def notify(self, notification: Notification) -> None:
        log.info("[notification] %s", _dumps(notification.to_dict()))


class NotificationSink:
    """The ``sink`` channel: produces each notification to ``topic``.

    Give it the connector's ``KafkaSink`` (``sink=``) to share its producer, so
    notifications are flushed with the data events; otherwise it makes its own
    from ``settings`` (the librdkafka configuration, ``Settings.kafka_client``).
    ``notify`` only queues the record; ``flush`` waits for Kafka's ack.
    """

    def __init__(
        self,
        settings: Mapping[str, str],
        topic: str,
        *,
        schemas_enable: bool = False,
        sink: KafkaSink | None = None,
    ) -> None:
        if sink is None:
            from mongocdc.sinks.kafka.producer import KafkaSink

            sink = KafkaSink(settings)
        self._sink = sink
        self.topic = topic
        self.schemas_enable = schemas_enable

    def notify(self, notification: Notification) -> None:
        self._sink.produce(
            self.topic,
            encode_key(notification, schemas_enable=self.schemas_enable),
            encode_value(notification, schemas_enable=self.schemas_enable),
        )

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued notification is acknowledged (``UnreachableError`` on timeout)."""
        self._sink.flush(timeout)
