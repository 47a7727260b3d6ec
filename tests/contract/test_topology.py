"""Contract: what mongocdc reads about the deployment (hello, versions, catalogs)."""

from __future__ import annotations

import re

import pymongo
import pytest
from pymongo.database import Database

from tests.contract.conftest import Doc, Target, make_client


def test_hello_advertises_replica_set_or_mongos(client: pymongo.MongoClient[Doc]) -> None:
    """hello: a mongos says msg 'isdbgrid'; a replica-set primary names its set, hosts and primary."""
    reply = client.admin.command("hello")
    if reply.get("msg") == "isdbgrid":
        return
    assert isinstance(reply.get("setName"), str) and reply["setName"], reply
    hosts = reply.get("hosts")
    assert isinstance(hosts, list) and hosts, reply
    assert reply.get("primary") in hosts, reply
    assert reply.get("me") in hosts, reply
    assert reply.get("isWritablePrimary") is True, reply
    assert reply.get("secondary") is False, reply


def test_replica_set_uri_discovers_primary(client: pymongo.MongoClient[Doc], mongo_target: Target) -> None:
    """A replicaSet=<setName> URI built from hello's hosts (no directConnection) finds a writable primary."""
    reply = client.admin.command("hello")
    if reply.get("msg") == "isdbgrid":
        pytest.skip("mongos: no replica set to discover")
    set_name = reply.get("setName")
    assert isinstance(set_name, str) and set_name, reply
    hosts = ",".join(reply["hosts"])
    discovered = make_client(f"mongodb://{hosts}/?replicaSet={set_name}", serverSelectionTimeoutMS=5000)
    try:
        assert discovered.admin.command("ping")["ok"] == 1
        assert discovered.primary is not None
        assert discovered.topology_description.topology_type_name == "ReplicaSetWithPrimary"
    finally:
        discovered.close()


def test_build_info_reports_version(client: pymongo.MongoClient[Doc]) -> None:
    """buildInfo: version 'X.Y.Z...' and a matching versionArray."""
    info = client.admin.command("buildInfo")
    version = info.get("version")
    assert isinstance(version, str) and re.match(r"^\d+\.\d+\.\d+", version), info
    array = info.get("versionArray")
    assert isinstance(array, list) and len(array) >= 3, info
    assert [int(part) for part in array[:3]] == [int(part) for part in re.findall(r"\d+", version)[:3]]


def test_server_status_reports_version(client: pymongo.MongoClient[Doc]) -> None:
    """serverStatus: the same version as buildInfo, plus host and uptime."""
    status = client.admin.command("serverStatus")
    assert status.get("version") == client.admin.command("buildInfo")["version"], status.get("version")
    assert isinstance(status.get("host"), str) and status["host"]
    assert isinstance(status.get("uptime"), (int, float))


def test_list_databases_includes_created_database(client: pymongo.MongoClient[Doc], db: Database[Doc]) -> None:
    """listDatabases: a database with data is listed with name, sizeOnDisk and empty."""
    db["c"].insert_one({"_id": 1})
    reply = client.admin.command("listDatabases")
    entries = {entry["name"]: entry for entry in reply["databases"]}
    assert db.name in entries, sorted(entries)
    entry = entries[db.name]
    assert isinstance(entry.get("sizeOnDisk"), (int, float)), entry
    assert entry.get("empty") is False, entry
    assert db.name in client.list_database_names()


def test_list_collections_names_and_types(db: Database[Doc]) -> None:
    """listCollections: created collections are listed with type 'collection'."""
    db.create_collection("alpha")
    db["beta"].insert_one({"_id": 1})
    infos = {info["name"]: info for info in db.list_collections()}
    assert {"alpha", "beta"} <= set(infos), sorted(infos)
    for name in ("alpha", "beta"):
        assert infos[name].get("type") == "collection", infos[name]
    assert sorted(name for name in db.list_collection_names() if not name.startswith("system.")) == ["alpha", "beta"]
