"""Settings: validation messages, require/get, as_properties, redaction in repr, filters, round trip."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pickle
from typing import Any

import pytest
from bson import ObjectId
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mongocdc.config import PROPERTIES, REDACTED, Settings, load_settings
from mongocdc.config.values import join_patterns
from mongocdc.errors import ConfigError


def load(**overrides: object) -> Settings:
    return load_settings(None, {}, {k.replace("__", "."): v for k, v in overrides.items()})


def error(**overrides: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load(**overrides)
    return caught.value.message


# --- validation messages: key, value, what is accepted ---------------------------


@pytest.mark.parametrize("prefix", ["9lives", "-x", ".x", "has space", "ünïcode", "a/b", ""])
def test_bad_topic_prefix_names_the_accepted_pattern(prefix: str) -> None:
    message = error(topic__prefix=prefix)
    assert f"topic.prefix: invalid value {prefix!r} from the command line" in message
    if prefix:
        assert "starts with a letter or '_'" in message
        assert "[A-Za-z_][A-Za-z0-9_.\\-]*" in message


@pytest.mark.parametrize("prefix", ["inventory", "_x", "a.b-c_d", "A1"])
def test_good_topic_prefixes(prefix: str) -> None:
    assert load(topic__prefix=prefix).topic_prefix == prefix


def test_bad_enum_lists_the_choices() -> None:
    message = error(capture__mode="change_stream")
    assert "capture.mode: invalid value 'change_stream'" in message
    assert (
        "expected one of change_streams, change_streams_update_full, change_streams_with_pre_image, "
        "change_streams_update_full_with_pre_image"
    ) in message


def test_enum_values_ignore_case_and_aliases_normalise() -> None:
    assert load(snapshot__mode="NEVER").snapshot_mode == "no_data"
    assert load(offset__storage=" Kafka ").offset_storage == "kafka"
    assert "never is an alias of no_data" in error(snapshot__mode="sometimes")


@pytest.mark.parametrize(
    ("raw", "shown"),  # text quoted, anything else as YAML/JSON writes it
    [("ten", "'ten'"), ("1.5", "'1.5'"), (1.5, "1.5"), (True, "true"), ("", "''"), ([1], "[1]")],
)
def test_bad_int_says_a_whole_number(raw: object, shown: str) -> None:
    message = error(max__batch__size=raw)
    assert f"max.batch.size: invalid value {shown} " in message
    assert "expected a whole number >= 1" in message


def test_negative_int_is_refused_and_zero_only_where_meaningful() -> None:
    message = error(heartbeat__interval__ms=-1)
    assert "heartbeat.interval.ms: invalid value -1" in message
    assert "expected a whole number >= 0" in message
    assert load(heartbeat__interval__ms=0).heartbeat_interval_ms == 0
    for name in ("max.batch.size", "poll.interval.ms", "connect.max.attempts", "offset.flush.interval.ms"):
        assert f"{name}: invalid value 0" in error(**{name.replace(".", "__"): 0})


def test_int_strings_from_env_are_parsed() -> None:
    assert load(max__batch__size=" 16 ").max_batch_size == 16


@pytest.mark.parametrize(("raw", "expected"), [(True, True), ("true", True), ("FALSE", False), (" True ", True)])
def test_booleans(raw: object, expected: bool) -> None:
    assert load(schemas__enable=raw).schemas_enable is expected


@pytest.mark.parametrize("raw", ["yes", "1", 1, "", "t"])
def test_bad_boolean(raw: object) -> None:
    message = error(schemas__enable=raw)
    assert f"schemas.enable: invalid value {raw!r}" in message
    assert "expected true or false" in message


def test_bad_regex_names_the_key_the_pattern_and_the_regex_error() -> None:
    message = error(database__include__list="inventory,shop(")
    assert "database.include.list: invalid value 'inventory,shop('" in message
    assert "'shop(' is not a valid regular expression (missing ), unterminated subpattern at position 4)" in message


@pytest.mark.parametrize("kind", ["database", "collection"])
def test_include_and_exclude_of_one_kind_are_exclusive(kind: str) -> None:
    message = error(**{f"{kind}__include__list": "a", f"{kind}__exclude__list": "b"})
    assert f"{kind}.include.list and {kind}.exclude.list are both set" in message
    assert "mutually exclusive" in message


def test_database_include_with_collection_exclude_is_fine() -> None:
    settings = load(database__include__list="inventory", collection__exclude__list=r"inventory\.audit")
    assert settings.database_include_list == ("inventory",)


@pytest.mark.parametrize(("scope", "example"), [("database", "inventory"), ("collection", "inventory.orders")])
def test_missing_capture_target(scope: str, example: str) -> None:
    message = error(capture__scope=scope)
    assert f"capture.target is required when capture.scope is {scope}" in message
    assert f"capture.target: {example}" in message


@pytest.mark.parametrize(
    ("scope", "target", "reason"),
    [
        ("database", "inv.orders", "must not contain '.'"),
        ("database", "a b", "must not contain ' '"),
        ("database", "x" * 64, "at most 63 bytes"),
        ("collection", "inventory", "expected <database>.<collection>"),
        ("collection", "inventory.", "expected <database>.<collection>"),
        ("collection", "inventory.system.views", "system.* collections cannot be captured"),
        ("collection", "inventory.a$b", "must not contain '$'"),
        ("collection", "in/v.orders", "must not contain '/'"),
    ],
)
def test_bad_capture_target(scope: str, target: str, reason: str) -> None:
    message = error(capture__scope=scope, capture__target=target)
    assert f"capture.target: invalid value {target!r} for capture.scope {scope}" in message
    assert reason in message


def test_capture_target_without_a_narrow_scope_is_refused() -> None:
    message = error(capture__target="inventory")
    assert "capture.scope is deployment" in message


def test_good_capture_targets() -> None:
    assert load(capture__scope="database", capture__target="inventory").capture_target == "inventory"
    settings = load(capture__scope="collection", capture__target="inventory.orders.2024")
    assert settings.capture_target == "inventory.orders.2024"


def test_bad_connection_string_is_shown_redacted() -> None:
    message = error(mongodb__connection__string="postgres://bob:hunter2@db")
    assert "hunter2" not in message
    assert "mongodb.connection.string: invalid value 'postgres://bob:********@db'" in message
    assert "mongodb:// or mongodb+srv://" in message
    message = error(mongodb__connection__string="hunter2")
    assert "hunter2" not in message
    assert f"invalid value '{REDACTED}'" in message


def test_bad_secret_kafka_value_is_redacted() -> None:
    message = error(kafka__sasl__password=["hunter2"])
    assert "hunter2" not in message
    assert f"kafka.sasl.password: invalid value '{REDACTED}'" in message


def test_strings_must_be_strings_and_not_empty() -> None:
    assert "expected a string (quote the value in YAML)" in error(name=2024)
    assert "name: invalid value ''" in error(name="")


def test_backoff_max_must_not_be_below_initial() -> None:
    message = error(connect__backoff__initial__delay__ms=5000, connect__backoff__max__delay__ms=1000)
    assert "connect.backoff.max.delay.ms (1000) is smaller than connect.backoff.initial.delay.ms (5000)" in message


def test_topic_names_are_checked() -> None:
    assert "topic.transaction: invalid value 'a b'" in error(topic__transaction="a b")
    assert "expected a Kafka topic name" in error(topic__heartbeat__prefix="..")


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(ConfigError, match="topic.prefix: invalid value '9'"):
        Settings(topic_prefix="9")
    with pytest.raises(ConfigError, match="capture.target is required"):
        Settings(capture_scope="collection")
    with pytest.raises(ConfigError, match="collection.include.list"):
        Settings(collection_include_list=("a(",))


# --- require and get ----------------------------------------------------------------


def test_require_returns_the_value() -> None:
    assert load(topic__prefix="inventory").require("topic.prefix") == "inventory"


def test_require_names_the_key_and_every_way_to_set_it() -> None:
    with pytest.raises(ConfigError) as caught:
        Settings().require("topic.prefix")
    assert caught.value.message == "topic.prefix is required by this command but is not set"
    hint = caught.value.hint or ""
    assert "topic.prefix: <value>" in hint
    assert "MONGOCDC_TOPIC_PREFIX" in hint
    assert "--topic-prefix" in hint


def test_require_reports_every_missing_property_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        Settings().require("topic.prefix", "mongodb.connection.string")
    assert "topic.prefix, mongodb.connection.string" in caught.value.message
    hint = caught.value.hint or ""
    assert "MONGOCDC_MONGODB_CONNECTION_STRING" in hint
    assert "--connection-string" in hint


def test_get_by_property_name() -> None:
    settings = load(topic__prefix="t", kafka__linger__ms="5")
    assert settings.get("topic.prefix") == "t"
    assert settings.get("max.batch.size") == 2048
    assert settings.get("kafka.bootstrap.servers") == "localhost:9092"
    assert settings.get("kafka.linger.ms") == "5"
    assert settings.get("kafka.sasl.username") is None


def test_get_unknown_suggests_the_closest_name() -> None:
    with pytest.raises(ConfigError, match="unknown property 'topic.prefx'; did you mean 'topic.prefix'"):
        Settings().get("topic.prefx")


# --- as_properties and repr -----------------------------------------------------------

SECRETS = {
    "mongodb.connection.string": "mongodb://bob:hunter2@h1:27017,h2:27017/?replicaSet=rs0",
    "kafka.sasl.password": "kafka-pw",
    "kafka.sasl.jaas.config": 'org.apache.kafka.PlainLoginModule required username="u" password="jaas-pw";',
    "kafka.ssl.key.pem": "-----BEGIN KEY-----",
    "kafka.sasl.oauthbearer.client.secret": "oauth-secret",
    "kafka.sasl.username": "alice",
}
SECRET_VALUES = ("hunter2", "kafka-pw", "jaas-pw", "BEGIN KEY", "oauth-secret")


def test_as_properties_is_sorted_and_complete() -> None:
    shown = load(**{k.replace(".", "__"): v for k, v in SECRETS.items()}).as_properties()
    assert list(shown) == sorted(shown)
    assert set(PROPERTIES) <= set(shown)
    assert shown["kafka.sasl.username"] == "alice"
    assert shown["max.batch.size"] == 2048
    assert shown["tombstones.on.delete"] is True
    assert shown["topic.prefix"] is None


def test_as_properties_redacts_secrets() -> None:
    shown = load(**{k.replace(".", "__"): v for k, v in SECRETS.items()}).as_properties()
    assert shown["mongodb.connection.string"] == "mongodb://bob:********@h1:27017,h2:27017/?replicaSet=rs0"
    for key in ("kafka.sasl.password", "kafka.sasl.jaas.config", "kafka.ssl.key.pem"):
        assert shown[key] == REDACTED
    assert shown["kafka.sasl.oauthbearer.client.secret"] == REDACTED
    assert not any(secret in str(shown) for secret in SECRET_VALUES)


def test_as_properties_unredacted_shows_everything() -> None:
    shown = load(**{k.replace(".", "__"): v for k, v in SECRETS.items()}).as_properties(redact=False)
    for key, value in SECRETS.items():
        assert shown[key] == value


def test_repr_and_str_never_show_secrets() -> None:
    settings = load(**{k.replace(".", "__"): v for k, v in SECRETS.items()})
    for text in (repr(settings), str(settings), f"{settings}", repr([settings])):
        assert not any(secret in text for secret in SECRET_VALUES), text
        assert "mongodb://bob:********@h1:27017" in text
        assert "'sasl.password': '********'" in text
        assert "topic_prefix=None" in text


def test_kafka_client_is_read_only_and_holds_bootstrap_servers() -> None:
    settings = load(kafka__bootstrap__servers="k1:9092", kafka__acks="all")
    assert dict(settings.kafka_client) == {"bootstrap.servers": "k1:9092", "acks": "all"}
    with pytest.raises(TypeError):
        settings.kafka_client["acks"] = "1"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.name = "other"  # type: ignore[misc]


def test_settings_are_hashable_and_picklable() -> None:
    settings = load(topic__prefix="t", kafka__acks="all", collection__include__list="a\\.b")
    assert hash(settings) == hash(load(topic__prefix="t", kafka__acks="all", collection__include__list="a\\.b"))
    copy = pickle.loads(pickle.dumps(settings))  # noqa: S301 - our own bytes
    assert copy == settings
    assert copy.is_collection_included("a", "b")


def test_replace_revalidates() -> None:
    settings = dataclasses.replace(Settings(), topic_prefix="t", database_include_list=("inv",))
    assert settings.is_database_included("inv")
    assert not settings.is_database_included("shop")
    with pytest.raises(ConfigError):
        dataclasses.replace(settings, database_exclude_list=("x",))


# --- filters ------------------------------------------------------------------------


def test_system_databases_and_collections_are_never_captured() -> None:
    settings = Settings()
    for db in ("admin", "config", "local"):
        assert not settings.is_database_included(db)
        assert not settings.is_collection_included(db, "orders")
    assert settings.is_database_included("inventory")
    assert settings.is_collection_included("inventory", "orders")
    assert not settings.is_collection_included("inventory", "system.views")
    assert not load(database__include__list="admin,.*").is_database_included("admin")


def test_database_include_list_full_matches_ignoring_case() -> None:
    settings = load(database__include__list=r"inv.*,shop")
    assert settings.is_database_included("inventory")
    assert settings.is_database_included("INVENTORY")
    assert settings.is_database_included("shop")
    assert not settings.is_database_included("shop2")
    assert not settings.is_database_included("myshop")
    assert not settings.is_collection_included("myshop", "orders")
    assert settings.is_collection_included("shop", "orders")


def test_database_exclude_list() -> None:
    settings = load(database__exclude__list="test.*")
    assert not settings.is_database_included("test")
    assert not settings.is_database_included("test_x")
    assert settings.is_database_included("prod")
    assert not settings.is_collection_included("test_x", "a")


def test_collection_lists_match_database_dot_collection() -> None:
    include = load(collection__include__list=r"inventory\.orders,shop\..*")
    assert include.is_collection_included("inventory", "orders")
    assert not include.is_collection_included("inventory", "orders_old")
    assert not include.is_collection_included("other", "orders")
    assert include.is_collection_included("shop", "anything")
    assert include.is_database_included("other")  # databases are filtered by the database lists only
    exclude = load(collection__exclude__list=r".*\.audit")
    assert not exclude.is_collection_included("inventory", "audit")
    assert exclude.is_collection_included("inventory", "orders")


def test_escaped_comma_is_part_of_a_pattern() -> None:
    settings = load(collection__include__list=r"db\.a{1\,3},db\.z")
    assert settings.collection_include_list == (r"db\.a{1,3}", r"db\.z")
    assert settings.is_collection_included("db", "aaa")
    assert not settings.is_collection_included("db", "aaaa")
    assert settings.is_collection_included("db", "z")


def test_both_database_and_collection_filters_apply() -> None:
    settings = load(database__include__list="inventory", collection__exclude__list=r"inventory\.audit")
    assert settings.is_collection_included("inventory", "orders")
    assert not settings.is_collection_included("inventory", "audit")
    assert not settings.is_collection_included("shop", "orders")


def test_capture_target_narrows_the_filters() -> None:
    database = load(capture__scope="database", capture__target="inventory")
    assert database.is_database_included("inventory")
    assert not database.is_database_included("shop")
    assert database.is_collection_included("inventory", "orders")
    collection = load(capture__scope="collection", capture__target="inventory.orders")
    assert collection.is_collection_included("inventory", "orders")
    assert not collection.is_collection_included("inventory", "customers")
    assert not collection.is_database_included("shop")


# --- round trip -------------------------------------------------------------------------

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,20}", fullmatch=True)
_topics = st.from_regex(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,20}", fullmatch=True)
_patterns = st.lists(
    st.sampled_from([r"inventory", r"shop\..*", r"a{1,3}", r"a\,b", r"[a,b]+", r"x|y", r"\\", r" spaced ", r"é.*"]),
    max_size=4,
)
_kafka_keys = st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){0,3}", fullmatch=True).filter(lambda k: k != "bootstrap.servers")
_kafka_values = st.one_of(st.text(min_size=0, max_size=12), st.integers(0, 10**6), st.booleans())


@st.composite
def overrides(draw: st.DrawFn) -> dict[str, object]:
    chosen: dict[str, object] = {}

    def maybe(name: str, strategy: st.SearchStrategy[Any]) -> None:
        if draw(st.booleans()):
            chosen[name] = draw(strategy)

    maybe("name", st.text(min_size=1, max_size=10).filter(str.strip))
    maybe("topic.prefix", _names)
    maybe(
        "mongodb.connection.string",
        st.sampled_from(["mongodb://h:27017", "mongodb://u:p%40ss@h1,h2/?replicaSet=rs0", "mongodb+srv://c.example"]),
    )
    kind = draw(st.sampled_from(["include", "exclude"]))
    maybe(f"database.{kind}.list", st.one_of(_patterns, _patterns.map(lambda p: join_patterns(tuple(p)))))
    kind = draw(st.sampled_from(["include", "exclude"]))
    maybe(f"collection.{kind}.list", st.one_of(_patterns, _patterns.map(lambda p: join_patterns(tuple(p)))))
    scope = draw(st.sampled_from(["deployment", "database", "collection", None]))
    if scope is not None:
        chosen["capture.scope"] = scope.upper() if draw(st.booleans()) else scope
        if scope == "database":
            chosen["capture.target"] = draw(_topics.filter(lambda t: "." not in t))
        elif scope == "collection":
            chosen["capture.target"] = draw(_topics.filter(lambda t: "." not in t)) + "." + draw(_topics)
    maybe("capture.mode", st.sampled_from(["change_streams", "change_streams_with_pre_image"]))
    maybe("snapshot.mode", st.sampled_from(["initial", "never", "no_data", "always", "when_needed"]))
    maybe("offset.storage", st.sampled_from(["sqlite", "kafka"]))
    maybe("offset.storage.topic", _topics.filter(lambda t: t not in (".", "..")))
    maybe("max.batch.size", st.one_of(st.integers(1, 10**6), st.integers(1, 10**6).map(str)))
    maybe("heartbeat.interval.ms", st.integers(0, 10**6))
    maybe("connect.backoff.initial.delay.ms", st.integers(1, 1000))
    maybe("connect.backoff.max.delay.ms", st.integers(1000, 10**6))
    maybe("tombstones.on.delete", st.one_of(st.booleans(), st.sampled_from(["true", "False"])))
    maybe("provide.transaction.metadata", st.booleans())
    for key, value in draw(st.dictionaries(_kafka_keys, _kafka_values, max_size=4)).items():
        chosen["kafka." + key] = value
    return chosen


@hypothesis_settings(max_examples=300)
@given(overrides())
def test_as_properties_fed_back_as_overrides_gives_equal_settings(given_overrides: dict[str, object]) -> None:
    first = load_settings(None, {}, given_overrides)
    second = load_settings(None, {}, first.as_properties(redact=False))
    assert second == first
    assert second.as_properties(redact=False) == first.as_properties(redact=False)


@hypothesis_settings(max_examples=100)
@given(overrides())
def test_as_properties_fed_back_through_the_environment_gives_equal_settings(
    given_overrides: dict[str, object],
) -> None:
    first = load_settings(None, {}, given_overrides)
    env = {
        "MONGOCDC_" + name.replace(".", "_").upper(): str(value).lower() if isinstance(value, bool) else str(value)
        for name, value in first.as_properties(redact=False).items()
        if value is not None
    }
    assert load_settings(None, env, {}) == first


# --- snapshot, topology, field, oversize, offset topic and metrics properties -----


def test_defaults_of_the_snapshot_topology_field_and_monitoring_properties() -> None:
    settings = Settings()
    assert settings.snapshot_max_threads == 1
    assert settings.snapshot_fetch_size == 2048
    assert settings.snapshot_include_collection_list == ()
    assert settings.snapshot_collection_filter_overrides == ()
    assert settings.snapshot_filter_overrides == {}
    assert settings.tasks_max == 1
    assert settings.mongodb_connection_mode == "sharded"
    assert settings.mongodb_poll_interval_ms == 30000
    assert settings.field_exclude_list == ()
    assert settings.field_renames == ()
    assert settings.skipped_operations == ("t",)
    assert settings.cursor_oversize_handling_mode == "fail"
    assert settings.cursor_oversize_skip_threshold == 0
    assert settings.offset_storage_partitions == 25
    assert settings.offset_storage_replication_factor == -1
    assert settings.metrics_port == 0
    assert PROPERTIES["metrics.port"].flag is not None
    assert PROPERTIES["metrics.port"].flag.option == "--metrics-port"
    assert "kafka.unavailable.timeout.ms" not in PROPERTIES


@pytest.mark.parametrize(
    "name",
    [
        "snapshot.max.threads",
        "tasks.max",
        "mongodb.poll.interval.ms",
        "offset.storage.partitions",
    ],
)
def test_positive_counts_refuse_zero(name: str) -> None:
    message = error(**{name.replace(".", "__"): 0})
    assert f"{name}: invalid value 0 from the command line: expected a whole number >= 1" in message
    assert load(**{name.replace(".", "__"): "3"}).get(name) == 3


@pytest.mark.parametrize(
    ("mode", "choices"),
    [("mongodb.connection.mode", "sharded, replica_set"), ("cursor.oversize.handling.mode", "fail, skip, split")],
)
def test_new_choices_list_what_is_accepted(mode: str, choices: str) -> None:
    assert f"expected one of {choices}" in error(**{mode.replace(".", "__"): "bogus"})


def test_connection_and_oversize_modes() -> None:
    settings = load(mongodb__connection__mode="REPLICA_SET", cursor__oversize__handling__mode="split")
    assert settings.mongodb_connection_mode == "replica_set"
    assert settings.cursor_oversize_handling_mode == "split"
    assert load(cursor__oversize__skip__threshold="1048576").cursor_oversize_skip_threshold == 1048576
    assert "expected a whole number >= 0" in error(cursor__oversize__skip__threshold=-1)


@pytest.mark.parametrize(("raw", "expected"), [("0", 0), (9404, 9404), ("65535", 65535)])
def test_metrics_port_range(raw: object, expected: int) -> None:
    assert load(metrics__port=raw).metrics_port == expected


@pytest.mark.parametrize("raw", [-1, 65536, "http", 80.5])
def test_metrics_port_out_of_range(raw: object) -> None:
    assert "metrics.port: invalid value" in (message := error(metrics__port=raw))
    assert "expected a whole number from 0 to 65535" in message


@pytest.mark.parametrize(("raw", "expected"), [(-1, -1), ("1", 1), (3, 3)])
def test_replication_factor(raw: object, expected: int) -> None:
    assert load(offset__storage__replication__factor=raw).offset_storage_replication_factor == expected


@pytest.mark.parametrize("raw", [0, -2, "-7", "many"])
def test_replication_factor_refuses_zero_and_below_minus_one(raw: object) -> None:
    message = error(offset__storage__replication__factor=raw)
    assert "offset.storage.replication.factor: invalid value" in message
    assert "expected -1 (the broker's default.replication.factor) or a whole number >= 1" in message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("t", ("t",)),
        ("d,c", ("c", "d")),
        (" U , t ", ("u", "t")),
        ("none", ()),
        ("NONE", ()),
        (["c", "u", "d", "t"], ("c", "u", "d", "t")),
        ([], ()),
    ],
)
def test_skipped_operations(raw: object, expected: tuple[str, ...]) -> None:
    settings = load(skipped__operations=raw)
    assert settings.skipped_operations == expected
    assert load(skipped__operations=settings.as_properties()["skipped.operations"]) == settings


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("x", "unknown value 'x'"),
        ("c,r", "unknown value 'r'"),
        ("none,c", "none cannot be combined with other values"),
        (",", "expected a comma-separated list of c, u, d, t, or none (write none for no flag)"),
        (5, "expected a comma-separated list of c, u, d, t, or none"),
    ],
)
def test_bad_skipped_operations(raw: object, reason: str) -> None:
    message = error(skipped__operations=raw)
    assert "skipped.operations: invalid value" in message
    assert reason in message


def test_field_exclude_list_and_renames_are_parsed() -> None:
    settings = load(
        field__exclude__list="inventory.orders.secret, *.customers.address.zip,inventory.orders.secret",
        field__renames=["inv*.orders.customer.phone:tel", "inventory.orders.name : title"],
    )
    assert settings.field_exclude_list == ("inventory.orders.secret", "*.customers.address.zip")
    assert settings.field_renames == ("inv*.orders.customer.phone:tel", "inventory.orders.name : title")
    again = load_settings(None, {}, settings.as_properties(redact=False))
    assert again == settings


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("inventory.orders", "expected <database>.<collection>.<field>"),
        ("inventory..orders.x", "a path segment is empty"),
        ("inventory.orders.a.", "a path segment is empty"),
        ("inventory.orders.a*", "'*' is allowed only in the database and collection parts"),
        ("inventory.orders.$x", "a field name must not start with '$'"),
    ],
)
def test_bad_field_exclude_list(raw: str, reason: str) -> None:
    message = error(field__exclude__list=raw)
    assert f"field.exclude.list: invalid value {raw!r} from the command line: {raw!r}: {reason}" in message
    assert "expected a comma-separated list of <database>.<collection>.<field path>" in message


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("inventory.orders.name", "the ':' is missing"),
        ("inventory.orders.name:", "the new name after ':' is empty"),
        ("inventory.orders.name:a.b", "the new name is one field name"),
        ("inventory.orders.name:a:b", "the new name is one field name"),
        ("inventory.orders.name:$x", "the new name is one field name"),
        ("orders.name:x", "expected <database>.<collection>.<field>"),
    ],
)
def test_bad_field_renames(raw: str, reason: str) -> None:
    message = error(field__renames=raw)
    assert "field.renames: invalid value" in message
    assert reason in message
    assert "expected a comma-separated list of <database>.<collection>.<field path>:<new name>" in message


def test_snapshot_include_collection_list_is_a_regex_list() -> None:
    assert load(snapshot__include__collection__list="inv\\.a.*,x\\.y").snapshot_include_collection_list == (
        "inv\\.a.*",
        "x\\.y",
    )
    assert "is not a valid regular expression" in error(snapshot__include__collection__list="a(")


# --- snapshot filter overrides ---------------------------------------------------

FILTER_KEY = "snapshot.collection.filter.overrides.inventory.orders"


def test_snapshot_filter_parses_relaxed_extended_json() -> None:
    settings = load_settings(
        None,
        {},
        {
            "snapshot.collection.filter.overrides": "inventory.orders",
            FILTER_KEY: '{"_id": {"$gt": {"$oid": "5f0c7b2e9b1e8a3d4c2b1a0f"}}, '
            '"at": {"$gte": {"$date": "2024-01-01T00:00:00Z"}}, "n": {"$numberLong": "5"}}',
        },
    )
    query = settings.snapshot_filter("inventory", "orders")
    assert query == {
        "_id": {"$gt": ObjectId("5f0c7b2e9b1e8a3d4c2b1a0f")},
        "at": {"$gte": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)},
        "n": 5,
    }
    assert query["at"]["$gte"].tzinfo is not None
    assert settings.snapshot_filter("inventory", "customers") is None
    assert settings.snapshot_filter("inventory", "orders") is not query  # a fresh dict each time
    assert settings.get(FILTER_KEY) == settings.snapshot_filter_overrides["inventory.orders"]
    assert settings.get("snapshot.collection.filter.overrides.inventory.other") is None
    assert settings.as_properties()[FILTER_KEY] == settings.snapshot_filter_overrides["inventory.orders"]
    assert load_settings(None, {}, settings.as_properties(redact=False)) == settings
    assert "snapshot_filter_overrides={'inventory.orders': " in repr(settings)


def test_direct_construction_checks_the_filters() -> None:
    settings = Settings(snapshot_collection_filter_overrides=("a.b",), snapshot_filter_overrides={"a.b": '{"x": 1}'})
    assert settings.snapshot_filter("a", "b") == {"x": 1}
    with pytest.raises(ConfigError, match="not valid \\(extended\\) JSON"):
        Settings(snapshot_collection_filter_overrides=("a.b",), snapshot_filter_overrides={"a.b": "{x"})
    with pytest.raises(ConfigError, match="a.b is not listed in snapshot.collection.filter.overrides"):
        Settings(snapshot_filter_overrides={"a.b": "{}"})
    with pytest.raises(ConfigError, match="lists a.b but snapshot.collection.filter.overrides.a.b is not set"):
        Settings(snapshot_collection_filter_overrides=("a.b",))
    with pytest.raises(ConfigError, match="is not a collection name"):
        Settings(snapshot_filter_overrides={"nodot": "{}"})
