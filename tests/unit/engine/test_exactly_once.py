"""Exactly-once commits of the engine: crash anywhere, and the committed records hold every change once.

``TransactionLog`` stands in for a transactional Kafka producer and the offset topic together (what
``sinks/kafka/exactly_once.TransactionalOffsets`` does with the real ones, tested against a real broker in
``tests/integration/test_exactly_once.py``): records produced go into the open transaction; a commit makes them
and the offset after them visible together; an abort (or a crash, which never commits) drops them.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from bson import json_util
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocdc.engine.exactly_once import TransactionBoundary, is_transactional
from mongocdc.engine.snapshot import SnapshotOptions, SnapshotRunner
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import StreamingTask, StreamOptions
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.offsets.base import OffsetRecord
from mongocdc.offsets.memory import MemoryOffsetStore
from tests.unit.engine.fakes import START, ScriptedScanner, ScriptedSource, change
from tests.unit.engine.helpers import collections, expected_ids

Record = tuple[str, bytes | None, bytes | None]


class TransactionLog:
    """A transactional sink and its offset store: what a ``read_committed`` consumer and a restart see."""

    def __init__(self) -> None:
        self.committed: list[Record] = []
        self.open: list[Record] = []
        self.offsets = MemoryOffsetStore()
        self.transactions: list[int] = []
        """Records (offset record included) of each committed transaction."""
        self.aborted = 0
        self._lock = threading.Lock()
        self._acks: list[Callable[[], None]] = []

    # the sink
    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        headers: Any = None,
        partition: int | None = None,
        on_ack: Callable[[], None] | None = None,
        converted: bool = False,
    ) -> None:
        with self._lock:
            self.open.append((topic, key, value))
            if on_ack is not None:
                self._acks.append(on_ack)

    def fused_record(self, topic: str, event: Any) -> tuple[bytes, bytes] | None:
        return None  # no transform chain: the codec writes every record

    def poll(self, timeout: float = 0.0) -> None:
        with self._lock:
            acks, self._acks = self._acks, []
        for ack in acks:
            ack()

    def flush(self, timeout: float | None = None) -> None:
        self.poll()

    # the store
    transactional = True

    @property
    def exists(self) -> bool:
        return True

    def load(self, connector: str, partition: str) -> dict[str, Any] | None:
        return self.offsets.load(connector, partition)

    def records(self, connector: str | None = None) -> list[OffsetRecord]:
        return self.offsets.records(connector)

    def commit(self, connector: str, partition: str, offset: Mapping[str, Any]) -> None:
        with self._lock:
            self.committed.extend(self.open)
            self.transactions.append(len(self.open) + 1)
            self.open = []
        self.offsets.commit(connector, partition, offset)

    def delete(self, connector: str, partition: str | None = None) -> int:
        return self.offsets.delete(connector, partition)

    def abort(self) -> None:
        with self._lock:
            self.open = []
            self.aborted += 1

    def crash(self) -> None:
        """kill -9: the open transaction is never committed (the broker aborts it)."""
        with self._lock:
            self.open = []

    def close(self) -> None:
        pass


def streamed_keys(records: list[Record]) -> list[int]:
    return [int(json.loads(json.loads(k or b"")["id"])) for _, k, v in records if v is not None]


def stream(
    log: TransactionLog, source: ScriptedSource, stop: threading.Event, boundary: TransactionBoundary
) -> StreamingTask:
    task = StreamingTask(
        source,
        log,
        log,
        EnvelopeCodec("app"),
        StreamOptions(connector="c1", partition="rs0", flush_interval_s=3600, transaction_boundary=boundary),
        stop=stop,
        wall_clock_ms=lambda: 42,
    )
    task.run()
    return task


def test_the_fake_is_what_the_engine_takes_for_a_transactional_store() -> None:
    assert is_transactional(TransactionLog()) and not is_transactional(MemoryOffsetStore())


@settings(max_examples=60)
@given(
    crashes=st.lists(st.integers(min_value=0, max_value=29), min_size=1, max_size=4),
    max_records=st.integers(min_value=1, max_value=7),
)
def test_streaming_crashes_anywhere_leave_every_change_committed_exactly_once(
    crashes: list[int], max_records: int
) -> None:
    history = [change(i, "delete" if i % 5 == 4 else "insert") for i in range(30)]
    log = TransactionLog()
    boundary = TransactionBoundary("poll", max_records=max_records)
    for crash_at in sorted(crashes):
        stop = threading.Event()
        with pytest.raises(RuntimeError, match="scripted crash"):
            stream(log, ScriptedSource(history, stop, fail_at=crash_at), stop, boundary)
        log.crash()
    stop = threading.Event()
    stream(log, ScriptedSource(history, stop), stop, boundary)
    # a delete is its event and its tombstone, both once
    assert streamed_keys(log.committed) == list(range(30))
    assert [json.loads(json.loads(k or b"")["id"]) for _, k, v in log.committed if v is None] == list(range(4, 30, 5))
    assert log.aborted == len(crashes)  # each failure aborted its transaction instead of committing it
    assert max(log.transactions) <= max_records + 2  # a change's records, its tombstone, the offset


def test_poll_boundary_commits_when_the_reader_has_nothing_more_in_hand() -> None:
    history = [change(i) for i in range(6)]
    log = TransactionLog()
    stop = threading.Event()
    source = ScriptedSource(history, stop)
    in_hand = iter([False, False, True, False, True, True])
    source.caught_up = lambda linger_s=0.0: next(in_hand, True)  # type: ignore[attr-defined]
    stream(log, source, stop, TransactionBoundary("poll", max_records=100))
    # transactions end after changes 3 and 5 (caught up), then after 6; the last is the stop's offset-only commit
    assert log.transactions[:3] == [4, 3, 2]
    assert streamed_keys(log.committed) == list(range(6))


def test_interval_boundary_commits_on_the_clock_not_per_change() -> None:
    history = [change(i) for i in range(10)]
    log = TransactionLog()
    stop = threading.Event()
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # each call is one second later
        return now[0]

    task = StreamingTask(
        ScriptedSource(history, stop),
        log,
        log,
        EnvelopeCodec("app"),
        StreamOptions(
            connector="c1",
            partition="rs0",
            flush_interval_s=3600,
            transaction_boundary=TransactionBoundary("interval", interval_s=8.0),
        ),
        stop=stop,
        clock=clock,
        wall_clock_ms=lambda: 42,
    )
    task.run()
    assert streamed_keys(log.committed) == list(range(10))
    assert len(log.transactions) < 10 and max(log.transactions) > 2


def test_a_stored_offset_is_the_position_after_the_last_committed_record() -> None:
    history = [change(i) for i in range(8)]
    log = TransactionLog()
    stop = threading.Event()
    with pytest.raises(RuntimeError):
        stream(log, ScriptedSource(history, stop, fail_at=5), stop, TransactionBoundary("poll", max_records=2))
    stored = SourceOffset.from_record(log.load("c1", "rs0") or {})
    keys = streamed_keys(log.committed)
    assert keys == list(range(len(keys))) and stored.position.sec == 1000 + keys[-1]


def snapshot(log: TransactionLog, max_records: int, threads: int, **scanner_options: Any) -> SnapshotRunner:
    return SnapshotRunner(
        log,
        log,
        EnvelopeCodec("app"),
        SnapshotOptions(
            "c1",
            "rs0",
            rs="rs0",
            max_threads=threads,
            flush_interval_s=3600,
            progress_interval_s=0.01,
            transaction_boundary=TransactionBoundary("poll", max_records=max_records),
        ),
    )


def snapshot_reads(records: list[Record]) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for _topic, _key, value in records:
        assert value is not None
        payload = json.loads(value)
        source = payload["source"]
        out[(f"{source['db']}.{source['collection']}", repr(json_util.loads(payload["after"])["_id"]))] += 1
    return out


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("max_records", [1, 3, 50])
@pytest.mark.parametrize("crash_after_chunks", [0, 1, 2, 4])
def test_snapshot_crashes_mid_chunk_leave_every_document_committed_exactly_once(
    threads: int, max_records: int, crash_after_chunks: int
) -> None:
    log = TransactionLog()
    failing = [
        ScriptedScanner(ns, docs, 2, fail_after_chunks=crash_after_chunks if ns == "shop.orders" else None)
        for ns, docs in collections().items()
    ]
    with pytest.raises(RuntimeError, match="scripted crash"):
        snapshot(log, max_records, threads).run(failing, START)
    log.crash()
    stored = SourceOffset.from_record(log.load("c1", "rs0") or {})
    assert stored.snapshot is not None
    scanners = [ScriptedScanner(ns, docs, 2) for ns, docs in collections().items()]
    assert snapshot(log, max_records, threads).run(scanners, START, stored.snapshot).completed
    assert snapshot_reads(log.committed) == expected_ids()  # each document once: none lost, none twice
    markers = [json.loads(v or b"")["source"]["snapshot"] for _, _, v in log.committed]
    assert markers.count("last") == 1


def test_a_snapshot_commits_a_transaction_every_max_records_documents() -> None:
    log = TransactionLog()
    scanners = [ScriptedScanner(ns, docs, 2) for ns, docs in collections().items()]
    assert snapshot(log, 4, 1).run(scanners, START).completed
    assert snapshot_reads(log.committed) == expected_ids()
    assert max(log.transactions) <= 4 + 1 and len(log.transactions) >= 17 // 4
