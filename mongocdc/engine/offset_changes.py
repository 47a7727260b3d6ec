"""What the offset commands change, decided (pure): ``offsets reset``, ``set``, ``import`` and ``export``.

Each function takes what is stored (a connector's records by source partition, or the offsets Kafka
Connect holds) and gives the :class:`~mongocdc.engine.source_offset.OffsetChange` values, or the Debezium
record, the command confirms, writes (:mod:`mongocdc.offsets.edits`, :mod:`mongocdc.offsets.connect_locations`)
and shows. The records are read and written as ``SourceOffset`` reads and writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from mongocdc.engine.adoption import debezium_partition, from_debezium, to_debezium
from mongocdc.engine.source_offset import OffsetChange, SourceOffset, read_offset, shown_record
from mongocdc.errors import ConfigError, UsageError
from mongocdc.events.position import Position, token_cluster_time
from mongocdc.offsets.connect import ConnectOffset, connect_key, connect_value, rest_request

if TYPE_CHECKING:
    from mongocdc.offsets.base import OffsetRecord

Stored = Mapping[str, dict[str, Any]]
"""A connector's stored records by source partition."""


def reset_changes(stored: Stored, partition: str | None, seconds: int | None) -> list[OffsetChange]:
    """Without ``seconds``, the stored offset of ``partition`` (default: every stored one) deleted; with them,
    ``partition`` (default: every stored one) moved to that time, where streaming restarts with the first change
    at or after it. Empty when there is nothing to delete or move."""
    if seconds is None:
        targets = [p for p in sorted(stored) if partition is None or p == partition]
        return [OffsetChange(p, "deleted", stored[p], None) for p in targets]
    targets = [partition] if partition is not None else sorted(stored)
    after = SourceOffset(Position(seconds, 0)).to_record()
    return [OffsetChange(p, "moved", stored.get(p), after) for p in targets]


def token_change(stored: Stored, partition: str, document: Mapping[str, Any]) -> OffsetChange:
    """``partition``'s offset set to the resume token ``document``: streaming continues with the change after it.

    ``sec`` and ``ord`` are the token's cluster time, or, when the token is too short to hold one, the stored
    offset's (0 without one)."""
    token = Position.token_bytes(document)
    cluster_time = token_cluster_time(document)
    before = stored.get(partition)
    previous = read_offset(before) if before is not None else None
    kept = previous.position if previous is not None and not isinstance(previous, str) else Position(0, 0)
    sec, ord_ = cluster_time if cluster_time is not None else (kept.sec, kept.ord)
    after = SourceOffset(Position(sec, ord_, token)).to_record()
    return OffsetChange(partition, "set", before, after)


class Adopted(NamedTuple):
    """A Debezium connector's offset translated for one of mongocdc's partitions, and what to know about it."""

    target: str
    source: ConnectOffset
    offset: dict[str, Any]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """Where the offset came from and the notes, beside its change in ``offsets import``'s JSON."""
        source = self.source
        shown = shown_record(source.offset)
        debezium = {"connector": source.connector, "partition": source.partition, "offset": shown}
        return {"debezium": {**debezium, "read_from": source.where}, "notes": self.notes}


def adopt(target: str, source: ConnectOffset, debezium: str, *, signal_collection: bool) -> Adopted:
    """``source``, an offset of Debezium connector ``debezium``, as mongocdc's offset of partition ``target``
    (``signal_collection``: whether ``signal.data.collection`` is set, which continuing an incremental snapshot
    needs). A value that is no JSON object is a ``UsageError`` (exit 2)."""
    if source.offset is None:
        raise UsageError(
            f"the offset of {source.key.decode(errors='replace')} in {source.where} is not a JSON object",
            hint="it was not written by Kafka Connect's JsonConverter; inspect it with `mongocdc topic dump`",
        )
    result = from_debezium(source.offset, new_snapshot_id=f"debezium-{debezium}")
    notes = list(result.notes)
    adopted = read_offset(result.offset)
    if not isinstance(adopted, str) and adopted.incremental is not None and not signal_collection:
        notes.append("set signal.data.collection (as Debezium's) so mongocdc continues the incremental snapshot")
    return Adopted(target, source, result.offset, notes)


class DebeziumRecord(NamedTuple):
    """mongocdc's offset as the record a Debezium MongoDB connector reads in Kafka Connect's offset storage."""

    partition: dict[str, str]
    """Debezium's source partition, ``{"server_id": "<topic.prefix>"}``."""
    key: bytes
    value: bytes
    offset: dict[str, Any]
    """The offset the value holds."""
    notes: tuple[str, ...]

    def to_dict(self, connector: str, written: str, notes: Sequence[str], *, dry_run: bool) -> dict[str, Any]:
        """The record as ``offsets export``'s JSON shows it beside its change: where it was ``written`` (or would go,
        with ``dry_run``), the REST request that writes the same, and the ``notes``."""
        debezium = {
            "connector": connector,
            "partition": self.partition,
            "key": self.key.decode("utf-8"),
            "value": self.value.decode("utf-8"),
            "written_to" if not dry_run else "would_go_to": written,
        }
        return {
            "debezium": debezium,
            "rest": rest_request(connector, self.partition, self.offset),
            "notes": list(notes),
        }


def exported_record(records: Sequence[OffsetRecord], connector: str, where: str) -> OffsetRecord:
    """The one stored offset of mongocdc connector ``connector`` (its ``records`` in the store ``where``) that
    ``offsets export`` hands over: a ``UsageError`` (exit 2) without one, a ``ConfigError`` (exit 3) with one per
    shard, which no Debezium offset can hold."""
    if not records:
        raise UsageError(
            f"connector {connector!r} has no stored offsets in {where}: nothing to export",
            hint="pass --name (and --offsets) of the mongocdc connector; `mongocdc offsets show --all` lists them",
        )
    if len(records) > 1:
        raise ConfigError(
            f"connector {connector!r} streams each shard's replica set on its own "
            f"({', '.join(r.partition for r in records)}), but Debezium 3.x streams the whole cluster through "
            "mongos from one resume token: there is no Debezium offset for several shard positions",
            hint="switch mongocdc to mongodb.connection.mode=sharded first (a new position: `offsets reset`, "
            "then stream), or keep Debezium's own offsets",
        )
    return records[0]


def debezium_record(offset: Mapping[str, Any], debezium: str, prefix: str) -> DebeziumRecord:
    """mongocdc's stored ``offset`` for connector ``debezium`` with ``topic.prefix`` ``prefix``, with the key and
    value bytes a Connect worker writes for it."""
    result = to_debezium(offset)
    partition = debezium_partition(prefix)
    key = connect_key(debezium, partition)
    return DebeziumRecord(partition, key, connect_value(result.offset), result.offset, result.notes)
