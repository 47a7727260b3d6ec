"""Kafka's errors as mongocdc's (``mongocdc.errors``): one table of error codes, one ``Endpoint`` per cluster.

Every failure of a Kafka client becomes a ``MongocdcError`` here and nowhere else:

* a request the cluster did not answer (transport, all brokers down, time-outs) → ``UnreachableError`` (exit 4),
  naming the cluster and the setting that points at it;
* an invalid client setting → ``ConfigError`` (exit 3) naming the keys that hold it;
* a request refused for lack of rights → the endpoint's ``refused_error`` (``ConfigError``, exit 3, unless the
  owner says otherwise) with what to grant;
* a record refused as too large → ``OversizedEventError`` (exit 3), not acknowledged in time →
  ``UnreachableDeliveryError`` (exit 4), refused otherwise → ``DeliveryError`` (exit 1);
* a transactional producer fenced by a newer one of the same ``transactional.id`` (librdkafka's fatal
  ``_FENCED``, the broker's ``PRODUCER_FENCED``/``INVALID_PRODUCER_EPOCH``) → ``FencedError`` (exit 7): another
  instance took over, this one must stop and write nothing more;
* anything else → ``MongocdcError`` (exit 1) with the broker's reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException

from mongocdc.errors import (
    ConfigError,
    DeliveryError,
    FencedError,
    MongocdcError,
    OversizedEventError,
    UnreachableDeliveryError,
    UnreachableError,
)
from mongocdc.kafka.logs import ClientLog
from mongocdc.retry import RETRIES_HINT

UNREACHABLE_CODES: Final = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
    }
)
"""The cluster did not answer."""

SETTLING_CODES: Final = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    }
)
"""A new topic's partitions, or a partition whose leader moves, answer these for a moment."""

REFUSED_CODES: Final = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)
"""The principal may not do what was asked."""

TOO_LARGE_CODES: Final = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})

INVALID_TOPIC_CODES: Final = frozenset(
    {
        KafkaError.INVALID_REPLICATION_FACTOR,
        KafkaError.INVALID_PARTITIONS,
        KafkaError.POLICY_VIOLATION,
        KafkaError.INVALID_CONFIG,
    }
)
"""A topic the cluster will not create as asked."""


FENCED_CODES: Final = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
"""A newer producer with the same ``transactional.id`` took over (``init_transactions``): this one is fenced."""

FENCED_HINT: Final = (
    "another process started with the same transactional.id (the same connector): run one instance per connector"
)


def kafka_error(error: BaseException | KafkaError | None) -> KafkaError | None:
    """The ``KafkaError`` of a ``KafkaException`` (or the error itself); ``None`` for anything else."""
    if isinstance(error, KafkaError):
        return error
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0]
    return None


def code_of(error: BaseException | KafkaError | None) -> int | None:
    err = kafka_error(error)
    return None if err is None else int(err.code())


def describe(err: KafkaError) -> str:
    return f"{err.name()}: {err.str()}"


def reason(error: BaseException | KafkaError) -> str:
    """The broker's or the client's text for ``error``, without the code's name."""
    err = kafka_error(error)
    return err.str() if err is not None else str(error)


def show_key(key: bytes | str | None) -> str:
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    return str(key)


@dataclass(frozen=True)
class Endpoint:
    """One Kafka cluster as mongocdc's errors and hints name it.

    ``role`` names it among several (``source``/``target`` in replication); ``prefix`` is where its client
    settings come from (``kafka.``, ``src.kafka.``, ``dest.kafka.``), ``servers`` how its address is set and
    ``security`` what else reaches it, for the hints. ``access_hint`` says what to grant when it refuses a
    request, whose error is ``refused_error``. With a ``client_log``, its clients' librdkafka lines and
    connection failures go there (one line per outage) instead of one warning each.
    """

    bootstrap: str
    role: str = ""
    prefix: str = "kafka."
    servers: str = ""
    security: str = ""
    access_hint: str = ""
    refused_error: type[MongocdcError] = ConfigError
    client_log: ClientLog | None = None

    @classmethod
    def of(cls, settings: Mapping[str, Any], **described: Any) -> Endpoint:
        """The endpoint of the librdkafka ``settings`` (its ``bootstrap.servers``)."""
        return cls(str(settings.get("bootstrap.servers", "")), **described)

    @property
    def where(self) -> str:
        """``Kafka at <servers>``, or ``the <role> Kafka cluster at <servers>``."""
        return f"the {self.role} Kafka cluster at {self.bootstrap}" if self.role else f"Kafka at {self.bootstrap}"

    def reach_hint(self, *, tuning: str | None = None) -> str:
        """What to check when the cluster does not answer; ``tuning`` says what changes the attempts made."""
        servers = self.servers or f"{self.prefix}bootstrap.servers"
        security = self.security or f"the {self.prefix}* security settings"
        hint = f"check {servers}, {security} and that the brokers are up"
        return hint + (f"; {tuning}" if tuning else "")

    def unreachable(self, detail: str, *, attempts: int | None = None, tuning: str = RETRIES_HINT) -> UnreachableError:
        """``UnreachableError`` (exit 4): the cluster did not answer (after ``attempts``, when they were counted:
        then the hint ends with ``tuning``, what changes them)."""
        tried = f" after {attempts} attempt{'' if attempts == 1 else 's'}" if attempts else ""
        return UnreachableError(
            f"{self.where} is unreachable{tried}: {detail}",
            hint=self.reach_hint(tuning=tuning if attempts is not None else None),
        )

    def failed(self, error: BaseException | KafkaError, doing: str) -> MongocdcError:
        """The ``MongocdcError`` for a failed request or client (the module docstring's table)."""
        err = kafka_error(error)
        if err is None:
            return MongocdcError(f"{self.where} failed while {doing}: {error}")
        code = err.code()
        if code in FENCED_CODES:
            return FencedError(
                f"{self.where} fenced this producer while {doing} (a newer one has its transactional.id): "
                f"{describe(err)}",
                hint=FENCED_HINT,
            )
        if code in UNREACHABLE_CODES:
            return UnreachableError(f"{self.where} is unreachable while {doing}: {err.str()}", hint=self.reach_hint())
        if code == KafkaError._INVALID_ARG:
            return ConfigError(
                f"invalid Kafka client setting for {self.where}: {err.str()}",
                hint=f"check the {self.prefix}* keys against librdkafka's CONFIGURATION.md",
            )
        if code in REFUSED_CODES:
            return self.refused_error(
                f"{self.where} refused {doing}: {describe(err)}",
                hint=self.access_hint or f"check the {self.prefix}sasl.* settings and the principal's ACLs",
            )
        return MongocdcError(f"{self.where} failed while {doing}: {describe(err)}")

    def partitions_failed(self, refused: Iterable[Any], doing: str) -> MongocdcError:
        """A request some of whose partitions failed (``TopicPartition``s with an ``error``): the kind of error and
        the hint of the first, every partition named."""
        refused = list(refused)
        detail = ", ".join(f"{tp.topic}[{tp.partition}]: {describe(tp.error)}" for tp in refused)
        first = self.failed(refused[0].error, doing)
        return type(first)(f"{self.where} failed {doing} for {detail}", hint=first.hint)

    def fatal(self, err: KafkaError, client: str) -> MongocdcError:
        """A client that cannot go on (librdkafka's fatal error): a producer's is a ``DeliveryError``."""
        if err.code() in FENCED_CODES:
            return FencedError(
                f"{self.where} fenced this Kafka {client} (a newer one has its transactional.id): {describe(err)}",
                hint=FENCED_HINT,
            )
        kind = DeliveryError if client == "producer" else MongocdcError
        return kind(f"the Kafka {client} for {self.where} failed fatally: {describe(err)}")

    def produce_failed(self, exc: KafkaException, record: str, size: int, *, note: str, redo: str) -> DeliveryError:
        """The producer would not queue ``record`` (``size`` bytes); ``note`` says what that means for the
        records after it, ``redo`` what a new start does with it."""
        err = kafka_error(exc)
        if err is not None and err.code() in TOO_LARGE_CODES:
            return OversizedEventError(
                f"{record} is {size} bytes, more than the producer for {self.where} accepts ({err.str()}){note}",
                hint=f"raise {self.prefix}message.max.bytes and the topic's max.message.bytes (and the broker's "
                f"message.max.bytes), then start again{redo}",
            )
        return DeliveryError(f"cannot produce {record} to {self.where}: {reason(exc)}{note}")

    def delivery_failed(self, err: KafkaError, record: str, *, note: str, redo: str) -> DeliveryError | FencedError:
        """The delivery report of ``record`` is the error ``err`` (see ``produce_failed`` for the rest)."""
        code = err.code()
        if code in FENCED_CODES:
            return FencedError(
                f"{self.where} fenced this producer (a newer one has its transactional.id): {record} was not "
                f"written{note}",
                hint=FENCED_HINT,
            )
        if code in TOO_LARGE_CODES:
            return OversizedEventError(
                f"{self.where} refused {record} as too large: {err.str()}{note}",
                hint=f"raise the topic's max.message.bytes (and {self.prefix}message.max.bytes), then start "
                f"again{redo}",
            )
        if code in UNREACHABLE_CODES:
            return UnreachableDeliveryError(
                f"{self.where} did not acknowledge {record} in time: {err.str()}{note}",
                hint=f"{self.reach_hint()}; {self.prefix}message.timeout.ms (default 300000) is how long a record "
                "waits for it",
            )
        return DeliveryError(f"{self.where} refused {record}: {describe(err)}{note}")
