"""Loading local Hugging Face checkpoint directories: what works, and the errors for what does not."""

from __future__ import annotations

import pytest
import torch
import transformers

from logstream.model import ModelLoadError, load_model
from models import CONFIGS, tiny_pair
from pipelines.tokenizer import train_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["Receiving block <BLK> src: /<IP>", "PacketResponder <N1> terminating"] * 50, 300)


def save(tmp_path, model, tokenizer, pickled=False):
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    if pickled:  # an old-style checkpoint: weights only as a pickle
        (tmp_path / "model.safetensors").unlink()
        torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    return tmp_path


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_checkpoint_directory_loads_and_equals_transformers(tmp_path, tokenizer, name):
    hf, _ = tiny_pair(name, layers=2)
    loaded = load_model(save(tmp_path, hf, tokenizer), device="cpu", dtype="float32")
    tokens = torch.randint(3, 101, (1, 20))
    with torch.no_grad():
        assert (loaded.model(tokens) - hf(tokens).logits).abs().max() < 1e-4
    assert loaded.tokenizer.bos_token_id == tokenizer.bos_token_id


def test_unsupported_architecture_names_the_supported_ones(tmp_path, tokenizer):
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=101))
    with pytest.raises(ModelLoadError, match="'gpt2' is not supported; supported: llama, mistral, qwen2"):
        load_model(save(tmp_path, gpt2, tokenizer), device="cpu")


def test_missing_pieces_get_clear_errors(tmp_path, tokenizer):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model(tmp_path / "nope")
    with pytest.raises(ModelLoadError, match="no config.json"):
        load_model(tmp_path)
    hf, _ = tiny_pair("llama-gqa")
    pickled = save(tmp_path / "pickled", hf, tokenizer, pickled=True)
    with pytest.raises(ModelLoadError, match="convert them to safetensors"):
        load_model(pickled)
    no_tok = tmp_path / "no-tokenizer"
    hf.save_pretrained(no_tok)
    with pytest.raises(ModelLoadError, match="tokenizer"):
        load_model(no_tok)


def test_length_dependent_rope_is_refused(tmp_path, tokenizer):
    config = CONFIGS["llama-gqa"](1)
    config.rope_parameters = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    hf = transformers.LlamaForCausalLM(config)
    with pytest.raises(ModelLoadError, match="changes with the sequence length"):
        load_model(save(tmp_path, hf, tokenizer), device="cpu")
