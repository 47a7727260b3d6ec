"""Builds cross-cluster replication (``mongocdc replicate``) and failover (``mongocdc failover translate``) from
``Settings``: ``mongocdc/replication/`` over the ``src.kafka.*`` and ``dest.kafka.*`` clusters.

Kept apart from ``wiring.py`` (whose ``connect.*`` retries and request timeouts it uses): nothing here reads MongoDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongocdc.wiring import backoff, request_timeout_s

if TYPE_CHECKING:
    from mongocdc.config import Settings
    from mongocdc.replication.clients import Cluster
    from mongocdc.replication.failover import Translator
    from mongocdc.replication.mirror import Replicator


def replication_cluster(settings: Settings, role: str) -> Cluster:
    """The ``source`` (``src.kafka.*``) or ``target`` (``dest.kafka.*``) cluster of ``replicate``/``failover``."""
    from mongocdc.replication.clients import Cluster

    timeout_s = request_timeout_s(settings)
    if role == "source":
        settings.require("src.kafka.bootstrap.servers")
        return Cluster(settings.src_kafka_client, role="source", prefix="src.kafka.", timeout_s=timeout_s)
    settings.require("dest.kafka.bootstrap.servers")
    return Cluster(settings.dest_kafka_client, role="target", prefix="dest.kafka.", timeout_s=timeout_s)


def replicator(settings: Settings, *, shutdown_timeout_s: float = 30.0) -> Replicator:
    """A ``Replicator`` from ``settings`` (not started: ``run`` connects, with the ``connect.*`` retries)."""
    from mongocdc.replication.mirror import Replicator, ReplicatorOptions

    settings.require("src.kafka.bootstrap.servers", "dest.kafka.bootstrap.servers")
    options = ReplicatorOptions(
        name=settings.name,
        group_id=settings.src_consumer_group_id or settings.name,
        topics=settings.topics,
        topics_exclude=settings.topics_exclude,
        groups=settings.groups,
        groups_exclude=settings.groups_exclude,
        rename_format=settings.topic_rename_format,
        provenance=settings.provenance_header_enable,
        syncs_topic=settings.offset_syncs_topic,
        checkpoints_topic=settings.checkpoints_topic,
        source_alias=settings.source_cluster_alias,
        target_alias=settings.target_cluster_alias,
        flush_interval_s=settings.replication_flush_interval_ms / 1000,
        checkpoint_interval_s=float(settings.emit_checkpoints_interval_seconds),
        refresh_interval_s=float(settings.refresh_topics_interval_seconds),
        replication_factor=settings.replication_factor,
        batch_size=settings.max_batch_size,
        poll_timeout_s=min(settings.poll_interval_ms, 1000) / 1000,
        shutdown_timeout_s=shutdown_timeout_s,
        backoff=backoff(settings),
    )
    return Replicator(replication_cluster(settings, "source"), replication_cluster(settings, "target"), options)


def failover_translator(settings: Settings) -> Translator:
    """A ``Translator`` for ``failover translate``: the target is required, the source may be absent or down."""
    from mongocdc.replication.failover import TranslateOptions, Translator

    options = TranslateOptions(
        syncs_topic=settings.offset_syncs_topic,
        checkpoints_topic=settings.checkpoints_topic,
        rename_format=settings.topic_rename_format,
        source_alias=settings.source_cluster_alias,
        topics=settings.topics,
        topics_exclude=settings.topics_exclude,
        source_timeout_s=request_timeout_s(settings),
        backoff=backoff(settings),
    )
    target = replication_cluster(settings, "target")
    source = replication_cluster(settings, "source") if settings.src_kafka_bootstrap_servers else None
    return Translator(source, target, options)
