"""What a configuration property is, and the checks its values go through.

The properties themselves are the fields of ``Settings`` (``settings.py``),
each declared with ``setting(...)``; ``PROPERTIES`` is collected from them,
so one field is all a new property needs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from mongocdc.config.values import ChoiceType, InvalidValueError, ValueType

ENV_PREFIX: Final = "MONGOCDC_"

PROPERTY_METADATA_KEY: Final = "mongocdc.property"

Validator = Callable[[Any], None]
"""Checks a parsed value; raises ``InvalidValueError`` saying what is accepted."""

CaptureScope = Literal["deployment", "database", "collection"]
CaptureMode = Literal[
    "change_streams",
    "change_streams_update_full",
    "change_streams_with_pre_image",
    "change_streams_update_full_with_pre_image",
]
SnapshotMode = Literal["initial", "initial_only", "no_data", "when_needed", "always"]
OffsetStorage = Literal["sqlite", "kafka"]
ExactlyOnceSupport = Literal["disabled", "requested", "required"]
TransactionBoundary = Literal["poll", "interval"]
ConnectionMode = Literal["sharded", "replica_set"]
OversizeHandlingMode = Literal["fail", "skip", "split"]
Operation = Literal["c", "u", "d", "t"]
WatermarkingStrategy = Literal["insert_insert", "insert_delete"]
"""``incremental.snapshot.watermarking.strategy``: how a chunk's window is marked in the signal collection."""
FullUpdateType = Literal["lookup", "post_image"]
"""``capture.mode.full.update.type``: how the ``*_update_full*`` capture modes get the document after an update."""
PipelineOrder = Literal["internal_first", "user_first"]
"""``cursor.pipeline.order``: whether mongocdc's own change stream stages or ``cursor.pipeline`` come first."""
FiltersMatchMode = Literal["regex", "literal"]
"""``filters.match.mode``: whether the database and collection lists are regular expressions or exact names."""

DEFAULT_SNAPSHOT_FETCH_SIZE: Final = 2048
"""Documents per snapshot chunk when ``snapshot.fetch.size`` is 0 (Debezium's "let the server choose")."""

DEFAULT_TOPIC_NAMING_STRATEGY: Final = "io.debezium.schema.DefaultTopicNamingStrategy"


@dataclass(frozen=True)
class Flag:
    """The command-line option that sets a property: the CLI declares it from this, on every command that
    takes it, and passes its value on as that property (flags win over the environment and the file)."""

    option: str
    """The option, ``--topic-prefix``."""
    help: str
    """One line of ``--help``, naming the property."""
    metavar: str | None = None
    """What ``--help`` shows for the value (``HOST:PORT,…``); the value's type when ``None``."""
    aliases: tuple[str, ...] = ()
    """More spellings of the option (``--bootstrap-server``, as Kafka's own tools spell it)."""


@dataclass(frozen=True)
class Property:
    """One configuration property: its Debezium name, type, default and documentation.

    ``doc`` is one line; it is the description column of the README's
    configuration reference. ``secret`` marks values that carry credentials
    (they are shown redacted). ``flag`` is the command-line option that sets
    the property, when there is one. ``path`` marks a file path.
    """

    name: str
    value_type: ValueType
    default: object
    doc: str
    secret: bool = False
    validator: Validator | None = None
    flag: Flag | None = None
    path: bool = False
    """A file path: relative in a config file, it is relative to the file's directory (``loading``)."""

    @property
    def attr(self) -> str:
        """The ``Settings`` attribute: the name in snake case (``topic.prefix`` → ``topic_prefix``)."""
        return self.name.replace(".", "_").replace("-", "_")

    @property
    def env_var(self) -> str:
        """The environment variable that sets it (``topic.prefix`` → ``MONGOCDC_TOPIC_PREFIX``)."""
        return env_var_for(self.name)

    def parse(self, raw: object) -> object:
        """The typed, validated value of ``raw``; ``InvalidValueError`` says what is accepted."""
        value = self.value_type.parse(raw)
        if self.validator is not None:
            self.validator(value)
        return value

    def render(self, value: object) -> object:
        """``value`` as a property value, ``None`` when unset."""
        return None if value is None else self.value_type.render(value)


def env_var_for(property_name: str) -> str:
    """``MONGOCDC_`` + the name upper-cased with dots as underscores (also for ``kafka.*`` pass-through keys)."""
    return ENV_PREFIX + re.sub(r"[.\-]", "_", property_name).upper()


def setting(
    name: str,
    value_type: ValueType,
    default: object,
    doc: str,
    *,
    secret: bool = False,
    validator: Validator | None = None,
    flag: Flag | None = None,
    path: bool = False,
) -> Any:
    """Declare a ``Settings`` field as the property ``name`` (the field's default is ``default``)."""
    prop = Property(name, value_type, default, doc, secret=secret, validator=validator, flag=flag, path=path)
    return dataclasses.field(default=default, metadata={PROPERTY_METADATA_KEY: prop})


def choice(literal: object, **aliases: str) -> ChoiceType:
    """A ``ChoiceType`` accepting the members of a ``Literal`` type (one list of choices for code and config)."""
    return ChoiceType(tuple(str(arg) for arg in get_args(literal)), aliases)


# --- validators ------------------------------------------------------------

TOPIC_PREFIX_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_TOPIC_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_.\-]+")
_KAFKA_TOPIC_MAX: Final = 249


def check_topic_prefix(value: str) -> None:
    if not TOPIC_PREFIX_PATTERN.fullmatch(value):
        raise InvalidValueError(
            "expected a name that starts with a letter or '_' and contains only letters, digits, '_', '-' and '.'"
            f" (pattern {TOPIC_PREFIX_PATTERN.pattern})"
        )
    if len(value) > _KAFKA_TOPIC_MAX:
        raise InvalidValueError(f"expected at most {_KAFKA_TOPIC_MAX} characters (Kafka's topic name limit)")


def check_topic_name(value: str) -> None:
    if not _TOPIC_NAME_PATTERN.fullmatch(value) or value in (".", ".."):
        raise InvalidValueError(
            "expected a Kafka topic name: letters, digits, '_', '-' and '.'"
            f" (pattern {_TOPIC_NAME_PATTERN.pattern}), not '.' or '..'"
        )
    if len(value) > _KAFKA_TOPIC_MAX:
        raise InvalidValueError(f"expected at most {_KAFKA_TOPIC_MAX} characters (Kafka's topic name limit)")


def check_connection_string(value: str) -> None:
    if not value.startswith(("mongodb://", "mongodb+srv://")):
        raise InvalidValueError(
            "expected a MongoDB connection string starting with mongodb:// or mongodb+srv://"
            " (for example mongodb://host1:27017,host2:27017/?replicaSet=rs0)"
        )


def check_bootstrap_servers(value: str) -> None:
    servers = [server.strip() for server in value.split(",")]
    if any(not server or any(c.isspace() for c in server) for server in servers):
        raise InvalidValueError("expected a comma-separated list of host:port without blanks (e.g. k1:9092,k2:9092)")


# MongoDB naming restrictions: https://www.mongodb.com/docs/manual/reference/limits/#naming-restrictions
_DATABASE_NAME_FORBIDDEN: Final = frozenset('/\\. "$*<>:|?\0')
_DATABASE_NAME_MAX: Final = 63


def database_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a MongoDB database name, or ``None`` when it can."""
    if not name:
        return "a database name must not be empty"
    bad = sorted(set(name) & _DATABASE_NAME_FORBIDDEN)
    if bad:
        shown = " ".join(repr(c) for c in bad)
        return f"a database name must not contain {shown}"
    if len(name.encode()) > _DATABASE_NAME_MAX:
        return f"a database name has at most {_DATABASE_NAME_MAX} bytes"
    return None


def namespace_problem(namespace: str) -> str | None:
    """Why ``namespace`` cannot be ``<database>.<collection>``, or ``None`` when it can."""
    database, dot, collection = namespace.partition(".")
    if not dot or not collection:
        return "expected <database>.<collection>"
    problem = database_name_problem(database)
    if problem:
        return problem
    if "$" in collection or "\0" in collection:
        return "a collection name must not contain '$'"
    if collection.startswith("system."):
        return "system.* collections cannot be captured"
    return None


def check_topic_naming_strategy(value: str) -> None:
    if value != DEFAULT_TOPIC_NAMING_STRATEGY:
        raise InvalidValueError(
            f"only {DEFAULT_TOPIC_NAMING_STRATEGY} is available: mongocdc names topics <topic.prefix>.<database>."
            "<collection> as Debezium's default strategy does (another strategy is a Java class it cannot run)"
        )


def check_start_op_time(value: int) -> None:
    if value != -1 and value >> 32 == 0:
        raise InvalidValueError(
            "expected -1 or a BSON timestamp as one number, seconds << 32 | increment (for example "
            f"{1_700_000_000 << 32} for 2023-11-14 22:13:20 UTC, increment 0)"
        )


def check_auth_source(value: str) -> None:
    """``mongodb.authsource``: a database name, or ``$external`` (LDAP, Kerberos, X.509 and AWS users)."""
    reason = None if value == "$external" else database_name_problem(value)
    if reason is not None:
        raise InvalidValueError(f"{reason} (for example admin, or $external)")


def check_namespace(value: str) -> None:
    """A ``<database>.<collection>`` name (``signal.data.collection``)."""
    reason = namespace_problem(value)
    if reason is not None:
        raise InvalidValueError(f"{reason} (for example inventory.debezium_signal)")


# --- field paths (field.exclude.list, field.renames) ------------------------------


def field_path_problem(path: str) -> str | None:
    """Why ``path`` is not ``<database>.<collection>.<field>[.<nested>…]``, or ``None`` when it is.

    The database and collection parts may contain ``*`` wildcards (as in
    Debezium); the field path may not.
    """
    segments = path.split(".")
    if len(segments) < 3:
        return "expected <database>.<collection>.<field> (nested fields as <field>.<nested>)"
    if any(not segment.strip() for segment in segments):
        return "a path segment is empty (two dots in a row, or a leading or trailing dot)"
    if any(segment != segment.strip() for segment in segments):
        return "a path segment starts or ends with a blank"
    if any("*" in segment for segment in segments[2:]):
        return "'*' is allowed only in the database and collection parts"
    if any(segment.startswith("$") for segment in segments[2:]):
        return "a field name must not start with '$'"
    return None


def field_rename_problem(rename: str) -> str | None:
    """Why ``rename`` is not ``<database>.<collection>.<field path>:<new name>``, or ``None`` when it is."""
    path, colon, new_name = rename.partition(":")
    if not colon:
        return "expected <database>.<collection>.<field path>:<new name> (the ':' is missing)"
    problem = field_path_problem(path.strip())
    if problem:
        return problem
    new_name = new_name.strip()
    if not new_name:
        return "the new name after ':' is empty"
    if any(c in new_name for c in ".:*") or new_name.startswith("$"):
        return "the new name is one field name: no '.', ':' or '*', and not starting with '$'"
    return None


REPLICATION_FACTOR_ACCEPTED: Final = "-1 (the broker's default.replication.factor) or a whole number >= 1"


def check_replication_factor(value: int) -> None:
    if value == 0 or value < -1:
        raise InvalidValueError(f"expected {REPLICATION_FACTOR_ACCEPTED}")


RENAME_PLACEHOLDER: Final = re.compile(r"\$\{([^}]*)\}")
RENAME_FIELDS: Final = ("topic", "source")
"""The placeholders of ``topic.rename.format``: ``${topic}`` (required) and ``${source}``."""


def check_rename_format(value: str) -> None:
    """``topic.rename.format``: ``${topic}`` once or more, no other placeholder than ``${source}``."""
    unknown = sorted({name for name in RENAME_PLACEHOLDER.findall(value) if name not in RENAME_FIELDS})
    if unknown:
        raise InvalidValueError(
            f"unknown placeholder {', '.join('${' + name + '}' for name in unknown)}; only ${{topic}} and "
            "${source} are replaced (for example ${topic}.replica)"
        )
    if "${topic}" not in value:
        raise InvalidValueError("must contain ${topic}, or every source topic would map to one name")
    rest = RENAME_PLACEHOLDER.sub("x", value)
    if not _TOPIC_NAME_PATTERN.fullmatch(rest):
        raise InvalidValueError("outside the placeholders only letters, digits, '_', '-' and '.' are allowed")
