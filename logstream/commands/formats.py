"""``logstream formats [FILE ...]``: the log formats logstream reads, and how it reads your files.

Without files: every format recognised out of the box, in the order they are tried. With files:
each file's detected format and, for its first lines, what the model reads (``--lines N``), so a
new user sees at once whether their header was split off the message.
"""

from __future__ import annotations

import itertools

from . import add_format_argument


def add_arguments(p):
    p.add_argument("files", nargs="*", help="log files to read (each file is one stream)")
    p.add_argument("--lines", type=int, default=5, help="lines of each file to show (default 5)")
    add_format_argument(p)


def run(args, settings) -> int:
    from ..canonical import describe_formats

    if not args.files:
        width = max(len(name) for name, _ in describe_formats())
        for name, description in describe_formats():
            print(f"{name:<{width}}  {description}")
        return 0
    canonicalizer = settings.parsing.canonicalizer(args.format)
    for path in args.files:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [raw.rstrip("\r\n") for raw in itertools.islice(f, max(args.lines, settings.parsing.detect_lines))]
        lines = [line for line in lines if line.strip()]
        read = [canonicalizer.read(path, line) for line in lines]
        formats = sorted({r.format for r in read})
        print(f"{path}: {canonicalizer.format_of(path) or ', '.join(formats) or 'empty'}")
        for line, canonical in list(zip(lines, read))[: args.lines]:
            print(f"  line:  {line[:160]}")
            print(f"  reads: {canonical.text[:160]}")
    return 0
