"""Kafka Connect and Debezium keys in a pasted connector configuration.

A Debezium MongoDB connector configuration holds, besides the properties
mongocdc implements under the same names (``PROPERTIES``), Kafka Connect's own
keys (``connector.class``, converters, ``transforms.*``, ``errors.*``, …) and
Debezium properties mongocdc has no use for. ``translate`` sorts every key of
a config file into one of:

- a mongocdc property, kept as it is;
- **mapped**: turned into mongocdc properties (``value.converter.schemas.enable``
  → ``schemas.enable``, ``heartbeat.topics.prefix`` → ``topic.heartbeat.prefix``);
- **checked**: accepted with the value(s) mongocdc behaves like
  (``connector.class``, the JSON converters, ``topic.delimiter=.``), any other
  value is a configuration error saying what mongocdc does instead;
- **ignored**: accepted, with the reason mongocdc has no use for it; keys whose
  value changes nothing (a default, or what mongocdc does anyway) are accepted
  silently, the others are reported once, in one warning;
- unknown: left to the loader, which reports it with the closest known name.

``DEBEZIUM`` lists every property of Debezium 3.6.1's MongoDB connector (its
``MongoDbConnectorConfig``, ``CommonConnectorConfig`` and the topic naming,
heartbeat, signal and notification settings it documents); ``CONNECT`` the
Kafka Connect framework's connector keys. The README's configuration reference
renders both tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from mongocdc.config.values import BoolType, InvalidValueError

Status = Literal["implemented", "mapped", "checked", "ignored"]

MONGODB_CONNECTOR: Final = "io.debezium.connector.mongodb.MongoDbConnector"
JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
DEFAULT_TOPIC_NAMING_STRATEGY: Final = "io.debezium.schema.DefaultTopicNamingStrategy"


@dataclass(frozen=True)
class Compat:
    """How mongocdc treats one Debezium or Kafka Connect key (or every key under a prefix)."""

    status: Status
    note: str = ""
    """mapped: what it becomes; checked: what mongocdc does instead of other values; ignored: why."""
    accepted: tuple[str, ...] = ()
    """checked: the values accepted (exactly, class names are case-sensitive)."""
    harmless: tuple[str, ...] = ()
    """ignored: values (lower case) that change nothing, so they are accepted without a warning."""


def _ignored(note: str, *harmless: str) -> Compat:
    return Compat("ignored", note, harmless=tuple(value.lower() for value in harmless))


def _checked(note: str, *accepted: str) -> Compat:
    return Compat("checked", note, accepted=accepted)


_IMPLEMENTED: Final = Compat("implemented")

# --- Debezium 3.6.1, MongoDB connector ------------------------------------------------------

_RELATIONAL: Final = "used by Debezium's relational connectors only; its MongoDB connector ignores it too"
_METRICS: Final = "Debezium's JMX metrics; mongocdc serves its own Prometheus metrics (metrics.port)"
_CUSTOM_CLASS: Final = "a Java class mongocdc cannot load"

DEBEZIUM: Final[Mapping[str, Compat]] = {
    # connection
    "name": _IMPLEMENTED,
    "topic.prefix": _IMPLEMENTED,
    "mongodb.connection.string": _IMPLEMENTED,
    "mongodb.user": _IMPLEMENTED,
    "mongodb.password": _IMPLEMENTED,
    "mongodb.authsource": _IMPLEMENTED,
    "mongodb.authentication.class": _checked(
        f"{_CUSTOM_CLASS}: the credentials come from mongodb.user, mongodb.password and mongodb.authsource, or "
        "from the connection string",
        "io.debezium.connector.mongodb.connection.DefaultMongoDbAuthProvider",
    ),
    "mongodb.ssl.enabled": _IMPLEMENTED,
    "mongodb.ssl.invalid.hostname.allowed": _IMPLEMENTED,
    "mongodb.ssl.keystore": _IMPLEMENTED,
    "mongodb.ssl.keystore.password": _IMPLEMENTED,
    "mongodb.ssl.keystore.type": _ignored(
        "mongodb.ssl.keystore is read as a PEM file (certificate and private key), whatever the type says", "pem"
    ),
    "mongodb.ssl.truststore": _IMPLEMENTED,
    "mongodb.ssl.truststore.password": _ignored(
        "mongodb.ssl.truststore is read as a PEM file of CA certificates, which has no password"
    ),
    "mongodb.ssl.truststore.type": _ignored(
        "mongodb.ssl.truststore is read as a PEM file of CA certificates, whatever the type says", "pem"
    ),
    "mongodb.connect.timeout.ms": _IMPLEMENTED,
    "mongodb.socket.timeout.ms": _IMPLEMENTED,
    "mongodb.server.selection.timeout.ms": _IMPLEMENTED,
    "mongodb.heartbeat.frequency.ms": _IMPLEMENTED,
    "mongodb.poll.interval.ms": _IMPLEMENTED,
    "internal.mongodb.allow.offset.invalidation": _ignored(
        "consolidates shard offsets recorded by Debezium 2.x's replica_set mode; mongocdc keeps the offsets of "
        "each mongodb.connection.mode apart and never invalidates them",
        "false",
    ),
    "connect.backoff.initial.delay.ms": _IMPLEMENTED,
    "connect.backoff.max.delay.ms": _IMPLEMENTED,
    "connect.max.attempts": _IMPLEMENTED,
    # what is captured
    "filters.match.mode": _IMPLEMENTED,
    "database.include.list": _IMPLEMENTED,
    "database.exclude.list": _IMPLEMENTED,
    "collection.include.list": _IMPLEMENTED,
    "collection.exclude.list": _IMPLEMENTED,
    "capture.mode": _IMPLEMENTED,
    "capture.mode.full.update.type": _IMPLEMENTED,
    "capture.start.op.time": _IMPLEMENTED,
    "capture.scope": _IMPLEMENTED,
    "capture.target": _IMPLEMENTED,
    "field.exclude.list": _IMPLEMENTED,
    "field.renames": _IMPLEMENTED,
    "skipped.operations": _IMPLEMENTED,
    "tombstones.on.delete": _IMPLEMENTED,
    "provide.transaction.metadata": _IMPLEMENTED,
    "cursor.pipeline": _IMPLEMENTED,
    "cursor.pipeline.order": _IMPLEMENTED,
    "cursor.oversize.handling.mode": _IMPLEMENTED,
    "cursor.oversize.skip.threshold": _IMPLEMENTED,
    "cursor.max.await.time.ms": _IMPLEMENTED,
    # snapshots
    "snapshot.mode": _IMPLEMENTED,
    "snapshot.delay.ms": _IMPLEMENTED,
    "streaming.delay.ms": _IMPLEMENTED,
    "snapshot.fetch.size": _IMPLEMENTED,
    "snapshot.max.threads": _IMPLEMENTED,
    "snapshot.include.collection.list": _IMPLEMENTED,
    "snapshot.collection.filter.overrides": _IMPLEMENTED,
    "snapshot.max.threads.multiplier": _ignored(
        "mongocdc copies each collection on one thread, in _id-ordered chunks of snapshot.fetch.size", "1"
    ),
    "legacy.snapshot.max.threads": _ignored(
        "mongocdc always copies each collection on one thread (what this property asks for)", "true", "false"
    ),
    "snapshot.mode.custom.name": _ignored("used only with snapshot.mode=custom, which mongocdc does not offer"),
    "snapshot.mode.configuration.based.snapshot.data": _ignored(
        "used only with snapshot.mode=configuration_based, which mongocdc does not offer", "false"
    ),
    "snapshot.mode.configuration.based.snapshot.schema": _ignored(
        "used only with snapshot.mode=configuration_based, which mongocdc does not offer", "false"
    ),
    "snapshot.mode.configuration.based.start.stream": _ignored(
        "used only with snapshot.mode=configuration_based, which mongocdc does not offer", "false"
    ),
    "snapshot.mode.configuration.based.snapshot.on.schema.error": _ignored(
        "used only with snapshot.mode=configuration_based, which mongocdc does not offer", "false"
    ),
    "snapshot.mode.configuration.based.snapshot.on.data.error": _ignored(
        "used only with snapshot.mode=configuration_based, which mongocdc does not offer", "false"
    ),
    "snapshot.query.mode": _ignored(_RELATIONAL, "select_all"),
    "snapshot.query.mode.custom.name": _ignored(_RELATIONAL),
    "snapshot.locking.mode.custom.name": _ignored(_RELATIONAL),
    "incremental.snapshot.chunk.size": _IMPLEMENTED,
    "incremental.snapshot.watermarking.strategy": _IMPLEMENTED,
    "incremental.snapshot.allow.schema.changes": _ignored(_RELATIONAL, "false"),
    # throughput
    "max.batch.size": _IMPLEMENTED,
    "max.queue.size": _IMPLEMENTED,
    "max.queue.size.in.bytes": _IMPLEMENTED,
    "poll.interval.ms": _IMPLEMENTED,
    "queue.provider.type": _checked(
        "mongocdc's queue is the Kafka producer's memory queue (max.queue.size, max.queue.size.in.bytes)", "memory"
    ),
    "query.fetch.size": _ignored(_RELATIONAL, "0"),
    # topics and event format
    "topic.naming.strategy": _IMPLEMENTED,
    "topic.delimiter": _checked(
        "topic names are `<topic.prefix>.<database>.<collection>`, with dots, as the default strategy names them", "."
    ),
    "topic.cache.size": _ignored("mongocdc computes topic names without a bounded cache"),
    "topic.heartbeat.prefix": _IMPLEMENTED,
    "topic.heartbeat.name": _IMPLEMENTED,
    "heartbeat.topics.prefix": Compat("mapped", "becomes topic.heartbeat.prefix (its deprecated name)"),
    "topic.transaction": _IMPLEMENTED,
    "heartbeat.interval.ms": _IMPLEMENTED,
    "source.struct.version": _checked("events carry the v2 source block, as Debezium 3.6.1 writes it", "v2"),
    "sourceinfo.struct.maker": _checked(
        f"{_CUSTOM_CLASS}: events carry the MongoDB connector's own source block",
        "io.debezium.connector.mongodb.MongoDbSourceInfoStructMaker",
    ),
    "transaction.metadata.factory": _checked(
        f"{_CUSTOM_CLASS}: transaction metadata is written as Debezium's default factory writes it",
        "io.debezium.pipeline.txmetadata.DefaultTransactionMetadataFactory",
    ),
    "schema.name.adjustment.mode": _ignored(
        "schema names are written unadjusted, which differs from Debezium's only with schemas.enable=true and a "
        "topic prefix, database or collection name holding characters other than letters, digits and _",
        "none",
    ),
    "field.name.adjustment.mode": _ignored(
        "a MongoDB event's fields are the envelope's own (documents are JSON strings), so there is nothing to adjust",
        "none",
        "avro",
        "avro_unicode",
    ),
    "binary.handling.mode": _ignored(
        "documents are written as extended JSON, binary values as $binary, whatever the mode (as in Debezium)",
        "bytes",
    ),
    "converters": _ignored(f"custom value converters are {_CUSTOM_CLASS}s; documents are written as extended JSON"),
    "post.processors": _ignored(f"post processors are {_CUSTOM_CLASS}es; events are written as they are read"),
    "extended.headers.enabled": _IMPLEMENTED,
    "skip.messages.without.change": _ignored(
        "Debezium's MongoDB connector does not skip unchanged events either", "false", "true"
    ),
    # failures and retries
    "event.processing.failure.handling.mode": _ignored(
        "mongocdc stops on a change event it cannot read (Debezium's fail mode)", "fail"
    ),
    "event.converting.failure.handling.mode": _ignored(_RELATIONAL, "warn"),
    "errors.max.retries": _ignored(
        "mongocdc does not restart itself after an error: it exits (code 4 when MongoDB or Kafka stays unreachable "
        "after connect.max.attempts) and resumes from its offsets when started again",
        "-1",
    ),
    "retriable.restart.connector.wait.ms": _ignored(
        "mongocdc does not restart itself after an error; a supervisor restarts it and it resumes from its offsets"
    ),
    "custom.retriable.exception": _ignored("mongocdc does not restart itself after an error", "false"),
    "internal.custom.retriable.exception": _ignored("mongocdc does not restart itself after an error", "false"),
    "connection.validation.timeout.ms": _ignored(
        "mongocdc config validate checks the configuration without connecting; connections time out per "
        "mongodb.server.selection.timeout.ms and connect.timeout.ms"
    ),
    "executor.shutdown.timeout.ms": _ignored(
        "mongocdc stops on SIGTERM after flushing the producer and committing what Kafka acknowledged"
    ),
    "internal.log.position.check.enable": _ignored(
        "mongocdc always checks that the stored resume position is still in the oplog", "true"
    ),
    "guardrail.collections.max": _ignored("mongocdc does not limit how many collections it captures", "0"),
    "guardrail.collections.limit.action": _ignored("mongocdc does not limit how many collections it captures", "warn"),
    # signals and notifications
    "signal.data.collection": _IMPLEMENTED,
    "signal.enabled.channels": _IMPLEMENTED,
    "signal.poll.interval.ms": _IMPLEMENTED,
    "signal.kafka.topic": _IMPLEMENTED,
    "signal.kafka.groupId": _IMPLEMENTED,
    "signal.kafka.bootstrap.servers": _IMPLEMENTED,
    "signal.kafka.poll.timeout.ms": _ignored(
        "the Kafka signal channel is read without waiting, every signal.poll.interval.ms, in the streaming loop"
    ),
    "notification.enabled.channels": _IMPLEMENTED,
    "notification.sink.topic.name": _IMPLEMENTED,
    # metrics, lineage, masking
    "custom.metric.tags": _ignored(_METRICS),
    "statistics.metrics.enabled": _ignored(_METRICS, "true", "false"),
    "internal.advanced.metrics.enable": _ignored(_METRICS, "false"),
    "custom.sanitize.pattern": _ignored(
        "mongocdc hides the values of keys naming a password, secret, token, sasl.jaas.config or ssl.key, and "
        "passwords in connection strings, wherever it shows settings"
    ),
    "openlineage.integration.enabled": _ignored("mongocdc emits no OpenLineage events", "false"),
    # properties of earlier versions, which Debezium 3.6.1 no longer reads
    **{
        old: _ignored(f"a property of earlier Debezium versions, which 3.6.1 no longer reads either; {new}")
        for old, new in {
            "mongodb.hosts": "the hosts are in mongodb.connection.string",
            "mongodb.name": "its successor is topic.prefix",
            "mongodb.members.auto.discover": "the driver discovers the members from mongodb.connection.string",
            "mongodb.poll.interval.sec": "its successor is mongodb.poll.interval.ms",
            "database.whitelist": "its successor is database.include.list",
            "database.blacklist": "its successor is database.exclude.list",
            "collection.whitelist": "its successor is collection.include.list",
            "collection.blacklist": "its successor is collection.exclude.list",
            "field.blacklist": "its successor is field.exclude.list",
            "initial.sync.max.threads": "its successor is snapshot.max.threads",
            "sanitize.field.names": "its successor is field.name.adjustment.mode",
        }.items()
    },
}
"""Every property of Debezium 3.6.1's MongoDB connector and how mongocdc treats it."""

DEBEZIUM_PREFIXES: Final[Mapping[str, Compat]] = {
    "openlineage.integration.": _ignored("mongocdc emits no OpenLineage events"),
    "signal.consumer.": _ignored(
        "Java consumer settings of the Kafka signal channel; mongocdc's signal consumer uses the kafka.* "
        "(librdkafka) settings"
    ),
    "notification.sink.": _ignored("mongocdc's notification sink uses the kafka.* (librdkafka) settings"),
}
"""Debezium keys under a prefix (pass-through settings), by prefix."""

# --- Kafka Connect ------------------------------------------------------------------------

_TRANSFORMS: Final = (
    "applied to every record (change events, tombstones, heartbeats, transaction metadata, notifications) in order, "
    "as Kafka Connect applies them, between the record and the converters; a class mongocdc does not implement is "
    'refused at start (exit 3): the README\'s "Transforms and converters" table lists them'
)
_PREDICATES: Final = "select the records a transform applies to, as in Kafka Connect (`transforms.<alias>.predicate`)"
_CONVERTER: Final = (
    "applied as Kafka Connect applies it: JsonConverter, io.debezium.converters.CloudEventsConverter, StringConverter, "
    "ByteArrayConverter; converters that need a schema registry (Avro, Protobuf, JSON Schema) are refused (exit 3)"
)
_CONVERTER_SETTINGS: Final = "a setting of the converter, applied as the converter applies it"
_CLIENT_OVERRIDES: Final = (
    "Kafka Connect's Java client overrides; mongocdc's clients are librdkafka's, set with kafka.* properties "
    "(librdkafka's names)"
)
_SCHEMAS_NOTE: Final = (
    "each side as its converter says (a JsonConverter named without it has schemas: its default is true); the same on "
    "both sides and without transforms it is mongocdc's schemas.enable"
)
_HEADERS: Final = (
    "headers are written as Kafka Connect's default SimpleHeaderConverter writes them; another header converter is "
    "refused (exit 3)"
)
_CONNECT_ERRORS: Final = (
    "Kafka Connect's retries of retriable failures (mongocdc's transforms and converters fail only on a record "
    "they cannot handle, which a retry does not change) and its dead letter queue, which Kafka Connect uses for "
    "sink connectors only"
)

_CONFIG_PROVIDERS: Final = Compat(
    "mapped",
    "${file:<properties file>:<key>}, ${directory:<dir>:<file>} and ${env:<VARIABLE>} references in values are "
    "resolved as Kafka's File, Directory and EnvVar config providers do; config.providers.<alias>.class may name "
    "those classes under other aliases",
)

CONNECT: Final[Mapping[str, Compat]] = {
    "name": _IMPLEMENTED,
    "config.providers": _CONFIG_PROVIDERS,
    "connector.class": _checked(
        "mongocdc replaces Debezium's MongoDB connector only", MONGODB_CONNECTOR, "MongoDbConnector", "MongoDb"
    ),
    "tasks.max": _IMPLEMENTED,
    "tasks.max.enforce": _ignored("mongocdc runs one task per replica set whatever tasks.max says", "true"),
    "key.converter": Compat("mapped", _CONVERTER),
    "value.converter": Compat("mapped", _CONVERTER),
    "key.converter.schemas.enable": Compat("mapped", _SCHEMAS_NOTE),
    "value.converter.schemas.enable": Compat("mapped", _SCHEMAS_NOTE),
    "header.converter": Compat("mapped", _HEADERS),
    "config.action.reload": _ignored(
        "mongocdc reads its configuration when a command starts; restart it after a change", "restart", "none"
    ),
    "transforms": Compat("mapped", _TRANSFORMS),
    "predicates": Compat("mapped", _PREDICATES),
    "errors.tolerance": Compat(
        "mapped",
        "as in Kafka Connect: all skips a record a transform or converter fails on (counted, logged with "
        "errors.log.enable) instead of stopping the connector; none (the default) stops with exit 3 naming the record",
    ),
    "errors.log.enable": Compat("mapped", "logs each record errors.tolerance=all skipped"),
    "exactly.once.support": _IMPLEMENTED,
    "transaction.boundary": _IMPLEMENTED,
    "transaction.boundary.interval.ms": _IMPLEMENTED,
    "offsets.storage.topic": _ignored(
        "Kafka Connect's per-connector offsets topic; mongocdc keeps its offsets where offset.storage says "
        "(offset.storage: kafka and offset.storage.topic for a topic)"
    ),
    "connector.plugin.version": _ignored("mongocdc is one version of one connector"),
    "key.converter.plugin.version": _ignored("mongocdc is one version of one connector"),
    "value.converter.plugin.version": _ignored("mongocdc is one version of one connector"),
    "header.converter.plugin.version": _ignored("mongocdc is one version of one connector"),
}
"""Kafka Connect's connector (and source connector) configuration keys."""

CONNECT_PREFIXES: Final[Mapping[str, Compat]] = {
    "config.providers.": _CONFIG_PROVIDERS,
    "transforms.": Compat("mapped", _TRANSFORMS),
    "predicates.": Compat("mapped", _PREDICATES),
    "errors.": _ignored(_CONNECT_ERRORS),
    "topic.creation.": Compat(
        "mapped",
        "honoured as in Kafka Connect: a missing topic is created before the first record to it with its group's "
        "settings (see `topic.creation.*` in the property table)",
    ),
    "key.converter.": Compat("mapped", _CONVERTER_SETTINGS),
    "value.converter.": Compat("mapped", _CONVERTER_SETTINGS),
    "header.converter.": Compat("mapped", _HEADERS),
    "producer.override.": _ignored(_CLIENT_OVERRIDES),
    "consumer.override.": _ignored(_CLIENT_OVERRIDES),
    "admin.override.": _ignored(_CLIENT_OVERRIDES),
}
"""Kafka Connect keys under a prefix, by prefix (the longest matching prefix counts)."""


def lookup(name: str) -> Compat | None:
    """How mongocdc treats ``name`` as a Kafka Connect or Debezium key, or ``None`` when it is neither."""
    for table in (CONNECT, DEBEZIUM):
        if name in table:
            return table[name]
    prefixes = {**CONNECT_PREFIXES, **DEBEZIUM_PREFIXES}
    matches = [prefix for prefix in prefixes if name.startswith(prefix) and len(name) > len(prefix)]
    if not matches:
        return None
    return prefixes[max(matches, key=len)]


def known_names() -> list[str]:
    """Every Kafka Connect and Debezium key name (for "did you mean" suggestions)."""
    return sorted({*CONNECT, *DEBEZIUM})


# --- translating a file's keys -----------------------------------------------------------------

_BOOL = BoolType()
_SCHEMAS: Final = "schemas.enable"


@dataclass
class Translation:
    """A config file's keys after ``translate``."""

    values: dict[str, object] = field(default_factory=dict)
    """Property name → raw value: the file's mongocdc properties and unknown keys, plus what was mapped."""
    spelled: dict[str, str] = field(default_factory=dict)
    """Property name → the key(s) of the file it came from, for mapped properties."""
    ignored: dict[str, str] = field(default_factory=dict)
    """Key → why it has no effect, for every ignored key whose value would make a difference."""
    accepted: dict[str, str] = field(default_factory=dict)
    """Key → why it needs nothing, for keys accepted silently (checked values, harmless ignored values)."""
    problems: list[str] = field(default_factory=list)


def translate(entries: Mapping[str, object], origin: str, *, is_property: Iterable[str] = ()) -> Translation:
    """Sort the flattened keys of one config file (see the module docstring).

    ``is_property`` names the keys the loader knows (mongocdc properties,
    pass-through and filter keys): they are kept as they are, even where a
    Kafka Connect or Debezium prefix would also match.
    """
    known = set(is_property)
    result = Translation()
    schemas: dict[str, bool] = {}
    converters: dict[str, str] = {}
    others: list[tuple[str, object, Compat]] = []
    for name, value in entries.items():
        _collect_converter(name, value, origin, schemas, converters, result)
        compat = None if name in known else lookup(name)
        if compat is None or compat.status == "implemented":
            result.values[name] = value  # a property, or unknown (the loader reports it)
        else:
            others.append((name, value, compat))
    for name, value, compat in others:
        text = _text(value)
        if compat.status == "checked":
            if text in compat.accepted:
                result.accepted[name] = compat.note
            else:
                result.problems.append(_checked_problem(name, value, compat, origin))
            continue
        if compat.status == "mapped":
            _map(name, value, text, origin, result)
            continue
        if text.lower() in compat.harmless:
            result.accepted[name] = compat.note
        else:
            result.ignored[name] = _ignored_note(name, compat, entries)
    _map_schemas(schemas, converters, origin, result, pasted="connector.class" in entries)
    return result


def _collect_converter(
    name: str, value: object, origin: str, schemas: dict[str, bool], converters: dict[str, str], result: Translation
) -> None:
    """Note a key or value converter (``converters``) and its ``schemas.enable`` (``schemas``); a misspelt
    JsonConverter setting is a problem (another converter's settings are checked when it is built)."""
    side, dot, rest = name.partition(".converter")
    if side not in ("key", "value") or not dot:
        return
    if not rest:
        converters[side] = _text(value)
        return
    if rest == ".schemas.enable":
        try:
            schemas[side] = bool(_BOOL.parse(value))
        except InvalidValueError as exc:
            result.problems.append(f"{name}: invalid value {value!r} from {origin}: {exc}")
        return
    typo = _converter_typo(name)
    if typo:
        result.problems.append(f"{name} from {origin} is not a setting of JsonConverter{typo}")


JSON_CONVERTER_SETTINGS: Final = frozenset(
    {"schemas.enable", "schemas.cache.size", "decimal.format", "replace.null.with.default", "schema.content"}
)
"""The settings of Kafka Connect's JsonConverter (``value.converter.<setting>``)."""


_JSON_NAMES: Final = frozenset({JSON_CONVERTER, "JsonConverter", "Json"})


def _converter_typo(name: str) -> str:
    """``"; did you mean …"`` when ``name`` is a key or value converter setting misspelt, else ``""``."""
    from mongocdc.config.suggestions import did_you_mean

    side, dot, rest = name.partition(".converter.")
    if not dot or side not in ("key", "value") or rest in JSON_CONVERTER_SETTINGS:
        return ""
    suggestion = did_you_mean(rest, sorted(JSON_CONVERTER_SETTINGS))
    return suggestion.replace("did you mean '", f"did you mean '{side}.converter.") if suggestion else ""


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value).strip()


def _checked_problem(name: str, value: object, compat: Compat, origin: str) -> str:
    accepted = " or ".join(repr(a) for a in compat.accepted)
    if name == "connector.class":
        return (
            f"connector.class {value!r} from {origin} is not Debezium's MongoDB connector: mongocdc replaces "
            f"{MONGODB_CONNECTOR} only (set connector.class to it, or remove the key)"
        )
    if name.endswith(".converter"):
        return (
            f"{name} {value!r} from {origin} is not supported: mongocdc writes keys and values as "
            f"Kafka Connect's JsonConverter ({JSON_CONVERTER}) does, with a schema when schemas.enable is true; "
            f"set {name} to {JSON_CONVERTER} or remove it"
        )
    return f"{name}: value {value!r} from {origin} is not supported: {compat.note}; accepted: {accepted}"


def _ignored_note(name: str, compat: Compat, entries: Mapping[str, object]) -> str:
    del name, entries
    return compat.note


def _map(name: str, value: object, text: str, origin: str, result: Translation) -> None:
    if name == "heartbeat.topics.prefix":
        target = "topic.heartbeat.prefix"
        if target in result.values and _text(result.values[target]) != text:
            result.problems.append(
                f"heartbeat.topics.prefix ({value!r}) and topic.heartbeat.prefix ({result.values[target]!r}) in "
                f"{origin} disagree; they are one setting (heartbeat.topics.prefix is its deprecated name): keep one"
            )
            return
        result.values.setdefault(target, value)
        result.spelled[target] = name
        return
    # config.providers.*: read by the loader for the aliases of ${…} references
    result.accepted[name] = _CONFIG_PROVIDERS.note


def _map_schemas(
    schemas: dict[str, bool], converters: dict[str, str], origin: str, result: Translation, *, pasted: bool = False
) -> None:
    """``schemas.enable`` from the JsonConverters' settings.

    A converter set in the connector configuration without its own
    ``schemas.enable`` writes schemas (JsonConverter's default is true); one not
    set there is the worker's: a Kafka Connect configuration (``pasted``, it names
    ``connector.class``) that names none gets Kafka Connect's default worker
    converter, JsonConverter with schemas (``worker.config`` reads the worker's own,
    ``config/records.py``).
    """
    if any(converter not in _JSON_NAMES for converter in converters.values()):
        return  # not JsonConverter on both sides: the record pipeline writes each side (config/records.py)
    effective = dict(schemas)
    for side in converters:
        effective.setdefault(side, True)
    if not effective:
        if pasted and _SCHEMAS not in result.values:
            # A Kafka Connect connector configuration naming no converter gets the worker's, which is
            # JsonConverter with schemas.enable=true unless the worker says otherwise (worker.config).
            result.values[_SCHEMAS] = True
            result.spelled[_SCHEMAS] = "connector.class: Kafka Connect's default converter, JsonConverter with schemas"
        return
    values = set(effective.values())
    if len(values) > 1:
        return  # keys and values written differently: the record pipeline writes each side as its converter says
    enabled = values.pop()
    own = result.values.get(_SCHEMAS)
    if own is not None:
        try:
            if bool(_BOOL.parse(own)) != enabled:
                result.problems.append(
                    f"schemas.enable ({own!r}) and the converters' schemas.enable ({str(enabled).lower()}) in "
                    f"{origin} disagree; keep one"
                )
        except InvalidValueError:
            pass  # the loader reports the bad value
        return
    result.values[_SCHEMAS] = enabled
    result.spelled[_SCHEMAS] = " and ".join(
        f"{side}.converter{'.schemas.enable' if side in schemas else ''}" for side in sorted(effective)
    )
