"""Deterministic crash-and-resume tests of the streaming loop (scripted source, real SQLite store)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import StreamingTask, StreamOptions
from mongocdc.errors import DeliveryError
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.offsets.sqlite import SqliteOffsetStore
from mongocdc.sources.base import Idle
from tests.unit.engine.fakes import RecordingSink, ScriptedSource, change


def keys_of(sink: RecordingSink) -> list[int]:
    return [int(json.loads(json.loads(k or b"")["id"])) for _, k, v in sink.records if v is not None]


def run_task(
    source: ScriptedSource,
    sink: RecordingSink,
    store: SqliteOffsetStore,
    stop: threading.Event,
    flush_interval_s: float = 0.0,
) -> StreamingTask:
    task = StreamingTask(
        source,
        sink,
        store,
        EnvelopeCodec("app"),
        StreamOptions(connector="c1", partition="rs0", flush_interval_s=flush_interval_s),
        stop=stop,
        wall_clock_ms=lambda: 42,
    )
    task.run()
    return task


def test_graceful_stop_then_resume_delivers_each_change_once(tmp_path: Path) -> None:
    history = [change(i) for i in range(10)]
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    stop = threading.Event()
    first = RecordingSink()
    run_task(ScriptedSource(history[:6], stop), first, store, stop, flush_interval_s=3600)
    assert keys_of(first) == list(range(6))
    # graceful stop committed the last change even though the flush interval never elapsed
    assert SourceOffset.from_record(store.load("c1", "rs0") or {}).position.sec == 1005

    stop = threading.Event()
    second = RecordingSink()
    source = ScriptedSource(history, stop)
    run_task(source, second, store, stop)
    assert source.opened_at is not None and source.opened_at.sec == 1005
    assert keys_of(second) == list(range(6, 10))


@pytest.mark.parametrize("crash_at", [0, 1, 4, 9])
def test_crash_then_restart_loses_nothing(tmp_path: Path, crash_at: int) -> None:
    history = [change(i, "delete" if i % 4 == 3 else "insert") for i in range(10)]
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    stop = threading.Event()
    first = RecordingSink()
    with pytest.raises(RuntimeError, match="scripted crash"):
        run_task(ScriptedSource(history, stop, fail_at=crash_at), first, store, stop)
    committed = store.load("c1", "rs0")
    stop = threading.Event()
    second = RecordingSink()
    run_task(ScriptedSource(history, stop), second, store, stop)
    delivered = keys_of(first) + keys_of(second)
    assert set(delivered) == set(range(10))
    if committed is not None:
        # everything after the committed offset comes again, nothing before it
        assert keys_of(second) == [i for i in range(10) if 1000 + i > SourceOffset.from_record(committed).position.sec]


def test_tombstone_follows_delete_unless_disabled(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "o.db")
    stop = threading.Event()
    sink = RecordingSink()
    task = run_task(ScriptedSource([change(1), change(1, "delete")], stop), sink, store, stop)
    assert [v is None for _, _, v in sink.records] == [False, False, True]
    assert sink.records[1][1] == sink.records[2][1]
    assert task.stats.tombstones == 1 and task.stats.events["d"] == 1

    stop = threading.Event()
    sink = RecordingSink()
    StreamingTask(
        ScriptedSource([change(1), change(1, "delete")], stop),
        sink,
        SqliteOffsetStore(tmp_path / "p.db"),
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0", tombstones_on_delete=False),
        stop=stop,
    ).run()
    assert all(v is not None for _, _, v in sink.records)


def test_offset_never_passes_a_refused_record(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    stop = threading.Event()
    sink = RecordingSink(refuse_after=3)
    with pytest.raises(DeliveryError):
        run_task(ScriptedSource([change(i) for i in range(6)], stop), sink, store, stop)
    committed = store.load("c1", "rs0")
    assert committed is not None
    assert SourceOffset.from_record(committed).position.sec <= 1002  # the 4th record (sec 1003) was never acknowledged


def test_first_start_commits_where_streaming_began(tmp_path: Path) -> None:
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    stop = threading.Event()
    stop.set()  # stop immediately: no change seen
    run_task(ScriptedSource([], stop), RecordingSink(), store, stop)
    committed = store.load("c1", "rs0")
    assert committed is not None and committed["sec"] == 999


def test_heartbeats_commit_the_position_of_a_quiet_stream(tmp_path: Path) -> None:
    """Heartbeat records go to their topic and the idle position is committed with them."""
    from mongocdc.events.position import Position as P

    store = SqliteOffsetStore(tmp_path / "o.db")
    stop = threading.Event()
    ticks = iter(range(1000))
    idle_token = P(1001, 5, P.token_bytes({"_data": "idle"}))

    class QuietSource(ScriptedSource):
        def next(self) -> Any:
            if self.index >= len(self.items):
                self.index += 1
                if self.index > 4:
                    stop.set()
                self._position = idle_token
                return Idle(idle_token)
            return super().next()

    sink = RecordingSink()
    task = StreamingTask(
        QuietSource([change(0)], stop),
        sink,
        store,
        EnvelopeCodec("app"),
        StreamOptions(
            "c1", "rs0", flush_interval_s=3600, heartbeat_interval_s=1.0, heartbeat_topic="__debezium-heartbeat.app"
        ),
        stop=stop,
        clock=lambda: float(next(ticks)),
        wall_clock_ms=lambda: 42,
    )
    stats = task.run()
    beats = [(k, v) for t, k, v in sink.records if t == "__debezium-heartbeat.app"]
    assert stats.heartbeats == len(beats) >= 2
    assert beats[0] == (b'{"serverName":"app"}', b'{"ts_ms":42}')
    committed = store.load("c1", "rs0")
    assert committed is not None and SourceOffset.from_record(committed).position == idle_token
    assert stats.commits >= 2  # heartbeats commit before the (hour-long) flush interval


def test_disconnects_and_elections_reach_the_metrics(tmp_path: Path) -> None:
    from mongocdc.engine.metrics import Metrics

    stop = threading.Event()

    class FlakySource(ScriptedSource):
        reconnects = 0
        elections = 0

        def next(self) -> Any:
            self.reconnects += 1 if self.index == 1 else 0
            self.elections += 1 if self.index == 2 else 0
            return super().next()

    metrics = Metrics("c1")
    StreamingTask(
        FlakySource([change(i) for i in range(4)], stop),
        RecordingSink(),
        SqliteOffsetStore(tmp_path / "o.db"),
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0"),
        stop=stop,
        metrics=metrics,
    ).run()
    part = metrics.to_dict()["partitions"]["rs0"]
    assert part["disconnects"] == 1 and part["primary_elections"] == 1
    assert part["events"]["create"] == 4 and part["offset_commits"] >= 1


@pytest.mark.parametrize("mode", ["fail", "skip"])
def test_oversized_events_fail_or_are_skipped_and_counted(tmp_path: Path, mode: str) -> None:
    from mongocdc.errors import OversizedEventError

    class SizeLimitedSink(RecordingSink):
        def produce(self, topic: str, key: bytes | None, value: bytes | None, **kwargs: Any) -> None:
            if key == b'{"id":"2"}':
                raise OversizedEventError(f"the event for key {key!r} is too large")
            super().produce(topic, key, value, **kwargs)

    store = SqliteOffsetStore(tmp_path / "o.db")
    stop = threading.Event()
    sink = SizeLimitedSink()
    task = StreamingTask(
        ScriptedSource([change(i) for i in range(4)], stop),
        sink,
        store,
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0", oversize_mode=mode),
        stop=stop,
    )
    if mode == "fail":
        with pytest.raises(OversizedEventError):
            task.run()
        committed = store.load("c1", "rs0")
        assert committed is not None and committed["sec"] == 1001  # stops before the oversized change
        return
    stats = task.run()
    assert keys_of(sink) == [0, 1, 3] and stats.skipped == 1
    assert task.metrics.to_dict()["partitions"]["rs0"]["skipped"] == {"oversized": 1}
    assert (store.load("c1", "rs0") or {})["sec"] == 1003


def test_records_the_connectors_transforms_drop_are_counted_and_still_advance_the_offset(tmp_path: Path) -> None:
    class DroppingSink(RecordingSink):
        """As KafkaSink with a chain that drops the change of key 2: acknowledged at once, reported as dropped."""

        def produce(self, topic: str, key: bytes | None, value: bytes | None, **kwargs: Any) -> bool:
            if key == b'{"id":"2"}':
                on_ack = kwargs.get("on_ack")
                if on_ack is not None:
                    on_ack()
                return False
            return super().produce(topic, key, value, **kwargs)

    store = SqliteOffsetStore(tmp_path / "o.db")
    stop = threading.Event()
    sink = DroppingSink()
    task = StreamingTask(
        ScriptedSource([change(i) for i in range(3)], stop),
        sink,
        store,
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0"),
        stop=stop,
    )
    task.run()
    assert keys_of(sink) == [0, 1]
    assert task.metrics.to_dict()["partitions"]["rs0"]["skipped"] == {"transform": 1}
    assert 'reason="transform"' in task.metrics.to_prometheus()
    assert (store.load("c1", "rs0") or {})["sec"] == 1002  # the dropped change is the last one committed


def test_skip_threshold_and_skipped_operations(tmp_path: Path) -> None:
    stop = threading.Event()
    sink = RecordingSink()
    history = [change(1), change(1, "update"), change(2), change(2, "delete")]
    stats = StreamingTask(
        ScriptedSource(history, stop),
        sink,
        SqliteOffsetStore(tmp_path / "o.db"),
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0", skipped_operations=frozenset({"u", "d"})),
        stop=stop,
    ).run()
    assert [json.loads(v)["op"] for _, _, v in sink.records if v is not None] == ["c", "c"]
    assert stats.skipped == 2 and stats.tombstones == 0

    stop = threading.Event()
    sink = RecordingSink()
    stats = StreamingTask(
        ScriptedSource([change(1)], stop),
        sink,
        SqliteOffsetStore(tmp_path / "p.db"),
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0", oversize_mode="skip", oversize_threshold=100),
        stop=stop,
    ).run()
    assert sink.records == [] and stats.skipped == 1


def test_transaction_metadata_flows_through_the_loop_and_survives_a_restart(tmp_path: Path) -> None:
    from bson import json_util

    recorded = Path(__file__).parents[1] / "events" / "recorded" / "transactions.jsonl"
    history = [json_util.loads(line) for line in recorded.read_text().splitlines() if line.strip()]
    options = StreamOptions("c1", "rs0", transaction_topic="app.transaction")

    def run(changes: list[dict[str, Any]], store: SqliteOffsetStore, fail_at: int | None = None) -> RecordingSink:
        stop = threading.Event()
        sink = RecordingSink()
        source = ScriptedSource(changes, stop, fail_at=fail_at)
        task = StreamingTask(source, sink, store, EnvelopeCodec("app"), options, stop=stop)
        if fail_at is None:
            task.run()
        else:
            with pytest.raises(RuntimeError):
                task.run()
        return sink

    def summary(sinks: list[RecordingSink]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        txn = [json.loads(v) for s in sinks for t, _, v in s.records if t == "app.transaction" and v]
        blocks = [json.loads(v)["transaction"] for s in sinks for t, _, v in s.records if t != "app.transaction" and v]
        return txn, [b for b in blocks if b]

    whole, blocks = summary([run(history, SqliteOffsetStore(tmp_path / "a.db"))])
    assert [r["status"] for r in whole].count("BEGIN") == 2 and [r["status"] for r in whole].count("END") == 2
    end = next(r for r in whole if r["status"] == "END")
    assert end["event_count"] == 3 and sum(c["event_count"] for c in end["data_collections"]) == 3
    assert [b["total_order"] for b in blocks][:3] == [1, 2, 3]

    # a graceful stop in the middle of the first transaction, then a restart: same records, no duplicates
    store = SqliteOffsetStore(tmp_path / "b.db")
    middle = next(i for i, c in enumerate(history) if "txnNumber" in c) + 2
    first = run(history[:middle], store)
    second = run(history, store)
    restarted, restarted_blocks = summary([first, second])
    assert [(r["status"], r["id"], r["event_count"]) for r in restarted] == [
        (r["status"], r["id"], r["event_count"]) for r in whole
    ]
    assert [b["total_order"] for b in summary([first, second])[1]] == [b["total_order"] for b in blocks]


def test_a_resumed_stream_logs_its_whole_resume_token_as_hex(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The `_data` string MongoDB shows in a change event's `_id` (and Debezium logs), not the stored Base64."""
    import logging

    from mongocdc.events.position import Position

    data = "8263A1B2C3000000012B022C0100296E5A1004" + "AB" * 40  # longer than any table would shorten
    store = SqliteOffsetStore(tmp_path / "offsets.db")
    stored = {"rs0": Position(1005, 1, Position.token_bytes({"_data": data})), "rs1": Position(1006, 2)}
    for partition, position in stored.items():
        store.commit("c1", partition, SourceOffset(position).to_record())
        stop = threading.Event()
        stop.set()
        with caplog.at_level(logging.INFO, logger="mongocdc.engine"):
            StreamingTask(
                ScriptedSource([], stop, start=position),
                RecordingSink(),
                store,
                EnvelopeCodec("app"),
                StreamOptions("c1", partition),
                stop=stop,
            ).run()
    messages = [r.getMessage() for r in caplog.records]
    assert f"resuming c1/rs0 after sec=1005 ord=1, resume token {data}" in messages
    assert "starting c1/rs1 at sec=1006 ord=2 (no resume token)" in messages


class GoneServerSource(ScriptedSource):
    """Replays its history, then blocks as a change stream retrying a server that is gone (minutes of attempts)."""

    def __init__(self, history: list[dict[str, Any]], stop: threading.Event) -> None:
        super().__init__(history, stop)
        self.retrying = threading.Event()
        self.released = threading.Event()

    def next(self) -> Any:
        if self.index >= len(self.items):
            self.retrying.set()
            self.released.wait(60)
        return super().next()


def test_a_graceful_stop_commits_and_returns_while_the_reader_retries_a_gone_server(tmp_path: Path) -> None:
    """The task's stop is honoured while the read-ahead reader is stuck in its retries: the loop is not held up."""
    import time

    from mongocdc.sources.read_ahead import ReadAheadSource

    store = SqliteOffsetStore(tmp_path / "offsets.db")
    stop = threading.Event()
    inner = GoneServerSource([change(i) for i in range(4)], stop)
    source = ReadAheadSource(inner, limit=16, stop=stop)
    handed_over = threading.Event()

    class Sink(RecordingSink):
        def produce(self, *args: Any, **kwargs: Any) -> None:
            super().produce(*args, **kwargs)
            if len(self.records) == 4:
                handed_over.set()

    sink = Sink()
    # stopped once the loop has every change and the reader is stuck (before, a change read ahead and not yet
    # taken by the loop is simply read again after the restart: nothing to assert about it here)
    stopper = threading.Thread(target=lambda: inner.retrying.wait(10) and handed_over.wait(10) and stop.set())
    stopper.daemon = True
    stopper.start()
    started = time.monotonic()
    try:
        StreamingTask(
            source,  # type: ignore[arg-type]
            sink,
            store,
            EnvelopeCodec("app"),
            StreamOptions(connector="c1", partition="rs0", flush_interval_s=3600),
            stop=stop,
            wall_clock_ms=lambda: 42,
        ).run()
    finally:
        inner.released.set()
    assert time.monotonic() - started < 10
    assert keys_of(sink) == list(range(4))
    assert SourceOffset.from_record(store.load("c1", "rs0") or {}).position.sec == 1003  # the last change committed
