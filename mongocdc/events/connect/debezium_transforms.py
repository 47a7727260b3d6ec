"""Debezium 3.6.1's own single message transforms: the MongoDB outbox router, the logical-table router and
HeaderToValue, record for record as Debezium's classes transform them.

* ``io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter`` (:class:`MongoEventRouter`): the
  MongoDB outbox router, in ``outbox`` (see its docstring), registered here with the others.
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.connect.base import (
    ConnectConfigError,
    TransformFactory,
    invalid,
    java_regex,
    java_split,
    java_trim,
)
from mongocdc.events.connect.data import (
    STRING,
    ConnectRecord,
    DataError,
    Schema,
    Struct,
    StructBuilder,
    Type,
    field_schema,
)
from mongocdc.events.connect.debezium_common import (
    _check_boolean,
    _check_choice,
    _check_int,
    _check_regex,
    _check_required,
    _config_list,
    _is_envelope,
    _lenient_boolean,
    _Lru,
    _replace_first,
    _require_struct,
)
from mongocdc.events.connect.mongo_data import (
    ADJUSTMENT_MODES,
    NameAdjuster,
)
from mongocdc.events.connect.outbox import MONGO_EVENT_ROUTER, MongoEventRouter

BY_LOGICAL_TABLE_ROUTER: Final = "io.debezium.transforms.ByLogicalTableRouter"
HEADER_TO_VALUE: Final = "io.debezium.transforms.HeaderToValue"


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
