"""Connector metrics, modelled on the Debezium MongoDB connector's snapshot and streaming metrics.

One :class:`Metrics` per connector. Values Debezium keeps per task are kept here per source
partition (a replica set, or the whole cluster when streaming through mongos). The engine
records into it from any thread; readers take a consistent copy with :meth:`Metrics.to_dict`
(``--output json`` status lines) or :meth:`Metrics.to_prometheus` (the ``/metrics`` endpoint).

Cost: every ``record_*``/``set_*`` method takes the one lock once and does a few dictionary
and attribute updates; all formatting and every derived value (totals, remaining collections,
milliseconds since the last event, durations) is computed when the metrics are read.

Debezium name → here (Prometheus name; ``to_dict`` key under the partition):

- TotalNumberOfEventsSeen → ``mongocdc_events_total{op}``; ``events`` / ``events_total``
- MilliSecondsBehindSource → ``mongocdc_milliseconds_behind_source``; ``milliseconds_behind_source``
- MilliSecondsSinceLastEvent → ``mongocdc_milliseconds_since_last_event``; ``milliseconds_since_last_event``
- SourceEventPosition → ``mongocdc_source_event_position_sec``/``_ord``; ``source_event_position``
- NumberOfDisconnects → ``mongocdc_disconnects_total``; ``disconnects``
- NumberOfPrimaryElections → ``mongocdc_primary_elections_total``; ``primary_elections``
- NumberOfEventsFiltered (and oversized/skipped operations, records a transform dropped: ``transform``) →
  ``mongocdc_events_skipped_total{reason}``; ``skipped``
- Connected → ``mongocdc_connected``; ``connected``
- SnapshotRunning/Completed/Aborted → ``mongocdc_snapshot_running``/``_completed``/``_aborted``
- SnapshotDurationInSeconds → ``mongocdc_snapshot_duration_seconds``
- TotalTableCount/RemainingTableCount → ``mongocdc_snapshot_total_collections``/``_remaining_collections``
- RowsScanned → ``mongocdc_snapshot_rows_scanned_total{collection}`` (and the estimate,
  ``mongocdc_snapshot_rows_estimated{collection}``)

Beyond Debezium: ``mongocdc_offset_commits_total`` (offsets written to the store) and
``mongocdc_kafka_records_in_flight`` (records produced but not yet acknowledged, per connector).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["OPERATIONS", "Metrics", "render_prometheus"]

OPERATIONS: Mapping[str, str] = {"c": "create", "u": "update", "d": "delete", "r": "read"}
"""Debezium operation codes and the names used in the ``op`` label and ``to_dict``."""

_OP_NAMES: dict[str, str] = {**OPERATIONS, **{name: name for name in OPERATIONS.values()}}


class _SnapshotState:
    __slots__ = ("aborted", "collections", "completed", "done", "ended_at", "rows", "running", "started_at")

    def __init__(self) -> None:
        self.running = False
        self.completed = False
        self.aborted = False
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.collections: dict[str, int | None] = {}
        """Collection (``db.coll``) → estimated number of documents, ``None`` until counted."""
        self.rows: dict[str, int] = {}
        self.done: set[str] = set()


class _PartitionState:
    __slots__ = (
        "behind_ms",
        "commits",
        "connected",
        "disconnects",
        "elections",
        "events",
        "last_event_ms",
        "skipped",
        "snapshot",
        "source_ord",
        "source_sec",
        "transactions",
    )

    def __init__(self) -> None:
        self.events: dict[str, int] = dict.fromkeys(OPERATIONS, 0)
        self.behind_ms: float | None = None
        self.last_event_ms: float | None = None
        self.source_sec: int | None = None
        self.source_ord: int | None = None
        self.disconnects = 0
        self.elections = 0
        self.skipped: dict[str, int] = {}
        self.commits = 0
        self.connected = False
        self.snapshot = _SnapshotState()
        self.transactions: _TransactionState | None = None
        """Set by the first transaction recorded (exactly.once.support): at-least-once partitions have none."""


class _TransactionState:
    __slots__ = ("aborted", "commit_seconds", "committed", "last_commit_ms", "last_records", "records")

    def __init__(self) -> None:
        self.committed = 0
        self.aborted = 0
        self.records = 0
        """Records (change events and the offset record) in the committed transactions."""
        self.commit_seconds = 0.0
        self.last_records = 0
        self.last_commit_ms = 0.0


class Metrics:
    """Thread-safe counters and gauges of one connector, labelled by source partition.

    ``clock`` returns wall-clock seconds since the epoch (``time.time`` by default); it gives
    the processing time when ``record_event`` is called without ``now_ms``, the read time for
    ``milliseconds_since_last_event``, and the snapshot start/end times. Inject a fake one in tests.
    """

    def __init__(self, connector: str, *, clock: Callable[[], float] = time.time) -> None:
        self.connector = connector
        self._clock = clock
        self._lock = threading.Lock()
        self._partitions: dict[str, _PartitionState] = {}
        self._in_flight = 0

    # -- recording (called by the engine) --------------------------------------------------

    def _state(self, partition: str) -> _PartitionState:
        """The partition's state, created on first use. Call with the lock held."""
        state = self._partitions.get(partition)
        if state is None:
            state = self._partitions[partition] = _PartitionState()
        return state

    def register_partition(self, partition: str) -> None:
        """Make the partition's series exist (all zero) before its first event; idempotent."""
        with self._lock:
            self._state(partition)

    def forget_partition(self, partition: str) -> None:
        """Drop the partition's series: its task moved to another worker of a group, which reports it now."""
        with self._lock:
            self._partitions.pop(partition, None)

    def record_event(
        self,
        partition: str,
        op: str,
        source_ts_ms: int | None,
        now_ms: float | None = None,
        *,
        sec: int | None = None,
        ord: int | None = None,  # the Debezium offset field's name, as in Position
    ) -> None:
        """One change event read from the source and handed to Kafka.

        ``op`` is the Debezium code (``c``/``u``/``d``/``r``, an ``Op`` member works) or its
        name. ``source_ts_ms`` is the event's ``source.ts_ms``; ``now_ms`` the processing time
        (the envelope's ``ts_ms``; default: the clock). ``sec``/``ord`` is the event's position.
        """
        if now_ms is None:
            now_ms = self._clock() * 1000.0
        with self._lock:
            state = self._partitions.get(partition)
            if state is None:
                state = self._state(partition)
            events = state.events
            events[op] = events.get(op, 0) + 1
            state.last_event_ms = now_ms
            if source_ts_ms is not None:
                state.behind_ms = now_ms - source_ts_ms
            if sec is not None:
                state.source_sec = sec
                state.source_ord = ord

    def record_skipped(self, partition: str, reason: str, n: int = 1) -> None:
        """Events not delivered on purpose: ``reason`` such as ``oversized``, ``skipped_operation``, ``filtered``."""
        with self._lock:
            skipped = self._state(partition).skipped
            skipped[reason] = skipped.get(reason, 0) + n

    def record_disconnect(self, partition: str) -> None:
        """The connection to the partition's server was lost (also sets ``connected`` to 0)."""
        with self._lock:
            state = self._state(partition)
            state.disconnects += 1
            state.connected = False

    def record_election(self, partition: str) -> None:
        """The partition's replica set elected a new primary (the stream followed it)."""
        with self._lock:
            self._state(partition).elections += 1

    def record_commit(self, partition: str) -> None:
        """An offset of the partition was written to the offset store."""
        with self._lock:
            self._state(partition).commits += 1

    def record_transaction(self, partition: str, records: int, commit_seconds: float) -> None:
        """A Kafka transaction of ``records`` records committed in ``commit_seconds`` (exactly.once.support)."""
        with self._lock:
            state = self._state(partition)
            txn = state.transactions = state.transactions or _TransactionState()
            txn.committed += 1
            txn.records += records
            txn.commit_seconds += commit_seconds
            txn.last_records = records
            txn.last_commit_ms = commit_seconds * 1000.0

    def record_transaction_aborted(self, partition: str) -> None:
        with self._lock:
            state = self._state(partition)
            txn = state.transactions = state.transactions or _TransactionState()
            txn.aborted += 1

    def set_connected(self, partition: str, connected: bool) -> None:
        """Whether the partition's change stream (or snapshot reader) is connected."""
        with self._lock:
            self._state(partition).connected = connected

    def set_in_flight(self, n: int) -> None:
        """Kafka records produced and not yet acknowledged (connector-wide: the producer is shared)."""
        self._in_flight = n  # one reference assignment: atomic, no lock needed

    # -- snapshot --------------------------------------------------------------------------

    def snapshot_started(self, partition: str, collections: Mapping[str, int | None]) -> None:
        """A snapshot of ``collections`` (``db.coll`` → estimated documents, ``None`` when not counted yet) began;
        forgets the previous one."""
        now = self._clock()
        with self._lock:
            snapshot = self._state(partition).snapshot = _SnapshotState()
            snapshot.running = True
            snapshot.started_at = now
            snapshot.collections = dict(collections)
            snapshot.rows = dict.fromkeys(collections, 0)

    def snapshot_estimated(self, partition: str, ns: str, estimated: int) -> None:
        """MongoDB's estimated count of ``ns``, once the snapshot asked it."""
        with self._lock:
            snapshot = self._state(partition).snapshot
            if ns in snapshot.collections:
                snapshot.collections[ns] = estimated

    def snapshot_rows(self, partition: str, ns: str, n: int) -> None:
        """``n`` more documents of collection ``ns`` were read (call once per batch, not per document)."""
        with self._lock:
            rows = self._state(partition).snapshot.rows
            rows[ns] = rows.get(ns, 0) + n

    def snapshot_collection_done(self, partition: str, ns: str) -> None:
        """Every document of ``ns`` was read."""
        with self._lock:
            snapshot = self._state(partition).snapshot
            snapshot.done.add(ns)
            snapshot.rows.setdefault(ns, 0)

    def snapshot_finished(self, partition: str, aborted: bool) -> None:
        """The snapshot ended: completed, or ``aborted`` (an error, a stop, a cancel signal)."""
        now = self._clock()
        with self._lock:
            snapshot = self._state(partition).snapshot
            snapshot.running = False
            snapshot.completed = not aborted
            snapshot.aborted = aborted
            snapshot.ended_at = now
            if snapshot.started_at is None:
                snapshot.started_at = now

    # -- reading ---------------------------------------------------------------------------

    @property
    def partitions(self) -> list[str]:
        with self._lock:
            return sorted(self._partitions)

    def to_dict(self) -> dict[str, Any]:
        """A consistent, JSON-ready copy; keys are stable (present from the first call on).

        ``milliseconds_behind_source`` and ``milliseconds_since_last_event`` are -1 before the
        partition's first event, ``source_event_position`` is ``None`` until then.
        """
        now = self._clock()
        with self._lock:
            partitions = {name: _partition_dict(state, now) for name, state in sorted(self._partitions.items())}
            in_flight = self._in_flight
        return {
            "connector": self.connector,
            "events_total": sum(p["events_total"] for p in partitions.values()),
            "kafka_records_in_flight": in_flight,
            "partitions": partitions,
        }

    def to_prometheus(self) -> str:
        """The metrics in the Prometheus text exposition format 0.0.4."""
        return render_prometheus(self.to_dict())


def _event_counts(events: Mapping[str, int]) -> dict[str, int]:
    counts = dict.fromkeys(OPERATIONS.values(), 0)
    for op, n in events.items():
        name = _OP_NAMES.get(op, op)
        counts[name] = counts.get(name, 0) + n
    return counts


def _partition_dict(state: _PartitionState, now: float) -> dict[str, Any]:
    events = _event_counts(state.events)
    since = -1 if state.last_event_ms is None else max(0, round(now * 1000.0 - state.last_event_ms))
    position = None if state.source_sec is None else {"sec": state.source_sec, "ord": state.source_ord}
    return {
        "connected": state.connected,
        "events": events,
        "events_total": sum(events.values()),
        "milliseconds_behind_source": -1 if state.behind_ms is None else round(state.behind_ms),
        "milliseconds_since_last_event": since,
        "source_event_position": position,
        "disconnects": state.disconnects,
        "primary_elections": state.elections,
        "skipped": dict(sorted(state.skipped.items())),
        "offset_commits": state.commits,
        "snapshot": _snapshot_dict(state.snapshot, now),
        "transactions": _transaction_dict(state.transactions),
    }


def _transaction_dict(txn: _TransactionState | None) -> dict[str, Any] | None:
    if txn is None:
        return None
    return {
        "committed": txn.committed,
        "aborted": txn.aborted,
        "records": txn.records,
        "commit_seconds": round(txn.commit_seconds, 6),
        "average_records": round(txn.records / txn.committed, 1) if txn.committed else 0,
        "average_commit_milliseconds": round(txn.commit_seconds * 1000.0 / txn.committed, 3) if txn.committed else 0,
        "last_records": txn.last_records,
        "last_commit_milliseconds": round(txn.last_commit_ms, 3),
    }


def _snapshot_dict(snapshot: _SnapshotState, now: float) -> dict[str, Any]:
    if snapshot.started_at is None:
        duration = 0.0
    else:
        end = now if snapshot.ended_at is None else snapshot.ended_at
        duration = max(0.0, end - snapshot.started_at)
    names = sorted(set(snapshot.collections) | set(snapshot.rows))
    return {
        "running": snapshot.running,
        "completed": snapshot.completed,
        "aborted": snapshot.aborted,
        "duration_seconds": round(duration, 3),
        "total_collections": len(snapshot.collections),
        "remaining_collections": len(set(snapshot.collections) - snapshot.done),
        "collections": {
            ns: {
                "rows_scanned": snapshot.rows.get(ns, 0),
                "rows_estimated": snapshot.collections.get(ns),
                "done": ns in snapshot.done,
            }
            for ns in names
        },
    }


# -- Prometheus text exposition format 0.0.4 ----------------------------------------------

Labels = tuple[tuple[str, str], ...]
Sample = tuple[Labels, float | int]


def _transactions(key: str) -> Callable[[dict[str, Any]], float | int | None]:
    """A partition's transaction counter ``key``; ``None`` (no series) for a partition without transactions."""
    return lambda p: None if p["transactions"] is None else p["transactions"][key]


# (name, type, help, per-partition value from a partition's to_dict entry)
_PARTITION_GAUGES: tuple[tuple[str, str, str, Callable[[dict[str, Any]], float | int | None]], ...] = (
    (
        "mongocdc_connected",
        "gauge",
        "1 when the partition's change stream is connected (Debezium Connected).",
        lambda p: int(p["connected"]),
    ),
    (
        "mongocdc_milliseconds_behind_source",
        "gauge",
        "Processing time minus the source timestamp of the last event, in ms; -1 before the first event "
        "(Debezium MilliSecondsBehindSource).",
        lambda p: p["milliseconds_behind_source"],
    ),
    (
        "mongocdc_milliseconds_since_last_event",
        "gauge",
        "Milliseconds since the last event was processed; -1 before the first event "
        "(Debezium MilliSecondsSinceLastEvent).",
        lambda p: p["milliseconds_since_last_event"],
    ),
    (
        "mongocdc_source_event_position_sec",
        "gauge",
        "Cluster time seconds (sec) of the last event's source position (Debezium SourceEventPosition).",
        lambda p: None if p["source_event_position"] is None else p["source_event_position"]["sec"],
    ),
    (
        "mongocdc_source_event_position_ord",
        "gauge",
        "Cluster time increment (ord) of the last event's source position (Debezium SourceEventPosition).",
        lambda p: None if p["source_event_position"] is None else p["source_event_position"]["ord"],
    ),
    (
        "mongocdc_disconnects_total",
        "counter",
        "Connections to the database lost (Debezium NumberOfDisconnects).",
        lambda p: p["disconnects"],
    ),
    (
        "mongocdc_primary_elections_total",
        "counter",
        "Primary elections the change stream followed (Debezium NumberOfPrimaryElections).",
        lambda p: p["primary_elections"],
    ),
    (
        "mongocdc_offset_commits_total",
        "counter",
        "Offsets committed to the offset store.",
        lambda p: p["offset_commits"],
    ),
    (
        "mongocdc_transactions_committed_total",
        "counter",
        "Kafka transactions committed, each a run of change events and the offset after them "
        "(exactly.once.support; absent without it).",
        _transactions("committed"),
    ),
    (
        "mongocdc_transactions_aborted_total",
        "counter",
        "Kafka transactions aborted: none of their records is read by a read_committed consumer.",
        _transactions("aborted"),
    ),
    (
        "mongocdc_transaction_records_total",
        "counter",
        "Records in the committed transactions (divided by mongocdc_transactions_committed_total: the mean size).",
        _transactions("records"),
    ),
    (
        "mongocdc_transaction_commit_seconds_total",
        "counter",
        "Seconds spent committing transactions (divided by mongocdc_transactions_committed_total: the mean latency).",
        _transactions("commit_seconds"),
    ),
    (
        "mongocdc_transaction_last_records",
        "gauge",
        "Records in the last committed transaction.",
        _transactions("last_records"),
    ),
    (
        "mongocdc_transaction_last_commit_milliseconds",
        "gauge",
        "Milliseconds the last transaction's commit took.",
        _transactions("last_commit_milliseconds"),
    ),
    (
        "mongocdc_snapshot_running",
        "gauge",
        "1 while a snapshot runs (Debezium SnapshotRunning).",
        lambda p: int(p["snapshot"]["running"]),
    ),
    (
        "mongocdc_snapshot_completed",
        "gauge",
        "1 when the last snapshot completed (Debezium SnapshotCompleted).",
        lambda p: int(p["snapshot"]["completed"]),
    ),
    (
        "mongocdc_snapshot_aborted",
        "gauge",
        "1 when the last snapshot was aborted (Debezium SnapshotAborted).",
        lambda p: int(p["snapshot"]["aborted"]),
    ),
    (
        "mongocdc_snapshot_duration_seconds",
        "gauge",
        "Seconds the last snapshot has taken so far, even if not complete (Debezium SnapshotDurationInSeconds).",
        lambda p: p["snapshot"]["duration_seconds"],
    ),
    (
        "mongocdc_snapshot_total_collections",
        "gauge",
        "Collections in the last snapshot (Debezium TotalTableCount).",
        lambda p: p["snapshot"]["total_collections"],
    ),
    (
        "mongocdc_snapshot_remaining_collections",
        "gauge",
        "Collections the last snapshot has not finished yet (Debezium RemainingTableCount).",
        lambda p: p["snapshot"]["remaining_collections"],
    ),
)


def render_prometheus(data: Mapping[str, Any]) -> str:
    """Render a :meth:`Metrics.to_dict` result in the Prometheus text exposition format 0.0.4."""
    connector = str(data["connector"])
    partitions: Mapping[str, dict[str, Any]] = data["partitions"]
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> None:
        lines.append(f"# HELP {name} {_escape_help(help_text)}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lines.append(f"{name}{_labels((('connector', connector), *labels))} {_value(value)}")

    family(
        "mongocdc_events_total",
        "counter",
        "Change events seen since the start, by operation (Debezium TotalNumberOfEventsSeen).",
        (((("partition", p), ("op", op)), n) for p, state in partitions.items() for op, n in state["events"].items()),
    )
    family(
        "mongocdc_events_skipped_total",
        "counter",
        "Events not delivered on purpose, by reason: filtered, oversized, skipped operation, transform (dropped by "
        "the connector's transforms) (Debezium NumberOfEventsFiltered).",
        (
            ((("partition", p), ("reason", reason)), n)
            for p, state in partitions.items()
            for reason, n in state["skipped"].items()
        ),
    )
    for name, kind, help_text, get in _PARTITION_GAUGES:
        samples: list[Sample] = []
        for p, state in partitions.items():
            value = get(state)
            if value is not None:
                samples.append(((("partition", p),), value))
        family(name, kind, help_text, samples)
    family(
        "mongocdc_snapshot_rows_scanned_total",
        "counter",
        "Documents read by the last snapshot, by collection; restarts at 0 with each snapshot (Debezium RowsScanned).",
        (
            ((("partition", p), ("collection", ns)), c["rows_scanned"])
            for p, state in partitions.items()
            for ns, c in state["snapshot"]["collections"].items()
        ),
    )
    family(
        "mongocdc_snapshot_rows_estimated",
        "gauge",
        "Estimated documents per collection when the last snapshot started.",
        (
            ((("partition", p), ("collection", ns)), c["rows_estimated"])
            for p, state in partitions.items()
            for ns, c in state["snapshot"]["collections"].items()
            if c["rows_estimated"] is not None
        ),
    )
    family(
        "mongocdc_kafka_records_in_flight",
        "gauge",
        "Kafka records produced and not yet acknowledged by the broker.",
        [((), data["kafka_records_in_flight"])],
    )
    return "\n".join(lines) + "\n"


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(labels: Labels) -> str:
    return "{" + ",".join(f'{key}="{_escape_label_value(value)}"' for key, value in labels) + "}"


def _value(value: float | int) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
