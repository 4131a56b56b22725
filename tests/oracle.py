"""Reference implementations on top of unmodified ``transformers`` models: the test oracles.

``dense_window_logprobs``: the model run densely on ``sink ++ x[t-w..t]`` with contiguous positions
(what the semantics note calls the oracle). It equals the engine exactly while the window has not
filled, and for one-layer models always. Once the window has filled, a model with two or more
layers differs: the engine keeps the keys and values each window token got when it arrived (when
it could still see older tokens), a dense re-run recomputes them without those tokens.

``streaming_llm_logprobs``: the StreamingLLM reference (mit-han-lab/streaming-llm) on the same
unmodified model: token by token, with a cache rebuilt every step from the sink keys and the
window's un-rotated keys re-rotated to contiguous positions ``S .. S+w-1``, the query at ``S+w``.
Slow and simple, with no code shared with the engine; it defines the semantics for filled windows.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache


def _rope(model, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotate x [1, H, T, hd] to `positions` [T] (negative positions undo a rotation)."""
    inv = model.model.rotary_emb.inv_freq.double()
    freqs = positions.double()[:, None] * inv[None]
    emb = torch.cat((freqs, freqs), -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat((-x2, x1), -1) * sin


@torch.no_grad()
def dense_window_logprobs(model, sink: list[int], tokens: list[int], t: int, window: int) -> torch.Tensor:
    """log p(. | sink ++ tokens[t-w .. t]) with positions 0 .. S+w, w = min(t, window)."""
    w = min(t, window)
    ids = torch.tensor([list(sink) + list(tokens[t - w: t + 1])])
    positions = torch.arange(ids.shape[1])[None]
    logits = model(input_ids=ids, position_ids=positions).logits[0, -1].float()
    return torch.log_softmax(logits, -1)


@torch.no_grad()
def streaming_llm_logprobs(model, sink: list[int], tokens: list[int], window: int) -> torch.Tensor:
    """[len(tokens), vocab]: the next-token distribution after each token, StreamingLLM style."""
    S = len(sink)
    prefix = DynamicCache()
    model(input_ids=torch.tensor([list(sink)]), past_key_values=prefix, use_cache=True)
    n_layers = len(prefix.layers)
    sink_kv = [(prefix.layers[i].keys, prefix.layers[i].values) for i in range(n_layers)]
    window_k = [[] for _ in range(n_layers)]  # un-rotated keys, one [1, Hkv, 1, hd] per token
    window_v = [[] for _ in range(n_layers)]
    out = []
    for token in tokens:
        w = len(window_k[0])
        cache = DynamicCache()
        for i in range(n_layers):
            keys, values = sink_kv[i]
            if w:
                keys = torch.cat((keys, _rope(model, torch.cat(window_k[i], 2), torch.arange(S, S + w))), 2)
                values = torch.cat((values, torch.cat(window_v[i], 2)), 2)
            cache.update(keys, values, i)
        logits = model(input_ids=torch.tensor([[token]]), position_ids=torch.tensor([[S + w]]),
                       past_key_values=cache, use_cache=True).logits[0, -1].float()
        out.append(torch.log_softmax(logits, -1))
        for i in range(n_layers):
            k_new = cache.layers[i].keys[:, :, -1:]
            window_k[i].append(_rope(model, k_new, torch.tensor([-(S + w)])))
            window_v[i].append(cache.layers[i].values[:, :, -1:])
            del window_k[i][:-window], window_v[i][:-window]
    return torch.stack(out)
