"""``logstream tail PATH|GLOB ...``: follow log files into the input topic, at least once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

log = logging.getLogger("logstream.tail")


def add_arguments(p):
    p.add_argument("paths", nargs="+", metavar="PATH|GLOB",
                   help="files to follow; quote globs ('/var/log/app/*.log') so they are expanded on every "
                        "poll and new files are picked up")
    p.add_argument("--checkpoint", type=Path, help="offsets file (default: tail.checkpoint_path)")
    p.add_argument("--start-at", choices=["beginning", "end"],
                   help="where to start in a file with no checkpoint when the tailer starts "
                        "(default: tail.start_at); files that appear later are read from the beginning")
    p.add_argument("--bootstrap-servers",
                   help="Kafka host:port[,host:port] (default: kafka.bootstrap_servers)")
    p.add_argument("--once", action="store_true",
                   help="read every file to its end, wait for Kafka's acknowledgements, save the checkpoint "
                        "and exit (batch loads, tests)")


def run(args, settings) -> int:
    from aiokafka.errors import KafkaError

    from ..service.http_api import bind
    from ..service.tailer import FileTailer, TailerError
    from ..service.topics import KafkaUnavailable

    tail_updates = {"checkpoint_path": args.checkpoint, "start_at": args.start_at}
    tail = settings.tail.model_copy(update={k: v for k, v in tail_updates.items() if v is not None})
    from . import kafka_settings

    kafka = kafka_settings(settings, args.bootstrap_servers)
    make_tailer = lambda: FileTailer(args.paths, tail, kafka)  # noqa: E731
    make_tailer()  # bad paths and settings are start-up errors
    try:
        # bound before anything is read, so a port in use is a clear start-up error
        http_socket = None if args.once or tail.metrics_port is None else bind(
            settings.metrics.host, tail.metrics_port, setting="tail.metrics_port")
        asyncio.run(_tail_until_signalled(make_tailer, tail, args.once, http_socket))
    except (TailerError, KafkaUnavailable, KafkaError, OSError) as exc:
        print(f"logstream tail: error: {exc}", file=sys.stderr)
        return 1
    return 0


async def _tail_until_signalled(make_tailer, tail, once: bool, http_socket=None) -> None:
    """Run the tailer (and its metrics endpoint on ``http_socket``); the first SIGINT/SIGTERM stops it
    cleanly (flush, acks, checkpoint)."""
    from ..service.http_api import build_tailer_app, serve

    runner = await serve(build_tailer_app(), http_socket) if http_socket is not None else None
    try:
        await _run(make_tailer, tail, once)
    finally:
        if runner is not None:
            await runner.cleanup()


async def _run(make_tailer, tail, once: bool) -> None:
    """Tail until a signal. When Kafka goes away, the tailer stops with its checkpoint saved up to what
    was acknowledged, waits (1 s, doubling up to ``tail.reconnect_max_s``) and starts again from the
    checkpoint: lines written meanwhile wait in their files, and none is lost. With ``--once`` the
    first failure is an error (a batch load wants an answer, not a wait)."""
    from aiokafka.errors import KafkaError

    from ..service.metrics import TAILER_BROKER_UP, TAILER_RECONNECTS
    from ..service.tailer import TailerError
    from ..service.topics import KafkaUnavailable

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def request_stop():
        stop.set()
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal stops at once
            loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, request_stop)
    backoff = 1.0
    while True:
        tailer = make_tailer()
        started = loop.time()
        try:
            await tailer.run(stop, once=once)
            return
        except (TailerError, KafkaUnavailable, KafkaError) as exc:
            TAILER_BROKER_UP.set(0)
            if once or stop.is_set():
                raise
            if loop.time() - started > 60:  # it had been running: a new outage starts at the shortest wait
                backoff = 1.0
            TAILER_RECONNECTS.inc()
            log.warning("Kafka failed (%s); the checkpoint holds what it acknowledged; starting again from it "
                        "in %.0f s", exc, backoff)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), backoff)
        if stop.is_set():
            return
        backoff = min(backoff * 2, tail.reconnect_max_s)
