"""Fixtures for the MongoDB contract suite.

The suite runs against ``MONGOCDC_TEST_MONGODB_URI`` (a real replica set or
mongos) when it is set, strictly: no expected failures apply.  Otherwise it
starts the surrogate named by ``MONGOCDC_TEST_MONGODB_SERVER`` (default
``tests.services.mongo.DEFAULT_SERVER``) and marks the behaviours that
candidate is known not to reproduce as strict xfails from ``KNOWN_GAPS``,
so a gap that gets fixed turns the run red until the table is updated
(``pytest --runxfail`` shows the raw pass/fail of a candidate).
"""

from __future__ import annotations

import contextlib
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

_TOKEN_FORMAT = (
    "resume tokens are hex-encoded BSON {s, t, n, k}, not mongod KeyString: a mongod-format token is refused"
)
_NX_ID_TEXT = "_id is stored as text: documentKey._id comes back as a string"
_NX_NO_RS = "hello has no setName/hosts/primary (needs directConnection=true)"
_NX_NO_AWAIT = "getMore on an idle change stream returns at once (maxAwaitTimeMS ignored)"
_NX_NO_TOKEN_CHECK = "an unknown resume token is accepted: the stream silently starts from now"
_MJS_NO_AWAIT = "change-stream getMore never blocks (maxAwaitTimeMS ignored)"
_MJS_NO_TXN = "no commitTransaction/abortTransaction: transactions are not supported"
_MJS_BAD_UPDATE = "update events put the update spec in documentKey/fullDocument; no updateDescription"

#: Wildcard key: every test of the suite.
ALL_TESTS = "*"
#: A reason starting with this marks a gap the candidate shows only sometimes:
#: a non-strict xfail, since a strict one would make the suite itself flaky.
SOMETIMES = "sometimes: "

#: candidate -> {test function name (or ALL_TESTS) -> why it fails there}.
#: Measured with `pytest tests/contract --runxfail`; see tests/README.md.
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "secantus": {
        "test_resume_token_outside_history_fails_with_history_error": _TOKEN_FORMAT + " with 9 FailedToParse",
    },
    "secantus-rs": {
        "test_resume_token_outside_history_fails_with_history_error": _TOKEN_FORMAT + " with 40647",
        "test_transaction_commit_delivers_all_events": "events of one transaction get distinct clusterTimes",
    },
    "nx": {
        "test_hello_advertises_replica_set_or_mongos": _NX_NO_RS,
        "test_replica_set_uri_discovers_primary": _NX_NO_RS,
        "test_build_info_reports_version": "buildInfo has no versionArray",
        "test_collection_watch_insert_event_fields": _NX_ID_TEXT,
        "test_document_key_keeps_bson_type_of_id": "_id is stored as text: _id 7 and '7' collide (DuplicateKeyError)",
        "test_change_event_cluster_time_is_bson_timestamp": "clusterTime is a datetime, not a bson Timestamp",
        "test_events_have_increasing_cluster_time": _NX_ID_TEXT + "; clusterTime is a datetime",
        "test_update_event_has_update_description": _NX_ID_TEXT + "; no updateDescription",
        "test_update_description_reports_truncated_arrays": "pipeline updates fail (code 8); no updateDescription",
        "test_update_without_lookup_has_no_full_document": "update events always carry the full document",
        "test_replace_event_fields": "a replacement is reported as operationType 'update'",
        "test_delete_event_fields": _NX_ID_TEXT + "; delete events carry the deleted document",
        "test_drop_collection_emits_drop_then_invalidate": "no drop/invalidate events",
        "test_start_after_invalidate_token_resumes": "no drop/invalidate events",
        "test_database_watch_sees_every_collection_of_its_database": "database-level watch delivers no events",
        "test_client_watch_sees_every_database": "deployment-level watch delivers no events",
        "test_watch_pipeline_match_filters_events": "database-level watch delivers no events",
        "test_start_at_operation_time_includes_that_operation": "replies carry no operationTime",
        "test_resume_token_outside_history_fails_with_history_error": _NX_NO_TOKEN_CHECK,
        "test_garbage_resume_token_is_rejected": _NX_NO_TOKEN_CHECK,
        "test_max_await_time_ms_blocks_idle_get_more": _NX_NO_AWAIT,
        "test_await_wakes_when_event_arrives": _NX_NO_AWAIT,
        "test_id_sort_mixed_numeric_types": "numeric _id sorts as text",
        "test_id_sort_bson_cross_type_order": "a Timestamp _id cannot be stored (not JSON serializable)",
        "test_id_range_numeric_is_type_bracketed": "_id is stored as text: _id 3 and '3' collide (DuplicateKeyError)",
        "test_transaction_events_carry_lsid_and_txn_number": "transaction events carry no lsid/txnNumber",
        "test_transaction_commit_delivers_all_events": _NX_ID_TEXT,
        "test_uncommitted_writes_are_invisible_outside_transaction": "uncommitted writes are visible to other readers",
    },
    "mongo-java-server": {
        "test_list_databases_includes_created_database": "listDatabases entries have no sizeOnDisk",
        "test_collection_watch_insert_event_fields": "change events have no ns",
        "test_change_event_wall_time_is_datetime": "change events have no wallTime",
        "test_update_event_has_update_description": _MJS_BAD_UPDATE,
        "test_update_description_reports_truncated_arrays": "pipeline updates fail (ClassCastException)",
        "test_update_without_lookup_has_no_full_document": _MJS_BAD_UPDATE,
        "test_replace_event_fields": "a replacement is reported as operationType 'update'",
        "test_delete_event_fields": "change events have no ns",
        "test_drop_collection_emits_drop_then_invalidate": "no drop/invalidate events",
        "test_start_after_invalidate_token_resumes": "no drop/invalidate events",
        "test_database_watch_sees_every_collection_of_its_database": "database-level watch delivers no events",
        "test_client_watch_sees_every_database": "no deployment-level watch (aggregate on admin: CommandNotFound)",
        "test_watch_pipeline_match_filters_events": "database-level watch delivers no events",
        "test_resume_after_token_replays_later_events": _MJS_BAD_UPDATE,
        "test_resume_token_survives_server_restart": SOMETIMES
        + "the oplog increment restarts at 1 after a restart, so entries written in the same second"
        + " as pre-restart ones repeat their timestamps and the resumed stream delivers nothing",
        "test_post_batch_resume_token_on_idle_stream": "no postBatchResumeToken",
        "test_resume_token_outside_history_fails_with_history_error": "hex-timestamp tokens; errors carry no code",
        "test_max_await_time_ms_blocks_idle_get_more": _MJS_NO_AWAIT,
        "test_await_wakes_when_event_arrives": _MJS_NO_AWAIT,
        "test_transaction_events_carry_lsid_and_txn_number": _MJS_NO_TXN,
        "test_transaction_commit_delivers_all_events": _MJS_NO_TXN,
        "test_aborted_transaction_emits_no_events": "writes in an aborted transaction are applied and emitted",
        "test_uncommitted_writes_are_invisible_outside_transaction": "writes in a transaction are visible at once",
    },
    "morphium": {
        ALL_TESTS: "MorphiumServer 5.1.9 has no insert/aggregate/serverStatus commands and no setName",
    },
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
        reason = gaps.get(name, gaps.get(ALL_TESTS))
        if reason is not None:
            strict = not reason.startswith(SOMETIMES)
            item.add_marker(pytest.mark.xfail(strict=strict, reason=f"{candidate_name()}: {reason}"))


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
    with contextlib.suppress(pymongo.errors.PyMongoError):
        mongo_client.drop_database(name)


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
