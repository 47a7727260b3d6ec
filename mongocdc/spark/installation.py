"""Where a mongocdc without pyspark runs the Spark job: the single binary (``scripts/build-binary``) has no pyspark.

In that order:

1. ``$MONGOCDC_SPARK_PYTHON``: a Python with ``mongocdc[spark]``; ``spark run`` is handed to it whole
   (``<python> -m mongocdc <the same arguments>``), so the job runs exactly as from a pip install.
2. A Spark installation: ``$SPARK_HOME/bin/spark-submit``, else a ``spark-submit`` on ``PATH``. The job goes
   through that ``spark-submit``, its Python half (``entry.py`` and mongocdc's modules, bundled in the binary as
   files) run by ``$PYSPARK_PYTHON`` or the ``python3`` on ``PATH`` (3.11+) with the installation's own pyspark.
   Tables are Parquet: delta-spark's Python half is not there.
3. A ``python3`` on ``PATH`` with ``mongocdc[spark]``: as 1.

Nothing found: ``SparkEnvironmentError`` (exit 3) saying how to get each.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mongocdc import __version__
from mongocdc.errors import SparkEnvironmentError

log = logging.getLogger("mongocdc.spark")

SPARK_PYTHON_ENV = "MONGOCDC_SPARK_PYTHON"
MIN_PYTHON = (3, 11)
_PROBE = "import pyspark, mongocdc; print('mongocdc', mongocdc.__version__)"
_SPARK_CORE = re.compile(r"spark-core_(\d+\.\d+)-(\d+\.\d+\.\d+[^/]*)\.jar$")


def frozen() -> bool:
    """Whether this mongocdc is the single binary (PyInstaller sets ``sys.frozen``)."""
    return bool(getattr(sys, "frozen", False))


@dataclass(frozen=True)
class SparkPython:
    """A Python whose mongocdc has the spark extra: ``spark run`` is handed to it whole."""

    python: Path
    mongocdc_version: str

    def command(self, argv: list[str]) -> list[str]:
        return [str(self.python), "-m", "mongocdc", *argv]


@dataclass(frozen=True)
class SparkHome:
    """A Spark installation the job is submitted to; its Python half runs on ``python`` with Spark's pyspark."""

    home: Path
    version: str
    scala: str
    python: Path

    @property
    def spark_submit(self) -> Path:
        return self.home / "bin" / "spark-submit"


def _spark_python(candidate: str, env: Mapping[str, str]) -> SparkPython | None:
    """``candidate`` when it imports pyspark and mongocdc (``None`` otherwise)."""
    path = shutil.which(candidate, path=env.get("PATH")) if os.sep not in candidate else candidate
    if path is None:
        return None
    try:
        result = subprocess.run(
            [path, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False, env=dict(env)
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = result.stdout.split()
    if result.returncode != 0 or len(said) != 2 or said[0] != "mongocdc":
        return None
    return SparkPython(Path(path), said[1])


def _python_version(python: str, env: Mapping[str, str]) -> tuple[int, int] | None:
    try:
        result = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=dict(env),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = result.stdout.split()
    return (int(parts[0]), int(parts[1])) if result.returncode == 0 and len(parts) == 2 else None


def spark_home(env: Mapping[str, str]) -> Path | None:
    """``$SPARK_HOME``, else the installation of the ``spark-submit`` on ``PATH``."""
    given = env.get("SPARK_HOME", "").strip()
    if given:
        return Path(given)
    found = shutil.which("spark-submit", path=env.get("PATH"))
    return Path(found).resolve().parent.parent if found else None


def spark_version(home: Path) -> tuple[str, str] | None:
    """(Spark version, Scala version) from the installation's ``jars/spark-core_<scala>-<version>.jar``."""
    for jar in sorted((home / "jars").glob("spark-core_*.jar")):
        match = _SPARK_CORE.search(jar.name)
        if match:
            return match.group(2), match.group(1)
    return None


def find_spark_home(env: Mapping[str, str]) -> SparkHome | None:
    """The Spark installation (``None`` when there is none); ``SparkEnvironmentError`` when it is unusable."""
    home = spark_home(env)
    if home is None:
        return None
    where = "SPARK_HOME" if env.get("SPARK_HOME", "").strip() else "the spark-submit on PATH"
    if not (home / "bin" / "spark-submit").is_file():
        raise SparkEnvironmentError(
            f"{where} names {home}, which has no bin/spark-submit",
            hint="point SPARK_HOME at a Spark 4 installation (the directory holding bin/ and jars/)",
        )
    versions = spark_version(home)
    if versions is None:
        raise SparkEnvironmentError(
            f"cannot tell the Spark version of {home} ({where}): it has no jars/spark-core_*.jar",
            hint="point SPARK_HOME at a Spark 4 installation (the directory holding bin/ and jars/)",
        )
    python = env.get("PYSPARK_PYTHON", "").strip() or shutil.which("python3", path=env.get("PATH")) or ""
    version = _python_version(python, env) if python else None
    if version is None or version < MIN_PYTHON:
        wanted = ".".join(map(str, MIN_PYTHON))
        said = "none on PATH" if not python else f"{python} is Python {'.'.join(map(str, version or ())) or '?'}"
        raise SparkEnvironmentError(
            f"Spark {versions[0]} found at {home}, but the job's Python half needs Python {wanted}+ ({said})",
            hint=f"install Python {wanted}+ and set PYSPARK_PYTHON to it",
        )
    return SparkHome(home, versions[0], versions[1], Path(python))


def not_found() -> SparkEnvironmentError:
    return SparkEnvironmentError(
        "this mongocdc is the single binary, which does not contain pyspark, and no Spark was found: "
        f"no {SPARK_PYTHON_ENV}, no SPARK_HOME, no spark-submit and no python3 with mongocdc[spark] on PATH",
        hint="set SPARK_HOME to a Spark 4.0 installation (with Java 17+ and Python 3.11+), or install "
        f"pip install 'mongocdc[spark]=={__version__}' and either run that mongocdc or set "
        f"{SPARK_PYTHON_ENV} to its python",
    )


Found = SparkPython | SparkHome


def find(env: Mapping[str, str]) -> Found:
    """Where this mongocdc (without pyspark) runs the job, in the order of the module's docstring."""
    explicit = env.get(SPARK_PYTHON_ENV, "").strip()
    if explicit:
        python = _spark_python(explicit, env)
        if python is None:
            raise SparkEnvironmentError(
                f"{SPARK_PYTHON_ENV} is {explicit}, which cannot import pyspark and mongocdc",
                hint=f"install the spark extra there: {explicit} -m pip install 'mongocdc[spark]=={__version__}'",
            )
        return python
    home = find_spark_home(env)
    if home is not None:
        return home
    python = _spark_python("python3", env)
    if python is not None:
        return python
    raise not_found()


def hand_over(python: SparkPython, argv: list[str], env: Mapping[str, str]) -> int:
    """Run ``mongocdc <argv>`` with ``python``'s mongocdc; its exit code."""
    if python.mongocdc_version != __version__:
        log.warning(
            "the Spark job runs with mongocdc %s of %s, not this binary's %s",
            python.mongocdc_version,
            python.python,
            __version__,
        )
    log.info("pyspark is not in this binary: running spark run with %s", python.python)
    return subprocess.run(python.command(argv), env=dict(env), check=False, stdin=subprocess.DEVNULL).returncode
