"""The methods the streaming engine is measured against, behind the engine's own ``score`` interface.

StreamingLLM (Xiao et al., 2023) compares attention sinks with dense attention, window attention
and a sliding window with re-computation; each class here is one of those, for our ``Transformer``.
They exist for the benchmark and its tests, not for the service.

Every method reads the same text, ``sink_tokens ++ stream``: the sink tokens open the text the way
BOS opens a document in the paper's runs, so the first stream token is predicted from them exactly
as in the engine, and all methods score the same tokens. They differ in what a later token sees
(``window`` L counts earlier tokens, as ``EngineConfig.window`` does: a query sees L tokens + itself):

  method                   a token sees                                       cost per token   memory
  DenseCacheScorer         every earlier token of the text                     O(t)             grows
  SlidingWindowScorer      the last L tokens of the text (the opening evicted) O(L)             fixed
  RecomputeWindowScorer    the last L tokens, recomputed from scratch          L tokens' forward  tokens only
  StreamingEngine          the sinks + the last L tokens of the stream         O(L)             fixed

``score(chunks, return_distributions=False)`` returns one ``ChunkScores`` per chunk, with the
engine's meaning: log p of each new token given the method's context, the entropy of the
prediction it was drawn against, and on request the next-token distribution after each token.
Chunks are processed one at a time (no batching across streams: the benchmark runs one stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ..model.llama import Rotary, Transformer, apply_rope
from .engine import Chunk, ChunkScores


class CacheBudgetExceeded(RuntimeError):
    """The dense cache would outgrow its byte budget. Raised before anything changes."""


# --- shared pieces ------------------------------------------------------------------------------


def _opening(sink_tokens: Sequence[int]) -> list[int]:
    tokens = [int(t) for t in sink_tokens]
    if not tokens:
        raise ValueError("give at least one opening token (the model's BOS): "
                         "it predicts the first token of every stream")
    return tokens


def _gqa_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
                   causal: bool = False) -> Tensor:
    """q [B, H, T, hd] against k/v [B, Hkv, K, hd], all rotated -> [B, H, T, hd].

    ``enable_gqa`` rather than a broadcast head axis: 5-D inputs make SDPA fall back to its
    unfused path, several times slower on CPU, which would flatter the engine.
    """
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                          scale=1.0 / math.sqrt(q.shape[-1]),
                                          enable_gqa=k.shape[1] != q.shape[1])


def _chunk_scores(model: Transformer, stream_id: str, start: int, tokens: Tensor, predictors: Tensor,
                  after: Tensor | None) -> ChunkScores:
    """Scores of ``tokens`` [T] from the hidden states that predict them, ``predictors`` [T, dim].

    ``after`` [T, dim]: the hidden state after each token, for the next-token distributions.
    """
    logits = model.logits(predictors)
    logprobs_all = torch.log_softmax(logits, dim=-1)
    # H = -sum p log p with p from softmax: exp of tiny log-probs would underflow to slow denormals.
    entropy = -(torch.softmax(logits, dim=-1) * logprobs_all).sum(-1)
    return ChunkScores(
        stream_id=stream_id,
        start=start,
        logprobs=logprobs_all.gather(-1, tokens[:, None])[:, 0].float().cpu(),
        entropy=entropy.float().cpu(),
        next_logprobs=torch.log_softmax(model.logits(after), dim=-1).cpu() if after is not None else None,
    )


def _empty_scores(model: Transformer, stream_id: str, start: int, with_dist: bool) -> ChunkScores:
    empty = torch.zeros(0)
    dist = torch.zeros(0, model.args.vocab_size) if with_dist else None
    return ChunkScores(stream_id, start, empty, empty.clone(), dist)


# --- dense cache and sliding window: keys cached once, at their text position ------------------------


@dataclass
class CachedStream:
    """One stream's cached keys and values. Text index 0 is the first opening token."""

    keys: list[Tensor]  # per layer [Hkv, n, hd], rotated at their text positions; the last n tokens
    values: list[Tensor]  # per layer [Hkv, n, hd]
    length: int = 0  # text tokens seen, opening included
    last_hidden: Tensor | None = None  # predicts the next token

    @property
    def cached(self) -> int:
        return self.keys[0].shape[1]

    def nbytes(self) -> int:
        tensors = [*self.keys, *self.values] + ([self.last_hidden] if self.last_hidden is not None else [])
        return sum(t.numel() * t.element_size() for t in tensors)


class AppendingCacheAttention:
    """New tokens attend to one stream's cached keys and to each other; then they join the cache.

    Keys are rotated once, at their text position, and never moved: RoPE scores depend only on the
    query-key distance. ``window`` L: no query sees further back than L tokens, and only the last
    L keys are kept afterwards; None keeps every key (the dense cache, grown by ``torch.cat``).
    """

    def __init__(self, rotary: Rotary, stream: CachedStream, n_new: int, window: int | None):
        self.stream, self.window = stream, window
        device, dtype = stream.keys[0].device, stream.keys[0].dtype
        positions = stream.length + torch.arange(n_new, device=device)
        cos, sin = rotary.cos_sin(positions, dtype)  # [T, hd]
        self.cos, self.sin = cos[None, None], sin[None, None]
        key_positions = torch.arange(stream.length - stream.cached, stream.length + n_new, device=device)
        distance = positions[:, None] - key_positions[None, :]  # [T, cached + T]
        self.mask = distance >= 0
        if window is not None:
            self.mask &= distance <= window

    def __call__(self, layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        q, k = apply_rope(q, self.cos, self.sin), apply_rope(k, self.cos, self.sin)  # [1, H(kv), T, hd]
        keys = torch.cat((self.stream.keys[layer], k[0]), dim=1)
        values = torch.cat((self.stream.values[layer], v[0]), dim=1)
        out = _gqa_attention(q, keys[None], values[None], self.mask)
        if self.window is not None and keys.shape[1] > self.window:  # evict the oldest
            keys, values = keys[:, -self.window:].contiguous(), values[:, -self.window:].contiguous()
        self.stream.keys[layer], self.stream.values[layer] = keys, values
        return out


class _AppendingCacheScorer:
    """Per-stream KV caches fed one chunk at a time; subclasses choose the window and the limits."""

    window: int | None = None

    def __init__(self, model: Transformer, sink_tokens: Sequence[int]):
        self.model = model
        self.opening = _opening(sink_tokens)
        self.streams: dict[str, CachedStream] = {}
        param = model.embed_tokens.weight
        self.device, self.dtype = param.device, param.dtype

    def stream_length(self, stream_id: str) -> int:
        """Stream tokens seen (the opening not counted); 0 for an unknown stream."""
        stream = self.streams.get(stream_id)
        return stream.length - len(self.opening) if stream else 0

    def drop(self, stream_id: str) -> bool:
        return self.streams.pop(stream_id, None) is not None

    def nbytes(self) -> int:
        """Bytes of keys, values and last hidden states held for all streams now."""
        return sum(s.nbytes() for s in self.streams.values())

    @torch.inference_mode()
    def score(self, chunks: Sequence[Chunk], return_distributions: bool = False) -> list[ChunkScores]:
        results = []
        for chunk in chunks:
            stream = self._stream(chunk.stream_id)
            start = stream.length - len(self.opening)
            if not chunk.tokens:
                results.append(_empty_scores(self.model, chunk.stream_id, start, return_distributions))
                continue
            tokens = torch.as_tensor(list(chunk.tokens), dtype=torch.long, device=self.device)
            hidden = self._advance(stream, tokens)
            predictors = torch.cat((stream.last_hidden[None], hidden[:-1]))
            results.append(_chunk_scores(self.model, chunk.stream_id, start, tokens, predictors,
                                         hidden if return_distributions else None))
            stream.last_hidden = hidden[-1].clone()
        return results

    def _stream(self, stream_id: str) -> CachedStream:
        stream = self.streams.get(stream_id)
        if stream is None:
            stream = CachedStream(self._empty_layers(), self._empty_layers())
            opening = torch.tensor(self.opening, device=self.device)
            stream.last_hidden = self._advance(stream, opening)[-1].clone()
            self.streams[stream_id] = stream  # only once the opening fitted
        return stream

    def _empty_layers(self) -> list[Tensor]:
        a = self.model.args
        return [torch.zeros(a.n_kv_heads, 0, a.head_dim, device=self.device, dtype=self.dtype)
                for _ in range(a.n_layers)]

    def _check_room(self, stream: CachedStream, n_new: int) -> None:
        """Raise before a forward that would break a limit (nothing by default)."""

    def _advance(self, stream: CachedStream, tokens: Tensor) -> Tensor:
        """Run ``tokens`` [T] through the model on the stream's cache -> hidden states [T, dim]."""
        self._check_room(stream, len(tokens))
        attention = AppendingCacheAttention(self.model.rotary, stream, len(tokens), self.window)
        hidden = self.model.hidden_states(tokens[None], attention)[0]
        stream.length += len(tokens)
        return hidden


class DenseCacheScorer(_AppendingCacheScorer):
    """Dense attention: every token sees the whole text before it, at positions 0, 1, 2, ...

    The per-stream cache grows by ``torch.cat`` on every chunk (as Hugging Face's DynamicCache
    does), so time and memory per token grow with the stream. ``budget_bytes`` bounds the bytes
    held for all streams (``nbytes()``): a chunk that would cross it raises ``CacheBudgetExceeded``
    before anything changes.
    """

    def __init__(self, model: Transformer, sink_tokens: Sequence[int], window: int | None = None,
                 budget_bytes: int | None = None):
        # `window` is accepted for a uniform constructor and ignored: dense attention has none.
        super().__init__(model, sink_tokens)
        self.budget_bytes = budget_bytes
        a = model.args
        self.bytes_per_token = 2 * a.n_layers * a.n_kv_heads * a.head_dim * self.dtype.itemsize

    def _check_room(self, stream: CachedStream, n_new: int) -> None:
        if self.budget_bytes is None:
            return
        needed = self.nbytes() + n_new * self.bytes_per_token
        if needed > self.budget_bytes:
            raise CacheBudgetExceeded(
                f"the dense cache holds {self.nbytes():,} bytes ({stream.length:,} tokens in this stream); "
                f"{n_new} more tokens would take it to {needed:,}, over its budget of "
                f"{self.budget_bytes:,} bytes"
            )


class SlidingWindowScorer(_AppendingCacheScorer):
    """Window attention: a cache of only the last L tokens of the text, no sinks.

    Once the text is longer than L, its opening tokens are evicted like any other. Positions: the
    StreamingLLM paper's window baseline uses positions inside the cache (its code re-rotates the
    cached keys to 0..w-1 with the query at w). Without sinks the cache is one contiguous run of
    tokens, so those positions and the tokens' original text positions give every query-key pair
    the same distance and, RoPE depending only on the distance, the same scores. So keys keep the
    position they were computed at (no re-rotation); the tests check the result against a
    ``transformers`` cache re-rotated to positions inside the cache.
    """

    def __init__(self, model: Transformer, sink_tokens: Sequence[int], window: int):
        if window < 1:
            raise ValueError("window must be at least 1 token")
        super().__init__(model, sink_tokens)
        self.window = window


# --- sliding window with re-computation ----------------------------------------------------------


class CausalAttention:
    """Causal attention over right-padded rows at positions 0..T-1; no cache.

    Padding sits after each row's real tokens, so causality alone keeps it out of every real
    token's view, and ``is_causal`` lets SDPA pick its fused kernel instead of a materialised mask.
    """

    def __init__(self, rotary: Rotary, length: int, device: torch.device, dtype: torch.dtype):
        cos, sin = rotary.cos_sin(torch.arange(length, device=device), dtype)
        self.cos, self.sin = cos[None, None], sin[None, None]

    def __call__(self, layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        q, k = apply_rope(q, self.cos, self.sin), apply_rope(k, self.cos, self.sin)
        return _gqa_attention(q, k, v, causal=True)


@dataclass
class TokenHistory:
    """What the re-computation method keeps of a stream: its last L + 1 tokens, nothing else."""

    tokens: list[int] = field(default_factory=list)
    length: int = 0  # tokens of the windowed sequence seen so far


class RecomputeWindowScorer:
    """Sliding window with re-computation: each token is predicted by a fresh dense forward.

    For every new token the model runs densely on the last L tokens before it (plus the token
    itself), at positions 0, 1, ...: nothing is cached, so the window's oldest token always acts
    as the opening of the text. ``with_sink=False`` (the paper's baseline): the window slides over
    the whole text ``sink_tokens ++ stream``, so the opening is evicted once the stream is longer
    than L. ``with_sink=True``: the sink tokens stay in front of every window of the stream, i.e.
    ``sink ++ x[t-w .. t]`` at positions ``0 .. S+w`` (the engine's dense oracle).

    Cost per token: a forward pass over up to S + L + 1 tokens. The rows of one chunk are batched,
    at most ``max_batch_tokens`` row tokens per forward.
    """

    def __init__(self, model: Transformer, sink_tokens: Sequence[int], window: int, with_sink: bool = False,
                 max_batch_tokens: int = 16384):
        if window < 1:
            raise ValueError("window must be at least 1 token")
        self.model, self.window, self.with_sink = model, window, with_sink
        self.opening = _opening(sink_tokens)
        self.max_batch_tokens = max_batch_tokens
        self.streams: dict[str, TokenHistory] = {}
        param = model.embed_tokens.weight
        self.device, self.dtype = param.device, param.dtype

    def stream_length(self, stream_id: str) -> int:
        history = self.streams.get(stream_id)
        if history is None:
            return 0
        return history.length if self.with_sink else history.length - len(self.opening)

    def drop(self, stream_id: str) -> bool:
        return self.streams.pop(stream_id, None) is not None

    def nbytes(self) -> int:
        """The token ids kept (8 bytes each): this method keeps no keys or values between tokens."""
        return sum(8 * len(h.tokens) for h in self.streams.values())

    def advance_unscored(self, chunks: Sequence[Chunk]) -> None:
        """Append tokens to their streams without scoring them.

        The method's state is only the last tokens, so a benchmark can skip most lines and still
        score a sampled line exactly as it would after scoring everything before it.
        """
        for chunk in chunks:
            self._append(self._history(chunk.stream_id), list(chunk.tokens))

    @torch.inference_mode()
    def score(self, chunks: Sequence[Chunk], return_distributions: bool = False) -> list[ChunkScores]:
        results = []
        for chunk in chunks:
            history = self._history(chunk.stream_id)
            start = self.stream_length(chunk.stream_id)
            new = list(chunk.tokens)
            if not new:
                results.append(_empty_scores(self.model, chunk.stream_id, start, return_distributions))
                continue
            # Sequence index of the last token each row ends at: the one before each new token,
            # and (for distributions) each new token itself.
            first_end = history.length - 1
            ends = range(first_end, history.length + len(new) - (0 if return_distributions else 1))
            tail, offset = history.tokens + new, history.length - len(history.tokens)
            rows = [self._row(tail, offset, end) for end in ends]
            hidden = self._last_hidden(rows)
            tokens = torch.as_tensor(new, dtype=torch.long, device=self.device)
            after = hidden[1:] if return_distributions else None
            predictors = hidden[:len(new)]
            results.append(_chunk_scores(self.model, chunk.stream_id, start, tokens, predictors, after))
            self._append(history, new)
        return results

    # --- internals -----------------------------------------------------------------------------

    def _history(self, stream_id: str) -> TokenHistory:
        history = self.streams.get(stream_id)
        if history is None:
            history = TokenHistory()
            if not self.with_sink:  # the opening is the start of the windowed text
                self._append(history, self.opening)
            self.streams[stream_id] = history
        return history

    def _append(self, history: TokenHistory, tokens: list[int]) -> None:
        # Keep L + 1 tokens: the row predicting the next token ends at the newest one and reaches L back.
        history.tokens = (history.tokens + tokens)[-(self.window + 1):]
        history.length += len(tokens)

    def _row(self, tail: list[int], offset: int, end: int) -> list[int]:
        """The tokens of the dense run whose last position is sequence index ``end``."""
        context = self.opening if self.with_sink else []
        if end < 0:  # the first stream token, predicted from the sink alone
            return list(context)
        first = max(0, end - self.window)
        return context + tail[first - offset:end - offset + 1]

    def _last_hidden(self, rows: list[list[int]]) -> Tensor:
        """Dense forward of every row (batched, right-padded) -> each row's last hidden state [R, dim]."""
        out = []
        longest = max(len(r) for r in rows)
        per_batch = max(1, self.max_batch_tokens // longest)
        for at in range(0, len(rows), per_batch):
            batch = rows[at:at + per_batch]
            width = max(len(r) for r in batch)
            ids = torch.zeros(len(batch), width, dtype=torch.long, device=self.device)
            for i, row in enumerate(batch):
                ids[i, :len(row)] = torch.as_tensor(row, dtype=torch.long)
            attention = CausalAttention(self.model.rotary, width, self.device, self.dtype)
            hidden = self.model.hidden_states(ids, attention)
            last = torch.tensor([len(r) - 1 for r in batch], device=self.device)
            out.append(hidden[torch.arange(len(batch), device=self.device), last])
        return torch.cat(out)
