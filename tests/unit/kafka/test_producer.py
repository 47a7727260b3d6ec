"""The one wait for room in a full producer queue: it serves delivery reports and ends on success, on a
failure, when the owner says stop, or after its timeout (a stand-in for the confluent-kafka producer)."""

from __future__ import annotations

from typing import Any

import pytest

from mongocdc.errors import DeliveryError, UnreachableError
from mongocdc.kafka.errors import Endpoint
from mongocdc.kafka.producer import KafkaProducer


class FullQueue:
    """Raises ``BufferError`` for the first ``full`` produce calls (``None``: always); counts polls."""

    def __init__(self, full: int | None) -> None:
        self.full = full
        self.polls = 0
        self.produced: list[tuple[Any, ...]] = []
        self.on_poll: Any = None

    def produce(self, *args: Any, **kwargs: Any) -> None:
        if self.full is None or self.full > 0:
            if self.full is not None:
                self.full -= 1
            raise BufferError("Local: Queue full")
        self.produced.append(args)

    def poll(self, timeout: float) -> int:
        self.polls += 1
        if self.on_poll is not None:
            self.on_poll()
        return 0


def producer(queue: FullQueue, **options: Any) -> KafkaProducer:
    made = KafkaProducer({"bootstrap.servers": "127.0.0.1:9"}, Endpoint("127.0.0.1:9"), **options)
    made._client = queue
    return made


def test_a_full_queue_is_waited_out_serving_delivery_reports() -> None:
    queue = FullQueue(full=3)
    waits: list[float] = []
    producer(queue, on_full=waits.append).produce("t", b"v", b"k")
    assert queue.produced == [("t", b"v", b"k", -1)] and queue.polls == 3 and len(waits) == 3
    assert len(set(waits)) == 1  # each call says when the wait began


def test_a_failure_a_report_brings_ends_the_wait() -> None:
    queue = FullQueue(full=None)
    made = producer(queue)
    queue.on_poll = lambda: made.fail(DeliveryError("the target refused a copy"))
    with pytest.raises(DeliveryError, match="refused a copy"):
        made.produce("t", b"v", b"k")
    assert queue.produced == []


def test_the_owner_ends_the_wait_when_a_stop_was_asked_for() -> None:
    class Stopped(Exception):
        pass

    def stop(since: float) -> None:
        raise Stopped

    with pytest.raises(Stopped):
        producer(FullQueue(full=None), on_full=stop).produce("t", b"v", b"k")


def test_the_wait_is_bounded_by_its_timeout() -> None:
    with pytest.raises(UnreachableError, match="did not make room in the producer's queue within 0 s"):
        producer(FullQueue(full=None), room_timeout_s=0.1).produce("t", b"v", b"k")
