"""What the whole suite shares: the real services, the Spark session and a configuration-free environment.

One Kafka broker and one MongoDB server per test run, or per worker when pytest-xdist runs the suite in
parallel (``-n``, pyproject.toml's addopts: session-scoped fixtures are per worker process).
``MONGOCDC_TEST_KAFKA_BOOTSTRAP`` (and ``MONGOCDC_TEST_KAFKA_BOOTSTRAP_2`` for the replication tests' second
cluster) and ``MONGOCDC_TEST_MONGODB_URI`` point the suite at existing services instead (a real replica set,
a real Kafka cluster), which the workers then share.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest

# Property tests check properties, not speed: a shared CI core can make one example take longer than
# hypothesis' default 200 ms deadline, which would fail a test whose property holds.
hypothesis.settings.register_profile("mongocdc", deadline=None)
hypothesis.settings.load_profile("mongocdc")

if TYPE_CHECKING:
    from tests.services.kafka import KafkaBroker
    from tests.spark_support import SharedSession


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """With pytest-xdist disabled (``-p no:xdist``), accept and ignore the ``--numprocesses``, ``--dist`` and
    ``--no-loadscope-reorder`` of pyproject.toml's addopts, so that the suite runs serially in this process instead
    of failing on unknown options (addopts spells them long for this: a conftest may not define the short ``-n``)."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "pytest-xdist disabled (-p no:xdist): these options are ignored")
    group.addoption("--numprocesses", dest="numprocesses", default=None, help="ignored without pytest-xdist")
    group.addoption("--dist", dest="dist", default="no", help="ignored without pytest-xdist")
    group.addoption("--no-loadscope-reorder", action="store_true", help="ignored without pytest-xdist")


KAFKA_ENV = "MONGOCDC_TEST_KAFKA_BOOTSTRAP"
SECOND_KAFKA_ENV = "MONGOCDC_TEST_KAFKA_BOOTSTRAP_2"
MONGO_ENV = "MONGOCDC_TEST_MONGODB_URI"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing of the user's configuration reaches an in-process command: no ``MONGOCDC_*`` variables
    (the suite's own ``MONGOCDC_TEST_*`` stay), and the working directory is the test's ``tmp_path``
    (relative paths such as the default offsets file land there). Modules that run commands use it with
    ``pytestmark = pytest.mark.usefixtures("clean_env")``; a fixture that sets ``MONGOCDC_*`` variables
    asks for it, so that it runs first."""
    for key in list(os.environ):
        if key.startswith("MONGOCDC_") and not key.startswith("MONGOCDC_TEST_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def fast_retries(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process commands give up on an unreachable service after two quick attempts (``connect.*``,
    ``mongodb.server.selection.timeout.ms``); set after ``clean_env``, which would remove them."""
    monkeypatch.setenv("MONGOCDC_CONNECT_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("MONGOCDC_CONNECT_BACKOFF_INITIAL_DELAY_MS", "10")
    monkeypatch.setenv("MONGOCDC_CONNECT_TIMEOUT_MS", "300")
    monkeypatch.setenv("MONGOCDC_MONGODB_SERVER_SELECTION_TIMEOUT_MS", "200")


# --- Kafka ------------------------------------------------------------------------------------


def _shared_broker(env: str) -> Iterator[str]:
    """The bootstrap address ``env`` names, else that of a broker started for the whole run."""
    existing = os.environ.get(env)
    if existing:
        yield existing
        return
    from tests.services.kafka import KafkaBroker

    with KafkaBroker(num_partitions=3) as broker:
        yield broker.bootstrap


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap address of a real Kafka broker (3 partitions per auto-created topic); cluster A of the
    replication tests."""
    yield from _shared_broker(KAFKA_ENV)


@pytest.fixture(scope="session")
def second_kafka() -> Iterator[str]:
    """Bootstrap address of a second, independent Kafka cluster (B of the replication tests)."""
    yield from _shared_broker(SECOND_KAFKA_ENV)


@pytest.fixture(scope="module")
def _module_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    from tests.services.kafka import KafkaBroker

    with KafkaBroker(num_partitions=3, data_dir=tmp_path_factory.mktemp("kafka-own")) as broker:
        yield broker


@pytest.fixture
def own_kafka(_module_broker: KafkaBroker) -> Iterator[KafkaBroker]:
    """A broker of the test module's own (3 partitions, its data kept across restarts), for tests that halt
    it and start it again; it is running when each test starts and after each test ends."""
    if not _module_broker.running:
        _module_broker.start()
    yield _module_broker
    if not _module_broker.running:
        _module_broker.start()


# --- MongoDB ----------------------------------------------------------------------------------


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


# --- Spark ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark_ivy_dir() -> Path:
    """Ivy directory holding the Spark job's Maven packages (filled by scripts/bootstrap)."""
    from tests.spark_support import ivy_dir

    return ivy_dir()


@pytest.fixture(scope="session")
def spark_sessions(spark_ivy_dir: Path) -> Iterator[SharedSession]:
    """The run's one local[2] SparkSession (Kafka source and Delta Lake loaded, UI off), built on first use."""
    from tests.spark_support import SharedSession

    shared = SharedSession(spark_ivy_dir)
    yield shared
    shared.stop()


@pytest.fixture
def spark(spark_sessions: SharedSession) -> Any:
    """The shared SparkSession, checked before each test and repaired or rebuilt when an earlier test broke it
    (``SharedSession.get``), so one test interrupted inside a Spark call does not fail every later one."""
    return spark_sessions.get()


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """In-process CLI runs configure the root logger; undo it so later tests see pytest's own set-up."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
