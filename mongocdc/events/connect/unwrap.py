"""Debezium 3.6.1's ``io.debezium.connector.mongodb.transforms.ExtractNewDocumentState``, the MongoDB "unwrap" SMT.

A MongoDB change event carries its documents as JSON text (``after``, ``before``,
``updateDescription.updatedFields``). This transform replaces the envelope with the document itself, parsed into
a Connect struct with a schema derived from the document, and replaces the key ``{"id": "<JSON of _id>"}`` with a
struct holding the typed ``_id`` as ``id``. It is written from Debezium's source (``ExtractNewDocumentState``,
``AbstractExtractNewRecordState``, ``DefaultDeleteHandlingStrategy``) and Kafka Connect's ``ExtractField`` and
``Flatten``, and follows them step by step, oddities included, since what comes out is what a sink has been built
against. ``mongo_data`` reads the JSON text (the Java driver's ``BsonDocument.parse``) and converts the documents
(Debezium's ``MongoDataConverter`` with ``array.encoding``, field names through ``field.name.adjustment.mode``); the
value schema's name goes through the matching schema-name adjuster one dot-separated segment at a time. A record
Debezium refuses raises ``data.DataError`` naming the record's key and the settings.

Options (every one ``configure`` reads in 3.6.1): ``delete.tombstone.handling.mode`` (``drop``, ``tombstone``,
``rewrite``, ``rewrite-with-tombstone``, ``delete-to-tombstone``), ``delete.tombstone.handling.mode.rewrite-with-id``,
``array.encoding`` (``array``, ``document``), ``flatten.struct`` and ``flatten.struct.delimiter``, ``add.fields`` and
``add.fields.prefix``, ``add.headers`` and ``add.headers.prefix``, ``field.name.adjustment.mode``. ``route.by.field``
and ``replace.null.with.default`` are accepted and have no effect, as in Debezium (the MongoDB transform never
routes, and its ``before``/``after`` are strings, never structs with defaults). The options Debezium 2.x removed
(``delete.handling.mode``, ``drop.tombstones``, ``sanitize.field.names``, ``operation.header``) are ignored as
unknown, as Connect ignores them.

Records whose key schema's name does not end in ``.Key`` (heartbeats, transaction metadata) pass through untouched;
those whose value schema's name does not end in ``.Envelope`` too, after the ``add.headers`` headers are added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.codec import java_double
from mongocdc.events.connect.base import ConnectConfigError, TransformFactory, java_split, java_trim
from mongocdc.events.connect.data import (
    ConnectRecord,
    DataError,
    Header,
    Schema,
    Struct,
    StructBuilder,
    Type,
    field_schema,
    string_header,
    struct_schema,
)
from mongocdc.events.connect.mongo_data import (
    ADJUSTMENT_MODES,
    Bson,
    BsonType,
    MongoDataConverter,
    NameAdjuster,
    parse_document,
)

CLASS_NAME: Final = "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"

# --- options ---------------------------------------------------------------------------------------------------

_TOMBSTONE_MODES: Final = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_ENCODINGS: Final = ("array", "document")
_HOSTS: Final[dict[str, str | None]] = {
    "id": "transaction",
    "total_order": "transaction",
    "data_collection_order": "transaction",
    "op": None,
    "ts_ms": None,
    "ts_us": None,
    "ts_ns": None,
    "updateDescription": "updateDescription",
}
"""``determineStruct``: the struct of an unqualified ``add.fields``/``add.headers`` name (else ``source``)."""


def _enum(options: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = options.get(name, default)
    if value is None or value.strip().lower() not in allowed:
        raise ConnectConfigError(
            f"The '{name}' value '{value}' is invalid: Value must be one of {', '.join(allowed)} "
            "(Unable to validate config.)"
        )
    return value.strip().lower()


def _boolean(options: Mapping[str, str], name: str, default: bool, *, validated: bool) -> bool:
    """Debezium's ``getBoolean``: ``true``/``false`` in any case, trimmed; anything else the default, or refused when
    the option is one the transform validates."""
    value = options.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if validated:
        raise ConnectConfigError(
            f"The '{name}' value '{value}' is invalid: Either 'true' or 'false' is expected "
            "(Unable to validate config.)"
        )
    return default


@dataclass(frozen=True, slots=True)
class FieldReference:
    """An ``add.fields``/``add.headers`` item: ``field``, ``struct.field`` or either with ``:new_name``."""

    struct: str | None
    """The envelope struct holding the field (``source``, ``transaction``, ``updateDescription``), ``None`` for the
    envelope's own ``op``, ``ts_ms``, ``ts_us``, ``ts_ns``."""
    field: str
    new_field: str

    @classmethod
    def parse(cls, prefix: str, item: str) -> FieldReference:
        parts = java_split(item, ":")
        if not parts or len(parts) > 2:
            raise ConnectConfigError(f"Unexpected field name: {item}")
        splits = java_split(parts[0], ".")
        if not splits:
            raise ConnectConfigError(f"Unexpected field name: {item}")
        field = splits[0] if len(splits) == 1 else splits[1]
        struct = _HOSTS.get(field, "source") if len(splits) == 1 else splits[0]
        if len(parts) == 2:
            new_field = prefix + parts[1]
        else:
            new_field = prefix + (field if len(splits) == 1 else f"{struct}_{field}")
        return cls(struct, field, new_field)

    @staticmethod
    def parse_list(prefix: str, text: str) -> tuple[FieldReference, ...]:
        if not text:
            return ()
        return tuple(FieldReference.parse(prefix, item.strip()) for item in java_split(text, ","))

    def schema(self, envelope: Schema) -> Schema | None:
        """``getSchema``: an optional copy of the field's schema (type, name, version, doc, parameters only)."""
        parent = envelope if self.struct is None else field_schema(envelope, self.struct)
        found = parent.field(self.field) or envelope.field(self.field)
        if found is None:
            return None
        original = found.schema
        return Schema(
            original.type,
            optional=True,
            name=original.name,
            version=original.version,
            doc=original.doc,
            parameters=original.parameters,
            value_schema=original.value_schema if original.type is Type.ARRAY else None,
        )

    def value(self, envelope: Struct) -> Any:
        """``getValue``: the field of its struct (or of the envelope when the struct has none); ``None`` when the
        struct is null (``transaction`` in a snapshot)."""
        parent = envelope if self.struct is None else envelope.get_without_default(self.struct)
        if parent is None:
            return None
        if not isinstance(parent, Struct):
            raise DataError(f"{self.struct} is not a struct")
        holder = parent if parent.has(self.field) else envelope
        return holder.get_without_default(self.field)


def _shape(document: dict[str, Any]) -> tuple[Any, ...] | None:
    """The names, types and nesting of a document without arrays (``None`` when it has one)."""
    shape: list[tuple[str, Any]] = []
    for key, value in document.items():
        kind = type(value)
        if kind is Bson:
            shape.append((key, value.type))
        elif kind is dict:
            inner = _shape(value)
            if inner is None:
                return None
            shape.append((key, inner))
        else:
            return None
    return tuple(shape)


# --- the transform ----------------------------------------------------------------------------------------------


class ExtractNewDocumentState:
    """The transform (see the module docstring); one per connector, as Connect builds it from the options."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.mode = _enum(options, "delete.tombstone.handling.mode", "tombstone", _TOMBSTONE_MODES)
        document_encoding = _enum(options, "array.encoding", "array", _ENCODINGS) == "document"
        self.flatten = _boolean(options, "flatten.struct", False, validated=True)
        self.delimiter = options.get("flatten.struct.delimiter", "_")
        self.flat_delimiter = java_trim(self.delimiter)  # Flatten's own ConfigDef trims it
        self.rewrite_with_id = _boolean(
            options, "delete.tombstone.handling.mode.rewrite-with-id", False, validated=False
        )
        self.add_fields = FieldReference.parse_list(
            options.get("add.fields.prefix", "__"), options.get("add.fields", "")
        )
        self.add_headers = FieldReference.parse_list(
            options.get("add.headers.prefix", "__"), options.get("add.headers", "")
        )
        adjustment = options.get("field.name.adjustment.mode", "none").strip().lower()
        if adjustment not in ADJUSTMENT_MODES:
            raise ConnectConfigError(
                f"Invalid value {options.get('field.name.adjustment.mode')} for field.name.adjustment.mode: "
                f"must be one of {', '.join(ADJUSTMENT_MODES)}"
            )
        self.schema_namer = None if adjustment == "none" else NameAdjuster(adjustment)
        self.converter = MongoDataConverter(document_encoding=document_encoding, name_adjustment=adjustment)
        self.rewrite = self.mode in ("rewrite", "rewrite-with-tombstone")
        self._setting = (
            f"{CLASS_NAME} with array.encoding={'document' if document_encoding else 'array'}, "
            f"flatten.struct={'true' if self.flatten else 'false'}, field.name.adjustment.mode={adjustment}"
        )
        self._schemas: dict[Schema, Schema] = {}
        self._by_shape: dict[tuple[Any, ...], Schema] = {}
        self._flat: dict[int, tuple[Schema, Schema]] = {}

    # Transform ----------------------------------------------------------------------------------------------

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        key_schema = record.key_schema
        if key_schema is None or key_schema.name is None or not key_schema.name.endswith(".Key"):
            return record
        try:
            return self._apply(record)
        except DataError as exc:
            raise DataError(f"{self._setting} cannot transform the record with key {record.key!r}: {exc}") from None

    def _apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = record.value
        if self.add_headers:  # in place, as Debezium adds them: a tombstone sharing them gets them too
            record = record.add_headers_in_place(self._headers(value))
        key_document = parse_document('{ "id" : ' + self._key_text(record) + "}")
        if value is None:  # a tombstone
            if self.mode != "rewrite-with-tombstone":
                return None
            return self._new_record(record, key_document, {})
        value_schema = record.value_schema
        if value_schema is None or value_schema.name is None or not value_schema.name.endswith(".Envelope"):
            return record
        if not isinstance(value, Struct):
            raise DataError(f"Only Struct objects supported for [field extraction], found: {type(value).__name__}")
        after = self._extract(value, "after")
        update = self._extract(value, "updateDescription")
        deletion = after is None and update is None
        if deletion:
            if self.mode == "drop":
                return None
            document_text = self._extract(value, "before") if self.rewrite else None
        else:
            document_text = after
        value_document: dict[str, Any] = {}
        if document_text is not None:
            if not isinstance(document_text, str):
                raise DataError(f"Expected the document as JSON text, found {type(document_text).__name__}")
            value_document = parse_document(document_text)
        elif not deletion:
            value_document = self._partial_update(update, key_document)
        if self.rewrite:
            value_document["__deleted"] = Bson(BsonType.BOOLEAN, deletion)
            if self.rewrite_with_id and "_id" not in value_document:
                value_document["_id"] = key_document["id"]
        return self._new_record(record, key_document, value_document)

    @staticmethod
    def _extract(envelope: Struct, name: str) -> Any:
        """``ExtractField.Value``: the envelope's field (with its default), which must exist."""
        if not envelope.has(name):
            raise DataError(f"Unknown field: {name}")
        return envelope.get(name)

    @staticmethod
    def _key_text(record: ConnectRecord) -> str:
        """``ExtractField.Key("id")``'s value, ``toString()``-ed."""
        key = record.key
        if key is None:
            raise DataError("The record has no key")
        if not isinstance(key, Struct):
            raise DataError(f"Only Struct objects supported for [field extraction], found: {type(key).__name__}")
        if not key.has("id"):
            raise DataError("Unknown field: id")
        found = key.get("id")
        if found is None:
            raise DataError("The key's id is null")
        if isinstance(found, bool):
            return "true" if found else "false"
        if isinstance(found, float):
            return java_double(found)
        return str(found)

    def _partial_update(self, update: Any, key_document: dict[str, Any]) -> dict[str, Any]:
        """``getPartialUpdateDocument``: the updated fields (names as MongoDB gives them, ``a.b`` included), less
        the removed ones among them, and ``_id`` from the key."""
        if not isinstance(update, Struct):
            raise DataError(f"Only Struct objects supported for [updateDescription], found: {type(update).__name__}")
        document: dict[str, Any] = {}
        updated = self._extract(update, "updatedFields")
        if updated is not None:
            document.update(parse_document(updated))
        for name in self._extract(update, "removedFields") or ():
            document.pop(name, None)
        if "_id" not in document:
            document["_id"] = key_document["id"]
        if self.flatten:
            renamed: dict[str, Any] = {}
            for name, value in document.items():
                renamed[name.replace(".", self.delimiter)] = value
            document = renamed
        return document

    def _headers(self, value: Any) -> tuple[Header, ...]:
        """``makeHeaders``: each ``add.headers`` field as an (optional) header; a tombstone gets only ``op`` = ``d``."""
        if value is None:
            return tuple(string_header(ref.new_field, "d") for ref in self.add_headers if ref.field == "op")
        if not isinstance(value, Struct):
            raise DataError(f"The record's value is not a struct: {type(value).__name__}")
        headers: list[Header] = []
        for ref in self.add_headers:
            schema = ref.schema(value.schema)
            if schema is not None:
                headers.append(Header(ref.new_field, schema, ref.value(value)))
        return tuple(headers)

    def _new_record(
        self, record: ConnectRecord, key_document: dict[str, Any], value_document: dict[str, Any]
    ) -> ConnectRecord:
        """``newRecord``: the key ``{id}`` and the value document as structs (the value with the ``add.fields``)."""
        converter = self.converter
        key_schema = self._schema_of(key_document, None, ())
        key = converter.to_struct(key_document, key_schema)
        value_schema: Schema | None = None
        value: Struct | None = None
        if value_document:
            envelope = record.value
            assert isinstance(envelope, Struct) and envelope.schema.name is not None
            name = envelope.schema.name
            if name.endswith(".Envelope"):
                name = name[: -len(".Envelope")]
            if self.schema_namer is not None:
                name = ".".join(self.schema_namer.adjust(segment) for segment in java_split(name, "."))
            added = tuple(
                (ref.new_field, schema)
                for ref in self.add_fields
                if (schema := ref.schema(envelope.schema)) is not None
            )
            value_schema = self._schema_of(value_document, name, added)
            value = converter.to_struct(value_document, value_schema)
            for ref in self.add_fields:
                value.put(ref.new_field, ref.value(envelope))
        record = record.new_record(key_schema=key_schema, key=key, value_schema=value_schema, value=value)
        return self._flattened(record) if self.flatten else record

    def _schema_of(self, document: dict[str, Any], name: str | None, added: tuple[tuple[str, Schema], ...]) -> Schema:
        """The schema ``MongoDataConverter`` builds for ``document`` (named ``name``), with the ``add.fields`` fields
        ``added``; one object per distinct schema, so that the converters' per-schema caches hit. A document without
        arrays is looked up by its shape first (names, types and nesting decide its schema then)."""
        shape = _shape(document)
        cache_key = None if shape is None else (name, shape, added)
        if cache_key is not None:
            found = self._by_shape.get(cache_key)
            if found is not None:
                return found
        builder = StructBuilder(name)
        self.converter.build_schema(self.converter.parse_bson_document(document), builder)
        for field_name, schema in added:
            builder.add(field_name, schema)
        built = builder.build()
        interned = self._schemas.setdefault(built, built)
        if len(self._schemas) > 1024:
            self._schemas.clear()
        if cache_key is not None:
            if len(self._by_shape) > 4096:
                self._by_shape.clear()
            self._by_shape[cache_key] = interned
        return interned

    # Flatten.Value ----------------------------------------------------------------------------------------------

    def _flattened(self, record: ConnectRecord) -> ConnectRecord:
        """Kafka's ``Flatten.Value`` with the delimiter: nested structs' fields become ``outer<delimiter>inner``."""
        value = record.value
        if value is None:
            return record
        assert isinstance(value, Struct) and record.value_schema is not None
        cached = self._flat.get(id(record.value_schema))
        if cached is not None and cached[0] is record.value_schema:
            flat = cached[1]
        else:
            fields: list[tuple[str, Schema]] = []
            self._flat_fields(record.value_schema, "", record.value_schema.optional, fields)
            flat = struct_schema(
                fields,
                name=record.value_schema.name,
                version=record.value_schema.version,
                doc=record.value_schema.doc,
                parameters=record.value_schema.params if record.value_schema.parameters is not None else None,
            )
            if len(self._flat) >= 1024:
                self._flat.clear()
            self._flat[id(record.value_schema)] = (record.value_schema, flat)
        flat_value = Struct(flat)
        self._flat_values(value, "", flat_value)
        return record.new_record(value_schema=flat, value=flat_value)

    def _flat_name(self, prefix: str, name: str) -> str:
        return name if not prefix else f"{prefix}{self.flat_delimiter}{name}"

    def _flat_fields(self, schema: Schema, prefix: str, optional: bool, out: list[tuple[str, Schema]]) -> None:
        for f in schema.fields:
            name = self._flat_name(prefix, f.name)
            field_optional = optional or f.schema.optional
            if f.schema.type is Type.STRUCT:
                self._flat_fields(f.schema, name, field_optional, out)
            elif f.schema.type is Type.MAP:
                raise DataError(f"Flatten transformation does not support MAP (for field {name}).")
            else:
                out.append((name, f.schema if f.schema.optional == field_optional else f.schema.with_(optional=True)))

    def _flat_values(self, struct: Struct, prefix: str, out: Struct) -> None:
        for f, _ in struct.items():
            name = self._flat_name(prefix, f.name)
            if f.schema.type is Type.STRUCT:
                inner = struct.get(f.name)
                if inner is not None:
                    self._flat_values(inner, name, out)
            else:
                out.put(name, struct.get(f.name))


def _factory(options: Mapping[str, str]) -> ExtractNewDocumentState:
    return ExtractNewDocumentState(options)


TRANSFORMS: Final[dict[str, TransformFactory]] = {CLASS_NAME: _factory}
