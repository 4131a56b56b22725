"""What a detector is to the evaluation harness: entries in, one anomaly score per entry out.

A detector is fitted on normal entries only (the protocol never shows it a labeled anomaly), then
sets its own alert threshold on held-out normal entries so that at most the target share of them
would alert. The harness alerts on ``score > threshold``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..scoring.calibration import calibrate_threshold

__all__ = ["LogEntry", "Detector", "calibrate_threshold", "calibration_scores"]


@dataclass(frozen=True)
class LogEntry:
    index: int          # position in the dataset, in stream/time order (extra training lines: -M..-1)
    stream: str         # stream id (e.g. block id for HDFS, or a constant / host for BGL)
    line: str           # the raw log line (label column stripped where the label is inside the line)
    label: int          # 1 anomalous, 0 normal (for group-level labels: the group's label)
    group: str | None   # the group key (e.g. HDFS block id) when labels are group-level


@runtime_checkable
class Detector(Protocol):
    name: str
    threshold: float

    def fit(self, train: list[LogEntry], calibration: list[LogEntry], target_false_alert_rate: float) -> None:
        """Learn from ``train`` (normal entries only), then set ``self.threshold`` from ``calibration``."""
        ...

    def score(self, entries: list[LogEntry]) -> np.ndarray:
        """One score per entry, higher = more anomalous; entries come in order."""
        ...


def calibration_scores(entries: Sequence[LogEntry], scores: np.ndarray) -> np.ndarray:
    """The normal scores a threshold should be calibrated on: per group (max) when entries carry a
    group, since a group alerts once when any of its lines does; per line otherwise."""
    scores = np.asarray(scores, dtype=np.float64)
    if not entries or entries[0].group is None:
        return scores
    best: dict[str, float] = {}
    for entry, value in zip(entries, scores):
        best[entry.group] = max(best.get(entry.group, -np.inf), float(value))
    return np.fromiter(best.values(), dtype=np.float64, count=len(best))
