"""The running job reads Spark's progress reports it has not written yet, each once and in order, as Spark's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def finished_query(spark: Any, tmp_path: Path, batches: int) -> Any:
    """A stream over ``batches`` Parquet files, one file a batch, run until caught up."""
    source = tmp_path / "source"
    for number in range(batches):
        spark.range(number * 10, number * 10 + 10).coalesce(1).write.parquet(str(source / f"part{number}"))
    files = sorted(str(p) for p in source.glob("part*/*.parquet"))
    flat = tmp_path / "flat"
    flat.mkdir()
    for number, file in enumerate(files):
        Path(file).rename(flat / f"{number:03d}.parquet")
    query = (
        spark.readStream.schema("id BIGINT")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(flat))
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .foreachBatch(lambda records, _batch: records.count())
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


def test_new_reports_are_each_read_once_in_order_and_match_pysparks_reading(spark: Any, tmp_path: Path) -> None:
    from mongocdc.spark.job import ProgressLog, _new_reports
    from mongocdc.spark.options import JobOptions

    query = finished_query(spark, tmp_path, batches=3)
    # PySpark's own reading of the same reports (field by field, the slow way the job no longer takes)
    expected = [json.loads(p.json) for p in query.recentProgress]
    assert [r["batchId"] for r in expected if r["numInputRows"]] == [0, 1, 2]
    options = JobOptions(bootstrap_servers="b:9092", warehouse=str(tmp_path / "w"), checkpoint=str(tmp_path / "c"))

    fresh = ProgressLog(spark, options)
    new = _new_reports(query, fresh)
    assert new == [r for r in expected if fresh.is_new(r)] and [r["batchId"] for r in new][:3] == [0, 1, 2]
    fresh.record(new)
    assert _new_reports(query, fresh) == []  # nothing twice

    # batches ended since the last look: every one not written yet, oldest first
    behind = ProgressLog(spark, options)
    behind.record(expected[:1])
    assert _new_reports(query, behind) == expected[1:]


def test_the_newest_progress_files_are_kept_and_the_directory_is_listed_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mongocdc.spark import job
    from mongocdc.spark.options import JobOptions
    from mongocdc.spark.sinks import HadoopFs

    monkeypatch.setattr(job, "KEEP_PROGRESS", 3)
    progress = tmp_path / "c" / "mongocdc" / "progress"
    progress.mkdir(parents=True)
    for batch in (1, 2):  # left by an earlier run
        (progress / f"{batch:020d}.json").write_text("{}\n")
    listings: list[str] = []
    names = HadoopFs.names

    def counted(self: HadoopFs, path: str) -> list[str]:
        listings.append(path)
        return names(self, path)

    monkeypatch.setattr(HadoopFs, "names", counted)
    options = JobOptions(bootstrap_servers="b:9092", warehouse=str(tmp_path / "w"), checkpoint=str(tmp_path / "c"))
    progress_log = job.ProgressLog(spark, options)
    progress_log.record([{"batchId": 3, "numInputRows": 0}])  # an idle trigger reports the next batch's id
    progress_log.record([{"batchId": 3, "numInputRows": 5}])
    for batch in (4, 5, 6):
        progress_log.record([{"batchId": batch, "numInputRows": 5}])
    assert sorted(p.name for p in progress.glob("*.json")) == [f"{batch:020d}.json" for batch in (4, 5, 6)]
    assert len(listings) == 1
