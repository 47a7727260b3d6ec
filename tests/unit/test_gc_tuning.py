"""The copy loop's cyclic-GC threshold: raised while any loop runs, restored when the last one ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from mongocdc.gc_tuning import YOUNG_GC_THRESHOLD, fewer_young_collections


@pytest.fixture
def default_threshold() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*saved)


def test_raised_inside_and_restored_after(default_threshold: tuple[int, int, int]) -> None:
    with fewer_young_collections():
        assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, 10, 10)
    assert gc.get_threshold() == default_threshold


def test_overlapping_loops_restore_only_when_the_last_ends(default_threshold: tuple[int, int, int]) -> None:
    first, second = fewer_young_collections(), fewer_young_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first loop ends while the second still runs
    assert gc.get_threshold()[0] == YOUNG_GC_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == default_threshold


def test_restored_when_the_loop_fails(default_threshold: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), fewer_young_collections():
        raise RuntimeError("copy failed")
    assert gc.get_threshold() == default_threshold


def test_a_disabled_or_higher_threshold_is_left_alone() -> None:
    saved = gc.get_threshold()
    try:
        for threshold in ((0, 10, 10), (50_000, 10, 10)):
            gc.set_threshold(*threshold)
            with fewer_young_collections():
                assert gc.get_threshold() == threshold
    finally:
        gc.set_threshold(*saved)
