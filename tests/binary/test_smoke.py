"""Smoke suite of the single binary (``scripts/build-binary``), run as an operator runs it: from a directory
outside the repository, with a ``PATH`` that has no project virtualenv (nor any mongocdc), ``HOME`` a fresh one.

Every command's ``--help``, ``config validate``, ``discover``, ``stream`` into the test broker with changes made
meanwhile, ``topic dump`` showing them, SIGTERM → exit 0, ``offsets show``, ``failover translate --dry-run``,
the completions and the man page installed from the binary, and ``spark run`` finding (or not) a Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from pymongo import MongoClient

from mongocdc import __version__
from mongocdc.cli import docs
from tests.integration.helpers import read_topic, wait_until

REPO = Path(__file__).resolve().parents[2]
PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The operator's working directory and ``HOME``: outside the repository."""
    place = tmp_path / "operator"
    place.mkdir()
    assert REPO not in place.resolve().parents
    return place


def operator_env(home: Path, **extra: str) -> dict[str, str]:
    """Nothing of the test run: no virtualenv, no ``PYTHONPATH``, no ``MONGOCDC_*`` settings."""
    env = {"PATH": PATH, "HOME": str(home), "LANG": "C.UTF-8", "SHELL": "/bin/bash"}
    env.update(extra)
    return env


def run(binary: Path, home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args],
        cwd=home,
        env=env or operator_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_the_operator_environment_has_no_other_mongocdc(home: Path) -> None:
    """The premise of the suite: what runs is the binary, not a mongocdc or pyspark the PATH could find."""
    assert shutil.which("mongocdc", path=PATH) is None
    python = shutil.which("python3", path=PATH)
    if python is not None:
        probe = subprocess.run(
            [python, "-c", "import mongocdc"], env=operator_env(home), cwd=home, capture_output=True, check=False
        )
        assert probe.returncode != 0


def test_version_and_the_help_of_every_command(binary: Path, home: Path) -> None:
    assert binary.name == f"mongocdc-{__version__}-linux-{os.uname().machine}"
    shown = run(binary, home, "--version")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == f"mongocdc {__version__}"
    said = run(binary, home, "version")
    assert said.returncode == 0 and __version__ in said.stdout, said.stderr
    paths = [node.path for node in docs.walk(docs.root_command())]
    assert len(paths) > 30  # every group and command of the tree
    with ThreadPoolExecutor(max_workers=4) as pool:  # each start waits mostly on unpacking and imports
        helps = list(pool.map(lambda path: run(binary, home, *path, "--help"), paths))
    for path, done in zip(paths, helps, strict=True):
        assert done.returncode == 0, f"mongocdc {' '.join(path)} --help: {done.stderr}"
        assert f"Usage: mongocdc {' '.join(path)}".rstrip() in done.stdout, done.stdout


def test_config_validate_takes_a_good_file_and_names_the_problems_of_a_bad_one(binary: Path, home: Path) -> None:
    good = home / "connector.properties"
    good.write_text(
        "name=smoke\nmongodb.connection.string=mongodb://db1:27017/?replicaSet=rs0\ntopic.prefix=shop\n"
        "kafka.bootstrap.servers=kafka1:9092\n"
        # a chain of every kind of module the binary must bundle: Debezium's, Kafka's, a predicate, a converter
        "transforms=unwrap,route,outbox\n"
        "transforms.unwrap.type=io.debezium.connector.mongodb.transforms.ExtractNewDocumentState\n"
        "transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter\n"
        "transforms.route.regex=shop\\\\.(.*)\ntransforms.route.replacement=$1\n"
        "transforms.outbox.type=io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter\n"
        "transforms.outbox.predicate=isOutbox\npredicates=isOutbox\n"
        "predicates.isOutbox.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches\n"
        "predicates.isOutbox.pattern=.*outbox\nvalue.converter=io.debezium.converters.CloudEventsConverter\n"
    )
    done = run(binary, home, "config", "validate", "-c", str(good), "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["valid"] is True
    unknown = home / "unknown.properties"
    unknown.write_text(good.read_text() + "transforms=custom\ntransforms.custom.type=com.example.Custom\n")
    refused = run(binary, home, "config", "validate", "-c", str(unknown))
    assert refused.returncode == 3 and "com.example.Custom is not implemented" in refused.stderr
    bad = home / "bad.yaml"
    bad.write_text("name: smoke\ntopic.prefix: shop\nsnapshot.mode: sometimes\ntopic.prefx: x\n")
    refused = run(binary, home, "config", "validate", "-c", str(bad))
    assert refused.returncode == 3, refused.stderr
    assert "snapshot.mode" in refused.stderr and "topic.prefix" in refused.stderr  # the did-you-mean too


@dataclass(frozen=True)
class Streamed:
    """What the binary's ``stream`` left: its configuration, directory, topic and final summary."""

    home: Path
    config: Path
    prefix: str
    topic: str
    final: dict[str, Any]


@pytest.fixture(scope="module")
def streamed(binary: Path, tmp_path_factory: pytest.TempPathFactory, mongo_uri: str, kafka_bootstrap: str) -> Streamed:
    """``discover``, then ``stream`` with changes made meanwhile, stopped by SIGTERM, all from the binary."""
    home = tmp_path_factory.mktemp("operator-stream")
    db_name = f"bin_{uuid.uuid4().hex[:10]}"
    prefix = f"bin{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}.{db_name}.orders"
    config = home / "connector.yaml"
    config.write_text(
        f"name: smoke-{prefix}\n"
        f"mongodb.connection.string: {json.dumps(mongo_uri)}\n"
        f"kafka.bootstrap.servers: {kafka_bootstrap}\n"
        f"topic.prefix: {prefix}\n"
        f"database.include.list: {db_name}\n"
        "offset.storage.file.filename: offsets.db\n"  # relative: next to the config file
        "offset.flush.interval.ms: 500\n"
    )
    found = run(binary, home, "discover", "-c", str(config), "-o", "json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["kind"] == "replica_set"

    stream = subprocess.Popen(
        [str(binary), "stream", "-c", str(config), "-o", "json"],
        cwd=home,
        env=operator_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    stderr: list[str] = []
    pump = threading.Thread(target=lambda: stderr.extend(stream.stderr or ()), daemon=True)
    pump.start()
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_uri)
    try:
        wait_until(
            lambda: any("change stream open" in line for line in stderr) or stream.poll() is not None,
            "the binary's change stream",
        )
        assert stream.poll() is None, "".join(stderr)
        orders = client[db_name].orders
        orders.insert_many([{"_id": i, "item": f"widget-{i}", "qty": i} for i in range(1, 4)])
        orders.update_one({"_id": 2}, {"$set": {"qty": 20}})
        orders.delete_one({"_id": 3})
        # c, c, c, u, d and the delete's tombstone
        wait_until(lambda: len(read_topic(kafka_bootstrap, topic)) == 6, "the changes in Kafka")
    finally:
        stream.send_signal(signal.SIGTERM)
        out, _ = stream.communicate(timeout=60)
        pump.join(timeout=10)
        client.close()
    assert stream.returncode == 0, "".join(stderr)
    return Streamed(home, config, prefix, topic, json.loads(out.strip().splitlines()[-1]))


@pytest.mark.kafka
@pytest.mark.mongodb
def test_stream_stops_with_exit_0_and_dump_offsets_and_translate_show_its_work(
    binary: Path, streamed: Streamed, kafka_bootstrap: str
) -> None:
    home, config, topic = streamed.home, streamed.config, streamed.topic
    final = streamed.final
    assert final["status"] == "stopped" and final["events"]["c"] == 3 and final["events"]["d"] == 1, final

    dumped = run(binary, home, "topic", "dump", topic, "-c", str(config), "-o", "json")
    assert dumped.returncode == 0, dumped.stderr
    records = [json.loads(line) for line in dumped.stdout.splitlines()]
    ops = [(r["key"]["id"], None if r["value"] is None else r["value"]["op"]) for r in records]
    assert sorted(ops, key=str) == sorted(
        [("1", "c"), ("2", "c"), ("3", "c"), ("2", "u"), ("3", "d"), ("3", None)], key=str
    ), ops

    shown = run(binary, home, "offsets", "show", "-c", str(config), "-o", "json")
    assert shown.returncode == 0, shown.stderr
    (offset,) = json.loads(shown.stdout)
    assert offset["connector"] == f"smoke-{streamed.prefix}" and offset["sec"] > 0 and offset["resume_token"]
    assert (home / "offsets.db").is_file()

    # A consumer group that read the topic, translated onto the same cluster (by timestamp: no offset syncs).
    group = f"smoke-{streamed.prefix}"
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.commit(offsets=[TopicPartition(topic, p, 1) for p in partitions], asynchronous=False)
    finally:
        consumer.close()
    translated = run(
        binary, home, "failover", "translate", "--group", group, "--source", kafka_bootstrap,
        "--target", kafka_bootstrap, "--topics", f"{streamed.prefix}\\..*", "--dry-run", "-o", "json",
    )  # fmt: skip
    assert translated.returncode == 0, translated.stderr
    report = json.loads(translated.stdout)
    assert report["group"] == group
    assert {p["topic"] for p in report["partitions"]} == {topic}, report


@pytest.mark.kafka
@pytest.mark.mongodb
@pytest.mark.spark
def test_spark_run_from_the_binary_through_a_spark_installation(
    binary: Path, streamed: Streamed, spark_ivy_dir: Path
) -> None:
    """The job submitted to SPARK_HOME's spark-submit, its Python half on the operator's python3 with the
    installation's pyspark and the binary's mongocdc modules: the table holds the collection's documents."""
    home = streamed.home
    env = operator_env(home, SPARK_HOME=str(_pyspark_home()))
    warehouse = home / "warehouse"
    done = subprocess.run(
        [
            str(binary), "-c", str(streamed.config), "spark", "run", "--once", "--warehouse", str(warehouse),
            "--master", "local[1]", "--conf", f"spark.jars.ivy={spark_ivy_dir}",
            "--conf", "spark.sql.shuffle.partitions=1", "-o", "json",
        ],
        cwd=home, env=env, capture_output=True, text=True, timeout=280, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"status": "stopped", "submitted": True, "master": "local[1]"}
    status = run(binary, home, "spark", "status", "--warehouse", str(warehouse), "-o", "json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["status"] == "finished" and report["format"] == "parquet", report
    assert report["batches_committed"] == 1 and report["last_batch_rows"] == 6, report  # 5 changes, 1 tombstone
    table = warehouse / streamed.topic.split(".", 1)[1].replace(".", "/")
    assert table.is_dir() and any(table.rglob("*.parquet")), sorted(p.name for p in warehouse.rglob("*"))


def test_completions_and_the_man_page_install_from_the_binary(binary: Path, home: Path) -> None:
    done = run(binary, home, "completions", "install", "--shell", "bash", "-o", "json")
    assert done.returncode == 0, done.stderr
    bash_file = home / ".local" / "share" / "bash-completion" / "completions" / "mongocdc"
    man_file = home / ".local" / "share" / "man" / "man1" / "mongocdc.1"
    assert [i["path"] for i in json.loads(done.stdout)["installed"]] == [str(bash_file), str(man_file)]
    assert bash_file.read_text() == (REPO / "completions" / "mongocdc.bash").read_text()
    assert man_file.read_text() == (REPO / "man" / "mongocdc.1").read_text()
    zsh = run(binary, home, "completions", "show", "zsh")
    assert zsh.returncode == 0 and zsh.stdout == (REPO / "completions" / "_mongocdc").read_text()
    if shutil.which("man", path=PATH) is not None:  # scripts/bootstrap installs man-db
        page = subprocess.run(
            ["man", "-P", "cat", "mongocdc"], capture_output=True, text=True, timeout=60, check=False, cwd=home,
            env={**operator_env(home), "MANPATH": str(home / ".local" / "share" / "man"), "MANWIDTH": "100"},
        )  # fmt: skip
        assert page.returncode == 0, page.stderr
        assert "mongocdc stream" in page.stdout


SPARK_ARGS = ("spark", "run", "--warehouse", "wh", "--bootstrap-servers", "kafka1:9092", "--topic-prefix", "shop")


def test_spark_run_without_any_spark_says_how_to_get_one(binary: Path, home: Path) -> None:
    done = run(binary, home, *SPARK_ARGS, "--once")
    assert done.returncode == 3, done.stderr
    assert "does not contain pyspark" in done.stderr
    assert "SPARK_HOME" in done.stderr and "mongocdc[spark]" in done.stderr


def _pyspark_home() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin, "the test environment has pyspark (the spark extra)"
    return Path(spec.origin).parent


def test_spark_run_submits_to_spark_home(binary: Path, home: Path) -> None:
    """A Spark installation (pip's pyspark has the same layout: bin/spark-submit, jars/) gets the job through
    spark-submit, with mongocdc's modules shipped and Parquet tables."""
    spark_home = _pyspark_home()
    env = operator_env(home, SPARK_HOME=str(spark_home))
    done = run(binary, home, *SPARK_ARGS, "--dry-run", env=env)
    assert done.returncode == 0, done.stderr
    command = done.stdout.strip()
    assert command.startswith(str(spark_home / "bin" / "spark-submit")), command
    assert "--py-files" in command and "mongocdc-py.zip" in command and "entry.py" in command
    assert "spark-sql-kafka-0-10_2.13:" in command and "--format parquet" in command


def test_programs_the_binary_starts_get_the_environment_as_the_user_had_it(binary: Path, home: Path) -> None:
    """Not the bootloader's LD_LIBRARY_PATH (its unpacked libraries): a Spark installation whose spark-submit
    records the environment it was started with."""
    spark_home = home / "spark"
    (spark_home / "bin").mkdir(parents=True)
    (spark_home / "jars").mkdir()
    (spark_home / "jars" / "spark-core_2.13-4.0.0.jar").write_bytes(b"")
    recorded = home / "spark-submit.env"
    submit = spark_home / "bin" / "spark-submit"
    submit.write_text(f"#!/bin/sh\nenv > {recorded}\nexit 0\n")
    submit.chmod(0o755)
    given = {"SPARK_HOME": str(spark_home), "LD_LIBRARY_PATH": "/opt/operator/lib"}
    for extra in ({"SPARK_HOME": str(spark_home)}, given):
        done = run(binary, home, *SPARK_ARGS, "--jars", "kafka.jar", env=operator_env(home, **extra))
        assert done.returncode == 0, done.stderr
        env = dict(line.split("=", 1) for line in recorded.read_text().splitlines() if "=" in line)
        assert env.get("LD_LIBRARY_PATH") == extra.get("LD_LIBRARY_PATH"), env.get("LD_LIBRARY_PATH")
        assert env["PYSPARK_PYTHON"] == shutil.which("python3", path=PATH)


def test_spark_run_hands_over_to_a_python_with_the_spark_extra(binary: Path, home: Path) -> None:
    python = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "python"
    env = operator_env(home, MONGOCDC_SPARK_PYTHON=str(python))
    done = run(binary, home, *SPARK_ARGS, "--dry-run", env=env)
    assert done.returncode == 0, done.stderr
    assert "spark-submit" in done.stdout and "delta-spark" in done.stdout  # that Python's delta-spark
