"""The BSON → JSON renderer alone: µs per document of the benchmark's workload, no MongoDB, no Kafka.

``python -m bench.renderer [--docs N] [--repeat N] [--output table|json]``

Rows (each the best of ``--repeat`` passes over the same ``--docs`` documents, in one process,
the rows interleaved pass by pass so that a busy neighbour slows them all alike):

* ``document_to_json`` of a ``RawBSONDocument``: what mongocdc renders (``after``), as the snapshot
  scan and the change stream read raw BSON;
* ``document_to_json`` of a decoded ``dict``: what the bench's baseline renders (pymongo's default
  decoding; the renderer encodes it to BSON first);
* ``value_to_json`` of the ``_id`` (the key's ``id``);
* for comparison, texts that are *not* Debezium's: python-bsonjs relaxed (``bsonjs.dumps`` of the
  bytes, what mongocdc used before; only when python-bsonjs is installed, it is no dependency),
  ``bson.json_util.dumps`` relaxed of the decoded document, and of the bytes (decoding included),
  and the C JSON encoder alone over an already-converted document (a floor for any renderer that
  goes through Python objects).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import bson
from bson import json_util
from bson.raw_bson import RawBSONDocument

from bench.workload import documents
from mongocdc.events import codec


def _rows(docs: int) -> dict[str, tuple[Callable[[Any], Any], list[Any]]]:
    dicts = list(documents(docs))
    raws = [bson.encode(d) for d in dicts]
    raw_docs = [RawBSONDocument(r) for r in raws]
    decoded = [bson.decode(r) for r in raws]
    ids = [d["_id"] for d in decoded]
    relaxed = json_util.RELAXED_JSON_OPTIONS
    converted = [json.loads(codec.document_to_json(r)) for r in raw_docs]
    encode = json.JSONEncoder(separators=(",", ": "), ensure_ascii=False, check_circular=False).encode
    rows: dict[str, tuple[Callable[[Any], Any], list[Any]]] = {
        "document_to_json(RawBSONDocument)  [mongocdc]": (codec.document_to_json, raw_docs),
        "document_to_json(dict)  [bench baseline]": (codec.document_to_json, decoded),
        "value_to_json(_id)  [key]": (codec.value_to_json, ids),
    }
    try:
        import bsonjs  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        pass
    else:
        rows["bsonjs.dumps(bytes) relaxed  [before e9db287]"] = (bsonjs.dumps, raws)
    rows["json_util.dumps(dict) relaxed"] = (lambda d: json_util.dumps(d, json_options=relaxed), decoded)
    rows["json_util.dumps(bson.decode(bytes)) relaxed"] = (
        lambda r: json_util.dumps(bson.decode(r), json_options=relaxed),
        raws,
    )
    rows["bson.decode(bytes) alone"] = (bson.decode, raws)
    rows["json encoder of a converted dict (floor)"] = (encode, converted)
    return rows


def _pass(fn: Callable[[Any], Any], items: list[Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for item in items:
        fn(item)
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(docs: int, repeat: int) -> dict[str, Any]:
    rows = _rows(docs)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for name, (fn, items) in rows.items():
            wall, cpu = _pass(fn, items)
            old = best.get(name)
            if old is None or wall < old[0]:
                best[name] = (wall, cpu)
    sample = bson.encode(next(documents(1)))
    return {
        "python": platform.python_version(),
        "documents": docs,
        "document_bytes": len(sample),
        "repeat": repeat,
        "us_per_document": {name: round(wall / docs * 1e6, 2) for name, (wall, _cpu) in best.items()},
        "cpu_us_per_document": {name: round(cpu / docs * 1e6, 2) for name, (_wall, cpu) in best.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.renderer", description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=5000, help="workload documents per pass (5000)")
    parser.add_argument("--repeat", type=int, default=15, help="passes per row; the best is shown (15)")
    parser.add_argument("--output", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    result = measure(args.docs, args.repeat)
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"Python {result['python']}: {result['documents']:,} workload documents of ~{result['document_bytes']} bytes, "
        f"best of {result['repeat']} passes"
    )
    print(f"{'renderer':<52}{'µs/doc':>9}{'CPU µs/doc':>12}")
    for name, us in result["us_per_document"].items():
        print(f"{name:<52}{us:>9.2f}{result['cpu_us_per_document'][name]:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
