"""Judge an onboarding run's recorded scores again with the adaptive thresholds as the code stands now.

The model's scores do not depend on the adaptive rules, so a change to a rule can be measured on every
corpus in seconds instead of a full run each (``benchmarks/onboarding.py --dump FILE`` records each
line's score, the model's own threshold and the line's reading). The lines are judged through
``LineScorer.judge``, the service's code path, with fresh adaptive thresholds, as ``onboarding.py``'s
own replay does (its report says that replay reproduces every decision of the run).

    python benchmarks/onboarding_replay.py DUMP [DUMP ...] [--changes N] [--reread [--generic-formats]]
        [--feedback-after LINES --report FILE]

``--reread``: each line is read again by the reader as the code now reads it (its format, level and masked
text), and its adaptive source is the one the service would give it now (``LineScorer.source_of``: a
stream's format), for a change to the reader, or a dump recorded before one. Prints, per source from the
2,000th line on, false alerts per 1,000 normal lines and recall, as the dump recorded them and as judged
now, and up to N decisions that changed. ``--generic-formats``: the reader knows only the formats that
describe no one program (json, logfmt, syslog, iso_prefix; other lines are read whole), as a program whose
format logstream does not know yet is read: what a new user's first run gets from the reader.

``--feedback-after LINES``: judged a second time with an operator who marks each false alert normal that
many lines of the run after it was raised (through ``LineScorer.mark_read_normal``, what ``logstream
feedback ALERT_ID normal`` does to the thresholds), for every corpus at once; ``--report FILE`` writes the
table (``benchmarks/results/onboarding_feedback.md``). ``onboarding.py``'s own operator table marks each
one as soon as its batch is scored, on its one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, deque
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cache_bench_setup import cpu_name
from onboarding import GOAL_FROM_LINE, Line, tally

from logstream.canonical import Canonicalizer
from logstream.canonical.canonicalizer import PARSERS, CanonicalLine
from logstream.config import Settings
from logstream.scoring.masking import LineMasker
from logstream.scoring.scorer import LineScore, LineScorer

BATCH = 64
GENERIC_FORMATS = ("json", "logfmt", "syslog", "iso_prefix")  # formats that describe no one program


def load_dump(path: Path) -> tuple[list[dict], list[Line]]:
    """A recorded run (``onboarding.py --dump``): its records, and its lines as ``tally`` counts them."""
    with path.open() as lines:
        records = [json.loads(line) for line in lines]
    if records and "calibrated" not in records[0]:
        raise SystemExit(f"{path}: recorded before dumps kept the model's own threshold; run onboarding.py "
                         "--dump again")
    return records, [Line(r["source"], r["text"], r["position"], r["error"], r["event"]) for r in records]


def reread(records: list[dict], generic: bool = False) -> Canonicalizer:
    """Read each record's line again, in place, as the reader now reads it; returns the reader (it knows each
    stream's format). ``generic``: a reader that knows only GENERIC_FORMATS."""
    parsers = tuple(p for p in PARSERS if p.name in GENERIC_FORMATS) if generic else PARSERS
    canonicalizer, masker = Canonicalizer(parsers=parsers), LineMasker()
    for record in records:
        canonical = canonicalizer.read(record["source"], record["text"])
        record["canonical"], record["masked"] = asdict(canonical), masker(canonical.text)
    return canonicalizer


def replay(records: list[dict], reader: Canonicalizer | None = None, feedback_after: int | None = None,
           clicks: Counter | None = None) -> list[bool]:
    """Each line's decision, judged again from a fresh start; with the ``reader`` that read the records again
    (``reread``), each line's adaptive source as the service would now give it. ``feedback_after``: an
    operator marks each false alert normal (``LineScorer.mark_read_normal``, what ``logstream feedback``
    does to the thresholds) once that many more lines have come, counted per source in ``clicks`` (and
    those from the goal's line on under (source, "late"))."""
    settings = Settings()
    if reader is not None:
        judge = SimpleNamespace(adaptive=settings.scoring.adaptive_thresholds(), canonicalizer=reader)
        judge.source_of = lambda stream, canonical: LineScorer.source_of(judge, stream, canonical)
    else:
        sources = {(r["source"], r["canonical"]["format"] if r["canonical"] else None): r["adaptive_source"]
                   for r in records}
        judge = SimpleNamespace(adaptive=settings.scoring.adaptive_thresholds(),
                                source_of=lambda stream, canonical: sources[(stream, canonical.format if canonical else None)])
    empty = torch.empty(0)
    alerts: list[bool] = []
    marks: deque = deque()  # (the line from which on it is marked, the record)
    for at in range(0, len(records), BATCH):
        while marks and marks[0][0] <= at:
            record = marks.popleft()[1]
            LineScorer.mark_read_normal(judge, record["source"], CanonicalLine(**record["canonical"]),
                                        record["masked"], record["score"])
        batch = records[at:at + BATCH]
        lines = [LineScore(r["source"], r["masked"], [], empty, empty, 0, r["score"], r["calibrated"], True,
                           canonical=CanonicalLine(**r["canonical"]) if r["canonical"] else None) for r in batch]
        LineScorer.judge(judge, lines)
        for offset, (record, line) in enumerate(zip(batch, lines)):
            alerts.append(line.is_anomaly)
            if feedback_after is not None and line.is_anomaly and not record["error"] and record["canonical"]:
                marks.append((at + offset + feedback_after, record))
                if clicks is not None:
                    clicks[record["source"]] += 1
                    clicks[record["source"], "late"] += record["position"] >= GOAL_FROM_LINE
    return alerts


def meets_goal(normal: int, false_alerts: int, events: int, caught: int) -> bool:
    """The issue's per-source goal: at most 1 false alert per 1,000 normal lines, recall at least 0.9."""
    return 1000 * false_alerts / max(normal, 1) <= 1 and caught / max(events, 1) >= 0.9


def feedback_report(rows: list[tuple], args) -> str:
    """Markdown: per source, the judgement now without and with the simulated operator's marks."""
    out = ["# Onboarding with an operator's feedback: replays of recorded runs", "", "```",
           "python benchmarks/onboarding_replay.py " + " ".join(sys.argv[1:]), "```", "",
           f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({cpu_name()}, {os.cpu_count()} cores). Each "
           "run's recorded scores (`onboarding.py --dump`) judged again through `LineScorer.judge` with every line "
           "read again as the service now reads it, from a fresh start; once without feedback, once with an "
           f"operator who marks each false alert normal {args.feedback_after} lines of the run (all its sources) after "
           "it was raised "
           "(`LineScorer.mark_read_normal`: what `logstream feedback ALERT_ID normal` does to the thresholds; the "
           "fine-tuning sample the service also gives the line is left out, and the scores are the recorded "
           "ones). Clicks: false alerts marked, from the source's first line on (the service groups a stream's "
           "alerts of one pattern, so an operator marks fewer). False alerts per 1,000 normal lines and recall "
           f"on the injected events from the {GOAL_FROM_LINE:,}th line of each source on; the goal: at most 1 and "
           "at least 0.9.", "",
           "| run | source | normal lines | false / 1k | recall | with feedback: false / 1k | recall | clicks | "
           f"clicks from the {GOAL_FROM_LINE:,}th line |", "|---|---|---|---|---|---|---|---|---|"]
    totals = Counter()
    for run, source, (n, f, e, c), (_, f2, _, c2), clicks, late in rows:
        out.append(f"| {run} | {source} | {n:,} | {1000 * f / max(n, 1):.1f} | {c / max(e, 1):.2f} ({c}/{e}) | "
                   f"{1000 * f2 / max(n, 1):.1f} | {c2 / max(e, 1):.2f} ({c2}/{e}) | {clicks} | {late} |")
        totals.update(normal=n, fa=f, fa2=f2, events=e, caught=c, caught2=c2, clicks=clicks, late=late,
                      met=meets_goal(n, f, e, c), met2=meets_goal(n, f2, e, c2))
    t = totals
    out += ["", f"In all, {len(rows)} sources: false alerts {t['fa']:,} -> {t['fa2']:,} with feedback, events caught "
            f"{t['caught']:,} -> {t['caught2']:,} of {t['events']:,}, sources meeting the goal {t['met']} -> "
            f"{t['met2']}, for {t['clicks']:,} false alerts marked ({t['late']:,} of them from the {GOAL_FROM_LINE:,}th "
            "line of their source on)."]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dumps", nargs="+", type=Path)
    p.add_argument("--changes", type=int, default=12, help="decisions that changed to list, per dump")
    p.add_argument("--wrong", metavar="SOURCE", help="list what is wrong now on this source from the goal's line "
                   "on: each line of a missed event, each false alert")
    p.add_argument("--reread", action="store_true", help="read each line again as the reader now reads it, and "
                   "give it the adaptive source the service now would")
    p.add_argument("--generic-formats", action="store_true", help="with --reread: a reader that knows only "
                   f"{', '.join(GENERIC_FORMATS)} (a first run on programs whose formats it does not know)")
    p.add_argument("--feedback-after", type=int, metavar="LINES", help="judge again with an operator who marks "
                   "each false alert normal this many lines after it was raised (needs --reread)")
    p.add_argument("--report", type=Path, help="with --feedback-after: write the markdown report here")
    args = p.parse_args(argv)
    if args.feedback_after is not None and not args.reread:
        p.error("--feedback-after needs --reread (the marks go through the service's reading of each line)")
    if args.generic_formats and not args.reread:
        p.error("--generic-formats needs --reread")
    rows = []
    totals: Counter = Counter()
    for path in args.dumps:
        records, stream = load_dump(path)
        before = [r["alert"] for r in records]
        reader = reread(records, args.generic_formats) if args.reread else None
        now = replay(records, reader)
        was, judged = tally(stream, before), tally(stream, now)
        clicks: Counter = Counter()
        marked = (tally(stream, replay(records, reader, args.feedback_after, clicks))
                  if args.feedback_after is not None else None)
        print(f"\n{path}: {sum(a != b for a, b in zip(before, now))} of {len(records):,} decisions changed")
        print(f"{'source':<18} {'false/1k was':>13} {'now':>6} {'recall was':>14} {'now':>14}"
              + (f" {'with feedback: false/1k':>24} {'recall':>14} {'clicks':>7}" if marked else ""))
        for source in sorted(judged):
            n0, f0, e0, c0 = was[source].after_goal()
            n1, f1, e1, c1 = judged[source].after_goal()
            line = (f"{source:<18} {1000 * f0 / max(n0, 1):>13.1f} {1000 * f1 / max(n1, 1):>6.1f} "
                    f"{c0 / max(e0, 1):>8.2f} ({c0}/{e0}) {c1 / max(e1, 1):>6.2f} ({c1}/{e1})")
            if marked:
                n2, f2, e2, c2 = marked[source].after_goal()
                line += f" {1000 * f2 / max(n2, 1):>24.1f} {c2 / max(e2, 1):>6.2f} ({c2}/{e2}) {clicks[source]:>7}"
                rows.append((path.stem, source, (n1, f1, e1, c1), (n2, f2, e2, c2), clicks[source],
                             clicks[source, "late"]))
            print(line)
            totals.update(sources=1, normal=n1, false_alerts=f1, events=e1, caught=c1,
                          meeting_goal=meets_goal(n1, f1, e1, c1))
        shown = 0
        for record, a, b in zip(records, before, now):
            if a != b and shown < args.changes:
                shown += 1
                what = record["error"] or "normal"
                print(f"  {'+' if b else '-'} {record['source']} line {record['position']:,} ({what}): "
                      f"{record['masked'][:150]}")
        if args.wrong:
            caught = {r["event"] for r, alerted in zip(records, now) if r["error"] and alerted}
            for record, alerted in zip(records, now):
                if record["source"] != args.wrong or record["position"] < GOAL_FROM_LINE:
                    continue
                if record["error"] and record["event"] not in caught:
                    print(f"  missed {record['error']} event {record['event']} line {record['position']:,}: "
                          f"{record['masked'][:160]}")
                elif alerted and not record["error"]:
                    print(f"  false alert line {record['position']:,}: {record['masked'][:160]}")
    t = totals
    print(f"\nIn all, from the {GOAL_FROM_LINE:,}th line of each source on, as judged now: {t['false_alerts']:,} false "
          f"alerts in {t['normal']:,} normal lines, {t['caught']:,} of {t['events']:,} events caught, "
          f"{t['meeting_goal']} of {t['sources']} sources meeting the goal")
    if args.report and rows:
        args.report.write_text(feedback_report(rows, args))
        print(args.report.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
