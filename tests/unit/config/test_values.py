"""Value types: Debezium's pattern-list splitting and its inverse, plain lists, flag sets, bounded ints."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mongocdc.config.values import (
    CommaListType,
    FlagSetType,
    IntType,
    InvalidValueError,
    join_patterns,
    split_patterns,
)


def test_split_like_debezium() -> None:
    assert split_patterns("a, b ,,c") == ("a", "b", "c")
    assert split_patterns(r"a\,b,c") == ("a,b", "c")
    assert split_patterns(r"a\.b,c\\,d") == (r"a\.b", "c\\\\", "d")
    assert split_patterns("") == ()
    assert split_patterns(" , ") == ()


def test_join_escapes_commas() -> None:
    assert join_patterns(("a,b", r"c\.d")) == r"a\,b,c\.d"
    assert join_patterns(()) == ""


@given(st.lists(st.text(alphabet="ab,\\. ", min_size=1, max_size=8), max_size=5))
def test_split_of_join_is_identity_on_valid_patterns(parts: list[str]) -> None:
    canonical = split_patterns(",".join(parts))
    assume(all(_compiles(pattern) for pattern in canonical))  # a lone trailing "\\" is refused anyway
    assert split_patterns(join_patterns(canonical)) == canonical


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def test_comma_list_splits_strips_dedupes_and_checks_each_item() -> None:
    items = CommaListType("<word>", lambda item: "has a digit" if any(c.isdigit() for c in item) else None)
    assert items.parse(" a, b,,a ") == ("a", "b")
    assert items.parse(["b", " a "]) == ("b", "a")
    assert items.parse(()) == ()
    assert items.render(("a", "b")) == "a,b"
    with pytest.raises(InvalidValueError, match="'x1': has a digit; expected a comma-separated list of <word>"):
        items.parse("a,x1")
    with pytest.raises(InvalidValueError, match="or a YAML list of them"):
        items.parse(5)


@given(st.lists(st.text(st.characters(blacklist_characters=",", blacklist_categories=("Cs",)), max_size=6)))
def test_comma_list_render_reads_back(raw: list[str]) -> None:
    items = CommaListType("<text>")
    value = items.parse(raw)
    assert items.parse(items.render(value)) == value


def test_flag_set_orders_flags_and_knows_none() -> None:
    flags = FlagSetType(("c", "u", "d", "t"))
    assert flags.parse("t,C") == ("c", "t")
    assert flags.parse("none") == ()
    assert flags.parse(["d"]) == ("d",)
    assert flags.render(()) == "none"
    assert flags.render(("c", "t")) == "c,t"
    for bad, reason in [("x", "unknown value 'x'"), ("none,c", "cannot be combined"), ("", "write none")]:
        with pytest.raises(InvalidValueError, match=reason):
            flags.parse(bad)


def test_int_with_a_maximum_or_a_custom_description() -> None:
    port = IntType(minimum=0, maximum=10)
    assert port.parse("10") == 10
    with pytest.raises(InvalidValueError, match="expected a whole number from 0 to 10"):
        port.parse(11)
    custom = IntType(minimum=-5, accepted="-1 or more")
    with pytest.raises(InvalidValueError, match="expected -1 or more"):
        custom.parse("x")
