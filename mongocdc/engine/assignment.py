"""Which task streams which shard replica set (``mongodb.connection.mode=replica_set``).

Each shard of a sharded cluster is a replica set with its own oplog, so mongocdc
opens one change stream per replica set. As the Debezium MongoDB connector
documents, the connector tries to give each replica set its own task;
``tasks.max`` bounds the number of tasks, and when there are fewer tasks than
replica sets, a task takes several of them (each still streamed on its own
thread, with its own offsets under the replica set's name).

:func:`assign` makes the initial grouping the way Kafka Connect's
``ConnectorUtils.groupPartitions`` (which Debezium uses) does: the replica
sets sorted by name and cut into ``min(tasks_max, len(replica_sets))``
contiguous groups whose sizes differ by at most one, the larger groups first.
:func:`add` places a shard that joins the cluster later without moving any
replica set already assigned: a replica set's offsets and its running stream
stay where they are.

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence

Assignment = list[tuple[str, ...]]
"""Task ``i`` streams the replica sets in ``assignment[i]`` (sorted by name)."""


def _check_tasks_max(tasks_max: int) -> None:
    if tasks_max < 1:
        raise ValueError(f"tasks.max must be at least 1, got {tasks_max}")


def assign(replica_sets: Sequence[str], tasks_max: int) -> Assignment:
    """Group ``replica_sets`` into at most ``tasks_max`` tasks.

    Deterministic (the order of ``replica_sets`` does not matter), balanced (task
    sizes differ by at most one), never more tasks than replica sets and never an
    empty task. Raises ``ValueError`` for a duplicate name or ``tasks_max < 1``.
    """
    _check_tasks_max(tasks_max)
    names = sorted(replica_sets)
    duplicates = sorted({name for i, name in enumerate(names) if i and names[i - 1] == name})
    if duplicates:
        raise ValueError(f"replica set names must be unique, repeated: {', '.join(duplicates)}")
    if not names:
        return []
    tasks = min(tasks_max, len(names))
    size, larger = divmod(len(names), tasks)
    groups: Assignment = []
    start = 0
    for index in range(tasks):
        end = start + size + (1 if index < larger else 0)
        groups.append(tuple(names[start:end]))
        start = end
    return groups


def add(assignment: Sequence[tuple[str, ...]], new_rs: str, tasks_max: int) -> Assignment:
    """``assignment`` with ``new_rs`` placed, without moving any replica set already there.

    A replica set already assigned leaves the assignment unchanged. While there
    are fewer tasks than ``tasks_max``, the new replica set gets a task of its own
    (appended, so existing task numbers keep their meaning); otherwise it joins
    the smallest task (the first of equal ones). Starting from :func:`assign`
    with the same ``tasks_max``, any sequence of ``add`` calls keeps the tasks
    balanced (sizes differ by at most one). An assignment made with a larger
    ``tasks_max`` than the current one is not shrunk: that would move streams;
    compute a fresh :func:`assign` on restart instead.
    """
    _check_tasks_max(tasks_max)
    groups = [tuple(group) for group in assignment]
    if any(new_rs in group for group in groups):
        return groups
    if len(groups) < tasks_max:
        groups.append((new_rs,))
        return groups
    smallest = min(range(len(groups)), key=lambda index: (len(groups[index]), index))
    groups[smallest] = tuple(sorted((*groups[smallest], new_rs)))
    return groups
