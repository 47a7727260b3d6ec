"""Where the single binary (no pyspark) runs the Spark job: ``mongocdc/spark/installation.py``'s decisions.

The binary's own runs are in ``tests/binary/test_smoke.py``; these check each way of finding Spark and each
message, with real executables (this test run's Python, a Spark installation's layout in a temporary directory).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mongocdc import __version__
from mongocdc.errors import ExitCode, SparkEnvironmentError
from mongocdc.spark import installation


def spark_layout(root: Path, jar: str | None = "spark-core_2.13-4.0.0.jar", submit: bool = True) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "jars").mkdir()
    if submit:
        script = root / "bin" / "spark-submit"
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    if jar:
        (root / "jars" / jar).write_bytes(b"")
    return root


def old_python(tmp_path: Path) -> Path:
    script = tmp_path / "python-old"
    script.write_text("#!/bin/sh\necho 3 9\n")
    script.chmod(0o755)
    return script


def test_a_spark_home_gives_its_version_scala_and_the_python_of_the_job(tmp_path: Path) -> None:
    home = spark_layout(tmp_path / "spark")
    found = installation.find({"SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable, "PATH": ""})
    assert found == installation.SparkHome(home, "4.0.0", "2.13", Path(sys.executable))
    assert found.spark_submit == home / "bin" / "spark-submit"


def test_a_spark_submit_on_path_names_its_installation(tmp_path: Path) -> None:
    home = spark_layout(tmp_path / "spark")
    found = installation.find({"PATH": str(home / "bin"), "PYSPARK_PYTHON": sys.executable})
    assert isinstance(found, installation.SparkHome) and found.home == home.resolve()


@pytest.mark.parametrize(
    ("layout", "said"),
    [
        ({"submit": False}, "has no bin/spark-submit"),
        ({"jar": None}, "cannot tell the Spark version"),
    ],
)
def test_an_unusable_spark_home_is_exit_3_naming_it(tmp_path: Path, layout: dict[str, object], said: str) -> None:
    home = spark_layout(tmp_path / "spark", **layout)  # type: ignore[arg-type]
    with pytest.raises(SparkEnvironmentError) as raised:
        installation.find({"SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable, "PATH": ""})
    assert raised.value.exit_code == ExitCode.CONFIG
    assert said in raised.value.message and str(home) in raised.value.message
    assert "SPARK_HOME" in (raised.value.hint or "")


def test_the_job_python_must_be_3_11_or_newer(tmp_path: Path) -> None:
    home = spark_layout(tmp_path / "spark")
    with pytest.raises(SparkEnvironmentError) as raised:
        installation.find({"SPARK_HOME": str(home), "PYSPARK_PYTHON": str(old_python(tmp_path)), "PATH": ""})
    assert "needs Python 3.11+" in raised.value.message and "Python 3.9" in raised.value.message
    assert "PYSPARK_PYTHON" in (raised.value.hint or "")


def test_a_python_with_the_spark_extra_is_handed_the_command(tmp_path: Path) -> None:
    found = installation.find({installation.SPARK_PYTHON_ENV: sys.executable, "PATH": ""})
    assert found == installation.SparkPython(Path(sys.executable), __version__)
    assert found.command(["spark", "run", "--once"]) == [sys.executable, "-m", "mongocdc", "spark", "run", "--once"]


@pytest.mark.parametrize("which", ["base", "fake"])
def test_a_named_python_without_the_spark_extra_is_exit_3(tmp_path: Path, which: str) -> None:
    """The virtualenv's base interpreter (no mongocdc there), and an executable that only looks like Python."""
    python = Path(sys.base_prefix) / "bin" / "python3" if which == "base" else old_python(tmp_path)
    assert python.is_file()
    with pytest.raises(SparkEnvironmentError) as raised:
        installation.find({installation.SPARK_PYTHON_ENV: str(python), "PATH": ""})
    assert "cannot import pyspark and mongocdc" in raised.value.message
    assert f"mongocdc[spark]=={__version__}" in (raised.value.hint or "")


def test_nothing_found_says_every_way_to_get_spark(tmp_path: Path) -> None:
    with pytest.raises(SparkEnvironmentError) as raised:
        installation.find({"PATH": str(tmp_path)})
    assert raised.value.exit_code == ExitCode.CONFIG
    assert "does not contain pyspark" in raised.value.message
    hint = raised.value.hint or ""
    assert "SPARK_HOME" in hint and "mongocdc[spark]" in hint and installation.SPARK_PYTHON_ENV in hint


def test_this_test_run_is_not_the_binary() -> None:
    assert installation.frozen() is False
