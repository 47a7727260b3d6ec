"""``did_you_mean``: the closest known name to a misspelt one, for error messages."""

from __future__ import annotations

import re
from collections.abc import Iterable


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``candidates`` when it is a likely misspelling, or ``""``.

    Names are compared in lower case with ``_``, ``-`` and ``.`` alike. A
    candidate is close when a few edits (insertions, deletions, substitutions,
    swaps of neighbours: 1 for names under 8 characters, 2 under 16, else 3)
    turn one into the other, when it has the same words in another order, or
    when it is the name under a prefix (``bootstrap.servers`` →
    ``kafka.bootstrap.servers``). A name that is merely about the same subject
    (``errors.tolerance``) gets no suggestion.
    """
    wanted = _normalize(name)
    limit = 1 if len(wanted) < 8 else 2 if len(wanted) < 16 else 3
    unique = list(dict.fromkeys(candidates))
    under_prefix = _under_one_prefix(wanted, unique)
    best: tuple[int, str] | None = None
    for candidate in unique:
        other = _normalize(candidate)
        if sorted(other.split(".")) == sorted(wanted.split(".")):
            distance = 1
        elif candidate == under_prefix:
            distance = limit  # the same name under a prefix: bootstrap.servers → kafka.bootstrap.servers
        else:
            if abs(len(other) - len(wanted)) > limit:
                continue
            distance = _edit_distance(wanted, other, limit)
        if distance <= limit and (best is None or distance < best[0]):
            best = (distance, candidate)
    return f"; did you mean {best[1]!r}?" if best else ""


def _under_one_prefix(wanted: str, candidates: list[str]) -> str | None:
    """The candidate that is ``wanted`` under the fewest prefix words, when exactly one is (else ``None``)."""
    if "." not in wanted:
        return None
    matches = [(_normalize(c).count("."), c) for c in candidates if _normalize(c).endswith("." + wanted)]
    if not matches:
        return None
    fewest = min(depth for depth, _ in matches)
    shortest = [c for depth, c in matches if depth == fewest]
    return shortest[0] if len(shortest) == 1 else None


def _normalize(name: str) -> str:
    return re.sub(r"[._\-]+", ".", name.lower())


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance of ``a`` and ``b`` (``limit + 1`` once it is certainly above ``limit``)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[len(b)]
