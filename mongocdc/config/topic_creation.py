"""``topic.creation.*``: the topics mongocdc creates before its first record to them, as Kafka Connect does.

Kafka Connect (KIP-158) creates a source connector's topics itself when the worker allows it
(``topic.creation.enable``, default true) and the connector sets at least
``topic.creation.default.replication.factor`` and ``topic.creation.default.partitions`` (-1: the
broker's default). Named groups (``topic.creation.groups``) each have ``include``/``exclude`` lists
of regular expressions matched against the whole topic name, exclusion first; a topic takes the first
listed group that matches it, else ``default``. A group's ``replication.factor`` and ``partitions``
default to the default group's; every other ``topic.creation.<group>.<key>`` is a topic config
(``cleanup.policy``, ``compression.type``, …) of that group only. A topic that exists is used as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from mongocdc.config.values import BoolType, InvalidValueError

PREFIX: Final = "topic.creation."
DEFAULT_GROUP: Final = "default"
_OWN_KEYS: Final = frozenset({"include", "exclude", "replication.factor", "partitions"})
_BOOL: Final = BoolType()


@dataclass(frozen=True)
class TopicGroup:
    """One topic creation group: which topics it takes and how it creates them."""

    name: str
    partitions: int
    """-1: the broker's ``num.partitions``."""
    replication_factor: int
    """-1: the broker's ``default.replication.factor``."""
    configs: Mapping[str, str] = field(default_factory=dict)
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is this (named) group's: it matches an include pattern and no exclude pattern."""
        if any(p.fullmatch(topic) for p in self.exclude):
            return False
        return any(p.fullmatch(topic) for p in self.include)

    def describe(self) -> str:
        def count(value: int) -> str:
            return "broker default" if value == -1 else str(value)

        configs = "".join(f", {k}={v}" for k, v in sorted(self.configs.items()))
        return (
            f"group {self.name}: {count(self.partitions)} partitions, replication factor "
            f"{count(self.replication_factor)}{configs}"
        )


@dataclass(frozen=True)
class TopicCreation:
    """The groups, in the order ``topic.creation.groups`` lists them, and the default group."""

    default: TopicGroup
    groups: tuple[TopicGroup, ...] = ()

    def group_for(self, topic: str) -> TopicGroup:
        return next((group for group in self.groups if group.matches(topic)), self.default)


def is_topic_creation_key(name: str) -> bool:
    """Whether ``name`` is a ``topic.creation.*`` key (kept on ``Settings.topic_creation`` without the prefix)."""
    return name.startswith(PREFIX) and len(name) > len(PREFIX)


def _count(name: str, text: str | None, fallback: int | None, problems: list[str]) -> int:
    if text is None:
        if fallback is None:
            problems.append(
                f"{name} is required when topic.creation.* is set (-1 takes the broker's default), as in Kafka Connect"
            )
            return -1
        return fallback
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value != -1 and value < 1:
        problems.append(f"{name}: invalid value {text!r}: must be -1 (the broker's default) or at least 1")
    return value


def _patterns(name: str, text: str | None, problems: list[str]) -> tuple[re.Pattern[str], ...]:
    patterns = []
    for item in (text or "").split(","):
        if not item.strip():
            continue
        try:
            patterns.append(re.compile(item.strip()))
        except re.error as exc:
            problems.append(f"{name}: invalid regular expression {item.strip()!r}: {exc}")
    return tuple(patterns)


def parse_topic_creation(keys: Mapping[str, str]) -> tuple[TopicCreation | None, list[str]]:
    """The rules of the ``topic.creation.*`` keys (given without the prefix), and the problems found.

    ``None`` when topic creation is off: no key but ``enable`` is set, or ``enable`` is false.
    """
    problems: list[str] = []
    try:
        enabled = bool(_BOOL.parse(keys.get("enable", "true")))
    except InvalidValueError as exc:
        problems.append(f"{PREFIX}enable: invalid value {keys['enable']!r}: {exc}")
        enabled = True
    if not enabled or not any(key != "enable" for key in keys):
        return None, problems

    def group(name: str, fallback: TopicGroup | None) -> TopicGroup:
        own = f"{name}."
        configs = {
            key[len(own) :]: value
            for key, value in keys.items()
            if key.startswith(own) and key[len(own) :] not in _OWN_KEYS
        }
        partitions = None if fallback is None else fallback.partitions
        replication = None if fallback is None else fallback.replication_factor
        return TopicGroup(
            name,
            _count(f"{PREFIX}{own}partitions", keys.get(own + "partitions"), partitions, problems),
            _count(f"{PREFIX}{own}replication.factor", keys.get(own + "replication.factor"), replication, problems),
            configs,
            # the default group takes every topic; Kafka Connect ignores an include/exclude list of it
            _patterns(f"{PREFIX}{own}include", keys.get(own + "include"), problems) if fallback else (),
            _patterns(f"{PREFIX}{own}exclude", keys.get(own + "exclude"), problems) if fallback else (),
        )

    default = group(DEFAULT_GROUP, None)
    names = [n.strip() for n in keys.get("groups", "").split(",") if n.strip() and n.strip() != DEFAULT_GROUP]
    groups = tuple(group(name, default) for name in dict.fromkeys(names))
    return TopicCreation(default, groups), problems
