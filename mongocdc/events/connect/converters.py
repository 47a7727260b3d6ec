"""Kafka Connect's converters besides JsonConverter, and Debezium's CloudEventsConverter (JSON), byte for byte.

Pure. Each class is registered in :data:`CONVERTERS` under its Java name and configured with the options
Connect hands its ``configure`` (``<side>.converter.*`` with the prefix stripped):

* ``org.apache.kafka.connect.storage.StringConverter``, ``org.apache.kafka.connect.converters.ByteArrayConverter``
  and the primitive ``org.apache.kafka.connect.converters.{Short,Integer,Long,Float,Double,Boolean}Converter``: in
  ``kafka_converters`` (see its docstring), registered here.
* ``io.debezium.converters.CloudEventsConverter`` (Debezium 3.6.1) with JSON events and JSON data: see
  :class:`CloudEventsConverter`. Avro (``serializer.type`` or ``data.serializer.type`` ``avro``) needs a
  schema registry: refused.

Only a value of a data change event becomes a CloudEvent; a key, a heartbeat, a transaction metadata event
and a tombstone are written as null by CloudEventsConverter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mongocdc.events.connect.base import ConnectConfigError, Converter, ConverterFactory, boolean, option, text
from mongocdc.events.connect.data import (
    INT64,
    STRING,
    DataError,
    Field,
    Header,
    Schema,
    Struct,
    Type,
    struct_schema,
)
from mongocdc.events.connect.java_lang import java_class
from mongocdc.events.connect.json import JsonConverter, JsonConverterConfig, connect_schema
from mongocdc.events.connect.kafka_converters import (
    _NUMBER_CONVERTERS,
    ByteArrayConverter,
    NumberConverter,
    StringConverter,
    java_charset,
    java_text,
    rfc3339_millis,
)
from mongocdc.events.connect.values import convert_to_string

# --- CloudEventsConverter ---------------------------------------------------------------------------------------

_VALUE: Final = "value"
_HEADER: Final = "header"
_GENERATE: Final = "generate"
_METADATA_SOURCE_DEFAULT: Final = "value,id:generate,type:generate,traceparent:header,dataSchemaName:generate"
_CUSTOMIZABLE: Final = ("id", "type", "traceparent", "dataSchemaName")
_DATA_FIELDS: Final = ("before", "after", "updateDescription")
"""The data a MongoDB change event's CloudEvent carries (``MongoDbCloudEventsMaker``)."""
_CONNECTOR: Final = "mongodb"
"""The only ``CloudEventsProvider`` on the classpath of mongocdc's connector."""
_TRANSACTION_BLOCK: Final = struct_schema(
    [("id", STRING), ("total_order", INT64), ("data_collection_order", INT64)],
    name="event.block",
    version=1,
    optional=True,
)
"""``TransactionMonitor.TRANSACTION_BLOCK_SCHEMA``: the ``iodebeziumtx*`` attributes follow its fields."""


@dataclass(frozen=True, slots=True)
class MetadataSource:
    """``CloudEventsConverterConfig.MetadataSource``: where the envelope's metadata (``value`` or ``header``) and
    the customizable attributes (``header`` or ``generate``, else as the envelope's) come from."""

    envelope: str
    id: str
    type: str
    traceparent: str
    data_schema_name: str

    @classmethod
    def parse(cls, entries: Sequence[str], tracing: bool, data_name_from_header: bool) -> MetadataSource:
        if not entries:
            raise ConnectConfigError("metadata.source must name the global metadata source (value or header)")
        envelope = _metadata_source_value(entries[0])
        if envelope not in (_VALUE, _HEADER):
            raise ConnectConfigError(f"Global metadata source can't be {(envelope or entries[0]).upper()}")
        custom: dict[str, str] = {}
        for entry in entries[1:]:
            parts = entry.split(":")
            while parts and not parts[-1]:  # String.split drops trailing empty strings
                parts.pop()
            if len(parts) < 2:
                raise ConnectConfigError(f"metadata.source entry `{entry}` is not <field>:<source>")
            source = _metadata_source_value(parts[1])
            if source is None:
                raise ConnectConfigError(f"Field source `{parts[1]}` is not valid")
            if source not in (_HEADER, _GENERATE):
                raise ConnectConfigError(f"Field metadata source can't be {source.upper()}")
            if parts[0] not in _CUSTOMIZABLE:
                raise ConnectConfigError(f"Field `{parts[0]}` is not allowed to set custom source")
            custom[parts[0]] = source
        traceparent = custom.get("traceparent", envelope)
        data_schema_name = custom.get("dataSchemaName", envelope)
        return cls(
            envelope,
            custom.get("id", envelope),
            custom.get("type", envelope),
            _GENERATE if traceparent == _HEADER and not tracing else traceparent,
            _GENERATE if data_schema_name == _HEADER and not data_name_from_header else data_schema_name,
        )


def _metadata_source_value(text_: str) -> str | None:
    lowered = text_.strip().lower()
    return lowered if lowered in (_VALUE, _HEADER, _GENERATE) else None


def _config_list(options: Mapping[str, str], name: str, default: str) -> list[str]:
    """A ``ConfigDef`` LIST: trimmed, split at commas with the blanks around them, empty items kept."""
    value = text(options, name, default)
    return re.split(r"\s*,\s*", value) if value else []


def _extension_name(original: str) -> str:
    """``CloudEventsConverter.adjustExtensionName``: ``iodebezium`` and the name's ASCII letters and digits."""
    return "iodebezium" + "".join(c for c in original if c.isascii() and c.isalnum())


def _extension_schema(schema: Schema, always_optional: bool) -> Schema:
    """The attribute schema of a ``source`` (or transaction) field: ``int64`` becomes a string, as CloudEvents has
    no 64-bit integers."""
    if schema.type is Type.BOOLEAN:
        kind = Type.BOOLEAN
    elif schema.type in (Type.INT8, Type.INT16, Type.INT32):
        kind = Type.INT32
    elif schema.type in (Type.STRING, Type.INT64):
        kind = Type.STRING
    else:
        raise DataError(
            f"Source field of type {schema.type.java_name} cannot be converted into CloudEvents extension attribute."
        )
    return Schema(kind, optional=always_optional or schema.optional)


def _at(struct: Struct, slot: Field) -> tuple[Schema, Any]:
    """``struct.get(slot)`` for a field of another schema: Connect reads the value at the field's position (with
    the field's default for a null); also the schema the struct holds that value under."""
    items = list(struct.items())
    if slot.index >= len(items):
        raise DataError(f"Index {slot.index} out of bounds for length {len(items)}")
    own, raw = items[slot.index]
    return own.schema, slot.schema.default if raw is None else raw


def _java_long(schema: Schema, value: Any, what: str) -> int:
    """``(long) value``: ``value`` must be a ``java.lang.Long``."""
    if value is None:
        raise DataError(f"{what} is null")
    found = java_class(schema, value)
    if found != "Long":
        raise DataError(f"class java.lang.{found} cannot be cast to class java.lang.Long ({what})")
    return int(value)


@dataclass
class _Event:
    """``RecordAndMetadata`` (``RecordAndMetadataHeaderImpl``, whose attributes fall back to the base implementation's
    when their source is not ``header``) for one record."""

    record: Struct
    schema: Schema
    headers: Sequence[Header]
    sources: MetadataSource
    reader: JsonConverter
    _source: tuple[Struct | None] | None = field(default=None, init=False, repr=False)

    def header(self, name: str, *, optional: bool) -> Any:
        """The value of the last header ``name`` as ``JsonConverter`` (``schemas.enable``) reads the bytes
        SimpleHeaderConverter wrote for it."""
        found = None
        for h in self.headers:
            if h.key == name:
                found = h
        if found is None:
            if optional:
                return None
            raise DataError(f"Header `{name}` was not provided")
        raw = convert_to_string(found.value, found.schema)
        if raw is None:
            return None
        try:
            return self.reader.to_connect(raw.encode("utf-8", "replace"))[1]  # as StringConverter encodes
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise DataError(f"Header `{name}` is not a JSON envelope with a schema: {exc}") from None

    def _string_header(self, name: str, *, optional: bool) -> Any:
        value = self.header(name, optional=optional)
        if value is not None and not isinstance(value, str):
            raise DataError(f"Header `{name}` holds a {type(value).__name__}, not a String")
        return value

    def source(self) -> Struct | None:
        if self._source is None:
            if self.sources.envelope == _HEADER:
                value = self.header("source", optional=False)
                if value is not None and not isinstance(value, Struct):
                    raise DataError(f"Header `source` holds a {type(value).__name__}, not a Struct")
                self._source = (value,)
            else:
                self._source = (self.record.get_checked("source", Type.STRUCT),)
        return self._source[0]

    def required_source(self) -> Struct:
        source = self.source()
        if source is None:
            raise DataError("The record has no source")
        return source

    def operation(self) -> Any:
        if self.sources.envelope == _HEADER:
            return self._string_header("op", optional=False)
        return self.record.get_checked("op", Type.STRING)

    def transaction(self) -> Struct | None:
        if self.sources.envelope == _HEADER:
            value = self.header("transaction", optional=True)
        else:
            value = self.record.get_checked("transaction", Type.STRUCT) if self.schema.field("transaction") else None
        if value is not None and not isinstance(value, Struct):
            raise DataError(f"Header `transaction` holds a {type(value).__name__}, not a Struct")
        return value

    def id(self) -> Any:
        return self._string_header("id", optional=False) if self.sources.id == _HEADER else None

    def type(self) -> Any:
        return self._string_header("type", optional=False) if self.sources.type == _HEADER else None

    def traceparent(self) -> Any:
        if self.sources.traceparent == _HEADER:
            return self._string_header("traceparent", optional=True)
        raise DataError(
            "Value for `traceparent` CloudEvents field currently can't be obtained from a record value and can "
            "only be obtained from a record header"
        )

    def connector(self) -> Any:
        return self.required_source().get_checked("connector", Type.STRING)

    def source_field(self, name: str) -> tuple[Schema, Any]:
        source = self.required_source()
        found = source.schema.field(name)
        if found is None:
            raise DataError(f"{name} is not a valid field name")
        return found.schema, source.get(name)

    def data_schema(self) -> Schema:
        """Every field of the value when the envelope's metadata comes from the headers (the value need not be an
        envelope then), else ``before``, ``after`` and ``updateDescription``."""
        if self.sources.data_schema_name == _HEADER:
            name = self._string_header("dataSchemaName", optional=False)
        else:
            name = f"io.debezium.connector.{java_text(None, self.connector())}.Data"
        if self.sources.envelope == _HEADER:
            fields = [(f.name, f.schema) for f in self.schema.fields]
        else:
            fields = []
            for field_name in _DATA_FIELDS:
                found = self.schema.field(field_name)
                if found is None:
                    raise DataError(f"The value has no field {field_name}")
                fields.append((field_name, found.schema))
        return struct_schema(fields, name=name)

    def data(self, schema: Schema) -> Struct:
        data = Struct(schema)
        for f in schema.fields:
            data.put(f.name, _at(self.record, f)[1])
        return data


@dataclass(frozen=True)
class CloudEventsConverter:
    """``io.debezium.converters.CloudEventsConverter`` with JSON events and JSON data (Debezium 3.6.1).

    A data change event's value (a struct whose schema name ends in ``.Envelope``; with ``metadata.source``
    ``header``, any struct value of a record with ``source`` and ``op`` headers) becomes a CloudEvent:
    ``id`` (``name:<source.name>;ts:<source.ts_ms>;ord:<source.ord>``, or the ``id`` header), ``source``
    (``/debezium/mongodb/<source.name>``), ``specversion`` ``1.0``, ``type``
    (``io.debezium.connector.mongodb.DataChangeEvent``, or the ``type`` header), ``time`` (``source.ts_ms`` in
    RFC 3339, UTC), ``datacontenttype`` ``application/json``, with ``opentelemetry.tracing.attributes.enable``
    ``traceparent`` (from the header of that name), with ``extension.attributes.enable`` (the default)
    ``iodebeziumop`` and one ``iodebezium<name>`` attribute per ``source`` field (``int64`` as a string) and the
    transaction's ``iodebeziumtxid``, ``iodebeziumtxtotalorder``, ``iodebeziumtxdatacollectionorder``, then
    ``data``: ``before``, ``after`` and ``updateDescription`` in a struct named
    ``io.debezium.connector.mongodb.Data`` (or the ``dataSchemaName`` header), with its schema when
    ``json.schemas.enable`` (the default). Everything else is null. The event is written by a JsonConverter
    without schemas configured with the ``json.*`` options, the data by one with them. The event's own schema,
    named by ``schema.cloudevents.name`` or after ``source.name`` and ``source.db`` and adjusted by
    ``schema.name.adjustment.mode``, is not written in JSON (only the options are checked; the adjustment
    never fails: Debezium's conflict check starts afresh for each name).

    A header (``metadata.source`` ``header``) is read as Debezium reads it: the bytes the header converter
    wrote (SimpleHeaderConverter's text, the only header converter mongocdc has) as a JSON envelope with a
    schema, so a header must hold such an envelope.
    """

    sources: MetadataSource
    tracing: bool
    extensions: bool
    schema_name: str | None
    envelope_writer: JsonConverter
    data_writer: JsonConverter
    data_schemas: bool
    reader: JsonConverter

    @classmethod
    def configure(cls, options: Mapping[str, str], is_key: bool) -> CloudEventsConverter:
        del is_key  # it only tells the inner JsonConverters which side they serve
        for name in ("serializer.type", "data.serializer.type"):
            kind = text(options, name, "json").lower()
            if kind == "avro":
                raise ConnectConfigError(
                    f"{name}=avro: Avro CloudEvents need a schema registry, which mongocdc does not support (use json)"
                )
            if kind != "json":
                raise ConnectConfigError(f"Invalid value {kind} for configuration {name}: must be json or avro")
        tracing = boolean(options, "opentelemetry.tracing.attributes.enable", False)
        extensions = boolean(options, "extension.attributes.enable", True)
        data_name_from_header = boolean(options, "schema.data.name.source.header.enable", False)
        mode = text(options, "schema.name.adjustment.mode", "avro").lower()
        if mode not in ("none", "avro", "avro_unicode"):
            raise ConnectConfigError(
                f"Invalid value {mode} for configuration schema.name.adjustment.mode: "
                "must be none, avro or avro_unicode"
            )
        sources = MetadataSource.parse(
            _config_list(options, "metadata.source", _METADATA_SOURCE_DEFAULT), tracing, data_name_from_header
        )
        json_options = {key[len("json.") :]: value for key, value in options.items() if key.startswith("json.")}
        json_config = _json_config(json_options)
        return cls(
            sources=sources,
            tracing=tracing,
            extensions=extensions,
            schema_name=option(options, "schema.cloudevents.name"),
            envelope_writer=JsonConverter(
                JsonConverterConfig(
                    schemas_enable=False,
                    decimal_format=json_config.decimal_format,
                    replace_null_with_default=json_config.replace_null_with_default,
                )
            ),
            data_writer=JsonConverter(json_config),
            data_schemas=json_config.schemas_enable,
            reader=JsonConverter(),
        )

    def from_connect(
        self, topic: str, schema: Schema | None, value: Any, headers: Sequence[Header] = ()
    ) -> bytes | None:
        if schema is None or value is None:
            return None
        if self.sources.envelope == _VALUE:
            if schema.name is None:
                raise DataError("Cannot tell whether a schema without a name is a change event envelope")
            if not schema.name.endswith(".Envelope"):
                return None
        elif not any(h.key == "source" for h in headers) or not any(h.key == "op" for h in headers):
            return None
        if schema.type is not Type.STRUCT:
            raise DataError("Mismatching schema")
        if not isinstance(value, Struct):
            raise DataError(
                f"Only Struct objects supported for [CloudEvents converter], found: {java_class(None, value)}"
            )
        event = _Event(value, schema, headers, self.sources, self.reader)
        connector = event.connector()
        if connector != _CONNECTOR:
            raise DataError(f'No usable CloudEvents converters for connector type "{java_text(None, connector)}"')
        data_schema = event.data_schema()
        data = event.data(data_schema)
        if not self.data_schemas:
            envelope = self._envelope(event, data_schema, data)
            written = self.envelope_writer.from_connect(topic, envelope.schema, envelope)
            assert written is not None
            return written
        # As Debezium: the event with an empty struct for data, whose "{}}" is replaced by the data's envelope.
        empty = struct_schema([])
        envelope = self._envelope(event, empty, Struct(empty))
        data_json = self.data_writer.from_connect(topic, data_schema, data)
        event_json = self.envelope_writer.from_connect(topic, envelope.schema, envelope)
        assert data_json is not None and event_json is not None
        return event_json[:-3] + data_json + b"}"

    def _envelope(self, event: _Event, data_schema: Schema, data: Struct) -> Struct:
        """``convertToCloudEventsFormat``: the CloudEvent as a struct."""
        source = event.required_source()
        if self.schema_name is None:  # the event's schema is named after these (the name is not written in JSON)
            event.source_field("name")
            event.source_field("db")
        fields: list[tuple[str, Schema]] = [
            (attribute, STRING) for attribute in ("id", "source", "specversion", "type", "time", "datacontenttype")
        ]
        if self.tracing:
            fields.append(("traceparent", STRING))
        if self.extensions:
            fields.append(("iodebeziumop", STRING))
            fields.extend((_extension_name(f.name), _extension_schema(f.schema, False)) for f in source.schema.fields)
            fields.extend(
                (_extension_name("tx" + f.name), _extension_schema(f.schema, True)) for f in _TRANSACTION_BLOCK.fields
            )
        fields.append(("data", data_schema))
        envelope = Struct(struct_schema(fields))
        connector = java_text(None, event.connector())
        envelope.put("id", self._id(event) if self.sources.id == _GENERATE else event.id())
        envelope.put("source", f"/debezium/{connector}/{java_text(None, source.get_checked('name', Type.STRING))}")
        envelope.put("specversion", "1.0")
        envelope.put(
            "type",
            f"io.debezium.connector.{connector}.DataChangeEvent" if self.sources.type == _GENERATE else event.type(),
        )
        envelope.put("time", rfc3339_millis(_java_long(*event.source_field("ts_ms"), "source.ts_ms")))
        envelope.put("datacontenttype", "application/json")
        if self.tracing:
            envelope.put("traceparent", event.traceparent())
        if self.extensions:
            envelope.put("iodebeziumop", event.operation())
            for f in source.schema.fields:
                _put_attribute(envelope, _extension_name(f.name), f.schema, source.get(f.name))
            transaction = event.transaction()
            if transaction is not None:
                for f in _TRANSACTION_BLOCK.fields:
                    own, raw = _at(transaction, f)
                    _put_attribute(envelope, _extension_name("tx" + f.name), f.schema, raw, own)
        envelope.put("data", data)
        return envelope

    @staticmethod
    def _id(event: _Event) -> str:
        """``MongoDbCloudEventsMaker.ceId``."""
        name = java_text(*event.source_field("name"))
        ts = java_text(*event.source_field("ts_ms"))
        order = java_text(*event.source_field("ord"))
        return f"name:{name};ts:{ts};ord:{order}"


def _put_attribute(envelope: Struct, name: str, declared: Schema, value: Any, held: Schema | None = None) -> None:
    """``ceValueFromStruct`` for one field: an ``int64`` (``declared``) as its decimal string; the value must be of
    the Java type the attribute's schema takes (a ``Short`` is no ``Integer``). ``held`` is the schema the
    value was read under, when not ``declared``."""
    held = held or declared
    if value is not None:
        if declared.type is Type.INT64:
            value = str(_java_long(held, value, name))
        elif java_class(held, value) in ("Byte", "Short"):
            raise DataError(
                f"Invalid Java object for schema with type INT32: class java.lang.{java_class(held, value)}"
            )
    envelope.put(name, value)


def _json_config(options: Mapping[str, str]) -> JsonConverterConfig:
    """``JsonConverterConfig`` of the ``json.*`` options (``schemas.enable``, ``schemas.cache.size``,
    ``decimal.format``, ``replace.null.with.default``, ``schema.content``)."""
    cache_size = text(options, "schemas.cache.size", "1000")
    if not re.fullmatch(r"[+-]?[0-9]+", cache_size) or not -(2**31) <= int(cache_size) < 2**31:
        raise ConnectConfigError(
            f"Invalid value {cache_size} for configuration schemas.cache.size: Not a number of type INT"
        )
    decimal_format = text(options, "decimal.format", "BASE64").upper()
    if decimal_format not in ("BASE64", "NUMERIC"):
        raise ConnectConfigError(
            f"Invalid value {decimal_format} for configuration decimal.format: String must be one of (case "
            "insensitive): BASE64, NUMERIC"
        )
    content = text(options, "schema.content")
    if content:
        try:
            connect_schema(json.loads(content))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConnectConfigError(f"Failed to parse schema in converter config: {exc}") from None
    return JsonConverterConfig(
        schemas_enable=boolean(options, "schemas.enable", True),
        decimal_format=decimal_format,
        replace_null_with_default=boolean(options, "replace.null.with.default", True),
    )


def _byte_array(options: Mapping[str, str], is_key: bool) -> Converter:
    return ByteArrayConverter()


def _number(java_type: str) -> ConverterFactory:
    def factory(options: Mapping[str, str], is_key: bool) -> Converter:
        return NumberConverter(java_type, _NUMBER_CONVERTERS[java_type])

    return factory


CONVERTERS: Final[dict[str, ConverterFactory]] = {
    "io.debezium.converters.CloudEventsConverter": CloudEventsConverter.configure,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter.configure,
    "org.apache.kafka.connect.converters.ByteArrayConverter": _byte_array,
    **{f"org.apache.kafka.connect.converters.{name}Converter": _number(name) for name in _NUMBER_CONVERTERS},
}

__all__ = [
    "CONVERTERS",
    "ByteArrayConverter",
    "CloudEventsConverter",
    "MetadataSource",
    "NumberConverter",
    "StringConverter",
    "java_charset",
    "java_text",
    "rfc3339_millis",
]
