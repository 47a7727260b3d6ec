"""The MERGE a Delta user would write by hand for Debezium CDC topics: the spark benchmark's yardstick.

This is the pattern Delta Lake's documentation recommends for change-data-capture upserts from a stream
(Structured Streaming ``foreachBatch``, one ``MERGE`` per micro-batch):

1. parse the Debezium envelope of each record (key ``id``, ``op``, ``after``, ``source.ts_ms``,
   ``source.ord``; bare or wrapped by the JsonConverter's ``schema``/``payload``);
2. keep each key's latest change in the batch: ``row_number()`` over the key, ordered by
   ``source.ts_ms`` then ``source.ord``, descending;
3. one ``MERGE`` on the key: matched and ``op = 'd'`` → delete, matched → update all, not matched (and
   not a delete) → insert all.

The table has the columns ``_key`` (the Debezium key's ``id``) and ``document`` (``after``), as mongocdc's
tables without ``--columns``, so the two can be compared row for row. Nothing more: no delete markers,
no tie-breaks beyond ``ts_ms``/``ord``, no check that the change is newer than the row. That is what
makes it wrong in the cases tests/unit/spark/test_handwritten_merge.py shows, and what a fair yardstick
of speed is: the least a correct-looking job does.
"""

from __future__ import annotations

from typing import Any

ENVELOPE = (
    "STRUCT<op: STRING, after: STRING, source: STRUCT<ts_ms: BIGINT, ord: BIGINT>, "
    "payload: STRUCT<op: STRING, after: STRING, source: STRUCT<ts_ms: BIGINT, ord: BIGINT>>>"
)
KEY = "STRUCT<id: STRING, payload: STRUCT<id: STRING>>"


def latest_changes(records: Any) -> Any:
    """Kafka records (``key``, ``value``) → one row per key: its latest change of the batch."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    parsed = records.where("value IS NOT NULL").selectExpr(
        f"from_json(CAST(value AS STRING), '{ENVELOPE}') AS v", f"from_json(CAST(key AS STRING), '{KEY}') AS k"
    )
    changes = parsed.selectExpr(
        "coalesce(k.payload.id, k.id) AS _key",
        "coalesce(v.payload.op, v.op) AS op",
        "coalesce(v.payload.after, v.after) AS document",
        "coalesce(v.payload.source.ts_ms, v.source.ts_ms) AS ts_ms",
        "coalesce(v.payload.source.ord, v.source.ord) AS ord",
    ).where("op IN ('c', 'u', 'r', 'd') AND _key IS NOT NULL")
    newest_first = Window.partitionBy("_key").orderBy(F.col("ts_ms").desc(), F.col("ord").desc())
    return changes.withColumn("_rn", F.row_number().over(newest_first)).where("_rn = 1").drop("_rn")


def apply_batch(spark: Any, path: str, records: Any) -> None:
    """The ``foreachBatch`` body: the batch's latest change per key merged into the Delta table at ``path``."""
    from delta.tables import DeltaTable

    latest = latest_changes(records)
    if not DeltaTable.isDeltaTable(spark, path):
        latest.where("op != 'd'").select("_key", "document").write.format("delta").save(path)
        return
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(latest.alias("s"), "t._key = s._key")
        .whenMatchedDelete(condition="s.op = 'd'")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll(condition="s.op != 'd'")
        .execute()
    )


def documents(spark: Any, path: str) -> dict[str, str | None]:
    """``_key`` → ``document`` of a table the hand-written MERGE keeps."""
    return {row["_key"]: row["document"] for row in spark.read.format("delta").load(path).collect()}
