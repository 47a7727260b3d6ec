"""What Java's standard library and Kafka's Java clients compute, where the bytes on the wire depend on it (pure).

* ``java.util.HashMap``'s iteration order: Debezium writes maps (offsets, a transaction's
  per-collection counts) in it;
* Kafka's ``murmur2`` and the Java producer's default partition of a keyed record, which decides
  the partition of every record Debezium and Kafka Connect write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: over UTF-16 code units, as an unsigned 32-bit number."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The order a ``new HashMap<>()`` iterates its keys in after ``put``\\ting ``keys`` in this order.

    Buckets in index order (``(h ^ h >>> 16) & (capacity - 1)``), each bucket in insertion order;
    the table starts at 16 and doubles whenever the size passes three quarters of it (a resize keeps
    each bucket's order). A key put twice keeps its first place. Buckets of eight or more colliding
    keys (treeified) do not occur with the few keys of an offset and are not modelled.
    """
    capacity = 16
    table: list[list[str]] = [[] for _ in range(capacity)]
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        table[_spread(key) & (capacity - 1)].append(key)
        if len(seen) > capacity * 3 // 4:
            capacity *= 2
            grown: list[list[str]] = [[] for _ in range(capacity)]
            for bucket in table:
                for k in bucket:
                    grown[_spread(k) & (capacity - 1)].append(k)
            table = grown
    return [k for bucket in table for k in bucket]


def _spread(key: str) -> int:
    h = java_string_hash(key)
    return h ^ (h >> 16)


def java_hashmap(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """A dict that iterates like a ``HashMap`` filled with ``items`` in this order (later values win)."""
    pairs = list(items)
    values = dict(pairs)
    return {k: values[k] for k in java_hashmap_order(k for k, _ in pairs)}


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (signed 32-bit result)."""
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    length = len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    end = length - length % 4
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[end + 2] << 16
    if tail >= 2:
        h ^= data[end + 1] << 8
    if tail >= 1:
        h ^= data[end]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition the Java producer's default partitioner picks for a non-null key."""
    if partitions < 1:
        raise ValueError("a topic has at least one partition")
    return (murmur2(key) & 0x7FFFFFFF) % partitions
