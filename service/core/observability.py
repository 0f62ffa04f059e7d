"""Request ids, JSON logs and Prometheus metrics.

Every request gets an id (the client's `X-Request-ID` when it is sane, else a new one), echoed
in the response header and in every log line written while it is handled. One JSON access line
per request; headers and bodies are never logged, so no key or token reaches the logs.
Metrics are per process (scrape each worker, or run one worker per container).
"""

import contextvars
import itertools
import json
import logging
import re
import time
import uuid
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_SANE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# Ids unique across processes and restarts without a syscall per request (uuid4 reads urandom).
_ID_PREFIX = uuid.uuid4().hex[:12]
_ID_COUNTER = itertools.count(1)
access_log = logging.getLogger("gpu_advisor.access")
# Status logged and counted for a request whose client disconnected before any answer was
# sent (nginx's "client closed request"); no response goes out.
CLIENT_CLOSED = 499


class Metrics:
    """The service's metrics, on a registry of its own (one per app, so tests stay apart)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "gpu_advisor_http_requests_total",
            "HTTP requests by route, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gpu_advisor_http_request_duration_seconds",
            "HTTP request latency by route",
            ["route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.results = Counter(
            "gpu_advisor_results_ingested_total",
            "Benchmark results stored, by gate status",
            ["status"],
            registry=self.registry,
        )
        self.calibrations = Counter(
            "gpu_advisor_calibrations_total",
            "Calibration runs stored, by outcome",
            ["outcome"],
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": request_id_var.get(),
        }
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str, only_if_unconfigured: bool = False) -> None:
    """JSON lines on stderr. `only_if_unconfigured` leaves a host's (or pytest's) logging be."""
    root = logging.getLogger()
    if only_if_unconfigured and root.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class RequestContext:
    """ASGI middleware: request id in, X-Request-ID out, one access log line, metrics."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == b"x-request-id"), ""
        )
        sane = _SANE_ID.match(incoming)
        request_id = incoming if sane else f"{_ID_PREFIX}-{next(_ID_COUNTER):x}"
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500
        responded = False
        client_left = False

        async def receive_watching() -> Message:
            nonlocal client_left
            message = await receive()
            if message["type"] == "http.disconnect":
                client_left = True
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                responded = True
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive_watching, send_with_id)
        except ClientDisconnect:
            client_left = True
        finally:
            if client_left and not responded:
                status = CLIENT_CLOSED  # the client hung up before any answer: not our 500
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.requests.labels(route, scope["method"], str(status)).inc()
            self.metrics.latency.labels(route).observe(elapsed)
            access_log.info(
                "request",
                extra={
                    "fields": {
                        "request_id": request_id,
                        "method": scope["method"],
                        "path": scope["path"],
                        "route": route,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 2),
                    }
                },
            )
            request_id_var.reset(token)
