"""Pure event model: change events, keys, source positions and the BSON→JSON codec.

Nothing here imports anything but the standard library and ``bson``.
"""

from mongocdc.events.codec import document_to_json, value_to_json
from mongocdc.events.model import ChangeEvent, Op, SnapshotMarker, SourceInfo, UpdateDescription
from mongocdc.events.position import Position

__all__ = [
    "ChangeEvent",
    "Op",
    "Position",
    "SnapshotMarker",
    "SourceInfo",
    "UpdateDescription",
    "document_to_json",
    "value_to_json",
]
