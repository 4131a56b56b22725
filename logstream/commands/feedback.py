"""``logstream feedback ALERT_ID normal``: tell logstream an alert was a false positive.

The alert is looked up on the alerts topic (its stream, line and score) and the mark is published
to the feedback topic; every worker applies it at once (lines like it stop alerting, other errors
of the same stream still do) and again at each start, so it survives restarts. The same can be sent
to a worker's ``POST /feedback`` (for example from an Alertmanager webhook receiver), or written to
the feedback topic directly.
"""

from __future__ import annotations

import asyncio
import sys


def add_arguments(p):
    p.add_argument("alert_id", help="the alert's id (`logstream alerts` prints it; webhooks carry it)")
    p.add_argument("verdict", choices=["normal"], help="'normal': the alert was a false positive")
    p.add_argument("--by", help="who says so (kept with the mark)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (default: kafka.bootstrap_servers)")


def run(args, settings) -> int:
    from ..service.feedback import FeedbackError, FeedbackRecord, send_feedback
    from ..service.topics import KafkaUnavailable
    from . import kafka_settings

    kafka = kafka_settings(settings, args.bootstrap_servers)
    try:
        record = asyncio.run(send_feedback(kafka, FeedbackRecord(alert_id=args.alert_id, verdict=args.verdict,
                                                                 by=args.by or "cli")))
    except (KafkaUnavailable, FeedbackError) as exc:
        print(f"logstream feedback: error: {exc}", file=sys.stderr)
        return 2
    print(f"alert {record.alert_id} marked {record.verdict}: lines like this one of {record.stream} stop alerting\n"
          f"  {record.line}")
    return 0
