"""The /metrics endpoint: served over real HTTP on a free port, scraped with urllib."""

from __future__ import annotations

import json
import logging
import socket
import urllib.error
import urllib.request

import pytest

from mongocdc.cli.metrics_server import CONTENT_TYPE, Health, MetricsServer
from mongocdc.engine.metrics import Metrics
from mongocdc.errors import ExitCode, UsageError
from tests.unit.engine.exposition import parse_exposition, sample


def get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a local test server
        return response.status, response.headers["Content-Type"], response.read().decode("utf-8")


def test_metrics_are_scraped_over_http() -> None:
    metrics = Metrics("inventory")
    metrics.record_event("rs0", "c", 0, sec=12, ord=3)
    metrics.record_event("rs0", "u", 0)
    metrics.set_in_flight(5)

    with MetricsServer(metrics, port=0) as server:
        assert server.port != 0
        base = f"http://127.0.0.1:{server.port}"
        assert server.url == f"{base}/metrics"
        status, content_type, body = get(f"{base}/metrics")
        assert status == 200
        assert content_type == CONTENT_TYPE
        families = parse_exposition(body)
        assert sample(families, "mongocdc_events_total", connector="inventory", partition="rs0", op="create") == 1
        assert sample(families, "mongocdc_events_total", connector="inventory", partition="rs0", op="update") == 1
        assert sample(families, "mongocdc_source_event_position_sec", connector="inventory", partition="rs0") == 12
        assert sample(families, "mongocdc_kafka_records_in_flight", connector="inventory") == 5

        metrics.record_event("rs0", "c", 0)  # every scrape reads the current values
        families = parse_exposition(get(f"{base}/metrics?x=1")[2])
        assert sample(families, "mongocdc_events_total", connector="inventory", partition="rs0", op="create") == 2

        assert get(f"{base}/healthz")[::2] == (200, '{"status": "up"}\n')
        with pytest.raises(urllib.error.HTTPError) as missing:
            get(f"{base}/nothing")
        assert missing.value.code == 404

    with pytest.raises(urllib.error.URLError):  # stopped: the port is released
        get(f"{base}/healthz")


def test_requests_are_logged_at_debug_level_not_on_stderr(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.DEBUG, logger="mongocdc.metrics"), MetricsServer(Metrics("c"), port=0) as server:
        get(f"http://127.0.0.1:{server.port}/healthz")
    requests = [r for r in caplog.records if "GET /healthz" in r.getMessage()]
    assert requests and all(r.levelno == logging.DEBUG for r in requests)
    assert "GET /healthz" not in capfd.readouterr().err


def test_a_rendering_failure_answers_500_and_keeps_serving() -> None:
    class Broken:
        def to_prometheus(self) -> str:
            raise RuntimeError("boom")

    with MetricsServer(Broken(), port=0) as server:
        with pytest.raises(urllib.error.HTTPError) as failed:
            get(server.url)
        assert failed.value.code == 500
        assert get(f"http://127.0.0.1:{server.port}/healthz")[0] == 200


def test_a_taken_port_is_a_usage_error() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = MetricsServer(Metrics("c"), port=port)
        with pytest.raises(UsageError) as error:
            server.start()
    assert error.value.exit_code is ExitCode.USAGE
    assert f"127.0.0.1:{port}" in error.value.message
    assert "already in use" in error.value.message
    assert error.value.hint
    server.stop()  # never started: nothing to do


def test_start_and_stop_are_idempotent_and_the_port_can_be_reused() -> None:
    server = MetricsServer(Metrics("c"), port=0)
    server.start()
    port = server.port
    assert server.start() is server
    server.stop()
    server.stop()
    with MetricsServer(Metrics("c"), port=port) as again:
        assert get(f"http://127.0.0.1:{again.port}/healthz")[0] == 200


def probe(url: str) -> tuple[int, dict[str, object]]:
    """A probe's view: the status code and the JSON body, whatever the code."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a local test server
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_health_and_readiness_follow_the_commands_state() -> None:
    health = Health()
    with MetricsServer(Metrics("c"), port=0, health=health) as server:
        base = f"http://127.0.0.1:{server.port}"
        assert probe(f"{base}/health") == (200, {"status": "up"})
        assert probe(f"{base}/ready") == (503, {"status": "not ready", "reason": "starting"})
        health.set_ready(tasks=["shard00-rs"])
        assert probe(f"{base}/ready") == (200, {"status": "ready", "tasks": ["shard00-rs"]})
        health.set_not_ready("stopping")
        assert probe(f"{base}/ready") == (503, {"status": "not ready", "reason": "stopping"})
        assert probe(f"{base}/health")[0] == 200  # stopping is not a failure
        health.set_failed("connector 'c' was fenced")
        assert probe(f"{base}/health") == (503, {"status": "failed", "error": "connector 'c' was fenced"})
        assert probe(f"{base}/ready")[0] == 503


def test_the_server_binds_the_host_it_is_given() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe_socket:
        probe_socket.connect(("192.0.2.1", 9))  # no packet is sent: this picks the address of a non-loopback route
        address = probe_socket.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("this machine has no address besides the loopback")
    with MetricsServer(Metrics("c"), host="0.0.0.0", port=0) as every:  # noqa: S104 - what metrics.host allows
        assert probe(f"http://{address}:{every.port}/health")[0] == 200
    with MetricsServer(Metrics("c"), host="127.0.0.1", port=0) as loopback, pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://{address}:{loopback.port}/health", timeout=5)  # noqa: S310
