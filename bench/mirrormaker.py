"""``mongocdc replicate`` side by side with Apache Kafka MirrorMaker 2, on the same records in the same run.

MirrorMaker 2 is ``connect-mirror`` from Maven Central (``bench/mm2-pom.xml``, the test broker's Kafka
version), run in its dedicated mode (``org.apache.kafka.connect.mirror.MirrorMaker``) with its defaults
and short intervals for checkpoints and group offset syncs (1 s). Both tools run as processes of their
own, one after the other, each copying the same source topic (``--replication-records`` records of
about 1 KB) to a fresh, pre-created target topic (``LogAppendTime``, the same partition count):

* **records/s**: records over the time between the broker's append of the first copy and of the last
  (start-up is not counted for either tool);
* **CPU-seconds**: the tool's process CPU (``/proc``) over the same span, sampled every 100 ms;
* **failover**: before either tool starts, a consumer group commits offsets at ``--mm2-group-at``
  (40 %) of each source partition. mongocdc moves it with ``failover translate --apply`` (source
  reachable), MirrorMaker 2 with its own group offset sync (``sync.group.offsets.enabled``). The group
  then reads the target topic to its end (``auto.offset.reset=latest``, the Java default): records it
  had consumed on the source read again (``re-read``), records it had not consumed and never read
  (``missing``), and, for mongocdc, the re-reads its report announced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from bench.common import EndOffsets, create_topics

log = logging.getLogger("bench.mirrormaker")

REPO = Path(__file__).resolve().parents[1]
POM = Path(__file__).with_name("mm2-pom.xml")
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
SOURCE_ALIAS = "src"
_STAMP = ".mongocdc-complete"


def kafka_version() -> str:
    node = (
        ElementTree.parse(POM)
        .getroot()
        .find("m:properties/m:kafka.version", {"m": "http://maven.apache.org/POM/4.0.0"})
    )
    if node is None or not node.text:
        raise RuntimeError(f"{POM} has no <kafka.version>")
    return node.text.strip()


def ensure_classpath() -> Path:
    """MirrorMaker 2's jars (``connect-mirror`` and its runtime dependencies), resolved with Maven once."""
    version = kafka_version()
    lib = REPO / ".cache" / "mm2" / version / "lib"
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()
    stamp = lib / _STAMP
    if stamp.is_file() and stamp.read_text().strip() == digest:
        return lib
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is needed to fetch MirrorMaker 2 (connect-mirror) from Maven Central")
    lib.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix="lib.", dir=lib.parent))
    log.info("fetching MirrorMaker 2 (connect-mirror %s) from Maven Central", version)
    result = subprocess.run(
        ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime",
         f"-DoutputDirectory={partial}"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"Maven failed to resolve connect-mirror {version}:\n{result.stdout[-3000:]}")
    (partial / _STAMP).write_text(digest)
    if lib.exists():
        shutil.rmtree(lib)
    partial.rename(lib)
    return lib


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its threads so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class ToolRun:
    """One tool's copy of the topic and the failover of the group."""

    tool: str
    records: int
    seconds: float
    cpu_seconds: float
    reread: int = 0
    missing: int = 0
    reported: int | None = None  # what the tool said the group would read again (mongocdc's report)
    notes: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "records_per_s": round(self.rate)}


def _append_span(bootstrap: str, topic: str) -> float:
    """Seconds between the broker's append of the topic's first record and of its last (``LogAppendTime``)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        wanted: dict[tuple[int, int], None] = {}
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > low:
                wanted[(p, low)] = None
                wanted[(p, high - 1)] = None
        stamps: list[int] = []
        for p, offset in wanted:
            consumer.assign([TopicPartition(topic, p, offset)])
            deadline = time.monotonic() + 30
            while True:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None and msg.offset() == offset:
                    stamps.append(msg.timestamp()[1])
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"could not read {topic}[{p}]@{offset}")
        return (max(stamps) - min(stamps)) / 1000
    finally:
        consumer.close()


def _measure_copy(proc: subprocess.Popen[bytes], target: str, target_topic: str, count: int) -> tuple[float, float]:
    """Wait until ``target_topic`` holds ``count`` records; the append span and the process CPU meanwhile."""
    ends = EndOffsets(target, target_topic)
    try:
        deadline = time.monotonic() + 900
        cpu_start: float | None = None
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the copying process exited with {proc.returncode}")
            try:
                total = ends.total()
            except KafkaException:  # a leader moving under the new topic: ask again
                time.sleep(0.1)
                continue
            if total and cpu_start is None:
                cpu_start = cpu_seconds(proc.pid)
            if total >= count:
                assert cpu_start is not None
                cpu = cpu_seconds(proc.pid) - cpu_start
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target_topic} holds {total} of {count} records")
            time.sleep(0.1)
    finally:
        ends.close()
    return _append_span(target, target_topic), cpu


def _stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(30)


def _commit_group(bootstrap: str, group: str, topic: str, fraction: float) -> dict[int, int]:
    """The group commits ``fraction`` of each partition (as if it had read that far)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        offsets = {}
        for p in partitions:
            high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            offsets[p] = int(high * fraction)
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
        return offsets
    finally:
        consumer.close()


def _source_positions(bootstrap: str, topic: str) -> dict[bytes, tuple[int, int]]:
    """Where each key is on the source (the workload's keys are unique)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})  # fmt: skip
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        found: dict[bytes, tuple[int, int]] = {}
        done: set[int] = set()
        while len(done) < len(partitions):
            for msg in consumer.consume(2048, 1.0):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        done.add(msg.partition())
                    continue
                found[msg.key()] = (msg.partition(), msg.offset())
        return found
    finally:
        consumer.close()


def _read_as_group(bootstrap: str, group: str, topic: str) -> list[bytes]:
    """The keys the group reads on ``topic`` from its committed offsets to the end (nothing committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "latest", "enable.partition.eof": True})  # fmt: skip
    consumer.subscribe([topic])
    keys: list[bytes] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            for msg in consumer.consume(2048, 0.5):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(msg.partition())
                    continue
                eof.discard(msg.partition())
                keys.append(msg.key())
            assignment = {tp.partition for tp in consumer.assignment()}
            if assignment and eof >= assignment:
                return keys
        raise TimeoutError(f"group {group} did not reach the end of {topic}")
    finally:
        consumer.close()


def _failover_counts(
    keys: list[bytes], positions: dict[bytes, tuple[int, int]], committed: dict[int, int]
) -> tuple[int, int]:
    """(re-read, missing) of a group that had consumed below ``committed`` and then read ``keys``."""
    seen: set[bytes] = set()
    reread = 0
    for key in keys:
        partition, offset = positions[key]
        if offset < committed[partition] or key in seen:
            reread += 1
        seen.add(key)
    needed = {key for key, (p, o) in positions.items() if o >= committed[p]}
    return reread, len(needed - seen)


def _group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = [ConsumerGroupTopicPartitions(group)]
    result = admin.list_consumer_group_offsets(request, request_timeout=10)[group].result()
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or [] if tp.offset >= 0}


def run_mongocdc(source: str, target: str, topic: str, count: int, partitions: int, group: str,
                 work: Path) -> ToolRun:  # fmt: skip
    target_topic = f"{topic}.mongocdc"
    create_topics(target, [target_topic], partitions)
    config = work / "mongocdc.yaml"
    config.write_text("emit.checkpoints.interval.seconds: 1\nrefresh.topics.interval.seconds: 5\n")
    name = f"bench-mm2cmp-{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONGOCDC_")}
    command = [sys.executable, "-m", "mongocdc", "-c", str(config), "replicate", "--source", source,
               "--target", target, "--topics", topic, "--rename-format", "${topic}.mongocdc", "--groups", group,
               "--name", name, "--status-interval", "1000"]  # fmt: skip
    with open(work / "mongocdc.log", "wb") as out:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=out, env=env, cwd=REPO)
        try:
            seconds, cpu = _measure_copy(proc, target, target_topic, count)
            _wait_for_checkpoint(target, topic, group, proc)
        finally:
            code = _stop(proc)
    if code != 0:
        raise RuntimeError(f"mongocdc replicate exited with {code}: {(work / 'mongocdc.log').read_text()[-2000:]}")
    result = subprocess.run(
        [sys.executable, "-m", "mongocdc", "-c", str(config), "failover", "translate", "--group", group,
         "--source", source, "--target", target, "--apply", "--output", "json"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"failover translate failed: {result.stderr[-2000:]}")
    report = json.loads(result.stdout)
    reported = [row["again"] for row in report["partitions"]]
    run = ToolRun("mongocdc", count, seconds, cpu)
    run.reported = None if any(a is None for a in reported) else sum(reported)
    run.notes = sorted({row["method"] for row in report["partitions"]})
    return run


def _wait_for_checkpoint(target: str, topic: str, group: str, proc: subprocess.Popen[bytes]) -> None:
    """Until the checkpoints topic on the target holds a checkpoint of ``group`` for every partition of ``topic``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mongocdc replicate exited with {proc.returncode}")
        found = {
            json.loads(m.key())["partition"]
            for m in _read_compacted(target, "mongocdc-checkpoints.internal")
            if m.value() is not None
            and json.loads(m.key()).get("group") == group
            and json.loads(m.key()).get("topic") == topic
        }
        if found and len(found) == _partition_count(target, f"{topic}.mongocdc"):
            return
        time.sleep(0.5)
    raise TimeoutError(f"no checkpoint of {group} on the target")


def _partition_count(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=10).topics.get(topic)
    return len(meta.partitions) if meta is not None and meta.error is None else 0


def _read_compacted(bootstrap: str, topic: str) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})  # fmt: skip
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        records: list[Any] = []
        done: set[int] = set()
        deadline = time.monotonic() + 30
        while len(done) < len(meta.partitions) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        done.add(msg.partition())
                    continue
                records.append(msg)
        return records
    finally:
        consumer.close()


def mm2_properties(source: str, target: str, topic: str, group: str) -> str:
    flow = f"{SOURCE_ALIAS}->dst"
    lines = {
        "clusters": f"{SOURCE_ALIAS}, dst",
        f"{SOURCE_ALIAS}.bootstrap.servers": source,
        "dst.bootstrap.servers": target,
        f"{flow}.enabled": "true",
        f"dst->{SOURCE_ALIAS}.enabled": "false",
        f"{flow}.topics": topic,
        f"{flow}.groups": group,
        f"{flow}.emit.heartbeats.enabled": "false",
        f"{flow}.emit.checkpoints.interval.seconds": "1",
        f"{flow}.sync.group.offsets.enabled": "true",
        f"{flow}.sync.group.offsets.interval.seconds": "1",
        f"{flow}.refresh.groups.interval.seconds": "1",
        f"{flow}.sync.topic.configs.enabled": "false",
        f"{flow}.sync.topic.acls.enabled": "false",
        "tasks.max": "1",
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
    }
    return "".join(f"{k} = {v}\n" for k, v in lines.items())


def run_mm2(source: str, target: str, topic: str, count: int, partitions: int, group: str, work: Path,
            committed: dict[int, int]) -> ToolRun:  # fmt: skip
    lib = ensure_classpath()
    target_topic = f"{SOURCE_ALIAS}.{topic}"  # DefaultReplicationPolicy
    create_topics(target, [target_topic], partitions)
    properties = work / "mm2.properties"
    properties.write_text(mm2_properties(source, target, topic, group))
    log4j = work / "log4j2.properties"
    log4j.write_text(
        "rootLogger.level = WARN\nrootLogger.appenderRef.file.ref = file\nappender.file.type = File\n"
        f"appender.file.name = file\nappender.file.fileName = {work / 'mm2.log'}\n"
        "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = %d %p %m (%c)%n\n"
    )
    java = shutil.which("java") or "java"
    command = [java, "-Xms256m", "-Xmx1g", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{lib}/*", MM2_MAIN,
               str(properties)]  # fmt: skip
    with open(work / "mm2.out", "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=work)
        try:
            seconds, cpu = _measure_copy(proc, target, target_topic, count)
            # its group offset sync: the group's offsets on the target for every partition of the copy
            deadline = time.monotonic() + 180
            while True:
                synced = {p for (t, p) in _group_offsets(target, group) if t == target_topic}
                if len(synced) == len(committed):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"MirrorMaker 2 synced offsets of {group} for {sorted(synced)} only")
                time.sleep(0.5)
        finally:
            _stop(proc)
    return ToolRun("MirrorMaker 2", count, seconds, cpu)


def bench_mirrormaker(source: str, target: str, topic: str, count: int, partitions: int,
                      group_at: float) -> dict[str, Any]:  # fmt: skip
    """Both tools over the already filled ``topic`` on ``source``; one run each."""
    group = f"bench-failover-{uuid.uuid4().hex[:6]}"
    committed = _commit_group(source, group, topic, group_at)
    positions = _source_positions(source, topic)
    runs: list[ToolRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-mm2-") as tmp:
        work = Path(tmp)
        mine = run_mongocdc(source, target, topic, count, partitions, group, work)
        mine.reread, mine.missing = _failover_counts(_read_as_group(target, group, f"{topic}.mongocdc"), positions,
                                                     committed)  # fmt: skip
        runs.append(mine)
        log.info("mongocdc: %.0f records/s, %.2f CPU-s, re-read %d (reported %s), missing %d", mine.rate,
                 mine.cpu_seconds, mine.reread, mine.reported, mine.missing)  # fmt: skip
        theirs = run_mm2(source, target, topic, count, partitions, group, work, committed)
        theirs.reread, theirs.missing = _failover_counts(
            _read_as_group(target, group, f"{SOURCE_ALIAS}.{topic}"), positions, committed
        )
        runs.append(theirs)
        log.info("MirrorMaker 2: %.0f records/s, %.2f CPU-s, re-read %d, missing %d", theirs.rate,
                 theirs.cpu_seconds, theirs.reread, theirs.missing)  # fmt: skip
    return {
        "version": kafka_version(),
        "group_at": group_at,
        "committed": committed,
        "runs": [run.to_dict() for run in runs],
    }


def render(result: dict[str, Any], records: int) -> list[str]:
    runs = {run["tool"]: run for run in result["runs"]}
    mine, theirs = runs["mongocdc"], runs["MirrorMaker 2"]
    speedup = mine["records_per_s"] / max(1, theirs["records_per_s"])
    reported = "?" if mine["reported"] is None else f"{mine['reported']:,}"
    return [
        f"replication vs MirrorMaker 2 {result['version']} ({records:,} x 1 KB): records/s mongocdc "
        f"{mine['records_per_s']:,} vs {theirs['records_per_s']:,} ({speedup:.1f}x), "
        f"CPU-s {mine['cpu_seconds']:.2f} vs {theirs['cpu_seconds']:.2f}",
        f"  failover of a group at {result['group_at']:.0%}: re-read mongocdc {mine['reread']:,} (reported "
        f"{reported}) vs MirrorMaker 2 {theirs['reread']:,}; missing {mine['missing']} vs {theirs['missing']}",
    ]
