"""The shipped list of librdkafka's property names is the installed librdkafka's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import confluent_kafka
import pytest

from mongocdc.config import librdkafka

REPO = Path(__file__).resolve().parents[3]


def test_the_list_is_the_installed_librdkafkas_own_table() -> None:
    """``rd_kafka_conf_properties_show`` of the loaded library (the table CONFIGURATION.md is made of)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "librdkafka_properties.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert confluent_kafka.libversion()[0] == librdkafka.VERSION


def _refused_as_unknown(name: str) -> bool:
    try:
        confluent_kafka.Producer({name: "x", "log_level": 0})
    except confluent_kafka.KafkaException as exc:
        return "No such configuration property" in exc.args[0].str()
    except (TypeError, ValueError):  # a callback or a boolean the Python client checks itself: a known name
        return False
    return False


def test_librdkafka_accepts_every_listed_name_and_refuses_others() -> None:
    refused = [name for name in sorted(librdkafka.PROPERTIES) if name != "log_level" and _refused_as_unknown(name)]
    assert refused == []
    assert _refused_as_unknown("lingr.ms")
    assert librdkafka.PATH_PROPERTIES <= librdkafka.PROPERTIES


@pytest.mark.parametrize("name", ["linger.ms", "bootstrap.servers", "acks", "ssl.ca.location"])
def test_common_properties_are_listed(name: str) -> None:
    assert name in librdkafka.PROPERTIES
