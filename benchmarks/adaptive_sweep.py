"""What each adaptive-threshold setting trades: recorded onboarding runs judged again with one setting changed
at a time, false alerts against events caught, every corpus at once.

The model's scores do not depend on the adaptive rules, so each run's recorded decisions (``onboarding.py
--dump FILE``) are judged again through the service's code path (``onboarding_replay``: every line read again
as the reader now reads it, ``LineScorer.judge`` from a fresh start) once with the defaults and once per
changed setting. For a user deciding whether to turn a knob, and for a developer before changing a default:
what it costs in events missed for the false alerts it saves, and on which sources.

    python benchmarks/onboarding.py --data benchmarks/data/CORPUS --seed 0 --max-lines 12000 --events 30 \
        --report CORPUS --out SCRATCH --dump DUMPS/CORPUS.jsonl          # once per corpus (about 5 min each)
    python benchmarks/adaptive_sweep.py DUMPS/*.jsonl [--set NAME=V1,V2 ...] [--generic-formats]
        [--jobs 2] [--out benchmarks/results/adaptive_sweep.md]

``--set``: the settings of ``scoring.adaptive`` to try (default: SWEEP below), each value on its own with the
other settings at their defaults. Figures from the 2,000th line of each source on (the issue's goal: at most 1
false alert per 1,000 normal lines and recall at least 0.9 per source).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cache_bench_setup import cpu_name
from onboarding import tally
from onboarding_replay import load_dump, meets_goal, replay, reread

from logstream.config import AdaptiveSettings

ENV = "LOGSTREAM_SCORING__ADAPTIVE__"
# one knob at a time: how many lines of a burst alert, how soon a problem turns routine (lately, for good, at
# INFO), how rare a level must be to be news
SWEEP = {
    "episode_alerts": ["1", "2"],
    "later_episode_alerts": ["2", "3"],
    "routine_episodes": ["3"],
    "routine_window": ["2000"],
    "info_routine_window": ["0", "5000"],
    "problem_routine_episodes": ["10"],
    "info_routine_episodes": ["5"],
    "rare_level_share": ["0.002"],
}


def judged(dumps: list[str], setting: tuple[str, str] | None, generic: bool) -> dict:
    """Per source (run, source): (normal lines, false alerts, events, caught) from the goal's line on, with
    ``setting`` (name, value) changed from its default."""
    for name in [name for name in os.environ if name.startswith(ENV)]:  # a worker process runs several settings
        del os.environ[name]
    if setting is not None:
        os.environ[ENV + setting[0].upper()] = setting[1]
    out = {}
    for path in dumps:
        records, stream = load_dump(Path(path))
        alerts = replay(records, reread(records, generic))
        for source, counts in tally(stream, alerts).items():
            out[Path(path).stem, source] = counts.after_goal()
    return out


def totals(per_source: dict) -> Counter:
    t = Counter()
    for n, f, e, c in per_source.values():
        t.update(normal=n, false_alerts=f, events=e, caught=c, met=meets_goal(n, f, e, c))
    return t


def report(dumps: list[str], results: dict, args, seconds: float) -> str:
    base = results[None]
    b = totals(base)
    out = ["# What each adaptive setting trades: recorded onboarding runs judged again", "", "```",
           "python benchmarks/adaptive_sweep.py " + " ".join(sys.argv[1:]), "```", "",
           f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds / 60:.1f} min ({cpu_name()}, "
           f"{os.cpu_count()} cores, {args.jobs} jobs). {len(dumps)} recorded runs (`benchmarks/onboarding.py --dump`, "
           f"one per corpus under `benchmarks/data/`), {len(base)} sources; each judged again through "
           "`LineScorer.judge` with every line read again as the service reads it"
           + (" by a reader that knows only the generic formats (a first run on programs it does not know)"
              if args.generic_formats else "")
           + ", once with the defaults and once per changed setting of `scoring.adaptive` (the others at their "
           "defaults). From the 2,000th line of each source on; a source meets the goal with at most 1 false alert "
           "per 1,000 normal lines and recall at least 0.9.", "",
           ("| setting | value | false alerts | per 1,000 normal lines | events caught | sources meeting the goal | "
            "sources that change |"), "|---|---|---|---|---|---|---|",
           (f"| (defaults) | | {b['false_alerts']:,} | {1000 * b['false_alerts'] / max(b['normal'], 1):.2f} | "
            f"{b['caught']:,} of {b['events']:,} | {b['met']} of {len(base)} | |")]
    for (name, value), per_source in ((k, v) for k, v in results.items() if k is not None):
        t = totals(per_source)
        changed = []
        for key, counts in per_source.items():
            n0, f0, e0, c0 = base[key]
            n1, f1, e1, c1 = counts
            if (f0, c0) != (f1, c1):
                changed.append(f"{key[1]} {1000 * f0 / max(n0, 1):.1f}/{c0 / max(e0, 1):.2f} -> "
                               f"{1000 * f1 / max(n1, 1):.1f}/{c1 / max(e1, 1):.2f}")
        default = AdaptiveSettings.model_fields[name].default
        out.append(f"| `{name}` (default {default}) | {value} | {t['false_alerts'] - b['false_alerts']:+,} | "
                   f"{1000 * t['false_alerts'] / max(t['normal'], 1):.2f} | {t['caught'] - b['caught']:+,} | "
                   f"{t['met'] - b['met']:+} | {'; '.join(changed[:8]) + (' ...' if len(changed) > 8 else '')} |")
    out += ["", ("False alerts, events caught and sources meeting the goal as changes from the defaults' row; a "
                 "source that changes: false alerts per 1,000 / recall, with the defaults -> with the setting.")]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dumps", nargs="+")
    p.add_argument("--set", action="append", metavar="NAME=V1,V2", help="a setting of scoring.adaptive and the "
                   "values to try (repeat; default: every setting in SWEEP)")
    p.add_argument("--generic-formats", action="store_true", help="read with the generic formats only")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, help="write the markdown report here (else print it)")
    args = p.parse_args(argv)
    sweep = SWEEP
    if args.set:
        sweep = {}
        for item in args.set:
            name, _, values = item.partition("=")
            if name not in AdaptiveSettings.model_fields or not values:
                p.error(f"--set {item!r}: expected NAME=V1,V2 with NAME a setting of scoring.adaptive")
            sweep[name] = values.split(",")
    settings = [None] + [(name, value) for name, values in sweep.items() for value in values]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {setting: pool.submit(judged, args.dumps, setting, args.generic_formats) for setting in settings}
        results = {}
        for setting, future in futures.items():
            results[setting] = future.result()
            print(f"{setting or 'defaults'}: {dict(totals(results[setting]))}", file=sys.stderr, flush=True)
    text = report(args.dumps, results, args, time.perf_counter() - start)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
