"""``snapshot.delay.ms``, ``streaming.delay.ms`` and ``capture.start.op.time`` in ``ConnectorTask.run``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from mongocdc.engine.connector import ConnectorTask, TaskOptions
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import StreamOptions
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.position import Position
from mongocdc.offsets.sqlite import SqliteOffsetStore
from tests.unit.engine.fakes import START, RecordingSink, ScriptedScanner, ScriptedSource, change


class LoggingStop(threading.Event):
    """A stop event whose timed waits are logged (and return at once), so delays are seen without sleeping."""

    def __init__(self, log: list[Any]) -> None:
        super().__init__()
        self.log = log

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is not None and timeout > 0.5:
            self.log.append(("wait", timeout))
            return self.is_set()
        return super().wait(timeout)


class LoggingSource(ScriptedSource):
    def __init__(self, history: list[dict[str, Any]], stop: threading.Event, log: list[Any]) -> None:
        super().__init__(history, stop)
        self.log = log

    def open(self, start: Position | None) -> None:
        self.log.append(("open", start))
        known = [self.start.resume_token] + [item.position.resume_token for item in self.items]
        if start is not None and start.resume_token not in known:
            start_at = start
            super().open(None)  # a position of the test's own: replay the history from its start
            self.opened_at = start_at
            return
        super().open(start)


def task(
    tmp_path: Path, log: list[Any], mode: str = "initial", **options: Any
) -> tuple[ConnectorTask, SqliteOffsetStore, LoggingSource]:
    store = SqliteOffsetStore(tmp_path / "o.db")
    stop = LoggingStop(log)
    source = LoggingSource([change(1)], stop, log)
    documents = [{"_id": i} for i in range(3)]
    scanner = ScriptedScanner("shop.orders", documents, 2, on_chunk=lambda n: log.append(("chunk", n)))
    connector = ConnectorTask(
        source=source,
        current_position=lambda: START,
        scanners=lambda: [scanner],
        sink=RecordingSink(),
        store=store,
        codec=EnvelopeCodec("app"),
        options=TaskOptions(StreamOptions("c1", "rs0", flush_interval_s=0.0), rs="rs0", snapshot_mode=mode, **options),
        stop=stop,
    )
    return connector, store, source


def test_the_snapshot_waits_snapshot_delay_first(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, _, _ = task(tmp_path, log, snapshot_delay_s=2.5)
    result = connector.run()
    assert result.snapshot is not None and result.snapshot.completed
    assert log[0] == ("wait", 2.5)
    assert log[1] == ("chunk", 1)


def test_a_stop_during_the_snapshot_delay_ends_the_run_before_the_snapshot(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, store, _ = task(tmp_path, log, snapshot_delay_s=2.5)
    connector.stop.set()
    result = connector.run()
    assert result.snapshot is None
    assert log == [("wait", 2.5)]
    assert store.load("c1", "rs0") is None


def test_no_snapshot_no_snapshot_delay(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, store, _ = task(tmp_path, log, snapshot_delay_s=2.5, streaming_delay_s=3.0)
    store.commit("c1", "rs0", SourceOffset(Position(5, 1, Position.token_bytes({"_data": "x"}))).to_record())
    connector.run()
    assert not [entry for entry in log if entry[0] == "wait"]
    assert log[0][0] == "open"


def test_streaming_waits_streaming_delay_after_a_completed_snapshot(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, _, _ = task(tmp_path, log, streaming_delay_s=3.0)
    connector.run()
    kinds = [entry[0] for entry in log]
    assert kinds.index("wait") > max(i for i, kind in enumerate(kinds) if kind == "chunk")
    assert ("wait", 3.0) in log
    assert kinds.index("open") > kinds.index("wait")


def test_capture_start_op_time_is_where_streaming_starts_without_offset_and_snapshot(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, store, source = task(tmp_path, log, mode="no_data", start_at=Position(1234, 5))
    connector.run()
    assert source.opened_at is not None
    assert (source.opened_at.sec, source.opened_at.ord) == (1234, 5)


def test_capture_start_op_time_gives_way_to_a_stored_offset(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, store, source = task(tmp_path, log, mode="no_data", start_at=Position(1234, 5))
    store.commit("c1", "rs0", SourceOffset(Position(77, 1)).to_record())
    connector.run()
    assert source.opened_at is not None and source.opened_at.sec == 77


def test_capture_start_op_time_gives_way_to_a_snapshot(tmp_path: Path) -> None:
    log: list[Any] = []
    connector, _, source = task(tmp_path, log, mode="initial", start_at=Position(1234, 5))
    result = connector.run()
    assert result.snapshot is not None and result.snapshot.completed
    assert source.opened_at == START  # streaming starts where the snapshot began
