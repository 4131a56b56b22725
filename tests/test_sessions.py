"""Sessions: a model trained on whole HDFS block lifecycles learns where they end, the end is scored
exactly, calibrated, judged by the tracker the worker uses, and evaluated against the baselines."""

from __future__ import annotations

import csv
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from logstream.cache import EngineConfig
from logstream.evaluation.baselines import NgramSessionDetector
from logstream.evaluation.detector import LogEntry
from logstream.evaluation.metrics import (best_weighted_f1, compute_metrics, fp_weight,
                                          recall_at_false_positive_rate, roc_auc,
                                          weighted_precision_recall_f1)
from logstream.model import load_model
from logstream.scoring.calibration import calibrate_tail_threshold, calibrate_threshold
from logstream.scoring.card import ModelCard
from logstream.scoring.scorer import load_scorer
from logstream.scoring.sessions import STALLED, SessionTracker
from pipelines.corpus import Corpus, read_corpus
from pipelines.train import ExampleSampler, TrainConfig, encode_streams, train_pipeline

SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "data" / "hdfs_sessions"
BLOCK = r"blk_-?\d+"
TINY = TrainConfig(vocab_size=512, hidden_size=64, layers=2, heads=2, kv_heads=1, intermediate_size=128,
                   context=320, batch_size=8, steps=150, learning_rate=5e-3, warmup_steps=10,
                   preamble_templates=4, preamble_max_tokens=64, checkpoint_every=1000)


def hdfs_sessions() -> Corpus:
    if not (SESSIONS / "train_normal.log").is_file():
        pytest.skip(f"{SESSIONS} is missing (the shared data beside the repository)")
    return read_corpus([str(SESSIONS / "train_normal.log")], stream_key=BLOCK, sessions=True)


@pytest.fixture(scope="module")
def sessions() -> Corpus:
    return hdfs_sessions()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, sessions) -> Path:
    names = list(sessions.streams)
    train = Corpus({s: sessions.streams[s] for s in names[:400]}, set(names[:400]))
    calibration = Corpus({s: sessions.streams[s] for s in names[400:500]}, set(names[400:500]))
    out = tmp_path_factory.mktemp("session-model")
    train_pipeline(train, out, TINY, calibration=calibration, target_false_alert_rate=0.01, progress=False)
    return out


def held_out(sessions: Corpus, n: int = 60) -> dict[str, list[str]]:
    names = list(sessions.streams)[2000:2000 + n]
    return {s: sessions.streams[s] for s in names}


def truncated(lines: list[str]) -> list[str]:
    """The block allocated and its first transfer started, then nothing: the commonest anomaly."""
    return lines[:2]


# --- training ------------------------------------------------------------------------------------

def test_a_session_ends_with_the_end_token_and_is_sampled_from_its_start(sessions):
    from transformers import PreTrainedTokenizerFast  # noqa: F401 (the pipeline's tokenizer type)
    from pipelines.tokenizer import train_tokenizer
    from logstream.scoring.masking import LineMasker, DEFAULT_RULES

    names = list(sessions.streams)[:20]
    corpus = Corpus({s: sessions.streams[s] for s in names}, {names[0]})  # only the first is a session
    masker = LineMasker(DEFAULT_RULES)
    tokenizer = train_tokenizer((masker(line) for line in corpus.lines()), 300)
    encoded = encode_streams(corpus, masker, tokenizer)
    eos = tokenizer.eos_token_id
    assert encoded[0][-1] == [eos] and len(encoded[0]) == len(corpus.streams[names[0]]) + 1
    assert all(line[-1] != eos for stream in encoded[1:] for line in stream)
    sampler = ExampleSampler([encoded[0]], prefix=[tokenizer.bos_token_id], context=4096, pad_id=0, end_id=eos)
    rng = random.Random(0)
    whole = [t for line in encoded[0] for t in line]
    assert all(sampler.example(rng) == whole for _ in range(20))


def test_the_model_learns_where_a_workflow_is_complete(model_dir, sessions):
    card = ModelCard.load(model_dir)
    assert card.session_ends and card.calibration.end_threshold is not None
    assert card.calibration.calibration_sessions == 100
    scorer = load_scorer(model_dir, device="cpu", dtype="float32", engine_config=EngineConfig(window=512, slots=8))
    complete, cut = [], []
    for name, lines in held_out(sessions).items():
        for kept, ends in ((lines, complete), (truncated(lines), cut)):
            scorer.score([(name, line) for line in kept])
            ends.append(scorer.end_surprise(name))
            scorer.forget(name)
    # a block that stops after its allocation is far less likely to end there than a whole lifecycle
    assert roc_auc(cut + complete, [1] * len(cut) + [0] * len(complete)) > 0.95
    assert np.median(cut) > card.calibration.end_threshold > np.median(complete)


def test_end_surprise_is_exact_against_transformers(model_dir, sessions):
    from transformers import LlamaForCausalLM

    scorer = load_scorer(model_dir, device="cpu", dtype="float32", engine_config=EngineConfig(window=512, slots=4))
    name, lines = next(iter(held_out(sessions, 1).items()))
    scored = scorer.score([(name, line) for line in lines[:5]])
    ids = scorer.sink_tokens + [t for s in scored for t in s.token_ids]
    hf = LlamaForCausalLM.from_pretrained(model_dir, use_safetensors=True).eval()
    with torch.no_grad():
        expected = -torch.log_softmax(hf(torch.tensor([ids])).logits[0, -1].float(), -1)[scorer.tokenizer.eos_token_id]
    assert scorer.end_surprise(name) == pytest.approx(float(expected), abs=1e-3)


def test_a_stalled_session_is_named_and_its_window_freed(model_dir, sessions):
    scorer = load_scorer(model_dir, device="cpu", dtype="float32", engine_config=EngineConfig(window=512, slots=8))
    now = [0.0]
    tracker = SessionTracker(scorer, idle_s=30, clock=lambda: now[0])
    name, lines = next(iter(held_out(sessions, 1).items()))
    other, other_lines = list(held_out(sessions, 2).items())[1]
    for scored in scorer.score([(name, line) for line in truncated(lines)]):
        tracker.observe(scored, last=scored.masked)
    now[0] = 20.0
    for scored in scorer.score([(other, line) for line in other_lines]):
        tracker.observe(scored)
    assert tracker.due() == []
    now[0] = 31.0
    assert tracker.due() == [name]  # only the block quiet for 30 s
    end = tracker.end(name)
    assert end.kind == STALLED and end.lines == 2 and end.last.startswith("INFO")
    # the expected continuation is a readable HDFS line, not token pieces or the end token
    assert re.search(r"dfs\.\w+", end.expected) and "</s>" not in end.expected
    assert scorer.engine.stream_length(name) == 0 and name not in tracker.open
    now[0] = 60.0
    ended = tracker.end(tracker.due()[0])
    assert ended.stream == other and ended.kind is None and ended.expected is None  # a whole lifecycle
    assert scorer.engine.stats().streams_resident == 0


def test_a_model_without_session_ends_is_refused_by_the_tracker(tmp_path):
    from logstream.config import DEFAULT_MODEL_DIR

    if not (DEFAULT_MODEL_DIR / "logstream.json").is_file():
        pytest.skip("no shipped model")
    scorer = load_scorer(DEFAULT_MODEL_DIR, device="cpu", dtype="float32")
    if scorer.card.session_ends:
        pytest.skip("the shipped model was trained on sessions")
    assert scorer.end_surprise("x") is None
    with pytest.raises(ValueError, match="--sessions"):
        SessionTracker(scorer, idle_s=1)


# --- thresholds and metrics -------------------------------------------------------------------------

def test_tail_threshold_extrapolates_what_few_scores_cannot_show():
    # P(score > t) = exp(-t): the 0.1% point is ln(1000) = 6.91; 400 held-out scores cannot show it
    samples = [np.random.default_rng(seed).exponential(1.0, size=400) for seed in range(50)]
    empirical = np.array([calibrate_threshold(s, 0.001) for s in samples])  # the largest of 400
    tail = np.array([calibrate_tail_threshold(s, 0.001) for s in samples])
    assert (tail >= empirical).all()
    assert abs(np.mean(tail) - math.log(1000)) < 0.5
    # the false-alert rate these thresholds give on new normal scores, on average over the draws
    assert 0.0005 < np.mean(np.exp(-tail)) < 0.0015 < np.mean(np.exp(-empirical))
    rng = np.random.default_rng(0)
    many = rng.exponential(1.0, size=200_000)  # enough scores to read the rate off them: no extrapolation
    assert calibrate_tail_threshold(many, 0.001) == calibrate_threshold(many, 0.001)


def test_real_ratio_metrics_weight_false_alerts():
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.1, 0.75, 0.2, 0.1, 0.0])
    weight = fp_weight(labels, 10.0)  # the test set is 1:1, the real world 10:1
    assert weight == 10.0
    precision, recall, f1 = weighted_precision_recall_f1(scores, labels, 0.5, weight)
    assert precision == pytest.approx(3 / (3 + 10 * 1)) and recall == 0.75
    # best in hindsight: alerting on the top two only (no false alert) beats taking the third
    assert best_weighted_f1(scores, labels, weight) == pytest.approx(2 * 2 / (2 * 2 + 0 + 2))
    assert recall_at_false_positive_rate(scores, labels, 0.0) == 0.5
    assert recall_at_false_positive_rate(scores, labels, 0.25) == 0.75
    m = compute_metrics(scores, labels, 0.5, real_normal_per_anomalous=10.0)
    assert m.real_f1 == pytest.approx(f1) and m.f1 > m.real_f1


# --- the n-gram baseline ---------------------------------------------------------------------------

def entries_of(sessions: dict[str, list[str]], label: int = 0, start: int = 0) -> list[LogEntry]:
    """Sessions interleaved line by line, as a log file holds them."""
    out, depth = [], max(len(v) for v in sessions.values())
    for i in range(depth):
        for name, lines in sessions.items():
            if i < len(lines):
                out.append(LogEntry(index=start + len(out), stream=name, line=lines[i], label=label, group=name))
    return out


def test_ngram_with_end_sees_a_lifecycle_stop_early_that_pairs_alone_do_not(sessions):
    names = list(sessions.streams)
    train = entries_of({s: sessions.streams[s] for s in names[:300]})
    calibration = entries_of({s: sessions.streams[s] for s in names[300:350]}, start=len(train))
    whole = {s: sessions.streams[s] for s in names[2000:2010]}
    # each stops right after its first "Receiving block": every pair it shows is a known one
    cut = {f"{s}-cut": lines[:next(i for i, line in enumerate(lines) if "Receiving block" in line) + 1]
           for s, lines in whole.items()}
    test = entries_of({**whole, **cut}, start=len(train) + len(calibration))
    for ends, flagged_cut in ((True, True), (False, False)):
        detector = NgramSessionDetector(2, ends=ends)
        detector.fit(train, calibration, 0.001)
        alerts = detector.score(test) > detector.threshold
        by_session = {}
        for entry, alert in zip(test, alerts):
            by_session[entry.stream] = by_session.get(entry.stream, False) or bool(alert)
        assert not any(by_session[s] for s in whole)
        # only its end gives it away
        assert all(by_session[s] for s in cut) == flagged_cut


def dev_slice(per_label: int) -> list[str]:
    """Every line, in file order, of the first ``per_label`` normal and the first ``per_label``
    anomalous sessions of dev.log (the file holds its normal sessions first)."""
    labels = {row["BlockId"]: row["Label"] for row in csv.DictReader(open(SESSIONS / "dev_block_labels.csv"))}
    lines = (SESSIONS / "dev.log").read_text().splitlines()
    chosen, counts = set(), {"0": 0, "1": 0}
    for line in lines:
        block = re.search(BLOCK, line).group()
        if block not in chosen and counts[labels[block]] < per_label:
            chosen.add(block)
            counts[labels[block]] += 1
    return [line for line in lines if re.search(BLOCK, line).group() in chosen]


# --- the evaluation spec ---------------------------------------------------------------------------

def test_test_only_split_trains_on_the_extra_files_and_tests_everything(tmp_path):
    from logstream.evaluation.data import load_dataset, make_splits
    from logstream.evaluation.spec import parse_spec

    if not (SESSIONS / "dev.log").is_file():
        pytest.skip("no shared session data")
    train_file, dev_file = tmp_path / "train.log", tmp_path / "dev.log"
    train_lines = (SESSIONS / "train_normal.log").read_text().splitlines()[:2000]
    dev_lines = dev_slice(40)
    train_file.write_text("\n".join(train_lines) + "\n")
    dev_file.write_text("\n".join(dev_lines) + "\n")
    blocks = {re.search(BLOCK, line).group() for line in dev_lines}
    labels = {row["BlockId"]: row["Label"] for row in csv.DictReader(open(SESSIONS / "dev_block_labels.csv"))}
    with open(tmp_path / "labels.csv", "w") as f:
        f.write("BlockId,Label\n" + "".join(f"{b},{labels[b]}\n" for b in sorted(blocks)))
    spec = parse_spec({"files": [str(dev_file)], "extra_train_files": [str(train_file)],
                       "labels": {"level": "group", "key": BLOCK, "file": str(tmp_path / "labels.csv"),
                                  "key_column": "BlockId", "label_column": "Label", "anomalous": "1"},
                       "stream_key": BLOCK, "sessions": True, "split": {"kind": "test_only"},
                       "calibration_fraction": 0.2, "real_normal_per_anomalous": 32.9}, tmp_path)
    [split] = make_splits(load_dataset(spec))
    assert len(split.test) == len(dev_lines)
    assert len(split.train) + len(split.calibration) == len(train_lines)
    train_groups, calibration_groups = {e.group for e in split.train}, {e.group for e in split.calibration}
    assert not train_groups & calibration_groups  # sessions are held out whole
    assert len(calibration_groups) == round(0.2 * len(train_groups | calibration_groups))
    # the latest sessions calibrate: every calibration session starts after every training one starts
    first = {}
    for e in split.train + split.calibration:
        first.setdefault(e.group, e.index)
    assert min(first[g] for g in calibration_groups) > max(first[g] for g in train_groups)
    with pytest.raises(Exception, match="extra_train_files"):
        parse_spec({"files": [str(dev_file)], "labels": spec.labels.model_dump(), "stream_key": BLOCK,
                    "split": {"kind": "test_only"}}, tmp_path)


# --- the worker: Kafka -> worker -> alerts topic ---------------------------------------------------

def offline_flags(model_dir: Path, lines: list[str]) -> set[str]:
    """The sessions the offline evaluation flags (``lm-live`` on sessions): a line's margin or, after
    the session's last line, its end's over the session threshold."""
    from logstream.evaluation.lm_detectors import LiveDetector, SplitModel

    entries = [LogEntry(index=i, stream=re.search(BLOCK, line).group(), line=line, label=0,
                        group=re.search(BLOCK, line).group()) for i, line in enumerate(lines)]
    detector = LiveDetector(SplitModel(train_steps=0, window=512, model_dir=model_dir, sessions=True), settings=None)
    margins = detector.score(entries)
    return {e.stream for e, margin in zip(entries, margins) if margin > 0}


@pytest.mark.slow
def test_sessions_replayed_through_kafka_are_flagged_as_the_offline_evaluation_flags_them(model_dir, tmp_path):
    from logstream.alerts import Alert
    from logstream.service.broker import EmbeddedBroker
    from service_helpers import KafkaProducer, Scenario, TopicReader

    lines = dev_slice(12)
    blocks = list(dict.fromkeys(re.search(BLOCK, line).group() for line in lines))
    expected = offline_flags(model_dir, lines)
    assert expected and len(expected) < len(blocks)  # the slice tells flagged from unflagged sessions
    with EmbeddedBroker() as broker:
        scenario = Scenario(broker.bootstrap_servers, tmp_path, settings={
            "LOGSTREAM_MODEL__PATH": str(model_dir),
            "LOGSTREAM_CACHE__WINDOW_TOKENS": "512",
            "LOGSTREAM_SCORING__STREAM_KEY": BLOCK,
            "LOGSTREAM_SCORING__SESSIONS__IDLE_S": "15",  # a loaded machine must not cut a session in two
            "LOGSTREAM_ADAPT__ENABLED": "false",
            "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0",
        })
        scenario.create_topics()
        worker = scenario.worker("sessions")
        reader = TopicReader(scenario.bootstrap, [scenario.scores_topic, scenario.alerts_topic])
        try:
            producer = KafkaProducer(bootstrap_servers=scenario.bootstrap, acks="all")
            for line in lines:  # keyed by block: a block's lines stay in order on one partition
                producer.send(scenario.input_topic, key=re.search(BLOCK, line).group().encode(), value=line.encode())
            producer.flush()
            producer.close()
            reader.wait_for(lambda: len(reader.values(scenario.scores_topic)) >= len(lines), "every line scored",
                            workers=[worker])
            ends = lambda: sum(float(v) for v in re.findall(  # noqa: E731
                r'^logstream_sessions_ended_total\{kind="[^"]+"\} (\S+)$', _metrics(scenario.metrics_port), re.M))
            reader.wait_for(lambda: ends() >= len(blocks), "every session ended", timeout_s=90, workers=[worker])
            reader.poll()
            alerts = [Alert.model_validate(a) for a in reader.values(scenario.alerts_topic)]
        finally:
            reader.close()
            worker.terminate()
            worker.stop()
    assert {a.stream for a in alerts} == expected
    assert {a.kind for a in alerts} <= {"unusual line", "stalled"}
    stalls = [a for a in alerts if a.kind == "stalled"]
    assert stalls and all(a.expected and "</s>" not in a.expected and a.stream in a.explanation.summary
                          for a in stalls)
    assert all(a.threshold_how == "session" for a in alerts)


def _metrics(port: int) -> str:
    import urllib.request

    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    except OSError:
        return ""
