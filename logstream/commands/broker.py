"""``logstream broker``: the embedded Kafka-compatible broker, in the foreground, its log on stderr.
Ctrl-C or SIGTERM (a container stop, ``kill``) stops the broker process with it."""

import signal
import sys
import time


def add_arguments(p):
    p.add_argument("--port", type=int, default=9092)


def _exit(signum, _frame):
    sys.exit(128 + signum)  # unwinds through the broker's context manager, which stops its process


def run(args, settings) -> int:
    from ..service.broker import EmbeddedBroker

    signal.signal(signal.SIGTERM, _exit)
    with EmbeddedBroker(port=args.port, forward_log=True) as broker:
        print(f"broker listening on {broker.bootstrap_servers} (Ctrl-C stops it)", flush=True)
        while broker.process.poll() is None:
            time.sleep(0.5)
        return broker.process.returncode or 1
