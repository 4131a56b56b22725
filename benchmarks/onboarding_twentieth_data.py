#!/usr/bin/env python3
"""Generate the twentieth onboarding corpus: real log lines written by real programs, grouped into events.

A twentieth corpus built exactly like benchmarks/onboarding_nineteenth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs at a restart and at a reload,
stopped, hanging and misbehaving backends, killed and frozen processes, wrong passwords and tokens, garbage on
the wire, corrupt files...).  It never writes a log line itself (the public registry behind verdaccio's uplink,
the web and database services behind icinga2's checks and the BGP speakers peering with bgpd are small
programs of this script that print nothing into a log; icinga2's probe and notification scripts are shell
scripts of this script whose output icinga2 logs as it logs any plugin's; bgpd's zebra is a real process whose
own log is thrown away).  The programs trace multi-step work per named item (a git:// connection from its
address through the client's attributes and the service request to its end in git daemon, an npm request
from its arrival through the access checks, the uplink fetch and the response in verdaccio, a client session
from its connection through each request to its close in ZooKeeper, a check from its command through its
exit code and state change to the notification in icinga2, a BGP session from its connection through the
OPEN, each UPDATE and prefix to its end in bgpd).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends git frr zookeeper icinga2
monitoring-plugins-basic openssl nodejs npm, then npm install -g verdaccio@5.33.0; also util-linux (setpriv),
coreutils and python3.  The clients are python code in this script (git:// requests, the npm registry API, the
ZooKeeper protocol, the Icinga 2 REST API over TLS, BGP) and real CLIs (git clone / fetch / push / ls-remote /
archive, npm, vtysh).  No system service of these packages needs to run: each daemon is started directly as a
plain process, without systemd, in a private temporary folder with private ports on 127.0.0.x; git daemon and
verdaccio run as nobody, ZooKeeper as zookeeper, icinga2 drops to nagios, bgpd and zebra to frr; no user is
created):

  git_daemon  git daemon 2.39 (--verbose --log-destination=stderr --informative-errors, as nobody, its stderr,
              no time stamps): `[4242] Connection from 127.0.0.3:40123`, `[4242] Extended attribute "host":
              git.onb20.test:9418`, `[4242] Request upload-pack for '/webapp.git'`, `[4240] [4242] Disconnected`,
              and what the services it starts say on the same stderr (`[4242] fatal: git upload-pack: not our
              ref 1111...`, `error: upload-pack died of signal 9`).  Normal: CI pollers and mirrors on 6
              addresses asking for refs (v0 and v2 ls-refs), developers cloning, fetching, committing and
              pushing topic branches, tags and main, CI runners' shallow clones, release tooling's git
              archive, an admin creating, removing and repacking repositories; 2 clean restarts.  Broken:
              repositories not exported, missing, paths leaving the base path, services a repository turned
              off, garbage on the port, bad wants, silent and stalled clients, repositories broken on disk,
              upload-packs killed, a broken command line / the port taken at a restart.
  verdaccio   Verdaccio 5.33, a private npm registry on Node.js (log format json at level trace, as nobody, its
              stdout): pino JSON lines with numeric levels (10 trace, 25 http, 30 info, 40 warn, 50 error, 60
              fatal): `{"level":25,"time":1796631525158,"pid":32194,"hostname":"vm","sub":"in","request":
              {"method":"GET","url":"/lodash"},"user":null,"remoteIP":"127.0.0.3","status":200,"bytes":{"in":0,
              "out":1155},"msg":"200, user: null(127.0.0.3), req: 'GET /lodash', bytes: 0/1155"}`.  Normal:
              npm clients on 6 addresses installing (metadata then tarballs) scoped packages of the company
              and public ones proxied from a python uplink, npm view / whoami / search / ping, logins, the
              release team publishing new versions and moving dist-tags, the real npm CLI on the build host,
              an admin adding and removing accounts in htpasswd; 2 clean restarts.  Broken: wrong passwords,
              unknown users, bad tokens, publishes without the right, versions published twice, broken
              publish bodies, the uplink down / hanging / failing / answering garbage / sending a truncated
              tarball, missing packages and tarballs, a damaged storage, a broken config.yaml / the port
              taken at a restart.
  zookeeper   Apache ZooKeeper 3.8 standalone (log4j to its log file, request tracing at DEBUG, as zookeeper):
              `2026-12-07 05:40:01,123 [myid:] - DEBUG [SyncThread:0:FinalRequestProcessor@148] - Processing
              request:: sessionid:0x100015576160028 type:create cxid:0x1 zxid:0x2 txntype:1 reqpath:n/a`, `...
              INFO  [SessionTracker:ZooKeeperServer@632] - Expiring session 0x100015576160061, timeout of 2000ms
              exceeded`, Java exceptions and stack traces on the lines after a WARN / ERROR.  Normal: services on
              5 addresses registering ephemeral instances, reading their configuration with watches, a deploy
              tool's conditional writes, locks, leader elections, a work queue, digest-authenticated secrets,
              long-lived gateway sessions pinging, four-letter-word monitoring; 2 clean restarts.  Broken:
              garbage on the port, oversized requests, words outside the whitelist, unknown auth schemes,
              sessions expiring, clients ahead of the server's zxid, too many connections from one host, the
              server frozen, a damaged data directory and a broken zoo.cfg / the port taken at a restart.
  icinga2     Icinga 2.13 (icinga2 daemon -x notice, its console log on stdout, dropping to nagios): `[2026-12-07
              05:40:01 +0000] notice/Process: Running command '/usr/lib/nagios/plugins/check_http' '-I' '127.0.0.1'
              ...: PID 4242`, `... information/HttpServerConnection: Request: GET /v1/objects/hosts (from
              [127.0.0.3]:40123), user: dashboard, agent: icingaweb2/2.11.4, status: OK).`, config errors with
              their location and source lines after the time-stamped line.  Normal: 6 hosts with dummy, http,
              tcp and application probe checks every few seconds against python services, passive backup
              results, dashboards and Grafana on the REST API, a deploy pipeline adding comments, downtimes and
              rechecks, an admin's reads, notifications of downtimes to the on-call script, reloads (SIGHUP); 2
              clean restarts.  Broken: wrong passwords, unknown API users, missing permissions, bad requests,
              unknown objects, bad passive results, garbage on the TLS port, services down, checks timing out,
              a probe missing / not executable / crashing / printing garbage, the notification script failing
              and hanging, a bad config at a reload, a broken icinga2.conf / a missing certificate / the port
              taken at a restart.
  bgpd        FRRouting 8.4 bgpd (without kernel routes, nexthops tracked by its zebra, log file at debugging
              with neighbor-events, updates and keepalives debugging and log commands, as frr): `2026/12/07
              05:40:01.123 BGP: [YCKEM-GB33T] 127.0.0.6(Unknown) rcvd 94.179.10.0/24 IPv4 unicast`, `...
              BGP: [HZN6M-XRM1G] %NOTIFICATION: sent to neighbor 127.0.0.4 2/2 (OPEN Message Error/Bad Peer AS)
              2 bytes fe 14`, error-coded messages (`BGP: [MJ4D6-VBJKV][EC 33554454] ...`).  Normal: a route
              server for 6 python BGP speakers (two transits, two customers behind prefix-lists, an IX peer,
              an iBGP edge) announcing, withdrawing and re-announcing prefixes with changing attributes and
              keepalives, operators on vtysh (show commands, soft clears, description and policy changes, a
              session reset); 2 clean restarts.  Broken: unknown peers, wrong peer AS numbers, OPENs with a bad
              version / hold time / router id, malformed UPDATEs, routes the policy rejects, a customer past
              its maximum-prefix, peers frozen past the hold time, sessions reset, peers' NOTIFICATIONs, garbage
              on the port, a broken bgpd.conf / the port taken at a restart.

Layout written under --out (default benchmarks/data/onboarding_twentieth):

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

  * its level marks it as a problem (git daemon connections that ended with an
    error and its services' fatal / error messages, refused and aliased paths,
    services not enabled; verdaccio records of level 40 or more (not the 'http
    address' line every start writes) and records carrying an error; ZooKeeper
    WARN / ERROR / FATAL entries with their exception and stack trace lines and
    messages of expired sessions, refused sessions and words not executed;
    icinga2 warning / critical entries with their location and source lines,
    API requests whose status is not OK and checkables going CRITICAL, WARNING,
    UNKNOWN or DOWN; bgpd error-coded messages, NOTIFICATIONs sent and received
    (not Cease / Administrative Shutdown) and sessions leaving Established; and
    what any of them says on stderr at a failed start), where a problem word
    counts only as a word of the message, never inside a path, a file name, a
    domain name, a quoted name or the text a client sent, or
  * its template (the message with the time stamp, numbers, quoted strings, hex
    ids, IPs and ports masked; repository paths, package names, znode paths,
    URLs, prefixes, AS paths, communities, thread names and the values of JSON
    fields other than the level, the message, the status and the error masked
    too) never occurred in the normal phase.

An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_twentieth_data.py --out benchmarks/data/onboarding_twentieth \\
        [--sources git_daemon,verdaccio,zookeeper,icinga2,bgpd] [--lines 6000] [--seed 20020] [--min-normal-seconds 75]
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_blind_data import ModeServer, QuietHandler
from onboarding_data import FileLog, MissingProgram, free_port, need, say, write_atomic
from onboarding_eighteenth_data import raw_tcp
from onboarding_eighth_data import tcp_blocker
from onboarding_eleventh_data import dpkg_version, templater
from onboarding_fifteenth_data import PROBLEM_WORDS, burst, has_problem_word, listening
from onboarding_fifth_data import clean_restart, normal_loop, proc_cmdlines, run
from onboarding_heldout_data import USERS, WORDS, Background, Breaker, Group, Source, entry_selector
from onboarding_sixth_data import TLS_HELLO

SOURCES = ["git_daemon", "verdaccio", "zookeeper", "icinga2", "bgpd"]
HOSTS = [f"127.0.0.{i}" for i in range(2, 10)]
CLIENTS = HOSTS[:6]  # 127.0.0.2-7; .8 and .9 are outsiders
OUTSIDERS = HOSTS[6:]


def setpriv(user: str, group: str, argv: list[str]) -> list[str]:
    return [need("setpriv", "util-linux"), f"--reuid={user}", f"--regid={group}", "--clear-groups"] + argv


def chown_tree(path: str, user: str, group: str) -> None:
    subprocess.run(["chown", "-R", f"{user}:{group}", path], check=True)


def quiet(argv: list[str], timeout: float = 30, env: dict | None = None, cwd: str | None = None,
          stdin: bytes | None = None) -> int:
    """A client program run to its end, its output thrown away; its exit code (-1 on a timeout)."""
    try:
        return subprocess.run(argv, check=False, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                              timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL).returncode
    except subprocess.TimeoutExpired:
        return -1


# --------------------------------------------------------------------------
# git_daemon (git daemon --verbose --log-destination=stderr, as nobody, its stderr)
# --------------------------------------------------------------------------

GIT_REPOS = ["webapp", "infra", "docs", "mobile-app", "libparse", "website"]
GIT_FILES = ["README.md", "src/main.py", "src/util.py", "docs/index.md", "Makefile", "config/app.yaml", "tests/test_main.py"]
GIT_HEAD = re.compile(r"^\[\d+\] (?:\[\d+\] )?")
git_template = templater(GIT_HEAD, (r"'[^']*'", "'P'"), (r"\b[0-9a-f]{40}\b", "SHA"), (r"(?<=: )\S+:\d+$", "HOST"),
                         (r"/[\w./~-]+", "PATH"))
GIT_PROBLEM = PROBLEM_WORDS + r"|aliased|not exported|not enabled|not allowed|does not appear|died|protocol error|not our ref|corrupt"
GIT_PROXY = """\
import os, socket, sys, threading
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])), 10, source_address=(os.environ["ONB_SRC"], 0))
def up():
    while True:
        d = os.read(0, 65536)
        if not d:
            s.shutdown(socket.SHUT_WR)
            return
        s.sendall(d)
threading.Thread(target=up, daemon=True).start()
while True:
    d = s.recv(65536)
    if not d:
        break
    os.write(1, d)
"""


def git_problem(line: str) -> bool:
    body = GIT_HEAD.sub("", line, count=1)
    if body.startswith(("Extended attribute", "Request ")):
        return False  # what the client sent
    if "(with error)" in body:
        return True
    return has_problem_word(re.sub(r"'[^']*'", "''", body), GIT_PROBLEM)


def pkt(data: str | bytes) -> bytes:
    data = data.encode() if isinstance(data, str) else data
    return b"%04x" % (len(data) + 4) + data


def git_poll(port: int, repo: str, src: str, host: str, v2: bool = False, timeout: float = 5) -> int:
    """A CI poller / mirror asking for the refs of a repository over git:// (v0 advertisement or v2 ls-refs)."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout, source_address=(src, 0))
    except OSError:
        return -1
    refs = 0
    with contextlib.suppress(OSError), s:
        s.settimeout(timeout)
        s.sendall(pkt(f"git-upload-pack /{repo}\0host={host}\0" + ("\0version=2\0" if v2 else "")))
        f = s.makefile("rb")

        def read_until_flush() -> int:
            n = 0
            while True:
                head = f.read(4)
                if len(head) < 4 or head in (b"0000", b"0001"):
                    return n
                size = int(head, 16)
                f.read(size - 4)
                n += 1
        if v2:
            read_until_flush()  # the capability advertisement
            s.sendall(pkt("command=ls-refs\n") + pkt("agent=git/2.39.5\n") + b"0001" + pkt("peel\n") + pkt("symrefs\n")
                      + pkt("ref-prefix HEAD\n") + pkt("ref-prefix refs/heads/\n") + pkt("ref-prefix refs/tags/\n") + b"0000")
            refs = read_until_flush()
        else:
            refs = read_until_flush()
        s.sendall(b"0000")
        time.sleep(0.05)
    return refs


def source_git_daemon(args) -> Source:
    git = need("git", "git")
    rng = random.Random(f"{args.seed}-git")
    with tempfile.TemporaryDirectory(prefix="onb20-git-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, base = os.path.join(work, "git-daemon.log"), os.path.join(work, "srv", "git")
        home = os.path.join(work, "home")
        for d in (base, home):
            os.makedirs(d)
        port = free_port()
        proxy = os.path.join(work, "gitproxy.py")
        write_atomic(proxy, f"#!{sys.executable}\n" + GIT_PROXY)
        os.chmod(proxy, 0o755)
        write_atomic(os.path.join(home, ".gitconfig"), "[safe]\n\tdirectory = *\n[init]\n\tdefaultBranch = main\n"
                     "[advice]\n\tdetachedHead = false\n")
        base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_TERMINAL_PROMPT": "0", "GIT_PROXY_COMMAND": proxy, "LC_ALL": "C"}

        def env_for(src: str, user: str = "ci") -> dict:
            return base_env | {"ONB_SRC": src, "GIT_AUTHOR_NAME": user.capitalize(), "GIT_AUTHOR_EMAIL": f"{user}@onb20.test",
                               "GIT_COMMITTER_NAME": user.capitalize(), "GIT_COMMITTER_EMAIL": f"{user}@onb20.test"}

        def g(*argv: str, cwd: str | None = None, src: str = "127.0.0.2", user: str = "ci", timeout: float = 30) -> int:
            return quiet([git, *argv], timeout, env_for(src, user), cwd)

        def url(repo: str, host: str = "git.onb20.test") -> str:
            return f"git://{host}:{port}/{repo}.git"

        def new_repo(name: str, export: bool = True) -> None:
            path = os.path.join(base, name + ".git")
            g("init", "-q", "--bare", path)
            seed = os.path.join(work, "seed-" + name)
            g("init", "-q", seed)
            for fn in ["README.md"] + rng.sample(GIT_FILES[1:], 3):
                os.makedirs(os.path.dirname(os.path.join(seed, fn)) or seed, exist_ok=True)
                write_atomic(os.path.join(seed, fn), f"# {name} {fn}\n" + "".join(f"line {rng.choice(WORDS)} {k}\n" for k in range(20)))
                g("add", fn, cwd=seed, user=rng.choice(USERS[:6]))
                g("commit", "-q", "-m", f"{rng.choice(['Add', 'Update', 'Fix'])} {fn}", cwd=seed, user=rng.choice(USERS[:6]))
            g("tag", "v1.0.0", cwd=seed)
            g("push", "-q", path, "main", "v1.0.0", cwd=seed)
            shutil.rmtree(seed, ignore_errors=True)
            if export:
                open(os.path.join(path, "git-daemon-export-ok"), "w").close()
            chown_tree(path, "nobody", "nogroup")

        for name in GIT_REPOS:
            new_repo(name)
        new_repo("private", export=False)
        g("config", "-f", os.path.join(base, "infra.git", "config"), "daemon.uploadarch", "false")
        g("config", "-f", os.path.join(base, "website.git", "config"), "daemon.receivepack", "false")
        chown_tree(base, "nobody", "nogroup")

        def argv(**kw) -> list[str]:
            o = {"port": str(port), "base": base, "extra": []} | kw
            return setpriv("nobody", "nogroup", [git, "daemon", "--verbose", "--log-destination=stderr", f"--base-path={o['base']}",
                                                 "--listen=127.0.0.1", f"--port={o['port']}", "--reuseaddr", "--informative-errors",
                                                 "--enable=receive-pack", "--enable=upload-archive", "--allow-override=receive-pack",
                                                 "--allow-override=upload-archive", "--init-timeout=3", "--timeout=6",
                                                 "--max-connections=32", *o["extra"], o["base"]])

        def start(wait: bool = True, **kw) -> None:
            with open(logp, "ab") as out:
                sv.start("gitd", argv(**kw), stdout=out, stderr=out, cwd=work, env=base_env | {"HOME": work})
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("git daemon did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("gitd", signal.SIGTERM, 10)

        clones: dict[tuple[str, str], str] = {}

        def dev_work(r: random.Random, src: str) -> None:
            """A developer: fetch, commit, push a topic branch or main, sometimes delete a merged branch or tag."""
            user = USERS[CLIENTS.index(src)]
            repo = r.choice(GIT_REPOS[:5])
            d = clones.get((user, repo))
            if d is None or not os.path.isdir(d):
                d = os.path.join(work, "clones", f"{user}-{repo}")
                shutil.rmtree(d, ignore_errors=True)
                if g("clone", "-q", url(repo), d, src=src, user=user) != 0:
                    return
                clones[(user, repo)] = d
                return
            g("fetch", "-q", "--prune", "origin", cwd=d, src=src, user=user)
            a = r.random()
            if a < 0.5:
                fn = os.path.join(d, r.choice(GIT_FILES))
                os.makedirs(os.path.dirname(fn), exist_ok=True)
                with open(fn, "a") as f:
                    f.write(f"{r.choice(WORDS)} {r.randint(1, 9999)}\n")
                g("add", "-A", cwd=d, user=user)
                g("commit", "-q", "-m", f"{r.choice(['Fix', 'Refactor', 'Tune', 'Document'])} {r.choice(WORDS)}", cwd=d, user=user)
                if r.random() < 0.6:
                    g("push", "-q", "origin", f"HEAD:refs/heads/topic/{user}-{r.choice(WORDS[:6])}", cwd=d, src=src, user=user)
                else:
                    g("rebase", "-q", "origin/main", cwd=d, user=user)
                    g("push", "-q", "origin", "HEAD:main", cwd=d, src=src, user=user)
            elif a < 0.6:
                g("push", "-q", "origin", f":refs/heads/topic/{user}-{r.choice(WORDS[:6])}", cwd=d, src=src, user=user)
            elif a < 0.65:
                g("tag", "-f", f"v1.{r.randint(1, 40)}.{r.randint(0, 9)}", cwd=d, user=user)
                g("push", "-q", "--tags", "origin", cwd=d, src=src, user=user)
            else:
                g("pull", "-q", "--rebase", cwd=d, src=src, user=user)

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(CLIENTS)
            a = r.random()
            if a < 0.62:  # CI pollers and mirrors asking for the refs
                git_poll(port, r.choice(GIT_REPOS) + ".git", src, r.choice(["git.onb20.test", f"git.onb20.test:{port}", "127.0.0.1"]),
                         v2=r.random() < 0.5)
            elif a < 0.8:
                dev_work(r, src)
            elif a < 0.9:  # a CI runner's shallow clone of a build
                d = os.path.join(work, f"ci-{r.getrandbits(32):08x}")
                g("clone", "-q", "--depth", "1", url(r.choice(GIT_REPOS)), d, src=src)
                shutil.rmtree(d, ignore_errors=True)
            elif a < 0.96:  # release tooling fetching a file with git archive
                repo = r.choice(["webapp", "docs", "libparse", "mobile-app"])
                quiet([git, "archive", f"--remote={url(repo)}", "--format=tar", "HEAD", "README.md"], 20, env_for(src))
            else:
                g("ls-remote", "--heads", url(r.choice(GIT_REPOS)), src=src)

        def operator(r: random.Random) -> None:
            """The admin: a new repository, an archived one removed, a repository repacked."""
            a = r.random()
            extra = sorted(x for x in os.listdir(base) if x.startswith("sandbox-"))
            if a < 0.4 or not extra:
                new_repo(f"sandbox-{r.choice(WORDS)}-{r.randint(10, 99)}")
            elif a < 0.7:
                shutil.rmtree(os.path.join(base, r.choice(extra)), ignore_errors=True)
            else:
                quiet(setpriv("nobody", "nogroup", [git, "-C", os.path.join(base, r.choice(GIT_REPOS) + ".git"), "gc", "-q"]), 60,
                      base_env | {"HOME": home})

        start()
        log = FileLog(logp)
        say(f"git daemon on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 4))
                       for _ in range(rng.randint(2, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(90)
            if n % 25 == 0:
                operator(rng)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.02, 0.15))

        def restart_clean() -> None:
            stop()
            start()

        def corrupt(repo: str, how: str) -> str:
            """A copy of a repository broken on disk (a disk error, a botched manual repair)."""
            name = f"{repo}-restored"
            path = os.path.join(base, name + ".git")
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(os.path.join(base, repo + ".git"), path, symlinks=True)
            if how == "empty_objects":
                g("-C", path, "repack", "-a", "-d", "-q")
                for pack in os.listdir(os.path.join(path, "objects", "pack")):
                    if pack.endswith(".pack"):
                        with open(os.path.join(path, "objects", "pack", pack), "r+b") as f:
                            f.seek(200)
                            f.write(bytes(400))
            elif how == "head":
                write_atomic(os.path.join(path, "HEAD"), "ref: refs/heads/\n")
                write_atomic(os.path.join(path, "packed-refs"), "# pack-refs with: peeled\nnot-a-sha refs/heads/main\n")
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(path, "refs", "heads", "main"))
            elif how == "perms":
                os.chmod(os.path.join(path, "objects"), 0o700)
                chown_tree(path, "root", "root")
                os.chmod(path, 0o755)
                return name
            chown_tree(path, "nobody", "nogroup")
            return name

        try:
            normal = normal_loop(args, log, "git_daemon", round_fn)
            templates = {git_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, git_template, git_problem))
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("not_exported"):  # repositories without git-daemon-export-ok
                    for repo, how in [("private", "clone"), ("private", "poll"), ("libparse", "unexport")]:
                        if how == "unexport":
                            os.unlink(os.path.join(base, "libparse.git", "git-daemon-export-ok"))
                        with br.occurrence(1.5):
                            if how == "clone" or how == "unexport":
                                d = os.path.join(work, "tmpclone")
                                g("clone", "-q", url(repo), d, src=rng.choice(CLIENTS))
                                shutil.rmtree(d, ignore_errors=True)
                            else:
                                git_poll(port, repo + ".git", rng.choice(CLIENTS), "git.onb20.test")
                        if how == "unexport":
                            open(os.path.join(base, "libparse.git", "git-daemon-export-ok"), "w").close()
                            br.between()
                with br.phase("no_such_repository"):  # typos, renamed and deleted repositories
                    for repo in ["wepapp", "mobile", "infra-old"]:
                        with br.occurrence(1.5):
                            g("ls-remote", url(repo), src=rng.choice(CLIENTS))
                with br.phase("path_escape"):  # paths leaving the base path, user paths
                    for path in ["../../etc", "webapp.git/../../../../etc/passwd", "~alice/projects.git", "/etc/shadow"]:
                        with br.occurrence(1.5):
                            git_poll(port, path.lstrip("/") if not path.startswith("/") else path, rng.choice(OUTSIDERS), "git.onb20.test")
                with br.phase("service_disabled"):  # services a repository turned off, a service git does not have
                    for how in ["archive", "push", "service"]:
                        with br.occurrence(1.5):
                            src = rng.choice(CLIENTS)
                            if how == "archive":
                                quiet([git, "archive", f"--remote={url('infra')}", "--format=tar", "HEAD", "README.md"], 20, env_for(src))
                            elif how == "push":
                                d = os.path.join(work, "tmpclone")
                                g("clone", "-q", url("website"), d, src=src)
                                g("commit", "-q", "--allow-empty", "-m", "hotfix", cwd=d, user="mallory")
                                g("push", "-q", "origin", "HEAD:main", cwd=d, src=src, user="mallory")
                                shutil.rmtree(d, ignore_errors=True)
                            else:
                                raw_tcp(port, pkt("git-upload-bundle /webapp.git\0host=git.onb20.test\0"), src, wait=0.5)
                with br.phase("protocol_garbage"):  # random bytes, HTTP, TLS, a bad packet length
                    for data in [bytes(rng.getrandbits(8) for _ in range(48)), b"GET /webapp.git/info/refs HTTP/1.1\r\nHost: git.onb20.test\r\n\r\n",
                                 TLS_HELLO, b"ffffgit-upload-pack /webapp.git\0", b"SSH-2.0-OpenSSH_9.2p1\r\n"]:
                        with br.occurrence(1.5):
                            raw_tcp(port, data, rng.choice(OUTSIDERS), wait=0.5)
                with br.phase("bad_want"):  # clients asking for objects the server did not advertise, bad deepen lines
                    for lines in [[f"want {'1' * 40} multi_ack side-band-64k\n"], [f"want {'ab' * 20}\n", "deepen -3\n"],
                                  ["want HEAD\n"], [f"want {'0' * 40}\n", "shallow not-a-sha\n"]]:
                        with br.occurrence(1.5):
                            raw_tcp(port, pkt("git-upload-pack /webapp.git\0host=git.onb20.test\0") + b"".join(pkt(x) for x in lines)
                                    + b"0000" + pkt("done\n"), rng.choice(CLIENTS), wait=0.8)
                with br.phase("client_timeout"):  # clients that connect and say nothing, or stop in the middle
                    for how in ["silent", "stall", "silent"]:
                        with br.occurrence(8.0):
                            if how == "silent":
                                raw_tcp(port, b"", rng.choice(CLIENTS), wait=4.5)
                            else:
                                raw_tcp(port, pkt("git-upload-pack /docs.git\0host=git.onb20.test\0"), rng.choice(CLIENTS), wait=7.5)
                        br.between()
                with br.phase("corrupt_repository"):  # repositories restored from a broken backup
                    for repo, how in [("docs", "empty_objects"), ("webapp", "head"), ("mobile-app", "perms")]:
                        name = corrupt(repo, how)
                        br.between()
                        with br.occurrence(2.0):
                            d = os.path.join(work, "tmpclone")
                            g("clone", "-q", url(name), d, src=rng.choice(CLIENTS))
                            shutil.rmtree(d, ignore_errors=True)
                        shutil.rmtree(os.path.join(base, name + ".git"), ignore_errors=True)
                        br.between()
                with br.phase("killed_service"):  # an upload-pack killed in the middle of a clone (the OOM killer, an admin)
                    for sig in [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV]:
                        with br.occurrence(2.0):
                            src = rng.choice(CLIENTS)
                            s = socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0))
                            s.sendall(pkt("git-upload-pack /webapp.git\0host=git.onb20.test\0"))
                            time.sleep(0.5)
                            for pid, cmd in proc_cmdlines():
                                with contextlib.suppress(OSError):
                                    if "upload-pack" in cmd and os.readlink(f"/proc/{pid}/cwd").startswith(base):
                                        os.kill(pid, sig)
                            time.sleep(0.5)
                            s.close()
                with br.phase("bad_config_restart"):  # broken command lines, the port taken, the daemon restarted
                    blocker = tcp_blocker()
                    for kw in [{"port": str(blocker.getsockname()[1])}, {"base": os.path.join(work, "srv", "gti")},
                               {"extra": ["--user=gitd", "--detach"]}, {"extra": ["--export-everything"]},
                               {"extra": ["--listen=127.0.0.300"]}]:
                        stop()
                        br.between()
                        with br.occurrence(2.0):
                            start(wait=False, **kw)
                            time.sleep(1.0)
                            git_poll(port, "webapp.git", rng.choice(CLIENTS), "git.onb20.test")
                        stop()
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("git_daemon", "git daemon", dpkg_version("git"),
                  "git daemon's log on stderr (--verbose --log-destination=stderr), no time stamps: the pid of the process "
                  "serving a connection in brackets, then the message; the daemon's own lines about a child carry both pids: "
                  "`[4242] Connection from 127.0.0.3:40123`, `[4242] Extended attribute \"host\": git.onb20.test:9418`, `[4242] "
                  "Extended attribute \"protocol\": version=2`, `[4242] Request upload-pack for '/webapp.git'`, `[4240] [4242] "
                  "Disconnected`, `[4240] [4242] Disconnected (with error)`; the services it starts write to the same stderr, "
                  "with or without the pid (`[4242] fatal: git upload-pack: not our ref 1111...`, `fatal: protocol error: bad line "
                  "length character: GET `, `error: upload-pack died of signal 9`); each connection traced by its pid from its "
                  "address through the client's attributes and the service request to its end",
                  "git daemon (as nobody, a base path with 6 exported repositories and a private one, receive-pack and "
                  "upload-archive enabled with per-repository overrides: a read-only website mirror, an infra repository "
                  "without archives; --init-timeout 3, --timeout 6) with clients on 6 addresses: CI pollers and mirrors asking "
                  "for the refs (protocol v0 and v2 ls-refs), developers cloning, fetching, committing and pushing topic "
                  "branches, main and tags (real git through a proxy command binding their address), CI runners' shallow "
                  "clones, release tooling's git archive --remote, git ls-remote; an admin creating, removing and repacking "
                  "repositories; 2 clean restarts (SIGTERM)",
                  "not_exported (3: a private repository cloned and polled, a repository whose export file was removed), "
                  "no_such_repository (3: typos, a renamed and a deleted repository), path_escape (4: parent paths, a user path, "
                  "an absolute path), service_disabled (3: git archive of a repository that turned upload-archive off, a push to "
                  "the read-only mirror, a service git does not have), protocol_garbage (5: random bytes, HTTP, TLS, a bad packet "
                  "length, an SSH banner), bad_want (4: objects not advertised, a bad deepen, a want without an id, a bad shallow "
                  "line), client_timeout (3: clients saying nothing past --init-timeout, a client stalling after its request past "
                  "--timeout), corrupt_repository (3: a damaged pack, a broken HEAD and packed-refs, objects it may not read), "
                  "killed_service (3: upload-pack killed by SIGKILL, SIGTERM, SIGSEGV in the middle of a fetch), "
                  "bad_config_restart (5: the port taken, a missing base path, an unknown user, an unknown option, a bad listen "
                  "address)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# verdaccio (Verdaccio 5, a private npm registry on Node.js: pino JSON lines on its stdout, as nobody)
# --------------------------------------------------------------------------

VERDACCIO_CONF = """\
storage: {work}/storage
plugins: {work}/plugins
auth:
  htpasswd:
    file: {work}/htpasswd
    max_users: {max_users}
uplinks:
  npmjs:
    url: http://127.0.0.1:{up}/
    timeout: 3s
    maxage: 5s
    max_fails: 3
    fail_timeout: 2s
packages:
  '@onb20/*':
    access: $authenticated
    publish: alice bob carol ci-bot
    unpublish: alice
  '**':
    access: $all
    publish: $authenticated
    proxy: npmjs
server:
  keepAliveTimeout: 5
web:
  enable: false
{extra}log: {{ type: stdout, format: json, level: {level} }}
listen: {listen}
"""
NPM_PASSWORDS = {"alice": "Alice-Npm-20", "bob": "Bob-Npm-20", "carol": "Carol-Npm-20", "dave": "Dave-Npm-20",
                 "erin": "Erin-Npm-20", "frank": "Frank-Npm-20", "ci-bot": "Ci-Bot-Npm-20"}
NPM_PUBLISHERS = ["alice", "bob", "carol", "ci-bot"]
NPM_LOCAL = ["@onb20/ui-kit", "@onb20/api-client", "@onb20/logger", "@onb20/config", "@onb20/eslint-config", "@onb20/auth"]
NPM_PUBLIC = {"lodash": ["4.17.20", "4.17.21"], "express": ["4.18.2", "4.19.2"], "left-pad": ["1.3.0"], "chalk": ["4.1.2", "5.3.0"],
              "react": ["18.2.0", "18.3.1"], "debug": ["4.3.4"], "ms": ["2.1.3"], "commander": ["11.1.0", "12.0.0"],
              "uuid": ["9.0.1"], "axios": ["1.6.7", "1.6.8"], "dotenv": ["16.4.5"], "semver": ["7.6.0"]}
NPM_RARE = {n: ["1.0.0", "1.1.0"] for n in ["is-odd", "kleur", "picocolors", "nanoid", "zod", "yargs", "minimist", "glob", "rimraf",
                                            "mkdirp", "async", "bluebird", "moment", "qs", "cors", "helmet"]}  # asked for only when broken
NPM_UA = ["npm/10.2.4 node/v20.11.0 linux x64 workspaces/false", "npm/9.6.7 node/v18.17.1 darwin arm64 workspaces/false",
          "npm/10.5.0 node/v21.7.1 win32 x64 workspaces/false", "yarn/1.22.19 npm/? node/v18.19.0 linux x64",
          "pnpm/8.15.4 npm/? node/v20.11.1 linux x64"]
NPM_USER_OF = dict(zip(CLIENTS, ["alice", "bob", "carol", "dave", "erin", "ci-bot"]))


def npm_tarball(name: str, version: str) -> bytes:
    """A package tarball as npm pack makes it: package/package.json and package/index.js, gzipped."""
    files = {"package/package.json": json.dumps({"name": name, "version": version, "main": "index.js", "license": "MIT"}).encode(),
             "package/index.js": f"module.exports = function () {{ return '{name}@{version}'; }};\n".encode()}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 499162500, 0o644
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def npm_integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


class NpmUpstream(QuietHandler):
    """The public registry behind verdaccio's uplink (modes: ok, hang, fail500, garbage, badtarball, notfound)."""

    def do_GET(self):
        owner = self.server.owner
        mode = owner.mode
        if mode == "hang":
            time.sleep(8)
            return self.reply(504, b"")
        if mode == "fail500":
            return self.reply(500 if owner.attrs["r"].random() < 0.5 else 503, b"<html><body>upstream error</body></html>", "text/html")
        path = self.path.split("?")[0].lstrip("/").replace("%2f", "/").replace("%2F", "/")
        base = f"http://127.0.0.1:{owner.port}"
        known = NPM_PUBLIC | NPM_RARE
        if path.startswith("-/"):  # search
            return self.reply(200, b'{"objects": [], "total": 0, "time": "Sat Dec 07 2026 05:40:01 GMT+0000"}', "application/json")
        if "/-/" in path:
            name, fn = path.split("/-/", 1)
            version = fn[len(name.split("/")[-1]) + 1:-4]
            if name not in known or version not in known[name]:
                return self.reply(404, b'{"error":"Not found"}', "application/json")
            data = npm_tarball(name, version)
            if mode == "badtarball":
                data = data[: len(data) // 2]
            return self.reply(200, data, "application/octet-stream")
        if mode == "garbage":
            return self.reply(200, b'{"_id": "' + path.encode() + b'", "versions": {"1.0.0": ', "application/json")
        if path not in known or mode == "notfound":
            return self.reply(404, b'{"error":"Not found"}', "application/json")
        versions = {}
        for v in known[path]:
            data = npm_tarball(path, v)
            versions[v] = {"name": path, "version": v, "main": "index.js", "license": "MIT",
                           "dist": {"shasum": hashlib.sha1(data).hexdigest(), "integrity": npm_integrity(data),
                                    "tarball": f"{base}/{path}/-/{path.split('/')[-1]}-{v}.tgz"}}
        doc = {"_id": path, "name": path, "dist-tags": {"latest": known[path][-1]}, "versions": versions,
               "time": {v: f"2024-01-0{i + 1}T12:00:00.000Z" for i, v in enumerate(known[path])}}
        self.reply(200, json.dumps(doc).encode(), "application/json")


VERDACCIO_KEEP = ("level", "sub", "status", "error", "action", "content")


def verdaccio_fields(line: str) -> dict | None:
    if not line.startswith("{"):
        return None
    with contextlib.suppress(ValueError):
        d = json.loads(line)
        if isinstance(d, dict):
            return d
    return None


def npm_mask(text: str) -> str:
    text = re.sub(r"'[^']*'", "'Q'", text)
    names = "|".join(re.escape(x) for x in NPM_PUBLIC)
    text = re.sub(rf"@[\w.-]+/[\w.-]+|\b(?:{names})\b", "PKG", text)
    return re.sub(r"/[\w@%./-]+", "PATH", text)


def verdaccio_template(line: str) -> str:
    d = verdaccio_fields(line)
    if d is None:  # Node.js's own warnings and a failed start's stack trace
        return templater(re.compile(r"^\(node:\d+\) "), (r"/[\w@%./-]+", "PATH"))(line)
    err = d.get("err") if isinstance(d.get("err"), dict) else {}
    keys = ",".join(sorted(k for k in d if k not in ("time", "pid", "hostname", "msg")))
    kept = " ".join(f"{k}={d[k]}" for k in VERDACCIO_KEEP if k in d and not isinstance(d[k], (dict, list)))
    return templater(re.compile(r"^"))(f"{kept} err={err.get('type', '')}:{err.get('code', '')} [{keys}] {npm_mask(str(d.get('msg', '')))}")


def verdaccio_problem(line: str) -> bool:
    d = verdaccio_fields(line)
    if d is None:
        return has_problem_word(line)
    if isinstance(d.get("level"), int) and d["level"] >= 40 and not str(d.get("msg", "")).startswith("http address"):
        return True
    if d.get("error") or d.get("err") or (isinstance(d.get("status"), int) and d["status"] >= 500):
        return True
    return has_problem_word(npm_mask(str(d.get("msg", ""))))


def source_verdaccio(args) -> Source:
    verdaccio, npm = need("verdaccio", "npm install -g verdaccio@5.33.0"), need("npm", "npm")
    rng = random.Random(f"{args.seed}-verdaccio")
    with tempfile.TemporaryDirectory(prefix="onb20-verdaccio-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf = os.path.join(work, "verdaccio.log"), os.path.join(work, "config.yaml")
        for d in ("storage", "plugins", "home", "npm-home"):
            os.makedirs(os.path.join(work, d))
        port = free_port()
        upstream = ModeServer(NpmUpstream, r=random.Random(rng.random())).start()
        users = dict(NPM_PASSWORDS)

        def write_htpasswd() -> None:
            write_atomic(os.path.join(work, "htpasswd"), "".join(
                f"{u}:{{SHA}}{base64.b64encode(hashlib.sha1(pw.encode()).digest()).decode()}:autocreated 2026-11-02T09:12:44.000Z\n"
                for u, pw in users.items()))
            shutil.chown(os.path.join(work, "htpasswd"), "nobody", "nogroup")

        write_htpasswd()

        def conf_text(**kw) -> str:
            return VERDACCIO_CONF.format(**({"work": work, "up": upstream.port, "extra": "", "level": "trace", "max_users": len(NPM_PASSWORDS),
                                             "listen": f"127.0.0.1:{port}"} | kw))

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else conf_text(**kw))

        write_conf()
        chown_tree(work, "nobody", "nogroup")
        node_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(work, "home"), "NODE_ENV": "production"}

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:
                sv.start("verdaccio", setpriv("nobody", "nogroup", [verdaccio, "-c", conf]), stdout=out, stderr=out, cwd=work,
                         env=node_env)
            if wait:
                if not listening(port, 30):
                    raise RuntimeError("verdaccio did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("verdaccio", signal.SIGTERM, 10)

        def call(method: str, path: str, src: str, user: str | None = None, body: bytes | None = None, token: str | None = None,
                 password: str | None = None, headers: dict | None = None, timeout: float = 10) -> tuple[int, bytes]:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(src, 0))
            h = {"User-Agent": rng.choice(NPM_UA), "Accept": "application/json", "npm-command": "install",
                 "Host": f"registry.onb20.test:{port}"} | (headers or {})
            if token:
                h["Authorization"] = f"Bearer {token}"
            elif user:
                h["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password or users.get(user, '')}".encode()).decode()
            if body is not None:
                h["Content-Type"] = "application/json"
            try:
                c.request(method, path, body=body, headers=h)
                r = c.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                return 0, b""
            finally:
                c.close()

        tokens: dict[str, str] = {}
        versions: dict[str, list[str]] = {}

        def login(user: str, src: str, password: str | None = None) -> str | None:
            """npm login (legacy): the account's PUT (409 for an existing account), then the account read and PUT again
            with basic authentication, which gives the token."""
            pw = password or users.get(user, "x")
            doc = json.dumps({"_id": f"org.couchdb.user:{user}", "name": user, "password": pw, "type": "user", "roles": [],
                              "date": "2026-12-07T05:40:01.000Z"}).encode()
            st, body = call("PUT", f"/-/user/org.couchdb.user:{user}", src, body=doc, headers={"npm-command": "login"})
            if st == 409:
                call("GET", f"/-/user/org.couchdb.user:{user}?write=true", src, user=user, password=pw, headers={"npm-command": "login"})
                st, body = call("PUT", f"/-/user/org.couchdb.user:{user}", src, user=user, password=pw, body=doc,
                                headers={"npm-command": "login"})
            if st in (200, 201):
                with contextlib.suppress(ValueError, KeyError):
                    return json.loads(body)["token"]
            return None

        def token_of(user: str, src: str) -> str | None:
            if user not in tokens:
                t = login(user, src)
                if t:
                    tokens[user] = t
            return tokens.get(user)

        def enc(name: str) -> str:
            return name.replace("/", "%2f")

        def publish_body(name: str, version: str, tag: str = "latest", data: bytes | None = None) -> bytes:
            data = data if data is not None else npm_tarball(name, version)
            fn = f"{name}-{version}.tgz"
            return json.dumps({"_id": name, "name": name, "description": f"{name.split('/')[-1]} for the onb20 apps",
                               "dist-tags": {tag: version}, "access": None,
                               "versions": {version: {"name": name, "version": version, "main": "index.js", "license": "UNLICENSED",
                                                      "_id": f"{name}@{version}", "readme": f"# {name}\n",
                                                      "dist": {"shasum": hashlib.sha1(data).hexdigest(), "integrity": npm_integrity(data),
                                                               "tarball": f"http://registry.onb20.test:{port}/{name}/-/{fn}"}}},
                               "_attachments": {fn: {"content_type": "application/octet-stream",
                                                     "data": base64.b64encode(data).decode(), "length": len(data)}}}).encode()

        def publish(name: str, user: str, src: str, version: str | None = None, tag: str = "latest") -> int:
            if version is None:
                old = versions.setdefault(name, [])
                major, minor, patch = (int(x) for x in (old[-1] if old else "1.0.0").split("."))
                version = f"{major}.{minor}.{patch + 1}" if old else "1.0.0"
            st, _ = call("PUT", "/" + enc(name), src, token=token_of(user, src), body=publish_body(name, version, tag),
                         headers={"npm-command": "publish"})
            if st in (200, 201):
                versions.setdefault(name, []).append(version)
            return st

        def install(r: random.Random, src: str, user: str | None) -> None:
            """npm install: each dependency's metadata (the abbreviated document), then its tarball."""
            deps = r.sample(NPM_LOCAL, r.randint(0, 2) if user else 0) + r.sample(sorted(NPM_PUBLIC), r.randint(1, 3))
            tok = token_of(user, src) if user else None
            for name in deps:
                st, body = call("GET", "/" + enc(name), src, token=tok if name.startswith("@") else None,
                                headers={"Accept": "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"})
                if st != 200:
                    continue
                with contextlib.suppress(ValueError, KeyError, IndexError):
                    doc = json.loads(body)
                    v = doc["dist-tags"]["latest"] if r.random() < 0.7 else r.choice(sorted(doc["versions"]))
                    tarball = doc["versions"][v]["dist"]["tarball"]
                    path = "/" + tarball.split("/", 3)[3]
                    if r.random() < 0.85:  # (the rest come from npm's own cache)
                        call("GET", path, src, token=tok if name.startswith("@") else None, headers={"Accept": "*/*"})

        def client(r: random.Random, src: str | None = None, logins: bool = True) -> None:
            src = src or r.choice(CLIENTS)
            user = NPM_USER_OF[src]
            a = r.random()
            if a < 0.55:
                install(r, src, user if r.random() < 0.9 else None)
            elif a < 0.65:  # npm view / outdated: the full document
                name = r.choice(NPM_LOCAL + sorted(NPM_PUBLIC))
                call("GET", "/" + enc(name), src, token=token_of(user, src) if name.startswith("@") else None,
                     headers={"npm-command": r.choice(["view", "outdated"])})
            elif a < 0.72:
                call("GET", "/-/whoami", src, token=token_of(user, src), headers={"npm-command": "whoami"})
            elif a < 0.8 and user in NPM_PUBLISHERS:  # a release
                publish(r.choice(NPM_LOCAL), user, src)
            elif a < 0.84 and user in NPM_PUBLISHERS:  # a dist-tag moved
                name = r.choice([n for n in NPM_LOCAL if versions.get(n)] or NPM_LOCAL[:1])
                if versions.get(name):
                    call("PUT", f"/-/package/{enc(name)}/dist-tags/{r.choice(['beta', 'next', 'stable'])}", src, token=token_of(user, src),
                         body=json.dumps(r.choice(versions[name])).encode(), headers={"npm-command": "dist-tag"})
            elif a < 0.88:
                call("GET", f"/-/v1/search?text={r.choice(['ui', 'logger', 'config', 'auth', 'client'])}&size=20&from=0", src,
                     token=token_of(user, src), headers={"npm-command": "search"})  # (signed in: the company's packages too)
            elif a < 0.94 and logins:  # a fresh login (a new laptop, an expired token)
                tokens.pop(user, None)
                token_of(user, src)
            elif a < 0.97:
                call("GET", "/-/ping", src, headers={"npm-command": "ping"})
            else:  # the real npm CLI on the build host (127.0.0.1)
                npm_cli(r)

        npmrc = os.path.join(work, "npm-home", ".npmrc")
        project = os.path.join(work, "project")

        def npm_cli(r: random.Random) -> None:
            os.makedirs(project, exist_ok=True)
            tok = tokens.get("ci-bot") or token_of("ci-bot", "127.0.0.1")
            write_atomic(npmrc, f"registry=http://127.0.0.1:{port}/\n//127.0.0.1:{port}/:_authToken={tok}\naudit=false\nfund=false\n"
                         "update-notifier=false\n")
            write_atomic(os.path.join(project, "package.json"), json.dumps(
                {"name": "onb20-build", "version": "1.0.0", "private": True,
                 "dependencies": {"@onb20/logger": "*", r.choice(sorted(NPM_PUBLIC)): "*"}}))
            env = {"PATH": os.environ.get("PATH", ""), "HOME": os.path.join(work, "npm-home"),
                   "npm_config_cache": os.path.join(work, "npm-home", "cache")}
            argv = r.choice([["install", "--no-audit", "--no-fund", "--prefer-online"], ["view", "@onb20/ui-kit", "versions"],
                             ["whoami"], ["ping"]])
            quiet([npm, *argv], 60, env, project)
            shutil.rmtree(os.path.join(project, "node_modules"), ignore_errors=True)

        def operator(r: random.Random) -> None:
            """The admin: a contractor's account added or removed from htpasswd."""
            extra = [u for u in users if u.startswith("contractor")]
            if extra and r.random() < 0.5:
                users.pop(r.choice(extra))
            else:
                users[f"contractor{r.randint(1, 9)}"] = f"Temp-{r.getrandbits(24):06x}"
            write_htpasswd()

        start()
        log = FileLog(logp)
        say(f"verdaccio on 127.0.0.1:{port}; normal phase...")
        for name in NPM_LOCAL:  # the packages published so far
            for _ in range(rng.randint(1, 3)):
                publish(name, rng.choice(NPM_PUBLISHERS), rng.choice(CLIENTS[:3]))
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
                       for _ in range(rng.randint(2, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(90)
            if n % 40 == 0:
                operator(rng)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.05, 0.3))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        def local_pkg_dir(name: str) -> str:
            return os.path.join(work, "storage", *name.split("/"))

        try:
            normal = normal_loop(args, log, "verdaccio", round_fn)
            templates = {verdaccio_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, verdaccio_template, verdaccio_problem))
            for src in CLIENTS:  # (during the breakages the background signs in no more)
                token_of(NPM_USER_OF[src], src)
            with Background(lambda r: client(r, logins=False), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):  # logins, whoami and publishes with an old password
                    for user, how in [("dave", "login"), ("bob", "basic"), ("carol", "login"), ("erin", "basic")]:
                        with br.occurrence(1.5):
                            src = rng.choice(CLIENTS)
                            if how == "login":
                                login(user, src, password=users[user].replace("20", "19"))
                            else:
                                call("GET", "/-/whoami", src, user=user, password=users[user].lower())
                with br.phase("unknown_user"):  # accounts that do not exist (registration is closed)
                    for user in ["mallory", "admin", "contractor0"]:
                        with br.occurrence(1.5):
                            login(user, rng.choice(CLIENTS), password="Summer2026!")
                with br.phase("invalid_token"):  # revoked, truncated and forged tokens
                    good = token_of("alice", CLIENTS[0]) or "x"
                    for tok in [good[:-6] + "AAAAAA", "npm_" + "".join(rng.choice("abcdef0123456789") for _ in range(36)),
                                base64.b64encode(b"alice:forged").decode()]:
                        with br.occurrence(1.5):
                            call("GET", "/" + enc(rng.choice(NPM_LOCAL)), rng.choice(CLIENTS), token=tok)
                with br.phase("publish_forbidden"):  # publishes by users outside the release team, anonymous ones
                    for user in ["dave", "erin", None]:
                        with br.occurrence(1.5):
                            name = rng.choice(NPM_LOCAL)
                            src = rng.choice(CLIENTS)
                            call("PUT", "/" + enc(name), src, token=token_of(user, src) if user else None,
                                         body=publish_body(name, "9.9.9"), headers={"npm-command": "publish"})
                with br.phase("version_conflict"):  # a version published twice
                    for name in [n for n in NPM_LOCAL if versions.get(n)][:3]:
                        with br.occurrence(1.5):
                            user = rng.choice(NPM_PUBLISHERS)
                            src = rng.choice(CLIENTS)
                            call("PUT", "/" + enc(name), src, token=token_of(user, src), body=publish_body(name, versions[name][-1]),
                                 headers={"npm-command": "publish"})
                with br.phase("bad_publish"):  # broken publish bodies: not JSON, no attachment, a bad name
                    for how in ["json", "attachment", "name", "version"]:
                        with br.occurrence(1.5):
                            src = CLIENTS[0]
                            tok = token_of("alice", src)
                            if how == "json":
                                call("PUT", "/" + enc(NPM_LOCAL[0]), src, token=tok, body=b'{"name": "@onb20/ui-kit", "versions": {')
                            elif how == "attachment":
                                body = json.loads(publish_body(NPM_LOCAL[1], "7.0.0"))
                                body["_attachments"] = {}
                                call("PUT", "/" + enc(NPM_LOCAL[1]), src, token=tok, body=json.dumps(body).encode())
                            elif how == "name":
                                call("PUT", "/" + enc("@onb20/../../etc"), src, token=tok, body=publish_body("@onb20/../../etc", "1.0.0"))
                            else:
                                call("PUT", "/" + enc(NPM_LOCAL[2]), src, token=tok, body=publish_body(NPM_LOCAL[2], "not-a-version"))
                with br.phase("uplink_down"):  # the public registry unreachable (its port closed)
                    rare = iter(sorted(NPM_RARE))
                    for name in [next(rare) for _ in range(3)]:
                        upstream.stop()
                        with br.occurrence(2.0):
                            install_one = rng.choice(CLIENTS)
                            call("GET", "/" + name, install_one, headers={"npm-command": "install"})
                        upstream.start()
                        time.sleep(2.5)  # fail_timeout: the uplink is tried again
                        br.between()
                for kind, mode, n in [("uplink_timeout", "hang", 2), ("uplink_error", "fail500", 3), ("uplink_garbage", "garbage", 3),
                                      ("uplink_bad_tarball", "badtarball", 3)]:
                    names = [next(rare) for _ in range(n)]
                    with br.phase(kind):
                        for name in names:
                            upstream.mode = mode
                            with br.occurrence(4.0 if mode == "hang" else 2.0):
                                src = rng.choice(CLIENTS)
                                if mode == "badtarball":
                                    upstream.mode = "ok"
                                    call("GET", "/" + name, src)
                                    upstream.mode = mode
                                    call("GET", f"/{name}/-/{name}-{NPM_RARE[name][-1]}.tgz", src, headers={"Accept": "*/*"})
                                else:
                                    call("GET", "/" + name, src)
                            upstream.mode = "ok"
                            time.sleep(2.5)
                            br.between()
                with br.phase("missing_package"):  # packages and versions that are not there
                    for path in ["/@onb20%2fpayments", "/@onb20%2fui-kit/-/@onb20/ui-kit-0.0.1.tgz", "/left-pads",
                                 "/lodash/-/lodash-9.9.9.tgz"]:
                        with br.occurrence(1.5):
                            src = rng.choice(CLIENTS)
                            call("GET", path, src, token=token_of(NPM_USER_OF[src], src))
                with br.phase("corrupt_storage"):  # the storage volume damaged: a broken package.json, a missing tarball
                    for name, how in [(NPM_LOCAL[3], "json"), (NPM_LOCAL[0], "tarball"), (NPM_LOCAL[4], "perms")]:
                        d = local_pkg_dir(name)
                        meta = os.path.join(d, "package.json")
                        with open(meta, "rb") as f:
                            saved = f.read()
                        tgz = [x for x in os.listdir(d) if x.endswith(".tgz")]
                        if how == "json":
                            with open(meta, "wb") as f:
                                f.write(saved[: len(saved) // 3])
                        elif how == "tarball":
                            os.rename(os.path.join(d, tgz[-1]), os.path.join(d, tgz[-1] + ".lost"))
                        else:
                            os.chmod(meta, 0)
                        br.between()
                        with br.occurrence(2.0):
                            src = CLIENTS[1]
                            tok = token_of("bob", src)
                            if how == "tarball":
                                call("GET", f"/{name}/-/{tgz[-1]}", src, token=tok)
                            else:
                                call("GET", "/" + enc(name), src, token=tok)
                        if how == "tarball":
                            os.rename(os.path.join(d, tgz[-1] + ".lost"), os.path.join(d, tgz[-1]))
                        else:
                            write_atomic(meta, saved.decode())
                            shutil.chown(meta, "nobody", "nogroup")
                            os.chmod(meta, 0o644)
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_config_restart"):  # config.yaml mistakes, the port taken, verdaccio restarted
                    blocker = tcp_blocker()
                    good = conf_text()
                    for kw in [{"listen": f"127.0.0.1:{blocker.getsockname()[1]}"},
                               {"text": good.replace("packages:\n", "packages:\n  '@onb20/*:\n", 1)},
                               {"text": good.replace("  htpasswd:\n", "  htpasswd-ldap:\n", 1)},
                               {"listen": f"127.0.0.300:{port}"},
                               {"text": good.replace(f"storage: {work}/storage", f"storage: {work}/htpasswd")},
                               {"text": good.replace(f"url: http://127.0.0.1:{upstream.port}/", "url: registry.npmjs.org")}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(3.0)
                            client(rng)
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
            upstream.stop()
    return Source("verdaccio", "Verdaccio", verdaccio_version(verdaccio),
                  "verdaccio's log on stdout (log type stdout, format json, level trace): one pino JSON record a line, with a "
                  "numeric level (10 trace, 25 http, 30 info, 40 warn, 50 error, 60 fatal), the time in milliseconds since the "
                  "epoch, pid and hostname, then the record's fields and the message: `{\"level\":30,\"time\":1796631525189,"
                  "\"pid\":32194,\"hostname\":\"vm\",\"sub\":\"in\",\"req\":{\"method\":\"GET\",\"url\":\"/lodash\",...},\"ip\":"
                  "\"127.0.0.3\",\"msg\":\"127.0.0.3 requested 'GET /lodash'\"}`, `{\"level\":25,...,\"status\":200,\"bytes\":"
                  "{\"in\":0,\"out\":1155},\"msg\":\"200, user: null(127.0.0.3), req: 'GET /lodash', bytes: 0/1155\"}`, "
                  "`{\"level\":50,...,\"err\":{\"type\":\"ForbiddenError\",\"message\":\"bad username/password, access denied\","
                  "\"stack\":\"ForbiddenError: ...\"},\"msg\":\"authenticating for user bob failed. ...\"}`; plain text from Node.js "
                  "or verdaccio at a failed start; each request traced from its arrival through the access checks "
                  "(`[middleware/allow][access] allow for alice`, `allowed access for @onb20/ui-kit`), the uplink request and the "
                  "response (a first record with 0 bytes, then the final one)",
                  "verdaccio (as nobody, htpasswd accounts with registration closed at the number of accounts, @onb20/* packages "
                  "readable by signed-in users and publishable by a release team, everything else proxied from a python uplink "
                  "with a 5 s maxage) with npm clients on 6 addresses and several user agents: installs (the abbreviated "
                  "documents, then the tarballs) of company and public packages, npm view / outdated / whoami / search / ping, "
                  "npm's legacy login (the 409 of an existing account, then basic authentication), the release team publishing "
                  "new versions and moving dist-tags, the real npm CLI on the build host (install, view, whoami, ping); an admin "
                  "adding and removing contractors' accounts in htpasswd; 2 clean restarts (SIGTERM)",
                  "wrong_password (4: logins and basic authentication with an old password), unknown_user (3: accounts that do "
                  "not exist, registration closed), invalid_token (3: a truncated token, a forged npm token, a basic pair in a "
                  "bearer header), publish_forbidden (3: developers outside the release team, an anonymous publish), "
                  "version_conflict (3: a version published twice), bad_publish (4: broken JSON, no attachment, a bad name, a bad "
                  "version), uplink_down (3: the uplink's port closed), uplink_timeout (2: the uplink hanging), uplink_error (3: "
                  "500 / 503), uplink_garbage (3: truncated JSON), uplink_bad_tarball (3: truncated tarballs), missing_package "
                  "(4: packages and versions that are not there), corrupt_storage (3: a truncated package.json, a missing tarball, "
                  "a package.json it may not read), bad_config_restart (6: the port taken, a YAML error, a missing auth plugin, a "
                  "bad listen address, the storage on a file, an uplink URL without a scheme)",
                  normal, br.errors)


def verdaccio_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], check=False, capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"\d+\.\d+\.\d+", out)
    return m.group(0) if m else "unknown"


# --------------------------------------------------------------------------
# zookeeper (Apache ZooKeeper 3.8 standalone, log4j with request tracing to its log file, as zookeeper)
# --------------------------------------------------------------------------

ZK_CFG = """\
tickTime={tick}
initLimit=10
syncLimit=5
dataDir={work}/data
clientPort={port}
clientPortAddress={addr}
maxClientCnxns={maxcnx}
minSessionTimeout=1000
maxSessionTimeout=20000
snapCount=400
autopurge.snapRetainCount=3
autopurge.purgeInterval=0
admin.enableServer=false
4lw.commands.whitelist=ruok,stat,srvr,mntr,conf,cons,envi
{extra}"""
ZK_LOG4J = """\
log4j.rootLogger=INFO, F
log4j.logger.org.apache.zookeeper.server.FinalRequestProcessor=DEBUG
log4j.logger.org.apache.zookeeper.server.NIOServerCnxn=DEBUG
log4j.logger.org.apache.zookeeper.server.NIOServerCnxnFactory=DEBUG
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File={log}
log4j.appender.F.Append=true
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{{ISO8601}} [myid:%X{{myid}}] - %-5p [%t:%C{{1}}@%L] - %m%n
"""
ZK_OPS = {"create": 1, "delete": 2, "exists": 3, "getData": 4, "setData": 5, "getACL": 6, "setACL": 7, "getChildren": 8,
          "sync": 9, "ping": 11, "getChildren2": 12, "check": 13, "multi": 14, "create2": 15, "auth": 100, "close": -11}
OPEN_ACL = [(31, "world", "anyone")]
ZK_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \[myid:\d*\] - ")
zk_template = templater(ZK_HEAD, (r"\[[\w$.:/ ()-]*(?=:\w+@\d+\])", "[THREAD"), (r"\b0x[0-9a-f]+\b", "0x0"),
                        (r"(?<=reqpath:)\S+", "P"), (r"/[\w./-]+", "PATH"))
ZK_PROBLEM = PROBLEM_WORDS + r"|expir\w*|refusing|too many|len error|not executed|no authentication provider|exception|shutdown"
ZK_SERVICES = ["orders", "payments", "search", "inventory", "gateway", "mailer"]
ZK_KEYS = ["db.url", "cache.ttl", "feature.flags", "rate.limit", "log.level", "pool.size"]


def zk_problem(line: str) -> bool:
    m = re.match(r"^\S+ \S+ \[myid:\d*\] - (\w+)\s", line)
    if m:
        if m.group(1) in ("WARN", "ERROR", "FATAL"):
            return True
        body = line[m.end():]
    else:  # a stack trace's lines, stderr at a failed start
        if line.startswith("\tat "):
            return False
        body = line
    body = body.replace("sessionless connection timeout", "")  # a setting listed at every start
    return has_problem_word(re.sub(r"reqpath:\S+", "", body), ZK_PROBLEM)


def zk_head(line: str) -> bool:
    """A log4j entry starts with its time stamp; exception and stack trace lines continue it."""
    return bool(ZK_HEAD.match(line)) or not (line.startswith("\t") or re.match(r"^[\w.$]+(?:Exception|Error)\b", line))




def zstr(s):
    if s is None:
        return struct.pack(">i", -1)
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">i", len(b)) + b


def zacl(acls):
    return struct.pack(">i", len(acls)) + b"".join(struct.pack(">i", p) + zstr(sc) + zstr(i) for p, sc, i in acls)


def zk_digest_id(user: str, password: str) -> str:
    return f"{user}:" + base64.b64encode(hashlib.sha1(f"{user}:{password}".encode()).digest()).decode()


class ZkSession:
    """A ZooKeeper client session over the jute wire protocol (one request at a time)."""

    def __init__(self, port, src="127.0.0.1", timeout_ms=6000, session_id=0, passwd=bytes(16)):
        self.sock = socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0))
        self.sock.settimeout(8)
        self.xid = 0
        req = struct.pack(">iqiq", 0, 0, timeout_ms, session_id) + zstr(passwd) + b"\0"
        self.sock.sendall(struct.pack(">i", len(req)) + req)
        body = self._frame()
        self.timeout, self.session_id = struct.unpack(">iq", body[4:16])
        n = struct.unpack(">i", body[16:20])[0]
        self.passwd = body[20:20 + n]

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            d = self.sock.recv(n - len(buf))
            if not d:
                raise ConnectionError("closed")
            buf += d
        return buf

    def _frame(self):
        n = struct.unpack(">i", self._read(4))[0]
        return self._read(n)

    def call(self, op, body=b"", xid=None):
        if op == "auth":
            xid = -4
        if xid is None:
            self.xid += 1
            xid = self.xid
        req = struct.pack(">ii", xid, ZK_OPS[op]) + body
        self.sock.sendall(struct.pack(">i", len(req)) + req)
        while True:
            d = self._frame()
            rx, _zxid, err = struct.unpack(">iqi", d[:16])
            if rx == xid:
                return err, d[16:]

    def create(self, path, data=b"", flags=0, acl=OPEN_ACL):
        return self.call("create", zstr(path) + zstr(data) + zacl(acl) + struct.pack(">i", flags))

    def delete(self, path, version=-1):
        return self.call("delete", zstr(path) + struct.pack(">i", version))

    def exists(self, path, watch=False):
        return self.call("exists", zstr(path) + (b"\1" if watch else b"\0"))

    def get(self, path, watch=False):
        return self.call("getData", zstr(path) + (b"\1" if watch else b"\0"))

    def set(self, path, data, version=-1):
        return self.call("setData", zstr(path) + zstr(data) + struct.pack(">i", version))

    def children(self, path, watch=False):
        err, body = self.call("getChildren2", zstr(path) + (b"\1" if watch else b"\0"))
        names = []
        if err == 0:
            n = struct.unpack(">i", body[:4])[0]
            off = 4
            for _ in range(n):
                ln = struct.unpack(">i", body[off:off + 4])[0]
                names.append(body[off + 4:off + 4 + ln].decode())
                off += 4 + ln
        return err, names

    def auth(self, user, password):
        return self.call("auth", struct.pack(">i", 0) + zstr("digest") + zstr(f"{user}:{password}"))

    def ping(self):
        return self.call("ping", xid=-2)

    def close(self):
        """closeSession, then wait for the server to close the connection (as the Java client does)."""
        with contextlib.suppress(OSError, ConnectionError, struct.error):
            self.call("close")
            self.sock.settimeout(2)
            while self.sock.recv(4096):
                pass
        self.sock.close()


def zk_four(port: int, word: str, src: str) -> bytes:
    return raw_tcp(port, word.encode(), src, wait=0.3)


def source_zookeeper(args) -> Source:
    java = need("java", "default-jre-headless")
    jars = [f"/usr/share/java/{j}.jar" for j in ("zookeeper", "slf4j-log4j12", "log4j-1.2")]
    for jar in jars:
        if not os.path.exists(jar):
            raise MissingProgram(f"{jar} not found -- install it with: apt-get install zookeeper")
    rng = random.Random(f"{args.seed}-zookeeper")
    with tempfile.TemporaryDirectory(prefix="onb20-zookeeper-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, cfg, l4j = os.path.join(work, "zookeeper.log"), os.path.join(work, "zoo.cfg"), os.path.join(work, "log4j.properties")
        os.makedirs(os.path.join(work, "data"))
        port = free_port()
        write_atomic(l4j, ZK_LOG4J.format(log=logp))
        open(logp, "ab").close()
        chown_tree(work, "zookeeper", "zookeeper")

        def cfg_text(**kw) -> str:
            return ZK_CFG.format(**({"tick": 500, "work": work, "port": port, "addr": "127.0.0.1", "maxcnx": 12, "extra": ""} | kw))

        def write_cfg(text: str | None = None, **kw) -> None:
            write_atomic(cfg, text if text is not None else cfg_text(**kw))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:
                sv.start("zk", setpriv("zookeeper", "zookeeper", [
                    java, "-Xmx160m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true", "-XX:TieredStopAtLevel=1", "-cp", ":".join([work] + jars),
                    f"-Dlog4j.configuration=file:{l4j}", "-Dzookeeper.jmx.log4j.disable=true",
                    "org.apache.zookeeper.server.ZooKeeperServerMain", cfg]), stdout=out, stderr=out, cwd=work,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work})
            if wait:
                if not listening(port, 40):
                    raise RuntimeError("zookeeper did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("zk", signal.SIGTERM, 15)

        def session(src: str, timeout_ms: int = 6000) -> ZkSession | None:
            try:
                return ZkSession(port, src, timeout_ms)
            except (OSError, ConnectionError, struct.error):
                return None

        def ensure(z: ZkSession, path: str) -> None:
            parts = path.strip("/").split("/")
            for i in range(1, len(parts) + 1):
                z.create("/" + "/".join(parts[:i]))

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(CLIENTS[:5])
            z = session(src, r.choice([4000, 6000, 10000]))
            if z is None:
                return
            try:
                a = r.random()
                svc = r.choice(ZK_SERVICES)
                if a < 0.25:  # a service instance registering itself, looking at its peers, leaving
                    z.create(f"/services/{svc}/instance-", f"{src}:{r.randint(8000, 8099)}".encode(), 3)
                    for _ in range(r.randint(1, 3)):
                        z.children(f"/services/{r.choice(ZK_SERVICES)}", watch=r.random() < 0.5)
                        z.ping()
                elif a < 0.5:  # an application reading its configuration (with watches)
                    for key in r.sample(ZK_KEYS, r.randint(1, 4)):
                        z.get(f"/config/{svc}/{key}", watch=r.random() < 0.6)
                    z.exists(f"/config/{svc}/maintenance", watch=True)
                elif a < 0.6:  # the deploy tool changing a setting (read, then a conditional write)
                    key = f"/config/{svc}/{r.choice(ZK_KEYS)}"
                    err, body = z.get(key)
                    version = struct.unpack(">i", body[-36:-32])[0] if err == 0 and len(body) >= 72 else -1  # (the Stat's version)
                    z.set(key, f"{r.choice(WORDS)}-{r.randint(1, 999)}".encode(), version)
                elif a < 0.72:  # a job taking a lock, working, releasing it
                    job = r.choice(["reindex", "billing-run", "backup", "report"])
                    err, body = z.create(f"/locks/{job}/lock-", src.encode(), 3)
                    z.children(f"/locks/{job}")
                    if err == 0 and len(body) > 4:
                        time.sleep(r.uniform(0.05, 0.3))
                        z.delete(body[4:].decode())
                elif a < 0.8:  # leader election: the first to create the node leads, the others watch it
                    group = r.choice(["scheduler", "indexer"])
                    err, _ = z.create(f"/election/{group}/leader", src.encode(), 1)
                    z.exists(f"/election/{group}/leader", watch=True)
                    if err == 0:
                        time.sleep(r.uniform(0.1, 0.5))
                elif a < 0.9:  # a work queue: producers append, a consumer takes the oldest
                    if r.random() < 0.6:
                        z.create("/queue/jobs/job-", json.dumps({"task": r.choice(WORDS), "n": r.randint(1, 99)}).encode(), 2)
                    else:
                        err, names = z.children("/queue/jobs")
                        if names:
                            first = min(names)
                            z.get(f"/queue/jobs/{first}")
                            z.delete(f"/queue/jobs/{first}")
                else:  # the billing service reading its secrets (digest authentication)
                    z.auth("billing", "Zk-Billing-20")
                    z.get(f"/secure/billing/{r.choice(['db-password', 'api-key'])}")
            except (OSError, ConnectionError, struct.error):
                pass
            finally:
                z.close()

        def monitor(r: random.Random) -> None:
            zk_four(port, r.choice(["ruok", "mntr", "srvr", "stat", "cons", "conf"]), "127.0.0.7")

        def seed() -> None:
            z = session("127.0.0.2")
            if z is None:
                raise RuntimeError("zookeeper: no session for the seed")
            for svc in ZK_SERVICES:
                ensure(z, f"/services/{svc}")
                for key in ZK_KEYS:
                    ensure(z, f"/config/{svc}")
                    z.create(f"/config/{svc}/{key}", f"{rng.choice(WORDS)}-{rng.randint(1, 99)}".encode())
            for d in ["/locks/reindex", "/locks/billing-run", "/locks/backup", "/locks/report", "/election/scheduler",
                      "/election/indexer", "/queue/jobs"]:
                ensure(z, d)
            ensure(z, "/secure")
            z.auth("billing", "Zk-Billing-20")
            acl = [(31, "digest", zk_digest_id("billing", "Zk-Billing-20"))]
            z.create("/secure/billing", b"", 0, acl)
            for key in ["db-password", "api-key"]:
                z.create(f"/secure/billing/{key}", os.urandom(12).hex().encode(), 0, acl)
            z.close()

        write_cfg()
        start()
        log = FileLog(logp)
        say(f"zookeeper on 127.0.0.1:{port}; normal phase...")
        seed()
        state = {"restarts": 0}
        keepers: list = []  # long-lived sessions (the gateways), pinging between rounds

        def keepalive() -> None:
            for k in list(keepers):
                try:
                    k.ping()
                except (OSError, ConnectionError, struct.error):
                    keepers.remove(k)
            while len(keepers) < 3:
                k = session(CLIENTS[len(keepers)], 12000)
                if k is None:
                    break
                with contextlib.suppress(OSError, ConnectionError, struct.error):
                    k.create("/services/gateway/instance-", k.sock.getsockname()[0].encode(), 3)
                keepers.append(k)

        def drop_keepers() -> None:
            for k in keepers:
                k.close()
            keepers.clear()

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
                       for _ in range(rng.randint(2, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 3 == 0:
                monitor(rng)
            if n % 4 == 0:
                keepalive()
            clean_restart(state, elapsed, stop, start, then=drop_keepers)
            time.sleep(rng.uniform(0.05, 0.25))

        def restart_clean() -> None:
            stop()
            write_cfg()
            start()

        try:
            normal = normal_loop(args, log, "zookeeper", round_fn)
            drop_keepers()
            templates = {zk_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, zk_template, zk_problem, head=zk_head))
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("protocol_garbage"):  # random bytes, HTTP, TLS, a huge length on the client port
                    for data in [bytes(rng.getrandbits(8) for _ in range(40)), b"GET /commands/stat HTTP/1.1\r\nHost: zk1.onb20.test\r\n\r\n",
                                 TLS_HELLO, struct.pack(">i", 0x7ffffff0) + b"\0" * 16, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"]:
                        with br.occurrence(1.5):
                            raw_tcp(port, data, rng.choice(OUTSIDERS), wait=0.5)
                with br.phase("oversized_request"):  # a client writing a value past jute.maxbuffer (a whole file in a znode)
                    for size in [1_500_000, 4_000_000]:
                        with br.occurrence(4.0):  # (the session, cut off, expires in the window)
                            z = session(rng.choice(CLIENTS[:5]), 2000)
                            if z is not None:
                                with contextlib.suppress(OSError, ConnectionError, struct.error):
                                    z.set(f"/config/{rng.choice(ZK_SERVICES)}/feature.flags", b"x" * size)
                                z.sock.close()
                with br.phase("four_letter_denied"):  # monitoring scripts using words outside the whitelist
                    for word in ["wchs", "dump", "crst", "stmk"]:
                        with br.occurrence(1.5):
                            zk_four(port, word, "127.0.0.7")
                with br.phase("auth_failure"):  # clients authenticating with schemes the server does not have
                    for scheme, cred in [("sasl", "billing"), ("ldap", "uid=billing,ou=apps"), ("kerberos", "billing@ONB20.TEST"),
                                         ("x509", "CN=billing")]:
                        with br.occurrence(1.5):
                            z = session(rng.choice(CLIENTS[:5]))
                            if z is not None:
                                with contextlib.suppress(OSError, ConnectionError, struct.error):
                                    z.call("auth", struct.pack(">i", 0) + zstr(scheme) + zstr(cred))
                                    z.get("/secure/billing/db-password")
                                z.close()
                with br.phase("session_expired"):  # clients that vanish (a crash, a GC pause) and come back too late
                    for timeout_ms in [2000, 3000, 2000, 4000]:
                        with br.occurrence(2.0):
                            src = rng.choice(CLIENTS[:5])
                            z = session(src, timeout_ms)
                            if z is not None:
                                with contextlib.suppress(OSError, ConnectionError, struct.error):
                                    z.create(f"/services/{rng.choice(ZK_SERVICES)}/instance-", src.encode(), 3)
                                z.sock.close()
                                time.sleep(timeout_ms / 1000 + 2.0)
                                with contextlib.suppress(OSError, ConnectionError, struct.error):
                                    ZkSession(port, src, timeout_ms, z.session_id, z.passwd).sock.close()
                with br.phase("stale_client"):  # clients that have seen a newer zxid (talking to a restored server)
                    for zxid in [0x500000123, 0x200000007, 0x7fffffff00]:
                        with br.occurrence(1.5), contextlib.suppress(OSError):
                            s = socket.create_connection(("127.0.0.1", port), 5, source_address=(rng.choice(CLIENTS[:5]), 0))
                            req = struct.pack(">iqiq", 0, zxid, 6000, 0) + zstr(bytes(16)) + b"\0"
                            s.sendall(struct.pack(">i", len(req)) + req)
                            time.sleep(0.5)
                            s.close()
                with br.phase("too_many_connections"):  # a connection leak from one host
                    for src in ["127.0.0.4", "127.0.0.6", "127.0.0.3"]:
                        with br.occurrence(2.0):
                            socks = []
                            for _ in range(16):
                                with contextlib.suppress(OSError):
                                    socks.append(socket.create_connection(("127.0.0.1", port), 3, source_address=(src, 0)))
                            time.sleep(1.0)
                            for x in socks:
                                x.close()
                        time.sleep(1.0)
                        br.between()
                with br.phase("server_frozen"):  # the server stopped (SIGSTOP, a swap storm) past its clients' timeouts
                    for pause in [4.0, 6.0]:
                        held = [z for z in (session(src, 2000) for src in CLIENTS[:3]) if z is not None]
                        br.between()
                        with br.occurrence(4.0):
                            proc = sv.procs.get("zk")
                            if proc is not None:
                                proc.send_signal(signal.SIGSTOP)
                                time.sleep(pause)
                                proc.send_signal(signal.SIGCONT)
                        for z in held:
                            z.close()
                        time.sleep(1.0)
                        br.between()
                with br.phase("corrupt_data_restart"):  # the data directory damaged while the server was down
                    for how in ["snapshot", "txnlog", "version"]:
                        stop()
                        br.between()
                        data = os.path.join(work, "data")
                        backup = os.path.join(work, "data.bak")
                        shutil.rmtree(backup, ignore_errors=True)
                        shutil.copytree(data, backup, symlinks=True)
                        vdir = os.path.join(data, "version-2")
                        files = sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []
                        snaps = [f for f in files if f.startswith("snapshot.")]
                        logs = [f for f in files if f.startswith("log.")]
                        if how == "snapshot" and snaps:
                            for f in snaps:
                                with open(os.path.join(vdir, f), "r+b") as fh:
                                    fh.seek(0)
                                    fh.write(b"\0" * 64)
                        elif how == "txnlog" and logs:
                            with open(os.path.join(vdir, logs[-1]), "r+b") as fh:
                                fh.seek(0)
                                fh.write(b"GARBAGE!" * 4)
                        else:
                            shutil.rmtree(vdir, ignore_errors=True)
                            write_atomic(vdir, "not a directory\n")
                        chown_tree(data, "zookeeper", "zookeeper")
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(3.0)
                            client(rng)
                        stop()
                        shutil.rmtree(data, ignore_errors=True)
                        with contextlib.suppress(OSError):
                            os.unlink(data)
                        shutil.copytree(backup, data, symlinks=True)
                        chown_tree(data, "zookeeper", "zookeeper")
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_config_restart"):  # zoo.cfg mistakes, the port taken, the server restarted
                    blocker = tcp_blocker()
                    good = cfg_text()
                    for kw in [{"port": blocker.getsockname()[1]}, {"tick": "fast"}, {"addr": "127.0.0.300"},
                               {"text": good.replace("initLimit=10", "initLimit=10;")},
                               {"text": good.replace(f"dataDir={work}/data", "dataDir=")}]:
                        stop()
                        br.between()
                        write_cfg(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(3.0)
                            client(rng)
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            drop_keepers()
            proc = sv.procs.get("zk")
            if proc is not None:
                with contextlib.suppress(OSError):
                    proc.send_signal(signal.SIGCONT)
            stop()
    return Source("zookeeper", "Apache ZooKeeper", dpkg_version("zookeeper"),
                  "ZooKeeper's log4j file (root at INFO, FinalRequestProcessor, NIOServerCnxn and NIOServerCnxnFactory at DEBUG, "
                  "pattern '%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n'), what the JVM says on stdout and stderr "
                  "appended: `2026-12-07 05:40:01,123 [myid:] - DEBUG [NIOServerCxnFactory.AcceptThread:/127.0.0.1:2181:"
                  "NIOServerCnxnFactory$AcceptThread@272] - Accepted socket connection from /127.0.0.3:40123`, `... DEBUG "
                  "[SyncThread:0:FinalRequestProcessor@148] - Processing request:: sessionid:0x100015576160028 type:create cxid:0x1 "
                  "zxid:0x2 txntype:1 reqpath:n/a`, `... INFO  [NIOWorkerThread-1:ZooKeeperServer@1639] - Session "
                  "0x100015576160028: auth success for scheme digest and address /127.0.0.3:40123`, `... INFO  [SessionTracker:"
                  "ZooKeeperServer@632] - Expiring session 0x100015576160061, timeout of 2000ms exceeded`; a WARN or ERROR entry "
                  "continues with its Java exception and stack trace lines (`java.io.IOException: Len error ...`, `\tat org.apache."
                  "zookeeper...`); the start-up banner in ASCII art; each session traced by its id from the connection through "
                  "each request to its close",
                  "ZooKeeper standalone (tickTime 500 ms, maxClientCnxns 12, snapshots every 400 transactions, 4lw whitelist ruok "
                  "stat srvr mntr conf cons envi) with clients on 5 addresses over the ZooKeeper protocol: services registering "
                  "ephemeral sequential instances and listing their peers, applications reading their configuration with "
                  "watches, a deploy tool's conditional writes, jobs taking and releasing locks, leader elections (NodeExists "
                  "for the followers), a work queue, the billing service reading digest-protected secrets, long-lived gateway "
                  "sessions pinging; a monitoring host's four-letter words; 2 clean restarts (SIGTERM)",
                  "protocol_garbage (5: random bytes, HTTP, TLS, a huge length, an SSH banner), oversized_request (2: values past "
                  "jute.maxbuffer), four_letter_denied (4: words outside the whitelist), auth_failure (4: sasl, ldap, kerberos "
                  "and x509 schemes it does not have), session_expired (4: clients vanishing and coming back with their old "
                  "session), stale_client (3: clients having seen a newer zxid), too_many_connections (3: a connection leak past "
                  "maxClientCnxns), server_frozen (2: SIGSTOP past the sessions' timeouts), corrupt_data_restart (3: zeroed "
                  "snapshots, a damaged transaction log, the version-2 folder replaced by a file), bad_config_restart (5: the "
                  "port taken, a non-numeric tickTime, a bad address, a bad initLimit, an empty dataDir)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# icinga2 (Icinga 2.13 daemon, its console log at notice level on stdout, as nagios)
# --------------------------------------------------------------------------

ICINGA_CONF = """\
const PluginDir = "/usr/lib/nagios/plugins"
const NodeName = "mon.onb20.test"
const ZoneName = "master"
include <itl>
include <plugins>
object Endpoint NodeName {{}}
object Zone ZoneName {{ endpoints = [ NodeName ] }}
object ApiListener "api" {{
  bind_host = "127.0.0.1"
  bind_port = {api}
}}
object CheckerComponent "checker" {{}}
object NotificationComponent "notification" {{}}
object ApiUser "root" {{ password = "Icinga-Root-20"; permissions = [ "*" ] }}
object ApiUser "dashboard" {{ password = "Dash-Board-20"; permissions = [ "objects/query/*", "status/query" ] }}
object ApiUser "backup" {{ password = "Backup-Jobs-20"; permissions = [ "actions/process-check-result" ] }}
object ApiUser "ci" {{ password = "Ci-Deploy-20"; permissions = [ "objects/query/*", "actions/schedule-downtime",
  "actions/remove-downtime", "actions/add-comment", "actions/remove-comment", "actions/reschedule-check" ] }}
object CheckCommand "app-health" {{
  command = [ "{work}/plugins/check_app_health" ]
  arguments = {{ "-H" = "$address$", "-s" = "$service.name$" }}
  timeout = 3s
}}
object NotificationCommand "mail-oncall" {{
  command = [ "{work}/plugins/notify_oncall" ]
  env = {{ "NOTIFY_TYPE" = "$notification.type$", "NOTIFY_OBJECT" = "$host.name$!$service.name$",
          "NOTIFY_STATE" = "$service.state$", "NOTIFY_OUTPUT" = "$service.output$" }}
  timeout = 5s
}}
object User "oncall" {{ email = "oncall@onb20.test"; states = [ OK, Warning, Critical, Unknown ]
  types = [ Problem, Recovery, Acknowledgement, DowntimeStart, DowntimeEnd, Custom ] }}
template Host "onb-host" {{ check_command = "dummy"; check_interval = 10s; retry_interval = 5s
  vars.dummy_text = "host reachable" }}
template Service "onb-service" {{ check_interval = 4s; retry_interval = 1s; max_check_attempts = 2 }}
{hosts}
apply Service "disk" {{ import "onb-service"; check_command = "dummy"; check_interval = 6s
  vars.dummy_text = "DISK OK - free space: / 61% (12400 MB)"; assign where true }}
apply Service "load" {{ import "onb-service"; check_command = "dummy"; check_interval = 5s
  vars.dummy_text = "OK - load average: 0.41, 0.38, 0.33"; assign where true }}
apply Service "http" {{ import "onb-service"; check_command = "http"; vars.http_address = "127.0.0.1"
  vars.http_port = host.vars.http_port; vars.http_uri = "/health"; vars.http_timeout = 2
  assign where host.vars.http_port }}
apply Service "app" {{ import "onb-service"; check_command = "app-health"; assign where host.vars.role == "web" }}
apply Service "tcp" {{ import "onb-service"; check_command = "tcp"; vars.tcp_address = "127.0.0.1"
  vars.tcp_port = host.vars.tcp_port; assign where host.vars.tcp_port }}
apply Service "backup" {{ import "onb-service"; check_command = "passive"; enable_active_checks = false
  assign where host.vars.role == "db" || host.vars.role == "cache" }}
apply Notification "mail" to Service {{ command = "mail-oncall"; users = [ "oncall" ]; interval = 0s
  types = [ Problem, Recovery, Acknowledgement, DowntimeStart, DowntimeEnd, Custom ]; assign where true }}
{extra}"""
ICINGA_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\] ")
icinga_template = templater(ICINGA_HEAD, (r"'[^']*'", "'Q'"), (r"\[[\d.:]+\]:\d+", "[IP]:P"), (r"\([^()]*\)", "(_)"),
                            (r"/[\w./%?=&!-]+", "PATH"))
ICINGA_PROBLEM = PROBLEM_WORDS + r"|unauthorized|forbidden|terminating|killing|critical|timeout|bad request|not found|no objects"
ICINGA_HOSTS = {"web01": ("127.0.0.2", "web"), "web02": ("127.0.0.3", "web"), "web03": ("127.0.0.4", "web"),
                "db01": ("127.0.0.5", "db"), "cache01": ("127.0.0.6", "cache"), "lb01": ("127.0.0.7", "lb")}
ICINGA_AGENTS = {"127.0.0.2": "curl/7.88.1", "127.0.0.3": "icingaweb2/2.11.4", "127.0.0.4": "Grafana/10.2.3",
                 "127.0.0.5": "curl/7.88.1", "127.0.0.6": "python-requests/2.31.0", "127.0.0.7": "python-requests/2.31.0",
                 "127.0.0.8": "Go-http-client/1.1", "127.0.0.9": "Mozilla/5.0 zgrab/0.x"}
ICINGA_USERS = {"root": "Icinga-Root-20", "dashboard": "Dash-Board-20", "backup": "Backup-Jobs-20", "ci": "Ci-Deploy-20"}
ICINGA_APP = """#!/bin/sh
# the application's own health probe (asks the app through a status file its agent keeps)
mode=$(cat {work}/plugins/app.mode 2>/dev/null)
case "$mode" in
  hang) sleep 30 ;;
  crash) kill -SEGV $$ ;;
  garbage) printf '\\033[31mTraceback (most recent call last):\\n  File "probe.py", line 7\\n' ; exit 7 ;;
esac
echo "OK - $4 on $2 healthy, 0 errors in the last minute | latency=0.0$(($$ % 90 + 10))s;0.5;1"
exit 0
"""
ICINGA_NOTIFY = """#!/bin/sh
# pages the on-call engineer through the mail relay
mode=$(cat {work}/plugins/notify.mode 2>/dev/null)
if [ "$mode" = "fail" ]; then echo "sendmail: cannot connect to smtp.onb20.test port 25: Connection refused" >&2; exit 1; fi
if [ "$mode" = "hang" ]; then sleep 30; fi
printf '%s %s %s %s\\n' "$NOTIFY_TYPE" "$NOTIFY_OBJECT" "$NOTIFY_STATE" "$NOTIFY_OUTPUT" >> {work}/spool/pages.txt
"""


class HealthPage(QuietHandler):
    """A web host's /health (and a database or cache port) behind the http and tcp checks (modes: ok, hang)."""

    def do_GET(self):
        if self.server.owner.mode == "hang":
            time.sleep(5)
        self.reply(200, b'{"status": "ok", "checks": {"db": "ok", "cache": "ok"}}', "application/json")


def icinga_problem(line: str) -> bool:
    body = ICINGA_HEAD.sub("", line, count=1)
    m = re.match(r"(\w+)/", body)
    if m and m.group(1) in ("warning", "critical"):
        return True
    if re.search(r"status: (?!OK\))", body) or re.search(r"(?:to|from) (?:CRITICAL|WARNING|UNKNOWN|DOWN)\b", body):
        return True  # an API request that did not succeed, a checkable going bad
    return has_problem_word(re.sub(r"'[^']*'", "''", body), ICINGA_PROBLEM)


def icinga_head(line: str) -> bool:
    """An entry starts with its time stamp; a config error's location and source lines continue it."""
    return bool(ICINGA_HEAD.match(line))


def source_icinga2(args) -> Source:
    icinga2, openssl = need("icinga2", "icinga2"), need("openssl", "openssl")
    need("/usr/lib/nagios/plugins/check_http", "monitoring-plugins-basic")
    rng = random.Random(f"{args.seed}-icinga2")
    with tempfile.TemporaryDirectory(prefix="onb20-icinga2-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf = os.path.join(work, "icinga2.log"), os.path.join(work, "etc", "icinga2.conf")
        for d in ("etc", "data", "log", "cache", "spool", "run", "pki", "plugins"):
            os.makedirs(os.path.join(work, d))
        api = free_port()
        pki = os.path.join(work, "data", "certs")  # where the ApiListener looks for its certificate, key and CA
        os.makedirs(pki)
        quiet([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/ca.key", "-out", f"{pki}/ca.crt",
               "-days", "30", "-subj", "/CN=Icinga CA onb20"])
        quiet([openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/mon.onb20.test.key", "-out", f"{pki}/mon.csr",
               "-subj", "/CN=mon.onb20.test"])
        quiet([openssl, "x509", "-req", "-in", f"{pki}/mon.csr", "-CA", f"{pki}/ca.crt", "-CAkey", f"{pki}/ca.key",
               "-CAcreateserial", "-out", f"{pki}/mon.onb20.test.crt", "-days", "30"])
        backends = {h: ModeServer(HealthPage).start() for h, (_, role) in ICINGA_HOSTS.items() if role != "cache"}
        for name, body in (("check_app_health", ICINGA_APP), ("notify_oncall", ICINGA_NOTIFY)):
            write_atomic(os.path.join(work, "plugins", name), body.format(work=work))
            os.chmod(os.path.join(work, "plugins", name), 0o755)
        cache_sock = socket.socket()  # the cache's port (a plain listener)
        cache_sock.bind(("127.0.0.1", 0))
        cache_sock.listen(64)

        def hosts_text() -> str:
            out = []
            for h, (addr, role) in ICINGA_HOSTS.items():
                v = [f'vars.role = "{role}"']
                if role in ("web", "lb"):
                    v.append(f"vars.http_port = {backends[h].port}")
                elif role == "db":
                    v.append(f"vars.tcp_port = {backends[h].port}")
                else:
                    v.append(f"vars.tcp_port = {cache_sock.getsockname()[1]}")
                out.append(f'object Host "{h}" {{ import "onb-host"; address = "{addr}"; {"; ".join(v)} }}')
            return "\n".join(out)

        def conf_text(**kw) -> str:
            return ICINGA_CONF.format(**({"api": api, "work": work, "hosts": hosts_text(), "extra": ""} | kw))

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else conf_text(**kw))

        def mode(name: str, value: str) -> None:
            write_atomic(os.path.join(work, "plugins", name + ".mode"), value + "\n")

        write_conf()
        chown_tree(work, "nagios", "nagios")
        defines = [f"-DConfigDir={work}/etc", f"-DDataDir={work}/data", f"-DLogDir={work}/log", f"-DCacheDir={work}/cache",
                   f"-DSpoolDir={work}/spool", f"-DInitRunDir={work}/run", "-DRunAsUser=nagios", "-DRunAsGroup=nagios"]

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:
                sv.start("icinga2", [icinga2, "daemon", "-c", conf, *defines, "-x", "notice"], stdout=out, stderr=out, cwd=work,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LANG": "C.UTF-8"})
            if wait:
                if not listening(api, 40):
                    raise RuntimeError("icinga2 did not start")
                time.sleep(1.0)

        def stop() -> None:
            sv.stop("icinga2", signal.SIGTERM, 20)

        def reload() -> None:
            proc = sv.procs.get("icinga2")
            if proc is not None:
                proc.send_signal(signal.SIGHUP)

        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE

        def call(method: str, path: str, src: str, user: str | None, body: dict | bytes | None = None, password: str | None = None,
                 timeout: float = 10) -> tuple[int, bytes]:
            c = http.client.HTTPSConnection("127.0.0.1", api, timeout=timeout, context=tls, source_address=(src, 0))
            h = {"Accept": "application/json", "User-Agent": ICINGA_AGENTS.get(src, "curl/7.88.1")}
            if user:
                h["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password or ICINGA_USERS.get(user, '')}".encode()).decode()
            data = json.dumps(body).encode() if isinstance(body, dict) else body
            if method == "POST" or data is not None:
                h["Content-Type"] = "application/json"
            try:
                c.request(method, path, body=data, headers=h)
                r = c.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                return 0, b""
            finally:
                c.close()

        def svc_filter(host: str, service: str) -> dict:
            return {"type": "Service", "filter": f'host.name=="{host}" && service.name=="{service}"'}

        downtimes: list[str] = []

        def client(r: random.Random, src: str | None = None) -> None:
            a = r.random()
            if a < 0.4:  # dashboards: object lists and problem views
                path = r.choice(["/v1/objects/hosts?attrs=name&attrs=state&attrs=last_check_result",
                                 "/v1/objects/services?attrs=name&attrs=state&filter=service.state!=0",
                                 f"/v1/objects/services/{r.choice(list(ICINGA_HOSTS))}!{r.choice(['disk', 'load'])}",
                                 "/v1/status/CIB", "/v1/status/IcingaApplication", "/v1/objects/downtimes", "/v1/objects/comments"])
                call("GET", path, src or r.choice(["127.0.0.3", "127.0.0.4"]), "dashboard" if "status/CIB" not in path else "root")
            elif a < 0.6:  # backup jobs reporting their results
                host = r.choice(["db01", "cache01"])
                call("POST", "/v1/actions/process-check-result", src or "127.0.0.5", "backup",
                     svc_filter(host, "backup") | {"exit_status": 0, "plugin_output": f"OK - backup of {host} completed in "
                                                   f"{r.randint(20, 90)}s, {r.randint(100, 900)} MB",
                                                   "performance_data": [f"duration={r.randint(20, 90)}s", "size=512MB"],
                                                   "check_source": "backup.onb20.test"})
            elif a < 0.72:  # the deploy pipeline: a comment, a downtime around a deploy, a recheck
                host = r.choice(["web01", "web02", "web03"])
                src = src or r.choice(["127.0.0.6", "127.0.0.7"])
                b = r.random()
                if b < 0.3:
                    call("POST", "/v1/actions/add-comment", src, "ci", {"type": "Host", "filter": f'host.name=="{host}"',
                                                                        "author": "ci", "comment": f"deploy {r.choice(WORDS)}-{r.randint(100, 999)}"})
                elif b < 0.5 and not downtimes:
                    now = time.time()
                    _, body = call("POST", "/v1/actions/schedule-downtime", src, "ci",
                                    svc_filter(host, "app") | {"start_time": now, "end_time": now + 60, "author": "ci",
                                                               "comment": "rolling deploy", "fixed": True})
                    with contextlib.suppress(ValueError, KeyError, IndexError):
                        downtimes.append(json.loads(body)["results"][0]["name"])
                elif b < 0.7 and downtimes:
                    call("POST", "/v1/actions/remove-downtime", src, "ci", {"type": "Downtime", "downtime": downtimes.pop()})
                else:
                    call("POST", "/v1/actions/reschedule-check", src, "ci", svc_filter(host, r.choice(["http", "app"])))
            elif a < 0.8:  # an admin's look at the notification and check settings
                call("GET", r.choice(["/v1/objects/notifications?attrs=last_notification", "/v1/objects/checkcommands/app-health",
                                      "/v1/objects/apiusers", "/v1/objects/endpoints"]), src or "127.0.0.2", "root")
            else:
                time.sleep(0.2)

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        mode("app", "ok")
        mode("notify", "ok")
        start()
        log = FileLog(logp)
        say(f"icinga2 (API on 127.0.0.1:{api}); normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
                       for _ in range(rng.randint(1, 2))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 60 == 0:  # an operator reloads after editing the config
                reload()
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.1, 0.4))

        try:
            normal = normal_loop(args, log, "icinga2", round_fn)
            templates = {icinga_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, icinga_template, icinga_problem, head=icinga_head))
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):  # API users with an old password
                    for user, src in [("dashboard", "127.0.0.3"), ("backup", "127.0.0.5"), ("root", "127.0.0.2")]:
                        with br.occurrence(1.5):
                            call("GET", "/v1/objects/hosts", src, user, password=ICINGA_USERS[user].replace("20", "19"))
                with br.phase("unknown_api_user"):  # users that do not exist
                    for user in ["admin", "icingaweb", "nagiosadmin"]:
                        with br.occurrence(1.5):
                            call("GET", "/v1/status", rng.choice(CLIENTS), user, password="changeme")
                with br.phase("permission_denied"):  # users without the permission for what they ask
                    for user, method, path, body in [
                            ("dashboard", "POST", "/v1/actions/reschedule-check", svc_filter("web01", "http")),
                            ("backup", "GET", "/v1/objects/hosts", None),
                            ("ci", "POST", "/v1/actions/process-check-result", svc_filter("db01", "backup") | {"exit_status": 0}),
                            ("dashboard", "DELETE", "/v1/objects/hosts/web03?cascade=1", None)]:
                        with br.occurrence(1.5):
                            call(method, path, rng.choice(CLIENTS), user, body)
                with br.phase("bad_request"):  # broken JSON, unknown URLs and types, broken filters
                    for method, path, body in [("POST", "/v1/actions/process-check-result", b'{"type": "Service", "exit_status": '),
                                               ("GET", "/v1/objects/hostz", None), ("GET", "/v2/status", None),
                                               ("GET", "/v1/objects/services?filter=service.state%3D%3D%3D2", None),
                                               ("POST", "/v1/actions/reboot-host", {"type": "Host"})]:
                        with br.occurrence(1.5):
                            call(method, path, rng.choice(CLIENTS), "root", body)
                with br.phase("unknown_object"):  # results and actions for hosts and services that do not exist
                    for user, path, body in [("backup", "/v1/actions/process-check-result", svc_filter("db02", "backup") | {"exit_status": 0}),
                                             ("ci", "/v1/actions/schedule-downtime", svc_filter("web04", "app") | {
                                                 "start_time": 1, "end_time": 2, "author": "ci", "comment": "deploy"}),
                                             ("backup", "/v1/actions/process-check-result", svc_filter("cache01", "backups") | {"exit_status": 0})]:
                        with br.occurrence(1.5):
                            call("POST", path, rng.choice(CLIENTS), user, body)
                with br.phase("bad_check_result"):  # passive results the API cannot take
                    for extra in [{"exit_status": 7}, {"exit_status": "ok"}, {"plugin_output": "OK"}]:
                        with br.occurrence(1.5):
                            call("POST", "/v1/actions/process-check-result", "127.0.0.5", "backup", svc_filter("db01", "backup") | extra)
                with br.phase("tls_garbage"):  # plain HTTP, random bytes, a broken TLS hello on the API port
                    for data in [b"GET /v1/status HTTP/1.1\r\nHost: mon.onb20.test\r\n\r\n", bytes(rng.getrandbits(8) for _ in range(64)),
                                 TLS_HELLO, b"\x16\x03\x00\x00\x05\x01\x00\x00\x01\x00"]:
                        with br.occurrence(1.5):
                            raw_tcp(api, data, rng.choice(OUTSIDERS), wait=0.5)
                with br.phase("service_down"):  # a web host's application stopped: checks fail, the on-call is paged
                    for host in ["web02", "lb01", "db01"]:
                        backends[host].stop()
                        with br.occurrence(7.0):
                            pass
                        backends[host].start()
                        time.sleep(7.0)
                        br.between()
                with br.phase("check_timeout"):  # checks hanging past their timeout (a stuck application, a hung backend)
                    for how in ["plugin", "backend"]:
                        if how == "plugin":
                            mode("app", "hang")
                        else:
                            backends["web01"].mode = "hang"
                        with br.occurrence(8.0):
                            pass
                        mode("app", "ok")
                        backends["web01"].mode = "ok"
                        time.sleep(7.0)
                        br.between()
                with br.phase("plugin_failure"):  # the probe script removed, made unreadable, crashing, printing garbage
                    plugin = os.path.join(work, "plugins", "check_app_health")
                    for how in ["missing", "perms", "crash", "garbage"]:
                        if how == "missing":
                            os.rename(plugin, plugin + ".old")
                        elif how == "perms":
                            os.chmod(plugin, 0o644)
                        else:
                            mode("app", how)
                        with br.occurrence(6.0):
                            pass
                        if how == "missing":
                            os.rename(plugin + ".old", plugin)
                        os.chmod(plugin, 0o755)
                        mode("app", "ok")
                        time.sleep(7.0)
                        br.between()
                with br.phase("notification_failure"):  # the mail relay down while a service fails
                    for how, host in [("fail", "web03"), ("hang", "web01")]:
                        mode("notify", how)
                        backends[host].stop()
                        with br.occurrence(9.0):
                            pass
                        backends[host].start()
                        time.sleep(7.0)
                        mode("notify", "ok")
                        time.sleep(3.0)
                        br.between()
                with br.phase("bad_reload"):  # a config with a mistake, reloaded (SIGHUP): the new config is refused
                    for extra in ['object Host "web04" { import "onb-host"; address = "127.0.0.8"; vars.role = "web"\n',
                                  'object Service "smtp" { host_name = "mail01"; check_command = "smtp" }\n']:
                        write_conf(extra=extra)
                        with br.occurrence(6.0):
                            reload()
                        write_conf()
                        time.sleep(1.0)
                        br.between()
                with br.phase("bad_config_restart"):  # icinga2.conf mistakes, the port taken, a missing certificate
                    blocker = tcp_blocker()
                    cert = os.path.join(pki, "mon.onb20.test.crt")
                    for kw in [{"api": blocker.getsockname()[1]}, {"cert": True},
                               {"extra": 'object Host "nas01" { import "onb-host"; address = "127.0.0.9"; check_interval = 5x }\n'},
                               {"extra": 'apply Service "ntp" { check_command = "ntp_time"; assign where host.vars.role = "web" }\n'},
                               {"extra": 'object ApiUser "grafana" { password = "x"; permissions = "objects/query/*" }\n'}]:
                        stop()
                        br.between()
                        if kw.pop("cert", False):  # the certificate renewed by hand and not copied back
                            os.rename(cert, cert + ".old")
                        write_conf(**kw)
                        with br.occurrence(5.0):
                            start(wait=False)
                            time.sleep(5.0)
                            client(rng)
                        if os.path.exists(cert + ".old"):
                            stop()
                            os.rename(cert + ".old", cert)
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for b in backends.values():
                b.stop()
            cache_sock.close()
    return Source("icinga2", "Icinga 2", dpkg_version("icinga2"),
                  "icinga2's console log on stdout at notice level (-x notice): the date, time and offset in brackets, a "
                  "severity/facility pair, then the message: `[2026-12-07 05:40:01 +0000] notice/Process: Running command "
                  "'/usr/lib/nagios/plugins/check_tcp' '-H' '127.0.0.1' '-p' '40123' ...: PID 4242`, `... notice/Process: PID 4242 "
                  "(...) terminated with exit code 0`, `... notice/ApiListener: Relaying 'event::CheckResult' message`, `... "
                  "information/HttpServerConnection: Request: GET /v1/objects/hosts (from [127.0.0.3]:40123), user: dashboard, "
                  "agent: icingaweb2/2.11.4, status: OK).`, `... notice/Checkable: State Change: Checkable 'web02!http' soft state "
                  "change from OK to CRITICAL detected.`, `... information/Notification: Sending 'Problem' notification "
                  "'web02!http!mail' for user 'oncall'`; a config error continues with untimestamped location and source lines; "
                  "each check traced from its command through its exit code and state change to the notification, each API "
                  "request from its connection to its disconnection",
                  "icinga2 (dropping to nagios, the REST API over TLS with 4 API users, 6 hosts with dummy, http, tcp and "
                  "application probe checks every few seconds against python services, passive backup services, an on-call "
                  "user notified by a script) with API clients on 6 addresses: dashboards and Grafana querying objects and "
                  "status, backup jobs posting passive results, a deploy pipeline adding comments, scheduling and removing "
                  "downtimes (their notifications) and rescheduling checks, an admin's reads; reloads (SIGHUP); 2 clean "
                  "restarts (SIGTERM)",
                  "wrong_password (3), unknown_api_user (3), permission_denied (4: actions and queries outside a user's "
                  "permissions), bad_request (5: broken JSON, an unknown URL, API version and action, a broken filter), "
                  "unknown_object (3: results and downtimes for hosts and services that do not exist), bad_check_result (3: an "
                  "exit status out of range, a string, a missing one), tls_garbage (4: plain HTTP, random bytes, a broken TLS "
                  "hello, SSLv3), service_down (3: a web, a load balancer and a database service stopped: checks fail, the "
                  "on-call is paged), check_timeout (2: the probe hanging, a web service hanging), plugin_failure (4: the probe "
                  "missing, not executable, crashing, printing garbage), notification_failure (2: the mail relay refusing, the "
                  "script hanging), bad_reload (2: a syntax error, a service of an unknown host, reloaded with SIGHUP), "
                  "bad_config_restart (5: the port taken, a missing certificate, a bad duration, '=' for '==', a string for an "
                  "array)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# bgpd (FRRouting 8.4 bgpd without zebra, debug logging to its log file, as frr)
# --------------------------------------------------------------------------

BGPD_CONF = """\
frr defaults traditional
hostname rr1.onb20.test
log file {log} debugging
log timestamp precision 3
log commands
debug bgp neighbor-events
debug bgp updates in
debug bgp updates out
debug bgp keepalives
!
ip prefix-list CUST-C seq 10 permit 198.51.100.0/24 le 28
ip prefix-list CUST-D seq 10 permit 203.0.113.0/24 le 28
ip prefix-list CUST-D seq 20 permit 192.0.2.0/25
ip prefix-list NO-MARTIANS seq 5 deny 0.0.0.0/8 le 32
ip prefix-list NO-MARTIANS seq 10 deny 10.0.0.0/8 le 32
ip prefix-list NO-MARTIANS seq 15 deny 127.0.0.0/8 le 32
ip prefix-list NO-MARTIANS seq 20 deny 224.0.0.0/4 le 32
ip prefix-list NO-MARTIANS seq 100 permit 0.0.0.0/0 le 24
!
route-map TRANSIT-IN permit 10
 match ip address prefix-list NO-MARTIANS
 set local-preference 90
route-map CUSTOMER-IN permit 10
 set local-preference 200
 set community 65000:100 additive
route-map PEER-IN permit 10
 match ip address prefix-list NO-MARTIANS
 set local-preference 150
!
router bgp 65000
 bgp router-id 10.255.0.1
 no bgp ebgp-requires-policy
 bgp log-neighbor-changes
 timers bgp {keepalive} {hold}
{neighbors}
 address-family ipv4 unicast
  network 100.64.0.0/22
  network 100.64.4.0/22
{afi}
 exit-address-family
!
{extra}"""
BGP_PEERS = {  # address: (AS, description, role)
    "127.0.0.2": (64600, "transit-a", "transit"), "127.0.0.3": (64601, "transit-b", "transit"),
    "127.0.0.4": (65104, "customer-c", "customer"), "127.0.0.5": (65105, "customer-d", "customer"),
    "127.0.0.6": (64900, "ix-peer-e", "peer"), "127.0.0.7": (65000, "edge1", "ibgp")}
BGP_CUSTOMER_NETS = {"127.0.0.4": ["198.51.100.0/24", "198.51.100.0/25", "198.51.100.128/26", "198.51.100.192/26"],
                     "127.0.0.5": ["203.0.113.0/24", "203.0.113.64/26", "192.0.2.0/25"]}
BGP_HEAD = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+ \w+: (?:\[[\w-]+\](?:\[EC \d+\])? )?")
bgp_template = templater(re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+ "), (r"\b\d+(?:\.\d+){3}/\d+\b", "PFX"),
                         (r"path [\d ]+", "path ASPATH"), (r"(?<=community )[\d: ]+", "COMM"), (r"vty\[\d+\]@[>#(][^ ]*", "vty"),
                         (r"(?<=\] )(?:[\w-]+(?:\.[\w-]+)*)(?= \[)", "PEER"))
BGP_PROBLEM = PROBLEM_WORDS + r"|notification|expired|martian|malformed|exceed\w*|mismatch|unsupported|unacceptable|collision"


def bgp_problem(line: str) -> bool:
    m = BGP_HEAD.match(line)
    body = line[m.end():] if m else line
    if m and "[EC " in m.group(0):
        return True  # an error code
    if re.search(r"vty\[\d+\]@", body):
        return False  # an operator's command (its text is the operator's)
    body = body.replace("(Unknown)", "")  # a peer whose host name bgpd does not know
    if re.search(r"went from Established to |sending NOTIFICATION|received NOTIFICATION", body) and "Cease/Administrative" not in body:
        return True
    return has_problem_word(body, BGP_PROBLEM)


def bgp_nexthop(src: str) -> str:
    """A peer router's address on the exchange / transit LAN (its session runs over its loopback, 127.0.0.x)."""
    return f"172.16.{src.split('.')[-1]}.1"


def bgp_msg(kind: int, body: bytes = b"") -> bytes:
    return b"\xff" * 16 + struct.pack(">HB", 19 + len(body), kind) + body


def bgp_open(asn: int, router_id: str, hold: int = 9, version: int = 4, caps: bool = True) -> bytes:
    params = b""
    if caps:
        cap = (b"\x01\x04\x00\x01\x00\x01" + b"\x02\x00" + b"\x41\x04" + struct.pack(">I", asn))
        params = b"\x02" + bytes([len(cap)]) + cap
    return bgp_msg(1, struct.pack(">BHH", version, asn if asn < 65536 else 23456, hold) + socket.inet_aton(router_id)
                   + bytes([len(params)]) + params)


def bgp_prefix(p: str) -> bytes:
    net, ln = p.split("/")
    n = int(ln)
    return bytes([n]) + socket.inet_aton(net)[: (n + 7) // 8]


def bgp_attr(flags: int, code: int, value: bytes) -> bytes:
    return bytes([flags, code, len(value)]) + value


def bgp_update(prefixes: list[str], path: list[int], nexthop: str, med: int | None = None, communities: list[str] = (),
               withdraw: list[str] = (), origin: int = 0, attrs: bytes | None = None, local_pref: int | None = None) -> bytes:
    if attrs is None and prefixes:
        attrs = bgp_attr(0x40, 1, bytes([origin]))
        attrs += bgp_attr(0x40, 2, (bytes([2, len(path)]) + b"".join(struct.pack(">I", a) for a in path)) if path else b"")
        attrs += bgp_attr(0x40, 3, socket.inet_aton(nexthop))
        if med is not None:
            attrs += bgp_attr(0x80, 4, struct.pack(">I", med))
        if local_pref is not None:
            attrs += bgp_attr(0x40, 5, struct.pack(">I", local_pref))
        if communities:
            attrs += bgp_attr(0xC0, 8, b"".join(struct.pack(">HH", *map(int, c.split(":"))) for c in communities))
    attrs = attrs or b""
    wd = b"".join(bgp_prefix(p) for p in withdraw)
    return bgp_msg(2, struct.pack(">H", len(wd)) + wd + struct.pack(">H", len(attrs)) + attrs
                   + b"".join(bgp_prefix(p) for p in prefixes))


class BgpPeer(threading.Thread):
    """A BGP speaker (a transit, a customer, an IX peer or an iBGP edge router): connects to the route server from its
    own address, opens the session, announces its prefixes, keeps it alive, flaps routes when told to."""

    def __init__(self, port: int, src: str, asn: int, prefixes: list[str], rng: random.Random, keepalive: float = 1.0):
        super().__init__(daemon=True)
        self.port, self.src, self.asn, self.prefixes, self.rng, self.keepalive = port, src, asn, list(prefixes), rng, keepalive
        self.router_id = f"10.{asn % 250}.{int(src.split('.')[-1])}.1"
        self.sock, self.stop_ev, self.frozen, self.up = None, threading.Event(), False, False
        self.todo: list[bytes] = []
        self.withdrawn: set[str] = set()
        self.lock = threading.Lock()

    def path(self) -> list[int]:
        if self.asn == 65000:
            return []
        tail = [self.rng.choice([174, 1299, 3356, 6939, 2914, 3257])] if self.asn < 65000 else []
        return [self.asn] * (1 + (self.rng.random() < 0.2)) + tail

    def announce(self, prefixes: list[str]) -> bytes:
        nh = bgp_nexthop(self.src)
        return bgp_update(prefixes, self.path(), nh, med=self.rng.choice([None, 0, 10, 50]),
                          communities=[f"{self.asn % 65536}:{self.rng.choice([100, 200, 300])}"] if self.rng.random() < 0.6 else [],
                          local_pref=100 if self.asn == 65000 else None)

    def send(self, data: bytes) -> None:
        with self.lock:
            self.todo.append(data)

    def flap(self) -> None:
        """A route change: a few prefixes withdrawn, or announced (again, or with other attributes)."""
        live = [p for p in self.prefixes if p not in self.withdrawn]
        if self.rng.random() < 0.35 and len(live) > 2:
            chosen = self.rng.sample(live, self.rng.randint(1, min(3, len(live) - 1)))
            self.withdrawn.update(chosen)
            self.send(bgp_update([], [], "", withdraw=chosen))
        else:
            chosen = sorted(self.withdrawn) or self.rng.sample(live, min(len(live), self.rng.randint(1, 4)))
            self.withdrawn.clear()
            self.send(self.announce(chosen))

    def run(self) -> None:
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), 5, source_address=(self.src, 0))
            self.sock.settimeout(0.2)
            self.sock.sendall(bgp_open(self.asn, self.router_id))
            last = time.time()
            opened = False
            while not self.stop_ev.is_set():
                with contextlib.suppress(socket.timeout, BlockingIOError):
                    data = self.sock.recv(65536)
                    if not data:
                        break
                    if not opened and len(data) >= 19:
                        opened = True
                        self.sock.sendall(bgp_msg(4))
                        for i in range(0, len(self.prefixes), 8):
                            self.sock.sendall(self.announce(self.prefixes[i:i + 8]))
                        self.up = True
                if self.frozen:
                    continue
                with self.lock:
                    todo, self.todo = self.todo, []
                for d in todo:
                    self.sock.sendall(d)
                if time.time() - last >= self.keepalive:
                    self.sock.sendall(bgp_msg(4))
                    last = time.time()
        except OSError:
            pass
        finally:
            self.up = False
            if self.sock is not None:
                self.sock.close()

    def shutdown(self, notify: bool = True) -> None:
        if notify and self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.sendall(bgp_msg(3, bytes([6, 2])))  # Cease / Administrative Shutdown
                time.sleep(0.1)
        self.stop_ev.set()
        self.join(5)


def bgp_raw_session(port: int, src: str, first: bytes, then: list[bytes] = (), wait: float = 1.0) -> None:
    """A speaker that sends ``first`` (an OPEN or anything), answers the server's OPEN with a KEEPALIVE, then sends
    ``then``, and stays ``wait`` seconds."""
    try:
        s = socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0))
    except OSError:
        return
    with contextlib.suppress(OSError), s:
        s.settimeout(1.5)
        s.sendall(first)
        with contextlib.suppress(socket.timeout):
            s.recv(65536)
        if then:
            s.sendall(bgp_msg(4))
            time.sleep(0.3)
            for d in then:
                s.sendall(d)
                time.sleep(0.2)
        end = time.time() + wait
        while time.time() < end:
            with contextlib.suppress(socket.timeout):
                if not s.recv(65536):
                    break


def source_bgpd(args) -> Source:
    bgpd, zebra, vtysh = need("/usr/lib/frr/bgpd", "frr"), need("/usr/lib/frr/zebra", "frr"), need("vtysh", "frr")
    rng = random.Random(f"{args.seed}-bgpd")
    with tempfile.TemporaryDirectory(prefix="onb20-bgpd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf = os.path.join(work, "bgpd.log"), os.path.join(work, "bgpd.conf")
        port = free_port()
        def nets_of(a: str, role: str) -> list[str]:
            if role == "transit":
                return [f"{rng.choice([23, 45, 77, 91, 151, 185])}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.0/24" for _ in range(24)]
            if role == "customer":
                return BGP_CUSTOMER_NETS[a]
            if role == "peer":
                return [f"{rng.choice([31, 62, 80, 94])}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.0/24" for _ in range(8)]
            return ["100.64.8.0/24", "100.64.9.0/24", "100.64.10.0/23"]  # the edge router's own networks (iBGP)

        nets = {a: nets_of(a, role) for a, (_, _, role) in BGP_PEERS.items()}

        def neighbors_text(**kw) -> tuple[str, str]:
            nb, afi = [], []
            for a, (asn, desc, role) in BGP_PEERS.items():
                nb += [f" neighbor {a} remote-as {kw.get('as_' + a, asn)}", f" neighbor {a} description {desc}", f" neighbor {a} passive",
                       f" neighbor {a} update-source lo"]
                afi.append(f"  neighbor {a} route-map {role.upper() if role != 'ibgp' else 'PEER'}-IN in"
                           .replace("TRANSIT", "TRANSIT").replace("CUSTOMER", "CUSTOMER"))
                if role == "customer":
                    afi += [f"  neighbor {a} prefix-list CUST-{'C' if a.endswith('.4') else 'D'} in", f"  neighbor {a} maximum-prefix 6"]
                if role == "ibgp":
                    afi.append(f"  neighbor {a} route-reflector-client")
                if role == "transit":
                    afi.append(f"  neighbor {a} maximum-prefix 60 90")
            return "\n".join(nb), "\n".join(afi)

        def conf_text(**kw) -> str:
            nb, afi = neighbors_text(**kw)
            return BGPD_CONF.format(**({"log": logp, "keepalive": 1, "hold": 3, "neighbors": nb, "afi": afi, "extra": ""} | kw))

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else conf_text(**kw))
            shutil.chown(conf, "frr", "frr")

        write_conf()
        open(logp, "ab").close()
        chown_tree(work, "frr", "frr")

        zdir = os.path.join(work, "zebra")  # zebra, for bgpd's nexthop tracking (its own log is not kept)
        os.makedirs(zdir)
        write_atomic(os.path.join(zdir, "zebra.conf"), "hostname rr1.onb20.test\nip nht resolve-via-default\n")
        chown_tree(zdir, "frr", "frr")
        zserv = os.path.join(zdir, "zserv.api")
        sv.start("zebra", [zebra, "-f", os.path.join(zdir, "zebra.conf"), "-z", zserv, "-i", os.path.join(zdir, "zebra.pid"),
                           "--vty_socket", zdir, "-P", "0", "-u", "frr", "-g", "frr"], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, cwd=zdir)
        for _ in range(100):
            if os.path.exists(zserv):
                break
            time.sleep(0.1)

        def start(wait: bool = True, listen: str = "127.0.0.1", bport: int | None = None) -> None:
            with open(logp, "ab") as out:  # (what bgpd says on stderr before its log file is open)
                sv.start("bgpd", [bgpd, "-f", conf, "-z", zserv, "-n", "-l", listen, "-p", str(bport or port), "-i",
                                  os.path.join(work, "bgpd.pid"), "--vty_socket", work, "-P", "0", "-u", "frr", "-g", "frr"],
                         stdout=out, stderr=out, cwd=work)
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("bgpd did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("bgpd", signal.SIGTERM, 10)

        peers: dict[str, BgpPeer] = {}

        def peer_up(a: str) -> None:
            old = peers.get(a)
            if old is not None and old.is_alive():
                return
            p = BgpPeer(port, a, BGP_PEERS[a][0], nets[a], random.Random(rng.random()))
            p.start()
            peers[a] = p

        def peers_down(notify: bool = True) -> None:
            for p in peers.values():
                p.shutdown(notify)
            peers.clear()

        def all_up() -> None:
            for a in BGP_PEERS:
                peer_up(a)
            time.sleep(1.0)

        def vty(*cmds: str) -> None:
            argv = [vtysh, "--vty_socket", work, "-d", "bgpd"]
            for c in cmds:
                argv += ["-c", c]
            quiet(argv, 15)

        def operator(r: random.Random) -> None:
            a = r.random()
            nb = r.choice(list(BGP_PEERS))
            if a < 0.4:
                vty(r.choice(["show bgp summary", "show ip bgp", f"show bgp neighbors {nb}", "show ip bgp statistics",
                              f"show ip bgp neighbors {nb} received-routes", f"show ip bgp neighbors {nb} advertised-routes"]))
            elif a < 0.6:
                vty(f"clear bgp {nb} soft {r.choice(['in', 'out'])}")
            elif a < 0.75:  # a customer's description or a community policy tweaked
                vty("configure terminal", "router bgp 65000", f"neighbor {nb} description {BGP_PEERS[nb][1]}-{r.choice(WORDS)}")
            elif a < 0.85:
                vty("configure terminal", "route-map CUSTOMER-IN permit 10", f"set local-preference {r.choice([200, 210, 220])}")
            else:  # a maintenance: an edge session reset on purpose
                p = peers.get(nb)
                if p is not None:
                    p.shutdown(True)
                    peers.pop(nb, None)
                time.sleep(0.5)
                peer_up(nb)

        def reconnect_after_restart() -> None:
            peers_down(False)
            all_up()

        start()
        log = FileLog(logp)
        say(f"bgpd on 127.0.0.1:{port}; normal phase...")
        all_up()
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for a in BGP_PEERS:
                peer_up(a)  # a session that went down comes back
            for p in rng.sample(list(peers.values()), rng.randint(1, 3)):
                p.flap()
            if n % 6 == 0:
                operator(rng)
            clean_restart(state, elapsed, stop, start, then=reconnect_after_restart)
            time.sleep(rng.uniform(0.3, 0.8))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()
            reconnect_after_restart()

        def background(r: random.Random) -> None:
            for a in BGP_PEERS:
                if a not in busy:
                    peer_up(a)
            live = [p for a, p in peers.items() if a not in busy and p.up]
            if live:
                r.choice(live).flap()

        busy: set[str] = set()  # peers the breakages are using

        def bare_open(src: str, asn: int | None = None, **kw) -> bytes:
            asn = asn if asn is not None else BGP_PEERS.get(src, (64999,))[0]
            return bgp_open(asn, kw.pop("router_id", f"10.99.{src.split('.')[-1]}.1"), **kw)

        def with_peer(src: str):
            """Take a configured peer's session over (its speaker stopped) for one breakage."""
            busy.add(src)
            p = peers.pop(src, None)
            if p is not None:
                p.shutdown(True)
            time.sleep(1.0)

        def release(src: str) -> None:
            busy.discard(src)
            peer_up(src)
            time.sleep(1.5)

        try:
            normal = normal_loop(args, log, "bgpd", round_fn)
            templates = {bgp_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, bgp_template, bgp_problem))
            with Background(background, random.Random(rng.random()), (0.5, 1.2)):
                with br.phase("unknown_peer"):  # routers bgpd is not configured for
                    for src, asn in [("127.0.0.8", 64512), ("127.0.0.9", 65530), ("127.0.0.8", 65000)]:
                        with br.occurrence(1.5):
                            bgp_raw_session(port, src, bare_open(src, asn), wait=0.5)
                with br.phase("wrong_peer_as"):  # a peer's router configured with another AS number
                    for src, asn in [("127.0.0.4", 65140), ("127.0.0.6", 64901), ("127.0.0.2", 4200000001)]:
                        with_peer(src)
                        br.between()
                        with br.occurrence(2.0):
                            bgp_raw_session(port, src, bare_open(src, asn), wait=0.5)
                        release(src)
                        br.between()
                with br.phase("bad_open"):  # OPENs bgpd cannot accept: version, hold time, router id
                    for src, kw in [("127.0.0.5", {"version": 3}), ("127.0.0.3", {"hold": 2}), ("127.0.0.6", {"router_id": "0.0.0.0"}),
                                    ("127.0.0.7", {"router_id": "10.255.0.1"})]:
                        with_peer(src)
                        br.between()
                        with br.occurrence(2.0):
                            bgp_raw_session(port, src, bare_open(src, **kw), wait=0.5)
                        release(src)
                        br.between()
                with br.phase("malformed_update"):  # UPDATEs with broken attributes
                    bad = [bgp_attr(0x40, 1, b"\x00") + bgp_attr(0x40, 2, b"\x02\x01" + struct.pack(">I", 65104)),  # no NEXT_HOP
                           bgp_attr(0x40, 1, b"\x07") + bgp_attr(0x40, 2, b"\x02\x01" + struct.pack(">I", 65105))
                           + bgp_attr(0x40, 3, socket.inet_aton(bgp_nexthop("127.0.0.5"))),  # a bad ORIGIN
                           bgp_attr(0x40, 1, b"\x00") + bgp_attr(0x40, 2, b"\x02\x09" + struct.pack(">I", 64900))
                           + bgp_attr(0x40, 3, socket.inet_aton(bgp_nexthop("127.0.0.6"))),  # an AS_PATH shorter than it says
                           bgp_attr(0x40, 1, b"\x00\x00\x00")]  # an ORIGIN of the wrong length
                    for src, attrs in zip(["127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.3"], bad):
                        with_peer(src)
                        br.between()
                        with br.occurrence(2.0):
                            bgp_raw_session(port, src, bare_open(src), [bgp_update([nets[src][0]], [], "", attrs=attrs)], wait=1.0)
                        release(src)
                        br.between()
                with br.phase("route_rejected"):  # routes the policy refuses: loops, martians, a customer's foreign prefixes
                    for src, prefixes, path, nh in [("127.0.0.2", ["45.10.20.0/24"], [64600, 65000, 3356], bgp_nexthop("127.0.0.2")),
                                                    ("127.0.0.4", ["8.8.8.0/24", "1.1.1.0/24"], [65104], bgp_nexthop("127.0.0.4")),
                                                    ("127.0.0.3", ["10.20.0.0/16", "127.0.0.0/8"], [64601], bgp_nexthop("127.0.0.3")),
                                                    ("127.0.0.6", ["77.1.2.0/24"], [64900], "127.0.0.1")]:
                        with_peer(src)
                        br.between()
                        with br.occurrence(2.0):
                            bgp_raw_session(port, src, bare_open(src), [bgp_update(nets[src][:2], [BGP_PEERS[src][0]], bgp_nexthop(src)),
                                                                        bgp_update(prefixes, path, nh)], wait=1.0)
                        release(src)
                        br.between()
                with br.phase("max_prefix"):  # a customer leaking a full table past maximum-prefix
                    for src in ["127.0.0.4", "127.0.0.5"]:
                        net = "198.51.100" if src.endswith(".4") else "203.0.113"
                        leak = [f"{net}.{i * 16}/28" for i in range(16)]  # (more specifics its prefix-list allows)
                        with_peer(src)
                        br.between()
                        with br.occurrence(3.0):
                            bgp_raw_session(port, src, bare_open(src), [bgp_update(leak[i:i + 2], [BGP_PEERS[src][0]], bgp_nexthop(src))
                                                                        for i in range(0, len(leak), 2)], wait=1.5)
                        vty(f"clear bgp {src}")  # the operator lets the customer back in once it is fixed
                        release(src)
                        br.between()
                with br.phase("hold_timer_expired"):  # a peer's router freezing (a CPU spike, a stuck process)
                    for src in ["127.0.0.3", "127.0.0.6", "127.0.0.7"]:
                        busy.add(src)
                        p = peers.get(src)
                        with br.occurrence(5.0):
                            if p is not None:
                                p.frozen = True
                        if p is not None:
                            p.shutdown(False)
                            peers.pop(src, None)
                        release(src)
                        br.between()
                with br.phase("peer_reset"):  # sessions dropped without a NOTIFICATION (a link down, a crashed router)
                    for src in ["127.0.0.2", "127.0.0.5", "127.0.0.7"]:
                        busy.add(src)
                        p = peers.pop(src, None)
                        with br.occurrence(2.0):
                            if p is not None:
                                with contextlib.suppress(OSError):
                                    p.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                                p.shutdown(False)
                        release(src)
                        br.between()
                with br.phase("peer_notification"):  # peers closing the session with an error of their own
                    for src, code in [("127.0.0.4", (3, 1)), ("127.0.0.6", (4, 0)), ("127.0.0.3", (6, 1)), ("127.0.0.2", (2, 7))]:
                        with_peer(src)
                        br.between()
                        with br.occurrence(2.0):
                            bgp_raw_session(port, src, bare_open(src), [bgp_msg(3, bytes(code))], wait=0.5)
                        release(src)
                        br.between()
                with br.phase("protocol_garbage"):  # random bytes, HTTP, a bad marker, an unknown message type
                    for src, data in [("127.0.0.9", bytes(rng.getrandbits(8) for _ in range(60))),
                                      ("127.0.0.8", b"GET / HTTP/1.1\r\nHost: rr1.onb20.test\r\n\r\n"),
                                      ("127.0.0.6", b"\xff" * 15 + b"\x00" + struct.pack(">HB", 19, 4)),
                                      ("127.0.0.5", bgp_msg(9, b"\x01\x02"))]:
                        configured = src in BGP_PEERS
                        if configured:
                            with_peer(src)
                            br.between()
                        with br.occurrence(2.0):
                            if configured:
                                bgp_raw_session(port, src, bare_open(src), [data], wait=0.5)
                            else:
                                raw_tcp(port, data, src, wait=0.5)
                        if configured:
                            release(src)
                            br.between()
                with br.phase("bad_config_restart"):  # bgpd.conf mistakes, the port taken, bgpd restarted
                    blocker = tcp_blocker()
                    good = conf_text()
                    for how in ["taken", "command", "asn", "routerid", "address"]:
                        stop()
                        peers_down(False)
                        br.between()
                        bport = None
                        if how == "taken":
                            bport = blocker.getsockname()[1]
                            write_conf()
                        elif how == "command":
                            write_conf(text=good.replace(" bgp log-neighbor-changes\n", " bgp log-neighbour-changes\n"))
                        elif how == "asn":
                            write_conf(text=good.replace("router bgp 65000", "router bgp 4294967296"))
                        elif how == "routerid":
                            write_conf(text=good.replace("bgp router-id 10.255.0.1", "bgp router-id 10.255.0.256"))
                        else:
                            write_conf(text=good.replace("neighbor 127.0.0.5 remote-as 65105", "neighbor 127.0.0.55 remote-as 65105"))
                        with br.occurrence(3.0):
                            start(wait=False, bport=bport)
                            time.sleep(1.5)
                            all_up()
                        stop()
                        peers_down(False)
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            peers_down(False)
            stop()
    return Source("bgpd", "FRRouting bgpd", dpkg_version("frr"),
                  "bgpd's log file at debugging with millisecond time stamps: the date and time, the daemon, a message id in "
                  "brackets (and an error code for error-coded messages), then the message: `2026/12/07 05:40:01.123 BGP: "
                  "[YCKEM-GB33T] 127.0.0.6(Unknown) rcvd 94.179.10.0/24 IPv4 unicast`, `... BGP: [T5AAP-5GA85] 127.0.0.6(Unknown) "
                  "rcvd UPDATE w/ attr: nexthop 172.16.6.1, origin i, metric 10, community 64900:100, path 64900 1299`, `... BGP: "
                  "[HVRW1-N1PQN] u1:s1 send UPDATE 94.179.10.0/24 IPv4 unicast`, `... BGP: [XN4N-E6TJ] 127.0.0.2 KEEPALIVE rcvd`, "
                  "`... BGP: [ZQHFG-DQGX1] 127.0.0.4 went from OpenConfirm to Established`, `... BGP: [HZN6M-XRM1G] %NOTIFICATION: "
                  "sent to neighbor 127.0.0.4 2/2 (OPEN Message Error/Bad Peer AS) 2 bytes fe 14`, `... BGP: [MJ4D6-VBJKV][EC "
                  "33554454] 127.0.0.2 [Error] bgp_read_packet error: Connection reset by peer`, operators' commands (`... BGP: "
                  "[M7Q4P-46WDR] vty[16]@# clear bgp 127.0.0.4 soft in`); each session traced by its neighbor from the "
                  "connection through the OPEN, the capabilities and each UPDATE and prefix to its end",
                  "bgpd (AS 65000 as a route server and reflector, passive sessions over the loopback with update-source lo, "
                  "hold time 3 s, prefix-lists and route-maps per role, maximum-prefix on customers and transits, no kernel "
                  "routes, nexthops tracked by a zebra) with 6 python BGP speakers on 6 addresses: two transits with 24 "
                  "prefixes each, two customers, an IX peer and an iBGP edge, announcing their prefixes, withdrawing and "
                  "announcing them again with changing MEDs, communities and paths, sending keepalives; operators on vtysh "
                  "(show commands, soft clears, description and route-map changes, a session reset for maintenance); 2 clean "
                  "restarts (SIGTERM)",
                  "unknown_peer (3: routers bgpd is not configured for), wrong_peer_as (3), bad_open (4: version 3, a hold time "
                  "of 2 s, router id 0.0.0.0, bgpd's own router id), malformed_update (4: no NEXT_HOP, a bad ORIGIN, an AS_PATH "
                  "shorter than it says, an ORIGIN of the wrong length), route_rejected (4: a path with bgpd's own AS, a "
                  "customer's foreign prefixes, martian prefixes, a martian next hop), max_prefix (2: a customer past its "
                  "maximum-prefix), hold_timer_expired (3: peers frozen), peer_reset (3: TCP resets), peer_notification (4: "
                  "NOTIFICATIONs from peers: UPDATE error, hold timer, maximum prefixes, unsupported capability), "
                  "protocol_garbage (4: random bytes and HTTP from unknown hosts, a bad marker, an unknown message type), "
                  "bad_config_restart (5: the port taken, a misspelt command, an AS number too large, a bad router id, a bad "
                  "neighbor address)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_twentieth", SOURCES, globals(), seed=20020, min_normal_s=75,
               root_for="programs dropping to their own users, ports and processes of several users",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = ("none of the five programs; breakage kinds dropped after a rehearsal because the program wrote no line for "
            "them: git daemon's refused pushes (a non-fast-forward push, a refusing pre-receive hook: the refusal goes to the "
            "client only), verdaccio's HTTP garbage (Node.js's HTTP parser drops it without a word), ZooKeeper's digest "
            "authentication with a wrong password and the ACL denials that follow (NoAuth is an error code for the client; "
            "the request trace shows txntype:-1 as for the routine NodeExists) and requests with an unknown opcode")
ODDITIES = [
    ("rehearsals of each source (--lines 800, --min-normal-seconds 20, written to scratch folders) were checked by eye "
     "before this run; they led to git archive requests naming a file every repository has (a missing path failed the "
     "archive with an error in the background), verdaccio's background keeping its tokens during the breakages (npm's "
     "legacy login makes verdaccio write a level-50 'username is already registered' record for every existing account "
     "before it authenticates), anonymous installs asking for public packages only, searches answered by the uplink, the "
     "uplink breakages using packages nobody had asked for (a cached document hid the broken uplink), verdaccio's HTTP "
     "garbage dropped, ZooKeeper's clients waiting for the server to close the connection after closeSession (a client "
     "closing first makes a WARN with an EndOfStreamException stack trace), the JVM on IPv4, icinga2's certificates in "
     "its data directory (the ApiListener's cert_path / key_path / ca_path warn of their deprecation at every start), "
     "one user agent per API client address, bgpd's peers announcing next hops on 172.16.x.1 (a loopback next hop is "
     "martian: bgpd reset every session), bgpd given a zebra and update-source lo (without zebra every nexthop "
     "registration was an error-coded 'zclient_send_message() failed'), a LOCAL_PREF on the iBGP edge's routes, the "
     "customers' prefixes fixed (a precedence slip gave them the edge's networks, denied by their prefix-lists), a "
     "customer cleared by the operator after its maximum-prefix shutdown, '(Unknown)' (a peer's unknown host name) taken "
     "out of the problem words; nothing had been scored on any of them"),
    ("git_daemon: no time stamps at all; the daemon's 'Disconnected' lines carry its own pid and the child's; what the "
     "services write on stderr comes without the pid when they die early ('fatal: protocol error: bad line length "
     "character: ...', with the client's bytes); 'repository not "
     "exported' and 'does not appear to be a git repository' are told apart only by the repository's export file; a "
     "repository it may not read looks like a missing one; a user path (~alice) under --base-path is only a missing "
     "repository; rejected pushes log nothing but the request; a bad --listen address next to a good one is only logged, the daemon starts on the good one"),
    ("verdaccio: every request writes a first http record with 0 bytes and then the final one; trace records "
     "('[middleware/allow][access] allow for undefined') around each access check; a failed authentication or access "
     "is a level-50 record with the error and its Node.js stack in one JSON string, then the 401 / 403 record; the "
     "'http address' record at every start is level 40 (warn); a YAML error and a missing auth plugin stop it with a "
     "plain 'cannot open config file' line or a level-60 record; the uplink breakages also hit the background's "
     "public packages whose cached documents expired (maxage 5 s), so those events hold the background's errors too"),
    ("zookeeper: the request trace writes two lines per request (Processing request:: ... then the same without the "
     "prefix) and none for a failed ACL check on a read; routine NodeExists (leader elections, locks) show only as "
     "txntype:-1; every start writes the ASCII-art banner and the WARN 'maxCnxns is not configured', also in the restart "
     "windows; clients cut off (oversized requests, expired sessions, connection leaks) give a WARN with an "
     "EndOfStreamException or IOException stack trace each, so those events are long; a frozen server expires the "
     "sessions of its clients only when it resumes; zeroed snapshots are skipped one by one with a WARN and its "
     "stack trace until none is left and the server exits"),
    ("icinga2: a check is four to six lines (the command, its exit, the relayed events, a state change); in normal.log "
     "state changes come only with the starts (UNKNOWN to OK, DOWN to UP), the breakages' are 'soft state change from OK "
     "to CRITICAL' and the like, and their 'Problem' notifications are lines of the same form as the downtimes' ones; the deploy pipeline's downtimes make DowntimeStart / DowntimeEnd notifications in normal.log; an "
     "unknown object in an action is an 'Internal Server Error' status with no message of its own; a missing permission "
     "is a 'Missing permission' warning and a 'Not Found' status; a config error is followed by untimestamped location "
     "and source lines with a caret line; a bad config at a reload leaves the running worker in place; a plugin's "
     "output with an escape sequence or several lines is logged as it is"),
    ("bgpd: keepalives and their timers every second per peer make most of normal.log; every prefix of an UPDATE is a "
     "line of its own, received and then sent to each other peer's update group; a passive neighbor still goes "
     "through Connect with fd -1 after a session ends; peers whose host name bgpd does not know are '127.0.0.4(Unknown)'; "
     "a customer past its maximum-prefix stays shut until an operator clears it (done between two windows); a "
     "neighbor line with a bad address leaves the following neighbor lines refused ('% Specify remote-as or peer-group "
     "commands first', written partly on a line of its own); the breakages that take a configured peer's session "
     "over end it first and start it again after the window (not kept)"),
]

if __name__ == "__main__":
    sys.exit(main())
