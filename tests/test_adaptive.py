"""Adaptive thresholds: per source and template, from the source's own recent normal lines."""

from __future__ import annotations

import json
import random

import pytest

from logstream.config import AdaptiveSettings
from logstream.scoring.adaptive import (CALIBRATED, COLD, FEEDBACK, NOVEL, RARE_LEVEL, TEMPLATE, AdaptiveThresholds,
                                       level_key)

CONFIG = AdaptiveSettings(cold_start_lines=50, min_template_lines=10, history=64, margin=1.0, iqr_margin=3.0)
USERS = ("alice", "bob", "carol", "dave")


def feed(adaptive: AdaptiveThresholds, source: str, n: int, seed: int = 0) -> None:
    """n normal lines of two templates with scores around 2 (common) and 4 (rarer), all learned."""
    rng = random.Random(seed)
    for i in range(n):
        if i % 5:
            line, score = f"session opened for user {rng.choice(USERS)} by (uid=<N1>)", rng.gauss(2.0, 0.1)
        else:
            line, score = f"connection from <IP> port <N5> on {rng.choice(USERS)}", rng.gauss(4.0, 0.2)
        verdict = adaptive.judge(source, line, score)
        assert not verdict.anomaly
        adaptive.learn(source, line, score)


def test_a_new_source_only_learns_at_first():
    adaptive = AdaptiveThresholds(CONFIG)
    for i in range(CONFIG.cold_start_lines):
        verdict = adaptive.judge("src", f"anything at all {i}", 50.0)
        assert not verdict.anomaly and verdict.how == COLD and verdict.threshold is None
        adaptive.learn("src", f"anything at all {i}", 3.0)
    assert adaptive.sources() == {"src": CONFIG.cold_start_lines}


def test_the_calibrated_threshold_applies_only_where_it_holds():
    adaptive = AdaptiveThresholds(CONFIG.model_copy(update={"cold_start_lines": 100}))
    for i in range(60):  # the model knows this source: its lines score far under the calibrated 1.6
        adaptive.learn("known", f"request {i % 3} served", 0.3)
        adaptive.learn("foreign", f"status installed pkg{i % 3}", 6.0)
    assert adaptive.calibration_holds("known", 1.6) and not adaptive.calibration_holds("foreign", 1.6)
    familiar = adaptive.judge("known", "kernel panic", 3.0, calibrated=1.6)  # still in its cold start
    assert familiar.anomaly and familiar.how == CALIBRATED and familiar.threshold == 1.6
    foreign = adaptive.judge("foreign", "kernel panic", 9.0, calibrated=1.6)
    assert not foreign.anomaly and foreign.how == COLD
    for i in range(10):  # lines over the threshold, alerted or not, count against it
        adaptive.seen("known", 2.0)
    assert not adaptive.calibration_holds("known", 1.6)


def test_a_known_template_alerts_only_far_above_its_own_scores():
    adaptive = AdaptiveThresholds(CONFIG)
    feed(adaptive, "src", 300)
    usual = adaptive.judge("src", "session opened for user bob by (uid=<N1>)", 2.2)
    odd = adaptive.judge("src", "session opened for user bob by (uid=<N1>)", 4.5)
    assert usual.how == odd.how == TEMPLATE and not usual.anomaly and odd.anomaly
    assert 2.0 < odd.threshold < 4.5 and "template" in odd.note
    # the rarer template's scores sit near 4: 4.5 is normal for it
    assert not adaptive.judge("src", "connection from <IP> port <N5> on bob", 4.5).anomaly


def test_a_new_template_is_judged_against_the_sources_new_templates():
    adaptive = AdaptiveThresholds(CONFIG)
    feed(adaptive, "src", 300)
    novel = adaptive.judge("src", "kernel: Out of memory: Kill process <N4> (java)", 30.0)
    assert novel.how == NOVEL and novel.anomaly
    plain = adaptive.judge("src", "kernel: Out of memory: Kill process <N4> (java)", 2.5)
    assert not plain.anomaly


def test_a_level_the_source_rarely_writes_alerts_however_plain_its_words():
    adaptive = AdaptiveThresholds(CONFIG)
    for i in range(400):
        level = "WARN" if i % 25 == 0 else "INFO"  # 4% of this source's lines are warnings: routine
        adaptive.learn("src", f"request {i % 7} served", 2.0, level=level)
    plain = "request <N1> served"
    error = adaptive.judge("src", plain, 2.0, level="ERROR")
    assert error.anomaly and error.how == RARE_LEVEL and "ERROR lines are 0.25% of this source's normal lines" in error.note
    assert not adaptive.judge("src", plain, 2.0, level="WARN").anomaly
    assert not adaptive.judge("src", plain, 2.0, level="DEBUG").anomaly  # low levels never alert by level
    assert adaptive.judge("src", plain, 2.0, level="DETAIL").anomaly  # a level word no format ranks
    assert adaptive.judge("src", plain, 2.0, level=level_key("WARN", "Forbidden")).anomaly  # a rare status
    assert not adaptive.judge("src", plain, 2.0, level=level_key("INFO", "Partial Content")).anomaly


def test_sources_learn_apart():
    adaptive = AdaptiveThresholds(CONFIG)
    feed(adaptive, "a", 300)
    assert adaptive.judge("b", "session opened for user bob by (uid=<N1>)", 40.0).how == COLD


def test_marked_normal_stops_similar_lines_but_not_other_errors():
    adaptive = AdaptiveThresholds(CONFIG)
    feed(adaptive, "src", 300)
    noisy = "backup job <N3> finished with warnings on volume {}"
    assert adaptive.judge("src", noisy.format("home"), 12.0).anomaly
    adaptive.mark_normal("src", noisy.format("home"), 12.0)
    verdict = adaptive.judge("src", noisy.format("data"), 12.5)
    assert verdict.how == FEEDBACK and not verdict.anomaly
    assert adaptive.judge("src", "disk /dev/sda failed: I/O error", 30.0).anomaly


def test_memory_is_bounded():
    adaptive = AdaptiveThresholds(AdaptiveSettings(max_sources=3, history=16, novel_history=16))
    for source in range(10):
        for i in range(40):
            adaptive.learn(f"s{source}", f"line {i % 3} text", float(i))
    assert len(adaptive.sources()) == 3
    state = adaptive._sources["s9"]
    assert len(state.novel) <= 16 and all(len(t.scores) <= 16 for t in state.templates.values())


def test_what_was_learned_survives_a_round_trip_through_json():
    adaptive = AdaptiveThresholds(CONFIG)
    feed(adaptive, "src", 300)
    adaptive.mark_normal("src", "backup job <N3> finished with warnings on volume home", 12.0)
    restored = AdaptiveThresholds(CONFIG)
    restored.load_state(json.loads(json.dumps(adaptive.state())))
    assert restored.sources() == adaptive.sources()
    for line, score in (("session opened for user bob by (uid=<N1>)", 4.5), ("connection from <IP> port <N5> on dave",
                        4.3), ("backup job <N3> finished with warnings on volume data", 12.5), ("disk failed", 30.0)):
        before, after = adaptive.judge("src", line, score), restored.judge("src", line, score)
        assert (before.anomaly, before.how) == (after.anomaly, after.how)
        assert before.threshold == pytest.approx(after.threshold)


@pytest.mark.parametrize("bad", [{"quantile": 1.5}, {"source_by": "host"}, {"history": 2}])
def test_settings_are_checked(bad):
    with pytest.raises(ValueError):
        AdaptiveSettings(**bad)
