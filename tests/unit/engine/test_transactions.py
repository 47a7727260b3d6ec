"""Transaction metadata over recorded MongoDB change documents: BEGIN/END records, blocks, restarts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bson import json_util
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocdc.engine.transactions import TransactionRecord, TransactionState, TransactionTracker
from mongocdc.events.changes import StreamedChange, convert_change
from mongocdc.events.envelope import EnvelopeCodec, value_payload
from mongocdc.events.java import java_hashmap_order
from mongocdc.events.model import ChangeEvent, Op, SourceInfo, TransactionBlock

RECORDED = Path(__file__).parent.parent / "events" / "recorded" / "transactions.jsonl"
# Debezium's transaction id: the lsid document as strict JSON, ":", the txnNumber.
LSID_A = '{"id": {"$binary": "bxwqnjtNTl+KexwtPk9aaw==","$type": "04"},"uid": {"$binary": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","$type": "00"}}'  # noqa: E501
TXN_A = LSID_A + ":7"


def recorded_events() -> list[ChangeEvent]:
    """Plain insert, plain update, txn A (orders, customers, orders), plain delete, txn B (2 × products), insert."""
    events = []
    for line in RECORDED.read_text().splitlines():
        item = convert_change(json_util.loads(line), rs="rs0")
        assert isinstance(item, StreamedChange)
        events.append(item.event)
    return events


TXN_B = f"{recorded_events()[6].source.lsid}:1"


Output = list[TransactionRecord | ChangeEvent]


def feed(tracker: TransactionTracker, events: list[ChangeEvent], start_ms: int = 0) -> Output:
    out: Output = []
    for n, event in enumerate(events):
        before, enriched = tracker.on_event(event, start_ms + n)
        out.extend(before)
        out.append(enriched)
    return out


def records(out: Output) -> list[TransactionRecord]:
    return [r for r in out if isinstance(r, TransactionRecord)]


def test_recorded_stream_gets_begin_blocks_and_end_in_place() -> None:
    events = recorded_events()
    tracker = TransactionTracker(idle_end_ms=1000)
    out = feed(tracker, events[:8])

    shape = [r.status if isinstance(r, TransactionRecord) else r.transaction and r.transaction.id for r in out]
    assert shape == [None, None, "BEGIN", TXN_A, TXN_A, TXN_A, "END", None, "BEGIN", TXN_B, TXN_B]
    begin_a, end_a, begin_b = records(out)

    assert begin_a == TransactionRecord("BEGIN", TXN_A, 1705000002300)
    assert begin_a.value_bytes(False) == (
        b'{"status":"BEGIN","id":' + json.dumps(TXN_A).encode() + b',"event_count":null,"data_collections":null,'
        b'"ts_ms":1705000002300}'
    )
    assert json.loads(begin_a.key_bytes()) == {"id": TXN_A}
    # END carries the time of the change that ended the transaction, as Debezium's does.
    assert json.loads(end_a.value_bytes(False)) == {
        "status": "END",
        "id": TXN_A,
        "ts_ms": events[5].source.ts_ms,
        "event_count": 3,
        "data_collections": [  # Debezium's order: a Java HashMap's
            {"data_collection": "inventory.customers", "event_count": 1},
            {"data_collection": "inventory.orders", "event_count": 2},
        ],
    }
    assert json.loads(end_a.key_bytes()) == {"id": TXN_A}
    assert begin_b == TransactionRecord("BEGIN", TXN_B, 1705000004500)

    data = [r for r in out if isinstance(r, ChangeEvent)]
    assert [e.transaction for e in data] == [
        None,
        None,
        TransactionBlock(TXN_A, 1, 1),  # orders
        TransactionBlock(TXN_A, 2, 1),  # customers
        TransactionBlock(TXN_A, 3, 2),  # orders
        None,
        TransactionBlock(TXN_B, 1, 1),
        TransactionBlock(TXN_B, 2, 2),
    ]
    # Apart from the block, the events are untouched.
    assert all(d == e._replace(transaction=d.transaction) for d, e in zip(data, events[:8], strict=True))

    # The last (plain) event ends transaction B first.
    before, last = tracker.on_event(events[8], 100)
    assert last.transaction is None
    assert [json.loads(r.value_bytes()) for r in before] == [
        {
            "status": "END",
            "id": TXN_B,
            "ts_ms": events[8].source.ts_ms,
            "event_count": 2,
            "data_collections": [{"data_collection": "inventory.products", "event_count": 2}],
        }
    ]
    assert tracker.on_idle(10_000) == []


def test_block_appears_in_the_envelope() -> None:
    events = recorded_events()
    out = feed(TransactionTracker(), events[:4])
    enriched = out[-1]
    assert isinstance(enriched, ChangeEvent)
    payload = value_payload(enriched, "app", 42)
    assert payload["transaction"] == {"id": TXN_A, "total_order": 2, "data_collection_order": 1}
    assert json.loads(EnvelopeCodec("app").value(enriched, 42))["transaction"]["id"] == TXN_A


def test_another_transaction_ends_the_previous_one_before_its_begin() -> None:
    events = recorded_events()
    # Transaction A directly followed by transaction B.
    out = feed(TransactionTracker(), events[2:5] + events[6:8])
    assert [r.status + ":" + r.id for r in records(out)] == ["BEGIN:" + TXN_A, "END:" + TXN_A, "BEGIN:" + TXN_B]
    assert out.index(records(out)[1]) == 4  # after A's three events, before B's BEGIN


def test_idle_end_only_after_idle_end_ms() -> None:
    events = recorded_events()
    tracker = TransactionTracker(idle_end_ms=500)
    feed(tracker, events[2:5], start_ms=1000)  # last event at 1002
    assert tracker.on_idle(1002) == []
    assert tracker.on_idle(1501) == []
    assert tracker.open_transaction == TXN_A
    (end,) = tracker.on_idle(1502)
    assert (end.status, end.id, end.event_count) == ("END", TXN_A, 3)
    assert end.data_collections == (("inventory.customers", 1), ("inventory.orders", 2))
    assert tracker.on_idle(9999) == []
    state = tracker.state
    assert state is not None and state.ended is True
    # The next plain event brings no second END.
    before, _ = tracker.on_event(events[5], 10_000)
    assert before == []


def test_idle_with_nothing_open_is_quiet() -> None:
    tracker = TransactionTracker(idle_end_ms=0)
    assert tracker.on_idle(0) == []
    feed(tracker, recorded_events()[:2])
    assert tracker.on_idle(10) == []
    assert tracker.state is None


def test_without_idle_end_only_the_next_change_ends_a_transaction() -> None:
    """Debezium's behaviour (the default): no END on idle polls nor on control events."""
    events = recorded_events()
    tracker = TransactionTracker()
    feed(tracker, events[2:4])
    assert tracker.on_idle(10**9) == [] and tracker.on_control() == []
    (end,) = records(feed(tracker, events[5:6], start_ms=10**9))
    assert (end.status, end.event_count, end.ts_ms) == ("END", 2, events[5].source.ts_ms)


def test_control_event_ends_the_transaction() -> None:
    events = recorded_events()
    tracker = TransactionTracker(idle_end_ms=1000)
    feed(tracker, events[2:4])
    (end,) = tracker.on_control()
    assert (end.status, end.event_count) == ("END", 2)
    assert tracker.on_control() == []
    assert tracker.open_transaction is None


def restarted(tracker: TransactionTracker, idle_end_ms: int | None = None) -> TransactionTracker:
    """A tracker continuing from ``tracker``'s state as the offset store keeps it (JSON)."""
    state = tracker.state
    stored = None if state is None else TransactionState.from_offset(json.loads(json.dumps(state.to_offset())))
    assert stored == state
    return TransactionTracker(idle_end_ms, stored)


def test_restart_in_the_middle_continues_the_counters() -> None:
    events = recorded_events()
    whole = feed(TransactionTracker(), events)
    for split in range(len(events) + 1):
        first = TransactionTracker()
        out = feed(first, events[:split])
        second = restarted(first)
        out += feed(second, events[split:], start_ms=split)
        assert out == whole, f"split at {split}"
    statuses = [r.status for r in records(whole)]
    assert statuses == ["BEGIN", "END", "BEGIN", "END"]


def test_restart_after_idle_end_emits_no_second_end() -> None:
    events = recorded_events()
    first = TransactionTracker(idle_end_ms=10)
    feed(first, events[2:5])
    assert len(first.on_idle(100)) == 1
    second = restarted(first, idle_end_ms=10)
    assert second.on_idle(1000) == [] and second.on_idle(2000) == []
    assert second.on_control() == []
    before, event = second.on_event(events[5], 3000)
    assert before == [] and event.transaction is None


def test_restart_in_a_transaction_ends_it_after_idle() -> None:
    events = recorded_events()
    first = TransactionTracker(idle_end_ms=10)
    feed(first, events[2:4])
    second = restarted(first, idle_end_ms=10)
    assert second.on_idle(5000) == []  # the idle time starts with the restart
    before, event = second.on_event(events[4], 5001)
    assert before == [] and event.transaction == TransactionBlock(TXN_A, 3, 2)
    (end,) = second.on_idle(5011)
    assert end.event_count == 3


def test_schemas_enable_wraps_with_debezium_schema_names() -> None:
    record = TransactionRecord("END", "x:1", 5, 1, (("d.c", 1),))
    key = json.loads(record.key_bytes(True))
    value = json.loads(record.value_bytes(True))
    assert key["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataKey"
    assert key["payload"] == {"id": "x:1"}
    assert value["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataValue"
    assert [f["field"] for f in value["schema"]["fields"]] == list(value["payload"])
    assert value["payload"] == json.loads(record.value_bytes(False))
    assert list(value["payload"]) == ["status", "id", "event_count", "data_collections", "ts_ms"]
    items = value["schema"]["fields"][3]["items"]
    assert items["name"] == "event.collection"
    assert [f["field"] for f in items["fields"]] == ["data_collection", "event_count"]


# -- property: any interleaving -----------------------------------------------------------------

COLLECTIONS = ["a", "b", "c"]


def _event(n: int, coll: str, txn: int | None) -> ChangeEvent:
    source = SourceInfo(
        "db",
        coll,
        sec=1000 + n,
        ord=1,
        lsid=None if txn is None else f"session-{txn % 2}",
        txn_number=None if txn is None else txn,
    )
    return ChangeEvent(Op.CREATE, str(n), source, after="{}")


# A stream is a sequence of runs: a plain event, or a transaction's consecutive events (unique txn numbers),
# and between items possibly idle polls or control events.
runs = st.lists(
    st.tuples(
        st.one_of(st.none(), st.lists(st.sampled_from(COLLECTIONS), min_size=1, max_size=5)),
        st.sampled_from(["none", "idle", "control"]),
        st.sampled_from(COLLECTIONS),
    ),
    max_size=12,
)


def _run(events: list[tuple[ChangeEvent, str]], restart_at: int | None) -> list[Any]:
    """Feed the tracker, with idle polls (short ones inside transactions), control events and a restart."""
    tracker = TransactionTracker(idle_end_ms=100)
    now = 0
    out: list[Any] = []
    for i, (event, after) in enumerate(events):
        if i == restart_at:
            tracker = restarted(tracker, 100)
        now += 1
        before, enriched = tracker.on_event(event, now)
        out += before
        out.append(enriched)
        if after == "idle":
            now += 100
            out += tracker.on_idle(now)
        elif after == "control":
            out += tracker.on_control()
        else:
            now += 99  # a poll that comes back empty sooner than idle_end_ms
            out += tracker.on_idle(now)
    now += 100
    out += tracker.on_idle(now)
    assert tracker.open_transaction is None
    return out


@settings(max_examples=200, deadline=None)
@given(runs, st.data())
def test_every_transaction_gets_one_begin_before_and_one_end_after(
    stream: list[tuple[list[str] | None, str, str]], data: st.DataObject
) -> None:
    events: list[tuple[ChangeEvent, str]] = []  # event, what follows it
    expected: dict[str, dict[str, int]] = {}
    n = 0
    for txn_number, (txn_colls, after, plain_coll) in enumerate(stream):
        if txn_colls is None:
            events.append((_event(n, plain_coll, None), after))
            n += 1
            continue
        tid = f"session-{txn_number % 2}:{txn_number}"
        expected[tid] = {}
        for i, coll in enumerate(txn_colls):
            last = i == len(txn_colls) - 1
            events.append((_event(n, coll, txn_number), after if last else "none"))
            expected[tid][f"db.{coll}"] = expected[tid].get(f"db.{coll}", 0) + 1
            n += 1
    restart_at = data.draw(st.integers(0, len(events)))
    out = _run(events, restart_at)
    assert out == _run(events, None)  # a restart anywhere changes nothing

    for tid, per_coll in expected.items():
        positions = [i for i, r in enumerate(out) if isinstance(r, TransactionRecord) and r.id == tid]
        assert [out[i].status for i in positions] == ["BEGIN", "END"]
        begin, end = positions
        members = [
            i for i, r in enumerate(out) if isinstance(r, ChangeEvent) and r.transaction and r.transaction.id == tid
        ]
        assert members == list(range(begin + 1, end))  # contiguous, between BEGIN and END
        assert [out[i].transaction.total_order for i in members] == list(range(1, len(members) + 1))
        seen: dict[str, int] = {}
        for i in members:
            ns = out[i].namespace
            seen[ns] = seen.get(ns, 0) + 1
            assert out[i].transaction.data_collection_order == seen[ns]
        assert out[end].event_count == sum(per_coll.values())
        assert dict(out[end].data_collections) == per_coll
        # in the order Debezium's HashMap iterates them
        assert [c for c, _ in out[end].data_collections] == java_hashmap_order(per_coll)
    plain = [r for r in out if isinstance(r, ChangeEvent) and r.source.lsid is None]
    assert all(e.transaction is None for e in plain)
