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

MongoDB's own order of changes is the cluster time (seconds and increment, never going back, not even
when a new primary's wall clock is behind the old one's). What the records carry of it:

* a record mongocdc streamed has it in its ``__mongocdc.clusterTime`` header (a change, and an
  incremental snapshot read at its closing watermark's cluster time). Its position is then
  ``_ts_ms`` = the last millisecond of the cluster time's second and ``_ord`` = its increment: such
  records compare exactly in oplog order, across elections and clock steps. Against an initial
  snapshot read (below) a change of the read's own second ranks after the read: one made after it
  wins, as it must; one made before it in that second wins too, and holds that second's document
  (it is the key's last change before the read, or a later change of the second outranks it);
* a record without the header (Debezium's, or one mongocdc wrote before it had it) has only Debezium 3.6's
  ``source.ts_ms`` and ``source.ord``, as below.

What ``source.ts_ms`` and ``source.ord`` hold (Debezium 3.6's MongoDB connector, and mongocdc since it
writes the same records):

* a streamed change: its ``wallTime`` in milliseconds (the cluster time's seconds × 1000 before
  MongoDB 6.0) and the cluster time's increment. The value has no cluster time seconds once there
  is a ``wallTime``, so without the header changes compare in MongoDB's order only as long as the
  primary's wall clock follows its cluster time (after an election to a primary whose clock is
  behind, a later change loses to an earlier one);
* an incremental snapshot read: its closing watermark's cluster time, seconds × 1000 and increment.
  A change streamed after the watermark is in the same second with a higher increment, or in a later
  second, and wins; an earlier change of the watermark's own second ranks after the read, which holds
  the same document (the window dropped every key changed while it was open);
* an initial or blocking snapshot read: the time the connector read the document (its own clock, in
  milliseconds) and ``ord`` -1, so it ranks before the changes of the same millisecond. This is not a
  place in MongoDB's history (the record carries none; the snapshot's start position is not in it):
  a change made after the document was read but stamped earlier than the read's time — made while
  the read waited to be written, or earlier on the MongoDB clock by the skew between the two clocks —
  loses to the read, and the key keeps the read's document until its next change.

State rows have the same columns. A deleted key stays in the state as a *delete marker*
(``_op = 'd'``, no payload) holding the delete's position, so a duplicate, a replay or a stale
snapshot read that arrives after the delete cannot bring the document back. Sinks keep markers
apart from the table analysts read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import (
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from mongocdc.spark import columns
from mongocdc.spark.schema_text import COLLECTION_COLUMNS as COLLECTION_COLUMNS
from mongocdc.spark.schema_text import META_COLUMNS as META_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
    """Kafka records (``topic``, ``partition``, ``offset``, ``key``, ``value``, and ``headers`` when the source
    gives them) → change rows.

    Tombstones (null values), topics matching ``skip_topics`` (transaction metadata,
    heartbeats) and records that are not data changes are dropped. The result has
    ``_db``, ``_collection``, the meta columns and ``document`` (null for deletes, and for
    updates without a full document).
    """
    rows = records.where("value IS NOT NULL")
    if skip_topics:
        rows = rows.where(~F.col("topic").rlike(f"^(?:{skip_topics})$"))
    # Built from SQL expressions, in as few calls as the plan allows: a micro-batch builds this plan anew, and
    # each call is a round trip to the JVM and an analysis of the plan.
    # The envelopes are parsed in a generator, so the filter at the end (which Spark pushes through the
    # projection, copying the expressions it uses) cannot make it parse a record again.
    envelopes = rows.selectExpr(
        "partition",
        "offset",
        "inline(array(struct("
        f"from_json(CAST(value AS STRING), '{VALUE_SCHEMA.simpleString()}') AS value, "
        f"from_json(CAST(key AS STRING), '{KEY_SCHEMA.simpleString()}') AS key, "
        f"{_cluster_time_sql(records.columns)} AS cluster_time)))",
    )

    def field(path: str) -> str:
        """A field of the envelope: under ``payload`` when the value is wrapped, else at the top.

        Field by field, never a struct of the chosen form: building one copies the document
        (``after``) for every expression that reads a field of it, and that was half the parse.
        """
        return f"CASE WHEN value.payload IS NOT NULL THEN value.payload.{path} ELSE value.{path} END"

    op = field("op")
    changes = envelopes.selectExpr(
        f"{field('source.db')} AS _db",
        f"{field('source.collection')} AS _collection",
        "coalesce(key.payload.id, key.id) AS _key",
        f"{op} AS _op",
        # a record with mongocdc's cluster time header: the last millisecond of its cluster second, and its
        # increment (the module's docstring); else source.ts_ms and source.ord
        "CAST(CASE WHEN cluster_time.t IS NOT NULL THEN cluster_time.t * 1000 + 999"
        f" ELSE coalesce({field('source.ts_ms')}, 0) END AS BIGINT) AS _ts_ms",
        "CAST(CASE WHEN cluster_time.t IS NOT NULL THEN cluster_time.i"
        f" ELSE coalesce({field('source.ord')}, 0) END AS BIGINT) AS _ord",
        f"CAST(coalesce({field('transaction.total_order')}, 0) AS BIGINT) AS _txn_order",
        "CAST(partition AS INT) AS _kafka_partition",
        "CAST(offset AS BIGINT) AS _kafka_offset",
        f"CASE WHEN {op} = 'd' THEN CAST(NULL AS STRING) ELSE {field('after')} END AS {DOCUMENT}",
    )
    data_ops = ", ".join(f"'{o}'" for o in DATA_OPS)
    return changes.where(f"_op IN ({data_ops}) AND _key IS NOT NULL AND _db IS NOT NULL AND _collection IS NOT NULL")


PARTIAL = "_mongocdc_partial"
"""Typed change rows (:func:`project`): true for a change without the whole document (``document`` is gone)."""


CLUSTER_TIME_HEADER = "__mongocdc.clusterTime"
"""``mongocdc.events.envelope.CLUSTER_TIME_HEADER`` (this module imports nothing of the streaming side)."""


def _cluster_time_sql(columns: list[str]) -> str:
    """The cluster time of a record's ``__mongocdc.clusterTime`` header, ``STRUCT<t, i>`` (NULL: none)."""
    if "headers" not in columns:
        return "CAST(NULL AS STRUCT<t: BIGINT, i: BIGINT>)"
    header = f"try_element_at(filter(headers, h -> h.key = '{CLUSTER_TIME_HEADER}'), 1).value"
    return f"from_json(CAST({header} AS STRING), 'STRUCT<`$timestamp`: STRUCT<t: BIGINT, i: BIGINT>>').`$timestamp`"


def applicable(changes: DataFrame) -> DataFrame:
    """The changes that decide a key's state: deletes, and c/u/r that carry the whole document.

    An update without ``after`` (``capture.mode=change_streams``, or a look-up that found the
    document already deleted) cannot rebuild the document; the delete that follows decides.
    Typed rows say it in their own column: a filter on ``document`` there would make Spark add the
    column back below the projection, and the plan would no longer be the one the job cached (each
    collection's merge then read and parsed the batch from Kafka again).
    """
    if DOCUMENT in changes.columns:
        return changes.where(f"_op = 'd' OR {DOCUMENT} IS NOT NULL")
    if PARTIAL in changes.columns:
        return changes.where(f"NOT {PARTIAL}")
    return changes


def quoted(name: str) -> str:
    """A column's name for a SQL expression (a typed column's name may hold a dot, read bare as a struct's field)."""
    return "`" + name.replace("`", "``") + "`"


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
    """Replace ``document`` by typed columns read from it (``schema``), or keep it as JSON (``None``).

    Debezium's strict JSON values (``{"$numberLong": "5"}``, ``{"$date": <millis>}``, ``{"$oid": …}``,
    bare ``NaN``) and the relaxed forms of older topics become the requested types (``columns``).
    The document is parsed once, into a column the second projection reads each field from.
    """
    if schema is None:
        return changes
    raw, fields = columns.projection(schema)
    others = [c for c in changes.columns if c != DOCUMENT]
    parsed = changes.select("*", F.from_json(F.col(DOCUMENT), raw, columns.JSON_OPTIONS).alias(columns.DOC))
    # whether the change carried the whole document, for ``applicable`` (the typed columns cannot say it)
    partial = f"(_op <> 'd' AND {DOCUMENT} IS NULL) AS {PARTIAL}"
    return parsed.selectExpr(*[f"`{c}`" for c in others], *fields, partial)


RANK = "_mongocdc_rank"
WINNER = "_mongocdc_winner"
_IN_BATCH = "_mongocdc_in_batch"
BROADCAST_MAX_ROWS = 1_000_000
"""Batches up to this many changes decide by broadcasting their keys' winners (no shuffle of documents)."""


def rank(src: int, unique: bool) -> Column:
    """A row's position as one comparable struct (the order of this module's docstring).

    Two more fields break ties: ``src`` (1 for state rows, so a batch applied again loses to the
    state it already produced) and, with ``unique``, a row id, so exact copies within a batch
    leave one winner. The row id depends on where a row sits in its partition, so a batch must
    read the same rows in the same partitions each time it is evaluated: the job caches each
    micro-batch (a Kafka micro-batch also reads the same offset ranges again), and local
    DataFrames are fixed.
    """
    return F.expr(rank_sql(src, unique))


def rank_sql(src: int, unique: bool) -> str:
    """:func:`rank` as a SQL expression."""
    rid = "monotonically_increasing_id()" if unique else "CAST(0 AS BIGINT)"
    return f"named_struct('position', {_position_sql()}, 'src', {int(src)}, 'rid', {rid})"


def key_columns(df: DataFrame) -> list[str]:
    """What identifies a document: ``_key``, within its collection when the collection columns are there."""
    return [c for c in (*COLLECTION_COLUMNS, "_key") if c in df.columns]


class Decision:
    """Which row wins for each key a batch touches, decided on positions alone.

    Only the keys and positions of the batch and of the state are compared (a narrow
    aggregate); the documents are not shuffled or sorted. The winners are
    then joined back to the batch (:meth:`applied`) and to the state (:meth:`kept`), broadcast
    when the batch is at most ``BROADCAST_MAX_ROWS`` changes.
    """

    def __init__(
        self, state: DataFrame | None, changes: DataFrame, *, broadcast: bool = True, whole_state: bool = False
    ) -> None:
        self.batch = applicable(changes).withColumn(RANK, rank(0, unique=True))
        self.keys = key_columns(self.batch)
        self.broadcast = broadcast
        positions = self.batch.select(*self.keys, RANK, F.lit(True).alias(_IN_BATCH))
        if state is not None:
            ranked = state.select(*self.keys, rank(1, unique=False).alias(RANK), F.lit(False).alias(_IN_BATCH))
            if not whole_state:
                # a batch small against the state: its keys' state rows first, by a broadcast semi-join
                ranked = ranked.join(self._small(self.batch.select(*self.keys)), self.keys, "left_semi")
            positions = positions.unionByName(ranked)
        # keys only in the state (``whole_state``: the caller reads the whole state anyway, and one
        # narrow aggregate over it is cheaper than a semi-join first) drop out after the aggregate
        self.winners = (
            positions.groupBy(*self.keys)
            .agg(F.max(RANK).alias(WINNER), F.max(_IN_BATCH).alias(_IN_BATCH))
            .where(F.col(_IN_BATCH))
            .drop(_IN_BATCH)
        )

    def _small(self, df: DataFrame) -> DataFrame:
        return F.broadcast(df) if self.broadcast else df

    def materialize(self) -> Decision:
        """Compute the winners once (they are read by every join that follows)."""
        self.winners = self.winners.localCheckpoint()
        return self

    def applied(self) -> DataFrame:
        """The batch's changes that are newer than everything else of their key: what changes the state."""
        joined = self.batch.join(self._small(self.winners), self.keys)
        return joined.where(F.col(RANK) == F.col(WINNER)).drop(RANK, WINNER)

    def kept(self, state: DataFrame) -> DataFrame:
        """The rows of (a part of) the state that no change of the batch supersedes."""
        joined = state.withColumn(RANK, rank(1, unique=False)).join(self._small(self.winners), self.keys, "left")
        return joined.where(F.col(WINNER).isNull() | (F.col(RANK) == F.col(WINNER))).drop(RANK, WINNER)


ROW = "_mongocdc_row"


def winning_changes(
    markers: DataFrame | None,
    changes: DataFrame,
    *,
    semi_join: bool = True,
    broadcast: bool = True,
    output: Sequence[str] | None = None,
) -> DataFrame:
    """What :meth:`Decision.applied` gives for a state of delete markers only, in one aggregate.

    Per key the batch's newest applicable change, when it is newer than the key's markers (the rows
    table is compared elsewhere: the MERGE's conditions). The batch's rows go into the aggregate whole,
    documents included, and the winner is taken with ``max_by``: for a batch small enough to go into a
    MERGE, shuffling its documents once costs less than the narrow aggregate's broadcast and the join back
    (a Spark job each, and their planning, per batch). ``semi_join``: only the markers of the batch's keys
    enter the aggregate (a broadcast of the keys, one job more; worth it when the markers are many).
    ``output``: the columns of the result (all of the changes' by default).

    Built from SQL expressions, a few calls in all: the job plans this anew for every batch, and each call
    is a round trip to the JVM and an analysis of the plan.
    """
    names = changes.columns  # (PySpark keeps a DataFrame's schema: asked once of the JVM)
    keys = key_columns(changes)
    others = [c for c in names if c not in keys]
    batch = applicable(changes)
    rows = batch.selectExpr(
        *map(quoted, keys),
        f"{rank_sql(0, unique=True)} AS {RANK}",
        f"struct({', '.join(map(quoted, others))}) AS {ROW}",
    )
    if markers is not None:
        # a marker has no row: the NULL takes the row's type in the union
        ranked = markers.selectExpr(*map(quoted, keys), f"{rank_sql(1, unique=False)} AS {RANK}", f"NULL AS {ROW}")
        if semi_join:
            batch_keys = batch.select(*keys)
            ranked = ranked.join(F.broadcast(batch_keys) if broadcast else batch_keys, keys, "left_semi")
        rows = rows.unionByName(ranked)
    # the rank is unique within the batch (its row id) and a marker's never equals a change's (``src``), so the
    # newest row of a key is one; a marker's has no row
    winners = rows.groupBy(*keys).agg(F.expr(f"max_by({ROW}, {RANK}) AS {ROW}")).where(f"{ROW} IS NOT NULL")
    wanted = [c for c in (names if output is None else output) if c not in keys]
    return winners.selectExpr(*map(quoted, keys), *[f"{ROW}.{quoted(c)} AS {quoted(c)}" for c in wanted])


def merge(
    state: DataFrame | None, changes: DataFrame, *, broadcast: bool = True, whole_state: bool = False
) -> DataFrame:
    """The new state of one collection: for each key the newest of its state row and its changes.

    ``state`` holds document rows and delete markers (``_op = 'd'``); so does the result.
    Applying the same changes twice, in any order or split over batches, gives the same state.
    """
    decision = Decision(state, changes, broadcast=broadcast, whole_state=whole_state)
    if state is None:
        return decision.applied()
    return decision.kept(state).unionByName(decision.applied(), allowMissingColumns=True)


def live_rows(state: DataFrame) -> DataFrame:
    """The documents: the state without delete markers."""
    return state.where(F.col("_op") != "d")


def delete_markers(state: DataFrame) -> DataFrame:
    """The delete markers of a state, meta columns only."""
    return state.where("_op = 'd'").select(*META_COLUMNS)


def unexpired(markers: DataFrame, expired_before: int | None) -> DataFrame:
    """The delete markers not older than ``expired_before`` (a ``_ts_ms``; ``None``: all of them)."""
    if expired_before is None:
        return markers
    return markers.where(F.col("_ts_ms") >= F.lit(expired_before))


def newest_markers(markers: DataFrame) -> DataFrame:
    """One delete marker per key, its newest: what a marker table holding several per key decides."""
    decision = Decision(None, markers.withColumn(DOCUMENT, F.lit(None).cast("string")))
    return decision.applied().select(*META_COLUMNS)


def empty_state(spark: SparkSession, payload: StructType) -> DataFrame:
    """A state with no rows and the given payload columns."""
    return spark.createDataFrame([], StructType([*META_SCHEMA.fields, *payload.fields]))


def payload_schema(columns: StructType | None) -> StructType:
    """The payload columns of the tables: ``document`` (a JSON string), or the projected columns."""
    if columns is None:
        return StructType([StructField(DOCUMENT, StringType())])
    return columns


def _position_sql(alias: str | None = None) -> str:
    q = f"{alias}." if alias else ""
    return (
        f"named_struct('ts_ms', {q}_ts_ms, 'ord', {q}_ord, 'streamed', CASE WHEN {q}_op = 'r' THEN 0 ELSE 1 END, "
        f"'txn_order', {q}_txn_order, 'partition', {q}_kafka_partition, 'offset', {q}_kafka_offset)"
    )


def newer_sql(left: str, right: str) -> str:
    """The row ``left`` is strictly newer than the row ``right`` (aliases; a MERGE condition, as SQL).

    Strictly: on an equal position the existing row stays, so applying a batch again changes nothing.
    """
    return f"{_position_sql(left)} > {_position_sql(right)}"
