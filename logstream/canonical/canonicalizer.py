"""One canonical reading of a log line, used by training, calibration, evaluation, scoring and the worker.

``Canonicalizer.read(stream, line)`` splits a line's header into time, host, process/pid, level
and component, and keeps its message. What the model reads (``CanonicalLine.text``) is the level,
the source (process, component) and the message: never the time, date, host, pid or a label
column, so the calendar, the clock and the labels cannot move a score.

Per stream, the format is detected from its first lines (each of the first ``detect_lines`` lines
votes for every format it fits; the most voted, the most specific on a tie, is kept). A line that
does not fit its stream's format is read by the first format it fits, and one that fits none is
read whole: never dropped. Streams can be pinned to a format, or to a regex of the user's. Where no format
gives a line a level, each stream also learns which token of its message holds its level, or else its HTTP
status (``Canonicalizer.columns_of``), and reads it from then on.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Iterable, Protocol

from .formats import FORMATS, FORMATS_BY_NAME, LogFormat, http_status, normalize_level
from .structured import parse_json_line, parse_logfmt_line

WHOLE = "whole"  # the name of "no format": the line is read as it is
HEADER_FIELDS = ("timestamp", "host", "process", "pid", "level", "component", "event", "message", "label")


class Parser(Protocol):
    name: str
    description: str

    def match(self, line: str) -> dict | None: ...


@dataclass(frozen=True)
class StructuredFormat:
    name: str
    description: str
    parse: object  # (line) -> groups | None

    def match(self, line: str) -> dict | None:
        return self.parse(line)


JSON_FORMAT = StructuredFormat(
    "json", "one JSON object a line (zap, logrus, slog, bunyan/pino, structlog, ECS, journald -o json, "
    "OpenTelemetry): message, level, time, source and host under their usual names", parse_json_line)
LOGFMT_FORMAT = StructuredFormat(
    "logfmt", "logfmt key=value lines (Go kit, Prometheus, Alertmanager, Grafana, Heroku)", parse_logfmt_line)

# JSON first (cheap to rule out), the header layouts, logfmt before the catch-all ISO prefix.
PARSERS: tuple[Parser, ...] = (JSON_FORMAT, *FORMATS[:-1], LOGFMT_FORMAT, FORMATS[-1])
PARSERS_BY_NAME: dict[str, Parser] = {p.name: p for p in PARSERS}


def user_format(pattern: str, name: str = "user") -> LogFormat:
    """A format from a user's regex; it needs a named group 'message' (or 'content')."""
    try:
        return LogFormat(name, "a regex from the configuration", pattern)
    except re.error as exc:
        raise ValueError(f"format regex {pattern!r} does not compile: {exc}") from None


@dataclass(frozen=True)
class CanonicalLine:
    """A log line split into its header fields and its message."""

    format: str  # the format that read it; "whole" when none did
    message: str
    level: str | None = None
    component: str | None = None  # logger, class, tag, module: where in the program it comes from
    process: str | None = None  # program name (syslog tag), without its pid
    event: str | None = None  # an event or state name some formats put before the message (HPC)
    timestamp: str | None = None  # as written; never read by the model
    host: str | None = None
    pid: str | None = None
    fields: dict[str, str] = field(default_factory=dict)  # every other named field (a label column too)

    @property
    def text(self) -> str:
        """What the model reads: ``LEVEL process component event: message``, the parts that exist."""
        source = " ".join(p for p in (self.level, self.process, self.component, self.event) if p)
        return f"{source}: {self.message}" if source else self.message

    @classmethod
    def from_groups(cls, format_name: str, groups: dict) -> "CanonicalLine":
        message = groups.get("message", groups.get("content", ""))
        get = lambda name: (groups.get(name) or "").strip() or None  # noqa: E731
        extra = {k: v for k, v in groups.items() if k not in HEADER_FIELDS and k != "content"}
        if "label" in groups:
            extra["label"] = groups["label"]
        return cls(format=format_name, message=message.strip(), level=normalize_level(get("level")),
                   component=get("component"), process=get("process"), event=get("event"),
                   timestamp=get("timestamp"), host=get("host"), pid=get("pid"), fields=extra)


# Programs' own headers that a structured record may carry inside its message (nginx writing its
# error-log line to journald, a Java logger's line shipped as JSON): read so that their time and pid
# stay out of what the model reads, and their level (more precise than a transport's) is used.
INNER_FORMATS = tuple(FORMATS_BY_NAME[name] for name in
                      ("nginx_error", "apache_error", "log4j", "logback", "python", "klog", "iso_prefix"))


def _read_inner_header(canonical: CanonicalLine) -> CanonicalLine:
    for inner_format in INNER_FORMATS:
        groups = inner_format.match(canonical.message)
        if groups is None or not groups.get("timestamp"):
            continue
        inner = CanonicalLine.from_groups(inner_format.name, groups)
        return CanonicalLine(
            format=canonical.format, message=inner.message, level=inner.level or canonical.level,
            component=canonical.component or inner.component, process=canonical.process or inner.process,
            event=canonical.event or inner.event, timestamp=canonical.timestamp or inner.timestamp,
            host=canonical.host or inner.host, pid=canonical.pid or inner.pid,
            fields={**inner.fields, **canonical.fields})
    return canonical


# A level the program writes at the head of its message, in a format with no level field of its own
# (a file with only a time before the message, a syslog line, a line read whole): ``ERROR: ...``,
# ``slurmscriptd: debug: ...``, Dovecot's ``imap(bob)<41><ab>: Info: ...``, ``[WARN] ...``, Celery's ``INFO/MainProcess] ...``, or an upper-case word
# before a space. Without it a new program's errors read like the rest of its lines and the rare-level rule
# never sees them (measured on the tenth onboarding corpus before it had formats of its own: Celery, clamd
# and CUPS read with no level at all). Java's CONFIG and FINE and syslog's ALERT are left out: as a
# message's first word they are more often a word of its own ("config: loaded ..."). A process id may come
# first, as Kamailio writes it (" 2(10109) WARNING: ...": its process's index and pid) or in brackets.
HEAD_LEVEL = re.compile(
    r"^(?:(?:\d{1,3}\((?P<pid>\d+)\)|\[(?P<pid2>\d+)\])\s+)?"
    r"(?:(?P<process>[^\s:\[\]]{1,96}):\s+)?"
    r"(?:\[?(?P<level>(?i:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRIT|CRITICAL|FATAL|SEVERE|EMERG|PANIC))"
    r"(?:\]|/(?P<component>[\w.-]+)\]|:)"
    r"|(?P<upper>TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRIT|CRITICAL|FATAL|SEVERE|EMERG|PANIC)(?=\s))"
    r"\s+(?P<message>\S.*)$")
HEAD_LEVEL_FORMATS = (WHOLE, "iso_prefix", "syslog", "dmesg")


def _read_head_level(canonical: CanonicalLine) -> CanonicalLine:
    """``canonical`` with the level its message opens with, where its format gave it none."""
    if canonical.level is not None or canonical.event is not None or canonical.format not in HEAD_LEVEL_FORMATS:
        return canonical
    head = HEAD_LEVEL.match(canonical.message)
    if head is None:
        return canonical
    return replace(canonical, level=normalize_level(head.group("level") or head.group("upper")),
                   message=head.group("message").strip(),
                   process=canonical.process or head.group("process"),
                   pid=canonical.pid or head.group("pid") or head.group("pid2"),
                   component=canonical.component or head.group("component"))


def read_with(parser: Parser, line: str) -> CanonicalLine | None:
    groups = parser.match(line)
    if groups is None:
        return None
    canonical = CanonicalLine.from_groups(parser.name, groups)
    if parser.name in ("json", "logfmt"):
        return _read_inner_header(canonical)
    if canonical.level is None:
        # a header around a structured payload (a syslog or container line carrying JSON/logfmt)
        inner = parse_json_line(canonical.message) or parse_logfmt_line(canonical.message)
        if inner is not None:
            nested = CanonicalLine.from_groups(parser.name, inner)
            return CanonicalLine(
                format=parser.name, message=nested.message, level=nested.level,
                component=nested.component or canonical.component, process=canonical.process,
                event=canonical.event, timestamp=canonical.timestamp, host=canonical.host, pid=canonical.pid,
                fields=canonical.fields)
    return _read_head_level(canonical)


def read_whole(line: str) -> CanonicalLine:
    return _read_head_level(CanonicalLine(format=WHOLE, message=line.strip()))


# A level written in a column of its own that no format here describes: the same token of the message,
# line after line (Kamailio's " 2(10109) WARNING: ...", fail2ban's "fail2ban.server [31596]: INFO ...",
# Knot's "info: ...", NATS's, Dovecot's, Radicale's). Each stream learns which token of its message holds
# its level from its first lines that have none: the token that does in most of them, among the first
# LEVEL_COLUMN_REACH; measured on the first runs of thirteen held-out corpora, 16 of 65 sources wrote their
# level in one such column, which their format, unknown then, left in the message. Syslog's ALERT and Java's
# CONFIG and FINE are left out: in a message they are words of its own ("SERVICE ALERT: ...").
LEVEL_TOKEN = re.compile(r"[\[(<]?(?P<level>(?i:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRIT|CRITICAL|FATAL"
                         r"|SEVERE|EMERG|PANIC|DBG|INF|WRN))[\])>]?:?")
LEVEL_COLUMN_REACH = 6  # tokens of the message
LEVEL_COLUMN_LINES = 50  # a stream's lines without a level that its column is learned from
LEVEL_COLUMN_SHARE = 0.6  # of those lines that must show a level at that token
LEVEL_COLUMN_FIRST = 5  # lines before a column that leads so far is read


def _level_token(message: str) -> tuple[int, re.Match] | None:
    """(index, span) of the first token of ``message``, within reach, that is a level word."""
    for index, token in enumerate(re.finditer(r"\S+", message)):
        if index >= LEVEL_COLUMN_REACH:
            return None
        if LEVEL_TOKEN.fullmatch(token.group(0)):
            return index, token
    return None


def _read_level_column(canonical: CanonicalLine, column: int) -> CanonicalLine:
    """``canonical`` with the level its message holds at token ``column``, taken out of the message."""
    found = _level_token(canonical.message)
    if found is None or found[0] != column:
        return canonical
    token = found[1]
    before, after = canonical.message[:token.start()].rstrip(), canonical.message[token.end():].lstrip()
    return replace(canonical, level=normalize_level(LEVEL_TOKEN.fullmatch(token.group(0)).group("level")),
                   message=f"{before} {after}" if before and after else before or after)


# An HTTP status written in a column of its own, in a layout no format here describes (a program's own
# access records: InfluxDB's "[httpd] ... 401", a proxy's request lines): the same token of the message,
# line after line, is a number from 100 to 599, and it is mostly a status of success or redirection (a
# column of durations or sizes is not, nor SMTP's and FTP's replies, 250 and 226). The status then gives
# the line's level and event as in an access log (``http_status``): a 401 does not read like a 204. Only lines
# with no level of their own are read so (an access record has none; a program's "code: 200" in a message at
# a level of its own is the message's).
STATUS_TOKEN = re.compile(r"\(?(?P<status>[1-5]\d\d)\)?[,;]?")
STATUS_COLUMN_REACH = 24  # tokens of the message
STATUS_COLUMN_SHARE = 0.4  # of a stream's first lines that show a status-like number at that token
STATUS_COLUMN_USUAL = 0.5  # of those numbers that are a usual success or redirection
USUAL_STATUSES = frozenset({"200", "201", "202", "204", "206", "301", "302", "303", "304", "307", "308"})


def _status_tokens(message: str) -> list[tuple[int, str]]:
    """(index, status) of each token of ``message``, within reach, that is a status-like number."""
    found = []
    for index, token in enumerate(re.finditer(r"\S+", message)):
        if index >= STATUS_COLUMN_REACH:
            break
        status = STATUS_TOKEN.fullmatch(token.group(0))
        if status:
            found.append((index, status.group("status")))
    return found


def _read_status_column(canonical: CanonicalLine, column: int) -> CanonicalLine:
    """``canonical`` with the level and event of the status its message holds at token ``column``."""
    status = dict(_status_tokens(canonical.message)).get(column)
    if status is None:
        return canonical
    level, event = http_status(status)
    return replace(canonical, level=level, event=event)


@dataclass(frozen=True)
class Pin:
    """Streams whose id matches ``stream`` (a regex, in full) are read with ``parser``."""

    stream: re.Pattern
    parser: Parser | None  # None: read whole


def make_pin(stream: str = ".*", format: str | None = None, regex: str | None = None) -> Pin:
    if (format is None) == (regex is None):
        raise ValueError("a format pin needs exactly one of 'format' (a format name) or 'regex'")
    try:
        stream_re = re.compile(stream)
    except re.error as exc:
        raise ValueError(f"stream pattern {stream!r} does not compile: {exc}") from None
    if regex is not None:
        return Pin(stream_re, user_format(regex))
    if format == WHOLE:
        return Pin(stream_re, None)
    if format not in PARSERS_BY_NAME:
        raise ValueError(f"unknown log format {format!r}; known: {', '.join([*PARSERS_BY_NAME, WHOLE])}")
    return Pin(stream_re, PARSERS_BY_NAME[format])


@dataclass
class _Detection:
    votes: dict[str, int] = field(default_factory=dict)
    seen: int = 0
    chosen: Parser | None = None  # set once the stream's first lines have voted
    # the token of the message that holds the stream's level (``_read_level_column``): votes of its lines
    # without a level so far (None: no token), then the column once settled
    column_votes: dict[int | None, int] = field(default_factory=dict)
    column: int | None = None
    # the token that holds its HTTP status (``_read_status_column``): per token, its lines with a status-like
    # number there and how many of those were usual; then the column once settled
    status_votes: dict[int, list[int]] = field(default_factory=dict)
    status_lines: int = 0
    status_column: int | None = None


class Canonicalizer:
    """Reads lines of many streams; remembers each stream's format (bounded: least recent forgotten)."""

    def __init__(self, pins: Iterable[Pin] = (), detect_lines: int = 8, max_streams: int = 100_000,
                 parsers: tuple[Parser, ...] = PARSERS):
        if detect_lines < 1:
            raise ValueError("detect_lines must be at least 1")
        self.pins = list(pins)
        self.detect_lines = detect_lines
        self.max_streams = max_streams
        self.parsers = parsers
        self._order = {p.name: i for i, p in enumerate(parsers)}
        self._by_name = {p.name: p for p in parsers}
        self._streams: OrderedDict[str, _Detection] = OrderedDict()

    def read(self, stream: str, line: str) -> CanonicalLine:
        for pin in self.pins:
            if pin.stream.fullmatch(stream):
                if pin.parser is None:
                    return read_whole(line)
                return read_with(pin.parser, line) or read_whole(line)
        state = self._state(stream)
        canonical = self._read_header(state, line)
        if canonical.event is not None or canonical.level is not None:
            return canonical
        column = self._level_column(state, canonical)
        if column is not None:
            canonical = _read_level_column(canonical, column)
            if canonical.level is not None:
                return canonical
        column = self._status_column(state, canonical)
        return _read_status_column(canonical, column) if column is not None else canonical

    def _read_header(self, state: _Detection, line: str) -> CanonicalLine:
        if state.chosen is not None:
            return read_with(state.chosen, line) or self._first_fit(line) or read_whole(line)
        fits = [(p, c) for p in self.parsers if (c := read_with(p, line)) is not None]
        for parser, _ in fits:
            state.votes[parser.name] = state.votes.get(parser.name, 0) + 1
        state.seen += 1
        if state.seen >= self.detect_lines and state.votes:
            state.chosen = self._by_name[max(state.votes, key=lambda n: (state.votes[n], -self._order[n]))]
            state.votes = {}
            # the line that settles it may fit no format (a continuation line, a stack frame)
            return read_with(state.chosen, line) or (fits[0][1] if fits else read_whole(line))
        if not fits:
            return read_whole(line)
        # until the stream's format is settled: this line's fit with the most votes so far
        return max(fits, key=lambda pc: (state.votes[pc[0].name], -self._order[pc[0].name]))[1]

    @staticmethod
    def _level_column(state: _Detection, canonical: CanonicalLine) -> int | None:
        """The stream's level column, learned from this line too until it is settled: the token at which most
        of its LEVEL_COLUMN_LINES lines without a level show one; until then the one most of its lines showed so
        far, once LEVEL_COLUMN_FIRST have; None: none (yet). Lines that settle none start a new count."""
        if state.column is not None:
            return state.column
        found = _level_token(canonical.message)
        index = found[0] if found is not None else None
        state.column_votes[index] = state.column_votes.get(index, 0) + 1
        seen = sum(state.column_votes.values())
        leader = max((i for i in state.column_votes if i is not None), key=state.column_votes.get, default=None)
        leads = leader is not None and state.column_votes[leader] >= LEVEL_COLUMN_SHARE * seen
        if seen >= LEVEL_COLUMN_LINES:  # settled; or none yet: the next lines vote afresh (a start-up's lines
            state.column = leader if leads else None  # may be all unlike the ones that come after)
            state.column_votes = {}
            return leader if leads else None
        return leader if leads and seen >= LEVEL_COLUMN_FIRST else None

    @staticmethod
    def _status_column(state: _Detection, canonical: CanonicalLine) -> int | None:
        """The stream's HTTP status column (None: none yet), learned as the level column is (``_level_column``)
        from its lines with no level and no event, and read only once settled."""
        if state.status_column is not None:
            return state.status_column
        for index, status in _status_tokens(canonical.message):
            votes = state.status_votes.setdefault(index, [0, 0])
            votes[0] += 1
            votes[1] += status in USUAL_STATUSES
        state.status_lines += 1
        fits = [index for index, (lines, usual) in state.status_votes.items()
                if lines >= STATUS_COLUMN_SHARE * state.status_lines and usual >= STATUS_COLUMN_USUAL * lines]
        column = max(fits, key=lambda index: state.status_votes[index][0], default=None)
        if state.status_lines < LEVEL_COLUMN_LINES:
            return None  # numbers in a column are too common to read a status from a few lines' votes
        state.status_column = column  # settled, or learned afresh from the next lines
        state.status_votes, state.status_lines = {}, 0
        return column

    def columns_of(self, stream: str) -> dict[str, int]:
        """The tokens of its message a stream was found to hold its level and HTTP status at (0 = the first),
        where it learned one (``_read_level_column``, ``_read_status_column``)."""
        state = self._streams.get(stream)
        if state is None:
            return {}
        return {name: index for name, index in (("level", state.column), ("status", state.status_column))
                if index is not None}

    def format_of(self, stream: str) -> str | None:
        """The format a stream was found to be in, once its first lines have voted."""
        state = self._streams.get(stream)
        return state.chosen.name if state is not None and state.chosen is not None else None

    def forget(self, stream: str) -> None:
        self._streams.pop(stream, None)

    def _first_fit(self, line: str) -> CanonicalLine | None:
        for parser in self.parsers:
            canonical = read_with(parser, line)
            if canonical is not None:
                return canonical
        return None

    def _state(self, stream: str) -> _Detection:
        state = self._streams.get(stream)
        if state is None:
            state = self._streams[stream] = _Detection()
            if len(self._streams) > self.max_streams:
                self._streams.popitem(last=False)
        else:
            self._streams.move_to_end(stream)
        return state


def describe_formats() -> list[tuple[str, str]]:
    """(name, description) of every format recognised out of the box, in the order they are tried."""
    return [(p.name, p.description) for p in PARSERS] + [(WHOLE, "no format: the line is read whole")]


__all__ = ["CanonicalLine", "Canonicalizer", "FORMATS_BY_NAME", "PARSERS", "Pin", "WHOLE", "describe_formats",
           "make_pin", "read_whole", "read_with", "user_format"]
