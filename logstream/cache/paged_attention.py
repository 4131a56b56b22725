"""Sink + window attention over paged windows: the torch path for ``PagedPool``.

The same semantics as ``attention.StreamingAttention`` (docs/streaming-semantics.md), with each
stream's history read through its page table instead of a fixed slot, and fewer, larger operations:

* this pass's keys and values are written into their pages *first*, so a row's visible history
  and its new tokens are one contiguous run of stream tokens ``lo .. start + n - 1`` with
  ``lo = max(first, start - L)``: its pages are gathered (one ``index_select`` per layer, rows
  padded with the zero page) into ``[B, Hkv, W, hd]``, ``W`` = the longest row's pages x ``P``;
  short streams cost what they hold, not ``L``;
* gathered key ``j`` of a row is stream token ``p = lo_page * P + j``; query ``t`` sees it when
  ``max(first, t - L) <= p <= t``: one mask for the window and causality, built once per pass;
* the sink keys need the query rotated elsewhere (distance ``S + w - i``), so their scores are
  computed apart, then concatenated with the window's: one softmax over ``[sink | window]``
  (no log-sum-exp merge of blocks);
* the query's distance to the sinks comes from ``w = min(t - first, L)``: a shrunk window is, to
  the model, the window of a stream that only ever had its last ``L'`` tokens.

Keys are stored rotated at stable positions (``p - base``) as in the slot pool; pages may be stored
in a narrower dtype than the model's (bfloat16) and are widened when gathered.

With ``kernels`` (the engine's choice on CUDA, ``cache.attention``), the appends and the attention
are the Triton kernels of ``kernels/``: one launch each per layer, reading the pages in place
through the page table, no gathered window and no mask in memory.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..model.llama import Rotary, apply_rope_signed
from .attention import _bias
from .pages import PAD_PAGE, PagedPool, PagedStream
from .sink import SinkPrefix
from .transfer import to_device

# softmax attention over blocks of keys with its log-sum-exp: (out [B, H, T, hd], lse [B, H, T])
FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
CHUNK_KEYS = 2048  # the fused path attends to about this many gathered keys at a time (at least a row)


class PagedAttention:
    """The attention backend ``Transformer.hidden_states`` calls for every layer of one pass."""

    def __init__(self, states: list[PagedStream], lengths: list[int], pool: PagedPool, sink: SinkPrefix,
                 rotary: Rotary, dtype: torch.dtype, kernels: bool = False):
        self.pool, self.sink, self.dtype, self.kernels = pool, sink, dtype, kernels
        # torch's fused attention kernel on CPU when this build has it (and the model's dtype is one it takes)
        self.fused = (not kernels and pool.device.type == "cpu" and FLASH_CPU is not None
                      and dtype in (torch.float32, torch.bfloat16))
        device, P, L, S = pool.device, pool.page_tokens, pool.window, sink.length
        T = max(lengths)
        # A pass costs about a fixed number of ops, whatever its size: what is per row or per token is
        # worked out here in Python, and the tensors are made in a few calls.
        starts = [s.length for s in states]
        los = [max(s.first, start - L) for s, start in zip(states, starts)]
        tables, flat, real = [], [], []
        for row, (state, start, lo, n) in enumerate(zip(states, starts, los, lengths)):
            pages, page0 = state.pages, state.page0  # pages of the tokens lo .. start + n - 1
            tables.append(pages[lo // P - page0:(start + n - 1) // P - page0 + 1])
            flat.extend(pages[q // P - page0] * P + q % P for q in range(start, start + n))
            real.extend(range(row * T, row * T + n))
        self.pages_per_row = max(len(t_) for t_ in tables)
        W = self.pages_per_row * P
        table = [page for t_ in tables for page in t_ + [PAD_PAGE] * (self.pages_per_row - len(t_))]
        per_row = to_device([[start - s.base, min(start - s.first, L), start - lo // P * P, n]
                             for s, start, lo, n in zip(states, starts, los, lengths)], device)
        self.table = to_device(table, device)
        self.write_flat = to_device(flat, device)
        # the real (unpadded) tokens as b * T + t of the padded pass, made here from the lengths: a mask's
        # nonzero() would wait for the device (on CUDA) once a pass
        self.real_index = to_device(real, device)
        rel_t, span_t, from_page_t, n_t = per_row.unbind(1)
        if kernels:  # what the kernels read per row instead of a mask: [B] each, and the [B, n] page table
            self.counts = to_device([len(t_) for t_ in tables], device, torch.int32)
            self.from_page, self.span0 = from_page_t.to(torch.int32), span_t.to(torch.int32)
            self.table_2d = self.table.view(len(states), self.pages_per_row).to(torch.int32)

        i = torch.arange(T, device=device)
        self.unpadded = min(lengths) == T  # every row full: the new tokens are taken as they lie
        self.valid = None if self.unpadded else i < n_t[:, None]  # [B, T]
        # the query rotated twice in one call: at t - base for the window, at S + w for the sinks,
        # w = min(t - first, L): the distance to the sinks of a window that holds w tokens
        span = torch.clamp(span_t[:, None] + i, max=L)  # [B, T] = w
        positions = torch.stack((rel_t[:, None] + i, S + span), dim=1)  # [B, 2, T]
        # the table's size from the host's numbers (positions.max() would wait for the device)
        highest = max(max(start - s.base for s, start in zip(states, starts)) + T - 1, S + L)
        cos_table, sin_table = rotary.table(highest + 1, device, dtype)
        cos, sin = cos_table[positions], sin_table[positions]  # [B, 2, T, hd]
        self.cos_k, self.sin_k = cos[:, :1], sin[:, :1]  # [B, 1, T, hd]: the new keys' stable positions
        scale = 1.0 / math.sqrt(pool.head_dim)  # the softmax scale, folded into the query's rotation
        self.cos_q, self.sin_q = cos[:, None] * scale, sin[:, None] * scale  # [B, 1, 2, T, hd] vs q [B, H, 1, T, hd]

        # Gathered key j of a row is its stream token lo_page * P + j; query t (at d = t - that
        # token from it) sees it when 0 <= d <= w. (Keys past a row's last real token are seen only
        # by its padding, whose outputs are dropped.)
        if not self.unpadded:
            self.write_rows, self.write_cols = self.real_index // T, self.real_index % T
        if kernels:  # the tokens to append, as b * T + t of the padded batch
            self.write_source = self.real_index
            return
        d = (from_page_t[:, None] + i)[:, :, None] - torch.arange(W, device=device)  # [B, T, W]
        visible = (d >= 0) & (d <= span[:, :, None])
        self.window_bias = _bias(visible, dtype)  # [B, 1, 1, T, W]
        if self.fused:
            self._chunks(len(states), T)

    def _chunks(self, B: int, T: int) -> None:
        """The fused path reads a few rows' windows at a time (``CHUNK_KEYS`` keys): gathered, widened
        and attended to while they are still in the core's cache. The whole pass's windows at once
        (9 full windows: 5 MB a layer in float32) went through memory three times."""
        n = self.pages_per_row
        rows = max(1, CHUNK_KEYS // (n * self.pool.page_tokens))
        table = self.table.view(B, n)
        self.chunks = [(lo, min(B, lo + rows), table[lo:lo + rows].reshape(-1)) for lo in range(0, B, rows)]
        self.folded_bias: Tensor | None = None  # made at the first layer, where the query heads are known

    def _folded_bias(self, G: int) -> Tensor:
        """The [T, W] mask repeated for each of the G query heads that share a KV head, laid out as G*T
        query rows of it (each key is read once, not once per query head): [B, 1, G*T, W]."""
        if self.folded_bias is None:
            bias = self.window_bias[:, :, 0]  # [B, 1, T, W]
            if G > 1:
                B, _, T, W = bias.shape
                bias = bias.expand(B, G, T, W).reshape(B, 1, G * T, W)
            self.folded_bias = bias
        return self.folded_bias

    def _window(self, tensor: Tensor, table: Tensor | None = None) -> Tensor:
        """[B, Hkv, W, hd] of one layer's pages (or of the rows whose pages ``table`` lists), widened to
        the model's dtype."""
        pool = self.pool
        gathered = tensor.index_select(0, self.table if table is None else table)  # [rows * pages, P, Hkv, hd]
        gathered = gathered.view(-1, self.pages_per_row * pool.page_tokens, pool.n_kv_heads, pool.head_dim)
        return gathered.transpose(1, 2).to(self.dtype)

    def __call__(self, layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, H, T, hd = q.shape
        Hkv = k.shape[1]
        keys, values = self.pool.keys[layer], self.pool.values[layer]
        if self.kernels:
            return self._kernels(layer, q, k, v, keys, values)
        # this pass's keys and values into their pages first: read back with the history below
        k_new = apply_rope_signed(k, self.cos_k, self.sin_k)
        if self.unpadded:
            new_k, new_v = k_new.transpose(1, 2).reshape(-1, Hkv, hd), v.transpose(1, 2).reshape(-1, Hkv, hd)
        else:
            new_k, new_v = k_new[self.write_rows, :, self.write_cols], v[self.write_rows, :, self.write_cols]
        keys.view(-1, Hkv, hd).index_copy_(0, self.write_flat, new_k.to(keys.dtype))
        values.view(-1, Hkv, hd).index_copy_(0, self.write_flat, new_v.to(values.dtype))

        rotated = apply_rope_signed(q[:, :, None], self.cos_q, self.sin_q)  # [B, H, 2, T, hd], scaled
        sink_k, sink_v = self.sink.keys[layer], self.sink.values[layer]
        if self.fused:
            return self._fused(rotated, keys, values, sink_k, sink_v)
        window_k, window_v = self._window(keys), self._window(values)
        # Grouped-query attention: the G = H / Hkv query heads sharing a KV head are laid out as
        # G*T rows against that head's keys, so every product is a plain batched matmul.
        q_win = rotated[:, :, 0].reshape(B, Hkv, -1, hd)
        q_sink = rotated[:, :, 1].reshape(B, Hkv, -1, hd)
        S = sink_k.shape[1]

        window_scores = torch.matmul(q_win, window_k.transpose(-1, -2))  # [B, Hkv, G*T, W]
        window_scores.unflatten(2, (-1, T)).add_(self.window_bias)  # one [T, W] mask serves every head
        scores = torch.cat((torch.matmul(q_sink, sink_k.transpose(-1, -2)), window_scores), dim=-1)
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)  # finite: sinks always seen
        out = torch.matmul(weights[..., :S], sink_v) + torch.matmul(weights[..., S:], window_v)
        return out.reshape(B, H, T, hd)

    def _kernels(self, layer: int, q: Tensor, k: Tensor, v: Tensor, keys: Tensor, values: Tensor) -> Tensor:
        """The same layer through the Triton kernels: append (rotating the new keys), then attend."""
        from kernels.append import append_kv
        from kernels.paged_attention import paged_attention

        append_kv(k, v, self.cos_k[:, 0], self.sin_k[:, 0], self.write_source, self.write_flat, keys, values)
        rotated = apply_rope_signed(q[:, :, None], self.cos_q, self.sin_q)  # [B, H, 2, T, hd], scaled
        return paged_attention(rotated[:, :, 0], rotated[:, :, 1], keys, values, self.sink.keys[layer],
                               self.sink.values[layer], self.table_2d, self.counts, self.from_page, self.span0,
                               self.pool.window)

    def _fused(self, rotated: Tensor, keys: Tensor, values: Tensor, sink_k: Tensor, sink_v: Tensor) -> Tensor:
        """The same attention through torch's fused CPU attention kernel (flash attention: blocks of
        keys, the scores never materialised): the window a chunk of rows at a time, the sinks in one
        call, merged by their log-sum-exps. Equal to the matmul path within float rounding (tests);
        what it saves is measured in benchmarks/results/per_call.md."""
        B, H, _, T, hd = rotated.shape
        Hkv = sink_k.shape[0]
        G = H // Hkv
        q_win = rotated[:, :, 0].reshape(B, Hkv, G * T, hd)  # a KV head's G query heads as G*T rows
        q_sink = rotated[:, :, 1].reshape(B, Hkv, G * T, hd)
        bias = self._folded_bias(G)
        parts = [FLASH_CPU(q_win[lo:hi], self._window(keys, table), self._window(values, table),
                           attn_mask=bias[lo:hi], scale=1.0) for lo, hi, table in self.chunks]
        out_win = parts[0][0] if len(parts) == 1 else torch.cat([out for out, _ in parts])
        lse_win = parts[0][1] if len(parts) == 1 else torch.cat([lse for _, lse in parts])
        out_sink, lse_sink = FLASH_CPU(q_sink, sink_k[None].expand(B, -1, -1, -1), sink_v[None].expand(B, -1, -1, -1),
                                       scale=1.0)
        # softmax over [sinks | window] = each part's softmax, weighted by its share of the total
        # exp-sum. Every real query sees its own key, so the window's part is never empty.
        top = torch.maximum(lse_win, lse_sink)
        w_win, w_sink = (lse_win - top).exp_(), (lse_sink - top).exp_()
        total = w_win + w_sink
        out = out_win * (w_win / total)[..., None] + out_sink * (w_sink / total)[..., None]
        # back to [B, H, T, hd], in the model's dtype (the log-sum-exps are float32 whatever it is)
        return out.reshape(B, H, T, hd).to(rotated.dtype)
