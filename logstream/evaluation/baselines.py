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


START, END = "<start>", "<end>"


class NgramSessionDetector:
    """Sequence novelty: an n-gram of consecutive templates (drain3, as ``drain-novelty``) never seen
    in a normal training session, counting the session's start and, with ``ends``, its end; the
    strongest simple baseline on HDFS block sessions.

    Score of a line: 1.0 when the n-gram it closes was never seen, else the n-gram's conditional
    surprisal given its first n-1 templates, scaled into [0, 1) like ``drain-novelty``'s. A
    session's last line also carries the n-gram closed by its end. Alerts on any unseen n-gram.
    """

    def __init__(self, n: int = 2, ends: bool = True, pins: tuple = (), similarity: float = 0.4, depth: int = 4):
        self.n, self.ends = n, ends
        self.name = f"{n}-gram" + ("-with-end" if ends else "")
        self.canonicalizer = Canonicalizer(pins)
        self.similarity, self.depth = similarity, depth
        self.threshold = math.inf
        self.templates: Templates | None = None
        self.counts: dict[tuple, int] = {}
        self.contexts: dict[tuple, int] = {}

    def fit(self, train: list[LogEntry], calibration: list[LogEntry], target_false_alert_rate: float) -> None:
        self.templates = Templates(similarity=self.similarity, depth=self.depth).fit(
            self.canonicalizer.read(e.stream, e.line).text for e in train)
        for session in self._sessions(train).values():
            for gram in self._grams(session, ends=self.ends):
                self.counts[gram] = self.counts.get(gram, 0) + 1
                self.contexts[gram[:-1]] = self.contexts.get(gram[:-1], 0) + 1
        calibrated = calibrate_threshold(calibration_scores(calibration, self.score(calibration)),
                                         target_false_alert_rate)
        self.threshold = min(calibrated, NOVEL_BELOW)

    def score(self, entries: list[LogEntry]) -> np.ndarray:
        if self.templates is None:
            raise RuntimeError(f"{self.name}: fit before score")
        out = np.zeros(len(entries), dtype=np.float64)
        for session in self._sessions(entries, positions=True).values():
            positions = [p for p, _ in session]
            grams = self._grams([t for _, t in session], ends=self.ends)
            for position, gram in zip(positions, grams):
                out[position] = self._surprise(gram)
            if self.ends and len(grams) > len(positions):  # the end's n-gram, charged to the last line
                out[positions[-1]] = max(out[positions[-1]], self._surprise(grams[-1]))
        return out

    def _template(self, entry: LogEntry):
        match = self.templates.match(self.canonicalizer.read(entry.stream, entry.line).text)
        return match.template_id if match is not None else None  # None: a template never seen

    def _sessions(self, entries: list[LogEntry], positions: bool = False) -> dict[str, list]:
        sessions: dict[str, list] = {}
        for position, entry in enumerate(entries):
            template = self._template(entry)
            sessions.setdefault(entry.stream, []).append((position, template) if positions else template)
        return sessions

    def _grams(self, templates: list, ends: bool) -> list[tuple]:
        padded = [START] * (self.n - 1) + list(templates) + ([END] if ends else [])
        return [tuple(padded[i:i + self.n]) for i in range(len(padded) - self.n + 1)]

    def _surprise(self, gram: tuple) -> float:
        count = self.counts.get(gram, 0) if None not in gram else 0
        if count == 0:
            return NOVEL
        context = self.contexts[gram[:-1]]
        return math.log((context + 1) / count) / math.log(context + 2)
