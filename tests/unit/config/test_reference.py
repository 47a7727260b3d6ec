"""The README configuration reference and the registry it is rendered from."""

from __future__ import annotations

import dataclasses

from mongocdc.config import ENV_VARS, PROPERTIES, Settings, render_reference_markdown
from mongocdc.config.values import ChoiceType

FILTER_KEY_ROW = "| `snapshot.collection.filter.overrides.<database>.<collection>` |"


def test_reference_has_one_row_per_property_the_filter_keys_topic_creation_and_the_kafka_passthrough() -> None:
    table = render_reference_markdown()
    lines = table.strip().splitlines()
    assert lines[0] == "| Property | Default | Description |"
    assert lines[1] == "|---|---|---|"
    rows = lines[2:]
    assert len(rows) == len(PROPERTIES) + 3
    filter_rows = [i for i, row in enumerate(rows) if row.startswith(FILTER_KEY_ROW)]
    assert len(filter_rows) == 1
    assert rows[filter_rows[0] - 1].startswith("| `snapshot.collection.filter.overrides` |")
    property_rows = [row for row in rows if not row.startswith(FILTER_KEY_ROW)]
    for row, name in zip(property_rows, PROPERTIES, strict=False):
        assert row.startswith(f"| `{name}` |")
    for row in rows[:-1]:
        assert row.count(" | ") == 2  # no unescaped pipe inside a cell
    assert rows[-2].startswith("| `topic.creation.*` |")
    assert rows[-1].startswith("| `kafka.*` |")


def test_reference_shows_defaults_and_choices() -> None:
    table = render_reference_markdown()
    assert "| `max.batch.size` | `2048` |" in table
    assert "| `tombstones.on.delete` | `true` |" in table
    assert "| `topic.prefix` | — |" in table
    assert "`when_needed`, `always` (`never` = `no_data`)." in table


def test_every_property_is_a_settings_field_with_a_good_doc() -> None:
    attrs = {field.name for field in dataclasses.fields(Settings)}
    for name, prop in PROPERTIES.items():
        assert prop.attr in attrs
        assert prop.attr == name.replace(".", "_")
        assert prop.doc.strip() == prop.doc
        assert "\n" not in prop.doc
        assert prop.doc.endswith("."), name
        assert len(prop.doc) >= 40, name


def test_every_default_is_valid_and_renders_back() -> None:
    for name, prop in PROPERTIES.items():
        if prop.default is None:
            continue
        assert prop.parse(prop.default) == prop.default, name
        assert prop.parse(prop.render(prop.default)) == prop.default, name
        if isinstance(prop.value_type, ChoiceType):
            assert prop.default in prop.value_type.choices


def test_environment_variables_are_unique_and_derived_from_names() -> None:
    assert len(ENV_VARS) == len(PROPERTIES)
    for var, name in ENV_VARS.items():
        assert var == "MONGOCDC_" + name.replace(".", "_").upper()


def test_debezium_defaults() -> None:
    defaults = {name: prop.default for name, prop in PROPERTIES.items()}
    assert defaults["capture.scope"] == "deployment"
    assert defaults["capture.mode"] == "change_streams_update_full"
    assert defaults["snapshot.mode"] == "initial"
    assert defaults["connect.backoff.initial.delay.ms"] == 1000
    assert defaults["connect.backoff.max.delay.ms"] == 120000
    assert defaults["connect.max.attempts"] == 16
    assert defaults["topic.heartbeat.prefix"] == "__debezium-heartbeat"
    assert defaults["topic.transaction"] == "transaction"
    assert defaults["tombstones.on.delete"] is True


def test_path_properties_say_how_a_relative_path_in_a_config_file_resolves() -> None:
    from mongocdc.config.reference import render_reference_markdown

    rows = {line.split(" | ")[0]: line for line in render_reference_markdown().splitlines()}
    note = "relative to the file's directory"
    for name in ("offset.storage.file.filename", "mongodb.ssl.truststore", "mongodb.ssl.keystore"):
        assert note in rows[f"| `{name}`"], name
    assert note not in rows["| `offset.storage.topic`"]
