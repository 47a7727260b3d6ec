"""The comparison of two connectors' records: what must be equal is compared, only the volatile is not."""

from __future__ import annotations

import json
from typing import Any

from mongocdc.events.compare import Record, compare


def _value(prefix: str, op: str = "c", after: str | None = '{"_id": 1}', **source: Any) -> bytes:
    block = {"version": "x", "connector": "mongodb", "name": prefix, "ts_ms": 5, "db": "d", "collection": "c", **source}
    return json.dumps({"after": after, "source": block, "op": op, "ts_ms": 7}).encode()


def _record(prefix: str, value: bytes | None, partition: int = 0, key: bytes = b'{"id":"1"}') -> Record:
    return Record(f"{prefix}.d.c", partition, key, value)


def test_prefix_version_and_processing_time_are_not_differences() -> None:
    a = [_record("dbz", _value("dbz"))]
    b = [Record("mc.d.c", 0, b'{"id":"1"}', json.dumps(json.loads(_value("mc")) | {"ts_ms": 9}).encode())]
    result = compare(a, b, reference_prefix="dbz", compared_prefix="mc")
    assert result.identical, [d.describe() for d in result.differences]
    assert result.records == {"<prefix>.d.c": (1, 1)}


def test_a_changed_field_a_partition_a_missing_record_and_field_order_are_differences() -> None:
    a = [_record("dbz", _value("dbz")), _record("dbz", None)]
    b = [Record("mc.d.c", 1, b'{"id":"1"}', _value("mc", after='{"_id": 2}'))]
    wheres = {d.where for d in compare(a, b, reference_prefix="dbz", compared_prefix="mc").differences}
    assert wheres == {"record count", "partition", "after"}
    reordered = json.dumps({"op": "c", **{k: v for k, v in json.loads(_value("mc")).items() if k != "op"}}).encode()
    result = compare(a[:1], [_record("mc", reordered)], reference_prefix="dbz", compared_prefix="mc")
    assert [d.where for d in result.differences] == ["fields"]


def test_snapshot_read_times_are_volatile_but_streamed_times_are_not() -> None:
    a = [_record("dbz", _value("dbz", op="r", ts_ms=1)), Record("dbz.d.c", 0, b'{"id":"2"}', _value("dbz", ts_ms=1))]
    b = [_record("mc", _value("mc", op="r", ts_ms=2)), Record("mc.d.c", 0, b'{"id":"2"}', _value("mc", ts_ms=2))]
    result = compare(a, b, reference_prefix="dbz", compared_prefix="mc")
    assert [(d.key, d.where) for d in result.differences] == [('{"id":"2"}', "source.ts_ms")]


def test_an_update_looked_up_later_matches_a_later_state_of_the_document() -> None:
    def update(prefix: str, after: str | None) -> bytes:
        value = json.loads(_value(prefix, op="u", after=after))
        value["updateDescription"] = {"updatedFields": "{}"}
        return json.dumps(value).encode()

    a = [_record("dbz", update("dbz", '{"v": 1}')), _record("dbz", update("dbz", '{"v": 2}'))]
    later = [_record("mc", update("mc", '{"v": 2}')), _record("mc", update("mc", '{"v": 2}'))]
    assert compare(a, later, reference_prefix="dbz", compared_prefix="mc").identical
    wrong = [_record("mc", update("mc", '{"v": 3}')), _record("mc", update("mc", '{"v": 2}'))]
    assert [d.where for d in compare(a, wrong, reference_prefix="dbz", compared_prefix="mc").differences] == ["after"]


def test_heartbeats_compare_shape_key_and_partition_not_count() -> None:
    def beat(prefix: str, partition: int = 0) -> Record:
        key = json.dumps({"serverName": prefix}).encode()
        return Record(f"__debezium-heartbeat.{prefix}", partition, key, json.dumps({"ts_ms": 1}).encode())

    assert compare([beat("dbz")] * 3, [beat("mc")], reference_prefix="dbz", compared_prefix="mc").identical
    result = compare([beat("dbz")], [beat("mc", 2)], reference_prefix="dbz", compared_prefix="mc")
    assert [d.where for d in result.differences] == ["partitions"]


def test_other_connectors_topics_are_ignored_and_headers_compared() -> None:
    a = [Record("dbz.d.c", 0, b"k", b"{}", (("__debezium.context.connectorLogicalName", b"dbz"),))]
    b = [
        Record("mc.d.c", 0, b"k", b"{}", (("__debezium.context.connectorLogicalName", b"mc"),)),
        Record("other.d.c", 0, b"k", b"{}"),
    ]
    assert compare(a, b, reference_prefix="dbz", compared_prefix="mc").identical
    result = compare(a, [Record("mc.d.c", 0, b"k", b"{}")], reference_prefix="dbz", compared_prefix="mc")
    assert [d.where for d in result.differences] == ["headers"]


def test_watermarks_incremental_positions_and_the_last_reads_key_are_the_connectors_own() -> None:
    window = b'{"id":"\\"6b45f320-32f9-435a-b6f4-8fda3eb689db-open\\""}'
    a = [
        Record("dbz.d.sig", 0, window, _value("dbz", after='{"type": "snapshot-window-open"}')),
        _record("dbz", _value("dbz", op="r", snapshot="incremental", ord=22, ts_ms=1000)),
        Record("dbz.d.c", 0, b'{"id":"2"}', _value("dbz", op="r", snapshot="last", ord=-1)),
        Record("dbz.d.c", 0, b'{"id":"3"}', _value("dbz", op="r", snapshot="true", ord=-1)),
    ]
    b = [
        _record("mc", _value("mc", op="r", snapshot="incremental", ord=7, ts_ms=2000)),
        Record("mc.d.c", 0, b'{"id":"2"}', _value("mc", op="r", snapshot="true", ord=-1)),
        Record("mc.d.c", 0, b'{"id":"3"}', _value("mc", op="r", snapshot="last", ord=-1)),
    ]
    assert compare(a, b, reference_prefix="dbz", compared_prefix="mc").identical
    b[2] = Record("mc.d.other", 0, b'{"id":"3"}', _value("mc", op="r", snapshot="last", ord=-1))
    wheres = {d.where for d in compare(a, b, reference_prefix="dbz", compared_prefix="mc").differences}
    assert "snapshot 'last' read" in wheres


def test_transaction_records_are_compared_with_their_times() -> None:
    def txn(prefix: str, ts_ms: int) -> Record:
        value = {"status": "END", "id": "x:1", "event_count": 1, "data_collections": [], "ts_ms": ts_ms}
        return Record(f"{prefix}.transaction", 1, b'{"id":"x:1"}', json.dumps(value).encode())

    assert compare([txn("dbz", 5)], [txn("mc", 5)], reference_prefix="dbz", compared_prefix="mc").identical
    result = compare([txn("dbz", 5)], [txn("mc", 6)], reference_prefix="dbz", compared_prefix="mc")
    assert [d.where for d in result.differences] == ["ts_ms"]


def test_mongocdcs_own_headers_are_not_compared() -> None:
    context = ("__debezium.context.connectorLogicalName", b"dbz")
    a = [Record("dbz.d.c", 0, b"k", b"{}", (context,))]
    b = [
        Record(
            "mc.d.c",
            0,
            b"k",
            b"{}",
            (("__debezium.context.connectorLogicalName", b"mc"), ("__mongocdc.clusterTime", b"{}")),
        )
    ]
    assert compare(a, b, reference_prefix="dbz", compared_prefix="mc").identical
