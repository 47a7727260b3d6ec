"""Session-wide real services: one Kafka broker and one MongoDB server per test run.

``MONGOCDC_TEST_KAFKA_BOOTSTRAP`` and ``MONGOCDC_TEST_MONGODB_URI`` point the suite at
existing services instead (a real replica set, a real Kafka cluster).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

KAFKA_ENV = "MONGOCDC_TEST_KAFKA_BOOTSTRAP"
MONGO_ENV = "MONGOCDC_TEST_MONGODB_URI"


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap address of a real Kafka broker (3 partitions per auto-created topic)."""
    existing = os.environ.get(KAFKA_ENV)
    if existing:
        yield existing
        return
    from tests.services.kafka import KafkaBroker

    with KafkaBroker(num_partitions=3) as broker:
        yield broker.bootstrap


@pytest.fixture(scope="session")
def mongo_server_name() -> str:
    """Which MongoDB the suite runs against: ``real`` or the test server's name."""
    if os.environ.get(MONGO_ENV):
        return "real"
    from tests.services.mongo import selected_server_name

    return selected_server_name()


@pytest.fixture(scope="session")
def mongo_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Connection string of a MongoDB replica set (real, or the default test server)."""
    existing = os.environ.get(MONGO_ENV)
    if existing:
        yield existing
        return
    from tests.services.mongo import start_default_server

    with start_default_server(data_dir=tmp_path_factory.mktemp("mongo")) as server:
        yield server.uri


@pytest.fixture(scope="session")
def spark_ivy_dir() -> Path:
    """Ivy directory holding the Spark job's Maven packages (filled by scripts/bootstrap)."""
    from tests.spark_support import ivy_dir

    return ivy_dir()


@pytest.fixture(scope="session")
def spark(spark_ivy_dir: Path) -> Iterator[Any]:
    """The one local[2] SparkSession every Spark test shares (Kafka source and Delta Lake loaded, UI off)."""
    from tests.spark_support import start_session

    session = start_session(spark_ivy_dir)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """In-process CLI runs configure the root logger; undo it so later tests see pytest's own set-up."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
