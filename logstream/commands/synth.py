"""``logstream synth``: synthetic multi-service logs with labeled injected anomalies.

To files: ``logstream synth --out DIR --lines N [--anomaly-rate R] [--seed S]`` writes one log file
per stream and ``DIR/labels.jsonl``. To Kafka: ``logstream synth --kafka [--rate LINES_PER_S]
[--lines N | forever]`` sends JSON envelopes keyed by stream to the input topic (created first if
missing) and writes each anomalous line's partition and offset to the labels file.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path

FOREVER = "forever"
DEFAULT_FILE_LINES = 10_000
DEFAULT_KAFKA_LABELS = Path("logstream-synth-labels.jsonl")

log = logging.getLogger("logstream.synth")


def _line_count(text: str):
    if text == FOREVER:
        return FOREVER
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of lines or '{FOREVER}', not {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"line count must not be negative: {n}")
    return n


def _services(text: str) -> dict[str, int]:
    """``hdfs=2,web,sshd=3``: service names with their instance counts (1 when left out)."""
    services = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, count = item.partition("=")
        try:
            services[name.strip()] = int(count) if count else 1
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad instance count in {item!r}") from None
    if not services:
        raise argparse.ArgumentTypeError("no services given")
    return services


def _start_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None


def add_arguments(p):
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, metavar="DIR",
                        help="write one log file per stream and labels.jsonl into DIR")
    target.add_argument("--kafka", action="store_true",
                        help="send to the input topic as JSON envelopes keyed by stream")
    p.add_argument("--lines", type=_line_count, metavar="N|forever",
                   help=f"how many lines (default: {DEFAULT_FILE_LINES} to files, {FOREVER} to Kafka)")
    p.add_argument("--anomaly-rate", type=float, default=0.01, metavar="R",
                   help="fraction of lines that are injected anomalies; 0 for a normal training corpus "
                        "(default: 0.01)")
    p.add_argument("--seed", type=int, default=0, help="same seed, same logs (default: 0)")
    p.add_argument("--services", type=_services, metavar="NAME[=N],...",
                   help="services and instance counts (default: hdfs=2,web=2,sshd=2,zookeeper=1)")
    p.add_argument("--start", type=_start_time, metavar="ISO_TIME",
                   help="time of the simulated first line (default: 2024-03-04T09:00Z to files, "
                        "now to Kafka)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                   help="Kafka to send to (default: kafka.bootstrap_servers from the settings)")
    p.add_argument("--rate", type=float, default=100.0, metavar="LINES_PER_S",
                   help="lines per second to Kafka; 0 for as fast as it takes them (default: 100)")
    p.add_argument("--labels", type=Path, metavar="PATH",
                   help=f"labels file for --kafka (default: {DEFAULT_KAFKA_LABELS}); --out always writes "
                        "DIR/labels.jsonl")


def run(args, settings) -> int:
    from ..synth import DEFAULT_START, SyntheticLogs

    if args.kafka:
        start = args.start or datetime.now(UTC)
    else:
        start = args.start or DEFAULT_START
    logs = SyntheticLogs(seed=args.seed, anomaly_rate=args.anomaly_rate, services=args.services,
                         start_time=start)
    if args.kafka:
        return asyncio.run(_to_kafka(args, settings, logs))
    return _to_files(args, logs)


def _to_files(args, logs) -> int:
    if args.lines == FOREVER:
        raise ValueError(f"--lines {FOREVER} needs --kafka")
    if args.labels:
        raise ValueError("--labels is for --kafka; --out writes DIR/labels.jsonl")
    n_lines = DEFAULT_FILE_LINES if args.lines is None else args.lines
    written = logs.write_files(args.out, n_lines, progress=sys.stderr.isatty())
    print(f"wrote {written.lines} lines to {len(written.files)} files in {written.out_dir} "
          f"({written.anomalous_lines} anomalous, listed in {written.labels_path})")
    return 0


async def _to_kafka(args, settings, logs) -> int:
    from ..service.topics import KafkaUnavailable, ensure_topics

    if args.rate < 0:
        raise ValueError(f"--rate must not be negative: {args.rate}")
    from . import kafka_settings

    kafka = kafka_settings(settings, args.bootstrap_servers)
    n_lines = None if args.lines in (None, FOREVER) else args.lines
    labels_path = args.labels or DEFAULT_KAFKA_LABELS
    try:
        await ensure_topics(kafka, [kafka.input_topic])
        pace = f"{args.rate:g} lines/s" if args.rate else "unthrottled"
        log.info("sending %s lines to %s at %s (%s); labels in %s", n_lines or FOREVER, kafka.input_topic,
                 kafka.bootstrap_servers, pace, labels_path)
        produced = await logs.produce_to_kafka(kafka, kafka.input_topic, n_lines,
                                               args.rate, labels_path)
    except KafkaUnavailable as exc:
        print(f"logstream synth: error: {exc}", file=sys.stderr)
        return 2
    print(f"sent {produced.lines} lines to {kafka.input_topic} ({produced.anomalous_lines} anomalous, "
          f"listed in {labels_path})")
    return 0
