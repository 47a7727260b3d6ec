"""`spark run` saying what it does: packages resolved quietly (and said when downloaded), Spark's own start
kept to errors, the Spark UI off unless asked, and a long batch's "still running" lines (no Spark started)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mongocdc.cli.main import run
from mongocdc.errors import ExitCode
from mongocdc.spark import environment, launcher, packages
from mongocdc.spark.launcher import LaunchPlan, plan_conf, preflight
from mongocdc.spark.options import JobOptions, TableFormat

pytestmark = pytest.mark.usefixtures("clean_env")

OPTIONS = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c", table_format=TableFormat.delta)
REPORT = """\
:: resolution report :: resolve 1636ms :: artifacts dl 68ms
\t:: modules in use:
\tcom.example#lib;1.0 from central in [default]
\torg.example#kafka-source_2.13;4.0.0 from central in [default]
\torg.example#pom-only;2.0 from central in [default]
"""
COORDINATES = ["org.example:kafka-source_2.13:4.0.0"]


def test_the_spark_ui_is_off_unless_asked_and_a_conf_still_wins() -> None:
    spark_packages = environment.packages_for_installed()
    assert plan_conf(LaunchPlan(OPTIONS), spark_packages)["spark.ui.enabled"] == "false"
    assert plan_conf(LaunchPlan(OPTIONS, ui=True), spark_packages)["spark.ui.enabled"] == "true"
    asked = LaunchPlan(OPTIONS, conf={"spark.ui.enabled": "true"})
    assert plan_conf(asked, spark_packages)["spark.ui.enabled"] == "true"
    assert plan_conf(LaunchPlan(OPTIONS, master="yarn"), spark_packages)["spark.ui.enabled"] == "false"


def test_a_local_jvm_logs_errors_only_from_its_start_unless_debugging() -> None:
    spark_packages = environment.packages_for_installed()
    quiet = plan_conf(LaunchPlan(OPTIONS), spark_packages)["spark.driver.extraJavaOptions"]
    assert "-XX:+UseParallelGC" in quiet and "-Dlog4j2.configurationFile=" in quiet
    config = Path(quiet.split("-Dlog4j2.configurationFile=")[1].split()[0])
    text = config.read_text()
    assert "rootLogger.level = error" in text and "org.apache.spark.api.python.PythonGatewayServer" in text
    debug = plan_conf(LaunchPlan(OPTIONS, spark_log_level="INFO"), spark_packages)["spark.driver.extraJavaOptions"]
    assert "log4j2" not in debug


def test_spark_run_help_offers_the_ui(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["spark", "run", "--help"]) == ExitCode.OK
    assert "--ui" in capsys.readouterr().out


def ivy_with(tmp_path: Path, *names: str) -> Path:
    ivy = tmp_path / "ivy"
    (ivy / "jars").mkdir(parents=True)
    for name in names:
        (ivy / "jars" / name).write_bytes(b"PK")
    return ivy


def test_resolved_packages_are_listed_once_and_a_run_in_this_process_starts_with_their_jars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ivy = ivy_with(tmp_path, "com.example_lib-1.0.jar", "org.example_kafka-source_2.13-4.0.0.jar")
    resolutions: list[list[str]] = []

    def resolution(
        coordinates: list[str], ivy_dir: Path, repositories: str | None = None, settings: str | None = None
    ) -> packages.Resolution:
        resolutions.append(list(coordinates))
        return packages.Resolution(101, REPORT)  # the throw-away spark-submit fails: its report counts

    monkeypatch.setattr(packages, "run_resolution", resolution)
    monkeypatch.setattr(environment, "java_version", lambda: 17)
    expected = [ivy / "jars" / "com.example_lib-1.0.jar", ivy / "jars" / "org.example_kafka-source_2.13-4.0.0.jar"]
    assert packages.resolved_jars(COORDINATES, ivy) == expected  # pom-only modules have no jar
    assert packages.resolved_jars(COORDINATES, ivy) == expected
    assert len(resolutions) == 1  # then read from its record in the Ivy directory

    spark_packages = environment.packages_for_installed()
    conf = {"spark.jars.packages": COORDINATES[0], "spark.jars.ivy": str(ivy), "spark.jars": "/given.jar"}
    with caplog.at_level(logging.INFO, logger="mongocdc.spark"):
        local = preflight(LaunchPlan(OPTIONS), conf, spark_packages)
    assert "spark.jars.packages" not in local  # the JVM resolves nothing, so prints no Ivy report
    assert local["spark.jars"].split(",") == ["/given.jar", *map(str, expected)]
    assert caplog.records == []  # everything was there: nothing to say
    submitted = preflight(LaunchPlan(OPTIONS, master="yarn"), conf, spark_packages)
    assert submitted["spark.jars.packages"] == COORDINATES[0]  # a cluster resolves as it always did


def test_packages_not_there_yet_are_said_to_be_downloaded_before_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ivy = ivy_with(tmp_path)
    said: list[str] = []

    def resolution(
        coordinates: list[str], ivy_dir: Path, repositories: str | None = None, settings: str | None = None
    ) -> packages.Resolution:
        said.extend(r.getMessage() for r in caplog.records)  # what was said before the download began
        for name in ("com.example_lib-1.0.jar", "org.example_kafka-source_2.13-4.0.0.jar"):
            (ivy_dir / "jars" / name).write_bytes(b"PK")
        return packages.Resolution(101, REPORT)

    monkeypatch.setattr(packages, "run_resolution", resolution)
    monkeypatch.setattr(environment, "java_version", lambda: 17)
    conf = {"spark.jars.packages": COORDINATES[0], "spark.jars.ivy": str(ivy)}
    with caplog.at_level(logging.INFO, logger="mongocdc.spark"):
        local = preflight(LaunchPlan(OPTIONS), conf, environment.packages_for_installed())
    assert said == [
        f"resolving Spark packages {COORDINATES[0]} from Maven into {ivy} (once: later runs find them there)"
    ]
    assert f"resolved Spark packages {COORDINATES[0]}" in caplog.text
    assert len(local["spark.jars"].split(",")) == 2  # the download's report was recorded: no second resolution


def test_a_long_batch_says_what_it_is_doing_every_interval() -> None:
    from mongocdc.spark.job import BatchApplier

    applier = BatchApplier(spark=None, options=OPTIONS, compaction=object())  # type: ignore[arg-type]
    assert applier.still_running(30, now=1000.0) is None  # no batch
    applier.doing = (4, 1000.0, "applying 20,100 changes to shop.orders")
    assert applier.still_running(30, now=1029.0) is None
    assert (
        applier.still_running(30, now=1031.0)
        == "batch 4 still running after 31 s: applying 20,100 changes to shop.orders"
    )
    assert applier.still_running(30, now=1050.0) is None
    assert (
        applier.still_running(30, now=1062.0)
        == "batch 4 still running after 62 s: applying 20,100 changes to shop.orders"
    )


def test_the_quiet_log4j_file_is_rewritten_when_its_content_changed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(launcher.tempfile, "gettempdir", lambda: str(tmp_path))
    path = launcher.quiet_log4j()
    path.write_text("stale")
    assert launcher.quiet_log4j().read_text() == launcher.QUIET_LOG4J
