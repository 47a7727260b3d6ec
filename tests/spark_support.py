"""The shared local Spark session of the Spark tests, and helpers to feed the job Kafka-shaped rows.

One ``local[2]`` session per test run, or per pytest-xdist worker (:class:`SharedSession`, behind the ``spark``
fixture in tests/conftest.py): each cold start costs seconds. The Kafka source and Delta Lake come from the Ivy
directory scripts/bootstrap fills (``.cache/spark/ivy``, or ``$MONGOCDC_TEST_CACHE_DIR/spark/ivy``), so
tests never download. Records are built by the real :class:`EnvelopeCodec` (:func:`envelope`).
"""

from __future__ import annotations

import contextlib
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
    from mongocdc.spark.packages import IVY_SETTINGS_CONF, ivy_settings

    packages = packages_for_installed()
    return {
        "spark.jars.packages": ",".join(packages.coordinates(with_delta=True)),
        "spark.jars.ivy": str(ivy),
        IVY_SETTINGS_CONF: str(ivy_settings(ivy)),  # not the user's ~/.m2 (a POM there may lack its jar)
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
    from tests.services.jvm import file_lock

    conf = session_conf(ivy)
    # One start at a time per Ivy directory: spark-submit resolves the packages into it at every start, and Ivy
    # does not lock its cache against parallel pytest-xdist workers (each with a session of its own).
    with file_lock(ivy / ".mongocdc-session-start.lock"):
        ensure_packages(conf["spark.jars.packages"].split(","), ivy)
        builder = SparkSession.builder.master("local[2]").appName("mongocdc-tests")
        for key, value in conf.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class SharedSession:
    """The run's one Spark session: checked before every Spark test, repaired or rebuilt when broken.

    What broke it before: pytest-timeout interrupts a test by raising from a signal handler, and when
    that happens inside a py4j call, the calling thread's gateway connection is never handed back
    (py4j catches ``Exception``, and pytest's ``Failed`` is a ``BaseException``) and is never closed
    either, because the failure's traceback keeps it alive. The JVM still answers the interrupted
    call on it, so every later call on that thread read the answer of the call before it: every later
    Spark test failed (``KeyError: 'p'``, ``ClassNotFoundException … setActiveSession``).

    :meth:`get`, which the ``spark`` fixture calls before each test, therefore first closes this
    thread's connection (py4j opens a fresh one for the next call, and the JVM drops the answer
    nobody reads), cancels the jobs an interrupted call may have left running, and asks the context
    whether it is stopped. A session that does not answer ``False`` (its JVM died, its context was
    stopped) is discarded with its JVM, and a new JVM and session are started.
    """

    def __init__(self, ivy: Path) -> None:
        self.ivy = ivy
        self.rebuilds = 0
        """How many times a broken session was replaced (the first start does not count)."""
        self._session: Any = None

    def get(self) -> Any:
        """A working session: the current one when it answers, else a new one."""
        if self._session is not None and not _answers(self._session):
            self._discard()
            self.rebuilds += 1
        if self._session is None:
            self._session = start_session(self.ivy)
        return self._session

    def stop(self) -> None:
        """Stop the session at the end of the run (or end its JVM when it no longer answers)."""
        if self._session is None:
            return
        if _answers(self._session):
            self._session.stop()
            self._session = None
        else:
            self._discard()

    def _discard(self) -> None:
        """Forget the session and end its JVM without a call to it: the gateway may not answer in turn."""
        from pyspark import SparkContext
        from pyspark.sql import SparkSession, SQLContext

        gateway = SparkContext._gateway
        if gateway is not None:
            proc = getattr(gateway, "proc", None)  # the spark-submit process, which exec'd the JVM
            if proc is not None:
                proc.kill()
                proc.wait(60)
            with contextlib.suppress(Exception):
                gateway.close()  # this side's sockets and its callback server
        context = SparkContext._active_spark_context
        if context is not None and getattr(context, "_accumulatorServer", None) is not None:
            context._accumulatorServer.shutdown()
        SparkContext._gateway = SparkContext._jvm = SparkContext._active_spark_context = None  # type: ignore[assignment]
        SparkSession._instantiatedSession = SparkSession._activeSession = None
        SQLContext._instantiatedContext = None
        self._session = None


def _answers(session: Any) -> bool:
    """Whether ``session`` answers in turn on a fresh connection and its context is running."""
    try:
        context = session.sparkContext
        client = context._gateway._gateway_client
        connection = client.get_thread_connection() if hasattr(client, "get_thread_connection") else None
        if connection is not None:
            connection.close()  # the next call opens a new one; an unread answer stays on the old one
        context.cancelAllJobs()
        return context._jsc.sc().isStopped() is False
    except Exception:  # a dead JVM, a stopped context (``_jsc`` is None): rebuild
        return False


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
    cluster_sec: int | None = None,
    with_headers: bool = False,
) -> Any:
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

    ``cluster_sec``: a streamed change's cluster time seconds when they differ from its ``wallTime``'s (a primary
    whose clock is behind the cluster time). ``with_headers``: return ``(key, value, headers)``, the headers as
    mongocdc's streaming loop writes them (``EnvelopeCodec.headers_for``: the context headers and, for a change
    or an incremental read, the cluster time); without it, ``(key, value)``, as Debezium-only records.
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
            sec=ts_ms // 1000 if cluster_sec is None else cluster_sec,
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
    if with_headers:
        return codec.key(event), codec.value(event, ts_ms + 5), codec.headers_for(source)
    return codec.key(event), codec.value(event, ts_ms + 5)


def records(spark: Any, rows: Iterable[tuple[Any, ...]]) -> Any:
    """A DataFrame shaped like Spark's Kafka source: (topic, partition, offset, key, value), and ``headers`` (as
    the source gives them with ``includeHeaders``) when a row has a sixth element, its headers."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    rows = list(rows)
    fields = [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
    ]
    with_headers = any(len(row) > 5 for row in rows)
    if with_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))

    def binary(value: Any) -> Any:
        return None if value is None else bytearray(value.encode() if isinstance(value, str) else value)

    data = []
    for t, p, o, k, v, *rest in rows:
        row: tuple[Any, ...] = (t, p, o, binary(k), binary(v))
        if with_headers:
            row += ([(name, binary(raw)) for name, raw in (rest[0] if rest else None) or []],)
        data.append(row)
    return spark.createDataFrame(data, StructType(fields))


class Topic:
    """Appends records to one partition of a topic, numbering offsets like Kafka."""

    def __init__(self, name: str, partition: int = 0) -> None:
        self.name, self.partition, self.next_offset = name, partition, 0

    def add(self, record: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row of ``records``: ``record`` is (key, value) or (key, value, headers)."""
        row = (self.name, self.partition, self.next_offset, *record)
        self.next_offset += 1
        return row


def documents(df: Any) -> dict[Any, dict[str, Any]]:
    """``_key`` (decoded) → document of a table whose payload is the JSON ``document`` column."""
    return {json.loads(r["_key"]): json.loads(r["document"]) for r in df.collect()}
