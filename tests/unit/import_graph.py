"""What a Python file imports, read from its syntax tree (for test_layering.py and test_test_hygiene.py)."""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    """``root/a/b/c.py`` → ``a.b.c`` and ``root/a/b/__init__.py`` → ``a.b``, with ``root`` the directory above the
    top package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, module: str, *, is_package: bool = False, filename: str = "<source>") -> set[str]:
    """Every module ``source`` (the text of ``module``) imports anywhere, including inside functions and under
    ``TYPE_CHECKING``, as absolute dotted names.

    ``from a.b import c`` gives ``a.b`` and ``a.b.c`` (``c`` may be a module of ``a.b``: ``from mongocdc import
    wiring`` is an import of ``mongocdc.wiring``); relative imports are resolved against ``module``.
    """
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                base = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target:
                names.add(target)
            names.update(
                f"{target}.{alias.name}" if target else alias.name for alias in node.names if alias.name != "*"
            )
    return names


def file_imports(path: Path, root: Path) -> set[str]:
    """``imported_names`` of the file at ``path``, a module of a package under ``root``."""
    return imported_names(
        path.read_text(), module_name(path, root), is_package=path.name == "__init__.py", filename=str(path)
    )
