#!/usr/bin/env python3
"""Generate the held-out onboarding corpus: real log lines written by real programs, grouped into events.

A third corpus built like benchmarks/onboarding_data.py and benchmarks/onboarding_blind_data.py (same
layout, same separation rule, their helpers imported) from five programs neither of them uses.  Every
line is the verbatim output of a program started by this script on this machine; the script only
*drives* the programs (clients it runs) and *breaks* them (bad reloads, killed dependencies, full
disks, garbage on the wire, SIGKILL/SIGSEGV...).  It never writes a log line itself.

New compared with the older corpora: every errors.jsonl line carries an "event" id (unique within a
source) grouping the lines written by ONE occurrence of a breakage: one bad request or connection,
one failed login, one bad reload, one outage of a dependency (the state-change lines and the
requests failing during it), one crash with its report.  The breakages are made one occurrence at a
time, each in its own time window followed by a pause for the program to finish logging about it;
what the program logs between two windows (recovery, restarting it) belongs to no event and is not
kept.  Normal background traffic keeps running during the breakages and is filtered out by the rule
below.

Sources (Debian 12 packages: apt-get install -y --no-install-recommends redis-server redis-tools
haproxy mosquitto mosquitto-clients bind9 bind9-dnsutils vsftpd; also util-linux (unshare, nsenter,
setpriv) and python3; nothing is installed by this script):

  redis     redis-server 7.0 as user redis, `logfile ""` (its stdout+stderr, the native
            `pid:role dd Mon yyyy hh:mm:ss.mmm <level> message` format), `loglevel verbose` (at notice
            level it logs ~1 line per background save).  Data dir on a 48 MB tmpfs in a private mount
            namespace.  Normal: persistent app connections (sessions, caches, counters, leaderboards,
            queues, hashes, pipelines, MULTI/EXEC, pub/sub), short-lived cron/CLI connections, RDB
            saves (save rule + BGSAVE), AOF rewrites, CONFIG REWRITE, a replica (second redis, not
            logged) attaching / detaching (full and partial resyncs), two clean restarts.
            Broken: garbage on the port (protocol errors; HTTP: cross-protocol attack detection,
            which redis logs once a minute), clients over their output-buffer limit, the fork child
            of a save / AOF rewrite SIGKILLed, the tmpfs filled up (ENOSPC), the data dir made
            read-only (EACCES), pointed at a master that is down (REPLICAOF), SIGSEGV (crash report
            with stack trace, registers, INFO: one event of ~350 lines), a SIGKILL + torn AOF tail
            on restart, a bad config file on restart.
  haproxy   HAProxy 2.6 in master-worker mode (-W), its stdout+stderr: `log stdout format raw` with
            `option httplog` (+ captured User-Agent) and `option log-health-checks`, plus the
            master's/workers' `[NOTICE]/[WARNING]/[ALERT] (pid) : ...` messages.  Normal: 2
            frontends, 5 backends of local python HTTP servers (shop pages x3, API x2, auth, static,
            reports), browsers / apps / bots / a partner client with varied paths, methods, statuses
            (incl. some 404/401/304/301), health checks, config reloads (SIGUSR2) changing weights and
            servers, one clean restart.
            Broken: a web server stopped (health checks DOWN, 503s), the only auth server stopped (no
            server available), the API answering 500, the API too slow (server timeout, 504),
            clients sending garbage / TLS / SSH / oversized requests to the HTTP port (400),
            clients stalling mid-request (408), a maxconn-1 backend swamped (queue timeout 503), bad
            config reloads, the worker SIGKILLed (the master exits; restarted).
  mosquitto mosquitto 2.0 (drops to user mosquitto), `log_dest stderr`, `log_type all` (the default
            logs only connects/disconnects), `epoch: message` lines.  Normal: mosquitto_pub /
            mosquitto_sub clients (sensors, dashboards, backends; QoS 0/1/2, retained messages,
            wills, clean and persistent sessions) with a password file and ACLs, a bridge to a second
            broker (not logged), persistence autosaves, config reloads (SIGHUP), one clean restart.
            Broken: wrong passwords / unknown users, publishes the ACL denies, garbage / HTTP / TLS
            / bad CONNECTs on the MQTT port, a frozen (SIGSTOP) client past its keepalive, a client
            id used twice, the bridged broker SIGKILLed, publishes over max_packet_size, the
            persistence dir chowned to root when saving (SIGUSR1), a damaged persistence file at
            restart, a bad config on restart.
  bind9     BIND named 9.18 (-f -u bind), a file channel with print-time/print-category/
            print-severity (`dd-Mon-yyyy hh:mm:ss.mmm category: severity: message`), querylog on.
            Normal: authoritative zones (example.test, shop.test, a reverse zone), a dynamic zone
            updated with nsupdate + TSIG, a secondary zone transferred from a second named (not
            logged) that gets updates and NOTIFYs, recursion forwarded to that named, dig queries of
            many names/types (some NXDOMAIN), rndc reload/reconfig/flush/status/zonestatus, one clean
            restart.
            Broken: zone files with errors reloaded, a bad named.conf reconfigured, the primary /
            forwarder SIGKILLed (refresh failures, failed forwarded queries), AXFR/IXFR from a host not
            allowed, dynamic updates with a stale, foreign or no TSIG key, rndc with a wrong key,
            recursive queries from an address outside the recursion ACL, the dynamic zone's
            directory made read-only (journal).  (Malformed UDP packets were tried too: named logs
            nothing about them at severity info, so that breakage is not used.)
  vsftpd    vsftpd 3.0 (standalone, listen=YES, background=NO) with log_ftp_protocol=YES and
            dual_log_enable=YES: its vsftpd_log_file (`Ddd Mmm dd hh:mm:ss yyyy [pid N] [user] ...`,
            plus its stderr).  It runs in a private mount namespace where /etc/passwd, /etc/shadow and
            /etc/group are bind-mounted copies holding the FTP users (nothing under /etc is touched)
            and the upload area is a small tmpfs.  Normal: python ftplib clients logging in, listing,
            uploading, downloading, renaming, deleting, making dirs (a few downloads of missing files).
            Broken: wrong passwords / unknown users, a user on the deny list, uploads to a dir chowned
            to root, uploads to a full disk, garbage / HTTP / TLS / unknown commands, clients idle past
            the session timeout, too many connections from one address, PASV + RETR without a data
            connection, more connections than max_clients from many addresses.  (Bad config files on
            restart and a user whose home directory was removed were tried too: vsftpd logs nothing
            about them (it exits with status 2 / answers the client only), so they are not used.)

Layout written under --out (default benchmarks/data/onboarding_heldout):

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

  * its level marks it as a problem (redis "#" warnings, HAProxy [WARNING]/[ALERT]
    and HTTP status >= 400 in its access lines, BIND warning/error/critical,
    mosquitto "Error"/"Warning" messages, vsftpd FAIL lines and FTP replies
    >= 400), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; redis client descriptions masked too) never
    occurred in the normal phase,

minus lines that merely echo the driving workload (redis "Accepted"/"Client
closed connection", HAProxy access lines with status < 400, mosquitto
"New connection"/"New client connected"/"Received ..."/will/subscription
lines, BIND query-log lines, vsftpd "CONNECT"/"FTP command:" lines).  Lines of
an entry that spans several lines (redis crash reports and fatal config errors)
are kept with their entry.  An occurrence of which no line is kept makes no
event.

Usage:
    python benchmarks/onboarding_heldout_data.py --out benchmarks/data/onboarding_heldout \
        [--sources redis,haproxy,mosquitto,bind9,vsftpd] [--lines 6000] [--seed 4242] \
        [--min-normal-seconds 120]

Needs root (private mount namespaces with tmpfs, programs dropping to their own users).  Programs
run on free 127.0.0.1 ports from temp dirs and are always stopped (process groups killed), also on
failure; nothing under /etc or any system service is touched.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import ftplib
import http.client
import io
import json
import os
import pwd
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import (HARD_CAP, FileLog, MissingProgram, Services, arguments, free_port,  # noqa: E402
                             need, say, version_of, wait_port, write_atomic)
from onboarding_blind_data import ModeServer, QuietHandler, mask_all  # noqa: E402

SOURCES = ["redis", "haproxy", "mosquitto", "bind9", "vsftpd"]


# --------------------------------------------------------------------------
# events: breakage phases made of occurrences
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Source:
    name: str
    program: str
    version: str
    format_hint: str
    how_normal: str
    how_errors: str
    normal: list
    errors: list  # (line, kind, event)


def entry_selector(templates: set, template, problem, echo=lambda line: False, head=lambda line: True):
    """Selector: entries (a head line + continuation lines) kept when problem-level or of a new template
    and not an echo of the workload; a continuation line goes with its entry (or is kept when itself new)."""
    def select(lines):
        kept, keep = [], False
        for line in lines:
            if head(line):
                keep = not echo(line) and (problem(line) or template(line) not in templates)
            else:
                keep = keep or template(line) not in templates
            if keep:
                kept.append(line)
        return kept
    return select


class Breaker:
    """Runs the breakage phases of one source; each occurrence's kept lines form one event."""

    def __init__(self, log: FileLog, select):
        self.log, self.select = log, select
        self.errors: list[tuple[str, str, int]] = []
        self.kind, self.next_event, self.tried = None, 1, {}

    @contextlib.contextmanager
    def phase(self, kind: str):
        self.kind = kind
        self.tried[kind] = [0, 0, 0]  # occurrences, events with lines, lines
        say(f"  breaking: {kind}")
        try:
            yield
        finally:
            t = self.tried[kind]
            say(f"    {kind}: {t[1]}/{t[0]} occurrences logged something, {t[2]} lines")

    @contextlib.contextmanager
    def occurrence(self, settle: float = 1.5):
        self.log.read_new()  # whatever was logged since the last window belongs to no breakage
        try:
            yield
        finally:
            time.sleep(settle)
            kept = self.select(self.log.read_new())
            t = self.tried[self.kind]
            t[0] += 1
            if kept:
                t[1] += 1
                t[2] += len(kept)
                self.errors += [(line, self.kind, self.next_event) for line in kept]
                self.next_event += 1

    def between(self) -> None:
        """Drop what was logged outside the windows (recovery after an occurrence)."""
        self.log.read_new()


class Background:
    """Normal traffic that keeps running (slower) during the breakages: fn(rng) is called in a loop."""

    def __init__(self, fn, rng: random.Random, pause=(0.3, 1.0)):
        self.fn, self.rng, self.pause = fn, rng, pause
        self.stop_ev, self.thread = threading.Event(), None

    def __enter__(self):
        def loop():
            while not self.stop_ev.is_set():
                with contextlib.suppress(Exception):
                    self.fn(self.rng)
                self.stop_ev.wait(self.rng.uniform(*self.pause))
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.thread.join(30)


def kill_group(proc: subprocess.Popen | None, sig: int = signal.SIGKILL) -> None:
    if proc is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


class Group(Services):
    """Services started in their own sessions; on exit (also on failure) whole process groups are killed."""

    def start(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("start_new_session", True)
        return super().start(name, argv, **kw)

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        proc = self.procs.get(name)
        super().stop(name, sig, timeout)
        kill_group(proc)

    def forget(self, name: str) -> None:
        """The process died by itself (crash, killed): reap it and its group."""
        proc = self.procs.pop(name, None)
        if proc is not None:
            kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)


class Namespace:
    """A private mount namespace (held by a sleeping process) with tmpfs mounts and bind mounts."""

    def __init__(self, sv: Group, name: str, setup: str):
        self.proc = sv.start(name, [need("unshare", "util-linux"), "--mount", "--propagation", "private",
                                    "sh", "-c", setup + " && exec sleep 100000"])
        for _ in range(50):
            time.sleep(0.1)
            if self.proc.poll() is not None:
                raise RuntimeError(f"could not set up the mount namespace: {setup}")
            with open(f"/proc/{self.proc.pid}/cmdline", "rb") as f:
                if f.read().startswith(b"sleep"):
                    return
        raise RuntimeError("mount namespace setup timed out")

    def argv(self, argv: list[str]) -> list[str]:
        return [need("nsenter", "util-linux"), "-t", str(self.proc.pid), "--mount", "--"] + argv

    def run(self, cmd: str, timeout: float = 60) -> None:
        subprocess.run(self.argv(["sh", "-c", cmd]), timeout=timeout, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def as_user(user: str, argv: list[str]) -> list[str]:
    return [need("setpriv", "util-linux"), f"--reuid={user}", f"--regid={user}", "--init-groups"] + argv


def raw_send(port: int, data: bytes, wait: float = 0.3, read: bool = True, udp: bool = False) -> bytes:
    out = b""
    with contextlib.suppress(OSError):
        if udp:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(1)
                s.sendto(data, ("127.0.0.1", port))
                with contextlib.suppress(OSError):
                    out = s.recv(4096)
            return out
        with socket.create_connection(("127.0.0.1", port), 5) as s:
            s.sendall(data)
            time.sleep(wait)
            if read:
                s.settimeout(1)
                with contextlib.suppress(OSError):
                    out = s.recv(65536)
    return out


def children(pid: int) -> list[int]:
    out = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    return out


def pace(args, t0: float, lines: int) -> None:
    """Keep a fast source's normal phase near --min-normal-seconds (so normal.log is most of what it logged)."""
    target = args.lines * 1.05 / max(args.min_normal_s, 1)
    ahead = lines / target - (time.time() - t0)
    if ahead > 0:
        time.sleep(min(ahead, 2.0))


WORDS = ["alpha", "bravo", "cobalt", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper", "kestrel",
         "lumen", "maple", "nova", "orchid", "pepper", "quartz", "raven", "sierra", "tango", "umber", "violet"]
USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]


# --------------------------------------------------------------------------
# redis
# --------------------------------------------------------------------------

class Resp:
    """A minimal RESP2 client (one connection)."""

    def __init__(self, port: int, name: str | None = None, timeout: float = 5):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.f = self.sock.makefile("rb")
        if name:
            self.call("CLIENT", "SETNAME", name)

    @staticmethod
    def encode(*args) -> bytes:
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed")
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b"-"):
            return rest.decode(errors="replace")
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError(f"bad reply {line!r}")

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self.read()

    def pipeline(self, cmds: list) -> list:
        self.sock.sendall(b"".join(self.encode(*c) for c in cmds))
        return [self.read() for _ in cmds]

    def close(self):
        with contextlib.suppress(OSError):
            self.f.close()
            self.sock.close()


REDIS_CONF = """\
port {port}
bind 127.0.0.1
dir {data}
logfile ""
loglevel verbose
daemonize no
save 30 200 10 2000
appendonly yes
appendfsync everysec
auto-aof-rewrite-percentage 100
auto-aof-rewrite-min-size 2mb
maxclients 200
client-output-buffer-limit normal 4mb 2mb 10
client-output-buffer-limit pubsub 1mb 512kb 30
enable-debug-command local
timeout 60
"""

REDIS_HEAD = re.compile(r"^\d+:[XCSM] \d\d \w{3} \d{4} [\d:.]+ [.\-*#] ")
REDIS_CLIENT = re.compile(r"\bid=\d+ addr=\S+ .*? resp=\d+")


def redis_template(line: str) -> str:
    m = REDIS_HEAD.match(line)
    body = line[m.end() - 2:] if m else line
    body = REDIS_CLIENT.sub("<client>", body)
    body = re.sub(r"'[^']*'", "'_'", body)
    body = re.sub(r"\b(temp-)?[\w.-]*\.(rdb|aof|manifest)\b", "FILE", body)
    return mask_all(body)


def redis_problem(line: str) -> bool:
    m = REDIS_HEAD.match(line)
    return bool(m) and m.group(0)[-2] == "#"


def redis_echo(line: str) -> bool:
    return bool(re.search(r"[.\-*#] (Accepted \d|Client closed connection )", line))


class RedisApp:
    """The driving workload: app servers with persistent connections, cron/CLI one-shot connections."""

    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng, self.conns = port, rng, {}
        self.lock = threading.Lock()

    def conn(self, name: str) -> Resp:
        c = self.conns.get(name)
        if c is None:
            c = self.conns[name] = Resp(self.port, name if self.rng.random() < 0.8 else None)
        return c

    def drop(self, name: str) -> None:
        c = self.conns.pop(name, None)
        if c:
            c.close()

    def ops(self, rng: random.Random) -> list:
        user, word = rng.choice(USERS), rng.choice(WORDS)
        sid = "%016x" % rng.getrandbits(64)
        choice = rng.random()
        if choice < 0.2:
            return [("SETEX", f"session:{sid}", rng.randint(60, 3600), json.dumps({"user": user, "cart": rng.randint(0, 9)})),
                    ("GET", f"session:{sid}")]
        if choice < 0.35:
            return [("SET", f"cache:page:/{word}/{rng.randint(1, 400)}", "<html>" + word * rng.randint(1, 40), "EX", 300),
                    ("GET", f"cache:page:/{rng.choice(WORDS)}/{rng.randint(1, 400)}")]
        if choice < 0.5:
            return [("INCR", f"pageviews:/{word}"), ("INCRBY", f"bytes:{user}", rng.randint(100, 90000)),
                    ("EXPIRE", f"bytes:{user}", 86400)]
        if choice < 0.6:
            return [("ZINCRBY", "leaderboard:weekly", rng.randint(1, 50), user),
                    ("ZREVRANGE", "leaderboard:weekly", 0, 9, "WITHSCORES")]
        if choice < 0.72:
            return [("LPUSH", "queue:emails", json.dumps({"to": f"{user}@example.test", "tpl": word})),
                    ("RPOP", "queue:emails"), ("LLEN", "queue:emails")]
        if choice < 0.82:
            return [("HSET", f"user:{user}", "last_seen", int(time.time()), "plan", rng.choice(["free", "pro", "team"])),
                    ("HGETALL", f"user:{user}")]
        if choice < 0.9:
            return [("PUBLISH", f"events:{word}", json.dumps({"type": "order", "id": rng.randint(1, 10 ** 6)})),
                    ("MGET", *[f"cache:page:/{rng.choice(WORDS)}/{rng.randint(1, 400)}" for _ in range(4)])]
        if choice < 0.95:
            return [("MULTI",), ("DECRBY", f"stock:{word}", 1), ("SADD", f"orders:{user}", rng.randint(1, 99999)),
                    ("EXEC",)]
        return [("DEL", f"session:{sid}"), ("SCAN", 0, "MATCH", "cache:*", "COUNT", 50), ("TTL", f"bytes:{user}")]

    def app_round(self, rng: random.Random) -> None:
        name = f"{rng.choice(['web', 'api', 'worker', 'checkout'])}-{rng.randint(1, 4)}"
        try:
            c = self.conn(name)
            c.pipeline(self.ops(rng)) if rng.random() < 0.4 else [c.call(*op) for op in self.ops(rng)]
            if rng.random() < 0.03:
                self.drop(name)  # app restarts / pool recycling
        except (OSError, ConnectionError, ValueError):
            self.drop(name)

    def oneshot(self, rng: random.Random) -> None:
        """A cron job / redis-cli style client: connect, a few commands, disconnect."""
        try:
            c = Resp(self.port, rng.choice([None, f"cron-{rng.choice(WORDS)}", "healthcheck"]))
            try:
                for op in self.ops(rng)[: rng.randint(1, 3)]:
                    c.call(*op)
                if rng.random() < 0.3:
                    c.call("INFO", rng.choice(["memory", "stats", "replication", "persistence"]))
                if rng.random() < 0.2:
                    c.call("DBSIZE")
            finally:
                c.close()
        except (OSError, ConnectionError, ValueError):
            pass

    def background(self, rng: random.Random) -> None:
        for _ in range(rng.randint(1, 4)):
            self.app_round(rng)
        if rng.random() < 0.3:
            self.oneshot(rng)

    def close(self):
        for name in list(self.conns):
            self.drop(name)


def source_redis(args) -> Source:
    server = need("redis-server", "redis-server")
    need("redis-cli", "redis-tools")
    rng = random.Random(f"{args.seed}-redis")
    user = pwd.getpwnam("redis")
    with tempfile.TemporaryDirectory(prefix="onb-redis-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, rport = free_port(), free_port()
        data = os.path.join(work, "data")
        os.makedirs(data)
        ns = Namespace(sv, "redis-ns", f"mount -t tmpfs -o size=48m,uid={user.pw_uid},gid={user.pw_gid},mode=0750 tmpfs {data}")
        etc = os.path.join(work, "etc")
        os.makedirs(etc)
        os.chown(etc, user.pw_uid, user.pw_gid)
        conf = os.path.join(etc, "redis.conf")
        write_atomic(conf, REDIS_CONF.format(port=port, data=data))
        os.chown(conf, user.pw_uid, user.pw_gid)
        rdir = os.path.join(work, "replica")
        os.makedirs(rdir)
        os.chown(rdir, user.pw_uid, user.pw_gid)
        rconf = os.path.join(work, "replica.conf")
        write_atomic(rconf, f"port {rport}\nbind 127.0.0.1\ndir {rdir}\nlogfile \"\"\nsave \"\"\nreplicaof 127.0.0.1 {port}\n")
        logp = os.path.join(work, "redis.log")

        def start(conf_path=conf, wait=True):
            with open(logp, "ab") as logf:
                sv.start("redis", ns.argv(as_user("redis", [server, conf_path])), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def start_replica():
            sv.start("replica", as_user("redis", [server, rconf]), stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, cwd=work)

        def admin(*cmd):
            c = Resp(port)
            try:
                return c.call(*cmd)
            finally:
                c.close()

        def shutdown():
            with contextlib.suppress(Exception):
                admin("SHUTDOWN")
            proc = sv.procs.get("redis")
            if proc:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(20)
            sv.stop("redis")

        start()
        start_replica()
        app = RedisApp(port, rng)
        log, normal = FileLog(logp), []
        say(f"redis on 127.0.0.1:{port} (replica :{rport}); normal phase...")
        t0, n, restarts = time.time(), 0, 0
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                for _ in range(rng.randint(5, 40)):
                    app.app_round(rng)
                for _ in range(rng.randint(1, 8)):
                    app.oneshot(rng)
                r = rng.random()
                with contextlib.suppress(Exception):
                    if r < 0.05:
                        admin("BGSAVE")
                    elif r < 0.08:
                        admin("BGREWRITEAOF")
                    elif r < 0.1:
                        admin("CONFIG", "SET", "maxmemory", f"{rng.choice([64, 128, 256])}mb")
                        admin("CONFIG", "REWRITE")
                    elif r < 0.12:  # the replica is detached for maintenance and re-attached
                        c = Resp(rport)
                        c.call("REPLICAOF", "NO", "ONE")
                        time.sleep(rng.uniform(0.5, 3))
                        c.call("REPLICAOF", "127.0.0.1", port)
                        c.close()
                    elif r < 0.13:
                        sv.stop("replica")
                        time.sleep(1)
                        start_replica()
                if restarts < 2 and time.time() - t0 > 40 * (restarts + 1):  # routine restarts (upgrade, config)
                    app.close()
                    shutdown()
                    time.sleep(1)
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.02, 0.15))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 100 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > 600:
                    break
            time.sleep(1)
            normal += log.read_new()
            templates = {redis_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, redis_template, redis_problem, redis_echo,
                                             lambda x: bool(REDIS_HEAD.match(x))))
            # a big list for the output-buffer case (made outside any window)
            with contextlib.suppress(Exception):
                c = Resp(port)
                for i in range(0, 30000, 1000):
                    c.call("RPUSH", "report:export", *[f"row-{j}-" + "x" * 40 for j in range(i, i + 1000)])
                c.close()
            with Background(app.background, random.Random(rng.random()), (0.1, 0.5)):
                with br.phase("protocol_error"):  # broken client libraries / port scanners
                    payloads = [b"*abc\r\n", b"*3\r\n$3\r\nSET\r\n$-7\r\n", b"SET \"unbalanced value\r\n",
                                b"*1\r\n$999999999999\r\n", b"*2\r\n$3\r\nGET\r\nkey\r\n",
                                b"*2\r\n$3\r\nGET\r\n$x\r\n", b"*99999999999\r\n", b"HMSET 'user:1 name bob\r\n",
                                b"GET / HTTP/1.1\r\nHost: cache.internal:6379\r\n\r\n",  # SSRF / misrouted HTTP
                                b"POST /api/v1/keys HTTP/1.1\r\nHost: 10.0.0.5\r\nContent-Length: 2\r\n\r\n{}"]
                    rng.shuffle(payloads)
                    for payload in payloads:
                        with br.occurrence(1.0):
                            raw_send(port, payload, 0.3)
                with br.phase("output_buffer_limit"):  # a report job reading a huge list without reading replies
                    for i in range(5):
                        with br.occurrence(2.0):
                            with contextlib.suppress(OSError):
                                s = socket.create_connection(("127.0.0.1", port), 5)
                                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                                s.sendall(Resp.encode("CLIENT", "SETNAME", f"report-export-{i}")
                                          + Resp.encode("LRANGE", "report:export", 0, -1) * 4)
                                time.sleep(1.5)
                                s.close()
                    for i in range(3):  # a stuck pub/sub consumer
                        with br.occurrence(2.0):
                            with contextlib.suppress(OSError):
                                s = socket.create_connection(("127.0.0.1", port), 5)
                                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                                s.sendall(Resp.encode("SUBSCRIBE", "events:bulk"))
                                p = Resp(port)
                                for _ in range(250):
                                    p.call("PUBLISH", "events:bulk", "y" * 32768)
                                p.close()
                                time.sleep(1)
                                s.close()
                with br.phase("fork_child_killed"):  # the OOM killer picks the save / rewrite child
                    admin("CONFIG", "SET", "rdb-key-save-delay", "200")
                    for i in range(6):
                        with br.occurrence(2.0):
                            with contextlib.suppress(Exception):
                                admin("BGREWRITEAOF" if i % 3 == 2 else "BGSAVE")
                            time.sleep(0.5)
                            for pid in children(sv.procs["redis"].pid):
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGKILL)
                        time.sleep(1)
                    admin("CONFIG", "SET", "rdb-key-save-delay", "0")
                    time.sleep(2)
                    br.between()
                with br.phase("disk_full"):  # another writer fills the data filesystem
                    for i in range(5):
                        with br.occurrence(2.0):
                            ns.run(f"dd if=/dev/zero of={data}/fill.bin bs=1M 2>/dev/null; true")
                            with contextlib.suppress(Exception):
                                admin("BGSAVE")
                            time.sleep(2.5)
                            ns.run(f"rm -f {data}/fill.bin")
                            time.sleep(1.5)
                        time.sleep(2)
                with br.phase("permission_denied"):  # a bad chown/chmod by a deploy script
                    for i in range(5):
                        with br.occurrence(2.0):
                            ns.run(f"chmod 0555 {data}")
                            with contextlib.suppress(Exception):
                                admin("BGREWRITEAOF" if i % 2 else "BGSAVE")
                            time.sleep(1.5)
                            ns.run(f"chmod 0750 {data}")
                        time.sleep(1)
                with br.phase("master_unreachable"):  # pointed at a primary that is down (failover script)
                    for i in range(5):
                        with br.occurrence(1.5):
                            admin("REPLICAOF", "127.0.0.1", free_port())
                            time.sleep(rng.uniform(2.5, 4))
                            admin("REPLICAOF", "NO", "ONE")
                        time.sleep(1)
                        br.between()
                with br.phase("crash_signal"):  # a segfault (bug report with stack trace)
                    for i in range(3):
                        app.close()
                        with br.occurrence(2.0):
                            sv.procs["redis"].send_signal(signal.SIGSEGV)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["redis"].wait(15)
                        sv.forget("redis")
                        start()
                        time.sleep(3)
                        br.between()
                with br.phase("truncated_aof"):  # killed, then the last AOF write is found torn on restart
                    writer = RedisApp(port, random.Random(rng.random()))
                    for i in range(3):
                        for _ in range(30):
                            writer.app_round(writer.rng)
                        writer.close()
                        app.close()
                        with br.occurrence(3.0):
                            sv.procs["redis"].kill()
                            sv.forget("redis")
                            ns.run(f"cd {data}/appendonlydir && f=$(ls -t *.incr.aof | head -1) && "
                                   f"s=$(stat -c %s $f) && [ $s -gt 40 ] && truncate -s $((s - {rng.randint(3, 30)})) $f")
                            start()
                            time.sleep(1)
                        time.sleep(2)
                        br.between()
                with br.phase("bad_config_restart"):  # a config typo found at restart
                    good = open(conf).read()
                    # (appended: CONFIG REWRITE has reformatted the file since)
                    for bad in [good + line + "\n" for line in ["maxclients 200 # cap", "appendfsync sometimes",
                                                                 "save 30", "maxmemory 2 gigabytes", "loglevel chatty"]]:
                        app.close()
                        shutdown()
                        bad_conf = os.path.join(etc, "redis-new.conf")
                        write_atomic(bad_conf, bad)
                        os.chmod(bad_conf, 0o644)
                        with br.occurrence(1.5):
                            start(bad_conf, wait=False)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["redis"].wait(10)
                        sv.forget("redis")
                        start()
                        time.sleep(2)
                        br.between()
        finally:
            app.close()
            shutdown()
    return Source("redis", "redis-server", version_of([server, "--version"]),
                  "redis native log (`pid:role dd Mon yyyy hh:mm:ss.mmm <level char> message`, roles M/C/S, levels "
                  ". - * #), loglevel verbose; crash reports and fatal config errors span several lines",
                  "loglevel verbose (at notice ~1 line per save); persistent app connections (sessions, caches, "
                  "counters, leaderboards, queues, hashes, pipelines, MULTI/EXEC, pub/sub), one-shot cron/CLI "
                  "connections, RDB saves (save rule + BGSAVE), AOF on (rewrites), CONFIG REWRITE, a replica "
                  "attaching/detaching (full/partial resync), 2 clean restarts; data dir on a 48 MB tmpfs",
                  "protocol_error (8 garbage RESP/inline payloads, 2 HTTP requests: cross-protocol attack "
                  "detection, logged once a minute), output_buffer_limit (5 clients LRANGE-ing a 30k list without reading, 3 stuck "
                  "subscribers), fork_child_killed (6 SIGKILLs of the BGSAVE/BGREWRITEAOF child), disk_full (5x "
                  "tmpfs filled with dd + BGSAVE), permission_denied (5x data dir chmod 0555 + BGSAVE/BGREWRITEAOF), "
                  "master_unreachable (5x REPLICAOF a closed port for 3s), crash_signal (3 SIGSEGV, bug report), "
                  "truncated_aof (3x SIGKILL + torn AOF tail + restart), bad_config_restart (5 bad config files)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# HAProxy
# --------------------------------------------------------------------------

class AppBackend(QuietHandler):
    """A local web/API/auth/static/reports server behind HAProxy; modes: ok, fail500, slow."""

    def route(self, method: str):
        owner, path = self.server.owner, self.path
        if path == "/health":
            return self.reply(200, b"ok\n")
        if owner.mode == "slow" or owner.attrs.get("role") == "reports":
            time.sleep(3 if owner.mode == "slow" else 1.5)
        if owner.mode == "fail500":
            return self.reply(500, b"<h1>500 Internal Server Error</h1>\n", "text/html")
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if "missing" in path or path.endswith(".php") or "/old/" in path:
            return self.reply(404, b"<h1>Not Found</h1>\n", "text/html")
        if path.startswith("/auth/login") and "bad" in (self.headers.get("Authorization") or ""):
            return self.reply(401, b'{"error":"invalid_credentials"}', "application/json")
        if self.headers.get("If-None-Match"):
            self.send_response(304)
            self.send_header("ETag", self.headers["If-None-Match"])
            self.end_headers()
            return
        if path.startswith("/shop") and path.endswith("/"):
            self.send_response(301)
            self.send_header("Location", path.rstrip("/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "POST":
            return self.reply(201, b'{"id":%d}' % random.randint(1, 10 ** 6), "application/json")
        if method == "DELETE":
            self.send_response(204)
            self.end_headers()
            return
        size = (hash(path) % 40 + 1) * 200
        ctype = "application/json" if path.startswith("/api") else "text/html"
        self.reply(200, b"x" * size, ctype)

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")

    def do_HEAD(self):
        self.route("HEAD")


HAPROXY_CONF = """\
global
    log stdout format raw local0 info
    stats socket {work}/admin.sock mode 600 level admin
    maxconn 400
defaults
    mode http
    log global
    option httplog
    option log-health-checks
    timeout connect 1s
    timeout client 10s
    timeout server 2s
    timeout http-request 2s
    timeout queue 1s
    timeout check 1s
    retries 1
frontend fe_shop
    bind 127.0.0.1:{shop}
    capture request header User-Agent len 48
    acl is_api path_beg /api/
    acl is_static path_beg /static/
    acl is_auth path_beg /auth/
    acl is_reports path_beg /reports/
    use_backend be_api if is_api
    use_backend be_static if is_static
    use_backend be_auth if is_auth
    use_backend be_reports if is_reports
    default_backend be_web
frontend fe_partner_api
    bind 127.0.0.1:{partner}
    capture request header User-Agent len 48
    default_backend be_api
backend be_web
    balance roundrobin
    option httpchk GET /health
{web}
backend be_api
    balance leastconn
    option httpchk GET /health
{api}
backend be_auth
    option httpchk GET /health
    server auth1 127.0.0.1:{auth} check inter 1s fall 2 rise 2
backend be_static
    server static1 127.0.0.1:{static} check inter 2s
backend be_reports
    server reports1 127.0.0.1:{reports} maxconn 1
"""

BROWSERS = ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0", "Mozilla/5.0 (Macintosh) Safari/605.1.15",
            "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Firefox/121.0", "ShopApp/4.1 (Android 14)",
            "ShopApp/4.1 (iOS 17.2)", "Googlebot/2.1 (+http://www.google.com/bot.html)", "curl/7.88.1",
            "partner-sync/2.3 (python-requests)"]
HAPROXY_ACCESS = re.compile(r"^\S+:\d+ \[[^\]]+\] \S+ \S+ \S+ (-?\d+) ")


def haproxy_status(line: str) -> int | None:
    m = HAPROXY_ACCESS.match(line)
    return int(m.group(1)) if m else None


def haproxy_problem(line: str) -> bool:
    st = haproxy_status(line)
    return bool(re.match(r"^\[(WARNING|ALERT)\]", line)) or (st is not None and st >= 400)


def haproxy_echo(line: str) -> bool:
    st = haproxy_status(line)
    return st is not None and st < 400


def haproxy_template(line: str) -> str:
    line = re.sub(r"\{[^}]*\}", "{_}", line)
    line = re.sub(r"\[[\d/A-Za-z:.]+\]", "[DATE]", line)
    return mask_all(line)


class HaproxySite:
    def __init__(self, work: str, rng: random.Random):
        self.work, self.rng = work, rng
        self.shop, self.partner = free_port(), free_port()
        self.web = [ModeServer(AppBackend, role="web") for _ in range(3)]
        self.api = [ModeServer(AppBackend, role="api") for _ in range(2)]
        self.auth = ModeServer(AppBackend, role="auth")
        self.static = ModeServer(AppBackend, role="static")
        self.reports = ModeServer(AppBackend, role="reports")
        self.conf = os.path.join(work, "haproxy.cfg")
        self.log = os.path.join(work, "haproxy.log")

    def servers(self):
        return self.web + self.api + [self.auth, self.static, self.reports]

    def config(self, n_web: int = 3, weights: bool = False) -> str:
        w = lambda: f" weight {self.rng.choice([50, 100, 100, 150])}" if weights else ""
        web = "\n".join(f"    server web{i + 1} 127.0.0.1:{s.port} check inter 1s fall 2 rise 2{w()}"
                        for i, s in enumerate(self.web[:n_web]))
        api = "\n".join(f"    server api{i + 1} 127.0.0.1:{s.port} check inter 1s fall 2 rise 2 maxconn 30{w()}"
                        for i, s in enumerate(self.api))
        return HAPROXY_CONF.format(work=self.work, shop=self.shop, partner=self.partner, web=web, api=api,
                                   auth=self.auth.port, static=self.static.port, reports=self.reports.port)

    def start(self, sv: Group) -> None:
        with open(self.log, "ab") as logf:
            sv.start("haproxy", [need("haproxy", "haproxy"), "-W", "-f", self.conf], stdout=logf, stderr=logf,
                     cwd=self.work)
        wait_port(self.shop)

    def request(self, method: str, path: str, ua: str, port: int | None = None, headers: dict | None = None,
                body: bytes | None = None, timeout: float = 8) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port or self.shop, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers={"User-Agent": ua, "Host": "shop.example.test",
                                                           **(headers or {})})
            resp = conn.getresponse()
            resp.read()
            return resp.status
        except (OSError, http.client.HTTPException):
            return 0
        finally:
            conn.close()

    def visit(self, rng: random.Random, clean: bool = False) -> None:
        """One user's visit; clean=True: no client mistakes (404/401), no auth (background during breakages)."""
        ua = rng.choice(BROWSERS)
        cat = rng.choice(["kitchen", "living", "office", "garden", "lighting"])
        reqs = [("GET", rng.choice(["/", f"/shop/{cat}", f"/shop/{cat}/item-{rng.randint(1, 300)}", "/about"]))]
        for _ in range(rng.randint(1, 5)):
            reqs.append(("GET", f"/static/{rng.choice(['app', 'vendor', 'theme'])}.{rng.randint(100, 999)}."
                                f"{rng.choice(['js', 'css', 'woff2', 'png'])}"))
        for _ in range(rng.randint(0, 4)):
            reqs.append(rng.choice([("GET", f"/api/v1/products?category={cat}&page={rng.randint(1, 9)}"),
                                    ("GET", f"/api/v1/products/{rng.randint(1, 5000)}"),
                                    ("POST", "/api/v1/cart"), ("PUT", f"/api/v1/cart/{rng.randint(1, 99)}"),
                                    ("DELETE", f"/api/v1/cart/{rng.randint(1, 99)}"), ("GET", "/api/v1/me")]))
        if not clean and rng.random() < 0.2:
            reqs.append(("POST", "/auth/login"))
        if not clean and rng.random() < 0.1:
            reqs.append(("GET", rng.choice(["/old/catalog.html", "/wp-login.php", f"/shop/{cat}/missing-{rng.randint(1, 9)}"])))
        if not clean and rng.random() < 0.05:
            reqs.append(("GET", "/reports/daily"))
        if rng.random() < 0.15:
            reqs.append(("GET", f"/shop/{cat}/"))
        for method, path in reqs:
            headers = {}
            if path.startswith("/static") and rng.random() < 0.3:
                headers["If-None-Match"] = '"%x"' % rng.getrandbits(32)
            if path == "/auth/login":
                headers["Authorization"] = "Basic " + ("bad" if rng.random() < 0.2 else "ok") + rng.choice(USERS)
            self.request(method, path, ua, headers=headers, body=b"{}" if method in ("POST", "PUT") else None)
        if not clean and rng.random() < 0.3:  # a partner integration
            self.request("GET", f"/api/v1/orders?since={rng.randint(1, 10 ** 6)}", "partner-sync/2.3", self.partner)

    def reload(self, sv: Group) -> None:
        sv.procs["haproxy"].send_signal(signal.SIGUSR2)


def source_haproxy(args) -> Source:
    binary = need("haproxy", "haproxy")
    rng = random.Random(f"{args.seed}-haproxy")
    with tempfile.TemporaryDirectory(prefix="onb-haproxy-") as work, Group() as sv:
        site = HaproxySite(work, rng)
        for s in site.servers():
            s.start()
        write_atomic(site.conf, site.config())
        site.start(sv)
        log, normal = FileLog(site.log), []
        say(f"haproxy on 127.0.0.1:{site.shop}/{site.partner}, {len(site.servers())} backend servers; normal phase...")
        t0, n, restarted, last_reload = time.time(), 0, False, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                threads = [threading.Thread(target=site.visit, args=(random.Random(rng.random()),), daemon=True)
                           for _ in range(rng.randint(1, 4))]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join(30)
                if time.time() - last_reload > rng.uniform(8, 20):  # config management: weights, a 3rd web server
                    write_atomic(site.conf, site.config(n_web=rng.choice([2, 3, 3]), weights=rng.random() < 0.6))
                    site.reload(sv)
                    last_reload = time.time()
                if not restarted and time.time() - t0 > 60:  # a package upgrade: full restart
                    sv.stop("haproxy")
                    time.sleep(0.5)
                    site.start(sv)
                    restarted = True
                time.sleep(rng.uniform(0.0, 0.2))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 100 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > 600:
                    break
            good = site.config()
            write_atomic(site.conf, good)
            site.reload(sv)
            time.sleep(3)
            normal += log.read_new()
            templates = {haproxy_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, haproxy_template, haproxy_problem, haproxy_echo))
            ua = lambda: rng.choice(BROWSERS)
            bg = lambda r: site.visit(r, clean=True)
            with Background(bg, random.Random(rng.random()), (0.2, 0.8)):
                with br.phase("server_down"):  # one web server crashes (SIGKILL), comes back 5 s later
                    for i in range(4):
                        victim = site.web[i % 3]
                        with br.occurrence(1.5):
                            victim.stop()
                            for _ in range(6):
                                site.request("GET", f"/shop/office/item-{rng.randint(1, 300)}", ua())
                                time.sleep(0.5)
                            victim.start()
                            time.sleep(3.5)
                        time.sleep(1)
                with br.phase("backend_down"):  # the auth service is down: no server left in be_auth
                    for i in range(4):
                        with br.occurrence(1.5):
                            site.auth.stop()
                            time.sleep(2.5)
                            for _ in range(2):
                                site.request("POST", "/auth/login", ua(), headers={"Authorization": "Basic ok"}, body=b"{}")
                            site.auth.start()
                            time.sleep(3)
                        time.sleep(1)
                with br.phase("backend_http_500"):  # a bad API deploy answers 500
                    for i in range(5):
                        with br.occurrence(1.0):
                            for s in site.api:
                                s.mode = "fail500"
                            for _ in range(rng.randint(1, 3)):
                                site.request("GET", f"/api/v1/products/{rng.randint(1, 5000)}", ua())
                            for s in site.api:
                                s.mode = "ok"
                        time.sleep(1)
                with br.phase("server_timeout"):  # the API hangs on its database (3 s > timeout server 2 s)
                    for i in range(5):
                        with br.occurrence(1.5):
                            for s in site.api:
                                s.mode = "slow"
                            site.request("GET", f"/api/v1/orders?since={rng.randint(1, 10 ** 6)}", "partner-sync/2.3",
                                         site.partner)
                            for s in site.api:
                                s.mode = "ok"
                        time.sleep(1.5)
                with br.phase("bad_request"):  # scanners / TLS clients / broken clients on the HTTP port
                    payloads = [b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + rng.randbytes(40),
                                rng.randbytes(80), b"SSH-2.0-OpenSSH_9.2p1\r\n",
                                b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: shop\r\n\r\n",
                                b"GET / HTTP/1.1\r\nHost: shop\r\nX-Broken Header\r\n\r\n",
                                b"GET /index.html HTTP/9.9\r\n\r\n", b"BREW /pot HTTP/1.1 extra\r\n\r\n",
                                b"GET / HTTP/1.1\r\nHost: shop\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n"]
                    for p in payloads:
                        with br.occurrence(1.0):
                            raw_send(site.shop, p, 0.3)
                with br.phase("client_timeout"):  # clients that stall in the middle of their request headers
                    for i in range(4):
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError):
                                with socket.create_connection(("127.0.0.1", site.shop), 5) as s:
                                    s.sendall(b"GET /shop/kitchen HTTP/1.1\r\nHost: shop.example.test\r\nUser-Agent: ")
                                    time.sleep(2.6)
                with br.phase("queue_timeout"):  # the reports backend (maxconn 1) is swamped
                    for i in range(4):
                        with br.occurrence(2.0):
                            parallel_reqs = [threading.Thread(target=site.request, args=("GET", f"/reports/{d}", ua()),
                                                              daemon=True) for d in ["daily", "weekly", "monthly",
                                                                                      "daily", "export", "daily"]]
                            for th in parallel_reqs:
                                th.start()
                            for th in parallel_reqs:
                                th.join(15)
                with br.phase("bad_config_reload"):
                    bads = [good.replace("    balance roundrobin", "    balance round-robin", 1),
                            good.replace("    timeout server 2s", "    timeout server 2 seconds", 1),
                            good.replace("    default_backend be_web", "    default_backend be_www", 1),
                            good + "backend be_web\n    server dup 127.0.0.1:1\n",
                            good.replace("    bind 127.0.0.1:", "    bind 127.0.0.300:", 1)]
                    for bad in bads:
                        with br.occurrence(1.5):
                            write_atomic(site.conf, bad)
                            site.reload(sv)
                        write_atomic(site.conf, good)
                        time.sleep(0.5)
                    site.reload(sv)
                    time.sleep(3)
                    br.between()
                with br.phase("worker_killed"):  # the OOM killer takes the worker; the master gives up
                    for i in range(3):
                        with br.occurrence(1.5):
                            for pid in children(sv.procs["haproxy"].pid):
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGKILL)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["haproxy"].wait(10)
                        sv.forget("haproxy")
                        site.start(sv)
                        time.sleep(3)
                        br.between()
        finally:
            sv.stop("haproxy")
            for s in site.servers():
                s.stop()
    return Source("haproxy", "HAProxy", version_of([binary, "-v"]),
                  "HAProxy stdout+stderr in master-worker mode: `log stdout format raw` httplog access lines "
                  "(client [accept date] frontend backend/server timers status bytes ... {User-Agent} \"request\") and "
                  "raw log messages, plus `[NOTICE]/[WARNING]/[ALERT] (pid) : ...` messages",
                  "3 web + 2 API + auth/static/reports python HTTP servers behind 2 frontends (option httplog, "
                  "captured User-Agent, log-health-checks, health checks every 1s); browsers/apps/bots visiting "
                  "pages, static assets (some 304), API GET/POST/PUT/DELETE, logins (some 401), a few 404s and 301s, "
                  "a partner API client; config reloads (SIGUSR2) every 8-20s changing weights and the number of web "
                  "servers; one clean restart",
                  "server_down (4x a web server SIGKILLed for 5s), backend_down (4x the only auth server down), "
                  "backend_http_500 (5x the API answering 500), server_timeout (5x API hanging 3s > timeout server "
                  "2s, 504), bad_request (8 garbage/TLS/SSH/oversized/invalid requests, 400/414/501), client_timeout "
                  "(4x headers stalled past timeout http-request, 408), queue_timeout (4x 6 parallel requests to a "
                  "maxconn-1 backend, 503), bad_config_reload (5 broken configs, SIGUSR2), worker_killed (3x SIGKILL of "
                  "the worker; the master exits, restarted)", normal, br.errors)


# --------------------------------------------------------------------------
# mosquitto
# --------------------------------------------------------------------------

MQTT_USERS = {"sensor-gw": "gw-pass-1", "dashboard": "dash-pass-2", "backend": "be-pass-3", "ops": "ops-pass-4",
              "fleet": "fleet-pass-5"}
MQTT_ACL = """\
user sensor-gw
topic readwrite sensors/#
topic read cmd/#
topic write status/#
user dashboard
topic read sensors/#
topic read status/#
topic read alerts/#
user backend
topic readwrite #
user ops
topic readwrite cmd/#
topic read $SYS/#
user fleet
topic readwrite fleet/#
pattern readwrite devices/%c/#
"""
MQTT_CONF = """\
per_listener_settings false
listener {port} 127.0.0.1
allow_anonymous false
password_file {work}/passwd
acl_file {work}/acl
persistence true
persistence_location {data}/
autosave_interval 10
log_dest stderr
log_type all
connection_messages true
max_keepalive 120
max_packet_size 65536

connection bridge-cloud
address 127.0.0.1:{bridge}
topic sensors/# out 1 "" site-a/
topic cmd/# in 1 "" site-a/
bridge_protocol_version mqttv311
restart_timeout 2 4
"""


def mqtt_template(line: str) -> str:
    body = re.sub(r"^\d+: ", "", line)
    body = re.sub(r"'[^']*'", "'_'", body)
    body = re.sub(r"\b(?:from|to|as|Client|client|for|bridge) ([\w.-]+)", lambda m: m.group(0).split(" ")[0] + " ID", body)
    body = re.sub(r"^\S+ (\d) (\S+)$", r"ID \1 TOPIC", body)  # a subscription: client id, QoS, filter
    return mask_all(body)


def mqtt_problem(line: str) -> bool:
    return bool(re.match(r"^\d+: (Error|Warning)\b", line))


def mqtt_echo(line: str) -> bool:
    return bool(re.match(r"^\d+: (New connection from |New client connected from |Received (PUBLISH|PUBACK|PUBREC|PUBREL|"
                         r"PUBCOMP|SUBSCRIBE|UNSUBSCRIBE|PINGREQ|DISCONNECT) from |No will message specified|"
                         r"Will message specified|\t|\S+ \d \S+$)", line))


class MqttDriver:
    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng = port, rng
        self.pub, self.sub = need("mosquitto_pub", "mosquitto-clients"), need("mosquitto_sub", "mosquitto-clients")

    def auth(self, user: str, password: str | None = None) -> list[str]:
        return ["-h", "127.0.0.1", "-p", str(self.port), "-u", user, "-P", password or MQTT_USERS[user]]

    def publish(self, user: str, cid: str, topic: str, messages: list[str], qos: int = 0, retain: bool = False,
                extra: list[str] | None = None, password: str | None = None, timeout: float = 15) -> None:
        argv = [self.pub, *self.auth(user, password), "-i", cid, "-t", topic, "-q", str(qos), "-l"]
        if retain:
            argv.append("-r")
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(argv + (extra or []), input="\n".join(messages) + "\n", text=True, timeout=timeout,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def subscribe(self, user: str, cid: str, topics: list[str], count: int, wait: int, qos: int = 0,
                  clean: bool = True, extra: list[str] | None = None) -> subprocess.Popen:
        argv = [self.sub, *self.auth(user), "-i", cid, "-q", str(qos), "-C", str(count), "-W", str(wait)]
        for t in topics:
            argv += ["-t", t]
        if not clean:
            argv.append("-c")
        return subprocess.Popen(argv + (extra or []), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def sensor_batch(self, rng: random.Random) -> None:
        site, dev = rng.choice(["hall", "lab", "roof", "dock", "office"]), rng.randint(1, 40)
        kind = rng.choice(["temp", "humidity", "co2", "power"])
        msgs = [json.dumps({"v": round(rng.uniform(10, 900), 2), "seq": rng.randint(1, 10 ** 6)})
                for _ in range(rng.randint(1, 6))]
        self.publish("sensor-gw", f"gw-{site}-{rng.randint(1, 3)}", f"sensors/{site}/{kind}/{dev}", msgs,
                     qos=rng.choice([0, 0, 1, 1, 2]))

    def status(self, rng: random.Random) -> None:
        site = rng.choice(["hall", "lab", "roof", "dock", "office"])
        self.publish("sensor-gw", f"gw-{site}-{rng.randint(1, 3)}", f"status/{site}",
                     [rng.choice(["online", "degraded", "online"])], qos=1, retain=True,
                     extra=["--will-topic", f"status/{site}", "--will-payload", "offline", "--will-retain"]
                     if rng.random() < 0.5 else None)

    def device(self, rng: random.Random) -> None:
        dev = f"dev-{rng.randint(1000, 1099)}"
        self.publish("fleet", dev, f"devices/{dev}/telemetry", [json.dumps({"bat": rng.randint(5, 100)})],
                     qos=rng.choice([0, 1]))

    def command(self, rng: random.Random) -> None:
        self.publish("ops", f"ops-console-{rng.randint(1, 3)}", f"cmd/{rng.choice(['hall', 'lab', 'roof'])}/"
                     f"{rng.choice(['reboot', 'calibrate', 'set-interval'])}", [json.dumps({"by": rng.choice(USERS)})], qos=1)

    def round(self, rng: random.Random, subs: list) -> None:
        r = rng.random()
        if r < 0.15 and len(subs) < 6:
            who = rng.choice([("dashboard", f"dash-{rng.choice(USERS)}", ["sensors/#", "status/#"]),
                              ("backend", f"ingest-{rng.randint(1, 4)}", ["sensors/+/temp/#", "devices/#"]),
                              ("backend", "alerting", ["sensors/+/co2/#", "status/#"]),
                              ("sensor-gw", f"gw-{rng.choice(['hall', 'lab'])}-cmd", ["cmd/#"])])
            cid = f"{who[1]}-{rng.getrandbits(16):04x}"  # unique: no client-id clashes in the normal phase
            subs.append(self.subscribe(who[0], cid, who[2], rng.randint(5, 60), rng.randint(3, 12),
                                       qos=rng.choice([0, 1, 2]), clean=rng.random() < 0.7))
        elif r < 0.65:
            self.sensor_batch(rng)
        elif r < 0.75:
            self.status(rng)
        elif r < 0.9:
            self.device(rng)
        else:
            self.command(rng)
        for p in list(subs):
            if p.poll() is not None:
                subs.remove(p)

    def background(self, rng: random.Random) -> None:
        rng.choice([self.sensor_batch, self.sensor_batch, self.device, self.status])(rng)


def source_mosquitto(args) -> Source:
    broker = need("mosquitto", "mosquitto")
    passwd = need("mosquitto_passwd", "mosquitto")
    rng = random.Random(f"{args.seed}-mosquitto")
    user = pwd.getpwnam("mosquitto")
    with tempfile.TemporaryDirectory(prefix="onb-mqtt-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, bport = free_port(), free_port()
        data = os.path.join(work, "data")
        os.makedirs(data)
        os.chown(data, user.pw_uid, user.pw_gid)
        os.chmod(data, 0o750)
        pwfile = os.path.join(work, "passwd")
        write_atomic(pwfile, "")
        for u, p in MQTT_USERS.items():
            subprocess.run([passwd, "-b", pwfile, u, p], check=True, capture_output=True)
        write_atomic(os.path.join(work, "acl"), MQTT_ACL)
        for f in ("passwd", "acl"):
            os.chown(os.path.join(work, f), user.pw_uid, user.pw_gid)
            os.chmod(os.path.join(work, f), 0o600)
        conf = os.path.join(work, "mosquitto.conf")
        good = MQTT_CONF.format(port=port, work=work, data=data, bridge=bport)
        write_atomic(conf, good)
        bconf = os.path.join(work, "cloud.conf")
        write_atomic(bconf, f"listener {bport} 127.0.0.1\nallow_anonymous true\nlog_dest none\n")
        logp = os.path.join(work, "mosquitto.log")

        def start(conf_path=conf, wait=True):
            with open(logp, "ab") as logf:
                sv.start("mosquitto", [broker, "-c", conf_path], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def start_cloud():
            sv.start("cloud", [broker, "-c", bconf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            wait_port(bport)

        start_cloud()
        start()
        drv = MqttDriver(port, rng)
        log, normal, subs = FileLog(logp), [], []
        say(f"mosquitto on 127.0.0.1:{port} (bridge to :{bport}); normal phase...")
        t0, n, restarted, last_hup = time.time(), 0, False, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                drv.round(rng, subs)
                if time.time() - last_hup > rng.uniform(15, 30):  # config management touched the ACLs
                    sv.procs["mosquitto"].send_signal(signal.SIGHUP)
                    last_hup = time.time()
                if not restarted and time.time() - t0 > 50:
                    sv.stop("mosquitto")
                    start()
                    restarted = True
                time.sleep(rng.uniform(0.0, 0.15))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 200 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > 600:
                    break
            for p in subs:
                kill_group(p)
                p.wait()
            time.sleep(1)
            normal += log.read_new()
            templates = {mqtt_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, mqtt_template, mqtt_problem, mqtt_echo))
            with Background(drv.background, random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("auth_failure"):  # a device with an old password, a credential-stuffing bot
                    for i in range(6):
                        with br.occurrence(1.0):
                            if i % 2:
                                drv.publish("sensor-gw", f"gw-dock-{i}", "sensors/dock/temp/1", ["1"], password="gw-pass-0")
                            else:
                                drv.publish(rng.choice(["admin", "root", "test"]), f"mqtt-bot-{rng.randint(1, 99)}",
                                            "test", ["x"], password=rng.choice(["admin", "123456", "password"]))
                with br.phase("acl_denied"):  # clients writing/reading where the ACL says no
                    for i in range(6):
                        with br.occurrence(1.0):
                            if i % 3 == 0:
                                drv.publish("dashboard", f"dash-{rng.choice(USERS)}", "cmd/hall/reboot", ["{}"], qos=1)
                            elif i % 3 == 1:
                                drv.publish("sensor-gw", f"gw-lab-{i}", "alerts/lab/fire", ["{\"level\": 3}"], qos=rng.choice([0, 1]))
                            else:
                                drv.publish("fleet", f"dev-{rng.randint(1000, 1099)}", f"devices/dev-{rng.randint(2000, 2999)}/config",
                                            ["{}"], qos=1)
                with br.phase("protocol_garbage"):  # HTTP probes, TLS clients, broken MQTT stacks
                    payloads = [b"GET / HTTP/1.1\r\nHost: mqtt.example.test\r\n\r\n", rng.randbytes(48),
                                b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + rng.randbytes(30),
                                b"\x10\x10\x00\x04MQXX\x04\x02\x00\x3c\x00\x04abcd",  # bad protocol name
                                b"\x10\x10\x00\x04MQTT\x09\x02\x00\x3c\x00\x04abcd",  # protocol level 9
                                b"\x30\x05\x00\x01a"]  # PUBLISH before CONNECT
                    for p in payloads:
                        with br.occurrence(1.0):
                            raw_send(port, p, 0.5)
                with br.phase("keepalive_timeout"):  # a subscriber frozen (SIGSTOP) past 1.5x its keepalive
                    for i in range(4):
                        with br.occurrence(1.5):
                            p = drv.subscribe("dashboard", f"dash-wall-{i + 1}", ["status/#"], 1000, 60, extra=["-k", "5"])
                            time.sleep(1)
                            kill_group(p, signal.SIGSTOP)
                            time.sleep(12)
                            kill_group(p)
                            p.wait()
                with br.phase("client_id_clash"):  # two devices flashed with the same client id
                    for i in range(4):
                        with br.occurrence(1.5):
                            cid = f"gw-roof-{i + 1}"
                            a = drv.subscribe("sensor-gw", cid, ["cmd/#"], 1000, 10)
                            time.sleep(1)
                            b = drv.subscribe("sensor-gw", cid, ["cmd/#"], 1000, 10)
                            time.sleep(1.5)
                            for p in (a, b):
                                kill_group(p, signal.SIGTERM)
                                p.wait()
                with br.phase("bridge_down"):  # the cloud broker goes away for a few seconds
                    for i in range(4):
                        with br.occurrence(2.0):
                            sv.stop("cloud", signal.SIGKILL)
                            time.sleep(rng.uniform(4, 7))
                            start_cloud()
                            time.sleep(4)
                        time.sleep(1)
                with br.phase("oversize_packet"):  # a camera gateway publishing snapshots > max_packet_size
                    for i in range(4):
                        with br.occurrence(1.0):
                            drv.publish("sensor-gw", f"gw-{rng.choice(['hall', 'dock'])}-cam{i + 1}",
                                        f"sensors/{rng.choice(['hall', 'dock'])}/snapshot/{i + 1}",
                                        ["".join(rng.choice("abcdef0123456789") for _ in range(70000 + 5000 * i))], qos=1,
                                        timeout=5)  # mosquitto_pub -l keeps reconnecting; give up after 5 s
                with br.phase("persistence_permission_denied"):  # a bad chown of the persistence dir
                    for i in range(4):
                        with br.occurrence(1.5):
                            os.chown(data, 0, 0)
                            os.chmod(data, 0o755)
                            sv.procs["mosquitto"].send_signal(signal.SIGUSR1)
                            time.sleep(1)
                            os.chown(data, user.pw_uid, user.pw_gid)
                            os.chmod(data, 0o750)
                        time.sleep(1)
                with br.phase("corrupt_persistence_restart"):  # the persistence file is damaged at restart
                    db = os.path.join(data, "mosquitto.db")
                    for i in range(3):
                        sv.stop("mosquitto")
                        with open(db, "r+b") as f:
                            f.seek(rng.randint(0, 16))
                            f.write(rng.randbytes(rng.randint(8, 64)))
                        with br.occurrence(1.5):
                            start(wait=False)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["mosquitto"].wait(5)
                        sv.stop("mosquitto")
                        os.remove(db)
                        start()
                        time.sleep(1.5)
                        br.between()
                with br.phase("bad_config_restart"):
                    bads = [good.replace("max_keepalive 120", "max_keepalive two minutes"),
                            good + "log_type verbose\n",
                            good.replace("password_file " + work, "password_file " + work + "/missing"),
                            good.replace("persistence true", "persistence yes please"),
                            good.replace("autosave_interval 10", "autosave_intervall 10")]
                    for bad in bads:
                        sv.stop("mosquitto")
                        write_atomic(conf, bad)
                        with br.occurrence(1.5):
                            start(wait=False)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["mosquitto"].wait(5)
                        sv.stop("mosquitto")
                        write_atomic(conf, good)
                        start()
                        time.sleep(1.5)
                        br.between()
        finally:
            for p in subs:
                kill_group(p)
            sv.stop("mosquitto")
    return Source("mosquitto", "mosquitto", version_of([broker, "-h"]),
                  "mosquitto log (`epoch: message`), log_dest stderr, log_type all (debug: every MQTT packet)",
                  "log_type all (the default logs only connects/disconnects/errors); password file + ACLs (5 users, a "
                  "%c pattern), mosquitto_pub/mosquitto_sub clients: sensor gateways publishing batches (QoS 0/1/2), "
                  "retained status messages with wills, fleet devices, ops commands, dashboard/backend subscribers "
                  "(clean and persistent sessions); a bridge to a second broker (not logged); autosave every 10s; "
                  "SIGHUP reloads every 15-30s; one clean restart",
                  "auth_failure (6 wrong passwords / unknown users), acl_denied (6 publishes the ACL denies), "
                  "protocol_garbage (6: HTTP, random bytes, TLS, bad protocol name/level, PUBLISH before CONNECT), "
                  "keepalive_timeout (4 subscribers with keepalive 5s SIGSTOPped), client_id_clash (4x the same client "
                  "id twice), bridge_down (4x the bridged broker SIGKILLed for 4-7s), oversize_packet (4 publishes "
                  "> max_packet_size 64k), persistence_permission_denied (4x persistence dir chowned to root + "
                  "SIGUSR1 save), corrupt_persistence_restart (3x bytes overwritten in mosquitto.db + restart), "
                  "bad_config_restart (5 bad config files)", normal, br.errors)


# --------------------------------------------------------------------------
# BIND named
# --------------------------------------------------------------------------

BIND_HOSTS = ["www", "api", "mail", "smtp", "imap", "vpn", "git", "ci", "grafana", "kibana", "db1", "db2", "cache",
              "lb1", "lb2", "ns1", "ns2", "cdn", "static", "auth", "sso", "wiki", "jira", "backup", "files"]


def bind_zone(origin: str, serial: int, rng: random.Random, extra: str = "") -> str:
    lines = [f"$TTL 300", f"@ IN SOA ns1.{origin}. hostmaster.{origin}. {serial} 3600 600 86400 60",
             f"@ IN NS ns1.{origin}.", f"@ IN MX 10 mail.{origin}.", f'@ IN TXT "v=spf1 mx -all"']
    for i, h in enumerate(BIND_HOSTS):
        if rng.random() < 0.9 or h in ("ns1", "www", "mail", "api"):
            lines.append(f"{h} IN A 10.{hash(origin) % 200}.{i}.{rng.randint(1, 250)}")
        if rng.random() < 0.2:
            lines.append(f"{h} IN AAAA fd00::{i}:{rng.randint(1, 999)}")
    lines += [f"shop IN CNAME www.{origin}.", f"_sip._tcp IN SRV 10 5 5060 vpn.{origin}.", extra]
    return "\n".join(lines) + "\n"


def bind_reverse(serial: int) -> str:
    out = [f"$TTL 300", f"@ IN SOA ns1.example.test. hostmaster.example.test. {serial} 3600 600 86400 60",
           "@ IN NS ns1.example.test."]
    out += [f"{i}.0.0 IN PTR {h}.example.test." for i, h in enumerate(BIND_HOSTS)]
    return "\n".join(out) + "\n"


BIND_CONF = """\
include "{work}/rndc.key";
include "{work}/ddns.key";
controls {{ inet 127.0.0.1 port {rndc} allow {{ 127.0.0.1; }} keys {{ "rndc-key"; }}; }};
acl office {{ 127.0.0.1; }};
options {{
    directory "{work}";
    listen-on port {port} {{ 127.0.0.1; 127.0.0.2; }};
    listen-on-v6 {{ none; }};
    pid-file "{work}/named.pid";
    session-keyfile "{work}/session.key";
    recursion yes;
    allow-recursion {{ office; }};
    forwarders {{ 127.0.0.1 port {upstream}; }};
    forward only;
    allow-transfer {{ none; }};
    querylog yes;
    notify no;
    dnssec-validation no;
    max-cache-ttl 20;
    max-ncache-ttl 5;
    minimal-responses no;
}};
logging {{
    channel main {{ file "{work}/named.log"; print-time yes; print-category yes; print-severity yes; severity info; }};
    category default {{ main; }};
    category queries {{ main; }};
    category lame-servers {{ main; }};
    category query-errors {{ main; }};
}};
zone "example.test" {{ type primary; file "{work}/zones/db.example.test"; }};
zone "shop.test" {{ type primary; file "{work}/zones/db.shop.test"; }};
zone "10.in-addr.arpa" {{ type primary; file "{work}/zones/db.10"; }};
zone "dyn.test" {{ type primary; file "{work}/dyn/db.dyn.test"; allow-update {{ key ddns-key; }}; }};
zone "corp.test" {{ type secondary; primaries {{ 127.0.0.1 port {upstream}; }}; file "{work}/sec/db.corp.test"; }};
"""

UPSTREAM_CONF = """\
include "{work}/ddns.key";
options {{
    directory "{up}";
    listen-on port {upstream} {{ 127.0.0.1; }};
    listen-on-v6 {{ none; }};
    pid-file "{up}/named.pid";
    session-keyfile "{up}/session.key";
    recursion no;
    notify no;
    allow-transfer {{ 127.0.0.1; }};
    dnssec-validation no;
}};
logging {{ channel n {{ null; }}; category default {{ n; }}; }};
zone "corp.test" {{ type primary; file "{up}/db.corp.test"; allow-update {{ key ddns-key; }};
                    notify explicit; also-notify {{ 127.0.0.1 port {port}; }}; }};
zone "partner.test" {{ type primary; file "{up}/db.partner.test"; }};
"""

BIND_HEAD = re.compile(r"^\d\d-\w{3}-\d{4} [\d:.]+ ")


def bind_template(line: str) -> str:
    body = BIND_HEAD.sub("", line)
    body = re.sub(r"@0x[0-9a-f]+", "@0x0", body)
    body = re.sub(r"\([\w.-]+\)", "(NAME)", body)
    body = re.sub(r"'[^']*'", "'_'", body)
    return mask_all(body)


def bind_problem(line: str) -> bool:
    return bool(re.match(r"^\S+ \S+ [\w-]+: (warning|error|critical): ", line))


def bind_echo(line: str) -> bool:
    return bool(re.match(r"^\S+ \S+ queries: info: client ", line))


class BindDriver:
    def __init__(self, work: str, port: int, upstream: int, rndc_conf: str, rng: random.Random):
        self.work, self.port, self.upstream, self.rndc_conf, self.rng = work, port, upstream, rndc_conf, rng
        self.dig, self.nsupdate = need("dig", "bind9-dnsutils"), need("nsupdate", "bind9-dnsutils")
        self.rndc_bin = need("rndc", "bind9")
        self.key = os.path.join(work, "ddns.key")
        self.dyn_hosts: set[str] = set()

    def run(self, argv: list[str], input: str | None = None, timeout: float = 20) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(argv, input=input, text=True, timeout=timeout, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    def rndc(self, *cmd: str, conf: str | None = None) -> None:
        self.run([self.rndc_bin, "-c", conf or self.rndc_conf, *cmd])

    def query_line(self, rng: random.Random, clean: bool = False) -> str:
        zone = rng.choice(["example.test", "example.test", "shop.test", "dyn.test", "corp.test"]
                          + ([] if clean else ["partner.test"]))  # background: nothing forwarded
        r = rng.random()
        if r < 0.1:
            name, qtype = f"{rng.randint(1, 24)}.{rng.randint(0, 3)}.0.10.in-addr.arpa", "PTR"
        else:
            host = rng.choice(BIND_HOSTS + ["shop", "_sip._tcp", "@"])
            if not clean and rng.random() < 0.08:
                host = rng.choice(["wwww", "old-" + rng.choice(BIND_HOSTS), f"host{rng.randint(100, 999)}"])
            name = zone if host == "@" else f"{host}.{zone}"
            qtype = rng.choice(["A", "A", "A", "AAAA", "AAAA", "MX", "TXT", "NS", "SOA", "SRV", "CNAME"])
        flags = rng.choice(["", "", "+norec", "+tcp", "+dnssec", "+nocookie", "+tries=1"])
        return f"{name} {qtype} {flags}".strip()

    def queries(self, rng: random.Random, n: int, clean: bool = False) -> None:
        batch = "\n".join(self.query_line(rng, clean) for _ in range(n))
        self.run([self.dig, "@127.0.0.1", "-p", str(self.port), "+time=3", "+tries=1", "-f", "-"], input=batch)

    def update(self, rng: random.Random, port: int | None = None, zone: str = "dyn.test", key: str | None = "ok",
               add: bool = False) -> None:
        host = f"{rng.choice(['laptop', 'build', 'vm', 'printer', 'phone'])}-{rng.randint(1, 60)}"
        cmds = [f"server 127.0.0.1 {port or self.port}", f"zone {zone}"]
        if not add and rng.random() < 0.3 and self.dyn_hosts and zone == "dyn.test":
            old = rng.choice(sorted(self.dyn_hosts))
            cmds.append(f"update delete {old}.{zone} A")
            self.dyn_hosts.discard(old)
        else:
            cmds.append(f"update add {host}.{zone} {rng.choice([60, 300, 3600])} A 10.42.{rng.randint(0, 255)}.{rng.randint(1, 254)}")
            if zone == "dyn.test":
                self.dyn_hosts.add(host)
            if rng.random() < 0.3:
                cmds.append(f'update add {host}.{zone} 300 TXT "owner={rng.choice(USERS)}"')
        cmds.append("send")
        argv = [self.nsupdate] + (["-k", key if key != "ok" else self.key] if key else [])
        self.run(argv, input="\n".join(cmds) + "\n")

    def background(self, rng: random.Random) -> None:
        self.queries(rng, rng.randint(2, 10), clean=True)
        if rng.random() < 0.15:
            self.update(rng)


def source_bind9(args) -> Source:
    named = need("named", "bind9")
    keygen, confgen = need("tsig-keygen", "bind9"), need("rndc-confgen", "bind9")
    rng = random.Random(f"{args.seed}-bind9")
    user = pwd.getpwnam("bind")
    with tempfile.TemporaryDirectory(prefix="onb-bind-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, rport, uport = free_port(), free_port(), free_port()
        up = os.path.join(work, "upstream")
        for d in ("zones", "dyn", "sec", "upstream"):
            os.makedirs(os.path.join(work, d))
        with open(os.path.join(work, "ddns.key"), "w") as f:
            f.write(subprocess.run([keygen, "-a", "hmac-sha256", "ddns-key"], capture_output=True, text=True,
                                   check=True).stdout)
        subprocess.run([confgen, "-a", "-c", os.path.join(work, "rndc.key"), "-k", "rndc-key", "-A", "hmac-sha256"],
                       check=True, capture_output=True)
        rndc_conf = os.path.join(work, "rndc.conf")
        write_atomic(rndc_conf, f'include "{work}/rndc.key";\noptions {{ default-key "rndc-key"; '
                                f'default-server 127.0.0.1; default-port {rport}; }};\n')
        with open(os.path.join(work, "rndc.key")) as f:
            bad_key = re.sub(r'secret "[^"]+"', 'secret "' + "b2xkLXJuZGMta2V5LWZyb20tMjAxOQ==" + '"', f.read())
        write_atomic(os.path.join(work, "bad-rndc.key"), bad_key)
        write_atomic(os.path.join(work, "bad-rndc.conf"), f'include "{work}/bad-rndc.key";\noptions {{ default-key '
                                                          f'"rndc-key"; default-server 127.0.0.1; default-port {rport}; }};\n')
        with open(os.path.join(work, "ddns.key")) as f:
            write_atomic(os.path.join(work, "bad-ddns.key"), re.sub(r'secret "[^"]+"', 'secret "'
                                                                    "c3RhbGUta2V5LXN0YWxlLWtleS1zdGFsZS1rZXk=" + '"', f.read()))
        write_atomic(os.path.join(work, "other.key"), 'key "laptop-key" {\n\talgorithm hmac-sha256;\n\tsecret '
                                                      '"bGFwdG9wLWtleS1sYXB0b3Ata2V5LWxhcHRvcC0x";\n};\n')
        serial = {"example.test": 2026120101, "shop.test": 2026120101, "corp.test": 1}
        zrng = random.Random(rng.random())
        zone_text = {z: bind_zone(z, serial[z], zrng) for z in ("example.test", "shop.test")}
        for z, text in zone_text.items():
            write_atomic(os.path.join(work, "zones", f"db.{z}"), text)
        write_atomic(os.path.join(work, "zones", "db.10"), bind_reverse(1))
        write_atomic(os.path.join(work, "dyn", "db.dyn.test"), bind_zone("dyn.test", 1, zrng))
        write_atomic(os.path.join(up, "db.corp.test"), bind_zone("corp.test", 1, zrng))
        write_atomic(os.path.join(up, "db.partner.test"), bind_zone("partner.test", 1, zrng))
        conf = os.path.join(work, "named.conf")
        good = BIND_CONF.format(work=work, port=port, rndc=rport, upstream=uport)
        write_atomic(conf, good)
        write_atomic(os.path.join(up, "named.conf"), UPSTREAM_CONF.format(work=work, up=up, port=port, upstream=uport))
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", work], check=True)
        logp = os.path.join(work, "named.log")

        def start():
            sv.start("named", [named, "-f", "-u", "bind", "-c", conf], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, cwd=work)
            wait_port(port)
            wait_port(rport)

        def start_upstream():
            sv.start("upstream", [named, "-f", "-u", "bind", "-c", os.path.join(up, "named.conf")],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=up)
            wait_port(uport)

        start_upstream()
        start()
        drv = BindDriver(work, port, uport, rndc_conf, rng)
        log, normal = FileLog(logp), []
        say(f"named on 127.0.0.1:{port} (rndc :{rport}, upstream primary/forwarder :{uport}); normal phase...")
        t0, n, restarted = time.time(), 0, False
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                drv.queries(rng, rng.randint(5, 40))
                r = rng.random()
                if r < 0.25:
                    drv.update(rng)
                elif r < 0.35:  # the primary of corp.test gets a change: NOTIFY + IXFR/AXFR
                    drv.update(rng, port=uport, zone="corp.test")
                elif r < 0.42:  # zone maintenance: edited zone file, serial bumped, reloaded
                    z = rng.choice(["example.test", "shop.test"])
                    serial[z] += 1
                    zone_text[z] = bind_zone(z, serial[z], zrng)
                    write_atomic(os.path.join(work, "zones", f"db.{z}"), zone_text[z])
                    os.chown(os.path.join(work, "zones", f"db.{z}"), user.pw_uid, user.pw_gid)
                    drv.rndc("reload", z)
                elif r < 0.5:
                    drv.rndc(*rng.choice([("status",), ("zonestatus", "dyn.test"), ("flush",), ("reconfig",),
                                          ("sync", "dyn.test"), ("refresh", "corp.test"), ("retransfer", "corp.test"),
                                          ("stats",), ("reload",), ("flushname", "www.partner.test")]))
                elif r < 0.52:  # an operator edits the dynamic zone by hand
                    drv.rndc("freeze", "dyn.test")
                    time.sleep(0.3)
                    drv.rndc("thaw", "dyn.test")
                if not restarted and time.time() - t0 > 60:
                    drv.rndc("stop")
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        sv.procs["named"].wait(20)
                    sv.stop("named")
                    start()
                    restarted = True
                time.sleep(rng.uniform(0.05, 0.3))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 50 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > 600:
                    break
            time.sleep(1)
            normal += log.read_new()
            templates = {bind_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, bind_template, bind_problem, bind_echo))
            with Background(drv.background, random.Random(rng.random()), (0.2, 0.8)):
                with br.phase("bad_zone_reload"):  # a zone file edited with mistakes, then reloaded
                    z = "example.test"
                    bads = ["printer IN AA 10.0.9.9", "shop IN A 10.0.9.10",  # unknown type, CNAME and other data
                            "nas IN A 10.0.9.300", "www.other.test. IN A 10.0.9.11", "$TTL 5minutes",
                            "mail2 IN MX mail.example.test."]
                    for bad in bads:
                        path = os.path.join(work, "zones", f"db.{z}")
                        serial[z] += 1
                        with br.occurrence(1.5):
                            write_atomic(path, bind_zone(z, serial[z], zrng, extra=bad))
                            os.chown(path, user.pw_uid, user.pw_gid)
                            drv.rndc("reload", z)
                        serial[z] += 1
                        zone_text[z] = bind_zone(z, serial[z], zrng)
                        write_atomic(path, zone_text[z])
                        os.chown(path, user.pw_uid, user.pw_gid)
                        drv.rndc("reload", z)
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_reconfig"):  # named.conf edited with mistakes, then reconfig
                    bads = [good.replace("    recursion yes;", "    recursoin yes;"),
                            good.replace("allow-recursion { office; };", "allow-recursion { offices; };"),
                            good.replace('zone "shop.test" {', 'zone "shop.test" {\n    type primary;', 1),
                            good.replace("max-cache-ttl 20;", "max-cache-ttl 20"),
                            good + 'zone "example.test" { type primary; file "zones/db.example.test"; };\n']
                    for bad in bads:
                        with br.occurrence(1.5):
                            write_atomic(conf, bad)
                            drv.rndc("reconfig")
                        write_atomic(conf, good)
                        drv.rndc("reconfig")
                        time.sleep(1)
                        br.between()
                with br.phase("primary_down"):  # the primary of corp.test / forwarder is down
                    for i in range(4):
                        with br.occurrence(2.0):
                            sv.stop("upstream", signal.SIGKILL)
                            time.sleep(0.5)
                            drv.rndc("refresh", "corp.test")
                            drv.run([drv.dig, "@127.0.0.1", "-p", str(port), "+time=4", "+tries=1",
                                     f"{rng.choice(BIND_HOSTS)}{rng.randint(1, 999)}.partner.test", "A"])
                            time.sleep(1.5)
                            start_upstream()
                        time.sleep(2)
                        br.between()
                with br.phase("axfr_denied"):  # someone tries to pull whole zones
                    for i in range(6):
                        with br.occurrence(1.0):
                            drv.run([drv.dig, "@127.0.0.1", "-p", str(port),
                                     rng.choice(["example.test", "shop.test", "dyn.test", "10.in-addr.arpa"]),
                                     rng.choice(["AXFR", "AXFR", "IXFR=1"])])
                with br.phase("update_denied"):  # DHCP/laptop clients with a stale, foreign or no TSIG key
                    for i in range(6):
                        with br.occurrence(1.0):
                            key = [None, os.path.join(work, "bad-ddns.key"), os.path.join(work, "other.key")][i % 3]
                            zone = "example.test" if i == 5 else "dyn.test"
                            drv.update(rng, zone=zone, key=key if i != 5 else "ok")
                with br.phase("rndc_bad_key"):  # an automation host with an old rndc key
                    for i in range(5):
                        with br.occurrence(1.0):
                            drv.rndc(rng.choice(["reload", "status", "flush", "zonestatus example.test"]).split()[0],
                                     conf=os.path.join(work, "bad-rndc.conf"))
                with br.phase("recursion_denied"):  # a new office subnet not in the recursion ACL
                    for i in range(6):
                        with br.occurrence(1.0):
                            drv.run([drv.dig, "@127.0.0.1", "-p", str(port), "-b", "127.0.0.2", "+time=2", "+tries=1",
                                     rng.choice(["www.partner.test", "api.partner.test", "mail.partner.test",
                                                 f"cdn{rng.randint(1, 99)}.partner.test"]), rng.choice(["A", "AAAA", "MX"])])
                with br.phase("journal_permission_denied"):  # the dynamic zone's directory made read-only
                    dyn = os.path.join(work, "dyn")
                    for i in range(4):
                        drv.rndc("sync", "-clean", "dyn.test")
                        time.sleep(1)
                        br.between()
                        with br.occurrence(1.5):
                            jnl = os.path.join(dyn, "db.dyn.test.jnl")
                            if os.path.exists(jnl):
                                os.remove(jnl)
                            os.chmod(dyn, 0o555)
                            drv.update(rng, add=True)
                            time.sleep(0.5)
                            os.chmod(dyn, 0o755)
                        time.sleep(1)
        finally:
            with contextlib.suppress(Exception):
                drv.rndc("stop")
                sv.procs["named"].wait(15)
            sv.stop("named")
            sv.stop("upstream")
    return Source("bind9", "BIND named", version_of([named, "-v"]),
                  "BIND 9 file channel with print-time/print-category/print-severity: "
                  "`dd-Mon-yyyy hh:mm:ss.mmm category: severity: message`, querylog on",
                  "named -f -u bind at severity info with querylog: 3 authoritative zones + a reverse zone, a dynamic zone "
                  "(nsupdate with TSIG: adds/deletes), a secondary zone transferred from a second named (not logged) "
                  "after its updates (NOTIFY + IXFR), recursion forwarded to it; dig batches over many names and types "
                  "(+tcp/+norec/+dnssec..., some NXDOMAIN), zone files edited + rndc reload, rndc status/zonestatus/"
                  "flush/reconfig/sync/refresh/retransfer/stats/freeze/thaw, one clean restart (rndc stop)",
                  "bad_zone_reload (6 broken zone files + rndc reload), bad_config_reconfig (5 broken named.conf + rndc "
                  "reconfig), primary_down (4x the primary/forwarder SIGKILLed: rndc refresh + a forwarded query), "
                  "axfr_denied (6 AXFR/IXFR requests), update_denied (6 updates with a stale/foreign/no TSIG key or to a "
                  "static zone), rndc_bad_key (5 rndc commands with a wrong key), recursion_denied (6 recursive queries "
                  "from 127.0.0.2, outside the ACL), journal_permission_denied (4 updates with the zone dir read-only)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# vsftpd
# --------------------------------------------------------------------------

FTP_USERS = {"ftp_alice": "Wonder-1", "ftp_bob": "Builder-2", "ftp_carol": "Singer-3", "ftp_dave": "Diver-4",
             "ftp_erin": "Runner-5", "ftp_mallory": "Forbidden-6"}
VSFTPD_CONF = """\
listen=YES
listen_address=127.0.0.1
listen_port={port}
background=NO
anonymous_enable=NO
local_enable=YES
write_enable=YES
local_umask=022
pam_service_name=vsftpd
seccomp_sandbox=NO
isolate=NO
isolate_network=NO
secure_chroot_dir={work}/empty
vsftpd_log_file={work}/vsftpd.log
xferlog_enable=YES
dual_log_enable=YES
xferlog_file={work}/xferlog
log_ftp_protocol=YES
pasv_enable=YES
pasv_min_port={pasv}
pasv_max_port={pasv_max}
userlist_enable=YES
userlist_deny=YES
userlist_file={work}/user_list
max_per_ip=6
max_clients=40
idle_session_timeout=8
data_connection_timeout=10
accept_timeout=4
ftpd_banner=Welcome to the ACME file exchange.
"""
VSFTPD_HEAD = re.compile(r"^\w{3} \w{3} [ \d]\d [\d:]{8} \d{4} \[pid \d+\] ")


def vsftpd_template(line: str) -> str:
    body = VSFTPD_HEAD.sub("", line)
    body = re.sub(r"^\[[^\]]+\] ", "[USER] ", body)
    body = re.sub(r'"(/[^"]*)"', '"PATH"', body)
    body = re.sub(r"\([\d,]+\)", "(ADDR)", body)
    body = re.sub(r"for \S+ \(\d+ bytes\)", "for FILE (0 bytes)", body)
    return mask_all(re.sub(r"\d+\.\d+Kbyte/sec", "RATE", body))


def vsftpd_problem(line: str) -> bool:
    body = VSFTPD_HEAD.sub("", line)
    return bool(re.match(r"^(\[[^\]]+\] )?(FAIL |FTP response: Client \"[^\"]*\", \"[45]\d\d )", body)) \
        or line.startswith("500 OOPS")


def vsftpd_echo(line: str) -> bool:
    body = VSFTPD_HEAD.sub("", line)
    return bool(re.match(r"^(\[[^\]]+\] )?(CONNECT: Client |FTP command: Client )", body))


class FtpDriver:
    FILES = ["report", "invoice", "backup", "export", "photo", "notes", "budget", "dump", "scan", "contract"]

    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng = port, rng
        self.stored: dict[str, list[str]] = {u: [] for u in FTP_USERS}

    def login(self, user: str, password: str | None = None, timeout: float = 15) -> ftplib.FTP:
        f = ftplib.FTP(timeout=timeout)
        f.connect("127.0.0.1", self.port)
        try:
            f.login(user, password or FTP_USERS[user])
        except BaseException:
            f.close()
            raise
        return f

    @contextlib.contextmanager
    def client(self, user: str, password: str | None = None, timeout: float = 15):
        """A breakage's own session: errors are expected; the connection is always closed."""
        f = None
        with contextlib.suppress(OSError, EOFError, ftplib.Error):
            f = self.login(user, password, timeout)
        try:
            yield f  # None when the login failed: the body's calls then fail and are ignored
            if f is not None:
                f.quit()
        except (OSError, EOFError, ftplib.Error, AttributeError):
            pass
        finally:
            if f is not None:
                f.close()

    def session(self, rng: random.Random, clean: bool = False) -> None:
        user = rng.choice([u for u in FTP_USERS if u != "ftp_mallory"])
        try:
            f = self.login(user)
        except (OSError, EOFError, ftplib.Error):
            return
        try:
            f.pwd()
            ops = rng.randint(1, 7)
            for _ in range(ops):
                r = rng.random()
                mine = self.stored[user]
                if r < 0.3 or not mine:
                    name = f"{rng.choice(self.FILES)}-{rng.randint(1, 9999)}.{rng.choice(['csv', 'pdf', 'txt', 'zip', 'jpg'])}"
                    where = rng.choice(["", "incoming/"])
                    data = rng.randbytes(rng.choice([200, 2000, 20000, 150000]))
                    f.storbinary(f"STOR {where}{name}", io.BytesIO(data))
                    mine.append(where + name)
                elif r < 0.5:
                    f.retrbinary(f"RETR {rng.choice(mine)}", lambda b: None)
                elif r < 0.62:
                    where = ["incoming"] if rng.random() < 0.4 else []
                    if rng.random() < 0.5:
                        f.nlst(*where)
                    else:
                        f.dir(*where, lambda listing: None)
                elif r < 0.7:
                    old = mine.pop(rng.randrange(len(mine)))
                    new = old.rsplit(".", 1)[0] + "-final." + old.rsplit(".", 1)[1]
                    f.rename(old, new)
                    mine.append(new)
                elif r < 0.78:
                    f.delete(mine.pop(rng.randrange(len(mine))))
                elif r < 0.84:
                    d = f"tmp-{rng.getrandbits(32):08x}" if clean else f"archive-{rng.randint(2019, 2026)}-{rng.randint(1, 12):02d}"
                    with contextlib.suppress(ftplib.error_perm):
                        f.mkd(d)
                    f.cwd(d)
                    f.cwd("..")
                    if clean or rng.random() < 0.5:
                        with contextlib.suppress(ftplib.error_perm):
                            f.rmd(d)
                elif r < 0.9:
                    f.size(rng.choice(mine))
                    f.sendcmd(f"MDTM {rng.choice(mine)}")
                elif r < 0.95:
                    f.sendcmd("NOOP")
                    f.sendcmd("SYST")
                elif not clean:  # a user mistypes a file name
                    with contextlib.suppress(ftplib.error_perm):
                        f.retrbinary(f"RETR {rng.choice(self.FILES)}-{rng.randint(1, 9999)}.pdf", lambda b: None)
            f.quit()
        except (OSError, EOFError, ftplib.Error):
            with contextlib.suppress(Exception):
                f.close()

    def background(self, rng: random.Random) -> None:
        self.session(rng, clean=True)


def vsftpd_version(binary: str) -> str:
    """`vsftpd -v` prints its version on fd 0 (the control connection), so give it a pipe there."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        r, w = os.pipe()
        subprocess.run([binary, "-v"], stdin=w, stdout=w, stderr=w, timeout=5)
        os.close(w)
        with os.fdopen(r) as f:
            m = re.search(r"\d+\.\d+\.\d+", f.read())
        if m:
            return m.group(0)
    return "unknown"


def source_vsftpd(args) -> Source:
    binary = need("vsftpd", "vsftpd")
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt
    rng = random.Random(f"{args.seed}-vsftpd")
    with tempfile.TemporaryDirectory(prefix="onb-ftp-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        pasv = rng.randint(40000, 59000)
        etc = os.path.join(work, "etc")
        os.makedirs(etc)
        os.makedirs(os.path.join(work, "empty"))
        home = os.path.join(work, "home")
        with open("/etc/passwd") as f:
            passwd = f.read()
        with open("/etc/shadow") as f:
            shadow = f.read()
        with open("/etc/group") as f:
            group = f.read()
        uids = {}
        for i, (u, p) in enumerate(FTP_USERS.items()):
            uid = 42001 + i
            uids[u] = uid
            passwd += f"{u}:x:{uid}:{uid}:{u}:{home}/{u}:/bin/bash\n"
            shadow += f"{u}:{crypt.crypt(p, crypt.mksalt(crypt.METHOD_SHA512))}:20000:0:99999:7:::\n"
            group += f"{u}:x:{uid}:\n"
        for name, text in (("passwd", passwd), ("shadow", shadow), ("group", group)):
            write_atomic(os.path.join(etc, name), text)
        os.chmod(os.path.join(etc, "shadow"), 0o640)
        write_atomic(os.path.join(work, "user_list"), "ftp_mallory\nroot\n")
        os.makedirs(home)
        ns = Namespace(sv, "ftp-ns", " && ".join(
            [f"mount --bind {etc}/{n} /etc/{n}" for n in ("passwd", "shadow", "group")]
            + [f"mkdir -p {home}/{u} && mount -t tmpfs -o size=6m,uid={uid},gid={uid},mode=0755 tmpfs {home}/{u} && "
               f"mkdir {home}/{u}/incoming && chown {uid}:{uid} {home}/{u}/incoming" for u, uid in uids.items()]))
        conf = os.path.join(work, "vsftpd.conf")
        good = VSFTPD_CONF.format(port=port, work=work, pasv=pasv, pasv_max=pasv + 200)
        write_atomic(conf, good)
        logp = os.path.join(work, "vsftpd.log")

        def start(wait=True):
            with open(logp, "ab") as logf:
                sv.start("vsftpd", ns.argv([binary, conf]), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        start()
        drv = FtpDriver(port, rng)
        log, normal = FileLog(logp), []
        say(f"vsftpd on 127.0.0.1:{port}; normal phase...")
        t0, n, restarted = time.time(), 0, False
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                threads = [threading.Thread(target=drv.session, args=(random.Random(rng.random()),), daemon=True)
                           for _ in range(rng.randint(1, 3))]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join(60)
                if not restarted and time.time() - t0 > 45:
                    sv.stop("vsftpd")
                    start()
                    restarted = True
                time.sleep(rng.uniform(0.0, 0.3))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 50 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > 600:
                    break
            time.sleep(1)
            normal += log.read_new()
            templates = {vsftpd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, vsftpd_template, vsftpd_problem, vsftpd_echo))
            with Background(drv.background, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("login_failure"):  # wrong passwords, a brute-force bot, a system account
                    for i in range(8):
                        with br.occurrence(1.0):
                            user = ["ftp_bob", "admin", "root", "ftp_carol", "test", "ftp_alice", "oracle", "ftp_dave"][i]
                            with drv.client(user, rng.choice(["123456", "password", "Builder-1", "letmein"])):
                                pass
                with br.phase("user_denied"):  # an account on the deny list
                    for i in range(4):
                        with br.occurrence(1.0):
                            with drv.client("ftp_mallory"):
                                pass
                with br.phase("upload_permission_denied"):  # a deploy script chowned the upload dir to root
                    for i in range(5):
                        user = rng.choice(["ftp_alice", "ftp_bob", "ftp_dave"])
                        with br.occurrence(1.0):
                            ns.run(f"chown 0:0 {home}/{user}/incoming")
                            with drv.client(user) as f:
                                with contextlib.suppress(ftplib.Error):
                                    f.storbinary(f"STOR incoming/{rng.choice(drv.FILES)}-{rng.randint(1, 999)}.csv",
                                                 io.BytesIO(rng.randbytes(3000)))
                                with contextlib.suppress(ftplib.Error):
                                    f.mkd(f"incoming/batch-{rng.randint(1, 99)}")
                            ns.run(f"chown {uids[user]}:{uids[user]} {home}/{user}/incoming")
                with br.phase("disk_full"):  # the upload filesystem is full
                    for i in range(5):
                        user = rng.choice(["ftp_carol", "ftp_erin"])
                        with br.occurrence(1.0):
                            ns.run(f"dd if=/dev/zero of={home}/{user}/.fill bs=64k 2>/dev/null; true")
                            with drv.client(user) as f:
                                with contextlib.suppress(ftplib.Error):
                                    f.storbinary(f"STOR incoming/{rng.choice(drv.FILES)}-{rng.randint(1, 999)}.zip",
                                                 io.BytesIO(rng.randbytes(300000)))
                            ns.run(f"rm -f {home}/{user}/.fill")
                with br.phase("protocol_garbage"):  # scanners, HTTP clients, broken FTP clients
                    payloads = [b"GET / HTTP/1.1\r\nHost: ftp.example.test\r\n\r\n", rng.randbytes(60) + b"\r\n",
                                b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + rng.randbytes(30),
                                b"USER\r\nPASS\r\nSITE EXEC /bin/sh\r\n", b"HELP\r\nFEAT\r\nAUTH TLS\r\nPBSZ 0\r\n",
                                b"USER ftp_alice\r\nPASS " + b"A" * 600 + b"\r\n"]
                    for p in payloads:
                        with br.occurrence(1.5):
                            raw_send(port, p, 1.0)
                with br.phase("too_many_connections"):  # a sync tool opening connection after connection
                    for i in range(4):
                        with br.occurrence(1.0):
                            socks = []
                            for _ in range(8):
                                with contextlib.suppress(OSError):
                                    s = socket.create_connection(("127.0.0.1", port), 5)
                                    socks.append(s)
                                    time.sleep(0.1)
                            time.sleep(0.5)
                            for s in socks:
                                s.close()
                        time.sleep(1)
                with br.phase("idle_timeout"):  # clients that log in and go silent
                    for i in range(4):
                        with br.occurrence(1.0):
                            with drv.client(rng.choice(["ftp_alice", "ftp_dave"])):
                                time.sleep(9.5)
                with br.phase("data_connection_timeout"):  # PASV answered, the data connection never comes (firewall)
                    for i in range(4):
                        user = rng.choice(["ftp_alice", "ftp_bob", "ftp_dave"])
                        with drv.client(user) as f:  # a file to fetch (outside the window)
                            name = f"export-{rng.randint(1, 9999)}.csv"
                            f.storbinary(f"STOR {name}", io.BytesIO(rng.randbytes(5000)))
                        time.sleep(0.5)
                        br.between()
                        with br.occurrence(1.0):
                            with drv.client(user) as f:
                                f.voidcmd("TYPE I")
                                f.sendcmd("PASV")
                                f.putcmd(f"RETR {name}")
                                with contextlib.suppress(ftplib.Error, OSError, EOFError):
                                    f.getresp()  # 425 once accept_timeout (4 s) has passed
                with br.phase("too_many_users"):  # a crawler farm (many source addresses) takes every slot
                    for i in range(4):
                        with br.occurrence(1.0):
                            socks = []
                            for j in range(45):
                                with contextlib.suppress(OSError):
                                    s = socket.socket()
                                    socks.append(s)
                                    s.bind((f"127.0.0.{2 + j % 9}", 0))
                                    s.settimeout(5)
                                    s.connect(("127.0.0.1", port))
                                    time.sleep(0.02)
                            time.sleep(0.5)
                            for s in socks:
                                s.close()
                        time.sleep(1.5)
        finally:
            sv.stop("vsftpd")
    return Source("vsftpd", "vsftpd", vsftpd_version(binary),
                  "vsftpd_log_file with log_ftp_protocol=YES (`Ddd Mmm dd hh:mm:ss yyyy [pid N] [user] message`: CONNECT, "
                  "FTP command/response, OK/FAIL LOGIN/UPLOAD/DOWNLOAD...), plus vsftpd's stderr (`500 OOPS: ...`)",
                  "log_ftp_protocol=YES + dual_log_enable (the default logs only transfers); 5 local users (PAM, in a mount "
                  "namespace with private /etc/passwd|shadow|group) with 6 MB tmpfs homes; python ftplib sessions "
                  "(1-3 concurrent): login, PWD, uploads (200 B-150 KB) to home/incoming, downloads, NLST/LIST, renames, "
                  "deletes, MKD/CWD/RMD, SIZE/MDTM, NOOP/SYST, a few downloads of missing files (550); one clean restart",
                  "login_failure (8 wrong passwords/unknown users/root), user_denied (4 logins of a user_list-denied "
                  "account), upload_permission_denied (5x incoming dir chowned to root + STOR/MKD), disk_full (5x home "
                  "tmpfs filled + 300 KB STOR), protocol_garbage (6: HTTP, random bytes, TLS, SITE EXEC, AUTH TLS, an "
                  "oversized PASS), too_many_connections (4x 8 connections > max_per_ip 6), idle_timeout (4 sessions "
                  "idle past idle_session_timeout 8s), data_connection_timeout (4x PASV + RETR without a data "
                  "connection, 425 after accept_timeout 4s), too_many_users (4x 45 connections from 9 addresses > "
                  "max_clients 40)", normal, br.errors)


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------

def write_source(out: str, src: Source, max_lines: int) -> dict:
    d = os.path.join(out, src.name)
    os.makedirs(d, exist_ok=True)
    normal = src.normal[:max_lines]
    write_atomic(os.path.join(d, "normal.log"), "".join(x + "\n" for x in normal))
    write_atomic(os.path.join(d, "errors.log"), "".join(x + "\n" for x, _, _ in src.errors))
    write_atomic(os.path.join(d, "errors.jsonl"), "".join(json.dumps({"line": x, "kind": k, "event": e}) + "\n"
                                                          for x, k, e in src.errors))
    kinds: dict[str, int] = {}
    for _, k, _ in src.errors:
        kinds[k] = kinds.get(k, 0) + 1
    return {"name": src.name, "program": src.program, "version": src.version, "format_hint": src.format_hint,
            "normal_lines": len(normal), "error_lines": len(src.errors), "error_kinds": kinds,
            "how_normal": src.how_normal, "how_errors": src.how_errors,
            "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def generators() -> dict:
    return {"redis": source_redis, "haproxy": source_haproxy, "mosquitto": source_mosquitto, "bind9": source_bind9, "vsftpd": source_vsftpd}


def generate(ap, args, gens: dict, sources: list[str], doc: str) -> int:
    """onboarding_data.generate with events in errors.jsonl (and per-source event counts in the manifest)."""
    wanted = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = set(wanted) - set(gens)
    if unknown:
        ap.error(f"unknown sources: {', '.join(sorted(unknown))}")
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    entries = {}
    if os.path.exists(manifest_path):  # regenerating a subset keeps the other sources' entries
        with open(manifest_path) as f:
            entries = {e["name"]: e for e in json.load(f).get("sources", [])}
    t0, failed = time.time(), []
    for name in wanted:
        say(f"== {name}")
        t1 = time.time()
        try:
            src = gens[name](args)
        except MissingProgram as e:
            say(f"SKIPPING {name}: {e}")
            failed.append(name)
            continue
        except Exception as e:  # keep going with the other sources
            import traceback
            traceback.print_exc()
            say(f"FAILED {name}: {type(e).__name__}: {e}")
            failed.append(name)
            continue
        entries[name] = write_source(args.out, src, args.lines)
        events: dict[str, set] = {}
        for _, k, e in src.errors:
            events.setdefault(k, set()).add(e)
        say(f"   {name}: {entries[name]['normal_lines']} normal, {entries[name]['error_lines']} error lines in "
            f"{sum(len(v) for v in events.values())} events {({k: len(v) for k, v in events.items()})} "
            f"({time.time() - t1:.0f}s)")
    manifest = {"generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "command": "python " + shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
                "seed": args.seed, "lines_per_source": args.lines,
                "error_rule": doc.split("How normal and error lines are separated")[1].split("\n\nUsage")[0].strip(),
                "sources": [entries[n] for n in sources if n in entries]}
    write_atomic(manifest_path, json.dumps(manifest, indent=2) + "\n")
    size = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(args.out) for fn in fns)
    say(f"done in {time.time() - t0:.0f}s; corpus {size / 1e6:.2f} MB in {args.out}"
        + (f"; failed/skipped: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main() -> int:
    ap = arguments(__doc__, "onboarding_heldout", SOURCES, seed=4242)
    ap.add_argument("--min-normal-seconds", dest="min_normal_s", type=float, default=120,
                    help="shortest normal phase of each source (default 120)")
    args = ap.parse_args()
    args.lines = min(args.lines, HARD_CAP)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # a TERM still stops every child (Services)
    if os.geteuid() != 0:
        print("run as root (mount namespaces with tmpfs, programs dropping to their own users)", file=sys.stderr)
        return 2
    return generate(ap, args, generators(), SOURCES, __doc__)


if __name__ == "__main__":
    sys.exit(main())
