"""Kafka as a source: the signal topic (``signal.kafka.topic``) Debezium's Kafka signal channel reads."""
