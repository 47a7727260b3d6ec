"""Which topics and groups are replicated, and what the target topics are called (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from mongocdc.errors import ConfigError

_TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,249}")
_PLACEHOLDER: Final = re.compile(r"\$\{([^}]*)\}")


class NameFilter:
    """Include and exclude regular expressions, each matched against whole names (case-sensitive, as Kafka is).

    A name is selected when an include pattern matches it and no exclude pattern does; names in
    ``always_excluded`` never are (the replicator's own topics and group).
    """

    def __init__(
        self, include: Iterable[str], exclude: Iterable[str] = (), *, always_excluded: Iterable[str] = ()
    ) -> None:
        self._include = tuple(re.compile(p) for p in include)
        self._exclude = tuple(re.compile(p) for p in exclude)
        self._never = frozenset(always_excluded)

    def __call__(self, name: str) -> bool:
        if name in self._never:
            return False
        if not any(p.fullmatch(name) for p in self._include):
            return False
        return not any(p.fullmatch(name) for p in self._exclude)

    def select(self, names: Iterable[str]) -> list[str]:
        return sorted(name for name in names if self(name))


class TopicRenamer:
    """``topic.rename.format`` applied: ``${topic}`` → the source topic, ``${source}`` → the source cluster's alias."""

    def __init__(self, fmt: str, source: str) -> None:
        unknown = sorted({name for name in _PLACEHOLDER.findall(fmt) if name not in ("topic", "source")})
        if unknown or "${topic}" not in fmt:
            raise ConfigError(
                f"topic.rename.format {fmt!r} is not valid: it must contain ${{topic}} and no placeholder other "
                "than ${topic} and ${source}",
                hint="for example topic.rename.format: ${topic}.replica",
            )
        self.format = fmt
        self.source = source
        self._cache: dict[str, str] = {}

    @property
    def is_identity(self) -> bool:
        return self.format == "${topic}"

    def __call__(self, topic: str) -> str:
        name = self._cache.get(topic)
        if name is None:
            name = self.format.replace("${source}", self.source).replace("${topic}", topic)
            if not _TOPIC_NAME.fullmatch(name):
                raise ConfigError(
                    f"topic.rename.format {self.format!r} turns {topic!r} into {name!r}, which is not a valid Kafka "
                    "topic name (letters, digits, '.', '_' and '-', at most 249 characters)",
                    hint="change topic.rename.format (or source.cluster.alias when ${source} is used)",
                )
            self._cache[topic] = name
        return name
