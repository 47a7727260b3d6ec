"""Composition root: settings → concrete source, sink, offset store and codec."""

from __future__ import annotations

from typing import Any

from mongocdc.config import Settings
from mongocdc.errors import NotImplementedYetError
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.offsets.base import OffsetStore


def backoff(settings: Settings) -> Any:
    from mongocdc.sources.mongo.client import Backoff

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
    from mongocdc.sinks.kafka.producer import KafkaSink

    return KafkaSink(settings.kafka_client)


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
