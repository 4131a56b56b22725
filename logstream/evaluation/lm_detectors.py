"""Language-model detectors for ``logstream eval``: the scorer and its two ablations.

* ``lm-stream``: the product. Each line scored by the streaming engine in the context of its own
  stream (shared sink prefix with the pattern preamble + the stream's last L tokens).
* ``lm-no-context``: the same model, each line scored alone after the sink prefix (no stream history).
* ``lm-window-no-sink``: the same model with a plain sliding window of the stream and no sink prefix.

One model is trained per split, on that split's normal training lines only (``pipelines.train``),
and shared by the detectors of that split; trained models are kept under a cache directory keyed by
the training data and settings, so a second run of the same evaluation does not retrain. With
``--model DIR`` the detectors score with that model instead (the shipped one, or one of yours).

The detectors read lines exactly as the service does: through the scorer, which reads each line's
canonical text (``logstream.canonical``; the spec's ``format`` or ``content`` pins it), so time
stamps, hosts, pids and label columns are left out, as for the template baseline.

Scores are put on one scale before the threshold: a line's raw score minus the threshold of its
state (stream warming up, or warm), each calibrated on the held-out normal lines; the detector then
alerts on that margin exceeding a threshold calibrated the same way (per group for group labels).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..canonical import Canonicalizer
from ..config import Settings
from ..scoring.aggregate import AGGREGATES
from ..scoring.calibration import calibrate_tail_threshold, calibrate_threshold
from ..scoring.scorer import LineScore, LineScorer, load_scorer
from .detector import LogEntry, calibration_scores

log = logging.getLogger(__name__)

MODES = ("stream", "no-context", "window-no-sink")
WARMUP_TOKENS = 256


def cache_root() -> Path:
    return Path(os.environ.get("LOGSTREAM_EVAL_CACHE", Path.home() / ".cache" / "logstream" / "eval-models"))


@dataclass
class SplitModel:
    """The model trained for one split, trained lazily once and shared by that split's detectors."""

    train_steps: int
    window: int = 2048
    seed: int = 0
    pins: tuple = ()  # how lines are read (the spec's format or content regex); () = detected per stream
    model_dir: Path | None = None  # set: score with this model, train none
    sessions: bool = False  # streams are whole sessions: train with session ends, score each end
    _scored: dict = field(default_factory=dict)  # (mode, id of entries) -> list[LineScore]
    _ends: dict = field(default_factory=dict)  # (mode, id of entries) -> {position of a session's last line: end surprise}

    def ensure_trained(self, train: list[LogEntry], calibration: list[LogEntry], rate: float) -> Path:
        if self.model_dir is not None:
            return self.model_dir
        from pipelines.corpus import Corpus
        from pipelines.default_model import DEFAULT_CONFIG
        from pipelines.train import train_pipeline

        cfg = DEFAULT_CONFIG.model_copy(update={"steps": self.train_steps, "seed": self.seed})
        digest = hashlib.sha256()
        for entry in [*train, None, *calibration]:
            digest.update(b"\x00" if entry is None else f"{entry.stream}\x01{entry.line}\n".encode())
        digest.update(json.dumps(cfg.model_dump(), sort_keys=True).encode())
        if self.sessions:  # session models are calibrated on their own aggregate
            from ..scoring.sessions import SESSION_AGGREGATE

            digest.update(f"sessions:{SESSION_AGGREGATE}".encode())
        digest.update(repr([(p.stream.pattern, getattr(p.parser, "pattern", getattr(p.parser, "name", None)))
                            for p in self.pins]).encode())
        out = cache_root() / digest.hexdigest()[:16]
        if not (out / "logstream.json").exists() or '"calibration": null' in (out / "logstream.json").read_text():
            log.info("training a model for this split in %s (%d lines, %d steps)", out, len(train), cfg.steps)
            train_pipeline(self._corpus(train, Corpus), out, cfg, calibration=self._corpus(calibration, Corpus),
                           target_false_alert_rate=rate, description={"evaluation": True}, pins=self.pins)
        self.model_dir = out
        return out

    def scores(self, mode: str, entries: list[LogEntry]) -> list[LineScore]:
        key = (mode, id(entries))
        if key not in self._scored:
            self._scored[key], self._ends[key] = score_entries(self.scorer(mode), mode, entries,
                                                               sessions=self.sessions)
        return self._scored[key]

    def ends(self, mode: str, entries: list[LogEntry]) -> dict[int, float]:
        """{position in entries of a session's last line: surprise of the session's end there}."""
        self.scores(mode, entries)
        return self._ends[(mode, id(entries))]

    def scorer(self, mode: str) -> LineScorer:
        # the service's cache (its storage dtype and pool), with the spec's window: scores as the worker's
        config = dataclasses.replace(Settings().cache.engine_config(), window=self.window)
        scorer = load_scorer(self.model_dir, device="cpu", dtype="float32", engine_config=config,
                             canonicalizer=Canonicalizer(self.pins))
        if mode == "window-no-sink":
            from ..cache.baselines import SlidingWindowScorer

            # The BOS opens each stream (it predicts the first token) and is evicted like any other
            # token once the window is full; no preamble.
            scorer.engine = SlidingWindowScorer(scorer.loaded.model, scorer.sink_tokens[:1], self.window)
        return scorer

    def _corpus(self, entries: list[LogEntry], corpus_cls):
        corpus = corpus_cls()
        for entry in entries:
            corpus.add(entry.stream, entry.line)
            if self.sessions:
                corpus.sessions.add(entry.stream)
        return corpus


def last_positions(entries: list[LogEntry]) -> dict[str, int]:
    """Each stream's last position in ``entries``: where its session ends (offline, the end is known;
    the service takes it when the stream goes quiet, which on a file of whole sessions is the same)."""
    return {e.stream: position for position, e in enumerate(entries)}


def score_entries(scorer: LineScorer, mode: str, entries: list[LogEntry], batch: int = 64,
                  sessions: bool = False) -> tuple[list[LineScore], dict[int, float]]:
    """Score entries in dataset order, ``batch`` at a time (streams interleave as they arrive).
    With ``sessions``, each stream's end is scored right after its last line and its window freed:
    returns the lines' scores and {position of a session's last line: end surprise}."""
    from tqdm.auto import tqdm

    out: list[LineScore] = []
    ends: dict[int, float] = {}
    last = last_positions(entries) if sessions and scorer.card.session_ends else {}
    for at in tqdm(range(0, len(entries), batch), desc=f"scoring ({mode})", unit="batch", leave=False):
        chunk = entries[at:at + batch]
        if mode == "no-context":  # every line a new stream of its own, forgotten after scoring
            keyed = [(f"line-{e.index}", e.line) for e in chunk]
            out += scorer.score(keyed)
            for stream, _ in keyed:
                scorer.forget(stream)
            continue
        out += scorer.score([(e.stream, e.line) for e in chunk])
        for position, entry in enumerate(chunk, start=at):
            if last.get(entry.stream) == position:
                if mode == "stream":  # the ablations' engines keep no next-token state: no end scores
                    ends[position] = scorer.end_surprise(entry.stream)
                scorer.forget(entry.stream)
    return out, ends


class LanguageModelDetector:
    """One LM detector: lines scored in a mode, aggregated one way; with ``ends`` (sessions), each
    session's last line also carries the margin of the session's end over its calibrated threshold,
    so a session's score is the max of its lines' and its end's."""

    def __init__(self, shared: SplitModel, mode: str = "stream", aggregate: str = "mean", ends: bool = False):
        if mode not in MODES or aggregate not in AGGREGATES:
            raise ValueError(f"mode must be one of {MODES} and aggregate one of {AGGREGATES}")
        self.shared, self.mode, self.aggregate, self.with_ends = shared, mode, aggregate, ends
        self.name = f"lm-{mode}" + ("" if aggregate == "mean" else f"-{aggregate}")
        if shared.sessions and mode == "stream":
            self.name += "" if ends else "-no-end"
        self.threshold = float("inf")
        self._state_thresholds = (0.0, 0.0)
        self._end_threshold = 0.0

    def _raw(self, scored: list[LineScore]) -> tuple[np.ndarray, np.ndarray]:
        raw = np.array([s.aggregates[self.aggregate] for s in scored], dtype=np.float64)
        warm = np.array([s.stream_position >= WARMUP_TOKENS for s in scored])
        return raw, warm

    def _margins(self, raw: np.ndarray, warm: np.ndarray) -> np.ndarray:
        warm_t, cold_t = self._state_thresholds
        return raw - np.where(warm, warm_t, cold_t)

    def fit(self, train: list[LogEntry], calibration: list[LogEntry], target_false_alert_rate: float) -> None:
        self.shared.ensure_trained(train, calibration, target_false_alert_rate)
        raw, warm = self._raw(self.shared.scores(self.mode, calibration))
        everything = raw
        warm_t = calibrate_threshold(raw[warm] if warm.sum() >= 20 else everything, target_false_alert_rate)
        cold_t = calibrate_threshold(raw[~warm] if (~warm).sum() >= 20 else everything, target_false_alert_rate)
        self._state_thresholds = (warm_t, cold_t)
        margins = self._margins(raw, warm)
        if self.with_ends:
            ends = self.shared.ends(self.mode, calibration)
            self._end_threshold = calibrate_threshold(list(ends.values()), target_false_alert_rate)
            margins = self._with_ends(margins, ends)
        # a few hundred held-out sessions cannot show a 0.1% rate: their tail is extrapolated
        calibrate = calibrate_tail_threshold if self.shared.sessions else calibrate_threshold
        self.threshold = calibrate(calibration_scores(calibration, margins), target_false_alert_rate)

    def _with_ends(self, margins: np.ndarray, ends: dict[int, float]) -> np.ndarray:
        margins = margins.copy()
        for position, surprise in ends.items():
            margins[position] = max(margins[position], surprise - self._end_threshold)
        return margins

    def score(self, entries: list[LogEntry]) -> np.ndarray:
        margins = self._margins(*self._raw(self.shared.scores(self.mode, entries)))
        return self._with_ends(margins, self.shared.ends(self.mode, entries)) if self.with_ends else margins


COLD_MARGIN = -1e6  # a line no threshold was in force for (a source's cold start) ranks below every other
ALERT_RANK = 1e6  # a line the service alerted on ranks above every line it did not


def live_margin(scored) -> float:
    """A line's rank under the service's decision, positive exactly where the service alerted: rules
    that alert whatever the score (a rare level, an unseen problem) alert below the score threshold
    in force, so the margin alone would not say where the service alerts."""
    if scored.is_anomaly:
        return ALERT_RANK + (scored.score - scored.threshold if scored.threshold is not None else 0.0)
    if scored.threshold is None:
        return COLD_MARGIN + scored.score
    return min(scored.score - scored.threshold, 0.0)


class LiveDetector:
    """``lm-live``: the service's own decision: thresholds adapting online (``scoring.adaptive``) and,
    with ``adapt.enabled``, rounds of continual fine-tuning where the worker would start them.

    The scorer first reads the split's normal training and calibration lines in order as a known-good
    baseline (``logstream score --normal``: each learned as normal, whatever it reads as), so windows
    and adaptive thresholds are warm, then the test part in order, still adapting: it learns from
    every test line it does not alert on, as the service does, never from a label. A line's score is
    its margin over the threshold in force, moved above every other line's where the service alerted
    (``live_margin``), so the harness's threshold of 0 alerts exactly where the service alerts; best
    F1 and the curves rank the margins.
    """

    def __init__(self, shared: SplitModel, settings):
        self.shared, self.settings = shared, settings
        self.name = "lm-live"
        self.threshold = 0.0
        self.rounds: list[dict] = []
        self.decisions: list = []
        self._history: list[LogEntry] = []

    def fit(self, train: list[LogEntry], calibration: list[LogEntry], target_false_alert_rate: float) -> None:
        self.shared.ensure_trained(train, calibration, target_false_alert_rate)
        self._history = sorted(train + calibration, key=lambda e: e.index)

    def score(self, entries: list[LogEntry]) -> np.ndarray:
        if self.shared.sessions:
            return self._score_sessions(entries)
        import tempfile

        from ..adapt.online import InlineAdaptation
        from ..adapt.store import ModelStore

        scorer = self.shared.scorer("stream")
        scorer.adaptive = self.settings.scoring.adaptive_thresholds()
        with tempfile.TemporaryDirectory(prefix="logstream-eval-adapt-") as store:
            adaptation = (InlineAdaptation(self.settings, ModelStore(store, self.shared.model_dir))
                          if self.settings.adapt.enabled and scorer.adaptive is not None else None)
            scorer, _ = self._replay(scorer, adaptation, self._history, "live (history)", known_normal=True)
            scorer, scored = self._replay(scorer, adaptation, entries, "live")
            self.rounds = adaptation.rounds if adaptation else []
        self.decisions = scored  # each test line's LineScore with its verdict (benchmarks/live_decisions.py)
        return np.array([live_margin(s) for s in scored], dtype=np.float64)

    def _score_sessions(self, entries: list[LogEntry], batch: int = 64) -> np.ndarray:
        """Sessions as the service judges them (``logstream.scoring.sessions``): each line's margin
        and, after a session's last line, its end's, over the card's session threshold; positive
        exactly where the service alerts."""
        from tqdm.auto import tqdm

        from ..scoring.sessions import SessionTracker, line_margin

        scorer = self.shared.scorer("stream")
        tracker = SessionTracker(scorer, idle_s=float("inf"))
        last = last_positions(entries)
        out = np.empty(len(entries), dtype=np.float64)
        for at in tqdm(range(0, len(entries), batch), desc="scoring (live sessions)", unit="batch", leave=False):
            chunk = entries[at:at + batch]
            for position, (entry, scored) in enumerate(zip(chunk, scorer.score([(e.stream, e.line) for e in chunk])),
                                                        start=at):
                tracker.observe(scored)
                out[position] = line_margin(tracker.calibration, scored) - tracker.threshold
            for position, entry in enumerate(chunk, start=at):
                if last[entry.stream] == position:
                    end = tracker.end(entry.stream, explain=False)
                    out[position] = max(out[position], end.margin - tracker.threshold)
        return out

    @staticmethod
    def _replay(scorer, adaptation, entries: list[LogEntry], what: str, batch: int = 64, known_normal: bool = False):
        from tqdm.auto import tqdm

        out = []
        for at in tqdm(range(0, len(entries), batch), desc=f"scoring ({what})", unit="batch", leave=False):
            pairs = [(e.stream, e.line) for e in entries[at:at + batch]]
            scored = scorer.score(pairs, known_normal)
            out += scored
            if adaptation is not None:
                scorer = adaptation.after_batch(scorer, pairs, scored)
        return scorer, out


def lm_detectors(spec, settings, args) -> list:
    """The LM detectors of one split, sharing one trained model."""
    model = getattr(args, "model", None)
    shared = SplitModel(train_steps=getattr(args, "lm_steps", None) or 300,
                        window=settings.cache.window_tokens if settings else 2048, pins=spec.pins(),
                        model_dir=Path(model) if model else None, sessions=spec.sessions)
    aggregates = getattr(args, "lm_aggregates", None) or list(AGGREGATES)
    detectors = [LanguageModelDetector(shared, "stream", agg, ends=spec.sessions) for agg in aggregates]
    if spec.sessions:  # the same scores without the ends: what the sessions' ends add
        detectors += [LanguageModelDetector(shared, "stream", agg) for agg in aggregates]
    detectors += [LanguageModelDetector(shared, mode, "mean") for mode in ("no-context", "window-no-sink")]
    settings = settings or Settings()
    if settings.scoring.adaptive.enabled or spec.sessions:  # sessions: the card's session thresholds
        detectors.insert(0, LiveDetector(shared, settings))
    return detectors
