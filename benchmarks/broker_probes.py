"""Three probes of the bundled broker (Tansu, in-memory storage) that explain ``broker_growth.md``.

    python benchmarks/broker_probes.py growth --fetch-wait-ms 20 [--linger-ms 5] [--topic lines|other]
    python benchmarks/broker_probes.py end-offsets
    python benchmarks/broker_probes.py delete-records

``growth``: 250 records/s to an 8-partition topic for two 30 s windows with one aiokafka consumer
following it (``--topic other``: an idle consumer of another, empty topic; ``--no-follow``: none); prints
the broker's cores in each window (``broker_growth.run``). What grows is the cost of the consumer's
fetches of partitions that hold many batches: the producer alone stays flat, and the broker answers a
fetch after its wait (a longer wait: fewer fetches).

``end-offsets``: 2,000 records produced (acks=all) to one partition, all read back; then the end offset as
ListOffsets answers it (``KafkaConsumer.end_offsets``) beside the high watermark of the fetch responses.

``delete-records``: whether what a consumer group has read can be trimmed from the broker (Kafka's
DeleteRecords, which a long soak could use in place of the retention a Kafka cluster applies): 2,000 records
produced to one partition, then a DeleteRecords up to offset 1,000; prints the broker's answer (or the error)
and the partition's first offset after it.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

from broker_growth import run

from logstream.service.broker import EmbeddedBroker


def growth(args) -> None:
    """The bundled broker's cores per 30 s window, as ``broker_growth.py`` measures them, for one consumer
    setting (none, one of another topic, or a fetch wait)."""
    run(args.linger_ms, rate=250.0, seconds=61.0, window=30.0, fetch_wait_ms=args.fetch_wait_ms,
        follow_topic=args.topic if args.follow else None)


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


def delete_records() -> None:
    with EmbeddedBroker() as broker:
        bootstrap = broker.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("lines", 1, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for future in [producer.send("lines", value=b"%d" % i) for i in range(2000)]:
            future.get(30)
        tp = TopicPartition("lines", 0)
        try:
            answer = admin.delete_records({tp: 1000}, timeout_ms=5000)
        except Exception as error:  # noqa: BLE001 - the probe reports whatever the broker does
            answer = f"{type(error).__name__}: {error}"
        first = KafkaConsumer(bootstrap_servers=bootstrap).beginning_offsets([tp])[tp]
        print(f"DeleteRecords up to 1000 of 2000 records: {answer}; first offset after it {first}, "
              f"broker still running: {broker.process.poll() is None}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="probe", required=True)
    g = sub.add_parser("growth")
    g.add_argument("--fetch-wait-ms", type=int, default=20)
    g.add_argument("--linger-ms", type=int, default=5)
    g.add_argument("--topic", default="lines", choices=["lines", "other"])
    g.add_argument("--no-follow", dest="follow", action="store_false")
    sub.add_parser("end-offsets")
    sub.add_parser("delete-records")
    args = parser.parse_args(argv)
    {"growth": lambda: growth(args), "end-offsets": end_offsets, "delete-records": delete_records}[args.probe]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
