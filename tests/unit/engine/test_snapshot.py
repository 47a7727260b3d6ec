"""The snapshot runner and the connector's plan: deterministic tests with scripted scanners and a real SQLite store."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bson import json_util

from mongocdc.engine.connector import ConnectorTask, Plan, SnapshotKind, TaskOptions, plan
from mongocdc.engine.snapshot import SnapshotOptions, SnapshotRunner
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import StreamOptions
from mongocdc.errors import ResumePositionLostError
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.position import Position
from mongocdc.events.snapshot import SnapshotState
from mongocdc.offsets.sqlite import SqliteOffsetStore
from tests.unit.engine.fakes import START, RecordingSink, ScriptedScanner, ScriptedSource, change
from tests.unit.engine.helpers import MIXED_IDS, collections, expected_ids


def scanners(fetch_size: int = 2, **kwargs: Any) -> list[ScriptedScanner]:
    return [ScriptedScanner(ns, docs, fetch_size, **kwargs.get(ns, {})) for ns, docs in collections().items()]


def reads(sink: RecordingSink) -> list[tuple[str, Any, str]]:
    """(namespace, _id, source.snapshot) of every read event, in produce order."""
    out = []
    for topic, _key, value in sink.records:
        assert value is not None
        payload = json.loads(value)
        assert payload["op"] == "r"
        source = payload["source"]
        doc = json_util.loads(payload["after"])
        out.append((f"{source['db']}.{source['collection']}", doc["_id"], source["snapshot"]))
        assert topic == f"app.{source['db']}.{source['collection']}"
        # As Debezium: the time of the read, no position (ord -1), no wall time.
        assert source["ord"] == -1 and source["wallTime"] is None
        assert source["ts_ns"] // 1_000_000 == source["ts_ms"] and source["ts_ns"] // 1000 == source["ts_us"]
        assert abs(source["ts_ms"] - time.time() * 1000) < 600_000
    return out


def runner(
    store: SqliteOffsetStore,
    sink: RecordingSink,
    threads: int = 2,
    stop: threading.Event | None = None,
    flush_interval_s: float = 0.0,
) -> SnapshotRunner:
    return SnapshotRunner(
        sink,
        store,
        EnvelopeCodec("app"),
        SnapshotOptions(
            "c1", "rs0", rs="rs0", max_threads=threads, flush_interval_s=flush_interval_s, progress_interval_s=0.01
        ),
        stop=stop,
    )


@pytest.mark.parametrize("threads", [1, 3])
def test_snapshot_reads_every_document_once_with_markers(tmp_path: Path, threads: int) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    sink = RecordingSink()
    report = runner(store, sink, threads).run(scanners(), START)
    assert report.completed and report.documents == 17
    got = reads(sink)
    assert Counter((ns, repr(i)) for ns, i, _ in got) == expected_ids()
    markers = Counter(m for _, _, m in got)
    assert markers == {"true": 16, "last": 1}  # Debezium's MongoDB connector marks only the very last read
    assert got[-1][2] == "last"
    # within a collection, documents come in BSON _id order across type brackets
    orders = [i for ns, i, _ in got if ns == "shop.orders"]
    assert orders == [None, 1, 2.5, 3, 7, 10, "a", "b", "c", {"k": 1}, True]
    state = SourceOffset.from_record(store.load("c1", "rs0") or {}).snapshot
    assert state is not None and all(p.done for p in state.collections.values())
    assert set(state.collections) == set(collections())


def test_a_read_carries_the_time_its_chunk_was_read_even_when_produced_later(tmp_path: Path) -> None:
    """The held-back last document is produced when every collection is done; its time is still its read's."""
    base = 1_700_000_000_000_000_000
    scanner = ScriptedScanner("shop.orders", [{"_id": i} for i in range(5)], fetch_size=2, read_ns_base=base)
    sink = RecordingSink()
    assert runner(SqliteOffsetStore(tmp_path / "o.db"), sink, threads=1).run([scanner], START).completed
    stamps = []
    for _topic, _key, value in sink.records:
        assert value is not None
        payload = json.loads(value)
        stamps.append(
            (json_util.loads(payload["after"])["_id"], payload["source"]["ts_ns"], payload["source"]["snapshot"])
        )
    # Chunks [0, 1], [2, 3], [4]: each read carries its chunk's time, the last one too.
    assert stamps == [
        (0, base + 1, "true"),
        (1, base + 1, "true"),
        (2, base + 2, "true"),
        (3, base + 2, "true"),
        (4, base + 3, "last"),
    ]


@pytest.mark.parametrize("crash_after_chunks", [0, 1, 3])
def test_crash_mid_snapshot_resumes_from_the_last_acknowledged_chunk(tmp_path: Path, crash_after_chunks: int) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    first = RecordingSink()
    with pytest.raises(RuntimeError, match="scripted crash"):
        runner(store, first, threads=1).run(
            scanners(**{"shop.orders": {"fail_after_chunks": crash_after_chunks}}), START
        )
    offset = store.load("c1", "rs0")
    assert offset is not None and offset["initsync"] is True
    stored = SourceOffset.from_record(offset)
    state = stored.snapshot
    assert state is not None and stored.position == START
    second = RecordingSink()
    assert runner(store, second).run(scanners(), START, state).completed
    delivered = Counter((ns, repr(i)) for ns, i, _ in reads(first) + reads(second))
    assert set(delivered) == set(expected_ids())  # nothing lost (duplicates allowed after a crash)
    assert all(delivered[k] <= 2 for k in delivered)
    # the second run reads exactly what the committed progress did not cover
    committed = sum(p.documents for p in state.collections.values())
    assert len(reads(second)) == 17 - committed
    # a chunk counts once every record of it was handed over: the one read before the crash does not
    assert (committed > 0) == (crash_after_chunks >= 2)


def test_graceful_stop_mid_snapshot_then_resume_has_no_duplicates(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    stop = threading.Event()
    first = RecordingSink()
    stopping = {"shop.orders": {"on_chunk": lambda n: stop.set() if n == 2 else None}}
    report = runner(store, first, threads=1, stop=stop).run(scanners(**stopping), START)
    assert not report.completed
    state = SourceOffset.from_record(store.load("c1", "rs0") or {}).snapshot
    assert state is not None
    second = RecordingSink()
    assert runner(store, second).run(scanners(), START, state).completed
    delivered = Counter((ns, repr(i)) for ns, i, _ in reads(first) + reads(second))
    assert delivered == expected_ids()


def test_plan_follows_snapshot_mode() -> None:
    offset = SourceOffset(Position(5, 1))
    interrupted = SourceOffset(Position(5, 1), snapshot=SnapshotState())
    assert plan("initial", None) == Plan(SnapshotKind.FRESH, True, "no stored offset: initial snapshot")
    assert plan("initial", offset).snapshot is SnapshotKind.NONE and plan("initial", offset).stream
    assert plan("initial", interrupted).snapshot is SnapshotKind.RESUME
    assert plan("initial_only", None).stream is False and plan("initial_only", None).snapshot is SnapshotKind.FRESH
    assert plan("initial_only", offset) == Plan(SnapshotKind.NONE, False, plan("initial_only", offset).reason)
    assert plan("no_data", None).snapshot is SnapshotKind.NONE and plan("no_data", None).stream
    assert plan("no_data", interrupted).snapshot is SnapshotKind.NONE
    assert plan("when_needed", None).snapshot is SnapshotKind.FRESH
    assert plan("when_needed", offset).snapshot is SnapshotKind.NONE
    assert plan("always", offset).snapshot is SnapshotKind.FRESH
    assert plan("always", interrupted).snapshot is SnapshotKind.RESUME
    assert plan("initial", offset, snapshot_only=True) == Plan(SnapshotKind.FRESH, False, "snapshot requested")


def connector_task(
    store: SqliteOffsetStore, sink: RecordingSink, source: Any, mode: str, stop: threading.Event
) -> ConnectorTask:
    return ConnectorTask(
        source=source,
        current_position=lambda: START,
        scanners=lambda: scanners(),
        sink=sink,
        store=store,
        codec=EnvelopeCodec("app"),
        options=TaskOptions(StreamOptions("c1", "rs0", flush_interval_s=0.0), rs="rs0", snapshot_mode=mode),
        stop=stop,
    )


def test_initial_snapshot_then_streaming_from_the_recorded_position(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    sink = RecordingSink()
    stop = threading.Event()
    source = ScriptedSource([change(1), change(2)], stop)
    result = connector_task(store, sink, source, "initial", stop).run()
    assert result.snapshot is not None and result.snapshot.completed
    assert source.opened_at == START  # streaming resumed where the snapshot began
    ops = [json.loads(v)["op"] for _, _, v in sink.records if v is not None]
    assert ops == ["r"] * 17 + ["c", "c"]
    final = store.load("c1", "rs0")
    assert final is not None and "initsync" not in final and final["sec"] == 1002


def test_when_needed_resnapshots_after_a_lost_resume_position(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    store.commit("c1", "rs0", SourceOffset(Position(5, 1, Position.token_bytes({"_data": "gone"}))).to_record())

    class LostSource(ScriptedSource):
        lost = True

        def open(self, start: Position | None) -> None:
            if self.lost and start is not None and start.sec == 5:
                self.lost = False
                raise ResumePositionLostError("the stored resume position is no longer in MongoDB's oplog")
            super().open(start)

    stop = threading.Event()
    sink = RecordingSink()
    result = connector_task(store, sink, LostSource([change(1)], stop), "when_needed", stop).run()
    assert result.resnapshots == 1
    assert [json.loads(v)["op"] for _, _, v in sink.records if v is not None] == ["r"] * 17 + ["c"]

    stop = threading.Event()
    store.commit("c1", "rs0", SourceOffset(Position(5, 1, Position.token_bytes({"_data": "gone"}))).to_record())
    with pytest.raises(ResumePositionLostError):
        connector_task(store, RecordingSink(), LostSource([change(1)], stop), "initial", stop).run()


@pytest.mark.parametrize(
    ("threads", "count", "says"),
    [
        (1, 1, "snapshot of 1 collection (1 to do) with 1 thread"),
        (3, 2, "snapshot of 2 collections (2 to do) with 3 threads"),
    ],
)
def test_the_start_line_counts_in_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, threads: int, count: int, says: str
) -> None:
    chosen = [ScriptedScanner(f"shop.c{i}", [{"_id": 1}], fetch_size=2) for i in range(count)]
    with caplog.at_level(logging.INFO, logger="mongocdc"):
        assert runner(SqliteOffsetStore(tmp_path / "o.db"), RecordingSink(), threads).run(chosen, START).completed
    assert says in caplog.messages


def test_progress_is_live_says_what_happens_past_the_last_document_and_times_an_interrupted_scan(
    tmp_path: Path,
) -> None:
    """The rate of a collection being read is known while it is read (not only once it is done); the
    phases past its last document are reported; a stopped scan still reports the seconds it ran."""
    from mongocdc.engine.snapshot import FINAL_FLUSH, SCANNING_OTHER_ID_TYPES, SnapshotReport

    seen: list[tuple[str, int, float, str, str]] = []
    observed = threading.Condition()

    def on_progress(report: SnapshotReport) -> None:
        orders = report.collections["shop.orders"]
        with observed:
            seen.append((orders.phase, orders.documents, orders.seconds, report.phase, str(orders.done)))
            observed.notify_all()

    def waits_for(condition: Any) -> None:
        with observed:
            assert observed.wait_for(lambda: any(condition(*s) for s in seen), timeout=10), seen

    def on_chunk(n: int) -> None:
        if n == 2:  # the first chunk ([None]) ended its type bracket: the next types are being queried
            waits_for(lambda phase, *_: phase == SCANNING_OTHER_ID_TYPES)
        if n == 4:  # mid-scan: documents read and the seconds so far, so a rate
            waits_for(lambda phase, docs, seconds, *_: docs > 0 and seconds > 0)

    options = SnapshotOptions("c1", "rs0", rs="rs0", max_threads=2, progress_interval_s=0.01)
    run = SnapshotRunner(RecordingSink(), SqliteOffsetStore(tmp_path / "o.db"), EnvelopeCodec("app"), options,
                         on_progress=on_progress)  # fmt: skip
    report = run.run(scanners(**{"shop.orders": {"on_chunk": on_chunk}}), START)
    assert report.completed and report.seconds > 0 and report.rate is not None
    assert any(phase == FINAL_FLUSH for *_, phase, _done in seen)  # said before the final flush begins
    assert report.phase == "" and all(c.phase == "" for c in report.collections.values())

    # a graceful stop in the middle of a collection: its seconds and rate are those it ran
    stop = threading.Event()
    stopping = {"shop.orders": {"on_chunk": lambda n: stop.set() if n == 3 else None}}
    ticks = iter(range(1000))
    stopped = SnapshotRunner(RecordingSink(), SqliteOffsetStore(tmp_path / "s.db"), EnvelopeCodec("app"),
                             SnapshotOptions("c1", "rs0", max_threads=1), stop=stop,
                             clock=lambda: float(next(ticks)))  # fmt: skip
    interrupted = stopped.run(scanners(**stopping), START)
    orders = interrupted.collections["shop.orders"]
    assert not interrupted.completed and not orders.done
    assert orders.seconds > 0 and orders.rate == orders.documents / orders.seconds
    assert interrupted.seconds >= orders.seconds and "documents in" in interrupted.summary()


class CountedScanner(ScriptedScanner):
    """A scanner that records each time MongoDB would be asked for the collection's estimated count."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counted = 0

    def estimated_count(self) -> int:
        self.counted += 1
        return super().estimated_count()


def test_a_snapshot_done_before_estimate_after_asks_mongodb_for_no_count(tmp_path: Path) -> None:
    """As Debezium's snapshot: nothing but the documents is asked of MongoDB when no display needs a total."""
    from mongocdc.engine.metrics import Metrics

    chosen = [CountedScanner(ns, docs, 2) for ns, docs in collections().items()]
    metrics = Metrics("c1")
    options = SnapshotOptions("c1", "rs0", max_threads=2, progress_interval_s=0.01, estimate_after_s=3600)
    run = SnapshotRunner(RecordingSink(), SqliteOffsetStore(tmp_path / "o.db"), EnvelopeCodec("app"), options,
                         metrics=metrics)  # fmt: skip
    report = run.run(chosen, START)
    assert report.completed
    assert [s.counted for s in chosen] == [0, 0, 0, 0]
    assert all(c.estimated == 0 for c in report.collections.values())
    snapshot = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert {c["rows_estimated"] for c in snapshot["collections"].values()} == {None}


def test_collections_still_read_after_estimate_after_are_counted_without_waiting(tmp_path: Path) -> None:
    """Past ``estimate_after_s`` the collections not done are counted on a thread of their own; the report and
    the rows-estimated metric get the counts while the scan goes on (it never waits for them)."""
    from mongocdc.engine.metrics import Metrics
    from mongocdc.engine.snapshot import SnapshotReport

    counted = threading.Event()
    metrics = Metrics("c1")

    def on_progress(report: SnapshotReport) -> None:
        if report.collections["shop.orders"].estimated:
            counted.set()

    def on_chunk(n: int) -> None:
        if n == 2:  # mid-scan of shop.orders: its count arrives while it is read
            assert counted.wait(10)

    chosen = [
        CountedScanner(ns, docs, 2, **({"on_chunk": on_chunk} if ns == "shop.orders" else {}))
        for ns, docs in collections().items()
    ]
    options = SnapshotOptions("c1", "rs0", max_threads=4, progress_interval_s=0.01, estimate_after_s=0)
    run = SnapshotRunner(RecordingSink(), SqliteOffsetStore(tmp_path / "o.db"), EnvelopeCodec("app"), options,
                         on_progress=on_progress, metrics=metrics)  # fmt: skip
    report = run.run(chosen, START)
    assert report.completed
    orders = next(s for s in chosen if s.namespace == "shop.orders")
    assert orders.counted == 1  # asked once, not per progress update
    assert report.collections["shop.orders"].estimated == len(MIXED_IDS)
    snapshot = metrics.to_dict()["partitions"]["rs0"]["snapshot"]
    assert snapshot["collections"]["shop.orders"]["rows_estimated"] == len(MIXED_IDS)
