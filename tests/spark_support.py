"""The shared local Spark session of the Spark tests, and helpers to feed the job Kafka-shaped rows.

One ``local[2]`` session per test run (``spark`` fixture in tests/conftest.py): each cold start
costs seconds. The Kafka source and Delta Lake come from the Ivy directory scripts/bootstrap
fills (``.cache/spark/ivy``, or ``$MONGOCDC_TEST_CACHE_DIR/spark/ivy``), so tests never download.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bson.binary import Binary

from mongocdc.events.changes import session_id
from mongocdc.events.codec import document_to_json, json_to_document, update_to_json, value_to_json
from mongocdc.events.envelope import EnvelopeCodec
from mongocdc.events.model import ChangeEvent, Op, SnapshotMarker, SourceInfo, TransactionBlock, UpdateDescription

REPO = Path(__file__).resolve().parents[1]


def ivy_dir() -> Path:
    shared = os.environ.get("MONGOCDC_TEST_CACHE_DIR", "").strip()
    root = Path(shared).expanduser().resolve() if shared else REPO / ".cache"
    return root / "spark" / "ivy"


def session_conf(ivy: Path) -> dict[str, str]:
    from mongocdc.spark.environment import packages_for_installed
    from mongocdc.spark.launcher import DELTA_CONF, JOB_CONF, LOCAL_CONF

    packages = packages_for_installed()
    return {
        "spark.jars.packages": ",".join(packages.coordinates(with_delta=True)),
        "spark.jars.ivy": str(ivy),
        **JOB_CONF,
        **DELTA_CONF,
        **LOCAL_CONF,
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "1g",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
    }


def start_session(ivy: Path) -> Any:
    from pyspark.sql import SparkSession

    from mongocdc.spark.packages import ensure_packages

    conf = session_conf(ivy)
    ensure_packages(conf["spark.jars.packages"].split(","), ivy)
    builder = SparkSession.builder.master("local[2]").appName("mongocdc-tests")
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


# --- Kafka-shaped records -------------------------------------------------------------------


PREFIX = "it"
"""The ``topic.prefix`` of the records the helpers build (topics ``it.<db>.<collection>``)."""
LSID = {"id": Binary(bytes(range(16)), 4)}
"""The session of the test transactions (Debezium writes it as strict JSON in the transaction id)."""


def envelope(
    op: str,
    key: Any,
    doc: Mapping[str, Any] | None,
    *,
    ts_ms: int,
    ord: int | None = None,  # noqa: A002
    db: str = "shop",
    collection: str = "orders",
    snapshot: str = "false",
    txn_order: int | None = None,
    wrapped: bool = False,
    wall_time: bool = True,
    after_json: str | None = None,
) -> tuple[bytes, bytes]:
    """A Debezium key and value as mongocdc writes them, through the real :class:`EnvelopeCodec`.

    ``key`` is the ``_id`` (a BSON value; a dict in extended JSON such as ``{"$oid": ...}`` is read as
    one), ``doc`` the rest of the document (BSON values: ``Int64``, ``Decimal128``, ``datetime`` ...),
    written as Debezium writes ``after`` (strict JSON); ``None`` for a delete or an update without
    the full document. ``after_json``: the ``after`` text itself instead (the relaxed extended JSON of
    older topics). ``wrapped``: with the JsonConverter schema wrapper (``schemas.enable``).

    The position is the one Debezium 3.6.1 writes for the kind of event (``ts_ms`` is ``source.ts_ms``):

    * streamed changes (``c``, ``u``, ``d``): the change's ``wallTime`` (``ts_ms``) and the cluster
      time's increment (``ord``, default 1); ``wall_time=False``: a change without ``wallTime``
      (MongoDB before 6.0), whose ``ts_ms`` is the cluster time's seconds × 1000;
    * initial and blocking snapshot reads (``snapshot`` ``"true"`` or ``"last"``): the time of the read
      (``ts_ms``) and ``ord`` -1 (no other ``ord`` may be given);
    * incremental snapshot reads (``snapshot="incremental"``): the closing watermark's cluster time,
      seconds × 1000 (``ts_ms``, a whole second) and increment (``ord``, default 1).
    """
    key_value = json_to_document(json.dumps(key)) if isinstance(key, dict) else key
    marker = SnapshotMarker(snapshot)
    if op == "r" and marker in (SnapshotMarker.TRUE, SnapshotMarker.LAST):
        if ord is not None:
            raise ValueError("an initial snapshot read has no ord of its own (Debezium writes -1)")
        source = SourceInfo(db, collection, sec=ts_ms // 1000, ord=-1, snapshot=marker, read_ns=ts_ms * 1_000_000)
    elif op == "r":
        if marker is not SnapshotMarker.INCREMENTAL or ts_ms % 1000:
            raise ValueError("an incremental read is at a watermark's cluster time: whole seconds")
        source = SourceInfo(db, collection, sec=ts_ms // 1000, ord=1 if ord is None else ord, snapshot=marker)
    else:
        if marker is not SnapshotMarker.FALSE or (not wall_time and ts_ms % 1000):
            raise ValueError("a streamed change has snapshot 'false'; without wallTime its ts_ms is whole seconds")
        txn = {} if txn_order is None else {"lsid": session_id(LSID), "txn_number": 1}
        source = SourceInfo(
            db,
            collection,
            sec=ts_ms // 1000,
            ord=1 if ord is None else ord,
            wall_time_ms=ts_ms if wall_time else None,
            **txn,
        )
    after = after_json if after_json is not None or doc is None else document_to_json({"_id": key_value, **doc})
    update = None
    if op == "u":
        update = UpdateDescription(update_to_json(dict(doc or {"touched": True})))
    transaction = None
    if txn_order is not None:
        transaction = TransactionBlock(f"{source.lsid}:{source.txn_number}", txn_order, txn_order)
    event = ChangeEvent(Op(op), value_to_json(key_value), source, after, None, update, transaction)
    codec = EnvelopeCodec(PREFIX, schemas_enable=wrapped)
    return codec.key(event), codec.value(event, ts_ms + 5)


def records(spark: Any, rows: Iterable[tuple[str, int, int, bytes | None, bytes | None]]) -> Any:
    """A DataFrame shaped like Spark's Kafka source: (topic, partition, offset, key, value)."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
        ]
    )
    return spark.createDataFrame(
        [(t, p, o, None if k is None else bytearray(k), None if v is None else bytearray(v)) for t, p, o, k, v in rows],
        schema,
    )


class Topic:
    """Appends records to one partition of a topic, numbering offsets like Kafka."""

    def __init__(self, name: str, partition: int = 0) -> None:
        self.name, self.partition, self.next_offset = name, partition, 0

    def add(self, key_value: tuple[bytes, bytes | None]) -> tuple[str, int, int, bytes | None, bytes | None]:
        row = (self.name, self.partition, self.next_offset, key_value[0], key_value[1])
        self.next_offset += 1
        return row


def documents(df: Any) -> dict[Any, dict[str, Any]]:
    """``_key`` (decoded) → document of a table whose payload is the JSON ``document`` column."""
    return {json.loads(r["_key"]): json.loads(r["document"]) for r in df.collect()}
