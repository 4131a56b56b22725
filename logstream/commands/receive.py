"""``logstream receive``: a webhook receiver that verifies and prints what logstream and Alertmanager send."""

from __future__ import annotations

import asyncio
import signal
import sys


def add_arguments(p):
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (a container: 0.0.0.0)")
    p.add_argument("--port", type=int, default=8080)


def run(args, settings) -> int:
    from ..alerts.signing import secret_bytes
    from ..service.http_api import bind

    secrets = [hook.secret for hook in settings.alerts.webhooks if hook.secret]
    for secret in secrets:
        secret_bytes(secret)  # a malformed secret is a start-up error (ValueError), not 401s later
    try:
        sock = bind(args.host, args.port, setting="--port")
    except OSError as exc:
        print(f"logstream receive: error: {exc}", file=sys.stderr)
        return 1
    if not secrets:
        print("logstream receive: no alerts.webhooks secret configured: deliveries are accepted unverified",
              file=sys.stderr)
    asyncio.run(_serve(sock, secrets))
    return 0


async def _serve(sock, secrets) -> None:
    from ..service.http_api import serve
    from ..service.receiver import build_receiver_app

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = await serve(build_receiver_app(secrets, say=lambda text: print(text, flush=True)), sock)
    host, port = sock.getsockname()[:2]
    print(f"receiving on http://{host}:{port} (/logstream: {len(secrets)} secret(s); /alertmanager)", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
