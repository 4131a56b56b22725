"""One benchmarked method over the stream, measured line by line (runs in its own process).

A fresh process per method makes its peak RSS its own. Each line is one ``score`` call, timed
with ``perf_counter`` (``score`` returns CPU tensors, so GPU work is finished when it returns).
"""

from __future__ import annotations

import resource
import time
from dataclasses import asdict, dataclass, field

import torch
from tqdm.auto import tqdm

from logstream.cache import Chunk, EngineConfig, StreamingEngine
from logstream.cache.baselines import (
    CacheBudgetExceeded, DenseCacheScorer, RecomputeWindowScorer, SlidingWindowScorer,
)

STREAM = "loghub"
WARMUP_LINES = 3  # scored on a throwaway stream first: one-time allocations and kernel choices


@dataclass(frozen=True)
class MethodSpec:
    kind: str  # dense | sliding | recompute | engine
    window: int | None = None
    dense_budget_bytes: int | None = None
    sampled_lines: tuple[int, ...] | None = None  # recompute: score only these, advance past the rest

    @property
    def label(self) -> str:
        names = {"dense": "dense cache", "sliding": "sliding window (no sinks)",
                 "recompute": "sliding window + re-computation", "engine": "engine (S = 4)"}
        return names[self.kind] + (f", L = {self.window}" if self.window else "")


@dataclass
class MethodRun:
    """Per scored line: index, tokens, stream position before it, time, cache bytes and RSS after it."""

    spec: dict
    line: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    position: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    cache_bytes: list[int] = field(default_factory=list)
    rss_bytes: list[int] = field(default_factory=list)
    logprob_sum: list[float] = field(default_factory=list)
    stopped: dict | None = None  # the dense cache's budget stop: line, position, message
    rss_before_bytes: int = 0  # resident memory after loading, before the first line
    peak_rss_bytes: int = 0  # the process's high-water mark (includes loading)
    cuda_peak_bytes: int | None = None
    dtype: str = ""
    wall_s: float = 0.0


class EngineUnderTest:
    """The engine with one slot, behind the baselines' ``score`` / ``nbytes`` / ``drop``."""

    def __init__(self, model, sink, window: int):
        self.engine = StreamingEngine(model, sink, EngineConfig(window=window, slots=1))

    def score(self, chunks):
        return self.engine.score(chunks)

    def drop(self, stream_id: str) -> bool:
        return self.engine.drop(stream_id)

    def nbytes(self) -> int:
        return self.engine.pool.nbytes() + self.engine.sink.nbytes()


def make_scorer(spec: MethodSpec, model, sink: list[int]):
    if spec.kind == "dense":
        return DenseCacheScorer(model, sink, budget_bytes=spec.dense_budget_bytes)
    if spec.kind == "sliding":
        return SlidingWindowScorer(model, sink, spec.window)
    if spec.kind == "recompute":
        return RecomputeWindowScorer(model, sink, spec.window, with_sink=False)
    if spec.kind == "engine":
        return EngineUnderTest(model, sink, spec.window)
    raise ValueError(f"unknown method {spec.kind!r}")


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def run_method(spec: MethodSpec, model, sink: list[int], lines: list[list[int]],
               device: torch.device) -> MethodRun:
    scorer = make_scorer(spec, model, sink)
    for tokens in lines[:WARMUP_LINES]:
        scorer.score([Chunk("warmup", tokens)])
    scorer.drop("warmup")

    run = MethodRun(spec=asdict(spec), dtype=str(model.embed_tokens.weight.dtype).removeprefix("torch."))
    sampled = set(spec.sampled_lines) if spec.sampled_lines is not None else None
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    run.rss_before_bytes = resident_bytes()
    began, position = time.perf_counter(), 0
    for index, tokens in enumerate(tqdm(lines, desc=spec.label, unit="line", mininterval=2.0)):
        if sampled is not None and index not in sampled:
            scorer.advance_unscored([Chunk(STREAM, tokens)])
        else:
            try:
                t0 = time.perf_counter()
                scores = scorer.score([Chunk(STREAM, tokens)])[0]
                elapsed = time.perf_counter() - t0
            except CacheBudgetExceeded as exc:
                run.stopped = {"line": index, "position": position, "message": str(exc)}
                break
            run.line.append(index)
            run.tokens.append(len(tokens))
            run.position.append(position)
            run.ms.append(elapsed * 1000.0)
            run.cache_bytes.append(scorer.nbytes())
            run.rss_bytes.append(resident_bytes())
            run.logprob_sum.append(float(scores.logprobs.double().sum()))
        position += len(tokens)
    run.wall_s = time.perf_counter() - began
    run.peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    if device.type == "cuda":
        run.cuda_peak_bytes = torch.cuda.max_memory_allocated(device)
    return run
