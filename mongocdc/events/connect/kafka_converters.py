"""Kafka Connect's own converters besides JsonConverter (String, ByteArray and the primitive ones), byte for byte,
and Java's ``String.valueOf`` of a Connect value that they and CloudEventsConverter write.

Pure. Registered in ``converters.CONVERTERS`` under their Java names and configured with the options Connect
hands their ``configure`` (``<side>.converter.*`` with the prefix stripped):

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
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import struct as _struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mongocdc.events.connect.base import ConnectConfigError, text
from mongocdc.events.connect.data import (
    DataError,
    Header,
    Schema,
    Struct,
    Type,
    millis_of,
)
from mongocdc.events.connect.java_lang import HashMap, f32, java_class, number_text
from mongocdc.events.connect.java_time import DateFormat, date_to_string

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
