"""Operator feedback: "this alert was normal", from the CLI, the feedback topic or the worker's HTTP API.

Every path ends as one ``FeedbackRecord`` on the feedback topic (``kafka.feedback_topic``), which is
the durable store: each worker reads the whole topic when it starts and every new record after
that, so a mark survives restarts and reaches every worker of the group. A record needs only the
alert's id; the stream, line and score are filled in from the alerts topic when missing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..alerts import Alert
from ..config import KafkaSettings
from .topics import ensure_topics

SCHEMA_VERSION = 1


class FeedbackError(ValueError):
    """Feedback that cannot be applied; the message says why."""


class FeedbackRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    alert_id: str
    verdict: Literal["normal"] = Field("normal", description="'normal': the alert was a false positive")
    stream: str | None = None
    line: str | None = None
    score: float | None = None
    by: str | None = Field(None, description="who or what sent it: cli, http, a user name")
    time: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def complete(self) -> bool:
        return self.stream is not None and self.line is not None and self.score is not None

    def with_alert(self, alert: Alert) -> "FeedbackRecord":
        return self.model_copy(update={"stream": alert.stream, "line": alert.line, "score": alert.score})

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


async def find_alert(kafka: KafkaSettings, alert_id: str) -> Alert | None:
    """The latest record of an alert on the alerts topic (read from its beginning to its end now)."""
    consumer = AIOKafkaConsumer(**kafka.client_options(), enable_auto_commit=False,
                                client_id="logstream-feedback-lookup")
    await consumer.start()
    try:
        partitions = [TopicPartition(kafka.alerts_topic, p)
                      for p in sorted(consumer.partitions_for_topic(kafka.alerts_topic) or [])
                      or range(kafka.partitions)]
        consumer.assign(partitions)
        ends = await consumer.end_offsets(partitions)
        await consumer.seek_to_beginning(*partitions)
        found = None
        remaining = {tp for tp, end in ends.items() if end > 0}
        while remaining:
            batches = await consumer.getmany(*remaining, timeout_ms=1000)
            if not batches:
                break
            for tp, records in batches.items():
                for record in records:
                    if record.value and alert_id.encode() in record.value:
                        try:
                            alert = Alert.from_bytes(record.value)
                        except ValidationError:
                            continue
                        if alert.alert_id == alert_id:
                            found = alert
                if records and records[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
        return found
    finally:
        await consumer.stop()


async def resolve(kafka: KafkaSettings, record: FeedbackRecord) -> FeedbackRecord:
    """The record with its alert's stream, line and score (looked up on the alerts topic if missing)."""
    if record.complete:
        return record
    alert = await find_alert(kafka, record.alert_id)
    if alert is None:
        raise FeedbackError(f"no alert {record.alert_id!r} on topic {kafka.alerts_topic} at "
                            f"{kafka.bootstrap_servers} (alert ids are printed by `logstream alerts` and sent "
                            "in every webhook)")
    return record.with_alert(alert)


async def send_feedback(kafka: KafkaSettings, record: FeedbackRecord) -> FeedbackRecord:
    """Resolve the record and publish it to the feedback topic; returns it once Kafka acknowledged it."""
    await ensure_topics(kafka, [kafka.feedback_topic, kafka.alerts_topic])
    record = await resolve(kafka, record)
    producer = AIOKafkaProducer(**kafka.client_options(), acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(kafka.feedback_topic, key=record.alert_id.encode(), value=record.to_bytes())
    finally:
        await producer.stop()
    return record


def parse_feedback(body: dict, by: str) -> list[FeedbackRecord]:
    """Feedback from an HTTP body: ``{"alert_id": ..., "verdict": "normal"}``, or an Alertmanager
    webhook payload whose alerts carry logstream's ``alert_id`` annotation (or label)."""
    if not isinstance(body, dict):
        raise FeedbackError("expected a JSON object")
    if "alerts" in body:
        ids = []
        for alert in body.get("alerts") or []:
            if isinstance(alert, dict):
                alert_id = (alert.get("annotations") or {}).get("alert_id") or (alert.get("labels") or {}).get("alert_id")
                if alert_id:
                    ids.append(alert_id)
        if not ids:
            raise FeedbackError("no alert in the payload carries an alert_id annotation or label")
        return [FeedbackRecord(alert_id=i, by=by) for i in ids]
    try:
        return [FeedbackRecord.model_validate({"by": by, **body})]
    except ValidationError as exc:
        raise FeedbackError("; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                                      for e in exc.errors())) from None
