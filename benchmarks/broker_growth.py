"""How the bundled broker's CPU grows with what it holds, alone: no worker, no model.

    python benchmarks/broker_growth.py        # -> benchmarks/results/broker_growth.md (~5 min)

One embedded broker (Tansu, in-memory storage, as ``logstream broker`` and the tests run it). A
producer writes ``--rate`` records/s of 100-byte lines to an 8-partition topic (kafka-python,
``acks=all``, with the linger given) while one consumer group follows it (aiokafka, fetch wait 20
ms: the worker's default ``worker.fetch_wait_ms``). Every ``--window`` seconds: the broker's CPU
share over the window and the records it holds. The rate in is the same all along; where the
broker's share grows anyway, its cost is per record (or batch) held, not per record moved. The
two lingers give the batches: 5 ms, the shipped tailer's; 50 ms, fewer and larger batches.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

from reliability import cpu_seconds

from logstream.service.broker import EmbeddedBroker


def follow(bootstrap: str, topic: str, stop: threading.Event, fetch_wait_ms: int = 20) -> None:
    """One consumer group reading the topic as the worker does (its fetch wait: ``worker.fetch_wait_ms``),
    until ``stop``."""
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


def run(linger_ms: int, rate: float, seconds: float, window: float, fetch_wait_ms: int = 20,
        follow_topic: str | None = "lines") -> list[tuple[float, int, float]]:
    """(time, records held, broker cores over the window) per window. The consumer follows ``follow_topic``
    (another one than "lines" is created empty; None: no consumer)."""
    rows = []
    with EmbeddedBroker() as broker:
        bootstrap = broker.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("lines", 8, 1)] + ([NewTopic(follow_topic, 1, 1)]
                                                         if follow_topic not in (None, "lines") else []))
        admin.close()
        stop = threading.Event()
        follower = threading.Thread(target=follow, args=(bootstrap, follow_topic, stop, fetch_wait_ms), daemon=True)
        if follow_topic is not None:
            follower.start()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=linger_ms)
        value = b'{"line": "' + b"x" * 100 + b'"}'
        started = last = time.monotonic()
        cpu_last, sent = cpu_seconds(broker.process.pid), 0
        while time.monotonic() - started < seconds:
            delay = started + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, 0.05))
            else:
                producer.send("lines", key=str(sent % 50).encode(), value=value)
                sent += 1
            if time.monotonic() - last >= window:
                now, cpu = time.monotonic(), cpu_seconds(broker.process.pid)
                rows.append((now - started, sent, (cpu - cpu_last) / (now - last)))
                print(f"linger {linger_ms} ms, consumer of {follow_topic or 'none'} (fetch wait {fetch_wait_ms} ms): "
                      f"{rows[-1][0]:4.0f} s, {sent:,} records held, broker {rows[-1][2]:.2f} cores", flush=True)
                last, cpu_last = now, cpu
        producer.close()
        stop.set()
        if follower.is_alive():
            follower.join(30)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=250.0, help="records/s written")
    parser.add_argument("--seconds", type=float, default=150.0, help="per linger")
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--lingers", default="5,50", help="producer linger values to run, ms")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    from cache_bench_setup import cpu_name

    runs = {int(x): run(int(x), args.rate, args.seconds, args.window) for x in args.lingers.split(",")}
    load = os.getloadavg()
    out = ["# The bundled broker's CPU as the records it holds grow", "",
           f"```\npython benchmarks/broker_growth.py {' '.join(sys.argv[1:])}\n```", "",
           f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Machine: {cpu_name()}, {os.cpu_count()} "
           f"cores, load average at the end {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}. One embedded broker "
           f"(Tansu, in-memory storage) per linger; {args.rate:.0f} records/s written to 8 partitions "
           "(kafka-python, acks=all), one consumer group following (aiokafka, fetch wait 20 ms); nothing else.", "",
           "| producer linger | seconds | records held | broker cores in the window | vs the first window |",
           "|---|---|---|---|---|"]
    for linger, rows in runs.items():
        for t, held, cores in rows:
            out.append(f"| {linger} ms | {t:.0f} | {held:,} | {cores:.2f} | {cores / max(rows[0][2], 1e-9):.1f}x |")
    out += ["", "The rate in is the same in every window: a share that grows is a cost per record (or batch) "
            "held. Larger batches (the longer linger) cost less, and grow too. The bundled broker is for "
            "trials, the demo and the tests; a deployment that runs for hours points "
            "`kafka.bootstrap_servers` at a Kafka cluster."]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "broker_growth.md").write_text("\n".join(out) + "\n")
    print((args.out / "broker_growth.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
