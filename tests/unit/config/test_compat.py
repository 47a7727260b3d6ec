"""Kafka Connect's keys and Debezium's properties in a pasted connector configuration."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mongocdc.config import PROPERTIES, load_settings
from mongocdc.config.compat import CONNECT, DEBEZIUM, JSON_CONVERTER, MONGODB_CONNECTOR, lookup
from mongocdc.config.loading import is_known_property
from mongocdc.config.reference import render_compat_markdown
from mongocdc.config.suggestions import did_you_mean
from mongocdc.errors import ConfigError, ExitCode


def words(text: str) -> list[str]:
    return text.split()


# Every property of Debezium 3.6.1's MongoDB connector: the configuration reference of its
# documentation (documentation/modules/ROOT/pages/connectors/mongodb.adoc, with the signal and
# notification pass-through tables it includes) and the fields of MongoDbConnectorConfig and
# CommonConnectorConfig that the documentation leaves out.
DEBEZIUM_3_6_1 = words("""
internal.mongodb.allow.offset.invalidation name connector.class mongodb.connection.string topic.prefix
mongodb.authentication.class mongodb.user mongodb.password mongodb.authsource mongodb.ssl.enabled
mongodb.ssl.invalid.hostname.allowed filters.match.mode database.include.list database.exclude.list
collection.include.list collection.exclude.list capture.mode capture.start.op.time capture.scope capture.target
field.exclude.list field.renames tombstones.on.delete schema.name.adjustment.mode field.name.adjustment.mode
capture.mode.full.update.type max.batch.size max.queue.size max.queue.size.in.bytes connect.max.attempts
mongodb.ssl.keystore mongodb.ssl.keystore.password mongodb.ssl.keystore.type mongodb.ssl.truststore
mongodb.ssl.truststore.password mongodb.ssl.truststore.type source.struct.version heartbeat.interval.ms
skipped.operations snapshot.collection.filter.overrides snapshot.delay.ms streaming.delay.ms snapshot.fetch.size
snapshot.include.collection.list snapshot.max.threads snapshot.mode
snapshot.mode.configuration.based.snapshot.data snapshot.mode.configuration.based.snapshot.schema
snapshot.mode.configuration.based.start.stream snapshot.mode.configuration.based.snapshot.on.schema.error
snapshot.mode.configuration.based.snapshot.on.data.error snapshot.mode.custom.name provide.transaction.metadata
retriable.restart.connector.wait.ms mongodb.poll.interval.ms mongodb.connect.timeout.ms
mongodb.heartbeat.frequency.ms mongodb.socket.timeout.ms mongodb.server.selection.timeout.ms cursor.pipeline
cursor.pipeline.order cursor.oversize.handling.mode cursor.oversize.skip.threshold cursor.max.await.time.ms
signal.data.collection signal.enabled.channels notification.enabled.channels incremental.snapshot.chunk.size
incremental.snapshot.watermarking.strategy topic.naming.strategy topic.delimiter topic.cache.size
topic.heartbeat.prefix topic.heartbeat.name topic.transaction custom.metric.tags custom.sanitize.pattern
errors.max.retries guardrail.collections.max guardrail.collections.limit.action extended.headers.enabled
skip.messages.without.change statistics.metrics.enabled
signal.kafka.topic signal.kafka.groupId signal.kafka.bootstrap.servers signal.kafka.poll.timeout.ms
notification.sink.topic.name
connect.backoff.initial.delay.ms connect.backoff.max.delay.ms
event.processing.failure.handling.mode queue.provider.type snapshot.max.threads.multiplier
legacy.snapshot.max.threads incremental.snapshot.allow.schema.changes transaction.metadata.factory converters
post.processors binary.handling.mode query.fetch.size signal.poll.interval.ms sourceinfo.struct.maker
event.converting.failure.handling.mode snapshot.query.mode snapshot.query.mode.custom.name
snapshot.locking.mode.custom.name internal.log.position.check.enable internal.advanced.metrics.enable
connection.validation.timeout.ms executor.shutdown.timeout.ms internal.custom.retriable.exception
heartbeat.topics.prefix openlineage.integration.enabled openlineage.integration.config.file.path
openlineage.integration.job.namespace openlineage.integration.job.description openlineage.integration.job.tags
openlineage.integration.job.owners openlineage.integration.dataset.kafka.bootstrap.servers
""")

# Kafka Connect's connector and source connector keys (ConnectorConfig, SourceConnectorConfig).
CONNECT_KEYS = words("""
name connector.class tasks.max tasks.max.enforce key.converter value.converter header.converter
config.action.reload transforms predicates errors.retry.timeout errors.retry.delay.max.ms errors.tolerance
errors.log.enable errors.log.include.messages topic.creation.groups topic.creation.default.replication.factor
topic.creation.default.partitions topic.creation.default.cleanup.policy exactly.once.support transaction.boundary
transaction.boundary.interval.ms offsets.storage.topic connector.plugin.version key.converter.plugin.version
value.converter.plugin.version header.converter.plugin.version
""")


def write(tmp_path: Path, text: str, name: str = "c.properties") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, name: str = "c.properties") -> object:
    return load_settings(write(tmp_path, text, name), {}, {})


def error(tmp_path: Path, text: str, name: str = "c.properties") -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text, name), {}, {})
    assert caught.value.exit_code == ExitCode.CONFIG
    assert caught.value.hint
    return caught.value.message


# --- the tables -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", DEBEZIUM_3_6_1)
def test_every_debezium_property_is_implemented_mapped_checked_or_ignored(name: str) -> None:
    compat = lookup(name)
    assert compat is not None, f"{name} is missing from compat.DEBEZIUM"
    if compat.status == "implemented":
        assert name in PROPERTIES, f"{name} is marked implemented but mongocdc has no such property"
    else:
        assert compat.note, name


@pytest.mark.parametrize("name", CONNECT_KEYS)
def test_every_kafka_connect_key_is_known(name: str) -> None:
    compat = lookup(name)
    # implemented: a property, or a pass-through key (topic.creation.* goes to Settings.topic_creation)
    assert compat is not None and (compat.status != "implemented" or is_known_property(name)), name


def test_implemented_entries_are_mongocdc_properties() -> None:
    for table in (CONNECT, DEBEZIUM):
        for name, compat in table.items():
            assert (compat.status == "implemented") == (name in PROPERTIES), name


def test_the_reference_documents_every_key_that_is_not_a_property() -> None:
    reference = render_compat_markdown()
    for table in (CONNECT, DEBEZIUM):
        for name, compat in table.items():
            if compat.status != "implemented":
                assert f"| `{name}` |" in reference, name
    assert "| `transforms.*` | mapped |" in reference


# --- connector.class and converters ---------------------------------------------------------


@pytest.mark.parametrize("value", [MONGODB_CONNECTOR, "MongoDbConnector", "MongoDb"])
def test_debeziums_mongodb_connector_class_is_accepted(tmp_path: Path, value: str) -> None:
    load(tmp_path, f"topic.prefix=a\nconnector.class={value}\n")


def test_another_connector_class_is_a_config_error_naming_it(tmp_path: Path) -> None:
    message = error(tmp_path, "connector.class=io.debezium.connector.postgresql.PostgresConnector\n")
    assert "connector.class 'io.debezium.connector.postgresql.PostgresConnector'" in message
    assert MONGODB_CONNECTOR in message


def test_the_json_converter_is_accepted_with_its_aliases(tmp_path: Path) -> None:
    load(
        tmp_path,
        f"key.converter={JSON_CONVERTER}\nvalue.converter=JsonConverter\nvalue.converter.schemas.enable=true\n",
    )


@pytest.mark.parametrize("key", ["key.converter", "value.converter"])
def test_a_schema_registry_converter_is_a_config_error_saying_what_to_use(tmp_path: Path, key: str) -> None:
    message = error(tmp_path, f"{key}=io.confluent.connect.avro.AvroConverter\n")
    assert f"{key}: converter io.confluent.connect.avro.AvroConverter is not implemented" in message
    assert "schema registry" in message and "JsonConverter" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key.converter.schemas.enable=false\nvalue.converter.schemas.enable=false\n", False),
        ("key.converter.schemas.enable=true\nvalue.converter.schemas.enable=true\n", True),
        ("value.converter.schemas.enable=true\n", True),
        (f"key.converter={JSON_CONVERTER}\nvalue.converter={JSON_CONVERTER}\n", True),  # JsonConverter's default
        (f"value.converter={JSON_CONVERTER}\nvalue.converter.schemas.enable=false\n", False),
        ("", False),  # nothing said: mongocdc's own default
        ("schemas.enable=true\n", True),
        ("schemas.enable=false\nvalue.converter.schemas.enable=false\n", False),
    ],
)
def test_the_converters_schemas_enable_becomes_schemas_enable(tmp_path: Path, text: str, expected: bool) -> None:
    settings = load_settings(write(tmp_path, text), {}, {})
    assert settings.schemas_enable is expected


def test_keys_and_values_with_different_schemas_are_each_written_as_their_converter_says(tmp_path: Path) -> None:
    settings = load_settings(
        write(tmp_path, "key.converter.schemas.enable=false\nvalue.converter.schemas.enable=true\n"), {}, {}
    )
    records = settings.record_format
    assert records.uses_pipeline and records.schemas_enable  # the codec writes schemas for the pipeline to read
    assert records.config["key.converter.schemas.enable"] == "false"
    assert records.config["value.converter.schemas.enable"] == "true"
    # a JsonConverter named without schemas.enable has its default, true; the other side says false
    settings = load_settings(
        write(tmp_path, f"key.converter={JSON_CONVERTER}\nvalue.converter.schemas.enable=false\n"), {}, {}
    )
    assert settings.record_format.uses_pipeline
    assert "key.converter.schemas.enable" not in settings.record_format.config  # the converter's own default


def test_converter_schemas_and_schemas_enable_must_agree(tmp_path: Path) -> None:
    message = error(tmp_path, "schemas.enable=true\nvalue.converter.schemas.enable=false\n")
    assert "schemas.enable" in message and "disagree" in message


def test_a_bad_converter_schemas_value_names_the_key(tmp_path: Path) -> None:
    assert "value.converter.schemas.enable: invalid value 'yes'" in error(
        tmp_path, "value.converter.schemas.enable=yes\n"
    )


def test_the_environment_still_wins_over_the_converters_schemas(tmp_path: Path) -> None:
    path = write(tmp_path, "value.converter.schemas.enable=true\nkey.converter.schemas.enable=true\n")
    assert load_settings(path, {"MONGOCDC_SCHEMAS_ENABLE": "false"}, {}).schemas_enable is False


# --- ignored keys -----------------------------------------------------------------------------

PASTED = """\
name=inventory-connector
connector.class=io.debezium.connector.mongodb.MongoDbConnector
topic.prefix=fullfillment
tasks.max=1
transforms=unwrap,route
transforms.unwrap.type=io.debezium.connector.mongodb.transforms.ExtractNewDocumentState
transforms.unwrap.drop.tombstones=false
transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
transforms.route.regex=fullfillment\\.inventory\\.(.*)
transforms.route.replacement=$1
transforms.route.predicate=isOrders
predicates=isOrders
predicates.isOrders.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches
predicates.isOrders.pattern=.*orders
errors.tolerance=all
errors.deadletterqueue.topic.name=dlq
topic.creation.default.replication.factor=3
topic.creation.default.partitions=6
header.converter=org.apache.kafka.connect.storage.SimpleHeaderConverter
config.action.reload=restart
exactly.once.support=requested
transaction.boundary=poll
offsets.storage.topic=inventory-offsets
producer.override.compression.type=zstd
value.converter.decimal.format=NUMERIC
statistics.metrics.enabled=true
event.processing.failure.handling.mode=fail
snapshot.max.threads.multiplier=1
"""


def test_framework_keys_are_reported_once_in_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mongocdc.config")
    settings = load_settings(write(tmp_path, PASTED), {}, {})
    assert settings.name == "inventory-connector" and settings.topic_prefix == "fullfillment"
    warnings = [r for r in caplog.records if r.name == "mongocdc.config"]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    for key in (
        "errors.deadletterqueue.topic.name",
        "offsets.storage.topic",
        "producer.override.compression.type",
    ):
        assert key in text, key
        assert key in settings.ignored, key
    # transforms, predicates, converter settings and errors.tolerance take effect, as in Kafka Connect
    for key in (
        "transforms",
        "transforms.unwrap.type",
        "predicates.isOrders.type",
        "value.converter.decimal.format",
        "errors.tolerance",
    ):
        assert key not in settings.ignored, key
        assert settings.connect_records[key], key
    assert settings.record_format.transforms == ("unwrap", "route") and settings.record_format.tolerates_errors
    # exactly.once.support and transaction.boundary take effect: Kafka Connect's exactly-once source support
    assert "exactly.once.support" not in text and "exactly.once.support" not in settings.ignored
    assert settings.exactly_once_support == "requested" and settings.transaction_boundary == "poll"
    # topic.creation.* takes effect: mongocdc creates missing topics as Kafka Connect does
    assert "topic.creation" not in text and "topic.creation.default.partitions" not in settings.ignored
    rules = settings.topic_creation_rules
    assert rules is not None and (rules.default.partitions, rules.default.replication_factor) == (6, 3)
    assert (
        "unwrap (io.debezium.connector.mongodb.transforms.ExtractNewDocumentState)" in settings.record_format.describe()
    )
    # values that change nothing are accepted silently
    for key in (
        "header.converter",  # SimpleHeaderConverter: how mongocdc writes its headers
        "config.action.reload",
        "transaction.boundary",
        "statistics.metrics.enabled",
        "event.processing.failure.handling.mode",
        "snapshot.max.threads.multiplier",
    ):
        assert key not in text and key not in settings.ignored, key


def test_without_ignored_keys_nothing_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mongocdc.config")  # at debug, the file read is logged
    load(tmp_path, "topic.prefix=a\nconnector.class=MongoDb\nstatistics.metrics.enabled=false\n")
    assert not [r for r in caplog.records if r.name == "mongocdc.config"]


def test_properties_of_earlier_debezium_versions_are_ignored_with_their_successor(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "mongodb.name=old\nmongodb.hosts=rs0/h:27017\n"), {}, {})
    assert "topic.prefix" in settings.ignored["mongodb.name"]
    assert "mongodb.connection.string" in settings.ignored["mongodb.hosts"]


def test_the_deprecated_heartbeat_prefix_is_mapped(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "heartbeat.topics.prefix=hb\n"), {}, {})
    assert settings.topic_heartbeat_prefix == "hb"
    message = error(tmp_path, "heartbeat.topics.prefix=hb\ntopic.heartbeat.prefix=other\n")
    assert "disagree" in message


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("topic.delimiter=.\n", True),
        ("topic.delimiter=_\n", False),
        ("source.struct.version=v2\n", True),
        ("source.struct.version=v1\n", False),
        ("sourceinfo.struct.maker=io.debezium.connector.mongodb.MongoDbSourceInfoStructMaker\n", True),
        ("sourceinfo.struct.maker=com.example.Maker\n", False),
        ("mongodb.authentication.class=io.debezium.connector.mongodb.connection.DefaultMongoDbAuthProvider\n", True),
        ("mongodb.authentication.class=com.example.Auth\n", False),
        ("queue.provider.type=memory\n", True),
        ("queue.provider.type=chronicle\n", False),
        ("topic.naming.strategy=io.debezium.schema.DefaultTopicNamingStrategy\n", True),
        ("topic.naming.strategy=io.debezium.schema.SchemaTopicNamingStrategy\n", False),
    ],
)
def test_checked_properties_accept_what_mongocdc_does_only(tmp_path: Path, text: str, accepted: bool) -> None:
    if accepted:
        load(tmp_path, text)
        return
    name, _, value = text.strip().partition("=")
    message = error(tmp_path, text)
    assert name in message and value in message


def test_the_topic_naming_strategy_error_says_how_topics_are_named(tmp_path: Path) -> None:
    message = error(tmp_path, "topic.naming.strategy=com.example.MyStrategy\n")
    assert "io.debezium.schema.DefaultTopicNamingStrategy" in message
    assert "<topic.prefix>.<database>.<collection>" in message


# --- suggestions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("conector.class", "connector.class"),
        ("mongodb.pasword", "mongodb.password"),
        ("mongodb.auth.source", "mongodb.authsource"),
        ("tombstone.on.delete", "tombstones.on.delete"),
        ("include.collection.list", "collection.include.list"),
        ("topic_prefix", "topic.prefix"),
        ("bootstrap.servers", "kafka.bootstrap.servers"),
    ],
)
def test_close_names_get_a_suggestion(tmp_path: Path, name: str, suggestion: str) -> None:
    message = error(tmp_path, f"{name}=x\n")
    assert f"unknown property {name!r}" in message
    assert f"did you mean {suggestion!r}?" in message


def test_a_misspelt_converter_setting_is_an_error_with_the_right_name(tmp_path: Path) -> None:
    message = error(tmp_path, "value.converter.schema.enable=false\n")
    assert "value.converter.schema.enable" in message and "is not a setting of JsonConverter" in message
    assert "did you mean 'value.converter.schemas.enable'?" in message
    # a setting JsonConverter does not define and that looks like none of its own has no effect, as in Connect
    settings = load_settings(write(tmp_path, "value.converter.schema.registry.url=http://r:8081\n"), {}, {})
    assert settings.connect_records["value.converter.schema.registry.url"] == "http://r:8081"


@pytest.mark.parametrize(
    "name",
    ["foo.bar", "snapshot.new.tables", "database.history.kafka.topic", "mongodb.replica.set", "my.setting", "x"],
)
def test_unrelated_names_get_no_suggestion(tmp_path: Path, name: str) -> None:
    message = error(tmp_path, f"{name}=x\n")
    assert f"unknown property {name!r}" in message
    assert "did you mean" not in message


def test_did_you_mean_needs_few_edits() -> None:
    assert did_you_mean("snapshot.mdoe", ["snapshot.mode"]) == "; did you mean 'snapshot.mode'?"
    assert did_you_mean("errors.tolerance", ["tombstones.on.delete", "errors.max.retries"]) == ""
    assert did_you_mean("poll.interval", ["poll.interval.ms"]) == ""
    assert did_you_mean("interval.ms", ["poll.interval.ms", "heartbeat.interval.ms"]) == ""  # which one?
    assert did_you_mean("storage.topic", ["offset.storage.topic", "topic"]) == "; did you mean 'offset.storage.topic'?"
    assert did_you_mean("a", ["b"]) == "; did you mean 'b'?"
    assert did_you_mean("ab", ["xy"]) == ""


# --- topic.creation.* ---------------------------------------------------------------------------


def test_topic_creation_groups_match_as_kafka_connect_matches_them(tmp_path: Path) -> None:
    """The first listed group whose include matches the whole name and whose exclude does not wins, else default;
    a group's counts default to the default group's, its topic configs are its own."""
    settings = load_settings(
        write(
            tmp_path,
            "topic.prefix=shop\n"
            "topic.creation.default.replication.factor=-1\ntopic.creation.default.partitions=2\n"
            "topic.creation.default.cleanup.policy=compact\n"
            "topic.creation.default.include=nothing\n"  # ignored for the default group, as in Kafka Connect
            "topic.creation.groups=default,orders,audit\n"
            "topic.creation.orders.include=shop[.]sales[.].*\ntopic.creation.orders.exclude=.*[.]archive\n"
            "topic.creation.orders.partitions=6\ntopic.creation.orders.compression.type=lz4\n"
            "topic.creation.audit.include=shop[.]sales[.]orders,__debezium-heartbeat[.].*\n",
        ),
        {},
        {},
    )
    rules = settings.topic_creation_rules
    assert rules is not None and [g.name for g in rules.groups] == ["orders", "audit"]
    orders = rules.group_for("shop.sales.orders")
    assert (orders.name, orders.partitions, orders.replication_factor) == ("orders", 6, -1)
    assert dict(orders.configs) == {"compression.type": "lz4"}
    assert rules.group_for("shop.sales.orders.archive").name == "default"  # excluded from orders, not in audit
    assert rules.group_for("__debezium-heartbeat.shop").name == "audit"
    assert rules.group_for("shop.sales").name == "default"  # the whole name must match
    default = rules.group_for("shop.inventory.items")
    assert (default.partitions, dict(default.configs)) == (2, {"cleanup.policy": "compact"})


def test_topic_creation_off_without_the_default_counts_or_when_disabled(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "topic.prefix=shop\n"), {}, {}).topic_creation_rules is None
    disabled = "topic.prefix=shop\ntopic.creation.enable=false\ntopic.creation.default.partitions=1\n"
    assert load_settings(write(tmp_path, disabled), {}, {}).topic_creation_rules is None
    message = error(tmp_path, "topic.creation.default.partitions=0\ntopic.creation.groups=a\n")
    assert "topic.creation.default.partitions: invalid value '0': must be -1" in message
    assert "topic.creation.default.replication.factor is required when topic.creation.* is set" in message


def test_topic_creation_keys_come_from_the_environment_and_never_reach_librdkafka() -> None:
    env = {"MONGOCDC_TOPIC_CREATION_DEFAULT_PARTITIONS": "4", "MONGOCDC_TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR": "1"}
    settings = load_settings(None, env, {"topic.creation.default.cleanup.policy": "compact"})
    rules = settings.topic_creation_rules
    assert rules is not None and (rules.default.partitions, rules.default.replication_factor) == (4, 1)
    assert dict(rules.default.configs) == {"cleanup.policy": "compact"}
    assert not any(key.startswith("topic.creation") or "partitions" in key for key in settings.kafka_client)
    assert settings.get("topic.creation.default.partitions") == "4"
    assert settings.as_properties()["topic.creation.default.cleanup.policy"] == "compact"
