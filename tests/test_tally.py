"""The demo's tally: an injected anomaly is detected only when an alert names one of its lines."""

from __future__ import annotations

from datetime import UTC, datetime

from logstream.alerts import Alert
from logstream.service.records import ScoreRecord
from logstream.service.tally import DetectionTally

TOPIC = "lines"


def score(offset: int, anomaly: bool) -> ScoreRecord:
    return ScoreRecord(stream="web-1", topic=TOPIC, partition=0, offset=offset, score=5.0 if anomaly else 0.5,
                       threshold=2.0, anomaly=anomaly, warm=True, tokens=10, model_version="m",
                       time=datetime.now(UTC))


def alert(offset: int, line: str) -> Alert:
    return Alert(stream="web-1", partition=0, offset=offset, time=datetime.now(UTC), line=line, score=5.0,
                 threshold=2.0, model_version="m")


def test_an_anomaly_counts_as_detected_only_when_an_alert_names_its_line():
    tally = DetectionTally()
    # anomaly 1: one line at offset 10; anomaly 2: a burst at offsets 20-22
    tally.add_label({"topic": TOPIC, "partition": 0, "offset": 10, "anomaly_id": 1, "stream": "web-1", "line": "A"})
    for offset in (20, 21, 22):
        tally.add_label({"topic": TOPIC, "partition": 0, "offset": offset, "anomaly_id": 2, "stream": "web-1",
                         "line": f"B{offset}"})
    for offset in range(30):
        tally.add_score(score(offset, anomaly=offset in (5, 10, 21)))
    assert tally.add_alert(alert(10, "A"))          # names anomaly 1's line
    assert tally.add_alert(alert(5, "normal line"))  # a false alert; anomaly 2's flagged line 21 was
    # folded into it (grouping): no alert names it, so nobody saw anomaly 2
    assert not tally.add_alert(alert(5, "normal line").model_copy(update={"count": 2}))  # a count update
    summary = tally.summary(TOPIC)
    assert (summary.injected, summary.detected, summary.missed, summary.pending) == (2, 1, 1, 0)
    assert (summary.alerts, summary.false_alerts) == (2, 1)
    assert summary.precision == 0.5 and summary.recall == 0.5
    assert summary.flagged == 2  # anomaly 2's line 21 was flagged, and folded: said, not counted as detected
    assert summary.verdict() == ("precision 50% (1 of 2 alerts name an injected line), recall 50% (1 of 2 "
                                 "injected anomalies named by an alert; 2 flagged, 1 of them folded into an alert "
                                 "of their stream and pattern already open)")
