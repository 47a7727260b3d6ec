"""Offset translation: which target offset a consumer group can resume from without skipping anything.

The rule (read this before changing anything here)
--------------------------------------------------

The replicator copies one source partition ``p`` into the target partition with the same number
``q`` (same partition counts). Every source record ``o`` has a *counterpart* on the target: the
offset of its copy, or, when the loop rule skipped it (its provenance says it came from this very
target topic), the offset of the original it is a copy of. A group that committed offset ``c`` on
the source has consumed exactly the source records below ``c``, so on the target it has consumed
the counterparts of those records, and nothing else.

A *point* ``(upstream=k, downstream=f)`` states: every target offset below ``f`` is the counterpart
of a source record below ``k``. Then a group that committed ``c >= k`` has consumed everything
below ``f`` on the target, and starting there skips nothing it has not consumed. Points stay true
forever (offsets never move), and ``f`` only grows with ``k``, so translation is:

    translate(c) = downstream of the point with the largest upstream <= c

which is never past a record the group has not consumed. With no point at or below ``c``, the
target partition's earliest offset is the answer: it cannot skip anything either.
This is MirrorMaker 2's rule (``OffsetSyncStore``: the synced downstream offset, plus one when the
upstream offset is past the sync, never ahead) restated in terms of what the group consumed, which
is what keeps it safe when the target topic also holds records of its own.

The replicator computes ``f`` as the smallest target offset that is not yet known to be a
counterpart (``FrontierTracker``). In an active/passive pair the target holds only copies and ``f``
is one past the last copy. In active/active with the same topic names the target topic interleaves
its own records with copies: its own records count as consumed only once the replicator has seen
their copy come back from the source below ``c``, so ``f`` waits at the first of them that has not
come back yet, and the group re-reads from there rather than miss it. Offsets that never hold a
counterpart (a record compacted away before it was copied back, a transaction marker) also hold
``f`` back: translation errs early, never late.

The points are written to the offset-syncs topic (``OffsetSync``) after every flush, and, for every
committed offset of a source group the replicator reads, to the checkpoints topic (``Checkpoint``:
the committed offset with the point at or below it), which makes translation possible without the
source cluster. Each partition's first point (the start of the copied range) has a slot of its own
that compaction never replaces (``START_SLOT``), and a restarted replicator writes each partition's
current point before copying: every offset a group can commit has a point at or below it.

Where to resume, and how much is read again (``choose``)
--------------------------------------------------------

A point at or below ``c`` is safe but, after restarts and crashes, not exact: the syncs kept are
sparse, and a crash copies records again (the same source record twice on the target, the second
copy later). ``failover translate`` therefore reads the target partition from the point's ``f`` to
its end and looks at each record's provenance: a copy of source record ``o`` was consumed when
``o < c``; a record of the target's own was consumed when its copy came back below ``c`` — the
target's records come back in their order, so a point also carries ``back``, the offset below which
every record of the target's own had come back (known exactly at a point at ``c``; between two
points, the records between their ``back`` are not known: ``unknown``). Every record not consumed
must be read once, so the answer is the smallest of their *last* positions (a second copy after a
crash is used when that reads less), and what the group will read again from there is counted
exactly: ``exact`` (nothing), ``sync`` (that many records) or ``unknown``.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Method = Literal["exact", "sync", "unknown", "earliest", "timestamp", "none"]
"""How good a target offset is: nothing will be read again (``exact``), a known number of records will
(``sync``), not known (``unknown``); or, without reading the target: at the nearest point below
(``sync``), the partition's start because no point is that early (``earliest``), by record timestamp
(``timestamp``), or not at all (``none``)."""

MAX_SLOT: Final = 24
START_SLOT: Final = -1
"""The slot of a partition's start sync (sequence 0): written once, when the partition is first replicated,
and never overwritten, so every committed offset from the start of the copied range on has a point."""
MAX_PENDING_RANGES: Final = 64


@dataclass(frozen=True, slots=True, order=True)
class Point:
    """Every target offset below ``downstream`` is the counterpart of a source record below ``upstream``.

    ``back`` (not compared): every record of the target's own below it came back from the source below
    ``upstream`` (its copy there is a record the group consumed); ``-1`` when not known.
    """

    upstream: int
    downstream: int
    back: int = field(default=-1, compare=False)


def translate(points: Iterable[Point], committed: int) -> Point | None:
    """The point with the largest upstream at or below ``committed`` (highest downstream first), or ``None``."""
    best: Point | None = None
    for point in points:
        if point.upstream <= committed and (best is None or point > best):
            best = point
    return best


@dataclass(frozen=True, slots=True)
class Resolved:
    """A translated offset: ``offset`` on the target, how it was found, and how many copies of records the group
    already consumed it may see again (``again``, an upper bound in an active/passive pair; ``None``: unknown)."""

    offset: int | None
    method: Method
    again: int | None


def resolve(committed: int, points: Sequence[Point], earliest: int | None) -> Resolved:
    """Translate ``committed`` over ``points``; with no point at or below it, ``earliest`` (the partition's start)."""
    best = translate(points, committed)
    if best is None:
        if not points or earliest is None:
            return Resolved(None, "none", None)
        return Resolved(earliest, "earliest", None)
    if best.upstream == committed:
        return Resolved(best.downstream, "exact", 0)
    return Resolved(best.downstream, "sync", committed - best.upstream)


@dataclass(frozen=True, slots=True)
class Choice:
    """Where a group resumes on the target partition and how many records it reads again from there.

    ``again``: records from ``offset`` to the end of the partition (when it was read) that the group
    has consumed already (a copy of a record below its committed offset, a record of the target's own
    whose copy it consumed) or reads twice (a second copy of a record); ``None`` when some record's
    status is not known (``ambiguous`` of them), ``offset`` is then at or before the first of those.
    """

    offset: int
    again: int | None
    ambiguous: int = 0

    @property
    def method(self) -> Method:
        if self.again is None:
            return "unknown"
        return "exact" if self.again == 0 else "sync"


def choose(
    records: Iterable[tuple[int, int | None]],
    end: int,
    committed: int,
    back: int,
    back_above: int | None,
) -> Choice:
    """The best target offset for a group that committed ``committed``, from the records it may read.

    ``records``: every record of the target partition from a point at or below ``committed`` (its
    ``downstream``) to ``end``, in order, as ``(offset, source offset)`` for a copy of a record of the
    source partition, ``(offset, None)`` for a record of the target's own (or of another cluster).
    A copy is consumed when its source offset is below ``committed``; a record of the target's own
    when it is below ``back`` (it came back below the point), not when it is at or above ``back_above``
    (it had not come back by a point above ``committed``; ``None``: no such point), and otherwise its
    status is not known.

    Each record the group has not consumed (an identity: a source offset, or a record of the target's own)
    must be read at least once: the answer is the smallest of their last positions, so re-copies written
    after a crash are used instead of the first copies whenever that reads less, and the count is exact.
    """
    offsets: list[int] = []
    identities: list[int] = []  # source offset of a copy, -1 - offset of a record of the target's own
    consumed: list[bool] = []
    ambiguous: list[bool] = []
    last: dict[int, int] = {}
    for offset, source in records:
        index = len(offsets)
        offsets.append(offset)
        if source is not None:
            identity, done, unsure = source, source < committed, False
        else:
            identity = -1 - offset
            done = offset < back
            unsure = not done and (back_above is None or offset < back_above)
        identities.append(identity)
        consumed.append(done)
        ambiguous.append(unsure)
        if not done:
            last[identity] = index
    first = min(last.values(), default=len(offsets))
    start = offsets[first] if first < len(offsets) else end
    seen: set[int] = set()
    again = unsure_count = 0
    for index in range(first, len(offsets)):
        identity = identities[index]
        if ambiguous[index]:
            unsure_count += 1
        if consumed[index] or identity in seen:
            again += 1
        else:
            seen.add(identity)
    return Choice(start, None if unsure_count else again, unsure_count)


class FrontierTracker:
    """The frontier of one source partition on its target partition, and its recent history.

    ``upstream``: every source record below it has been processed (its copy acknowledged, or its
    original located). ``frontier``: the smallest target offset not known to be the counterpart of a
    processed record. After each processed record the point ``(upstream, frontier)`` is true and is
    kept in a run-length history (``at``), so a group's committed offset can be translated exactly.

    Counterparts above the frontier wait in ``pending`` until the offsets below them are covered; at
    most ``max_pending`` are kept (more are dropped, which only holds the frontier back: safe).
    """

    def __init__(
        self,
        upstream: int,
        frontier: int,
        *,
        pending: Iterable[tuple[int, int]] = (),
        older: Iterable[Point] = (),
        back: int | None = None,
        max_pending: int = 1_000_000,
        max_segments: int = 4096,
    ) -> None:
        self.upstream = upstream
        self.frontier = frontier
        self.back = frontier if back is None or back < 0 else back
        self.max_pending = max_pending
        self.max_segments = max(2, max_segments)
        self.dropped = 0
        self._pending: set[int] = set()
        self._k0: list[int] = []
        self._f0: list[int] = []
        self._n: list[int] = []
        self._x: list[int] = []
        self._older = sorted({p for p in older if p.upstream < upstream})
        for start, end in pending:
            for position in range(start, end):
                self.cover(position)
        self._append(self.upstream, self.frontier)

    # --- updating ---------------------------------------------------------------

    def cover(self, position: int) -> None:
        """``position`` on the target is the counterpart of a processed source record."""
        frontier = self.frontier
        if position == frontier:
            frontier += 1
            pending = self._pending
            if pending:
                while frontier in pending:
                    pending.discard(frontier)
                    frontier += 1
            self.frontier = frontier
        elif position > frontier:
            if len(self._pending) < self.max_pending:
                self._pending.add(position)
            else:
                self.dropped += 1

    def advance(self, source_offset: int, *positions: int, returned: int | None = None) -> None:
        """Source record ``source_offset`` is processed; ``positions`` are its counterparts on the target.

        ``returned``: the record is a copy of the target's own record at that offset (a loop skip);
        the target's records come back in their order, so every one below it has come back (``back``).
        A record below ``upstream`` (read again after a restart) only adds its counterparts.
        """
        for position in positions:
            self.cover(position)
        if returned is not None and returned >= self.back:
            self.back = returned + 1
        if source_offset >= self.upstream:
            self.upstream = source_offset + 1
            self._append(self.upstream, self.frontier)

    def advance_run(self, first_offset: int, first_position: int, count: int) -> None:
        """``count`` consecutive source records from ``first_offset`` copied to consecutive target offsets from
        ``first_position`` (the copy loop's common case, in O(1) when the frontier is at ``first_position``)."""
        if count <= 0:
            return
        if first_position != self.frontier or self._pending or first_offset != self.upstream:
            for i in range(count):
                self.advance(first_offset + i, first_position + i)
            return
        self.frontier += count
        self.upstream = first_offset + count
        self._append_run(first_offset + 1, first_position + 1, count)

    def _append(self, upstream: int, downstream: int) -> None:
        self._append_run(upstream, downstream, 1)

    def _append_run(self, upstream: int, downstream: int, count: int) -> None:
        n = self._n
        if n:
            end = n[-1]
            if upstream == self._k0[-1] + end and downstream == self._f0[-1] + end and self._x[-1] == self.back:
                n[-1] += count
                return
        self._k0.append(upstream)
        self._f0.append(downstream)
        self._x.append(self.back)
        n.append(count)
        if len(n) > self.max_segments:
            # Keep the ends of each dropped segment, thinned to every other one when there
            # are too many (the first is always kept): older offsets still translate, less exactly.
            drop = len(n) // 2
            for i in range(drop):
                self._older.append(Point(self._k0[i], self._f0[i], self._x[i]))
                if n[i] > 1:
                    self._older.append(Point(self._k0[i] + n[i] - 1, self._f0[i] + n[i] - 1, self._x[i]))
            del self._k0[:drop], self._f0[:drop], self._x[:drop], n[:drop]
            if len(self._older) > self.max_segments:
                self._older = [*self._older[:1], *self._older[1:-1:2], self._older[-1]]

    # --- reading ----------------------------------------------------------------

    @property
    def point(self) -> Point:
        """The current point ``(upstream, frontier, back)``."""
        return Point(self.upstream, self.frontier, self.back)

    def at(self, committed: int) -> Point | None:
        """The point with the largest upstream at or below ``committed`` this tracker knows, or ``None``."""
        index = bisect.bisect_right(self._k0, committed) - 1
        if index >= 0:
            k0, f0, n = self._k0[index], self._f0[index], self._n[index]
            step = min(committed - k0, n - 1)
            return Point(k0 + step, f0 + step, self._x[index])
        index = bisect.bisect_right(self._older, Point(committed, 2**63)) - 1
        return self._older[index] if index >= 0 else None

    def above(self, committed: int) -> Point | None:
        """The point with the smallest upstream above ``committed`` this tracker knows, or ``None``."""
        older = bisect.bisect_right(self._older, Point(committed, 2**63))
        if older < len(self._older):
            return self._older[older]
        index = bisect.bisect_right(self._k0, committed)
        if index > 0:
            k0, f0, n = self._k0[index - 1], self._f0[index - 1], self._n[index - 1]
            if committed + 1 < k0 + n:
                step = committed + 1 - k0
                return Point(k0 + step, f0 + step, self._x[index - 1])
        if index < len(self._k0):
            return Point(self._k0[index], self._f0[index], self._x[index])
        return None

    def pending_ranges(self, limit: int = MAX_PENDING_RANGES) -> list[tuple[int, int]]:
        """Covered offsets above the frontier as ``[start, end)`` ranges, lowest first, at most ``limit``.

        Persisted with each sync so a restarted replicator knows them; ranges beyond ``limit`` are
        left out, which only holds a restarted frontier back.
        """
        ranges: list[tuple[int, int]] = []
        for position in sorted(self._pending):
            if ranges and ranges[-1][1] == position:
                ranges[-1] = (ranges[-1][0], position + 1)
            elif len(ranges) == limit:
                break
            else:
                ranges.append((position, position + 1))
        return ranges

    @property
    def pending_count(self) -> int:
        return len(self._pending)


def sync_slot(sequence: int) -> int:
    """The compaction slot of a partition's ``sequence``-th sync (from 1): the number of trailing zero bits.

    Compaction keeps the newest sync of each slot, so the topic retains syncs spaced roughly
    1, 2, 4, 8, … syncs back: translation of older committed offsets keeps working, with a
    redelivery that grows with their age. Sequence 0 is the partition's start (``START_SLOT``).
    """
    if sequence <= 0:
        return START_SLOT
    return min(MAX_SLOT, (sequence & -sequence).bit_length() - 1)


def _dumps(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


def _int(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} is not an integer")
    return value


def _optional_int(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else -1


def _str(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{name} is not a string")
    return value


def _object(raw: bytes | str) -> dict[str, Any]:
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """One point of a source partition, as written to the offset-syncs topic on the target.

    Key ``{"partition","slot","source","topic"}`` (compact JSON, sorted keys); value
    ``{"back","downstream","pending","seq","target_partition","target_topic","ts","upstream"}`` (``back``:
    ``Point.back``, ``null`` when not known).
    """

    source: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    target_topic: str
    target_partition: int
    seq: int = 0
    ts: int = 0
    pending: tuple[tuple[int, int], ...] = field(default=())
    back: int = -1

    @property
    def point(self) -> Point:
        return Point(self.upstream, self.downstream, self.back)

    def key(self) -> bytes:
        return _dumps(
            {"source": self.source, "topic": self.topic, "partition": self.partition, "slot": sync_slot(self.seq)}
        )

    def value(self) -> bytes:
        return _dumps(
            {
                "upstream": self.upstream,
                "downstream": self.downstream,
                "target_topic": self.target_topic,
                "target_partition": self.target_partition,
                "seq": self.seq,
                "ts": self.ts,
                "pending": [list(r) for r in self.pending],
                "back": self.back if self.back >= 0 else None,
            }
        )

    @classmethod
    def parse(cls, key: bytes | str | None, value: bytes | str | None) -> OffsetSync | None:
        """The sync in a record, or ``None`` for a tombstone or a record that is not one."""
        if key is None or value is None:
            return None
        try:
            k, v = _object(key), _object(value)
            pending_raw = v.get("pending", [])
            if not isinstance(pending_raw, list):
                raise ValueError("pending is not a list")
            pending = tuple((int(r[0]), int(r[1])) for r in pending_raw if isinstance(r, list) and len(r) == 2)
            return cls(
                source=_str(k, "source"),
                topic=_str(k, "topic"),
                partition=_int(k, "partition"),
                upstream=_int(v, "upstream"),
                downstream=_int(v, "downstream"),
                target_topic=_str(v, "target_topic"),
                target_partition=_int(v, "target_partition"),
                seq=_int(v, "seq") if "seq" in v else 0,
                ts=_int(v, "ts") if "ts" in v else 0,
                pending=pending,
                back=_optional_int(v, "back"),
            )
        except (ValueError, TypeError, UnicodeDecodeError):
            return None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A source group's committed offset and the replicator's point at or below it, as written to the checkpoints
    topic: ``upstream`` is the committed offset, ``(point_upstream, downstream, back)`` the point (``point_upstream``
    equals ``upstream`` when the point is exactly there). ``failover translate`` starts from the point and reads the
    target partition from ``downstream`` to count what the group would read again.

    Key ``{"group","partition","source","topic"}``; value
    ``{"back","downstream","point_upstream","target_partition","target_topic","ts","upstream"}``.
    """

    source: str
    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    target_topic: str
    target_partition: int
    ts: int = 0
    point_upstream: int = -1
    back: int = -1

    @property
    def point(self) -> Point:
        upstream = self.point_upstream if 0 <= self.point_upstream <= self.upstream else self.upstream
        return Point(upstream, self.downstream, self.back)

    def key(self) -> bytes:
        return _dumps({"source": self.source, "group": self.group, "topic": self.topic, "partition": self.partition})

    def value(self) -> bytes:
        return _dumps(
            {
                "upstream": self.upstream,
                "downstream": self.downstream,
                "target_topic": self.target_topic,
                "target_partition": self.target_partition,
                "ts": self.ts,
                "point_upstream": self.point_upstream if self.point_upstream >= 0 else None,
                "back": self.back if self.back >= 0 else None,
            }
        )

    @classmethod
    def parse(cls, key: bytes | str | None, value: bytes | str | None) -> Checkpoint | None:
        if key is None or value is None:
            return None
        try:
            k, v = _object(key), _object(value)
            return cls(
                source=_str(k, "source"),
                group=_str(k, "group"),
                topic=_str(k, "topic"),
                partition=_int(k, "partition"),
                upstream=_int(v, "upstream"),
                downstream=_int(v, "downstream"),
                target_topic=_str(v, "target_topic"),
                target_partition=_int(v, "target_partition"),
                ts=_int(v, "ts") if "ts" in v else 0,
                point_upstream=_optional_int(v, "point_upstream"),
                back=_optional_int(v, "back"),
            )
        except (ValueError, TypeError, UnicodeDecodeError):
            return None
