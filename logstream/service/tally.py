"""The demo's running score card: injected anomalies against what the worker flagged and alerted.

Three inputs, joined by the Kafka position of the input message (topic, partition, offset):

* labels: the synthetic producer's side file, one record per anomalous line (with its anomaly id;
  an error burst is one anomaly of several lines);
* scores: the worker's scores topic, one record per scored line (``anomaly`` true when flagged);
* alerts: the alerts topic. Grouping folds a burst into one alert, so an anomaly counts as detected
  when any of its lines was flagged, or an alert points at any of its lines.

An anomaly is decided once all of its lines were scored: detected, or else missed. An alert is
false when it points at a line that is not labeled (by position, or by stream and line text).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..alerts import Alert
from .records import ScoreRecord

Position = tuple[str, int, int]  # topic, partition, offset


@dataclass(frozen=True)
class TallySummary:
    injected: int  # anomalies the producer has sent (and Kafka acknowledged) so far
    detected: int
    missed: int
    pending: int  # injected, not all lines scored yet, none flagged yet
    alerts: int  # distinct alerts (count updates are not new alerts)
    false_alerts: int
    scored: int  # distinct input messages scored

    def __str__(self) -> str:
        return (f"injected {self.injected} anomalies: {self.detected} detected, {self.missed} missed, "
                f"{self.pending} not scored yet | {self.alerts} alerts, {self.false_alerts} false | "
                f"{self.scored} lines scored")


class DetectionTally:
    def __init__(self):
        self._label_at: dict[Position, int] = {}  # position -> anomaly id
        self._label_text: dict[tuple[str, str], int] = {}  # (stream, line) -> anomaly id
        self._lines_of: dict[int, set[Position]] = {}  # anomaly id -> its lines
        self._scored: set[Position] = set()
        self._flagged: set[Position] = set()
        self._alerts: dict[str, Alert] = {}  # alert id -> the alert as first seen

    def add_label(self, label: dict) -> None:
        position = (label["topic"], int(label["partition"]), int(label["offset"]))
        anomaly = int(label["anomaly_id"])
        self._label_at[position] = anomaly
        self._label_text[(label["stream"], label["line"])] = anomaly
        self._lines_of.setdefault(anomaly, set()).add(position)

    def add_score(self, score: ScoreRecord) -> None:
        if score.offset is None:
            return
        position = (score.topic, score.partition, score.offset)
        self._scored.add(position)
        if score.anomaly:
            self._flagged.add(position)

    def add_alert(self, alert: Alert) -> bool:
        """Record an alert; True when it is new (not a count update of one seen before)."""
        new = alert.alert_id not in self._alerts
        if new:
            self._alerts[alert.alert_id] = alert
        return new

    def anomaly_of(self, alert: Alert, input_topic: str) -> int | None:
        if alert.offset is not None:
            anomaly = self._label_at.get((input_topic, alert.partition, alert.offset))
            if anomaly is not None:
                return anomaly
        return self._label_text.get((alert.stream, alert.line))

    @property
    def scored(self) -> int:
        return len(self._scored)

    def summary(self, input_topic: str) -> TallySummary:
        matched = [self.anomaly_of(a, input_topic) for a in self._alerts.values()]
        alerted, false_alerts = set(matched), matched.count(None)
        detected = missed = pending = 0
        for anomaly, lines in self._lines_of.items():
            if anomaly in alerted or lines & self._flagged:
                detected += 1
            elif lines <= self._scored:
                missed += 1
            else:
                pending += 1
        return TallySummary(injected=len(self._lines_of), detected=detected, missed=missed, pending=pending,
                            alerts=len(self._alerts), false_alerts=false_alerts, scored=len(self._scored))
