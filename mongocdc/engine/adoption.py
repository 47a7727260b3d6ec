"""Debezium MongoDB connector offsets (3.6.1.Final) ↔ mongocdc offsets: adopting a position either way.

Pure: no I/O. The Kafka Connect storage format (key and value bytes, the offsets topic's partition,
the standalone file) is :mod:`mongocdc.offsets.connect`; this module is what the Debezium MongoDB
connector puts in it and how that maps onto mongocdc's offset record.

Debezium's source partition (``MongoDbPartition``) is one per connector since 2.x, the whole replica
set or the whole sharded cluster through mongos: ``{"server_id": "<topic.prefix>"}``. Offsets of
older versions (and of 2.x's ``mongodb.connection.mode=replica_set``, removed in 3.x) carry the
replica set too, ``{"server_id": "<topic.prefix>", "rs": "<replica set name>"}`` (``rs`` is
``cluster`` for a connection through mongos); 3.6.1 reads those only when the first kind is absent.

Its source offset (``MongoDbOffsetContext.getOffset``) is a ``HashMap`` filled in this order:

* ``sec``, ``ord`` (int): the cluster time of the position, ``-1``/``-1`` when the position is a
  resume token alone (an idle stream's post-batch token, or the token a snapshot starts from);
* ``initsync`` (``true``) while the initial snapshot runs; nothing else then but the position;
* ``lsid`` (the session document as its JSON writer prints it, ``{"id": {"$binary": "…","$type": "04"}}``),
  ``txnNumber`` (long): the position's event is part of a transaction;
* ``resume_token``: Base64 of the token document's BSON (``{"_data": "<hex>"}``); 1.x wrote the
  ``_data`` hex string itself, which 3.6.1 still reads;
* with ``provide.transaction.metadata``, inside a transaction: ``transaction_id``
  (``<lsid>:<txnNumber>``) and one
  ``transaction_data_collection_order_<db>.<collection>`` (long) per collection; 3.6.1's loader
  ignores both (a restart starts a new transaction context);
* during an incremental snapshot: ``incremental_snapshot_primary_key`` and
  ``incremental_snapshot_maximum_key`` (hex of a Java-serialised ``Object[]``),
  ``incremental_snapshot_collections`` (JSON text: ``[{"incremental_snapshot_collections_id":
  "<db>.<collection>", "incremental_snapshot_collections_additional_condition": "(<filter>)"|null}]``,
  the current collection first) and ``incremental_snapshot_correlation_id``.

mongocdc's side is a :class:`~mongocdc.engine.source_offset.SourceOffset`: its record has the same
``sec``/``ord``/``resume_token`` fields (the token in the same Base64-of-BSON form) and ``initsync``,
plus mongocdc's own ``snapshot`` (snapshot progress), ``transaction`` and ``incremental_snapshot``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bson
from bson import json_util

from mongocdc.engine.incremental import IncrementalSnapshotState
from mongocdc.engine.source_offset import SourceOffset, as_json, encode_token
from mongocdc.errors import ConfigError, UsageError
from mongocdc.events.java import java_hashmap, java_hashmap_order
from mongocdc.events.position import Position, token_cluster_time
from mongocdc.events.snapshot import SnapshotState
from mongocdc.offsets.connect import ConnectOffset, connect_key, jackson_json

SERVER_ID = "server_id"
REPLICA_SET = "rs"
CLUSTER = "cluster"
"""``rs`` of a pre-3.x offset kept through mongos, and mongocdc's partition for a cluster through mongos."""

SEC, ORD, INITSYNC, LSID, TXN_NUMBER, RESUME_TOKEN = "sec", "ord", "initsync", "lsid", "txnNumber", "resume_token"
TRANSACTION_ID = "transaction_id"
TRANSACTION_COUNT_PREFIX = "transaction_data_collection_order_"
INCREMENTAL_PRIMARY_KEY = "incremental_snapshot_primary_key"
INCREMENTAL_MAXIMUM_KEY = "incremental_snapshot_maximum_key"
INCREMENTAL_COLLECTIONS = "incremental_snapshot_collections"
INCREMENTAL_COLLECTION_ID = "incremental_snapshot_collections_id"
INCREMENTAL_CONDITION = "incremental_snapshot_collections_additional_condition"
INCREMENTAL_CORRELATION_ID = "incremental_snapshot_correlation_id"
JAVA_NULL_ARRAY = "aced000570"
"""``HexConverter`` of ``ObjectOutputStream.writeObject(null)``: the key arrays before a chunk was read."""

_KNOWN = {SEC, ORD, INITSYNC, LSID, TXN_NUMBER, RESUME_TOKEN, TRANSACTION_ID}
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")


def debezium_partition(topic_prefix: str, replica_set: str | None = None) -> dict[str, str]:
    """Debezium's source partition map, in its ``HashMap``'s order (the key bytes depend on it)."""
    items = [(SERVER_ID, topic_prefix)]
    if replica_set is not None:
        items.append((REPLICA_SET, replica_set))
    return java_hashmap(items)


def debezium_key(connector: str, topic_prefix: str, replica_set: str | None = None) -> bytes:
    """The offsets key bytes of a Debezium MongoDB connector (Connect's ``[name, partition]``)."""
    return connect_key(connector, debezium_partition(topic_prefix, replica_set))


@dataclass(frozen=True, slots=True)
class Translated:
    """An offset translated into the other connector's form, and what the operator should know."""

    offset: dict[str, Any]
    notes: tuple[str, ...] = ()


# --- Debezium → mongocdc ------------------------------------------------------------------------------


def _bad(message: str) -> UsageError:
    return UsageError(
        f"Debezium's stored offset cannot be adopted: {message}",
        hint="the offsets topic (or file) holds something other than a Debezium MongoDB connector's offset "
        "there; check --connector-name and --connect-offsets-topic, or inspect the record with "
        "`mongocdc topic dump`",
    )


def parse_debezium_token(value: Any) -> bytes:
    """The BSON of Debezium's ``resume_token``: Base64 of the token's BSON (2.x+), or 1.x's ``_data`` hex."""
    if not isinstance(value, str) or not value:
        raise _bad(f"'resume_token' is not a string: {as_json(value)}")
    document: dict[str, Any] | None = None
    try:
        raw = base64.b64decode(value, validate=True)
        if len(raw) >= 5 and int.from_bytes(raw[:4], "little") == len(raw):
            document = bson.decode(raw)
    except (binascii.Error, bson.errors.BSONError, ValueError):
        document = None
    if document is not None and "_data" in document:
        return raw
    if document is None and _HEX.fullmatch(value):  # as Debezium: what is not Base64 of BSON is 1.x's _data
        return bson.encode({"_data": value})
    raise _bad(
        f"'resume_token' {value!r} is neither Base64 of a BSON resume token document (a document with "
        "`_data`) nor a `_data` hex string"
    )


def _int(offset: Mapping[str, Any], name: str, default: int | None = None) -> int:
    value = offset.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _bad(f"{name!r} is not an integer: {as_json(value)}")
    try:
        return int(value)
    except ValueError:
        raise _bad(f"{name!r} is not an integer: {as_json(value)}") from None


def from_debezium(offset: Mapping[str, Any], *, new_snapshot_id: str = "debezium-incremental") -> Translated:
    """mongocdc's offset record for Debezium's source offset ``offset``.

    * The position: the same resume token (byte for byte), ``sec``/``ord`` from the token's cluster
      time when Debezium stored ``-1`` (a token without an event). An offset without a token resumes
      at ``sec``/``ord`` (the change at that time included), as Debezium would.
    * ``initsync``: Debezium's initial snapshot did not finish, and Debezium would run it again from the
      start. mongocdc does the same (an interrupted snapshot with no collection done), then streams
      from the position Debezium recorded before its snapshot.
    * An incremental snapshot continues with the same collections and filters; the current one is
      read again from its first document (Debezium's chunk position is Java-serialised and not carried
      over; the repeated reads are ``op=r`` events of documents that exist).
    * Transaction metadata counters are dropped (Debezium's own restart drops them too): a transaction
      open at the switch gets a new BEGIN.
    """
    notes: list[str] = []
    if not offset:
        raise UsageError(
            "Debezium's stored offset is empty ({}): it had not recorded a position yet (Debezium writes one "
            "with the records it sends while its snapshot has not begun, e.g. notifications)",
            hint="there is no position to continue from: start mongocdc without importing (it snapshots or "
            "streams per snapshot.mode), or let Debezium run until its snapshot has begun",
        )
    token = parse_debezium_token(offset[RESUME_TOKEN]) if offset.get(RESUME_TOKEN) is not None else None
    sec = _int(offset, SEC, -1)
    ord_ = _int(offset, ORD, -1)
    if sec < 0 or ord_ < 0:
        derived = token_cluster_time(bson.decode(token)) if token is not None else None
        if derived is not None:
            sec, ord_ = derived
        elif token is not None:
            sec, ord_ = 0, 0
            notes.append("the resume token carries no cluster time; sec/ord are 0 (the token alone decides)")
        else:
            raise _bad(f"it holds neither a resume token nor a cluster time (sec={sec}, ord={ord_})")
    if sec > 2**32 - 1 or ord_ > 2**32 - 1:
        raise _bad(f"sec/ord out of range for a BSON timestamp: {sec}/{ord_}")
    position = Position(sec=sec, ord=ord_, resume_token=token)
    if offset.get(INITSYNC) is True:
        notes.append(
            "Debezium's initial snapshot had not finished: mongocdc runs it again from the start (as Debezium "
            "would), then streams from the position Debezium recorded before its snapshot"
        )
        return Translated(SourceOffset(position, snapshot=SnapshotState()).to_record(), tuple(notes))
    incremental = None
    if offset.get(TRANSACTION_ID) is not None:
        notes.append(
            f"transaction {offset[TRANSACTION_ID]} was open: its metadata counters are not carried over, so "
            "mongocdc starts it with a new BEGIN (as Debezium does after a restart)"
        )
    collections_text = offset.get(INCREMENTAL_COLLECTIONS)
    if collections_text is not None:
        incremental = _incremental_from_debezium(
            collections_text, offset.get(INCREMENTAL_CORRELATION_ID), new_snapshot_id
        )
        if incremental is not None:
            rest = f", then {', '.join(incremental.remaining)}" if incremental.remaining else ""
            notes.append(
                f"incremental snapshot {incremental.snapshot_id} continues: {incremental.current} is read again "
                f"from its first document{rest}"
            )
    ignored = sorted(
        k
        for k in offset
        if k not in _KNOWN and not k.startswith(TRANSACTION_COUNT_PREFIX) and not k.startswith("incremental_snapshot")
    )
    if ignored:
        notes.append(f"fields mongocdc does not use were left out: {', '.join(ignored)}")
    return Translated(SourceOffset(position, incremental=incremental).to_record(), tuple(notes))


def _strip_parentheses(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text.startswith("(") and text.endswith(")") else text


def _incremental_from_debezium(text: Any, correlation_id: Any, new_id: str) -> IncrementalSnapshotState | None:
    if not isinstance(text, str):
        raise _bad(f"{INCREMENTAL_COLLECTIONS!r} is not text: {text!r}")
    try:
        entries = json.loads(text)
    except ValueError as exc:
        raise _bad(f"{INCREMENTAL_COLLECTIONS!r} is not JSON: {exc}") from None
    if not isinstance(entries, list):
        raise _bad(f"{INCREMENTAL_COLLECTIONS!r} is not a JSON list: {text!r}")
    namespaces: list[str] = []
    conditions: dict[str, Mapping[str, Any]] = {}
    for entry in entries:
        ns = entry.get(INCREMENTAL_COLLECTION_ID) if isinstance(entry, dict) else None
        if not isinstance(ns, str) or "." not in ns.strip(".") or ns in namespaces:
            continue  # Debezium drops the ids it cannot parse as <db>.<collection> too
        namespaces.append(ns)
        condition = entry.get(INCREMENTAL_CONDITION)
        if isinstance(condition, str) and condition.strip():
            try:
                parsed = json_util.loads(_strip_parentheses(condition.strip()))
            except Exception as exc:  # json_util raises ValueError, TypeError or bson errors
                raise _bad(f"the incremental snapshot filter of {ns} is not a JSON document: {exc}") from None
            if not isinstance(parsed, dict):
                raise _bad(f"the incremental snapshot filter of {ns} is not a JSON document: {as_json(condition)}")
            conditions[ns] = parsed
    if not namespaces:
        return None
    snapshot_id = correlation_id if isinstance(correlation_id, str) and correlation_id else new_id
    return IncrementalSnapshotState.start(snapshot_id, namespaces, conditions)


# --- mongocdc → Debezium ------------------------------------------------------------------------------


def to_debezium(offset: Mapping[str, Any]) -> Translated:
    """Debezium's source offset for mongocdc's offset record, fields in the order Debezium's ``HashMap``
    iterates them (so the value bytes are the ones Debezium writes for that position).

    * ``sec``, ``ord``, ``resume_token`` as they are (a record without a token: Debezium starts at
      ``sec``/``ord``, that change included, as mongocdc would).
    * An unfinished mongocdc snapshot (``initsync``) is written as Debezium writes its own: Debezium runs
      the initial snapshot again from the start, then streams from the recorded position.
    * An open transaction (with ``provide.transaction.metadata``): ``lsid``/``txnNumber`` and the
      ``transaction_*`` counters, as Debezium writes them inside a transaction (its loader ignores the
      counters).
    * A running incremental snapshot: the remaining collections, the current one first, with their filters
      and the snapshot's id as the correlation id; the chunk position is not carried over (Debezium reads
      the current collection again from its first document), nor the paused state (Debezium keeps neither).
    """
    notes: list[str] = []
    try:
        stored = SourceOffset.from_record(offset)
    except ValueError as exc:
        raise UsageError(
            f"mongocdc's stored offset cannot be exported: {exc}",
            hint="`mongocdc offsets show --output json` shows it; `offsets set`/`offsets reset` repair it",
        ) from None
    position = stored.position
    items: list[tuple[str, Any]] = [(SEC, position.sec), (ORD, position.ord)]
    if stored.snapshot is not None:
        items.append((INITSYNC, True))
        notes.append(
            f"mongocdc's initial snapshot had not finished ({stored.snapshot.done} collections done): Debezium runs "
            "it again from the start, then streams from the position recorded before it"
        )
    txn = stored.transaction
    if stored.snapshot is not None or (txn is not None and txn.ended):
        txn = None
    txn_id = None
    if txn is not None:
        txn_id = txn.id
        lsid, _, number = txn_id.rpartition(":")
        if lsid and number.lstrip("-").isdigit():
            lsid = debezium_lsid(lsid)
            txn_id = f"{lsid}:{number}"
            items += [(LSID, lsid), (TXN_NUMBER, int(number))]
    token = encode_token(position.resume_token)
    if token is not None:
        items.append((RESUME_TOKEN, token))
    if stored.snapshot is None:
        if txn is not None:
            items.append((TRANSACTION_ID, txn_id))
            counts = dict(txn.collections)
            items += [(TRANSACTION_COUNT_PREFIX + name, counts[name]) for name in java_hashmap_order(counts)]
        state = stored.incremental
        if state is not None:
            items += _incremental_to_debezium(state)
            notes.append(
                f"incremental snapshot {state.snapshot_id} continues in Debezium: {state.current} is read again "
                f"from its first document" + (", and it is no longer paused" if state.paused else "")
            )
    return Translated(java_hashmap(items), tuple(notes))


def debezium_lsid(lsid: str) -> str:
    """Debezium's ``lsid`` text for a session: the session document as its JSON writer prints it.

    mongocdc names a session by its UUID; Debezium prints the change event's ``lsid`` document,
    ``{"id": {"$binary": "<Base64>","$type": "04"}}`` (and a ``uid`` for authenticated sessions, which a
    UUID alone does not give: such a session keeps only its id). Text that is not a UUID is kept as is.
    """
    try:
        session = uuid.UUID(lsid)
    except ValueError:
        return lsid
    return f'{{"id": {{"$binary": "{base64.b64encode(session.bytes).decode()}","$type": "04"}}}}'


def _incremental_to_debezium(state: IncrementalSnapshotState) -> list[tuple[str, Any]]:
    conditions = dict(state.conditions)
    collections = [
        {
            INCREMENTAL_COLLECTION_ID: ns,
            INCREMENTAL_CONDITION: f"({conditions[ns]})" if conditions.get(ns) else None,
        }
        for ns in state.collections
    ]
    return [
        (INCREMENTAL_PRIMARY_KEY, JAVA_NULL_ARRAY),
        (INCREMENTAL_MAXIMUM_KEY, JAVA_NULL_ARRAY),
        (INCREMENTAL_COLLECTIONS, jackson_json(collections).decode("utf-8")),
        (INCREMENTAL_CORRELATION_ID, state.snapshot_id),
    ]


# --- which of a connector's stored offsets, under which mongocdc partition ----------------------------


def choose_debezium_offsets(
    found: Sequence[ConnectOffset],
    connector: str,
    topic_prefix: str,
    partitions: Sequence[str],
    *,
    where: str,
    explicit: bool = False,
) -> list[tuple[str, ConnectOffset]]:
    """Which stored offsets of Debezium connector ``connector`` become which of mongocdc's ``partitions``.

    As Debezium 3.6.1 itself: the offset of ``{"server_id": <topic.prefix>}`` when there is one, which
    needs mongocdc to stream the same way (one partition: the replica set, or the cluster through
    mongos). Otherwise offsets of older versions, ``{"server_id", "rs"}``, each for the mongocdc
    partition of the same name (``rs`` ``cluster`` for ``cluster``, a shard's replica set for the
    shard's stream with ``mongodb.connection.mode=replica_set``). With ``explicit`` (the operator named
    the one partition) a single older offset goes to it whatever its ``rs``.
    """
    mine = [o for o in found if o.connector == connector]
    if not mine:
        names = sorted({o.connector for o in found})
        listed = f"it holds offsets of {', '.join(repr(n) for n in names)}" if names else "it holds no offsets at all"
        raise UsageError(
            f"no stored offsets of connector {connector!r} in {where}: {listed}",
            hint="pass --connector-name (the Debezium connector's `name`); stop the connector gracefully first so "
            "its last offsets are flushed (Connect flushes every offset.flush.interval.ms and on stop)",
        )
    current = [o for o in mine if set(o.partition) == {SERVER_ID}]
    legacy = [o for o in mine if set(o.partition) == {SERVER_ID, REPLICA_SET}]
    if not current and not legacy:
        shapes = ", ".join(sorted({json.dumps(o.partition) for o in mine}))
        raise UsageError(
            f"connector {connector!r} in {where} has offsets, but not a Debezium MongoDB connector's "
            f"(their partitions are {shapes})",
            hint='a Debezium MongoDB connector\'s offsets are keyed {"server_id": "<topic.prefix>"}; check '
            "--connector-name",
        )
    servers = sorted({str(o.partition[SERVER_ID]) for o in current + legacy})
    current = [o for o in current if o.partition[SERVER_ID] == topic_prefix]
    legacy = [o for o in legacy if o.partition[SERVER_ID] == topic_prefix]
    if not current and not legacy:
        raise ConfigError(
            f"connector {connector!r}'s offsets in {where} are for topic.prefix {', '.join(map(repr, servers))}, "
            f"but mongocdc's topic.prefix is {topic_prefix!r}: mongocdc would write other topics",
            hint=f"set topic.prefix to {servers[0]!r} (or --topic-prefix) so mongocdc continues Debezium's topics",
        )
    if current:
        if len(partitions) != 1:
            raise ConfigError(
                f"Debezium streams the whole cluster through mongos (one offset), but mongocdc is set to stream "
                f"each shard's replica set ({', '.join(partitions)}): one resume token cannot continue several streams",
                hint="set mongodb.connection.mode=sharded (the default) to continue from Debezium's offset",
            )
        return [(partitions[0], current[0])]
    if explicit and len(partitions) == 1 and len(legacy) == 1:
        return [(partitions[0], legacy[0])]
    chosen = [(str(o.partition[REPLICA_SET]), o) for o in legacy if o.partition[REPLICA_SET] in partitions]
    if not chosen:
        rs_names = ", ".join(sorted(str(o.partition[REPLICA_SET]) for o in legacy))
        raise UsageError(
            f"connector {connector!r}'s offsets in {where} are per replica set ({rs_names}) from an older Debezium, "
            f"and none is for mongocdc's partitions ({', '.join(partitions)})",
            hint="pass --partition to say which mongocdc partition to import into (a replica set name, or "
            "`cluster` through mongos)",
        )
    return sorted(chosen)
