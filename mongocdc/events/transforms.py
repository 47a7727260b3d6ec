"""Field exclusions and renames (``field.exclude.list``, ``field.renames``) and skipped operations.

Pure: standard library and ``bson``-free values only. The semantics are
Debezium's MongoDB ``FieldSelector``:

- A rule is ``<database>.<collection>.<field>[.<nested>…]`` (a rename adds
  ``:<new name>``, which replaces the last node). ``*`` in the database or
  collection part matches any characters; namespaces match without regard
  to case, field names exactly.
- All exclusions apply first, then the renames in the order given, each to
  the result of the previous one (so a later rename names a field by its
  new name).
- In a full document a path walks through subdocuments and through arrays
  of subdocuments (``addresses.city`` reaches ``city`` in every element of
  ``addresses``); arrays of arrays are not walked.
- In an update description a dotted key is matched with its array indexes
  left out (``addresses.0.city`` matches ``addresses.city``); a key under an
  excluded field is dropped, a key above a rule's field has the rule applied
  to its value, a renamed key keeps its indexes.
- Renaming onto a name the document (or the update description) already
  holds is an error, as in Debezium (``FieldRenameConflictError``).

Departures from Debezium, all on the side of doing what the rule says: a
dotted update key equal to a renamed nested field keeps its parent path
(Debezium writes it at the top level), every key above a rule's field is
transformed (Debezium stops at the first), and a renamed field keeps its
position among its siblings.

Nothing passed in is modified; what changes is copied, the rest shared. When
no rule concerns a namespace (or none matched) the inputs are returned as
they are, the same objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mongocdc.errors import ConfigError

if TYPE_CHECKING:
    from mongocdc.config import Settings

OPERATIONS: Final = frozenset({"c", "u", "d", "t"})
"""Operations ``skipped.operations`` can name: create (insert), update (and replace), delete, truncate."""

_NAMESPACE_CACHE_MAX: Final = 4096
_NO_RULES: Final[tuple[_Rule, ...]] = ()


class FieldRenameConflictError(ConfigError):
    """A ``field.renames`` rule would overwrite a field that already exists (Debezium fails the same way)."""


def skipped_ops(settings: Settings) -> frozenset[str]:
    """The operation codes (``c``, ``u``, ``d``, ``t``) whose events are not emitted, from ``skipped.operations``."""
    return frozenset(settings.skipped_operations)


@dataclass(frozen=True, slots=True)
class _Rule:
    """One exclusion (``new_name`` is ``None``) or rename, parsed from its property item."""

    text: str
    namespace: re.Pattern[str]
    nodes: tuple[str, ...]
    new_name: str | None

    @classmethod
    def parse(cls, text: str, new_name: str | None) -> _Rule:
        parts = text.split(".")
        if len(parts) < 3 or any(not part for part in parts):
            raise ValueError(f"{text!r} is not <database>.<collection>.<field path>")
        pattern = _wildcard(parts[0]) + r"\." + _wildcard(parts[1])
        return cls(text, re.compile(pattern, re.IGNORECASE), tuple(parts[2:]), new_name)


def _wildcard(part: str) -> str:
    return ".*".join(re.escape(piece) for piece in part.split("*"))


class FieldTransforms:
    """Field exclusions and renames for every namespace; build once, call per event.

    ``exclude`` holds ``field.exclude.list`` items
    (``inventory.orders.customer.email``), ``renames`` holds ``field.renames``
    items (``inventory.orders.customer.phone:tel``). The rules of each
    namespace are worked out on first use and cached, so a namespace no rule
    concerns costs one dictionary look-up per call.
    """

    __slots__ = ("_by_namespace", "_rules")

    def __init__(self, exclude: Iterable[str] = (), renames: Iterable[str] = ()) -> None:
        rules = [_Rule.parse(item.strip(), None) for item in exclude if item.strip()]
        for item in renames:
            if not item.strip():
                continue
            path, colon, new_name = item.partition(":")
            if not colon or not new_name.strip() or "." in new_name:
                raise ValueError(f"{item!r} is not <database>.<collection>.<field path>:<new name>")
            rules.append(_Rule.parse(path.strip(), new_name.strip()))
        self._rules: tuple[_Rule, ...] = tuple(rules)
        self._by_namespace: dict[str, tuple[_Rule, ...]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> FieldTransforms:
        """The transforms of ``field.exclude.list`` and ``field.renames``."""
        return cls(settings.field_exclude_list, settings.field_renames)

    def __bool__(self) -> bool:
        """Whether there is any rule at all."""
        return bool(self._rules)

    def __repr__(self) -> str:
        exclude = [rule.text for rule in self._rules if rule.new_name is None]
        renames = [f"{rule.text}:{rule.new_name}" for rule in self._rules if rule.new_name is not None]
        return f"FieldTransforms(exclude={exclude!r}, renames={renames!r})"

    def concerns(self, db: str, coll: str) -> bool:
        """Whether any rule applies to ``db.coll``."""
        return bool(self._rules_for(db, coll))

    def apply_document(self, db: str, coll: str, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` (a full document, before or after image) with the rules of ``db.coll`` applied.

        Returns ``doc`` itself when nothing changes. Raises
        ``FieldRenameConflictError`` when a rename would overwrite a field.
        """
        rules = self._rules_for(db, coll)
        if not rules:
            return doc
        result: Mapping[str, Any] = doc
        for rule in rules:
            result = _apply_path(result, rule, 0, db, coll)
        return result if isinstance(result, dict) else dict(result)

    def apply_update_description(
        self, db: str, coll: str, updated_fields: Mapping[str, Any], removed_fields: Sequence[str]
    ) -> tuple[Mapping[str, Any], Sequence[str]]:
        """The ``updatedFields`` and ``removedFields`` of an update with the rules of ``db.coll`` applied.

        Keys are dotted paths (``address.city``, ``items.0.sku``). Each part is
        returned itself when it does not change (so both are when no rule
        concerns the namespace); a changed part is a new ``dict`` or ``list``.
        Raises ``FieldRenameConflictError`` when a rename would overwrite a key.
        """
        rules = self._rules_for(db, coll)
        if not rules:
            return updated_fields, removed_fields
        updated, removed = updated_fields, removed_fields
        for rule in rules:
            updated = _apply_to_updated(updated, rule, db, coll)
            removed = _apply_to_removed(removed, rule, db, coll)
        return updated, removed

    def _rules_for(self, db: str, coll: str) -> tuple[_Rule, ...]:
        if not self._rules:
            return _NO_RULES
        namespace = f"{db}.{coll}"
        rules = self._by_namespace.get(namespace)
        if rules is None:
            rules = tuple(rule for rule in self._rules if rule.namespace.fullmatch(namespace))
            if len(self._by_namespace) >= _NAMESPACE_CACHE_MAX:
                self._by_namespace.clear()
            self._by_namespace[namespace] = rules
        return rules


# --- full documents -----------------------------------------------------------------


def _apply_path(doc: Mapping[str, Any], rule: _Rule, index: int, db: str, coll: str) -> Mapping[str, Any]:
    """``doc`` with ``rule`` applied from ``rule.nodes[index]`` down; ``doc`` itself when nothing changes."""
    node = rule.nodes[index]
    if node not in doc:
        return doc
    if index == len(rule.nodes) - 1:
        if rule.new_name is None:
            return {key: value for key, value in doc.items() if key != node}
        return _renamed(doc, node, rule, db, coll)
    child = doc[node]
    new_child = _descend(child, rule, index + 1, db, coll)
    if new_child is child:
        return doc
    copy = dict(doc)
    copy[node] = new_child
    return copy


def _descend(value: Any, rule: _Rule, index: int, db: str, coll: str) -> Any:
    """``value`` (a subdocument, an array of them, or anything else) with ``rule`` applied from ``index``."""
    if isinstance(value, Mapping):
        return _apply_path(value, rule, index, db, coll)
    if isinstance(value, list):
        items: list[Any] | None = None
        for position, item in enumerate(value):
            if not isinstance(item, Mapping):
                continue
            new_item = _apply_path(item, rule, index, db, coll)
            if new_item is not item:
                if items is None:
                    items = list(value)
                items[position] = new_item
        return value if items is None else items
    return value


def _renamed(doc: Mapping[str, Any], node: str, rule: _Rule, db: str, coll: str) -> Mapping[str, Any]:
    new_name = rule.new_name
    assert new_name is not None
    if new_name == node:
        return doc
    if new_name in doc:
        raise _conflict(rule, db, coll, ".".join((*rule.nodes[:-1], new_name)))
    return {(new_name if key == node else key): value for key, value in doc.items()}


# --- update descriptions ------------------------------------------------------------


def _apply_to_updated(updated: Mapping[str, Any], rule: _Rule, db: str, coll: str) -> Mapping[str, Any]:
    result: dict[str, Any] | None = None
    renamed: list[tuple[str, Any]] = []
    for position, (key, value) in enumerate(updated.items()):
        parts = key.split(".")
        kept = _without_indexes(parts)
        nodes = tuple(parts[i] for i in kept)
        depth = len(rule.nodes)
        new_key: str | None = key
        new_value = value
        if nodes[:depth] == rule.nodes:
            new_key = None if rule.new_name is None else _renamed_key(parts, kept, depth, rule.new_name)
        elif len(nodes) < depth and rule.nodes[: len(nodes)] == nodes:
            new_value = _descend(value, rule, len(nodes), db, coll)
        if new_key == key and new_value is value:
            if result is not None:
                result[key] = value
            continue
        if result is None:
            result = dict(list(updated.items())[:position])
        if new_key is None:
            continue
        if new_key != key:
            renamed.append((new_key, new_value))
        else:
            result[key] = new_value
    if result is None:
        return updated
    for new_key, value in renamed:
        if new_key in result:
            raise _conflict(rule, db, coll, new_key)
        result[new_key] = value
    return result


def _apply_to_removed(removed: Sequence[str], rule: _Rule, db: str, coll: str) -> Sequence[str]:
    result: list[str] | None = None
    depth = len(rule.nodes)
    for position, key in enumerate(removed):
        parts = key.split(".")
        kept = _without_indexes(parts)
        if tuple(parts[i] for i in kept)[:depth] != rule.nodes:
            if result is not None:
                result.append(key)
            continue
        if result is None:
            result = list(removed[:position])
        if rule.new_name is not None:
            new_key = _renamed_key(parts, kept, depth, rule.new_name)
            if new_key in result or new_key in removed[position + 1 :]:
                raise _conflict(rule, db, coll, new_key)
            result.append(new_key)
    return removed if result is None else result


def _without_indexes(parts: list[str]) -> list[int]:
    """Positions of ``parts`` that are field names: array indexes (digits) left out, as Debezium does.

    When two indexes follow each other (an array of arrays, which rules do not
    reach) every part is kept, so the key matches no rule through them.
    """
    kept: list[int] = []
    previous_index = False
    for position, part in enumerate(parts):
        if part.isdigit() and position > 0:
            if previous_index:
                return list(range(len(parts)))
            previous_index = True
            continue
        previous_index = False
        kept.append(position)
    return kept


def _renamed_key(parts: list[str], kept: list[int], depth: int, new_name: str) -> str:
    """``parts`` joined with the field at rule depth ``depth`` (indexes not counted) renamed."""
    renamed = list(parts)
    renamed[kept[depth - 1]] = new_name
    return ".".join(renamed)


def _conflict(rule: _Rule, db: str, coll: str, existing: str) -> FieldRenameConflictError:
    return FieldRenameConflictError(
        f"field.renames: renaming {rule.text} to {rule.new_name!r} in {db}.{coll} would overwrite the existing "
        f"field {existing!r}",
        hint="Rename the field to a name the documents do not use, or exclude the existing field first with "
        "field.exclude.list (exclusions apply before renames).",
    )
