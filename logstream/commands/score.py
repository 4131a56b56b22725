"""``logstream score FILE...``: score log files offline through the streaming engine.

Lines are replayed in file order; each file is a stream unless ``scoring.stream_key`` (or
``--stream-key``) keys streams inside lines. Prints anomalies (or every line with ``--all``),
as text or JSON lines.
"""

from __future__ import annotations

import json
import re
import sys

from ..keys import key_of
from . import add_format_argument


def add_arguments(p):
    add_format_argument(p)
    p.add_argument("files", nargs="+", help="log files, read in order")
    p.add_argument("--stream-key", help="regex keying streams inside lines (group 1 or whole match)")
    p.add_argument("--all", action="store_true", help="print every line's score, not only anomalies")
    p.add_argument("--json", action="store_true", help="JSON lines output")
    p.add_argument("--batch", type=int, default=64, help="lines per forward pass")


def run(args, settings) -> int:
    from ..scoring.explain import Explainer
    from ..scoring.scorer import load_scorer

    import torch

    torch.set_num_threads(settings.model.torch_threads())
    key_pattern = args.stream_key or settings.scoring.stream_key
    key_re = re.compile(key_pattern) if key_pattern else None
    scorer = load_scorer(settings.model.path, settings.model.device, settings.model.dtype,
                         settings.cache.engine_config(), threshold=settings.scoring.threshold,
                         canonicalizer=settings.parsing.canonicalizer(args.format),
                         adaptive=settings.scoring.adaptive_thresholds())
    explainer = Explainer(scorer)
    flagged = total = 0

    def emit(batch):
        nonlocal flagged, total
        for (stream, line, where), scored in zip(batch, scorer.score([(s, l) for s, l, _ in batch])):
            total += 1
            flagged += scored.is_anomaly
            if not (args.all or scored.is_anomaly):
                continue
            summary = explainer.explain(scored).summary if scored.is_anomaly else ""
            if args.json:
                print(json.dumps({"where": where, "stream": stream, "score": round(scored.score, 4),
                                  "threshold": scored.threshold, "anomaly": scored.is_anomaly,
                                  "line": line, "explanation": summary}))
            else:
                mark = "ALERT" if scored.is_anomaly else "     "
                print(f"{mark} {scored.score:7.3f} {where} {line}" + (f"\n      {summary}" if summary else ""))

    batch = []
    for path in args.files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, raw in enumerate(f, 1):
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                key = key_of(key_re, line) if key_re else None
                stream = key if key is not None else path
                batch.append((stream, line, f"{path}:{number}"))
                if len(batch) >= args.batch:
                    emit(batch)
                    batch = []
    if batch:
        emit(batch)
    print(f"{flagged} of {total} lines over threshold", file=sys.stderr)
    return 0
