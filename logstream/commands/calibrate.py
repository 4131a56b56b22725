"""``logstream calibrate``: set a model's alert thresholds from your own normal logs.

Replays the logs through the streaming engine (as the worker would) and writes thresholds that
meet the target false-alert rate into the model's ``logstream.json``: one for warm streams, one
for streams still warming up. No training: use ``logstream train --from`` to adapt the model too.
The shipped model is never written to: calibrating it writes a copy into the user's models directory
and points the user's configuration at it (``logstream.user_models``).
"""

from __future__ import annotations

from . import add_format_argument


def add_arguments(p):
    add_format_argument(p)
    p.add_argument("--logs", nargs="+", action="extend", required=True, metavar="GLOB",
                   help="normal log files (globs); every line is assumed normal")
    p.add_argument("--model", help="model directory to recalibrate in place (default: model.path; the shipped "
                   "model is copied to your models directory first)")
    p.add_argument("--stream-key", help="regex keying streams inside files; default: scoring.stream_key, "
                   "else one stream per file")
    p.add_argument("--target-false-alert-rate", type=float, default=1e-3)
    p.add_argument("--aggregate", default="mean", choices=["mean", "max", "top3", "excess"])


def run(args, settings) -> int:
    import torch

    from pipelines.calibrate import recalibrate
    from pipelines.corpus import read_corpus

    torch.set_num_threads(settings.model.torch_threads())
    from ..user_models import point_config_at, writable_copy

    corpus = read_corpus(args.logs, stream_key=args.stream_key or settings.scoring.stream_key)
    model_dir = writable_copy(args.model or settings.model.path, "calibrated")
    card = recalibrate(model_dir, corpus, args.target_false_alert_rate, args.aggregate,
                       source=" ".join(args.logs), pins=settings.parsing.pins(args.format))
    cal = card.calibration
    print(f"{model_dir}: threshold {cal.threshold:.3f} (warming up: {cal.warmup_threshold:.3f}) from "
          f"{cal.calibration_lines + cal.calibration_warmup_lines} lines")
    if str(model_dir) != str(args.model or settings.model.path):
        config = point_config_at(model_dir)
        print("the shipped model is left as it is: this is a calibrated copy; "
              + (f"{config} now points model.path at it" if config else
                 f"set model.path (LOGSTREAM_MODEL__PATH={model_dir}) in your configuration to use it"))
    return 0
