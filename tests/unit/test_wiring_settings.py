"""Debezium properties wired to where they take effect: the change stream, the producer, the connector task."""

from __future__ import annotations

import threading
from typing import Any

from mongocdc import wiring
from mongocdc.config import load_settings
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.position import Position
from mongocdc.offsets.memory import MemoryOffsetStore


def settings(**properties: object) -> Any:
    return load_settings(None, {}, {"topic.prefix": "app", **properties})


class NoClient:
    """A client the tested code must not call."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected call to the client: {name}")


def test_cursor_max_await_time_ms_is_the_change_streams_max_await_time() -> None:
    source = wiring.change_source(settings(**{"cursor.max.await.time.ms": 2500}), NoClient(), "rs0")
    assert source.inner._watch_options(None)["max_await_time_ms"] == 2500


def test_without_cursor_max_await_time_the_poll_interval_is_the_wait() -> None:
    source = wiring.change_source(settings(**{"poll.interval.ms": 700}), NoClient(), "rs0")
    assert source.inner._watch_options(None)["max_await_time_ms"] == 700


def test_max_batch_size_is_the_change_streams_batch_size() -> None:
    source = wiring.change_source(settings(**{"max.batch.size": 77}), NoClient(), "rs0")
    assert source.inner._watch_options(None)["batch_size"] == 77


def test_the_change_stream_is_read_at_most_one_batch_ahead_of_the_loop() -> None:
    from mongocdc.sources.read_ahead import ReadAheadSource

    source = wiring.change_source(settings(**{"max.batch.size": 77}), NoClient(), "rs0")
    assert isinstance(source, ReadAheadSource)
    assert source._limit == 77


def test_max_queue_size_must_be_larger_than_max_batch_size() -> None:
    import pytest

    from mongocdc.errors import ConfigError

    with pytest.raises(ConfigError, match=r"max.queue.size \(100\) must be larger than max.batch.size \(2048\)"):
        settings(**{"max.queue.size": 100})


def test_heartbeat_topic_name_or_prefix() -> None:
    assert wiring.heartbeat_topic(settings()) == "__debezium-heartbeat.app"
    assert wiring.heartbeat_topic(settings(**{"topic.heartbeat.prefix": "hb"})) == "hb.app"
    assert wiring.heartbeat_topic(settings(**{"topic.heartbeat.name": "all-heartbeats"})) == "all-heartbeats"


def test_snapshot_fetch_size_zero_is_debeziums_let_the_server_choose() -> None:
    assert wiring.snapshot_fetch_size(settings(**{"snapshot.fetch.size": 0})) == 2048
    assert wiring.snapshot_fetch_size(settings(**{"snapshot.fetch.size": 10})) == 10


def test_capture_start_op_time_is_a_bson_timestamp() -> None:
    assert wiring.start_position(settings()) is None
    position = wiring.start_position(settings(**{"capture.start.op.time": (1_700_000_000 << 32) | 7}))
    assert (position.sec, position.ord) == (1_700_000_000, 7)


def test_a_start_op_time_without_seconds_is_refused() -> None:
    import pytest

    from mongocdc.errors import ConfigError

    with pytest.raises(ConfigError, match="capture.start.op.time"):
        settings(**{"capture.start.op.time": 12})


def task_of(loaded: Any) -> Any:
    """The connector task ``wiring`` builds from ``loaded``, on a client it must not call."""
    return wiring.connector_task(
        loaded,
        NoClient(),
        "rs0",
        "rs0",
        None,
        sink=object(),
        store=MemoryOffsetStore(),
        envelope=EnvelopeCodec("app"),
        stop=threading.Event(),
        on_status=None,
        on_progress=None,
        metrics=None,  # type: ignore[arg-type]
    )


def test_the_task_gets_the_delays_and_the_start_time() -> None:
    loaded = settings(
        **{
            "snapshot.delay.ms": 1500,
            "streaming.delay.ms": 2500,
            "capture.start.op.time": 5 << 32,
            "topic.heartbeat.name": "hb",
            "snapshot.fetch.size": 0,
        }
    )
    task = task_of(loaded)
    assert (task.options.snapshot_delay_s, task.options.streaming_delay_s) == (1.5, 2.5)
    assert task.options.start_at == Position(5, 0)
    assert task.options.stream.heartbeat_topic == "hb"
    assert task.options.stream.transaction_idle_end_ms is None  # END when the next change comes, as Debezium


def test_transaction_end_idle_ms_ends_transactions_on_idle() -> None:
    loaded = settings(**{"transaction.end.idle.ms": 750, "provide.transaction.metadata": True})
    task = task_of(loaded)
    assert task.options.stream.transaction_idle_end_ms == 750
    assert task.options.stream.transaction_topic == "app.transaction"


def test_literal_filters_match_exact_names_only() -> None:
    literal = settings(**{"filters.match.mode": "literal", "collection.include.list": "shop.orders,shop.a+b"})
    assert literal.is_collection_included("shop", "orders")
    assert literal.is_collection_included("shop", "a+b")
    assert not literal.is_collection_included("shop", "ordersX")
    assert not literal.is_collection_included("shopXorders", "x")
    assert not literal.is_collection_included("shop", "Orders")  # case-sensitive, as Debezium's $in
    regex = settings(**{"collection.include.list": "shop.orders"})
    assert regex.is_collection_included("shop", "Orders")


def test_extended_headers_enabled_is_the_codecs_context_headers() -> None:
    assert wiring.codec(settings()).headers is not None
    names = [name for name, _ in wiring.codec(settings()).headers or []]
    assert "__debezium.context.connectorLogicalName" in names
    assert wiring.codec(settings(**{"extended.headers.enabled": False})).headers is None


def test_exactly_once_needs_the_offsets_in_kafka(caplog: Any) -> None:
    import logging

    import pytest

    from mongocdc.errors import ConfigError

    assert not wiring.exactly_once(settings())  # disabled by default
    assert wiring.exactly_once(settings(**{"exactly.once.support": "required", "offset.storage": "kafka"}))
    assert wiring.exactly_once(settings(**{"exactly.once.support": "requested", "offset.storage": "kafka"}))
    caplog.set_level(logging.WARNING, logger="mongocdc.wiring")
    assert not wiring.exactly_once(settings(**{"exactly.once.support": "requested"}))  # SQLite: at least once
    assert "delivering at least once" in caplog.text and "offset.storage: kafka" in caplog.text
    with pytest.raises(ConfigError, match="exactly.once.support is required but offset.storage is sqlite") as raised:
        settings(**{"exactly.once.support": "required"})
    assert raised.value.exit_code == 3


def test_transaction_boundary_defaults_to_poll_of_max_batch_size_and_the_flush_interval() -> None:
    boundary = wiring.transaction_boundary(settings(**{"max.batch.size": 500, "offset.flush.interval.ms": 7000}))
    assert (boundary.mode, boundary.max_records, boundary.interval_s, boundary.linger_s) == ("poll", 500, 7.0, 0.02)
    interval = wiring.transaction_boundary(
        settings(**{"transaction.boundary": "interval", "transaction.boundary.interval.ms": 250})
    )
    assert (interval.mode, interval.interval_s) == ("interval", 0.25)
