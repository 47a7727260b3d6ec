"""Source positions: where a change stream stands (stored by ``engine/source_offset.SourceOffset``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson.raw_bson import RawBSONDocument


def token_cluster_time(token: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(sec, ord)`` of the cluster time a resume token encodes, ``None`` when it does not say.

    A token's ``_data`` (hex, or binary before MongoDB 4.0.7) is KeyString-encoded; it starts with the
    cluster time: type byte 130 (a timestamp), then the timestamp's 64 bits big-endian (seconds, then
    the increment), as Debezium's ``ResumeTokens.getTimestamp`` reads it.
    """
    data = token.get("_data")
    raw: bytes
    if isinstance(data, str):
        try:
            raw = bytes.fromhex(data)
        except ValueError:
            return None
    elif isinstance(data, bytes):  # bson.Binary is a bytes subclass
        raw = bytes(data)
    else:
        return None
    if len(raw) < 9 or raw[0] != 130:
        return None
    return int.from_bytes(raw[1:5], "big"), int.from_bytes(raw[5:9], "big")


@dataclass(frozen=True, slots=True)
class Position:
    """A point in a replica set's (or the cluster's) change history.

    ``sec``/``ord`` are the cluster time of the last change (seconds and
    increment), ``resume_token`` the change stream token to resume after.
    Field names follow the Debezium MongoDB connector's offsets, where they are stored as they are
    (the token as Base64 of its BSON).
    """

    sec: int
    ord: int
    resume_token: bytes | None = None
    """The resume token document, BSON-encoded."""

    @staticmethod
    def token_bytes(token: Mapping[str, Any] | RawBSONDocument | None) -> bytes | None:
        if token is None:
            return None
        if isinstance(token, RawBSONDocument):
            return bytes(token.raw)
        return bson.encode(token)

    def token_document(self) -> dict[str, Any] | None:
        """The resume token as a document, ready for ``resume_after``."""
        if self.resume_token is None:
            return None
        return bson.decode(self.resume_token)

    def describe_token(self) -> str:
        """The token's ``_data`` string when it has one, else its extended JSON."""
        doc = self.token_document()
        if doc is None:
            return ""
        data = doc.get("_data")
        if isinstance(data, str) and len(doc) == 1:
            return data
        from mongocdc.events.codec import value_to_json

        return value_to_json(doc)
