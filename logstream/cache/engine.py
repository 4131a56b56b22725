"""The streaming engine: score new tokens for many streams in one batched forward pass.

Each call takes, per stream, the tokens that arrived since the last call (any number, any
chunking), and returns for each of them its log-probability given the stream's context (shared
sink prefix + the last L tokens) and the entropy of the model's prediction at that point. The
engine keeps each stream's keys and values in a slot of a fixed pool; nothing is recomputed, and
memory does not grow with the length of a stream.

Not thread-safe: one engine belongs to one thread (the service gives it a dedicated executor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from ..model.llama import Transformer, apply_rope
from .attention import BatchPlan, StreamingAttention
from .pool import PoolStats, SlotPool, StreamState
from .sink import SinkPrefix, prime_sink_prefix


@dataclass(frozen=True)
class Chunk:
    """New tokens of one stream, in order."""

    stream_id: str
    tokens: Sequence[int]


@dataclass
class ChunkScores:
    stream_id: str
    start: int  # stream index of the first scored token
    logprobs: Tensor  # [n] float32: log p(token | context)
    entropy: Tensor  # [n] float32: entropy (nats) of the prediction each token was drawn against
    next_logprobs: Tensor | None = None  # [n, vocab]: the distribution after each token (on request)


@dataclass(frozen=True)
class EngineConfig:
    window: int = 2048  # L: tokens of each stream's own history every token sees
    slots: int | None = None  # streams resident at once; or give pool_bytes
    pool_bytes: int | None = None
    host_bytes: int | None = None  # budget for offloaded windows; None = unbounded
    max_chunk_tokens: int = 512  # longer chunks are split (exactly) into pieces of this size
    max_batch_tokens: int = 8192  # padded tokens per forward pass (bounds the score tensors' memory)
    rebase_interval: int = 1 << 16  # keep RoPE positions below this (plus L and one chunk)

    def __post_init__(self):
        if self.window < 1:
            raise ValueError("window must be at least 1 token")
        if self.rebase_interval < 1 or self.max_chunk_tokens < 1:
            raise ValueError("rebase_interval and max_chunk_tokens must be positive")


class StreamingEngine:
    def __init__(self, model: Transformer, sink_tokens: Sequence[int], config: EngineConfig = EngineConfig(),
                 model_window: int | None = None):
        if model_window is not None and len(sink_tokens) + config.window + 1 > model_window:
            raise ValueError(
                f"the model attends to at most {model_window} tokens (its sliding_window), but the sink prefix "
                f"({len(sink_tokens)}) + window ({config.window}) + 1 needs more: lower cache.window_tokens"
            )
        self.model = model
        self.config = config
        param = model.embed_tokens.weight
        self.device, self.dtype = param.device, param.dtype
        self.sink: SinkPrefix = prime_sink_prefix(model, list(sink_tokens))
        a = model.args
        per_slot = SlotPool.bytes_per_slot(a.n_layers, a.n_kv_heads, a.head_dim, a.dim, config.window, self.dtype)
        if config.slots is not None:
            slots = config.slots
        elif config.pool_bytes is not None:
            slots = config.pool_bytes // per_slot
            if slots < 1:
                raise ValueError(f"pool_bytes={config.pool_bytes} holds no window; one needs {per_slot} bytes")
        else:
            slots = 64
        self.pool = SlotPool(a.n_layers, a.n_kv_heads, a.head_dim, a.dim, config.window, slots,
                             self.device, self.dtype, config.host_bytes)

    # --- public API -----------------------------------------------------------------------------

    @property
    def window(self) -> int:
        return self.config.window

    def stream_length(self, stream_id: str) -> int:
        """Tokens this stream has seen (0 for an unknown stream)."""
        state = self.pool.streams.get(stream_id)
        return state.length if state else 0

    def drop(self, stream_id: str) -> bool:
        return self.pool.drop(stream_id)

    @torch.inference_mode()
    def next_logprobs(self, stream_id: str) -> Tensor:
        """[vocab] log p(next token | the stream so far): what the model expects after the stream's
        last token (for a new stream, its first token). Reads the stream's last hidden state; adds
        nothing to the stream."""
        state = self.pool.acquire([stream_id], self.sink.last_hidden)[0]
        return torch.log_softmax(self.model.logits(self.pool.last_hidden[state.slot]), dim=-1).float().cpu()

    def stats(self) -> PoolStats:
        return self.pool.stats()

    @torch.inference_mode()
    def score(self, chunks: Sequence[Chunk], return_distributions: bool = False) -> list[ChunkScores]:
        """Score every chunk's tokens in order; chunks of the same stream are taken in list order."""
        pieces: list[list[tuple[int, Chunk]]] = [[] for _ in chunks]
        for index, chunk in enumerate(chunks):
            tokens = list(chunk.tokens)
            step = self.config.max_chunk_tokens
            for at in range(0, len(tokens), step):
                pieces[index].append((index, Chunk(chunk.stream_id, tokens[at:at + step])))
        results: list[list[ChunkScores]] = [[] for _ in chunks]
        for group in self._groups([p for chunk_pieces in pieces for p in chunk_pieces]):
            for (index, _), scores in zip(group, self._forward([c for _, c in group], return_distributions)):
                results[index].append(scores)
        return [self._join(chunk, parts, return_distributions) for chunk, parts in zip(chunks, results)]

    # --- internals ----------------------------------------------------------------------------

    def _groups(self, pieces: list[tuple[int, Chunk]]) -> list[list[tuple[int, Chunk]]]:
        """Split pieces into forward passes.

        A pass holds a stream at most once, at most `slots` rows and `max_batch_tokens` padded
        tokens. Rows are padded to the longest row of their pass, so a pass only takes rows of one
        length bucket (powers of two): padding wastes less than half of any pass. A stream's pieces
        land in passes in their order.
        """
        groups: list[list[tuple[int, Chunk]]] = []
        bucket_of: list[int] = []
        streams_in: list[set[str]] = []
        last_group_of: dict[str, int] = {}

        def fits(g: int, n: int) -> bool:
            rows = len(groups[g]) + 1
            longest = max([n] + [len(c.tokens) for _, c in groups[g]])
            return (bucket_of[g] == _bucket(n) and rows <= self.pool.slots
                    and rows * longest <= self.config.max_batch_tokens)

        for piece in pieces:
            sid, n = piece[1].stream_id, len(piece[1].tokens)
            g = last_group_of.get(sid, -1) + 1
            while g < len(groups) and (sid in streams_in[g] or not fits(g, n)):
                g += 1
            if g == len(groups):
                groups.append([])
                bucket_of.append(_bucket(n))
                streams_in.append(set())
            groups[g].append(piece)
            streams_in[g].add(sid)
            last_group_of[sid] = g
        return groups

    def _forward(self, chunks: list[Chunk], return_distributions: bool) -> list[ChunkScores]:
        states = self.pool.acquire([c.stream_id for c in chunks], self.sink.last_hidden)
        for chunk, state in zip(chunks, states):
            if state.length + len(chunk.tokens) - state.base > self.config.rebase_interval:
                self._rebase(state)
        device = self.device
        lengths = [len(c.tokens) for c in chunks]
        T = max(lengths)
        tokens = torch.zeros(len(chunks), T, dtype=torch.long, device=device)
        for row, chunk in enumerate(chunks):
            tokens[row, : lengths[row]] = torch.as_tensor(list(chunk.tokens), dtype=torch.long)
        plan = BatchPlan(
            slots=torch.tensor([s.slot for s in states], device=device),
            starts=torch.tensor([s.length for s in states], device=device),
            lengths=torch.tensor(lengths, device=device),
            bases=torch.tensor([s.base for s in states], device=device),
            window=self.window,
            sink_length=self.sink.length,
        )
        attention = StreamingAttention(plan, self.pool, self.sink, self.model.rotary, self.dtype)
        hidden = self.model.hidden_states(tokens, attention)  # [B, T, dim]

        # Token i is predicted by the hidden state before it: the stream's last one for i = 0.
        # Only real (unpadded) tokens go through the output layer: it is the largest matmul.
        predictors = torch.cat((self.pool.last_hidden[plan.slots][:, None], hidden[:, :-1]), dim=1)
        real = attention.valid  # [B, T]
        logits = self.model.logits(predictors[real])  # [N, V] float32
        # log p(token) = logit - lse; entropy H = -sum p log p = lse - sum p * logit; one exp pass.
        top = logits.amax(-1, keepdim=True)
        e = (logits - top).exp_()
        z = e.sum(-1)
        lse = top[:, 0] + z.log()
        token_logprobs = logits.gather(-1, tokens[real][:, None])[:, 0] - lse
        entropy = lse - (e * logits).sum(-1) / z
        next_all = torch.log_softmax(self.model.logits(hidden[real]), dim=-1) if return_distributions else None

        out = []
        offsets = [0]
        for n in lengths:
            offsets.append(offsets[-1] + n)
        for row, (chunk, state) in enumerate(zip(chunks, states)):
            n, first, last = lengths[row], offsets[row], offsets[row + 1]
            self.pool.last_hidden[state.slot].copy_(hidden[row, n - 1])
            out.append(ChunkScores(
                stream_id=chunk.stream_id,
                start=state.length,
                logprobs=token_logprobs[first:last].float().cpu(),
                entropy=entropy[first:last].float().cpu(),
                next_logprobs=next_all[first:last].cpu() if next_all is not None else None,
            ))
            state.length += n
        return out

    def _rebase(self, state: StreamState) -> None:
        """Move a stream's RoPE origin up to its current token so positions stay small.

        Rotating every stored key back by the shift keeps all query-key distances unchanged. It
        happens once every `rebase_interval` tokens, not per step.
        """
        shift = state.length - state.base
        cos, sin = self.model.rotary.cos_sin(torch.tensor([-shift], device=self.device), self.dtype)
        keys = self.pool.keys[:, state.slot]  # [layers, Hkv, L, hd] view
        keys.copy_(apply_rope(keys, cos[0], sin[0]))
        state.base = state.length

    def _join(self, chunk: Chunk, parts: list[ChunkScores], with_dist: bool) -> ChunkScores:
        if len(parts) == 1:
            return parts[0]
        if not parts:  # an empty chunk scores nothing and changes nothing
            empty = torch.zeros(0)
            dist = torch.zeros(0, self.model.args.vocab_size) if with_dist else None
            return ChunkScores(chunk.stream_id, self.stream_length(chunk.stream_id), empty, empty.clone(), dist)
        return ChunkScores(
            stream_id=chunk.stream_id,
            start=parts[0].start,
            logprobs=torch.cat([p.logprobs for p in parts]),
            entropy=torch.cat([p.entropy for p in parts]),
            next_logprobs=torch.cat([p.next_logprobs for p in parts]) if with_dist else None,
        )


def _bucket(n: int) -> int:
    """Length bucket of a row of n tokens: 1, 2, 3-4, 5-8, 9-16, ..."""
    return max(0, n - 1).bit_length()
