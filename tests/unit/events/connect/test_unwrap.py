"""Debezium 3.6.1's ``ExtractNewDocumentState`` (``mongocdc/events/connect/unwrap.py``) against the real class.

Every case of :data:`CASES` (a connector configuration and records) runs through Kafka Connect 4.3.1 with the real
Debezium transform and through mongocdc's chain, all in one ``compare`` call (one JVM for the module); each test
asserts that its case has no difference (the same topics, partitions, keys, values, timestamps and headers byte
for byte, the same configurations refused, the same records failing) and that the case does what it is there
for (``Case.expect``: the outcomes mongocdc has over the records and, where it says, text that must be in what it
wrote), so a transform that passed records through untouched could not pass.

The inputs are the 126 records the real Debezium MongoDB connector wrote (every BSON and ``_id`` type, every update
form with pre-images, deletes and tombstones, transactions, heartbeats, snapshot and incremental snapshot reads),
and records made here from one of them for what they lack: documents of every BSON type Debezium can convert
(the recorded ones with scalars also hold a JavaScript-with-scope, which fails the whole record), the extended
JSON of ``updatedFields`` and keys, arrays of every shape, field names to sanitise, updates without the full
document, deletes without a pre-image, envelopes that are not MongoDB's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from mongocdc.events.connect.chain import RecordPipeline
from mongocdc.events.connect.unwrap import ExtractNewDocumentState
from tests.oracle.recorded import CaseResults, mongocdc_case, recorded_inputs, run_cases

UNWRAP = "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"
REFUSED = "refused"
RECORDED = recorded_inputs()


@dataclass(frozen=True)
class Case:
    config: dict[str, str]
    records: list[dict[str, Any]]
    expect: frozenset[str] | str
    """``refused`` (the transform refuses its options), or the outcomes mongocdc has over the records:
    ``written``, ``dropped``, ``error``."""
    contains: Sequence[bytes] = ()
    """Texts each of which some written key, value or header holds (for a refused case, the refusal)."""


def unwrap(options: Mapping[str, str] | None = None, *, values: bool = True, keys: bool = True) -> dict[str, str]:
    """A configuration with the transform (``options`` unprefixed) and the value/key converters' ``schemas.enable``."""
    config = {"transforms": "unwrap", "transforms.unwrap.type": UNWRAP}
    config.update({f"transforms.unwrap.{k}": v for k, v in (options or {}).items()})
    config["value.converter.schemas.enable"] = "true" if values else "false"
    config["key.converter.schemas.enable"] = "true" if keys else "false"
    return config


# --- records made from a recorded insert ------------------------------------------------------------------------

INSERT = next(r for r in RECORDED if r["topic"] == "dbz.inventory.ops" and '"op":"c"' in r["value"])


def event(
    after: str | None,
    *,
    before: str | None = None,
    updated: str | None = None,
    removed: list[str] | None = None,
    update: bool = False,
    key: str = "1",
    op: str = "c",
    schema_name: str | None = None,
    drop_field: str | None = None,
    key_field: tuple[str, str, Any] | None = None,
) -> dict[str, Any]:
    """:data:`INSERT` with other documents (``update``: an ``updateDescription`` of ``updated``/``removed``), key
    id (or ``key_field``: the key's only field, its type and value), op, value schema name, or without one of the
    envelope's fields."""
    value = json.loads(INSERT["value"])
    payload = value["payload"]
    payload.update(after=after, before=before, op=op, updateDescription=None)
    if update or updated is not None or removed is not None:
        payload["updateDescription"] = {"removedFields": removed, "updatedFields": updated, "truncatedArrays": None}
    if schema_name is not None:
        value["schema"]["name"] = schema_name
    if drop_field is not None:
        value["schema"]["fields"] = [f for f in value["schema"]["fields"] if f["field"] != drop_field]
        del payload[drop_field]
    record_key = json.loads(INSERT["key"])
    record_key["payload"]["id"] = key
    if key_field is not None:
        name, kind, key_value = key_field
        record_key["schema"]["fields"] = [{"type": kind, "optional": False, "field": name}]
        record_key["payload"] = {name: key_value}
    return {**INSERT, "key": json.dumps(record_key), "value": json.dumps(value)}


def documents(*texts: str) -> list[dict[str, Any]]:
    return [event(text) for text in texts]


SCALARS = documents(
    '{"_id": "scalars","oid": {"$oid": "65F0A1B2C3D4E5F6A7B80001"},"bool_true": true,"bool_false": false,'
    '"null": null,"date": {"$date": 1709210096789},"date_epoch": {"$date": 0},"date_before_1970": '
    '{"$date": -14182940000},"date_year_1": {"$date": -62135596800000},"date_far_future": {"$date": 253402300799999},'
    '"date_negative_ms": {"$date": -1},"regex": {"$regex": "^ab.*c$","$options": "xsmi"},"regex_empty": '
    '{"$regex": "","$options": ""},"javascript": {"$code": "function () { return 1; }"},"timestamp": '
    '{"$timestamp": {"t": 1700000000,"i": 42}},"timestamp_zero": {"$timestamp": {"t": 0,"i": 0}},'
    '"timestamp_high": {"$timestamp": {"t": 4294967295,"i": 4294967295}},"undefined": {"$undefined": true},'
    '"after_undefined": 1,"lone_surrogate": "a\\ud800b"}'
)
EXTENDED = documents(
    '{"_id": 7,"i": {"$numberInt": "-5"},"l": {"$numberLong": "+5"},"d": {"$numberDouble": "1.5"},'
    '"dn": {"$numberDouble": "-Infinity"},"dnan": {"$numberDouble": "NaN"},"dexp": {"$numberDouble": "1E3"},'
    '"dec": {"$numberDecimal": "-0.000"},"dec_nan": {"$numberDecimal": "-NaN"},"dec_inf": {"$numberDecimal": "Inf"},'
    '"dt1": {"$date": "2023-05-06T07:08:09.123Z"},"dt2": {"$date": {"$numberLong": "-1"}},'
    '"dt3": {"$date": "2020-02-29T23:00:00+02:00"},"dt4": {"$date": "1969-12-31"},'
    '"dt5": {"$date": "2020-01-01T00:00Z"},'
    '"bin1": {"$binary": {"base64": "AQID","subType": "80"}},'
    '"bin2": {"$binary": {"subType": "04","base64": "D4+tW9nLRp+hZXCGdyiVDg=="}},'
    '"bin3": {"$type": "00","$binary": "AQID"},"bin4": {"$binary": "AQ","$type": 5},'
    '"uuid": {"$uuid": "0f8fad5b-d9cb-469f-a165-70867728950e"},'
    '"re1": {"$regularExpression": {"options": "mi","pattern": "x+"}},"re2": {"$options": "si","$regex": "y"},'
    '"big": 2147483648,"neg": -2147483649,"exp": 1e3,"frac": 0.5,"negzero": -0,'
    '"dbref": {"$ref": "c","$id": 1},"typeq": {"$type": "string"},"regexq": {"$regex": 5},'
    '"binq": {"$binary": 5,"$type": "00"},"optq": {"$options": "i"},"dollar": {"$foo": 1},"dup": 1,"dup": "two"}'
)
FAILING = documents(
    '{"_id": 1,"s": {"$symbol": "sym"}}',
    '{"_id": 1,"p": {"$dbPointer": {"$ref": "c","$id": {"$oid": "65f0a1b2c3d4e5f6a7b80001"}}}}',
    '{"_id": 1,"m": {"$maxKey": 1}}',
    '{"_id": 1,"": 1}',
    '{"_id": 1,"js": {"$code": "x","$scope": {}}}',
    '{"_id": 1,"bad": {"$oid": "nothex"}}',
    '{"_id": 1,"bad": {"$date": 1.5}}',
    '{"_id": 1,"bad": {"$binary": {"base64": "AQ==","subType": "zz"}}}',
    '{"_id": 1,',
    '{"_id": 1,"big": 9223372036854775808}',
)
ARRAY_DOCUMENTS = [
    '{"_id": 1,"a": [1,2,3]}',
    '{"_id": 1,"a": ["x",null]}',
    '{"_id": 1,"a": [null]}',
    '{"_id": 1,"a": [1,null]}',
    '{"_id": 1,"a": [1,"x"]}',
    '{"_id": 1,"a": []}',
    '{"_id": 1,"a": [[1,2],[3]]}',
    '{"_id": 1,"a": [[1],[1]]}',
    '{"_id": 1,"a": [[]]}',
    '{"_id": 1,"a": [[[1]]]}',
    '{"_id": 1,"a": [{"x": 1},{"y": "s"}]}',
    '{"_id": 1,"a": [{"x": {"p": 1}},{"x": {"q": 1}}]}',
    '{"_id": 1,"a": [{"x": {"p": 1}},{"x": {"p": 2}}]}',
    '{"_id": 1,"a": [{"x": 1},{"x": null}]}',
    '{"_id": 1,"a": [{"x": 1},{"x": {"p": 1}}]}',
    '{"_id": 1,"a": [{"x": {"p": 1}},{"x": 1}]}',
    '{"_id": 1,"a": [{"x": 1},5]}',
    '{"_id": 1,"a": [[{"x": 1}],[{"x": 2}]]}',
    '{"_id": 1,"a": [1.5,2]}',
    '{"_id": 1,"a": [{"$date": 1},{"$date": 2}]}',
    '{"_id": 1,"a": [{"$regex": "a","$options": ""}]}',
    '{"_id": 1,"a": [{"r": {"$regex": "a","$options": ""}}]}',
    '{"_id": 1,"a": [{"$oid": "65f0a1b2c3d4e5f6a7b80001"},"s",{"$numberDecimal": "1.0"}]}',
    '{"_id": 1,"d": {"e": {"f": [{"g": [1,2]},{"g": [3]}]}}}',
    '{"_id": 1,"ps": [1,2]}',
    '{"_id": 1,"dims": {"dims": [1,2]}}',
    '{"_id": 1,"a": [{"x": []},{"x": [1]}]}',
    '{"_id": 1,"a": [{"x": {}},{"y": {}}]}',
    '{"_id": 1,"a": [[1,"a"],[2]]}',
    '{"_id": 1,"a": [{}]}',
    '{"_id": 1,"a": [{"$binary": "AQ==","$type": "00"},{"$binary": "Ag==","$type": "00"}]}',
    '{"_id": 1,"a": [true,false]}',
    '{"_id": 1,"a": [{"x": 1,"y": [{"z": 1}]},{"x": 2,"y": [{"z": 2}]}]}',
    '{"_id": 1,"a": [{"x": {"$numberLong": "1"}},{"x": {"$numberLong": "2"}}]}',
    '{"_id": 1,"a": [[1],[{"$numberLong": "2"}]]}',
    '{"_id": 1,"a": [{"x": {"p": 1}},{"x": {"p": {"$numberLong": "1"}}}]}',
    '{"_id": 1,"a": [5,[6]]}',
    '{"_id": 1,"a": [{"x": 1}]}',
    '{"_id": 1,"a": [[1],[2],[1]]}',
    '{"_id": 1,"a": [{"k": [1]},{"k": [2]}]}',
    '{"_id": 1,"a": [{"k": {"m": [1]}}]}',
    '{"_id": 1,"a": [[[]]]}',
    '{"_id": 1,"a": [{"$timestamp": {"t": 1,"i": 2}}]}',
    '{"_id": 1,"a": [{"$minKey": 1}]}',
]
ARRAYS = documents(*ARRAY_DOCUMENTS)
DEEP = documents(
    '{"_id": 1,"l1": {"l2": {"l3": {"l4": {"l5": {"v": 1,"w": [1,2],"x": {},"y": {"$date": 5}}}}}},"z": {}}'
)
NAMES = documents(
    '{"_id": 1,"a-b": 1,"1abc": 2,"\\u00e9": 3,"a.b": 4,"_x": 5,"$x": 6,"emoji\\ud83d\\ude00": 7,'
    '"sub": {"c-d": {"e f": 1}},"arr": [{"g-h": 1}],"nums": [[1],[2]],"empty": [],"empty_doc": {"x": []}}'
)
NAMES += [
    event('{"_id": 1}', schema_name="dbz.in-ventory.10019_AutoState.Envelope"),
    event('{"_id": 1}', schema_name="dbz.inventory.ops..Envelope"),
]
CLASH_AVRO = documents('{"_id": 1,"a b": 1,"a-b": 2}', '{"_id": 1,"a b": 1,"a-b": 2}')
CLASH_UNICODE = documents('{"_id": 1,"\\u00010": 1,"\\u0010": 2}', '{"_id": 1,"\\u00010": 1,"\\u0010": 2}')
FLATTEN_CLASH = documents('{"_id": 1,"a_b": 1,"a": {"b": 2}}', '{"_id": 1,"a": {"b": 2},"c": [{"d": 1}]}')
UPDATES = [
    event(None, updated='{"name": "gadget", "dims.w": 2.0, "tags.1": "B", "added": {"k": [1]}}', op="u"),
    event(None, updated="{}", removed=["dims.unit", "old"], op="u"),
    event(None, updated='{"a.b": 1, "a_b": 2, "c.d": 3}', removed=["a_b"], op="u"),
    event(None, updated='{"_id": 5, "x": 1}', op="u"),
    event(None, removed=["x"], op="u"),
    event(None, updated='{"arr.0": {"$numberLong": "5"}, "n": {"$date": "2023-05-06T07:08:09.123Z"}}', op="u"),
    event(None, update=True, op="u"),
]
DELETES = [
    event(None, op="d"),
    event(None, before='{"_id": 1,"x": {"y": 1}}', op="d"),
    event(None, before='{"x": 1}', op="d"),
]
NOT_MONGODB = [
    event('{"_id": 1}', schema_name="dbz.inventory.ops.Value"),
    event('{"_id": 1}', drop_field="updateDescription"),
    event('{"_id": 1}', drop_field="after"),
    event(None, before='{"_id": 1}', op="d", drop_field="before"),
    *(
        {**INSERT, "value": json.dumps({"schema": {"type": "string", "optional": False, "name": name}, "payload": "x"})}
        for name in ("dbz.inventory.ops.Envelope", "dbz.inventory.ops.Text")
    ),
    {**event('{"_id": 1}'), "timestamp": 1795624612302, "partition": 3},
]
KEYS = [
    event('{"_id": 1}', key='{"$date": {"$numberLong": "-1"}}'),
    event('{"_id": 1}', key='{"$date": "2023-05-06T07:08:09Z"}'),
    event('{"_id": 1}', key='"a\\u0000b"'),
    event('{"_id": 1}', key='{"a": [1, 2], "b": {"c": []}}'),
    event('{"_id": 1}', key="[1, 2]"),
    event('{"_id": 1}', key="1.0E300"),
    event('{"_id": 1}', key="-0.0"),
    event('{"_id": 1}', key='{"$numberDecimal": "NaN"}'),
    event('{"_id": 1}', key='{"$undefined": true}'),
    event('{"_id": 1}', key='{"$regularExpression": {"pattern": "a", "options": "xi"}}'),
    event('{"_id": 1}', key='{"$timestamp": {"t": 1, "i": 2}}'),
    event('{"_id": 1}', key="not json"),
    event('{"_id": 1}', key_field=("id", "int32", 5)),
    event('{"_id": 1}', key_field=("_id", "string", "1")),
]
MADE = [*SCALARS, *EXTENDED, *ARRAYS, *DEEP, *NAMES, *UPDATES, *DELETES, *NOT_MONGODB, *KEYS]
DATA = [r for r in RECORDED if r["topic"].startswith("dbz.inventory.")]
OPS = recorded_inputs("dbz.inventory.ops")

W, D, E = "written", "dropped", "error"


Swept = tuple[str, dict[str, str], list[dict[str, Any]], frozenset[str], tuple[bytes, ...]]


def _swept() -> Iterator[Swept]:
    """Cases run with the value converter's schemas on and off: name, options, records, outcomes, texts."""
    everything = frozenset({W, D, E})
    no_drop = frozenset({W, E})
    yield "recorded", {}, RECORDED, everything, (b'"name":"gadget"', b'"kind":"uuid"')
    yield "recorded-document-arrays", {"array.encoding": "document"}, RECORDED, everything, ()
    yield "recorded-flatten", {"flatten.struct": "true"}, RECORDED, everything, (b'"dims_w"',)
    both = {"flatten.struct": "true", "array.encoding": "document"}
    yield "recorded-flatten-document-arrays", both, RECORDED, everything, (b'"tags__0"',)
    for mode in ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"):
        mark = (b'"__deleted":true',) if mode.startswith("rewrite") else ()
        outcomes = no_drop if mode == "rewrite-with-tombstone" else everything
        yield f"recorded-delete-{mode}", {"delete.tombstone.handling.mode": mode}, DATA, outcomes, mark
    yield "recorded-avro", {"field.name.adjustment.mode": "avro"}, RECORDED, everything, (b"cl___n_code",)
    yield "recorded-avro-unicode", {"field.name.adjustment.mode": "avro_unicode"}, RECORDED, everything, (b"_u005fid",)
    fields = "op,ts_ms,source.ts_ms,db,collection,id,total_order,data_collection_order,snapshot"
    yield "recorded-add-fields", {"add.fields": fields}, RECORDED, everything, (b'"__source_ts_ms"', b'"__total_order"')
    headers = {"add.headers": "op,db,source.collection,total_order,ts_ms", "add.headers.prefix": "h_"}
    yield "recorded-add-headers", headers, RECORDED, everything, (b"h_source_collection",)
    made: list[tuple[str, dict[str, str], bytes]] = [
        ("", {}, b'"regex":{"regex":"^ab.*c$","options":"imsx"}'),
        ("-document-arrays", {"array.encoding": "document"}, b'"_1"'),
        ("-flatten", {"flatten.struct": "true"}, b'"regex_options"'),
        ("-flatten-document-arrays", both, b'"a__0"'),
        ("-rewrite", {"delete.tombstone.handling.mode": "rewrite"}, b'"__deleted":false'),
        ("-avro", {"field.name.adjustment.mode": "avro"}, b'"_1abc"'),
        (
            "-avro-unicode-documents",
            {"field.name.adjustment.mode": "avro_unicode", "array.encoding": "document"},
            b"_u005fid",
        ),
    ]
    for name, options, text in made:
        yield "made" + name, options, MADE, no_drop, (text,)
    yield "failing", {}, FAILING, frozenset({E}), ()
    yield "failing-document-arrays", {"array.encoding": "document"}, FAILING, frozenset({E}), ()


def _cases() -> Iterator[tuple[str, Case]]:
    for values in (True, False):
        for name, options, records, expect, texts in _swept():
            yield name + ("" if values else "-no-schemas"), Case(unwrap(options, values=values), records, expect, texts)


def _single_cases() -> Iterator[tuple[str, Case]]:
    """Options and corners checked once (values with schemas; a few with keys or values schemaless)."""
    everything = frozenset({W, D, E})
    written = frozenset({W})
    dropped_or_written = frozenset({W, D})

    def case(options: dict[str, str], records: list[dict[str, Any]], expect: Any, *text: bytes, **kw: bool) -> Case:
        return Case(unwrap(options, **kw), records, expect, text)

    yield "keys-schemaless", case({}, DATA, everything, b'{"id":1}', keys=False)
    yield "keys-and-values-schemaless", case({}, DATA, everything, b'"name":"gadget"', keys=False, values=False)
    yield "made-keys-document-arrays", case({"array.encoding": "document"}, KEYS, frozenset({W, E}), b'"null.id.a"')
    yield "clash-avro", case({"field.name.adjustment.mode": "avro"}, CLASH_AVRO, written, b'"a_b":2')
    yield (
        "clash-avro-unicode",
        case({"field.name.adjustment.mode": "avro_unicode"}, CLASH_UNICODE, written, b'"_u0010":2'),
    )
    yield "flatten-clash", case({"flatten.struct": "true"}, FLATTEN_CLASH, frozenset({W, E}), b'"c":[{"d":1}]')
    # deletes, tombstones and the id
    yield (
        "rewrite-with-id",
        case(
            {"delete.tombstone.handling.mode": "rewrite", "delete.tombstone.handling.mode.rewrite-with-id": "true"},
            [*OPS, *DELETES],
            dropped_or_written,
            b'{"__deleted":true,"_id":1}',
        ),
    )
    yield (
        "rewrite-with-tombstone-with-id",
        case(
            {
                "delete.tombstone.handling.mode": "rewrite-with-tombstone",
                "delete.tombstone.handling.mode.rewrite-with-id": " TRUE ",
            },
            [*OPS, *DELETES, *UPDATES],
            written,
            b'"__deleted":true',
        ),
    )
    yield "tombstone-deletes-made", case({}, [*DELETES, *UPDATES], written, b'"x":1')
    # add.fields and add.headers: mapped names, prefixes, structs, fields that are not there
    yield (
        "add-fields-renamed",
        case(
            {
                "add.fields": " source.ts_ms:EVENT_TS , op:OP ,version,updateDescription.updatedFields",
                "add.fields.prefix": "",
            },
            [*DATA, *UPDATES],
            everything,
            b'"EVENT_TS"',
            b'"OP":"u"',
        ),
    )
    yield "add-fields-unknown", case({"add.fields": "op,nosuch"}, DATA, everything)
    yield "add-fields-empty-item", case({"add.fields": "op,,db"}, OPS, everything)
    yield "add-fields-struct", case({"add.fields": "source"}, OPS, everything)
    yield "add-fields-ts-us", case({"add.fields": "ts_us"}, OPS, everything)
    yield "add-fields-clash", case({"add.fields": "_id", "add.fields.prefix": ""}, OPS, everything)
    yield (
        "add-fields-flatten-rewrite",
        case(
            {
                "add.fields": "op,source.ts_ms,transaction.id",
                "delete.tombstone.handling.mode": "rewrite",
                "flatten.struct": "true",
                "flatten.struct.delimiter": ".",
            },
            [*DATA, *UPDATES],
            everything,
            b'"dims.w"',
            b'"__transaction_id"',
        ),
    )
    yield (
        "add-headers-structs",
        case(
            {"add.headers": "source,transaction,updateDescription,updateDescription.removedFields"},
            [*DATA, *UPDATES],
            everything,
            b"__updateDescription_removedFields",
        ),
    )
    yield (
        "add-headers-tombstones",
        case(
            {"add.headers": "op,source.op,db", "delete.tombstone.handling.mode": "rewrite-with-tombstone"},
            OPS,
            written,
            b"__source_op",
        ),
    )
    yield "add-headers-not-envelope", case({"add.headers": "op"}, NOT_MONGODB, frozenset({W, E}), b"__op")
    yield "add-headers-missing-struct", case({"add.headers": "nostruct.x"}, OPS, frozenset({D, E}))
    yield "add-headers-unknown", case({"add.headers": "op,nosuch"}, OPS, dropped_or_written, b"__op")
    # flatten.struct.delimiter: Flatten trims it, the renaming of an update's dotted names does not
    for name, delimiter in (("dot", "."), ("empty", ""), ("spaced", " - "), ("double", "__")):
        yield (
            f"flatten-delimiter-{name}",
            case(
                {"flatten.struct": "true", "flatten.struct.delimiter": delimiter},
                [*OPS, *UPDATES, *DEEP],
                dropped_or_written,
                f'"l1{delimiter.strip()}l2'.encode(),
            ),
        )
    # values as Debezium reads them: case and blanks, lenient booleans, options without effect, removed options
    yield (
        "options-case-and-blanks",
        case(
            {
                "delete.tombstone.handling.mode": " Rewrite ",
                "array.encoding": "DOCUMENT",
                "flatten.struct": " TRUE ",
                "field.name.adjustment.mode": " AVRO ",
            },
            [*OPS, *NAMES],
            dropped_or_written,
            b'"__deleted":true',
            b'"a_b":4',
        ),
    )
    yield (
        "options-without-effect",
        case(
            {
                "route.by.field": "op",
                "replace.null.with.default": "maybe",
                "delete.tombstone.handling.mode.rewrite-with-id": "yes",
                "delete.handling.mode": "rewrite",
                "drop.tombstones": "false",
                "sanitize.field.names": "true",
                "operation.header": "true",
            },
            DATA,
            everything,
            b'"name":"gadget"',
        ),
    )
    # options refused: the values Debezium validates ("Unable to validate config."), then add.fields/add.headers items
    for option, value in (
        ("delete.tombstone.handling.mode", "bogus"),
        ("delete.tombstone.handling.mode", ""),
        ("array.encoding", "list"),
        ("flatten.struct", "yes"),
        ("field.name.adjustment.mode", "avro2"),
    ):
        yield f"refused-{option}-{value or 'empty'}", case({option: value}, OPS[:1], REFUSED, option.encode())
    for option, item in (("add.fields", "a:b:c"), ("add.fields", ":"), ("add.headers", ".")):
        yield f"refused-{option}-{item}", case({option: item}, OPS[:1], REFUSED, f"field name: {item}".encode())
    yield (
        "realistic-sink",
        case(
            {
                "delete.tombstone.handling.mode": "rewrite",
                "add.fields": "op,source.ts_ms",
                "add.headers": "op",
                "flatten.struct": "true",
            },
            RECORDED,
            everything,
            b'"__op":"d"',
        ),
    )


CASES: dict[str, Case] = {**dict(_cases()), **dict(_single_cases())}


@pytest.fixture(scope="module")
def results() -> CaseResults:
    """Every case through Connect and mongocdc (one JVM run): the differences and what mongocdc wrote."""
    return run_cases({name: (case.config, case.records) for name, case in CASES.items()})


def _kinds(outcome: dict[str, Any]) -> frozenset[str] | str:
    if "error" in outcome:  # refused: the transform's ConnectConfigError, as the chain reports it
        error: str = outcome["error"]
        return REFUSED if error.startswith("ChainConfigError: transforms.unwrap.*: ") else error
    return frozenset(E if "error" in r else D if r.get("dropped") else W for r in outcome["records"])


def _written(outcome: dict[str, Any]) -> bytes:
    if "error" in outcome:
        return str(outcome["error"]).encode()
    parts: list[bytes] = []
    for r in outcome.get("records", ()):
        if "topic" in r:
            parts += [r["key"] or b"", r["value"] or b""]
            parts += [name.encode() + b"=" + (value or b"") for name, value in r["headers"]]
    return b"\n".join(parts)


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_debezium(name: str, results: CaseResults) -> None:
    assert results.differences[name][:5] == []
    case = CASES[name]
    outcome = results.outcomes[name]
    assert _kinds(outcome) == case.expect
    written = _written(outcome)
    assert [text for text in case.contains if text not in written] == []


# --- what the oracle cannot show --------------------------------------------------------------------------------


def test_a_refused_record_names_its_key_and_the_settings() -> None:
    outcome = mongocdc_case(unwrap({"array.encoding": "document"}), documents('{"_id": 1,"a": [1,{"b": 2}]}'))
    message = outcome["records"][0]["error"]
    assert "Cannot create field because of field name duplication _0" in message
    assert "array.encoding=document" in message and "Struct{id='1'}" in message


def test_documents_of_one_shape_share_one_schema_object() -> None:
    """The converters cache per schema object: equal schemas must be the same object, arrays or not."""
    transform = ExtractNewDocumentState({})
    pipeline = RecordPipeline.from_config(unwrap())
    texts = ['{"_id": 1,"a": {"b": "x"}}', '{"_id": 2,"a": {"b": "y"}}', '{"_id": 3,"c": [1]}', '{"_id": 4,"c": [2]}']
    records = [
        transform.apply(pipeline.record(r["topic"], r["key"].encode(), r["value"].encode())) for r in documents(*texts)
    ]
    schemas = [record.value_schema for record in records if record is not None]
    assert schemas[0] is schemas[1] and schemas[2] is schemas[3] and schemas[0] != schemas[2]
    assert records[0] is not None and records[0].value.get("a").get("b") == "x"
