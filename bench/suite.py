"""The benchmark suite: services, data, the three benchmarks, and the report.

Each benchmark starts from the same ~1 KB documents (``bench/workload.py``) in a real
MongoDB-compatible server and writes to a real Kafka broker, both started here on loopback
(or given with ``--connection-string``/``--bootstrap-servers``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymongo
from confluent_kafka import Producer

from bench import baseline, connector
from bench import binary as binary_bench
from bench import fleet as fleet_bench
from bench import replication as replication_bench
from bench import spark as spark_bench
from bench.common import (
    CPU,
    TRANSFORM_CHAINS,
    Timing,
    baseline_producer_config,
    comparison,
    cpu_line,
    create_topics,
    kafka_broker,
    median,
    peer_comparison,
    peer_lines,
    ratio_row,
    transform_chain,
)
from bench.workload import DOCUMENT_BYTES, load

log = logging.getLogger("bench")

REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.9  # snapshot and streaming against the bare loop, with Debezium-identical events
MEMORY_TARGET_MB = 50.0
MEMORY_TARGET_SIZES = (10_000, 1_000_000)
ALL = ("snapshot", "stream", "memory")
OPTIONAL = ("spark", "replication", "fleet", "binary")  # only with --only: bench/spark.py (a Spark JVM of its own,
# about 2 minutes), bench/replication.py (two Kafka brokers of its own, no MongoDB, about 1 minute), bench/fleet.py
# (a broker and a sharded stand-in of its own, worker groups of 1-3 processes, about 2 minutes), bench/binary.py (the
# single binary against the pip install; builds it first when the sources changed)


@dataclass(frozen=True, slots=True)
class Services:
    uri: str
    bootstrap: str
    mongo: str
    kafka: str


@contextlib.contextmanager
def services(args: argparse.Namespace) -> Iterator[Services]:
    """The MongoDB test server and the Kafka broker (or the ones given on the command line)."""
    with contextlib.ExitStack() as stack:
        if args.connection_string:
            uri, mongo = args.connection_string, "given"
        else:
            cls = mongo_server_class(args.mongo_server)
            server = cls()
            log.info("starting MongoDB test server %s", cls.name)
            server.start()
            stack.callback(server.stop)
            process = getattr(server, "_proc", None)  # the test server's own process, for its CPU-seconds
            CPU.watch("MongoDB server", None if process is None else process.pid)
            uri, mongo = server.uri, f"{cls.name} {cls.installed_version()}"
        bootstrap, kafka = stack.enter_context(kafka_broker(args))
        yield Services(uri, bootstrap, mongo, kafka)


def mongo_server_class(name: str | None) -> type[Any]:
    """``--mongo-server``, else ``$MONGOCDC_TEST_MONGODB_SERVER``, else secantus-rs when built, else secantus.

    secantus-rs plans ``_id`` range queries on the ``_id`` index as mongod does; the Python secantus
    scans the whole collection for every snapshot chunk query (``{_id: {$gt: …}}`` sorted by ``_id``),
    which makes any chunked snapshot quadratic there and measures the server instead of mongocdc.
    """
    from tests.services.mongo import SERVER_ENV, SecantusRsServer, SecantusServer, server_class

    if name or os.environ.get(SERVER_ENV, "").strip():
        return server_class(name)
    if SecantusRsServer.binary().exists():
        return SecantusRsServer
    log.warning("secantus-rs is not built: using secantus, whose snapshot chunk queries are collection scans")
    return SecantusServer


def warm_up_broker(bootstrap: str, records: int, partitions: int) -> None:
    """Produce ``records`` 1 KB records so the broker's JIT has compiled its produce path."""
    if records <= 0:
        return
    topic = f"bench-warmup-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic], partitions)
    producer = Producer(baseline_producer_config(bootstrap))
    payload = b"x" * DOCUMENT_BYTES
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=payload, key=str(i).encode())
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    producer.flush()
    log.info("broker warm-up: %d records in %.1f s", records, time.perf_counter() - started)


def _client(uri: str) -> pymongo.MongoClient[dict[str, Any]]:
    return pymongo.MongoClient(uri)


def _load(uri: str, db: str, coll: str, count: int) -> float:
    client = _client(uri)
    try:
        started = time.perf_counter()
        load(client[db][coll], count)
        seconds = time.perf_counter() - started
        log.info("loaded %d documents into %s.%s in %.1f s", count, db, coll, seconds)
        return seconds
    finally:
        client.close()


# -- 1. snapshot ------------------------------------------------------------------------------

Side = tuple[str, Callable[[str], Timing]]


def _peers(args: argparse.Namespace) -> tuple[bool, bool]:
    """Whether the bare-loop baseline and Debezium run (``--peer``)."""
    return args.peer in ("baseline", "both"), args.peer in ("debezium", "both")


@contextlib.contextmanager
def _debezium_worker(svc: Services, args: argparse.Namespace, wanted: bool) -> Iterator[Any]:
    """The Kafka Connect worker with Debezium, started once for the benchmark (``None`` without ``--peer debezium``)."""
    if not wanted:
        yield None
        return
    from bench import debezium

    with debezium.worker(svc.bootstrap, {**args.transform_chain, **args.debezium_option}) as dbz:
        yield dbz


def _round(kind: str, sides: list[Side], tag: str, expected: int, order: int) -> dict[str, Timing]:
    """One run of each side, in ``sides``' order or reversed (``order`` odd): mongocdc is first or last."""
    out: dict[str, Timing] = {}
    for name, fn in sides if order % 2 == 0 else list(reversed(sides)):
        timing = fn(tag)
        log.info(
            "%s %s run %s: %d items in %.2f s = %.0f/s%s",
            kind,
            name,
            tag,
            timing.items,
            timing.seconds,
            timing.rate,
            " (warm-up, not counted)" if tag == "warmup" else "",
        )
        if timing.items != expected and name != "debezium":
            raise RuntimeError(f"{kind}: {name} delivered {timing.items} records, expected {expected}")
        if timing.items != expected:  # not counted (peer_comparison), reported
            log.warning("%s: Debezium delivered %d records for %d changes in run %s", kind, timing.items, expected, tag)
        out[name] = timing
    return out


def _results(
    rounds: list[dict[str, Timing]],
    warm: dict[str, Timing] | None,
    baseline_on: bool,
    debezium_on: bool,
    expected: int,
) -> dict[str, Any]:
    mine = [r["mongocdc"] for r in rounds]
    out: dict[str, Any] = {}
    if baseline_on:
        out.update(comparison(mine, [r["baseline"] for r in rounds], TARGET_RATIO))
    if "exactly-once" in rounds[0]:  # exactly once over mongocdc's own at least once
        out["exactly_once"] = comparison([r["exactly-once"] for r in rounds], mine, TARGET_RATIO)
    if debezium_on:
        out["debezium"] = peer_comparison(mine, [r["debezium"] for r in rounds], warm, expected)
    return out


def bench_snapshot(svc: Services, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    baseline_on, debezium_on = _peers(args)
    db, coll = f"bench_{uuid.uuid4().hex[:8]}", "orders"
    namespace = f"{db}.{coll}"
    load_s = _load(svc.uri, db, coll, args.docs)
    bare_topic = f"baseline.{namespace}"
    create_topics(svc.bootstrap, [bare_topic], args.partitions)

    with _debezium_worker(svc, args, debezium_on) as dbz:

        def run_mongocdc(tag: str) -> Timing:
            prefix = f"snap{tag}"  # a topic per run: the first and last records' append times are this run's
            topic = f"{prefix}.{namespace}"
            create_topics(svc.bootstrap, [topic], args.partitions)
            config = _mongocdc(svc, workdir, f"snap-{tag}", prefix, namespace, chain=args.transform_chain)
            return connector.snapshot(config, peer=(svc.bootstrap, topic) if debezium_on else None)

        def run_baseline(tag: str) -> Timing:
            return baseline.snapshot(svc.uri, svc.bootstrap, db, coll, bare_topic)

        def run_exactly_once(tag: str) -> Timing:
            prefix = f"eossnap{tag}"
            create_topics(svc.bootstrap, [f"{prefix}.{namespace}"], args.partitions)
            config = _mongocdc(
                svc, workdir, f"eos-snap-{tag}", prefix, namespace, _exactly_once(tag), chain=args.transform_chain
            )
            return connector.snapshot(config)

        def run_debezium(tag: str) -> Timing:
            from bench import debezium

            prefix = f"dbzsnap{tag}"
            create_topics(svc.bootstrap, [f"{prefix}.{namespace}"], args.partitions)
            return debezium.snapshot(
                dbz,
                uri=svc.uri,
                bootstrap=svc.bootstrap,
                name=f"dbz-snap-{tag}-{uuid.uuid4().hex[:6]}",
                prefix=prefix,
                namespace=namespace,
                count=args.docs,
            )

        sides: list[Side] = [("mongocdc", run_mongocdc)]
        sides += [("baseline", run_baseline)] if baseline_on else []
        sides += [("debezium", run_debezium)] if debezium_on else []
        sides += [("exactly-once", run_exactly_once)] if args.exactly_once else []
        warm = _round("snapshot", sides, "warmup", args.docs, 0) if args.warmup else None
        rounds = [_round("snapshot", sides, str(rep), args.docs, rep + 1) for rep in range(args.repeat)]
        jvm_start = dbz.startup_seconds if dbz else None
    fixed = fixed_snapshot_costs(svc, args, workdir, db)
    return {
        "fixed_costs_s": fixed,
        "documents": args.docs,
        "document_bytes": DOCUMENT_BYTES,
        "load_seconds": round(load_s, 2),
        "connect_jvm_start_s": None if jvm_start is None else round(jvm_start, 2),
        **_results(rounds, warm, baseline_on, debezium_on, args.docs),
    }


def _exactly_once(tag: str) -> dict[str, object]:
    """The settings of the exactly-once side (``--exactly-once``): transactions, offsets in a topic of the run's."""
    return {
        "exactly.once.support": "required",
        "offset.storage": "kafka",
        "offset.storage.topic": f"bench-offsets-{tag}-{uuid.uuid4().hex[:6]}",
        "offset.storage.partitions": 1,
    }


def _mongocdc(
    svc: Services,
    workdir: Path,
    name: str,
    prefix: str,
    namespace: str,
    extra: Mapping[str, object] | None = None,
    *,
    chain: Mapping[str, str] | None = None,
) -> Any:
    """mongocdc's settings for a run over ``namespace``, with the include list the Debezium connector is given
    (``bench.debezium.connector_config``), the transform chain both sides get (``--transforms``) and ``extra``
    over them."""
    return connector.settings(
        uri=svc.uri,
        bootstrap=svc.bootstrap,
        name=name,
        prefix=prefix,
        namespace=namespace,
        workdir=workdir,
        extra={"collection.include.list": re.escape(namespace), **(chain or {}), **(extra or {})},
    )


def fixed_snapshot_costs(svc: Services, args: argparse.Namespace, workdir: Path, db: str) -> dict[str, float]:
    """What a one-document snapshot costs: the per-run overhead inside the measured window, and the
    extra latency of ``ConnectorGroup.run`` (which the measured runs avoid by running the task)."""
    coll = "one_document"
    _load(svc.uri, db, coll, 1)
    create_topics(svc.bootstrap, [f"fixed.{db}.{coll}"], args.partitions)

    def config(tag: str) -> Any:
        return connector.settings(
            uri=svc.uri,
            bootstrap=svc.bootstrap,
            name=f"fixed-{tag}",
            prefix="fixed",
            namespace=f"{db}.{coll}",
            workdir=workdir,
        )

    task_runs = [connector.snapshot(config(f"task{i}")).seconds for i in range(3)]
    group_extra = [connector.group_latency(config(f"group{i}")) for i in range(3)]
    return {
        "one_document_task_run": round(median(task_runs), 3),
        "connector_group_extra_latency": round(median(group_extra), 3),
    }


# -- 2. streaming -----------------------------------------------------------------------------


def bench_stream(svc: Services, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    baseline_on, debezium_on = _peers(args)
    count = args.stream_docs or args.docs
    db = f"bench_{uuid.uuid4().hex[:8]}"
    load_total = 0.0
    tags = (["warmup"] if args.warmup else []) + [str(rep) for rep in range(args.repeat)]
    done: list[dict[str, Timing]] = []
    with _debezium_worker(svc, args, debezium_on) as dbz:
        for index, tag in enumerate(tags):
            coll = f"changes_{tag}"
            namespace = f"{db}.{coll}"
            prefix, dbz_prefix = f"strm{tag}", f"dbzstrm{tag}"
            topic, bare_topic = f"{prefix}.{namespace}", f"baseline-{prefix}.{namespace}"
            dbz_topic = f"{dbz_prefix}.{namespace}"
            eos_topic = f"eos{prefix}.{namespace}"
            create_topics(
                svc.bootstrap,
                [topic, bare_topic] + ([dbz_topic] if debezium_on else []) + ([eos_topic] if args.exactly_once else []),
                args.partitions,
            )
            client = _client(svc.uri)
            client[db].create_collection(coll)
            client.close()
            no_data = {"snapshot.mode": "no_data"}
            config = _mongocdc(svc, workdir, f"stream-{tag}", prefix, namespace, no_data, chain=args.transform_chain)
            # Every side stores a position taken before the writes, then the writes, then each replays them.
            connector.position_before_writes(config)
            eos_config = _mongocdc(
                svc,
                workdir,
                f"eos-stream-{tag}",
                f"eos{prefix}",
                namespace,
                {"snapshot.mode": "no_data", **_exactly_once(tag)},
                chain=args.transform_chain,
            )
            if args.exactly_once:
                connector.position_before_writes(eos_config)
            token = baseline.resume_token(svc.uri, db, coll) if baseline_on else None
            dbz_name = f"dbz-stream-{tag}-{uuid.uuid4().hex[:6]}"
            if debezium_on:
                from bench import debezium

                debezium.position_before_writes(
                    dbz, uri=svc.uri, bootstrap=svc.bootstrap, name=dbz_name, prefix=dbz_prefix, namespace=namespace
                )
            load_total += _load(svc.uri, db, coll, count)

            def run_mongocdc(tag: str, config: Any = config, topic: str = topic) -> Timing:
                return connector.stream(config, svc.bootstrap, topic, count)

            def run_baseline(tag: str, coll: str = coll, bare_topic: str = bare_topic, token: Any = token) -> Timing:
                return baseline.stream(svc.uri, svc.bootstrap, db, coll, bare_topic, token, count)

            def run_debezium(tag: str, name: str = dbz_name, prefix: str = dbz_prefix, ns: str = namespace) -> Timing:
                from bench import debezium

                return debezium.stream(
                    dbz, bootstrap=svc.bootstrap, name=name, prefix=prefix, namespace=ns, count=count
                )

            def run_exactly_once(tag: str, config: Any = eos_config, topic: str = eos_topic) -> Timing:
                return connector.stream(config, svc.bootstrap, topic, count)

            sides: list[Side] = [("mongocdc", run_mongocdc)]
            sides += [("baseline", run_baseline)] if baseline_on else []
            sides += [("debezium", run_debezium)] if debezium_on else []
            sides += [("exactly-once", run_exactly_once)] if args.exactly_once else []
            done.append(_round("stream", sides, tag, count, index))
        jvm_start = dbz.startup_seconds if dbz else None
    warm = done.pop(0) if args.warmup else None
    return {
        "events": count,
        "document_bytes": DOCUMENT_BYTES,
        "load_seconds_mean": round(load_total / max(1, len(tags)), 2),
        "connect_jvm_start_s": None if jvm_start is None else round(jvm_start, 2),
        **_results(done, warm, baseline_on, debezium_on, count),
    }


# -- 3. memory --------------------------------------------------------------------------------


def bench_memory(svc: Services, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    sizes: list[int] = sorted(args.memory_sizes)
    db = f"bench_{uuid.uuid4().hex[:8]}"
    runs: list[dict[str, Any]] = []
    for size in sizes:
        coll = f"mem_{size}"
        _load(svc.uri, db, coll, size)
        prefix = f"rss{size}"
        create_topics(svc.bootstrap, [f"{prefix}.{db}.{coll}"], args.partitions)
        command = [
            sys.executable, "-m", "bench.rss_probe", "--uri", svc.uri, "--bootstrap", svc.bootstrap,
            "--namespace", f"{db}.{coll}", "--prefix", prefix, "--workdir", str(workdir),
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("MONGOCDC_") or k.startswith("MONGOCDC_TEST_")}
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"the memory probe for {size} documents failed:\n{done.stderr[-4000:]}")
        probe: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        probe["size"] = size
        probe["peak_mb"] = round(probe["hwm_kb"] / 1024, 1)
        probe["growth_during_run_mb"] = round((probe["hwm_kb"] - probe["hwm_before_run_kb"]) / 1024, 1)
        log.info(
            "memory: %d documents, peak RSS %.1f MB (+%.1f MB during the snapshot), %.1f s",
            size,
            probe["peak_mb"],
            probe["growth_during_run_mb"],
            probe["seconds"],
        )
        runs.append(probe)
    small, large = runs[0], runs[-1]
    growth_mb = (large["hwm_kb"] - small["hwm_kb"]) / 1024
    span = large["size"] - small["size"]
    per_million = growth_mb / span * 1_000_000 if span else 0.0
    lo, hi = MEMORY_TARGET_SIZES
    extrapolated = per_million * (hi - lo) / 1_000_000
    return {
        "sizes": sizes,
        "runs": runs,
        "peak_growth_mb": round(growth_mb, 1),
        "growth_mb_per_million_docs": round(per_million, 1),
        "target": f"peak RSS growth < {MEMORY_TARGET_MB:.0f} MB between {lo} and {hi} documents",
        "extrapolated_growth_mb_10k_to_1m": round(extrapolated, 1),
        # Below a few snapshot chunks (2048 documents each) the growth is the first chunk filling up.
        "extrapolation_meaningful": small["size"] >= 5 * 2048,
        "target_met_at_measured_sizes": growth_mb < MEMORY_TARGET_MB,
        "target_met_extrapolated": extrapolated < MEMORY_TARGET_MB,
    }


# -- profiles -------------------------------------------------------------------------------


def profile_runs(svc: Services, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """cProfile of one run of each side of each benchmark (after the measured runs, so warm)."""
    from bench import profiling

    out: dict[str, Any] = {}
    db, coll = f"bench_{uuid.uuid4().hex[:8]}", "profiled"
    _load(svc.uri, db, coll, args.docs)
    create_topics(svc.bootstrap, [f"prof.{db}.{coll}", f"baseline-prof.{db}.{coll}"], args.partitions)
    targets: dict[str, Any] = {
        "mongocdc snapshot": lambda: connector.snapshot(
            connector.settings(
                uri=svc.uri,
                bootstrap=svc.bootstrap,
                name="prof-snap",
                prefix="prof",
                namespace=f"{db}.{coll}",
                workdir=workdir,
                extra=args.transform_chain,
            )
        ),
        "baseline snapshot": lambda: baseline.snapshot(svc.uri, svc.bootstrap, db, coll, f"baseline-prof.{db}.{coll}"),
    }
    if "stream" in args.only:
        scoll = "profiled_stream"
        topic = f"profs.{db}.{scoll}"
        bare_topic = f"baseline-profs.{db}.{scoll}"
        create_topics(svc.bootstrap, [topic, bare_topic], args.partitions)
        client = _client(svc.uri)
        client[db].create_collection(scoll)
        client.close()
        config = connector.settings(
            uri=svc.uri,
            bootstrap=svc.bootstrap,
            name="prof-stream",
            prefix="profs",
            namespace=f"{db}.{scoll}",
            workdir=workdir,
            extra={**args.transform_chain, "snapshot.mode": "no_data"},
        )
        connector.position_before_writes(config)
        token = baseline.resume_token(svc.uri, db, scoll)
        count = args.stream_docs or args.docs
        _load(svc.uri, db, scoll, count)
        targets["mongocdc stream"] = lambda: connector.stream(config, svc.bootstrap, topic, count)
        targets["baseline stream"] = lambda: baseline.stream(
            svc.uri, svc.bootstrap, db, scoll, bare_topic, token, count
        )
    for name, fn in targets.items():
        profiles = profiling.ThreadProfiles()
        with profiles.active():
            timing = fn()
        worker = profiles.worker()
        if args.profile_dir:
            args.profile_dir.mkdir(parents=True, exist_ok=True)
            worker.dump_stats(str(args.profile_dir / (name.replace(" ", "-") + ".pstats")))
        out[name] = {
            "rate_under_profiler": round(timing.rate, 1),
            "worker_thread_seconds": round(profiling.total_seconds(worker), 3),
            "breakdown": profiling.breakdown(worker),
            "top_own_time": profiling.top_functions(worker, limit=args.profile_top),
        }
    return out


# -- report ---------------------------------------------------------------------------------


def render_table(report: dict[str, Any]) -> str:
    lines: list[str] = []
    env = report["environment"]
    lines.append(
        f"mongocdc {env['mongocdc']} | {env['cpus']} CPUs | Python {env['python']} | MongoDB: {env['mongodb']} | "
        f"Kafka: {env['kafka']} | {env['partitions']} partitions/topic"
    )
    lines.append(
        f"load average {env['load_average_at_start']} at the start, {env.get('load_average_at_end')} at the end"
    )
    lines.append(
        f"median of {report['repeat']} runs each, the sides alternating"
        + (", after warm-up rounds (spark: --spark-warmup)" if report["warmup"] else "")
    )
    chain = env.get("transforms")
    if chain:
        shown = ", ".join(f"{key}={value}" for key, value in chain.items())
        lines.append(f"transforms on mongocdc and Debezium (not the bare loop): {shown}")
    lines.append("")
    results = report["results"]
    if any(k in results for k in ("spark", "replication", "memory")) or any(
        "baseline" in results.get(k, {}) for k in ("snapshot", "stream")
    ):  # not with --peer debezium alone: its table follows
        header = f"{'benchmark':<34}{'mongocdc':>14}{'baseline':>14}{'ratio':>8}{'target':>9}  result"
        lines.append(header)
        lines.append("-" * len(header))
    for key, label, unit in (("snapshot", "snapshot", "docs/s"), ("stream", "streaming", "events/s")):
        r = report["results"].get(key)
        if r is None or "baseline" not in r:
            continue
        n = r.get("documents", r.get("events"))
        lines.append(ratio_row(f"{label} ({n:,} x 1 KB, {unit})", r))
    for key, label, unit in (("snapshot", "snapshot", "docs/s"), ("stream", "streaming", "events/s")):
        r = report["results"].get(key)
        if r is None or "exactly_once" not in r:
            continue
        eos = r["exactly_once"]
        lines.append(
            f"{f'{label} exactly once / at least once':<34}{eos['mongocdc']['rate_median']:>14,.0f}"
            f"{eos['baseline']['rate_median']:>14,.0f}{eos['ratio']:>8.2f}{'>= 0.9':>9}  "
            f"{'met' if eos['target_met'] else 'NOT met'} ({unit}; CPU at least once/exactly once: "
            f"{', '.join(f'{k} {v:.2f}' for k, v in eos['cpu_ratio'].items())})"
        )
    peer = _debezium_table(report)
    lines += peer[1:] if peer and lines[-1] == "" else peer
    if "spark" in report["results"]:
        lines += spark_bench.render(report["results"]["spark"])
    if "replication" in report["results"]:
        lines += replication_bench.render(report["results"]["replication"])
    if "fleet" in report["results"]:
        lines += fleet_bench.render(report["results"]["fleet"])
    if "binary" in report["results"]:
        lines += binary_bench.render(report["results"]["binary"])
    mem = report["results"].get("memory")
    if mem is not None:
        lo, hi = mem["sizes"][0], mem["sizes"][-1]
        lines.append(
            f"{f'snapshot peak RSS {lo:,} -> {hi:,} docs':<34}{mem['peak_growth_mb']:>11.1f} MB"
            f"{'':>14}{'':>8}{'< 50 MB':>9}  {'met' if mem['target_met_at_measured_sizes'] else 'NOT met'}"
        )
        lines.append("")
        lines.append("memory runs (each snapshot in its own process; VmHWM):")
        for run in mem["runs"]:
            lines.append(
                f"  {run['size']:>10,} docs: peak {run['peak_mb']:7.1f} MB, of which "
                f"{run['growth_during_run_mb']:6.1f} MB during the snapshot "
                f"({run['seconds']:.1f} s, {run['documents'] / max(run['seconds'], 1e-9):,.0f} docs/s)"
            )
        if mem["extrapolation_meaningful"]:
            lines.append(
                f"  growth {mem['growth_mb_per_million_docs']:.1f} MB per million documents; linear extrapolation to "
                f"10,000 -> 1,000,000 docs: {mem['extrapolated_growth_mb_10k_to_1m']:.1f} MB "
                f"({'under' if mem['target_met_extrapolated'] else 'over'} the 50 MB target)"
            )
        else:
            lines.append(
                "  no extrapolation: below ~10,000 documents the growth is the first 2048-document chunk filling up"
            )
    for key in ("snapshot", "stream"):
        r = report["results"].get(key)
        if r is None or "baseline" not in r:
            continue
        lines.append("")
        lines.append(f"{key} runs (items/s): mongocdc {r['mongocdc']['rates']}  baseline {r['baseline']['rates']}")
        fixed = r.get("fixed_costs_s")
        if fixed:
            lines.append(
                f"  a 1-document snapshot: ConnectorTask.run {fixed['one_document_task_run']:.3f} s; "
                f"ConnectorGroup.run adds {fixed['connector_group_extra_latency']:.3f} s "
                "(a thread per task, started and joined; the measured runs call the task directly)"
            )
        if r["mongocdc"].get("cpu_median_s"):
            lines.append(cpu_line(r))
        lines.append(f"  mongocdc phases (mean s): {r['mongocdc']['phases_mean_s']}")
        lines.append(f"  baseline phases (mean s): {r['baseline']['phases_mean_s']}")
    prof = report.get("profiles")
    if prof:
        lines.append("")
        lines.append(
            "profiles (cProfile of the worker thread, the one that reads, converts and produces; "
            "shares are of that thread's time)"
        )
        for name, p in prof.items():
            lines.append("")
            rate, seconds = p["rate_under_profiler"], p["worker_thread_seconds"]
            lines.append(f"{name}: {rate:,.0f}/s under cProfile, worker thread {seconds:.2f} s")
            for row in p["breakdown"]:
                lines.append(f"  {row['share'] * 100:5.1f}%  {row['seconds']:7.3f}s  {row['stage']}")
            lines.append(f"  top own time:  {'share':>6}  {'own s':>7}  {'calls':>9}  function")
            for row in p["top_own_time"]:
                share = row["own_share"] * 100
                lines.append(f"  {'':14}{share:5.1f}%  {row['own_s']:7.3f}  {row['calls']:>9,}  {row['function']}")
    return "\n".join(lines)


def _debezium_table(report: dict[str, Any]) -> list[str]:
    """mongocdc against Debezium in Kafka Connect, per benchmark (``--peer debezium`` or ``both``)."""
    results = [(key, report["results"][key]) for key in ("snapshot", "stream") if key in report["results"]]
    results = [(key, r) for key, r in results if "debezium" in r]
    if not results:
        return []
    lines = [
        "",
        f"mongocdc against Debezium {report['environment'].get('debezium', '')} (Kafka Connect standalone), "
        f"median of {report['repeat']} runs each, alternating which goes first",
        "  clock: start request (mongocdc: wiring.connector entered; Debezium: connector created/resumed over REST)",
        "  to the broker's append of the first / last record; CPU-s over the same window; peak RSS of the tool's",
        "  process (mongocdc: this benchmark process; Debezium: the Connect JVM), VmHWM reset before each run",
        "",
        f"  {'phase':<10}{'':<24}{'mongocdc':>12}{'Debezium':>12}  (* the issue's targets)",
    ]
    for key, r in results:
        n = r.get("documents", r.get("events"))
        lines += peer_lines("snapshot" if key == "snapshot" else "streaming", r["debezium"])
        m, d = r["debezium"]["mongocdc"]["median"], r["debezium"]["debezium"]["median"]
        if m and d and n:
            mine, theirs = m["cpu_tool"] / n * 1e6, d["cpu_tool"] / n * 1e6
            lines.append(f"  {'':<10}{'CPU tool, us/event':<24}{mine:>12,.1f}{theirs:>12,.1f}")
        verdict = "ahead on every target" if r["debezium"]["mongocdc_ahead_on_all_targets"] else "NOT ahead on all"
        jvm = r.get("connect_jvm_start_s")
        lines.append(
            f"  {'':<10}{n:,} x 1 KB; mongocdc {verdict}; Connect JVM start-up {jvm:.1f} s (not counted)"
            if jvm is not None
            else f"  {'':<10}{n:,} x 1 KB; mongocdc {verdict}"
        )
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="mongocdc snapshot/streaming throughput against bare baselines, and snapshot memory.",
    )
    parser.add_argument("--docs", type=int, default=20_000, help="documents per snapshot and streaming run (20000)")
    parser.add_argument("--stream-docs", type=int, default=None, help="events per streaming run (default: --docs)")
    parser.add_argument(
        "--memory-sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10_000, 100_000],
        help="comma-separated snapshot sizes for the memory benchmark (10000,100000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="measured runs of each side (3)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the uncounted warm-up rounds")
    parser.add_argument("--broker-warmup", type=int, default=50_000, help="records produced to warm the broker (50000)")
    parser.add_argument(
        "--only", default=",".join(ALL), help=f"benchmarks to run, comma-separated ({','.join(ALL + OPTIONAL)})"
    )
    parser.add_argument(
        "--peer",
        choices=("baseline", "debezium", "both"),
        default="baseline",
        help="what mongocdc's snapshot and streaming runs are compared with: the bare loop (default), Debezium "
        "3.6.1 in Kafka Connect standalone, or both, in the same run",
    )
    parser.add_argument(
        "--debezium-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Debezium connector property over the benchmark's own (repeatable), e.g. snapshot.fetch.size=0",
    )
    parser.add_argument(
        "--transforms",
        default="",
        metavar="LIST",
        help="single message transforms on both sides of the snapshot and streaming runs: the same chain in the "
        "Debezium connector's configuration and mongocdc's, comma-separated aliases in order "
        f"({', '.join(TRANSFORM_CHAINS)}; unwrap: ExtractNewDocumentState with its defaults); default none, where "
        "mongocdc writes its records itself (the bare loop never transforms)",
    )
    parser.add_argument(
        "--exactly-once",
        action="store_true",
        help="also run mongocdc with exactly.once.support=required (offsets in Kafka) in the snapshot and streaming "
        "rounds, and report it against mongocdc at least once",
    )
    parser.add_argument("--partitions", type=int, default=3, help="partitions per topic (3)")
    parser.add_argument(
        "--mongo-server", default=None, help="MongoDB test server (default: secantus-rs if built, else secantus)"
    )
    parser.add_argument("--connection-string", default=None, help="use this MongoDB replica set instead")
    parser.add_argument("--bootstrap-servers", default=None, help="use this Kafka cluster instead")
    parser.add_argument("--profile", action="store_true", help="also profile one run of each side (cProfile)")
    parser.add_argument("--profile-top", type=int, default=20, help="functions listed per profile (20)")
    parser.add_argument("--profile-dir", type=Path, default=None, help="write .pstats files here")
    parser.add_argument("--output", choices=("table", "json"), default="table")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="-v: progress, -vv: mongocdc's logs too")
    spark_bench.add_arguments(parser)
    replication_bench.add_arguments(parser)
    fleet_bench.add_arguments(parser)
    binary_bench.add_arguments(parser)
    args = parser.parse_args(argv)
    args.only = [x.strip() for x in args.only.split(",") if x.strip()]
    if any("=" not in option for option in args.debezium_option):
        parser.error("--debezium-option takes KEY=VALUE")
    args.debezium_option = dict(option.split("=", 1) for option in args.debezium_option)
    args.transforms = [alias.strip() for alias in args.transforms.split(",") if alias.strip()]
    unknown_transforms = [alias for alias in args.transforms if alias not in TRANSFORM_CHAINS]
    if unknown_transforms or len(set(args.transforms)) != len(args.transforms):
        parser.error(f"--transforms: aliases from {', '.join(TRANSFORM_CHAINS)}, each once (got {args.transforms})")
    args.transform_chain = transform_chain(args.transforms)
    unknown = set(args.only) - set(ALL) - set(OPTIONAL)
    if unknown:
        choices = ", ".join(ALL + OPTIONAL)
        parser.error(f"--only: unknown benchmark(s) {', '.join(sorted(unknown))}; choose from {choices}")
    if len(args.memory_sizes) < 2:
        parser.error("--memory-sizes needs at least two sizes")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose >= 2 else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    log.setLevel(logging.INFO if args.verbose or args.output == "table" else logging.WARNING)
    from mongocdc import __version__

    report: dict[str, Any] = {
        "environment": {
            "mongocdc": __version__,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "partitions": args.partitions,
            "peer": args.peer,
            "debezium_options": args.debezium_option,
            "transforms": args.transform_chain,
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "repeat": args.repeat,
        "warmup": args.warmup,
        "results": {},
    }
    started = time.monotonic()
    if "spark" in args.only:  # needs neither MongoDB nor Kafka
        report["results"]["spark"] = spark_bench.bench_spark(args)
        args.only = [name for name in args.only if name != "spark"]
    if "replication" in args.only:  # two brokers of its own, no MongoDB
        report["results"]["replication"] = replication_bench.bench_replication(args)
        args.only = [name for name in args.only if name != "replication"]
    if "fleet" in args.only:  # a broker and a sharded stand-in of its own
        report["results"]["fleet"] = fleet_bench.bench_fleet(args)
        args.only = [name for name in args.only if name != "fleet"]
    with contextlib.ExitStack() as stack:
        if args.only:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="mongocdc-bench-"))
            svc = stack.enter_context(services(args))
        else:
            ran = (
                report["results"].get("replication") or report["results"].get("spark") or report["results"].get("fleet")
            )
            tmp, svc = "", Services("", "", "not started", ran["kafka"] if ran else "not started")
        report["environment"].update(mongodb=svc.mongo, kafka=svc.kafka)
        workdir = Path(tmp)
        if args.warmup and args.only:
            warm_up_broker(svc.bootstrap, args.broker_warmup, args.partitions)
        if "snapshot" in args.only:
            report["results"]["snapshot"] = bench_snapshot(svc, args, workdir)
        if "stream" in args.only:
            report["results"]["stream"] = bench_stream(svc, args, workdir)
        if "memory" in args.only:
            report["results"]["memory"] = bench_memory(svc, args, workdir)
        if "binary" in args.only:
            report["results"]["binary"] = binary_bench.bench_binary(svc.uri, svc.bootstrap, args, _load, workdir)
        if args.profile and args.only:
            report["profiles"] = profile_runs(svc, args, workdir)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["environment"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.peer != "baseline":
        from tests.services.connect import DEBEZIUM_VERSION

        report["environment"]["debezium"] = DEBEZIUM_VERSION
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        print(render_table(report))
        print(f"\n(total {report['seconds']:.0f} s)")
    return 0


__all__ = ["main", "median"]
