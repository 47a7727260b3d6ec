"""The error tree of mongocdc.

Engine code raises these; ``mongocdc.cli`` is the one place that turns them
into a printed message, a hint and a process exit code (the README's exit-code table).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Process exit codes, exactly as documented in the README."""

    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    CONFIG = 3
    UNREACHABLE = 4
    RESUME_LOST = 5
    DIFFERENT = 6
    FENCED = 7
    INTERRUPTED = 130


class MongocdcError(Exception):
    """Base of every error mongocdc reports to an operator.

    ``message`` says what went wrong, ``hint`` what to do next.
    """

    exit_code: ExitCode = ExitCode.UNEXPECTED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(MongocdcError):
    """The command line names something that does not exist or cannot be used (a topic, a file)."""

    exit_code = ExitCode.USAGE


class ConfigError(MongocdcError):
    """Invalid configuration: the message names the key, the value and what is accepted."""

    exit_code = ExitCode.CONFIG


class UnreachableError(MongocdcError):
    """MongoDB or Kafka could not be reached after all retries."""

    exit_code = ExitCode.UNREACHABLE


class ResumePositionLostError(MongocdcError):
    """The stored resume position is no longer in the oplog; a re-snapshot is needed."""

    exit_code = ExitCode.RESUME_LOST


class FencedError(MongocdcError):
    """Another instance of the same connector holds its offsets (exit 7): this one did not start, or was fenced
    by a newer one and committed nothing after it (one instance per connector)."""

    exit_code = ExitCode.FENCED


class UnsupportedTopologyError(ConfigError):
    """The deployment cannot be captured (for example a standalone server without an oplog)."""


class TransformFailedError(ConfigError):
    """A transform or converter of the connector failed on a record (Kafka Connect kills the task the same way):
    the record, the stage and the reason; nothing after the last committed position was lost."""

    @classmethod
    def of(cls, pipeline: Any, topic: str, key: bytes | None, exc: Exception) -> TransformFailedError:
        stages = ", ".join(f"{stage.alias} ({stage.class_name})" for stage in getattr(pipeline, "stages", ()))
        shown = "null" if key is None else _shorten(_payload_of(key))
        return cls(
            f"the connector's transforms or converters failed on a record of {topic} with key {shown}: {exc}",
            hint=f"the chain is {stages or '(no transforms)'}; change the option named above (or the transform "
            "chain) so it can handle this record, then start again: the record is read again from the last committed "
            "offset",
        )


def _payload_of(key: bytes) -> str:
    import json

    try:
        data = json.loads(key)
    except ValueError:
        return key.decode(errors="replace")
    if isinstance(data, dict) and set(data) == {"schema", "payload"}:
        data = data["payload"]
    return json.dumps(data, separators=(",", ":"))


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class MalformedEventError(MongocdcError):
    """MongoDB returned a change event mongocdc cannot read (a field every change event has is missing or of
    another type, or the fragments of a split event do not fit together).

    Exit 1, as an unexpected error: the operator made no mistake (not 2 or 3), the server answered (not
    4, which a retry later may fix), and nothing configurable changes it. The stream stops before the
    event, so the committed offset stays before it and nothing after it is skipped; a restart meets the
    same event again, so it is worth a report with the server's version.
    """

    exit_code = ExitCode.UNEXPECTED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(
            message,
            hint
            or "the stream stopped before this event and its offset was not committed past it; report it with the "
            "MongoDB server's version (a restart reads the same event again)",
        )


class DeliveryError(MongocdcError):
    """Kafka refused an event permanently (a fatal producer error or a rejected record)."""

    exit_code = ExitCode.UNEXPECTED


class UnreachableDeliveryError(DeliveryError, UnreachableError):
    """Kafka did not acknowledge a record in time (the brokers are down or unreachable): exit 4, not 1."""

    exit_code = ExitCode.UNREACHABLE


class OversizedEventError(DeliveryError):
    """An event is larger than Kafka accepts; the fix is a size limit in the configuration."""

    exit_code = ExitCode.CONFIG


class GroupActiveError(UsageError):
    """``failover translate --apply`` while the consumer group has active members on the target cluster.

    Exit 2: Kafka does not move the offsets of a group under running members; stop them and run it again.
    """


class PartialTranslationError(UsageError):
    """``failover translate --apply`` when a committed partition of the group cannot be translated.

    Exit 2: nothing was written; ``--allow-partial`` writes the partitions that were translated.
    """


class SparkEnvironmentError(MongocdcError):
    """Something the Spark job needs on this machine is missing: pyspark, or Java 17+ (exit 3, nothing ran)."""

    exit_code = ExitCode.CONFIG


class SparkPackageError(MongocdcError):
    """The Spark packages (Kafka source, Delta Lake) could not be resolved from Maven (exit 4)."""

    exit_code = ExitCode.UNREACHABLE


class SparkJobError(MongocdcError):
    """The Spark streaming query failed (exit 1); the message carries Spark's own reason."""

    exit_code = ExitCode.UNEXPECTED
