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


def calibrate_tail_threshold(normal_scores: Sequence[float] | np.ndarray, target_false_alert_rate: float,
                             tail_fraction: float = 0.1, min_tail: int = 5) -> float:
    """``calibrate_threshold``, extrapolated when there are too few scores to see the target rate.

    With n held-out scores, a rate below about 10/n cannot be read off them: at 0.001 with 480
    held-out sessions the empirical answer is simply the largest one, and the next normal session
    beats it about one time in 480. Then the tail is extrapolated as extreme-value methods for
    streams do (peaks over threshold, as in SPOT, Siffer et al., KDD 2017) with an exponential
    tail: over the k-th largest score u, scores exceed u + x with probability (k/n) exp(-x/m),
    m their mean excess, so the target rate is met at u + m ln(k / (n rate)). Never below the
    empirical threshold.
    """
    scores = np.sort(np.asarray(normal_scores, dtype=np.float64))
    empirical = calibrate_threshold(scores, target_false_alert_rate)
    n = scores.size
    k = max(min_tail, int(tail_fraction * n))
    if target_false_alert_rate <= 0 or n * target_false_alert_rate >= k or n <= k:
        return empirical
    u = scores[n - k - 1]
    mean_excess = float(np.mean(scores[n - k:] - u))
    return max(empirical, float(u + mean_excess * math.log(k / (n * target_false_alert_rate))))
