"""mongocdc's converters (``mongocdc/events/connect/converters.py``) against Kafka Connect 4.3.1's and Debezium 3.6.1's.

Every case (a key/value converter configuration and records: the 126 records the real Debezium MongoDB
connector wrote, or records built from them or by hand) runs through the real Java classes and through
mongocdc in one ``compare`` call (one JVM); each test asserts its case has no difference (byte-identical keys
and values, a configuration Connect refuses refused, a record Connect fails on failing) and that the case
does what it is there for (``Case.expect``: which outcomes the converter under test has), so a converter
that wrote nothing could not pass.

CloudEventsConverter's ``id`` is built from the source position (``name:<name>;ts:<ts_ms>;ord:<ord>``), not
at random, so every CloudEvent is compared byte for byte. Nothing here is random except StringConverter's
``[B@<identity hash>`` for a byte array, which no case writes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mongocdc.events.connect import converters
from mongocdc.events.connect.chain import ChainConfigError, build_converter
from tests.oracle.recorded import CaseResults, recorded_inputs, run_cases

CE = "io.debezium.converters.CloudEventsConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
NUMBER = "org.apache.kafka.connect.converters.{}Converter"

REFUSED = "refused"


@dataclass(frozen=True)
class Case:
    config: dict[str, str]
    records: list[dict[str, Any]]
    expect: frozenset[str] | str
    """``refused``, or the outcomes the side under test has over the records: ``bytes``, ``null``, ``error``."""
    side: str = "value"


# --- records ------------------------------------------------------------------------------------------------


def _recorded(predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(r for r in recorded_inputs() if predicate(r))


def _payload(record: dict[str, Any]) -> Any:
    return json.loads(record["value"])["payload"] if record["value"] else None


def _is_event(op: str, in_transaction: bool | None = None) -> Callable[[dict[str, Any]], bool]:
    def test(record: dict[str, Any]) -> bool:
        payload = _payload(record)
        if not isinstance(payload, dict) or payload.get("op") != op:
            return False
        return in_transaction is None or (payload.get("transaction") is not None) == in_transaction

    return test


READ = _recorded(_is_event("r"))
UPDATE_IN_TRANSACTION = _recorded(_is_event("u", True))
DELETE = _recorded(_is_event("d"))
TOMBSTONE = _recorded(lambda r: r["value"] is None)
HEARTBEAT = _recorded(lambda r: r["topic"].startswith("__debezium-heartbeat"))
TRANSACTION_END = _recorded(lambda r: r["topic"] == "dbz.transaction")
EVENTS = [READ, UPDATE_IN_TRANSACTION, DELETE, TOMBSTONE]


def _envelope(schema: dict[str, Any] | None, payload: Any) -> str:
    """JsonConverter's text of a value (``schemas.enable``); a struct field's ``field`` key is dropped."""
    if schema is not None:
        schema = {k: v for k, v in schema.items() if k != "field"}
    return json.dumps({"schema": schema, "payload": payload})


def _string(text: str | None) -> str:
    return _envelope({"type": "string", "optional": text is None}, text)


def _field_schemas(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["field"]: f for f in json.loads(record["value"])["schema"]["fields"]}


def _with_headers(record: dict[str, Any], **headers: str | None) -> dict[str, Any]:
    """The record with more headers (texts SimpleHeaderConverter writes as they are)."""
    out = dict(record)
    out["headers"] = [*record["headers"], *([name, text] for name, text in headers.items())]
    return out


def _metadata_headers(record: dict[str, Any], **more: str | None) -> dict[str, Any]:
    """The record with its envelope's ``source``, ``op`` and ``transaction`` in headers, as JSON envelopes (what
    ``metadata.source=header`` reads: a HeaderFrom transform with a JSON header converter writes these)."""
    schemas = _field_schemas(record)
    payload = _payload(record)
    headers: dict[str, str | None] = {
        "source": _envelope(schemas["source"], payload["source"]),
        "op": _string(payload["op"]),
    }
    if payload.get("transaction") is not None:
        headers["transaction"] = _envelope(schemas["transaction"], payload["transaction"])
    return _with_headers(record, **headers, **more)


def _edited(record: dict[str, Any], edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> dict[str, Any]:
    """The record with its value's JSON (schema, payload) changed by ``edit``."""
    value = copy.deepcopy(json.loads(record["value"]))
    edit(value["schema"], value["payload"])
    return {**record, "value": json.dumps(value)}


def _source_field(name: str, schema: dict[str, Any], value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(schema_: dict[str, Any], payload: dict[str, Any]) -> None:
        source = next(f for f in schema_["fields"] if f["field"] == "source")
        source["fields"].append({**schema, "field": name})
        payload["source"][name] = value

    return edit


def _source_value(name: str, value: Any, schema: dict[str, Any] | None = None) -> Callable[..., None]:
    def edit(schema_: dict[str, Any], payload: dict[str, Any]) -> None:
        if schema is not None:
            source = next(f for f in schema_["fields"] if f["field"] == "source")
            for f in source["fields"]:
                if f["field"] == name:
                    f.clear()
                    f.update({**schema, "field": name})
        payload["source"][name] = value

    return edit


def _after(text: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(schema: dict[str, Any], payload: dict[str, Any]) -> None:
        payload["after"] = text

    return edit


def _drop_field(name: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(schema: dict[str, Any], payload: dict[str, Any]) -> None:
        schema["fields"] = [f for f in schema["fields"] if f["field"] != name]
        payload.pop(name)

    return edit


def _swap_before_after(schema: dict[str, Any], payload: dict[str, Any]) -> None:
    """``after`` first: Debezium reads the data fields by position, so ``before`` gets ``after``'s value."""
    fields = schema["fields"]
    fields[0], fields[1] = fields[1], fields[0]


def _transaction_int32(schema: dict[str, Any], payload: dict[str, Any]) -> None:
    block = next(f for f in schema["fields"] if f["field"] == "transaction")
    block["fields"][1]["type"] = "int32"


def _transaction_short(schema: dict[str, Any], payload: dict[str, Any]) -> None:
    block = next(f for f in schema["fields"] if f["field"] == "transaction")
    block["fields"] = block["fields"][:2]
    payload["transaction"].pop("data_collection_order")


def _nameless(schema: dict[str, Any], payload: dict[str, Any]) -> None:
    schema.pop("name")


def _primitive(schema: dict[str, Any] | None, payload: Any, topic: str = "dbz.inventory.values") -> dict[str, Any]:
    """A record whose key and value are both ``payload`` with ``schema``."""
    text = _envelope(schema, payload)
    return {"topic": topic, "partition": None, "key": text, "value": text, "timestamp": None, "headers": []}


def _type(kind: str, optional: bool = False, **more: Any) -> dict[str, Any]:
    return {"type": kind, "optional": optional, **more}


TIMESTAMP = _type("int64", name="org.apache.kafka.connect.data.Timestamp", version=1)
DATE = _type("int32", name="org.apache.kafka.connect.data.Date", version=1)
TIME = _type("int32", name="org.apache.kafka.connect.data.Time", version=1)
DECIMAL = _type("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, parameters={"scale": "2"})
INNER = _type(
    "struct",
    fields=[{**_type("int32", True), "field": "n"}, {**_type("string", True), "field": "s"}],
    name="inner",
)

TEXTS = [
    _primitive(_type("string"), "plain"),
    _primitive(_type("string"), "h\u00e9llo \u2713 \U0001f600 \u0000\n"),
    _primitive(_type("string"), "lone \ud800 surrogate"),
    _primitive(_type("string", True), None),
]
SCALARS = [
    _primitive(_type("int8"), -8),
    _primitive(_type("int16"), -1600),
    _primitive(_type("int32"), 2_000_000_000),
    _primitive(_type("int64"), -9_000_000_000_000_000_000),
    _primitive(_type("float"), 1.1),
    _primitive(_type("float"), 3.5e38),
    _primitive(_type("double"), 1e7),
    _primitive(_type("double"), -0.1),
    _primitive(_type("boolean"), True),
    _primitive(_type("boolean"), False),
    _primitive(None, 42),
    _primitive(None, 2.5),
    _primitive(None, True),
    _primitive(_type("int32", True), None),
    _primitive(_type("boolean", True), None),
]
LOGICAL = [
    _primitive(TIMESTAMP, 1_700_000_000_123),
    _primitive(TIMESTAMP, -12_219_292_800_001),
    _primitive(DATE, 19_000),
    _primitive(TIME, 3_723_004),
    _primitive(DECIMAL, "MDk="),
    _primitive(DECIMAL, "AA=="),
    _primitive(DECIMAL, "/w=="),
]
COMPOSITE = [
    _primitive(_type("array", items=_type("string")), ["a", "b"]),
    _primitive(_type("array", items=_type("float")), [0.1, 2.0]),
    _primitive(_type("map", keys=_type("string"), values=_type("int32")), {"zeta": 1, "alpha": 2, "b": 3, "Aa": 4}),
    _primitive(INNER, {"n": 7, "s": None}),
    _primitive(INNER, {"n": None, "s": "x"}),
    _primitive(_type("array", items=INNER), [{"n": 1, "s": "one"}, {"n": 2, "s": None}]),
    # Java's HashMap order, whatever the keys' type
    _primitive(
        _type("map", keys=_type("int32"), values=_type("string")), [[300, "c"], [1, "a"], [-17, "q"], [16, "p"]]
    ),
    _primitive(
        _type("map", keys=_type("int64"), values=_type("boolean")), [[2**40, True], [-(2**40), False], [5, True]]
    ),
    _primitive(_type("map", keys=_type("boolean"), values=_type("int8")), [[True, 1], [False, 0]]),
    _primitive(_type("map", keys=_type("double"), values=_type("int16")), [[2.5, 1], [-0.0, 2], [1e300, 3]]),
    _primitive(_type("map", keys=_type("float"), values=_type("int16")), [[2.5, 1], [0.1, 2]]),
    _primitive(_type("map", keys=_type("int16"), values=_type("string")), [[-3, "m"], [40, "f"]]),
]
BYTE_VALUES = [
    _primitive(_type("bytes"), "AQL+"),
    _primitive(_type("bytes"), ""),
    _primitive(_type("bytes", True), None),
    _primitive(None, None),
]


def _julian_dates() -> list[dict[str, Any]]:
    """Change events whose ``source.ts_ms`` is before the Gregorian calendar, in 1 BC, and past year 9999."""
    stamps = [-12_219_292_800_001, -62_135_596_800_000, -62_198_755_200_000, 253_402_300_800_000, 0, -1]
    return [_edited(READ, _source_value("ts_ms", stamp)) for stamp in stamps]


# --- cases ----------------------------------------------------------------------------------------------------

EVENT = frozenset({"bytes", "null"})
NULL = frozenset({"null"})
BYTES_ONLY = frozenset({"bytes"})
FAILS = frozenset({"error", "null"})
FAILS_ONLY = frozenset({"error"})
ALL = frozenset({"bytes", "null", "error"})


def _ce(**options: str) -> dict[str, str]:
    return {"value.converter": CE, **{f"value.converter.{k.replace('_', '.')}": v for k, v in options.items()}}


def _cases() -> Iterator[tuple[str, Case]]:
    recorded = recorded_inputs()
    with_headers = [_metadata_headers(r) for r in (READ, UPDATE_IN_TRANSACTION, DELETE)]
    # CloudEventsConverter over what Debezium wrote
    yield "ce-default", Case({"key.converter": CE, "value.converter": CE}, recorded, EVENT)
    yield "ce-keys", Case({"key.converter": CE, "value.converter": CE}, recorded, NULL, side="key")
    yield "ce-data-without-schema", Case(_ce(json_schemas_enable="false"), recorded, EVENT)
    yield "ce-no-extension-attributes", Case(_ce(extension_attributes_enable="false"), recorded, EVENT)
    yield (
        "ce-decimal-numeric",
        Case(_ce(json_decimal_format="numeric", json_replace_null_with_default="false"), EVENTS, EVENT),
    )
    yield (
        "ce-json-cache-content",
        Case(_ce(json_schemas_cache_size="5", json_schema_content=json.dumps(_type("string"))), EVENTS, EVENT),
    )
    yield "ce-json-cache-zero", Case(_ce(json_schemas_cache_size="-1"), EVENTS, EVENT)
    yield (
        "ce-prefixed-options-ignored",
        Case({"value.converter": CE, "value.converter.cloudevents.serializer.type": "avro"}, EVENTS, EVENT),
    )
    yield "ce-serializer-uppercase", Case(_ce(serializer_type="JSON", data_serializer_type=" Json "), EVENTS, EVENT)
    yield "ce-adjustment-none", Case(_ce(schema_name_adjustment_mode="none"), EVENTS, EVENT)
    yield "ce-adjustment-unicode", Case(_ce(schema_name_adjustment_mode="AVRO_UNICODE"), EVENTS, EVENT)
    yield "ce-schema-name", Case(_ce(schema_cloudevents_name="my.CloudEvents"), EVENTS, EVENT)
    yield "ce-schema-name-adjusted", Case(_ce(schema_cloudevents_name="cdc-test-1"), EVENTS, EVENT)
    yield "ce-schema-name-adjusted-again", Case(_ce(schema_cloudevents_name="cdc+test+1"), EVENTS, EVENT)
    yield (
        "ce-schema-name-unicode",
        Case(_ce(schema_cloudevents_name="cdc_x", schema_name_adjustment_mode="avro_unicode"), EVENTS, EVENT),
    )
    yield "ce-tracing-without-header", Case(_ce(opentelemetry_tracing_attributes_enable="true"), EVENTS, FAILS)
    yield (
        "ce-tracing",
        Case(
            _ce(opentelemetry_tracing_attributes_enable="true"),
            [
                _with_headers(r, traceparent=_string("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
                for r in EVENTS
            ],
            EVENT,
        ),
    )
    yield (
        "ce-tracing-generated",
        Case(
            _ce(opentelemetry_tracing_attributes_enable="true", metadata_source="value,traceparent:generate"),
            EVENTS,
            FAILS,
        ),
    )
    yield (
        "ce-tracing-header-ignored",
        Case(_ce(metadata_source="value,id:generate,type:generate,traceparent:header"), EVENTS, EVENT),
    )
    # metadata.source
    yield "ce-id-from-value", Case(_ce(metadata_source="value"), EVENTS, FAILS)
    yield (
        "ce-id-type-header",
        Case(
            _ce(metadata_source="value, id:header ,type:HEADER"),
            [_with_headers(r, id=_string(f"id-{i}"), type=_string("my.Type")) for i, r in enumerate(EVENTS)],
            EVENT,
        ),
    )
    yield "ce-id-header-missing", Case(_ce(metadata_source="value,id:header"), EVENTS, FAILS)
    yield "ce-id-header-null", Case(_ce(metadata_source="value,id:header"), [_with_headers(READ, id=None)], FAILS_ONLY)
    yield (
        "ce-id-header-not-json",
        Case(_ce(metadata_source="value,id:header"), [_with_headers(READ, id="plain text")], FAILS_ONLY),
    )
    yield (
        "ce-id-header-not-string",
        Case(
            _ce(metadata_source="value,id:header"), [_with_headers(READ, id=_envelope(_type("int32"), 5))], FAILS_ONLY
        ),
    )
    yield (
        "ce-data-name-header",
        Case(
            _ce(
                metadata_source="value,id:generate,type:generate,dataSchemaName:header",
                schema_data_name_source_header_enable="true",
            ),
            [_with_headers(r, dataSchemaName=_string("my.Data")) for r in EVENTS],
            EVENT,
        ),
    )
    yield (
        "ce-data-name-header-disabled",
        Case(_ce(metadata_source="value,id:generate,type:generate,dataSchemaName:header"), EVENTS, EVENT),
    )
    yield "ce-header-without-headers", Case(_ce(metadata_source="header"), recorded, NULL)
    yield "ce-header", Case(_ce(metadata_source="header,id:generate,type:generate"), [*with_headers, TOMBSTONE], EVENT)
    yield (
        "ce-header-key",
        Case(
            {"key.converter": CE, "key.converter.metadata.source": "header,id:generate,type:generate"},
            with_headers,
            BYTES_ONLY,
            side="key",
        ),
    )
    yield (
        "ce-header-heartbeat",
        Case(
            _ce(metadata_source="header,id:generate,type:generate"),
            [
                _with_headers(
                    HEARTBEAT,
                    source=_envelope(_field_schemas(READ)["source"], _payload(READ)["source"]),
                    op=_string("r"),
                )
            ],
            BYTES_ONLY,
        ),
    )
    yield (
        "ce-header-all",
        Case(
            _ce(metadata_source="header", schema_data_name_source_header_enable="true"),
            [_metadata_headers(r, id=_string("x"), type=_string("t"), dataSchemaName=_string("d")) for r in EVENTS[:3]],
            BYTES_ONLY,
        ),
    )
    # HeaderFrom copies the struct, which SimpleHeaderConverter writes as {"version":…}: not a JSON envelope
    header_from = {
        "transforms": "hf",
        "transforms.hf.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
        "transforms.hf.fields": "source,op",
        "transforms.hf.headers": "source,op",
        "transforms.hf.operation": "copy",
    }
    yield (
        "ce-header-from-transform",
        Case({**_ce(metadata_source="header,id:generate,type:generate"), **header_from}, EVENTS[:3], FAILS_ONLY),
    )
    yield "ce-header-id-missing", Case(_ce(metadata_source="header"), with_headers, FAILS_ONLY)
    yield (
        "ce-header-source-null",
        Case(
            _ce(metadata_source="header,id:generate,type:generate"),
            [_with_headers(READ, source=None, op=_string("r"))],
            FAILS_ONLY,
        ),
    )
    yield (
        "ce-header-source-not-struct",
        Case(
            _ce(metadata_source="header,id:generate,type:generate"),
            [_with_headers(READ, source=_string("dbz"), op=_string("r"))],
            FAILS_ONLY,
        ),
    )
    # records Connect fails on, or writes unusually
    yield (
        "ce-edited-events",
        Case(
            _ce(),
            [
                _edited(READ, _swap_before_after),
                _edited(UPDATE_IN_TRANSACTION, _swap_before_after),
                _edited(READ, _source_field("flag", _type("boolean"), True)),
                _edited(READ, _source_field("small", _type("int16", True), None)),
                _edited(READ, _source_field("tiny", _type("int8", True), None)),
                _edited(READ, _source_value("ord", 5, _type("int32", True, default=3))),
                _edited(READ, _source_value("ord", None, _type("int32", True, default=3))),
                _edited(READ, _source_value("ord", 5, _type("int64"))),
                *_julian_dates(),
                # Jackson writes a character beyond the BMP, and a lone surrogate, as escaped UTF-16 units
                _edited(READ, _after('{"_id": 1, "s": "\U0001f600 \u00e9\u2028 \ud800 \x01"}')),
            ],
            BYTES_ONLY,
        ),
    )
    yield (
        "ce-failing-events",
        Case(
            _ce(),
            [
                _edited(READ, _nameless),
                _edited(READ, _drop_field("source")),
                _edited(READ, _drop_field("updateDescription")),
                _edited(READ, _source_value("connector", "postgresql")),
                _edited(READ, _source_field("small", _type("int16"), 5)),
                _edited(READ, _source_field("ratio", _type("double", True), None)),
                _edited(READ, _source_field("op", _type("string"), "x")),
                _edited(READ, _source_value("ts_ms", 1_700_000_000_000, TIMESTAMP)),
                _edited(READ, _drop_field("op")),
                _edited(UPDATE_IN_TRANSACTION, _transaction_int32),
                _edited(UPDATE_IN_TRANSACTION, _transaction_short),
            ],
            FAILS_ONLY,
        ),
    )
    yield "ce-not-envelopes", Case(_ce(), [HEARTBEAT, TRANSACTION_END, TOMBSTONE, SCALARS[13]], NULL)
    # Debezium asks whether the schema's name ends in ".Envelope": a schema without a name fails
    yield "ce-nameless-schemas", Case(_ce(), SCALARS[:3], FAILS_ONLY)
    # refused configurations
    for name, options in {
        "ce-avro": {"serializer_type": "avro"},
        "ce-avro-data": {"data_serializer_type": "avro"},
        "ce-avro-with-registry": {"serializer_type": "avro", "avro.schema.registry.url": "http://localhost:8081"},
        "ce-xml": {"serializer_type": "xml"},
        "ce-xml-data": {"data_serializer_type": "xml"},
        "ce-boolean": {"extension_attributes_enable": "yes"},
        "ce-tracing-boolean": {"opentelemetry_tracing_attributes_enable": "1"},
        "ce-adjustment-mode": {"schema_name_adjustment_mode": "strict"},
        "ce-json-schemas": {"json_schemas_enable": "maybe"},
        "ce-json-decimal": {"json_decimal_format": "float"},
        "ce-json-cache": {"json_schemas_cache_size": "many"},
        "ce-json-content": {"json_schema_content": "{not json"},
        "ce-json-content-type": {"json_schema_content": '{"optional": true}'},
    }.items():
        yield name, Case(_ce(**options), EVENTS, REFUSED)
    for source in ["", "bogus", "generate", "value,id", "value,", "value,id:value", "value,foo:header",
                   "value,id:bogus", "value,id :header", "value,:header"]:  # fmt: skip
        yield f"ce-metadata-source[{source}]", Case(_ce(metadata_source=source), EVENTS, REFUSED)
    # StringConverter
    string = {"key.converter": STRING, "value.converter": STRING}
    primitives = [*TEXTS, *SCALARS, *LOGICAL, *COMPOSITE]
    yield "string-recorded", Case(string, recorded, EVENT)
    yield "string-recorded-keys", Case(string, recorded, BYTES_ONLY, side="key")
    yield "string-values", Case(string, primitives, EVENT)
    for encoding in ["UTF-16", "utf-16le", "UnicodeBigUnmarked", "UTF-32", "X-UTF-32LE", "US-ASCII", "latin1",
                     " UTF8 "]:  # fmt: skip
        yield (
            f"string-encoding[{encoding}]",
            Case({**string, "value.converter.converter.encoding": encoding}, TEXTS, EVENT),
        )
    yield (
        "string-serializer-encoding",
        Case(
            {
                **string,
                "value.converter.value.serializer.encoding": "UTF-16BE",
                "key.converter.value.serializer.encoding": "UTF-16",
            },
            TEXTS,
            EVENT,
        ),
    )
    yield (
        "string-key-serializer-encoding",
        Case({**string, "key.converter.key.serializer.encoding": "UTF-16LE"}, TEXTS, EVENT, side="key"),
    )
    yield "string-encoding-not-an-option", Case({**string, "value.converter.encoding": "UTF-16"}, TEXTS, EVENT)
    for name, option in {
        "string-unknown-encoding": ("converter.encoding", "EBCDIC-nonsense"),
        "string-illegal-encoding": ("converter.encoding", "UTF 8"),
        "string-untrimmed-serializer-encoding": ("value.serializer.encoding", " UTF-8"),
        "string-deserializer-encoding": ("value.deserializer.encoding", "nope"),
    }.items():
        yield name, Case({**string, f"value.converter.{option[0]}": option[1]}, TEXTS, REFUSED)
    # ByteArrayConverter
    yield "bytes-recorded", Case({"value.converter": BYTES}, recorded, FAILS)
    yield "bytes-values", Case({"key.converter": BYTES, "value.converter": BYTES}, BYTE_VALUES, EVENT)
    yield (
        "bytes-wrong-values",
        Case(
            {"key.converter": BYTES, "value.converter": BYTES},
            [LOGICAL[4], TEXTS[0], SCALARS[10], COMPOSITE[3]],
            FAILS_ONLY,
        ),
    )
    # the number and boolean converters
    for kind, good in {
        "Short": [SCALARS[1]],
        "Integer": [SCALARS[2]],
        "Long": [SCALARS[3], SCALARS[10]],
        "Float": [SCALARS[4], SCALARS[5]],
        "Double": [SCALARS[6], SCALARS[7], SCALARS[11]],
        "Boolean": [SCALARS[8], SCALARS[9], SCALARS[12]],
    }.items():
        both = {"key.converter": NUMBER.format(kind), "value.converter": NUMBER.format(kind)}
        nulls = [SCALARS[13], SCALARS[14], BYTE_VALUES[3]]  # BooleanConverter refuses a null of another type
        yield f"number-{kind}", Case(both, [*good, *nulls], ALL if kind == "Boolean" else EVENT)
        others = [
            r for r in [*SCALARS[:13], LOGICAL[0], LOGICAL[2], LOGICAL[4], TEXTS[0], COMPOSITE[3]] if r not in good
        ]
        yield f"number-{kind}-wrong-values", Case(both, others, FAILS_ONLY)
    yield "number-recorded", Case({"value.converter": NUMBER.format("Long")}, recorded, FAILS)


CASES: dict[str, Case] = dict(_cases())


@pytest.fixture(scope="module")
def results() -> CaseResults:
    """Every case through Connect and mongocdc (one JVM run): the differences and what mongocdc wrote."""
    return run_cases({name: (case.config, case.records) for name, case in CASES.items()})


def _kinds(outcome: dict[str, Any], side: str) -> frozenset[str] | str:
    if "error" in outcome:
        return REFUSED
    return frozenset("error" if "error" in r else "null" if r[side] is None else "bytes" for r in outcome["records"])


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_connect(name: str, results: CaseResults) -> None:
    assert results.differences[name] == []
    case = CASES[name]
    assert _kinds(results.outcomes[name], case.side) == case.expect


def test_a_cloudevent_is_what_debezium_writes(results: CaseResults) -> None:
    update = CASES["ce-default"].records.index(UPDATE_IN_TRANSACTION)
    event = json.loads(results.outcomes["ce-default"]["records"][update]["value"])
    source = _payload(UPDATE_IN_TRANSACTION)["source"]
    assert event["id"] == f"name:dbz;ts:{source['ts_ms']};ord:{source['ord']}"
    assert event["source"] == "/debezium/mongodb/dbz"
    assert event["type"] == "io.debezium.connector.mongodb.DataChangeEvent"
    assert event["iodebeziumtxnNumber"] == str(source["txnNumber"])
    assert event["iodebeziumtxtotalorder"] == str(_payload(UPDATE_IN_TRANSACTION)["transaction"]["total_order"])
    assert event["data"]["schema"]["name"] == "io.debezium.connector.mongodb.Data"
    assert set(event["data"]["payload"]) == {"before", "after", "updateDescription"}


@pytest.mark.parametrize("option", ["serializer.type", "data.serializer.type"])
def test_avro_is_refused_for_want_of_a_schema_registry(option: str) -> None:
    with pytest.raises(ChainConfigError, match="schema registry"):
        build_converter({"value.converter": CE, f"value.converter.{option}": "avro"}, "value")


def test_the_cloudevents_time_is_rfc3339_in_java_calendars() -> None:
    assert converters.rfc3339_millis(1_795_624_612_302) == "2026-11-25T16:36:52.302Z"
    assert converters.rfc3339_millis(-12_219_292_800_001) == "1582-10-04T23:59:59.999Z"
    assert converters.rfc3339_millis(-62_135_596_800_000) == "0001-01-03T00:00:00.000Z"
    assert converters.rfc3339_millis(-62_198_755_200_000) == "0002-01-03T00:00:00.000Z"  # 2 BC
    assert converters.rfc3339_millis(253_402_300_800_000) == "10000-01-01T00:00:00.000Z"
