#!/usr/bin/env python3
"""Generate the sixteenth onboarding corpus: real log lines written by real programs, grouped into events.

A sixteenth corpus built exactly like benchmarks/onboarding_fifteenth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs at a restart, wrong passwords,
garbage on the wire, stopped or hanging backends, killed processes, a step made to fail, full disks via tiny
tmpfs...).  It never writes a log line itself (the services and check scripts monit runs, the backends behind
nghttpx and sslh are small programs of this script that print nothing into a log).  The programs trace
multi-step work per named item (a service's checks, failures, actions and recovery by its name in monit, an
MPD client's commands by its number and a track from queued through decoding to played in mpd, a metric's
schema matching, creation, writes and cache queries by its name in carbon, a connection's handler, upstream,
downstream and backend connection in nghttpx, a connection's probing and forwarding by its file descriptor in
sslh).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends monit mpd
graphite-carbon nghttp2-proxy nghttp2-client sslh curl openssl; also util-linux (unshare, nsenter, setpriv)
and Debian's python3 (monit's services, carbon-cache).  The clients are python code in this script (the MPD
protocol, carbon's plaintext / pickle / cache-query protocols, HTTP/1.1 and TLS, ssh / OpenVPN / XMPP first
packets) and real CLIs (monit, nghttp, curl, openssl s_client).  No system service of these packages needs to
run: each daemon is started directly as a plain process, without systemd, in a private temporary folder with
private ports; mpd runs as mpd, carbon-cache as _graphite, sslh drops to nobody (users the packages create);
no user is created):

  monit    Monit 5.33 (monit -I -v, 1 s cycles, in a private pid + mount namespace whose pid 1 is a reaper, its
           log file): `[2026-12-06T05:40:01+0000] error    : 'api' failed protocol test [HTTP] at
           [127.0.0.1]:40123/api/status [TCP/IP] -- HTTP error: Server returned status 500`.  Normal: 5 processes it
           starts and stops, 2 remote TCP hosts, a file, a log file, a directory, 2 check scripts, a tmpfs and the
           system checked every second; operators' monit CLI commands and web-interface reads and actions; 2 clean
           restarts.  Broken: remote hosts gone, processes SIGKILLed, HTTP checks failing / hanging, a start program
           failing, check scripts failing / hanging, a file and a directory changed, the tmpfs full (space, inodes),
           wrong web-interface credentials, broken monitrc / the port taken at a restart.
  mpd      Music Player Daemon 0.23 (mpd --no-daemon, log_level verbose, its log file; the playlist directory
           on a tiny tmpfs in a private mount namespace): `Dec 06 05:40 : client: [12] process command "play"`.
           Normal: clients on 8 addresses playing albums, queueing, browsing, pausing and skipping, stored
           playlists, idle, an admin adding albums and updating the library; 2 clean restarts.  Broken: wrong
           passwords, bad commands, missing paths and playlists, tracks vanished / unreadable, corrupt files found
           by an update, too many clients, the playlist tmpfs full, broken mpd.conf / the port taken at a restart.
  carbon   Graphite carbon-cache 1.1.7 (--nodaemon: its log on stdout, warnings and tracebacks on stderr; whisper
           files on a tmpfs in a private mount namespace): `06/12/2026 05:40:01 :: [updates] wrote 3 datapoints for
           servers.web03.cpu.user in 0.00012 seconds`.  Normal: agents on 8 addresses, statsd and a relay sending
           metrics of up to 24 servers and 3 applications, graphite-web querying the cache; 2 clean restarts.
           Broken: invalid lines, invalid and unsafe pickles, bad cache queries, the whisper tmpfs full, metric
           directories unreadable, whisper files corrupted, broken carbon.conf / storage-schemas.conf / the port
           taken at a restart.
  nghttpx  nghttpx 1.52 (nghttp2's proxy, error log at INFO with header dumps and the access log in one file):
           `2026-12-06T05:40:01.123Z 4242 4250 6b25f872 WARN (shrpx_http_downstream_connection.cc:1532)
           [DCONN:0x7f...] Backend connect failed; addr=127.0.0.1:40123: errno=111`.  Normal: browsers over HTTP/2
           and HTTP/1.1 (TLS and not), API clients, curl over h2c, a static host, health checks in front of 4
           python backends; 2 clean restarts.  Broken: backends stopped, hanging past the read timeout,
           resetting connections, bad requests, failed TLS handshakes, broken nghttpx.conf / the port taken at a
           restart.
  sslh     sslh 1.20 (sslh-select -F, verbose: 1, its stderr, no time stamps): `accepted fd 6 on slot 2`,
           `probing for ssh: PROBE_MATCH`, `ssh:connection from 127.0.0.3:51234 to 127.0.0.1:40000 forwarded from
           127.0.0.1:51236 to 127.0.0.1:40123`.  Normal: ssh, HTTPS (two sites told apart by SNI), HTTP, OpenVPN and
           XMPP clients on 8 addresses sharing one port; 2 clean restarts.  Broken: backends stopped, silent
           clients, unknown protocols, first packets cut short, clients resetting, broken sslh.cfg / the port
           taken at a restart.

Layout written under --out (default benchmarks/data/onboarding_sixteenth):

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

  * its level marks it as a problem (monit warning / error lines and what it says
    on stderr at a failed start; mpd "exception:" lines, commands that returned an
    error, malformed commands, refused connections, lines of failures; carbon lines
    of errors, failures and tracebacks; nghttpx WARN / ERROR / FATAL lines and
    access-log lines with a status of 400 or more; sslh failed forwards, probe
    timeouts, failed system calls and lines of failures), where a problem word
    counts only as a word of the message, never inside a path, a file name, a
    metric name or a header a client sent, or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; client numbers, file descriptors, handler
    addresses, metric names, paths, the arguments of mpd commands, the values of
    dumped headers and sslh's hexdumps of client bytes masked too) never occurred
    in the normal phase.

An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_sixteenth_data.py --out benchmarks/data/onboarding_sixteenth \\
        [--sources monit,mpd,carbon,nghttpx,sslh] [--lines 6000] [--seed 16016] [--min-normal-seconds 45]
"""
from __future__ import annotations

import base64
import contextlib
import http.client
import http.server
import json
import math
import os
import pickle
import pwd
import random
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_blind_data import ModeServer, QuietHandler
from onboarding_data import FileLog, free_port, need, say, wait_port, write_atomic
from onboarding_eighth_data import tcp_blocker
from onboarding_eleventh_data import dpkg_version, templater
from onboarding_fifteenth_data import PROBLEM_WORDS, burst, has_problem_word, listening
from onboarding_fifth_data import clean_restart, normal_loop, run
from onboarding_heldout_data import (
    USERS,
    WORDS,
    Background,
    Breaker,
    Group,
    Namespace,
    Source,
    children,
    entry_selector,
    raw_send,
)
from onboarding_sixth_data import TLS_HELLO, run_quiet
from onboarding_tenth_data import SYS_PY, kill_pids, log_has, size_of

SOURCES = ["monit", "mpd", "carbon", "nghttpx", "sslh"]
ACCOUNTS = USERS[:10]
HOSTS = [f"127.0.0.{i}" for i in range(2, 10)]
REAPER = ("import os, time\nwhile True:\n    try:\n        os.wait()\n    except ChildProcessError:\n"
          "        time.sleep(0.2)\n")


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants_of(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


class PidNS:
    """A private PID + mount namespace (its pid 1 a python reaper) set up by ``setup`` (a shell command);
    programs started with argv() run inside it and outlive the program that started them."""

    def __init__(self, sv: Group, name: str, setup: str):
        self.proc = sv.start(name, [need("unshare", "util-linux"), "--pid", "--fork", "--mount-proc", "--mount",
                                    "--propagation", "private", "sh", "-c", f"{setup} && exec {SYS_PY} -c '{REAPER}'"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid1 = 0
        for _ in range(100):
            time.sleep(0.1)
            if self.proc.poll() is not None:
                raise RuntimeError(f"could not set up the pid namespace: {setup}")
            kids = children(self.proc.pid)
            if kids and "-c import os" in cmdline(kids[0]):
                self.pid1 = kids[0]
                return
        raise RuntimeError("pid namespace setup timed out")

    def argv(self, argv: list[str]) -> list[str]:
        return [need("nsenter", "util-linux"), "-t", str(self.pid1), "--pid", "--mount", "--"] + argv

    def run(self, cmd: str, timeout: float = 60) -> int:
        return run_quiet(self.argv(["sh", "-c", cmd]), timeout)

    def pids(self, needle: str) -> list[int]:
        """Host pids of the processes inside whose command line holds ``needle``."""
        return [p for p in descendants_of(self.pid1) if needle in cmdline(p)]


def level_problem(line: str, head: re.Pattern, levels: tuple) -> bool:
    m = head.match(line)
    return bool(m) and m.group("lvl").strip().lower() in levels


# --------------------------------------------------------------------------
# monit (monit -I -v in a private pid namespace, its log file)
# --------------------------------------------------------------------------

MONITRC = """\
set daemon 1
set log {work}/monit.log
set pidfile {work}/run/monit.pid
set idfile {work}/run/monit.id
set statefile {work}/run/monit.state
set limits {{ programOutput: 512 B, networkTimeout: 3 s }}
set httpd port {hport} and use address 127.0.0.1
    allow admin:"{admin_pw}"
    allow ops:"{ops_pw}" read-only
{extra}
check system onb16-mon
    if loadavg (1min) > 400 then alert
    if memory usage > 99% for 10 cycles then alert

check process webapp with pidfile {work}/run/webapp.pid
    start program = "{py} {work}/bin/svc.py start webapp http {p_web} {work}" with timeout 10 seconds
    stop program = "{py} {work}/bin/svc.py stop webapp http 0 {work}"
    if failed host 127.0.0.1 port {p_web} protocol http request "/health" with timeout 2 seconds then restart
    if 4 restarts within 30 cycles then unmonitor

check process api with pidfile {work}/run/api.pid
    start program = "{py} {work}/bin/svc.py start api http {p_api} {work}" with timeout 10 seconds
    stop program = "{py} {work}/bin/svc.py stop api http 0 {work}"
    if failed host 127.0.0.1 port {p_api} protocol http request "/api/status" status = 200 with timeout 2 seconds then alert

check process queue with pidfile {work}/run/queue.pid
    start program = "{py} {work}/bin/svc.py start queue tcp {p_queue} {work}" with timeout 10 seconds
    stop program = "{py} {work}/bin/svc.py stop queue tcp 0 {work}"
    if failed host 127.0.0.1 port {p_queue} send "PING\\r\\n" expect "PONG" with timeout 2 seconds then restart

check process worker with pidfile {work}/run/worker.pid
    start program = "{py} {work}/bin/svc.py start worker idle 0 {work}" with timeout 10 seconds
    stop program = "{py} {work}/bin/svc.py stop worker idle 0 {work}"
    if totalmem > 900 MB then alert

check process scheduler with pidfile {work}/run/scheduler.pid
    start program = "{py} {work}/bin/svc.py start scheduler idle 0 {work}" with timeout 10 seconds
    stop program = "{py} {work}/bin/svc.py stop scheduler idle 0 {work}"
    if 3 restarts within 6 cycles then unmonitor

check host db01 with address 127.0.0.1
    if failed port {p_db} type tcp with timeout 2 seconds then alert

check host cache01 with address 127.0.0.1
    if failed port {p_cache} send "stats\\r\\n" expect "STAT" with timeout 2 seconds then alert

check file nginx_conf with path {work}/etc/nginx.conf
    if changed checksum then alert
    if failed permission 644 then alert

check file app_log with path {work}/var/app.log
    if size > 20 MB then alert

check directory uploads with path {work}/uploads
    if failed permission 755 then alert
    if failed uid root then alert

check program backup_check with path "{work}/bin/backup_check.sh" with timeout 4 seconds
    if status != 0 then alert

check program cert_check with path "{work}/bin/cert_check.sh" with timeout 4 seconds
    if status != 0 then alert

check filesystem spool with path {work}/spool
    if space usage > 80% then alert
    if inode usage > 80% then alert
"""

MONIT_SVC = r'''
import os, signal, socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
action, name, kind, port, work = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
pidfile = os.path.join(work, "run", name + ".pid")

def mode():
    try:
        with open(os.path.join(work, "mode", name)) as f:
            return f.read().strip()
    except OSError:
        return "ok"

if action == "stop":
    try:
        os.kill(int(open(pidfile).read()), signal.SIGTERM)
    except (OSError, ValueError):
        pass
    sys.exit(0)
if os.path.exists(os.path.join(work, "mode", name + ".nostart")):
    sys.stderr.write(f"{name}: cannot open {work}/etc/{name}.yaml: No such file or directory\n")
    sys.exit(3)
if os.fork():
    time.sleep(0.3)
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
fd = os.open(os.devnull, os.O_RDWR)
for i in range(3):
    os.dup2(fd, i)
with open(pidfile + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(pidfile + ".tmp", pidfile)

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        m = mode()
        if m == "hang":
            time.sleep(20)
        if m == "garbage":
            self.wfile.write(b"\x00\x01 garbage\r\n\r\n")
            return
        code = {"fail500": 500, "fail503": 503, "missing": 404}.get(m, 200)
        body = b'{"status": "ok"}' if code == 200 else b'{"status": "error"}'
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

if kind == "http":
    ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
elif kind == "tcp":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    def serve(c):
        with c:
            c.settimeout(5)
            try:
                while True:
                    d = c.recv(1024)
                    if not d:
                        return
                    c.sendall(b"PONG\r\n" if mode() == "ok" else b"-ERR busy\r\n")
            except OSError:
                pass
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
else:
    while True:
        time.sleep(1)
'''
MONIT_CHECK = """#!/bin/sh
if [ -f {work}/mode/{name}.fail ]; then cat {work}/mode/{name}.fail; exit {code}; fi
if [ -f {work}/mode/{name}.hang ]; then sleep 8; fi
echo "{ok}"
exit 0
"""
MONIT_HEAD = re.compile(r"^\[[\d\-T:+]+\] (?P<lvl>\w+)\s*: ")
monit_template = templater(re.compile(r"^\[[\d\-T:+]+\] "), (r"/[\w./@-]+", "PATH"), (r"'[^']*'", "'S'"),
                           (r"\[[\d.:]+\]:\d+", "[ADDR]"))


def monit_problem(line: str) -> bool:
    if MONIT_HEAD.match(line):
        return level_problem(line, MONIT_HEAD, ("warning", "error", "critical", "alert", "emergency"))
    return has_problem_word(line)  # monit's stdout / stderr (a failed start)


class TcpTarget:
    """A TCP service on 127.0.0.1 that monit checks as a remote host (a database, a cache); stop() takes it away."""

    def __init__(self, port: int, reply: bytes = b""):
        self.port, self.reply, self.sock = port, reply, None

    def start(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(16)
        threading.Thread(target=self.loop, args=(self.sock,), daemon=True).start()

    def loop(self, s: socket.socket) -> None:
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c: socket.socket) -> None:
        with contextlib.suppress(OSError), c:
            c.settimeout(3)
            if self.reply:
                c.recv(1024)
                c.sendall(self.reply)
            c.recv(1024)

    def stop(self) -> None:
        if self.sock:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None


def source_monit(args) -> Source:
    monit = need("monit", "monit")
    rng = random.Random(f"{args.seed}-monit")
    with tempfile.TemporaryDirectory(prefix="onb16-monit-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("run", "bin", "mode", "etc", "var", "uploads", "spool"):
            os.makedirs(os.path.join(work, d))
        logp, rc = os.path.join(work, "monit.log"), os.path.join(work, "monitrc")
        ports = {k: free_port() for k in ("hport", "p_web", "p_api", "p_queue", "p_db", "p_cache")}
        admin_pw, ops_pw = "Adm1n-Onb16", "0ps-Onb16"
        write_atomic(os.path.join(work, "bin", "svc.py"), MONIT_SVC)
        for name, code, ok in [("backup_check", 2, "OK: last backup of db01 finished 2h ago"),
                               ("cert_check", 1, "OK: certificate for www.onb16.test valid for 87 days")]:
            p = os.path.join(work, "bin", f"{name}.sh")
            write_atomic(p, MONIT_CHECK.format(work=work, name=name, code=code, ok=ok))
            os.chmod(p, 0o755)
        nginx_conf = os.path.join(work, "etc", "nginx.conf")
        write_atomic(nginx_conf, "worker_processes 4;\nevents { worker_connections 1024; }\nhttp { include sites/*.conf; }\n")
        os.chmod(nginx_conf, 0o644)
        os.chmod(os.path.join(work, "uploads"), 0o755)
        app_log = os.path.join(work, "var", "app.log")
        write_atomic(app_log, "")
        targets = {"db01": TcpTarget(ports["p_db"]), "cache01": TcpTarget(ports["p_cache"], b"STAT pid 4242\r\nEND\r\n")}
        for t in targets.values():
            t.start()
        spool = os.path.join(work, "spool")
        ns = PidNS(sv, "monit-ns", f"mount -t tmpfs -o size=1m,nr_inodes=400 tmpfs {spool}")

        def write_rc(extra: str = "", text: str | None = None, mode: int = 0o600) -> None:
            write_atomic(rc, text if text is not None else MONITRC.format(work=work, extra=extra, admin_pw=admin_pw,
                                                                          ops_pw=ops_pw, py=SYS_PY, **ports))
            os.chmod(rc, mode)

        def start(wait: bool = True) -> None:
            """monit -I -v mirrors its log on stdout and its errors on stderr; a start that fails before the log is
            open (a broken monitrc) says why on stderr only: stderr goes next to the log for the bad starts."""
            since = size_of(logp)
            with open(logp if not wait else os.devnull, "ab") as errf:
                sv.start("monit", ns.argv([monit, "-I", "-v", "-c", rc]), stdout=subprocess.DEVNULL, stderr=errf, cwd=work)
            if wait:
                log_has(logp, b"started", since, 20)
                time.sleep(0.5)

        def stop() -> None:
            proc = sv.procs.get("monit")
            if proc is not None and proc.poll() is None:
                kill_pids([p for p in children(proc.pid)], signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(15)
            sv.stop("monit", signal.SIGTERM, 5)

        def cli(*argv: str, timeout: float = 15) -> int:
            return run_quiet(ns.argv([monit, "-c", rc] + list(argv)), timeout)

        def set_mode(name: str, mode: str | None) -> None:
            p = os.path.join(work, "mode", name)
            if mode is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
            else:
                write_atomic(p, mode)

        def svc_pids(name: str) -> list[int]:
            return ns.pids(f"svc.py start {name} ")

        def http_ui(user: str, pw: str, method: str = "GET", path: str = "/_status?format=xml", action: str | None = None,
                    src: str = "127.0.0.1") -> int:
            """A page of the web interface, or a POSTed action (with the CSRF token of the cookie an earlier GET set)."""
            hdrs = {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}
            body = None
            try:
                if method == "POST":
                    conn = http.client.HTTPConnection("127.0.0.1", ports["hport"], timeout=10, source_address=(src, 0))
                    conn.request("GET", path, headers=hdrs)
                    resp = conn.getresponse()
                    resp.read()
                    conn.close()
                    m = re.search(r"securitytoken=(\w+)", resp.getheader("Set-Cookie") or "")
                    token = m.group(1) if m else ""
                    hdrs.update({"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"securitytoken={token}"})
                    body = f"securitytoken={token}&action={action}".encode()
                conn = http.client.HTTPConnection("127.0.0.1", ports["hport"], timeout=10, source_address=(src, 0))
                conn.request(method, path, body=body, headers=hdrs)
                resp = conn.getresponse()
                resp.read()
                conn.close()
                return resp.status
            except (OSError, http.client.HTTPException):
                return 0

        app_lines = ["GET /cart 200", "POST /checkout 201", "GET /products?page=2 200", "GET /login 200"]

        def operator(r: random.Random) -> None:
            """Operators and dashboards: status reads, restarts, stops and starts, monitoring toggles, reloads."""
            a = r.random()
            if a < 0.3:
                cmd = r.choice(["status", "summary", "report"])
                cli(cmd, *([r.choice(["webapp", "api", "queue", "db01"])] if cmd != "report" and a < 0.12 else
                           [r.choice(["up", "down", "total"])] if cmd == "report" and a < 0.15 else []))
            elif a < 0.5:
                who = r.choice([("admin", admin_pw), ("ops", ops_pw)])
                http_ui(*who, path=r.choice(["/_status?format=xml", "/_summary", "/", "/webapp", "/db01"]), src=r.choice(HOSTS))
            elif a < 0.62:
                cli("restart", r.choice(["webapp", "api", "queue", "worker"]))
            elif a < 0.72:
                name = r.choice(["worker", "queue"])
                cli("stop", name)
                time.sleep(r.uniform(1.0, 2.5))
                cli("start", name)
            elif a < 0.8:
                name = r.choice(["db01", "cache01", "app_log", "cert_check"])
                cli("unmonitor", name)
                time.sleep(r.uniform(1.0, 2.5))
                cli("monitor", name)
            elif a < 0.86:
                http_ui("admin", admin_pw, "POST", "/" + r.choice(["api", "webapp", "queue", "cache01"]),
                        action=r.choice(["monitor", "restart"]), src=r.choice(HOSTS))
            elif a < 0.9:
                cli("reload")
            else:
                with open(app_log, "a") as f:
                    f.writelines(f"{time.strftime('%H:%M:%S')} {r.choice(app_lines)} user={r.choice(ACCOUNTS)}\n" for _ in range(r.randint(20, 200)))
            time.sleep(r.uniform(0.2, 0.8))

        write_rc()
        for name, kind in [("webapp", "http"), ("api", "http"), ("queue", "tcp"), ("worker", "idle"), ("scheduler", "idle")]:
            run_quiet(ns.argv([SYS_PY, os.path.join(work, "bin", "svc.py"), "start", name, kind,  # as init would have
                               str(ports.get(f"p_{'web' if name == 'webapp' else name}", 0)), work]))
        start()
        log = FileLog(logp)
        say(f"monit (http {ports['hport']}) in a pid namespace; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            operator(rng)
            clean_restart(state, elapsed, stop, start, pause_s=0.5)

        def restart_clean() -> None:
            stop()
            write_rc()
            start()

        def readonly(r: random.Random) -> None:
            if r.random() < 0.5:
                cli(r.choice(["status", "summary"]))
            else:
                http_ui("ops", ops_pw, path=r.choice(["/_status?format=xml", "/_summary", "/"]), src=r.choice(HOSTS))

        try:
            normal = normal_loop(args, log, "monit", round_fn)
            templates = {monit_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, monit_template, monit_problem))
            with Background(readonly, random.Random(rng.random()), (0.8, 2.0)):
                with br.phase("target_down"):  # the database / cache monit checks as remote hosts goes away
                    for name in ["db01", "cache01", "db01"]:
                        with br.occurrence(1.0):
                            targets[name].stop()
                            time.sleep(2.5)
                        targets[name].start()
                        time.sleep(2.5)
                        br.between()
                with br.phase("process_died"):  # a managed process SIGKILLed; monit restarts it
                    for name in ["worker", "queue", "api", "scheduler"]:
                        with br.occurrence(1.5):
                            kill_pids(svc_pids(name))
                            time.sleep(3.0)
                        time.sleep(2.0)
                        br.between()
                with br.phase("http_check_failed"):  # the web services answering errors, hanging, garbage
                    for name, mode in [("api", "fail500"), ("webapp", "fail503"), ("api", "hang"), ("api", "garbage")]:
                        with br.occurrence(1.0):
                            set_mode(name, mode)
                            time.sleep(4.0)
                        set_mode(name, None)
                        if name == "webapp":
                            cli("monitor", "webapp")
                        time.sleep(12.0 if name == "webapp" else 4.0)  # monit restarts the webapp and waits for it
                        br.between()
                with br.phase("start_failure"):  # a process dies and its start program fails
                    for i in range(3):
                        set_mode("scheduler.nostart", "1")
                        with br.occurrence(1.0):
                            kill_pids(svc_pids("scheduler"))
                            time.sleep(8.0 + i)
                        set_mode("scheduler.nostart", None)
                        cli("monitor", "scheduler")
                        cli("start", "scheduler")
                        time.sleep(6.0)
                        br.between()
                with br.phase("program_failure"):  # check scripts returning an error, hanging past the timeout
                    for name, how in [("backup_check", "fail"), ("cert_check", "fail"), ("backup_check", "hang")]:
                        if how == "fail":
                            text = ("CRITICAL: last backup of db01 failed 27h ago (pg_dump: connection refused)\n"
                                    if name == "backup_check" else "WARNING: certificate for www.onb16.test expires in 3 days\n")
                        with br.occurrence(1.0):
                            if how == "fail":
                                write_atomic(os.path.join(work, "mode", f"{name}.fail"), text)
                            else:
                                write_atomic(os.path.join(work, "mode", f"{name}.hang"), "1")
                            time.sleep(5.0)
                        for suffix in ("fail", "hang"):
                            with contextlib.suppress(FileNotFoundError):
                                os.unlink(os.path.join(work, "mode", f"{name}.{suffix}"))
                        time.sleep(9.0 if how == "hang" else 3.0)
                        br.between()
                with br.phase("file_changed"):  # a config file edited / opened up, the uploads directory opened up
                    for how in ["checksum", "permission", "dir_permission", "dir_owner"]:
                        with br.occurrence(1.0):
                            if how == "checksum":
                                with open(nginx_conf, "a") as f:
                                    f.write("# debug\nerror_log /tmp/debug.log debug;\n")
                            elif how == "permission":
                                os.chmod(nginx_conf, 0o666)
                            elif how == "dir_permission":
                                os.chmod(os.path.join(work, "uploads"), 0o777)
                            else:
                                os.chown(os.path.join(work, "uploads"), 65534, 65534)
                            time.sleep(3.0)
                        os.chmod(nginx_conf, 0o644)
                        os.chmod(os.path.join(work, "uploads"), 0o755)
                        os.chown(os.path.join(work, "uploads"), 0, 0)
                        time.sleep(3.0)
                        br.between()
                with br.phase("disk_full"):  # the spool filesystem filled up (space, inodes)
                    for how in ["space", "inodes", "space"]:
                        with br.occurrence(1.0):
                            if how == "space":
                                ns.run(f"dd if=/dev/zero of={spool}/queue.dat bs=1k count=900 2>/dev/null")
                            else:
                                ns.run(f"mkdir -p {spool}/msgs && cd {spool}/msgs && i=0; while [ $i -lt 360 ]; do "
                                       f": > m$i; i=$((i+1)); done")
                            time.sleep(3.0)
                        ns.run(f"rm -rf {spool}/queue.dat {spool}/msgs")
                        time.sleep(3.0)
                        br.between()
                with br.phase("bad_credentials"):  # the web interface with wrong passwords, unknown users, a read-only user acting
                    for who, method in [(("admin", "admin"), "GET"), (("mallory", "letmein"), "GET"), (("ops", ops_pw), "POST"),
                                        (("admin", "Adm1n-Onb15"), "POST")]:
                        with br.occurrence(1.5):
                            http_ui(*who, method, "/webapp" if method == "POST" else "/_status?format=xml", action="stop",
                                    src=rng.choice(HOSTS))
                with br.phase("bad_config_restart"):  # monitrc mistakes, the http port taken, monit restarted
                    blocker = tcp_blocker()
                    good = MONITRC.format(work=work, extra="", admin_pw=admin_pw, ops_pw=ops_pw, py=SYS_PY, **ports)
                    for kw in [{"text": good.replace("check host db01 with address", "check hots db01 with address")},
                               {"mode": 0o644},
                               {"text": good.replace(f"port {ports['hport']} and", f"port {blocker.getsockname()[1]} and")},
                               {"text": good.replace(f'path "{work}/bin/backup_check.sh"',
                                                     f'path "{work}/bin/backup-check.sh"')},
                               {"text": good.replace(f"port {ports['hport']} and use address 127.0.0.1",
                                                     f"port {ports['hport']} and use address 127.0.0.1\n"
                                                     f"    with ssl {{ pemfile: {work}/etc/monit.pem }}")}]:
                        stop()
                        br.between()
                        write_rc(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.0)
                        restart_clean()
                        time.sleep(2.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for t in targets.values():
                t.stop()
    return Source("monit", "Monit", dpkg_version("monit"),
                  "monit's log file (set log), verbose (-v): an ISO time stamp in brackets, a level and a message naming the "
                  "service in quotes: `[2026-12-06T05:40:01+0000] error    : 'api' failed protocol test [HTTP] at "
                  "[127.0.0.1]:40123/api/status [TCP/IP] -- HTTP error: Server returned status 500`, `[...] debug    : 'queue' "
                  "process is running with pid 57`; its stdout / stderr (start-up errors) appended; each service traced by its "
                  "name through its checks, failures, actions (restart, start, stop, monitor) and recovery",
                  "monit -I -v (1 s cycles, in a private pid namespace with a reaper as pid 1; the http interface with an admin "
                  "and a read-only user) checking 5 processes it starts and stops (two HTTP services, a TCP queue, a worker, "
                  "a scheduler), 2 remote hosts (TCP, send/expect), a config file (checksum, permission), a log file (size), "
                  "a directory (permission, owner), 2 check scripts, a spool filesystem (space, inodes) and the system; "
                  "operators running monit status / summary / report / restart / stop / start / monitor / unmonitor / "
                  "reload and dashboards reading the web interface; 2 clean restarts (SIGTERM)",
                  "target_down (3: a checked remote TCP service gone), process_died (4: managed processes SIGKILLed), "
                  "http_check_failed (4: 500, 503, a hang past the timeout, garbage), start_failure (3: a start program "
                  "failing), program_failure (3: check scripts failing or hanging), file_changed (4: a checksum, a "
                  "permission, a directory's permission and owner), disk_full (3: space, inodes), bad_credentials (4: wrong "
                  "passwords, an unknown user, a read-only user acting), bad_config_restart (5: a syntax error, monitrc "
                  "readable by all, the http port taken, a missing check program, a missing SSL certificate file)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# mpd (Music Player Daemon, log_level verbose, its log file)
# --------------------------------------------------------------------------

MPD_CONF = """\
music_directory "{music}"
playlist_directory "{pl}"
db_file "{work}/state/mpd.db"
state_file "{work}/state/mpd.state"
log_file "{log}"
log_level "verbose"
bind_to_address "127.0.0.1"
port "{port}"
max_connections "{maxconn}"
connection_timeout "60"
zeroconf_enabled "no"
auto_update "no"
password "{listen_pw}@read,add,control"
password "{admin_pw}@read,add,control,admin"
default_permissions "read"
{extra}
audio_output {{
  type "null"
  name "Living room"
  mixer_type "software"
  sync "yes"
}}
audio_output {{
  type "pipe"
  name "Archive"
  command "cat > /dev/null"
  format "11025:16:1"
}}
"""
MPD_HEAD = re.compile(r"^[A-Z][a-z]{2} \d\d \d\d:\d\d : ")
mpd_template = templater(MPD_HEAD, (r"\[\d+\]", "[N]"), (r'process command "(\w+).*', r'process command "\1 ARGS"'),
                         (r"^update: (starting|finished)(: .*)?$", r"update: \1: X"),
                         (r"^update: (reading|added|removing|updating|ignoring unrecognized file) .*", r"update: \1 X"),
                         (r'"[^"]*"', '"S"'), (r"'[^']*'", "'S'"), (r"/[\w./ ()-]+", "PATH"),
                         (r"\b(opened from|from) [\d.:]+", r"\1 ADDR"))
MPD_ARTISTS = ["Blue Harbor Trio", "Cobalt Sky", "Ember and the Falcons", "Garnet Juniper", "Indigo Lumen", "Maple Nova",
               "Orchid Quartet", "Raven Sierra", "Tango Umber", "Violet Kestrel"]


def mpd_problem(line: str) -> bool:
    body = MPD_HEAD.sub("", line, count=1)
    if re.match(r"client: \[\d+\] process command ", body):
        return False  # the command a client sent (its words, not mpd's)
    if re.match(r"client: \[\d+\] command returned [1-9]", body):
        return not body.endswith(("returned 1", "returned 4"))  # 1: idle, 4: close
    if body.startswith(("client: Max connections", "client: [")) and "malformed" in body:
        return True
    if "could not get realtime scheduling, continuing anyway" in body:
        return False  # written at every start where mpd may not raise its threads' priority
    return body.startswith("exception: ") or has_problem_word(body)


def mpd_tone(path: str, r: random.Random, secs: float) -> None:
    """A short tone (a .wav through the wave module, an .au written by hand: sndfile decodes both)."""
    rate, freq = 11025, r.choice([220, 262, 294, 330, 349, 392, 440, 494, 523])
    frames = b"".join(struct.pack("<h", int(6000 * math.sin(2 * math.pi * freq * n / rate))) for n in range(int(rate * secs)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path.endswith(".wav"):
        with wave.open(path, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(frames)
    else:
        be = b"".join(frames[i + 1:i + 2] + frames[i:i + 1] for i in range(0, len(frames), 2))
        with open(path, "wb") as f:
            f.write(b".snd" + struct.pack(">IIIII", 24, len(be), 3, rate, 1) + be)


class MpdClient:
    """One MPD protocol connection (from a given local address)."""

    def __init__(self, port: int, src: str = "127.0.0.1", timeout: float = 10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout, source_address=(src, 0))
        self.f = self.sock.makefile("rwb")
        self.f.readline()

    def cmd(self, c: str) -> list[str]:
        self.f.write((c + "\n").encode())
        self.f.flush()
        out = []
        while True:
            line = self.f.readline().decode(errors="replace").rstrip("\n")
            out.append(line)
            if not line or line == "OK" or line.startswith("ACK"):
                return out

    def close(self, say_close: bool = True) -> None:
        with contextlib.suppress(OSError):
            if say_close:
                self.f.write(b"close\n")
                self.f.flush()
        with contextlib.suppress(OSError):
            self.f.close()  # the file object holds the socket open too
            self.sock.close()


def source_mpd(args) -> Source:
    mpd = need("mpd", "mpd")
    rng = random.Random(f"{args.seed}-mpd")
    with tempfile.TemporaryDirectory(prefix="onb16-mpd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        music, pl = os.path.join(work, "music"), os.path.join(work, "playlists")
        os.makedirs(music)
        os.makedirs(pl)
        os.makedirs(os.path.join(work, "state"))
        logp, conf, port = os.path.join(work, "mpd.log"), os.path.join(work, "mpd.conf"), free_port()
        listen_pw, admin_pw = "Listen-Onb16", "Admin-Onb16"
        albums: list[str] = []
        pending: list[str] = []
        for artist in MPD_ARTISTS:
            for _ in range(rng.randint(2, 3)):
                album = f"{artist}/{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} ({rng.randint(1998, 2025)})"
                (albums if rng.random() < 0.7 else pending).append(album)
        tracks: dict[str, list[str]] = {}

        def make_album(album: str, r: random.Random) -> None:
            tracks[album] = []
            ext = r.choice([".wav", ".wav", ".au"])
            for i in range(r.randint(3, 6)):
                rel = f"{album}/{i + 1:02d} - {r.choice(WORDS).title()} {r.choice(WORDS).title()}{ext}"
                mpd_tone(os.path.join(music, rel), r, r.uniform(0.8, 2.2))
                tracks[album].append(rel)

        for album in albums:
            make_album(album, rng)
        uid = pwd.getpwnam("mpd").pw_uid
        subprocess.run(["chown", "-R", "mpd:audio", music, pl, os.path.join(work, "state")], check=True)
        write_atomic(logp, "")
        os.chown(logp, uid, -1)
        ns = Namespace(sv, "mpd-ns", f"mount -t tmpfs -o size=160k,uid={uid},mode=0755 tmpfs {pl}")

        def write_conf(p: int | None = None, extra: str = "", maxconn: int = 24, text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else MPD_CONF.format(
                music=music, pl=pl, work=work, log=logp, port=p or port, maxconn=maxconn, listen_pw=listen_pw,
                admin_pw=admin_pw, extra=extra))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what mpd says before its log file is open (and why it cannot start)
                sv.start("mpd", ns.argv(["setpriv", "--reuid=mpd", "--regid=audio", "--init-groups", mpd, "--no-daemon", conf]),
                         stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("mpd", signal.SIGTERM, 15)

        def client(src: str | None = None) -> MpdClient | None:
            try:
                return MpdClient(port, src or rng.choice(HOSTS))
            except OSError:
                return None

        locks = threading.Lock()
        saved: list[str] = []

        def session(r: random.Random) -> None:
            c = None
            with contextlib.suppress(OSError, Exception):
                c = MpdClient(port, r.choice(HOSTS))
            if c is None:
                return
            try:
                a = r.random()
                if a < 0.22:  # someone puts an album on
                    album = r.choice(albums)
                    c.cmd(f"password {listen_pw}")
                    c.cmd("clear")
                    c.cmd(f'add "{album}"')
                    if r.random() < 0.3:
                        c.cmd(f"random {r.randint(0, 1)}")
                    c.cmd("play")
                    c.cmd("status")
                    if r.random() < 0.5:
                        c.cmd(f"setvol {r.choice([30, 40, 55, 60, 70, 85])}")
                    c.cmd("currentsong")
                elif a < 0.36:  # queueing tracks
                    c.cmd(f"password {listen_pw}")
                    album = r.choice(albums)
                    for t in r.sample(tracks[album], min(len(tracks[album]), r.randint(1, 3))):
                        c.cmd(f'add "{t}"')
                    c.cmd("playlistinfo")
                    if r.random() < 0.4:
                        c.cmd("play")
                elif a < 0.56:  # a phone browsing the library
                    artist = r.choice(MPD_ARTISTS)
                    for q in r.sample([f'lsinfo "{artist}"', "lsinfo", f'listall "{artist}"', f"search any {r.choice(WORDS)}",
                                       f'find base "{artist}"', f'count base "{artist}"', "stats", "list album",
                                       f'lsinfo "{r.choice(albums)}"', "listplaylists"], r.randint(2, 4)):
                        c.cmd(q)
                elif a < 0.72:  # the remote: pause, skip, volume
                    c.cmd(f"password {listen_pw}")
                    playing = "state: play" in c.cmd("status")
                    for _ in range(r.randint(1, 3)):
                        if playing:
                            q = r.choice([["pause 1", "pause 0"], ["next"], ["previous"], ["setvol 45"], ["currentsong"]])
                        else:
                            q = r.choice([["play"], ["setvol 65"], ["consume 0"], ["repeat 1"], ["repeat 0"], ["single 0"]])
                        for x in q:
                            c.cmd(x)
                        playing = playing or q == ["play"]
                    c.cmd("status")
                elif a < 0.82:  # stored playlists
                    c.cmd(f"password {listen_pw}")
                    with locks:
                        name = f"{r.choice(ACCOUNTS)}-{r.choice(WORDS)}-{r.randint(100, 999)}"
                        if name not in saved and len(saved) < 12:
                            if c.cmd(f'save "{name}"')[-1] == "OK":
                                saved.append(name)
                        elif saved:
                            name = r.choice(saved)
                            c.cmd(f'listplaylistinfo "{name}"')
                            if r.random() < 0.5:
                                c.cmd(f'load "{name}"')
                            else:
                                c.cmd(f'rm "{name}"')
                                saved.remove(name)
                        c.cmd("listplaylists")
                elif a < 0.92:  # the status bar waiting for changes
                    c.cmd("status")
                    c.f.write(b"idle player mixer playlist\n")
                    c.f.flush()
                    time.sleep(r.uniform(0.3, 1.5))
                    c.cmd("noidle")
                    c.cmd("currentsong")
                else:  # the admin
                    c.cmd(f"password {admin_pw}")
                    b = r.random()
                    with locks:
                        if b < 0.4 and pending:  # a new album copied in, the library updated
                            album = pending.pop(0)
                            make_album(album, r)
                            subprocess.run(["chown", "-R", "mpd:audio", os.path.join(music, album.split("/")[0])], check=False)
                            c.cmd(f'update "{album.split("/")[0]}"')
                            time.sleep(0.5)
                            albums.append(album)
                        elif b < 0.6:
                            c.cmd("outputs")
                            c.cmd(f"disableoutput {1}")
                            time.sleep(0.3)
                            c.cmd(f"enableoutput {1}")
                        else:
                            c.cmd(r.choice(["stats", "replay_gain_status", "outputs", "tagtypes", "urlhandlers"]))
                            if r.random() < 0.3:
                                c.cmd("update")
            except OSError:
                pass
            finally:
                c.close(r.random() < 0.8)

        write_conf()
        start()
        c0 = client("127.0.0.8")
        if c0:
            c0.cmd(f"password {admin_pw}")
            c0.cmd("update")
            time.sleep(2.0)
            c0.close()
        log = FileLog(logp)
        say(f"mpd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(session, random.Random(rng.random()), 1, 3))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.05, 0.2))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        def one(cmds: list[str], src: str | None = None, raw: bytes | None = None) -> None:
            c = client(src)
            if c is None:
                return
            with contextlib.suppress(OSError):
                for q in cmds:
                    c.cmd(q)
                if raw is not None:
                    c.sock.sendall(raw)
                    time.sleep(0.3)
            c.close(raw is None)

        try:
            normal = normal_loop(args, log, "mpd", round_fn)
            templates = {mpd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, mpd_template, mpd_problem))
            with Background(session, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("auth_failure"):  # wrong passwords, then commands the default permissions do not allow
                    for pw, then in [("listen-onb16", "play"), ("Admin-Onb15", "update"), ("hunter2", "clear"), ("", "setvol 80"),
                                     ("listen_onb16", "add \"Cobalt Sky\"")]:
                        with br.occurrence(1.0):
                            one([f"password {pw}" if pw else "password", then])
                with br.phase("bad_command"):  # unknown commands, broken quoting, bad arguments, binary junk
                    for cmds, raw in [(["plya"], None), (['add "Cobalt Sky'], None), (["setvol loud"], None),
                                      (["play 9999"], None), ([], TLS_HELLO + b"\n"), (["status extra args here"], None)]:
                        with br.occurrence(1.0):
                            one([f"password {listen_pw}"] + cmds, raw=raw)
                with br.phase("missing_media"):  # paths and playlists that are not there
                    for cmds in [['add "Nobody Famous/Greatest Hits"'], ['load "party-mix-2019"'], ['lsinfo "Unknown Artist"'],
                                 ['playlistadd "party-mix-2019" "Cobalt Sky/none.wav"'], ['rm "old-mix"']]:
                        with br.occurrence(1.0):
                            one([f"password {listen_pw}"] + cmds)
                with br.phase("file_vanished"):  # queued tracks deleted / unreadable on disk, an album directory unreadable
                    for how in ["deleted", "unreadable", "dir_unreadable", "deleted"]:
                        album = rng.choice(albums)
                        track = rng.choice(tracks[album])
                        path = os.path.join(music, track)
                        with br.occurrence(3.0):
                            if how == "deleted":
                                os.rename(path, path + ".gone")
                            elif how == "unreadable":
                                os.chmod(path, 0o000)
                            else:
                                os.chmod(os.path.join(music, album), 0o000)
                            if how == "dir_unreadable":
                                one([f"password {admin_pw}", f'update "{album}"'], "127.0.0.8")
                            else:
                                one([f"password {listen_pw}", "clear", f'add "{track}"', "play"])
                        if how == "deleted":
                            os.rename(path + ".gone", path)
                        os.chmod(path, 0o644)
                        os.chmod(os.path.join(music, album), 0o755)
                        if how == "dir_unreadable":
                            one([f"password {admin_pw}", f'update "{album}"'], "127.0.0.8")
                        time.sleep(1.0)
                        br.between()
                with br.phase("corrupt_media"):  # broken files copied into the library, then the library updated
                    junk = {".flac": b"fLaC" + bytes(range(256)) * 12, ".ogg": b"OggS" + bytes(range(255, 0, -1)) * 12,
                            ".mp3": b"ID3\x03\x00\x00\x00\x00\x00\x10" + bytes(rng.getrandbits(8) for _ in range(3000)),
                            ".wav": b"RIFF\x10\x00\x00\x00WAVEfmt " + bytes(rng.getrandbits(8) for _ in range(200))}
                    for i, ext in enumerate([".flac", ".ogg", ".mp3", ".wav"]):
                        artist = rng.choice(MPD_ARTISTS)
                        rel = f"{artist}/Uploads/{i + 1:02d} - {rng.choice(WORDS).title()}{ext}"
                        with br.occurrence(2.5):
                            os.makedirs(os.path.join(music, artist, "Uploads"), exist_ok=True)
                            with open(os.path.join(music, rel), "wb") as f:
                                f.write(junk[ext])
                            subprocess.run(["chown", "-R", "mpd:audio", os.path.join(music, artist)], check=False)
                            one([f"password {admin_pw}", f'update "{artist}/Uploads"'], "127.0.0.8")
                        shutil.rmtree(os.path.join(music, artist, "Uploads"), ignore_errors=True)
                        one([f"password {admin_pw}", f'update "{artist}"'], "127.0.0.8")
                        time.sleep(1.0)
                        br.between()
                with br.phase("too_many_clients"):  # more connections than max_connections
                    for _ in range(3):
                        with br.occurrence(1.5):
                            held = [c for c in (client() for _ in range(30)) if c is not None]
                            time.sleep(1.0)
                            for c in held:
                                c.close(False)
                        time.sleep(3.0)
                        br.between()
                with br.phase("disk_full"):  # the playlist directory's filesystem full when playlists are saved
                    for i in range(3):
                        ns.run(f"setpriv --reuid=mpd --regid=audio --clear-groups dd if=/dev/zero of={pl}/.fill bs=1k count=400 "
                               f"2>/dev/null")
                        br.between()
                        with br.occurrence(1.5):
                            one([f"password {listen_pw}", "clear", f'add "{rng.choice(albums)}"',
                                 f'save "{rng.choice(ACCOUNTS)}-weekend-{i}"'])
                        ns.run(f"rm -f {pl}/.fill")
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_config_restart"):  # mpd.conf mistakes, the port taken, mpd restarted
                    blocker = tcp_blocker()
                    good = MPD_CONF.format(music=music, pl=pl, work=work, log=logp, port=port, maxconn=24,
                                           listen_pw=listen_pw, admin_pw=admin_pw, extra="")
                    for kw in [{"p": blocker.getsockname()[1]}, {"extra": 'audio_buffer_size "lots"'},
                               {"text": good.replace(f'db_file "{work}/state/mpd.db"', f'db_file "{work}/var/lib/mpd/mpd.db"')},
                               {"text": good.replace('type "null"', 'type "alsa-loopback"')},
                               {"extra": 'audio_output {\n  type "null"\n'}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.0)
                            one(["status"])
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("mpd", "Music Player Daemon (mpd)", dpkg_version("mpd"),
                  "mpd's log file at log_level verbose, a day-first date to the minute without the year, a domain and a "
                  "message: `Dec 06 05:40 : client: [12] opened from 127.0.0.3:51234`, `Dec 06 05:40 : client: [12] process "
                  "command \"add \\\"Cobalt Sky/Quartz Nova (2011)\\\"\"`, `Dec 06 05:40 : client: [12] command returned 0`, "
                  "`Dec 06 05:40 : player: played \"Cobalt Sky/Quartz Nova (2011)/02 - Raven Tango.wav\"`; what it writes to "
                  "stderr before its log file is open (a failed start) appended; each client traced by its number from "
                  "opened through its commands to closed, each track from queued through decoding to played",
                  "mpd --no-daemon (as mpd, a library of 10 artists' albums of .wav / .au tones, a null output with a software "
                  "mixer and a pipe output, two passwords) with clients on 8 addresses putting albums on, queueing tracks, "
                  "browsing the library (lsinfo, listall, search, find, count, list, stats), pausing, skipping, setting the "
                  "volume, saving / loading / removing stored playlists, waiting in idle, an admin copying in new albums and "
                  "updating the library, toggling an output; 2 clean restarts (SIGTERM)",
                  "auth_failure (5: wrong passwords, then a command the default permission does not allow), bad_command (6: an "
                  "unknown command, broken quoting, a bad number, a bad song index, binary junk, too many arguments), "
                  "missing_media (5: paths and stored playlists that are not there), file_vanished (4: queued tracks deleted "
                  "or unreadable, an album directory unreadable at an update), corrupt_media (4: junk .flac / .ogg / .mp3 / "
                  ".wav files found by an update), too_many_clients (3: 30 connections over max_connections 24), disk_full "
                  "(3: the playlist filesystem full at a save), bad_config_restart (5: the port taken, a bad buffer size, a "
                  "database file in a missing directory, an unknown output plugin, an unclosed block)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# carbon (graphite-carbon's carbon-cache, its console on stdout)
# --------------------------------------------------------------------------

CARBON_CONF = """\
[cache]
STORAGE_DIR = {work}/storage/
LOCAL_DATA_DIR = {work}/storage/whisper/
WHITELISTS_DIR = {work}/storage/lists/
CONF_DIR = {work}/conf/
LOG_DIR = {work}/log/
PID_DIR = {work}/run/
ENABLE_LOGROTATION = False
USER =
MAX_CACHE_SIZE = {max_cache}
MAX_UPDATES_PER_SECOND = 2000
MAX_CREATES_PER_MINUTE = 600
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = {line}
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = {pickle}
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = {query}
USE_FLOW_CONTROL = True
LOG_LISTENER_CONNECTIONS = True
LOG_UPDATES = True
LOG_CREATES = True
LOG_CACHE_HITS = True
LOG_CACHE_QUEUE_SORTS = True
CACHE_WRITE_STRATEGY = sorted
WHISPER_AUTOFLUSH = False
WHISPER_FALLOCATE_CREATE = True
CARBON_METRIC_INTERVAL = 10
ENABLE_TAGS = False
{extra}"""
CARBON_SCHEMAS = """\
[carbon]
pattern = ^carbon\\.
retentions = 10s:1h

[servers]
pattern = ^servers\\.
retentions = 10s:1h,1m:1d

[stats]
pattern = ^stats\\.
retentions = 10s:2h

[default]
pattern = .*
retentions = 1m:1d
"""
CARBON_AGGREGATION = """\
[count]
pattern = \\.count$
xFilesFactor = 0
aggregationMethod = sum

[upper]
pattern = \\.upper(_\\d+)?$
xFilesFactor = 0.1
aggregationMethod = max

[default]
pattern = .*
xFilesFactor = 0.5
aggregationMethod = average
"""
CARBON_HEAD = re.compile(r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d :: ")
carbon_template = templater(CARBON_HEAD, (r"\b(servers|stats|carbon)\.[\w.-]+", r"\1.METRIC"), (r"\[[^\]]*\]$", "[LINE]"),
                            (r"\b\d+\.\d+\.\d+\.\d+:\d+\b", "ADDR"), (r"0x[0-9a-f]+", "0x0"), (r"/[\w./-]+", "PATH"),
                            (r'"[^"]*"', '"S"'))
CARBON_ROLES = ["web", "api", "db", "cache", "mq", "lb"]
CARBON_PROBLEM = PROBLEM_WORDS + r"|traceback|exception|errno|permission|no space|full|dropping|unsafe"


def carbon_problem(line: str) -> bool:
    body = CARBON_HEAD.sub("", line, count=1)
    if re.match(r"\[(updates|creates)\] (wrote|new metric|creating database)", body):
        return False  # names of metrics are the clients' words, not carbon's
    return has_problem_word(body, CARBON_PROBLEM) or body.startswith(("Traceback", "  File "))


def carbon_head(line: str) -> bool:
    return bool(CARBON_HEAD.match(line)) or line.startswith(("Traceback", "/usr/", "Starting carbon"))


def carbon_send(port: int, data: bytes, src: str = "127.0.0.1", wait: float = 0.0) -> None:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
        s.sendall(data)
        if wait:
            time.sleep(wait)


def carbon_pickle(points: list) -> bytes:
    payload = pickle.dumps(points, protocol=2)
    return struct.pack("!L", len(payload)) + payload


def carbon_query(port: int, request: dict | bytes, src: str = "127.0.0.1") -> None:
    data = request if isinstance(request, bytes) else carbon_pickle(request)  # type: ignore[arg-type]
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
        s.sendall(data)
        s.settimeout(2)
        with contextlib.suppress(OSError):
            s.recv(65536)


def source_carbon(args) -> Source:
    carbon_cache = need("carbon-cache", "graphite-carbon")
    rng = random.Random(f"{args.seed}-carbon")
    with tempfile.TemporaryDirectory(prefix="onb16-carbon-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("storage/whisper", "storage/lists", "conf", "log", "run"):
            os.makedirs(os.path.join(work, d))
        whisper = os.path.join(work, "storage", "whisper")
        logp, conf = os.path.join(work, "carbon-cache.log"), os.path.join(work, "conf", "carbon.conf")
        ports = {"line": free_port(), "pickle": free_port(), "query": free_port()}
        write_atomic(os.path.join(work, "conf", "storage-schemas.conf"), CARBON_SCHEMAS)
        write_atomic(os.path.join(work, "conf", "storage-aggregation.conf"), CARBON_AGGREGATION)
        uid = pwd.getpwnam("_graphite").pw_uid
        subprocess.run(["chown", "-R", "_graphite:_graphite", os.path.join(work, "storage"), os.path.join(work, "log"),
                        os.path.join(work, "run")], check=True)
        ns = Namespace(sv, "carbon-ns", f"mount -t tmpfs -o size=12m,uid={uid},mode=0755 tmpfs {whisper}")
        hosts = [f"{role}{i:02d}" for role in CARBON_ROLES for i in range(1, 5)]
        online = hosts[:14]

        def write_conf(extra: str = "", max_cache: str = "inf", text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else CARBON_CONF.format(work=work, extra=extra, max_cache=max_cache,
                                                                                **(ports | kw)))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("carbon", ns.argv(["setpriv", "--reuid=_graphite", "--regid=_graphite", "--clear-groups", carbon_cache,
                                            f"--config={conf}", "--nodaemon", f"--pidfile={work}/run/carbon-cache.pid",
                                            "start"]), stdout=logf, stderr=logf, cwd=work)
            if wait:
                if not log_has(logp, b"starting on %d" % ports["line"], since, 30):
                    raise RuntimeError("carbon-cache did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("carbon", signal.SIGTERM, 15)

        def host_lines(r: random.Random, host: str, ts: int) -> list[str]:
            m = {"cpu.user": r.uniform(1, 70), "cpu.system": r.uniform(0.5, 20), "cpu.iowait": r.uniform(0, 8),
                 "load.1m": r.uniform(0.05, 6), "memory.used_pct": r.uniform(20, 85), "disk.root.used_pct": r.uniform(30, 80)}
            if r.random() < 0.6:
                m |= {"net.eth0.rx_bytes": r.randint(10 ** 5, 10 ** 8), "net.eth0.tx_bytes": r.randint(10 ** 5, 10 ** 8)}
            if host.startswith(("web", "lb")):
                m |= {"nginx.requests.count": r.randint(100, 9000), "nginx.active": r.randint(1, 400)}
            if host.startswith("db"):
                m |= {"postgres.connections": r.randint(5, 180), "postgres.tx.count": r.randint(100, 20000)}
            keys = r.sample(sorted(m), r.randint(4, len(m)))
            return [f"servers.{host}.{k} {m[k]:.3f} {ts}" if isinstance(m[k], float) else f"servers.{host}.{k} {m[k]} {ts}"
                    for k in keys]

        def app_lines(r: random.Random, ts: int) -> list[str]:
            app = r.choice(["shop", "auth", "search"])
            out = [f"stats.counters.{app}.{k}.count {r.randint(0, 300)} {ts}"
                   for k in r.sample(["orders.paid", "orders.refunded", "logins", "signups", "errors.http_500", "cart.add"], 3)]
            out += [f"stats.timers.{app}.{k}.{s} {r.uniform(5, 900):.1f} {ts}"
                    for k in r.sample(["checkout", "login", "query"], 1) for s in ("mean", "upper_90", "count")]
            return out

        known: list[str] = []

        def client(r: random.Random) -> None:
            a = r.random()
            ts = int(time.time())
            if a < 0.45:  # collectd / diamond agents flushing over the plaintext protocol
                lines = []
                for h in r.sample(online, r.randint(1, 3)):
                    lines += host_lines(r, h, ts)
                known.extend(x.split()[0] for x in lines[:2])
                carbon_send(ports["line"], ("\n".join(lines) + "\n").encode(), r.choice(HOSTS))
            elif a < 0.6:  # statsd flushing application metrics
                carbon_send(ports["line"], ("\n".join(app_lines(r, ts)) + "\n").encode(), "127.0.0.9")
            elif a < 0.75:  # a carbon-relay forwarding batches with the pickle protocol
                pts = []
                for h in r.sample(online, r.randint(2, 4)):
                    pts += [(x.split()[0], (ts, float(x.split()[1]))) for x in host_lines(r, h, ts)]
                carbon_send(ports["pickle"], carbon_pickle(pts), "127.0.0.2")
            elif a < 0.97:  # graphite-web asking the cache for recent points
                if known:
                    if r.random() < 0.7:
                        carbon_query(ports["query"], {"type": "cache-query", "metric": r.choice(known)}, "127.0.0.3")
                    elif r.random() < 0.7:
                        carbon_query(ports["query"], {"type": "cache-query-bulk", "metrics": r.sample(known, min(len(known), 5))},
                                     "127.0.0.3")
                    else:
                        carbon_query(ports["query"], {"type": "get-metadata", "metric": r.choice(known),
                                                      "key": "aggregationMethod"}, "127.0.0.3")
            elif len(online) < len(hosts):  # a new server comes online
                online.append(hosts[len(online)])
            del known[:-400]

        write_conf()
        start()
        log = FileLog(logp)
        say(f"carbon-cache on 127.0.0.1:{ports['line']} / {ports['pickle']} / {ports['query']}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 4))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.1, 0.4))

        def restart_clean() -> None:
            stop()
            write_conf()
            write_atomic(os.path.join(work, "conf", "storage-schemas.conf"), CARBON_SCHEMAS)
            start()

        def legacy(i: int, metric: str, value: float) -> bytes:
            return f"servers.legacy{i:02d}.{metric} {value} {int(time.time())}\n".encode()

        try:
            normal = normal_loop(args, log, "carbon", round_fn)
            templates = {carbon_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, carbon_template, carbon_problem, head=carbon_head))
            # a retired server's metrics exist on disk; the breakages write to them, the background never does
            for i in range(1, 7):
                carbon_send(ports["line"], legacy(i, "cpu.user", 3.0) + legacy(i, "load.1m", 0.2), "127.0.0.4")
            time.sleep(2.0)
            br.between()
            with Background(client, random.Random(rng.random()), (0.2, 0.5)):
                with br.phase("invalid_line"):  # plaintext lines carbon cannot parse
                    for data in [b"servers.web01.cpu.user\n", f"servers.web02.cpu.user high {int(time.time())}\n".encode(),
                                 b"servers.db01.load.1m 0.5 yesterday\n", f"servers.web 01.cpu.user 5 {int(time.time())}\n".encode(),
                                 bytes(rng.getrandbits(8) for _ in range(120)) + b"\n"]:
                        with br.occurrence(1.5):
                            carbon_send(ports["line"], data, rng.choice(HOSTS))
                with br.phase("invalid_pickle"):  # pickle frames that are not pickles, an unsafe pickle, a wrong structure
                    evil = b"cos\nsystem\n(S'touch /tmp/pwned'\ntR."
                    for data in [struct.pack("!L", 64) + bytes(rng.getrandbits(8) for _ in range(64)),
                                 struct.pack("!L", len(evil)) + evil, carbon_pickle({"servers.web01.cpu.user": 5}),
                                 carbon_pickle([("servers.web03.cpu.user", 5.0)])]:
                        with br.occurrence(1.5):
                            carbon_send(ports["pickle"], data, "127.0.0.2", wait=0.3)
                with br.phase("bad_query"):  # requests the cache-query port cannot answer
                    for req in [{"type": "get-metadata", "metric": "servers.nosuch01.cpu.user", "key": "aggregationMethod"},
                                struct.pack("!L", 20) + b"GET / HTTP/1.1\r\n\r\n\0\0", {"metric": "servers.web01.cpu.user"},
                                {"type": "set-metadata", "metric": "servers.web01.cpu.user", "key": "aggregationMethod",
                                 "value": "median"}]:
                        with br.occurrence(1.5):
                            carbon_query(ports["query"], req, "127.0.0.3")
                with br.phase("disk_full"):  # the whisper filesystem full when new metrics arrive
                    ns.run(f"dd if=/dev/zero of={whisper}/.fill bs=64k count=400 2>/dev/null")
                    for i in range(3):
                        with br.occurrence(3.0):
                            carbon_send(ports["line"], "".join(
                                f"servers.newbox{i + 1:02d}.{k} {rng.uniform(1, 50):.2f} {int(time.time())}\n"
                                for k in ("cpu.user", "cpu.system", "memory.used_pct")).encode(), rng.choice(HOSTS))
                    ns.run(f"rm -f {whisper}/.fill")
                    time.sleep(3.0)
                    br.between()
                with br.phase("permission_denied"):  # a metric directory made unreadable by the carbon user
                    for i in (1, 2, 3):
                        d = os.path.join(whisper, "servers", f"legacy{i:02d}")
                        with br.occurrence(3.0):
                            ns.run(f"chmod 000 {d}")
                            carbon_send(ports["line"], legacy(i, "cpu.user", 4.0) + legacy(i, "cpu.system", 1.5), "127.0.0.4")
                        ns.run(f"chmod 755 {d}")
                        time.sleep(2.0)
                        br.between()
                with br.phase("corrupt_whisper"):  # a whisper file truncated / overwritten on disk
                    for i, how in [(4, "truncate"), (5, "zero"), (6, "junk")]:
                        f = os.path.join(whisper, "servers", f"legacy{i:02d}", "load", "1m.wsp")
                        with br.occurrence(3.0):
                            if how == "truncate":
                                ns.run(f"truncate -s 10 {f}")
                            elif how == "zero":
                                ns.run(f"dd if=/dev/zero of={f} bs=1k count=2 conv=notrunc 2>/dev/null")
                            else:
                                ns.run(f"head -c 3000 /dev/urandom | dd of={f} conv=notrunc 2>/dev/null")
                            carbon_send(ports["line"], legacy(i, "load.1m", 0.7), "127.0.0.4")
                        ns.run(f"rm -f {f}")
                        time.sleep(1.0)
                        br.between()
                with br.phase("bad_config_restart"):  # carbon.conf / storage-schemas.conf mistakes, a port taken
                    blocker = tcp_blocker()
                    for kw in [{"line": blocker.getsockname()[1]}, {"max_cache": "lots"},
                               {"schemas": CARBON_SCHEMAS.replace("10s:1h,1m:1d", "10s:1h,1x:1d")},
                               {"schemas": CARBON_SCHEMAS.replace("pattern = ^stats\\.", "pattern = ^stats\\.(")},
                               {"text": CARBON_CONF.format(work=work, extra="", max_cache="inf", **ports).replace(
                                   "LINE_RECEIVER_INTERFACE = 127.0.0.1", "LINE_RECEIVER_INTERFACE = 10.255.255.1")}]:
                        stop()
                        br.between()
                        if "schemas" in kw:
                            write_atomic(os.path.join(work, "conf", "storage-schemas.conf"), kw.pop("schemas"))
                        write_conf(**kw)
                        with br.occurrence(4.0):
                            start(wait=False)
                            time.sleep(3.0)
                            client(rng)
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("carbon", "Graphite carbon-cache", dpkg_version("graphite-carbon"),
                  "carbon-cache's console (--nodaemon: its log on stdout, Python warnings and tracebacks on stderr), a "
                  "day-first date, '::' and a bracketed facility: `06/12/2026 05:40:01 :: [listener] MetricLineReceiver "
                  "connection with 127.0.0.3:51234 established`, `... :: [creates] creating database metric servers.web03.cpu.user "
                  "(archive=[(10, 360), (60, 1440)] xff=None agg=None)`, `... :: [updates] wrote 3 datapoints for "
                  "servers.web03.cpu.user in 0.00012 seconds`, `... :: [query] [127.0.0.3:40001] cache query for "
                  "\"servers.db01.load.1m\" returned 2 values`; each metric traced by its name from a receiver's connection "
                  "through schema matching and creation to its writes and cache queries",
                  "carbon-cache --nodaemon (as _graphite, whisper files on a 12 MB tmpfs in a private mount namespace, "
                  "connection / update / create / cache-hit / queue-sort logging) with agents on 8 addresses sending "
                  "cpu / load / memory / disk / net / nginx / postgres metrics of up to 24 servers (new servers coming online) "
                  "over the plaintext protocol, statsd flushing application counters and timers, a relay sending pickled "
                  "batches, graphite-web asking the cache (cache-query, cache-query-bulk, get-metadata); 2 clean restarts "
                  "(SIGTERM)",
                  "invalid_line (5: a missing value, a non-numeric value, a bad timestamp, a space in the name, binary junk), "
                  "invalid_pickle (4: junk frames, an unsafe pickle, a dict, a value without its timestamp), bad_query (4: the "
                  "metadata of a metric that does not exist, junk, a request without a type, a metadata change), disk_full (3: the whisper filesystem full for new metrics), "
                  "permission_denied (3: a metric directory made unreadable), corrupt_whisper (3: whisper files truncated, "
                  "zeroed, overwritten), bad_config_restart (5: the port taken, a bad MAX_CACHE_SIZE, a bad retention, a "
                  "bad schema pattern, a receiver address not on this host)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# nghttpx (nghttp2's HTTP/2 reverse proxy, error log at INFO + access log in one file)
# --------------------------------------------------------------------------

NGHTTPX_CONF = """\
frontend=127.0.0.1,{p_plain};no-tls
frontend=127.0.0.1,{p_tls}
backend=127.0.0.1,{b_site};/;proto=http/1.1
backend=127.0.0.1,{b_api1};/api/;proto=http/1.1
backend=127.0.0.1,{b_api2};/api/;proto=http/1.1
backend=127.0.0.1,{b_static};static.onb16.test/;proto=http/1.1
private-key-file={work}/tls/server.key
certificate-file={work}/tls/server.crt
no-ocsp=yes
errorlog-file={log}
accesslog-file={log}
accesslog-format=$remote_addr - - [$time_iso8601] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" \
$alpn $tls_protocol backend=$backend_host:$backend_port rt=$request_time
log-level=INFO
workers=1
backend-read-timeout=3s
backend-connect-timeout=2s
backend-keep-alive-timeout=2s
worker-frontend-connections={maxconn}
add-x-forwarded-for=yes
server-name=onb16-edge
{extra}"""
NGHTTPX_HEAD = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z \d+ \d+ [0-9a-f]+ (?P<lvl>[A-Z]+) ")
NGHTTPX_ACCESS = re.compile(r'^[\d.]+ - - \[[^\]]+\] "[^"]*" (\d{3}) ')
nghttpx_template = templater(re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z \d+ \d+ [0-9a-f]+ |^[\d.]+ - - \[[^\]]+\] "),
                             (r"\b(0x[0-9a-f]+|[0-9a-f]{16,})\b", "HEX"), (r'"(GET|POST|PUT|DELETE|HEAD) [^"]*"', r'"\1 URL"'),
                             (r"^[A-Z]+ \S+ HTTP/[\d.]+$", "METHOD URL HTTP"), (r"^HTTP/[\d.]+ \d+ .*", "HTTP STATUS"), (r"^([:\w-]+): .*", r"\1: V"),
                             (r"\b(session_id|stream_id|fd|client_fd|path|host|matched pattern)=\S*", r"\1=V"),
                             (r'"[^"]*"', '"S"'), (r"/[\w./-]+", "PATH"))
NGHTTPX_UAS = ["Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
               "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
               "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
               "shop-ios/4.2.1 (iPhone; iOS 17.2)", "okhttp/4.12.0", "python-requests/2.31.0", "Prometheus/2.45.0"]


def nghttpx_problem(line: str) -> bool:
    m = NGHTTPX_ACCESS.match(line)
    if m:
        return int(m.group(1)) >= 400
    m = NGHTTPX_HEAD.match(line)
    if m:  # an idle pooled backend connection closed after backend-keep-alive-timeout is routine
        return m.group("lvl") in ("WARN", "ERROR", "FATAL") or (has_problem_word(line[m.end():])
                                                                and "Idle connection timeout" not in line)
    return has_problem_word(line) and not re.match(r"^[\w-]+: ", line)  # header dump lines are the clients' words


def nghttpx_head(line: str) -> bool:
    return bool(NGHTTPX_HEAD.match(line) or NGHTTPX_ACCESS.match(line)) or line.startswith(("nghttpx:", "Usage:"))


class ShopBackend(QuietHandler):
    """The shop's backends behind nghttpx: the site, the API (two of them), the static host; modes ok / hang / reset."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.server.owner.conns.add(self.connection)

    def finish(self):
        self.server.owner.conns.discard(self.connection)
        super().finish()

    def route(self, method: str) -> None:
        mode = self.server.owner.mode
        if mode == "hang":
            time.sleep(6)
            return
        if mode == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        path = self.path.split("?")[0]
        kind = self.server.owner.kind
        if self.headers.get("If-None-Match") == '"v42"':
            self.send_response(304)
            self.send_header("ETag", '"v42"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if kind == "site" and path == "/shop":
            self.send_response(301)
            self.send_header("Location", "/products")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "DELETE":
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        code = 201 if method == "POST" else 200
        if kind == "api":
            body = json.dumps({"path": path, "items": [{"id": i, "price": i * 3 + 0.99} for i in range(len(path) % 7)]}).encode()
            ctype = "application/json"
        elif path.startswith(("/static/", "/img/", "/fonts/")):
            body, ctype = b"x" * (len(path) * 37), "application/octet-stream"
        else:
            body = (f"<html><head><link rel=stylesheet href=/static/app.css><script src=/static/app.js></script></head>"
                    f"<body><h1>{path}</h1><img src=/static/img/{len(path)}.png></body></html>").encode()
            ctype = "text/html"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("ETag", '"v42"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        self.route("GET")

    def do_HEAD(self):
        self.route("HEAD")

    def do_POST(self):
        self.route("POST")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")


def source_nghttpx(args) -> Source:
    nghttpx = need("nghttpx", "nghttp2-proxy")
    nghttp, curl = need("nghttp", "nghttp2-client"), need("curl", "curl")
    openssl = need("openssl", "openssl")
    rng = random.Random(f"{args.seed}-nghttpx")
    with tempfile.TemporaryDirectory(prefix="onb16-nghttpx-") as work, Group() as sv:
        os.chmod(work, 0o755)
        os.makedirs(os.path.join(work, "tls"))
        logp, conf = os.path.join(work, "nghttpx.log"), os.path.join(work, "nghttpx.conf")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "90", "-subj", "/CN=www.onb16.test",
                        "-addext", "subjectAltName=DNS:www.onb16.test,DNS:static.onb16.test,DNS:api.onb16.test",
                        "-keyout", os.path.join(work, "tls", "server.key"), "-out", os.path.join(work, "tls", "server.crt")],
                       check=True, capture_output=True)
        backends = {name: ModeServer(ShopBackend, kind=kind) for name, kind in
                    [("b_site", "site"), ("b_api1", "api"), ("b_api2", "api"), ("b_static", "static")]}
        for b in backends.values():
            b.kind, b.conns = b.attrs["kind"], set()
            b.start()

        def down(name: str) -> None:
            """The backend stopped: its listening socket and its kept-alive connections (nghttpx's pool) closed."""
            backends[name].stop()
            for c in list(backends[name].conns):
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)
        ports = {"p_plain": free_port(), "p_tls": free_port()} | {k: b.port for k, b in backends.items()}

        def write_conf(extra: str = "", maxconn: int = 64, text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else NGHTTPX_CONF.format(work=work, log=logp, extra=extra,
                                                                                 maxconn=maxconn, **(ports | kw)))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what it says before its log is open (a bad configuration) next to it
                sv.start("nghttpx", [nghttpx, f"--conf={conf}"], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(ports["p_plain"], 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("nghttpx", signal.SIGTERM, 15)

        pages = ["/", "/products", "/products/{n}", "/cart", "/about", "/shop", "/products?page={n}", "/search?q={w}",
                 "/blog/{w}-{n}", "/account/orders"]
        api = [("GET", "/api/products?page={n}"), ("GET", "/api/products/{n}"), ("POST", "/api/orders"), ("PUT", "/api/cart/{n}"),
               ("DELETE", "/api/cart/{n}"), ("GET", "/api/health"), ("GET", "/api/users/{u}/orders"), ("POST", "/api/search")]

        def fill(t: str, r: random.Random) -> str:
            return t.format(n=r.randint(1, 400), w=r.choice(WORDS), u=r.choice(ACCOUNTS))

        def h1(r: random.Random, reqs: list[tuple], tls: bool = False, src: str | None = None, host: str = "www.onb16.test",
               ua: str | None = None, timeout: float = 10) -> None:
            src = src or r.choice(HOSTS)
            if tls:
                ctx = ssl.create_default_context()
                ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
                conn = http.client.HTTPSConnection("127.0.0.1", ports["p_tls"], timeout=timeout, context=ctx,
                                                   source_address=(src, 0))
            else:
                conn = http.client.HTTPConnection("127.0.0.1", ports["p_plain"], timeout=timeout, source_address=(src, 0))
            try:
                for method, path, body, hdrs in reqs:
                    h = {"Host": host, "User-Agent": ua or r.choice(NGHTTPX_UAS), **hdrs}
                    if body is not None:
                        h["Content-Type"] = "application/json"
                    conn.request(method, path, body=body, headers=h)
                    conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()

        def visit(r: random.Random) -> None:
            a = r.random()
            if a < 0.25:  # a browser over HTTP/2 (TLS) fetching a page and its assets
                run_quiet([nghttp, "-n", "-a", "-H", ":authority: www.onb16.test", "-H", f"user-agent: {r.choice(NGHTTPX_UAS[:3])}",
                           f"https://127.0.0.1:{ports['p_tls']}{fill(r.choice(pages), r)}"], 20)
            elif a < 0.45:  # a browser over HTTP/1.1 with keep-alive (TLS or not), a conditional request now and then
                ua = r.choice(NGHTTPX_UAS[:3])
                reqs = [("GET", "/shop" if r.random() < 0.2 else fill(r.choice(pages), r), None, {})]
                reqs += [("GET", p, None, {"If-None-Match": '"v42"'} if r.random() < 0.4 else {})
                         for p in r.sample(["/static/app.css", "/static/app.js", f"/static/img/{r.randint(1, 20)}.png"], 2)]
                h1(r, reqs, tls=r.random() < 0.6, ua=ua)
            elif a < 0.7:  # the mobile app and services calling the API
                reqs = []
                for _ in range(r.randint(1, 4)):
                    method, path = r.choice(api)
                    body = json.dumps({"sku": r.randint(1000, 9999), "qty": r.randint(1, 4)}).encode() if method in ("POST", "PUT") else None
                    reqs.append((method, fill(path, r), body, {"Authorization": f"Bearer {r.getrandbits(64):016x}"}))
                h1(r, reqs, tls=r.random() < 0.5, host="api.onb16.test", ua=r.choice(NGHTTPX_UAS[3:6]))
            elif a < 0.82:  # curl over HTTP/2 with prior knowledge (h2c) or TLS, from a given address
                src = r.choice(HOSTS)
                if r.random() < 0.5:
                    url, extra = f"http://127.0.0.1:{ports['p_plain']}{fill(r.choice(pages), r)}", ["--http2-prior-knowledge"]
                else:
                    url, extra = f"https://127.0.0.1:{ports['p_tls']}{fill(r.choice(api)[1], r)}", ["--http2", "-k"]
                run_quiet([curl, "-s", "-o", "/dev/null", "--interface", src, "-H", "Host: www.onb16.test", *extra, url], 15)
            elif a < 0.92:  # images and fonts from the static host
                reqs = [("GET", f"/{r.choice(['img', 'fonts'])}/{r.choice(WORDS)}-{r.randint(1, 90)}.{r.choice(['png', 'webp', 'woff2'])}",
                         None, {}) for _ in range(r.randint(1, 3))]
                h1(r, reqs, tls=True, host="static.onb16.test")
            else:  # health checks and metrics scrapes
                h1(r, [("HEAD" if r.random() < 0.5 else "GET", "/api/health", None, {})], src="127.0.0.9", host="api.onb16.test",
                   ua=r.choice(["Prometheus/2.45.0", "kube-probe/1.28"]))

        write_conf()
        start()
        log = FileLog(logp)
        say(f"nghttpx on 127.0.0.1:{ports['p_plain']} (h1/h2c) and {ports['p_tls']} (TLS); normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(visit, random.Random(rng.random()), 1, 2))
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(2.2, 3.0) if rng.random() < 0.08 else rng.uniform(0.1, 0.4))  # now and then a quiet moment

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        def raw_tls(data: bytes, port: int | None = None, wait: float = 0.5) -> None:
            raw_send(port or ports["p_tls"], data, wait=wait)

        try:
            normal = normal_loop(args, log, "nghttpx", round_fn)
            templates = {nghttpx_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, nghttpx_template, nghttpx_problem, head=nghttpx_head))
            with Background(visit, random.Random(rng.random()), (0.4, 1.0)):
                with br.phase("backend_down"):  # backends stopped: one of the two API servers, both, the site, the static host
                    for names, path, host in [(["b_api1"], "/api/products/7", "api.onb16.test"),
                                              (["b_api1", "b_api2"], "/api/orders", "api.onb16.test"),
                                              (["b_site"], "/products", "www.onb16.test"), (["b_static"], "/img/logo.png", "static.onb16.test"),
                                              (["b_api2", "b_api1"], "/api/users/alice/orders", "api.onb16.test")]:
                        with br.occurrence(1.5):
                            for nm in names:
                                down(nm)
                            time.sleep(0.2)
                            for _ in range(2):
                                h1(rng, [("GET", path, None, {})], tls=True, host=host)
                            if len(names) == 2:  # and a client over HTTP/2
                                run_quiet([curl, "-s", "-o", "/dev/null", "--http2", "-k", "-H", f"Host: {host}",
                                           f"https://127.0.0.1:{ports['p_tls']}{path}"], 15)
                        for nm in names:
                            backends[nm].start()
                        time.sleep(2.5)
                        br.between()
                with br.phase("backend_timeout"):  # a backend that accepts and never answers
                    for nm, path, host in [("b_api2", "/api/search", "api.onb16.test"), ("b_site", "/account/orders", "www.onb16.test"),
                                           ("b_static", "/fonts/sierra.woff2", "static.onb16.test"),
                                           ("b_site", "/products?page=3", "www.onb16.test")]:
                        with br.occurrence(1.5):
                            backends[nm].mode = "hang"
                            reqs = [("POST" if "search" in path else "GET", path, b"{}" if "search" in path else None, {})]
                            h1(rng, reqs * (2 if nm == "b_api2" else 1), tls=rng.random() < 0.5, host=host)
                        backends[nm].mode = "ok"
                        time.sleep(4.0)
                        br.between()
                with br.phase("backend_reset"):  # a backend that resets the connection instead of answering
                    for nm, path, host in [("b_site", "/cart", "www.onb16.test"), ("b_api1", "/api/cart/12", "api.onb16.test"),
                                           ("b_static", "/img/banner.webp", "static.onb16.test")]:
                        with br.occurrence(1.5):
                            backends[nm].mode = "reset"
                            h1(rng, [("GET", path, None, {})] * 2, tls=rng.random() < 0.5, host=host)
                        backends[nm].mode = "ok"
                        time.sleep(1.0)
                        br.between()
                with br.phase("bad_request"):  # requests nghttpx refuses: junk, bad headers, a huge header, a bad h2c preface
                    for data in [b"HELLO WORLD\r\n\r\n", b"GET /products HTTP/1.1\r\nHost: www.onb16.test\r\nBad Header: x\r\n\r\n",
                                 b"GET / HTTP/1.1\r\nHost: www.onb16.test\r\nCookie: " + b"a" * 70000 + b"\r\n\r\n",
                                 b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(rng.getrandbits(8) for _ in range(64)),
                                 b"POST /api/orders HTTP/1.1\r\nHost: api.onb16.test\r\nContent-Length: 12\r\nContent-Length: 40\r\n\r\n{}"]:
                        with br.occurrence(1.5):
                            raw_send(ports["p_plain"], data, wait=0.5)
                with br.phase("tls_failure"):  # TLS handshakes that fail: junk, plain HTTP, an old protocol, a cut-off hello
                    for how in ["junk", "plain", "tls10", "cut", "cipher"]:
                        with br.occurrence(1.5):
                            if how == "junk":
                                raw_tls(TLS_HELLO + bytes(rng.getrandbits(8) for _ in range(200)))
                            elif how == "plain":
                                raw_tls(b"GET / HTTP/1.1\r\nHost: www.onb16.test\r\n\r\n")
                            elif how == "tls10":
                                run_quiet([openssl, "s_client", "-connect", f"127.0.0.1:{ports['p_tls']}", "-tls1",
                                           "-servername", "www.onb16.test"], 10, stdin=b"")
                            elif how == "cipher":  # a client offering only ciphers nghttpx does not accept
                                run_quiet([openssl, "s_client", "-connect", f"127.0.0.1:{ports['p_tls']}", "-tls1_2",
                                           "-cipher", "AES128-SHA:@SECLEVEL=0", "-servername", "www.onb16.test"], 10, stdin=b"")
                            else:
                                raw_tls(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(20), wait=0.2)
                with br.phase("bad_config_restart"):  # nghttpx.conf mistakes, the port taken, nghttpx restarted
                    blocker = tcp_blocker()
                    good = NGHTTPX_CONF.format(work=work, log=logp, extra="", maxconn=64, **ports)
                    for kw in [{"p_plain": blocker.getsockname()[1]}, {"extra": "backend-http2-max-streams=lots"},
                               {"text": good.replace("tls/server.crt", "tls/www.onb16.test.crt")},
                               {"text": good.replace(";/api/;proto=http/1.1", ";/api/;proto=spdy/3")},
                               {"extra": "frontend-read-timout=30s"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(1.5)
                            visit(rng)
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for b in backends.values():
                b.stop()
    return Source("nghttpx", "nghttpx (nghttp2 HTTP/2 proxy)", dpkg_version("nghttp2-proxy"),
                  "nghttpx's error log at log-level INFO and its access log in one file: `2026-12-06T05:40:01.123Z 4242 4250 "
                  "6b25f872 INFO (shrpx_https_upstream.cc:109) [UPSTREAM:0x7fb16be05140] HTTP request started`, request and "
                  "response header dumps as untimestamped lines after their entry (`GET /cart HTTP/1.1`, `host: www.onb16.test`), "
                  "`2026-12-06T05:40:01.123Z ... WARN (shrpx_http_downstream_connection.cc:1532) [DCONN:0x...] Backend connect "
                  "failed; addr=127.0.0.1:40123: errno=111`, `127.0.0.3 - - [2026-12-06T05:40:01.123Z] \"GET /cart HTTP/2\" 200 "
                  "412 \"-\" \"Mozilla/5.0 ...\" h2 TLSv1.3 backend=127.0.0.1:40123 rt=0.002`; each connection traced by its "
                  "CLIENT_HANDLER / UPSTREAM / DOWNSTREAM / DCONN addresses from accept through mapping, the backend request and "
                  "the response to the access-log line",
                  "nghttpx (1 worker, a plaintext h1/h2c frontend and a TLS h2/h1 frontend, 4 backend groups: the site, two API "
                  "servers, a static host; python backends) with browsers over HTTP/2 (nghttp fetching pages and their assets) "
                  "and HTTP/1.1 keep-alive with conditional requests, the mobile app and services calling the API (GET, POST, "
                  "PUT, DELETE), curl over h2c and TLS from 8 addresses, the static host, health checks; 2 clean restarts "
                  "(SIGTERM)",
                  "backend_down (5: one API server, both (twice), the site, the static host stopped), backend_timeout (4: "
                  "backends hanging past backend-read-timeout), backend_reset (3: backends resetting the connection), bad_request (5: "
                  "junk, a header name with a space, a 70 kB header, a broken h2c preface, two Content-Lengths), tls_failure "
                  "(5: junk, plain HTTP, TLS 1.0 only, a cut-off hello, only ciphers it does not accept), bad_config_restart (5: the port taken, a bad number, a missing "
                  "certificate, an unknown backend protocol, a misspelt option)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# sslh (the protocol demultiplexer, sslh-select -F in the foreground, verbose: its stderr)
# --------------------------------------------------------------------------

SSLH_CONF = """\
verbose: 1;
foreground: true;
inetd: false;
numeric: true;
transparent: false;
timeout: 2;
user: "{user}";
pidfile: "{work}/sslh.pid";
listen:
(
    {{ host: "127.0.0.1"; port: "{port}"; }}
);
protocols:
(
     {{ name: "ssh"; service: "ssh"; host: "127.0.0.1"; port: "{ssh}"; }},
     {{ name: "http"; host: "127.0.0.1"; port: "{http}"; }},
     {{ name: "tls"; host: "127.0.0.1"; port: "{git}"; sni_hostnames: [ "git.onb16.test" ]; }},
     {{ name: "tls"; host: "127.0.0.1"; port: "{web}"; }},
     {{ name: "openvpn"; host: "127.0.0.1"; port: "{vpn}"; }},
     {{ name: "xmpp"; host: "127.0.0.1"; port: "{xmpp}"; }},
     {{ name: "anyprot"; host: "127.0.0.1"; port: "{fallback}"; }}
);
on-timeout: "ssh";
{extra}"""
sslh_template = templater(re.compile(r"^$"), (r"^0x[0-9a-f]+: .*", "0x0: HEXDUMP"), (r"\b(fd|slot|max_fd|num_probing)[ =]?\d+", r"\1 N"),
                          (r"\b\d+\.\d+\.\d+\.\d+:\d+\b", "ADDR"), (r"/[\w./-]+", "PATH"))
SSLH_PROBLEM = PROBLEM_WORDS + r"|errno|reset|broken pipe|no route"


def sslh_problem(line: str) -> bool:
    if re.match(r"^0x[0-9a-f]+: |^(on-)?timeout: ", line):
        return False  # a hexdump of what a client sent, the start-up settings
    return has_problem_word(line, SSLH_PROBLEM) or bool(re.search(r"\bforward to \w+ failed|sslh-select\.c:\d+:|timed out", line))


def sslh_head(line: str) -> bool:
    return not line.startswith("0x") or line.startswith("0x000000:")


class StreamBackend:
    """A TCP service behind sslh (an ssh banner, an xmpp stream, a TLS web server, a sink); modes ok / reset."""

    def __init__(self, kind: str, ctx: ssl.SSLContext | None = None):
        self.kind, self.ctx, self.port, self.sock, self.mode = kind, ctx, free_port(), None, "ok"

    def start(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(64)
        threading.Thread(target=self.loop, args=(self.sock,), daemon=True).start()

    def loop(self, s: socket.socket) -> None:
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c: socket.socket) -> None:
        with contextlib.suppress(OSError, ssl.SSLError), c:
            if self.mode == "reset":
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            c.settimeout(5)
            if self.kind == "ssh":
                c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
            if self.ctx is not None:
                c = self.ctx.wrap_socket(c, server_side=True)
            while True:
                d = c.recv(4096)
                if not d:
                    return
                if self.kind == "tls" or self.kind == "http":
                    body = b"<html>ok</html>"
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
                    return
                if self.kind == "xmpp":
                    c.sendall(b"<?xml version='1.0'?><stream:stream from='chat.onb16.test' id='s1' version='1.0' "
                              b"xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>")
                elif self.kind in ("ssh", "vpn"):
                    c.sendall(d[:64])

    def stop(self) -> None:
        if self.sock:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None


def source_sslh(args) -> Source:
    sslh = need("sslh-select", "sslh")
    openssl = need("openssl", "openssl")
    rng = random.Random(f"{args.seed}-sslh")
    with tempfile.TemporaryDirectory(prefix="onb16-sslh-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf, port = os.path.join(work, "sslh.log"), os.path.join(work, "sslh.cfg"), free_port()
        key, crt = os.path.join(work, "server.key"), os.path.join(work, "server.crt")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "90", "-subj", "/CN=www.onb16.test",
                        "-addext", "subjectAltName=DNS:www.onb16.test,DNS:git.onb16.test", "-keyout", key, "-out", crt],
                       check=True, capture_output=True)
        sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        sctx.load_cert_chain(crt, key)
        backends = {"ssh": StreamBackend("ssh"), "http": StreamBackend("http"), "git": StreamBackend("tls", sctx),
                    "web": StreamBackend("tls", sctx), "vpn": StreamBackend("vpn"), "xmpp": StreamBackend("xmpp"),
                    "fallback": StreamBackend("sink")}
        for b in backends.values():
            b.start()

        def write_conf(extra: str = "", user: str = "nobody", text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else SSLH_CONF.format(
                work=work, extra=extra, user=user, **({"port": port} | {k: b.port for k, b in backends.items()} | kw)))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("sslh", [sslh, f"-F{conf}"], stdout=logf, stderr=logf, cwd=work)
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("sslh did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("sslh", signal.SIGTERM, 10)

        cctx = ssl.create_default_context()
        cctx.check_hostname, cctx.verify_mode = False, ssl.CERT_NONE

        def connect(src: str | None = None) -> socket.socket | None:
            try:
                return socket.create_connection(("127.0.0.1", port), 5, source_address=(src or rng.choice(HOSTS), 0))
            except OSError:
                return None

        def talk(s: socket.socket, data: bytes, rounds: int = 1, wait: float = 0.1) -> None:
            with contextlib.suppress(OSError):
                s.settimeout(3)
                s.sendall(data)
                for _ in range(rounds):
                    time.sleep(wait)
                    if not s.recv(4096):
                        break
            with contextlib.suppress(OSError):
                s.close()

        ssh_clients = ["SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3", "SSH-2.0-OpenSSH_9.6", "SSH-2.0-PuTTY_Release_0.80",
                       "SSH-2.0-libssh2_1.10.0", "SSH-2.0-Go", "SSH-2.0-paramiko_3.4.0"]

        def client(r: random.Random) -> None:
            a = r.random()
            src = r.choice(HOSTS)
            s = connect(src)
            if s is None:
                return
            if a < 0.3:  # ssh clients (the banner, then a key exchange packet)
                with contextlib.suppress(OSError):
                    s.settimeout(3)
                    s.sendall(r.choice(ssh_clients).encode() + b"\r\n")
                    s.recv(256)
                    s.sendall(struct.pack(">IB", 300, 7) + bytes([20]) + bytes(r.getrandbits(8) for _ in range(298)))
                    s.recv(4096)
                with contextlib.suppress(OSError):
                    s.close()
            elif a < 0.55:  # HTTPS to the web site or the git server (told apart by SNI)
                host = r.choice(["www.onb16.test", "www.onb16.test", "git.onb16.test"])
                with contextlib.suppress(OSError, ssl.SSLError):
                    t = cctx.wrap_socket(s, server_hostname=host)
                    t.sendall(f"GET /{r.choice(WORDS)}/{r.randint(1, 99)} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                    t.recv(4096)
                    t.close()
                with contextlib.suppress(OSError):
                    s.close()
            elif a < 0.7:  # plain HTTP (redirects to https in real life)
                talk(s, f"{r.choice(['GET', 'GET', 'HEAD', 'POST'])} /{r.choice(WORDS)} HTTP/1.1\r\nHost: www.onb16.test\r\n"
                        f"User-Agent: {r.choice(['curl/7.88.1', 'Wget/1.21.3', 'Mozilla/5.0'])}\r\n\r\n".encode())
            elif a < 0.85:  # OpenVPN over TCP (P_CONTROL_HARD_RESET_CLIENT_V2)
                pkt = bytes([0x38]) + r.getrandbits(64).to_bytes(8, "big") + b"\x00" + b"\x00\x00\x00\x00" + \
                    bytes(r.getrandbits(8) for _ in range(r.randint(14, 40)))
                talk(s, struct.pack(">H", len(pkt)) + pkt, rounds=2)
            else:  # XMPP clients opening a stream
                talk(s, (f"<?xml version='1.0'?><stream:stream to='chat.onb16.test' from='{r.choice(ACCOUNTS)}@chat.onb16.test' "
                         "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>").encode())

        write_conf()
        start()
        log = FileLog(logp)
        say(f"sslh on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 4))
                       for _ in range(rng.randint(3, 5))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.05, 0.2))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        try:
            normal = normal_loop(args, log, "sslh", round_fn)
            templates = {sslh_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, sslh_template, sslh_problem, head=sslh_head))
            with Background(client, random.Random(rng.random()), (0.5, 1.2)):
                with br.phase("backend_down"):  # the service behind one protocol stopped
                    for name, hello in [("ssh", b"SSH-2.0-OpenSSH_9.6\r\n"), ("git", None),
                                        ("http", b"GET / HTTP/1.1\r\nHost: www.onb16.test\r\n\r\n"),
                                        ("vpn", struct.pack(">H", 20) + bytes([0x38]) + bytes(19)),
                                        ("xmpp", b"<?xml version='1.0'?><stream:stream to='chat.onb16.test' xmlns='jabber:client'>")]:
                        with br.occurrence(2.0):
                            backends[name].stop()
                            s = connect()
                            if s is not None:
                                if hello is None:
                                    with contextlib.suppress(OSError, ssl.SSLError):
                                        cctx.wrap_socket(s, server_hostname="git.onb16.test").close()
                                else:
                                    talk(s, hello)
                        backends[name].start()
                        time.sleep(1.0)
                        br.between()
                with br.phase("probe_timeout"):  # clients that connect and say nothing: sent on to ssh after the timeout
                    for _ in range(4):
                        with br.occurrence(1.5):
                            s = connect()
                            if s is not None:
                                time.sleep(3.0)
                                s.close()
                with br.phase("unknown_protocol"):  # protocols sslh does not know: the catch-all (anyprot) gets them
                    for data in [b"EHLO scanner.example\r\n", b"\x03\x00\x00\x13\x0e\xe0\x00\x00\x00\x00\x00\x01\x00\x08\x00\x03\x00\x00\x00",
                                 bytes(rng.getrandbits(8) for _ in range(90)), b"\x00\x00\x00\x00\x00\x00\x00\x00",
                                 b"\x05\x01\x00"]:
                        with br.occurrence(1.5):
                            s = connect()
                            if s is not None:
                                talk(s, data)
                with br.phase("incomplete_handshake"):  # a first packet cut short, then silence: sent to ssh after the timeout
                    for part in [TLS_HELLO[:3], b"GE", b"<?xml version='1.0'?>", struct.pack(">H", 60) + bytes([0x38])]:
                        with br.occurrence(1.5):
                            s = connect()
                            if s is not None:
                                with contextlib.suppress(OSError):
                                    s.sendall(part)
                                time.sleep(3.0)
                                s.close()
                with br.phase("client_reset"):  # clients resetting the connection before their first packet is complete
                    for part in [TLS_HELLO[:5], b"POS", b"<?xml version='1.0'?><stream", struct.pack(">H", 60) + bytes([0x38, 0])]:
                        with br.occurrence(1.5):
                            s = connect()
                            if s is not None:
                                with contextlib.suppress(OSError):
                                    s.sendall(part)
                                    time.sleep(0.3)
                                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                                s.close()
                with br.phase("bad_config_restart"):  # sslh.cfg mistakes, the port taken, sslh restarted
                    blocker = tcp_blocker()
                    good = SSLH_CONF.format(work=work, extra="", user="nobody",
                                            **({"port": port} | {k: b.port for k, b in backends.items()}))
                    for kw in [{"port": blocker.getsockname()[1]}, {"user": "sslh-proxy"},
                               {"text": good.replace('{ name: "xmpp";', '{ name: "jabber";')},
                               {"text": good.replace(");\non-timeout", "\non-timeout")},
                               {"text": good.replace(f'host: "127.0.0.1"; port: "{port}"; }}', 'host: "127.0.0.1"; }')}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(1.5)
                            client(rng)
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for b in backends.values():
                b.stop()
    return Source("sslh", "sslh (sslh-select)", dpkg_version("sslh"),
                  "sslh-select's stderr in the foreground with verbose: 1, no time stamps: start-up settings, then each "
                  "connection's steps by file descriptor: `accepted fd 6 on slot 2`, a hexdump of what the client sent first "
                  "(`0x000000: 53 53 48 2d 32 2e 30 2d ... SSH-2.0-OpenSSH_`), `probing for ssh: PROBE_MATCH`, `connecting to "
                  "127.0.0.1:40123 family 2 len 16`, `ssh:connection from 127.0.0.3:51234 to 127.0.0.1:40000 forwarded from "
                  "127.0.0.1:51236 to 127.0.0.1:40123`, `activity on fd7`, `closing fd 6`; the select loop's `selecting... "
                  "max_fd=8 num_probing=1` between them",
                  "sslh-select -F (as nobody, one listening port, probes for ssh, http, tls with an SNI rule for the git server "
                  "and a default tls, openvpn, xmpp, a catch-all; on-timeout ssh; python backends) with ssh clients (6 client "
                  "versions) exchanging banners and a key exchange packet, HTTPS to two sites told apart by SNI, plain HTTP, "
                  "OpenVPN over TCP, XMPP streams, from 8 addresses; 2 clean restarts (SIGTERM)",
                  "backend_down (5: the ssh, git (TLS), http, openvpn and xmpp services stopped), probe_timeout (4: clients "
                  "saying nothing, sent to ssh after the timeout), unknown_protocol (5: SMTP, RDP, random bytes, zeros, "
                  "SOCKS5: the catch-all, or ssh after the timeout), incomplete_handshake (4: a first packet cut short, then "
                  "silence), client_reset (4: clients resetting the connection before their first packet is complete), "
                  "bad_config_restart (5: the port taken, an unknown user, an unknown protocol name, a syntax error, a listen "
                  "entry without a port)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_sixteenth", SOURCES, globals(), seed=16016, min_normal_s=45,
               root_for="private pid and mount namespaces with tmpfs, programs dropping to their own users",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = "none"
ODDITIES = [
    ("a rehearsal of the whole run (all five sources, --seed 16016, written to a scratch folder, 1066 s) was checked by eye "
     "before this one; it led to more nghttpx occurrences (stopping a backend now also closes the connections nghttpx kept "
     "alive to it, without which two of four backend_down occurrences logged nothing), a longer pause after monit's webapp "
     "recovery, more sslh traffic; nothing had been scored on it"),
    ("monit: run with -v, so normal.log is mostly per-second debug lines of every check; among them 'Cannot read proc file "
     "'/proc/N/attr/current' -- Invalid argument' for every process of its pid namespace in every cycle (no LSM on this "
     "machine; about a fifth of normal.log): lines that read like errors and are normal; an operator's stop / start of "
     "the worker racing a cycle can leave one error-level \"'worker' failed to start (exit status -1) -- no output\" in "
     "normal.log; monit mirrors its log on stdout and its errors on stderr: stdout is dropped, stderr goes next to the "
     "log only for the bad restarts, where it is the only place configuration errors are written (untimestamped), so "
     "the port-taken event holds each error twice, once with and once without a time stamp; a process_died event is "
     "'process is not running' plus the info line of the restarted process (the restart lines between are the same "
     "as an operator's restart); send/expect buffers split a debug line over untimestamped continuation lines ('END', a "
     "lone quote)"),
    ("mpd: time stamps to the minute without the year (the last normal minute and the first error minute can be the "
     "same); a refused password or command shows only as 'client: [N] command returned 3' (the reason goes to the client, "
     "not the log), so auth_failure events are two such lines; the 'process command' lines show what clients sent, "
     "passwords included, and are never counted as problems; the first start writes 'exception: Failed to open "
     "...mpd.db / mpd.state: No such file or directory' into normal.log (no database yet), and clients racing each "
     "other leave a few 'exception: Not playing' / 'command returned 3' lines and, when a library update reads an album "
     "still being copied, 'sndfile: sf_open_virtual() failed' lines in normal.log; 'could not get realtime scheduling ... "
     "Operation not permitted' is written at every start and not counted as a problem; too_many_clients events are "
     "'client: Max connections reached' lines without a client number or address; libmpg123 writes untimestamped 'Note:' "
     "lines on stderr for a corrupt mp3; mpd logs nothing when its pipe output's command fails, so that breakage was left "
     "out"),
    ("carbon: most failures are Python tracebacks ('Unhandled Error' and 15-25 untimestamped lines), so disk_full, "
     "permission_denied and bad_query events run to tens or hundreds of lines; while the whisper tmpfs is full the "
     "background agents' new metrics fail to be created too and are in those events; metric names such as "
     "stats.counters.shop.errors.http_500.count make [updates] / [creates] lines of normal.log carry problem words (not "
     "counted); CryptographyDeprecationWarning blocks from twisted on stderr at every start are in normal.log; an "
     "invalid pickle or line is one line"),
    ("nghttpx: at log-level INFO it writes about 45 lines per request, request and response header dumps as "
     "untimestamped continuation lines (an event can hold header lines identical to normal ones, kept with their entry); "
     "most failure evidence is at INFO ('HTTP parse failure', 'tls: handshake libssl error', 'Timeout', 'Return error "
     "reply'), kept by problem word or as a new template, and 502 / 504 / 431 / 400 / 501 access-log lines by their "
     "status; 'Idle connection timeout' (a pooled backend connection closed) is routine and not counted; each clean "
     "restart writes 'FATAL ... IPC socket is closed.  Perform immediate shutdown.' into normal.log; with one of two API "
     "servers stopped nghttpx retries the other and the request succeeds (WARN lines only); a request with a space in a "
     "header name is accepted and forwarded (kept only as a new template of its header dump); exceeding "
     "worker-frontend-connections logs nothing at INFO, so that breakage was left out"),
    ("sslh: no time stamps; verbose output is debug-like: the select loop's 'selecting... / processing fd / activity on "
     "fd' lines and a hexdump of each client's first packet (masked in templates); 'Request did not begin with TLS "
     "handshake.' is written for every non-TLS connection in normal.log; most unknown protocols end as 'probing for xmpp: "
     "PROBE_AGAIN' then 'timed out, connect to ssh' (the xmpp probe waits for more data) rather than in the catch-all; a "
     "bad restart writes one line; a service resetting connections behind sslh logs nothing, and running out of file "
     "descriptors makes sslh-select spin writing 'accept: Too many open files' (1.7 million lines in seconds in a "
     "trial), so both breakages were left out"),
]


if __name__ == "__main__":
    sys.exit(main())
