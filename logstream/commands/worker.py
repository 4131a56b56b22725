"""``logstream worker``: the Faust worker that scores the input topic and publishes alerts.

Runs until SIGINT/SIGTERM, then stops cleanly: finishes the batches in hand, commits their offsets,
publishes pending alert count updates and lets the alert sinks deliver what they hold.
"""

from __future__ import annotations

import sys


def add_arguments(p):
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT[,HOST:PORT]",
                   help="Kafka to read from (default: kafka.bootstrap_servers)")
    p.add_argument("--threshold", type=float,
                   help="alert above this score (default: scoring.threshold, else the model's calibration)")
    p.add_argument("--metrics-port", type=int, help="Prometheus endpoint port (default: metrics.port)")


def run(args, settings) -> int:
    import logging

    from ..service.topics import KafkaUnavailable
    from ..service.worker import run_worker

    from . import kafka_settings

    updates = {"kafka": kafka_settings(settings, args.bootstrap_servers)}
    if args.threshold is not None:
        updates["scoring"] = settings.scoring.model_copy(update={"threshold": args.threshold})
    if args.metrics_port is not None:
        updates["metrics"] = settings.metrics.model_copy(update={"port": args.metrics_port})
    settings = settings.model_copy(update=updates)
    loglevel = "debug" if logging.getLogger().isEnabledFor(logging.DEBUG) else "info"
    try:
        return run_worker(settings, loglevel=loglevel)
    except (KafkaUnavailable, OSError) as exc:
        print(f"logstream worker: error: {exc}", file=sys.stderr)
        return 2
