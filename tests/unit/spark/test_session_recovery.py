"""One Spark test that breaks the shared session does not fail the Spark tests after it (tests/spark_support.py).

Each test breaks the session the ``spark`` fixture gave it, then asks for a session the way the fixture
does before the next test (``SharedSession.get``) and runs Spark work on it. The tests after this module
(test_sinks.py, ...) run on the session left here.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from tests.spark_support import SharedSession, Topic, documents, envelope, records

pytestmark = pytest.mark.spark


@contextmanager
def interrupted_like_pytest_timeout(after_s: float) -> Iterator[None]:
    """Fail the test from a SIGALRM handler in the main thread after ``after_s``, as pytest-timeout's
    ``signal`` method does (``pytest.fail`` raises ``Failed``, a ``BaseException``), without touching the
    suite's own timer."""

    def fail(signum: int, frame: FrameType | None) -> None:
        pytest.fail(f"Timeout (>{after_s}s) from pytest-timeout.")

    previous = signal.signal(signal.SIGALRM, fail)
    timer = threading.Timer(after_s, signal.pthread_kill, (threading.main_thread().ident, signal.SIGALRM))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGALRM, previous)


def merged(spark: Any) -> dict[Any, dict[str, Any]]:
    """Spark work that touches the JVM, Python rows and the job's code: one parse and merge of a batch."""
    from mongocdc.spark import merge as m

    orders = Topic("it.shop.orders")
    rows = [
        orders.add(envelope("c", 1, {"qty": 1}, ts_ms=1000)),
        orders.add(envelope("u", 1, {"qty": 2}, ts_ms=2000)),
        orders.add(envelope("c", 2, {"qty": 5}, ts_ms=2000)),
    ]
    changes = m.parse_records(records(spark, rows)).drop(*m.COLLECTION_COLUMNS)
    return documents(m.live_rows(m.merge(None, changes)))


def test_a_test_interrupted_inside_a_spark_call_leaves_the_next_one_a_working_session(
    spark: Any, spark_sessions: SharedSession
) -> None:
    with pytest.raises(pytest.fail.Exception) as timeout, interrupted_like_pytest_timeout(0.5):
        spark._jvm.java.lang.Thread.sleep(4000)  # a call the JVM answers after 4 s
    assert "Timeout" in str(timeout.value)
    # What failed every later test: the interrupted call's connection, kept alive by the failure's
    # traceback (as pytest's report keeps it), answers the next call with the answer of the call before:
    # sc() gets the sleep's (void: None) instead of the SparkContext.
    assert spark._jsc.sc() is None
    # What the `spark` fixture does before the next test:
    again = spark_sessions.get()
    assert again is spark  # repaired in place: the JVM and the session are fine, only the connection was not
    assert again._jsc.sc().isStopped() is False
    assert merged(again) == {1: {"_id": 1, "qty": 2}, 2: {"_id": 2, "qty": 5}}


def test_a_session_whose_jvm_died_is_replaced_for_the_next_test(spark: Any, spark_sessions: SharedSession) -> None:
    from pyspark import SparkContext

    rebuilds = spark_sessions.rebuilds
    jvm = SparkContext._gateway.proc  # type: ignore[union-attr]
    jvm.kill()
    jvm.wait(60)
    with pytest.raises(Exception):  # noqa: B017,PT011 - py4j's error for a gateway that is gone
        spark.range(1).count()
    again = spark_sessions.get()
    assert again is not spark and spark_sessions.rebuilds == rebuilds + 1
    assert SparkContext._gateway.proc.pid != jvm.pid  # type: ignore[union-attr]
    assert merged(again) == {1: {"_id": 1, "qty": 2}, 2: {"_id": 2, "qty": 5}}
