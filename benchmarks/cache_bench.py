"""Reproduce StreamingLLM's comparison on this machine, on a long real log stream.

Methods: dense full-context cache (until its byte budget runs out), sliding window without sinks,
sliding window with re-computation (on a sample of lines: it is O(L) forward work per token) and
the streaming engine (S = 4 sink tokens; L = 256 and L = 2048). The stream is the 16 Loghub 2k
samples (32,000 lines) replayed in order as one stream, one line per ``score`` call.

    python benchmarks/cache_bench.py                       # the shipped model -> benchmarks/results/
    python benchmarks/cache_bench.py --random-init --lines 3000 --recompute-lines 6   # quick, -> /tmp

Every method runs in a fresh subprocess, one after the other, so its peak RSS is its own and no
two methods compete for the CPU (other work on a shared machine still does: the results give the
load average at the start and the end). Writes ``cache.md`` and ``cache_latency_memory.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

# The helper modules sit next to this script, on sys.path[0] when it runs as a script.
from cache_bench_methods import MethodSpec, run_method
from cache_bench_report import markdown, perplexity, plot, same_lines_ratio, summarize
from cache_bench_setup import (
    DEFAULT_MODEL, REPO, describe_machine, encode_lines, load_card, log_files, masker_for, read_lines,
    sink_tokens, write_random_model,
)

from logstream.model.loading import pick_device

HERE = Path(__file__).resolve().parent

RANDOM_INIT_OUT = Path(tempfile.gettempdir()) / "logstream-cache-bench"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model directory (load_model)")
    p.add_argument("--random-init", action="store_true",
                   help="a random model of the default size + a BPE tokenizer trained on the stream; "
                        "timings only, perplexities are meaningless")
    p.add_argument("--lines", type=int, default=None, help="only the first N lines of the stream")
    p.add_argument("--logs-root", type=Path, default=None,
                   help="folder of <System>/<System>_2k.log (default: sample_logs/loghub, "
                        "else ../shared/data/loghub)")
    p.add_argument("--methods", default="dense,sliding,recompute,engine")
    p.add_argument("--windows", default="256,2048", help="engine windows L")
    p.add_argument("--baseline-windows", default="2048", help="windows L of the two sliding-window baselines")
    p.add_argument("--recompute-lines", type=int, default=24,
                   help="lines the re-computation method scores, spread evenly after its window filled")
    # 64 MiB (~43k tokens at the default size, ~21x the engine's L = 2048 cache) keeps the dense run
    # to minutes here: its total time is quadratic, and 256 MiB took 45 minutes on 2 shared cores.
    p.add_argument("--dense-budget-mb", type=float, default=64.0, help="the dense cache stops here (MiB)")
    p.add_argument("--sink-tokens", type=int, default=4, help="S")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--dtype", default="auto",
                   help="auto (float32 on CPU, bf16/fp16 on GPU), float32, bfloat16, float16")
    # One thread by default: on a shared 2-core machine torch's OpenMP threads wait on each other
    # whenever another process holds a core, and a line's small ops then run ~10x slower.
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads, every method (default 1)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"results folder (default benchmarks/results; {RANDOM_INIT_OUT} with --random-init)")
    p.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)  # internal: one method's job
    return p.parse_args(argv)


# --- one method, in its own process -----------------------------------------------------------


def worker(job_path: Path) -> None:
    from logstream.model import load_model

    job = json.loads(job_path.read_text())
    torch.set_num_threads(job["threads"])
    loaded = load_model(job["model_dir"], device=job["device"], dtype=job["dtype"])
    lines = json.loads(Path(job["stream"]).read_text())
    sampled = job["spec"]["sampled_lines"]
    spec = MethodSpec(**{**job["spec"], "sampled_lines": tuple(sampled) if sampled is not None else None})
    run = run_method(spec, loaded.model, job["sink"], lines, loaded.model.embed_tokens.weight.device)
    Path(job["out"]).write_text(json.dumps(asdict(run)))


def run_in_subprocess(job: dict, work: Path, index: int) -> dict:
    job = {**job, "out": str(work / f"run{index}.json")}
    job_path = work / f"job{index}.json"
    job_path.write_text(json.dumps(job))
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(job_path)], check=True)
    return json.loads(Path(job["out"]).read_text())


# --- the whole comparison -------------------------------------------------------------------------


def method_specs(args, positions: list[int]) -> list[MethodSpec]:
    methods = {m.strip() for m in args.methods.split(",") if m.strip()}
    engine_windows = [int(w) for w in args.windows.split(",")]
    baseline_windows = [int(w) for w in args.baseline_windows.split(",")]
    specs = []
    if "dense" in methods:
        specs.append(MethodSpec("dense", dense_budget_bytes=int(args.dense_budget_mb * 1024 * 1024)))
    if "sliding" in methods:
        specs += [MethodSpec("sliding", window=L) for L in baseline_windows]
    if "recompute" in methods:
        for L in baseline_windows:
            sampled = sample_lines(positions, L, args.recompute_lines)
            specs.append(MethodSpec("recompute", window=L, sampled_lines=sampled))
    if "engine" in methods:
        specs += [MethodSpec("engine", window=L) for L in engine_windows]
    return specs


def sample_lines(positions: list[int], window: int, count: int) -> tuple[int, ...]:
    """``count`` line indices spread evenly over the lines that start with a full window behind them."""
    first = next((i for i, p in enumerate(positions) if p >= window), 0)
    picks = np.linspace(first, len(positions) - 1, num=min(count, len(positions) - first)).round()
    return tuple(sorted({int(i) for i in picks}))


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker is not None:
        worker(args.worker)
        return
    threads = args.threads
    torch.set_num_threads(threads)
    device = str(pick_device(args.device))
    out_dir = args.out or (RANDOM_INIT_OUT if args.random_init else HERE / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = describe_machine(device, threads)  # the load average before we add to it

    files = log_files(args.logs_root)
    all_lines = read_lines(files)
    lines = all_lines[: args.lines] if args.lines else all_lines
    with tempfile.TemporaryDirectory(prefix="cache-bench-") as tmp:
        work = Path(tmp)
        if args.random_init:
            model_dir = work / "random-model"
            print(f"random model; training its tokenizer on {len(all_lines):,} lines ...", file=sys.stderr)
            write_random_model(model_dir, all_lines)
        else:
            model_dir = args.model
            if not (model_dir / "config.json").exists():
                raise SystemExit(f"no model at {model_dir}: train one (`logstream train`), pass --model DIR, "
                                 "or use --random-init for a timing-only run")
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        stream = encode_lines(tokenizer, masker_for(model_dir), lines)
        sink = sink_tokens(tokenizer, load_card(model_dir), args.sink_tokens)
        positions = np.concatenate(([0], np.cumsum([len(t) for t in stream])[:-1])).tolist()
        (work / "stream.json").write_text(json.dumps(stream))
        job = {"model_dir": str(model_dir), "device": device, "dtype": args.dtype, "threads": threads,
               "stream": str(work / "stream.json"), "sink": sink}
        runs = {spec.label: run_in_subprocess({**job, "spec": asdict(spec)}, work, i)
                for i, spec in enumerate(method_specs(args, positions))}
    write_results(args, runs, out_dir, machine, device, files, lines, stream, sink, model_dir)


RANDOM_MODEL = ("RANDOM INIT (default size: vocab 4096, hidden 128, 3 layers, 4 heads, 2 KV heads, "
                "intermediate 352; byte-level BPE tokenizer trained on the stream)")
MEASURES = [
    "ms/line: wall time of one `score` call for one line; ms/token: that line's time / its tokens "
    "(median and p99 over the lines the method scored).",
    "cache MiB: the method's `nbytes()` after each line (keys, values, last hidden state; the engine: its "
    "one-slot pool + the sink; re-computation keeps only token ids); RSS: /proc/self/statm after each line.",
    "peak RSS: `getrusage` high-water mark of the method's own process (model loading included); "
    "RSS growth: that peak minus the resident size just before the first line.",
    "perplexity: exp of the mean negative log-probability over the tokens the method scored (dense and "
    "re-computation cover fewer tokens; their notes give the engine's perplexity on the same lines).",
]


def write_results(args, runs, out_dir, machine, device, files, lines, stream, sink, model_dir) -> None:
    summaries = [summarize(label, run, len(lines)) for label, run in runs.items()]
    add_reference_perplexity(summaries, runs)
    plot_path = out_dir / "cache_latency_memory.png"
    plot(runs, plot_path, f"logstream cache benchmark ({device}, {len(lines):,} lines)")
    n_tokens = sum(len(t) for t in stream)
    script = os.path.relpath(Path(__file__).resolve(), REPO)
    dtype = ", ".join(sorted({r["dtype"] for r in runs.values()}))
    total_s = sum(r["wall_s"] for r in runs.values())
    setup = [
        f"stream: {len(lines):,} lines, {n_tokens:,} tokens ({n_tokens / len(lines):.1f} tokens per line) "
        "as one stream, one line per `score` call",
        f"files, in this order: {', '.join(f.parent.name for f in files)} "
        f"(`{os.path.relpath(files[0].parent.parent, REPO)}`; Loghub samples, from ../shared/data/loghub)",
        "each line: `LineMasker()(line) + \"\\n\"`, tokenized with `add_special_tokens=False`",
        f"model: {RANDOM_MODEL if args.random_init else describe_model(model_dir)}",
        f"sink tokens (S = {len(sink)}): {sink}; every method reads `sink ++ stream` "
        "(the window baselines evict them like any other text)",
        f"dtype: {dtype}; torch threads: {machine['torch threads']}; warm-up: 3 lines on a throwaway stream",
        f"scoring time, all methods: {total_s:.0f} s; load average at the end: "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg()),
    ]
    context = {
        "warning": "RANDOM-INIT MODEL: timings and memory are real, perplexities are meaningless."
        if args.random_init else None,
        "command": "python " + " ".join(shlex.quote(a) for a in [script, *sys.argv[1:]]),
        "machine": machine, "setup": setup, "measures": MEASURES, "ratio": ratio_section(runs),
        "plot": plot_path.name,
    }
    text = markdown(summaries, runs, context)
    (out_dir / "cache.md").write_text(text)
    print(text)
    print(f"wrote {out_dir / 'cache.md'} and {plot_path}", file=sys.stderr)


def describe_model(model_dir: Path) -> str:
    card = load_card(model_dir)
    version = f" (model_version {card.model_version})" if card else ""
    return f"`{model_dir}`{version}"


def add_reference_perplexity(summaries, runs: dict[str, dict]) -> None:
    """For methods that scored part of the stream: the largest-window engine's perplexity there."""
    engines = [r for r in runs.values() if r["spec"]["kind"] == "engine"]
    if not engines:
        return
    reference = max(engines, key=lambda r: r["spec"]["window"])
    for summary in summaries:
        run = runs[summary.label]
        if run["stopped"] or run["spec"].get("sampled_lines") is not None:
            ppl = perplexity(reference, set(run["line"]))
            L = reference["spec"]["window"]
            summary.note += f"; engine L = {L} on the same lines: perplexity {ppl:.2f}"


def ratio_section(runs: dict[str, dict]) -> list[str]:
    lines = []
    for run in runs.values():
        if run["spec"]["kind"] != "recompute":
            continue
        L = run["spec"]["window"]
        engines = [r for r in runs.values() if r["spec"]["kind"] == "engine" and r["spec"]["window"] == L]
        engine = engines[0] if engines else None
        if engine is None:
            continue
        median_ratio, total_ratio, n = same_lines_ratio(run, engine)
        overall = float(np.median(np.asarray(run["ms"]) / np.asarray(run["tokens"])) /
                        np.median(np.asarray(engine["ms"]) / np.asarray(engine["tokens"])))
        verdict = "meets" if median_ratio >= 20 else "MISSES"
        lines += [
            f"L = {L}, on the same {n} lines: the engine is {median_ratio:.1f}x faster per token (ratio of "
            f"medians), {total_ratio:.1f}x in total time over those lines; {verdict} the expected >= 20x.",
            f"L = {L}, median ms/token over all lines each scored: {overall:.1f}x.",
        ]
    return lines


if __name__ == "__main__":
    main()
