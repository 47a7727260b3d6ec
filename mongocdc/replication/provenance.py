"""The provenance header every copy carries, and the rule that stops replication loops.

Each hop appends one ``mongocdc.provenance`` header to the record it copies, so a record copied
A → B → C carries two: where it was read on A, then where it was read on B. The value is compact
JSON any consumer can read::

    {"cluster":"<id>","topic":"orders","partition":0,"offset":41,"ts":1718000000000}

``cluster`` is the id (or configured alias) of the cluster the record was read from, ``topic``,
``partition`` and ``offset`` its position there, ``ts`` the wall-clock time of that copy in epoch
milliseconds. Consumers that do not want the headers skip them by name.

The loop rule: a record is not copied to a target topic when one of its hops says it was read from
that very topic on that very cluster, because the target already holds the original. Two
replicators in opposite directions with the same topic names (active/active) therefore never copy
a record back, and the skipped hop names the original's offset on the target, which offset
translation uses (``translation.FrontierTracker``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

HEADER: Final = "mongocdc.provenance"
"""Name of the provenance header (one per hop)."""

Headers = Sequence[tuple[str, bytes | str | None]]


@dataclass(frozen=True, slots=True)
class Hop:
    """Where one hop read a record: cluster, topic, partition, offset; ``ts``: when it copied it (epoch ms)."""

    cluster: str
    topic: str
    partition: int
    offset: int
    ts: int


def encode(hop: Hop) -> bytes:
    """The header value of ``hop`` (compact JSON, fixed key order)."""
    return HopEncoder(hop.cluster, hop.topic, hop.partition)(hop.offset, hop.ts)


class HopEncoder:
    """Header values for one source partition: the constant part is rendered once (the copy loop's fast path)."""

    __slots__ = ("_head",)

    def __init__(self, cluster: str, topic: str, partition: int) -> None:
        head = json.dumps({"cluster": cluster, "topic": topic, "partition": partition}, separators=(",", ":"))
        self._head = (head[:-1].replace("%", "%%") + ',"offset":%d,"ts":%d}').encode()

    def __call__(self, offset: int, ts: int) -> bytes:
        return self._head % (offset, ts)


def decode(raw: bytes | str | None) -> Hop | None:
    """The hop in a header value, or ``None`` when it is not one (a foreign header of the same name)."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    cluster, topic = data.get("cluster"), data.get("topic")
    partition, offset, ts = data.get("partition"), data.get("offset"), data.get("ts", 0)
    if not (isinstance(cluster, str) and isinstance(topic, str)):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (partition, offset, ts)):
        return None
    assert isinstance(partition, int) and isinstance(offset, int) and isinstance(ts, int)
    return Hop(cluster, topic, partition, offset, ts)


def hops(headers: Headers | None) -> list[Hop]:
    """Every readable provenance hop of a record, oldest first."""
    if not headers:
        return []
    found = []
    for name, value in headers:
        if name == HEADER:
            hop = decode(value)
            if hop is not None:
                found.append(hop)
    return found


def origin_on(headers: Headers | None, cluster: str, topic: str) -> Hop | None:
    """The first hop that read the record from ``topic`` on ``cluster``, or ``None``.

    A record with such a hop is not copied to ``topic`` on ``cluster``: it is already there
    (at the hop's partition and offset).
    """
    if not headers:
        return None
    for hop in hops(headers):
        if hop.cluster == cluster and hop.topic == topic:
            return hop
    return None


def has_provenance(headers: Headers | None) -> bool:
    """Whether any header is named ``HEADER`` (cheap: nothing is decoded)."""
    return bool(headers) and any(name == HEADER for name, _ in headers or ())
