"""Child process of the memory benchmark: one mongocdc snapshot, then its peak resident memory as JSON.

Peak RSS is ``VmHWM`` from ``/proc/self/status``. (``ru_maxrss`` is not used: on Linux it keeps the
value of the parent process it was forked from across ``exec``, so a large parent hides the child's.)

``python -m bench.rss_probe --uri URI --bootstrap HOST:PORT --namespace DB.COLL --prefix P --workdir DIR``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path


def status_kb(field: str) -> int:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rss_probe")
    parser.add_argument("--uri", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    import threading

    from bench.connector import settings
    from mongocdc import wiring
    from mongocdc.engine.metrics import Metrics

    config = settings(
        uri=args.uri,
        bootstrap=args.bootstrap,
        name=f"rss-{args.prefix}",
        prefix=args.prefix,
        namespace=args.namespace,
        workdir=args.workdir,
    )
    stop = threading.Event()
    with wiring.connector(config, stop=stop, metrics=Metrics(config.name)) as group:
        rss_before = status_kb("VmRSS")
        hwm_before = status_kb("VmHWM")
        started = time.perf_counter()
        result = group.run(snapshot_only=True)
        seconds = time.perf_counter() - started
        rss_after = status_kb("VmRSS")
    assert result.snapshot is not None and result.snapshot.completed
    print(
        json.dumps(
            {
                "documents": result.snapshot.documents,
                "seconds": round(seconds, 3),
                "rss_before_run_kb": rss_before,
                "hwm_before_run_kb": hwm_before,
                "rss_after_run_kb": rss_after,
                "hwm_kb": status_kb("VmHWM"),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
