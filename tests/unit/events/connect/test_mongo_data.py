"""The pieces of ``mongocdc/events/connect/mongo_data.py`` directly.

What the parser and the converter make of documents is compared with Debezium's own classes through the two
transforms built on them (``test_unwrap.py``: ExtractNewDocumentState, ``test_debezium_transforms.py``:
MongoEventRouter); these tests pin the values the parser hands over and the text the writer writes.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Int64, Regex

from mongocdc.events.codec import document_to_json
from mongocdc.events.connect.data import DataError
from mongocdc.events.connect.mongo_data import Bson, BsonType, JavaLong, canonical_json, parse_document


def test_the_parser_reads_numbers_as_the_java_driver_does() -> None:
    document = parse_document('{"a": 2147483647, "b": 2147483648, "c": 1.0, "d": 1e2, "e": NaN, "f": -0}')
    assert [(v.type, v.value) for v in document.values()][:4] == [
        ("INT32", 2147483647),
        ("INT64", 2147483648),
        ("DOUBLE", 1.0),
        ("DOUBLE", 100.0),
    ]
    assert type(document["b"].value) is JavaLong and type(document["a"].value) is int
    assert document["e"].type is BsonType.DOUBLE and document["f"].type is BsonType.INT32
    with pytest.raises(DataError):
        parse_document('{"a": 9223372036854775808}')
    with pytest.raises(DataError):
        parse_document('{"$oid": "65f0a1b2c3d4e5f6a7b80001"}')


def test_the_parser_reads_debezium_json() -> None:
    when = dt.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=dt.UTC)
    document = parse_document(document_to_json({"a": 1, "b": Int64(2), "c": when, "r": Regex("x", "mi")}))
    assert document["a"] == Bson(BsonType.INT32, 1)
    assert document["b"].type is BsonType.INT64 and document["b"].value == 2
    assert document["c"].type is BsonType.DATE_TIME and document["c"].value == 1709210096789
    assert document["r"].value == ("x", "im")


def test_canonical_json_is_indented_extended_json() -> None:
    document = parse_document(
        '{"n": 1, "d": 2.0, "a": [], "e": {}, "s": "\\u2028", "t": {"$timestamp": {"t": 4294967295, "i": 1}}}'
    )
    assert canonical_json(document) == (
        '{\n  "n": {\n    "$numberInt": "1"\n  },\n  "d": {\n    "$numberDouble": "2.0"\n  },\n'
        '  "a": [],\n  "e": {},\n  "s": "\\u2028",\n  "t": {\n    "$timestamp": {\n      "t": 4294967295,\n'
        '      "i": 1\n    }\n  }\n}'
    )
