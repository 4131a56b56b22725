"""What one setting does to the service's decision (``lm-live``) on the labeled detection specs.

    python benchmarks/detection_setting.py scoring.adaptive.episode_alerts=1 --out benchmarks/results/detection_episode_alerts.md

Runs ``logstream eval SPEC --detectors lm drain-novelty`` for each spec twice, as configured and with the setting
changed (through its ``LOGSTREAM_`` environment variable: the same ``Settings`` every entry point reads), and
puts the ``lm-live`` rows side by side with Drain3's. The models trained per split are cached
(``LOGSTREAM_EVAL_CACHE``), so both runs score with the same models and only the decision differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cache_bench_setup import cpu_name
from detection_summary import SPECS, summary_table

HERE = Path(__file__).resolve().parent
COLUMNS = ["precision", "recall", "F1", "best F1", "false alerts / 10k normal"]


def env_name(setting: str) -> str:
    return "LOGSTREAM_" + setting.upper().replace(".", "__")


def run(spec: str, out: Path, env: dict, steps: int) -> dict[str, dict[str, str]]:
    subprocess.run([sys.executable, "-m", "logstream.cli", "eval", str(HERE / "specs" / f"{spec}.yaml"),
                    "--out", str(out), "--detectors", "lm", "drain-novelty", "--lm-steps", str(steps), "--no-progress"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return summary_table((out / f"{spec}.md").read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("setting", help="SECTION.NAME=VALUE, e.g. scoring.adaptive.episode_alerts=1")
    parser.add_argument("--specs", nargs="+", default=SPECS)
    parser.add_argument("--steps", type=int, default=200, help="--lm-steps, as benchmarks/run_detection.sh")
    parser.add_argument("--out", type=Path, help="write the markdown report here (else print it)")
    args = parser.parse_args()
    name, _, value = args.setting.partition("=")
    started = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for spec in args.specs:
            tables = {}
            for label, env in (("as configured", dict(os.environ)), (args.setting, {**os.environ, env_name(name): value})):
                out = Path(scratch) / f"{spec}-{len(tables)}"
                out.mkdir()
                tables[label] = run(spec, out, env, args.steps)
                print(f"{spec} {label}: lm-live F1 {tables[label]['lm-live']['F1']}", flush=True)
            for label, table in tables.items():
                rows.append([spec, f"lm-live, {label}"] + [table["lm-live"][c] for c in COLUMNS])
            rows.append([spec, "drain-novelty"] + [tables["as configured"]["drain-novelty"][c] for c in COLUMNS])
    specs = f" --specs {' '.join(args.specs)}" if args.specs != SPECS else ""
    report = [f"# Detection with `{args.setting}`", "",
              "```", f"python benchmarks/detection_setting.py {args.setting}{specs}", "```", "",
              (f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {(time.monotonic() - started) / 60:.1f} min; "
              f"{cpu_name()}, {os.cpu_count()} cores. Each spec evaluated by `logstream eval` (as `benchmarks/run_detection.sh`, "
              f"{args.steps} training steps, the same cached models) as configured and with the setting changed; "
              "figures at the service's live decision, best F1 in hindsight beside it. Per-dataset protocols: "
              "`benchmarks/results/<spec>.md`."), "",
              "| spec | detector | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    report += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(report) + "\n"
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
