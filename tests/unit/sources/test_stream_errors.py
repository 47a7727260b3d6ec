"""How MongoDB's refusals to resume are recognised (MongoDB server behaviour no test server reproduces)."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from mongocdc.errors import ExitCode
from mongocdc.sources.mongo.stream import is_resume_lost, resume_lost_error


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            286,
            "Error on remote shard: Resume of change stream was not possible, as the resume point may no longer "
            "be in the oplog.",
        ),
        (260, "cannot resume stream; the resume token was not found."),
        (280, "PlanExecutor error during aggregation :: caused by :: cannot resume stream"),
        (None, "resume point may no longer be in the oplog"),
    ],
)
def test_history_lost_errors_are_recognised(code: int | None, message: str) -> None:
    assert is_resume_lost(OperationFailure(message, code=code))


@pytest.mark.parametrize(("code", "message"), [(13, "not authorized"), (9, "FailedToParse"), (26, "ns not found")])
def test_other_failures_are_not_resume_lost(code: int, message: str) -> None:
    assert not is_resume_lost(OperationFailure(message, code=code))


def test_resume_lost_error_gives_the_remedy_and_exit_code_5() -> None:
    error = resume_lost_error("inventory", "ChangeStreamHistoryLost")
    assert error.exit_code == ExitCode.RESUME_LOST == 5
    assert "no longer in MongoDB's oplog" in error.message
    assert error.hint is not None
    assert "mongocdc offsets reset" in error.hint and "snapshot.mode=when_needed" in error.hint
    assert "'inventory'" in error.hint
