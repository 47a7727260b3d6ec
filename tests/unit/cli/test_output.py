"""What the commands print: `config show`'s values and sources, one JSON shape per command, words not reprs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.cli.helpers import mongocdc

pytestmark = pytest.mark.usefixtures("clean_env")


def _rows(table: str) -> dict[str, list[str]]:
    """A rich table's cells by its first column (box-drawing borders stripped)."""
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").strip("│ ").split("│")]
        if len(cells) > 1:
            rows[cells[0]] = cells[1:]
    return rows


# --- config show ---------------------------------------------------------------------------------


def test_config_show_says_where_each_value_came_from(tmp_path: Path) -> None:
    """Kafka's `kafka-configs --describe` names each value's source; so does `config show`."""
    (tmp_path / "c.yaml").write_text("topic.prefix: fromfile\nname: fromfile\nkafka.linger.ms: 5\n")
    env = {"MONGOCDC_NAME": "fromenv", "MONGOCDC_KAFKA_CLIENT_ID": "me"}
    args = ("config", "show", "-c", "c.yaml", "--bootstrap-servers", "k1:9092", "--offsets", "kafka:offs")
    as_json = mongocdc(*args, "-o", "json", env=env, cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    shown = json.loads(as_json.stdout)
    assert shown["topic.prefix"] == {"value": "fromfile", "source": "file", "path": "c.yaml"}
    assert shown["kafka.linger.ms"] == {"value": "5", "source": "file", "path": "c.yaml"}
    assert shown["name"] == {"value": "fromenv", "source": "env", "variable": "MONGOCDC_NAME"}  # env over file
    assert shown["kafka.client.id"] == {"value": "me", "source": "env", "variable": "MONGOCDC_KAFKA_CLIENT_ID"}
    assert shown["kafka.bootstrap.servers"] == {"value": "k1:9092", "source": "flag", "flag": "--bootstrap-servers"}
    assert shown["offset.storage"] == {"value": "kafka", "source": "flag", "flag": "--offsets"}
    assert shown["offset.storage.topic"] == {"value": "offs", "source": "flag", "flag": "--offsets"}
    assert shown["snapshot.mode"] == {"value": "initial", "source": "default"}
    table = mongocdc(*args, env=env, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    rows = _rows(table.stdout)
    assert rows["property"] == ["value", "source"]
    assert rows["topic.prefix"] == ["fromfile", "file c.yaml"]
    assert rows["name"] == ["fromenv", "env MONGOCDC_NAME"]
    assert rows["offset.storage.topic"] == ["offs", "flag --offsets"]
    assert rows["snapshot.mode"] == ["initial", "default"]


def test_config_show_says_booleans_as_json_booleans_and_unset_one_way(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "topic.prefix: shop\nmongodb.ssl.enabled: true\n"
        "kafka.enable.idempotence: true\nkafka.socket.nagle.disable: False\n"
    )
    as_json = mongocdc("config", "show", "-c", "c.yaml", "-o", "json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    shown = {name: entry["value"] for name, entry in json.loads(as_json.stdout).items()}
    assert shown["mongodb.ssl.enabled"] is True and shown["schemas.enable"] is False
    assert shown["kafka.enable.idempotence"] is True  # a string to librdkafka, a boolean to the reader
    assert shown["kafka.socket.nagle.disable"] is False
    # unset is null, whatever the property's type (an empty list was "", a missing string null)
    assert shown["mongodb.connection.string"] is None and shown["collection.include.list"] is None
    assert "" not in shown.values()
    table = mongocdc("config", "show", "-c", "c.yaml", cwd=tmp_path)
    rows = _rows(table.stdout)
    assert rows["mongodb.ssl.enabled"][0] == "true" and rows["kafka.socket.nagle.disable"][0] == "false"
    assert rows["mongodb.connection.string"] == ["", "default"] and rows["collection.include.list"] == ["", "default"]
    assert "True" not in table.stdout and "False" not in table.stdout and "None" not in table.stdout


# --- one JSON shape per command ------------------------------------------------------------------

JSON_LINES_COMMANDS = {("stream",), ("replicate",), ("spark", "run"), ("topic", "dump")}
"""The commands that report as they go; every other command with --output prints one JSON document."""


def test_every_command_with_output_says_in_its_help_which_json_shape_it_prints() -> None:
    import click
    import typer

    from mongocdc.cli import docs
    from mongocdc.cli.main import app

    shapes = {}
    for node in docs.walk(typer.main.get_command(app)):
        if isinstance(node.command, click.Group):  # the root's global -o: a default for its commands
            continue
        if any("--output" in option.opts for option in docs.options_of(node.command)):
            shapes[node.path] = docs.json_shape(node.command)  # raises when the help says neither
    assert {path for path, shape in shapes.items() if shape == "JSON lines"} == JSON_LINES_COMMANDS
    assert {shape for path, shape in shapes.items() if path not in JSON_LINES_COMMANDS} == {"one document"}
    assert len(shapes) > 15  # every command that prints data


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["offsets", "show"], "json for scripts (one JSON document)"),
        (["config", "show"], "json for scripts (one JSON document)"),
        (["stream"], 'json for scripts (JSON lines: one JSON object per line as it goes, each with a "status")'),
        (["topic", "dump"], "json for scripts (JSON lines: one JSON object per record)"),
    ],
)
def test_the_real_help_says_the_shape(command: list[str], says: str) -> None:
    done = mongocdc(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert says in " ".join(done.stdout.split())  # rich wraps the help; the words are the same


def test_one_document_commands_print_exactly_one_document(tmp_path: Path) -> None:
    store = ["--offsets", f"sqlite:{tmp_path / 'o.db'}", "--name", "app"]
    runs = [
        ("config", "show", "--topic-prefix", "app"),
        ("config", "validate", "--topic-prefix", "app", "--connection-string", "mongodb://h/?replicaSet=rs0"),
        ("offsets", "reset", *store, "--partition", "rs0", "--to-timestamp", "1700000000", "--yes"),
        ("offsets", "set", *store, "--partition", "rs0", "--resume-token", "8263A1B2C3000000012B", "--yes"),
        ("offsets", "show", *store),
        ("offsets", "reset", *store, "--partition", "rs9", "--yes"),  # nothing to change: still a document, []
    ]
    for args in runs:
        done = mongocdc(*args, "-o", "json", cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        document = json.loads(done.stdout)  # the whole of stdout is one JSON value
        assert isinstance(document, dict | list) and done.stdout.count("\n") == 1, args


# --- words, not Python's reprs -------------------------------------------------------------------


def test_table_cells_are_words_not_python_reprs() -> None:
    from mongocdc.cli.render import cell
    from mongocdc.cli.state import Output

    assert [cell(v) for v in (None, True, False, 0, "x", Output.json)] == ["", "true", "false", "0", "x", "json"]
    assert cell(["db.a", "db.b"]) == "db.a, db.b" and cell(("a",)) == "a" and cell({"b", "a"}) == "a, b"
    assert cell({"completed": True, "documents": 5}) == "completed=true, documents=5"


def test_invalid_values_are_shown_as_the_file_writes_them(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "topic.prefix: [a, b]\nmax.batch.size: true\nkafka.sasl.mechanisms: [PLAIN]\ntombstones.on.delete: maybe\n"
    )
    done = mongocdc("config", "validate", "-c", "c.yaml", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert 'topic.prefix: invalid value ["a", "b"] from config file c.yaml' in done.stderr
    assert "max.batch.size: invalid value true from" in done.stderr
    assert 'kafka.sasl.mechanisms: invalid value ["PLAIN"] from' in done.stderr
    assert "tombstones.on.delete: invalid value 'maybe' from" in done.stderr  # text stays quoted
    assert "True" not in done.stderr and "['" not in done.stderr


def test_an_unreadable_stored_offset_is_described_in_json_not_as_a_python_dict(tmp_path: Path) -> None:
    from mongocdc.offsets.sqlite import SqliteOffsetStore

    store = SqliteOffsetStore(tmp_path / "o.db")
    store.commit("app", "rs0", {"sec": "soon", "ord": 1, "resume_token": None, "initsync": True})
    store.close()
    done = mongocdc("offsets", "show", "--offsets", f"sqlite:{tmp_path / 'o.db'}", "--name", "app", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = " ".join(done.stdout.split())
    assert """got {"initsync": true, "ord": 1, "resume_token": null, "sec": "soon"}""" in line
    assert "None" not in done.stdout and "True" not in done.stdout


def test_spark_run_dry_run_is_a_json_line_with_its_status(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("topic.prefix: dbserver1\n")
    done = mongocdc("spark", "run", "-c", "c.yaml", "--warehouse", "/w", "--master", "yarn", "--dry-run", "-o", "json")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    shown = json.loads(line)
    assert shown["status"] == "dry run" and "spark-submit" in shown["command"]
