"""What a worker tells its operator: log lines, metrics, and health.

- **Logs**: stdlib :mod:`logging` on the ``executor_temporal.worker`` logger; ``harness worker
  --log-format json`` prints one JSON object per line on stderr (``time``, ``level``, ``event``,
  and the event's fields: ``session_id``, ``turn_id``, ``attempt``, ``reason``...), ``text`` (the
  default) a readable line. Events: ``worker.started``, ``turn.attempt``, ``turn.failover`` (an
  attempt after a lost or stopped one), ``turn.finished``, ``worker.draining``,
  ``turn.handover``, ``worker.stopped``. No prompt, answer or credential is logged.
- **Metrics** (Prometheus, ``prometheus-client``: a scrape endpoint with nothing else to run;
  the OpenTelemetry plugin covers events, not process metrics): ``harness_worker_turns_running``,
  ``harness_worker_turn_attempts_total{outcome}``, ``harness_worker_failovers_total``,
  ``harness_worker_handovers_total``, ``harness_worker_ledger_seconds`` (the ledger's commit +
  read latency around each turn), ``harness_worker_draining``.
- **Health** on the same HTTP server (``--http 127.0.0.1:9464``): ``/healthz`` 200 while the
  worker's event loop answers (liveness), ``/readyz`` 200 while it polls for work and 503 once
  it drains (readiness), ``/metrics``.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app

LOGGER = "executor_temporal.worker"
log = logging.getLogger(LOGGER)
#: Seconds the event loop may go without a beat before ``/healthz`` reports it stuck.
STUCK_AFTER = 30.0


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, event, and the record's ``fields``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        return json.dumps(line, ensure_ascii=False, default=str)


class Readable(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in getattr(record, "fields", {}).items())
        return f"harness worker: {record.getMessage()} {fields}".rstrip()


def configure_logging(log_format: str = "text", stream: Any = None) -> None:
    """Send the worker's log lines to ``stream`` (stderr) as ``json`` or ``text``."""
    if log_format not in ("json", "text"):
        raise ValueError(f"unknown log format {log_format!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonLines() if log_format == "json" else Readable())
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False


def note(event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` (those that are not ``None``)."""
    log.log(level, event, extra={"fields": {k: v for k, v in fields.items() if v is not None}})


class Monitor:
    """A worker's metrics and health state (one per worker; its own registry)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.running = Gauge(
            "harness_worker_turns_running", "turns running on this worker", registry=self.registry
        )
        self.attempts = Counter(
            "harness_worker_turn_attempts",
            "turn attempts this worker ran, by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.failovers = Counter(
            "harness_worker_failovers",
            "attempts this worker took over from a lost or stopped worker",
            registry=self.registry,
        )
        self.handovers = Counter(
            "harness_worker_handovers",
            "running turns this worker handed over when it stopped",
            registry=self.registry,
        )
        self.attaches = Counter(
            "harness_worker_session_attaches",
            "sessions this worker took up: opened here, or resumed (another worker ran the "
            "session last, or this one never held it)",
            ["how"],
            registry=self.registry,
        )
        self.ledger_seconds = Histogram(
            "harness_worker_ledger_seconds",
            "ledger latency around each turn (claim, commit and read back)",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        self.draining = Gauge(
            "harness_worker_draining",
            "1 once the worker stopped taking work",
            registry=self.registry,
        )
        self.ready = False
        self.beat = time.monotonic()
        #: turns running now (what the gauge shows)
        self.turns = 0

    def turn_started(self) -> None:
        self.turns += 1
        self.running.set(self.turns)

    def turn_ended(self) -> None:
        self.turns -= 1
        self.running.set(self.turns)

    def alive(self) -> bool:
        return time.monotonic() - self.beat < STUCK_AFTER


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a scrape every 15 s is no news


class HealthServer:
    """``/healthz``, ``/readyz`` and ``/metrics`` on ``host:port`` (a thread of its own)."""

    def __init__(self, monitor: Monitor, host: str, port: int) -> None:
        self.monitor = monitor
        metrics = make_wsgi_app(monitor.registry)

        def app(environ: dict[str, Any], respond: Callable[..., Any]) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            if path == "/metrics":
                return metrics(environ, respond)  # type: ignore[no-any-return]
            if path in ("/healthz", "/readyz"):
                ok = monitor.alive() if path == "/healthz" else monitor.ready and monitor.alive()
                status = "200 OK" if ok else "503 Service Unavailable"
                respond(status, [("Content-Type", "text/plain")])
                return [b"ok\n" if ok else b"unavailable\n"]
            respond("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]

        self.server: WSGIServer = make_server(host, port, app, handler_class=_Quiet)
        self.host = host
        self.port = self.server.server_port
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="harness-worker-http", daemon=True
        )

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
