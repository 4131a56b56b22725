"""Sink + rolling-window attention for a batch of streams: the torch reference path.

For query token ``t`` of a stream (0-based stream index) with window ``w = min(t, L)``, the model
must see ``sink ++ x[t-w .. t]`` laid out contiguously (see docs/streaming-semantics.md):
the query sits at position ``S + w``, window token ``p`` at ``S + w - (t - p)``, sink ``i`` at ``i``.

RoPE scores depend only on the difference of the two positions, so the engine never moves a key:
  * window keys are rotated once, when written, at position ``p - base`` (``base`` is a per-stream
    offset that keeps positions small, see ``SlotPool``/``StreamingEngine.rebase``);
  * the query is rotated twice: at ``t - base`` to score window keys (distance ``t - p``) and at
    ``S + w`` to score the sink keys, which were rotated at ``0 .. S-1`` (distance ``S + w - i``).

One softmax runs over three blocks of keys: the shared sink prefix, the stream's ring buffer as
it was before this call, and the keys of this call's own new tokens (causal). The new keys are
written into the ring after the layer's attention, in place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ..model.llama import Rotary, apply_rope
from .pool import SlotPool
from .sink import SinkPrefix


@dataclass
class BatchPlan:
    """Which streams a forward pass covers and where their tokens go. Built once per forward."""

    slots: Tensor  # [B] pool slot of each row
    starts: Tensor  # [B] stream index of each row's first new token (= tokens seen before)
    lengths: Tensor  # [B] number of new tokens per row (rows are right-padded to T)
    bases: Tensor  # [B] RoPE base offset per row
    window: int
    sink_length: int

    @property
    def batch(self) -> int:
        return self.slots.shape[0]

    @property
    def width(self) -> int:
        return int(self.lengths.max())


class StreamingAttention:
    """The attention backend that ``Transformer.hidden_states`` calls for every layer."""

    def __init__(self, plan: BatchPlan, pool: SlotPool, sink: SinkPrefix, rotary: Rotary, dtype: torch.dtype):
        self.pool, self.sink = pool, sink
        device = pool.device
        T, L, S = plan.width, plan.window, plan.sink_length
        i = torch.arange(T, device=device)
        t = plan.starts[:, None] + i  # [B, T] stream index of every new token
        self.valid = i[None, :] < plan.lengths[:, None]  # [B, T]

        # Rotations: window distance from stable positions, sink distance from S + w.
        self.cos_win, self.sin_win = (x[:, None] for x in rotary.cos_sin(t - plan.bases[:, None], dtype))
        w = torch.clamp(t, max=L)
        self.cos_sink, self.sin_sink = (x[:, None] for x in rotary.cos_sin(S + w, dtype))

        # Ring position j holds the token at distance d_j = ((start - 1 - j) mod L) + 1 before the
        # row's first new token. Query i may see it if it is filled (d_j <= start) and inside its
        # window (d_j + i <= L).
        j = torch.arange(L, device=device)
        d = torch.remainder(plan.starts[:, None] - 1 - j, L) + 1  # [B, L]
        limit = torch.minimum(plan.starts[:, None, None], L - i[None, :, None])  # [B, T, 1]
        ring_mask = d[:, None, :] <= limit  # [B, T, L]

        # New tokens: causal, at most L back, and never a padded key.
        ii, jj = i[:, None], i[None, :]
        chunk = (jj <= ii) & (ii - jj <= L)
        chunk_mask = chunk[None] & self.valid[:, None, :]  # [B, T, T]
        # As additive biases (0 or -inf), broadcast over KV heads and query heads: [B, 1, 1, T, keys].
        # Built once, used by every layer.
        self.ring_bias = _bias(ring_mask, dtype)
        self.chunk_bias = _bias(chunk_mask, dtype)

        # Where the new keys go: only each row's last min(n, L) tokens survive in the ring.
        keep = self.valid & (i[None, :] >= plan.lengths[:, None] - L)
        rows, cols = keep.nonzero(as_tuple=True)
        self.write_rows, self.write_cols = rows, cols
        self.write_slots = plan.slots[rows]
        self.write_ring = torch.remainder(t[rows, cols], L)

        self.slots = plan.slots
        self.contiguous_slots = _as_range(plan.slots)

    def _ring(self, tensor: Tensor) -> Tensor:
        """The rows' windows of one layer: a view when the slots are consecutive, else a gather."""
        if self.contiguous_slots is not None:
            first, count = self.contiguous_slots
            return tensor.narrow(0, first, count)
        return tensor.index_select(0, self.slots)

    def __call__(self, layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, H, T, hd = q.shape
        Hkv = k.shape[1]
        q = q * (1.0 / math.sqrt(hd))  # scale the queries once instead of every score

        # Grouped-query attention: the G = H / Hkv query heads sharing a KV head are laid out as
        # G*T rows against that head's keys, so every product is a plain batched matmul.
        q_win = apply_rope(q, self.cos_win, self.sin_win).reshape(B, Hkv, -1, hd)
        q_sink = apply_rope(q, self.cos_sink, self.sin_sink).reshape(B, Hkv, -1, hd)
        k_new = apply_rope(k, self.cos_win, self.sin_win)
        ring_k, ring_v = self._ring(self.pool.keys[layer]), self._ring(self.pool.values[layer])
        sink_k, sink_v = self.sink.keys[layer], self.sink.values[layer]

        # One softmax over [sink | ring | new] keys, computed block by block without concatenating
        # them: each block returns its normalised output and log-sum-exp, and the blocks are merged
        # with weights exp(lse_b - logsumexp_b lse_b) (the "online softmax" of FlashAttention).
        blocks = (
            _attend_block(q_sink, sink_k, sink_v, None),  # sinks (shared by every row): always visible
            _attend_block(q_win, ring_k, ring_v, self.ring_bias),  # the ring as it was before this call
            _attend_block(q_win, k_new, v, self.chunk_bias),  # this call's tokens, causal
        )
        lse = torch.stack([b[1] for b in blocks])  # [3, B, Hkv, G*T, 1]
        weights = torch.softmax(lse, dim=0)  # finite: the sinks are always seen
        out = sum(o * w for (o, _), w in zip(blocks, weights)).to(q.dtype)

        # Append this call's keys and values to the ring, in place (after reading it above).
        self.pool.keys[layer][self.write_slots, :, self.write_ring] = k_new[self.write_rows, :, self.write_cols]
        self.pool.values[layer][self.write_slots, :, self.write_ring] = v[self.write_rows, :, self.write_cols]
        return out.reshape(B, H, T, hd)


def _bias(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """[B, T, K] mask -> [B, 1, 1, T, K] additive bias: 0 where visible, -inf where not."""
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
    return bias[:, None, None]


def _attend_block(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None) -> tuple[Tensor, Tensor]:
    """Softmax attention of q over one block of keys, in plain torch.

    Returns the normalised output [B, Hkv, R, hd] and the log-sum-exp of the scores [B, Hkv, R, 1]
    (float32), -inf for rows that see no key of this block (their output is 0).
    """
    s = torch.matmul(q, k.transpose(-1, -2))
    if bias is not None:  # rows are G query heads x T tokens; one [T, K] bias serves every head
        s.unflatten(2, (-1, bias.shape[-2])).add_(bias)
    m = s.amax(-1, keepdim=True)
    m = m.masked_fill(m == float("-inf"), 0.0)
    e = s.sub_(m).exp_()
    z = e.sum(-1, keepdim=True, dtype=torch.float32)
    out = torch.matmul(e, v).float() / z.clamp_min(torch.finfo(torch.float32).tiny)
    return out, m.float() + z.log()


def _as_range(slots: Tensor) -> tuple[int, int] | None:
    values = slots.tolist()
    first = values[0]
    if values == list(range(first, first + len(values))):
        return first, len(values)
    return None
