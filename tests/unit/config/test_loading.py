"""Loading: precedence, file shapes, environment mapping and the errors an operator sees."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pytest

from mongocdc.config import NON_SETTING_ENV_VARS, Settings, load_settings, parse_offsets_spec
from mongocdc.errors import ConfigError, ExitCode


def write(tmp_path: Path, text: str, name: str = "mongocdc.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(
    config_file: Path | None = None, env: Mapping[str, str] | None = None, overrides: Mapping[str, object] | None = None
) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file, env or {}, overrides or {})
    assert caught.value.exit_code == ExitCode.CONFIG
    assert caught.value.hint
    return caught.value.message


# --- precedence -----------------------------------------------------------------


def test_defaults_when_nothing_is_given() -> None:
    settings = load_settings(None, {}, {})
    assert settings == Settings()
    assert settings.name == "mongocdc"
    assert settings.kafka_bootstrap_servers == "localhost:9092"
    assert settings.kafka_client == {"bootstrap.servers": "localhost:9092"}
    assert settings.max_batch_size == 2048
    assert settings.snapshot_mode == "initial"
    assert settings.topic_prefix is None


@pytest.mark.parametrize(
    ("file_value", "env_value", "flag_value", "expected"),
    [
        (None, None, None, "mongocdc"),
        ("from-file", None, None, "from-file"),
        ("from-file", "from-env", None, "from-env"),
        ("from-file", "from-env", "from-flag", "from-flag"),
        (None, "from-env", "from-flag", "from-flag"),
        ("from-file", None, "from-flag", "from-flag"),
    ],
)
def test_flags_beat_env_beat_file_beat_defaults(
    tmp_path: Path, file_value: str | None, env_value: str | None, flag_value: str | None, expected: str
) -> None:
    config = write(tmp_path, f"name: {file_value}\n" if file_value else "{}\n")
    env = {"MONGOCDC_NAME": env_value} if env_value else {}
    overrides = {"name": flag_value} if flag_value else {}
    assert load_settings(config, env, overrides).name == expected


def test_precedence_applies_per_key(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "topic.prefix: file\nmax.batch.size: 10\nkafka.bootstrap.servers: file:9092\ntombstones.on.delete: false\n",
    )
    env = {"MONGOCDC_MAX_BATCH_SIZE": "20", "MONGOCDC_KAFKA_BOOTSTRAP_SERVERS": "env:9092"}
    settings = load_settings(config, env, {"kafka.bootstrap.servers": "flag:9092"})
    assert settings.topic_prefix == "file"
    assert settings.max_batch_size == 20
    assert settings.kafka_bootstrap_servers == "flag:9092"
    assert settings.kafka_client["bootstrap.servers"] == "flag:9092"
    assert settings.tombstones_on_delete is False
    assert settings.heartbeat_interval_ms == 0


def test_none_means_not_set_so_an_absent_flag_keeps_the_env_value() -> None:
    settings = load_settings(None, {"MONGOCDC_TOPIC_PREFIX": "env"}, {"topic.prefix": None})
    assert settings.topic_prefix == "env"


def test_an_empty_yaml_value_means_not_set(tmp_path: Path) -> None:
    config = write(tmp_path, "name:\ntopic.prefix: t\n")
    assert load_settings(config, {}, {}).name == "mongocdc"


# --- the file ---------------------------------------------------------------------


def test_flat_and_nested_files_mean_the_same(tmp_path: Path) -> None:
    flat = write(
        tmp_path,
        "mongodb.connection.string: mongodb://u:p@h1:27017/?replicaSet=rs0\n"
        "topic.prefix: inventory\n"
        "kafka.bootstrap.servers: k1:9092\n"
        "kafka.sasl.username: alice\n"
        "snapshot.mode: when_needed\n",
        "flat.yaml",
    )
    half = write(
        tmp_path,
        "mongodb:\n  connection.string: mongodb://u:p@h1:27017/?replicaSet=rs0\n"
        "topic:\n  prefix: inventory\n"
        "kafka:\n  bootstrap.servers: k1:9092\n  sasl.username: alice\n"
        "snapshot.mode: when_needed\n",
        "half.yaml",
    )
    nested = write(
        tmp_path,
        "mongodb:\n  connection:\n    string: mongodb://u:p@h1:27017/?replicaSet=rs0\n"
        "topic:\n  prefix: inventory\n"
        "kafka:\n  bootstrap:\n    servers: k1:9092\n  sasl:\n    username: alice\n"
        "snapshot:\n  mode: when_needed\n",
        "nested.yaml",
    )
    settings = [load_settings(path, {}, {}) for path in (flat, half, nested)]
    assert settings[0] == settings[1] == settings[2]
    assert settings[0].kafka_client == {"bootstrap.servers": "k1:9092", "sasl.username": "alice"}
    assert settings[0].snapshot_mode == "when_needed"


def test_the_same_key_twice_with_the_same_value_is_accepted(tmp_path: Path) -> None:
    config = write(tmp_path, "topic.prefix: a\ntopic:\n  prefix: a\n")
    assert load_settings(config, {}, {}).topic_prefix == "a"


def test_conflicting_duplicates_after_flattening_are_an_error(tmp_path: Path) -> None:
    config = write(tmp_path, "topic.prefix: a\ntopic:\n  prefix: b\n")
    message = config_error(config)
    assert "topic.prefix is set twice" in message
    assert str(config) in message
    assert "`topic.prefix: …`" in message
    assert "`topic: {prefix: …}`" in message


def test_a_key_repeated_in_one_mapping_is_an_error_with_its_line(tmp_path: Path) -> None:
    config = write(tmp_path, "name: a\ntopic.prefix: x\nname: b\n")
    message = config_error(config)
    assert str(config) in message
    assert "'name' is given twice" in message
    assert "line 3" in message
    assert "first at line 1" in message


def test_a_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    message = config_error(path)
    assert str(path) in message
    assert "does not exist" in message


def test_an_unreadable_file_names_the_path(tmp_path: Path) -> None:
    message = config_error(tmp_path)  # a directory
    assert str(tmp_path) in message
    assert "cannot read" in message


def test_a_file_that_is_not_utf8_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    message = config_error(path)
    assert str(path) in message
    assert "UTF-8" in message


def test_invalid_yaml_gives_the_parser_message_with_line_and_column(tmp_path: Path) -> None:
    config = write(tmp_path, "name: a\ntopic.prefix: [unclosed\nmax.batch.size: 3\n")
    message = config_error(config)
    assert str(config) in message
    assert "not valid YAML" in message
    assert "line 3, column" in message


def test_a_file_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    config = write(tmp_path, "- name\n- topic.prefix\n")
    message = config_error(config)
    assert str(config) in message
    assert "must hold a mapping" in message
    assert "not a list" in message


def test_an_empty_file_is_all_defaults(tmp_path: Path) -> None:
    config = write(tmp_path, "# nothing yet\n")
    assert load_settings(config, {}, {}) == Settings()


def test_unknown_file_key_names_key_file_and_closest_name(tmp_path: Path) -> None:
    config = write(tmp_path, "topic.prefx: inventory\n")
    message = config_error(config)
    assert "unknown property 'topic.prefx'" in message
    assert str(config) in message
    assert "did you mean 'topic.prefix'?" in message


def test_unknown_nested_file_key_is_reported_flattened(tmp_path: Path) -> None:
    config = write(tmp_path, "snapshot:\n  mdoe: initial\n")
    message = config_error(config)
    assert "unknown property 'snapshot.mdoe'" in message
    assert "did you mean 'snapshot.mode'?" in message


def test_non_string_keys_are_an_error(tmp_path: Path) -> None:
    config = write(tmp_path, "kafka:\n  42: x\n")
    message = config_error(config)
    assert "key 42 under 'kafka'" in message


def test_kafka_values_from_yaml_become_strings(tmp_path: Path) -> None:
    config = write(tmp_path, "kafka:\n  linger.ms: 5\n  enable.idempotence: true\n  batch.size: 1.5\n")
    client = load_settings(config, {}, {}).kafka_client
    assert client["linger.ms"] == "5"
    assert client["enable.idempotence"] == "true"
    assert client["batch.size"] == "1.5"


def test_kafka_values_must_be_scalars(tmp_path: Path) -> None:
    config = write(tmp_path, "kafka.sasl.mechanisms: [PLAIN, SCRAM]\n")
    message = config_error(config)
    assert 'kafka.sasl.mechanisms: invalid value ["PLAIN", "SCRAM"]' in message  # as YAML/JSON writes it
    assert "expected a string, number or boolean" in message


def test_regex_lists_may_be_yaml_lists(tmp_path: Path) -> None:
    config = write(tmp_path, "collection.include.list:\n  - inventory\\.orders\n  - 'shop\\..*'\n")
    assert load_settings(config, {}, {}).collection_include_list == (r"inventory\.orders", r"shop\..*")


# --- environment --------------------------------------------------------------------


def test_env_names_map_to_properties() -> None:
    env = {
        "MONGOCDC_TOPIC_PREFIX": "inventory",
        "MONGOCDC_MONGODB_CONNECTION_STRING": "mongodb://h:27017",
        "MONGOCDC_OFFSET_STORAGE_FILE_FILENAME": "/var/lib/offsets.db",
        "MONGOCDC_TOMBSTONES_ON_DELETE": "FALSE",
        "MONGOCDC_SCHEMAS_ENABLE": "true",
        "MONGOCDC_HEARTBEAT_INTERVAL_MS": "5000",
        "MONGOCDC_SNAPSHOT_MODE": "never",
        "MONGOCDC_KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092",
    }
    settings = load_settings(None, env, {})
    assert settings.topic_prefix == "inventory"
    assert settings.mongodb_connection_string == "mongodb://h:27017"
    assert settings.offset_storage_file_filename == "/var/lib/offsets.db"
    assert settings.tombstones_on_delete is False
    assert settings.schemas_enable is True
    assert settings.heartbeat_interval_ms == 5000
    assert settings.snapshot_mode == "no_data"
    assert settings.kafka_bootstrap_servers == "k1:9092,k2:9092"


def test_unknown_kafka_env_vars_pass_through_to_librdkafka() -> None:
    env = {
        "MONGOCDC_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "MONGOCDC_KAFKA_SASL_MECHANISMS": "SCRAM-SHA-512",
        "MONGOCDC_KAFKA_SASL_USERNAME": "alice",
        "MONGOCDC_KAFKA_SASL_PASSWORD": "s3cret",
    }
    settings = load_settings(None, env, {})
    assert settings.kafka_client == {
        "bootstrap.servers": "localhost:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "s3cret",
    }
    assert settings.get("kafka.sasl.username") == "alice"


def test_non_setting_env_vars_are_ignored() -> None:
    env = {var: "whatever" for var in NON_SETTING_ENV_VARS}
    env |= {
        "MONGOCDC_TEST_MONGODB_URI": "mongodb://x",
        "MONGOCDC_TEST_ANYTHING": "1",
        "PATH": "/bin",
        "mongocdc_x": "1",
    }
    assert load_settings(None, env, {}) == Settings()


def test_an_unknown_env_var_is_ignored_with_one_warning_naming_the_closest_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mongocdc.config"):
        first = load_settings(None, {"MONGOCDC_TOPIC_PREFX": "x", "MONGOCDC_TOPIC_PREFIX": "app"}, {})
        again = load_settings(None, {"MONGOCDC_TOPIC_PREFX": "x", "MONGOCDC_TOPIC_PREFIX": "app"}, {})
    assert first == again and first.topic_prefix == "app"
    warnings = [r.getMessage() for r in caplog.records if "MONGOCDC_TOPIC_PREFX" in r.getMessage()]
    assert len(warnings) == 1  # once per process, however often the settings are loaded
    assert "is not a mongocdc setting and is ignored" in warnings[0]
    assert "did you mean 'MONGOCDC_TOPIC_PREFIX'?" in warnings[0]


def test_an_unknown_env_var_may_be_closest_to_a_non_setting_variable(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mongocdc.config"):
        load_settings(None, {"MONGOCDC_LOGLEVEL": "debug"}, {})
    assert any("did you mean 'MONGOCDC_LOG_LEVEL'?" in r.getMessage() for r in caplog.records)


def test_error_names_the_env_var_a_bad_value_came_from() -> None:
    message = config_error(env={"MONGOCDC_MAX_BATCH_SIZE": "lots"})
    assert "max.batch.size: invalid value 'lots' from environment variable MONGOCDC_MAX_BATCH_SIZE" in message


# --- overrides ------------------------------------------------------------------------


def test_overrides_take_typed_values() -> None:
    settings = load_settings(None, {}, {"max.batch.size": 7, "tombstones.on.delete": False, "kafka.linger.ms": 5})
    assert settings.max_batch_size == 7
    assert settings.tombstones_on_delete is False
    assert settings.kafka_client["linger.ms"] == "5"


def test_unknown_override_is_an_error_with_the_closest_name() -> None:
    message = config_error(overrides={"offset.storage.topik": "x"})
    assert "unknown property 'offset.storage.topik' from the command line" in message
    assert "did you mean 'offset.storage.topic'?" in message


# --- aggregation -------------------------------------------------------------------------


def test_every_problem_is_reported_at_once_one_per_line(tmp_path: Path) -> None:
    config = write(tmp_path, "topic.prefix: 9lives\nsnapshot.mode: sometimes\nfoo.bar: 1\n")
    env = {"MONGOCDC_MAX_BATCH_SIZE": "-1", "MONGOCDC_NOPE": "x"}  # the unknown variable only warns
    message = config_error(config, env, {"capture.scope": "database"})
    lines = message.splitlines()
    assert lines[0] == "invalid configuration (5 problems):"
    problems = lines[1:]
    assert len(problems) == 5
    assert all(line.startswith("  - ") for line in problems)
    joined = "\n".join(problems)
    assert "MONGOCDC_NOPE" not in joined
    for key in ("topic.prefix", "snapshot.mode", "'foo.bar'", "max.batch.size", "capture.target"):
        assert key in joined


def test_a_single_problem_is_one_line() -> None:
    message = config_error(env={"MONGOCDC_POLL_INTERVAL_MS": "0"})
    assert "\n" not in message
    assert message.startswith("invalid configuration: poll.interval.ms: invalid value '0'")
    assert "expected a whole number >= 1" in message


# --- --offsets -----------------------------------------------------------------------------


def test_offsets_spec_sqlite() -> None:
    assert parse_offsets_spec("sqlite:/var/lib/mongocdc/offsets.db") == {
        "offset.storage": "sqlite",
        "offset.storage.file.filename": "/var/lib/mongocdc/offsets.db",
    }


def test_offsets_spec_kafka() -> None:
    assert parse_offsets_spec("kafka:cdc-offsets") == {"offset.storage": "kafka", "offset.storage.topic": "cdc-offsets"}


def test_offsets_spec_keeps_colons_in_the_path() -> None:
    assert parse_offsets_spec("sqlite:C:\\data\\o.db")["offset.storage.file.filename"] == "C:\\data\\o.db"


@pytest.mark.parametrize("spec", ["", "sqlite", "sqlite:", "kafka:  ", "redis:offsets", "/tmp/offsets.db"])
def test_offsets_spec_rejects_anything_else(spec: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_offsets_spec(spec)
    assert "expected sqlite:PATH or kafka:TOPIC" in caught.value.message
    assert caught.value.hint and "--offsets sqlite:" in caught.value.hint


def test_offsets_spec_feeds_load_settings() -> None:
    settings = load_settings(None, {}, parse_offsets_spec("kafka:cdc-offsets"))
    assert settings.offset_storage == "kafka"
    assert settings.offset_storage_topic == "cdc-offsets"
    message = config_error(overrides=parse_offsets_spec("kafka:bad topic"))
    assert "offset.storage.topic: invalid value 'bad topic' from the command line" in message


# --- snapshot filter overrides: dynamic keys from every source ------------------

FILTER_LIST = "snapshot.collection.filter.overrides"
ORDERS_KEY = f"{FILTER_LIST}.inventory.orders"
ORDERS_VAR = "MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_INVENTORY_ORDERS"


def test_filter_keys_from_the_file_flat_nested_and_as_yaml_mappings(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "snapshot.collection.filter.overrides: inventory.orders, inventory.line_items, shop.carts\n"
        'snapshot.collection.filter.overrides.inventory.orders: \'{"status": "open"}\'\n'
        "snapshot:\n"
        "  collection.filter.overrides:\n"
        "    inventory:\n"
        "      line_items: {qty: {$gt: 5}, tags: [a, b]}\n"
        "    shop.carts:\n"
        "      at: {$gte: 2024-01-01T00:00:00Z}\n",
    )
    settings = load_settings(config, {}, {})
    assert settings.snapshot_filter("inventory", "orders") == {"status": "open"}
    assert settings.snapshot_filter("inventory", "line_items") == {"qty": {"$gt": 5}, "tags": ["a", "b"]}
    carts = settings.snapshot_filter("shop", "carts")
    assert carts is not None
    assert carts["at"]["$gte"].year == 2024


def test_filter_keys_from_env_match_listed_collections_with_underscores_and_case(tmp_path: Path) -> None:
    env = {
        ORDERS_VAR: '{"a": 1}',
        "MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_MY_DB_LINE_ITEMS": '{"b": 2}',
    }
    overrides = {FILTER_LIST: "inventory.orders,my_db.Line_Items"}
    settings = load_settings(None, env, overrides)
    assert settings.snapshot_filter_overrides == {"inventory.orders": '{"a": 1}', "my_db.Line_Items": '{"b": 2}'}
    # the list itself may come from the environment too
    settings = load_settings(
        None, {**env, "MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES": "inventory.orders,my_db.Line_Items"}, {}
    )
    assert settings.snapshot_filter("my_db", "Line_Items") == {"b": 2}


def test_filter_keys_from_flags_and_precedence(tmp_path: Path) -> None:
    config = write(tmp_path, f'{FILTER_LIST}: inventory.orders\n{ORDERS_KEY}: \'{{"from": "file"}}\'\n')
    assert load_settings(config, {}, {}).snapshot_filter("inventory", "orders") == {"from": "file"}
    env = {ORDERS_VAR: '{"from": "env"}'}
    assert load_settings(config, env, {}).snapshot_filter("inventory", "orders") == {"from": "env"}
    flags: dict[str, object] = {ORDERS_KEY: '{"from": "flag"}'}
    assert load_settings(config, env, flags).snapshot_filter("inventory", "orders") == {"from": "flag"}
    flags = {ORDERS_KEY: {"from": "dict"}, FILTER_LIST: "inventory.orders"}
    assert load_settings(None, {}, flags).snapshot_filter("inventory", "orders") == {"from": "dict"}
    assert load_settings(config, env, {ORDERS_KEY: None}).snapshot_filter("inventory", "orders") == {"from": "env"}


def test_bad_filter_json_names_the_key_the_origin_and_the_parser_message(tmp_path: Path) -> None:
    config = write(tmp_path, f"{FILTER_LIST}: inventory.orders\n{ORDERS_KEY}: '{{status: open}}'\n")
    message = config_error(config)
    assert f"{ORDERS_KEY}: invalid value '{{status: open}}' from config file {config}" in message
    assert "not valid (extended) JSON: Expecting property name enclosed in double quotes: line 1 column 2" in message

    message = config_error(None, {ORDERS_VAR: '{"_id": {"$oid": "nope"}}'}, {FILTER_LIST: "inventory.orders"})
    assert f"from environment variable {ORDERS_VAR}" in message
    assert "'nope' is not a valid ObjectId" in message

    message = config_error(overrides={FILTER_LIST: "inventory.orders", ORDERS_KEY: "[1, 2]"})
    assert "expected a JSON object (a MongoDB query document" in message
    assert "not list" in message

    message = config_error(overrides={FILTER_LIST: "inventory.orders", ORDERS_KEY: 5})
    assert "expected a query document as JSON text" in message


def test_filter_key_for_an_unlisted_collection_is_refused() -> None:
    message = config_error(overrides={ORDERS_KEY: "{}"})
    assert f"{ORDERS_KEY} is set but inventory.orders is not listed in {FILTER_LIST}" in message
    message = config_error(
        overrides={FILTER_LIST: "inventory.customers", ORDERS_KEY: "{}", f"{FILTER_LIST}.inventory.customers": "{}"}
    )
    assert "inventory.orders is not listed" in message


def test_listed_collection_without_a_filter_is_refused() -> None:
    message = config_error(overrides={FILTER_LIST: "inventory.orders"})
    assert f"{FILTER_LIST} lists inventory.orders but {ORDERS_KEY} is not set" in message


def test_bad_namespaces_in_the_list_and_in_keys() -> None:
    message = config_error(overrides={FILTER_LIST: "inventory"})
    assert (
        f"{FILTER_LIST}: invalid value 'inventory' from the command line: 'inventory': expected <database>.<collection>"
        in message
    )
    message = config_error(overrides={f"{FILTER_LIST}.orders": "{}"})
    assert f"{FILTER_LIST}.orders from the command line: 'orders' is not a collection name" in message


def test_filter_env_vars_that_match_nothing_or_several_collections() -> None:
    message = config_error(None, {"MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_SHOP_CARTS": "{}"}, {})
    assert (
        "MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_SHOP_CARTS sets a snapshot filter for a collection not listed"
        in message
    )
    message = config_error(
        None,
        {"MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_A_B_C": "{}"},
        {FILTER_LIST: "a_b.c,a.b_c"},
    )
    assert "matches several collections listed in snapshot.collection.filter.overrides (a_b.c, a.b_c)" in message


def test_a_bad_list_does_not_add_noise_about_filter_env_vars() -> None:
    message = config_error(None, {ORDERS_VAR: "{}"}, {FILTER_LIST: "nodot"})
    assert "invalid value 'nodot'" in message
    assert ORDERS_VAR not in message


def test_unknown_keys_near_the_filter_prefix_are_still_unknown(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "snapshot.collection.filter.override: x\n"))
    assert "unknown property 'snapshot.collection.filter.override'" in message


# --- provenance -----------------------------------------------------------------


def test_each_value_remembers_the_source_that_won(tmp_path: Path) -> None:
    from mongocdc.config.provenance import Provenance

    config = write(
        tmp_path,
        "topic.prefix: shop\nname: file\nsnapshot.collection.filter.overrides: inv.orders\n",
    )
    env = {
        "MONGOCDC_NAME": "env",
        "MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_INV_ORDERS": '{"a": 1}',
        "MONGOCDC_KAFKA_LINGER_MS": "5",
    }
    settings = load_settings(config, env, {"name": "flag", "max.batch.size": 7}, flags={"name": "--name"})
    assert settings.source_of("topic.prefix") == Provenance("file", str(config))
    assert settings.source_of("name") == Provenance("flag", "--name")  # flags > env > file
    assert settings.source_of("max.batch.size") == Provenance("flag")  # no option named: "flag" alone
    assert settings.source_of("kafka.linger.ms") == Provenance("env", "MONGOCDC_KAFKA_LINGER_MS")
    variable = "MONGOCDC_SNAPSHOT_COLLECTION_FILTER_OVERRIDES_INV_ORDERS"
    assert settings.source_of("snapshot.collection.filter.overrides.inv.orders") == Provenance("env", variable)
    assert settings.source_of("snapshot.mode") == Provenance("default")
    assert (Provenance("flag").describe(), Provenance("env", "X").to_dict()) == (
        "flag",
        {"source": "env", "variable": "X"},
    )
    assert settings == load_settings(None, {}, settings.as_properties(redact=False))  # provenance is not compared
