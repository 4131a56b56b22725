"""The streaming engine: score new tokens for many streams in one batched forward pass.

Each call takes, per stream, the tokens that arrived since the last call (any number, any
chunking), and returns for each of them its log-probability given the stream's context (shared
sink prefix + the last L tokens) and the entropy of the model's prediction at that point. The
engine keeps each stream's keys and values in a slot of a fixed pool; nothing is recomputed, and
memory does not grow with the length of a stream.

Not thread-safe: one engine belongs to one thread (the service gives it a dedicated executor).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from ..model.llama import Transformer, apply_rope
from .attention import BatchPlan, StreamingAttention
from .paged_attention import PagedAttention
from .pages import PagedPool, PagedStream, PoolStats
from .pool import SlotPool, StreamState
from .sink import SinkPrefix, prime_sink_prefix
from .transfer import to_device

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_malloc_tuned = False


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for the next pass instead of giving it back at once.

    A pass makes temporaries of a few MB (the gathered windows, the logits). By default glibc maps
    some of them fresh from the kernel, or trims the heap after a free, and the next pass faults those
    pages in again: 270-1,965 page faults a pass for 9 streams' lines, against none with these
    settings, and a pass about 9 % cheaper (a one-off measurement on the 2-core development machine;
    ``benchmarks/per_call.py`` has the committed figures). Blocks of 32 MB and more are still mapped
    apart, and the heap is trimmed past 128 MB free. Once per process; False where malloc is not glibc's.
    """
    global _malloc_tuned
    if _malloc_tuned:
        return True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        _malloc_tuned = bool(libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 128 << 20))
    except (OSError, AttributeError):  # not glibc
        return False
    return _malloc_tuned


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
    restarted: bool = False  # the stream's history had been forgotten for lack of memory: a cold window


@dataclass(frozen=True)
class EngineConfig:
    window: int = 2048  # L: tokens of each stream's own history every token sees
    slots: int | None = None  # the pool holds this many full windows (slots layout: streams resident at once)
    pool_bytes: int | None = None  # or this many bytes of keys and values; neither: 64 full windows
    host_bytes: int | str | None = None  # windows moved to host memory: None = unbounded, 0 = no host tier,
    # "auto": 2 GiB, none for pages on a CPU (where the pool is host memory already)
    max_chunk_tokens: int = 512  # longer chunks are split (exactly) into pieces of this size
    max_batch_tokens: int = 8192  # padded tokens per forward pass (bounds the score tensors' memory)
    rebase_interval: int = 1 << 14  # keep RoPE positions below this (plus L and one chunk): the rotation
    # tables stay small, and a rebase (rotating a window's keys once) every 16k tokens costs little
    layout: str = "paged"  # "paged": pages of page_tokens (PagedPool); "slots": one L-token slot per stream
    page_tokens: int = 32
    kv_dtype: torch.dtype | str | None = None  # how keys and values are stored: None: the model's dtype;
    # "auto": bfloat16 for a float32 model; or a dtype or its name
    max_batch_rows: int = 64  # streams per forward pass (paged layout; the slots layout: at most `slots`)
    shrink_to: int | None = None  # under memory pressure cold windows keep their last this many tokens
    disk_dir: str | None = None  # a disk tier for windows, under this directory
    disk_bytes: int = 0
    attention: str = "auto"  # "triton": the kernels of kernels/ (paged layout); "torch"; "auto": triton on CUDA

    def __post_init__(self):
        if self.window < 1:
            raise ValueError("window must be at least 1 token")
        if self.rebase_interval < 1 or self.max_chunk_tokens < 1:
            raise ValueError("rebase_interval and max_chunk_tokens must be positive")
        if self.layout not in ("paged", "slots"):
            raise ValueError(f"layout must be 'paged' or 'slots', not {self.layout!r}")
        if self.page_tokens < 1 or self.max_batch_rows < 1:
            raise ValueError("page_tokens and max_batch_rows must be positive")
        if self.attention not in ("auto", "triton", "torch"):
            raise ValueError(f"attention must be 'auto', 'triton' or 'torch', not {self.attention!r}")


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
        keep_freed_memory()
        param = model.embed_tokens.weight
        self.device, self.dtype = param.device, param.dtype
        self.sink: SinkPrefix = prime_sink_prefix(model, list(sink_tokens))
        self.paged = config.layout == "paged"
        # pieces no longer than the window: a pass then needs at most a window and a piece of pages
        self.piece_tokens = min(config.max_chunk_tokens, config.window)
        self.pool = self._paged_pool() if self.paged else self._slot_pool()
        self.kernels = self._use_kernels()

    def _use_kernels(self) -> bool:
        """Whether passes run the Triton kernels: by default on CUDA (where triton is installed), with
        the paged layout; ``attention="triton"`` insists (on a CPU only in Triton's interpreter)."""
        config, model = self.config, self.model.args
        if config.attention == "torch":
            return False
        fits = model.head_dim >= 16 and not model.head_dim & (model.head_dim - 1) \
            and config.page_tokens >= 16 and not config.page_tokens & (config.page_tokens - 1)
        try:
            import kernels.paged_attention  # noqa: F401  (needs triton: pip install 'logstream[gpu]')
            available = True
        except ImportError:
            available = False
        if config.attention == "auto":
            return available and fits and self.paged and self.device.type == "cuda"
        if not self.paged:
            raise ValueError("cache.attention=triton needs cache.layout=paged: the kernels read pages")
        if not available:
            raise ValueError("cache.attention=triton needs triton: pip install 'logstream[gpu]'")
        if not fits:
            raise ValueError(f"the Triton kernels need head_dim and cache.page_tokens powers of two of at least "
                             f"16 (this model's head_dim is {model.head_dim}, page_tokens {config.page_tokens}): "
                             f"use cache.attention=torch")
        if self.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            raise ValueError("cache.attention=triton on a CPU runs only in Triton's interpreter (TRITON_INTERPRET=1, "
                             "slow: for tests); use cache.attention=auto or torch")
        return True

    def _slot_pool(self) -> SlotPool:
        a, config = self.model.args, self.config
        per_slot = SlotPool.bytes_per_slot(a.n_layers, a.n_kv_heads, a.head_dim, a.dim, config.window, self.dtype)
        if config.slots is not None:
            slots = config.slots
        elif config.pool_bytes is not None:
            slots = config.pool_bytes // per_slot
            if slots < 1:
                raise ValueError(f"pool_bytes={config.pool_bytes} holds no window; one needs {per_slot} bytes")
        else:
            slots = 64
        return SlotPool(a.n_layers, a.n_kv_heads, a.head_dim, a.dim, config.window, slots,
                        self.device, self.dtype, self._host_bytes())

    def _host_bytes(self) -> int | None:
        """The host tier's budget; "auto": 2 GiB, except for pages on a CPU, whose pool is host memory."""
        if self.config.host_bytes == "auto":
            return 0 if self.paged and self.device.type != "cuda" else 2 << 30
        return self.config.host_bytes

    def _paged_pool(self) -> PagedPool:
        a, config = self.model.args, self.config
        kv_dtype = config.kv_dtype or self.dtype
        if kv_dtype == "auto":
            kv_dtype = torch.bfloat16 if self.dtype == torch.float32 else self.dtype
        elif isinstance(kv_dtype, str):
            kv_dtype = getattr(torch, kv_dtype)
        host_bytes = self._host_bytes()
        P = config.page_tokens
        per_page = PagedPool.bytes_per_page(a.n_layers, a.n_kv_heads, a.head_dim, P, kv_dtype)
        window_pages = -(-config.window // P) + 1  # a window straddles at most one more page
        one_pass = (config.window + self.piece_tokens - 1) // P + 2  # a window and a piece, straddling
        if config.pool_bytes is not None:
            pages = config.pool_bytes // per_page
        else:
            pages = (config.slots or 64) * window_pages
        if pages < one_pass:
            raise ValueError(f"the pool holds {pages} pages of {per_page} bytes, less than the {one_pass} one "
                             f"stream's pass may need (a window and a piece of cache.max_chunk_tokens): "
                             f"raise cache.pool_bytes")
        return PagedPool(a.n_layers, a.n_kv_heads, a.head_dim, a.dim, config.window, P, pages, self.device,
                         kv_dtype, host_bytes=host_bytes, disk_dir=config.disk_dir,
                         disk_bytes=config.disk_bytes, shrink_to=config.shrink_to)

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
        if self.paged:
            state = self.pool.streams.get(stream_id)
            hidden = state.last_hidden if state is not None and state.last_hidden is not None else self.sink.last_hidden
        else:
            state = self.pool.acquire([stream_id], self.sink.last_hidden)[0]
            hidden = self.pool.last_hidden[state.slot]
        return torch.log_softmax(self.model.logits(hidden), dim=-1).float().cpu()

    def stats(self) -> PoolStats:
        return self.pool.stats()

    @torch.inference_mode()
    def score(self, chunks: Sequence[Chunk], return_distributions: bool = False) -> list[ChunkScores]:
        """Score every chunk's tokens in order; chunks of the same stream are taken in list order."""
        pieces: list[list[tuple[int, Chunk]]] = [[] for _ in chunks]
        for index, chunk in enumerate(chunks):
            tokens = list(chunk.tokens)
            step = self.piece_tokens
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
        bucket_of: list[tuple[int, int]] = []
        streams_in: list[set[str]] = []
        pages_in: list[int] = []  # paged layout: pool pages the pass's streams hold at most
        longest_in: list[int] = []  # each pass's longest row (kept, not recounted: passes of 1,024 rows)
        last_group_of: dict[str, int] = {}
        earlier: dict[str, int] = {}  # tokens of a stream's pieces already placed
        max_rows = self.config.max_batch_rows if self.paged else self.pool.slots

        def pages(sid: str, n: int) -> int:
            if not self.paged:
                return 0
            bound = (self.window + n) // self.pool.page_tokens + 2
            return min(self.pool.pages_for(sid, earlier.get(sid, 0) + n), bound)

        window_pages = self.window // self.pool.page_tokens + 2 if self.paged else 1

        def bucket(n: int, need: int) -> tuple[int, int]:
            # rows of a pass are padded to its longest row, and (paged) its keys to its longest history:
            # by quarters of a window, so a short session does not pay for a full window passing with it
            return _bucket(n), min(3, 4 * need // window_pages) if self.paged else 0

        def fits(g: int, n: int, key: tuple[int, int], need: int) -> bool:
            rows = len(groups[g]) + 1
            longest = max(n, longest_in[g])
            return (bucket_of[g] == key and rows <= max_rows and rows * longest <= self.config.max_batch_tokens
                    and pages_in[g] + need <= capacity)

        capacity = self.pool.capacity if self.paged else 0
        for piece in pieces:
            sid, n = piece[1].stream_id, len(piece[1].tokens)
            need = pages(sid, n)  # once a piece, not once a pass it is tried against
            key = bucket(n, need)
            g = last_group_of.get(sid, -1) + 1
            while g < len(groups) and (sid in streams_in[g] or not fits(g, n, key, need)):
                g += 1
            if g == len(groups):
                groups.append([])
                bucket_of.append(key)
                streams_in.append(set())
                pages_in.append(0)
                longest_in.append(0)
            groups[g].append(piece)
            longest_in[g] = max(longest_in[g], n)
            streams_in[g].add(sid)
            pages_in[g] += need
            last_group_of[sid] = g
            earlier[sid] = earlier.get(sid, 0) + n
        return groups

    def _forward(self, chunks: list[Chunk], return_distributions: bool) -> list[ChunkScores]:
        device = self.device
        lengths = [len(c.tokens) for c in chunks]
        if self.paged:
            states = self.pool.acquire([c.stream_id for c in chunks], lengths)
        else:
            states = self.pool.acquire([c.stream_id for c in chunks], self.sink.last_hidden)
        for chunk, state in zip(chunks, states):
            if state.length + len(chunk.tokens) - state.base > self.config.rebase_interval:
                self._rebase(state)
        T = max(lengths)
        tokens = to_device([list(c.tokens) + [0] * (T - len(c.tokens)) for c in chunks], device)
        if self.paged:
            attention = PagedAttention(states, lengths, self.pool, self.sink, self.model.rotary, self.dtype,
                                       kernels=self.kernels)
            last = torch.stack([self.sink.last_hidden if s.last_hidden is None else s.last_hidden for s in states])
        else:
            plan = BatchPlan(
                slots=torch.tensor([s.slot for s in states], device=device),
                starts=torch.tensor([s.length for s in states], device=device),
                lengths=torch.tensor(lengths, device=device),
                bases=torch.tensor([s.base for s in states], device=device),
                window=self.window,
                sink_length=self.sink.length,
            )
            attention = StreamingAttention(plan, self.pool, self.sink, self.model.rotary, self.dtype)
            last = self.pool.last_hidden[plan.slots]
        hidden = self.model.hidden_states(tokens, attention)  # [B, T, dim]

        # Token i is predicted by the hidden state before it: the stream's last one for i = 0.
        # Only real (unpadded) tokens go through the output layer: it is the largest matmul.
        predictors = torch.cat((last[:, None], hidden[:, :-1]), dim=1)
        real = attention.valid  # [B, T]; None: no padding
        if real is None:
            predictors, real_tokens, real_hidden = predictors.flatten(0, 1), tokens.flatten(), hidden.flatten(0, 1)
        elif self.paged:  # by the index the pass made from its lengths: a mask would wait for the device
            index = attention.real_index
            predictors, real_tokens = predictors.flatten(0, 1)[index], tokens.flatten()[index]
            real_hidden = hidden.flatten(0, 1)[index]
        else:
            predictors, real_tokens, real_hidden = predictors[real], tokens[real], hidden[real]
        logits = self.model.logits(predictors)  # [N, V] float32
        # log p(token) = logit - lse; entropy H = -sum p log p = lse - sum p * logit; one exp pass.
        top = logits.amax(-1, keepdim=True)
        e = (logits - top).exp_()
        z = e.sum(-1)
        lse = top[:, 0] + z.log()
        token_logprobs = logits.gather(-1, real_tokens[:, None])[:, 0] - lse
        entropy = lse - (e * logits).sum(-1) / z
        next_all = torch.log_softmax(self.model.logits(real_hidden), dim=-1) if return_distributions else None

        out = []
        offsets = [0]
        for n in lengths:
            offsets.append(offsets[-1] + n)
        final = hidden[torch.arange(len(chunks), device=device), to_device(lengths, device) - 1]
        if self.paged:
            final = final.clone()  # one small tensor the streams' rows point into, not the whole pass
        logprobs_cpu, entropy_cpu = token_logprobs.float().cpu(), entropy.float().cpu()
        for row, (chunk, state) in enumerate(zip(chunks, states)):
            n, first, end = lengths[row], offsets[row], offsets[row + 1]
            out.append(ChunkScores(
                stream_id=chunk.stream_id,
                start=state.length,
                logprobs=logprobs_cpu[first:end],
                entropy=entropy_cpu[first:end],
                next_logprobs=next_all[first:end].cpu() if next_all is not None else None,
                restarted=self.paged and state.forgotten,
            ))
            if self.paged:
                state.last_hidden = final[row]
                self.pool.commit(chunk.stream_id, state, n)
            else:
                self.pool.last_hidden[state.slot].copy_(final[row])
                state.length += n
        return out

    def _rebase(self, state: StreamState | PagedStream) -> None:
        """Move a stream's RoPE origin up to its current token so positions stay small.

        Rotating every stored key back by the shift keeps all query-key distances unchanged. It
        happens once every `rebase_interval` tokens, not per step.
        """
        shift = state.length - state.base
        cos, sin = self.model.rotary.cos_sin(torch.tensor([-shift], device=self.device), self.dtype)
        if self.paged:
            index = torch.tensor(state.pages, device=self.device, dtype=torch.long)
            keys = self.pool.keys.index_select(1, index).to(self.dtype)  # [layers, n, P, Hkv, hd]
            self.pool.keys.index_copy_(1, index, apply_rope(keys, cos[0], sin[0]).to(self.pool.keys.dtype))
        else:
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
