"""A small webhook receiver that logs what it gets: the end of the line for trying the alert paths.

* ``POST /logstream``: logstream's Standard Webhooks deliveries. The signature is verified against
  the secrets of ``alerts.webhooks`` (the same settings the worker signs with); a bad or missing one
  is refused with 401 and logged as such, so a wrong key shows at once.
* ``POST /alertmanager``: Alertmanager's webhook notifications (Alertmanager does not sign them).

Each accepted alert is printed as one line, so ``docker compose logs webhook-receiver`` reads as a
feed. Not a production receiver: it keeps nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence

from aiohttp import web

from ..alerts.signing import SignatureError, verify

log = logging.getLogger("logstream.receiver")


def build_receiver_app(secrets: Sequence[str], say: Callable[[str], None] = print) -> web.Application:
    async def from_logstream(request: web.Request) -> web.Response:
        body = await request.read()
        errors = []
        for secret in secrets:
            try:
                verify(secret, request.headers, body)
                break
            except SignatureError as exc:
                errors.append(str(exc))
        else:
            if secrets:
                say(f"REJECTED {request.headers.get('webhook-id', '?')}: {'; '.join(errors)}")
                return web.json_response({"error": "; ".join(errors)}, status=401)
        try:
            alert = json.loads(body)
        except ValueError:
            return web.json_response({"error": "body is not JSON"}, status=400)
        signed = "verified" if secrets else "UNSIGNED (no alerts.webhooks secret configured)"
        say(f"logstream alert {signed} id={request.headers.get('webhook-id', '?')} stream={alert.get('stream')} "
            f"score={alert.get('score')} threshold={alert.get('threshold')} kind={alert.get('kind') or 'line'} "
            f"line={str(alert.get('line', ''))[:200]!r}")
        return web.Response(status=204)

    async def from_alertmanager(request: web.Request) -> web.Response:
        try:
            payload = await request.json()
            alerts = payload["alerts"]
        except (ValueError, KeyError, TypeError):
            return web.json_response({"error": "not an Alertmanager webhook payload"}, status=400)
        for alert in alerts:
            labels = alert.get("labels", {})
            summary = alert.get("annotations", {}).get("summary", "")
            say(f"alertmanager {alert.get('status')} {labels.get('alertname')} "
                f"severity={labels.get('severity', '-')} {summary[:200]!r}")
        return web.Response(status=204)

    app = web.Application(client_max_size=1 << 20)
    app.router.add_post("/logstream", from_logstream)
    app.router.add_post("/alertmanager", from_alertmanager)
    app.router.add_get("/healthz", lambda request: _ok())
    return app


async def _ok() -> web.Response:
    return web.json_response({"status": "ok"})
