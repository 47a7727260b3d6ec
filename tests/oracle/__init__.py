"""Oracles run from the peers' real artifacts (Kafka Connect's and Debezium's classes from Maven Central)."""
