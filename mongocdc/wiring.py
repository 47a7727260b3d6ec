"""Composition root: settings → concrete source, sink, offset store and codec."""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, assert_never

from mongocdc.config import Settings
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.offsets.base import OffsetStore
from mongocdc.retry import Backoff

if TYPE_CHECKING:
    from mongocdc.engine.connector import ConnectorGroup, ConnectorTask
    from mongocdc.engine.exactly_once import TransactionBoundary
    from mongocdc.engine.metrics import Metrics
    from mongocdc.engine.snapshot import ProgressCallback
    from mongocdc.engine.streaming import StreamStats
    from mongocdc.events.connect.chain import RecordPipeline
    from mongocdc.events.position import Position
    from mongocdc.events.transforms import FieldTransforms
    from mongocdc.sinks.kafka.producer import KafkaSink
    from mongocdc.sources.mongo.client import Client, ClientOptions, PrimaryWatch
    from mongocdc.sources.mongo.stream import MongoChangeStreamSource
    from mongocdc.sources.mongo.topology import Shard
    from mongocdc.sources.read_ahead import ReadAheadSource

log = logging.getLogger("mongocdc.wiring")


ONE_SHOT_TUNING = "--timeout sets how long the one attempt waits"
"""The hint's last words when a one-shot command's one attempt failed."""


def backoff(settings: Settings) -> Backoff:
    """The ``connect.*`` retries; one attempt for a one-shot command (``Settings.one_shot_timeout_s``)."""
    if settings.one_shot_timeout_s is not None:
        return Backoff.once(ONE_SHOT_TUNING)
    return Backoff(
        initial_delay_s=settings.connect_backoff_initial_delay_ms / 1000,
        max_delay_s=settings.connect_backoff_max_delay_ms / 1000,
        max_attempts=settings.connect_max_attempts,
    )


def request_timeout_s(settings: Settings) -> float:
    """How long one attempt to reach Kafka (and each request of a one-shot command) may take:
    ``connect.timeout.ms``, or a one-shot command's ``--timeout``."""
    if settings.one_shot_timeout_s is not None:
        return settings.one_shot_timeout_s
    return settings.connect_timeout_ms / 1000


def client_options(settings: Settings) -> ClientOptions:
    """The MongoDB driver settings of ``mongodb.user``, ``mongodb.ssl.*`` and the ``mongodb.*.ms`` timeouts."""
    from mongocdc.sources.mongo.client import ClientOptions

    connect_ms = settings.mongodb_connect_timeout_ms
    selection_ms = settings.mongodb_server_selection_timeout_ms
    if settings.one_shot_timeout_s is not None:  # one attempt of --timeout: server selection bounds it
        selection_ms = max(1, round(settings.one_shot_timeout_s * 1000))
        connect_ms = selection_ms if connect_ms == 0 else min(connect_ms, selection_ms)
    return ClientOptions(
        user=settings.mongodb_user,
        password=settings.mongodb_password,
        auth_source=settings.mongodb_authsource,
        tls=settings.mongodb_ssl_enabled,
        tls_allow_invalid_hostnames=settings.mongodb_ssl_invalid_hostname_allowed,
        tls_ca_file=settings.mongodb_ssl_truststore,
        tls_certificate_key_file=settings.mongodb_ssl_keystore,
        tls_certificate_key_file_password=settings.mongodb_ssl_keystore_password,
        connect_timeout_ms=connect_ms,
        socket_timeout_ms=settings.mongodb_socket_timeout_ms,
        server_selection_timeout_ms=selection_ms,
        heartbeat_frequency_ms=settings.mongodb_heartbeat_frequency_ms,
    )


def mongo_client(settings: Settings, *, listeners: list[PrimaryWatch] | None = None) -> Client:
    """A connected ``MongoClient`` (retries with the ``connect.*`` backoff)."""
    from mongocdc.sources.mongo.client import connect

    return connect(
        settings.mongodb_connection_string,
        backoff(settings),
        client_options=client_options(settings),
        event_listeners=listeners or [],
    )


def offset_store(
    settings: Settings, *, create: bool = True, owner: bool = False, task: str | None = None
) -> OffsetStore:
    """The store ``offset.storage`` names, ready to use.

    ``kafka``: the cluster must answer (retries with the ``connect.*`` backoff) and the topic
    ``offset.storage.topic`` is created compacted when absent (with ``create=False``: by the first
    write, so a reader changes nothing), or refused when it is not compacted. ``sqlite``: the file
    is created when absent (with ``create=False``: by the first write). ``store.exists`` says whether
    a store opened with ``create=False`` was there.

    ``owner``: the connector ``settings.name`` runs on the store (``stream``, ``snapshot``), one instance of it
    at a time. ``sqlite`` takes the connector's lock (``FencedError``, exit 7, when another process holds it);
    ``kafka`` registers the connector's transactional producer, which fences an older instance; with ``task`` (a
    source partition, in a worker group) the task's own, which fences the worker that held the task before.
    """
    if settings.offset_storage == "sqlite":
        from mongocdc.offsets.sqlite import SqliteOffsetStore

        return SqliteOffsetStore(
            settings.offset_storage_file_filename, create=create, owner=settings.name if owner else None
        )
    if settings.offset_storage == "kafka":
        from mongocdc.offsets.kafka import KafkaOffsetStore

        store = KafkaOffsetStore(
            settings.kafka_client,
            settings.offset_storage_topic,
            partitions=settings.offset_storage_partitions,
            replication_factor=settings.offset_storage_replication_factor,
            timeout_s=request_timeout_s(settings),
            owner=settings.name if owner else None,
            task=task,
        )
        try:
            store.connect(backoff(settings), create_topic=create)
        except BaseException:
            store.close()
            raise
        return store
    assert_never(settings.offset_storage)


def codec(settings: Settings) -> EnvelopeCodec:
    """The codec of the connector's records: with a record pipeline (transforms, or converters the codec does not
    write itself) every record is written with its schemas, for the pipeline to read as Debezium's record."""
    return EnvelopeCodec(
        prefix=settings.require("topic.prefix"),
        schemas_enable=settings.record_format.schemas_enable,
        extended_headers=settings.extended_headers_enabled,
    )


def kafka_sink(settings: Settings, *, transactional_id: str | None = None) -> KafkaSink:
    """A producer whose cluster answered (retries with the ``connect.*`` backoff); with ``transactional_id``, a
    transactional one that registered the id (fencing an older producer of it)."""
    from mongocdc.kafka.config import producer_settings
    from mongocdc.sinks.kafka.producer import KafkaSink

    sink = KafkaSink(
        producer_settings(settings),
        creation=settings.topic_creation_rules,
        admin_settings=settings.kafka_client,
        timeout_s=request_timeout_s(settings),
        transactional_id=transactional_id,
        records=record_pipeline(settings),
    )
    sink.connect(backoff(settings), request_timeout_s(settings))
    return sink


def record_pipeline(settings: Settings) -> RecordPipeline | None:
    """The connector's transforms and converters, or ``None`` when the codec writes the records itself
    (``config/records.py``); the converters in force, where they came from, and the chain are logged."""
    records = settings.record_format
    pipeline = records.pipeline()
    log.info("records: %s", records.describe())
    return pipeline


def exactly_once(settings: Settings) -> bool:
    """Whether the connector delivers exactly once: ``exactly.once.support`` requested or required, with the
    offsets in Kafka (``required`` with SQLite is a configuration error, refused when the settings are read;
    ``requested`` with SQLite says so and delivers at least once)."""
    if settings.exactly_once_support == "disabled":
        return False
    if settings.offset_storage != "kafka":
        log.warning(
            "exactly.once.support is requested, but the offsets are in SQLite (offset.storage=%s), which cannot "
            "take part in a Kafka transaction: delivering at least once after a crash. Set offset.storage: kafka "
            "for exactly-once delivery",
            settings.offset_storage,
        )
        return False
    return True


def transaction_boundary(settings: Settings) -> TransactionBoundary:
    """``transaction.boundary`` (and its interval, ``offset.flush.interval.ms`` when unset) for the engine."""
    from mongocdc.engine.exactly_once import TransactionBoundary

    interval_ms = settings.transaction_boundary_interval_ms or settings.offset_flush_interval_ms
    return TransactionBoundary(
        settings.transaction_boundary,
        settings.max_batch_size,
        interval_ms / 1000,
        settings.transaction_boundary_linger_ms / 1000,
    )


def exactly_once_task(
    settings: Settings, store: OffsetStore, partition: str, metrics: Metrics
) -> tuple[KafkaSink, OffsetStore]:
    """The transactional sink and offset store of one exactly-once task (``transactional.id``
    ``mongocdc-<name>-<partition>``; its registration fences an older owner of the task)."""
    from mongocdc.offsets.kafka import KafkaOffsetStore
    from mongocdc.sinks.kafka.exactly_once import TransactionalOffsets, task_transactional_id

    assert isinstance(store, KafkaOffsetStore)
    transactional_id = task_transactional_id(settings.name, partition)
    sink = kafka_sink(settings, transactional_id=transactional_id)
    log.info("%s/%s: exactly-once delivery (transactional.id %s)", settings.name, partition, transactional_id)
    offsets = TransactionalOffsets(
        store,
        sink,
        on_commit=lambda records, seconds: metrics.record_transaction(partition, records, seconds),
        on_abort=lambda: metrics.record_transaction_aborted(partition),
    )
    return sink, offsets


def unmatched_patterns(patterns: Iterable[str], names: Iterable[str]) -> list[str]:
    """The include-list regular expressions that match none of ``names`` (full, case-insensitive match)."""
    import re

    present = list(names)
    return [p for p in patterns if not any(re.fullmatch(p, n, re.IGNORECASE) for n in present)]


def warn_unmatched_includes(settings: Settings, client: Client) -> None:
    """Say clearly when database.include.list names a database that does not exist (yet)."""
    from mongocdc.sources.mongo.scan import database_names

    if not settings.database_include_list:
        return
    names = database_names(client)
    if names is None:
        return
    for pattern in unmatched_patterns(settings.database_include_list, names):
        log.warning(
            "database.include.list entry %r matches no database on this deployment (yet); "
            "its changes are captured once such a database is written to. Existing databases: %s",
            pattern,
            ", ".join(sorted(names)) or "none",
        )


def field_transforms(settings: Settings) -> FieldTransforms | None:
    """``field.exclude.list`` and ``field.renames``, or ``None`` when there are none (the fast path)."""
    from mongocdc.events.transforms import FieldTransforms

    transforms = FieldTransforms.from_settings(settings)
    return transforms if transforms else None


def change_source(
    settings: Settings,
    client: Client,
    rs_name: str | None,
    primary_watch: PrimaryWatch | None = None,
    *,
    stop: threading.Event | None = None,
) -> ReadAheadSource[MongoChangeStreamSource]:
    """The change stream source of one partition, read one batch ahead of the streaming loop.

    ``stop`` (the task's) is honoured while the stream retries a server that is gone: the streaming loop is not held
    up by the reader, and the retries' waits end (their attempts fail at once on the released client).

    With a capture mode that relies on stored pre- or post-images, each captured collection
    without ``changeStreamPreAndPostImages`` gets a warning at start naming the ``collMod``
    command that enables it (instead of ``before: null``, or a failing stream, later).
    """
    from mongocdc.config.queries import parse_cursor_pipeline
    from mongocdc.sources.mongo.preimages import needs_images, warn_missing_pre_images
    from mongocdc.sources.mongo.scan import captured_collections
    from mongocdc.sources.mongo.stream import MongoChangeStreamSource
    from mongocdc.sources.read_ahead import ReadAheadSource

    full_update_type = settings.capture_mode_full_update_type
    if needs_images(settings.capture_mode, full_update_type):
        namespaces = captured_collections(
            client,
            scope=settings.capture_scope,
            target=settings.capture_target,
            include=settings.is_collection_included,
        )
        warn_missing_pre_images(client, namespaces, post_images=full_update_type == "post_image")
    stream = MongoChangeStreamSource(
        client,
        connector=settings.name,
        scope=settings.capture_scope,
        target=settings.capture_target,
        capture_mode=settings.capture_mode,
        poll_interval_ms=settings.poll_interval_ms,
        max_await_time_ms=settings.cursor_max_await_time_ms or None,
        batch_size=settings.max_batch_size,
        rs_name=rs_name,
        backoff=backoff(settings),
        sleep=time.sleep if stop is None else _stop_aware_sleep(stop),
        include=settings.is_collection_included,
        primary_watch=primary_watch,
        transforms=field_transforms(settings),
        signal_collection=settings.signal_data_collection,
        full_update_type=full_update_type,
        pipeline=parse_cursor_pipeline(settings.cursor_pipeline) if settings.cursor_pipeline else (),
        pipeline_order=settings.cursor_pipeline_order,
        oversize_mode=settings.cursor_oversize_handling_mode,
    )
    # Read one batch ahead of the streaming loop: the server's next getMore overlaps with our work.
    return ReadAheadSource(
        stream, limit=settings.max_batch_size, name=f"change stream {rs_name or settings.name}", stop=stop
    )


def _stop_aware_sleep(stop: threading.Event) -> Callable[[float], None]:
    """A retry's wait that ends when ``stop`` is set."""

    def sleep(seconds: float) -> None:
        stop.wait(seconds)

    return sleep


def snapshot_fetch_size(settings: Settings) -> int:
    """Documents per snapshot chunk: ``snapshot.fetch.size``, 0 (Debezium's "the server chooses") the default."""
    from mongocdc.config.properties import DEFAULT_SNAPSHOT_FETCH_SIZE

    return settings.snapshot_fetch_size or DEFAULT_SNAPSHOT_FETCH_SIZE


def heartbeat_topic(settings: Settings) -> str:
    """``topic.heartbeat.name``, else ``<topic.heartbeat.prefix>.<topic.prefix>``."""
    return settings.topic_heartbeat_name or f"{settings.topic_heartbeat_prefix}.{settings.topic_prefix}"


def start_topics(settings: Settings, client: Client) -> list[str]:
    """The topics the connector writes that are known at start: each captured collection's, the heartbeat topic
    (with ``heartbeat.interval.ms``) and the transaction topic (with ``provide.transaction.metadata``)."""
    from mongocdc.events.envelope import topic_for
    from mongocdc.sources.mongo.scan import captured_collections

    prefix = settings.require("topic.prefix")
    namespaces = captured_collections(
        client, scope=settings.capture_scope, target=settings.capture_target, include=settings.is_collection_included
    )
    topics = [topic_for(prefix, db, collection) for db, collection in namespaces]
    if settings.heartbeat_interval_ms > 0:
        topics.append(heartbeat_topic(settings))
    if settings.provide_transaction_metadata:
        topics.append(transaction_topic(settings))
    return topics


def transaction_topic(settings: Settings) -> str:
    """``<topic.prefix>.<topic.transaction>``: where BEGIN and END records go."""
    return f"{settings.topic_prefix}.{settings.topic_transaction}"


def start_position(settings: Settings) -> Position | None:
    """Where streaming starts without a stored offset (``capture.start.op.time``), or ``None``: the present."""
    if settings.capture_start_op_time < 0:
        return None
    from mongocdc.events.position import Position

    return Position(settings.capture_start_op_time >> 32, settings.capture_start_op_time & 0xFFFFFFFF)


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
def connector(
    settings: Settings,
    *,
    stop: threading.Event,
    on_status: Callable[[StreamStats], None] | None = None,
    on_progress: ProgressCallback | None = None,
    metrics: Metrics | None = None,
    estimate_after_s: float = 5.0,
) -> Iterator[ConnectorGroup]:
    """The connector of ``settings``: one task per source partition, resources closed on exit.

    A replica set, or a sharded cluster streamed through mongos (``mongodb.connection.mode=sharded``),
    is one partition; with ``mongodb.connection.mode=replica_set`` each shard's replica set, discovered
    from the cluster's shard list, is a partition of its own, and shards added later join.

    Start-up order: configuration checks, the offset store, Kafka (must answer), MongoDB (must
    answer and have an oplog); change streams and snapshot scans open inside ``run()``.

    ``estimate_after_s``: how far into a snapshot its collections are counted for ``on_progress`` and the
    metrics (``SnapshotOptions.estimate_after_s``).
    """
    from mongocdc.engine.connector import ConnectorGroup
    from mongocdc.engine.metrics import Metrics
    from mongocdc.wiring_plan import TaskCommon, connector_plan

    envelope = codec(settings)
    metrics = metrics or Metrics(settings.name)
    with contextlib.ExitStack() as resources:
        store = offset_store(settings, owner=True)  # one instance per connector: before anything is read
        resources.callback(store.close)
        sink = kafka_sink(settings)
        resources.callback(sink.close)
        plan = resources.enter_context(connector_plan(settings))
        warn_unmatched_includes(settings, plan.seed)
        plan.require_start_topics(sink)
        common = TaskCommon(envelope, metrics, exactly_once(settings), on_status, on_progress, estimate_after_s)
        task_ids = itertools.count()

        def shard_task(shard: Shard) -> ConnectorTask:
            """A task of its own for the shard's replica set, with a stop event of its own (the group ends it
            when the shard leaves)."""
            source = plan.shard_source(shard, resources)
            return plan.task(
                source, next(task_ids), common, store=store, stop=threading.Event(), resources=resources, sink=sink
            )

        if plan.per_shard:
            group = shard_group(settings, plan.seed, plan.shards, shard_task, stop)
        else:
            log.info(
                "capturing %s %s (%s scope) into %s as %s.<db>.<collection>",
                plan.topology.kind.replace("_", " "),
                plan.topology.replica_set or "",
                settings.capture_scope,
                settings.kafka_client.get("bootstrap.servers"),
                settings.topic_prefix,
            )
            source = plan.seed_source()
            task = plan.task(source, next(task_ids), common, store=store, stop=stop, resources=resources, sink=sink)
            group = ConnectorGroup({source.partition: task}, stop)
        yield group


def shard_group(
    settings: Settings,
    seed: Client,
    shards: Sequence[Shard],
    shard_task: Callable[[Shard], ConnectorTask],
    stop: threading.Event,
) -> ConnectorGroup:
    """The tasks of a cluster captured per shard replica set (``mongodb.connection.mode=replica_set``).

    One task per shard replica set (``shard_task`` gives each a stop event of its own), and a
    ``ShardWatcher`` that the group polls every ``mongodb.poll.interval.ms``, reading the shard list
    through ``seed``: a shard that joins gets a task, the task of a shard that leaves is ended.
    """
    from mongocdc.engine.connector import ConnectorGroup
    from mongocdc.sources.mongo.shards import ShardWatcher, replica_set_shards

    interval_s = settings.mongodb_poll_interval_ms / 1000
    log.info(
        "sharded cluster, one stream per shard replica set: %s (shards that join or leave are looked for every %g s)",
        ", ".join(str(shard.replica_set) for shard in shards),
        interval_s,
    )

    def joined(shard: Shard) -> None:
        group.add(str(shard.replica_set), shard_task(shard))

    def left(shard: Shard) -> None:
        group.end(str(shard.replica_set))

    watcher = ShardWatcher(lambda: replica_set_shards(seed), interval_s, joined, left, known=shards)
    group = ConnectorGroup({str(shard.replica_set): shard_task(shard) for shard in shards}, stop, watcher=watcher)
    return group


def connector_task(
    settings: Settings,
    client: Client,
    rs: str | None,
    partition: str,
    primary_watch: PrimaryWatch,
    *,
    sink: KafkaSink,
    store: OffsetStore,
    envelope: EnvelopeCodec,
    stop: threading.Event,
    on_status: Callable[[StreamStats], None] | None,
    on_progress: ProgressCallback | None,
    metrics: Metrics,
    estimate_after_s: float = 5.0,
) -> ConnectorTask:
    """The task of one source partition (a replica set, or the cluster through mongos); its offsets are keyed by
    ``topic.prefix`` as Kafka Connect keys Debezium's (``ServerOffsets``)."""
    from mongocdc.engine.connector import ConnectorTask, TaskOptions
    from mongocdc.engine.source_offset import ServerOffsets
    from mongocdc.engine.streaming import StreamOptions
    from mongocdc.sources.mongo.scan import CollectionScanner, captured_collections
    from mongocdc.wiring_signals import incremental_snapshotter

    source = change_source(settings, client, rs, primary_watch, stop=stop)
    include = snapshot_include(settings)
    transforms = field_transforms(settings)

    def scanners(only: Sequence[str] | None = None) -> list[CollectionScanner]:
        """The initial snapshot's collections, or (blocking snapshots) those of ``only``."""
        pairs = captured_collections(
            client, scope=settings.capture_scope, target=settings.capture_target, include=include
        )
        return [
            CollectionScanner(
                client, db, coll, fetch_size=snapshot_fetch_size(settings), filter=settings.snapshot_filter(db, coll)
            )
            for db, coll in pairs
            if only is None or f"{db}.{coll}" in only
        ]

    return ConnectorTask(
        source=source,
        current_position=source.inner.current_position,
        scanners=scanners,
        sink=sink,
        store=ServerOffsets(store, settings.require("topic.prefix")),
        codec=envelope,
        options=TaskOptions(
            StreamOptions(
                connector=settings.name,
                partition=partition,
                flush_interval_s=settings.offset_flush_interval_ms / 1000,
                tombstones_on_delete=settings.tombstones_on_delete,
                skipped_operations=frozenset(settings.skipped_operations),
                oversize_mode=settings.cursor_oversize_handling_mode,
                oversize_threshold=settings.cursor_oversize_skip_threshold,
                heartbeat_interval_s=settings.heartbeat_interval_ms / 1000,
                heartbeat_topic=heartbeat_topic(settings),
                transaction_topic=(transaction_topic(settings) if settings.provide_transaction_metadata else ""),
                transaction_idle_end_ms=settings.transaction_end_idle_ms or None,
                transaction_boundary=transaction_boundary(settings),
            ),
            rs=rs,
            snapshot_mode=settings.snapshot_mode,
            snapshot_max_threads=settings.snapshot_max_threads,
            snapshot_delay_s=settings.snapshot_delay_ms / 1000,
            streaming_delay_s=settings.streaming_delay_ms / 1000,
            start_at=start_position(settings),
            snapshot_estimate_after_s=estimate_after_s,
        ),
        stop=stop,
        transform=transforms.apply_document if transforms else None,
        on_status=on_status,
        on_progress=on_progress,
        metrics=metrics,
        snapshotter=incremental_snapshotter(settings, client, sink),
    )


def estimated_counts(settings: Settings, namespaces: Iterable[str]) -> dict[str, int | None]:
    """Each collection's estimated document count (``None`` when MongoDB does not say), for progress displays."""
    from mongocdc.sources.mongo.scan import QueryReader

    client = mongo_client(settings)
    try:
        reader = QueryReader(client)
        return {ns: reader.estimated_count(ns) for ns in namespaces}
    finally:
        client.close()
