"""``replicate``'s status lines: none while idle, words rather than raw keys."""

from __future__ import annotations

from mongocdc.cli.commands_replicate import status_line
from mongocdc.replication.status import ReplicationStats, StatusGate


def test_an_idle_replicator_has_nothing_to_say_until_something_changes() -> None:
    gate = StatusGate()
    stats = ReplicationStats(copied=34, lag=0, records_per_s=3.4)
    assert gate.news(stats) == 34  # the first status is always said
    stats.records_per_s, stats.commits = 0.0, 5  # idle intervals: commits and rates alone are no news
    assert [gate.news(stats) for _ in range(10)] == [None] * 10
    stats.lag = 12  # records arrived on the source
    assert gate.news(stats) == 0
    stats.copied, stats.lag = 46, 0
    assert gate.news(stats) == 12
    stats.skipped_loops = 3  # a loop skipped is news too
    assert gate.news(stats) == 0
    assert gate.news(stats) is None


def test_status_line_and_summary_are_in_words() -> None:
    stats = ReplicationStats(copied=1234, lag=0, records_per_s=61.7)
    assert status_line(stats, 1) == "copied 1 record (62/s), 1,234 in all, 0 behind"
    stats.skipped_loops, stats.lag = 300, None
    assert status_line(stats, 20) == (
        "copied 20 records (62/s), 1,234 in all, lag unknown; 300 not copied back (they came from the target)"
    )
    rows = dict(ReplicationStats(copied=7, syncs=2, lag=None).summary_rows())
    assert rows["records copied"] == 7 and rows["offset syncs written"] == 2
    assert rows["records behind (lag)"] == "unknown"
    assert not any("_" in what for what in rows)  # no raw keys (skipped_loops, records_per_s)
