"""Continual fine-tuning: the model store, when rounds are due, a real round, and a swap."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest
import torch

from logstream.adapt.online import InlineAdaptation, OnlineAdapter
from logstream.adapt.store import BASE, ModelStore
from logstream.config import DEFAULT_MODEL_DIR, AdaptSettings, Settings
from logstream.scoring.card import ModelCard
from logstream.scoring.scorer import load_scorer
from logstream.synth import SyntheticLogs
from pipelines.corpus import Corpus
from pipelines.finetune import FinetuneConfig, finetune

ROOT = Path(__file__).resolve().parents[1]
# PostgreSQL's own log (benchmarks/data/onboarding): a format the shipped model never saw
FOREIGN = ROOT / "benchmarks" / "data" / "onboarding" / "postgresql" / "normal.log"


def foreign_lines(n: int) -> list[str]:
    if not FOREIGN.exists():
        pytest.skip(f"{FOREIGN} is missing (benchmarks/onboarding_data.py makes it)")
    return FOREIGN.read_text().splitlines()[:n]


def digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def adapted(tmp_path_factory) -> Path:
    """One short real round on the foreign source, from the shipped model."""
    before = digest(DEFAULT_MODEL_DIR)
    out = tmp_path_factory.mktemp("adapted") / "model"
    finetune(DEFAULT_MODEL_DIR, Corpus({"pg": foreign_lines(400)}), out, FinetuneConfig(steps=8, context=128))
    assert digest(DEFAULT_MODEL_DIR) == before  # the shipped model is never written to
    return out


def test_a_round_writes_a_new_complete_version(adapted):
    card, base = ModelCard.load(adapted), ModelCard.load(DEFAULT_MODEL_DIR)
    assert card.model_version != base.model_version and card.reads == base.reads and card.preamble == base.preamble
    assert card.training["finetune"]["parent"] == base.model_version and card.training["finetune"]["steps"] == 8
    assert (adapted / "replay.jsonl").read_bytes() == (DEFAULT_MODEL_DIR / "replay.jsonl").read_bytes()
    assert not any(p.suffix in (".bin", ".pt", ".pth") for p in adapted.iterdir())


def test_the_round_learned_the_source(adapted):
    lines = foreign_lines(600)[400:600]  # lines after the ones it learned from
    torch.set_num_threads(1)

    def mean_score(model_dir):
        scorer = load_scorer(model_dir, device="cpu", dtype="float32")
        return sum(s.score for s in scorer.score([("pg", line) for line in lines])) / len(lines)

    assert mean_score(adapted) < mean_score(DEFAULT_MODEL_DIR) - 0.5


def test_store_serves_the_pointer_and_rolls_back_along_the_lineage(tmp_path, adapted):
    store = ModelStore(tmp_path / "store", DEFAULT_MODEL_DIR)
    assert store.current_version() == BASE and store.current() == DEFAULT_MODEL_DIR
    staged = tmp_path / "staged"
    import shutil

    shutil.copytree(adapted, staged)
    version = store.add(staged, reason="test round")
    assert store.current_version() == version and (store.current() / "model.safetensors").exists()
    assert store.rollback() == BASE and store.current() == DEFAULT_MODEL_DIR
    assert store.rollback(version) == version
    with pytest.raises(ValueError, match="no model version 'nope'"):
        store.rollback("nope")
    assert [r["reason"] for r in store.history()] == ["test round", "rollback", "rollback"]


def test_two_workers_moving_one_stores_pointer_never_crash_on_each_others_temporary_file(tmp_path):
    """Workers on one host share the model store (each keeps its own thresholds in a slot of data_dir): both
    wrote the pointer through one ``current.tmp``, so one's replace could find the other's file already moved."""
    import threading

    failures = []

    def point_many():
        store = ModelStore(tmp_path / "store", DEFAULT_MODEL_DIR)
        try:
            for _ in range(300):
                store.rollback(BASE)
        except OSError as exc:
            failures.append(exc)

    threads = [threading.Thread(target=point_many) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    store = ModelStore(tmp_path / "store", DEFAULT_MODEL_DIR)
    assert store.current_version() == BASE and len(store.history()) == 600
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["current", "history.jsonl"]


def test_rounds_are_due_for_unfamiliar_sources_only_and_space_out():
    scorer = load_scorer(DEFAULT_MODEL_DIR, device="cpu", dtype="float32",
                         adaptive=Settings().scoring.adaptive_thresholds())
    adapter = OnlineAdapter(AdaptSettings(first_after_lines=100, max_gap_lines=1000))
    known = [e.line for e in itertools.islice(SyntheticLogs(seed=3, anomaly_rate=0, services={"web": 1}), 150)]
    foreign = foreign_lines(150)
    for at in range(0, 150, 50):
        entries = [("web-1", l) for l in known[at:at + 50]] + [("pg", l) for l in foreign[at:at + 50]]
        adapter.observe(scorer, entries, scorer.score(entries))
    due = adapter.due(scorer)
    assert due == ["format:postgresql"]  # PostgreSQL's lines; the web server's the model knows
    round_ = adapter.plan(due)
    assert set(round_.recent.streams) == {"web-1", "pg"} and round_.lines <= 300
    assert adapter.due(scorer) == []  # the next round waits for twice as many lines
    assert adapter.tracks["format:postgresql"].next_round == 150 + 200


def test_inline_adaptation_swaps_in_a_new_version_and_relearns(tmp_path):
    settings = Settings(adapt={"first_after_lines": 100, "steps": 4, "context": 128, "relearn_lines": 60})
    adaptation = InlineAdaptation(settings, ModelStore(tmp_path / "store", DEFAULT_MODEL_DIR))
    scorer = load_scorer(DEFAULT_MODEL_DIR, device="cpu", dtype="float32",
                         adaptive=settings.scoring.adaptive_thresholds())
    lines = foreign_lines(260)
    versions = []
    for at in range(0, len(lines), 50):
        entries = [("pg", l) for l in lines[at:at + 50]]
        scorer = adaptation.after_batch(scorer, entries, scorer.score(entries))
        versions.append(scorer.model_version)
    assert len(adaptation.rounds) == 1 and adaptation.rounds[0]["sources"] == ["format:postgresql"]
    assert versions[0] == ModelCard.load(DEFAULT_MODEL_DIR).model_version != versions[-1]
    assert versions[-1] == adaptation.rounds[0]["version"]
    source = scorer.adaptive._sources["format:postgresql"]
    assert source.lines == 260  # re-learning does not count lines twice
    assert sum(len(t.scores) for t in source.templates.values()) >= 50  # histories refilled by the new model


def test_a_swap_is_prepared_beside_scoring_without_touching_what_serves(adapted):
    """The worker makes a new version ready on another thread while the served scorer goes on: the
    served scores are those of a scorer with no swap beside it, the prepared scores are those of
    the new model reading the same lines afresh, and the switch judges them into the thresholds."""
    from concurrent.futures import ThreadPoolExecutor

    settings = Settings(adapt={"relearn_lines": 60})

    def scorer():
        return load_scorer(DEFAULT_MODEL_DIR, device="cpu", dtype="float32",
                           adaptive=settings.scoring.adaptive_thresholds())

    lines = [("pg", line) for line in foreign_lines(260)]
    serving, alone = scorer(), scorer()
    adapter = OnlineAdapter(settings.adapt)
    adapter.observe(serving, lines[:100], serving.score(lines[:100]))
    alone.score(lines[:100])
    plan = adapter.relearn_plan()
    assert list(plan) == ["format:postgresql"] and len(plan["format:postgresql"]) == 60
    kept = list(adapter.tracks["format:postgresql"].tail)[-60:]

    with ThreadPoolExecutor(max_workers=1) as swap_thread:
        preparing = swap_thread.submit(adapter.prepare, serving, adapted, plan)
        served = [s for at in range(100, 260, 20) for s in serving.score(lines[at:at + 20])]
        prepared = preparing.result()
    expected = [s for at in range(100, 260, 20) for s in alone.score(lines[at:at + 20])]
    assert [(s.score, s.threshold, s.verdict.anomaly) for s in served] == [
        (s.score, s.threshold, s.verdict.anomaly) for s in expected]

    fresh = load_scorer(adapted, device="cpu", dtype="float32")
    rescored = prepared.rescored["format:postgresql"]
    assert [s.score for s in rescored] == pytest.approx([s.score for s in fresh.score(kept)], abs=1e-5)
    assert all(s.verdict is None for s in rescored)  # judged at the switch, not on the swap thread

    source = serving.adaptive._sources["format:postgresql"]
    histories = sum(len(t.scores) for t in source.templates.values())
    new = adapter.apply(prepared)
    assert new is prepared.scorer and new.model_version == ModelCard.load(adapted).model_version
    assert source.lines == 260  # re-learning does not count lines twice
    assert sum(len(t.scores) for t in source.templates.values()) > histories or histories == sum(
        t.scores.maxlen for t in source.templates.values())
    assert all(s.verdict is not None for s in rescored)


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="the kernel schedules no autogroups")
def test_the_trainers_session_is_scheduled_at_its_nice_value():
    """Under autogroup scheduling a session competes as a whole: the trainer's session gets its nice."""
    import subprocess

    from logstream.adapt.background import lower_session_priority

    # The worker's own process may sit in the root group, whose file reads empty (CI's does).
    own_group = Path("/proc/self/autogroup").read_text()
    trainer = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        if not Path(f"/proc/{trainer.pid}/autogroup").read_text():
            pytest.skip("a new session gets no autogroup here")
        assert Path(f"/proc/{trainer.pid}/autogroup").read_text().split()[-1] == "0"
        lower_session_priority(trainer.pid, 10)
        assert Path(f"/proc/{trainer.pid}/autogroup").read_text().split()[-1] == "10"
        assert Path("/proc/self/autogroup").read_text() == own_group  # the worker's own is untouched
    finally:
        trainer.kill()
        trainer.wait()


def test_relearning_at_a_swap_counts_no_line_twice_when_a_streams_format_was_pinned_since():
    """A stream's first lines are read whole until its format is known; its kept lines are re-learned at a swap
    in the source its format is now (``LineScorer.source_of``): there they only refill score histories, never
    count as new lines (they did, with their steps and recurrences, outside the rescoring of their track's
    source)."""
    from types import SimpleNamespace

    from logstream.adapt.online import PreparedSwap
    from logstream.canonical.canonicalizer import CanonicalLine
    from logstream.scoring.scorer import LineScore, LineScorer

    pinned: dict[str, str] = {}
    new = SimpleNamespace(adaptive=Settings().scoring.adaptive_thresholds())
    new.source_of = lambda stream, canonical: f"format:{pinned.get(stream) or canonical.format}"
    new.judge = lambda lines: LineScorer.judge(new, lines)
    empty = torch.empty(0)

    def line(fmt: str, i: int) -> LineScore:
        text = f"GET /page/{i % 5} HTTP/1.1 200"
        return LineScore("radio", text, [], empty, empty, 0, 2.0, None, True,
                         canonical=CanonicalLine(format=fmt, message=text))

    new.judge([line("whole", i) for i in range(50)])  # read whole at first
    pinned["radio"] = "access_log"
    new.judge([line("access_log", i) for i in range(300)])  # then as the access log it is
    before = new.adaptive.sources()
    assert before == {"format:whole": 50, "format:access_log": 300}
    kept = {"format:whole": [line("whole", i) for i in range(50)]}  # the whole-read track's kept lines, re-scored
    for _ in OnlineAdapter.relearning(PreparedSwap(new, kept)):
        pass
    assert new.adaptive.sources() == before
    assert all(s.verdict is not None for s in kept["format:whole"])
