"""Kafka Connect's ``JsonConverter`` both ways, byte for byte, and the JSON text Jackson writes.

``from_connect`` is ``JsonConverter.fromConnectData``: with ``schemas.enable`` an envelope
``{"schema": …, "payload": …}`` (the schema as ``asJsonSchema`` writes it: ``type``, then ``fields``/``items``/
``keys``+``values``, ``optional``, ``name``, ``version``, ``doc``, ``parameters``, ``default``, and ``field``
last in a struct's field), else the payload alone. Jackson's text: compact, UTF-8, control characters escaped
(``\\n``-style where JSON has one, else ``\\u00XX`` in upper case), doubles as Java's ``Double.toString``, NaN
and the infinities as strings, bytes as Base64, ``decimal.format`` BASE64 (the unscaled value's two's
complement bytes) or NUMERIC. A null with a default is written as the default (``replace.null.with.default``).

``to_connect`` is ``toConnectData`` for an envelope with a schema: what the transforms get from the records
mongocdc's codec writes.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
import struct as _struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.codec import java_double
from mongocdc.events.connect.data import (
    DATE,
    DECIMAL,
    DECIMAL_SCALE,
    EPOCH,
    TIME,
    TIMESTAMP,
    DataError,
    Field,
    Schema,
    Struct,
    Type,
    millis_of,
    schema_type_of,
)

_basestring: Callable[[str], str] = json.encoder.encode_basestring
_ESCAPED: Final = re.compile(r'["\\\x00-\x1f\ud800-\udfff\U00010000-\U0010ffff]')
_UTF16_ESCAPED: Final = re.compile(r"[\ud800-\udfff\U00010000-\U0010ffff]")
_SHORT: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code > 0xFFFF:  # Jackson writes a character beyond the BMP as its two UTF-16 surrogates, escaped
        code -= 0x10000
        return f"\\u{0xD800 | code >> 10:04X}\\u{0xDC00 | code & 0x3FF:04X}"
    return _SHORT.get(ch) or f"\\u{code:04X}"


def json_string(text: str) -> str:
    """A JSON string as Jackson writes it (other non-ASCII characters as they are; ``\\u001F``, not ``\\u001f``;
    a character beyond the BMP, or a lone surrogate, as ``\\uD83D\\uDE00``)."""
    quoted = _basestring(text)
    # a control character without a short escape, or a surrogate: Jackson's hex digits are upper case
    if "\\u00" in quoted or (not text.isascii() and _UTF16_ESCAPED.search(text)):
        return '"' + _ESCAPED.sub(_escape, text) + '"'
    return quoted


def java_float(value: float) -> str:
    """``Float.toString`` of a float32 value: the shortest decimal that reads back as the same float."""
    if value != value or value in (float("inf"), float("-inf")):
        return java_double(value)
    single = _struct.unpack("f", _struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if _struct.unpack("f", _struct.pack("f", float(text)))[0] == single:
            return java_double(float(text))
    return java_double(single)


class Raw(str):
    """JSON text written as it is (a number in Java's spelling)."""

    __slots__ = ()


def write_json(node: Any) -> str:
    """Compact JSON of a tree of ``dict``/``list``/``str``/``int``/``bool``/``None``/``float``/:class:`Raw`,
    as Jackson writes it (floats as Java doubles)."""
    out: list[str] = []
    _write(node, out)
    return "".join(out)


def _write(node: Any, out: list[str]) -> None:
    kind = type(node)  # the exact types first (most nodes), as the general chain below writes them
    if kind is str:
        out.append(json_string(node))
    elif kind is dict:
        _write_object(node, out)
    elif kind is int:
        out.append(str(node))
    elif kind is float:
        out.append(_double(node))
    elif kind is list:
        _write_array(node, out)
    else:
        _write_other(node, out)


def _write_other(node: Any, out: list[str]) -> None:
    if node is None:
        out.append("null")
    elif node is True:
        out.append("true")
    elif node is False:
        out.append("false")
    elif isinstance(node, Raw):
        out.append(node)
    elif isinstance(node, str):
        out.append(json_string(node))
    elif isinstance(node, int):
        out.append(str(node))
    elif isinstance(node, float):
        out.append(_double(node))
    elif isinstance(node, dict):
        _write_object(node, out)
    elif isinstance(node, list):
        _write_array(node, out)
    else:
        raise DataError(f"Couldn't convert {node!r} to JSON.")


def _write_object(node: Mapping[str, Any], out: list[str]) -> None:
    out.append("{")
    first = True
    for key, value in node.items():
        if not first:
            out.append(",")
        first = False
        out.append(json_string(key))
        out.append(":")
        _write(value, out)
    out.append("}")


def _write_array(node: list[Any], out: list[str]) -> None:
    out.append("[")
    for position, value in enumerate(node):
        if position:
            out.append(",")
        _write(value, out)
    out.append("]")


def _double(value: float) -> str:
    text = java_double(value)
    if text in ("NaN", "Infinity", "-Infinity"):  # Jackson's WRITE_NAN_AS_STRINGS, on by default
        return '"' + text + '"'
    return text


@dataclass(frozen=True, slots=True)
class JsonConverterConfig:
    schemas_enable: bool = True
    decimal_format: str = "BASE64"
    replace_null_with_default: bool = True


class JsonConverter:
    """``org.apache.kafka.connect.json.JsonConverter`` for one side (key or value) of a connector."""

    __slots__ = ("config", "_schema_cache", "_recent", "_by_text")

    def __init__(self, config: JsonConverterConfig | None = None) -> None:
        self.config = config or JsonConverterConfig()
        self._schema_cache: dict[int, tuple[Schema, Any]] = {}
        self._recent: tuple[tuple[str, Schema | None], ...] = ()
        """The schema texts ``to_connect`` read last, newest first, with their schemas (see ``_envelope``)."""
        self._by_text: dict[str, Schema | None] = {}

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        payload = self.to_json(schema, value)
        if self.config.schemas_enable:
            return write_json({"schema": self.json_schema(schema), "payload": payload}).encode()
        return write_json(payload).encode()

    # --- schemas --------------------------------------------------------------------------

    def json_schema(self, schema: Schema | None) -> Any:
        """``asJsonSchema`` (cached per schema object, as Connect caches per schema)."""
        if schema is None:
            return None
        cached = self._schema_cache.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        node: dict[str, Any] = {"type": schema.type.value}
        if schema.type is Type.ARRAY:
            node["items"] = self.json_schema(schema.value_schema)
        elif schema.type is Type.MAP:
            node["keys"] = self.json_schema(schema.key_schema)
            node["values"] = self.json_schema(schema.value_schema)
        elif schema.type is Type.STRUCT:
            node["fields"] = [{**self.json_schema(f.schema), "field": f.name} for f in schema.fields]
        node["optional"] = schema.optional
        if schema.name is not None:
            node["name"] = schema.name
        if schema.version is not None:
            node["version"] = schema.version
        if schema.doc is not None:
            node["doc"] = schema.doc
        if schema.parameters is not None:
            node["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            node["default"] = self.to_json(schema, schema.default)
        if len(self._schema_cache) > 4096:
            self._schema_cache.clear()
        self._schema_cache[id(schema)] = (schema, node)
        return node

    # --- values ---------------------------------------------------------------------------

    def to_json(self, schema: Schema | None, value: Any) -> Any:
        """``convertToJson``: a JSON tree for :func:`write_json`."""
        if value is None:
            if schema is None:
                return None
            if schema.default is not None and self.config.replace_null_with_default:
                return self.to_json(schema, schema.default)
            if schema.optional:
                return None
            raise DataError("Conversion error: null value for field that is required and has no default value")
        if schema is not None and schema.name is not None:
            logical = self._logical(schema, value)
            if logical is not _NOT_LOGICAL:
                return logical
        kind = schema.type if schema is not None else schema_type_of(value)
        if kind is None:
            raise DataError(f"Java class {type(value).__name__} does not have corresponding schema type.")
        value_type = type(value)  # the common cases first, as the checks below take them
        if kind is Type.STRING and value_type is str:
            return value
        if kind is Type.STRUCT and value_type is Struct and schema is not None and value.schema is schema:
            return {f.name: self.to_json(f.schema, v) for f, v in value.items()}
        if value_type is int and kind in _INTEGERS:
            return value
        if kind in _INTEGERS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Invalid type for {kind.java_name}: {type(value).__name__}")
            return value
        if kind is Type.FLOAT64:
            if not isinstance(value, float):
                raise DataError(f"Invalid type for FLOAT64: {type(value).__name__}")
            return value
        if kind is Type.FLOAT32:
            if not isinstance(value, float):
                raise DataError(f"Invalid type for FLOAT32: {type(value).__name__}")
            text = java_float(value)
            return Raw('"' + text + '"') if text in ("NaN", "Infinity", "-Infinity") else Raw(text)
        if kind is Type.BOOLEAN:
            if not isinstance(value, bool):
                raise DataError(f"Invalid type for BOOLEAN: {type(value).__name__}")
            return value
        if kind is Type.STRING:
            if not isinstance(value, str):
                raise DataError(f"Invalid type for STRING: {type(value).__name__}")
            return value
        if kind is Type.BYTES:
            if not isinstance(value, (bytes, bytearray)):
                raise DataError(f"Invalid type for bytes type: {type(value).__name__}")
            return base64.b64encode(value).decode("ascii")
        if kind is Type.ARRAY:
            if not isinstance(value, list):
                raise DataError(f"Invalid type for ARRAY: {type(value).__name__}")
            items = None if schema is None else schema.value_schema
            return [self.to_json(items, item) for item in value]
        if kind is Type.MAP:
            if not isinstance(value, dict):
                raise DataError(f"Invalid type for MAP: {type(value).__name__}")
            if schema is None:
                object_mode = all(isinstance(k, str) for k in value)
                key_schema = value_schema = None
            else:
                assert schema.key_schema is not None
                object_mode = schema.key_schema.type is Type.STRING
                key_schema, value_schema = schema.key_schema, schema.value_schema
            if object_mode:
                return {_as_text(self.to_json(key_schema, k)): self.to_json(value_schema, v) for k, v in value.items()}
            return [[self.to_json(key_schema, k), self.to_json(value_schema, v)] for k, v in value.items()]
        if not isinstance(value, Struct):
            raise DataError(f"Invalid type for STRUCT: {type(value).__name__}")
        if schema is not None and value.schema is not schema and value.schema != schema:
            raise DataError("Mismatching schema.")
        return {f.name: self.to_json(f.schema, v) for f, v in value.items()}

    def _logical(self, schema: Schema, value: Any) -> Any:
        name = schema.name
        if name == DECIMAL:
            if not isinstance(value, decimal.Decimal):
                raise DataError(f"Invalid type for Decimal, expected BigDecimal but was {type(value).__name__}")
            if self.config.decimal_format == "NUMERIC":
                return Raw(str(value))
            return base64.b64encode(decimal_bytes(schema, value)).decode("ascii")
        if name in (DATE, TIME, TIMESTAMP):
            if not isinstance(value, dt.datetime):
                kind = name.rsplit(".", 1)[1]
                raise DataError(f"Invalid type for {kind}, expected Date but was {type(value).__name__}")
            millis = millis_of(value)
            if name == DATE:
                if millis % 86_400_000:
                    raise DataError("Kafka Connect Date type should not have any time fields set to non-zero values.")
                return millis // 86_400_000
            if name == TIME:
                if not 0 <= millis < 86_400_000:
                    raise DataError("Kafka Connect Time type should not have any date fields set to non-zero values.")
                return millis
            return millis
        return _NOT_LOGICAL

    # --- from JSON (an envelope with a schema) -------------------------------------------------------

    def to_connect(self, data: bytes | str | None) -> tuple[Schema | None, Any]:
        """``toConnectData`` with ``schemas.enable``: the schema and value of an envelope."""
        if data is None:
            return None, None
        read = self._envelope(data)
        if read is not None:
            return read
        node = json.loads(data, parse_float=_big_decimal_double)
        if not isinstance(node, dict) or set(node) != {"schema", "payload"}:
            raise DataError(
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
                "contain additional fields."
            )
        schema = connect_schema(node["schema"])
        return schema, self.value_from_json(schema, node["payload"])

    def _envelope(self, data: bytes | bytearray | str) -> tuple[Schema | None, Any] | None:
        """``to_connect`` of an envelope written as mongocdc's codec writes it (``{"schema":…,"payload":…}``,
        compact, the schema first), reading each distinct schema text once: a record whose schema text is one of
        the last few read (:attr:`_recent`) gets the same :class:`Schema` object without parsing it again, as the
        records of one collection all carry the same schema. ``None`` for any other text (whitespace, other keys
        or order, not UTF-8, invalid JSON), which the general way then reads, with the same result or error."""
        try:
            text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        except UnicodeDecodeError:
            return None
        if not text.startswith(_ENVELOPE_HEAD):
            return None
        start = len(_ENVELOPE_HEAD)
        found: tuple[Schema | None] | None = None
        end = start
        for schema_text, known in self._recent:
            end = start + len(schema_text)
            if text.startswith(schema_text, start) and text.startswith(_PAYLOAD_KEY, end):
                found = (known,)
                break
        try:
            if found is None:
                node, end = _DECODER.raw_decode(text, start)
                if not text.startswith(_PAYLOAD_KEY, end):
                    return None
                schema_text = text[start:end]
                if schema_text in self._by_text:
                    schema = self._by_text[schema_text]
                else:
                    schema = connect_schema(node)
                    if len(self._by_text) >= _SCHEMA_TEXTS:
                        self._by_text.clear()
                    self._by_text[schema_text] = schema
                self._recent = ((schema_text, schema), *self._recent[: _RECENT_SCHEMAS - 1])
                found = (schema,)
            payload, stop = _DECODER.raw_decode(text, end + len(_PAYLOAD_KEY))
        except (ValueError, KeyError, TypeError, AttributeError):  # the general way raises what it raises
            return None
        if text[stop:].strip(_JSON_SPACE) != "}":
            return None
        return found[0], self.value_from_json(found[0], payload)

    def value_from_json(self, schema: Schema | None, node: Any) -> Any:
        """``convertToConnect``."""
        if schema is None:
            return node
        if node is None:
            if schema.default is not None and self.config.replace_null_with_default:
                return schema.default
            if schema.optional:
                return None
            raise DataError(f"Invalid null value for required {schema.type.java_name} field")
        kind = schema.type
        name = schema.name
        if name is None:  # the common cases first, as the checks below take them
            if kind is Type.STRING:
                return node
            if kind is Type.STRUCT:
                result = Struct(schema)
                for f in schema.fields:
                    result.put(f.name, self.value_from_json(f.schema, node.get(f.name)))
                return result
        if name == DECIMAL:
            if isinstance(node, (int, float)):
                return decimal.Decimal(str(node))
            return decimal_from_bytes(schema, base64.b64decode(node))
        if name == DATE:
            return EPOCH + dt.timedelta(days=int(node))
        if name in (TIME, TIMESTAMP):
            return EPOCH + dt.timedelta(milliseconds=int(node))
        if kind in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
            return int(node)
        if kind in (Type.FLOAT32, Type.FLOAT64):
            return float(node)
        if kind is Type.BYTES:
            return base64.b64decode(node)
        if kind is Type.ARRAY:
            return [self.value_from_json(schema.value_schema, item) for item in node]
        if kind is Type.MAP:
            if isinstance(node, dict):
                return {k: self.value_from_json(schema.value_schema, v) for k, v in node.items()}
            return {
                self.value_from_json(schema.key_schema, k): self.value_from_json(schema.value_schema, v)
                for k, v in node
            }
        if kind is Type.STRUCT:
            result = Struct(schema)
            for f in schema.fields:
                result.put(f.name, self.value_from_json(f.schema, node.get(f.name)))
            return result
        return node


def _big_decimal_double(text: str) -> float:
    """A JSON fraction as Connect's JsonDeserializer reads it: a ``BigDecimal`` (no negative zero), then a double."""
    return float(text) + 0.0


_INTEGERS: Final = (Type.INT8, Type.INT16, Type.INT32, Type.INT64)
_DECODER: Final = json.JSONDecoder(parse_float=_big_decimal_double)
"""What ``json.loads(…, parse_float=_big_decimal_double)`` decodes with."""
_ENVELOPE_HEAD: Final = '{"schema":'
_PAYLOAD_KEY: Final = ',"payload":'
_JSON_SPACE: Final = " \t\n\r"
_RECENT_SCHEMAS: Final = 8
_SCHEMA_TEXTS: Final = 256


class _NotLogical:
    __slots__ = ()


_NOT_LOGICAL: Final = _NotLogical()


def _as_text(node: Any) -> str:
    """Jackson's ``asText`` of a map key's JSON."""
    if isinstance(node, str):
        return node
    if isinstance(node, bool):
        return "true" if node else "false"
    if node is None:
        return "null"
    if isinstance(node, float):
        return java_double(node)
    return str(node)


_SCHEMA_CACHE: dict[str, Schema] = {}


def connect_schema(node: Mapping[str, Any] | None) -> Schema | None:
    """``asConnectSchema``: a schema from its JSON form."""
    if node is None:
        return None
    kind = Type(node["type"])
    fields: tuple[Field, ...] = ()
    key_schema = value_schema = None
    if kind is Type.ARRAY:
        value_schema = connect_schema(node["items"])
    elif kind is Type.MAP:
        key_schema = connect_schema(node["keys"])
        value_schema = connect_schema(node["values"])
    elif kind is Type.STRUCT:
        built = []
        for position, f in enumerate(node["fields"]):
            child = connect_schema(f)
            assert child is not None
            built.append(Field(f["field"], position, child))
        fields = tuple(built)
    parameters = node.get("parameters")
    schema = Schema(
        kind,
        optional=bool(node.get("optional", False)),
        name=node.get("name"),
        version=node.get("version"),
        doc=node.get("doc"),
        parameters=None if parameters is None else tuple(parameters.items()),
        fields=fields,
        key_schema=key_schema,
        value_schema=value_schema,
    )
    if node.get("default") is not None:
        schema = schema.with_(default=JsonConverter().value_from_json(schema, node["default"]))
    return schema


def decimal_bytes(schema: Schema, value: decimal.Decimal) -> bytes:
    """``Decimal.fromLogical``: the unscaled value's big-endian two's complement bytes at the schema's scale."""
    scale = int(schema.params.get(DECIMAL_SCALE, "0"))
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int) or -exponent != scale:
        raise DataError(
            f"Decimal value has mismatching scale for given Decimal schema. Schema has scale {scale}, "
            f"value has scale {-exponent if isinstance(exponent, int) else exponent}"
        )
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return unscaled.to_bytes(length, "big", signed=True)


def decimal_from_bytes(schema: Schema, data: bytes) -> decimal.Decimal:
    scale = int(schema.params.get(DECIMAL_SCALE, "0"))
    return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-scale)
