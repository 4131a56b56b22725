#!/usr/bin/env python3
"""Generate the eighth onboarding corpus: real log lines written by real programs, grouped into events.

An eighth corpus built exactly like benchmarks/onboarding_seventh_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py, of the fourth, fifth, sixth
and first scripts imported) from five programs that no other corpus uses.  Every line is the verbatim
output of a program started by this script on this machine; the script only *drives* the programs
(clients it runs) and *breaks* them (bad configs, killed or frozen processes, wrong passwords and
secrets, garbage on the wire, exhausted limits, timeouts...).  It never writes a log line itself.

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one bad restart,
one crash of a managed program (the state-change lines it causes).  The breakages are made one
occurrence at a time, each in its own time window followed by a pause for the program to finish
logging about it; what the program logs between two windows (recovery, restarting it) belongs to
no event and is not kept.  Normal background traffic keeps running during the breakages and is
filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends freeradius
freeradius-utils supervisor rsync ngircd etcd-server etcd-client; also util-linux and python3; the
RADIUS clients are radclient / radtest (freeradius-utils) and python code in this script, the
supervisor client is supervisorctl, the rsync clients are rsync itself, the IRC clients are python
sockets, the etcd clients are etcdctl and python code using etcd's HTTP/JSON gateway.  Nothing is
installed by this script, and no system service of these packages needs to run: each daemon is
started directly as a plain process, without systemd):

  freeradius FreeRADIUS 3.2 (radiusd -f, as user freerad, log file with auth = yes, auth_badpass and
            auth_goodpass): `Sat Dec  5 15:37:35 2026 : Auth: (12) Login OK: [alice/secret] (from
            client vpn-gw port 7 cli 4C-0D-DA-D2-79-43)`, `... : Info: Ready to process requests`,
            `... : Error: ...` lines.
            A private raddb (the Debian one without EAP / MS-CHAP / inner tunnel, a site of its own:
            files + pap + chap, detail + radutmp accounting), four NAS clients, fourteen users.
            Normal: PAP and CHAP logins of known users from known NASes (python RADIUS code),
            accounting start / interim / stop, the ops team's radtest checks, SIGHUP reloads, two
            clean restarts.
            Broken: wrong passwords, unknown users, accounts the users file rejects (disabled,
            expired, outside their login time), unknown clients, wrong shared secrets (PAP,
            Message-Authenticator, accounting), the detail module failing (its directory replaced
            by a file), broken configs at a restart.  (Malformed packets are not made: radiusd
            logs them only in debug mode, whose lines carry no time stamps.)
  supervisor Supervisor 4.2 (supervisord -n, its log on stdout, loglevel info): `2026-12-05
            15:38:28,797 INFO spawned: 'job_03' with pid 5762`, `... INFO success: ... entered
            RUNNING state, ...`, `... INFO exited: job_03 (exit status 0; expected)`, WARN / CRIT /
            ERRO lines.  Three web workers, a queue worker, sixteen periodic jobs (shell scripts that
            work a little and exit 0 or 2), a worker that ignores SIGTERM, programs started on demand.
            Normal: jobs cycling, supervisorctl status / restart / stop / start / signal / tail,
            reread + update adding and removing a program, SIGUSR2 log reopens, a SIGHUP reload and
            two clean restarts.
            Broken: programs crashing at start (BACKOFF, FATAL), spawn errors (a missing command, a
            file that is not executable, a missing directory), workers killed by signals, jobs
            exiting with codes not expected, a worker ignoring SIGTERM past stopwaitsecs, broken
            program files at a reread / update, broken configs at a restart.
  rsync     rsync 3 daemon (rsync --daemon --no-detach, log file with transfer logging):
            `2026/12/05 15:38:39 [5812] rsync on data/ from alice@localhost (127.0.0.1)`, `... send
            localhost [127.0.0.1] releases () v1.2/app.tar.gz 7`, `... sent 292 bytes  received 89
            bytes  total size 21`, ERROR / auth / chdir lines.  Five modules (backups per user with
            secrets, public releases, a web root with max connections 2, write-only log shipping,
            partners restricted by hosts allow / deny).  Normal: module listings, laptops backing
            up, release downloads, web deploys, log shipping, partner downloads.
            Broken: wrong passwords, users not in auth users, unknown modules, denied hosts, writes
            to read-only / reads from write-only modules, module paths missing, broken secrets files,
            more connections than max connections, clients killed mid-transfer, garbage on the
            port, broken configs at a restart.
  ngircd    ngIRCd 26 (ngircd -n, as user irc, log on stderr): `[pid:6   12] Accepted connection 8
            from "127.0.0.1:55114" on socket 6.`, `[pid:5   12] User "alice!~alice@127.0.0.1"
            registered (connection 8).`, nick changes, OPER / REHASH lines, shutdowns.  The
            bracket holds the pid, the syslog level and the seconds since the start.  Normal: users
            connecting, joining channels, chatting, changing nicks, leaving; an oper rehashing,
            sending WALLOPS and setting modes; SIGHUP rehashes, two clean restarts.
            Broken: bad oper passwords, servers with bad passwords or not configured, clients
            silent past the ping timeout, unregistered connections sending garbage or nothing, more
            connections than MaxConnections, broken configs at a restart.  (ngIRCd logs nothing
            about nick collisions and has no flood kill for clients, it throttles their commands,
            and a client that closes its socket while commands of its are still throttled makes
            ngIRCd 26.1 log a write error in a loop, so no such breakage is made.)
  etcd      etcd 3.4 (single member, --logger zap --log-level debug on stderr, auth enabled):
            JSON lines `{"level":"debug","ts":"...","caller":"v3rpc/interceptor.go:181","msg":
            "request stats",...,"response type":"/etcdserverpb.KV/Put",...}`, `"msg":"authenticated
            a user"`, compaction, defragmentation, snapshot, raft and start-up lines.  Users with
            roles on key prefixes; apps using the HTTP/JSON gateway (config reads and writes,
            leases with keep-alives, transactions), ops using etcdctl (member list, endpoint
            status, watches, compactions, defrags, snapshots).  Normal: this traffic and two clean
            restarts.
            Broken: wrong passwords and unknown users, keys outside a user's roles, stale tokens,
            the quota exceeded (a restart with a small
            --quota-backend-bytes), etcd frozen (SIGSTOP) during traffic, a corrupted or locked
            data dir at a restart, broken flags at a restart.  (Requests over --max-request-bytes are
            not made: etcd logs them only as ordinary request stats.)

Layout written under --out (default benchmarks/data/onboarding_eighth):

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

  * its level marks it as a problem (freeradius Error / Warning / Proxy lines and
    Auth lines other than a successful login; supervisor WARN / ERRO / CRIT lines,
    spawn errors, exits not expected, FATAL and BACKOFF states; rsync lines
    reporting errors, failed or refused authentication, denied hosts, unknown
    modules and exhausted connections; ngircd lines of syslog level 0 to 4 and
    lines reporting bad passwords, timeouts, refusals and failures; etcd lines of
    level warn / error / panic / fatal other than gRPC transport notices about
    clients closing connections and the start-up notice that simple tokens are
    not signed, and non-JSON lines reporting errors), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; domain names, user and program names, module and
    file names, nicks and paths masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (freeradius successful logins;
supervisor spawned / entered RUNNING / expected exit / stopped lines; rsync
connections, module listings, accesses allowed, transfers started, file list and
per-file transfer lines and transfer totals; ngircd accepted connections, user
registrations, QUITs, nick changes and closed connections; etcd request stats,
successful authentications and gRPC transport notices).  An occurrence of which
no line is kept makes no event.

Usage:
    python benchmarks/onboarding_eighth_data.py --out benchmarks/data/onboarding_eighth \\
        [--sources freeradius,supervisor,rsync,ngircd,etcd] [--lines 6000] [--seed 8888] \\
        [--min-normal-seconds 60]

Needs root (programs dropping to their own users).  Programs run on free 127.0.0.1 ports from temp
dirs and are always stopped (process groups killed), also on failure; nothing under /etc or any
system service is touched.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.client
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

from onboarding_data import FileLog, free_port, need, say, version_of, wait_port, write_atomic
from onboarding_fifth_data import normal_loop, run
from onboarding_fourth_data import mask_names
from onboarding_heldout_data import USERS, WORDS, Background, Breaker, Group, Source, entry_selector, raw_send
from onboarding_sixth_data import TLS_HELLO, chown_tree, run_quiet

SOURCES = ["freeradius", "supervisor", "rsync", "ngircd", "etcd"]


def udp_blocker() -> socket.socket:
    """A UDP socket holding a port (a port in use for a broken config)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    return s


def tcp_blocker() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


# --------------------------------------------------------------------------
# freeradius
# --------------------------------------------------------------------------

RADIUS_MODS = ["always", "attr_filter", "chap", "detail", "expiration", "expr", "files", "logintime", "pap", "preprocess",
               "radutmp", "unpack"]
RADIUS_SITE = """\
server default {{
listen {{
	type = auth
	ipaddr = 127.0.0.1
	port = {port}
}}
listen {{
	type = acct
	ipaddr = 127.0.0.1
	port = {acct}
}}
authorize {{
	preprocess
	chap
	files
	expiration
	logintime
	pap
}}
authenticate {{
	Auth-Type PAP {{
		pap
	}}
	Auth-Type CHAP {{
		chap
	}}
}}
preacct {{
	preprocess
	acct_unique
}}
accounting {{
	detail
	radutmp
	attr_filter.accounting_response
}}
session {{
	radutmp
}}
post-auth {{
	Post-Auth-Type REJECT {{
		attr_filter.access_reject
	}}
{extra}}}
}}
"""
RADIUS_NAS = {"localhost": ("127.0.0.1", "Local-test-17"), "nas-office": ("127.0.0.2", "Office-nas-52"),
              "vpn-gw": ("127.0.0.3", "Vpn-gw-secret-8"), "wifi-ctrl": ("127.0.0.4", "Wifi-ctl-31")}
RADIUS_USERS = USERS[:10] + ["kim", "lee", "sam", "tom"]
RADIUS_HEAD = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} : (\w+): ")
RAD_ATTR = {"User-Name": 1, "User-Password": 2, "CHAP-Password": 3, "NAS-IP-Address": 4, "NAS-Port": 5, "Service-Type": 6,
            "Framed-Protocol": 7, "Called-Station-Id": 30, "Calling-Station-Id": 31, "NAS-Identifier": 32,
            "Acct-Status-Type": 40, "Acct-Input-Octets": 42, "Acct-Output-Octets": 43, "Acct-Session-Id": 44,
            "Acct-Authentic": 45, "Acct-Session-Time": 46, "Acct-Terminate-Cause": 49, "NAS-Port-Type": 61,
            "Message-Authenticator": 80}


def radius_pw(user: str) -> str:
    return f"{user.capitalize()}-wifi-{sum(map(ord, user)) % 97:02d}"


def radius_users_file(extra: str = "") -> str:
    out = []
    for u in RADIUS_USERS:
        out.append(f'{u}\tCleartext-Password := "{radius_pw(u)}"\n\tReply-Message := "Welcome, %{{User-Name}}", '
                   "Session-Timeout := 28800\n\n")
    out.append('intern\tCleartext-Password := "Intern-wifi-1", Auth-Type := Reject\n\tReply-Message := "Account disabled"\n\n')
    out.append('olduser\tCleartext-Password := "Olduser-wifi-2", Expiration := "Jan 01 2020"\n\n')
    out.append('nightshift\tCleartext-Password := "Night-wifi-3", Login-Time := "Al0300-0301"\n\n')
    return "".join(out) + extra


def radius_template(line: str) -> str:
    m = RADIUS_HEAD.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r": \[[^\]]*\] \(from client \S+", ": [USER/PASS] (from client NAS", body)
    body = re.sub(r"\bclient \S+", "client NAS", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def radius_problem(line: str) -> bool:
    m = RADIUS_HEAD.match(line)
    if m and m.group(1) in ("Error", "Warning", "Proxy"):
        return True
    return bool(m and m.group(1) == "Auth" and "Login OK" not in line)


def radius_echo(line: str) -> bool:
    return bool(re.search(r"\bAuth: \(\d+\) Login OK: ", line))


def rad_attr(name: str, value: bytes) -> bytes:
    return bytes([RAD_ATTR[name], len(value) + 2]) + value


class RadiusNas:
    """A NAS (access point controller, VPN gateway, switch) talking RADIUS to the server, in python."""

    def __init__(self, auth_port: int, name: str, rng: random.Random, src: str | None = None, secret: str | None = None):
        ip, sec = RADIUS_NAS.get(name, ("127.0.0.1", "x"))
        self.port, self.name, self.rng = auth_port, name, rng
        self.src, self.secret = src or ip, (secret or sec).encode()
        self.sessions: list[tuple[str, str, float]] = []

    def send(self, packet: bytes, port: int, wait: float = 3.0) -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((self.src, 0))
            s.settimeout(wait)
            s.sendto(packet, ("127.0.0.1", port))
            try:
                return s.recv(4096)[0]
            except OSError:
                return 0

    def packet(self, code: int, attrs: list[bytes], auth: bytes, msg_auth: bool = False) -> bytes:
        ident = self.rng.randrange(256)
        if msg_auth:
            attrs = attrs + [rad_attr("Message-Authenticator", bytes(16))]
        body = b"".join(attrs)
        pkt = struct.pack(">BBH", code, ident, 20 + len(body)) + auth + body
        if msg_auth:
            mac = hmac.new(self.secret, pkt, hashlib.md5).digest()
            pkt = pkt[:-16] + mac
        return pkt

    def login(self, user: str, pw: str, chap: bool = False, msg_auth: bool = False, wait: float = 3.0) -> int:
        auth = self.rng.randbytes(16)
        attrs = [rad_attr("User-Name", user.encode())]
        if chap:
            cid = self.rng.randrange(256)
            attrs.append(rad_attr("CHAP-Password", bytes([cid]) + hashlib.md5(bytes([cid]) + pw.encode() + auth).digest()))
        else:
            p = pw.encode() + bytes(-len(pw.encode()) % 16 or (16 if not pw else 0))
            out, prev = b"", auth
            for i in range(0, len(p), 16):
                block = bytes(a ^ b for a, b in zip(p[i:i + 16], hashlib.md5(self.secret + prev).digest()))
                out, prev = out + block, block
            attrs.append(rad_attr("User-Password", out))
        attrs += [rad_attr("NAS-Identifier", self.name.encode()), rad_attr("NAS-Port", struct.pack(">I", self.rng.randint(1, 48))),
                  rad_attr("Calling-Station-Id", "-".join(f"{b:02X}" for b in self.rng.randbytes(6)).encode()),
                  rad_attr("Service-Type", struct.pack(">I", 2 if self.name == "vpn-gw" else 1)),
                  rad_attr("NAS-Port-Type", struct.pack(">I", 5 if self.name == "vpn-gw" else 19))]
        return self.send(self.packet(1, attrs, auth, msg_auth), self.port, wait)

    def accounting(self, user: str, status: int, sid: str, secs: int = 0) -> int:
        attrs = [rad_attr("User-Name", user.encode()), rad_attr("Acct-Status-Type", struct.pack(">I", status)),
                 rad_attr("Acct-Session-Id", sid.encode()), rad_attr("NAS-Identifier", self.name.encode()),
                 rad_attr("NAS-IP-Address", socket.inet_aton(self.src)), rad_attr("Acct-Authentic", struct.pack(">I", 1))]
        if status != 1:
            attrs += [rad_attr("Acct-Session-Time", struct.pack(">I", secs)),
                      rad_attr("Acct-Input-Octets", struct.pack(">I", self.rng.randint(10**4, 10**8))),
                      rad_attr("Acct-Output-Octets", struct.pack(">I", self.rng.randint(10**4, 10**8)))]
        if status == 2:
            attrs.append(rad_attr("Acct-Terminate-Cause", struct.pack(">I", self.rng.choice([1, 4, 5]))))
        body = b"".join(attrs)
        head = struct.pack(">BBH", 4, self.rng.randrange(256), 20 + len(body))
        auth = hashlib.md5(head + bytes(16) + body + self.secret).digest()
        return self.send(head + auth + body, self.port + 1)

    def normal(self, r: random.Random) -> None:
        if r.random() < 0.7 or not self.sessions:
            user = r.choice(RADIUS_USERS)
            if self.login(user, radius_pw(user), chap=r.random() < 0.3) == 2 and r.random() < 0.6:
                sid = f"{r.getrandbits(32):08X}"
                self.accounting(user, 1, sid)
                self.sessions.append((user, sid, time.time()))
        else:
            user, sid, t0 = self.sessions[0] if r.random() < 0.5 else r.choice(self.sessions)
            if r.random() < 0.6:
                self.sessions.remove((user, sid, t0))
                self.accounting(user, 2, sid, int(time.time() - t0))
            else:
                self.accounting(user, 3, sid, int(time.time() - t0))


def source_freeradius(args) -> Source:
    radiusd = need("/usr/sbin/freeradius", "freeradius")
    need("radclient", "freeradius-utils")
    radtest = need("radtest", "freeradius-utils")
    rng = random.Random(f"{args.seed}-freeradius")
    with tempfile.TemporaryDirectory(prefix="onb8-freeradius-") as work, Group() as sv:
        os.chmod(work, 0o755)
        raddb = os.path.join(work, "raddb")
        shutil.copytree("/etc/freeradius/3.0", raddb, symlinks=True)
        for name in os.listdir(os.path.join(raddb, "mods-enabled")):
            if name not in RADIUS_MODS:
                os.remove(os.path.join(raddb, "mods-enabled", name))
        for name in os.listdir(os.path.join(raddb, "sites-enabled")):
            os.remove(os.path.join(raddb, "sites-enabled", name))
        for d in ("log/radacct", "run"):
            os.makedirs(os.path.join(work, d))
        port = free_port()
        while port + 1 >= 65535:
            port = free_port()
        conf_path, logp = os.path.join(raddb, "radiusd.conf"), os.path.join(work, "log", "radius.log")
        with open(conf_path) as f:
            base_conf = f.read()
        base_conf = base_conf.replace("raddbdir = /etc/freeradius/3.0", f"raddbdir = {raddb}")
        base_conf = base_conf.replace("logdir = /var/log/freeradius", f"logdir = {work}/log")
        base_conf = re.sub(r"(?m)^run_dir = .*$", f"run_dir = {work}/run", base_conf)
        base_conf = re.sub(r"(?m)^(\s*)auth = no", r"\1auth = yes", base_conf)
        base_conf = base_conf.replace("auth_badpass = no", "auth_badpass = yes").replace("auth_goodpass = no", "auth_goodpass = yes")

        def write_conf(conf_extra: str = "", site_extra: str = "", clients_extra: str = "", users_extra: str = "",
                       listen: int | None = None) -> None:
            write_atomic(conf_path, base_conf + conf_extra)
            write_atomic(os.path.join(raddb, "sites-enabled", "default"),
                         RADIUS_SITE.format(port=listen or port, acct=port + 1, extra=site_extra))
            write_atomic(os.path.join(raddb, "clients.conf"), "".join(
                f"client {n} {{\n\tipaddr = {ip}\n\tsecret = {sec}\n\tshortname = {n}\n}}\n" for n, (ip, sec) in RADIUS_NAS.items())
                + clients_extra)
            write_atomic(os.path.join(raddb, "mods-config", "files", "authorize"), radius_users_file(users_extra))
            chown_tree(work, "freerad")
            for p in (conf_path, os.path.join(raddb, "clients.conf"), os.path.join(raddb, "mods-config", "files", "authorize")):
                os.chmod(p, 0o640)

        write_conf()

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("radiusd", [radiusd, "-f", "-d", raddb, "-l", logp], stdout=logf, stderr=logf, cwd=work)
            if wait:
                for _ in range(100):
                    time.sleep(0.1)
                    with open(logp, "rb") as f:
                        f.seek(max(0, os.path.getsize(logp) - 400))
                        if b"Ready to process requests" in f.read():
                            break

        def stop() -> None:
            sv.stop("radiusd", signal.SIGTERM)

        start()
        nas = {n: RadiusNas(port, n, random.Random(rng.random())) for n in RADIUS_NAS}
        log = FileLog(logp)
        say(f"freeradius on 127.0.0.1:{port}/{port + 1}; normal phase...")
        state = {"restarts": 0, "hup": time.time()}

        def ops_check(r: random.Random) -> None:  # the ops team's radtest from the server itself
            u = r.choice(RADIUS_USERS)
            run_quiet([radtest, "-t", r.choice(["pap", "chap"]), u, radius_pw(u), f"127.0.0.1:{port}", "0",
                       RADIUS_NAS["localhost"][1]], 10)

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(5, 20)):
                nas[rng.choice(["nas-office", "vpn-gw", "wifi-ctrl", "wifi-ctrl"])].normal(rng)
            if rng.random() < 0.03:
                ops_check(rng)
            if time.time() - state["hup"] > rng.uniform(20, 40):
                sv.procs["radiusd"].send_signal(signal.SIGHUP)
                state["hup"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "freeradius", round_fn)
            templates = {radius_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, radius_template, radius_problem, radius_echo))
            bg_nas = {n: RadiusNas(port, n, random.Random(rng.random())) for n in ("nas-office", "vpn-gw", "wifi-ctrl")}

            def bg(r: random.Random) -> None:
                for _ in range(r.randint(1, 3)):
                    bg_nas[r.choice(list(bg_nas))].normal(r)

            with Background(bg, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("wrong_password"):  # typos, old passwords saved in a phone
                    for nas_name, user, pw, chap in [("wifi-ctrl", "alice", "alice", False), ("vpn-gw", "bob", radius_pw("bob")[:-1], False),
                                                     ("wifi-ctrl", "carol", "Summer2024!", True), ("nas-office", "dave", radius_pw("erin"), False),
                                                     ("vpn-gw", "kim", "kim123", True)]:
                        with br.occurrence(1.5):
                            nas[nas_name].login(user, pw, chap)
                with br.phase("unknown_user"):  # accounts that do not exist
                    for user in ["admin", "alcie", "guest", "test@example.test"]:
                        with br.occurrence(1.5):
                            nas[rng.choice(["wifi-ctrl", "vpn-gw"])].login(user, "Password1")
                with br.phase("account_rejected"):  # entries of the users file that reject: disabled, expired, outside login time
                    for user, pw in [("intern", "Intern-wifi-1"), ("olduser", "Olduser-wifi-2"), ("nightshift", "Night-wifi-3"),
                                     ("intern", "Intern-wifi-1")]:
                        with br.occurrence(1.5):
                            nas["wifi-ctrl"].login(user, pw, rng.random() < 0.5)
                with br.phase("unknown_client"):  # NASes that are not in clients.conf
                    for src in ["127.0.0.9", "127.0.0.23", "127.0.0.77", "127.0.0.9"]:
                        with br.occurrence(1.5):
                            RadiusNas(port, "new-ap", random.Random(rng.random()), src=src, secret="testing123").login("alice", radius_pw("alice"), wait=1.0)
                        time.sleep(1)
                with br.phase("wrong_secret"):  # a NAS configured with another shared secret
                    for how in ["pap", "msg_auth", "acct", "msg_auth"]:
                        bad = RadiusNas(port, rng.choice(["nas-office", "vpn-gw"]), random.Random(rng.random()), secret="testing123")
                        with br.occurrence(1.5):
                            if how == "acct":
                                bad.accounting("frank", 1, f"{rng.getrandbits(32):08X}")
                            else:
                                bad.login("frank", radius_pw("frank"), msg_auth=how == "msg_auth", wait=1.5)
                with br.phase("module_failure"):  # the detail module cannot write (its directory replaced by a file)
                    radacct = os.path.join(work, "log", "radacct")
                    for i in range(3):
                        os.rename(radacct, radacct + ".moved")
                        write_atomic(radacct, "")
                        with br.occurrence(2.0):
                            for name in ("nas-office", "vpn-gw"):
                                nas[name].accounting(rng.choice(RADIUS_USERS), 1, f"{rng.getrandbits(32):08X}")
                        os.remove(radacct)
                        os.rename(radacct + ".moved", radacct)
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # raddb edits with mistakes, radiusd restarted
                    blocker = udp_blocker()
                    for kw in [{"clients_extra": "client nas-lab {\n\tipaddr = 127.0.0.8\n}\n"},
                               {"users_extra": 'carol\tCleartext-Password = "x" Reply-Message\n'},
                               {"site_extra": "\tldap\n"},
                               {"listen": blocker.getsockname()[1]},
                               {"conf_extra": "security {\n\tmax_attributes = lots\n}\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(2)
                            nas["wifi-ctrl"].login("alice", radius_pw("alice"), wait=0.5)
                        write_conf()
                        sv.stop("radiusd")
                        sv.forget("radiusd")
                        start()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("freeradius", "FreeRADIUS (radiusd)", version_of([radiusd, "-v"]),
                  "radiusd log file, auth = yes with auth_badpass / auth_goodpass (`Sat Dec  5 15:37:35 2026 : Auth: (12) Login "
                  "OK: [alice/secret] (from client vpn-gw port 7)`, `... : Auth: (13) Login incorrect (...): [...]`, `... : Info: "
                  "Ready to process requests`, `... : Error: ...`)",
                  "radiusd -f (as freerad; a private raddb without EAP, a site with files + pap + chap, detail + radutmp "
                  "accounting; 4 NAS clients, 14 users) with python NASes (office switch, VPN gateway, Wi-Fi controller): PAP "
                  "and CHAP logins, accounting start / interim / stop; the ops team's radtest checks; SIGHUP reloads every "
                  "20-40s, 2 clean restarts",
                  "wrong_password (5 logins with wrong passwords, PAP and CHAP), unknown_user (4), account_rejected (4: a "
                  "disabled, an expired and a time-restricted account), unknown_client (4 NASes not in clients.conf), "
                  "wrong_secret (4: PAP, Message-Authenticator and accounting with a wrong shared secret), module_failure (3x the detail directory replaced by a file during accounting), "
                  "bad_config_restart (5: a client without secret, a broken users entry, an unknown module, the port in "
                  "use, a non-numeric setting)", normal, br.errors)


# --------------------------------------------------------------------------
# supervisor
# --------------------------------------------------------------------------

SUPERVISOR_CONF = """\
[unix_http_server]
file={work}/supervisor.sock
chmod=0700
username=ops
password=Sv-ops-4471

[supervisord]
logfile=/dev/stdout
logfile_maxbytes=0
loglevel={loglevel}
pidfile={work}/supervisord.pid
childlogdir={work}/childlogs
nodaemon=true
silent=true
user=root
identifier=supervisor

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{work}/supervisor.sock
username=ops
password=Sv-ops-4471

[program:web]
command={work}/bin/service.sh web
process_name=%(program_name)s_%(process_num)d
numprocs=3
autorestart=true
startsecs=1
stdout_logfile={work}/childlogs/%(program_name)s_%(process_num)d.log
stdout_logfile_maxbytes=20KB
stdout_logfile_backups=2
redirect_stderr=true

[program:queue]
command={work}/bin/service.sh queue
autorestart=true
startsecs=1
stopwaitsecs=5
stdout_logfile={work}/childlogs/queue.log
redirect_stderr=true

[program:jobs]
command={work}/bin/job.sh %(process_num)02d {work}/flags
process_name=job_%(process_num)02d
numprocs=16
startsecs=0
autorestart=true
exitcodes=0,2
stdout_logfile={work}/childlogs/jobs.log
redirect_stderr=true

[program:archiver]
command={work}/bin/stubborn.sh
autorestart=true
startsecs=1
stopwaitsecs=2
stdout_logfile={work}/childlogs/archiver.log
redirect_stderr=true

[program:migrate]
command=sh -c "echo 'could not connect to the database' >&2; exit 1"
autostart=false
autorestart=true
startsecs=2
startretries=2

[program:mailer]
command=sh -c "sleep 0.3; exit 3"
autostart=false
autorestart=true
startsecs=2
startretries=2

[program:indexer]
command=sh -c "sleep 0.2; kill -SEGV $$"
autostart=false
autorestart=true
startsecs=2
startretries=2

[program:reporter]
command={work}/bin/reporter.sh reporter
autorestart=true
startsecs=1
startretries=2
stdout_logfile={work}/childlogs/reporter.log

[program:notifier]
command={work}/bin/notifier.sh notifier
autorestart=true
startsecs=1
startretries=2
stdout_logfile={work}/childlogs/notifier.log

[program:exporter]
command={work}/bin/service.sh exporter
directory=/srv/exporter
autostart=false
startsecs=1
startretries=1

[include]
files = {work}/conf.d/*.conf
{extra}"""
SV_SERVICE = """#!/bin/sh
# a long-running worker: ticks until it is told to stop
trap 'echo "$0 stopping"; exit 0' TERM INT
echo "worker $1 starting"
while :; do sleep 1 & wait $!; done
"""
SV_JOB = """#!/bin/sh
# a periodic job: works a little, then exits 0 (done) or 2 (nothing to do); a flag file sets another exit code
n=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
sleep 0.$(( n % 9 + 1 ))
if [ -e "$2/fail-$1" ]; then exit "$(cat "$2/fail-$1")"; fi
[ $(( n % 4 )) -eq 0 ] && exit 2
exit 0
"""
SV_STUBBORN = """#!/bin/sh
# an archiver that ignores SIGTERM while it works
trap '' TERM
while :; do sleep 1; done
"""
SV_CANARY = """[program:canary]
command={work}/bin/service.sh canary
autorestart=true
startsecs=1
stdout_logfile={work}/childlogs/canary.log
"""
SV_BEAT = """[program:beat]
command={work}/bin/job.sh beat {work}/flags
startsecs=0
autorestart=true
exitcodes=0,2
stdout_logfile={work}/childlogs/beat.log
"""
SV_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (\w+) ")


def supervisor_template(line: str) -> str:
    m = SV_HEAD.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r"'[^']*'", "'NAME'", body)
    body = re.sub(r"\b(exited|success|stopped|gave up|spawnerr|killing|added|removed|updated|waiting for): [\w:-]+", r"\1: NAME", body)
    body = re.sub(r"\b(waiting for|killing) [\w:-]+", r"\1 NAME", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def supervisor_problem(line: str) -> bool:
    m = SV_HEAD.match(line)
    if m and m.group(1) in ("WARN", "ERRO", "CRIT"):
        return True
    return bool(re.search(r"(spawnerr|not expected|gave up|FATAL|BACKOFF|Error|error)", line))


def supervisor_echo(line: str) -> bool:
    m = SV_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.match(r"(spawned: '\S+' with pid|success: \S+ entered RUNNING state|exited: \S+ \(exit status \d+; expected\)|"
                         r"stopped: \S+ \(exit status 0\)|stopped: \S+ \(terminated by SIGTERM\)|waiting for \S+ to stop)", body))


def source_supervisor(args) -> Source:
    supervisord = need("/usr/bin/supervisord", "supervisor")
    supervisorctl = need("supervisorctl", "supervisor")
    rng = random.Random(f"{args.seed}-supervisor")
    with tempfile.TemporaryDirectory(prefix="onb8-supervisor-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("bin", "childlogs", "conf.d", "flags"):
            os.makedirs(os.path.join(work, d))
        for name, text in [("service.sh", SV_SERVICE), ("job.sh", SV_JOB), ("stubborn.sh", SV_STUBBORN), ("reporter.sh", SV_SERVICE),
                           ("notifier.sh", SV_SERVICE), ("thumbs.py", "#!/usr/bin/python3\nimport time\ntime.sleep(3600)\n")]:
            write_atomic(os.path.join(work, "bin", name), text)
            os.chmod(os.path.join(work, "bin", name), 0o755)
        write_atomic(os.path.join(work, "conf.d", "beat.conf"), SV_BEAT.format(work=work))
        conf, logp = os.path.join(work, "supervisord.conf"), os.path.join(work, "supervisord.log")

        def write_conf(extra: str = "", loglevel: str = "info") -> None:
            write_atomic(conf, SUPERVISOR_CONF.format(work=work, extra=extra, loglevel=loglevel))
            os.chmod(conf, 0o600)

        write_conf()

        def ctl(*cmd: str, timeout: float = 30) -> str:
            try:
                return subprocess.run([supervisorctl, "-c", conf, *cmd], capture_output=True, text=True, timeout=timeout,
                                      check=False).stdout
            except subprocess.TimeoutExpired:
                return ""

        def start(wait: bool = True, name: str = "supervisord") -> None:
            with open(logp, "ab") as logf:
                sv.start(name, [supervisord, "-n", "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                for _ in range(100):
                    if "RUNNING" in ctl("status", "queue", timeout=5):
                        break
                    time.sleep(0.2)

        def stop() -> None:
            sv.stop("supervisord", signal.SIGTERM, 30)

        def pid_of(name: str) -> int:
            out = ctl("pid", name).strip()
            return int(out) if out.isdigit() else 0

        start()
        log = FileLog(logp)
        say(f"supervisord in {work}; normal phase...")
        state = {"restarts": 0, "last": time.time(), "canary": False, "usr2": time.time()}

        def ops(r: random.Random) -> None:
            x = r.random()
            if x < 0.3:
                ctl("status")
            elif x < 0.5:
                ctl("restart", f"web:web_{r.randint(0, 2)}")
            elif x < 0.6:
                ctl("stop", "queue")
                time.sleep(r.uniform(0.2, 1.0))
                ctl("start", "queue")
            elif x < 0.7:
                ctl("signal", "HUP", f"web:web_{r.randint(0, 2)}")
            elif x < 0.78:
                ctl("tail", r.choice(["queue", "archiver", "web:web_0"]))
            elif x < 0.86:  # deploying / retiring the canary program
                if state["canary"]:
                    os.remove(os.path.join(work, "conf.d", "canary.conf"))
                else:
                    write_atomic(os.path.join(work, "conf.d", "canary.conf"), SV_CANARY.format(work=work))
                state["canary"] = not state["canary"]
                ctl("reread")
                ctl("update")
            elif x < 0.93:
                ctl("stop", "jobs:*")
                ctl("start", "jobs:*")
            else:
                ctl("restart", "archiver")

        def round_fn(n: int, elapsed: float) -> None:
            if rng.random() < 0.35:
                ops(rng)
            time.sleep(rng.uniform(0.3, 0.8))
            if time.time() - state["usr2"] > rng.uniform(20, 40):  # logrotate's postrotate
                sv.procs["supervisord"].send_signal(signal.SIGUSR2)
                state["usr2"] = time.time()
            if state["restarts"] < 3 and elapsed > 25 * (state["restarts"] + 1):
                if state["restarts"] == 1:  # a reload (SIGHUP) instead of a full restart
                    sv.procs["supervisord"].send_signal(signal.SIGHUP)
                    time.sleep(3)
                else:
                    stop()
                    time.sleep(0.3)
                    start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "supervisor", round_fn)
            templates = {supervisor_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, supervisor_template, supervisor_problem, supervisor_echo))
            with Background(lambda r: ctl("status") if r.random() < 0.5 else None, random.Random(rng.random()), (1.0, 2.5)):
                with br.phase("crash_loop"):  # programs that die right after their start: BACKOFF, then FATAL
                    for name in ["migrate", "mailer", "indexer"]:
                        with br.occurrence(2.0):
                            ctl("start", name, timeout=60)
                            time.sleep(1)
                        ctl("stop", name)
                        br.between()
                with br.phase("spawn_error"):  # a deploy removed a command / lost its x bit, then the program died; a missing directory
                    for name, how in [("reporter", "remove"), ("notifier", "chmod"), ("exporter", "chdir"), ("reporter", "chmod")]:
                        script = os.path.join(work, "bin", f"{name}.sh")
                        if how == "remove":
                            os.rename(script, script + ".old")
                        elif how == "chmod":
                            os.chmod(script, 0o644)
                        pid = pid_of(name)
                        with br.occurrence(2.0):
                            if how == "chdir":
                                ctl("start", name, timeout=60)
                            elif pid:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGTERM)
                                time.sleep(4)
                        if how == "remove":
                            os.rename(script + ".old", script)
                        elif how == "chmod":
                            os.chmod(script, 0o755)
                        if how == "chdir":
                            ctl("stop", name)
                        else:
                            ctl("start", name, timeout=30)
                        br.between()
                with br.phase("killed_by_signal"):  # workers killed from outside (OOM killer, an admin, a crash)
                    for name, sig in [("web:web_1", signal.SIGKILL), ("queue", signal.SIGSEGV), ("web:web_2", signal.SIGABRT),
                                      ("queue", signal.SIGKILL)]:
                        pid = pid_of(name)
                        with br.occurrence(2.5):
                            if pid:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, sig)
                        br.between()
                with br.phase("unexpected_exit"):  # jobs failing with codes not in exitcodes
                    for job, code in [("04", 1), ("07", 127), ("01", 5)]:
                        write_atomic(os.path.join(work, "flags", f"fail-{job}"), f"{code}\n")
                        with br.occurrence(1.0):
                            time.sleep(1.5)
                        os.remove(os.path.join(work, "flags", f"fail-{job}"))
                        time.sleep(1.5)
                        br.between()
                with br.phase("stop_timeout"):  # the archiver ignores SIGTERM past stopwaitsecs 2
                    for i in range(3):
                        with br.occurrence(1.0):
                            ctl("stop", "archiver")
                        ctl("start", "archiver")
                        br.between()
                with br.phase("bad_config_update"):  # broken program files, then reread / update
                    for text in ["[program:thumbnails]\ncommand=\nstartretries=1\n",
                                 "[program:thumbnails]\ncommand=/opt/thumbs/bin/thumbnailer --workers 2\nstartretries=1\n",
                                 f"[program:thumbnails]\ncommand={work}/bin/thumbs.py\nstartretries=1\nstartsecs=1\ndirectory=/srv/thumbs\n",
                                 "[program:thumbnails]\ncommand=thumbnailer-ng\nstartretries=1\n"]:
                        write_atomic(os.path.join(work, "conf.d", "thumbnails.conf"), text)
                        with br.occurrence(3.0):
                            ctl("reread")
                            ctl("update")
                        os.remove(os.path.join(work, "conf.d", "thumbnails.conf"))
                        ctl("reread")
                        ctl("update")
                        br.between()
                with br.phase("bad_config_restart"):  # supervisord.conf edits with mistakes, supervisord restarted
                    for extra in ["[program:web]\ncommand=/bin/true\n", "loglevel",
                                  "[program:cache]\ncommand=/bin/sleep 100\nstdout_logfile=/nonexistent/cache/out.log\n",
                                  "[program:cache]\ncommand=/bin/sleep 100\nstartsecs=ten\n", "second"]:
                        if extra == "second":  # a second supervisord started by mistake with the same config
                            with br.occurrence(2.0):
                                start(wait=False, name="second")
                                time.sleep(2.5)
                            sv.stop("second")
                            sv.forget("second")
                            br.between()
                            continue
                        stop()
                        br.between()
                        write_conf(**({"loglevel": "verbose"} if extra == "loglevel" else {"extra": extra}))
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(2.5)
                        write_conf()
                        sv.stop("supervisord")
                        sv.forget("supervisord")
                        start()
                        time.sleep(1)
                        br.between()
        finally:
            stop()
    return Source("supervisor", "Supervisor (supervisord)", version_of([supervisord, "--version"]),
                  "supervisord -n log on stdout, loglevel info (`2026-12-05 15:38:28,797 INFO spawned: 'job_03' with pid 5762`, "
                  "`... INFO success: job_03 entered RUNNING state, process has stayed up for > than 0 seconds (startsecs)`, `... "
                  "INFO exited: job_03 (exit status 0; expected)`, `... WARN ...`, `... CRIT ...`)",
                  "supervisord (as root, a unix socket with a password) managing 3 web workers, a queue worker, 16 periodic "
                  "jobs (shell scripts working 0.1-0.9s, exiting 0 or 2, restarted at once), an archiver ignoring SIGTERM and "
                  "programs started on demand; supervisorctl status / restart / stop + start / signal HUP / tail, reread + "
                  "update adding and removing a canary program; SIGUSR2 log reopens every 20-40s, a SIGHUP reload and 2 clean "
                  "restarts",
                  "crash_loop (3 programs dying at start: BACKOFF then FATAL), spawn_error (4: a running program's script "
                  "removed / made not executable, then the program killed; a missing directory), killed_by_signal (4 workers killed with SIGKILL / SIGSEGV / "
                  "SIGABRT), unexpected_exit (3 jobs exiting 1 / 127 / 5 not in exitcodes), stop_timeout (3x the archiver "
                  "ignoring SIGTERM past stopwaitsecs 2), bad_config_update (4 broken program files + reread / update: an empty "
                  "command, missing commands, a missing directory), "
                  "bad_config_restart (5: a duplicate section, a bad loglevel, a log in a missing directory, a non-numeric "
                  "startsecs, a second supervisord on the same socket)", normal, br.errors)


# --------------------------------------------------------------------------
# rsync
# --------------------------------------------------------------------------

RSYNCD_CONF = """\
port = {port}
address = 127.0.0.1
use chroot = no
uid = {uid}
gid = nogroup
pid file = {work}/rsyncd.pid
log file = {work}/rsyncd.log
transfer logging = yes
timeout = 20
max connections = 30
lock file = {work}/rsyncd.lock
{extra}
[backup]
    path = {work}/modules/backup
    comment = laptop backups
    read only = no
    auth users = {backup_users}
    secrets file = {work}/rsyncd.secrets
[releases]
    path = {work}/modules/releases
    comment = release tarballs
    read only = yes
[www]
    path = {work}/modules/www
    comment = web root
    read only = no
    auth users = deploy
    secrets file = {work}/rsyncd.secrets
    max connections = 2
    lock file = {work}/www.lock
[logs]
    path = {work}/modules/logs
    comment = log shipping
    read only = no
    write only = yes
    auth users = loghost
    secrets file = {work}/rsyncd.secrets
[partners]
    path = {work}/modules/partners
    comment = partner exchange
    read only = yes
    hosts allow = 127.0.0.1 127.0.0.2
    hosts deny = *
"""
RSYNC_USERS = USERS[:5]
RSYNC_HEAD = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[\d+\] ")


def rsync_pw(user: str) -> str:
    return f"{user.capitalize()}-sync-{sum(map(ord, user)) % 83:02d}"


def rsync_template(line: str) -> str:
    m = RSYNC_HEAD.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"^(send|recv|del\.) \S+ \[\S+\] \S+ \([^)]*\) .*", r"\1 HOST [IP] MODULE (USER) FILE", body)
    body = re.sub(r"'[^']*'", "'NAME'", body)
    body = re.sub(r"\b(on|to) \S+ from \S+", r"\1 MODULE from CLIENT", body)
    body = re.sub(r"\bmodule \S+", "module NAME", body)
    body = re.sub(r"\bfor \S+:", "for USER:", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def rsync_problem(line: str) -> bool:
    m = RSYNC_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.search(r"(?i)(error|fail|denied|unknown module|max connections|unauthorized|mismatch|refused|broken pipe|"
                          r"unexpectedly|no such file|not found|invalid|warning|read only|write only|cannot|can't|timeout)", body))


def rsync_echo(line: str) -> bool:
    m = RSYNC_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.match(r"(connect from |module-list request from |rsync allowed access on module |rsync (on|to) \S+ from |"
                         r"building file list|receiving file list|sent \d+ bytes +received \d+ bytes|(send|recv|del\.) \S+ \[)", body))


class RsyncClients:
    """Laptops backing up, a CI deploying the web root, hosts shipping logs, people fetching releases."""

    def __init__(self, port: int, work: str, rng: random.Random):
        self.port, self.work, self.rng = port, work, rng
        self.rsync = need("rsync", "rsync")

    def url(self, module: str, user: str | None = None) -> str:
        return f"rsync://{user + '@' if user else ''}127.0.0.1:{self.port}/{module}"

    def run(self, argv: list[str], pw: str | None = None, timeout: float = 60, wait: bool = True):
        env = dict(os.environ, RSYNC_PASSWORD=pw) if pw else {k: v for k, v in os.environ.items() if k != "RSYNC_PASSWORD"}
        proc = subprocess.Popen([self.rsync, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
        if not wait:
            return proc
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def touch(self, d: str, r: random.Random, n: int) -> None:
        """Files changed on a laptop / a host since the last sync."""
        for _ in range(n):
            sub = os.path.join(d, r.choice(["docs", "photos", "projects", "mail"]))
            os.makedirs(sub, exist_ok=True)
            with open(os.path.join(sub, f"{r.choice(WORDS)}-{r.randint(1, 30)}.{r.choice(['txt', 'jpg', 'odt', 'eml'])}"), "wb") as f:
                f.write(r.randbytes(r.randint(100, 8000)))
        names = [os.path.join(dp, fn) for dp, _, fns in os.walk(d) for fn in fns]
        if len(names) > 40:
            for victim in r.sample(names, 3):
                os.remove(victim)

    def normal(self, r: random.Random) -> None:
        x = r.random()
        if x < 0.12:
            self.run([self.url(""), "--list-only"] if r.random() < 0.5 else [self.url("")])
        elif x < 0.42:  # a laptop backs up
            u = r.choice(RSYNC_USERS)
            d = os.path.join(self.work, "clients", u)
            self.touch(d, r, r.randint(1, 6))
            self.run(["-a", "--delete", d + "/", self.url(f"backup/{u}/", u)], rsync_pw(u))
        elif x < 0.62:  # someone downloads releases
            dest = tempfile.mkdtemp(prefix="dl-", dir=os.path.join(self.work, "dl"))
            what = r.choice(["releases/", f"releases/v{r.randint(1, 3)}.{r.randint(0, 4)}/", "releases/latest/"])
            self.run(["-a", "--exclude=*.iso", self.url(what), dest + "/"])
            shutil.rmtree(dest, ignore_errors=True)
        elif x < 0.74:  # CI deploys the web root
            site = os.path.join(self.work, "clients", "site")
            for _ in range(r.randint(1, 4)):
                with open(os.path.join(site, f"{r.choice(WORDS)}.html"), "w") as f:
                    f.write(f"<h1>{r.choice(WORDS)} {r.random()}</h1>\n")
            self.run(["-rlt", "--delete", site + "/", self.url("www/", "deploy")], rsync_pw("deploy"))
        elif x < 0.86:  # a host ships its logs
            host = r.choice(["web1", "web2", "db1"])
            d = os.path.join(self.work, "clients", "logs", host)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"app-{r.randint(1, 12):02d}.log"), "a") as f:
                f.write("".join(f"{time.time():.3f} {r.choice(WORDS)}\n" for _ in range(r.randint(5, 50))))
            self.run(["-a", d + "/", self.url(f"logs/{host}/", "loghost")], rsync_pw("loghost"))
        elif x < 0.94:  # a partner fetches its exchange folder
            dest = tempfile.mkdtemp(prefix="dl-", dir=os.path.join(self.work, "dl"))
            self.run(["-a", self.url("partners/"), dest + "/"])
            shutil.rmtree(dest, ignore_errors=True)
        else:  # restore of one file from a backup
            u = r.choice(RSYNC_USERS)
            dest = tempfile.mkdtemp(prefix="dl-", dir=os.path.join(self.work, "dl"))
            self.run(["-a", self.url(f"backup/{u}/", u), dest + "/"], rsync_pw(u))
            shutil.rmtree(dest, ignore_errors=True)


def source_rsync(args) -> Source:
    rsync = need("rsync", "rsync")
    rng = random.Random(f"{args.seed}-rsync")
    with tempfile.TemporaryDirectory(prefix="onb8-rsync-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        for d in ("modules/backup", "modules/releases", "modules/www", "modules/logs", "modules/partners", "clients/site", "dl"):
            os.makedirs(os.path.join(work, d))
        for v in [f"v{a}.{b}" for a in range(1, 4) for b in range(5)] + ["latest"]:
            os.makedirs(os.path.join(work, "modules", "releases", v))
            for name in ["app.tar.gz", "app.tar.gz.sha256", "CHANGES.txt", "app-docs.zip"][:rng.randint(2, 4)]:
                with open(os.path.join(work, "modules", "releases", v, name), "wb") as f:
                    f.write(rng.randbytes(rng.randint(500, 20000)))
        with open(os.path.join(work, "modules", "releases", "big-image.iso"), "wb") as f:
            f.write(rng.randbytes(3_000_000))
        for name in ["prices.csv", "catalog.xml", "orders-2024.csv", "README.txt"]:
            with open(os.path.join(work, "modules", "partners", name), "wb") as f:
                f.write(rng.randbytes(rng.randint(500, 5000)))
        clients = RsyncClients(0, work, rng)
        for u in RSYNC_USERS:  # each laptop's first backup is there already
            clients.touch(os.path.join(work, "clients", u), rng, 8)
            shutil.copytree(os.path.join(work, "clients", u), os.path.join(work, "modules", "backup", u))
        subprocess.run(["chown", "-R", "nobody:nogroup", os.path.join(work, "modules")], check=True)
        secrets = os.path.join(work, "rsyncd.secrets")
        write_atomic(secrets, "".join(f"{u}:{rsync_pw(u)}\n" for u in RSYNC_USERS + ["deploy", "loghost"]))
        os.chmod(secrets, 0o600)
        conf, logp = os.path.join(work, "rsyncd.conf"), os.path.join(work, "rsyncd.log")

        def write_conf(extra: str = "", uid: str = "nobody", listen: int | None = None) -> None:
            text = RSYNCD_CONF.format(port=listen or port, work=work, extra=extra, uid=uid, backup_users=", ".join(RSYNC_USERS))
            write_atomic(conf, text)
            os.chmod(conf, 0o644)

        write_conf()

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what the daemon says before it opens its log file goes there too
                sv.start("rsyncd", [rsync, "--daemon", "--no-detach", f"--config={conf}"], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("rsyncd", signal.SIGTERM)
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(work, "rsyncd.pid"))

        start()
        clients.port = port
        log = FileLog(logp)
        say(f"rsync daemon on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "release": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(1, 3)):
                clients.normal(rng)
            if time.time() - state["release"] > rng.uniform(15, 30):  # a new build is published
                d = os.path.join(work, "modules", "releases", "latest")
                with open(os.path.join(d, "app.tar.gz"), "wb") as f:
                    f.write(rng.randbytes(rng.randint(5000, 20000)))
                state["release"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "rsync", round_fn)
            templates = {rsync_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, rsync_template, rsync_problem, rsync_echo))
            bg_clients = RsyncClients(port, work, random.Random(rng.random()))

            def bg(r: random.Random) -> None:
                if r.random() < 0.5:
                    u = r.choice(RSYNC_USERS)
                    bg_clients.touch(os.path.join(work, "clients", u), r, 2)
                    bg_clients.run(["-a", os.path.join(work, "clients", u) + "/", bg_clients.url(f"backup/{u}/", u)], rsync_pw(u))
                else:
                    dest = tempfile.mkdtemp(prefix="dl-", dir=os.path.join(work, "dl"))
                    bg_clients.run(["-a", bg_clients.url("releases/latest/"), dest + "/"])
                    shutil.rmtree(dest, ignore_errors=True)

            dl = os.path.join(work, "dl", "broken")
            os.makedirs(dl)
            with Background(bg, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("wrong_password"):  # stale passwords in a laptop's cron job
                    for u, pw in [("alice", "alice"), ("bob", rsync_pw("bob")[:-1]), ("deploy", "deploy123"), ("carol", rsync_pw("dave"))]:
                        with br.occurrence(1.5):
                            mod = "www/" if u == "deploy" else f"backup/{u}/"
                            clients.run(["-a", os.path.join(work, "clients", "site") + "/", clients.url(mod, u)], pw)
                with br.phase("unauthorized_user"):  # users not in the module's auth users
                    for u, mod in [("mallory", "backup/mallory/"), ("alice", "www/"), ("deploy", "logs/web1/")]:
                        with br.occurrence(1.5):
                            clients.run(["-a", os.path.join(work, "clients", "site") + "/", clients.url(mod, u)],
                                        rsync_pw(u) if u != "mallory" else "Mallory-1")
                with br.phase("unknown_module"):  # stale scripts using modules that do not exist
                    for mod in ["backups/", "release/", "home/alice/", "www-old/"]:
                        with br.occurrence(1.5):
                            clients.run(["-a", clients.url(mod), dl + "/"])
                with br.phase("host_denied"):  # clients outside the partners' hosts allow
                    for src in ["127.0.0.9", "127.0.0.33", "127.0.0.200"]:
                        with br.occurrence(1.5):
                            clients.run([f"--address={src}", "-a", clients.url("partners/"), dl + "/"])
                with br.phase("read_only_module"):  # writes to the read-only releases, reads from write-only logs
                    for argv, pw in [(["-a", os.path.join(work, "clients", "site") + "/", clients.url("releases/latest/")], None),
                                     (["-a", clients.url("logs/web1/", "loghost"), dl + "/"], rsync_pw("loghost")),
                                     (["-a", "--delete", os.path.join(work, "clients", "site") + "/", clients.url("partners/")], None)]:
                        with br.occurrence(1.5):
                            clients.run(argv, pw)
                with br.phase("missing_path"):  # a module's directory moved away (a disk not mounted)
                    for mod, u in [("partners", None), ("www", "deploy"), ("releases", None)]:
                        path = os.path.join(work, "modules", mod)
                        os.rename(path, path + ".away")
                        with br.occurrence(1.5):
                            if u:
                                clients.run(["-rlt", os.path.join(work, "clients", "site") + "/", clients.url(f"{mod}/", u)], rsync_pw(u))
                            else:
                                clients.run(["-a", clients.url(f"{mod}/"), dl + "/"])
                        os.rename(path + ".away", path)
                        br.between()
                with br.phase("secrets_file_broken"):  # the secrets file readable by others, then missing
                    for how in ["mode", "missing", "mode"]:
                        if how == "mode":
                            os.chmod(secrets, 0o644)
                        else:
                            os.rename(secrets, secrets + ".bak")
                        with br.occurrence(1.5):
                            u = rng.choice(RSYNC_USERS)
                            clients.run(["-a", os.path.join(work, "clients", u) + "/", clients.url(f"backup/{u}/", u)], rsync_pw(u))
                        if how == "mode":
                            os.chmod(secrets, 0o600)
                        else:
                            os.rename(secrets + ".bak", secrets)
                        br.between()
                with br.phase("max_connections"):  # more deploys at once than the web root's max connections 2
                    big = os.path.join(work, "clients", "bigsite")
                    os.makedirs(big, exist_ok=True)
                    with open(os.path.join(big, "video.mp4"), "wb") as f:
                        f.write(rng.randbytes(150_000))
                    for i in range(3):
                        with br.occurrence(1.5):
                            procs = [clients.run(["-rlt", "--bwlimit=50", big + "/", clients.url(f"www/slow{i}-{j}/", "deploy")],
                                                 rsync_pw("deploy"), wait=False) for j in range(2)]
                            time.sleep(0.8)
                            for j in range(2):
                                clients.run(["-rlt", os.path.join(work, "clients", "site") + "/", clients.url("www/", "deploy")],
                                            rsync_pw("deploy"))
                            for p in procs:
                                with contextlib.suppress(subprocess.TimeoutExpired):
                                    p.wait(20)
                        br.between()
                with br.phase("client_killed"):  # downloads and uploads whose client dies mid-transfer
                    for i, direction in enumerate(["down", "up", "down"]):
                        with br.occurrence(8.0):  # the daemon notices the dead client when its socket fails
                            if direction == "down":
                                p = clients.run(["-a", "--bwlimit=300", clients.url("releases/big-image.iso"), dl + f"/img{i}"],
                                                wait=False)
                            else:
                                p = clients.run(["-rlt", "--bwlimit=50", os.path.join(work, "clients", "bigsite") + "/",
                                                 clients.url(f"www/killed{i}/", "deploy")], rsync_pw("deploy"), wait=False)
                            time.sleep(1.5)
                            p.kill()
                            p.wait()
                with br.phase("bad_protocol"):  # garbage and other protocols on the daemon port
                    for payload in [b"GET / HTTP/1.1\r\nHost: backup.example.test\r\n\r\n", b"@RSYNCD: 12.0\nbackup\n", TLS_HELLO,
                                    b"@RSYNCD: 31.0\n" + b"A" * 3000 + b"\n"]:
                        with br.occurrence(1.5):
                            raw_send(port, payload, 1.0)
                with br.phase("bad_config_restart"):  # rsyncd.conf edits with mistakes, the daemon restarted
                    blocker = tcp_blocker()
                    for kw in [{"extra": "log file = /nonexistent/rsync/rsyncd.log"}, {"extra": "[www\n    path = /tmp"}, {"uid": "rsyncuser"},
                               {"listen": blocker.getsockname()[1]}, {"extra": "syslog facility = local9\nbogus option = yes"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(1.0)
                            clients.run([clients.url("")], timeout=10)
                            clients.run(["-a", clients.url("partners/"), dl + "/"], timeout=10)
                        write_conf()
                        sv.stop("rsyncd")
                        sv.forget("rsyncd")
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(os.path.join(work, "rsyncd.pid"))
                        start()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("rsync", "rsync daemon", version_of([rsync, "--version"]),
                  "rsync --daemon log file with transfer logging (`2026/12/05 15:38:39 [5812] connect from localhost (127.0.0.1)`, "
                  "`... rsync on releases/ from localhost (127.0.0.1)`, `... send localhost [127.0.0.1] releases () v1.2/app.tar.gz "
                  "7`, `... sent 292 bytes  received 89 bytes  total size 21`, `... auth failed on module ...`, `... ERROR: ...`)",
                  "rsync --daemon --no-detach (uid nobody; modules: backup with per-user secrets, read-only releases, a web root "
                  "with max connections 2, write-only log shipping, partners with hosts allow / deny) with rsync clients: "
                  "module listings, laptops backing up changed files with --delete, release downloads, CI deploys of the web "
                  "root, hosts shipping logs, partner downloads, restores; a new build published every 15-30s, 2 clean restarts",
                  "wrong_password (4), unauthorized_user (3 users not in auth users), unknown_module (4), host_denied (3 "
                  "clients outside hosts allow), read_only_module (3: writes to read-only modules, a read from a write-only "
                  "one), missing_path (3 module directories moved away), secrets_file_broken (3: other-readable, missing), "
                  "max_connections (3x 4 deploys > max connections 2), client_killed (3 clients killed mid-transfer), "
                  "bad_protocol (4: HTTP, an old protocol, TLS, an overlong module name), bad_config_restart (5: a log file in a "
                  "missing directory, an unclosed section, an unknown uid, the port in use, unknown options)", normal, br.errors)


# --------------------------------------------------------------------------
# ngircd
# --------------------------------------------------------------------------

NGIRCD_CONF = """\
[Global]
	Name = irc.example.test
	AdminInfo1 = Example Chat
	AdminInfo2 = Test Lab
	AdminEMail = ops@example.test
	Info = Example team chat
	Listen = {listen}
	Ports = {port}
	MotdFile = {work}/ngircd.motd
	PidFile = {work}/run/ngircd.pid
	ServerUID = {uid}
	ServerGID = irc
[Limits]
	ConnectRetry = 60
	MaxConnections = 60
	MaxConnectionsIP = 0
	MaxJoins = 10
	MaxNickLength = 12
	PingTimeout = 10
	PongTimeout = 5
[Options]
	DNS = no
	Ident = no
	PAM = no
	OperCanUseMode = yes
[Operator]
	Name = admin
	Password = {oper_pw}
[Operator]
	Name = noc
	Password = Noc-oper-66
[Server]
	Name = hub.example.test
	Host = 127.0.0.1
	MyPassword = Hub-link-out-9
	PeerPassword = Hub-link-in-4
	Passive = yes
[Channel]
	Name = #general
	Topic = Team chat
	Modes = tn
[Channel]
	Name = #ops
	Topic = Operations
	Modes = tn
{extra}"""
IRC_OPER_PW = "Adm-oper-2291"
IRC_CHANNELS = ["#general", "#dev", "#ops", "#random", "#support", "#deploys"]
IRC_LINES = ["good morning", "anyone seen the build logs?", "deploying now", "lgtm", "brb", "lunch?", "the tests are green",
             "can you review my PR", "rebooting db2 in 5", "thanks!", "on it", "which branch?", "ship it"]
IRC_HEAD = re.compile(r"^\[\d+:(\d)\s+\d+\] ")


def ngircd_template(line: str) -> str:
    m = IRC_HEAD.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r'"[^"!]*![^"]*"', '"NICK"', body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def ngircd_problem(line: str) -> bool:
    m = IRC_HEAD.match(line)
    if m and int(m.group(1)) <= 4:
        return True
    return bool(re.search(r"(?i)(bad password|invalid|timeout|refused|rejected|denied|too many|not configured|fail|error|can't)", line))


def ngircd_echo(line: str) -> bool:
    m = IRC_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.match(r'(Accepted connection \d+ from |User "\S+" registered \(connection|User "\S+" unregistered \(connection '
                         r'\d+\): Got QUIT command|Shutting down connection \d+ \(Got QUIT command\)|Connection \d+ with "\S+" closed|'
                         r'User "\S+" changed nick )', body))


class IrcClient:
    """One IRC client connection (python sockets); it answers PINGs and never closes before the server does."""

    def __init__(self, port: int, timeout: float = 10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.buf = b""

    def send(self, *lines: str) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall("".join(x + "\r\n" for x in lines).encode())

    def read(self, secs: float, until: bytes | None = None) -> bool:
        """Reads for secs (answering PINGs); False once the server closed the connection."""
        end = time.time() + secs
        while time.time() < end:
            self.sock.settimeout(max(0.05, min(1.0, end - time.time())))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return False
            if not data:
                return False
            self.buf += data
            *lines, self.buf = self.buf.split(b"\r\n")
            for line in lines:
                if line.startswith(b"PING "):
                    self.send("PONG " + line[5:].decode(errors="replace"))
                if until and until in line:
                    return True
        return True

    def quit(self, msg: str = "bye", wait: float = 30) -> None:
        self.send(f"QUIT :{msg}")
        self.read(wait)
        self.sock.close()

    def wait_closed(self, wait: float = 30) -> None:
        self.read(wait)
        self.sock.close()


class IrcUsers:
    """Team members chatting, an oper doing admin work."""

    def __init__(self, port: int, rng: random.Random, cap: int = 40):
        self.port, self.rng, self.cap = port, rng, cap
        self.active, self.lock, self.serial = 0, threading.Lock(), 0

    def nick(self, r: random.Random) -> str:
        with self.lock:
            self.serial += 1
            return f"{r.choice(USERS + ['kim', 'lee', 'sam'])}{self.serial % 1000}"

    def session(self, r: random.Random) -> None:
        try:
            c = IrcClient(self.port)
        except OSError:
            return
        nick = self.nick(r)
        c.send(f"NICK {nick}", f"USER {nick[:8]} 0 * :{nick.capitalize()} Example")
        if not c.read(10, b" 001 "):
            c.sock.close()
            return
        chans = r.sample(IRC_CHANNELS, r.randint(1, 3))
        c.send(f"JOIN {','.join(chans)}")
        for _ in range(r.randint(1, 4)):
            c.read(r.uniform(0.2, 0.8))
            x = r.random()
            if x < 0.6:
                c.send(f"PRIVMSG {r.choice(chans)} :{r.choice(IRC_LINES)}")
            elif x < 0.7:
                nick = f"{nick[:9]}_{r.randint(0, 9)}"
                c.send(f"NICK {nick}")
            elif x < 0.8:
                c.send(f"WHOIS {self.nick(r)}" if r.random() < 0.3 else "LIST")
            elif x < 0.9:
                c.send(f"PART {r.choice(chans)} :later")
            else:
                c.send(f"TOPIC {r.choice(chans)}")
        c.quit(r.choice(["bye", "Leaving", "Client exiting", "going home"]))

    def oper(self, r: random.Random) -> None:
        try:
            c = IrcClient(self.port)
        except OSError:
            return
        nick = f"opadmin{r.randint(1, 99)}"
        c.send(f"NICK {nick}", "USER admin 0 * :Chat Admin")
        if c.read(10, b" 001 "):
            c.send(f"OPER admin {IRC_OPER_PW}")
            c.read(1.0)
            c.send(r.choice(["REHASH", "WALLOPS :maintenance tonight at 22:00", "MODE #general +t", "STATS u", "LUSERS"]))
            c.read(1.0)
        c.quit("done")

    def spawn(self, fn) -> None:
        with self.lock:
            if self.active >= self.cap:
                return
            self.active += 1
        r = random.Random(self.rng.random())

        def go() -> None:
            try:
                fn(r)
            finally:
                with self.lock:
                    self.active -= 1
        threading.Thread(target=go, daemon=True).start()

    def drain(self, secs: float = 40) -> None:
        end = time.time() + secs
        while self.active and time.time() < end:
            time.sleep(0.2)


def source_ngircd(args) -> Source:
    ngircd = need("/usr/sbin/ngircd", "ngircd")
    rng = random.Random(f"{args.seed}-ngircd")
    with tempfile.TemporaryDirectory(prefix="onb8-ngircd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        os.makedirs(os.path.join(work, "run"))
        write_atomic(os.path.join(work, "ngircd.motd"), "Welcome to the Example team chat.\nBe nice.\n")
        port = free_port()
        conf, logp = os.path.join(work, "ngircd.conf"), os.path.join(work, "ngircd.log")

        def write_conf(extra: str = "", listen: str = "127.0.0.1", ports: str | None = None, uid: str = "irc") -> None:
            write_atomic(conf, NGIRCD_CONF.format(work=work, port=ports or port, listen=listen, uid=uid, oper_pw=IRC_OPER_PW,
                                                  extra=extra))
            os.chmod(conf, 0o644)

        write_conf()
        chown_tree(work, "irc")

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("ngircd", [ngircd, "-n", "-p", "-f", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def stop() -> None:
            users.drain(30)
            sv.stop("ngircd", signal.SIGTERM)

        users = IrcUsers(port, rng)
        start()
        log = FileLog(logp)
        say(f"ngircd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "hup": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 4)):
                users.spawn(users.oper if rng.random() < 0.03 else users.session)
            time.sleep(rng.uniform(0.1, 0.25))
            if time.time() - state["hup"] > rng.uniform(20, 40):
                sv.procs["ngircd"].send_signal(signal.SIGHUP)
                state["hup"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "ngircd", round_fn)
            users.drain()
            templates = {ngircd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, ngircd_template, ngircd_problem, ngircd_echo))
            bg_users = IrcUsers(port, random.Random(rng.random()), cap=6)

            def registered(nick: str) -> IrcClient | None:
                try:
                    c = IrcClient(port)
                except OSError:
                    return None
                c.send(f"NICK {nick}", f"USER {nick[:8]} 0 * :{nick}")
                c.read(10, b" 001 ")
                return c

            with Background(lambda r: bg_users.spawn(bg_users.session), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("oper_bad_password"):  # OPER with wrong passwords / unknown operator names
                    for name, pw in [("admin", "admin"), ("admin", IRC_OPER_PW.lower()), ("root", "toor"), ("noc", "Noc-oper-65")]:
                        with br.occurrence(1.5):
                            c = registered(f"eve{rng.randint(10, 99)}")
                            if c:
                                c.send(f"OPER {name} {pw}")
                                c.read(1.0)
                                c.quit("oops")
                with br.phase("server_link_rejected"):  # servers linking with bad passwords or not configured here
                    for pw, name in [("wrong-pass", "hub.example.test"), ("Hub-link-out-9", "hub.example.test"),
                                     ("Hub-link-in-4", "leaf.example.test"), ("x", "irc.example.test")]:
                        with br.occurrence(1.5), contextlib.suppress(OSError):
                            c = IrcClient(port)
                            c.send(f"PASS {pw} 0210-IRC+ ngircd|26.1:CHLMSXZ PZ", f"SERVER {name} 1 :Example hub")
                            c.wait_closed(15)
                with br.phase("ping_timeout"):  # clients that stop answering (a laptop suspended)
                    for i in range(3):
                        with br.occurrence(1.5):
                            c = registered(f"laptop{rng.randint(10, 99)}")
                            if c:
                                c.send(f"JOIN {rng.choice(IRC_CHANNELS)}")
                                end = time.time() + 30
                                with contextlib.suppress(OSError):
                                    while time.time() < end:  # never answers the PING
                                        c.sock.settimeout(1)
                                        with contextlib.suppress(TimeoutError):
                                            if not c.sock.recv(65536):
                                                break
                                c.sock.close()
                with br.phase("unregistered_garbage"):  # connections that never register: garbage, TLS, nothing
                    for payload in [b"GET / HTTP/1.1\r\nHost: irc.example.test\r\n\r\n", TLS_HELLO, b"", b"\x00\xff" * 200 + b"\r\n",
                                    b"A" * 3000]:
                        with br.occurrence(1.5), contextlib.suppress(OSError):
                            c = IrcClient(port)
                            if payload:
                                c.sock.sendall(payload)
                            c.wait_closed(30)
                with br.phase("too_many_connections"):  # a bouncer gone wild: more connections than MaxConnections 60
                    for i in range(3):
                        with br.occurrence(2.0):
                            socks = []
                            for _ in range(66):
                                with contextlib.suppress(OSError):
                                    socks.append(IrcClient(port, 3))
                            time.sleep(1.0)
                            for c in socks:
                                c.sock.close()
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # ngircd.conf edits with mistakes, ngircd restarted
                    blocker = tcp_blocker()
                    for kw in [{"ports": str(blocker.getsockname()[1])}, {"uid": "ircd-nosuch"}, {"listen": "127.0.0.300"},
                               {"extra": "[Limits]\n\tMaxNickLength = 1000\n\tPingTimeout = soon\n"},
                               {"extra": "[Operator]\n\tName = admin\n[Chanel]\n\tName = #x\n"}]:
                        bg_users.drain(30)
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(1.5)
                        write_conf()
                        sv.stop("ngircd")
                        sv.forget("ngircd")
                        start()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
            bg_users.drain()
        finally:
            stop()
    return Source("ngircd", "ngIRCd", version_of([ngircd, "--version"]),
                  "ngircd -n on stderr (`[pid:6   12] Accepted connection 8 from \"127.0.0.1:55114\" on socket 6.`, `[pid:5   12] "
                  "User \"alice!~alice@127.0.0.1\" registered (connection 8).`, `[pid:3   40] ...` errors; in the bracket the pid, "
                  "the syslog level and the seconds since the start)",
                  "ngircd (as irc; 2 operators, a passive peer server, predefined channels; MaxConnections 60, PingTimeout 10, "
                  "PongTimeout 5) with python IRC clients (up to 40 at once): users registering, joining 1-3 channels, "
                  "chatting, changing nicks, WHOIS / LIST / TOPIC, parting and quitting; an oper rehashing, sending WALLOPS, "
                  "setting modes; SIGHUP rehashes every 20-40s, 2 clean restarts",
                  "oper_bad_password (4: wrong passwords, an unknown operator), server_link_rejected (4 servers with bad "
                  "passwords or not configured), ping_timeout (3 clients not answering PING), unregistered_garbage (5: HTTP, "
                  "TLS, nothing, binary, an endless line), too_many_connections (3x 66 connections > MaxConnections 60), "
                  "bad_config_restart (5: the port in use, an unknown user, a bad address, bad limits, an unknown section)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# etcd
# --------------------------------------------------------------------------

ETCD_USERS = {"root": "Etcd-root-8812", "app": "App-cfg-5521", "sched": "Sched-jobs-7734", "monitor": "Mon-etcd-2201"}
ETCD_MASK_KEYS = ("user", "token", "time", "took", "id", "path", "dir", "url", "hash", "size", "count", "revision", "index",
                  "term", "remote", "address", "target", "key", "name", "member", "local", "peer", "file", "ttl", "lease",
                  "request", "response")


def etcd_template(line: str) -> str:
    try:
        d = json.loads(line)
    except ValueError:
        d = None
    if not isinstance(d, dict):
        return mask_names(re.sub(r"/\S+", "PATH", line))
    parts = [str(d.get("level")), mask_names(str(d.get("msg")))]
    for k in sorted(d):
        if k in ("level", "ts", "msg", "caller"):
            continue
        v = str(d[k])
        if k == "response type":
            parts.append(f"{k}={v}")
        elif any(x in k for x in ETCD_MASK_KEYS):
            parts.append(f"{k}=V")
        else:
            parts.append(f"{k}={mask_names(re.sub(r'/[^ ,]+', 'PATH', v))}")
    return " ".join(parts)


def etcd_problem(line: str) -> bool:
    try:
        d = json.loads(line)
    except ValueError:
        d = None
    if not isinstance(d, dict):
        return bool(re.search(r"(?i)(error|invalid|unknown|fail|panic|fatal|cannot|no such|denied)", line))
    msg = str(d.get("msg", ""))
    return d.get("level") in ("warn", "error", "dpanic", "panic", "fatal") and not msg.startswith("[transport]") \
        and msg != "simple token is not cryptographically signed"


def etcd_echo(line: str) -> bool:
    try:
        d = json.loads(line)
    except ValueError:
        return False
    if not isinstance(d, dict):
        return False
    msg = str(d.get("msg", ""))
    return msg in ("request stats", "authenticated a user") or (msg.startswith("[transport]") and d.get("level") == "info")


def b64(s: str | bytes) -> str:
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


class EtcdApp:
    """An app talking to etcd's HTTP/JSON gateway with its own user (a token reused until it is refused)."""

    def __init__(self, port: int, user: str, rng: random.Random, pw: str | None = None):
        self.port, self.user, self.rng, self.pw = port, user, rng, pw or ETCD_USERS[user]
        self.token, self.conn = None, None
        self.leases: list[str] = []

    def call(self, path: str, body: dict, auth: bool = True, timeout: float = 5) -> tuple[int, dict]:
        if auth and self.token is None:
            st, out = self.call("/v3/auth/authenticate", {"name": self.user, "password": self.pw}, auth=False, timeout=timeout)
            self.token = out.get("token") if st == 200 else None
        headers = {"Content-Type": "application/json"}
        if auth and self.token:
            headers["Authorization"] = self.token
        for _ in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
                self.conn.request("POST", path, json.dumps(body), headers)
                resp = self.conn.getresponse()
                data = resp.read()
                with contextlib.suppress(ValueError):
                    out = json.loads(data)
                    if resp.status in (401,) or "invalid auth token" in str(out.get("error", "")):
                        self.token = None
                    return resp.status, out if isinstance(out, dict) else {}
                return resp.status, {}
            except (OSError, http.client.HTTPException):
                self.close()
        return 0, {}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def put(self, key: str, value: str, lease: str | None = None) -> int:
        return self.call("/v3/kv/put", {"key": b64(key), "value": b64(value), **({"lease": lease} if lease else {})})[0]

    def get(self, key: str, prefix: bool = False) -> int:
        body = {"key": b64(key)}
        if prefix:
            body["range_end"] = b64(key[:-1] + chr(ord(key[-1]) + 1))
        return self.call("/v3/kv/range", body)[0]

    def normal(self, r: random.Random) -> None:
        if self.user == "app":  # the config service: reads, writes, transactions
            x = r.random()
            key = f"/app/{r.choice(['web', 'api', 'worker', 'billing'])}/{r.choice(['replicas', 'feature-' + r.choice(WORDS), 'timeout', 'version'])}"
            if x < 0.45:
                self.get(key)
            elif x < 0.6:
                self.get(f"/app/{r.choice(['web', 'api', 'worker', 'billing'])}/", prefix=True)
            elif x < 0.9:
                self.put(key, str(r.randint(1, 500)) if r.random() < 0.7 else json.dumps({"enabled": r.random() < 0.5}))
            elif x < 0.97:
                self.call("/v3/kv/txn", {"compare": [{"key": b64(key), "target": "VERSION", "result": "GREATER", "version": "0"}],
                                         "success": [{"request_put": {"key": b64(key), "value": b64(str(r.randint(1, 9)))}}],
                                         "failure": [{"request_put": {"key": b64(key), "value": b64("1")}}]})
            else:
                self.call("/v3/kv/deleterange", {"key": b64(key)})
        else:  # the scheduler: leases for its workers, keep-alives, revocations
            x = r.random()
            if x < 0.25 or not self.leases:
                st, out = self.call("/v3/lease/grant", {"TTL": r.choice([10, 30, 60])})
                if st == 200 and out.get("ID"):
                    self.leases.append(out["ID"])
                    self.put(f"/jobs/workers/{r.choice(WORDS)}-{r.randint(1, 20)}", "alive", out["ID"])
            elif x < 0.65:
                self.call("/v3/lease/keepalive", {"ID": r.choice(self.leases)})
            elif x < 0.8:
                self.get("/jobs/", prefix=True)
            elif x < 0.9:
                self.put(f"/jobs/queue/{r.getrandbits(24):06x}", json.dumps({"task": r.choice(WORDS), "prio": r.randint(1, 5)}))
            else:
                lid = self.leases.pop(0)
                self.call("/v3/lease/revoke", {"ID": lid})


def source_etcd(args) -> Source:
    etcd = need("/usr/bin/etcd", "etcd-server")
    etcdctl = need("etcdctl", "etcd-client")
    rng = random.Random(f"{args.seed}-etcd")
    with tempfile.TemporaryDirectory(prefix="onb8-etcd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        cport, pport = free_port(), free_port()
        data, logp = os.path.join(work, "data"), os.path.join(work, "etcd.log")

        def argv(extra: list[str] | None = None, data_dir: str = data, c: int | None = None, p: int | None = None) -> list[str]:
            c, p = c or cport, p or pport
            return [etcd, "--name", "node1", "--data-dir", data_dir, "--listen-client-urls", f"http://127.0.0.1:{c}",
                    "--advertise-client-urls", f"http://127.0.0.1:{c}", "--listen-peer-urls", f"http://127.0.0.1:{p}",
                    "--initial-advertise-peer-urls", f"http://127.0.0.1:{p}", "--initial-cluster", f"node1=http://127.0.0.1:{p}",
                    "--initial-cluster-token", "onb8-cluster", "--logger", "zap", "--log-outputs", "stderr", "--log-level", "debug",
                    "--max-request-bytes", "262144", "--snapshot-count", "5000", *(extra or [])]

        def start(wait: bool = True, extra: list[str] | None = None, name: str = "etcd", **kw) -> None:
            with open(logp, "ab") as logf:
                sv.start(name, argv(extra, **kw), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(cport)
                time.sleep(1.0)

        def stop() -> None:
            sv.stop("etcd", signal.SIGTERM, 20)

        def ctl(*cmd: str, user: str | None = "root", timeout: float = 20, stdin: bytes | None = None) -> int:
            a = [etcdctl, "--endpoints", f"127.0.0.1:{cport}", "--dial-timeout", "3s", "--command-timeout", "8s"]
            if user:
                a += ["--user", f"{user}:{ETCD_USERS.get(user, 'x')}"]
            return run_quiet(a + list(cmd), timeout, stdin)

        start()
        os.environ["ETCDCTL_API"] = "3"
        for u, pw in ETCD_USERS.items():  # users, roles and auth (before the normal phase's traffic)
            ctl("user", "add", f"{u}:{pw}", user=None)
        for role, perms in [("root", []), ("app", [("readwrite", "/app/"), ("read", "/jobs/")]),
                            ("sched", [("readwrite", "/jobs/")]), ("monitor", [("read", "/")])]:
            ctl("role", "add", role, user=None)
            for perm, prefix in perms:
                ctl("role", "grant-permission", role, "--prefix=true", perm, prefix, user=None)
            ctl("user", "grant-role", role, role, user=None)
        ctl("auth", "enable", user=None)
        apps = [EtcdApp(cport, "app", random.Random(rng.random())) for _ in range(3)] + \
            [EtcdApp(cport, "sched", random.Random(rng.random())) for _ in range(2)]
        log = FileLog(logp)
        say(f"etcd on 127.0.0.1:{cport} (peer {pport}); normal phase...")
        state = {"restarts": 0, "compact": time.time()}

        def ops(r: random.Random) -> None:
            x = r.random()
            if x < 0.3:
                ctl(*r.choice([("member", "list"), ("endpoint", "status"), ("endpoint", "health"), ("alarm", "list")]),
                    user=r.choice(["root", "monitor"]) if x < 0.15 else "root")
            elif x < 0.55:
                ctl("get", "--prefix", r.choice(["/app/", "/jobs/", "/app/web/"]), "--keys-only", user="monitor")
            elif x < 0.75:
                ctl("watch", "--prefix", "/app/", user="app", timeout=r.uniform(1, 3))  # a watcher that comes and goes
            elif x < 0.9:
                ctl("snapshot", "save", os.path.join(work, "snapshot.db"), user="root", timeout=30)
            else:
                ctl("defrag", user="root", timeout=30)

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(4, 16)):
                rng.choice(apps).normal(rng)
            if rng.random() < 0.12:
                ops(rng)
            if time.time() - state["compact"] > rng.uniform(15, 30):  # the periodic compaction
                st, out = apps[0].call("/v3/kv/range", {"key": b64("/app/"), "range_end": b64("/app0"), "limit": 1})
                rev = int(out.get("header", {}).get("revision", 0)) if st == 200 else 0
                if rev > 50:
                    ctl("compact", str(rev - 20), timeout=30)
                state["compact"] = time.time()
            time.sleep(rng.uniform(0.02, 0.1))
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "etcd", round_fn)
            templates = {etcd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, etcd_template, etcd_problem, etcd_echo))
            bg_apps = [EtcdApp(cport, "app", random.Random(rng.random())), EtcdApp(cport, "sched", random.Random(rng.random()))]

            def bg(r: random.Random) -> None:
                for _ in range(r.randint(1, 4)):
                    r.choice(bg_apps).normal(r)

            def restart_clean() -> None:
                sv.stop("etcd", signal.SIGTERM, 20)
                sv.forget("etcd")
                start()
                time.sleep(0.5)

            with Background(bg, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("auth_failure"):  # wrong passwords, users that do not exist
                    for user, pw in [("app", "app"), ("root", "root"), ("deployer", "Deploy-1"), ("sched", ETCD_USERS["app"])]:
                        with br.occurrence(1.5):
                            EtcdApp(cport, user if user in ETCD_USERS else "app", random.Random(1), pw=pw).call(
                                "/v3/auth/authenticate", {"name": user, "password": pw}, auth=False)
                with br.phase("permission_denied"):  # writes outside the user's roles
                    for user, key in [("app", "/jobs/queue/manual"), ("sched", "/app/web/replicas"), ("monitor", "/app/api/version")]:
                        with br.occurrence(1.5):
                            EtcdApp(cport, user, random.Random(2)).put(key, "42")
                with br.phase("invalid_token"):  # tokens that are stale (the server restarted) or forged
                    for tok in ["MoQqYRCFGKALVzlg.14", "abc", "eyJhbGciOiJSUzI1NiJ9.e30.sig"]:
                        with br.occurrence(1.5):
                            a = EtcdApp(cport, "app", random.Random(3))
                            a.token = tok
                            a.put("/app/web/replicas", "3")
                with br.phase("server_frozen"):  # etcd stopped (SIGSTOP) while clients keep asking
                    for secs in [4, 6, 5]:
                        with br.occurrence(2.0):
                            proc = sv.procs["etcd"]
                            proc.send_signal(signal.SIGSTOP)
                            threads = [threading.Thread(target=lambda: EtcdApp(cport, "app", random.Random(4)).put("/app/web/x", "1")),
                                       threading.Thread(target=ctl, args=("put", "/app/web/frozen", "1"), kwargs={"user": "app", "timeout": secs + 4})]
                            for t in threads:
                                t.start()
                            time.sleep(secs)
                            proc.send_signal(signal.SIGCONT)
                            for t in threads:
                                t.join(15)
                        time.sleep(1)
                        br.between()
                with br.phase("quota_exceeded"):  # restarted with a --quota-backend-bytes smaller than the data
                    for i in range(3):
                        sv.stop("etcd", signal.SIGTERM, 20)
                        sv.forget("etcd")
                        br.between()
                        with br.occurrence(2.0):
                            start(extra=["--quota-backend-bytes", str(rng.choice([65536, 131072, 32768]))])
                            for j in range(3):
                                apps[0].put(f"/app/worker/batch-{j}", "x" * 2000)
                        restart_clean()
                        ctl("alarm", "disarm", user="root")
                        br.between()
                with br.phase("data_dir_broken"):  # the data dir corrupted, or locked by another etcd, at a restart
                    backup = os.path.join(work, "data.backup")
                    for how in ["truncate_db", "wal_garbage", "second_instance", "no_wal"]:
                        if how == "second_instance":
                            with br.occurrence(2.0):
                                start(wait=False, name="etcd2", c=free_port(), p=free_port())
                                time.sleep(4)
                            sv.stop("etcd2", signal.SIGKILL)
                            sv.forget("etcd2")
                            br.between()
                            continue
                        sv.stop("etcd", signal.SIGTERM, 20)
                        sv.forget("etcd")
                        shutil.rmtree(backup, ignore_errors=True)
                        shutil.copytree(data, backup)
                        br.between()
                        member = os.path.join(data, "member")
                        if how == "truncate_db":
                            with open(os.path.join(member, "snap", "db"), "r+b") as f:
                                f.truncate(4096)
                        elif how == "wal_garbage":
                            wal = max(x for x in os.listdir(os.path.join(member, "wal")) if x.endswith(".wal"))
                            with open(os.path.join(member, "wal", wal), "r+b") as f:
                                f.seek(300)
                                f.write(rng.randbytes(4096))
                        else:
                            shutil.rmtree(os.path.join(member, "wal"))
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(4)
                        sv.stop("etcd", signal.SIGKILL)
                        sv.forget("etcd")
                        shutil.rmtree(data)
                        shutil.copytree(backup, data)
                        start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_flag_restart"):  # etcd restarted with broken flags
                    blocker = tcp_blocker()
                    for extra, kw in [(["--max-txn-ops", "lots"], {}), (["--listen-metrics-urls", "127.0.0.1:2381"], {}),
                                      (["--initial-cluster-state", "existing", "--name", "node2"], {}),
                                      ([], {"c": blocker.getsockname()[1]}),
                                      (["--log-outputs", "/nonexistent/etcd/etcd.log"], {}),
                                      (["--auto-compaction-retention", "1x", "--auto-compaction-mode", "periodic"], {})]:
                        sv.stop("etcd", signal.SIGTERM, 20)
                        sv.forget("etcd")
                        br.between()
                        with br.occurrence(2.0):
                            start(wait=False, extra=extra, **kw)
                            time.sleep(3)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            with contextlib.suppress(Exception):
                for proc in sv.procs.values():
                    proc.send_signal(signal.SIGCONT)
            stop()
            os.environ.pop("ETCDCTL_API", None)
    return Source("etcd", "etcd", version_of([etcd, "--version"]),
                  "etcd --logger zap --log-outputs stderr --log-level debug, JSON lines (`{\"level\":\"debug\",\"ts\":\"2026-12-05T15:"
                  "36:52.101Z\",\"caller\":\"v3rpc/interceptor.go:181\",\"msg\":\"request stats\",...,\"response type\":\"/etcdserverpb."
                  "KV/Put\",...}`, `\"msg\":\"authenticated a user\"`, compaction / defrag / snapshot / raft / start-up lines, "
                  "warn / error lines)",
                  "etcd (single member, auth enabled: root, app with readwrite /app/ + read /jobs/, sched with readwrite /jobs/, "
                  "monitor with read /) with python apps on the HTTP/JSON gateway (3 config services: gets, prefix ranges, "
                  "puts, transactions, deletes; 2 schedulers: leases with keys, keep-alives, revocations) and etcdctl (member "
                  "list, endpoint status / health, alarm list, watches of 1-3s, snapshots, defrags, compactions every 15-30s); "
                  "2 clean restarts",
                  "auth_failure (4: wrong passwords, an unknown user), permission_denied (3 writes outside the user's roles), "
                  "invalid_token (3 stale / forged tokens), server_frozen (3x etcd SIGSTOPped 4-6s during requests), quota_exceeded (3x restarted "
                  "with a tiny --quota-backend-bytes, then puts), data_dir_broken (4: a truncated db, garbage in the WAL, a "
                  "second etcd on the same data dir, the WAL removed), bad_flag_restart (6: a non-numeric flag, a URL without "
                  "scheme, an unknown member of the cluster, the client port in use, a log file in a missing directory, a bad "
                  "auto-compaction retention)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_eighth", SOURCES, globals(), seed=8888, min_normal_s=60,
               root_for="programs dropping to their own users")


if __name__ == "__main__":
    sys.exit(main())
