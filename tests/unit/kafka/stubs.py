"""Stand-ins for confluent-kafka clients, for the unit tests of what is built on ``mongocdc.kafka``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from mongocdc.kafka.consumer import KafkaConsumer
from mongocdc.kafka.errors import Endpoint

CLOSED = {"bootstrap.servers": "127.0.0.1:9"}
"""Settings of a cluster nobody listens at (the clients are built, never used)."""


@dataclass
class Committed:
    topic: str
    partition: int
    offset: int
    error: KafkaError | None = None


class Coordinator:
    """Answers ``commit`` with ``refused`` partitions in error (or raises ``raises``); remembers the requests."""

    def __init__(self, refused: dict[int, int] | None = None, raises: int | None = None) -> None:
        self.refused = refused or {}
        self.raises = raises
        self.requests: list[list[tuple[str, int, int]]] = []

    def commit(self, *, offsets: list[Any], asynchronous: bool) -> list[Committed]:
        assert asynchronous is False
        self.requests.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])
        if self.raises is not None:
            raise KafkaException(KafkaError(self.raises, "the coordinator says no"))
        return [
            Committed(
                tp.topic,
                tp.partition,
                tp.offset,
                None if tp.partition not in self.refused else KafkaError(self.refused[tp.partition], "refused"),
            )
            for tp in offsets
        ]

    def close(self) -> None:
        pass


def consumer_answered_by(coordinator: Coordinator) -> KafkaConsumer:
    consumer = KafkaConsumer(CLOSED, Endpoint("127.0.0.1:9"), group_id="g")
    consumer._client.close()
    consumer._client = coordinator
    return consumer
