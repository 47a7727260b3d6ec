"""Kafka Connect's source offset storage, byte for byte (pure: no Kafka client, no I/O but files).

A Connect worker keeps every source connector's offsets as key/value byte pairs, serialised by its
internal ``JsonConverter`` (``schemas.enable=false``, Jackson, compact):

* key: ``["<connector name>",{<source partition>}]`` — a JSON array of the connector name and the
  connector's partition map, fields in the order the connector's ``Map`` iterates them;
* value: ``{<source offset>}`` in the same way, or no value at all (a tombstone) once deleted.

Connect looks a partition's offset up by the *bytes* of its key, so a key written by anyone else
must be byte-identical to the one Connect serialises. Debezium's maps are ``java.util.HashMap``\\s:
:func:`java_hashmap_order` gives the order they iterate in, :func:`jackson_json` the bytes Jackson
writes for them.

Where the pairs live:

* distributed workers (and standalone ones with ``offset.storage=kafka``): the compacted topic
  ``offset.storage.topic`` (conventionally ``connect-offsets``, 25 partitions). The worker's producer
  has no partitioner configured, so a key goes to the Java client's default partition for it,
  ``toPositive(murmur2(key)) % partitions`` (:func:`default_partition`). Readers replay the topic;
  the last record of a key wins and a null value deletes it.
* standalone workers: the file ``offset.storage.file.filename``, the Java serialisation
  (``ObjectOutputStream``) of one ``java.util.HashMap<byte[], byte[]>`` holding the same pairs,
  rewritten whole at every flush (:func:`read_offsets_file`, :func:`write_offsets_file`).
"""

from __future__ import annotations

import io
import json
import os
import struct
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TOPIC = "connect-offsets"
"""The offsets topic of Kafka's example worker configurations (``offset.storage.topic``)."""


# --- Jackson's compact JSON -----------------------------------------------------------------------

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _jackson_string(text: str) -> str:
    """A JSON string as Jackson writes it: ``"`` ``\\`` and control characters escaped, upper-case
    ``\\u00XX`` for the ones without a short escape, everything else (non-ASCII too) as is."""
    out = ['"']
    for ch in text:
        escape = _SHORT_ESCAPES.get(ch)
        if escape is not None:
            out.append(escape)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _jackson_text(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _jackson_string(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_jackson_string(str(k))}:{_jackson_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_jackson_text(v) for v in value) + "]"
    raise TypeError(f"no Kafka Connect offset holds a {type(value).__name__}: {value!r}")


def jackson_json(value: Any) -> bytes:
    """``value`` as Jackson's ``ObjectMapper`` writes it (UTF-8, no spaces), maps in their own order."""
    return _jackson_text(value).encode("utf-8")


# --- keys and values --------------------------------------------------------------------------------


def connect_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    """The key bytes of a connector's source partition (``partition`` in its map's iteration order)."""
    return jackson_json([connector, dict(partition)])


def parse_connect_key(raw: bytes | None) -> tuple[str, dict[str, Any]] | None:
    """``(connector, partition)`` of an offsets key, ``None`` for anything Connect itself would skip."""
    if raw is None:
        return None
    try:
        key = json.loads(raw)
    except ValueError:
        return None
    if isinstance(key, list) and len(key) == 2 and isinstance(key[0], str) and isinstance(key[1], dict):
        return key[0], key[1]
    return None


def connect_value(offset: Mapping[str, Any]) -> bytes:
    """The value bytes of a source offset (in the mapping's order)."""
    return jackson_json(dict(offset))


def parse_connect_value(raw: bytes) -> dict[str, Any]:
    """The offset map of a value; ``ValueError`` when it is not a JSON object."""
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


# --- what was read --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectOffset:
    """The live offset of one key, as found in an offsets topic or file."""

    key: bytes
    connector: str
    partition: dict[str, Any]
    offset: dict[str, Any] | None
    """``None`` when the value is not a JSON object (what Connect would fail on)."""
    raw_value: bytes
    where: str
    """Where it was read: ``<topic>[<partition>]@<offset>``, or the file's path."""


def live_offsets(entries: Iterable[tuple[bytes | None, bytes | None, str]]) -> list[ConnectOffset]:
    """The live offsets of ``(key, value, where)`` entries in log order: the last value of a key wins,
    a tombstone deletes it, keys that are not ``[name, {partition}]`` are skipped as Connect skips them."""
    latest: dict[bytes, tuple[bytes | None, str]] = {}
    for key, value, where in entries:
        if key is None:
            continue
        latest[key] = (value, where)
    found: list[ConnectOffset] = []
    for key, (value, where) in latest.items():
        parsed = parse_connect_key(key)
        if parsed is None or value is None:
            continue
        try:
            offset: dict[str, Any] | None = parse_connect_value(value)
        except ValueError:
            offset = None
        found.append(ConnectOffset(key, parsed[0], parsed[1], offset, value, where))
    return sorted(found, key=lambda o: (o.connector, o.key))


def rest_request(connector: str, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> dict[str, Any]:
    """The ``PATCH /connectors/<name>/offsets`` request that writes the same offset (Kafka Connect 3.6+)."""
    return {
        "method": "PATCH",
        "path": f"/connectors/{connector}/offsets",
        "body": {"offsets": [{"partition": dict(partition), "offset": dict(offset)}]},
    }


# --- the standalone worker's offsets file (Java serialisation of HashMap<byte[], byte[]>) ----------

_MAGIC = b"\xac\xed\x00\x05"
_TC_NULL, _TC_REFERENCE, _TC_CLASSDESC, _TC_OBJECT = 0x70, 0x71, 0x72, 0x73
_TC_ARRAY, _TC_BLOCKDATA, _TC_ENDBLOCKDATA, _TC_BLOCKDATALONG = 0x75, 0x77, 0x78, 0x7A
_BASE_HANDLE = 0x7E0000
_HASHMAP = "java.util.HashMap"
_HASHMAP_UID = 362498820763181265
_BYTES = "[B"
_BYTES_UID = -5984413125824719648
_SC_SERIALIZABLE, _SC_WRITE_METHOD = 0x02, 0x01


class OffsetsFileError(ValueError):
    """The file is not a Connect standalone offsets file (a serialised ``HashMap<byte[], byte[]>``)."""


@dataclass(frozen=True, slots=True)
class _ClassDesc:
    name: str
    fields: tuple[tuple[str, str], ...]


class _Reader:
    """Just enough of the Java serialisation protocol for ``HashMap<byte[], byte[]>``."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.handles: list[Any] = []
        self.block = b""

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise OffsetsFileError("the file ends in the middle of the map")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def utf(self) -> str:
        (length,) = struct.unpack(">H", self.take(2))
        return self.take(length).decode("utf-8", "replace")

    def classdesc(self) -> _ClassDesc | None:
        tc = self.byte()
        if tc == _TC_NULL:
            return None
        if tc == _TC_REFERENCE:
            desc: _ClassDesc = self.reference(_ClassDesc)
            return desc
        if tc != _TC_CLASSDESC:
            raise OffsetsFileError(f"expected a class description, found type code 0x{tc:02x}")
        name = self.utf()
        self.take(8)  # serialVersionUID
        desc_handle = len(self.handles)
        self.handles.append(None)
        self.byte()  # flags
        (count,) = struct.unpack(">H", self.take(2))
        fields: list[tuple[str, str]] = []
        for _ in range(count):
            code = chr(self.byte())
            field_name = self.utf()
            if code in "[L":
                self.content()  # the field's type name, a string
            fields.append((field_name, code))
        if self.byte() != _TC_ENDBLOCKDATA:
            raise OffsetsFileError(f"class {name} has annotations this reader does not know")
        desc = _ClassDesc(name, tuple(fields))
        self.handles[desc_handle] = desc
        if self.classdesc() is not None:
            raise OffsetsFileError(f"class {name} has a serialisable superclass: not a HashMap of byte arrays")
        return desc

    def reference(self, kind: type) -> Any:
        (handle,) = struct.unpack(">I", self.take(4))
        index = handle - _BASE_HANDLE
        if not 0 <= index < len(self.handles) or not isinstance(self.handles[index], kind):
            raise OffsetsFileError(f"dangling reference 0x{handle:x}")
        return self.handles[index]

    def content(self) -> Any:
        tc = self.byte()
        if tc == _TC_NULL:
            return None
        if tc == _TC_REFERENCE:
            return self.reference(object)
        if tc == 0x74:  # TC_STRING
            text = self.utf()
            self.handles.append(text)
            return text
        if tc == _TC_ARRAY:
            desc = self.classdesc()
            if desc is None or desc.name != _BYTES:
                raise OffsetsFileError(f"expected byte arrays, found {desc.name if desc else 'null'}[]")
            (length,) = struct.unpack(">i", self.take(4))
            value = self.take(length)
            self.handles.append(value)
            return value
        raise OffsetsFileError(f"expected a byte array, found type code 0x{tc:02x}")

    def block_int(self) -> int:
        if len(self.block) < 4:
            tc = self.byte()
            if tc == _TC_BLOCKDATA:
                self.block += self.take(self.byte())
            elif tc == _TC_BLOCKDATALONG:
                (length,) = struct.unpack(">i", self.take(4))
                self.block += self.take(length)
            else:
                raise OffsetsFileError(f"expected the map's size, found type code 0x{tc:02x}")
        value = int.from_bytes(self.block[:4], "big", signed=True)
        self.block = self.block[4:]
        return value

    def hashmap(self) -> dict[bytes | None, bytes | None]:
        if self.take(4) != _MAGIC:
            raise OffsetsFileError("not a Java serialisation stream (no 0xACED0005 header)")
        if self.byte() != _TC_OBJECT:
            raise OffsetsFileError("the stream does not start with an object")
        desc = self.classdesc()
        if desc is None or desc.name != _HASHMAP:
            raise OffsetsFileError(f"expected a java.util.HashMap, found {desc.name if desc else 'null'}")
        self.handles.append("map")
        for _name, code in desc.fields:  # loadFactor (float), threshold (int)
            self.take({"F": 4, "I": 4}.get(code, 0) or _unknown_field(code))
        self.block_int()  # buckets
        size = self.block_int()
        if size < 0:
            raise OffsetsFileError(f"negative map size {size}")
        entries: dict[bytes | None, bytes | None] = {}
        for _ in range(size):
            key = self.content()
            entries[key] = self.content()
        return entries


def _unknown_field(code: str) -> int:
    raise OffsetsFileError(f"unexpected HashMap field of type {code!r}")


def decode_offsets_file(data: bytes) -> dict[bytes | None, bytes | None]:
    """The key/value pairs of a standalone worker's offsets file; an empty file holds none."""
    if not data:
        return {}
    return _Reader(data).hashmap()


def encode_offsets_file(entries: Mapping[bytes, bytes | None]) -> bytes:
    """``ObjectOutputStream.writeObject`` of a ``HashMap<byte[], byte[]>`` holding ``entries``."""
    size = len(entries)
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    out = io.BytesIO()
    out.write(_MAGIC)
    out.write(bytes([_TC_OBJECT, _TC_CLASSDESC]))
    _write_utf(out, _HASHMAP)
    out.write(struct.pack(">q", _HASHMAP_UID))
    out.write(bytes([_SC_SERIALIZABLE | _SC_WRITE_METHOD]))
    out.write(struct.pack(">H", 2))
    out.write(b"F")
    _write_utf(out, "loadFactor")
    out.write(b"I")
    _write_utf(out, "threshold")
    out.write(bytes([_TC_ENDBLOCKDATA, _TC_NULL]))
    # handle 0: the HashMap class description, 1: the map; 2: byte[]'s class description
    out.write(struct.pack(">fi", 0.75, capacity * 3 // 4 if size else 0))  # no table yet: threshold 0
    out.write(bytes([_TC_BLOCKDATA, 8]))
    out.write(struct.pack(">ii", capacity, size))
    bytes_desc: int | None = None
    next_handle = 2
    for key, value in entries.items():
        for item in (key, value):
            if item is None:
                out.write(bytes([_TC_NULL]))
                continue
            out.write(bytes([_TC_ARRAY]))
            if bytes_desc is None:
                out.write(bytes([_TC_CLASSDESC]))
                _write_utf(out, _BYTES)
                out.write(struct.pack(">q", _BYTES_UID))
                out.write(bytes([_SC_SERIALIZABLE]))
                out.write(struct.pack(">H", 0))
                out.write(bytes([_TC_ENDBLOCKDATA, _TC_NULL]))
                bytes_desc = next_handle
                next_handle += 1
            else:
                out.write(bytes([_TC_REFERENCE]))
                out.write(struct.pack(">I", _BASE_HANDLE + bytes_desc))
            out.write(struct.pack(">i", len(item)))
            out.write(item)
            next_handle += 1
    out.write(bytes([_TC_ENDBLOCKDATA]))
    return out.getvalue()


def _write_utf(out: io.BytesIO, text: str) -> None:
    data = text.encode("utf-8")
    out.write(struct.pack(">H", len(data)))
    out.write(data)


def read_offsets_file(path: str | Path) -> list[tuple[bytes | None, bytes | None, str]]:
    """The file's pairs as ``(key, value, where)`` entries for :func:`live_offsets`.

    ``FileNotFoundError`` when there is no file; :class:`OffsetsFileError` when it is not one.
    """
    data = Path(path).read_bytes()
    return [(k, v, str(path)) for k, v in decode_offsets_file(data).items()]


def write_offsets_file(path: str | Path, updates: Sequence[tuple[bytes, bytes | None]]) -> None:
    """Set (or, with a ``None`` value, delete) keys in the file, keeping every other pair; the file is
    replaced atomically (a new file renamed over it), as a worker that is not running will read it."""
    target = Path(path)
    try:
        entries = decode_offsets_file(target.read_bytes())
    except FileNotFoundError:
        entries = {}
    for key, value in updates:
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
    kept = {k: v for k, v in entries.items() if k is not None}
    data = encode_offsets_file(kept)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
