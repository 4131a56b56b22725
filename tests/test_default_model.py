"""The shipped default model, through the scorer: batching, warm-up thresholds, explanations."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from logstream.cache import EngineConfig
from logstream.config import DEFAULT_MODEL_DIR
from logstream.scoring.card import ModelCard
from logstream.scoring.scorer import load_scorer

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


@pytest.fixture(scope="module")
def scorer():
    return load_scorer(DEFAULT_MODEL_DIR, device="cpu", dtype="float32",
                       engine_config=EngineConfig(window=256, slots=8))


def test_default_model_is_complete_and_calibrated():
    card = ModelCard.load(DEFAULT_MODEL_DIR)
    assert card.calibration is not None and card.calibration.target_false_alert_rate == 1e-3
    assert card.model_version.startswith("logstream-lm-") and card.preamble


def test_many_lines_of_a_stream_in_one_batch_score_as_one_at_a_time(scorer):
    lines = (SAMPLES / "loghub" / "Zookeeper" / "Zookeeper_2k.log").read_text().splitlines()[:40]
    other = (SAMPLES / "loghub" / "Apache" / "Apache_2k.log").read_text().splitlines()[:40]
    batched = scorer.score([(s, l) for pair in zip(lines, other) for s, l in zip(("zk-a", "web-a"), pair)])
    one_by_one = [scorer.score([(s, l)])[0] for pair in zip(lines, other) for s, l in zip(("zk-b", "web-b"), pair)]
    assert len(batched) == len(one_by_one) == 80
    for x, y in zip(batched, one_by_one):
        assert x.token_ids == y.token_ids and x.stream_position == y.stream_position
        assert torch.allclose(x.logprobs, y.logprobs, atol=1e-4)
        assert x.score == pytest.approx(y.score, abs=1e-4)


def test_a_foreign_line_in_a_known_stream_stands_out(scorer):
    hdfs = (SAMPLES / "hdfs" / "HDFS_5k.log").read_text().splitlines()[:120]
    normal = [r.score for r in scorer.score([("dn", line) for line in hdfs])]
    odd = scorer.score([("dn", "kernel: Out of memory: Kill process 4242 (java) score 987 or sacrifice child")])[0]
    assert odd.score > max(normal[40:])  # against warm lines of the same stream
    assert odd.warm and odd.threshold == ModelCard.load(DEFAULT_MODEL_DIR).calibration.threshold


def test_first_lines_of_a_stream_use_the_warm_up_threshold(scorer):
    card = ModelCard.load(DEFAULT_MODEL_DIR)
    first = scorer.score([("fresh-stream", "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 1.2.3.4")])[0]
    assert first.stream_position == 0 and not first.warm
    assert first.threshold == card.calibration.warmup_threshold


def test_the_same_normal_lines_score_the_same_in_every_month_year_and_time_zone(scorer):
    """The shipped model reads canonical text: the calendar cannot move a score (it flagged lines by
    their month when it read whole lines)."""
    from test_canonical import _normal_lines, _variants

    reference = None
    for name, start, with_year in _variants():
        lines = _normal_lines(start, 48, with_year)
        scores = [s.score for s in scorer.score([(f"{name}/{stream}", line) for stream, line in lines])]
        if reference is None:
            reference = scores
        assert scores == pytest.approx(reference, abs=1e-5), name


def test_a_batch_is_tokenized_as_each_line_alone(scorer):
    """encode_many's one call of the Rust tokenizer gives each line the ids transformers gives it."""
    lines = [line for path in sorted(SAMPLES.rglob("*.log")) for line in path.read_text().splitlines()[:40]]
    lines += ["", "  spaces  ", "ünïcödé ✓ \t tab", "<N6> looks masked already"]
    encoded = scorer.encode_many([(f"s{i % 3}", line) for i, line in enumerate(lines)])
    assert len(encoded) == len(lines) > 40
    for (_, _, masked, ids) in encoded:
        assert ids == scorer.tokenizer(masked + "\n", add_special_tokens=False).input_ids


def test_one_huge_line_cannot_wipe_a_streams_context():
    """A line is read for at most max_line_tokens tokens (its head and its end): a 4 KB hostile line
    no longer fills the window, so the normal lines after it keep most of their context."""
    lines = (SAMPLES / "loghub" / "OpenSSH" / "OpenSSH_2k.log").read_text().splitlines()
    hostile = f'Dec 10 09:32:20 LabSZ sshd[24680]: Bad protocol version identification "{"a" * 4000}" from 1.2.3.4'
    elevation = {}
    for cap in (512, 1_000_000):
        scorer = load_scorer(DEFAULT_MODEL_DIR, device="cpu", dtype="float32",
                             engine_config=EngineConfig(window=1024, slots=4), max_line_tokens=cap)
        full = scorer.tokenizer(scorer.encode("x", hostile)[1] + "\n", add_special_tokens=False).input_ids
        ids = scorer.encode("x", hostile)[2]
        assert len(ids) == min(cap, len(full)) and ids[-1] == full[-1] and ids[:-1] == full[:len(ids) - 1]
        for stream in ("hit", "calm"):
            scorer.score([(stream, line) for line in lines[:120]])
        scorer.score([("hit", hostile)])
        after = {s: [x.score for x in scorer.score([(s, line) for line in lines[120:135]])] for s in ("hit", "calm")}
        elevation[cap] = (sum(after["hit"]) - sum(after["calm"])) / 15
    assert len(full) > 1024  # uncapped, the line alone is more than the window
    assert elevation[512] < 0.5 * elevation[1_000_000], elevation
