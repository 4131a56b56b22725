"""The service benchmark's measurements: a throughput run (one or more worker processes in one
consumer group) and a latency run of one worker.

Throughput, one worker: N lines are loaded into a fresh input topic *before* the worker starts; the
worker then works through the backlog. Lines/s come from the Kafka timestamps of the N score records
the worker publishes (its producer stamps each when the worker hands it over, after scoring): overall
= N over first-to-last, sustained = the middle 90 % of records over their time span (leaves out the
first batches and the tail). While it runs, the worker's Prometheus endpoint and /proc are sampled
every 0.5 s (scored-lines counter, CPU time of worker, broker and the whole machine).

Throughput, W > 1 workers (W processes, one consumer group, the input topic's 4 partitions split
between them): the workers start on the fresh, still *empty* topics; the lines are loaded only once
every worker's log shows its own share of the partitions (``Pipeline.group_ready``), so the group's
start-up rebalances (a worker that joins late makes the group revoke and reassign every partition)
all happen before there is anything to score. The backlog then loads in well under a second, far
less than the first 5 % of the score records the sustained rate leaves out; every run records the
share of records published before the load finished (``scored_during_preload``), the rebalances
after the group was ready (from the ``generation`` of the group in the workers' logs) and the lines
scored twice (a rebalance mid-run hands uncommitted lines to another worker; the rates count every
(partition, offset) once, at its first score record). Counters, histograms and CPU time are summed
over the processes; the run ends when the summed scored-lines counter reaches N and stays put for a
few seconds (so a worker that re-scores lines after a rebalance is not cut short).

Latency: a warm worker (its streams past the model's warm-up) gets lines at a fixed rate, one at a
time (linger 0); every ``inject_every``-th line is an obviously anomalous one (random characters).
Ingest time = the input record's Kafka timestamp (CreateTime, stamped by this producer at send);
score time = the score record's Kafka timestamp; alert time = the alert record's Kafka timestamp.
All clocks are this machine's; Kafka timestamps have 1 ms resolution.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from aiokafka import AIOKafkaProducer
from tqdm import tqdm

from service_bench_kafka import (
    SYNCED, Dataset, Pipeline, garbage_line, histogram, histogram_quantile, machine_cpu, merge_metrics, process_cpu_s,
    produce_all, read_topic, sample_value, scrape,
)

from logstream.service.envelope import LogEnvelope


class RunFailed(RuntimeError):
    pass


@dataclass
class Sample:
    t: float  # time.time()
    scored: float
    worker_cpu: float
    broker_cpu: float
    machine_busy: float
    machine_total: float
    worker_cpus: tuple[float, ...] = ()  # each worker process (worker_cpu is their sum)


@dataclass
class ThroughputResult:
    config: str
    dataset: str
    lines: int  # lines scored in the run (fewer than preloaded when the run hit its time cap)
    preloaded: int
    streams: int
    preload_s: float
    startup_s: float  # worker start -> first score record
    overall_lps: float  # N / (last - first score record)
    sustained_lps: float  # middle 90 % of score records
    timeline: list[tuple[float, int]]  # (seconds since first score, score records in that second)
    batches: dict  # from the batch-size histogram
    scoring_s: float  # sum of the worker's per-batch scoring latency (time in the model thread)
    span_s: float  # first -> last score record
    worker_cpu_ms_per_line: float
    worker_cores: float  # worker CPU seconds per wall second while scoring
    broker_cores: float
    machine_busy_cores: float
    others_cores: float  # busy cores not used by the worker, the broker or this benchmark
    bench_cores: float
    cache_streams: float | None
    tokens_per_line: float | None
    alerts: int
    dead_letters: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    profile: dict | None = None  # py-spy samples by category, when profiled
    workers: int = 1  # worker processes in the consumer group (CPU, cores, histograms: summed over them)
    group_ready_s: float | None = None  # workers started -> every worker had its partitions (workers > 1)
    rebalances: int | None = None  # group generations after the group was ready / the first assignment
    startup_rebalances: int | None = None  # generations before the group was ready (a worker that joined late)
    duplicates: int = 0  # score records for a (partition, offset) already scored (counted once in the rates)
    scored_during_preload: float = 0.0  # share of score records published before the backlog was loaded
    per_worker: list[dict] = field(default_factory=list)  # partitions, lines, batches, cores of each process


def _load() -> tuple[float, float, float]:
    return os.getloadavg()


async def _sample(pipeline: Pipeline, broker_pid: int | None) -> Sample:
    metrics = await asyncio.to_thread(pipeline.metrics)
    scored = sample_value(metrics, "logstream_entries_scored", "logstream_entries_scored_total") or 0.0
    busy, total = machine_cpu()
    cpus = tuple(process_cpu_s(pid) for pid in pipeline.pids())
    return Sample(time.time(), scored, sum(cpus), process_cpu_s(broker_pid), busy, total, cpus)


def _check_alive(pipeline: Pipeline, what: str) -> None:
    for i, worker in enumerate(pipeline.workers):
        if not worker.alive:
            which = "worker" if pipeline.processes == 1 else f"worker {i + 1} of {pipeline.processes}"
            raise RunFailed(f"{which} exited ({worker.returncode}) {what}; log:\n{worker.log_tail()}")


async def wait_scored(pipeline: Pipeline, target: float, broker_pid: int | None, timeout_s: float,
                      desc: str, samples: list[Sample] | None = None, on_progress=None,
                      cap_s: float | None = None, settle_s: float = 0.0) -> list[Sample]:
    """Sample every 0.5 s until the worker's scored-lines counter (summed over the workers) reaches
    ``target``, and then, with ``settle_s``, until it has not moved for ``settle_s`` seconds; with
    ``cap_s``, also stop (without error) ``cap_s`` seconds after the first line was scored."""
    samples = [] if samples is None else samples
    deadline = time.monotonic() + timeout_s
    first_scored_at = None
    reached_at = None
    with tqdm(total=int(target), desc=desc, unit="line", leave=False) as bar:
        while True:
            _check_alive(pipeline, f"while {desc}")
            s = await _sample(pipeline, broker_pid)
            samples.append(s)
            bar.update(int(s.scored) - bar.n)
            if on_progress is not None:
                await on_progress(s)
            if s.scored >= target:
                if settle_s <= 0:
                    return samples
                if reached_at is None or s.scored != samples[-2].scored:
                    reached_at = time.monotonic()
                elif time.monotonic() - reached_at >= settle_s:
                    return samples
            if s.scored > 0 and first_scored_at is None:
                first_scored_at = time.monotonic()
            if cap_s is not None and first_scored_at is not None and time.monotonic() - first_scored_at > cap_s:
                return samples
            if time.monotonic() > deadline:
                raise RunFailed(f"timed out after {timeout_s:.0f} s {desc}: {s.scored:.0f} of {target:.0f} "
                                f"scored; worker log:\n{pipeline.log_tail()}")
            await asyncio.sleep(0.5)


def _rates(timestamps_ms: np.ndarray) -> tuple[float, float, float]:
    ts = np.sort(timestamps_ms) / 1000.0
    n = len(ts)
    span = ts[-1] - ts[0]
    overall = (n - 1) / span if span > 0 else float("nan")
    lo, hi = int(0.05 * (n - 1)), int(0.95 * (n - 1))
    middle = ts[hi] - ts[lo]
    sustained = (hi - lo) / middle if middle > 0 else float("nan")
    return overall, sustained, span


def _timeline(timestamps_ms: np.ndarray) -> list[tuple[float, int]]:
    ts = np.sort(timestamps_ms) / 1000.0
    seconds = np.floor(ts - ts[0]).astype(int)
    counts = np.bincount(seconds)
    return [(float(i), int(c)) for i, c in enumerate(counts)]


def _batches(metrics: dict | None) -> dict:
    h = histogram(metrics, "logstream_batch_size_entries")
    count = h["count"]
    return {"count": int(count), "mean": h["sum"] / count if count else float("nan"),
            "p50_le": histogram_quantile(h, 0.5), "p90_le": histogram_quantile(h, 0.9),
            "buckets": h["buckets"]}


def _cpu_between(samples: list[Sample], first_scored: float = 0.0) -> dict:
    """CPU use from the first sample that saw a score to the first sample that saw the final count."""
    start = next((s for s in samples if s.scored > first_scored), samples[0])
    end = next(s for s in samples if s.scored >= samples[-1].scored)
    if end.t <= start.t:
        end = samples[-1]
    wall = max(end.t - start.t, 1e-9)
    lines = max(end.scored - start.scored, 1.0)
    worker = end.worker_cpu - start.worker_cpu
    broker = end.broker_cpu - start.broker_cpu
    busy = end.machine_busy - start.machine_busy
    total_wall = (end.machine_total - start.machine_total) / (os.cpu_count() or 1)
    each = [(b - a) / wall for a, b in zip(start.worker_cpus, end.worker_cpus)]
    return {"worker_cpu_ms_per_line": 1000 * worker / lines, "worker_cores": worker / wall,
            "broker_cores": broker / wall, "machine_busy_cores": busy / max(total_wall, 1e-9),
            "wall": wall, "busy": busy, "worker_cores_each": each}


def _unique_scores(records: list) -> tuple[np.ndarray, int]:
    """Kafka timestamps of the first score record of every (partition, offset) of the input topic,
    and how many records repeated one (a line scored again after a rebalance)."""
    first: dict[tuple[int, int], int] = {}
    duplicates = 0
    for r in records:
        try:
            record = json.loads(r.value)
            key = (record["partition"], record["offset"])
        except (ValueError, KeyError, TypeError):
            key = ("?", id(r))  # not matched: counted as its own line
        if key in first:
            duplicates += 1
            first[key] = min(first[key], r.timestamp)
        else:
            first[key] = r.timestamp
    return np.array(sorted(first.values()), dtype=np.float64), duplicates


class PySpy:
    """py-spy record on the worker (all Python threads, on-CPU samples only), raw collapsed stacks."""

    def __init__(self, binary: str, pid: int, out: Path, duration_s: int, rate: int = 100):
        self.out = out
        self.command = [binary, "record", "--pid", str(pid), "--rate", str(rate), "--duration", str(duration_s),
                        "--format", "raw", "--threads", "--nonblocking", "--output", str(out)]
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def wait(self, timeout_s: float = 60.0) -> Path | None:
        if self.process is None:
            return None
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait()
        if self.process.returncode != 0:
            err = self.process.stderr.read().decode(errors="replace")[-1000:] if self.process.stderr else ""
            print(f"py-spy failed ({self.process.returncode}): {err}")
        return self.out if self.out.exists() else None


def find_py_spy(explicit: str | None) -> str | None:
    return explicit or shutil.which("py-spy")


async def wait_group_ready(pipeline: Pipeline, timeout_s: float, hold_s: float = 1.0) -> float:
    """Wait until every worker of the pipeline holds its own share of the input partitions (and
    still does ``hold_s`` later); returns the time it was first seen (time.time())."""
    deadline = time.monotonic() + timeout_s
    ready_since = None
    while True:
        _check_alive(pipeline, "while joining the consumer group")
        if pipeline.group_ready():
            ready_since = ready_since or time.time()
            if time.time() - ready_since >= hold_s:
                return ready_since
        else:
            ready_since = None
        if time.monotonic() > deadline:
            raise RunFailed(f"the {pipeline.processes} workers did not share the partitions within {timeout_s:.0f} s "
                            f"(assignments {pipeline.assignments()}); logs:\n{pipeline.log_tail()}")
        await asyncio.sleep(0.5)


async def throughput_run(pipeline: Pipeline, dataset: Dataset, broker_pid: int | None, *,
                         timeout_s: float, keep_worker: bool = False, py_spy: str | None = None,
                         profile_s: int = 0, cap_s: float | None = None) -> ThroughputResult:
    """Time the scoring of ``dataset`` as a backlog in a fresh input topic (all of it, or what was
    scored in the ``cap_s`` seconds after the first score). One worker: the lines are loaded, then
    the worker starts. Several (``pipeline.config.workers``): they start first, and the lines are
    loaded once the consumer group has settled (see the module's docstring)."""
    n = len(dataset.messages)
    multi = pipeline.processes > 1
    load_before = _load()
    await pipeline.create_topics()
    started = group_ready = preload_end = None
    generation_ready = None

    async def preload() -> float:
        with tqdm(total=n, desc=f"preload {dataset.name}", unit="line", leave=False) as bar:
            return await produce_all(pipeline.bootstrap, pipeline.kafka.input_topic, dataset.messages, bar)

    spy: PySpy | None = None
    try:
        if multi:
            started = time.time()
            pipeline.start_worker()
            group_ready = await wait_group_ready(pipeline, timeout_s=min(timeout_s, 300.0))
            generation_ready = pipeline.group_generation()
            preload_s = await preload()
            preload_end = time.time()
        else:
            preload_s = await preload()
            started = time.time()
            pipeline.start_worker()
        bench_cpu0 = time.process_time()

        async def maybe_profile(s: Sample) -> None:
            nonlocal spy
            if py_spy and profile_s and spy is None and s.scored >= 0.05 * n:
                spy = PySpy(py_spy, pipeline.worker.process.pid, pipeline.workdir / f"pyspy-{pipeline.tag}.txt",
                            profile_s)
                spy.start()

        samples = await wait_scored(pipeline, n, broker_pid, timeout_s, f"scoring {dataset.name} ({pipeline.config.label})",
                                    on_progress=maybe_profile, cap_s=cap_s, settle_s=3.0 if multi else 0.0)
        profile = None
        if spy is not None:
            from service_bench_profile import categorize_py_spy
            path = spy.wait(profile_s + 30)
            profile = categorize_py_spy(path) if path else None
        bench_cpu = time.process_time() - bench_cpu0
        each = await asyncio.to_thread(pipeline.metrics_each)
        if any(m is None for m in each):  # a scrape that timed out on a busy machine: once more
            await asyncio.sleep(0.5)
            each = [m if m is not None else await asyncio.to_thread(scrape, port)
                    for m, port in zip(each, pipeline.metrics_ports)]
        metrics = merge_metrics(each)
        assignments = pipeline.assignments()
        generation_end = pipeline.group_generation()
        complete = samples[-1].scored >= n
        if not keep_worker:  # stopped first, so that the topics hold all it will ever publish
            pipeline.stop_worker()
        records = await read_topic(pipeline.bootstrap, pipeline.kafka.scores_topic,
                                   expect=n if complete and not multi else None, timeout_s=120)
        alerts = await read_topic(pipeline.bootstrap, pipeline.kafka.alerts_topic, timeout_s=30)
    finally:
        if not keep_worker:
            pipeline.stop_worker()
    load_after = _load()
    timestamps, duplicates = _unique_scores(records)
    if not len(timestamps):
        raise RunFailed(f"no score records in {pipeline.kafka.scores_topic}; log:\n{pipeline.log_tail()}")
    overall, sustained, span = _rates(timestamps)
    cpu = _cpu_between(samples)
    tokens = sample_value(metrics, "logstream_tokens_scored", "logstream_tokens_scored_total")
    scored = sample_value(metrics, "logstream_entries_scored", "logstream_entries_scored_total") or 0
    scoring = histogram(metrics, "logstream_scoring_latency_seconds")
    bench_cores = bench_cpu / max(time.time() - started, 1e-9)
    others = cpu["machine_busy_cores"] - cpu["worker_cores"] - cpu["broker_cores"] - bench_cores
    per_worker = []
    for i, m in enumerate(each):
        h = histogram(m, "logstream_batch_size_entries")
        per_worker.append({
            "partitions": assignments[i] if i < len(assignments) else None,
            "lines": sample_value(m, "logstream_entries_scored", "logstream_entries_scored_total"),
            "batches": int(h["count"]), "scoring_s": histogram(m, "logstream_scoring_latency_seconds")["sum"],
            "cores": cpu["worker_cores_each"][i] if i < len(cpu["worker_cores_each"]) else None,
        })
    generations = [int(g) for text in pipeline.log_texts() for g in SYNCED.findall(text)]
    first_generation = min(generations) if generations else None
    startup_rebalances = None
    if multi:
        rebalances = None if generation_end is None or generation_ready is None else generation_end - generation_ready
        if generation_ready is not None and first_generation is not None:
            startup_rebalances = generation_ready - first_generation
    else:
        rebalances = None if generation_end is None else generation_end - first_generation
    return ThroughputResult(
        config=pipeline.config.label, dataset=dataset.name, lines=len(timestamps), preloaded=n, streams=dataset.streams,
        preload_s=preload_s, startup_s=timestamps.min() / 1000.0 - started,
        overall_lps=overall, sustained_lps=sustained, timeline=_timeline(timestamps),
        batches=_batches(metrics), scoring_s=scoring["sum"], span_s=span,
        worker_cpu_ms_per_line=cpu["worker_cpu_ms_per_line"], worker_cores=cpu["worker_cores"],
        broker_cores=cpu["broker_cores"], machine_busy_cores=cpu["machine_busy_cores"],
        others_cores=max(0.0, others), bench_cores=bench_cores,
        cache_streams=sample_value(metrics, "logstream_cache_streams"),
        tokens_per_line=(tokens / scored) if tokens and scored else None,
        alerts=len(alerts), dead_letters=sum(value for name, _, value in (metrics or {}).get("logstream_dead_letters", [])
                                              if name.endswith("_total")),
        load_before=load_before, load_after=load_after, profile=profile,
        workers=pipeline.processes, group_ready_s=(group_ready - started) if group_ready else None,
        rebalances=rebalances, startup_rebalances=startup_rebalances, duplicates=duplicates,
        scored_during_preload=float(np.mean(timestamps < preload_end * 1000.0)) if preload_end else 0.0,
        per_worker=per_worker,
    )


# --- latency ---------------------------------------------------------------------------------------

@dataclass
class LatencyResult:
    rate: float  # requested lines/s
    seconds: float
    sent: int
    achieved_rate: float  # what the producer managed
    injected: int
    injected_alerted: int
    other_alerts: int  # alerts for lines that were not injected (the model's own finds)
    score_ms: list[float] = field(repr=False)  # ingest -> score record, every line of the phase
    alert_ms: list[float] = field(repr=False)  # ingest -> alert record, injected lines
    score_ms_series: list[tuple[float, float]] = field(repr=False)  # (seconds into the phase, latency)
    worker_cores: float = 0.0
    machine_busy_cores: float = 0.0
    batches_mean: float = float("nan")
    batches: int = 0
    scoring_ms_per_batch: float = float("nan")  # the worker's own per-batch scoring time (model thread)
    cycle_ms: float = float("nan")  # wall time of the phase / batches
    load_before: tuple[float, float, float] = (0, 0, 0)
    load_after: tuple[float, float, float] = (0, 0, 0)
    drained_s: float = 0.0  # from the last send to the last score

    def pct(self, values: list[float], q: float) -> float:
        return float(np.percentile(values, q)) if values else float("nan")


async def latency_run(pipeline: Pipeline, entries, rate: float, seconds: float, broker_pid: int | None, *,
                      inject_every: int, seed: int, drain_timeout_s: float) -> LatencyResult:
    """Produce ``rate`` lines/s for ``seconds`` into a warm worker's input topic, then match every
    line to its score record (and the injected ones to their alerts) by (partition, offset)."""
    rng = random.Random(seed)
    kafka = pipeline.kafka
    load_before = _load()
    metrics_before = await asyncio.to_thread(pipeline.metrics)
    batches_before = histogram(metrics_before, "logstream_batch_size_entries")
    scoring_before = histogram(metrics_before, "logstream_scoring_latency_seconds")
    s0 = await _sample(pipeline, broker_pid)
    producer = AIOKafkaProducer(bootstrap_servers=pipeline.bootstrap, acks="all", linger_ms=0,
                                client_id="bench-latency")
    await producer.start()
    n = int(rate * seconds)
    sent: list[tuple[asyncio.Future, bool]] = []
    loop = asyncio.get_running_loop()
    try:
        t0 = loop.time()
        with tqdm(total=n, desc=f"latency @ {rate:g} lines/s", unit="line", leave=False) as bar:
            for i in range(n):
                delay = t0 + i / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                entry = next(entries)
                injected = (i % inject_every) == inject_every // 2
                line = garbage_line(rng) if injected else entry.line
                envelope = LogEnvelope(line=line, source=entry.service, stream=entry.stream, timestamp=entry.timestamp)
                future = await producer.send(kafka.input_topic, value=envelope.to_bytes(), key=entry.stream.encode())
                sent.append((future, injected))
                if i % 50 == 0:
                    bar.update(i - bar.n)
            send_span = loop.time() - t0
        metas = [(await f, injected) for f, injected in sent]
    finally:
        await producer.stop()
    samples = await wait_scored(pipeline, s0.scored + n, broker_pid, drain_timeout_s,
                                f"draining {rate:g} lines/s phase")
    s1 = samples[-1]
    metrics_after = await asyncio.to_thread(pipeline.metrics)
    batches_after = histogram(metrics_after, "logstream_batch_size_entries")
    scoring_after = histogram(metrics_after, "logstream_scoring_latency_seconds")
    load_after = _load()

    wanted = {(m.partition, m.offset): (m.timestamp, injected) for m, injected in metas}
    scores = await read_topic(pipeline.bootstrap, kafka.scores_topic, timeout_s=180)
    alerts = await read_topic(pipeline.bootstrap, kafka.alerts_topic, timeout_s=60)
    t_first = min(ts for ts, _ in wanted.values())
    score_ms, series = [], []
    for r in scores:
        record = json.loads(r.value)
        key = (record["partition"], record["offset"])
        if key in wanted:
            ingest = wanted[key][0]
            score_ms.append(r.timestamp - ingest)
            series.append(((ingest - t_first) / 1000.0, r.timestamp - ingest))
    alert_ms, alerted, other = [], set(), 0
    for r in alerts:
        record = json.loads(r.value)
        key = (record.get("partition"), record.get("offset"))
        if key not in wanted or key in alerted:
            continue
        alerted.add(key)
        if wanted[key][1]:
            alert_ms.append(r.timestamp - wanted[key][0])
        else:
            other += 1
    if len(score_ms) != n:
        raise RunFailed(f"matched {len(score_ms)} score records to the {n} lines sent")
    d_batches = batches_after["count"] - batches_before["count"]
    wall = max(s1.t - s0.t, 1e-9)
    last_score = t_first + max(at_s * 1000.0 + ms for at_s, ms in series)
    drained_s = (last_score - max(ts for ts, _ in wanted.values())) / 1000.0
    return LatencyResult(
        rate=rate, seconds=seconds, sent=n, achieved_rate=(n - 1) / send_span if send_span > 0 else float("nan"),
        injected=sum(injected for _, injected in metas), injected_alerted=len(alert_ms), other_alerts=other,
        score_ms=score_ms, alert_ms=alert_ms, score_ms_series=sorted(series),
        worker_cores=(s1.worker_cpu - s0.worker_cpu) / wall,
        machine_busy_cores=(s1.machine_busy - s0.machine_busy) / max((s1.machine_total - s0.machine_total)
                                                                     / (os.cpu_count() or 1), 1e-9),
        batches_mean=(batches_after["sum"] - batches_before["sum"]) / d_batches if d_batches else float("nan"),
        batches=int(d_batches),
        scoring_ms_per_batch=1000 * (scoring_after["sum"] - scoring_before["sum"]) / d_batches if d_batches else float("nan"),
        cycle_ms=(last_score - t_first) / d_batches if d_batches else float("nan"),
        load_before=load_before, load_after=load_after, drained_s=drained_s,
    )
