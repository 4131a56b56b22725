"""The numeric fields of a masked line as values of their own: which number placeholder is a value and what
names it, a field's kept range (its least values but the extremes), and error or exit codes. Used by the
adaptive thresholds' value-out-of-range rule (``logstream.scoring.adaptive``).
"""

from __future__ import annotations

import itertools
import re

# a number placeholder of a masked line; one right after a letter, digit, "_", "." or ">" is part of a name
# or a fraction (``web<N1>``, ``<N1>.<N6>``), as is one after a "-" that follows such a character
NUMBER_FIELD = re.compile(r"<N\d+>")
MAX_FIELDS = 32  # numeric fields kept per template
# a field's range starts at its values' 3rd least: two odd values among a template's first lines (a negative
# size while the template was too young to be judged) do not make later ones normal (measured: the demo's
# synthetic logs, out-of-range values caught 5 -> 7 of 13, no false alert added). Not at the 3rd greatest:
# sizes and latencies have long tails (Caddy's: 12 false alerts in a replay of its corpus)
RANGE_EXTREMES = 3


def range_floor(values: list[int]) -> int:
    """A field's least value but RANGE_EXTREMES - 1 (of those kept while it has fewer)."""
    return values[min(RANGE_EXTREMES, len(values)) - 1]


def keep_least(values: list[int], value: int) -> None:
    values.append(value)
    values.sort()
    del values[RANGE_EXTREMES:]


# a field that names an error or exit code (``err=``, ``rc=``, ``exit code``, ``errno``, a DNS reply's ``rcode``):
# its values are codes, not quantities. A code the field never held is news, where it only ever held a few
# (slapd's ``RESULT ... err=49``, invalid credentials, after thousands of ``err=0`` and a few compare results
# ``err=5`` and ``err=6``: measured, none of its 9 such failures alerted by the range; PowerDNS Recursor's
# ``msg="Answer" ... rcode="2"``, a SERVFAIL, after thousands of 0 and a few 3, NXDOMAIN). Codes are judged from
# the template's ``min_template_lines``-th normal line on, not its ``range_min_lines``-th as a quantity's range
# is: a failure among a young template's lines went unjudged, was learned, and made every later one normal
# (Slurm's ``WEXITSTATUS 137`` after an early failure; PowerDNS Recursor's first SERVFAIL at its 109th line).
# A new code is news by Good-Turing (``NEW_CODE_SHARE``): a young field that held a code only once (an LDAP
# result) is not judged yet
EXIT_WORDS = r"exit(?:ed|s)?(?:\s+with)?[ _]?(?:code|status)|w?exitstatus"  # exit code 1, exited with status 1
ERROR_CODE = re.compile(rf"(?i)(?<![A-Za-z])(?:err(?:no|or)?|rc(?:ode)?|ret(?:code|val)?|exit|{EXIT_WORDS}|"
                        r"result[ _]?code)\W{0,3}<N$")
# a status (``status = 17``, ``"status": 0``): a code while it was only ever 0, success (snmpd's ``request results
# (status = 17)``, notWritable, after only ever 0: its recall 0.55 -> 0.82 on the nineteenth corpus). Not one that
# held another value: an HTTP status's 200, 304 and 404 are no error codes, and a first 301 is no news
STATUS_CODE = re.compile(r"(?i)(?<![A-Za-z])status\W{0,3}<N$")


def code_field(name: str) -> bool:
    """Whether the field ``name`` names (``field_name``) holds codes: an error, exit or status code."""
    return bool(ERROR_CODE.search(name) or STATUS_CODE.search(name))


def judged_by_codes(name: str, codes: dict) -> bool:
    """Whether a code field's value is judged by the ``codes`` it held: an error or exit code's always, a
    status's only while it held nothing but 0."""
    return bool(ERROR_CODE.search(name)) or (bool(STATUS_CODE.search(name)) and codes.keys() == {"0"})


# a field named as an identifier (``with id 4242``, ``pid=31235``, ``seq 17``): a label drawn at random or counted
# on, no quantity with a range (dnsdist's DNS query ids, 16-bit and random: 5 false alerts in the seventeenth
# corpus's first run, a small id in a template whose ids had all been large)
IDENTIFIER = re.compile(r"(?i)(?<![A-Za-z])(?:id|[pqtx]id|txid|seq|serial)\W{0,2}<N$")
MAX_CODES = 16  # codes kept per error-code field: one that held more is not judged by its codes
YOUNG_MAX_CODES = 3  # a field judged by its codes before ``range_min_lines`` lines holds at most this many: success
# and a few known outcomes (0 and 3, NXDOMAIN), not a field of many codes each seen a few times (each command's own)
NEW_CODE_SHARE = 0.01  # a new code is news while the field's codes seen once are at most this share of its
# lines (Good-Turing: the chance that the next line holds a code never seen)


def count_code(seen: list, value: int, weight: int = 1) -> None:
    """An error-code field's ``seen`` range holds ``value`` ``weight`` more times; past MAX_CODES codes it is
    no longer judged by its codes."""
    codes, code = seen[3], str(value)
    if codes is None:
        return
    codes[code] = codes.get(code, 0) + weight
    if len(codes) > MAX_CODES:
        seen[3] = None


def shown_with_value(token: str, index: int, value: int) -> str:
    """The token with its ``index``-th number placeholder shown as ``value`` (a negative one's sign is in the
    token already)."""
    counter = itertools.count()
    return NUMBER_FIELD.sub(lambda m: f"{abs(value):,}" if next(counter) == index else m.group(0), token)


def value_fields(masked: str) -> list[tuple[str, str, int, str] | None]:
    """Each number placeholder of ``masked`` in order: (its key "token.index", its token, its index in the
    token, what names it: the token up to the number, or where the number opens its token the words before it,
    as in ``exited with code <N3>``), or None where it is not a value of its own (part of a name, a fraction)."""
    fields: list[tuple[str, str, int, str] | None] = []
    tokens = masked.split()
    for position, token in enumerate(tokens):
        for index, match in enumerate(NUMBER_FIELD.finditer(token)):
            at = match.start()
            if at and token[at - 1] == "-":
                at -= 1  # a sign, unless the "-" joins a name
            named = at > 0 and (token[at - 1].isalnum() or token[at - 1] in "_.>")
            fields.append(None if named else (f"{position}.{index}", token, index, field_name(tokens, position, at)))
    return fields


# the head of a line whose reader found its level (``CanonicalLine.text``: ``ERROR: message``): a number the
# message opens with is not an error code by it (nginx's ``ERROR: 31235#31235: *61 open() ...`` read without
# its format: the worker's process id, new after each reload, alerted as "a code this field never held")
LEVEL_HEADS = frozenset({"ERROR:", "ERR:"})


def field_name(tokens: list[str], position: int, at: int) -> str:
    """What names the number at character ``at`` of token ``position``, up to the number: the token's own text
    before it (``rc=``), or where the number opens its token the (up to three) words before it
    (``exited with code``); ends in "<N" for ERROR_CODE and STATUS_CODE to match at its end."""
    words = tokens[max(position - 3, 0):position]
    if 0 < position <= 3 and tokens[0] in LEVEL_HEADS:
        words = words[1:]  # the line's level, not a name of the number after it
    before = tokens[position][:at] if at else " ".join(words) + " "
    return before + "<N"
