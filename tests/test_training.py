"""The training pipeline end to end on a small real sample, and what its model does."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from logstream.cache import EngineConfig
from logstream.evaluation.metrics import roc_auc
from logstream.model import load_model
from logstream.scoring.calibration import calibrate_threshold
from logstream.scoring.card import ModelCard
from logstream.scoring.explain import Explainer
from logstream.scoring.scorer import load_scorer
from pipelines.corpus import Corpus, read_corpus
from pipelines.train import ExampleSampler, TrainConfig, new_model, train_model, train_pipeline
from pipelines.tokenizer import train_tokenizer

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs" / "loghub"
TINY = TrainConfig(vocab_size=512, hidden_size=64, layers=2, heads=2, kv_heads=1, intermediate_size=128,
                   context=128, batch_size=4, steps=80, learning_rate=5e-3, warmup_steps=8,
                   preamble_templates=4, preamble_max_tokens=64, checkpoint_every=1000)


@pytest.fixture(scope="module")
def ssh_corpus() -> Corpus:
    # OpenSSH lines keyed by sshd process id: one stream per session, like a service would key them.
    return read_corpus([str(SAMPLES / "OpenSSH" / "OpenSSH_2k.log")], stream_key=r"sshd\[(\d+)\]")


def shuffled_streams(corpus: Corpus) -> list[str]:
    """Sessions in a fixed random order: train, calibration and test parts are then exchangeable
    (in name order, later process ids are later sessions, and the sample drifts over time)."""
    streams = sorted(corpus.streams)
    random.Random(1).shuffle(streams)
    return streams


@pytest.fixture(scope="module")
def trained(tmp_path_factory, ssh_corpus) -> Path:
    streams = shuffled_streams(ssh_corpus)
    train = Corpus({s: ssh_corpus.streams[s] for s in streams[: int(len(streams) * 0.7)]})
    calibration = Corpus({s: ssh_corpus.streams[s] for s in streams[int(len(streams) * 0.7): int(len(streams) * 0.85)]})
    out = tmp_path_factory.mktemp("model")
    train_pipeline(train, out, TINY, calibration=calibration, target_false_alert_rate=0.05, progress=False)
    return out


def held_out_streams(corpus: Corpus) -> dict[str, list[str]]:
    streams = shuffled_streams(corpus)
    return {s: corpus.streams[s] for s in streams[int(len(streams) * 0.85):]}


def test_pipeline_writes_a_loadable_hugging_face_directory(trained):
    names = {p.name for p in trained.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "logstream.json"} <= names
    assert not any(n.endswith((".bin", ".pt", ".pth")) for n in names)
    assert "checkpoint" not in names  # removed once the model is complete
    loaded = load_model(trained, device="cpu", dtype="float32")
    card = ModelCard.load(trained)
    assert card.calibration is not None and card.calibration.calibration_lines + card.calibration.calibration_warmup_lines > 0
    assert card.preamble and all("\n" not in line for line in card.preamble)
    assert card.training["steps"] == TINY.steps
    assert loaded.model.args.n_layers == TINY.layers
    # Loss fell: the model learned the logs.
    assert card.training["final_loss"] < 3.0


def test_injected_anomalies_score_higher_than_normal_lines(trained, ssh_corpus):
    scorer = load_scorer(trained, device="cpu", dtype="float32", engine_config=EngineConfig(window=512, slots=8))
    rng = random.Random(0)
    foreign = (SAMPLES / "Android" / "Android_2k.log").read_text().splitlines()
    normal_scores, anomaly_scores = [], []
    for stream, lines in list(held_out_streams(ssh_corpus).items())[:30]:
        for i, line in enumerate(lines):
            normal_scores.append(scorer.score([(stream, line)])[0].score)
            if i == len(lines) // 2:  # a line from another system, in the middle of an ssh session
                anomaly_scores.append(scorer.score([(stream, rng.choice(foreign))])[0].score)
    scores = np.array(normal_scores + anomaly_scores)
    labels = np.array([0] * len(normal_scores) + [1] * len(anomaly_scores))
    assert np.mean(anomaly_scores) > np.mean(normal_scores) + 1.0
    assert roc_auc(scores, labels) > 0.9


def test_calibrated_threshold_meets_the_false_alert_target(trained, ssh_corpus):
    card = ModelCard.load(trained)
    scorer = load_scorer(trained, device="cpu", dtype="float32", engine_config=EngineConfig(window=512, slots=8))
    alerts = total = 0
    for stream, lines in held_out_streams(ssh_corpus).items():
        for scored in scorer.score([(stream, line) for line in lines]):
            total += 1
            alerts += scored.is_anomaly
    # Calibrated for 5% on other held-out streams; fresh normal streams stay near it.
    assert card.calibration.target_false_alert_rate == 0.05
    assert alerts / total <= 0.12, f"{alerts} false alerts in {total} normal lines"


def test_threshold_calibration_on_held_out_scores():
    rng = np.random.default_rng(0)
    calibration, fresh = rng.gamma(2.0, 1.0, 5000), rng.gamma(2.0, 1.0, 50_000)
    for rate in (0.001, 0.01, 0.1):
        threshold = calibrate_threshold(calibration, rate)
        assert (calibration > threshold).mean() <= rate
        assert (fresh > threshold).mean() < rate * 1.6 + 0.0005


def test_explanation_names_surprising_tokens_and_nearest_template(trained):
    scorer = load_scorer(trained, device="cpu", dtype="float32", engine_config=EngineConfig(window=512, slots=4))
    line = "Dec 10 07:07:38 LabSZ sshd[24206]: Failed password for invalid user admin from 1.2.3.4 port 5 ssh2"
    scored = scorer.score([("s", line)])[0]
    explanation = Explainer(scorer).explain(scored)
    assert 0 < len(explanation.surprising_tokens) <= 5
    worst = min(float(x) for x in scored.logprobs)
    # words: the most surprising one holds at least the most surprising token's surprise
    assert min(t.logprob for t in explanation.surprising_tokens) <= worst + 1e-3
    assert all(" " not in t.text for t in explanation.surprising_tokens)
    assert 0 < sum(t.share for t in explanation.surprising_tokens) <= 1 + 1e-6
    assert explanation.nearest_template is not None and "Failed password" in explanation.nearest_template
    assert 0 < explanation.template_similarity <= 1
    assert "most surprising" in explanation.summary


def test_training_is_deterministic_and_resumes_exactly(tmp_path, ssh_corpus):
    lines = list(ssh_corpus.lines())[:400]
    tokenizer = train_tokenizer(lines, 300)
    streams = [[tokenizer(line + "\n", add_special_tokens=False).input_ids for line in lines]]
    cfg = TINY.model_copy(update={"steps": 8, "checkpoint_every": 4, "context": 64, "batch_size": 2})
    sampler = ExampleSampler(streams, [tokenizer.bos_token_id], cfg.context, tokenizer.pad_token_id)

    straight = new_model(cfg, tokenizer, 256)
    train_model(straight, sampler, cfg, None, progress=False)

    resumed = new_model(cfg, tokenizer, 256)
    train_model(resumed, sampler, cfg, tmp_path / "ckpt", progress=False, stop_at_step=4)
    assert json.loads((tmp_path / "ckpt" / "state.json").read_text())["step"] == 4
    fresh_process_model = new_model(cfg, tokenizer, 256)  # as if the process had died after step 4
    train_model(fresh_process_model, sampler, cfg, tmp_path / "ckpt", progress=False)
    for (name, a), (_, b) in zip(straight.state_dict().items(), fresh_process_model.state_dict().items()):
        assert torch.allclose(a, b, atol=1e-6), name


def test_empty_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no training lines"):
        train_pipeline(Corpus({"a": []}), tmp_path, TINY, calibration=Corpus({"b": ["x"]}), progress=False)
