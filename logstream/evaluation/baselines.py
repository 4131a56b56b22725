"""Baselines that need no language model."""

from __future__ import annotations

import math
import re

import numpy as np

from logstream.templates import Templates

from .detector import LogEntry, calibrate_threshold, calibration_scores


class DrainNoveltyDetector:
    """Template novelty and rarity with drain3 (logstream's masks), fitted on normal lines.

    Score of a line:
      * 1.0 when its template was never seen in training (drain3 matches no known cluster);
      * otherwise the template's training surprisal, ``log(total / count) / log(total + 1)``, in [0, 1):
        0 for a template that is every training line, just under 1 for one seen once.

    The denominator is the surprisal a never-seen template would have with add-one smoothing
    (probability ``1 / (total + 1)``), so novel lines sit exactly at 1, above every seen template,
    and among seen ones a rare template outranks a common one on a log scale, the way a
    likelihood scorer would rank them. The threshold is calibrated on held-out normal lines.

    ``content_pattern`` (a regex with a named group ``content``) picks the message out of each line,
    as Loghub's parsers do: mined whole, a BGL line's eight header fields (times, node names) make
    drain3 file most messages under a few header-shaped clusters. Lines it does not match are
    mined whole.
    """

    def __init__(self, name: str = "drain-novelty", content_pattern: str | None = None,
                 similarity: float = 0.4, depth: int = 4):
        self.name = name
        self.content_pattern = re.compile(content_pattern) if content_pattern else None
        self.similarity = similarity
        self.depth = depth
        self.threshold = math.inf
        self.templates: Templates | None = None

    def fit(self, train: list[LogEntry], calibration: list[LogEntry], target_false_alert_rate: float) -> None:
        self.templates = Templates(similarity=self.similarity, depth=self.depth).fit(
            self._content(e.line) for e in train)
        self._total = sum(self.templates.counts.values())
        scores = self.score(calibration)
        self.threshold = calibrate_threshold(calibration_scores(calibration, scores), target_false_alert_rate)

    def score(self, entries: list[LogEntry]) -> np.ndarray:
        if self.templates is None:
            raise RuntimeError(f"{self.name}: fit before score")
        return np.fromiter((self._score_line(e.line) for e in entries), dtype=np.float64, count=len(entries))

    def _content(self, line: str) -> str:
        match = self.content_pattern.match(line) if self.content_pattern else None
        return match.group("content") if match else line

    def _score_line(self, line: str) -> float:
        match = self.templates.match(self._content(line))
        if match is None:
            return 1.0
        count = self.templates.counts.get(match.template_id, 0)
        if count == 0:  # a cluster without training lines cannot happen after fit; treat it as novel
            return 1.0
        return math.log(self._total / count) / math.log(self._total + 1)
