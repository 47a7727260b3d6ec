"""A small HTTP endpoint for Prometheus and probes (standard library only).

``GET /metrics``: the metrics; ``GET /health`` (liveness: 200 while the process works, 503 once a task failed and
it is about to exit); ``GET /ready`` (readiness: 200 once the connector, or a group worker, runs its tasks, 503
while it starts, stops or has failed); ``/healthz`` is ``/health``'s older name. The bodies are one JSON object
(``{"status": "ready", ...}``), the status code is what a probe reads.

The server runs in a daemon thread and answers each request on its own thread, so a slow
scraper never blocks the connector; rendering takes the metrics lock only to copy the values.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol, cast

from mongocdc.errors import UsageError

log = logging.getLogger("mongocdc.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text exposition format's content type."""
DEFAULT_PORT = 9404


class PrometheusSource(Protocol):
    """What the server serves: :class:`mongocdc.engine.metrics.Metrics` is one."""

    def to_prometheus(self) -> str: ...


class Health:
    """What ``/health`` and ``/ready`` answer, set by the command as it goes (thread-safe).

    Starts alive and not ready (``starting``). :meth:`set_ready` when the tasks run (``detail`` is shown in the
    body: the tasks a worker holds, say), :meth:`set_not_ready` while stopping or rebalancing, :meth:`set_failed`
    when the process is about to exit with an error (``/health`` answers 503 from then on).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = False
        self._why = "starting"
        self._failure: str | None = None
        self._detail: dict[str, Any] = {}

    def set_ready(self, **detail: Any) -> None:
        with self._lock:
            self._ready, self._why, self._detail = True, "", dict(detail)

    def set_not_ready(self, why: str, **detail: Any) -> None:
        with self._lock:
            self._ready, self._why, self._detail = False, why, dict(detail)

    def set_failed(self, why: str) -> None:
        with self._lock:
            self._ready, self._failure = False, why

    def health(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if self._failure is not None:
                return 503, {"status": "failed", "error": self._failure}
            return 200, {"status": "up"}

    def readiness(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if self._failure is not None:
                return 503, {"status": "failed", "error": self._failure}
            if not self._ready:
                return 503, {"status": "not ready", "reason": self._why, **self._detail}
            return 200, {"status": "ready", **self._detail}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # restart right after a stop (TIME_WAIT), never share a listening port
    allow_reuse_port = False

    def __init__(self, address: tuple[str, int], source: PrometheusSource, health: Health) -> None:
        self.source = source
        self.health = health
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server_version = "mongocdc"
    timeout = 30  # a client that stops sending does not hold a thread forever

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self._respond(send_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            try:
                body = cast(_Server, self.server).source.to_prometheus().encode("utf-8")
            except Exception:
                log.exception("could not render the metrics")
                self._send(500, b"could not render the metrics\n", "text/plain; charset=utf-8", send_body)
                return
            self._send(200, body, CONTENT_TYPE, send_body)
        elif path in ("/health", "/healthz", "/ready"):
            server = cast(_Server, self.server)
            status, body_doc = server.health.readiness() if path == "/ready" else server.health.health()
            body = (json.dumps(body_doc, default=str) + "\n").encode()
            self._send(status, body, "application/json", send_body)
        else:
            self._send(404, b"not found: try /metrics, /health or /ready\n", "text/plain; charset=utf-8", send_body)

    def _send(self, status: int, body: bytes, content_type: str, send_body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        log.debug("%s %s", self.address_string(), format % args)


class MetricsServer:
    """Serves ``metrics.to_prometheus()`` at ``http://host:port/metrics`` until :meth:`stop`.

    ``port=0`` binds a free port (read it back from :attr:`port` after :meth:`start`). A port
    that is taken, a host that cannot be bound or a privileged port raise :class:`UsageError`
    (exit code 2) from :meth:`start`.
    """

    def __init__(
        self,
        metrics: PrometheusSource,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        health: Health | None = None,
    ) -> None:
        self.metrics = metrics
        self.health = health or Health()
        self.host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port once started (the chosen one when created with ``port=0``)."""
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}/metrics"

    def start(self) -> MetricsServer:
        """Bind and serve in a daemon thread; returns ``self``."""
        if self._server is not None:
            return self
        try:
            server = _Server((self.host, self._port), self.metrics, self.health)
        except OSError as exc:
            raise self._bind_error(exc) from exc
        self._server = server
        self._port = int(server.server_address[1])
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"mongocdc-metrics-{self._port}",
            daemon=True,
        )
        self._thread.start()
        log.info("serving metrics at %s", self.url)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and release the port; idempotent."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout)

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _bind_error(self, exc: OSError) -> UsageError:
        where = f"{self.host}:{self._port}"
        if exc.errno == errno.EADDRINUSE:
            return UsageError(
                f"cannot serve metrics on {where}: the port is already in use",
                hint="choose another metrics port, or stop the process that holds it (`ss -ltnp` shows which)",
            )
        if exc.errno == errno.EACCES:
            return UsageError(
                f"cannot serve metrics on {where}: permission denied",
                hint="ports below 1024 need privileges; choose a port above 1024",
            )
        return UsageError(
            f"cannot serve metrics on {where}: {exc.strerror or exc}",
            hint="check the metrics host: it must be an address of this machine (127.0.0.1, 0.0.0.0, ::)",
        )


@contextlib.contextmanager
def serve_metrics(
    metrics: PrometheusSource, port: int, host: str = "127.0.0.1", health: Health | None = None
) -> Iterator[MetricsServer | None]:
    """Serve ``/metrics``, ``/health`` and ``/ready`` for the duration of the block when ``port`` is not 0."""
    if not port:
        yield None
        return
    with MetricsServer(metrics, host=host, port=port, health=health) as server:
        logging.getLogger("mongocdc.metrics").info("Prometheus metrics at %s", server.url)
        yield server
