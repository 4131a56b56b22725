#!/usr/bin/env python3
"""Generate the fourteenth onboarding corpus: real log lines written by real programs, grouped into events.

A fourteenth corpus built exactly like benchmarks/onboarding_thirteenth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs at a restart, wrong passwords,
garbage on the wire, unreachable upstreams, killed processes, a step of the work made to fail...).  It never
writes a log line itself (fail2ban *reads* auth / mail / web logs that the script's "clients" append failed
and successful logins to: those are its input, not its log).  The programs trace multi-step work per named
item (a SOCKS session's accept, connect, data and close in dante, an SSH session's connection, authentication
and exit in dropbear, a message's scan in spamd, a job's packets in gearmand, an address's matches, ban and
unban in fail2ban).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends dropbear-bin
dante-server spamd gearman-job-server fail2ban; also passwd (useradd / chpasswd / userdel), util-linux,
openssl and python3.  The clients are python code in this script (a SOCKS4 / SOCKS5 client, the spamc
protocol over sockets, the gearman binary and text protocols over sockets, appenders of auth / mail / web
log lines) and the programs' own CLIs (dbclient, dropbearkey, fail2ban-client).  No system service of these
packages needs to run: each daemon is started directly as a plain process, without systemd.  dropbear and
dante authenticate against system accounts: ten users (alice ... judy) and two service accounts are created
with useradd for the run and removed afterwards):

  dropbear   Dropbear SSH server 2022.83 (dropbear -F -E, a private ed25519 host key, -T 4; its stderr):
             `[12345] Dec 06 05:40:01 Password auth succeeded for 'alice' from 127.0.0.3:41234`.  Normal: SSH
             sessions of 10 users (dbclient with the password, running one of a dozen shell commands: uptime,
             ls, df, id, cat, wc, a short sleep...) from several hosts, 2 clean restarts.  It logs 3 lines a
             session: its normal phase is cut at 2 x --min-normal-seconds.  Broken: wrong passwords (until
             the maximum of tries), unknown users, accounts with a locked password or a nologin shell, garbage
             on the wire (HTTP, a TLS hello, SSH-1 identifications, binary junk), a broken host key / the port
             taken / bad options at a restart.
  dante      Dante SOCKS server 1.4 (danted -f, a private sockd.conf: username or no authentication, log
             connect disconnect error ioop, block rules; logoutput to a file): `Dec  6 05:40:01
             (1796546097.056451) danted[9372]: info: pass(2): tcp/connect [: username%alice@127.0.0.3.40738
             127.0.0.1.10800 -> 127.0.0.1.52581 127.0.0.1.18080`.  Normal: SOCKS5 (no auth and username / password
             of 10 users) and SOCKS4 clients from several hosts fetching pages from two local web servers and
             talking to an echo service through the proxy, by address and by name (localhost), 2 clean
             restarts.  Broken: destinations blocked by the rules, wrong passwords / unknown users, unreachable
             upstreams (closed ports), garbage on the wire (bad versions, HTTP, a TLS hello, truncated
             negotiations), unsupported commands (BIND, UDP ASSOCIATE), unresolvable names, broken sockd.conf /
             the port taken at a restart.
  spamd      SpamAssassin's spamd 4.0 (spamd -L -s <file>, -D spamd,prefork,message,metadata,markup,timing as
             an operator debugging it would, --allowed-ips 127.0.0.0/29, -u nobody): `Sun Dec  6 05:40:01 2026
             [9476] info: spamd: clean message (1.5/5.0) for alice:65534 in 0.1 seconds, 54 bytes.`, `... [9476]
             dbg: message: main message type: text/plain`.  Normal: mail filters of several hosts asking to
             CHECK / SYMBOLS / REPORT / PROCESS / HEADERS ham and spam messages (the spamc protocol) for 10 users,
             PINGs, 2 clean restarts.  Broken: clients from addresses not allowed, bad protocol (garbage,
             unknown methods, bad versions, truncated bodies, a TLS hello), unknown users, children SIGKILLed,
             broken local.cf / the port taken at a restart.
  gearmand   Gearman job server 1.1 (gearmand --verbose DEBUG -l <file>, --job-retries 2): `  DEBUG 2026-12-06
             05:40:01.123456 [     2 ] Received GEARMAN_GRAB_JOB_ALL ... -> libgearman-server/thread.cc:321`,
             `   INFO 2026-12-06 05:40:01.257186 [  main ] Listening on 127.0.0.1:14730 (11)`.  Normal: workers
             (the binary protocol: CAN_DO, GRAB_JOB, PRE_SLEEP / NOOP, WORK_STATUS, WORK_COMPLETE) for five
             functions (resize, thumbnail, reverse, wordcount, checksum) and clients submitting foreground and
             background jobs of several priorities, an admin's text protocol (status, workers, version), 2 clean
             restarts.  Broken: jobs failing (WORK_FAIL), jobs raising (WORK_EXCEPTION), workers disconnecting in
             the middle of a job (until the retry limit drops it), garbage on the wire (bad magic, unknown packet
             types, a TLS hello, oversized packets), bad admin commands, bad options / the port taken at a restart.
  fail2ban   Fail2ban 1.0 (fail2ban-server -f -x -c <private copy of /etc/fail2ban>, loglevel DEBUG, a
             private socket, an in-memory database, jails sshd, dropbear, postfix-sasl and nginx-http-auth with a
             ban action that records bans through a shell script): `2026-12-06 05:40:01,123 fail2ban.filter
             [9533]: INFO    [sshd] Found 203.0.113.7 - 2026-12-06 05:40:01`.  Normal: clients appending the
             auth log (sshd and dropbear logins, failed and successful), the mail log (SASL failures and
             logins) and nginx's error log (basic-auth failures) of many addresses, a few of them attackers
             that get banned and unbanned, an admin's fail2ban-client status / get / banned queries, 2 clean
             restarts.  Broken: the ban action made to fail, bad jail configs at a restart (unknown filter, a
             bad regex, a missing log file, bad values), bad fail2ban-client commands, garbage on the control
             socket, watched log files removed, undecodable input lines.

Layout written under --out (default benchmarks/data/onboarding_fourteenth):

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

  * its level marks it as a problem (dropbear lines of bad passwords, failed or
    rejected logins, errors, exits before authentication; dante error / warning /
    alert lines and block() lines, lines of failures and refused connections;
    spamd warn / error lines and lines of failures, refused or unauthorized
    connections, bad input; gearmand ERROR / WARNING / FATAL lines and lines of
    failures, errors and lost connections; fail2ban ERROR / WARNING / CRITICAL
    lines and lines of failures and exceptions), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; process / thread ids, job handles, user and host
    names and paths masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (none for these sources).  A
multi-line entry (a fail2ban record with its traceback lines) is kept or dropped
whole.  An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_fourteenth_data.py --out benchmarks/data/onboarding_fourteenth \\
        [--sources dropbear,dante,spamd,gearmand,fail2ban] [--lines 6000] [--seed 14014] \\
        [--min-normal-seconds 40]
"""
from __future__ import annotations

import contextlib
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

from onboarding_data import FileLog, free_port, need, say, wait_port, write_atomic  # noqa: E402
from onboarding_eighth_data import tcp_blocker  # noqa: E402
from onboarding_eleventh_data import dpkg_version, grouped_selector, templater  # noqa: E402
from onboarding_fifth_data import normal_loop, run  # noqa: E402
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Source,  # noqa: E402
                                     children, entry_selector, raw_send)
from onboarding_sixth_data import TLS_HELLO, run_quiet  # noqa: E402
from onboarding_tenth_data import log_has, size_of  # noqa: E402
from onboarding_twelfth_data import HAM_SUBJECTS, SPAM_BODIES, timed_normal_loop  # noqa: E402

SOURCES = ["dropbear", "dante", "spamd", "gearmand", "fail2ban"]
ACCOUNTS = USERS[:10]
PASSWORD = "{}-Onb14!"
HOSTS = [f"127.0.0.{i}" for i in range(2, 10)]


@contextlib.contextmanager
def system_accounts():
    """The ten users (alice ... judy, password '<user>-Onb14!') and two service accounts (svc14 with a nologin
    shell, old14 with a locked password) as system accounts for the run; the ones created are removed after."""
    useradd, chpasswd, userdel = need("useradd", "passwd"), need("chpasswd", "passwd"), need("userdel", "passwd")
    made = []
    for u, shell in [(u, "/bin/sh") for u in ACCOUNTS] + [("svc14", "/usr/sbin/nologin"), ("old14", "/bin/sh")]:
        if subprocess.run(["id", u], capture_output=True).returncode:
            subprocess.run([useradd, "-m", "-s", shell, u], check=True, capture_output=True)
            made.append(u)
        subprocess.run([chpasswd], input=f"{u}:{PASSWORD.format(u)}\n".encode(), check=True, capture_output=True)
    subprocess.run(["usermod", "-L", "old14"], capture_output=True)
    try:
        yield
    finally:
        for u in made:
            subprocess.run([userdel, "-r", u], capture_output=True)


# --------------------------------------------------------------------------
# dropbear (dropbear -F -E, clients: dbclient)
# --------------------------------------------------------------------------

DB_HEAD = re.compile(r"^\[\d+\] \w{3} \d\d [\d:]+ ")
dropbear_template = templater(re.compile(r"^\[\d+\] \w{3} \d\d [\d:]+ "), (r"'[^']*'", "'S'"),
                              (r"/[\w./-]+", "PATH"))
DB_COMMANDS = ["uptime", "ls -l", "df -h /", "id", "cat /etc/hostname", "wc -l /etc/passwd", "sleep 0.3; date",
               "echo $HOME", "uname -a", "ls /tmp | head -3", "date +%s", "printenv SHELL"]


def dropbear_problem(line: str) -> bool:
    return bool(re.search(r"[Bb]ad password|[Ff]ail|[Ee]rror|[Ii]nvalid|[Rr]eject|[Ll]ocked|nonexistent|before auth|"
                          r"[Dd]enied|[Ee]xit before|[Pp]remature|[Mm]ax auth", line))


def source_dropbear(args) -> Source:
    dropbear, dbclient = need("dropbear", "dropbear-bin"), need("dbclient", "dropbear-bin")
    keygen = need("dropbearkey", "dropbear-bin")
    rng = random.Random(f"{args.seed}-dropbear")
    with tempfile.TemporaryDirectory(prefix="onb14-dropbear-") as work, Group() as sv, system_accounts():
        os.chmod(work, 0o755)
        hk = os.path.join(work, "ed25519_host_key")
        subprocess.run([keygen, "-t", "ed25519", "-f", hk], capture_output=True, check=True)
        port = free_port()
        logp = os.path.join(work, "dropbear.log")

        def start(wait: bool = True, key: str | None = None, listen: str | None = None, extra: list | None = None) -> None:
            with open(logp, "ab") as logf:
                sv.start("dropbear", [dropbear, "-F", "-E", "-p", listen or f"127.0.0.1:{port}", "-r", key or hk, "-T", "4",
                                      "-P", f"{work}/dropbear.pid"] + (extra or []), stdout=logf, stderr=logf, cwd=work)
            if wait:
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.2)

        def stop() -> None:
            sv.stop("dropbear", signal.SIGTERM, 10)

        def ssh(user: str, pw: str, cmd: str, src: str | None = None) -> int:
            argv = [dbclient, "-y", "-y", "-p", str(port), f"{user}@127.0.0.1", cmd]
            if src:
                argv[1:1] = ["-b", src]
            try:
                return subprocess.run(argv, env=dict(os.environ, DROPBEAR_PASSWORD=pw), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=20).returncode
            except subprocess.TimeoutExpired:
                return -1

        def session(r: random.Random) -> None:
            u = r.choice(ACCOUNTS)
            ssh(u, PASSWORD.format(u), r.choice(DB_COMMANDS), src=r.choice(HOSTS))

        start()
        log = FileLog(logp)
        say(f"dropbear on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [session(rr) for _ in range(rr.randint(2, 5))])
                       for _ in range(rng.randint(3, 6))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = timed_normal_loop(args, log, "dropbear", round_fn, max(args.min_normal_s, 10) * 2)
            templates = {dropbear_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, dropbear_template, dropbear_problem))

            def restart_clean() -> None:
                sv.stop("dropbear", signal.SIGTERM, 10)
                sv.forget("dropbear")
                start()

            with Background(session, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):  # wrong passwords: dbclient retries until -T 4 tries are used up
                    for u, pw in [("alice", "alice-onb14!"), ("bob", "Bob-Onb14"), ("carol", "password"), ("dave", "dave-Onb13!"),
                                  ("erin", "123456"), ("frank", "")]:
                        with br.occurrence(2.0):
                            ssh(u, pw, "id", src=rng.choice(HOSTS))
                with br.phase("unknown_user"):  # logins as users that do not exist
                    for u in ["admin", "oracle", "test", "ubuntu", "git", "postgres"]:
                        with br.occurrence(2.0):
                            ssh(u, "admin123", "id", src="127.0.0.20")
                with br.phase("disallowed_account"):  # an account with a nologin shell, one with a locked password
                    for u in ["svc14", "old14", "svc14", "old14"]:
                        with br.occurrence(2.0):
                            ssh(u, PASSWORD.format(u), "id", src=rng.choice(HOSTS))
                with br.phase("protocol_garbage"):  # not SSH on the SSH port
                    for data in [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", TLS_HELLO, b"SSH-1.5-OpenSSH_3.4\r\n",
                                 b"SSH-2.0-probe\r\n" + bytes(rng.getrandbits(8) for _ in range(64)),
                                 b"\x00\x00\x00\x10garbage\xff\xfe\r\n", b"SSH-2.0-x\r\n\x00\x00\xff\xff\x05\x14" + b"A" * 300]:
                        with br.occurrence(2.0):
                            raw_send(port, data, wait=0.8)
                with br.phase("bad_restart"):  # a broken host key, a missing one, the port taken, bad options
                    blocker = tcp_blocker()
                    bad_key = os.path.join(work, "broken_host_key")
                    write_atomic(bad_key, "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n")
                    for kw in [{"key": bad_key}, {"key": os.path.join(work, "missing_host_key")},
                               {"listen": f"127.0.0.1:{blocker.getsockname()[1]}"}, {"listen": "127.0.0.1:sshx"},
                               {"extra": ["-W", "notanumber"]}]:
                        stop()
                        br.between()
                        with br.occurrence(3.0):
                            start(wait=False, **kw)
                            time.sleep(1.0)
                            session(rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("dropbear", "Dropbear SSH server", dpkg_version("dropbear-bin"),
                  "dropbear's stderr (-E): `[12345] Dec 06 05:40:01 Child connection from 127.0.0.3:41234`, "
                  "`[12345] Dec 06 05:40:01 Password auth succeeded for 'alice' from 127.0.0.3:41234`, `[12345] Dec 06 "
                  "05:40:02 Exit (alice) from <127.0.0.3:41234>: Exited normally`; each session traced by the pid of "
                  "its child process from connection through authentication to exit",
                  "dropbear -F -E (a private ed25519 host key, -T 4) with SSH sessions of 10 system users (dbclient "
                  "with the password, one of 12 shell commands each) from 8 hosts, 3-6 clients at a time; 2 clean "
                  "restarts (SIGTERM)",
                  "wrong_password (6: wrong passwords until the 4 tries are used up), unknown_user (6), "
                  "disallowed_account (4: a nologin shell, a locked password), protocol_garbage (6: HTTP, a TLS hello, "
                  "an SSH-1 identification, junk after the identification, binary junk, a bad packet length), "
                  "bad_restart (5: a broken host key, a missing host key, the port taken, a bad port, a bad option "
                  "value)", normal, br.errors)


# --------------------------------------------------------------------------
# dante (danted -f with a private sockd.conf)
# --------------------------------------------------------------------------

DANTE_CONF = """\
logoutput: {logp}
debug: 0
internal: 127.0.0.1 port = {port}
external: 127.0.0.1
socksmethod: username none
clientmethod: none
user.privileged: root
user.unprivileged: {unpriv}
timeout.negotiate: 5
timeout.io: 30
client pass {{
  from: 127.0.0.0/8 to: 0.0.0.0/0
  log: connect disconnect error
}}
socks block {{
  from: 0.0.0.0/0 to: 127.0.0.99/32
  log: connect error
}}
socks block {{
  from: 0.0.0.0/0 to: 0.0.0.0/0 port = 25
  log: connect error
}}
socks pass {{
  from: 0.0.0.0/0 to: 0.0.0.0/0
  command: connect
  log: connect disconnect error ioop
}}
{extra}"""
DANTE_HEAD = re.compile(r"^\w{3} [ \d]\d [\d:]+ \([\d.]+\) ")
dante_template = templater(DANTE_HEAD, (r"\[\d+\]", "[PID]"), (r"\b\d+\.\d+\.\d+\.\d+\.\d+\b", "ADDR"),
                           (r"username%\w+@", "username%NAME@"), (r"\(\d+\)", "(N)"), (r'"[^"]*"', '"S"'),
                           (r"/[\w./-]+", "PATH"))


def dante_problem(line: str) -> bool:
    m = DANTE_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.search(r"\]: (error|warning|alert|notice):", body)) or bool(
        re.search(r"block\(\d+\)|[Ff]ail|[Rr]efused|[Ee]rror|[Uu]nsupported|[Ii]nvalid|[Dd]enied|[Uu]nknown|"
                  r"could not|[Tt]imeout|unreachable", body))


class EchoServer:
    """A line echo service (the 'chat' upstream behind the proxy)."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self.session, args=(c,), daemon=True).start()

    @staticmethod
    def session(c: socket.socket) -> None:
        with contextlib.suppress(OSError), c:
            c.settimeout(10)
            while True:
                d = c.recv(4096)
                if not d:
                    return
                c.sendall(d.upper())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.srv.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.srv.close()


def web_server():
    import http.server

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self):
            body = (" ".join(WORDS) * (1 + len(self.path) % 5)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def socks_session(port: int, dest: tuple, payload: bytes, auth: tuple | None = None, v4: bool = False,
                  src: str | None = None, cmd: int = 1, raw: bytes | None = None) -> bytes:
    """One SOCKS session through the proxy; returns what came back (b"" on refusal)."""
    out = b""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 10,
                                                                source_address=(src, 0) if src else None) as s:
        s.settimeout(10)
        if raw is not None:
            s.sendall(raw)
            time.sleep(0.5)
            with contextlib.suppress(OSError):
                s.recv(512)
            return b""
        host, dport = dest
        if v4:
            s.sendall(b"\x04" + bytes([cmd]) + struct.pack(">H", dport) + socket.inet_aton(host) + b"onb14\x00")
            rep = s.recv(8)
            if len(rep) < 2 or rep[1] != 90:
                return b""
        else:
            s.sendall(b"\x05\x01" + (b"\x02" if auth else b"\x00"))
            rep = s.recv(2)
            if len(rep) < 2 or rep[1] == 0xFF:
                return b""
            if auth:
                u, p = auth[0].encode(), auth[1].encode()
                s.sendall(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
                rep = s.recv(2)
                if len(rep) < 2 or rep[1] != 0:
                    return b""
            if re.match(r"^\d+\.\d+\.\d+\.\d+$", host):
                addr = b"\x01" + socket.inet_aton(host)
            else:
                addr = b"\x03" + bytes([len(host)]) + host.encode()
            s.sendall(b"\x05" + bytes([cmd]) + b"\x00" + addr + struct.pack(">H", dport))
            rep = s.recv(262)
            if len(rep) < 2 or rep[1] != 0:
                return b""
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    return out


def source_dante(args) -> Source:
    danted = need("danted", "dante-server")
    rng = random.Random(f"{args.seed}-dante")
    with tempfile.TemporaryDirectory(prefix="onb14-dante-") as work, Group() as sv, system_accounts():
        os.chmod(work, 0o755)
        port = free_port()
        logp, conf = os.path.join(work, "sockd.log"), os.path.join(work, "sockd.conf")
        webs = [web_server(), web_server()]
        echo = EchoServer()

        def write_conf(p: int | None = None, extra: str = "", unpriv: str = "nobody", text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else DANTE_CONF.format(logp=logp, port=p or port, extra=extra, unpriv=unpriv))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            sv.start("danted", [danted, "-f", conf, "-p", f"{work}/sockd.pid", "-N", "2"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            if wait:
                log_has(logp, b"running", since, 20)
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("danted", signal.SIGTERM, 15)

        def client(r: random.Random) -> None:
            src = r.choice(HOSTS)
            u = r.choice(ACCOUNTS)
            auth = (u, PASSWORD.format(u)) if r.random() < 0.6 else None
            a = r.random()
            if a < 0.55:
                web = r.choice(webs).server_address[1]
                host = "localhost" if r.random() < 0.2 else "127.0.0.1"
                socks_session(port, (host, web), f"GET /{r.choice(WORDS)}/{r.randint(1, 500)} HTTP/1.0\r\nHost: intra\r\n\r\n".encode(),
                              auth=auth, src=src)
            elif a < 0.8:
                socks_session(port, ("127.0.0.1", echo.port), " ".join(r.choice(WORDS) for _ in range(r.randint(1, 30))).encode(),
                              auth=auth, src=src)
            else:
                web = r.choice(webs).server_address[1]
                socks_session(port, ("127.0.0.1", web), b"GET /status HTTP/1.0\r\n\r\n", v4=True, src=src)

        write_conf()
        start()
        log = FileLog(logp)
        say(f"dante on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [client(rr) for _ in range(rr.randint(1, 4))])
                       for _ in range(rng.randint(1, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.01, 0.05))

        try:
            normal = normal_loop(args, log, "dante", round_fn)
            templates = {dante_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, dante_template, dante_problem))

            def restart_clean() -> None:
                sv.stop("danted", signal.SIGTERM, 15)
                sv.forget("danted")
                write_conf()
                start()

            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("blocked_destination"):  # destinations refused by the socks block rules
                    for dest in [("127.0.0.99", 80), ("127.0.0.1", 25), ("127.0.0.99", 443), ("127.0.0.1", 25), ("127.0.0.99", 22)]:
                        u = rng.choice(ACCOUNTS)
                        with br.occurrence(1.5):
                            socks_session(port, dest, b"HELO x\r\n", auth=(u, PASSWORD.format(u)), src=rng.choice(HOSTS))
                with br.phase("auth_failure"):  # wrong passwords, unknown users (username method)
                    for u, pw in [("alice", "alice"), ("bob", "Bob-Onb14"), ("mallory", "hunter2"), ("proxyuser", "proxy"),
                                  ("carol", "")]:
                        with br.occurrence(1.5):
                            socks_session(port, ("127.0.0.1", echo.port), b"hi", auth=(u, pw or "x"), src=rng.choice(HOSTS))
                with br.phase("upstream_unreachable"):  # connects to closed ports behind the proxy
                    for _ in range(5):
                        closed = free_port()
                        with br.occurrence(1.5):
                            socks_session(port, ("127.0.0.1", closed), b"GET / HTTP/1.0\r\n\r\n", src=rng.choice(HOSTS))
                with br.phase("protocol_garbage"):  # not SOCKS, bad versions, truncated negotiations
                    for data in [b"GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n", TLS_HELLO, b"\x05",
                                 b"\x05\x00", b"\x06\x01\x00", b"\x05\x01\x00\x05\x01\x00\x09\x7f\x00\x00\x01\x00\x50"]:
                        with br.occurrence(1.5):
                            socks_session(port, ("127.0.0.1", 80), b"", raw=data)
                with br.phase("unsupported_command"):  # BIND and UDP ASSOCIATE, which the rules do not allow
                    for cmd in [2, 3, 2]:
                        with br.occurrence(1.5):
                            socks_session(port, ("127.0.0.1", echo.port), b"x", cmd=cmd, src=rng.choice(HOSTS))
                with br.phase("unresolvable_host"):  # names that do not resolve
                    for host in ["intranet.onb14.invalid", "nosuchhost", "db-7.corp.invalid"]:
                        with br.occurrence(3.0):
                            socks_session(port, (host, 80), b"GET / HTTP/1.0\r\n\r\n", src=rng.choice(HOSTS))
                with br.phase("bad_config_restart"):  # sockd.conf mistakes, the port taken, dante restarted
                    blocker = tcp_blocker()
                    good = DANTE_CONF.format(logp=logp, port=port, extra="", unpriv="nobody")
                    for kw in [{"p": blocker.getsockname()[1]}, {"unpriv": "proxy14"},
                               {"text": good.replace("socks pass {\n", "socks pass {\n  from 0.0.0.0/0\n", 1)},
                               {"extra": "socks pass {\n  from: 0.0.0.0/0 to: 0.0.0.0/0\n  socksmethod: gssapi\n}\n"},
                               {"text": good.replace("external: 127.0.0.1", "external: eth7")}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(1.5)
                            client(rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            echo.close()
            for w in webs:
                w.shutdown()
    return Source("dante", "Dante SOCKS server (danted)", dpkg_version("dante-server"),
                  "danted's logoutput file: `Dec  6 05:40:01 (1796546097.056451) danted[9372]: info: pass(2): tcp/connect "
                  "[: username%alice@127.0.0.3.40738 127.0.0.1.10800 -> 127.0.0.1.52581 127.0.0.1.18080`, `... info: pass(1): "
                  "tcp/accept ]: 584 -> 127.0.0.3.40738 127.0.0.1.10800 -> 18: client closed.  Session duration: 0s`; each "
                  "session traced by its client address and port from accept ([) through connect and data (-) to close (])",
                  "danted (2 processes, username / no authentication against system accounts, block rules for 127.0.0.99 "
                  "and port 25, log connect disconnect error ioop) with SOCKS5 clients (no auth and 10 users) and SOCKS4 "
                  "clients from 8 hosts fetching pages from two local web servers (by address and by the name localhost) "
                  "and talking to an echo service; 2 clean restarts (SIGTERM)",
                  "blocked_destination (5), auth_failure (5: wrong passwords, unknown users), upstream_unreachable (5: "
                  "closed ports), protocol_garbage (6: HTTP, a TLS hello, truncated negotiations, a bad version, a bad "
                  "address type), unsupported_command (3: BIND, UDP ASSOCIATE), unresolvable_host (3), "
                  "bad_config_restart (5: the port taken, an unknown unprivileged user, a syntax error, an unsupported "
                  "method, an unknown external interface)", normal, br.errors)


# --------------------------------------------------------------------------
# spamd (SpamAssassin's daemon, the spamc protocol)
# --------------------------------------------------------------------------

SPAMD_HEAD = re.compile(r"^\w{3} \w{3} [ \d]\d [\d:]+ \d{4} ")
spamd_template = templater(SPAMD_HEAD, (r"(_decode_header [\w-]+:).*", r"\1 V"), (r"(mime_encode_header:).*", r"\1 V"),
                           (r"(X-Spam-[\w-]+:).*", r"\1 V"), (r"timing: total .*", "timing: total T"), (r"\[\d+\]", "[PID]"), (r"<[^<>]*>", "<ADDR>"), (r"\d+\.\d+/\d+\.\d+", "S/R"),
                           (r"\b[A-Z][A-Z0-9_]{2,}(,[A-Z][A-Z0-9_]{2,})*\b", "RULES"), (r"\b[0-9a-f]{8,}\b", "HEX"),
                           (r"/[\w./-]+", "PATH"), (r"\b[A-Z]+\b", "W"))


def spamd_problem(line: str) -> bool:
    m = SPAMD_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.search(r"^\[\d+\] (warn|error):", body)) or bool(
        re.search(r"[Ff]ail|[Ee]rror|[Uu]nauthori[sz]ed|[Rr]efused|[Bb]ad |[Ii]nvalid|unable|[Uu]nknown|[Tt]imeout|"
                  r"[Dd]ied|[Kk]illed|[Cc]ould not|[Dd]enied|[Ll]int", body))


def spamd_mail(r: random.Random, user: str, spam: bool = False) -> bytes:
    dom = r.choice(["partner.example", "example.org", "lists.example.com"])
    body = r.choice(SPAM_BODIES) if spam else " ".join(r.choice(WORDS) for _ in range(r.randint(20, 150)))
    subject = r.choice(["You WON!!!", "Urgent: verify your account", "Cheap meds"]) if spam else r.choice(HAM_SUBJECTS)
    if spam and r.random() < 0.3:
        body += "\nXJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
    return (f"Received: from mail.{dom} (mail.{dom} [198.51.100.{r.randint(2, 250)}])\n\tby mx.onb14.test with ESMTP id "
            f"{r.getrandbits(40):X}\n\tfor <{user}@onb14.test>; {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\n"
            f"From: {r.choice(WORDS)} <{r.choice(WORDS)}@{dom}>\nTo: {user}@onb14.test\nSubject: {subject}\n"
            f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\n"
            f"Message-ID: <{r.getrandbits(48):x}@{dom}>\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n"
            f"{body}\n").encode()


def spamc(port: int, method: str, user: str, msg: bytes | None, src: str | None = None, raw: bytes | None = None,
          timeout: float = 30) -> bytes:
    out = b""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 10,
                                                                source_address=(src, 0) if src else None) as s:
        s.settimeout(timeout)
        if raw is not None:
            s.sendall(raw)
        else:
            head = f"{method} SPAMC/1.5\r\nUser: {user}\r\n"
            if msg is not None:
                head += f"Content-length: {len(msg)}\r\n"
            s.sendall(head.encode() + b"\r\n" + (msg or b""))
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_WR)
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    return out


def source_spamd(args) -> Source:
    spamd = need("spamd", "spamd")
    rng = random.Random(f"{args.seed}-spamd")
    with tempfile.TemporaryDirectory(prefix="onb14-spamd-") as work, Group() as sv, system_accounts():
        os.chmod(work, 0o755)
        site = os.path.join(work, "site")
        os.makedirs(site)
        for fn in ["init.pre", "v310.pre", "v312.pre", "v320.pre", "v330.pre", "v340.pre", "v341.pre", "v342.pre", "v343.pre",
                   "v400.pre", "local.cf"]:
            if os.path.exists(os.path.join("/etc/spamassassin", fn)):
                shutil.copy(os.path.join("/etc/spamassassin", fn), os.path.join(site, fn))
        local_cf = "required_score 5.0\nuse_bayes 0\nskip_rbl_checks 1\nadd_header all Status _YESNO_, score=_SCORE_\n"
        write_atomic(os.path.join(site, "local.cf"), local_cf)
        port = free_port()
        logp = os.path.join(work, "spamd.log")

        def start(wait: bool = True, p: int | None = None) -> None:
            since = size_of(logp)
            with open(os.path.join(work, "spamd.stderr"), "ab") as logf:  # -D also copies every line to stderr
                sv.start("spamd", [spamd, "-L", "-s", logp, "-D", "spamd,prefork,message,metadata,markup,timing",
                                   f"--listen=127.0.0.1:{p or port}", "--allowed-ips=127.0.0.0/29", "-u", "nobody",
                                   f"--siteconfigpath={site}", f"--pidfile={work}/spamd.pid", "--max-children=3",
                                   "--min-children=2", "--max-conn-per-child=40"],
                         stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"server started on", since, 60)
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 30)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("spamd", signal.SIGTERM, 20)

        def client(r: random.Random) -> None:
            src = f"127.0.0.{r.randint(2, 7)}"
            u = r.choice(ACCOUNTS)
            a = r.random()
            if a < 0.06:
                spamc(port, "PING", u, None, src=src)
                return
            method = r.choice(["CHECK", "SYMBOLS", "REPORT", "PROCESS", "HEADERS", "CHECK", "SYMBOLS"])
            spamc(port, method, u, spamd_mail(r, u, spam=r.random() < 0.3), src=src)

        start()
        log = FileLog(logp)
        say(f"spamd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [client(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(90)
            if state["restarts"] < 2 and elapsed > 12 + 15 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "spamd", round_fn)
            templates = {spamd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, spamd_template, spamd_problem))

            def restart_clean() -> None:
                sv.stop("spamd", signal.SIGTERM, 20)
                sv.forget("spamd")
                write_atomic(os.path.join(site, "local.cf"), local_cf)
                start()

            with Background(client, random.Random(rng.random()), (0.5, 1.2)):
                with br.phase("unauthorized_client"):  # mail filters on addresses outside --allowed-ips
                    for src in ["127.0.0.20", "127.0.0.21", "127.0.0.33", "127.0.0.20", "127.0.0.40"]:
                        with br.occurrence(1.5):
                            spamc(port, "CHECK", "alice", spamd_mail(rng, "alice"), src=src)
                with br.phase("bad_protocol"):  # garbage, unknown methods, bad versions, truncated bodies
                    msg = spamd_mail(rng, "bob")
                    for data in [b"HELLO\r\n\r\n", b"FROB SPAMC/1.5\r\nUser: bob\r\n\r\n", b"CHECK SPAMC/9.9\r\n\r\n",
                                 b"CHECK\r\nUser: bob\r\n\r\n", TLS_HELLO,
                                 b"CHECK SPAMC/1.5\r\nUser: bob\r\nContent-length: 9000\r\n\r\n" + msg[:200],
                                 b"PROCESS SPAMC/1.5\r\nContent-length: abc\r\n\r\n" + msg]:
                        with br.occurrence(2.0):
                            spamc(port, "", "", None, src="127.0.0.2", raw=data, timeout=8)
                with br.phase("unknown_user"):  # per-user scans for accounts that do not exist
                    for u in ["ghost", "postmaster-old", "info14", "sales", "ghost"]:
                        with br.occurrence(2.0):
                            spamc(port, "CHECK", u, spamd_mail(rng, u), src="127.0.0.3")
                with br.phase("child_killed"):  # a spamd child SIGKILLed (as by the OOM killer)
                    for _ in range(4):
                        pid = 0
                        with contextlib.suppress(OSError, ValueError), open(f"{work}/spamd.pid") as f:
                            pid = int(f.read().strip())
                        kids = children(pid) if pid else []
                        with br.occurrence(3.0):
                            if kids:
                                with contextlib.suppress(OSError):
                                    os.kill(rng.choice(kids), signal.SIGKILL)
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # local.cf mistakes, the port taken, spamd restarted
                    blocker = tcp_blocker()
                    for kw in [{"cf": local_cf + "score ONB14_RULE ten\n"},
                               {"cf": local_cf + "header ONB14_SUBJ Subject =~ /(unclosed/\nscore ONB14_SUBJ 2.0\n"},
                               {"cf": local_cf + "loadplugin Mail::SpamAssassin::Plugin::Onb14Nope\n"},
                               {"cf": local_cf + "required_scor 4.0\nrewrite_header Subjekt ***SPAM***\n"},
                               {"p": blocker.getsockname()[1]}]:
                        stop()
                        br.between()
                        if "cf" in kw:
                            write_atomic(os.path.join(site, "local.cf"), kw["cf"])
                        with br.occurrence(6.0):
                            start(wait=False, p=kw.get("p"))
                            since = size_of(logp)
                            log_has(logp, b"server started on", since, 20)
                            client(rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("spamd", "SpamAssassin spamd", dpkg_version("spamd"),
                  "spamd's own log file (-s) with debug areas spamd, prefork, message, metadata, markup, timing: "
                  "`Sun Dec  6 05:40:01 2026 [9476] info: spamd: connection from localhost [127.0.0.3]:36218 to port 17830, "
                  "fd 5`, `... [9476] dbg: message: main message type: text/plain`, `... [9476] info: spamd: result: Y 1003 - "
                  "GTUBE,... scantime=0.1,size=812,user=alice,...`; each scan traced by the child's pid from connection "
                  "through processing and result to the prefork child states",
                  "spamd -L (local tests only, no Bayes, 2-3 children recycled after 40 connections, -u nobody) with mail "
                  "filters on 6 hosts asking CHECK / SYMBOLS / REPORT / PROCESS / HEADERS for ham and spam messages "
                  "(some with GTUBE) of 10 users and PINGs; 2 clean restarts (SIGTERM)",
                  "unauthorized_client (5 addresses outside --allowed-ips), bad_protocol (7: garbage, an unknown method, "
                  "a bad version, no version, a TLS hello, a truncated body, a bad content length), unknown_user (5), "
                  "child_killed (4 children SIGKILLed), bad_config_restart (5: a bad score, a bad regex, a missing plugin, "
                  "unknown options, the port taken)", normal, br.errors)


# --------------------------------------------------------------------------
# gearmand (the gearman binary protocol, the text admin protocol)
# --------------------------------------------------------------------------

GM = {"CAN_DO": 1, "PRE_SLEEP": 4, "NOOP": 6, "SUBMIT_JOB": 7, "JOB_CREATED": 8, "GRAB_JOB": 9, "NO_JOB": 10,
      "JOB_ASSIGN": 11, "WORK_STATUS": 12, "WORK_COMPLETE": 13, "WORK_FAIL": 14, "GET_STATUS": 15, "ECHO_REQ": 16,
      "SUBMIT_JOB_BG": 18, "ERROR": 19, "SUBMIT_JOB_HIGH": 21, "SET_CLIENT_ID": 22, "WORK_EXCEPTION": 25,
      "SUBMIT_JOB_LOW": 33}
GM_FUNCS = ["resize", "thumbnail", "reverse", "wordcount", "checksum"]
GM_HEAD = re.compile(r"^ *[A-Z]+ \d{4}-\d\d-\d\d [\d:.]+ ")
gearmand_template = templater(re.compile(r"^ *[A-Z]+ \d{4}-\d\d-\d\d [\d:.]+ "), (r"^ *([A-Z]+) \S+ \S+ ", r"\1 "),
                              (r"\[ *\w+ \]", "[T]"), (r"H:[\w.-]+:\d+", "H:HANDLE"), (r"\b[0-9a-f]{8}-[0-9a-f-]{27}\b", "UUID"),
                              (r"\.cc:\d+", ".cc:N"), (r"/[\w./-]+", "PATH"))


def gearmand_problem(line: str) -> bool:
    return bool(re.match(r"^ *(ERROR|WARNING|FATAL|CRITICAL|ALERT|PANIC) ", line)) or bool(
        re.search(r"[Ff]ail|[Ee]rror|EXCEPTION|[Ll]ost connection|[Dd]ropped|[Ii]nvalid|[Uu]nknown|[Rr]efused|"
                  r"[Tt]imeout|[Bb]ad |[Cc]ould not|closed", line))


def gm_pack(kind: str, *fields: bytes) -> bytes:
    data = b"\0".join(fields)
    return b"\0REQ" + struct.pack(">II", GM[kind], len(data)) + data


def gm_read(s: socket.socket) -> tuple[int, list[bytes]]:
    head = b""
    while len(head) < 12:
        d = s.recv(12 - len(head))
        if not d:
            raise OSError("closed")
        head += d
    _, kind, size = struct.unpack(">4sII", head)
    data = b""
    while len(data) < size:
        d = s.recv(size - len(data))
        if not d:
            raise OSError("closed")
        data += d
    return kind, data.split(b"\0") if data else []


class GearWorker:
    """A worker connection serving some functions; ``mode`` makes it fail / raise / vanish on its next job."""

    def __init__(self, port: int, funcs: list[str], name: str):
        self.port, self.funcs, self.name = port, funcs, name
        self.mode, self.stop_ev = "ok", threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.stop_ev.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), 5) as s:
                    s.settimeout(10)
                    s.sendall(gm_pack("SET_CLIENT_ID", self.name.encode()))
                    for f in self.funcs:
                        s.sendall(gm_pack("CAN_DO", f.encode()))
                    while not self.stop_ev.is_set():
                        s.sendall(gm_pack("GRAB_JOB"))
                        kind, fields = gm_read(s)
                        while kind == GM["NOOP"]:
                            kind, fields = gm_read(s)
                        if kind == GM["NO_JOB"]:
                            s.sendall(gm_pack("PRE_SLEEP"))
                            s.settimeout(1.0)
                            with contextlib.suppress(socket.timeout):
                                gm_read(s)  # NOOP: work is waiting
                            s.settimeout(10)
                            continue
                        if kind != GM["JOB_ASSIGN"] or len(fields) < 3:
                            continue
                        handle, func, arg = fields[0], fields[1], b"\0".join(fields[2:])
                        mode, self.mode = self.mode, "ok"
                        if mode == "vanish":
                            break
                        if mode == "fail":
                            s.sendall(gm_pack("WORK_FAIL", handle))
                            continue
                        if mode == "exception":
                            s.sendall(gm_pack("WORK_EXCEPTION", handle, b"ValueError: cannot decode image data"))
                            continue
                        if len(arg) > 40:
                            s.sendall(gm_pack("WORK_STATUS", handle, b"1", b"2"))
                        if func == b"reverse":
                            res = arg[::-1]
                        elif func == b"wordcount":
                            res = str(len(arg.split())).encode()
                        elif func == b"checksum":
                            res = __import__("hashlib").sha1(arg).hexdigest().encode()
                        else:
                            time.sleep(0.02)
                            res = b"ok:" + str(len(arg) * 3).encode()
                        s.sendall(gm_pack("WORK_COMPLETE", handle, res))
            except OSError:
                self.stop_ev.wait(0.5)

    def close(self) -> None:
        self.stop_ev.set()


def gm_submit(port: int, func: str, data: bytes, kind: str = "SUBMIT_JOB", wait: bool = True, timeout: float = 10) -> bytes:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
        s.settimeout(timeout)
        s.sendall(gm_pack(kind, func.encode(), f"{random.getrandbits(32):x}".encode(), data))
        k, fields = gm_read(s)
        if k != GM["JOB_CREATED"] or not wait:
            return b""
        handle = fields[0]
        while True:
            k, fields = gm_read(s)
            if k in (GM["WORK_COMPLETE"], GM["WORK_FAIL"], GM["WORK_EXCEPTION"]):
                return fields[-1] if fields else b""
            if k == GM["WORK_STATUS"]:
                s.sendall(gm_pack("GET_STATUS", handle))
    return b""


def gm_admin(port: int, *cmds: str) -> bytes:
    out = b""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
        s.settimeout(2)
        for c in cmds:
            s.sendall(c.encode() + b"\n")
            time.sleep(0.05)
            with contextlib.suppress(OSError):
                out += s.recv(65536)
    return out


def source_gearmand(args) -> Source:
    gearmand = need("gearmand", "gearman-job-server")
    rng = random.Random(f"{args.seed}-gearmand")
    with tempfile.TemporaryDirectory(prefix="onb14-gearmand-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        logp = os.path.join(work, "gearmand.log")

        def start(wait: bool = True, p: int | None = None, extra: list | None = None, verbose: str = "DEBUG",
                  threads: str = "2") -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("gearmand", [gearmand, "--verbose", verbose, "-l", logp, "-p", str(p or port), "-L", "127.0.0.1",
                                      "--job-retries", "2", "-t", threads, "--pid-file", f"{work}/gearmand.pid"] + (extra or []),
                         stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"Listening on", since, 20)
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("gearmand", signal.SIGTERM, 15)

        def client(r: random.Random) -> None:
            f = r.choice(GM_FUNCS)
            data = " ".join(r.choice(WORDS) for _ in range(r.randint(1, 20))).encode()
            if f in ("resize", "thumbnail"):
                data = f"img/{r.choice(WORDS)}-{r.randint(1, 999)}.jpg {r.choice([64, 128, 640, 1280])}".encode()
            a = r.random()
            kind = "SUBMIT_JOB" if a < 0.6 else "SUBMIT_JOB_BG" if a < 0.8 else "SUBMIT_JOB_HIGH" if a < 0.9 else "SUBMIT_JOB_LOW"
            gm_submit(port, f, data, kind, wait=kind != "SUBMIT_JOB_BG")

        start()
        workers = [GearWorker(port, GM_FUNCS[:3], "imgworker-1"), GearWorker(port, GM_FUNCS[:3], "imgworker-2"),
                   GearWorker(port, GM_FUNCS[2:], "textworker-1"), GearWorker(port, GM_FUNCS[2:], "textworker-2")]
        time.sleep(1)
        log = FileLog(logp)
        say(f"gearmand on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [client(rr) for _ in range(rr.randint(2, 5))])
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["admin"] > rng.uniform(3, 8):
                gm_admin(port, *rng.sample(["status", "workers", "version", "getpid"], rng.randint(1, 3)))
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
                time.sleep(1.0)

        try:
            normal = normal_loop(args, log, "gearmand", round_fn)
            templates = {gearmand_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, gearmand_template, gearmand_problem))

            def restart_clean() -> None:
                sv.stop("gearmand", signal.SIGTERM, 15)
                sv.forget("gearmand")
                start()
                time.sleep(1.0)

            def job_with(mode: str, func: str, data: bytes) -> None:
                for w in workers:
                    if func in w.funcs:
                        w.mode = mode
                gm_submit(port, func, data, timeout=8)
                for w in workers:
                    w.mode = "ok"

            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("job_failed"):  # the worker reports WORK_FAIL
                    for func, data in [("resize", b"img/corrupt-1.jpg 640"), ("thumbnail", b"img/empty.png 64"),
                                       ("wordcount", b"\xff\xfe binary"), ("checksum", b""), ("resize", b"img/huge.tif 99999")]:
                        with br.occurrence(1.5):
                            job_with("fail", func, data)
                with br.phase("job_exception"):  # the worker reports WORK_EXCEPTION
                    for func in ["thumbnail", "resize", "reverse", "checksum"]:
                        with br.occurrence(1.5):
                            job_with("exception", func, b"img/broken-header.jpg 128")
                with br.phase("worker_lost"):  # a worker disconnects in the middle of a job (retried, then dropped)
                    for func in ["resize", "wordcount", "thumbnail", "checksum"]:
                        with br.occurrence(3.0):
                            for w in workers:
                                if func in w.funcs:
                                    w.mode = "vanish"
                            gm_submit(port, func, b"img/loop.gif 640", timeout=4)
                            for w in workers:
                                w.mode = "ok"
                with br.phase("protocol_garbage"):  # bad magic, unknown packet types, oversized packets, a TLS hello
                    for data in [b"\0REQ\x00\x00\x00\xff\x00\x00\x00\x00", b"\0RES\x00\x00\x00\x07\x00\x00\x00\x03abc", TLS_HELLO,
                                 b"\0REQ\x00\x00\x00\x07\x7f\xff\xff\xff" + b"A" * 64, b"\0XYZ\x00\x00\x00\x01\x00\x00\x00\x00",
                                 b"\0REQ\x00\x00\x00\x0b\x00\x00\x00\x04h\0f\0"]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("bad_admin_command"):  # text protocol commands that do not exist or lack arguments
                    for cmd in ["frobnicate", "maxqueue", "drop function nosuchfunc", "cancel job H:nohost:1", "maxqueue resize x y z"]:
                        with br.occurrence(1.5):
                            gm_admin(port, cmd)
                with br.phase("bad_restart"):  # bad options, the port taken, gearmand restarted
                    blocker = tcp_blocker()
                    for kw in [{"p": blocker.getsockname()[1]}, {"extra": ["--queue-type", "onb14queue"]},
                               {"verbose": "CHATTY"}, {"threads": "-4"},
                               {"extra": ["--protocol", "http", "--http-port", str(blocker.getsockname()[1])]}]:
                        stop()
                        br.between()
                        with br.occurrence(3.0):
                            start(wait=False, **kw)
                            time.sleep(1.0)
                            client(rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            for w in workers:
                w.close()
            stop()
    return Source("gearmand", "Gearman job server (gearmand)", dpkg_version("gearman-job-server"),
                  "gearmand's log file at --verbose DEBUG: `  DEBUG 2026-12-06 05:40:01.257242 [     2 ] Received "
                  "GEARMAN_GRAB_JOB ... -> libgearman-server/...cc:NNN`, `   INFO 2026-12-06 05:40:01.257258 [  main ] "
                  "Listening on 127.0.0.1:14730 (11)`; the level right-aligned, the thread in brackets, the source "
                  "location after ->; each job traced by its handle (H:host:N) from SUBMIT through JOB_ASSIGN to "
                  "WORK_COMPLETE",
                  "gearmand (2 I/O threads, --job-retries 2) with 4 workers (binary protocol: SET_CLIENT_ID, CAN_DO, "
                  "GRAB_JOB, PRE_SLEEP / NOOP, WORK_STATUS, WORK_COMPLETE) for resize, thumbnail, reverse, wordcount, "
                  "checksum and clients submitting foreground, background, high and low priority jobs; an admin's text "
                  "protocol (status, workers, version, getpid); 2 clean restarts (SIGTERM)",
                  "job_failed (5 WORK_FAIL), job_exception (4 WORK_EXCEPTION), worker_lost (4 workers disconnecting in "
                  "a job), protocol_garbage (6: an unknown packet type, a response packet from a client, a TLS hello, "
                  "an oversized packet, bad magic, a short packet), bad_admin_command (5), bad_restart (5: the port "
                  "taken, an unknown queue type, an unknown verbose level, a bad thread count, an unknown protocol)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# fail2ban (fail2ban-server -f -x with a private configuration)
# --------------------------------------------------------------------------

F2B_JAIL = """\
[DEFAULT]
backend = polling
banaction = onb14-ledger
action = %(action_)s
bantime = {bantime}
findtime = 60
maxretry = 4
ignoreself = true
ignoreip = 127.0.0.0/8

[sshd]
enabled = true
port = 22
logpath = {work}/auth.log

[dropbear]
enabled = true
port = 2222
logpath = {work}/auth.log

[postfix-sasl]
enabled = true
filter = postfix[mode=auth]
port = smtp,submission
logpath = {work}/mail.log

[nginx-http-auth]
enabled = true
port = http,https
logpath = {work}/nginx-error.log
{extra}"""
F2B_MAIN = """\
[DEFAULT]
loglevel = DEBUG
logtarget = {work}/fail2ban.log
socket = {work}/fail2ban.sock
pidfile = {work}/fail2ban.pid
dbfile = :memory:
"""
F2B_ACTION = """\
[Definition]
actionstart = sh {work}/ledger.sh start <name>
actionstop = sh {work}/ledger.sh stop <name>
actioncheck =
actionban = sh {work}/ledger.sh ban <name> <ip>
actionunban = sh {work}/ledger.sh unban <name> <ip>
"""
F2B_LEDGER = """#!/bin/sh
# the firewall's stand-in: records bans; fails while the 'broken' flag file exists
[ -e "{work}/broken" ] && {{ echo "ledger: cannot reach the firewall API" >&2; exit 3; }}
echo "$(date +%s) $*" >> "{work}/ledger.txt"
"""
F2B_HEAD = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ ")
fail2ban_template = templater(F2B_HEAD, (r"\(IP:count\): .*", "(IP:count): LIST"), (r"\[\d+\]", "[PID]"), (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(,\d+)?", "TIME"),
                              (r"'[^']*'", "'S'"), (r"\b\d+\.\d+\b", "N.N"), (r"\(pos = \d+, hash = \w*\)", "(pos)"),
                              (r"/[\w./-]+", "PATH"), (r"\b[0-9a-f]{32,}\b", "HASH"))


def fail2ban_problem(text: str) -> bool:
    first = text.split("\n", 1)[0]
    # words in a file's path are not the program's verdict: every background "/.../nginx-error.log has been
    # modified" line matched "error" before (found after the first full run; fail2ban regenerated alone)
    words = re.sub(r"\S*/\S*", " ", text)
    return bool(re.search(r"\]: (ERROR|WARNING|CRITICAL) ", first)) or bool(
        re.search(r"[Ff]ailed to|[Ee]rror|[Ee]xception|[Uu]nable|[Ii]nvalid|[Nn]ot found|[Uu]nknown|Traceback|"
                  r"returned [1-9]|[Cc]ould not", words))


def source_fail2ban(args) -> Source:
    server, fclient = need("fail2ban-server", "fail2ban"), need("fail2ban-client", "fail2ban")
    rng = random.Random(f"{args.seed}-fail2ban")
    with tempfile.TemporaryDirectory(prefix="onb14-fail2ban-") as work, Group() as sv:
        os.chmod(work, 0o755)
        conf = os.path.join(work, "conf")
        shutil.copytree("/etc/fail2ban", conf)
        for fn in os.listdir(os.path.join(conf, "jail.d")):
            os.unlink(os.path.join(conf, "jail.d", fn))
        write_atomic(os.path.join(conf, "fail2ban.local"), F2B_MAIN.format(work=work))
        write_atomic(os.path.join(conf, "action.d", "onb14-ledger.conf"), F2B_ACTION.format(work=work))
        write_atomic(os.path.join(work, "ledger.sh"), F2B_LEDGER.format(work=work))
        logp = os.path.join(work, "fail2ban.log")
        inputs = {"auth": os.path.join(work, "auth.log"), "mail": os.path.join(work, "mail.log"),
                  "web": os.path.join(work, "nginx-error.log")}
        for p in inputs.values():
            write_atomic(p, "")
        lock = threading.Lock()

        def write_jail(extra: str = "", bantime: str = "12", text: str | None = None) -> None:
            write_atomic(os.path.join(conf, "jail.local"), text if text is not None else F2B_JAIL.format(work=work, extra=extra,
                                                                                                      bantime=bantime))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(os.path.join(work, "server.out"), "ab") as out:
                sv.start("fail2ban", [server, "-f", "-x", "-c", conf], stdout=out, stderr=out, cwd=work)
            if wait:
                log_has(logp, b"Jail 'nginx-http-auth' started", since, 30)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("fail2ban", signal.SIGTERM, 20)

        def ctl(*cmd: str) -> int:
            return run_quiet([fclient, "-c", conf] + list(cmd), 15)

        def append(which: str, text: str | bytes) -> None:  # a client's log line (fail2ban's input)
            data = text if isinstance(text, bytes) else text.encode()
            with lock, open(inputs[which], "ab") as f:
                f.write(data)

        pids = iter(range(20000, 10 ** 9))

        def sshd_line(ip: str, user: str, ok: bool, invalid: bool = False) -> str:
            ts = time.strftime("%b %e %H:%M:%S")
            port = rng.randint(30000, 65000)
            if ok:
                return f"{ts} gw sshd[{next(pids)}]: Accepted password for {user} from {ip} port {port} ssh2\n"
            if invalid:
                return f"{ts} gw sshd[{next(pids)}]: Failed password for invalid user {user} from {ip} port {port} ssh2\n"
            return f"{ts} gw sshd[{next(pids)}]: Failed password for {user} from {ip} port {port} ssh2\n"

        def dropbear_line(ip: str, user: str, ok: bool) -> str:
            ts = time.strftime("%b %e %H:%M:%S")
            port = rng.randint(30000, 65000)
            if ok:
                return f"{ts} gw dropbear[{next(pids)}]: Password auth succeeded for '{user}' from {ip}:{port}\n"
            return f"{ts} gw dropbear[{next(pids)}]: Bad password attempt for '{user}' from {ip}:{port}\n"

        def postfix_line(ip: str, ok: bool) -> str:
            ts = time.strftime("%b %e %H:%M:%S")
            host = f"host-{ip.replace('.', '-')}.dyn.example.net"
            if ok:
                return f"{ts} mx postfix/smtpd[{next(pids)}]: connect from {host}[{ip}]\n"
            return (f"{ts} mx postfix/smtpd[{next(pids)}]: warning: {host}[{ip}]: SASL LOGIN authentication failed: "
                    f"UGFzc3dvcmQ6\n")

        def nginx_line(ip: str, user: str) -> str:
            ts = time.strftime("%Y/%m/%d %H:%M:%S")
            return (f'{ts} [error] {rng.randint(100, 999)}#{rng.randint(100, 999)}: *{next(pids)} user "{user}" was not found in '
                    f'"/etc/nginx/.htpasswd", client: {ip}, server: intranet.onb14.test, request: "GET /admin/ HTTP/1.1", '
                    f'host: "intranet.onb14.test"\n')

        def visitor(r: random.Random, calm: bool = False) -> None:
            """A burst of log traffic: users logging in (sometimes mistyping), scanners, an attacker now and then."""
            ip = f"{r.choice(['198.51.100', '192.0.2', '203.0.113', '10.20.30'])}.{r.randint(2, 250)}"
            a = r.random()
            if a < 0.3:
                u = r.choice(ACCOUNTS)
                lines = [sshd_line(ip, u, False)] * (r.random() < 0.3) + [sshd_line(ip, u, True)]
                append("auth", "".join(lines))
            elif a < 0.45:
                u = r.choice(ACCOUNTS)
                append("auth", "".join([dropbear_line(ip, u, False)] * (r.random() < 0.3) + [dropbear_line(ip, u, True)]))
            elif a < 0.6:
                append("mail", "".join(postfix_line(ip, r.random() < 0.7) for _ in range(r.randint(1, 3))))
            elif a < 0.75:
                append("web", nginx_line(ip, r.choice(WORDS)))
            elif a < 0.92 or calm:  # a scanner trying a couple of names (below maxretry)
                append("auth", "".join(sshd_line(ip, r.choice(["admin", "test", "oracle", "pi"]), False, invalid=True)
                                       for _ in range(r.randint(1, 2))))
            else:  # an attacker: enough failures to be banned
                which = r.choice(["sshd", "dropbear", "postfix", "nginx"])
                for _ in range(r.randint(4, 6)):
                    if which == "sshd":
                        append("auth", sshd_line(ip, r.choice(["root", "admin", "ubuntu"]), False, invalid=True))
                    elif which == "dropbear":
                        append("auth", dropbear_line(ip, "root", False))
                    elif which == "postfix":
                        append("mail", postfix_line(ip, False))
                    else:
                        append("web", nginx_line(ip, "admin"))
                    time.sleep(0.05)

        write_jail()
        start()
        log = FileLog(logp)
        say("fail2ban; normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(4, 9)):
                visitor(random.Random(rng.random()))
            if time.time() - state["admin"] > rng.uniform(4, 9):
                q = rng.choice([["status"], ["status", "sshd"], ["status", "postfix-sasl"], ["banned"], ["get", "sshd", "maxretry"],
                                ["get", "dropbear", "bantime"], ["ping"]])
                ctl(*q)
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "fail2ban", round_fn)
            templates = {fail2ban_template(x) for x in normal}
            is_head = lambda line: bool(F2B_HEAD.match(line))  # noqa: E731
            br = Breaker(log, grouped_selector(templates, fail2ban_template, fail2ban_problem, head=is_head))

            def restart_clean() -> None:
                sv.stop("fail2ban", signal.SIGTERM, 20)
                sv.forget("fail2ban")
                write_jail()
                start()

            def attack(which: str, ip: str, n: int = 5) -> None:
                for _ in range(n):
                    if which == "sshd":
                        append("auth", sshd_line(ip, "root", False))
                    elif which == "dropbear":
                        append("auth", dropbear_line(ip, "admin", False))
                    elif which == "postfix":
                        append("mail", postfix_line(ip, False))
                    else:
                        append("web", nginx_line(ip, "root"))
                    time.sleep(0.05)

            with Background(lambda r: visitor(r, calm=True), random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("ban_action_failed"):  # the firewall stand-in fails: bans (and unbans) cannot be made
                    for which in ["sshd", "postfix", "nginx", "dropbear", "sshd"]:
                        write_atomic(os.path.join(work, "broken"), "1\n")
                        with br.occurrence(3.0):
                            attack(which, f"203.0.113.{rng.randint(2, 250)}")
                        os.unlink(os.path.join(work, "broken"))
                        br.between()
                with br.phase("client_bad_command"):  # fail2ban-client commands that the server refuses
                    for cmd in [["set", "sshd", "banip", "not-an-ip"], ["status", "nosuchjail"], ["set", "sshd", "maxretry", "abc"],
                                ["set", "dropbear", "addlogpath", "/var/log/onb14-missing.log"], ["get", "sshd", "nosuchoption"],
                                ["set", "postfix-sasl", "addfailregex", "(unclosed"]]:
                        with br.occurrence(1.5):
                            ctl(*cmd)
                with br.phase("socket_garbage"):  # garbage on the control socket
                    for data in [b"hello\n", b"\x80\x04\x95garbage<F2B_END_COMMAND>", TLS_HELLO + b"<F2B_END_COMMAND>",
                                 b"\x00" * 64 + b"<F2B_END_COMMAND>"]:
                        with br.occurrence(1.5):
                            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
                                s.settimeout(2)
                                s.connect(os.path.join(work, "fail2ban.sock"))
                                s.sendall(data)
                                with contextlib.suppress(OSError):
                                    s.recv(1024)
                with br.phase("watched_log_removed"):  # a watched log file removed (rotation gone wrong)
                    for which in ["mail", "web", "mail", "web"]:
                        with br.occurrence(4.0):
                            with lock:
                                os.unlink(inputs[which])
                            time.sleep(2.5)
                        with lock:
                            write_atomic(inputs[which], "")
                        time.sleep(1.5)
                        br.between()
                with br.phase("undecodable_input"):  # log lines that are not UTF-8
                    for _ in range(4):
                        ip = f"198.51.100.{rng.randint(2, 250)}"
                        with br.occurrence(2.0):
                            append("auth", sshd_line(ip, "x", False, invalid=True).replace(" x ", " \udcff\udcfe ").encode(
                                "utf-8", "surrogateescape").replace(b"Failed", b"F\xe4iled \xff"))
                            append("auth", sshd_line(ip, "root", False).encode().replace(b"root", b"r\xc3\x28t\xfe"))
                with br.phase("bad_jail_restart"):  # jail.local mistakes: fail2ban restarted with them
                    good = F2B_JAIL.format(work=work, extra="", bantime="12")
                    for kw in [{"extra": "\n[onb14-app]\nenabled = true\nfilter = onb14-nosuchfilter\nlogpath = %s/auth.log\n" % work},
                               {"extra": "\n[onb14-api]\nenabled = true\nfilter = sshd\nfailregex = ^(unclosed <HOST>\n"
                                         "logpath = %s/auth.log\n" % work},
                               {"text": good.replace(f"logpath = {work}/mail.log", f"logpath = {work}/mail-missing.log")},
                               {"bantime": "ten minutes"},
                               {"text": good.replace("backend = polling", "backend = onb14poll")}]:
                        stop()
                        br.between()
                        write_jail(**kw)
                        with br.occurrence(4.0):
                            start(wait=False)
                            time.sleep(3.0)
                            visitor(rng, calm=True)
                        restart_clean()
                        br.between()
        finally:
            stop()
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(work, "broken"))
    return Source("fail2ban", "Fail2ban (fail2ban-server)", dpkg_version("fail2ban"),
                  "fail2ban's log file at DEBUG: `2026-12-06 05:40:01,123 fail2ban.filter         [9533]: INFO    [sshd] Found "
                  "203.0.113.7 - 2026-12-06 05:40:01`, `... fail2ban.actions        [9533]: NOTICE  [sshd] Ban 203.0.113.7`, "
                  "`... fail2ban.filterpoll     [9533]: DEBUG   /tmp/.../auth.log has been modified`; multi-line records "
                  "(tracebacks) as continuation lines; each address traced from its Found lines through Ban to Unban",
                  "fail2ban-server -f -x (a private copy of /etc/fail2ban, loglevel DEBUG, polling backend, an in-memory "
                  "database, jails sshd, dropbear, postfix-sasl, nginx-http-auth with a ban action recording through a "
                  "shell script, bantime 12 s) fed by clients appending the auth log (sshd / dropbear logins, some "
                  "mistyped, scanners below maxretry), the mail log (SASL logins and failures) and nginx's error log "
                  "(basic-auth failures) of many addresses, some attackers banned and unbanned; an admin's "
                  "fail2ban-client status / banned / get / ping; 2 clean restarts (SIGTERM)",
                  "ban_action_failed (5: the ban script failing for an attacker), client_bad_command (6), socket_garbage "
                  "(4), watched_log_removed (4: a watched log file deleted for a few seconds), undecodable_input (4: "
                  "non-UTF-8 log lines), bad_jail_restart (5: an unknown filter, a bad failregex, a missing log file, a "
                  "bad bantime, an unknown backend)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_fourteenth", SOURCES, globals(), seed=14014, min_normal_s=40,
               root_for="system accounts for dropbear and dante, programs dropping to their own users",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = "none"
ODDITIES = [
    "the first full run (all five sources, --seed 14014) took 737 s; fail2ban was then regenerated alone "
    "(--sources fail2ban) after its problem filter matched 'error' in the path of nginx-error.log in every "
    "background 'has been modified' DEBUG line; nothing had been scored on this corpus before",
    "fail2ban: undecodable_input warns once per file, so one event holds the 'Error decoding line'; "
    "'set sshd banip not-an-ip' is accepted (a Ban of not-an-ip); restart events hold start-up lines also "
    "written at every normal start ('New database created', the filters' regexes at DEBUG)",
    "spamd: child recycling ('handled cleanup of child pid ... exit 0') can land in an event's window; the "
    "'CHECK SPAMC/9.9' garbage is accepted as a scan of an empty message (ordinary scan lines)",
    "dropbear: the locked account logs the same 'Bad password attempt' lines as wrong passwords; 3 of 6 "
    "protocol_garbage events are 'Exit before auth ...: Exited normally'; with '-W notanumber' it keeps running",
    "gearmand: job_failed and job_exception show only as DEBUG packet lines; some restart lines are untimestamped "
    "stderr text; at DEBUG most normal lines are idle workers' GRAB_JOB / PRE_SLEEP / NOOP cycles",
    "dante: failures are logged at info as 'block(1): ...' lines, most events 1-2 lines",
]


if __name__ == "__main__":
    sys.exit(main())
