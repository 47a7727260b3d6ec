"""Each third-party library is imported in one area only, and dependencies point one way (docs/ARCHITECTURE.md).

Every import counts, at the top of a module, inside a function or under ``TYPE_CHECKING``. The rules:

* a third-party library is imported in its home only (``HOMES``); the pure core (``PURE``) imports the standard
  library, bson and mongocdc only;
* the lower layers (events, kafka, sources, sinks, offsets, config) never import the upper ones (engine, wiring,
  cli, replication); ``sources/`` and ``sinks/`` do not import each other: what a reader and a writer of the
  same topic share (a record format) lives below both, in ``events/`` (``events/notifications.py``);
* ``kafka/`` imports nothing of its users;
* ``engine/`` works on protocols and pure values: it never imports a concrete source, client, sink or store, nor
  the layers above it (``ENGINE_FORBIDDEN``); from ``sources/`` it takes ``sources.base`` (``ChangeSource`` and
  the stream items), from ``offsets/`` the ``OffsetStore`` protocol, the pure ``offsets.connect`` and the
  in-memory store;
* ``spark/`` is the downstream job: it reads the CDC topics as any consumer does, by Debezium's format, never
  through the connector's code. It imports the package's version, ``errors``, ``config`` (``Settings``, the
  redaction of a command line), the Kafka client layer (``kafka/``, a topic's watermarks for ``spark
  status``) and the stop-signal handling (``mongocdc/signals.py``, standard library only), and nothing else of
  mongocdc (``SPARK_ALLOWED``); the modules that run in the Spark driver (``SPARK_DRIVER``) only the version,
  ``errors``, ``signals`` and ``spark/`` itself, since the driver imports them from the zip of mongocdc's modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

import pytest

from tests.unit.import_graph import file_imports

PACKAGE = Path(__file__).resolve().parents[2] / "mongocdc"

HOMES = {
    "pymongo": ("sources/",),
    "confluent_kafka": ("kafka/",),
    "typer": ("cli/",),
    "click": ("cli/",),
    "rich": ("cli/",),
    "pyspark": ("spark/",),
}
PURE = (
    "events/",
    "engine/acks.py",
    "engine/adoption.py",
    "engine/incremental.py",
    "engine/source_offset.py",
    "engine/transactions.py",
)
PURE_ALLOWED = {"bson", "mongocdc"}

ENGINE_FORBIDDEN = (
    "mongocdc.sources.mongo",  # pymongo's area: the engine reads through ``sources.base.ChangeSource``
    "mongocdc.sources.kafka",  # the Kafka signal channel, handed to the engine by wiring
    "mongocdc.sources.read_ahead",  # wiring wraps the source in it
    "mongocdc.kafka",
    "mongocdc.sinks",  # the engine produces to ``engine.streaming.Sink``
    "mongocdc.offsets.kafka",  # concrete stores: wiring picks one, the engine sees ``OffsetStore``
    "mongocdc.offsets.sqlite",
    "mongocdc.offsets.connect_topic",
    "mongocdc.wiring",  # wiring.py, wiring_fleet.py and any wiring_*.py
    "mongocdc.cli",
    "mongocdc.replication",
    "mongocdc.spark",
)
SPARK_ALLOWED = ("mongocdc.spark", "mongocdc.errors", "mongocdc.signals", "mongocdc.config", "mongocdc.kafka")
SPARK_DRIVER = (
    "spark/job.py",
    "spark/merge.py",
    "spark/sinks.py",
    "spark/columns.py",
    "spark/schema_text.py",
    "spark/entry.py",
)
SPARK_DRIVER_ALLOWED = ("mongocdc.spark", "mongocdc.errors", "mongocdc.signals")
VERSION = ("mongocdc", "mongocdc.__version__")
"""``from mongocdc import __version__``: the package itself, as spark/ may import it."""

Modules = list[tuple[str, set[str]]]


@cache
def modules() -> Modules:
    """Each module of mongocdc (its path under ``mongocdc/``) and the modules it imports (read once per run)."""
    return [(p.relative_to(PACKAGE).as_posix(), file_imports(p, PACKAGE.parent)) for p in sorted(PACKAGE.rglob("*.py"))]


def within(name: str, areas: Iterable[str]) -> bool:
    """``name`` is one of ``areas`` or a module or attribute inside one."""
    return any(name == area or name.startswith(area + ".") for area in areas)


def test_third_party_libraries_stay_in_their_area() -> None:
    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        for name in names
        for library, homes in HOMES.items()
        if name.split(".")[0] == library and not rel.startswith(homes)
    ]
    assert wrong == []


def test_pure_core_imports_only_stdlib_and_bson() -> None:
    import sys

    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        if rel.startswith(PURE)
        for name in names
        if name.split(".")[0] not in PURE_ALLOWED and name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert wrong == []


def test_lower_layers_do_not_import_upper_ones() -> None:
    lower = ("events/", "kafka/", "sources/", "sinks/", "offsets/", "config/")
    upper = ("mongocdc.engine", "mongocdc.wiring", "mongocdc.cli", "mongocdc.replication")
    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        if rel.startswith(lower)
        for name in names
        if name.startswith(upper)
    ]
    assert wrong == []


def test_the_kafka_package_stands_below_its_users() -> None:
    """Sinks, offset stores, sources and replication build on ``mongocdc/kafka/``; it imports none of them."""
    allowed = ("mongocdc.kafka", "mongocdc.errors", "mongocdc.retry", "mongocdc.config")
    wrong = [
        f"{rel} imports {name}"
        for rel, names in modules()
        if rel.startswith("kafka/")
        for name in names
        if name.split(".")[0] == "mongocdc" and not name.startswith(allowed)
    ]
    assert wrong == []


# Each rule below returns its violations, ``"<module> imports <name>"``; the test of a rule asserts there are none,
# and ``test_each_rule_finds_a_breach`` that it reports a module breaking it.


def sources_and_sinks_apart(mods: Modules) -> list[str]:
    return [
        f"{rel} imports {name}"
        for rel, names in mods
        for name in names
        if (rel.startswith("sources/") and within(name, ("mongocdc.sinks",)))
        or (rel.startswith("sinks/") and within(name, ("mongocdc.sources",)))
    ]


def engine_on_protocols(mods: Modules) -> list[str]:
    return [
        f"{rel} imports {name}"
        for rel, names in mods
        if rel.startswith("engine/")
        for name in names
        if name.startswith(ENGINE_FORBIDDEN)  # a prefix: ``mongocdc.wiring`` is every wiring*.py
    ]


def spark_on_its_own(mods: Modules) -> list[str]:
    return [
        f"{rel} imports {name}"
        for rel, names in mods
        if rel.startswith("spark/")
        for name in names
        if within(name, ("mongocdc",))
        and name not in VERSION
        and not within(name, SPARK_DRIVER_ALLOWED if rel in SPARK_DRIVER else SPARK_ALLOWED)
    ]


RULES: dict[str, Callable[[Modules], list[str]]] = {
    "sources and sinks apart": sources_and_sinks_apart,
    "engine on protocols": engine_on_protocols,
    "spark on its own": spark_on_its_own,
}


def test_sources_and_sinks_do_not_import_each_other() -> None:
    """A reader and a writer of one topic share its format through ``events/`` (``events/notifications.py``)."""
    assert sources_and_sinks_apart(modules()) == []


def test_the_engine_imports_no_concrete_source_client_sink_store_or_upper_layer() -> None:
    assert engine_on_protocols(modules()) == []


def test_spark_imports_only_the_version_errors_config_and_kafka_and_its_driver_side_less() -> None:
    assert spark_on_its_own(modules()) == []


def test_every_file_the_rules_name_exists() -> None:
    """A renamed module would otherwise drop out of a rule silently."""
    missing = [rel for rel in (*SPARK_DRIVER, *(p for p in PURE if p.endswith(".py"))) if not (PACKAGE / rel).is_file()]
    assert missing == []


@pytest.mark.parametrize(
    ("rule", "rel", "name"),
    [
        ("sources and sinks apart", "sources/kafka/notifications.py", "mongocdc.sinks.kafka.notifications"),
        ("sources and sinks apart", "sinks/kafka/notifications.py", "mongocdc.sources.kafka.notifications.Reader"),
        ("engine on protocols", "engine/streaming.py", "mongocdc.sources.mongo.stream"),
        ("engine on protocols", "engine/snapshot.py", "mongocdc.kafka.producer"),
        ("engine on protocols", "engine/checkpoint.py", "mongocdc.sinks.kafka.producer.KafkaSink"),
        ("engine on protocols", "engine/fleet.py", "mongocdc.wiring"),
        ("engine on protocols", "engine/fleet.py", "mongocdc.wiring_fleet"),
        ("engine on protocols", "engine/connector.py", "mongocdc.offsets.sqlite"),
        ("engine on protocols", "engine/connector.py", "mongocdc.cli.state"),
        ("spark on its own", "spark/launcher.py", "mongocdc.events.codec"),
        ("spark on its own", "spark/status.py", "mongocdc.offsets.kafka"),
        ("spark on its own", "spark/options.py", "mongocdc.wiring"),
        ("spark on its own", "spark/job.py", "mongocdc.config"),
        ("spark on its own", "spark/merge.py", "mongocdc.kafka.reader"),
        ("spark on its own", "spark/job.py", "mongocdc.events.signals"),
    ],
)
def test_each_rule_finds_a_breach(rule: str, rel: str, name: str) -> None:
    assert RULES[rule]([(rel, {name})]) == [f"{rel} imports {name}"]


@pytest.mark.parametrize(
    ("rule", "rel", "name"),
    [
        ("sources and sinks apart", "sources/kafka/notifications.py", "mongocdc.events.notifications"),
        ("engine on protocols", "engine/streaming.py", "mongocdc.sources.base"),
        ("engine on protocols", "engine/streaming.py", "mongocdc.offsets.base"),
        ("engine on protocols", "engine/adoption.py", "mongocdc.offsets.connect"),
        ("spark on its own", "spark/job.py", "mongocdc.__version__"),
        ("spark on its own", "spark/merge.py", "mongocdc.spark.columns"),
        ("spark on its own", "spark/launcher.py", "mongocdc.config.redact_text"),
        ("spark on its own", "spark/status.py", "mongocdc.kafka.reader"),
        ("spark on its own", "spark/status.py", "pyspark.sql"),
        ("spark on its own", "spark/job.py", "mongocdc.signals.on_stop_signals"),
    ],
)
def test_each_rule_lets_what_it_allows_through(rule: str, rel: str, name: str) -> None:
    assert RULES[rule]([(rel, {name})]) == []
