"""Fixtures for the MongoDB contract suite.

The suite runs against ``MONGOCDC_TEST_MONGODB_URI`` (a real replica set or
mongos) when it is set, strictly: no expected failures apply.  Otherwise it
starts the surrogate named by ``MONGOCDC_TEST_MONGODB_SERVER`` (default
``tests.services.mongo.DEFAULT_SERVER``) and marks the behaviours that
candidate is known not to reproduce as strict xfails from ``KNOWN_GAPS``,
so a gap that gets fixed turns the run red until the table is updated.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.database import Database

from tests.services import mongo as services

URI_ENV = "MONGOCDC_TEST_MONGODB_URI"
CONTRACT_DIR = Path(__file__).resolve().parent

Doc = dict[str, Any]

_NO_RS = "hello has no setName/hosts/primary (standalone-looking)"
_NO_TS = "clusterTime is a datetime, not a bson Timestamp"
_NO_UPD = "update events carry no updateDescription"
_NO_AWAIT = "getMore on an idle change stream returns at once (maxAwaitTimeMS ignored)"
_NO_DB_WATCH = "database-level watch delivers no events"
_NO_CLUSTER_WATCH = "deployment-level watch delivers no events"
_ID_TEXT = "_id values are compared/stored as text"
_M_INSERT = "MorphiumServer 5.1.9 has no 'insert' command (and no setName)"

#: candidate -> {test function name -> why it fails there}.  Measured; see tests/README.md.
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "secantus": {},
    "nx": {
        "test_hello_advertises_replica_set_or_mongos": _NO_RS,
        "test_replica_set_uri_discovers_primary": _NO_RS,
        "test_document_key_keeps_bson_type_of_id": "documentKey._id is returned as a string",
        "test_change_event_cluster_time_is_bson_timestamp": _NO_TS,
        "test_events_have_increasing_cluster_time": _NO_TS,
        "test_update_event_has_update_description": _NO_UPD,
        "test_update_description_reports_truncated_arrays": _NO_UPD,
        "test_update_without_lookup_has_no_full_document": "update events always carry the full document",
        "test_replace_event_fields": "a replacement is reported as operationType 'update'",
        "test_delete_event_fields": "delete events carry the deleted document as fullDocument",
        "test_drop_collection_emits_drop_then_invalidate": "no drop/invalidate events",
        "test_start_after_invalidate_token_resumes": "no drop/invalidate events",
        "test_database_watch_sees_every_collection_of_its_database": _NO_DB_WATCH,
        "test_client_watch_sees_every_database": _NO_CLUSTER_WATCH,
        "test_watch_pipeline_match_filters_events": _NO_DB_WATCH,
        "test_start_at_operation_time_includes_that_operation": "no operationTime / startAtOperationTime",
        "test_resume_token_outside_history_fails_with_history_error": "unknown resume tokens are accepted",
        "test_garbage_resume_token_is_rejected": "unknown resume tokens are accepted",
        "test_max_await_time_ms_blocks_idle_get_more": _NO_AWAIT,
        "test_await_wakes_when_event_arrives": _NO_AWAIT,
        "test_id_sort_mixed_numeric_types": _ID_TEXT,
        "test_id_sort_bson_cross_type_order": _ID_TEXT,
        "test_id_range_numeric_is_type_bracketed": _ID_TEXT,
        "test_transaction_events_carry_lsid_and_txn_number": "events of a transaction carry no lsid/txnNumber",
        "test_transaction_commit_delivers_all_events": "events of a committed transaction are lost",
        "test_aborted_transaction_emits_no_events": "writes of an aborted transaction are emitted",
        "test_uncommitted_writes_are_invisible_outside_transaction": "uncommitted writes leak",
    },
    "mongo-java-server": {},
    "morphium": {},
}


def using_external_server() -> bool:
    return bool(os.environ.get(URI_ENV, "").strip())


def candidate_name() -> str:
    """``external`` for MONGOCDC_TEST_MONGODB_URI, else the selected surrogate's name."""
    return "external" if using_external_server() else services.selected_server_name()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mongodb: needs a MongoDB (real, or a surrogate from tests/services/mongo.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gaps = {} if using_external_server() else KNOWN_GAPS.get(candidate_name(), {})
    for item in items:
        if CONTRACT_DIR not in Path(str(item.path)).resolve().parents:
            continue
        item.add_marker(pytest.mark.mongodb)
        name = getattr(item, "originalname", item.name)
        reason = gaps.get(name)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"{candidate_name()}: {reason}"))


@dataclass(frozen=True)
class Target:
    """The MongoDB the suite talks to."""

    name: str
    uri: str
    server: services.MongoServer | None


def make_client(uri: str, **options: Any) -> pymongo.MongoClient[Doc]:
    options.setdefault("serverSelectionTimeoutMS", 15000)
    options.setdefault("socketTimeoutMS", 60000)
    return pymongo.MongoClient(uri, **options)


@pytest.fixture(scope="session")
def mongo_target() -> Iterator[Target]:
    uri = os.environ.get(URI_ENV, "").strip()
    if uri:
        yield Target(name="external", uri=uri, server=None)
        return
    server = services.server_from_env()
    server.start()
    try:
        yield Target(name=server.name, uri=server.uri, server=server)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def client(mongo_target: Target) -> Iterator[pymongo.MongoClient[Doc]]:
    mongo_client = make_client(mongo_target.uri)
    try:
        yield mongo_client
    finally:
        mongo_client.close()


def _drop_quietly(mongo_client: pymongo.MongoClient[Doc], name: str) -> None:
    try:
        mongo_client.drop_database(name)
    except pymongo.errors.PyMongoError:
        pass


@pytest.fixture
def db_name_factory(client: pymongo.MongoClient[Doc]) -> Iterator[Callable[[], str]]:
    """Fresh uuid-named database names; those databases are dropped afterwards."""
    names: list[str] = []

    def make() -> str:
        name = f"cdc_{uuid.uuid4().hex[:16]}"
        names.append(name)
        return name

    yield make
    for name in names:
        _drop_quietly(client, name)


@pytest.fixture
def db(client: pymongo.MongoClient[Doc], db_name_factory: Callable[[], str]) -> Database[Doc]:
    """This test's own uuid-named database."""
    return client[db_name_factory()]


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[[], services.MongoServer]]:
    """Start extra servers of the selected candidate with persistent data in ``tmp_path``.

    Only for surrogates the suite launches itself: skipped with an external URI.
    """
    if using_external_server():
        pytest.skip(f"needs a server this suite can restart; {URI_ENV} is set")
    started: list[services.MongoServer] = []

    def make() -> services.MongoServer:
        server = services.server_class()(data_dir=tmp_path / f"server{len(started)}")
        started.append(server)
        server.start()
        return server

    yield make
    for server in started:
        server.stop()
