"""``logstream broker``: the embedded Kafka-compatible broker, in the foreground."""

import time


def add_arguments(p):
    p.add_argument("--port", type=int, default=9092)


def run(args, settings) -> int:
    from ..service.broker import EmbeddedBroker

    with EmbeddedBroker(port=args.port) as broker:
        print(f"broker listening on {broker.bootstrap_servers} (Ctrl-C stops it)", flush=True)
        while broker.process.poll() is None:
            time.sleep(0.5)
        return broker.process.returncode or 1
