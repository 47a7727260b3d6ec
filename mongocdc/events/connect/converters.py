"""Kafka Connect's converters besides JsonConverter, and Debezium's CloudEventsConverter (JSON), byte for byte.

Pure. Each class is registered in :data:`CONVERTERS` under its Java name and configured with the options
Connect hands its ``configure`` (``<side>.converter.*`` with the prefix stripped):

* ``org.apache.kafka.connect.storage.StringConverter`` (Kafka 4.3.1): ``String.valueOf`` of the value
  (``Struct{a=1,b=x}`` without the null fields, ``[x, y]``, ``{k=v}`` in the order of the ``HashMap``
  JsonConverter reads a map into, numbers as Java prints them, a ``java.util.Date`` as
  ``Thu Jan 01 00:00:00 UTC 1970``: a worker whose JVM runs in UTC) in ``converter.encoding`` (``UTF-8``), which
  ``key.serializer.encoding`` / ``value.serializer.encoding`` override for the key or the value side (a
  bad ``*.deserializer.encoding`` is refused too). The charset is looked up by its Java name or alias,
  among the standard charsets (US-ASCII, ISO-8859-1, UTF-8, UTF-16 with its byte order mark, UTF-16BE/LE,
  UTF-32, UTF-32BE/LE; Java's extended charsets are refused), a character it cannot encode written as Java
  writes it (``?``, or U+FFFD in the UTF-16/32 families). A ``byte[]`` inside a value is written ``[B@`` and
  a hash: Java prints the array's identity hash, which no other run reproduces.
* ``org.apache.kafka.connect.converters.ByteArrayConverter``: the bytes of a ``BYTES`` value; a schema of
  another type, or a value that is not bytes, is a ``DataError`` (Connect's ``DataException``), so a
  record with a struct key or value fails.
* ``org.apache.kafka.connect.converters.{Short,Integer,Long,Float,Double}Converter``: the value big-endian
  (``Float``/``Double`` as IEEE 754 bits) when it is that Java type (by its schema: ``INT16`` is ``Short``,
  ``INT32`` ``Integer``, …), else a ``DataError``; ``BooleanConverter``: one byte, ``1`` or ``0``, and a
  ``DataError`` for a schema that is not ``BOOLEAN``. Null is null.
* ``io.debezium.converters.CloudEventsConverter`` (Debezium 3.6.1) with JSON events and JSON data: see
  :class:`CloudEventsConverter`. Avro (``serializer.type`` or ``data.serializer.type`` ``avro``) needs a
  schema registry: refused.

Only a value of a data change event becomes a CloudEvent; a key, a heartbeat, a transaction metadata event
and a tombstone are written as null by CloudEventsConverter.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import struct as _struct
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
    millis_of,
    struct_schema,
)
from mongocdc.events.connect.java_lang import HashMap, f32, java_class, number_text
from mongocdc.events.connect.java_time import DateFormat, date_to_string
from mongocdc.events.connect.json import JsonConverter, JsonConverterConfig, connect_schema
from mongocdc.events.connect.values import convert_to_string

# --- String.valueOf ---------------------------------------------------------------------------------------------

_RFC3339: Final = DateFormat("yyyy-MM-dd'T'HH:mm:ss.SSSXXX")


def rfc3339_millis(millis: int) -> str:
    """``SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSSXXX")`` in UTC: ``2026-11-25T16:36:52.302Z``."""
    return _RFC3339.format(millis)


def java_text(schema: Schema | None, value: Any) -> str:
    """``String.valueOf(value)`` of a Connect value (``value.toString()`` in Java)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Struct):
        return (
            "Struct{"
            + ",".join(f"{f.name}={java_text(f.schema, raw)}" for f, raw in value.items() if raw is not None)
            + "}"
        )
    if isinstance(value, dt.datetime):
        return date_to_string(millis_of(value))
    if isinstance(value, (int, float, decimal.Decimal)):
        return number_text(java_class(schema, value), value)
    if isinstance(value, (bytes, bytearray)):
        return f"[B@{hash(bytes(value)) & 0x7FFFFFFF:x}"
    if isinstance(value, list):
        items = None if schema is None else schema.value_schema
        return "[" + ", ".join(java_text(items, item) for item in value) + "]"
    if isinstance(value, dict):
        keys_schema = None if schema is None else schema.key_schema
        values_schema = None if schema is None else schema.value_schema
        table = HashMap(key_schema=keys_schema)
        for key, item in value.items():
            table.put(key, item)
        ordered = table.to_dict().items()
        return "{" + ", ".join(f"{java_text(keys_schema, k)}={java_text(values_schema, v)}" for k, v in ordered) + "}"
    return str(value)


# --- charsets -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Charset:
    """A Java charset as Python's codec ``codec`` writes it; ``mark`` is its byte order mark (``UTF-16`` writes
    one before a non-empty text) and ``wide`` whether an unencodable character becomes U+FFFD (else ``?``)."""

    codec: str
    mark: bytes = b""
    wide: bool = False

    def encode(self, text_: str) -> bytes:
        if self.wide:
            text_ = _LONE_SURROGATE.sub("\ufffd", text_)
            return (self.mark if text_ else b"") + text_.encode(self.codec)
        return text_.encode(self.codec, "replace")


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_CHARSETS: Final = {
    ("US-ASCII", "ANSI_X3.4-1968", "cp367", "csASCII", "iso-ir-6", "ASCII", "iso_646.irv:1983", "ANSI_X3.4-1986",
     "ascii7", "default", "ISO_646.irv:1991", "ISO646-US", "IBM367", "646", "us"): _Charset("ascii"),
    ("ISO-8859-1", "819", "ISO8859-1", "l1", "ISO_8859-1:1987", "ISO_8859-1", "8859_1", "iso-ir-100", "latin1",
     "cp819", "ISO8859_1", "IBM819", "ISO_8859_1", "IBM-819", "csISOLatin1"): _Charset("latin-1"),
    ("UTF-8", "unicode-1-1-utf-8", "UTF8"): _Charset("utf-8"),
    ("UTF-16", "UTF_16", "unicode", "utf16", "UnicodeBig"): _Charset("utf-16-be", b"\xfe\xff", wide=True),
    ("UTF-16BE", "X-UTF-16BE", "UTF_16BE", "ISO-10646-UCS-2", "UnicodeBigUnmarked"): _Charset("utf-16-be", wide=True),
    ("UTF-16LE", "UnicodeLittleUnmarked", "UTF_16LE", "X-UTF-16LE"): _Charset("utf-16-le", wide=True),
    ("UTF-32", "UTF_32", "UTF32"): _Charset("utf-32-be", wide=True),
    ("UTF-32BE", "X-UTF-32BE", "UTF_32BE"): _Charset("utf-32-be", wide=True),
    ("UTF-32LE", "X-UTF-32LE", "UTF_32LE"): _Charset("utf-32-le", wide=True),
}  # fmt: skip
_BY_NAME: Final = {name.lower(): charset for names, charset in _CHARSETS.items() for name in names}


def java_charset(name: str) -> _Charset:
    """``Charset.forName(name)`` (names and aliases case-insensitive), among the standard charsets."""
    found = _BY_NAME.get(name.lower())
    if found is None:
        raise ConnectConfigError(
            f"Unsupported encoding {name} (mongocdc writes the standard Java charsets: "
            f"{', '.join(names[0] for names in _CHARSETS)})"
        )
    return found


# --- StringConverter, ByteArrayConverter, the number converters ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class StringConverter:
    """``org.apache.kafka.connect.storage.StringConverter``: ``value.toString()`` in the configured charset."""

    charset: _Charset

    @classmethod
    def configure(cls, options: Mapping[str, str], is_key: bool) -> StringConverter:
        charset = java_charset(text(options, "converter.encoding", "UTF-8"))
        side = "key" if is_key else "value"
        # StringSerializer and StringDeserializer take these (untrimmed) over converter.encoding.
        decoding = options.get(f"{side}.deserializer.encoding")
        if decoding is not None:
            java_charset(decoding)
        encoding = options.get(f"{side}.serializer.encoding")
        return cls(charset if encoding is None else java_charset(encoding))

    def from_connect(
        self, topic: str, schema: Schema | None, value: Any, headers: Sequence[Header] = ()
    ) -> bytes | None:
        return None if value is None else self.charset.encode(java_text(schema, value))


class ByteArrayConverter:
    """``org.apache.kafka.connect.converters.ByteArrayConverter``: a ``BYTES`` value as it is."""

    __slots__ = ()

    def from_connect(
        self, topic: str, schema: Schema | None, value: Any, headers: Sequence[Header] = ()
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.java_name}")
        if value is not None and not isinstance(value, (bytes, bytearray)):
            raise DataError(
                f"ByteArrayConverter is not compatible with objects of type class {java_class(schema, value)}"
            )
        return None if value is None else bytes(value)


@dataclass(frozen=True, slots=True)
class NumberConverter:
    """``ShortConverter``, ``IntegerConverter``, ``LongConverter``, ``FloatConverter``, ``DoubleConverter`` and
    ``BooleanConverter``: the value's bytes as Kafka's serializer for that Java type writes them."""

    java_type: str
    layout: str
    """``struct`` format of the bytes (big-endian)."""

    def from_connect(
        self, topic: str, schema: Schema | None, value: Any, headers: Sequence[Header] = ()
    ) -> bytes | None:
        if self.java_type == "Boolean" and schema is not None and schema.type is not Type.BOOLEAN:
            raise DataError(f"Invalid schema type for BooleanConverter: {schema.type.java_name}")
        if value is None:
            return None
        found = java_class(schema, value)
        if found != self.java_type:
            raise DataError(f"Failed to serialize to {self.java_type.lower()} (was class {found})")
        return _struct.pack(self.layout, f32(value) if self.java_type == "Float" else value)


_NUMBER_CONVERTERS: Final = {
    "Short": ">h",
    "Integer": ">i",
    "Long": ">q",
    "Float": ">f",
    "Double": ">d",
    "Boolean": ">?",
}


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
