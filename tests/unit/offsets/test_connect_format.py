"""Kafka Connect's offset bytes as Debezium MongoDB 3.6.1.Final and Kafka Connect 4.3.1 write them (no services).

``recorded/debezium_offsets.json`` holds cases and what the real classes answer for them (the key and
value bytes of ``JsonConverter``, Kafka's murmur2 and default partition, the standalone worker's
Java-serialised map, ``String.hashCode`` and ``HashMap`` iteration orders), produced by
``DebeziumOffsetsOracle.java`` next to this file. The tests check mongocdc produces the same bytes;
``test_recorded_answers_are_debeziums`` asks the real classes again when the Connect distribution of
``tests/services/connect.py`` is in the cache (and Java is installed), so the recording cannot drift.

Record again after changing the cases: ``python -m tests.unit.offsets.test_connect_format --record``.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import bson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.engine.adoption import debezium_key, from_debezium, to_debezium
from mongocdc.engine.incremental import IncrementalSnapshotState
from mongocdc.events.java import default_partition, java_hashmap_order, java_string_hash, murmur2
from mongocdc.offsets.connect import (
    connect_value,
    decode_offsets_file,
    encode_offsets_file,
    jackson_json,
    live_offsets,
    parse_connect_key,
)

HERE = Path(__file__).parent
RECORDED = HERE / "recorded" / "debezium_offsets.json"
ORACLE = HERE / "DebeziumOffsetsOracle.java"
REPO = HERE.parents[2]


def token(data: str) -> str:
    """A resume token as Debezium stores it: Base64 of the BSON of ``{"_data": <hex>}``."""
    return base64.b64encode(bson.encode({"_data": data})).decode()


TOKEN = token("8269A1B2C3000000032B042C0100296E5A10046E3A3C0E1E8A4B6E9F3F2A1B0C4D5E6F463C5F6964003C6B31000004")
TXN_COLLECTIONS = [f"shop.c{i}" for i in range(9)]


def txn_state(txn_id: str, events: list[str]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for ns in events:
        counts[ns] = counts.get(ns, 0) + 1
    return {
        "v": 1,
        "id": txn_id,
        "begin_emitted": True,
        "ended": False,
        "total_order": len(events),
        "data_collections": [[ns, n] for ns, n in counts.items()],
        "first_ts_ms": 0,
        "last_ts_ms": 0,
    }


INCREMENTAL = IncrementalSnapshotState.start(
    "f2b5b1a0-signal", ["shop.orders", "shop.customers"], {"shop.customers": {"tier": "gold"}}
)

# Each "offset" case: "stored" is what Debezium's Loader reads, "transaction" the events its transaction
# context counted since; "mongocdc" is the mongocdc offset whose export must be the same bytes.
CASES: list[dict[str, Any]] = [
    {"kind": "key", "connector": "inventory-connector", "server_id": "inventory", "rs": None, "partitions": 25},
    {"kind": "key", "connector": "inventory-connector", "server_id": "inventory", "rs": "rs0", "partitions": 25},
    {"kind": "key", "connector": "inventory-connector", "server_id": "inventory", "rs": "cluster", "partitions": 25},
    {"kind": "key", "connector": "dbz", "server_id": "app", "rs": None, "partitions": 3},
    {"kind": "key", "connector": "dbz", "server_id": "app", "rs": None, "partitions": 1},
    {"kind": "key", "connector": 'café ☕ "q" \\ \t\u0001', "server_id": "prix-€", "rs": None, "partitions": 50},
    {
        "kind": "offset",
        "stored": {"sec": 1769860800, "ord": 3, "resume_token": TOKEN},
        "mongocdc": {"sec": 1769860800, "ord": 3, "resume_token": TOKEN},
    },
    {"kind": "offset", "stored": {"sec": -1, "ord": -1, "resume_token": TOKEN}},
    {
        "kind": "offset",
        "stored": {"sec": 1769860800, "ord": 0},
        "mongocdc": {"sec": 1769860800, "ord": 0, "resume_token": None},
    },
    {
        "kind": "offset",
        "stored": {"sec": 1769860800, "ord": 3, "resume_token": TOKEN, "initsync": True},
        "mongocdc": {"sec": 1769860800, "ord": 3, "resume_token": TOKEN, "initsync": True, "snapshot": {}},
    },
    {
        "kind": "offset",
        "stored": {"sec": 1769860800, "ord": 7, "resume_token": TOKEN, "lsid": "4e3f0a1c", "txnNumber": 12},
        "transaction": {"id": "4e3f0a1c:12", "events": [*TXN_COLLECTIONS, "shop.c0", "shop.c4"]},
        "mongocdc": {
            "sec": 1769860800,
            "ord": 7,
            "resume_token": TOKEN,
            "transaction": txn_state("4e3f0a1c:12", [*TXN_COLLECTIONS, "shop.c0", "shop.c4"]),
        },
    },
    {
        "kind": "offset",
        "stored": {
            "sec": 1769860800,
            "ord": 3,
            "resume_token": TOKEN,
            "incremental_snapshot_primary_key": "aced000570",
            "incremental_snapshot_maximum_key": "aced000570",
            "incremental_snapshot_collections": json.dumps(
                [
                    {
                        "incremental_snapshot_collections_id": "shop.orders",
                        "incremental_snapshot_collections_additional_condition": None,
                    },
                    {
                        "incremental_snapshot_collections_id": "shop.customers",
                        "incremental_snapshot_collections_additional_condition": '({"tier": {"$numberInt": "1"}})',
                    },
                ],
                separators=(",", ":"),
            ),
            "incremental_snapshot_correlation_id": "f2b5b1a0-signal",
        },
    },
    {
        "kind": "offset",
        "stored": {"sec": 1769860800, "ord": 3, "resume_token": TOKEN},
        "mongocdc": {
            "sec": 1769860800,
            "ord": 3,
            "resume_token": TOKEN,
            "incremental_snapshot": INCREMENTAL.to_offset(),
        },
        "incremental_from_mongocdc": True,
    },
    {"kind": "hash", "strings": ["", "sec", "ord", "resume_token", "polygenelubricants", "é😀", "shop.c10"]},
    {"kind": "hashmap", "keys": ["sec", "ord", "initsync", "lsid", "txnNumber", "resume_token"]},
    {"kind": "hashmap", "keys": [f"transaction_data_collection_order_db{i}.c{i * 7}" for i in range(30)]},
    {"kind": "hashmap", "keys": ["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa", "server_id", "rs"]},
    {"kind": "file", "entries": []},
    {
        "kind": "file",
        "entries": [[base64.b64encode(debezium_key("dbz", "app")).decode(), base64.b64encode(b'{"sec":1}').decode()]],
    },
    {
        "kind": "file",
        "entries": [
            [base64.b64encode(debezium_key("dbz", "app")).decode(), base64.b64encode(b'{"sec":1,"ord":2}').decode()],
            [base64.b64encode(b'["other",{"p":"x"}]').decode(), None],
            [base64.b64encode(debezium_key("dbz", "app", "rs0")).decode(), base64.b64encode(b"{}").decode()],
        ],
    },
]


def _java_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case as the oracle takes it (a mongocdc incremental state becomes Debezium's stored fields)."""
    if case.get("incremental_from_mongocdc"):
        exported = to_debezium(case["mongocdc"]).offset
        return {"kind": "offset", "stored": exported}
    return {k: v for k, v in case.items() if k != "mongocdc"}


def connect_dist() -> Path | None:
    """The Connect + Debezium distribution tests/services/connect.py caches, if it is there."""
    roots = [
        os.environ.get("MONGOCDC_TEST_CONNECT_CACHE"),
        os.path.join(os.environ["MONGOCDC_TEST_CACHE_DIR"], "connect")
        if os.environ.get("MONGOCDC_TEST_CACHE_DIR")
        else None,
        str(REPO / ".cache" / "connect"),
    ]
    for root in filter(None, roots):
        for dist in sorted(glob.glob(os.path.join(root, "*-debezium-3.6.1.Final", "dist"))):
            if (Path(dist) / ".mongocdc-complete").exists():
                return Path(dist)
    return None


def ask_oracle(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    dist = connect_dist()
    java = shutil.which("java")
    if dist is None or java is None:
        pytest.skip("no cached Kafka Connect + Debezium distribution (python -m tests.services.connect --fetch-only)")
    classpath = os.pathsep.join([str(dist / "lib" / "*"), str(dist / "plugins" / "debezium-connector-mongodb" / "*")])
    result = subprocess.run(
        [java, "-cp", classpath, str(ORACLE)],
        input=json.dumps([_java_case(c) for c in cases]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"the oracle failed:\n{result.stderr[-4000:]}")
    answers: list[dict[str, Any]] = json.loads(result.stdout.strip().splitlines()[-1])
    return answers


def recorded() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    data = json.loads(RECORDED.read_text())
    return [(c, a) for c, a in zip(data["cases"], data["answers"], strict=True)]


def of_kind(kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(c, a) for c, a in recorded() if c["kind"] == kind]


def test_the_recording_has_every_case() -> None:
    assert [c for c, _ in recorded()] == json.loads(json.dumps(CASES))


@pytest.mark.timeout(600)
def test_recorded_answers_are_debeziums() -> None:
    assert ask_oracle(CASES) == [a for _, a in recorded()]


def test_keys_are_connects_bytes_and_partitions() -> None:
    for case, answer in of_kind("key"):
        key = debezium_key(case["connector"], case["server_id"], case["rs"])
        assert key == base64.b64decode(answer["key"]), case
        assert murmur2(key) == answer["murmur2"]
        assert default_partition(key, case["partitions"]) == answer["partition"]
        assert parse_connect_key(key) is not None


def test_key_bytes_spelled_out() -> None:
    assert debezium_key("inventory-connector", "inventory") == b'["inventory-connector",{"server_id":"inventory"}]'
    assert debezium_key("inventory-connector", "inventory", "rs0") == (
        b'["inventory-connector",{"rs":"rs0","server_id":"inventory"}]'
    )


def test_exported_values_are_the_bytes_debezium_writes() -> None:
    checked = 0
    for case, answer in of_kind("offset"):
        if "mongocdc" not in case:
            continue
        assert connect_value(to_debezium(case["mongocdc"]).offset) == base64.b64decode(answer["value"]), case
        checked += 1
    assert checked == 5


def test_debeziums_values_import_as_the_same_position() -> None:
    for case, answer in of_kind("offset"):
        value = json.loads(base64.b64decode(answer["value"]))
        adopted = from_debezium(value).offset
        assert adopted["resume_token"] == case["stored"].get("resume_token")
        if case["stored"]["sec"] >= 0:
            assert (adopted["sec"], adopted["ord"]) == (case["stored"]["sec"], case["stored"]["ord"])
        else:  # a token without an event: the cluster time in the token
            assert (adopted["sec"], adopted["ord"]) == (0x69A1B2C3, 3)
        assert bool(adopted.get("initsync")) == bool(case["stored"].get("initsync"))
        if "mongocdc" in case and "transaction" not in case:
            expected = dict(case["mongocdc"])
            if "incremental_snapshot" in expected:  # Debezium's chunk position is not carried over: same start
                expected["incremental_snapshot"] = INCREMENTAL.to_offset()
            assert adopted == expected


def test_incremental_snapshot_from_debezium_restarts_the_current_collection() -> None:
    case, answer = next((c, a) for c, a in of_kind("offset") if "incremental_snapshot_collections" in c["stored"])
    adopted = from_debezium(json.loads(base64.b64decode(answer["value"])))
    state = IncrementalSnapshotState.from_offset(adopted.offset["incremental_snapshot"])
    assert state.snapshot_id == "f2b5b1a0-signal"
    assert state.collections == ("shop.orders", "shop.customers")
    assert state.filter_for("shop.customers") == {"tier": 1}
    assert not state.has_last_key and not state.has_maximum_key
    assert any("shop.orders is read again" in n for n in adopted.notes)


def test_java_string_hashes_and_hashmap_orders() -> None:
    for case, answer in of_kind("hash"):
        signed = [h - (1 << 32) if h >= 1 << 31 else h for h in map(java_string_hash, case["strings"])]
        assert signed == answer["hashes"]
    for case, answer in of_kind("hashmap"):
        assert java_hashmap_order(case["keys"]) == answer["order"]


def test_standalone_files_are_the_bytes_a_worker_saves() -> None:
    for case, answer in of_kind("file"):
        entries = {base64.b64decode(k): None if v is None else base64.b64decode(v) for k, v in case["entries"]}
        saved = base64.b64decode(answer["file"])
        assert decode_offsets_file(saved) == entries
        assert decode_offsets_file(encode_offsets_file(entries)) == entries
        if len(entries) <= 1:  # byte[] keys hash by identity: only a map of one entry has one order
            assert encode_offsets_file(entries) == saved


def test_murmur2_matches_kafkas_test_vectors() -> None:
    vectors = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    assert {k: murmur2(k) for k in vectors} == vectors


def test_live_offsets_keep_the_last_value_and_drop_tombstones() -> None:
    a, b = debezium_key("dbz", "app"), debezium_key("dbz", "other")
    entries: list[tuple[bytes | None, bytes | None, str]] = [
        (a, b'{"sec":1,"ord":1}', "t[0]@0"),
        (b, b'{"sec":5,"ord":1}', "t[1]@0"),
        (a, b'{"sec":2,"ord":1}', "t[0]@1"),
        (b, None, "t[1]@1"),
        (b"not json", b"{}", "t[2]@0"),
        (None, b"{}", "t[2]@1"),
        (b'["dbz",{"server_id":"x"}]', b"[1]", "t[2]@2"),
    ]
    found = live_offsets(entries)
    assert [(o.key, o.offset, o.where) for o in found] == [
        (a, {"sec": 2, "ord": 1}, "t[0]@1"),
        (b'["dbz",{"server_id":"x"}]', None, "t[2]@2"),
    ]


@given(st.dictionaries(st.text(max_size=10), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10), max_size=8))
def test_jackson_json_reads_back_as_the_same_map(offset: dict[str, Any]) -> None:
    assert json.loads(jackson_json(offset)) == offset


def record() -> None:
    """Ask the oracle and write the recording (needs the cached Connect distribution and Java)."""
    answers = ask_oracle(CASES)
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(json.dumps({"cases": CASES, "answers": answers}, indent=1, ensure_ascii=False) + "\n")
    print(f"recorded {len(answers)} answers in {RECORDED}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record()
    else:
        raise SystemExit("usage: python -m tests.unit.offsets.test_connect_format --record")
