"""Start-up check that the captured collections store the pre- and post-images a capture mode needs.

MongoDB (6.0+) records a document's pre-image (and post-image) only for collections created or
modified with ``changeStreamPreAndPostImages: {enabled: true}``. Without it a ``*_with_pre_image``
capture mode silently gets ``before: null``, and ``capture.mode.full.update.type=post_image``
makes MongoDB fail the change stream at the first update. Rather than fail on that first event,
the connector says so at start, naming the ``collMod`` command that enables it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from mongocdc.config import redact_text

log = logging.getLogger("mongocdc.mongo.preimages")


def needs_images(capture_mode: str, full_update_type: str = "lookup") -> bool:
    """Whether ``capture.mode`` / ``capture.mode.full.update.type`` rely on stored pre- or post-images."""
    post_images = full_update_type == "post_image" and "_update_full" in capture_mode
    return capture_mode.endswith("_with_pre_image") or post_images


def enable_command(coll: str) -> str:
    """The mongosh command that enables pre- and post-images on ``coll`` (run in its database)."""
    return f'db.runCommand({{collMod: "{coll}", changeStreamPreAndPostImages: {{enabled: true}}}})'


def images_enabled(options: Mapping[str, Any] | None) -> bool:
    """Whether a collection's ``listCollections`` options enable pre- and post-images."""
    setting = (options or {}).get("changeStreamPreAndPostImages") or {}
    return bool(setting.get("enabled")) if isinstance(setting, Mapping) else False


def check_pre_images(
    client: MongoClient[Any], namespaces: Iterable[tuple[str, str]], *, post_images: bool = False
) -> list[str]:
    """One warning per ``(db, collection)`` without ``changeStreamPreAndPostImages`` enabled.

    Each names the ``collMod`` command that enables it. A database whose collections cannot be
    listed (missing privilege, an old server) gets one warning saying the check was not made.
    ``post_images``: the capture mode reads post-images (``capture.mode.full.update.type=post_image``),
    so the consequence named is a failing stream instead of ``before: null``.
    """
    by_db: dict[str, list[str]] = {}
    for db, coll in namespaces:
        by_db.setdefault(db, []).append(coll)
    consequence = (
        "MongoDB fails the change stream at the first update of it (capture.mode.full.update.type=post_image)"
        if post_images
        else "its update, replace and delete events carry before: null"
    )
    warnings: list[str] = []
    for db, colls in by_db.items():
        try:
            options = {
                str(info["name"]): info.get("options")
                for info in client[db].list_collections(filter={"name": {"$in": colls}})
            }
        except PyMongoError as exc:
            warnings.append(
                f"could not check whether the collections of database {db!r} store pre- and post-images "
                f"(listCollections failed: {redact_text(str(exc))})"
            )
            continue
        for coll in colls:
            if coll in options and images_enabled(options[coll]):
                continue
            warnings.append(
                f"collection {db}.{coll} does not store pre- and post-images, so {consequence}; "
                f"enable them with `use {db}` then `{enable_command(coll)}` (MongoDB 6.0+)"
            )
    return warnings


def warn_missing_pre_images(
    client: MongoClient[Any], namespaces: Iterable[tuple[str, str]], *, post_images: bool = False
) -> list[str]:
    """``check_pre_images`` with each warning logged; returns them."""
    warnings = check_pre_images(client, namespaces, post_images=post_images)
    for warning in warnings:
        log.warning("%s", warning)
    return warnings
