"""Baselines that need no language model."""

from __future__ import annotations

import math

import numpy as np

from logstream.canonical import Canonicalizer
from logstream.templates import Templates

from .detector import LogEntry, calibrate_threshold, calibration_scores


NOVEL = 1.0
NOVEL_BELOW = float(np.nextafter(NOVEL, 0.0))  # the highest threshold at which novel lines still alert


class DrainNoveltyDetector:
    """Template novelty and rarity with drain3 (logstream's masks), fitted on normal lines.

    Score of a line:
      * 1.0 when its template was never seen in training (drain3 matches no known cluster);
      * otherwise the template's training surprisal, ``log(total / count) / log(total + 1)``, in [0, 1):
        0 for a template that is every training line, just under 1 for one seen once.

    The denominator is the surprisal a never-seen template would have with add-one smoothing
    (probability ``1 / (total + 1)``), so novel lines sit exactly at 1, above every seen template,
    and among seen ones a rare template outranks a common one on a log scale, the way a
    likelihood scorer would rank them. The threshold is calibrated on held-out normal lines, and
    kept just below 1: this detector's operating point is "alert on every template never seen",
    which a calibration slice holding one novel normal line would otherwise switch off for good
    (alerts need a score above the threshold, and no score is above 1).

    Lines are mined in their canonical reading (``logstream.canonical``, the spec's ``pins``), the
    text the language model reads too: mined whole, a BGL line's eight header fields (times, node
    names) make drain3 file most messages under a few header-shaped clusters.
    """

    def __init__(self, name: str = "drain-novelty", pins: tuple = (), similarity: float = 0.4, depth: int = 4):
        self.name = name
        self.canonicalizer = Canonicalizer(pins)
        self.similarity = similarity
        self.depth = depth
        self.threshold = math.inf
        self.templates: Templates | None = None

    def fit(self, train: list[LogEntry], calibration: list[LogEntry], target_false_alert_rate: float) -> None:
        self.templates = Templates(similarity=self.similarity, depth=self.depth).fit(
            self._content(e) for e in train)
        self._total = sum(self.templates.counts.values())
        scores = self.score(calibration)
        calibrated = calibrate_threshold(calibration_scores(calibration, scores), target_false_alert_rate)
        self.threshold = min(calibrated, NOVEL_BELOW)

    def score(self, entries: list[LogEntry]) -> np.ndarray:
        if self.templates is None:
            raise RuntimeError(f"{self.name}: fit before score")
        return np.fromiter((self._score_entry(e) for e in entries), dtype=np.float64, count=len(entries))

    def _content(self, entry: LogEntry) -> str:
        return self.canonicalizer.read(entry.stream, entry.line).text

    def _score_entry(self, entry: LogEntry) -> float:
        match = self.templates.match(self._content(entry))
        if match is None:
            return NOVEL
        count = self.templates.counts.get(match.template_id, 0)
        if count == 0:  # a cluster without training lines cannot happen after fit; treat it as novel
            return NOVEL
        return math.log(self._total / count) / math.log(self._total + 1)
