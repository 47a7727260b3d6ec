"""Value types of configuration properties.

A value type turns a raw value — a YAML scalar or list, an environment
variable's string, a flag's value — into the typed value a ``Settings``
attribute holds, or raises ``InvalidValueError`` saying what is accepted.
``render`` is the inverse used by ``Settings.as_properties``: feeding a
rendered value back to ``parse`` gives the same typed value.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final


class InvalidValueError(ValueError):
    """A raw value a property does not accept; the message says what is accepted."""


class ValueType(ABC):
    """How one kind of property value is parsed, shown and described."""

    @property
    @abstractmethod
    def description(self) -> str:
        """What is accepted, as a noun phrase: ``"a whole number >= 1"``."""

    @abstractmethod
    def parse(self, raw: object) -> object:
        """The typed value of ``raw``; ``InvalidValueError`` when ``raw`` is not accepted."""

    def render(self, value: object) -> object:
        """``value`` as a property value (what ``config show`` prints and ``parse`` reads back)."""
        return value


@dataclass(frozen=True)
class StringType(ValueType):
    """A non-empty string."""

    @property
    def description(self) -> str:
        return "a non-empty string"

    def parse(self, raw: object) -> object:
        if not isinstance(raw, str):
            raise InvalidValueError("expected a string (quote the value in YAML)")
        if not raw.strip():
            raise InvalidValueError("expected a non-empty string")
        return raw


_INTEGER: Final = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class IntType(ValueType):
    """A whole number of at least ``minimum``."""

    minimum: int = 0
    maximum: int | None = None
    accepted: str | None = None
    """Replaces the generated description when a validator narrows the range (``"-1 or a whole number >= 1"``)."""

    @property
    def description(self) -> str:
        if self.accepted is not None:
            return self.accepted
        if self.maximum is not None:
            return f"a whole number from {self.minimum} to {self.maximum}"
        return f"a whole number >= {self.minimum}"

    def parse(self, raw: object) -> object:
        if isinstance(raw, bool):
            raise InvalidValueError(f"expected {self.description}, not a boolean")
        if isinstance(raw, int):
            value = raw
        elif isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
            value = int(raw.strip())
        else:
            raise InvalidValueError(f"expected {self.description}")
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            raise InvalidValueError(f"expected {self.description}")
        return value


@dataclass(frozen=True)
class BoolType(ValueType):
    """``true`` or ``false``: a YAML boolean or one of those words in any case."""

    @property
    def description(self) -> str:
        return "true or false"

    def parse(self, raw: object) -> object:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise InvalidValueError("expected true or false")


@dataclass(frozen=True)
class ChoiceType(ValueType):
    """One of a fixed set of words, matched without regard to case; ``aliases`` map old names to current ones."""

    choices: tuple[str, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)

    @property
    def description(self) -> str:
        accepted = ", ".join(self.choices)
        if self.aliases:
            accepted += " (" + "; ".join(f"{old} is an alias of {new}" for old, new in self.aliases.items()) + ")"
        return f"one of {accepted}"

    def parse(self, raw: object) -> object:
        if isinstance(raw, str):
            word = raw.strip().lower()
            word = self.aliases.get(word, word)
            if word in self.choices:
                return word
        raise InvalidValueError(f"expected {self.description}")


@dataclass(frozen=True)
class RegexListType(ValueType):
    """Regular expressions, written comma-separated (a literal comma is ``\\,``) or as a YAML list.

    The typed value is a tuple of patterns; every one must compile.
    """

    @property
    def description(self) -> str:
        return "comma-separated regular expressions"

    def parse(self, raw: object) -> object:
        if isinstance(raw, str):
            patterns = split_patterns(raw)
        elif isinstance(raw, list | tuple) and all(isinstance(item, str) for item in raw):
            patterns = tuple(p for p in (_scan(item, split=False)[0].strip() for item in raw) if p)
        else:
            raise InvalidValueError(f"expected {self.description} or a YAML list of them")
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidValueError(
                    f"{pattern!r} is not a valid regular expression ({exc}); expected {self.description}"
                ) from None
        return patterns

    def render(self, value: object) -> object:
        if not isinstance(value, tuple):
            return value
        return join_patterns(tuple(str(pattern) for pattern in value))


ItemCheck = Callable[[str], str | None]
"""Why one list item is not accepted (a phrase such as ``"expected <database>.<collection>"``), or ``None``."""


@dataclass(frozen=True)
class CommaListType(ValueType):
    """Plain strings, written comma-separated or as a YAML list; blanks are dropped, each item is checked.

    The typed value is a tuple of the items in the order given, duplicates removed.
    """

    item: str
    """What one item is, as a noun phrase (``"<database>.<collection>"``)."""
    check: ItemCheck | None = None

    @property
    def description(self) -> str:
        return f"a comma-separated list of {self.item}"

    def parse(self, raw: object) -> object:
        if isinstance(raw, str):
            items = [part.strip() for part in raw.split(",")]
        elif isinstance(raw, list | tuple) and all(isinstance(item, str) for item in raw):
            items = [item.strip() for item in raw]
        else:
            raise InvalidValueError(f"expected {self.description} or a YAML list of them")
        unique = tuple(dict.fromkeys(item for item in items if item))
        if self.check is not None:
            for item in unique:
                reason = self.check(item)
                if reason is not None:
                    raise InvalidValueError(f"{item!r}: {reason}; expected {self.description}")
        return unique

    def render(self, value: object) -> object:
        if not isinstance(value, tuple):
            return value
        return ",".join(str(item) for item in value)


@dataclass(frozen=True)
class FlagSetType(ValueType):
    """A set of single-word flags (``c,u,d``) written comma-separated or as a YAML list, or ``none`` for no flag.

    The typed value is a tuple of the flags in the order of ``flags``; ``none``
    (alone) and an empty YAML list give ``()``.
    """

    flags: tuple[str, ...]
    none: str = "none"

    @property
    def description(self) -> str:
        return f"a comma-separated list of {', '.join(self.flags)}, or {self.none}"

    def parse(self, raw: object) -> object:
        if isinstance(raw, str):
            words = [part.strip().lower() for part in raw.split(",")]
        elif isinstance(raw, list | tuple) and all(isinstance(item, str) for item in raw):
            words = [item.strip().lower() for item in raw]
        else:
            raise InvalidValueError(f"expected {self.description}")
        words = [word for word in words if word]
        if isinstance(raw, str) and not words:
            raise InvalidValueError(f"expected {self.description} (write {self.none} for no flag)")
        if self.none in words:
            if len(words) > 1:
                raise InvalidValueError(
                    f"{self.none} cannot be combined with other values; expected {self.description}"
                )
            return ()
        unknown = [word for word in words if word not in self.flags]
        if unknown:
            shown = ", ".join(repr(word) for word in unknown)
            raise InvalidValueError(f"unknown value {shown}; expected {self.description}")
        return tuple(flag for flag in self.flags if flag in words)

    def render(self, value: object) -> object:
        if not isinstance(value, tuple):
            return value
        return ",".join(str(flag) for flag in value) if value else self.none


def split_patterns(text: str) -> tuple[str, ...]:
    """Split a comma-separated pattern list as Debezium does: ``\\,`` is a literal comma, blanks are dropped."""
    return tuple(part.strip() for part in _scan(text, split=True) if part.strip())


def join_patterns(patterns: tuple[str, ...]) -> str:
    """The comma-separated form of ``patterns`` that ``split_patterns`` reads back."""
    escaped = []
    for pattern in patterns:
        out: list[str] = []
        i = 0
        while i < len(pattern):
            if pattern[i] == "\\" and i + 1 < len(pattern):
                out.append(pattern[i : i + 2])
                i += 2
                continue
            out.append("\\," if pattern[i] == "," else pattern[i])
            i += 1
        escaped.append("".join(out))
    return ",".join(escaped)


def _scan(text: str, *, split: bool) -> list[str]:
    """Parts of ``text`` between unescaped commas (one part unless ``split``), ``\\,`` unescaped to ``,``."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            following = text[i + 1]
            current.append("," if following == "," else char + following)
            i += 2
            continue
        if char == "," and split:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts
