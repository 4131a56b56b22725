"""Sessions: keyed streams that begin and end (an HDFS block, a request, a job, a pod).

Many incidents leave no unusual line behind: a step is missing, a workflow stops halfway. So a
session is judged as a whole. Its evidence is the largest margin of any of its lines over the
line threshold in force and, once it ends, the margin of its end: the surprise of the
end-of-session token where the session stopped (the model was trained to emit it after each
complete session, ``ModelCard.session_ends``) over the end threshold. The session alerts when its
evidence passes the session threshold, calibrated on held-out normal sessions
(``Calibration.session_threshold``). Session streams are judged by these thresholds; lines of
other streams by the adaptive per-source thresholds.

A session ends when it has been quiet for ``scoring.sessions.idle_s`` or a line matches
``scoring.sessions.end_pattern``; its window is freed at once. An improbable end is an
"abnormal end" when the session said it was done (end pattern), "stalled" when it went quiet.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from .card import Calibration
from .scorer import LineScore, LineScorer

UNUSUAL_LINE, ABNORMAL_END, STALLED = "unusual line", "abnormal end", "stalled"

# How a session model scores its lines (``Calibration.aggregate``): surprise beyond the model's own
# uncertainty, averaged over the line. In a session what matters is which step came next, decided
# by a token or two where the model was sure (``FSDataset: Deleting`` where ``FSNamesystem:
# ...delete`` was due); the line's other tokens are either certain once the step is known or
# variable values the model knows to be unpredictable, and the entropy takes those out. Chosen on
# the HDFS sessions' dev set among the four aggregates, which the evaluation reports side by side
# (``benchmarks/results/sessions.md``): mean surprise dilutes the one wrong step over the line.
SESSION_AGGREGATE = "excess"


def line_margin(calibration: Calibration, scored: LineScore) -> float:
    """A line's score over the calibrated line threshold of its stream's state (warming up or warm)."""
    return scored.score - (calibration.threshold if scored.warm else calibration.warmup_threshold)


@dataclass
class SessionEnd:
    """How a session ended, and whether that is the alert."""

    stream: str
    lines: int
    how: str  # "idle" or "end pattern"
    last: object  # what ``observe`` was given with the session's last line
    end_surprise: float  # -log p(end of session | the session), nats
    margin: float  # end_surprise over the end threshold
    threshold: float  # the session threshold in force
    evidence: float  # the session's largest margin: its lines' and its end's
    line_alerts: int  # lines of the session that alerted while it was open
    kind: str | None  # ABNORMAL_END or STALLED when the end alerts, else None
    expected: str | None = None  # what the model expected instead of the end, as text

    @property
    def anomaly(self) -> bool:
        return self.kind is not None


@dataclass
class _Open:
    lines: int = 0
    evidence: float = float("-inf")
    line_alerts: int = 0
    last_seen: float = 0.0
    last: object = None  # what the caller keeps of the session's last line (the worker: line and where)


@dataclass
class SessionTracker:
    """The open sessions of one scorer: what each has shown, when it was last heard from, and
    its end. ``observe`` judges each line of a session stream; ``due`` says which went quiet;
    ``end`` scores the end and frees the stream's window."""

    scorer: LineScorer
    idle_s: float
    end_pattern: re.Pattern | None = None
    clock: callable = time.monotonic
    open: OrderedDict[str, _Open] = field(default_factory=OrderedDict)  # least recently heard from first

    def __post_init__(self):
        card = self.scorer.card
        calibration = card.calibration
        if not card.session_ends or calibration is None or calibration.session_threshold is None:
            raise ValueError(f"model {card.model_version} was not trained on whole sessions: train it with "
                             "`logstream train --sessions --stream-key REGEX` to score how sessions end")
        self.calibration = calibration

    @property
    def threshold(self) -> float:
        return self.calibration.session_threshold

    def observe(self, scored: LineScore, last: object = None) -> bool:
        """Judge a scored line of a session stream and note it (``last``: anything to keep of it);
        True if it alerts (an unusual line)."""
        state = self.open.setdefault(scored.stream, _Open())
        self.open.move_to_end(scored.stream)
        state.last = last
        margin = line_margin(self.calibration, scored)
        state.lines += 1
        state.evidence = max(state.evidence, margin)
        state.last_seen = self.clock()
        alert = margin > self.threshold
        state.line_alerts += alert
        return alert

    def line_threshold(self, scored: LineScore) -> float:
        """The score above which this line alerts as a session's line."""
        return scored.score - line_margin(self.calibration, scored) + self.threshold

    def forget(self, stream: str) -> None:
        """Drop an open session without scoring its end (its partition moved to another worker)."""
        self.open.pop(stream, None)

    def ends(self, line: str) -> bool:
        return self.end_pattern is not None and self.end_pattern.search(line) is not None

    def due(self) -> list[str]:
        """Sessions quiet for at least ``idle_s``, longest quiet first."""
        now, quiet = self.clock(), []
        for stream, state in self.open.items():
            if now - state.last_seen < self.idle_s:
                break  # the rest were heard from later
            quiet.append(stream)
        return quiet

    def end(self, stream: str, how: str = "idle", explain: bool = True) -> SessionEnd:
        """Score the session's end, decide, free its window and state."""
        state = self.open.pop(stream, None) or _Open()
        surprise = self.scorer.end_surprise(stream)
        margin = surprise - self.calibration.end_threshold
        evidence = max(state.evidence, margin)
        kind = None
        if margin > self.threshold:
            kind = ABNORMAL_END if how == "end pattern" else STALLED
        expected = self.scorer.expected_line(stream) if kind is not None and explain else None
        self.scorer.forget(stream)
        return SessionEnd(stream=stream, lines=state.lines, how=how, last=state.last, end_surprise=surprise, margin=margin,
                          threshold=self.threshold, evidence=evidence, line_alerts=state.line_alerts,
                          kind=kind, expected=expected)


def describe_end(end: SessionEnd) -> str:
    """An abnormal end or a stall in words, for the alert's summary."""
    if end.kind == STALLED:
        what = f"went quiet after {end.lines} lines where the model expected it to go on"
    else:
        what = f"ended after {end.lines} lines (its end pattern) where the model did not expect an end"
    told = (f"; next it expected: {end.expected}" if end.expected else "")
    return (f"session {end.stream} {what} (surprise of the end {end.end_surprise:.1f} nats, "
            f"{end.margin:.1f} over the end threshold; session threshold {end.threshold:.1f}){told}")
