"""Debezium itself is the oracle: the real connector and mongocdc capture the same workload, side by side.

Debezium 3.6.1.Final runs in Kafka Connect (``tests/services/connect.py``) next to two
``mongocdc stream`` processes, on one MongoDB test server and the suite's broker: one pair with the
JsonConverter's ``schemas.enable=false`` and one with ``true``, each connector with its own topic
prefix and signal collection, and a third pair with the transform chain teams run most
(ExtractNewDocumentState and RegexRouter, keys without schemas and values with them). The workload
(``tests/services/record_debezium.py``) covers every BSON and ``_id`` type, every update form
(operators, pipelines, truncated arrays), replace, delete,
transactions over two collections, an initial snapshot and an incremental snapshot. Every topic of
each pair is then compared record by record with ``mongocdc.events.compare`` (``mongocdc topic
compare`` does the same for a user's own deployment): keys byte for byte, partitions, every value
field, headers, tombstones, the transaction and heartbeat topics. Nothing may differ but what
``compare`` documents as the connector's own (prefix, version, wall-clock times, watermarks).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from bson.raw_bson import RawBSONDocument

from mongocdc.events.compare import Comparison, Record, compare
from tests.integration.helpers import CliProcess, run_cli
from tests.services import record_debezium as rec
from tests.services.connect import KafkaConnect

pytestmark = [pytest.mark.kafka, pytest.mark.mongodb]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
PAIRS = {False: ("dbzf", "mcf"), True: ("dbzt", "mct")}
CHAIN = ("dbzu", "mcu")
"""A pair with the chain teams run most: documents flattened by ExtractNewDocumentState (with added fields and
headers, deletes rewritten and their tombstones kept) and routed by RegexRouter, keys without schemas and values
with them. The flattening skips, by a negated predicate, the two collections whose documents Debezium's transform
fails on (MinKey/MaxKey ``_id``s, JavaScript with scope, arrays of mixed types: the task is killed), as a team with
such collections configures it."""
FLAT = ("dbzx", "mcx")
"""A pair with ``ExtractNewDocumentState`` alone (deletes rewritten, their tombstones kept) and JsonConverter's
defaults but schemas off: the chain mongocdc writes straight from the change (``events/connect/unwrap_json``). The
two collections the transform fails on are left out (``collection.exclude.list``)."""
FLAT_EXCLUDED = ("ids", "types")
OUTBOX = ("dbzo", "mco")
"""A pair with Debezium's MongoDB outbox router over a collection of outbox events in a database of its own:
events routed to ``<prefix>.outbox.<aggregatetype>``, payloads expanded, the event type in a header."""
OUTBOX_DB = "outboxdb"  # no other pair captures it (Debezium streams database.include.list unanchored)
WAIT_S = 120.0


def _outbox(prefix: str, mongo_uri: str) -> dict[str, str]:
    config = _settings(prefix, mongo_uri)
    del config["signal.data.collection"]
    config.update(
        {
            "database.include.list": OUTBOX_DB,
            "capture.mode": "change_streams_update_full",
            "transforms": "outbox",
            "transforms.outbox.type": "io.debezium.connector.mongodb.transforms.outbox.MongoEventRouter",
            "transforms.outbox.route.topic.replacement": f"{prefix}.outbox.${{routedByValue}}",
            "transforms.outbox.collection.expand.json.payload": "true",
            "transforms.outbox.collection.fields.additional.placement": "type:header:eventType",
            **_converters(False),
        }
    )
    return config


def _outbox_event(number: int) -> dict[str, Any]:
    return {
        "_id": f"event-{number}",
        "aggregateid": f"order-{number % 2}",
        "aggregatetype": "Order",
        "type": "OrderCreated" if number % 3 else "OrderShipped",
        "payload": {"order": number, "lines": [{"sku": "A-1", "qty": number}], "total": number * 2.5},
    }


def _flat(prefix: str) -> dict[str, str]:
    del prefix
    return {
        "collection.exclude.list": f"{rec.DB}\\.({'|'.join(FLAT_EXCLUDED)})",
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
        **_converters(False),
    }


def _chain(prefix: str) -> dict[str, str]:
    return {
        "transforms": "unwrap,route",
        "transforms.unwrap.type": "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState",
        "transforms.unwrap.add.fields": "op,collection",
        "transforms.unwrap.add.headers": "op,db",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
        "transforms.unwrap.predicate": "unflattened",
        "transforms.unwrap.negate": "true",
        "predicates": "unflattened",
        "predicates.unflattened.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.unflattened.pattern": f"{prefix}\\.{rec.DB}\\.(ids|types)",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": f"{prefix}\\.{rec.DB}\\.(.*)",
        "transforms.route.replacement": f"{prefix}.flat.$1",
        "key.converter": JSON_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "true",
    }


def _settings(prefix: str, mongo_uri: str) -> dict[str, str]:
    """The Debezium connector's configuration; mongocdc is given the same properties."""
    config = rec.connector_config(mongo_uri)
    config.update(
        {
            "topic.prefix": prefix,
            "signal.data.collection": f"{rec.DB}.signals_{prefix}",
        }
    )
    return config


def _count(reader: rec.TopicReader, prefix: str) -> int:
    return reader.count(lambda name: name.startswith(prefix + ".") and name != f"{prefix}.transaction")


def _wait(condition: Any, what: str, explain: Any = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))
        time.sleep(0.1)


def _converters(schemas: bool) -> dict[str, str]:
    return {
        "key.converter": JSON_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": str(schemas).lower(),
        "value.converter.schemas.enable": str(schemas).lower(),
    }


def _mongocdc(tmp: Path, prefix: str, mongo_uri: str, bootstrap: str, records: dict[str, str]) -> CliProcess:
    settings: dict[str, Any] = {
        key: value for key, value in _settings(prefix, mongo_uri).items() if not key.startswith("topic.creation.")
    }
    settings.update(
        {
            "name": prefix,
            **records,
            "offset.storage.file.filename": str(tmp / f"{prefix}.db"),
            "offset.flush.interval.ms": "200",
            "kafka.bootstrap.servers": bootstrap,
        }
    )
    path = tmp / f"{prefix}.properties"
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return CliProcess("--config", str(path), "stream")


def _records(reader: rec.TopicReader, prefix: str) -> list[Record]:
    names = [
        name for name in reader.topics() if name.startswith(prefix + ".") or name == f"__debezium-heartbeat.{prefix}"
    ]
    return [Record(r.topic, r.partition, r.key, r.value, tuple(r.headers)) for r in reader.read(names)]


@pytest.fixture(scope="module")
def comparisons(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str) -> Iterator[dict[Any, Comparison]]:
    tmp = tmp_path_factory.mktemp("compat")
    with rec.SecantusServer(data_dir=tmp / "mongo") as mongo:
        client: pymongo.MongoClient[RawBSONDocument] = pymongo.MongoClient(
            mongo.uri, document_class=RawBSONDocument, uuidRepresentation="standard"
        )
        work = rec.Workload(client)
        rec.prepare(work)
        outbox = client[OUTBOX_DB]["outbox"]
        outbox.insert_many([_outbox_event(n) for n in range(2)])  # read by the snapshots
        for dbz, mc in (*PAIRS.values(), CHAIN, FLAT):
            for prefix in (dbz, mc):
                work.create(f"signals_{prefix}")
        snapshot_records = work.expected_records
        reader = rec.TopicReader(kafka_bootstrap)
        connect = KafkaConnect(kafka_bootstrap, mode="standalone", schemas_enable=False)
        streams: list[CliProcess] = []
        try:
            connect.start()
            runs = [(dbz, mc, _converters(schemas)) for schemas, (dbz, mc) in PAIRS.items()]
            runs.append((CHAIN[0], CHAIN[1], {}))
            runs.append((FLAT[0], FLAT[1], _flat(FLAT[0])))
            for dbz, mc, records in runs:
                connect.create_connector(dbz, {**_settings(dbz, mongo.uri), **(records or _chain(dbz))})
                streams.append(_mongocdc(tmp, mc, mongo.uri, kafka_bootstrap, records or _chain(mc)))
            connect.create_connector(OUTBOX[0], _outbox(OUTBOX[0], mongo.uri))
            streams.append(_mongocdc(tmp, OUTBOX[1], mongo.uri, kafka_bootstrap, _outbox(OUTBOX[1], mongo.uri)))
            for dbz, _, _ in [*runs, (OUTBOX[0], None, None)]:
                connect.wait_until_running(dbz)
            prefixes = [p for dbz, mc, _ in runs for p in (dbz, mc)]
            envelopes = PAIRS[False][0]  # what the flat pair owes: these records, less the excluded collections'

            def owed(prefix: str, wanted: int) -> bool:
                if prefix not in FLAT:
                    return _count(reader, prefix) >= wanted
                excluded = {f"{envelopes}.{rec.DB}.{name}" for name in FLAT_EXCLUDED}
                left_out = reader.count(lambda name: name in excluded)
                return _count(reader, envelopes) >= wanted and _count(reader, prefix) >= wanted - left_out

            def counts() -> str:
                states = {p: _count(reader, p) for p in prefixes}
                return f"records per prefix {states}; " + " | ".join(s.stderr[-1500:] for s in streams)

            _wait(
                lambda: all(owed(p, snapshot_records) for p in prefixes),
                f"the initial snapshots ({snapshot_records} records)",
                counts,
            )

            work.phase = "stream"
            outbox.insert_many([_outbox_event(n) for n in range(2, 6)])  # streamed: the router's events

            def settle() -> None:
                wanted = work.expected_records
                _wait(lambda: all(owed(p, wanted) for p in prefixes), f"{wanted} records", counts)

            rec.stream(work, settle)

            # An incremental snapshot of a collection Debezium 3.6.1 can chunk (int32 _ids only).
            flattened = {p: f"{p}.flat.customers" for p in CHAIN} | {p: f"{p}.{rec.DB}.customers" for p in FLAT}
            flat_customers = {p: reader.count(lambda n, t=topic: n == t) for p, topic in flattened.items()}
            for prefix in prefixes:
                signal_doc = {
                    "_id": f"incremental-{prefix}",
                    "type": "execute-snapshot",
                    "data": {"data-collections": [f"{rec.DB}.customers"], "type": "incremental"},
                }
                client[rec.DB][f"signals_{prefix}"].insert_one(signal_doc)

            def incremental_done(prefix: str) -> bool:
                if prefix in flattened:  # flattened: the two reads are two more records on the (routed) topic
                    return reader.count(lambda n: n == flattened[prefix]) >= flat_customers[prefix] + 2
                reads = [
                    r
                    for r in _records(reader, prefix)
                    if r.topic == f"{prefix}.{rec.DB}.customers" and r.value and b'"incremental"' in r.value
                ]
                return len(reads) == 2

            _wait(lambda: all(incremental_done(p) for p in prefixes), "the incremental snapshots", counts)
            _wait(
                lambda: all(reader.count(lambda n, p=p: n == f"__debezium-heartbeat.{p}") > 0 for p in prefixes),
                "heartbeats",
            )

            def routed(prefix: str) -> int:
                return reader.count(lambda n: n.startswith(f"{prefix}.outbox."))

            _wait(
                lambda: routed(OUTBOX[0]) >= 4 and routed(OUTBOX[1]) == routed(OUTBOX[0]),
                "the outbox events on both sides",
                lambda: f"{routed(OUTBOX[0])} and {routed(OUTBOX[1])} routed events",
            )
        finally:
            for process in streams:
                assert process.stop(signal.SIGTERM) == 0, process.stderr
            connect.stop()
        result: dict[Any, Comparison] = {
            name: compare(
                _records(reader, dbz),
                _records(reader, mc),
                reference_prefix=dbz,
                compared_prefix=mc,
                partitions=reader.topics(),
            )
            for name, (dbz, mc) in [*PAIRS.items(), ("chain", CHAIN), ("flat", FLAT), ("outbox", OUTBOX)]
        }
        reader.close()
        client.close()
        yield result


@pytest.mark.parametrize("schemas", [False, True], ids=["schemas.enable=false", "schemas.enable=true"])
def test_mongocdc_writes_what_debezium_writes(comparisons: dict[Any, Comparison], schemas: bool) -> None:
    result = comparisons[schemas]
    differences = [d.describe() for d in result.differences]
    assert differences == [], "\n".join(differences)
    # the comparison saw every kind of record
    topics = result.records
    assert topics[f"<prefix>.{rec.DB}.types"][0] > 20
    assert topics["<prefix>.transaction"] == (4, 4)  # BEGIN and END of two transactions
    assert topics["__debezium-heartbeat.<prefix>"][1] > 0
    assert sum(a for a, _ in topics.values()) > 120


def test_a_transform_chain_writes_what_debeziums_writes(comparisons: dict[Any, Comparison]) -> None:
    result = comparisons["chain"]
    differences = [d.describe() for d in result.differences]
    assert differences == [], "\n".join(differences)
    topics = result.records
    # routed: every collection's records on <prefix>.flat.<collection>, none left on the original topics
    assert topics["<prefix>.flat.types"][0] > 20 and f"<prefix>.{rec.DB}.types" not in topics
    assert topics["<prefix>.flat.customers"][0] > 5
    assert topics["<prefix>.transaction"] == (4, 4)
    assert topics["__debezium-heartbeat.<prefix>"][1] > 0
    assert sum(a for a, _ in topics.values()) > 120


def test_extract_new_document_state_alone_writes_what_debeziums_writes(comparisons: dict[Any, Comparison]) -> None:
    """The chain mongocdc writes straight from the change (the fused writer), snapshot, stream and incremental
    snapshot, beside Debezium's."""
    result = comparisons["flat"]
    differences = [d.describe() for d in result.differences]
    assert differences == [], "\n".join(differences)
    topics = result.records
    assert topics[f"<prefix>.{rec.DB}.customers"][0] > 5
    assert not [t for t in topics if t.removeprefix(f"<prefix>.{rec.DB}.") in FLAT_EXCLUDED]
    assert topics["__debezium-heartbeat.<prefix>"][1] > 0
    assert sum(a for a, _ in topics.values()) > 60


def test_the_outbox_router_writes_what_debeziums_writes(comparisons: dict[Any, Comparison]) -> None:
    result = comparisons["outbox"]
    differences = [d.describe() for d in result.differences]
    assert differences == [], "\n".join(differences)
    assert result.records["<prefix>.outbox.Order"][0] >= 4  # the streamed events, routed by aggregatetype
    assert not [topic for topic in result.records if topic.startswith(f"<prefix>.{OUTBOX_DB}")]


def test_topic_compare_reports_the_same_from_the_command_line(
    comparisons: dict[Any, Comparison], kafka_bootstrap: str
) -> None:
    dbz, mc = PAIRS[False]
    result = run_cli(
        "topic", "compare", dbz, "--prefix", mc, "--bootstrap-servers", kafka_bootstrap, "--output", "json"
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    assert report["identical"] is True
    assert report["records"] == {
        topic: {"reference": a, "compared": b} for topic, (a, b) in comparisons[False].records.items()
    }
