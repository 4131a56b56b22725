"""Learning each source online: which lines to learn from, when to fine-tune, and what a swap does.

``OnlineAdapter`` watches what the scorer scored. Per source it keeps the latest ``sample_lines``
lines that did not alert (the raw lines, with their stream), and decides when a fine-tuning round
is due: a source the model does not know well (its calibrated threshold does not hold there, see
``AdaptiveThresholds.calibration_holds``) gets a round after ``first_after_lines`` lines, the next
after twice as many more, and so on up to ``max_gap_lines``; a source the model knows needs none,
until it drifts.

A round trains on every source's kept lines (plus the model's replay sample, see
``pipelines.finetune``). When the new model is swapped in: the shared sink prefix is computed again
with the new weights, every stream window restarts (they were computed by the old weights), and
each source's thresholds are re-learned from its latest ``relearn_lines`` kept lines, scored again
under their own streams, which also re-warms those windows. Marks of operator feedback and what
drain3 learned of each source's templates are kept.

A swap has three steps so that the worker never stops scoring for one (measured: 3.4-3.8 s stalls
when it did it all on the scoring thread): ``relearn_plan`` takes what to score again (the kept
lines as they were read and encoded, on the scoring thread, at once), ``prepare`` loads the new
model, primes its sink and scores those lines in its own engine (any thread: it touches nothing
the serving scorer uses), and ``apply`` judges the new scores into the thresholds (on the scoring
thread; the worker does it in steps of 64 lines between batches, ``relearning``). Lines scored by the old model while ``prepare`` ran are not in the new
windows; their streams' windows start from the kept lines instead.

The same adapter serves the worker (fine-tuning in a background process) and ``logstream score``
/ the benchmarks (fine-tuning in line, at the same points).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from pipelines.corpus import Corpus

from ..config import AdaptSettings

log = logging.getLogger("logstream.adapt")

NEARLY_DUE = 0.75  # a source this far to its next round joins a round another source asked for


@dataclass
class _Track:
    tail: deque  # (stream, line) of recent lines that did not alert
    encoded: deque  # the latest relearn_lines of them as read: (stream, canonical, masked, token ids)
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
                track = self.tracks[source] = _Track(deque(maxlen=self.settings.sample_lines),
                                                     deque(maxlen=self.settings.relearn_lines), gap=first,
                                                     next_round=first)
            track.lines += 1
            # an alert, or a line of the alert before it (``Verdict.incident``), is no normal line
            if (result.verdict.learnable() if result.verdict is not None else not result.is_anomaly):
                track.tail.append((stream, line))
                track.encoded.append((stream, result.canonical, result.masked, result.token_ids))

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

    def relearn_plan(self) -> dict[str, list[tuple]]:
        """What a swap scores again, per source: its latest kept lines as they were read (cheap: call
        it on the scoring thread, right before ``prepare``)."""
        return {source: list(track.encoded) for source, track in self.tracks.items() if track.encoded}

    def prepare(self, scorer, model_dir, plan: dict[str, list[tuple]]) -> PreparedSwap:
        """A scorer on the new model (sharing the old one's reading, thresholds and marks, its sink
        primed anew, its windows empty) with the plan's lines scored in it; safe on another thread
        while ``scorer`` serves, as it only reads what the two share."""
        new = scorer.with_model(model_dir)
        if new.adaptive is None:
            return PreparedSwap(new, {})
        if (new.card.masks, new.card.reads, len(new.tokenizer)) != (scorer.card.masks, scorer.card.reads,
                                                                    len(scorer.tokenizer)):
            log.warning("model %s reads lines unlike %s: thresholds are not re-learned at this swap (the old "
                        "model's scores stay the bar until the new one's replace them)", new.model_version,
                        scorer.model_version)
            return PreparedSwap(new, {})
        rescored = {source: [s for at in range(0, len(kept), 64) for s in new.model_scores(kept[at:at + 64])]
                    for source, kept in plan.items()}
        return PreparedSwap(new, rescored)

    def apply(self, prepared: PreparedSwap):
        """Judge the prepared scores into each source's thresholds; the scorer to serve from now on."""
        for _ in self.relearning(prepared):
            pass
        return prepared.scorer

    @staticmethod
    def relearning(prepared: PreparedSwap, lines_per_step: int = 64):
        """``apply`` in steps of at most ``lines_per_step`` lines, so that the worker can serve with the
        new scorer at once and re-learn between batches (milliseconds each, not a pause of hundreds):
        until a source's step comes, the old model's scores in its histories are its bar, as they
        are for templates the kept lines do not reach."""
        new = prepared.scorer
        for source, scores in prepared.rescored.items():
            for at in range(0, len(scores), lines_per_step):
                step = scores[at:at + lines_per_step]
                # a line's source is its stream's format now: a stream whose format was pinned after its first
                # lines re-learns them into the pinned format's source, which must not count them as new lines
                with new.adaptive.rescoring(*{source, *(new.source_of(s.stream, s.canonical) for s in step)}):
                    new.judge(step)
                yield source

    def swap(self, scorer, model_dir):
        """The three steps at once (``logstream score --adapt`` and the benchmarks, between batches)."""
        return self.apply(self.prepare(scorer, model_dir, self.relearn_plan()))


@dataclass
class PreparedSwap:
    scorer: object  # LineScorer on the new model
    rescored: dict[str, list]  # source -> LineScore of its kept lines under the new model, not yet judged


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
