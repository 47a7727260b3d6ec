"""The options of ``mongocdc spark run``, declared once: option names, type, default, help.

Plain data (no Typer here: ``spark/`` does not import the CLI's libraries): ``cli/commands_spark`` turns
each row into the command's Typer option, in this order, and hands the command their values as one
mapping by ``param``. ``JobOptions.from_cli`` reads the job's (a field declared ``from_flag`` takes the
value of the row of its name as it is), ``launcher.LaunchPlan.from_cli`` the launch's; the job's own
argument form (``JobOptions.to_args``/``from_args``) is declared on ``JobOptions``' fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mongocdc.spark.options import DEFAULT_CHECKPOINT, DEFAULT_DELETE_RETENTION, StartingOffsets, TableFormat


@dataclass(frozen=True)
class Flag:
    """One option of ``spark run``."""

    param: str
    """The name its value goes by (the command's parameter)."""
    decls: tuple[str, ...]
    """Its names as click takes them (``--deletion-vectors/--no-deletion-vectors`` for an on/off pair)."""
    kind: Any
    """The value's type: ``str``, ``int``, ``bool`` (a switch), ``Path``, ``list[str]`` (repeatable) or an enum."""
    help: str
    default: Any = None
    """``None``: the option may be left out (its value is then ``None``), unless ``required``."""
    required: bool = False
    metavar: str | None = None
    min: int | None = None
    show_default: bool = True

    @property
    def optional(self) -> bool:
        """Its value may be ``None`` (left out, no default)."""
        return self.default is None and not self.required


WAREHOUSE: Final = Flag(
    "warehouse",
    ("--warehouse",),
    str,
    "Where the tables go: a local directory or any Hadoop filesystem URI (hdfs://, s3a://, abfss://…); "
    "one table per collection at <warehouse>/<db>/<collection>.",
    required=True,
    metavar="PATH",
)
CHECKPOINT: Final = Flag(
    "checkpoint",
    ("--checkpoint",),
    str,
    "Checkpoint directory of the streaming query: a restarted job continues after the last applied batch. "
    f"Default: <warehouse>/{DEFAULT_CHECKPOINT}.",
    metavar="PATH",
    show_default=False,
)
"""Also ``spark status``'s."""

RUN_FLAGS: Final[tuple[Flag, ...]] = (
    WAREHOUSE,
    Flag(
        "topics",
        ("--topics",),
        list[str],
        "CDC topics to read (repeat, or comma-separate). Default: every <topic.prefix>.* topic.",
        metavar="TOPIC[,TOPIC…]",
        show_default=False,
    ),
    Flag(
        "topic_pattern",
        ("--topic-pattern",),
        str,
        "Read every topic whose whole name matches, now or later (e.g. 'dbserver1\\..*').",
        metavar="REGEX",
        show_default=False,
    ),
    CHECKPOINT,
    Flag(
        "once",
        ("--once",),
        bool,
        "Apply every record there is now, then stop (a batch run: availableNow).",
        default=False,
    ),
    Flag(
        "trigger_interval",
        ("--trigger-interval",),
        str,
        "Start a micro-batch at most this often, e.g. '30 seconds'. Default: as soon as the last ends.",
        metavar="DURATION",
        show_default=False,
    ),
    Flag(
        "table_format",
        ("--format",),
        TableFormat,
        "Table format: delta (Delta Lake, MERGE), parquet (versioned directories), or auto (delta when "
        "delta-spark is installed).",
        default=TableFormat.auto,
    ),
    Flag(
        "changelog",
        ("--changelog",),
        bool,
        "Also append every change event to <warehouse>/_changelog/<db>/<collection>.",
        default=False,
    ),
    Flag(
        "columns",
        ("--columns",),
        str,
        "Project the document to typed columns: 'name:string,qty:int' or Spark DDL "
        "('name STRING, qty INT'). Default: one JSON string column, document.",
        metavar="SCHEMA",
        show_default=False,
    ),
    Flag(
        "schema_file",
        ("--schema-file",),
        Path,
        "Like --columns, from a file holding Spark DDL or a Spark JSON schema.",
        metavar="FILE",
        show_default=False,
    ),
    Flag(
        "starting_offsets",
        ("--starting-offsets",),
        StartingOffsets,
        "Where a new checkpoint starts in each topic (a restarted job always continues from its checkpoint).",
        default=StartingOffsets.earliest,
    ),
    Flag(
        "max_offsets_per_trigger",
        ("--max-offsets-per-trigger",),
        int,
        "Read at most N records per micro-batch (over all partitions).",
        min=1,
        metavar="N",
        show_default=False,
    ),
    Flag(
        "min_partitions",
        ("--min-partitions",),
        int,
        "Read each micro-batch in at least N Spark tasks, splitting large Kafka partitions, so a "
        "topic with fewer partitions than cores still uses every core. Default: 3 per core of the job; "
        "0: one task per Kafka partition.",
        min=0,
        metavar="N",
        show_default=False,
    ),
    Flag(
        "delete_retention",
        ("--delete-retention",),
        str,
        "Keep each deleted key's marker at least this long after the delete, in source time (7d, 36h, "
        "90m, 30s, 500ms, or forever). A replay of older changes that arrives after its marker went can bring "
        "the document back until the delete is replayed too: keep it above the topics' retention to be safe.",
        default=DEFAULT_DELETE_RETENTION,
        metavar="DURATION",
    ),
    Flag(
        "kafka_option",
        ("--kafka-option",),
        list[str],
        "Java Kafka client property for the Spark job (repeat), e.g. sasl.jaas.config=…; added to those "
        "translated from the config's kafka.* settings.",
        metavar="KEY=VALUE",
        show_default=False,
    ),
    Flag(
        "master",
        ("--master",),
        str,
        "Spark master: local[*], local[N], spark://HOST:PORT, yarn or k8s://URL. A non-local master "
        "runs through spark-submit.",
        default="local[*]",
    ),
    Flag(
        "conf",
        ("--conf",),
        list[str],
        "Spark configuration property (repeat), e.g. spark.executor.memory=4g; applied last.",
        metavar="KEY=VALUE",
        show_default=False,
    ),
    Flag(
        "packages",
        ("--packages",),
        list[str],
        "More Maven packages for the job (repeat, or comma-separate), resolved like the Kafka source.",
        metavar="GROUP:ARTIFACT:VERSION",
        show_default=False,
    ),
    Flag(
        "jars",
        ("--jars",),
        list[str],
        "Use these jars instead of resolving the Kafka source and Delta from Maven (offline clusters).",
        metavar="JAR[,JAR…]",
        show_default=False,
    ),
    Flag(
        "submit",
        ("--submit",),
        bool,
        "Run through spark-submit even on a local master (default: in-process).",
        default=False,
    ),
    Flag(
        "deletion_vectors",
        ("--deletion-vectors/--no-deletion-vectors",),
        bool,
        "Create Delta tables with deletion vectors (a MERGE marks the rows it replaces instead of "
        "rewriting their files; readers need Delta 2.3+ or another engine that supports them). "
        "--no-deletion-vectors: tables any Delta reader can read. Applies to tables the job creates.",
        default=True,
    ),
    Flag(
        "ui",
        ("--ui",),
        bool,
        "Start the Spark UI (off by default: spark.ui.enabled=false; --conf spark.ui.enabled=true is the "
        "same). Its address is logged when Spark has started.",
        default=False,
    ),
    Flag(
        "dry_run",
        ("--dry-run",),
        bool,
        "Print the exact spark-submit command line and do nothing.",
        default=False,
    ),
    Flag(
        "query_name",
        ("--query-name",),
        str,
        "Name of the streaming query (Spark UI, logs, status).",
        default="mongocdc",
    ),
)
"""``spark run``'s own options, in the order its help lists them (``--output`` and the configuration's options
``--bootstrap-servers``, ``--topic-prefix`` follow)."""
