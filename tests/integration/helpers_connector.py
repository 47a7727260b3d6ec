"""What the connector's integration tests share: a config file, the collections they write, and the topics
read back as a consumer would."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

from bson import Int64, ObjectId, json_util
from confluent_kafka import Consumer, KafkaError, TopicPartition
from pymongo import MongoClient

from tests.integration.helpers import decode, read_topic, wait_until


def write_config(
    tmp_path: Path,
    mongo_uri: str,
    bootstrap: str,
    db: str,
    prefix: str,
    properties: dict[str, Any] | None = None,
    **extra: Any,
) -> Path:
    """A config file for one test; ``extra`` keys use ``_`` for ``.``, ``properties`` are taken as written."""
    config = tmp_path / "mongocdc.yaml"
    merged: dict[str, Any] = {
        "name": f"it-{prefix}",
        "mongodb.connection.string": mongo_uri,
        "topic.prefix": prefix,
        "offset.storage.file.filename": str(tmp_path / "offsets.db"),
        "offset.flush.interval.ms": 500,
        "poll.interval.ms": 200,
        "database.include.list": db,
        "collection.exclude.list": f"{db}\\.skipped",
    }
    merged.update({k.replace("_", "."): v for k, v in extra.items()})
    merged.update(properties or {})
    lines = [f"{k}: {json.dumps(v)}" for k, v in merged.items()]
    # the nested form of the same keys works too
    lines += ["kafka:", f"  bootstrap.servers: {json.dumps(bootstrap)}"]
    config.write_text("\n".join(lines) + "\n")
    return config


def topic_counts(bootstrap: str, topics: list[str]) -> list[int]:
    return [len(read_topic(bootstrap, t)) for t in topics]


def key_id(value: Any) -> str:
    return json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS)


def replay(bootstrap: str, topic: str) -> dict[str, Any]:
    """The collection a consumer rebuilds from the topic: latest `after` per key, deletes applied."""
    state: dict[str, Any] = {}
    for msg in read_topic(bootstrap, topic, timeout=30):
        key, value = decode(msg)
        if value is None:
            continue
        if value["op"] == "d":
            state.pop(key["id"], None)
        elif value["after"] is not None:
            state[key["id"]] = json_util.loads(value["after"])
    return state


def collection_state(client: MongoClient[dict[str, Any]], db: str, coll: str) -> dict[str, Any]:
    return {json_util.dumps(d["_id"], json_options=json_util.RELAXED_JSON_OPTIONS): d for d in client[db][coll].find()}


def mixed_documents(n: int) -> list[dict[str, Any]]:
    ids: list[Any] = []
    for i in range(n):
        kind = i % 5
        ids.append([i, f"s{i:05d}", ObjectId(), Int64(10**12 + i), float(i) + 0.5][kind])
    return [{"_id": _id, "n": i, "pad": "x" * 100} for i, _id in enumerate(ids)]


class Writer(threading.Thread):
    """Inserts, updates and deletes in a loop until stopped (concurrent with the connector)."""

    def __init__(self, uri: str, db: str, coll: str) -> None:
        super().__init__(daemon=True)
        self.client: MongoClient[dict[str, Any]] = MongoClient(uri)
        self.coll = self.client[db][coll]
        self.done = threading.Event()
        self.count = 0

    def run(self) -> None:
        i = 0
        while not self.done.is_set():
            self.coll.insert_one({"_id": f"w{i}", "n": i})
            if i % 3 == 0:
                self.coll.update_one({"_id": f"w{i}"}, {"$set": {"updated": True}})
            if i % 7 == 0 and i:
                self.coll.delete_one({"_id": f"w{i - 1}"})
            i += 1
            self.count = i

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=30)
        self.client.close()


def read_committed(bootstrap: str, topic: str, timeout: float = 60.0) -> list[Any]:
    """Every record of ``topic`` a ``read_committed`` consumer reads, up to the last stable offset of each
    partition (records of aborted or open transactions are never returned)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            return []
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records: list[Any] = []
        pending = set(partitions)
        deadline_left = [timeout]

        def done() -> bool:
            for msg in consumer.consume(500, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard(msg.partition())
                        continue
                    raise AssertionError(f"reading {topic}: {err}")
                records.append(msg)
            return not pending

        wait_until(done, f"the end of {topic} (read committed)", deadline_left[0], interval=0)
        return sorted(records, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()
