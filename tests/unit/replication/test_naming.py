"""Topic and group selection, and topic renaming."""

from __future__ import annotations

import pytest

from mongocdc.errors import ConfigError, ExitCode
from mongocdc.replication.naming import NameFilter, TopicRenamer


def test_filter_matches_whole_names_with_excludes_and_fixed_exclusions() -> None:
    selected = NameFilter(["inv\\..*", "orders"], [".*\\.internal", "inv\\.secret"], always_excluded=["orders"])
    assert selected("inv.customers")
    assert not selected("xinv.customers")  # whole-name match
    assert not selected("inv.secret")
    assert not selected("inv.sync.internal")
    assert not selected("orders")  # always excluded
    assert selected.select(["inv.b", "inv.a", "other"]) == ["inv.a", "inv.b"]


def test_rename_format() -> None:
    assert TopicRenamer("${topic}", "A")("orders") == "orders"
    assert TopicRenamer("${topic}", "A").is_identity
    assert TopicRenamer("${topic}.replica", "A")("orders") == "orders.replica"
    assert TopicRenamer("${source}.${topic}", "east")("orders") == "east.orders"


@pytest.mark.parametrize("fmt", ["replica", "${topics}", "${topic}.${cluster}"])
def test_bad_rename_format_is_a_config_error(fmt: str) -> None:
    with pytest.raises(ConfigError) as info:
        TopicRenamer(fmt, "A")
    assert info.value.exit_code == ExitCode.CONFIG
    assert "topic.rename.format" in info.value.message


def test_rename_to_an_invalid_topic_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid Kafka topic name"):
        TopicRenamer("${source}.${topic}", "a/b")("orders")
