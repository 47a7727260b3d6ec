"""Which converters and transforms write a connector's records, and where each came from (``config/records.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mongocdc.config import Settings, load_settings
from mongocdc.errors import ConfigError, ExitCode

JSON = "org.apache.kafka.connect.json.JsonConverter"
CONNECTOR = "connector.class=io.debezium.connector.mongodb.MongoDbConnector\ntopic.prefix=inv\n"


def load(tmp_path: Path, text: str, *, worker: str | None = None, name: str = "c.properties") -> Settings:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    overrides: dict[str, object] = {}
    if worker is not None:
        worker_path = tmp_path / ("worker.yaml" if worker.startswith("apiVersion") else "worker.properties")
        worker_path.write_text(worker, encoding="utf-8")
        overrides["worker.config"] = str(worker_path)
    return load_settings(path, {}, overrides)


def refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.properties"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {}, {})
    assert caught.value.exit_code == ExitCode.CONFIG
    return caught.value.message


def test_a_pasted_connector_without_converters_gets_kafka_connects_default_json_converter(tmp_path: Path) -> None:
    settings = load(tmp_path, CONNECTOR)
    records = settings.record_format
    assert not records.uses_pipeline and records.schemas_enable  # JsonConverter's schemas.enable=true
    assert settings.schemas_enable is True and settings.source_of("schemas.enable").kind == "file"
    assert records.origins["key"].startswith("schemas.enable from file")
    # mongocdc's own configuration keeps mongocdc's default
    assert load(tmp_path, "topic.prefix=inv\n", name="own.properties").record_format.schemas_enable is False


def test_the_workers_converters_apply_to_the_sides_the_connector_names_none_for(tmp_path: Path) -> None:
    worker = (
        f"bootstrap.servers=w1:9092,w2:9092\nkey.converter={JSON}\nkey.converter.schemas.enable=false\n"
        f"value.converter={JSON}\nvalue.converter.schemas.enable=false\ngroup.id=connect-cluster\n"
    )
    settings = load(tmp_path, CONNECTOR, worker=worker)
    records = settings.record_format
    assert not records.uses_pipeline and records.schemas_enable is False
    assert "worker.properties" in records.origins["key"] and "worker.properties" in records.describe()
    assert settings.kafka_bootstrap_servers == "w1:9092,w2:9092"  # the worker's, as nothing else set it
    # the connector's own converter wins for its side, configured with the connector's settings only
    settings = load(tmp_path, CONNECTOR + f"value.converter={JSON}\n", worker=worker)
    records = settings.record_format
    assert records.uses_pipeline  # keys without schemas (the worker's), values with (JsonConverter's default)
    assert records.config["key.converter.schemas.enable"] == "false"
    assert "value.converter.schemas.enable" not in records.config
    assert records.origins["value"] == "the connector configuration"


def test_a_connector_converter_setting_without_its_class_leaves_the_workers_converter(tmp_path: Path) -> None:
    worker = f"value.converter={JSON}\nvalue.converter.schemas.enable=false\n"
    settings = load(tmp_path, CONNECTOR + "value.converter.schemas.enable=true\n", worker=worker)
    # Kafka Connect configures the worker's converter with the worker's settings only
    assert settings.record_format.config["value.converter.schemas.enable"] == "false"


def test_a_strimzi_kafka_connect_resource_is_a_worker_configuration(tmp_path: Path) -> None:
    worker = (
        "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaConnect\nmetadata:\n  name: connect\nspec:\n"
        "  bootstrapServers: my-cluster-kafka-bootstrap:9093\n  config:\n"
        f"    key.converter: {JSON}\n    key.converter.schemas.enable: false\n"
        f"    value.converter: {JSON}\n    value.converter.schemas.enable: false\n"
    )
    settings = load(tmp_path, CONNECTOR, worker=worker)
    assert settings.record_format.schemas_enable is False and not settings.record_format.uses_pipeline
    assert settings.kafka_bootstrap_servers == "my-cluster-kafka-bootstrap:9093"


def test_a_bootstrap_flag_wins_over_the_workers(tmp_path: Path) -> None:
    (tmp_path / "w.properties").write_text("bootstrap.servers=w1:9092\n")
    path = tmp_path / "c.properties"
    path.write_text(CONNECTOR)
    settings = load_settings(
        path, {}, {"worker.config": str(tmp_path / "w.properties"), "kafka.bootstrap.servers": "k:9092"}
    )
    assert settings.kafka_bootstrap_servers == "k:9092"


def test_a_missing_worker_configuration_is_exit_3_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text(CONNECTOR)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {}, {"worker.config": str(tmp_path / "absent.properties")})
    assert caught.value.exit_code == ExitCode.CONFIG
    assert "worker.config" in caught.value.message and "absent.properties" in caught.value.message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "transforms=f\ntransforms.f.type=io.debezium.transforms.Filter\ntransforms.f.language=jsr223.groovy\n",
            "transforms.f.type: transform io.debezium.transforms.Filter is not implemented",
        ),
        (
            "transforms=r\ntransforms.r.type=io.debezium.transforms.ContentBasedRouter\n",
            "transforms.r.type: transform io.debezium.transforms.ContentBasedRouter is not implemented",
        ),
        ("transforms=c\ntransforms.c.type=com.example.MyTransform\n", "com.example.MyTransform"),
        (
            "transforms=x\ntransforms.x.type=org.apache.kafka.connect.transforms.ExtractField$Value\n"
            "transforms.x.field=after\ntransforms.x.predicate=p\npredicates=p\npredicates.p.type=com.example.MyPredicate\n",
            "predicates.p.type: predicate com.example.MyPredicate is not implemented",
        ),
        ("header.converter=com.example.HeaderConverter\n", "header.converter: header converter"),
        ("value.converter=io.confluent.connect.protobuf.ProtobufConverter\n", "schema registry"),
    ],
)
def test_a_class_mongocdc_does_not_implement_is_refused_at_start(tmp_path: Path, text: str, named: str) -> None:
    message = refused(tmp_path, CONNECTOR + text)
    assert named in message
    assert "what to do" in message or "use" in message or "remove" in message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("transforms=r\ntransforms.r.type=org.apache.kafka.connect.transforms.RegexRouter\n", "transforms.r."),
        (
            "transforms=u\ntransforms.u.type=io.debezium.connector.mongodb.transforms.ExtractNewDocumentState\n"
            "transforms.u.array.encoding=list\n",
            "array.encoding",
        ),
        ("transforms=a,a\ntransforms.a.type=org.apache.kafka.connect.transforms.Filter\n", "Duplicate alias"),
        (
            "transforms=f\ntransforms.f.type=org.apache.kafka.connect.transforms.Filter\ntransforms.f.predicate=nope\n",
            "transforms.f.predicate",
        ),
        ("errors.tolerance=some\n", "errors.tolerance"),
    ],
)
def test_a_setting_kafka_connect_refuses_is_refused_naming_it(tmp_path: Path, text: str, named: str) -> None:
    assert named in refused(tmp_path, CONNECTOR + text)


def test_the_start_up_line_says_each_sides_converter_where_it_came_from_and_the_chain(tmp_path: Path) -> None:
    text = (
        CONNECTOR
        + "key.converter.schemas.enable=false\n"
        + "transforms=route\ntransforms.route.type=org.apache.kafka.connect.transforms.RegexRouter\n"
        + "transforms.route.regex=inv\\\\.(.*)\ntransforms.route.replacement=$1\n"
    )
    described = load(tmp_path, text).record_format.describe()
    assert "keys by JsonConverter (schemas.enable=false) from the connector configuration" in described
    assert "transforms: route (org.apache.kafka.connect.transforms.RegexRouter)" in described


def test_classes_are_found_by_the_aliases_kafka_connect_accepts(tmp_path: Path) -> None:
    text = (
        CONNECTOR
        + "transforms=unwrap,route,keep\ntransforms.unwrap.type=ExtractNewDocumentState\n"
        + "transforms.route.type=RegexRouter\ntransforms.route.regex=(.*)\ntransforms.route.replacement=$1\n"
        + "transforms.keep.type=Filter\ntransforms.keep.predicate=t\ntransforms.keep.negate=true\n"
        + "predicates=t\npredicates.t.type=TopicNameMatches\npredicates.t.pattern=.*\n"
        + "key.converter=String\nvalue.converter=JsonConverter\n"
    )
    pipeline = load(tmp_path, text).record_format.pipeline()
    assert pipeline is not None
    names = [type(stage.transform).__name__ for stage in pipeline.stages]
    assert names[:2] == ["ExtractNewDocumentState", "RegexRouter"]


def test_each_thread_gets_a_chain_of_its_own_as_each_connect_task_does(tmp_path: Path) -> None:
    import threading

    from mongocdc.events.connect.chain import RecordPipeline

    text = CONNECTOR + "transforms=unwrap\ntransforms.unwrap.type=ExtractNewDocumentState\n"
    pipeline = load(tmp_path, text).record_format.pipeline()
    assert pipeline is not None
    assert pipeline.for_this_thread() is pipeline and pipeline.for_this_thread() is pipeline
    others: list[RecordPipeline] = []
    thread = threading.Thread(target=lambda: others.append(pipeline.for_this_thread()))
    thread.start()
    thread.join()
    [other] = others
    assert other is not pipeline and other.config == pipeline.config
    assert other.stages[0].transform is not pipeline.stages[0].transform
