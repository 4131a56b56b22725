"""``logstream score FILE...``: score log files offline through the streaming engine.

Lines are replayed in file order; each file is a stream unless ``scoring.stream_key`` (or
``--stream-key``) keys streams inside lines. Prints anomalies (or every line with ``--all``),
as text or JSON lines.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime

from ..keys import key_of
from . import add_format_argument


def _bound(text: str) -> int | datetime:
    """A line number, or an ISO 8601 time (naive times are UTC)."""
    if text.isdigit():
        return int(text)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a line number or an ISO 8601 time, not {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def line_time(stamp: str | None) -> datetime | None:
    """A line's time stamp as a time, where it is ISO-like; None where the format does not say the year."""
    if not stamp:
        return None
    try:
        value = datetime.fromisoformat(stamp.replace(",", ".").replace(" UTC", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def in_range(number: int, stamp: str | None, since, until) -> tuple[bool, bool]:
    """(inside [since, until], past until) for a line; a line whose time cannot be read is inside."""
    when = line_time(stamp) if isinstance(since, datetime) or isinstance(until, datetime) else None

    def before(bound) -> bool:
        if bound is None:
            return False
        return number < bound if isinstance(bound, int) else (when is not None and when < bound)

    def after(bound) -> bool:
        if bound is None:
            return False
        return number > bound if isinstance(bound, int) else (when is not None and when > bound)

    return not before(since) and not after(until), after(until)


def add_arguments(p):
    add_format_argument(p)
    p.add_argument("files", nargs="+", help="log files, read in order")
    p.add_argument("--normal", nargs="+", default=[], metavar="FILE", help="known-good logs (a healthy period of "
                   "the same sources), read first: every line is learned as normal, whatever it reads as (an ERROR "
                   "that is routine there does not alert later), and none is printed")
    p.add_argument("--stream-key", help="regex keying streams inside lines (group 1 or whole match)")
    p.add_argument("--all", action="store_true", help="print every line's score, not only anomalies")
    p.add_argument("--top", type=int, metavar="N", help="print only the N alerts most over their threshold, "
                   "highest first, at the end")
    p.add_argument("--since", type=_bound, metavar="LINE|TIME", help="print only from this line number (of "
                   "each file) or ISO time on; earlier lines are still read, as context and to learn from")
    p.add_argument("--until", type=_bound, metavar="LINE|TIME", help="print only up to this line number (reading "
                   "stops there) or ISO time")
    p.add_argument("--json", action="store_true", help="JSON lines output")
    p.add_argument("--batch", type=int, default=64, help="lines per forward pass")
    p.add_argument("--no-adapt", dest="adapt", action="store_false",
                   help="no continual fine-tuning (thresholds still adapt, unless scoring.adaptive.enabled is false)")
    p.add_argument("--adapt-store", metavar="DIR", help="keep the model versions fine-tuned on these files here "
                   "(default: a temporary directory, removed at the end)")


def run(args, settings) -> int:
    import tempfile

    import torch

    from ..adapt.online import InlineAdaptation
    from ..config import FormatPin
    from ..adapt.store import ModelStore
    from ..scoring.explain import Explainer
    from ..scoring.scorer import load_scorer

    torch.set_num_threads(settings.model.torch_threads())
    key_pattern = args.stream_key or settings.scoring.stream_key
    key_re = re.compile(key_pattern) if key_pattern else None
    if args.format:  # pinned for the scorer and for fine-tuning rounds alike
        settings = settings.model_copy(update={"parsing": settings.parsing.model_copy(
            update={"formats": [FormatPin(format=args.format), *settings.parsing.formats]})})
    scorer = load_scorer(settings.model.path, settings.model.device, settings.model.dtype,
                         settings.cache.engine_config(), threshold=settings.scoring.threshold,
                         canonicalizer=settings.parsing.canonicalizer(), adaptive=settings.scoring.adaptive_thresholds())
    explainer = Explainer(scorer)
    flagged = total = 0
    top: list[tuple[float, str]] = []
    # the same online learning as the worker: thresholds adapt per source, and rounds of fine-tuning run
    # where the worker would start them (here in line, so the next lines are scored by the new model)
    temporary = tempfile.TemporaryDirectory(prefix="logstream-score-") if args.adapt and not args.adapt_store else None
    adaptation = None
    if args.adapt and settings.adapt.enabled and scorer.adaptive is not None:
        store = ModelStore(args.adapt_store or temporary.name, settings.model.path)
        adaptation = InlineAdaptation(settings, store)

    def show(stream, line, where, scored) -> str:
        summary = explainer.explain(scored).summary if scored.is_anomaly else ""
        if args.json:
            return json.dumps({"where": where, "stream": stream, "score": round(scored.score, 4),
                               "threshold": scored.threshold, "anomaly": scored.is_anomaly,
                               "threshold_how": scored.verdict.how if scored.verdict else None,
                               "model_version": scorer.model_version, "line": line, "explanation": summary})
        mark = "ALERT" if scored.is_anomaly else "     "
        return f"{mark} {scored.score:7.3f} {where} {line}" + (f"\n      {summary}" if summary else "")

    def emit(batch, known_normal: bool = False):
        nonlocal flagged, total, scorer, explainer
        entries = [(s, l) for s, l, _, _ in batch]
        results = scorer.score(entries, known_normal)
        for (stream, line, where, number), scored in zip(batch, results):
            if known_normal:
                continue
            inside, _ = in_range(number, scored.canonical.timestamp if scored.canonical else None, args.since,
                                 args.until)
            if not inside:
                continue
            total += 1
            flagged += scored.is_anomaly
            if args.top and scored.is_anomaly:
                # most surprising first: by the margin over the threshold in force (the score where none)
                margin = scored.score - (scored.threshold if scored.threshold is not None else 0.0)
                top.append((margin, show(stream, line, where, scored)))
            elif not args.top and (args.all or scored.is_anomaly):
                print(show(stream, line, where, scored))
        if adaptation is not None:
            before = scorer
            scorer = adaptation.after_batch(scorer, entries, results)
            if scorer is not before:
                explainer = Explainer(scorer)
                print(f"fine-tuned on {', '.join(adaptation.rounds[-1]['sources'])}: now model "
                      f"{scorer.model_version}", file=sys.stderr)

    def read(paths: list[str], known_normal: bool = False) -> None:
        batch = []
        for path in paths:
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, raw in enumerate(f, 1):
                    line = raw.rstrip("\r\n")
                    if not line.strip():
                        continue
                    if not known_normal and isinstance(args.until, int) and number > args.until:
                        break
                    key = key_of(key_re, line) if key_re else None
                    stream = key if key is not None else path
                    batch.append((stream, line, f"{path}:{number}", number))
                    if len(batch) >= args.batch:
                        emit(batch, known_normal)
                        batch = []
        if batch:
            emit(batch, known_normal)

    try:
        read(args.normal, known_normal=True)
        read(args.files)
    finally:
        if temporary is not None:
            temporary.cleanup()
    for _, text in sorted(top, key=lambda t: -t[0])[: args.top or 0]:
        print(text)
    rounds = f"; {len(adaptation.rounds)} fine-tuning rounds" if adaptation and adaptation.rounds else ""
    print(f"{flagged} of {total} lines alerted{rounds}", file=sys.stderr)
    return 0
