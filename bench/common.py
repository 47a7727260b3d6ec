"""Shared pieces: results, Kafka helpers, the producer configuration both sides use."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from mongocdc.sinks.kafka.producer import PRODUCER_DEFAULTS

log = logging.getLogger("bench")


def baseline_producer_config(bootstrap: str) -> dict[str, Any]:
    """The baseline's producer: mongocdc's own defaults (idempotent, acks=all, murmur2, linger 5 ms).

    Same Kafka-side guarantees and batching as mongocdc, so the ratio measures mongocdc's own work.
    """
    return {"bootstrap.servers": bootstrap, **PRODUCER_DEFAULTS}


class CpuMeter:
    """CPU-seconds of this process (all its threads, librdkafka's included) and of the servers.

    The servers are the processes whose ids :meth:`watch` was given (the MongoDB test server, the
    Kafka broker), read from ``/proc/<pid>/stat``; a server started elsewhere is not counted. On a
    shared machine CPU-seconds are steadier than wall time: they do not grow while another job runs.
    """

    def __init__(self) -> None:
        self._servers: dict[str, int] = {}
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def watch(self, name: str, pid: int | None) -> None:
        if pid is not None:
            self._servers[name] = pid

    def _server_seconds(self, pid: int) -> float | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime, stime (fields 14 and 15)

    def sample(self) -> dict[str, float]:
        out = {"cpu: this process": time.process_time()}
        for name, pid in self._servers.items():
            seconds = self._server_seconds(pid)
            if seconds is not None:
                out[f"cpu: {name}"] = seconds
        return out

    @staticmethod
    def since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        """The CPU-seconds between two samples, per process."""
        return {name: after[name] - before[name] for name in before if name in after}


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU-seconds of a process (all its threads) so far, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kb(pid: int | str, name: str) -> int:
    """A memory field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise KeyError(name)


def reset_peak_rss(pid: int | str) -> None:
    """Reset a process's ``VmHWM`` to its present RSS (``5`` into ``/proc/<pid>/clear_refs``, Linux 4.0+).

    A process's peak during one run is then ``VmHWM`` read at the run's end. Where the file cannot be
    written, the peak is the process's since its start.
    """
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


class PeerClock:
    """The start of a run as ``PeerRun`` measures it: the wall clock, the CPU meter, the tool's peak RSS reset.

    ``tool`` is the pid of the tool's process (``"self"`` for mongocdc, which runs in this process).
    """

    def __init__(self, tool: int | str) -> None:
        self._tool = tool
        reset_peak_rss(tool)
        self._cpu = CPU.sample()
        self._tool_cpu = time.process_time() if tool == "self" else process_cpu_seconds(int(tool))
        self.started_wall = time.time()

    def cpu(self) -> dict[str, float]:
        """CPU-seconds since the start: the tool's, the MongoDB server's, the Kafka broker's."""
        now = time.process_time() if self._tool == "self" else process_cpu_seconds(int(self._tool))
        used = {"tool": now - self._tool_cpu}
        for name, seconds in CPU.since(self._cpu, CPU.sample()).items():
            if name != "cpu: this process":
                used[name[5:]] = seconds
        return used

    def peak_rss_mb(self) -> float:
        return status_kb(self._tool, "VmHWM") / 1024

    def finish(self, ends: EndOffsets, items: int, cpu: dict[str, float], peak_rss_mb: float) -> PeerRun:
        """The run's ``PeerRun``, from the broker's append times of its topic's first and last record."""
        first, last = ends.first_append_time(), ends.last_append_time()
        return PeerRun(
            items=items,
            seconds=last - self.started_wall,
            first_record_s=first - self.started_wall,
            steady_rate=(items - 1) / (last - first) if last > first else 0.0,
            cpu=cpu,
            peak_rss_mb=peak_rss_mb,
        )


CPU = CpuMeter()
"""The meter every benchmark side samples at the start and the end of its measured window."""


@dataclass(frozen=True, slots=True)
class PeerRun:
    """One run as the comparison with Debezium measures it, the same way for both tools.

    The clock starts when the tool is asked to start the work (mongocdc: ``wiring.connector`` is
    entered; Debezium: its connector is created or resumed through Connect's REST API), so it
    includes the tool connecting to MongoDB and Kafka but not the start of its process (Python's
    imports, the Connect JVM), which is reported apart. It ends at the broker's append time
    (``LogAppendTime``) of the last record.
    """

    items: int
    seconds: float
    """Start request → the broker's append of the last record."""
    first_record_s: float
    """Start request → the broker's append of the first record."""
    steady_rate: float
    """Records per second between the first record's append and the last's."""
    cpu: dict[str, float]
    """CPU-seconds over the run: ``tool`` (mongocdc's process, the Connect JVM), MongoDB server, Kafka broker."""
    peak_rss_mb: float
    """The tool process's peak resident set during the run (``VmHWM`` after resetting it)."""

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class Timing:
    """One measured run."""

    items: int
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)
    """Optional breakdown (seconds) of where the run spent its time."""
    peer: PeerRun | None = None
    """The same run measured as the comparison with Debezium measures it (``--peer debezium``)."""

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


def create_topics(bootstrap: str, topics: list[str], partitions: int, *, append_time: bool = True) -> None:
    """Create ``topics`` up front, so neither side pays for auto-creation in its timed run.

    The broker stamps every record with its append time (``LogAppendTime``), so a run's end can be
    read from the topic afterwards instead of polling it tightly while the run competes for the CPU.
    ``append_time=False`` keeps the producers' timestamps (a topic whose records are the input).
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"message.timestamp.type": "LogAppendTime"} if append_time else {}
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=partitions, replication_factor=1, config=config) for t in topics]
    )
    for topic, future in futures.items():
        try:
            future.result(30)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
        _wait_for_leaders(admin, topic, partitions)


def _wait_for_leaders(admin: AdminClient, topic: str, partitions: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {topic} has no leaders after {timeout:.0f} s")


_NOT_READY = frozenset(
    {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART}
)
"""Errors a partition answers with for a moment after its topic was created or its leader moved."""


class EndOffsets:
    """A topic's end offsets (records Kafka has acknowledged, with one broker and acks=all) and append times."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._topic = topic
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        meta = self._consumer.list_topics(topic, timeout=10).topics[topic]
        self._partitions = [TopicPartition(topic, p) for p in sorted(meta.partitions)]

    def ends(self) -> dict[int, int]:
        return {tp.partition: self._watermarks(tp)[1] for tp in self._partitions}

    def _watermarks(self, tp: TopicPartition, attempts: int = 20) -> tuple[int, int]:
        """A partition's low and high watermarks, asked again while the broker says it is not (yet) its leader."""
        for attempt in range(attempts):
            try:
                low, high = self._consumer.get_watermark_offsets(tp, timeout=10, cached=False)
                return low, high
            except KafkaException as exc:
                retriable = exc.args[0].code() in _NOT_READY if exc.args else False
                if not retriable or attempt == attempts - 1:
                    raise
                time.sleep(0.1)
        raise AssertionError("unreachable")

    def total(self) -> int:
        return sum(self.ends().values())

    def last_append_time(self, timeout: float = 30.0, tail: int = 64) -> float:
        """When the broker appended the topic's newest record (epoch seconds, from ``LogAppendTime``).

        Each partition's last ``tail`` offsets are read to the end of the log: in a topic written in transactions
        the last offsets are commit markers, which are never delivered.
        """
        starts = {tp.partition: (low, high) for tp in self._partitions for low, high in [self._watermarks(tp)]}
        assign = [
            TopicPartition(self._topic, p, max(low, high - tail)) for p, (low, high) in starts.items() if high > low
        ]
        if not assign:
            raise RuntimeError(f"{self._topic} is empty")
        self._consumer.assign(assign)
        newest = 0
        pending = {tp.partition for tp in assign}
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read the end of {self._topic}")
            msg = self._consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                continue
            kind, stamp = msg.timestamp()
            if kind != TIMESTAMP_LOG_APPEND_TIME:
                raise RuntimeError(f"{self._topic} does not use LogAppendTime")
            newest = max(newest, stamp)
        self._consumer.unassign()
        return newest / 1000

    def first_append_time(self, timeout: float = 30.0) -> float:
        """When the broker appended the topic's oldest record (epoch seconds, from ``LogAppendTime``)."""
        starts: dict[int, int] = {}
        for tp in self._partitions:
            low, high = self._watermarks(tp)
            if high > low:
                starts[tp.partition] = low
        return min(self._append_times(starts, timeout).values()) / 1000

    def _append_times(self, offsets: dict[int, int], timeout: float) -> dict[int, int]:
        """The append time (epoch ms) of the record at each partition's given offset."""
        if not offsets:
            raise RuntimeError(f"{self._topic} is empty")
        self._consumer.assign([TopicPartition(self._topic, p, offset) for p, offset in offsets.items()])
        stamps: dict[int, int] = {}
        deadline = time.monotonic() + timeout
        while len(stamps) < len(offsets):
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read the records at {offsets} of {self._topic}")
            msg = self._consumer.poll(0.5)
            partition = None if msg is None or msg.error() else msg.partition()
            if msg is None or partition is None or msg.offset() != offsets[partition]:
                continue
            kind, stamp = msg.timestamp()
            if kind != TIMESTAMP_LOG_APPEND_TIME:
                raise RuntimeError(f"{self._topic} does not use LogAppendTime")
            stamps[partition] = stamp
        self._consumer.unassign()
        return stamps

    def wait_for(
        self,
        count: int,
        *,
        timeout: float,
        interval: float = 0.1,
        failed: Callable[[], bool] = lambda: False,
        delivered: Callable[[], int] | None = None,
    ) -> float:
        """Block until the topic holds ``count`` records (or ``delivered()`` says so: the producer's count, for a
        topic written in transactions, whose offsets count commit markers too); returns ``time.perf_counter()``
        when seen.

        Polls every ``interval`` seconds only: the exact end comes from :meth:`last_append_time`.
        """
        deadline = time.monotonic() + timeout
        while True:
            if (delivered() if delivered is not None else self.total()) >= count:
                return time.perf_counter()
            if failed():
                raise RuntimeError("the producing side failed before the topic was complete")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the topic holds {self.total()} records, not {count}, after {timeout:.0f} s")
            time.sleep(interval)

    def close(self) -> None:
        self._consumer.close()


@contextlib.contextmanager
def kafka_broker(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """The bootstrap servers (``--bootstrap-servers``, or a broker started here) and what they are."""
    if args.bootstrap_servers:
        yield args.bootstrap_servers, "given"
        return
    from tests.services.kafka import KAFKA_VERSION, KafkaBroker

    log.info("starting Kafka %s (C2 JIT on, for steady-state throughput)", KAFKA_VERSION)
    with KafkaBroker(num_partitions=args.partitions, jvm_options=["-XX:TieredStopAtLevel=4"]) as broker:
        CPU.watch("Kafka broker", broker.pid)
        yield broker.bootstrap, f"Apache Kafka {KAFKA_VERSION} (KRaft, 1 broker)"


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def summarise(timings: list[Timing]) -> dict[str, Any]:
    rates = [t.rate for t in timings]
    phases: dict[str, float] = {}
    for t in timings:
        for name, seconds in t.phases.items():
            phases[name] = phases.get(name, 0.0) + seconds / len(timings)
    cpu: dict[str, float] = {}
    if timings and "cpu: this process" in timings[0].phases:
        for name in timings[0].phases:
            if name.startswith("cpu: "):
                label = "process" if name == "cpu: this process" else name[5:]
                cpu[label] = round(median([t.phases.get(name, 0.0) for t in timings]), 3)
        totals = [sum(v for k, v in t.phases.items() if k.startswith("cpu: ")) for t in timings]
        cpu["total"] = round(median(totals), 3)
    return {
        "items": timings[0].items if timings else 0,
        "runs": len(timings),
        "rate_median": median(rates) if rates else 0.0,
        "rate_best": max(rates) if rates else 0.0,
        "rates": [round(r, 1) for r in rates],
        "seconds": [round(t.seconds, 3) for t in timings],
        "phases_mean_s": {k: round(v, 3) for k, v in phases.items() if not k.startswith("cpu: ")},
        "cpu_median_s": cpu,
        "cpu_s": [{k[5:]: round(v, 3) for k, v in t.phases.items() if k.startswith("cpu: ")} for t in timings],
    }


def comparison(mine: list[Timing], bare: list[Timing], target: float) -> dict[str, Any]:
    """Both sides' summaries and the ratio of their median rates, against ``target``.

    ``cpu_ratio``: the baseline's CPU-seconds per run over mongocdc's (medians), for this process
    alone and with the servers' (MongoDB, Kafka) added: 1.0 means mongocdc used no more CPU.
    """
    m, b = summarise(mine), summarise(bare)
    ratio = float(m["rate_median"]) / float(b["rate_median"]) if b["rate_median"] else 0.0
    met = ratio >= target
    cpu_ratio: dict[str, float] = {}
    for key in ("process", "total"):
        mine_cpu, bare_cpu = m["cpu_median_s"].get(key), b["cpu_median_s"].get(key)
        if mine_cpu and bare_cpu:
            cpu_ratio[key] = round(bare_cpu / mine_cpu, 3)
    return {
        "mongocdc": m,
        "baseline": b,
        "ratio": round(ratio, 3),
        "cpu_ratio": cpu_ratio,
        "target_ratio": target,
        "target_met": met,
    }


def cpu_line(result: dict[str, Any]) -> str:
    """CPU-seconds per run (medians) of both sides, per process, and their ratios."""

    def side(summary: dict[str, Any]) -> str:
        cpu = summary["cpu_median_s"]
        parts = [
            f"{'bench process' if name == 'process' else name} {seconds:.2f}"
            for name, seconds in cpu.items()
            if name != "total"
        ]
        return f"{cpu.get('total', 0.0):.2f} ({', '.join(parts)})" if parts else "n/a"

    ratios = result.get("cpu_ratio", {})
    shown = ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
    return (
        f"  CPU-seconds per run (median): mongocdc {side(result['mongocdc'])}; baseline {side(result['baseline'])}"
        + (f"; baseline/mongocdc: {shown}" if shown else "")
    )


def ratio_row(label: str, result: dict[str, Any]) -> str:
    """A row of the report table: the label, both median rates, the ratio, the target, met or not."""
    mine, bare = result["mongocdc"]["rate_median"], result["baseline"]["rate_median"]
    return (
        f"{label:<34}{mine:>14,.0f}{bare:>14,.0f}{result['ratio']:>8.2f}{'>= ' + str(result['target_ratio']):>9}  "
        f"{'met' if result['target_met'] else 'NOT met'}"
    )


def settings_overrides(
    *,
    uri: str,
    bootstrap: str,
    name: str,
    prefix: str,
    namespace: str,
    offsets_file: str,
    extra: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """mongocdc properties for one benchmark run: one collection, its own connector name, prefix and offsets."""
    return {
        "name": name,
        "mongodb.connection.string": uri,
        "kafka.bootstrap.servers": bootstrap,
        "topic.prefix": prefix,
        "capture.scope": "collection",
        "capture.target": namespace,
        "offset.storage.file.filename": offsets_file,
        "connect.max.attempts": 3,
        **(extra or {}),
    }


TRANSFORM_CHAINS: dict[str, dict[str, str]] = {
    "unwrap": {"type": "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"},
}
"""Single message transforms ``--transforms`` can put on both sides, by alias: each alias's
``transforms.<alias>.*`` properties (Debezium's and Kafka Connect's defaults for the rest)."""


def transform_chain(aliases: Sequence[str]) -> dict[str, str]:
    """The Kafka Connect properties of a chain of ``TRANSFORM_CHAINS`` aliases, in order (``{}``: none).

    The same properties go into the Debezium connector's configuration and mongocdc's settings (where they
    make ``KafkaSink.produce`` run every record through ``events.connect.chain.RecordPipeline``).
    """
    if not aliases:
        return {}
    chain = {"transforms": ",".join(aliases)}
    for alias in aliases:
        chain.update({f"transforms.{alias}.{key}": value for key, value in TRANSFORM_CHAINS[alias].items()})
    return chain


PEER_METRICS = (
    # key, label, higher is better
    ("rate", "events/s overall", True),
    ("steady_rate", "events/s steady", True),
    ("first_record_s", "first record (s)", False),
    ("cpu_tool", "CPU-s tool", False),
    ("cpu_mongodb", "CPU-s MongoDB server", False),
    ("cpu_kafka", "CPU-s Kafka broker", False),
    ("peak_rss_mb", "peak RSS (MB)", False),
)
AHEAD_ON = ("rate", "first_record_s", "cpu_tool", "cpu_mongodb")
"""Where the issue asks mongocdc to be ahead of Debezium."""


def _peer_values(run: PeerRun) -> dict[str, float]:
    return {
        "rate": run.rate,
        "steady_rate": run.steady_rate,
        "first_record_s": run.first_record_s,
        "cpu_tool": run.cpu.get("tool", 0.0),
        "cpu_mongodb": run.cpu.get("MongoDB server", 0.0),
        "cpu_kafka": run.cpu.get("Kafka broker", 0.0),
        "peak_rss_mb": run.peak_rss_mb,
    }


def _peer_side(timings: list[Timing]) -> dict[str, Any]:
    runs = [_peer_values(t.peer) for t in timings if t.peer is not None]
    return {
        "runs": len(runs),
        "median": {key: round(median([r[key] for r in runs]), 3) for key, _, _ in PEER_METRICS} if runs else {},
        "per_run": [{key: round(value, 3) for key, value in r.items()} for r in runs],
    }


def peer_comparison(
    mine: list[Timing], theirs: list[Timing], warm: dict[str, Timing] | None, expected: int
) -> dict[str, Any]:
    """mongocdc against Debezium, both measured as ``PeerRun``: medians, per run, the warm-up apart, who is ahead.

    A Debezium run that delivered another number of records than ``expected`` (a snapshot that failed
    and started again re-sends what it had sent) is not counted; ``invalid_runs`` lists what it delivered.
    """
    valid = [t for t in theirs if t.items == expected]
    m, d = _peer_side(mine), _peer_side(valid)
    d["invalid_runs"] = [t.items for t in theirs if t.items != expected]
    ahead = {}
    for key, _, higher in PEER_METRICS:
        a, b = m["median"].get(key), d["median"].get(key)
        if a is not None and b is not None:
            ahead[key] = a > b if higher else a < b
    return {
        "mongocdc": m,
        "debezium": d,
        "warmup": None
        if warm is None
        else {side: _peer_values(t.peer) for side, t in warm.items() if side in ("mongocdc", "debezium") and t.peer},
        "mongocdc_ahead": ahead,
        "mongocdc_ahead_on_all_targets": all(ahead.get(key, False) for key in AHEAD_ON),
    }


def peer_lines(label: str, result: dict[str, Any]) -> list[str]:
    """The comparison with Debezium of one benchmark, as table rows (medians), the warm-up apart."""
    m, d = result["mongocdc"]["median"], result["debezium"]["median"]
    lines = []
    invalid = result["debezium"].get("invalid_runs")
    if invalid:
        lines.append(
            f"  {label:<10}Debezium runs not counted: {len(invalid)}, which delivered {invalid} records "
            "(its snapshot failed and started again; see the Connect log errors in the progress lines)"
        )
    if not d:
        return lines
    for key, name, _ in PEER_METRICS:
        a, b = m[key], d[key]
        fmt = "{:>12,.0f}" if key in ("rate", "steady_rate") else "{:>12,.2f}"
        verdict = "mongocdc ahead" if result["mongocdc_ahead"][key] else "Debezium ahead"
        target = " *" if key in AHEAD_ON else ""
        lines.append(f"  {label:<10}{name:<24}{fmt.format(a)}{fmt.format(b)}  {verdict}{target}")
    warm = result.get("warmup")
    if warm:
        parts = [
            f"{side} {v['rate']:,.0f}/s overall, first record {v['first_record_s']:.2f} s, "
            f"CPU-s tool {v['cpu_tool']:.2f}"
            for side, v in warm.items()
        ]
        lines.append(f"  {'':<10}warm-up (not counted): " + "; ".join(parts))
    return lines
