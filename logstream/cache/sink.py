"""The shared sink prefix: tokens whose keys and values every stream attends to, forever.

It opens with the model's attention-sink token(s) (BOS, or what the operator names) and may go on
with a pattern preamble of normal log lines. Its KV is computed once per model and stored once:
all streams read the same tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..model.llama import DenseAttention, Transformer


@dataclass(frozen=True)
class SinkPrefix:
    tokens: tuple[int, ...]
    keys: tuple[Tensor, ...]  # one [Hkv, S, hd] per layer, rotated at positions 0..S-1
    values: tuple[Tensor, ...]  # one [Hkv, S, hd] per layer
    last_hidden: Tensor  # [dim]: predicts the first token of every new stream

    @property
    def length(self) -> int:
        return len(self.tokens)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values, self.last_hidden))


@torch.inference_mode()
def prime_sink_prefix(model: Transformer, tokens: list[int]) -> SinkPrefix:
    """Run the prefix once through the model, densely, at positions 0..S-1, and keep its KV."""
    if not tokens:
        raise ValueError("the sink prefix needs at least one token (the model's BOS or sink token)")
    device = model.embed_tokens.weight.device
    ids = torch.tensor([tokens], dtype=torch.long, device=device)
    collected: list[tuple[Tensor, Tensor]] = []
    attention = DenseAttention(model.rotary, torch.arange(len(tokens), device=device)[None], keys_out=collected)
    hidden = model.hidden_states(ids, attention)
    return SinkPrefix(
        tokens=tuple(int(t) for t in tokens),
        keys=tuple(k[0].contiguous() for k, _ in collected),
        values=tuple(v[0].contiguous() for _, v in collected),
        last_hidden=hidden[0, -1].clone(),
    )
