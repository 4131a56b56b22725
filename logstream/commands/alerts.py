"""`logstream alerts`: not built yet (see the open issues)."""


def add_arguments(p):
    pass


def run(args, settings) -> int:
    raise SystemExit("logstream alerts: not available yet")
