"""``ExtractNewDocumentState`` followed by ``JsonConverter``, fused: a change event's document to the record's bytes.

The general chain (``chain.RecordPipeline``) reads the codec's record back into Connect data, parses the document's
extended JSON (``mongo_data.parse_document``), derives its schema, builds structs and writes them: right for every
option and record, and several times slower than Debezium for the most common chain of all, ``unwrap`` alone. This
module writes the same bytes straight from the document's JSON for that chain, for the records that make up nearly
all of a stream (inserts, reads, replacements and full-document updates) and the documents of the common types:
strings, numbers, booleans, nulls, ObjectIds, dates, decimals, binaries, nested documents, arrays of one type of
value and arrays of flat documents. Any other record or value, and any other option or converter setting, goes the
general way.

Safety does not rest on this module's reading of Debezium alone: the bytes it writes depend on the record's topic,
the type of its ``_id`` and its document's shape (field names, types, nesting), and for each such combination the
first record is also run through the general chain, which is checked against Debezium itself. Only when both give
the same bytes are the schema texts kept and the later records of that shape written here; a shape where they
differ stays on the general chain (counted in :attr:`FusedUnwrap.diverged`, and logged). What depends on values
alone (doubles Java writes in scientific notation, strings Jackson escapes otherwise than Python, dates outside the
years Debezium converts) is written by the general JSON writer or sent the general way.
"""

from __future__ import annotations

import base64
import binascii
import json
import json.decoder
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from bson import Decimal128

from mongocdc.events.codec import decimal128_text, decoded_json
from mongocdc.events.connect.json import JsonConverter, json_string, write_json
from mongocdc.events.connect.unwrap import ExtractNewDocumentState

log = logging.getLogger("mongocdc.transforms")

# The schema a value gets (shapes record these, not BSON types: an ObjectId and a string have the same schema).
_STRING: Final = 0  # strings, nulls, ObjectIds, decimals
_INT32: Final = 1
_INT64: Final = 2
_DOUBLE: Final = 3
_BOOLEAN: Final = 4
_TIMESTAMP: Final = 5  # dates
_BYTES: Final = 6  # binaries

_MIN_DATE: Final = -62_135_596_800_000  # 0001-01-01T00:00:00Z: the dates mongocdc (and Python) represent
_MAX_DATE: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_OBJECT_ID: Final = re.compile(r"[0-9a-f]{24}")
_LONG: Final = re.compile(r"-?[0-9]+")
_PLAIN_DECIMAL: Final = re.compile(r"-?(?:[1-9][0-9]*(?:\.[0-9]+)?|0(?:\.[0-9]{1,6})?)")
"""Decimals ``Decimal128.toString`` writes as they are (no exponent, and at most 6 places after a zero)."""
_UTF16_PAIRS: Final = re.compile(r"[\ud800-\udfff\U00010000-\U0010ffff]")

_scanstring: Final[Callable[[str, int], tuple[str, int]]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""The C function ``json`` reads a string with: the text of the JSON string whose opening quote ends before the
index, and the index after its closing quote."""
_chunks: Final[Callable[[Any, int], list[str]]] = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, None, json.encoder.encode_basestring, None, ":", ",", False, False, True
)
"""The C encoder ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` builds for each call, built once."""
_scan: Final[Callable[[str, int], tuple[Any, int]]] = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""``json.loads``' own scanner, without its checks for surrounding blanks."""


def _encode(value: Any) -> str:
    return "".join(_chunks(value, 0))


def _loads(text: str) -> Any:
    value, end = _scan(text, 0)
    if end != len(text):
        raise _General
    return value


class _General(Exception):
    """The record or value is one this module leaves to the general chain."""


class _Document:
    """One document's walk, in place (``json.loads`` made it for us): extended-JSON values become their Connect
    values (an ObjectId its hex text, a date its milliseconds, …), and the walk returns the document's shape; it
    notes whether a double needs Java's spelling."""

    __slots__ = ("java_doubles",)

    def __init__(self) -> None:
        self.java_doubles = False

    def document(self, document: dict[str, Any]) -> tuple[Any, ...]:
        """The shape: the field names, then each field's schema code or nested shape."""
        codes: list[Any] = []
        code = codes.append
        for name, value in document.items():
            kind = type(value)
            if kind is str:
                code(_STRING)
            elif kind is dict:
                first = next(iter(value), "")
                if first.startswith("$"):
                    document[name], extended = self.extended(first, value)
                    code(extended)
                else:
                    code(self.document(value))
            elif kind is int:  # the strict writer spells an Int64 {"$numberLong": …}: a bare integer is an Int32
                if not _INT32_MIN <= value <= _INT32_MAX:
                    raise _General
                code(_INT32)
            elif kind is float:
                if not (0.001 <= abs(value) < 1e7 or value == 0.0):  # Java's scientific notation, NaN, infinities
                    self.java_doubles = True
                code(_DOUBLE)
            elif kind is list:
                code(self.array(value))
            elif kind is bool:
                code(_BOOLEAN)
            elif value is None:
                code(_STRING)
            else:
                raise _General
        return (tuple(document), *codes)

    @staticmethod
    def extended(tag: str, value: dict[str, Any]) -> tuple[Any, int]:
        """An extended-JSON value of the strict writer (whose first name is ``tag``): its Connect value and schema."""
        if len(value) == 1:
            inner = value[tag]
            if tag == "$oid":
                if type(inner) is str and _OBJECT_ID.fullmatch(inner):
                    return inner, _STRING
            elif tag == "$date":
                if type(inner) is int and _MIN_DATE <= inner <= _MAX_DATE:
                    return inner, _TIMESTAMP
            elif tag == "$numberLong":
                if type(inner) is str and _LONG.fullmatch(inner):
                    number = int(inner)
                    if _INT64_MIN <= number <= _INT64_MAX:
                        return number, _INT64
            elif tag == "$numberDecimal" and type(inner) is str:
                if _PLAIN_DECIMAL.fullmatch(inner) and sum(c.isdigit() for c in inner) <= 34:
                    return inner, _STRING  # Decimal128.toString of such a text is the text itself
                try:
                    return decimal128_text(Decimal128(inner)), _STRING
                except (ValueError, TypeError, ArithmeticError):
                    raise _General from None
        elif tag == "$binary" and len(value) == 2 and type(value[tag]) is str and type(value.get("$type")) is str:
            try:
                data = base64.b64decode(value[tag], validate=True)
            except binascii.Error:
                raise _General from None
            return base64.b64encode(data).decode(), _BYTES
        raise _General

    def element(self, value: Any) -> tuple[Any, int]:
        """An array's element that is not a document of fields: its Connect value and schema."""
        kind = type(value)
        if kind is str:
            return value, _STRING
        if kind is int:
            if _INT32_MIN <= value <= _INT32_MAX:
                return value, _INT32
        elif kind is float:
            if not (0.001 <= abs(value) < 1e7 or value == 0.0):
                self.java_doubles = True
            return value, _DOUBLE
        elif kind is dict:
            first = next(iter(value), "")
            if first.startswith("$"):
                return self.extended(first, value)
        elif kind is bool:
            return value, _BOOLEAN
        elif value is None:
            return value, _STRING
        raise _General

    def array(self, array: list[Any]) -> tuple[Any, ...]:
        """An array of values of one schema (``("a", schema)``; empty: ``("a", None)``), or of documents of
        values (``("m", names, schemas)``: the fields of all in the order they first appear, missing ones null)."""
        if not array:
            return ("a", None)
        first = array[0]
        if type(first) is dict and not next(iter(first), "$").startswith("$"):
            return self.documents(array)
        code = None
        element = self.element
        for index, item in enumerate(array):
            value, item_code = element(item)
            if code != item_code:
                if code is not None:
                    raise _General  # Debezium refuses mixed arrays: the general chain says how
                code = item_code
            if value is not item:
                array[index] = value
        return ("a", code)

    def documents(self, array: list[Any]) -> tuple[Any, ...]:
        fields: dict[str, int] = {}
        same = True
        names: tuple[str, ...] | None = None
        element = self.element
        for item in array:
            if type(item) is not dict or not item or next(iter(item)).startswith("$"):
                raise _General
            for name, value in item.items():
                kind = type(value)  # the common cases here, the others by element()
                if kind is str:
                    code = _STRING
                elif kind is int and _INT32_MIN <= value <= _INT32_MAX:
                    code = _INT32
                elif kind is float and (0.001 <= abs(value) < 1e7 or value == 0.0):
                    code = _DOUBLE
                else:
                    converted, code = element(value)
                    if converted is not value:
                        item[name] = converted
                if fields.setdefault(name, code) != code:
                    raise _General
            if names is None:
                names = tuple(item)
            elif same and tuple(item) != names:
                same = False
        if not same:  # each element as a struct of the merged fields: missing ones null, in the merged order
            array[:] = [{name: item.get(name) for name in fields} for item in array]
        return ("m", tuple(fields), *fields.values())


def _id(text: str) -> tuple[Any, int]:
    """The key's ``_id`` (relaxed extended JSON, as ``BsonDocument.parse`` types it): its Connect value and schema."""
    if len(text) == 36 and text.startswith('{"$oid": "') and text.endswith('"}'):  # the writer's ObjectId
        hex_text = text[10:34]
        if _OBJECT_ID.fullmatch(hex_text):
            return hex_text, _STRING
    value = json.loads(text)
    if type(value) is int and not _INT32_MIN <= value <= _INT32_MAX:  # an Int64 in relaxed JSON: a long
        if _INT64_MIN <= value <= _INT64_MAX:
            return value, _INT64
        raise _General
    if type(value) is dict and next(iter(value), "") not in ("$oid", "$numberDecimal"):
        raise _General
    walk = _Document()
    converted = walk.element(value)
    if walk.java_doubles:  # (relaxed JSON writes a double Java spells in scientific notation as a $numberDouble)
        raise _General
    return converted


def _json(value: Any, java_doubles: bool) -> str:
    """The JSON text Jackson writes for ``value`` (Python's C encoder where it writes the same)."""
    if java_doubles:
        return write_json(value)
    text = _encode(value)
    # Python and Jackson escape alike but for the hex digits of \u00XX (Jackson's are upper case) and the characters
    # beyond the BMP (Jackson: two escaped UTF-16 units)
    if "\\u" in text or (not text.isascii() and _UTF16_PAIRS.search(text)):
        return write_json(value)
    return text


def _head(text: bytes) -> int:
    """The length of ``{"schema":<schema>,"payload":`` at the start of a converter's record, or 0."""
    if not text.startswith(b'{"schema":') or not text.endswith(b"}"):
        return 0
    decoded = text.decode()
    try:
        _, end = json.JSONDecoder().raw_decode(decoded, 10)
    except json.JSONDecodeError:
        return 0
    if not decoded.startswith(',"payload":', end):
        return 0
    return len(decoded[: end + 11].encode())


class _Topic:
    """What the fused path knows of one topic: its records' key and value heads (the schemas as text), and per
    (``_id`` schema, document shape) the heads of what it writes (``None``: that shape goes the general way)."""

    __slots__ = ("key_head", "value_head", "shapes")

    def __init__(self, key_head: bytes, value_head: bytes) -> None:
        self.key_head = key_head
        self.value_head = value_head
        self.shapes: dict[tuple[int, tuple[Any, ...]], tuple[bytes, bytes] | None] = {}


class FusedUnwrap:
    """Writes what ``ExtractNewDocumentState`` and the two ``JsonConverter`` would, for the records it can (see the
    module docstring). :meth:`process` returns ``None`` for the others: the caller runs its general chain. A new
    shape's first record is checked against the general chain (``general``: the caller's ``process``)."""

    def __init__(self, transform: ExtractNewDocumentState, key_schemas: bool, value_schemas: bool) -> None:
        self.rewrite = transform.rewrite
        self.rewrite_with_id = transform.rewrite_with_id
        self.key_schemas = key_schemas
        self.value_schemas = value_schemas
        self.topics: dict[str, _Topic] = {}
        self.fused = 0
        """Records written here."""
        self.diverged = 0
        """Shapes for which this module's bytes differed from the general chain's (kept on the general chain)."""

    @classmethod
    def of(cls, stages: Sequence[Any], key_converter: Any, value_converter: Any) -> FusedUnwrap | None:
        """The fused path for a chain, when it is ``ExtractNewDocumentState`` alone (no predicate) with the options
        this module writes (``array.encoding=array``, no flattening, fields or headers added, names unchanged), and
        both converters are ``JsonConverter``s with their defaults but for ``schemas.enable``; else ``None``."""
        if len(stages) != 1 or stages[0].predicate is not None:
            return None
        transform = stages[0].transform
        if type(transform) is not ExtractNewDocumentState:
            return None
        if (
            transform.converter.document_encoding
            or transform.flatten
            or transform.add_fields
            or transform.add_headers
            or transform.schema_namer is not None
            or transform.converter.sanitize_value
        ):
            return None
        converters = []
        for side in (key_converter, value_converter):
            converter = getattr(side, "converter", None)
            if type(converter) is not JsonConverter:
                return None
            config = converter.config
            if config.decimal_format != "BASE64" or not config.replace_null_with_default:
                return None
            converters.append(config.schemas_enable)
        return cls(transform, converters[0], converters[1])

    def process(self, topic: str, key: bytes | None, value: bytes | None) -> tuple[bytes, bytes] | Pending | None:
        """The key and value bytes of the record; or ``None`` when it goes the general way; or, for the first record
        of a new shape, a :class:`Pending` the caller settles with the general chain's output for the record."""
        if key is None or value is None:
            return None
        known = self.topics.get(topic)
        if known is None:
            key_head, value_head = _head(key), _head(value)
            if not key_head or not value_head:
                return None
            if len(self.topics) >= 4096:
                self.topics.clear()
            known = self.topics[topic] = _Topic(key[:key_head], value[:value_head])
        if not key.startswith(known.key_head) or not value.startswith(known.value_head):
            return None
        try:
            key_json = _string_field(key[len(known.key_head) : -1].decode(), "id")
            after = _string_field(value[len(known.value_head) : -1].decode(), "after", "before")
        except (_General, ValueError, TypeError):
            return None
        return self._write(known, key_json, after, pending=True)

    def event_record(self, topic: str, key_json: str, after: str) -> tuple[bytes, bytes] | None:
        """The key and value bytes of the record of a change whose key's ``id`` is ``key_json`` and whose ``after``
        is ``after``, when its topic and shape are known and checked (else ``None``: the record goes the way of
        :meth:`process`, which learns them). What the codec would write for it is not needed."""
        known = self.topics.get(topic)
        if known is None:
            return None
        written = self._write(known, key_json, after, pending=False)
        assert not isinstance(written, Pending)
        return written

    def _write(
        self, known: _Topic, key_json: str, after: str, *, pending: bool
    ) -> tuple[bytes, bytes] | Pending | None:
        try:
            id_value, id_code = _id(key_json)
            if after.startswith('{"$') or ',"$' in after:  # a name beginning with $ that is not extended JSON's
                return None  # (the writer puts a bare comma before a name, and escapes the quotes of strings)
            document = decoded_json(after)
            if document is None:
                document = _loads(after)
            if type(document) is not dict:
                return None
            walk = _Document()
            shape = walk.document(document)
        except (_General, ValueError, TypeError):
            return None
        if self.rewrite:
            if "__deleted" in document or (self.rewrite_with_id and "_id" not in document):
                return None
            document["__deleted"] = False
        shape_key = (id_code, shape)
        heads = known.shapes.get(shape_key, _UNSEEN)
        if heads is None or (heads is _UNSEEN and not pending):
            return None
        key_payload = (
            '{"id":' + json_string(id_value) + "}" if type(id_value) is str else _json({"id": id_value}, False)
        ).encode()
        value_payload = _json(document, walk.java_doubles).encode()
        if heads is _UNSEEN:
            return Pending(self, known, shape_key, key_payload, value_payload)
        self.fused += 1
        key_head, value_head = heads
        return (
            key_head + key_payload + b"}" if key_head else key_payload,
            value_head + value_payload + b"}" if value_head else value_payload,
        )


_UNSEEN: Final[Any] = object()


class Pending:
    """A new shape's first record, written here: :meth:`settle` compares it with the general chain's."""

    __slots__ = ("owner", "topic", "shape", "key", "value")

    def __init__(
        self, owner: FusedUnwrap, topic: _Topic, shape: tuple[int, tuple[Any, ...]], key: bytes, value: bytes
    ) -> None:
        self.owner, self.topic, self.shape, self.key, self.value = owner, topic, shape, key, value

    def settle(self, topic: str, key: bytes | None, value: bytes | None, same_place: bool) -> None:
        """The general chain wrote this record as ``key``/``value`` to ``topic`` (``same_place``: to the topic
        and partition the record had, with its headers): keep the heads when the payloads are ours, else send
        the shape the general way from now on."""
        owner = self.owner
        key_head = _output_head(key, self.key, owner.key_schemas)
        value_head = _output_head(value, self.value, owner.value_schemas)
        heads = None
        if same_place and key_head is not None and value_head is not None:
            heads = (key_head, value_head)
        else:
            owner.diverged += 1
            log.warning(
                "ExtractNewDocumentState: the fused writer and the general chain differ for a document of this "
                "shape in %s; its records take the general chain",
                topic,
            )
        shapes = self.topic.shapes
        if len(shapes) >= 4096:
            shapes.clear()
        shapes[self.shape] = heads


def _output_head(written: bytes | None, payload: bytes, schemas: bool) -> bytes | None:
    """The head (``{"schema":…,"payload":``, ``b""`` without schemas) for which ``written`` is ``payload`` in the
    converter's envelope, or ``None`` when it is not."""
    if written is None:
        return None
    if not schemas:
        return b"" if written == payload else None
    head = written[: len(written) - len(payload) - 1]
    if written.endswith(payload + b"}") and head.startswith(b'{"schema":') and head.endswith(b',"payload":'):
        return head
    return None


def _string_field(payload: str, name: str, before: str | None = None) -> str:
    """The string field ``name`` of a converter's payload: read at its place when the payload begins with it (or
    with the string-or-null field ``before`` and then it), else from the parsed payload."""
    position = 0
    if before is not None:
        lead = '{"' + before + '":'
        if payload.startswith(lead):
            position = len(lead)
            if payload.startswith("null", position):
                position += 4
            elif payload.startswith('"', position):
                _, position = _scanstring(payload, position + 1)
            else:
                position = -1
            lead = ',"' + name + '":"'
        else:
            position = -1
    else:
        lead = '{"' + name + '":"'
    if position >= 0 and payload.startswith(lead, position):
        return _scanstring(payload, position + len(lead))[0]
    found = json.loads(payload).get(name)
    if type(found) is not str:
        raise _General
    return found
