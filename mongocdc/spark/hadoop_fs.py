"""Files on any Hadoop filesystem (local, HDFS, S3A, ABFS…), the one way the job reads and writes its own files.

The state tables' version pointers and delete markers (``sinks``), the job's ``job.json`` and progress reports
(``job.ProgressLog``) go through the driver JVM's ``FileSystem`` API, so every filesystem Spark can write to works.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pyspark is not imported here: the module is plain Python until handed a session
    from pyspark.sql import SparkSession


class HadoopFs:
    """Files on any Hadoop filesystem (local, HDFS, S3A, ABFS…) through the JVM's FileSystem API."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark.sparkContext._jvm
        self._conf: Any = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str) -> tuple[Any, Any]:
        p = self._jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self._conf), p

    def exists(self, path: str) -> bool:
        fs, p = self._path(path)
        return bool(fs.exists(p))

    def names(self, path: str) -> list[str]:
        return list(self.sizes(path))

    def sizes(self, path: str) -> dict[str, int]:
        """The entries of a directory and their lengths in bytes (none when it does not exist)."""
        fs, p = self._path(path)
        if not fs.exists(p):
            return {}
        return {str(status.getPath().getName()): int(status.getLen()) for status in fs.listStatus(p)}

    def touch(self, path: str) -> None:
        fs, p = self._path(path)
        fs.create(p, True).close()

    def delete(self, path: str) -> None:
        fs, p = self._path(path)
        fs.delete(p, True)

    def rename(self, source: str, target: str) -> None:
        fs, src = self._path(source)
        if not fs.rename(src, self._jvm.org.apache.hadoop.fs.Path(target)):
            raise OSError(f"could not move {source} to {target}")

    def write_text(self, path: str, text: str) -> None:
        fs, p = self._path(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(text.encode()))
        finally:
            out.close()

    def replace_text(self, path: str, text: str) -> None:
        """Write a file that readers may be reading: aside first, then moved over the old one, so a reader
        sees the old or the new text, never a half-written one (where a filesystem cannot move over a file,
        the old one is deleted first: a reader may then find none for that moment)."""
        parent, _, name = path.rpartition("/")
        partial = f"{parent}/.{name}.{uuid.uuid4().hex}"
        self.write_text(partial, text)
        try:
            self.rename(partial, path)
        except OSError:
            self.delete(path)
            self.rename(partial, path)
