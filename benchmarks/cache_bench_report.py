"""Summaries, the markdown results file and the latency/memory plot of the cache benchmark."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MIB = 1024 * 1024


@dataclass
class Summary:
    label: str
    kind: str
    window: int | None
    lines: int
    tokens: int
    ms_token_median: float
    ms_token_p99: float
    ms_line_median: float
    ms_line_p99: float
    cache_mib_end: float
    cache_mib_max: float
    peak_rss_mib: float
    rss_growth_mib: float
    cuda_peak_mib: float | None
    perplexity: float
    note: str


def per_token_ms(run: dict) -> np.ndarray:
    return np.asarray(run["ms"]) / np.maximum(np.asarray(run["tokens"]), 1)


def perplexity(run: dict, lines: set[int] | None = None) -> float:
    keep = [i for i, line in enumerate(run["line"]) if lines is None or line in lines]
    tokens = sum(run["tokens"][i] for i in keep)
    return math.exp(-sum(run["logprob_sum"][i] for i in keep) / tokens) if tokens else float("nan")


def summarize(label: str, run: dict, total_lines: int) -> Summary:
    spec = run["spec"]
    ms, per_token = np.asarray(run["ms"]), per_token_ms(run)
    note = ""
    if run["stopped"]:
        note = (f"stopped at line {run['stopped']['line']:,} (stream position {run['stopped']['position']:,} "
                f"tokens): budget of {spec['dense_budget_bytes'] / MIB:.0f} MiB reached")
    elif spec.get("sampled_lines") is not None:
        note = (f"{len(run['line'])} of {total_lines:,} lines, spread evenly after the window filled "
                "(the rest only appended to its token window)")
    return Summary(
        label=label, kind=spec["kind"], window=spec.get("window"), lines=len(ms),
        tokens=int(sum(run["tokens"])),
        ms_token_median=float(np.median(per_token)), ms_token_p99=float(np.percentile(per_token, 99)),
        ms_line_median=float(np.median(ms)), ms_line_p99=float(np.percentile(ms, 99)),
        cache_mib_end=run["cache_bytes"][-1] / MIB, cache_mib_max=max(run["cache_bytes"]) / MIB,
        peak_rss_mib=run["peak_rss_bytes"] / MIB,
        rss_growth_mib=max(0, run["peak_rss_bytes"] - run["rss_before_bytes"]) / MIB,
        cuda_peak_mib=run["cuda_peak_bytes"] / MIB if run.get("cuda_peak_bytes") is not None else None,
        perplexity=perplexity(run), note=note,
    )


def same_lines_ratio(slow: dict, fast: dict) -> tuple[float, float, int]:
    """On the lines both scored: (ratio of median ms/token, ratio of total ms per total token, lines)."""
    fast_at = {line: i for i, line in enumerate(fast["line"])}
    pairs = [(i, fast_at[line]) for i, line in enumerate(slow["line"]) if line in fast_at]
    if not pairs:
        return float("nan"), float("nan"), 0
    s = np.asarray([slow["ms"][i] / slow["tokens"][i] for i, _ in pairs])
    f = np.asarray([fast["ms"][j] / fast["tokens"][j] for _, j in pairs])
    total_s = sum(slow["ms"][i] for i, _ in pairs)
    total_f = sum(fast["ms"][j] for _, j in pairs)
    return float(np.median(s) / np.median(f)), total_s / total_f, len(pairs)


def flatness(run: dict) -> tuple[float, ...] | None:
    """Over the lines after the window filled: median ms/token in the first and the last quarter,
    then min and max of the cache and of the process RSS (MiB). None when too few lines."""
    window = run["spec"].get("window") or 0
    idx = [i for i, p in enumerate(run["position"]) if p >= window]
    if len(idx) < 8:
        return None
    quarter = len(idx) // 4
    per_token = per_token_ms(run)
    first, last = per_token[idx[:quarter]], per_token[idx[-quarter:]]
    cache = [run["cache_bytes"][i] for i in idx]
    rss = [run["rss_bytes"][i] for i in idx]
    return (float(np.median(first)), float(np.median(last)), min(cache) / MIB, max(cache) / MIB,
            min(rss) / MIB, max(rss) / MIB)


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.{digits}f}" if abs(x) < 1000 else f"{x:,.0f}"


def markdown(summaries: list[Summary], runs: dict[str, dict], context: dict) -> str:
    """The results file. ``context``: command, machine, stream, model, sink, notes, ratio."""
    out = ["# Cache benchmark: the streaming engine against StreamingLLM's baselines", ""]
    if context.get("warning"):
        out += [f"> **{context['warning']}**", ""]
    out += ["Command:", "", "```bash", context["command"], "```", ""]
    out += ["## Machine", ""] + [f"- {k}: {v}" for k, v in context["machine"].items()] + [""]
    out += ["## Stream and model", ""] + [f"- {line}" for line in context["setup"]] + [""]

    cuda = any(s.cuda_peak_mib is not None for s in summaries)
    head = ["method", "lines", "tokens", "ms/token median", "ms/token p99", "ms/line median", "ms/line p99",
            "cache MiB (end / max)", "peak RSS MiB", "RSS growth MiB"]
    head += (["peak CUDA MiB"] if cuda else []) + ["perplexity", "notes"]
    out += ["## Results", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summaries:
        row = [s.label, f"{s.lines:,}", f"{s.tokens:,}", _fmt(s.ms_token_median), _fmt(s.ms_token_p99),
               _fmt(s.ms_line_median, 2), _fmt(s.ms_line_p99, 2),
               f"{s.cache_mib_end:.2f} / {s.cache_mib_max:.2f}", f"{s.peak_rss_mib:.0f}",
               f"{s.rss_growth_mib:.1f}"]
        row += ([_fmt(s.cuda_peak_mib, 1)] if cuda else []) + [_fmt(s.perplexity, 2), s.note]
        out.append("| " + " | ".join(row) + " |")
    out += [""] + [f"- {line}" for line in context["measures"]] + [""]

    if context.get("ratio"):
        out += ["## Engine vs sliding window with re-computation", ""]
        out += [f"- {r}" for r in context["ratio"]] + [""]
    flat = [(s.label, flatness(runs[s.label])) for s in summaries]
    flat = [(label, f) for label, f in flat if f is not None]
    if flat:
        head = ["method", "ms/token, first quarter", "last quarter", "last / first", "cache MiB min / max",
                "RSS MiB min / max"]
        out += ["## Along the stream", "",
                "Median ms/token over the first and the last quarter of the lines scored after the window "
                "filled (all lines for the dense cache); the cache's size and the process RSS over those "
                "lines.", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for label, (first, last, lo, hi, rss_lo, rss_hi) in flat:
            cells = [label, _fmt(first), _fmt(last), f"{last / first:.2f}", f"{lo:.2f} / {hi:.2f}",
                     f"{rss_lo:.0f} / {rss_hi:.0f}"]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out += [f"Plot: `{context['plot']}`: latency per token and cache memory against position in the stream.",
            ""]
    return "\n".join(out)


def plot(runs: dict[str, dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    for label, run in runs.items():
        position = np.asarray(run["position"])
        per_token = per_token_ms(run)
        cache_mib = np.asarray(run["cache_bytes"]) / MIB
        if run["spec"].get("sampled_lines") is not None:  # a few lines: show each one
            top.plot(position, per_token, "o", markersize=4, label=label)
            bottom.plot(position, cache_mib, "o", markersize=4, label=label)
        else:
            top.plot(position, _rolling_median(per_token, 51), linewidth=1.2, label=label)
            bottom.plot(position, cache_mib, linewidth=1.2, label=label)
    top.set_yscale("log")
    top.set_ylabel("ms per token (rolling median of 51 lines)")
    top.set_title(title)
    top.legend(fontsize=8)
    bottom.set_yscale("log")
    bottom.set_ylabel("cache MiB (nbytes)")
    bottom.set_xlabel("position in the stream (tokens)")
    for ax in (top, bottom):
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _rolling_median(x: np.ndarray, width: int) -> np.ndarray:
    if len(x) < width:
        return x
    half = width // 2
    padded = np.pad(x, half, mode="edge")
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, width), axis=1)
