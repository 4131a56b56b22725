"""``logstream train``: train (or adapt) the log language model on normal logs.

Mines templates (drain3) for the sink preamble, trains a byte-level BPE tokenizer and a compact
Llama on the logs, calibrates thresholds on held-out lines, and writes a model directory that
``model.path`` can point at. ``--from DIR`` fine-tunes an existing model (keeping its tokenizer).
"""

from __future__ import annotations

from . import add_format_argument


def add_arguments(p):
    add_format_argument(p)
    p.add_argument("--logs", nargs="+", action="extend", metavar="GLOB",
                   help="normal log files to learn from (globs; repeatable)")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--from", dest="init_from", metavar="DIR",
                   help="fine-tune this model instead of training from scratch (e.g. the shipped default)")
    p.add_argument("--stream-key", help="regex keying streams inside files (e.g. 'blk_-?\\d+'); default: per file")
    p.add_argument("--sessions", action="store_true",
                   help="each --stream-key stream is a whole session (an HDFS block's lifecycle, a request, a job): "
                        "the model also learns where sessions end, and the worker scores each session's end")
    p.add_argument("--skip", help="regex of lines to leave out (e.g. known anomalies)")
    p.add_argument("--steps", type=int, help="optimizer steps (default from the training config)")
    p.add_argument("--max-minutes", type=float, help="stop training early after this many minutes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-config", help="YAML with TrainConfig fields (model size, context, ...)")
    p.add_argument("--target-false-alert-rate", type=float, default=1e-3,
                   help="share of held-out normal lines allowed to alert (sets the threshold)")
    p.add_argument("--default-recipe", action="store_true",
                   help="train the shipped default model from sample_logs/ (see pipelines/default_model.py)")


def run(args, settings) -> int:
    import yaml

    from ..user_models import inside_package

    # the shipped model is remade only by its recipe, in a source checkout (never in an installed package)
    if inside_package(args.out) and not (args.default_recipe and not _installed()):
        raise ValueError(f"--out {args.out} is inside the installed logstream package: write your model "
                         "elsewhere (for example ~/.local/share/logstream/models/mine) and point model.path at it")

    from pipelines.corpus import read_corpus
    from pipelines.train import TrainConfig, train_pipeline

    if args.default_recipe:
        from pipelines.default_model import train_default

        train_default(args.out, steps=args.steps, seed=args.seed)
        return 0
    if not args.logs:
        raise ValueError("give --logs GLOB ... (or --default-recipe)")
    overrides = yaml.safe_load(open(args.train_config)) if args.train_config else {}
    cfg = TrainConfig(**overrides, seed=args.seed)
    if args.steps:
        cfg.steps = args.steps
    if args.max_minutes:
        cfg.max_minutes = args.max_minutes
    if args.sessions and not args.stream_key:
        raise ValueError("--sessions needs --stream-key REGEX: the key that names each session (e.g. 'blk_-?\\d+')")
    corpus = read_corpus(args.logs, stream_key=args.stream_key, skip=args.skip, sessions=args.sessions)
    card = train_pipeline(corpus, args.out, cfg, init_from=args.init_from,
                          target_false_alert_rate=args.target_false_alert_rate,
                          description={"logs": args.logs, "stream_key": args.stream_key, "sessions": args.sessions},
                          pins=settings.parsing.pins(args.format))
    cal = card.calibration
    print(f"wrote {args.out}: model {card.model_version}, loss {card.training['final_loss']:.3f}, "
          f"threshold {cal.threshold:.3f} (warming up: {cal.warmup_threshold:.3f})"
          + (f", session ends {cal.end_threshold:.3f}, sessions {cal.session_threshold:.3f} "
             f"(on {cal.calibration_sessions} held-out sessions)" if cal.session_threshold is not None else ""))
    return 0


def _installed() -> bool:
    """Whether logstream runs from an installed package (site-packages), not a source checkout."""
    from ..config import PACKAGE_DIR

    return "site-packages" in PACKAGE_DIR.parts or "dist-packages" in PACKAGE_DIR.parts
