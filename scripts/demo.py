"""End-to-end demo: local Kafka + MongoDB test server, `mongocdc stream`, changes, events in Kafka.

Run through ``scripts/demo`` (which installs everything first). Every service is
started here on loopback ports and stopped at the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pymongo import MongoClient  # noqa: E402

from tests.services.kafka import KafkaBroker  # noqa: E402
from tests.services.mongo import start_default_server  # noqa: E402


def say(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def mongocdc(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mongocdc", "--config", str(config), *args], text=True, capture_output=True, check=False
    )


def wait_for(condition, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"demo: timed out waiting for {what}")
        time.sleep(0.1)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="mongocdc-demo-"))
    say("starting a local Kafka broker (KRaft) and the MongoDB test server")
    with KafkaBroker() as kafka, start_default_server(data_dir=work / "mongo") as mongo:
        print(f"kafka   {kafka.bootstrap}\nmongodb {mongo.uri}")
        config = work / "mongocdc.yaml"
        config.write_text(
            "name: demo\n"
            f"mongodb.connection.string: '{mongo.uri}'\n"
            "topic.prefix: demo\n"
            f"kafka.bootstrap.servers: '{kafka.bootstrap}'\n"
            f"offset.storage.file.filename: '{work / 'offsets.db'}'\n"
            "offset.flush.interval.ms: 1000\n"
            "capture.scope: database\n"
            "capture.target: shop\n"
        )
        say(f"configuration ({config})")
        print(config.read_text(), end="")

        say("mongocdc discover")
        print(mongocdc("discover", config=config).stdout, end="")

        say("mongocdc stream (in the background)")
        stream = subprocess.Popen(
            [sys.executable, "-m", "mongocdc", "--config", str(config), "stream"],
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        log: list[str] = []

        def pump() -> None:
            assert stream.stderr is not None
            for line in stream.stderr:
                log.append(line)
                print(f"  | {line}", end="", flush=True)

        threading.Thread(target=pump, daemon=True).start()
        wait_for(lambda: any("change stream open" in line for line in log), "the change stream to open")

        say("insert, update and delete documents in shop.customers and shop.orders")
        client: MongoClient[dict[str, object]] = MongoClient(mongo.uri)
        shop = client["shop"]
        shop.customers.insert_many([{"_id": 1001, "name": "Sally"}, {"_id": 1002, "name": "George"}])
        shop.customers.update_one({"_id": 1001}, {"$set": {"email": "sally@example.com"}})
        shop.orders.insert_one({"_id": "o-1", "customer": 1002, "qty": 3})
        shop.customers.delete_one({"_id": 1002})
        client.close()

        def topic_records(topic: str) -> list[dict[str, object]]:
            out = mongocdc("topic", "dump", topic, "--output", "json", "--timeout", "2", config=config).stdout
            return [json.loads(line) for line in out.splitlines() if line.strip()]

        wait_for(lambda: len(topic_records("demo.shop.customers")) >= 5, "the events in Kafka")

        say("the events in Kafka: mongocdc topic dump demo.shop.customers")
        print(mongocdc("topic", "dump", "demo.shop.customers", "--timeout", "2", config=config).stdout, end="")
        say("mongocdc topic dump demo.shop.orders --output json")
        print(
            mongocdc("topic", "dump", "demo.shop.orders", "--output", "json", "--timeout", "2", config=config).stdout,
            end="",
        )

        say("stopping the stream with SIGTERM (flush, commit, exit 0)")
        stream.send_signal(signal.SIGTERM)
        code = stream.wait(timeout=60)
        assert stream.stdout is not None
        print(stream.stdout.read(), end="")
        print(f"exit code {code}")

        say("mongocdc offsets show")
        print(mongocdc("offsets", "show", config=config).stdout, end="")
        return 0 if code == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
