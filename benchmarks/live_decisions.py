#!/usr/bin/env python3
"""What the service's decision (`lm-live`) got wrong on a labeled log set, line by line.

    python benchmarks/live_decisions.py benchmarks/specs/bgl_chrono.yaml [--steps 200] [--dump FILE]

Replays the first split of SPEC exactly as `logstream eval` does for `lm-live` (the same model, cached
under $LOGSTREAM_EVAL_CACHE, trained on the split's normal lines if it is not there yet), then prints
its false alerts and missed anomalous lines with the rule that decided each, and counts them by rule.
`--dump` writes every test line's decision as JSON lines.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import torch

from logstream.config import Settings
from logstream.evaluation.data import load_dataset, make_splits
from logstream.evaluation.lm_detectors import LiveDetector, lm_detectors
from logstream.evaluation.spec import load_spec
from logstream.progress import silence_progress_bars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--steps", type=int, default=200, help="training steps of the split's model (as "
                        "benchmarks/run_detection.sh: 200)")
    parser.add_argument("--dump", help="write every test line's decision here (JSON lines)")
    args = parser.parse_args()
    silence_progress_bars()
    torch.set_num_threads(1)
    spec = load_spec(args.spec)
    split = make_splits(load_dataset(spec))[0]
    options = argparse.Namespace(lm_steps=args.steps, model=None, lm_aggregates=["mean"])
    live = next(d for d in lm_detectors(spec, Settings(), options) if isinstance(d, LiveDetector))
    live.fit(split.train, split.calibration, spec.target_false_alert_rate)
    live.score(split.test)
    rows = [dict(index=entry.index, label=entry.label, alert=scored.is_anomaly, score=round(scored.score, 3),
                 rule=scored.verdict.how if scored.verdict else None,
                 routine=scored.verdict.routine if scored.verdict else None, read=scored.masked)
            for entry, scored in zip(split.test, live.decisions)]
    if args.dump:
        with open(args.dump, "w") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
    false_alerts = [r for r in rows if r["alert"] and not r["label"]]
    missed = [r for r in rows if r["label"] and not r["alert"]]
    normal, anomalous = sum(not r["label"] for r in rows), sum(r["label"] for r in rows)
    print(f"{spec.name}, split {split.name}: {len(false_alerts)} false alerts in {normal:,} normal lines "
          f"({len(false_alerts) / normal * 1e4:.1f} per 10k); {anomalous - len(missed)} of {anomalous} "
          f"anomalous lines alerted")
    print("false alerts by rule:", dict(Counter(r["rule"] for r in false_alerts).most_common()))
    for r in false_alerts:
        print(f"  false alert {r['index']} [{r['rule']}] {r['read'][:140]}")
    for r in missed:
        print(f"  missed {r['index']} [{r['rule']}] {(r['routine'] or '')[:80]} | {r['read'][:100]}")


if __name__ == "__main__":
    main()
