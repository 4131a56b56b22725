"""The fixed cost of a pass: CPU-ms of one call that scores one token, or one 17-token line, of one
stream whose window is full, and one line of each of 9 such streams (the service's micro-batch at half
load), for this tree and for earlier revisions, measured side by side.

    python benchmarks/per_call.py --against d8b24ca^     # the engine when issue 12 was filed
    python benchmarks/per_call.py --also HEAD            # and the last commit, beside this working tree

Each tree is measured in its own process (``PYTHONPATH`` pointing at a ``git worktree`` of the
revision), in alternating rounds, and each figure is the best round: on a shared machine the
noise only ever adds time, so the minimum is the steadiest estimate of what a call costs. The
service's cache settings are used for this tree (``Settings().cache``); the earlier revision runs
its own defaults. Same model for both: this tree's shipped one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = list(range(5, 22))  # 17 token ids the shipped model knows
ROWS = 9  # streams in the micro-batch case: the service's mean batch at half load (reliability.md)
BATCH = f"{ROWS}x{len(LINE)}"

MEASURE = r"""
import json, sys, time, torch
torch.set_num_threads(1)
from logstream.cache.engine import StreamingEngine, Chunk, EngineConfig
from logstream.scoring.scorer import load_scorer
model_dir, layout, calls, line = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
ROWS = int(sys.argv[5])
scorer = load_scorer(model_dir, device="cpu", dtype="float32")
try:
    from logstream.config import Settings
    conf = Settings().cache.engine_config()
except Exception:  # a revision without the setting
    conf = EngineConfig()
import dataclasses
if layout != "default":
    conf = dataclasses.replace(conf, layout=layout, slots=64)
out = {}
for tokens in (1, len(line)):
    engine = StreamingEngine(scorer.loaded.model, scorer.sink_tokens, conf)
    while engine.stream_length("s") < conf.window + 64:
        engine.score([Chunk("s", line * 8)])
    for _ in range(10):
        engine.score([Chunk("s", line[:tokens])])
    started = time.process_time()
    for _ in range(calls):
        engine.score([Chunk("s", line[:tokens])])
    out[tokens] = 1000 * (time.process_time() - started) / calls
# the service at half load: a micro-batch of one line from each of 9 streams whose windows are full
engine = StreamingEngine(scorer.loaded.model, scorer.sink_tokens, conf)
streams = [f"s{i}" for i in range(ROWS)]
for sid in streams:
    while engine.stream_length(sid) < conf.window + 64:
        engine.score([Chunk(sid, line * 8)])
batch = [Chunk(sid, line) for sid in streams]
for _ in range(3):
    engine.score(batch)
batch_calls = max(1, calls // 4)  # each is about 9 single-line calls' work
started = time.process_time()
for _ in range(batch_calls):
    engine.score(batch)
out[f"{ROWS}x{len(line)}"] = 1000 * (time.process_time() - started) / batch_calls
print(json.dumps(out))
"""

# The kernels a call cannot do without, timed alone on tensors of the call's shapes: per layer the
# window's keys and values gathered from their pages and widened, torch's fused attention over them
# and over the sinks, and the layer's four matmuls; then the output layer. What is left of a call's
# cost above this is per-op and Python overhead.
FLOOR = r"""
import json, math, sys, time, torch
import torch.nn.functional as F
torch.set_num_threads(1)
from logstream.config import Settings
from logstream.scoring.scorer import load_scorer
model_dir, line_tokens, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model = load_scorer(model_dir, device="cpu", dtype="float32").loaded.model
a, conf = model.args, Settings().cache.engine_config()
flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
P, L, S, G = conf.page_tokens, conf.window, 126, a.n_heads // a.n_kv_heads
pool = torch.randn(4 * L // P, P, a.n_kv_heads, a.head_dim).to(torch.bfloat16)
layer = model.layers[0]
weights = [torch.cat([layer.self_attn.q_proj.weight, layer.self_attn.k_proj.weight, layer.self_attn.v_proj.weight]),
           layer.self_attn.o_proj.weight, torch.cat([layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight]),
           layer.mlp.down_proj.weight]
out = {}
for T in (1, line_tokens):
    pages = (L + T - 1) // P + 2
    table = torch.arange(pages) * 3 % pool.shape[0]
    q = torch.randn(1, a.n_kv_heads, G * T, a.head_dim)
    sink_k, sink_v = torch.randn(1, a.n_kv_heads, S, a.head_dim), torch.randn(1, a.n_kv_heads, S, a.head_dim)
    mask = torch.zeros(1, 1, G * T, pages * P)
    x = [torch.randn(T, w.shape[1]) for w in weights]
    h = torch.randn(T, a.dim)
    def call():
        for _ in range(a.n_layers):
            k = pool.index_select(0, table).view(1, -1, a.n_kv_heads, a.head_dim).transpose(1, 2).float()
            v = pool.index_select(0, table).view(1, -1, a.n_kv_heads, a.head_dim).transpose(1, 2).float()
            flash(q, k, v, attn_mask=mask, scale=1.0)
            flash(q, sink_k, sink_v, scale=1.0)
            for xi, w in zip(x, weights):
                F.linear(xi, w)
        F.linear(h, model.lm_head.weight)
    with torch.inference_mode():
        for _ in range(10):
            call()
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for _ in range(calls):
                call()
            best = min(best, 1000 * (time.process_time() - started) / calls)
    out[T] = best
print(json.dumps(out))
"""


def measure(tree: Path, layout: str, model: Path, calls: int) -> dict[int, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", MEASURE, str(model), layout, str(calls), json.dumps(LINE), str(ROWS)],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    return {int(k) if k.isdigit() else k: v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def floor(model: Path, calls: int) -> dict[int, float]:
    done = subprocess.run([sys.executable, "-c", FLOOR, str(model), str(len(LINE)), str(calls)], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="d8b24ca^", help="the earlier revision (default: the engine when "
                        "issue 12 was filed)")
    parser.add_argument("--also", action="append", default=[], metavar="REV",
                        help="another revision to measure beside them (its own defaults), e.g. the last commit")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="write a markdown table here")
    args = parser.parse_args(argv)
    model = ROOT / "logstream" / "assets" / "default-model"
    with tempfile.TemporaryDirectory(prefix="logstream-per-call-") as scratch:
        revisions = {f"{rev} (default layout)": (Path(scratch) / f"rev{i}", rev)
                     for i, rev in enumerate([args.against] + args.also)}
        for path, rev in revisions.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
                           check=True, capture_output=True)
        try:
            trees = {name: (path, "default") for name, (path, _) in revisions.items()}
            trees.update({"this tree, slots layout": (ROOT, "slots"),
                          "this tree, paged (service default)": (ROOT, "default")})
            best: dict[str, dict[int, float]] = {}
            started = time.time()
            for round_ in range(args.rounds):
                for name, (tree, layout) in trees.items():
                    got = measure(tree, layout, model, args.calls)
                    best[name] = {k: min(v, best.get(name, {}).get(k, float("inf"))) for k, v in got.items()}
                print(f"[{time.time() - started:5.0f}s] round {round_ + 1}: "
                      + "; ".join(f"{n}: {b[1]:.2f} / {b[len(LINE)]:.2f} / {b[BATCH]:.2f} ms" for n, b in best.items()),
                      flush=True)
        finally:
            for path, _ in revisions.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], capture_output=True)
    reference = best[next(iter(trees))]
    kernels = floor(model, args.calls)
    rows = [("| engine | 1 token: CPU-ms | cheaper than the reference | 17 tokens: CPU-ms | cheaper than the reference "
             f"| {ROWS} streams x 17 tokens: CPU-ms | cheaper than the reference |"),
            "|---|---|---|---|---|---|---|"]
    for name, b in best.items():
        rows.append(f"| {name} | {b[1]:.2f} | {reference[1] / b[1]:.2f}x | {b[len(LINE)]:.2f} "
                    f"| {reference[len(LINE)] / b[len(LINE)]:.2f}x | {b[BATCH]:.2f} | {reference[BATCH] / b[BATCH]:.2f}x |")
    rows += ["", ("The kernels alone (the same model's shapes: each layer's window gathered and widened, fused "
                  "attention over it and over the sinks, its four matmuls; then the output layer), the floor of a "
                  "call in float32 on this core:"), "",
             "| call | kernels alone: CPU-ms | share of the reference's call | reference / 2 (the issue's goal) |",
             "|---|---|---|---|"]
    for tokens, label in ((1, "1 token"), (len(LINE), f"{len(LINE)} tokens")):
        rows.append(f"| {label} | {kernels[tokens]:.2f} | {kernels[tokens] / reference[tokens]:.0%} "
                    f"| {reference[tokens] / 2:.2f} |")
    table = "\n".join(rows)
    print(table)
    if args.out:
        from cache_bench_setup import cpu_name  # next to this script (it imports torch: only for the report)

        cpu = cpu_name()
        load = os.getloadavg()
        args.out.write_text(
            "# One line per call: the fixed cost of a pass\n\n"
            f"```\npython benchmarks/per_call.py {' '.join(sys.argv[1:])}\n```\n\n"
            f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {cpu}, {os.cpu_count()} cores, one torch "
            f"thread, torch CPU; load average at the end {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}. CPU-ms per call "
            "scoring 1 token or one 17-token line of one stream whose 2048-token window is full, and one 17-token "
            f"line of each of {ROWS} such streams (the service's mean micro-batch at half load), the shipped model; "
            f"the best of {args.rounds} alternating rounds of {args.calls} calls per engine, each in its own process. "
            f"Reference: `{args.against}`, the engine as it was when the issue was filed"
            + (f"; also measured: {', '.join(f'`{rev}`' for rev in args.also)}" if args.also else "")
            + ".\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
