"""Combine the per-dataset evaluation reports into benchmarks/results/detection.md.

Reads the summary tables that `logstream eval` wrote (benchmarks/results/<spec>.md) and puts the
figures side by side: one row per dataset and protocol, one column group per detector.

    python benchmarks/detection_summary.py --steps 200
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import torch
from cache_bench_setup import cpu_name

RESULTS = Path(__file__).resolve().parent / "results"
SPECS = ["hdfs_blocks", "bgl_chrono", "bgl_random"]


def summary_table(markdown: str) -> dict[str, dict[str, str]]:
    """detector -> column -> cell, from the first table of a harness report."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(header) or cells[0] == header[0]:
            break
        rows[cells[0]] = dict(zip(header, cells))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="--lm-steps the reports were made with")
    args = parser.parse_args()
    tables = {}
    for spec in SPECS:
        path = RESULTS / f"{spec}.md"
        if path.exists():
            tables[spec] = summary_table(path.read_text())
    detectors = list(dict.fromkeys(d for t in tables.values() for d in t))
    cpu = cpu_name()
    out = ["# Detection on real labeled logs", "",
           "Made by `benchmarks/run_detection.sh` (that is, for each spec: "
           f"`logstream eval benchmarks/specs/<spec>.yaml --out benchmarks/results --lm-steps {args.steps}`, "
           f"then `python benchmarks/detection_summary.py --steps {args.steps}`).",
           f"Machine: {cpu}, 2 cores (shared), torch {torch.__version__}, CPU only. Every language-model "
           "detector uses a model trained for that split on its normal training lines only "
           f"({args.steps} steps of the default recipe's architecture, 1.1M parameters). Every detector reads "
           "each line's canonical text (`logstream.canonical`: level, source and message; no time stamp, "
           "host, pid or label column), as the service does.", "",
           "Per-dataset reports with thresholds, per-split figures and plots: "
           + ", ".join(f"[{s}.md]({s}.md)" for s in tables), ""]
    out += ["## The service's own decision", "",
            f"`{LIVE}` alerts where the worker would (`scoring.adaptive`: thresholds adapting per source and "
            "template, rare levels, unseen problems, the model's calibration where it holds; `adapt`: continual "
            "fine-tuning), "
            "after reading the split's training lines in order as the service would have; it learns from the "
            "test lines it does not alert on, never from a label. F1 at that live threshold beside best F1 in "
            "hindsight, and the false alerts it raised:", "",
            "| dataset | live: precision | live: recall | live: F1 | live: false alerts / 10k normal | best F1 of "
            f"`{LIVE}` | best F1 of any detector |", "|---|---|---|---|---|---|---|"]
    for spec, table in tables.items():
        live = table.get(LIVE, {})
        best_any = max((_mean(t.get("best F1", "")) or 0.0, d) for d, t in table.items())
        out.append(f"| {spec} | {live.get('precision', '')} | {live.get('recall', '')} | {live.get('F1', '')} | "
                   f"{live.get('false alerts / 10k normal', '')} | {live.get('best F1', '')} | "
                   f"{best_any[0]:.3f} ({best_any[1]}) |")
    out.append("")
    for metric in ("PR-AUC", "ROC-AUC", "best F1", "F1", "false alerts / 10k normal"):
        out += [f"## {metric}" + (" (at each detector's calibrated threshold; lm-live: the live one)"
                                  if metric in ("F1",) else ""), "",
                "| dataset | " + " | ".join(detectors) + " |", "|---|" + "---|" * len(detectors)]
        for spec, table in tables.items():
            out.append(f"| {spec} | " + " | ".join(table.get(d, {}).get(metric, "") for d in detectors) + " |")
        out.append("")
    out += reading(tables)
    (RESULTS / "detection.md").write_text("\n".join(out))
    print((RESULTS / "detection.md").read_text())


def _mean(cell: str) -> float | None:
    match = re.match(r"\s*(-?[\d.]+)", cell or "")
    return float(match.group(1)) if match else None


SCORER = "lm-stream"  # the service's score: mean token NLL in the stream's context
LIVE = "lm-live"  # the service's decision: that score against its adaptive thresholds
BASELINES = ["drain-novelty", "lm-no-context", "lm-window-no-sink"]


def live_reading(tables: dict[str, dict[str, dict[str, str]]]) -> str:
    """What the service's own decision did, with its figures read from the tables."""
    def cell(spec: str, detector: str, column: str) -> str:
        return tables.get(spec, {}).get(detector, {}).get(column, "n/a")

    hdfs = (f"On HDFS blocks, at its live threshold: precision {cell('hdfs_blocks', LIVE, 'precision')}, recall "
            f"{cell('hdfs_blocks', LIVE, 'recall')} (blocks whose only sign is a new message, `... does not belong "
            "to any file`, stay under the new-template threshold). ") if "hdfs_blocks" in tables else ""
    bgl = ""
    if "bgl_chrono" in tables:
        bgl = (f"On BGL's chronological halves, at its live threshold: F1 {cell('bgl_chrono', LIVE, 'F1')}, recall "
               f"{cell('bgl_chrono', LIVE, 'recall')}, {cell('bgl_chrono', LIVE, 'false alerts / 10k normal')} "
               "false alerts per 10k normal lines (the issue's aim: F1 above every baseline's best F1, which was "
               f"0.245 when it was filed, here drain-novelty {cell('bgl_chrono', 'drain-novelty', 'best F1')} and "
               f"`lm-no-context` {cell('bgl_chrono', 'lm-no-context', 'best F1')}, with at most 50 false alerts per "
               "10k: the false alerts are not met). It alerts mostly by the unseen-problem and rare-level rules "
               "(FATAL and ERROR lines, problem words, in patterns no normal line of the source showed); BGL "
               "labels as normal many error messages that come back in patterns the training half never showed "
               "(`ciod: Error loading ... Exec format error`, `idoproxydb hit ASSERT`, in bursts), which alert "
               "until they are marked normal or turn routine (`scoring.adaptive.routine_*`).")
    return f"- **`{LIVE}`** (the service's decision). " + hdfs + bgl


def reading(tables: dict[str, dict[str, dict[str, str]]]) -> list[str]:
    """Where the scorer stands against each baseline (computed), and what the figures mean."""
    out = ["## Reading the results", "",
           f"The scorer is `{SCORER}` (mean token NLL in the stream's context: what the service runs). "
           "Its PR-AUC against each baseline of the issue, from the tables above:", ""]
    for spec, table in tables.items():
        ours = _mean(table.get(SCORER, {}).get("PR-AUC", ""))
        verdicts = []
        for base in BASELINES:
            theirs = _mean(table.get(base, {}).get("PR-AUC", ""))
            if ours is None or theirs is None:
                continue
            word = "beats" if ours > theirs + 0.005 else ("ties" if abs(ours - theirs) <= 0.005 else "loses to")  # within 0.005: noise
            verdicts.append(f"{word} {base} ({ours:.3f} vs {theirs:.3f})")
        out.append(f"- {spec}: " + "; ".join(verdicts))
    out += ["",
            "- **HDFS, block level**: every detector ranks the test blocks (few, 7 of them anomalous) nearly or "
            "exactly perfectly, so this split hardly separates them; the calibrated-threshold columns do. A "
            "block's score is the maximum over its lines, so one unusual but normal line in a long block is "
            "enough for a false alert.",
            "- **BGL, chronological halves** (drift): later months bring normal templates never seen in training "
            "(../shared/notes/detection-facts.md), so every detector is weak, and thresholds calibrated on the "
            "earlier months do not transfer (see the false-alert table). This is where the stream context helps "
            "the model most.",
            "- **BGL, random halves** (in distribution): in a random half, a line's neighbours in the stream are "
            "a random subsample of the log, which a model trained on contiguous text reads as noisy context; "
            "scoring each line alone ranks better there.",
            "- **Sinks**: the 1.1M-parameter model does not pile its attention onto the first tokens the way "
            "large LMs do (the cache benchmark shows the same: perplexity with and without sinks within 0.01), "
            "so `lm-window-no-sink` is close to `lm-stream`; the sink prefix is what keeps memory fixed and the "
            "positions inside the trained range, not a detection gain at this model size.",
            live_reading(tables),
            "- **F1 at the calibrated threshold** is far below best F1: the target false-alert rate (0.001) is "
            "met on a few hundred held-out normal lines, so the threshold is about the largest held-out score, "
            "and test normals (other months, other blocks) exceed it. The issue's aims (F1 >= 0.9 on HDFS "
            "blocks, >= 0.8 on BGL lines) are compared with best F1 in the table above, not met at the "
            "calibrated threshold.",
            ""]
    return out


if __name__ == "__main__":
    main()
