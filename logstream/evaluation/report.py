"""Evaluation results, and their rendering: a markdown table plus PNG plots next to it.

Plots are drawn on standalone ``matplotlib.figure.Figure`` objects (Agg rendering), so making a
report never touches pyplot's global state or needs a display.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from .metrics import Metrics, pr_curve
from .spec import EvalSpec

# (column title, Metrics field, decimals)
TABLE_COLUMNS = (
    ("precision", "precision", 3),
    ("recall", "recall", 3),
    ("F1", "f1", 3),
    ("best F1", "best_f1", 3),
    ("precision at best F1", "best_f1_precision", 3),
    ("recall at best F1", "best_f1_recall", 3),
    ("ROC-AUC", "roc_auc", 3),
    ("PR-AUC", "pr_auc", 3),
    ("false alerts / 10k normal", "false_alerts_per_10k", 1),
)
# with a real-world ratio (spec.real_normal_per_anomalous): the figures read at that ratio first
REAL_RATIO_COLUMNS = (
    ("F1 at real ratio", "real_f1", 3),
    ("precision at real ratio", "real_precision", 3),
    ("best F1 at real ratio", "best_real_f1", 3),
    ("recall", "recall", 3),
    ("ROC-AUC", "roc_auc", 3),
    ("recall at 0.1% FPR", "recall_at_fpr_0_1", 3),
    ("recall at 1% FPR", "recall_at_fpr_1", 3),
    ("F1 (as sampled)", "f1", 3),
    ("best F1 (as sampled)", "best_f1", 3),
    ("false alerts / 10k normal", "false_alerts_per_10k", 1),
)


def table_columns(spec: EvalSpec):
    return REAL_RATIO_COLUMNS if spec.real_normal_per_anomalous is not None else TABLE_COLUMNS


@dataclass
class DetectorRun:
    """One detector on one split, at the spec's evaluation level (lines or groups)."""
    detector: str
    split: str
    metrics: Metrics
    scores: np.ndarray
    labels: np.ndarray
    fit_seconds: float
    score_seconds: float
    lines_scored: int

    @property
    def alerts(self) -> int:
        return int(np.sum(self.scores > self.metrics.threshold))


@dataclass
class SplitSummary:
    name: str
    train: int          # normal lines a detector fits on (extra files included)
    calibration: int    # held-out normal lines for the threshold
    test: int           # test lines
    test_units: int     # test lines or groups, at the evaluation level
    test_anomalous: int  # anomalous test units


@dataclass
class EvaluationReport:
    spec: EvalSpec
    n_entries: int
    n_anomalous: int
    n_extra_train: int
    splits: list[SplitSummary] = field(default_factory=list)
    runs: list[DetectorRun] = field(default_factory=list)
    markdown_path: Path | None = None
    plot_paths: list[Path] = field(default_factory=list)

    @property
    def detectors(self) -> list[str]:
        return list(dict.fromkeys(run.detector for run in self.runs))

    def runs_of(self, detector: str) -> list[DetectorRun]:
        return [run for run in self.runs if run.detector == detector]

    def summary(self, detector: str) -> dict[str, tuple[float, float]]:
        """Metric -> (mean, sample std) over the splits (std is NaN for a single split)."""
        out = {}
        for _, name, _ in TABLE_COLUMNS + REAL_RATIO_COLUMNS:
            values = np.array([getattr(run.metrics, name) for run in self.runs_of(detector)], dtype=float)
            values = values[~np.isnan(values)]
            mean = float(values.mean()) if values.size else math.nan
            std = float(values.std(ddof=1)) if values.size > 1 else math.nan
            out[name] = (mean, std)
        return out


def _number(value: float, decimals: int) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{decimals}f}"


def _cell(mean: float, std: float, decimals: int, multi: bool) -> str:
    if multi and not math.isnan(std):
        return f"{_number(mean, decimals)} ± {_number(std, decimals)}"
    return _number(mean, decimals)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _unit(report: EvaluationReport) -> str:
    return "groups" if report.spec.level == "group" else "lines"


def _header(report: EvaluationReport) -> list[str]:
    spec, unit = report.spec, _unit(report)[:-1]
    protocol = (f"{spec.split.kind} split, train fraction {spec.split.train_fraction}"
                if hasattr(spec.split, "train_fraction") else
                f"{spec.split.kind} split: every labeled line is test, detectors train on the extra files")
    if spec.split.kind == "random":
        protocol += f", seeds {list(spec.split.seeds)} (mean ± std over seeds)"
    extra = f"; plus {report.n_extra_train:,} normal-only training lines" if report.n_extra_train else ""
    level = " (a group's score is the max of its lines')" if unit == "group" else ""
    if spec.sessions:
        level = " (a session's score is the max of its lines' and its end's, scored after its last line)"
    ratio = []
    if spec.real_normal_per_anomalous is not None:
        ratio = [f"- real-world ratio: {spec.real_normal_per_anomalous:g} normal {unit}s per anomalous one; "
                 f"\"at real ratio\" weights each false alert by that ratio over the test set's "
                 f"(precision = TP / (TP + w FP)); ROC-AUC and recall at a fixed false-positive rate need "
                 f"no weighting"]
    return [f"# {spec.name}", ""] + ([spec.description, ""] if spec.description else []) + [
        f"- spec: `{spec.source or spec.name}`",
        f"- data: {report.n_entries:,} lines, {report.n_anomalous:,} anomalous{extra}",
        f"- protocol: {protocol}; detectors fit on normal lines only; {spec.calibration_fraction:.0%} of the "
        f"training normals held out to calibrate each threshold for a target false-alert rate of "
        f"{spec.target_false_alert_rate} per {unit}; evaluated per {unit}{level}",
        *ratio, ""]


def summary_table(report: EvaluationReport) -> list[str]:
    """One row per detector; "mean ± std" cells when there are several splits."""
    multi = len(report.splits) > 1
    rows = []
    for name in report.detectors:
        summary = report.summary(name)
        rows.append([name] + [_cell(*summary[key], decimals, multi)
                              for _, key, decimals in table_columns(report.spec)])
    base_rates = ", ".join(f"{s.test_anomalous / s.test_units:.3f}" for s in report.splits)
    return _table(["detector"] + [title for title, _, _ in table_columns(report.spec)], rows) + [
        "", f"Precision, recall, F1 and false alerts at each detector's calibrated threshold (alert when "
        f"score > threshold); best F1 at the best threshold in hindsight; PR-AUC is average precision "
        f"(anomalous share of the test {_unit(report)}: {base_rates})."]


def _splits_table(report: EvaluationReport) -> list[str]:
    groups = _unit(report) == "groups"
    header = ["split", "train normal lines", "calibration lines", "test lines"]
    header += ["test groups", "anomalous test groups"] if groups else ["anomalous test lines"]
    rows = [[s.name, f"{s.train:,}", f"{s.calibration:,}", f"{s.test:,}"]
            + ([f"{s.test_units:,}"] if groups else []) + [f"{s.test_anomalous:,}"] for s in report.splits]
    return _table(header, rows)


def _runs_table(report: EvaluationReport) -> list[str]:
    rows = []
    for run in report.runs:
        m = run.metrics
        rate = run.lines_scored / run.score_seconds if run.score_seconds > 0 else math.inf
        rows.append([run.detector, run.split, f"{m.threshold:.4g}", f"{run.alerts:,}",
                     _number(m.precision, 3), _number(m.recall, 3), _number(m.f1, 3), _number(m.best_f1, 3),
                     f"{m.best_f1_min_score:.4g}", _number(m.roc_auc, 3), _number(m.pr_auc, 3),
                     _number(m.false_alerts_per_10k, 1), f"{run.fit_seconds:.1f}", f"{rate:,.0f}"])
    return _table(["detector", "split", "threshold", "alerts", "precision", "recall", "F1", "best F1",
                   "best F1 at score >=", "ROC-AUC", "PR-AUC", "false alerts / 10k", "fit s",
                   "scored lines / s"], rows)


def markdown(report: EvaluationReport, plot_names: list[str] = ()) -> str:
    out = _header(report) + summary_table(report)
    out += ["", "## Per split", ""] + _splits_table(report) + [""] + _runs_table(report)
    if plot_names:
        out += ["", "## Plots", ""] + [f"![{name}]({name})" for name in plot_names]
    return "\n".join(out) + "\n"


def _wide_positive(values: np.ndarray) -> bool:
    """Worth a log axis: all positive and spanning more than two decades."""
    return values.size > 0 and values.min() > 0 and values.max() / values.min() > 100


def plot_score_distributions(report: EvaluationReport, path: Path) -> Path:
    """Histograms of normal vs anomalous scores per detector, pooled over the splits."""
    names = report.detectors
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    fig = Figure(figsize=(5 * columns, 3.6 * rows), layout="constrained")
    unit = _unit(report)
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, columns, i + 1)
        runs = report.runs_of(name)
        scores = np.concatenate([run.scores for run in runs])
        labels = np.concatenate([run.labels for run in runs]).astype(bool)
        finite = scores[np.isfinite(scores)]
        log_x = _wide_positive(finite)
        if finite.size == 0 or finite.min() == finite.max():
            bins = 10
        elif log_x:
            bins = np.geomspace(finite.min(), finite.max(), 41)
        else:
            bins = np.linspace(finite.min(), finite.max(), 41)
        for mask, label, color in ((~labels, "normal", "tab:blue"), (labels, "anomalous", "tab:red")):
            ax.hist(np.clip(scores[mask], finite.min(), finite.max()) if finite.size else scores[mask],
                    bins=bins, alpha=0.6, color=color, label=f"{label} ({int(mask.sum())})")
        threshold = runs[0].metrics.threshold
        if math.isfinite(threshold):
            ax.axvline(threshold, color="black", linestyle="--", linewidth=1,
                       label=f"threshold ({runs[0].split})")
        if (~labels).sum() >= 10 * max(int(labels.sum()), 1):  # else the rare class would vanish
            ax.set_yscale("log")
        if log_x:
            ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("score")
        ax.set_ylabel(f"{unit} (log scale)" if ax.get_yscale() == "log" else unit)
        ax.legend(fontsize=8)
    fig.suptitle(f"{report.spec.name}: score distributions of the test {unit}")
    fig.savefig(path, dpi=110)
    return path


def plot_pr_curves(report: EvaluationReport, path: Path) -> Path:
    """Precision-recall curves of all detectors on one figure (one curve per split)."""
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.add_subplot()
    colors = [f"C{i}" for i in range(10)]
    for i, name in enumerate(report.detectors):
        runs = report.runs_of(name)
        mean_ap = report.summary(name)["pr_auc"][0]
        for j, run in enumerate(runs):
            precision, recall, _ = pr_curve(run.scores, run.labels)
            if precision.size == 0:
                continue
            ax.step(np.r_[0.0, recall], np.r_[precision[0], precision], where="pre",
                    color=colors[i % len(colors)], alpha=1.0 if len(runs) == 1 else 0.6,
                    label=f"{name} (AP {_number(mean_ap, 3)})" if j == 0 else None)
    rates = [s.test_anomalous / s.test_units for s in report.splits]
    ax.axhline(float(np.mean(rates)), color="gray", linestyle=":", label="anomalous share")
    ax.set_xlim(0, 1.01)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_title(f"{report.spec.name}: precision-recall")
    ax.legend(fontsize=8, loc="upper right")
    fig.savefig(path, dpi=110)
    return path


def write_report(report: EvaluationReport, out_dir: str | Path) -> EvaluationReport:
    """Writes ``<name>.md``, ``<name>_scores.png`` and ``<name>_pr.png`` into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = report.spec.name
    plots = [plot_score_distributions(report, out_dir / f"{name}_scores.png"),
             plot_pr_curves(report, out_dir / f"{name}_pr.png")]
    report.plot_paths = plots
    report.markdown_path = out_dir / f"{name}.md"
    report.markdown_path.write_text(markdown(report, [p.name for p in plots]))
    return report
