"""The documents every benchmark reads: about 1 KB of BSON each, of the types a real collection holds."""

from __future__ import annotations

import datetime as dt
import random
import string
from collections.abc import Iterator
from typing import Any

import bson
from bson import Decimal128, ObjectId
from pymongo.collection import Collection

DOCUMENT_BYTES = 1024
"""Target BSON size of one document."""

_EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
_WORDS = [
    "".join(random.Random(i).choices(string.ascii_lowercase, k=random.Random(-i).randint(3, 9))) for i in range(512)
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def make_document(i: int, rng: random.Random) -> dict[str, Any]:
    """Document number ``i``: an ObjectId ``_id``, strings, numbers, dates, a nested document, arrays."""
    doc: dict[str, Any] = {
        "_id": ObjectId(),
        "seq": i,
        "customer": {
            "name": _text(rng, 2).title(),
            "email": f"user{i}@example.com",
            "address": {"street": _text(rng, 3), "city": _text(rng, 1).title(), "zip": f"{rng.randint(0, 99999):05d}"},
            "vip": rng.random() < 0.1,
        },
        "created": _EPOCH + dt.timedelta(seconds=rng.randint(0, 86_400 * 365)),
        "amount": Decimal128(f"{rng.randint(0, 10**6) / 100:.2f}"),
        "score": rng.random(),
        "count": rng.randint(0, 2**40),
        "tags": [_text(rng, 1) for _ in range(rng.randint(1, 6))],
        "items": [
            {
                "sku": f"SKU-{rng.randint(0, 10**6):07d}",
                "qty": rng.randint(1, 9),
                "price": rng.randint(100, 99_999) / 100,
            }
            for _ in range(rng.randint(1, 4))
        ],
        "status": rng.choice(["new", "paid", "shipped", "delivered", "returned"]),
        "note": "",
    }
    padding = DOCUMENT_BYTES - len(bson.encode(doc))
    doc["note"] = _text(rng, 200)[: max(0, padding)]
    return doc


def documents(count: int, *, seed: int = 20240101, start: int = 0) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed + start)
    for i in range(start, start + count):
        yield make_document(i, rng)


def load(collection: Collection[Any], count: int, *, batch: int = 1000, seed: int = 20240101) -> int:
    """Insert ``count`` generated documents; returns the BSON bytes written."""
    total = 0
    pending: list[dict[str, Any]] = []
    for doc in documents(count, seed=seed):
        pending.append(doc)
        if len(pending) >= batch:
            total += sum(len(bson.encode(d)) for d in pending)
            collection.insert_many(pending, ordered=False)
            pending = []
    if pending:
        total += sum(len(bson.encode(d)) for d in pending)
        collection.insert_many(pending, ordered=False)
    return total
