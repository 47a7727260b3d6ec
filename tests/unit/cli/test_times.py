"""The one parser of the times operators type, and ``topic dump``'s kcat forms (``--offset``, ``--format``)."""

from __future__ import annotations

import pytest

from mongocdc.cli.record_format import RecordFormat, parse_offset, parse_offsets
from mongocdc.cli.times import parse_time_ms
from mongocdc.errors import ExitCode, UsageError
from mongocdc.kafka.reader import DumpRecord, StartAt


@pytest.mark.parametrize(
    ("text", "bare", "ms"),
    [
        ("2026-11-26T10:00:00Z", "s", 1_795_687_200_000),
        ("2026-11-26T11:00:00+01:00", "ms", 1_795_687_200_000),
        ("2026-11-26T10:00:00", "s", 1_795_687_200_000),  # no offset: UTC
        ("2026-11-26T10:00:00.123999Z", "s", 1_795_687_200_123),  # whole milliseconds, never after the time
        ("1795687200s", "ms", 1_795_687_200_000),
        ("1795687200.5s", "ms", 1_795_687_200_500),
        ("1795687200000ms", "s", 1_795_687_200_000),
        ("1795687200", "s", 1_795_687_200_000),  # a bare number: the option's own unit
        ("1795687200000", "ms", 1_795_687_200_000),
        (" 1795687200s ", "s", 1_795_687_200_000),
    ],
)
def test_times_are_iso_8601_or_numbers_with_their_unit(text: str, bare: str, ms: int) -> None:
    assert parse_time_ms(text, "--at", bare=bare) == ms  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["yesterday", "", "1795687200 s", "1795687200.5ms", "10m", "-5s"])
def test_anything_else_is_a_usage_error_naming_the_forms(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_time_ms(text, "--at", bare="ms")
    assert raised.value.exit_code == ExitCode.USAGE
    assert f"--at {text!r} is not a time" in raised.value.message
    assert "ISO 8601 (--at 2026-11-26T10:00:00Z)" in (raised.value.hint or "")
    assert "a bare number of epoch milliseconds" in (raised.value.hint or "")


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("beginning", StartAt()),
        ("end", StartAt(end=True)),
        ("42", StartAt(offset=42)),
        ("-3", StartAt(from_end=3)),
        ("@1795687200000", StartAt(timestamp_ms=1_795_687_200_000)),
        ("s@2026-11-26T10:00:00Z", StartAt(timestamp_ms=1_795_687_200_000)),
        ("@1795687200s", StartAt(timestamp_ms=1_795_687_200_000)),
    ],
)
def test_offsets_are_kcats(text: str, start: StartAt) -> None:
    assert parse_offset(text) == start


def test_one_start_and_one_stop_as_kcats_two_o() -> None:
    assert parse_offsets(["@1s", "e@2s"]) == StartAt(timestamp_ms=1000, until_ms=2000)
    assert parse_offsets(["e@2s"], timestamp="1000") == StartAt(timestamp_ms=1000, until_ms=2000)
    assert parse_offsets(["-4"]) == StartAt(from_end=4)
    assert parse_offsets([]) == StartAt()
    with pytest.raises(UsageError, match="--offset 1 and --offset end: give one start position"):
        parse_offsets(["1", "end"])


def test_a_format_renders_bytes_as_they_are() -> None:
    record = DumpRecord("t", 1, 7, 1000, b"k\xff", b'{"a" : 1}', (("h", b"v"), ("n", None)))
    tombstone = DumpRecord("t", 0, 8, None, None, None, ())
    fmt = RecordFormat.compile("%t/%p/%o/%T %k(%K) %s(%S) [%h] %v%%\\t\\\\\\n")
    assert fmt.render(record) == b't/1/7/1000 k\xff(2) {"a" : 1}(9) [h=v,n=] {"a" : 1}%\t\\\n'
    assert fmt.render(tombstone) == b"t/0/8/-1 (-1) (-1) [] %\t\\\n"
    with pytest.raises(UsageError, match="unknown token %q at character 3"):
        RecordFormat.compile("%k%q")
    with pytest.raises(UsageError, match="unknown token % at character 3"):
        RecordFormat.compile("%k%")
