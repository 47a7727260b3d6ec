"""Comma-separated pattern lists: Debezium's splitting and its inverse."""

from __future__ import annotations

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from mongocdc.config.values import join_patterns, split_patterns


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
