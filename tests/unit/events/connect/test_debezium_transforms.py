"""Debezium's MongoEventRouter, ByLogicalTableRouter and HeaderToValue in mongocdc against the real classes.

Every case runs through the real Kafka Connect 4.3.1 + Debezium 3.6.1 (one JVM for the module,
``tests/oracle``) and through mongocdc's chain: topics, partitions, keys, values, timestamps and headers must
be byte for byte the same, a configuration Debezium refuses refused, a record it fails on failed. Each case
also states what Connect does with each record (its topic, ``dropped``, ``error``, or ``refused`` for the
configuration), so a case that stopped exercising what it is about fails too. Each runs with the converters'
``schemas.enable`` on and off.

The outbox records are Debezium's own recorded change events with an outbox collection's documents put in
``after`` (rendered by mongocdc's codec, which writes Debezium's JSON byte for byte).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

from mongocdc.events.codec import document_to_json
from mongocdc.events.connect.debezium_transforms import TRANSFORMS
from tests.oracle.recorded import recorded_inputs, run_cases

ROUTER = "io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter"
LOGICAL = "io.debezium.transforms.ByLogicalTableRouter"
HEADER_TO_VALUE = "io.debezium.transforms.HeaderToValue"

ALL = recorded_inputs()
OPS = recorded_inputs("dbz.inventory.ops")
OTHERS = [r for r in ALL if r["topic"] in ("dbz.inventory.customers", "dbz.inventory.orders")]
HEARTBEATS = recorded_inputs("__debezium-heartbeat")[:2]
TRANSACTIONS = recorded_inputs("dbz.transaction")
TOMBSTONES = [r for r in ALL if r["value"] is None]


def _payload(record: Mapping[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(record["value"])["payload"]
    return payload


def _recorded(op: str) -> dict[str, Any]:
    return next(r for r in OPS + ALL if _is_change(r) and _payload(r)["op"] == op)


def _is_change(record: Mapping[str, Any]) -> bool:
    return record["value"] is not None and record["topic"].startswith("dbz.inventory.")


# --- outbox records ---------------------------------------------------------------------------------------------


def outbox(
    document: Mapping[str, Any] | str | None,
    *,
    op: str = "c",
    before: Mapping[str, Any] | None = None,
    collection: str = "outbox",
    ts_ms: int | None = None,
) -> dict[str, Any]:
    """A change event of ``collection`` with ``document`` (BSON values, or the JSON text itself) as ``after``."""
    record = copy.deepcopy(_recorded(op))
    key, value = json.loads(record["key"]), json.loads(record["value"])
    topic = f"dbz.inventory.{collection}"
    key["schema"]["name"], value["schema"]["name"] = f"{topic}.Key", f"{topic}.Envelope"
    after = document_to_json(document) if isinstance(document, Mapping) else document
    key["payload"]["id"] = '{"$oid": "65f0a1b2c3d4e5f6a7b80100"}'
    value["payload"]["after"] = after
    value["payload"]["before"] = None if before is None else document_to_json(before)
    value["payload"]["source"]["collection"] = collection
    if ts_ms is not None:
        value["payload"]["ts_ms"] = ts_ms
    record.update(topic=topic, key=json.dumps(key), value=json.dumps(value))
    return record


def tombstone(collection: str = "outbox") -> dict[str, Any]:
    record = copy.deepcopy(TOMBSTONES[0])
    key = json.loads(record["key"])
    key["schema"]["name"] = f"dbz.inventory.{collection}.Key"
    record.update(topic=f"dbz.inventory.{collection}", key=json.dumps(key))
    return record


def event(
    aggregate_type: Any = "Order",
    aggregate_id: Any = "order-1",
    payload: Any = '{"id": 1, "total": 12.5}',
    *,
    oid: str = "65f0a1b2c3d4e5f6a7b80200",
    **extra: Any,
) -> dict[str, Any]:
    """An outbox document as an application writes it."""
    return {
        "_id": ObjectId(oid),
        "aggregateid": aggregate_id,
        "aggregatetype": aggregate_type,
        "type": "OrderCreated",
        "payload": payload,
        **extra,
    }


WHEN = dt.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=dt.UTC)
RICH_PAYLOAD: dict[str, Any] = {
    "orderId": 1001,
    "big": Int64(2**40),
    "total": 12.5,
    "whole": 3.0,
    "price": Decimal128("19.990"),
    "placed": WHEN,
    "customer": {"id": ObjectId("65f0a1b2c3d4e5f6a7b80300"), "name": 'Sally "S" Thomas\n', "vip": True},
    "lines": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1, "note": None}],
    "tags": ["new", "gift"],
    "matrix": [[1, 2], [3]],
    "empty": {},
    "none": [],
    "bytes": Binary(b"\x00\x01\xfe\xff", 0),
    "uuid": Binary(b"\x0f" * 16, 4),
    "ts": Timestamp(1700000000, 42),
    "text": "héllo wörld 中文 \u2028 \U0001f600 \x7f",
    'clé\t\u2028"q"': {"ünï": "\x00"},
}
EXOTIC_PAYLOAD: dict[str, Any] = {
    **RICH_PAYLOAD,
    "regex": Regex("^ab.*c$", "mi"),
    "code": Code("function () { return 1; }"),
    "scoped": Code("function () { return x; }", {"x": 1}),
    "min": MinKey(),
    "max": MaxKey(),
    "nan": float("nan"),
    "inf": float("-inf"),
    "tiny": 1e-7,
    "huge": 1e300,
    "negzero": -0.0,
    "ref": DBRef("customers", ObjectId("65f0a1b2c3d4e5f6a7b80301"), "otherdb", note="extra"),
    "user_binary": Binary(b"user", 0x80),
    "decimals": [Decimal128("NaN"), Decimal128("-Infinity"), Decimal128("-0"), Decimal128("1E+6144")],
    "first_day": dt.datetime(1, 1, 1, tzinfo=dt.UTC),
    "last_ms": dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC),
    "$dollar": {"$ref": "not a wrapper"},
}
STRUCTURES: dict[str, Any] = {
    "nested": {"level1": {"level2": {"level3": [1, 2]}}},
    "docs": [{"a": 1}, {"b": "x"}, {"a": 2, "c": [{"d": True}]}],
    "nested_docs": [[{"a": 1}], [{"a": 2}]],
    "nested_longs": [[Int64(1)], [Int64(2), Int64(3)], []],
    "nested_strings": [["x"], [None, "y"]],
    "same_arrays": [[1, 2], [1, 2], [3]],
    "later_scoped": [["a"], [Code("x", {"s": 1})], [Code("x", {"s": 1})]],
    "nulls": [None, "a"],
    "regex": Regex("x+", "i"),
    "code": Code("return 1"),
    "mixed_docs": [{"a": 5, "b": None}, {"b": "x", "c": ["s"]}, {"a": 6, "c": []}],
    "ts": Timestamp(2**31 + 5, 1),
    "dates": [WHEN, dt.datetime(1960, 1, 1, tzinfo=dt.UTC)],
    "decimal": Decimal128("-1.50E+3"),
    "ref": DBRef("customers", 1001),
    "binaries": [Binary(b"a", 0), Binary(b"b", 0x80)],
    "first_day": dt.datetime(1, 1, 1, tzinfo=dt.UTC),
}


def _undefined_field(document: Mapping[str, Any], name: str) -> str:
    """``document`` as Debezium writes it, with a field holding BSON ``undefined`` (which no driver writes)."""
    text = document_to_json(document)
    return text[:-1] + f',"{name}": {{"$undefined": true}}}}'


def ordered(*documents: Mapping[str, Any], ts_ms: int = 1700000000000) -> list[dict[str, Any]]:
    """Outbox inserts of ``documents``, one millisecond apart."""
    return [outbox(document, ts_ms=ts_ms + number) for number, document in enumerate(documents)]


# --- configurations ---------------------------------------------------------------------------------------------

SCHEMALESS = {"key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"}


def transform(kind: str, alias: str, **options: str) -> dict[str, str]:
    return {f"transforms.{alias}.type": kind, **{f"transforms.{alias}.{name}": v for name, v in options.items()}}


def chain(*stages: Mapping[str, str]) -> dict[str, str]:
    config: dict[str, str] = {}
    aliases = []
    for stage in stages:
        alias = next(iter(stage)).split(".")[1]
        aliases.append(alias)
        config.update(stage)
    return {"transforms": ",".join(aliases), **config}


def router(**options: str) -> dict[str, str]:
    return chain(transform(ROUTER, "outbox", **{name.replace("_", "."): value for name, value in options.items()}))


def routed(options: Mapping[str, str]) -> dict[str, str]:
    return chain(transform(ROUTER, "outbox", **options))


def logical(options: Mapping[str, str]) -> dict[str, str]:
    return chain(transform(LOGICAL, "logical", **options))


def header_to_value(options: Mapping[str, str]) -> dict[str, str]:
    return chain(transform(HEADER_TO_VALUE, "h2v", **options))


# --- the cases: name → (configuration, records, what Connect does) ------------------------------------------------

Expected = str | list[str]
CASES: dict[str, tuple[dict[str, str], list[dict[str, Any]], Expected]] = {}


def case(name: str, config: Mapping[str, str], records: Sequence[dict[str, Any]], expected: Expected) -> None:
    """Register ``name`` with the schemas on and off; ``expected`` is ``"refused"`` or one entry per record."""
    assert name not in CASES and (expected == "refused" or len(expected) == len(records)), name
    CASES[name] = (dict(config), list(records), expected)
    CASES[f"{name}-schemaless"] = ({**config, **SCHEMALESS}, list(records), expected)


ORDER = "outbox.event.Order"

# MongoEventRouter: defaults, payload forms
case("outbox-string-payload", router(), [outbox(event())], [ORDER])
case("outbox-document-payload", router(), [outbox(event(payload=RICH_PAYLOAD))], [ORDER])
case("outbox-document-payload-exotic", router(), [outbox(event(payload=EXOTIC_PAYLOAD))], [ORDER])
case(
    "outbox-undefined-in-payload",
    router(),
    [outbox(_undefined_field(event(payload={"a": 1}), "gone")), outbox(_undefined_field(event(), "gone"))],
    [ORDER, ORDER],
)
case("outbox-empty-document-payload", router(), [outbox(event(payload={}))], [ORDER])
LEGACY = (
    '{"_id": {"$oid": "65f0a1b2c3d4e5f6a7b80201"},"aggregateid": "a","aggregatetype": "Order","payload": '
    '{"s": {"$symbol": "sym"},"p": {"$dbPointer": {"$ref": "db.c","$id": {"$oid": "65f0a1b2c3d4e5f6a7b80202"}}},'
    '"b": {"$type": "05","$binary": "AQI="},"r": {"$options": "xi","$regex": "a"},"q": {"$regex": {"$in": [1]}},'
    '"c": {"$binary": {"base64": "AQI=","subType": "06"}},"d": {"$date": "2024-02-29T12:34:56.789Z"},'
    '"n": {"$numberInt": "5"},"l": {"$numberLong": "6"},"f": {"$numberDouble": "-Infinity"},"u": {"$undefined": true},'
    '"x": {"$regularExpression": {"pattern": "^a","options": "sm"}},"t": {"$timestamp": {"t": 4294967295,"i": 1}}}}'
)
case(
    "outbox-extended-json-forms",
    router(),
    [outbox(LEGACY), outbox(LEGACY.replace('"payload": ', '"symbol": {"$symbol": "x"},"payload": '))],
    [ORDER, "error"],
)
case("outbox-array-payload", router(), [outbox(event(payload=[1, 2, 3]))], [ORDER])
case("outbox-int-payload", router(), [outbox(event(payload=7))], [ORDER])
case("outbox-snapshot-read", router(), [outbox(event(), op="r")], [ORDER])
case(
    "outbox-other-records",
    router(),
    [*HEARTBEATS, *TRANSACTIONS, *TOMBSTONES[:2], *OTHERS[:3], tombstone()],
    ["__debezium-heartbeat.dbz"] * 2
    + ["dbz.transaction"] * 4
    + ["dropped", "dropped", "error", "dropped", "error", "dropped"],
)
case(
    "outbox-deletes-and-updates-dropped",
    router(),
    [outbox(None, op="d", before=event()), outbox(event(), op="u", before=event())],
    ["dropped", "dropped"],
)
case("outbox-recorded-ops", router(), OPS, ["error", "dropped", "dropped", "error"] + ["dropped"] * 9 + ["dropped"] * 2)

# MongoEventRouter: the outbox document's own fields
case(
    "outbox-id-and-key-types",
    router(),
    [
        outbox({**event(aggregate_id=42), "_id": "e-1"}),
        outbox({**event(aggregate_id=Int64(42)), "_id": 7}),
        outbox(event(aggregate_id=ObjectId("65f0a1b2c3d4e5f6a7b80400"))),
        outbox(event(aggregate_id=None)),
        outbox(event(aggregate_id={"tenant": "t", "n": 1})),
    ],
    [ORDER] * 5,
)
case(
    "outbox-missing-fields-fail",
    router(),
    [
        outbox({k: v for k, v in event().items() if k != "aggregateid"}),
        outbox({k: v for k, v in event().items() if k != "aggregatetype"}),
        outbox({k: v for k, v in event().items() if k != "payload"}),
        outbox({k: v for k, v in event().items() if k != "_id"}),
        outbox(event(aggregate_type=None)),
        outbox(event(aggregate_type=5)),
        outbox({**event(), "": "empty name"}),
        outbox({**event(), "limit": MinKey()}),
        outbox({**event(), "scoped": Code("x", {"a": 1})}),
        outbox({**event(), "mixed": [1, "a"]}),
        outbox("not json"),
        outbox(document_to_json(event())[:-1] + ',"huge": 99999999999999999999}'),
    ],
    ["error"] * 12,
)
case(
    "outbox-extra-fields-converted",
    router(collection_fields_additional_placement="extra:envelope"),
    [outbox({**event(), "extra": STRUCTURES})],
    [ORDER],
)
case(
    "outbox-extra-fields-in-headers",
    router(collection_fields_additional_placement="extra:header"),
    [outbox({**event(), "extra": {name: value}}) for name, value in STRUCTURES.items()],
    [ORDER] * len(STRUCTURES),
)

# MongoEventRouter: payload expansion
case(
    "outbox-expand-document",
    router(collection_expand_json_payload="true"),
    [outbox(event(payload=RICH_PAYLOAD))],
    [ORDER],
)
case(
    "outbox-expand-document-envelope",
    router(collection_expand_json_payload="true", collection_fields_additional_placement="type:envelope:eventType"),
    [outbox(event(payload=RICH_PAYLOAD)), outbox(event(payload=STRUCTURES)), outbox(event(payload={}))],
    [ORDER] * 3,
)
case(
    "outbox-expand-string-stays-string",
    router(collection_expand_json_payload="TRUE"),
    [outbox(event()), outbox(event(payload="not json"))],
    [ORDER, ORDER],
)
case(
    "outbox-expand-unsupported-fails",
    router(collection_expand_json_payload="true"),
    [
        outbox(event(payload={"scoped": Code("x", {"a": 1})})),
        outbox(event(payload={"min": MinKey()})),
        outbox(event(payload={"deep": [[[1]]]})),
        outbox(event(payload={"docs": [{"a": 1}, {"a": "x"}]})),
        outbox(event(payload={"docs": [{"a": {"x": 1}}, {"a": {"y": 2}}]})),
        outbox(event(payload={"mixed": [1, {"a": 1}]})),
        outbox(event(payload={"empty": [[]]})),
        outbox(event(payload={"regexes": [{"r": Regex("a")}]})),
        outbox(event(payload={"empty_docs": [{}]})),
        outbox(event(payload={"late_doc": [{"a": 5}, {"a": {"x": 1}}]})),
        outbox(event(payload={"long_then_int": [[Int64(1)], [2]]})),
        outbox(event(payload={"int_then_long": [[1], [Int64(2), 3]]})),
        outbox(event(payload={"doc_ints": [[{"a": 1}], [{"a": Int64(2)}]]})),
        outbox(event(payload={"double_then_int": [[1.5], [2]]})),
        outbox(event(payload={"deeper_later": [[1], [[2]]]})),
    ],
    ["error"] * 15,
)
case(
    "outbox-expand-lenient-boolean",
    router(collection_expand_json_payload="yes"),
    [outbox(event(payload={"a": 1}))],
    [ORDER],
)


def _edited(record: dict[str, Any], edit: Any) -> dict[str, Any]:
    """``record`` with its value (schema and payload) changed by ``edit``."""
    value = json.loads(record["value"])
    edit(value)
    return {**record, "value": json.dumps(value)}


def _drop_after(value: dict[str, Any]) -> None:
    value["schema"]["fields"] = [f for f in value["schema"]["fields"] if f["field"] != "after"]
    del value["payload"]["after"]


def _unnamed_after(value: dict[str, Any]) -> None:
    for field in value["schema"]["fields"]:
        if field["field"] == "after":
            del field["name"], field["version"]


case(
    "outbox-odd-envelopes",
    router(collection_fields_additional_placement="type:envelope"),
    [
        _edited(outbox(event()), _drop_after),
        _edited(outbox(event()), lambda value: value["payload"].update(op=None)),
        _edited(outbox(event()), lambda value: value["payload"].update(after=None)),
        _edited(outbox(event()), lambda value: value["payload"].update(op="t")),
    ],
    ["error", "error", "error", ORDER],
)
case(
    "outbox-after-schema-without-name",
    router(collection_fields_additional_placement="type:envelope", collection_expand_json_payload="true"),
    [_edited(outbox(event(payload={"a": {"b": 1}})), _unnamed_after)],
    [ORDER],
)

# MongoEventRouter: field names and routing
RENAMED = {
    "eventId": "evt-1",
    "key": ObjectId("65f0a1b2c3d4e5f6a7b80500"),
    "kind": "Shipment",
    "body": {"carrier": "UPS"},
    "dest": "shipping",
}
case(
    "outbox-custom-field-names",
    routed(
        {
            "collection.field.event.id": "eventId",
            "collection.field.event.key": "key",
            "collection.field.event.type": "kind",
            "collection.field.event.payload": "body",
            "route.by.field": "dest",
        }
    ),
    [outbox(RENAMED)],
    ["outbox.event.shipping"],
)
case(
    "outbox-route-replacement",
    routed({"route.topic.replacement": "${routedByValue}.events"}),
    [outbox(event()), outbox(event(aggregate_type="Customer"))],
    ["Order.events", "Customer.events"],
)
case(
    "outbox-route-regex",
    routed({"route.topic.regex": "  (Order|Invoice)  ", "route.topic.replacement": " billing.$1 "}),
    [outbox(event()), outbox(event(aggregate_type="Customer"))],
    ["billing.Order", "Customer"],
)
case(
    "outbox-route-replacement-escapes",
    routed({"route.topic.regex": "(?<first>.)(?<rest>.*)", "route.topic.replacement": "\\$${rest}-$1\\\\"}),
    [outbox(event())],
    ["$rder-O\\"],
)
case("refused-outbox-route-regex", routed({"route.topic.regex": "(unclosed"}), [outbox(event())], "refused")
case("refused-outbox-route-regex-trimmed", routed({"route.topic.regex": "a\\ "}), [outbox(event())], "refused")

# MongoEventRouter: additional fields
case(
    "outbox-additional-fields",
    router(
        collection_fields_additional_placement="type:envelope:eventType, aggregateid:HEADER , "
        "tenant:header:t,_id:envelope"
    ),
    [outbox({**event(), "tenant": 5}), outbox({**event(), "tenant": {"a": [1, 2]}})],
    [ORDER, ORDER],
)
case(
    "outbox-partition",
    router(collection_fields_additional_placement="shard:partition,type:header"),
    [outbox({**event(), "shard": 2}), outbox({**event(), "shard": None}), outbox({**event(), "shard": Int64(2)})],
    [ORDER, "error", "error"],
)
case(
    "outbox-additional-missing-error",
    router(collection_fields_additional_placement="tenant:envelope"),
    [outbox(event())],
    ["error"],
)
case(
    "outbox-additional-missing-header-error",
    router(collection_fields_additional_placement="tenant:header"),
    [outbox(event())],
    ["error"],
)
case(
    "outbox-additional-missing-ignore",
    router(
        collection_fields_additional_placement="tenant:envelope,shard:partition,region:header",
        collection_field_additional_missing=" IGNORE",
    ),
    [outbox({**event(), "tenant": "t", "shard": 1, "region": "eu"}), outbox(event())],
    [ORDER, ORDER],
)
case(
    "outbox-additional-missing-ignore-then-present",
    router(collection_fields_additional_placement="tenant:envelope", collection_field_additional_missing="ignore"),
    [outbox(event()), outbox({**event(), "tenant": "t"})],
    [ORDER, "error"],
)
case(
    "outbox-unknown-placement", router(collection_fields_additional_placement="type:body"), [outbox(event())], ["error"]
)
case("outbox-placement-separators-only", router(collection_fields_additional_placement=","), [outbox(event())], [ORDER])
case(
    "outbox-duplicate-alias",
    router(collection_fields_additional_placement="type:envelope:payload"),
    [outbox(event())],
    ["error"],
)
for number, placement in enumerate(["type", "type:envelope:x:y", "", ",type", "type::"]):
    case(
        f"refused-outbox-placement-{number}",
        router(collection_fields_additional_placement=placement),
        [outbox(event())],
        "refused",
    )
case(
    "refused-outbox-missing-behaviour", router(collection_field_additional_missing="skip"), [outbox(event())], "refused"
)

# MongoEventRouter: schema cache and versions
case(
    "outbox-value-schema-cache",
    router(collection_fields_additional_placement="type:envelope"),
    ordered(event(), event(aggregate_type="Customer"), event(payload={"a": 1}, aggregate_type="Invoice")),
    [ORDER, "outbox.event.Customer", "outbox.event.Invoice"],
)
case(
    "outbox-stale-schema-fails",
    router(collection_fields_additional_placement="extra:envelope"),
    ordered({**event(), "extra": 1}, {**event(), "extra": "text"}),
    [ORDER, "error"],
)
case(
    "outbox-schema-version",
    router(collection_field_event_schema_version="version", collection_fields_additional_placement="type:envelope"),
    ordered(
        {**event(), "version": 1},
        {**event(aggregate_type="Customer"), "version": 2},
        {**event(aggregate_type="Invoice"), "version": 1},
    ),
    [ORDER, "outbox.event.Customer", "outbox.event.Invoice"],
)
case(
    "outbox-schema-version-stale-payload",
    router(
        collection_field_event_schema_version="version",
        collection_fields_additional_placement="type:envelope",
        collection_expand_json_payload="true",
    ),
    ordered({**event(payload={"a": 1}), "version": 1}, {**event(payload={"b": 1}), "version": 1}),
    [ORDER, "error"],
)
case(
    "outbox-schema-version-not-int32",
    router(collection_field_event_schema_version="version", collection_fields_additional_placement="type:envelope"),
    [outbox({**event(), "version": "1"}), outbox(event())],
    ["error", "error"],
)
case(
    "outbox-schema-version-headers-only",
    router(collection_field_event_schema_version="version"),
    [outbox({**event(), "version": "not checked"})],
    [ORDER],
)

# MongoEventRouter: timestamps, tombstones, invalid operations, tracing
case(
    "outbox-timestamp-field",
    router(collection_field_event_timestamp="createdAt", collection_fields_additional_placement="createdAt:envelope"),
    [
        outbox({**event(), "createdAt": Int64(1709210096789)}),
        outbox({**event(), "createdAt": WHEN}),
        outbox({**event(), "createdAt": 5}),
        outbox(event()),
    ],
    [ORDER, "error", "error", "error"],
)
case(
    "outbox-tombstone-on-empty-payload",
    router(route_tombstone_on_empty_payload=" True"),
    [
        outbox(event(payload=None)),
        outbox(event(payload="")),
        outbox(event(payload=" \t\n")),
        outbox(event(payload="\u00a0")),
    ],
    [ORDER] * 4,
)
case(
    "outbox-tombstone-with-envelope",
    router(route_tombstone_on_empty_payload="true", collection_fields_additional_placement="type:envelope"),
    [outbox(event(payload=None)), outbox(event(payload={}))],
    [ORDER, ORDER],
)
case(
    "outbox-empty-payload-without-tombstone",
    router(collection_fields_additional_placement="type:envelope"),
    [outbox(event(payload=None)), outbox(event(payload=""))],
    [ORDER, ORDER],
)
case("refused-outbox-tombstone-boolean", router(route_tombstone_on_empty_payload="yes"), [outbox(event())], "refused")
UPDATE = outbox(event(), op="u", before=event())
case(
    "outbox-updates-fatal", routed({"table.op.invalid.behavior": "FATAL"}), [UPDATE, outbox(event())], ["error", ORDER]
)
case("outbox-updates-error", routed({"table.op.invalid.behavior": "error"}), [UPDATE], ["dropped"])
case(
    "outbox-documented-op-option-ignored",
    routed({"collection.op.invalid.behavior": "fatal", "debezium.op.invalid.behavior": "nonsense"}),
    [UPDATE],
    ["dropped"],
)
case("refused-outbox-op-behaviour", routed({"table.op.invalid.behavior": "explode"}), [UPDATE], "refused")
case(
    "outbox-tracing-options",
    routed(
        {
            "tracing.span.context.field": "tracingspancontext",
            "tracing.operation.name": "outbox-read",
            "tracing.with.context.field.only": "maybe",
        }
    ),
    [outbox({**event(), "tracingspancontext": "#\n"})],
    [ORDER],
)
case(
    "outbox-relational-options-ignored",
    routed({"table.field.event.key": "type", "table.expand.json.payload": "nonsense", "table.field.event.id": "x"}),
    [outbox(event())],
    [ORDER],
)

# MongoEventRouter in a chain: the id header moved into the routed value
case(
    "outbox-then-header-to-value",
    chain(
        transform(ROUTER, "outbox", **{"collection.fields.additional.placement": "type:envelope"}),
        transform(HEADER_TO_VALUE, "h2v", headers="id", fields="eventId", operation="move"),
    ),
    [outbox(event()), *HEARTBEATS[:1]],
    [ORDER, "__debezium-heartbeat.dbz"],
)

# ByLogicalTableRouter
SHARDED = [
    r
    for topic in ("dbz.inventory.customers", "dbz.inventory.orders")
    for r in ALL
    if r["topic"] == topic and r["value"] is None
] + TOMBSTONES[:2]


def relational(topic: str, row_id: int, *, optional_key: bool = False, schema_topic: str = "") -> dict[str, Any]:
    """A change event shaped like a relational connector's: ``before``/``after`` structs, its schemas named after
    ``schema_topic`` (the record's topic by default)."""
    schema_topic = schema_topic or topic
    record = copy.deepcopy(_recorded("c"))
    key, value = json.loads(record["key"]), json.loads(record["value"])
    row = {
        "type": "struct",
        "fields": [
            {"type": "int32", "optional": False, "field": "id"},
            {"type": "string", "optional": True, "default": "none", "field": "name"},
        ],
        "optional": True,
        "name": f"{schema_topic}.Value",
        "version": 2,
        "parameters": {"origin": "test"},
    }
    for field in value["schema"]["fields"]:
        if field["field"] in ("before", "after"):
            field.update(row, field=field["field"])
            del field["version"], field["parameters"]
            field.update(version=2, parameters={"origin": "test"})
    value["schema"]["name"] = f"{schema_topic}.Envelope"
    value["payload"].update(before={"id": row_id, "name": None}, after={"id": row_id, "name": "x"}, op="u")
    key["schema"] = {
        "type": "struct",
        "fields": [{"type": "int32", "optional": False, "field": "id"}],
        "optional": optional_key,
        "name": f"{schema_topic}.Key",
    }
    key["payload"] = {"id": row_id}
    record.update(topic=topic, key=json.dumps(key), value=json.dumps(value))
    return record


SHARD_RECORDS = [relational("db_shard1.inventory.customers", 1), relational("db_shard2.inventory.customers", 1)]
case(
    "logical-relational-shards",
    logical({"topic.regex": r"db_shard(\d)\.inventory\.(.*)", "topic.replacement": "db.inventory.all_$2"}),
    SHARD_RECORDS,
    ["db.inventory.all_customers"] * 2,
)
case(
    "logical-key-field-regex",
    logical(
        {
            "topic.regex": r"db_shard(\d)\.inventory\.(.*)",
            "topic.replacement": "db.inventory.$2",
            "key.field.name": "shard",
            "key.field.regex": r"db_(shard\d)\..*",
            "key.field.replacement": "$1",
        }
    ),
    [*SHARD_RECORDS, relational("db_shard3x.inventory.customers", 2)],
    ["db.inventory.customers"] * 2 + ["db_shard3x.inventory.customers"],
)
case(
    "logical-no-uniqueness",
    logical({"topic.regex": "db_shard.\\.(.*)", "topic.replacement": "all.$1", "key.enforce.uniqueness": "False"}),
    [*SHARD_RECORDS, relational("db_shard3.inventory.customers", 3, optional_key=True)],
    ["all.inventory.customers"] * 3,
)
case(
    "logical-mongodb-records",
    logical({"topic.regex": r"dbz\.inventory\.(.*)", "topic.replacement": "dbz.all"}),
    [*SHARDED, *OTHERS[:2], *HEARTBEATS[:1], *TRANSACTIONS[:1]],
    ["dbz.all"] * len(SHARDED) + ["error", "error", "__debezium-heartbeat.dbz", "dbz.transaction"],
)
case(
    "logical-everything",
    logical({"topic.regex": "(.*)", "topic.replacement": "everything", "logical.table.cache.size": "0"}),
    [*HEARTBEATS, *TRANSACTIONS, *TOMBSTONES[:2]],
    ["everything"] * 8,
)
case(
    "logical-bad-group-reference",
    logical({"topic.regex": "dbz\\.inventory\\.(ops)", "topic.replacement": "$2$1"}),
    [*TOMBSTONES[:1]],
    ["error"],
)
case(
    "logical-empty-topic-keeps-record",
    logical({"topic.regex": "dbz\\.inventory\\.ops()", "topic.replacement": "$1"}),
    [*TOMBSTONES[:1], *OPS[:1]],
    ["dbz.inventory.ops"] * 2,
)
case(
    "logical-envelope-without-before",
    logical({"topic.regex": "(.*)", "topic.replacement": "x", "key.enforce.uniqueness": "false"}),
    [_edited(relational("db_shard1.t", 1), lambda value: value["schema"]["fields"].pop(0))],
    ["error"],
)


def _listed_key(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with an array field in its key whose schema has a default (a schema Python cannot hash)."""
    key = json.loads(record["key"])
    key["schema"]["fields"].append(
        {
            "type": "array",
            "items": {"type": "int32", "optional": False},
            "optional": True,
            "default": [1, 2],
            "field": "l",
        }
    )
    key["payload"]["l"] = None
    return {**record, "key": json.dumps(key)}


case(
    "logical-unhashable-key-schema",
    logical({"topic.regex": r"db_shard(\d)\.(.*)", "topic.replacement": "logical$1"}),
    [
        _listed_key(relational("db_shard1.t", 1, schema_topic="t")),
        _listed_key(relational("db_shard2.t", 2, schema_topic="t")),
    ],
    ["logical1", "logical2"],
)
case(
    "logical-replacement-empty",
    logical({"topic.regex": "(dbz)\\.inventory\\.ops", "topic.replacement": "${missing}"}),
    [*TOMBSTONES[:1]],
    ["error"],
)
case(
    "logical-cache-shared-schema",
    logical({"topic.regex": r"db_shard(\d)\.(.*)", "topic.replacement": "logical$1"}),
    [relational("db_shard1.t", 1, schema_topic="t"), relational("db_shard2.t", 2, schema_topic="t")],
    ["logical1", "logical2"],
)
case(
    "logical-cache-size-one",
    logical({"topic.regex": r"db_shard(\d)\.(.*)", "topic.replacement": "logical$1", "logical.table.cache.size": "1"}),
    [
        relational("db_shard1.t", 1, schema_topic="t"),
        relational("db_shard1.u", 2, schema_topic="u"),
        relational("db_shard2.t", 3, schema_topic="t"),
    ],
    ["logical1", "logical1", "logical2"],
)
case(
    "logical-key-field-collides",
    logical({"topic.regex": "(.*)", "topic.replacement": "x", "key.field.name": "id"}),
    [*TOMBSTONES[:1], relational("db_shard1.t", 1)],
    ["error", "error"],
)
case(
    "logical-avro-names",
    logical(
        {
            "topic.regex": r"db_shard(\d)\.inventory\.(.*)",
            "topic.replacement": "9-all.$2 shard",
            "schema.name.adjustment.mode": "avro",
        }
    ),
    SHARD_RECORDS,
    ["9-all.customers shard"] * 2,
)
case(
    "logical-avro-unicode-names",
    logical(
        {
            "topic.regex": r"db_shard(\d)\.inventory\.(.*)",
            "topic.replacement": "_all-é.$2",
            "schema.name.adjustment.mode": " Avro_Unicode ",
        }
    ),
    SHARD_RECORDS,
    ["_all-é.customers"] * 2,
)
case(
    "logical-avro-same-replacement",
    logical(
        {"topic.regex": r"conflict(.)x\.t", "topic.replacement": "conflict$1y", "schema.name.adjustment.mode": "avro"}
    ),
    [relational("conflict-x.t", 1), relational("conflict+x.t", 2)],
    ["conflict-y", "conflict+y"],
)
for number, options in enumerate(
    [
        {"topic.replacement": "x"},
        {"topic.regex": " ", "topic.replacement": "x"},
        {"topic.regex": "(", "topic.replacement": "x"},
        {"topic.regex": "(.*)"},
        {"topic.regex": "(.*)", "topic.replacement": "x", "key.field.regex": "(.*)"},
        {"topic.regex": "(.*)", "topic.replacement": "x", "key.field.regex": "(.*)", "key.field.replacement": " "},
        {"topic.regex": "(.*)", "topic.replacement": "x", "key.field.regex": "["},
        {"topic.regex": "(.*)", "topic.replacement": "x", "key.enforce.uniqueness": "no"},
        {"topic.regex": "(.*)", "topic.replacement": "x", "schema.name.adjustment.mode": "snake"},
        {"topic.regex": "(.*)", "topic.replacement": "x", "logical.table.cache.size": " 16"},
    ]
):
    case(f"refused-logical-{number}", logical(options), TOMBSTONES[:1], "refused")

# HeaderToValue
CONTEXT = "__debezium.context."
case(
    "header-to-value-copy",
    header_to_value(
        {"headers": f"{CONTEXT}connectorName, {CONTEXT}taskId", "fields": "connector,task", "operation": "copy"}
    ),
    [*OPS[:3], *HEARTBEATS[:1], *TRANSACTIONS[:1]],
    ["dbz.inventory.ops"] * 3 + ["__debezium-heartbeat.dbz", "dbz.transaction"],
)
case(
    "header-to-value-move",
    header_to_value({"headers": f"{CONTEXT}runId,{CONTEXT}taskId", "fields": "run,task", "operation": " MOVE "}),
    OPS[:4],
    ["dbz.inventory.ops"] * 4,
)
case(
    "header-to-value-nested",
    header_to_value(
        {
            "headers": f"{CONTEXT}connectorName,{CONTEXT}runId,{CONTEXT}taskId",
            "fields": "source.connector_name,meta.run,meta.task",
            "operation": "copy",
        }
    ),
    OPS[:2],
    ["dbz.inventory.ops"] * 2,
)
case(
    "header-to-value-new-parent-in-struct",
    header_to_value({"headers": f"{CONTEXT}runId", "fields": "source.meta.run", "operation": "copy"}),
    OPS[:1],
    ["dbz.inventory.ops"],
)
case(
    "header-to-value-name-containment",
    header_to_value({"headers": f"{CONTEXT}runId", "fields": "xop.run", "operation": "copy"}),
    OPS[:1],
    ["error"],
)
case(
    "header-to-value-through-array",
    header_to_value(
        {"headers": f"{CONTEXT}runId", "fields": "updateDescription.removedFields.run", "operation": "copy"}
    ),
    OPS[:1],
    ["error"],
)
case(
    "header-to-value-deep-new-parent",
    header_to_value({"headers": f"{CONTEXT}runId", "fields": "meta.a.run", "operation": "copy"}),
    OPS[:1],
    ["dbz.inventory.ops"],
)
case(
    "header-to-value-into-optional-struct",
    header_to_value({"headers": f"{CONTEXT}runId", "fields": "transaction.run", "operation": "copy"}),
    OPS[:1],
    ["error"],
)
case(
    "header-to-value-existing-field",
    header_to_value({"headers": f"{CONTEXT}connectorName", "fields": "op", "operation": "copy"}),
    OPS[:1],
    ["dbz.inventory.ops"],
)
case(
    "header-to-value-primitive-parent",
    header_to_value({"headers": f"{CONTEXT}connectorName", "fields": "op.name", "operation": "copy"}),
    OPS[:1],
    ["error"],
)


def _headers(record: Mapping[str, Any], keep: Sequence[str]) -> dict[str, Any]:
    return {**record, "headers": [h for h in record["headers"] if h[0] in keep]}


case(
    "header-to-value-stale-schema",
    header_to_value({"headers": f"{CONTEXT}connectorName,{CONTEXT}taskId", "fields": "a,b", "operation": "copy"}),
    [_headers(OPS[0], [f"{CONTEXT}connectorName"]), OPS[0], _headers(OPS[0], [])],
    ["dbz.inventory.ops", "error", "dbz.inventory.ops"],
)
case(
    "header-to-value-null-header",
    header_to_value({"headers": "trace", "fields": "trace", "operation": "move"}),
    [{**OPS[0], "headers": [*OPS[0]["headers"], ["trace", None]]}],
    ["dbz.inventory.ops"],
)
case(
    "header-to-value-repeated-header",
    header_to_value({"headers": f"{CONTEXT}taskId", "fields": "task", "operation": "move"}),
    [{**OPS[0], "headers": [*OPS[0]["headers"], [f"{CONTEXT}taskId", "7"]]}],
    ["dbz.inventory.ops"],
)
for number, options in enumerate(
    [
        {"headers": "a", "fields": "x"},
        {"headers": "a,b", "fields": "x", "operation": "copy"},
        {"headers": "a,,b", "fields": "x,y,z", "operation": "copy"},
        {"headers": "a b", "fields": "x", "operation": "copy"},
        {"headers": "a", "fields": "x", "operation": "swap"},
        {"fields": "x", "operation": "copy"},
        {"headers": "", "fields": "", "operation": "copy"},
    ]
):
    case(f"refused-header-to-value-{number}", header_to_value(options), OPS[:1], "refused")


# --- the oracle, once for the module ---------------------------------------------------------------------------


def _outcome(result: Mapping[str, Any]) -> str:
    if "error" in result:
        return "error"
    if result.get("dropped"):
        return "dropped"
    return str(result["topic"])


@pytest.fixture(scope="module")
def oracle() -> Iterator[tuple[dict[str, list[str]], dict[str, Expected]]]:
    """Each case's differences from Connect, and what Connect did with it (one JVM run)."""
    found = run_cases({name: (case[0], case[1]) for name, case in CASES.items()})
    outcomes: dict[str, Expected] = {
        name: "refused" if "error" in result else [_outcome(r) for r in result["records"]]
        for name, result in found.oracle.items()
    }
    yield found.differences, outcomes


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_debezium(name: str, oracle: tuple[dict[str, list[str]], dict[str, Expected]]) -> None:
    problems, outcomes = oracle
    assert problems[name] == []
    assert outcomes[name] == CASES[name][2]


# --- the pieces, directly ---------------------------------------------------------------------------------------


def test_transforms_are_registered_by_java_name() -> None:
    assert set(TRANSFORMS) == {ROUTER, LOGICAL, HEADER_TO_VALUE}
