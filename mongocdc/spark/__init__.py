"""The downstream PySpark job: CDC topics back into one up-to-date table per collection.

Only the modules that need it import pyspark (``merge``, ``sinks``, ``job``), and only when
they are imported, so the command line starts fast without Spark. ``environment``,
``options``, ``launcher``, ``packages`` and ``status`` are plain Python.
"""
