"""Builds a task's signals and incremental snapshots (``signal.*``, ``incremental.snapshot.*``,
``notification.*``) from ``Settings``: ``mongocdc/engine/incremental_snapshot.py`` with the signal collection, the
Kafka signal channel and the notification channels.

Kept apart from ``wiring.py``; ``wiring.connector_task`` gives each task the snapshotter built here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mongocdc.wiring import snapshot_include

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.engine.incremental_snapshot import IncrementalSnapshotter
    from mongocdc.sinks.kafka.notifications import NotificationLog, NotificationSink
    from mongocdc.sinks.kafka.producer import KafkaSink
    from mongocdc.sources.mongo.client import Client

log = logging.getLogger("mongocdc.wiring")


def incremental_snapshotter(settings: Settings, client: Client, sink: KafkaSink) -> IncrementalSnapshotter | None:
    """Signals and incremental snapshots for one task, or ``None`` without ``signal.data.collection``."""
    from mongocdc.engine.incremental_snapshot import IncrementalSnapshotter
    from mongocdc.sources.mongo.scan import QueryReader, captured_collections
    from mongocdc.sources.mongo.signal_collection import SignalCollectionWriter

    channels = set(settings.signal_enabled_channels)
    if not settings.signal_data_collection:
        if "kafka" in channels:
            log.warning("signal.data.collection is not set: incremental snapshots need it for their watermarks")
        return None
    kafka_signals = None
    if "kafka" in channels:
        from mongocdc.kafka.config import signal_client_config
        from mongocdc.sources.kafka.signals import KafkaSignalChannel, signal_topic

        kafka_signals = KafkaSignalChannel(
            signal_client_config(settings),
            signal_topic(settings),
            settings.signal_kafka_groupId,
            settings.require("topic.prefix"),
        )
    notifiers: list[NotificationLog | NotificationSink] = []
    if "log" in settings.notification_enabled_channels:
        from mongocdc.sinks.kafka.notifications import NotificationLog

        notifiers.append(NotificationLog())
    if "sink" in settings.notification_enabled_channels:
        from mongocdc.sinks.kafka.notifications import NotificationSink

        notifiers.append(
            NotificationSink(
                settings.kafka_client,
                settings.require("notification.sink.topic.name"),
                schemas_enable=settings.record_format.schemas_enable,
                sink=sink,
            )
        )

    def notify(kind: str, *, signal_id: str | None = None, **data: object) -> None:
        from mongocdc.events.notifications import incremental_snapshot

        note = incremental_snapshot(kind, settings.name, signal_id=signal_id, **data)  # type: ignore[arg-type]
        for notifier in notifiers:
            notifier.notify(note)

    include = snapshot_include(settings)

    def captured() -> list[str]:
        pairs = captured_collections(
            client, scope=settings.capture_scope, target=settings.capture_target, include=include
        )
        return [f"{db}.{coll}" for db, coll in pairs]

    return IncrementalSnapshotter(
        reader=QueryReader(client),
        writer=SignalCollectionWriter(client, settings.signal_data_collection),
        captured=captured,
        chunk_size=settings.incremental_snapshot_chunk_size,
        strategy=settings.incremental_snapshot_watermarking_strategy,
        kafka_signals=kafka_signals,
        signal_poll_interval_s=settings.signal_poll_interval_ms / 1000,
        notify=notify,
    )
