"""Field exclusions and renames (Debezium's FieldSelector semantics) and skipped operations."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mongocdc.config import load_settings
from mongocdc.errors import ConfigError, ExitCode
from mongocdc.events.transforms import FieldRenameConflictError, FieldTransforms, skipped_ops

DOC: dict[str, Any] = {
    "_id": 1,
    "name": "Ann",
    "secret": "s3",
    "address": {"city": "Oslo", "zip": "0150", "geo": {"lat": 1, "lon": 2}},
    "items": [{"sku": "a", "price": 3}, {"sku": "b", "price": 4}, 7, [{"price": 9}]],
}


# --- full documents ---------------------------------------------------------------


def test_exclude_top_level_nested_and_inside_arrays_of_subdocuments() -> None:
    transforms = FieldTransforms(["inv.orders.secret", "inv.orders.address.geo.lat", "inv.orders.items.price"])
    before = copy.deepcopy(DOC)
    out = transforms.apply_document("inv", "orders", DOC)
    assert out == {
        "_id": 1,
        "name": "Ann",
        "address": {"city": "Oslo", "zip": "0150", "geo": {"lon": 2}},
        "items": [{"sku": "a"}, {"sku": "b"}, 7, [{"price": 9}]],  # arrays of arrays are not walked
    }
    assert before == DOC  # the input is never changed
    assert out["address"] is not DOC["address"]


def test_unchanged_parts_are_shared_and_unmatched_documents_returned_as_they_are() -> None:
    transforms = FieldTransforms(["inv.orders.address.zip", "inv.orders.missing.path"])
    out = transforms.apply_document("inv", "orders", DOC)
    assert out["items"] is DOC["items"]
    assert out["address"]["geo"] is DOC["address"]["geo"]
    doc = {"other": {"zip": 1}}
    assert transforms.apply_document("inv", "orders", doc) is doc


def test_untouched_namespace_and_no_rules_return_the_same_objects() -> None:
    transforms = FieldTransforms(["inv.orders.secret"], ["inv.orders.name:title"])
    assert transforms.apply_document("inv", "customers", DOC) is DOC
    updated, removed = {"secret": 1}, ["secret"]
    assert transforms.apply_update_description("shop", "orders", updated, removed) == (updated, removed)
    result = transforms.apply_update_description("shop", "orders", updated, removed)
    assert result[0] is updated
    assert result[1] is removed
    assert not transforms.concerns("inv", "customers")
    assert transforms.concerns("inv", "orders")
    empty = FieldTransforms()
    assert not empty
    assert empty.apply_document("inv", "orders", DOC) is DOC


def test_wildcards_in_database_and_collection_match_any_characters_ignoring_case() -> None:
    transforms = FieldTransforms(["inv*.*.secret", "*.log_*.name"])
    assert "secret" not in transforms.apply_document("INVENTORY", "orders", DOC)
    assert "secret" in transforms.apply_document("shop", "orders", DOC)
    assert "name" not in transforms.apply_document("shop", "log_2024", DOC)
    assert "name" in transforms.apply_document("shop", "logs", DOC)
    # field names are matched exactly
    assert "secret" in FieldTransforms(["inv.orders.SECRET"]).apply_document("inv", "orders", DOC)
    # regex characters in names are literal
    assert FieldTransforms(["i.v.secret"]).apply_document("inv", "orders", DOC) is DOC


def test_renames_nested_and_in_arrays_keep_values_and_position() -> None:
    transforms = FieldTransforms(renames=["inv.orders.address.city:town", "inv.orders.items.sku:code"])
    out = transforms.apply_document("inv", "orders", DOC)
    assert list(out["address"]) == ["town", "zip", "geo"]
    assert out["address"]["town"] == "Oslo"
    assert out["items"][:2] == [{"code": "a", "price": 3}, {"code": "b", "price": 4}]


def test_exclusions_apply_before_renames_and_renames_apply_in_order() -> None:
    transforms = FieldTransforms(
        ["inv.orders.name"],
        ["inv.orders.secret:name", "inv.orders.name:label", "inv.orders.address:addr", "inv.orders.addr.city:town"],
    )
    out = transforms.apply_document("inv", "orders", DOC)
    assert out["label"] == "s3"
    assert "name" not in out
    assert "secret" not in out
    assert out["addr"]["town"] == "Oslo"


def test_renaming_onto_an_existing_field_fails_like_debezium() -> None:
    transforms = FieldTransforms(renames=["inv.orders.secret:name"])
    with pytest.raises(FieldRenameConflictError) as caught:
        transforms.apply_document("inv", "orders", DOC)
    assert isinstance(caught.value, ConfigError)
    assert caught.value.exit_code == ExitCode.CONFIG
    assert "renaming secret" not in caught.value.message
    assert "renaming inv.orders.secret to 'name' in inv.orders would overwrite the existing field 'name'" in str(
        caught.value
    )
    assert caught.value.hint is not None
    assert "field.exclude.list" in caught.value.hint
    # renaming to the same name is no change
    assert FieldTransforms(renames=["inv.orders.name:name"]).apply_document("inv", "orders", DOC) is DOC


def test_bad_rules_are_refused() -> None:
    for exclude, renames in [
        (["inv.orders"], []),
        (["inv..x"], []),
        ([], ["inv.orders.x"]),
        ([], ["inv.orders.x:a.b"]),
    ]:
        with pytest.raises(ValueError, match="is not <database>"):
            FieldTransforms(exclude, renames)


# --- update descriptions ------------------------------------------------------------


def test_update_keys_under_above_and_equal_to_an_excluded_field() -> None:
    transforms = FieldTransforms(["inv.orders.address.geo", "inv.orders.items.price"])
    updated = {
        "address.geo.lat": 5,  # under the excluded field: dropped
        "address.geo": {"lat": 1},  # the excluded field itself: dropped
        "address": {"city": "Rome", "geo": {"lat": 1}},  # above it: the rule applies to the value
        "items.1.price": 5,  # array index left out when matching
        "items.0": {"sku": "c", "price": 6},  # an array element: the rule applies inside it
        "items": [{"price": 1, "sku": "z"}],
        "name": "Bob",
    }
    before = copy.deepcopy(updated)
    out, removed = transforms.apply_update_description(
        "inv", "orders", updated, ["address.geo.lon", "items.2.price", "name", "address"]
    )
    assert out == {
        "address": {"city": "Rome"},
        "items.0": {"sku": "c"},
        "items": [{"sku": "z"}],
        "name": "Bob",
    }
    assert removed == ["name", "address"]
    assert updated == before


def test_update_keys_through_arrays_of_arrays_match_nothing() -> None:
    transforms = FieldTransforms(["inv.orders.items.price"])
    updated = {"items.0.1.price": 1}
    assert transforms.apply_update_description("inv", "orders", updated, [])[0] is updated


def test_update_renames_keep_parents_and_array_indexes() -> None:
    transforms = FieldTransforms(renames=["inv.orders.address.city:town", "inv.orders.items.sku:code"])
    out, removed = transforms.apply_update_description(
        "inv",
        "orders",
        {"address.city": "Rome", "items.3.sku": "x", "items.3": {"sku": "y"}, "address": {"city": "Oslo"}},
        ["items.0.sku", "address.city.old", "zip"],
    )
    assert out == {"address.town": "Rome", "items.3.code": "x", "items.3": {"code": "y"}, "address": {"town": "Oslo"}}
    assert removed == ["items.0.code", "address.town.old", "zip"]


def test_update_rename_onto_an_existing_key_fails() -> None:
    transforms = FieldTransforms(renames=["inv.orders.secret:name"])
    with pytest.raises(FieldRenameConflictError, match="would overwrite the existing field 'name'"):
        transforms.apply_update_description("inv", "orders", {"secret": 1, "name": 2}, [])
    with pytest.raises(FieldRenameConflictError):
        transforms.apply_update_description("inv", "orders", {}, ["secret", "name"])


def test_update_parts_that_do_not_change_are_returned_as_they_are() -> None:
    transforms = FieldTransforms(["inv.orders.secret"])
    updated, removed = {"name": 1}, ["secret"]
    out, out_removed = transforms.apply_update_description("inv", "orders", updated, removed)
    assert out is updated
    assert out_removed == []
    updated, removed = {"secret": 1}, ["name"]
    out, out_removed = transforms.apply_update_description("inv", "orders", updated, removed)
    assert out == {}
    assert out_removed is removed


# --- settings -------------------------------------------------------------------------


def test_from_settings_and_skipped_ops() -> None:
    settings = load_settings(
        None,
        {},
        {
            "field.exclude.list": "inv.orders.secret",
            "field.renames": "inv.orders.name : title",
            "skipped.operations": "u,d",
        },
    )
    transforms = FieldTransforms.from_settings(settings)
    assert transforms.apply_document("inv", "orders", {"secret": 1, "name": 2}) == {"title": 2}
    assert "inv.orders.name:title" in repr(transforms)
    assert skipped_ops(settings) == frozenset({"u", "d"})
    assert skipped_ops(load_settings(None, {}, {})) == frozenset({"t"})
    assert skipped_ops(load_settings(None, {}, {"skipped.operations": "none"})) == frozenset()


# --- properties -----------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map(tuple)
SCALARS = st.one_of(st.none(), st.integers(), st.text(max_size=3))


def documents(depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    if depth == 0:
        return st.dictionaries(NAMES, SCALARS, max_size=4)
    inner = documents(depth - 1)
    values = st.one_of(SCALARS, inner, st.lists(st.one_of(inner, SCALARS), max_size=3))
    return st.dictionaries(NAMES, values, max_size=4)


def reachable(value: Any, path: tuple[str, ...]) -> Iterator[Any]:
    """Every value at ``path`` (through subdocuments and arrays of subdocuments, as the rules walk)."""
    if not path:
        yield value
        return
    if isinstance(value, Mapping):
        if path[0] in value:
            yield from reachable(value[path[0]], path[1:])
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping):
                yield from reachable(item, path)


def rule(path: tuple[str, ...], db: str = "inv", coll: str = "orders") -> str:
    return ".".join((db, coll, *path))


@given(documents(), st.lists(PATHS, min_size=1, max_size=3))
def test_excluded_paths_never_appear_and_the_input_is_unchanged(
    doc: dict[str, Any], paths: list[tuple[str, ...]]
) -> None:
    before = copy.deepcopy(doc)
    out = FieldTransforms([rule(path) for path in paths]).apply_document("inv", "orders", doc)
    assert doc == before
    for path in paths:
        assert list(reachable(out, path)) == []


@given(documents(), st.lists(PATHS, min_size=1, max_size=3))
def test_untouched_namespaces_return_identical_objects(doc: dict[str, Any], paths: list[tuple[str, ...]]) -> None:
    transforms = FieldTransforms([rule(path) for path in paths], [rule(path) + ":z" for path in paths])
    assert transforms.apply_document("shop", "orders", doc) is doc
    updated = {".".join(path): 1 for path in paths}
    removed = [".".join(path) for path in paths]
    out = transforms.apply_update_description("inv", "customers", updated, removed)
    assert out[0] is updated
    assert out[1] is removed


@given(documents(), PATHS)
def test_renames_preserve_values(doc: dict[str, Any], path: tuple[str, ...]) -> None:
    before = copy.deepcopy(doc)
    out = FieldTransforms(renames=[rule(path) + ":renamed"]).apply_document("inv", "orders", doc)
    assert doc == before
    assert list(reachable(out, (*path[:-1], "renamed"))) == list(reachable(doc, path))
    assert list(reachable(out, path)) == []


@given(documents(), st.lists(PATHS, min_size=1, max_size=3), st.lists(PATHS, max_size=2))
def test_updates_of_whole_fields_are_transformed_like_documents(
    doc: dict[str, Any], excluded: list[tuple[str, ...]], renamed: list[tuple[str, ...]]
) -> None:
    """Setting top-level fields in an update gives what the document transform gives for them."""
    assume(len({path[-1] for path in renamed}) == len(renamed))
    transforms = FieldTransforms(
        [rule(path) for path in excluded], [rule(path) + f":new_{path[-1]}" for path in renamed]
    )
    updated, removed = transforms.apply_update_description("inv", "orders", doc, [])
    assert dict(updated) == transforms.apply_document("inv", "orders", doc)
    assert list(removed) == []


@given(st.lists(st.lists(st.one_of(NAMES, st.sampled_from(["0", "1"])), min_size=1, max_size=4), max_size=6), PATHS)
def test_excluded_update_paths_never_appear(keys: list[list[str]], path: tuple[str, ...]) -> None:
    dotted = [".".join(key) for key in keys if not key[0].isdigit()]
    updated = {key: {"a": {"b": 1}, "c": [{"d": 2}]} for key in dotted}
    out, removed = FieldTransforms([rule(path)]).apply_update_description("inv", "orders", updated, dotted)

    def stripped(key: str) -> tuple[str, ...]:
        """The key's field names; a key through an array of arrays (two indexes in a row) matches no rule."""
        parts = key.split(".")
        if any(first.isdigit() and second.isdigit() for first, second in zip(parts, parts[1:], strict=False)):
            return ("<array of arrays>",)
        return tuple(part for part in parts if not part.isdigit())

    for key, value in out.items():
        nodes = stripped(key)
        assert nodes[: len(path)] != path
        if len(nodes) < len(path) and path[: len(nodes)] == nodes:
            assert list(reachable(value, path[len(nodes) :])) == []
    for key in removed:
        assert stripped(key)[: len(path)] != path
