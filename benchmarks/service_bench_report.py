"""The service benchmark's report: ``service.md`` and its plots, from the results dict."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np


def _f(x, digits=1, unit=""):
    if x is None or (isinstance(x, float) and x != x):
        return "n/a"
    return f"{x:,.{digits}f}{unit}"


def _pct(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


def _median(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else float("nan")


def _threads(threads) -> str:
    threads = "default" if threads is None else str(threads)
    return f"{threads[:-1]} + OMP passive" if threads.endswith("p") else threads


def _label(threads, batch):
    return f"{_threads(threads)} / {batch}"


def _threads_words(threads) -> str:
    threads = "default" if threads is None else str(threads)
    passive = threads.endswith("p")
    count = threads[:-1] if passive else threads
    words = "default threads" if count == "default" else f"{count} thread{'' if count == '1' else 's'}"
    return words + (" + OMP passive" if passive else "")


def _wlabel(workers, threads, batch) -> str:
    """'2 workers x 1 thread / 64': worker processes in one consumer group x torch threads / batch size."""
    return f"{workers} worker{'' if workers == 1 else 's'} x {_threads_words(threads)} / {batch}"


def _key(r: dict) -> tuple:
    """(workers, threads, batch) of a throughput run (runs from before --workers: one worker)."""
    return (r.get("workers", 1), r["threads"], r["batch_size"])


def _best(results: dict) -> tuple:
    b = results.get("best")
    if b:
        return (b["workers"], b["threads"], b["batch_size"])
    return (1, results["chosen"]["threads"], results["chosen"]["batch_size"])


def _machine_cores(results: dict) -> int | None:
    try:
        return int(str(results["machine"]["cores"]).split()[0])
    except (KeyError, ValueError, IndexError):
        return None


def _group(r: dict) -> str:
    """The consumer group's side of a run: when it was ready, rebalances while scoring, lines scored twice."""
    if r.get("workers", 1) == 1:
        reb = r.get("rebalances")
        return "1 process" + (f"; {reb} rebalances" if reb else "")
    startup = r.get("startup_rebalances")
    return (f"ready after {_f(r.get('group_ready_s'), 1)} s"
            + (f" ({startup} rebalances before)" if startup is not None else "")
            + f"; {r.get('rebalances', 'n/a')} rebalances while scoring; {r.get('duplicates', 0)} scored twice")


def _load(t):
    return ", ".join(f"{x:.2f}" for x in t)


def model_busy(r: dict) -> float:
    """Share of the first-to-last-score span the model thread spent scoring (with several workers: the
    mean over their model threads). The span starts when the first batch was published, so the first
    batch's scoring time is left out (one batch's mean)."""
    count = r["batches"]["count"]
    if not r["span_s"] or not count:
        return float("nan")
    return r["scoring_s"] * (count - 1) / count / r["span_s"] / r.get("workers", 1)


def throughput_rows(table: list[dict]) -> list[str]:
    rows = ["| round | workers x threads / batch | lines scored | sustained lines/s | overall lines/s | "
            "worker CPU-ms / line | model thread busy (per worker) | batches (mean size) | worker cores (sum) | "
            "other load (cores) | consumer group | load avg after |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in table:
        busy = model_busy(r)
        rows.append(
            f"| {r['round']} | {_wlabel(*_key(r))} | {r['lines']:,}"
            f"{'' if r['lines'] >= r['preloaded'] else ' (time cap)'} | **{_f(r['sustained_lps'])}** | "
            f"{_f(r['overall_lps'])} | {_f(r['worker_cpu_ms_per_line'], 2)} | {_f(100 * busy, 0)} % | "
            f"{r['batches']['count']} ({_f(r['batches']['mean'], 0)}) | {_f(r['worker_cores'], 2)} | "
            f"{_f(r['others_cores'], 2)} | {_group(r)} | {_load(r['load_after'])} |")
    return rows


def per_worker_text(r: dict) -> str:
    """How the work split between the worker processes of a run (empty for one worker)."""
    if r.get("workers", 1) == 1 or not r.get("per_worker"):
        return ""
    parts = [f"worker {i + 1}: partitions {w['partitions']}, {_f(w['lines'], 0)} lines, {w['batches']} batches, "
             f"{_f(w['cores'], 2)} cores" for i, w in enumerate(r["per_worker"])]
    return ("; " + "; ".join(parts) + f"; {_f(100 * r.get('scored_during_preload', 0.0), 1)} % of the score records "
            "were published before the backlog had finished loading")


def summary_rows(table: list[dict], baseline: tuple) -> tuple[list[str], dict]:
    groups: dict = {}
    for r in table:
        groups.setdefault(_key(r), []).append(r)
    base = groups.get(baseline) or next(iter(groups.values()))
    base_rate = _median([r["sustained_lps"] for r in base])
    base_cpu = _median([r["worker_cpu_ms_per_line"] for r in base])
    rows = ["| workers x threads / batch | runs | sustained lines/s (median) | vs baseline | worker CPU-ms / line "
            "(median, all workers) | vs baseline | worker cores (median, sum) | 1000 / CPU-ms (lines/s per core of "
            "worker CPU) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    out = {}
    for key, runs in groups.items():
        rate = _median([r["sustained_lps"] for r in runs])
        cpu = _median([r["worker_cpu_ms_per_line"] for r in runs])
        cores = _median([r["worker_cores"] for r in runs])
        out[key] = (rate, cpu)
        rows.append(f"| {_wlabel(*key)} | {len(runs)} | {_f(rate)} | {_f(rate / base_rate, 2)}x | {_f(cpu, 2)} | "
                    f"{_f(cpu / base_cpu, 2)}x | {_f(cores, 2)} | {_f(1000 / cpu, 0) if cpu else 'n/a'} |")
    return rows, out


def batch_histogram(r: dict) -> str:
    b = r["batches"]
    buckets = b["buckets"]
    prev = 0
    parts = []
    for le, cumulative in buckets:
        n = cumulative - prev
        prev = cumulative
        if n:
            parts.append(f"<={le:g}: {int(n)}")
    return (f"{b['count']} batches, mean {_f(b['mean'], 1)} lines, p50 <= {_f(b['p50_le'], 0)}, "
            f"p90 <= {_f(b['p90_le'], 0)} (" + ", ".join(parts) + ")")


def profile_rows(profile: dict) -> list[str]:
    p = profile["run"]["profile"]
    if not p:
        return ["(py-spy produced no samples)"]
    seconds, rate = profile["seconds"], profile["rate"]
    total = p["total"]
    rows = [f"{total} on-CPU samples at {rate} Hz over {seconds} s: "
            + ", ".join(f"{kind} {n / (seconds * rate):.2f} cores" for kind, n in p["threads"].items()) + ".", "",
            "| thread | where (innermost matching frame) | share of worker CPU samples | cores |",
            "|---|---|---:|---:|"]
    for key, n in p["categories"].items():
        kind, category = key.split("|", 1)
        if n / total < 0.003:
            continue
        rows.append(f"| {kind} | {category} | {100 * n / total:.1f} % | {n / (seconds * rate):.2f} |")
    return rows


def stage_rows(stages: list[dict]) -> list[str]:
    names = list(stages[0]["stages"])
    head = "| stage | " + " | ".join(f"{s['dataset']}, window {s['window']}: µs / line | share" for s in stages) + " |"
    rows = [head, "|---|" + "---:|---:|" * len(stages)]
    for name in names:
        cells = []
        for s in stages:
            total = sum(s["stages"].values())
            v = s["stages"][name]
            cells.append(f"{v / s['lines'] * 1e6:,.0f} | {100 * v / total:.1f} %")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for s in stages:
        total = sum(s["stages"].values())
        cells.append(f"**{total / s['lines'] * 1e6:,.0f}** | 100 %")
    rows.append("| **all stages (wall)** | " + " | ".join(cells) + " |")
    rows.append("| CPU time of this process / line | " + " | ".join(
        f"{s['cpu_s'] / s['lines'] * 1e6:,.0f} | " for s in stages) + " |")
    rows.append("| model-thread capacity, lines/s = 1e6 / CPU-µs | " + " | ".join(
        f"{s['lines'] / s['cpu_s']:,.0f} | " for s in stages) + " |")
    rows.append("| forward passes per batch | " + " | ".join(
        f"{s['forward_passes'] / max(s['batches'], 1):.1f} | " for s in stages) + " |")
    rows.append("| padding waste (padded tokens not real) | " + " | ".join(
        f"{100 * (1 - s['real_tokens'] / s['padded_tokens']):.0f} % | " for s in stages) + " |")
    rows.append("| attention MFLOP / line; GFLOP/s (wall) | " + " | ".join(
        f"{s['attention_flops'] / s['lines'] / 1e6:,.0f}; {s['attention_flops'] / s['stages']['forward: attention (sink + ring + new)'] / 1e9:.1f} | "
        for s in stages) + " |")
    rows.append("| anomalies explained (of timed lines) | " + " | ".join(
        f"{s['anomalies']} / {s['lines']} | " for s in stages) + " |")
    return rows


def latency_rows(latency: list[dict], capacity: float) -> list[str]:
    rows = ["| consumer fetch wait | rate (lines/s) | achieved | of capacity | ingest->score p50 | p90 | p99 | max | "
            "ingest->alert p50 | p99 | injected alerted | other alerts | batches: mean size | scoring ms / batch | "
            "cycle ms / batch | worker cores | load after |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in latency:
        s, a = r["score_ms"], r["alert_ms"]
        rows.append(
            f"| {r.get('fetch_max_wait_ms', 1500)} ms{'' if r.get('fetch_max_wait_ms', 1500) == 1500 else ' (patched)'} "
            f"| {r['rate']:g} | {_f(r['achieved_rate'])} | {_f(100 * r['rate'] / capacity, 0)} % | "
            f"{_f(_pct(s, 50), 0)} ms | {_f(_pct(s, 90), 0)} ms | {_f(_pct(s, 99), 0)} ms | {_f(max(s) if s else None, 0)} ms | "
            f"{_f(_pct(a, 50), 0)} ms | {_f(_pct(a, 99), 0)} ms | {r['injected_alerted']} / {r['injected']} | "
            f"{r['other_alerts']} | {_f(r['batches_mean'], 1)} | {_f(r['scoring_ms_per_batch'], 0)} | "
            f"{_f(r['cycle_ms'], 0)} | {_f(r['worker_cores'], 2)} | {_load(r['load_after'])} |")
    return rows


def _lat_label(r: dict) -> str:
    wait = r.get("fetch_max_wait_ms", 1500)
    return f"{r['rate']:g} lines/s" + ("" if wait == 1500 else f", fetch wait {wait} ms")


def plots(results: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    latency = results.get("latency") or []
    if latency:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        for r in latency:
            s = np.sort(np.asarray(r["score_ms"], dtype=float))
            if len(s):
                ax1.plot(s, np.arange(1, len(s) + 1) / len(s), label=f"{_lat_label(r)}: score")
            a = np.sort(np.asarray(r["alert_ms"], dtype=float))
            if len(a):
                ax1.plot(a, np.arange(1, len(a) + 1) / len(a), ls="--", label=f"{_lat_label(r)}: alert")
            series = np.asarray(r["score_ms_series"], dtype=float)
            if len(series):
                ax2.plot(series[:, 0], series[:, 1], ".", ms=2, alpha=0.5, label=_lat_label(r))
        ax1.set_xscale("log")
        ax1.set_xlabel("ingest -> score / alert record (ms, Kafka timestamps)")
        ax1.set_ylabel("fraction of lines")
        ax1.set_title("latency CDF (warm worker)")
        ax1.grid(alpha=0.3)
        ax1.legend(fontsize=8)
        ax2.set_yscale("log")
        ax2.set_xlabel("seconds into the phase (ingest time)")
        ax2.set_ylabel("ingest -> score (ms)")
        ax2.set_title("latency over each phase")
        ax2.grid(alpha=0.3)
        ax2.legend(fontsize=8, markerscale=4)
        fig.suptitle(f"logstream worker, {results['chosen_label']}")
        fig.tight_layout()
        path = out / "service_latency.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    table = results.get("throughput") or []
    if table:
        fig, ax = plt.subplots(figsize=(9, 4))
        for r in table:
            tl = np.asarray(r["timeline"], dtype=float)
            if len(tl) > 2:
                k = 10  # batches of 256 lines land every second or two: average over 10 s
                smooth = np.convolve(tl[:, 1], np.ones(k) / k, mode="valid") if len(tl) > k else tl[:, 1]
                ax.plot(tl[: len(smooth), 0] + (k - 1) / 2, smooth,
                        label=f"{_wlabel(*_key(r))} (round {r['round']})")
        ax.axhline(results["target_lps"], color="k", ls=":", label="target 300 lines/s")
        ax.set_xlabel("seconds since the first score record")
        ax.set_ylabel("score records / s (10 s mean)")
        ax.set_title("working through a backlog (synthetic, workers x threads / batch)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / "service_throughput.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def target_text(target: float, by_config: dict, best: tuple, best_rate: float, loghub_rate: float) -> str:
    """Whether the target was met, with the best configuration (the one Loghub was run with)."""
    label = _wlabel(*best)
    if min(best_rate, loghub_rate) >= target:
        return f"**met** with {label}."
    others = [(k, v[0]) for k, v in by_config.items() if k != best and v[0] >= target]
    if best_rate >= target:
        return (f"**not met**: {label} reached it on synthetic logs but not on Loghub lines "
                "(see [Where the time goes](#where-the-time-goes)).")
    if others:
        k, rate = max(others, key=lambda kv: kv[1])
        return (f"**not met** with {label}; {_wlabel(*k)} reached {_f(rate)} lines/s on synthetic logs (its "
                "Loghub rate was not measured).")
    return "**not met** on this machine by any configuration measured (see [Where the time goes](#where-the-time-goes))."


def write_report(results: dict, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    chosen = (results["chosen"]["threads"], results["chosen"]["batch_size"])
    results["chosen_label"] = f"one worker, threads {_label(*chosen).replace(' / ', ', batch ')}"
    best = _best(results)
    best_label = _wlabel(*best)
    target = results["target_lps"]
    table = results["throughput"]
    baseline = (1, "1", 256) if any(_key(r) == (1, "1", 256) for r in table) else _key(table[0])
    summary, by_config = summary_rows(table, baseline)
    best_rate = by_config[best][0] if best in by_config else results["loghub"]["sustained_lps"]
    loghub = results["loghub"]
    worker_counts = sorted({k[0] for k in by_config})
    ncores = _machine_cores(results)
    one = [(k, v) for k, v in by_config.items() if k[0] == 1]
    one_best = max(one, key=lambda kv: kv[1][0]) if one else None
    syn = results["datasets"]["synthetic"]
    lh = results["datasets"]["loghub"]
    m = results["machine"]
    lines = [
        "# Service benchmark: end-to-end throughput and latency",
        "",
        "```",
        results["command"],
        "```",
        "",
        f"Run {results['started']} to {results['finished']}. Generated by `benchmarks/service_bench.py` "
        "(helpers `benchmarks/service_bench_*.py`); every figure below comes from that run.",
        "",
        "## Machine",
        "",
        "| | |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in m.items()],
        f"| load average at start (1, 5, 15 min) | {_load(results['load_start'])} |",
        f"| load average at end | {_load(results['load_end'])} |",
        f"| busiest processes at start (pid, %cpu, elapsed, name) | {'; '.join(results['others_start'][:4])} |",
        f"| busiest processes at end | {'; '.join(results['others_end'][:4])} |",
        "",
        "The machine is shared: other work ran throughout (the 'other load' columns give the cores it used",
        "during each run, from `/proc/stat` minus the worker, the broker and this benchmark). Wall-clock",
        "rates therefore move with that load; **worker CPU-ms per line** (from `/proc/<pid>/stat`) moves much",
        "less and is the figure to compare configurations by, with the medians and ratios below.",
        "",
        "## Result",
        "",
        f"* **Throughput** (synthetic, {syn['streams']} streams), fastest configuration measured, **{best_label}**"
        + (f" ({best[0]} `logstream worker` processes in one consumer group, sharing the 4 input partitions, on this "
           f"{ncores or '?'}-core machine)" if best[0] > 1 else "")
        + f": **{_f(best_rate)} lines/s** sustained (median); Loghub ({lh['streams']} streams, same configuration): "
        f"**{_f(loghub['sustained_lps'])} lines/s**. The issue's target is {target:g} lines/s: "
        + target_text(target, by_config, best, best_rate, loghub["sustained_lps"]),
    ]
    if len(worker_counts) > 1 or best[0] > 1:
        lines.append(
            "* **Workers:** " + "; ".join(f"{_wlabel(*k)}: {_f(v[0])} lines/s, {_f(v[1], 2)} worker CPU-ms / line"
                                          for k, v in sorted(by_config.items(), key=lambda kv: -kv[1][0]))
            + f" (medians). *N workers* = N `logstream worker` processes in one consumer group: Kafka hands each a "
            f"share of the input topic's 4 partitions. They share this machine's {ncores or '?'} cores with the broker, "
            "this benchmark and any other load.")
        if one_best is not None and best[0] > 1:
            lines.append(f"* One worker alone: at best {_f(one_best[1][0])} lines/s ({_wlabel(*one_best[0])}).")
    if results.get("latency"):
        for r in results["latency"]:
            lines.append(
                f"* **Latency at {_lat_label(r)}**: ingest->score p50 {_f(_pct(r['score_ms'], 50), 0)} ms, "
                f"p99 {_f(_pct(r['score_ms'], 99), 0)} ms; ingest->alert (injected anomalies) p50 "
                f"{_f(_pct(r['alert_ms'], 50), 0)} ms, p99 {_f(_pct(r['alert_ms'], 99), 0)} ms"
                + (" (over capacity: the backlog grows, so these grow with the phase's length)"
                   if r["rate"] > 0.95 * results["latency_capacity"] else "") + ".")
    lines += [
        "",
        "## What is measured",
        "",
        "* One broker (`EmbeddedBroker`: Tansu, in-memory, a real Kafka-compatible process on 127.0.0.1), topics",
        "  with 4 partitions, and one worker started as the service tests start it: `python -m logstream.cli worker",
        "  --bootstrap-servers ...` as a child process, configured only by `LOGSTREAM_...` variables (its own",
        "  topics and consumer group, `LOGSTREAM_KAFKA__SCORES_TOPIC` set, metrics on a free port,",
        "  `LOGSTREAM_WORKER__SESSION_TIMEOUT_S=6`), default model and cache settings (window 2048 tokens,",
        "  64 slots), default alert grouping. Every throughput run is a fresh worker on fresh topics.",
        "  *threads* is `LOGSTREAM_MODEL__THREADS`; *+ OMP passive* also sets `OMP_WAIT_POLICY=PASSIVE` in the",
        "  worker's environment (OpenMP threads sleep while they wait instead of spinning); *batch* is",
        "  `LOGSTREAM_WORKER__BATCH_SIZE` (`worker.batch_within_s` stays 0.05 s).",
        "* *workers* (`--workers`): that many worker processes, each started as above with the same environment",
        "  and the same consumer group, but its own metrics port and Faust data directory (Faust's web server is",
        "  off, `worker.web_port` unset). Kafka splits the 4 input partitions between them; the streams of a",
        "  partition are scored only by the process that holds it, each process with its own copy of the model",
        "  and its own stream cache. Lines/s still come from the score records' Kafka timestamps; worker CPU time,",
        "  worker cores, the batch-size and scoring-time histograms and the scored-lines counter are summed over",
        "  the processes (*model thread busy* is the mean over their model threads). With more than one process",
        "  the workers start on the still empty topics and the backlog is loaded only once every process's log",
        "  shows its own, disjoint share of the partitions, so the group's start-up rebalances (a process that",
        "  joins later makes the group revoke and reassign all partitions) are over before there is anything to",
        "  score. The load takes under a second; each run gives the share of score records published before it",
        "  finished (well under the 5 % the sustained rate leaves out), the rebalances while scoring (group",
        "  generations in the workers' logs) and the lines scored twice (counted once in the rates). One worker",
        "  is timed as before: backlog loaded first, then the worker started. The Loghub run uses the fastest",
        "  combination, workers included; the latency and profile runs and the stage breakdown use one worker",
        "  (the fastest pair of one worker, or among pairs within 5 % of it the one with the least CPU per line).",
        f"* Synthetic data: {syn['description']}; {syn['lines']:,} lines, {syn['anomalous']} of them labeled",
        f"  anomalous. Loghub: {lh['description']}; {lh['lines']:,} lines, {lh['streams']} streams.",
        "* **Throughput**: the lines are in the input topic before the worker starts (several workers: see above).",
        "  The worker publishes one",
        "  score record per line; its producer stamps each with the time it hands it over (after the forward pass",
        "  and JSON encoding). *Sustained* = records between the 5th and 95th percentile of those Kafka timestamps",
        "  / the time between them (leaves out the start-up batches and the tail); *overall* = first to last.",
        "  The batch-size histogram and the per-batch scoring time come from the worker's Prometheus endpoint",
        "  (`logstream_batch_size_entries`, `logstream_scoring_latency_seconds`); *model thread busy* = the sum of",
        "  per-batch scoring times (less one batch's mean: the span starts after the first batch) / the span.",
        "  CPU time from `/proc`, sampled every 0.5 s. A run stops at `--max-run-seconds` after its first score.",
        "* **Latency**: a fresh worker with the chosen configuration first scores "
        f"{results['args']['warm_lines']} lines (its streams are then past the model's 256-token warm-up);",
        f"  then, for each rate, this benchmark sends lines one at a time (aiokafka, acks=all, linger 0) at that rate",
        f"  for {results['args']['latency_seconds']} s, every {results['args']['inject_every']}th of them replaced",
        "  by 48 random characters (an obviously anomalous line; the default model scores these ~7.5 against its",
        "  calibrated threshold of 1.6, and no two are alike, so alert grouping never folds them).",
        "  **ingest->score** = score record's Kafka timestamp - input record's Kafka timestamp (CreateTime stamped",
        "  by this producer at send), for every line of the phase, matched by (partition, offset).",
        "  **ingest->alert** = the same for the alert record of each injected line. Both clocks are this machine's;",
        "  1 ms resolution. What a consumer of the scores/alerts topic sees adds its own fetch wait on top.",
        "",
        "## Throughput (synthetic)",
        "",
        f"Baseline for the ratios: workers x threads / batch = {_wlabel(*baseline)} (on this 2-core machine "
        "`model.threads` unset also means 1 thread).",
        "",
        *summary,
        "",
        "Every run:",
        "",
        *throughput_rows(table),
        "",
        "Batch sizes (from the worker's histogram), per run:",
        "",
        *[f"* {_wlabel(*_key(r))}, round {r['round']}: {batch_histogram(r)}; "
          f"{_f(r['tokens_per_line'], 1)} tokens / line; {_f(r['cache_streams'], 0)} streams in the cache"
          f"{'s' if r.get('workers', 1) > 1 else ''}; worker start to first score {_f(r['startup_s'], 1)} s"
          + per_worker_text(r) for r in table],
        "",
        "![throughput](service_throughput.png)",
        "",
        "## Throughput (Loghub)",
        "",
        f"{best_label}: **{_f(loghub['sustained_lps'])} lines/s** sustained, {_f(loghub['overall_lps'])} "
        f"overall, {_f(loghub['worker_cpu_ms_per_line'], 2)} worker CPU-ms / line, "
        f"{_f(loghub['tokens_per_line'], 1)} tokens / line, {loghub['streams']} streams, {loghub['alerts']} alert records; "
        f"{batch_histogram(loghub)}; other load {_f(loghub['others_cores'], 2)} cores, load average after "
        f"{_load(loghub['load_after'])}" + (f"; consumer group {_group(loghub)}" + per_worker_text(loghub)
                                            if loghub.get("workers", 1) > 1 else "") + ".",
        "",
    ]
    if results.get("latency"):
        lines += [
            "## Latency (warm worker)",
            "",
            f"{results['chosen_label']}; capacity for the 'of capacity' column: "
            f"{_f(results['latency_capacity'])} lines/s, what the same worker sustained on its warm-up backlog.",
            "",
            *latency_rows(results["latency"], results["latency_capacity"]),
            "",
            "![latency](service_latency.png)",
            "",
        ]
    floor = results.get("kafka_floor")
    if floor:
        slow, fast = floor["receive_ms_wait_1500"], floor["receive_ms_wait_100"]
        lines += [
            "### What the broker alone adds",
            "",
            "Measured on the same broker before the runs (`service_bench_kafka.kafka_floor`): one record at a time,",
            "a consumer waiting at the end of the topic, sends spread over its fetch cycle.",
            "",
            "| | median | max |", "|---|---:|---:|",
            f"| produce -> ack (acks=all, linger 0) | {floor['ack_ms']['median']:.1f} ms | {floor['ack_ms']['max']:.1f} ms |",
            f"| produce -> consumer receives it, `fetch_max_wait_ms=1500` (what Faust's consumer uses, fixed in "
            f"`faust/transport/drivers/aiokafka.py`) | {slow['median']:.0f} ms | {slow['max']:.0f} ms |",
            f"| produce -> consumer receives it, `fetch_max_wait_ms=100` | {fast['median']:.0f} ms | {fast['max']:.0f} ms |",
            "",
        ]
    lines += ["## Where the time goes", ""]
    if not results.get("profile") and not results.get("stages"):
        lines += ["Not measured in this run: no py-spy profile (py-spy not found, or `--profile-lines 0`) and no "
                  "in-process stage breakdown (`--stage-lines 0`).", ""]
    if results.get("profile"):
        prof = results["profile"]
        lines += [
            f"py-spy (`record --rate 100 --threads --nonblocking`, on-CPU samples only) attached to a worker with "
            f"{prof['config']} for {prof['seconds']} s while it worked through a backlog "
            f"({_f(prof['run']['sustained_lps'])} lines/s in that run). Each sample is filed under the innermost "
            "frame that names a stage (`benchmarks/service_bench_profile.py`, `RULES`).",
            "",
            *profile_rows(prof),
            "",
        ]
    stages = results.get("stages") or []
    if stages:
        lines += [
            f"The model thread's work in-process (no Kafka), one torch thread, batches of {stages[0]['batch_size']} "
            f"lines of the same synthetic data ({stages[0]['lines']} timed lines after 2 warm-up batches), every "
            "stage timed separately (timers wrapped around this process's objects; the library is unchanged). "
            "Window 2048 is the default; a column with another window changes only `cache.window_tokens` "
            "(`LOGSTREAM_CACHE__WINDOW_TOKENS`), to show what the window costs. *CPU time* is this process's "
            "(it differs from the wall time when other work takes the core).",
            "",
            *stage_rows(stages),
            "",
        ]
    lines += findings(results, by_config, baseline, best_rate)
    path = out / "service.md"
    plots(results, out)
    path.write_text("\n".join(lines) + "\n")
    return path


def _capacity(stage: dict) -> float:
    return stage["lines"] / stage["cpu_s"] if stage.get("cpu_s") else float("nan")


def _share(stage: dict, prefix: str) -> float:
    total = sum(stage["stages"].values())
    return sum(v for k, v in stage["stages"].items() if k.startswith(prefix)) / total if total else float("nan")


def _kernel_sentence(k: dict | None, real_gflops: float) -> str:
    if not k:
        return ""
    return (f"For one layer of a typical pass ({k['rows']} rows x {k['width']} tokens, one thread, CPU time), the engine's "
            f"way of computing attention runs at {k['engine_gflops']:.0f} GFLOP/s ({k['engine_ms']:.1f} ms). A fused "
            f"`torch.nn.functional.scaled_dot_product_attention` over the same keys takes {k['sdpa_ms']:.1f} ms, and a "
            f"bare batched matmul of the score shape runs at {k['matmul_gflops']:.0f} GFLOP/s. So the arithmetic "
            "itself is near what this core does; a fused kernel does not help. The real passes reach "
            f"{100 * real_gflops / k['engine_gflops']:.0f} % of that rate. They lose the rest to small and padded "
            "shapes, the additive mask and ring gathers. Past that, the cost is set by the number of keys "
            "(sink + window) per token.")


def findings(results: dict, by_config: dict, baseline: tuple, best_rate: float) -> list[str]:
    out = ["## Findings", ""]
    target = results["target_lps"]
    chosen = (results["chosen"]["threads"], results["chosen"]["batch_size"])
    best = _best(results)
    best_label = _wlabel(*best)
    table = results["throughput"]
    fewest = min(_key(r)[0] for r in table)
    single = [r for r in table if _key(r)[0] == fewest]  # the runs the thread and batch findings compare
    best_runs = [r for r in table if _key(r) == best]
    stages = results.get("stages") or []
    loghub = results["loghub"]
    ncores = _machine_cores(results)
    if best in by_config:
        rate, cpu_ms = by_config[best]
        cores = _median([r["worker_cores"] for r in best_runs])
        others = _median([r["others_cores"] for r in best_runs])
        met = min(rate, loghub["sustained_lps"]) >= target
        who = ("The service" if best[0] > 1 else "The worker")
        reached = [k for k, v in by_config.items() if v[0] >= target]
        text = (f"* **{who} {'meets' if met else 'does not meet'} the {target:g} lines/s target on this machine"
                f"{'' if met or reached else ' in any configuration measured'}"
                f"{' with the fastest configuration' if not met and reached else ''}.** The fastest configuration was "
                f"{best_label}"
                + (f" ({best[0]} worker processes in one consumer group)" if best[0] > 1 else "")
                + f": {_f(rate)} lines/s sustained on synthetic logs and {_f(loghub['sustained_lps'])} on Loghub lines. "
                f"The worker process{'es' if best[0] > 1 else ''} got {_f(cores, 2)} cores"
                f"{' together' if best[0] > 1 else ''} while other work on the machine used {_f(others, 2)} cores. "
                f"At {_f(cpu_ms, 2)} worker CPU-ms per line, each core of worker CPU is worth about "
                f"{_f(1000 / cpu_ms, 0)} lines/s")
        if cpu_ms and cpu_ms == cpu_ms:
            need = target * cpu_ms / 1000
            per_core = 1000 / cpu_ms
            if best[0] == 1:
                text += (f"; a whole free core would give about {_f(per_core, 0)} lines/s"
                         + (", short of the target" if per_core < target else "") + ". ")
            else:
                text += ". "
            if ncores and ncores * per_core < target:
                text += (f"Even all {ncores} cores of this machine (the broker needs some of them too) would give "
                         f"about {_f(ncores * per_core, 0)} lines/s at that cost, short of the target.")
            else:
                text += (f"At that cost the target needs about {need:.2f} cores of worker CPU"
                         + (f", of this machine's {ncores}, which the broker, this benchmark and the other work share"
                            if ncores else "")
                         + (" (more than one core: with one torch thread that takes more than one worker process)"
                            if best[0] == 1 and best[1] == "1" and need > 1 else "") + ".")
        else:
            text += "."
        out.append(text)
    counts = sorted({k[0] for k in by_config})
    if len(counts) > 1:
        base_n = counts[0]
        parts = []
        for key, (rate, cpu) in sorted(by_config.items()):
            base = by_config.get((base_n, key[1], key[2]))
            if key[0] == base_n or not base:
                continue
            runs = [r for r in table if _key(r) == key]
            parts.append(
                f"{_wlabel(*key)}: {_f(rate)} lines/s, {_f(rate / base[0], 2)}x the rate of "
                f"{_wlabel(base_n, key[1], key[2])}; "
                f"{_f(cpu, 2)} worker CPU-ms / line ({_f(cpu / base[1], 2)}x); "
                f"{_f(_median([r['worker_cores'] for r in runs]), 2)} worker cores against "
                f"{_f(_median([r['worker_cores'] for r in table if _key(r) == (base_n, key[1], key[2])]), 2)}")
        multi_runs = [r for r in table if _key(r)[0] > 1]
        rebalances = sum(r.get("rebalances") or 0 for r in multi_runs)
        startup = sum(r.get("startup_rebalances") or 0 for r in multi_runs)
        twice = sum(r.get("duplicates") or 0 for r in multi_runs)
        during = max((r.get("scored_during_preload") or 0.0 for r in multi_runs), default=0.0)
        splits = "; ".join(
            "/".join(_f(w["lines"], 0) for w in r["per_worker"]) for r in multi_runs[:4] if r.get("per_worker"))
        text = ("* **Workers** (N `logstream worker` processes in one consumer group, each with its own model and "
                f"stream cache, the 4 input partitions split between them; this machine has {ncores or '?'} cores "
                "for all of them, the broker and this benchmark): " + "; ".join(parts) + ". ")
        known = [r for r in multi_runs if r.get("startup_rebalances") is not None]
        if known:
            text += (f"The workers joined their group in the same generation in "
                     f"{sum(not r['startup_rebalances'] for r in known)} of {len(known)} runs"
                     + (f" ({startup} start-up rebalances in all, each over before the backlog was loaded). "
                        if startup else " (no start-up rebalance). "))
        text += ("No rebalance happened while any multi-worker run was scoring" if not rebalances else
                 f"{rebalances} rebalances happened while multi-worker runs were scoring") + (
                 f", no line was scored twice" if not twice else f", {twice} lines were scored twice (counted once)") + (
                 f", and at most {100 * during:.1f} % of a run's score records came before its backlog had loaded "
                 "(the sustained rate leaves out the first 5 %)." )
        if splits:
            text += (f" Lines per worker, per run (the stream keys' partitions decide the split): {splits}. With an "
                     "uneven split one worker runs out of lines first and the other finishes alone; the sustained "
                     "rate leaves out only the last 5 % of the records.")
        out.append(text)
    prof = (results.get("profile") or {}).get("run", {}).get("profile")
    if prof:
        total = prof["total"]
        cats = prof["categories"]
        model = prof["threads"].get("model thread", 0)
        fwd = sum(n for k, n in cats.items() if k.startswith("model thread|forward"))
        att = sum(n for k, n in cats.items() if "attention" in k)
        kafka = sum(n for k, n in cats.items() if any(x in k for x in ("Kafka", "Faust", "event loop", "worker batch",
                                                                         "JSON", "envelope")))
        out.append(
            f"* **Where the worker's CPU goes** (py-spy on the real worker): {100 * model / total:.0f} % of its on-CPU "
            f"samples are on the model thread, and {100 * fwd / total:.0f} % are in the forward pass "
            f"({100 * att / total:.0f} % attention alone). Kafka, Faust, the event loop and JSON together take "
            f"{100 * kafka / total:.0f} %. The worker is bound by the model, not by Kafka or JSON.")
    if stages:
        s = stages[0]
        whatif = [x for x in stages[1:] if x["dataset"] == s["dataset"]]
        real = [x for x in stages[1:] if x["dataset"] != s["dataset"]]
        attention = s["stages"]["forward: attention (sink + ring + new)"]
        per_line = s["attention_flops"] / s["lines"] / 1e6
        wall_gflops = s["attention_flops"] / attention / 1e9
        cpu_gflops = wall_gflops * s["wall_s"] / s["cpu_s"]  # attention's wall time scaled by the CPU share
        out.append(
            f"* **Stages** (in-process, one torch thread): forward pass {100 * _share(s, 'forward'):.0f} % (attention "
            f"{100 * attention / sum(s['stages'].values()):.0f} %, logits/softmax/entropy "
            f"{100 * _share(s, 'forward: logits'):.0f} %, projections/MLP {100 * _share(s, 'forward: projections'):.0f} "
            f"%), tokenization (masking + tokenizer) {100 * _share(s, 'tokenize'):.0f} %, aggregates "
            f"{100 * _share(s, 'scorer: aggregates'):.0f} %, alert explanations {100 * _share(s, 'alert'):.0f} %, "
            f"JSON (envelope decode + score record) {100 * (_share(s, 'decode') + _share(s, 'score records')):.1f} %. "
            f"The model thread manages {_f(_capacity(s), 0)} lines per CPU-second.")
        out.append(
            f"* **Attention is plain arithmetic, and it grows with the window.** Every new token is scored against "
            f"the {s['sink_tokens']} sink tokens and all {s['window']} ring positions. The ring positions are masked "
            f"when a ring is not yet full, but they are still computed, and a long-running stream's ring is full "
            f"anyway. That is about {per_line:,.0f} MFLOP of attention per line "
            f"({s['real_tokens'] / s['lines']:.1f} tokens, rows padded by "
            f"{100 * (1 - s['real_tokens'] / s['padded_tokens']):.0f} %). It ran at {wall_gflops:.1f} GFLOP/s of wall time, "
            f"about {cpu_gflops:.0f} GFLOP/s per CPU-second. "
            + _kernel_sentence(results.get("kernels"), cpu_gflops) + " "
            + " ".join(f"With window {w['window']} the model thread manages {_f(_capacity(w), 0)} lines per CPU-second "
                       f"({_capacity(w) / _capacity(s):.1f}x)." for w in whatif))
        for r in real:
            out.append(
                f"* On {r['dataset']} lines the model thread manages {_f(_capacity(r), 0)} lines per CPU-second "
                f"({r['real_tokens'] / r['lines']:.1f} tokens per line; {r['anomalies']} of {r['lines']} timed lines "
                f"are over the calibrated threshold, and explaining them takes {100 * _share(r, 'alert'):.0f} % of "
                "the time).")
    groups: dict = {}
    for r in single:
        groups.setdefault(r["threads"], []).append(r["worker_cpu_ms_per_line"])
    if "1" in groups and "2" in groups:
        text = (f"* **Threads** ({fewest} worker{'' if fewest == 1 else 's'}): with 2 torch threads the worker spent {_median(groups['2']) / _median(groups['1']):.1f}x "
                "the CPU per line of 1 thread, and it was about that much slower in wall time too. On a 2-core machine "
                "that other work also uses, one of the two OpenMP threads is often off-core. The other spins at every "
                "barrier until its partner comes back, and every parallelised torch op ends in a barrier: hundreds "
                "per batch.")
        if "2p" in groups:
            text += (f" With `OMP_WAIT_POLICY=PASSIVE` (waiting threads sleep) 2 threads cost "
                     f"{_median(groups['2p']) / _median(groups['1']):.1f}x the CPU per line of 1 thread.")
        out.append(text + " `model.threads` unset already means cores - 1 (here 1).")
    batches: dict = {}
    for r in single:
        if r["threads"] == chosen[0]:
            batches.setdefault(r["batch_size"], []).append(r)
    if len(batches) > 1:
        parts = [f"batch {b}: {_f(_median([r['sustained_lps'] for r in rs]))} lines/s, "
                 f"{_f(_median([r['worker_cpu_ms_per_line'] for r in rs]), 2)} CPU-ms / line" for b, rs in sorted(batches.items())]
        sizes = sorted(batches)
        small = _median([r["worker_cpu_ms_per_line"] for r in batches[sizes[0]]])
        large = _median([r["worker_cpu_ms_per_line"] for r in batches[sizes[-1]]])
        verdict = (f"batch {sizes[-1]} costs {100 * (1 - large / small):.0f} % less CPU per line" if large < 0.95 * small
                   else f"batch {sizes[0]} costs {100 * (1 - small / large):.0f} % less CPU per line" if small < 0.95 * large
                   else "no clear difference in CPU per line (within 5 %)")
        per_batch = "; ".join(
            f"{_f(1000 * _median([r['scoring_s'] / r['batches']['count'] for r in batches[b]]), 0)} ms per batch of {b}"
            for b in sizes)
        out.append("* **Batch size** (on a backlog, with " + f"threads {_threads(chosen[0])}): " + "; ".join(parts)
                   + f": {verdict}. Scoring takes {per_batch}. The batch size bounds how long a line waits behind "
                   "the batch ahead of it when a backlog builds, so the smaller batch is better for latency.")
    floor = results.get("kafka_floor")
    lat = results.get("latency") or []
    default_lat = [r for r in lat if r.get("fetch_max_wait_ms", 1500) == 1500]
    patched = [r for r in lat if r.get("fetch_max_wait_ms", 1500) != 1500]
    if default_lat:
        below = [r for r in default_lat if r["rate"] <= 0.8 * results["latency_capacity"]]
        if below:
            r = below[0]
            out.append(
                f"* **Latency** below capacity is batch cycles. At {r['rate']:g} lines/s a batch of "
                f"{_f(r['batches_mean'], 0)} lines took {_f(r['scoring_ms_per_batch'], 0)} ms to score, and one cycle "
                f"(fetch, score, publish, wait for acks) took {_f(r['cycle_ms'], 0)} ms. A line waits for the batch "
                f"ahead of it, then for its own batch: p50 {_f(_pct(r['score_ms'], 50), 0)} ms. Alerts arrive with "
                "their line's batch, so ingest->alert is the same as ingest->score. "
                + (f"The {_f(r['cycle_ms'] - r['scoring_ms_per_batch'], 0)} ms of each cycle spent outside the model is "
                   "mostly the consumer's fetch wait: see the next two points." if patched else ""))
    if floor:
        slow, fast = floor["receive_ms_wait_1500"], floor["receive_ms_wait_100"]
        out.append(
            f"* **Broker floor:** produce->ack (acks=all) takes {floor['ack_ms']['median']:.1f} ms. But a consumer "
            f"waiting at the end of a topic with Faust's fixed `fetch_max_wait_ms=1500` gets a new record after a "
            f"median of {slow['median']:.0f} ms (max {slow['max']:.0f} ms) from the bundled broker, against "
            f"{fast['median']:.0f} ms (max {fast['max']:.0f}) with 100 ms. That wait sits in front of every idle "
            "worker's next batch.")
    for p in patched:
        same = next((r for r in default_lat if r["rate"] == p["rate"]), None)
        if same:
            out.append(
                f"* **Shorter fetch wait** (the benchmark patched the worker's consumer to `fetch_max_wait_ms="
                f"{p['fetch_max_wait_ms']}` in its own process): at {p['rate']:g} lines/s ingest->score p50 "
                f"{_f(_pct(same['score_ms'], 50), 0)} -> {_f(_pct(p['score_ms'], 50), 0)} ms, p99 "
                f"{_f(_pct(same['score_ms'], 99), 0)} -> {_f(_pct(p['score_ms'], 99), 0)} ms; cycle "
                f"{_f(same['cycle_ms'], 0)} -> {_f(p['cycle_ms'], 0)} ms per batch.")
    if best in by_config and best[0] > 1:
        text = (f"* **Recommendation for the README:** on this machine {best[0]} worker processes in one consumer "
                f"group, each with {_threads_words(best[1])} and batch {best[2]} ({best_label}: the fastest "
                "combination measured); for a single worker: threads "
                f"{_threads(chosen[0])}, batch {chosen[1]} (the fastest pair of one worker, or among pairs within "
                "5 % of it the one that uses the least worker CPU per line).")
        if "2" in groups:
            text += (" Never give torch more than one thread on a machine whose cores are shared unless "
                     "`OMP_WAIT_POLICY=PASSIVE` is set; `model.threads` unset (cores - 1) gives 1 thread on 2 cores.")
        out.append(text)
    elif (fewest, *chosen) in by_config:
        text = (f"* **Recommendation for the README:** {results['chosen_label']} (on this machine: the fastest "
                "pair, or among pairs within 5 % of it the one that uses the least worker CPU per line"
                + (f"; more worker processes ({', '.join(str(c) for c in counts if c != fewest)}) were not more "
                   "than 5 % faster" if len(counts) > 1 else "") + ").")
        if "2" in groups:
            text += (" Never give torch more than one thread on a machine whose cores are shared unless "
                     "`OMP_WAIT_POLICY=PASSIVE` is set; `model.threads` unset (cores - 1) gives 1 thread on 2 cores.")
        out.append(text)
    return out
