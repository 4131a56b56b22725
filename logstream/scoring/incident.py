"""One incident told in two lines: the line right after an alert that names the same thing as the alert.

Supervisor writes ``killing 'archiver' (877) with SIGKILL`` and, a millisecond later, ``stopped: archiver
(terminated by SIGKILL)``; snmpd ``sess_process_packet: parse fail`` then ``sess_process_packet: post-parse fail``;
Prosody a session's ``<stream:error>`` then that session's ``Sending[c2s]: <stream:error>``. The thing named is a
word few of the source's normal lines hold (a program, a session, a file, a client): not the source's usual
vocabulary (the component every line names, ``main``), not a level, not a problem word (two failures in a row
that share only ``failed`` are two pieces of news).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

WORD = re.compile(r"\w{3,}")  # shorter words (``id``, a thread's ``19``) name nothing in particular
WORD_LIMIT = 20_000  # words counted per source (a source's vocabulary, with its ids, grows without end)
LEVEL_WORDS = frozenset({"emerg", "emergency", "alert", "crit", "critical", "fatal", "error", "err", "severe",
                         "warn", "warning", "notice", "info", "information", "debug", "trace", "verbose"})


def words_of(text: str) -> set[str]:
    """A line's words, as ``WordCounts`` counts them."""
    return set(WORD.findall(text))


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
        level nor part of one of the line's ``problem_words``."""
        ordinary = LEVEL_WORDS | {word for phrase in problem_words for word in words_of(phrase.lower())}
        bar = share * self.lines
        return frozenset(word for word in words_of(text)
                         if word.lower() not in ordinary and self.counts.get(word, 0) <= bar)

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
