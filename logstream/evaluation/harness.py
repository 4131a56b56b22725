"""Runs detectors over a dataset spec's splits and writes the report."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm.auto import tqdm

from .data import Split, load_dataset, make_splits
from .detector import Detector
from .metrics import compute_metrics, group_max
from .report import DetectorRun, EvaluationReport, SplitSummary, write_report
from .spec import EvalSpec, load_spec

log = logging.getLogger(__name__)

DetectorsFactory = Callable[[EvalSpec, str], list[Detector]]


def _evaluation_level(spec: EvalSpec, split: Split, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = np.array([e.label for e in split.test], dtype=np.int64)
    if spec.level == "group":
        scores, labels, _ = group_max(scores, labels, [e.group for e in split.test])
    return scores, labels


def _split_summary(spec: EvalSpec, split: Split) -> SplitSummary:
    _, labels = _evaluation_level(spec, split, np.zeros(len(split.test)))
    return SplitSummary(name=split.name, train=len(split.train), calibration=len(split.calibration),
                        test=len(split.test), test_units=int(labels.size), test_anomalous=int(labels.sum()))


def _checked_scores(detector: Detector, split: Split, scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (len(split.test),):
        raise ValueError(f"detector {detector.name!r} returned {scores.shape} scores for "
                         f"{len(split.test)} entries on split {split.name!r}")
    if np.isnan(scores).any():
        raise ValueError(f"detector {detector.name!r} returned NaN scores on split {split.name!r}")
    return scores


def run_detector(spec: EvalSpec, split: Split, detector: Detector) -> DetectorRun:
    """Fit on the split's normal training entries, calibrate, score the test part, measure."""
    started = time.perf_counter()
    detector.fit(split.train, split.calibration, spec.target_false_alert_rate)
    fitted = time.perf_counter()
    scores = _checked_scores(detector, split, detector.score(split.test))
    scored = time.perf_counter()
    scores, labels = _evaluation_level(spec, split, scores)
    return DetectorRun(detector=detector.name, split=split.name,
                       metrics=compute_metrics(scores, labels, detector.threshold, spec.real_normal_per_anomalous),
                       scores=scores, labels=labels, fit_seconds=fitted - started,
                       score_seconds=scored - fitted, lines_scored=len(split.test))


def run_evaluation(spec: EvalSpec | str | Path, detectors_factory: DetectorsFactory, out_dir: str | Path,
                   progress: bool = True) -> EvaluationReport:
    """Evaluate fresh detectors from ``detectors_factory(spec, split_name)`` on every split of the
    spec (one per seed for random splits); writes ``out_dir/<spec name>.md`` and its plots."""
    if not isinstance(spec, EvalSpec):
        spec = load_spec(spec)
    dataset = load_dataset(spec)
    splits = make_splits(dataset)
    report = EvaluationReport(spec=spec, n_entries=len(dataset.entries), n_anomalous=dataset.n_anomalous,
                              n_extra_train=len(dataset.extra_train),
                              splits=[_split_summary(spec, s) for s in splits])
    for split in tqdm(splits, desc=spec.name, unit="split", disable=not progress):
        detectors = list(detectors_factory(spec, split.name))
        if not detectors:
            raise ValueError(f"{spec.name}: no detector to evaluate")
        names = [d.name for d in detectors]
        if len(set(names)) != len(names):
            raise ValueError(f"{spec.name}: detector names must be unique, got {names}")
        for detector in tqdm(detectors, desc=split.name, unit="detector", leave=False, disable=not progress):
            run = run_detector(spec, split, detector)
            log.info("%s %s %s: F1 %.3f, best F1 %.3f, ROC-AUC %.3f", spec.name, split.name, run.detector,
                     run.metrics.f1, run.metrics.best_f1, run.metrics.roc_auc)
            report.runs.append(run)
    return write_report(report, out_dir)
