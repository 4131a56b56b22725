"""Structured log lines: one JSON object a line, and logfmt (``key=value ...``).

Their message, level, time, source and host are found under the names the common loggers and
shippers use (zap, logrus, slog, bunyan/pino, structlog, Serilog, ECS, journald's JSON export,
OpenTelemetry). The remaining scalar fields stay part of the message as ``key=value``, in the
order the line gave them: ``status=500`` is as much the event as the text beside it.
"""

from __future__ import annotations

import json
import re

from .formats import http_status

MESSAGE_KEYS = ("msg", "message", "MESSAGE", "@message", "log", "text", "short_message", "body", "event")
LEVEL_KEYS = ("level", "lvl", "severity", "levelname", "log.level", "loglevel", "@level", "severity_text",
              "SeverityText", "PRIORITY", "priority", "prio")
# bunyan's and pino's numeric levels (Node.js loggers)
NODE_LEVELS = {"10": "TRACE", "20": "DEBUG", "30": "INFO", "40": "WARN", "50": "ERROR", "60": "FATAL"}
TIME_KEYS = ("ts", "time", "timestamp", "@timestamp", "@t", "t", "datetime", "date", "asctime",
             "__REALTIME_TIMESTAMP", "_SOURCE_REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "observed_time",
             "time_unix_nano", "timeUnixNano", "observedTimeUnixNano")
COMPONENT_KEYS = ("logger", "logger_name", "name", "component", "module", "caller", "source", "service",
                  "service.name")
PROCESS_KEYS = ("SYSLOG_IDENTIFIER", "_COMM", "process.name")  # journald's, as the syslog tag reads
HOST_KEYS = ("host", "hostname", "_HOSTNAME", "host.name", "HOSTNAME")
# an HTTP response's status, as web servers and frameworks log it in a structured access record (Caddy, ECS,
# pino, zap's http middlewares)
STATUS_KEYS = ("status", "status_code", "statusCode", "http.response.status_code", "http.status_code",
               "response.status", "res.statusCode", "resp.status", "http_status")
HTTP_STATUS = re.compile(r"[1-5][0-9]{2}")
PID_KEYS = ("pid", "_PID", "SYSLOG_PID", "process.pid", "thread", "tid", "thread_name", "threadName")
KNOWN = set(MESSAGE_KEYS + LEVEL_KEYS + TIME_KEYS + COMPONENT_KEYS + PROCESS_KEYS + HOST_KEYS + PID_KEYS) | {
    "ecs.version"}

MAX_JSON_CHARS = 64 * 1024
MAX_EXTRA_FIELDS = 12
MAX_VALUE_CHARS = 200

# a key starts at the start of a run of key characters (the lookbehind), and is taken whole (possessive):
# so a long run without "=" is scanned once, not once per character (quadratic on a 20 KB line)
LOGFMT_PAIR = re.compile(r'(?<![\w.@/-])([\w.@/-]++)=("(?:[^"\\]|\\.)*+"|\S*+)')


def _flatten(obj: dict, prefix: str = "", out: dict | None = None, depth: int = 0) -> dict:
    """Nested objects as dotted keys (``log.level``), two levels deep; deeper values as JSON text."""
    out = {} if out is None else out
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 2:
            _flatten(value, name + ".", out, depth + 1)
        else:
            out[name] = value
    return out


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _first(fields: dict, keys) -> tuple[str | None, str | None]:
    for key in keys:
        value = fields.get(key)
        if value is not None and value != "":
            return key, _text(value)
    return None, None


def _level(fields: dict) -> str | None:
    """The record's level: the first level key whose value is a word; a number (a syslog severity, as
    journald's PRIORITY) only where no level key holds a word. PowerDNS Recursor writes ``level="0"`` (its
    verbosity, 0 for every message it always logs) beside ``prio="Notice"``: read as severity 0, every line
    was CRITICAL (measured: 14.4 false alerts per 1,000 lines of its first run, most of them at a 'rare'
    CRITICAL)."""
    values = [_text(fields[key]) for key in LEVEL_KEYS if fields.get(key) not in (None, "")]
    words = [value for value in values if not (value.isascii() and value.strip().isdigit())]
    if words:
        return words[0]
    # bunyan and pino write {"level":30,...}: numbers no syslog severity reaches (it ends at 7)
    return NODE_LEVELS.get(_text(fields.get("level", "")).strip(), values[0] if values else None)


def _assemble(fields: dict, need_message: bool = True, extras: bool = True) -> dict | None:
    """Header groups (as a format's regex would give them) from a flat mapping; None when it has no
    message field and ``need_message``."""
    msg_key, message = _first(fields, MESSAGE_KEYS)
    if message is None and need_message:
        return None
    groups = {"message": message or ""}
    level = _level(fields)
    if level is not None:
        groups["level"] = level
    for name, keys in (("timestamp", TIME_KEYS), ("component", COMPONENT_KEYS),
                       ("process", PROCESS_KEYS), ("host", HOST_KEYS), ("pid", PID_KEYS)):
        _, value = _first(fields, keys)
        if value is not None:
            groups[name] = value
    rest = [f"{k}={_text(v)[:MAX_VALUE_CHARS]}" for k, v in fields.items()
            if extras and k not in KNOWN and k != msg_key and not k.startswith("_") and v not in (None, "")]
    if rest:
        groups["message"] = " ".join(([message] if message else []) + rest[:MAX_EXTRA_FIELDS])
    _status_event(fields, groups)
    return groups


def _status_event(fields: dict, groups: dict) -> None:
    """A record with an HTTP status is an access record: its status reads as its words (``Not Found``), the
    event, as in a plain access log (the number mask makes 404 and 500 both ``<N3>``); its class gives the
    level where the record has none. Caddy logs each 4xx and 5xx at ERROR: with the status as its event,
    a bot's 404 is one routine pattern, not a new ERROR for each path (measured: 28 false alerts per
    1,000 lines of Caddy's first run)."""
    _, status = _first(fields, STATUS_KEYS)
    if status is None or not HTTP_STATUS.fullmatch(status):  # not int() first: 5,000 digits raise ValueError
        return
    level, groups["event"] = http_status(status)
    groups.setdefault("level", level)


def _journal_bytes(value):
    """journald's JSON export writes a field that is not valid UTF-8 or holds control characters as an
    array of byte values (systemd.journal-fields(7)): back to text, control bytes as ``\\xNN`` escapes
    the way nginx and syslog write them."""
    if not (isinstance(value, list) and value and all(isinstance(b, int) and 0 <= b < 256 for b in value)):
        return value
    text = bytes(value).decode("utf-8", errors="replace")
    return "".join(c if c >= " " or c == "\t" else f"\\x{ord(c):02x}" for c in text)


def parse_json_line(line: str) -> dict | None:
    """Header groups of a JSON log line, or None when it is not one (not an object, no message field)."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")) or len(text) > MAX_JSON_CHARS:
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep; read it as text
        return None
    if not isinstance(obj, dict):
        return None
    # journald's export (journalctl -o json) carries dozens of bookkeeping fields (MESSAGE_ID,
    # SYSLOG_FACILITY, sizes...): its MESSAGE, PRIORITY and SYSLOG_IDENTIFIER are the entry
    journald = "__REALTIME_TIMESTAMP" in obj or "__CURSOR" in obj
    if journald:
        obj = {key: _journal_bytes(value) for key, value in obj.items()}
    return _assemble(_flatten(obj), extras=not journald)


def parse_logfmt_line(line: str) -> dict | None:
    """Header groups of a logfmt line (at least two pairs, one of them a message or level), or None."""
    if "=" not in line or len(line) > MAX_JSON_CHARS:
        return None
    pairs = LOGFMT_PAIR.findall(line)
    if len(pairs) < 2:
        return None
    # logfmt only if the pairs are (almost) the whole line: a prose line with one "a=b" inside is not
    covered = sum(len(k) + 1 + len(v) for k, v in pairs) + len(pairs) - 1
    if covered < 0.8 * len(line.strip()):
        return None
    fields = {k: (v[1:-1].replace('\\"', '"') if v.startswith('"') else v) for k, v in pairs}
    if not any(k in fields for k in MESSAGE_KEYS + LEVEL_KEYS):
        return None
    return _assemble(fields, need_message=False)  # level=info with fields and no msg: the fields are it
