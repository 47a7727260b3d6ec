"""What a transform, a predicate and a converter are to the chain (``chain.py``) and how they are configured.

Each implementation module registers its classes by the Java class name a Kafka Connect configuration
names (``TRANSFORMS``, ``PREDICATES``, ``CONVERTERS``: class name → factory). A factory takes the options
Kafka Connect would hand the Java class's ``configure`` (for a transform, every
``transforms.<alias>.<option>`` key with the prefix stripped, ``type`` included; for a converter, every
``key.converter.<option>`` or ``value.converter.<option>`` key) and raises :class:`ConnectConfigError`
with Connect's own message for a value Connect refuses. Options the Java class does not define are
ignored, as Connect's ``ConfigDef`` ignores them.

At run time a transform or converter that cannot handle a record raises ``data.DataError``, as Connect's
``DataException`` kills the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from mongocdc.events.connect.data import ConnectRecord, Header, Schema


class ConnectConfigError(ValueError):
    """Connect's ``ConfigException``: an option value the class refuses (its message is Connect's)."""


class Transform(Protocol):
    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """The transformed record, or ``None`` to drop it."""
        ...


class Predicate(Protocol):
    def test(self, record: ConnectRecord) -> bool: ...


class Converter(Protocol):
    def from_connect(
        self, topic: str, schema: Schema | None, value: Any, headers: Sequence[Header] = ()
    ) -> bytes | None:
        """``fromConnectData(topic, headers, schema, value)``: the record's key or value as bytes."""
        ...


TransformFactory = Callable[[Mapping[str, str]], Transform]
PredicateFactory = Callable[[Mapping[str, str]], Predicate]
ConverterFactory = Callable[[Mapping[str, str], bool], Converter]
"""Options and ``is_key``."""


# --- reading options as Connect's ConfigDef does ----------------------------------------------------------


def invalid(name: str, value: object, reason: str) -> ConnectConfigError:
    """``ConfigException(name, value, reason)``'s message."""
    return ConnectConfigError(f"Invalid value {value} for configuration {name}: {reason}")


def option(options: Mapping[str, str], name: str, default: str | None = None, *, required: bool = False) -> str | None:
    value = options.get(name)
    if value is None:
        if required:
            raise ConnectConfigError(f'Missing required configuration "{name}" which has no default value.')
        return default
    return value.strip() if isinstance(value, str) else value


def text(options: Mapping[str, str], name: str, default: str = "") -> str:
    value = option(options, name, default)
    return "" if value is None else value


def boolean(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = option(options, name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise invalid(name, value, "Expected value to be either true or false")
    return lowered == "true"


def integer(options: Mapping[str, str], name: str, default: int) -> int:
    value = option(options, name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise invalid(name, value, "Not a number of type INT") from None


def listing(options: Mapping[str, str], name: str, default: Sequence[str] = ()) -> list[str]:
    """A ``LIST`` option: comma-separated, items trimmed, an empty value an empty list."""
    value = option(options, name)
    if value is None:
        return list(default)
    if not value.strip():
        return []
    return [item.strip() for item in value.split(",")]


def choice(options: Mapping[str, str], name: str, default: str, allowed: Sequence[str], *, case: bool = False) -> str:
    value = text(options, name, default)
    pool = allowed if case else [a.lower() for a in allowed]
    probe = value if case else value.lower()
    if probe not in pool:
        raise invalid(name, value, f"String must be one of: {', '.join(allowed)}")
    return allowed[pool.index(probe)]


# --- Java's strings and regular expressions ----------------------------------------------------------------

_JAVA_BLANKS = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """``String.trim()``: every character up to U+0020 off both ends."""
    return text.strip(_JAVA_BLANKS)


def is_blank(text: str | None) -> bool:
    """``Utils.isBlank``: null, or nothing that ``String.trim()`` leaves."""
    return text is None or not java_trim(text)


def java_split(text: str, separator: str) -> list[str]:
    """``String.split`` on a literal separator: no separator gives ``[text]``, trailing empty parts are dropped."""
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


_JAVA_NAMED_GROUP = re.compile(
    r"\\k<([A-Za-z][A-Za-z0-9]*)>|\\.|\[(?:\\.|[^\]\\])*\]|\(\?<([A-Za-z][A-Za-z0-9]*)>", re.S
)


def _python_group(match: re.Match[str]) -> str:
    if match.group(1):
        return f"(?P={match.group(1)})"
    if match.group(2):
        return f"(?P<{match.group(2)}>"
    return match.group()


def java_regex(pattern: str) -> re.Pattern[str]:
    """A ``java.util.regex.Pattern`` as Python's ``re`` reads it (the common subset, with Java's named groups
    ``(?<name>…)`` and ``\\k<name>`` spelt Python's way; ``$1`` replacements are turned into ``\\1`` by
    :func:`java_replacement`)."""
    return re.compile(_JAVA_NAMED_GROUP.sub(_python_group, pattern))


def java_replacement(replacement: str) -> str:
    """``Matcher.replaceFirst``'s replacement (``$1``, ``${name}``, ``\\$``) in ``re.sub``'s syntax."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        if ch == "$" and i + 1 < len(replacement):
            if replacement[i + 1] == "{":
                end = replacement.index("}", i)
                out.append(f"\\g<{replacement[i + 2 : end]}>")
                i = end + 1
                continue
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            if j > i + 1:
                out.append(f"\\g<{replacement[i + 1 : j]}>")
                i = j
                continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)
