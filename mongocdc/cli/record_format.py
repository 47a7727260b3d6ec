"""What ``topic dump`` takes from kcat: its ``-o`` start positions and its ``-f`` format strings.

``parse_offset`` reads ``--offset`` as kcat reads ``-o`` (``beginning``, ``end``, ``-N``, ``N``, and
``@TIME``/``s@TIME`` for a time); ``RecordFormat`` is a ``--format`` string compiled once and applied to each
record, producing bytes (keys and values are written as they are, never decoded and encoded again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mongocdc.cli.times import parse_time_ms
from mongocdc.errors import UsageError

if TYPE_CHECKING:  # the reader imports confluent_kafka: not for --help
    from mongocdc.kafka.reader import DumpRecord, StartAt

OFFSET_FORMS: Final = (
    "beginning, end (only new records), N (that offset in each partition), -N (the last N records of each "
    "partition) or @TIME (the first record at or after TIME; kcat's s@ too); and e@TIME, given as well, stops "
    "each partition before its first record at or after TIME"
)

FORMAT_TOKENS: Final = {
    "k": "key",
    "s": "value",
    "v": "value",
    "K": "key length in bytes (-1 for none)",
    "S": "value length in bytes (-1 for a tombstone)",
    "t": "topic",
    "p": "partition",
    "o": "offset",
    "T": "timestamp (epoch ms)",
    "h": "headers (name=value,…)",
}
"""The ``%`` tokens of a ``--format`` string: kcat's, with ``%v`` for ``%s`` (the value) as kcat's peers spell it."""

_ESCAPES: Final = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "%": b"%"}


def format_help() -> str:
    tokens = " ".join(f"%{token} {what}," for token, what in FORMAT_TOKENS.items())
    return f"Print each record as this kcat -f format string: {tokens} %% a percent sign; \\n, \\t, \\r, \\\\ escapes."


def parse_offsets(values: list[str], timestamp: str | None = None) -> StartAt:
    """Every ``--offset`` (and ``--timestamp``) as kcat reads its ``-o``s: one start position, and one
    ``e@TIME`` where to stop; a ``UsageError`` (exit 2) when there are more."""
    from dataclasses import replace

    from mongocdc.kafka.reader import StartAt

    stops = [v for v in values if v.strip().startswith("e@")]
    begins = [v for v in values if v not in stops]
    given = [f"--offset {v}" for v in begins] + ([f"--timestamp {timestamp}"] if timestamp is not None else [])
    hint = "--offset takes one start (beginning, end, N, -N, @TIME) and one stop (e@TIME); --timestamp TIME is @TIME"
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)}: give one start position", hint=hint)
    if len(stops) > 1:
        raise UsageError(f"{' and '.join(f'--offset {v}' for v in stops)}: give one stop position", hint=hint)
    if begins:
        start = parse_offset(begins[0])
    elif timestamp is not None:
        start = StartAt(timestamp_ms=parse_time_ms(timestamp, "--timestamp", bare="ms"))
    else:
        start = StartAt()
    if stops:
        start = replace(start, until_ms=parse_time_ms(stops[0].strip()[2:], "--offset e@", bare="ms"))
    return start


def parse_offset(value: str) -> StartAt:
    """One start position of ``--offset`` as kcat's ``-o``; a ``UsageError`` (exit 2) naming the forms when it
    is none of them."""
    from mongocdc.kafka.reader import StartAt

    text = value.strip()
    if text == "beginning":
        return StartAt()
    if text == "end":
        return StartAt(end=True)
    if re.fullmatch(r"-\d+", text):
        return StartAt(from_end=int(text[1:]))
    if re.fullmatch(r"\d+", text):
        return StartAt(offset=int(text))
    at = re.fullmatch(r"s?@(.+)", text)
    if at is not None:
        return StartAt(timestamp_ms=parse_time_ms(at[1], "--offset @", bare="ms"))
    raise UsageError(f"--offset {value!r} is not a start position", hint=f"give {OFFSET_FORMS}")


@dataclass(frozen=True)
class RecordFormat:
    """A compiled ``--format`` string: literal bytes and ``%`` tokens, in order."""

    parts: tuple[bytes | str, ...]

    @classmethod
    def compile(cls, text: str) -> RecordFormat:
        parts: list[bytes | str] = []
        literal = bytearray()
        i = 0
        while i < len(text):
            char = text[i]
            if char in "%\\":
                following = text[i + 1 : i + 2]
                if char == "%" and following in FORMAT_TOKENS:
                    if literal:
                        parts.append(bytes(literal))
                        literal.clear()
                    parts.append(following)
                elif char == "%" and following == "%" or char == "\\" and following in _ESCAPES:
                    literal += _ESCAPES[following] if char == "\\" else b"%"
                else:
                    what = "token" if char == "%" else "escape"
                    known = " ".join(f"%{t}" for t in FORMAT_TOKENS) + " %%" if char == "%" else "\\n \\t \\r \\\\"
                    raise UsageError(
                        f"--format {text!r}: unknown {what} {char}{following!s} at character {i + 1}",
                        hint=f"the format's {what}s are {known}; for example --format '%p:%o %k %s\\n'",
                    )
                i += 2
                continue
            literal += char.encode()
            i += 1
        if literal:
            parts.append(bytes(literal))
        return cls(tuple(parts))

    def render(self, record: DumpRecord) -> bytes:
        out = bytearray()
        for part in self.parts:
            if isinstance(part, bytes):
                out += part
            else:
                out += _field(part, record)
        return bytes(out)


def _length(data: bytes | None) -> bytes:
    return str(-1 if data is None else len(data)).encode()


def _field(token: str, record: DumpRecord) -> bytes:
    match token:
        case "k":
            return record.key or b""
        case "s" | "v":
            return record.value or b""
        case "K":
            return _length(record.key)
        case "S":
            return _length(record.value)
        case "t":
            return record.topic.encode()
        case "p":
            return str(record.partition).encode()
        case "o":
            return str(record.offset).encode()
        case "T":
            return str(-1 if record.timestamp_ms is None else record.timestamp_ms).encode()
        case _:  # "h"
            return b",".join(name.encode() + b"=" + (value or b"") for name, value in record.headers)
