"""Lines per second through the scorer and the streaming engine (no Kafka), with full windows.

Replays the 16 Loghub samples as interleaved streams (each file cut into several streams), the
way the worker sees them: micro-batches of lines from many streams, every stream's window already
full (2048 tokens). Compares thread counts and batch sizes side by side in one run, each
configuration run ``--rounds`` times, interleaved, so a shared machine's load hits all alike.

    python benchmarks/scorer_throughput.py            # writes benchmarks/results/throughput.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch
from cache_bench_setup import cpu_name
from tqdm.auto import tqdm

from logstream.cache import EngineConfig
from logstream.config import DEFAULT_MODEL_DIR
from logstream.scoring.scorer import load_scorer

ROOT = Path(__file__).resolve().parents[1]


def stream_lines(n_streams: int) -> dict[str, list[str]]:
    files = sorted((ROOT / "sample_logs" / "loghub").glob("*/*_2k.log"))
    per_file = max(1, n_streams // len(files))
    streams = {}
    for f in files:
        lines = f.read_text(errors="replace").splitlines()
        size = len(lines) // per_file
        for i in range(per_file):
            streams[f"{f.stem}-{i}"] = lines[i * size:(i + 1) * size]
    return streams


def interleaved(streams: dict[str, list[str]], start: int, count: int):
    """`count` lines in arrival order: one line of each stream in turn, from line `start` on."""
    names = list(streams)
    out, i = [], start
    while len(out) < count:
        for name in names:
            lines = streams[name]
            out.append((name, lines[i % len(lines)]))
        i += 1
    return out[:count], i


def measure(model_dir, threads: int, batch: int, n_streams: int, lines: int, window: int) -> dict:
    torch.set_num_threads(threads)
    scorer = load_scorer(model_dir, device="cpu", dtype="float32",
                         engine_config=EngineConfig(window=window, slots=n_streams))
    streams = stream_lines(n_streams)
    cursor = 0
    while min(scorer.engine.stream_length(s) for s in streams) < window:  # fill every window
        chunk, cursor = interleaved(streams, cursor, len(streams) * 8)
        scorer.score(chunk)
    work, _ = interleaved(streams, cursor, lines)
    tokens = 0
    started = time.perf_counter()
    for at in range(0, len(work), batch):
        tokens += sum(len(s.token_ids) for s in scorer.score(work[at:at + batch]))
    seconds = time.perf_counter() - started
    return {"threads": threads, "batch": batch, "streams": len(streams), "lines": len(work),
            "lines_per_s": len(work) / seconds, "tokens_per_line": tokens / len(work)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--lines", type=int, default=2048, help="lines timed per configuration")
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--window", type=int, default=2048)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=2, help="every configuration runs this often, interleaved")
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "throughput.md"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    configs = [(t, b) for t in args.threads for b in args.batches]
    runs = [measure(args.model, *c, args.streams, args.lines, args.window)
            for _ in range(args.rounds) for c in tqdm(configs, desc="configurations")]
    rows = []
    for t, b in configs:  # median over the rounds
        mine = [r for r in runs if (r["threads"], r["batch"]) == (t, b)]
        rows.append({**mine[0], "lines_per_s": statistics.median(r["lines_per_s"] for r in mine)})
    base = rows[0]["lines_per_s"]
    cpu = cpu_name()
    text = [
        "# Scorer throughput (no Kafka), full 2048-token windows", "",
        f"Command: `python benchmarks/scorer_throughput.py --lines {args.lines} --streams {args.streams} "
        f"--threads {' '.join(map(str, args.threads))} --batches {' '.join(map(str, args.batches))} "
        f"--rounds {args.rounds}`  ",
        f"Machine: {cpu}, {os.cpu_count()} cores, torch {torch.__version__}, CPU, float32; load average "
        f"{load_before[0]:.1f} before and {os.getloadavg()[0]:.1f} after (the machine is shared).  ",
        f"Model: `{Path(args.model).name}`; {rows[0]['streams']} streams of Loghub lines, interleaved, every "
        f"window full; {rows[0]['tokens_per_line']:.1f} tokens per line on average.", "",
        f"Each configuration ran {args.rounds} times, interleaved; the median is shown.", "",
        "| torch threads | lines per batch | lines/s | vs first row |", "|---|---|---|---|",
    ]
    text += [f"| {r['threads']} | {r['batch']} | {r['lines_per_s']:.0f} | {r['lines_per_s'] / base:.2f}x |"
             for r in rows]
    Path(args.out).write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
