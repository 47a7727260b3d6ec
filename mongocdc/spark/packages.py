"""Resolving the job's Maven packages (Kafka source, Delta Lake) before Spark starts.

Spark resolves ``spark.jars.packages`` with Ivy when its JVM starts; a failure there ends the
JVM with a stack trace on its stderr, out of mongocdc's reach. So the launcher checks the Ivy
directory first and, when a package's jar is missing, resolves it with a throw-away
``spark-submit`` whose output it reads: an unresolved package becomes ``SparkPackageError``
(exit 4) saying how to pass the jars with ``--jars`` instead.

Spark's Ivy looks in the user's local Maven repository (``~/.m2/repository``) first, and takes a module
whose POM is there even when its jar is not (Maven leaves such entries: a build that needed only the POM,
a download cut short), then fails with ``download failed: org#module;version!module.jar``. So every
resolution uses mongocdc's own Ivy settings (``ivy_settings``: Maven Central and the Spark packages
repository, no local Maven repository), unless ``spark.jars.ivySettings`` names the user's own.

``python -m mongocdc.spark.packages --ivy DIR [--no-delta]`` only resolves (``scripts/bootstrap``
fills the repository's ``.cache/spark/ivy`` with it, so tests never download).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mongocdc.errors import SparkEnvironmentError, SparkPackageError

_RESOLVE_TIMEOUT_S = 1800.0
_UNRESOLVED = re.compile(r"unresolved dependency: ([^\s:]+#[^\s;]+;[^\s:]+)")


def default_ivy_dir(spark_version: str) -> Path:
    """Spark's own default for ``spark.jars.ivy`` (``~/.ivy2.5.2`` since Spark 4, ``~/.ivy2`` before)."""
    major = int(spark_version.split(".")[0])
    return Path.home() / (".ivy2.5.2" if major >= 4 else ".ivy2")


def jar_name(coordinate: str) -> str:
    """The file Ivy retrieves a coordinate to: ``group_artifact-version.jar`` in ``<ivy>/jars``."""
    group, artifact, version = coordinate.split(":")[:3]
    return f"{group}_{artifact}-{version}.jar"


def missing(coordinates: Sequence[str], ivy_dir: Path) -> list[str]:
    """The coordinates whose jar is not in the Ivy directory yet."""
    return [c for c in coordinates if not (ivy_dir / "jars" / jar_name(c)).is_file()]


def spark_submit_path() -> Path:
    """``$SPARK_HOME/bin/spark-submit``, else the one shipped inside the pyspark package, else the one on ``PATH``."""
    home = os.environ.get("SPARK_HOME", "").strip()
    if home:
        return Path(home) / "bin" / "spark-submit"
    spec = importlib.util.find_spec("pyspark")
    on_path = shutil.which("spark-submit")
    if (spec is None or spec.origin is None) and on_path:
        return Path(on_path)
    if spec is None or spec.origin is None:
        raise SparkEnvironmentError(
            "pyspark is not installed, so there is no spark-submit",
            hint="install the spark extra: pip install 'mongocdc[spark]', or set SPARK_HOME",
        )
    return Path(spec.origin).parent / "bin" / "spark-submit"


MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
SPARK_PACKAGES = "https://repos.spark-packages.org/"
IVY_SETTINGS = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- mongocdc spark run: Spark's default resolvers without the local Maven repository (~/.m2), whose entries
     may be a POM without its jar; written by mongocdc.spark.packages.ivy_settings -->
<ivysettings>
  <!-- the report lists the modules resolved, which mongocdc records as the jars of a run (_write_manifest) -->
  <property name="ivy.log.modules.in.use" value="true"/>
  <!-- the name of Spark's own chain: modules an earlier run cached name it as their resolver -->
  <settings defaultResolver="spark-list"/>
  <resolvers>
    <chain name="spark-list" returnFirst="true">
      <ibiblio name="central" m2compatible="true" root="{central}"/>
      <ibiblio name="spark-packages" m2compatible="true" root="{spark_packages}"/>
    </chain>
  </resolvers>
</ivysettings>
"""
IVY_SETTINGS_CONF = "spark.jars.ivySettings"


def ivy_settings(ivy_dir: Path) -> Path:
    """mongocdc's Ivy settings file, written into ``ivy_dir`` (``DEFAULT_ARTIFACT_REPOSITORY``, which Spark
    reads for the Spark packages repository, is honoured the same way)."""
    text = IVY_SETTINGS.format(
        central=MAVEN_CENTRAL, spark_packages=os.environ.get("DEFAULT_ARTIFACT_REPOSITORY") or SPARK_PACKAGES
    )
    target = ivy_dir / "mongocdc-ivysettings.xml"
    if not target.is_file() or target.read_text() != text:
        ivy_dir.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.replace(target)
    return target


@dataclass(frozen=True)
class Resolution:
    returncode: int
    output: str


def run_resolution(
    coordinates: Sequence[str], ivy_dir: Path, repositories: str | None = None, settings: str | None = None
) -> Resolution:
    """Let Spark's Ivy resolve ``coordinates`` into ``ivy_dir`` (the application class does not exist on purpose),
    with ``settings`` (an Ivy settings file; ``None``: ``ivy_settings``; ``""``: Spark's default resolvers)."""
    command = [
        str(spark_submit_path()),
        "--master",
        "local[1]",
        "--packages",
        ",".join(coordinates),
        "--conf",
        f"spark.jars.ivy={ivy_dir}",
    ]
    settings = str(ivy_settings(ivy_dir)) if settings is None else settings
    if settings:
        command += ["--conf", f"{IVY_SETTINGS_CONF}={settings}"]
    if repositories:
        command += ["--repositories", repositories]
    command += ["--class", "mongocdc.spark.ResolveOnly", "spark-internal"]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=_RESOLVE_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        return Resolution(124, f"timed out after {exc.timeout:.0f} s")
    return Resolution(result.returncode, result.stdout + result.stderr)


_IN_USE = re.compile(r"^\s*([^\s#]+)#([^\s;]+);(\S+) from \S+ in \[", re.MULTILINE)
"""A line of the "modules in use" part of Ivy's resolution report: ``org#module;revision from central in [default]``."""


def manifest_path(coordinates: Sequence[str], ivy_dir: Path, repositories: str | None = None) -> Path:
    """Where the jars a set of coordinates resolved to (with their dependencies) are listed, in ``ivy_dir``."""
    key = hashlib.sha256("\n".join([*sorted(coordinates), repositories or ""]).encode()).hexdigest()[:16]
    return ivy_dir / f"mongocdc-{key}.jars"


def _write_manifest(coordinates: Sequence[str], ivy_dir: Path, repositories: str | None, output: str) -> None:
    """Record the jars Ivy's report says the resolution uses (those Ivy retrieved into ``<ivy>/jars``)."""
    names = dict.fromkeys(f"{org}_{module}-{revision}.jar" for org, module, revision in _IN_USE.findall(output))
    jars = [name for name in names if (ivy_dir / "jars" / name).is_file()]
    if not all(jar_name(c) in jars for c in coordinates):
        return  # not a report this code understands: the JVM resolves the packages itself
    target = manifest_path(coordinates, ivy_dir, repositories)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text("".join(f"{name}\n" for name in jars))
    partial.replace(target)


def resolved_jars(
    coordinates: Sequence[str], ivy_dir: Path, repositories: str | None = None, settings: str | None = None
) -> list[Path] | None:
    """The jar files of ``coordinates`` and their dependencies, resolved before (``ensure_packages``); the
    resolution runs again, quietly, when there is no record of it yet. ``None`` when it cannot be said."""
    manifest = manifest_path(coordinates, ivy_dir, repositories)
    if not manifest.is_file():  # (the throw-away spark-submit always fails: its report is what counts)
        resolution = run_resolution(coordinates, ivy_dir, repositories, settings)
        _write_manifest(coordinates, ivy_dir, repositories, resolution.output)
    try:
        jars = [ivy_dir / "jars" / name for name in manifest.read_text().split()]
    except OSError:
        return None
    return jars if jars and all(jar.is_file() for jar in jars) else None


def ensure_packages(
    coordinates: Sequence[str],
    ivy_dir: Path,
    repositories: str | None = None,
    *,
    on_fetch: Callable[[Sequence[str], Path], None] | None = None,
    settings: str | None = None,
) -> list[str]:
    """Make sure every coordinate's jar is in ``ivy_dir``; return those that had to be resolved now
    (``on_fetch`` is told before they are)."""
    wanted = missing(coordinates, ivy_dir)
    if not wanted:
        return []
    if on_fetch is not None:
        on_fetch(wanted, ivy_dir)
    result = run_resolution(coordinates, ivy_dir, repositories, settings)
    still = missing(coordinates, ivy_dir)
    if still:
        unresolved = sorted(set(_UNRESOLVED.findall(result.output))) or still
        names = ", ".join(u.replace("#", ":").replace(";", ":") for u in unresolved)
        raise SparkPackageError(
            f"could not resolve the Spark package(s) {names} from Maven into {ivy_dir}",
            hint="check that Maven Central (or --conf spark.jars.repositories=URL) is reachable; on an offline "
            "cluster download the jars elsewhere and pass them with --jars a.jar,b.jar (then no package is "
            "resolved)",
        )
    _write_manifest(coordinates, ivy_dir, repositories, result.output)
    return wanted


def main(argv: Sequence[str] | None = None) -> int:
    from mongocdc.spark.environment import packages_for_installed

    parser = argparse.ArgumentParser(description="Resolve the Spark job's Maven packages into an Ivy directory.")
    parser.add_argument("--ivy", type=Path, required=True, help="Ivy directory (spark.jars.ivy)")
    parser.add_argument("--no-delta", action="store_true", help="do not resolve Delta Lake")
    args = parser.parse_args(argv)
    packages = packages_for_installed()
    coordinates = packages.coordinates(with_delta=not args.no_delta)
    try:
        fetched = ensure_packages(coordinates, args.ivy.resolve())
    except SparkPackageError as error:
        sys.stderr.write(f"error: {error.message}\nhint: {error.hint}\n")
        return int(error.exit_code)
    sys.stdout.write(("resolved " if fetched else "already present: ") + ", ".join(coordinates) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
