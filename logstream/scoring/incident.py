"""One incident told in two lines: a line soon after an alert in its stream (``incident_lines``) that names the
same thing as the alert.

Supervisor writes ``killing 'archiver' (877) with SIGKILL`` and, a millisecond later, ``stopped: archiver
(terminated by SIGKILL)``; snmpd ``sess_process_packet: parse fail`` then ``sess_process_packet: post-parse fail``;
upsd ``fopen .../upsd.pid: No such file or directory`` then ``Could not find PID file '.../upsd.pid'``; coturn a
session's ``TCP socket error`` and, a line or two of other sessions later, its ``closed ... reason: TCP socket
buffer operation error``. The thing
named is a word few of the source's normal lines hold (a program, a session, a file, a client): not the usual
vocabulary (the component every line names, ``main``), not a level, not a problem word (two failures in a row
that share only ``failed`` are two pieces of news).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

WORD = re.compile(r"\w{3,}")  # shorter words (``id``, a thread's ``19``) name nothing in particular
CODE = re.compile(r"\d{1,3}")  # a status or error code (``500``, coturn's ``486``) is a kind, not a thing
WORD_LIMIT = 5_000  # words counted per source (a source's vocabulary, with its ids, grows without end)
# words of the language, which a source that never writes them in a normal line would take for names
STOP_WORDS = frozenset({"the", "and", "for", "with", "from", "into", "onto", "that", "this", "these", "those",
                        "was", "were", "are", "has", "had", "have", "not", "but", "its", "all", "any", "now",
                        "will", "been", "being", "out", "off", "then", "than", "there", "when", "while", "after",
                        "before", "over", "under", "per", "via", "you", "your", "our", "can", "could", "would"})
LEVEL_WORDS = frozenset({"emerg", "emergency", "alert", "crit", "critical", "fatal", "error", "err", "severe",
                         "warn", "warning", "notice", "info", "information", "debug", "trace", "verbose"})


def words_of(text: str) -> set[str]:
    """A line's words, as ``WordCounts`` counts them: in lower case (``Session`` is ``session``)."""
    return set(WORD.findall(text.lower()))


def same_pattern(first: tuple[int | None, str], second: tuple[int | None, str], similarity: float) -> bool:
    """Whether two lines' patterns (template id, where a line has one, and text rid of ids) are one: the same
    template, or, where either has none yet (a new line that alerted), words in the same places at
    ``similarity`` at least (drain3's measure): ``worker alpha crashed hard`` and ``worker beta crashed hard``."""
    if first[0] is not None and second[0] is not None:
        return first[0] == second[0]
    a, b = first[1].split(), second[1].split()
    return len(a) == len(b) and sum(x == y for x, y in zip(a, b)) >= similarity * len(a)


@dataclass
class WordCounts:
    """How many of a source's normal lines hold each word. At most ``limit`` words are kept: past it, the half
    held by the fewest lines go (a word held by few lines is rare whether it is counted or not)."""
    lines: int = 0
    counts: Counter = field(default_factory=Counter)

    def add(self, text: str, limit: int) -> None:
        self.lines += 1
        self.counts.update(words_of(text))
        if len(self.counts) > limit:
            self.counts = Counter(dict(self.counts.most_common(limit // 2)))

    def names(self, text: str, share: float, problem_words: list[str] = ()) -> frozenset[str]:
        """The words of ``text`` that name a thing: held by at most ``share`` of the normal lines, and neither a
        level, a word of the language, a code of three digits or fewer, nor part of one of the line's
        ``problem_words``. None before the source has shown ``1 / share`` normal lines (a word then is rare only
        for want of lines)."""
        bar = share * self.lines
        if bar < 1:
            return frozenset()
        ordinary = LEVEL_WORDS | STOP_WORDS | {word for phrase in problem_words for word in words_of(phrase)}
        return frozenset(word for word in words_of(text) if word not in ordinary and not CODE.fullmatch(word)
                         and self.counts.get(word, 0) <= bar)

    def as_json(self, share: float) -> dict:
        """The count of lines and the words that are not rare (what ``names`` needs; the rest are rare anyway)."""
        bar = share * self.lines
        return {"lines": self.lines, "common": {word: n for word, n in self.counts.items() if n > bar}}

    @classmethod
    def from_json(cls, data: dict) -> WordCounts:
        return cls(int(data["lines"]), Counter({word: int(n) for word, n in data["common"].items()}))


def shared_name(names: frozenset[str], text: str | None) -> str | None:
    """A word of ``names`` (an alert's) that ``text`` (the next line) holds too, or None."""
    if not names or text is None:
        return None
    shared = names & words_of(text)
    return min(shared) if shared else None
