"""Connecting to MongoDB with exponential backoff (``connect.*`` properties) and the ``mongodb.*`` driver settings."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import unquote

from pymongo import MongoClient, monitoring
from pymongo.errors import ConfigurationError, ConnectionFailure, InvalidURI, OperationFailure

from mongocdc.config import redact_text
from mongocdc.errors import ConfigError, UnreachableError
from mongocdc.retry import Backoff, first_line

log = logging.getLogger("mongocdc.mongo")

AUTH_FAILED = 18
UNAUTHORIZED = 13

Client: TypeAlias = "MongoClient[Any]"
"""A client as :func:`connect` returns it; named here so that ``wiring`` types it without importing pymongo."""


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


_DRIVER_DETAIL = re.compile(r"\s*\(configured timeouts:[^)]*\)|,\s*Topology Description:.*", re.DOTALL)


def failure_summary(exc: BaseException) -> str:
    """The driver's error in one line: what each server answered and the time-out, without pymongo's
    ``Topology Description`` dump and its configured time-outs (which fill a terminal per attempt)."""
    return redact_text(first_line(_DRIVER_DETAIL.sub("", str(exc))))


def _describe_hosts(uri: str) -> str:
    from pymongo.uri_parser import parse_uri

    try:
        nodes = parse_uri(uri, validate=False, warn=True, connect_timeout=1).get("nodelist", [])
    except (InvalidURI, ConfigurationError, ValueError):
        return redact_text(uri)
    return ",".join(f"{h}:{p}" for h, p in nodes) or redact_text(uri)


@dataclass(frozen=True)
class UriSettings:
    """What a connection string sets itself (read without DNS lookups; pymongo reports malformed strings)."""

    srv: bool
    credentials: bool
    """The string has a user (``mongodb://user:pass@host``)."""
    options: Mapping[str, str]
    """Option values by lower-case name (``tls``, ``authsource``, ``connecttimeoutms``, …), percent-decoded."""

    @property
    def tls(self) -> bool | None:
        """TLS as the string says: ``tls``/``ssl``, or on for ``mongodb+srv://``; ``None`` when it says nothing."""
        for name in ("tls", "ssl"):
            if name in self.options:
                return self.options[name].strip().lower() == "true"
        return True if self.srv else None


def uri_settings(uri: str) -> UriSettings:
    scheme, _, rest = uri.partition("://")
    host_and_path, _, query = rest.partition("?")
    host_part = host_and_path.partition("/")[0]
    options: dict[str, str] = {}
    separator = ";" if ";" in query and "&" not in query else "&"
    for item in query.split(separator):
        key, equals, value = item.partition("=")
        if key and equals:
            options[unquote(key).lower()] = unquote(value)
    return UriSettings(srv=scheme.lower() == "mongodb+srv", credentials="@" in host_part, options=options)


@dataclass(frozen=True)
class ClientOptions:
    """The MongoDB driver settings of mongocdc's properties (``mongodb.user``, ``mongodb.ssl.*``, timeouts).

    As in Debezium, the connection string wins: ``for_uri`` leaves out every
    option the string sets itself, the credentials when it has a user, and the
    TLS files and host name check when it turns TLS off.
    """

    user: str | None = None
    password: str | None = None
    auth_source: str = "admin"
    tls: bool = False
    tls_allow_invalid_hostnames: bool = False
    tls_ca_file: str | None = None
    tls_certificate_key_file: str | None = None
    tls_certificate_key_file_password: str | None = None
    connect_timeout_ms: int = 10000
    socket_timeout_ms: int = 0
    server_selection_timeout_ms: int = 30000
    heartbeat_frequency_ms: int = 10000

    def for_uri(self, uri: str) -> dict[str, Any]:
        """``MongoClient`` keyword arguments for ``uri`` (0 timeouts mean no limit, for pymongo as for Java)."""
        given = uri_settings(uri)
        kwargs: dict[str, Any] = {}

        def put(option: str, value: object, *also: str) -> None:
            if value is not None and not any(name.lower() in given.options for name in (option, *also)):
                kwargs[option] = value

        put("connectTimeoutMS", self.connect_timeout_ms)
        put("socketTimeoutMS", self.socket_timeout_ms)
        put("serverSelectionTimeoutMS", self.server_selection_timeout_ms)
        put("heartbeatFrequencyMS", self.heartbeat_frequency_ms)
        if self.user is not None and not given.credentials:
            kwargs["username"] = self.user
            if self.password is not None:
                kwargs["password"] = self.password
            kwargs["authSource"] = self.auth_source
        tls = given.tls
        if tls is None and self.tls:
            kwargs["tls"] = tls = True
        if tls:
            if self.tls_allow_invalid_hostnames:
                put("tlsAllowInvalidHostnames", True, "tlsInsecure")
            put("tlsCAFile", self.tls_ca_file)
            put("tlsCertificateKeyFile", self.tls_certificate_key_file)
            if "tlsCertificateKeyFile" in kwargs:
                put("tlsCertificateKeyFilePassword", self.tls_certificate_key_file_password)
        return kwargs


def check_pem_file(path: str, property_name: str, holds: str) -> None:
    """``ConfigError`` unless ``path`` is a readable PEM file (Java's PKCS12 and JKS stores must be converted)."""
    try:
        head = Path(path).read_bytes()[:65536]
    except OSError as exc:
        raise ConfigError(
            f"{property_name}: cannot read {path}: {exc.strerror or exc}",
            hint=f"point {property_name} at a PEM file with {holds}",
        ) from None
    if b"-----BEGIN " not in head:
        example = (
            "openssl pkcs12 -in store.p12 -nokeys -out ca.pem"
            if "CA" in holds
            else "openssl pkcs12 -in store.p12 -out client.pem"
        )
        raise ConfigError(
            f"{property_name}: {path} is not a PEM file (a Java PKCS12 or JKS store?); mongocdc reads {holds} "
            "from PEM files",
            hint=f"convert it, for example with `{example}` (a JKS store first with `keytool -importkeystore "
            "-srcstoretype JKS -deststoretype PKCS12`), and set the PEM file's path",
        )


def connect(
    uri: str | None,
    backoff: Backoff,
    *,
    client_options: ClientOptions | None = None,
    sleep: Callable[[float], None] = time.sleep,
    **options: Any,
) -> Client:
    """A client whose server answered ``ping``, after retries; ``UnreachableError`` when none did.

    ``client_options`` are the driver settings of mongocdc's properties (the
    connection string's own options win over them); ``options`` go to
    ``MongoClient`` as they are (``event_listeners``).
    """
    if not uri:
        raise ConfigError(
            "mongodb.connection.string is not set",
            hint="set it in the config file, MONGOCDC_MONGODB_CONNECTION_STRING or --connection-string",
        )
    driver = (client_options or ClientOptions()).for_uri(uri)
    for key, property_name, holds in (
        ("tlsCAFile", "mongodb.ssl.truststore", "the CA certificates"),
        ("tlsCertificateKeyFile", "mongodb.ssl.keystore", "the client certificate and its private key"),
    ):
        if key in driver:
            check_pem_file(str(driver[key]), property_name, holds)
    try:
        client: MongoClient[Any] = MongoClient(uri, appname="mongocdc", **{**driver, **options})
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
        return backoff.run(
            f"connecting to MongoDB at {hosts}",
            ping,
            retry_on=(ConnectionFailure,),
            sleep=sleep,
            describe=failure_summary,
        )
    except ConnectionFailure as exc:
        client.close()
        attempts = backoff.max_attempts
        raise UnreachableError(
            f"MongoDB at {hosts} is unreachable after {attempts} attempt{'' if attempts == 1 else 's'}: "
            f"{failure_summary(exc)}",
            hint=f"check mongodb.connection.string, the network and that the servers are up; {backoff.tuning}",
        ) from exc
    except OperationFailure as exc:
        client.close()
        if exc.code in (AUTH_FAILED, UNAUTHORIZED):
            raise ConfigError(
                f"MongoDB at {hosts} refused the credentials: {redact_text(str(exc))}",
                hint="check the user, password and authSource in mongodb.connection.string (or mongodb.user, "
                "mongodb.password and mongodb.authsource)",
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
