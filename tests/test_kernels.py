"""The Triton kernels of kernels/ against their torch references, and the engine on them against its
torch path and the transformers oracle. On a CPU they run in Triton's interpreter (TRITON_INTERPRET=1,
which scripts/test sets): the same kernel code, executed by numpy."""

from __future__ import annotations

import os

import pytest
import torch
from models import random_lines, tiny_pair
from oracle import dense_window_logprobs
from test_paged_cache import SINK, feed, mixed_schedule

from logstream.cache import Chunk, EngineConfig, StreamingEngine

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1",
                                reason="no CUDA device: run with TRITON_INTERPRET=1 (scripts/test does)")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def paged_case(H: int, Hkv: int, T: int, dtype: torch.dtype, seed: int, hd: int = 16, P: int = 16, S: int = 7,
               L: int = 40):
    """A pass of three rows in a pool of random pages, as PagedAttention lays it out: a row whose window
    has slid (its first page partly out of reach, the ring wrapped), a short fresh stream, and a row
    whose page table is padded with page 0."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(dtype).to(DEVICE)

    keys, values = randn(40, P, Hkv, hd), randn(40, P, Hkv, hd)
    sink_k, sink_v = randn(Hkv, S, hd), randn(Hkv, S, hd)
    q_win = randn(3, H, 2, T, hd)[:, :, 0]  # a strided view, as the engine passes it
    q_sink = randn(3, H, T, hd)
    # (stream tokens before the pass, first kept token): lo = max(first, start - L), from = start - lo_page*P
    rows = [(100, 0), (0, 0), (30, 12)]
    table, count, from_page, span = [], [], [], []
    for start, first in rows:
        lo = max(first, start - L)
        n_pages = (start + T - 1) // P - lo // P + 1
        pages = torch.randperm(39, generator=g)[:n_pages] + 1
        table.append(pages.tolist())
        count.append(n_pages)
        from_page.append(start - lo // P * P)
        span.append(min(start - first, L))
    width = max(count)
    table = [t + [0] * (width - len(t)) for t in table]
    as_int = {"dtype": torch.int32, "device": DEVICE}
    return (q_win, q_sink, keys, values, sink_k, sink_v, torch.tensor(table, **as_int), torch.tensor(count, **as_int),
            torch.tensor(from_page, **as_int), torch.tensor(span, **as_int), L)


@pytest.mark.parametrize("H,Hkv", [(4, 2), (4, 4), (4, 1)])
@pytest.mark.parametrize("T", [1, 5, 17])
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_paged_attention_kernel_equals_its_reference(H, Hkv, T, splits, dtype):
    from kernels.paged_attention import paged_attention, paged_attention_reference

    case = paged_case(H, Hkv, T, dtype, seed=H * 100 + Hkv * 10 + T)
    out = paged_attention(*case, splits=splits)
    ref = paged_attention_reference(*case)
    assert out.shape == ref.shape and out.dtype == dtype
    tolerance = 2e-5 if dtype == torch.float32 else 2e-2
    assert (out.float() - ref.float()).abs().max() < tolerance


def test_the_reference_sees_the_window_the_semantics_define():
    """The oracle of the kernel, checked by hand on one row: a query sees the sinks, the keys at most
    ``min(span + i, L)`` back, itself, and nothing after it (a key changed there changes nothing)."""
    from kernels.paged_attention import paged_attention_reference

    q_win, q_sink, keys, values, sink_k, sink_v, table, count, from_page, span, L = paged_case(2, 1, 3, torch.float32, 1)
    before = paged_attention_reference(q_win, q_sink, keys, values, sink_k, sink_v, table, count, from_page, span, L)
    P = keys.shape[1]
    page_of = lambda j: int(table[0, j // P])  # (row 0's gathered key j -> its pool page)
    last = int(from_page[0]) + 2  # token 2 of row 0 is the row's last key; token 0 sees L back from it
    for j, changes in ((last, (False, False, True)), (int(from_page[0]) - L, (True, False, False)),
                       (int(from_page[0]) - L - 1, (False, False, False))):
        changed = values.clone()
        changed[page_of(j), j % P] += 10.0
        after = paged_attention_reference(q_win, q_sink, keys, changed, sink_k, sink_v, table, count, from_page, span, L)
        moved = [(after[0, :, i] - before[0, :, i]).abs().max().item() > 1e-3 for i in range(3)]
        assert tuple(moved) == changes, f"key {j}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_append_kernel_equals_its_reference(dtype):
    from kernels.append import append_kv, append_kv_reference

    g = torch.Generator().manual_seed(3)
    B, Hkv, T, hd, P = 3, 2, 5, 16, 16
    k, v = (torch.randn(B, Hkv, T, hd, generator=g).to(DEVICE) for _ in range(2))
    cos, sin = (torch.randn(B, 2, T, hd, generator=g).to(DEVICE)[:, 0] for _ in range(2))
    source = torch.tensor([0, 1, 2, 5, 6, 10, 11, 12, 13, 14], device=DEVICE)  # rows padded past their tokens
    slot = (torch.randperm(30 * P, generator=g)[:10] + P).to(DEVICE)  # scattered, never page 0
    pools = [torch.zeros(31, P, Hkv, hd, dtype=dtype, device=DEVICE) for _ in range(4)]
    append_kv(k, v, cos, sin, source, slot, pools[0], pools[1])
    append_kv_reference(k, v, cos, sin, source, slot, pools[2], pools[3])
    written = pools[0].view(-1, Hkv, hd)[slot].float()
    assert written.abs().sum() > 0 and pools[0][0].abs().sum() == 0  # the padding page untouched
    # float32: a GPU fuses the rotation's multiply-add (one rounding where torch rounds twice), measured
    # on an H200 as a difference in the last bits; bfloat16: the interpreter may truncate where a GPU rounds
    ulp = 2 ** -20 if dtype == torch.float32 else 2 ** -7
    for ours, ref in ((pools[0], pools[2]), (pools[1], pools[3])):
        assert ((ours.float() - ref.float()).abs() <= ulp * ref.float().abs() + 1e-6).all()


@pytest.mark.parametrize("name", ["llama-gqa", "mistral-gqa", "qwen2-mha"])
def test_the_engine_on_the_kernels_equals_its_torch_path(name):
    """Windows that wrap, pages partly filled, streams of mixed lengths in passes of four, rebased."""
    _, ours = tiny_pair(name, layers=2)
    schedule = mixed_schedule(seed=7, window=40)
    config = {"window": 40, "slots": 8, "page_tokens": 16, "rebase_interval": 53}
    kernels = StreamingEngine(ours.to(DEVICE), SINK, EngineConfig(**config, attention="triton"))
    torch_path = StreamingEngine(ours.to(DEVICE), SINK, EngineConfig(**config, attention="torch"))
    assert kernels.kernels and not torch_path.kernels
    for x, y in zip(feed(kernels, schedule, 4), feed(torch_path, schedule, 4)):
        assert x.stream_id == y.stream_id and x.start == y.start
        assert (x.logprobs - y.logprobs).abs().max() < 1e-4 and (x.entropy - y.entropy).abs().max() < 1e-4


def test_the_engine_on_the_kernels_equals_the_dense_oracle():
    hf, ours = tiny_pair("llama-gqa", layers=1)
    L = 20
    lines = random_lines(3 * L, seed=4)
    tokens = [t for line in lines for t in line]
    engine = StreamingEngine(ours.to(DEVICE), SINK, EngineConfig(window=L, slots=2, page_tokens=16, attention="triton"))
    dist = torch.cat([engine.score([Chunk("s", line)], return_distributions=True)[0].next_logprobs for line in lines])
    for t in range(len(tokens)):
        assert (dist[t] - dense_window_logprobs(hf, SINK, tokens, t, L)).abs().max() < 1e-4, f"t={t}"


def test_the_kernels_refuse_what_they_cannot_run_with_a_way_out(monkeypatch):
    _, ours = tiny_pair("llama-gqa", layers=1)
    ours = ours.to(DEVICE)
    with pytest.raises(ValueError, match="page_tokens.*cache.attention=torch"):
        StreamingEngine(ours, SINK, EngineConfig(window=16, slots=2, page_tokens=5, attention="triton"))
    with pytest.raises(ValueError, match="layout=paged"):
        StreamingEngine(ours, SINK, EngineConfig(window=16, slots=2, layout="slots", attention="triton"))
    if DEVICE == "cpu":
        monkeypatch.delenv("TRITON_INTERPRET")
        with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
            StreamingEngine(ours, SINK, EngineConfig(window=16, slots=2, page_tokens=16, attention="triton"))
    # auto takes the kernels on CUDA only
    assert StreamingEngine(ours, SINK, EngineConfig(window=16, slots=2, page_tokens=16)).kernels is (DEVICE == "cuda")


def test_the_setting_reaches_the_engine(monkeypatch):
    from logstream.config import Settings

    monkeypatch.setenv("LOGSTREAM_CACHE__ATTENTION", "torch")
    assert Settings().cache.engine_config().attention == "torch"
    monkeypatch.setenv("LOGSTREAM_CACHE__ATTENTION", "cuda-please")
    with pytest.raises(ValueError, match="attention"):
        Settings()
