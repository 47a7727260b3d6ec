"""Resolving the Spark job's packages on a machine whose local Maven repository (``~/.m2``) holds a module's POM
without its jar: Spark's default Ivy chain takes that entry and fails (``download failed: …!tiny.jar``); mongocdc's
own Ivy settings leave the local Maven repository out. A real spark-submit resolves from a Maven repository
in a temporary directory (no network needed); the JVM's ``user.home`` (which Java takes from the password
database, not ``$HOME``) points at a temporary home with the partial ``.m2``."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mongocdc.spark import environment, packages
from mongocdc.spark.launcher import LaunchPlan, plan_conf, preflight
from mongocdc.spark.options import JobOptions, TableFormat

pytestmark = pytest.mark.spark

COORDINATE = "org.example:tiny:1.0"
POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>org.example</groupId><artifactId>tiny</artifactId><version>1.0</version><packaging>jar</packaging></project>
"""


def maven_repository(root: Path, *, with_jar: bool) -> Path:
    module = root / "org" / "example" / "tiny" / "1.0"
    module.mkdir(parents=True)
    (module / "tiny-1.0.pom").write_text(POM)
    if with_jar:
        with zipfile.ZipFile(module / "tiny-1.0.jar", "w") as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return root


@pytest.fixture
def partial_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose ``.m2/repository`` has the module's POM only, as the JVM's ``user.home``."""
    home = tmp_path / "home"
    maven_repository(home / ".m2" / "repository", with_jar=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", f"-Duser.home={home}")
    return home


def test_a_pom_without_its_jar_in_the_local_maven_repository_does_not_break_resolution(
    tmp_path: Path, partial_home: Path
) -> None:
    remote = maven_repository(tmp_path / "remote", with_jar=True).as_uri()
    ivy = tmp_path / "ivy"
    # Spark's own Ivy chain (no settings of mongocdc's) fails on the partial entry: the situation is real
    default = packages.run_resolution([COORDINATE], tmp_path / "ivy-default", remote, settings="")
    assert "download failed: org.example#tiny;1.0!tiny.jar" in default.output
    assert "local-m2-cache" in default.output

    fetched = packages.ensure_packages([COORDINATE], ivy, remote)
    assert fetched == [COORDINATE]
    assert (ivy / "jars" / "org.example_tiny-1.0.jar").is_file()
    assert packages.resolved_jars([COORDINATE], ivy, remote) == [ivy / "jars" / "org.example_tiny-1.0.jar"]
    settings = (ivy / "mongocdc-ivysettings.xml").read_text()
    assert "<filesystem" not in settings and "local-m2" not in settings and packages.MAVEN_CENTRAL in settings


def test_spark_run_resolves_with_mongocdc_s_ivy_settings_unless_the_user_gives_their_own(
    tmp_path: Path, partial_home: Path
) -> None:
    remote = maven_repository(tmp_path / "remote", with_jar=True).as_uri()
    spark_packages = environment.packages_for_installed()
    options = JobOptions(bootstrap_servers="b:9092", warehouse="/w", checkpoint="/c", table_format=TableFormat.parquet)
    ivy = tmp_path / "ivy"
    conf = {"spark.jars.ivy": str(ivy), "spark.jars.repositories": remote}
    plan = LaunchPlan(options, conf=conf, jars=("/given/kafka.jar",), packages=(COORDINATE,))
    started = preflight(plan, plan_conf(plan, spark_packages), spark_packages)
    assert started[packages.IVY_SETTINGS_CONF] == str(ivy / "mongocdc-ivysettings.xml")
    assert started["spark.jars"].split(",") == ["/given/kafka.jar", str(ivy / "jars" / "org.example_tiny-1.0.jar")]
    assert "spark.jars.packages" not in started  # the JVM of a run in this process resolves nothing

    own = tmp_path / "own-ivysettings.xml"
    own.write_text((ivy / "mongocdc-ivysettings.xml").read_text())
    mine = LaunchPlan(options, conf={**conf, packages.IVY_SETTINGS_CONF: str(own)}, packages=(COORDINATE,))
    mine_conf = plan_conf(mine, spark_packages)
    mine_conf["spark.jars.packages"] = COORDINATE
    assert preflight(mine, mine_conf, spark_packages)[packages.IVY_SETTINGS_CONF] == str(own)
