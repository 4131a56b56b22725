"""A Llama-family decoder (Llama, Mistral, Qwen2) in plain PyTorch.

RMSNorm, rotary position embeddings, grouped-query attention and a SwiGLU MLP, in the style of
gpt-fast and nanoGPT. The model knows nothing about caches or positions: every attention layer
hands its (un-rotated) queries, keys and values to an ``Attention`` backend, which applies RoPE,
reads and writes whatever cache it keeps, and returns the attention output. ``DenseAttention``
below is the plain causal backend (training-free reference, sink-prefix priming, baselines);
``logstream.cache`` provides the streaming one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class ModelArgs:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    qkv_bias: bool = False  # Qwen2 has biases on q, k and v
    o_bias: bool = False
    mlp_bias: bool = False
    tie_word_embeddings: bool = False


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        # Normalise in float32 like the reference implementation, whatever the model dtype; one fused
        # op where torch has it (a pass on a short line is mostly per-op overhead)
        if x.dtype == torch.float32:
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        return self.weight * F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps).to(x.dtype)


def fused_weight(cache: dict, *linears: nn.Linear) -> tuple[Tensor, Tensor | None]:
    """The weights (and biases) of linears that read the same input, concatenated: one matmul instead
    of several (a pass on a short line is mostly per-op overhead).

    Kept in ``cache`` while no weight changes (a parameter's version counter moves on every in-place
    update: an optimizer step, a swap of new weights); rebuilt each call where autograd needs it.
    """
    params = [p for lin in linears for p in (lin.weight, lin.bias) if p is not None]
    if torch.is_grad_enabled() and any(p.requires_grad for p in params):
        return _cat(linears)
    key = tuple((p.data_ptr(), p._version) for p in params)
    if cache.get("key") != key:
        cache["key"], cache["value"] = key, _cat(linears)
    return cache["value"]


def _cat(linears) -> tuple[Tensor, Tensor | None]:
    weight = torch.cat([lin.weight for lin in linears])
    if linears[0].bias is None:
        return weight, None
    return weight, torch.cat([lin.bias for lin in linears])


# --- Rotary position embeddings -------------------------------------------------------------


class Rotary:
    """RoPE tables computed on demand for arbitrary (possibly per-token) positions.

    Angles are computed in float64 so that the error does not grow with the position; only the
    final cos/sin are cast to the model dtype.
    """

    def __init__(self, inv_freq: Tensor, attention_scaling: float = 1.0):
        self.inv_freq = inv_freq.double()
        self.scaling = attention_scaling
        self._tables: dict = {}  # (device, dtype) -> (cos, signed sin) [positions, head_dim]

    def cos_sin(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """positions: integer tensor of any shape -> cos, sin of shape positions.shape + (head_dim,)."""
        inv = self.inv_freq.to(positions.device)
        freqs = positions.double().unsqueeze(-1) * inv
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.scaling).to(dtype), (emb.sin() * self.scaling).to(dtype)

    def table(self, positions: int, device: torch.device, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """cos and *signed* sin for the positions 0 .. positions - 1, [positions, head_dim], the same
        values as ``cos_sin`` (computed once, grown by doubling): a pass then rotates by indexing
        instead of a dozen ops. The sin's first half is negated, for ``apply_rope_signed``."""
        key = (torch.device(device), dtype)
        cached = self._tables.get(key)
        if cached is None or cached[0].shape[0] < positions:
            n = max(positions, 2 * cached[0].shape[0] if cached is not None else 4096)
            cos, sin = self.cos_sin(torch.arange(n, device=device), dtype)
            half = sin.shape[-1] // 2
            cached = self._tables[key] = (cos, torch.cat((-sin[:, :half], sin[:, half:]), dim=-1))
        return cached


def rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x: [..., T, head_dim]; cos/sin broadcastable to x."""
    return x * cos + rotate_half(x) * sin


def apply_rope_signed(x: Tensor, cos: Tensor, signed_sin: Tensor) -> Tensor:
    """``apply_rope`` with the sin's first half negated beforehand (``Rotary.table``): rotate_half(x)
    * sin = roll(x) * signed_sin, the same values in one op instead of three."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin


# --- Attention backends -----------------------------------------------------------------------


class Attention(Protocol):
    """What a decoder layer needs from a cache: attention over whatever context it keeps."""

    def __call__(self, layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """q: [B, H, T, hd], k/v: [B, Hkv, T, hd], none rotated yet -> output [B, H, T, hd]."""
        ...


class DenseAttention:
    """Plain causal attention over one contiguous sequence per batch row (no cache).

    ``positions`` [B, T] are the RoPE positions; ``keys_out``, when given, collects each layer's
    rotated keys and values (used to prime the shared sink prefix).
    """

    def __init__(self, rotary: Rotary, positions: Tensor, valid: Tensor | None = None,
                 keys_out: list | None = None):
        self.rotary = rotary
        self.positions = positions
        self.valid = valid  # [B, T] bool; padded keys are never attended to
        self.keys_out = keys_out

    def __call__(self, layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, H, T, hd = q.shape
        Hkv = k.shape[1]
        cos, sin = self.rotary.cos_sin(self.positions, q.dtype)  # [B or 1, T, hd]
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.keys_out is not None:
            self.keys_out.append((k, v))
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        if self.valid is not None:
            mask = mask & self.valid[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0 / math.sqrt(hd),
                                              enable_gqa=H != Hkv)


# --- The decoder ------------------------------------------------------------------------------


class SelfAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = args.n_heads, args.n_kv_heads, args.head_dim
        self.q_proj = nn.Linear(args.dim, args.n_heads * args.head_dim, bias=args.qkv_bias)
        self.k_proj = nn.Linear(args.dim, args.n_kv_heads * args.head_dim, bias=args.qkv_bias)
        self.v_proj = nn.Linear(args.dim, args.n_kv_heads * args.head_dim, bias=args.qkv_bias)
        self.o_proj = nn.Linear(args.n_heads * args.head_dim, args.dim, bias=args.o_bias)
        self._qkv: dict = {}

    def forward(self, x: Tensor, layer: int, attention: Attention) -> Tensor:
        B, T, _ = x.shape
        H, Hkv, hd = self.n_heads, self.n_kv_heads, self.head_dim
        qkv = F.linear(x, *fused_weight(self._qkv, self.q_proj, self.k_proj, self.v_proj))
        q, k, v = qkv.view(B, T, H + 2 * Hkv, hd).transpose(1, 2).split((H, Hkv, Hkv), dim=1)
        out = attention(layer, q, k, v)
        return F.linear(out.transpose(1, 2).reshape(B, T, H * hd), self.o_proj.weight, self.o_proj.bias)


class FeedForward(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.gate_proj = nn.Linear(args.dim, args.intermediate_size, bias=args.mlp_bias)
        self.up_proj = nn.Linear(args.dim, args.intermediate_size, bias=args.mlp_bias)
        self.down_proj = nn.Linear(args.intermediate_size, args.dim, bias=args.mlp_bias)
        self._gate_up: dict = {}

    def forward(self, x: Tensor) -> Tensor:
        gate, up = F.linear(x, *fused_weight(self._gate_up, self.gate_proj, self.up_proj)).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.down_proj.weight, self.down_proj.bias)


class DecoderLayer(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.input_layernorm = RMSNorm(args.dim, args.norm_eps)
        self.self_attn = SelfAttention(args)
        self.post_attention_layernorm = RMSNorm(args.dim, args.norm_eps)
        self.mlp = FeedForward(args)

    def forward(self, x: Tensor, layer: int, attention: Attention) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), layer, attention)
        return x + self.mlp(self.post_attention_layernorm(x))


class Transformer(nn.Module):
    """Parameter names follow Hugging Face's ``LlamaForCausalLM`` so checkpoints load as they are."""

    def __init__(self, args: ModelArgs, rotary: Rotary):
        super().__init__()
        self.args = args
        self.rotary = rotary
        self.embed_tokens = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(DecoderLayer(args) for _ in range(args.n_layers))
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.lm_head = nn.Linear(args.dim, args.vocab_size, bias=False)
        if args.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def hidden_states(self, tokens: Tensor, attention: Attention) -> Tensor:
        """tokens [B, T] -> final normalised hidden states [B, T, dim]."""
        x = self.embed_tokens(tokens)
        for i, layer in enumerate(self.layers):
            x = layer(x, i, attention)
        return self.norm(x)

    def logits(self, hidden: Tensor) -> Tensor:
        return self.lm_head(hidden).float()

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        """Dense causal forward: tokens [B, T] -> logits [B, T, vocab] (float32)."""
        if positions is None:
            positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        return self.logits(self.hidden_states(tokens, DenseAttention(self.rotary, positions)))
