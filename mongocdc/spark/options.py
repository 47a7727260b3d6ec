"""What one run of the Spark job does (``JobOptions``), its argument form and the table layout.

Plain Python: ``spark run`` builds ``JobOptions`` from its flags and the config file
(``from_cli``, which checks every flag: ``UsageError``, exit 2), the launcher turns them into the
job's arguments (``to_args``) for ``spark-submit`` or an in-process run, and the job parses them
back (``from_args``).

Table layout under the warehouse (a local path or any Hadoop filesystem URI)::

    <warehouse>/<db>/<collection>                latest document per key (Delta, or versioned Parquet)
    <warehouse>/_changelog/<db>/<collection>     every change event, append-only (with --changelog)
    <warehouse>/_mongocdc/deleted/<db>/<coll>    keys deleted and the position of the delete (internal;
                                                 Parquet files of a Delta table's markers)
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from mongocdc.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from mongocdc.config import Settings

log = logging.getLogger("mongocdc.spark")


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

DEFAULT_CHECKPOINT = "_mongocdc/checkpoint"
"""Where under the warehouse the streaming query keeps its checkpoint unless ``--checkpoint`` says."""


def default_checkpoint(warehouse: str) -> str:
    return f"{warehouse.rstrip('/')}/{DEFAULT_CHECKPOINT}"


JOB_ARG: Final = "mongocdc.job_arg"
"""The key of a ``JobOptions`` field's ``JobArg`` in its metadata."""


@dataclass(frozen=True)
class JobArg:
    """How one ``JobOptions`` field reaches the job: its command-line argument (``to_args``, ``from_args``)."""

    flag: str
    shape: Literal["value", "switch", "each", "pairs"] = "value"
    """``value``: ``FLAG TEXT``; ``switch``: ``FLAG`` when true; ``each``: ``FLAG ITEM`` per item of a tuple;
    ``pairs``: ``FLAG KEY=VALUE`` per item of a mapping, by key."""
    parse: Callable[[str], Any] = str
    """A ``value``'s text back to the value (written with ``str``)."""
    required: bool = False
    choices: tuple[str, ...] | None = None
    none: str | None = None
    """The text that stands for ``None``; without it, a ``None`` value is not written (the field's default)."""
    from_flag: bool = False
    """``spark run``'s option of the field's name (``run_flags``) gives the value as it is (``from_cli``)."""

    def write(self, value: Any) -> list[str]:
        if self.shape == "switch":
            return [self.flag] if value else []
        if self.shape == "each":
            return [word for item in value for word in (self.flag, item)]
        if self.shape == "pairs":
            return [word for key, item in sorted(value.items()) for word in (self.flag, f"{key}={item}")]
        if value is None:
            return [] if self.none is None else [self.flag, self.none]
        return [self.flag, str(value)]

    def declare(self, parser: argparse.ArgumentParser, dest: str) -> None:
        """Add the argument to ``parser``; left out, it is not in the namespace (the field keeps its default)."""
        common: dict[str, Any] = {"dest": dest, "default": argparse.SUPPRESS}
        if self.shape == "switch":
            parser.add_argument(self.flag, action="store_true", **common)
        elif self.shape in ("each", "pairs"):
            metavar = self.flag.removeprefix("--").replace("-", "_").upper()
            parser.add_argument(self.flag, action="append", metavar=metavar, **common)
        elif self.choices is not None:
            parser.add_argument(self.flag, choices=self.choices, required=self.required, **common)
        else:
            convert = self.parse if self.none is None else self.value_of  # argparse names the type in its errors
            parser.add_argument(self.flag, type=convert, required=self.required, **common)

    def value_of(self, text: str) -> Any:
        return None if self.none is not None and text == self.none else self.parse(text)

    def read(self, parsed: Any) -> Any:
        """The field's value from what ``declare``'s argument parsed."""
        if self.shape == "each":
            return tuple(parsed)
        if self.shape == "pairs":
            return dict(item.split("=", 1) for item in parsed)
        return self.value_of(parsed) if self.choices is not None else parsed


def arg(flag: str, **how: Any) -> dict[str, JobArg]:
    """A ``JobOptions`` field's metadata: its argument ``flag`` and ``JobArg``'s other settings."""
    return {JOB_ARG: JobArg(flag, **how)}


@dataclass(frozen=True)
class JobOptions:
    """Everything the job needs; ``table_format`` is ``delta`` or ``parquet`` once the launcher resolved it.

    Each field declares its argument for the job (``arg``: ``to_args`` writes them in this order,
    ``from_args`` reads them back) and whether ``spark run``'s option of its name gives it as it is.
    """

    bootstrap_servers: str = field(metadata=arg("--bootstrap-servers", required=True))
    warehouse: str = field(metadata=arg("--warehouse", required=True, from_flag=True))
    checkpoint: str = field(metadata=arg("--checkpoint", required=True))
    topics: tuple[str, ...] = field(default=(), metadata=arg("--topic", shape="each"))
    topic_pattern: str | None = field(default=None, metadata=arg("--topic-pattern"))
    skip_topics: str | None = field(default=None, metadata=arg("--skip-topics"))
    """Regular expression of whole topic names that are read but never applied (transaction, heartbeat topics)."""
    kafka_options: Mapping[str, str] = field(default_factory=dict, metadata=arg("--kafka-option", shape="pairs"))
    """Java Kafka client properties (without the ``kafka.`` prefix Spark's source wants)."""
    table_format: TableFormat = field(
        default=TableFormat.parquet,
        metadata=arg(
            "--format", parse=TableFormat, required=True, choices=(TableFormat.delta.value, TableFormat.parquet.value)
        ),
    )
    changelog: bool = field(default=False, metadata=arg("--changelog", shape="switch", from_flag=True))
    once: bool = field(default=False, metadata=arg("--once", shape="switch", from_flag=True))
    trigger_interval: str | None = field(default=None, metadata=arg("--trigger-interval", from_flag=True))
    columns: str | None = field(default=None, metadata=arg("--columns"))
    """Schema of the document: Spark DDL (``name STRING, qty INT``) or a Spark JSON schema; ``None`` keeps JSON."""
    starting_offsets: StartingOffsets = field(
        default=StartingOffsets.earliest,
        metadata=arg(
            "--starting-offsets", parse=StartingOffsets, choices=tuple(s.value for s in StartingOffsets), from_flag=True
        ),
    )
    max_offsets_per_trigger: int | None = field(
        default=None, metadata=arg("--max-offsets-per-trigger", parse=int, from_flag=True)
    )
    min_partitions: int | None = field(default=None, metadata=arg("--min-partitions", parse=int, from_flag=True))
    """Spark tasks a micro-batch is read in at least (Kafka's ``minPartitions``; large Kafka partitions
    are split); ``None``: ``job.MIN_PARTITIONS_PER_CORE`` per core of the job; 0: one per Kafka partition."""
    query_name: str = field(default="mongocdc", metadata=arg("--query-name", from_flag=True))
    delete_retention_ms: int | None = field(
        default=DEFAULT_DELETE_RETENTION_MS, metadata=arg("--delete-retention-ms", parse=int, none="forever")
    )
    """How long a delete marker is kept at least, in source time (``None``: as long as the table)."""

    @classmethod
    def from_cli(cls, settings: Callable[[], Settings], flags: Mapping[str, Any]) -> JobOptions:
        """The options of ``spark run``'s flags (``flags``: their values by ``run_flags.Flag.param``) and the
        configuration.

        Every flag is checked first (``UsageError``, exit 2, naming the flag); ``settings`` is read
        after, for ``topic.prefix`` (the default topics and the transaction and heartbeat topics
        skipped) and the ``kafka.*`` client settings, translated to Java client properties (the
        ``--kafka-option`` ones win; one without a Java equivalent is warned about).
        """
        topic_list = split_list(flags["topics"] or ())
        topic_pattern: str | None = flags["topic_pattern"]
        _check_flags(flags, topic_list)
        try:
            retention_ms = parse_retention(flags["delete_retention"])
        except ValueError as exc:
            raise UsageError(
                f"--delete-retention {exc}",
                hint="keep markers longer than any replay can reach back (the topics' retention), e.g. 7d",
            ) from exc
        java_options = parse_pairs(flags["kafka_option"] or (), "--kafka-option")
        schema = read_columns(flags["columns"], flags["schema_file"])

        config = settings()
        refuse_transformed_records(config)
        prefix = config.topic_prefix
        if not topic_list and topic_pattern is None:
            if prefix is None:
                raise UsageError(
                    "no topics to read: give --topics or --topic-pattern, or set topic.prefix",
                    hint="e.g. --topic-pattern 'dbserver1\\..*', or the connector's config file with --config",
                )
            topic_pattern = re.escape(prefix) + r"\..*"
        mapped, unmapped = java_kafka_options(config.kafka_client)
        if unmapped:
            log.warning(
                "kafka.%s: no Java client equivalent known; the Spark job connects without %s (pass Java client "
                "properties with --kafka-option)",
                ", kafka.".join(unmapped),
                "it" if len(unmapped) == 1 else "them",
            )
        skip_topics = skip_topics_regex(prefix, config.topic_transaction, config.topic_heartbeat_prefix)
        if config.topic_heartbeat_name:
            skip_topics += f"|{re.escape(config.topic_heartbeat_name)}"
        as_given = {f.name: flags[f.name] for f in fields(cls) if f.metadata[JOB_ARG].from_flag}
        return cls(
            **as_given,
            bootstrap_servers=config.kafka_bootstrap_servers,
            checkpoint=flags["checkpoint"] or default_checkpoint(flags["warehouse"]),
            topics=topic_list,
            topic_pattern=topic_pattern,
            skip_topics=skip_topics,
            kafka_options={**mapped, **java_options},
            columns=schema,
            delete_retention_ms=retention_ms,
        )

    def to_args(self) -> list[str]:
        """The job's command-line arguments (what ``from_args`` reads back)."""
        return [word for f in fields(self) for word in f.metadata[JOB_ARG].write(getattr(self, f.name))]

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> JobOptions:
        parser = argparse.ArgumentParser(prog="mongocdc-spark-job", description="mongocdc's Spark job")
        declared = {f.name: f.metadata[JOB_ARG] for f in fields(cls)}
        for name, job_arg in declared.items():
            job_arg.declare(parser, name)
        parsed = vars(parser.parse_args(list(argv)))
        return cls(**{name: declared[name].read(value) for name, value in parsed.items()})


def _check_flags(flags: Mapping[str, Any], topic_list: Sequence[str]) -> None:
    """The checks of ``spark run``'s flags that need no configuration: combinations, the topic pattern."""
    topic_pattern = flags["topic_pattern"]
    if topic_list and topic_pattern:
        raise UsageError("--topics and --topic-pattern both select topics", hint="use one of them")
    if flags["once"] and flags["trigger_interval"]:
        raise UsageError(
            "--once and --trigger-interval exclude each other",
            hint="--once reads what is there and stops; --trigger-interval paces a job that keeps running",
        )
    if topic_pattern is not None:
        try:
            re.compile(topic_pattern)
        except re.error as exc:
            raise UsageError(
                f"--topic-pattern {topic_pattern!r} is not a regular expression: {exc}",
                hint="it is matched against whole topic names, e.g. 'dbserver1\\..*'",
            ) from exc


def split_list(values: Sequence[str]) -> tuple[str, ...]:
    """Repeated and comma-separated values as one list (``--topics a,b --topics c``)."""
    return tuple(item.strip() for text in values for item in text.split(",") if item.strip())


def parse_pairs(values: Sequence[str], option: str) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` values of ``option``; ``UsageError`` for one without ``=``."""
    result: dict[str, str] = {}
    for text in values:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise UsageError(f"{option} {text!r} is not KEY=VALUE", hint=f"write it as {option} key=value")
        result[key.strip()] = value
    return result


def read_columns(columns: str | None, schema_file: Path | None) -> str | None:
    """The document's schema from ``--columns`` or ``--schema-file`` (one of them), ``None`` for neither."""
    if columns and schema_file:
        raise UsageError("--columns and --schema-file both give the schema", hint="use one of them")
    if schema_file is not None:
        try:
            text = schema_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--schema-file {schema_file}: {exc.strerror}", hint="give a readable file") from exc
        if not text:
            raise UsageError(f"--schema-file {schema_file} is empty", hint="write Spark DDL or a Spark JSON schema")
        return checked_schema(text, f"--schema-file {schema_file}")
    return checked_schema(columns_ddl(columns), f"--columns {columns!r}") if columns else None


def checked_schema(text: str, given_as: str) -> str:
    """``text`` when Spark can read it as the document's schema; else ``UsageError`` saying what is wrong."""
    from mongocdc.spark.schema_text import TYPES_HINT, SchemaTextError, check_schema

    try:
        check_schema(text)
    except SchemaTextError as exc:
        raise UsageError(
            f"{given_as} is not a schema the job can use: {exc}",
            hint=f"write name:type pairs (name:string,qty:bigint) or Spark DDL (name STRING, qty BIGINT); {TYPES_HINT}",
        ) from exc
    return text


_SHORT_FIELD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([A-Za-z][A-Za-z0-9_<>,() ]*)\s*$")


def columns_ddl(columns: str) -> str:
    """``name:string,qty:int`` as Spark DDL; DDL itself (``name STRING, qty INT``) passes unchanged."""
    fields = [f for f in columns.split(",") if f.strip()]
    if fields and all(_SHORT_FIELD.match(f) for f in fields):
        return ", ".join(f"`{m.group(1)}` {m.group(2).strip()}" for f in fields if (m := _SHORT_FIELD.match(f)))
    return columns


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


def refuse_transformed_records(config: Settings) -> None:
    """The job reads Debezium's change event envelopes as JsonConverter writes them (with or without schemas):
    a connector whose records go through transforms or other converters writes something else (flattened
    documents, CloudEvents, other topics), which the job would misread; refused, exit 3."""
    records = config.record_format
    if not records.uses_pipeline:
        return
    if not records.transforms and all(
        records.config[f"{side}.converter"] == "org.apache.kafka.connect.json.JsonConverter"
        for side in ("key", "value")
    ):
        return  # JsonConverter on both sides, keys and values with different schemas.enable: the job reads either
    raise ConfigError(
        f"the Spark job reads Debezium's change event envelopes, but this connector writes its records through "
        f"other converters or transforms ({records.describe()})",
        hint="the job needs the envelope (before/after, op, source.ts_ms and source.ord, the key's id) that "
        "ExtractNewDocumentState and other transforms remove: run it on the topics of a connector without "
        "transforms and with JsonConverter (schemas.enable true or false), or give a configuration without them",
    )
