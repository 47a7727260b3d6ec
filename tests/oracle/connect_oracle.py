"""Kafka Connect's own transforms, predicates and converters as an oracle (``ConnectOracle.java`` beside this file).

:func:`run` hands cases (a connector configuration and recorded records) to one JVM with Kafka Connect's
worker classpath and Debezium's plugin jars (``tests/services/connect.py`` resolves them from Maven Central)
and returns what Connect made of each record: its topic, partition, key, value, timestamp and headers as
bytes, ``{"dropped": True}`` or ``{"error": "<exception class>: <message>"}``, or the case's own
``{"error": …}`` when Connect refused its configuration. The class is compiled once per digest of its source
into the Connect cache.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tests.services import jvm
from tests.services.connect import ConnectServiceError, connect_cache_root, ensure_connect_dist

SOURCE: Final = Path(__file__).with_name("ConnectOracle.java")


def _classpath() -> str:
    dist = ensure_connect_dist()
    return os.pathsep.join([str(dist.lib / "*"), str(dist.debezium_dir / "*")])


def _compiled(classpath: str) -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = connect_cache_root() / "oracle" / digest
    if not (out / "ConnectOracle.class").exists():
        staging = out.with_name(f"{digest}.{os.getpid()}")
        staging.mkdir(parents=True, exist_ok=True)
        javac = str(Path(jvm.find_java(ConnectServiceError)).with_name("javac"))
        subprocess.run([javac, "-cp", classpath, "-d", str(staging), str(SOURCE)], check=True, capture_output=True)
        with contextlib.suppress(OSError):  # another process compiled it first
            staging.rename(out)
    return out


def run(cases: Sequence[Mapping[str, Any]], *, timeout_s: float = 300.0) -> list[dict[str, Any]]:
    """Each case's result (see the module docstring): ``{"records": [...]}`` or ``{"error": ...}``."""
    classpath = _classpath()
    classes = _compiled(classpath)
    java = jvm.find_java(ConnectServiceError)
    done = subprocess.run(
        [
            java,
            "-Xshare:auto",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            os.pathsep.join([str(classes), classpath]),
            "-Dlog4j2.level=OFF",
            "ConnectOracle",
        ],
        input=json.dumps({"cases": list(cases)}).encode(),
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise ConnectServiceError(f"ConnectOracle exited {done.returncode}: {done.stderr.decode()[-4000:]}")
    results: list[dict[str, Any]] = json.loads(done.stdout)["cases"]
    for case in results:
        for record in case.get("records", ()):
            for name in ("key", "value"):
                if record.get(name) is not None:
                    record[name] = base64.b64decode(record[name])
            if "headers" in record:
                record["headers"] = [
                    (name, None if value is None else base64.b64decode(value)) for name, value in record["headers"]
                ]
    return results
