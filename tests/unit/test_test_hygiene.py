"""No test module imports another: what tests share lives in helper modules (``helpers*.py``, ``fakes.py``,
``conftest.py``, …), never in a ``test_*.py`` file.

Importing a test module runs its module-level code and fixtures in another module's collection, ties one test file's
internals to others, and hides shared code where nobody looks for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.import_graph import file_imports, imported_names

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def is_test_module(name: str) -> bool:
    """``name`` is a test module of the suite (``tests.….test_x``) or something inside one."""
    parts = name.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") for part in parts[1:])


def imports_of_test_modules(files: dict[str, set[str]]) -> list[str]:
    return sorted(f"{rel} imports {name}" for rel, names in files.items() for name in names if is_test_module(name))


def test_no_test_module_is_imported_by_another_module() -> None:
    files = {p.relative_to(ROOT).as_posix(): file_imports(p, ROOT) for p in sorted(TESTS.rglob("*.py"))}
    assert imports_of_test_modules(files) == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("tests.unit.cli.test_output", "from tests.unit.cli.test_cli import mongocdc"),
        ("tests.unit.cli.test_output", "from tests.unit.cli import test_cli"),
        ("tests.unit.cli.test_output", "import tests.unit.cli.test_cli"),
        ("tests.unit.cli.test_output", "from .test_cli import mongocdc"),
        ("tests.unit.cli.helpers", "def f():\n    from ..engine.test_metrics import sample\n"),
        ("tests.integration.test_fleet", "from tests.integration.test_stream_e2e import write_config"),
    ],
)
def test_the_check_finds_an_import_of_a_test_module(module: str, source: str) -> None:
    assert imports_of_test_modules({module: imported_names(source, module)}) != []


@pytest.mark.parametrize(
    "source",
    [
        "from tests.unit.cli.helpers import mongocdc",
        "from tests.unit.engine.fakes import RecordingSink",
        "from tests.integration.replication.conftest import Record",
        "from tests.unit.import_graph import file_imports",
        "from mongocdc.engine.streaming import StreamingTask",
    ],
)
def test_the_check_lets_helper_modules_through(source: str) -> None:
    assert (
        imports_of_test_modules({"tests.unit.cli.test_output": imported_names(source, "tests.unit.cli.test_output")})
        == []
    )
