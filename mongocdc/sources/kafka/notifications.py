"""``NotificationReader``: the notifications a connector writes to ``notification.sink.topic.name`` from now on.

``snapshot --incremental --wait`` follows an incremental snapshot through them (Debezium's ``STARTED``,
``IN_PROGRESS`` after every chunk, ``TABLE_SCAN_COMPLETED`` with the rows scanned, ``COMPLETED``,
``ABORTED``) rather than through the stored offsets, which the connector writes only every
``offset.flush.interval.ms``. The reader is made before the signal is sent and starts at each partition's
end, so it sees exactly the notifications written after it; a topic that does not exist yet is read from
its beginning once the connector's first notification creates it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from mongocdc.events.notifications import Notification, decode_value
from mongocdc.kafka.consumer import BEGINNING, KafkaConsumer
from mongocdc.kafka.errors import Endpoint

_LOOK_AGAIN_S = 1.0
"""How often a topic that does not exist yet is looked for."""


class NotificationReader:
    """A group-less reader of one notification topic, from its end at construction."""

    def __init__(self, settings: Mapping[str, str], topic: str, *, timeout_s: float = 10.0) -> None:
        self.topic = topic
        self._consumer = KafkaConsumer(
            settings,
            Endpoint.of(settings, servers="kafka.bootstrap.servers (or --bootstrap-servers)"),
            purpose=f"notification topic {topic}",
            timeout_s=timeout_s,
        )
        self._assigned = False
        self._next_look = 0.0
        partitions = self._partitions()
        if partitions:
            ends = {(topic, p): self._consumer.watermarks(topic, p)[1] for p in partitions}
            self._consumer.assign(ends)
            self._assigned = True

    def _partitions(self) -> list[int]:
        info = self._consumer.metadata(self.topic).topics.get(self.topic)
        if info is None or info.error is not None:
            return []
        return sorted(info.partitions)

    def poll(self, timeout_s: float) -> list[Notification]:
        """The notifications that arrived, waiting up to ``timeout_s`` for the first one."""
        if not self._assigned:
            now = time.monotonic()
            if now >= self._next_look:
                self._next_look = now + _LOOK_AGAIN_S
                partitions = self._partitions()
                if partitions:  # created after this reader started: everything in it is new
                    self._consumer.assign({(self.topic, p): BEGINNING for p in partitions})
                    self._assigned = True
            if not self._assigned:
                time.sleep(min(timeout_s, _LOOK_AGAIN_S))
                return []
        notes: list[Notification] = []
        for msg in self._consumer.consume(100, timeout_s):
            err = msg.error()
            if err is not None:
                self._consumer.consume_error(err, f"reading notifications from {self.topic}")
                continue
            note = decode_value(msg.value())
            if note is not None:
                notes.append(note)
        return notes

    def close(self) -> None:
        self._consumer.close()
