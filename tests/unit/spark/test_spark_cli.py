"""`mongocdc spark run|status` without Spark: options, dry run, and every error path with its exit code."""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mongocdc.cli.main import run
from mongocdc.errors import ExitCode
from mongocdc.spark import environment, packages
from mongocdc.spark.options import (
    JobOptions,
    StartingOffsets,
    TableFormat,
    java_kafka_options,
    parse_retention,
    path_segment,
)

pytestmark = pytest.mark.usefixtures("clean_env")


def config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"topic.prefix: dbserver1\nkafka.bootstrap.servers: k1:9092,k2:9092\n{extra}")
    return path


def test_dry_run_prints_the_spark_submit_command_with_matched_packages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path, "kafka.security.protocol: SASL_SSL\nkafka.sasl.username: app\nkafka.sasl.password: pw1\n")
    argv = ["--config", str(cfg), "spark", "run", "--warehouse", "s3a://lake/cdc", "--master", "yarn"]
    argv += ["--conf", "spark.executor.memory=4g", "--format", "parquet", "--dry-run"]
    assert run(argv) == ExitCode.OK
    line = capsys.readouterr().out.strip()
    words = shlex.split(line)
    assert words[0].endswith("spark-submit") and words[1:3] == ["--master", "yarn"]
    version = environment.pyspark_version()
    assert f"spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:{version}" in words
    assert "spark.executor.memory=4g" in words and "--py-files" in words
    assert words[words.index("--topic-pattern") + 1] == r"dbserver1\..*"
    assert words[words.index("--checkpoint") + 1] == "s3a://lake/cdc/_mongocdc/checkpoint"
    assert words[words.index("--bootstrap-servers") + 1] == "k1:9092,k2:9092"
    assert "security.protocol=SASL_SSL" in words
    assert "pw1" not in line  # the JAAS line carries the password: redacted in what is printed
    job = JobOptions.from_args(words[words.index("--bootstrap-servers") :])
    assert job.table_format is TableFormat.parquet and job.topic_pattern == r"dbserver1\..*"
    assert job.skip_topics is not None and "dbserver1\\.transaction" in job.skip_topics


def test_a_heartbeat_topic_named_by_topic_heartbeat_name_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path, "topic.heartbeat.name: dbserver1.heartbeats\n")
    assert run(["spark", "run", "-c", str(cfg), "--warehouse", "/w", "--master", "yarn", "--dry-run"]) == ExitCode.OK
    words = shlex.split(capsys.readouterr().out.strip())
    job = JobOptions.from_args(words[words.index("--bootstrap-servers") :])
    assert job.skip_topics is not None
    assert re.fullmatch(job.skip_topics, "dbserver1.heartbeats")
    assert re.fullmatch(job.skip_topics, "__debezium-heartbeat.dbserver1")
    assert not re.fullmatch(job.skip_topics, "dbserver1.shop.orders")


def test_job_options_round_trip_through_arguments() -> None:
    options = JobOptions(
        bootstrap_servers="b:9092",
        warehouse="/w",
        checkpoint="/c",
        topics=("a", "b"),
        kafka_options={"security.protocol": "SSL"},
        table_format=TableFormat.delta,
        changelog=True,
        trigger_interval="30 seconds",
        columns="`name` string, qty INT",
        starting_offsets=StartingOffsets.latest,
        max_offsets_per_trigger=1000,
        min_partitions=0,
        query_name="q",
        delete_retention_ms=36 * 3_600_000,
    )
    assert JobOptions.from_args(options.to_args()) == options
    forever = replace(options, delete_retention_ms=None)
    assert JobOptions.from_args(forever.to_args()) == forever


@pytest.mark.parametrize(
    ("flag", "retention_ms"),
    [([], 7 * 86_400_000), (["--delete-retention", "36h"], 129_600_000), (["--delete-retention", "forever"], None)],
)
def test_delete_retention_reaches_the_job_in_ms_and_defaults_to_seven_days(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: list[str], retention_ms: int | None
) -> None:
    argv = ["--config", str(config(tmp_path)), "spark", "run", "--warehouse", str(tmp_path / "w"), *flag, "--dry-run"]
    assert run(argv) == ExitCode.OK
    words = shlex.split(capsys.readouterr().out.strip())
    job = JobOptions.from_args(words[words.index("--bootstrap-servers") :])
    assert job.delete_retention_ms == retention_ms
    assert parse_retention("500ms") == 500 and parse_retention(" 90M ") == 90 * 60_000


def test_librdkafka_settings_become_java_client_properties() -> None:
    options, unmapped = java_kafka_options(
        {
            "bootstrap.servers": "b:9092",
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "app",
            "sasl.password": 'p"w',
            "ssl.ca.location": "/ca.pem",
            "linger.ms": "5",
        }
    )
    assert options == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" '
        'password="p\\"w";',
    }
    assert unmapped == ["linger.ms"]
    assert path_segment("orders/2024 x") == "orders%2F2024%20x" and path_segment(".hidden") == "%2Ehidden"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topics", "a", "--topic-pattern", "b"], "--topics and --topic-pattern both select topics"),
        (["--once", "--trigger-interval", "5 seconds"], "--once and --trigger-interval exclude each other"),
        (["--conf", "spark.executor.memory"], "--conf 'spark.executor.memory' is not KEY=VALUE"),
        (["--topic-pattern", "a("], "--topic-pattern 'a(' is not a regular expression"),
        (["--columns", "a INT", "--schema-file", "s.ddl"], "--columns and --schema-file both give the schema"),
        (["--schema-file", "absent.ddl"], "--schema-file absent.ddl: No such file or directory"),
        (["--delete-retention", "7 days"], "--delete-retention '7 days' is not a duration: use a number and a unit"),
        (["--delete-retention", "-1d"], "--delete-retention '-1d' is not a duration"),
    ],
)
def test_bad_options_exit_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    argv = ["--config", str(config(tmp_path)), "spark", "run", "--warehouse", str(tmp_path / "w"), *args]
    assert run(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and "\nhint: " in err


@pytest.mark.parametrize(
    ("columns", "what"),
    [
        ("name:strng,qty:int", "'strng' is not a type --columns can read"),
        ("name STRING qty INT", "after the column name: expected ',' or the end, found 'qty'"),
        ("name", "the column name has no type"),
        ("qty:int,QTY:bigint", "the column QTY is there twice"),
        ("_key:string", "the column _key has the name of one of the table's own columns"),
        ("tags MAP<INT, STRING>", "its key type is STRING"),
        ("price DECIMAL(40, 2)", "DECIMAL(40, 2): precision 1-38"),
        ("a ARRAY<BIGINT", "it ends too early"),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_an_invalid_columns_schema_exits_2_before_spark_starts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: str,
    what: str,
    dry_run: bool,
) -> None:
    from mongocdc.spark import launcher

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(launcher, "launch", no_spark)
    monkeypatch.setattr(launcher, "prepare", no_spark)
    argv = ["--config", str(config(tmp_path)), "spark", "run", "--warehouse", str(tmp_path / "w")]
    argv += ["--columns", columns, *(["--dry-run"] if dry_run else [])]
    assert run(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: --columns {columns!r} is not a schema the job can use: ") and what in err
    assert "\nhint: write name:type pairs (name:string,qty:bigint) or Spark DDL" in err


def test_an_invalid_schema_file_exits_2_and_a_valid_one_reaches_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "struct", "fields": [{"name": "qty", "type": "int"}]}))
    argv = ["--config", str(config(tmp_path)), "spark", "run", "--warehouse", str(tmp_path / "w"), "--dry-run"]
    assert run([*argv, "--schema-file", str(schema)]) == ExitCode.USAGE
    assert "the schema qty: 'int' is not a type --columns can read" in capsys.readouterr().err
    fields = [
        {"name": "qty", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True}, "nullable": True},
    ]
    schema.write_text(json.dumps({"type": "struct", "fields": fields}))
    assert run([*argv, "--schema-file", str(schema)]) == ExitCode.OK
    words = shlex.split(capsys.readouterr().out.strip())
    assert (
        json.loads(JobOptions.from_args(words[words.index("--bootstrap-servers") :]).columns or "")["fields"] == fields
    )


def test_the_reserved_column_names_are_the_tables_own() -> None:
    pytest.importorskip("pyspark")
    from mongocdc.spark import merge as m
    from mongocdc.spark.schema_text import RESERVED

    assert set(RESERVED) == {*m.META_COLUMNS, *m.COLLECTION_COLUMNS, "_batch_id"}


def test_flags_are_checked_before_the_configuration_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = config(tmp_path, "max.batch.size: many\n")
    argv = ["--config", str(cfg), "spark", "run", "--warehouse", "/w", "--once", "--trigger-interval", "5 seconds"]
    assert run(argv) == ExitCode.USAGE
    assert "--once and --trigger-interval exclude each other" in capsys.readouterr().err
    assert run(["--config", str(cfg), "spark", "run", "--warehouse", "/w", "--once"]) == ExitCode.CONFIG


def test_no_topics_and_no_prefix_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["spark", "run", "--warehouse", str(tmp_path)]) == ExitCode.USAGE
    assert "no topics to read" in capsys.readouterr().err


def run_job(tmp_path: Path) -> int:
    return run(["--config", str(config(tmp_path)), "spark", "run", "--once", "--warehouse", str(tmp_path / "w")])


def test_pyspark_missing_exits_3_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(environment, "pyspark_version", lambda: None)
    assert run_job(tmp_path) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert err == (
        "error: pyspark is not installed, so the Spark job cannot run\n"
        "hint: install the spark extra: pip install 'mongocdc[spark]' (pyspark and delta-spark)\n"
    )


@pytest.mark.parametrize(("found", "message"), [(None, "no working Java found"), (11, "Java 11 found")])
def test_java_missing_or_too_old_exits_3(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    found: int | None,
    message: str,
) -> None:
    monkeypatch.setattr(environment, "java_version", lambda: found)
    assert run_job(tmp_path) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and "Java 17 or newer" in err and "JAVA_HOME" in err


def test_delta_format_without_delta_spark_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(environment, "delta_version", lambda: None)
    argv = ["--config", str(config(tmp_path)), "spark", "run", "--warehouse", "w", "--format", "delta"]
    assert run(argv) == ExitCode.CONFIG
    assert "--format delta needs delta-spark" in capsys.readouterr().err


def test_unresolvable_package_exits_4_saying_how_to_pass_jars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[list[str]] = []

    def resolution(
        coordinates: list[str], ivy_dir: Path, repositories: str | None = None, settings: str | None = None
    ) -> packages.Resolution:
        seen.append(list(coordinates))
        return packages.Resolution(
            1, ":: UNRESOLVED DEPENDENCIES ::\n:: unresolved dependency: org.example#nope_2.13;9.9.9: not found\n"
        )

    monkeypatch.setattr(environment, "java_version", lambda: 17)
    monkeypatch.setattr(packages, "run_resolution", resolution)
    argv = ["--config", str(config(tmp_path)), "spark", "run", "--once", "--warehouse", "w"]
    argv += ["--packages", "org.example:nope_2.13:9.9.9", "--conf", f"spark.jars.ivy={tmp_path / 'ivy'}"]
    assert run(argv) == ExitCode.UNREACHABLE
    err = capsys.readouterr().err
    assert "could not resolve the Spark package(s) org.example:nope_2.13:9.9.9" in err
    assert "--jars" in err
    assert "org.example:nope_2.13:9.9.9" in seen[0] and any("spark-sql-kafka" in c for c in seen[0])


def test_status_reads_the_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint = tmp_path / "w" / "_mongocdc" / "checkpoint"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "mongocdc" / "progress").mkdir(parents=True)
    for batch, end in ((0, 40), (1, 45)):
        (checkpoint / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0}\n' + json.dumps({"p.db.orders": {"0": end, "1": 7}}) + "\n"
        )
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    (checkpoint / "offsets" / "2").write_text('v1\n{}\n{"p.db.orders":{"0":50,"1":7}}\n')  # in flight
    job = {"status": "running", "format": "delta", "updated_at": datetime.now(UTC).isoformat()}
    (checkpoint / "mongocdc" / "job.json").write_text(json.dumps(job))  # no broker known: the last batch's lag
    report = {
        "batchId": 1,
        "timestamp": "2024-05-01T10:00:00.000Z",
        "numInputRows": 5,
        "inputRowsPerSecond": 2.5,
        "processedRowsPerSecond": 10.0,
        "durationMs": {"triggerExecution": 500},
        "sources": [
            {
                "endOffset": {"p.db.orders": {"0": 45, "1": 7}},
                "latestOffset": {"p.db.orders": {"0": 52, "1": 9}},
            }
        ],
    }
    (checkpoint / "mongocdc" / "progress" / f"{1:020d}.json").write_text(json.dumps(report))
    assert run(["spark", "status", "--warehouse", str(tmp_path / "w"), "--output", "json"]) == ExitCode.OK
    status = json.loads(capsys.readouterr().out)
    assert status["status"] == "running" and status["format"] == "delta"
    assert status["batches_committed"] == 2 and status["in_flight_batch"] == 2
    assert status["offsets"] == {"p.db.orders": {"0": 45, "1": 7}}
    assert status["lag"] == 7 + 2 and status["lag_source"].startswith("last batch")
    assert status["processed_rows_per_second"] == 10.0 and status["recent_rows_per_second"] == 10.0
    assert run(["spark", "status", "--checkpoint", str(checkpoint)]) == ExitCode.OK
    assert "lag" in capsys.readouterr().out


def test_status_without_a_checkpoint_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["spark", "status", "--checkpoint", str(tmp_path / "nothing")]) == ExitCode.USAGE
    assert "is not the checkpoint of a mongocdc spark job" in capsys.readouterr().err
    assert run(["spark", "status", "--checkpoint", "hdfs://nn/cp"]) == ExitCode.USAGE
    assert "reads local checkpoints only" in capsys.readouterr().err
    assert run(["spark", "status"]) == ExitCode.USAGE


def test_java_version_parsing() -> None:
    assert environment.parse_java_version('openjdk version "17.0.15" 2025-04-15') == 17
    assert environment.parse_java_version('java version "1.8.0_392"') == 8
    assert environment.parse_java_version('openjdk version "21" 2023-09-19') == 21
    assert environment.parse_java_version("garbage") is None


def test_local_runs_size_shuffles_and_delta_snapshots_to_the_machine_and_plan_queries_once() -> None:
    from mongocdc.spark.launcher import LaunchPlan, plan_conf

    options = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c", table_format=TableFormat.delta)
    spark_packages = environment.packages_for_installed()
    cores = str(max(2, os.cpu_count() or 2))
    local = plan_conf(LaunchPlan(options, master="local[*]"), spark_packages)
    assert local["spark.sql.shuffle.partitions"] == cores
    assert local["spark.databricks.delta.snapshotPartitions"] == cores
    assert local["spark.sql.adaptive.enabled"] == "false"
    user = plan_conf(
        LaunchPlan(
            options,
            conf={"spark.databricks.delta.snapshotPartitions": "8", "spark.sql.adaptive.enabled": "true"},
        ),
        spark_packages,
    )
    assert user["spark.databricks.delta.snapshotPartitions"] == "8"  # --conf wins
    assert user["spark.sql.adaptive.enabled"] == "true"
    cluster = plan_conf(LaunchPlan(options, master="yarn"), spark_packages)
    assert "spark.databricks.delta.snapshotPartitions" not in cluster
    assert "spark.sql.adaptive.enabled" not in cluster  # a cluster keeps Spark's adaptive execution
    assert "spark.sql.shuffle.partitions" not in cluster
    parquet = replace(options, table_format=TableFormat.parquet)
    assert "spark.databricks.delta.snapshotPartitions" not in plan_conf(LaunchPlan(parquet), spark_packages)


def test_local_runs_size_the_driver_heap_to_the_machine_and_use_the_throughput_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mongocdc.spark import launcher
    from mongocdc.spark.launcher import LaunchPlan, local_jvm_conf, plan_conf

    gib = 2**30
    assert local_jvm_conf(24 * gib, {}) == {
        "spark.driver.memory": "6g",  # a quarter of the machine
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    }
    assert local_jvm_conf(2 * gib, {})["spark.driver.memory"] == "1g"  # never below Spark's own default
    assert local_jvm_conf(256 * gib, {})["spark.driver.memory"] == "8g"
    assert "spark.driver.memory" not in local_jvm_conf(24 * gib, {"SPARK_DRIVER_MEMORY": "2g"})
    assert "spark.driver.memory" not in local_jvm_conf(None, {})  # unknown: Spark's default

    monkeypatch.setattr(launcher, "machine_memory", lambda: 16 * gib)
    options = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c")
    spark_packages = environment.packages_for_installed()
    local = plan_conf(LaunchPlan(options), spark_packages)
    assert local["spark.driver.memory"] == "4g"
    assert local["spark.driver.extraJavaOptions"].split()[0] == "-XX:+UseParallelGC"
    user = plan_conf(LaunchPlan(options, conf={"spark.driver.memory": "12g"}), spark_packages)
    assert user["spark.driver.memory"] == "12g"  # --conf wins
    cluster = plan_conf(LaunchPlan(options, master="spark://m:7077"), spark_packages)
    assert "spark.driver.memory" not in cluster and "spark.driver.extraJavaOptions" not in cluster


def test_machine_memory_is_capped_by_the_cgroup_limit(tmp_path: Path) -> None:
    from mongocdc.spark.launcher import machine_memory

    physical = machine_memory(limits=())
    assert physical is not None and physical > 0
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    v2.write_text("max\n")  # cgroup v2 without a limit
    assert machine_memory(limits=(str(v2),)) == physical
    v1.write_text(f"{2**30}\n")
    assert machine_memory(limits=(str(v2), str(v1), str(tmp_path / "absent"))) == 2**30


def test_min_partitions_default_to_three_per_core_and_zero_keeps_one_task_per_kafka_partition() -> None:
    from mongocdc.spark.job import min_partitions_for

    options = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c")
    assert min_partitions_for(options, 8) == 24
    assert min_partitions_for(options, 0) == 3
    assert min_partitions_for(replace(options, min_partitions=0), 8) == 0
    assert min_partitions_for(replace(options, min_partitions=5), 8) == 5


def test_the_kafka_source_reads_without_waiting_for_fetches_and_kafka_options_win() -> None:
    from mongocdc.spark.job import kafka_source_options

    options = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c", max_offsets_per_trigger=500)
    source = kafka_source_options(options, 2)
    assert source["kafka.bootstrap.servers"] == "b:9092"
    assert source["kafka.fetch.max.wait.ms"] == "10"  # a micro-batch's offsets are in the log already
    assert source["kafka.isolation.level"] == "read_committed"  # an aborted transaction never reaches a table
    assert source["minPartitions"] == "6"
    assert source["maxOffsetsPerTrigger"] == "500"
    assert source["startingOffsets"] == "earliest"
    tuned = replace(options, kafka_options={"fetch.max.wait.ms": "100", "security.protocol": "SSL"}, min_partitions=0)
    source = kafka_source_options(tuned, 2)
    assert source["kafka.fetch.max.wait.ms"] == "100"
    assert source["kafka.security.protocol"] == "SSL"
    assert "minPartitions" not in source


@pytest.mark.parametrize("where", ["before", "after"])
def test_json_log_format_gives_the_driver_jvm_sparks_json_log4j_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """--log-format json: the JVM's log4j lines are JSON records as ours are (Spark's own JSON layout)."""
    from mongocdc.spark.launcher import JSON_LOGS

    cfg = config(tmp_path)
    command = ["spark", "run", "--warehouse", str(tmp_path / "w"), "--master", "local[1]", "--submit", "--dry-run"]
    fmt = ["--log-format", "json"]
    assert run(["--config", str(cfg), *command]) == ExitCode.OK
    assert JSON_LOGS not in capsys.readouterr().out
    assert run(["--config", str(cfg), *(fmt + command if where == "before" else command + fmt)]) == ExitCode.OK
    words = shlex.split(capsys.readouterr().out)
    java = [w for w in words if w.startswith("spark.driver.extraJavaOptions=")]
    assert java == [f"spark.driver.extraJavaOptions=-XX:+UseParallelGC {JSON_LOGS}"]  # with the collector


@pytest.mark.parametrize(
    "extra",
    [
        "transforms: unwrap\n"
        "transforms.unwrap.type: io.debezium.connector.mongodb.transforms.ExtractNewDocumentState\n",
        "value.converter: io.debezium.converters.CloudEventsConverter\n",
    ],
)
def test_records_written_through_transforms_or_other_converters_are_refused_with_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str
) -> None:
    argv = ["--config", str(config(tmp_path, extra)), "spark", "run", "--warehouse", str(tmp_path / "w"), "--dry-run"]
    assert run(argv) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert "the Spark job reads Debezium's change event envelopes" in err
    assert "hint:" in err and "without transforms" in err


def test_keys_and_values_with_different_json_schemas_are_read_by_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = "key.converter.schemas.enable: false\nvalue.converter.schemas.enable: true\n"
    argv = ["--config", str(config(tmp_path, extra)), "spark", "run", "--warehouse", str(tmp_path / "w"), "--dry-run"]
    assert run(argv) == ExitCode.OK
