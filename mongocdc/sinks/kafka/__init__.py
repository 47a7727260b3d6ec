"""Kafka as the sink of change events: ``KafkaSink`` and the notification channels (clients: ``mongocdc.kafka``)."""

from mongocdc.sinks.kafka.producer import KafkaSink

__all__ = ["KafkaSink"]
