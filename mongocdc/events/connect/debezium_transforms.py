"""Debezium 3.6.1's own single message transforms: the MongoDB outbox router, the logical-table router and
HeaderToValue, record for record as Debezium's classes transform them.

* ``io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter`` (:class:`MongoEventRouter`): the
  ``after`` JSON of an outbox collection's inserts is parsed into a struct by Debezium's ``MongoDataConverter``
  (``mongo_data``, array encoding ``array``, names as they are), the payload field left a JSON string (the
  document as the Java driver's ``toJson`` writes it, canonical extended JSON, indented) unless
  ``collection.expand.json.payload``; a document the expansion fails on stays JSON text, as Debezium leaves it,
  and the record fails when it is routed. Then ``EventRouterDelegate`` routes it: the topic from ``route.by.field``
  through ``route.topic.regex``/``route.topic.replacement``, the key from ``collection.field.event.key``
  (``aggregateid`` by default, Debezium's relational default), an ``id`` header, the timestamp from
  ``collection.field.event.timestamp`` or the event's ``ts_ms``, ``collection.fields.additional.placement``
  (``envelope``, ``header``, ``partition``, with aliases), ``collection.field.event.schema.version``,
  ``route.tombstone.on.empty.payload``, ``collection.field.additional.missing``. Deletes and tombstones are
  dropped, updates dropped or fatal by ``table.op.invalid.behavior`` (the name Debezium's code reads; its
  documented ``collection.op.invalid.behavior`` has no effect in 3.6.1), records that are not change events
  pass unchanged. The value schema caches are Debezium's: per payload schema (per version with
  ``collection.field.event.schema.version``) for the transform's life, so a schema's name keeps the routed
  topic of the first event it was built for. ``collection.field.event.type`` is read by no code in 3.6.1.
  The ``tracing.*`` options only act when OpenTelemetry is on the worker's class path (then Debezium records
  spans and adds trace propagation headers), which the Debezium MongoDB connector's plugin does not ship:
  accepted, without effect, as there.
* ``io.debezium.transforms.ByLogicalTableRouter`` (:class:`ByLogicalTableRouter`): ``topic.regex`` →
  ``topic.replacement``, the key's schema renamed ``<topic>.Key`` (``schema.name.adjustment.mode``) with the
  physical table's field added (``key.enforce.uniqueness``, ``key.field.name``, ``key.field.regex``,
  ``key.field.replacement``), an envelope's schema renamed ``<topic>.Envelope`` with ``before``/``after``
  ``<topic>.Value``, schemas cached per original schema (``logical.table.cache.size``, LRU) as Debezium caches
  them. A MongoDB change event's ``before`` is a JSON string, not a struct: Debezium fails on it, and so does this.
* ``io.debezium.transforms.HeaderToValue`` (:class:`HeaderToValue`): ``headers`` → ``fields`` (dotted names nest),
  ``operation`` ``move`` or ``copy``, with ``ConnectRecordUtil``'s schema building and its cache of 64 updated
  schemas per value schema.

Options are read as Debezium's ``Configuration`` reads them (raw text, no trimming, Debezium's validators);
the Kafka classes Debezium delegates to (``RegexRouter``) trim theirs. A record Debezium fails on raises
``DataError``. Debezium's bounded concurrent caches (segmented LRUs of 64 and 10 000 entries) are plain LRUs of
the same size here: they differ only in which entry goes once more schemas than that have been seen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from mongocdc.events.connect.base import (
    ConnectConfigError,
    TransformFactory,
    invalid,
    java_regex,
    java_replacement,
    java_split,
    java_trim,
)
from mongocdc.events.connect.data import (
    OPTIONAL_STRING,
    STRING,
    ConnectRecord,
    DataError,
    Header,
    Schema,
    Struct,
    StructBuilder,
    Type,
    field_schema,
    struct_schema,
)
from mongocdc.events.connect.mongo_data import (
    ADJUSTMENT_MODES,
    BsonType,
    MongoDataConverter,
    NameAdjuster,
    bson_type,
    canonical_json,
    parse_document,
)

K = TypeVar("K")
V = TypeVar("V")


def _jstr(text: str | None) -> str:
    """A string as Java's ``+`` concatenates it (``null`` for none)."""
    return "null" if text is None else text


def _require_struct(value: Any, purpose: str) -> Struct:
    """``Requirements.requireStruct``."""
    if not isinstance(value, Struct):
        found = "null" if value is None else type(value).__name__
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {found}")
    return value


def _is_envelope(schema: Schema | None) -> bool:
    """``SmtManager.isValidEnvelope``: a value schema named ``….Envelope``."""
    return schema is not None and schema.name is not None and schema.name.endswith(".Envelope")


def _replace_first(pattern: re.Pattern[str], replacement: str, text: str) -> str:
    """``matcher.replaceFirst(replacement)`` (the text is known to match the whole pattern)."""
    try:
        return pattern.sub(java_replacement(replacement), text, count=1)
    except (re.error, IndexError) as exc:
        raise DataError(f"Illegal replacement {replacement!r}: {exc}") from None


class _Lru(Generic[K, V]):
    """Kafka's ``LRUCache`` (``LinkedHashMap`` in access order): a hit moves to the end, the eldest goes beyond
    ``size`` (a size of 0 or less caches nothing). Keys are compared by equality; a key that cannot be hashed
    is looked up by comparing it with each one."""

    __slots__ = ("_size", "_entries")

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[Any, tuple[K, V]] = {}

    def _slot(self, key: K) -> Any:
        try:
            hash(key)
        except TypeError:
            return next((slot for slot, (k, _) in self._entries.items() if k == key), ("unhashable", id(key)))
        return ("key", key)

    def get(self, key: K) -> V | None:
        slot = self._slot(key)
        entry = self._entries.pop(slot, None)
        if entry is None:
            return None
        self._entries[slot] = entry
        return entry[1]

    def put(self, key: K, value: V) -> None:
        slot = self._slot(key)
        self._entries.pop(slot, None)
        self._entries[slot] = (key, value)
        while len(self._entries) > max(self._size, 0):
            del self._entries[next(iter(self._entries))]


# --- Debezium's Configuration: raw option text and its validators --------------------------------------------


def _lenient_boolean(value: str | None, default: bool) -> bool:
    """``Configuration.getBoolean``: ``true``/``false`` in any case once trimmed, anything else the default."""
    if value is not None:
        lowered = java_trim(value).lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    return default


def _check_boolean(name: str, value: str | None) -> None:
    """``Field::isBoolean``."""
    if value is not None and java_trim(value).lower() not in ("true", "false"):
        raise invalid(name, value, "Either 'true' or 'false' is expected")


def _check_regex(name: str, value: str | None) -> None:
    """``Field::isRegex``."""
    if value is not None:
        try:
            java_regex(value)
        except re.error as exc:
            raise invalid(name, value, f"A valid regular expressions is expected, but {exc}") from None


def _check_required(name: str, value: str | None) -> None:
    """``Field::isRequired``."""
    if value is None or not java_trim(value):
        raise invalid(name, value, "A value is required")


def _check_choice(name: str, value: str | None, allowed: Sequence[str]) -> str:
    """An enumerated option (``Field.withEnum``): one of ``allowed`` once trimmed, in any case."""
    probe = "" if value is None else java_trim(value).lower()
    if value is None or probe not in allowed:
        raise invalid(name, value, f"Value must be one of {', '.join(allowed)}")
    return probe


_JAVA_INT: Final = re.compile(r"[+-]?\d+")


def _check_int(name: str, value: str | None) -> None:
    """``Field::isInteger`` (``Integer.parseInt``: no spaces)."""
    if value is not None and not (_JAVA_INT.fullmatch(value) and -(2**31) <= int(value) < 2**31):
        raise invalid(name, value, "An integer is expected")


def _config_list(value: str | None) -> list[str]:
    """``Configuration.getList``: comma-separated, items trimmed, nothing for no value."""
    return [] if value is None else [java_trim(item) for item in java_split(value, ",")]


# =============================================================================================================
# MongoEventRouter
# =============================================================================================================

MONGO_EVENT_ROUTER: Final = "io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter"
BY_LOGICAL_TABLE_ROUTER: Final = "io.debezium.transforms.ByLogicalTableRouter"
HEADER_TO_VALUE: Final = "io.debezium.transforms.HeaderToValue"

DEBEZIUM_TIMESTAMP: Final = Schema(Type.INT64, name="io.debezium.time.Timestamp", version=1)

_COLLECTION_TO_TABLE: Final = {
    "collection.field.event.id": "table.field.event.id",
    "collection.field.event.key": "table.field.event.key",
    "collection.field.event.type": "table.field.event.type",
    "collection.field.event.timestamp": "table.field.event.timestamp",
    "collection.field.event.payload": "table.field.event.payload",
    "collection.fields.additional.placement": "table.fields.additional.placement",
    "collection.field.additional.missing": "table.field.additional.missing",
    "collection.field.event.schema.version": "table.field.event.schema.version",
    "route.by.field": "route.by.field",
    "route.topic.regex": "route.topic.regex",
    "route.topic.replacement": "route.topic.replacement",
    "route.tombstone.on.empty.payload": "route.tombstone.on.empty.payload",
    "table.op.invalid.behavior": "table.op.invalid.behavior",
    "tracing.span.context.field": "tracing.span.context.field",
    "tracing.operation.name": "tracing.operation.name",
    "tracing.with.context.field.only": "tracing.with.context.field.only",
}
"""``MongoEventRouter.convertConfigMap``: the options it hands its ``EventRouterDelegate``, by the delegate's names
(every other option is dropped, ``table.*`` ones included, except ``table.op.invalid.behavior``, the name both
definitions share)."""

_PLACEMENTS: Final = ("header", "envelope", "partition")


@dataclass(frozen=True, slots=True)
class _AdditionalField:
    placement: str | None
    """``header``, ``envelope``, ``partition``, or ``None`` for a word Debezium does not know (it fails on it)."""
    field: str
    alias: str


def _additional_fields(value: str | None) -> list[_AdditionalField]:
    """``parseAdditionalFieldsConfig``: ``field:placement[:alias]`` items."""
    found = []
    for item in java_split(value, ",") if value is not None else []:
        parts = java_split(item, ":")
        word = java_trim(parts[1]).lower()
        name = java_trim(parts[0])
        found.append(
            _AdditionalField(
                word if word in _PLACEMENTS else None, name, java_trim(parts[2]) if len(parts) == 3 else name
            )
        )
    return found


def _check_event_router(config: Mapping[str, str]) -> None:
    """``EventRouterDelegate.configure``'s ``smtManager.validate`` over ``EventRouterConfigDefinition``."""
    placement = config.get("table.fields.additional.placement")
    if placement is not None:
        for item in java_split(placement, ","):
            if len(java_split(item, ":")) not in (2, 3):
                raise invalid(
                    "table.fields.additional.placement",
                    placement,
                    f"A comma-separated list of valid String pairs or trios is expected but got: {placement}",
                )
    _check_choice(
        "table.field.additional.missing", config.get("table.field.additional.missing", "error"), ("error", "ignore")
    )
    _check_regex("route.topic.regex", config.get("route.topic.regex"))
    _check_boolean("route.tombstone.on.empty.payload", config.get("route.tombstone.on.empty.payload"))
    _check_choice(
        "table.op.invalid.behavior", config.get("table.op.invalid.behavior", "warn"), ("warn", "error", "fatal")
    )


class MongoEventRouter:
    """``MongoEventRouter`` with its ``EventRouterDelegate`` (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._timestamp_field = options.get("collection.field.event.timestamp")
        self._expand_payload = _lenient_boolean(options.get("collection.expand.json.payload"), False)
        self._payload_field = options.get("collection.field.event.payload", "payload")
        self._converter = MongoDataConverter()

        config = {table: options[name] for name, table in _COLLECTION_TO_TABLE.items() if name in options}
        config.setdefault("table.field.event.id", "_id")
        _check_event_router(config)
        self._fatal_updates = java_trim(config.get("table.op.invalid.behavior", "warn")).lower() == "fatal"
        self._event_id = config["table.field.event.id"]
        self._event_key = config.get("table.field.event.key", "aggregateid")
        self._event_timestamp = config.get("table.field.event.timestamp")
        self._payload = config.get("table.field.event.payload", "payload")
        self._route_by = config.get("route.by.field", "aggregatetype")
        self._schema_version = config.get("table.field.event.schema.version")
        self._tombstone_on_empty = _lenient_boolean(config.get("route.tombstone.on.empty.payload"), False)
        regex = java_trim(config.get("route.topic.regex", "(?<routedByValue>.*)"))
        try:
            self._route_regex = java_regex(regex)
        except re.error as exc:
            raise invalid("regex", regex, f"Invalid regex: {exc}") from None
        self._route_replacement = java_trim(config.get("route.topic.replacement", "outbox.event.${routedByValue}"))
        self._additional = _additional_fields(config.get("table.fields.additional.placement"))
        self._ignore_missing = java_trim(config.get("table.field.additional.missing", "error")).lower() == "ignore"
        self._only_headers = not any(f.placement == "envelope" for f in self._additional)
        self._schemas_by_payload: _Lru[Schema, Schema] = _Lru(10_000)
        self._schemas_by_version: dict[int | None, Schema] = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value is None:
            return None
        if not _is_envelope(record.value_schema):
            return record
        envelope = _require_struct(record.value, "Detect Debezium Operation")
        op = envelope.get_checked("op", Type.STRING)
        if op is None:
            raise DataError("The change event has no op")
        if op == "d":
            return None
        if op == "u":
            if self._fatal_updates:
                raise DataError(f"Unexpected update message received {record.key}, fail.")
            return None
        try:
            expanded = self._expand_after(record)
        except DataError:  # Debezium logs it and carries on with the record as it was, which then fails below
            expanded = record
        return self._route(record, envelope, expanded)

    # --- MongoEventRouter.expandAfterField -----------------------------------------------------------------------

    def _expand_after(self, record: ConnectRecord) -> ConnectRecord:
        schema = record.value_schema
        assert schema is not None
        after_field = schema.field("after")
        if after_field is None:
            raise DataError("Unknown field: after")
        envelope = _require_struct(record.value, "Detect Debezium Operation")
        after = envelope.get("after")
        if not isinstance(after, str):
            raise DataError(f"Unable to expand non-String after field: {type(after).__name__}")
        document = parse_document(after)
        after_schema = self._after_schema(after_field.schema.name, document)
        after_struct = self._after_struct(after_schema, document)
        value_schema = struct_schema(
            [(f.name, f.schema) for f in schema.fields if f.name != "after"] + [("after", after_schema)],
            name=schema.name,
        )
        value = Struct(value_schema)
        for f in schema.fields:
            if f.name != "after":
                value.put(f.name, envelope.get(f.name))
        value.put("after", after_struct)
        return record.new_record(value_schema=value_schema, value=value)

    def _stringified(self, name: str, value: Any) -> bool:
        return name == self._payload_field and not self._expand_payload and isinstance(value, dict)

    def _after_schema(self, name: str | None, document: dict[str, Any]) -> Schema:
        schema_map = self._converter.parse_bson_document(document)
        builder = StructBuilder(name)
        for field, value in document.items():
            if field == self._timestamp_field:
                builder.add(field, DEBEZIUM_TIMESTAMP)
            elif self._stringified(field, value):
                builder.add(field, OPTIONAL_STRING)
        self._converter.build_schema(schema_map, builder)
        return builder.build()

    def _after_struct(self, schema: Schema, document: dict[str, Any]) -> Struct:
        built = Struct(schema)
        for field, value in document.items():
            if field == self._timestamp_field:
                if bson_type(value) is not BsonType.INT64:
                    raise DataError(f"Value expected to be of type INT64 is of unexpected type {bson_type(value)}")
                built.put(field, value.value)
            elif self._stringified(field, value):
                built.put(field, canonical_json(value))
            else:
                self._converter.build_struct(field, value, schema, built)
        return built

    # --- EventRouterDelegate.apply -----------------------------------------------------------------------------------

    def _route(self, original: ConnectRecord, envelope: Struct, record: ConnectRecord) -> ConnectRecord:
        after_schema, after = self._after_of(record)
        event = _require_struct(after, "Read Outbox Event")
        payload_field = after_schema.field(self._payload)
        if payload_field is None:
            raise DataError(f"Unable to find payload field {self._payload} in event")
        payload_schema = payload_field.schema
        timestamp = self._timestamp(envelope, event)
        event_id = event.get(self._event_id)
        payload = event.get(self._payload)
        headers = [*record.headers, Header("id", field_schema(after_schema, self._event_id), event_id)]

        value_schema: Schema | None = None
        value: Struct | None = None
        if not self._only_headers:
            if self._schema_version is None:
                value_schema = self._value_schema(
                    payload_schema, after_schema, event.get_checked(self._route_by, Type.STRING)
                )
            else:
                value_schema = self._versioned_schema(
                    payload_schema,
                    after_schema,
                    event.get_checked(self._schema_version, Type.INT32),
                    event.get_checked(self._route_by, Type.STRING),
                )
            value = Struct(value_schema).put("payload", payload)

        partition: int | None = None
        for extra in self._additional:
            if self._ignore_missing and not event.has(extra.field):
                continue
            if extra.placement == "envelope":
                assert value is not None
                value.put(extra.alias, event.get(extra.field))
            elif extra.placement == "header":
                found = event.get(extra.field)
                headers.append(Header(extra.alias, field_schema(after_schema, extra.field), found))
            elif extra.placement == "partition":
                partition = event.get_checked(extra.field, Type.INT32)
            else:
                raise DataError(f"Unknown placement for additional field {extra.field}")

        deleted = payload is None or (isinstance(payload, str) and not java_trim(payload))
        out_schema: Schema | None
        out_value: Any
        if deleted and self._tombstone_on_empty:
            out_schema, out_value = None, None
        elif self._only_headers:
            out_schema, out_value = payload_schema, payload
        else:
            out_schema, out_value = value_schema, value

        key = event.get(self._event_key)
        topic = event.get_checked(self._route_by, Type.STRING)
        if topic is None:
            raise DataError(f"The routing field {self._route_by} is null")
        if self._route_regex.fullmatch(topic):
            topic = _replace_first(self._route_regex, self._route_replacement, topic)
        return original.new_record(
            topic=topic,
            partition=partition,
            key_schema=field_schema(after_schema, self._event_key),
            key=key,
            value_schema=out_schema,
            value=out_value,
            timestamp=timestamp,
            headers=tuple(headers),
        )

    @staticmethod
    def _after_of(record: ConnectRecord) -> tuple[Schema, Any]:
        """``ExtractField.Value`` of ``after``."""
        schema = record.value_schema
        assert schema is not None
        envelope = _require_struct(record.value, "field extraction")
        found = schema.field("after")
        if found is None:
            raise DataError("Unknown field: after")
        return found.schema, envelope.get("after")

    def _timestamp(self, envelope: Struct, event: Struct) -> int | None:
        """``getEventTimestampMs``: the configured field's milliseconds, else the event's ``ts_ms``. The field, when
        the document has it, is always the ``io.debezium.time.Timestamp`` the expansion made of a NumberLong."""
        field = "ts_ms" if self._event_timestamp is None else self._event_timestamp
        if field != "ts_ms" and not event.has(field):
            raise DataError(f"Unable to find timestamp field {field} in event")
        millis: int | None = (envelope if self._event_timestamp is None else event).get_checked(field, Type.INT64)
        return millis

    def _schema_builder(self, payload_schema: Schema, event_schema: Schema, topic: str | None) -> StructBuilder:
        builder = StructBuilder(_routed_schema_name(event_schema.name, topic))
        builder.add("payload", payload_schema)
        for extra in self._additional:
            if extra.placement == "envelope":
                found = event_schema.field(extra.field)
                if found is None:
                    if not self._ignore_missing:
                        raise DataError(f"Unable to find field {extra.field} in event")
                    continue
                builder.add(extra.alias, found.schema)
        return builder

    def _value_schema(self, payload_schema: Schema, event_schema: Schema, topic: str | None) -> Schema:
        cached = self._schemas_by_payload.get(payload_schema)
        if cached is None:
            cached = self._schema_builder(payload_schema, event_schema, topic).build()
            self._schemas_by_payload.put(payload_schema, cached)
        return cached

    def _versioned_schema(
        self, payload_schema: Schema, event_schema: Schema, version: int | None, topic: str | None
    ) -> Schema:
        if version not in self._schemas_by_version:
            builder = self._schema_builder(payload_schema, event_schema, topic)
            builder.version = version
            self._schemas_by_version[version] = builder.build()
        return self._schemas_by_version[version]


def _routed_schema_name(name: str | None, topic: str | None) -> str:
    """``getSchemaName``: the routed topic before the event schema's last name part."""
    if name is None:
        return _jstr(topic)
    head, dot, tail = name.rpartition(".")
    if not dot:
        return f"{_jstr(topic)}.{name}"
    return f"{head}.{_jstr(topic)}.{tail}"


# =============================================================================================================
# ByLogicalTableRouter
# =============================================================================================================


class ByLogicalTableRouter:
    """``ByLogicalTableRouter`` (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        topic_regex = options.get("topic.regex")
        topic_replacement = options.get("topic.replacement")
        key_field_regex = options.get("key.field.regex")
        key_field_replacement = options.get("key.field.replacement")
        _check_required("topic.regex", topic_regex)
        _check_regex("topic.regex", topic_regex)
        _check_required("topic.replacement", topic_replacement)
        _check_boolean("key.enforce.uniqueness", options.get("key.enforce.uniqueness"))
        _check_regex("key.field.regex", key_field_regex)
        if java_trim(key_field_regex or "") and not java_trim(key_field_replacement or ""):
            raise ConnectConfigError("key.field.replacement must be non-empty if key.field.regex is set.")
        mode = _check_choice(
            "schema.name.adjustment.mode", options.get("schema.name.adjustment.mode", "none"), ADJUSTMENT_MODES
        )
        _check_int("logical.table.cache.size", options.get("logical.table.cache.size"))
        assert topic_regex is not None and topic_replacement is not None

        self._topic_regex = java_regex(topic_regex)
        self._topic_replacement = topic_replacement
        self._key_field_regex = java_regex(key_field_regex) if key_field_regex and java_trim(key_field_regex) else None
        self._key_field_replacement = key_field_replacement or ""
        self._key_field_name = options.get("key.field.name", "__dbz__physicalTableIdentifier")
        self._enforce_uniqueness = _lenient_boolean(options.get("key.enforce.uniqueness"), True)
        self._names = NameAdjuster(mode)
        size = int(options.get("logical.table.cache.size", "16"))
        self._key_schemas: _Lru[Schema, Schema] = _Lru(size)
        self._envelope_schemas: _Lru[Schema, Schema] = _Lru(size)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        topic = record.topic
        if not self._topic_regex.fullmatch(topic):
            return record
        new_topic = _replace_first(self._topic_regex, self._topic_replacement, topic)
        if not new_topic:
            return record
        key_schema: Schema | None = None
        key: Struct | None = None
        if record.key is not None:
            old_key = _require_struct(record.key, "Updating schema")
            key_schema = self._key_schema(old_key.schema, new_topic)
            key = self._key(key_schema, old_key, topic)
        if record.value is None or not _is_envelope(record.value_schema):
            return record.new_record(topic=new_topic, key_schema=key_schema, key=key)
        envelope = _require_struct(record.value, "Updating schema")
        envelope_schema = self._envelope_schema(envelope.schema, new_topic)
        return record.new_record(
            topic=new_topic,
            key_schema=key_schema,
            key=key,
            value_schema=envelope_schema,
            value=self._envelope(envelope_schema, envelope),
        )

    @staticmethod
    def _copy(source: Schema, *, fields: bool) -> StructBuilder:
        """``copySchemaExcludingName``: version, doc, parameters, optionality and (``fields``) the fields."""
        builder = StructBuilder(None, optional=source.optional)
        builder.version = source.version
        builder.doc = source.doc
        builder.parameters = source.params or None
        if fields:
            if source.type is not Type.STRUCT:
                raise DataError("Cannot list fields on non-struct type")
            for f in source.fields:
                builder.add(f.name, f.schema)
        return builder

    def _key_schema(self, old: Schema, topic: str) -> Schema:
        cached = self._key_schemas.get(old)
        if cached is None:
            builder = self._copy(old, fields=True)
            builder.name = self._names.adjust(topic + ".Key")
            if self._enforce_uniqueness:
                builder.add(self._key_field_name, STRING)
            cached = builder.build()
            self._key_schemas.put(old, cached)
        return cached

    def _key(self, schema: Schema, old: Struct, old_topic: str) -> Struct:
        key = Struct(schema)
        for f in old.schema.fields:
            key.put(f.name, old.get_without_default(f.name))
        if self._enforce_uniqueness:
            identifier = old_topic
            if self._key_field_regex is not None and self._key_field_regex.fullmatch(old_topic):
                identifier = _replace_first(self._key_field_regex, self._key_field_replacement, old_topic)
            key.put(self._key_field_name, identifier)
        return key

    def _envelope_schema(self, old: Schema, topic: str) -> Schema:
        cached = self._envelope_schemas.get(old)
        if cached is None:
            before = old.field("before")
            if before is None:
                raise DataError("The envelope has no before field")
            value_builder = self._copy(before.schema, fields=True)
            value_builder.name = self._names.adjust(topic + ".Value")
            value_schema = value_builder.build()
            builder = self._copy(old, fields=False)
            for f in old.fields:
                builder.add(f.name, value_schema if f.name in ("before", "after") else f.schema)
            builder.name = self._names.adjust(topic + ".Envelope")
            cached = builder.build()
            self._envelope_schemas.put(old, cached)
        return cached

    @staticmethod
    def _envelope(schema: Schema, old: Struct) -> Struct:
        envelope = Struct(schema)
        value_schema = field_schema(schema, "before")
        for f in old.schema.fields:
            value = old.get(f.name)
            if f.name in ("before", "after") and value is not None:
                row = _require_struct(value, "Updating schema")
                value = Struct(value_schema)
                for column in row.schema.fields:
                    value.put(column.name, row.get_without_default(column.name))
            envelope.put(f.name, value)
        return envelope


# =============================================================================================================
# HeaderToValue (with ConnectRecordUtil.makeNewSchema/makeUpdatedValue)
# =============================================================================================================

_ROOT: Final = "payload"


@dataclass(frozen=True, slots=True)
class _NewEntry:
    name: str
    schema: Schema | None
    value: Any


def _contained(name: str, nested: Sequence[str]) -> bool:
    """``isContainedIn``: some dotted name contains ``name.`` (anywhere, as Debezium checks)."""
    return any(name + "." in candidate for candidate in nested)


def _entry_field(destination: str, current: str, level: int) -> str | None:
    """``getFieldName``: the field an entry adds to the struct at ``current``/``level``, if any."""
    names = java_split(destination, ".")
    if len(names) == 1 and current == _ROOT:
        return names[0]
    if len(names) == level + 1 and names[0 if level == 0 else level - 1] == current:
        return names[level]
    return None


def _new_parents(current: str, schema: Schema, nested: Sequence[str], level: int) -> list[str]:
    """``getNewParentFieldsAtLevel``: struct fields a dotted name needs that the schema does not have."""
    parents: list[str] = []
    for candidate in nested:
        parts = java_split(candidate, ".")
        here = (level == 0 and current == _ROOT) or (0 < level < len(parts) and parts[level - 1] == current)
        if here and level < len(parts) - 1:
            name = parts[level]
            if schema.field(name) is None and name not in parents:
                parents.append(name)
    return parents


def _parent_child(destination: str, parent: str, current: str, level: int) -> str | None:
    """``getNestedFieldNameForParent``: the field a dotted name puts in a new top-level parent struct. Below the
    top level Debezium compares the dotted path so far with the parent's (undotted) name, which never matches:
    a new parent there stays an empty struct."""
    parts = java_split(destination, ".")
    if level == 0 and current == _ROOT and len(parts) > 1 and parts[0] == parent:
        return parts[1]
    return None


def _validate_nested(schema: Schema, nested: Sequence[str]) -> None:
    for candidate in nested:
        current = schema
        for part in java_split(candidate, ".")[:-1]:
            found = current.field(part)
            if found is None:
                break
            if found.schema.type.primitive:
                raise DataError(
                    f"Field '{part}' is a primitive type, not a struct. Cannot add nested field '{candidate}'."
                )
            current = found.schema


def _new_schema(current: str, old: Schema, entries: Sequence[_NewEntry], nested: Sequence[str], level: int) -> Schema:
    """``buildNewSchema``: ``old`` with the entries' fields, at every level their dotted names reach."""
    if old.type.primitive:
        return old
    builder = StructBuilder(old.name)
    builder.version = old.version
    builder.doc = old.doc
    builder.parameters = old.params or None
    if old.type is not Type.STRUCT:
        raise DataError("Cannot list fields on non-struct type")
    for f in old.fields:
        builder.add(
            f.name,
            _new_schema(f.name, f.schema, entries, nested, level + 1) if _contained(f.name, nested) else f.schema,
        )
    for entry in entries:
        name = _entry_field(entry.name, current, level)
        if name is not None and name not in builder.fields:
            builder.add(name, entry.schema)
    for parent in _new_parents(current, old, nested, level):
        children = StructBuilder(None, optional=True)
        for entry in entries:
            child = _parent_child(entry.name, parent, current, level)
            if child is not None:
                children.add(child, entry.schema)
        builder.add(parent, children.build())
    return builder.build()


def _updated_value(
    current: str, old: Struct, entries: Sequence[_NewEntry], schema: Schema, nested: Sequence[str], level: int
) -> Struct:
    """``buildUpdatedValue``: ``old``'s non-null fields (defaults applied) and the entries' values."""
    updated = Struct(schema)
    for f in old.schema.fields:
        value = old.get(f.name)
        if value is None:
            continue
        if _contained(f.name, nested):
            inner = _require_struct(value, "Nested field")
            value = _updated_value(f.name, inner, entries, field_schema(schema, f.name), nested, level + 1)
        updated.put(f.name, value)
    for entry in entries:
        name = _entry_field(entry.name, current, level)
        if name is not None:
            updated.put(name, entry.value)
    for parent in _new_parents(current, old.schema, nested, level):
        parent_field = schema.field(parent)
        if parent_field is not None:
            children = Struct(parent_field.schema)
            for entry in entries:
                child = _parent_child(entry.name, parent, current, level)
                if child is not None:
                    children.put(child, entry.value)
            updated.put(parent, children)
    return updated


class HeaderToValue:
    """``HeaderToValue`` (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        for name in ("fields", "headers"):
            value = options.get(name)
            _check_required(name, value)
            items = _config_list(value)
            if any(" " in item for item in items):
                raise invalid(name, items, "Element(s) containing space not permitted")
            if "" in items:
                raise invalid(name, items, "Empty string element(s) not permitted")
        operation = options.get("operation")
        _check_required("operation", operation)
        self._move = _check_choice("operation", operation, ("move", "copy")) == "move"
        self._fields = _config_list(options.get("fields"))
        self._headers = _config_list(options.get("headers"))
        if len(self._fields) != len(self._headers):
            raise ConnectConfigError("'fields' config must have the same number of elements as 'headers' config.")
        self._schemas: _Lru[Schema, Schema] = _Lru(64)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value is None:
            return record
        value = _require_struct(record.value, "Header field insertion")
        entries = [
            _NewEntry(self._fields[self._headers.index(h.key)], h.schema, h.value)
            for h in record.headers
            if h.key in self._headers
        ]
        if not entries:
            return record
        nested = [entry.name for entry in entries if "." in entry.name]
        schema = self._schemas.get(value.schema)
        if schema is None:
            _validate_nested(value.schema, nested)
            schema = _new_schema(_ROOT, value.schema, entries, nested, 0)
            self._schemas.put(value.schema, schema)
        updated = _updated_value(_ROOT, value, entries, schema, nested, 0)
        headers = record.headers
        if self._move:
            headers = tuple(h for h in headers if h.key not in self._headers)
        return record.new_record(value_schema=schema, value=updated, headers=headers)


TRANSFORMS: Final[dict[str, TransformFactory]] = {
    MONGO_EVENT_ROUTER: MongoEventRouter,
    BY_LOGICAL_TABLE_ROUTER: ByLogicalTableRouter,
    HEADER_TO_VALUE: HeaderToValue,
}
