"""The shards of a sharded cluster, for one change stream per shard replica set.

With ``mongodb.connection.mode=replica_set`` mongocdc does what the Debezium
MongoDB connector documents for that mode: it reads the cluster's shard list,
connects to every shard's replica set on its own, and picks up shards that are
added later and ends the streams of shards that leave. Three pieces live here;
``mongocdc.wiring`` combines them with the engine's ``ConnectorGroup``, which
runs one task per shard replica set:

* :func:`list_shards` reads the shard list: ``listShards`` when the seed is a
  mongos, else (or when the user may not run ``listShards``) the
  ``config.shards`` collection, which a mongos and the config server replica set
  both serve. Debezium reads ``config.shards`` through the seed connection too.
* :func:`shard_connection_string` turns the seed connection string into one for
  a shard: same credentials and options, the shard's hosts and replica set.
* :class:`ShardWatcher` polls the shard list and calls back for shards that
  appear or disappear; it has no threads or sleeps in it: the connector's group
  polls it between its other work.

Draining shards are kept. ``removeShard`` marks a shard ``draining: true`` and
the balancer then moves its chunks away, but until the last chunk has gone the
shard still owns data and still takes writes for it. Skipping it would lose
those changes. The shard leaves the list (and the watcher reports it removed)
only when ``removeShard`` completes. Debezium does not skip draining shards
either. A shard whose ``host`` names no replica set (a standalone ``mongod``,
which MongoDB 3.6 and later no longer accept as a shard) is listed, but it has
no oplog: :func:`shard_connection_string` refuses it with the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pymongo import MongoClient
from pymongo.errors import InvalidURI, OperationFailure
from pymongo.uri_parser import parse_userinfo

from mongocdc.config import redact_text
from mongocdc.errors import ConfigError, UnsupportedTopologyError
from mongocdc.sources.mongo.client import failure_summary
from mongocdc.sources.mongo.topology import Shard, parse_shard

log = logging.getLogger("mongocdc.mongo.shards")

__all__ = [
    "ShardChanges",
    "ShardWatcher",
    "list_shards",
    "replica_set_shards",
    "shard_connection_string",
    "shards_behind",
]

_SCHEME = "mongodb://"
_SRV_SCHEME = "mongodb+srv://"

#: Options of the seed that do not carry over to a shard connection (compared lower-case):
#: the shard gets its own ``replicaSet``; ``directConnection`` would pin one member and
#: ``loadBalanced`` describes a load balancer in front of mongos; the ``srv*`` options are
#: only valid on ``mongodb+srv://`` URIs.
_DROPPED_OPTIONS = frozenset({"replicaset", "directconnection", "loadbalanced", "srvservicename", "srvmaxhosts"})
_TLS_OPTIONS = frozenset({"tls", "ssl"})


def list_shards(client: MongoClient[Any]) -> list[Shard]:
    """The cluster's shards, sorted by shard name.

    ``client`` is connected to a mongos or to the config server replica set.
    ``listShards`` is tried first. If the server does not know it (a config
    server answers 59 CommandNotFound) or the user may not run it (13
    Unauthorized), the ``config.shards`` collection is read instead. An error
    from that read, for example a user who may not read the ``config``
    database, is raised as pymongo's ``OperationFailure``.
    """
    try:
        docs = client.admin.command("listShards").get("shards", [])
    except OperationFailure as exc:
        log.debug("listShards failed (%s); reading config.shards", exc.code)
        docs = list(client["config"]["shards"].find())
    return sorted((parse_shard(doc) for doc in docs), key=lambda shard: shard.name)


def replica_set_shards(client: MongoClient[Any]) -> list[Shard]:
    """The shards that are replica sets (the ones with a change stream of their own), sorted by name.

    A shard whose ``host`` names no replica set is left out, as it is at the start. Errors are
    raised as :func:`list_shards` raises them.
    """
    return [shard for shard in list_shards(client) if shard.replica_set]


def shards_behind(client: MongoClient[Any]) -> list[Shard]:
    """The shards when ``client`` is connected to a mongos or a config server; ``[]`` for a plain replica set."""
    try:
        return replica_set_shards(client)
    except OperationFailure as exc:
        log.debug("no shard list readable (%s): treating the seed as a plain replica set", exc.code)
        return []


@dataclass(frozen=True, slots=True)
class _SeedUri:
    userinfo: str | None
    path: str
    options: tuple[tuple[str, str], ...]
    srv: bool


def _split_seed(seed_uri: str) -> _SeedUri:
    """Split a connection string the way pymongo's ``parse_uri`` does, without DNS lookups."""
    if seed_uri.startswith(_SCHEME):
        srv, rest = False, seed_uri[len(_SCHEME) :]
    elif seed_uri.startswith(_SRV_SCHEME):
        srv, rest = True, seed_uri[len(_SRV_SCHEME) :]
    else:
        raise ConfigError(
            f"mongodb.connection.string must start with {_SCHEME} or {_SRV_SCHEME}: {redact_text(seed_uri)}",
            hint="use mongodb://host1:port,host2:port/?replicaSet=NAME (see the MongoDB connection string docs)",
        )
    host_and_path, _, query = rest.partition("?")
    host_part, _, path = host_and_path.partition("/")
    userinfo: str | None = None
    if "@" in host_part:
        raw_userinfo, _, _hosts = host_part.rpartition("@")
        try:
            user, password = parse_userinfo(raw_userinfo)
        except InvalidURI as exc:
            raise ConfigError(
                f"mongodb.connection.string has badly escaped credentials: {exc}",
                hint="percent-encode the user name and password (for example with urllib.parse.quote_plus)",
            ) from None
        # Decoded with pymongo's rules, encoded again with everything but unreserved characters escaped.
        userinfo = quote(user, safe="")
        if ":" in raw_userinfo:
            userinfo += ":" + quote(password, safe="")
    options: list[tuple[str, str]] = []
    if query:
        separator = ";" if ";" in query and "&" not in query else "&"
        for item in query.split(separator):
            if not item:
                continue
            key, equals, value = item.partition("=")
            if not equals:
                raise ConfigError(
                    f"mongodb.connection.string has an option without a value: {redact_text(item)}",
                    hint="connection string options are key=value pairs separated by '&'",
                )
            options.append((key, value))
    return _SeedUri(userinfo=userinfo, path=path, options=tuple(options), srv=srv)


def _parse_params(params: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in params.lstrip("?").split("&"):
        if not item:
            continue
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ConfigError(
                f"shard connection parameters must be key=value pairs separated by '&': {redact_text(item)}",
                hint="for example authSource=admin&tls=true",
            )
        pairs.append((key, value))
    return pairs


def shard_connection_string(seed_uri: str, shard: Shard, *, params: str | None = None) -> str:
    """A connection string for ``shard``'s replica set, built from the seed's.

    Kept from ``seed_uri``: the user name and password (decoded and
    percent-encoded again, so every reserved character is escaped exactly once),
    the default authentication database in the path, and every option
    (``authSource``, ``authMechanism``, ``tls*``, ``readPreference``, timeouts,
    ...) in their original order and encoding. Replaced: the hosts, by the
    shard's; ``replicaSet``, by the shard's replica set. Dropped:
    ``directConnection`` and ``loadBalanced`` (they describe the seed, not a
    replica set) and the SRV-only ``srvServiceName``/``srvMaxHosts``.

    A ``mongodb+srv://`` seed becomes a plain ``mongodb://`` string listing the
    shard's hosts, with ``tls=true`` added unless the seed sets ``tls``/``ssl``
    (an SRV URI turns TLS on by default). Options that an SRV seed takes from its
    DNS TXT record are not looked up here (this function does no I/O);
    ``authSource`` then defaults to the path's database, or ``admin``, as it does
    for Atlas, whose TXT record says ``authSource=admin``. Anything else can be
    given in ``params``.

    ``params`` (``key=value&...``, like Debezium's
    ``mongodb.connection.string.shard.params``) are appended last and replace seed
    options of the same name; ``replicaSet`` and ``directConnection`` in them are
    ignored.

    The result contains the password: log it only through ``redact_uri``.
    Raises ``UnsupportedTopologyError`` for a shard that is not a replica set or
    has no hosts, ``ConfigError`` for a malformed seed or ``params``.
    """
    if not shard.replica_set:
        raise UnsupportedTopologyError(
            f"shard {shard.name!r} is not a replica set (config.shards host {','.join(shard.hosts)!r}): "
            "it has no oplog, so its changes cannot be captured",
            hint="convert the shard to a replica set, or set mongodb.connection.mode=sharded to stream through mongos",
        )
    if not shard.hosts:
        raise UnsupportedTopologyError(
            f"shard {shard.name!r} lists no hosts in config.shards",
            hint="check the shard's entry with sh.status() on a mongos",
        )
    seed = _split_seed(seed_uri)
    overrides = [(key, value) for key, value in _parse_params(params or "") if key.lower() not in _DROPPED_OPTIONS]
    overridden = {key.lower() for key, _ in overrides}
    options = [
        (key, value)
        for key, value in seed.options
        if key.lower() not in _DROPPED_OPTIONS and key.lower() not in overridden
    ]
    options.extend(overrides)
    if seed.srv and not any(key.lower() in _TLS_OPTIONS for key, _ in options):
        options.append(("tls", "true"))
    options.append(("replicaSet", quote(shard.replica_set, safe="")))
    credentials = f"{seed.userinfo}@" if seed.userinfo is not None else ""
    query = "&".join(f"{key}={value}" for key, value in options)
    return f"{_SCHEME}{credentials}{','.join(shard.hosts)}/{seed.path}?{query}"


@dataclass(frozen=True, slots=True)
class ShardChanges:
    """What one poll of the shard list found, compared with the shards known before it."""

    added: tuple[Shard, ...] = ()
    removed: tuple[Shard, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


class ShardWatcher:
    """Polls the shard list and calls back for shards that join or leave the cluster.

    Shards are known by name (``config.shards`` ``_id``). A shard whose hosts
    change (members added to its replica set) stays the same shard: its entry is
    updated silently, and ``current`` serves the new hosts. A shard whose replica
    set name changes under the same name is reported as removed and added.

    ``on_added`` and ``on_removed`` are called once per shard, removals first,
    each in name order. A shard counts as known (or as gone) only after its
    callback returned, so a callback that raises (the shard's stream could not be
    started) stops the poll with that error, and the next poll reports the shard
    again.

    No threads or sleeps: ``ConnectorGroup`` calls :meth:`poll_if_due` while its
    tasks run, which reads the list when ``interval_s`` has passed on ``clock``
    since the last poll and logs a failure rather than raising it (a blip must not
    end shard discovery: the next poll is due one interval later);
    :meth:`poll_once` reads it now and raises.
    """

    def __init__(
        self,
        list_fn: Callable[[], Sequence[Shard]],
        interval_s: float,
        on_added: Callable[[Shard], None],
        on_removed: Callable[[Shard], None],
        *,
        known: Iterable[Shard] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"the shard poll interval must be positive, got {interval_s}")
        self._list_fn = list_fn
        self._interval_s = interval_s
        self._on_added = on_added
        self._on_removed = on_removed
        self._clock = clock
        self._known: dict[str, Shard] = {shard.name: shard for shard in known}
        self._last_poll: float | None = None

    @property
    def current(self) -> tuple[Shard, ...]:
        """The shards known now, sorted by name, with the hosts of the latest poll."""
        return tuple(self._known[name] for name in sorted(self._known))

    def seconds_until_due(self) -> float:
        """How long until the next poll is due (0 when it is due now, as before the first poll)."""
        if self._last_poll is None:
            return 0.0
        return max(0.0, self._last_poll + self._interval_s - self._clock())

    def poll_if_due(self) -> ShardChanges | None:
        """:meth:`poll_once` if ``interval_s`` has passed since the last poll, else ``None``.

        A failure (the list could not be read, a callback raised) is logged, without passwords,
        and ``None`` returned; the next poll is due one interval later.
        """
        if self.seconds_until_due() > 0:
            return None
        try:
            return self.poll_once()
        except Exception as exc:  # a blip must not end shard discovery
            log.warning(
                "reading the shard list or starting a shard's stream failed, retrying in %.0f s: %s",
                self._interval_s,
                failure_summary(exc),
            )
            return None

    def poll_once(self) -> ShardChanges:
        """Read the shard list now, call back for what changed and return it.

        An error from ``list_fn`` or a callback propagates; the poll still counts
        for :meth:`poll_if_due`, so a failing cluster is not hammered.
        """
        self._last_poll = self._clock()
        listed = {shard.name: shard for shard in self._list_fn()}
        added: list[Shard] = []
        removed: list[Shard] = []
        for name in sorted(self._known):
            known, shard = self._known[name], listed.get(name)
            if shard is None or shard.replica_set != known.replica_set:
                log.info("shard %s (replica set %s) left the cluster", name, known.replica_set)
                self._on_removed(known)
                del self._known[name]
                removed.append(known)
            elif shard != known:
                log.info("shard %s now lists hosts %s", name, ",".join(shard.hosts))
                self._known[name] = shard
        for name in sorted(listed):
            if name in self._known:
                continue
            shard = listed[name]
            log.info("shard %s (replica set %s) joined the cluster", shard.name, shard.replica_set)
            self._on_added(shard)
            self._known[name] = shard
            added.append(shard)
        return ShardChanges(added=tuple(added), removed=tuple(removed))
