"""Contract: multi-document transactions as seen by reads and by change streams."""

from __future__ import annotations

import uuid

import pymongo
from bson import Int64
from pymongo.database import Database

from tests.contract.conftest import Doc
from tests.contract.helpers import POLL_AWAIT_MS, changes_until, is_marker, key_of


def _marker() -> str:
    return f"marker-{uuid.uuid4().hex}"


def _prepare(db: Database[Doc]) -> None:
    # Collections must exist before a transaction writes to them on MongoDB < 4.4.
    db.create_collection("a")
    db.create_collection("b")


def test_transaction_events_carry_lsid_and_txn_number(client: pymongo.MongoClient[Doc], db: Database[Doc]) -> None:
    """Events of a committed transaction carry the session's lsid and the same txnNumber; other writes do not."""
    _prepare(db)
    marker = _marker()
    coll = db["a"]
    with coll.watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        with client.start_session() as session:
            with session.start_transaction():
                coll.insert_one({"_id": 1}, session=session)
                coll.insert_one({"_id": 2}, session=session)
            session_id = session.session_id
        coll.insert_one({"_id": marker})
        events = changes_until(stream, is_marker(marker))
    in_txn = events[:-1]
    assert [key_of(event) for event in in_txn] == [1, 2], events
    for event in in_txn:
        assert isinstance(event.get("lsid"), dict), event
        assert event["lsid"]["id"] == session_id["id"], event
        assert isinstance(event.get("txnNumber"), (int, Int64)), event
    assert in_txn[0]["txnNumber"] == in_txn[1]["txnNumber"]
    assert "lsid" not in events[-1] and "txnNumber" not in events[-1], events[-1]


def test_transaction_commit_delivers_all_events(client: pymongo.MongoClient[Doc], db: Database[Doc]) -> None:
    """Every write of a transaction spanning two collections is delivered, in order, once committed."""
    _prepare(db)
    marker = _marker()
    with (
        db["a"].watch(max_await_time_ms=POLL_AWAIT_MS) as stream_a,
        db["b"].watch(max_await_time_ms=POLL_AWAIT_MS) as stream_b,
    ):
        with client.start_session() as session, session.start_transaction():
            db["a"].insert_one({"_id": 1, "v": 1}, session=session)
            db["b"].insert_one({"_id": 2}, session=session)
            db["a"].update_one({"_id": 1}, {"$set": {"v": 2}}, session=session)
            db["b"].delete_one({"_id": 2}, session=session)
        db["a"].insert_one({"_id": marker})
        db["b"].insert_one({"_id": marker})
        events_a = changes_until(stream_a, is_marker(marker))
        events_b = changes_until(stream_b, is_marker(marker))
    assert [(event["operationType"], key_of(event)) for event in events_a] == [
        ("insert", 1),
        ("update", 1),
        ("insert", marker),
    ]
    assert [(event["operationType"], key_of(event)) for event in events_b] == [
        ("insert", 2),
        ("delete", 2),
        ("insert", marker),
    ]
    # One transaction: every event of it shares one clusterTime on a replica set.
    assert len({str(event["clusterTime"]) for event in events_a[:-1] + events_b[:-1]}) == 1


def test_aborted_transaction_emits_no_events(client: pymongo.MongoClient[Doc], db: Database[Doc]) -> None:
    """An aborted transaction leaves no data and no change events."""
    _prepare(db)
    marker = _marker()
    with db["a"].watch(max_await_time_ms=POLL_AWAIT_MS) as stream:
        with client.start_session() as session:
            session.start_transaction()
            db["a"].insert_one({"_id": "rolled-back"}, session=session)
            db["b"].insert_one({"_id": "rolled-back"}, session=session)
            session.abort_transaction()
        db["a"].insert_one({"_id": marker})
        events = changes_until(stream, is_marker(marker))
    assert [key_of(event) for event in events] == [marker]
    assert db["a"].find_one({"_id": "rolled-back"}) is None
    assert db["b"].find_one({"_id": "rolled-back"}) is None


def test_uncommitted_writes_are_invisible_outside_transaction(
    client: pymongo.MongoClient[Doc], db: Database[Doc]
) -> None:
    """Until commit, a transaction's writes are invisible to other readers; after commit they are visible."""
    _prepare(db)
    with client.start_session() as session:
        session.start_transaction()
        db["a"].insert_one({"_id": "pending"}, session=session)
        assert db["a"].find_one({"_id": "pending"}, session=session) is not None
        assert db["a"].find_one({"_id": "pending"}) is None
        session.commit_transaction()
    assert db["a"].find_one({"_id": "pending"}) is not None
