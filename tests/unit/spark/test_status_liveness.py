"""`spark status` tells a live job from a dead one (its heartbeat and pid) and measures the lag against the
topics' end offsets (no Spark started)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mongocdc.spark.status import CheckpointStatus, duration_text, lag_against, liveness, read_status

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def job(status: str = "running", age_s: float = 1.0, **more: object) -> dict[str, object]:
    return {"status": status, "updated_at": (NOW - timedelta(seconds=age_s)).isoformat(), **more}


def test_a_running_job_with_a_recent_heartbeat_is_running() -> None:
    found = liveness(job(age_s=4), NOW, 60)
    assert (found.status, found.not_updated_for_s, found.process) == ("running", 4.0, "unknown")


def test_a_running_job_not_updated_for_longer_than_the_threshold_is_stale() -> None:
    assert liveness(job(age_s=61), NOW, 60).status == "stale"
    assert liveness(job(age_s=59), NOW, 60).status == "running"
    assert liveness(job("stopping", age_s=600), NOW, 60).status == "stale"


def test_a_running_job_whose_process_is_gone_from_this_host_is_stale_at_once() -> None:
    dead = liveness(job(age_s=1, pid=4242, host="here"), NOW, 60, host="here", alive=lambda pid: False)
    assert (dead.status, dead.process) == ("stale", "gone")
    alive = liveness(job(age_s=1, pid=4242, host="here"), NOW, 60, host="here", alive=lambda pid: True)
    assert (alive.status, alive.process) == ("running", "alive")
    # another host's pid says nothing here: only the heartbeat counts
    elsewhere = liveness(job(age_s=1, pid=4242, host="there"), NOW, 60, host="here", alive=lambda pid: False)
    assert (elsewhere.status, elsewhere.process) == ("running", "unknown")


def test_a_job_that_ended_stays_as_it_ended_however_old() -> None:
    for ended in ("stopped", "finished", "failed"):
        assert liveness(job(ended, age_s=86400, pid=1, host="h"), NOW, 60, host="h", alive=lambda p: False).status == (
            ended
        )


def test_a_job_json_without_a_time_is_stale_while_it_says_it_runs() -> None:
    assert liveness({"status": "running"}, NOW, 60).status == "stale"
    assert liveness({"status": "running", "updated_at": "yesterday"}, NOW, 60).not_updated_for_s is None


def test_this_process_is_alive_and_its_heartbeat_shows_in_status(tmp_path: Path) -> None:
    state = tmp_path / "mongocdc"
    state.mkdir()
    doc = {**job(age_s=0), "updated_at": datetime.now(UTC).isoformat(), "pid": os.getpid(), "host": os.uname()[1]}
    (state / "job.json").write_text(json.dumps(doc))
    data = read_status(str(tmp_path)).to_dict()
    assert (data["status"], data["process"]) == ("running", "alive")
    old = {**doc, "updated_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat()}
    (state / "job.json").write_text(json.dumps(old))
    data = read_status(str(tmp_path)).to_dict(stale_after_s=60)
    assert data["status"] == "stale" and data["job_status"] == "running"
    assert data["not_updated_for"].startswith("5 min") and data["not_updated_for_s"] >= 300


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0 s"), (59.9, "59 s"), (61, "1 min 1 s"), (7260, "2 h 1 min"), (90000, "1 d 1 h")]
)
def test_durations_read_as_a_person_says_them(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_the_lag_is_what_the_topics_hold_past_the_committed_offsets() -> None:
    offsets = {"t.a": {"0": 10, "1": 5}}
    ends = {"t.a": {"0": (0, 14), "1": (0, 5), "2": (3, 9)}, "t.b": {"0": (2, 7)}}
    total, by_topic = lag_against(offsets, ends)
    # t.a: 4 + 0 + a partition never read (6 from its first offset); t.b never read: 5
    assert by_topic == {"t.a": 10, "t.b": 5} and total == 15
    # records aged out past the committed offset are not lag
    assert lag_against({"t": {"0": 2}}, {"t": {"0": (8, 10)}}) == (2, {"t": 2})


def test_status_uses_the_broker_s_end_offsets_when_given_else_says_it_used_the_last_batch(tmp_path: Path) -> None:
    status = CheckpointStatus(checkpoint=str(tmp_path), job=job("stopped"), offsets={"t": {"0": 10}})
    status.reports = [
        {
            "batchId": 0,
            "numInputRows": 10,
            "sources": [{"endOffset": {"t": {"0": 10}}, "latestOffset": {"t": {"0": 10}}}],
        }
    ]
    stale_plan = status.to_dict(now=NOW, ends_error="the broker did not answer")
    assert stale_plan["lag"] == 0 and stale_plan["lag_source"].startswith("last batch")
    measured = status.to_dict(now=NOW, ends={"t": {"0": (0, 25)}})
    assert (measured["lag"], measured["lag_by_topic"], measured["lag_source"]) == (15, {"t": 15}, "broker")
