"""The demo's running score card: injected anomalies against the alerts the worker raised.

Three inputs, joined by the Kafka position of the input message (topic, partition, offset):

* labels: the synthetic producer's side file, one record per anomalous line (with its anomaly id;
  an error burst is one anomaly of several lines);
* scores: the worker's scores topic, one record per scored line (to know when an anomaly's lines
  have all been scored, and which lines the worker flagged);
* alerts: the alerts topic. An anomaly counts as detected only when an alert names one of its lines
  (an alert names the first line of its group): a line flagged but folded into a group that
  started elsewhere is not something a person would see. The summary also says how many were
  flagged: the difference is what grouping folded into an alert already open for the same stream
  and pattern (``alerts.group_window_s``).

An anomaly is decided once all of its lines were scored: detected, or else missed. An alert is
false when the line it names is not labeled (by position, or by stream and line text).
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
    flagged: int = 0  # decided anomalies with a line the worker flagged (named by an alert or folded into one)

    def __str__(self) -> str:
        return (f"injected {self.injected} anomalies: {self.detected} detected, {self.missed} missed, "
                f"{self.pending} not scored yet | {self.alerts} alerts, {self.false_alerts} false | "
                f"{self.scored} lines scored")

    @property
    def precision(self) -> float | None:
        return (self.alerts - self.false_alerts) / self.alerts if self.alerts else None

    @property
    def recall(self) -> float | None:
        decided = self.detected + self.missed
        return self.detected / decided if decided else None

    def verdict(self) -> str:
        """Precision and recall, in words a person reads at the end of a run."""
        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.0%}"

        folded = self.flagged - self.detected
        return (f"precision {pct(self.precision)} ({self.alerts - self.false_alerts} of {self.alerts} alerts name "
                f"an injected line), recall {pct(self.recall)} ({self.detected} of {self.detected + self.missed} "
                f"injected anomalies named by an alert"
                + (f"; {self.flagged} flagged, {folded} of them folded into an alert of their stream and pattern "
                   f"already open" if folded > 0 else "") + ")")


class DetectionTally:
    def __init__(self):
        self._label_at: dict[Position, int] = {}  # position -> anomaly id
        self._label_text: dict[tuple[str, str], int] = {}  # (stream, line) -> anomaly id
        self._lines_of: dict[int, set[Position]] = {}  # anomaly id -> its lines
        self._scored: set[Position] = set()
        self._flagged: set[Position] = set()  # lines the worker scored as anomalous
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
        detected = missed = pending = flagged = 0
        for anomaly, lines in self._lines_of.items():
            if anomaly in alerted:
                detected += 1
            elif lines <= self._scored:
                missed += 1
            else:
                pending += 1
                continue
            flagged += bool(lines & self._flagged)
        return TallySummary(injected=len(self._lines_of), detected=detected, missed=missed, pending=pending,
                            alerts=len(self._alerts), false_alerts=false_alerts, scored=len(self._scored),
                            flagged=flagged)
