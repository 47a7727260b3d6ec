"""Shard discovery against the config-server stand-in of ``tests/services/sharded.py``.

What is real here: one SecantusDB server per shard, each a replica set with its
own name and oplog; a config server whose ``config.shards`` lists them; pymongo
connecting with the connection strings mongocdc builds. What is not: mongos,
chunk migration (see the harness's docstring).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pymongo.errors
import pytest

from mongocdc.sources.mongo.shards import ShardChanges, ShardWatcher, list_shards, shard_connection_string
from mongocdc.sources.mongo.topology import Shard, discover
from tests.services.sharded import ShardedCluster

pytestmark = pytest.mark.mongodb

Doc = dict[str, Any]
TIMEOUT = 20.0

#: A user name and password with every character a connection string must escape.
USER = "cdc@corp"
PASSWORD = "p@ss:w/rd?#[]% +é"


def client_for(uri: str) -> pymongo.MongoClient[Doc]:
    return pymongo.MongoClient(uri, serverSelectionTimeoutMS=15000)


def next_change(stream: Any, timeout: float = TIMEOUT) -> Doc:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        change: Doc | None = stream.try_next()
        if change is not None:
            return change
    raise AssertionError(f"no change event within {timeout:.0f} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShardedCluster]:
    """Config server plus two shards, every server requiring the credentials above."""
    with ShardedCluster(shards=2, data_dir=tmp_path_factory.mktemp("sharded"), credentials=(USER, PASSWORD)) as sharded:
        yield sharded


@pytest.fixture(scope="module")
def seed_client(cluster: ShardedCluster) -> Iterator[pymongo.MongoClient[Doc]]:
    with client_for(cluster.config_uri) as client:
        yield client


def test_config_server_lists_every_shard_replica_set(
    cluster: ShardedCluster, seed_client: pymongo.MongoClient[Doc]
) -> None:
    shards = list_shards(seed_client)
    assert shards == [
        Shard(name, server.repl_set, (server.host_port,)) for name, server in sorted(cluster.shards.items())
    ]
    assert [shard.replica_set for shard in shards] == ["shard00-rs", "shard01-rs"]
    # The stand-in is a replica set to `hello` (no configsvr field, no mongos): discover() says so.
    assert discover(seed_client).kind == "replica_set"


def test_connection_strings_reach_each_shard_with_the_seed_credentials(
    cluster: ShardedCluster, seed_client: pymongo.MongoClient[Doc]
) -> None:
    seed = cluster.config_uri + "&appName=mongocdc-test&connectTimeoutMS=5000&directConnection=false"
    for shard in list_shards(seed_client):
        uri = shard_connection_string(seed, shard)
        assert "configRS" not in uri
        with client_for(uri) as client:
            hello = client.admin.command("hello")
            assert hello["setName"] == shard.replica_set
            assert hello["primary"] == shard.hosts[0]
            status = client.admin.command("connectionStatus")
            assert status["authInfo"]["authenticatedUsers"] == [{"user": USER, "db": "admin"}]
        # The servers do require the credentials: the same URI without them is refused.
        anonymous = uri.split("@", 1)[1].replace("authSource=admin&", "")
        with client_for("mongodb://" + anonymous) as client, pytest.raises(pymongo.errors.OperationFailure) as refused:
            client["cdc"]["x"].find_one()
        assert refused.value.code == 13


def test_each_shard_stream_sees_only_its_own_shard(
    cluster: ShardedCluster, seed_client: pymongo.MongoClient[Doc]
) -> None:
    db = f"cdc_{uuid.uuid4().hex[:12]}"
    shards = list_shards(seed_client)
    clients = [client_for(shard_connection_string(cluster.config_uri, shard)) for shard in shards]
    try:
        streams = [client[db].watch(max_await_time_ms=200) for client in clients]
        for client, shard in zip(clients, shards, strict=True):
            client[db]["orders"].insert_one({"_id": shard.name})
        for stream, shard in zip(streams, shards, strict=True):
            change = next_change(stream)
            assert change["documentKey"] == {"_id": shard.name}
            assert stream.try_next() is None
            stream.close()
    finally:
        for client in clients:
            client.drop_database(db)
            client.close()


def test_draining_shards_stay_listed(cluster: ShardedCluster, seed_client: pymongo.MongoClient[Doc]) -> None:
    cluster.set_draining("shard01")
    try:
        assert [shard.name for shard in list_shards(seed_client)] == ["shard00", "shard01"]
    finally:
        cluster.set_draining("shard01", False)


def test_watcher_reports_a_shard_added_later_and_one_removed(tmp_path: Path) -> None:
    with ShardedCluster(shards=1, data_dir=tmp_path) as sharded, client_for(sharded.config_uri) as seed_client:
        added: list[Shard] = []
        removed: list[Shard] = []
        seen = threading.Event()

        def on_added(shard: Shard) -> None:
            added.append(shard)
            seen.set()

        gone = sharded.shards["shard00"].host_port
        watcher = ShardWatcher(
            lambda: list_shards(seed_client),
            0.05,
            on_added,
            on_removed=removed.append,
            known=list_shards(seed_client),
        )
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        try:
            server = sharded.add_shard()
            assert seen.wait(TIMEOUT), "the watcher did not report the new shard"
        finally:
            stop.set()
            thread.join(TIMEOUT)
        assert not thread.is_alive()
        assert added == [Shard("shard01", "shard01-rs", (server.host_port,))]
        with client_for(shard_connection_string(sharded.config_uri, added[0])) as client:
            assert client.admin.command("hello")["setName"] == "shard01-rs"

        # Without the thread: the engine can poll itself.
        sharded.remove_shard("shard00")
        assert watcher.poll_once().removed == (Shard("shard00", "shard00-rs", (gone,)),)
        assert [shard.name for shard in removed] == ["shard00"]
        assert [shard.name for shard in watcher.current] == ["shard01"]
        assert watcher.poll_once() == ShardChanges()
