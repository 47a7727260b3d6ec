"""Record what the real Debezium MongoDB connector writes: the oracle for mongocdc's event format.

``python -m tests.services.record_debezium OUTDIR`` starts a SecantusDB server
(``tests/services/mongo.py``) and a Kafka broker (``tests/services/kafka.py``), puts documents
in place, starts a distributed Kafka Connect worker (``tests/services/connect.py``) running
Debezium (initial snapshot), runs a streaming workload (every BSON type, every ``_id`` type,
every update operator, pipeline updates, truncated arrays, replace, delete, a transaction over
two collections), triggers an incremental snapshot through the signal collection, waits for
heartbeats, stops the worker gracefully and dumps every topic. It does all of it twice, with the
JsonConverter's ``schemas.enable`` false and true. OUTDIR then holds:

``input.jsonl``
    The workload, one operation a line: its step number, phase (``snapshot``: in place before
    the connector starts; ``stream``; ``signal``), namespace, the operation's arguments and the
    document as it was before and after the operation, read back from the server, in canonical
    extended JSON (identical for both runs: ObjectIds and dates are fixed).
``schemas-false/`` and ``schemas-true/``
    ``records.jsonl``: every record of the data topics, the transaction topic, the heartbeat
    topic and the worker's offsets topic (``auxiliary.jsonl``, with ``--all-topics``: the worker's
    config and status topics), ordered by topic,
    partition and offset: topic, partition, offset, timestamp type and value, key and value as
    text with their encoding (``utf-8``, or ``base64`` for bytes that are not UTF-8; ``null``
    for a null key or a tombstone), headers.
    ``changes.jsonl``: the change events of the same operations read by a change stream of the
    recorder's own (the options Debezium uses: ``updateLookup``, pre-images when available), in
    canonical extended JSON, so unit tests can feed mongocdc the events Debezium consumed.
    ``connector.json``: the connector's configuration; ``offsets.json``: the offsets the REST API
    reported before the stop; ``topics.json``: each topic's partition count; ``timings.json``:
    how long the worker and the connector took.
    ``logs/``: the worker's log (only with ``--keep-logs``).
    In ``schemas-true/`` the ``.jsonl`` files are gzipped (``.jsonl.gz``): every record repeats
    its schema there.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gzip
import json
import logging
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import bson
import pymongo
from bson import json_util
from bson.binary import Binary, UuidRepresentation
from bson.code import Code
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument
from bson.regex import Regex
from bson.timestamp import Timestamp
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from pymongo.change_stream import ChangeStream
from pymongo.client_session import ClientSession

from tests.services.connect import DEBEZIUM_MONGODB_CONNECTOR, DEBEZIUM_VERSION, KafkaConnect
from tests.services.kafka import KAFKA_VERSION, KafkaBroker
from tests.services.mongo import SecantusServer

log = logging.getLogger("record_debezium")

PREFIX: Final = "dbz"
DB: Final = "inventory"
SIGNALS: Final = "dbz_signals"
HEARTBEAT_TOPIC: Final = f"__debezium-heartbeat.{PREFIX}"
TRANSACTION_TOPIC: Final = f"{PREFIX}.transaction"
CONNECTOR: Final = "dbz"
GROUP: Final = "dbz-connect"
OFFSETS_TOPIC: Final = "connect-offsets"
# Topics left out of records.jsonl (written to auxiliary.jsonl with --all-topics).
AUXILIARY_TOPICS: Final = frozenset({"connect-configs", "connect-status"})
HEARTBEAT_MS: Final = 1000
HEARTBEATS_WANTED: Final = 3
WAIT_S: Final = 120.0

# Documents go to the server as these exact bytes; UUIDs in the standard (subtype 4) form.
ENCODE: Final[CodecOptions[dict[str, Any]]] = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
RAW: Final = CodecOptions(document_class=RawBSONDocument, uuid_representation=UuidRepresentation.STANDARD)
# Decoding for extended JSON: subtype 3/4 stay Binary, dates outside Python's range stay DatetimeMS.
DECODE: Final[CodecOptions[dict[str, Any]]] = CodecOptions(
    tz_aware=True,
    uuid_representation=UuidRepresentation.UNSPECIFIED,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
)
CANONICAL: Final = json_util.JSONOptions(
    json_mode=json_util.JSONMode.CANONICAL,
    uuid_representation=UuidRepresentation.UNSPECIFIED,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
    tz_aware=True,
)

UTC: Final = dt.UTC


def _oid(n: int) -> ObjectId:
    return ObjectId(f"65f0a1b2c3d4e5f6a7b8{n:04x}")


def _date(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


# ---------------------------------------------------------------------------------------
# The documents


def typed_documents() -> list[dict[str, Any]]:
    """Documents covering every BSON type a document can hold on SecantusDB, one theme each.

    Symbol, undefined and DBPointer are left out: SecantusDB stores them as a string, null and
    a DBRef-shaped document (real MongoDB keeps them, deprecated as they are). So are dates
    after year 9999: the Python server refuses them ("year 20000 is out of range").
    """
    uuid4 = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
    return [
        {
            "_id": "numbers",
            "double": 145.81,
            "double_big": 1e300,
            "double_neg_zero": -0.0,
            "double_nan": float("nan"),
            "double_inf": float("inf"),
            "double_neg_inf": float("-inf"),
            "double_whole": 3.0,
            "double_tenth": 0.1,
            "double_small": 1e-7,
            "double_e21": 1e21,
            "double_2p53": 9007199254740993.0,
            "double_max": 1.7976931348623157e308,
            "double_min_subnormal": 5e-324,
            "int32": 42,
            "int32_negative": -7,
            "int32_min": -(2**31),
            "int32_max": 2**31 - 1,
            "int64_small": Int64(7),
            "int64_2p53_plus_1": Int64(2**53 + 1),
            "int64_max": Int64(2**63 - 1),
            "int64_min": Int64(-(2**63)),
            "decimal": Decimal128("1234.5678"),
            "decimal_exponent": Decimal128("-1.50E+3"),
            "decimal_neg_zero": Decimal128("-0"),
            "decimal_nan": Decimal128("NaN"),
            "decimal_inf": Decimal128("-Infinity"),
            "decimal_max_digits": Decimal128("9.999999999999999999999999999999999E+6144"),
        },
        {
            "_id": "strings",
            "ascii": "plain text",
            "empty": "",
            "latin": "héllo wörld ñ",
            "cjk": "中文 日本語 한국어",
            "emoji": "😀 👍🏽 🇫🇷",
            "control": "nul\x00 soh\x01 us\x1f del\x7f tab\t lf\n cr\r bs\b ff\f",
            "quotes": "say \"hi\" \\ back\\slash / slash 'single'",
            "separators": "ls\u2028 ps\u2029 nel\x85 bom\ufeff",
            "combining": "e\u0301 a\u0308 \u1e9b\u0323",
            "html": "<script>alert('&amp;')</script>",
            "non_bmp_math": "\U0001d400\U0001d7ff",
            "clé ünïcode": "key with non-ASCII",
            'key"quote\\': "key with quote and backslash",
            "key with space": 1,
        },
        {
            "_id": "scalars",
            "oid": _oid(1),
            "bool_true": True,
            "bool_false": False,
            "null": None,
            "date": _date(2024, 2, 29, 12, 34, 56, 789000),
            "date_epoch": _date(1970, 1, 1),
            "date_before_1970": _date(1969, 7, 20, 20, 17, 40),
            "date_1900": _date(1900, 1, 1),
            "date_year_1": _date(1, 1, 1),
            "date_far_future": _date(9999, 12, 31, 23, 59, 59, 999000),
            "date_negative_ms": DatetimeMS(-1),
            "regex": Regex("^ab.*c$", "imsx"),
            "regex_slashes": Regex('a/b\\d+"q', ""),
            "javascript": Code("function () { return 1; }"),
            "javascript_with_scope": Code("function () { return x; }", {"x": 1, "y": "two"}),
            "timestamp": Timestamp(1700000000, 42),
            "timestamp_zero": Timestamp(0, 0),
            "minkey": MinKey(),
            "maxkey": MaxKey(),
        },
        {
            "_id": "binaries",
            "generic": Binary(b"\x00\x01\x02\xfe\xff", 0),
            "empty": Binary(b"", 0),
            "function": Binary(b"fn", 1),
            "old_binary": Binary(b"\x03\x00\x00\x00abc", 2),
            "uuid_legacy": Binary(uuid4.bytes, 3),
            "uuid": Binary(uuid4.bytes, 4),
            "md5": Binary(bytes.fromhex("d41d8cd98f00b204e9800998ecf8427e"), 5),
            "encrypted": Binary(b"\x01enc", 6),
            "column": Binary(b"\x07col", 7),
            "sensitive": Binary(b"secret", 8),
            "vector_int8": Binary(b"\x03\x00\x01\x7f\x80", 9),
            "user_defined": Binary(b"user", 0x80),
            "user_max": Binary(b"\xff", 0xFF),
        },
        {
            "_id": "structures",
            "nested": {"level1": {"level2": {"level3": [1, {"deep": "yes"}]}}},
            "array_mixed": [1, "two", 3.5, None, True, {"four": Int64(4)}, [5, [6]], Decimal128("7")],
            "array_of_docs": [{"a": 1}, {"a": 2, "b": [{}]}],
            "empty_doc": {},
            "empty_array": [],
            "nested_empty": {"a": [], "b": {}, "c": [[], {}]},
            "dbref": DBRef("customers", _oid(2)),
            "dbref_with_db": DBRef("customers", 1001, "otherdb"),
            "dbref_extra_fields": DBRef("customers", "abc", "otherdb", note="extra", n=1),
            "field_order": {"z": 1, "a": 2, "m": 3},
        },
    ]


def incremental_id_values() -> list[tuple[str, Any]]:
    """The ``_id`` types Debezium's incremental snapshot of MongoDB accepts, mixed in one collection.

    Debezium 3.6.1 reads chunks by ``_id`` only for double, int32, int64, decimal128, ObjectId,
    string and UUID (binary subtype 4); any other ``_id`` type in the collection fails the chunk
    query ("Unsupported type of document id") and the incremental snapshot stops there.
    """
    return [
        ("int32", 1),
        ("int32", 2),
        ("int64", Int64(3)),
        ("double", 4.5),
        ("decimal128", Decimal128("5.5")),
        ("string", "a"),
        ("string", "b"),
        ("uuid", Binary(uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8").bytes, 4)),
        ("objectid", _oid(10)),
        ("objectid", _oid(11)),
    ]


def id_values() -> list[tuple[str, Any]]:
    """One ``_id`` of every type MongoDB accepts as an ``_id`` (arrays are refused).

    A Regex ``_id`` is refused by real MongoDB but stored by SecantusDB; it is recorded here
    anyway, since Debezium's rendering of it is the same as of any other value.
    """
    uuid4 = uuid.UUID("3b241101-e2bb-4255-8caf-4136c566a962")
    return [
        ("int32", 1),
        ("int32_negative", -5),
        ("int64_small", Int64(2)),
        ("int64_large", Int64(2**62 + 3)),
        ("double", 2.5),
        ("double_whole", 10.0),
        ("string", "abc"),
        ("string_numeric", "1"),
        ("string_non_ascii", "clé-😀-中"),
        ("string_escapes", 'q"b\\s/\n\x01\u2028'),
        ("objectid", _oid(3)),
        ("document", {"region": "eu", "n": 7, "sub": {"x": True}}),
        ("binary", Binary(b"\x01\x02\xfe", 0)),
        ("uuid", Binary(uuid4.bytes, 4)),
        # Other bytes than the subtype-4 one: SecantusDB compares Binary _ids without their
        # subtype (same bytes, subtypes 3 and 4: E11000 duplicate key; mongod keeps both).
        ("uuid_legacy", Binary(uuid.UUID("00112233-4455-6677-8899-aabbccddeeff").bytes, 3)),
        ("timestamp", Timestamp(1700000001, 3)),
        ("regex", Regex("^id", "i")),
        ("date", _date(2023, 5, 6, 7, 8, 9, 123000)),
        ("date_before_1970", _date(1960, 1, 1)),
        ("decimal128", Decimal128("12.50")),
        ("bool_true", True),
        ("bool_false", False),
        ("null", None),
        ("minkey", MinKey()),
        ("maxkey", MaxKey()),
        ("javascript", Code("return 1")),
    ]


# ---------------------------------------------------------------------------------------
# Extended JSON and exact bytes


def ejson(raw: bytes | RawBSONDocument | None) -> Any:
    """A raw BSON document as canonical extended JSON (a JSON value), field order kept."""
    if raw is None:
        return None
    data = raw.raw if isinstance(raw, RawBSONDocument) else raw
    text = json_util.dumps(bson.decode(data, codec_options=DECODE), json_options=CANONICAL)
    return json.loads(text)


def ejson_value(value: Any) -> Any:
    """Any BSON value (wrapped in a document to encode it) as canonical extended JSON."""
    return ejson(bson.encode({"v": value}, codec_options=ENCODE))["v"]


def bytes_field(data: bytes | None) -> tuple[str | None, str | None]:
    """Exact bytes as (text, encoding): UTF-8 text when they decode, else base64."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def raw_doc(document: Mapping[str, Any]) -> RawBSONDocument:
    return RawBSONDocument(bson.encode(document, codec_options=ENCODE), codec_options=RAW)


# ---------------------------------------------------------------------------------------
# Kafka


@dataclass
class Record:
    topic: str
    partition: int
    offset: int
    timestamp_type: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]

    def to_json(self) -> dict[str, Any]:
        key, key_encoding = bytes_field(self.key)
        value, value_encoding = bytes_field(self.value)
        headers = []
        for name, data in self.headers:
            text, encoding = bytes_field(data)
            headers.append({"key": name, "value": text, "encoding": encoding})
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "timestamp_type": {0: "NotAvailable", 1: "CreateTime", 2: "LogAppendTime"}.get(self.timestamp_type),
            "timestamp": self.timestamp,
            "key": key,
            "key_encoding": key_encoding,
            "value": value,
            "value_encoding": value_encoding,
            "headers": headers,
        }

    def json_value(self) -> Any:
        return None if self.value is None else json.loads(self.value)


class TopicReader:
    """Reads whole topics (beginning to high watermark) without a consumer group commit."""

    def __init__(self, bootstrap: str) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"recorder-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "log_level": 0,
            }
        )

    def close(self) -> None:
        self._consumer.close()

    def topics(self) -> dict[str, int]:
        """Topic name → partition count, internal topics left out."""
        metadata = self._consumer.list_topics(timeout=10)
        return {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if not name.startswith("__consumer_offsets") and topic.error is None
        }

    def count(self, wanted: Callable[[str], bool]) -> int:
        """Records in the topics ``wanted`` accepts (-1 while a new topic has no leader yet)."""
        total = 0
        try:
            for name, partitions in self.topics().items():
                if not wanted(name):
                    continue
                for partition in range(partitions):
                    low, high = self._consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=10)
                    total += high - low
        except KafkaException as exc:
            log.debug("counting records: %s", exc)
            return -1
        return total

    def _watermarks(self, partition: TopicPartition, timeout: float = 30.0) -> tuple[int, int]:
        """A partition's low and high offsets; a topic a connector has just created may have no leader for a moment
        (``NOT_LEADER_FOR_PARTITION``, retriable): asked again until it has, at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                low, high = self._consumer.get_watermark_offsets(partition, timeout=10)
                return low, high
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                retriable = isinstance(error, KafkaError) and (
                    error.retriable()
                    or error.code() in (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
                )
                if not retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def read(self, names: Iterable[str]) -> list[Record]:
        topics = self.topics()
        assignment: list[TopicPartition] = []
        ends: dict[tuple[str, int], int] = {}
        for name in names:
            for number in range(topics.get(name, 0)):
                low, high = self._watermarks(TopicPartition(name, number))
                if high > low:
                    assignment.append(TopicPartition(name, number, OFFSET_BEGINNING))
                    ends[(name, number)] = high
        records: list[Record] = []
        if not assignment:
            return records
        self._consumer.assign(assignment)
        pending = dict(ends)
        deadline = time.monotonic() + 60
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"could not read {sorted(pending)} to their ends")
            message = self._consumer.poll(0.5)
            if message is None:
                continue
            topic, partition_or_none = message.topic(), message.partition()
            assert topic is not None and partition_or_none is not None
            partition: int = partition_or_none
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if (message.offset() or 0) >= ends.get((topic, partition), 0):
                        pending.pop((topic, partition), None)
                    continue
                raise RuntimeError(f"reading {topic}: {error}")
            offset = message.offset()
            assert offset is not None
            if offset >= ends[(topic, partition)]:
                continue
            ts_type, ts = message.timestamp()
            records.append(
                Record(
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    timestamp_type=ts_type,
                    timestamp=ts,
                    key=message.key(),
                    value=message.value(),
                    headers=_headers(message.headers()),
                )
            )
            if offset + 1 >= ends[(topic, partition)]:
                pending.pop((topic, partition), None)
        self._consumer.unassign()
        records.sort(key=lambda r: (r.topic, r.partition, r.offset))
        return records


def _headers(raw: object) -> list[tuple[str, bytes | None]]:
    pairs: Iterable[Any] = raw.items() if isinstance(raw, dict) else raw or []  # type: ignore[assignment]
    return [(name, value.encode() if isinstance(value, str) else value) for name, value in pairs]


def is_data_topic(name: str) -> bool:
    return name.startswith(f"{PREFIX}.") and name != TRANSACTION_TOPIC


# ---------------------------------------------------------------------------------------
# The workload


@dataclass
class Workload:
    """Runs operations, logs them (``entries``) and counts the records Debezium owes for them."""

    client: pymongo.MongoClient[RawBSONDocument]
    entries: list[dict[str, Any]] = field(default_factory=list)
    expected_records: int = 0
    expected_changes: int = 0
    phase: str = "snapshot"

    def coll(self, name: str) -> pymongo.collection.Collection[RawBSONDocument]:
        return self.client[DB].get_collection(name, codec_options=RAW)

    def _state(self, name: str, key: Any, session: ClientSession | None = None) -> Any:
        found = self.coll(name).find_one({"_id": key}, session=session)
        return ejson(found)

    def _log(self, op: str, name: str, **details: Any) -> None:
        entry = {"step": len(self.entries) + 1, "phase": self.phase, "op": op, "ns": f"{DB}.{name}"}
        entry.update(details)
        self.entries.append(entry)

    def create(self, name: str) -> None:
        self.client[DB].create_collection(name, changeStreamPreAndPostImages={"enabled": True})

    def insert(self, name: str, document: Mapping[str, Any], note: str | None = None) -> None:
        raw = raw_doc(document)
        self.coll(name).insert_one(raw)
        extra = {"note": note} if note else {}
        self._log("insert", name, document=ejson(raw), after=self._state(name, document["_id"]), **extra)
        self.expected_records += 1
        self.expected_changes += 1

    def update(self, name: str, key: Any, update: Mapping[str, Any] | Sequence[Mapping[str, Any]], note: str) -> None:
        before = self._state(name, key)
        spec: Any = raw_doc(update) if isinstance(update, Mapping) else [raw_doc(stage) for stage in update]
        result = self.coll(name).update_one({"_id": key}, spec)
        assert result.modified_count == 1, (note, result.raw_result)
        shown = ejson(spec) if isinstance(spec, RawBSONDocument) else [ejson(stage) for stage in spec]
        self._log(
            "update",
            name,
            filter={"_id": ejson_value(key)},
            update=shown,
            before=before,
            after=self._state(name, key),
            note=note,
        )
        self.expected_records += 1
        self.expected_changes += 1

    def replace(self, name: str, replacement: Mapping[str, Any], note: str) -> None:
        key = replacement["_id"]
        before = self._state(name, key)
        raw = raw_doc(replacement)
        self.coll(name).replace_one({"_id": key}, raw)
        self._log(
            "replace",
            name,
            filter={"_id": ejson_value(key)},
            replacement=ejson(raw),
            before=before,
            after=self._state(name, key),
            note=note,
        )
        self.expected_records += 1
        self.expected_changes += 1

    def delete(self, name: str, key: Any, note: str) -> None:
        before = self._state(name, key)
        result = self.coll(name).delete_one({"_id": key})
        assert result.deleted_count == 1
        self._log("delete", name, filter={"_id": ejson_value(key)}, before=before, after=None, note=note)
        self.expected_records += 2  # the delete and its tombstone
        self.expected_changes += 1

    def transaction(self, operations: Sequence[tuple[str, str, Any, Any]], note: str) -> None:
        """``operations``: (op, collection, key, document or update) in one committed transaction."""
        logged: list[dict[str, Any]] = []
        with self.client.start_session() as session, session.start_transaction():
            for op, name, key, argument in operations:
                before = self._state(name, key, session)
                if op == "insert":
                    self.coll(name).insert_one(raw_doc(argument), session=session)
                elif op == "update":
                    self.coll(name).update_one({"_id": key}, raw_doc(argument), session=session)
                elif op == "delete":
                    self.coll(name).delete_one({"_id": key}, session=session)
                else:
                    raise ValueError(op)
                entry: dict[str, Any] = {"op": op, "ns": f"{DB}.{name}", "filter": {"_id": ejson_value(key)}}
                if op == "insert":
                    entry["document"] = ejson(raw_doc(argument))
                elif op == "update":
                    entry["update"] = ejson(raw_doc(argument))
                entry["before"] = before
                entry["after"] = self._state(name, key, session)
                logged.append(entry)
                self.expected_records += 2 if op == "delete" else 1
                self.expected_changes += 1
        self._log("transaction", "*", operations=logged, note=note)

    def signal(self, document: Mapping[str, Any], note: str) -> None:
        raw = raw_doc(document)
        self.coll(SIGNALS).insert_one(raw)
        self._log("signal", SIGNALS, document=ejson(raw), note=note)
        self.expected_changes += 1


def prepare(work: Workload) -> None:
    """Collections and the documents the initial snapshot reads."""
    for name in ("types", "ids", "incr", "ops", "orders", "customers", SIGNALS):
        work.create(name)
    for document in typed_documents():
        work.insert("types", document, note=f"every BSON type: {document['_id']}")
        work.insert("types", {"_id": f"{document['_id']}-set"}, note="small: a $set adds every BSON type to it")
    for kind, key in id_values():
        work.insert("ids", {"_id": key, "kind": kind}, note=f"_id of type {kind}")
    for kind, key in incremental_id_values():
        work.insert("incr", {"_id": key, "kind": kind}, note=f"for the incremental snapshot: _id of type {kind}")
    work.insert("customers", {"_id": 1001, "name": "Sally", "orders": Int64(0)})
    work.insert("customers", {"_id": 1002, "name": "Bob", "orders": Int64(0)})


def stream(work: Workload, settle: Callable[[], None]) -> None:
    """The streaming workload; ``settle()`` after each operation waits until Debezium has it."""

    def step(action: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        action(*args, **kwargs)
        settle()

    for document in typed_documents():
        copy = dict(document, _id=f"{document['_id']}-inserted")
        step(work.insert, "types", copy, note="insert event with every BSON type")
    for document in typed_documents():
        content = {name: value for name, value in document.items() if name != "_id"}
        note = "$set of a sub-document holding every BSON type"
        step(work.update, "types", f"{document['_id']}-set", {"$set": {"copy": content}}, note=note)
    step(
        work.update,
        "types",
        "numbers",
        {"$set": {"double": 2.5, "int64_small": Int64(8), "decimal": Decimal128("0.001"), "new.dotted": -0.0}},
        note="$set of top-level and dotted fields",
    )
    for kind, key in id_values():
        if kind in ("int32", "string_non_ascii", "objectid", "document", "uuid", "date", "minkey"):
            step(work.update, "ids", key, {"$set": {"touched": True}}, note=f"update by _id of type {kind}")

    padding = "x" * 128  # mongod logs a pipeline update of a tiny document as a replacement
    base = {
        "_id": 1,
        "name": "widget",
        "qty": 1,
        "big": Int64(10),
        "price": Decimal128("9.99"),
        "tags": ["a", "b", "c"],
        "old": "to be removed",
        "dims": {"w": 1.5, "h": 2, "unit": "cm"},
        "arr": [1, 2, 3, 4, 5],
        "padding": padding,
    }
    step(work.insert, "ops", base, note="the document the update operators work on")
    step(
        work.update,
        "ops",
        1,
        {"$set": {"name": "gadget", "dims.w": 2.0, "tags.1": "B", "added": {"k": [1]}}},
        note="$set: a field, a nested path, an array element, a new sub-document",
    )
    step(work.update, "ops", 1, {"$unset": {"old": "", "dims.unit": ""}}, note="$unset: top-level, nested")
    step(work.update, "ops", 1, {"$inc": {"qty": 5, "big": Int64(2**40)}}, note="$inc int32 and int64")
    step(work.update, "ops", 1, {"$push": {"tags": "d"}}, note="$push")
    step(work.update, "ops", 1, {"$pull": {"tags": "a"}}, note="$pull (array rewritten)")
    step(work.update, "ops", 1, {"$rename": {"name": "title"}}, note="$rename")
    step(
        work.update,
        "ops",
        1,
        [{"$set": {"total": {"$multiply": ["$qty", "$price"]}}}, {"$unset": "added"}],
        note="pipeline update ($set computed, $unset)",
    )
    step(
        work.update, "ops", 1, [{"$set": {"arr": {"$slice": ["$arr", 2]}}}], note="pipeline update truncating an array"
    )
    step(work.replace, "ops", {"_id": 1, "replaced": True, "qty": Int64(3), "padding": padding}, note="replaceOne")
    step(work.delete, "ops", 1, note="deleteOne: a delete and a tombstone")
    step(work.insert, "ops", {"_id": _oid(9), "short": "lived"}, note="insert, ObjectId _id")
    step(work.delete, "ops", _oid(9), note="delete by ObjectId _id")

    step(
        work.transaction,
        [
            ("insert", "orders", 1, {"_id": 1, "customer": 1001, "amount": Decimal128("19.99")}),
            ("update", "customers", 1001, {"$inc": {"orders": Int64(1)}}),
            ("insert", "orders", 2, {"_id": 2, "customer": 1002, "amount": Decimal128("5.00")}),
            ("update", "customers", 1002, {"$inc": {"orders": Int64(1)}}),
        ],
        note="a multi-document transaction over two collections",
    )
    step(work.insert, "orders", {"_id": 3, "customer": 1001, "outside": "transaction"}, note="after it")
    step(
        work.transaction,
        [("delete", "orders", 3, None), ("update", "orders", 1, {"$set": {"status": "shipped"}})],
        note="a second transaction with a delete",
    )
    step(work.insert, "orders", {"_id": 4, "customer": 1002}, note="ends the second transaction")


# ---------------------------------------------------------------------------------------
# One recording


def connector_config(mongo_uri: str) -> dict[str, str]:
    return {
        "connector.class": DEBEZIUM_MONGODB_CONNECTOR,
        "tasks.max": "1",
        "mongodb.connection.string": mongo_uri,
        "topic.prefix": PREFIX,
        "database.include.list": DB,
        "capture.mode": "change_streams_update_full_with_pre_image",
        "snapshot.mode": "initial",
        "heartbeat.interval.ms": str(HEARTBEAT_MS),
        "provide.transaction.metadata": "true",
        "signal.data.collection": f"{DB}.{SIGNALS}",
        "incremental.snapshot.chunk.size": "3",
        "notification.enabled.channels": "log",
        "tombstones.on.delete": "true",
        # Topics the connector creates get 3 partitions: the records show Kafka's key hashing.
        "topic.creation.default.partitions": "3",
        "topic.creation.default.replication.factor": "1",
    }


def _notified(connect: KafkaConnect, aggregate: str, kind: str) -> bool:
    """Whether Debezium logged this notification (``notification.enabled.channels=log``).

    The log channel rather than the Kafka ("sink") one: a notification sent to Kafka carries the
    task's source partition with an empty offset, which would put a ``{}`` offset, seen in no
    production deployment, into the offsets topic.
    """
    try:
        text = connect.log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return f"aggregateType='{aggregate}', type='{kind}'" in text


def _drain(stream_: ChangeStream[RawBSONDocument], changes: list[Any], wanted: int, deadline: float) -> None:
    while len(changes) < wanted:
        change = stream_.try_next()
        if change is not None:
            changes.append(ejson(change))
        elif time.monotonic() > deadline:
            raise RuntimeError(f"only {len(changes)} of {wanted} change events arrived")


def _write_lines(path: Path, rows: Iterable[Any], *, compress: bool) -> None:
    """JSON lines (ASCII: every non-ASCII character escaped), gzipped (reproducibly) if ``compress``."""
    data = "".join(json.dumps(row, ensure_ascii=True) + "\n" for row in rows).encode("ascii")
    if compress:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data, compresslevel=9, mtime=0)
    path.write_bytes(data)


def record_once(outdir: Path, *, schemas_enable: bool, keep_logs: bool, all_topics: bool) -> list[dict[str, Any]]:
    """One full run into ``outdir``; returns the workload's log."""
    outdir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    with SecantusServer() as mongo, KafkaBroker() as kafka:
        client: pymongo.MongoClient[RawBSONDocument] = pymongo.MongoClient(
            mongo.uri, document_class=RawBSONDocument, uuidRepresentation="standard"
        )
        work = Workload(client)
        prepare(work)
        snapshot_records = work.expected_records
        config = connector_config(mongo.uri)
        reader = TopicReader(kafka.bootstrap)
        connect = KafkaConnect(
            kafka.bootstrap,
            mode="distributed",
            schemas_enable=schemas_enable,
            group_id=GROUP,
            worker_config={
                "offset.storage.topic": OFFSETS_TOPIC,
                "config.storage.topic": "connect-configs",
                "status.storage.topic": "connect-status",
                # Offsets are committed every 100 ms, not every second: the offsets topic then also
                # holds the short-lived states (inside a transaction, during the incremental snapshot).
                "offset.flush.interval.ms": "100",
            },
        )
        try:
            began = time.monotonic()
            connect.start()
            timings["worker_start_s"] = round(time.monotonic() - began, 2)
            connect.create_connector(CONNECTOR, config)
            connect.wait_until_running(CONNECTOR)
            timings["connector_running_s"] = round(time.monotonic() - began, 2)
            connect.wait_for(
                lambda: (
                    reader.count(is_data_topic) >= snapshot_records
                    and _notified(connect, "Initial Snapshot", "COMPLETED")
                ),
                "the initial snapshot",
                WAIT_S,
            )
            timings["snapshot_done_s"] = round(time.monotonic() - began, 2)

            work.phase = "stream"
            changes: list[Any] = []
            watch = client.watch(
                full_document="updateLookup",
                full_document_before_change="whenAvailable",
                max_await_time_ms=100,
            )
            with watch as stream_:

                def settle() -> None:
                    _drain(stream_, changes, work.expected_changes, time.monotonic() + WAIT_S)
                    wanted = work.expected_records
                    connect.wait_for(lambda: reader.count(is_data_topic) >= wanted, f"{wanted} data records", WAIT_S)

                work.expected_changes = 0  # counts the change events from here on
                stream(work, settle)
                timings["stream_done_s"] = round(time.monotonic() - began, 2)

                work.phase = "signal"
                work.signal(
                    {
                        "_id": "incremental-1",
                        "type": "execute-snapshot",
                        "data": {"data-collections": [f"{DB}.incr", f"{DB}.customers"], "type": "incremental"},
                    },
                    note="incremental snapshot of inventory.incr (mixed _id types) and inventory.customers",
                )
                connect.wait_for(
                    lambda: _notified(connect, "Incremental Snapshot", "COMPLETED"),
                    "the incremental snapshot",
                    WAIT_S,
                )
                timings["incremental_done_s"] = round(time.monotonic() - began, 2)
                heartbeats = reader.count(lambda name: name == HEARTBEAT_TOPIC)
                connect.wait_for(
                    lambda: reader.count(lambda name: name == HEARTBEAT_TOPIC) >= heartbeats + HEARTBEATS_WANTED,
                    "heartbeats",
                    WAIT_S,
                )
                # Whatever else the stream saw (the signal, Debezium's watermark writes).
                while (change := stream_.try_next()) is not None:
                    changes.append(ejson(change))
            offsets = connect.connector_offsets(CONNECTOR)
            began_stop = time.monotonic()
            graceful = connect.stop()
            timings["worker_stop_s"] = round(time.monotonic() - began_stop, 2)
            if not graceful:
                raise RuntimeError("Kafka Connect did not stop gracefully")
        except BaseException:
            log.error("recording failed; worker log tail:\n%s", connect.logs_tail())
            raise
        finally:
            if keep_logs and connect._data_dir is not None:
                shutil.copytree(connect._data_dir / "logs", outdir / "logs", dirs_exist_ok=True)
            connect.stop()
        topics = reader.topics()
        records = reader.read(sorted(topics))
        reader.close()
        client.close()

    # With schemas.enable=true every record repeats its schema: 460 KB of text, 16 KB gzipped.
    compress = schemas_enable
    main_records = [r.to_json() for r in records if r.topic not in AUXILIARY_TOPICS]
    _write_lines(outdir / "records.jsonl", main_records, compress=compress)
    if all_topics:
        auxiliary = [r.to_json() for r in records if r.topic in AUXILIARY_TOPICS]
        _write_lines(outdir / "auxiliary.jsonl", auxiliary, compress=compress)
    _write_lines(outdir / "changes.jsonl", changes, compress=compress)
    shown = dict(config, **{"mongodb.connection.string": "mongodb://127.0.0.1:PORT/?replicaSet=secantus"})
    (outdir / "connector.json").write_text(json.dumps(shown, indent=2) + "\n")
    (outdir / "offsets.json").write_text(json.dumps(offsets, indent=2) + "\n")
    partitions = {name: count for name, count in sorted(topics.items()) if name not in AUXILIARY_TOPICS}
    (outdir / "topics.json").write_text(json.dumps(partitions, indent=2) + "\n")
    (outdir / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    log.info("%s: %d records, %d change events; %s", outdir, len(records), len(changes), timings)
    return work.entries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.services.record_debezium",
        description=f"Record what Debezium {DEBEZIUM_VERSION} (Kafka Connect {KAFKA_VERSION}) writes for a "
        "workload covering every BSON and _id type, against SecantusDB.",
    )
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--schemas", choices=("both", "false", "true"), default="both")
    parser.add_argument("--keep-logs", action="store_true", help="copy the worker's logs into OUTDIR/schemas-*/logs")
    parser.add_argument(
        "--all-topics",
        action="store_true",
        help="also write the worker's config and status topics (OUTDIR/schemas-*/auxiliary.jsonl)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    settings = {"both": (False, True), "false": (False,), "true": (True,)}[args.schemas]
    inputs: list[dict[str, Any]] | None = None
    for schemas_enable in settings:
        entries = record_once(
            args.outdir / f"schemas-{'true' if schemas_enable else 'false'}",
            schemas_enable=schemas_enable,
            keep_logs=args.keep_logs,
            all_topics=args.all_topics,
        )
        if inputs is not None and entries != inputs:
            raise RuntimeError("the workload differed between the two runs")
        inputs = entries
    assert inputs is not None
    _write_lines(args.outdir / "input.jsonl", inputs, compress=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
