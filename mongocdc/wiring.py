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
    from mongocdc.engine.connector import ConnectorTask
    from mongocdc.engine.metrics import Metrics
    from mongocdc.engine.snapshot import ProgressCallback
    from mongocdc.engine.streaming import StreamStats

log = logging.getLogger("mongocdc.wiring")


def backoff(settings: Settings) -> Backoff:
    return Backoff(
        initial_delay_s=settings.connect_backoff_initial_delay_ms / 1000,
        max_delay_s=settings.connect_backoff_max_delay_ms / 1000,
        max_attempts=settings.connect_max_attempts,
    )


def mongo_client(settings: Settings, *, listeners: list[Any] | None = None) -> Any:
    """A connected ``MongoClient`` (retries with the ``connect.*`` backoff)."""
    from mongocdc.sources.mongo.client import connect

    return connect(
        settings.mongodb_connection_string,
        backoff(settings),
        server_selection_timeout_ms=settings.mongodb_server_selection_timeout_ms,
        event_listeners=listeners or [],
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


def field_transforms(settings: Settings) -> Any:
    """``field.exclude.list`` and ``field.renames``, or ``None`` when there are none (the fast path)."""
    from mongocdc.events.transforms import FieldTransforms

    transforms = FieldTransforms.from_settings(settings)
    return transforms if transforms else None


def change_source(settings: Settings, client: Any, rs_name: str | None, primary_watch: Any = None) -> Any:
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
        primary_watch=primary_watch,
        transforms=field_transforms(settings),
    )


def snapshot_include(settings: Settings) -> Callable[[str, str], bool]:
    """Which captured collections a snapshot copies (``snapshot.include.collection.list`` narrows them)."""
    patterns = settings.snapshot_include_collection_list
    if not patterns:
        return settings.is_collection_included
    import re

    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]

    def include(db: str, coll: str) -> bool:
        ns = f"{db}.{coll}"
        return settings.is_collection_included(db, coll) and any(p.fullmatch(ns) for p in compiled)

    return include


@contextlib.contextmanager
def connector_task(
    settings: Settings,
    *,
    stop: threading.Event,
    on_status: Callable[[StreamStats], None] | None = None,
    on_progress: ProgressCallback | None = None,
    metrics: Metrics | None = None,
) -> Iterator[ConnectorTask]:
    """The connector task of ``settings`` (snapshot per ``snapshot.mode``, then stream), resources closed on exit.

    Start-up order: configuration checks, the offset store, Kafka (must answer), MongoDB (must
    answer and have an oplog); the change stream and the snapshot scans open inside ``task.run()``.
    """
    from mongocdc.engine.connector import ConnectorTask, TaskOptions
    from mongocdc.sources.mongo.client import PrimaryWatch
    from mongocdc.sources.mongo.scan import CollectionScanner, captured_collections
    from mongocdc.sources.mongo.topology import discover

    envelope = codec(settings)
    with contextlib.ExitStack() as resources:
        store = offset_store(settings)
        resources.callback(store.close)
        sink = kafka_sink(settings)
        resources.callback(sink.close)
        primary_watch = PrimaryWatch()
        client = mongo_client(settings, listeners=[primary_watch])
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
        source = change_source(settings, client, topology.replica_set, primary_watch)
        include = snapshot_include(settings)
        fetch_size = settings.snapshot_fetch_size
        transforms = field_transforms(settings)

        def scanners() -> list[CollectionScanner]:
            pairs = captured_collections(
                client, scope=settings.capture_scope, target=settings.capture_target, include=include
            )
            return [
                CollectionScanner(client, db, coll, fetch_size=fetch_size, filter=settings.snapshot_filter(db, coll))
                for db, coll in pairs
            ]

        yield ConnectorTask(
            source=source,
            current_position=source.current_position,
            scanners=scanners,
            sink=sink,
            store=store,
            codec=envelope,
            options=TaskOptions(
                connector=settings.name,
                partition=topology.partition,
                rs=topology.replica_set,
                snapshot_mode=settings.snapshot_mode,
                snapshot_max_threads=settings.snapshot_max_threads,
                flush_interval_s=settings.offset_flush_interval_ms / 1000,
                tombstones_on_delete=settings.tombstones_on_delete,
                skipped_operations=frozenset(settings.skipped_operations),
                oversize_mode=settings.cursor_oversize_handling_mode,
                oversize_threshold=settings.cursor_oversize_skip_threshold,
            ),
            stop=stop,
            transform=transforms.apply_document if transforms else None,
            on_status=on_status,
            on_progress=on_progress,
            metrics=metrics,
        )
