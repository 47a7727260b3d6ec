"""BSON → MongoDB relaxed extended JSON, the text Debezium puts in ``after``/``before``.

python-bsonjs (libbson) is about five times faster than ``bson.json_util``;
where it cannot be installed the pure-Python encoder produces the same JSON
values (whitespace may differ, which no JSON reader sees).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import bson
from bson import Int64, ObjectId, json_util
from bson.raw_bson import RawBSONDocument

_RELAXED = json_util.RELAXED_JSON_OPTIONS
_json_string = json.JSONEncoder().encode

try:  # pragma: no cover - exercised by whichever branch is installed
    import bsonjs as _bsonjs

    def _raw_to_json(raw: bytes) -> str:
        return str(_bsonjs.dumps(raw, mode=_bsonjs.RELAXED))

    FAST_CODEC = True
except ImportError:  # pragma: no cover

    def _raw_to_json(raw: bytes) -> str:
        return json_util.dumps(bson.decode(raw), json_options=_RELAXED)

    FAST_CODEC = False


def document_to_json(document: Mapping[str, Any] | RawBSONDocument) -> str:
    """Render one BSON document as relaxed extended JSON text."""
    if isinstance(document, RawBSONDocument):
        return _raw_to_json(bytes(document.raw))
    return _raw_to_json(bson.encode(document))


def document_to_json_pure(document: Mapping[str, Any]) -> str:
    """The pure-Python rendering, used as the fallback and as the reference in tests."""
    if isinstance(document, RawBSONDocument):
        document = bson.decode(document.raw)
    return json_util.dumps(document, json_options=_RELAXED)


def value_to_json(value: Any) -> str:
    """Render a single BSON value (a document key, for instance) as relaxed extended JSON.

    Matches the MongoDB Java driver's relaxed writer that Debezium uses for keys:
    ``ObjectId`` → ``{"$oid": "…"}``, ``1004`` → ``1004``, ``"abc"`` → ``"abc"``.
    """
    kind = type(value)
    if kind is ObjectId:
        return f'{{"$oid": "{value}"}}'
    if kind is str:
        return _json_string(value)
    if kind is int and -(2**63) <= value < 2**63:
        return str(value)
    if isinstance(value, RawBSONDocument):
        value = bson.decode(value.raw)
    return json_util.dumps(value, json_options=_RELAXED)


def json_to_document(text: str) -> Any:
    """Parse relaxed or canonical extended JSON back into BSON values."""
    return json_util.loads(text, json_options=_RELAXED)


def raw_document_id(document: RawBSONDocument) -> Any:
    """The ``_id`` of a raw document without inflating the whole document.

    MongoDB stores ``_id`` first; the common key types are read straight from the bytes, anything
    else (or an ``_id`` that is not first) through a full decode.
    """
    raw = document.raw
    kind = raw[4]
    if raw[5:9] == b"_id\x00":
        at = 9
        if kind == 0x07:
            return ObjectId(bytes(raw[at : at + 12]))
        if kind == 0x02:
            size = int.from_bytes(raw[at : at + 4], "little", signed=True)
            return bytes(raw[at + 4 : at + 3 + size]).decode("utf-8")
        if kind == 0x10:
            return int.from_bytes(raw[at : at + 4], "little", signed=True)
        if kind == 0x12:
            return Int64(int.from_bytes(raw[at : at + 8], "little", signed=True))
    return bson.decode(raw)["_id"]
