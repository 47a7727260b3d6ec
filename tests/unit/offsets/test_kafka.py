"""The Kafka offset store's record format (pure) and its unreachable-cluster error (no services)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.errors import ExitCode, UnreachableError
from mongocdc.offsets.kafka import KafkaOffsetStore, parse_key, parse_value, record_key, record_value
from mongocdc.retry import Backoff

names = st.text(min_size=1, max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
offsets = st.dictionaries(st.text(max_size=12), json_values, max_size=6)


def test_key_is_kafka_connect_style_compact_json() -> None:
    assert record_key("inventory", "rs0") == b'["inventory",{"partition":"rs0"}]'
    assert record_key("café", "rs0") == '["café",{"partition":"rs0"}]'.encode()


def test_value_is_the_offset_and_an_iso_utc_time_with_sorted_keys() -> None:
    when = datetime(2026, 1, 31, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    raw = record_value({"sec": 1, "ord": 2, "resume_token": None}, when)
    assert raw == b'{"offset":{"ord":2,"resume_token":null,"sec":1},"updated_at":"2026-01-31T12:00:00.000+00:00"}'


@given(names, names)
def test_keys_round_trip_and_are_deterministic(connector: str, partition: str) -> None:
    assert record_key(connector, partition) == record_key(connector, partition)
    assert parse_key(record_key(connector, partition)) == (connector, partition)


@given(offsets)
def test_values_round_trip(offset: dict[str, Any]) -> None:
    when = datetime(2026, 5, 1, 8, 30, 15, 123000, tzinfo=UTC)
    assert parse_value(record_value(offset, when), datetime.now(UTC)) == (offset, when)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        b"not json",
        b'"a string"',
        b'["connector"]',
        b'["connector",{"server_id":"x","rs":"rs0"}]',  # a Kafka Connect worker's own offsets
        b'["connector",{"partition":1}]',
        b'[1,{"partition":"rs0"}]',
    ],
)
def test_keys_mongocdc_did_not_write_are_not_parsed(raw: bytes | None) -> None:
    assert parse_key(raw) is None


def test_value_without_updated_at_uses_the_record_time() -> None:
    fallback = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_value(b'{"offset":{"sec":1}}', fallback) == ({"sec": 1}, fallback)
    with pytest.raises(ValueError):
        parse_value(b'{"sec":1}', fallback)
    with pytest.raises(ValueError):
        parse_value(b"[]", fallback)


def test_unreachable_cluster_is_exit_4_naming_the_servers_and_topic() -> None:
    store = KafkaOffsetStore({"bootstrap.servers": "127.0.0.1:9"}, "offsets-topic", timeout_s=0.5)
    try:
        with pytest.raises(UnreachableError) as caught:
            store.connect(Backoff(initial_delay_s=0.01, max_attempts=2))
    finally:
        store.close()
    assert caught.value.exit_code == ExitCode.UNREACHABLE
    assert "127.0.0.1:9" in caught.value.message and "after 2 attempts" in caught.value.message
    assert "offsets-topic" in caught.value.message
    assert caught.value.hint and "kafka.bootstrap.servers" in caught.value.hint


def test_operations_without_connect_reach_the_cluster_once() -> None:
    store = KafkaOffsetStore({"bootstrap.servers": "127.0.0.1:9"}, "t", timeout_s=0.5)
    try:
        with pytest.raises(UnreachableError):
            store.load("c", "rs0")
    finally:
        store.close()


def test_repr_shows_no_client_settings() -> None:
    store = KafkaOffsetStore({"bootstrap.servers": "b:9092", "sasl.password": "hunter2"}, "t")
    assert "hunter2" not in repr(store) and "b:9092" in repr(store)
    assert json.loads(record_key("c", "p"))[1] == {"partition": "p"}
