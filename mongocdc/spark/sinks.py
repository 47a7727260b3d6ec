"""Where the state tables live: Delta Lake (MERGE) or versioned Parquet, plus the changelog.

Both sinks apply one batch of one collection with the same decision function
(:func:`mongocdc.spark.merge.merge`) and are idempotent: applying a batch again (Spark
re-runs the last batch after a crash) changes nothing.

*Delta*: the table ``<warehouse>/<db>/<collection>`` holds the documents; the delete markers
are append-only Parquet files under ``_mongocdc/deleted`` (:class:`MarkerFiles`; the newest
marker of a key counts, one older than the key's row decides nothing). A batch keeps its newest
change per key when it is newer than the key's markers, and goes into one ``MERGE`` of the rows
table whose conditions take a change only when it is newer than the row it matches; the
batch's deletes are then appended to the markers. A batch large against the table rewrites
the rows table instead (one overwrite) and appends all its deletes as markers (one that lost to
a newer row decides nothing). New tables get data-skipping statistics on every column but the
JSON ``document`` (:func:`new_table_options`) and deletion
vectors (``DELTA_CONF``), so a MERGE marks replaced rows instead of rewriting every file it
touches.

*Parquet*: each batch writes a complete new version of the table (documents and markers)
to ``<table>/_versions/<N>/``; only then is ``<table>/_commits/<N>`` created, and that empty
file is the pointer readers follow (the newest one wins; creating a file is atomic on every
Hadoop filesystem), so a reader sees a whole batch or none of it; ``<table>/_latest`` then names that
version's documents directory for engines that read plain Parquet (``write_latest``). The last
``KEEP_VERSIONS`` versions are kept. :func:`read_table` reads either kind.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StructType

from mongocdc.spark import merge as m
from mongocdc.spark.hadoop_fs import HadoopFs
from mongocdc.spark.options import TableFormat, changelog_path, deleted_path, table_path

log = logging.getLogger("mongocdc.spark.sinks")
T = TypeVar("T")

KEEP_VERSIONS = 3
VERSIONS_DIR = "_versions"
COMMITS_DIR = "_commits"


@dataclass(frozen=True)
class BatchSize:
    """What the job counted of one collection's part of a batch (in the query that cached the batch)."""

    changes: int
    deletes: int = 0
    expired_before: int | None = None
    """Delete markers with a ``_ts_ms`` below this may be dropped (``--delete-retention`` before the batch's newest
    change); ``None``: every marker is kept."""


def in_background(work: Callable[[], T]) -> Future[T]:
    """Run ``work`` (Spark actions) on a thread of its own, so its planning and job overlap the caller's."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mongocdc-sink")
    try:
        return pool.submit(work)
    finally:
        pool.shutdown(wait=False)


def both(first: Callable[[], None], second: Callable[[], None]) -> None:
    """Run two independent writes at once; wait for both, then raise the first error."""
    other = in_background(second)
    try:
        first()
    finally:
        error = other.exception()
    if error is not None:
        raise error


# --- Parquet ---------------------------------------------------------------------------------


def parquet_versions(fs: HadoopFs, table: str) -> list[int]:
    """Committed versions of a Parquet table, oldest first."""
    return sorted(int(name) for name in fs.names(f"{table}/{COMMITS_DIR}") if name.isdigit())


def _version_dir(table: str, version: int) -> str:
    return f"{table}/{VERSIONS_DIR}/{version:020d}"


LATEST_FILE = "_latest"
"""``<table>/_latest``: one line, the newest committed version's documents directory relative to the table
(``_versions/<N, 20 digits>/rows``), for engines that read Parquet and know nothing of ``_commits/``."""


def write_latest(fs: HadoopFs, table: str, version: int) -> None:
    """Point ``<table>/_latest`` at ``version`` (``HadoopFs.replace_text``: a reader that finds no pointer for a
    moment takes the highest number in ``_commits/``)."""
    fs.replace_text(f"{table}/{LATEST_FILE}", f"{VERSIONS_DIR}/{version:020d}/rows\n")


def is_delta_table(fs: HadoopFs, table: str) -> bool:
    return fs.exists(f"{table}/_delta_log")


def read_table(spark: SparkSession, table: str) -> DataFrame:
    """The documents of a state table (Delta, or the newest committed Parquet version)."""
    fs = HadoopFs(spark)
    if is_delta_table(fs, table):
        return spark.read.format("delta").load(table)
    versions = parquet_versions(fs, table)
    if not versions:
        raise FileNotFoundError(f"{table} is not a mongocdc table (no _delta_log, no {COMMITS_DIR}/)")
    return spark.read.parquet(f"{_version_dir(table, versions[-1])}/rows")


@dataclass
class ParquetTable:
    """A collection's state as versioned Parquet directories behind commit markers."""

    spark: SparkSession
    path: str
    payload: StructType

    def apply(self, changes: DataFrame, size: BatchSize) -> None:
        """Apply one batch of this collection's changes (``size``: counted by the caller)."""
        fs = HadoopFs(self.spark)
        versions = parquet_versions(fs, self.path)
        version = (versions[-1] + 1) if versions else 1
        target = _version_dir(self.path, version)
        fs.delete(target)  # left over by an attempt that crashed before its commit marker
        columns = [*m.META_COLUMNS, *[f.name for f in self.payload.fields]]
        if versions:
            base = _version_dir(self.path, versions[-1])
            rows = self.spark.read.parquet(f"{base}/rows")
            markers = self.spark.read.parquet(f"{base}/deleted")
        else:
            rows = m.empty_state(self.spark, self.payload)
            markers = rows.select(*m.META_COLUMNS)
        decision = m.Decision(
            rows.unionByName(markers, allowMissingColumns=True),
            changes,
            broadcast=size.changes <= m.BROADCAST_MAX_ROWS,
            whole_state=True,
        ).materialize()
        applied = decision.applied()
        new_rows = decision.kept(rows).select(*columns).unionByName(m.live_rows(applied).select(*columns))
        new_markers = m.unexpired(decision.kept(markers).unionByName(m.delete_markers(applied)), size.expired_before)
        # both halves of the version at once (neither is visible before the commit marker below)
        both(
            lambda: new_rows.write.mode("overwrite").parquet(f"{target}/rows"),
            lambda: new_markers.write.mode("overwrite").parquet(f"{target}/deleted"),
        )
        fs.touch(f"{self.path}/{COMMITS_DIR}/{version}")  # the pointer swap: readers now see this version
        write_latest(fs, self.path, version)
        for old in versions[: max(0, len(versions) + 1 - KEEP_VERSIONS)]:
            fs.delete(f"{self.path}/{COMMITS_DIR}/{old}")
            fs.delete(_version_dir(self.path, old))


# --- Delta -----------------------------------------------------------------------------------


@dataclass
class MarkerFiles:
    """A Delta table's delete markers: append-only Parquet files (meta columns only) in one directory.

    Only the job reads them, and they need no transaction: the newest marker of a key counts, so
    a file written twice (a batch applied again after a crash) or left half-written by a crash
    (its batch is applied again) changes no decision. Plain files spare each batch the Delta
    snapshot, file-listing and commit work of a second table. Once the directory holds
    ``MARKER_FILES_MAX`` files, the newest marker per key is written as one file and the files
    it replaces are deleted (a crash in between leaves duplicates, which decide nothing new); the
    fold leaves out the markers the retention lets go (``BatchSize.expired_before``).

    A batch's markers are written while its rows are (:meth:`stage`, into ``_staged/``, which
    :meth:`read` does not look at) and moved in only after the rows' commit
    (:meth:`StagedMarkers.publish`): a marker visible first and a crash before the rows' commit
    would make the batch's delete lose to its own marker when the batch is applied again.
    """

    spark: SparkSession
    path: str
    files: list[str] = field(default_factory=list)
    """The files :meth:`read` read: a fold replaces these, never a file written since."""
    size: int = 0
    """Their bytes."""

    def read(self) -> DataFrame | None:
        """Every marker written so far (``None`` when there is none)."""
        sizes = {
            name: length
            for name, length in HadoopFs(self.spark).sizes(self.path).items()
            if name.endswith(".parquet") and not name.startswith(("_", "."))
        }
        self.files, self.size = list(sizes), sum(sizes.values())
        if not self.files:
            return None
        return self.spark.read.schema(m.META_SCHEMA).parquet(*[f"{self.path}/{name}" for name in self.files])

    @property
    def folds(self) -> bool:
        """Whether the next :meth:`stage` folds the markers into one file (given the markers that still count)."""
        return len(self.files) + 1 >= MARKER_FILES_MAX

    def stage(self, new: DataFrame | None, whole: DataFrame | None, expired_before: int | None = None) -> StagedMarkers:
        """Start writing the batch's markers ``new`` (``None``: it has none) in the background; with many
        files, the fold of ``whole`` (the markers that still count: what :meth:`read` returned and the
        batch's, or the part of them that won) instead, without the markers older than ``expired_before``."""
        fold = whole is not None and self.folds
        markers = m.newest_markers(m.unexpired(whole, expired_before)) if fold and whole is not None else new
        staged = StagedMarkers(self, f"{self.path}/{STAGED_DIR}/{uuid.uuid4().hex}", fold)
        if markers is not None:
            staged.writing = in_background(staged.writer(markers))
        return staged


@dataclass
class StagedMarkers:
    """Markers being written under ``_staged/``, moved in by :meth:`publish` once the rows are committed."""

    markers: MarkerFiles
    path: str
    fold: bool
    writing: Future[None] | None = None

    def writer(self, markers: DataFrame) -> Callable[[], None]:
        def write() -> None:
            markers.select(*m.META_COLUMNS).coalesce(1).write.mode("overwrite").format("parquet").save(self.path)

        return write

    def publish(self) -> None:
        """Wait for the write, move its file in and (a fold) delete the files it replaces."""
        fs = HadoopFs(self.markers.spark)
        try:
            if self.writing is None:
                return
            self.writing.result()
            for name in fs.names(self.path):
                if name.endswith(".parquet") and not name.startswith(("_", ".")):
                    fs.rename(f"{self.path}/{name}", f"{self.markers.path}/{name}")
            if self.fold:
                for name in self.markers.files:
                    fs.delete(f"{self.markers.path}/{name}")
        finally:
            fs.delete(self.path)

    def discard(self) -> None:
        """The rows were not committed: wait for the write to end, keep nothing of it."""
        if self.writing is not None:
            self.writing.exception()
        HadoopFs(self.markers.spark).delete(self.path)

    def alongside(self, commit: Callable[[], None]) -> None:
        """Run the rows' ``commit`` while these markers are written; publish them after it, or discard
        them when it fails."""
        try:
            commit()
        except BaseException:
            self.discard()
            raise
        self.publish()


STAGED_DIR = "_staged"


@dataclass
class TableRows:
    """Bounds of each Delta table's row count that the job knows without counting, kept across its batches.

    A batch of ``REWRITE_MIN_BATCH`` changes or more chooses between the MERGE and a rewrite by the table's
    rows; counting them was a Delta query per large batch (0.6-1.0 s of a 10 k-change batch's 5-7 s into a
    100 k-row table). After a count the bounds are exact; a MERGE can add at most the batch's non-delete
    changes and remove at most its deletes, so the bounds widen by those, and a count is needed again only
    when the choice falls between them. Only a choice of speed depends on them: both paths give the same
    table, so bounds gone wrong (a table changed by another writer) cost time, never correctness.
    """

    bounds: dict[str, tuple[int, int]] = field(default_factory=dict)

    def choose_rewrite(self, path: str, changes: int, count: Callable[[], int]) -> bool:
        """Whether ``changes`` × ``REWRITE_SHARE`` reach the rows (``count``: only when the bounds cannot say)."""
        weight = changes * REWRITE_SHARE
        known = self.bounds.get(path)
        if known is not None and weight < known[0]:
            return False
        if known is not None and weight >= known[1]:
            return True
        rows = count()
        self.bounds[path] = (rows, rows)
        return weight >= rows

    def merged(self, path: str, size: BatchSize) -> None:
        if path in self.bounds:
            low, high = self.bounds[path]
            self.bounds[path] = (max(0, low - size.deletes), high + size.changes - size.deletes)

    def forget(self, path: str) -> None:
        self.bounds.pop(path, None)


@dataclass
class DeltaTable:
    """A collection's state as a Delta table, its delete markers in :class:`MarkerFiles`."""

    spark: SparkSession
    path: str
    deleted: str
    payload: StructType
    compaction: Compaction | None = None
    rows: TableRows | None = None
    """The job's row-count bounds of its tables (``None``: count before every large batch)."""

    def apply(self, changes: DataFrame, size: BatchSize) -> None:
        """Apply one batch of this collection's changes (``size``: counted by the caller)."""
        from delta.tables import DeltaTable as Delta

        has_rows = is_delta_table(HadoopFs(self.spark), self.path)
        broadcast = size.changes <= m.BROADCAST_MAX_ROWS
        marker_files = MarkerFiles(self.spark, self.deleted)
        markers = marker_files.read()
        if has_rows and size.changes >= REWRITE_MIN_BATCH:
            table = self.spark.read.format("delta").load(self.path)  # one snapshot for the count and the rewrite
            bounds = self.rows if self.rows is not None else TableRows()
            if bounds.choose_rewrite(self.path, size.changes, table.count):  # Delta counts from its statistics
                bounds.forget(self.path)
                self._rewrite(table, m.applicable(changes), marker_files, markers, broadcast, size)
                return
        # Only the batch's newest change per key, and only when newer than the key's delete marker, in
        # one aggregate of the batch and the markers (``merge.winning_changes``; only the markers of the
        # batch's keys when there are many). The rows table is compared inside the MERGE, whose
        # conditions take a change only when it is newer than the row it matches.
        # Delta's MERGE copies this source once before it reads it twice (``materializeSource``, on for a source
        # that is not a Delta table): that copy is where the decision is computed, in the MERGE's first job.
        semi_join = marker_files.size > MARKERS_WHOLE_MAX_BYTES
        rows = m.winning_changes(markers, changes, semi_join=semi_join, broadcast=broadcast, output=self._columns)

        def commit() -> None:
            if not has_rows:
                m.live_rows(rows).write.format("delta").options(**new_table_options(self._columns)).mode("append").save(
                    self.path
                )
                return
            newer = m.newer_sql("s", "t")
            merge = (
                Delta.forPath(self.spark, self.path)
                .alias("t")
                .merge(rows.alias("s"), "t._key = s._key")
                .whenMatchedDelete(condition=f"s._op = 'd' AND {newer}")
                .whenMatchedUpdateAll(condition=f"s._op <> 'd' AND {newer}")
                .whenNotMatchedInsertAll(condition="s._op <> 'd'")
            )
            merge.execute()

        # all of the batch's deletes, winners or not (as a rewrite does): a marker older than its key's row or than
        # another marker decides nothing, and written from the cached batch it waits for no decision
        new_markers = m.delete_markers(changes) if size.deletes else None
        whole = None
        if markers is not None and marker_files.folds:
            whole = markers if new_markers is None else markers.unionByName(new_markers)
        marker_files.stage(new_markers, whole, size.expired_before).alongside(commit)
        if self.rows is not None:
            if has_rows:
                self.rows.merged(self.path, size)
            else:
                self.rows.forget(self.path)
        if self.compaction is not None:
            self.compaction.wrote(self.path)

    @property
    def _columns(self) -> list[str]:
        return [*m.META_COLUMNS, *[f.name for f in self.payload.fields]]

    def _rewrite(
        self,
        rows: DataFrame,
        candidates: DataFrame,
        marker_files: MarkerFiles,
        markers: DataFrame | None,
        broadcast: bool,
        size: BatchSize,
    ) -> None:
        """The whole new state, written over the rows table in one atomic Delta commit.

        Delta reads the version the overwrite replaces, so no copy of the old state is needed.
        The batch's deletes are all appended to the markers, winners or not: a marker older than
        its key's row or than another marker decides nothing, so appending needs no second pass
        over the batch's documents. A fold keeps only the markers that won, which also drops the
        markers a newer row or change of the batch supersedes.
        """
        state = rows if markers is None else rows.unionByName(markers, allowMissingColumns=True)
        decision = m.Decision(state, candidates, broadcast=broadcast, whole_state=True).materialize()
        applied = decision.applied()
        new_rows = decision.kept(rows).select(*self._columns).unionByName(m.live_rows(applied).select(*self._columns))
        winners = None
        if markers is not None:
            winners = decision.kept(markers).select(*m.META_COLUMNS).unionByName(m.delete_markers(applied))
        new_markers = m.delete_markers(candidates) if size.deletes else None
        marker_files.stage(new_markers, winners, size.expired_before).alongside(
            lambda: new_rows.write.format("delta").mode("overwrite").save(self.path)
        )
        if self.compaction is not None:
            self.compaction.rewritten(self.path)


def new_table_options(columns: list[str]) -> dict[str, str]:
    """Table properties a new Delta table is created with (Delta applies them on the first write only).

    Data-skipping statistics on every column but the JSON ``document``: the minimum and maximum of a
    JSON string skip nothing, and collecting them was a third of the time of writing 100 k documents.
    Projected columns (``--columns``) keep Delta's default, statistics on the first 32 columns.
    """
    if m.DOCUMENT not in columns:
        return {}
    return {"delta.dataSkippingStatsColumns": ",".join(c for c in columns if c != m.DOCUMENT)}


@dataclass
class Compaction:
    """Compacts a Delta table's files (Delta's ``OPTIMIZE``) every ``COMPACT_EVERY`` small writes to it.

    Each small batch's ``MERGE`` adds a file or two and deletion vectors, each changelog append a file:
    a stream with a 10 s trigger would leave thousands of files a day in every table, and each batch
    and each reader would list and open them all. ``OPTIMIZE`` bin-packs the small files and rewrites
    the files whose deletion vectors hide many rows. A rewrite of the whole table (a large batch) starts
    the count again. Counted per process: after a restart a table waits at most ``COMPACT_EVERY`` writes.
    Delta's own auto compaction is not used: it also rewrote every large write right after it.
    """

    spark: SparkSession
    writes: dict[str, int] = field(default_factory=dict)
    """Small writes per table path since its last compaction or rewrite."""
    snapshots: Snapshots | None = None
    """Told of every commit this upkeep sees (after the compaction's own), to load the table's new version."""

    def wrote(self, path: str) -> None:
        count = self.writes.get(path, 0) + 1
        self.writes[path] = count
        if count >= COMPACT_EVERY:
            self._compact(path)
        self._committed(path)

    def rewritten(self, path: str) -> None:
        self.writes[path] = 0
        self._committed(path)

    def _compact(self, path: str) -> None:
        from delta.tables import DeltaTable as Delta

        try:
            Delta.forPath(self.spark, path).optimize().executeCompaction()
        except Exception as error:  # noqa: BLE001 - upkeep never fails a batch whose data is committed
            log.warning("compacting %s failed (tried again after its next write): %s", path, error)
            return
        self.writes[path] = 0

    def _committed(self, path: str) -> None:
        if self.snapshots is not None:
            self.snapshots.committed(path)


@dataclass
class Snapshots:
    """Loads a Delta table's new version on a thread of its own as soon as the job has committed it.

    Delta reads a version's state (the log since its last checkpoint: a Spark job) the first time the version is
    used, and keeps the newest version of each table loaded. Without this, the next batch's MERGE loaded it first,
    on the batch's critical path (a sixth of a 200-change batch into 100 k rows). Loaded now, it overlaps Spark's
    commit of the micro-batch, the wait for the next trigger and the next batch's first query; the MERGE finds it
    loaded, or waits for the load under way instead of starting another. Only time is at stake: a load that fails
    leaves the work to the next batch.
    """

    spark: SparkSession
    loading: dict[str, list[Future[int]]] = field(default_factory=dict)
    """The loads of each table not known to have ended (a table committed again within a load has two)."""

    def committed(self, path: str) -> None:
        under_way = [future for future in self.loading.get(path, []) if not future.done()]
        self.loading[path] = [*under_way, in_background(lambda: load_snapshot(self.spark, path))]

    def wait(self) -> None:
        """Let the loads under way end (before the session stops, which would cut them short with an error)."""
        for path, futures in self.loading.items():
            for future in futures:
                error = future.exception()
                if error is not None:
                    log.debug("loading the newest version of %s failed (its next batch loads it): %s", path, error)
        self.loading.clear()


def load_snapshot(spark: SparkSession, path: str) -> int:
    """Load the newest version of the Delta table at ``path`` with its state (Delta keeps it); its number of files.

    ``DESCRIBE DETAIL`` runs when it is called, and its one row is collected as it is: a ``select`` or ``first`` on it
    would be a Spark job of its own, after the one that reads the table's state.
    """
    from delta.tables import DeltaTable as Delta

    rows = Delta.forPath(spark, path).detail().collect()
    return int(rows[0]["numFiles"]) if rows else 0


COMPACT_EVERY = 50
"""Small writes (MERGEs, changelog appends) to a Delta table between two compactions."""
MARKER_FILES_MAX = 16
"""Marker files of a table before they are folded into one."""
MARKERS_WHOLE_MAX_BYTES = 16 * 2**20
"""Delete markers up to these bytes of files go whole into a MERGE batch's decision (their narrow rows cost less
in its aggregate than a broadcast of the batch's keys to pick out theirs, a Spark job per batch); more are first
semi-joined to the batch's keys."""
REWRITE_MIN_BATCH = 10_000
REWRITE_SHARE = 4
"""A batch of at least ``REWRITE_MIN_BATCH`` changes and a quarter of the table's rows rewrites the table (a batch
touching that share of it is cheaper to apply by rewriting than by a MERGE)."""


# --- changelog -------------------------------------------------------------------------------


def append_changelog(
    spark: SparkSession,
    table_format: TableFormat,
    path: str,
    changes: DataFrame,
    batch_id: int,
    app_id: str,
    compaction: Compaction | None = None,
) -> None:
    """Append a batch's change events, once: a re-run batch replaces (Parquet) or is skipped (Delta)."""
    changes = changes.drop(m.PARTIAL)  # the typed rows' own bookkeeping, not part of the event
    rows = changes.withColumn("_batch_id", F.lit(batch_id).cast("long"))
    if table_format is TableFormat.delta:
        writer = rows.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", batch_id)
        writer.options(**new_table_options(rows.columns)).save(path)
        if compaction is not None:
            compaction.wrote(path)
    else:
        changes.write.mode("overwrite").parquet(f"{path}/_batch_id={batch_id}")


def read_changelog(spark: SparkSession, path: str) -> DataFrame:
    """Every change event of a changelog table, either format."""
    if is_delta_table(HadoopFs(spark), path):
        return spark.read.format("delta").load(path)
    return spark.read.parquet(path)


def state_table(
    spark: SparkSession,
    table_format: TableFormat,
    warehouse: str,
    db: str,
    collection: str,
    payload: StructType,
    compaction: Compaction | None = None,
    rows: TableRows | None = None,
) -> ParquetTable | DeltaTable:
    """The sink of one collection's state (``compaction``, ``rows``: the job's, for Delta tables)."""
    path = table_path(warehouse, db, collection)
    if table_format is TableFormat.delta:
        return DeltaTable(spark, path, deleted_path(warehouse, db, collection), payload, compaction, rows)
    return ParquetTable(spark, path, payload)


__all__ = [
    "BatchSize",
    "Compaction",
    "DeltaTable",
    "HadoopFs",
    "ParquetTable",
    "Snapshots",
    "TableRows",
    "append_changelog",
    "changelog_path",
    "read_changelog",
    "read_table",
    "state_table",
]
