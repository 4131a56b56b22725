"""Random tiny Llama-family models: the real ``transformers`` classes, and ours with the same weights."""

from __future__ import annotations

import random

import torch
import transformers

from logstream.model.loading import build_model, load_state_dict_into

TINY = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_attention_heads=4,
            max_position_embeddings=4096, bos_token_id=1, eos_token_id=2)

CONFIGS = {
    "llama-mha": lambda layers: transformers.LlamaConfig(**TINY, num_hidden_layers=layers, num_key_value_heads=4),
    "llama-gqa": lambda layers: transformers.LlamaConfig(**TINY, num_hidden_layers=layers, num_key_value_heads=2,
                                                         rope_theta=500.0),
    "mistral-gqa": lambda layers: transformers.MistralConfig(**TINY, num_hidden_layers=layers, num_key_value_heads=1,
                                                             sliding_window=None),
    "qwen2-mha": lambda layers: transformers.Qwen2Config(**TINY, num_hidden_layers=layers, num_key_value_heads=4,
                                                         tie_word_embeddings=True),
    "qwen2-gqa": lambda layers: transformers.Qwen2Config(**TINY, num_hidden_layers=layers, num_key_value_heads=2),
}


def tiny_pair(name: str, layers: int = 2, seed: int = 0):
    """(transformers model, our model) with identical random weights, float32, eval mode."""
    torch.manual_seed(seed)
    config = CONFIGS[name](layers)
    hf = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # random biases (Qwen2) so that they matter in the comparison
        for n, p in hf.named_parameters():
            if n.endswith("bias"):
                p.normal_(0, 0.1)
    ours = build_model(config)
    load_state_dict_into(ours, hf.state_dict(), name)
    return hf, ours


def random_lines(n_tokens: int, seed: int) -> list[list[int]]:
    """A token stream cut into 'lines' of 1..9 tokens (ids 3..100, inside every tiny vocab)."""
    rng = random.Random(seed)
    lines, total = [], 0
    while total < n_tokens:
        n = min(rng.randint(1, 9), n_tokens - total)
        lines.append([rng.randrange(3, 101) for _ in range(n)])
        total += n
    return lines
