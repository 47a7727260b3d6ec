"""Benchmarks of mongocdc against bare pymongo + confluent-kafka baselines (``python -m bench``).

See ``bench/README.md`` for what each benchmark measures and the latest numbers.
"""
