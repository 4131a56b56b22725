"""`logstream eval SPEC...`: evaluate the detectors on labeled log sets described by YAML specs."""

from __future__ import annotations

import sys
from functools import partial


def add_arguments(p):
    p.add_argument("specs", nargs="+", metavar="DATASET_SPEC", help="YAML dataset spec(s), e.g. "
                   "benchmarks/specs/bgl_chrono.yaml")
    p.add_argument("--out", default="benchmarks/results",
                   help="directory for <spec name>.md and its PNG plots (default: %(default)s)")
    p.add_argument("--detectors", nargs="+", metavar="NAME", help="only these detectors (default: all)")
    p.add_argument("--seeds", nargs="+", type=int, metavar="SEED",
                   help="seeds for random splits, replacing the spec's (other splits have none)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars at all (training and scoring "
                   "bars included)")
    p.add_argument("--threads", type=int, metavar="N", help="torch CPU threads (default: model.threads)")
    p.add_argument("--lm-steps", type=int, default=300, help="training steps of the model trained per split")
    p.add_argument("--model", metavar="DIR", help="score with this model (e.g. the shipped one) instead of "
                   "training one per split; thresholds are still set on each split's calibration lines")
    p.add_argument("--lm-aggregates", nargs="+", metavar="AGG",
                   help="line-score aggregates to report for lm-stream (default: all of mean max top3 excess)")


def _factory(settings, args, spec, split_name):
    from logstream.evaluation.detectors import build_detectors

    return build_detectors(spec, settings, args)


def run(args, settings) -> int:
    if args.no_progress:
        from logstream.progress import silence_progress_bars

        silence_progress_bars()
    from logstream.evaluation.harness import run_evaluation
    from logstream.evaluation.report import markdown
    from logstream.evaluation.spec import load_spec

    specs = [load_spec(path) for path in args.specs]  # check every spec before running any
    import torch

    torch.set_num_threads(args.threads or settings.model.torch_threads())
    for spec in specs:
        if args.seeds:
            spec = spec.with_seeds(args.seeds)
        report = run_evaluation(spec, partial(_factory, settings, args), args.out,
                                progress=not args.no_progress and sys.stderr.isatty())
        print(markdown(report))
        print(f"wrote {report.markdown_path} and {', '.join(str(p) for p in report.plot_paths)}\n")
    return 0
