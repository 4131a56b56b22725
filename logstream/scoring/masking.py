"""What the language model reads: a log line's canonical text with its variable fields masked.

Block ids, dates and times, IPs, hex ids and long numbers are replaced by single placeholder
tokens, so the model spends neither tokens nor surprise on values that are random by nature, and a
date inside a message ("certificate expires Nov 30") reads the same in every month. Numbers keep
their order of magnitude (``<N3>`` is a three-digit number), so a latency of 40,000 ms where 40 ms
is normal still reads as unusual. The rules travel with the model in ``logstream.json``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel


class MaskRule(BaseModel):
    pattern: str
    replacement: str  # may use {digits}: the number of digits in the match


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"

DEFAULT_RULES: tuple[MaskRule, ...] = (
    MaskRule(pattern=r"blk_-?\d+", replacement="<BLK>"),
    # times and dates inside messages (headers are already split off by the canonical reading)
    MaskRule(pattern=r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?",
             replacement="<TS>"),
    MaskRule(pattern=rf"\b(?:{_WEEKDAY}[a-z]*,?\s+)?{_MONTH}[a-z]*\.?\s+\d{{1,2}}(?:,?\s+\d{{4}})?\b"
             rf"|\b\d{{1,2}}/{_MONTH}/\d{{4}}\b|\b\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{4}}\b",
             replacement="<DATE>"),
    MaskRule(pattern=r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b|\[\s*\d+\.\d{6}\]", replacement="<TIME>"),
    MaskRule(pattern=r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?(?![\w.])", replacement="<IP>"),
    MaskRule(pattern=r"\b0x[0-9a-fA-F]+\b", replacement="<HEX>"),
    MaskRule(pattern=r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b", replacement="<HEX>"),
    MaskRule(pattern=r"\d+", replacement="<N{digits}>"),
)

MAX_DIGIT_BUCKET = 12
# a run of digits longer than this has no value read (``LineMasker.numbers``): Python's int() refuses over 4,300
# digits (a hostile line of 5,000 digits raised ValueError in the adaptive thresholds' range rule); the line's
# numbers then no longer match its placeholders, and its values are not judged
MAX_VALUE_DIGITS = 4000


def placeholder_tokens(rules=DEFAULT_RULES) -> list[str]:
    """Every placeholder the rules can produce (the tokenizer keeps each as one token)."""
    tokens: list[str] = []
    for rule in rules:
        if "{digits}" in rule.replacement:
            tokens += [rule.replacement.format(digits=d) for d in range(1, MAX_DIGIT_BUCKET + 1)]
        else:
            tokens.append(rule.replacement)
    return list(dict.fromkeys(tokens))


@dataclass
class LineMasker:
    rules: tuple[MaskRule, ...] = DEFAULT_RULES

    def __post_init__(self):
        self._compiled = [(re.compile(r.pattern), r.replacement) for r in self.rules]

    def numbers(self, line: str) -> list[int]:
        """The values the number rule masks in ``line`` (what each ``<Nk>`` of ``self(line)`` stood for), in
        order; negative where a minus sign stands before one as a sign, not inside a name (``-42 bytes``,
        ``size=-42``; not ``worker-42``). Empty when no rule masks numbers; a number of more than
        MAX_VALUE_DIGITS digits has none (then fewer values than placeholders)."""
        values: list[int] = []
        self._mask(line, values)
        return values

    def __call__(self, line: str) -> str:
        return self._mask(line)

    def _mask(self, line: str, values: list[int] | None = None) -> str:
        """``line`` masked by the rules in order; with ``values``, each number the number rule masks is
        appended to it (``numbers``)."""
        for regex, replacement in self._compiled:
            if "{digits}" not in replacement:
                line = regex.sub(replacement, line)
                continue

            def number(m: re.Match, r: str = replacement, before: str = line) -> str:
                if values is not None and len(m.group()) <= MAX_VALUE_DIGITS:  # longer: no value (``numbers``)
                    at = m.start()
                    signed = at > 0 and before[at - 1] == "-" and not (at > 1 and _in_name(before[at - 2]))
                    values.append(-int(m.group()) if signed else int(m.group()))
                return r.format(digits=min(len(m.group()), MAX_DIGIT_BUCKET))

            line = regex.sub(number, line)
        return line


def _in_name(char: str) -> bool:
    """Whether a character before a ``-`` makes it part of a name (``worker-42``, ``<HEX>-42``), not a sign."""
    return char.isalnum() or char in "_.>"
