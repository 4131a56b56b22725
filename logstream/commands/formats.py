"""``logstream formats [FILE ...]``: the log formats logstream reads, and how it reads your files.

Without files: every format recognised out of the box, in the order they are tried. With files:
each file's detected format and, for its first lines, what the model reads (``--lines N``), so a
new user sees at once whether their header was split off the message.
"""

from __future__ import annotations

import itertools

from . import add_format_argument

LEARN_LINES = 200


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
            # enough lines for the stream to learn where its level or status is (``Canonicalizer.columns_of``)
            lines = [raw.rstrip("\r\n") for raw in itertools.islice(f, max(args.lines, settings.parsing.detect_lines,
                                                                             LEARN_LINES))]
        lines = [line for line in lines if line.strip()]
        read = [canonicalizer.read(path, line) for line in lines]
        formats = sorted({r.format for r in read})
        columns = canonicalizer.columns_of(path)
        learned = "".join(f"; its {name} is token {index + 1} of the message" for name, index in columns.items())
        print(f"{path}: {canonicalizer.format_of(path) or ', '.join(formats) or 'empty'}{learned}")
        for line in lines[: args.lines]:  # read again, as the stream reads them now that it has learned them
            print(f"  line:  {line[:160]}")
            print(f"  reads: {canonicalizer.read(path, line).text[:160]}")
    return 0
