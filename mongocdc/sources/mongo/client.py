"""Connecting to MongoDB with exponential backoff (``connect.*`` properties)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pymongo import MongoClient, monitoring
from pymongo.errors import ConfigurationError, ConnectionFailure, InvalidURI, OperationFailure

from mongocdc.config import redact_text
from mongocdc.errors import ConfigError, UnreachableError
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.mongo")

AUTH_FAILED = 18
UNAUTHORIZED = 13


class PrimaryWatch(monitoring.TopologyListener):
    """Counts primary elections: the replica set's primary changing from one member to another."""

    def __init__(self) -> None:
        self.primary: tuple[str, int | None] | None = None
        self.elections = 0

    def opened(self, event: monitoring.TopologyOpenedEvent) -> None:
        pass

    def closed(self, event: monitoring.TopologyClosedEvent) -> None:
        pass

    def description_changed(self, event: monitoring.TopologyDescriptionChangedEvent) -> None:
        primaries = [
            address
            for address, server in event.new_description.server_descriptions().items()
            if server.server_type_name == "RSPrimary"
        ]
        if primaries:
            self.observe(primaries[0])

    def observe(self, primary: tuple[str, int | None]) -> None:
        """The replica set has ``primary`` as its primary now."""
        if self.primary is not None and primary != self.primary:
            self.elections += 1
            log.warning("primary changed from %s:%s to %s:%s", *self.primary, *primary)
        self.primary = primary


def _describe_hosts(uri: str) -> str:
    from pymongo.uri_parser import parse_uri

    try:
        nodes = parse_uri(uri, validate=False, warn=True, connect_timeout=1).get("nodelist", [])
    except (InvalidURI, ConfigurationError, ValueError):
        return redact_text(uri)
    return ",".join(f"{h}:{p}" for h, p in nodes) or redact_text(uri)


def connect(
    uri: str | None,
    backoff: Backoff,
    *,
    server_selection_timeout_ms: int = 30000,
    sleep: Callable[[float], None] = time.sleep,
    **options: Any,
) -> MongoClient[Any]:
    """A client whose server answered ``ping``, after retries; ``UnreachableError`` when none did."""
    if not uri:
        raise ConfigError(
            "mongodb.connection.string is not set",
            hint="set it in the config file, MONGOCDC_MONGODB_CONNECTION_STRING or --connection-string",
        )
    try:
        client: MongoClient[Any] = MongoClient(
            uri, serverSelectionTimeoutMS=server_selection_timeout_ms, appname="mongocdc", **options
        )
    except (InvalidURI, ConfigurationError, ValueError, TypeError) as exc:
        raise ConfigError(
            f"mongodb.connection.string is invalid: {redact_text(str(exc))}",
            hint="use mongodb://host1:port,host2:port/?replicaSet=NAME (see the MongoDB connection string docs)",
        ) from exc
    hosts = _describe_hosts(uri)

    def ping() -> MongoClient[Any]:
        client.admin.command("ping")
        return client

    try:
        return backoff.run(f"connecting to MongoDB at {hosts}", ping, retry_on=(ConnectionFailure,), sleep=sleep)
    except ConnectionFailure as exc:
        client.close()
        raise UnreachableError(
            f"MongoDB at {hosts} is unreachable after {backoff.max_attempts} attempts: {redact_text(str(exc))}",
            hint="check mongodb.connection.string, the network and that the servers are up; "
            "connect.max.attempts and connect.backoff.* tune the retries",
        ) from exc
    except OperationFailure as exc:
        client.close()
        if exc.code in (AUTH_FAILED, UNAUTHORIZED):
            raise ConfigError(
                f"MongoDB at {hosts} refused the credentials: {redact_text(str(exc))}",
                hint="check the user, password and authSource in mongodb.connection.string",
            ) from exc
        raise


def raise_for_privileges(exc: OperationFailure, what: str) -> None:
    """Turn MongoDB's refusal for lack of privileges into a configuration error (exit 3) naming what was refused."""
    if exc.code in (UNAUTHORIZED, AUTH_FAILED):
        raise ConfigError(
            f"the MongoDB user may not {what}: {redact_text(str(exc))}",
            hint="grant the connector's user the read role on every captured database (or readAnyDatabase), "
            "plus read on local and config for sharded clusters; see the README's configuration section",
        ) from exc
