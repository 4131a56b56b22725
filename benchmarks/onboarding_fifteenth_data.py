#!/usr/bin/env python3
"""Generate the fifteenth onboarding corpus: real log lines written by real programs, grouped into events.

A fifteenth corpus built exactly like benchmarks/onboarding_fourteenth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs at a restart, wrong passwords,
garbage on the wire, unreachable targets, killed processes, a step of the work made to fail...).  It never
writes a log line itself (the passive check results and external commands it writes to Nagios's command
file are Nagios's input, not its log).  The programs trace multi-step work per named item (a write's or a
continuous query's steps in InfluxDB, an svn connection's protocol steps by the pid of its child, a service's
checks, alerts and notifications in Nagios, a SIP call's INVITE, replies, ACK and BYE by Call-ID in Kamailio,
an IRC client's accept, connect class, registration and quit by its UID in InspIRCd).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends influxdb subversion
nagios4-core monitoring-plugins-basic kamailio inspircd; also util-linux (setpriv) and python3.  The clients
are python code in this script (HTTP with the InfluxDB line protocol and InfluxQL, Nagios's external command
file, a SIP user agent over UDP with digest authentication, IRC clients and bots over TCP) and the programs'
own CLIs (svn, svnadmin).  No system service of these packages needs to run: each daemon is started directly
as a plain process, without systemd, in a private temporary folder with private ports; svnserve runs as
nobody, nagios as nagios, inspircd as irc (users the packages create); no user is created):

  influxdb   InfluxDB 1.6 (influxd -config, authentication on, logfmt on stderr with the HTTP access log):
             `ts=2026-12-06T05:40:01.123456Z lvl=info msg="Executing query" log_id=0Abc service=query
             query="SELECT ..."`, `[httpd] 127.0.0.3 - collector [06/Dec/2026:05:40:01 +0000] "POST
             /write?db=telegraf HTTP/1.1" 204 0 "-" "Telegraf/1.25.0 Go/1.19.5" 8b1b878f-... 3942`.  Normal:
             collectors on 8 hosts writing metrics of 24 servers, an application writing events, dashboards and
             analysts querying, health checks, an admin's SHOW statements, a continuous query, 2 clean restarts.
             Broken: wrong credentials, statements without the privilege, bad line protocol, bad InfluxQL,
             limits exceeded (tag values, body size), garbage bodies, broken influxdb.conf / the port taken at a
             restart.
  svnserve   Subversion 1.14 (svnserve -d --foreground --log-file, a password file and an authz file, three
             repositories): `12345 2026-12-06T05:40:01.123456Z 127.0.0.1 alice webapp commit r57`.  Normal: 10
             users and a CI account running svn (checkouts, updates, commits, log, list, cat, info, diff,
             blame, export), 2 clean restarts.  Broken: wrong passwords / unknown users, paths the authz file
             forbids, URLs of no repository, garbage on the wire, repositories damaged on disk, the port taken /
             a missing root / a broken svnserve.conf / a missing password file / a bad option at a restart.
  nagios     Nagios Core 4.4 (nagios4 in the foreground, a private nagios.cfg, interval_length 1):
             `[1796546097] SERVICE ALERT: db01;pgsql;CRITICAL;SOFT;1;connect to address 127.0.0.1 and port
             5432: Connection refused`.  Normal: active checks (check_http, check_tcp through a wrapper) of 5
             local services, agents of 5 hosts sending passive results through the command file (OK, now and
             then WARNING), an admin's external commands, 2 clean restarts.  Broken: checked services stopped,
             plugins missing / crashing / returning nonsense, plugins hanging past the timeout, results for
             unknown hosts and services, bad external commands, the notification command hanging, broken
             object definitions / a stale command file / bad directives at a restart.
  kamailio   Kamailio 5.6 (kamailio -DD -E, a routing script with auth_db on db_text, usrloc in memory,
             record-routing, pike and xlog lines; its stderr and stdout): ` 2(4242) INFO: <script>: MESSAGE
             onb15-3f2a... sip:alice@onb15.test -> sip:bob@onb15.test relayed to sip:bob@127.0.0.3:40001`,
             ` 1(4241) ERROR: <core> [core/parser/msg_parser.c:749]: parse_msg(): ...`.  Normal: 10 SIP phones
             (python UAs) registering with digest authentication, sending MESSAGEs, making calls (INVITE, ACK,
             BYE), keepalives, 2 clean restarts.  Broken: wrong credentials, calls to users not registered,
             registered phones gone (408), malformed SIP, request floods blocked by pike, workers SIGKILLed,
             broken kamailio.cfg / the port taken at a restart.
  inspircd   InspIRCd 3.15 (inspircd --nofork, its log file at level debug without USERINPUT / USEROUTPUT,
             its stdout appended): `Sun Dec 06 2026 05:40:01 CONNECT: Client connecting on port 6667 (class
             main): alice12!alice@127.0.0.2 (127.0.0.2) [Alice B.]`.  Normal: IRC clients of 10 users on 5
             hosts (join, talk, topics, nick changes, WHOIS, LIST, away, part, quit), 3 bots that stay
             connected, operators (OPER, STATS, REHASH, WALLOPS, CHECK, CLONES), 2 clean restarts.  Broken:
             failed OPER attempts, K-lined and Z-lined clients, floods, a connect class's per-address limit,
             registration timeouts, garbage on the wire, wrong connection passwords, broken inspircd.conf / the
             port taken at a restart.

Layout written under --out (default benchmarks/data/onboarding_fifteenth):

    manifest.json            one entry per source + generation date + command (+ the run's wall time)
    <source>/normal.log      lines of the normal phase, in the order written
    <source>/errors.log      lines caused by breaking the program
    <source>/errors.jsonl    {"line": ..., "kind": ..., "event": ...} for each errors.log line

How normal and error lines are separated (the same rule for every source):
the normal phase runs first and everything the program logs during it goes to
normal.log (truncated to --lines, hard cap 12,000).  Then each breakage kind runs
as its own phase, made of several occurrences; each occurrence runs in its own
time window (the breakage, then a pause for the program to log about it), and
only the lines logged inside these windows are considered.  A line is kept in
errors.log (with the phase name as its "kind" and the occurrence as its "event")
when

  * its level marks it as a problem (influxdb lvl=warn / error lines, access log
    lines with a status of 400 or more, lines of failures; svnserve ERR and
    "Authorization Failed" steps, lines of failures; nagios Warning / Error
    lines, commands that "returned error", alerts, notifications and check
    results in a CRITICAL, UNKNOWN, DOWN or UNREACHABLE state; kamailio WARNING /
    ERROR / CRITICAL / ALERT lines; inspircd lines of failures, errors, denials,
    timeouts, floods and bans), where a problem word counts only as a word of the
    message, never inside a path, a file name or a module / logger name, or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; process ids, UIDs, Call-IDs, user, host and nick
    names and paths masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (nagios "EXTERNAL COMMAND:"
lines, which repeat the command the workload wrote).  An occurrence of which no
line is kept makes no event.

Usage:
    python benchmarks/onboarding_fifteenth_data.py --out benchmarks/data/onboarding_fifteenth \\
        [--sources influxdb,svnserve,nagios,kamailio,inspircd] [--lines 6000] [--seed 15015] \\
        [--min-normal-seconds 40]
"""
from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import http.client
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import FileLog, free_port, need, say, wait_port, write_atomic  # noqa: E402
from onboarding_eighth_data import tcp_blocker  # noqa: E402
from onboarding_eleventh_data import dpkg_version, templater  # noqa: E402
from onboarding_fifth_data import clean_restart, normal_loop, run  # noqa: E402
from onboarding_heldout_data import (  # noqa: E402
    USERS,
    WORDS,
    Background,
    Breaker,
    Group,
    Source,
    children,
    entry_selector,
    raw_send,
)
from onboarding_sixth_data import TLS_HELLO, run_quiet  # noqa: E402
from onboarding_tenth_data import log_has, size_of  # noqa: E402

SOURCES = ["influxdb", "svnserve", "nagios", "kamailio", "inspircd"]
ACCOUNTS = USERS[:10]
PASSWORD = "{}-Onb15!"
HOSTS = [f"127.0.0.{i}" for i in range(2, 10)]
PROBLEM_WORDS = (r"errors?|fail(?:s|ed|ure|ures|ing)?|invalid|denied|refused|unable|cannot|could not|can not|timed out|"
                 r"timeout|unknown|unrecognized|illegal|malformed|forbidden|unauthori[sz]ed|not found|no such|exceed(?:s|ed)|"
                 r"aborted|killed|panic|fatal|critical|corrupt(?:ed)?|missing|rejected|bad|incorrect|not allowed|"
                 r"out of bounds|bailing out|unexpectedly|excess|banned")


def prose(text: str) -> str:
    """The words of a message: tokens that are paths, file names, dotted / hyphenated / underscored identifiers
    (module, logger, host and file names), URLs and key=value pairs dropped, so that a problem word counts only
    as a word of the message (an earlier corpus matched 'error' in 'nginx-error.log' on every background line)."""
    out = []
    for tok in re.split(r"[\s\"'()\[\]<>{},;|]+", text):
        core = tok.strip(":.!?")
        if not core or "/" in core or "\\" in core or "=" in core or re.search(r"\w[.\-_@:%]\w", core):
            continue
        out.append(core)
    return " ".join(out)


def listening(port: int, timeout: float = 20.0) -> bool:
    """Wait until something listens on 127.0.0.1:port, without connecting to it (a probe connection is a log line of
    its own for some programs: svnserve logs 'Network connection closed unexpectedly' for it)."""
    want = f"0100007F:{port:04X}"
    end = time.time() + timeout
    while time.time() < end:
        with contextlib.suppress(OSError), open("/proc/net/tcp") as f:
            if any(row.split()[1] == want and row.split()[3] == "0A" for row in list(f)[1:]):
                return True
        time.sleep(0.1)
    return False


def burst(fn, r: random.Random, lo: int, hi: int) -> None:
    """One client's burst of work in a round: fn(r) called lo..hi times."""
    for _ in range(r.randint(lo, hi)):
        fn(r)


def has_problem_word(text: str, words: str = PROBLEM_WORDS) -> bool:
    return bool(re.search(rf"\b(?:{words})\b", prose(text), re.IGNORECASE))


# --------------------------------------------------------------------------
# influxdb (influxd 1.x, logfmt on stderr with the HTTP access log)
# --------------------------------------------------------------------------

INFLUX_CONF = """\
reporting-disabled = true
bind-address = "127.0.0.1:{rpc}"
[meta]
  dir = "{work}/meta"
[data]
  dir = "{work}/data"
  wal-dir = "{work}/wal"
  query-log-enabled = true
  max-values-per-tag = {max_tag}
  cache-snapshot-write-cold-duration = "30s"
[coordinator]
  write-timeout = "5s"
  log-queries-after = "0s"
[http]
  enabled = true
  bind-address = "127.0.0.1:{port}"
  auth-enabled = true
  log-enabled = true
  max-body-size = {max_body}
  max-row-limit = 5000
[logging]
  format = "logfmt"
  level = "info"
[monitor]
  store-enabled = false
[continuous_queries]
  log-enabled = true
  run-interval = "5s"
[subscriber]
  enabled = false
{extra}"""
INFLUX_HEAD = re.compile(r"^(ts=\S+ |\[httpd\] \S+ - \S+ \[[^\]]+\] )")
INFLUX_ACCESS = re.compile(r'^\[httpd\] \S+ - \S+ \[[^\]]+\] "[^"]*" (\d{3}) ')
influxdb_template = templater(re.compile(r"^ts=\S+ "), (r"^\[httpd\] \S+ - \S+ \[[^\]]+\] ", "[httpd] CLIENT "),
                              (r"\b(log_id|trace_id)=\S+", r"\1=ID"), (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{22,}\b", "UUID"),
                              (r'\b(query|path|addr|db_instance|name|start|end|duration|op_elapsed|written)=("[^"]*"|\S+)', r"\1=V"),
                              (r"/[\w./-]+", "PATH"))
INFLUX_HOSTS = [f"{kind}{i:02d}" for kind in ("web", "db", "cache", "mq") for i in range(1, 7)]
INFLUX_PROBLEM = PROBLEM_WORDS + r"|partial write|conflict|limit|too large|dropped|address already in use|permission"


def influxdb_problem(line: str) -> bool:
    m = INFLUX_ACCESS.match(line)
    if m:
        return int(m.group(1)) >= 400
    if line.startswith("ts="):
        if re.search(r"\blvl=(warn|error|fatal|panic|dpanic)\b", line) or re.search(r" (error|err)=", line):
            return True
        msg = re.search(r'\bmsg=("(?:[^"\\]|\\.)*"|\S+)', line)
        return has_problem_word(msg.group(1) if msg else "", INFLUX_PROBLEM)
    return has_problem_word(line, INFLUX_PROBLEM)  # the untimestamped stderr lines of a failed start


def influx_http(port: int, method: str, path: str, params: dict | None = None, body: bytes | None = None,
                auth: tuple | None = None, src: str | None = None, headers: dict | None = None, ua: str = "") -> int:
    """One HTTP request to influxd; the status (0 when it failed)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15, source_address=(src, 0) if src else None)
    hdrs = dict(headers or {})
    if auth:
        hdrs["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    if ua:
        hdrs["User-Agent"] = ua
    try:
        conn.request(method, path + ("?" + urllib.parse.urlencode(params) if params else ""), body=body, headers=hdrs)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def source_influxdb(args) -> Source:
    influxd = need("influxd", "influxdb")
    rng = random.Random(f"{args.seed}-influxdb")
    with tempfile.TemporaryDirectory(prefix="onb15-influxdb-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, rpc = free_port(), free_port()
        logp, conf = os.path.join(work, "influxd.log"), os.path.join(work, "influxdb.conf")
        admin = ("admin", "Adm1n-Onb15!")
        users = {"collector": "Coll-Onb15!", "grafana": "Graf-Onb15!", "orders-app": "Ord-Onb15!"}
        users.update({u: PASSWORD.format(u) for u in ACCOUNTS[:6]})

        def write_conf(p: int | None = None, extra: str = "", max_tag: str = "400", max_body: str = "262144",
                       text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else INFLUX_CONF.format(
                work=work, rpc=rpc, port=p or port, extra=extra, max_tag=max_tag, max_body=max_body))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("influxd", [influxd, "-config", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"Listening for signals", since, 30)
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("influxd", signal.SIGTERM, 20)

        def query(q: str, auth: tuple | None, db: str | None = None, src: str | None = None, method: str = "GET",
                  ua: str = "Grafana/10.2.3", extra: dict | None = None) -> int:
            params = {"q": q, **({"db": db} if db else {}), **(extra or {})}
            if method == "POST":
                return influx_http(port, "POST", "/query", body=urllib.parse.urlencode(params).encode(), auth=auth, src=src,
                                   headers={"Content-Type": "application/x-www-form-urlencoded"}, ua=ua)
            return influx_http(port, "GET", "/query", params, auth=auth, src=src, ua=ua)

        def write(lines: list[str], auth: tuple | None, db: str = "telegraf", src: str | None = None, precision: str = "ns",
                  ua: str = "Telegraf/1.25.0 Go/1.19.5", body: bytes | None = None, headers: dict | None = None) -> int:
            params = {"db": db, **({"precision": precision} if precision != "ns" else {})}
            return influx_http(port, "POST", "/write", params, body=body if body is not None else "\n".join(lines).encode(),
                               auth=auth, src=src, headers=headers, ua=ua)

        def stamp(precision: str) -> int:
            return {"s": int(time.time()), "ms": int(time.time() * 1e3), "ns": time.time_ns()}[precision]

        def points(r: random.Random, host: str, precision: str) -> list[str]:
            t = stamp(precision)
            out = [(f"cpu,host={host},cpu=cpu-total usage_user={r.uniform(1, 60):.2f},usage_system={r.uniform(0.5, 15):.2f},"
                    f"usage_idle={r.uniform(20, 95):.2f} {t}"),
                   f"mem,host={host} used_percent={r.uniform(20, 80):.2f},available={r.randint(1, 16) * 2 ** 28}i {t}"]
            if r.random() < 0.6:
                out.append(f"disk,host={host},path=/,fstype=ext4 used_percent={r.uniform(30, 75):.2f},inodes_free={r.randint(10 ** 5, 10 ** 6)}i {t}")
            if r.random() < 0.5:
                out.append(f"net,host={host},interface=eth0 bytes_recv={r.randint(10 ** 6, 10 ** 9)}i,bytes_sent={r.randint(10 ** 6, 10 ** 9)}i {t}")
            if host.startswith("web") and r.random() < 0.5:
                out.append(f"nginx,host={host},port=443 requests={r.randint(10 ** 4, 10 ** 6)}i,active={r.randint(1, 300)}i {t}")
            return out

        dash = ["SELECT mean(usage_user) FROM cpu WHERE time > now() - 5m GROUP BY time(30s), host",
                "SELECT max(used_percent) FROM mem WHERE time > now() - 10m GROUP BY time(1m)",
                "SELECT last(used_percent) FROM disk WHERE host = '{h}'", "SHOW TAG VALUES FROM cpu WITH KEY = host",
                "SELECT derivative(mean(bytes_recv), 1s) FROM net WHERE time > now() - 5m GROUP BY time(30s)",
                "SELECT mean(usage_user) FROM cpu_10s WHERE time > now() - 15m GROUP BY host", "SHOW MEASUREMENTS",
                "SELECT count(requests) FROM nginx WHERE time > now() - 2m", "SHOW FIELD KEYS FROM mem",
                "SELECT percentile(usage_idle, 95) FROM cpu WHERE host = '{h}' AND time > now() - 5m"]

        def client(r: random.Random) -> None:
            a = r.random()
            src = r.choice(HOSTS)
            if a < 0.45:  # a collector flushing its batch
                host = r.choice(INFLUX_HOSTS)
                prec = r.choice(["ns", "ns", "ms", "s"])
                write(points(r, host, prec) + (points(r, r.choice(INFLUX_HOSTS), prec) if r.random() < 0.3 else []),
                      ("collector", users["collector"]), src=src, precision=prec)
            elif a < 0.6:  # the shop's application writing order events
                t = time.time_ns()
                lines = [f"orders,region={r.choice(['eu', 'us', 'apac'])},status={r.choice(['paid', 'paid', 'refunded', 'pending'])} "
                         f"amount={r.uniform(5, 400):.2f},items={r.randint(1, 9)}i {t + i}" for i in range(r.randint(1, 6))]
                write(lines, ("orders-app", users["orders-app"]), db="apps", src=src, ua="python-requests/2.31.0")
            elif a < 0.85:  # dashboards
                q = r.choice(dash).format(h=r.choice(INFLUX_HOSTS))
                analyst = r.choice(ACCOUNTS[:6])
                who = ("grafana", users["grafana"]) if r.random() < 0.7 else (analyst, users[analyst])
                query(q, who, db="telegraf", src=src, method=r.choice(["GET", "POST"]),
                      extra={"epoch": "ms"} if r.random() < 0.5 else None)
            elif a < 0.93:  # the load balancer's health checks
                influx_http(port, r.choice(["GET", "HEAD"]), "/ping", src="127.0.0.9", ua="HAProxy/2.6 health-check")
            else:  # an admin looking around
                query(r.choice(["SHOW DATABASES", "SHOW USERS", "SHOW CONTINUOUS QUERIES", "SHOW RETENTION POLICIES ON telegraf",
                                "SHOW SERIES CARDINALITY ON telegraf", "SHOW DIAGNOSTICS", "SHOW SHARDS",
                                "SELECT sum(amount) FROM apps.autogen.orders WHERE time > now() - 1h GROUP BY region"]),
                      admin, src="127.0.0.2", ua="InfluxDBShell/1.6.7")

        def setup() -> None:
            query(f"CREATE USER {admin[0]} WITH PASSWORD '{admin[1]}' WITH ALL PRIVILEGES", None, method="POST", ua="InfluxDBShell/1.6.7")
            stmts = ["CREATE DATABASE telegraf", "CREATE DATABASE apps",
                     "CREATE RETENTION POLICY two_days ON apps DURATION 2d REPLICATION 1",
                     ("CREATE CONTINUOUS QUERY cq_cpu_10s ON telegraf BEGIN SELECT mean(usage_user) AS usage_user INTO "
                      "telegraf.autogen.cpu_10s FROM cpu GROUP BY time(10s), host END")]
            for u, pw in users.items():
                stmts.append(f"CREATE USER \"{u}\" WITH PASSWORD '{pw}'")
            stmts += ['GRANT WRITE ON telegraf TO "collector"', 'GRANT READ ON telegraf TO "grafana"', 'GRANT READ ON apps TO "grafana"',
                      'GRANT WRITE ON apps TO "orders-app"'] + [f'GRANT READ ON telegraf TO "{u}"' for u in ACCOUNTS[:6]]
            for s in stmts:
                query(s, admin, method="POST", ua="InfluxDBShell/1.6.7")

        write_conf()
        start()
        log = FileLog(logp)
        setup()
        say(f"influxd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 6))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "influxdb", round_fn)
            templates = {influxdb_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, influxdb_template, influxdb_problem))

            def restart_clean() -> None:
                sv.stop("influxd", signal.SIGTERM, 20)
                sv.forget("influxd")
                write_conf()
                start()

            with Background(client, random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("auth_failure"):  # wrong passwords, unknown users, no or garbled credentials
                    for who in [("collector", "collector"), ("grafana", "Graf-Onb14!"), ("mallory", "hunter2"), ("alice", ""),
                                None, ("root", "root")]:
                        with br.occurrence(1.5):
                            if who is None:
                                influx_http(port, "GET", "/query", {"q": "SHOW DATABASES"}, src=rng.choice(HOSTS),
                                            headers={"Authorization": "Basic !!notbase64!!"}, ua="curl/7.88.1")
                            elif rng.random() < 0.5:
                                write(points(rng, rng.choice(INFLUX_HOSTS), "ns"), who, src=rng.choice(HOSTS))
                            else:
                                query(dash[0], who, db="telegraf", src=rng.choice(HOSTS))
                with br.phase("not_authorized"):  # valid users doing what they have no privilege for
                    for kind, who, what in [("write", "grafana", "telegraf"), ("query", "alice", "SHOW USERS"),
                                            ("query", "collector", "DROP MEASUREMENT cpu"), ("query", "orders-app", "SELECT * FROM cpu LIMIT 5"),
                                            ("query", "bob", "CREATE DATABASE scratch")]:
                        with br.occurrence(1.5):
                            if kind == "write":
                                write(points(rng, "web01", "ns"), (who, users[who]), db=what, src=rng.choice(HOSTS))
                            else:
                                query(what, (who, users[who]), db="telegraf", src=rng.choice(HOSTS), method="POST")
                with br.phase("bad_write"):  # line protocol the server refuses
                    coll = ("collector", users["collector"])
                    for lines, kw in [(["cpu,host=web01 usage_user=\"very high\""], {}), (["cpu,,host=web02 usage_user=1"], {}),
                                      (["mem,host=db01 used_percent=1.2.3"], {}), ([points(rng, "web03", "ns")[0]], {"db": "telegrafx"}),
                                      ([f"cpu,host=web04 usage_user=3 {time.time_ns()}"], {"precision": "fortnight"}),
                                      (["disk,host=db02 used_percent=40 99999999999999999999999"], {})]:
                        with br.occurrence(1.5):
                            write(lines, coll, src=rng.choice(HOSTS), **kw)
                with br.phase("bad_query"):  # InfluxQL the server cannot parse or run
                    for q, extra in [("SELEC mean(usage_user) FROM cpu", None), ("SELECT mean(usage_user) FROM cpu GROUP BY time(10x)", None),
                                     ("SELECT * FROM cpu WHERE host = 'web01", None), ("", None),
                                     ("SELECT mean(usage_user) FROM cpu WHERE time > now() - 1h", {"epoch": "fortnight"})]:
                        with br.occurrence(1.5):
                            query(q, ("grafana", users["grafana"]), db="telegraf", src=rng.choice(HOSTS), extra=extra)
                with br.phase("limit_exceeded"):  # too many tag values (a probe measurement, dropped after), bodies over max-body-size
                    coll = ("collector", users["collector"])
                    for i in range(5):
                        if i % 2 == 0:  # a probe job has filled its tag past the limit (checked before each batch)
                            write([f"probe,target=node-{j:04d} up=1i" for j in range(420)], coll, src=rng.choice(HOSTS))
                            time.sleep(0.3)
                            br.between()
                        with br.occurrence(2.0):
                            if i % 2 == 0:  # ...and adds new targets
                                write([f"probe,target=ephemeral-{i}-{j:04d} up=1i" for j in range(30)], coll, src=rng.choice(HOSTS))
                            else:
                                write([], coll, src=rng.choice(HOSTS), body=b"\n".join(
                                    p.encode() for _ in range(1500) for p in points(rng, "web05", "ns")[:2]))
                        if i % 2 == 0:  # the admin cleans up, so the limit's warnings do not go on into later windows
                            query("DROP MEASUREMENT probe", admin, db="telegraf", method="POST", ua="InfluxDBShell/1.6.7")
                            time.sleep(0.5)
                            br.between()
                with br.phase("garbage_body"):  # gzip bodies that are not gzip, binary junk, a TLS hello
                    coll = ("collector", users["collector"])
                    for kind in ["gzip", "junk", "chunked", "gzip-trunc"]:
                        with br.occurrence(1.5):
                            if kind == "gzip":
                                write([], coll, body=b"cpu,host=web01 usage_user=1", headers={"Content-Encoding": "gzip"})
                            elif kind == "gzip-trunc":
                                write([], coll, body=gzip.compress(b"cpu,host=web01 usage_user=1\n" * 50)[:40],
                                      headers={"Content-Encoding": "gzip"})
                            elif kind == "junk":
                                write([], coll, body=bytes(rng.getrandbits(8) for _ in range(300)))
                            else:  # a chunked body with a broken chunk size line
                                cred = base64.b64encode(f"collector:{users['collector']}".encode())
                                raw_send(port, b"POST /write?db=telegraf HTTP/1.1\r\nHost: influx\r\nAuthorization: Basic " + cred +
                                         b"\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\ncpu,host=web01 usage_user=1\r\n0\r\n\r\n", wait=0.5)
                with br.phase("bad_config_restart"):  # influxdb.conf mistakes, the port taken, influxd restarted
                    blocker = tcp_blocker()
                    good = INFLUX_CONF.format(work=work, rpc=rpc, port=port, extra="", max_tag="400", max_body="262144")
                    for kw in [{"p": blocker.getsockname()[1]}, {"text": good.replace("[http]\n", "[http\n", 1)},
                               {"text": good.replace('cache-snapshot-write-cold-duration = "30s"', 'cache-snapshot-write-cold-duration = "soon"')},
                               {"extra": "[data]\n  index-version = \"tsi9\"\n"},
                               {"text": good.replace(f'dir = "{work}/meta"', f'dir = "{work}/influxdb.conf/meta"')}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(4.0):
                            start(wait=False)
                            time.sleep(2.0)
                            client(rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("influxdb", "InfluxDB (influxd)", dpkg_version("influxdb"),
                  "influxd's stderr, logfmt with the HTTP access log: `ts=2026-12-06T05:40:01.123456Z lvl=info msg=\"Executing "
                  "query\" log_id=0Abc service=query query=\"SELECT ...\"`, `[httpd] 127.0.0.3 - collector [06/Dec/2026:05:40:01 "
                  "+0000] \"POST /write?db=telegraf HTTP/1.1\" 204 0 \"-\" \"Telegraf/1.25.0 Go/1.19.5\" 8b1b878f-... 3942`; "
                  "continuous queries traced by trace_id from start to end",
                  "influxd (authentication on, logfmt, the HTTP access log, a continuous query every 10 s) with collectors on 8 "
                  "hosts writing cpu / mem / disk / net / nginx points of 24 servers (precision ns, ms, s), an application "
                  "writing order events, dashboards and 6 analysts querying (GET and POST, epoch=ms), health checks on /ping, an "
                  "admin's SHOW statements; 2 clean restarts (SIGTERM)",
                  "auth_failure (6: wrong passwords, unknown users, garbled credentials), not_authorized (5: writes and "
                  "statements without the privilege), bad_write (6: a field type conflict, a missing tag key, a bad number, an "
                  "unknown database, a bad precision, a bad timestamp), bad_query (5: parse errors, a bad duration, an unclosed "
                  "string, an empty query, a bad epoch), limit_exceeded (5: max-values-per-tag, max-body-size), "
                  "garbage_body (4: gzip bodies that are not gzip, binary junk, a broken chunked body), bad_config_restart (5: the port "
                  "taken, a TOML syntax error, a bad duration, an unknown index version, a meta dir under a file)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# svnserve (Subversion's own server, svn:// with a log file; clients: svn)
# --------------------------------------------------------------------------

SVN_CONF = """\
[general]
anon-access = none
auth-access = write
password-db = {work}/passwd
authz-db = {work}/authz
realm = Onb15 Subversion
{extra}"""
SVN_AUTHZ = """\
[groups]
devs = alice, bob, carol, dave, erin
ops = frank, grace
writers = heidi, ivan, judy

[/]
* = r

[webapp:/]
@devs = rw
* = r

[infra:/]
@ops = rw
@devs = r
* =

[infra:/secrets]
@ops = rw
* =

[docs:/]
@writers = rw
@devs = rw
* = r
"""
SVN_REPOS = {"webapp": ["alice", "bob", "carol", "dave", "erin"], "infra": ["frank", "grace"], "docs": ["heidi", "ivan", "judy", "alice", "bob"]}
SVN_HEAD = re.compile(r"^\d+ \d{4}-\d\d-\d\dT[\d:.]+Z ")
svnserve_template = templater(SVN_HEAD, (r"^(\S+) (\S+) (\S+) ", r"IP USER REPO "), (r"/[\w./@-]*", "PATH"),
                              (r"\(svn:[\w: -]*\)", "(PROPS)"), (r"'[^']*'", "'S'"))
SVN_FILES = ["README.txt", "notes.txt", "main.py", "config.yaml", "Makefile", "index.html", "style.css", "deploy.sh"]


def svnserve_problem(line: str) -> bool:
    m = SVN_HEAD.match(line)
    if m:
        rest = line[m.end():].split(" ", 3)
        action = rest[3] if len(rest) > 3 else ""
        return action.startswith(("ERR ", "Authorization Failed")) or has_problem_word(action)
    return has_problem_word(line)  # svnserve's stderr (a failed start)


def source_svnserve(args) -> Source:
    svnserve, svn, svnadmin = need("svnserve", "subversion"), need("svn", "subversion"), need("svnadmin", "subversion")
    rng = random.Random(f"{args.seed}-svnserve")
    with tempfile.TemporaryDirectory(prefix="onb15-svnserve-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        logp, conf, root = os.path.join(work, "svnserve.log"), os.path.join(work, "svnserve.conf"), os.path.join(work, "repos")
        passwords = {u: PASSWORD.format(u) for u in ACCOUNTS} | {"jenkins": "Ci-Onb15!"}
        write_atomic(os.path.join(work, "passwd"), "[users]\n" + "".join(f"{u} = {p}\n" for u, p in passwords.items()))
        write_atomic(os.path.join(work, "authz"), SVN_AUTHZ)
        os.makedirs(root)
        seed_dir = os.path.join(work, "seed")
        for repo, owners in SVN_REPOS.items():
            subprocess.run([svnadmin, "create", os.path.join(root, repo)], check=True, capture_output=True)
            for u in owners:
                for fn in rng.sample(SVN_FILES, 3):
                    os.makedirs(os.path.join(seed_dir, repo, "trunk", u), exist_ok=True)
                    write_atomic(os.path.join(seed_dir, repo, "trunk", u, fn), f"{repo} {u} {fn}\n" + " ".join(rng.choices(WORDS, k=40)) + "\n")
            os.makedirs(os.path.join(seed_dir, repo, "branches"), exist_ok=True)
            if repo == "infra":
                os.makedirs(os.path.join(seed_dir, repo, "secrets"))
                write_atomic(os.path.join(seed_dir, repo, "secrets", "vault.txt"), "token = s3cr3t\n")
            subprocess.run([svnadmin, "load", "-q", os.path.join(root, repo)], input=b"SVN-fs-dump-format-version: 2\n\n", check=True,
                           capture_output=True)
        # the first import is made through the repository's file:// URL, before svnserve runs
        for repo in SVN_REPOS:
            subprocess.run([svn, "import", "-q", "-m", f"initial import of {repo}", os.path.join(seed_dir, repo),
                            f"file://{root}/{repo}"], check=True, capture_output=True)
        subprocess.run(["chown", "-R", "nobody:nogroup", root], check=True)
        write_atomic(logp, "")
        subprocess.run(["chown", "nobody:nogroup", logp], check=True)

        def write_conf(extra: str = "", text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else SVN_CONF.format(work=work, extra=extra))

        def start(wait: bool = True, p: int | None = None, r: str | None = None, cfg: str | None = None,
                  extra: list | None = None) -> None:
            with open(logp, "ab") as logf:  # svnserve's stderr (a failed start) goes next to its log
                sv.start("svnserve", ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", svnserve, "-d",
                                      "--foreground", "-r", r or root, "--listen-host", "127.0.0.1", "--listen-port",
                                      str(p or port), f"--config-file={cfg or conf}", f"--log-file={logp}"] + (extra or []),
                         stdout=logf, stderr=logf, cwd=work)
            if wait:
                listening(port, 20)
                time.sleep(0.2)

        def stop() -> None:
            sv.stop("svnserve", signal.SIGTERM, 10)

        def svn_run(user: str, pw: str, *argv: str, cwd: str | None = None) -> int:
            return run_quiet([svn, "--non-interactive", "--no-auth-cache", "--username", user, "--password", pw,
                              "--config-dir", os.path.join(work, "svncfg")] + list(argv), 30) if cwd is None else \
                subprocess.run([svn, "--non-interactive", "--no-auth-cache", "--username", user, "--password", pw, "--config-dir",
                                os.path.join(work, "svncfg")] + list(argv), cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=30, check=False).returncode

        def url(repo: str, path: str = "") -> str:
            return f"svn://127.0.0.1:{port}/{repo}{path}"

        locks = {u: threading.Lock() for u in passwords}
        wcs: dict[tuple, str] = {}

        def wc(user: str, repo: str) -> str:
            d = os.path.join(work, "wc", user, repo)
            if (user, repo) not in wcs:
                os.makedirs(os.path.dirname(d), exist_ok=True)
                svn_run(user, passwords[user], "checkout", "-q", url(repo, "/trunk"), d)
                wcs[(user, repo)] = d
            return d

        def session(r: random.Random) -> None:
            user = r.choice(ACCOUNTS + ["jenkins"])
            pw = passwords[user]
            mine = [repo for repo, owners in SVN_REPOS.items() if user in owners]
            with locks[user]:
                a = r.random()
                if mine and a < 0.35:  # edit one of one's own files and commit
                    repo = r.choice(mine)
                    d = wc(user, repo)
                    svn_run(user, pw, "update", "-q", cwd=d)
                    mydir = os.path.join(d, user)
                    files = sorted(os.listdir(mydir)) if os.path.isdir(mydir) else []
                    if files and r.random() < 0.85:
                        fn = os.path.join(mydir, r.choice([f for f in files if not f.startswith(".")] or files))
                        with open(fn, "a") as f:
                            f.write(" ".join(r.choices(WORDS, k=r.randint(3, 12))) + "\n")
                    else:
                        fn = os.path.join(mydir, f"{r.choice(WORDS)}-{r.randint(1, 9999)}.txt")
                        if os.path.isdir(mydir) and not os.path.exists(fn):
                            write_atomic(fn, " ".join(r.choices(WORDS, k=20)) + "\n")
                            svn_run(user, pw, "add", "-q", fn, cwd=d)
                    svn_run(user, pw, "commit", "-q", "-m", f"{r.choice(['fix', 'update', 'tweak', 'docs:', 'refactor'])} "
                            f"{r.choice(WORDS)} {r.choice(WORDS)}", cwd=d)
                elif mine and a < 0.5:
                    svn_run(user, pw, "update", "-q", cwd=wc(user, r.choice(mine)))
                else:  # read-only work through the repository's URL
                    repo = r.choice(mine or ["webapp", "docs"]) if user != "jenkins" else r.choice(["webapp", "docs", "webapp"])
                    owner = r.choice(SVN_REPOS[repo])
                    op = r.choice(["log", "ls", "cat", "info", "ls", "log", "diff", "blame", "export"])
                    if op == "log":
                        svn_run(user, pw, "log", "-q", "-l", str(r.randint(1, 8)), url(repo))
                    elif op == "ls":
                        svn_run(user, pw, "list", url(repo, r.choice(["/trunk", f"/trunk/{owner}", ""])))
                    elif op in ("cat", "blame"):
                        svn_run(user, pw, op, url(repo, f"/trunk/{owner}/{r.choice(SVN_FILES)}"))
                    elif op == "info":
                        svn_run(user, pw, "info", url(repo, "/trunk"))
                    elif op == "diff":
                        svn_run(user, pw, "diff", "--summarize", "-r", f"{r.randint(1, 3)}:HEAD", url(repo, "/trunk"))
                    else:
                        out = os.path.join(work, "exports", f"{user}-{r.randint(0, 10 ** 9)}")
                        svn_run(user, pw, "export", "-q", "--force", url(repo, f"/trunk/{owner}"), out)
                        shutil.rmtree(out, ignore_errors=True)

        write_conf()
        start()
        log = FileLog(logp)
        say(f"svnserve on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(session, random.Random(rng.random()), 2, 5))
                       for _ in range(rng.randint(3, 6))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            clean_restart(state, elapsed, stop, start)

        try:
            normal = normal_loop(args, log, "svnserve", round_fn)
            templates = {svnserve_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, svnserve_template, svnserve_problem))

            def restart_clean() -> None:
                sv.stop("svnserve", signal.SIGTERM, 10)
                sv.forget("svnserve")
                write_conf()
                start()

            with Background(session, random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("auth_failure"):  # wrong passwords, unknown users
                    for u, pw in [("alice", "alice"), ("frank", "Frank-Onb15!"), ("mallory", "hunter2"), ("deploy", "deploy"),
                                  ("jenkins", "Ci-Onb14!"), ("root", "")]:
                        with br.occurrence(1.5):
                            svn_run(u, pw or "x", "log", "-q", "-l", "3", url(rng.choice(list(SVN_REPOS))))
                with br.phase("authz_denied"):  # read-only users committing, reading what the authz file hides
                    for kind, user, repo, path in [("commit", "frank", "webapp", ""), ("cat", "heidi", "infra", "/secrets/vault.txt"),
                                                   ("commit", "alice", "infra", ""), ("list", "jenkins", "infra", "/secrets"),
                                                   ("mkdir", "judy", "webapp", "/branches/release-2"), ("cat", "bob", "infra", "/secrets/vault.txt")]:
                        with br.occurrence(1.5):
                            if kind == "commit":
                                svn_run(user, passwords[user], "mkdir", "-m", "new folder", url(repo, f"/trunk/{user}-{rng.randint(1, 999)}"))
                            elif kind == "mkdir":
                                svn_run(user, passwords[user], "mkdir", "-m", "release branch", url(repo, path))
                            else:
                                svn_run(user, passwords[user], kind, url(repo, path))
                with br.phase("no_such_repository"):  # URLs outside the repositories
                    for path in ["/website", "/webap/trunk", "/webapp-archive", "/infra-old/trunk"]:
                        with br.occurrence(1.5):
                            u = rng.choice(ACCOUNTS)
                            svn_run(u, passwords[u], "log", "-q", "-l", "2", f"svn://127.0.0.1:{port}{path}")
                with br.phase("protocol_garbage"):  # not ra_svn on the svn port
                    for data in [b"GET / HTTP/1.1\r\nHost: svn\r\n\r\n", TLS_HELLO, b"( 2 ( edit-pipeline ) 99999999999:svn://x ) ",
                                 b"( 2 ( edit-pipeline svndiff1 ) 30:svn://127.0.0.1/webapp ) ( FROB ( ) ) ",
                                 b"( 9 ( ) 24:svn://127.0.0.1:1/webapp ) ", bytes(rng.getrandbits(8) for _ in range(200))]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("broken_repository"):  # a repository damaged on disk (then repaired)
                    for repo, rel, how in [("docs", "format", "move"), ("infra", "db/fs-type", "garbage"), ("infra", "db/format", "garbage"),
                                           ("webapp", "db/revs/0", "chmod"), ("docs", "db/uuid", "chmod")]:
                        target = os.path.join(root, repo, rel)
                        saved = b""
                        if os.path.isfile(target):
                            with open(target, "rb") as f:
                                saved = f.read()
                        mode = os.stat(target).st_mode
                        with br.occurrence(2.0):
                            if how == "move":
                                os.rename(target, target + ".moved")
                            elif how == "chmod":
                                os.chmod(target, 0)
                            else:
                                with open(target, "wb") as f:
                                    f.write(b"onb15 garbage\n")
                            users_of = [u for u in SVN_REPOS[repo] if u in ACCOUNTS] or ["frank"]
                            u = rng.choice(users_of)
                            svn_run(u, passwords[u], "cat", url(repo, f"/trunk/{u}/{SVN_FILES[0]}"))
                            svn_run(u, passwords[u], "log", "-q", "-l", "2", url(repo))
                        if how == "move":
                            os.rename(target + ".moved", target)
                        elif how == "garbage":
                            with open(target, "wb") as f:
                                f.write(saved)
                        os.chmod(target, mode)
                        br.between()
                with br.phase("bad_restart"):  # the port taken, a missing root, a broken svnserve.conf, a missing passwd, bad options
                    blocker = tcp_blocker()
                    for kw in [{"p": blocker.getsockname()[1]}, {"r": os.path.join(work, "repositories")},
                               {"conf": "[general\nanon-access = none\n"},
                               {"conf": SVN_CONF.format(work=work, extra="").replace(f"{work}/passwd", f"{work}/passwd.missing")},
                               {"extra": ["--memory-cache-size=abc"]}]:
                        stop()
                        br.between()
                        if "conf" in kw:
                            write_conf(text=kw.pop("conf"))
                        with br.occurrence(3.0):
                            start(wait=False, **kw)
                            time.sleep(1.0)
                            session(rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("svnserve", "Subversion server (svnserve)", dpkg_version("subversion"),
                  "svnserve's log file (--log-file), one line per protocol step: `12345 2026-12-06T05:40:01.123456Z 127.0.0.1 "
                  "alice webapp open 2 cap=(edit-pipeline svndiff1 ...) /trunk SVN/1.14.2%20(x86_64-pc-linux-gnu) -`, `... alice "
                  "webapp commit r57`, `12346 ... 127.0.0.1 - - ERR - 0 210002 Network connection closed unexpectedly`; each "
                  "connection traced by the pid of its child process from open to its last step; its stderr (a failed start) "
                  "appended",
                  "svnserve -d --foreground (as nobody, a --config-file with a password file and an authz file of three groups, "
                  "3 repositories: webapp, infra, docs) with 10 users and a CI account running svn: checkouts, updates, commits "
                  "of edited and added files, log, list, cat, info, diff --summarize, blame, export; 2 clean restarts (SIGTERM)",
                  "auth_failure (6: wrong passwords, unknown users), authz_denied (6: commits and reads the authz file forbids), "
                  "no_such_repository (4), protocol_garbage (6: HTTP, a TLS hello, an oversized string, an unknown command, a "
                  "bad version, binary junk), broken_repository (5: the format file moved away, the fs-type and FS format "
                  "files garbled, the revision folder and the uuid file unreadable), bad_restart (5: the port taken, a missing root, a broken svnserve.conf, a missing password "
                  "file, a bad option value)", normal, br.errors)


# --------------------------------------------------------------------------
# nagios (Nagios Core 4 with a private nagios.cfg; active checks, passive results through the command file)
# --------------------------------------------------------------------------

NAGIOS_CFG = """\
log_file={work}/nagios.log
cfg_file={work}/objects.cfg
object_cache_file={work}/objects.cache
precached_object_file={work}/objects.precache
status_file={work}/status.dat
status_update_interval=5
nagios_user=nagios
nagios_group=nagios
check_external_commands=1
command_file={work}/rw/nagios.cmd
query_socket={work}/rw/nagios.qh
lock_file={work}/nagios.lock
temp_file={work}/nagios.tmp
temp_path={work}
log_rotation_method=n
log_archive_path={work}
use_syslog=0
log_notifications=1
log_service_retries=1
log_host_retries=1
log_event_handlers=1
log_initial_states=1
log_current_states=1
log_external_commands=1
log_passive_checks=1
check_result_path={work}/spool
check_result_reaper_frequency=1
max_check_result_reaper_time=5
service_check_timeout=3
host_check_timeout=3
notification_timeout=3
interval_length=1
retain_state_information=0
check_for_updates=0
enable_notifications=1
enable_flap_detection=0
max_service_check_spread=3
max_host_check_spread=3
date_format=iso8601
illegal_macro_output_chars=`~$&|'"<>
admin_email=ops@onb15.test
{extra}"""
NAGIOS_HOSTS = {"web01": "127.0.0.2", "web02": "127.0.0.3", "db01": "127.0.0.4", "cache01": "127.0.0.5", "mail01": "127.0.0.6"}
NAGIOS_ACTIVE = {("web01", "http"): "check_web", ("web02", "http"): "check_web", ("db01", "pgsql"): "check_port",
                 ("cache01", "redis"): "check_port", ("mail01", "smtp"): "check_port"}
NAGIOS_PASSIVE = {"web01": ["disk", "load", "backup"], "web02": ["disk", "load"], "db01": ["disk", "load", "backup", "replication"],
                  "cache01": ["load", "memory"], "mail01": ["disk", "queue", "backup"]}
NAGIOS_WRAP = """#!/bin/sh
# the checks' wrapper: runs the plugin, unless a flag file says how to break
svc="$1"; shift
mode=$(cat "{work}/break-$svc" 2>/dev/null)
case "$mode" in
  missing) exec /usr/lib/nagios/plugins/check_onb15_removed "$@";;
  slow) exec sleep 20;;
  crash) kill -SEGV $$;;
  exit42) echo "plugin state lost"; exit 42;;
esac
exec "$@"
"""
NAGIOS_NOTIFY = """#!/bin/sh
# the notification command: a mail spool stand-in; hangs while the 'notify-slow' flag exists
[ -e "{work}/notify-slow" ] && exec sleep 20
printf '%s\\n' "$*" >> "{work}/notifications.txt"
"""
NAG_HEAD = re.compile(r"^\[\d+\] ")
nagios_template = templater(NAG_HEAD, (r"\b(web|db|cache|mail)\d\d\b", "HOST"), (r"'[^']*'", "'S'"), (r"/[\w./-]+", "PATH"),
                            (r"(PROCESS_SERVICE_CHECK_RESULT|EXTERNAL COMMAND: \w+);.*", r"\1;ARGS"), (r"\(PID=\d+\)", "(PID)"),
                            (r"pid=\d+", "pid=N"), (r"Worker \d+", "Worker N"))


def nagios_problem(line: str) -> bool:
    body = NAG_HEAD.sub("", line, count=1)
    if re.match(r"(Warning|Error|Critical|Bailing out)\b", body) or "returned error" in body:
        return True
    if re.match(r"(SERVICE|HOST) (ALERT|NOTIFICATION|EVENT HANDLER)|(INITIAL|CURRENT) (SERVICE|HOST) STATE|PASSIVE (SERVICE|HOST) CHECK", body):
        return bool(re.search(r";(CRITICAL|UNKNOWN|DOWN|UNREACHABLE|[23])(;| \(| ?$)|\((CRITICAL|UNKNOWN|DOWN)\)", body))
    return not body.startswith("EXTERNAL COMMAND:") and has_problem_word(body)


def nagios_echo(line: str) -> bool:
    return NAG_HEAD.sub("", line, count=1).startswith("EXTERNAL COMMAND: ")  # the command the workload wrote, repeated


class TcpService:
    """A small TCP service on a fixed port that can be stopped and started again (a target of active checks):
    HTTP requests get a 200, other clients a banner."""

    def __init__(self, port: int, banner: bytes):
        self.port, self.banner, self.srv = port, banner, None

    def start(self) -> None:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", self.port))
        srv.listen(32)
        self.srv = srv
        threading.Thread(target=self.loop, args=(srv,), daemon=True).start()

    def loop(self, srv: socket.socket) -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c: socket.socket) -> None:
        with contextlib.suppress(OSError), c:
            c.settimeout(2)
            c.sendall(self.banner)
            with contextlib.suppress(OSError):
                d = c.recv(4096)
                if d[:4] in (b"GET ", b"HEAD"):
                    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n")

    def stop(self) -> None:
        srv, self.srv = self.srv, None
        if srv is not None:
            with contextlib.suppress(OSError):
                srv.shutdown(socket.SHUT_RDWR)
            srv.close()


def nagios_objects(work: str, ports: dict, extra: str = "") -> str:
    out = ["define timeperiod {\n timeperiod_name 24x7\n alias always\n"
           + "".join(f" {d} 00:00-24:00\n" for d in ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]) + "}\n",
           (f"define command {{\n command_name notify-by-spool\n command_line {work}/notify.sh \"$NOTIFICATIONTYPE$\" \"$HOSTNAME$\" "
            f"\"$SERVICEDESC$\" \"$SERVICESTATE$\"\n}}\n"),
           "define command {\n command_name check_dummy\n command_line /usr/lib/nagios/plugins/check_dummy $ARG1$ \"$ARG2$\"\n}\n",
           (f"define command {{\n command_name check_port\n command_line {work}/check_wrap.sh $SERVICEDESC$ "
            "/usr/lib/nagios/plugins/check_tcp -H 127.0.0.1 -p $ARG1$ -t 2\n}\n"),
           (f"define command {{\n command_name check_web\n command_line {work}/check_wrap.sh $SERVICEDESC$ "
            "/usr/lib/nagios/plugins/check_http -H 127.0.0.1 -p $ARG1$ -u /health -t 2\n}\n"),
           ("define contact {\n contact_name ops\n alias Operations\n service_notification_period 24x7\n host_notification_period 24x7\n"
            " service_notification_options w,u,c,r\n host_notification_options d,u,r\n service_notification_commands notify-by-spool\n"
            " host_notification_commands notify-by-spool\n email ops@onb15.test\n}\n")]
    for host, addr in NAGIOS_HOSTS.items():
        out.append(f"define host {{\n host_name {host}\n alias {host}.onb15.test\n address {addr}\n check_command check_dummy!0!UP\n"
                   " max_check_attempts 2\n check_interval 10\n retry_interval 2\n check_period 24x7\n contacts ops\n"
                   " notification_interval 0\n notification_period 24x7\n}\n")
    for (host, svc), cmd in NAGIOS_ACTIVE.items():
        out.append(f"define service {{\n host_name {host}\n service_description {svc}\n check_command {cmd}!{ports[svc if svc != 'http' else host]}\n"
                   " max_check_attempts 2\n check_interval 2\n retry_interval 1\n check_period 24x7\n contacts ops\n"
                   " notification_interval 0\n notification_period 24x7\n}\n")
    for host, svcs in NAGIOS_PASSIVE.items():
        for svc in svcs:
            out.append(f"define service {{\n host_name {host}\n service_description {svc}\n check_command check_dummy!0!no result\n"
                       " active_checks_enabled 0\n passive_checks_enabled 1\n max_check_attempts 1\n check_interval 300\n"
                       " retry_interval 60\n check_period 24x7\n contacts ops\n notification_interval 0\n notification_period 24x7\n}\n")
    return "".join(out) + extra


def source_nagios(args) -> Source:
    nagios = need("nagios4", "nagios4-core")
    need("/usr/lib/nagios/plugins/check_tcp", "monitoring-plugins-basic")
    rng = random.Random(f"{args.seed}-nagios")
    with tempfile.TemporaryDirectory(prefix="onb15-nagios-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ["rw", "spool"]:
            os.makedirs(os.path.join(work, d))
        logp, cfg, objs = os.path.join(work, "nagios.log"), os.path.join(work, "nagios.cfg"), os.path.join(work, "objects.cfg")
        fifo = os.path.join(work, "rw", "nagios.cmd")
        ports = {"web01": free_port(), "web02": free_port(), "pgsql": free_port(), "redis": free_port(), "smtp": free_port()}
        targets = {k: TcpService(p, {"pgsql": b"", "redis": b"+OK\r\n", "smtp": b"220 mail01.onb15.test ESMTP\r\n"}.get(k, b""))
                   for k, p in ports.items()}
        for t in targets.values():
            t.start()
        for name, text in [("check_wrap.sh", NAGIOS_WRAP), ("notify.sh", NAGIOS_NOTIFY)]:
            write_atomic(os.path.join(work, name), text.format(work=work))
            os.chmod(os.path.join(work, name), 0o755)
        write_atomic(logp, "")
        fifo_lock = threading.Lock()

        def write_cfg(extra: str = "", objects_extra: str = "", objects: str | None = None) -> None:
            write_atomic(cfg, NAGIOS_CFG.format(work=work, extra=extra))
            write_atomic(objs, objects if objects is not None else nagios_objects(work, ports, objects_extra))
            subprocess.run(["chown", "-R", "nagios:nagios", work], check=True)

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            sv.start("nagios", [nagios, cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            if wait:
                log_has(logp, b"Successfully launched command file worker", since, 30)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("nagios", signal.SIGTERM, 20)

        def command(*cmds: str) -> None:
            """External commands written to the command file (as send_nsca / the CGIs do)."""
            now = int(time.time())
            data = "".join(f"[{now}] {c}\n" for c in cmds).encode()
            with fifo_lock, contextlib.suppress(OSError):
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)

        def passive(r: random.Random, host: str, svc: str, calm: bool = False) -> str:
            """An agent's passive result for one service (OK, now and then WARNING)."""
            warn = not calm and r.random() < 0.02
            if svc == "disk":
                pct = r.randint(86, 92) if warn else r.randint(35, 78)
                out = f"DISK {'WARNING' if warn else 'OK'} - / {pct}% used ({r.randint(10, 90)} GB free)|/={pct}%;85;95"
            elif svc == "load":
                l1 = r.uniform(4.1, 6) if warn else r.uniform(0.05, 3.5)
                out = f"LOAD {'WARNING' if warn else 'OK'} - load average: {l1:.2f}, {l1 * 0.8:.2f}, {l1 * 0.6:.2f}|load1={l1:.2f};4;8"
            elif svc == "backup":
                out = (f"BACKUP {'WARNING' if warn else 'OK'} - last run {r.randint(26, 30) if warn else r.randint(1, 20)}h ago, "
                       f"{r.randint(1, 40)} GB, {r.randint(3, 60)} min|age={r.randint(1, 30)}h")
            elif svc == "replication":
                lag = r.randint(31, 90) if warn else r.randint(0, 8)
                out = f"REPLICATION {'WARNING' if warn else 'OK'} - standby lag {lag}s|lag={lag}s;30;120"
            elif svc == "memory":
                pct = r.randint(91, 95) if warn else r.randint(30, 80)
                out = f"MEMORY {'WARNING' if warn else 'OK'} - {pct}% used|mem={pct}%;90;98"
            else:
                q = r.randint(201, 400) if warn else r.randint(0, 40)
                out = f"QUEUE {'WARNING' if warn else 'OK'} - {q} messages in the queue|queue={q};200;1000"
            return f"PROCESS_SERVICE_CHECK_RESULT;{host};{svc};{1 if warn else 0};{out}"

        busy: set = set()  # (host, service) pairs a breakage is using: the background agents leave them alone

        def agents(r: random.Random, calm: bool = False) -> None:
            hosts = r.sample(list(NAGIOS_PASSIVE), r.randint(1, 3))
            command(*[passive(r, h, s, calm) for h in hosts for s in NAGIOS_PASSIVE[h] if r.random() < 0.8 and (h, s) not in busy])

        def admin(r: random.Random) -> None:
            host = r.choice(list(NAGIOS_PASSIVE))
            svc = r.choice(NAGIOS_PASSIVE[host])
            now = int(time.time())
            who = r.choice(["alice", "frank", "grace", "ops"])
            command(r.choice([f"ADD_SVC_COMMENT;{host};{svc};1;{who};{r.choice(['checked', 'known issue', 'vendor ticket', 'see wiki'])}",
                              f"SCHEDULE_FORCED_SVC_CHECK;{r.choice(['web01', 'web02'])};http;{now}",
                              f"SCHEDULE_SVC_DOWNTIME;{host};{svc};{now};{now + r.randint(3, 8)};1;0;5;{who};patching",
                              f"DISABLE_SVC_NOTIFICATIONS;{host};{svc}", f"ENABLE_SVC_NOTIFICATIONS;{host};{svc}",
                              f"DEL_ALL_SVC_COMMENTS;{host};{svc}", "SAVE_STATE_INFORMATION",
                              f"SEND_CUSTOM_SVC_NOTIFICATION;{host};{svc};0;{who};{r.choice(['maintenance tonight', 'heads-up'])}",
                              f"ACKNOWLEDGE_SVC_PROBLEM;{host};{svc};1;1;0;{who};looking into it"]))

        write_cfg()
        start()
        log = FileLog(logp)
        say("nagios; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(3, 7)):
                agents(random.Random(rng.random()))
            if rng.random() < 0.3:
                admin(rng)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.1, 0.3))

        try:
            normal = normal_loop(args, log, "nagios", round_fn)
            templates = {nagios_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, nagios_template, nagios_problem, echo=nagios_echo))

            def restart_clean() -> None:
                sv.stop("nagios", signal.SIGTERM, 20)
                sv.forget("nagios")
                with contextlib.suppress(OSError):
                    if not os.path.exists(fifo) or not stat_is_fifo(fifo):
                        os.unlink(fifo)
                write_cfg()
                start()

            def flag(name: str, mode: str | None) -> None:
                path = os.path.join(work, name)
                if mode is None:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                else:
                    write_atomic(path, mode + "\n")

            def recovered(pairs: list, since: int) -> None:
                """Force the checks of the pairs and wait until each logged its return to OK (outside any window)."""
                now = int(time.time())
                command(*[f"SCHEDULE_FORCED_SVC_CHECK;{h};{v};{now}" for h, v in pairs])
                for h, v in pairs:
                    log_has(logp, f"{h};{v};OK;".encode(), since, 10)
                time.sleep(0.5)
                br.between()

            def hosts_of(svc: str) -> list:
                return [(h, v) for h, v in NAGIOS_ACTIVE if v == svc]

            with Background(lambda r: agents(r, calm=True), random.Random(rng.random()), (0.15, 0.4)):
                with br.phase("target_down"):  # the service behind an active check stops answering
                    for name, pair in [("web02", ("web02", "http")), ("pgsql", ("db01", "pgsql")), ("redis", ("cache01", "redis")),
                                       ("web01", ("web01", "http")), ("smtp", ("mail01", "smtp"))]:
                        since = size_of(logp)
                        with br.occurrence(0.8):
                            targets[name].stop()
                            log_has(logp, f"{pair[0]};{pair[1]};CRITICAL;HARD".encode(), since, 8)
                        since = size_of(logp)
                        targets[name].start()
                        recovered([pair], since)
                with br.phase("plugin_failure"):  # the plugin removed, crashing, returning nonsense
                    for svc, mode in [("pgsql", "missing"), ("http", "crash"), ("redis", "exit42"), ("smtp", "missing")]:
                        since = size_of(logp)
                        with br.occurrence(0.8):
                            flag(f"break-{svc}", mode)
                            for h, v in hosts_of(svc):
                                log_has(logp, f"{h};{v};".encode() + (b"UNKNOWN;HARD" if mode == "crash" else b"CRITICAL;HARD"), since, 8)
                        since = size_of(logp)
                        flag(f"break-{svc}", None)
                        recovered(hosts_of(svc), since)
                with br.phase("check_timeout"):  # the plugin hangs past service_check_timeout
                    for svc in ["redis", "pgsql", "smtp"]:
                        since = size_of(logp)
                        with br.occurrence(0.8):
                            flag(f"break-{svc}", "slow")
                            log_has(logp, b"timed out after", since, 8)
                        flag(f"break-{svc}", None)
                        time.sleep(3.2)  # a retry that started hanging is killed too
                        recovered(hosts_of(svc), since)
                with br.phase("unknown_object"):  # passive results for hosts and services Nagios does not know
                    for host, svc in [("web03", "disk"), ("db01", "diskspace"), ("printer7", "toner"), ("mail01", "spamassassin"),
                                      ("cache02", "load")]:
                        with br.occurrence(1.5):
                            command(f"PROCESS_SERVICE_CHECK_RESULT;{host};{svc};0;OK - fine")
                with br.phase("bad_external_command"):  # commands that do not exist or lack arguments
                    for cmd in ["FROBNICATE_SVC;web01;http", "SCHEDULE_SVC_DOWNTIME;web01;http;soon;later", "PROCESS_SERVICE_CHECK_RESULT;db01;disk",
                                "ACKNOWLEDGE_SVC_PROBLEM;web01", "DISABLE_NOTIFICATIONS_FOR_EVERYONE"]:
                        with br.occurrence(1.5):
                            command(cmd)
                with br.phase("notification_failed"):  # the notification command hangs past notification_timeout
                    for host, svc in [("mail01", "queue"), ("db01", "replication"), ("cache01", "memory")]:
                        busy.add((host, svc))
                        time.sleep(0.5)
                        br.between()
                        flag("notify-slow", "1")
                        since = size_of(logp)
                        with br.occurrence(0.8):
                            command(f"PROCESS_SERVICE_CHECK_RESULT;{host};{svc};2;{svc.upper()} CRITICAL - threshold crossed")
                            log_has(logp, b"timed out after", since, 8)
                        flag("notify-slow", None)
                        since = size_of(logp)
                        command(passive(rng, host, svc, calm=True))
                        log_has(logp, f"{host};{svc};OK;".encode(), since, 8)
                        time.sleep(0.5)
                        busy.discard((host, svc))
                        br.between()
                with br.phase("bad_config_restart"):  # object definition mistakes, a stale command file; nagios restarted
                    for kind in ["unknown_host", "unknown_command", "syntax", "stale_fifo", "bad_directive"]:
                        stop()
                        br.between()
                        if kind == "unknown_host":
                            write_cfg(objects_extra="define service {\n host_name web09\n service_description http\n check_command "
                                                    "check_web!80\n max_check_attempts 2\n check_interval 2\n retry_interval 1\n"
                                                    " check_period 24x7\n contacts ops\n notification_period 24x7\n}\n")
                        elif kind == "unknown_command":
                            write_cfg(objects=nagios_objects(work, ports).replace("check_command check_port!", "check_command check_pgsql!", 1))
                        elif kind == "syntax":
                            write_cfg(objects=nagios_objects(work, ports).replace("define contact {\n", "define contact {\n contact_name\n", 1))
                        elif kind == "stale_fifo":
                            write_cfg()
                            with contextlib.suppress(OSError):
                                os.unlink(fifo)
                            write_atomic(fifo, "")
                        else:
                            write_cfg(extra="check_result_reaper_frequency=often\nservice_check_timeout=-5\n")
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.0)
                            agents(rng, calm=True)
                        restart_clean()
                        br.between()
        finally:
            stop()
            for t in targets.values():
                t.stop()
    return Source("nagios", "Nagios Core (nagios4)", dpkg_version("nagios4-core"),
                  "nagios.log, a Unix time in brackets and a message, the fields of state lines separated by semicolons: "
                  "`[1796546097] SERVICE ALERT: db01;pgsql;CRITICAL;SOFT;1;connect to address 127.0.0.1 and port 5432: Connection "
                  "refused`, `[1796546097] PASSIVE SERVICE CHECK: web01;disk;0;DISK OK - / 41% used`, `[1796546097] EXTERNAL "
                  "COMMAND: PROCESS_SERVICE_CHECK_RESULT;web01;disk;0;...`; each service traced by host;service from its checks "
                  "through alerts (SOFT, HARD) and notifications to recovery",
                  "nagios4 in the foreground (a private nagios.cfg, interval_length 1: active checks every 2 s through a wrapper "
                  "of check_http / check_tcp against 5 local services, 14 passive services) with agents of 5 hosts sending passive "
                  "results through the command file (OK, now and then WARNING and back), an admin's external commands "
                  "(comments, forced checks, downtimes, acknowledgements, custom notifications, notifications disabled and "
                  "enabled); 2 clean restarts (SIGTERM)",
                  "target_down (5: the checked service stopped), plugin_failure (4: the plugin missing, crashing, returning 42), "
                  "check_timeout (3), unknown_object (5: passive results for unknown hosts and services), bad_external_command "
                  "(5), notification_failed (3: the notification command hanging on a CRITICAL result), bad_config_restart "
                  "(5: an unknown host, an unknown check command, a nameless contact, a stale regular file as the command file, "
                  "bad directive values)", normal, br.errors)


# --------------------------------------------------------------------------
# kamailio (a SIP registrar / proxy with digest authentication; UAs in python)
# --------------------------------------------------------------------------

KAM_CFG = """#!KAMAILIO
debug=2
log_stderror=yes
fork=yes
children=2
tcp_children=2
dns=no
rev_dns=no
auto_aliases=no
use_dns_cache=off
listen=udp:127.0.0.1:{port}
listen=tcp:127.0.0.1:{port}
alias="onb15.test"
force_rport=yes
mpath="/usr/lib/x86_64-linux-gnu/kamailio/modules/"
loadmodule "db_text.so"
loadmodule "kex.so"
loadmodule "corex.so"
loadmodule "tm.so"
loadmodule "tmx.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "maxfwd.so"
loadmodule "usrloc.so"
loadmodule "registrar.so"
loadmodule "textops.so"
loadmodule "siputils.so"
loadmodule "xlog.so"
loadmodule "sanity.so"
loadmodule "auth.so"
loadmodule "auth_db.so"
loadmodule "pike.so"
modparam("auth_db", "db_url", "text://{work}/db")
modparam("auth_db", "calculate_ha1", yes)
modparam("auth_db", "password_column", "password")
modparam("auth_db", "load_credentials", "")
modparam("usrloc", "db_mode", 0)
modparam("registrar", "max_expires", 600)
modparam("tm", "fr_timer", 2000)
modparam("tm", "fr_inv_timer", 3000)
modparam("pike", "sampling_time_unit", 2)
modparam("pike", "reqs_density_per_unit", 80)
modparam("pike", "remove_latency", 4)
{extra}
request_route {{
    route(REQINIT);
    if (is_method("CANCEL")) {{
        if (t_check_trans()) {{ route(RELAY); }}
        exit;
    }}
    if (has_totag()) {{ route(WITHINDLG); exit; }}
    if (is_method("REGISTER")) {{ route(REGISTRAR); exit; }}
    if (is_method("OPTIONS") && uri==myself && $rU==$null) {{ sl_send_reply("200", "Keepalive"); exit; }}
    if ($rU==$null) {{
        xlog("L_NOTICE", "$rm without a user in $ru from $si:$sp\\n");
        sl_send_reply("484", "Address Incomplete");
        exit;
    }}
    route(LOCATION);
}}
route[REQINIT] {{
    if (!pike_check_req()) {{ xlog("L_ALERT", "pike: blocking $rm from $fu (IP:$si:$sp)\\n"); exit; }}
    if (!mf_process_maxfwd_header("10")) {{
        xlog("L_WARN", "too many hops: $rm from $si:$sp\\n");
        sl_send_reply("483", "Too Many Hops");
        exit;
    }}
    if (!sanity_check("17895", "7")) {{ xlog("L_WARN", "malformed SIP message from $si:$sp\\n"); exit; }}
}}
route[WITHINDLG] {{
    if (loose_route()) {{
        xlog("L_INFO", "in-dialog $rm $ci from $fu to $ru\\n");
        route(RELAY);
        exit;
    }}
    if (is_method("ACK")) {{
        if (t_check_trans()) {{ route(RELAY); }}
        exit;
    }}
    xlog("L_NOTICE", "in-dialog $rm $ci from $si:$sp matches no dialog\\n");
    sl_send_reply("404", "Not here");
    exit;
}}
route[REGISTRAR] {{
    if (!auth_check("$fd", "subscriber", "1")) {{
        if ($rc == -5 || $rc == -4 || $rc == -6) {{
            xlog("L_INFO", "REGISTER $tu from $si:$sp: challenged\\n");
        }} else {{
            xlog("L_WARN", "REGISTER $tu from $si:$sp: authentication failed (code $rc, user '$au')\\n");
        }}
        auth_challenge("$fd", "0");
        exit;
    }}
    consume_credentials();
    if (!save("location")) {{
        xlog("L_ERR", "REGISTER $tu: contact $ct not saved\\n");
        sl_reply_error();
        exit;
    }}
    xlog("L_INFO", "REGISTER $tu contact $ct expires $hdr(Expires) from $si:$sp: saved\\n");
}}
route[LOCATION] {{
    if (!lookup("location")) {{
        xlog("L_NOTICE", "$rm $fu -> $ru: no contact registered\\n");
        t_newtran();
        t_reply("404", "Not Found");
        exit;
    }}
    if (is_method("INVITE")) {{ record_route(); }}
    xlog("L_INFO", "$rm $ci $fu -> $tu relayed to $ru\\n");
    route(RELAY);
}}
route[RELAY] {{
    if (is_method("INVITE|MESSAGE|BYE")) {{ t_on_failure("FAIL"); }}
    t_on_reply("REPLY");
    if (!t_relay()) {{ sl_reply_error(); }}
    exit;
}}
onreply_route[REPLY] {{
    if ($rs >= 200) {{ xlog("L_INFO", "reply $rs $rr for $rm $ci\\n"); }}
}}
failure_route[FAIL] {{
    if (t_is_canceled()) {{ exit; }}
    if (t_check_status("408")) {{
        xlog("L_WARN", "$rm $ci to $ru: no answer from the contact (408)\\n");
    }} else {{
        xlog("L_NOTICE", "$rm $ci to $ru failed with $T_reply_code\\n");
    }}
}}
"""
KAM_HEAD = re.compile(r"^ *\d+\(\d+\) ")
kamailio_template = templater(KAM_HEAD, (r"\b[0-9a-f]{16,}\b", "HEX"), (r"\bonb15-\w+\b", "CALLID"), (r"sip:[^\s;>]+", "URI"),
                              (r"'[^']*'", "'S'"), (r"\(\d+\)", "(N)"))
KAM_REALM = "onb15.test"


def kamailio_problem(line: str) -> bool:
    m = re.match(r"^ *\d+\(\d+\) (\w+): ", line)
    if m:
        return m.group(1) in ("WARNING", "ERROR", "CRITICAL", "ALERT", "BUG", "EMERG", "CRIT", "ERR")
    return has_problem_word(line)  # untimestamped stdout / stderr text of a start


def sip_header(hdrs: list, name: str) -> str:
    return next((v for k, v in hdrs if k == name), "")


class SipUA:
    """A minimal SIP user agent over UDP: registers with digest authentication, sends MESSAGEs, makes calls
    (INVITE, ACK, BYE through the proxy's Record-Route) and answers what the proxy relays to it."""

    def __init__(self, proxy: int, user: str, password: str, src: str):
        self.proxy, self.user, self.password = proxy, user, password
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((src, 0))
        self.addr = self.sock.getsockname()
        self.waiters: dict = {}
        self.lock = threading.Lock()
        self.mute, self.closed = False, False
        self.cseq = random.randint(1, 1000)
        threading.Thread(target=self.loop, daemon=True).start()

    def contact(self) -> str:
        return f"<sip:{self.user}@{self.addr[0]}:{self.addr[1]}>"

    @staticmethod
    def parse(data: bytes) -> tuple[str, list, bytes]:
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        return lines[0], [(k.strip().lower(), v.strip()) for k, _, v in (x.partition(":") for x in lines[1:] if ":" in x)], body

    def loop(self) -> None:
        while not self.closed:
            try:
                data, _ = self.sock.recvfrom(65535)
            except OSError:
                return
            first, hdrs, _body = self.parse(data)
            if first.startswith("SIP/2.0 "):
                key = (sip_header(hdrs, "call-id"), sip_header(hdrs, "cseq"))
                with self.lock:
                    w = self.waiters.get(key)
                if w is not None:
                    w.append((int(first.split()[1]), hdrs))
            elif not self.mute:
                self.answer(first, hdrs)

    def answer(self, first: str, hdrs: list) -> None:
        def get(name: str) -> str:
            return sip_header(hdrs, name)

        method = first.split()[0]
        if method == "ACK":
            return
        vias = "".join(f"Via: {v}\r\n" for k, v in hdrs if k == "via")
        rrs = "".join(f"Record-Route: {v}\r\n" for k, v in hdrs if k == "record-route")
        to = get("to")
        if ";tag=" not in to:
            to += f";tag={random.getrandbits(32):x}"
        base = f"{vias}From: {get('from')}\r\nTo: {to}\r\nCall-ID: {get('call-id')}\r\nCSeq: {get('cseq')}\r\n"
        if method == "INVITE":
            with contextlib.suppress(OSError):
                self.sock.sendto(f"SIP/2.0 180 Ringing\r\n{base}{rrs}Contact: {self.contact()}\r\nContent-Length: 0\r\n\r\n".encode(),
                                 ("127.0.0.1", self.proxy))
            sdp = f"v=0\r\no={self.user} 1 1 IN IP4 {self.addr[0]}\r\ns=-\r\nc=IN IP4 {self.addr[0]}\r\nt=0 0\r\nm=audio {self.addr[1] + 2} RTP/AVP 0\r\n"
            msg = (f"SIP/2.0 200 OK\r\n{base}{rrs}Contact: {self.contact()}\r\nContent-Type: application/sdp\r\n"
                   f"Content-Length: {len(sdp)}\r\n\r\n{sdp}")
        else:
            msg = f"SIP/2.0 200 OK\r\n{base}Content-Length: 0\r\n\r\n"
        with contextlib.suppress(OSError):
            self.sock.sendto(msg.encode(), ("127.0.0.1", self.proxy))

    def request(self, method: str, ruri: str, to: str, headers: str = "", body: str = "", callid: str | None = None,
                from_tag: str | None = None, to_tag: str = "", cseq: int | None = None, timeout: float = 4.0,
                ctype: str = "text/plain", contact: str | None = None) -> tuple[int, list]:
        """Send a request to the proxy; the final status (0 when none came) and its headers."""
        with self.lock:
            self.cseq += 1
            n = cseq or self.cseq
        callid = callid or f"onb15-{random.getrandbits(48):x}"
        branch = f"z9hG4bK{random.getrandbits(40):x}"
        msg = (f"{method} {ruri} SIP/2.0\r\nVia: SIP/2.0/UDP {self.addr[0]}:{self.addr[1]};branch={branch};rport\r\n"
               f"Max-Forwards: 70\r\nFrom: <sip:{self.user}@{KAM_REALM}>;tag={from_tag or f'{random.getrandbits(32):x}'}\r\n"
               f"To: <{to}>{';tag=' + to_tag if to_tag else ''}\r\nCall-ID: {callid}\r\nCSeq: {n} {method}\r\n"
               f"Contact: {contact or self.contact()}\r\nUser-Agent: {random.choice(['Linphone/5.2.0', 'Zoiper rv2.10', 'MicroSIP/3.21.3', 'baresip v2.0'])}\r\n"
               f"{headers}{'Content-Type: ' + ctype + chr(13) + chr(10) if body else ''}Content-Length: {len(body.encode())}\r\n\r\n{body}")
        if method == "ACK":
            with contextlib.suppress(OSError):
                self.sock.sendto(msg.encode(), ("127.0.0.1", self.proxy))
            return 0, []
        key = (callid, f"{n} {method}")
        got: list = []
        with self.lock:
            self.waiters[key] = got
        try:
            with contextlib.suppress(OSError):
                self.sock.sendto(msg.encode(), ("127.0.0.1", self.proxy))
            end = time.time() + timeout
            while time.time() < end:
                final = [x for x in got if x[0] >= 200]
                if final:
                    return final[0]
                time.sleep(0.01)
            return 0, []
        finally:
            with self.lock:
                self.waiters.pop(key, None)

    def register(self, expires: int = 300, password: str | None = None, user: str | None = None, realm: str = KAM_REALM,
                 contact: str | None = None) -> int:
        aor = f"sip:{self.user}@{KAM_REALM}"
        callid = f"onb15-reg-{random.getrandbits(40):x}"
        status, hdrs = self.request("REGISTER", f"sip:{KAM_REALM}", aor, f"Expires: {expires}\r\n", callid=callid, contact=contact)
        chal = next((v for k, v in hdrs if k == "www-authenticate"), "")
        m = re.search(r'nonce="([^"]+)"', chal)
        if status != 401 or not m:
            return status
        u, pw = user or self.user, self.password if password is None else password
        ha1 = hashlib.md5(f"{u}:{realm}:{pw}".encode()).hexdigest()
        ha2 = hashlib.md5(f"REGISTER:sip:{KAM_REALM}".encode()).hexdigest()
        resp = hashlib.md5(f"{ha1}:{m.group(1)}:{ha2}".encode()).hexdigest()
        auth = (f'Authorization: Digest username="{u}", realm="{realm}", nonce="{m.group(1)}", uri="sip:{KAM_REALM}", '
                f'response="{resp}", algorithm=MD5\r\n')
        return self.request("REGISTER", f"sip:{KAM_REALM}", aor, f"Expires: {expires}\r\n" + auth, callid=callid, contact=contact)[0]

    def message(self, to_user: str, text: str) -> int:
        return self.request("MESSAGE", f"sip:{to_user}@{KAM_REALM}", f"sip:{to_user}@{KAM_REALM}", body=text)[0]

    def call(self, to_user: str, talk: float = 0.2) -> int:
        callid, ftag = f"onb15-call-{random.getrandbits(40):x}", f"{random.getrandbits(32):x}"
        sdp = f"v=0\r\no={self.user} 1 1 IN IP4 {self.addr[0]}\r\ns=-\r\nc=IN IP4 {self.addr[0]}\r\nt=0 0\r\nm=audio {self.addr[1] + 2} RTP/AVP 0 8\r\n"
        uri = f"sip:{to_user}@{KAM_REALM}"
        with self.lock:
            self.cseq += 1
            n = self.cseq
        status, hdrs = self.request("INVITE", uri, uri, body=sdp, callid=callid, from_tag=ftag, cseq=n, ctype="application/sdp")
        if status != 200:
            return status
        def get(name: str) -> str:
            return sip_header(hdrs, name)

        target = re.sub(r"^.*<|>.*$", "", get("contact")) or uri
        route = "".join(f"Route: {v}\r\n" for k, v in hdrs if k == "record-route")
        ttag = re.search(r"tag=([^;>\s]+)", get("to"))
        self.request("ACK", target, uri, route, callid=callid, from_tag=ftag, to_tag=ttag.group(1) if ttag else "", cseq=n)
        time.sleep(talk)
        return self.request("BYE", target, uri, route, callid=callid, from_tag=ftag, to_tag=ttag.group(1) if ttag else "")[0]

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


def source_kamailio(args) -> Source:
    kamailio = need("kamailio", "kamailio")
    rng = random.Random(f"{args.seed}-kamailio")
    with tempfile.TemporaryDirectory(prefix="onb15-kamailio-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        logp, cfg, db = os.path.join(work, "kamailio.log"), os.path.join(work, "kamailio.cfg"), os.path.join(work, "db")
        os.makedirs(db)
        write_atomic(os.path.join(db, "version"), "table_name(string) table_version(int)\nsubscriber:7\nlocation:9\n")
        write_atomic(os.path.join(db, "subscriber"), "id(int,auto) username(string) domain(string) password(string) ha1(string,null) "
                     "ha1b(string,null)\n" + "".join(f"{i}:{u}:{KAM_REALM}:{PASSWORD.format(u)}:::\n" for i, u in enumerate(ACCOUNTS, 1)))

        def write_cfg(extra: str = "", text: str | None = None) -> None:
            write_atomic(cfg, text if text is not None else KAM_CFG.format(port=port, work=work, extra=extra))

        def start(wait: bool = True, p: int | None = None) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("kamailio", [kamailio, "-f", cfg, "-DD", "-E", "-m", "48", "-M", "8", "-P", f"{work}/kamailio.pid",
                                      "-Y", work], stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"using database at", since, 30)
                time.sleep(1.0)

        def stop() -> None:
            sv.stop("kamailio", signal.SIGTERM, 15)

        uas = {u: SipUA(port, u, PASSWORD.format(u), HOSTS[i % len(HOSTS)]) for i, u in enumerate(ACCOUNTS)}

        def register_all() -> None:
            for ua in uas.values():
                ua.register(rng.choice([120, 300, 600]))

        def client(r: random.Random) -> None:
            ua = r.choice(list(uas.values()))
            peer = r.choice([u for u in ACCOUNTS if u != ua.user])
            a = r.random()
            if a < 0.15:
                ua.register(r.choice([120, 300, 600]))
            elif a < 0.6:
                for _ in range(r.randint(1, 3)):
                    ua.message(peer, " ".join(r.choices(WORDS, k=r.randint(2, 12))))
            elif a < 0.9:
                ua.call(peer, r.uniform(0.05, 0.4))
            else:
                ua.request("OPTIONS", f"sip:{KAM_REALM}", f"sip:{KAM_REALM}", timeout=2)

        write_cfg()
        start()
        log = FileLog(logp)
        register_all()
        say(f"kamailio on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 6))
                       for _ in range(rng.randint(4, 8))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start, then=register_all)  # phones keep no registration: again

        try:
            normal = normal_loop(args, log, "kamailio", round_fn)
            templates = {kamailio_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, kamailio_template, kamailio_problem))
            gate = threading.Event()
            gate.set()

            def restart_clean() -> None:
                gate.clear()
                sv.stop("kamailio", signal.SIGTERM, 15)
                sv.forget("kamailio")
                write_cfg()
                start()
                register_all()
                gate.set()

            def background(r: random.Random) -> None:
                if gate.is_set():
                    client(r)

            def sip_raw(data: bytes, src: str = "127.0.0.20", tcp: bool = False) -> None:
                with contextlib.suppress(OSError):
                    if tcp:
                        with socket.create_connection(("127.0.0.1", port), 3, source_address=(src, 0)) as c:
                            c.sendall(data)
                            time.sleep(0.5)
                    else:
                        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as c:
                            c.bind((src, 0))
                            c.sendto(data, ("127.0.0.1", port))

            with Background(background, random.Random(rng.random()), (0.2, 0.5)):
                with br.phase("auth_failure"):  # wrong passwords, unknown users, a wrong realm
                    for kw in [{"password": "alice"}, {"password": "Bob-Onb15"}, {"user": "mallory", "password": "hunter2"},
                               {"user": "admin", "password": "admin"}, {"user": "erin", "password": "Erin-Onb15!"}, {"password": ""}]:
                        ua = SipUA(port, rng.choice(ACCOUNTS), "x", "127.0.0.21")
                        with br.occurrence(1.5):
                            ua.register(300, **kw)
                        ua.close()
                with br.phase("unknown_callee"):  # calls and messages to users that are not registered or do not exist
                    for to, how in [("kevin", "call"), ("support", "message"), ("5551234", "call"), ("sales", "message")]:
                        with br.occurrence(1.5):
                            ua = rng.choice(list(uas.values()))
                            ua.call(to) if how == "call" else ua.message(to, "are you there?")
                with br.phase("unreachable_contact"):  # a phone registered, then gone (closed socket or hung): 408
                    for i, how in enumerate(["closed", "mute", "closed", "mute"]):
                        user = ACCOUNTS[i]
                        uas[user].register(0)  # the desk phone unregisters, a softphone takes over...
                        ghost = SipUA(port, user, PASSWORD.format(user), "127.0.0.22")
                        ghost.register(120)
                        if how == "closed":  # ...and is gone
                            ghost.close()
                        else:  # ...and hangs
                            ghost.mute = True
                        time.sleep(0.3)
                        br.between()
                        with br.occurrence(1.5):
                            caller = uas[ACCOUNTS[-1 - i]]
                            caller.call(user) if i % 2 == 0 else caller.message(user, "ping")
                        uas[user].register(0, contact=ghost.contact())
                        ghost.close()
                        uas[user].register(300)
                        time.sleep(3.0)  # a background request sent to the gone phone times out (fr_timer) outside any window
                        br.between()
                with br.phase("malformed_sip"):  # garbage, broken request lines and headers, over UDP and TCP
                    hdr = b"Via: SIP/2.0/UDP 127.0.0.20:5060;branch=z9hG4bK%s\r\nFrom: %s\r\nTo: <sip:bob@onb15.test>\r\nCall-ID: %s\r\n"
                    for data, tcp in [(b"INVITE sip:bob@onb15.test SIP/2.0\r\n\r\n", False), (b"\x00\x01garbage\xff" * 10, False),
                                      (b"MESSAGE sip:bob@onb15.test SIP/2.0\r\n" + hdr % (b"x", b"<sip:x@onb15.test>;tag=1", b"m1")
                                       + b"CSeq: abc MESSAGE\r\nMax-Forwards: 70\r\nContent-Length: 99\r\n\r\nshort", False),
                                      (b"OPTIONS sip:onb15.test SIP/2.0\r\n" + hdr % (b"y", b"<sip:x@onb15.test>;tag=1", b"m2")
                                       + b"CSeq: 1 OPTIONS\r\nMax-Forwards: 0\r\nContent-Length: 0\r\n\r\n", False),
                                      (b"MESSAGE sip:bob@onb15.test SIP/2.0\r\n" + hdr % (b"z", b"garbage<<", b"m3")
                                       + b"CSeq: 1 MESSAGE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n", False),
                                      (b"INVITE bob SIP/2.0\r\n" + hdr % (b"w", b"<sip:x@onb15.test>;tag=2", b"m4")
                                       + b"CSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n", False),
                                      (b"GET / HTTP/1.1\r\nHost: pbx\r\n\r\n", True)]:
                        with br.occurrence(1.5):
                            sip_raw(data, tcp=tcp)
                with br.phase("flood"):  # one address sending requests far above the pike limit
                    for _ in range(3):
                        with br.occurrence(3.0), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as c:
                            c.bind(("127.0.0.23", 0))
                            for i in range(120):
                                c.sendto((f"OPTIONS sip:onb15.test SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.23:{c.getsockname()[1]};"
                                          f"branch=z9hG4bKf{i}{rng.getrandbits(24):x};rport\r\nFrom: <sip:scanner@onb15.test>;tag=f{i}\r\n"
                                          f"To: <sip:onb15.test>\r\nCall-ID: flood-{rng.getrandbits(40):x}\r\nCSeq: 1 OPTIONS\r\n"
                                          "Max-Forwards: 70\r\nUser-Agent: friendly-scanner\r\nContent-Length: 0\r\n\r\n").encode(),
                                         ("127.0.0.1", port))
                        time.sleep(4.5)  # pike's remove_latency: the address is unblocked
                        br.between()
                with br.phase("child_killed"):  # a kamailio worker SIGKILLed: the whole server goes down
                    for _ in range(3):
                        pid = sv.procs["kamailio"].pid if "kamailio" in sv.procs else 0
                        kids = children(pid) if pid else []
                        gate.clear()
                        with br.occurrence(2.5):
                            if kids:
                                with contextlib.suppress(OSError):
                                    os.kill(rng.choice(kids), signal.SIGKILL)
                        restart_clean()
                        br.between()
                with br.phase("bad_config_restart"):  # kamailio.cfg mistakes, the port taken, kamailio restarted
                    blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    blocker.bind(("127.0.0.1", 0))
                    good = KAM_CFG.format(port=port, work=work, extra="")
                    for text in [good.replace("route(LOCATION);\n}", "route(LOCATION)\n}", 1),
                                 good.replace('loadmodule "pike.so"', 'loadmodule "pikeplus.so"'),
                                 good.replace(f"listen=udp:127.0.0.1:{port}", f"listen=udp:127.0.0.1:{blocker.getsockname()[1]}"),
                                 good.replace('modparam("tm", "fr_timer", 2000)', 'modparam("tm", "fr_timer", "two seconds")'),
                                 good.replace('t_on_reply("REPLY");', 't_on_reply("REPLY");\n    t_relay_to_nowhere();')]:
                        gate.clear()
                        stop()
                        br.between()
                        write_cfg(text=text)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(1.5)
                            rng.choice(list(uas.values())).request("OPTIONS", f"sip:{KAM_REALM}", f"sip:{KAM_REALM}", timeout=1)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            for ua in uas.values():
                ua.close()
    return Source("kamailio", "Kamailio SIP server", dpkg_version("kamailio"),
                  "kamailio's stderr (-E, no time stamp: the process index, the pid, the level, the module or <script> for "
                  "xlog lines, [file:line] and the function for core lines): ` 2(4242) INFO: <script>: REGISTER "
                  "sip:alice@onb15.test contact <sip:alice@127.0.0.2:40001> expires 300 from 127.0.0.2:40001: saved`, ` 1(4241) "
                  "ERROR: <core> [core/parser/msg_parser.c:748]: parse_msg(): ...`; the start-up banner on stdout; each call "
                  "traced by its Call-ID from INVITE through the replies and the in-dialog ACK and BYE",
                  "kamailio -DD -E (2 UDP and 2 TCP workers, db_text subscribers, usrloc in memory, record-routing, pike, xlog "
                  "lines of the routing script) with 10 SIP phones (python UAs on 8 addresses) registering with digest "
                  "authentication, refreshing, sending MESSAGEs, making calls (INVITE, 180, 200, ACK, BYE) and OPTIONS "
                  "keepalives; 2 clean restarts (SIGTERM, the phones register again)",
                  "auth_failure (6: wrong passwords, unknown users, another user's credentials, an empty password), unknown_callee "
                  "(4), unreachable_contact (4: the registered phone gone or hung: 408), malformed_sip (7: missing headers, binary "
                  "junk, a bad CSeq and short body, Max-Forwards 0, a bad From, a bad request URI, HTTP on the TCP port), flood (3 bursts "
                  "blocked by pike), child_killed (3 workers SIGKILLed), bad_config_restart (5: a syntax error, a missing "
                  "module, the UDP port taken, a bad modparam value, an unknown function)", normal, br.errors)


# --------------------------------------------------------------------------
# inspircd (an IRC server; IRC clients and bots in python)
# --------------------------------------------------------------------------

IRC_CONF = """\
<server name="irc.onb15.test" description="Onb15 chat" network="Onb15">
<admin name="Chat Ops" nick="ops" email="ops@onb15.test">
<bind address="127.0.0.1" port="{port}" type="clients">
<power diepass="Die-Onb15!" restartpass="Restart-Onb15!">
<connect name="bots" allow="127.0.0.8/29" password="Bots-Onb15!" hash="plaintext" resolvehostnames="no" maxchans="20"
         timeout="4" pingfreq="60" hardsendq="1M" softsendq="8192" recvq="8K" threshold="50" commandrate="5000" fakelag="off"
         localmax="50" globalmax="50" useident="no" limit="100">
<connect name="main" allow="127.0.0.0/29" resolvehostnames="no" maxchans="20" timeout="4" pingfreq="60" hardsendq="64K"
         softsendq="8192" recvq="8K" threshold="40" commandrate="8000" fakelag="off" localmax="200" globalmax="200" useident="no"
         limit="500" modes="+x">
<connect name="kiosk" allow="127.0.0.16/30" resolvehostnames="no" maxchans="5" timeout="4" pingfreq="60" recvq="8K" fakelag="off"
         localmax="2" globalmax="2" useident="no" limit="20">
<class name="BanControl" commands="KILL GLINE KLINE ZLINE QLINE ELINE CHECK CLONES" usermodes="*" chanmodes="*">
<class name="OperChat" commands="WALLOPS GLOBOPS" usermodes="*" chanmodes="*" privs="users/mass-message">
<class name="Shutdown" commands="DIE RESTART REHASH LOADMODULE UNLOADMODULE RELOADMODULE">
<type name="NetAdmin" classes="OperChat BanControl Shutdown" vhost="netadmin.onb15.test">
<oper name="alice" password="Oper-alice-15" host="*@127.0.0.2 *@127.0.0.3" type="NetAdmin">
<oper name="frank" password="Oper-frank-15" host="*@127.0.0.*" type="NetAdmin">
<files motd="{work}/motd.txt">
<pid file="{work}/inspircd.pid">
<log method="file" type="* -USERINPUT -USEROUTPUT" level="debug" flush="1" target="{work}/ircd.log">
<options prefixquit="Quit: " fixedquit="" hostintopic="yes" syntaxhints="no" announcets="yes">
<security hidewhois="" userstats="Pu" customversion="" flatlinks="no" hidebans="no" hideserver="" hideulines="no">
<performance netbuffersize="10240" somaxconn="128" softlimit="12800" quietbursts="yes">
<limits maxnick="30" maxchan="64" maxmodes="20" maxident="10" maxquit="255" maxtopic="307" maxkick="255" maxreal="128" maxaway="200">
<module name="md5">
<module name="cloaking">
<cloak mode="half" key="onb15-cloak-key-0123456789abcdef">
{extra}"""
IRC_HEAD = re.compile(r"^\w{3} \w{3} \d\d \d{4} [\d:]+ ")
inspircd_template = templater(IRC_HEAD, (r"\b\d{3}[A-Z][A-Z0-9]{5}\b", "UID"), (r"\b[\w\[\]`^{}|-]+![\w~.-]+@[\w.:-]+", "NICK!USER@HOST"),
                              (r"=[^\s=']+ '", "=NICK '"), (r"\b(user|User) [\w\[\]`^{}|-]+ ", r"\1 NICK "),
                              (r"@0x[0-9a-f]+", "@PTR"), (r"'[^']*'", "'S'"), (r"\[[^\]]*\]$", "[TEXT]"), (r"/[\w./-]+", "PATH"))
IRC_CHANNELS = ["#ops", "#dev", "#random", "#support", "#release"]
IRC_QUITS = ["bye", "see you tomorrow", "lunch", "rebooting", "going home", "later", "off to a meeting"]
IRC_MAIN_HOSTS = HOSTS[:5]  # 127.0.0.2-6 (the main class); .7 is the address the breakages ban, .8-.10 the bots, .16 a kiosk


def line_pump(pipe, path: str) -> threading.Thread:
    """Append a program's stdout to its log file a whole line at a time (its partial lines, e.g. a row of dots
    while modules load, would otherwise be cut by the log file's own lines)."""
    def pump():
        with pipe, open(path, "ab") as out:
            for line in iter(pipe.readline, b""):
                out.write(line)
                out.flush()
    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def inspircd_problem(line: str) -> bool:
    m = IRC_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.search(r"\b[KGZQ]-lined\b|WARNING!", body)) or has_problem_word(body, PROBLEM_WORDS + r"|reset|exceeds")


def irc_session(port: int, src: str, nick: str, user: str, real: str, script: list, password: str | None = None,
                quit_msg: str | None = "bye", settle: float = 2.0) -> bytes:
    """One IRC client connection: register, run the script (lines to send, numbers to sleep), QUIT."""
    got = b""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
        s.settimeout(6)
        s.sendall((f"PASS {password}\r\n" if password else "").encode() + f"NICK {nick}\r\nUSER {user} 0 * :{real}\r\n".encode())
        end = time.time() + 6
        while b" 001 " not in got and b"ERROR :" not in got and time.time() < end:
            d = s.recv(65536)
            if not d:
                return got
            got += d
            for ping in re.findall(rb"^PING (\S+)", got, re.MULTILINE):
                s.sendall(b"PONG " + ping + b"\r\n")
        if b" 001 " not in got:
            return got
        for item in script:
            if isinstance(item, (int, float)):
                time.sleep(item)
            else:
                s.sendall(item.encode() + b"\r\n")
                time.sleep(0.02)
        if quit_msg is not None:
            s.sendall(f"QUIT :{quit_msg}\r\n".encode())
        s.settimeout(settle + 1)
        with contextlib.suppress(OSError):
            while True:
                d = s.recv(65536)
                if not d:
                    break
                got += d
    return got


class IrcBot(threading.Thread):
    """A bot that stays connected (and reconnects after restarts), sits in channels and talks now and then."""

    def __init__(self, port: int, src: str, nick: str, rng: random.Random):
        super().__init__(daemon=True)
        self.port, self.src, self.nick, self.rng = port, src, nick, rng
        self.stop_ev = threading.Event()

    def run(self) -> None:
        while not self.stop_ev.is_set():
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 5, source_address=(self.src, 0)) as s:
                s.settimeout(1)
                s.sendall(f"PASS Bots-Onb15!\r\nNICK {self.nick}\r\nUSER {self.nick} 0 * :Onb15 bot\r\n".encode())
                buf, joined, last = b"", False, time.time()
                while not self.stop_ev.is_set():
                    try:
                        d = s.recv(65536)
                        if not d:
                            break
                        buf = (buf + d)[-65536:]
                    except TimeoutError:
                        pass
                    for ping in re.findall(rb"^PING (\S+)", buf, re.MULTILINE):
                        s.sendall(b"PONG " + ping + b"\r\n")
                    buf = re.sub(rb"^PING \S+\r?\n", b"", buf, flags=re.MULTILINE)
                    if not joined and b" 001 " in buf:
                        s.sendall(("JOIN " + ",".join(self.rng.sample(IRC_CHANNELS, 3)) + "\r\n").encode())
                        joined = True
                    if joined and time.time() - last > self.rng.uniform(2, 6):
                        s.sendall(f"PRIVMSG {self.rng.choice(IRC_CHANNELS)} :build {self.rng.randint(100, 999)} "
                                  f"{self.rng.choice(['passed', 'queued', 'deployed'])}\r\n".encode())
                        last = time.time()
                if self.stop_ev.is_set():
                    with contextlib.suppress(OSError):
                        s.sendall(b"QUIT :shutting down\r\n")
                        time.sleep(0.2)
            self.stop_ev.wait(1.0)

    def close(self) -> None:
        self.stop_ev.set()


def source_inspircd(args) -> Source:
    inspircd = need("inspircd", "inspircd")
    rng = random.Random(f"{args.seed}-inspircd")
    with tempfile.TemporaryDirectory(prefix="onb15-inspircd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        logp, conf = os.path.join(work, "ircd.log"), os.path.join(work, "inspircd.conf")
        write_atomic(os.path.join(work, "motd.txt"), "Welcome to the Onb15 chat.\nBe nice.\n")
        write_atomic(logp, "")

        def write_conf(extra: str = "", text: str | None = None, p: int | None = None) -> None:
            write_atomic(conf, text if text is not None else IRC_CONF.format(port=p or port, work=work, extra=extra))
            subprocess.run(["chown", "-R", "irc:irc", work], check=True)

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            proc = sv.start("inspircd", ["setpriv", "--reuid=irc", "--regid=irc", "--init-groups", inspircd, f"--config={conf}",
                                         "--nofork", "--nopid"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=work)
            line_pump(proc.stdout, logp)  # its stdout (start-up text, configuration errors) next to its log file
            if wait:
                log_has(logp, b"Startup complete", since, 30)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("inspircd", signal.SIGTERM, 15)

        def nick_of(r: random.Random, base: str) -> str:
            return f"{base}{r.choice(['', '_', '|away', '-w', '2'])}{r.randint(1, 999)}"[:20].replace("|away", "_away")

        def client(r: random.Random) -> None:
            u = r.choice(ACCOUNTS)
            src = r.choice(IRC_MAIN_HOSTS)
            chans = r.sample(IRC_CHANNELS, r.randint(1, 3))
            script: list = [f"JOIN {','.join(chans)}", 0.1]
            for _ in range(r.randint(1, 6)):
                script.append(f"PRIVMSG {r.choice(chans)} :{' '.join(r.choices(WORDS, k=r.randint(2, 10)))}")
            a = r.random()
            if a < 0.15:
                script.append(f"TOPIC {chans[0]} :{r.choice(['release on friday', 'standup at 10', 'welcome', 'on call: ' + u])}")
            elif a < 0.3:
                script.append(f"NICK {nick_of(r, u)}")
            elif a < 0.45:
                script.append(f"WHOIS {r.choice(ACCOUNTS)}")
            elif a < 0.55:
                script += ["LIST", "LUSERS"]
            elif a < 0.65:
                script.append(f"PART {chans[-1]} :{r.choice(IRC_QUITS)}")
            elif a < 0.72:
                script.append(f"AWAY :{r.choice(IRC_QUITS)}")
            script.append(r.uniform(0.05, 0.5))
            irc_session(port, src, nick_of(r, u), u, f"{u.title()} {r.choice('ABCDEFGHJK')}.", script, quit_msg=r.choice(IRC_QUITS))

        def oper_session(r: random.Random) -> None:
            who, src = r.choice([("alice", "127.0.0.2"), ("alice", "127.0.0.3"), ("frank", r.choice(IRC_MAIN_HOSTS))])
            act = r.choice(["STATS u", "STATS o", "REHASH", "WALLOPS :maintenance window tonight", "CHECK #ops", "CLONES 3"])
            irc_session(port, src, nick_of(r, who + "_op"), who, "Chat Ops", [f"OPER {who} Oper-{who}-15", 0.3, act, 0.5],
                        quit_msg="done")

        write_conf()
        start()
        log = FileLog(logp)
        bots = [IrcBot(port, f"127.0.0.{8 + i}", f"{name}bot", random.Random(rng.random()))
                for i, name in enumerate(["build", "deploy", "pager"])]
        for b in bots:
            b.start()
        say(f"inspircd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
                       for _ in range(rng.randint(8, 14))]
            if rng.random() < 0.25:
                threads.append(threading.Thread(target=oper_session, args=(random.Random(rng.random()),)))
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)

        try:
            normal = normal_loop(args, log, "inspircd", round_fn)
            templates = {inspircd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, inspircd_template, inspircd_problem))

            def restart_clean() -> None:
                sv.stop("inspircd", signal.SIGTERM, 15)
                sv.forget("inspircd")
                write_conf()
                start()

            def raw(data: bytes, src: str, wait: float = 0.8) -> None:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
                    s.sendall(data)
                    time.sleep(wait)

            with Background(client, random.Random(rng.random()), (0.1, 0.3)):
                with br.phase("bad_oper"):  # wrong oper passwords, unknown oper names, the right password from a wrong host
                    for who, pw, src in [("alice", "oper-alice-15", "127.0.0.2"), ("root", "toor", "127.0.0.4"), ("alice", "Oper-alice-15", "127.0.0.5"),
                                         ("frank", "Oper-frank-14", "127.0.0.6"), ("admin", "admin", "127.0.0.3")]:
                        with br.occurrence(1.0):
                            irc_session(port, src, nick_of(rng, "visitor"), "visitor", "Visitor", [f"OPER {who} {pw}", 0.3], quit_msg="ok")
                with br.phase("banned_client"):  # clients matching the K-line and Z-line an operator set (set outside the windows)
                    irc_session(port, "127.0.0.2", "alice_op", "alice", "Chat Ops", ["OPER alice Oper-alice-15", 0.3,
                                                                                      "KLINE spam*@* 0 :spam bots are not welcome", 0.2,
                                                                                      "ZLINE 127.0.0.7 0 :abusive network", 0.3], quit_msg="done")
                    time.sleep(0.5)
                    br.between()
                    for user, src in [("spambot", "127.0.0.4"), ("spam2", "127.0.0.2"), ("eve", "127.0.0.7"), ("spammer", "127.0.0.5"),
                                      ("mallory", "127.0.0.7")]:
                        with br.occurrence(1.0):
                            irc_session(port, src, nick_of(rng, user), user, "Totally Legit", ["JOIN #random", "PRIVMSG #random :buy now"])
                    irc_session(port, "127.0.0.2", "alice_op", "alice", "Chat Ops", ["OPER alice Oper-alice-15", 0.3, "KLINE spam*@*", 0.2,
                                                                                      "ZLINE 127.0.0.7", 0.3], quit_msg="done")
                    time.sleep(0.5)
                    br.between()
                with br.phase("flood"):  # clients flooding the server: commands past the threshold, a line past the RecvQ
                    for lines in [[f"PRIVMSG #dev :{'x' * 100}"] * 150, [f"NOTICE #ops :paste {i}" for i in range(200)],
                                  ["PRIVMSG #random :" + "y" * 9000], ["WHOIS alice"] * 120]:
                        with br.occurrence(1.5):
                            irc_session(port, rng.choice(IRC_MAIN_HOSTS), nick_of(rng, "paste"), "paste", "Paster", ["JOIN #dev"] + lines,
                                        quit_msg=None, settle=1.0)
                with br.phase("too_many_connections"):  # a third connection from the kiosk (the class allows two per address)
                    for _ in range(3):
                        held = [socket.create_connection(("127.0.0.1", port), 5, source_address=("127.0.0.16", 0)) for _ in range(2)]
                        for i, h in enumerate(held):
                            h.sendall(f"NICK kiosk{i}{rng.randint(10, 99)}\r\nUSER kiosk 0 * :Lobby kiosk\r\n".encode())
                        time.sleep(2.5)
                        br.between()
                        with br.occurrence(1.5):
                            irc_session(port, "127.0.0.16", nick_of(rng, "kiosk"), "kiosk", "Lobby kiosk", ["JOIN #support"])
                        for h in held:
                            with contextlib.suppress(OSError):
                                h.sendall(b"QUIT :closing\r\n")
                                time.sleep(0.3)
                                h.close()
                        time.sleep(0.5)
                        br.between()
                with br.phase("registration_timeout"):  # connections that never finish registering
                    for data in [b"", b"NICK halfway\r\n", b"CAP LS 302\r\n"]:
                        with br.occurrence(1.0):
                            raw(data, rng.choice(IRC_MAIN_HOSTS), wait=5.0)
                with br.phase("protocol_garbage"):  # not IRC on the IRC port
                    for data in [b"GET / HTTP/1.1\r\nHost: irc\r\n\r\n", TLS_HELLO, bytes(rng.getrandbits(8) for _ in range(256)),
                                 b"NICK " + b"A" * 2000 + b"\r\n", b"\x00" * 64 + b"\r\n"]:
                        with br.occurrence(1.5):
                            raw(data, rng.choice(IRC_MAIN_HOSTS), wait=0.8)
                with br.phase("bad_password"):  # bots connecting with a wrong or no connection password
                    for pw, src in [("bots-onb15!", "127.0.0.12"), (None, "127.0.0.13"), ("Bots-Onb14!", "127.0.0.14"), ("", "127.0.0.12")]:
                        with br.occurrence(1.5):
                            irc_session(port, src, nick_of(rng, "newbot"), "newbot", "Onb15 bot", ["JOIN #ops"], password=pw)
                with br.phase("bad_config_restart"):  # inspircd.conf mistakes, the port taken, inspircd restarted
                    blocker = tcp_blocker()
                    good = IRC_CONF.format(port=port, work=work, extra="")
                    for kw in [{"extra": '<module name="onb15_nosuch">'}, {"text": good.replace('network="Onb15">', 'network="Onb15>', 1)},
                               {"p": blocker.getsockname()[1]},
                               {"text": good.replace('host="*@127.0.0.*" type="NetAdmin"', 'host="*@127.0.0.*" type="GlobalOp"')},
                               {"text": good.replace('<cloak mode="half" key="onb15-cloak-key-0123456789abcdef">', '<cloak mode="half" key="short">')}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(1.5)
                            irc_session(port, rng.choice(IRC_MAIN_HOSTS), nick_of(rng, "early"), "early", "Early Bird", ["JOIN #ops"])
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            for b in bots:
                b.close()
            time.sleep(0.3)
            stop()
    return Source("inspircd", "InspIRCd", dpkg_version("inspircd"),
                  "InspIRCd's log file at level debug (all types but USERINPUT / USEROUTPUT), a day-first date with the year "
                  "and a type: `Sun Dec 06 2026 05:40:01 CONNECT: Client connecting on port 6667 (class main): alice12!alice@"
                  "127.0.0.2 (127.0.0.2) [Alice B.]`, `... USERS: QuitUser: 572AAAAAB=alice12 'Quit: bye'`, `... OPER: WARNING! "
                  "Failed oper attempt by ...`; its stdout (start-up text, configuration errors) appended; each client traced "
                  "by its UID and file descriptor from accept through connect class, registration and quit",
                  "inspircd --nofork (as irc, connect classes for users, bots and a kiosk, cloaking) with IRC clients of 10 users on 5 hosts (register, "
                  "join channels, talk, topics, nick changes, WHOIS, LIST, away, part, quit), 3 bots in a password class that "
                  "stay connected, operators (OPER, STATS, REHASH, WALLOPS, CHECK, CLONES); 2 clean restarts (SIGTERM)",
                  "bad_oper (5: wrong passwords, unknown oper names, a wrong host), banned_client (5: a K-line and a Z-line), "
                  "flood (4: commands past the flood threshold, a line past the RecvQ), too_many_connections (3: a class's per-address limit), registration_timeout (3), "
                  "protocol_garbage (5: HTTP, a TLS hello, binary junk, an overlong line, NUL bytes), bad_password (4: the "
                  "bots' class password wrong or missing), bad_config_restart (5: an unknown module, a syntax error, the port "
                  "taken, an oper of an unknown type, a short cloak key)", normal, br.errors)


def stat_is_fifo(path: str) -> bool:
    import stat
    return stat.S_ISFIFO(os.stat(path).st_mode)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_fifteenth", SOURCES, globals(), seed=15015, min_normal_s=40,
               root_for="programs dropping to their own users (nagios, svnserve and inspircd run as system users)",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = "none"
ODDITIES = [
    ("a first full run (all five sources, --seed 15015, 746 s) was checked by eye before this one: influxdb's template "
     "missed trace ids holding a '~' (the background's continuous-query lines were kept in a not_authorized event) and "
     "its tag-limit breakage left 'max-values-per-tag limit may be exceeded soon' warnings for a periodic check to write "
     "into a later window; both fixed (trace ids masked whole, the probe measurement dropped after each occurrence) and "
     "the whole corpus regenerated; nothing had been scored on this corpus"),
    ("influxdb: influxd writes no message of its own for a refused write or query: most events are one HTTP access-log "
     "line that differs from the normal ones only by its status (401, 403, 400, 404, 413), kept by the status rule; a "
     "query with a bad epoch parameter is answered 200 and logs nothing (no event); a restart with the port taken also "
     "logs the start-up lines (WAL files read, shards opened) that every normal start writes; the other bad restarts are "
     "untimestamped 'run: ...' lines"),
    ("svnserve: wrong passwords and unknown users both log only '- - ERR - 0 210002 Network connection closed "
     "unexpectedly' (no user, no repository: svnserve logs the client hanging up after its refusal), the line any "
     "dropped connection writes (the script waits for the port through /proc/net/tcp rather than by connecting, so "
     "normal.log has no such line); svnserve does not log refused commits at all (pre-commit hook rejections, "
     "out-of-date commits), so those breakages were left out; the missing-password-file restart's event also holds the "
     "background sessions failing at that time (about 40 lines)"),
    ("nagios: WARNING is a state of normal operation (passive results now and then WARNING, with their alerts, "
     "notifications and recoveries in normal.log); only CRITICAL / UNKNOWN / DOWN / UNREACHABLE states count as "
     "problems; 'EXTERNAL COMMAND:' lines are dropped as echoes of the workload (also for the bad commands, whose "
     "'Warning:' / 'Error:' / 'returned error' lines are kept); the recoveries after each occurrence are forced outside "
     "the windows; 'wproc:' records of killed or timed-out jobs span several lines ('wproc:   host=...; service=...;')"),
    ("kamailio: its lines have no time stamp; the levels of the '<script>' lines are those the routing script gives "
     "(authentication failures and 408s at WARNING, a callee with no contact at NOTICE, kept only as a new template); "
     "one flood occurrence logs an ALERT line per blocked request (about 25); killing one worker stops the whole server "
     "(ALERT lines, then its shutdown); the TCP parse error dumps the request over several untimestamped lines"),
    ("inspircd: logged at level debug, so every connection writes CONNECTCLASS / SOCKET / USERS / BANCACHE / CULLLIST "
     "lines; protocol_garbage events hold only \"Error on FD N - 'Connection closed'\" and 'DoWrite on errored or closed "
     "socket', what any client hanging up before registering writes (InspIRCd logs nothing of the bytes it got); a "
     "failed OPER earns a penalty, so the visitor may be cut with 'Excess Flood' in the same event; 'core_dns: WARNING: "
     "<dns:server> not defined' is written at every start (normal ones too) and is not counted as a problem; its stdout "
     "(start-up text, configuration errors) is appended to the log file whole lines at a time"),
]


if __name__ == "__main__":
    sys.exit(main())
