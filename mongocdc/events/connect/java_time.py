"""``java.util``'s calendar and ``java.text.SimpleDateFormat`` in UTC and English, as a Kafka Connect worker whose JVM
runs in UTC (pure; JDK 17).

``GregorianCalendar`` is hybrid: Julian before 1582-10-15 (the cutover), Gregorian from it, so 0001-01-01 of
the proleptic Gregorian calendar (Python's first day) is 0001-01-03 to Java. :class:`DateFormat` formats an
instant and parses a text leniently, as ``SimpleDateFormat`` does (TimestampRouter, TimestampConverter,
``Values.dateFormatFor``, CloudEvents' ``time``); :func:`date_to_string` is ``java.util.Date.toString``.

Known limits: parsing knows the zone names ``UTC`` and ``GMT`` only and ignores the week-based fields.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from mongocdc.events.connect.java_lang import saturate, wrap

MILLIS_PER_DAY: Final = 86_400_000

# --- the calendar: java.util.GregorianCalendar in UTC -----------------------------------------------------------

_CUTOVER_DAY: Final = -141_427
"""1582-10-15, the first Gregorian day, in days since 1970-01-01 (before it the calendar is Julian)."""
_EPOCH_JDN: Final = 2_440_588


def _gregorian_jdn(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045


def _julian_jdn(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083


def _civil_from_jdn(jdn: int, gregorian: bool) -> tuple[int, int, int]:
    if gregorian:
        a = jdn + 32044
        b = (4 * a + 3) // 146097
        c = a - 146097 * b // 4
    else:
        b = 0
        c = jdn + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = 100 * b + d - 4800 + m // 10
    return year, month, day


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a (lenient: any month or day) date in the hybrid calendar; ``year`` is proleptic
    (0 is 1 BC)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    days = _gregorian_jdn(year, month, 1) - _EPOCH_JDN + day - 1
    if days < _CUTOVER_DAY:
        days = _julian_jdn(year, month, 1) - _EPOCH_JDN + day - 1
    return days


@dataclass(frozen=True, slots=True)
class _Fields:
    """A UTC instant's calendar fields (``GregorianCalendar``): the proleptic ``year`` (0 is 1 BC)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    milli: int
    weekday: int
    """1 = Sunday … 7 = Saturday (``Calendar.DAY_OF_WEEK``)."""
    day_of_year: int


def _fields(millis: int) -> _Fields:
    days, in_day = divmod(millis, MILLIS_PER_DAY)
    gregorian = days >= _CUTOVER_DAY
    year, month, day = _civil_from_jdn(days + _EPOCH_JDN, gregorian)
    first = _days_from_civil(year, 1, 1)
    return _Fields(
        year,
        month,
        day,
        in_day // 3_600_000,
        in_day // 60_000 % 60,
        in_day // 1000 % 60,
        in_day % 1000,
        (days + 4) % 7 + 1,
        days - first + 1,
    )


def _week_of_year(f: _Fields) -> tuple[int, int]:
    """``WEEK_OF_YEAR`` and the week year, weeks starting on Sunday, the week of 1 January the first."""
    next_first = _days_from_civil(f.year + 1, 1, 1)
    days = _days_from_civil(f.year, f.month, f.day)
    if days >= next_first - (next_first + 4) % 7:
        return 1, f.year + 1
    jan1_weekday = (_days_from_civil(f.year, 1, 1) + 4) % 7
    return (f.day_of_year - 1 + jan1_weekday) // 7 + 1, f.year


# --- java.text.SimpleDateFormat (UTC, English) ------------------------------------------------------------------

_PATTERN_LETTERS: Final = "GyMdkHmsSEDFwWahKzZYuXL"
_NUMERIC_LETTERS: Final = "ydkHmsSDFwWhKuY"
_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS: Final = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


class DateFormat:
    """``java.text.SimpleDateFormat`` of a pattern, in UTC and English (the JVM's ``en`` default): ``format`` and
    lenient ``parse``, as TimestampRouter, TimestampConverter and ``Values`` use it. ``ValueError`` for a pattern
    Java refuses (``IllegalArgumentException``)."""

    __slots__ = ("pattern", "_items")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._items = self._compile(pattern)

    @staticmethod
    def _compile(pattern: str) -> list[tuple[str, int] | str]:
        items: list[tuple[str, int] | str] = []

        def literal(chunk: str) -> None:
            if items and isinstance(items[-1], str):
                items[-1] += chunk
            else:
                items.append(chunk)

        i = 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "'":
                if i + 1 < len(pattern) and pattern[i + 1] == "'":
                    literal("'")
                    i += 2
                    continue
                j = i + 1
                quoted: list[str] = []
                while True:
                    if j >= len(pattern):
                        raise ValueError("Unterminated quote")
                    if pattern[j] == "'":
                        if j + 1 < len(pattern) and pattern[j + 1] == "'":
                            quoted.append("'")
                            j += 2
                            continue
                        break
                    quoted.append(pattern[j])
                    j += 1
                literal("".join(quoted))
                i = j + 1
            elif ("a" <= ch <= "z") or ("A" <= ch <= "Z"):
                if ch not in _PATTERN_LETTERS:
                    raise ValueError(f"Illegal pattern character '{ch}'")
                j = i
                while j < len(pattern) and pattern[j] == ch:
                    j += 1
                if ch == "X" and j - i > 3:
                    raise ValueError(f"invalid ISO 8601 format: length={j - i}")
                items.append((ch, j - i))
                i = j
            else:
                literal(ch)
                i += 1
        return items

    # formatting

    def format(self, millis: int) -> str:
        f = _fields(millis)
        out: list[str] = []
        for item in self._items:
            if isinstance(item, str):
                out.append(item)
            else:
                out.append(self._field_text(f, *item))
        return "".join(out)

    @staticmethod
    def _field_text(f: _Fields, letter: str, count: int) -> str:
        year_of_era = f.year if f.year > 0 else 1 - f.year
        if letter == "G":
            return "AD" if f.year > 0 else "BC"
        if letter in "yY":
            year = year_of_era
            if letter == "Y":
                week_year = _week_of_year(f)[1]
                year = week_year if week_year > 0 else 1 - week_year
            if count == 2:
                return f"{year % 100:02d}"
            return f"{year:0{count}d}"
        if letter in "ML":
            if count >= 4:
                return _MONTHS[f.month - 1]
            if count == 3:
                return _MONTHS[f.month - 1][:3]
            return f"{f.month:0{count}d}"
        if letter == "E":
            name = _WEEKDAYS[f.weekday - 1]
            return name if count >= 4 else name[:3]
        if letter == "a":
            return "AM" if f.hour < 12 else "PM"
        if letter == "z":
            return "Coordinated Universal Time" if count >= 4 else "UTC"
        if letter == "Z":
            return "+0000"
        if letter == "X":
            return "Z"
        number = {
            "d": f.day,
            "H": f.hour,
            "k": f.hour or 24,
            "K": f.hour % 12,
            "h": f.hour % 12 or 12,
            "m": f.minute,
            "s": f.second,
            "S": f.milli,
            "D": f.day_of_year,
            "F": (f.day - 1) // 7 + 1,
            "u": (f.weekday + 5) % 7 + 1,
            "w": _week_of_year(f)[0],
            "W": (f.day - 1 + (f.weekday - 1 - (f.day - 1)) % 7) // 7 + 1,
        }[letter]
        return f"{number:0{count}d}"

    # parsing

    def parse(self, source: str) -> int | None:
        """The instant ``source`` starts with (``parse(String)``: trailing text is ignored), or ``None``."""
        values: dict[str, int] = {}
        order: list[str] = []
        ambiguous = False
        position = 0

        def put(name: str, value: int) -> None:
            values[name] = value
            if name in order:
                order.remove(name)
            order.append(name)

        for index, item in enumerate(self._items):
            if isinstance(item, str):
                if source[position : position + len(item)] != item:
                    return None
                position += len(item)
                continue
            letter, count = item
            following = self._items[index + 1] if index + 1 < len(self._items) else None
            obey = isinstance(following, tuple) and (
                following[0] in _NUMERIC_LETTERS or (following[0] in "ML" and following[1] <= 2)
            )
            minus_next = isinstance(following, str) and following.startswith("-")
            parsed = self._parse_field(source, position, letter, count, obey, minus_next, put)
            if parsed is None:
                return None
            position, flag = parsed
            ambiguous = ambiguous or flag
        if position == 0:
            return None
        return self._instant(values, order, ambiguous)

    def _parse_field(
        self,
        source: str,
        start: int,
        letter: str,
        count: int,
        obey: bool,
        minus_next: bool,
        put: Callable[[str, int], None],
    ) -> tuple[int, bool] | None:
        position = start
        while True:
            if position >= len(source):
                return None
            if source[position] not in " \t":
                break
            position += 1
        actual_start = position
        if letter in _NUMERIC_LETTERS or (letter in "ML" and count <= 2):
            limit = start + count if obey else len(source)
            if obey and limit > len(source):
                return None
            number = _parse_number(source[:limit], position)
            if number is None:
                return None
            value, position = number
            if (
                minus_next
                and value < 0
                and (
                    (position < len(source) and source[position] != "-")
                    or (position == len(source) and source[position - 1] == "-")
                )
            ):
                value, position = -value, position - 1
            if letter in "yY":
                ambiguous = False
                if count <= 2 and position - actual_start == 2 and source[actual_start:position].isdigit():
                    century_start = _century_start_year()
                    ambiguous = value == century_start % 100
                    value += century_start // 100 * 100 + (100 if value < century_start % 100 else 0)
                put("year", value)
                return position, ambiguous
            field, adjusted = {
                "M": ("month", value - 1),
                "L": ("month", value - 1),
                "d": ("day", value),
                "H": ("hour", value),
                "k": ("hour", 0 if value == 24 else value),
                "K": ("hour12", value),
                "h": ("hour12", 0 if value == 12 else value),
                "m": ("minute", value),
                "s": ("second", value),
                "S": ("milli", value),
                "D": ("day_of_year", value),
            }.get(letter, ("ignored", value))
            put(field, adjusted)
            return position, False
        if letter in "ML":
            found = _match_name(source, position, _MONTHS) or _match_name(source, position, [m[:3] for m in _MONTHS])
            if found is None:
                return None
            put("month", found[0])
            return found[1], False
        if letter == "E":
            found = _match_name(source, position, _WEEKDAYS) or _match_name(
                source, position, [d[:3] for d in _WEEKDAYS]
            )
            return None if found is None else (found[1], False)
        if letter == "a":
            found = _match_name(source, position, ["AM", "PM"])
            if found is None:
                return None
            put("am_pm", found[0])
            return found[1], False
        if letter == "G":
            found = _match_name(source, position, ["BC", "AD"])
            if found is None:
                return None
            put("era", found[0])
            return found[1], False
        zone = _parse_zone(source, position, letter, count)
        if zone is None:
            return None
        put("offset", zone[0])
        return zone[1], False

    @staticmethod
    def _instant(values: Mapping[str, int], order: Sequence[str], ambiguous: bool) -> int:
        year = values.get("year", 1970)
        if values.get("era", 1) == 0:
            year = 1 - year
        if "day_of_year" in values and order.index("day_of_year") > max(
            (order.index(k) for k in ("month", "day") if k in values), default=-1
        ):
            days = _days_from_civil(year, 1, 1) + values["day_of_year"] - 1
        else:
            days = _days_from_civil(year, values.get("month", 0) + 1, values.get("day", 1))
        hour = values.get("hour", 0)
        if "hour12" in values and (
            "hour" not in values or order.index("hour12") > order.index("hour") or "am_pm" in values
        ):
            hour = values["hour12"] + 12 * values.get("am_pm", 0)
        millis = (
            days * MILLIS_PER_DAY
            + hour * 3_600_000
            + values.get("minute", 0) * 60_000
            + values.get("second", 0) * 1000
            + values.get("milli", 0)
            - values.get("offset", 0)
        )
        if ambiguous and millis < _century_start_millis():
            shifted = dict(values)
            shifted["year"] = values["year"] + 100
            return DateFormat._instant(shifted, order, False)
        return millis


def _century_start_millis() -> int:
    """``SimpleDateFormat``'s default century: two-digit years fall within 80 years before and 20 after now."""
    now = int(time.time() * 1000)
    f = _fields(now)
    return (_days_from_civil(f.year - 80, f.month, f.day)) * MILLIS_PER_DAY + now % MILLIS_PER_DAY


def _century_start_year() -> int:
    return _fields(_century_start_millis()).year


def _parse_number(source: str, position: int) -> tuple[int, int] | None:
    """``DecimalFormat.parse`` as SimpleDateFormat configures it (integers only, no grouping, a leading ``-``)."""
    negative = source.startswith("-", position)
    index = position + 1 if negative else position
    start = index
    while index < len(source) and unicodedata.category(source[index]) == "Nd":
        index += 1
    if index == start:
        return None
    number = int("".join(str(unicodedata.digit(ch)) for ch in source[start:index]))
    if source.startswith("E", index):
        exponent_at = index + 1
        minus = source.startswith("-", exponent_at)
        digits_at = exponent_at + 1 if minus else exponent_at
        end = digits_at
        while end < len(source) and source[end].isdigit():
            end += 1
        if end > digits_at:
            exponent = int(source[digits_at:end])
            number = number // 10**exponent if minus else number * 10**exponent
            index = end
    number = -number if negative else number
    value = wrap(number, 32) if -(2**63) <= number < 2**63 else saturate(float(number), 32)
    return value, index


def _match_name(source: str, position: int, names: Sequence[str]) -> tuple[int, int] | None:
    """``SimpleDateFormat.matchString``: the longest name ``source`` has at ``position``, ignoring case."""
    best: tuple[int, int] | None = None
    for index, name in enumerate(names):
        matches = bool(name) and source[position : position + len(name)].lower() == name.lower()
        if matches and (best is None or len(name) > best[1] - position):
            best = (index, position + len(name))
    return best


def _parse_zone(source: str, position: int, letter: str, count: int) -> tuple[int, int] | None:
    """A zone offset in millis and the position after it (``z``, ``Z``: ``+hhmm``, ``GMT+hh:mm``, ``UTC``; ``X``:
    ``Z`` or ``+hh``, ``+hhmm``, ``+hh:mm`` by count)."""
    ch = source[position]
    if letter == "X":
        if ch == "Z":
            return 0, position + 1
        if ch not in "+-":
            return None
        return _numeric_zone(source, position + 1, 1 if ch == "+" else -1, count, count == 3)
    if ch in "+-":
        return _numeric_zone(source, position + 1, 1 if ch == "+" else -1, 0, False)
    if source[position : position + 3].upper() == "GMT":
        after = position + 3
        if after < len(source) and source[after] in "+-":
            return _numeric_zone(source, after + 1, 1 if source[after] == "+" else -1, 0, True)
        return 0, after
    found = _match_name(source, position, ["Coordinated Universal Time", "UTC", "Greenwich Mean Time"])
    return None if found is None else (0, found[1])


def _numeric_zone(source: str, index: int, sign: int, count: int, colon: bool) -> tuple[int, int] | None:
    """``SimpleDateFormat.subParseNumericZone``."""

    def at(i: int) -> str:
        return source[i] if i < len(source) else ""

    if not at(index).isdigit():
        return None
    hours = int(at(index))
    index += 1
    if at(index).isdigit():
        hours = hours * 10 + int(at(index))
        index += 1
    elif count > 0 or not colon:
        return None
    if hours > 23:
        return None
    minutes = 0
    if count != 1:
        if colon:
            if at(index) != ":":
                return None
            index += 1
        if not (at(index).isdigit() and at(index + 1).isdigit()):
            return None
        minutes = int(source[index : index + 2])
        index += 2
        if minutes > 59:
            return None
    return sign * (hours * 60 + minutes) * 60_000, index


_DATE_TO_STRING: Final = DateFormat("EEE MMM dd HH:mm:ss zzz y")


def date_to_string(millis: int) -> str:
    """``java.util.Date.toString`` in a JVM whose default time zone is UTC: ``Thu Jan 01 00:00:00 UTC 1970``."""
    return _DATE_TO_STRING.format(millis)


__all__ = ["MILLIS_PER_DAY", "DateFormat", "date_to_string"]
