"""The incremental snapshotter driven by the streaming task: what it returns per item, the Kafka channel's
reads and commits, and its progress in the committed offset (a model collection and change stream, no I/O)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from mongocdc.engine.incremental import IncrementalSnapshotState, WindowState
from mongocdc.engine.incremental_snapshot import NOTHING, BlockingSnapshot, IncrementalSnapshotter, Step
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import StreamingTask, StreamOptions
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.position import Position
from mongocdc.events.signals import PauseSnapshot, Signal, parse_signal
from mongocdc.offsets.memory import MemoryOffsetStore
from mongocdc.sources.base import Idle, StreamItem
from tests.unit.engine.fakes import RecordingSink
from tests.unit.engine.helpers import NS, Model, execute, snapshotter


class ModelSource:
    """The model's change stream as a ``ChangeSource``: ``Idle`` when nothing is queued, a stop after a few."""

    def __init__(self, model: Model, stop: threading.Event, idle_stop: int = 3) -> None:
        self.model = model
        self.stop = stop
        self.idle_stop = idle_stop
        self.idles = 0
        self._position: Position | None = None
        self.reconnects = 0
        self.elections = 0

    def open(self, start: Position | None) -> None:
        self._position = start or self.model.position()

    def next(self) -> StreamItem:
        if self.model.stream:
            item = self.model.stream.popleft()
            self._position = item.position
            return item
        self.idles += 1
        if self.idles >= self.idle_stop:
            self.stop.set()
        assert self._position is not None
        return Idle(self._position)

    @property
    def position(self) -> Position | None:
        return self._position

    def close(self) -> None:
        pass


class FakeKafkaSignals:
    """Signal ``i`` handed out is at offset ``i`` of partition 0; ``positions`` as the real channel keeps them."""

    def __init__(self) -> None:
        self.waiting: list[Signal] = []
        self.polls = 0
        self.commits = 0
        self.closed = 0
        self.started_at: dict[int, int] | None = None
        self.positions: tuple[tuple[int, int], ...] | None = None
        self.next = 0

    def start_at(self, positions: Mapping[int, int] | None) -> None:
        self.started_at = dict(positions) if positions is not None else None

    def poll(self, timeout: float = 0.0, max_records: int = 100) -> list[Signal]:
        self.polls += 1
        signals, self.waiting = self.waiting, []
        self.next += len(signals)
        self.positions = ((0, self.next),)
        return signals

    def commit(self) -> None:
        self.commits += 1

    def close(self) -> None:
        self.closed += 1


def test_reads_come_back_at_the_close_watermark_without_the_keys_changed_inside_the_window() -> None:
    model = Model(range(6))
    snap = snapshotter(model, chunk_size=4)
    model.signal(execute("s1"))
    assert snap.on_item(model.stream.popleft()) is NOTHING  # starts: open watermark, first chunk, close watermark
    assert snap.state is not None and snap.state.snapshot_id == "s1"
    reads: list[Any] = []
    while model.stream:
        step = snap.on_item(model.stream.popleft())
        assert step.blocking == ()
        reads += [document["_id"] for namespace, document in step.reads if namespace == NS]
        if snap.window.state is WindowState.OPEN and len(snap.window) == 4:
            model.update_next(2)  # changed inside the window of 0-3: the stream's event wins, the read is dropped
    assert reads == [0, 1, 3, 4, 5]
    assert snap.state is None and snap.completed_id == "s1"


def test_a_blocking_snapshot_is_returned_to_the_streaming_task() -> None:
    model = Model(range(3))
    snap = snapshotter(model)
    model.signal(execute("b1", "blocking"))
    assert snap.on_item(model.stream.popleft()) == Step(blocking=(BlockingSnapshot("b1", (NS,)),))
    assert snap.state is None and not model.stream  # no incremental snapshot, no watermark


def test_the_kafka_channel_is_read_at_most_every_poll_interval_and_committed_after_the_step() -> None:
    model = Model(range(3))
    kafka = FakeKafkaSignals()
    now = [0.0]
    snap = snapshotter(model, kafka_signals=kafka, signal_poll_interval_s=5.0, clock=lambda: now[0])
    idle = Idle(model.position())
    for _ in range(10):
        snap.on_item(idle)
    assert kafka.polls == 1
    kafka.waiting = [parse_signal(execute("k1"))]
    now[0] = 4.9
    snap.on_item(idle)
    assert kafka.polls == 1 and snap.state is None
    now[0] = 5.0
    snap.on_item(idle)
    assert kafka.polls == 2 and snap.state is not None and snap.state.snapshot_id == "k1"
    assert kafka.commits == 0  # the step of that item is not carried out yet
    snap.on_item(idle)
    assert kafka.commits == 1
    kafka.waiting = [PauseSnapshot("k2")]
    now[0] = 10.0
    snap.on_item(idle)
    assert snap.state is not None and snap.state.paused
    snap.close(carried_out=True)  # a graceful stop: the last step was carried out
    assert kafka.commits == 2 and kafka.closed == 1
    kafka.waiting = [PauseSnapshot("k3")]
    snap.on_item(idle)  # read again at once after a close
    assert kafka.polls == 4
    snap.close(carried_out=False)  # stopping on an error: read again after a restart
    assert kafka.commits == 2 and kafka.closed == 2


def run_stream(
    model: Model,
    snap: IncrementalSnapshotter,
    store: MemoryOffsetStore,
    *,
    flush_interval_s: float = 0.0,
    blocking: Any = None,
    stop_at_reads: int | None = None,
) -> RecordingSink:
    stop = threading.Event()
    sink = RecordingSink()

    class Source(ModelSource):
        def next(self) -> StreamItem:
            if stop_at_reads is not None and len(reads_of(sink)) >= stop_at_reads:
                self.stop.set()
                assert self._position is not None
                return Idle(self._position)
            return super().next()

    StreamingTask(
        Source(model, stop),
        sink,
        store,
        EnvelopeCodec("app"),
        StreamOptions("c1", "rs0", flush_interval_s=flush_interval_s),
        stop=stop,
        snapshotter=snap,
        blocking_snapshot=blocking,
    ).run()
    return sink


def reads_of(sink: RecordingSink) -> list[int]:
    values = [json.loads(v) for _, _, v in sink.records if v is not None]
    reads = [v for v in values if v["op"] == "r" and v["source"]["snapshot"] == "incremental"]
    return [json.loads(v["after"])["_id"] for v in reads]


def test_the_progress_is_encoded_only_when_an_offset_is_committed(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []
    to_offset = IncrementalSnapshotState.to_offset

    def counting(state: IncrementalSnapshotState) -> dict[str, Any]:
        encoded.append(state.snapshot_id)
        return to_offset(state)

    monkeypatch.setattr(IncrementalSnapshotState, "to_offset", counting)
    model = Model(range(10))
    store = MemoryOffsetStore()
    model.signal(execute("s1"))
    sink = run_stream(model, snapshotter(model, chunk_size=3), store, flush_interval_s=3600)
    assert reads_of(sink) == list(range(10))
    assert encoded == []  # one commit, at the graceful stop, after the snapshot completed
    stored = SourceOffset.from_record(store.load("c1", "rs0") or {})
    assert stored.incremental is None and stored.completed_incremental == "s1"


def test_progress_committed_mid_snapshot_continues_after_a_restart() -> None:
    model = Model(range(10))
    store = MemoryOffsetStore()
    model.signal(execute("s1"))
    # a graceful stop once the first chunk's reads were emitted, with the second chunk's window in flight
    sink = run_stream(model, snapshotter(model, chunk_size=3), store, stop_at_reads=3)
    assert reads_of(sink) == [0, 1, 2]
    stored = SourceOffset.from_record(store.load("c1", "rs0") or {})
    assert stored.incremental is not None and stored.incremental.last_key == 2
    # The restarted stream replays the in-flight chunk's watermarks (written after the stored position):
    # they are stale and ignored, and that chunk is read again.
    assert len(model.stream) == 2
    sink = run_stream(model, snapshotter(model, chunk_size=3), store)
    assert reads_of(sink) == [3, 4, 5, 6, 7, 8, 9]
    assert SourceOffset.from_record(store.load("c1", "rs0") or {}).completed_incremental == "s1"


def test_the_streaming_task_runs_blocking_snapshots_and_says_when_it_cannot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    model = Model(range(3))
    model.signal(execute("b1", "blocking"))
    ran: list[Sequence[str]] = []
    run_stream(model, snapshotter(model), MemoryOffsetStore(), blocking=ran.append)
    assert ran == [(NS,)]
    assert "blocking snapshot done: streaming resumes" in caplog.text
    model.signal(execute("b2", "blocking"))
    run_stream(model, snapshotter(model), MemoryOffsetStore())
    assert "signal b2: blocking snapshots are not available here" in caplog.text


def test_reads_are_emitted_at_the_position_of_the_close_watermark() -> None:
    model = Model(range(2))
    model.signal(execute("s1"))
    sink = run_stream(model, snapshotter(model), MemoryOffsetStore())
    values = [json.loads(v) for _, _, v in sink.records if v is not None]
    close = model.watermarks[-1]
    assert {(v["source"]["ts_ms"], v["source"]["ord"]) for v in values if v["op"] == "r"} == {
        (close.sec * 1000, close.ord)
    }


def test_the_kafka_channels_position_rides_in_the_offset_and_a_restored_offset_starts_the_channel_there() -> None:
    model = Model(range(3))
    kafka = FakeKafkaSignals()
    snap = snapshotter(model, kafka_signals=kafka, signal_poll_interval_s=0.0)
    snap.restore(SourceOffset(Position(1, 1), signal_offsets=((0, 7),)))
    assert kafka.started_at == {0: 7}  # the task's own position, not the group's
    assert snap.signal_offsets is None  # not read yet
    kafka.waiting = [parse_signal(execute("k1"))]
    snap.on_item(Idle(model.position()))
    assert snap.signal_offsets == ((0, 1),)  # past the signal, with the state it started
    assert snap.state is not None and snap.state.snapshot_id == "k1"
    snap.restore(None)
    assert kafka.started_at is None  # no stored position: the channel starts at the group's committed offset
