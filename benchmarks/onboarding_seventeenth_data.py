#!/usr/bin/env python3
"""Generate the seventeenth onboarding corpus: real log lines written by real programs, grouped into events.

A seventeenth corpus built exactly like benchmarks/onboarding_sixteenth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs at a restart, garbage on the wire,
stopped or hanging backends, killed processes, floods, wrong passwords, peers misconfigured...).  It never
writes a log line itself (the servers xinetd starts, the backends behind hitch, h2o and dnsdist are small
programs of this script that print nothing into a log; bird's peers are bird processes whose own logs are
thrown away).  The programs trace multi-step work per named item (a service's START and EXIT by pid in
xinetd, a TLS connection's handshake, backend connection and shutdown by its client address in hitch, a
request by its path in h2o, a query from packet through relay to answer in dnsdist, a BGP session's states
and each route it carries in bird).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends xinetd hitch h2o
dnsdist bird2 curl openssl; also util-linux (setpriv) and python3.  The clients are python code in this
script (TCP and UDP services, TLS, HTTP/1.1, DNS over UDP and TCP, raw BGP bytes) and real CLIs (curl for
HTTP/2 and old TLS versions, dnsdist -c for the console, birdc).  No system service of these packages needs to
run: each daemon is started directly as a plain process, without systemd, in a private temporary folder with
private ports on 127.0.0.x; hitch drops to nobody, xinetd runs its external servers as nobody; no user is
created):

  xinetd   xinetd 2.3.15 (-dontfork -stayalive, log_type FILE and -filelog into one file):
           `26/12/7@05:40:01: START: report pid=4242 from=127.0.0.3`, `26/12/7@05:40:01: EXIT: report status=0
           pid=4242 duration=0(sec)`, `26/12/7@05:40:01: FAIL: report address from=127.0.0.9`.  Normal: clients
           on 6 addresses using internal services (echo, daytime, chargen, time), a status report and an upload
           service run as nobody, a service redirected to a backend, a UDP daytime; operators' reloads (SIGHUP);
           2 clean restarts.  Broken: clients not allowed by only_from, a service outside its access_times,
           instance and per-source limits, connection floods deactivating a service, servers crashing / failing
           / missing / not executable, the redirect backend down, broken xinetd.conf / the port taken at a
           restart.
  hitch    hitch 1.7 (TLS proxy, log-level 2, its log file): `20261207T054001.123456 [ 4242] 127.0.0.3:51234
           :40123 8:9 ssl end handshake`, `... {backend-connect}: Connection refused`.  Normal: HTTPS clients on 8
           addresses (TLS 1.2 and 1.3, two names told apart by SNI, keep-alive, HTTP/1.1 behind) in front of a
           python backend; 2 clean restarts.  Broken: the backend stopped, plain HTTP on the TLS port, old TLS
           versions, unknown SNI names, garbage and cut-short handshakes, the worker SIGKILLed, broken
           hitch.conf / bad certificates / the port taken at a restart.
  h2o      h2o 2.2 (access log and error log in one file): `127.0.0.3 - - [07/Dec/2026:05:40:01 +0000] "GET
           /products/oak-lamp.html HTTP/2" 200 1834 "-" "Mozilla/5.0 ..." 0.000 -`, `[lib/core/proxy.c] in
           request:/api/cart:connection failed`.  Normal: browsers over HTTP/1.1 and HTTP/2 (TLS and not), API
           clients, conditional requests, redirects, a static host in front of 2 python backends; 2 clean
           restarts.  Broken: backends stopped / hanging past the I/O timeout / resetting, files deleted by a
           deploy, files unreadable, oversized and malformed requests, broken h2o.conf / missing certificates /
           the port taken at a restart.
  dnsdist  dnsdist 1.7 (--supervised -v, its stdout: query logging by a LogAction, verbose messages, no time
           stamps except the LogAction's): `[1796602037.124148688] Packet from 127.0.0.3:59394 for
           www.onb17.test. A with id 34388`, `Got query for www.onb17.test|A from 127.0.0.3:59394, relayed to
           ns1`, `Marking downstream ns1 (127.0.0.1:40123) as 'down'`.  Normal: stub resolvers on 6 addresses
           asking A / AAAA / MX / TXT / SRV over UDP and TCP, two pools (public and internal), 3 python
           backends health-checked every second, operators on the console and the web API; 2 clean restarts.
           Broken: backends stopped / dropping queries / answering SERVFAIL to health checks, clients outside the
           ACL, query floods meeting a dynamic block, malformed packets, wrong console keys, wrong web
           passwords and API keys, broken dnsdist.conf / the port taken at a restart.
  bird     BIRD 2.0 (bird -f, log file, debug states / routes / filters / events): `2026-12-07 05:40:01.123
           <TRACE> peer_b.ipv4 < added 10.2.3.0/24 unicast`, `... <ERR> peer_c: Error: Hold timer expired`.
           Normal: an edge router with BGP sessions to 3 peers (bird processes on their own addresses)
           announcing customer prefixes that come and go (static protocols enabled and disabled, peers
           reconfigured), operators reloading and reconfiguring the edge, birdc show commands; 2 clean
           restarts.  Broken: peers killed, peers frozen past the hold time, a peer with the wrong AS, route
           leaks filtered out, a prefix flood past the import limit, connections from unknown addresses,
           garbage on the BGP port, broken bird.conf / the BGP port taken at a restart.

Layout written under --out (default benchmarks/data/onboarding_seventeenth):

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

  * its level marks it as a problem (xinetd FAIL lines, EXIT lines with a
    non-zero status or a signal, its own messages of failures; hitch lines of
    failed handshakes, backend connects and failures; h2o access-log lines with a
    status of 400 or more and error-log lines of failures; dnsdist lines of
    failures, exceptions, drops, blocks and downstreams marked down; bird <ERR>,
    <WARN>, <BUG>, <FATAL> and <AUTH> lines and trace lines of errors,
    notifications received and routes filtered out; and what any of them says on
    stderr at a failed start), where a problem word counts only as a word of the
    message, never inside a path, a file name, a domain name or a header a client
    sent, or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; pids, file descriptors, paths, URLs, domain names
    and prefixes masked too) never occurred in the normal phase.

An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_seventeenth_data.py --out benchmarks/data/onboarding_seventeenth \\
        [--sources xinetd,hitch,h2o,dnsdist,bird] [--lines 6000] [--seed 17017] [--min-normal-seconds 60]
"""
from __future__ import annotations

import base64
import contextlib
import http.client
import http.server
import os
import random
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_blind_data import ModeServer, QuietHandler
from onboarding_data import FileLog, free_port, need, say, write_atomic
from onboarding_eighth_data import tcp_blocker
from onboarding_eleventh_data import dpkg_version, templater
from onboarding_fifteenth_data import PROBLEM_WORDS, burst, has_problem_word, listening
from onboarding_fifth_data import clean_restart, normal_loop, run
from onboarding_fourth_data import QTYPES
from onboarding_heldout_data import USERS, WORDS, Background, Breaker, Group, Source, children, entry_selector
from onboarding_sixth_data import TLS_HELLO, run_quiet
from onboarding_tenth_data import kill_pids, log_has, size_of

SOURCES = ["xinetd", "hitch", "h2o", "dnsdist", "bird"]
ACCOUNTS = USERS[:10]
HOSTS = [f"127.0.0.{i}" for i in range(2, 10)]
ALLOWED = HOSTS[:6]  # 127.0.0.2-7: inside the 127.0.0.0/29 the ACLs allow


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def connect(port: int, src: str = "127.0.0.1", timeout: float = 5) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout, source_address=(src, 0))
    except OSError:
        return None


def reset_close(s: socket.socket) -> None:
    """Close with a RST (SO_LINGER 0), as a client that gives up abruptly."""
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        s.close()


def make_cert(work: str, name: str, cn: str, days: int = 90) -> tuple[str, str]:
    key, crt = os.path.join(work, f"{name}.key"), os.path.join(work, f"{name}.crt")
    subprocess.run([need("openssl", "openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", str(days), "-subj", f"/CN={cn}", "-addext", f"subjectAltName=DNS:{cn}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return key, crt


def client_tls(minimum=None, maximum=None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if minimum:
        ctx.minimum_version = minimum
    if maximum:
        ctx.maximum_version = maximum
    return ctx


# --------------------------------------------------------------------------
# xinetd (-dontfork, log_type FILE + -filelog in one file)
# --------------------------------------------------------------------------

XINETD_CONF = """\
defaults
{{
    log_type        = FILE {log}
    log_on_success  = HOST PID DURATION EXIT
    log_on_failure  = HOST ATTEMPT
    instances       = 40
    per_source      = 12
    cps             = 80 4
    bind            = 127.0.0.1
}}

service echo
{{
    type        = INTERNAL UNLISTED
    id          = echo-stream
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = root
    port        = {p_echo}
    cps         = 20 4
}}

service daytime
{{
    type        = INTERNAL UNLISTED
    id          = daytime-stream
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = root
    port        = {p_day}
}}

service daytime
{{
    type        = INTERNAL UNLISTED
    id          = daytime-dgram
    socket_type = dgram
    protocol    = udp
    wait        = yes
    user        = root
    port        = {p_dayu}
}}

service chargen
{{
    type        = INTERNAL UNLISTED
    id          = chargen-stream
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = root
    port        = {p_chargen}
}}

service time
{{
    type        = INTERNAL UNLISTED
    id          = time-stream
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = root
    port        = {p_time}
}}

service report
{{
    type        = UNLISTED
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = nobody
    port        = {p_report}
    server      = {work}/bin/report
    server_args = --brief
    only_from   = 127.0.0.0/29
}}

service upload
{{
    type        = UNLISTED
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = nobody
    port        = {p_upload}
    server      = {work}/bin/upload
    instances   = 6
    per_source  = 3
}}

service nightly
{{
    type         = UNLISTED
    socket_type  = stream
    protocol     = tcp
    wait         = no
    user         = nobody
    port         = {p_nightly}
    server       = {work}/bin/report
    server_args  = --full
    access_times = {window}
}}

service legacy-app
{{
    type        = UNLISTED
    socket_type = stream
    protocol    = tcp
    wait        = no
    user        = nobody
    port        = {p_legacy}
    redirect    = 127.0.0.1 {p_backend}
}}
{extra}"""
XINETD_REPORT = """#!/bin/sh
m=$(cat {work}/mode/report 2>/dev/null)
case "$m" in
  crash) kill -SEGV $$ ;;
  fail) echo "report: cannot read /var/spool/status: Input/output error" >&2; exit 4 ;;
  hang) sleep 6 ;;
esac
echo "host onb17-app load $(cut -d' ' -f1 /proc/loadavg) $1"
exit 0
"""
XINETD_UPLOAD = """#!/bin/sh
m=$(cat {work}/mode/upload 2>/dev/null)
n=$(head -c 65536 | wc -c)
[ "$m" = "fail" ] && exit 2
echo "stored $n bytes"
"""
XINETD_HEAD = re.compile(r"^\d\d/\d\d?/\d\d?@\d\d:\d\d:\d\d: ")
xinetd_template = templater(XINETD_HEAD, (r"/[\w./-]+", "PATH"), (r"\bpid=\d+", "pid=N"))


def xinetd_problem(line: str) -> bool:
    body = XINETD_HEAD.sub("", line, count=1)
    if body.startswith("FAIL:"):
        return True
    m = re.match(r"EXIT: \S+ (status|signal)=(\d+)", body)
    if m:  # SIGPIPE (13): the client went away first, as chargen's clients always do
        return m.group(2) != ("13" if m.group(1) == "signal" else "0")
    if body.startswith("START:"):
        return False
    return has_problem_word(body, PROBLEM_WORDS + r"|deactivating|excessive")


class TcpBackend:
    """A line service behind xinetd's redirect: answers each line with a reply; stop() takes it away."""

    def __init__(self, port: int):
        self.port, self.sock = port, None

    def start(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(32)
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
            c.settimeout(5)
            while True:
                d = c.recv(1024)
                if not d:
                    return
                c.sendall(b"OK " + d.strip()[:40] + b"\r\n")

    def stop(self) -> None:
        if self.sock:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None


def talk(port: int, data: bytes | None, src: str, read: bool = True, wait: float = 0.0, shut: bool = False) -> bytes:
    s = connect(port, src)
    out = b""
    if s is None:
        return out
    with contextlib.suppress(OSError), s:
        if data:
            s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        if wait:
            time.sleep(wait)
        if read:
            s.settimeout(3)
            out = s.recv(4096)
    return out


def source_xinetd(args) -> Source:
    xinetd = need("xinetd", "xinetd")
    rng = random.Random(f"{args.seed}-xinetd")
    with tempfile.TemporaryDirectory(prefix="onb17-xinetd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("bin", "mode", "run"):
            os.makedirs(os.path.join(work, d))
        os.chmod(os.path.join(work, "mode"), 0o755)
        logp, conf = os.path.join(work, "xinetd.log"), os.path.join(work, "xinetd.conf")
        ports = {k: free_port() for k in ("p_echo", "p_day", "p_chargen", "p_time", "p_report", "p_upload", "p_nightly",
                                          "p_legacy", "p_backend")}
        ports["p_dayu"] = ports["p_day"]
        hour = (time.gmtime().tm_hour + 8) % 24
        window = f"{hour:02d}:00-{hour:02d}:30"
        for name, text in (("report", XINETD_REPORT), ("upload", XINETD_UPLOAD)):
            p = os.path.join(work, "bin", name)
            write_atomic(p, text.format(work=work))
            os.chmod(p, 0o755)
        backend = TcpBackend(ports["p_backend"])
        backend.start()

        def write_conf(extra: str = "", text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else XINETD_CONF.format(
                log=logp, work=work, window=window, extra=extra, **(ports | kw)))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as errf:  # what xinetd says on stderr (a config it cannot use) next to its log
                sv.start("xinetd", [xinetd, "-dontfork", "-stayalive", "-f", conf, "-pidfile", f"{work}/run/xinetd.pid",
                                    "-filelog", logp], stdout=errf, stderr=errf, cwd=work)
            if wait:
                if not log_has(logp, b"Started working", since, 20):
                    raise RuntimeError("xinetd did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("xinetd", signal.SIGTERM, 10)

        def set_mode(name: str, mode: str | None) -> None:
            p = os.path.join(work, "mode", name)
            if mode is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
            else:
                write_atomic(p, mode)
                os.chmod(p, 0o644)

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(ALLOWED)
            a = r.random()
            if a < 0.22:  # monitoring probes: echo
                talk(ports["p_echo"], f"ping {r.randint(1, 99999)}\r\n".encode(), src)
            elif a < 0.36:  # clock checks over TCP and UDP
                if r.random() < 0.6:
                    talk(ports["p_day"], None, src)
                else:
                    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                        s.bind((src, 0))
                        s.settimeout(2)
                        s.sendto(b"\n", ("127.0.0.1", ports["p_dayu"]))
                        s.recv(128)
            elif a < 0.44:
                talk(ports["p_time"], None, src)
            elif a < 0.52:  # a throughput test reading a bit of chargen
                talk(ports["p_chargen"], None, src)
            elif a < 0.7:  # the status report
                talk(ports["p_report"], None, src, wait=0.05)
            elif a < 0.84:  # uploads of small files
                body = os.urandom(r.randint(200, 20000))
                talk(ports["p_upload"], body, src, shut=True)
            else:  # the legacy app behind a redirect
                s = connect(ports["p_legacy"], src)
                if s is not None:
                    with contextlib.suppress(OSError), s:
                        s.settimeout(3)
                        for _ in range(r.randint(1, 3)):
                            s.sendall(f"{r.choice(['GET', 'STAT', 'LIST'])} {r.choice(WORDS)}\r\n".encode())
                            s.recv(256)

        write_conf()
        start()
        log = FileLog(logp)
        say(f"xinetd (echo {ports['p_echo']}, report {ports['p_report']}); normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 5))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 40 == 0:  # an operator reloads the configuration
                proc = sv.procs.get("xinetd")
                if proc is not None:
                    proc.send_signal(signal.SIGHUP)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.05, 0.2))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        try:
            normal = normal_loop(args, log, "xinetd", round_fn)
            templates = {xinetd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, xinetd_template, xinetd_problem))
            with Background(client, random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("access_denied"):  # clients outside only_from
                    for src in ["127.0.0.9", "127.0.0.8", "127.0.0.9", "127.0.0.8"]:
                        with br.occurrence(1.0):
                            talk(ports["p_report"], None, src)
                with br.phase("outside_access_times"):  # the nightly job's service asked for by day
                    for src in ["127.0.0.3", "127.0.0.5", "127.0.0.2"]:
                        with br.occurrence(1.0):
                            talk(ports["p_nightly"], None, src)
                with br.phase("instance_limit"):  # uploads stalled: per-source and service instance limits
                    for how in ["per_source", "instances", "per_source", "instances"]:
                        with br.occurrence(1.5):
                            held = []
                            srcs = ["127.0.0.6"] * 5 if how == "per_source" else [h for h in ALLOWED for _ in range(2)]
                            for src in srcs:
                                s = connect(ports["p_upload"], src)
                                if s is not None:
                                    held.append(s)
                            time.sleep(0.8)
                            for s in held:
                                reset_close(s)
                        time.sleep(1.0)
                        br.between()
                with br.phase("connection_flood"):  # more connections per second than cps: the service deactivated
                    for i in range(3):
                        with br.occurrence(2.0):
                            socks = [connect(ports["p_echo"], rng.choice(ALLOWED), 2) for _ in range(80)]
                            for s in socks:
                                if s is not None:
                                    reset_close(s)
                        time.sleep(5.0)  # cps 20 4: it comes back after 4 s
                        br.between()
                with br.phase("server_failure"):  # the report server crashing, failing, hanging
                    for mode in ["crash", "fail", "crash", "fail"]:
                        set_mode("report", mode)
                        with br.occurrence(1.5):
                            talk(ports["p_report"], None, rng.choice(ALLOWED), wait=0.2)
                        set_mode("report", None)
                        time.sleep(0.5)
                        br.between()
                with br.phase("server_missing"):  # the server program deleted / made not executable by a bad deploy
                    rp = os.path.join(work, "bin", "report")
                    for how in ["chmod", "delete", "chmod"]:
                        with br.occurrence(1.5):
                            if how == "chmod":
                                os.chmod(rp, 0o644)
                            else:
                                os.rename(rp, rp + ".old")
                            talk(ports["p_report"], None, rng.choice(ALLOWED), wait=0.2)
                        if how == "delete":
                            os.rename(rp + ".old", rp)
                        os.chmod(rp, 0o755)
                        time.sleep(0.5)
                        br.between()
                with br.phase("redirect_backend_down"):  # the legacy app behind the redirect stopped
                    for _ in range(3):
                        backend.stop()
                        with br.occurrence(1.5):
                            talk(ports["p_legacy"], b"STAT orders\r\n", rng.choice(ALLOWED))
                        backend.start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_config_restart"):  # xinetd.conf mistakes, a port taken, xinetd restarted
                    blocker = tcp_blocker()
                    good = XINETD_CONF.format(log=logp, work=work, window=window, extra="", **ports)
                    for kw in [{"p_echo": blocker.getsockname()[1]},
                               {"text": good.replace("    socket_type = stream\n    protocol    = tcp\n    wait        = no\n"
                                                     "    user        = nobody\n    port        = {}".format(ports["p_upload"]),
                                                     "    socket_type = stream\n    protocol    = tcp\n    wait        = no\n"
                                                     "    user        = uploader\n    port        = {}".format(ports["p_upload"]))},
                               {"text": good.replace(f"server      = {work}/bin/upload", f"server      = {work}/bin/uploader")},
                               {"text": good.replace("service time\n{", "service time\n{\n    flags  = REUSE NOSUCHFLAG\n"
                                                     "    log_on_sucess = HOST")},
                               {"text": good.replace("only_from   = 127.0.0.0/29", "only_from   = 127.0.0.0/33")},
                               {"text": good.replace("service legacy-app\n{", "service legacy-app\n")}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(1.5)
                            client(rng)
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
            backend.stop()
    return Source("xinetd", "xinetd", dpkg_version("xinetd"),
                  "xinetd's log file (log_type FILE for the services, -filelog for its own messages), a short date "
                  "(two-digit year, month and day without padding) '@' the time, then a keyword: `26/12/7@05:40:01: START: "
                  "report pid=4242 from=127.0.0.3`, `26/12/7@05:40:01: EXIT: report status=0 pid=4242 duration=0(sec)`, "
                  "`26/12/7@05:40:01: FAIL: report address from=127.0.0.9`; its own messages (start-up, reconfiguration, "
                  "deactivated services, failures) in free text after the same time stamp; what it writes on stderr at a "
                  "failed start appended; each connection traced by its pid from START to EXIT",
                  "xinetd -dontfork -stayalive (internal echo, daytime over TCP and UDP, chargen and time services, a "
                  "status report and an upload service (shell scripts run as nobody), a nightly service limited by "
                  "access_times, a service redirected to a python backend) with clients on 6 addresses probing, reading "
                  "the report, uploading files, talking to the redirected service; operators' reloads (SIGHUP); 2 clean "
                  "restarts (SIGTERM)",
                  "access_denied (4: clients outside only_from), outside_access_times (3: the nightly service asked for "
                  "by day), instance_limit (4: stalled uploads past per_source / instances), connection_flood (3: past "
                  "cps, the service deactivated), server_failure (4: the report server crashing, failing), "
                  "server_missing (3: not executable, deleted), redirect_backend_down (3), bad_config_restart (6: the port "
                  "taken, an unknown user, a missing server, unknown attributes, a bad address, a missing brace)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# hitch (TLS proxy, log-level 2, its log file)
# --------------------------------------------------------------------------

HITCH_CONF = """\
frontend = "[127.0.0.1]:{port}"
backend = "[127.0.0.1]:{backend}"
pem-file = "{work}/tls/www.pem"
pem-file = "{work}/tls/api.pem"
sni-nomatch-abort = on
tls-protos = TLSv1.2 TLSv1.3
alpn-protos = "http/1.1"
ciphers = "EECDH+AESGCM:EDH+AESGCM"
daemon = off
log-level = 2
log-filename = "{log}"
user = "{user}"
workers = {workers}
keepalive = 30
ocsp-dir = "{work}/ocsp"
{extra}"""
HITCH_HEAD = re.compile(r"^\d{8}T\d{6}\.\d+ \[ *\d+\] ")
hitch_template = templater(HITCH_HEAD, (r"^[\d.]+:\d+ :\d+ \d+:\d+ ", "CONN "), (r"/[\w./-]+", "PATH"),
                           (r"revents=\d+", "revents=N"))
HITCH_PROBLEM = PROBLEM_WORDS + r"|SSL_ERROR_SSL|SSL_ERROR_SYSCALL|reset|terminated|exited|no such|could not"


def hitch_problem(line: str) -> bool:
    body = HITCH_HEAD.sub("", line, count=1)
    if "err=SSL_ERROR_SSL" in body or "err=SSL_ERROR_SYSCALL" in body:
        return True
    return has_problem_word(body, HITCH_PROBLEM) or body.startswith("{backend-connect}")


class ShopApp(QuietHandler):
    """The application behind the TLS proxies (keep-alive HTTP/1.1); modes ok / hang / reset."""

    protocol_version = "HTTP/1.1"

    def route(self) -> None:
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
        body = (b'{"ok": true, "items": [1, 2, 3]}' if self.path.startswith("/api") else
                b"<html><body>" + self.path.encode() + b"</body></html>" * 8)
        self.reply(201 if self.command == "POST" else 200, body,
                   "application/json" if self.path.startswith("/api") else "text/html")

    do_GET = do_POST = do_HEAD = lambda self: self.route()


def https_session(port: int, r: random.Random, src: str, host: str | None, ctx: ssl.SSLContext, requests: int,
                  paths: list[str]) -> None:
    s = connect(port, src)
    if s is None:
        return
    last_close = r.random() < 0.6  # else the client closes (with a close_notify) after its last response
    try:
        t = ctx.wrap_socket(s, server_hostname=host)
        f = t.makefile("rb")
        for i in range(requests):
            path = r.choice(paths)
            method = "POST" if path.startswith("/api/orders") else "GET"
            body = b'{"sku": "%d"}' % r.randint(100, 999) if method == "POST" else b""
            t.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host or 'www.onb17.test'}\r\nUser-Agent: onb17-client\r\n"
                      f"Content-Length: {len(body)}\r\n{'Connection: close' if i == requests - 1 and last_close else ''}\r\n\r\n"
                      .encode() + body)
            n = 0
            while True:
                line = f.readline()
                if not line or line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            f.read(n)
        f.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            t.settimeout(1)
            t.unwrap()
        t.close()
    except (OSError, ssl.SSLError, ValueError):
        with contextlib.suppress(OSError):
            s.close()


def source_hitch(args) -> Source:
    hitch = need("hitch", "hitch")
    rng = random.Random(f"{args.seed}-hitch")
    with tempfile.TemporaryDirectory(prefix="onb17-hitch-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("tls", "ocsp"):
            os.makedirs(os.path.join(work, d))
        tls = os.path.join(work, "tls")
        for name in ("www", "api"):
            key, crt = make_cert(tls, name, f"{name}.onb17.test")
            write_atomic(os.path.join(tls, f"{name}.pem"), read_text(key) + read_text(crt))
        _, other_crt = make_cert(tls, "other", "old.onb17.test")
        logp, conf, port = os.path.join(work, "hitch.log"), os.path.join(work, "hitch.conf"), free_port()
        app = ModeServer(ShopApp).start()

        def write_conf(extra: str = "", text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else HITCH_CONF.format(
                **({"port": port, "backend": app.port, "work": work, "log": logp, "user": "nobody", "workers": 2,
                    "extra": extra} | kw)))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as errf:  # what hitch says on stderr (a config it cannot use) next to its log
                sv.start("hitch", [hitch, f"--config={conf}"], stdout=errf, stderr=errf, cwd=work)
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("hitch did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("hitch", signal.SIGTERM, 10)

        tls12, tls13 = client_tls(maximum=ssl.TLSVersion.TLSv1_2), client_tls(minimum=ssl.TLSVersion.TLSv1_3)
        alpn12, alpn13 = client_tls(maximum=ssl.TLSVersion.TLSv1_2), client_tls(minimum=ssl.TLSVersion.TLSv1_3)
        for c in (alpn12, alpn13):
            c.set_alpn_protocols(["http/1.1"])  # browsers offer ALPN, scripts and health checks do not
        www_paths = ["/", "/products", "/products/oak-lamp", "/cart", "/account", "/static/app.js", "/static/site.css"]
        api_paths = ["/api/v1/items", "/api/v1/cart", "/api/orders", "/api/v1/me", "/api/v1/search?q=lamp"]

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(HOSTS)
            a = r.random()
            ctx = (tls13 if r.random() < 0.6 else tls12) if r.random() < 0.4 else (alpn13 if r.random() < 0.6 else alpn12)
            if a < 0.55:
                https_session(port, r, src, "www.onb17.test", ctx, r.randint(1, 4), www_paths)
            elif a < 0.9:
                https_session(port, r, src, "api.onb17.test", ctx, r.randint(1, 3), api_paths)
            else:  # health checks by address (no SNI: the default certificate)
                https_session(port, r, src, None, ctx, 1, ["/healthz"])

        write_conf()
        start()
        log = FileLog(logp)
        say(f"hitch on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
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

        def raw(data: bytes, rst: bool = False, wait: float = 0.5) -> None:
            s = connect(port, rng.choice(HOSTS))
            if s is None:
                return
            with contextlib.suppress(OSError):
                s.sendall(data)
                time.sleep(wait)
                if not rst:
                    s.settimeout(2)
                    s.recv(4096)
            reset_close(s) if rst else s.close()

        def curl(*argv: str) -> None:
            run_quiet([need("curl", "curl"), "-sk", "-m", "5", "-o", "/dev/null", "--interface", rng.choice(HOSTS)] + list(argv))

        try:
            normal = normal_loop(args, log, "hitch", round_fn)
            templates = {hitch_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, hitch_template, hitch_problem))
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("backend_down"):  # the application behind hitch stopped
                    for _ in range(4):
                        app.stop()
                        with br.occurrence(1.0):
                            client(rng)
                        app.start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("plaintext_on_tls_port"):  # plain HTTP sent to the TLS port
                    for req in [b"GET / HTTP/1.1\r\nHost: www.onb17.test\r\n\r\n", b"HEAD /healthz HTTP/1.0\r\n\r\n",
                                b"POST /api/orders HTTP/1.1\r\nHost: api.onb17.test\r\nContent-Length: 2\r\n\r\n{}"]:
                        with br.occurrence(1.0):
                            raw(req)
                with br.phase("old_tls_version"):  # clients offering only TLS 1.0 / 1.1
                    for v in [("--tlsv1.0", "--tls-max", "1.0"), ("--tlsv1.1", "--tls-max", "1.1"), ("--tlsv1.0", "--tls-max", "1.1")]:
                        with br.occurrence(1.0):
                            curl(*v, "--ciphers", "DEFAULT@SECLEVEL=0", f"https://127.0.0.1:{port}/")
                with br.phase("unknown_sni"):  # names hitch has no certificate for (sni-nomatch-abort)
                    for name in ["shop.onb17.test", "old.onb17.test", "www.onb17.example"]:
                        with br.occurrence(1.0):
                            https_session(port, rng, rng.choice(HOSTS), name, tls13, 1, ["/"])
                with br.phase("bad_handshake"):  # garbage, a cut-short ClientHello then a reset, silence past the timeout
                    for how in ["garbage", "cut", "silent", "garbage", "cut"]:
                        with br.occurrence(1.0):
                            if how == "garbage":
                                raw(bytes(rng.getrandbits(8) for _ in range(rng.randint(40, 200))))
                            elif how == "cut":
                                raw(TLS_HELLO[:rng.randint(5, 20)], rst=True, wait=0.3)
                            else:
                                raw(b"", wait=4.0)
                with br.phase("worker_killed"):  # a hitch worker SIGKILLed (the manager starts another)
                    for _ in range(3):
                        proc = sv.procs.get("hitch")
                        kids = children(proc.pid) if proc else []
                        with br.occurrence(2.0):
                            kill_pids(kids[:1])
                            time.sleep(1.0)
                            client(rng)
                        time.sleep(1.0)
                        br.between()
                with br.phase("bad_config_restart"):  # hitch.conf mistakes, bad certificates, the port taken
                    blocker = tcp_blocker()
                    mismatched = os.path.join(tls, "mismatch.pem")
                    write_atomic(mismatched, read_text(os.path.join(tls, "www.key")) + read_text(other_crt))
                    good = HITCH_CONF.format(port=port, backend=app.port, work=work, log=logp, user="nobody", workers=2,
                                             extra="")
                    for kw in [{"port": blocker.getsockname()[1]},
                               {"text": good.replace(f"{work}/tls/api.pem", f"{work}/tls/api-2027.pem")},
                               {"text": good.replace(f"{work}/tls/api.pem", mismatched)},
                               {"text": good.replace("tls-protos = TLSv1.2 TLSv1.3", "tls-protos = TLSv1.2 TLSv1.4")},
                               {"user": "hitch-svc"},
                               {"text": good.replace("keepalive = 30", "keepalive = 30s")}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(1.5)
                            client(rng)
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
            app.stop()
    return Source("hitch", "hitch", dpkg_version("hitch"),
                  "hitch's log file at log-level 2: a compact ISO time stamp with microseconds, the pid in brackets, then "
                  "either a component in braces (`20261207T054001.123456 [ 4242] {core} Listening on 127.0.0.1:40123`) or a "
                  "connection's client address, backend port and file descriptors and its step (`... [ 4244] "
                  "127.0.0.3:51234 :40124 8:9 ssl end handshake`, `... proxy shutdown req=SHUTDOWN_CLEAR`); what it "
                  "writes on stderr at a failed start appended; each TLS connection traced by its client address and "
                  "port from connect through its handshake and backend connection to its shutdown",
                  "hitch (2 workers as nobody, two certificates told apart by SNI with sni-nomatch-abort, TLS 1.2 and "
                  "1.3, ALPN http/1.1) in front of a python shop application (keep-alive HTTP/1.1) with HTTPS clients on "
                  "8 addresses (browsers and API clients over TLS 1.2 and 1.3, 1-4 requests per connection, health "
                  "checks without SNI); 2 clean restarts (SIGTERM)",
                  "backend_down (4: the application stopped), plaintext_on_tls_port (3: plain HTTP requests), "
                  "old_tls_version (3: TLS 1.0 / 1.1 only clients), unknown_sni (3: names without a certificate), "
                  "bad_handshake (5: garbage, ClientHellos cut short by a reset, a silent client), worker_killed (3: a "
                  "worker SIGKILLed), bad_config_restart (6: the port taken, a missing pem file, a key not matching its "
                  "certificate, an unknown protocol, an unknown user, a bad number)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# h2o (access log and error log in one file)
# --------------------------------------------------------------------------

H2O_CONF = """\
user: nobody
error-log: {log}
access-log:
  path: {log}
  format: "%h %l %u %t \\"%r\\" %s %b \\"%{{Referer}}i\\" \\"%{{User-agent}}i\\" %{{duration}}x %{{error}}x"
num-threads: 2
limit-request-body: 65536
listen:
  host: 127.0.0.1
  port: {p_plain}
listen:
  host: 127.0.0.1
  port: {p_tls}
  ssl:
    certificate-file: {work}/tls/www.crt
    key-file: {work}/tls/www.key
{extra}hosts:
  "www.onb17.test":
    paths:
      "/":
        file.dir: {work}/www
      "/api":
        proxy.reverse.url: http://127.0.0.1:{b_api}/api
        proxy.timeout.io: 2000
        proxy.preserve-host: ON
      "/account":
        proxy.reverse.url: http://127.0.0.1:{b_app}/account
        proxy.timeout.io: 2000
      "/shop":
        redirect:
          url: /products/
          status: 301
  "static.onb17.test":
    paths:
      "/":
        file.dir: {work}/static
        header.add: "Cache-Control: public, max-age=86400"
"""
H2O_ACCESS = re.compile(r'^[\d.]+ \S+ \S+ \[[^\]]+\] "[^"]*" (\d{3}) ')
h2o_template = templater(re.compile(r"^[\d.]+ \S+ \S+ \[[^\]]+\] "), (r'"(GET|POST|PUT|DELETE|HEAD|OPTIONS) [^"]*"', r'"\1 URL"'),
                         (r"request:/\S*", "request:URL"), (r"\(pid:\d+\)", "(pid:N)"), (r"/[\w./-]+", "PATH"))


def h2o_problem(line: str) -> bool:
    m = H2O_ACCESS.match(line)
    if m:
        return int(m.group(1)) >= 400
    return has_problem_word(line)


class ApiBackend(QuietHandler):
    """The shop's API / account backends behind h2o; modes ok / hang / reset."""

    protocol_version = "HTTP/1.1"

    def route(self) -> None:
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
        body = b'{"ok": true, "path": "%s"}' % self.path.encode()
        self.reply(201 if self.command == "POST" else 200, body, "application/json")

    do_GET = do_POST = do_HEAD = do_DELETE = lambda self: self.route()


def h2o_site(work: str, rng: random.Random) -> tuple[list[str], list[str]]:
    pages, assets = ["/", "/products/", "/about.html", "/contact.html", "/favicon.ico", "/robots.txt"], []
    files = {"www/index.html": 1800, "www/products/index.html": 4200, "www/about.html": 1200, "www/contact.html": 900,
             "www/favicon.ico": 318, "www/robots.txt": 40}
    for adj in ("oak", "walnut", "linen", "steel", "ceramic", "copper"):
        for noun in ("lamp", "chair", "desk", "mug", "rug", "shelf"):
            files[f"www/products/{adj}-{noun}.html"] = rng.randint(1500, 6000)
            pages.append(f"/products/{adj}-{noun}.html")
            files[f"static/img/{adj}-{noun}.jpg"] = rng.randint(2000, 30000)
            assets.append(f"/img/{adj}-{noun}.jpg")
    for name, size in (("css/site.css", 8200), ("js/app.js", 24000), ("js/cart.js", 6100), ("fonts/inter.woff2", 21000)):
        files[f"static/{name}"] = size
        assets.append(f"/{name}")
    for rel, size in files.items():
        p = os.path.join(work, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write((b"<!-- onb17 -->" + bytes(rng.choice(b"abcdefghij \n") for _ in range(size)))[:size])
    return pages, assets


def source_h2o(args) -> Source:
    h2o = need("h2o", "h2o")
    rng = random.Random(f"{args.seed}-h2o")
    with tempfile.TemporaryDirectory(prefix="onb17-h2o-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("tls", "run"):
            os.makedirs(os.path.join(work, d))
        make_cert(os.path.join(work, "tls"), "www", "www.onb17.test")
        pages, assets = h2o_site(work, rng)
        logp, conf = os.path.join(work, "h2o.log"), os.path.join(work, "h2o.conf")
        api, appb = ModeServer(ApiBackend).start(), ModeServer(ApiBackend).start()
        ports = {"p_plain": free_port(), "p_tls": free_port(), "b_api": api.port, "b_app": appb.port}

        def write_conf(extra: str = "", text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else H2O_CONF.format(work=work, log=logp, extra=extra, **(ports | kw)))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as errf:  # h2o's stderr (start-up notes, a config it cannot use) next to its log
                sv.start("h2o", [h2o, "-c", conf], stdout=errf, stderr=errf, cwd=work)
            if wait:
                if not (listening(ports["p_plain"], 20) and listening(ports["p_tls"], 5)):
                    raise RuntimeError("h2o did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("h2o", signal.SIGTERM, 10)

        tls = client_tls()
        etags: dict[str, str] = {}

        def conn(r: random.Random, src: str, secure: bool) -> http.client.HTTPConnection:
            if secure:
                return http.client.HTTPSConnection("127.0.0.1", ports["p_tls"], timeout=10, source_address=(src, 0), context=tls)
            return http.client.HTTPConnection("127.0.0.1", ports["p_plain"], timeout=10, source_address=(src, 0))

        def get(c: http.client.HTTPConnection, method: str, path: str, host: str, ua: str, extra: dict | None = None,
                body: bytes | None = None) -> int:
            hdrs = {"Host": host, "User-Agent": ua, "Accept-Encoding": "gzip"} | (extra or {})
            if body is not None:
                hdrs["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=hdrs)
            resp = c.getresponse()
            resp.read()
            if resp.getheader("ETag"):
                etags[path] = resp.getheader("ETag")
            return resp.status

        uas = ["Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
               "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
               "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"]

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(HOSTS)
            a = r.random()
            try:
                if a < 0.5:  # a browser: a page, its assets (conditional when seen before), over HTTP/1.1
                    c = conn(r, src, r.random() < 0.5)
                    ua = r.choice(uas)
                    page = r.choice(pages)
                    get(c, "GET", page, "www.onb17.test", ua, {"Referer": "https://www.onb17.test/"} if r.random() < 0.5 else {})
                    c2 = conn(r, src, r.random() < 0.5)
                    for asset in r.sample(assets, r.randint(1, 4)):
                        extra = {"If-None-Match": etags[asset]} if asset in etags and r.random() < 0.6 else {}
                        get(c2, "GET", asset, "static.onb17.test", ua, extra | {"Referer": f"https://www.onb17.test{page}"})
                    c.close()
                    c2.close()
                elif a < 0.75:  # the shop's app talking to the API
                    c = conn(r, src, True)
                    ua = r.choice(["shop-ios/4.2.1 (iPhone; iOS 17.2)", "okhttp/4.12.0", "python-requests/2.31.0"])
                    for _ in range(r.randint(1, 3)):
                        b = r.random()
                        if b < 0.6:
                            get(c, "GET", r.choice(["/api/v1/items", "/api/v1/cart", f"/api/v1/items/{r.randint(1, 400)}",
                                                    f"/api/v1/search?q={r.choice(WORDS)}"]), "www.onb17.test", ua)
                        elif b < 0.85:
                            get(c, "POST", "/api/v1/cart", "www.onb17.test", ua, body=b'{"sku": %d}' % r.randint(100, 999))
                        else:
                            get(c, "GET", f"/account/{r.choice(ACCOUNTS)}/orders", "www.onb17.test", ua)
                    c.close()
                elif a < 0.85:  # old links redirected, HEAD checks
                    c = conn(r, src, False)
                    get(c, r.choice(["GET", "HEAD"]), r.choice(["/shop", "/shop/", "/"]), "www.onb17.test", "curl/7.88.1")
                    c.close()
                else:  # HTTP/2 over TLS (curl): a page or an asset
                    host, path = ("www.onb17.test", r.choice(pages)) if r.random() < 0.5 else ("static.onb17.test", r.choice(assets))
                    run_quiet([need("curl", "curl"), "-sk", "--http2", "-m", "5", "-o", "/dev/null", "--interface", src,
                               "--connect-to", f"{host}:443:127.0.0.1:{ports['p_tls']}", f"https://{host}{path}"])
            except (OSError, http.client.HTTPException):
                pass

        write_conf()
        start()
        log = FileLog(logp)
        say(f"h2o on 127.0.0.1:{ports['p_plain']} / {ports['p_tls']}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
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

        def api_call(path: str = "/api/v1/cart", method: str = "GET") -> None:
            with contextlib.suppress(OSError, http.client.HTTPException):
                c = conn(rng, rng.choice(HOSTS), rng.random() < 0.5)
                get(c, method, path, "www.onb17.test", "shop-ios/4.2.1 (iPhone; iOS 17.2)",
                    body=b'{"sku": 1}' if method == "POST" else None)
                c.close()

        def raw(data: bytes) -> None:
            s = connect(ports["p_plain"], rng.choice(HOSTS))
            if s is not None:
                with contextlib.suppress(OSError), s:
                    s.sendall(data)
                    s.settimeout(3)
                    s.recv(4096)

        try:
            normal = normal_loop(args, log, "h2o", round_fn)
            templates = {h2o_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, h2o_template, h2o_problem))
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("backend_down"):  # the API / account backend stopped
                    for b, path in [(api, "/api/v1/cart"), (appb, "/account/alice/orders"), (api, "/api/v1/items"),
                                    (appb, "/account/bob/orders")]:
                        b.stop()
                        with br.occurrence(1.0):
                            api_call(path)
                        b.start()
                        time.sleep(0.3)
                        br.between()
                with br.phase("backend_timeout"):  # a backend hanging past proxy.timeout.io
                    for b, path in [(api, "/api/v1/search?q=lamp"), (appb, "/account/carol/orders"), (api, "/api/v1/cart")]:
                        b.mode = "hang"
                        with br.occurrence(1.0):
                            api_call(path)
                        b.mode = "ok"
                        time.sleep(5.0)  # the backend's hanging handler finishes
                        br.between()
                with br.phase("backend_reset"):  # a backend resetting its connections
                    for b, path, method in [(api, "/api/v1/cart", "POST"), (appb, "/account/dave/orders", "GET"),
                                            (api, "/api/v1/items/12", "GET")]:
                        b.mode = "reset"
                        with br.occurrence(1.0):
                            api_call(path, method)
                        b.mode = "ok"
                        time.sleep(0.3)
                        br.between()
                with br.phase("files_missing"):  # a deploy that lost files: pages and assets 404
                    for rel, paths in [("www/products", ["/products/oak-lamp.html", "/products/"]),
                                       ("static/css", ["/css/site.css"]), ("static/img", ["/img/walnut-desk.jpg"]),
                                       ("www/about.html", ["/about.html"])]:
                        p = os.path.join(work, rel)
                        os.rename(p, p + ".bak")
                        with br.occurrence(1.0), contextlib.suppress(OSError, http.client.HTTPException):
                            c = conn(rng, rng.choice(HOSTS), False)
                            for path in paths:
                                get(c, "GET", path, "static.onb17.test" if rel.startswith("static") else "www.onb17.test",
                                    rng.choice(uas))
                            c.close()
                        os.rename(p + ".bak", p)
                        br.between()
                with br.phase("permission_denied"):  # files and directories the server's user cannot read
                    for rel, path, host in [("www/contact.html", "/contact.html", "www.onb17.test"),
                                            ("static/js", "/js/app.js", "static.onb17.test"),
                                            ("www/products/steel-mug.html", "/products/steel-mug.html", "www.onb17.test")]:
                        p = os.path.join(work, rel)
                        mode = os.stat(p).st_mode & 0o777
                        os.chmod(p, 0o700 if os.path.isdir(p) else 0o600)
                        with br.occurrence(1.0), contextlib.suppress(OSError, http.client.HTTPException):
                            c = conn(rng, rng.choice(HOSTS), True)
                            get(c, "GET", path, host, rng.choice(uas))
                            c.close()
                        os.chmod(p, mode)
                        br.between()
                with br.phase("bad_request"):  # malformed, oversized, wrong methods
                    for data in [b"GET /products/ HTTP/1.1\r\nHost: www.onb17.test\r\nX-Pad: " + b"a" * 70000 + b"\r\n\r\n",
                                 b"POST /api/v1/cart HTTP/1.1\r\nHost: www.onb17.test\r\nContent-Length: 200000\r\n\r\n" + b"{" * 200000,
                                 b"DELETE /index.html HTTP/1.1\r\nHost: www.onb17.test\r\n\r\n",
                                 b"GET /../../etc/passwd HTTP/1.1\r\nHost: www.onb17.test\r\n\r\n",
                                 b"GET / HTTP/1.1\r\nHost: www.onb17.test\r\nContent-Length: -5\r\n\r\n",
                                 b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(40)]:
                        with br.occurrence(1.0):
                            raw(data)
                with br.phase("bad_config_restart"):  # h2o.conf mistakes, a missing key, the port taken, h2o restarted
                    blocker = tcp_blocker()
                    good = H2O_CONF.format(work=work, log=logp, extra="", **ports)
                    for kw in [{"p_plain": blocker.getsockname()[1]},
                               {"text": good.replace(f"{work}/tls/www.key", f"{work}/tls/www-2027.key")},
                               {"text": good.replace("        proxy.timeout.io: 2000\n        proxy.preserve-host: ON",
                                                     "        proxy.timeout.io: 2s\n        proxy.preserve-host: ON")},
                               {"text": good.replace("      \"/shop\":\n", "      \"/shop\":\n    bad-indent: yes\n")},
                               {"text": good.replace("num-threads: 2", "num-threads: 2\nhttp2-max-streams: 100")},
                               {"text": good.replace("user: nobody", "user: h2o-www")}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(1.5)
                            client(rng)
                        restart_clean()
                        time.sleep(0.3)
                        br.between()
                    blocker.close()
        finally:
            stop()
            api.stop()
            appb.stop()
    return Source("h2o", "h2o", dpkg_version("h2o"),
                  "h2o's access log and error log in one file: access lines in the combined format plus the duration and "
                  "h2o's error (`127.0.0.3 - - [07/Dec/2026:05:40:01 +0000] \"GET /products/oak-lamp.html HTTP/2\" 200 1834 "
                  "\"-\" \"Mozilla/5.0 ...\" 0.000 -`), error-log lines without a time stamp naming the module in brackets "
                  "(`[lib/core/proxy.c] in request:/api/v1/cart:connection failed`), its stderr (start-up notes, a config "
                  "it cannot use) appended; each request traced by its path and client",
                  "h2o (as nobody, a plain and a TLS listener, HTTP/1.1 and HTTP/2) serving a shop site (36 product pages) "
                  "and a static host (images, css, js, fonts, a Cache-Control header), proxying /api and /account to two "
                  "python backends, redirecting old /shop links; browsers on 8 addresses loading pages and assets "
                  "(conditional requests answered 304), the shop's app calling the API, HEAD checks, curl over HTTP/2; "
                  "2 clean restarts (SIGTERM)",
                  "backend_down (4: the API / account backend stopped), backend_timeout (3: a backend hanging past "
                  "proxy.timeout.io), backend_reset (3: a backend resetting connections), files_missing (4: pages, css, "
                  "images lost by a deploy), permission_denied (3: files and a directory unreadable), bad_request (6: "
                  "oversized headers and body, a DELETE of a file, a path traversal, a negative length, TLS on the plain "
                  "port), bad_config_restart (6: the port taken, a missing key file, a bad timeout, bad YAML, an unknown "
                  "directive, an unknown user)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# dnsdist (--supervised -v, its stdout and stderr)
# --------------------------------------------------------------------------

DNSDIST_CONF = """\
setLocal("127.0.0.1:{port}")
setACL({{"127.0.0.0/29"}})
setSecurityPollSuffix("")
newServer({{address="127.0.0.1:{b_ns1}", name="ns1", checkInterval=1, maxCheckFailures=2, rise=2, checkName="health.onb17.test."}})
newServer({{address="127.0.0.1:{b_ns2}", name="ns2", checkInterval=1, maxCheckFailures=2, rise=2, checkName="health.onb17.test."}})
newServer({{address="127.0.0.1:{b_corp}", name="corp1", pool="internal", checkInterval=1, maxCheckFailures=2, rise=2,
           checkName="health.corp.onb17.test."}})
setServerPolicy(leastOutstanding)
addAction({{"corp.onb17.test."}}, PoolAction("internal"))
addAction(AllRule(), LogAction("", false, false, false, false, true))
local dbr = dynBlockRulesGroup()
dbr:setQueryRate({qps}, 3, "Exceeded query rate", 8)
function maintenance()
  dbr:apply()
end
controlSocket("127.0.0.1:{console}")
setKey("{key}")
webserver("127.0.0.1:{web}")
setWebserverConfig({{password="{webpw}", apiKey="{apikey}", acl="127.0.0.0/8"}})
{extra}"""
DNSDIST_KEY = "MXNeLFWHUe4363BBKrY06cAsH8NWNb+Se2eXU5+Bb74="
dnsdist_template = templater(re.compile(r"^\[\d+\.\d+\] "), (r"\b(for) [\w.-]+(?=[| ])", r"\1 NAME"),
                             (r"\bid \d+", "id N"), (r"\(\d+\)$", "(N)"), (r"/[\w./-]+", "PATH"))
DNSDIST_PROBLEM = PROBLEM_WORDS + r"|exception|dropped|dropping|block|blocked|down|truncated"


def dnsdist_problem(line: str) -> bool:
    if re.match(r"^\[\d+\.\d+\] Packet from ", line) or line.startswith(("Got query for", "Got answer from")):
        return False  # the names the clients asked for are their words
    return has_problem_word(line, DNSDIST_PROBLEM)


def dns_packet(name: str, qtype: str, qid: int, rd: bool = True) -> bytes:
    q = struct.pack(">HHHHHH", qid, 0x0100 if rd else 0, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".") if p) + b"\0"
    return q + struct.pack(">HH", QTYPES[qtype], 1)


class DnsBackend:
    """An authoritative-looking DNS server over UDP and TCP behind dnsdist; modes ok / servfail / drop."""

    def __init__(self, port: int, zone: str):
        self.port, self.zone, self.mode = port, zone, "ok"
        self.udp = self.tcp = None

    def answer(self, q: bytes) -> bytes | None:
        if len(q) < 12 or self.mode == "drop":
            return None
        qid, flags = struct.unpack(">HH", q[:4])
        i, labels = 12, []
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
            i += 1 + q[i]
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0] if i + 3 <= len(q) else 1
        question = q[12:i + 5]
        name = ".".join(labels).lower()
        rcode, rdata = 0, b""
        if self.mode == "servfail":
            rcode = 2
        elif labels and labels[0].startswith("nx"):
            rcode = 3
        elif qtype == 1:
            rdata = bytes([10, 17, sum(name.encode()) % 250 + 1, len(name) % 250 + 1])
        elif qtype == 28:
            rdata = bytes.fromhex("20010db8") + bytes(10) + struct.pack(">H", sum(name.encode()) % 65000 + 1)
        elif qtype == 15:
            rdata = struct.pack(">H", 10) + b"\x02mx\xc0\x0c"
        elif qtype == 16:
            txt = b"v=spf1 mx -all"
            rdata = bytes([len(txt)]) + txt
        elif qtype == 33:
            rdata = struct.pack(">HHH", 10, 5, 5060) + b"\x03sip\xc0\x0c"
        an = 1 if rdata else 0
        resp = struct.pack(">HHHHHH", qid, 0x8400 | (flags & 0x0100) | 0x0080 | rcode, 1, an, 0, 0) + question
        if rdata:
            resp += b"\xc0\x0c" + struct.pack(">HHIH", qtype, 1, 300, len(rdata)) + rdata
        return resp

    def start(self) -> None:
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.tcp = socket.socket()
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(32)
        threading.Thread(target=self.udp_loop, args=(self.udp,), daemon=True).start()
        threading.Thread(target=self.tcp_loop, args=(self.tcp,), daemon=True).start()

    def udp_loop(self, s: socket.socket) -> None:
        while True:
            try:
                q, addr = s.recvfrom(4096)
                r = self.answer(q)
                if r:
                    s.sendto(r, addr)
            except OSError:
                return
            except Exception:  # noqa: BLE001, S112 (a malformed query: no answer)
                continue

    def tcp_loop(self, s: socket.socket) -> None:
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            threading.Thread(target=self.tcp_serve, args=(c,), daemon=True).start()

    def tcp_serve(self, c: socket.socket) -> None:
        with contextlib.suppress(Exception), c:
            c.settimeout(5)
            while True:
                hdr = c.recv(2)
                if len(hdr) < 2:
                    return
                q = c.recv(struct.unpack(">H", hdr)[0])
                r = self.answer(q)
                if r:
                    c.sendall(struct.pack(">H", len(r)) + r)

    def stop(self) -> None:
        for s in (self.udp, self.tcp):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
        self.udp = self.tcp = None


def dns_ask(port: int, name: str, qtype: str, src: str, tcp: bool = False, timeout: float = 2.0) -> None:
    q = dns_packet(name, qtype, random.getrandbits(16))
    with contextlib.suppress(OSError):
        if tcp:
            with socket.create_connection(("127.0.0.1", port), timeout, source_address=(src, 0)) as s:
                s.sendall(struct.pack(">H", len(q)) + q)
                s.recv(4096)
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind((src, 0))
                s.settimeout(timeout)
                s.sendto(q, ("127.0.0.1", port))
                s.recv(4096)


def source_dnsdist(args) -> Source:
    dnsdist = need("dnsdist", "dnsdist")
    rng = random.Random(f"{args.seed}-dnsdist")
    with tempfile.TemporaryDirectory(prefix="onb17-dnsdist-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf = os.path.join(work, "dnsdist.log"), os.path.join(work, "dnsdist.conf")
        ports = {k: free_port() for k in ("port", "b_ns1", "b_ns2", "b_corp", "console", "web")}
        backs = {"ns1": DnsBackend(ports["b_ns1"], "onb17.test"), "ns2": DnsBackend(ports["b_ns2"], "onb17.test"),
                 "corp1": DnsBackend(ports["b_corp"], "corp.onb17.test")}
        for b in backs.values():
            b.start()
        webpw, apikey = "Web-Onb17", "api-onb17-7f3a"
        base = {"key": DNSDIST_KEY, "webpw": webpw, "apikey": apikey, "qps": 40, "extra": ""}

        def conf_text(**kw) -> str:
            return DNSDIST_CONF.format(**(ports | base | kw))

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else conf_text(**kw))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:
                sv.start("dnsdist", [dnsdist, "--supervised", "--disable-syslog", "-v", "-u", "nobody", "-g", "nogroup",
                                     "-C", conf], stdout=out, stderr=out, cwd=work)
            if wait:
                if not listening(ports["web"], 20):
                    raise RuntimeError("dnsdist did not start")
                time.sleep(1.5)

        def stop() -> None:
            sv.stop("dnsdist", signal.SIGTERM, 10)

        def console(cmd: str, cfg: str | None = None) -> None:
            run_quiet([dnsdist, "-C", cfg or conf, "-c", "-e", cmd], 10)

        def web(path: str, user_pw: tuple[str, str] | None = None, key: str | None = None, src: str = "127.0.0.1") -> int:
            hdrs = {}
            if user_pw:
                hdrs["Authorization"] = "Basic " + base64.b64encode(f"{user_pw[0]}:{user_pw[1]}".encode()).decode()
            if key:
                hdrs["X-API-Key"] = key
            try:
                c = http.client.HTTPConnection("127.0.0.1", ports["web"], timeout=5, source_address=(src, 0))
                c.request("GET", path, headers=hdrs)
                r = c.getresponse()
                r.read()
                c.close()
                return r.status
            except (OSError, http.client.HTTPException):
                return 0

        hostnames = ["www", "api", "mail", "cdn", "shop", "static", "auth", "vpn", "git", "status"]
        corp = ["intranet", "wiki", "jira", "ldap", "files", "printer1", "build"]

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(ALLOWED)
            a = r.random()
            tcp = r.random() < 0.12
            if a < 0.5:
                dns_ask(ports["port"], f"{r.choice(hostnames)}.onb17.test", r.choice(["A", "A", "A", "AAAA"]), src, tcp)
            elif a < 0.62:
                dns_ask(ports["port"], "onb17.test", r.choice(["MX", "TXT"]), src, tcp)
            elif a < 0.68:
                dns_ask(ports["port"], "_sip._tcp.onb17.test", "SRV", src, tcp)
            elif a < 0.86:
                dns_ask(ports["port"], f"{r.choice(corp)}.corp.onb17.test", "A", src, tcp)
            elif a < 0.92:  # typos: NXDOMAIN answers
                dns_ask(ports["port"], f"nx{r.choice(WORDS)}.onb17.test", "A", src, tcp)
            elif a < 0.96:
                web(r.choice(["/api/v1/servers/localhost", "/jsonstat?command=stats", "/api/v1/servers/localhost/statistics"]),
                    key=apikey, src=src)
            elif a < 0.98:
                web("/", (r.choice(["admin", "ops"]), webpw), src=src)
            else:
                console(r.choice(["showServers()", "dumpStats()", "topQueries(5)", "showPools()", "showDynBlocks()"]))

        write_conf()
        start()
        log = FileLog(logp)
        say(f"dnsdist on 127.0.0.1:{ports['port']}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 5))
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

        def udp_raw(data: bytes, src: str) -> None:
            with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind((src, 0))
                s.settimeout(1)
                s.sendto(data, ("127.0.0.1", ports["port"]))
                with contextlib.suppress(OSError):
                    s.recv(4096)

        try:
            normal = normal_loop(args, log, "dnsdist", round_fn)
            templates = {dnsdist_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, dnsdist_template, dnsdist_problem))
            with Background(client, random.Random(rng.random()), (0.2, 0.5)):
                with br.phase("backend_down"):  # a backend DNS server stopped (health checks fail, TCP connects refused)
                    for name in ["ns1", "corp1", "ns2", "corp1"]:
                        with br.occurrence(1.0):
                            backs[name].stop()
                            for _ in range(4):
                                client(rng)
                                dns_ask(ports["port"], "wiki.corp.onb17.test" if name == "corp1" else "www.onb17.test", "A",
                                        rng.choice(ALLOWED), tcp=True)
                            time.sleep(2.5)
                        backs[name].start()
                        time.sleep(3.0)
                        br.between()
                with br.phase("backend_unresponsive"):  # a backend dropping queries (overloaded), then answering SERVFAIL
                    for name, mode in [("ns2", "drop"), ("corp1", "servfail"), ("ns1", "drop"), ("ns2", "servfail")]:
                        with br.occurrence(1.0):
                            backs[name].mode = mode
                            for _ in range(6):
                                client(rng)
                            time.sleep(3.0)
                        backs[name].mode = "ok"
                        time.sleep(3.0)
                        br.between()
                with br.phase("acl_refused"):  # resolvers outside the ACL
                    for src in ["127.0.0.9", "127.0.0.8", "127.0.0.9"]:
                        with br.occurrence(1.0):
                            for _ in range(rng.randint(1, 3)):
                                dns_ask(ports["port"], f"{rng.choice(hostnames)}.onb17.test", "A", src, timeout=0.5)
                with br.phase("query_flood"):  # a client flooding: the dynamic block rule
                    for src in ["127.0.0.5", "127.0.0.3", "127.0.0.6"]:
                        with br.occurrence(2.0):
                            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                                s.bind((src, 0))
                                for i in range(150):
                                    with contextlib.suppress(OSError):
                                        s.sendto(dns_packet(f"{rng.choice(WORDS)}{i}.onb17.test", "A", i), ("127.0.0.1", ports["port"]))
                                    if i % 20 == 0:
                                        time.sleep(0.05)
                            time.sleep(1.5)
                        time.sleep(9.0)  # the block expires
                        br.between()
                with br.phase("malformed_query"):  # packets that are not DNS queries
                    for data in [b"\x12\x34", bytes(rng.getrandbits(8) for _ in range(60)),
                                 struct.pack(">HHHHHH", 4242, 0x8180, 1, 1, 0, 0) + b"\x03www\x05onb17\x04test\x00\x00\x01\x00\x01",
                                 struct.pack(">HHHHHH", 4243, 0x0100, 0, 0, 0, 0),
                                 struct.pack(">HHHHHH", 4244, 0x0100, 1, 0, 0, 0) + b"\x3f" + b"a" * 20,
                                 struct.pack(">HHHHHH", 4245, 0x2900, 1, 0, 0, 0) + b"\x03www\x05onb17\x04test\x00\x00\x01\x00\x01"]:
                        with br.occurrence(1.0):
                            udp_raw(data, rng.choice(ALLOWED))
                with br.phase("console_bad_key"):  # the console with a wrong key / garbage on the console port
                    bad = os.path.join(work, "dnsdist-old.conf")
                    write_atomic(bad, conf_text(key="bXlzZWNyZXRrZXlteXNlY3JldGtleW15c2VjcmV0a2U="))
                    for how in ["key", "garbage", "key", "key"]:
                        with br.occurrence(1.0):
                            if how == "key":
                                console("showServers()", bad)
                            else:
                                s = connect(ports["console"], "127.0.0.1")
                                if s is not None:
                                    with contextlib.suppress(OSError), s:
                                        s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                                        s.settimeout(2)
                                        s.recv(100)
                with br.phase("web_auth_failed"):  # wrong web passwords, wrong / missing API keys
                    for kw in [{"user_pw": ("admin", "admin")}, {"key": "api-onb16-7f3a"}, {"user_pw": ("admin", "Web-Onb16")},
                               {"user_pw": ("ops", "letmein")}, {}, {"user_pw": ("monitor", "")}]:
                        with br.occurrence(1.0):
                            web("/api/v1/servers/localhost" if "key" in kw or not kw else "/", src=rng.choice(ALLOWED), **kw)
                with br.phase("bad_config_restart"):  # dnsdist.conf mistakes, the port taken, dnsdist restarted
                    blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    blocker.bind(("127.0.0.1", 0))
                    good = conf_text()
                    for kw in [{"text": good.replace(f'setLocal("127.0.0.1:{ports["port"]}")',
                                                     f'setLocal("127.0.0.1:{blocker.getsockname()[1]}")')},
                               {"text": good.replace("setServerPolicy(leastOutstanding)", "setServerPolicy(leastOutstandin)")},
                               {"text": good.replace('PoolAction("internal"))', 'PoolAction("internal")')},
                               {"text": good.replace(f'newServer({{address="127.0.0.1:{ports["b_ns2"]}"',
                                                     f'newServer({{address="127.0.0.1:{ports["b_ns2"]}0"')},
                               {"text": good.replace(f'webserver("127.0.0.1:{ports["web"]}")', 'webserver("127.0.0.256:8083")')},
                               {"text": good.replace('setACL({"127.0.0.0/29"})', 'setACL({"127.0.0.0/29", "corp-lan"})')}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(2.0)
                            client(rng)
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for b in backs.values():
                b.stop()
    return Source("dnsdist", "dnsdist", dpkg_version("dnsdist"),
                  "dnsdist's stdout and stderr in the foreground (--supervised, -v), no time stamps except on the "
                  "LogAction's query lines: `[1796602037.124148688] Packet from 127.0.0.3:59394 for www.onb17.test. A with "
                  "id 34388`, `Got query for www.onb17.test|A from 127.0.0.3:59394, relayed to ns1`, `Got answer from "
                  "127.0.0.1:40123, relayed to 127.0.0.3:59394, took 215.296 usec`, `Marking downstream ns1 "
                  "(127.0.0.1:40123) as 'down'`, console and web server connections; each query traced by its client "
                  "address and port from the packet through the relay to the answer",
                  "dnsdist (as nobody, an ACL for 127.0.0.0/29, two pools: the public zone on ns1 and ns2 (leastOutstanding) "
                  "and the internal corp zone on corp1, python backends over UDP and TCP health-checked every second, a "
                  "query-logging LogAction, a dynamic block rule, the console and the web server / API) with stub "
                  "resolvers on 6 addresses asking A / AAAA / MX / TXT / SRV over UDP and TCP (a few NXDOMAIN typos), "
                  "operators on the console (showServers, dumpStats, topQueries, showPools, showDynBlocks) and the web "
                  "API; 2 clean restarts (SIGTERM)",
                  "backend_down (4: a backend stopped), backend_unresponsive (4: a backend dropping queries or answering "
                  "SERVFAIL), acl_refused (3: resolvers outside the ACL), query_flood (3: a client past the dynamic block "
                  "rate), malformed_query (6: short, random, a response, no question, a cut label, an unknown opcode), "
                  "console_bad_key (4: a wrong key, HTTP on the console port), web_auth_failed (6: wrong passwords, an "
                  "empty password, a wrong API key, no credentials), bad_config_restart (6: the port taken, an unknown policy, a Lua "
                  "syntax error, a bad port, a bad address, a bad netmask)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# bird (BIRD 2 as an edge router, its log file with debug traces)
# --------------------------------------------------------------------------

BIRD_EDGE = """\
log "{log}" all;
router id 10.255.0.1;
debug protocols {{ states, routes, filters, events }};
define BOGONS = [ 10.99.0.0/16+, 192.168.0.0/16+, 172.16.0.0/12+, 0.0.0.0/0 ];
filter peer_in {{
  if net ~ BOGONS then reject "bogon prefix ", net;
  if bgp_path.len > 6 then reject "long AS path ", net;
  accept;
}}
protocol device {{ scan time 30; }}
template bgp upstream {{
  local 127.0.0.2 port {port} as 65000;
  strict bind yes;
  multihop;
  hold time 6;
  keepalive time 2;
  connect retry time 3;
  error wait time 2, 8;
  ipv4 {{ import filter peer_in; export all; import limit 60 action restart; }};
}}
{peers}
protocol bgp peer_lab from upstream {{
  description "lab router (planned)";
  neighbor 127.0.0.6 port {port} as 65040;
  passive yes;
}}
{extra}"""
BIRD_EDGE_PEER = """\
protocol bgp peer_{name} from upstream {{
  description "{desc}";
  neighbor {addr} port {port} as {asn};
}}
"""
BIRD_PEER = """\
router id 10.255.0.{rid};
protocol device {{ scan time 60; }}
{statics}
protocol bgp edge {{
  local {addr} port {port} as {asn};
  neighbor 127.0.0.2 port {port} as 65000;
  strict bind yes;
  multihop;
  hold time 6;
  keepalive time 2;
  connect retry time 3;
  error wait time 2, 8;
  ipv4 {{ import all; export all; }};
}}
"""
BIRD_PEERS = [("b", "127.0.0.3", 65010, "transit-a"), ("c", "127.0.0.4", 65020, "customer-c"),
              ("d", "127.0.0.5", 65030, "customer-d")]
BIRD_HEAD = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+ <(?P<lvl>[A-Z]+)> ")
bird_template = templater(BIRD_HEAD, (r"\b\d+\.\d+\.\d+\.\d+/\d+\b", "PREFIX"), (r"/[\w./-]+", "PATH"))


def bird_problem(line: str) -> bool:
    m = BIRD_HEAD.match(line)
    if m:
        if m.group("lvl") in ("ERR", "WARN", "BUG", "FATAL", "AUTH", "BUG"):
            return True
        body = line[m.end():]
        if " rejected by protocol " in body:
            return False  # routine: a route not sent back to the peer it came from
        return (bool(re.search(r"\b(Error|Received): ", body)) or " filtered out " in body
                or has_problem_word(body, PROBLEM_WORDS + r"|hits|limit"))
    return has_problem_word(line)  # bird on stderr: a config it cannot use


def source_bird(args) -> Source:
    bird, birdc = need("bird", "bird2"), need("birdc", "bird2")
    rng = random.Random(f"{args.seed}-bird")
    with tempfile.TemporaryDirectory(prefix="onb17-bird-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf, ctl = os.path.join(work, "bird.log"), os.path.join(work, "bird.conf"), os.path.join(work, "bird.ctl")
        port = free_port()
        peers_text = "".join(BIRD_EDGE_PEER.format(name=n, addr=a, asn=asn, desc=d, port=port) for n, a, asn, d in BIRD_PEERS)
        # each peer's customer prefixes in 3 static protocols, a leak (bogons) and a flood (too many prefixes)
        routes: dict[str, dict[str, list[str]]] = {}
        for i, (n, _, _, _) in enumerate(BIRD_PEERS):
            base = 20 + 10 * i
            routes[n] = {f"cust{k}": [f"10.{base + k}.{j}.0/24" for j in range(rng.randint(4, 10))] for k in range(1, 4)}
            routes[n]["leak"] = [f"192.168.{i + 1}.0/24", f"10.99.{i + 1}.0/24", f"172.16.{4 * i}.0/22"]
            routes[n]["flood"] = [f"100.{64 + i}.{j}.0/24" for j in range(70)]

        def peer_conf(n: str, asn: int | None = None, extra_routes: dict | None = None) -> str:
            idx = [p[0] for p in BIRD_PEERS].index(n)
            _, addr, real_asn, _ = BIRD_PEERS[idx]
            statics = ""
            for proto, nets in (routes[n] | (extra_routes or {})).items():
                disabled = "  disabled;\n" if proto in ("leak", "flood") else ""
                statics += f"protocol static {proto} {{\n{disabled}  ipv4;\n" + "".join(
                    f"  route {net} blackhole;\n" for net in nets) + "}\n"
            return BIRD_PEER.format(rid=idx + 2, statics=statics, addr=addr, port=port, asn=asn or real_asn)

        def write_conf(extra: str = "", text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else BIRD_EDGE.format(log=logp, peers=peers_text, port=port, extra=extra))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as errf:  # bird's stderr (a config it cannot read) next to its log
                sv.start("edge", [bird, "-f", "-c", conf, "-s", ctl, "-P", f"{work}/bird.pid"], stdout=errf, stderr=errf,
                         cwd=work)
            if wait:
                if not log_has(logp, b"<INFO> Started", since, 20):
                    raise RuntimeError("bird did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("edge", signal.SIGTERM, 10)

        def peer_path(n: str, what: str) -> str:
            return os.path.join(work, f"peer_{n}.{what}")

        def start_peer(n: str) -> None:
            sv.start(f"peer_{n}", [bird, "-f", "-c", peer_path(n, "conf"), "-s", peer_path(n, "ctl"), "-P", peer_path(n, "pid")],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)

        def peer_cli(n: str, *cmd: str) -> None:
            run_quiet([birdc, "-s", peer_path(n, "ctl")] + list(cmd), 10)

        def cli(*cmd: str) -> None:
            run_quiet([birdc, "-s", ctl] + list(cmd), 10)

        for n, _, _, _ in BIRD_PEERS:
            write_atomic(peer_path(n, "conf"), peer_conf(n))
            start_peer(n)
        write_conf()
        start()
        log = FileLog(logp)
        say(f"bird edge on 127.0.0.2:{port} with peers {', '.join(p[1] for p in BIRD_PEERS)}; normal phase...")
        state = {"restarts": 0}
        extra_static: dict[str, dict[str, list[str]]] = {n: {} for n, _, _, _ in BIRD_PEERS}

        def churn(r: random.Random) -> None:
            """The peers' customers come and go; operators look at and reload the edge."""
            n = r.choice([p[0] for p in BIRD_PEERS])
            a = r.random()
            if a < 0.45:  # a customer's prefixes withdrawn for a while (maintenance), then announced again
                proto = r.choice(["cust1", "cust2", "cust3"])
                peer_cli(n, "disable", proto)
                time.sleep(r.uniform(0.3, 1.2))
                peer_cli(n, "enable", proto)
            elif a < 0.6:  # a new customer prefix provisioned, or an old one retired (peer reconfigured)
                new = extra_static[n]
                if len(new) < 3 and r.random() < 0.6:
                    new[f"new{len(new) + 1}"] = [f"10.{200 + len(new) * 10 + [p[0] for p in BIRD_PEERS].index(n)}.{j}.0/24"
                                                 for j in range(r.randint(1, 4))]
                elif new:
                    new.pop(max(new))
                write_atomic(peer_path(n, "conf"), peer_conf(n, extra_routes=new))
                peer_cli(n, "configure")
            elif a < 0.72:
                cli("configure")
            elif a < 0.82:
                cli("reload", "in", f"peer_{n}")
            elif a < 0.88:
                cli("reload", "out", f"peer_{n}")
            else:
                cli(*r.choice([("show", "protocols"), ("show", "route", "count"), ("show", "protocols", "all", f"peer_{n}"),
                               ("show", "route", "protocol", f"peer_{n}")]))

        def round_fn(n: int, elapsed: float) -> None:
            churn(rng)
            clean_restart(state, elapsed, stop, start, pause_s=0.5)
            time.sleep(rng.uniform(0.1, 0.5))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        def settle_peer(n: str) -> None:
            write_atomic(peer_path(n, "conf"), peer_conf(n, extra_routes=extra_static[n]))
            proc = sv.procs.get(f"peer_{n}")
            if proc is None or proc.poll() is not None:
                sv.forget(f"peer_{n}")
                start_peer(n)
            else:
                peer_cli(n, "configure")

        def bgp_raw(src: str, data: bytes, wait: float = 1.0) -> None:
            try:  # the edge listens on 127.0.0.2 only (strict bind)
                s = socket.create_connection(("127.0.0.2", port), 5, source_address=(src, 0))
            except OSError:
                s = None
            if s is not None:
                with contextlib.suppress(OSError), s:
                    s.sendall(data)
                    time.sleep(wait)
                    s.settimeout(1)
                    with contextlib.suppress(OSError):
                        s.recv(4096)

        def bgp_open(asn: int, hold: int = 6, version: int = 4) -> bytes:
            body = struct.pack(">BHH4sB", version, asn, hold, socket.inet_aton("10.255.0.40"), 0)
            return b"\xff" * 16 + struct.pack(">HB", 19 + len(body), 1) + body

        try:
            normal = normal_loop(args, log, "bird", round_fn)
            templates = {bird_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, bird_template, bird_problem))
            with Background(churn, random.Random(rng.random()), (0.8, 2.0)):
                with br.phase("peer_down"):  # a peer's router crashes (SIGKILL): its session and routes go away
                    for n in ["c", "d", "b"]:
                        with br.occurrence(2.0):
                            proc = sv.procs.get(f"peer_{n}")
                            if proc is not None:
                                proc.kill()
                            time.sleep(2.0)
                        sv.forget(f"peer_{n}")
                        start_peer(n)
                        time.sleep(5.0)
                        br.between()
                with br.phase("hold_timer_expired"):  # a peer frozen (SIGSTOP) past the hold time
                    for n in ["d", "c", "b"]:
                        proc = sv.procs.get(f"peer_{n}")
                        with br.occurrence(1.5):
                            if proc is not None:
                                proc.send_signal(signal.SIGSTOP)
                            time.sleep(8.0)
                        if proc is not None:
                            proc.send_signal(signal.SIGCONT)
                        time.sleep(6.0)
                        br.between()
                with br.phase("peer_misconfigured"):  # a peer reconfigured with the wrong AS number
                    for n, asn in [("c", 65021), ("d", 64512), ("c", 65200)]:
                        with br.occurrence(2.0):
                            write_atomic(peer_path(n, "conf"), peer_conf(n, asn=asn, extra_routes=extra_static[n]))
                            peer_cli(n, "configure")
                            time.sleep(4.0)
                        settle_peer(n)
                        time.sleep(6.0)
                        br.between()
                with br.phase("route_leak"):  # a peer announcing private / bogon prefixes: the import filter rejects them
                    for n in ["d", "b", "c"]:
                        with br.occurrence(2.0):
                            peer_cli(n, "enable", "leak")
                            time.sleep(1.0)
                        peer_cli(n, "disable", "leak")
                        time.sleep(1.0)
                        br.between()
                with br.phase("prefix_flood"):  # a peer announcing far more prefixes than the import limit
                    for n in ["c", "d"]:
                        with br.occurrence(3.0):
                            peer_cli(n, "enable", "flood")
                            time.sleep(2.0)
                        peer_cli(n, "disable", "flood")
                        cli("enable", f"peer_{n}")
                        time.sleep(6.0)
                        br.between()
                with br.phase("unknown_connect"):  # scanners and misconfigured routers connecting from unknown addresses
                    for src in ["127.0.0.8", "127.0.0.9", "127.0.0.7"]:
                        with br.occurrence(1.0):
                            bgp_raw(src, bgp_open(65099), 0.5)
                        time.sleep(6.0)  # bird rate-limits this warning
                        br.between()
                with br.phase("bad_bgp_message"):  # the planned lab router sending broken messages
                    for data in [b"\x00" * 19, bgp_open(65040, hold=1), bgp_open(65040, version=3),
                                 bgp_open(65041), b"\xff" * 16 + struct.pack(">HB", 19, 9),
                                 b"GET / HTTP/1.1\r\nHost: 127.0.0.2\r\n\r\n"]:
                        with br.occurrence(1.5):
                            bgp_raw("127.0.0.6", data, 0.5)
                        time.sleep(2.5)  # the lab protocol's error wait
                        br.between()
                with br.phase("bad_config_restart"):  # bird restarted on a broken bird.conf / the BGP port taken
                    good = BIRD_EDGE.format(log=logp, peers=peers_text, port=port, extra="")
                    for kw in [{"text": good, "taken": True},
                               {"text": good.replace("router id 10.255.0.1;", "router id 10.255.0.300;")},
                               {"text": good.replace("define BOGONS", "defin BOGONS")},
                               {"text": good + 'include "/etc/bird/peers.d/*.conf";\n'}]:
                        stop()
                        br.between()
                        blocker = None
                        if kw.pop("taken", False):  # another routing daemon holding the BGP address and port
                            blocker = socket.socket()
                            blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                            blocker.bind(("127.0.0.2", port))
                            blocker.listen(1)
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.0)
                        if blocker is not None:
                            stop()
                            blocker.close()
                        restart_clean()
                        time.sleep(3.0)
                        br.between()
        finally:
            stop()
            for n, _, _, _ in BIRD_PEERS:
                proc = sv.procs.get(f"peer_{n}")
                if proc is not None:
                    with contextlib.suppress(OSError):
                        proc.send_signal(signal.SIGCONT)
                sv.stop(f"peer_{n}", signal.SIGTERM, 5)
    return Source("bird", "BIRD Internet Routing Daemon", dpkg_version("bird2"),
                  "bird's log file (log all, debug states / routes / filters / events): a date, a time with "
                  "milliseconds, a level in angle brackets and a message naming the protocol (and channel): "
                  "`2026-12-07 05:40:01.123 <TRACE> peer_c.ipv4 < added 10.31.2.0/24 unicast`, `... <TRACE> peer_b.ipv4 > "
                  "added [best] 10.31.2.0/24 unicast`, `... <TRACE> peer_c: BGP session established`, `... <ERR> peer_c: "
                  "Error: Hold timer expired`; what it writes on stderr at a failed start appended; each session traced "
                  "by its protocol name through its states, each prefix from a peer's import through the export to the "
                  "other peers",
                  "an edge bird (AS 65000 on 127.0.0.2, an import filter against bogons, an import limit) with eBGP "
                  "sessions to 3 peers (bird processes on 127.0.0.3-5 announcing 3 customer static protocols each) and "
                  "a planned passive lab peer; the peers' customers withdrawn and announced again (static protocols "
                  "disabled and enabled), new customer prefixes provisioned and retired (peers reconfigured), operators "
                  "running birdc configure / reload in / reload out / show on the edge; 2 clean restarts (SIGTERM)",
                  "peer_down (3: a peer SIGKILLed), hold_timer_expired (3: a peer SIGSTOPped past the hold time), "
                  "peer_misconfigured (3: a peer with the wrong AS), route_leak (3: bogon prefixes filtered out), "
                  "prefix_flood (2: past the import limit), unknown_connect (3: connections from unknown addresses), "
                  "bad_bgp_message (6: a bad marker, a bad hold time, a bad version, the wrong AS, an unknown message "
                  "type, HTTP), bad_config_restart (4: the BGP port taken, a bad router id, a "
                  "syntax error, a missing include)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_seventeenth", SOURCES, globals(), seed=17017, min_normal_s=60,
               root_for="programs dropping to their own users, ports and processes of several users",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = "none"
ODDITIES = [
    ("rehearsals of each source (--lines 500, then all five at once with --lines 1500, written to scratch folders) "
     "were checked by eye before this run; they led to a user on xinetd's redirected service (xinetd disables a "
     "redirect service without one), a lower cps for the flood, ALPN and close_notify for hitch's clients, one URL "
     "per curl call for h2o (see below), domain names masked in dnsdist's templates, bird's raw BGP clients "
     "connecting to the edge's own address; nothing had been scored on them"),
    ("xinetd: internal daytime / time services log START without an EXIT; chargen's clients always go away first, "
     "so normal.log has 'EXIT: chargen-stream signal=13' lines (SIGPIPE: not counted as a problem); xinetd logs "
     "'ERROR: ...' start-up complaints only for a bad config, but a connection flood past cps also hits the service's "
     "instances limit, so connection_flood events are mostly 'FAIL: echo-stream service_limit' lines and only the "
     "first one has 'Deactivating service echo due to excessive incoming connections'; a server that hangs logs a "
     "plain START / EXIT status=0 (left out); its own messages have 'xinetd[pid]: LEVEL:' after a time stamp without "
     "the colon the service lines have; in this run bursts of normal clients twice passed echo's cps (20 a second), so "
     "normal.log holds two 'ERROR: Deactivating service echo due to excessive incoming connections' lines with their "
     "'FAIL: echo-stream connections per second' and 'ERROR: Activating service echo' lines: error-level lines that "
     "are part of the normal traffic"),
    ("hitch: about 10 lines per TLS connection; 'ssl client handshake err=SSL_ERROR_WANT_READ' and 'No NPN/ALPN "
     "negotiation happened.' are routine lines of normal.log; most failures are two lines ('err=SSL_ERROR_SSL' and "
     "'Handshake failure: error:0A0000xx:SSL routines::...'); a failed backend connect is one '{backend-connect}: "
     "Connection refused' line without the client's address; a killed worker is one '{core} Child N was terminated by "
     "signal 9.' line; config errors at a restart go to stderr without a time stamp; hitch 1.7 has no backend or "
     "handshake timeouts, so a hanging backend logs nothing (left out)"),
    ("h2o: the error log has no time stamps ('[lib/core/proxy.c] in request:/api/v1/cart:connection failed'); "
     "every start writes 'fetch-ocsp-response ...' and 'failed to extract ocsp URI from .../www.crt' on stderr (a "
     "self-signed certificate) into normal.log: lines that read like errors and are normal; with a backend stopped, h2o can still use a kept-alive connection to it, so some backend_down "
     "occurrences logged nothing; a request whose Host "
     "carries a port (curl over HTTP/2 to :PORT) falls to the first host and gets 404, so the HTTP/2 clients connect "
     "with --connect-to; a proxied request that hangs gets 502 (not 504) with 'I/O timeout'; a malformed request "
     "line, an oversized header and TLS bytes on the plain port are answered 400 / 431 without any log line; the bad "
     "timeout ('2s' for proxy.timeout.io) is accepted and read as 2 ms, so that bad_config_restart event is API "
     "requests failing with 'I/O timeout' after a successful restart"),
    ("dnsdist: no time stamps except on the LogAction's query lines; 'Closing TCP client connection with ...: EOF "
     "while reading message' after every TCP query and 'Passing a plain-text password ... is not advised' at every "
     "start are in normal.log; a backend answering SERVFAIL or dropping queries shows only as 'Marking downstream "
     "... as 'down'' (and 'Dropped query ..., no policy applied' when a pool has no server left); wrong API keys, "
     "HTTP on the console port and most malformed packets (too short, random, a response, no question, a bad "
     "opcode) log nothing, so those occurrences made no event; a query flood is 'Inserting dynamic block for ...' "
     "and 'Query from ... dropped because of dynamic block' lines; a Lua error at a restart comes with an "
     "untimestamped stack traceback"),
    ("bird: with debug routes most of normal.log is per-prefix import / export traces ('peer_c.ipv4 < added ...', "
     "'peer_b.ipv4 > added [best] ...', '> ignored', '< rejected by protocol' (a route not sent back to its "
     "peer: routine, not counted), all 'unreachable' because the peers' next hops are not resolved on loopback); "
     "remote errors are logged at the level <RMT> (neither ERR nor WARN); a killed peer is a single 'Connection "
     "closed' (its routes withdrawn with known templates); 'BGP: Unexpected connect from unknown address' is rate "
     "limited, so the unknown_connect occurrences are spaced; birdc configure on a broken bird.conf reports the "
     "error to birdc only and bird logs nothing, so that breakage was left out; config errors at a restart are one "
     "untimestamped 'bird: file:line:col message' line on stderr"),
]


if __name__ == "__main__":
    sys.exit(main())
