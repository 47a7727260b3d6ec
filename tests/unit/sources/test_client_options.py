"""The ``mongodb.*`` driver properties: what reaches ``MongoClient``, and the connection string winning."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from mongocdc import wiring
from mongocdc.config import load_settings
from mongocdc.errors import ConfigError, ExitCode, UnreachableError
from mongocdc.retry import Backoff
from mongocdc.sources.mongo import client as client_module
from mongocdc.sources.mongo.client import ClientOptions, connect, uri_settings

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def settings(**properties: object) -> Any:
    return load_settings(None, {}, {"mongodb.connection.string": "mongodb://h1:27017/?replicaSet=rs0", **properties})


def test_debezium_properties_become_driver_settings() -> None:
    options = wiring.client_options(
        settings(
            **{
                "mongodb.user": "debezium",
                "mongodb.password": "s3cret",
                "mongodb.authsource": "users",
                "mongodb.connect.timeout.ms": 1500,
                "mongodb.socket.timeout.ms": 2500,
                "mongodb.server.selection.timeout.ms": 3500,
                "mongodb.heartbeat.frequency.ms": 4500,
            }
        )
    )
    assert options.for_uri("mongodb://h1:27017/?replicaSet=rs0") == {
        "username": "debezium",
        "password": "s3cret",
        "authSource": "users",
        "connectTimeoutMS": 1500,
        "socketTimeoutMS": 2500,
        "serverSelectionTimeoutMS": 3500,
        "heartbeatFrequencyMS": 4500,
    }


def test_defaults_are_debeziums() -> None:
    kwargs = wiring.client_options(settings()).for_uri("mongodb://h1/")
    assert kwargs == {
        "connectTimeoutMS": 10000,
        "socketTimeoutMS": 0,
        "serverSelectionTimeoutMS": 30000,
        "heartbeatFrequencyMS": 10000,
    }


def test_the_driver_takes_them_as_meant() -> None:
    kwargs = ClientOptions(
        user="u",
        password="p",
        auth_source="users",
        connect_timeout_ms=0,
        socket_timeout_ms=2500,
        server_selection_timeout_ms=3500,
        heartbeat_frequency_ms=4500,
    ).for_uri("mongodb://h1/")
    client: MongoClient[Any] = MongoClient("mongodb://h1/", connect=False, **kwargs)
    try:
        assert client.options.pool_options.connect_timeout is None  # 0: no limit, as in Java
        assert client.options.pool_options.socket_timeout == 2.5
        assert client.options.server_selection_timeout == 3.5
        assert client.options.heartbeat_frequency == 4.5
        credentials = client.options.pool_options._credentials
        assert (credentials.username, credentials.password, credentials.source) == ("u", "p", "users")
    finally:
        client.close()


def test_credentials_in_the_connection_string_win() -> None:
    options = ClientOptions(user="prop-user", password="prop-pass", auth_source="users")
    kwargs = options.for_uri("mongodb://uri-user:uri-pass@h1/?authSource=admin")
    assert not {"username", "password", "authSource"} & set(kwargs)


def test_connection_string_options_win_case_insensitively() -> None:
    kwargs = ClientOptions(connect_timeout_ms=1, socket_timeout_ms=2, heartbeat_frequency_ms=600).for_uri(
        "mongodb://h1/?CONNECTTIMEOUTMS=5&socketTimeoutMS=6&heartbeatfrequencyms=700"
    )
    assert "connectTimeoutMS" not in kwargs and "socketTimeoutMS" not in kwargs
    assert "heartbeatFrequencyMS" not in kwargs
    assert kwargs["serverSelectionTimeoutMS"] == 30000


@pytest.mark.parametrize(
    ("uri", "enabled", "expected"),
    [
        ("mongodb://h1/", True, {"tls": True, "tlsAllowInvalidHostnames": True}),
        ("mongodb://h1/", False, {}),
        ("mongodb://h1/?tls=false", True, {}),  # the connection string wins
        ("mongodb://h1/?ssl=true", False, {"tlsAllowInvalidHostnames": True}),
        ("mongodb+srv://cluster.example.com/", False, {"tlsAllowInvalidHostnames": True}),  # SRV means TLS
        ("mongodb://h1/?tls=true&tlsInsecure=true", False, {}),
    ],
)
def test_tls_follows_ssl_enabled_unless_the_connection_string_decides(
    uri: str, enabled: bool, expected: dict[str, object]
) -> None:
    kwargs = ClientOptions(tls=enabled, tls_allow_invalid_hostnames=True).for_uri(uri)
    assert {k: v for k, v in kwargs.items() if k.startswith("tls")} == expected


def test_stores_are_given_only_with_tls() -> None:
    options = ClientOptions(
        tls_ca_file="/ca.pem", tls_certificate_key_file="/me.pem", tls_certificate_key_file_password="k"
    )
    assert not {k for k in options.for_uri("mongodb://h1/") if k.startswith("tls")}
    assert options.for_uri("mongodb://h1/?tls=true") == {
        **options.for_uri("mongodb://h1/"),
        "tlsCAFile": "/ca.pem",
        "tlsCertificateKeyFile": "/me.pem",
        "tlsCertificateKeyFilePassword": "k",
    }


def test_ssl_properties_reach_the_driver(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text(PEM)
    options = wiring.client_options(
        settings(
            **{
                "mongodb.ssl.enabled": True,
                "mongodb.ssl.invalid.hostname.allowed": True,
                "mongodb.ssl.truststore": str(ca),
            }
        )
    )
    kwargs = options.for_uri("mongodb://h1/")
    assert (kwargs["tls"], kwargs["tlsAllowInvalidHostnames"], kwargs["tlsCAFile"]) == (True, True, str(ca))


def test_uri_settings_reads_without_dns() -> None:
    given = uri_settings("mongodb+srv://u:p%40ss@cluster.example.com/db?authSource=x&TLS=false")
    assert given.srv and given.credentials and given.options == {"authsource": "x", "tls": "false"}
    assert given.tls is False
    assert uri_settings("mongodb://h/").tls is None


class FakeMongoClient:
    created: list[dict[str, Any]] = []

    def __init__(self, uri: str, **kwargs: Any) -> None:
        self.created.append({"uri": uri, **kwargs})
        self.admin = self

    def command(self, name: str) -> dict[str, Any]:
        return {"ok": 1}

    def close(self) -> None:
        pass


def test_connect_builds_the_client_with_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeMongoClient.created.clear()
    monkeypatch.setattr(client_module, "MongoClient", FakeMongoClient)
    connect(
        "mongodb://h1/",
        Backoff(max_attempts=1),
        client_options=ClientOptions(user="u", password="p", socket_timeout_ms=7),
        event_listeners=[],
    )
    created = FakeMongoClient.created[0]
    assert (created["username"], created["password"], created["socketTimeoutMS"]) == ("u", "p", 7)
    assert created["appname"] == "mongocdc" and created["event_listeners"] == []


def test_wiring_passes_the_settings_to_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeMongoClient.created.clear()
    monkeypatch.setattr(client_module, "MongoClient", FakeMongoClient)
    wiring.mongo_client(settings(**{"mongodb.user": "u", "mongodb.password": "p", "mongodb.socket.timeout.ms": 9}))
    created = FakeMongoClient.created[0]
    assert (created["username"], created["password"], created["socketTimeoutMS"]) == ("u", "p", 9)


@pytest.mark.parametrize("content", [b"\x30\x82\x01\x02binary pkcs12", b""])
def test_a_store_that_is_not_pem_is_a_config_error_with_the_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    store = tmp_path / "truststore.p12"
    store.write_bytes(content)
    monkeypatch.setattr(client_module, "MongoClient", FakeMongoClient)
    with pytest.raises(ConfigError) as caught:
        connect("mongodb://h1/?tls=true", Backoff(max_attempts=1), client_options=ClientOptions(tls_ca_file=str(store)))
    assert caught.value.exit_code == ExitCode.CONFIG
    assert "mongodb.ssl.truststore" in caught.value.message and "not a PEM file" in caught.value.message
    assert caught.value.hint is not None and "openssl pkcs12" in caught.value.hint


def test_a_missing_store_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mongodb.ssl.keystore: cannot read"):
        connect(
            "mongodb://h1/?tls=true",
            Backoff(max_attempts=1),
            client_options=ClientOptions(tls_certificate_key_file=str(tmp_path / "absent.pem")),
        )


def test_the_password_is_redacted_everywhere() -> None:
    loaded = settings(**{"mongodb.user": "u", "mongodb.password": "s3cret-pw", "mongodb.ssl.keystore.password": "kp"})
    assert "s3cret-pw" not in repr(loaded) and "kp'" not in repr(loaded)
    shown = loaded.as_properties()
    assert shown["mongodb.password"] == "********" and shown["mongodb.ssl.keystore.password"] == "********"
    with pytest.raises(ConfigError) as caught:
        load_settings(None, {}, {"mongodb.password": "s3cret-pw", "mongodb.user": " "})
    assert "s3cret-pw" not in caught.value.message


def test_a_password_without_a_user_is_refused() -> None:
    with pytest.raises(ConfigError, match="mongodb.password is set but mongodb.user is not"):
        load_settings(None, {}, {"mongodb.password": "p"})


def test_heartbeat_frequency_below_the_drivers_minimum_is_refused() -> None:
    with pytest.raises(ConfigError, match="mongodb.heartbeat.frequency.ms"):
        load_settings(None, {}, {"mongodb.heartbeat.frequency.ms": 100})


def test_auth_source_may_be_external_but_not_a_bad_name() -> None:
    assert settings(**{"mongodb.user": "CN=x", "mongodb.authsource": "$external"}).mongodb_authsource == "$external"
    with pytest.raises(ConfigError, match="mongodb.authsource"):
        settings(**{"mongodb.authsource": "a b"})


def test_a_retry_against_an_unreachable_server_is_one_line_without_pymongos_topology_dump(
    caplog: pytest.LogCaptureFixture,
) -> None:
    uri = "mongodb://127.0.0.1:9/?directConnection=true"
    with caplog.at_level(logging.WARNING, logger="mongocdc.retry"), pytest.raises(UnreachableError) as caught:
        connect(uri, Backoff(0.01, 0.01, 2), client_options=ClientOptions(server_selection_timeout_ms=200))
    retries = [r.getMessage() for r in caplog.records if r.name == "mongocdc.retry"]
    assert len(retries) == 1 and "\n" not in retries[0]
    assert retries[0].startswith(
        "connecting to MongoDB at 127.0.0.1:9: attempt 1/2 failed, next in 0.0 s: 127.0.0.1:9:"
    )
    assert "Topology Description" not in retries[0] and "configured timeouts" not in retries[0]
    assert caught.value.message.startswith("MongoDB at 127.0.0.1:9 is unreachable after 2 attempts: 127.0.0.1:9:")
    assert "Topology Description" not in caught.value.message
    assert caught.value.hint is not None and caught.value.hint.endswith("connect.backoff.* tune the retries")
