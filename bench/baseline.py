"""The bare baselines: pymongo reads + mongocdc's BSON→JSON conversion + a plain confluent-kafka produce loop.

Both do the least a CDC pipeline must do per document: read it, render it (and its key) as
JSON the way mongocdc does (``document_to_json``/``value_to_json``), wrap it in a minimal
envelope with one ``json.dumps`` and ``produce`` it, then ``flush()``. No offsets, no
acknowledgement tracking, no metrics, no snapshot markers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pymongo
from bson import Timestamp
from confluent_kafka import Producer

from bench.common import CPU, Timing, baseline_producer_config
from mongocdc.events.codec import document_to_json, value_to_json

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _producer(bootstrap: str) -> Producer:
    producer = Producer(baseline_producer_config(bootstrap))
    producer.list_topics(timeout=10)  # connected before the clock starts
    return producer


def _produce(producer: Producer, topic: str, key: bytes, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key)
            break
        except BufferError:
            producer.poll(0.1)
    producer.poll(0)


def _envelope(db: str, coll: str, op: str, after: str, source_ms: int) -> bytes:
    now_ms = time.time_ns() // 1_000_000
    return _dumps(
        {
            "before": None,
            "after": after,
            "source": {"db": db, "collection": coll, "ts_ms": source_ms},
            "op": op,
            "ts_ms": now_ms,
        }
    ).encode()


def _pipeline(
    producer: Producer, topic: str, db: str, coll: str, op: str, docs: Iterable[tuple[Mapping[str, Any], int]]
) -> int:
    count = 0
    for document, source_ms in docs:
        key = _dumps({"id": value_to_json(document["_id"])}).encode()
        value = _envelope(db, coll, op, document_to_json(document), source_ms)
        _produce(producer, topic, key, value)
        count += 1
    return count


def snapshot(uri: str, bootstrap: str, db: str, coll: str, topic: str, *, batch_size: int = 2048) -> Timing:
    """``find()`` the whole collection, convert, produce, flush."""
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(uri)
    producer = _producer(bootstrap)
    try:
        collection = client[db][coll]
        collection.estimated_document_count()  # connection pool warmed outside the clock
        cpu = CPU.sample()
        started = time.perf_counter()
        count = _pipeline(producer, topic, db, coll, "r", ((d, 0) for d in collection.find(batch_size=batch_size)))
        queued = time.perf_counter()
        producer.flush()
        ended = time.perf_counter()
        phases = {"read+convert+produce": queued - started, "flush": ended - queued}
        return Timing(count, ended - started, {**phases, **CPU.since(cpu, CPU.sample())})
    finally:
        client.close()


def resume_token(uri: str, db: str, coll: str) -> Mapping[str, Any]:
    """Where a change stream on ``db.coll`` stands now (taken before the writes it must replay)."""
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(uri)
    try:
        with client[db][coll].watch(max_await_time_ms=100) as stream:
            stream.try_next()
            token = stream.resume_token
            assert token is not None
            return dict(token)
    finally:
        client.close()


def stream(
    uri: str,
    bootstrap: str,
    db: str,
    coll: str,
    topic: str,
    token: Mapping[str, Any],
    count: int,
    *,
    batch_size: int = 2048,
    poll_ms: int = 500,
) -> Timing:
    """``watch(resume_after=token)`` until ``count`` changes were read, convert, produce, flush."""
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(uri)
    producer = _producer(bootstrap)
    try:
        client.admin.command("ping")
        cpu = CPU.sample()
        started = time.perf_counter()
        with client[db][coll].watch(
            resume_after=token, full_document="updateLookup", batch_size=batch_size, max_await_time_ms=poll_ms
        ) as changes:

            def inserts() -> Iterable[tuple[Mapping[str, Any], int]]:
                seen = 0
                while seen < count:
                    change = changes.try_next()
                    if change is None:
                        continue
                    seen += 1
                    cluster_time: Timestamp = change["clusterTime"]
                    yield change["fullDocument"], cluster_time.time * 1000

            produced = _pipeline(producer, topic, db, coll, "c", inserts())
        queued = time.perf_counter()
        producer.flush()
        ended = time.perf_counter()
        phases = {"read+convert+produce": queued - started, "flush": ended - queued}
        return Timing(produced, ended - started, {**phases, **CPU.since(cpu, CPU.sample())})
    finally:
        client.close()
