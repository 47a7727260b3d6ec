"""Pasted Debezium configurations through the real command line: -c after the command, every format, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from mongocdc.cli import docs
from mongocdc.cli.main import CONFIG_FREE_COMMANDS, run
from mongocdc.errors import ExitCode

REPO = Path(__file__).resolve().parents[3]

REST_JSON = """\
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

PROPERTIES = """\
name=inventory-connector
connector.class=io.debezium.connector.mongodb.MongoDbConnector
tasks.max=1
mongodb.connection.string=mongodb://192.168.99.100:27017/?replicaSet=rs0
mongodb.user=debezium
mongodb.password=dbz-s3cret
topic.prefix=fullfillment
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
transforms=unwrap
transforms.unwrap.type=io.debezium.connector.mongodb.transforms.ExtractNewDocumentState
"""


pytestmark = pytest.mark.usefixtures("clean_env")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_config_validate_takes_c_after_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "x.json", REST_JSON)
    assert run(["config", "validate", "-c", str(path)]) == ExitCode.OK
    assert capsys.readouterr().out == "configuration is valid\n"


def test_config_show_of_a_properties_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "inventory.properties", PROPERTIES)
    assert run(["config", "show", "--config", str(path), "-o", "json"]) == ExitCode.OK
    captured = capsys.readouterr()
    shown = {name: entry["value"] for name, entry in json.loads(captured.out).items()}
    assert shown["name"] == "inventory-connector"
    assert shown["topic.prefix"] == "fullfillment"
    assert shown["mongodb.user"] == "debezium"
    assert shown["mongodb.password"] == "********"
    assert shown["schemas.enable"] is True  # the connector's JsonConverters, schemas.enable left at its default
    assert "dbz-s3cret" not in captured.out + captured.err
    assert "no effect in mongocdc" not in captured.err  # the transform is applied, as in Kafka Connect
    assert shown["transforms.unwrap.type"] == "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"


def test_the_command_option_wins_over_the_global_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    global_file = write(tmp_path, "global.yaml", "name: from-global\n")
    command_file = write(tmp_path, "command.json", '{"name": "from-command"}')
    assert run(["-c", str(global_file), "config", "show", "-c", str(command_file), "-o", "json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["name"] == {
        "value": "from-command",
        "source": "file",
        "path": str(command_file),
    }


def test_every_command_that_reads_the_configuration_takes_c() -> None:
    root = docs.root_command()
    checked = 0
    for node in docs.walk(root):
        if not node.path or isinstance(node.command, click.Group):
            continue
        flags = {flag for option in docs.options_of(node.command) for flag in docs.option_flags(option)}
        if node.path in CONFIG_FREE_COMMANDS:
            assert "--config" not in flags, node.name
        else:
            assert {"--config", "-c"} <= flags, node.name
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "x.json",
            '{"name": "x", "config": {"connector.class": "FileStreamSource"}}',
            "connector.class 'FileStreamSource'",
        ),
        ("x.json", '{"value.converter": "io.confluent.connect.avro.AvroConverter"}', "JsonConverter"),
        (
            "x.json",
            '{"topic.prefix": "a",\n "name" "x"}',
            "not valid JSON: Expecting ':' delimiter at line 2, column 9",
        ),
        ("x.properties", "name=\\u12\n", "not a valid properties file"),
        ("x.properties", "topic.naming.strategy=com.example.Custom\n", "io.debezium.schema.DefaultTopicNamingStrategy"),
        ("x.properties", "conector.class=MongoDb\n", "did you mean 'connector.class'?"),
        ("x.properties", "max.queue.size=10\n", "must be larger than max.batch.size"),
        ("x.properties", "exactly.once.support=required\n", "a SQLite file cannot take part in a Kafka transaction"),
        ("x.properties", "transaction.boundary=connector\n", "expected one of poll, interval"),
        ("x.yaml", "- a\n", "must hold a mapping"),
    ],
)
def test_mistakes_in_pasted_files_exit_3_with_a_message_and_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, expected: str
) -> None:
    path = write(tmp_path, name, text)
    assert run(["stream", "-c", str(path), "--connection-string", "mongodb://127.0.0.1:1/"]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert expected in err
    assert "\nhint: " in err


def test_a_directory_or_a_missing_file_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["config", "validate", "-c", str(tmp_path)]) == ExitCode.CONFIG
    assert run(["config", "validate", "-c", str(tmp_path / "absent.json")]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "it is a directory" in err and "absent.json does not exist" in err


def _mongocdc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONGOCDC_") or k.startswith("MONGOCDC_TEST_")}
    return subprocess.run(
        [sys.executable, "-m", "mongocdc", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_real_command_validates_a_rest_body_and_a_properties_file(tmp_path: Path) -> None:
    ok = _mongocdc("config", "validate", "-c", str(write(tmp_path, "x.json", REST_JSON)), cwd=tmp_path)
    assert (ok.returncode, ok.stdout) == (0, "configuration is valid\n")
    shown = _mongocdc("config", "show", "-c", str(write(tmp_path, "x.properties", PROPERTIES)), cwd=tmp_path)
    assert shown.returncode == 0
    assert "inventory-connector" in shown.stdout and "dbz-s3cret" not in shown.stdout + shown.stderr
    assert "WARNING" not in shown.stderr  # every key takes effect: the transform is applied, as in Kafka Connect
    assert "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState" in shown.stdout


def test_the_real_command_exits_3_on_a_foreign_connector(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pg.json",
        '{"name": "pg", "config": {"connector.class": "io.debezium.connector.postgresql.PostgresConnector"}}',
    )
    failed = _mongocdc("stream", "-c", str(path), cwd=tmp_path)
    assert failed.returncode == ExitCode.CONFIG
    assert "connector.class 'io.debezium.connector.postgresql.PostgresConnector'" in failed.stderr
    assert "io.debezium.connector.mongodb.MongoDbConnector" in failed.stderr
    assert "hint:" in failed.stderr and "Traceback" not in failed.stderr
