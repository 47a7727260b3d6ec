"""The single binary (``scripts/build-binary``) against the pip install, in the same run, the sides alternating.

* size of the file;
* start-up of ``mongocdc --help`` and ``mongocdc version``, warm (files in the page cache) and cold (every file
  the start reads evicted from the page cache first with ``posix_fadvise(DONTNEED)``: the binary itself; the
  pip install's interpreter library, standard library and site-packages), run from a directory outside the
  repository with a ``PATH`` without the virtualenv;
* streaming throughput: both run ``mongocdc stream -c <file>`` as a process of their own, each resuming from
  a position stored before the same writes, into a topic of its own; the rate is the events over the time
  between the broker's appends of the first and the last record (``LogAppendTime``), so the process's
  start-up is not in it (it is reported apart: start → first record). The target is judged on the median of
  each round's ratio (its two runs back to back), steadier than the ratio of the medians on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench import connector
from bench.common import EndOffsets, create_topics, median, settings_overrides

log = logging.getLogger("bench")

ROOT = Path(__file__).resolve().parents[1]
STARTUP_TARGET = 1.5
"""The binary's warm start-up within 1.5x of the pip install's (issue 26)."""
STREAM_TARGET = 0.95
"""The binary's streaming throughput at least 0.95 of the pip install's."""
COMMANDS = (("--help",), ("version",))


def build(given: str | None) -> Path:
    """``--binary``, else the file ``scripts/build-binary`` builds (or takes from its cache)."""
    if given:
        return Path(given).resolve()
    out = subprocess.run(
        [str(ROOT / "scripts" / "build-binary")], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return (ROOT / out.strip().splitlines()[-1]).resolve()


def pip_executable() -> Path:
    """The pip install's console script: the ``mongocdc`` beside this interpreter."""
    return Path(sys.executable).with_name("mongocdc")


def clean_env(home: Path) -> dict[str, str]:
    """What an operator's shell would have: no virtualenv on ``PATH``, no ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env["HOME"] = str(home)
    return env


def _files(roots: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found += [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return found


def pip_files() -> list[Path]:
    """Every file the pip install's start can read: libpython, the standard library, the venv's site-packages
    and mongocdc's own modules."""
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "")
    library = sysconfig.get_config_var("LDLIBRARY") or ""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    import mongocdc

    package = Path(mongocdc.__file__).parent  # an editable install's sources are the checkout's
    return _files([libdir / library, Path(sys.executable).resolve(), stdlib, site, package])


def evict(files: Iterable[Path]) -> None:
    """Drop ``files`` from the page cache (clean pages only: nothing here writes them)."""
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _start(executable: Path, argv: tuple[str, ...], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([str(executable), *argv], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def startup(binary: Path, pip: Path, repeat: int) -> dict[str, Any]:
    """Median seconds of each command, cold and warm, binary and pip, alternating which goes first."""
    sides = {"binary": (binary, [binary]), "pip": (pip, pip_files())}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mongocdc-bench-start-") as tmp:
        cwd, env = Path(tmp), clean_env(Path(tmp))
        for argv in COMMANDS:
            label = " ".join(argv)
            for exe, _ in sides.values():  # one uncounted start each: the warm runs' page cache
                _start(exe, argv, cwd, env)
            times: dict[str, dict[str, list[float]]] = {n: {"cold": [], "warm": []} for n in sides}
            for rep in range(repeat):
                order = list(sides) if rep % 2 == 0 else list(reversed(sides))
                for name in order:
                    exe, files = sides[name]
                    times[name]["warm"].append(_start(exe, argv, cwd, env))
                for name in order:
                    exe, files = sides[name]
                    evict(files)
                    times[name]["cold"].append(_start(exe, argv, cwd, env))
            row = {
                name: {kind: round(median(values), 3) for kind, values in kinds.items()}
                for name, kinds in times.items()
            }
            row["runs"] = {
                name: {kind: [round(v, 3) for v in values] for kind, values in kinds.items()}
                for name, kinds in times.items()
            }
            row["warm_ratio"] = round(row["binary"]["warm"] / row["pip"]["warm"], 2)
            row["cold_ratio"] = round(row["binary"]["cold"] / row["pip"]["cold"], 2)
            out[label] = row
    out["target_warm_ratio"] = STARTUP_TARGET
    out["target_met"] = all(out[" ".join(a)]["warm_ratio"] <= STARTUP_TARGET for a in COMMANDS)
    return out


def _stream_process(
    executable: Path, config_file: Path, bootstrap: str, topic: str, count: int, env: dict[str, str], cwd: Path
) -> dict[str, float]:
    """``mongocdc stream`` until the topic holds ``count`` records, then SIGTERM (exit 0 expected)."""
    ends = EndOffsets(bootstrap, topic)
    try:
        started_wall = time.time()
        process = subprocess.Popen(
            [str(executable), "-q", "stream", "-c", str(config_file)],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            ends.wait_for(count, timeout=600, failed=lambda: process.poll() is not None)
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=120)
        if process.returncode != 0:
            raise RuntimeError(f"{executable} stream exited {process.returncode}: {err[-2000:]}")
        first, last = ends.first_append_time(), ends.last_append_time()
    finally:
        ends.close()
    return {
        "rate": count / (last - first) if last > first else 0.0,
        "first_record_s": first - started_wall,
        "seconds": last - started_wall,
    }


def stream(
    uri: str,
    bootstrap: str,
    binary: Path,
    pip: Path,
    *,
    count: int,
    rounds: int,
    partitions: int,
    load: Callable[[str, str, str, int], float],
    workdir: Path,
) -> dict[str, Any]:
    """``rounds`` runs of each side over the same writes, the order alternating; the first round is a warm-up."""
    import pymongo

    sides = {"binary": binary, "pip": pip}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    db = f"bench_bin_{uuid.uuid4().hex[:8]}"
    env = clean_env(workdir)
    for index in range(rounds + 1):
        coll = f"changes_{index}"
        namespace = f"{db}.{coll}"
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(uri)
        client[db].create_collection(coll)
        client.close()
        configs: dict[str, tuple[Path, str]] = {}
        for name in sides:
            prefix = f"bin{name}{index}"
            overrides = settings_overrides(
                uri=uri,
                bootstrap=bootstrap,
                name=f"bench-{name}-{index}",
                prefix=prefix,
                namespace=namespace,
                offsets_file=str(workdir / f"{name}-{index}.offsets.db"),
                extra={"snapshot.mode": "no_data"},
            )
            topic = f"{prefix}.{namespace}"
            create_topics(bootstrap, [topic], partitions)
            # the position before the writes, stored as the process will read it
            connector.position_before_writes(connector_settings(overrides))
            config_file = workdir / f"{name}-{index}.json"
            config_file.write_text(json.dumps({k: str(v) for k, v in overrides.items()}))
            configs[name] = (config_file, topic)
        load(uri, db, coll, count)
        order = list(sides) if index % 2 == 0 else list(reversed(sides))
        for name in order:
            config_file, topic = configs[name]
            run = _stream_process(sides[name], config_file, bootstrap, topic, count, env, workdir)
            log.info(
                "binary bench: %s stream round %d: %.0f events/s%s",
                name,
                index,
                run["rate"],
                " (warm-up, not counted)" if index == 0 else "",
            )
            if index:
                runs[name].append(run)
    summary = {
        name: {
            "rate_median": round(median([r["rate"] for r in values])),
            "rates": [round(r["rate"]) for r in values],
            "first_record_s_median": round(median([r["first_record_s"] for r in values]), 2),
        }
        for name, values in runs.items()
    }
    ratio = summary["binary"]["rate_median"] / summary["pip"]["rate_median"] if summary["pip"]["rate_median"] else 0
    # each round's two runs follow each other over the same writes: their ratio is steadier than the ratio of
    # the medians when other work on the machine comes and goes between rounds
    paired = [b["rate"] / p["rate"] for b, p in zip(runs["binary"], runs["pip"], strict=True) if p["rate"]]
    paired_median = median(paired) if paired else 0.0
    return {
        "events": count,
        **summary,
        "ratio": round(ratio, 3),
        "round_ratios": [round(r, 3) for r in paired],
        "round_ratio_median": round(paired_median, 3),
        "target_ratio": STREAM_TARGET,
        "target_met": paired_median >= STREAM_TARGET,
    }


def connector_settings(overrides: dict[str, object]) -> Any:
    from mongocdc.config import load_settings

    return load_settings(None, {}, overrides)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--binary", default=None, metavar="FILE", help="binary: the file to measure (default: scripts/build-binary's)"
    )
    parser.add_argument(
        "--binary-starts", type=int, default=10, help="binary: measured starts of each command, side and kind (10)"
    )


def bench_binary(
    uri: str, bootstrap: str, args: argparse.Namespace, load: Callable[[str, str, str, int], float], workdir: Path
) -> dict[str, Any]:
    binary = build(args.binary)
    pip = pip_executable()
    result: dict[str, Any] = {"binary": str(binary), "size_mb": round(binary.stat().st_size / 1e6, 1)}
    result["startup"] = startup(binary, pip, args.binary_starts)
    result["stream"] = stream(
        uri,
        bootstrap,
        binary,
        pip,
        count=args.stream_docs or args.docs,
        rounds=args.repeat,
        partitions=args.partitions,
        load=load,
        workdir=workdir,
    )
    return result


def render(result: dict[str, Any]) -> list[str]:
    lines = ["", f"single binary {Path(result['binary']).name}: {result['size_mb']} MB"]
    lines.append(f"  {'start-up (median s)':<24}{'binary':>10}{'pip':>10}{'ratio':>8}{'target':>9}")
    start = result["startup"]
    for argv in COMMANDS:
        label = " ".join(argv)
        row = start[label]
        for kind in ("warm", "cold"):
            target = f"<= {STARTUP_TARGET}" if kind == "warm" else ""
            met = ("  met" if row["warm_ratio"] <= STARTUP_TARGET else "  NOT met") if kind == "warm" else ""
            lines.append(
                f"  {f'mongocdc {label} ({kind})':<24}{row['binary'][kind]:>10.3f}{row['pip'][kind]:>10.3f}"
                f"{row[f'{kind}_ratio']:>8.2f}{target:>9}{met}"
            )
    s = result["stream"]
    label = f"streaming ({s['events']:,} events/s)"
    lines.append(
        f"  {label:<24}{s['binary']['rate_median']:>10,}{s['pip']['rate_median']:>10,}"
        f"{s['ratio']:>8.2f}{'':>9}  (ratio of the medians)"
    )
    lines.append(
        f"  {'  per round (median)':<24}{'':>20}{s['round_ratio_median']:>8.2f}{'>= ' + str(STREAM_TARGET):>9}"
        f"  {'met' if s['target_met'] else 'NOT met'}  {s['round_ratios']}"
    )
    lines.append(
        f"  stream runs (events/s): binary {s['binary']['rates']}  pip {s['pip']['rates']}; process start to first "
        f"record (median s): binary {s['binary']['first_record_s_median']}, pip {s['pip']['first_record_s_median']}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.binary``: the start-up rows alone (no MongoDB, no Kafka)."""
    parser = argparse.ArgumentParser(prog="python -m bench.binary", description="start-up: the binary against pip")
    add_arguments(parser)
    args = parser.parse_args(argv)
    binary = build(args.binary)
    result = {"binary": str(binary), "size_mb": round(binary.stat().st_size / 1e6, 1)}
    result["startup"] = startup(binary, pip_executable(), args.binary_starts)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
