"""Combine the per-dataset evaluation reports into benchmarks/results/detection.md.

Reads the summary tables that `logstream eval` wrote (benchmarks/results/<spec>.md) and puts the
figures side by side: one row per dataset and protocol, one column group per detector.

    python benchmarks/detection_summary.py --steps 200
"""

from __future__ import annotations

import argparse
import platform
import re
from pathlib import Path

import torch

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
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    out = ["# Detection on real labeled logs", "",
           "Made by `benchmarks/run_detection.sh` (that is, for each spec: "
           f"`logstream eval benchmarks/specs/<spec>.yaml --out benchmarks/results --lm-steps {args.steps}`, "
           f"then `python benchmarks/detection_summary.py --steps {args.steps}`).",
           f"Machine: {cpu}, 2 cores (shared), torch {torch.__version__}, CPU only. Every language-model "
           "detector uses a model trained for that split on its normal training lines only "
           f"({args.steps} steps of the default recipe's architecture, 1.1M parameters).", "",
           "Per-dataset reports with thresholds, per-split figures and plots: "
           + ", ".join(f"[{s}.md]({s}.md)" for s in tables), ""]
    for metric in ("PR-AUC", "ROC-AUC", "best F1", "F1", "false alerts / 10k normal"):
        out += [f"## {metric}" + (" (at each detector's calibrated threshold)" if metric in ("F1",) else ""), "",
                "| dataset | " + " | ".join(detectors) + " |", "|---|" + "---|" * len(detectors)]
        for spec, table in tables.items():
            out.append(f"| {spec} | " + " | ".join(table.get(d, {}).get(metric, "") for d in detectors) + " |")
        out.append("")
    (RESULTS / "detection.md").write_text("\n".join(out))
    print((RESULTS / "detection.md").read_text())


if __name__ == "__main__":
    main()
