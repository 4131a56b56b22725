"""Paged windows (``logstream.cache.pages``): the same scores as the slot pool, memory for the tokens a
stream holds, tiers that bring a stream back bit for bit, a shrunk window that reads like a short
history, and forgetting that is counted and flagged. Real tiny ``transformers``-shaped models."""

from __future__ import annotations

import random

import pytest
import torch

from logstream.cache import Chunk, EngineConfig, StreamingEngine
from models import random_lines, tiny_pair
from oracle import dense_window_logprobs

SINK = [1, 7, 9]


def feed(engine: StreamingEngine, schedule: list[tuple[str, list[int]]], batch: int = 1) -> list:
    """Score (stream, tokens) pieces in order, ``batch`` pieces per call; the scores, in order."""
    out = []
    for at in range(0, len(schedule), batch):
        out += engine.score([Chunk(s, tokens) for s, tokens in schedule[at:at + batch]])
    return out


def mixed_schedule(seed: int, streams: int = 5, window: int = 16) -> list[tuple[str, list[int]]]:
    """Streams of very different lengths (one wraps its window several times, one stays short),
    interleaved at random."""
    rng = random.Random(seed)
    lines = {f"s{i}": random_lines(rng.choice([3, window // 2, 2 * window, 5 * window]), seed=seed * 10 + i)
             for i in range(streams)}
    schedule = []
    while any(lines.values()):
        stream = rng.choice([s for s, left in lines.items() if left])
        schedule.append((stream, lines[stream].pop(0)))
    return schedule


@pytest.mark.parametrize("name", ["llama-gqa", "mistral-gqa", "qwen2-mha"])
@pytest.mark.parametrize("page_tokens", [1, 3, 5, 16])
@pytest.mark.parametrize("batch", [1, 4])
def test_paged_attention_equals_slot_attention(name, page_tokens, batch):
    """Windows that wrap, pages partly filled, streams of mixed lengths in one pass."""
    _, ours = tiny_pair(name, layers=2)
    L = 16
    schedule = mixed_schedule(seed=page_tokens + batch, window=L)
    slots = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=8, layout="slots", rebase_interval=23))
    paged = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=8, page_tokens=page_tokens, rebase_interval=23))
    for x, y in zip(feed(slots, schedule, batch), feed(paged, schedule, batch)):
        assert x.stream_id == y.stream_id and x.start == y.start
        assert (x.logprobs - y.logprobs).abs().max() < 1e-5
        assert (x.entropy - y.entropy).abs().max() < 1e-5


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2-mha"])
@pytest.mark.parametrize("chunk_keys", [2048, 1, 45])
def test_fused_cpu_attention_equals_the_matmul_path(name, chunk_keys, monkeypatch):
    """The fused kernel (torch's flash attention for CPU, window and sinks merged by log-sum-exp) and
    the matmul-softmax-matmul path it replaces on CPU (and that other devices take) agree, whether a
    pass's windows are attended to at once, a row at a time, or a few rows at a time."""
    from logstream.cache import paged_attention

    monkeypatch.setattr(paged_attention, "CHUNK_KEYS", chunk_keys)
    _, ours = tiny_pair(name, layers=2)
    schedule = mixed_schedule(seed=11, window=16)
    config = EngineConfig(window=16, slots=8, page_tokens=5, rebase_interval=23)
    fused = feed(StreamingEngine(ours, SINK, config), schedule, batch=4)
    monkeypatch.setattr(paged_attention, "FLASH_CPU", None)
    matmul = feed(StreamingEngine(ours, SINK, config), schedule, batch=4)
    for x, y in zip(fused, matmul):
        assert (x.logprobs - y.logprobs).abs().max() < 1e-5 and (x.entropy - y.entropy).abs().max() < 1e-5


def test_a_bfloat16_model_scores_through_both_cpu_attention_paths(monkeypatch):
    """model.dtype: bfloat16 on a CPU: the fused kernel's log-sum-exps are float32, and its output goes
    back to the model's dtype (it once reached o_proj as float32 and the pass failed); both paths agree
    with each other and stay near the float32 model."""
    import copy

    from logstream.cache import paged_attention

    _, ours = tiny_pair("llama-gqa", layers=2)
    half = copy.deepcopy(ours).to(torch.bfloat16)
    schedule = mixed_schedule(seed=5, window=16)
    config = EngineConfig(window=16, slots=8, page_tokens=4)
    full = feed(StreamingEngine(ours, SINK, config), schedule, batch=3)
    fused = feed(StreamingEngine(half, SINK, config), schedule, batch=3)
    monkeypatch.setattr(paged_attention, "FLASH_CPU", None)
    matmul = feed(StreamingEngine(half, SINK, config), schedule, batch=3)
    for x, y, z in zip(full, fused, matmul):
        assert y.logprobs.dtype == torch.float32 and y.logprobs.shape == x.logprobs.shape
        assert (y.logprobs - z.logprobs).abs().max() < 0.05
        assert (x.logprobs - y.logprobs).abs().max() < 0.2  # bfloat16 weights: a small, real difference

def test_paged_windows_equal_the_dense_oracle_across_page_boundaries():
    hf, ours = tiny_pair("llama-gqa", layers=1)
    L = 10
    tokens = [t for line in random_lines(5 * L, seed=3) for t in line]
    engine = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=2, page_tokens=3, rebase_interval=17))
    dist = torch.cat([engine.score([Chunk("s", [t])], return_distributions=True)[0].next_logprobs for t in tokens])
    for t in range(len(tokens)):
        assert (dist[t] - dense_window_logprobs(hf, SINK, tokens, t, L)).abs().max() < 1e-4, f"t={t}"


def test_a_stream_holds_pages_for_its_tokens_only():
    _, ours = tiny_pair("llama-gqa", layers=2)
    engine = StreamingEngine(ours, SINK, EngineConfig(window=64, slots=4, page_tokens=8))
    engine.score([Chunk("short", list(range(3, 13)))])  # 10 tokens: 2 pages
    assert engine.stats().slots_in_use == 2
    for _ in range(30):  # 300 tokens more: a full window of 64 straddles at most 9 pages of 8
        engine.score([Chunk("long", list(range(3, 13)))])
    assert engine.stats().slots_in_use == 2 + 9
    engine.drop("long")
    assert engine.stats().slots_in_use == 2


def page_bytes(layers: int, kv_heads: int, page_tokens: int, head_dim: int = 16) -> int:
    return 2 * layers * page_tokens * kv_heads * head_dim * 4  # keys and values, float32


@pytest.mark.parametrize("tier", ["host", "disk"])
def test_a_stream_moved_to_another_tier_and_back_scores_bit_exactly(tier, tmp_path):
    """A pool of the fewest pages one pass may need (a window and a piece) for three streams: every
    switch moves a stream out and brings one back."""
    _, ours = tiny_pair("mistral-gqa", layers=2)  # one kv head
    L, P = 8, 4
    options = dict(host_bytes=None) if tier == "host" else dict(host_bytes=0, disk_dir=str(tmp_path), disk_bytes=1 << 20)
    tight = StreamingEngine(ours, SINK, EngineConfig(window=L, page_tokens=P, pool_bytes=5 * page_bytes(2, 1, P),
                                                     **options))
    assert tight.pool.capacity == 5
    roomy = StreamingEngine(ours, SINK, EngineConfig(window=L, page_tokens=P, slots=4))
    streams = {s: random_lines(4 * L, seed=30 + i) for i, s in enumerate("abc")}
    for step in range(max(len(v) for v in streams.values())):
        for s, lines in streams.items():
            if step < len(lines):
                x, y = tight.score([Chunk(s, lines[step])])[0], roomy.score([Chunk(s, lines[step])])[0]
                assert torch.equal(x.logprobs, y.logprobs) and torch.equal(x.entropy, y.entropy)
                assert not x.restarted
    stats = tight.stats()
    assert stats.offloads > 10 and stats.restores == stats.offloads - 2 and stats.forgotten == 0
    on_tier = stats.streams_on_host if tier == "host" else stats.streams_on_disk
    assert on_tier == 2 and stats.streams_resident == 1
    assert (stats.disk_bytes > 0) == (tier == "disk") and (stats.host_bytes > 0) == (tier == "host")


def test_a_shrunk_window_reads_like_a_stream_that_only_had_its_last_tokens():
    """Under pressure a cold stream keeps its last L' tokens: its next scores equal those of a
    stream whose whole history was those tokens (one layer: the cached keys are the same)."""
    _, ours = tiny_pair("llama-gqa", layers=1)  # two kv heads
    L, P, shrink = 16, 4, 5
    history = [t for line in random_lines(3 * L, seed=8) for t in line][:3 * L]
    nxt = [11, 12, 13, 14]
    engine = StreamingEngine(ours, SINK, EngineConfig(window=L, page_tokens=P, pool_bytes=10 * page_bytes(1, 2, P),
                                                      shrink_to=shrink, host_bytes=0))
    engine.score([Chunk("cold", history)])  # its last 16 tokens, on 4 pages
    engine.score([Chunk("hot", list(range(3, 3 + L)))])  # 4 pages more: 8 of 10
    engine.score([Chunk("hot", list(range(3, 3 + L)))])  # 4 more needed, 2 free: "cold" keeps its last 5 tokens
    stats = engine.stats()
    assert stats.shrunk == 1 and stats.forgotten == 0 and stats.offloads == 0
    shrunk = engine.score([Chunk("cold", nxt)], return_distributions=True)[0]
    fresh = StreamingEngine(ours, SINK, EngineConfig(window=L, page_tokens=P, slots=2))
    fresh.score([Chunk("only", history[-shrink:])])
    short = fresh.score([Chunk("only", nxt)], return_distributions=True)[0]
    assert (shrunk.next_logprobs - short.next_logprobs).abs().max() < 1e-5
    # the first new token is predicted by the hidden state kept from before the shrink (it saw the whole
    # window); every later one by the shrunk window
    assert (shrunk.logprobs[1:] - short.logprobs[1:]).abs().max() < 1e-5


def test_forgetting_comes_last_and_is_counted_and_flagged():
    _, ours = tiny_pair("llama-gqa", layers=2)
    L, P = 8, 4  # pieces of 4 tokens at most: a pass needs at most 5 pages
    engine = StreamingEngine(ours, SINK, EngineConfig(window=L, page_tokens=P, max_chunk_tokens=4, host_bytes=0,
                                                      pool_bytes=5 * page_bytes(2, 2, P)))  # no host tier, no disk
    assert not engine.score([Chunk("a", [5, 6, 7])])[0].restarted
    for s in "bcdef":  # a page each: the sixth stream leaves no room for "a"
        engine.score([Chunk(s, [5, 6, 7])])
    stats = engine.stats()
    assert stats.forgotten == 1 and engine.stream_length("a") == 0 and engine.stream_length("b") == 3
    back = engine.score([Chunk("a", [8])])[0]
    assert back.restarted and back.start == 0  # flagged on the scores after it was forgotten
    assert not engine.score([Chunk("a", [9])])[0].restarted


def test_bfloat16_pages_stay_close_to_float32():
    _, ours = tiny_pair("llama-gqa", layers=2)
    schedule = mixed_schedule(seed=4, window=16)
    full = StreamingEngine(ours, SINK, EngineConfig(window=16, slots=8, page_tokens=4))
    half = StreamingEngine(ours, SINK, EngineConfig(window=16, slots=8, page_tokens=4, kv_dtype=torch.bfloat16))
    assert half.pool.keys.dtype == torch.bfloat16 and half.pool.nbytes() * 2 == full.pool.nbytes()
    worst = max((x.logprobs - y.logprobs).abs().max().item()
                for x, y in zip(feed(full, schedule, 3), feed(half, schedule, 3)))
    assert 0 < worst < 0.05  # bfloat16 keeps 8 bits of mantissa: a small, real difference
