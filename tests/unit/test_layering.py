"""Each third-party library is imported in one area only, and dependencies point one way (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mongocdc"

HOMES = {
    "pymongo": ("sources/",),
    "confluent_kafka": ("kafka/",),
    "typer": ("cli/",),
    "click": ("cli/",),
    "rich": ("cli/",),
    "pyspark": ("spark/",),
}
PURE = (
    "events/",
    "engine/acks.py",
    "engine/adoption.py",
    "engine/incremental.py",
    "engine/source_offset.py",
    "engine/transactions.py",
)
PURE_ALLOWED = {"bson", "mongocdc"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules() -> list[tuple[str, set[str]]]:
    return [(p.relative_to(PACKAGE).as_posix(), imports(p)) for p in sorted(PACKAGE.rglob("*.py"))]


def test_third_party_libraries_stay_in_their_area() -> None:
    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        for name in names
        for library, homes in HOMES.items()
        if name.split(".")[0] == library and not rel.startswith(homes)
    ]
    assert wrong == []


def test_pure_core_imports_only_stdlib_and_bson() -> None:
    import sys

    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        if rel.startswith(PURE)
        for name in names
        if name.split(".")[0] not in PURE_ALLOWED and name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert wrong == []


def test_lower_layers_do_not_import_upper_ones() -> None:
    lower = ("events/", "kafka/", "sources/", "sinks/", "offsets/", "config/")
    upper = ("mongocdc.engine", "mongocdc.wiring", "mongocdc.cli", "mongocdc.replication")
    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        if rel.startswith(lower)
        for name in names
        if name.startswith(upper)
    ]
    assert wrong == []


def test_the_kafka_package_stands_below_its_users() -> None:
    """Sinks, offset stores, sources and replication build on ``mongocdc/kafka/``; it imports none of them."""
    allowed = ("mongocdc.kafka", "mongocdc.errors", "mongocdc.retry", "mongocdc.config")
    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        if rel.startswith("kafka/")
        for name in names
        if name.split(".")[0] == "mongocdc" and not name.startswith(allowed)
    ]
    assert wrong == []
