"""The one recipe from ``Settings`` to a connector's tasks: the deployment, its source partitions, each one's task.

``connector_plan`` connects to the seed (``mongodb.connection.string``), discovers the deployment, refuses one
without change streams and, with ``mongodb.connection.mode=replica_set``, reads the shards behind it: the
``ConnectorPlan`` it returns knows the source partitions (one per shard replica set, else the replica set or
``cluster``). ``ConnectorPlan.open_source``/``seed_source``/``shard_source`` give a partition its MongoDB client,
and ``ConnectorPlan.task`` builds the partition's ``ConnectorTask`` over it with its sink and offset store (a
transactional pair of its own under ``exactly.once.support``).

Three users, one recipe: ``wiring.connector`` (every task in this process), ``wiring_fleet.worker`` (the tasks a
worker group gives this process, each built when the worker takes it) and the offsets commands, which only ask
for the partitions (``source_partitions``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from mongocdc import wiring

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.engine.connector import ConnectorTask
    from mongocdc.engine.metrics import Metrics
    from mongocdc.engine.snapshot import ProgressCallback
    from mongocdc.engine.streaming import StreamStats
    from mongocdc.events.envelope import EnvelopeCodec
    from mongocdc.offsets.base import OffsetStore
    from mongocdc.sinks.kafka.producer import KafkaSink
    from mongocdc.sources.mongo.client import Client, PrimaryWatch
    from mongocdc.sources.mongo.topology import Shard, Topology


@dataclass(frozen=True, slots=True)
class PartitionSource:
    """What a source partition's task reads from: its MongoDB client, the replica set it streams (``None``
    through mongos) and the watch of that client's elections."""

    partition: str
    client: Client
    rs: str | None
    watch: PrimaryWatch


@dataclass(frozen=True, slots=True)
class TaskCommon:
    """What every task of a connector shares: the records' codec (each task writes its own ``taskId`` header),
    the metrics, whether delivery is exactly once (``wiring.exactly_once``, decided once) and the callbacks of the
    running command."""

    envelope: EnvelopeCodec
    metrics: Metrics
    exactly_once: bool
    on_status: Callable[[StreamStats], None] | None = None
    on_progress: ProgressCallback | None = None
    estimate_after_s: float = 5.0


@dataclass(frozen=True, slots=True, eq=False)
class ConnectorPlan:
    """A connector's deployment as discovered at start, with its source partitions; closing it closes the seed.

    ``shards``: the shard replica sets captured one task each (``mongodb.connection.mode=replica_set`` on a
    sharded cluster), empty when the connector has one partition, ``topology.partition``.
    """

    settings: Settings
    seed: Client
    seed_watch: PrimaryWatch
    topology: Topology
    shards: tuple[Shard, ...]

    @property
    def per_shard(self) -> bool:
        """Whether each shard replica set is a source partition (and shards that join or leave change them)."""
        return bool(self.shards)

    @property
    def partitions(self) -> list[str]:
        """The source partitions at start, sorted: the shard replica sets, or the one of the deployment."""
        if self.per_shard:
            return sorted(str(shard.replica_set) for shard in self.shards)
        return [self.topology.partition]

    def require_start_topics(self, sink: KafkaSink) -> None:
        """Have ``sink`` check the topics known at start (``wiring.start_topics``); with transforms, which may
        rename them, each topic is checked at its first record instead."""
        if not self.settings.record_format.transforms:
            sink.require_topics(wiring.start_topics(self.settings, self.seed))

    def seed_source(self) -> PartitionSource:
        """The deployment's one partition, read through the seed's own client."""
        return PartitionSource(self.topology.partition, self.seed, self.topology.replica_set, self.seed_watch)

    def shard_source(self, shard: Shard, resources: contextlib.ExitStack) -> PartitionSource:
        """A client of its own for ``shard``'s replica set (``resources`` closes it)."""
        from mongocdc.sources.mongo.client import PrimaryWatch, connect
        from mongocdc.sources.mongo.shards import shard_connection_string

        assert shard.replica_set is not None and self.settings.mongodb_connection_string is not None
        watch = PrimaryWatch()
        client = connect(
            shard_connection_string(self.settings.mongodb_connection_string, shard),
            wiring.backoff(self.settings),
            client_options=wiring.client_options(self.settings),
            event_listeners=[watch],
        )
        resources.callback(client.close)
        return PartitionSource(shard.replica_set, client, shard.replica_set, watch)

    def open_source(self, partition: str, resources: contextlib.ExitStack) -> PartitionSource | None:
        """A client of its own for ``partition`` (``resources`` closes it): its shard's, looked up in the shard
        list as it is now (``None`` when the shard is not in it), or the deployment's."""
        from mongocdc.sources.mongo.client import PrimaryWatch
        from mongocdc.sources.mongo.shards import replica_set_shards

        if self.per_shard:
            shard = next((s for s in replica_set_shards(self.seed) if str(s.replica_set) == partition), None)
            return None if shard is None else self.shard_source(shard, resources)
        watch = PrimaryWatch()
        client = wiring.mongo_client(self.settings, listeners=[watch])
        resources.callback(client.close)
        return PartitionSource(partition, client, self.topology.replica_set, watch)

    def task(
        self,
        source: PartitionSource,
        index: int,
        common: TaskCommon,
        *,
        store: OffsetStore,
        stop: threading.Event,
        resources: contextlib.ExitStack,
        sink: KafkaSink | None = None,
    ) -> ConnectorTask:
        """The task of ``source``'s partition, task ``index`` of the connector (its records' ``taskId``).

        Its sink and store: with exactly-once delivery its own transactional sink, registered now (fencing an older
        owner of the task), and its offsets committed in that sink's transactions over ``store``; else ``sink``, or
        a sink of its own when ``None``, and ``store``. What it opens here ``resources`` closes.
        """
        task_store = store
        if common.exactly_once:
            sink, task_store = wiring.exactly_once_task(self.settings, store, source.partition, common.metrics)
            resources.callback(sink.close)
        elif sink is None:
            sink = wiring.kafka_sink(self.settings)
            resources.callback(sink.close)
        return wiring.connector_task(
            self.settings,
            source.client,
            source.rs,
            source.partition,
            source.watch,
            sink=sink,
            store=task_store,
            envelope=common.envelope.for_task(index),  # the taskId header
            stop=stop,
            on_status=common.on_status,
            on_progress=common.on_progress,
            metrics=common.metrics,
            estimate_after_s=common.estimate_after_s,
        )

    def close(self) -> None:
        self.seed.close()

    def __enter__(self) -> ConnectorPlan:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def connector_plan(settings: Settings) -> ConnectorPlan:
    """Connect to the seed (with the ``connect.*`` retries), discover the deployment, refuse one without change
    streams (a standalone server, exit 3) and, with ``mongodb.connection.mode=replica_set``, read the shards behind
    it. The caller closes the plan (the seed); on an error here the seed is closed already."""
    from mongocdc.sources.mongo.client import PrimaryWatch
    from mongocdc.sources.mongo.shards import shards_behind
    from mongocdc.sources.mongo.topology import discover

    seed_watch = PrimaryWatch()
    seed = wiring.mongo_client(settings, listeners=[seed_watch])
    try:
        topology = discover(seed)
        topology.require_change_streams()
        shards = shards_behind(seed) if settings.mongodb_connection_mode == "replica_set" else []
    except BaseException:
        seed.close()
        raise
    return ConnectorPlan(settings, seed, seed_watch, topology, tuple(shards))


def source_partitions(settings: Settings) -> list[str]:
    """The source partitions mongocdc streams for ``settings``, asked of MongoDB (``ConnectorPlan.partitions``)."""
    with connector_plan(settings) as plan:
        return plan.partitions
