"""Sink + paged-window attention in one Triton kernel: the GPU path of ``PagedAttention``.

What it computes is ``logstream.cache.paged_attention`` (and docs/streaming-semantics.md): for each
row ``b`` of a pass (one stream) and each new token ``i`` of it, one softmax over

* the ``S`` shared sink keys, scored with the query rotated at ``S + w`` (``q_sink``), and
* the row's gathered window pages (``table[b, :count[b]]``, ``P`` keys each), scored with the query
  rotated at its stable position (``q_win``); gathered key ``j`` is visible to token ``i`` when
  ``0 <= from_page[b] + i - j <= min(span[b] + i, L)``: the rolling window and causality in one test,
  no mask in memory.

This pass's keys are in their pages already (``kernels.append`` writes them first), so the window
and the new tokens are one run of keys. Keys are stored rotated at stable positions, as the torch
path stores them: the inner loop is a load and two dots, and the only per-token rotation is the
query's, done once per layer outside (rotating keys on load would cost a rotation per key per query
block; positions stay small because the engine rebases a stream every 16k tokens).

Layout of a program: one KV head of one row and a block of query rows, where the ``G`` query heads
that share the KV head are laid out as ``G * T`` rows (grouped-query attention: each key is loaded
once for all of them). Scores and the running softmax are float32 whatever the storage dtype.

The split-K ("flash-decoding") variant cuts a row's pages into ``splits`` parts, one program each,
and merges their partial results by log-sum-exp: for one or few tokens per stream and few streams,
where one program per (row, head) would leave most of the device idle.

Sections in the order of Triton's tutorials: the kernel, the launcher, the torch reference. The test
is ``tests/test_kernels.py``, the benchmark ``benchmarks/kernel_bench.py``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * log2(e)): exp2 is the device's native instruction


@triton.jit
def _paged_attention_kernel(
    QWin, QSink, Keys, Values, SinkK, SinkV, Table, Count, FromPage, Span, Out, Lse,
    stride_qb, stride_qh, stride_qt, stride_sb, stride_sh, stride_st,
    stride_kn, stride_kp, stride_kh, stride_skh, stride_sks, stride_tb,
    stride_os, stride_ob, stride_oh, stride_ot, stride_ls, stride_lb, stride_lh,
    T, S, L, pages_per_split,
    G: tl.constexpr, HKV: tl.constexpr, HD: tl.constexpr, P: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr, PRECISION: tl.constexpr, PARTIAL: tl.constexpr,
):
    block, bh, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, h = bh // HKV, bh % HKV
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)  # query rows: head h*G + rows // T, token rows % T
    row_ok = rows < G * T
    head, i = h * G + rows // T, rows % T
    dims = tl.arange(0, HD)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of the scores (natural log units)
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp(score - m_i)
    acc = tl.zeros([BLOCK_M, HD], tl.float32)

    # The sinks, in the first split only: always visible, so every row's softmax has a finite max.
    if split == 0:
        q = tl.load(QSink + b * stride_sb + head[:, None] * stride_sh + i[:, None] * stride_st + dims[None, :],
                    mask=row_ok[:, None], other=0.0)
        for s0 in range(0, S, BLOCK_S):
            keys_at = s0 + tl.arange(0, BLOCK_S)
            k_ok = keys_at < S
            k = tl.load(SinkK + h * stride_skh + keys_at[:, None] * stride_sks + dims[None, :],
                        mask=k_ok[:, None], other=0.0)
            v = tl.load(SinkV + h * stride_skh + keys_at[:, None] * stride_sks + dims[None, :],
                        mask=k_ok[:, None], other=0.0)
            scores = tl.dot(q, tl.trans(k.to(q.dtype)), input_precision=PRECISION)
            scores = tl.where(k_ok[None, :], scores, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(scores, 1))
            alpha = tl.exp2((m_i - m_new) * 1.4426950408889634)
            p = tl.exp2((scores - m_new[:, None]) * 1.4426950408889634)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(q.dtype), v.to(q.dtype), input_precision=PRECISION)
            m_i = m_new

    # The window: this split's share of the row's pages.
    q = tl.load(QWin + b * stride_qb + head[:, None] * stride_qh + i[:, None] * stride_qt + dims[None, :],
                mask=row_ok[:, None], other=0.0)
    position = tl.load(FromPage + b) + i  # [BLOCK_M]: token i's index counted from the first page
    reach = tl.minimum(tl.load(Span + b) + i, L)  # how far back it sees: w = min(t - first, L)
    first_page = split * pages_per_split
    last_page = tl.minimum(first_page + pages_per_split, tl.load(Count + b))
    offsets = tl.arange(0, P)
    for page_at in range(first_page, last_page):
        page = tl.load(Table + b * stride_tb + page_at).to(tl.int64)
        at = page * stride_kn + offsets[:, None] * stride_kp + h * stride_kh + dims[None, :]
        k = tl.load(Keys + at)
        v = tl.load(Values + at)
        scores = tl.dot(q, tl.trans(k.to(q.dtype)), input_precision=PRECISION)
        back = position[:, None] - (page_at * P + offsets)[None, :]  # distance from query to key
        scores = tl.where((back >= 0) & (back <= reach[:, None]), scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a split may not have seen a key yet
        alpha = tl.exp2((m_i - m_safe) * 1.4426950408889634)
        p = tl.exp2((scores - m_safe[:, None]) * 1.4426950408889634)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(q.dtype), v.to(q.dtype), input_precision=PRECISION)
        m_i = m_new

    out_at = split * stride_os + b * stride_ob + head[:, None] * stride_oh + i[:, None] * stride_ot + dims[None, :]
    if PARTIAL:  # unnormalised parts and their log-sum-exps, merged by ``_merge_splits``
        tl.store(Out + out_at, acc / tl.maximum(l_i, 1e-30)[:, None], mask=row_ok[:, None])
        lse = tl.where(l_i > 0, m_i + tl.log(tl.maximum(l_i, 1e-30)), float("-inf"))
        tl.store(Lse + split * stride_ls + b * stride_lb + head * stride_lh + i, lse, mask=row_ok)
    else:
        tl.store(Out + out_at, (acc / l_i[:, None]).to(Out.dtype.element_ty), mask=row_ok[:, None])


def paged_attention(q_win: Tensor, q_sink: Tensor, keys: Tensor, values: Tensor, sink_k: Tensor, sink_v: Tensor,
                    table: Tensor, count: Tensor, from_page: Tensor, span: Tensor, window: int,
                    splits: int | None = None) -> Tensor:
    """Attention of a pass's new tokens over the sinks and their paged windows.

    q_win, q_sink: [B, H, T, hd], already rotated (and scaled by 1/sqrt(hd)): at the token's stable
        position for the window, at ``S + w`` for the sinks; the last dimension contiguous.
    keys, values: one layer's pool pages [pages, P, Hkv, hd] (any float dtype), this pass's keys in.
    sink_k, sink_v: [Hkv, S, hd]. table: [B, n] pool pages of each row, oldest first (int32 or int64).
    count: [B] pages of each row in ``table``. from_page: [B] = first new token - first page's first
        token. span: [B] = ``min(first new token - first, L)``. window: L.
    splits: programs per (row, KV head) along the pages; None: ``choose_splits``.
    Returns [B, H, T, hd] in q's dtype.
    """
    B, H, T, hd = q_win.shape
    _, P, Hkv, _ = keys.shape
    G, S = H // Hkv, sink_k.shape[1]
    if H % Hkv or hd & (hd - 1) or P & (P - 1) or hd < 16 or P < 16:
        raise ValueError(f"the Triton kernel needs H a multiple of Hkv and head_dim and page_tokens powers of two "
                         f"of at least 16 (got H={H}, Hkv={Hkv}, head_dim={hd}, page_tokens={P})")
    if q_win.stride(-1) != 1 or q_sink.stride(-1) != 1 or keys.stride(-1) != 1 or sink_k.stride(-1) != 1:
        raise ValueError("the last dimension of every tensor must be contiguous")
    if values.stride() != keys.stride() or sink_v.stride() != sink_k.stride():
        raise ValueError("keys and values must share one layout")
    n_pages = table.shape[1]
    splits = choose_splits(B, Hkv, G * T, n_pages, q_win.device) if splits is None else max(1, min(splits, n_pages))
    per_split = triton.cdiv(n_pages, splits)
    splits = triton.cdiv(n_pages, per_split) if n_pages else 1
    BLOCK_M = max(16, min(64, triton.next_power_of_2(G * T)))
    grid = (triton.cdiv(G * T, BLOCK_M), B * Hkv, splits)
    partial = splits > 1
    if partial:
        out = torch.empty((splits, B, H, T, hd), device=q_win.device, dtype=torch.float32)
        lse = torch.empty((splits, B, H, T), device=q_win.device, dtype=torch.float32)
    else:
        out = torch.empty((1, B, H, T, hd), device=q_win.device, dtype=q_win.dtype)
        lse = out  # not written
    precision = "ieee" if q_win.dtype == torch.float32 else "tf32"  # float32: exact products, no TF32
    _paged_attention_kernel[grid](
        q_win, q_sink, keys, values, sink_k, sink_v, table, count, from_page, span, out, lse,
        *q_win.stride()[:3], *q_sink.stride()[:3], *keys.stride()[:3], *sink_k.stride()[:2], table.stride(0),
        *out.stride()[:4], *(lse.stride()[:3] if partial else (0, 0, 0)),
        T, S, window, per_split,
        G=G, HKV=Hkv, HD=hd, P=P, BLOCK_M=BLOCK_M, BLOCK_S=max(16, min(64, triton.next_power_of_2(S))),
        PRECISION=precision, PARTIAL=partial,
    )
    return _merge_splits(out, lse).to(q_win.dtype) if partial else out[0]


def choose_splits(B: int, Hkv: int, rows: int, n_pages: int, device: torch.device) -> int:
    """Split the pages when one program per (row, KV head, query block) would not fill the device:
    aim at two programs per multiprocessor, with at least 4 pages a split. 1 off CUDA."""
    if device.type != "cuda" or n_pages < 8:
        return 1
    programs = triton.cdiv(rows, 64) * B * Hkv
    target = 2 * torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(n_pages // 4, target // max(programs, 1)))


def _merge_splits(out: Tensor, lse: Tensor) -> Tensor:
    """Softmax over all keys = each split's softmax weighted by its share of the exp-sum."""
    top = lse.amax(0)  # finite: split 0 saw the sinks
    weights = (lse - top).exp()  # [splits, B, H, T]; 0 for a split that saw no key
    return (out * weights[..., None]).sum(0) / weights.sum(0)[..., None]


def paged_attention_reference(q_win: Tensor, q_sink: Tensor, keys: Tensor, values: Tensor, sink_k: Tensor,
                              sink_v: Tensor, table: Tensor, count: Tensor, from_page: Tensor, span: Tensor,
                              window: int) -> Tensor:
    """The same attention in plain torch, one row and one head at a time, float32: the oracle of the
    kernel's tests (itself checked against ``PagedAttention``'s torch path in those tests)."""
    B, H, T, _ = q_win.shape
    Hkv, S = sink_k.shape[0], sink_k.shape[1]
    G = H // Hkv
    out = torch.empty(q_win.shape, dtype=torch.float32, device=q_win.device)
    i = torch.arange(T, device=q_win.device)
    for b in range(B):
        pages = table[b, :int(count[b])].long()
        k = keys[pages].flatten(0, 1).float()  # [W, Hkv, hd]
        v = values[pages].flatten(0, 1).float()
        back = int(from_page[b]) + i[:, None] - torch.arange(k.shape[0], device=k.device)[None, :]
        visible = (back >= 0) & (back <= torch.clamp(int(span[b]) + i, max=window)[:, None])  # [T, W]
        for head in range(H):
            kv = head // G
            scores = torch.cat((q_sink[b, head].float() @ sink_k[kv].float().T,
                                (q_win[b, head].float() @ k[:, kv].T).masked_fill(~visible, float("-inf"))), dim=-1)
            weights = torch.softmax(scores, dim=-1)
            out[b, head] = weights[:, :S] @ sink_v[kv].float() + weights[:, S:] @ v[:, kv]
    return out.to(q_win.dtype)
