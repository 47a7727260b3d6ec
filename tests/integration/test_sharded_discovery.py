"""Shard discovery against the config-server stand-in of ``tests/services/sharded.py``.

What is real here: one SecantusDB server per shard, each a replica set with its
own name and oplog; a config server whose ``config.shards`` lists them; pymongo
connecting with the connection strings mongocdc builds. What is not: mongos,
chunk migration (see the harness's docstring).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pymongo.errors
import pytest

from mongocdc.sources.mongo.shards import list_shards, shard_connection_string
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


def test_the_group_streams_a_shard_that_joins_and_ends_the_task_of_one_that_leaves(tmp_path: Path) -> None:
    """``wiring.shard_group`` over the stand-in: real shard streams through ``wiring.connector_task`` (a
    recording sink and an in-memory store instead of Kafka), the shard list read every 0.1 s."""
    from mongocdc import wiring
    from mongocdc.config import load_settings
    from mongocdc.engine.connector import ConnectorTask
    from mongocdc.engine.metrics import Metrics
    from mongocdc.events.envelope import EnvelopeCodec
    from mongocdc.offsets.memory import MemoryOffsetStore
    from mongocdc.sources.mongo.client import PrimaryWatch
    from mongocdc.sources.mongo.shards import shards_behind
    from tests.unit.engine.fakes import RecordingSink

    db = f"cdc_{uuid.uuid4().hex[:12]}"
    with ShardedCluster(shards=2, data_dir=tmp_path) as sharded, client_for(sharded.config_uri) as seed:
        settings = load_settings(
            None,
            {},
            {
                "mongodb.connection.string": sharded.config_uri,
                "mongodb.connection.mode": "replica_set",
                "mongodb.poll.interval.ms": 100,
                "topic.prefix": "p",
                "snapshot.mode": "no_data",
                "offset.flush.interval.ms": 50,
                "cursor.max.await.time.ms": 100,
            },
        )
        sink, store, stop = RecordingSink(), MemoryOffsetStore(), threading.Event()
        clients: dict[str, pymongo.MongoClient[Doc]] = {}

        def shard_task(shard: Shard) -> ConnectorTask:
            client = clients[shard.name] = client_for(shard_connection_string(sharded.config_uri, shard))
            return wiring.connector_task(
                settings,
                client,
                shard.replica_set,
                str(shard.replica_set),
                PrimaryWatch(),
                sink=sink,
                store=store,
                envelope=EnvelopeCodec("p"),
                stop=threading.Event(),
                on_status=None,
                on_progress=None,
                metrics=Metrics("c"),
            )

        def ids() -> set[str]:
            """The ``_id`` of every change the tasks produced."""
            return {json.loads(json.loads(key)["id"]) for topic, key, _ in sink.records if topic == f"p.{db}.orders"}

        def stream_open(rs: str) -> bool:
            """The task of ``rs`` opened its change stream (and stored where it starts)."""
            return store.load(settings.name, rs) is not None

        def task_running(rs: str) -> bool:
            return any(thread.name == f"task-{rs}" for thread in threading.enumerate())

        group = wiring.shard_group(settings, seed, shards_behind(seed), shard_task, stop)
        outcome: list[object] = []
        thread = threading.Thread(target=lambda: outcome.append(group.run()), daemon=True)
        thread.start()
        servers_left = contextlib.ExitStack()
        try:
            wait_for(lambda: stream_open("shard00-rs") and stream_open("shard01-rs"), "both shard streams")
            sharded.add_shard()
            wait_for(lambda: stream_open("shard02-rs"), "the stream of the shard that joined")
            for name in ("shard00", "shard01", "shard02"):
                clients[name][db]["orders"].insert_one({"_id": name})
            wait_for(lambda: ids() == {"shard00", "shard01", "shard02"}, "a change of every shard")
            removed = sharded.shards["shard00"]
            sharded.remove_shard("shard00", stop_server=False)  # removeShard completed; the server still runs
            servers_left.callback(removed.stop)
            wait_for(lambda: not task_running("shard00-rs"), "the task of the shard that left to end")
            assert task_running("shard01-rs") and task_running("shard02-rs") and outcome == []
            clients["shard00"][db]["orders"].insert_one({"_id": "after-it-left"})
            clients["shard01"][db]["orders"].insert_one({"_id": "still-streamed"})
            wait_for(lambda: "still-streamed" in ids(), "the change of a shard still in the cluster")
        finally:
            stop.set()
            thread.join(TIMEOUT)
            for client in clients.values():
                client.close()
            servers_left.close()
        assert not thread.is_alive() and len(outcome) == 1
    assert ids() == {"shard00", "shard01", "shard02", "still-streamed"}


def wait_for(condition: Any, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)
