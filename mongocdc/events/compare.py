"""Compare the records of two connectors that captured the same MongoDB into two topic prefixes.

The reference is Debezium's MongoDB connector; the other side is mongocdc. Both read the same
server, broker and workload, so their records must be equal except for what cannot be equal:

* the topic prefix (``source.name``, topic names, the heartbeat key, the connector headers);
* mongocdc's own headers (``__mongocdc.*``: the cluster time of a change), which Debezium does not write;
* the connector's version (``source.version``) and the run's identity headers;
* wall-clock times: the envelope's ``ts_ms``, a snapshot read's ``source.ts_ms``/``ts_us``/``ts_ns``
  (the time of the read), heartbeat times;
* an incremental snapshot's watermarks: each connector writes its own (``<uuid>-open``/``-close``
  documents in the signal collection), so their records, and the position an incremental read
  carries (its ``source.ts_*`` and ``ord`` are the closing watermark's), are the connector's own;
* which initial-snapshot read is the ``last``: Debezium reads a collection in natural order, mongocdc
  in ``_id`` order, so only the collection of the one ``last`` read must agree;
* lookup timing: an update's ``after`` is looked up when the update is read, so a later change of
  the same document may already be in it. Such an ``after`` is accepted when it equals the
  reference's ``after`` of the same key at or after that change (or ``null``: deleted since);
* heartbeats: how many there are depends on timing, so only their shape, partition and key are
  compared.

Records are matched per topic and key, in order: the n-th record of a key on one side with the
n-th on the other. Everything else (key bytes, partition, every value field, tombstones,
headers, the Connect schema when ``schemas.enable`` is on) must be equal.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mongocdc.events.java import default_partition

VOLATILE = "<volatile>"
HEARTBEAT_PREFIX = "__debezium-heartbeat"


@dataclass(frozen=True, slots=True)
class Record:
    """One Kafka record as read back: enough to compare two connectors' output."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the compared side's output differs from the reference's."""

    topic: str
    key: str
    index: int
    where: str
    reference: Any
    compared: Any

    def describe(self) -> str:
        at = f"{self.topic} key={self.key} #{self.index}"
        return f"{at}: {self.where}: reference {_short(self.reference)}, compared {_short(self.compared)}"


@dataclass
class Comparison:
    """The outcome: counts per topic kind and every difference found."""

    reference_prefix: str
    compared_prefix: str
    records: dict[str, tuple[int, int]] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference_prefix": self.reference_prefix,
            "compared_prefix": self.compared_prefix,
            "identical": self.identical,
            "records": {topic: {"reference": a, "compared": b} for topic, (a, b) in sorted(self.records.items())},
            "differences": [
                {
                    "topic": d.topic,
                    "key": d.key,
                    "index": d.index,
                    "where": d.where,
                    "reference": d.reference,
                    "compared": d.compared,
                }
                for d in self.differences
            ],
        }


def _short(value: Any, width: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _text(raw: bytes | None) -> str:
    return "null" if raw is None else raw.decode("utf-8", errors="replace")


class _Normaliser:
    def __init__(self, prefix: str, heartbeat_prefix: str) -> None:
        self.prefix = prefix
        self.heartbeat_topic = f"{heartbeat_prefix}.{prefix}"

    def topic(self, topic: str) -> str | None:
        """The topic's name with the prefix replaced by ``<prefix>``; ``None`` for another connector's topic."""
        if topic == self.heartbeat_topic:
            return f"{HEARTBEAT_PREFIX}.<prefix>"
        if topic.startswith(self.prefix + "."):
            return "<prefix>" + topic[len(self.prefix) :]
        return None

    def value(self, topic: str, raw: bytes | None) -> Any:
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return {"<not JSON>": _text(raw)}
        return self._strip(topic, value)

    def _strip(self, topic: str, value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"schema", "payload"}:
            return {"schema": self._schema(value["schema"]), "payload": self._payload(topic, value["payload"])}
        return self._payload(topic, value)

    def _schema(self, schema: Any) -> Any:
        """The Connect schema with the topic prefix taken out of its names (``<prefix>.<db>.<coll>.Envelope``)."""
        if isinstance(schema, list):
            return [self._schema(item) for item in schema]
        if not isinstance(schema, dict):
            return schema
        out = {name: self._schema(value) for name, value in schema.items()}
        name = out.get("name")
        if isinstance(name, str) and name.startswith(self.prefix + "."):
            out["name"] = "<prefix>" + name[len(self.prefix) :]
        return out

    def _payload(self, topic: str, payload: Any) -> Any:
        if not isinstance(payload, dict):
            return payload
        payload = dict(payload)
        if topic.startswith(HEARTBEAT_PREFIX):
            if "ts_ms" in payload:
                payload["ts_ms"] = VOLATILE
            if payload.get("serverName") == self.prefix:
                payload["serverName"] = "<prefix>"
            return payload
        if "status" in payload and "event_count" in payload:  # transaction metadata: compared as is
            return payload
        if "ts_ms" in payload:
            payload["ts_ms"] = VOLATILE
        source = payload.get("source")
        if isinstance(source, dict):
            source = dict(source)
            source["version"] = VOLATILE
            if source.get("name") == self.prefix:
                source["name"] = "<prefix>"
            if payload.get("op") == "r":
                volatile: tuple[str, ...] = ("ts_ms", "ts_us", "ts_ns", "wallTime")
                if source.get("snapshot") == "incremental":
                    volatile += ("ord",)
                for name in volatile:
                    if source.get(name) is not None:
                        source[name] = VOLATILE
                if source.get("snapshot") == "last":
                    source["snapshot"] = "true"
            payload["source"] = source
        return payload

    def key(self, topic: str, raw: bytes | None) -> str:
        text = _text(raw)
        if topic.startswith(HEARTBEAT_PREFIX):
            return text.replace(json.dumps(self.prefix), '"<prefix>"')
        if text.startswith('{"schema":'):  # the key schema's name is "<topic>.Key"
            return json.dumps(self._strip(topic, json.loads(text)), separators=(",", ":"), ensure_ascii=False)
        return text

    def headers(self, headers: Sequence[tuple[str, bytes | None]]) -> list[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        for name, raw in headers:
            if name.startswith(MONGOCDC_HEADER_PREFIX):
                continue  # mongocdc's own (the cluster time): the reference has none
            value = None if raw is None else raw.decode("utf-8", errors="replace")
            if name.startswith("__debezium.context."):
                value = "<prefix>" if value == self.prefix else VOLATILE
            out.append((name, value))
        return out


MONGOCDC_HEADER_PREFIX = "__mongocdc."
_WATERMARK_ID = re.compile(r'^"[0-9a-f-]{36}-(open|close)"$')


def is_watermark(record: Record) -> bool:
    """A record of an incremental snapshot's watermark document (``"<uuid>-open"``/``"<uuid>-close"``)."""
    if record.key is None or b"-open" not in record.key and b"-close" not in record.key:
        return False
    try:
        key = _payload_of(json.loads(record.key))
    except ValueError:
        return False
    return isinstance(key, dict) and isinstance(key.get("id"), str) and _WATERMARK_ID.match(key["id"]) is not None


def _group(records: Iterable[Record], normaliser: _Normaliser) -> dict[str, dict[str, list[Record]]]:
    grouped: dict[str, dict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        topic = normaliser.topic(record.topic)
        if topic is None or is_watermark(record):
            continue
        grouped[topic][normaliser.key(topic, record.key)].append(record)
    return grouped


def _last_read_topics(grouped: Mapping[str, Mapping[str, Sequence[Record]]]) -> list[str]:
    """The topics holding a read marked ``last`` (one, after a whole initial snapshot)."""
    found = []
    for topic, keys in grouped.items():
        for records in keys.values():
            for record in records:
                if record.value is None or b'"last"' not in record.value:
                    continue
                payload = _payload_of(json.loads(record.value))
                if isinstance(payload, dict) and (payload.get("source") or {}).get("snapshot") == "last":
                    found.append(topic)
    return sorted(found)


def _diff(path: str, a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            yield (f"{path} fields" if path else "fields", list(a), list(b))
        for name in a:
            if name in b:
                yield from _diff(f"{path}.{name}" if path else name, a[name], b[name])
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _diff(f"{path}[{index}]", x, y)
        return
    if a != b or type(a) is not type(b):
        yield (path or "value", a, b)


def _payload_of(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"schema", "payload"}:
        return value["payload"]
    return value


def _looked_up_later(value: Any, later: Sequence[Any]) -> bool:
    """An update's ``after`` that equals a later state of the document in the reference (lookup timing)."""
    payload = _payload_of(value)
    if not isinstance(payload, dict) or payload.get("op") != "u" or payload.get("updateDescription") is None:
        return False
    after = payload.get("after")
    if after is None:
        return True
    return any(isinstance(_payload_of(v), dict) and _payload_of(v).get("after") == after for v in later)


def compare(
    reference: Iterable[Record],
    compared: Iterable[Record],
    *,
    reference_prefix: str,
    compared_prefix: str,
    heartbeat_prefix: str = HEARTBEAT_PREFIX,
    partitions: Mapping[str, int] | None = None,
) -> Comparison:
    """Every difference between the compared connector's records and the reference's.

    ``partitions`` (topic → partition count, both sides' topics) lets keys that hold the prefix
    (Connect schemas in the key) be checked against the partition Kafka's Java producer picks.
    """
    left = _Normaliser(reference_prefix, heartbeat_prefix)
    right = _Normaliser(compared_prefix, heartbeat_prefix)
    a_topics = _group(reference, left)
    b_topics = _group(compared, right)
    result = Comparison(reference_prefix, compared_prefix)
    if _last_read_topics(a_topics) != _last_read_topics(b_topics):
        result.differences.append(
            Difference("*", "*", 0, "snapshot 'last' read", _last_read_topics(a_topics), _last_read_topics(b_topics))
        )
    for topic in sorted(set(a_topics) | set(b_topics)):
        a_keys, b_keys = a_topics.get(topic, {}), b_topics.get(topic, {})
        result.records[topic] = (sum(map(len, a_keys.values())), sum(map(len, b_keys.values())))
        if topic.startswith(HEARTBEAT_PREFIX):
            _compare_heartbeats(topic, a_keys, b_keys, left, right, result)
            continue
        for key in sorted(set(a_keys) | set(b_keys)):
            _compare_key(topic, key, a_keys.get(key, []), b_keys.get(key, []), left, right, result, partitions or {})
    return result


def _partition_of(record: Record, partitions: Mapping[str, int]) -> int | None:
    count = partitions.get(record.topic)
    if record.key is None or count is None:
        return None
    return default_partition(record.key, count)


def _compare_key(
    topic: str,
    key: str,
    a_records: Sequence[Record],
    b_records: Sequence[Record],
    left: _Normaliser,
    right: _Normaliser,
    result: Comparison,
    partitions: Mapping[str, int],
) -> None:
    add = result.differences.append
    if len(a_records) != len(b_records):
        add(Difference(topic, key, 0, "record count", len(a_records), len(b_records)))
    a_values = [left.value(topic, r.value) for r in a_records]
    b_values = [right.value(topic, r.value) for r in b_records]
    for index, (a, b) in enumerate(zip(a_records, b_records, strict=False)):
        if a.key == b.key or not partitions:
            if a.partition != b.partition:
                add(Difference(topic, key, index, "partition", a.partition, b.partition))
        else:  # the key bytes hold the prefix (schemas.enable): each side hashes its own key
            expected = [_partition_of(r, partitions) for r in (a, b)]
            if [a.partition, b.partition] != expected:
                add(
                    Difference(
                        topic, key, index, "partition (murmur2 of the key)", expected, [a.partition, b.partition]
                    )
                )
        a_headers, b_headers = left.headers(a.headers), right.headers(b.headers)
        if a_headers != b_headers:
            add(Difference(topic, key, index, "headers", a_headers, b_headers))
        a_value, b_value = a_values[index], b_values[index]
        for where, x, y in _diff("", a_value, b_value):
            if where.endswith("after") and _looked_up_later(b_value, a_values[index:]):
                continue
            add(Difference(topic, key, index, where, x, y))


def _compare_heartbeats(
    topic: str,
    a_keys: Mapping[str, Sequence[Record]],
    b_keys: Mapping[str, Sequence[Record]],
    left: _Normaliser,
    right: _Normaliser,
    result: Comparison,
) -> None:
    add = result.differences.append
    if set(a_keys) != set(b_keys):
        add(Difference(topic, "*", 0, "heartbeat keys", sorted(a_keys), sorted(b_keys)))
        return
    for key in a_keys:
        a, b = a_keys[key][0], b_keys[key][0]
        if {r.partition for r in a_keys[key]} != {r.partition for r in b_keys[key]}:
            add(Difference(topic, key, 0, "partitions", sorted({r.partition for r in a_keys[key]}), b.partition))
        if left.headers(a.headers) != right.headers(b.headers):
            add(Difference(topic, key, 0, "headers", left.headers(a.headers), right.headers(b.headers)))
        for where, x, y in _diff("", left.value(topic, a.value), right.value(topic, b.value)):
            add(Difference(topic, key, 0, where, x, y))
