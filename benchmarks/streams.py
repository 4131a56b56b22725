"""Many streams in bounded memory: the slot pool (one 2048-token slot per resident stream, float32,
the old defaults: 64 slots and a 2 GiB host budget) and the paged pool (pages of 32 tokens, bfloat16,
the service's defaults: a 2 GiB pool, shrinking cold windows to 512 tokens, then a disk tier where
one is configured), side by side on the same streams, in one process.

    python benchmarks/streams.py                 # -> benchmarks/results/streams.md (about half an hour)
    python benchmarks/streams.py --quick         # small counts, -> /tmp/logstream-streams

Workloads, with realistic lengths, read and tokenized exactly as the scorer reads lines:

* **sessions**: HDFS block lifecycles (``../shared/data/hdfs_sessions/train_normal.log``, one stream
  per block id, reused under new ids past its 2,400 blocks; one stream alone is the whole file);
* **hosts**: the 16 Loghub 2k samples cut into host streams, each filled to a full 2048-token
  window before measuring (long-lived sources).

For each count of active streams: a fill phase gives every stream its history (sessions: all their
lines but the last 20%; hosts: a full window), in the worker's way (lines of many streams per call,
each stream's lines one chunk); then 640 lines are measured, 64 per call, round robin over the
streams (the worker's micro-batches): CPU time per token, offloads / restores / forgotten streams
during those lines, where the windows are (pool, host, disk), RSS added since the engine was made.
The useful work per token (every matmul of the model, attention over the sink and the window each
token really sees) over CPU time gives the rate the scorer reaches, beside the core's own float32
matmul rate measured in the same run. bfloat16 against float32 pages: the log-probabilities of the
same measured tokens, compared.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import torch

from cache_bench_setup import describe_machine  # noqa: E402 (next to this script)

from logstream.cache import Chunk, EngineConfig, StreamingEngine
from logstream.config import Settings
from logstream.scoring.scorer import load_scorer

REPO = Path(__file__).resolve().parents[1]
SESSIONS = REPO.parent / "shared" / "data" / "hdfs_sessions" / "train_normal.log"
BLOCK = re.compile(r"blk_-?\d+")
MEASURE_LINES, BATCH = 640, 64


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def tokenized(scorer, stream: str, lines: list[str]) -> list[list[int]]:
    return [scorer.encode(stream, line)[2] for line in lines]


def session_streams(scorer, n: int) -> dict[str, list[list[int]]]:
    """n streams of HDFS lines: one per block (block lines in order); one stream: the whole file."""
    if not SESSIONS.exists():
        raise SystemExit(f"{SESSIONS} is missing (../shared/data/hdfs_sessions): the sessions workload needs it")
    lines = SESSIONS.read_text().splitlines()
    if n == 1:
        return {"hdfs": tokenized(scorer, "hdfs", lines[:3000])}
    blocks: dict[str, list[str]] = {}
    for line in lines:
        match = BLOCK.search(line)
        if match:
            blocks.setdefault(match.group(0), []).append(line)
    base = [tokenized(scorer, block, block_lines) for block, block_lines in blocks.items()]
    return {f"blk-{i}": base[i % len(base)] for i in range(n)}


def host_streams(scorer, n: int, window: int) -> dict[str, list[list[int]]]:
    """n host streams cut from the Loghub samples; each long enough for a full window and then some."""
    files = sorted((REPO / "sample_logs" / "loghub").glob("*/*_2k.log"))
    pool = [tokenized(scorer, f.stem, f.read_text(errors="replace").splitlines()) for f in files]
    flat = [line for lines in pool for line in lines]
    per_stream = window // 12 + MEASURE_LINES // max(1, min(n, MEASURE_LINES)) + 8  # lines are ~17 tokens
    return {f"host-{i}": [flat[(i * 7919 + j) % len(flat)] for j in range(per_stream)] for i in range(n)}


@dataclass
class Result:
    layout: str
    workload: str
    streams: int
    tokens: int = 0
    cpu_s: float = 0.0
    flops: float = 0.0
    fill_s: float = 0.0
    stats: dict = field(default_factory=dict)
    during: dict = field(default_factory=dict)
    rss_added: int = 0
    logprobs: list = field(default_factory=list)

    @property
    def us_per_token(self) -> float:
        return 1e6 * self.cpu_s / max(1, self.tokens)


def model_flops(model, sink: int) -> tuple[float, float]:
    """Useful float operations for one token: (fixed part, part per window token it sees). Every matmul
    of the model (the output layer included), and attention (scores and weighted values) over the sink,
    the window and itself."""
    a = model.args
    matmul_params = sum(p.numel() for name, p in model.named_parameters() if p.dim() == 2 and "embed" not in name)
    if a.tie_word_embeddings:
        matmul_params += model.embed_tokens.weight.numel()
    per_key = a.n_layers * 4 * a.n_heads * a.head_dim
    return 2 * matmul_params + per_key * (sink + 1), per_key


def run(scorer, config: EngineConfig, layout: str, workload: str, streams: dict[str, list[list[int]]],
        fill_share: float) -> Result:
    model, window = scorer.loaded.model, config.window
    gc.collect()
    before = rss_bytes()
    engine = StreamingEngine(model, scorer.sink_tokens, config)
    result = Result(layout, workload, len(streams))
    fill = {s: max(1, int(len(lines) * fill_share)) if workload == "sessions" else
            _lines_for(lines, window) for s, lines in streams.items()}
    started = time.perf_counter()
    ids = list(streams)
    for at in range(0, len(ids), BATCH):  # fill: 64 streams a call, each its history as one chunk
        engine.score([Chunk(s, [t for line in streams[s][:fill[s]] for t in line]) for s in ids[at:at + BATCH]])
    result.fill_s = time.perf_counter() - started
    counts = engine.stats()
    # measure: 640 lines, 64 a call, round robin over the streams with lines left (the worker's batches)
    order, nxt = [], dict(fill)
    while len(order) < MEASURE_LINES:
        progressed = False
        for s in ids:
            if nxt[s] < len(streams[s]) and len(order) < MEASURE_LINES:
                order.append((s, streams[s][nxt[s]]))
                nxt[s] += 1
                progressed = True
        if not progressed:
            break
    fixed, per_key = model_flops(model, engine.sink.length)
    cpu = time.process_time()
    for at in range(0, len(order), BATCH):
        batch: dict[str, list[int]] = {}
        for s, line in order[at:at + BATCH]:
            batch.setdefault(s, []).extend(line)
        scores = engine.score([Chunk(s, tokens) for s, tokens in batch.items()])
        for chunk_scores in scores:
            result.logprobs.append(chunk_scores.logprobs)
            result.tokens += len(chunk_scores.logprobs)
    result.cpu_s = time.process_time() - cpu
    result.flops = sum(fixed + per_key * visible for visible in visible_windows(order, fill, streams, window))
    stats = engine.stats()
    result.stats = stats.__dict__.copy()
    result.during = {k: getattr(stats, k) - getattr(counts, k) for k in ("offloads", "restores", "forgotten")}
    result.rss_added = rss_bytes() - before
    del engine
    gc.collect()
    return result


def visible_windows(order, fill, streams, window: int):
    """For every measured token, how many window tokens it saw (its stream position, at most L)."""
    position = {s: sum(len(line) for line in streams[s][:fill[s]]) for s, _ in order}
    for s, line in order:
        for _ in line:
            yield min(position[s], window)
            position[s] += 1


def _lines_for(lines: list[list[int]], tokens: int) -> int:
    total = 0
    for i, line in enumerate(lines):
        total += len(line)
        if total >= tokens:
            return i + 1
    return len(lines)


def per_call(scorer, conf: EngineConfig, tokens: int, calls: int = 60, rounds: int = 3) -> float:
    """CPU-ms of one call that scores ``tokens`` new tokens of one stream whose window is full (the
    fixed cost of a pass: one line per call), best of a few rounds."""
    engine = StreamingEngine(scorer.loaded.model, scorer.sink_tokens, conf)
    line = list(range(5, 22))
    while engine.stream_length("s") < conf.window + 64:
        engine.score([Chunk("s", line * 8)])
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(calls):
            engine.score([Chunk("s", line[:tokens])])
        best = min(best, 1000 * (time.process_time() - started) / calls)
    return best


def compiled_layer_parts(scorer, shapes=((1, 17), (64, 9)), calls: int = 200) -> list[tuple]:
    """torch.compile of a decoder layer's dense parts (norms, projections, MLP) against eager, µs per
    call: does compiling the steady-state step pay? (The attention keeps its data-dependent gathers.)"""
    layer = scorer.loaded.model.layers[0]
    attn = layer.self_attn

    def dense(x):
        h = layer.input_layernorm(x)
        q, k, v = attn.q_proj(h), attn.k_proj(h), attn.v_proj(h)
        x = x + attn.o_proj(q)
        return x + layer.mlp(layer.post_attention_layernorm(x)), k, v

    def timed(fn, x):
        for _ in range(20):
            fn(x)
        started = time.perf_counter()
        for _ in range(calls):
            fn(x)
        return 1e6 * (time.perf_counter() - started) / calls

    out = []
    with torch.inference_mode():
        compiled = torch.compile(dense, dynamic=True)
        started = time.perf_counter()
        compiled(torch.randn(1, 3, layer.mlp.gate_proj.in_features))
        compile_s = time.perf_counter() - started
        for rows, tokens in shapes:
            x = torch.randn(rows, tokens, layer.mlp.gate_proj.in_features)
            out.append((rows, tokens, timed(dense, x), timed(compiled, x), compile_s))
    return out


def matmul_rate(n: int = 1024, repeats: int = 5) -> float:
    """The core's float32 matmul rate on one thread (FLOP/s), best of a few."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = 0.0
    for _ in range(repeats):
        started = time.process_time()
        a @ b
        best = max(best, 2 * n ** 3 / (time.process_time() - started))
    return best


def configs(args) -> dict[str, EngineConfig]:
    paged = Settings().cache.engine_config()
    return {
        "slots (old)": EngineConfig(layout="slots", slots=64, host_bytes=2 << 30),
        "paged": paged,
        "paged + disk": dataclasses.replace(paged, disk_dir=str(args.disk_dir), disk_bytes=16 << 30),
        "paged float32": dataclasses.replace(paged, kv_dtype=None, pool_bytes=4 << 30),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small counts, a few minutes")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--disk-dir", type=Path, default=Path("/tmp/logstream-streams-disk"))
    args = p.parse_args(argv)
    out = args.out or (Path("/tmp/logstream-streams") if args.quick else REPO / "benchmarks" / "results")
    torch.set_num_threads(1)
    settings = Settings()
    scorer = load_scorer(settings.model.path, device="cpu", dtype="float32")
    machine = describe_machine("cpu", 1)
    rate = matmul_rate()
    conf = configs(args)
    if args.quick:
        plan = [("sessions", [1, 100, 1000], ["slots (old)", "paged"]), ("hosts", [1, 10], ["slots (old)", "paged"])]
    else:
        plan = [("sessions", [1, 100, 1000, 10000], ["slots (old)", "paged"]),
                ("sessions", [100000], ["paged", "paged + disk"]),
                ("hosts", [1, 100, 1000], ["slots (old)", "paged"])]
    results: list[Result] = []
    started = time.time()
    for workload, counts, layouts in plan:
        for n in counts:
            streams = (session_streams(scorer, n) if workload == "sessions"
                       else host_streams(scorer, n, settings.cache.window_tokens))
            if n == 100000:  # sessions just opened: their first two lines (a full pass over 100,000 whole
                streams = {s: lines[:3] for s, lines in streams.items()}  # sessions would take hours here)
            for layout in layouts:
                print(f"[{time.time() - started:6.0f}s] {workload} x {n:,}: {layout}", flush=True)
                results.append(run(scorer, conf[layout], layout, workload, streams, fill_share=0.8))
    calls = {name: (per_call(scorer, conf[name], 1), per_call(scorer, conf[name], 17)) for name in ("slots (old)", "paged")}
    compiled = [] if args.quick else compiled_layer_parts(scorer)
    accuracy = []
    for workload, n in (("sessions", 1000), ("hosts", 100)) if not args.quick else (("sessions", 100),):
        streams = session_streams(scorer, n) if workload == "sessions" else host_streams(scorer, n, 2048)
        half = run(scorer, conf["paged"], "paged", workload, streams, 0.8)
        full = run(scorer, conf["paged float32"], "paged float32", workload, streams, 0.8)
        diffs = torch.cat([(a - b).abs() for a, b in zip(half.logprobs, full.logprobs)])
        accuracy.append((workload, n, float(diffs.mean()), float(diffs.max()), len(diffs)))
    out.mkdir(parents=True, exist_ok=True)
    write(out / "streams.md", results, accuracy, rate, machine, args, time.time() - started, calls, compiled)
    return 0


def write(path: Path, results: list[Result], accuracy: list, rate: float, machine: dict, args, seconds: float,
          calls: dict, compiled: list):
    mib = 2 ** 20
    md = ["# Many streams in bounded memory", "",
          f"`python benchmarks/streams.py{' --quick' if args.quick else ''}`, "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {seconds / 60:.1f} min. One process, one torch thread; the "
          "shipped model; every figure of a row from the same run.", "",
          "| machine | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in machine.items()]
    md += ["", f"The core's float32 matmul rate (1024x1024 matmul, one thread): **{rate / 1e9:.1f} GFLOP/s**.", "",
           "| workload | active streams | layout | CPU-µs per token | vs 1 stream | useful rate (share of matmul rate) "
           "| per 640 lines: offloads / restores / forgotten | windows in pool / host / disk | forgotten in all "
           "| pool in use | RSS added |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    one = {(r.workload, r.layout): r.us_per_token for r in results if r.streams == 1}
    for r in results:
        s = r.stats
        base = one.get((r.workload, r.layout)) or one.get((r.workload, "paged"))
        pool_used = s.get("device_bytes", 0)
        md.append(f"| {r.workload} | {r.streams:,} | {r.layout} | {r.us_per_token:.0f} | "
                  f"{r.us_per_token / base:.2f} | {r.flops / r.cpu_s / 1e9:.1f} GFLOP/s "
                  f"({100 * r.flops / r.cpu_s / rate:.0f}%) | {r.during['offloads']} / {r.during['restores']} / "
                  f"{r.during['forgotten']} | {s['streams_resident']:,} / {s['streams_on_host']:,} / "
                  f"{s.get('streams_on_disk', 0):,} | {s['forgotten']:,} | {pool_used / mib:,.0f} MiB | "
                  f"{r.rss_added / mib:,.0f} MiB |")
    md += ["", "CPU-µs per token over the 640 measured lines (the fill phase is not timed). Slots (old): a "
           "2048-token float32 slot per resident stream, 64 slots, windows offloaded to a 2 GiB host budget, then "
           "forgotten. Paged: the service's defaults (`cache.*`); `paged + disk` adds a 16 GiB disk tier "
           f"(`cache.disk_bytes`, under `{args.disk_dir}`). 'pool in use' is the bytes of the pages (or slots) "
           "streams hold; the pool's tensors are allocated once and committed as pages are first used. The "
           "useful rate counts every matmul of the model and attention over what each token really sees.", "",
           "bfloat16 against float32 pages, the same measured tokens (log-probabilities, nats):", "",
           "| workload | streams | tokens | mean abs difference | max abs difference |", "|---|---|---|---|---|"]
    for workload, n, mean, worst, count in accuracy:
        md.append(f"| {workload} | {n:,} | {count:,} | {mean:.4f} | {worst:.4f} |")
    slots_1, slots_17 = calls["slots (old)"]
    md += ["", "One line per call: CPU-ms of a call scoring one token, or one 17-token line, of one stream whose "
           "window is full (the fixed cost of a pass), best of 3 x 60 calls:", "",
           "| layout | 1 token | vs slots | 17 tokens | vs slots |", "|---|---|---|---|---|"]
    for name, (one_token, one_line) in calls.items():
        md.append(f"| {name} | {one_token:.2f} | {slots_1 / one_token:.2f}x | {one_line:.2f} | "
                  f"{slots_17 / one_line:.2f}x |")
    if compiled:
        md += ["", f"`torch.compile` of a decoder layer's dense parts (norms, projections, MLP; dynamic shapes, "
               f"{compiled[0][4]:.0f} s to compile) against eager, µs per call:", "",
               "| rows x tokens | eager | compiled | compiled / eager |", "|---|---|---|---|"]
        for rows, tokens, eager, comp, _ in compiled:
            md.append(f"| {rows} x {tokens} | {eager:.0f} | {comp:.0f} | {comp / eager:.2f} |")
    md.append("")
    path.write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    sys.exit(main())
