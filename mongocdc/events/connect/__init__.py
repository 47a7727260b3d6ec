"""Kafka Connect's record model, single message transforms, predicates and converters (pure).

``data`` the model, ``json`` JsonConverter, ``base`` what a transform, predicate and converter are,
``chain`` a connector's chain and converters applied to the records the codec writes; the implementations
register themselves by their Java class names (``kafka_transforms``, ``unwrap``, ``debezium_transforms``,
``converters``); ``mongo_data`` is Debezium's reading of MongoDB documents, which ``unwrap`` and
``debezium_transforms`` share.
"""
