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
            Broken: garbage on the port (protocol errors), HTTP sent to it (cross-protocol attack
            detection), a client over its output-buffer limit, the fork child of a save / AOF rewrite
            SIGKILLed, the tmpfs filled up (ENOSPC on RDB/AOF), the data dir made read-only
            (EACCES), pointed at a master that is down (REPLICAOF), SIGSEGV crash (bug report), a
            SIGKILL + truncated AOF on restart, a bad config file on restart.
  haproxy   HAProxy 2.6 in master-worker mode (-W), its stdout+stderr: `log stdout format raw` with
            `option httplog` (+ captured User-Agent) and `option log-health-checks`, plus the
            master's/workers' `[NOTICE]/[WARNING]/[ALERT] (pid) : ...` messages.  Normal: 3
            frontends / 4 backends of local python HTTP servers (shop pages, API, auth, static),
            browsers / apps / bots with varied paths, methods, statuses (incl. some 404/401/304),
            config reloads (SIGUSR2) changing weights/servers, one clean restart.
            Broken: a backend server SIGKILLed (health checks DOWN, 503s), the whole API backend down,
            backend answering 500, backend too slow (server timeout, 504), clients sending garbage /
            TLS to the HTTP port (400), clients stalling mid-request (408), a request queue overflowing
            maxconn (queue timeout 503), a bad config reload, the worker SIGKILLed.
  mosquitto mosquitto 2.0 (drops to user mosquitto), `log_dest stderr`, `log_type all` (the default
            logs only connects/disconnects), `epoch: message` lines.  Normal: mosquitto_pub /
            mosquitto_sub clients (sensors, dashboards, backends; QoS 0/1/2, retained messages,
            wills, clean and persistent sessions) with a password file and ACLs, a bridge to a second
            broker (not logged), persistence autosaves, config reloads (SIGHUP), one clean restart.
            Broken: wrong passwords / unknown users, publishes and subscriptions the ACL denies,
            garbage / HTTP on the MQTT port, a frozen client past its keepalive, a client id used
            twice, the bridged broker killed, the persistence dir full (tmpfs) or read-only on
            save (SIGUSR1), a bad config on restart.
  bind9     BIND named 9.18 (-f -u bind), a file channel with print-time/print-category/
            print-severity (`dd-Mon-yyyy hh:mm:ss.mmm category: severity: message`), querylog on.
            Normal: authoritative zones (example.test, shop.test, a reverse zone), a dynamic zone
            updated with nsupdate + TSIG, a secondary zone transferred from a second named (not
            logged) that gets updates and NOTIFYs, recursion forwarded to that named, dig queries of
            many names/types (some NXDOMAIN), rndc reload/reconfig/flush/status/zonestatus, one clean
            restart.
            Broken: zone files with syntax errors reloaded, a bad named.conf reconfigured, the primary
            / forwarder killed (refresh failures, SERVFAIL), AXFR from a host not allowed, dynamic
            updates with a bad or no TSIG key, rndc with a wrong key, malformed DNS packets, the zone
            directory made unwritable for the journal.
  vsftpd    vsftpd 3.0 (standalone, listen=YES, background=NO) with log_ftp_protocol=YES and
            dual_log_enable=YES: its vsftpd_log_file (`Ddd Mmm dd hh:mm:ss yyyy [pid N] [user] ...`,
            plus its stderr).  It runs in a private mount namespace where /etc/passwd, /etc/shadow and
            /etc/group are bind-mounted copies holding the FTP users (nothing under /etc is touched)
            and the upload area is a small tmpfs.  Normal: python ftplib clients logging in, listing,
            uploading, downloading, renaming, deleting, making dirs (a few downloads of missing files).
            Broken: wrong passwords, users that are not allowed to log in, uploads to a read-only dir,
            uploads to a full disk, garbage / HTTP / unknown commands, clients idle past the session
            timeout, too many connections from one address, a bad config on restart.

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
"New connection"/"Received ..." lines, BIND query-log lines, vsftpd
"CONNECT"/"FTP command:" lines).  Lines of an entry that spans several lines
(redis crash reports and fatal config errors) are kept with their entry.

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
import ssl
import struct
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
        conf = os.path.join(work, "redis.conf")
        write_atomic(conf, REDIS_CONF.format(port=port, data=data))
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
                for _ in range(rng.randint(5, 25)):
                    app.app_round(rng)
                for _ in range(rng.randint(0, 3)):
                    app.oneshot(rng)
                r = rng.random()
                with contextlib.suppress(Exception):
                    if r < 0.04:
                        admin("BGSAVE")
                    elif r < 0.07:
                        admin("BGREWRITEAOF")
                    elif r < 0.09:
                        admin("CONFIG", "SET", "maxmemory", f"{rng.choice([64, 128, 256])}mb")
                        admin("CONFIG", "REWRITE")
                    elif r < 0.11:  # the replica is detached for maintenance and re-attached
                        c = Resp(rport)
                        c.call("REPLICAOF", "NO", "ONE")
                        time.sleep(rng.uniform(0.5, 3))
                        c.call("REPLICAOF", "127.0.0.1", port)
                        c.close()
                    elif r < 0.12:
                        sv.stop("replica")
                        time.sleep(1)
                        start_replica()
                if restarts < 2 and time.time() - t0 > 40 * (restarts + 1):  # routine restarts (upgrade, config)
                    app.close()
                    shutdown()
                    time.sleep(1)
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.05, 0.4))
                normal += log.read_new()
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
                    for payload in [b"*abc\r\n", b"*3\r\n$3\r\nSET\r\n$-7\r\n", b"SET \"unbalanced value\r\n",
                                    b"*1\r\n$999999999999\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                                    b"*2\r\n$3\r\nGET\r\nkey\r\n", rng.randbytes(64), b"*-10\r\n$3\r\nfoo\r\n"]:
                        with br.occurrence(1.0):
                            raw_send(port, payload, 0.3)
                with br.phase("http_to_redis_port"):  # SSRF / misrouted HTTP health checks
                    for req in [b"GET / HTTP/1.1\r\nHost: cache.internal:6379\r\n\r\n",
                                b"POST /api/v1/keys HTTP/1.1\r\nHost: 10.0.0.5\r\nContent-Length: 2\r\n\r\n{}",
                                b"GET /health HTTP/1.0\r\nUser-Agent: kube-probe/1.27\r\nHost: redis\r\n\r\n",
                                b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nFLUSHALL\r\n",
                                b"GET /metrics HTTP/1.1\r\nHost: redis-0.redis:6379\r\nAccept: */*\r\n\r\n"]:
                        with br.occurrence(1.0):
                            raw_send(port, req, 0.3)
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
                                for _ in range(60):
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
                    for i in range(3):
                        for _ in range(30):
                            app.app_round(rng)
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
                    for bad in [good.replace("maxclients 200", "maxclients 200 # cap"),
                                good.replace("appendfsync everysec", "appendfsync sometimes"),
                                good.replace("save 30 200 10 2000", "save 30"),
                                good + "maxmemory 2 gigabytes\n",
                                good.replace("loglevel verbose", "loglevel chatty")]:
                        app.close()
                        shutdown()
                        bad_conf = os.path.join(work, "redis-new.conf")
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
                  "protocol_error (8 garbage payloads), http_to_redis_port (5 HTTP requests: cross-protocol "
                  "attack detection), output_buffer_limit (5 clients LRANGE-ing a 30k list without reading, 3 stuck "
                  "subscribers), fork_child_killed (6 SIGKILLs of the BGSAVE/BGREWRITEAOF child), disk_full (5x "
                  "tmpfs filled with dd + BGSAVE), permission_denied (5x data dir chmod 0555 + BGSAVE/BGREWRITEAOF), "
                  "master_unreachable (5x REPLICAOF a closed port for 3s), crash_signal (3 SIGSEGV, bug report), "
                  "truncated_aof (3x SIGKILL + torn AOF tail + restart), bad_config_restart (5 bad config files)",
                  normal, br.errors)


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
    events = {}
    for _, k, e in src.errors:
        events.setdefault(k, set()).add(e)
    return {"name": src.name, "program": src.program, "version": src.version, "format_hint": src.format_hint,
            "normal_lines": len(normal), "error_lines": len(src.errors), "error_kinds": kinds,
            "error_events": len({e for _, _, e in src.errors}),
            "error_events_by_kind": {k: len(v) for k, v in events.items()},
            "how_normal": src.how_normal, "how_errors": src.how_errors,
            "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def generators() -> dict:
    return {"redis": source_redis}


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
        say(f"   {name}: {entries[name]['normal_lines']} normal, {entries[name]['error_lines']} error lines in "
            f"{entries[name]['error_events']} events {entries[name]['error_events_by_kind']} ({time.time() - t1:.0f}s)")
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
