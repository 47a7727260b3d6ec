"""MongoDB documents written in the configuration as extended JSON: snapshot filters and ``cursor.pipeline``.

``snapshot.collection.filter.overrides.<database>.<collection>`` holds the query a snapshot of
that collection reads with (checked against the ``snapshot.collection.filter.overrides`` list);
``cursor.pipeline`` the aggregation stages added to the change stream. Both are relaxed extended
JSON (``{"$oid": …}`` → ``ObjectId``, ``{"$date": …}`` → an aware ``datetime``).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from bson import json_util
from bson.errors import BSONError

from mongocdc.config.problems import describe_invalid
from mongocdc.config.properties import namespace_problem
from mongocdc.config.values import InvalidValueError

FILTER_OVERRIDE_PREFIX: Final = "snapshot.collection.filter.overrides."
"""``snapshot.collection.filter.overrides.<database>.<collection>``: the snapshot query of one listed collection."""

FILTER_JSON_OPTIONS: Final = json_util.RELAXED_JSON_OPTIONS.with_options(tz_aware=True, tzinfo=datetime.UTC)
"""How snapshot filter JSON is read: relaxed extended JSON (``{"$oid": …}``, ``{"$date": …}``), aware datetimes."""


def is_filter_override_key(name: str) -> bool:
    """Whether ``name`` is a ``snapshot.collection.filter.overrides.<…>`` key (its namespace is checked later)."""
    return name.startswith(FILTER_OVERRIDE_PREFIX) and len(name) > len(FILTER_OVERRIDE_PREFIX)


def parse_filter(text: str) -> dict[str, Any]:
    """The query document of a snapshot filter; ``InvalidValueError`` with the JSON parser's message."""
    try:
        document = json_util.loads(text, json_options=FILTER_JSON_OPTIONS)
    except (ValueError, TypeError, BSONError) as exc:
        raise InvalidValueError(f"not valid (extended) JSON: {exc}") from None
    if not isinstance(document, dict):
        raise InvalidValueError(
            f'expected a JSON object (a MongoDB query document such as {{"status": "open"}}), '
            f"not {type(document).__name__}"
        )
    return document


def filter_text(raw: object) -> str:
    """A filter value as JSON text: a string as is, a mapping (a YAML or Python query document) serialised."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, Mapping):
        try:
            return str(json_util.dumps(dict(raw), json_options=FILTER_JSON_OPTIONS))
        except (ValueError, TypeError, BSONError) as exc:
            raise InvalidValueError(f"cannot be written as JSON: {exc}") from None
    raise InvalidValueError("expected a query document as JSON text (quote it in YAML) or a YAML mapping")


def filter_override_problem(name: str, raw: object, origin: str | None) -> str | None:
    """Why the value of the filter key ``name`` is not acceptable (bad namespace, bad JSON), or ``None``."""
    namespace = name[len(FILTER_OVERRIDE_PREFIX) :]
    reason = namespace_problem(namespace)
    if reason is not None:
        source = f" from {origin}" if origin else ""
        return (
            f"{name}{source}: {namespace!r} is not a collection name ({reason}); the key is "
            f"{FILTER_OVERRIDE_PREFIX}<database>.<collection>"
        )
    try:
        parse_filter(filter_text(raw))
    except InvalidValueError as exc:
        return describe_invalid(name, raw, str(exc), origin)
    return None


def filter_override_list_problems(listed: tuple[str, ...], keyed: set[str]) -> list[str]:
    """Filters set for collections not in ``snapshot.collection.filter.overrides``, and listed ones without one.

    As in Debezium, the list enables the per-collection keys, and each listed
    collection needs its key.
    """
    problems: list[str] = []
    list_name = FILTER_OVERRIDE_PREFIX.rstrip(".")
    for namespace in sorted(keyed - set(listed)):
        if namespace_problem(namespace) is not None:
            continue  # reported with the key
        problems.append(
            f"{FILTER_OVERRIDE_PREFIX}{namespace} is set but {namespace} is not listed in {list_name}; "
            f"add it to {list_name} (which enables the filter) or remove the key"
        )
    for namespace in listed:
        if namespace not in keyed:
            problems.append(
                f"{list_name} lists {namespace} but {FILTER_OVERRIDE_PREFIX}{namespace} is not set; set it to the "
                'query document of its snapshot (for example {"status": "open"}) or remove it from the list'
            )
    return problems


def parse_cursor_pipeline(text: str) -> list[dict[str, Any]]:
    """The stages of ``cursor.pipeline``: a JSON array of aggregation stages (relaxed extended JSON)."""
    try:
        stages = json_util.loads(text, json_options=FILTER_JSON_OPTIONS)
    except (ValueError, TypeError, BSONError) as exc:
        raise InvalidValueError(f"not valid (extended) JSON: {exc}") from None
    example = '(for example [{"$match": {"operationType": {"$in": ["insert", "update"]}}}])'
    if not isinstance(stages, list):
        raise InvalidValueError(f"expected a JSON array of aggregation stages {example}, not {type(stages).__name__}")
    for index, stage in enumerate(stages):
        if not isinstance(stage, dict) or len(stage) != 1 or not str(next(iter(stage))).startswith("$"):
            raise InvalidValueError(
                f"stage {index} must be an object with exactly one key naming a stage such as $match, "
                f"got {json_util.dumps(stage)} {example}"
            )
    return stages


def check_cursor_pipeline(value: str) -> None:
    parse_cursor_pipeline(value)
