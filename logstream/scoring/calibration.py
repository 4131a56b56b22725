"""Thresholds that meet a target false-alert rate on held-out normal scores."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def calibrate_threshold(normal_scores: Sequence[float] | np.ndarray, target_false_alert_rate: float) -> float:
    """The smallest threshold whose false-alert rate on ``normal_scores`` is <= the target.

    Alerts fire on ``score > threshold``. The false-alert rate only changes at score values, so the
    answer is one of the scores: with ``k = floor(rate * n)`` alerts allowed, it is the (k+1)-th
    largest score (ties only lower the rate further); anything smaller lets k+1 scores through.
    """
    scores = np.sort(np.asarray(normal_scores, dtype=np.float64))
    if scores.size == 0:
        raise ValueError("cannot calibrate a threshold without held-out normal scores")
    if not 0.0 <= target_false_alert_rate < 1.0:
        raise ValueError(f"target_false_alert_rate must be in [0, 1), got {target_false_alert_rate}")
    if np.isnan(scores).any():
        raise ValueError("calibration scores contain NaN")
    # the epsilon keeps e.g. 0.001 * 1000 from rounding down to 0 alerts
    allowed_alerts = math.floor(target_false_alert_rate * scores.size + 1e-9)
    return float(scores[scores.size - 1 - allowed_alerts])
