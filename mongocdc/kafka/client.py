"""``KafkaClient``: what the producer, the consumer and the admin client of an ``Endpoint`` share.

Each is built from the user's settings and its own ``defaults``/``forced`` keys (``kafka.config``); a
client that cannot be built is a ``ConfigError`` (an invalid setting) or the broker's reason. librdkafka's
error callback logs transient errors (librdkafka retries them) and keeps a fatal one, which the client's
next call raises. Metadata requests, reaching the cluster with retries and waiting for a topic's
partition leaders live here, since every kind of client can ask them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException

from mongocdc.errors import MongocdcError
from mongocdc.kafka.config import client_config
from mongocdc.kafka.errors import SETTLING_CODES, Endpoint, describe, reason
from mongocdc.kafka.logs import librdkafka_log
from mongocdc.retry import Backoff

log = logging.getLogger("mongocdc.kafka")


class _Unavailable(Exception):
    """One attempt to reach the cluster failed (retried by ``KafkaClient.reach``)."""


class KafkaClient:
    """One confluent-kafka client (``factory``) of ``endpoint``; ``purpose`` names it in log lines, ``timeout_s``
    bounds each request to the cluster."""

    kind: ClassVar[str] = "client"

    def __init__(
        self,
        factory: Callable[[dict[str, Any]], Any],
        settings: Mapping[str, Any],
        endpoint: Endpoint,
        *,
        defaults: Mapping[str, Any] | None = None,
        forced: Mapping[str, Any] | None = None,
        purpose: str = "",
        timeout_s: float = 10.0,
    ) -> None:
        self.endpoint = endpoint
        self.purpose = purpose
        self.timeout_s = timeout_s
        self._failure: MongocdcError | None = None
        self._lock = threading.Lock()
        config = client_config(
            settings,
            defaults=defaults,
            forced=forced,
            error_cb=self._on_error,
            logger=endpoint.client_log or librdkafka_log,
        )
        try:
            self._client = factory(config)
        except KafkaException as exc:
            raise endpoint.failed(exc, f"creating a Kafka {self.kind}") from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.endpoint.bootstrap!r}{', ' + self.purpose if self.purpose else ''})"

    # --- errors ------------------------------------------------------------------------

    def _on_error(self, err: KafkaError) -> None:
        """librdkafka's error callback (on one of its threads or in ``poll``)."""
        endpoint = self.endpoint
        if err.fatal():
            self.fail(endpoint.fatal(err, self.kind))
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            if endpoint.client_log is not None:
                endpoint.client_log.failed(err.str())
            else:
                log.warning("all Kafka brokers at %s are down; retrying: %s", endpoint.bootstrap, err.str())
        else:
            level = logging.DEBUG if endpoint.client_log is not None else logging.WARNING
            where = f"{endpoint.where} ({self.purpose})" if self.purpose else endpoint.where
            log.log(level, "%s: %s", where, describe(err))

    def fail(self, error: MongocdcError) -> None:
        """Keep ``error`` for ``check`` (the first one wins); safe from any thread."""
        with self._lock:
            if self._failure is None:
                self._failure = error

    def check(self) -> None:
        """Raise the first failure kept (a fatal client error, or one its owner reported with ``fail``)."""
        if self._failure is not None:
            raise self._failure

    # --- metadata ------------------------------------------------------------------------

    def metadata(self, topic: str | None = None) -> Any:
        """The cluster's metadata (of ``topic`` only, when given)."""
        self.check()
        try:
            return self._client.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as exc:
            doing = f"reading the metadata of topic {topic}" if topic else "listing topics"
            raise self.endpoint.failed(exc, doing) from exc

    def reach(
        self, backoff: Backoff | None, *, topic: str | None = None, note: str = "", timeout_s: float | None = None
    ) -> Any:
        """The metadata (of ``topic``), once the cluster answers: one attempt, or retried with ``backoff``, each
        waiting up to ``timeout_s`` (the client's request timeout when not given).

        ``UnreachableError`` (exit 4) when it never answers; ``note`` is added to its message.
        """
        self.check()
        client_log = self.endpoint.client_log
        timeout_s = self.timeout_s if timeout_s is None else timeout_s

        def probe() -> Any:
            try:
                metadata = self._client.list_topics(topic, timeout=timeout_s)
            except KafkaException as exc:
                raise _Unavailable(reason(exc)) from exc
            if client_log is not None:
                client_log.answered()
            return metadata

        try:
            if backoff is None:
                return probe()
            return backoff.run(f"connecting to {self.endpoint.where}", probe, retry_on=(_Unavailable,))
        except _Unavailable as exc:
            if backoff is None:
                raise self.endpoint.unreachable(f"{exc}{note}") from exc
            raise self.endpoint.unreachable(
                f"{exc}{note}", attempts=backoff.max_attempts, tuning=backoff.tuning
            ) from exc

    def partitions(self, topic: str, *, at_least: int = 1, created: bool = False) -> list[int] | None:
        """The partitions of ``topic`` once each has a leader (and there are ``at_least``); ``None`` when the topic
        does not exist, unless it was just ``created`` (then its absence is metadata not caught up yet)."""
        timeout_s = self.timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            info = self.metadata(topic).topics.get(topic)
            error: KafkaError | None = info.error if info is not None else None
            missing = info is None or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)
            if missing and not created:
                return None
            if error is not None and not missing and error.code() not in SETTLING_CODES:
                raise self.endpoint.failed(error, f"describing topic {topic}")
            if (
                info is not None
                and error is None
                and len(info.partitions) >= at_least
                and all(p.leader >= 0 for p in info.partitions.values())
            ):
                return sorted(info.partitions)
            if time.monotonic() > deadline:
                raise self.endpoint.unreachable(f"{_leaderless(topic, info, error)} after {timeout_s:g} s")
            time.sleep(0.05)


def _leaderless(topic: str, info: Any, error: KafkaError | None) -> str:
    """What a topic's metadata says about its missing leaders: the partitions, and the brokers that hold them."""
    if info is None or not info.partitions:
        return f"topic {topic} has no partitions with a leader ({error.str() if error is not None else 'none yet'})"
    missing = [p for p in info.partitions.values() if p.leader < 0]
    if not missing:
        return f"topic {topic} is not ready: {error.str() if error is not None else 'too few partitions'}"
    replicas = ", ".join(map(str, sorted({r for p in missing for r in p.replicas})))
    held = f" (their replicas are on broker {replicas}, which is down or fenced)" if replicas else ""
    names = ", ".join(f"{topic}[{p.id}]" for p in sorted(missing, key=lambda p: p.id))
    return f"{names}: no leader{held}"
