"""Debezium 3.6.1's MongoDB outbox router, record for record as Debezium's ``MongoEventRouter`` transforms
them; registered with Debezium's other transforms in ``debezium_transforms.TRANSFORMS``.

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

Options are read as Debezium's ``Configuration`` reads them (raw text, no trimming, Debezium's validators);
the Kafka classes Debezium delegates to (``RegexRouter``) trim theirs. A record Debezium fails on raises
``DataError``. Debezium's bounded concurrent caches (segmented LRUs of 64 and 10 000 entries) are plain LRUs of
the same size here: they differ only in which entry goes once more schemas than that have been seen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.connect.base import (
    invalid,
    java_regex,
    java_split,
    java_trim,
)
from mongocdc.events.connect.data import (
    OPTIONAL_STRING,
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
from mongocdc.events.connect.debezium_common import (
    _check_boolean,
    _check_choice,
    _check_regex,
    _is_envelope,
    _jstr,
    _lenient_boolean,
    _Lru,
    _replace_first,
    _require_struct,
)
from mongocdc.events.connect.mongo_data import (
    BsonType,
    MongoDataConverter,
    bson_type,
    canonical_json,
    parse_document,
)

# =============================================================================================================
# MongoEventRouter
# =============================================================================================================

MONGO_EVENT_ROUTER: Final = "io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter"

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
