"""The evaluation harness of ``logstream eval``: labeled dataset specs, splits, detectors, metrics, reports.

    from logstream.evaluation import load_spec, run_evaluation, DrainNoveltyDetector
    report = run_evaluation(load_spec("benchmarks/specs/bgl_chrono.yaml"),
                            lambda spec, split: [DrainNoveltyDetector(pins=spec.pins())],
                            out_dir="benchmarks/results")
"""

from .baselines import DrainNoveltyDetector
from .data import Dataset, Split, load_dataset, make_splits
from .detector import Detector, LogEntry, calibrate_threshold, calibration_scores
from .harness import run_evaluation
from .metrics import (Metrics, average_precision, best_f1, compute_metrics, false_alerts_per_10k, group_max,
                      pr_curve, precision_recall_f1, roc_auc)
from .report import EvaluationReport
from .spec import EvalSpec, SpecError, load_spec

__all__ = [
    "Dataset", "Detector", "DrainNoveltyDetector", "EvalSpec", "EvaluationReport", "LogEntry", "Metrics",
    "SpecError", "Split", "average_precision", "best_f1", "calibrate_threshold", "calibration_scores",
    "compute_metrics", "false_alerts_per_10k", "group_max", "load_dataset", "load_spec", "make_splits",
    "pr_curve", "precision_recall_f1", "roc_auc", "run_evaluation",
]
