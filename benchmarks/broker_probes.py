"""Two probes of the bundled broker (Tansu, in-memory storage) that explain ``broker_growth.md``.

    python benchmarks/broker_probes.py growth --fetch-wait-ms 20 [--linger-ms 5] [--topic lines|other]
    python benchmarks/broker_probes.py end-offsets

``growth``: 250 records/s to an 8-partition topic for two 30 s windows with one aiokafka consumer following (``--topic
other``: an idle consumer of another, empty topic; ``--no-follow``: none); prints the broker's cores every
30 s. What grows is the cost of the consumer's fetches of partitions that hold many batches: the
producer alone stays flat, and the broker answers a fetch after its wait (a longer wait: fewer fetches).

``end-offsets``: 2,000 records produced (acks=all) to one partition, all read back; then the end offset as
ListOffsets answers it (``KafkaConsumer.end_offsets``) beside the high watermark of the fetch responses.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

from reliability import cpu_seconds

from logstream.service.broker import EmbeddedBroker


def follow(bootstrap: str, topic: str, fetch_wait_ms: int, stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer

    async def main() -> None:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="follower",
                                    fetch_max_wait_ms=fetch_wait_ms, auto_offset_reset="earliest")
        await consumer.start()
        try:
            while not stop.is_set():
                await consumer.getmany(timeout_ms=100)
        finally:
            await consumer.stop()

    asyncio.run(main())


def growth(args) -> None:
    rate, window = 250.0, 30.0
    seconds = 2 * window + 1  # two windows
    with EmbeddedBroker() as broker:
        bootstrap = broker.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("lines", 8, 1), NewTopic("other", 1, 1)])
        admin.close()
        stop = threading.Event()
        follower = None
        if args.follow:
            follower = threading.Thread(target=follow, args=(bootstrap, args.topic, args.fetch_wait_ms, stop),
                                        daemon=True)
            follower.start()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=args.linger_ms)
        value = b'{"line": "' + b"x" * 100 + b'"}'
        started = last = time.monotonic()
        cpu_last, sent = cpu_seconds(broker.process.pid), 0
        while time.monotonic() - started < seconds:
            delay = started + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, 0.05))
                continue
            producer.send("lines", key=str(sent % 50).encode(), value=value)
            sent += 1
            if time.monotonic() - last >= window:
                now, cpu = time.monotonic(), cpu_seconds(broker.process.pid)
                print(f"follow {args.topic if args.follow else 'none'}, fetch wait {args.fetch_wait_ms} ms, linger "
                      f"{args.linger_ms} ms: {now - started:.0f} s, {sent:,} records held, broker "
                      f"{(cpu - cpu_last) / (now - last):.2f} cores", flush=True)
                last, cpu_last = now, cpu
        producer.close()
        stop.set()
        if follower is not None:
            follower.join(30)


def end_offsets() -> None:
    with EmbeddedBroker() as broker:
        bootstrap = broker.bootstrap_servers
        KafkaAdminClient(bootstrap_servers=bootstrap).create_topics([NewTopic("lines", 1, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        acked = [f.get(30).offset for f in [producer.send("lines", value=b"%d" % i) for i in range(2000)]]
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000)
        tp = TopicPartition("lines", 0)
        consumer.assign([tp])
        read = sum(1 for _ in consumer)
        print(f"acknowledged offsets {min(acked)}..{max(acked)}, records read back {read}, ListOffsets end "
              f"{consumer.end_offsets([tp])[tp]}, fetch high watermark {consumer.highwater(tp)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="probe", required=True)
    g = sub.add_parser("growth")
    g.add_argument("--fetch-wait-ms", type=int, default=20)
    g.add_argument("--linger-ms", type=int, default=5)
    g.add_argument("--topic", default="lines", choices=["lines", "other"])
    g.add_argument("--no-follow", dest="follow", action="store_false")
    sub.add_parser("end-offsets")
    args = parser.parse_args(argv)
    growth(args) if args.probe == "growth" else end_offsets()
    return 0


if __name__ == "__main__":
    sys.exit(main())
