"""Kafka: the only place (with offsets/kafka.py and replication/) that imports confluent_kafka."""

from mongocdc.sinks.kafka.producer import KafkaSink
from mongocdc.sinks.kafka.reader import DumpRecord, StartAt, TopicReader

__all__ = ["DumpRecord", "KafkaSink", "StartAt", "TopicReader"]
