"""``ConnectorGroup`` with a ``ShardWatcher``: shards that join get a task, shards that leave end theirs.

The shard list is ``config.shards`` documents as a config server keeps them, edited by the test and read
by the real ``ShardWatcher``; each shard replica set is streamed by a real ``ConnectorTask`` over a
scripted change stream, a recording sink and an in-memory offset store, as ``wiring.connector`` builds them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mongocdc.engine.connector import ConnectorGroup, ConnectorTask, TaskOptions, TaskResult
from mongocdc.engine.source_offset import SourceOffset
from mongocdc.engine.streaming import StreamOptions
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.position import Position
from mongocdc.offsets.memory import MemoryOffsetStore
from mongocdc.sources.mongo.shards import ShardWatcher
from mongocdc.sources.mongo.topology import Shard, parse_shard
from tests.unit.engine.fakes import Idle, RecordingSink, ScriptedSource, change

CONNECTOR = "c1"
CHANGES = 3


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class ShardSource(ScriptedSource):
    """One shard's change stream: its history, then idle polls until its task stops; raises while ``down()``."""

    def __init__(self, rs: str, stop: threading.Event, down: Callable[[], bool]) -> None:
        super().__init__([change(i) for i in range(CHANGES)], stop)
        self.rs = rs
        self.down = down
        self.closed = False
        self.opened = threading.Event()
        """Set once the task opened the stream (``opened_at`` is ``None`` both before and for a start from now)."""

    def open(self, start: Position | None) -> None:
        super().open(start)
        self.opened.set()

    def next(self) -> Any:
        if self.down():
            raise ConnectionError(f"the servers of {self.rs} are shut down")
        if self.index >= len(self.items):
            self.stop.wait(0.01)  # an idle poll: the real one waits up to cursor.max.await.time.ms
            assert self._position is not None
            return Idle(self._position)
        return super().next()

    def close(self) -> None:
        self.closed = True


class Cluster:
    """``config.shards`` as the test edits it, and what the connector built for each shard replica set."""

    def __init__(self, *names: str) -> None:
        self.docs = {name: {"_id": name, "host": f"{name}-rs/{name}.example.net:27018", "state": 1} for name in names}
        self.shut_down: set[str] = set()
        """Replica sets whose servers are gone: their streams fail."""
        self.sources: dict[str, list[ShardSource]] = {}
        self.sink = RecordingSink()
        self.store = MemoryOffsetStore()

    def shards(self) -> list[Shard]:
        return [parse_shard(doc) for doc in self.docs.values()]

    def task(self, shard: Shard) -> ConnectorTask:
        """As ``wiring.connector``'s ``shard_task``: a task of the replica set's own, with its own stop event."""
        rs = str(shard.replica_set)
        stop = threading.Event()
        source = ShardSource(rs, stop, lambda: rs in self.shut_down)
        self.sources.setdefault(rs, []).append(source)
        return ConnectorTask(
            source=source,
            current_position=lambda: source.start,
            scanners=lambda *only: [],
            sink=self.sink,
            store=self.store,
            codec=EnvelopeCodec("app"),
            options=TaskOptions(StreamOptions(CONNECTOR, rs, flush_interval_s=0.0), rs=rs, snapshot_mode="no_data"),
            stop=stop,
        )

    def group(self, stop: threading.Event, interval_s: float) -> ConnectorGroup:
        known = self.shards()

        def joined(shard: Shard) -> None:
            group.add(str(shard.replica_set), self.task(shard))

        def left(shard: Shard) -> None:
            group.end(str(shard.replica_set))

        watcher = ShardWatcher(self.shards, interval_s, joined, left, known=known)
        group = ConnectorGroup({str(s.replica_set): self.task(s) for s in known}, stop, watcher=watcher)
        return group

    def committed(self, rs: str) -> bytes | None:
        """The resume token stored for ``rs``."""
        offset = self.store.load(CONNECTOR, rs)
        return None if offset is None else SourceOffset.from_record(offset).position.resume_token

    def streaming(self, rs: str) -> bool:
        """The newest task of ``rs`` opened its stream and has not closed it."""
        return bool(self.sources.get(rs)) and self.sources[rs][-1].opened.is_set() and not self.sources[rs][-1].closed

    def caught_up(self, rs: str) -> bool:
        """Every change of ``rs`` was produced, acknowledged and its position committed."""
        return self.committed(rs) == Position.token_bytes({"_data": f"{CHANGES - 1:08d}"})


@contextmanager
def running(group: ConnectorGroup, stop: threading.Event) -> Iterator[list[TaskResult | BaseException]]:
    """``group.run()`` on a thread; set ``stop`` and wait for it on leaving. The list gets its result or error."""
    outcome: list[TaskResult | BaseException] = []

    def run() -> None:
        try:
            outcome.append(group.run())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield outcome
    finally:
        stop.set()
        thread.join(20)
        assert not thread.is_alive(), "the group did not end after stop"


def test_a_shard_that_joins_gets_a_task_and_one_that_leaves_has_its_task_ended_after_committing() -> None:
    cluster, stop = Cluster("shard00", "shard01"), threading.Event()
    group = cluster.group(stop, interval_s=0.02)
    with running(group, stop) as outcome:
        wait_until(lambda: cluster.caught_up("shard00-rs") and cluster.caught_up("shard01-rs"), "both shards")
        cluster.docs["shard02"] = {"_id": "shard02", "host": "shard02-rs/shard02.example.net:27018", "state": 1}
        wait_until(lambda: cluster.caught_up("shard02-rs"), "the stream of the shard that joined")
        del cluster.docs["shard00"]  # removeShard completed
        wait_until(lambda: not cluster.streaming("shard00-rs"), "the task of the shard that left to end")
        assert cluster.streaming("shard01-rs") and cluster.streaming("shard02-rs")
        assert cluster.caught_up("shard00-rs")  # what Kafka acknowledged stays committed
        assert outcome == []  # the group runs on
    result = outcome[0]
    assert isinstance(result, TaskResult) and result.stream is not None
    assert result.stream.events["c"] == 3 * CHANGES
    assert len(cluster.sink.records) == 3 * CHANGES
    assert not any(cluster.streaming(rs) for rs in ("shard01-rs", "shard02-rs"))  # stop reached every task


def test_a_shard_that_leaves_and_joins_again_streams_on_from_its_committed_position() -> None:
    cluster, stop = Cluster("shard00"), threading.Event()
    group = cluster.group(stop, interval_s=0.02)
    with running(group, stop) as outcome:
        wait_until(lambda: cluster.caught_up("shard00-rs"), "the shard's changes")
        doc = cluster.docs.pop("shard00")
        wait_until(lambda: not cluster.streaming("shard00-rs"), "its task to end")
        cluster.docs["shard00"] = doc
        wait_until(lambda: len(cluster.sources["shard00-rs"]) == 2, "a new task")
        wait_until(lambda: cluster.streaming("shard00-rs"), "the new task to stream")
        again = cluster.sources["shard00-rs"][1]
        assert again.opened_at is not None
        assert again.opened_at.resume_token == Position.token_bytes({"_data": f"{CHANGES - 1:08d}"})
        assert outcome == []
    assert len(cluster.sink.records) == CHANGES  # nothing read twice


def test_the_failure_of_a_task_whose_shard_is_still_listed_stops_every_task_and_is_raised() -> None:
    cluster, stop = Cluster("shard00", "shard01"), threading.Event()
    group = cluster.group(stop, interval_s=0.02)
    with running(group, stop) as outcome:
        wait_until(lambda: cluster.caught_up("shard00-rs") and cluster.caught_up("shard01-rs"), "both shards")
        cluster.shut_down.add("shard01-rs")  # its servers fail while it is still part of the cluster
        wait_until(lambda: outcome != [], "the group to end")
    assert isinstance(outcome[0], ConnectionError) and "shard01-rs" in str(outcome[0])
    assert stop.is_set() and not cluster.streaming("shard00-rs")


def test_a_task_that_fails_after_its_shard_left_is_logged_and_the_others_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster, stop = Cluster("shard00", "shard01"), threading.Event()
    group = cluster.group(stop, interval_s=3600)  # no poll of its own: the failure makes the group look
    with caplog.at_level(logging.WARNING, logger="mongocdc.connector"), running(group, stop) as outcome:
        wait_until(lambda: cluster.caught_up("shard00-rs") and cluster.caught_up("shard01-rs"), "both shards")
        del cluster.docs["shard01"]  # removeShard completed, and its servers were shut down at once
        cluster.shut_down.add("shard01-rs")
        wait_until(lambda: any("shard01-rs, which has left" in r.getMessage() for r in caplog.records), "the warning")
        assert cluster.streaming("shard00-rs") and outcome == []
    assert isinstance(outcome[0], TaskResult)


def test_a_snapshot_only_run_ends_with_its_tasks_and_no_shard_joins_it() -> None:
    cluster, stop = Cluster("shard00"), threading.Event()
    group = cluster.group(stop, interval_s=0.02)
    cluster.docs["shard01"] = {"_id": "shard01", "host": "shard01-rs/shard01.example.net:27018", "state": 1}
    result = group.run(snapshot_only=True)
    assert result.snapshot is not None and result.snapshot.completed
    assert set(cluster.sources) == {"shard00-rs"} and not stop.is_set()
