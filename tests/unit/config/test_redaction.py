"""Redaction of secrets in URIs, free text and by key."""

from __future__ import annotations

import pytest

from mongocdc.config import REDACTED, is_secret_key, redact_text, redact_uri, redact_value


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("mongodb://user:pass@host", "mongodb://user:********@host"),
        ("mongodb+srv://user:pass@cluster0.example.net/db", "mongodb+srv://user:********@cluster0.example.net/db"),
        (
            "mongodb://debezium:dbz@h1:27017,h2:27017/?replicaSet=rs0&authSource=admin",
            "mongodb://debezium:********@h1:27017,h2:27017/?replicaSet=rs0&authSource=admin",
        ),
        ("mongodb://user:p%40ss%2Fw@host", "mongodb://user:********@host"),
        ("mongodb://user:p@ss@host/db", "mongodb://user:********@host/db"),  # unescaped "@" hidden too
        ("mongodb://:pass@host", "mongodb://:********@host"),
        ("mongodb://host:27017/?replicaSet=rs0", "mongodb://host:27017/?replicaSet=rs0"),
        ("mongodb://user@host/?authMechanism=MONGODB-X509", "mongodb://user@host/?authMechanism=MONGODB-X509"),
        (
            "mongodb://h/?tlsCertificateKeyFilePassword=pw&tls=true",
            f"mongodb://h/?tlsCertificateKeyFilePassword={REDACTED}&tls=true",
        ),
        (
            "mongodb://k:s@h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok,X:y",
            f"mongodb://k:{REDACTED}@h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:{REDACTED},X:y",
        ),
    ],
)
def test_redact_uri(uri: str, expected: str) -> None:
    assert redact_uri(uri) == expected


def test_redact_text_finds_uris_in_free_text() -> None:
    text = "could not reach mongodb://bob:hunter2@db1:27017 (timeout); also tried http://u:pw@proxy:8080/x."
    redacted = redact_text(text)
    assert "hunter2" not in redacted
    assert ":pw@" not in redacted
    assert redacted == (
        "could not reach mongodb://bob:********@db1:27017 (timeout); also tried http://u:********@proxy:8080/x."
    )


def test_redact_text_in_a_traceback_like_repr() -> None:
    text = "ConfigError({'uri': 'mongodb://a:b@h', 'sasl.password': 'pw', \"token\": \"t0k\", 'user': 'alice'})"
    redacted = redact_text(text)
    assert redacted == (
        "ConfigError({'uri': 'mongodb://a:********@h', 'sasl.password': '********', "
        "\"token\": \"********\", 'user': 'alice'})"
    )


def test_redact_text_hides_secret_assignments() -> None:
    text = 'sasl.jaas.config=org.apache.PlainLoginModule required username="u" password="p4ss";'
    redacted = redact_text(text)
    assert "p4ss" not in redacted
    assert 'username="u"' in redacted
    assert redact_text("connect sasl.password=s3cret now") == f"connect sasl.password={REDACTED} now"


def test_redact_text_keeps_resume_tokens_and_ordinary_text() -> None:
    text = "resume_token=82653F1C2A000000012B022C0100296E5A1004 resumeToken: {'_data': '8265'} at ts=1700000000"
    assert redact_text(text) == text
    assert redact_text("no secrets here: a=b, c:d") == "no secrets here: a=b, c:d"


def test_redact_text_is_idempotent() -> None:
    text = "mongodb://u:p@h password=x 'secret': 'y'"
    once = redact_text(text)
    assert redact_text(once) == once


@pytest.mark.parametrize(
    "key",
    [
        "kafka.sasl.password",
        "kafka.ssl.key.password",
        "kafka.ssl.key.pem",
        "kafka.sasl.jaas.config",
        "kafka.sasl.oauthbearer.client.secret",
        "MONGOCDC_KAFKA_SASL_PASSWORD",
        "api_token",
        "Password",
    ],
)
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)
    assert redact_value(key, "x") == REDACTED


@pytest.mark.parametrize("key", ["kafka.sasl.username", "topic.prefix", "resume_token", "kafka.ssl.ca.location"])
def test_not_secret_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_redact_value() -> None:
    assert redact_value("mongodb.connection.string", "mongodb://u:p@h", secret=True) == "mongodb://u:********@h"
    assert redact_value("some.secretish", "not-a-uri", secret=True) == REDACTED
    assert redact_value("name", "plain") == "plain"
    assert redact_value("max.batch.size", 5) == 5
    assert redact_value("kafka.sasl.password", None) is None


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://bob:my secret@h1:27017/?replicaSet=rs0",
        "mongodb://bob:a b@c@h1,h2/?replicaSet=rs0",  # a space and an unescaped @
        "mongodb+srv://bob: leading@cluster0.example.net/",
    ],
)
def test_a_connection_string_value_hides_a_password_with_spaces(uri: str) -> None:
    shown = redact_value("mongodb.connection.string", uri, secret=True)
    assert isinstance(shown, str) and REDACTED in shown
    assert "secret" not in shown and " b" not in shown and "leading" not in shown
    assert shown.endswith(uri.rsplit("@", 1)[1])  # hosts and options kept: operators need them
    assert redact_uri(uri) == shown


@pytest.mark.parametrize(
    "key", ["kafka.sasl.pasword", "kafka.sasl.passowrd", "MONGOCDC_KAFKA_SASL_PASSWROD", "kafka.secert"]
)
def test_a_misspelt_secret_key_is_still_secret(key: str) -> None:
    assert is_secret_key(key)
    assert redact_value(key, "hunter2") == REDACTED


@pytest.mark.parametrize("key", ["kafka.sasl.username", "kafka.session.timeout.ms", "signal.kafka.topic", "kafka.acks"])
def test_ordinary_keys_near_no_secret_marker_stay_visible(key: str) -> None:
    assert not is_secret_key(key)
