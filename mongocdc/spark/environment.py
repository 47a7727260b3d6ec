"""What the Spark job needs on this machine, found without starting Spark.

pyspark (the ``spark`` extra), Java 17+ and the Maven coordinates of the Kafka
source and Delta Lake that match the installed pyspark. Each check raises
``SparkEnvironmentError`` (exit 3) with the fix; the launcher runs them before
anything starts, and tests replace them to exercise the messages.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mongocdc.errors import SparkEnvironmentError

MIN_JAVA = 17
INSTALL_HINT = "install the spark extra: pip install 'mongocdc[spark]' (pyspark and delta-spark)"


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (OSError, ValueError):  # a sys.path entry that vanished (a stopped SparkContext's jar files)
        return False


def pyspark_version() -> str | None:
    """The installed pyspark version, or ``None`` when pyspark cannot be imported."""
    if not _importable("pyspark"):
        return None
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:  # a pyspark on PYTHONPATH (SPARK_HOME/python)
        import pyspark

        return str(pyspark.__version__)


def delta_version() -> str | None:
    """The installed delta-spark version, or ``None`` (the job then writes Parquet tables)."""
    if not _importable("delta"):
        return None
    try:
        return importlib.metadata.version("delta-spark")
    except importlib.metadata.PackageNotFoundError:
        return None


def find_java() -> Path | None:
    """The ``java`` Spark will run: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME", "").strip()
    if home:
        candidate = Path(home) / "bin" / "java"
        return candidate if candidate.is_file() else None
    found = shutil.which("java")
    return Path(found) if found else None


_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def parse_java_version(text: str) -> int | None:
    """The major version in ``java -version`` output (``"1.8.0_392"`` → 8, ``"17.0.15"`` → 17)."""
    match = _JAVA_VERSION.search(text)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):
        return int(match.group(2))
    return major


def java_version() -> int | None:
    """Major version of the Java Spark would run, or ``None`` when there is no working ``java``."""
    java = find_java()
    if java is None:
        return None
    try:
        result = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_java_version(result.stderr + result.stdout)


def require_pyspark() -> str:
    """The pyspark version; ``SparkEnvironmentError`` when it is not installed."""
    version = pyspark_version()
    if version is None:
        raise SparkEnvironmentError("pyspark is not installed, so the Spark job cannot run", hint=INSTALL_HINT)
    return version


def require_java() -> int:
    """The Java major version; ``SparkEnvironmentError`` when Java is missing or older than 17."""
    version = java_version()
    where = "JAVA_HOME" if os.environ.get("JAVA_HOME", "").strip() else "PATH"
    if version is None:
        raise SparkEnvironmentError(
            f"no working Java found (looked in {where}): Spark needs Java {MIN_JAVA} or newer",
            hint=f"install a Java {MIN_JAVA}+ runtime (e.g. apt-get install openjdk-17-jre-headless) "
            "or point JAVA_HOME at one",
        )
    if version < MIN_JAVA:
        raise SparkEnvironmentError(
            f"Java {version} found (via {where}), but Spark needs Java {MIN_JAVA} or newer",
            hint=f"install a Java {MIN_JAVA}+ runtime and point JAVA_HOME at it",
        )
    return version


def scala_version(spark_version: str) -> str:
    """Scala binary version of the installed Spark (from its scala-library jar; 2.13 for Spark 4, else 2.12)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.origin:
        jars = Path(spec.origin).parent / "jars"
        for jar in jars.glob("scala-library-*.jar"):
            match = re.match(r"scala-library-(\d+\.\d+)", jar.name)
            if match:
                return match.group(1)
    return "2.13" if int(spark_version.split(".")[0]) >= 4 else "2.12"


def _major_minor(version: str) -> tuple[int, int]:
    parts = re.findall(r"\d+", version)
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


@dataclass(frozen=True)
class SparkPackages:
    """Maven coordinates the job loads through ``spark.jars.packages``, matched to the installed versions."""

    spark_version: str
    scala: str
    delta: str | None

    @property
    def kafka(self) -> str:
        return f"org.apache.spark:spark-sql-kafka-0-10_{self.scala}:{self.spark_version}"

    @property
    def delta_package(self) -> str | None:
        if self.delta is None:
            return None
        # delta-spark 4.1+ publishes one artifact per Spark minor (delta-spark_4.0_2.13); earlier ones do not.
        if _major_minor(self.delta) >= (4, 1):
            spark_mm = ".".join(str(n) for n in _major_minor(self.spark_version))
            return f"io.delta:delta-spark_{spark_mm}_{self.scala}:{self.delta}"
        return f"io.delta:delta-spark_{self.scala}:{self.delta}"

    def coordinates(self, *, with_delta: bool) -> list[str]:
        packages = [self.kafka]
        if with_delta and self.delta_package:
            packages.append(self.delta_package)
        return packages


def packages_for_installed() -> SparkPackages:
    """Coordinates for the installed pyspark (and delta-spark, when installed)."""
    spark = require_pyspark()
    return SparkPackages(spark_version=spark, scala=scala_version(spark), delta=delta_version())
