"""Load a local Hugging Face checkpoint directory into ``logstream.model.llama.Transformer``.

``transformers`` reads the config and the tokenizer (it knows every version's quirks); the
weights are read from safetensors only, never from pickles, and no remote code is ever run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from .llama import ModelArgs, Rotary, Transformer

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2")
# RoPE variants whose frequencies do not depend on the sequence length seen so far.
STATIC_ROPE_TYPES = ("default", "linear", "llama3", "yarn", "proportional")


class ModelLoadError(ValueError):
    """A checkpoint directory that cannot be used; the message says what to do."""


@dataclass
class LoadedModel:
    model: Transformer
    tokenizer: object  # a transformers PreTrainedTokenizerFast
    config: object  # the transformers PretrainedConfig
    path: Path
    sliding_window: int | None  # the model's own attention window, if it was trained with one

    @property
    def name(self) -> str:
        return self.path.name


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError:
        raise ModelLoadError(f"unknown dtype {dtype!r}: use auto, float32, bfloat16 or float16") from None


def _rope_parameters(config) -> dict:
    params = getattr(config, "rope_parameters", None)
    if params is None:  # transformers < 5
        params = dict(getattr(config, "rope_scaling", None) or {})
        params.setdefault("rope_theta", getattr(config, "rope_theta", 10000.0))
        params.setdefault("rope_type", params.get("type", "default"))
    return dict(params)


def rotary_from_config(config, head_dim: int) -> Rotary:
    params = _rope_parameters(config)
    rope_type = params.get("rope_type", "default")
    if rope_type not in STATIC_ROPE_TYPES:
        raise ModelLoadError(
            f"RoPE type {rope_type!r} changes with the sequence length, which a rolling window cannot "
            f"reproduce; supported types: {', '.join(STATIC_ROPE_TYPES)}"
        )
    if rope_type == "default":
        theta = params["rope_theta"]
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
        return Rotary(inv_freq, 1.0)
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    inv_freq, scaling = ROPE_INIT_FUNCTIONS[rope_type](config, None)
    return Rotary(inv_freq, float(scaling))


def args_from_config(config) -> ModelArgs:
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelLoadError(
            f"model type {model_type!r} is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)} "
            "(Llama-family decoders with RMSNorm, RoPE, grouped-query attention and SwiGLU)"
        )
    if getattr(config, "hidden_act", "silu") != "silu":
        raise ModelLoadError(f"hidden_act {config.hidden_act!r} is not supported; only silu (SwiGLU)")
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    attention_bias = bool(getattr(config, "attention_bias", False))
    return ModelArgs(
        vocab_size=config.vocab_size,
        dim=config.hidden_size,
        n_layers=config.num_hidden_layers,
        n_heads=config.num_attention_heads,
        n_kv_heads=getattr(config, "num_key_value_heads", None) or config.num_attention_heads,
        head_dim=head_dim,
        intermediate_size=config.intermediate_size,
        norm_eps=config.rms_norm_eps,
        qkv_bias=model_type == "qwen2" or attention_bias,
        o_bias=attention_bias,
        mlp_bias=bool(getattr(config, "mlp_bias", False)),
        tie_word_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
    )


def model_sliding_window(config) -> int | None:
    """The attention window the model itself was trained with (Mistral, Qwen2), if any."""
    if config.model_type == "qwen2" and not getattr(config, "use_sliding_window", False):
        return None
    return getattr(config, "sliding_window", None)


def _safetensors_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [path / s for s in shards]
    files = sorted(path.glob("*.safetensors"))
    if not files:
        pickles = [p.name for p in path.glob("*.bin")] + [p.name for p in path.glob("*.pt*")]
        hint = (f" (found {', '.join(pickles)}: convert them to safetensors first; pickled weights are "
                "never loaded)") if pickles else ""
        raise ModelLoadError(f"no *.safetensors weights in {path}{hint}")
    return files


def build_model(config, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> Transformer:
    args = args_from_config(config)
    model = Transformer(args, rotary_from_config(config, args.head_dim))
    return model.to(device=device, dtype=dtype).eval()


def load_state_dict_into(model: Transformer, state: dict[str, torch.Tensor], source: str) -> None:
    # Hugging Face names are "model.layers.0...." and "lm_head.weight"; ours drop the "model." level.
    ours = {(k[len("model."):] if k.startswith("model.") else k): v for k, v in state.items()}
    if model.args.tie_word_embeddings:
        ours.pop("lm_head.weight", None)
    expected = set(model.state_dict().keys())
    if model.args.tie_word_embeddings:
        expected.discard("lm_head.weight")
    missing = expected - ours.keys()
    ignored = {k for k in ours.keys() - expected if not k.endswith("rotary_emb.inv_freq")}
    if missing or ignored:
        raise ModelLoadError(
            f"weights in {source} do not match the config: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(ignored)[:5]}"
        )
    model.load_state_dict({k: v for k, v in ours.items() if k in expected}, strict=False, assign=False)


def load_model(path: str | Path, device: str = "auto", dtype: str = "auto") -> LoadedModel:
    """Load config.json + *.safetensors + tokenizer from a local directory."""
    from transformers import AutoConfig, AutoTokenizer

    path = Path(path)
    if not path.is_dir():
        raise ModelLoadError(f"model directory {path} does not exist (train one with `logstream train`)")
    if not (path / "config.json").exists():
        raise ModelLoadError(f"{path} has no config.json: expected a Hugging Face checkpoint directory")
    config = AutoConfig.from_pretrained(path, trust_remote_code=False, local_files_only=True)
    torch_device = pick_device(device)
    torch_dtype = pick_dtype(dtype, torch_device)
    model = build_model(config, "cpu", torch.float32)
    state: dict[str, torch.Tensor] = {}
    for file in _safetensors_files(path):
        state.update(load_file(str(file)))
    load_state_dict_into(model, state, str(path))
    model = model.to(device=torch_device, dtype=torch_dtype).eval()
    if not any((path / f).exists() for f in ("tokenizer.json", "tokenizer_config.json")):
        raise ModelLoadError(f"{path} has no tokenizer.json: save the tokenizer next to the weights")
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False, local_files_only=True)
    return LoadedModel(model, tokenizer, config, path, model_sliding_window(config))
