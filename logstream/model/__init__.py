"""The Llama-family decoder and its checkpoint loader."""

from .llama import DenseAttention, ModelArgs, Rotary, Transformer
from .loading import SUPPORTED_MODEL_TYPES, LoadedModel, ModelLoadError, build_model, load_model

__all__ = [
    "DenseAttention", "ModelArgs", "Rotary", "Transformer", "SUPPORTED_MODEL_TYPES", "LoadedModel",
    "ModelLoadError", "build_model", "load_model",
]
