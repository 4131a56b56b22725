#!/usr/bin/env python3
"""Entity flows (``logstream.scoring.flows``): what the "step out of order" rule finds, and what it costs.

The same command a user runs (``logstream score --json --all``), twice on the same files: with the rule
(the default settings) and without it (``LOGSTREAM_SCORING__ADAPTIVE__FLOW_IDS=''``), side by side:

* the demo's synthetic services (``logstream synth``): detection per injected anomaly kind (an anomaly is
  caught when any of its labelled lines alerts) and false alerts per 1,000 normal lines;
* HDFS block sessions (``../shared/data/hdfs_sessions``: real event sequences, 800 normal and 800
  anomalous blocks in ``dev.log``), read after ``train_normal.log`` as a known-good baseline
  (``--normal``), without fine-tuning (the shipped model was trained on HDFS): a block is flagged when
  any of its lines alerts.

    python benchmarks/flows.py                       # writes benchmarks/results/flows.md
    python benchmarks/flows.py --skip-hdfs --synth-lines 3000 --out /tmp/flows   # a short look
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cache_bench_setup import describe_machine  # noqa: E402 (next to this script)

ROOT = Path(__file__).resolve().parent.parent
OFF = {"LOGSTREAM_SCORING__ADAPTIVE__FLOW_IDS": ""}
OUT_OF_ORDER = "step out of order"
BLOCK = re.compile(r"blk_-?\d+")


def score(args: list[str], env_extra: dict[str, str]) -> tuple[list[dict], float]:
    """``logstream score --json --all`` on the arguments: its records and its wall time."""
    env = {**os.environ, **env_extra}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "logstream.cli", "score", "--json", "--all", *args],
                          env=env, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")], time.monotonic() - started


def synth_figures(records: list[dict], labels_path: Path) -> dict:
    labels = {}
    for line in labels_path.read_text().splitlines():
        label = json.loads(line)
        labels[(label["file"], label["line_number"])] = label
    caught, kinds, false_alerts, normal, flow_alerts = defaultdict(bool), {}, 0, 0, Counter()
    for r in records:
        where, number = r["where"].rsplit(":", 1)
        label = labels.get((Path(where).name, int(number)))
        if r["anomaly"] and r["threshold_how"] == OUT_OF_ORDER:
            flow_alerts["true" if label else "false"] += 1
        if label is None:
            normal += 1
            false_alerts += r["anomaly"]
        else:
            kinds[label["anomaly_id"]] = label["kind"]
            caught[label["anomaly_id"]] |= r["anomaly"]
    per_kind = defaultdict(lambda: [0, 0])
    for anomaly, kind in kinds.items():
        per_kind[kind][0] += caught[anomaly]
        per_kind[kind][1] += 1
    return {"per_kind": dict(per_kind), "false": false_alerts, "normal": normal, "flow_alerts": flow_alerts}


def hdfs_figures(records: list[dict], labels_path: Path) -> dict:
    labels = {row["BlockId"]: int(row["Label"]) for row in csv.DictReader(labels_path.open())}
    flagged, by_flow = defaultdict(bool), defaultdict(bool)
    for r in records:
        if not r["where"].startswith(str(labels_path.parent / "dev.log")) or not r["anomaly"]:
            continue
        for block in BLOCK.findall(r["line"]):
            flagged[block] = True
            by_flow[block] |= r["threshold_how"] == OUT_OF_ORDER
    tp = sum(flagged[b] for b, y in labels.items() if y)
    fp = sum(flagged[b] for b, y in labels.items() if not y)
    positives = sum(labels.values())
    flow_tp = sum(by_flow[b] for b, y in labels.items() if y)
    flow_fp = sum(by_flow[b] for b, y in labels.items() if not y)
    precision, recall = tp / max(tp + fp, 1), tp / max(positives, 1)
    return {"tp": tp, "fp": fp, "positives": positives, "negatives": len(labels) - positives,
            "precision": precision, "recall": recall,
            "f1": 2 * precision * recall / max(precision + recall, 1e-9), "flow_tp": flow_tp, "flow_fp": flow_fp}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--synth-lines", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--hdfs", type=Path, default=ROOT.parent / "shared" / "data" / "hdfs_sessions")
    p.add_argument("--skip-hdfs", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = p.parse_args()
    machine = describe_machine("cpu", 1)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="flows-") as tmp:
        logs = Path(tmp) / "synth"
        subprocess.run([sys.executable, "-m", "logstream.cli", "synth", "--out", str(logs), "--lines",
                        str(args.synth_lines), "--seed", str(args.seed)], check=True, capture_output=True)
        files = sorted(str(f) for f in logs.glob("*.log"))
        synth = {}
        for name, env in (("with the rule", {}), ("without", OFF)):
            records, seconds = score(files, env)
            synth[name] = synth_figures(records, logs / "labels.jsonl") | {"seconds": seconds}
            print(f"synth {name}: {seconds:.0f} s", flush=True)
    hdfs = {}
    if not args.skip_hdfs:
        for name, env in (("with the rule", {}), ("without", OFF)):
            records, seconds = score([str(args.hdfs / "dev.log"), "--no-adapt", "--normal",
                                      str(args.hdfs / "train_normal.log")], env)
            hdfs[name] = hdfs_figures(records, args.hdfs / "dev_block_labels.csv") | {"seconds": seconds}
            print(f"hdfs {name}: {seconds:.0f} s", flush=True)
    write_report(args, machine, synth, hdfs, time.monotonic() - started)


def write_report(args, machine: dict, synth: dict, hdfs: dict, seconds: float) -> None:
    command = "python benchmarks/flows.py" + (" --skip-hdfs" if args.skip_hdfs else "") + (
        f" --synth-lines {args.synth_lines}" if args.synth_lines != 10_000 else "") + (
        f" --seed {args.seed}" if args.seed != 3 else "")
    md = ["# Entity flows: steps out of order", "", "```", command, "```", "",
          (f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {seconds / 60:.1f} min. The same `logstream score --json "
           "--all` twice on the same files: with the rule (default settings) and without it "
           "(`LOGSTREAM_SCORING__ADAPTIVE__FLOW_IDS=''`); everything else the same."), "",
          "| machine | |", "|---|---|", *[f"| {k} | {v} |" for k, v in machine.items()], "",
          f"## The demo's synthetic services (`logstream synth --lines {args.synth_lines} --seed {args.seed}`)", "",
          "An injected anomaly is caught when any of its labelled lines alerts.", "",
          "| anomaly kind | " + " | ".join(synth) + " |", "|---|" + "---|" * len(synth)]
    kinds = sorted({k for figures in synth.values() for k in figures["per_kind"]})
    for kind in kinds:
        md.append(f"| {kind} | " + " | ".join(f"{f['per_kind'][kind][0]} of {f['per_kind'][kind][1]}"
                                              for f in synth.values()) + " |")
    md.append("| false alerts per 1,000 normal lines | " + " | ".join(
        f"{1000 * f['false'] / max(f['normal'], 1):.1f} ({f['false']} of {f['normal']:,})" for f in synth.values()) + " |")
    md.append("| 'step out of order' alerts: on an injected line / not | " + " | ".join(
        f"{f['flow_alerts']['true']} / {f['flow_alerts']['false']}" for f in synth.values()) + " |")
    md.append("| wall time (s) | " + " | ".join(f"{f['seconds']:.0f}" for f in synth.values()) + " |")
    if hdfs:
        md += ["", "## HDFS block sessions (`../shared/data/hdfs_sessions`)", "",
               ("`logstream score --no-adapt --normal train_normal.log dev.log`: 2,400 normal sessions read first as "
                "a known-good baseline, then 800 normal and 800 anomalous sessions interleaved; a block is flagged "
                "when any of its lines alerts (a session that stops early shows nothing to a line rule: the session "
                "model, `benchmarks/results/sessions.md`, is the detector for those)."), "",
               "| | " + " | ".join(hdfs) + " |", "|---|" + "---|" * len(hdfs)]
        for label, key, fmt in (("anomalous blocks flagged", "tp", "{}"), ("normal blocks flagged", "fp", "{}"),
                                ("precision", "precision", "{:.3f}"), ("recall", "recall", "{:.3f}"),
                                ("F1", "f1", "{:.3f}"),
                                ("blocks flagged by 'step out of order': anomalous / normal", None, None),
                                ("wall time (s)", "seconds", "{:.0f}")):
            if key is None:
                md.append(f"| {label} | " + " | ".join(f"{f['flow_tp']} / {f['flow_fp']}" for f in hdfs.values()) + " |")
            else:
                md.append(f"| {label} | " + " | ".join(fmt.format(f[key]) for f in hdfs.values()) + " |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "flows.md").write_text("\n".join(md) + "\n")
    print(f"wrote {args.out / 'flows.md'}")


if __name__ == "__main__":
    main()
