"""Masking, aggregates and the warm-up rule of the scorer (model-free parts)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from logstream.scoring.aggregate import AGGREGATES, aggregate, all_aggregates, lines_aggregates
from logstream.scoring.card import Calibration, ModelCard
from logstream.scoring.masking import LineMasker, placeholder_tokens


def test_masking_replaces_variable_fields_and_keeps_magnitude():
    mask = LineMasker()
    line = ("081109 203518 143 INFO dfs.DataNode$DataXceiver: Receiving block blk_-1608999687919862906 "
            "src: /10.250.19.102:54106 dest: /10.250.19.102:50010 id 0x1f3a deadbeef99")
    masked = mask(line)
    assert masked == ("<N6> <N6> <N3> INFO dfs.DataNode$DataXceiver: Receiving block <BLK> "
                      "src: /<IP> dest: /<IP> id <HEX> <HEX>")
    assert mask("latency 40 ms") != mask("latency 40000 ms")  # order of magnitude survives
    assert mask("latency 40 ms") == mask("latency 73 ms")
    assert mask("a" * 30) == "a" * 30  # words are not hex just because they use a-f letters
    assert mask("12345678") == "<N8>"  # a plain long number is a number, not hex


def test_placeholders_cover_every_mask_output():
    mask = LineMasker()
    produced = set()
    for line in ["blk_1 1.2.3.4 0xff abcdef123456", " ".join(str(10 ** d) for d in range(15))]:
        produced |= {w for w in mask(line).split() if w.startswith("<")}
    assert produced <= set(placeholder_tokens())


def test_aggregates_on_a_hand_made_line():
    logprobs = torch.tensor([-1.0, -2.0, -6.0, -0.5])
    entropy = torch.tensor([0.5, 1.0, 1.0, 0.5])
    assert aggregate(logprobs, entropy, "mean") == pytest.approx(9.5 / 4)
    assert aggregate(logprobs, entropy, "max") == pytest.approx(6.0)
    assert aggregate(logprobs, entropy, "top3") == pytest.approx(3.0)
    assert aggregate(logprobs, entropy, "excess") == pytest.approx((0.5 + 1.0 + 5.0 + 0.0) / 4)
    assert set(all_aggregates(logprobs, entropy)) == set(AGGREGATES)
    assert aggregate(torch.zeros(0), torch.zeros(0), "mean") == 0.0
    with pytest.raises(ValueError, match="unknown aggregate"):
        aggregate(logprobs, entropy, "median")


def test_a_batch_of_lines_aggregates_as_each_line_alone():
    """Lines of 1 to 9 tokens (fewer than top3's three too), one impossible token among them, and an
    empty line: the batch gives each line's own aggregates."""
    g = torch.Generator().manual_seed(0)
    lengths = [int(n) for n in torch.randint(1, 10, (40,), generator=g)] + [1, 2, 0, 3]
    logprobs = -torch.rand(sum(lengths), generator=g) * 12
    entropy = torch.rand(sum(lengths), generator=g) * 5
    logprobs[7] = float("-inf")
    batch = lines_aggregates(logprobs, entropy, lengths)
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    assert len(batch) == len(lengths)
    for start, n, got in zip(starts, lengths, batch):
        alone = all_aggregates(logprobs[start:start + n], entropy[start:start + n])
        assert got.keys() == alone.keys()
        assert all(got[k] == pytest.approx(alone[k], rel=1e-12) for k in AGGREGATES), (n, got, alone)
    assert lines_aggregates(logprobs[:0], entropy[:0], []) == []


def test_model_card_round_trip_and_missing_card(tmp_path):
    card = ModelCard(model_version="m-1", preamble=["a <N2>"], calibration=Calibration(
        threshold=3.5, warmup_threshold=4.5, warmup_tokens=256, target_false_alert_rate=1e-3,
        calibration_lines=10, calibration_warmup_lines=5))
    card.save(tmp_path)
    again = ModelCard.load(tmp_path)
    assert again == card and not math.isnan(again.calibration.threshold)
    with pytest.raises(FileNotFoundError, match="logstream train"):
        ModelCard.load(tmp_path / "nowhere")


def test_envelope_decoding_gives_reasons_for_bad_input():
    from logstream.service.envelope import EnvelopeError, decode_entry

    assert decode_entry(b"a plain line\n", b"host-1")[0] == "host-1"
    stream, envelope = decode_entry(b'{"line": "x", "source": "/var/log/a.log"}', None)
    assert stream == "/var/log/a.log" and envelope.line == "x"
    for value, key, reason in [
        (b'{"line": "a\\ud800b"}', b"k", "not valid Unicode"),
        (b"\xff\xfe", b"k", "not UTF-8"),
        (b'{"line": ', b"k", "malformed JSON"),
        (b'{"line": "x", "colour": 1}', b"k", "colour"),
        (b"no key, no envelope", None, "no stream id"),
        (None, b"k", "empty message"),
    ]:
        with pytest.raises(EnvelopeError, match=reason):
            decode_entry(value, key)


def test_explanations_name_whole_words_with_their_share_of_the_surprise():
    from logstream.scoring.explain import differing_words, surprising_words

    words = surprising_words([" fat", "al:", " Read", " from", " socket", " fail", "ed:", "\n"],
                             [-6.0, -4.0, -1.0, -0.5, -3.0, -2.0, -3.5, -0.0])
    assert [w.text for w in words] == ["fatal:", "Read", "from", "socket", "failed:"]
    assert words[0].logprob == -10.0 and words[0].share == 0.5
    assert sum(w.share for w in words) == pytest.approx(1.0)
    assert differing_words("sshd: Connection reset by <IP> [preauth]",
                           "sshd: Connection closed by <IP> [preauth]") == "reset"


def test_score_prints_a_range_of_lines_and_the_top_alerts(capsys):
    import json as _json
    from pathlib import Path

    from logstream.cli import main

    log = Path(__file__).resolve().parents[1] / "sample_logs" / "loghub" / "Hadoop" / "Hadoop_2k.log"
    assert main(["score", str(log), "--all", "--json", "--no-adapt", "--since", "100", "--until", "103"]) == 0
    rows = [_json.loads(r) for r in capsys.readouterr().out.splitlines()]
    assert [r["where"].rsplit(":", 1)[1] for r in rows] == ["100", "101", "102", "103"]
    assert main(["score", str(log), "--json", "--no-adapt", "--all", "--since", "2015-10-18T18:01:50",
                 "--until", "2015-10-18T18:01:50.6"]) == 0
    rows = [_json.loads(r) for r in capsys.readouterr().out.splitlines()]
    assert len(rows) == 10 and all("18:01:50," in r["line"] for r in rows)  # lines 5-14
    assert main(["score", str(log), "--json", "--no-adapt", "--top", "2", "--until", "600"]) == 0
    rows = [_json.loads(r) for r in capsys.readouterr().out.splitlines()]
    assert len(rows) <= 2 and all(r["anomaly"] for r in rows)
    margins = [r["score"] - (r["threshold"] or 0.0) for r in rows]  # no threshold yet: a rule's alert
    assert margins == sorted(margins, reverse=True)


def test_score_learns_a_known_good_log_as_normal(tmp_path, capsys):
    """``--normal``: a healthy period's lines are learned whatever they read as, so the ERROR that is routine
    there does not alert in the file scored after it; without it, the same ERROR alerts."""
    from logstream.cli import main

    def line(i: int, text: str) -> str:
        return f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}Z {text}\n"

    healthy = tmp_path / "healthy.log"
    healthy.write_text("".join(line(i, f"ERROR app: cache refresh slow on shard {i % 7}" if i % 40 == 0
                                    else f"INFO app: request {i} served in {i % 13} ms") for i in range(400)))
    today = tmp_path / "today.log"
    today.write_text("".join(line(i, "ERROR app: cache refresh slow on shard 3" if i == 30
                                  else f"INFO app: request {i} served in {i % 11} ms") for i in range(60)))
    assert main(["score", str(today), "--json", "--no-adapt"]) == 0
    alone = [r for r in map(json.loads, capsys.readouterr().out.splitlines()) if "cache refresh" in r["line"]]
    assert alone and alone[0]["anomaly"]
    assert main(["score", str(today), "--json", "--no-adapt", "--normal", str(healthy)]) == 0
    rows = [json.loads(r) for r in capsys.readouterr().out.splitlines()]
    assert not any("cache refresh" in r["line"] for r in rows)  # learned as normal: no alert
    assert all(r["where"].startswith(str(today)) for r in rows)  # the baseline is never printed
