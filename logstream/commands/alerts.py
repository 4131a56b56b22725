"""``logstream alerts``: follow the alerts topic and print each alert as it arrives.

Readable blocks by default (time, stream, score and threshold, the line, why, how many lines the
alert folds); ``--json`` prints one alert JSON per line for scripts. A count update of an alert
already shown (same ``alert_id``, larger ``count``) is printed as such.
"""

from __future__ import annotations

import asyncio
import signal
import sys


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="one alert JSON per line")
    p.add_argument("--from-beginning", action="store_true",
                   help="print the alerts already on the topic first (default: only new ones)")
    p.add_argument("--limit", type=int, metavar="N",
                   help="exit after N alerts (default: follow until Ctrl-C)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                   help="Kafka to read from (default: kafka.bootstrap_servers)")


def run(args, settings) -> int:
    from ..service.topics import KafkaUnavailable

    from . import kafka_settings

    kafka = kafka_settings(settings, args.bootstrap_servers)
    try:
        asyncio.run(_follow(kafka, args))
    except KafkaUnavailable as exc:
        print(f"logstream alerts: error: {exc}", file=sys.stderr)
        return 2
    return 0


async def _follow(kafka, args) -> None:
    from pydantic import ValidationError

    from ..alerts import Alert
    from ..service.alert_view import format_alert
    from ..service.follow import TopicFollower

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    shown: set[str] = set()
    printed = 0
    async with TopicFollower(kafka, [kafka.alerts_topic], from_beginning=args.from_beginning) as follower:
        print(f"following {kafka.alerts_topic} at {kafka.bootstrap_servers} (Ctrl-C stops)", file=sys.stderr,
              flush=True)
        while not stop.is_set() and (args.limit is None or printed < args.limit):
            for record in await follower.poll():
                try:
                    alert = Alert.from_bytes(record.value or b"")
                except ValidationError as exc:  # someone else's record on the topic: say so, go on
                    print(f"skipping an unreadable record at partition {record.partition}, offset "
                          f"{record.offset}: {exc.errors()[0]['msg']}", file=sys.stderr, flush=True)
                    continue
                if args.json:
                    print(alert.model_dump_json(), flush=True)
                else:
                    print(format_alert(alert, update=alert.alert_id in shown) + "\n", flush=True)
                shown.add(alert.alert_id)
                printed += 1
                if args.limit is not None and printed >= args.limit:
                    break
