"""Where a worker's time goes: py-spy samples of the real worker, and an in-process stage breakdown.

* ``categorize_py_spy``: reads ``py-spy record --format raw --threads`` output (on-CPU samples of
  every Python thread of the worker) and files each sample under the innermost frame that names a
  stage (tokenization, engine forward, Kafka, JSON...). Native threads without Python frames (torch's
  OpenMP pool with threads > 1) are not seen; with one torch thread all model work is on the model
  thread.
* ``stage_breakdown``: the model thread's work, in this process, on the same lines and batch size:
  every stage wrapped in a timer (the library is not changed: the wrappers are set on the objects of
  this process only), per line, for a few values of ``cache.window_tokens``.
"""

from __future__ import annotations

import collections
import functools
import time
from pathlib import Path

# (substring of a frame, category); a sample goes to the innermost frame that matches a rule
RULES: list[tuple[str, str]] = [
    ("aiokafka/", "Kafka client (aiokafka)"),
    ("faust/", "Faust (streams, acks, topics)"),
    ("mode/", "Faust (streams, acks, topics)"),
    ("prometheus_client", "metrics endpoint"),
    ("explain.py", "alert explanation"),
    ("difflib", "alert explanation"),
    ("masking.py", "tokenize: masking (regex)"),
    ("tokenization_utils", "tokenize: tokenizer"),
    ("tokenizers", "tokenize: tokenizer"),
    ("attention.py", "forward: attention (sink + ring + new)"),
    ("llama.py", "forward: projections, MLP, norms"),
    ("pool.py", "forward: slot pool"),
    ("engine.py", "forward: logits, softmax, entropy, batching"),
    ("aggregate.py", "scorer: aggregates"),
    ("scorer.py", "scorer: batching, LineScore"),
    ("records.py", "JSON: score records"),
    ("record (", "JSON: score records"),
    ("envelope.py", "JSON: envelope decode"),
    ("model_worker.py", "model thread: Scored, metrics"),
    ("worker.py", "worker batch loop"),
    ("asyncio/", "event loop (asyncio)"),
    ("selectors.py", "event loop (asyncio)"),
    ("threading.py", "threads (idle plumbing)"),
    ("concurrent/futures", "threads (idle plumbing)"),
]


def categorize_frame_stack(frames: list[str]) -> str:
    for frame in reversed(frames):
        for needle, category in RULES:
            if needle in frame:
                return category
    return "other"


def thread_kind(name: str, stack: str) -> str:
    if name.startswith("logstream-model"):
        return "model thread"
    if name == "MainThread":
        return "event loop (main thread)"
    if "mode/threads.py" in stack:
        return "Faust's consumer thread"
    if "serve_forever" in name or "process_request" in name:
        return "metrics endpoint (this benchmark's scrapes)"
    return "other threads"


def categorize_py_spy(path: Path | None) -> dict | None:
    """{"total": samples, "threads": {kind: samples}, "categories": {(kind, category): samples}}."""
    if path is None or not Path(path).exists():
        return None
    threads: collections.Counter = collections.Counter()
    categories: collections.Counter = collections.Counter()
    total = 0
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        name = frames[0].split(": ", 1)[1] if frames[0].startswith("thread (") and ": " in frames[0] else "?"
        kind = thread_kind(name, stack)
        threads[kind] += n
        categories[(kind, categorize_frame_stack(frames[1:]))] += n
        total += n
    return {"total": total, "threads": dict(threads),
            "categories": {f"{k}|{c}": v for (k, c), v in categories.most_common()}}


# --- in-process stage breakdown ----------------------------------------------------------------------

class Timers:
    def __init__(self):
        self.seconds: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()

    def wrap(self, name: str, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1
        return timed


def stage_breakdown(messages: list[tuple[bytes, bytes]], batch_size: int, threads: int, window: int,
                    warm_batches: int = 2, dataset: str = "") -> dict:
    """Score ``messages`` in batches as the worker's model thread does, timing every stage.

    Returns seconds per stage over the timed batches (all but the first ``warm_batches``), the line
    count, forward passes and the wall time of the whole loop without wrappers' own cost removed
    (they add a few microseconds per line).
    """
    import torch

    import logstream.cache.attention as attention_mod
    from logstream.cache.paged_attention import PagedAttention
    import logstream.scoring.scorer as scorer_mod
    from logstream.config import Settings
    from logstream.service.envelope import decode_entry
    from logstream.service.records import ScoreRecord

    torch.set_num_threads(threads)
    settings = Settings()
    cache = settings.cache.model_copy(update={"window_tokens": window})
    scorer = scorer_mod.load_scorer(settings.model.path, device="cpu", engine_config=cache.engine_config())
    t = Timers()
    # wrappers on this process's objects only
    scorer.masker = _CallableWrapper(scorer.masker, t.wrap("mask", scorer.masker.__call__))
    tokenizer = scorer.tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)  # the scorer tokenizes a batch through it
    scorer.tokenizer = _CallableWrapper(tokenizer, t.wrap("tokenizer", tokenizer.__call__), backend_tokenizer=None
                                        if backend is None else _CallableWrapper(
                                            backend, encode_batch=t.wrap("tokenizer", backend.encode_batch)))
    engine = scorer.engine
    engine.score = t.wrap("engine", engine.score)
    timed_forward = t.wrap("forward", engine._forward)
    passes: list[tuple[int, int, int]] = []  # (rows, padded width T, real tokens) of every forward pass

    def forward(chunks, *rest):
        lengths = [len(c.tokens) for c in chunks]
        passes.append((len(lengths), max(lengths), sum(lengths)))
        return timed_forward(chunks, *rest)

    engine._forward = forward
    model = engine.model
    model.hidden_states = t.wrap("layers", model.hidden_states)
    # the attention backend of the engine's layout (slots: StreamingAttention, paged: PagedAttention)
    backend_class = PagedAttention if engine.paged else attention_mod.StreamingAttention
    original_call, original_init = backend_class.__call__, backend_class.__init__
    original_aggregates = scorer_mod.lines_aggregates
    backend_class.__call__ = t.wrap("attention", original_call)
    backend_class.__init__ = t.wrap("attention masks", original_init)
    scorer_mod.lines_aggregates = t.wrap("aggregates", original_aggregates)  # the scorer's one call a batch
    version = scorer.model_version
    from datetime import UTC, datetime

    from logstream.scoring.explain import Explainer
    explainer = Explainer(scorer)
    anomalies = 0
    try:
        batches = [messages[i:i + batch_size] for i in range(0, len(messages), batch_size)]
        lines = 0
        loop_started = None
        for b, batch in enumerate(batches):
            if b == warm_batches:
                t.seconds.clear()
                t.calls.clear()
                passes.clear()
                loop_started = time.perf_counter()
                cpu_started = time.process_time()
                lines = 0
            started = time.perf_counter()
            decoded = [decode_entry(value, key) for key, value in batch]
            t.seconds["decode envelope"] += time.perf_counter() - started
            started = time.perf_counter()
            results = scorer.score([(stream, envelope.line) for stream, envelope in decoded])
            t.seconds["scorer.score"] += time.perf_counter() - started
            started = time.perf_counter()
            now = datetime.now(UTC)
            for (stream, _), r in zip(decoded, results):
                ScoreRecord(stream=stream, topic="t", partition=0, offset=0, score=r.score, threshold=r.threshold,
                            anomaly=r.is_anomaly, warm=r.warm, tokens=len(r.token_ids), model_version=version,
                            time=now).to_bytes()
            t.seconds["score records (JSON)"] += time.perf_counter() - started
            started = time.perf_counter()
            for r in results:
                if r.is_anomaly:  # what ModelWorker._alert does for every anomaly, before grouping
                    explainer.explain(r)
                    anomalies += b >= warm_batches
            t.seconds["alert explanation"] += time.perf_counter() - started
            lines += len(batch)
        wall = time.perf_counter() - loop_started if loop_started else float("nan")
        cpu = time.process_time() - cpu_started if loop_started else float("nan")
    finally:
        backend_class.__call__, backend_class.__init__ = original_call, original_init
        scorer_mod.lines_aggregates = original_aggregates
    s = t.seconds
    aggregates = s["aggregates"]
    stages = {
        "decode envelope (JSON)": s["decode envelope"],
        "tokenize: masking (regex)": s["mask"],
        "tokenize: tokenizer": s["tokenizer"],
        "forward: attention (sink + ring + new)": s["attention"],
        "forward: attention masks / RoPE tables": s["attention masks"],
        "forward: projections, MLP, norms": s["layers"] - s["attention"],
        "forward: logits, softmax, entropy, batch setup": s["forward"] - s["layers"] - s["attention masks"],
        "forward: split into passes, join": s["engine"] - s["forward"],
        "scorer: aggregates": aggregates,
        "score records (JSON)": s["score records (JSON)"],
        "alert explanation (anomalies only)": s["alert explanation"],
    }
    accounted_in_scorer = s["mask"] + s["tokenizer"] + s["engine"] + aggregates
    stages["scorer: batching, LineScore"] = max(0.0, s["scorer.score"] - accounted_in_scorer)
    a = model.args
    keys = lambda T: len(scorer.sink_tokens) + window + T  # noqa: E731 (keys every query is scored against)
    attention_flops = sum(rows * T * a.n_layers * a.n_heads * keys(T) * a.head_dim * 4 for rows, T, _ in passes)
    return {"dataset": dataset, "sink_tokens": len(scorer.sink_tokens),
            "real_tokens": sum(real for _, _, real in passes), "padded_tokens": sum(r * T for r, T, _ in passes),
            "attention_flops": attention_flops, "anomalies": anomalies, "window": window, "threads": threads, "batch_size": batch_size, "lines": lines, "wall_s": wall, "cpu_s": cpu,
            "forward_passes": t.calls["forward"], "batches": max(0, len(batches) - warm_batches),
            "stages": stages}


class _CallableWrapper:
    """Stands in for an object whose __call__ (and any attribute given) we time, passing every other
    attribute through."""

    def __init__(self, inner, call=None, **attributes):
        self._inner, self._call = inner, call
        self.__dict__.update(attributes)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def attention_kernels(window: int, sink: int, rows: int = 16, width: int = 32, heads: int = 2, head_dim: int = 64,
                      repeats: int = 20) -> dict:
    """One layer's attention for a typical pass shape, one torch thread, CPU time: the engine's way
    (three key blocks, matmul + exp + matmul, online-softmax merge) against a fused
    ``scaled_dot_product_attention`` over the concatenated keys, and a plain matmul's GFLOP/s."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    B, T, L, S, hd = rows, width, window, sink, head_dim
    q = torch.randn(B, 1, heads * T, hd)
    blocks = [(torch.randn(1, 1, S, hd), torch.randn(1, 1, S, hd)), (torch.randn(B, 1, L, hd), torch.randn(B, 1, L, hd)),
              (torch.randn(B, 1, T, hd), torch.randn(B, 1, T, hd))]

    def engine_way():
        maxima, sums, outs = [], [], []
        for keys, values in blocks:
            s = torch.matmul(q, keys.transpose(-1, -2))
            m = s.amax(-1, keepdim=True)
            e = s.sub_(m).exp_()
            maxima.append(m)
            sums.append(e.sum(-1, keepdim=True))
            outs.append(torch.matmul(e, values))
        top = torch.maximum(torch.maximum(maxima[0], maxima[1]), maxima[2])
        w = [torch.exp(m - top) for m in maxima]
        return sum(o * x for o, x in zip(outs, w)) / sum(z * x for z, x in zip(sums, w))

    def fused():
        keys = torch.cat([k.expand(B, -1, -1, -1) for k, _ in blocks], dim=2)
        values = torch.cat([v.expand(B, -1, -1, -1) for _, v in blocks], dim=2)
        return F.scaled_dot_product_attention(q, keys, values)

    a, b = torch.randn(B, heads * T, hd), torch.randn(B, hd, L + S)

    def matmul():
        return torch.bmm(a, b)

    out = {"rows": B, "width": T, "window": L, "sink": S}
    for name, fn in (("engine_ms", engine_way), ("sdpa_ms", fused), ("matmul_ms", matmul)):
        fn()
        started = time.process_time()
        for _ in range(repeats):
            fn()
        out[name] = 1000 * (time.process_time() - started) / repeats
    out["flops"] = B * heads * T * (L + S + T) * hd * 4
    out["matmul_gflops"] = B * heads * T * (L + S) * hd * 2 / (out["matmul_ms"] / 1000) / 1e9
    out["engine_gflops"] = out["flops"] / (out["engine_ms"] / 1000) / 1e9
    return out
