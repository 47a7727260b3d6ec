"""Where a configuration file's relative paths point, and offset stores the commands that read offsets never
create (the real command, no services)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.cli.helpers import connector_dir, mongocdc


def test_a_relative_path_in_a_config_file_is_relative_to_the_files_directory(tmp_path: Path) -> None:
    conf = connector_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = mongocdc("offsets", "show", "-c", "../conf/c.yaml", "-o", "json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert (row["connector"], row["partition"], row["sec"]) == ("app", "rs0", 7)
    assert list(elsewhere.iterdir()) == []  # no second, empty store where the command ran
    shown = mongocdc("config", "show", "-c", str(conf / "c.yaml"), "-o", "json", cwd=elsewhere)
    assert json.loads(shown.stdout)["offset.storage.file.filename"]["value"] == str(conf / "state" / "offsets.db")


def test_a_relative_path_on_the_command_line_or_in_the_environment_is_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    conf = connector_dir(tmp_path)
    flag = mongocdc("offsets", "show", "--name", "app", "--offsets", "sqlite:state/offsets.db", "-o", "json", cwd=conf)
    assert flag.returncode == 0, flag.stderr
    env = {"MONGOCDC_OFFSET_STORAGE_FILE_FILENAME": "conf/state/offsets.db", "MONGOCDC_NAME": "app"}
    variable = mongocdc("offsets", "show", "-o", "json", env=env, cwd=tmp_path)
    assert variable.returncode == 0, variable.stderr
    assert json.loads(flag.stdout) == json.loads(variable.stdout)


def test_a_missing_store_is_exit_3_naming_where_it_was_looked_for_and_is_not_created(tmp_path: Path) -> None:
    conf = connector_dir(tmp_path)
    (conf / "c.yaml").write_text("name: app\noffset.storage.file.filename: data/offsets.db\n")  # a wrong directory
    done = mongocdc("offsets", "show", "-c", str(conf / "c.yaml"), cwd=tmp_path)
    assert done.returncode == 3
    assert f"error: the offset store {conf / 'data' / 'offsets.db'} does not exist" in done.stderr
    assert "a relative path in a config file is relative to the file's directory" in done.stderr
    assert not (conf / "data").exists() and not (tmp_path / "data").exists()


def test_librdkafka_file_paths_in_a_config_file_are_relative_to_it_too(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("kafka.ssl.ca.location: certs/ca.pem\nsrc.kafka.ssl.ca.location: probe\nkafka.client.id: a/b\n")
    done = mongocdc("config", "show", "-c", str(config), "-o", "json", cwd=Path("/"))
    shown = {key: entry["value"] for key, entry in json.loads(done.stdout).items()}
    assert shown["kafka.ssl.ca.location"] == str(tmp_path / "certs" / "ca.pem")
    assert shown["src.kafka.ssl.ca.location"] == "probe"  # librdkafka's word for the system's CAs, not a file
    assert shown["kafka.client.id"] == "a/b"  # not a path property
