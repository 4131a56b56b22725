"""Calibrate a trained model's thresholds on held-out normal streams, through the real engine.

Every held-out stream is replayed in order through the streaming engine, as the service would.
Lines scored while their stream had seen fewer than ``warmup_tokens`` tokens get their own
threshold: a stream that has just started has less context, so its normal lines score higher.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tqdm.auto import tqdm

from logstream.config import Settings
from logstream.canonical import Canonicalizer, Pin
from logstream.scoring.calibration import calibrate_tail_threshold, calibrate_threshold
from logstream.scoring.card import Calibration
from logstream.scoring.scorer import load_scorer

from .corpus import Corpus


def replay_scores(scorer, corpus: Corpus, batch_streams: int = 16, progress: bool = True,
                  ends: dict[str, float] | None = None):
    """Yield (stream, line, LineScore) for every line of every stream, in order within each stream.

    Streams are interleaved: one line from each of up to ``batch_streams`` streams per forward pass.
    ``ends``: filled with the end surprise of every whole session (``Corpus.sessions``) as it ends.
    """
    streams = list(corpus.streams.items())
    bar = tqdm(total=corpus.n_lines, desc="scoring", unit="line", disable=not progress, leave=False)
    for at in range(0, len(streams), batch_streams):
        group = streams[at:at + batch_streams]
        for i in range(max(len(lines) for _, lines in group)):
            batch = [(name, lines[i]) for name, lines in group if i < len(lines)]
            for (name, line), scored in zip(batch, scorer.score(batch)):
                yield name, line, scored
            bar.update(len(batch))
        for name, _ in group:  # the service forgets ended streams too
            if ends is not None and name in corpus.sessions:
                ends[name] = scorer.end_surprise(name)
            scorer.forget(name)
    bar.close()


def calibrate(model_dir: str | Path, held_out: Corpus, target_false_alert_rate: float,
              aggregate: str = "mean", warmup_tokens: int = 256, window: int = 2048,
              progress: bool = True, pins: tuple[Pin, ...] = ()) -> Calibration:
    if held_out.n_lines == 0:
        raise ValueError("no held-out normal lines to calibrate thresholds on")
    # the service's cache (its storage dtype: the thresholds are set on the scores the worker computes)
    engine_config = dataclasses.replace(Settings().cache.engine_config(), window=window)
    scorer = load_scorer(model_dir, device="cpu", dtype="float32", engine_config=engine_config,
                         aggregate_name=aggregate, canonicalizer=Canonicalizer(pins))
    warm, cold = [], []
    ends: dict[str, float] = {}
    session_lines: dict[str, list[tuple[float, bool]]] = {}
    for stream, _, scored in replay_scores(scorer, held_out, progress=progress,
                                           ends=ends if scorer.card.session_ends else None):
        is_warm = scored.stream_position >= warmup_tokens
        (warm if is_warm else cold).append(scored.score)
        if stream in held_out.sessions:
            session_lines.setdefault(stream, []).append((scored.score, is_warm))
    everything = warm + cold
    calibration = Calibration(
        aggregate=aggregate,
        threshold=calibrate_threshold(warm or everything, target_false_alert_rate),
        warmup_threshold=calibrate_threshold(cold or everything, target_false_alert_rate),
        warmup_tokens=warmup_tokens,
        target_false_alert_rate=target_false_alert_rate,
        calibration_lines=len(warm),
        calibration_warmup_lines=len(cold),
        end_threshold=calibrate_threshold(list(ends.values()), target_false_alert_rate) if ends else None,
        calibration_sessions=len(ends),
    )
    if ends:
        calibration.session_threshold = calibrate_tail_threshold(
            [session_evidence(calibration, session_lines.get(s, []), end) for s, end in ends.items()],
            target_false_alert_rate)
    return calibration


def session_evidence(calibration: Calibration, lines: list[tuple[float, bool]], end_surprise: float) -> float:
    """A session's largest margin: of its lines (score, warm) over their thresholds, and of its end
    (``logstream.scoring.sessions``)."""
    margins = [score - (calibration.threshold if warm else calibration.warmup_threshold) for score, warm in lines]
    return max(margins + [end_surprise - calibration.end_threshold])


def recalibrate(model_dir: str | Path, held_out: Corpus, target_false_alert_rate: float,
                aggregate: str = "mean", progress: bool = True, source: str | None = None,
                pins: tuple[Pin, ...] = ()):
    """Recompute a model's thresholds on new normal logs and write them into its logstream.json."""
    from logstream.scoring.card import ModelCard

    card = ModelCard.load(model_dir)
    card.calibration = calibrate(model_dir, held_out, target_false_alert_rate, aggregate=aggregate,
                                 progress=progress, pins=pins)
    card.training["calibrated_on"] = source
    card.save(model_dir)
    return card
