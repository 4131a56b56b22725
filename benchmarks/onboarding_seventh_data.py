#!/usr/bin/env python3
"""Generate the seventh onboarding corpus: real log lines written by real programs, grouped into events.

A seventh corpus built exactly like benchmarks/onboarding_sixth_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py, of the fourth, fifth and
first scripts imported) from five programs that no other corpus uses.  Every line is the verbatim
output of a program started by this script on this machine; the script only *drives* the programs
(clients it runs) and *breaks* them (bad configs, stopped or frozen dependencies, wrong passwords
and keys, garbage on the wire, exhausted pools and limits, timeouts...).  It never writes a log line
itself.

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one bad reload,
one outage of a dependency (the state-change lines and the requests failing during it).  The
breakages are made one occurrence at a time, each in its own time window followed by a pause for
the program to finish logging about it; what the program logs between two windows (recovery,
restarting it) belongs to no event and is not kept.  Normal background traffic keeps running
during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends pgbouncer
postgresql privoxy proftpd-basic knot knot-dnsutils icecast2; also util-linux (setpriv), openssl
and python3; the PostgreSQL clients are psql and pgbench (postgresql-client), the DNS clients
knsupdate, kdig and knotc (knot-dnsutils, knot), the FTP, HTTP, proxy and streaming clients are
python code in this script.  Nothing is installed by this script, and no system service of these
packages needs to run: each daemon is started directly as a plain process, without systemd):

  pgbouncer PgBouncer 1.18 (as user postgres, logfile) in front of a private PostgreSQL 15 cluster
            (started as in benchmarks/onboarding_data.py): `yyyy-mm-dd hh:mm:ss.mmm UTC [pid] LOG
            C-0x...: db/user@127.0.0.1:port login attempt: db=shop user=app_rw tls=no`, `... closing
            because: client close request (age=0s)`, `S-0x...: ... new connection to server (from
            ...)`, periodic `stats:` lines, WARNING / ERROR lines.  Databases shop (transaction
            pooling), reports (session pooling, pool_size 2) and bench.  Normal: web requests (psql
            sessions of shop queries and checkouts), reporting sessions, a PHP-style app connecting
            per transaction (pgbench -C -S), monitoring (SHOW POOLS / STATS / CLIENTS as a stats
            user), admin RELOADs, two clean restarts.
            Broken: wrong passwords, unknown databases, users unknown to the server, PostgreSQL
            stopped, PostgreSQL frozen (query_timeout), the reports pool exhausted
            (query_wait_timeout), transactions left idle (idle_transaction_timeout), more clients
            than max_client_conn, unsupported startup parameters and garbage on the port, non-admin
            users on the admin console, broken configs at a RELOAD.
  privoxy   Privoxy 3.0.34 (--no-daemon, as user privoxy, debug 1 + 2 + 512 + 1024 + 4096 + 8192) on
            stderr: `yyyy-mm-dd hh:mm:ss.mmm thread-id Connect: ...` / `Request: ...` / `Crunch:
            Blocked: ...` / `Info: ...` / `Error: ...` lines mixed with common-log-format access
            lines (`127.0.0.1 - - [date] "GET http://... HTTP/1.1" 200 1234`).  A forward proxy for
            browsers and apps in front of three python web origins, with actions files blocking ads
            and trackers and a filter.  Normal: page visits (static files, APIs, POSTs, keep-alive),
            blocked ads / trackers, CONNECT tunnels to a TLS service, the internal CGI pages,
            actions files edited (reloaded on the next request), two clean restarts.
            Broken: an origin stopped, an origin hanging past socket-timeout, names that do not
            resolve, malformed requests and garbage, CONNECT to forbidden ports, clients outside
            permit-access, more connections than max-client-connections, broken actions files
            (privoxy exits when it reloads them), broken configs at a restart.
  proftpd   ProFTPD 1.3.8 (standalone, -n, its SystemLog): `yyyy-mm-dd hh:mm:ss,mmm host
            proftpd[pid] 127.0.0.1 (127.0.0.1[127.0.0.1]): USER alice: Login successful.`, session
            opened / closed, anonymous logins, start-up and shutdown lines.  Eight virtual users
            (AuthUserFile, chrooted to their homes) and an anonymous area.  Normal: users uploading,
            downloading, listing, renaming and deleting files (python ftplib, passive mode),
            anonymous downloads, SIGHUP rehashes, two clean restarts.
            Broken: wrong passwords, unknown users, root logins, too many failed logins on one
            connection (MaxLoginAttempts), users denied by <Limit LOGIN>, a user whose home
            directory is gone, sessions idle past TimeoutIdle, connections silent past
            TimeoutLogin, too many connections from one host (MaxClientsPerHost), broken configs at
            a restart.
  knot      Knot DNS 3.2 (knotd, as user knot, log target stderr, any: debug): `yyyy-mm-ddThh:mm:ss+0000
            info: [example.test.] DDNS, processing 1 updates`, `debug: [zone] ACL, allowed, action
            transfer, remote 127.0.0.1@port, key 'xfr-key.'`, `... AXFR, outgoing, remote ...,
            started, serial N`, DNSSEC signing, NOTIFY and control lines.  Three primary zones: one
            taking dynamic updates signed with a TSIG key and sending NOTIFYs to a secondary (a
            python UDP responder), one signed automatically with DNSSEC, one edited by hand and
            reloaded.  Normal: DHCP-style dynamic updates (knsupdate), zone transfers (AXFR / IXFR
            with a TSIG key, kdig), zone reloads and flushes, status and notify commands (knotc),
            configuration reloads, two clean restarts.
            Broken: updates signed with a wrong secret / an unknown key, updates and transfers from
            addresses or without keys the ACLs refuse, updates out of the zone, broken zone files
            reloaded, the secondary down (NOTIFY timeouts), broken configs at a reload and at a
            restart.
  icecast2  Icecast 2.4.4 (as user icecast2, error log and access log both on stdout, loglevel 3):
            `[yyyy-mm-dd  hh:mm:ss] INFO source/source_main listener count on /live.mp3 now 3` mixed
            with combined-format access lines (`127.0.0.1 - - [date] "GET /live.mp3 HTTP/1.1" 200
            bytes "-" "user-agent" seconds`).  Three mounts (one with its own source password and 3
            listener slots).  Normal: two studio sources streaming (reconnecting between shows),
            listeners tuning in and out, song titles pushed through /admin/metadata, status pages
            and admin listings polled, SIGHUP config reloads, two clean restarts.
            Broken: sources with wrong passwords, a second source on a busy mount, more sources
            than the limit, a mount full of listeners, a source that stops sending (source-timeout),
            listeners on mounts that do not exist, admin requests with bad credentials, clients
            sending garbage or nothing (header-timeout), broken configs at a restart.

Layout written under --out (default benchmarks/data/onboarding_seventh):

    manifest.json            one entry per source + generation date + command
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

  * its level marks it as a problem (pgbouncer WARNING / ERROR / FATAL lines and
    closing reasons other than a client close request, an unexpected client EOF
    or a server idle timeout / lifetime; privoxy Error / Fatal error / Warning
    lines, crunches other than blocks, redirects and CGI calls, failed
    connections, timeouts, DNS failures, ACL drops and rejected connections,
    access lines with status 400 or >= 500; proftpd lines reporting failed,
    refused, denied or timed-out logins and sessions and fatal / error start-up
    lines; knot warning / error / critical lines, ACL denials, TSIG and other
    failures; icecast EROR / WARN lines other than the legacy-stream-type notice
    and access lines with status >= 400), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; domain names, zone names, mount points, URLs,
    paths and user names masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (pgbouncer login attempts,
client close requests, new server connections and server idle / lifetime
closes; privoxy request lines, connection set-up / closing / waiting lines, CLF
lines with status < 400, block crunches; proftpd session opened / closed lines,
chroot notices and successful logins;
knot ACL allowed lines, DDNS processing lines and transfers started / finished;
icecast source login / end-of-stream / listener-count lines and access lines with
status < 400).  An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_seventh_data.py --out benchmarks/data/onboarding_seventh \\
        [--sources pgbouncer,privoxy,proftpd,knot,icecast2] [--lines 6000] [--seed 7777] \\
        [--min-normal-seconds 60]

Needs root (programs dropping to their own users).  Programs run on free 127.0.0.1 ports from temp
dirs and are always stopped (process groups killed), also on failure; nothing under /etc or any
system service is touched.
"""
from __future__ import annotations

import base64
import contextlib
import ftplib
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import (PG_SETUP_APP, PG_SETUP_SU, FileLog, Pg, PgWorkload,  # noqa: E402
                             free_port, need, say, version_of, wait_port, write_atomic)
from onboarding_blind_data import ModeServer  # noqa: E402
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Source,  # noqa: E402
                                     as_user, entry_selector, raw_send)
from onboarding_fourth_data import UAS, Origin, http_via, mask_names, random_path  # noqa: E402
from onboarding_fifth_data import TlsEcho, normal_loop, run  # noqa: E402
from onboarding_sixth_data import TLS_HELLO, chown_tree, run_quiet  # noqa: E402

SOURCES = ["pgbouncer", "privoxy", "proftpd", "knot", "icecast2"]


def cmdline(proc: subprocess.Popen) -> list[str]:
    """The argv of a running child (to start it again the same way)."""
    with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
        return [x.decode() for x in f.read().split(b"\0") if x]


# --------------------------------------------------------------------------
# pgbouncer
# --------------------------------------------------------------------------

PGB_INI = """\
[databases]
shop = host=127.0.0.1 port={pg} dbname=shop
reports = host=127.0.0.1 port={pg} dbname=shop pool_size=2 pool_mode=session
bench = host=127.0.0.1 port={pg} dbname=shopbench pool_size=3
etl = host=127.0.0.1 port={pg} dbname=shop

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = {work}/userlist.txt
logfile = {work}/pgbouncer.log
pidfile = {work}/pgbouncer.pid
admin_users = pgbadmin
stats_users = monitor
pool_mode = transaction
default_pool_size = 4
max_client_conn = 40
stats_period = 10
server_idle_timeout = 15
server_lifetime = 45
server_login_retry = 2
query_timeout = 5
query_wait_timeout = 3
idle_transaction_timeout = 4
application_name_add_host = 1
{extra}
"""
PGB_USERS = {"app_rw": "app-secret-4Tz", "reporting": "report-secret-9Kd", "pgbadmin": "Pgb-admin-5Wn",
             "monitor": "Mon-itor-3Xs", "etl_loader": "Etl-load-8Qp"}
PGB_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \w+ \[\d+\] (\w+) ")


def pgbouncer_template(line: str) -> str:
    m = PGB_HEAD.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r"\b[CS]-0x[0-9a-f]+: \S+/\S+@", "CONN: DB/USER@", body)
    body = re.sub(r"\b(db|user)=\S+", r"\1=NAME", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def pgbouncer_problem(line: str) -> bool:
    m = PGB_HEAD.match(line)
    if m and m.group(1) in ("WARNING", "ERROR", "FATAL"):
        return True
    c = re.search(r"closing because: (.*?) \(age=", line)
    return bool(c and not re.match(r"(client close request|server idle timeout|server lifetime over|"
                                     r"unclean server|client unexpected eof)", c.group(1)))


def pgbouncer_echo(line: str) -> bool:
    return bool(re.search(r"(login attempt: db=|closing because: client close request|new connection to server \(from |"
                          r"closing because: (server idle timeout|server lifetime over))", line))


class PgbClients:
    """The apps behind pgbouncer: psql sessions, pgbench, monitoring."""

    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng, self.wl = port, rng, PgWorkload(rng)

    def psql(self, sql: str, user: str = "app_rw", db: str = "shop", pw: str | None = None, app: str = "shop-web",
             wait: bool = True, opts: str | None = None) -> subprocess.Popen:
        env = dict(os.environ, PGPASSWORD=pw if pw is not None else PGB_USERS.get(user, "x"), PGAPPNAME=app,
                   PGCONNECT_TIMEOUT="8")
        if opts:
            env["PGOPTIONS"] = opts
        proc = subprocess.Popen(["psql", "-X", "-q", "-w", "-v", "ON_ERROR_STOP=0", "-h", "127.0.0.1", "-p", str(self.port),
                                 "-U", user, "-d", db, "-f", "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env, text=True)
        with contextlib.suppress(OSError):
            proc.stdin.write(sql)
            proc.stdin.close()
        if wait:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(30)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return proc

    def normal(self, r: random.Random) -> None:
        x = r.random()
        if x < 0.55:  # web requests, a few at once
            procs = [self.psql(self.wl.web() if r.random() < 0.8 else self.wl.checkout(), app=r.choice(["shop-web", "shop-api"]),
                               wait=False) for _ in range(r.randint(1, 3))]
            for p in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(30)
        elif x < 0.68:
            self.psql(self.wl.report(), user="reporting", db="reports", app="metabase")
        elif x < 0.78:
            env = dict(os.environ, PGPASSWORD=PGB_USERS["app_rw"], PGAPPNAME="legacy-php")
            subprocess.run(["pgbench", "-h", "127.0.0.1", "-p", str(self.port), "-U", "app_rw", "-C", "-S", "-n", "-c",
                            str(r.randint(1, 2)), "-t", str(r.randint(3, 8)), "bench"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60, check=False)
        elif x < 0.88:
            self.psql(self.wl.signup(), app="shop-signup")
        elif x < 0.97:
            self.psql(r.choice(["SHOW POOLS;", "SHOW STATS;", "SHOW CLIENTS;", "SHOW SERVERS;", "SHOW DATABASES;",
                                "SHOW LISTS;"]) + "\n", user="monitor", db="pgbouncer", app="pgbouncer-exporter")
        else:
            self.psql("RELOAD;\n", user="pgbadmin", db="pgbouncer", app="ops-console")


def source_pgbouncer(args) -> Source:
    pgbouncer = need("/usr/sbin/pgbouncer", "pgbouncer")
    need("psql", "postgresql-client")
    need("pgbench", "postgresql-client")
    bindirs = sorted(d for d in os.listdir("/usr/lib/postgresql") if os.path.exists(f"/usr/lib/postgresql/{d}/bin/initdb")) \
        if os.path.isdir("/usr/lib/postgresql") else []
    if not bindirs:
        need("/usr/lib/postgresql/15/bin/initdb", "postgresql")
    bindir = f"/usr/lib/postgresql/{bindirs[-1]}/bin"
    rng = random.Random(f"{args.seed}-pgbouncer")
    with tempfile.TemporaryDirectory(prefix="onb7-pgbouncer-") as work, Group() as sv:
        os.chmod(work, 0o755)
        pgwork = os.path.join(work, "pg")
        os.makedirs(pgwork)
        pg = Pg(pgwork, bindir, shutil.which("psql"), shutil.which("pgbench"))
        pg.start(sv)
        pg.su(PG_SETUP_SU.format(**Pg.PASSWORDS), db="postgres")
        pg.session(PG_SETUP_APP)
        pg.bench(["-i", "-s", "1", "-q"])
        pg_argv = cmdline(pg.proc)
        port = free_port()
        ini, logp = os.path.join(work, "pgbouncer.ini"), os.path.join(work, "pgbouncer.log")

        def write_ini(extra: str = "") -> None:
            write_atomic(ini, PGB_INI.format(pg=pg.port, port=port, work=work, extra=extra))
            os.chmod(ini, 0o644)

        write_ini()
        write_atomic(os.path.join(work, "userlist.txt"), "".join(f'"{u}" "{p}"\n' for u, p in PGB_USERS.items()))
        chown_tree(work, "postgres")
        os.chmod(os.path.join(work, "userlist.txt"), 0o600)

        def start(wait: bool = True) -> None:
            sv.start("pgbouncer", as_user("postgres", [pgbouncer, ini]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("pgbouncer", signal.SIGTERM)

        def pg_stop(sig: int = signal.SIGINT) -> None:
            sv.stop("postgres", sig, 30)

        def pg_start() -> None:
            with open(pg.log, "ab") as logf:
                pg.proc = sv.start("postgres", pg_argv, stdout=logf, stderr=logf, user="postgres", group="postgres",
                                   extra_groups=[], cwd=pgwork)
            wait_port(pg.port)
            time.sleep(0.5)

        def admin(cmd: str) -> None:
            clients.psql(cmd + "\n", user="pgbadmin", db="pgbouncer", app="ops-console")

        start()
        clients = PgbClients(port, rng)
        log = FileLog(logp)
        say(f"pgbouncer on 127.0.0.1:{port} (postgres on {pg.port}); normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(1, 4)):
                clients.normal(rng)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "pgbouncer", round_fn)
            templates = {pgbouncer_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, pgbouncer_template, pgbouncer_problem, pgbouncer_echo))
            bg_clients = PgbClients(port, random.Random(rng.random()))

            def bg(r: random.Random) -> None:
                if r.random() < 0.7:
                    bg_clients.psql(bg_clients.wl.web(r.randint(1, 4)), app="shop-web")

            with Background(bg, random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("wrong_password"):  # stale secrets after a rotation, typos
                    for user, db, pw in [("app_rw", "shop", "app-secret-3Tz"), ("reporting", "reports", "report-secret"),
                                         ("app_rw", "bench", "App-secret-4Tz"), ("monitor", "pgbouncer", "Monitor-3Xs"),
                                         ("pgbadmin", "pgbouncer", "admin")]:
                        with br.occurrence(1.0):
                            clients.psql("SELECT 1;\n", user=user, db=db, pw=pw, app="shop-web")
                with br.phase("unknown_database"):  # apps configured with a database pgbouncer does not know
                    for db in ["shop_staging", "shpo", "analytics", "postgres"]:
                        with br.occurrence(1.0):
                            clients.psql("SELECT 1;\n", db=db, app="shop-web")
                with br.phase("unknown_user"):  # users missing from the auth_file
                    for user in ["app_ro", "postgres", "deploy"]:
                        with br.occurrence(1.0):
                            clients.psql("SELECT 1;\n", user=user, pw="whatever-1", app="shop-web")
                with br.phase("server_login_failed"):  # a user pgbouncer knows but PostgreSQL does not
                    for i in range(3):
                        with br.occurrence(3.0):
                            clients.psql("SELECT count(*) FROM orders;\n", user="etl_loader", db="etl", app="nightly-etl")
                        time.sleep(2.5)
                        br.between()
                with br.phase("database_down"):  # PostgreSQL stopped (maintenance, crash)
                    for sig in [signal.SIGINT, signal.SIGKILL, signal.SIGINT]:
                        with br.occurrence(3.0):
                            busy = clients.psql("SELECT pg_sleep(3);\n", user="reporting", db="reports", app="metabase", wait=False)
                            time.sleep(0.8)
                            pg_stop(sig)
                            for _ in range(2):
                                clients.psql(clients.wl.web(2), app="shop-web")
                            busy.wait(30)
                        pg_start()
                        time.sleep(2.5)
                        for _ in range(3):  # the pools log in again before the next occurrence
                            clients.psql("SELECT 1;\n", app="healthcheck")
                            clients.psql("SELECT 1;\n", user="reporting", db="reports", app="healthcheck")
                            time.sleep(1)
                        br.between()
                with br.phase("database_frozen"):  # PostgreSQL stopped answering (SIGSTOP): query_timeout
                    for i in range(3):
                        with br.occurrence(2.0):
                            pg.proc.send_signal(signal.SIGSTOP)
                            for pid in _pg_children(pg.proc.pid):
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGSTOP)
                            procs = [clients.psql(clients.wl.web(2), app="shop-api", wait=False) for _ in range(2)]
                            time.sleep(6.5)
                            for pid in [pg.proc.pid] + _pg_children(pg.proc.pid):
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGCONT)
                            for p in procs:
                                with contextlib.suppress(subprocess.TimeoutExpired):
                                    p.wait(20)
                        time.sleep(1)
                        br.between()
                with br.phase("pool_exhausted"):  # long reports hold the 2 server connections: query_wait_timeout
                    for i in range(3):
                        with br.occurrence(1.5):
                            hogs = [clients.psql("SELECT pg_sleep(4.5);\n", user="reporting", db="reports", app="adhoc-report",
                                                 wait=False) for _ in range(2)]
                            time.sleep(0.7)
                            waiting = [clients.psql(clients.wl.report(), user="reporting", db="reports", app="metabase",
                                                    wait=False) for _ in range(rng.randint(1, 2))]
                            for p in hogs + waiting:
                                with contextlib.suppress(subprocess.TimeoutExpired):
                                    p.wait(30)
                with br.phase("idle_in_transaction"):  # a client opens a transaction and goes away to do something else
                    for i in range(3):
                        with br.occurrence(1.5):
                            clients.psql("BEGIN;\nUPDATE customers SET last_login = now() WHERE id = "
                                         f"{rng.randint(1, 500)};\nSELECT pg_sleep(0);\n\\! sleep 6\nCOMMIT;\n", app="shop-cart")
                with br.phase("too_many_clients"):  # a connection leak: more clients than max_client_conn
                    for i in range(3):
                        with br.occurrence(1.5):
                            procs = [clients.psql("SELECT pg_sleep(2.5);\n", app="leaky-worker", wait=False)
                                     for _ in range(43)]
                            for p in procs:
                                with contextlib.suppress(subprocess.TimeoutExpired):
                                    p.wait(40)
                        time.sleep(2)
                        br.between()
                with br.phase("bad_startup"):  # clients sending what pgbouncer does not accept
                    with br.occurrence(1.0):  # an ORM setting a startup option
                        clients.psql("SELECT 1;\n", app="django", opts="-c statement_timeout=5000")
                    with br.occurrence(1.0):
                        clients.psql("SELECT 1;\n", app="django", opts="-c search_path=shop,public")
                    for p in [b"GET / HTTP/1.1\r\nHost: db.example.test\r\n\r\n", b"\x00\x00\x00\x08\x00\x05\x00\x00",
                              TLS_HELLO, b"\x00\x00\x00\x10\x00\x03\x00\x00user\x00"]:
                        with br.occurrence(1.0):
                            raw_send(port, p, 0.5)
                with br.phase("admin_denied"):  # admin commands from users that are not admins
                    for user, cmd in [("app_rw", "SHOW POOLS;"), ("monitor", "PAUSE shop;"), ("reporting", "RELOAD;"),
                                      ("monitor", "SHUTDOWN;")]:
                        with br.occurrence(1.0):
                            clients.psql(cmd + "\n", user=user, db="pgbouncer", app="psql")
                with br.phase("bad_config_reload"):  # pgbouncer.ini edited with mistakes, then RELOAD
                    for extra in ["pool_mode = transactional", "max_client_conn = lots", "auth_type = kerberos",
                                  f"auth_file = {work}/userlist.txt.new", "server_tls_sslmode = verify-full\nserver_tls_ca_file = /nonexistent/ca.pem"]:
                        write_ini(extra)
                        with br.occurrence(1.5):
                            admin("RELOAD;")
                        write_ini()
                        admin("RELOAD;")
                        time.sleep(0.5)
                        br.between()
        finally:
            stop()
            with contextlib.suppress(Exception):
                for pid in [pg.proc.pid] + _pg_children(pg.proc.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
            sv.stop("postgres", signal.SIGINT, 30)
    return Source("pgbouncer", "PgBouncer", version_of([pgbouncer, "-V"]),
                  "pgbouncer logfile (`yyyy-mm-dd hh:mm:ss.mmm UTC [pid] LOG C-0x...: db/user@127.0.0.1:port login attempt: "
                  "db=shop user=app_rw tls=no`, `... closing because: client close request (age=0s)`, `S-0x...: ... new "
                  "connection to server (from ...)`, `LOG stats: N xacts/s, N queries/s, ...`, WARNING / ERROR lines)",
                  "pgbouncer 1.18 (as postgres; transaction pooling for shop, session pooling with pool_size 2 for reports, "
                  "bench; scram-sha-256 auth_file) in front of a private PostgreSQL 15 cluster; web requests (psql sessions "
                  "of shop queries and checkouts, 1-3 at once), reporting sessions, a PHP-style app connecting per "
                  "transaction (pgbench -C -S), sign-ups, monitoring (SHOW POOLS / STATS / CLIENTS / SERVERS as a stats "
                  "user), admin RELOADs; 2 clean restarts",
                  "wrong_password (5), unknown_database (4), unknown_user (3 users missing from the auth_file), "
                  "server_login_failed (3x a user PostgreSQL does not know), database_down (3x PostgreSQL stopped / "
                  "killed during traffic), database_frozen (3x PostgreSQL SIGSTOPped 6.5s > query_timeout 5), "
                  "pool_exhausted (3x reports pool held by long queries > query_wait_timeout 3), idle_in_transaction (3x "
                  "a transaction idle 6s > idle_transaction_timeout 4), too_many_clients (3x 43 clients > max_client_conn "
                  "40), bad_startup (6: 2 unsupported startup options, HTTP, a bad packet, TLS, a truncated startup "
                  "packet), admin_denied (4 admin commands from non-admin users), bad_config_reload (5 broken "
                  "pgbouncer.ini + RELOAD)", normal, br.errors)


def _pg_children(pid: int) -> list[int]:
    out = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    return out


# --------------------------------------------------------------------------
# privoxy
# --------------------------------------------------------------------------

PRIVOXY_CONF = """\
confdir {work}
templdir {work}/templates
logdir {work}
actionsfile match-all.action
actionsfile default.action
actionsfile user.action
filterfile default.filter
listen-address 127.0.0.1:{port}
permit-access 127.0.0.0/28
toggle 1
enable-remote-toggle 0
enable-remote-http-toggle 0
enable-edit-actions 0
enforce-blocks 0
buffer-limit 4096
forwarded-connect-retries 0
accept-intercepted-requests 0
keep-alive-timeout 5
socket-timeout 4
max-client-connections 24
debug 1
debug 2
debug 512
debug 1024
debug 4096
debug 8192
{extra}
"""

PRIVOXY_USER_ACTION = """\
{{+limit-connect{{443}}}}
/
{{+block{{Advertisement banner.}} +handle-as-image}}
/ads/
/banner/
/.*/adframe
{{+block{{Tracking pixel.}}}}
/track/
/pixel.gif
/collect\\?
{{+limit-connect{{{tls}}}}}
127.0.0.1:{tls}
{{+redirect{{http://127.0.0.1:{www}/products/}}}}
127.0.0.1:{www}/old-shop/
{{+hide-user-agent{{Mozilla/5.0 (privacy)}} +hide-referrer{{conditional-block}}}}
127.0.0.1:{api}/
{extra}
"""

PV_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [0-9a-f]+ ")
PV_CLF = re.compile(r'^\S+ - - \[[^\]]+\] "(?:[^"\\]|\\.)*" (\d{3}) ')


def privoxy_status(line: str) -> int | None:
    m = PV_CLF.match(line)
    return int(m.group(1)) if m else None


def privoxy_template(line: str) -> str:
    m = PV_CLF.match(line)
    if m:
        req = re.search(r'"(\S+)', line)
        return f"CLF {req.group(1) if req else '-'} {m.group(1)}"
    m = PV_HEAD.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"https?://\S+", "URL", body)
    body = re.sub(r"\b[\w.-]+:\d+/\S*", "URL", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def privoxy_problem(line: str) -> bool:
    s = privoxy_status(line)
    if s is not None:
        return s == 400 or s >= 500
    m = PV_HEAD.match(line)
    body = line[m.end():] if m else line
    if re.match(r"(Error|Fatal error|Warning): ", body):
        return True
    if body.startswith("Crunch: "):
        return not re.match(r"Crunch: (Blocked|CGI Call|Redirected): ", body)
    return bool(re.search(r"(Could not connect|Socket timeout|Rejecting connection|dropped due to ACL|Can not resolve|"
                          r"Connection refused|timed out)", body))


def privoxy_echo(line: str) -> bool:
    s = privoxy_status(line)
    if s is not None:
        return s < 400
    m = PV_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.match(r"(Connect: (Accepted connection from|Closing (client|server) socket|Waiting for the next client|"
                         r"to \S+( successful)?$|Connected to |Created new connection to |Complete client request received|"
                         r"Done reading from server|Reusing server socket|No server socket to keep open|"
                         r"Waiting for the next client request)|Request: |Crunch: Blocked: )", body))


class ProxyClients:
    """Browsers and apps using the proxy."""

    def __init__(self, port: int, origins: dict, tls_port: int, rng: random.Random):
        self.port, self.origins, self.tls_port, self.rng = port, origins, tls_port, rng

    def url(self, r: random.Random, clean: bool = False) -> tuple[str, str]:
        x = r.random()
        if clean and 0.12 <= x < 0.16:
            x = 0.5
        if x < 0.07:
            return "GET", f"http://127.0.0.1:{self.origins['cdn'].port}/{r.choice(['ads', 'banner'])}/{r.choice(WORDS)}-{r.randint(1, 9)}.gif"
        if x < 0.12:
            return "GET", r.choice([f"http://127.0.0.1:{self.origins['cdn'].port}/track/{r.choice(WORDS)}.js",
                                    f"http://127.0.0.1:{self.origins['api'].port}/collect?v=1&t=pageview&cid={r.randint(1, 10**6)}",
                                    f"http://127.0.0.1:{self.origins['cdn'].port}/pixel.gif?u={r.getrandbits(32):08x}"])
        if x < 0.14:
            return "GET", f"http://127.0.0.1:{self.origins['www'].port}/old-shop/{r.choice(WORDS)}"
        if x < 0.16:
            return "GET", r.choice(["http://p.p/", "http://config.privoxy.org/show-status", "http://p.p/show-request"])
        method, path = random_path(r, clean)
        site = "api" if "/api/" in path else ("cdn" if path.startswith("/static/") else "www")
        return method, f"http://127.0.0.1:{self.origins[site].port}{path}"

    def visit(self, r: random.Random, clean: bool = False) -> None:
        ua = r.choice(UAS)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for _ in range(r.randint(1, 5)):
                method, url = self.url(r, clean)
                headers = {"User-Agent": ua}
                if r.random() < 0.3:
                    headers["Referer"] = f"http://127.0.0.1:{self.origins['www'].port}/products/{r.choice(WORDS)}"
                body = json.dumps({"sku": r.randint(1, 999)}).encode() if method in ("POST", "PUT") else None
                conn.request(method, url, body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()

    def tunnel(self, port: int | None = None, src: str | None = None) -> None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 5,
                                                                    source_address=(src, 0) if src else None) as s:
            s.sendall(f"CONNECT 127.0.0.1:{port or self.tls_port} HTTP/1.1\r\nHost: 127.0.0.1:{port or self.tls_port}\r\n"
                      f"User-Agent: {self.rng.choice(UAS)}\r\n\r\n".encode())
            s.settimeout(5)
            if b" 200 " in s.recv(4096)[:20]:
                s.sendall(TLS_HELLO)
                s.recv(4096)

    def normal(self, r: random.Random, clean: bool = False) -> None:
        if r.random() < 0.1:
            self.tunnel()
        else:
            self.visit(r, clean)


def source_privoxy(args) -> Source:
    privoxy = need("/usr/sbin/privoxy", "privoxy")
    rng = random.Random(f"{args.seed}-privoxy")
    with tempfile.TemporaryDirectory(prefix="onb7-privoxy-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for f in ["match-all.action", "default.action", "default.filter"]:
            shutil.copy(os.path.join("/etc/privoxy", f), work)
        shutil.copytree("/etc/privoxy/templates", os.path.join(work, "templates"))
        port = free_port()
        origins = {k: ModeServer(Origin, hang=7).start() for k in ("www", "api", "cdn")}
        import socketserver
        tls = socketserver.ThreadingTCPServer(("127.0.0.1", 0), TlsEcho)
        tls.daemon_threads = True
        threading.Thread(target=tls.serve_forever, daemon=True).start()
        tls_port = tls.server_address[1]
        conf, action, logp = os.path.join(work, "config"), os.path.join(work, "user.action"), os.path.join(work, "privoxy.log")

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, PRIVOXY_CONF.format(work=work, port=port, extra=extra))
            os.chmod(conf, 0o644)

        def write_action(extra: str = "") -> None:
            write_atomic(action, PRIVOXY_USER_ACTION.format(tls=tls_port, extra=extra, **{k: o.port for k, o in origins.items()}))
            os.chmod(action, 0o644)

        write_conf()
        write_action()

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("privoxy", [privoxy, "--no-daemon", "--user", "privoxy", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("privoxy", signal.SIGTERM)

        start()
        clients = ProxyClients(port, origins, tls_port, rng)
        log = FileLog(logp)
        say(f"privoxy on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "last": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(1, 4)):
                clients.normal(rng)
            if time.time() - state["last"] > rng.uniform(15, 30):  # the admin edits the actions file
                write_action(f"{{+block{{Blocked by the admin.}}}}\n/{rng.choice(WORDS)}-promo/\n")
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.01, 0.05))

        try:
            normal = normal_loop(args, log, "privoxy", round_fn)
            templates = {privoxy_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, privoxy_template, privoxy_problem, privoxy_echo))
            bg_clients = ProxyClients(port, origins, tls_port, random.Random(rng.random()))
            with Background(lambda r: bg_clients.normal(r, True), random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("origin_down"):  # a web origin / the API crashed
                    for site in ["api", "www", "cdn", "api"]:
                        with br.occurrence(1.5):
                            origins[site].stop()
                            for _ in range(2):
                                http_via(port, "GET", f"http://127.0.0.1:{origins[site].port}/api/v1/items/{rng.randint(1, 500)}"
                                         if site == "api" else f"http://127.0.0.1:{origins[site].port}/products/{rng.choice(WORDS)}",
                                         {"User-Agent": rng.choice(UAS)})
                        origins[site].start()
                        time.sleep(0.3)
                        br.between()
                with br.phase("origin_timeout"):  # the API hanging past socket-timeout 4
                    for i in range(3):
                        with br.occurrence(1.5):
                            origins["api"].mode = "hang"
                            http_via(port, "GET", f"http://127.0.0.1:{origins['api'].port}/api/v1/prices/{rng.randint(1, 500)}",
                                     {"User-Agent": rng.choice(UAS)}, timeout=15)
                            origins["api"].mode = "ok"
                        time.sleep(3.5)
                        br.between()
                with br.phase("dns_failure"):  # names that do not resolve (typos, retired hosts)
                    for url in ["http://shop.example.invalid/", "http://cdn.exmaple.invalid/static/app.js",
                                "http://api.internal.invalid/v1/items", "http://www.retired-partner.invalid/feed.xml"]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", url, {"User-Agent": rng.choice(UAS)}, timeout=15)
                with br.phase("bad_request"):  # garbage and malformed requests on the proxy port
                    www = origins["www"].port
                    for p in [b"GARBAGE\r\n\r\n", b"GET /index.html HTTP/1.1\r\nHost: www.example.test\r\n\r\n",
                              b"GET http:///nohost HTTP/1.1\r\n\r\n", b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
                              b"GET ftp://files.example.test/pub/ HTTP/1.1\r\n\r\n",
                              b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n" % www,
                              b"POST http://127.0.0.1:%d/api/v1/orders HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n" % www]:
                        with br.occurrence(1.0):
                            raw_send(port, p, 2.5)
                with br.phase("connect_denied"):  # tunnels to ports the actions do not allow
                    for p in [25, 22, 6667, 3306]:
                        with br.occurrence(1.0):
                            clients.tunnel(p)
                with br.phase("acl_denied"):  # clients outside permit-access
                    for src in ["127.0.0.100", "127.0.0.77", "127.0.0.201"]:
                        with br.occurrence(1.0):
                            http_via(port, "GET", f"http://127.0.0.1:{origins['www'].port}/", {"User-Agent": rng.choice(UAS)}, src=src)
                with br.phase("too_many_connections"):  # a client opening connections and sending nothing
                    for i in range(3):
                        with br.occurrence(1.5):
                            socks = []
                            for _ in range(30):
                                with contextlib.suppress(OSError):
                                    socks.append(socket.create_connection(("127.0.0.1", port), 3))
                            time.sleep(1)
                            for s in socks:
                                s.close()
                        time.sleep(3)
                        br.between()
                with br.phase("bad_actions_reload"):  # user.action edited with mistakes (reloaded on the next request)
                    for extra in ["{+block{Unclosed}\n/unclosed/\n", "{+no-such-action}\n/x/\n",
                                  "{+hide-referrer{} +set-image-blocker{bogus}}\n/x/\n"]:
                        time.sleep(1.1)  # a new modification time
                        write_action(extra)
                        with br.occurrence(1.5):
                            for _ in range(2):
                                clients.visit(rng, True)
                        write_action()
                        proc = sv.procs.get("privoxy")
                        if proc is None or proc.poll() is not None:  # it exits on a broken actions file
                            sv.forget("privoxy")
                            start()
                        clients.visit(rng, True)
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_config_restart"):  # config edits with mistakes, privoxy restarted
                    for extra in [f"listen-address 127.0.0.1:{tls_port}", "actionsfile missing.action", "filterfile nosuch.filter",
                                  "max-client-connections lots", "permit-access 127.0.0.300", "forward / 127.0.0.1:badport"]:
                        stop()
                        br.between()
                        write_conf(extra)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(1.5)
                            http_via(port, "GET", f"http://127.0.0.1:{origins['www'].port}/", {"User-Agent": rng.choice(UAS)})
                        write_conf()
                        sv.stop("privoxy")
                        sv.forget("privoxy")
                        start()
                        time.sleep(0.5)
                        br.between()
        finally:
            stop()
            for o in origins.values():
                o.stop()
            tls.shutdown()
            tls.server_close()
    return Source("privoxy", "Privoxy", version_of([privoxy, "--version"]),
                  "privoxy --no-daemon on stderr, debug 1+2+512+1024+4096+8192 (`yyyy-mm-dd hh:mm:ss.mmm thread-id Connect: "
                  "Accepted connection from 127.0.0.1 on socket 4`, `... Request: host:port/path`, `... Crunch: Blocked: URL`, "
                  "`... Info: ...`, `... Error: ...`, mixed with common-log-format lines `127.0.0.1 - - [date] \"GET "
                  "http://... HTTP/1.1\" 200 1234`)",
                  "privoxy (as privoxy; the Debian match-all / default actions, a user.action blocking ads and trackers, "
                  "allowing CONNECT to one TLS port, a redirect, header rewriting; permit-access 127.0.0.0/28, "
                  "socket-timeout 4, max-client-connections 24) in front of three python origins (www, api, cdn) and a TLS "
                  "service; browsers and apps with keep-alive (pages, static files, APIs, POSTs, some 404s, blocked ads and "
                  "trackers, redirects, the internal CGI pages), CONNECT tunnels; user.action edited every 15-30s, 2 "
                  "clean restarts",
                  "origin_down (4x an origin stopped), origin_timeout (3x the API hanging 7s > socket-timeout 4), "
                  "dns_failure (4 names that do not resolve), bad_request (7: garbage, an intercepted request, an URL without "
                  "host, CONNECT without port, an ftp:// URL, a bad Content-Length, a broken chunked body), "
                  "connect_denied (4 CONNECTs to ports 25 / 22 / 6667 / 3306), acl_denied (3 clients outside "
                  "permit-access), too_many_connections (3x 30 idle connections > max-client-connections 24), "
                  "bad_actions_reload (3 broken user.action: privoxy exits), bad_config_restart (6: the port in use, a missing "
                  "actions / filter file, a non-numeric max-client-connections, a bad permit-access address, forwarding to "
                  "port 0)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# proftpd
# --------------------------------------------------------------------------

PROFTPD_CONF = """\
ServerName "files.example.test"
ServerType standalone
DefaultServer on
Port {port}
DefaultAddress 127.0.0.1
SocketBindTight on
UseIPv6 off
User proftpd
Group nogroup
Umask 022
PidFile {work}/proftpd.pid
ScoreboardFile {work}/proftpd.scoreboard
DelayTable {work}/proftpd.delay
WtmpLog off
UseReverseDNS off
AuthOrder mod_auth_file.c mod_auth_unix.c
AuthUserFile {work}/ftpd.passwd
AuthGroupFile {work}/ftpd.group
RequireValidShell off
RootLogin off
DefaultRoot ~
SystemLog {work}/proftpd.log
TransferLog none
MaxInstances 40
MaxClientsPerHost 12 "Too many connections from your address"
MaxLoginAttempts 3
TimeoutLogin 5
TimeoutIdle 6
TimeoutNoTransfer 30
PassivePorts {pasv} {pasv_hi}
<Limit LOGIN>
  DenyUser intern
</Limit>
<Directory />
  AllowOverwrite on
</Directory>
<Anonymous {work}/anon>
  User ftp
  Group nogroup
  UserAlias anonymous ftp
  RequireValidShell off
  MaxClients 6
  <Limit WRITE>
    DenyAll
  </Limit>
</Anonymous>
{extra}
"""

FTP_USERS = USERS[:8]
FTP_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \S+ proftpd\[\d+\] \S+( \([^)]*\))?: ")


def ftp_pw(user: str) -> str:
    return f"{user.capitalize()}-ftp-{sum(map(ord, user)) % 89:02d}"


def proftpd_template(line: str) -> str:
    m = FTP_HEAD.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"\b(USER|ANON) \S+", r"\1 NAME", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def proftpd_problem(line: str) -> bool:
    m = FTP_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.search(r"(?i)(fail|refused|denied|violation|timeout|exceeded|unable|error|fatal|incorrect|no such user|"
                          r"not allowed|warning|unknown|too many|cannot|can't)", body))


def proftpd_echo(line: str) -> bool:
    m = FTP_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.match(r"(FTP session (opened|closed)\.|(USER|ANON) \S+: Login successful\.|Preparing to chroot to directory)",
                         body))


class FtpClients:
    """Staff exchanging files, partners fetching reports, anonymous downloads."""

    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng = port, rng

    def connect(self, timeout: float = 10) -> ftplib.FTP:
        f = ftplib.FTP(timeout=timeout)
        f.connect("127.0.0.1", self.port)
        return f

    def session(self, r: random.Random) -> None:
        try:
            self._session(r)
        except (OSError, EOFError, ftplib.Error):
            pass

    def _session(self, r: random.Random) -> None:
        f = self.connect()
        if r.random() < 0.12:  # anonymous downloads
            f.login("anonymous", f"{r.choice(USERS)}@partner.test")
            f.cwd("pub")
            names = f.nlst()
            if names:
                f.retrbinary(f"RETR {r.choice(names)}", lambda b: None)
            f.quit()
            return
        u = r.choice(FTP_USERS)
        f.login(u, ftp_pw(u))
        for _ in range(r.randint(1, 5)):
            x = r.random()
            if x < 0.25:
                f.retrlines(r.choice(["LIST", "LIST reports", "NLST uploads"]), lambda line: None)
            elif x < 0.45:
                names = [n for n in f.nlst("reports") if n.endswith(".csv")]
                if names:
                    f.retrbinary(f"RETR {r.choice(names)}", lambda b: None)
            elif x < 0.65:
                name = f"uploads/{r.choice(WORDS)}-{r.randint(1, 40)}.{r.choice(['csv', 'pdf', 'txt'])}"
                f.storbinary(f"STOR {name}", io.BytesIO(r.randbytes(r.randint(200, 20000))))
            elif x < 0.72:
                names = f.nlst("uploads")
                if len(names) > 5:
                    victim = r.choice(names)
                    if r.random() < 0.5:
                        f.delete(victim)
                    else:
                        f.rename(victim, f"archive/{os.path.basename(victim)}")
            elif x < 0.8:
                f.cwd("reports")
                f.pwd()
                f.cwd("/")
            elif x < 0.87:
                f.voidcmd(r.choice(["NOOP", "SYST", "FEAT", "STAT"]))
            elif x < 0.93:
                d = f"archive/{r.randint(2020, 2024)}-{r.randint(1, 12):02d}"
                with contextlib.suppress(ftplib.error_perm):
                    f.mkd(d)
            else:
                names = [n for n in f.nlst("reports") if n.endswith(".csv")]
                if names:
                    f.voidcmd(f"MDTM {r.choice(names)}")
                    f.voidcmd("TYPE I")
                    f.size(r.choice(names))
        f.quit()

    def login(self, user: str, pw: str, attempts: int = 1, timeout: float = 10) -> None:
        with contextlib.suppress(OSError, EOFError, ftplib.Error):
            f = self.connect(timeout)
            for _ in range(attempts):
                with contextlib.suppress(ftplib.error_perm):
                    f.login(user, pw)
                    f.quit()
                    return
            with contextlib.suppress(OSError, EOFError, ftplib.Error):
                f.quit()
            f.close()


def source_proftpd(args) -> Source:
    proftpd = need("/usr/sbin/proftpd", "proftpd-basic")
    need("openssl", "openssl")
    rng = random.Random(f"{args.seed}-proftpd")
    with tempfile.TemporaryDirectory(prefix="onb7-proftpd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        pasv = rng.randint(42000, 60000)
        conf, logp = os.path.join(work, "proftpd.conf"), os.path.join(work, "proftpd.log")
        passwd, group = [], []
        for i, u in enumerate(FTP_USERS + ["intern", "olduser"]):
            uid = 3001 + i
            home = os.path.join(work, "home", u)
            if u != "olduser":  # the account of someone who left: its home directory is gone
                for d in ("reports", "uploads", "archive"):
                    os.makedirs(os.path.join(home, d))
                for j in range(rng.randint(3, 8)):
                    with open(os.path.join(home, "reports", f"{rng.choice(WORDS)}-{j}.csv"), "wb") as f:
                        f.write(rng.randbytes(rng.randint(500, 50000)))
                subprocess.run(["chown", "-R", f"{uid}:{uid}", home], check=True)
            pw = ftp_pw(u)
            h = subprocess.run(["openssl", "passwd", "-6", "-salt", f"{rng.getrandbits(48):012x}", pw],
                               capture_output=True, text=True, check=True).stdout.strip()
            passwd.append(f"{u}:{h}:{uid}:{uid}::{home}:/bin/false\n")
            group.append(f"{u}:x:{uid}:\n")
        write_atomic(os.path.join(work, "ftpd.passwd"), "".join(passwd))
        write_atomic(os.path.join(work, "ftpd.group"), "".join(group))
        os.chmod(os.path.join(work, "ftpd.passwd"), 0o600)
        os.chmod(os.path.join(work, "ftpd.group"), 0o644)
        os.makedirs(os.path.join(work, "anon", "pub"))
        for name in ["catalog-2024.pdf", "price-list.csv", "README.txt", "drivers.zip"]:
            with open(os.path.join(work, "anon", "pub", name), "wb") as f:
                f.write(rng.randbytes(rng.randint(2000, 60000)))
        os.chmod(os.path.join(work, "anon"), 0o755)

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, PROFTPD_CONF.format(work=work, port=port, pasv=pasv, pasv_hi=pasv + 400, extra=extra))
            os.chmod(conf, 0o644)

        write_conf()

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # -n: the messages go to stderr or to the SystemLog, the same file
                sv.start("proftpd", [proftpd, "-n", "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("proftpd", signal.SIGTERM)

        start()
        clients = FtpClients(port, rng)
        log = FileLog(logp)
        say(f"proftpd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "last": time.time()}
        pool_rngs = [random.Random(rng.random()) for _ in range(3)]

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda r=r: [clients.session(r) for _ in range(r.randint(1, 3))])
                       for r in pool_rngs[:rng.randint(1, 3)]]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["last"] > rng.uniform(20, 40):  # the admin rehashes after an edit
                sv.procs["proftpd"].send_signal(signal.SIGHUP)
                time.sleep(0.5)
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "proftpd", round_fn)
            templates = {proftpd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, proftpd_template, proftpd_problem, proftpd_echo))
            bg_clients = FtpClients(port, rng)
            with Background(bg_clients.session, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("wrong_password"):  # typos, old passwords
                    for u, pw in [(FTP_USERS[0], "password"), (FTP_USERS[3], ftp_pw(FTP_USERS[3])[:-1]),
                                  (FTP_USERS[5], "Summer2024!"), (FTP_USERS[1], ftp_pw(FTP_USERS[2]))]:
                        with br.occurrence(1.5):
                            clients.login(u, pw)
                with br.phase("unknown_user"):  # accounts that do not exist
                    for u in ["admin", "alcie", "backup", "www-data2"]:
                        with br.occurrence(1.5):
                            clients.login(u, "secret123")
                with br.phase("root_login"):  # someone trying root (RootLogin off)
                    for pw in ["toor", "root", "changeme"]:
                        with br.occurrence(1.5):
                            clients.login("root", pw)
                with br.phase("max_login_attempts"):  # a script guessing passwords on one connection
                    for u in [FTP_USERS[2], "test", FTP_USERS[6]]:
                        with br.occurrence(2.0):
                            clients.login(u, "guess-" + str(rng.randint(1, 999)), attempts=4)
                with br.phase("login_denied"):  # a user in <Limit LOGIN> DenyUser
                    for i in range(3):
                        with br.occurrence(1.5):
                            clients.login("intern", ftp_pw("intern"))
                with br.phase("missing_home"):  # the home directory of an account was removed
                    for i in range(3):
                        with br.occurrence(1.5):
                            clients.login("olduser", ftp_pw("olduser"))
                with br.phase("idle_timeout"):  # a client logged in and went idle (TimeoutIdle 6)
                    for i in range(3):
                        with br.occurrence(1.5), contextlib.suppress(OSError, EOFError, ftplib.Error):
                            u = rng.choice(FTP_USERS)
                            f = clients.connect(15)
                            f.login(u, ftp_pw(u))
                            time.sleep(7.5)
                            with contextlib.suppress(OSError, EOFError, ftplib.Error):
                                f.voidcmd("NOOP")
                            f.close()
                with br.phase("login_timeout"):  # connections that never log in (TimeoutLogin 5)
                    for i in range(3):
                        with br.occurrence(1.5), contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
                            s.settimeout(8)
                            with contextlib.suppress(OSError):
                                s.recv(1000)
                                time.sleep(6.5)
                                s.recv(1000)
                with br.phase("too_many_clients"):  # a mirroring tool opening too many connections (MaxClientsPerHost 12)
                    for i in range(3):
                        with br.occurrence(2.0):
                            conns = []
                            for _ in range(15):
                                with contextlib.suppress(OSError, EOFError, ftplib.Error):
                                    f = clients.connect(5)
                                    u = rng.choice(FTP_USERS)
                                    f.login(u, ftp_pw(u))
                                    conns.append(f)
                            for f in conns:
                                with contextlib.suppress(OSError, EOFError, ftplib.Error):
                                    f.quit()
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # proftpd.conf edits with mistakes, proftpd restarted
                    for extra in ["MaxClientsPerHost many", "<Directory /srv/ftp>\n  AllowOverwrite on\n", "LoadModule mod_nosuch.c",
                                  "PassivePorts 50000 40000", f"Port {port}\n<VirtualHost 127.0.0.1>\nPort {port}\n</VirtualHost>"]:
                        stop()
                        br.between()
                        write_conf(extra)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(1.5)
                        write_conf()
                        sv.stop("proftpd")
                        sv.forget("proftpd")
                        start()
                        time.sleep(0.5)
                        br.between()
        finally:
            stop()
    return Source("proftpd", "ProFTPD", version_of([proftpd, "-v"]),
                  "proftpd SystemLog (`yyyy-mm-dd hh:mm:ss,mmm host proftpd[pid] 127.0.0.1 (127.0.0.1[127.0.0.1]): USER alice: "
                  "Login successful.`, `... FTP session opened.` / `closed.`, `ANON anonymous: Login successful.`, start-up, "
                  "rehash and shutdown lines of the master `proftpd[pid] 127.0.0.1: ...`)",
                  "proftpd -n (standalone, 8 virtual users in an AuthUserFile chrooted to their homes, an anonymous "
                  "read-only area; MaxClientsPerHost 12, MaxLoginAttempts 3, TimeoutLogin 5, TimeoutIdle 6); 1-3 "
                  "concurrent python ftplib clients: users listing, downloading reports, uploading, renaming / deleting "
                  "uploads, making archive folders, NOOPs; anonymous downloads (12%); SIGHUP rehash every 20-40s, 2 clean "
                  "restarts",
                  "wrong_password (4), unknown_user (4), root_login (3, RootLogin off), max_login_attempts (3x 4 wrong "
                  "passwords on one connection > MaxLoginAttempts 3), login_denied (3x a user in <Limit LOGIN> DenyUser), "
                  "missing_home (3x a user whose home directory is gone), idle_timeout (3x idle 7.5s > TimeoutIdle 6), "
                  "login_timeout (3x silent 6.5s > TimeoutLogin 5), too_many_clients (3x 15 connections > "
                  "MaxClientsPerHost 12), bad_config_restart (5: a bad number, an unclosed <Directory>, an unknown "
                  "module, a reversed PassivePorts range, a duplicate port)", normal, br.errors)


# --------------------------------------------------------------------------
# knot
# --------------------------------------------------------------------------

KNOT_CONF = """\
server:
    rundir: {work}/run
    user: knot:knot
    listen: 127.0.0.1@{port}
    identity: ns1.example.test
{server_extra}
log:
  - target: stderr
    any: debug

key:
  - id: ddns-key
    algorithm: hmac-sha256
    secret: {ddns_secret}
  - id: xfr-key
    algorithm: hmac-sha256
    secret: {xfr_secret}

remote:
  - id: secondary
    address: 127.0.0.1@{secondary}

acl:
  - id: ddns
    address: 127.0.0.0/29
    key: ddns-key
    action: update
  - id: xfr
    address: 127.0.0.1
    key: xfr-key
    action: transfer
  - id: xfr-office
    address: 127.0.0.4
    action: transfer

policy:
  - id: ecdsa
    algorithm: ecdsap256sha256
    zsk-lifetime: 0
    ksk-lifetime: 0
    rrsig-lifetime: 14d
    rrsig-refresh: 7d

template:
  - id: default
    storage: {work}/zones
    file: "%s.zone"
    journal-content: changes
    zonefile-sync: -1
    semantic-checks: on

database:
    storage: {work}/db

zone:
  - domain: example.test
    acl: [ddns, xfr]
    notify: secondary
  - domain: shop.test
    acl: [ddns, xfr]
    dnssec-signing: on
    dnssec-policy: ecdsa
    zonefile-load: difference
  - domain: corp.test
    acl: [xfr, xfr-office]
    notify: secondary
{extra}
"""

KNOT_HOSTS = ["www", "api", "mail", "vpn", "git", "wiki", "ci", "db1", "db2", "cache", "lb1", "lb2", "grafana", "status"]
KNOT_HEAD = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (\w+): ")


def knot_zone(origin: str, serial: int, rng: random.Random, n: int = 10) -> str:
    out = [f"$ORIGIN {origin}.\n$TTL 300\n@ IN SOA ns1.example.test. hostmaster.example.test. {serial} 3600 600 86400 300\n",
           "@ IN NS ns1.example.test.\n"]
    if origin == "example.test":
        out.append("ns1 IN A 127.0.0.1\n")
    out.append("@ IN MX 10 mail.example.test.\n")
    for h in rng.sample(KNOT_HOSTS, n):
        out.append(f"{h} IN A 10.{rng.randint(0, 9)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}\n")
    out.append(f"@ IN TXT \"v=spf1 mx -all\"\n_ldap._tcp IN SRV 0 0 389 {rng.choice(KNOT_HOSTS)}\n")
    return "".join(out)


def knot_template(line: str) -> str:
    m = KNOT_HEAD.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r"\[[\w.-]+\.\]", "[ZONE]", body)
    body = re.sub(r"'[\w.-]+\.'", "'NAME'", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def knot_problem(line: str) -> bool:
    m = KNOT_HEAD.match(line)
    if m and m.group(1) in ("warning", "error", "critical"):
        return True
    return bool(re.search(r"(ACL, denied|TSIG, .*(failed|unknown)|failed|refused|timeout|invalid)", line))


def knot_echo(line: str) -> bool:
    return bool(re.search(r"(ACL, allowed, action |DDNS, processing \d+ updates|[AI]XFR, outgoing, remote \S+, (started|finished)|"
                          r"NOTIFY, outgoing, remote \S+, serial )", line))


def dns_answer(query: bytes) -> bytes:
    """The reply to a NOTIFY: the same message with the QR bit set and rcode 0."""
    return query[:2] + bytes([query[2] | 0x80, query[3] & 0xF0]) + query[4:]


class NotifySink:
    """The secondary: answers the NOTIFYs knot sends it over UDP and TCP; down() makes it unreachable."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.is_up, self.stop_ev, self.tcp = True, threading.Event(), None
        self.sock.settimeout(0.3)
        threading.Thread(target=self.loop, daemon=True).start()
        self.up()

    def loop(self) -> None:
        while not self.stop_ev.is_set():
            try:
                data, addr = self.sock.recvfrom(4096)
            except OSError:
                continue
            if self.is_up and len(data) >= 12:
                with contextlib.suppress(OSError):
                    self.sock.sendto(dns_answer(data), addr)

    def up(self) -> None:
        self.tcp = socket.socket()
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(16)
        self.is_up = True
        threading.Thread(target=self.accept, args=(self.tcp,), daemon=True).start()

    def accept(self, lsock: socket.socket) -> None:
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            with contextlib.suppress(OSError), conn:
                conn.settimeout(3)
                head = conn.recv(2)
                if len(head) == 2:
                    n, data = struct.unpack(">H", head)[0], b""
                    while len(data) < n:
                        chunk = conn.recv(n - len(data))
                        if not chunk:
                            break
                        data += chunk
                    if len(data) >= 12:
                        reply = dns_answer(data)
                        conn.sendall(struct.pack(">H", len(reply)) + reply)

    def down(self) -> None:
        self.is_up = False
        with contextlib.suppress(OSError):
            self.tcp.shutdown(socket.SHUT_RDWR)
        self.tcp.close()

    def close(self) -> None:
        self.stop_ev.set()
        self.down()
        self.sock.close()


class DnsOps:
    """DHCP servers updating the zones, secondaries transferring them, the ops team editing corp.test."""

    def __init__(self, port: int, work: str, keys: dict, rng: random.Random):
        self.port, self.work, self.keys, self.rng = port, work, keys, rng
        self.leases: dict[str, set] = {"example.test": set(), "shop.test": set()}
        self.corp_serial = 2024120100

    def update(self, zone: str, cmds: list[str], key: str | None = "ddns-key", secret: str | None = None,
               src: str | None = None) -> int:
        argv = ["knsupdate", "-t", "3", "-r", "0"]
        if key:
            argv += ["-y", f"hmac-sha256:{key}:{secret or self.keys[key]}"]
        script = f"server 127.0.0.1 {self.port}\n" + (f"local {src}\n" if src else "") + f"zone {zone}\n" + \
            "".join(c + "\n" for c in cmds) + "send\nquit\n"
        return run_quiet(argv, 15, script.encode())

    def xfr(self, zone: str, kind: str = "AXFR", key: str | None = "xfr-key", secret: str | None = None, src: str | None = None,
            serial: int | None = None) -> int:
        argv = ["kdig", "-p", str(self.port), "@127.0.0.1", "+time=3", "+retry=0"]
        if src:
            argv += ["-b", src]
        if key:
            argv += ["-y", f"hmac-sha256:{key}:{secret or self.keys[key]}"]
        argv += [zone, f"IXFR={serial}" if kind == "IXFR" and serial else "AXFR"]
        return run_quiet(argv, 15)

    def knotc(self, *cmd: str) -> int:
        return run_quiet(["knotc", "-s", os.path.join(self.work, "run", "knot.sock"), "-t", "10", *cmd], 20)

    def write_corp(self, extra: str = "") -> None:
        self.corp_serial += 1
        path = os.path.join(self.work, "zones", "corp.test.zone")
        write_atomic(path, knot_zone("corp.test", self.corp_serial, random.Random(self.corp_serial), 8) + extra)
        shutil.chown(path, "knot", "knot")

    def normal(self, r: random.Random) -> None:
        x = r.random()
        if x < 0.5:  # DHCP leases: add / renew / expire host records
            zone = "example.test" if r.random() < 0.7 else "shop.test"
            host = f"{r.choice(['laptop', 'desk', 'phone', 'printer', 'pos', 'kiosk'])}-{r.randint(1, 60)}"
            if host in self.leases[zone] and r.random() < 0.5:
                self.leases[zone].discard(host)
                self.update(zone, [f"update delete {host}.{zone}. A"])
            else:
                self.leases[zone].add(host)
                self.update(zone, [f"update delete {host}.{zone}. A",
                                   f"update add {host}.{zone}. 300 A 10.{r.randint(20, 29)}.{r.randint(0, 255)}.{r.randint(1, 254)}"]
                            + ([f"update add {host}.{zone}. 300 TXT \"dhcid {r.getrandbits(32):08x}\""] if r.random() < 0.3 else []))
        elif x < 0.75:  # the secondaries transferring the zones
            zone = r.choice(["example.test", "shop.test", "corp.test"])
            if r.random() < 0.6:
                self.xfr(zone, "IXFR", serial=r.randint(2024120101, 2024120105) if zone != "corp.test" else self.corp_serial - 1)
            else:
                self.xfr(zone)
        elif x < 0.82:  # the ops team edits corp.test and reloads it
            self.write_corp()
            self.knotc("zone-reload", "corp.test")
        elif x < 0.94:  # monitoring and routine commands
            self.knotc(*r.choice([("zone-status",), ("zone-status", "example.test"), ("zone-notify", "example.test"),
                                  ("zone-read", "shop.test", "@", "DNSKEY"), ("zone-read", "corp.test", "@", "SOA"), ("status",),
                                  ("zone-stats", "example.test"), ("zone-sign", "shop.test")]))
        elif x < 0.97:  # the office resolver's nightly copy of corp.test (no key, by address)
            self.xfr("corp.test", key=None, src="127.0.0.4")
        else:
            self.knotc("reload")


def source_knot(args) -> Source:
    knotd = need("/usr/sbin/knotd", "knot")
    need("knotc", "knot")
    need("knsupdate", "knot-dnsutils")
    need("kdig", "knot-dnsutils")
    rng = random.Random(f"{args.seed}-knot")
    with tempfile.TemporaryDirectory(prefix="onb7-knot-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        keys = {"ddns-key": base64.b64encode(rng.randbytes(32)).decode(), "xfr-key": base64.b64encode(rng.randbytes(32)).decode()}
        sink = NotifySink()
        for d in ("zones", "db", "run"):
            os.makedirs(os.path.join(work, d))
        for zone, serial in [("example.test", 2024120101), ("shop.test", 2024120101)]:
            write_atomic(os.path.join(work, "zones", f"{zone}.zone"), knot_zone(zone, serial, rng))
        ops = DnsOps(port, work, keys, rng)
        ops.write_corp()
        conf, logp = os.path.join(work, "knot.conf"), os.path.join(work, "knot.log")

        def write_conf(extra: str = "", server_extra: str = "") -> None:
            write_atomic(conf, KNOT_CONF.format(work=work, port=port, secondary=sink.port, extra=extra, server_extra=server_extra,
                                                ddns_secret=keys["ddns-key"], xfr_secret=keys["xfr-key"]))
            os.chmod(conf, 0o644)

        write_conf()
        chown_tree(work, "knot")

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("knotd", [knotd, "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("knotd", signal.SIGTERM)

        start()
        log = FileLog(logp)
        say(f"knotd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 6)):
                ops.normal(rng)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "knot", round_fn)
            templates = {knot_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, knot_template, knot_problem, knot_echo))
            bg_ops = DnsOps(port, work, keys, random.Random(rng.random()))

            def bg(r: random.Random) -> None:  # leases and transfers only
                if r.random() < 0.7:
                    bg_ops.normal(random.Random(r.random() * 0.49))
                else:
                    bg_ops.xfr(r.choice(["example.test", "shop.test"]))

            with Background(bg, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("tsig_bad_signature"):  # a DHCP server with a stale / mistyped secret
                    for i in range(4):
                        with br.occurrence(1.0):
                            ops.update("example.test", [f"update add stale-{i}.example.test. 300 A 10.9.9.{i + 1}"],
                                       secret=base64.b64encode(rng.randbytes(32)).decode())
                with br.phase("tsig_unknown_key"):  # clients signing with a key the server does not have
                    for key in ["dhcp-old", "transfer-key", "ddns-key-2024"]:
                        with br.occurrence(1.0):
                            if key == "transfer-key":
                                ops.xfr("example.test", key=key, secret=keys["xfr-key"])
                            else:
                                ops.update("shop.test", [f"update add pos-99.shop.test. 300 A 10.20.0.{rng.randint(1, 254)}"],
                                           key=key, secret=keys["ddns-key"])
                with br.phase("update_denied"):  # updates the ACLs refuse (no key, wrong address, a zone without updates)
                    for zone, key, src in [("example.test", None, None), ("shop.test", None, "127.0.0.2"),
                                           ("corp.test", "ddns-key", None), ("example.test", "ddns-key", "127.0.0.9")]:
                        with br.occurrence(1.0):
                            ops.update(zone, [f"update add rogue.{zone}. 300 A 10.66.6.6"], key=key, src=src)
                with br.phase("transfer_denied"):  # zone transfers the ACLs refuse
                    for zone, key, src in [("example.test", None, None), ("shop.test", None, "127.0.0.3"),
                                           ("corp.test", None, "127.0.0.5"), ("example.test", "ddns-key", None)]:
                        with br.occurrence(1.0):
                            ops.xfr(zone, key=key, src=src)
                with br.phase("bad_update"):  # updates the zone cannot take
                    for zone, cmds in [("example.test", ["update add www.example.test. 300 CNAME lb1.example.test."]),
                                       ("example.test", ["update add host.other.test. 300 A 10.1.1.1"]),
                                       ("shop.test", ["prereq nxdomain www.shop.test.", "update add www.shop.test. 300 A 10.1.1.2"]),
                                       ("example.test", ["update delete example.test. SOA"])]:
                        with br.occurrence(1.0):
                            ops.update(zone, cmds)
                with br.phase("zone_file_error"):  # the ops team saves a broken corp.test and reloads it
                    for extra in ["badhost IN A 10.0.0.300\n", "printer IN AAAA fe80::1::2\n", "$INCLUDE /nonexistent.zone\n",
                                  "mail IN MX mail.corp.test.\n"]:
                        ops.write_corp(extra)
                        with br.occurrence(1.5):
                            ops.knotc("zone-reload", "corp.test")
                        ops.write_corp()
                        ops.knotc("zone-reload", "corp.test")
                        time.sleep(0.5)
                        br.between()
                with br.phase("notify_failure"):  # the secondary is down when the zone changes
                    for i in range(3):
                        sink.down()
                        with br.occurrence(2.0):
                            ops.update("example.test", [f"update add outage-{i}.example.test. 300 A 10.7.7.{i + 1}"])
                            time.sleep(8)
                        sink.up()
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_reload"):  # knot.conf edited with mistakes, knotc reload
                    for extra in ["  - domain: lab.test\n    acl: [nosuch-acl]", "  - domain: example.test\n    acl: [ddns]",
                                  "  - domain: lab.test\n    dnssec-policy: ecdsa-2024", "  - domain: lab.test\n    serial-policy: random",
                                  "  - domain: lab.test\n    storage: {work}/zones\n    file: missing.zone"]:
                        write_conf(extra.format(work=work))
                        with br.occurrence(2.0):
                            ops.knotc("reload")
                        write_conf()
                        ops.knotc("reload")
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # broken knot.conf at a restart
                    for extra, server_extra in [("    notify: [nosuch-remote]", ""), ("", f"    listen: 127.0.0.1@{sink.port}\n"),
                                                ("  - domain: example.test", ""), ("", "    user: knotd:knotd\n"),
                                                ("log:\n  - target: stderr\n    any: verbose", "")]:
                        stop()
                        br.between()
                        write_conf(extra, server_extra)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(2)
                        write_conf()
                        sv.stop("knotd")
                        sv.forget("knotd")
                        start()
                        time.sleep(0.5)
                        br.between()
        finally:
            stop()
            sink.close()
    return Source("knot", "Knot DNS (knotd)", version_of([knotd, "-V"]),
                  "knotd log target stderr, any: debug (`yyyy-mm-ddThh:mm:ss+0000 info: [example.test.] DDNS, processing 1 "
                  "updates`, `debug: [zone.] ACL, allowed, action transfer, remote 127.0.0.1@port, key 'xfr-key.'`, `info: "
                  "[zone.] AXFR, outgoing, remote ..., started, serial N`, DNSSEC, NOTIFY, control and zone loader lines)",
                  "knotd (as knot) with three primary zones: example.test (dynamic updates signed with a TSIG key, NOTIFYs to "
                  "a secondary), shop.test (dynamic updates, automatic DNSSEC signing with ECDSA), corp.test (edited by hand "
                  "and reloaded, transfers by address for an office resolver); DHCP-style updates (knsupdate: add / renew / "
                  "delete host records), AXFR / IXFR with a TSIG key (kdig), zone reloads, notify / flush / sign / status "
                  "commands and config reloads (knotc); 2 clean restarts",
                  "tsig_bad_signature (4 updates signed with a wrong secret), tsig_unknown_key (3 unknown key names), "
                  "update_denied (4: no key, a foreign address, a zone without updates), transfer_denied (4: no key, "
                  "foreign addresses, the update key), bad_update (4: CNAME next to other data, a name out of the zone, a "
                  "failed prerequisite, deleting the SOA), zone_file_error (4 broken corp.test + zone-reload), "
                  "notify_failure (3x the secondary down during an update), bad_config_reload (5 broken knot.conf + knotc "
                  "reload), bad_config_restart (5 broken knot.conf at a restart: an unknown remote, the secondary's port, a "
                  "duplicate zone, an unknown user, a duplicate log target)", normal, br.errors)


# --------------------------------------------------------------------------
# icecast2
# --------------------------------------------------------------------------

ICECAST_XML = """\
<icecast>
  <location>Studio B, Example Radio</location>
  <admin>ops@example.test</admin>
  <hostname>radio.example.test</hostname>
  <limits>
    <clients>60</clients>
    <sources>3</sources>
    <queue-size>524288</queue-size>
    <client-timeout>30</client-timeout>
    <header-timeout>4</header-timeout>
    <source-timeout>4</source-timeout>
    <burst-size>32768</burst-size>
  </limits>
  <authentication>
    <source-password>{source_pw}</source-password>
    <relay-password>relay-Pw-77</relay-password>
    <admin-user>admin</admin-user>
    <admin-password>{admin_pw}</admin-password>
  </authentication>
  <listen-socket>
    <port>{port}</port>
    <bind-address>127.0.0.1</bind-address>
  </listen-socket>
  <mount type="normal">
    <mount-name>/live.mp3</mount-name>
    <max-listeners>30</max-listeners>
  </mount>
  <mount type="normal">
    <mount-name>/jazz.mp3</mount-name>
    <max-listeners>30</max-listeners>
  </mount>
  <mount type="normal">
    <mount-name>/vip.mp3</mount-name>
    <password>{vip_pw}</password>
    <max-listeners>3</max-listeners>
  </mount>
  <fileserve>1</fileserve>
  <paths>
    <basedir>/usr/share/icecast2</basedir>
    <logdir>{work}</logdir>
    <webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot>
    <pidfile>{work}/icecast.pid</pidfile>
    <alias source="/" destination="/status.xsl"/>
  </paths>
  <logging>
    <accesslog>-</accesslog>
    <errorlog>-</errorlog>
    <loglevel>3</loglevel>
  </logging>
  <security>
    <chroot>0</chroot>
    <changeowner>
      <user>{user}</user>
      <group>icecast</group>
    </changeowner>
  </security>
{extra}</icecast>
"""

ICE_SOURCE_PW, ICE_ADMIN_PW, ICE_VIP_PW = "Src-hackme-31", "Adm-radio-58", "Vip-src-90"
ICE_UAS = ["VLC/3.0.18 LibVLC/3.0.18", "iTunes/12.12 (Macintosh; OS X 13.4)", "Winamp/5.9", "foobar2000/1.6",
           "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", "RadioDroid/0.86 (Android 14)",
           "Lavf/59.27.100", "mpv 0.35.1"]
ICE_ACCESS = re.compile(r'^\S+ - \S+ \[[^\]]+\] "(\S+) (\S+)[^"]*" (\d{3}) ')
ICE_ERR = re.compile(r"^\[\d{4}-\d\d-\d\d  \d\d:\d\d:\d\d\] (\w+) ")
ICE_SONGS = [("Miles Davis", "So What"), ("Nina Simone", "Feeling Good"), ("Chet Baker", "Almost Blue"),
             ("The Morning Show", "Traffic and Weather"), ("Bill Evans", "Waltz for Debby"), ("News", "Top of the Hour"),
             ("Ella Fitzgerald", "Summertime"), ("John Coltrane", "Naima"), ("Sponsor", "Station Break")]


def icecast_template(line: str) -> str:
    m = ICE_ACCESS.match(line)
    if m:
        return f"ACCESS {m.group(1)} {m.group(3)}"
    m = ICE_ERR.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r'changed to ".*"', 'changed to "TITLE"', body)
    body = re.sub(r"/[\w./-]+", "PATH", body)
    return mask_names(body)


def icecast_problem(line: str) -> bool:
    m = ICE_ACCESS.match(line)
    if m:
        return int(m.group(3)) >= 400
    m = ICE_ERR.match(line)
    return bool(m and m.group(1) in ("EROR", "WARN") and "Unsupported or legacy stream type" not in line)


def icecast_echo(line: str) -> bool:
    m = ICE_ACCESS.match(line)
    if m:
        return int(m.group(3)) < 400
    return bool(re.search(r"(Source logging in at mountpoint|End of Stream |Source from \S+ at \S+ exiting|"
                          r"listener count on \S+ now \d+|Unsupported or legacy stream type)", line))


class IceSource:
    """A studio encoder streaming (fake) MP3 frames to a mount point."""

    def __init__(self, port: int, mount: str, pw: str = ICE_SOURCE_PW, name: str = "Example Radio", method: str = "PUT"):
        self.port, self.mount, self.pw, self.name, self.method = port, mount, pw, name, method
        self.stop_ev, self.stall, self.thread, self.status = threading.Event(), False, None, None

    def start(self, wait: float = 0.5):
        self.stop_ev.clear()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        time.sleep(wait)
        return self

    def run(self) -> None:
        auth = base64.b64encode(f"source:{self.pw}".encode()).decode()
        try:
            with socket.create_connection(("127.0.0.1", self.port), 5) as s:
                s.sendall(f"{self.method} {self.mount} HTTP/1.1\r\nHost: radio.example.test:{self.port}\r\nAuthorization: Basic {auth}\r\n"
                          f"User-Agent: butt/0.1.37\r\nContent-Type: audio/mpeg\r\nIce-Name: {self.name}\r\nIce-Public: 0\r\n"
                          f"Ice-Genre: Jazz\r\nIce-Bitrate: 128\r\nExpect: 100-continue\r\n\r\n".encode())
                s.settimeout(5)
                head = s.recv(1000)
                self.status = head[:20]
                if b" 100 " not in head[:20] and b" 200 " not in head[:20]:
                    return
                frame = b"\xff\xfb\x90\x64" + bytes(413)
                while not self.stop_ev.is_set():
                    if not self.stall:
                        s.sendall(frame * 4)
                    self.stop_ev.wait(0.1)
        except OSError:
            pass

    def stop(self) -> None:
        self.stop_ev.set()
        if self.thread:
            self.thread.join(10)


class Listeners:
    """Listeners tuning in, the station's automation pushing titles, monitoring polling the status pages."""

    def __init__(self, port: int, rng: random.Random, cap: int = 24):
        self.port, self.rng, self.cap = port, rng, cap
        self.active, self.lock = 0, threading.Lock()

    def spawn(self, mount: str, secs: float) -> None:
        """A listener in its own thread (at most cap at once)."""
        with self.lock:
            if self.active >= self.cap:
                return
            self.active += 1
        ua = self.rng.choice(ICE_UAS)

        def run() -> None:
            try:
                self.listen(mount, secs, ua)
            finally:
                with self.lock:
                    self.active -= 1
        threading.Thread(target=run, daemon=True).start()

    def listen(self, mount: str, secs: float, ua: str | None = None, src: str | None = None) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=8, source_address=(src, 0) if src else None)
        try:
            headers = {"User-Agent": ua or self.rng.choice(ICE_UAS)}
            if self.rng.random() < 0.5:
                headers["Icy-MetaData"] = "1"
            conn.request("GET", mount, headers=headers)
            resp = conn.getresponse()
            end = time.time() + secs
            while time.time() < end and resp.status == 200:
                if not resp.read(4096):
                    break
            if resp.status != 200:
                resp.read()
            return resp.status
        except (OSError, http.client.HTTPException):
            return 0
        finally:
            conn.close()

    def admin(self, path: str, user: str = "admin", pw: str = ICE_ADMIN_PW) -> int:
        auth = base64.b64encode(f"{user}:{pw}".encode()).decode()
        return http_via(self.port, "GET", path, {"Authorization": f"Basic {auth}", "User-Agent": "radio-automation/2.3"})

    def normal(self, r: random.Random) -> None:
        x = r.random()
        if x < 0.6:
            for _ in range(r.randint(1, 4)):
                self.spawn(r.choice(["/live.mp3", "/live.mp3", "/jazz.mp3"]), r.uniform(0.2, 2.5))
        elif x < 0.72:
            artist, title = r.choice(ICE_SONGS)
            mount = r.choice(["/live.mp3", "/jazz.mp3"])
            self.admin(f"/admin/metadata?mount={mount}&mode=updinfo&song={artist.replace(' ', '+')}+-+{title.replace(' ', '+')}",
                       "source", ICE_SOURCE_PW)
        elif x < 0.88:
            http_via(self.port, "GET", r.choice(["/status-json.xsl", "/status-json.xsl", "/status.xsl", "/", "/style.css",
                                                 "/live.mp3.m3u", "/jazz.mp3.xspf"]), {"User-Agent": r.choice(UAS)})
        else:
            self.admin(r.choice(["/admin/stats", "/admin/listmounts", "/admin/listclients?mount=/live.mp3",
                                 "/admin/listclients?mount=/jazz.mp3", "/admin/stats.xsl"]))


def source_icecast2(args) -> Source:
    icecast = need("/usr/bin/icecast2", "icecast2")
    rng = random.Random(f"{args.seed}-icecast2")
    with tempfile.TemporaryDirectory(prefix="onb7-icecast2-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        conf, logp = os.path.join(work, "icecast.xml"), os.path.join(work, "icecast.log")

        def write_conf(extra: str = "", **kw) -> None:
            vals = {"work": work, "port": port, "source_pw": ICE_SOURCE_PW, "admin_pw": ICE_ADMIN_PW, "vip_pw": ICE_VIP_PW,
                    "user": "icecast2", "extra": extra}
            vals.update(kw)
            write_atomic(conf, ICECAST_XML.format(**vals))
            os.chmod(conf, 0o644)

        write_conf()
        chown_tree(work, "icecast2")
        studios: dict[str, IceSource] = {}

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("icecast2", [icecast, "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                studios_connect()

        def studios_connect() -> None:  # the encoders reconnect when the server is back
            for mount, name in [("/live.mp3", "Example Radio Live"), ("/jazz.mp3", "Example Radio Jazz")]:
                studios[mount] = IceSource(port, mount, name=name).start()

        def stop() -> None:
            for s in studios.values():
                s.stop()
            studios.clear()
            sv.stop("icecast2", signal.SIGTERM)

        start()
        fans = Listeners(port, rng)
        log = FileLog(logp)
        say(f"icecast2 on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "show": time.time(), "hup": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(1, 4)):
                fans.normal(rng)
            time.sleep(rng.uniform(0.05, 0.2))
            if time.time() - state["show"] > rng.uniform(10, 25):  # a show ends, the next studio connects
                mount = rng.choice(["/live.mp3", "/jazz.mp3"])
                studios[mount].stop()
                time.sleep(rng.uniform(0.2, 1.0))
                studios[mount] = IceSource(port, mount, name=f"Example Radio {rng.choice(['Live', 'Morning', 'Late Night', 'Jazz'])}").start()
                state["show"] = time.time()
            if time.time() - state["hup"] > rng.uniform(20, 40):
                sv.procs["icecast2"].send_signal(signal.SIGHUP)
                state["hup"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "icecast2", round_fn)
            templates = {icecast_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, icecast_template, icecast_problem, icecast_echo))
            bg_fans = Listeners(port, random.Random(rng.random()))

            def bg(r: random.Random) -> None:
                if r.random() < 0.7:
                    bg_fans.listen(r.choice(["/live.mp3", "/jazz.mp3"]), r.uniform(0.2, 1.5))
                else:
                    http_via(port, "GET", "/status-json.xsl", {"User-Agent": "curl/7.88.1"})

            with Background(bg, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("source_bad_password"):  # encoders configured with an old / wrong password
                    for mount, pw in [("/talk.mp3", "hackme"), ("/vip.mp3", ICE_SOURCE_PW), ("/news.mp3", "Src-hackme-30"),
                                      ("/vip.mp3", "vip")]:
                        with br.occurrence(1.0):
                            IceSource(port, mount, pw).start(1.0).stop()
                with br.phase("mount_in_use"):  # a second encoder on a mount that is live
                    for mount in ["/live.mp3", "/jazz.mp3", "/live.mp3"]:
                        with br.occurrence(1.0):
                            IceSource(port, mount, name="Backup Encoder").start(1.0).stop()
                with br.phase("too_many_sources"):  # more encoders than <sources> 3
                    for i in range(3):
                        extra = IceSource(port, "/talk.mp3", name="Talk").start(1.0)
                        br.between()
                        with br.occurrence(1.0):
                            IceSource(port, rng.choice(["/news.mp3", "/sports.mp3", "/events.mp3"]), name="Pop-up").start(1.0).stop()
                        extra.stop()
                        time.sleep(1)
                        br.between()
                with br.phase("listener_limit"):  # the VIP stream has 3 slots
                    vip = IceSource(port, "/vip.mp3", ICE_VIP_PW, name="VIP Lounge").start(1.0)
                    br.between()
                    for i in range(3):
                        with br.occurrence(1.5):
                            threads = [threading.Thread(target=fans.listen, args=("/vip.mp3", 2.5), daemon=True) for _ in range(5)]
                            for t in threads:
                                t.start()
                                time.sleep(0.1)
                            for t in threads:
                                t.join(15)
                    vip.stop()
                    time.sleep(1)
                    br.between()
                with br.phase("source_timeout"):  # an encoder that stops sending (network stall) past source-timeout 4
                    for i in range(3):
                        talk = IceSource(port, "/talk.mp3", name="Talk").start(1.0)
                        br.between()
                        with br.occurrence(1.5):
                            talk.stall = True
                            time.sleep(6)
                        talk.stop()
                        time.sleep(0.5)
                        br.between()
                with br.phase("unknown_mount"):  # players with stale playlists
                    for mount in ["/radio.mp3", "/live.ogg", "/stream", "/talk.mp3"]:
                        with br.occurrence(1.0):
                            fans.listen(mount, 0.5)
                with br.phase("admin_auth_failure"):  # admin pages with wrong credentials
                    for path, user, pw in [("/admin/stats", "admin", "admin"), ("/admin/listclients?mount=/live.mp3", "admin", "hackme"),
                                           ("/admin/metadata?mount=/live.mp3&mode=updinfo&song=Spam", "source", "wrong"),
                                           ("/admin/killsource?mount=/jazz.mp3", "root", "toor")]:
                        with br.occurrence(1.0):
                            fans.admin(path, user, pw)
                with br.phase("bad_request"):  # garbage, TLS and clients that never finish their headers
                    for p in [b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"HELO radio.example.test\r\n\r\n",
                              b"GET /live.mp3 HTTP/9.9\r\nHost: radio\r\n\r\n", b"SOURCE /live.mp3\r\n\r\n"]:
                        with br.occurrence(1.0):
                            raw_send(port, p, 0.5)
                with br.phase("bad_config_restart"):  # icecast.xml edits with mistakes, icecast restarted
                    blocker = socket.socket()
                    blocker.bind(("127.0.0.1", 0))
                    blocker.listen(1)
                    for kw in [{"extra": "  <limits><clients>80</clients>\n"}, {"user": "icecast"},
                               {"extra": f"  <listen-socket><port>{blocker.getsockname()[1]}</port><bind-address>127.0.0.1</bind-address>"
                                         "</listen-socket>\n"},
                               {"extra": "  <paths><webroot>/srv/radio/web</webroot><adminroot>/srv/radio/admin</adminroot></paths>\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(1.5):
                            start(wait=False)
                            with contextlib.suppress(RuntimeError):
                                wait_port(port, 1.5)
                            proc = sv.procs.get("icecast2")
                            if proc is not None and proc.poll() is None:
                                studios_connect()
                            time.sleep(1)
                            if kw.get("extra", "").startswith("  <paths>"):
                                http_via(port, "GET", "/status.xsl", {"User-Agent": "curl/7.88.1"})
                                fans.admin("/admin/stats.xsl")
                        write_conf()
                        stop()
                        sv.forget("icecast2")
                        start()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("icecast2", "Icecast", version_of([icecast, "-v"]),
                  "icecast error log and access log both on stdout, loglevel 3 (`[yyyy-mm-dd  hh:mm:ss] INFO source/source_main "
                  "listener count on /live.mp3 now 3`, `[...] WARN format/format_get_type ...`, `[...] EROR ...`, mixed with "
                  "combined access lines `127.0.0.1 - - [date] \"GET /live.mp3 HTTP/1.1\" 200 bytes \"-\" \"user-agent\" "
                  "seconds`)",
                  "icecast2 (as icecast2; mounts /live.mp3, /jazz.mp3 and /vip.mp3 with its own source password and 3 "
                  "listener slots; sources 3, header-timeout 4, source-timeout 4) with two studio encoders streaming MP3 "
                  "frames (PUT, reconnecting at each show change every 10-25s); listeners (up to 24 at once) tuning in for "
                  "0.2-2.5s with players' user agents, song titles pushed through /admin/metadata, status pages, playlists and admin "
                  "listings polled; SIGHUP config reloads every 20-40s, 2 clean restarts",
                  "source_bad_password (4 encoders with wrong passwords, one using the global password on /vip.mp3), "
                  "mount_in_use (3 second encoders on a live mount), too_many_sources (3x a 4th encoder > sources 3), "
                  "listener_limit (3x 5 listeners on /vip.mp3 > max-listeners 3), source_timeout (3x an encoder stalling 6s "
                  "> source-timeout 4), unknown_mount (4 players asking for mounts without a source), admin_auth_failure "
                  "(4 admin / metadata / kill requests with bad credentials), bad_request (5 malformed requests: garbage, "
                  "no URL, SMTP, HTTP/9.9, a legacy SOURCE without headers), bad_config_restart (4: broken XML, an unknown group, a port in "
                  "use, missing web / admin roots)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_seventh", SOURCES, globals(), seed=7777, min_normal_s=60,
               root_for="programs dropping to their own users")


if __name__ == "__main__":
    sys.exit(main())
