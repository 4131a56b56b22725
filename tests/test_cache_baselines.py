"""The benchmark's comparison methods against real ``transformers`` models (float32, CPU).

Every method reads the text ``SINK ++ stream`` (the sink tokens open it, as BOS opens a document);
see logstream/cache/baselines.py. Oracles: a full dense forward (dense cache; sliding window until
it fills), ``dense_window_logprobs`` (re-computation) and, for a filled sliding window, a
``transformers`` forward per token over a DynamicCache holding exactly the last L tokens' keys,
re-rotated to positions inside the cache as in StreamingLLM's window attention.
"""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from logstream.cache import Chunk
from logstream.cache.baselines import (
    CacheBudgetExceeded, DenseCacheScorer, RecomputeWindowScorer, SlidingWindowScorer,
)
from models import random_lines, tiny_pair
from oracle import _rope, dense_window_logprobs

ATOL = 1e-4
SINK = [1, 7, 9]
S = len(SINK)
NAMES = ["llama-gqa", "qwen2-mha", "mistral-gqa"]  # GQA, biases + tied embeddings, one KV head


def chunked(lines: list[list[int]], how: str) -> list[list[int]]:
    flat = [t for line in lines for t in line]
    return {"token": [[t] for t in flat], "line": lines, "all": [flat]}[how]


def run(scorer, chunks: list[list[int]], stream: str = "s"):
    """-> (next-token distributions [n, V], token log-probs [n], entropies [n]) over the stream."""
    results = [scorer.score([Chunk(stream, c)], return_distributions=True)[0] for c in chunks]
    return (torch.cat([r.next_logprobs for r in results]), torch.cat([r.logprobs for r in results]),
            torch.cat([r.entropy for r in results]))


@torch.no_grad()
def full_forward(hf, text: list[int]) -> torch.Tensor:
    """[len(text), V]: the distribution after each token of a dense forward over the whole text."""
    return torch.log_softmax(hf(torch.tensor([text])).logits[0].float(), -1)


@torch.no_grad()
def window_cache_logprobs(hf, text: list[int], window: int) -> torch.Tensor:
    """[len(text), V]: each token run on a cache of exactly the last `window` tokens' keys/values.

    Keys are kept un-rotated and re-rotated every step to positions 0..w-1 inside the cache, the
    query at w (StreamingLLM's window attention); the keys a token leaves behind are the ones it got
    in its own windowed context.
    """
    n_layers = hf.config.num_hidden_layers
    keys = [[] for _ in range(n_layers)]  # un-rotated, one [1, Hkv, 1, hd] per token
    values = [[] for _ in range(n_layers)]
    out = []
    for token in text:
        w = len(keys[0])
        cache = DynamicCache()
        for i in range(n_layers):
            if w:
                cache.update(_rope(hf, torch.cat(keys[i], 2), torch.arange(w)), torch.cat(values[i], 2), i)
        logits = hf(input_ids=torch.tensor([[token]]), position_ids=torch.tensor([[w]]),
                    past_key_values=cache, use_cache=True).logits[0, -1].float()
        out.append(torch.log_softmax(logits, -1))
        for i in range(n_layers):
            keys[i].append(_rope(hf, cache.layers[i].keys[:, :, -1:], torch.tensor([-w])))
            values[i].append(cache.layers[i].values[:, :, -1:])
            del keys[i][:-window], values[i][:-window]
    return torch.stack(out)


def expected_token_logprobs(dist_after_text: torch.Tensor, tokens: list[int]) -> torch.Tensor:
    """Stream token t is scored by the distribution after text token S - 1 + t."""
    return dist_after_text[S - 1:S - 1 + len(tokens)].gather(1, torch.tensor(tokens)[:, None])[:, 0]


# --- dense cache ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("how", ["token", "line", "all"])
def test_dense_cache_equals_transformers_full_forward(name, how):
    hf, ours = tiny_pair(name, layers=2)
    lines = random_lines(45, seed=1)
    tokens = [t for line in lines for t in line]
    dist, token_lp, entropy = run(DenseCacheScorer(ours, SINK), chunked(lines, how))
    reference = full_forward(hf, SINK + tokens)
    assert (dist - reference[S:]).abs().max() < ATOL
    # Including the first token, scored from the sink alone.
    assert (token_lp - expected_token_logprobs(reference, tokens)).abs().max() < ATOL
    predicting = reference[S - 1:-1]
    assert (entropy + (predicting.exp() * predicting).sum(-1)).abs().max() < ATOL


def test_dense_cache_budget_raises_before_changing_anything():
    _, ours = tiny_pair("llama-gqa", layers=2)
    per_token = 2 * 2 * 2 * 16 * 4  # K and V, 2 layers, 2 KV heads, head_dim 16, float32
    budget = 20 * per_token + 64 * 4  # 20 tokens of keys/values plus the last hidden state
    dense = DenseCacheScorer(ours, SINK, budget_bytes=budget)
    dense.score([Chunk("s", list(range(10, 25)))])  # 3 + 15 = 18 tokens: fits
    assert dense.nbytes() == 18 * per_token + 64 * 4
    with pytest.raises(CacheBudgetExceeded, match="budget"):
        dense.score([Chunk("s", [30, 31, 32])])  # 21 would not
    assert dense.stream_length("s") == 15 and dense.nbytes() == 18 * per_token + 64 * 4
    dense.score([Chunk("s", [30, 31])])  # exactly at the budget is allowed
    assert dense.nbytes() == budget


# --- sliding window without sinks -------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_sliding_window_before_it_fills_equals_the_dense_forward(name):
    hf, ours = tiny_pair(name, layers=2)
    lines = random_lines(40, seed=2)
    tokens = [t for line in lines for t in line]
    dist, token_lp, _ = run(SlidingWindowScorer(ours, SINK, window=S + len(tokens)), lines)
    reference = full_forward(hf, SINK + tokens)
    assert (dist - reference[S:]).abs().max() < ATOL
    assert (token_lp - expected_token_logprobs(reference, tokens)).abs().max() < ATOL


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("how", ["token", "line", "all"])
def test_sliding_window_after_it_fills_equals_a_cache_of_the_last_L_tokens(name, how):
    hf, ours = tiny_pair(name, layers=3)
    L = 8
    lines = random_lines(5 * L, seed=3)
    tokens = [t for line in lines for t in line]
    sliding = SlidingWindowScorer(ours, SINK, window=L)
    dist, token_lp, _ = run(sliding, chunked(lines, how))
    reference = window_cache_logprobs(hf, SINK + tokens, L)
    assert (dist - reference[S:]).abs().max() < ATOL
    assert (token_lp - expected_token_logprobs(reference, tokens)).abs().max() < ATOL
    # The window really evicted: far from the opening, a dense forward predicts differently.
    assert (dist[-5:] - full_forward(hf, SINK + tokens)[-5:]).abs().max() > 1e-2
    assert sliding.streams["s"].cached == L


def test_sliding_window_memory_stops_growing_at_L_tokens():
    _, ours = tiny_pair("llama-gqa", layers=2)
    L = 16
    sliding = SlidingWindowScorer(ours, SINK, window=L)
    sizes = []
    for line in random_lines(10 * L, seed=4):
        sliding.score([Chunk("s", line)])
        sizes.append(sliding.nbytes())
    full = L * 2 * 2 * 2 * 16 * 4 + 64 * 4
    assert sizes[0] < full and max(sizes) == full and sizes[-1] == full


# --- sliding window with re-computation -------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_recompute_with_sink_equals_the_dense_window_oracle(name):
    hf, ours = tiny_pair(name, layers=3)
    L = 8
    lines = random_lines(4 * L, seed=5)
    tokens = [t for line in lines for t in line]
    dist, token_lp, _ = run(RecomputeWindowScorer(ours, SINK, window=L, with_sink=True), lines)
    for t in range(len(tokens)):
        assert (dist[t] - dense_window_logprobs(hf, SINK, tokens, t, L)).abs().max() < ATOL, f"t={t}"
    first = full_forward(hf, SINK)[-1, tokens[0]]
    assert abs(token_lp[0] - first) < ATOL
    for t in range(1, len(tokens)):
        assert abs(token_lp[t] - dense_window_logprobs(hf, SINK, tokens, t - 1, L)[tokens[t]]) < ATOL


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2-mha"])
def test_recompute_without_sink_slides_over_the_opening_too(name):
    hf, ours = tiny_pair(name, layers=2)
    L = 8
    lines = random_lines(3 * L, seed=6)
    tokens = [t for line in lines for t in line]
    text = SINK + tokens
    dist, token_lp, _ = run(RecomputeWindowScorer(ours, SINK, window=L), chunked(lines, "all"))
    for t in range(len(tokens)):
        assert (dist[t] - dense_window_logprobs(hf, [], text, S + t, L)).abs().max() < ATOL, f"t={t}"
    assert abs(token_lp[0] - dense_window_logprobs(hf, [], text, S - 1, L)[tokens[0]]) < ATOL


def test_recompute_lines_skipped_unscored_do_not_change_a_later_score():
    _, ours = tiny_pair("llama-gqa", layers=2)
    lines = random_lines(60, seed=7)
    everything = RecomputeWindowScorer(ours, SINK, window=8)
    sampled = RecomputeWindowScorer(ours, SINK, window=8)
    for i, line in enumerate(lines):
        expected = everything.score([Chunk("s", line)])[0]
        if i % 3 == 2:
            got = sampled.score([Chunk("s", line)])[0]
            assert got.start == expected.start
            assert torch.allclose(got.logprobs, expected.logprobs, atol=1e-6)
        else:
            sampled.advance_unscored([Chunk("s", line)])
    assert sampled.nbytes() == 8 * 9  # only the last L + 1 token ids


# --- every method ---------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda m: DenseCacheScorer(m, SINK), lambda m: SlidingWindowScorer(m, SINK, 8),
    lambda m: RecomputeWindowScorer(m, SINK, 8), lambda m: RecomputeWindowScorer(m, SINK, 8, with_sink=True),
], ids=["dense", "sliding", "recompute", "recompute-sink"])
def test_streams_in_one_call_are_independent_and_empty_chunks_score_nothing(make):
    _, ours = tiny_pair("llama-gqa", layers=2)
    a, b = random_lines(30, seed=8), random_lines(30, seed=9)
    together, alone_a, alone_b = make(ours), make(ours), make(ours)
    for line_a, line_b in zip(a, b, strict=False):
        got_a, empty, got_b = together.score([Chunk("a", line_a), Chunk("a", []), Chunk("b", line_b)])
        assert torch.allclose(got_a.logprobs, alone_a.score([Chunk("a", line_a)])[0].logprobs, atol=1e-5)
        assert torch.allclose(got_b.logprobs, alone_b.score([Chunk("b", line_b)])[0].logprobs, atol=1e-5)
        assert empty.logprobs.numel() == 0 and empty.start == got_a.start + len(line_a)
    assert together.stream_length("a") == sum(map(len, a[:len(b)]))
