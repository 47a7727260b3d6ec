"""Replica sets are spread over at most tasks.max tasks, and a new shard never moves existing ones."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocdc.engine import assignment
from mongocdc.engine.assignment import add, assign

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
replica_set_lists = st.lists(names, unique=True, max_size=40)
tasks_maxes = st.integers(min_value=1, max_value=50)


def sizes(groups: list[tuple[str, ...]]) -> list[int]:
    return [len(group) for group in groups]


def is_balanced(groups: list[tuple[str, ...]]) -> bool:
    return not groups or max(sizes(groups)) - min(sizes(groups)) <= 1


def flatten(groups: list[tuple[str, ...]]) -> list[str]:
    return [name for group in groups for name in group]


def test_like_kafka_connect_group_partitions() -> None:
    # ConnectorUtils.groupPartitions: contiguous groups of the sorted list, larger groups first.
    assert assign(["rs4", "rs1", "rs3", "rs0", "rs2"], 2) == [("rs0", "rs1", "rs2"), ("rs3", "rs4")]
    assert assign(["rs1", "rs0"], 5) == [("rs0",), ("rs1",)]
    assert assign(["c", "a", "b"], 1) == [("a", "b", "c")]
    assert assign([], 3) == []


def test_rejects_duplicates_and_tasks_max_below_one() -> None:
    with pytest.raises(ValueError, match="repeated: rs0"):
        assign(["rs0", "rs1", "rs0"], 2)
    with pytest.raises(ValueError, match="at least 1"):
        assign(["rs0"], 0)
    with pytest.raises(ValueError, match="at least 1"):
        add([("rs0",)], "rs1", 0)


def test_add_opens_a_task_while_below_tasks_max_then_fills_the_smallest() -> None:
    groups = assign(["rs0", "rs1"], 3)
    groups = add(groups, "rs2", 3)
    assert groups == [("rs0",), ("rs1",), ("rs2",)]
    groups = add(groups, "rs3", 3)
    assert groups == [("rs0", "rs3"), ("rs1",), ("rs2",)]
    groups = add(groups, "a-first", 3)
    assert groups == [("rs0", "rs3"), ("a-first", "rs1"), ("rs2",)]


def test_add_of_a_known_replica_set_changes_nothing() -> None:
    groups = assign(["rs0", "rs1", "rs2"], 2)
    assert add(groups, "rs1", 2) == groups


@given(replica_set_lists, tasks_maxes)
def test_assign_covers_every_replica_set_once_in_balanced_non_empty_tasks(rs: list[str], tasks_max: int) -> None:
    groups = assign(rs, tasks_max)
    assert sorted(flatten(groups)) == sorted(rs)
    assert len(groups) == min(tasks_max, len(rs))
    assert all(groups), "no empty task"
    assert is_balanced(groups)
    assert sizes(groups) == sorted(sizes(groups), reverse=True)


@given(replica_set_lists, tasks_maxes, st.randoms())
def test_assign_is_deterministic_and_sorted(rs: list[str], tasks_max: int, random: Random) -> None:
    shuffled = list(rs)
    random.shuffle(shuffled)
    groups = assign(rs, tasks_max)
    assert assign(shuffled, tasks_max) == groups
    assert flatten(groups) == sorted(rs)


@given(replica_set_lists, tasks_maxes, st.lists(names, max_size=20))
def test_add_never_moves_a_placed_replica_set_and_keeps_balance(
    initial: list[str], tasks_max: int, joining: list[str]
) -> None:
    groups = assign(initial, tasks_max)
    placed = {name: index for index, group in enumerate(groups) for name in group}
    for new_rs in joining:
        groups = add(groups, new_rs, tasks_max)
        for name, index in placed.items():
            assert name in groups[index], f"{name} moved away from task {index}"
        placed.setdefault(new_rs, next(i for i, group in enumerate(groups) if new_rs in group))
        assert is_balanced(groups)
        assert len(groups) <= tasks_max
        assert all(group == tuple(sorted(group)) for group in groups)
    assert sorted(flatten(groups)) == sorted(set(initial) | set(joining))


@given(st.lists(names, unique=True, max_size=30), tasks_maxes)
def test_adding_one_by_one_from_nothing_matches_the_task_count_of_assign(rs: list[str], tasks_max: int) -> None:
    groups: list[tuple[str, ...]] = []
    for name in rs:
        groups = add(groups, name, tasks_max)
    assert len(groups) == len(assign(rs, tasks_max))
    assert sorted(sizes(groups)) == sorted(sizes(assign(rs, tasks_max)))


def test_assignment_is_pure() -> None:
    tree = ast.parse(Path(assignment.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names} | {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert {name.split(".")[0] for name in imported} <= set(sys.stdlib_module_names) | {"__future__"}
