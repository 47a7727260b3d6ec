"""The merge: change events → the latest document per key, as plain DataFrame functions.

Nothing here knows about Kafka or a sink, so it is tested on small DataFrames.

A change row carries the key (``_key``: the ``id`` of the Debezium key, the ``_id`` as MongoDB
extended JSON), the operation (``_op``), the payload (``document``: the ``after`` JSON string,
or the columns projected from it) and its **position**, compared in this order:

1. ``_ts_ms``, ``_ord``: the change's place in MongoDB's history (``source.ts_ms``, ``source.ord``);
2. snapshot reads (``r``) before streamed changes of the same position;
3. ``_txn_order``: the event's place in its transaction (events of one transaction share a position);
4. ``_kafka_partition``, ``_kafka_offset``: the order the connector wrote them in (a key always
   lands in the same partition).

State rows have the same columns. A deleted key stays in the state as a *delete marker*
(``_op = 'd'``, no payload) holding the delete's position, so a duplicate, a replay or a stale
snapshot read that arrives after the delete cannot bring the document back. Sinks keep markers
apart from the table analysts read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import (
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

META_COLUMNS: tuple[str, ...] = (
    "_key",
    "_op",
    "_ts_ms",
    "_ord",
    "_txn_order",
    "_kafka_partition",
    "_kafka_offset",
)
"""Columns every state row and change row carries besides the payload."""

META_SCHEMA = StructType(
    [
        StructField("_key", StringType(), False),
        StructField("_op", StringType(), False),
        StructField("_ts_ms", LongType(), False),
        StructField("_ord", LongType(), False),
        StructField("_txn_order", LongType(), False),
        StructField("_kafka_partition", IntegerType(), False),
        StructField("_kafka_offset", LongType(), False),
    ]
)

DOCUMENT = "document"
COLLECTION_COLUMNS = ("_db", "_collection")
DATA_OPS = ("c", "u", "r", "d")

_SOURCE = StructType(
    [
        StructField("ts_ms", LongType()),
        StructField("ord", LongType()),
        StructField("snapshot", StringType()),
        StructField("db", StringType()),
        StructField("collection", StringType()),
    ]
)
_TRANSACTION = StructType([StructField("id", StringType()), StructField("total_order", LongType())])
_ENVELOPE_FIELDS = [
    StructField("op", StringType()),
    StructField("after", StringType()),
    StructField("source", _SOURCE),
    StructField("transaction", _TRANSACTION),
]
VALUE_SCHEMA = StructType([*_ENVELOPE_FIELDS, StructField("payload", StructType(_ENVELOPE_FIELDS))])
"""The Debezium value, bare or wrapped as ``{"schema", "payload"}`` (JsonConverter with schemas)."""
KEY_SCHEMA = StructType(
    [StructField("id", StringType()), StructField("payload", StructType([StructField("id", StringType())]))]
)


def parse_records(records: DataFrame, skip_topics: str | None = None) -> DataFrame:
    """Kafka records (``topic``, ``partition``, ``offset``, ``key``, ``value``) → change rows.

    Tombstones (null values), topics matching ``skip_topics`` (transaction metadata,
    heartbeats) and records that are not data changes are dropped. The result has
    ``_db``, ``_collection``, the meta columns and ``document`` (null for deletes, and for
    updates without a full document).
    """
    rows = records.where(F.col("value").isNotNull())
    if skip_topics:
        rows = rows.where(~F.col("topic").rlike(f"^(?:{skip_topics})$"))
    value = F.from_json(F.col("value").cast("string"), VALUE_SCHEMA)
    key = F.from_json(F.col("key").cast("string"), KEY_SCHEMA)
    parsed = rows.select(
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.coalesce(value["payload"], F.struct(*[value[f.name].alias(f.name) for f in _ENVELOPE_FIELDS])).alias("v"),
        F.coalesce(key["payload"]["id"], key["id"]).alias("k"),
    )
    changes = parsed.where(
        F.col("v.op").isin(*DATA_OPS)
        & F.col("k").isNotNull()
        & F.col("v.source.db").isNotNull()
        & F.col("v.source.collection").isNotNull()
    )
    return changes.select(
        F.col("v.source.db").alias("_db"),
        F.col("v.source.collection").alias("_collection"),
        F.col("k").alias("_key"),
        F.col("v.op").alias("_op"),
        F.coalesce(F.col("v.source.ts_ms"), F.lit(0)).cast("long").alias("_ts_ms"),
        F.coalesce(F.col("v.source.ord"), F.lit(0)).cast("long").alias("_ord"),
        F.coalesce(F.col("v.transaction.total_order"), F.lit(0)).cast("long").alias("_txn_order"),
        F.col("partition").cast("int").alias("_kafka_partition"),
        F.col("offset").cast("long").alias("_kafka_offset"),
        F.when(F.col("v.op") == "d", F.lit(None).cast("string")).otherwise(F.col("v.after")).alias(DOCUMENT),
    )


def applicable(changes: DataFrame) -> DataFrame:
    """The changes that decide a key's state: deletes, and c/u/r that carry the whole document.

    An update without ``after`` (``capture.mode=change_streams``, or a look-up that found the
    document already deleted) cannot rebuild the document; the delete that follows decides.
    """
    return changes.where((F.col("_op") == "d") | F.col(DOCUMENT).isNotNull())


def parse_schema(text: str) -> StructType:
    """A document schema from Spark DDL (``name STRING, qty INT``) or a Spark JSON schema."""
    import json

    stripped = text.strip()
    if stripped.startswith("{"):
        parsed: DataType = StructType.fromJson(json.loads(stripped))
    else:
        parsed = StructType.fromDDL(stripped)
    if not isinstance(parsed, StructType):
        raise ValueError(f"not a struct schema: {text!r}")
    return parsed


def project(changes: DataFrame, schema: StructType | None) -> DataFrame:
    """Replace ``document`` by typed columns read from it (``schema``), or keep it as JSON (``None``)."""
    if schema is None:
        return changes
    doc = F.from_json(F.col(DOCUMENT), schema)
    others = [c for c in changes.columns if c != DOCUMENT]
    return changes.select(*others, *[doc[f.name].alias(f.name) for f in schema.fields])


def position_order() -> list[Column]:
    """Newest position first (the order of this module's docstring, reversed)."""
    return [
        F.col("_ts_ms").desc(),
        F.col("_ord").desc(),
        F.when(F.col("_op") == "r", 0).otherwise(1).desc(),
        F.col("_txn_order").desc(),
        F.col("_kafka_partition").desc(),
        F.col("_kafka_offset").desc(),
    ]


def latest_per_key(changes: DataFrame) -> DataFrame:
    """One row per key (per collection when ``_db``/``_collection`` are there): the newest position."""
    keys = [c for c in (*COLLECTION_COLUMNS, "_key") if c in changes.columns]
    window = Window.partitionBy(*keys).orderBy(*position_order())
    return changes.withColumn("_rank", F.row_number().over(window)).where(F.col("_rank") == 1).drop("_rank")


def merge(state: DataFrame | None, changes: DataFrame) -> DataFrame:
    """The new state of one collection: for each key the newest of its state row and its changes.

    ``state`` holds document rows and delete markers (``_op = 'd'``); so does the result.
    Applying the same changes twice, in any order or split over batches, gives the same state.
    """
    candidates = applicable(changes)
    if state is not None:
        candidates = state.unionByName(candidates, allowMissingColumns=True)
    return latest_per_key(candidates)


def live_rows(state: DataFrame) -> DataFrame:
    """The documents: the state without delete markers."""
    return state.where(F.col("_op") != "d")


def delete_markers(state: DataFrame) -> DataFrame:
    """The delete markers of a state, meta columns only."""
    return state.where(F.col("_op") == "d").select(*META_COLUMNS)


def empty_state(spark: SparkSession, payload: StructType) -> DataFrame:
    """A state with no rows and the given payload columns."""
    return spark.createDataFrame([], StructType([*META_SCHEMA.fields, *payload.fields]))


def payload_schema(columns: StructType | None) -> StructType:
    """The payload columns of the tables: ``document`` (a JSON string), or the projected columns."""
    if columns is None:
        return StructType([StructField(DOCUMENT, StringType())])
    return columns


def position_differs(left: str, right: str) -> str:
    """SQL: the two aliases' positions differ (used as a MERGE condition)."""
    cols: list[Any] = ["_op", "_ts_ms", "_ord", "_txn_order", "_kafka_partition", "_kafka_offset"]
    return " OR ".join(f"NOT ({left}.{c} <=> {right}.{c})" for c in cols)
