"""The single binary the smoke suite runs: ``$MONGOCDC_TEST_BINARY``, else the one ``scripts/build-binary``
builds, or takes from its cache when the sources have not changed (never skipped: a missing binary is built)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BINARY_ENV = "MONGOCDC_TEST_BINARY"


@pytest.fixture(scope="session")
def binary() -> Path:
    given = os.environ.get(BINARY_ENV, "").strip()
    if given:
        path = Path(given).resolve()
        assert path.is_file() and os.access(path, os.X_OK), f"{BINARY_ENV}={given} is not an executable file"
        return path
    built = subprocess.run(
        [str(REPO / "scripts" / "build-binary")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, f"scripts/build-binary failed:\n{built.stderr}"
    return (REPO / built.stdout.strip().splitlines()[-1]).resolve()
