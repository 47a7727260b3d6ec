"""Signals from the signal collection and the Kafka signal topic: Debezium's formats, every malformed
kind rejected with a message naming the signal and the problem, and writing them back (round trips)."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import bson
import pytest
from bson import Int64, ObjectId
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.errors import ExitCode, MongocdcError
from mongocdc.events.signals import (
    AdditionalCondition,
    DataCollectionPattern,
    ExecuteSnapshot,
    InvalidSignalError,
    KafkaSignalRecord,
    LogSignal,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalType,
    SnapshotType,
    StopSnapshot,
    WindowClose,
    WindowOpen,
    parse_kafka_signal,
    parse_signal,
    quote_namespace,
    serialize_kafka_signal,
    serialize_signal,
    window_close_for_deleted,
)


def execute(data: Any, signal_id: Any = "ad-hoc-1") -> Signal:
    return parse_signal({"_id": signal_id, "type": "execute-snapshot", "data": data})


def patterns(*texts: str) -> tuple[DataCollectionPattern, ...]:
    return tuple(DataCollectionPattern.parse(t) for t in texts)


# --------------------------------------------------------------------------- the signal collection


def test_execute_snapshot_with_data_as_json_text_like_debeziums_signal_table() -> None:
    data = json.dumps({"data-collections": ["inventory.orders", "inventory.customers"], "type": "incremental"})
    signal = execute(data)
    assert signal == ExecuteSnapshot("ad-hoc-1", patterns("inventory.orders", "inventory.customers"))
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.type is SignalType.EXECUTE_SNAPSHOT
    assert signal.snapshot_type is SnapshotType.INCREMENTAL
    assert signal.noop_reason is None


def test_execute_snapshot_with_data_as_a_sub_document_like_debeziums_mongodb_example() -> None:
    signal = execute({"data-collections": ["inventory.orders"], "type": "BLOCKING"})
    assert signal == ExecuteSnapshot("ad-hoc-1", patterns("inventory.orders"), SnapshotType.BLOCKING)


def test_type_defaults_to_incremental_in_any_letter_case() -> None:
    assert execute({"data-collections": ["a.b"]}) == ExecuteSnapshot("ad-hoc-1", patterns("a.b"))
    assert execute({"data-collections": ["a.b"], "type": "Incremental"}) == ExecuteSnapshot("ad-hoc-1", patterns("a.b"))


def test_an_empty_data_collections_array_is_valid_and_says_why_it_does_nothing() -> None:
    signal = execute({"data-collections": []})
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.data_collections == ()
    assert signal.noop_reason is not None
    assert "'data-collections' is empty" in signal.noop_reason
    assert signal.select(["a.b"]).namespaces == ()


def test_ids_of_any_bson_type() -> None:
    oid = ObjectId()
    assert execute({"data-collections": []}, oid).id == str(oid)
    assert execute({"data-collections": []}, 42).id == "42"
    assert execute({"data-collections": []}, {"n": 1}).id == '{"n": 1}'


def test_other_top_level_fields_are_ignored() -> None:
    signal = parse_signal({"_id": "l", "type": "log", "data": {"message": "hi"}, "sentBy": "ops", "at": 1})
    assert signal == LogSignal("l", "hi")


def test_stop_pause_resume_and_log() -> None:
    assert parse_signal({"_id": "s", "type": "stop-snapshot", "data": {"type": "incremental"}}) == StopSnapshot("s")
    stop = parse_signal({"_id": "s", "type": "stop-snapshot", "data": {"data-collections": ["a\\.b"]}})
    assert stop == StopSnapshot("s", patterns("a\\.b"))
    assert isinstance(stop, StopSnapshot)
    assert not stop.stops_all
    assert StopSnapshot("s").stops_all
    assert parse_signal({"_id": "s", "type": "stop-snapshot", "data": {"data-collections": []}}) == StopSnapshot("s")
    assert parse_signal({"_id": "s", "type": "stop-snapshot"}) == StopSnapshot("s")
    assert parse_signal({"_id": "p", "type": "pause-snapshot", "data": '{"type": "incremental"}'}) == PauseSnapshot("p")
    assert parse_signal({"_id": "p", "type": "pause-snapshot"}) == PauseSnapshot("p")
    assert parse_signal({"_id": "r", "type": "resume-snapshot", "data": ""}) == ResumeSnapshot("r")
    assert parse_signal({"_id": "r", "type": "resume-snapshot", "data": None}) == ResumeSnapshot("r")
    assert parse_signal({"_id": "l", "type": "log", "data": '{"message": "Signal at {}"}'}) == LogSignal(
        "l", "Signal at {}"
    )


def test_watermarks_as_debezium_writes_them() -> None:
    opening = parse_signal({"_id": "c0ffee-open", "type": "snapshot-window-open", "payload": ""})
    closing = parse_signal({"_id": "c0ffee-close", "type": "snapshot-window-close", "payload": ""})
    assert opening == WindowOpen("c0ffee-open") == WindowOpen.for_chunk("c0ffee")
    assert closing == WindowClose("c0ffee-close") == WindowClose.for_chunk("c0ffee")
    assert isinstance(opening, WindowOpen) and opening.chunk_id == "c0ffee"
    assert isinstance(closing, WindowClose) and closing.chunk_id == "c0ffee"


def test_insert_delete_watermarking_closes_with_the_delete_of_the_open_watermark() -> None:
    assert window_close_for_deleted("c0ffee-open") == WindowClose.for_chunk("c0ffee")
    assert window_close_for_deleted("c0ffee-close") is None
    assert window_close_for_deleted("ad-hoc-1") is None
    assert window_close_for_deleted(ObjectId()) is None


# --------------------------------------------------------------------------- data collections


def test_data_collections_are_regular_expressions_over_the_whole_namespace() -> None:
    signal = execute({"data-collections": ["inventory\\.order.*", "inventory.c"]})
    assert isinstance(signal, ExecuteSnapshot)
    known = ["inventory.orders", "inventory.orders_2024", "inventory.customers", "inventory.c", "archive.orders"]
    selection = signal.select(known)
    # full match: "inventory.c" does not select inventory.customers
    assert selection.namespaces == ("inventory.orders", "inventory.orders_2024", "inventory.c")
    assert selection.unmatched == ()


def test_selection_keeps_pattern_order_names_each_once_and_reports_patterns_matching_nothing() -> None:
    signal = execute({"data-collections": ["b\\..*", "a\\..*", ".*\\.x", "nothing\\.here"]})
    assert isinstance(signal, ExecuteSnapshot)
    selection = signal.select(["a.x", "a.y", "b.x", "b.y"])
    assert selection.namespaces == ("b.x", "b.y", "a.x", "a.y")
    assert selection.unmatched == ("nothing\\.here",)


def test_quoted_names_are_exact_even_with_dots_inside() -> None:
    signal = execute({"data-collections": ['"shop"."orders.2024"', 'shop."a""b"']})
    assert isinstance(signal, ExecuteSnapshot)
    assert [p.literal for p in signal.data_collections] == ["shop.orders.2024", 'shop.a"b']
    assert signal.select(["shop.orders.2024", "shop.ordersX2024", 'shop.a"b']).namespaces == (
        "shop.orders.2024",
        'shop.a"b',
    )


def test_quote_namespace_builds_the_exact_pattern() -> None:
    assert quote_namespace("shop.orders.2024") == '"shop"."orders.2024"'
    assert quote_namespace('shop.a"b') == '"shop"."a""b"'
    assert DataCollectionPattern.exact("shop.orders.2024").matches("shop.orders.2024")
    assert not DataCollectionPattern.exact("shop.orders.2024").matches("shop.ordersX2024")
    with pytest.raises(ValueError, match="not <database>.<collection>"):
        quote_namespace("shop")


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10)


@given(names.filter(lambda s: "." not in s), names)
def test_any_namespace_quoted_matches_exactly_itself(db: str, collection: str) -> None:
    namespace = f"{db}.{collection}"
    pattern = DataCollectionPattern.exact(namespace)
    assert pattern.literal == namespace
    assert pattern.matches(namespace)
    assert not pattern.matches(namespace + "x")


def test_additional_conditions_choose_a_filter_per_collection() -> None:
    signal = execute(
        {
            "data-collections": ["shop\\..*"],
            "additional-conditions": [
                {"data-collection": "shop.orders", "filter": {"status": "open"}},
                {"data-collection": "shop\\.cust.*", "filter": '{"tier": {"$gte": 2}}'},
                {"data-collection": "other.x", "filter": "{}"},
            ],
        }
    )
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.filter_for("shop.orders") == {"status": "open"}
    assert signal.filter_for("shop.customers") == {"tier": {"$gte": 2}}
    assert signal.filter_for("shop.items") is None
    selection = signal.select(["shop.orders", "shop.customers", "shop.items", "other.x"])
    assert selection.namespaces == ("shop.orders", "shop.customers", "shop.items")
    assert selection.unused_conditions == ("other.x",)


def test_filters_take_extended_json_and_the_mongo_shell_syntax() -> None:
    oid = ObjectId()
    signal = execute(
        {
            "data-collections": ["a.b", "a.c", "a.d"],
            "additional-conditions": [
                {"data-collection": "a.b", "filter": json.dumps({"owner": {"$oid": str(oid)}, "n": 5})},
                {
                    "data-collection": "a.c",
                    "filter": "{ color: 'blue', size: { $in: ['S', \"M\"] }, 'it\\'s': 1, n: 1e3 }",
                },
                {"data-collection": "a.d", "filter": '{"when": {"$gte": {"$date": "2024-01-01T00:00:00Z"}}}'},
            ],
        }
    )
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.filter_for("a.b") == {"owner": oid, "n": 5}
    condition = signal.filter_for("a.c")
    assert condition is not None
    assert condition["color"] == "blue"
    assert condition["size"] == {"$in": ["S", "M"]}
    assert condition["it's"] == 1
    assert condition["n"] == 1000.0
    assert signal.filter_for("a.d") == {"when": {"$gte": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}}


def test_top_level_logical_operators_are_accepted() -> None:
    signal = execute(
        {
            "data-collections": ["a.b"],
            "additional-conditions": [{"data-collection": "a.b", "filter": {"$or": [{"x": 1}, {"y": 2}]}}],
        }
    )
    assert isinstance(signal, ExecuteSnapshot)
    assert signal.filter_for("a.b") == {"$or": [{"x": 1}, {"y": 2}]}


# --------------------------------------------------------------------------- malformed signals

MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("no _id", {"type": "log", "data": {"message": "x"}}, "signal '<no _id>' is invalid: the document has no '_id'"),
    ("no type", {"_id": "s1"}, "it has no 'type' (one of 'execute-snapshot', 'stop-snapshot'"),
    ("type not a string", {"_id": "s1", "type": 7}, "'type' must be a string, got a number (7)"),
    (
        "unknown type",
        {"_id": "s1", "type": "execute-snaphot"},
        "unknown signal type 'execute-snaphot' (did you mean 'execute-snapshot'?); known types:",
    ),
    ("data not JSON", {"_id": "s1", "type": "log", "data": "{message: "}, "'data' is not valid JSON: Expecting"),
    ("data JSON array", {"_id": "s1", "type": "log", "data": "[1, 2]"}, "'data' must be a JSON object, got an array"),
    ("data a number", {"_id": "s1", "type": "log", "data": 3}, "'data' must be a sub-document or JSON object text"),
    (
        "missing data-collections",
        {"_id": "s1", "type": "execute-snapshot", "data": {"type": "incremental"}},
        "execute-snapshot needs 'data-collections': an array of regular expressions",
    ),
    (
        "execute without data",
        {"_id": "s1", "type": "execute-snapshot"},
        "execute-snapshot needs 'data-collections'",
    ),
    (
        "data-collections a string",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": "a.b"}},
        "'data-collections' must be an array of strings (regular expressions), got a string ('a.b')",
    ),
    (
        "data-collections item not a string",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ["a.b", 5]}},
        "'data-collections[1]' must be a string, got a number (5)",
    ),
    (
        "empty data collection",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [""]}},
        "'data-collections[0]' '' is empty",
    ),
    (
        "bad regex",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ["shop.(orders"]}},
        "'data-collections[0]' 'shop.(orders' is not a valid regular expression: missing ), unterminated subpattern",
    ),
    (
        "unclosed quote",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ['"shop"."orders']}},
        "'data-collections[0]' '\"shop\".\"orders' has an unclosed double quote",
    ),
    (
        "quoted name with three parts",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ['"a"."b"."c"']}},
        "names 3 parts; a quoted name is exactly <database>.<collection>",
    ),
    (
        "quote inside an unquoted part",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ['sh"op.orders']}},
        "has a double quote inside an unquoted part",
    ),
    (
        "text after a closing quote",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ['"shop"x.orders']}},
        "has text after a closing double quote",
    ),
    (
        "empty quoted part",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": ['"shop".""']}},
        "has an empty name part",
    ),
    (
        "snapshot type unknown",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [], "type": "full"}},
        "snapshot 'type' must be 'incremental' or 'blocking', got 'full'",
    ),
    (
        "snapshot type not a string",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [], "type": True}},
        "'type' must be a string, got a boolean",
    ),
    (
        "misspelt field",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collection": ["a.b"]}},
        "execute-snapshot does not take 'data.data-collection' (did you mean 'data-collections'?); it accepts "
        "'data-collections', 'type', 'additional-conditions'",
    ),
    (
        "deprecated additional-condition",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [], "additional-condition": "x=1"}},
        "'additional-condition' (one SQL condition for every table, deprecated in Debezium) is not supported",
    ),
    (
        "surrogate key",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [], "surrogate-key": "sku"}},
        "'surrogate-key' is not supported: MongoDB collections are always read in _id order",
    ),
    (
        "additional-conditions not an array",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [], "additional-conditions": {}}},
        '\'additional-conditions\' must be an array of {"data-collection": …, "filter": …} objects, got an object',
    ),
    (
        "condition not an object",
        {"_id": "s1", "type": "execute-snapshot", "data": {"data-collections": [], "additional-conditions": ["x"]}},
        "'additional-conditions[0]' must be an object",
    ),
    (
        "condition without data-collection",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"filter": {}}]},
        },
        "'additional-conditions[0]' has no 'data-collection' (the collection it filters)",
    ),
    (
        "condition without filter",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collection": "a.b"}]},
        },
        "'additional-conditions[0]' has no 'filter' (a MongoDB query document)",
    ),
    (
        "condition with a misspelt field",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collections": "a.b", "filter": {}}]},
        },
        "'additional-conditions[0]' has an unknown field 'data-collections' (did you mean 'data-collection'?)",
    ),
    (
        "condition with a bad pattern",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collection": "a[", "filter": {}}]},
        },
        "'additional-conditions[0].data-collection' 'a[' is not a valid regular expression",
    ),
    (
        "two filters for one collection",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {
                "data-collections": [],
                "additional-conditions": [
                    {"data-collection": "a.b", "filter": {"x": 1}},
                    {"data-collection": "a.b", "filter": {"y": 1}},
                ],
            },
        },
        "'additional-conditions[1]' repeats the data collection 'a.b': give one filter per collection",
    ),
    (
        "SQL filter",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collection": "a.b", "filter": "c='b'"}]},
        },
        "'additional-conditions[0].filter' \"c='b'\" is not a MongoDB query document: write it as JSON such as "
        '{"color": "blue"} (SQL conditions',
    ),
    (
        "filter not JSON",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collection": "a.b", "filter": "{a: }"}]},
        },
        "'additional-conditions[0].filter' is not valid JSON (Expecting",
    ),
    (
        "empty filter text",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collection": "a.b", "filter": " "}]},
        },
        "'additional-conditions[0].filter' is empty: give a MongoDB query document",
    ),
    (
        "filter a number",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {"data-collections": [], "additional-conditions": [{"data-collection": "a.b", "filter": 3}]},
        },
        "'additional-conditions[0].filter' must be a MongoDB query document (an object or JSON text), got a number",
    ),
    (
        "filter with a field operator at the top",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {
                "data-collections": [],
                "additional-conditions": [{"data-collection": "a.b", "filter": {"$gt": 5}}],
            },
        },
        "'additional-conditions[0].filter' uses '$gt' at the top level, where MongoDB accepts only fields and",
    ),
    (
        "bad extended JSON in a filter",
        {
            "_id": "s1",
            "type": "execute-snapshot",
            "data": {
                "data-collections": [],
                "additional-conditions": [{"data-collection": "a.b", "filter": '{"o": {"$oid": "nothex"}}'}],
            },
        },
        "'additional-conditions[0].filter' is not valid JSON (",
    ),
    (
        "stop a blocking snapshot",
        {"_id": "s1", "type": "stop-snapshot", "data": {"type": "blocking"}},
        "only an incremental snapshot can be told to stop: 'type' must be 'incremental', got 'blocking'",
    ),
    (
        "stop with a bad pattern",
        {"_id": "s1", "type": "stop-snapshot", "data": {"data-collections": ["*"]}},
        "'data-collections[0]' '*' is not a valid regular expression: nothing to repeat",
    ),
    (
        "stop with an unknown field",
        {"_id": "s1", "type": "stop-snapshot", "data": {"collections": ["a.b"]}},
        "stop-snapshot does not take 'data.collections'",
    ),
    (
        "pause a blocking snapshot",
        {"_id": "s1", "type": "pause-snapshot", "data": {"type": "blocking"}},
        "only an incremental snapshot can be told to pause",
    ),
    (
        "resume with a type that is not a string",
        {"_id": "s1", "type": "resume-snapshot", "data": {"type": 1}},
        "'type' must be a string, got a number (1)",
    ),
    (
        "resume with an unknown field",
        {"_id": "s1", "type": "resume-snapshot", "data": {"now": True}},
        "resume-snapshot does not take 'data.now'; it accepts 'type'",
    ),
    ("log without message", {"_id": "s1", "type": "log", "data": {}}, "a log signal needs 'data.message'"),
    ("log message not text", {"_id": "s1", "type": "log", "data": {"message": 1}}, "'message' must be a string"),
    (
        "log with a misspelt field",
        {"_id": "s1", "type": "log", "data": {"mesage": "x"}},
        "log does not take 'data.mesage' (did you mean 'message'?)",
    ),
]


@pytest.mark.parametrize(("document", "expected"), [(d, e) for _, d, e in MALFORMED], ids=[n for n, _, _ in MALFORMED])
def test_malformed_signals_name_the_signal_and_the_problem(document: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidSignalError) as caught:
        parse_signal(document)
    error = caught.value
    signal_id = str(document.get("_id", "<no _id>"))
    assert error.signal_id == signal_id
    assert str(error).startswith(f"signal {signal_id!r} is invalid: ")
    assert expected in str(error), str(error)
    assert expected in error.reason or expected.startswith("signal ")


def test_invalid_signal_error_is_a_usage_error_with_a_hint() -> None:
    with pytest.raises(InvalidSignalError) as caught:
        parse_signal({"_id": "s1", "type": "nope"})
    assert isinstance(caught.value, MongocdcError)
    assert caught.value.exit_code is ExitCode.USAGE
    assert caught.value.hint is not None and "mongocdc signal send --help" in caught.value.hint


# --------------------------------------------------------------------------- Kafka


def test_kafka_signal_as_in_debeziums_documentation() -> None:
    value = '{"type":"execute-snapshot","data": {"data-collections": ["shop.orders"], "type": "INCREMENTAL"}}'
    signal = parse_kafka_signal("shop", value, topic_prefix="shop", offset=17)
    assert signal == ExecuteSnapshot("shop@17", patterns("shop.orders"))


def test_kafka_signal_takes_its_id_from_the_value_and_reads_bytes() -> None:
    value = b'{"id": "stop-1", "type": "stop-snapshot", "data": {"type": "incremental"}}'
    assert parse_kafka_signal(b"shop", value, topic_prefix="shop", offset=3) == StopSnapshot("stop-1")
    value = b'{"id": null, "type": "pause-snapshot"}'
    assert parse_kafka_signal(b"shop", value, topic_prefix="shop", offset=3) == PauseSnapshot("shop@3")


def test_kafka_records_for_other_connectors_or_without_a_value_are_skipped() -> None:
    value = '{"type": "log", "data": {"message": "x"}}'
    assert parse_kafka_signal("other", value, topic_prefix="shop", offset=0) is None
    assert parse_kafka_signal(None, value, topic_prefix="shop", offset=0) is None
    assert parse_kafka_signal(b"\xff", value, topic_prefix="shop", offset=0) is None
    assert parse_kafka_signal("shop", None, topic_prefix="shop", offset=0) is None
    assert parse_kafka_signal("shop", b"", topic_prefix="shop", offset=0) is None


@pytest.mark.parametrize(
    ("value", "signal_id", "expected"),
    [
        (b"not json", "shop@9", "the record value is not JSON: Expecting value"),
        (b"\xff\xfe", "shop@9", "the record value is not JSON"),
        (b"[1]", "shop@9", 'the record value must be a JSON object {"type": …, "data": {…}}, got an array'),
        (b'{"id": 5, "type": "log"}', "shop@9", "'id' must be a string, got a number (5)"),
        (b'{"id": "k1"}', "k1", "it has no 'type'"),
        (b'{"id": "k1", "type": "log", "data": {"message": 2}}', "k1", "'message' must be a string"),
        (
            b'{"id": "k1", "type": "snapshot-window-open"}',
            "k1",
            "'snapshot-window-open' is a watermark the connector writes to its signal collection; it is never sent "
            "through Kafka",
        ),
    ],
)
def test_malformed_kafka_signals(value: bytes, signal_id: str, expected: str) -> None:
    with pytest.raises(InvalidSignalError) as caught:
        parse_kafka_signal("shop", value, topic_prefix="shop", offset=9)
    assert caught.value.signal_id == signal_id
    assert expected in str(caught.value)


def test_watermarks_are_not_written_to_kafka() -> None:
    with pytest.raises(ValueError, match="written to the signal collection only"):
        serialize_kafka_signal(WindowOpen.for_chunk("c"), topic_prefix="shop")


# --------------------------------------------------------------------------- writing signals back


def test_serialized_documents_follow_debeziums_shape() -> None:
    signal = ExecuteSnapshot(
        "ad-hoc-1",
        patterns("shop\\.orders"),
        additional_conditions=(AdditionalCondition(DataCollectionPattern.parse("shop\\.orders"), {"n": Int64(5)}),),
    )
    assert serialize_signal(signal) == {
        "_id": "ad-hoc-1",
        "type": "execute-snapshot",
        "data": {
            "data-collections": ["shop\\.orders"],
            "type": "incremental",
            "additional-conditions": [{"data-collection": "shop\\.orders", "filter": {"n": 5}}],
        },
    }
    assert serialize_signal(StopSnapshot("s")) == {"_id": "s", "type": "stop-snapshot", "data": {"type": "incremental"}}
    assert serialize_signal(WindowOpen.for_chunk("c1")) == {
        "_id": "c1-open",
        "type": "snapshot-window-open",
        "payload": "",
    }
    record = serialize_kafka_signal(LogSignal("l1", "hello"), topic_prefix="shop")
    assert record == KafkaSignalRecord("shop", '{"id": "l1", "type": "log", "data": {"message": "hello"}}')


regexes = st.sampled_from(["shop\\.orders", "shop\\..*", ".*", "inventory\\.c(ustomers|arts)", "a.b"])
quoted = st.builds(
    lambda db, coll: quote_namespace(f"{db}.{coll}"),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="."), min_size=1, max_size=6),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6),
)
pattern_texts = st.one_of(regexes, quoted).map(DataCollectionPattern.parse)
filter_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(9999, 1, 1), timezones=st.just(dt.UTC)).map(
        lambda d: d.replace(microsecond=(d.microsecond // 1000) * 1000)
    ),
)
field_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="$.\x00"), min_size=1, max_size=6
)
filters = st.dictionaries(
    field_names,
    st.one_of(filter_values, st.dictionaries(st.sampled_from(["$gt", "$lte", "$ne"]), filter_values, max_size=2)),
    max_size=3,
)
ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def executes(draw: st.DrawFn) -> ExecuteSnapshot:
    conditions = draw(st.lists(st.tuples(pattern_texts, filters), max_size=3, unique_by=lambda c: c[0].text))
    return ExecuteSnapshot(
        draw(ids),
        tuple(draw(st.lists(pattern_texts, max_size=4))),
        draw(st.sampled_from(SnapshotType)),
        tuple(AdditionalCondition(p, f) for p, f in conditions),
    )


signals = st.one_of(
    executes(),
    st.builds(StopSnapshot, ids, st.lists(pattern_texts, max_size=3).map(tuple)),
    st.builds(PauseSnapshot, ids),
    st.builds(ResumeSnapshot, ids),
    st.builds(LogSignal, ids, st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)),
)


@given(st.one_of(signals, ids.map(WindowOpen.for_chunk), ids.map(WindowClose.for_chunk)))
def test_signal_collection_documents_round_trip(signal: Signal) -> None:
    document = serialize_signal(signal)
    stored = bson.decode(bson.encode(document), codec_options=bson.CodecOptions(tz_aware=True))
    assert parse_signal(stored) == signal


@given(signals)
def test_signal_collection_documents_with_data_as_json_text_round_trip(signal: Signal) -> None:
    from bson import json_util

    document = serialize_signal(signal)
    document["data"] = json_util.dumps(document["data"], json_options=json_util.RELAXED_JSON_OPTIONS)
    assert parse_signal(document) == signal


@given(signals, st.integers(min_value=0, max_value=2**40))
def test_kafka_records_round_trip(signal: Signal, offset: int) -> None:
    record = serialize_kafka_signal(signal, topic_prefix="shop")
    assert json.loads(record.value)["type"] == signal.type.value
    assert parse_kafka_signal(record.key.encode(), record.value.encode(), topic_prefix="shop", offset=offset) == signal


def test_patterns_compare_by_their_text() -> None:
    assert DataCollectionPattern.parse("a.b") == DataCollectionPattern.parse("a.b")
    assert DataCollectionPattern.parse("a.b") != DataCollectionPattern.parse('"a"."b"')
    assert hash(ExecuteSnapshot("x", patterns("a.b"))) == hash(ExecuteSnapshot("x", patterns("a.b")))
    assert isinstance(DataCollectionPattern.parse("a.b").regex, re.Pattern)
