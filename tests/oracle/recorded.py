"""mongocdc's transform chain and converters against Kafka Connect's own (``connect_oracle``), record by record.

The inputs are the records the real Debezium 3.6.1 wrote for the recorded workload
(``tests/unit/events/recorded/debezium/schemas-true``: every BSON and ``_id`` type, every update form,
deletes and their tombstones, transactions, heartbeats, snapshots), read back with their schemas, as
Debezium's ``SourceRecord``s hold them before any transform (headers as strings, no timestamp, heartbeats
in partition 0).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from mongocdc.events.connect.chain import RecordPipeline
from mongocdc.events.connect.data import DataError
from tests.oracle import connect_oracle

RECORDED = Path(__file__).resolve().parents[1] / "unit" / "events" / "recorded" / "debezium" / "schemas-true"


@cache
def _recorded() -> tuple[dict[str, Any], ...]:
    text = gzip.decompress((RECORDED / "records.jsonl.gz").read_bytes()).decode()
    records = []
    for line in text.splitlines():
        r = json.loads(line)
        if r["topic"] == "connect-offsets":
            continue
        records.append(
            {
                "topic": r["topic"],
                "partition": 0 if r["topic"].startswith("__debezium-heartbeat") else None,
                "key": r["key"],
                "value": r["value"],
                "timestamp": None,
                "headers": [[h["key"], h["value"]] for h in r["headers"]],
            }
        )
    return tuple(records)


def recorded_inputs(topic_prefix: str | None = None) -> list[dict[str, Any]]:
    """The recorded records (optionally only those whose topic starts with ``topic_prefix``), as oracle input."""
    return [dict(r) for r in _recorded() if topic_prefix is None or r["topic"].startswith(topic_prefix)]


def mongocdc_case(config: Mapping[str, str], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What mongocdc's chain makes of ``records``, in the oracle's result shape."""
    try:
        pipeline = RecordPipeline.from_config(config)
    except Exception as exc:  # noqa: BLE001 - the shape says which
        return {"error": f"{type(exc).__name__}: {exc}"}
    out: list[dict[str, Any]] = []
    for r in records:
        try:
            topic, partition = r["topic"], r.get("partition")
            key = None if r["key"] is None else r["key"].encode()
            value = None if r["value"] is None else r["value"].encode()
            headers: list[tuple[str, str | bytes | None]] = [(name, data) for name, data in r.get("headers", ())]
            record = pipeline.record(topic, key, value, headers, partition, r.get("timestamp"))
            transformed = pipeline.transform(record)
            if transformed is None:
                out.append({"dropped": True})
                continue
            written = pipeline.write(transformed)
            if pipeline.fused is not None:  # the fused writer's bytes, as stream and snapshot write them: a shape's
                # first record is the general chain's (and checked against it), the second the fused writer's
                pipeline.process(topic, key, value, headers, partition)
                fused = pipeline.process(topic, key, value, headers, partition)
                assert fused is not None
                written = fused
            out.append(
                {
                    "topic": written.topic,
                    "partition": written.partition,
                    "key": written.key,
                    "value": written.value,
                    "timestamp": transformed.timestamp,
                    "headers": [(name, value) for name, value in written.headers],
                }
            )
        except DataError as exc:
            out.append({"error": f"DataError: {exc}"})
    return {"records": out}


@dataclass
class CaseResults:
    """What :func:`run_cases` found, by case name."""

    differences: dict[str, list[str]] = field(default_factory=dict)
    """Each case's differences between mongocdc and Connect (empty when they agree)."""
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What mongocdc made of each case (:func:`mongocdc_case`'s shape)."""
    oracle: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What Kafka Connect made of each case (``connect_oracle.run``'s shape)."""


def run_cases(cases: Mapping[str, tuple[Mapping[str, str], Sequence[Mapping[str, Any]]]]) -> CaseResults:
    """Run every named case on both sides (one JVM for all) and compare them record by record.

    A case Connect refuses must be refused by mongocdc too; a record Connect fails on must fail in mongocdc
    (the messages are not compared); everything else is compared byte for byte.
    """
    names = list(cases)
    oracle = connect_oracle.run([{"config": dict(cases[n][0]), "records": list(cases[n][1])} for n in names])
    result = CaseResults()
    for name, expected in zip(names, oracle, strict=True):
        config, records = cases[name]
        got = mongocdc_case(config, records)
        result.oracle[name], result.outcomes[name] = expected, got
        result.differences[name] = problems = []
        label = f"case {name!r} {dict(config)}"
        if "error" in expected or "error" in got:
            if ("error" in expected) != ("error" in got):
                problems.append(
                    f"{label}: Connect {expected.get('error', 'accepted it')}; mongocdc "
                    f"{got.get('error', 'accepted it')}"
                )
            continue
        for index, (want, have) in enumerate(zip(expected["records"], got["records"], strict=True)):
            if "error" in want or "error" in have:
                if ("error" in want) != ("error" in have):
                    problems.append(
                        f"{label} record {index} ({records[index]['topic']}): Connect "
                        f"{want.get('error', 'wrote it')}; mongocdc {have.get('error', 'wrote it')}"
                    )
                continue
            if want != have:
                fields = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
                detail = "; ".join(f"{k}: Connect {want.get(k)!r} mongocdc {have.get(k)!r}" for k in fields)
                problems.append(f"{label} record {index} ({records[index]['topic']}): {detail}")
    return result


def compare(cases: Sequence[tuple[Mapping[str, str], Sequence[Mapping[str, Any]]]]) -> list[str]:
    """:func:`run_cases` for unnamed cases: every difference, empty when the two agree."""
    found = run_cases({str(number): case for number, case in enumerate(cases)})
    return [problem for problems in found.differences.values() for problem in problems]
