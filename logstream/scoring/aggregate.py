"""Turn a line's per-token log-probabilities into one anomaly score (higher = more surprising).

* ``mean``: mean negative log-likelihood of the line's tokens (its cross-entropy, in nats).
* ``max``: the single most surprising token.
* ``top3``: mean of the three most surprising tokens (a short unusual span in a long line).
* ``excess``: mean of (surprise - entropy): how much more surprising each token was than the model
  itself expected at that point, so tokens in places the model knows to be variable count less.

The evaluation harness reports all of them; the model card records the one calibrated.
"""

from __future__ import annotations

import torch
from torch import Tensor

AGGREGATES = ("mean", "max", "top3", "excess")


def aggregate(logprobs: Tensor, entropy: Tensor, how: str) -> float:
    if logprobs.numel() == 0:
        return 0.0
    nll = -logprobs.double()
    if how == "mean":
        return float(nll.mean())
    if how == "max":
        return float(nll.max())
    if how == "top3":
        return float(torch.topk(nll, min(3, nll.numel())).values.mean())
    if how == "excess":
        return float((nll - entropy.double()).mean())
    raise ValueError(f"unknown aggregate {how!r}; choose one of {', '.join(AGGREGATES)}")


def all_aggregates(logprobs: Tensor, entropy: Tensor) -> dict[str, float]:
    return {how: aggregate(logprobs, entropy, how) for how in AGGREGATES}
