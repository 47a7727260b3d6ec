"""Cross-cluster replication and consumer failover (``mongocdc replicate``, ``mongocdc failover translate``).

Pure parts, tested without Kafka: ``provenance`` (the header each copy carries and the loop rule),
``naming`` (topic selection and renaming), ``translation`` (the offset-translation rule, the
per-partition frontier the replicator maintains, and the sync and checkpoint records), ``commits``'
``apply_acknowledged``. Kafka-facing parts, over ``mongocdc.kafka``: ``clients`` (one cluster and its
role), ``mirror`` (the ``Replicator``; its concerns in ``topics``, ``partitions``, ``copying``,
``commits``, ``syncs``, ``checkpoints``, ``poller``, ``status``, ``shutdown``) and
``failover`` (translating and moving a consumer group).
"""
