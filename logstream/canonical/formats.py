"""The log line formats logstream recognises out of the box: one regex per header layout.

Each format is a regex with named groups. The groups the canonical line knows are ``timestamp``,
``host``, ``process``, ``pid``, ``level``, ``component``, ``event`` and ``message`` (``content``
is accepted as another name for the message, as Loghub-style specs write it); ``label`` marks a
label column (BGL, Thunderbird), which is kept out of what the model reads; any other named group
is kept in ``fields``. Formats are tried in the order of ``FORMATS``: specific layouts first, so a
generic one (an ISO timestamp and the rest) only takes lines nothing more precise describes.

Each layout is described where it comes from; ``tests/test_canonical.py`` checks each on real lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Callable

MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
ISO8601 = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
# RFC 3164 / BSD syslog "Mmm dd hh:mm:ss", with the variants rsyslog and journald write: a year
# before or after the day, fractions of a second.
SYSLOG_TIME = (rf"(?:\d{{4}}\s+)?{MONTH}\s+\d{{1,2}}(?:\s+\d{{4}})?\s+\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{1,9}})?")
RFC3339 = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})"
# C's ctime / asctime "Www Mmm dd hh:mm:ss yyyy" (Perl's scalar localtime, Python's time.ctime): SpamAssassin's
# spamd writes "Sun Dec  6 08:49:47 2026 [26434] info: spamd: ..." to its log file
CTIME = rf"{WEEKDAY} {MONTH} [ \d]\d \d{{2}}:\d{{2}}:\d{{2}} \d{{4}}"
# the same fields with the year before the time, as JavaScript's Date.toString() and InspIRCd write them:
# "Sun Dec 06 2026 11:46:38"
DATE_STRING = rf"{WEEKDAY} {MONTH} [ \d]\d \d{{4}} \d{{2}}:\d{{2}}:\d{{2}}"
LEVEL_WORD = (r"(?i:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRIT|CRITICAL|FATAL|SEVERE|ALERT|EMERG"
              r"|PANIC|FINE|FINER|FINEST|CONFIG|TRC|DBG|INF|WRN|FTL)")  # the three-letter ones: Go's NATS
# A syslog tag: a program name or path, up to three words ("Microsoft Word"), maybe a facility in
# parentheses ("sshd(pam_unix)"); no '<', '>', ':' or '[' inside.
TAG_WORD = r"[A-Za-z_./][\w.\-/()@]{0,63}"  # a one-word tag
PROCESS = TAG_WORD + r"(?: [\w.\-/()@]{1,32}){0,2}"
PID = r"\d+(?:\.\d+)?"  # atftpd names the thread too: "atftpd[13009.140622073362112]"


@dataclass(frozen=True)
class LogFormat:
    name: str
    description: str
    pattern: str
    # fills in fields the header does not carry directly (a level from a syslog priority, ...)
    post: Callable[[dict], None] | None = None
    regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "regex", re.compile(self.pattern))
        names = set(self.regex.groupindex)
        if not names & {"message", "content"}:
            raise ValueError(f"format {self.name!r}: the regex needs a named group 'message' (or 'content')")

    def match(self, line: str) -> dict | None:
        found = self.regex.match(line)
        if found is None:
            return None
        # a format of two layouts names the second one's groups with a trailing 2 (``level2``: a regex
        # cannot name two groups alike); whichever matched is read under the plain name
        groups = {k[:-1] if k.endswith("2") else k: v for k, v in found.groupdict().items() if v is not None}
        if self.post is not None:
            self.post(groups)
        return groups


# --- levels ---------------------------------------------------------------------------------------

# One spelling per severity, whatever the source wrote: "W", "warning" and "WARN" read the same,
# so what the model learned of warnings carries from one format to another.
LEVEL_ALIASES = {
    "TRACE": "TRACE", "FINEST": "TRACE", "FINER": "TRACE", "V": "TRACE", "VERBOSE": "TRACE", "TRC": "TRACE",
    "DEBUG": "DEBUG", "D": "DEBUG", "DBG": "DEBUG", "FINE": "DEBUG", "CONFIG": "DEBUG",
    "INFO": "INFO", "I": "INFO", "INF": "INFO", "INFORMATION": "INFO", "INFORMATIONAL": "INFO",
    "NOTE": "INFO", "SYSTEM": "NOTICE",  # MySQL's and MariaDB's information notes; MySQL 8's start and stop
    "NOTICE": "NOTICE", "N": "NOTICE",
    "WARN": "WARN", "WARNING": "WARN", "W": "WARN", "WRN": "WARN",
    "ERROR": "ERROR", "ERR": "ERROR", "E": "ERROR", "SEVERE": "ERROR",
    "CRITICAL": "CRITICAL", "CRIT": "CRITICAL", "ALERT": "CRITICAL", "EMERG": "CRITICAL",
    "EMERGENCY": "CRITICAL", "PANIC": "CRITICAL",
    "FATAL": "FATAL", "F": "FATAL", "A": "FATAL", "FTL": "FATAL",  # logcat's A is "assert"
    "LOG": "INFO", "DEBUG1": "DEBUG", "DEBUG2": "DEBUG", "DEBUG3": "DEBUG", "DEBUG4": "DEBUG", "DEBUG5": "DEBUG",
}
# syslog severities 0..7 (RFC 5424 table 2)
SYSLOG_SEVERITY = ("CRITICAL", "CRITICAL", "CRITICAL", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG")


def normalize_level(level: str | None) -> str | None:
    """The canonical spelling of a level; unknown levels are kept, upper-cased."""
    if level is None:
        return None
    level = level.strip()
    if not level or level == "-":
        return None
    if level.isascii() and level.isdigit():  # a syslog severity; not "²" or 5,000 digits, which int() refuses
        return SYSLOG_SEVERITY[int(level)] if len(level) <= 2 and int(level) < len(SYSLOG_SEVERITY) else None
    return LEVEL_ALIASES.get(level.upper(), level.upper())


def _level_from_priority(groups: dict) -> None:
    """Syslog <PRI> = facility * 8 + severity."""
    if "pri" in groups and "level" not in groups:
        groups["level"] = SYSLOG_SEVERITY[int(groups["pri"]) % 8]


def _syslog_header(groups: dict) -> None:
    """A level from the priority; and a line with no tag had no host either: the word after the time is
    the message's own (PowerDNS writes "Dec 05 18:00:06 Remote 127.0.0.1 wants ..." on stderr; read with
    that word as a host, the model never saw it). Loghub's Linux, Mac and OpenSSH logs carry a tag on all
    but one of 6,000 lines."""
    _level_from_priority(groups)
    if groups.get("host") and not groups.get("process"):
        groups["message"] = f"{groups.pop('host')} {groups.get('message') or ''}".rstrip()


def _rfc5424(groups: dict) -> None:
    _level_from_priority(groups)
    for name in ("host", "process", "pid", "component"):  # NILVALUE
        if groups.get(name) == "-":
            del groups[name]


def http_status(status: str) -> tuple[str, str]:
    """(level, event) of an HTTP status: its class gives the level, and the status reads as its words
    (``Forbidden``, ``Not Found``), since the number mask would make 403, 404 and 500 all ``<N3>``."""
    level = {"5": "ERROR", "4": "WARN"}.get(status[:1], "INFO")
    try:
        return level, HTTPStatus(int(status)).phrase
    except ValueError:  # a status of its own (nginx's 499), or none
        return level, f"status {status}"


def _access_level(groups: dict) -> None:
    """An access log has no level: its status gives one, and its words are the event (``http_status``)."""
    groups["level"], groups["event"] = http_status(groups.get("status", ""))


# an FTP server's reply codes (RFC 959, 4.2): 4yz transient and 5yz permanent negative completion
FTP_NEGATIVE_REPLY = re.compile(r'FTP response: Client "[^"]*", "([45])\d\d ')


def _vsftpd(groups: dict) -> None:
    """vsftpd writes no level; with log_ftp_protocol, a negative reply is the server refusing or failing
    (``530 Please login with USER and PASS.``): its class gives the level, as a status does in an
    access log. The reply's own words stay its pattern (``Login incorrect`` is not ``Permission denied``)."""
    reply = FTP_NEGATIVE_REPLY.match(groups.get("message") or "")
    if reply:
        groups["level"] = {"4": "WARN", "5": "ERROR"}[reply.group(1)]


# redis's level characters (server.c, serverLogRaw): . debug, - verbose, * notice, # warning; and the role
# of the process that wrote the line: X sentinel, C a forked child (saves, rewrites), S replica, M master
REDIS_LEVELS = {".": "DEBUG", "-": "INFO", "*": "NOTICE", "#": "WARN"}
REDIS_ROLES = {"X": "sentinel", "C": "child", "S": "replica", "M": "master"}


def _redis(groups: dict) -> None:
    groups["level"] = REDIS_LEVELS[groups["level"]]
    groups["component"] = REDIS_ROLES.get(groups.pop("role"), None) or ""


def _bind_level(groups: dict) -> None:
    """BIND writes debug levels as ``debug 3``: one DEBUG."""
    if groups.get("level", "").startswith("debug"):
        groups["level"] = "DEBUG"


# Exim's main log (exim spec, "Log files"): a message's lines carry its id and a flag; the flags of a
# delivery that failed (**) or was deferred (==) are its level. Lines about no message (connections,
# rejections, queue runs) are recognised by how exim opens them, so that a stream of another program
# with an ISO time in front (dpkg.log) is never read as exim.
EXIM_ID = r"[0-9A-Za-z]{6}-[0-9A-Za-z]{6,11}-[0-9A-Za-z]{2,4}"
EXIM_OPENINGS = (r"SMTP |H=|F=<|U=|exim \d|Start queue run|End queue run|no MAIL in SMTP|no host name found|"
                 r"TLS error on connection|unexpected disconnection while|rejected (?:MAIL|RCPT|EHLO|HELO|AUTH)|"
                 r"\w+ authenticator failed for|pid \d+: SIGHUP")
EXIM_FLAGS = {"**": "ERROR", "==": "WARN"}  # delivery failed; delivery deferred (a temporary problem)
# log_selector +subject: the subject is the sender's words, not exim's (a "Build failed" mail is no failure)
EXIM_SUBJECT = re.compile(r'(?<=\sT=)"(?:[^"\\]|\\.)*"')


def _exim(groups: dict) -> None:
    message = groups["message"]
    flag = message[:2]
    if flag in EXIM_FLAGS and message[2:3] == " ":
        groups["level"] = EXIM_FLAGS[flag]
    groups["message"] = EXIM_SUBJECT.sub('"..."', message)


# Unbound's own log file (use-syslog: no): [epoch] or, with log-time-ascii, a syslog time; then
# unbound[pid:thread] level: message. With log-replies, a reply line ends in the DNS RCODE (RFC 1035
# 4.1.1, RFC 6895), which sets the level as an HTTP status does in an access log: the server failing
# (SERVFAIL) is an error, a query it refused or could not parse a warning.
DNS_RCODE_LEVELS = {"SERVFAIL": "ERROR", "FORMERR": "WARN", "NOTIMP": "WARN", "REFUSED": "WARN", "NOTAUTH": "WARN"}
UNBOUND_REPLY = re.compile(r"^\S+ \S+ \S+ \S+ (?P<rcode>[A-Z]{4,8}) (?:\d+\.\d+ \d+ \d+|- - -)\s*$")  # a malformed query's ends in a space


def _unbound(groups: dict) -> None:
    if groups["level"] == "fatal error":
        groups["level"] = "FATAL"
    reply = UNBOUND_REPLY.match(groups["message"]) if groups["level"] == "info" else None
    if reply:
        groups["level"] = DNS_RCODE_LEVELS.get(reply.group("rcode"), "INFO")
        groups["event"] = reply.group("rcode")


# PHP's error_log names its levels in words ("PHP Fatal error:"): a fatal error ends the script, not the server
PHP_LEVELS = {"Fatal error": "ERROR", "Parse error": "ERROR", "Catchable fatal error": "ERROR",
              "Recoverable fatal error": "ERROR", "Warning": "WARN", "Notice": "NOTICE", "Deprecated": "NOTICE",
              "Strict Standards": "NOTICE"}


CUPS_LEVELS = {"X": "CRITICAL", "A": "CRITICAL", "C": "CRITICAL", "E": "ERROR", "W": "WARN", "N": "NOTICE",
               "I": "INFO", "D": "DEBUG", "d": "DEBUG"}  # cupsd.conf(5) LogLevel: emerg ... debug2


def _cups_level(groups: dict) -> None:
    groups["level"] = CUPS_LEVELS[groups["level"]]


def _clamav_level(groups: dict) -> None:
    """A signature match (``/path: Eicar-Signature FOUND``) is ClamAV's alarm, written with no level: read
    as a warning, as clamd's other reports of trouble are."""
    if "level" not in groups and groups.get("message", "").endswith(" FOUND"):
        groups["level"] = "WARNING"


def _php_level(groups: dict) -> None:
    if groups.get("level") in PHP_LEVELS:
        groups["level"] = PHP_LEVELS[groups["level"]]


# --- the formats, most specific first -----------------------------------------------------------

FORMATS: tuple[LogFormat, ...] = (
    LogFormat(
        "bgl", "Blue Gene/L RAS log (Loghub BGL): [label,] epoch, date, node, time, node, type, component, level",
        r"^(?:(?P<label>\S+) )?(?P<epoch>\d{9,11}) (?P<date>\d{4}\.\d{2}\.\d{2}) (?P<node>\S+) "
        r"(?P<timestamp>\d{4}-\d{2}-\d{2}-\d{2}\.\d{2}\.\d{2}\.\d+) (?P<host>\S+) (?P<kind>[A-Z]+) "
        r"(?P<component>\S+) (?P<level>[A-Z]+) ?(?P<message>.*)$"),
    LogFormat(
        "thunderbird", "Thunderbird supercomputer log (Loghub): [label,] epoch, date, node, then a syslog line",
        rf"^(?:(?P<label>\S+) )?(?P<epoch>\d{{9,11}}) (?P<date>\d{{4}}\.\d{{2}}\.\d{{2}}) (?P<node>\S+) "
        rf"(?P<timestamp>{MONTH}\s+\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}) (?P<host>\S+) "
        rf"(?:(?P<process>{PROCESS})(?:\[(?P<pid>\d+)\])?: )?(?P<message>.*)$"),
    LogFormat(
        "hdfs", "Hadoop HDFS v1 (Loghub HDFS): yymmdd hhmmss pid level component: message",
        r"^(?P<timestamp>\d{6} \d{6}) (?P<pid>\d+) (?P<level>[A-Z]+) (?P<component>[^\s:]+): ?(?P<message>.*)$"),
    LogFormat(
        "hpc", "HPC cluster log (Loghub HPC): id node component state epoch flag message",
        r"^(?P<logid>\d+) (?P<host>\S+) (?P<component>\S+) (?P<event>\S+) (?P<timestamp>\d{9,11}) "
        r"(?P<flag>-?\d+) (?P<message>.*)$"),
    LogFormat(
        "openstack", "OpenStack oslo.log (Loghub OpenStack adds the file name): time pid level module message",
        r"^(?:(?P<logfile>\S+\.log\S*) )?(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+) (?P<pid>\d+) "
        r"(?P<level>[A-Z]+) (?P<component>[\w.]+) (?P<message>.*)$"),
    LogFormat(
        "android", "Android logcat, threadtime (Loghub Android): mm-dd time pid tid level tag: message",
        r"^(?P<timestamp>\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3})\s+(?P<pid>\d+)\s+(?P<tid>\d+)\s+"
        r"(?P<level>[VDIWEFA])\s+(?P<component>.*?)\s*: ?(?P<message>.*)$"),
    LogFormat(
        "healthapp", "HealthApp (Loghub): time|component|pid|message",
        r"^(?P<timestamp>\d{8}-\d{1,2}:\d{1,2}:\d{1,2}:\d{1,3})\|(?P<component>[^|]*)\|(?P<pid>\d+)\|"
        r"(?P<message>.*)$"),
    LogFormat(
        "proxifier", "Proxifier (Loghub): [mm.dd time] program - message",
        r"^\[(?P<timestamp>\d{2}\.\d{2} \d{2}:\d{2}:\d{2})\] (?P<process>\S+)(?: \*64)? - (?P<message>.*)$"),
    LogFormat(
        "windows_cbs", "Windows CBS/CSI servicing log (Loghub Windows): time, level component message",
        r"^(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}), (?P<level>\w+)\s+(?P<component>\S+)\s+"
        r"(?P<message>.*)$"),
    LogFormat(
        "zookeeper", "ZooKeeper log4j layout (Loghub Zookeeper): time - level [thread:class@line] - message",
        rf"^(?P<timestamp>{ISO8601}) - (?P<level>[A-Z]+)\s+\[(?P<thread>.*):(?P<component>[^:\]]+)\] - "
        r"(?P<message>.*)$"),
    LogFormat(
        "postgresql", "PostgreSQL's default log_line_prefix '%m [%p] ': time zone [pid] LEVEL:  message",
        r"^(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? [A-Z]{2,5}) \[(?P<pid>\d+)\] "
        r"(?:(?P<user>[^@\s]+)@(?P<database>\S+) )?(?P<level>[A-Z]+\d?):\s+(?P<message>.*)$"),
    LogFormat(
        "mysql", "MariaDB's and MySQL's error log: time (MariaDB pads the hour with a space; MySQL 5.7 and 8 write "
        "RFC 3339), a thread id, [Note] / [Warning] / [ERROR] / [System], MySQL 8's [MY-code] [subsystem], message",
        r"^(?P<timestamp>\d{4}-\d{2}-\d{2}(?:T\d{2}|\s+\d{1,2}):\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
        r"|\d{6}\s+\d{1,2}:\d{2}:\d{2})\s+(?:(?P<thread>\d+)\s+)?\[(?P<level>Note|Warning|ERROR|Error|System)\]\s+"
        r"(?:\[(?P<code>MY-\d+)\]\s+\[(?P<component>\w+)\]\s+)?(?P<message>.*)$"),
    LogFormat(
        "rspamd", "Rspamd's log file: time #pid(process type) <task or config id>; module; function: message "
        "(the id, a task's or a configuration's own, is not read)",
        r"^(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) #(?P<pid>\d+)\((?P<process>[\w-]+)\) "
        r"(?:<(?P<uid>[^>\s]*)>; )?(?:(?P<component>[\w-]+); )?(?P<message>.*)$"),
    LogFormat(
        "spark", "Spark log4j default layout (Loghub Spark): yy/MM/dd time level class: message",
        r"^(?P<timestamp>\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) (?P<level>[A-Z]+) (?P<component>[^\s:]+): "
        r"(?P<message>.*)$"),
    LogFormat(
        "log4j", "log4j / Java / Python logging / Rust tracing: ISO time, level, [thread], logger: message "
        "(Hadoop, logstream's own log)",
        rf"^(?P<timestamp>{ISO8601})\s+(?:- )?(?P<level>{LEVEL_WORD})\s+(?:\[(?P<thread>[^\]]*)\]\s+)?"
        r"(?P<component>[\w.$]+(?:::[\w.$]+)*)(?::| -) ?(?P<message>.*)$"),
    LogFormat(
        "logback", "logback's default layout: time [thread] level logger - message",
        rf"^(?P<timestamp>{ISO8601}|\d{{2}}:\d{{2}}:\d{{2}}\.\d{{3}}) \[(?P<thread>[^\]]*)\] "
        rf"(?P<level>{LEVEL_WORD})\s+(?P<component>\S+) - (?P<message>.*)$"),
    LogFormat(
        "python", "Python logging: asctime - name - levelname - message, and basicConfig's LEVEL:name:message",
        rf"^(?:(?P<timestamp>{ISO8601}) - (?P<component>\S+) - (?P<level>{LEVEL_WORD}) - "
        rf"|(?P<level2>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<component2>[^:\s]*):)(?P<message>.*)$"),
    LogFormat(
        "klog", "Go klog / glog (Kubernetes): Lmmdd time thread file:line] message",
        r"^(?P<level>[IWEF])(?P<timestamp>\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+(?P<pid>\d+) "
        r"(?P<component>[^\s:\]]+:\d+)\] (?P<message>.*)$"),
    LogFormat(
        "nginx_error", "Nginx error log: yyyy/mm/dd time [level] pid#tid: message",
        r"^(?P<timestamp>\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) \[(?P<level>\w+)\] (?P<pid>\d+)#(?P<tid>\d+): "
        r"(?P<message>.*)$"),
    LogFormat(
        "apache_error", "Apache httpd error log, 2.2 (Loghub Apache) and 2.4: [time] [module:level] [pid] message",
        rf"^\[(?P<timestamp>(?:{WEEKDAY} )?{MONTH} \d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)? \d{{4}})\] "
        r"\[(?:(?P<component>[\w-]+):)?(?P<level>\w+)\](?: \[pid (?P<pid>\d+)(?::tid \d+)?\])? ?(?P<message>.*)$"),
    LogFormat(
        "access_log", "Apache/Nginx access log, common and combined: client ident user [time] \"request\" "
        "status size ...; the status class sets the level, the status reads as its reason phrase",
        # a program that writes its access records into its own log tags them: InfluxDB's "[httpd] ..."
        rf"^(?:\[(?P<component>[\w.-]{{1,32}})\] )?"
        rf"(?P<client>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<timestamp>\d{{2}}/{MONTH}/\d{{4}}:\d{{2}}:\d{{2}}:"
        r"\d{2} [+-]\d{4})\] (?P<message>\"[^\"]*\" (?P<status>\d{3}) .*)$",
        post=_access_level),
    LogFormat(
        "squid_access", "Squid's native access log: epoch.ms elapsed client RESULT/status bytes method URL user "
        "HIER/peer type; the status sets the level as in an access log, the result code (TCP_DENIED) stays in the text",
        r"^(?P<timestamp>\d{9,11}\.\d{3}) +(?P<elapsed>\d+) (?P<client>\S+) "
        r"(?P<message>[A-Z_]+/(?P<status>\d{3}) .*)$",
        post=_access_level),
    LogFormat(
        "haproxy_http", "HAProxy's HTTP log (option httplog), as its `log stdout format raw` writes it: client:port "
        "[time] frontend backend/server timers status bytes ...; the status sets the level as in an access log",
        r"^(?P<client>\S+:\d+) \[(?P<timestamp>\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}\.\d{3})\] "
        r"(?P<message>\S+ \S+/\S+ -?\d+/-?\d+/-?\d+/-?\d+/\+?-?\d+ (?P<status>-?\d{1,3}) .*)$",
        post=_access_level),
    LogFormat(
        "haproxy", "HAProxy's own messages on stderr: [LEVEL] (pid) : message",
        r"^\[(?P<level>NOTICE|WARNING|ALERT|EMERG|DEBUG|INFO|ERR)\]\s+\((?P<pid>\d+)\) : (?P<message>.*)$"),
    LogFormat(
        "redis", "redis-server's log: pid:role dd Mon yyyy time level-character message (. debug, - verbose, "
        "* notice, # warning)",
        r"^(?P<pid>\d+):(?P<role>[XCSM]) (?P<timestamp>\d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2}\.\d{3}) "
        r"(?P<level>[.\-*#]) (?P<message>.*)$", post=_redis),
    LogFormat(
        "bind", "BIND named's file channel with print-time, print-category and print-severity: "
        "dd-Mon-yyyy time category: severity: message",
        r"^(?P<timestamp>\d{2}-\w{3}-\d{4} \d{2}:\d{2}:\d{2}(?:\.\d{3})?) (?:(?P<component>[\w-]+): )?"
        r"(?P<level>debug(?: \d+)?|info|notice|warning|error|critical): (?P<message>.*)$", post=_bind_level),
    LogFormat(
        "celery", "Celery's worker log: [yyyy-mm-dd time,ms: LEVEL/process] message (the process: MainProcess, "
        "Beat, ForkPoolWorker-N, whose number is not read)",
        r"^\[(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}): (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)"
        r"/(?P<component>[A-Za-z][\w.]*?)(?:-(?P<worker>\d+))?\] (?P<message>.*)$"),
    LogFormat(
        "cups", "CUPS's error_log: a level letter (E, W, N, I, D...) [dd/Mon/yyyy:time zone] [Job N] message",
        r"^(?P<level>[XACEWNIDd]) \[(?P<timestamp>\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})\] "
        r"(?:\[(?P<component>Job|Client) (?P<job>\d+)\] )?(?P<message>.*)$", post=_cups_level),
    LogFormat(
        "clamav", "ClamAV's clamd and freshclam log files: [LEVEL: ]Www Mmm dd time yyyy -> message; a signature "
        "match (... FOUND) reads as a warning",
        rf"^(?:(?P<level>ERROR|WARNING|LibClamAV Error|LibClamAV Warning): )?(?P<timestamp>{WEEKDAY} {MONTH} +\d{{1,2}} "
        r"\d{2}:\d{2}:\d{2} \d{4}) -> (?P<message>.*)$", post=_clamav_level),
    LogFormat(
        "php", "PHP-FPM's log and PHP's error_log: [dd-Mon-yyyy time] LEVEL: [pool name] message, or "
        "[dd-Mon-yyyy time zone] PHP Warning: / PHP Fatal error: message",
        r"^\[(?P<timestamp>\d{2}-[A-Z][a-z]{2}-\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [\w/+-]+)?)\] "
        r"(?:(?P<level>DEBUG|NOTICE|WARNING|ERROR|ALERT): (?:\[pool (?P<component>[^\]\s]+)\] )?"
        r"|PHP (?P<level2>(?:Catchable |Recoverable )?[Ff]atal error|Parse error|Warning|Notice|Deprecated|"
        r"Strict Standards): +)?(?P<message>.*)$", post=_php_level),
    LogFormat(
        "prosody", "Prosody's log file: Mmm dd time source<TAB>level<TAB>message (a module, a host, or a "
        "connection's id such as c2s55acb38240c0, which is not read)",
        rf"^(?P<timestamp>{SYSLOG_TIME}) (?:(?P<session>(?:c2s|s2sin|s2sout|http|bosh|smacks)[0-9a-f]{{6,}})"
        r"|(?P<component>\S+))\t(?P<level>debug|info|warn|error)\t(?P<message>.*)$"),
    LogFormat(
        "uwsgi_request", "uWSGI's request log: [pid: N|app: N|req: N/N] client (user) {vars} [time] METHOD "
        "uri => generated ... (HTTP/1.1 status) ...; the status sets the level as in an access log",
        r"^\[pid: (?P<pid>\d+)\|app: -?\d+\|req: -?\d+/\d+\] (?P<client>\S*) \((?P<user>[^)]*)\) "
        r"\{\d+ vars in \d+ bytes\} \[(?P<timestamp>[^\]]+)\] "
        r"(?P<message>.*\(HTTP/[\d.]+ (?P<status>\d{3})\).*)$", post=_access_level),
    LogFormat(
        "vsftpd", "vsftpd's log (xferlog_std_format NO, with log_ftp_protocol or not): ctime [pid N] [user] message",
        rf"^(?P<timestamp>{WEEKDAY} {MONTH} [ \d]\d \d{{2}}:\d{{2}}:\d{{2}} \d{{4}}) \[pid (?P<pid>\d+)\] "
        r"(?:\[(?P<user>[^\]]*)\] )?(?P<message>.*)$", post=_vsftpd),
    LogFormat(
        "mosquitto", "mosquitto's log with its default time stamp: epoch seconds: message",
        r"^(?P<timestamp>\d{10}): (?P<message>.*)$"),
    LogFormat(
        "unbound", "Unbound's own log file: [epoch] or a syslog time, unbound[pid:thread] level: message; a reply "
        "line's DNS RCODE sets the level (SERVFAIL: ERROR; REFUSED, FORMERR, NOTIMP, NOTAUTH: WARN) and reads as its event",
        rf"^(?:\[(?P<epoch>\d{{9,11}})\]|(?P<timestamp>{SYSLOG_TIME})) (?P<process>[\w-]+)\[(?P<pid>\d+):(?P<thread>\d+)\] "
        r"(?P<level>debug|info|notice|warning|error|fatal error|operational): (?P<message>.*)$", post=_unbound),
    LogFormat(
        "exim", "Exim's main log: time [pid] message-id flag ... (** failed: ERROR, == deferred: WARN), and the "
        "lines about no message that exim writes; the id is not read (a message's own), nor a mail's subject",
        rf"^(?P<timestamp>\d{{4}}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d{{3}})?(?: [+-]\d{{4}})?) "
        rf"(?:\[(?P<pid>\d+)\] )?(?:(?P<msgid>{EXIM_ID}) (?P<message>.*)|(?P<message2>(?:{EXIM_OPENINGS}).*))$",
        post=_exim),
    LogFormat(
        "rfc5424", "Syslog RFC 5424: <pri>1 time host app procid msgid [structured data] message",
        r"^<(?P<pri>\d{1,3})>1 (?P<timestamp>\S+) (?P<host>\S+) (?P<process>\S+) (?P<pid>\S+) "
        r"(?P<component>\S+) (?P<structured>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: \ufeff?(?P<message>.*))?$",
        post=_rfc5424),
    LogFormat(
        "syslog", "Syslog RFC 3164 / BSD, as syslog files and journald's short exports write it (Loghub "
        "Linux, Mac, OpenSSH): [<pri>]time host tag[pid]: message",
        # a level word is no host name: "2026-...Z WARN serve{...}: ..." is Rust tracing (iso_prefix); nor is
        # a tag: a program writing its own file in syslog's time has none ("Dec  4 22:23:08 dnsmasq[26373]: ...")
        rf"^(?:<(?P<pri>\d{{1,3}})>)?(?P<timestamp>{SYSLOG_TIME}|{RFC3339})\s+(?=\S)(?!{LEVEL_WORD}:?\s)"
        rf"(?:(?!{TAG_WORD}(?:\[{PID}\])?:\s)(?P<host>\S+)\s+)?"
        # MIT Kerberos writes its level after the pid: "krb5kdc[24909](info): ..."
        rf"(?:(?P<process>{PROCESS})(?:\[(?P<pid>{PID})\])?(?:\((?P<level>{LEVEL_WORD})\))?(?: \(\S+?\))?: ?)?"
        rf"(?P<message>.*)$",
        post=_syslog_header),
    LogFormat(
        "dmesg", "Kernel ring buffer (dmesg): [seconds since boot] message",
        r"^\[\s*(?P<timestamp>\d+\.\d+)\] (?P<message>.*)$"),
    LogFormat(
        "iso_prefix", "Anything that opens with an ISO 8601 / RFC 3339 time, C's ctime, JavaScript's date string "
        "or an epoch in brackets (dpkg.log, Rust tracing, Go's log package, Faust's '[time] [pid] [LEVEL] message', "
        "NATS's '[pid] time [LVL] message', spamd's 'ctime [pid] level: message', svnserve's 'pid time ...', "
        "InspIRCd, Nagios's '[epoch] message'): an optional pid, the time, an optional pid and level, the rest",
        rf"^(?:\[?(?P<pid>\d+)\]?\s+(?=\[?\d{{4}}[-/]))?"
        rf"\[?(?P<timestamp>{ISO8601}|{CTIME}|{DATE_STRING}|\d{{4}}/\d{{2}}/\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:[.,]\d+)?"
        rf"|(?<=\[)\d{{9,11}}(?:\.\d+)?(?=\]))"
        rf"\]?:?\s*(?:[|,-]\s*)?(?:\[\d+\]\s+)?(?:\[?(?P<level>{LEVEL_WORD})\]?:?\s+)?(?P<message>.*)$"),
)

FORMATS_BY_NAME: dict[str, LogFormat] = {f.name: f for f in FORMATS}
