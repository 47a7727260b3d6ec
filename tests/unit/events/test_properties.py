"""Property tests of the pure core: codec round trips, key encoding, offset serialisation."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import bson
from bson import Decimal128, Int64, ObjectId, Timestamp
from bson.raw_bson import RawBSONDocument
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.events.codec import (
    document_to_json,
    document_to_json_pure,
    json_to_document,
    update_to_json,
    value_to_json,
)
from mongocdc.events.position import Position

keys = st.text(st.characters(blacklist_characters="\x00.$", blacklist_categories=("Cs",)), min_size=1, max_size=8)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.floats(),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(9999, 1, 1), timezones=st.just(dt.UTC)).map(
        lambda d: d.replace(microsecond=(d.microsecond // 1000) * 1000)
    ),
    st.decimals(min_value=-(10**20), max_value=10**20, allow_nan=False, allow_infinity=False, places=3).map(
        lambda d: Decimal128(str(d))
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
documents = st.dictionaries(keys, values, max_size=6)


def normalise(value: Any) -> Any:
    """Relaxed JSON does not keep int32 vs int64 apart, nor a datetime's tzinfo object identity."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) and value != value:
        return "NaN"  # NaN equals nothing, itself included
    if isinstance(value, int):
        return int(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC)
    return value


@given(documents)
def test_document_json_round_trips(doc: dict[str, Any]) -> None:
    for text in (document_to_json(doc), update_to_json(doc)):
        assert normalise(json_to_document(text)) == normalise(bson.decode(bson.encode(doc), codec_options=_TZ))


@given(documents)
def test_fast_and_pure_codecs_agree(doc: dict[str, Any]) -> None:
    """The in-place fast path writes exactly the text of the plain recursive writer."""
    assert document_to_json(doc) == document_to_json_pure(doc)
    assert update_to_json(doc) == document_to_json_pure(doc, mode="update")


@given(documents)
def test_raw_documents_render_like_decoded_ones(doc: dict[str, Any]) -> None:
    raw = RawBSONDocument(bson.encode(doc))
    assert document_to_json(raw) == document_to_json(doc)


@given(values)
def test_key_encoding_round_trips(value: Any) -> None:
    text = value_to_json(value)
    assert normalise(json_to_document(text)) == normalise(value)


from bson.codec_options import CodecOptions  # noqa: E402

_TZ: CodecOptions[Any] = CodecOptions(tz_aware=True)


def test_position_shows_the_token_data_string() -> None:
    position = Position(1, 2, Position.token_bytes({"_data": "8265A0"}))
    assert position.describe_token() == "8265A0"
    assert Position(1, 2).token_document() is None


def test_timestamp_values_render() -> None:
    assert json.loads(value_to_json(Timestamp(5, 1))) == {"$timestamp": {"t": 5, "i": 1}}


@given(values)
def test_key_fast_paths_match_the_general_writer(value: Any) -> None:
    """The shortcuts for ObjectId, string and integer keys write what the general relaxed writer writes."""
    from mongocdc.events import codec

    decoded = bson.decode(bson.encode({"_": value}), codec._DECODE)["_"]
    assert value_to_json(value) == codec._java_text(codec._write(decoded, strict=False))


@given(values.filter(lambda v: not isinstance(v, list)), documents)
def test_raw_document_id_reads_the_id_of_any_document(key: Any, rest: dict[str, Any]) -> None:
    from mongocdc.events.codec import raw_document_id

    doc = {"_id": key, **{k: v for k, v in rest.items() if k != "_id"}}
    raw = RawBSONDocument(bson.encode(doc))
    assert normalise(raw_document_id(raw)) == normalise(bson.decode(bson.encode(doc), codec_options=_TZ)["_id"])
    assert type(raw_document_id(raw)) is type(bson.decode(raw.raw)["_id"])
