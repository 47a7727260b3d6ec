"""``MongoChangeStreamSource``: a change stream at deployment, database or collection scope."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import bson
from bson import Timestamp
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument
from pymongo import MongoClient
from pymongo.change_stream import ChangeStream, ClusterChangeStream
from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from mongocdc.config import redact_text
from mongocdc.errors import ConfigError, MalformedEventError, ResumePositionLostError, UnreachableError
from mongocdc.events.changes import (
    ControlChange,
    MalformedChangeError,
    SignalChange,
    StreamedChange,
    Transforms,
    convert_change,
    namespace_of,
    position_of,
    top_level,
)
from mongocdc.events.position import Position
from mongocdc.events.split import FragmentBuffer, SplitEventError
from mongocdc.retry import Backoff
from mongocdc.sources.base import Idle, StreamItem
from mongocdc.sources.mongo.client import failure_summary, raise_for_privileges

log = logging.getLogger("mongocdc.mongo.stream")

Scope = Literal["deployment", "database", "collection"]

# MongoDB error codes meaning the resume point is gone.
INVALID_RESUME_TOKEN = 260
CHANGE_STREAM_FATAL = 280
CHANGE_STREAM_HISTORY_LOST = 286
RESUME_LOST_CODES = frozenset({INVALID_RESUME_TOKEN, CHANGE_STREAM_FATAL, CHANGE_STREAM_HISTORY_LOST})
FAILED_TO_PARSE = 9
"""MongoDB's answer to a resume token it cannot read as one of its own (``resume token string was not a valid
hex string``, ``resume token is not a valid resume token``); also a bad pipeline's, so the message decides."""

FULL_DOCUMENT = {
    "change_streams": None,
    "change_streams_update_full": "updateLookup",
    "change_streams_with_pre_image": None,
    "change_streams_update_full_with_pre_image": "updateLookup",
}
"""``fullDocument`` per ``capture.mode`` with ``capture.mode.full.update.type=lookup``."""

POST_IMAGE_FULL_DOCUMENT = "required"
"""``fullDocument`` of the ``*_update_full*`` modes with ``capture.mode.full.update.type=post_image``
(MongoDB 6.0+, ``changeStreamPreAndPostImages`` enabled on the collection), as Debezium asks for it:
the post-image stored at the update, never a later version of the document; MongoDB fails the
stream on an update whose post-image is missing."""

SPLIT_LARGE_EVENT_STAGE: dict[str, Any] = {"$changeStreamSplitLargeEvent": {}}


def full_document_option(capture_mode: str, full_update_type: str = "lookup") -> str | None:
    """The change stream's ``fullDocument`` option for ``capture.mode`` and ``capture.mode.full.update.type``."""
    lookup = FULL_DOCUMENT.get(capture_mode)
    if lookup is None:
        return None
    return POST_IMAGE_FULL_DOCUMENT if full_update_type == "post_image" else lookup


def uses_pre_images(capture_mode: str) -> bool:
    """Whether ``capture.mode`` asks MongoDB for the document before the change."""
    return capture_mode.endswith("_with_pre_image")


def change_stream_pipeline(
    *,
    internal: Sequence[Mapping[str, Any]] = (),
    user: Sequence[Mapping[str, Any]] = (),
    order: str = "internal_first",
    oversize_mode: str = "fail",
) -> list[dict[str, Any]]:
    """The aggregation pipeline of the change stream.

    mongocdc's own stages and the user's ``cursor.pipeline`` in ``cursor.pipeline.order``
    (``internal_first`` or ``user_first``); with ``cursor.oversize.handling.mode=split``,
    ``$changeStreamSplitLargeEvent`` last, where MongoDB requires it.
    """
    first, second = (user, internal) if order == "user_first" else (internal, user)
    stages = [dict(stage) for stage in (*first, *second)]
    if oversize_mode == "split":
        stages.append(dict(SPLIT_LARGE_EVENT_STAGE))
    return stages


def resume_lost_error(connector: str, detail: str, *, refused: bool = False) -> ResumePositionLostError:
    """Exit 5 with the remedy: the stored position is gone from the oplog, or (``refused``) the server does not
    take the stored resume token as one of its own (another deployment's, or damaged)."""
    what = (
        f"MongoDB refused the stored resume token ({detail}): it is not a position in this deployment's change "
        "streams (a token of another deployment or cluster, or a damaged one)"
        if refused
        else f"the stored resume position is no longer in MongoDB's oplog ({detail})"
    )
    return ResumePositionLostError(
        f"{what}; changes made since then cannot be streamed",
        hint=(
            f"re-snapshot: `mongocdc offsets reset --yes` for connector {connector!r} and start "
            "`mongocdc stream` again (it snapshots first with snapshot.mode=initial), or set "
            "snapshot.mode=when_needed to do this automatically; give the oplog more room "
            "(replSetResizeOplog) so it does not happen again"
            if not refused
            else f"check that mongodb.connection.string points at the deployment connector {connector!r} captured; "
            "if it does, re-snapshot: `mongocdc offsets reset --yes` and start `mongocdc stream` again (it snapshots "
            "first with snapshot.mode=initial), or set snapshot.mode=when_needed to do this automatically"
        ),
    )


def is_resume_lost(exc: OperationFailure) -> bool:
    """Whether MongoDB refused to resume because the position is no longer in its history."""
    return exc.code in RESUME_LOST_CODES or "resume point may no longer be in the oplog" in str(exc)


def is_resume_refused(exc: OperationFailure) -> bool:
    """Whether MongoDB refused the resume token itself: it cannot read it as a token of its own."""
    return exc.code == FAILED_TO_PARSE and "resume token" in str(exc).lower()


RAW_CHANGES: CodecOptions[RawBSONDocument] = CodecOptions(
    document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_MS
)
"""How change documents are decoded: raw BSON, top-level fields on access (see ``MongoChangeStreamSource._watch``);
``wallTime`` as milliseconds (``DatetimeMS``), which is what the event needs, without a ``datetime``."""


_CLUSTER_STREAM_ARGUMENTS: dict[str, Any] = dict.fromkeys(
    (
        "pipeline",
        "full_document",
        "resume_after",
        "max_await_time_ms",
        "batch_size",
        "collation",
        "start_at_operation_time",
        "session",
        "start_after",
    ),
)
"""``ClusterChangeStream``'s required arguments, defaulted as ``MongoClient.watch`` defaults them."""


def _inflate(document: Any) -> Any:
    """A plain ``dict`` (nested documents too) for code that builds on what it reads: signals."""
    if isinstance(document, RawBSONDocument):
        return bson.decode(document.raw)
    return document


class MongoChangeStreamSource:
    """Reads one change stream, reopening it after invalidations and lost connections."""

    def __init__(
        self,
        client: MongoClient[Any],
        *,
        connector: str,
        scope: Scope = "deployment",
        target: str | None = None,
        capture_mode: str = "change_streams_update_full",
        poll_interval_ms: int = 500,
        max_await_time_ms: int | None = None,
        batch_size: int = 2048,
        rs_name: str | None = None,
        backoff: Backoff | None = None,
        include: Callable[[str, str], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        primary_watch: Any = None,
        transforms: Transforms | None = None,
        signal_collection: str | None = None,
        full_update_type: str = "lookup",
        pipeline: Sequence[Mapping[str, Any]] = (),
        pipeline_order: str = "internal_first",
        oversize_mode: str = "fail",
    ) -> None:
        if scope != "deployment" and not target:
            raise ConfigError(f"capture.scope={scope} needs capture.target")
        self._client = client
        self._connector = connector
        self._scope = scope
        self._target = target
        self._capture_mode = capture_mode
        self._full_update_type = full_update_type
        self._pipeline = change_stream_pipeline(
            internal=self._internal_stages(), user=pipeline, order=pipeline_order, oversize_mode=oversize_mode
        )
        self._fragments = FragmentBuffer()
        self._poll_ms = poll_interval_ms
        self._max_await_ms = max_await_time_ms or poll_interval_ms
        self._batch_size = batch_size
        self._rs = rs_name
        self._backoff = backoff or Backoff()
        self._include = include
        self._sleep = sleep
        self._stream: ChangeStream[RawBSONDocument] | None = None
        self._position: Position | None = None
        self._start_after: bool = False
        self.reconnects = 0
        self._primary_watch = primary_watch
        self._transforms = transforms
        self._included: dict[tuple[str, str], bool] = {}
        self._signal_ns: tuple[str, str] | None = None
        if signal_collection:
            db, _, coll = signal_collection.partition(".")
            self._signal_ns = (db, coll)

    @property
    def elections(self) -> int:
        """Primary elections seen by the client since it connected."""
        return int(getattr(self._primary_watch, "elections", 0))

    @property
    def position(self) -> Position | None:
        """The position after the last item returned."""
        return self._position

    def _watch(self, options: dict[str, Any]) -> ChangeStream[RawBSONDocument]:
        """Open the change stream decoding each change as raw BSON (:data:`RAW_CHANGES`).

        Only the top-level fields of a change are decoded when read; ``fullDocument`` and the
        other sub-documents stay bytes until rendered, so a document goes to JSON without a
        decode to dicts and a re-encode. ``MongoClient.watch`` decodes with the client's codec
        options, so the deployment scope builds the ``ClusterChangeStream`` the way it does, on
        an ``admin`` database handle with raw codec options.
        """
        if self._scope == "deployment":
            admin = self._client.admin.with_options(codec_options=RAW_CHANGES)
            stream = ClusterChangeStream(admin, **{**_CLUSTER_STREAM_ARGUMENTS, **options})
            stream._initialize_cursor()
            return stream
        assert self._target is not None
        if self._scope == "database":
            return self._client.get_database(self._target, codec_options=RAW_CHANGES).watch(**options)
        db, _, coll = self._target.partition(".")
        return self._client[db].get_collection(coll, codec_options=RAW_CHANGES).watch(**options)

    @staticmethod
    def _internal_stages() -> list[dict[str, Any]]:
        """mongocdc's own pipeline stages: none yet (filtering is client-side, see ARCHITECTURE.md)."""
        return []

    @property
    def pipeline(self) -> list[dict[str, Any]]:
        """The aggregation pipeline the change stream is opened with."""
        return [dict(stage) for stage in self._pipeline]

    def _watch_options(self, start: Position | None) -> dict[str, Any]:
        options: dict[str, Any] = {
            "max_await_time_ms": self._max_await_ms,
            "batch_size": self._batch_size,
        }
        if self._pipeline:
            options["pipeline"] = self.pipeline
        full = full_document_option(self._capture_mode, self._full_update_type)
        if full:
            options["full_document"] = full
        if uses_pre_images(self._capture_mode):
            options["full_document_before_change"] = "whenAvailable"
        token = start.token_document() if start else None
        if token is not None:
            options["start_after" if self._start_after else "resume_after"] = token
        elif start is not None and start.sec > 0:
            # A position without a token (`offsets reset --to-timestamp`): start at that cluster time.
            options["start_at_operation_time"] = Timestamp(start.sec, max(start.ord, 1))
        return options

    def _cluster_time_now(self) -> Position:
        reply = self._client.admin.command("ping")
        op_time = reply.get("operationTime")
        if isinstance(op_time, Timestamp):
            return Position(op_time.time, op_time.inc)
        return Position(int(time.time()), 0)

    def open(self, start: Position | None) -> None:
        """Open the stream after ``start``, or at the present when there is none."""
        self._position = start
        self._fragments.clear()

        def attempt() -> ChangeStream[RawBSONDocument]:
            options = self._watch_options(self._position)
            if self._position is None:
                self._position = self._cluster_time_now()
            return self._watch(options)

        self._stream = self._with_retry("opening the change stream", attempt)
        if self._position is not None and self._position.resume_token is None:
            token = self._stream.resume_token
            self._position = Position(self._position.sec, self._position.ord, Position.token_bytes(token))

    def current_position(self) -> Position:
        """Where a change stream opened now would start: recorded before a snapshot reads anything."""
        self.open(None)
        try:
            assert self._position is not None
            return self._position
        finally:
            self.close()

    def _with_retry(self, what: str, attempt: Callable[[], Any]) -> Any:
        try:
            return self._backoff.run(
                what, attempt, retry_on=(ConnectionFailure,), sleep=self._sleep, describe=failure_summary
            )
        except ConnectionFailure as exc:
            raise UnreachableError(
                f"MongoDB unreachable while {what}: {failure_summary(exc)}",
                hint="check the servers; the stream resumes from the last committed offset on restart",
            ) from exc
        except OperationFailure as exc:
            self._raise_operation_failure(exc)
            raise

    def _raise_operation_failure(self, exc: OperationFailure) -> None:
        raise_for_privileges(
            exc, f"open a change stream ({self._scope} scope{f' on {self._target}' if self._target else ''})"
        )
        if is_resume_lost(exc) or is_resume_refused(exc):
            detail = redact_text(str(exc.details.get("errmsg", exc)) if exc.details else str(exc))
            raise resume_lost_error(self._connector, detail, refused=not is_resume_lost(exc)) from exc

    def next(self) -> StreamItem:
        """Wait at most one poll interval for the next change."""
        if self._stream is None:
            raise RuntimeError("open() the source first")
        while True:
            try:
                change = self._stream.try_next()
            except OperationFailure as exc:
                self._raise_operation_failure(exc)
                raise
            except ConnectionFailure as exc:
                log.warning("change stream lost its connection: %s; reopening", failure_summary(exc))
                self.reconnects += 1
                self._reopen()
                continue
            if change is None:
                if self._fragments.pending:
                    # Mid-event: the stream's token points inside the split event; stay before it.
                    return Idle(self._position or Position(0, 0))
                return Idle(self._idle_position())
            try:
                whole = self._fragments.add(top_level(change))
            except SplitEventError as exc:
                raise MalformedEventError(f"MongoDB returned a split change event mongocdc cannot read: {exc}") from exc
            if whole is None:
                continue
            item = self._convert(whole)
            self._position = item.position
            if isinstance(item, ControlChange) and item.ends_stream:
                log.info("change stream invalidated (%s); reopening after it", item.collection or item.db)
                self._start_after = True
                self._reopen()
                self._start_after = False
            return item

    def buffered(self) -> bool:
        """Whether :meth:`next` has its change in hand: the batch pymongo read last is not used up.

        ``False`` means the next call asks the server (a ``getMore`` that may wait a poll interval),
        so the read-ahead reader hands over what it has first (``sources/read_ahead.py``).
        """
        # pymongo's own test in ChangeStream.try_next; a stream without it is never ahead.
        has_next = getattr(getattr(self._stream, "_cursor", None), "_has_next", None)
        return has_next is not None and bool(has_next())

    def _convert(self, change: Mapping[str, Any]) -> StreamItem:
        if self._signal_ns is not None and namespace_of(change) == self._signal_ns:
            # The signal collection is read whatever the include lists say; its changes are written to
            # Kafka only when the include lists capture it, as Debezium does.
            document = change.get("fullDocument")
            key = change.get("documentKey")
            data = self._convert_data(change) if self._is_included(self._signal_ns) else None
            return SignalChange(
                str(change.get("operationType")),
                _inflate(document),
                _inflate(key).get("_id") if key is not None else None,
                position_of(change),
                data.event if isinstance(data, StreamedChange) else None,
            )
        item = self._convert_data(change)
        if isinstance(item, StreamedChange):
            src = item.event.source
            if not self._is_included((src.db, src.collection)):
                return Idle(item.position)
        return item

    def _convert_data(self, change: Mapping[str, Any]) -> StreamedChange | ControlChange:
        try:
            return convert_change(change, rs=self._rs, transforms=self._transforms)
        except MalformedChangeError as exc:
            raise MalformedEventError(f"MongoDB returned a change event mongocdc cannot read: {exc}") from exc

    def _is_included(self, namespace: tuple[str, str]) -> bool:
        if self._include is None:
            return True
        included = self._included.get(namespace)
        if included is None:  # the include/exclude regexes run once per namespace
            included = self._included[namespace] = self._include(*namespace)
        return included

    def _idle_position(self) -> Position:
        assert self._stream is not None
        token = self._stream.resume_token
        current = self._position or Position(0, 0)
        if token is None:
            return current
        self._position = Position(current.sec, current.ord, Position.token_bytes(token))
        return self._position

    def _reopen(self) -> None:
        # The stream resumes before any fragment already read, and delivers them all again.
        self._fragments.clear()
        self.close()
        self.open(self._position)

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            except PyMongoError:
                log.debug("closing the change stream failed", exc_info=True)
            self._stream = None
