"""Topology discovery: replica set, sharded cluster or standalone server."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pymongo import MongoClient
from pymongo.errors import OperationFailure

from mongocdc.errors import UnsupportedTopologyError

Kind = Literal["replica_set", "sharded", "standalone"]


@dataclass(frozen=True, slots=True)
class Shard:
    name: str
    replica_set: str | None
    hosts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Topology:
    kind: Kind
    replica_set: str | None = None
    members: tuple[str, ...] = ()
    primary: str | None = None
    shards: tuple[Shard, ...] = field(default=())
    version: str | None = None

    @property
    def partition(self) -> str:
        """The source partition offsets are kept under: the replica set, or the whole cluster."""
        if self.kind == "replica_set" and self.replica_set:
            return self.replica_set
        return "cluster"

    def require_change_streams(self) -> None:
        """Refuse deployments without an oplog."""
        if self.kind == "standalone":
            raise UnsupportedTopologyError(
                "this MongoDB is a standalone server: it has no oplog, so changes cannot be captured",
                hint="run it as a single-member replica set: restart mongod with --replSet rs0, "
                "run rs.initiate() once, and add ?replicaSet=rs0 to mongodb.connection.string",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "replica_set": self.replica_set,
            "members": list(self.members),
            "primary": self.primary,
            "shards": [{"name": s.name, "replica_set": s.replica_set, "hosts": list(s.hosts)} for s in self.shards],
            "version": self.version,
        }


def parse_shard(doc: Mapping[str, Any]) -> Shard:
    """A ``config.shards`` document: ``host`` is ``rsName/h1:p1,h2:p2`` or a bare host list."""
    host = str(doc.get("host", ""))
    rs, _, hosts = host.rpartition("/")
    return Shard(str(doc.get("_id")), rs or None, tuple(h for h in hosts.split(",") if h))


def topology_from_hello(hello: Mapping[str, Any]) -> Topology:
    """Classify a server from its ``hello`` reply (shards are filled in by :func:`discover`)."""
    if hello.get("msg") == "isdbgrid":
        return Topology(kind="sharded")
    set_name = hello.get("setName")
    if set_name:
        members = tuple(str(h) for h in (hello.get("hosts") or ()))
        primary = hello.get("primary")
        return Topology(kind="replica_set", replica_set=str(set_name), members=members, primary=primary)
    return Topology(kind="standalone", members=(str(hello.get("me", "")),) if hello.get("me") else ())


def discover(client: MongoClient[Any]) -> Topology:
    """Ask the deployment what it is."""
    hello = client.admin.command("hello")
    topology = topology_from_hello(hello)
    version: str | None = None
    try:
        version = str(client.admin.command("buildInfo").get("version"))
    except OperationFailure:
        version = None
    if topology.kind == "sharded":
        from mongocdc.sources.mongo.shards import list_shards  # shards.py builds on this module

        return Topology(kind="sharded", shards=tuple(list_shards(client)), version=version)
    return Topology(
        kind=topology.kind,
        replica_set=topology.replica_set,
        members=topology.members,
        primary=topology.primary,
        version=version,
    )
