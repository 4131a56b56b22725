"""Training corpora: normal log lines grouped into streams, in order.

A stream is what shares one context at serving time (a file, a host, an HDFS block). Lines are
grouped by a regex key (its first match, or group 1) when one is given, else by file.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path

from logstream.keys import key_of


@dataclass
class Corpus:
    streams: dict[str, list[str]] = field(default_factory=dict)
    # streams that are whole sessions (an HDFS block from allocation to deletion, a request, a job):
    # the model is trained to end them with an end-of-session token
    sessions: set[str] = field(default_factory=set)

    def add(self, stream: str, line: str) -> None:
        self.streams.setdefault(stream, []).append(line)

    def extend(self, other: "Corpus") -> "Corpus":
        for stream, lines in other.streams.items():
            self.streams.setdefault(stream, []).extend(lines)
        self.sessions |= other.sessions
        return self

    @property
    def n_lines(self) -> int:
        return sum(len(v) for v in self.streams.values())

    def lines(self):
        for lines in self.streams.values():
            yield from lines

    def canonical(self, canonicalizer) -> "Corpus":
        """The same streams with each line replaced by its canonical text (what the model reads)."""
        return Corpus({stream: [canonicalizer.read(stream, line).text for line in lines]
                       for stream, lines in self.streams.items()}, set(self.sessions))

    def split(self, holdout_fraction: float, min_stream_lines: int = 40) -> tuple["Corpus", "Corpus"]:
        """(train, held-out): every 1/fraction-th short stream whole, and the tail of each long one.

        Deterministic. Held-out lines calibrate thresholds; tails of long streams are scored after
        their training part has been fed as context, so they measure warm streams.
        """
        train, held = Corpus(sessions=set(self.sessions)), Corpus(sessions=set(self.sessions))
        every = max(1, round(1 / holdout_fraction)) if holdout_fraction > 0 else 0
        for i, (stream, lines) in enumerate(sorted(self.streams.items())):
            if holdout_fraction <= 0:
                train.streams[stream] = list(lines)
            elif len(lines) < min_stream_lines or stream in self.sessions:  # a session is never cut
                (held if every and i % every == every - 1 else train).streams[stream] = list(lines)
            else:
                cut = len(lines) - max(1, int(len(lines) * holdout_fraction))
                train.streams[stream] = lines[:cut]
                held.streams[stream] = lines[cut:]
        return train, held


def expand(patterns: list[str]) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise FileNotFoundError(f"no file matches {pattern!r}")
        files += [Path(m) for m in matches if Path(m).is_file()]
    return files


def read_corpus(patterns: list[str], stream_key: str | None = None, skip: str | None = None,
                strip: str | None = None, sessions: bool = False) -> Corpus:
    """Lines of the files matching ``patterns``.

    ``stream_key``: regex keying streams inside a file (lines without a match stay in the file's stream).
    ``skip``: regex of lines to leave out (e.g. labeled anomalies). ``strip``: regex removed from lines.
    """
    key_re = re.compile(stream_key) if stream_key else None
    skip_re = re.compile(skip) if skip else None
    strip_re = re.compile(strip) if strip else None
    corpus = Corpus()
    for path in expand(patterns):
        with open(path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                line = raw.rstrip("\r\n")
                if not line.strip() or (skip_re and skip_re.search(line)):
                    continue
                if strip_re:
                    line = strip_re.sub("", line, count=1)
                stream = str(path)
                if key_re and (key := key_of(key_re, line)) is not None:
                    stream = key
                    if sessions:
                        corpus.sessions.add(key)
                corpus.add(stream, line)
    return corpus
