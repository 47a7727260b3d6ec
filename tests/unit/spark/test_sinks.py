"""Both sinks apply micro-batches of several collections idempotently (Kafka-shaped rows, no Kafka)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.spark_support import Topic, documents, envelope, records

pytestmark = pytest.mark.spark


def applier(spark: Any, tmp_path: Path, table_format: str, **options: Any) -> tuple[Any, str]:
    """The job's batch function over a warehouse in ``tmp_path``, and the warehouse."""
    from mongocdc.spark.job import BatchApplier
    from mongocdc.spark.options import JobOptions, TableFormat

    warehouse = str(tmp_path / "wh")
    job = JobOptions(
        bootstrap_servers="unused:9092",
        warehouse=warehouse,
        checkpoint=str(tmp_path / "cp"),
        table_format=TableFormat(table_format),
        **options,
    )
    apply = BatchApplier(spark, job)
    _appliers.append(apply)
    return apply, warehouse


_appliers: list[Any] = []


@pytest.fixture(autouse=True)
def _loads_end_with_their_test() -> Any:
    """The appliers' background loads of their tables' new versions end before the next test (which may count
    Spark's work)."""
    yield
    for apply in _appliers:
        apply.snapshots.wait()
    _appliers.clear()


def take_delta_path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Send every Delta batch down one path: ``rewrite`` (one overwrite of the table) or the MERGE
    (``merge-many-markers``: the MERGE, its decision reading only the markers of the batch's keys)."""
    from mongocdc.spark import sinks

    monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 0 if path == "rewrite" else 10**9)
    monkeypatch.setattr(sinks, "REWRITE_SHARE", 10**9)
    if path == "merge-many-markers":
        monkeypatch.setattr(sinks, "MARKERS_WHOLE_MAX_BYTES", -1)


@pytest.mark.parametrize("table_format", ["delta", "delta-rewrite", "delta-rewrite-compacting", "parquet"])
def test_batches_of_several_collections_become_tables_and_a_rerun_batch_changes_nothing(
    spark: Any, tmp_path: Path, table_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delta``: small batches go through MERGE; ``delta-rewrite``: every batch counts as large (one
    overwrite), its markers appended or (``-compacting``) the marker table replaced every batch."""
    from mongocdc.spark import sinks

    if table_format.startswith("delta-rewrite"):
        monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 0)
        if table_format.endswith("compacting"):
            monkeypatch.setattr(sinks, "MARKER_FILES_MAX", 1)
        table_format = "delta"
    else:
        monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 10**9)
    from mongocdc.spark.options import changelog_path, table_path
    from mongocdc.spark.sinks import HadoopFs, parquet_versions, read_changelog, read_table

    apply, warehouse = applier(spark, tmp_path, table_format, changelog=True, skip_topics=r"it\.transaction")
    orders, users = Topic("it.shop.orders"), Topic("it.crm.users")
    user = {"db": "crm", "collection": "users"}
    batch0 = [
        orders.add(envelope("r", 1, {"qty": 1}, ts_ms=1000, snapshot="true")),
        orders.add(envelope("r", 2, {"qty": 2}, ts_ms=1000, snapshot="true")),
        orders.add(envelope("c", 3, {"qty": 3}, ts_ms=2000)),
        users.add(envelope("c", "ann", {"age": 30}, ts_ms=2000, **user)),
        ("it.transaction", 0, 0, b'{"id":"x"}', b'{"status":"END","id":"x"}'),
    ]
    batch1 = [
        orders.add(envelope("u", 1, {"qty": 10}, ts_ms=3000)),
        orders.add(envelope("d", 2, None, ts_ms=3000, ord=2)),
        orders.add((b'{"id":"2"}', None)),
        orders.add(envelope("r", 2, {"qty": 2}, ts_ms=1000, snapshot="true")),  # a stale replay after the delete
        users.add(envelope("c", "bob", {"age": 40}, ts_ms=3000, **user)),
        users.add(envelope("u", "ann", {"age": 31}, ts_ms=3500, **user)),
    ]
    apply(records(spark, batch0), 0)
    orders_table = table_path(warehouse, "shop", "orders")
    assert documents(read_table(spark, orders_table)) == {
        1: {"_id": 1, "qty": 1},
        2: {"_id": 2, "qty": 2},
        3: {"_id": 3, "qty": 3},
    }
    apply(records(spark, batch1), 1)
    apply(records(spark, batch1), 1)  # Spark runs a batch again when the last attempt did not commit
    expected_orders = {1: {"_id": 1, "qty": 10}, 3: {"_id": 3, "qty": 3}}
    expected_users = {"ann": {"_id": "ann", "age": 31}, "bob": {"_id": "bob", "age": 40}}
    assert documents(read_table(spark, orders_table)) == expected_orders
    assert documents(read_table(spark, table_path(warehouse, "crm", "users"))) == expected_users
    assert apply.applied == {"shop.orders": 3 + 3 + 3, "crm.users": 1 + 2 + 2}

    changelog = read_changelog(spark, changelog_path(warehouse, "shop", "orders"))
    ops = sorted((r["_batch_id"], r["_op"], json.loads(r["_key"])) for r in changelog.collect())
    assert ops == [(0, "c", 3), (0, "r", 1), (0, "r", 2), (1, "d", 2), (1, "r", 2), (1, "u", 1)]

    if table_format == "parquet":
        fs = HadoopFs(spark)
        assert parquet_versions(fs, orders_table) == [1, 2, 3]  # one version per applied batch, the last 3 kept
        apply(records(spark, []), 2)
        apply(records(spark, batch1), 3)
        assert parquet_versions(fs, orders_table) == [2, 3, 4]
        assert len(fs.names(f"{orders_table}/_versions")) == 3
        assert documents(read_table(spark, orders_table)) == expected_orders


@pytest.mark.parametrize("crash", [None, "at the markers", "at the rows", "compacting"])
@pytest.mark.parametrize("path", ["merge", "merge-many-markers", "rewrite"])
def test_delta_keeps_deleted_keys_deleted_and_brings_re_inserted_keys_back(
    spark: Any, tmp_path: Path, path: str, crash: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delete, re-insert, stale replays in between, delete again, each in its own small batch, through
    the MERGE or (``rewrite``) every batch after the first as a large one, overwriting the table.

    With ``crash``, every batch first dies when it writes the markers (or the rows) and is then
    applied again, as Spark does after a crash: whatever the first attempt wrote, nothing stale
    may come back. ``compacting``: no crash, and the marker table is folded to the newest marker
    per key whenever a batch would make it two files, which must decide exactly as the appended markers did.
    """
    from mongocdc.spark import sinks
    from mongocdc.spark.options import deleted_path, table_path
    from mongocdc.spark.sinks import read_table

    take_delta_path(monkeypatch, path)
    if crash == "compacting":
        monkeypatch.setattr(sinks, "MARKER_FILES_MAX", 2)
        crash = None
    apply, warehouse = applier(spark, tmp_path, "delta")
    t = Topic("it.shop.orders")
    batches = [
        [
            t.add(envelope("r", 1, {"v": "snap"}, ts_ms=1000, snapshot="true")),
            t.add(envelope("c", 2, {"v": "x"}, ts_ms=1500)),
        ],
        [t.add(envelope("u", 1, {"v": "a"}, ts_ms=2000)), t.add(envelope("d", 1, None, ts_ms=3000))],
        [t.add(envelope("u", 1, {"v": "a"}, ts_ms=2000))],  # a replay of the update before the delete
        [t.add(envelope("c", 1, {"v": "back"}, ts_ms=4000))],  # the key comes back
        [
            t.add(envelope("u", 1, {"v": "a"}, ts_ms=2000)),
            t.add(envelope("r", 1, {"v": "snap"}, ts_ms=1000, snapshot="true")),
        ],
        [t.add(envelope("d", 1, None, ts_ms=3000))],  # a replay of the first delete: older than the row
        [t.add(envelope("u", 1, {"v": "newest"}, ts_ms=5000)), t.add(envelope("d", 2, None, ts_ms=5000))],
        [t.add(envelope("d", 1, None, ts_ms=6000))],
        [t.add(envelope("u", 1, {"v": "newest"}, ts_ms=5000)), t.add(envelope("c", 2, {"v": "x"}, ts_ms=1500))],
    ]
    expected = [
        {1: {"_id": 1, "v": "snap"}, 2: {"_id": 2, "v": "x"}},
        {2: {"_id": 2, "v": "x"}},
        {2: {"_id": 2, "v": "x"}},
        {1: {"_id": 1, "v": "back"}, 2: {"_id": 2, "v": "x"}},
        {1: {"_id": 1, "v": "back"}, 2: {"_id": 2, "v": "x"}},
        {1: {"_id": 1, "v": "back"}, 2: {"_id": 2, "v": "x"}},
        {1: {"_id": 1, "v": "newest"}},
        {},
        {},
    ]
    table = table_path(warehouse, "shop", "orders")
    from delta.tables import DeltaMergeBuilder
    from pyspark.sql.readwriter import DataFrameWriter

    real_save, real_merge = DataFrameWriter.save, DeltaMergeBuilder.execute
    crashes = 0

    def save_failing_on(target: str) -> Any:
        def save(writer: Any, path: str | None = None, *args: Any, **kwargs: Any) -> None:
            nonlocal crashes
            if path is not None and path.startswith(target):
                crashes += 1
                raise RuntimeError("crash")
            real_save(writer, path, *args, **kwargs)

        return save

    def merge_failing(builder: Any) -> None:
        nonlocal crashes
        crashes += 1
        raise RuntimeError("crash")

    for number, (batch, want) in enumerate(zip(batches, expected, strict=True)):
        if crash and number:
            with monkeypatch.context() as patched:
                if crash == "at the markers":
                    patched.setattr(DataFrameWriter, "save", save_failing_on(deleted_path(warehouse, "shop", "orders")))
                elif path == "rewrite":
                    patched.setattr(DataFrameWriter, "save", save_failing_on(table))
                else:
                    patched.setattr(DeltaMergeBuilder, "execute", merge_failing)
                try:
                    apply(records(spark, batch), number)
                except RuntimeError as exc:
                    assert str(exc) == "crash"
        apply(records(spark, batch), number)
        assert documents(read_table(spark, table)) == want, f"after batch {number}"
        # markers are written aside while the rows are, and nothing of a crashed attempt stays there
        assert sinks.HadoopFs(spark).names(f"{deleted_path(warehouse, 'shop', 'orders')}/{sinks.STAGED_DIR}") == []
    # markers: the batches with a delete (both paths append every delete of a batch); rows: every batch after the
    # first
    assert crashes == {None: 0, "at the markers": 4, "at the rows": len(batches) - 1}[crash]
    assert real_merge is DeltaMergeBuilder.execute
    marker_files = sinks.MarkerFiles(spark, deleted_path(warehouse, "shop", "orders"))
    marker_keys = [json.loads(r["_key"]) for r in marker_files.read().collect()]
    if sinks.MARKER_FILES_MAX == 2:
        # folded: one marker per key (1's newest delete, 2's), in fewer files than the batches appended
        assert sorted(marker_keys) == [1, 2]
        assert len(marker_files.files) == 1
    else:
        # appended: every delete of a batch (1's first delete, its replay at a later offset, its last delete; 2's)
        assert sorted(marker_keys) == [1, 1, 1, 2]


@pytest.mark.parametrize("retention_ms", [1000, None])
@pytest.mark.parametrize("path", ["merge", "rewrite", "parquet"])
def test_delete_markers_older_than_the_retention_go_and_the_others_keep_stale_replays_out(
    spark: Any, tmp_path: Path, path: str, retention_ms: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--delete-retention``: a marker stays while the collection's changes are less than the retention
    newer than it, and goes (with a Delta table, when the marker files are folded) once they are more;
    ``forever`` (``None``) keeps it. A replay older than a marker that went brings its document back:
    the trade-off the option's help states."""
    from mongocdc.spark import sinks
    from mongocdc.spark.options import deleted_path, table_path
    from mongocdc.spark.sinks import read_table

    monkeypatch.setattr(sinks, "MARKER_FILES_MAX", 2)  # a Delta table folds its markers at every batch
    take_delta_path(monkeypatch, path)
    table_format = "parquet" if path == "parquet" else "delta"
    apply, warehouse = applier(spark, tmp_path, table_format, delete_retention_ms=retention_ms)
    table = table_path(warehouse, "shop", "orders")

    def markers() -> list[tuple[int, int]]:
        if path == "parquet":
            newest = sinks.parquet_versions(sinks.HadoopFs(spark), table)[-1]
            rows = spark.read.parquet(f"{table}/{sinks.VERSIONS_DIR}/{newest:020d}/deleted").collect()
        else:
            found = sinks.MarkerFiles(spark, deleted_path(warehouse, "shop", "orders")).read()
            rows = [] if found is None else found.collect()
        return sorted((json.loads(r["_key"]), r["_ts_ms"]) for r in rows)

    t = Topic("it.shop.orders")
    create_1 = envelope("c", 1, {"v": "old"}, ts_ms=1000)
    two = {2: {"_id": 2, "v": "x"}}
    steps = [
        ([t.add(create_1), t.add(envelope("c", 2, {"v": "x"}, ts_ms=1000))], {1: {"_id": 1, "v": "old"}, **two}),
        ([t.add(envelope("d", 1, None, ts_ms=2000))], two),
        # 500 ms after the delete: the marker stays and keeps the replayed create out
        ([t.add(create_1), t.add(envelope("u", 2, {"v": "x"}, ts_ms=2500))], two),
        # 1500 ms after the delete: more than 1000 ms, so the marker goes
        ([t.add(envelope("u", 2, {"v": "x"}, ts_ms=3500))], two),
    ]
    for number, (batch, want) in enumerate(steps):
        apply(records(spark, batch), number)
        assert documents(read_table(spark, table)) == want, f"after batch {number}"
    assert markers() == ([] if retention_ms else [(1, 2000)])
    apply(records(spark, [t.add(create_1)]), len(steps))  # the create replayed once more
    back = {1: {"_id": 1, "v": "old"}, **two} if retention_ms else two
    assert documents(read_table(spark, table)) == back


def test_marker_files_fold_the_newest_marker_per_key_of_the_files_they_read_and_keep_newer_files(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mongocdc.spark import merge as m
    from mongocdc.spark import sinks

    monkeypatch.setattr(sinks, "MARKER_FILES_MAX", 2)
    path = str(tmp_path / "markers")

    def marker(key: str, ts_ms: int) -> Any:
        return spark.createDataFrame([(key, "d", ts_ms, 1, 0, 0, ts_ms)], m.META_SCHEMA)

    first = sinks.MarkerFiles(spark, path)
    assert first.read() is None
    first.stage(marker('"a"', 1), None).publish()  # no markers yet: appended
    folding = sinks.MarkerFiles(spark, path)
    markers = folding.read()
    assert markers is not None and len(folding.files) == 1
    sinks.MarkerFiles(spark, path).stage(marker('"b"', 2), None).publish()  # written after the read above
    new = marker('"a"', 3)
    folding.stage(new, markers.unionByName(new)).publish()  # one file read + this batch's: folded
    after = sinks.MarkerFiles(spark, path)
    rows = after.read()
    assert rows is not None
    assert sorted((r["_key"], r["_ts_ms"]) for r in rows.collect()) == [('"a"', 3), ('"b"', 2)]
    assert len(after.files) == 2  # the fold's file and the one written since the fold's read


def test_new_delta_tables_keep_statistics_of_every_column_but_the_json_document(spark: Any, tmp_path: Path) -> None:
    from mongocdc.spark import merge as m
    from mongocdc.spark.options import changelog_path, table_path

    def stats_columns(path: str) -> tuple[str | None, set[str]]:
        """The table's statistics property, and the columns its files have a minimum for."""
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
        logged: set[str] = set()
        for log in sorted(Path(path, "_delta_log").glob("*.json")):
            for line in log.read_text().splitlines():
                add = json.loads(line).get("add")
                if add and add.get("stats"):
                    logged |= set(json.loads(add["stats"]).get("minValues", {}))
        return detail["properties"].get("delta.dataSkippingStatsColumns"), logged

    t = Topic("it.shop.orders")
    batch = [t.add(envelope("c", 1, {"qty": 1}, ts_ms=1000)), t.add(envelope("c", 2, {"qty": 2}, ts_ms=1000))]
    apply, warehouse = applier(spark, tmp_path / "json", "delta", changelog=True)
    apply(records(spark, batch), 0)
    meta = set(m.META_COLUMNS)
    prop, logged = stats_columns(table_path(warehouse, "shop", "orders"))
    assert prop is not None and set(prop.split(",")) == meta
    assert logged == meta
    prop, logged = stats_columns(changelog_path(warehouse, "shop", "orders"))
    assert prop is not None and set(prop.split(",")) == meta | {"_batch_id"}
    assert logged == meta | {"_batch_id"}

    apply, warehouse = applier(spark, tmp_path / "typed", "delta", columns="qty INT")
    apply(records(spark, batch), 0)
    prop, logged = stats_columns(table_path(warehouse, "shop", "orders"))
    assert prop is None and logged == meta | {"qty"}  # projected columns: Delta's default, the first 32


@pytest.mark.parametrize("path", ["merge", "rewrite"])
def test_a_batch_like_the_last_one_compiles_no_code_again(
    spark: Any, tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch compiles over a hundred generated classes (the merge's queries and Delta's own), more than
    Spark's default code cache holds: a long-running job must find them all compiled the next batch."""
    take_delta_path(monkeypatch, path)
    codegen = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    apply, _ = applier(spark, tmp_path, "delta")
    t = Topic("it.shop.orders")

    def batch(n: int) -> Any:
        return records(
            spark,
            [
                t.add(envelope("u", 1, {"v": n}, ts_ms=1000 * n)),
                t.add(envelope("c", 100 + n, {"v": n}, ts_ms=1000 * n)),
                t.add(envelope("d", 100 + n - 1, None, ts_ms=1000 * n + 1)),
            ],
        )

    for n in range(1, 3):
        apply(batch(n), n)
    apply.snapshots.wait()  # the loads of the tables' new versions (``sinks.Snapshots``) count with their batch
    compiled = codegen.METRIC_COMPILATION_TIME().getCount()
    apply(batch(3), 3)
    apply.snapshots.wait()
    assert codegen.METRIC_COMPILATION_TIME().getCount() - compiled == 0


def test_delta_tables_of_a_long_stream_of_small_batches_are_compacted(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each small batch's MERGE adds files and deletion vectors and each changelog append a file; the job
    compacts a table every ``COMPACT_EVERY`` such writes, and a large batch's rewrite starts the count again."""
    from delta.tables import DeltaTable

    from mongocdc.spark import sinks
    from mongocdc.spark.options import changelog_path, table_path
    from mongocdc.spark.sinks import read_table

    monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 10**9)
    monkeypatch.setattr(sinks, "COMPACT_EVERY", 3)
    apply, warehouse = applier(spark, tmp_path, "delta", changelog=True)
    rows, changes = table_path(warehouse, "shop", "orders"), changelog_path(warehouse, "shop", "orders")
    t = Topic("it.shop.orders")

    def compactions(path: str) -> int:
        return sum(h["operation"] == "OPTIMIZE" for h in DeltaTable.forPath(spark, path).history().collect())

    apply(records(spark, [t.add(envelope("r", k, {"v": 0}, ts_ms=1000, snapshot="true")) for k in range(20)]), 0)
    expected = {k: {"_id": k, "v": 0} for k in range(20)}
    for n in range(1, 5):
        batch = [
            t.add(envelope("u", n, {"v": n}, ts_ms=1000 + n)),
            t.add(envelope("c", 100 + n, {"v": n}, ts_ms=1000 + n)),
            t.add(envelope("d", 10 + n, None, ts_ms=1000 + n)),
        ]
        apply(records(spark, batch), n)
        expected[n] = {"_id": n, "v": n}
        expected[100 + n] = {"_id": 100 + n, "v": n}
        expected.pop(10 + n)
    assert (compactions(rows), compactions(changes)) == (1, 1)  # after write 3 of each (batch 0 created both)
    for path in (rows, changes):
        files = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]["numFiles"]
        assert files < 6, f"{path}: {files} files after 5 batches"  # one or two a batch without compaction
    assert documents(read_table(spark, rows)) == expected

    monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 0)  # a large batch: the table is rewritten
    monkeypatch.setattr(sinks, "REWRITE_SHARE", 10**9)
    apply(records(spark, [t.add(envelope("u", 1, {"v": 9}, ts_ms=2000))]), 5)
    monkeypatch.setattr(sinks, "REWRITE_MIN_BATCH", 10**9)
    apply(records(spark, [t.add(envelope("u", 2, {"v": 9}, ts_ms=2000))]), 6)
    assert compactions(rows) == 1  # the rewrite started the count again: one small write since, not three
    assert compactions(changes) == 2  # the changelog's writes 6 and 7 are appends like any other


@pytest.mark.parametrize("path", ["merge", "rewrite"])
def test_each_commit_loads_the_tables_new_version_in_the_background(
    spark: Any, tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After each commit (the first write, a MERGE, a rewrite, a changelog append) the job loads the table's new
    version on a thread of its own, so the next batch's MERGE finds its state read; the load reads the version
    just committed, and the job waits for the loads before it ends."""
    from delta.tables import DeltaTable

    from mongocdc.spark.options import changelog_path, table_path

    take_delta_path(monkeypatch, path)
    apply, warehouse = applier(spark, tmp_path, "delta", changelog=True)
    rows, changes = table_path(warehouse, "shop", "orders"), changelog_path(warehouse, "shop", "orders")
    t = Topic("it.shop.orders")
    for n in range(3):
        batch = [t.add(envelope("c", 10 * n + k, {"v": n}, ts_ms=1000 + n)) for k in range(3)]
        apply(records(spark, [*batch, t.add(envelope("d", 10 * n, None, ts_ms=2000 + n))]), n)
        assert set(apply.snapshots.loading) == {rows, changes}
        # the newest load of each table reads the version just committed
        loaded = {table: futures[-1].result(timeout=120) for table, futures in apply.snapshots.loading.items()}
        for table in (rows, changes):
            assert loaded[table] == DeltaTable.forPath(spark, table).detail().collect()[0]["numFiles"]
    apply.snapshots.wait()
    assert apply.snapshots.loading == {}


def test_loading_a_new_version_is_one_spark_job_and_the_loaded_version_needs_none(spark: Any, tmp_path: Path) -> None:
    """The background load reads the new version's state in one Spark job (``DESCRIBE DETAIL``'s row is collected as
    it is, not through a query of its own), and Delta keeps that state: using the version again runs no job."""
    from mongocdc.spark.sinks import load_snapshot

    path = str(tmp_path / "table")
    spark.range(10).write.format("delta").save(path)
    spark.range(10, 20).write.format("delta").mode("append").save(path)
    tracker = spark.sparkContext.statusTracker()

    def last_job() -> int:
        return max(tracker.getJobIdsForGroup(None), default=-1)

    before = last_job()
    files = load_snapshot(spark, path)
    loaded = last_job()
    assert loaded - before == 1
    assert load_snapshot(spark, path) == files
    assert last_job() == loaded
    assert files == spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]["numFiles"] > 0


def test_the_job_waits_for_every_load_of_a_table_committed_again_while_one_ran(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from mongocdc.spark import sinks

    release = threading.Event()
    calls: list[str] = []

    def load(_spark: Any, path: str) -> int:
        calls.append(path)
        if len(calls) == 1:
            release.wait(60)  # the first load is still running when the table is committed again
        return len(calls)

    monkeypatch.setattr(sinks, "load_snapshot", load)
    snapshots = sinks.Snapshots(spark)
    snapshots.committed("table")
    snapshots.committed("table")
    first, second = snapshots.loading["table"]
    assert second.result(timeout=60) == 2
    waiter = threading.Thread(target=snapshots.wait)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not first.done()  # the wait waits for the earlier load too
    release.set()
    waiter.join(60)
    assert not waiter.is_alive() and first.done() and snapshots.loading == {}


def test_a_load_that_fails_costs_the_next_batch_the_work_and_fails_nothing(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mongocdc.spark import sinks

    snapshots = sinks.Snapshots(spark)
    path = str(tmp_path / "not-a-delta-table")
    snapshots.committed(path)
    with caplog.at_level("DEBUG", logger="mongocdc.spark.sinks"):
        snapshots.wait()
    assert f"loading the newest version of {path} failed" in caplog.text
    assert snapshots.loading == {}


def test_a_compaction_that_fails_is_logged_and_tried_again_after_the_next_write(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mongocdc.spark import sinks

    monkeypatch.setattr(sinks, "COMPACT_EVERY", 1)
    compaction = sinks.Compaction(spark)
    path = str(tmp_path / "not-a-delta-table")
    with caplog.at_level("WARNING", logger="mongocdc.spark.sinks"):
        compaction.wrote(path)  # the batch's data is committed: upkeep must not fail it
    assert f"compacting {path} failed" in caplog.text
    assert compaction.writes[path] == 1  # still due


def test_the_row_bounds_of_a_table_spare_the_count_until_they_cannot_decide() -> None:
    """A large batch chooses MERGE or rewrite by the table's rows: counted once, then bounded by what each
    MERGE can add (its non-delete changes) and remove (its deletes); counted again only in between."""
    from mongocdc.spark.sinks import REWRITE_SHARE, BatchSize, TableRows

    counts: list[int] = []

    def count(rows: int) -> Any:
        def counted() -> int:
            counts.append(rows)
            return rows

        return counted

    bounds = TableRows()
    assert not bounds.choose_rewrite("t", 10_000, count(1_000_000))  # unknown: counted
    assert counts == [1_000_000] and bounds.bounds["t"] == (1_000_000, 1_000_000)
    bounds.merged("t", BatchSize(10_000, deletes=1_000))
    assert bounds.bounds["t"] == (999_000, 1_009_000)
    assert not bounds.choose_rewrite("t", 10_000, count(0)) and len(counts) == 1  # 40 k < 999 k: no count
    assert bounds.choose_rewrite("t", 300_000, count(0)) and len(counts) == 1  # 1.2 M >= 1,009 k: no count
    # in between the bounds: counted again, and the bounds are exact once more
    assert not bounds.choose_rewrite("t", 1_004_000 // REWRITE_SHARE, count(1_008_000))
    assert counts == [1_000_000, 1_008_000] and bounds.bounds["t"] == (1_008_000, 1_008_000)
    bounds.forget("t")  # a rewrite: its row count is not known without counting
    assert bounds.choose_rewrite("t", 10_000, count(20_000)) and counts[-1] == 20_000
