"""The words of a log line that the adaptive thresholds read: levels, a bad outcome, a tally of nothing, an
orderly start or stop, quoted data. Regexes and small helpers only; the rules that use them are in
``logstream.scoring.adaptive``, the configurable problem and benign words in ``logstream.config``.
"""

from __future__ import annotations

import re

# levels that are not a sign of trouble by themselves; any other (WARN, ERROR, FATAL, or a level word a
# format does not rank, such as PostgreSQL's DETAIL) alerts when the source's normal lines rarely carry it
LOW_LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "NOTICE"})
QUIET_LEVELS = frozenset({"TRACE", "DEBUG"})  # levels whose quoted text is traced data (``_problem_words_in``)
TOLD_FINE = frozenset({"INFO", "NOTICE"})  # levels at which a program says a line is no trouble
# a message code in upper snake case (Kerberos's ``BAD_ENCRYPTION_TYPE``, Kea's ``DHCP4_PACKET_DROP_0001``):
# its parts are words (an underscore is a word character to a regex's ``\b``)
# (each part taken whole, possessive: written as a letter between two runs, 16 KB of capitals took 3.4 s)
UPPER_SNAKE = re.compile(r"(?<![\w<>])(?=[A-Z0-9<>]*[A-Z])[A-Z0-9<>]++(?:_[A-Z0-9<>]++)+(?![\w<>])")
# the same in upper kebab case, words of two letters or more (Network UPS Tools' protocol errors ``ERR
# ACCESS-DENIED``, ``ERR UNKNOWN-UPS``: a problem word after a "-" is otherwise part of a name, ``fail-over``)
UPPER_KEBAB = re.compile(r"(?<![\w<>-])[A-Z]{2}[A-Z0-9]*+(?:-[A-Z]{2}[A-Z0-9]*+)+(?![\w<>-])")
# a slash between two phrases of a description in title case, not within a name: FRRouting's BGP notification
# names its code and subcode "(UPDATE Message Error/Malformed Attribute List)"; a problem word joined to a name
# by "/" is part of the name (/srv/errors/, errors/Readme)
PHRASE_SLASH = re.compile(r"(?<![\w/])([A-Z][a-z]++)/(?=[A-Z][a-z]+ )")
# words of a bad outcome: a line with one of them is no benign news, whatever else it says ("shut down" is
# an orderly stop, and so is one "terminated by SIGTERM": Supervisor logs each stop it was asked for so; its
# "exited: web_0 (exit status 0; not expected)" is a program that stopped when it should have kept running)
NOT_BENIGN = re.compile(r"\b(?:lost|(?<!shut )(?<!shutting )down|terminated(?! by SIG(?:TERM|INT|QUIT)\b)|signal(?:l?ed)?(?![ =:]+SIG(?:TERM|INT|HUP|QUIT)\b)|"
                        r"(?:un|not )expected(?:ly)?)\b", re.IGNORECASE)
# a stop or reload asked for, by its signal's number, which the masked text hides: SIGHUP (1), SIGINT (2),
# SIGQUIT (3), SIGTERM (15) (MiniDLNA's "received signal 15, good-bye" at WARN): no bad outcome (``bad_outcome``)
ASKED_SIGNAL = re.compile(r"\bsignal\s*[=:]?\s*(?:1|2|3|15)(?!\d|\.\d)", re.IGNORECASE)


def bad_outcome(masked: str, text: str | None = None):
    """The first word of a bad outcome in a line (``NOT_BENIGN``), or None; with its ``text`` before masking, a
    signal that asks a program to stop or reload, by its number, is none."""
    found = NOT_BENIGN.search(masked)
    if found and text is not None and ASKED_SIGNAL.search(text):
        return NOT_BENIGN.search(ASKED_SIGNAL.sub("SIGTERM", text))  # "terminated by SIGTERM" is no bad outcome
    return found
# a problem word counted zero, as tallies write it: a 0 that opens the line or a clause, or follows "with"
# (and the like), then at most two words of its noun ("0 Invalid entries.", "0 With invalid flags", "5 passed,
# 0 failed", "with 0 errors"); or the word, then ": 0" ending a clause ("errors: 0, warnings: 2"). Not an
# index or a field's value: "retry 0 failed", "worker 0 failed to start", "line: 34 pos: 0 parser failed"
# (lighttpd's bad configuration: measured). "No" counts as the 0 in the same places: "exited with no errors", a
# DNS answer's "rcode=0 (No Error)" (PowerDNS traced every answer so: 10 false alerts of its 12)
ZERO_BEFORE = re.compile(r"(?:^\s*|[,;(]\s*|\b(?:with|and|had|has|have|found)\s+)(?:0|no) (?:[A-Za-z][\w-]* ){0,2}$",
                         re.IGNORECASE)
ZERO_AFTER = re.compile(r":? 0(?=\s*(?:$|[,;)\]}|]|\.(?!\d)))")
# a process that exited with status 0 ended in success: HAProxy logs each old worker's clean exit after a
# reload at WARNING ("Former worker (1234) exited with code 0 (Exit)"). Read in the text before masking
# (masking hides which number was 0); not "code 0x80", "status 01" or "code 1"
EXIT_ZERO = re.compile(r"\bexit(?:ed|s)?\b[^.;:]{0,24}?\b(?:code|status)\s*[=:]?\s*0(?![\w.])", re.IGNORECASE)
ZERO_REACH = 80  # characters before a problem word that ZERO_BEFORE reads: a line full of problem words is
# not read again from its start for each one (a 16 KiB line of "error error ..." took 1.1 s: measured)
# a line that reports a program starting or stopping (with no problem word or bad outcome): the start of its
# start-up (``AdaptiveThresholds._startup_repeat``). Not a success ("passed", "completed"): those are routine
# lines of many sources, and a start-up after each was a window over most of sshd's lines
START_STOP = re.compile(r"\b(?:starting|started|stopping|stopped|exiting|shut(?:ting)? down|shutdown|"
                        r"initiali[sz](?:ing|ed))\b", re.IGNORECASE)
# a process ended by a fatal signal, by its number (masked in the text the rules read): SIGKILL (9), SIGSEGV (11),
# SIGABRT (6), SIGBUS (7), SIGFPE (8), SIGILL (4) on Linux. Not SIGTERM (15) or SIGINT (2): a stop asked for
# (Gunicorn's "Worker with pid 4242 was terminated due to signal 15" at each restart, "... signal 9" when a
# worker was killed: measured)
FATAL_SIGNAL = re.compile(r"\bsignal\s*[=:]?\s*(9|11|6|7|8|4)(?![\d.])", re.IGNORECASE)
# the same crashes by name (supervisor's "exited: indexer (terminated by SIGSEGV; not expected)"); not SIGKILL
# by name: supervisor writes "killing 'archiver' (4242) with SIGKILL" when a program ignores its stop signal
CRASH_SIGNAL = re.compile(r"\bSIG(SEGV|ABRT|BUS|FPE|ILL)\b")
CRASH_SIGNAL_NUMBERS = {"SEGV": "11", "ABRT": "6", "BUS": "7", "FPE": "8", "ILL": "4"}


def fatal_signal(text: str) -> str | None:
    """The number of the fatal signal a line says a process ended by (by its number or a crash's name), or None."""
    killed = FATAL_SIGNAL.search(text)
    if killed:
        return killed.group(1)
    crashed = CRASH_SIGNAL.search(text)
    return CRASH_SIGNAL_NUMBERS[crashed.group(1)] if crashed else None


# a number placeholder inside a word: the mask made two words of one (``fail2ban`` read as ``fail<N1>ban``
# gave every Fail2ban line the problem word "fail": measured, 162 false alerts per 1,000 lines on its first run)
GLUED_NUMBER = re.compile(r"(?<=[A-Za-z])<N\d+>|<N\d+>(?=[A-Za-z])")
# a quoted string (one cut off by the end of the line too): a payload echoed inside a line
# (backslash escapes inside it, as Python's repr of bytes writes them, do not end it)
QUOTED = re.compile(r"'(?:[^'\\]|\\.)*(?:'|$)|\"(?:[^\"\\]|\\.)*(?:\"|$)")
QUOTED_WORD = re.compile(r"'[\w-]+'|\"[\w-]+\"")  # a field's value (XMPP's type='error'), not traced text


# a quoted text given as a field's value (``T="Build failed #1432"``, Exim's subject): what a client sent, not the
# program's own verdict, unless the field names a problem or a message (``error="..."``, ``msg="..."``)
KEYED_QUOTE = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*)=(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')")
TOLD_KEYS = re.compile(r"(?i)(?:err(?:or)?s?|reason|cause|msg|message|text|status|detail|desc(?:ription)?|"
                       r"exception|fault|problem|warning|state|result|code)$")


def blank_keyed(quoted: re.Match) -> str:
    """A field's quoted value, blanked unless the field names what went wrong or the program's message, or the
    value is one word (XMPP's ``type='error'``)."""
    if TOLD_KEYS.search(quoted.group(1)) or QUOTED_WORD.fullmatch(quoted.group(2)):
        return quoted.group(0)
    return f"{quoted.group(1)}=''"


def is_quiet(level: str | None) -> bool:
    """Whether a line's level (with its event, ``level_key``) is a program's tracing: TRACE or DEBUG."""
    return level is not None and level.split(" ", 1)[0] in QUIET_LEVELS


def is_told_fine(level: str | None) -> bool:
    """Whether a line's level (with its event, ``level_key``) is one at which its program says it is no
    trouble: INFO or NOTICE."""
    return level is not None and level.split(" ", 1)[0] in TOLD_FINE


def spaced_codes(line: str) -> str:
    """``line`` with each message code in upper snake or kebab case read as words (``UPPER_SNAKE``, ``UPPER_KEBAB``),
    and two phrases joined by a slash read apart (``PHRASE_SLASH``)."""
    return PHRASE_SLASH.sub(r"\1 / ", UPPER_KEBAB.sub(_spaced, UPPER_SNAKE.sub(_spaced, line)))


def _spaced(code: re.Match) -> str:
    return code.group(0).replace("_", " ").replace("-", " ")


def blank_traced(quoted: re.Match) -> str:
    """A quoted text of a DEBUG line, blanked unless it is one word: a value such as ``type='error'``."""
    return quoted.group(0) if QUOTED_WORD.fullmatch(quoted.group(0)) else "''"
