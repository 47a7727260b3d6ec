"""Config files in every format a Debezium user has: Kafka Connect REST JSON, Java .properties, YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from mongocdc.config import load_settings
from mongocdc.config.formats import detect_format, parse_properties, read_config_file
from mongocdc.errors import ConfigError, ExitCode

# The example of Debezium 3.6's MongoDB connector documentation ("MongoDB connector configuration
# example"), pasted as it is shown there, callouts included.
DEBEZIUM_DOCS_JSON = """\
{
  "name": "inventory-connector", // <1>
  "config": {
    "connector.class": "io.debezium.connector.mongodb.MongoDbConnector", // <2>
    "mongodb.connection.string": "mongodb://192.168.99.100:27017/?replicaSet=rs0", // <3>
    "topic.prefix": "fullfillment", // <4>
    "collection.include.list": "inventory[.]*" // <5>
  }
}
"""

# A standalone Kafka Connect worker's connector file, as Debezium's tutorials write them.
STANDALONE_PROPERTIES = """\
# Debezium MongoDB connector (connect-standalone worker.properties inventory.properties)
name=inventory-connector
connector.class=io.debezium.connector.mongodb.MongoDbConnector
tasks.max=1
mongodb.connection.string=mongodb://192.168.99.100:27017/?replicaSet=rs0
topic.prefix=fullfillment
collection.include.list=inventory[.]*
key.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {}, {})
    assert caught.value.exit_code == ExitCode.CONFIG
    assert caught.value.hint
    return caught.value.message


# --- Kafka Connect REST JSON ---------------------------------------------------------------


def test_the_documentation_example_pasted_verbatim(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "inventory.json", DEBEZIUM_DOCS_JSON), {}, {})
    assert settings.name == "inventory-connector"
    assert settings.topic_prefix == "fullfillment"
    assert settings.mongodb_connection_string == "mongodb://192.168.99.100:27017/?replicaSet=rs0"
    assert settings.collection_include_list == ("inventory[.]*",)
    assert dict(settings.ignored) == {}


def test_a_bare_config_object_as_put_to_connectors_name_config(tmp_path: Path) -> None:
    text = (
        '{"connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "topic.prefix": "app", "tasks.max": 2}'
    )
    settings = load_settings(write(tmp_path, "c.json", text), {}, {})
    assert settings.topic_prefix == "app"
    assert settings.tasks_max == 2
    assert settings.name == "mongocdc"


def test_the_name_inside_config_wins_over_the_rest_name(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = '{"name": "outer", "config": {"name": "inner", "topic.prefix": "app"}}'
    assert load_settings(write(tmp_path, "c.json", text), {}, {}).name == "inner"
    assert "named 'outer'" in caplog.text and "mongocdc uses 'inner'" in caplog.text


def test_env_and_flags_still_win_over_the_connector_name(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", DEBEZIUM_DOCS_JSON)
    assert load_settings(path, {"MONGOCDC_NAME": "env"}, {}).name == "env"
    assert load_settings(path, {"MONGOCDC_NAME": "env"}, {"name": "flag"}).name == "flag"


def test_the_answer_of_get_connectors_name_is_accepted(tmp_path: Path) -> None:
    text = (
        '{"name": "inv", "config": {"topic.prefix": "app"}, "tasks": [{"connector": "inv", "task": 0}], '
        '"type": "source"}'
    )
    settings = load_settings(write(tmp_path, "c.json", text), {}, {})
    assert settings.name == "inv"
    assert set(settings.ignored) == {"tasks", "type"}


def test_json_values_may_be_numbers_and_booleans(tmp_path: Path) -> None:
    text = '{"topic.prefix": "app", "max.batch.size": 100, "tombstones.on.delete": false}'
    settings = load_settings(write(tmp_path, "c.json", text), {}, {})
    assert settings.max_batch_size == 100
    assert settings.tombstones_on_delete is False


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "c.json", '{\n  "topic.prefix": "app",\n  "name" "x"\n}'))
    assert "is not valid JSON" in message
    assert "line 3, column 10" in message


def test_json_comments_and_urls_inside_strings(tmp_path: Path) -> None:
    text = '/* header */ {"mongodb.connection.string": "mongodb://h:1/?a=b", // the cluster\n "topic.prefix": "x"}'
    settings = load_settings(write(tmp_path, "c.json", text), {}, {})
    assert settings.mongodb_connection_string == "mongodb://h:1/?a=b"


def test_config_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "c.json", '{"name": "x", "config": ["a"]}'))
    assert "'config' must be an object" in message
    assert "must hold a mapping" in config_error(write(tmp_path, "d.json", '["a"]'))


def test_a_key_twice_in_json_keeps_the_last_and_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings(write(tmp_path, "c.json", '{"topic.prefix": "a", "topic.prefix": "b"}'), {}, {})
    assert settings.topic_prefix == "b"
    assert "'topic.prefix' is given twice" in caplog.text


# --- Java properties -------------------------------------------------------------------------


def test_a_standalone_connector_properties_file(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "inventory.properties", STANDALONE_PROPERTIES), {}, {})
    assert settings.name == "inventory-connector"
    assert settings.topic_prefix == "fullfillment"
    assert settings.tasks_max == 1
    assert settings.schemas_enable is False
    assert dict(settings.ignored) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("  a  =  b  ", {"a": "b  "}),
        ("a\t:\tb", {"a": "b"}),
        ("a = = b", {"a": "= b"}),
        ("a : : b", {"a": ": b"}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("key\\ with\\ blanks = v", {"key with blanks": "v"}),
        ("k\\=q=v", {"k=q": "v"}),
        ("k\\:q:v", {"k:q": "v"}),
        ("a=x\\\\", {"a": "x\\"}),
        ("a=tab\\there\\nnl", {"a": "tab\there\nnl"}),
        ("a=caf\\u00e9 \\u20AC", {"a": "café €"}),
        ("a=\\uD83D\\uDE00", {"a": "\U0001f600"}),
        ("a=\\q\\z", {"a": "qz"}),
        ("# comment\n! comment too\n   # indented comment\na=1", {"a": "1"}),
        ("a=1\\\n    2\\\n\t3", {"a": "123"}),
        ("a=1\\\n# not a comment", {"a": "1# not a comment"}),
        ("a=1\\\n\nb=2", {"a": "1", "b": "2"}),
        ("a=1\r\nb=2\rc=3", {"a": "1", "b": "2", "c": "3"}),
        ("a=1\\", {"a": "1"}),
        ("a=x#not a comment", {"a": "x#not a comment"}),
        ("a=mongodb://u:p@h:27017/?replicaSet=rs0", {"a": "mongodb://u:p@h:27017/?replicaSet=rs0"}),
    ],
)
def test_properties_syntax_as_java_reads_it(text: str, expected: dict[str, str]) -> None:
    assert {entry.key: entry.value for entry in parse_properties(text)} == expected


def test_properties_entries_know_their_line() -> None:
    entries = parse_properties("# c\n\na=1\\\n  2\nb=3\n")
    assert [(e.key, e.line) for e in entries] == [("a", 3), ("b", 5)]


def test_a_malformed_unicode_escape_names_the_line(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "c.properties", "topic.prefix=app\nname=\\u12G4\n"))
    assert "not a valid properties file" in message and "line 2" in message


def test_a_key_twice_in_properties_keeps_the_last_and_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings(write(tmp_path, "c.properties", "topic.prefix=a\ntopic.prefix=b\n"), {}, {})
    assert settings.topic_prefix == "b"
    assert "topic.prefix is set twice" in caplog.text and "lines 1 and 2" in caplog.text


def test_latin1_properties_files_are_read_as_java_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes("topic.prefix=app\nname=caf\xe9\n".encode("latin-1"))
    assert load_settings(path, {}, {}).name == "café"


def test_properties_values_are_typed_by_the_property(tmp_path: Path) -> None:
    text = "topic.prefix=app\nmax.batch.size=10\ntombstones.on.delete=FALSE\nskipped.operations=none\n"
    settings = load_settings(write(tmp_path, "c.properties", text), {}, {})
    assert (settings.max_batch_size, settings.tombstones_on_delete, settings.skipped_operations) == (10, False, ())


# --- format detection, YAML, KafkaConnector -------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("c.json", "a: b", "json"),
        ("c.properties", "a: b", "properties"),
        ("c.props", "a=b", "properties"),
        ("c.yaml", "a=b", "yaml"),
        ("c.YML", "{}", "yaml"),
        ("connector.conf", '  // pasted\n{"name": "x"}', "json"),
        ("connector.conf", "\ufeff{}", "json"),
        ("connector", "# c\nname=x\ntopic.prefix=y\n", "properties"),
        ("connector", "name x\n", "properties"),
        ("connector", "a=1\\\n  2\n", "properties"),
        ("connector", "name: x\ntopic.prefix: y\n", "yaml"),
        ("connector", "kafka:\n  bootstrap.servers: k:9092\n", "yaml"),
        ("connector", "---\nname: x\n", "yaml"),
        ("connector", "kafka.sasl.jaas.config: a b=c;\n", "yaml"),
    ],
)
def test_format_by_extension_then_content(name: str, text: str, expected: str) -> None:
    assert detect_format(Path(name), text) == expected


def test_a_file_without_extension_in_each_format(tmp_path: Path) -> None:
    json_file = write(tmp_path, "one", DEBEZIUM_DOCS_JSON)
    properties_file = write(tmp_path, "two", STANDALONE_PROPERTIES)
    yaml_file = write(tmp_path, "three", "name: inventory-connector\ntopic:\n  prefix: fullfillment\n")
    colon_properties = write(tmp_path, "four", "name:inventory-connector\n")
    for path in (json_file, properties_file, yaml_file, colon_properties):
        assert load_settings(path, {}, {}).name == "inventory-connector", path
    assert read_config_file(colon_properties).format == "properties"


def test_yaml_may_also_hold_a_rest_body(tmp_path: Path) -> None:
    text = "name: inventory-connector\nconfig:\n  topic.prefix: fullfillment\n  tasks.max: 1\n"
    settings = load_settings(write(tmp_path, "c.yaml", text), {}, {})
    assert (settings.name, settings.topic_prefix) == ("inventory-connector", "fullfillment")


def test_a_strimzi_kafka_connector_resource(tmp_path: Path) -> None:
    text = """\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnector
metadata:
  name: inventory-connector
  labels:
    strimzi.io/cluster: my-connect-cluster
spec:
  class: io.debezium.connector.mongodb.MongoDbConnector
  tasksMax: 2
  autoRestart:
    enabled: true
  config:
    mongodb.connection.string: mongodb://192.168.99.100:27017/?replicaSet=rs0
    topic.prefix: inventory-connector
    collection.include.list: inventory[.]*
"""
    settings = load_settings(write(tmp_path, "connector.yaml", text), {}, {})
    assert (settings.name, settings.tasks_max, settings.topic_prefix) == (
        "inventory-connector",
        2,
        "inventory-connector",
    )
    assert set(settings.ignored) == {"spec.autoRestart"}


def test_a_kafka_connector_of_another_class_is_refused(tmp_path: Path) -> None:
    text = "kind: KafkaConnector\nmetadata: {name: x}\nspec:\n  class: FileStreamSource\n  config: {topic.prefix: a}\n"
    assert "connector.class 'FileStreamSource'" in config_error(write(tmp_path, "c.yaml", text))


# --- config provider references ----------------------------------------------------------


def test_file_directory_and_env_references_are_resolved(tmp_path: Path) -> None:
    secrets = write(tmp_path, "secrets.properties", "mongo.password=dbz\\u00e9pw\nmongo.user = debezium\n")
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    (mounted / "connection").write_text("mongodb://h1:27017/?replicaSet=rs0")
    text = (
        "{\n"
        f'  "mongodb.user": "${{file:{secrets}:mongo.user}}",\n'
        f'  "mongodb.password": "${{file:{secrets}:mongo.password}}",\n'
        f'  "mongodb.connection.string": "${{directory:{mounted}:connection}}",\n'
        '  "topic.prefix": "${env:PREFIX}-cdc"\n'
        "}\n"
    )
    settings = load_settings(write(tmp_path, "c.json", text), {"PREFIX": "shop"}, {})
    assert (settings.mongodb_user, settings.mongodb_password) == ("debezium", "dbzépw")
    assert settings.mongodb_connection_string == "mongodb://h1:27017/?replicaSet=rs0"
    assert settings.topic_prefix == "shop-cdc"
    assert settings.as_properties()["mongodb.password"] == "********"


def test_providers_under_the_aliases_a_worker_gives_them(tmp_path: Path) -> None:
    secrets = write(tmp_path, "s.properties", "prefix=app\n")
    text = (
        "config.providers=vault\n"
        "config.providers.vault.class=org.apache.kafka.common.config.provider.FileConfigProvider\n"
        f"topic.prefix=${{vault:{secrets}:prefix}}\n"
    )
    assert load_settings(write(tmp_path, "c.properties", text), {}, {}).topic_prefix == "app"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("${file:/absent.properties:k}", "cannot read /absent.properties"),
        ("${file:SECRETS:missing}", "has no key 'missing'"),
        ("${env:NOT_SET_ANYWHERE}", "the environment variable NOT_SET_ANYWHERE is not set"),
        ("${secrets:ns/name:password}", "no config provider 'secrets'"),
        ("${directory:/absent:file}", "cannot read /absent/file"),
    ],
)
def test_unresolvable_references_are_config_errors(tmp_path: Path, reference: str, expected: str) -> None:
    secrets = write(tmp_path, "s.properties", "k=v\n")
    text = f"topic.prefix=app\nmongodb.user={reference.replace('SECRETS', str(secrets))}\n"
    message = config_error(write(tmp_path, "c.properties", text))
    assert "mongodb.user from config file" in message and "cannot resolve" in message
    assert expected in message


def test_a_provider_class_mongocdc_cannot_run_is_refused(tmp_path: Path) -> None:
    text = "config.providers.vault.class=io.confluent.csid.config.provider.vault.VaultConfigProvider\n"
    assert "FileConfigProvider" in config_error(write(tmp_path, "c.properties", text))


def test_placeholders_without_a_provider_are_left_alone(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "c.yaml", "topic.rename.format: ${topic}.replica\n"), {}, {})
    assert settings.topic_rename_format == "${topic}.replica"
