"""The replication benchmark: ``mongocdc replicate``'s copy loop against a plain consume-and-produce loop.

Two Kafka brokers of its own (source and target, full C2 JIT). ``--replication-records`` records of
about 1 KB (a key, two headers, a timestamp) are produced once to a source topic; then each side
copies the whole topic to a fresh, pre-created target topic, in the same process, alternating which
side goes first, after an uncounted warm-up round.

* **baseline**: a group-less ``Consumer`` assigned every partition from the beginning (with the
  replicator's consumer settings, ``COPY_CONSUMER_DEFAULTS``), ``consume`` in batches of 2048,
  ``Producer.produce`` of key, value, headers and timestamp to the same partition (mongocdc's
  producer settings: idempotent, ``acks=all``, ``linger.ms=5``), ``poll(0)`` per batch, ``flush()``
  at the end. No provenance, no loop check, no offset syncs, no commits.
* **mongocdc**: ``wiring.replicator`` from settings (default intervals: commits and syncs every
  second, checkpoints every ten), started outside the clock (connecting, creating the internal
  topics); the clock runs from ``run()``. The provenance header, the loop check, per-record delivery reports,
  frontier tracking, offset syncs and source commits are all inside.

Both clocks end at the broker's append time of the last copy (the target topics use
``LogAppendTime``), read after the run, so the benchmark's main thread polls for completion only
every 100 ms and hardly competes with the copy loop for the GIL.

Then, on the same source topic and brokers, ``mongocdc replicate`` against Apache Kafka MirrorMaker 2
(``bench/mirrormaker.py``): throughput, CPU-seconds and the re-reads of a consumer group moved by each
(``--no-mirrormaker`` skips it).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.common import EndOffsets, Timing, baseline_producer_config, comparison, create_topics, median, ratio_row
from mongocdc.replication.mirror import COPY_CONSUMER_DEFAULTS

log = logging.getLogger("bench.replication")

TARGET_RATIO = 0.8
VALUE_BYTES = 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replication-records", type=int, default=100_000, help="records per replication run (100000)")
    parser.add_argument(
        "--no-mirrormaker",
        action="store_true",
        help="replication: skip the comparison with MirrorMaker 2 (fetched from Maven Central the first time)",
    )
    parser.add_argument(
        "--mm2-group-at",
        type=float,
        default=0.4,
        help="replication: where the failed-over group committed on each source partition (0.4 of it)",
    )
    parser.add_argument(
        "--target-bootstrap-servers",
        default=None,
        help="replication: use this Kafka cluster as the target (with --bootstrap-servers as the source)",
    )


@contextlib.contextmanager
def clusters(args: argparse.Namespace) -> Iterator[tuple[str, str, str]]:
    """Source and target bootstrap servers: the ones given, or two brokers started here."""
    if args.bootstrap_servers and args.target_bootstrap_servers:
        yield args.bootstrap_servers, args.target_bootstrap_servers, "given"
        return
    from tests.services.kafka import KAFKA_VERSION, KafkaBroker

    log.info("starting two Kafka %s brokers (C2 JIT on)", KAFKA_VERSION)
    with (
        KafkaBroker(num_partitions=args.partitions, jvm_options=["-XX:TieredStopAtLevel=4"]) as source,
        KafkaBroker(num_partitions=args.partitions, jvm_options=["-XX:TieredStopAtLevel=4"]) as target,
    ):
        yield source.bootstrap, target.bootstrap, f"Apache Kafka {KAFKA_VERSION} (KRaft), two 1-broker clusters"


def _fill(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer(baseline_producer_config(bootstrap))
    value = b"v" * VALUE_BYTES
    now = int(time.time() * 1000)
    for i in range(count):
        while True:
            try:
                producer.produce(
                    topic,
                    value=value,
                    key=f"key-{i}".encode(),
                    headers=[("trace", str(i).encode()), ("source", b"bench")],
                    timestamp=now - count + i,
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    producer.flush()


def plain_loop(source: str, target: str, topic: str, target_topic: str, count: int, partitions: int) -> Timing:
    """The baseline: consume, produce the same record to the same partition, flush at the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": source,
            "group.id": f"bench-plain-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **COPY_CONSUMER_DEFAULTS,
        }
    )
    producer = Producer(baseline_producer_config(target))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    done = 0
    started_wall, cpu = time.time(), time.process_time()
    while done < count:
        for msg in consumer.consume(2048, 0.5):
            if msg.error() is not None:
                continue
            kind, ts = msg.timestamp()
            while True:
                try:
                    producer.produce(
                        target_topic,
                        msg.value(),
                        msg.key(),
                        msg.partition(),
                        timestamp=ts if kind else 0,
                        headers=msg.headers(),
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            done += 1
        producer.poll(0)
    producer.flush()
    cpu = time.process_time() - cpu
    consumer.close()
    ends = EndOffsets(target, target_topic)
    try:
        seconds = ends.last_append_time() - started_wall
    finally:
        ends.close()
    return Timing(done, seconds, {"process_cpu": cpu})


def mongocdc_loop(source: str, target: str, topic: str, suffix: str, count: int) -> Timing:
    """``wiring.replicator`` from settings; the clock runs from ``run()`` until the target appended every record."""
    from mongocdc import wiring
    from mongocdc.config import load_settings

    settings = load_settings(
        None,
        {},
        {
            "src.kafka.bootstrap.servers": source,
            "dest.kafka.bootstrap.servers": target,
            "topics": topic,
            "topic.rename.format": "${topic}." + suffix,
            "name": f"bench-repl-{uuid.uuid4().hex[:8]}",
        },
    )
    replicator = wiring.replicator(settings)
    replicator.start()
    stop = threading.Event()
    ends = EndOffsets(target, f"{topic}.{suffix}")
    thread = threading.Thread(target=replicator.run, args=(stop,), daemon=True)
    started_wall, cpu = time.time(), time.process_time()
    thread.start()
    try:
        ends.wait_for(count, timeout=600, failed=lambda: not thread.is_alive())
        cpu = time.process_time() - cpu
        seconds = ends.last_append_time() - started_wall
    finally:
        stop.set()
        thread.join(60)
        replicator.close()
        ends.close()
    return Timing(count, seconds, {"process_cpu": cpu})


def bench_replication(args: argparse.Namespace) -> dict[str, Any]:
    count, partitions = args.replication_records, args.partitions
    with clusters(args) as (source, target, kafka):
        topic = f"bench-repl-{uuid.uuid4().hex[:8]}"
        create_topics(source, [topic], partitions, append_time=False)
        started = time.perf_counter()
        _fill(source, topic, count)
        log.info("replication: %d records produced to the source in %.1f s", count, time.perf_counter() - started)
        rounds = (["warmup"] if args.warmup else []) + [str(rep) for rep in range(args.repeat)]
        mine: list[Timing] = []
        bare: list[Timing] = []
        for index, tag in enumerate(rounds):
            plain_topic = f"{topic}.plain{tag}"
            create_topics(target, [plain_topic, f"{topic}.m{tag}"], partitions)

            def run_plain(plain_topic: str = plain_topic) -> Timing:
                return plain_loop(source, target, topic, plain_topic, count, partitions)

            def run_mine(tag: str = tag) -> Timing:
                return mongocdc_loop(source, target, topic, f"m{tag}", count)

            pair: list[tuple[str, Callable[[], Timing]]] = [("baseline", run_plain), ("mongocdc", run_mine)]
            for name, fn in pair if index % 2 == 0 else reversed(pair):
                timing = fn()
                log.info(
                    "replication %s run %s: %d records in %.2f s = %.0f records/s%s",
                    name,
                    tag,
                    timing.items,
                    timing.seconds,
                    timing.rate,
                    " (warm-up, not counted)" if tag == "warmup" else "",
                )
                if tag != "warmup":
                    (bare if name == "baseline" else mine).append(timing)
        mirrormaker = None
        if not getattr(args, "no_mirrormaker", False):
            from bench.mirrormaker import bench_mirrormaker

            mirrormaker = bench_mirrormaker(source, target, topic, count, partitions, args.mm2_group_at)
    return {
        "mirrormaker": mirrormaker,
        "records": count,
        "value_bytes": VALUE_BYTES,
        "partitions": partitions,
        "kafka": kafka,
        "cpus": os.cpu_count(),
        **comparison(mine, bare, TARGET_RATIO),
        "median_seconds": {
            "mongocdc": median([t.seconds for t in mine]),
            "baseline": median([t.seconds for t in bare]),
        },
    }


def render(result: dict[str, Any]) -> list[str]:
    from bench.mirrormaker import render as render_mirrormaker

    extra = render_mirrormaker(result["mirrormaker"], result["records"]) if result.get("mirrormaker") else []
    return [
        ratio_row(f"replication ({result['records']:,} x 1 KB, records/s)", result),
        f"  replication runs (records/s): mongocdc {result['mongocdc']['rates']}  "
        f"baseline {result['baseline']['rates']}",
        f"  process CPU per run (mean s): mongocdc {result['mongocdc']['phases_mean_s'].get('process_cpu')}  "
        f"baseline {result['baseline']['phases_mean_s'].get('process_cpu')}",
    ] + extra
