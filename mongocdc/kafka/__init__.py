"""Kafka clients: the only package that imports confluent_kafka.

Sinks, offset stores, the signal channel, topic readers and replication build their clients here and get
mongocdc's errors back, never confluent-kafka's:

* ``config``: librdkafka configurations (defaults < the user's keys < what a client needs) and the
  translation of mongocdc's own properties (``max.queue.size*``, ``signal.kafka.bootstrap.servers``);
* ``errors``: ``Endpoint`` (a cluster as errors and hints name it) and the one mapping of Kafka's error
  codes onto ``mongocdc.errors``;
* ``logs``: librdkafka's log lines, and ``ClientLog``, which says a cluster's outage once;
* ``client``: what every client shares (the error callback, metadata, reaching the cluster with retries,
  waiting for a topic's partition leaders);
* ``producer``, ``consumer``, ``admin``: the three clients; ``reader``: a topic read for ``topic dump``.

Nothing is imported here, so importing a light module (``config``) does not load the client library.
"""
