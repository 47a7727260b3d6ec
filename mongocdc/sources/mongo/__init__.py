"""MongoDB: the only place that imports pymongo."""

from mongocdc.retry import Backoff
from mongocdc.sources.mongo.client import connect
from mongocdc.sources.mongo.stream import MongoChangeStreamSource
from mongocdc.sources.mongo.topology import Shard, Topology, discover

__all__ = ["Backoff", "MongoChangeStreamSource", "Shard", "Topology", "connect", "discover"]
