"""How MongoDB's refusals to resume are recognised (MongoDB server behaviour no test server reproduces)."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from mongocdc.errors import ExitCode
from mongocdc.sources.mongo.stream import is_resume_lost, is_resume_refused, resume_lost_error


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


def recorded(errmsg: str, code: int, code_name: str) -> OperationFailure:
    """An ``OperationFailure`` as pymongo raises it for the server's error document."""
    document = {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": code_name}
    return OperationFailure(errmsg, code, document)


@pytest.mark.parametrize(
    "errmsg",
    [
        "resume token string was not a valid hex string",  # mongod and the test server, a damaged token
        "resume token is not a valid resume token",  # the test server, for a token in mongod's format
        "Bad resume token: _data of missing or of wrong type. Expected string, got object",
    ],
)
def test_a_resume_token_the_server_cannot_read_is_refused_not_a_bug(errmsg: str) -> None:
    failure = recorded(errmsg, 9, "FailedToParse")
    assert is_resume_refused(failure) and not is_resume_lost(failure)


def test_a_failed_to_parse_pipeline_is_not_a_refused_token() -> None:
    failure = recorded("$match: unknown operator: $regexx", 9, "FailedToParse")
    assert not is_resume_refused(failure)


def test_a_refused_token_is_exit_5_naming_the_deployment_and_the_re_snapshot() -> None:
    error = resume_lost_error("inventory", "resume token is not a valid resume token", refused=True)
    assert error.exit_code == ExitCode.RESUME_LOST
    assert error.message.startswith("MongoDB refused the stored resume token (resume token is not a valid")
    assert "another deployment" in error.message
    assert error.hint is not None and "mongodb.connection.string" in error.hint
    assert "mongocdc offsets reset --yes" in error.hint and "snapshot.mode=when_needed" in error.hint
