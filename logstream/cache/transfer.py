"""Small host-made index tensors to the device without waiting for it."""

from __future__ import annotations

import torch
from torch import Tensor


def to_device(values: list, device: torch.device, dtype: torch.dtype = torch.long) -> Tensor:
    """``torch.tensor(values, device=device)`` without a wait. On CUDA that call copies and then
    synchronises the stream, so each pass's page tables and indices waited for every kernel queued
    before them and the host could never run ahead of the device. A copy queued asynchronously from a
    host tensor is staged by CUDA at once (pageable memory), so the host tensor may go right after."""
    host = torch.tensor(values, dtype=dtype)
    return host if device.type == "cpu" else host.to(device, non_blocking=True)
