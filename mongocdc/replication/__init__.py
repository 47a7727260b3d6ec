"""Cross-cluster replication and consumer failover (``mongocdc replicate``, ``mongocdc failover translate``).

Pure parts, tested without Kafka: ``provenance`` (the header each copy carries and the loop rule),
``naming`` (topic selection and renaming), ``translation`` (the offset-translation rule, the
per-partition frontier the replicator maintains, and the sync and checkpoint records).
Kafka-facing parts, thin over confluent-kafka: ``clients`` (admin, topics, groups, the compacted
internal topics), ``mirror`` (the copy loop, offset syncs and checkpoints) and ``failover``
(translating and moving a consumer group).
"""
