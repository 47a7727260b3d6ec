"""Composition root: settings → concrete source, sink, offset store and codec."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from mongocdc.config import Settings
from mongocdc.errors import NotImplementedYetError
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.offsets.base import OffsetStore
from mongocdc.retry import Backoff

if TYPE_CHECKING:
    from mongocdc.engine.streaming import StreamingTask, StreamStats

log = logging.getLogger("mongocdc.wiring")


def backoff(settings: Settings) -> Backoff:
    return Backoff(
        initial_delay_s=settings.connect_backoff_initial_delay_ms / 1000,
        max_delay_s=settings.connect_backoff_max_delay_ms / 1000,
        max_attempts=settings.connect_max_attempts,
    )


def mongo_client(settings: Settings) -> Any:
    """A connected ``MongoClient`` (retries with the ``connect.*`` backoff)."""
    from mongocdc.sources.mongo.client import connect

    return connect(
        settings.mongodb_connection_string,
        backoff(settings),
        server_selection_timeout_ms=settings.mongodb_server_selection_timeout_ms,
    )


def offset_store(settings: Settings) -> OffsetStore:
    if settings.offset_storage == "sqlite":
        from mongocdc.offsets.sqlite import SqliteOffsetStore

        return SqliteOffsetStore(settings.offset_storage_file_filename)
    raise NotImplementedYetError(
        f"offset.storage={settings.offset_storage} is not implemented yet",
        hint="use offset.storage=sqlite (the default) for now",
    )


def codec(settings: Settings) -> EnvelopeCodec:
    return EnvelopeCodec(prefix=settings.require("topic.prefix"), schemas_enable=settings.schemas_enable)


def kafka_sink(settings: Settings) -> Any:
    """A producer whose cluster answered (retries with the ``connect.*`` backoff)."""
    from mongocdc.sinks.kafka.producer import KafkaSink

    sink = KafkaSink(settings.kafka_client)
    sink.connect(backoff(settings), settings.connect_timeout_ms / 1000)
    return sink


def change_source(settings: Settings, client: Any, rs_name: str | None) -> Any:
    from mongocdc.sources.mongo.stream import MongoChangeStreamSource

    return MongoChangeStreamSource(
        client,
        connector=settings.name,
        scope=settings.capture_scope,
        target=settings.capture_target,
        capture_mode=settings.capture_mode,
        poll_interval_ms=settings.poll_interval_ms,
        batch_size=settings.max_batch_size,
        rs_name=rs_name,
        backoff=backoff(settings),
        include=settings.is_collection_included,
    )


@contextlib.contextmanager
def streaming_task(
    settings: Settings,
    *,
    stop: threading.Event,
    on_status: Callable[[StreamStats], None] | None = None,
) -> Iterator[StreamingTask]:
    """The streaming task of ``settings``, its resources closed on exit.

    Start-up order: configuration checks, the offset store, Kafka (must answer), MongoDB (must
    answer and have an oplog), then the change stream opens inside ``task.run()``.
    """
    from mongocdc.engine.streaming import StreamingTask, StreamOptions
    from mongocdc.sources.mongo.topology import discover

    envelope = codec(settings)
    with contextlib.ExitStack() as resources:
        store = offset_store(settings)
        resources.callback(store.close)
        sink = kafka_sink(settings)
        resources.callback(sink.close)
        client = mongo_client(settings)
        resources.callback(client.close)
        topology = discover(client)
        topology.require_change_streams()
        log.info(
            "capturing %s %s (%s scope) into %s as %s.<db>.<collection>",
            topology.kind.replace("_", " "),
            topology.replica_set or "",
            settings.capture_scope,
            settings.kafka_client.get("bootstrap.servers"),
            settings.topic_prefix,
        )
        yield StreamingTask(
            change_source(settings, client, topology.replica_set),
            sink,
            store,
            envelope,
            StreamOptions(
                connector=settings.name,
                partition=topology.partition,
                flush_interval_s=settings.offset_flush_interval_ms / 1000,
                tombstones_on_delete=settings.tombstones_on_delete,
            ),
            stop=stop,
            on_status=on_status,
        )
