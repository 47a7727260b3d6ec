"""The fused ``ExtractNewDocumentState`` + ``JsonConverter`` writer (``mongocdc/events/connect/unwrap_json.py``).

Its bytes must be the general chain's, which ``test_unwrap.py`` checks against the real Debezium transform (and
whose harness, ``tests/oracle/recorded.py``, compares the fused writer's own bytes with Debezium's for every
record of a fusable configuration). Here: the same records and generated documents of every BSON type through a
pipeline that fuses and one that never does, record by record; that the fused writer really writes (a writer that
always deferred to the general chain would pass the comparison alone); which chains it takes.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from bson import Binary, Code, Decimal128, Int64, MaxKey, ObjectId, Regex, Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.workload import make_document
from mongocdc.events.codec import document_to_json, value_to_json
from mongocdc.events.connect.chain import DataError, Output, RecordPipeline
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.model import ChangeEvent, Op, SnapshotMarker, SourceInfo
from tests.oracle.recorded import recorded_inputs

UNWRAP = "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"


def config(options: Mapping[str, str] | None = None, *, keys: bool = True, values: bool = True) -> dict[str, str]:
    chain = {"transforms": "unwrap", "transforms.unwrap.type": UNWRAP}
    chain.update({f"transforms.unwrap.{k}": v for k, v in (options or {}).items()})
    chain["key.converter.schemas.enable"] = str(keys).lower()
    chain["value.converter.schemas.enable"] = str(values).lower()
    return chain


CONFIGS = {
    "schemas": config(),
    "schemaless": config(keys=False, values=False),
    "key-schemaless": config(keys=False),
    "rewrite": config({"delete.tombstone.handling.mode": "rewrite"}),
    "rewrite-with-id": config(
        {
            "delete.tombstone.handling.mode": "rewrite-with-tombstone",
            "delete.tombstone.handling.mode.rewrite-with-id": "true",
        },
        values=False,
    ),
    "drop": config({"delete.tombstone.handling.mode": "drop"}),
}

Outcome = tuple[str, Any]


def outcome(pipeline: RecordPipeline, record: tuple[str, bytes | None, bytes | None, list[Any]]) -> Outcome:
    topic, key, value, headers = record
    try:
        written = pipeline.process(topic, key, value, headers)
    except DataError as exc:
        return ("error", str(exc))
    if written is None:
        return ("dropped", None)
    assert isinstance(written, Output)
    return ("written", (written.topic, written.partition, written.key, written.value, written.headers))


def compare(name: str, records: list[tuple[str, bytes | None, bytes | None, list[Any]]]) -> tuple[int, int]:
    """Each record twice through the fusing pipeline (a shape's first record is checked against the general chain,
    the second written by the fused writer) and once through the general chain; returns the fused writer's
    records and diverged shapes."""
    fusing = RecordPipeline.from_config(CONFIGS[name])
    general = RecordPipeline.from_config(CONFIGS[name], fuse=False)
    assert fusing.fused is not None and general.fused is None
    for record in records:
        expected = outcome(general, record)
        assert outcome(fusing, record) == expected, record
        assert outcome(fusing, record) == expected, record
    return fusing.fused.fused, fusing.fused.diverged


def _recorded() -> list[tuple[str, bytes | None, bytes | None, list[Any]]]:
    return [
        (
            r["topic"],
            None if r["key"] is None else r["key"].encode(),
            None if r["value"] is None else r["value"].encode(),
            [(name, data) for name, data in r.get("headers", ())],
        )
        for r in recorded_inputs()
    ]


CODEC = EnvelopeCodec("dbz", schemas_enable=True)


def change(
    document: dict[str, Any], *, op: Op = Op.CREATE, collection: str = "docs"
) -> tuple[str, bytes, bytes, list[Any]]:
    """The record mongocdc's codec writes (with schemas, as it does for a chain) for an insert of ``document``."""
    event = ChangeEvent(
        op,
        value_to_json(document["_id"]),
        SourceInfo("shop", collection, 1_700_000_000, 3, wall_time_ms=1_700_000_000_123, snapshot=SnapshotMarker.FALSE),
        after=document_to_json(document),
    )
    return CODEC.topic(event), CODEC.key(event), CODEC.value(event, 1_700_000_000_456), list(CODEC.headers or ())


@pytest.mark.parametrize("name", CONFIGS)
def test_the_recorded_records_are_written_as_the_general_chain_writes_them(name: str) -> None:
    fused, diverged = compare(name, _recorded())
    assert diverged == 0
    assert (
        fused >= 40
    )  # the recorded inserts, reads and full-document updates (deletes, tombstones and the rest: general)


def _bench_documents(count: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(7)
    for i in range(count):
        yield make_document(i, rng)


@pytest.mark.parametrize("name", ["schemas", "schemaless", "rewrite"])
def test_the_benchmark_documents_take_the_fused_writer(name: str) -> None:
    records = [change(document) for document in _bench_documents(200)]
    fused, diverged = compare(name, records)
    assert diverged == 0
    assert fused >= 200  # every document: the second pass of each is fused, and of each shape's later ones both


_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=4).filter(
    lambda name: "\x00" not in name and "." not in name
)
_SCALARS = st.one_of(
    _WORDS,
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1e-4, 1e7, 1e22, -0.0, 123456.789]),
    st.booleans(),
    st.none(),
    st.builds(ObjectId),
    st.integers(-(10**13), 10**13).map(lambda ms: dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)),
    st.sampled_from(["1.50", "-0", "1E+3", "NaN", "12345678901234567890.1"]).map(Decimal128),
    st.binary(max_size=8).map(Binary),
    st.binary(min_size=16, max_size=16).map(lambda data: Binary(data, 4)),
    st.sampled_from([Regex("a.*", "i"), Timestamp(5, 1), MaxKey(), Code("x")]),
)


def _flat_documents(draw: Any) -> list[dict[str, Any]]:
    names = draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True))
    kinds = {name: draw(st.sampled_from([0, 1, 2])) for name in names}
    values = {0: _WORDS, 1: st.integers(0, 9), 2: st.floats(0.01, 100.0)}
    return [
        {name: draw(values[kinds[name]]) for name in names if draw(st.booleans()) or name == names[0]}
        for _ in range(draw(st.integers(1, 3)))
    ]


@st.composite
def _values(draw: Any, depth: int = 0) -> Any:
    choice = draw(st.integers(0, 9 if depth < 2 else 5))
    if choice <= 5:
        return draw(_SCALARS)
    if choice == 6:
        return draw(st.dictionaries(_NAMES, _values(depth + 1), max_size=3))
    if choice == 7:
        scalar = draw(st.sampled_from([_WORDS, st.integers(0, 5), st.booleans(), st.builds(ObjectId)]))
        return draw(st.lists(scalar, max_size=3))
    if choice == 8:
        return _flat_documents(draw)
    return draw(st.lists(_values(depth + 1), max_size=3))  # mixed: mostly the general chain's (or its refusal)


@st.composite
def _documents(draw: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "_id": draw(
            st.one_of(
                st.none(),
                st.booleans(),
                st.builds(ObjectId),
                st.integers(-(2**63), 2**63 - 1),
                _WORDS,
                st.floats(0.5, 9.5),
            )
        )
    }
    document.update(draw(st.dictionaries(_NAMES.filter(lambda n: n != "_id"), _values(), max_size=6)))
    return document


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_documents(), min_size=1, max_size=4), st.sampled_from(["schemas", "schemaless", "key-schemaless"]))
def test_any_document_is_written_as_the_general_chain_writes_it(documents: list[dict[str, Any]], name: str) -> None:
    _, diverged = compare(name, [change(document) for document in documents])
    assert diverged == 0


@pytest.mark.parametrize(
    "value",
    [
        'tab\there, quote" and backslash\\',
        "control \x01 and \x1f",
        "beyond the BMP 😀",
        "é and \u2028",
        1e-5,
        1e300,
        float("nan"),
        -float("inf"),
        dt.datetime(1, 1, 1),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
        Int64(2**40),
        2**31 - 1,
    ],
)
def test_values_whose_text_the_fused_writer_leaves_to_the_json_writer(value: Any) -> None:
    records = [change({"_id": 1, "v": value, "n": [value]}), change({"_id": 2, "v": value, "n": [value]})]
    fused, diverged = compare("schemas", records)
    assert diverged == 0 and fused >= 3


def test_a_record_the_transform_refuses_fails_alike() -> None:
    records = [change({"_id": 1, "mixed": [1, "a"]})]
    general = RecordPipeline.from_config(CONFIGS["schemas"], fuse=False)
    assert outcome(general, records[0])[0] == "error"
    compare("schemas", records)


def test_each_topic_and_shape_is_checked_once() -> None:
    pipeline = RecordPipeline.from_config(CONFIGS["schemaless"])
    assert pipeline.fused is not None
    shapes = [{"_id": i, "a": "x"} for i in range(3)] + [{"_id": i, "a": i} for i in range(3)]
    for document in shapes:
        pipeline.process(*change(document))
    for document in shapes[:3]:
        pipeline.process(*change(document, collection="other"))
    # (topic, shape): docs/a string, docs/a int32, other/a string; each first record was the general chain's
    assert pipeline.fused.fused == 9 - 3
    assert {topic: len(known.shapes) for topic, known in pipeline.fused.topics.items()} == {
        "dbz.shop.docs": 2,
        "dbz.shop.other": 1,
    }


@pytest.mark.parametrize(
    "extra",
    [
        {"transforms.unwrap.array.encoding": "document"},
        {"transforms.unwrap.flatten.struct": "true"},
        {"transforms.unwrap.add.fields": "op"},
        {"transforms.unwrap.add.headers": "op"},
        {"transforms.unwrap.field.name.adjustment.mode": "avro"},
        {
            "transforms.unwrap.predicate": "p",
            "predicates": "p",
            "predicates.p.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "predicates.p.pattern": "x",
        },
        {
            "transforms": "unwrap,route",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "x",
            "transforms.route.replacement": "y",
        },
        {"value.converter.decimal.format": "NUMERIC"},
        {"value.converter.replace.null.with.default": "false"},
        {"value.converter": "org.apache.kafka.connect.storage.StringConverter"},
    ],
)
def test_other_chains_and_converter_settings_take_the_general_chain(extra: dict[str, str]) -> None:
    assert RecordPipeline.from_config({**CONFIGS["schemas"], **extra}).fused is None
    assert RecordPipeline.from_config(CONFIGS["schemas"]).fused is not None


@pytest.mark.parametrize("name", ["schemas", "schemaless", "rewrite"])
def test_a_change_is_written_from_the_event_as_from_the_codecs_record(name: str) -> None:
    """``fused_record`` (the engines' way, from the change's ``_id`` and ``after`` texts, the document's tree taken
    over from ``document_to_json``) writes what ``process`` writes from the codec's record; it declines a topic or
    shape not checked yet, which ``process`` then checks."""
    pipeline = RecordPipeline.from_config(CONFIGS[name])
    general = RecordPipeline.from_config(CONFIGS[name], fuse=False)
    documents = list(_bench_documents(30))
    first = documents[0]
    topic = "dbz.shop.docs"
    assert pipeline.fused_record(topic, value_to_json(first["_id"]), document_to_json(first)) is None  # unknown topic
    pipeline.process(*change(first))  # checked: the topic and this shape are known now
    for document in documents:
        expected = outcome(general, change(document))
        after = document_to_json(document)  # the tree behind this very text is handed over to the fused writer
        written = pipeline.fused_record(topic, value_to_json(document["_id"]), after)
        if written is None:  # a shape not checked yet: the codec's record goes through process, which checks it
            assert outcome(pipeline, change(document)) == expected
            written = pipeline.fused_record(topic, value_to_json(document["_id"]), document_to_json(document))
        assert written is not None
        assert (
            "written",
            (topic, None, *written, [(n, v.encode() if isinstance(v, str) else v) for n, v in CODEC.headers or ()]),
        ) == expected
        copied = "".join(list(after))  # another text object: parsed, not taken over
        assert pipeline.fused_record(topic, value_to_json(document["_id"]), copied) == written
    assert pipeline.fused is not None and pipeline.fused.diverged == 0


def test_the_tree_behind_a_text_is_handed_over_once() -> None:
    from mongocdc.events.codec import decoded_json

    text = document_to_json({"_id": ObjectId("65a1b2c3d4e5f60718293a4b"), "n": Int64(5), "x": 1e-9})
    assert decoded_json(text) is None  # a double in Java's scientific notation: the tree is not the text's
    text = document_to_json({"_id": ObjectId("65a1b2c3d4e5f60718293a4b"), "n": Int64(5), "d": dt.datetime(2024, 1, 1)})
    assert decoded_json("".join(list(text))) is None  # an equal text, not this one
    assert decoded_json(text) == json.loads(text)
    assert decoded_json(text) is None  # once
