"""Judge an onboarding run's recorded scores again with the adaptive thresholds as the code stands now.

The model's scores do not depend on the adaptive rules, so a change to a rule can be measured on every
corpus in seconds instead of a full run each (``benchmarks/onboarding.py --dump FILE`` records each
line's score, the model's own threshold and the line's reading). The lines are judged through
``LineScorer.judge``, the service's code path, with fresh adaptive thresholds, as ``onboarding.py``'s
own replay does (its report says that replay reproduces every decision of the run).

    python benchmarks/onboarding_replay.py DUMP [DUMP ...] [--changes N] [--reread]

``--reread``: each line is read again by the reader as the code now reads it (its format, level and masked
text), and its adaptive source is the one the service would give it now (``LineScorer.source_of``: a
stream's format), for a change to the reader, or a dump recorded before one. Prints, per source from the
2,000th line on, false alerts per 1,000 normal lines and recall, as the dump recorded them and as judged
now, and up to N decisions that changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from onboarding import GOAL_FROM_LINE, Line, tally

from logstream.canonical import Canonicalizer
from logstream.canonical.canonicalizer import CanonicalLine
from logstream.config import Settings
from logstream.scoring.masking import LineMasker
from logstream.scoring.scorer import LineScore, LineScorer

BATCH = 64


def reread(records: list[dict]) -> Canonicalizer:
    """Read each record's line again, in place, as the reader now reads it; returns the reader (it knows each
    stream's format)."""
    canonicalizer, masker = Canonicalizer(), LineMasker()
    for record in records:
        canonical = canonicalizer.read(record["source"], record["text"])
        record["canonical"], record["masked"] = asdict(canonical), masker(canonical.text)
    return canonicalizer


def replay(records: list[dict], reader: Canonicalizer | None = None) -> list[bool]:
    """Each line's decision, judged again from a fresh start; with the ``reader`` that read the records again
    (``reread``), each line's adaptive source as the service would now give it."""
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
    alerts = []
    for at in range(0, len(records), BATCH):
        lines = [LineScore(r["source"], r["masked"], [], empty, empty, 0, r["score"], r["calibrated"], True,
                           canonical=CanonicalLine(**r["canonical"]) if r["canonical"] else None)
                 for r in records[at:at + BATCH]]
        LineScorer.judge(judge, lines)
        alerts += [line.is_anomaly for line in lines]
    return alerts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dumps", nargs="+", type=Path)
    p.add_argument("--changes", type=int, default=12, help="decisions that changed to list, per dump")
    p.add_argument("--wrong", metavar="SOURCE", help="list what is wrong now on this source from the goal's line "
                   "on: each line of a missed event, each false alert")
    p.add_argument("--reread", action="store_true", help="read each line again as the reader now reads it, and "
                   "give it the adaptive source the service now would")
    args = p.parse_args(argv)
    for path in args.dumps:
        records = [json.loads(line) for line in path.open()]
        if records and "calibrated" not in records[0]:
            raise SystemExit(f"{path}: recorded before dumps kept the model's own threshold; run onboarding.py "
                             "--dump again")
        stream = [Line(r["source"], r["text"], r["position"], r["error"], r["event"]) for r in records]
        before = [r["alert"] for r in records]
        now = replay(records, reread(records) if args.reread else None)
        was, judged = tally(stream, before), tally(stream, now)
        print(f"\n{path}: {sum(a != b for a, b in zip(before, now))} of {len(records):,} decisions changed")
        print(f"{'source':<18} {'false/1k was':>13} {'now':>6} {'recall was':>14} {'now':>14}")
        for source in sorted(judged):
            n0, f0, e0, c0 = was[source].after_goal()
            n1, f1, e1, c1 = judged[source].after_goal()
            print(f"{source:<18} {1000 * f0 / max(n0, 1):>13.1f} {1000 * f1 / max(n1, 1):>6.1f} "
                  f"{c0 / max(e0, 1):>8.2f} ({c0}/{e0}) {c1 / max(e1, 1):>6.2f} ({c1}/{e1})")
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
    print(f"\n(from the {GOAL_FROM_LINE:,}th line of each source on)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
