"""Exactly-once delivery: a task's offsets written in the same Kafka transaction as its change events.

``TransactionalOffsets`` is the offset store a task uses with ``exactly.once.support`` (Kafka Connect's
KIP-618 for source connectors, without Kafka Connect): reading goes to the ``KafkaOffsetStore`` (which reads
committed records only), and a commit produces the offset record through the task's transactional
``KafkaSink``, into the transaction that holds every record produced since the last commit, and commits that
transaction. The records and the offset after them become visible together, or not at all: after a crash a
``read_committed`` consumer has seen exactly the changes up to the stored offset, and the task resumes after
it. A task's ``transactional.id`` is ``mongocdc-<connector>-<partition>``: the next owner of the task fences the
producer of the last one (its commit fails with ``FencedError``, exit 7).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from mongocdc.offsets.base import OffsetRecord
from mongocdc.offsets.kafka import KafkaOffsetStore, record_key, record_value
from mongocdc.sinks.kafka.producer import KafkaSink

log = logging.getLogger("mongocdc.sink")


def task_transactional_id(connector: str, partition: str) -> str:
    """The ``transactional.id`` of one task's producer: one live producer per connector and source partition."""
    return f"mongocdc-{connector}-{partition}"


TransactionObserver = Callable[[int, float], None]
"""Called after each committed transaction with its records and the seconds its commit took."""


class TransactionalOffsets:
    """The ``OffsetStore`` of one exactly-once task: see the module docstring.

    ``on_commit`` hears of each committed transaction (records, seconds), ``on_abort`` of each aborted one
    (the metrics).
    """

    def __init__(
        self,
        store: KafkaOffsetStore,
        sink: KafkaSink,
        *,
        on_commit: TransactionObserver | None = None,
        on_abort: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.sink = sink
        self._on_commit = on_commit
        self._on_abort = on_abort
        self._clock = clock

    @property
    def transactional(self) -> bool:
        """What the engine asks of a store: commits are transactions of the sink (the module docstring)."""
        return True

    @property
    def exists(self) -> bool:
        return self.store.exists

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        return self.store.load(connector, partition)

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        return self.store.records(connector)

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        """Commit the open transaction with the offset record after its records (a transaction of the offset
        alone when nothing was produced since the last commit)."""
        value = record_value(offset, datetime.now(UTC))
        self._commit([(self.store.topic, record_key(connector, partition), value)])

    def delete(self, connector: str, partition: str | None = None) -> int:
        """Tombstones for the stored partitions, committed with whatever the open transaction holds."""
        keys = [(r.connector, r.partition) for r in self.store.records(connector)]
        keys = [key for key in keys if partition is None or key[1] == partition]
        self._commit([(self.store.topic, record_key(*key), None) for key in keys])
        return len(keys)

    def _commit(self, records: list[tuple[str, bytes, bytes | None]]) -> None:
        started = self._clock()
        try:
            held = self.sink.commit_transaction(records)
        except BaseException:
            if self._on_abort is not None:
                self._on_abort()
            raise
        if self._on_commit is not None and held:
            self._on_commit(held, self._clock() - started)

    def abort(self) -> None:
        """Abort the open transaction (a task that fails): its records and no offset after them are lost to
        ``read_committed`` consumers, and the task resumes from the last committed offset."""
        had = self.sink.transaction_records
        try:
            self.sink.abort_transaction()
        except Exception as exc:  # the producer may be what failed: the broker aborts it after its timeout
            log.warning("could not abort the open transaction (the broker aborts it after its timeout): %s", exc)
            return
        if had and self._on_abort is not None:
            self._on_abort()

    def close(self) -> None:
        """The ``KafkaOffsetStore`` is the connector's and closed by it; the sink is the task's."""
