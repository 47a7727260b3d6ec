"""The one parser of the times an operator types (``offsets reset --to-timestamp``, ``topic dump --timestamp``,
``topic dump --offset @TIME``).

Every command that takes a time takes the same forms: ISO 8601 (``2026-11-26T10:00:00Z``; UTC when it has no
offset), or a number with its unit (``1795687200s``, ``1795687200000ms``). A bare number keeps the meaning it
had before units existed, which differs by command (``--to-timestamp`` seconds, ``--timestamp`` milliseconds,
as Kafka's tools take them), so each command says its ``bare`` unit and documents it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final, Literal

from mongocdc.errors import UsageError

Unit = Literal["s", "ms"]

_NUMBER: Final = re.compile(r"(?P<number>\d+(?:\.\d+)?)(?P<unit>s|ms)?")

TIME_FORMS: Final = (
    "ISO 8601 (2026-11-26T10:00:00Z, UTC when no offset is given) "
    "or epoch time with a unit (1795687200s, 1795687200000ms)"
)
"""The forms every time option takes, for its help text."""


def time_help(bare: Unit) -> str:
    """What a time option's help says about the forms it takes and its bare numbers."""
    unit = "seconds" if bare == "s" else "milliseconds"
    return f"{TIME_FORMS}; a bare number is epoch {unit}"


def parse_time_ms(value: str, option: str, *, bare: Unit) -> int:
    """Epoch milliseconds of ``value`` as the operator typed it for ``option``; a ``UsageError`` (exit 2)
    saying which forms are expected when it is none of them."""
    text = value.strip()
    number = _NUMBER.fullmatch(text)
    if number is not None:
        unit = number["unit"] or bare
        digits = number["number"]
        if unit == "ms":
            if "." in digits:
                raise _bad(value, option, bare, "milliseconds are whole numbers")
            return int(digits)
        whole, _, fraction = digits.partition(".")
        return int(whole) * 1000 + int((fraction + "000")[:3])
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise _bad(value, option, bare) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    # whole milliseconds, rounded down: never after the time asked for
    return int(parsed.replace(microsecond=0).timestamp()) * 1000 + parsed.microsecond // 1000


def _bad(value: str, option: str, bare: Unit, why: str | None = None) -> UsageError:
    unit = "seconds" if bare == "s" else "milliseconds"
    reason = f": {why}" if why else ""
    return UsageError(
        f"{option} {value!r} is not a time{reason}",
        hint=(
            f"give ISO 8601 ({option} 2026-11-26T10:00:00Z), epoch seconds with s ({option} 1795687200s), "
            f"epoch milliseconds with ms ({option} 1795687200000ms), or a bare number of epoch {unit}"
        ),
    )
