"""Entry point: ``python -m bench`` or ``python bench/run.py`` from the repository root."""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from bench.suite import main as suite_main

    return suite_main(argv)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
