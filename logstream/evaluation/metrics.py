"""Detection metrics, computed with numpy only. Label 1 = anomalous; alerts fire on score > threshold.

Definitions follow scikit-learn where it has one: ROC-AUC counts a tie between an anomalous and a
normal score as half a win (average ranks), average precision is the step-wise sum
``sum_k (R_k - R_{k-1}) * P_k`` over the distinct score values, highest first, with tied scores
entering together. Precision with no alert at all is 0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


def _arrays(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"scores {scores.shape} and labels {labels.shape} must be 1-D and of equal length")
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    return scores, labels


def precision_recall_f1(scores, labels, threshold: float) -> tuple[float, float, float]:
    scores, labels = _arrays(scores, labels)
    alerts = scores > threshold
    true_alerts = int(np.sum(alerts & labels))
    precision = true_alerts / alerts.sum() if alerts.any() else 0.0
    recall = true_alerts / labels.sum() if labels.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(precision), float(recall), float(f1)


def false_alerts_per_10k(scores, labels, threshold: float) -> float:
    """Alerts on normal entries per 10,000 normal entries (lines or groups)."""
    scores, labels = _arrays(scores, labels)
    normal = ~labels
    if not normal.any():
        return math.nan
    return float(10_000 * np.sum(scores[normal] > threshold) / normal.sum())


def _cumulative_counts(scores: np.ndarray, labels: np.ndarray):
    """True and false alerts when alerting on score >= each distinct value, highest value first."""
    order = np.argsort(-scores, kind="mergesort")
    sorted_scores, sorted_labels = scores[order], labels[order]
    # the last position of each run of equal scores: tied entries are alerted together
    last_of_tie = np.r_[np.flatnonzero(np.diff(sorted_scores) != 0), sorted_scores.size - 1]
    true_alerts = np.cumsum(sorted_labels)[last_of_tie]
    false_alerts = (last_of_tie + 1) - true_alerts
    return true_alerts, false_alerts, sorted_scores[last_of_tie]


def pr_curve(scores, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(precision, recall, cut) for alerting on score >= cut, one point per distinct score."""
    scores, labels = _arrays(scores, labels)
    if scores.size == 0 or not labels.any():
        return np.array([]), np.array([]), np.array([])
    true_alerts, false_alerts, cuts = _cumulative_counts(scores, labels)
    return true_alerts / (true_alerts + false_alerts), true_alerts / labels.sum(), cuts


def average_precision(scores, labels) -> float:
    """PR-AUC as average precision (scikit-learn's step-wise definition)."""
    precision, recall, _ = pr_curve(scores, labels)
    if precision.size == 0:
        return math.nan
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def best_f1(scores, labels) -> tuple[float, float]:
    """(best F1 over all thresholds, the lowest score alerted at that F1)."""
    f1, cut, _, _ = best_f1_point(scores, labels)
    return f1, cut


def best_f1_point(scores, labels) -> tuple[float, float, float, float]:
    """(best F1, the lowest score alerted at it, precision there, recall there)."""
    scores, labels = _arrays(scores, labels)
    if scores.size == 0 or not labels.any():
        return 0.0, math.inf, 0.0, 0.0
    true_alerts, false_alerts, cuts = _cumulative_counts(scores, labels)
    f1 = 2 * true_alerts / (true_alerts + false_alerts + labels.sum())  # 2TP / (2TP + FP + FN)
    best = int(np.argmax(f1))
    precision = true_alerts[best] / (true_alerts[best] + false_alerts[best])
    return float(f1[best]), float(cuts[best]), float(precision), float(true_alerts[best] / labels.sum())


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    unique, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    first_rank = np.cumsum(counts) - counts + 1
    return (first_rank + (counts - 1) / 2.0)[inverse]


def roc_auc(scores, labels) -> float:
    """P(anomalous score > normal score) + 0.5 * P(tie) (Mann-Whitney U with average ranks)."""
    scores, labels = _arrays(scores, labels)
    n_anomalous, n_normal = int(labels.sum()), int((~labels).sum())
    if n_anomalous == 0 or n_normal == 0:
        return math.nan
    rank_sum = _average_ranks(scores)[labels].sum()
    return float((rank_sum - n_anomalous * (n_anomalous + 1) / 2) / (n_anomalous * n_normal))


def fp_weight(labels, real_normal_per_anomalous: float) -> float:
    """How much one false alert counts so that precision reads as at the real-world ratio: the
    evaluated set's normal:anomalous ratio scaled up to the real one."""
    labels = np.asarray(labels).astype(bool)
    n_anomalous, n_normal = int(labels.sum()), int((~labels).sum())
    if n_anomalous == 0 or n_normal == 0:
        return math.nan
    return real_normal_per_anomalous * n_anomalous / n_normal


def weighted_precision_recall_f1(scores, labels, threshold: float, weight: float) -> tuple[float, float, float]:
    """Precision TP / (TP + weight * FP), recall and F1 at a threshold."""
    scores, labels = _arrays(scores, labels)
    alerts = scores > threshold
    tp, fp = int(np.sum(alerts & labels)), int(np.sum(alerts & ~labels))
    precision = tp / (tp + weight * fp) if tp + fp else 0.0
    recall = tp / labels.sum() if labels.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(precision), float(recall), float(f1)


def best_weighted_f1(scores, labels, weight: float) -> float:
    """The best F1 over all thresholds with false alerts weighted."""
    scores, labels = _arrays(scores, labels)
    if scores.size == 0 or not labels.any():
        return 0.0
    tp, fp, _ = _cumulative_counts(scores, labels)
    f1 = 2 * tp / (2 * tp + weight * fp + (labels.sum() - tp))
    return float(f1.max())


def recall_at_false_positive_rate(scores, labels, rate: float) -> float:
    """Recall at the lowest threshold whose false-positive rate (share of normal units alerting) is
    at most ``rate``."""
    scores, labels = _arrays(scores, labels)
    if not labels.any() or labels.all():
        return math.nan
    tp, fp, _ = _cumulative_counts(scores, labels)
    allowed = fp <= rate * (~labels).sum()
    return float(tp[allowed].max() / labels.sum()) if allowed.any() else 0.0


@dataclass(frozen=True)
class Metrics:
    precision: float            # at the calibrated threshold
    recall: float
    f1: float
    best_f1: float              # at the best threshold in hindsight
    best_f1_min_score: float    # ... reached by alerting on score >= this
    best_f1_precision: float    # precision and recall at that best F1
    best_f1_recall: float
    roc_auc: float
    pr_auc: float               # average precision
    false_alerts_per_10k: float
    threshold: float
    n: int                      # lines or groups evaluated
    n_anomalous: int
    recall_at_fpr_0_1: float = math.nan   # recall with at most 0.1% of normal units alerting
    recall_at_fpr_1: float = math.nan     # ... at most 1%
    fp_weight: float = math.nan           # with a real-world ratio: each false alert counts this much
    real_precision: float = math.nan      # precision and F1 at the calibrated threshold, weighted
    real_f1: float = math.nan
    best_real_f1: float = math.nan        # best F1 in hindsight, weighted

    def as_dict(self) -> dict:
        return asdict(self)


def compute_metrics(scores, labels, threshold: float, real_normal_per_anomalous: float | None = None) -> Metrics:
    scores, labels = _arrays(scores, labels)
    precision, recall, f1 = precision_recall_f1(scores, labels, threshold)
    best, best_cut, best_precision, best_recall = best_f1_point(scores, labels)
    real = {}
    if real_normal_per_anomalous is not None:
        weight = fp_weight(labels, real_normal_per_anomalous)
        real_precision, _, real_f1 = weighted_precision_recall_f1(scores, labels, threshold, weight)
        real = dict(fp_weight=weight, real_precision=real_precision, real_f1=real_f1,
                    best_real_f1=best_weighted_f1(scores, labels, weight))
    return Metrics(**real, recall_at_fpr_0_1=recall_at_false_positive_rate(scores, labels, 0.001),
                   recall_at_fpr_1=recall_at_false_positive_rate(scores, labels, 0.01),precision=precision, recall=recall, f1=f1, best_f1=best, best_f1_min_score=best_cut,
                   best_f1_precision=best_precision, best_f1_recall=best_recall,
                   roc_auc=roc_auc(scores, labels), pr_auc=average_precision(scores, labels),
                   false_alerts_per_10k=false_alerts_per_10k(scores, labels, threshold),
                   threshold=float(threshold), n=int(scores.size), n_anomalous=int(labels.sum()))


def group_max(scores, labels, groups) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per-group (max score, max label, group key), groups in order of first appearance:
    a group alerts when any of its lines does, and is anomalous when any of its lines is."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if not (len(scores) == len(labels) == len(groups)):
        raise ValueError("scores, labels and groups must have equal lengths")
    keys, first, inverse = np.unique(np.asarray(groups, dtype=object).astype(str), return_index=True,
                                     return_inverse=True)
    group_scores = np.full(keys.size, -np.inf)
    group_labels = np.zeros(keys.size, dtype=np.int64)
    np.maximum.at(group_scores, inverse, scores)
    np.maximum.at(group_labels, inverse, labels)
    order = np.argsort(first)
    return group_scores[order], group_labels[order], [str(k) for k in keys[order]]
