"""Helpers for integration tests: run the CLI as a process, read topics, wait on conditions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mongocdc.events.java import default_partition

REPO = Path(__file__).resolve().parents[2]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0, interval: float = 0.1) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONGOCDC_") or k.startswith("MONGOCDC_TEST_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mongocdc", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        cwd=REPO,
        check=False,
        stdin=subprocess.DEVNULL,
    )


class CliProcess:
    """A long-running ``mongocdc`` command whose stderr lines are collected as they come."""

    def __init__(self, *args: str, new_session: bool = False) -> None:
        """``new_session``: the command leads a process group of its own (what it starts is in it too)."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mongocdc", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            start_new_session=new_session,
        )
        self.stderr_lines: list[str] = []
        self.stdout_lines: list[str] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr_lines), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout_lines), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)

    def wait_for_log(self, text: str, timeout: float = 60.0) -> None:
        def seen() -> bool:
            if self.proc.poll() is not None and not any(text in line for line in self.stderr_lines):
                raise AssertionError(f"mongocdc exited with {self.proc.returncode}:\n{self.stderr}")
            return any(text in line for line in self.stderr_lines)

        wait_until(seen, f"log line {text!r}", timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        self.proc.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout: float = 60.0) -> int:
        """The exit code, once the command ended and its output was read to the end."""
        code = self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)


def read_topic(bootstrap: str, topic: str, timeout: float = 10.0) -> list[Any]:
    """Every record of ``topic`` from the beginning to the current end of each partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout)
        partitions = sorted(metadata.topics[topic].partitions) if topic in metadata.topics else []
        ends: dict[int, int] = {}
        for p in partitions:
            high = _high_watermark(consumer, topic, p, timeout)
            if high > 0:
                ends[p] = high
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        records: list[Any] = []
        done: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise AssertionError(f"could not read {topic} to its end within {timeout} s")
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            records.append(msg)
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return sorted(records, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()


class TopicSize:
    """The record count of a one-partition topic, read cheaply from its high watermark with one consumer,
    so a test can act within milliseconds of a topic reaching a size (e.g. kill -9 mid-snapshot)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4()}"})

    def __enter__(self) -> TopicSize:
        return self

    def __exit__(self, *exc: object) -> None:
        self.consumer.close()

    def __call__(self) -> int:
        try:
            _, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=5)
        except KafkaException:
            return 0  # the topic does not exist yet or its leader is being elected
        return int(high)


def _high_watermark(consumer: Consumer, topic: str, partition: int, timeout: float) -> int:
    """The partition's end offset, waiting out a new topic's leader election (NOT_LEADER_FOR_PARTITION)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            return int(high)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            retriable = isinstance(error, KafkaError) and error.code() in (
                KafkaError.NOT_LEADER_FOR_PARTITION,
                KafkaError.LEADER_NOT_AVAILABLE,
                KafkaError.UNKNOWN_TOPIC_OR_PART,
            )
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The Java client's default partition for a key: toPositive(murmur2(key)) % partitions."""
    return default_partition(key, partitions)


def decode(msg: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    key = json.loads(msg.key())
    value = None if msg.value() is None else json.loads(msg.value())
    return key, value
