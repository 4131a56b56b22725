"""The worker's HTTP endpoint (``metrics.port``): Prometheus metrics, health, and operator feedback.

* ``GET /metrics``: the Prometheus exposition of ``logstream_*``;
* ``GET /healthz``: the process and its event loop answer (liveness);
* ``GET /readyz``: the model is loaded and the worker has joined its consumer group (readiness);
* ``POST /feedback``: ``{"alert_id": "...", "verdict": "normal"}``, or an Alertmanager webhook payload
  whose alerts carry logstream's ``alert_id`` annotation: each alert is marked normal (published to
  the feedback topic, which every worker applies). 202 with the alerts marked, 404 for an unknown
  alert id, 400 for a body that is not feedback.

The socket is bound before the worker starts (``bind``), so a port in use is a clear start-up error.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .feedback import FeedbackError, FeedbackRecord, parse_feedback
from .metrics import REGISTRY, TAILER_REGISTRY

log = logging.getLogger("logstream.http")


def bind(host: str, port: int, setting: str = "metrics.port") -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if setting.startswith("--"):
            raise OSError(f"cannot listen on {host}:{port} ({exc}): choose a free port with {setting}") from None
        variable = "LOGSTREAM_" + setting.upper().replace(".", "__")
        raise OSError(f"cannot serve metrics on {host}:{port} ({exc}): set {setting} ({variable}) to a free "
                      "port, or to null in the config file to disable the endpoint") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def build_http_app(ready: Callable[[], bool],
                   submit_feedback: Callable[[FeedbackRecord], Awaitable[FeedbackRecord]]) -> web.Application:
    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(request: web.Request) -> web.Response:
        ok = ready()
        return web.json_response({"status": "ready" if ok else "not ready"}, status=200 if ok else 503)

    async def feedback(request: web.Request) -> web.Response:
        try:
            records = parse_feedback(await request.json(), by="http")
        except (ValueError, FeedbackError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        marked = []
        for record in records:
            try:
                record = await submit_feedback(record)
            except FeedbackError as exc:
                return web.json_response({"error": str(exc), "marked": marked}, status=404)
            marked.append({"alert_id": record.alert_id, "stream": record.stream, "line": record.line})
        return web.json_response({"marked": marked}, status=202)

    app = web.Application(client_max_size=1 << 20)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_post("/feedback", feedback)
    return app


def build_tailer_app() -> web.Application:
    """The tailer's own endpoint (``tail.metrics_port``): ``/metrics`` (its counters) and ``/healthz``."""
    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(TAILER_REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    return app


async def serve(app: web.Application, sock: socket.socket) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    host, port = sock.getsockname()[:2]
    log.info("serving http://%s:%d (%s)", host, port, " ".join(sorted({r.resource.canonical for r in app.router.routes()})))
    return runner
