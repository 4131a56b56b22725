"""Does the calendar move the score? Normal synthetic logs stamped with each month of a year,
scored by the shipped model before and after the canonical reading, and the demo's false alerts.

    python benchmarks/calendar_bench.py [--lines 2000] [--before-rev 1e26e21] [--demo-lines 2000]

* "before": the shipped model at ``--before-rev`` (trained on whole raw lines; it reads them whole,
  as its card says), extracted from git into a temporary directory;
* "after": the shipped model in this checkout (trained on canonical lines).

For each month of 2025, ``logstream synth --anomaly-rate 0 --seed 7`` lines starting on the 15th
are scored as ``logstream score`` does (each synthetic stream its own stream, 64 lines per batch,
threshold from the model card), and the share flagged is reported. Then ``logstream demo`` runs
with each model on the same seed, once stamped November and once stamped with the current date,
and its final tally gives false alerts per 1,000 lines. Writes ``benchmarks/results/calendar.md``
and ``calendar_flagged.png``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path

import torch

from cache_bench_setup import describe_machine  # noqa: E402 (next to this script)

from logstream.cache import EngineConfig
from logstream.config import DEFAULT_MODEL_DIR
from logstream.scoring.card import ModelCard
from logstream.scoring.scorer import load_scorer
from logstream.synth import SyntheticLogs

REPO = Path(__file__).resolve().parents[1]
MODEL_PATH = "logstream/assets/default-model"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
TALLY = re.compile(r"final tally: (\d+) lines sent, injected (\d+) anomalies: (\d+) detected, (\d+) missed.*?"
                   r"\| (\d+) alerts, (\d+) false")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=2000, help="normal lines scored per month (default 2000)")
    p.add_argument("--year", type=int, default=2025)
    p.add_argument("--before-rev", default="1e26e21", help="git revision whose shipped model is 'before'")
    p.add_argument("--demo-lines", type=int, default=2000, help="lines per demo run; 0 skips the demo")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    return p.parse_args(argv)


def model_at(rev: str, into: Path) -> Path:
    """The shipped model directory as it was at ``rev``."""
    archive = subprocess.run(["git", "archive", rev, MODEL_PATH], cwd=REPO, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / MODEL_PATH


def flagged_share(model_dir: Path, start: datetime, n_lines: int) -> tuple[int, int]:
    """(flagged, scored) for n normal synthetic lines from ``start``, scored as `logstream score` does."""
    scorer = load_scorer(model_dir, device="cpu", dtype="float32", engine_config=EngineConfig(window=2048))
    lines = []
    for entry in SyntheticLogs(seed=7, anomaly_rate=0.0, start_time=start):
        lines.append((entry.stream, entry.line))
        if len(lines) == n_lines:
            break
    flagged = 0
    for at in range(0, len(lines), 64):
        flagged += sum(s.is_anomaly for s in scorer.score(lines[at:at + 64]))
    return flagged, len(lines)


def run_demo(model_dir: Path, start: datetime, n_lines: int, adaptive: bool) -> dict:
    env = {**os.environ, "LOGSTREAM_MODEL__PATH": str(model_dir), "LOGSTREAM_METRICS__PORT": "0",
           "LOGSTREAM_SCORING__ADAPTIVE__ENABLED": str(adaptive).lower()}
    command = [sys.executable, "-m", "logstream.cli", "demo", "--lines", str(n_lines), "--rate", "200",
               "--seed", "0", "--start", start.isoformat()]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    found = TALLY.search(done.stdout)
    if found is None:
        raise RuntimeError(f"demo gave no final tally (exit {done.returncode}):\n{done.stdout[-2000:]}\n"
                           f"{done.stderr[-2000:]}")
    sent, injected, detected, missed, alerts, false = map(int, found.groups())
    return dict(sent=sent, injected=injected, detected=detected, alerts=alerts, false=false,
                false_per_1k=1000 * false / sent)


def plot(rows: dict, path: Path, year: int) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.6))
    ax = fig.subplots()
    x = range(12)
    for i, (label, shares) in enumerate(rows.items()):
        ax.bar([m + (i - 0.5) * 0.4 for m in x], [100 * s for s in shares], width=0.4, label=label)
    ax.set_xticks(list(x), MONTHS)
    ax.set_ylabel("normal lines flagged (%)")
    ax.set_title(f"Shipped model on the same normal synthetic logs, stamped with each month of {year}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    started = time.time()
    machine = describe_machine("cpu", 1)
    with tempfile.TemporaryDirectory() as tmp:
        models = {"before": model_at(args.before_rev, Path(tmp)), "after": DEFAULT_MODEL_DIR}
        reads = {name: ModelCard.load(path).reads for name, path in models.items()}
        shares: dict[str, list[float]] = {}
        for name, path in models.items():
            shares[name] = []
            for month in range(1, 13):
                flagged, n = flagged_share(path, datetime(args.year, month, 15, 9, 0, tzinfo=UTC), args.lines)
                shares[name].append(flagged / n)
                print(f"{name} {MONTHS[month - 1]}: {flagged} of {n} flagged", flush=True)
        demos = []
        if args.demo_lines:
            today = datetime.now(UTC).replace(microsecond=0)
            # before: the old model with the fixed calibrated threshold it shipped with; after: the new
            # model with that same kind of threshold, and with the service's default adaptive thresholds
            for name, adaptive in (("before", False), ("after", False), ("after", True)):
                for start in (datetime(args.year, 11, 30, 9, 0, tzinfo=UTC), today):
                    result = run_demo(models[name], start, args.demo_lines, adaptive)
                    demos.append((name, "adaptive" if adaptive else "fixed (calibrated)", start, result))
                    print(f"demo {name} adaptive={adaptive} {start:%Y-%m-%d}: {result}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    plot({f"{k} (reads {reads[k]})": v for k, v in shares.items()}, args.out / "calendar_flagged.png", args.year)
    write_markdown(args, machine, shares, reads, demos, started)
    return 0


def write_markdown(args, machine, shares, reads, demos, started) -> None:
    def ratio(values):
        low, high = min(values), max(values)
        return "n/a (none flagged)" if high == 0 else ("inf" if low == 0 else f"{high / low:.2f}")

    lines = ["# The calendar and the score", "", "```", "python benchmarks/calendar_bench.py "
             f"--lines {args.lines} --year {args.year} --before-rev {args.before_rev} --demo-lines {args.demo_lines}",
             "```", "",
             f"Run {datetime.fromtimestamp(started, UTC):%Y-%m-%d %H:%M} UTC, "
             f"{(time.time() - started) / 60:.1f} min. Generated by `benchmarks/calendar_bench.py`.", "",
             "| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine.items()]
    lines += ["", f"Normal synthetic logs (`SyntheticLogs(seed=7, anomaly_rate=0)`, {args.lines} lines, 7 streams: "
              "HDFS, Apache error log, OpenSSH syslog, ZooKeeper), the same lines stamped from the 15th of each "
              f"month of {args.year}, scored like `logstream score` by the shipped model: 'before' is the model at "
              f"`{args.before_rev}` (reads {reads['before']}s), 'after' the model in this checkout (reads "
              f"{reads['after']} text: level, source and message, no time stamp).", "",
              "| month | before: flagged | after: flagged |", "|---|---|---|"]
    for m in range(12):
        lines.append(f"| {MONTHS[m]} {args.year} | {100 * shares['before'][m]:.2f}% | {100 * shares['after'][m]:.2f}% |")
    lines += ["", f"Highest month / lowest month: before {ratio(shares['before'])}, after {ratio(shares['after'])} "
              "(goal: within 1.5x).", "", "![flagged share per month](calendar_flagged.png)", ""]
    if demos:
        lines += ["## The demo", "", f"`logstream demo --lines {args.demo_lines} --rate 200 --seed 0 --start TIME` with "
                  "`LOGSTREAM_MODEL__PATH` set to each model: the whole pipeline (embedded broker, worker, alerts) "
                  "on synthetic logs with 2% injected anomalies; false alerts are alerts that point at no injected "
                  "line (the demo's own tally).", "",
                  "| model | thresholds | lines stamped from | alerts | false alerts | false alerts / 1,000 lines | "
                  "anomalies detected |", "|---|---|---|---|---|---|---|"]
        for name, how, start, r in demos:
            lines.append(f"| {name} | {how} | {start:%Y-%m-%d} | {r['alerts']} | {r['false']} | "
                         f"{r['false_per_1k']:.1f} | {r['detected']} of {r['injected']} |")
        lines.append("")
    (args.out / "calendar.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'calendar.md'}")


if __name__ == "__main__":
    sys.exit(main())
