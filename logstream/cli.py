"""The one command line: ``logstream <command> ...``.

Each command lives in ``logstream/commands/<name>.py`` with ``add_arguments(parser)`` and
``run(args, settings) -> int``; they are imported only when used, so ``logstream --help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

COMMANDS = {
    "demo": "embedded demo: broker, worker and synthetic logs in one process, alerts shown live",
    "worker": "the Faust worker: score the input topic, publish alerts",
    "tail": "tail log files into the input topic",
    "synth": "write synthetic multi-service logs with labeled injected anomalies",
    "alerts": "follow the alerts topic and print alerts",
    "receive": "a webhook receiver that verifies and prints logstream's and Alertmanager's deliveries",
    "broker": "run the embedded Kafka-compatible broker in the foreground",
    "score": "score log files offline through the streaming engine",
    "train": "mine templates, train the tokenizer and the model, calibrate thresholds",
    "calibrate": "set a model's alert thresholds from normal logs (no training)",
    "eval": "evaluate the scorer and baselines on a labeled log set (YAML spec)",
    "model": "list the model versions continual fine-tuning made, or roll back to one",
    "feedback": "mark an alert as a false positive: similar lines stop alerting",
    "formats": "list the log formats logstream reads, or show how it reads your files",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="logstream", description="logstream: real-time log anomaly detection")
    parser.add_argument("--config", help="YAML settings file (default: $LOGSTREAM_CONFIG)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _command_module(name).add_arguments(p)
    return parser


def _command_module(name: str):
    return importlib.import_module(f"logstream.commands.{name}")


def main(argv: list[str] | None = None) -> int:
    from .config import Settings

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.load(args.config)
        return int(_command_module(args.command).run(args, settings) or 0)
    except KeyboardInterrupt:
        return 130
    except (FileNotFoundError, ValueError) as exc:  # configuration and input errors: no traceback
        print(f"logstream {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
