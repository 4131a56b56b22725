"""The Triton kernels against the torch path and torch's scaled_dot_product_attention, and end to end.

Part 1, one layer's attention of a pass (``PagedAttention``: append + attend), full windows of
``--window`` tokens (L = 2048) in the paged pool, at 1, 64 and 1,024 streams, for decode (1 new
token per stream) and line-sized chunks (32): the kernels (``cache.attention=triton``), the torch
path the engine takes without them (gather the pages, mask, matmul-softmax-matmul) and
``torch.nn.functional.scaled_dot_product_attention`` on the same keys already gathered into
contiguous tensors with a boolean mask (its best case: the gather is not timed). Tokens/s and the
memory bandwidth achieved (the keys and values each pass must read, over its time) against the
device's peak: its nominal figure and a measured device-to-device copy.

Part 2, end to end: the scorer's lines/s (``LineScorer.score``, tokenizing included) with every
window full, one line of each of 1,024 streams per call, with the shipped model and a random one of
about 20M parameters, kernels against torch path.

    python benchmarks/kernel_bench.py                   # on a CUDA device: writes benchmarks/results/kernels.md
    TRITON_INTERPRET=1 python benchmarks/kernel_bench.py --quick   # tiny shapes on a CPU: checks it runs
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from cache_bench_setup import describe_machine
from scorer_throughput import interleaved, stream_lines

from logstream.cache import Chunk, EngineConfig
from logstream.cache.paged_attention import PagedAttention
from logstream.cache.pages import PagedPool, PagedStream
from logstream.cache.sink import SinkPrefix
from logstream.config import DEFAULT_MODEL_DIR
from logstream.model.llama import Rotary
from logstream.scoring.scorer import load_scorer

NOMINAL_PEAK = {"H200": 4.8e12, "H100 SXM": 3.35e12, "H100 PCIe": 2.0e12, "H100": 3.35e12, "A100": 2.0e12,
                "L40S": 0.864e12, "L4": 0.3e12}  # bytes/s, the vendors' datasheets


def nominal_peak(name: str) -> float | None:
    return next((v for k, v in NOMINAL_PEAK.items() if k in name), None)


def measured_copy_bandwidth(device: torch.device) -> float:
    """Bytes/s of a 1 GiB device-to-device copy (read + write)."""
    src = torch.empty(1 << 28, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return 2 * src.numel() * 4 / timed(lambda: dst.copy_(src), device)


def timed(fn, device: torch.device, rounds: int = 20) -> float:
    """Seconds per call: the median of ``rounds`` (CUDA: triton's do_bench, events and a flushed L2)."""
    if device.type == "cuda":
        import triton.testing

        return triton.testing.do_bench(fn, warmup=5, rep=max(20, rounds), return_mode="median") / 1e3
    fn()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def device_time(fn, device: torch.device) -> float | None:
    """Seconds per call on the device alone: the call captured in a CUDA graph and replayed (triton's
    do_bench_cudagraph), so the host's launch overhead is out of the figure. None off CUDA or where the
    call cannot be captured."""
    if device.type != "cuda":
        return None
    import triton.testing

    try:
        fn()  # compiled before capture
        return triton.testing.do_bench_cudagraph(fn, rep=20, return_mode="median") / 1e3
    except Exception as error:  # noqa: BLE001 - a figure left out, with its reason, not a failed run
        print(f"not captured: {type(error).__name__}: {error}", flush=True)
        return None


def layer_case(streams: int, new_tokens: int, window: int, heads: int, kv_heads: int, head_dim: int, sink: int,
               page_tokens: int, device: torch.device, dtype: torch.dtype, kernels: bool) -> tuple:
    """One layer's pass over ``streams`` full windows in a pool of random pages: the PagedAttention the
    engine would build (kernels or not) and that layer's q, k, v."""
    P = page_tokens
    per_stream = (window + new_tokens) // P + 2
    pool = PagedPool(1, kv_heads, head_dim, heads * head_dim, window, P, streams * per_stream, device, dtype)
    pool.keys.normal_()
    pool.values.normal_()
    g = torch.Generator().manual_seed(0)
    free = (torch.randperm(streams * per_stream, generator=g) + 1).tolist()  # scattered, as after hours of churn
    states = []
    for _ in range(streams):
        length = 10 * window + 7  # long-lived: the window has slid and starts mid-page
        lo = length - window
        state = PagedStream(length=length, first=0, base=length - window, page0=lo // P)
        state.pages = [free.pop() for _ in range((length + new_tokens - 1) // P - lo // P + 1)]
        states.append(state)
    prefix = SinkPrefix(tokens=tuple(range(sink)), keys=(torch.randn(kv_heads, sink, head_dim, device=device, dtype=dtype),),
                        values=(torch.randn(kv_heads, sink, head_dim, device=device, dtype=dtype),),
                        last_hidden=torch.zeros(heads * head_dim, device=device, dtype=dtype))
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    attention = PagedAttention(states, [new_tokens] * streams, pool, prefix, Rotary(inv_freq), dtype, kernels=kernels)
    q = torch.randn(streams, heads, new_tokens, head_dim, device=device, dtype=dtype)
    k = torch.randn(streams, kv_heads, new_tokens, head_dim, device=device, dtype=dtype)
    v = torch.randn_like(k)
    return attention, q, k, v, pool, prefix


def sdpa_case(attention: PagedAttention, q: torch.Tensor, pool: PagedPool, prefix: SinkPrefix):
    """The same keys gathered into [B, Hkv, S + W, hd] (sinks first) with a boolean [B, 1, T, S + W] mask."""
    window_k, window_v = attention._window(pool.keys[0]), attention._window(pool.values[0])
    B = q.shape[0]
    keys = torch.cat((prefix.keys[0][None].expand(B, -1, -1, -1), window_k), dim=2)
    values = torch.cat((prefix.values[0][None].expand(B, -1, -1, -1), window_v), dim=2)
    visible = attention.window_bias[:, 0] == 0  # [B, 1, T, W]
    mask = torch.cat((torch.ones(*visible.shape[:3], prefix.keys[0].shape[1], dtype=torch.bool, device=q.device),
                      visible), dim=-1)
    return lambda: F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)


def time_layer(name: str, case: tuple, device: torch.device, args) -> dict:
    attention, q, k, v, pool, prefix = case
    row = {name: timed(lambda: attention(0, q, k, v), device, args.rounds),
           f"{name}_graph": device_time(lambda: attention(0, q, k, v), device)}
    if not attention.kernels:
        sdpa = sdpa_case(attention, q, pool, prefix)
        row["sdpa"], row["sdpa_graph"] = timed(sdpa, device, args.rounds), device_time(sdpa, device)
        # what a pass must read: each row's window pages and the sinks, keys and values
        keys_read = q.shape[0] * attention.pages_per_row * args.page_tokens + args.sink
        row["bytes"] = 2 * pool.keys.element_size() * args.kv_heads * args.head_dim * keys_read
    return row


def attention_rows(args, device: torch.device, dtype: torch.dtype, peak: float) -> list[dict]:
    rows = []
    for streams in args.streams:
        for new_tokens in args.tokens:
            shape = (streams, new_tokens, args.window, args.heads, args.kv_heads, args.head_dim, args.sink,
                     args.page_tokens, device, dtype)
            row = {"streams": streams, "tokens": new_tokens}
            for name, kernels in (("triton", True), ("torch", False)):
                row.update(time_layer(name, layer_case(*shape, kernels=kernels), device, args))
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            row["peak_share"] = row["bytes"] / (row["triton_graph"] or row["triton"]) / peak
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def random_model_dir(target_params: float, out: Path) -> Path:
    """The shipped model's tokenizer and card with a random Llama of about ``target_params`` parameters."""
    import transformers

    shipped = Path(DEFAULT_MODEL_DIR)
    config = transformers.AutoConfig.from_pretrained(shipped)
    config.hidden_size, config.intermediate_size, config.num_attention_heads = 384, 1152, 6
    config.num_key_value_heads, config.head_dim, config.num_hidden_layers = 2, 64, 10
    model = transformers.AutoModelForCausalLM.from_config(config)
    out.mkdir(parents=True, exist_ok=True)
    for f in shipped.iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            shutil.copy(f, out / f.name)
    model.save_pretrained(out, safe_serialization=True)
    return out


def end_to_end(model_dir: Path, device: str, attention: str, streams: int, window: int, encoded_fill: list,
               encoded_work: list, raw_work: list, profile: str | None = None) -> dict:
    """The scorer's lines/s with every window full, ``streams`` lines (one of each stream) per call:
    ``model`` on lines already read and tokenized (``LineScorer.model_scores``: the engine and each
    line's aggregates), ``score`` on raw lines (``LineScorer.score``: reading, masking, tokenizing too)."""
    config = EngineConfig(window=window, pool_bytes=None, slots=streams, attention=attention,
                          max_batch_rows=max(64, streams), max_batch_tokens=1 << 16)
    scorer = load_scorer(model_dir, device=device, engine_config=config)
    parameters = sum(p.numel() for p in scorer.engine.model.parameters())
    print(f"{model_dir.name}: {parameters / 1e6:.1f}M parameters, {attention}", flush=True)
    history: dict[str, list[int]] = {}
    for stream, _, _, ids in encoded_fill:
        history.setdefault(stream, []).extend(ids)
    longest = max(len(ids) for ids in history.values())
    for at in range(0, longest, 128):  # every window full first, 128 tokens a stream a call
        scorer.engine.score([Chunk(stream, ids[at:at + 128]) for stream, ids in history.items() if ids[at:at + 128]])
    assert min(scorer.engine.stream_length(s) for s in history) >= window

    def rate(fn, work) -> float:
        warm = 4 * streams  # the kernels compiled for each pass shape (length bucket) before the clock starts
        for at in range(0, warm, streams):
            fn(work[at:at + streams])
        work = work[warm - streams:]
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        started = time.perf_counter()
        for at in range(streams, len(work), streams):
            fn(work[at:at + streams])
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return (len(work) - streams) / (time.perf_counter() - started)

    result = {"model": rate(scorer.model_scores, encoded_work), "score": rate(scorer.score, raw_work),
              "parameters": parameters}
    if profile:  # where a call's time goes, for the record: host functions and the waits on the device
        import cProfile
        import io
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for at in range(0, 4 * streams, streams):
            scorer.model_scores(encoded_work[at:at + streams])
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
        Path(profile).write_text(f"{model_dir.name}, {attention}: 4 calls of model_scores, {streams} lines each\n"
                                 + text.getvalue())
    return result


def encoded_lines(model_dir: Path, streams: int, window: int, lines: int) -> tuple[list, list, list]:
    """(fill, work, raw): enough lines of each stream to fill its window, ``lines`` more read and
    tokenized once (every model here shares the shipped tokenizer and reading), and raw lines after them."""
    scorer = load_scorer(model_dir, device="cpu", engine_config=EngineConfig(window=64, slots=8))
    texts = stream_lines(streams)
    fill, cursor = [], 0
    per_stream: dict[str, int] = dict.fromkeys(texts, 0)
    while min(per_stream.values()) < window + 64:
        chunk, cursor = interleaved(texts, cursor, len(texts) * 8)
        encoded = scorer.encode_many(chunk)
        for stream, _, _, ids in encoded:
            per_stream[stream] += len(ids)
        fill += encoded
    work, cursor = interleaved(texts, cursor, lines)
    raw, _ = interleaved(texts, cursor, lines // 2)
    return fill, scorer.encode_many(work), raw


def write_markdown(args, machine, peak_nominal, peak_copy, rows, e2e, started) -> None:
    out = Path(args.out)
    text = [f"# Kernels: sink + paged-window attention on {machine.get('gpu', machine['device'])}", "", "```",
            "python benchmarks/kernel_bench.py " + " ".join(args.argv), "```", "",
            f"Run {started:%Y-%m-%d %H:%M} UTC. Generated by `benchmarks/kernel_bench.py`.", "",
            "| machine | |", "|---|---|", *[f"| {k} | {v} |" for k, v in machine.items()], "",
            "Peak memory bandwidth: " + (f"nominal {peak_nominal / 1e9:,.0f} GB/s" if peak_nominal else
                                         "no nominal figure for this device")
            + (f"; a device-to-device copy measured {peak_copy / 1e9:,.0f} GB/s." if peak_copy else "."), "",
            (f"## One layer's attention (append + attend), L = {args.window}, {args.heads} query heads, "
             f"{args.kv_heads} KV heads, head_dim {args.head_dim}, {args.sink} sink tokens, pages of "
             f"{args.page_tokens} in {args.dtype}"), "",
            ("Median time per call. `call`: as the engine calls it, the host's launches included (Python and "
             "Triton's launcher); `device`: the same call captured in a CUDA graph and replayed, the device's "
             "time alone. tokens/s = new tokens of the pass / device time; bandwidth = keys and values the pass "
             "must read / the kernels' device time. SDPA: on the keys already gathered (the gather not timed)."), "",
            ("| streams | new tokens each | triton call | triton device | torch path call | torch path device | "
             "SDPA call | SDPA device | triton tokens/s | triton GB/s | share of peak | vs torch (device) | "
             "vs SDPA (device) |"), "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def us(x):
        return "—" if x is None else f"{x * 1e6:,.1f} µs"

    def ratio(a, b):
        return "—" if a is None or b is None else f"{a / b:.2f}x"

    for r in rows:
        tokens = r["streams"] * r["tokens"]
        t = r["triton_graph"] or r["triton"]
        text.append(f"| {r['streams']:,} | {r['tokens']} | {us(r['triton'])} | {us(r['triton_graph'])} | "
                    f"{us(r['torch'])} | {us(r['torch_graph'])} | {us(r['sdpa'])} | {us(r['sdpa_graph'])} | "
                    f"{tokens / t:,.0f} | {r['bytes'] / t / 1e9:,.0f} | {100 * r['peak_share']:.0f} % | "
                    f"{ratio(r['torch_graph'] or r['torch'], t)} | {ratio(r['sdpa_graph'] or r['sdpa'], t)} |")
    text += ["", (f"## End to end: the scorer's lines/s, every window full ({args.window} tokens), one line of each "
                  f"of {args.e2e_streams:,} streams per call"), "",
             ("`model`: lines already read and tokenized (`LineScorer.model_scores`: the engine and each line's "
              "aggregates). `score`: raw lines (`LineScorer.score`: reading, masking and tokenizing on one CPU "
              "thread too)."), "",
             "| model | parameters | part | triton | torch path | ratio |", "|---|---|---|---|---|---|"]
    for name, result in e2e.items():
        for part in ("model", "score"):
            t, p = result["triton"][part], result["torch"][part]
            text.append(f"| {name} | {result['triton']['parameters'] / 1e6:.1f}M | {part} | {t:,.0f} | {p:,.0f} | "
                        f"{t / p:.2f}x |")
    text += ["", ("Goals (issue 15): at least 60 % of peak bandwidth at 1,024 streams, faster than both comparisons, "
                  "and at least 100,000 lines/s end to end with the shipped model."), ""]
    out.write_text("\n".join(text))
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=lambda s: [int(x) for x in s.split(",")], default=[1, 64, 1024])
    parser.add_argument("--tokens", type=lambda s: [int(x) for x in s.split(",")], default=[1, 32])
    parser.add_argument("--window", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=2, help="the shipped model's: 2 query heads, 1 KV head, 64")
    parser.add_argument("--kv-heads", type=int, default=1)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--sink", type=int, default=256, help="sink tokens (BOS + a pattern preamble)")
    parser.add_argument("--page-tokens", type=int, default=32)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--e2e-streams", type=int, default=1024)
    parser.add_argument("--e2e-lines", type=int, default=30_000)
    parser.add_argument("--profile-dir", help="write a profile of the end-to-end calls per model and path here")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, for a CPU in Triton's interpreter")
    parser.add_argument("--out", default="benchmarks/results/kernels.md")
    import sys

    args = parser.parse_args()
    args.argv = sys.argv[1:]
    if args.quick:
        args.streams, args.tokens, args.window, args.sink, args.page_tokens = [1, 4], [1, 5], 64, 8, 16
        args.rounds, args.e2e_streams, args.e2e_lines, args.dtype = 2, 4, 40, "float32"
        args.out = str(Path(tempfile.gettempdir()) / "kernels-quick.md")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    started = datetime.now(UTC)
    machine = describe_machine(str(device), torch.get_num_threads())
    peak_nominal = nominal_peak(machine.get("gpu", ""))
    peak_copy = measured_copy_bandwidth(device) if device.type == "cuda" else None
    peak = peak_nominal or peak_copy or 1e11
    rows = attention_rows(args, device, getattr(torch, args.dtype), peak)
    e2e = {}
    write_markdown(args, machine, peak_nominal, peak_copy, rows, e2e, started)  # kept if part 2 fails
    with tempfile.TemporaryDirectory() as tmp:
        models = {"shipped": Path(DEFAULT_MODEL_DIR)}
        if not args.quick:
            models["random, about 20M parameters"] = random_model_dir(20e6, Path(tmp) / "model-20m")
        fill, work, raw = encoded_lines(models["shipped"], args.e2e_streams, args.window, args.e2e_lines)
        for name, model_dir in models.items():
            e2e[name] = {a: end_to_end(model_dir, str(device), a, args.e2e_streams, args.window, fill, work, raw,
                                       profile=f"{args.profile_dir}/profile-{model_dir.name}-{a}.txt"
                                       if args.profile_dir else None)
                         for a in ("triton", "torch")}
            print(name, json.dumps(e2e[name]), flush=True)
    write_markdown(args, machine, peak_nominal, peak_copy, rows, e2e, started)


if __name__ == "__main__":
    main()
