"""What one run of the Spark job does (``JobOptions``), its argument form and the table layout.

Plain Python: the command line builds ``JobOptions`` from its flags and the config file,
the launcher turns them into the job's arguments (``to_args``) for ``spark-submit`` or an
in-process run, and the job parses them back (``from_args``).

Table layout under the warehouse (a local path or any Hadoop filesystem URI)::

    <warehouse>/<db>/<collection>                latest document per key (Delta, or versioned Parquet)
    <warehouse>/_changelog/<db>/<collection>     every change event, append-only (with --changelog)
    <warehouse>/_mongocdc/deleted/<db>/<coll>    keys deleted and the position of the delete (internal;
                                                 Parquet files of a Delta table's markers)
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class TableFormat(StrEnum):
    auto = "auto"
    delta = "delta"
    parquet = "parquet"


class StartingOffsets(StrEnum):
    earliest = "earliest"
    latest = "latest"


DEFAULT_DELETE_RETENTION = "7d"
_RETENTION = re.compile(r"(\d+)(ms|s|m|h|d)")
_RETENTION_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_retention(text: str) -> int | None:
    """A delete-marker retention (``7d``, ``36h``, ``90m``, ``30s``, ``500ms``) in ms; ``forever``: ``None``.

    Raises ``ValueError`` with the accepted forms for anything else.
    """
    value = text.strip().lower()
    if value == "forever":
        return None
    match = _RETENTION.fullmatch(value)
    if match is None:
        raise ValueError(f"{text!r} is not a duration: use a number and a unit (ms, s, m, h, d), e.g. 7d, or forever")
    return int(match.group(1)) * _RETENTION_UNIT_MS[match.group(2)]


DEFAULT_DELETE_RETENTION_MS = parse_retention(DEFAULT_DELETE_RETENTION)


@dataclass(frozen=True)
class JobOptions:
    """Everything the job needs; ``table_format`` is ``delta`` or ``parquet`` once the launcher resolved it."""

    bootstrap_servers: str
    warehouse: str
    checkpoint: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    skip_topics: str | None = None
    """Regular expression of whole topic names that are read but never applied (transaction, heartbeat topics)."""
    kafka_options: Mapping[str, str] = field(default_factory=dict)
    """Java Kafka client properties (without the ``kafka.`` prefix Spark's source wants)."""
    table_format: TableFormat = TableFormat.parquet
    changelog: bool = False
    once: bool = False
    trigger_interval: str | None = None
    columns: str | None = None
    """Schema of the document: Spark DDL (``name STRING, qty INT``) or a Spark JSON schema; ``None`` keeps JSON."""
    starting_offsets: StartingOffsets = StartingOffsets.earliest
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    """Spark tasks a micro-batch is read in at least (Kafka's ``minPartitions``; large Kafka partitions
    are split); ``None``: ``job.MIN_PARTITIONS_PER_CORE`` per core of the job; 0: one per Kafka partition."""
    query_name: str = "mongocdc"
    delete_retention_ms: int | None = DEFAULT_DELETE_RETENTION_MS
    """How long a delete marker is kept at least, in source time (``None``: as long as the table)."""

    def to_args(self) -> list[str]:
        """The job's command-line arguments (what ``from_args`` reads back)."""
        args = ["--bootstrap-servers", self.bootstrap_servers, "--warehouse", self.warehouse]
        args += ["--checkpoint", self.checkpoint]
        for topic in self.topics:
            args += ["--topic", topic]
        if self.topic_pattern is not None:
            args += ["--topic-pattern", self.topic_pattern]
        if self.skip_topics is not None:
            args += ["--skip-topics", self.skip_topics]
        for key, value in sorted(self.kafka_options.items()):
            args += ["--kafka-option", f"{key}={value}"]
        args += ["--format", self.table_format.value]
        if self.changelog:
            args.append("--changelog")
        if self.once:
            args.append("--once")
        if self.trigger_interval is not None:
            args += ["--trigger-interval", self.trigger_interval]
        if self.columns is not None:
            args += ["--columns", self.columns]
        args += ["--starting-offsets", self.starting_offsets.value]
        if self.max_offsets_per_trigger is not None:
            args += ["--max-offsets-per-trigger", str(self.max_offsets_per_trigger)]
        if self.min_partitions is not None:
            args += ["--min-partitions", str(self.min_partitions)]
        args += ["--query-name", self.query_name]
        retention = "forever" if self.delete_retention_ms is None else str(self.delete_retention_ms)
        args += ["--delete-retention-ms", retention]
        return args

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> JobOptions:
        parser = argparse.ArgumentParser(prog="mongocdc-spark-job", description="mongocdc's Spark job")
        parser.add_argument("--bootstrap-servers", required=True)
        parser.add_argument("--warehouse", required=True)
        parser.add_argument("--checkpoint", required=True)
        parser.add_argument("--topic", action="append", default=[])
        parser.add_argument("--topic-pattern")
        parser.add_argument("--skip-topics")
        parser.add_argument("--kafka-option", action="append", default=[])
        parser.add_argument("--format", choices=[TableFormat.delta.value, TableFormat.parquet.value], required=True)
        parser.add_argument("--changelog", action="store_true")
        parser.add_argument("--once", action="store_true")
        parser.add_argument("--trigger-interval")
        parser.add_argument("--columns")
        parser.add_argument("--starting-offsets", choices=[s.value for s in StartingOffsets], default="earliest")
        parser.add_argument("--max-offsets-per-trigger", type=int)
        parser.add_argument("--min-partitions", type=int)
        parser.add_argument("--query-name", default="mongocdc")
        parser.add_argument("--delete-retention-ms", default=str(DEFAULT_DELETE_RETENTION_MS))
        ns = parser.parse_args(list(argv))
        kafka_options = dict(item.split("=", 1) for item in ns.kafka_option)
        return cls(
            bootstrap_servers=ns.bootstrap_servers,
            warehouse=ns.warehouse,
            checkpoint=ns.checkpoint,
            topics=tuple(ns.topic),
            topic_pattern=ns.topic_pattern,
            skip_topics=ns.skip_topics,
            kafka_options=kafka_options,
            table_format=TableFormat(ns.format),
            changelog=ns.changelog,
            once=ns.once,
            trigger_interval=ns.trigger_interval,
            columns=ns.columns,
            starting_offsets=StartingOffsets(ns.starting_offsets),
            max_offsets_per_trigger=ns.max_offsets_per_trigger,
            min_partitions=ns.min_partitions,
            query_name=ns.query_name,
            delete_retention_ms=None if ns.delete_retention_ms == "forever" else int(ns.delete_retention_ms),
        )


def skip_topics_regex(topic_prefix: str | None, transaction_suffix: str, heartbeat_prefix: str) -> str:
    """Topics the job reads past: ``<prefix>.<topic.transaction>`` and every ``<topic.heartbeat.prefix>.*``."""
    parts = [re.escape(heartbeat_prefix) + r"\..*"]
    if topic_prefix:
        parts.append(re.escape(f"{topic_prefix}.{transaction_suffix}"))
    return "|".join(parts)


# --- table layout ------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def path_segment(name: str) -> str:
    """A database or collection name as one path segment (anything but ``[A-Za-z0-9_.-]`` as ``%XX``)."""
    encoded = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), name)
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts])


def table_path(warehouse: str, db: str, collection: str) -> str:
    return _join(warehouse, path_segment(db), path_segment(collection))


def changelog_path(warehouse: str, db: str, collection: str) -> str:
    return _join(warehouse, "_changelog", path_segment(db), path_segment(collection))


def deleted_path(warehouse: str, db: str, collection: str) -> str:
    return _join(warehouse, "_mongocdc", "deleted", path_segment(db), path_segment(collection))


# --- Kafka client properties ---------------------------------------------------------------

# librdkafka properties that mean the same to the Java client under the same name.
_SAME_NAME = frozenset(
    {
        "bootstrap.servers",
        "security.protocol",
        "client.id",
        "ssl.endpoint.identification.algorithm",
        "session.timeout.ms",
        "request.timeout.ms",
        "metadata.max.age.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "fetch.max.bytes",
        "receive.message.max.bytes",
    }
)

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_kafka_options(librdkafka: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The Java client properties equivalent to mongocdc's ``kafka.*`` (librdkafka) settings.

    Returns the properties (``bootstrap.servers`` excluded: the job takes it on its own) and the
    names that have no Java equivalent here (pass those with ``--kafka-option``).
    """
    options: dict[str, str] = {}
    unmapped: list[str] = []
    mechanism = librdkafka.get("sasl.mechanism") or librdkafka.get("sasl.mechanisms")
    for key, value in librdkafka.items():
        if key == "bootstrap.servers":
            continue
        if key in _SAME_NAME:
            options[key] = value
        elif key in ("sasl.mechanism", "sasl.mechanisms"):
            options["sasl.mechanism"] = value
        elif key == "ssl.ca.location":
            options["ssl.truststore.type"] = "PEM"
            options["ssl.truststore.location"] = value
        elif key in ("sasl.username", "sasl.password"):
            continue
        else:
            unmapped.append(key)
    username, password = librdkafka.get("sasl.username"), librdkafka.get("sasl.password")
    if username is not None and password is not None:
        module = _LOGIN_MODULES.get((mechanism or "PLAIN").upper())
        if module is None:
            unmapped += ["sasl.username", "sasl.password"]
        else:
            options["sasl.jaas.config"] = (
                f"{module} required username={_jaas_quote(username)} password={_jaas_quote(password)};"
            )
    return options, sorted(unmapped)
