"""Learning each source online: which lines to learn from, when to fine-tune, and what a swap does.

``OnlineAdapter`` watches what the scorer scored. Per source it keeps the latest ``sample_lines``
lines that did not alert (the raw lines, with their stream), and decides when a fine-tuning round
is due: a source the model does not know well (its calibrated threshold does not hold there, see
``AdaptiveThresholds.calibration_holds``) gets a round after ``first_after_lines`` lines, the next
after twice as many more, and so on up to ``max_gap_lines``; a source the model knows needs none,
until it drifts.

A round trains on every source's kept lines (plus the model's replay sample, see
``pipelines.finetune``). When the new model is swapped in (``swap``): the shared sink prefix is
computed again with the new weights, every stream window restarts (they were computed by the old
weights), and each source's thresholds are re-learned from its latest ``relearn_lines`` kept lines,
scored again under their own streams, which also re-warms those windows. Marks of operator feedback
and what drain3 learned of each source's templates are kept.

The same adapter serves the worker (fine-tuning in a background process) and ``logstream score``
/ the benchmarks (fine-tuning in line, at the same points).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pipelines.corpus import Corpus

from ..config import AdaptSettings


NEARLY_DUE = 0.75  # a source this far to its next round joins a round another source asked for


@dataclass
class _Track:
    tail: deque  # (stream, line) of recent lines that did not alert
    lines: int = 0
    gap: int = 0
    next_round: int = 0
    rounds: int = 0


@dataclass
class Round:
    """A fine-tuning round: what to learn from, and which sources asked for it."""

    recent: Corpus
    sources: list[str]
    lines: int = field(init=False)

    def __post_init__(self):
        self.lines = self.recent.n_lines


class OnlineAdapter:
    def __init__(self, settings: AdaptSettings):
        self.settings = settings
        self.tracks: dict[str, _Track] = {}

    def observe(self, scorer, entries: list[tuple[str, str]], scored: list) -> None:
        """Take note of a scored batch: ``entries`` are the (stream, raw line) pairs ``scored`` came from."""
        for (stream, line), result in zip(entries, scored):
            source = scorer.source_of(stream, result.canonical)
            track = self.tracks.get(source)
            if track is None:
                first = self.settings.first_after_lines
                track = self.tracks[source] = _Track(deque(maxlen=self.settings.sample_lines), gap=first,
                                                     next_round=first)
            track.lines += 1
            if not result.is_anomaly:
                track.tail.append((stream, line))

    def learn_normal(self, source: str, stream: str, line: str) -> None:
        """A line an operator marked normal joins its source's sample for the next round."""
        track = self.tracks.get(source)
        if track is not None:
            track.tail.append((stream, line))

    def due(self, scorer) -> list[str]:
        """The sources that ask for a fine-tuning round now, with those nearly due (a round is shared:
        sources that start together are learned in one round, not in rounds back to back)."""
        calibrated = scorer.calibration.threshold if scorer.calibration else None

        def unfamiliar(source: str) -> bool:
            return scorer.adaptive is None or not scorer.adaptive.calibration_holds(source, calibrated)

        if not any(t.lines >= t.next_round and unfamiliar(s) for s, t in self.tracks.items()):
            return []
        return [s for s, t in self.tracks.items() if t.lines >= NEARLY_DUE * t.next_round and unfamiliar(s)]

    def plan(self, due: list[str]) -> Round:
        """The round for the sources that asked: every source's kept lines, grouped by stream, in order."""
        recent = Corpus()
        for track in self.tracks.values():
            for stream, line in track.tail:
                recent.add(stream, line)
        for source in due:
            track = self.tracks[source]
            track.rounds += 1
            track.gap = min(2 * track.gap, self.settings.max_gap_lines)
            track.next_round = track.lines + track.gap
        return Round(recent, list(due))

    def swap(self, scorer, model_dir):
        """A scorer on the new model, sharing the old one's reading, thresholds and marks; its sink is
        primed anew, its windows start empty, and each source's thresholds are re-learned."""
        new = scorer.with_model(model_dir)
        if new.adaptive is None:
            return new
        for source, track in self.tracks.items():
            kept = list(track.tail)[-self.settings.relearn_lines:]
            if not kept:
                continue
            with new.adaptive.rescoring(source):
                for at in range(0, len(kept), 64):
                    new.score(kept[at:at + 64])
        return new


class InlineAdaptation:
    """Fine-tuning in line, for ``logstream score --adapt`` and the benchmarks: when a round is due
    after a batch, train it now (in this process) and swap the new model in before the next batch.
    The worker runs the same rounds in a background process instead, so its swap lands a little
    later, after the lines that arrived meanwhile."""

    def __init__(self, settings, store, progress: bool = False):
        self.settings, self.store, self.progress = settings, store, progress
        self.adapter = OnlineAdapter(settings.adapt)
        self.rounds: list[dict] = []  # what each round did (for reports)
        self.seen = 0  # lines scored so far

    def after_batch(self, scorer, entries: list[tuple[str, str]], scored: list):
        """Returns the scorer to use next (a new one after a round)."""
        import time

        from pipelines.finetune import finetune

        self.adapter.observe(scorer, entries, scored)
        self.seen += len(entries)
        due = self.adapter.due(scorer)
        if not due:
            return scorer
        round_ = self.adapter.plan(due)
        started, cpu = time.perf_counter(), time.process_time()
        staged = self.store.root / "staging" / f"round-{len(self.rounds) + 1}"
        card = finetune(self.store.current(), round_.recent, staged, self.settings.adapt.finetune_config(),
                        pins=self.settings.parsing.pins(), progress=self.progress,
                        description={"sources": due})
        version = self.store.add(staged, reason=f"fine-tuned on {', '.join(due)}")
        trained = time.perf_counter() - started
        new = self.adapter.swap(scorer, self.store.current())
        self.rounds.append({"version": version, "sources": due, "lines": round_.lines, "after": self.seen,
                            "train_s": round(trained, 1), "swap_s": round(time.perf_counter() - started - trained, 1),
                            "cpu_s": round(time.process_time() - cpu, 1),
                            "loss": round(card.training["finetune"]["final_loss"], 3)})
        return new
