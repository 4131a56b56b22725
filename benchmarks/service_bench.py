"""End-to-end benchmark of the service: one ``logstream worker`` against a real broker, default model.

    python benchmarks/service_bench.py                 # full run -> benchmarks/results/service.md (~45 min)
    python benchmarks/service_bench.py --quick         # a few minutes, -> /tmp/logstream-service-bench/

What runs: an ``EmbeddedBroker`` (Tansu, a real Kafka-compatible broker process), topics with 4
partitions, and workers started exactly as the service tests start one (``python -m logstream.cli
worker`` as a child process, configured by ``LOGSTREAM_...`` variables), with the default model
(``logstream/assets/default-model``), the scores topic enabled and metrics on a free port. Unless
``--workers`` says otherwise that is ONE worker; ``--workers 1,2`` also measures 2 worker processes
in one consumer group (Kafka's way to scale: the 4 input partitions are split between them), each
with its own metrics port and Faust data directory, the same environment otherwise.

1. Throughput, for every ``--workers`` x ``--threads`` x ``--batch-sizes`` combination
   (worker processes, ``LOGSTREAM_MODEL__THREADS``, ``LOGSTREAM_WORKER__BATCH_SIZE``), each with
   fresh workers on fresh topics: one worker: ``--lines`` synthetic lines are loaded first, then the
   worker starts and works through the backlog; several: they start first, the lines are loaded
   once every worker holds its share of the partitions (no start-up rebalance while scoring). Lines/s
   come from the Kafka timestamps of the score records (see ``service_bench_runs``); CPU time,
   histograms and counters are summed over the worker processes. ``--repeats`` runs the
   combinations again in reverse order, so slow drifts of the machine's other load hit every one
   alike; a run ends ``--max-run-seconds`` after its first score even with lines left.
2. The same with the Loghub 2k samples (16 files, one stream each), with the fastest combination
   (workers included; the target check uses it).
3. A profiled run (py-spy on the worker, if installed: ``pip install py-spy``); one worker.
4. Latency: a warm worker (one) with the chosen pair (the best of one worker) gets lines at each ``--rates`` (lines/s) for
   ``--latency-seconds``, one obviously anomalous line every ``--inject-every``; ingest-to-score
   and ingest-to-alert latency from Kafka timestamps. Then the same below capacity with the worker's
   consumer fetch wait patched to ``--fetchwait-ms`` (``service_bench_fetchwait.py``; Faust fixes it).
5. In this process, without Kafka: the model thread's work split into stages (tokenization,
   forward pass, aggregates, JSON), for the default window and for ``--whatif-windows``.

The machine is described (CPU, cores, torch, load average before and after) in the results, with
the CPU time the worker, the broker and everything else on the machine used during each run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from service_bench_kafka import (  # noqa: E402
    REPO, Dataset, Pipeline, WorkerConfig, envelope_message, kafka_floor, loghub_dataset, synthetic_dataset,
    synthetic_services,
)
from service_bench_report import write_report  # noqa: E402
from service_bench_runs import find_py_spy, latency_run, throughput_run, wait_scored  # noqa: E402

from logstream.config import DEFAULT_MODEL_DIR, Settings  # noqa: E402
from logstream.service.broker import EmbeddedBroker  # noqa: E402
from logstream.synth import SyntheticLogs  # noqa: E402

QUICK_OUT = Path(tempfile.gettempdir()) / "logstream-service-bench"
TARGET_LPS = 300.0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=20_000, help="lines per throughput run")
    p.add_argument("--loghub-lines", type=int, default=None, help="lines of the Loghub run (default: --lines)")
    p.add_argument("--streams-per-service", type=int, default=12,
                   help="synthetic instances of each of the 4 services (each one stream)")
    p.add_argument("--threads", default="1,2,2p",
                   help="LOGSTREAM_MODEL__THREADS values ('default': unset; a trailing p also sets "
                        "OMP_WAIT_POLICY=PASSIVE for the worker: OpenMP threads sleep instead of spinning while they wait)")
    p.add_argument("--batch-sizes", default="64,256", help="LOGSTREAM_WORKER__BATCH_SIZE values")
    p.add_argument("--workers", default="1",
                   help="worker process counts for the throughput table, e.g. 1,2: N processes of `logstream "
                        "worker` in one consumer group (the input topic has 4 partitions), each with its own "
                        "metrics port and data dir; the latency, profile and stage runs use one worker")
    p.add_argument("--max-run-seconds", type=float, default=120.0,
                   help="a throughput run ends this long after its first score, even with lines left (slow pairs)")
    p.add_argument("--repeats", type=int, default=2, help="rounds of the throughput table (alternating order)")
    p.add_argument("--rates", default="50,100,250", help="latency phases, lines/s")
    p.add_argument("--latency-seconds", type=float, default=30.0, help="length of each latency phase")
    p.add_argument("--inject-every", type=int, default=50, help="one anomalous line in this many (latency)")
    p.add_argument("--warm-lines", type=int, default=3000, help="lines the latency worker scores first")
    p.add_argument("--latency-config", default=None,
                   help="THREADS,BATCH for the one-worker profile and latency runs (default: the best pair "
                        "of one worker); with --workers also WORKERS,THREADS,BATCH, which sets the Loghub run")
    p.add_argument("--fetchwait-ms", type=int, default=100,
                   help="also measure latency (rates below 80 %% of capacity) with the worker's consumer fetch wait "
                        "set to this (Faust fixes 1500 ms; service_bench_fetchwait.py); 0: skip")
    p.add_argument("--profile-lines", type=int, default=8000, help="lines of the py-spy run (0: none)")
    p.add_argument("--profile-seconds", type=int, default=30)
    p.add_argument("--py-spy", default=None, help="py-spy binary (default: on PATH)")
    p.add_argument("--stage-lines", type=int, default=3000, help="lines of the in-process stage breakdown (0: none)")
    p.add_argument("--whatif-windows", default="512,256", help="extra cache.window_tokens for the stage breakdown")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="small sizes; writes to a temp folder unless --out")
    p.add_argument("--out", type=Path, default=None, help="results folder (default: benchmarks/results)")
    p.add_argument("--workdir", type=Path, default=None, help="worker logs, raw JSON (default: a temp folder)")
    args = p.parse_args(argv)
    if args.quick:
        args.lines = min(args.lines, 1500)
        args.repeats = 1
        args.rates = "50,100" if args.rates == "50,100,250" else args.rates
        args.latency_seconds = min(args.latency_seconds, 8.0)
        args.warm_lines = min(args.warm_lines, 600)
        args.profile_lines = min(args.profile_lines, 1500)
        args.profile_seconds = min(args.profile_seconds, 5)
        args.stage_lines = min(args.stage_lines, 700)
        args.max_run_seconds = min(args.max_run_seconds, 60.0)
    args.out = args.out or (QUICK_OUT if args.quick else HERE / "results")
    args.loghub_lines = args.loghub_lines or args.lines
    return args


def parse_threads(text: str) -> list[str]:
    tokens = [t.strip() for t in text.split(",") if t.strip()]
    for t in tokens:
        if t != "default" and not t.rstrip("p").isdigit():
            raise SystemExit(f"--threads: {t!r} is not a thread count, 'default' or a count with a trailing p")
    return tokens


def parse_workers(text: str) -> list[int]:
    tokens = [t.strip() for t in text.split(",") if t.strip()]
    if not tokens or not all(t.isdigit() and int(t) >= 1 for t in tokens):
        raise SystemExit(f"--workers: {text!r} is not a list of process counts (1 or more), e.g. 1,2")
    return [int(t) for t in tokens]


def config_for(threads: str, batch_size: int, workers: int = 1, **kwargs) -> WorkerConfig:
    """The worker configuration a --threads token, a batch size and a process count stand for."""
    passive = threads.endswith("p")
    count = threads.rstrip("p")
    return WorkerConfig(None if count == "default" else int(count), batch_size,
                        extra_env={"OMP_WAIT_POLICY": "PASSIVE"} if passive else {}, workers=workers, **kwargs)


def pick(summary: dict) -> tuple:
    """The fastest; among those within 5 % of it, the one that spends the least worker CPU per line."""
    best_rate = max(v["sustained"] for v in summary.values())
    close = [k for k, v in summary.items() if v["sustained"] >= 0.95 * best_rate]
    return min(close, key=lambda k: summary[k]["cpu_ms"])


def describe_machine() -> dict[str, str]:
    import torch

    cpu = "unknown"
    flags = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name") and cpu == "unknown":
            cpu = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            have = set(line.split(":", 1)[1].split())
            flags = " ".join(f for f in ("avx", "avx2", "fma", "avx512f") if f in have) or "none of avx/avx2/avx512"
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    usable = len(os.sched_getaffinity(0))
    return {
        "cpu": f"{cpu} (SIMD: {flags})",
        "cores": f"{os.cpu_count()} ({usable} usable by this process)",
        "memory": f"{mem_kb / 2**20:.1f} GiB",
        "torch": f"{torch.__version__} (default intra-op threads here: {torch.get_num_threads()}; the worker's "
                 f"default, model.threads unset: {Settings().model.torch_threads()})",
        "python": platform.python_version(),
        "os": platform.platform(),
        "model": f"{DEFAULT_MODEL_DIR.relative_to(REPO)} ({_model_size()})",
    }


def _model_size() -> str:
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
    return (f"{config['num_hidden_layers']} layers, hidden {config['hidden_size']}, {config['num_attention_heads']} "
            f"heads / {config['num_key_value_heads']} KV, vocab {config['vocab_size']}; window "
            f"{Settings().cache.window_tokens} tokens")


def other_processes() -> list[str]:
    """The busiest processes that are not this benchmark's (what else loads the machine)."""
    import subprocess

    try:
        out = subprocess.run(["ps", "-eo", "pid,pcpu,etime,comm", "--sort=-pcpu"], capture_output=True, text=True,
                             timeout=5).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out[1:6] if line.split()[0] != str(os.getpid())]


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


async def main_async(args) -> dict:
    threads_list = parse_threads(args.threads)
    workers_list = parse_workers(args.workers)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="logstream-service-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "workdir": str(workdir)}
    results["machine"] = describe_machine()
    results["load_start"] = os.getloadavg()
    results["others_start"] = other_processes()
    results["started"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    print(f"machine: {results['machine']}\nload average: {results['load_start']}\nworkdir: {workdir}")

    synthetic = synthetic_dataset(args.lines, args.streams_per_service, seed=args.seed)
    loghub = loghub_dataset(args.loghub_lines)
    results["datasets"] = {d.name: {"lines": len(d.messages), "streams": d.streams, "anomalous": d.anomalous,
                                    "description": d.description} for d in (synthetic, loghub)}
    timeout = max(600.0, args.lines / 20.0)

    with EmbeddedBroker() as broker:
        broker_pid = broker.process.pid if broker.process else None

        def pipeline(config: WorkerConfig) -> Pipeline:
            return Pipeline(broker.bootstrap_servers, workdir, config)

        # 0. what the broker alone adds to latency
        floor_pipeline = pipeline(WorkerConfig(None, 1))
        await floor_pipeline.create_topics()
        results["kafka_floor"] = await kafka_floor(broker.bootstrap_servers, floor_pipeline.kafka.input_topic)
        print(f"broker floor: {results['kafka_floor']}")

        # 1. the throughput table: (workers, threads, batch)
        configs = [(w, t, b) for w in workers_list for t in threads_list for b in batch_sizes]
        table = []
        for round_ in range(args.repeats):
            order = configs if round_ % 2 == 0 else configs[::-1]
            for workers, threads, batch_size in order:
                config = config_for(threads, batch_size, workers)
                print(f"throughput round {round_ + 1}/{args.repeats}: {config.label}")
                r = await throughput_run(pipeline(config), synthetic, broker_pid, timeout_s=timeout,
                                         cap_s=args.max_run_seconds)
                extra = ""
                if workers > 1:
                    extra = (f", group ready after {r.group_ready_s:.1f} s, rebalances while scoring {r.rebalances}, "
                             f"lines scored twice {r.duplicates}, per worker "
                             + "; ".join(f"{w['partitions']}: {w['lines'] or 0:.0f} lines, {w['cores'] or 0:.2f} cores"
                                         for w in r.per_worker))
                print(f"  sustained {r.sustained_lps:.1f} lines/s, worker {r.worker_cpu_ms_per_line:.2f} CPU-ms/line, "
                      f"{r.worker_cores:.2f} worker cores, load {r.load_after[0]:.2f}{extra}")
                table.append({"round": round_ + 1, "workers": workers, "threads": threads, "batch_size": batch_size,
                              **asdict(r)})
        results["throughput"] = table
        by_config = {}
        for row in table:
            by_config.setdefault((row["workers"], row["threads"], row["batch_size"]), []).append(row)
        summary = {k: {"sustained": median([r["sustained_lps"] for r in rows]),
                       "cpu_ms": median([r["worker_cpu_ms_per_line"] for r in rows])} for k, rows in by_config.items()}
        # the fastest over everything, workers included: the Loghub run and the target check
        best = max(summary, key=lambda k: summary[k]["sustained"] if summary[k]["sustained"] == summary[k]["sustained"]
                   else -1.0)
        # the one-worker runs (profile, latency, stages) take the best pair of the fewest workers measured
        fewest = min(workers_list)
        pairs = {(t, b): v for (w, t, b), v in summary.items() if w == fewest}
        chosen = pick(pairs)
        if args.latency_config:
            parts = [x.strip() for x in args.latency_config.split(",")]
            if len(parts) == 3:
                best = (int(parts[0]), parts[1], int(parts[2]))
                parts = parts[1:]
            chosen = (parts[0], int(parts[1]))
        results["best"] = {"workers": best[0], "threads": best[1], "batch_size": best[2]}
        results["chosen"] = {"threads": chosen[0], "batch_size": chosen[1], "workers_of_pair": fewest}
        chosen_config = config_for(*chosen)
        best_config = config_for(best[1], best[2], best[0])
        print(f"best combination: {best_config.label}; one-worker runs (profile, latency): {chosen_config.label}")

        # 2. Loghub, with the best combination (workers included)
        print(f"throughput: Loghub ({best_config.label})")
        r = await throughput_run(pipeline(best_config), loghub, broker_pid, timeout_s=timeout,
                                 cap_s=args.max_run_seconds)
        results["loghub"] = {"workers": best[0], "threads": best[1], "batch_size": best[2], **asdict(r)}
        print(f"  sustained {r.sustained_lps:.1f} lines/s")

        # 3. profiled run
        spy = find_py_spy(args.py_spy)
        results["profile"] = None
        if args.profile_lines and spy:
            profile_config = WorkerConfig(1, chosen[1])  # one torch thread: all model work on one Python thread
            print(f"profiled run (py-spy, {args.profile_seconds} s): {profile_config.label}")
            data = Dataset("synthetic", synthetic.messages[:args.profile_lines], synthetic.streams)
            r = await throughput_run(pipeline(profile_config), data, broker_pid, timeout_s=timeout, py_spy=spy,
                                     profile_s=args.profile_seconds)
            results["profile"] = {"config": profile_config.label, "seconds": args.profile_seconds, "rate": 100,
                                  "run": asdict(r)}
        elif args.profile_lines:
            print("py-spy not found (pip install py-spy, or --py-spy PATH): no profile of the worker")

        # 4. latency: the chosen pair; then the same with a shorter consumer fetch wait (below capacity)
        # one worker's capacity (with more than one worker per row measured: their rate / workers)
        capacity = (pairs.get(chosen, {}).get("sustained") or next(iter(pairs.values()))["sustained"]) / fewest
        variants = [(chosen_config, rates)]
        if args.fetchwait_ms:
            variants.append((config_for(*chosen, fetch_max_wait_ms=args.fetchwait_ms),
                             [r for r in rates if r <= 0.8 * capacity] or rates[:1]))
        latency = []
        for config, variant_rates in variants:
            latency_pipeline = pipeline(config)
            entries = iter(SyntheticLogs(seed=args.seed + 1, anomaly_rate=0.01,
                                         services=synthetic_services(args.streams_per_service)))
            warm = [envelope_message(e) for e in itertools.islice(entries, args.warm_lines)]
            print(f"latency: warming a worker ({config.label}) with {len(warm)} lines")
            try:
                warm_result = await throughput_run(latency_pipeline, Dataset("warm-up", warm, synthetic.streams),
                                                   broker_pid, timeout_s=timeout, keep_worker=True)
                results.setdefault("latency_capacity", warm_result.sustained_lps)
                for rate in variant_rates:
                    backlog = max(0.0, rate - capacity) * args.latency_seconds
                    drain = 120.0 + 3 * backlog / max(capacity, 1.0)
                    lr = await latency_run(latency_pipeline, entries, rate, args.latency_seconds, broker_pid,
                                           inject_every=args.inject_every, seed=args.seed + int(rate),
                                           drain_timeout_s=drain)
                    print(f"  {rate:g} lines/s: ingest->score p50 {lr.pct(lr.score_ms, 50):.0f} ms, "
                          f"p99 {lr.pct(lr.score_ms, 99):.0f} ms; alerts {lr.injected_alerted}/{lr.injected}")
                    latency.append({"variant": config.label, "fetch_max_wait_ms": config.fetch_max_wait_ms or 1500,
                                    **asdict(lr)})
            finally:
                latency_pipeline.stop_worker()
        results["latency"] = latency

    # 5. in-process stages (the broker and workers are gone: nothing of ours competes)
    from service_bench_profile import stage_breakdown

    stages = []
    windows = [Settings().cache.window_tokens] + [int(w) for w in args.whatif_windows.split(",") if w.strip()]
    runs = [(synthetic, w) for w in windows] + [(loghub, windows[0])] if args.stage_lines > 0 else []
    for data, window in runs:
        print(f"in-process stage breakdown: {data.name}, window {window}")
        stages.append(stage_breakdown(data.messages[:args.stage_lines], chosen[1], 1, window, dataset=data.name))
    results["stages"] = stages
    results["kernels"] = None
    if stages:
        from service_bench_profile import attention_kernels
        results["kernels"] = attention_kernels(Settings().cache.window_tokens, stages[0]["sink_tokens"])
        print(f"attention kernels: {results['kernels']}")
    results["load_end"] = os.getloadavg()
    results["others_end"] = other_processes()
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return results


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python benchmarks/service_bench.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    results = asyncio.run(main_async(args))
    results["command"] = command.strip()
    results["target_lps"] = TARGET_LPS
    args.out.mkdir(parents=True, exist_ok=True)
    raw = Path(results["workdir"]) / "service.json"
    raw.write_text(json.dumps(results, indent=1, default=str))
    report = write_report(results, args.out)
    print(f"wrote {report} (raw numbers: {raw})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
