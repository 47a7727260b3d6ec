"""Kafka Connect's built-in transforms and predicates (``mongocdc/events/connect/kafka_transforms.py``) against the
real Kafka Connect 4.3.1 classes.

Every case of :data:`CASES` runs through Connect (one JVM for the whole module, ``tests/oracle``) and through
mongocdc's chain; each test asserts that its case has no difference: the same topics, partitions, keys, values,
timestamps and headers byte for byte, the same configurations refused, the same records failing. The inputs are
the records the real Debezium MongoDB connector wrote, and a few made here for what those lack (every
primitive and logical type, maps, nested structs with defaults, schemaless maps, timestamps). The plain tests at
the end cover corners the oracle's inputs cannot reach (a null field with a default, which Connect's JSON reader
already replaces).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from mongocdc.events.connect import kafka_transforms as kt
from mongocdc.events.connect.base import ConnectConfigError
from mongocdc.events.connect.chain import RecordPipeline
from mongocdc.events.connect.data import (
    INT32,
    OPTIONAL_STRING,
    STRING,
    ConnectRecord,
    DataError,
    Schema,
    Struct,
    Type,
    map_schema,
    struct_schema,
)
from mongocdc.events.connect.java_lang import HashMap
from tests.oracle.recorded import recorded_inputs, run_cases

T = "org.apache.kafka.connect.transforms."
P = T + "predicates."
NO_SCHEMAS = {"value.converter.schemas.enable": "false"}


def chain(*stages: tuple[str, Mapping[str, str]], **extra: str) -> dict[str, str]:
    """A connector configuration with ``stages`` (class, options) as transforms ``t0``, ``t1``, …"""
    config: dict[str, str] = {"transforms": ",".join(f"t{i}" for i in range(len(stages)))}
    for i, (cls, options) in enumerate(stages):
        config[f"transforms.t{i}.type"] = T + cls
        config.update({f"transforms.t{i}.{k}": v for k, v in options.items()})
    config.update(extra)
    return config


def predicate(config: dict[str, str], alias: str, cls: str, negate: bool = False, **options: str) -> dict[str, str]:
    """``config`` with predicate ``alias`` (class ``cls``) guarding transform ``t0``."""
    config = dict(config)
    config["predicates"] = alias
    config[f"predicates.{alias}.type"] = P + cls
    config.update({f"predicates.{alias}.{k}": v for k, v in options.items()})
    config["transforms.t0.predicate"] = alias
    if negate:
        config["transforms.t0.negate"] = "true"
    return config


def envelope(schema: Any, payload: Any) -> str:
    return json.dumps({"schema": schema, "payload": payload}, separators=(",", ":"))


def record(topic: str, value: str | None, key: str | None = None, timestamp: int | None = None) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": None,
        "key": key,
        "value": value,
        "timestamp": timestamp,
        "headers": [["h1", "one"], ["h2", "two"], ["h1", "again"]],
    }


def field(field_name: str, kind: str, optional: bool = False, **more: Any) -> dict[str, Any]:
    return {"type": kind, "optional": optional, **more, "field": field_name}


DECIMAL = {"name": "org.apache.kafka.connect.data.Decimal", "version": 1, "parameters": {"scale": "2"}}
DATE = {"name": "org.apache.kafka.connect.data.Date", "version": 1}
TIME = {"name": "org.apache.kafka.connect.data.Time", "version": 1}
TIMESTAMP = {"name": "org.apache.kafka.connect.data.Timestamp", "version": 1}

RICH_SCHEMA = {
    "type": "struct",
    "name": "rich.Value",
    "version": 3,
    "doc": "every type",
    "parameters": {"p": "v"},
    "optional": False,
    "fields": [
        field("i8", "int8"),
        field("i16", "int16", True, default=7),
        field("i32", "int32"),
        field("i64", "int64", True),
        field("f32", "float"),
        field("f64", "double", True),
        field("flag", "boolean"),
        field("s", "string", True, default="dflt"),
        field("num", "string"),
        field("b", "bytes", True),
        field("dec", "bytes", **DECIMAL),
        field("day", "int32", True, **DATE),
        field("tod", "int32", True, **TIME),
        field("ts", "int64", **TIMESTAMP),
        field("when", "string", True),
        field("arr", "array", True, items={"type": "int32", "optional": False}),
        field("m", "map", True, keys={"type": "string", "optional": False}, values={"type": "int32", "optional": True}),
        field(
            "nested",
            "struct",
            True,
            name="rich.Nested",
            fields=[
                field("x", "int32", default=5),
                field("y", "struct", fields=[field("z", "string", True), field("w", "int64", True)]),
            ],
        ),
        field("req", "struct", fields=[field("a", "string"), field("c", "double", True)]),
        field("epoch_s", "int64"),
        field("epoch_us", "int64"),
        field("epoch_ns", "int64", True),
    ],
}
RICH_KEY = envelope({"type": "struct", "fields": [field("id", "int64")], "optional": False}, {"id": 42})


def rich(number: int, **payload: Any) -> dict[str, Any]:
    base = {
        "i8": -5,
        "i16": 300,
        "i32": 70000,
        "i64": 1795624612476,
        "f32": 1.1,
        "f64": 2.5e-7,
        "flag": True,
        "s": "text",
        "num": "123",
        "b": "AAEC/w==",
        "dec": "MDk=",
        "day": 19787,
        "tod": 45296789,
        "ts": 1709210096789,
        "when": "2024-03-05 10:11:12",
        "arr": [1, 2, 3],
        "m": {"a": 1, "b": None},
        "nested": {"x": 2, "y": {"z": "deep", "w": 11}},
        "req": {"a": "A", "c": 0.1},
        "epoch_s": 1709210096 + number,
        "epoch_us": -1709210096789123 + number,
        "epoch_ns": 1709210096789123456 + number,
    }
    base.update(payload)
    return record("rich.topic", envelope(RICH_SCHEMA, base), RICH_KEY, timestamp=1709210096789 + number)


RICH = [
    rich(0),
    rich(1, i16=None, s=None, i64=None, f64=None, b=None, day=None, tod=None, arr=None, m=None, nested=None),
    rich(2, i8=127, i32=-1, f32=-3.4028235e38, f64=1e300, flag=False, num="-17", ts=-62135596800000, day=-1),
    rich(
        3,
        i64=16777217,
        f32=16777217.0,
        f64=-0.0,
        num=" 12 ",
        ts=0,
        when="1969-12-31 23:59:59",
        dec="/w==",
        epoch_ns=None,
    ),
]
RICH_TOMBSTONE = record("rich.topic", None, RICH_KEY, timestamp=5)


def schemaless(entries: Sequence[tuple[str, Any]]) -> str:
    """A schemaless value whose JSON order is the order Java's reader (a default ``HashMap``) iterates it in."""
    table = HashMap()
    for name, value in entries:
        table.put(name, value)
    return envelope(None, table.to_dict())


SCHEMALESS = [
    record(
        "plain.topic",
        schemaless(
            [
                ("id", 7),
                ("name", "seven"),
                ("ratio", 0.75),
                ("ok", True),
                ("when", "2024-01-02"),
                ("at", 1704153600123),
                ("inner", HashMap.copy_of({"k": 1, "v": "x"}).to_dict()),
                ("list", [1, "a"]),
                ("nothing", None),
            ]
        ),
        envelope({"type": "string", "optional": False}, "k1"),
        timestamp=1704153600123,
    ),
    record("plain.topic", None, envelope({"type": "string", "optional": False}, "k2"), timestamp=7),
]

PRIMITIVE_KEYS = [
    record(
        "prim.topic",
        envelope({"type": "int64", "optional": False}, 1795624612476),
        envelope({"type": "string", "optional": True}, "2024-03-05T10:11:12"),
        timestamp=1,
    ),
    record(
        "prim.topic",
        envelope({"type": "int64", "optional": True, **TIMESTAMP}, 1709210096789),
        envelope({"type": "string", "optional": True}, None),
        timestamp=2,
    ),
]


def timed(records: Sequence[Mapping[str, Any]], start: int = 1795624612476) -> list[dict[str, Any]]:
    """``records`` with timestamps (Connect's SourceRecords from Debezium carry none)."""
    return [{**r, "timestamp": start + 3_600_000 * 7 * i} for i, r in enumerate(records)]


ALL = recorded_inputs()
DATA = [r for r in ALL if r["topic"].startswith("dbz.inventory.") and r["value"] is not None]
SOME = ALL[::5]
TYPES = recorded_inputs("dbz.inventory.types")
TXN = recorded_inputs("dbz.transaction")
HEARTBEATS = recorded_inputs("__debezium-heartbeat")

CASES: dict[str, tuple[dict[str, str], list[dict[str, Any]]]] = {}


def case(name: str, config: dict[str, str], records: Sequence[Mapping[str, Any]]) -> None:
    assert name not in CASES
    CASES[name] = (config, [dict(r) for r in records])


def refused(name: str, cls: str, **options: str) -> None:
    """A configuration Connect refuses (mongocdc must refuse it too)."""
    case(f"refused-{name}", chain((cls, options)), HEARTBEATS[:1])


# --- RegexRouter
case("regex-router", chain(("RegexRouter", {"regex": r"dbz\.inventory\.(.*)", "replacement": "mongo_$1"})), SOME)
case(
    "regex-router-groups",
    chain(("RegexRouter", {"regex": r"(?<db>[a-z]+)\.(\w+)\.(.*)", "replacement": r"${db}-$3-\$$2$10"})),
    SOME,
)
case("regex-router-first-match", chain(("RegexRouter", {"regex": "d|dbz.*", "replacement": "X"})), SOME)
case("regex-router-no-group", chain(("RegexRouter", {"regex": "dbz.*", "replacement": "$2"})), SOME)
case("regex-router-dangling-dollar", chain(("RegexRouter", {"regex": "dbz.*", "replacement": "a$"})), SOME)
refused("regex-router-bad-regex", "RegexRouter", regex="dbz(", replacement="x")
refused("regex-router-no-replacement", "RegexRouter", regex="dbz")

# --- TimestampRouter
case("timestamp-router-default", chain(("TimestampRouter", {})), timed(SOME))
case(
    "timestamp-router-format",
    chain(
        (
            "TimestampRouter",
            {
                "topic.format": "${timestamp}/${topic}/${topic}",
                "timestamp.format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX G E EEEE MMM MMMM a h k K D w W F u z Z yy YYYY",
            },
        )
    ),
    timed(SOME) + timed(SOME[:3], start=-62135596800000) + timed(SOME[:2], start=-1),
)
case("timestamp-router-no-timestamp", chain(("TimestampRouter", {})), SOME[:3])
case("timestamp-router-bad-pattern", chain(("TimestampRouter", {"timestamp.format": "yyyyq"})), timed(SOME[:2]))

# --- InsertField
case(
    "insert-field-value",
    chain(
        (
            "InsertField$Value",
            {
                "topic.field": "topic!",
                "partition.field": "part",
                "timestamp.field": "stamp?",
                "static.field": "origin",
                "static.value": "mongocdc",
            },
        )
    ),
    timed(ALL),
)
case(
    "insert-field-key-no-timestamp",
    chain(("InsertField$Key", {"topic.field": "t", "timestamp.field": "stamp!"})),
    SOME,
)
case(
    "insert-field-required-partition",
    chain(("InsertField$Value", {"partition.field": "p!"})),
    HEARTBEATS[:2] + TXN[:2],
)
case("insert-field-offset", chain(("InsertField$Value", {"offset.field": "offset"})), SOME)
case("insert-field-duplicate", chain(("InsertField$Value", {"topic.field": "op"})), DATA[:3])
case(
    "insert-field-no-defaults",
    chain(
        (
            "InsertField$Value",
            {"topic.field": "t"},
        ),
        **NO_SCHEMAS,
    )
    | {"transforms.t0.replace.null.with.default": "false"},
    RICH,
)
refused("insert-field-nothing", "InsertField$Value", **{"static.value": "x"})
refused("insert-field-static-without-value", "InsertField$Value", **{"static.field": "s"})
refused("insert-field-bad-boolean", "InsertField$Value", **{"topic.field": "t", "replace.null.with.default": "yes"})

# --- ReplaceField
case(
    "replace-field-exclude-rename",
    chain(("ReplaceField$Value", {"exclude": "before,updateDescription", "renames": "after:document,op:operation"})),
    ALL,
)
case("replace-field-include", chain(("ReplaceField$Value", {"include": "op, ts_ms ,source,nothing"})), ALL)
case(
    "replace-field-include-exclude",
    chain(("ReplaceField$Value", {"include": "i8,s,dec", "exclude": "s", "replace.null.with.default": "false"})),
    RICH,
)
case("replace-field-swap", chain(("ReplaceField$Key", {"renames": "id:key"})), SOME)
case("replace-field-rename-clash", chain(("ReplaceField$Value", {"renames": "op:ts_ms"})), DATA[:3])
case("replace-field-old-names", chain(("ReplaceField$Value", {"whitelist": "op", "blacklist": "after"})), DATA[:3])
case("replace-field-trailing-colon", chain(("ReplaceField$Value", {"renames": "op:x:"})), DATA[:3])
refused("replace-field-bad-rename", "ReplaceField$Value", renames="op")
refused("replace-field-three-parts", "ReplaceField$Value", renames="a:b:c")

# --- MaskField
case("mask-field-defaults", chain(("MaskField$Value", {"fields": "after,op,ts_ms,nothing"})), DATA)
case(
    "mask-field-rich",
    chain(("MaskField$Value", {"fields": "i8,i16,i32,i64,f32,f64,flag,s,num,dec,day,tod,ts,arr,m"})),
    RICH,
)
case("mask-field-bytes", chain(("MaskField$Value", {"fields": "b"})), RICH)
case("mask-field-struct", chain(("MaskField$Value", {"fields": "source"})), DATA[:2])
case(
    "mask-field-replacement",
    chain(("MaskField$Value", {"fields": "i8,i16,i32,i64,f32,f64,s,num,dec", "replacement": "12.345"})),
    RICH,
)
case("mask-field-replacement-int", chain(("MaskField$Value", {"fields": "i8,i16,i32,i64", "replacement": "300"})), RICH)
case("mask-field-replacement-text", chain(("MaskField$Value", {"fields": "i32", "replacement": "abc"})), RICH)
case("mask-field-replacement-boolean", chain(("MaskField$Value", {"fields": "flag", "replacement": "1"})), RICH)
case("mask-field-key", chain(("MaskField$Key", {"fields": "id", "replacement": "***"})), SOME)
case("mask-field-tombstone", chain(("MaskField$Value", {"fields": "op"})), ALL[:12])
case(
    "mask-field-schemaless",
    chain(("MaskField$Value", {"fields": "id,name,ratio,ok,list,inner,missing", "replace.null.with.default": "false"})),
    SCHEMALESS[:1],
)
refused("mask-field-empty", "MaskField$Value", fields="")
refused("mask-field-missing", "MaskField$Value")
refused("mask-field-empty-replacement", "MaskField$Value", fields="a", replacement=" ")

# --- ValueToKey
case("value-to-key", chain(("ValueToKey", {"fields": "op,ts_ms,source"})), DATA)
case(
    "value-to-key-heartbeat",
    chain(("ValueToKey", {"fields": "ts_ms", "replace.null.with.default": "false"})),
    HEARTBEATS,
)
case("value-to-key-missing", chain(("ValueToKey", {"fields": "op,nothing"})), DATA[:3])
case("value-to-key-tombstone", chain(("ValueToKey", {"fields": "op"})), ALL[:12])
case("value-to-key-schemaless", chain(("ValueToKey", {"fields": "name,id,missing,ok"})), SCHEMALESS[:1])
refused("value-to-key-empty", "ValueToKey", fields=" ")

# --- ExtractField
case("extract-field-value", chain(("ExtractField$Value", {"field": "after"})), ALL)
case("extract-field-key", chain(("ExtractField$Key", {"field": "id"})), ALL)
case("extract-field-unknown", chain(("ExtractField$Value", {"field": "nothing"})), SOME)
case(
    "extract-field-nested-v2",
    chain(("ExtractField$Value", {"field": "source.collection", "field.syntax.version": "v2"})),
    DATA,
)
case(
    "extract-field-nested-v1",
    chain(("ExtractField$Value", {"field": "source.collection", "field.syntax.version": "V1"})),
    DATA[:3],
)
case(
    "extract-field-nested-rich",
    chain(("ExtractField$Value", {"field": "nested.y.z", "field.syntax.version": "V2"})),
    RICH,
)
case(
    "extract-field-through-primitive",
    chain(("ExtractField$Value", {"field": "op.x", "field.syntax.version": "V2"})),
    DATA[:2],
)
case(
    "extract-field-schemaless",
    chain(("ExtractField$Value", {"field": "inner.k", "field.syntax.version": "V2"})),
    SCHEMALESS,
)
case("extract-field-schemaless-top", chain(("ExtractField$Value", {"field": "name"}), **NO_SCHEMAS), SCHEMALESS)
case(
    "extract-field-backticks",
    chain(("ExtractField$Value", {"field": "`source`.`db`", "field.syntax.version": "V2"})),
    DATA[:3],
)
refused("extract-field-bad-version", "ExtractField$Value", field="a", **{"field.syntax.version": "V3"})
refused("extract-field-open-backtick", "ExtractField$Value", field="`a.b", **{"field.syntax.version": "V2"})
refused("extract-field-missing", "ExtractField$Value")

# --- HoistField
case("hoist-field-value", chain(("HoistField$Value", {"field": "wrapped"})), ALL)
case("hoist-field-key", chain(("HoistField$Key", {"field": "k"}), **NO_SCHEMAS), SOME)
case(
    "hoist-field-key-no-key-schemas",
    chain(("HoistField$Key", {"field": "k"}), **{"key.converter.schemas.enable": "false"}),
    SOME + PRIMITIVE_KEYS,
)
case("hoist-field-empty-name", chain(("HoistField$Value", {"field": ""})), SOME[:4])

# --- Cast
case(
    "cast-fields",
    chain(
        (
            "Cast$Value",
            {"spec": "i8:string,i16:int8,i32:int16,i64:int32,f32:float64,f64:int32,flag:int64,s:boolean"},
        )
    ),
    RICH,
)
case(
    "cast-fields-more",
    chain(("Cast$Value", {"spec": "num:int32,dec:float64,day:int64,tod:string,ts:int32,b:string,when:float32"})),
    RICH,
)
case("cast-fields-logical-strings", chain(("Cast$Value", {"spec": "day:string,ts:string,dec:string,f32:string"})), RICH)
case("cast-number-strings", chain(("Cast$Value", {"spec": "num:float32,when:boolean,f64:string"})), RICH)
case(
    "cast-long-to-float32",
    chain(("Cast$Value", {"spec": "i64:float32,i32:float32,epoch_s:float64"})),
    RICH[1:2] + RICH[3:],
)
case("cast-struct-field", chain(("Cast$Value", {"spec": "req:string"})), RICH)
case("cast-bytes-to-int", chain(("Cast$Value", {"spec": "b:int8"})), RICH)
case("cast-debezium", chain(("Cast$Value", {"spec": "ts_ms:string,op:boolean"})), ALL)
case(
    "cast-whole-key",
    chain(("ExtractField$Value", {"field": "ts_ms"}), ("Cast$Value", {"spec": "string"}), **NO_SCHEMAS),
    HEARTBEATS,
)
case("cast-whole-struct", chain(("Cast$Key", {"spec": "int32"})), SOME[:3])
case(
    "cast-whole-primitives",
    chain(("Cast$Key", {"spec": "int8"}), ("Cast$Value", {"spec": "float32"})),
    PRIMITIVE_KEYS,
)
case(
    "cast-whole-logical",
    chain(("Cast$Value", {"spec": "string"})),
    PRIMITIVE_KEYS,
)
case(
    "cast-schemaless",
    chain(("Cast$Value", {"spec": "id:string,ratio:int8,ok:float64,name:boolean,add:int32"})),
    SCHEMALESS,
)
for target in ("int32", "int8", "float64", "boolean", "string"):
    case(
        f"cast-schemaless-whole-{target}",
        chain(("ExtractField$Value", {"field": "at"}), ("Cast$Value", {"spec": target})),
        SCHEMALESS,
    )
refused("cast-empty", "Cast$Value", spec="")
refused("cast-bad-type", "Cast$Value", spec="a:int128")
refused("cast-to-bytes", "Cast$Value", spec="a:bytes")
refused("cast-two-wholes", "Cast$Value", spec="int8,a:int16")
refused("cast-three-parts", "Cast$Value", spec="a:int8:x")
refused("cast-colon", "Cast$Value", spec=":")

# --- Flatten
case("flatten-value", chain(("Flatten$Value", {})), ALL)
case("flatten-delimiter", chain(("Flatten$Value", {"delimiter": "__"}), ("Flatten$Key", {"delimiter": "_"})), SOME)
case("flatten-rich-map", chain(("Flatten$Value", {})), RICH[:1])
case(
    "flatten-rich",
    chain(("ReplaceField$Value", {"exclude": "m"}), ("Flatten$Value", {"delimiter": "/"})),
    RICH,
)
case("flatten-schemaless", chain(("Flatten$Value", {"delimiter": "-"})), SCHEMALESS)

# --- HeaderFrom
case(
    "header-from-copy",
    chain(("HeaderFrom$Value", {"fields": "op,source,ts_ms", "headers": "op,src,h1", "operation": "copy"})),
    DATA,
)
case(
    "header-from-move",
    chain(("HeaderFrom$Value", {"fields": "after,op", "headers": "doc,operation", "operation": "move"})),
    DATA,
)
case(
    "header-from-key",
    chain(("HeaderFrom$Key", {"fields": "id", "headers": "key-id", "operation": "move"})),
    SOME,
)
case(
    "header-from-rich",
    chain(
        (
            "HeaderFrom$Value",
            {
                "fields": "i8,f32,f64,dec,day,tod,ts,b,arr,m,nested,flag",
                "headers": "a,b,c,d,e,f,g,h,i,j,k,l",
                "operation": "copy",
            },
        )
    ),
    RICH,
)
case(
    "header-from-missing-field",
    chain(("HeaderFrom$Value", {"fields": "nothing", "headers": "x", "operation": "copy"})),
    DATA[:2],
)
case(
    "header-from-schemaless",
    chain(("HeaderFrom$Value", {"fields": "id,inner,gone", "headers": "i,n,g", "operation": "move"})),
    SCHEMALESS[:1],
)
case(
    "header-from-null-required",
    chain(("HeaderFrom$Value", {"fields": "event_count", "headers": "n", "operation": "copy"})),
    TXN,
)
refused("header-from-mismatch", "HeaderFrom$Value", fields="a,b", headers="x", operation="copy")
refused("header-from-operation", "HeaderFrom$Value", fields="a", headers="x", operation="Move")
refused("header-from-no-operation", "HeaderFrom$Value", fields="a", headers="x")

# --- InsertHeader
LITERALS = [
    "plain text",
    "",
    "42",
    "-129",
    "70000",
    "12345678901",
    "123456789012345678901234",
    "1.5",
    "0.1",
    "3.14159265358979",
    "1e40",
    "-1.0",
    "true",
    " false ",
    "null",
    "true}",
    "[1, 2, 300]",
    "[1, 2.5]",
    "[1, null]",
    '["a", 1]',
    "[true, false]",
    "[]",
    "[1,,2]",
    "[1, 2",
    '{"a": 1, "b": 2}',
    '{"a": 1, "b": "x"}',
    '{"k": null}',
    "{1: 2, 3: 4}",
    "{}",
    "{a:1}",
    "2024-03-05",
    "12:34:56.789Z",
    "2024-03-05T12:34:56.789Z",
    '["2024-03-05", "x"]',
    '"quoted"',
    "a,b",
    "  spaced  ",
    "12abc",
    "+5",
]
for number, literal in enumerate(LITERALS):
    case(f"insert-header-{number}", chain(("InsertHeader", {"header": "lit", "value.literal": literal})), ALL[:2])
refused("insert-header-no-literal", "InsertHeader", header="h")
refused("insert-header-no-header", "InsertHeader", **{"value.literal": "x"})

# --- DropHeaders
case("drop-headers", chain(("DropHeaders", {"headers": "__debezium.context.taskId, h1"})), SOME + RICH[:1])
case(
    "drop-headers-after-insert",
    chain(("InsertHeader", {"header": "x", "value.literal": "1"}), ("DropHeaders", {"headers": "x,nothing"})),
    SOME,
)
refused("drop-headers-empty", "DropHeaders", headers="")

# --- SetSchemaMetadata
case("set-schema-name-version", chain(("SetSchemaMetadata$Value", {"schema.name": "n.V", "schema.version": "9"})), ALL)
case("set-schema-key-name", chain(("SetSchemaMetadata$Key", {"schema.name": "k"})), SOME)
case(
    "timestamp-converter-millis-to-seconds",
    chain(("TimestampConverter$Value", {"field": "ts_ms", "target.type": "unix", "unix.precision": "seconds"})),
    SOME,
)
case(
    "set-schema-version-only",
    chain(("SetSchemaMetadata$Value", {"schema.version": " 2 ", "replace.null.with.default": "false"})),
    RICH,
)
case(
    "set-schema-primitive",
    chain(("ExtractField$Value", {"field": "op"}), ("SetSchemaMetadata$Value", {"schema.name": "op"})),
    DATA[:2],
)
case(
    "set-schema-schemaless",
    chain(("SetSchemaMetadata$Value", {"schema.name": "x"})),
    SCHEMALESS,
)
refused("set-schema-nothing", "SetSchemaMetadata$Value")
refused("set-schema-bad-version", "SetSchemaMetadata$Value", **{"schema.version": "v1"})
refused("set-schema-big-version", "SetSchemaMetadata$Value", **{"schema.version": "3000000000"})

# --- TimestampConverter
for unit, epoch in (
    ("seconds", "epoch_s"),
    ("milliseconds", "i64"),
    ("microseconds", "epoch_us"),
    ("nanoseconds", "epoch_ns"),
):
    case(
        f"timestamp-converter-unix-{unit}",
        chain(
            ("TimestampConverter$Value", {"field": epoch, "target.type": "Timestamp", "unix.precision": unit}),
        ),
        RICH,
    )
    case(
        f"timestamp-converter-to-unix-{unit}",
        chain(("TimestampConverter$Value", {"field": "ts", "target.type": "unix", "unix.precision": unit})),
        RICH,
    )
for target in ("string", "unix", "Date", "Time", "Timestamp"):
    case(
        f"timestamp-converter-ts-{target}",
        chain(
            (
                "TimestampConverter$Value",
                {"field": "ts", "target.type": target, "format": "yyyy-MM-dd HH:mm:ss.SSS"},
            )
        ),
        RICH,
    )
    case(
        f"timestamp-converter-day-{target}",
        chain(("TimestampConverter$Value", {"field": "day", "target.type": target, "format": "dd/MM/yyyy G"})),
        RICH,
    )
    case(
        f"timestamp-converter-string-{target}",
        chain(("TimestampConverter$Value", {"field": "when", "target.type": target, "format": "yyyy-MM-dd HH:mm:ss"})),
        RICH,
    )
case(
    "timestamp-converter-whole",
    chain(
        ("TimestampConverter$Key", {"target.type": "string", "format": "yyyyMMdd'T'HHmmssSSS"}),
        ("TimestampConverter$Value", {"target.type": "Date"}),
    ),
    PRIMITIVE_KEYS,
)
case(
    "timestamp-converter-whole-struct",
    chain(("TimestampConverter$Value", {"target.type": "Date"})),
    SOME[:3],
)
case(
    "timestamp-converter-wrong-type",
    chain(("TimestampConverter$Value", {"field": "i32", "target.type": "Date"})),
    RICH[:1],
)
case(
    "timestamp-converter-unparsable",
    chain(("TimestampConverter$Value", {"field": "num", "target.type": "unix", "format": "yyyy-MM-dd"})),
    RICH[:1],
)
case(
    "timestamp-converter-lenient",
    chain(("TimestampConverter$Value", {"field": "num", "target.type": "Timestamp", "format": "yyyy"})),
    RICH[:2] + RICH[3:],
)
case(
    "timestamp-converter-no-format-for-string",
    chain(("TimestampConverter$Value", {"field": "when", "target.type": "unix"})),
    RICH[:1],
)
case(
    "timestamp-converter-schemaless",
    chain(
        ("TimestampConverter$Value", {"field": "at", "target.type": "string", "format": "EEE MMM d HH:mm:ss yyyy"}),
    ),
    SCHEMALESS,
)
case(
    "timestamp-converter-schemaless-string",
    chain(("TimestampConverter$Value", {"field": "when", "target.type": "unix", "format": "yyyy-MM-dd"})),
    SCHEMALESS,
)
case(
    "timestamp-converter-schemaless-missing",
    chain(("TimestampConverter$Value", {"field": "gone", "target.type": "Date"})),
    SCHEMALESS,
)
WHEN_SCHEMA = {"type": "struct", "name": "when.Value", "optional": False, "fields": [field("when", "string", True)]}
WHEN_FORMATS = {
    "rfc": (
        "EEE, d MMM yyyy hh:mm:ss a Z",
        ["Tue, 5 Mar 2024 10:11:12 PM +0130", "sunday, 31 december 1899 12:00:00 am -0800"],
    ),
    "iso": (
        "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        ["2024-03-05T10:11:12.345Z", "2024-03-05T10:11:12.3+05:30", "2024-03-05T10:11"],
    ),
    "zone": ("dd.MM.yy HH:mm z", ["05.03.24 10:11 UTC", "05.03.99 10:11 GMT+02:00", "31.12.45 23:59 GMT"]),
    "packed": ("yyyyMMddHHmmssSSS", ["20240305101112345", "2024030510111", "19691231235959999"]),
    "words": (
        "MMMM d, G yyyy 'at' k:mm",
        ["March 5, AD 2024 at 24:00", "february 30, BC 44 at 1:02", "Jan 1, AD 1582 at 0:00"],
    ),
    "hours": ("K:mm a, D", ["11:30 PM, 60", "0:00 am, 366", "13:00 pm, 1"]),
}
for label, (pattern, values) in WHEN_FORMATS.items():
    case(
        f"timestamp-converter-parse-{label}",
        chain(("TimestampConverter$Value", {"field": "when", "target.type": "unix", "format": pattern})),
        [record("when.topic", envelope(WHEN_SCHEMA, {"when": value})) for value in values],
    )
    case(
        f"timestamp-converter-format-{label}",
        chain(("TimestampConverter$Value", {"field": "ts", "target.type": "string", "format": pattern})),
        RICH,
    )
refused("timestamp-converter-no-target", "TimestampConverter$Value", field="a")
refused("timestamp-converter-bad-target", "TimestampConverter$Value", **{"target.type": "date"})
refused("timestamp-converter-string-no-format", "TimestampConverter$Value", **{"target.type": "string"})
refused("timestamp-converter-bad-format", "TimestampConverter$Value", **{"target.type": "string", "format": "yyyy'"})
refused("timestamp-converter-bad-letter", "TimestampConverter$Value", **{"target.type": "unix", "format": "bb"})
refused(
    "timestamp-converter-bad-precision", "TimestampConverter$Value", **{"target.type": "unix", "unix.precision": "ms"}
)

# --- Filter and the predicates
case("filter", chain(("Filter", {})), SOME)
case("filter-tombstones", predicate(chain(("Filter", {})), "tomb", "RecordIsTombstone"), ALL)
case("filter-keep-tombstones", predicate(chain(("Filter", {})), "tomb", "RecordIsTombstone", negate=True), ALL)
case(
    "filter-topic",
    predicate(chain(("Filter", {})), "hb", "TopicNameMatches", pattern="__debezium-heartbeat.*"),
    ALL,
)
case(
    "regex-router-topic-not-matching",
    predicate(
        chain(("RegexRouter", {"regex": "(.*)", "replacement": "all-$1"})),
        "inv",
        "TopicNameMatches",
        negate=True,
        pattern="dbz\\.inventory\\..*",
    ),
    SOME,
)
case(
    "filter-has-header",
    predicate(chain(("Filter", {})), "ctx", "HasHeaderKey", name="__debezium.context.connectorName"),
    ALL,
)
case("has-header-missing", predicate(chain(("Filter", {})), "ctx", "HasHeaderKey", name="none"), SOME)
case(
    "refused-topic-name-matches-empty",
    predicate(chain(("Filter", {})), "p", "TopicNameMatches", pattern=""),
    SOME[:1],
)
case(
    "refused-topic-name-matches-bad",
    predicate(chain(("Filter", {})), "p", "TopicNameMatches", pattern="a[b"),
    SOME[:1],
)
case("refused-has-header-empty", predicate(chain(("Filter", {})), "p", "HasHeaderKey", name=""), SOME[:1])

# --- chains over schemaless data (a tombstone hoisted into a map) and both value converter settings
case(
    "schemaless-chain",
    chain(
        ("HoistField$Value", {"field": "payload"}),
        (
            "InsertField$Value",
            {"topic.field": "topic", "timestamp.field": "ts", "static.field": "s", "static.value": "v"},
        ),
        ("ReplaceField$Value", {"renames": "topic:t,payload:p", "exclude": "s"}),
        ("Cast$Value", {"spec": "ts:string"}),
    ),
    timed([r for r in ALL if r["value"] is None]),
)
case(
    "schemaless-chain-no-schemas",
    chain(
        ("HoistField$Value", {"field": "payload"}),
        (
            "InsertField$Value",
            {"topic.field": "topic", "partition.field": "partition", "static.field": "zeta", "static.value": "z"},
        ),
        ("HeaderFrom$Value", {"fields": "topic", "headers": "from", "operation": "move"}),
        **NO_SCHEMAS,
    ),
    [r for r in ALL if r["value"] is None],
)
case(
    "debezium-chain-no-schemas",
    chain(
        ("Flatten$Value", {"delimiter": "_"}),
        ("ReplaceField$Value", {"include": "after,op,source_ts_ms,source_collection"}),
        ("InsertField$Value", {"topic.field": "__topic"}),
        ("InsertHeader", {"header": "app", "value.literal": "mongocdc"}),
        ("SetSchemaMetadata$Value", {"schema.name": "flat"}),
        **NO_SCHEMAS,
    ),
    ALL,
)


# --- the oracle, once for the module ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def problems() -> dict[str, list[str]]:
    return run_cases(CASES).differences


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_connect(name: str, problems: dict[str, list[str]]) -> None:
    assert problems[name] == []


@pytest.mark.parametrize("name", [name for name in CASES if name.startswith("refused-")])
def test_refused_configuration_is_refused(name: str) -> None:
    """The refused cases agree with Connect above; this makes sure they are refusals, not agreements to accept."""
    with pytest.raises(ValueError):
        RecordPipeline.from_config(CASES[name][0])


# --- without the JVM: what the oracle's inputs cannot reach ----------------------------------------------------


def value_record(schema: Schema | None, value: Any, **more: Any) -> ConnectRecord:
    return ConnectRecord("t", 0, None, None, schema, value, **more)


def transform(cls: str, **options: str) -> Any:
    return kt.TRANSFORMS[T + cls](options)


DEFAULTED = struct_schema(
    [
        ("a", Schema(Type.INT32, optional=True, default=5)),
        ("b", Schema(Type.STRING, optional=True, default="dflt")),
        ("c", STRING),
    ],
    name="D",
)


def defaulted() -> Struct:
    """A struct whose defaulted fields are null (Connect's JSON reader never gives one; a connector can)."""
    return Struct(DEFAULTED).put("c", "x")


@pytest.mark.parametrize(
    ("cls", "options", "side", "name", "default"),
    [
        ("InsertField$Value", {"topic.field": "t"}, "value", "a", 5),
        ("ReplaceField$Value", {"renames": "a:z"}, "value", "z", 5),
        ("MaskField$Value", {"fields": "c"}, "value", "a", 5),
        ("Cast$Value", {"spec": "c:string"}, "value", "a", 5),
        ("SetSchemaMetadata$Value", {"schema.name": "n"}, "value", "a", 5),
        ("TimestampConverter$Value", {"field": "c", "target.type": "unix", "format": "yyyy"}, "value", "a", 5),
        ("HeaderFrom$Value", {"fields": "a", "headers": "h", "operation": "move"}, "value", "b", "dflt"),
        ("ValueToKey", {"fields": "a,b"}, "key", "a", 5),
    ],
)
def test_replace_null_with_default(cls: str, options: dict[str, str], side: str, name: str, default: Any) -> None:
    """``replace.null.with.default`` (true by default) puts a null field's default in its place; false keeps null."""
    record = value_record(DEFAULTED, defaulted().put("c", "2024"))
    replaced = getattr(transform(cls, **options).apply(record), side)
    kept = getattr(transform(cls, **options, **{"replace.null.with.default": "false"}).apply(record), side)
    assert replaced.get_without_default(name) == default
    assert kept.get_without_default(name) is None


def test_extract_field_replace_null_with_default() -> None:
    record = value_record(DEFAULTED, defaulted())
    assert transform("ExtractField$Value", field="b").apply(record).value == "dflt"
    assert (
        transform("ExtractField$Value", field="b", **{"replace.null.with.default": "false"}).apply(record).value is None
    )


def test_header_from_takes_the_default_into_the_header() -> None:
    record = value_record(DEFAULTED, defaulted())
    moved = transform("HeaderFrom$Value", fields="a", headers="h", operation="move").apply(record)
    assert [(h.key, h.value) for h in moved.headers] == [("h", 5)]
    assert [f.name for f in moved.value_schema.fields] == ["b", "c"]


INNER = struct_schema([("x", Schema(Type.INT32, default=1)), ("y", OPTIONAL_STRING)], name="Inner")
OUTER = struct_schema(
    [
        ("id", INT32),
        ("inner", INNER.with_(optional=True, default=Struct(INNER, {"x": 7, "y": "from-parent"}))),
        ("deep", struct_schema([("inner", INNER)], optional=True)),
        ("tags", Schema(Type.ARRAY, optional=True, value_schema=STRING, name="Tags", doc="d")),
    ],
    name="Outer",
    version=2,
    doc="outer doc",
    parameters={"k": "v"},
    optional=True,
)


def test_flatten_nested_structs_with_defaults_and_optional_ancestors() -> None:
    value = Struct(OUTER, {"id": 1, "deep": Struct(OUTER.field("deep").schema, {"inner": Struct(INNER, {"x": 3})})})
    flat = transform("Flatten$Value", delimiter="_").apply(value_record(OUTER, value))
    schema = flat.value_schema
    assert (schema.name, schema.version, schema.doc, schema.params, schema.optional) == (
        "Outer",
        2,
        "outer doc",
        {"k": "v"},
        False,  # copySchemaBasics does not carry optionality
    )
    fields = {f.name: f.schema for f in schema.fields}
    assert list(fields) == ["id", "inner_x", "inner_y", "deep_inner_x", "deep_inner_y", "tags"]
    assert fields["inner_x"] == Schema(Type.INT32, optional=True, default=1)  # its own default wins
    assert fields["inner_y"] == Schema(Type.STRING, optional=True, default="from-parent")  # the parent's default
    assert fields["deep_inner_x"] == Schema(Type.INT32, optional=True, default=1)  # an optional ancestor
    assert fields["tags"] == Schema(Type.ARRAY, optional=True, value_schema=STRING, name="Tags", doc="d")
    assert [flat.value.get_without_default(n) for n in fields] == [1, 7, "from-parent", 3, None, None]


def test_flatten_refuses_a_map_field_and_flattens_schemaless_maps() -> None:
    with_map = struct_schema([("m", map_schema(STRING, STRING))])
    with pytest.raises(DataError, match="does not support MAP"):
        transform("Flatten$Value").apply(value_record(with_map, Struct(with_map, {"m": {}})))
    nested = {"a": {"b": {"c": 1}, "d": [1, {"e": 2}]}, "f": None, "g": b"x"}
    flat = transform("Flatten$Value", delimiter="/").apply(value_record(None, nested)).value
    assert flat == {"a/b/c": 1, "a/d": [1, {"e": 2}], "f": None, "g": b"x"}
    assert list(flat) == ["a/b/c", "a/d", "f", "g"]  # a LinkedHashMap: the source's order
    with pytest.raises(DataError, match="not supported"):
        transform("Flatten$Value").apply(value_record(None, {"d": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}))


def test_cast_narrows_as_java_does() -> None:
    schema = struct_schema([("d", Schema(Type.FLOAT64)), ("l", Schema(Type.INT64)), ("s", STRING)])
    value = Struct(schema, {"d": 3e10, "l": 2**40 + 300, "s": "+7"})
    cast = transform("Cast$Value", spec="d:int32,l:int8,s:int16").apply(value_record(schema, value)).value
    assert (cast.get("d"), cast.get("l"), cast.get("s")) == (2**31 - 1, 44, 7)
    with pytest.raises(DataError, match="out of range"):
        transform("Cast$Value", spec="s:int8").apply(
            value_record(schema, Struct(schema, {"d": 1.0, "l": 1, "s": "300"}))
        )


def test_config_errors_name_connects_reasons() -> None:
    with pytest.raises(ConnectConfigError, match="No field insertion configured"):
        transform("InsertField$Value")
    with pytest.raises(ConnectConfigError, match="Invalid rename mapping: a"):
        transform("ReplaceField$Value", renames="a")
    with pytest.raises(ConnectConfigError, match="does not support casting to BYTES"):
        transform("Cast$Value", spec="bytes")
