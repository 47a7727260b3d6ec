"""A stand-in for a sharded cluster's config server, for shard discovery tests.

No registry reachable here ships ``mongod``/``mongos``, so this harness builds
what mongocdc's per-shard mode (``mongodb.connection.mode=replica_set``) reads
out of a sharded cluster, from SecantusDB servers (``tests/services/mongo.py``):

* N *shard* servers, each a single-member replica set with its own name
  (``<shard>-rs``), its own data and its own oplog, so every shard has its own
  change stream and resume tokens;
* one *config server* (replica set ``configRS``) whose ``config.shards``
  collection holds ``{_id: <shard>, host: "<shard>-rs/127.0.0.1:<port>",
  state: 1}`` for each shard, exactly the document shape a real config server
  keeps;
* :meth:`ShardedCluster.add_shard` starts another shard and registers it, as
  ``sh.addShard`` would; :meth:`ShardedCluster.set_draining` marks a shard the
  way ``removeShard`` does while chunks move away, and
  :meth:`ShardedCluster.remove_shard` drops its document, as a completed
  ``removeShard`` does;
* optionally (``credentials=``) one user on every server and SCRAM
  authentication required everywhere, so tests see whether credentials reach
  the shard connections.

Distinct replica-set names: the ``secantusd`` command line always advertises
the replica set ``secantus`` (``--standalone`` only drops the advertisement),
and ``secantusd-rs`` has no option for it either. The library class behind the
daemon, ``secantus.server.SecantusDBServer``, takes ``replica_set_name``.
:class:`NamedReplicaSetServer` therefore launches it with a short
``python -c`` script that does what ``secantusd`` does (no test commands, no
config-file discovery) with a set name of our choice, and stops in 0.1 s
instead of 2 s (see ``_SERVE``). ``hello`` then reports
that ``setName``, and a ``replicaSet=<name>`` URI finds the primary. The
harness always uses the Python SecantusDB server, whatever
``MONGOCDC_TEST_MONGODB_SERVER`` selects: no other candidate can advertise a
chosen set name.

Not reproduced (only a real cluster exercises these):

* **No mongos.** Nothing answers ``hello`` with ``msg: "isdbgrid"`` or runs
  ``listShards``; the config server stand-in answers it with 59
  CommandNotFound, so ``list_shards`` takes its ``config.shards`` path. The
  mongos path is covered by unit tests with replies shaped like a mongos's.
  Cluster-wide change streams through mongos, with their merged global order,
  do not exist here.
* **The config server is an ordinary replica set.** ``hello`` has no
  ``configsvr`` field, ``config.shards`` is a plain writable collection, and
  nothing but this harness keeps it in step with the shards.
* **No sharding of data.** There is no balancer, no chunks, no chunk migration,
  and no orphaned documents or ``fromMigrate`` oplog entries. Draining changes
  only the flag: nothing moves. A document written to a shard server stays
  there. Tests write to each shard directly, which is where its changes
  appear.
* **Single-member replica sets.** Every shard has one member, so there are no
  elections or secondaries, and a shard's host list never changes. A test that
  needs a host change edits the ``config.shards`` document.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Self
from urllib.parse import quote_plus

import pymongo

from tests.services.jvm import StopOnExit
from tests.services.mongo import LOOPBACK, SecantusServer

__all__ = ["CONFIG_REPL_SET", "NamedReplicaSetServer", "ShardedCluster"]

CONFIG_REPL_SET = "configRS"

# What ``secantusd`` (secantus.cli.main) does, with the replica-set name as an argument, plus one
# thing: on SIGTERM the listening socket is shut down before ``stop()``. Closing it alone does not
# wake the thread blocked in accept() on Linux, so ``stop()`` waited out its 2 s join timeout on
# every stop (secantusd shows the same delay); the rest of ``stop()`` (draining connections,
# closing WiredTiger) is unchanged.
_SERVE = """\
import contextlib, logging, signal, socket, sys
from secantus.server import SecantusDBServer
host, port, storage, repl_set, auth = sys.argv[1:6]
logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
server = SecantusDBServer(
    host=host, port=int(port), storage_path=storage, replica_set_name=repl_set,
    enable_test_commands=False, cache_size="256M", require_auth=auth == "auth",
)
def stop(signum, frame):
    listening = getattr(server, "_socket", None)
    if listening is not None:
        with contextlib.suppress(OSError):
            listening.shutdown(socket.SHUT_RDWR)
    server.stop()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
server.start()
server.wait()
"""


class NamedReplicaSetServer(SecantusServer):
    """SecantusDB's Python server advertising the single-member replica set ``repl_set``.

    ``require_auth`` starts it with SCRAM authentication required (``secantusd --auth``):
    create the users before, while it runs without.
    """

    def __init__(
        self,
        repl_set: str,
        *,
        data_dir: Path | None = None,
        port: int | None = None,
        host: str = LOOPBACK,
        require_auth: bool = False,
    ) -> None:
        super().__init__(data_dir=data_dir, port=port, host=host)
        self.repl_set = repl_set
        self.require_auth = require_auth

    def _command(self, port: int, data_dir: Path) -> list[str]:
        auth = "auth" if self.require_auth else "noauth"
        return [sys.executable, "-c", _SERVE, self.host, str(port), str(data_dir / "wiredtiger"), self.repl_set, auth]

    @property
    def host_port(self) -> str:
        return f"{self.host}:{self.port}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.repl_set} port={self._port} running={self.running}>"


class ShardedCluster(StopOnExit):
    """A config server stand-in plus shard replica sets (see the module docstring for the limits).

    ``with ShardedCluster(shards=2, data_dir=tmp_path) as cluster:`` starts the
    config server and ``shard00``, ``shard01`` (replica sets ``shard00-rs``,
    ``shard01-rs``); ``cluster.config_uri`` is the seed mongocdc connects to.

    ``credentials=(user, password)`` creates that user (role ``root`` in
    ``admin``) on every server, config server and shards alike, as a real cluster
    with a cluster-wide user would have it, and then runs every server with
    authentication required. ``config_uri`` then carries the credentials
    (percent-encoded) and ``authSource=admin``. Each server starts twice for
    this: once open, to create the user, and once with auth.
    """

    def __init__(
        self,
        shards: int = 2,
        *,
        data_dir: Path | None = None,
        shard_prefix: str = "shard",
        credentials: tuple[str, str] | None = None,
    ) -> None:
        if shards < 0:
            raise ValueError("shards must be >= 0")
        self._initial = shards
        self._data_dir = data_dir
        self._prefix = shard_prefix
        self.credentials = credentials
        self._lock = threading.Lock()
        self.config_server = NamedReplicaSetServer(CONFIG_REPL_SET, data_dir=self._dir("config"))
        #: shard name (config.shards ``_id``) -> its server
        self.shards: dict[str, NamedReplicaSetServer] = {}
        self._next_index = 0
        self._client: pymongo.MongoClient[dict[str, Any]] | None = None

    def _dir(self, name: str) -> Path | None:
        return None if self._data_dir is None else self._data_dir / name

    def uri_of(self, server: NamedReplicaSetServer) -> str:
        """``server.uri``, with the cluster's credentials and ``authSource=admin`` when it has some."""
        if self.credentials is None:
            return server.uri
        user, password = self.credentials
        return (
            f"mongodb://{quote_plus(user)}:{quote_plus(password)}@{server.host_port}/"
            f"?replicaSet={server.repl_set}&authSource=admin"
        )

    @property
    def config_uri(self) -> str:
        """Connection string of the config server replica set (``replicaSet=configRS``)."""
        return self.uri_of(self.config_server)

    def _start_server(self, server: NamedReplicaSetServer) -> None:
        if self.credentials is None:
            server.start()
            return
        user, password = self.credentials
        server.require_auth = False
        server.start()
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=15000)
        try:
            client.admin.command("createUser", user, pwd=password, roles=["root"])
        finally:
            client.close()
        server.require_auth = True
        server.restart()

    def config_client(self) -> pymongo.MongoClient[dict[str, Any]]:
        """The harness's own client to the config server (closed by :meth:`stop`)."""
        if self._client is None:
            self._client = pymongo.MongoClient(self.config_uri, serverSelectionTimeoutMS=15000)
        return self._client

    def shard_documents(self) -> list[dict[str, Any]]:
        """The ``config.shards`` documents, sorted by ``_id``."""
        return list(self.config_client()["config"]["shards"].find().sort("_id", 1))

    @staticmethod
    def replica_set_of(shard_name: str) -> str:
        return f"{shard_name}-rs"

    def start(self) -> None:
        """Start the config server and the initial shards, and register the shards."""
        self._start_server(self.config_server)
        try:
            for _ in range(self._initial):
                self.add_shard()
        except BaseException:
            self.stop()
            raise

    def add_shard(self, name: str | None = None) -> NamedReplicaSetServer:
        """Start one more shard and insert its ``config.shards`` document; returns its server."""
        with self._lock:
            if name is None:
                name = f"{self._prefix}{self._next_index:02d}"
                self._next_index += 1
            if name in self.shards:
                raise ValueError(f"shard {name} exists already")
            server = NamedReplicaSetServer(self.replica_set_of(name), data_dir=self._dir(name))
            self.shards[name] = server
        self._start_server(server)
        self.config_client()["config"]["shards"].insert_one(
            {"_id": name, "host": f"{server.repl_set}/{server.host_port}", "state": 1}
        )
        return server

    def set_draining(self, name: str, draining: bool = True) -> None:
        """Flag the shard as ``removeShard`` does while its chunks move (nothing moves here)."""
        update = {"$set": {"draining": True}} if draining else {"$unset": {"draining": ""}}
        self.config_client()["config"]["shards"].update_one({"_id": name}, update)

    def remove_shard(self, name: str, *, stop_server: bool = True) -> None:
        """Delete the shard's document, as a completed ``removeShard`` does; stop its server unless told not to."""
        self.config_client()["config"]["shards"].delete_one({"_id": name})
        with self._lock:
            server = self.shards.pop(name)
        if stop_server:
            server.stop()

    def stop(self) -> None:
        """Stop every server; data directories the harness made are removed."""
        if self._client is not None:
            self._client.close()
            self._client = None
        with self._lock:
            servers = [*self.shards.values(), self.config_server]
            self.shards.clear()
        for server in servers:
            server.stop()

    def __enter__(self) -> Self:
        self.start()
        return self


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.services.sharded [--shards N]``: print the URIs, run until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--shards", type=int, default=2)
    args = parser.parse_args(argv)
    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with ShardedCluster(shards=args.shards) as cluster:
        print(f"config {cluster.config_uri}", flush=True)
        for name, server in cluster.shards.items():
            print(f"{name} {cluster.uri_of(server)}", flush=True)
        stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
