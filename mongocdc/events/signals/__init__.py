"""Debezium signals: what operators (and the connector itself) ask a running connector to do (pure).

Two channels carry them, in Debezium's formats:

- **The signal collection** (``signal.data.collection``, ``<database>.<collection>``): a document
  ``{"_id": …, "type": …, "data": …}``. ``data`` is a sub-document (as in Debezium's MongoDB
  examples) or the same object as JSON text (the column layout Debezium's relational connectors
  use); it may be absent when a signal needs no data. ``_id`` is any BSON value: a string is the
  signal's id as it is, an ObjectId (what MongoDB assigns when the insert has none) its hex string,
  anything else its relaxed extended JSON. Other top-level fields are ignored.
- **The Kafka signal topic** (``signal.kafka.topic``): a record whose key is the connector's
  ``topic.prefix`` and whose value is JSON ``{"type": …, "data": {…}}`` plus an optional ``"id"``.
  A record with another key is meant for another connector and is skipped, as is a record without
  a value; without ``"id"`` the signal is named ``<topic.prefix>@<record offset>``, as Debezium
  keeps the record offset with a Kafka signal.

Signal types (``type``) and their ``data``:

``execute-snapshot``
    ``data-collections`` (required): an array of regular expressions, each matched against the
    whole ``<database>.<collection>`` name. A name whose parts contain dots is written with each
    part in double quotes, ``"inventory"."orders.2024"``, and then means exactly that collection
    (a ``"`` inside a quoted part is doubled). An empty array is valid and does nothing, as in
    Debezium: :attr:`ExecuteSnapshot.noop_reason` says so for the log.
    ``type``: ``incremental`` (default) or ``blocking``, in any letter case.
    ``additional-conditions``: an array of ``{"data-collection": <pattern>, "filter": <query>}``;
    the filter is a MongoDB query document, as a sub-document / JSON object or as JSON text
    (extended JSON for BSON types: ``{"$oid": …}``, ``{"$date": …}``; the mongo shell's unquoted
    keys and single-quoted strings are accepted too). SQL conditions (``color='blue'``, from
    Debezium's relational examples) are rejected with that explanation.
``stop-snapshot``
    ``data-collections`` (optional patterns; absent or empty stops the whole incremental
    snapshot), ``type``: ``incremental`` (Debezium requires it; absent means incremental here).
``pause-snapshot`` / ``resume-snapshot``
    ``type``: ``incremental`` (optional).
``log``
    ``message`` (required): written to the connector's log.
``snapshot-window-open`` / ``snapshot-window-close``
    the incremental snapshot's watermarks, written by the connector itself into the signal
    collection (``_id`` = ``<chunk id>-open`` / ``<chunk id>-close``, ``payload: ""``, exactly as
    Debezium writes them); with the ``insert_delete`` watermarking strategy the delete of the open
    watermark closes the window instead (:func:`window_close_for_deleted`). They are never
    accepted from Kafka.

Unknown fields in ``data`` are errors (a misspelt ``data-collection`` would otherwise silently do
nothing); every problem raises :class:`InvalidSignalError` naming the signal and what is wrong.
:func:`serialize_signal` and :func:`serialize_kafka_signal` write what the parsers read back.

The modules: ``model`` (the signal types, patterns and ``InvalidSignalError``), ``data`` (each
type's ``data`` object, read and written), ``collection`` and ``kafka_record`` (the two formats
above), ``shell_json`` (the mongo shell's relaxed syntax for filters). Import from this package.
"""

from mongocdc.events.signals.collection import parse_signal, serialize_signal
from mongocdc.events.signals.data import signal_data
from mongocdc.events.signals.kafka_record import KafkaSignalRecord, parse_kafka_signal, serialize_kafka_signal
from mongocdc.events.signals.model import (
    AdditionalCondition,
    DataCollectionPattern,
    ExecuteSnapshot,
    InvalidSignalError,
    LogSignal,
    PauseSnapshot,
    ResumeSnapshot,
    Selection,
    Signal,
    SignalType,
    SnapshotType,
    StopSnapshot,
    WindowClose,
    WindowOpen,
    quote_namespace,
    window_close_for_deleted,
)

__all__ = [
    "AdditionalCondition",
    "DataCollectionPattern",
    "ExecuteSnapshot",
    "InvalidSignalError",
    "KafkaSignalRecord",
    "LogSignal",
    "PauseSnapshot",
    "ResumeSnapshot",
    "Selection",
    "Signal",
    "SignalType",
    "SnapshotType",
    "StopSnapshot",
    "WindowClose",
    "WindowOpen",
    "parse_kafka_signal",
    "parse_signal",
    "quote_namespace",
    "serialize_kafka_signal",
    "serialize_signal",
    "signal_data",
    "window_close_for_deleted",
]
