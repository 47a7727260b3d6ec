"""Which databases and collections a connector captures: the namespace filters of ``Settings``."""

from __future__ import annotations

import re
from typing import Final

from mongocdc.config.properties import CaptureScope, FiltersMatchMode

SYSTEM_DATABASES: Final = frozenset({"admin", "config", "local"})
"""Never captured, whatever the filters say (as in Debezium)."""


class NamespaceFilter:
    """The capture filters of one ``Settings``, patterns compiled once.

    ``Settings.is_database_included`` and ``is_collection_included`` ask it; the scope and target
    come from ``capture.scope``/``capture.target``, the lists from the include/exclude properties
    (regular expressions matched case-insensitively against whole names, or exact names with
    ``filters.match.mode=literal``).
    """

    def __init__(
        self,
        *,
        scope: CaptureScope,
        target: str | None,
        match_mode: FiltersMatchMode,
        database_include: tuple[str, ...],
        database_exclude: tuple[str, ...],
        collection_include: tuple[str, ...],
        collection_exclude: tuple[str, ...],
    ) -> None:
        def compile_all(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
            return tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)

        def exact_all(names: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
            # filters.match.mode=literal: exact, case-sensitive names (Debezium matches them with $in)
            return tuple(re.compile(re.escape(name)) for name in names)

        build = exact_all if match_mode == "literal" else compile_all
        self._scope = scope
        self._target = target or ""
        self._target_db = self._target.partition(".")[0]
        self._db_include = build(database_include)
        self._db_exclude = build(database_exclude)
        self._coll_include = build(collection_include)
        self._coll_exclude = build(collection_exclude)

    def database(self, db: str) -> bool:
        """Whether database ``db`` is captured: not a system database, within the target, filters passed."""
        if db in SYSTEM_DATABASES:
            return False
        if self._scope != "deployment" and db != self._target_db:
            return False
        return _passes(db, self._db_include, self._db_exclude)

    def collection(self, db: str, coll: str) -> bool:
        """Whether ``db.coll`` is captured: its database is, it is not ``system.*``, it passes the filters."""
        if not self.database(db) or coll.startswith("system."):
            return False
        namespace = f"{db}.{coll}"
        if self._scope == "collection" and namespace != self._target:
            return False
        return _passes(namespace, self._coll_include, self._coll_exclude)


def _passes(name: str, include: tuple[re.Pattern[str], ...], exclude: tuple[re.Pattern[str], ...]) -> bool:
    if include:
        return any(pattern.fullmatch(name) for pattern in include)
    return not any(pattern.fullmatch(name) for pattern in exclude)
