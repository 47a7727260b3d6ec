"""Topology classification from recorded ``hello`` replies and ``config.shards`` documents."""

from __future__ import annotations

import pytest

from mongocdc.errors import ExitCode, UnsupportedTopologyError
from mongocdc.sources.mongo.topology import Shard, Topology, parse_shard, topology_from_hello


def test_replica_set_member() -> None:
    hello = {
        "isWritablePrimary": True,
        "setName": "rs0",
        "hosts": ["mongo1:27017", "mongo2:27017", "mongo3:27017"],
        "primary": "mongo1:27017",
        "me": "mongo1:27017",
        "maxWireVersion": 21,
    }
    topology = topology_from_hello(hello)
    assert topology.kind == "replica_set"
    assert topology.replica_set == "rs0" and topology.primary == "mongo1:27017"
    assert topology.members == ("mongo1:27017", "mongo2:27017", "mongo3:27017")
    assert topology.partition == "rs0"
    topology.require_change_streams()


def test_mongos() -> None:
    topology = topology_from_hello({"isWritablePrimary": True, "msg": "isdbgrid", "maxWireVersion": 21})
    assert topology.kind == "sharded"
    assert topology.partition == "cluster"


def test_standalone_is_refused_with_the_fix() -> None:
    topology = topology_from_hello({"isWritablePrimary": True, "me": "localhost:27017", "maxWireVersion": 21})
    assert topology.kind == "standalone"
    with pytest.raises(UnsupportedTopologyError) as refused:
        topology.require_change_streams()
    assert refused.value.exit_code == ExitCode.CONFIG
    assert "no oplog" in refused.value.message
    assert (
        refused.value.hint is not None and "--replSet" in refused.value.hint and "rs.initiate()" in refused.value.hint
    )


@pytest.mark.parametrize(
    ("doc", "shard"),
    [
        (
            {"_id": "shard01", "host": "shard01/s1a:27018,s1b:27018", "state": 1},
            Shard("shard01", "shard01", ("s1a:27018", "s1b:27018")),
        ),
        ({"_id": "sh2", "host": "rsB/h:1"}, Shard("sh2", "rsB", ("h:1",))),
        ({"_id": "legacy", "host": "h1:27018"}, Shard("legacy", None, ("h1:27018",))),
    ],
)
def test_config_shards_host_strings(doc: dict[str, object], shard: Shard) -> None:
    assert parse_shard(doc) == shard


def test_topology_json_shape() -> None:
    topology = Topology(kind="sharded", shards=(Shard("s", "rs", ("h:1",)),), version="7.0.2")
    assert topology.to_dict()["shards"] == [{"name": "s", "replica_set": "rs", "hosts": ["h:1"]}]


def test_primary_watch_counts_elections() -> None:
    from mongocdc.sources.mongo.client import PrimaryWatch

    watch = PrimaryWatch()
    watch.observe(("m1", 27017))
    watch.observe(("m1", 27017))
    assert watch.elections == 0
    watch.observe(("m2", 27017))
    watch.observe(("m1", 27017))
    assert watch.elections == 2 and watch.primary == ("m1", 27017)
