"""``Settings``: the effective configuration, one typed attribute per property.

The fields of ``Settings`` are the property registry. Each is declared with
``setting(name, type, default, doc, ...)`` and ``PROPERTIES`` is collected
from them, so adding a property is adding one field here (the attribute name
is the property name in snake case; an import-time check keeps them so).
The README's configuration reference is rendered from the same fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from mongocdc.config.frozen_mapping import FrozenMapping
from mongocdc.config.namespaces import NamespaceFilter
from mongocdc.config.problems import config_error, consistency_problems, value_problem
from mongocdc.config.properties import (
    DEFAULT_SNAPSHOT_FETCH_SIZE,
    DEFAULT_TOPIC_NAMING_STRATEGY,
    PROPERTY_METADATA_KEY,
    REPLICATION_FACTOR_ACCEPTED,
    CaptureMode,
    CaptureScope,
    ConnectionMode,
    ExactlyOnceSupport,
    FiltersMatchMode,
    Flag,
    FullUpdateType,
    OffsetStorage,
    OversizeHandlingMode,
    PipelineOrder,
    Property,
    SnapshotMode,
    TransactionBoundary,
    WatermarkingStrategy,
    check_auth_source,
    check_bootstrap_servers,
    check_connection_string,
    check_namespace,
    check_rename_format,
    check_replication_factor,
    check_start_op_time,
    check_topic_name,
    check_topic_naming_strategy,
    check_topic_prefix,
    choice,
    env_var_for,
    field_path_problem,
    field_rename_problem,
    namespace_problem,
    setting,
)
from mongocdc.config.provenance import DEFAULT as DEFAULT_SOURCE
from mongocdc.config.provenance import Provenance
from mongocdc.config.queries import (
    FILTER_OVERRIDE_PREFIX,
    check_cursor_pipeline,
    filter_override_list_problems,
    filter_override_problem,
    is_filter_override_key,
    parse_filter,
)
from mongocdc.config.records import RecordFormat, is_record_key, record_format
from mongocdc.config.records import problems as record_problems
from mongocdc.config.redaction import redact_value
from mongocdc.config.suggestions import did_you_mean
from mongocdc.config.topic_creation import PREFIX as TOPIC_CREATION_PREFIX
from mongocdc.config.topic_creation import TopicCreation, is_topic_creation_key, parse_topic_creation
from mongocdc.config.values import BoolType, CommaListType, FlagSetType, IntType, RegexListType, StringType
from mongocdc.errors import ConfigError

KAFKA_PREFIX: Final = "kafka."
"""Properties under this prefix go to librdkafka without it (``kafka.security.protocol`` → ``security.protocol``)."""

SRC_KAFKA_PREFIX: Final = "src.kafka."
DEST_KAFKA_PREFIX: Final = "dest.kafka."
"""``src.kafka.*`` / ``dest.kafka.*``: librdkafka settings of the source / target cluster of ``replicate``."""

CLIENT_PREFIXES: Final = {
    KAFKA_PREFIX: "kafka_client",
    SRC_KAFKA_PREFIX: "src_kafka_client",
    DEST_KAFKA_PREFIX: "dest_kafka_client",
}
"""Pass-through prefix → the ``Settings`` mapping its keys go to (without the prefix)."""


def client_prefix(name: str) -> str | None:
    """The pass-through prefix ``name`` starts with (and has a key after), or ``None``."""
    for prefix in CLIENT_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return prefix
    return None


_STRING = StringType()
_BOOL = BoolType()
_REGEX_LIST = RegexListType()
_NON_NEGATIVE = IntType(minimum=0)
_POSITIVE = IntType(minimum=1)
_PORT = IntType(minimum=0, maximum=65535)
_REPLICATION_FACTOR = IntType(minimum=-(2**31), accepted=REPLICATION_FACTOR_ACCEPTED)
_NAMESPACE_LIST = CommaListType("<database>.<collection>", namespace_problem)
_FIELD_PATH_LIST = CommaListType("<database>.<collection>.<field path>", field_path_problem)
_FIELD_RENAME_LIST = CommaListType("<database>.<collection>.<field path>:<new name>", field_rename_problem)
_OPERATIONS = FlagSetType(("c", "u", "d", "t"))
_SIGNAL_CHANNELS = FlagSetType(("source", "kafka"))
_NOTIFICATION_CHANNELS = FlagSetType(("log", "sink"))


@dataclass(frozen=True, kw_only=True, repr=False)
class Settings:
    """Effective mongocdc settings. Build them with ``load_settings``; every instance is valid.

    Attributes are the Debezium property names in snake case, plus
    ``kafka_client``: the librdkafka configuration (every ``kafka.*``
    property without the prefix, ``bootstrap.servers`` included).
    """

    # --- connector -----------------------------------------------------------
    name: str = setting(
        "name",
        _STRING,
        "mongocdc",
        "Logical name of the connector; its offsets are stored under it, so connectors sharing an offset store "
        "need different names.",
        flag=Flag("--name", "Connector name the offsets are kept under (name)."),
    )
    mongodb_connection_string: str | None = setting(
        "mongodb.connection.string",
        _STRING,
        None,
        "MongoDB connection string (`mongodb://…` or `mongodb+srv://…`) of the replica set or mongos router to "
        "capture; required by capture commands, its password is never printed.",
        secret=True,
        validator=check_connection_string,
        flag=Flag("--connection-string", "MongoDB connection string (mongodb.connection.string)."),
    )
    mongodb_user: str | None = setting(
        "mongodb.user",
        _STRING,
        None,
        "MongoDB user to authenticate as, when the connection string names none (credentials in the connection "
        "string win, as in Debezium).",
    )
    mongodb_password: str | None = setting(
        "mongodb.password",
        _STRING,
        None,
        "Password of `mongodb.user`; never printed.",
        secret=True,
    )
    mongodb_authsource: str = setting(
        "mongodb.authsource",
        _STRING,
        "admin",
        "Database holding `mongodb.user`'s credentials (the connection string's `authSource` applies to its own "
        "credentials).",
        validator=check_auth_source,
    )
    mongodb_ssl_enabled: bool = setting(
        "mongodb.ssl.enabled",
        _BOOL,
        False,
        "Connect to MongoDB over TLS, unless the connection string says otherwise (`tls`/`ssl`; `mongodb+srv://` "
        "means TLS).",
    )
    mongodb_ssl_invalid_hostname_allowed: bool = setting(
        "mongodb.ssl.invalid.hostname.allowed",
        _BOOL,
        False,
        "Accept a server certificate whose host name does not match the server's (no protection against "
        "man-in-the-middle attacks).",
    )
    mongodb_ssl_truststore: str | None = setting(
        "mongodb.ssl.truststore",
        _STRING,
        None,
        "PEM file of the CA certificates that sign the servers' certificates, when TLS is on (a Java PKCS12 or JKS "
        "store must be converted to PEM first).",
        path=True,
    )
    mongodb_ssl_keystore: str | None = setting(
        "mongodb.ssl.keystore",
        _STRING,
        None,
        "PEM file with mongocdc's client certificate and private key, for servers that check client certificates "
        "(when TLS is on).",
        path=True,
    )
    mongodb_ssl_keystore_password: str | None = setting(
        "mongodb.ssl.keystore.password",
        _STRING,
        None,
        "Password of the private key in `mongodb.ssl.keystore`, when it is encrypted; never printed.",
        secret=True,
    )
    mongodb_connect_timeout_ms: int = setting(
        "mongodb.connect.timeout.ms",
        _NON_NEGATIVE,
        10000,
        "Milliseconds the MongoDB driver waits for a new connection to open; 0 waits without a limit.",
    )
    mongodb_socket_timeout_ms: int = setting(
        "mongodb.socket.timeout.ms",
        _NON_NEGATIVE,
        0,
        "Milliseconds the MongoDB driver waits for a reply on a connection before it fails; 0 waits without a limit.",
    )
    mongodb_server_selection_timeout_ms: int = setting(
        "mongodb.server.selection.timeout.ms",
        _POSITIVE,
        30000,
        "Milliseconds the MongoDB driver waits for a suitable server before a connection attempt fails.",
    )
    mongodb_heartbeat_frequency_ms: int = setting(
        "mongodb.heartbeat.frequency.ms",
        IntType(minimum=500),
        10000,
        "Milliseconds between the MongoDB driver's checks of each server (elections are noticed by them); at "
        "least 500, the driver's minimum.",
    )
    topic_prefix: str | None = setting(
        "topic.prefix",
        _STRING,
        None,
        "Prefix of every topic name (`<prefix>.<database>.<collection>`) and the logical server name in each "
        "event's source block; required by capture commands.",
        validator=check_topic_prefix,
        flag=Flag("--topic-prefix", "Prefix of every topic name (topic.prefix)."),
    )

    # --- topology --------------------------------------------------------------
    mongodb_connection_mode: ConnectionMode = setting(
        "mongodb.connection.mode",
        choice(ConnectionMode),
        "sharded",
        "How a sharded cluster is captured: `sharded` (one change stream through mongos, in global order) or "
        "`replica_set` (one change stream per shard replica set, discovered from the config servers); a replica "
        "set is always captured with one stream.",
    )
    tasks_max: int = setting(
        "tasks.max",
        _POSITIVE,
        1,
        "Kafka Connect's task limit: accepted and checked, but mongocdc runs one task per replica set (each "
        "shard's in `replica_set` connection mode), each on its own thread, whatever the value.",
    )
    mongodb_poll_interval_ms: int = setting(
        "mongodb.poll.interval.ms",
        _POSITIVE,
        30000,
        "Milliseconds between checks of a sharded cluster's config servers for added or removed shards "
        "(`replica_set` connection mode).",
    )

    # --- what is captured ----------------------------------------------------
    database_include_list: tuple[str, ...] = setting(
        "database.include.list",
        _REGEX_LIST,
        (),
        "Comma-separated regular expressions matched against whole database names (case-insensitive); only "
        "matching databases are captured. Exclusive with `database.exclude.list`.",
    )
    database_exclude_list: tuple[str, ...] = setting(
        "database.exclude.list",
        _REGEX_LIST,
        (),
        "Comma-separated regular expressions matched against whole database names (case-insensitive); matching "
        "databases are not captured. Exclusive with `database.include.list`.",
    )
    collection_include_list: tuple[str, ...] = setting(
        "collection.include.list",
        _REGEX_LIST,
        (),
        "Comma-separated regular expressions matched against whole `<database>.<collection>` names "
        "(case-insensitive); only matching collections are captured. Exclusive with `collection.exclude.list`.",
    )
    collection_exclude_list: tuple[str, ...] = setting(
        "collection.exclude.list",
        _REGEX_LIST,
        (),
        "Comma-separated regular expressions matched against whole `<database>.<collection>` names "
        "(case-insensitive); matching collections are not captured. Exclusive with `collection.include.list`.",
    )
    filters_match_mode: FiltersMatchMode = setting(
        "filters.match.mode",
        choice(FiltersMatchMode),
        "regex",
        "How the database and collection include/exclude lists are read: as regular expressions (`regex`) or as "
        "exact names (`literal`, matched case-sensitively as in Debezium).",
    )
    capture_scope: CaptureScope = setting(
        "capture.scope",
        choice(CaptureScope),
        "deployment",
        "What the change stream watches: the whole `deployment`, or the one `database` or `collection` named by "
        "`capture.target`.",
    )
    capture_target: str | None = setting(
        "capture.target",
        _STRING,
        None,
        "The database (`inventory`) or collection (`inventory.orders`) to watch; required when `capture.scope` "
        "is `database` or `collection`, not allowed otherwise.",
    )
    capture_mode: CaptureMode = setting(
        "capture.mode",
        choice(CaptureMode),
        "change_streams_update_full",
        "What update events carry: the changed fields only (`change_streams`), also the full document looked up "
        "after the update (`…_update_full`), and the document before the change (`…_with_pre_image`, needs "
        "pre-images enabled on the collections).",
    )
    capture_mode_full_update_type: FullUpdateType = setting(
        "capture.mode.full.update.type",
        choice(FullUpdateType),
        "lookup",
        "How the `*_update_full*` capture modes get the document after an update: `lookup` (read the current "
        "document when the event is read; `null` when it was deleted since) or `post_image` (the post-image MongoDB "
        "stored at the update; MongoDB 6.0+ with `changeStreamPreAndPostImages` enabled on the collections).",
    )
    capture_start_op_time: int = setting(
        "capture.start.op.time",
        IntType(minimum=-1),
        -1,
        "Where streaming starts when there is no stored offset and no snapshot runs (`snapshot.mode=no_data`): the "
        "cluster time as a BSON timestamp in one number (seconds << 32 | increment); -1 starts at the present.",
        validator=check_start_op_time,
    )
    snapshot_mode: SnapshotMode = setting(
        "snapshot.mode",
        choice(SnapshotMode, never="no_data"),
        "initial",
        "When existing documents are snapshotted: `initial` (when no offsets exist, then stream), `initial_only` "
        "(then stop), `no_data` or `never` (stream only), `when_needed` (also when the resume position is lost), "
        "`always` (on every start).",
    )
    snapshot_max_threads: int = setting(
        "snapshot.max.threads",
        _POSITIVE,
        1,
        "Number of collections snapshotted in parallel, each by its own thread.",
    )
    snapshot_fetch_size: int = setting(
        "snapshot.fetch.size",
        _NON_NEGATIVE,
        2048,
        "Documents per chunk of a snapshot's `_id`-ordered collection scan; a snapshot resumes after the last "
        f"chunk it completed. 0 (Debezium's default) means {DEFAULT_SNAPSHOT_FETCH_SIZE}.",
    )
    snapshot_delay_ms: int = setting(
        "snapshot.delay.ms",
        _NON_NEGATIVE,
        0,
        "Milliseconds to wait after start before a snapshot begins (only when one runs); a stop request ends the wait.",
    )
    streaming_delay_ms: int = setting(
        "streaming.delay.ms",
        _NON_NEGATIVE,
        0,
        "Milliseconds to wait after a completed snapshot before streaming begins; a stop request ends the wait.",
    )
    snapshot_include_collection_list: tuple[str, ...] = setting(
        "snapshot.include.collection.list",
        _REGEX_LIST,
        (),
        "Comma-separated regular expressions matched against whole `<database>.<collection>` names "
        "(case-insensitive); only matching captured collections are snapshotted. Empty: every captured collection.",
    )
    snapshot_collection_filter_overrides: tuple[str, ...] = setting(
        "snapshot.collection.filter.overrides",
        _NAMESPACE_LIST,
        (),
        "Comma-separated `<database>.<collection>` names whose snapshot reads only the documents matching a "
        "query; each needs `snapshot.collection.filter.overrides.<database>.<collection>` set to the query "
        'document as (extended) JSON, e.g. `{"status": "open"}`.',
    )

    # --- what events carry -----------------------------------------------------
    field_exclude_list: tuple[str, ...] = setting(
        "field.exclude.list",
        _FIELD_PATH_LIST,
        (),
        "Comma-separated `<database>.<collection>.<field>[.<nested>…]` paths removed from event values (also "
        "inside arrays of subdocuments and from update descriptions); `*` in the database or collection part "
        "matches any characters.",
    )
    field_renames: tuple[str, ...] = setting(
        "field.renames",
        _FIELD_RENAME_LIST,
        (),
        "Comma-separated `<database>.<collection>.<field path>:<new name>` renames of fields in event values, "
        "applied in order after `field.exclude.list`; `*` in the database or collection part matches any "
        "characters.",
    )
    skipped_operations: tuple[str, ...] = setting(
        "skipped.operations",
        _OPERATIONS,
        ("t",),
        "Comma-separated operations whose events are not emitted: `c` (inserts), `u` (updates and replaces), "
        "`d` (deletes), `t` (truncates), or `none` to emit every operation.",
    )

    # --- Kafka ---------------------------------------------------------------
    kafka_bootstrap_servers: str = setting(
        "kafka.bootstrap.servers",
        _STRING,
        "localhost:9092",
        "Comma-separated `host:port` list of Kafka brokers. Every other `kafka.*` property goes to librdkafka "
        "without the prefix (`kafka.security.protocol`, `kafka.sasl.username`, …).",
        validator=check_bootstrap_servers,
        flag=Flag(
            "--bootstrap-servers",
            "Kafka bootstrap servers (kafka.bootstrap.servers).",
            aliases=("--bootstrap-server",),  # as kafka-console-consumer and the other Kafka tools spell it
        ),
    )
    topic_naming_strategy: str = setting(
        "topic.naming.strategy",
        _STRING,
        DEFAULT_TOPIC_NAMING_STRATEGY,
        "How topics are named: only Debezium's default strategy (`<topic.prefix>.<database>.<collection>`, "
        "`<topic.prefix>.<topic.transaction>`, `<topic.heartbeat.prefix>.<topic.prefix>`) is available.",
        validator=check_topic_naming_strategy,
    )
    tombstones_on_delete: bool = setting(
        "tombstones.on.delete",
        _BOOL,
        True,
        "Follow each delete event with a tombstone (a null value for the key) so log compaction can drop the key.",
    )
    schemas_enable: bool = setting(
        "schemas.enable",
        _BOOL,
        False,
        'Wrap keys and values in the Kafka Connect JSON envelope `{"schema": …, "payload": …}`, like '
        "JsonConverter with `schemas.enable=true`.",
    )
    worker_config: str | None = setting(
        "worker.config",
        _STRING,
        None,
        "A Kafka Connect worker's properties file (`connect-distributed.properties`) or a Strimzi `KafkaConnect` "
        "resource: its `key.converter`, `value.converter` and `header.converter` (with their settings) apply to the "
        "sides the connector names no converter for, as in Kafka Connect, and its `bootstrap.servers` is Kafka's "
        "address unless `kafka.bootstrap.servers` is set. Without it, a Kafka Connect connector configuration "
        "(one naming `connector.class`) that names no converter gets Connect's default: JsonConverter with schemas.",
        path=True,
        flag=Flag("--worker-config", "The Kafka Connect worker's properties (worker.config).", metavar="FILE"),
    )
    extended_headers_enabled: bool = setting(
        "extended.headers.enabled",
        _BOOL,
        True,
        "Add Debezium's `__debezium.context.*` headers (connector logical name, task id, connector name, run id) to "
        "every data record and tombstone.",
    )
    max_batch_size: int = setting(
        "max.batch.size",
        _POSITIVE,
        2048,
        "Maximum number of change events read from MongoDB and handed to Kafka in one batch.",
    )
    max_queue_size: int | None = setting(
        "max.queue.size",
        _POSITIVE,
        None,
        "Maximum number of change events read but not yet sent to Kafka (librdkafka's "
        "`queue.buffering.max.messages`, unless `kafka.queue.buffering.max.messages` is set); reading waits while "
        "the queue is full. Must be larger than `max.batch.size`. Unset: librdkafka's default (100000).",
    )
    max_queue_size_in_bytes: int = setting(
        "max.queue.size.in.bytes",
        _NON_NEGATIVE,
        0,
        "Maximum bytes of change events read but not yet sent to Kafka (librdkafka's `queue.buffering.max.kbytes`, "
        "rounded up to whole KiB, unless `kafka.queue.buffering.max.kbytes` is set); 0: librdkafka's default.",
    )
    poll_interval_ms: int = setting(
        "poll.interval.ms",
        _POSITIVE,
        500,
        "Milliseconds one change-stream poll waits for new events before returning an empty batch.",
    )
    cursor_max_await_time_ms: int = setting(
        "cursor.max.await.time.ms",
        _NON_NEGATIVE,
        0,
        "Milliseconds the server waits for new changes before answering one read of the change stream "
        "(`maxAwaitTimeMS`); 0 uses `poll.interval.ms`.",
    )
    cursor_pipeline: str | None = setting(
        "cursor.pipeline",
        _STRING,
        None,
        "Aggregation stages added to the change stream, as a JSON array (for example "
        '`[{"$match": {"ns.coll": {"$ne": "audit"}}}]`); events they filter out are never read.',
        validator=check_cursor_pipeline,
    )
    cursor_pipeline_order: PipelineOrder = setting(
        "cursor.pipeline.order",
        choice(PipelineOrder),
        "internal_first",
        "Where `cursor.pipeline` goes in the change stream's pipeline: after mongocdc's own stages "
        "(`internal_first`) or before them (`user_first`).",
    )
    cursor_oversize_handling_mode: OversizeHandlingMode = setting(
        "cursor.oversize.handling.mode",
        choice(OversizeHandlingMode),
        "fail",
        "What happens to a change event larger than MongoDB's 16 MiB BSON limit or `cursor.oversize.skip."
        "threshold`: `fail` (stop with an error), `skip` (log and drop it), `split` (read it in fragments with "
        "`$changeStreamSplitLargeEvent`, MongoDB 6.0.9 or later).",
    )
    cursor_oversize_skip_threshold: int = setting(
        "cursor.oversize.skip.threshold",
        _NON_NEGATIVE,
        0,
        "Bytes of a changed document (before and after images) above which its events are skipped when "
        "`cursor.oversize.handling.mode` is `skip`; 0 uses the Kafka producer's message size limit.",
    )

    # --- offsets -------------------------------------------------------------
    offset_storage: OffsetStorage = setting(
        "offset.storage",
        choice(OffsetStorage),
        "sqlite",
        "Where committed offsets are kept: `sqlite` (a local file, `offset.storage.file.filename`) or `kafka` "
        "(a compacted topic, `offset.storage.topic`).",
    )
    offset_storage_file_filename: str = setting(
        "offset.storage.file.filename",
        _STRING,
        "mongocdc-offsets.db",
        "Path of the SQLite offset database when `offset.storage` is `sqlite`.",
        path=True,
    )
    offset_storage_topic: str = setting(
        "offset.storage.topic",
        _STRING,
        "mongocdc-offsets",
        "Compacted Kafka topic holding the offsets when `offset.storage` is `kafka`.",
        validator=check_topic_name,
    )
    offset_storage_partitions: int = setting(
        "offset.storage.partitions",
        _POSITIVE,
        25,
        "Partitions of `offset.storage.topic` when mongocdc creates it.",
    )
    offset_storage_replication_factor: int = setting(
        "offset.storage.replication.factor",
        _REPLICATION_FACTOR,
        -1,
        "Replication factor of `offset.storage.topic` when mongocdc creates it; -1 uses the broker's "
        "`default.replication.factor`.",
        validator=check_replication_factor,
    )
    offset_flush_interval_ms: int = setting(
        "offset.flush.interval.ms",
        _POSITIVE,
        60000,
        "Milliseconds between offset commits; offsets are also committed on graceful stop, and only up to events "
        "Kafka has acknowledged.",
    )

    # --- exactly once ----------------------------------------------------------
    exactly_once_support: ExactlyOnceSupport = setting(
        "exactly.once.support",
        choice(ExactlyOnceSupport),
        "disabled",
        "Exactly-once delivery (Kafka Connect's KIP-618): `requested` or `required` write each task's change events "
        "and its offset record in one Kafka transaction (`transactional.id` `mongocdc-<name>-<partition>`), so a "
        "`read_committed` consumer sees every change once, even after a crash; needs `offset.storage: kafka` "
        "(`required` refuses to start without it, `requested` then warns and delivers at least once). `disabled`: at "
        "least once after a crash, exactly once after a graceful stop.",
    )
    transaction_boundary: TransactionBoundary = setting(
        "transaction.boundary",
        choice(TransactionBoundary),
        "poll",
        "With exactly-once delivery, where a transaction ends: `poll`, once the connector has handed Kafka every "
        "change read so far, or `max.batch.size` records; `interval`, every `transaction.boundary.interval.ms`.",
    )
    transaction_boundary_linger_ms: int = setting(
        "transaction.boundary.linger.ms",
        _NON_NEGATIVE,
        20,
        "With `transaction.boundary: poll`, how long a task that has handed Kafka every change it read waits for "
        "more before it commits (mongocdc's own, like the producer's `linger.ms`): a backlog is then committed in "
        "transactions of about `max.batch.size` records instead of the few hundred the reader hands over at once "
        "(`bench/README.md`, Exactly once); 0 commits at once.",
    )
    transaction_boundary_interval_ms: int | None = setting(
        "transaction.boundary.interval.ms",
        _POSITIVE,
        None,
        "Milliseconds per transaction with `transaction.boundary: interval`; unset: `offset.flush.interval.ms`.",
    )

    # --- connection retries --------------------------------------------------
    connect_backoff_initial_delay_ms: int = setting(
        "connect.backoff.initial.delay.ms",
        _POSITIVE,
        1000,
        "Milliseconds before the first retry of a failed MongoDB or Kafka connection; the delay doubles on each retry.",
    )
    connect_backoff_max_delay_ms: int = setting(
        "connect.backoff.max.delay.ms",
        _POSITIVE,
        120000,
        "Upper bound in milliseconds of the delay between connection retries.",
    )
    connect_max_attempts: int = setting(
        "connect.max.attempts",
        _POSITIVE,
        16,
        "Connection attempts before mongocdc gives up and exits with code 4.",
    )
    connect_timeout_ms: int = setting(
        "connect.timeout.ms",
        _POSITIVE,
        10000,
        "Milliseconds one attempt to reach the Kafka cluster at start-up may take before it is retried.",
    )

    # --- heartbeats and transactions -----------------------------------------
    heartbeat_interval_ms: int = setting(
        "heartbeat.interval.ms",
        _NON_NEGATIVE,
        0,
        "Milliseconds between heartbeat messages, which keep offsets moving while the captured collections are "
        "quiet; 0 disables heartbeats.",
    )
    topic_heartbeat_prefix: str = setting(
        "topic.heartbeat.prefix",
        _STRING,
        "__debezium-heartbeat",
        "Prefix of the heartbeat topic, which is named `<topic.heartbeat.prefix>.<topic.prefix>`.",
        validator=check_topic_name,
    )
    topic_heartbeat_name: str | None = setting(
        "topic.heartbeat.name",
        _STRING,
        None,
        "Full name of the heartbeat topic, replacing `<topic.heartbeat.prefix>.<topic.prefix>` (for a topic shared "
        "by several connectors).",
        validator=check_topic_name,
    )
    provide_transaction_metadata: bool = setting(
        "provide.transaction.metadata",
        _BOOL,
        False,
        "Add a transaction block to events written in a multi-document transaction and emit BEGIN and END "
        "markers to the transaction topic.",
    )
    transaction_end_idle_ms: int = setting(
        "transaction.end.idle.ms",
        _NON_NEGATIVE,
        0,
        "mongocdc only: end an open transaction (its END record) after the change stream was idle this many "
        "milliseconds, or at a control event such as `drop`, instead of when the next change arrives; 0 (the "
        "default) is Debezium's behaviour. END then carries the transaction's last `source.ts_ms`.",
    )
    topic_transaction: str = setting(
        "topic.transaction",
        _STRING,
        "transaction",
        "Suffix of the transaction metadata topic, which is named `<topic.prefix>.<topic.transaction>`.",
        validator=check_topic_name,
    )

    # --- signals, incremental snapshots and notifications -------------------------
    signal_data_collection: str | None = setting(
        "signal.data.collection",
        _STRING,
        None,
        "The `<database>.<collection>` signalling collection: the `source` channel reads signals inserted into it, "
        "and incremental snapshots write their open and close watermarks to it; required for incremental snapshots.",
        validator=check_namespace,
    )
    signal_enabled_channels: tuple[str, ...] = setting(
        "signal.enabled.channels",
        _SIGNAL_CHANNELS,
        ("source",),
        "Comma-separated channels signals are read from: `source` (documents inserted into `signal.data.collection`) "
        "and `kafka` (records keyed by `topic.prefix` in `signal.kafka.topic`), or `none`.",
    )
    signal_kafka_topic: str | None = setting(
        "signal.kafka.topic",
        _STRING,
        None,
        "Kafka topic of the `kafka` signal channel (one partition is read); unset: `<topic.prefix>-signal`.",
        validator=check_topic_name,
    )
    signal_kafka_bootstrap_servers: str | None = setting(
        "signal.kafka.bootstrap.servers",
        _STRING,
        None,
        "Comma-separated `host:port` list of the Kafka brokers holding `signal.kafka.topic`; unset: "
        "`kafka.bootstrap.servers` (the other `kafka.*` client settings apply either way).",
        validator=check_bootstrap_servers,
    )
    signal_kafka_groupId: str = setting(  # the attribute follows the Debezium name's camel case
        "signal.kafka.groupId",
        _STRING,
        "kafka-signal",
        "Consumer group id under which the `kafka` signal channel commits the signals it has handled. Where a task "
        "reads on from is kept in its own offset (`signal_offsets`); the group's offset is where a task without one "
        "starts.",
    )
    signal_poll_interval_ms: int = setting(
        "signal.poll.interval.ms",
        _NON_NEGATIVE,
        5000,
        "Milliseconds between two reads of the `kafka` signal channel (signals in `signal.data.collection` arrive "
        "with the change stream and wait for no read); 0 reads it at every turn of the streaming loop.",
    )
    incremental_snapshot_chunk_size: int = setting(
        "incremental.snapshot.chunk.size",
        _POSITIVE,
        1024,
        "Documents an incremental snapshot reads per chunk (one watermark window) while streaming continues.",
    )
    incremental_snapshot_watermarking_strategy: WatermarkingStrategy = setting(
        "incremental.snapshot.watermarking.strategy",
        choice(WatermarkingStrategy),
        "insert_insert",
        "How an incremental snapshot marks a chunk's window in `signal.data.collection`: `insert_insert` (insert an "
        "open and a close document per chunk) or `insert_delete` (insert the open document, delete it to close, so "
        "the collection does not grow).",
    )
    notification_enabled_channels: tuple[str, ...] = setting(
        "notification.enabled.channels",
        _NOTIFICATION_CHANNELS,
        (),
        "Comma-separated channels that receive incremental snapshot notifications (started, in progress, "
        "completed, …): `log` (the connector's log), `sink` (records in `notification.sink.topic.name`), or `none`.",
    )
    notification_sink_topic_name: str | None = setting(
        "notification.sink.topic.name",
        _STRING,
        None,
        "Kafka topic that receives notifications; required when `notification.enabled.channels` includes `sink`.",
        validator=check_topic_name,
    )

    # --- replication and failover (`mongocdc replicate`, `mongocdc failover translate`) ---
    src_kafka_bootstrap_servers: str | None = setting(
        "src.kafka.bootstrap.servers",
        _STRING,
        None,
        "Comma-separated `host:port` list of the source cluster of `replicate` and `failover translate`. Every "
        "other `src.kafka.*` property goes to that cluster's librdkafka clients without the prefix "
        "(`src.kafka.security.protocol`, `src.kafka.sasl.username`, …).",
        validator=check_bootstrap_servers,
        flag=Flag(
            "--source",
            "Bootstrap servers of the source cluster (src.kafka.bootstrap.servers; other src.kafka.* settings such "
            "as SASL/SSL come from the config file or MONGOCDC_SRC_KAFKA_*).",
            metavar="HOST:PORT,…",
        ),
    )
    dest_kafka_bootstrap_servers: str | None = setting(
        "dest.kafka.bootstrap.servers",
        _STRING,
        None,
        "Comma-separated `host:port` list of the target cluster of `replicate` and `failover translate`; every "
        "other `dest.kafka.*` property goes to its librdkafka clients without the prefix.",
        validator=check_bootstrap_servers,
        flag=Flag(
            "--target",
            "Bootstrap servers of the target cluster (dest.kafka.bootstrap.servers; other dest.kafka.* settings "
            "come from the config file or MONGOCDC_DEST_KAFKA_*).",
            metavar="HOST:PORT,…",
        ),
    )
    topics: tuple[str, ...] = setting(
        "topics",
        _REGEX_LIST,
        (".*",),
        "Comma-separated regular expressions matched against whole source topic names; matching topics are "
        "replicated (new ones are picked up every `refresh.topics.interval.seconds`).",
        flag=Flag(
            "--topics",
            "Regular expression(s), comma-separated, matched against whole source topic names (topics).",
            metavar="REGEX",
        ),
    )
    topics_exclude: tuple[str, ...] = setting(
        "topics.exclude",
        _REGEX_LIST,
        (r".*[\-\.]internal", r".*\.replica", "__.*"),
        "Comma-separated regular expressions matched against whole source topic names; matching topics are never "
        "replicated, even when `topics` selects them (internal topics, earlier replicas).",
    )
    topic_rename_format: str = setting(
        "topic.rename.format",
        _STRING,
        "${topic}",
        "Name of a target topic: `${topic}` is the source topic, `${source}` the source cluster's alias (its "
        "cluster id unless `source.cluster.alias` is set); for example `${topic}.replica`.",
        validator=check_rename_format,
        flag=Flag(
            "--rename-format", "Target topic name, e.g. '${topic}.replica' (topic.rename.format).", metavar="FORMAT"
        ),
    )
    groups: tuple[str, ...] = setting(
        "groups",
        _REGEX_LIST,
        (".*",),
        "Comma-separated regular expressions matched against whole consumer group ids on the source cluster; "
        "`replicate` writes checkpoints of the committed offsets of matching groups.",
        flag=Flag(
            "--groups",
            "Regular expression(s), comma-separated, matched against whole source consumer group ids whose offsets "
            "are checkpointed on the target (groups).",
            metavar="REGEX",
        ),
    )
    groups_exclude: tuple[str, ...] = setting(
        "groups.exclude",
        _REGEX_LIST,
        ("console-consumer-.*", "connect-.*", "__.*"),
        "Comma-separated regular expressions matched against whole consumer group ids; matching groups get no "
        "checkpoints (the replicator's own group never does).",
    )
    src_consumer_group_id: str | None = setting(
        "src.consumer.group.id",
        _STRING,
        None,
        "Consumer group under which `replicate` commits its position on the source cluster, once the target "
        "acknowledged the copies; unset: the value of `name`.",
    )
    source_cluster_alias: str | None = setting(
        "source.cluster.alias",
        _STRING,
        None,
        "Name of the source cluster in provenance headers, offset syncs and checkpoints; unset: its cluster id "
        "(from the brokers). Replicators in both directions must agree on each cluster's name.",
    )
    target_cluster_alias: str | None = setting(
        "target.cluster.alias",
        _STRING,
        None,
        "Name of the target cluster, matched against provenance headers to stop loops; unset: its cluster id.",
    )
    provenance_header_enable: bool = setting(
        "provenance.header.enable",
        _BOOL,
        True,
        "Add a `mongocdc.provenance` header (origin cluster, topic, partition, offset, copy time) to every copied "
        "record; records that came from the target topic on the target cluster are never copied back either way.",
    )
    offset_syncs_topic: str = setting(
        "offset.syncs.topic",
        _STRING,
        "mongocdc-offset-syncs.internal",
        "Compacted topic on the target cluster where `replicate` records which source offsets match which "
        "target offsets.",
        validator=check_topic_name,
    )
    checkpoints_topic: str = setting(
        "checkpoints.topic",
        _STRING,
        "mongocdc-checkpoints.internal",
        "Compacted topic on the target cluster holding the source consumer groups' committed offsets translated "
        "to target offsets (read by `failover translate` when the source cluster is gone).",
        validator=check_topic_name,
    )
    emit_checkpoints_interval_seconds: int = setting(
        "emit.checkpoints.interval.seconds",
        _POSITIVE,
        10,
        "Seconds between reads of the source consumer groups' committed offsets and writes of their checkpoints.",
    )
    replication_flush_interval_ms: int = setting(
        "replication.flush.interval.ms",
        _POSITIVE,
        1000,
        "Milliseconds between flushes of the copies to the target, offset-sync writes and commits of the source "
        "position (in that order).",
    )
    refresh_topics_interval_seconds: int = setting(
        "refresh.topics.interval.seconds",
        _POSITIVE,
        30,
        "Seconds between checks of the source cluster for new topics or partitions matching `topics`.",
    )
    replication_factor: int = setting(
        "replication.factor",
        _REPLICATION_FACTOR,
        -1,
        "Replication factor of the topics `replicate` creates on the target; -1 uses the broker's "
        "`default.replication.factor`.",
        validator=check_replication_factor,
    )

    # --- worker group (several processes share a connector's tasks) ------------
    group_id: str | None = setting(
        "group.id",
        _STRING,
        None,
        "Worker group (Kafka Connect's worker property): `stream` processes with the same configuration and "
        "`group.id` share the connector's tasks (one per source partition) through Kafka's consumer-group "
        "protocol; a stopped or failed worker's tasks move to the others. Needs `offset.storage: kafka`. Unset: "
        "this process runs every task.",
        flag=Flag("--group-id", "Join this worker group and run the tasks it assigns (group.id).", metavar="GROUP"),
    )
    group_tasks_topic: str | None = setting(
        "group.tasks.topic",
        _STRING,
        None,
        "Compacted topic of a worker group's tasks (one partition per task, its record names the source "
        "partition); unset: `mongocdc-tasks.<group.id>`.",
        validator=check_topic_name,
    )
    status_storage_topic: str | None = setting(
        "status.storage.topic",
        _STRING,
        None,
        "Compacted topic where a worker group's workers write each task's state and last error (Kafka Connect's "
        "worker property), read by `mongocdc status`; unset: `mongocdc-status.<group.id>`.",
        validator=check_topic_name,
    )
    group_settle_ms: int = setting(
        "group.settle.ms",
        _NON_NEGATIVE,
        3000,
        "Group mode: a worker that joins waits until no rebalance has touched it for this long before it starts the "
        "tasks of its first assignment, so that workers started together do not start every task in the first one "
        "and then hand most of them over (as the broker's `group.initial.rebalance.delay.ms` does for a new group); "
        "tasks assigned later (taken over from a stopped worker) start at once. 0: start at once.",
    )
    session_timeout_ms: int = setting(
        "session.timeout.ms",
        _POSITIVE,
        10000,
        "Group mode: a worker that does not answer the group coordinator for this long (crashed, paused, cut "
        "off) loses its tasks to the others (Kafka Connect's worker property; the broker bounds it with "
        "`group.min.session.timeout.ms`). Heartbeats go every third of it (`kafka.heartbeat.interval.ms` sets them).",
    )

    # --- monitoring ------------------------------------------------------------
    metrics_port: int = setting(
        "metrics.port",
        _PORT,
        0,
        "TCP port of the Prometheus metrics endpoint (`http://<host>:<port>/metrics`); 0 disables it.",
        flag=Flag(
            "--metrics-port", "Serve Prometheus metrics on this port at /metrics (metrics.port; 0 turns it off)."
        ),
    )
    metrics_host: str = setting(
        "metrics.host",
        _STRING,
        "127.0.0.1",
        "Address the metrics endpoint (`/metrics`, `/health`, `/ready`) binds: 127.0.0.1 serves this machine only; "
        "0.0.0.0 (or ::) every interface, for a scraper or probe in another pod or host.",
        flag=Flag("--metrics-host", "Bind the metrics endpoint to this address (metrics.host).", metavar="ADDRESS"),
    )

    # --- not properties --------------------------------------------------------
    kafka_client: Mapping[str, str] = dataclasses.field(default_factory=dict)
    src_kafka_client: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """librdkafka settings of ``replicate``'s source cluster (``src.kafka.*``, bootstrap servers included when set)."""
    dest_kafka_client: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """librdkafka settings of ``replicate``'s target cluster (``dest.kafka.*``)."""
    snapshot_filter_overrides: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Snapshot query (extended JSON text) by ``<database>.<collection>``, from the
    ``snapshot.collection.filter.overrides.<database>.<collection>`` properties."""
    ignored: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False)
    """Keys of the config file accepted without effect (Kafka Connect's or Debezium's), with the reason."""
    provenance: Mapping[str, Provenance] = dataclasses.field(default_factory=dict, compare=False)
    """Where each set property (and ``kafka.*`` key) came from, by name; ``source_of`` answers for any."""
    topic_creation: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Kafka Connect's ``topic.creation.*`` keys, without the prefix (``default.partitions``, ``groups``, …)."""
    connect_records: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Kafka Connect's keys that shape records (``transforms*``, ``predicates*``, ``*.converter*``), as given;
    ``record_format`` says what they make of the records (``config/records.py``)."""
    worker_converters: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The ``*.converter*`` keys of the Kafka Connect worker's properties (``worker.config``)."""
    one_shot_timeout_s: float | None = dataclasses.field(default=None, compare=False)
    """A one-shot command's ``--timeout``: its clients make one attempt of at most this many seconds to reach
    MongoDB or Kafka instead of the ``connect.*`` retries; ``None`` for ``stream``, ``snapshot``, ``replicate``."""
    _filters: NamespaceFilter = dataclasses.field(init=False, repr=False, compare=False)
    _topic_creation: TopicCreation | None = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        client = {key: str(value) for key, value in self.kafka_client.items()}
        client["bootstrap.servers"] = self.kafka_bootstrap_servers
        object.__setattr__(self, "kafka_client", FrozenMapping(client))
        for attr, servers in (
            ("src_kafka_client", self.src_kafka_bootstrap_servers),
            ("dest_kafka_client", self.dest_kafka_bootstrap_servers),
        ):
            side = {key: str(value) for key, value in getattr(self, attr).items()}
            if servers is not None:
                side["bootstrap.servers"] = servers
            object.__setattr__(self, attr, FrozenMapping(side))
        object.__setattr__(self, "snapshot_filter_overrides", FrozenMapping(dict(self.snapshot_filter_overrides)))
        object.__setattr__(self, "topic_creation", FrozenMapping({k: str(v) for k, v in self.topic_creation.items()}))
        for attr in ("connect_records", "worker_converters"):
            object.__setattr__(self, attr, FrozenMapping({k: str(v) for k, v in getattr(self, attr).items()}))
        object.__setattr__(self, "ignored", FrozenMapping(dict(self.ignored)))
        object.__setattr__(self, "provenance", dict(self.provenance))  # a copy; picklable, unlike a proxy
        problems = [
            problem
            for prop in PROPERTIES.values()
            if (problem := value_problem(prop, getattr(self, prop.attr))) is not None
        ]
        values = {name: getattr(self, prop.attr) for name, prop in PROPERTIES.items()}
        problems += consistency_problems(values)
        for namespace, text in self.snapshot_filter_overrides.items():
            problem = filter_override_problem(FILTER_OVERRIDE_PREFIX + namespace, text, None)
            if problem:
                problems.append(problem)
        problems += filter_override_list_problems(
            self.snapshot_collection_filter_overrides, set(self.snapshot_filter_overrides)
        )
        creation, creation_problems = parse_topic_creation(self.topic_creation)
        problems += creation_problems
        if self.connect_records or self.worker_converters:
            problems += record_problems(self.record_format)
        object.__setattr__(self, "_topic_creation", creation)
        if problems:
            raise config_error(problems)
        filters = NamespaceFilter(
            scope=self.capture_scope,
            target=self.capture_target,
            match_mode=self.filters_match_mode,
            database_include=self.database_include_list,
            database_exclude=self.database_exclude_list,
            collection_include=self.collection_include_list,
            collection_exclude=self.collection_exclude_list,
        )
        object.__setattr__(self, "_filters", filters)

    @property
    def record_format(self) -> RecordFormat:
        """How records are written: the converters and transforms in force (``config/records.py``)."""
        return record_format(
            self.connect_records,
            self.schemas_enable,
            worker=self.worker_converters,
            worker_origin=f"the worker configuration {self.worker_config}",
            schemas_origin=_schemas_origin(self.source_of("schemas.enable")),
        )

    @property
    def topic_creation_rules(self) -> TopicCreation | None:
        """The topics to create before the first record to them (``topic.creation.*``); ``None``: create none."""
        return self._topic_creation

    def get(self, property_name: str) -> object:
        """The value of a property by its name (``topic.prefix``); ``None`` for an unset ``kafka.*`` key.

        Unknown names raise ``ConfigError`` with the closest known name.
        """
        prop = PROPERTIES.get(property_name)
        if prop is not None:
            return getattr(self, prop.attr)
        prefix = client_prefix(property_name)
        if prefix is not None:
            client: Mapping[str, str] = getattr(self, CLIENT_PREFIXES[prefix])
            return client.get(property_name[len(prefix) :])
        if is_filter_override_key(property_name):
            return self.snapshot_filter_overrides.get(property_name[len(FILTER_OVERRIDE_PREFIX) :])
        if is_topic_creation_key(property_name):
            return self.topic_creation.get(property_name[len(TOPIC_CREATION_PREFIX) :])
        if is_record_key(property_name):
            return self.connect_records.get(property_name)
        raise ConfigError(f"unknown property {property_name!r}{did_you_mean(property_name, PROPERTIES)}")

    def require(self, property_name: str, *also: str) -> str:
        """The value of ``property_name``, which must be set.

        Raises ``ConfigError`` naming every one of ``property_name`` and
        ``also`` that is unset, with the config-file key, environment variable
        and flag that set it. Only properties without a default can be unset.
        """
        missing = [name for name in (property_name, *also) if self.get(name) is None]
        if missing:
            lines = [_how_to_set(name) for name in missing]
            if len(lines) == 1:
                raise ConfigError(f"{missing[0]} is required by this command but is not set", hint=lines[0])
            raise ConfigError(
                "these properties are required by this command but are not set: " + ", ".join(missing),
                hint="\n".join(lines),
            )
        return str(self.get(property_name))

    def as_properties(self, redact: bool = True) -> dict[str, object]:
        """Every effective setting by property name, sorted, ``kafka.*`` pass-through keys included.

        Regular-expression lists are comma-separated strings, unset properties
        ``None``. With ``redact`` (the default) secrets are replaced by
        ``********``; without it, the result fed back to ``load_settings`` as
        overrides gives an equal ``Settings``.
        """
        shown: dict[str, object] = {}
        for name, prop in PROPERTIES.items():
            value = prop.render(getattr(self, prop.attr))
            shown[name] = redact_value(name, value, secret=prop.secret) if redact else value
        for prefix, attr in CLIENT_PREFIXES.items():
            for key, value in getattr(self, attr).items():
                name = prefix + key
                if name not in PROPERTIES:
                    shown[name] = redact_value(name, value) if redact else value
        for namespace, text in self.snapshot_filter_overrides.items():
            shown[FILTER_OVERRIDE_PREFIX + namespace] = text
        for key, text in self.topic_creation.items():
            shown[TOPIC_CREATION_PREFIX + key] = text
        shown.update(self.connect_records)
        return dict(sorted(shown.items()))

    def source_of(self, name: str) -> Provenance:
        """Where the value of property (or ``kafka.*`` key) ``name`` came from: file, env, flag or default."""
        return self.provenance.get(name, DEFAULT_SOURCE)

    def snapshot_filter(self, db: str, coll: str) -> dict[str, Any] | None:
        """The query document a snapshot of ``db.coll`` reads with, or ``None`` to read every document.

        Parsed from ``snapshot.collection.filter.overrides.<db>.<coll>`` as relaxed
        extended JSON (``{"$oid": …}`` → ``ObjectId``, ``{"$date": …}`` → an aware
        ``datetime``); a fresh dict on each call, so callers may change it.
        """
        text = self.snapshot_filter_overrides.get(f"{db}.{coll}")
        return None if text is None else parse_filter(text)

    def is_database_included(self, db: str) -> bool:
        """Whether database ``db`` is captured: not a system database, within ``capture.target``, filters passed."""
        return self._filters.database(db)

    def is_collection_included(self, db: str, coll: str) -> bool:
        """Whether ``db.coll`` is captured: its database is, it is not ``system.*``, it passes the filters."""
        return self._filters.collection(db, coll)

    def __repr__(self) -> str:
        fields = []
        for prop in PROPERTIES.values():
            value = getattr(self, prop.attr)
            if isinstance(value, str):
                value = redact_value(prop.name, value, secret=prop.secret)
            fields.append(f"{prop.attr}={value!r}")
        for prefix, attr in CLIENT_PREFIXES.items():
            client = {key: redact_value(prefix + key, value) for key, value in getattr(self, attr).items()}
            fields.append(f"{attr}={client!r}")
        fields.append(f"snapshot_filter_overrides={dict(self.snapshot_filter_overrides)!r}")
        fields.append(f"topic_creation={dict(self.topic_creation)!r}")
        fields.append(f"connect_records={dict(self.connect_records)!r}")
        return f"Settings({', '.join(fields)})"


def _schemas_origin(source: Provenance) -> str:
    """Where the ``schemas.enable`` of a side no converter is named for came from, for the start-up line."""
    if source.kind == "default":
        return "mongocdc's schemas.enable, by default"
    return f"schemas.enable from {source.describe()}"


def _collect_properties() -> Mapping[str, Property]:
    registry: dict[str, Property] = {}
    for field in dataclasses.fields(Settings):
        prop = field.metadata.get(PROPERTY_METADATA_KEY)
        if not isinstance(prop, Property):
            continue
        if field.name != prop.attr:
            raise RuntimeError(f"Settings.{field.name} declares {prop.name!r}; name the field {prop.attr}")
        registry[prop.name] = prop
    return MappingProxyType(registry)


PROPERTIES: Final[Mapping[str, Property]] = _collect_properties()
"""Every property by name, in declaration order (the order of the configuration reference)."""


def _how_to_set(name: str) -> str:
    prop = PROPERTIES.get(name)
    ways = [f"the config file ({name}: <value>)", f"the environment variable {env_var_for(name)}"]
    if prop is not None and prop.flag:
        ways.append(f"the {prop.flag.option} flag")
    return f"Set {name} in " + ", ".join(ways[:-1]) + f" or {ways[-1]}."
