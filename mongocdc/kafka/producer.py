"""``KafkaProducer``: produce with a bounded wait for room in a full queue, and flush with a deadline.

librdkafka queues records locally and raises ``BufferError`` when the queue is full
(``queue.buffering.max.messages``/``kbytes``). ``produce`` then serves delivery reports (which make room)
until the record fits: the owner's failures (``fail``) end the wait, so does ``on_full`` (called with when
the wait began, it may raise: a stop was asked for), and so does ``room_timeout_s`` when set. Delivery
reports go to each record's ``on_delivery`` callback, served by ``poll`` and ``flush`` on the caller's
thread; ``delivery_failed`` turns a failed report into the kept failure, which is all that happens to the
report of a record produced without a callback of its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException, Producer

from mongocdc.errors import MongocdcError, UnreachableError
from mongocdc.kafka.client import KafkaClient
from mongocdc.kafka.errors import Endpoint, code_of, kafka_error, show_key

DeliveryCallback = Callable[[Any, Any], None]
"""``(error or None, message)``, as confluent-kafka calls a delivery report."""

ROOM_POLL_S = 0.05
"""How long each wait for room in a full queue serves delivery reports before trying again."""


class KafkaProducer(KafkaClient):
    """A producer of ``endpoint``.

    ``note`` (``"; nothing after it was committed"``) is added to the message of a record's failure, ``redo``
    (``": the event is read again from the stored offset"``) to the hint that says to start again.
    """

    kind: ClassVar[str] = "producer"

    def __init__(
        self,
        settings: Mapping[str, Any],
        endpoint: Endpoint,
        *,
        defaults: Mapping[str, Any] | None = None,
        forced: Mapping[str, Any] | None = None,
        purpose: str = "",
        timeout_s: float = 10.0,
        on_full: Callable[[float], None] | None = None,
        room_timeout_s: float | None = None,
        note: str = "",
        redo: str = "",
    ) -> None:
        forced = {"on_delivery": self._keep_failure, **(forced or {})}
        self._transactional = "transactional.id" in forced
        super().__init__(
            Producer, settings, endpoint, defaults=defaults, forced=forced, purpose=purpose, timeout_s=timeout_s
        )
        self._on_full = on_full
        self.room_timeout_s = room_timeout_s
        self.note = note
        self.redo = redo

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        *,
        timestamp: int = 0,
        headers: Any = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        """Queue one record (``partition`` -1: the partitioner's choice; ``timestamp`` 0: now), waiting for room."""
        try:
            self._client.produce(
                topic, value, key, partition, timestamp=timestamp, headers=headers, on_delivery=on_delivery
            )
        except BufferError:
            self._when_room(topic, value, key, partition, timestamp, headers, on_delivery)
        except KafkaException as exc:
            raise self._produce_failed(exc, topic, value, key, partition) from exc

    def _when_room(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int,
        timestamp: int,
        headers: Any,
        on_delivery: DeliveryCallback | None,
    ) -> None:
        """The one wait for room in a full queue (the module docstring says what ends it)."""
        since = time.monotonic()
        while True:
            self._client.poll(ROOM_POLL_S)
            self.check()
            if self._on_full is not None:
                self._on_full(since)
            if self.room_timeout_s is not None and time.monotonic() - since > self.room_timeout_s:
                raise UnreachableError(
                    f"{self.endpoint.where} did not make room in the producer's queue within "
                    f"{self.room_timeout_s:.0f} s (no acknowledgements){self.note}",
                    hint=self.endpoint.reach_hint(),
                )
            try:
                self._client.produce(
                    topic, value, key, partition, timestamp=timestamp, headers=headers, on_delivery=on_delivery
                )
                return
            except BufferError:
                continue
            except KafkaException as exc:
                raise self._produce_failed(exc, topic, value, key, partition) from exc

    def _produce_failed(
        self, exc: KafkaException, topic: str, value: bytes | None, key: bytes | None, partition: int
    ) -> Exception:
        if code_of(exc) == KafkaError._FATAL:
            # The producer failed fatally and says only that; a delivery report served now, or (transactional) the
            # transaction API, which answers with the fatal error itself, says why: a newer producer fenced it.
            with contextlib.suppress(KafkaException):
                self._client.poll(0)
            try:
                self.check()
            except MongocdcError as kept:
                return kept
            if self._transactional:
                try:
                    self._client.abort_transaction(1.0)
                except KafkaException as cause:
                    return self.endpoint.failed(cause, f"producing to {topic}")
        record = f"the record for key {show_key(key)} in {topic}" + (f"[{partition}]" if partition >= 0 else "")
        return self.endpoint.produce_failed(exc, record, len(value or b""), note=self.note, redo=self.redo)

    def _keep_failure(self, err: KafkaError | None, msg: Any) -> None:
        """The delivery report of a record produced without an ``on_delivery`` of its own: a failure is kept."""
        if err is not None:
            self.delivery_failed(err, msg)

    def delivery_failed(self, err: KafkaError, msg: Any) -> None:
        """Keep the failure of a delivery report (for ``check``): a callback's answer to an error."""
        record = f"the record for key {show_key(msg.key())} in {msg.topic()}[{msg.partition()}]"
        self.fail(self.endpoint.delivery_failed(err, record, note=self.note, redo=self.redo))

    def poll(self, timeout_s: float = 0.0) -> int:
        """Serve the delivery reports that arrived (waiting up to ``timeout_s`` for one); how many were served.

        Failures they reported are kept, not raised: ``check`` raises them.
        """
        return int(self._client.poll(timeout_s))

    def flush(
        self, timeout_s: float | None = None, *, what: str = "records", hint: str = "check the brokers are up"
    ) -> None:
        """Wait until every queued record is acknowledged or failed; raise a kept failure, or ``UnreachableError``
        (with ``hint``) when some of ``what`` still wait after ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            slice_s = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            left = self._client.flush(slice_s)
            self.check()
            if left == 0:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise UnreachableError(
                    f"{self.endpoint.where} did not acknowledge {left} {what} within {timeout_s:.0f} s", hint=hint
                )

    # --- transactions (a producer with a ``transactional.id``) -------------------------------------

    def init_transactions(self, timeout_s: float) -> None:
        """Register the ``transactional.id``: fences every older producer of the same id (their next transactional
        request fails with ``FencedError``) and aborts a transaction one of them left open."""
        try:
            self._client.init_transactions(timeout_s)
        except KafkaException as exc:
            raise self.endpoint.failed(exc, "initializing transactions") from exc

    def transaction(self, send: Callable[[], None], timeout_s: float, *, what: str) -> None:
        """Begin a transaction, ``send`` its records (``produce``), and commit it: every record of it is written,
        or none (a failed commit is aborted when it can be). A fenced producer raises ``FencedError``."""
        self.begin_transaction()
        try:
            send()
        except BaseException:
            with contextlib.suppress(Exception):
                self.abort_transaction(timeout_s)
            raise
        self.commit_transaction(timeout_s, what=what)

    def begin_transaction(self) -> None:
        """Open a transaction: the records produced from now on are committed or aborted together."""
        self.check()
        try:
            self._client.begin_transaction()
        except KafkaException as exc:
            self.check()
            raise self.endpoint.failed(exc, "beginning a transaction") from exc

    def commit_transaction(self, timeout_s: float, *, what: str) -> None:
        """Commit the open transaction (its records are flushed first): all of ``what`` becomes visible to
        ``read_committed`` consumers, or none (a commit that fails is aborted when it can be, then raised)."""
        try:
            self._client.commit_transaction(timeout_s)
        except KafkaException as exc:
            err = kafka_error(exc)
            if err is not None and err.txn_requires_abort():
                with contextlib.suppress(KafkaException):  # the error that made it abort is the one to report
                    self._client.abort_transaction(timeout_s)
            self.check()  # a fatal error kept by the error callback (a fence) says more than the request's
            raise self.endpoint.failed(exc, f"committing the transaction of {what}") from exc
        self.check()

    def abort_transaction(self, timeout_s: float) -> None:
        """Abort the open transaction: none of its records will be read by a ``read_committed`` consumer."""
        try:
            self._client.abort_transaction(timeout_s)
        except KafkaException as exc:
            raise self.endpoint.failed(exc, "aborting a transaction") from exc

    def wait(self, timeout_s: float) -> int:
        """Serve delivery reports for up to ``timeout_s``, until none is waiting; how many still wait."""
        return int(self._client.flush(timeout_s))

    def purge(self) -> None:
        """Drop every record not yet acknowledged (their reports say so at the next ``wait``)."""
        self._client.purge()

    def __len__(self) -> int:
        """Records queued or in flight, not yet reported."""
        return len(self._client)
