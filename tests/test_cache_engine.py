"""The cache engine against real ``transformers`` models (float32, CPU).

See tests/oracle.py for the two oracles and why a dense re-run is the oracle only until the window
fills (or for one-layer models): a multi-layer model's cached keys of the oldest window tokens were
computed when those tokens could still see older ones.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
import torch

from logstream.cache import Chunk, EngineConfig, StreamingEngine
from models import CONFIGS, random_lines, tiny_pair
from oracle import dense_window_logprobs, streaming_llm_logprobs

ATOL = 1e-4
SINK = [1, 7, 9]  # BOS plus two preamble tokens


def chunkings(lines: list[list[int]]) -> dict[str, list[list[int]]]:
    flat = [t for line in lines for t in line]
    many = [sum(lines[i:i + 4], []) for i in range(0, len(lines), 4)]
    return {"token": [[t] for t in flat], "line": lines, "lines": many, "all": [flat]}


def run_stream(engine: StreamingEngine, stream: str, chunks: list[list[int]]):
    results = [engine.score([Chunk(stream, c)], return_distributions=True)[0] for c in chunks]
    return (torch.cat([r.next_logprobs for r in results]), torch.cat([r.logprobs for r in results]),
            torch.cat([r.entropy for r in results]))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_dense_forward_equals_transformers(name):
    hf, ours = tiny_pair(name, layers=2)
    tokens = torch.randint(3, 101, (2, 37))
    with torch.no_grad():
        expected = hf(tokens).logits.float()
    assert (ours(tokens) - expected).abs().max() < ATOL


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("chunking", ["token", "line", "lines", "all"])
def test_unfilled_window_equals_dense_oracle(name, chunking):
    hf, ours = tiny_pair(name, layers=2)
    lines = random_lines(40, seed=1)
    tokens = [t for line in lines for t in line]
    engine = StreamingEngine(ours, SINK, EngineConfig(window=64, slots=2))
    dist, token_lp, _ = run_stream(engine, "s", chunkings(lines)[chunking])
    for t in range(len(tokens)):
        expected = dense_window_logprobs(hf, SINK, tokens, t, window=64)
        assert (dist[t] - expected).abs().max() < ATOL, f"t={t}"
        if t + 1 < len(tokens):
            assert abs(token_lp[t + 1] - expected[tokens[t + 1]]) < ATOL


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("chunking", ["token", "line", "all"])
def test_filled_window_one_layer_equals_dense_oracle(name, chunking):
    """With one layer the cached keys are exactly what a dense re-run computes, at any length.

    The stream runs 6 windows long, across several RoPE rebases, so this checks the ring, the masks
    and the positions (query at S + w, window keys at their true distance) after the window filled.
    """
    hf, ours = tiny_pair(name, layers=1)
    L = 8
    lines = random_lines(6 * L, seed=2)
    tokens = [t for line in lines for t in line]
    engine = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=2, rebase_interval=13, max_chunk_tokens=11))
    dist, _, _ = run_stream(engine, "s", chunkings(lines)[chunking])
    for t in range(len(tokens)):
        assert (dist[t] - dense_window_logprobs(hf, SINK, tokens, t, L)).abs().max() < ATOL, f"t={t}"


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("chunking", ["token", "line", "lines", "all"])
def test_filled_window_equals_streaming_llm_reference(name, chunking):
    hf, ours = tiny_pair(name, layers=3)
    L = 8
    lines = random_lines(5 * L, seed=3)
    tokens = [t for line in lines for t in line]
    engine = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=2, rebase_interval=19))
    dist, token_lp, entropy = run_stream(engine, "s", chunkings(lines)[chunking])
    reference = streaming_llm_logprobs(hf, SINK, tokens, L)
    assert (dist - reference).abs().max() < ATOL
    # The score of token t is read off the distribution after token t-1 (the sink's for t = 0).
    assert torch.allclose(token_lp[1:], reference[:-1].gather(1, torch.tensor(tokens[1:])[:, None])[:, 0],
                          atol=ATOL)
    expected_entropy = -(reference[:-1].exp() * reference[:-1]).sum(-1)
    assert torch.allclose(entropy[1:], expected_entropy, atol=ATOL)


def test_first_token_is_scored_against_the_sink_prefix():
    hf, ours = tiny_pair("llama-gqa", layers=2)
    engine = StreamingEngine(ours, SINK, EngineConfig(window=16, slots=1))
    scores = engine.score([Chunk("s", [42, 17])])[0]
    with torch.no_grad():
        after_sink = torch.log_softmax(hf(torch.tensor([SINK])).logits[0, -1].float(), -1)
    assert abs(scores.logprobs[0] - after_sink[42]) < ATOL
    assert scores.start == 0 and engine.stream_length("s") == 2


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2-mha"])
def test_batched_streams_equal_each_stream_alone(name):
    """One forward pass over several streams with different numbers of new tokens per stream."""
    hf, ours = tiny_pair(name, layers=2)
    L = 8
    streams = {f"s{i}": random_lines(4 * L + 5 * i, seed=10 + i) for i in range(4)}
    batched = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=4))
    rng = random.Random(0)
    cursors = {s: 0 for s in streams}
    collected = {s: [] for s in streams}
    while any(cursors[s] < len(lines) for s, lines in streams.items()):
        batch = []
        for s, lines in streams.items():  # each stream sends 0..3 lines this round
            take = rng.randint(0, 3)
            if cursors[s] < len(lines) and take:
                batch.append(Chunk(s, sum(lines[cursors[s]:cursors[s] + take], [])))
                cursors[s] += take
        if batch:
            for result in batched.score(batch, return_distributions=True):
                collected[result.stream_id].append(result.next_logprobs)
    for s, lines in streams.items():
        tokens = [t for line in lines for t in line]
        alone = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=1))
        dist_alone, _, _ = run_stream(alone, s, lines)
        dist_batched = torch.cat(collected[s])
        assert dist_batched.shape == (len(tokens), 101)
        assert (dist_batched - dist_alone).abs().max() < 1e-5
        assert (dist_batched - streaming_llm_logprobs(hf, SINK, tokens, L)).abs().max() < ATOL


def test_same_stream_twice_in_one_call_is_taken_in_order():
    _, ours = tiny_pair("llama-gqa", layers=2)
    lines = random_lines(30, seed=4)
    a = StreamingEngine(ours, SINK, EngineConfig(window=8, slots=2))
    b = StreamingEngine(ours, SINK, EngineConfig(window=8, slots=2))
    together = a.score([Chunk("s", line) for line in lines])
    apart = [b.score([Chunk("s", line)])[0] for line in lines]
    for x, y in zip(together, apart):
        assert x.start == y.start
        assert torch.allclose(x.logprobs, y.logprobs, atol=1e-5)


@pytest.mark.parametrize("layout", ["slots", "paged"])
def test_pool_memory_is_fixed_for_a_long_stream(layout):
    _, ours = tiny_pair("llama-gqa", layers=2)
    L = 16
    engine = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=3, rebase_interval=40, layout=layout,
                                                      page_tokens=4))
    engine.score([Chunk("s", [5])])

    def snapshot():
        return [(id(t), t.data_ptr(), t.numel() * t.element_size(), t.shape) for t in engine.pool.tensors()]

    before = snapshot()
    rng = random.Random(5)
    while engine.stream_length("s") < 20 * L:
        engine.score([Chunk("s", [rng.randrange(3, 101) for _ in range(rng.randint(1, 7))])])
    assert snapshot() == before
    assert engine.pool.nbytes() == sum(b[2] for b in before)
    # one slot; or the pages of one window (L / 4 of them, and one the window straddles)
    assert engine.stats().slots_in_use == (1 if layout == "slots" else L // 4 + 1)


def test_evicted_stream_returns_bit_exactly():
    """One slot for three streams: every switch offloads a window to host memory and brings one back."""
    _, ours = tiny_pair("mistral-gqa", layers=2)
    L = 8
    streams = {s: random_lines(5 * L, seed=20 + i) for i, s in enumerate("abc")}
    tight = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=1, layout="slots"))
    roomy = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=3, layout="slots"))
    for step in range(max(len(v) for v in streams.values())):
        for s, lines in streams.items():
            if step < len(lines):
                x = tight.score([Chunk(s, lines[step])])[0]
                y = roomy.score([Chunk(s, lines[step])])[0]
                assert torch.equal(x.logprobs, y.logprobs) and torch.equal(x.entropy, y.entropy)
    stats = tight.stats()
    assert stats.offloads > 10 and stats.restores == stats.offloads - 2
    assert stats.streams_on_host == 2 and stats.streams_resident == 1

    # The bytes that come back are the bytes that left.
    resident = next(s for s, st in tight.pool.streams.items() if st.slot is not None)
    slot = tight.pool.streams[resident].slot
    saved = (tight.pool.keys[:, slot].clone(), tight.pool.values[:, slot].clone())
    other = next(s for s in streams if s != resident)
    tight.score([Chunk(other, [5])])  # evicts `resident`
    assert tight.pool.streams[resident].slot is None
    tight.score([Chunk(resident, [6])])
    slot = tight.pool.streams[resident].slot
    ring = (tight.stream_length(resident) - 1) % L
    keep = [i for i in range(L) if i != ring]  # all but the position the new token just wrote
    assert torch.equal(tight.pool.keys[:, slot][:, :, keep], saved[0][:, :, keep])
    assert torch.equal(tight.pool.values[:, slot][:, :, keep], saved[1][:, :, keep])


def test_a_short_stream_offloads_only_its_tokens_and_returns_exactly_into_a_used_slot():
    """Sessions are short: a window holding 3 tokens costs host memory for 3, not L. Coming back
    into a slot a long stream filled, the ring positions past its tokens hold that stream's data
    and must stay masked out."""
    _, ours = tiny_pair("llama-gqa", layers=2)
    L = 16
    tight = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=1, layout="slots"))
    roomy = StreamingEngine(ours, SINK, EngineConfig(window=L, slots=4, layout="slots"))
    long_lines = random_lines(6 * L, seed=41)
    short_lines = random_lines(8, seed=42)
    per_token = 2 * 2 * ours.args.n_kv_heads * ours.args.head_dim * 4  # keys + values, 2 layers, float32
    for step, line in enumerate(long_lines):
        for engine in (tight, roomy):
            engine.score([Chunk("long", line)])
        if step < len(short_lines):
            x, y = (e.score([Chunk("short", short_lines[step])])[0] for e in (tight, roomy))
            assert torch.equal(x.logprobs, y.logprobs) and torch.equal(x.entropy, y.entropy)
            if step == 3:  # "short" is now resident and "long", past a full window, on the host
                assert tight.stream_length("long") > L
                assert tight.stats().host_bytes == L * per_token + ours.args.dim * 4
        x, y = (e.score([Chunk("short", [7])])[0] for e in (tight, roomy))
        assert torch.equal(x.logprobs, y.logprobs)
    short_length = tight.stream_length("short")
    tight.score([Chunk("long", [9])])  # "short" goes to the host, with only its tokens
    assert tight.stats().host_bytes == min(short_length, L) * per_token + ours.args.dim * 4


def test_host_budget_forgets_least_recently_used_streams():
    _, ours = tiny_pair("llama-gqa", layers=2)
    engine = StreamingEngine(ours, SINK, EngineConfig(window=8, slots=1, host_bytes=1, layout="slots"))
    for s in "abcd":
        engine.score([Chunk(s, [5, 6, 7])])
    stats = engine.stats()
    # Only the most recently offloaded stream is kept over budget; older ones are forgotten.
    assert stats.streams_on_host == 1 and stats.forgotten == 2
    assert engine.stream_length("a") == 0 and engine.stream_length("c") == 3


def test_more_streams_than_slots_in_one_call():
    _, ours = tiny_pair("llama-gqa", layers=2)
    many = StreamingEngine(ours, SINK, EngineConfig(window=8, slots=2))
    one_by_one = StreamingEngine(ours, SINK, EngineConfig(window=8, slots=8))
    chunks = [Chunk(f"s{i}", [3 + i, 4 + i, 5]) for i in range(5)]
    got = many.score(chunks)
    for chunk, result in zip(chunks, got):
        expected = one_by_one.score([chunk])[0]
        assert result.stream_id == chunk.stream_id
        assert torch.allclose(result.logprobs, expected.logprobs, atol=1e-5)


def test_pool_size_in_bytes_and_model_window_check():
    _, ours = tiny_pair("llama-gqa", layers=2)
    per_slot = 2 * 2 * 2 * 8 * 16 * 4 + 64 * 4  # K and V, 2 layers, 2 kv heads, L=8, head_dim 16; + hidden
    engine = StreamingEngine(ours, SINK, EngineConfig(window=8, pool_bytes=3 * per_slot + 5, layout="slots"))
    assert engine.pool.slots == 3
    with pytest.raises(ValueError, match="holds no window"):
        StreamingEngine(ours, SINK, EngineConfig(window=8, pool_bytes=per_slot - 1, layout="slots"))
    per_page = 2 * 2 * 2 * 4 * 16 * 4  # K and V, 2 layers, 4 tokens a page, 2 kv heads, head_dim 16
    paged = StreamingEngine(ours, SINK, EngineConfig(window=8, pool_bytes=5 * per_page + 7, page_tokens=4))
    assert paged.pool.capacity == 5
    with pytest.raises(ValueError, match="raise cache.pool_bytes"):  # a window of 8 and a piece of 8: 5 pages of 4
        StreamingEngine(ours, SINK, EngineConfig(window=8, pool_bytes=5 * per_page - 1, page_tokens=4))
    with pytest.raises(ValueError, match="sliding_window"):
        StreamingEngine(ours, SINK, EngineConfig(window=8), model_window=10)


def test_empty_chunk_changes_nothing():
    _, ours = tiny_pair("llama-gqa", layers=2)
    engine = StreamingEngine(ours, SINK, EngineConfig(window=8, slots=2))
    engine.score([Chunk("s", [4, 5])])
    empty = engine.score([Chunk("s", [])])[0]
    assert empty.logprobs.numel() == 0 and empty.start == 2 and engine.stream_length("s") == 2


STEADY_PASSES = r"""
import resource, sys, torch
torch.set_num_threads(1)
from logstream.cache.engine import Chunk, StreamingEngine, keep_freed_memory
from logstream.config import Settings
from logstream.scoring.scorer import load_scorer
scorer = load_scorer(sys.argv[1], device="cpu", dtype="float32")
conf = Settings().cache.engine_config()
engine = StreamingEngine(scorer.loaded.model, scorer.sink_tokens, conf)
line = list(range(5, 22))
streams = [f"s{i}" for i in range(9)]
for sid in streams:  # full windows, as in a long-running service
    while engine.stream_length(sid) < conf.window + 64:
        engine.score([Chunk(sid, line * 16)])
batch = [Chunk(sid, line) for sid in streams]
for _ in range(4):
    engine.score(batch)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    engine.score(batch)
print(keep_freed_memory(), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_steady_passes_reuse_their_memory_instead_of_faulting_it_in_again():
    """Temporaries of a few MB a pass: glibc gave them back and the next pass faulted them in again
    (270-1,965 page faults a pass for 9 full windows, measured); the engine asks it to keep them."""
    from service_helpers import model_dir_or_skip

    done = subprocess.run([sys.executable, "-c", STEADY_PASSES, str(model_dir_or_skip())], capture_output=True,
                          text=True, check=True, timeout=600)
    tuned, faults = done.stdout.split()
    assert tuned == "True" and float(faults) < 50
