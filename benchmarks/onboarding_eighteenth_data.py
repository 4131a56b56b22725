#!/usr/bin/env python3
"""Generate the eighteenth onboarding corpus: real log lines written by real programs, grouped into events.

An eighteenth corpus built exactly like benchmarks/onboarding_seventeenth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs at a restart, garbage on the wire,
stopped, hanging or misbehaving backends, killed and frozen processes, wrong passwords and keys, replayed
traffic...).  It never writes a log line itself (the DNS backends behind kresd, the web site, API and line
service behind the SOCKS proxies are small programs of this script that print nothing into a log; upsd's
dummy-ups drivers, the ss-local / ss-tunnel clients, tinc's other nodes and ZNC's IRC server (ngircd) are
real processes whose own logs are thrown away).  The programs trace multi-step work per named item (a
request by its uid from its plan through the upstream query and the cache in kresd, a client from Connect
through each reply to Disconnect in upsd, a proxied connection from the client through its destination to
the closes in ss-server, a node's meta connection through its authentication to its activation in tincd,
an IRC message from a client through ZNC to the server and back in ZNC).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends knot-resolver nut-server
nut-client shadowsocks-libev tinc znc ngircd; also util-linux (setpriv), coreutils (stdbuf) and python3.  The
clients are python code in this script (DNS over UDP and TCP, the NUT protocol, SOCKS5, tinc's meta protocol
bytes, IRC) and real CLIs (upsc, ss-local, ss-tunnel).  No system service of these packages needs to run: each
daemon is started directly as a plain process, without systemd, in a private temporary folder with private
ports on 127.0.0.x; ZNC runs as nobody; no user is created):

  kresd        Knot Resolver 5.6 (kresd -n, log_level('debug'), its stderr, no time stamps):
               `[plan  ][00000.00] plan 'www.onb18.test.' type 'A' uid [27541.00]`, `[resolv][27541.01]   => id:
               '50784' querying: '.'@'127.0.0.1#40123' zone cut: '.' qname: 'www.onb18.test.' qtype: 'A' proto:
               'udp'`, `[select][27541.01]   => id: '50784' noting selection error: ... error: 1 QUERY_TIMEOUT`.
               Normal: stub resolvers on 6 addresses asking A / AAAA / MX / TXT / SRV over UDP and TCP, two
               zones forwarded to python backends and everything else sent to a third as a stub, ad names
               refused by a policy, operators on the control socket; 2 clean restarts.  Broken: backends
               stopped / dropping queries / answering SERVFAIL, REFUSED, garbage, TC=1, mismatching ids,
               malformed queries from clients, broken kresd.conf / the port taken at a restart.
  upsd         Network UPS Tools 2.8 upsd (-F -DD, its stdout and stderr): `   12.345678\t[D2] Connect from
               127.0.0.3`, `   12.345901\t[D2] write: [destfd=6] [len=26] [VAR rack1 ups.status "OL"]`,
               `   35.000159\tData for UPS [rack2] is stale - check driver`.  Normal: 3 UPSes behind dummy-ups
               drivers, NUT protocol clients on 6 addresses (polls, upsmon-like logins, dashboards, upsc, a
               viewer, an administrator setting variables); operators' reloads (SIGHUP); 2 clean restarts.
               Broken: wrong passwords, unknown users, actions without the right, unknown UPSes and variables,
               garbage on the port, drivers frozen past MAXAGE or killed, broken upsd.conf / upsd.users /
               ups.conf / the port taken at a restart.
  shadowsocks  shadowsocks-libev 3.3 ss-server (-v, its stdout and stderr): ` 2026-12-07 05:40:01 INFO: [40123]
               connect to 127.0.0.1:8080`, ` ... ERROR: failed to handshake with 127.0.0.1: authentication
               error`.  Normal: 5 users' ss-local SOCKS5 proxies browsing a python site by address and by name
               and calling its API, ss-tunnel forwarding a line service over TCP and DNS over UDP; 2 clean
               restarts.  Broken: wrong keys and ciphers, replayed streams, probes with garbage, garbage
               datagrams, destinations refusing, names not resolving, destinations the ACL blocks, broken
               ss.json / the port taken at a restart.
  tinc         tinc 1.0 (tincd -D -d3 as a hub with a dummy device, its log file): `2026-12-07 05:40:01
               tinc.onb18[4242]: Got CHAL_REPLY from alpha (127.0.0.3 port 40123)`, `... alpha (127.0.0.3 port
               40123) didn't respond to PING in 2 seconds`.  Normal: 6 nodes (tincd processes) connecting to
               the hub, leaving and coming back, announcing and retiring subnets, the hub's operator reloading
               and dumping its state by signals; 2 clean restarts.  Broken: unknown nodes, known names with
               another key, garbage and bad IDs on the meta port, nodes frozen past the ping timeout, the hub's
               copies of host files broken, broken tinc.conf / a missing key / the port taken at a restart.
  znc          ZNC 1.8 (znc -f --debug as nobody, its stdout and stderr): `[2026-12-07 05:40:01.123456]
               (alice/onb) CLI -> ZNC [PRIVMSG #ops :deploy of cobalt is done]`, `... (127.0.0.3) ZNC -> CLI
               [:irc.znc.in 464 alice :Invalid Password]`, `... IRC::alice::onb == Connected()`.  Normal: 5
               users with a network on a local ngircd attaching from 6 addresses, talking, joining and leaving
               channels, asking *status; colleagues on the IRC server directly; an operator having ZNC save
               its config; 2 clean restarts.  Broken: wrong passwords and unknown users, the IRC server
               stopped or requiring a password, channels refusing joins, nicks in use, unknown targets,
               garbage on the port, broken znc.conf / the port taken at a restart.

Layout written under --out (default benchmarks/data/onboarding_eighteenth):

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

  * its level marks it as a problem (kresd lines noting a selection error,
    naming an error code, a failed request or a request finished in the failed
    state, and lines with a problem word such as SERVFAIL, REFUSED, bailing out,
    mismatching, truncated; upsd replies ERR ... except ERR FEATURE-NOT-CONFIGURED
    (the STARTTLS probe every upsc makes) and its messages of failures, stale
    data, mismatches, discarded characters and UPSes it cannot connect to;
    ss-server ERROR / WARN lines and INFO lines of blocked, suspicious or repeated
    traffic (not the routine expiry of idle UDP associations); tincd messages of
    failures, bogus data, timeouts, unanswered pings, incompatible peers and
    unknown identities (not the routine 'Received UDP packet from unknown
    source'); ZNC numeric replies 400-599, ERROR lines from the server, *status
    messages of failures and ZNC's own messages of failures; and what any of them
    says on stderr at a failed start), where a problem word counts only as a word
    of the message, never inside a path, a file name, a domain name, a quoted
    name or the text a user typed, or
  * its template (the message with the time stamp, numbers, quoted strings, hex
    ids, IPs and ports masked; request uids, domain names, paths, subnets, channel
    names, user and node names and the trailing text of IRC messages masked too)
    never occurred in the normal phase.

An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_eighteenth_data.py --out benchmarks/data/onboarding_eighteenth \\
        [--sources kresd,upsd,shadowsocks,tinc,znc] [--lines 6000] [--seed 18018] [--min-normal-seconds 75]
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import socket
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
from onboarding_heldout_data import USERS, WORDS, Background, Breaker, Group, Source, entry_selector
from onboarding_seventeenth_data import DnsBackend, TcpBackend, dns_ask, dns_packet
from onboarding_sixth_data import TLS_HELLO, run_quiet
from onboarding_tenth_data import log_has, size_of

SOURCES = ["kresd", "upsd", "shadowsocks", "tinc", "znc"]
ACCOUNTS = USERS[:5]
HOSTS = [f"127.0.0.{i}" for i in range(2, 10)]
CLIENTS = HOSTS[:6]  # 127.0.0.2-7


def udp_send(port: int, data: bytes, src: str = "127.0.0.1", read: bool = True, timeout: float = 1.5) -> bytes:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, 0))
        s.settimeout(timeout)
        s.sendto(data, ("127.0.0.1", port))
        if read:
            return s.recv(4096)
    return b""


def raw_tcp(port: int, data: bytes, src: str = "127.0.0.1", wait: float = 0.5, host: str = "127.0.0.1") -> bytes:
    out = b""
    try:
        s = socket.create_connection((host, port), 5, source_address=(src, 0))
    except OSError:
        return out
    with contextlib.suppress(OSError), s:
        if data:
            s.sendall(data)
        time.sleep(wait)
        s.settimeout(1.5)
        out = s.recv(65536)
    return out


# --------------------------------------------------------------------------
# kresd (Knot Resolver 5, log_level('debug'), its stdout and stderr)
# --------------------------------------------------------------------------

KRESD_CONF = """\
net.listen('127.0.0.1', {port}, {{ kind = 'dns' }})
cache.size = 20 * MB
trust_anchors.remove('.')
modules.unload('priming')
modules.unload('detect_time_skew')
log_level('debug')
policy.add(policy.suffix(policy.DENY_MSG('blocked by the resolver policy'), policy.todnames({{'ads.onb18.test', 'tracker.example.net'}})))
policy.add(policy.suffix(policy.FORWARD({{'127.0.0.1@{corp}'}}), {{todname('corp.onb18.test')}}))
policy.add(policy.suffix(policy.FORWARD({{'127.0.0.1@{zone}'}}), {{todname('onb18.test')}}))
policy.add(policy.all(policy.STUB({{'127.0.0.1@{public}'}})))
{extra}"""
KRESD_NAMES = ["www", "api", "mail", "shop", "cdn", "git", "ci", "vpn", "wiki", "status"]
KRESD_EXTERNAL = ["example.com", "example.org", "example.net", "wikipedia.org", "debian.org", "python.org"]
kresd_template = templater(re.compile(r"^(?!)"), (r"'[^']*'", "'Q'"), (r"\[\d{5}\.\d+\]", "[UID]"),
                           (r"\b(?:[\w-]+\.)+[a-z]{2,}\.(?=[\s,]|$)", "NAME."), (r"/[\w./-]+", "PATH"))
KRESD_PROBLEM = PROBLEM_WORDS + r"|SERVFAIL|REFUSED|bail out|bailing out|mismatching|cancelling|truncated"


def kresd_problem(line: str) -> bool:
    if re.search(r"noting selection error|error: \d+ [A-Z_]+|request failed|finished in state: 8", line):
        return True
    return has_problem_word(re.sub(r"'[^']*'", "''", line), KRESD_PROBLEM)


class ResolverBackend(DnsBackend):
    """An authoritative server behind kresd; modes ok / servfail / drop / refused / garbage / badid / truncate."""

    def answer(self, q: bytes) -> bytes | None:
        mode = self.mode
        self.mode = mode if mode in ("ok", "servfail", "drop") else "ok"
        try:
            r = super().answer(q)
        finally:
            self.mode = mode
        if r is None or len(r) < 4:
            return r
        flags = struct.unpack(">H", r[2:4])[0]
        if mode == "refused":
            r = r[:2] + struct.pack(">H", (flags & ~0xF) | 5) + r[4:]
        elif mode == "garbage":
            r = r[:2] + bytes(random.getrandbits(8) for _ in range(30))
        elif mode == "badid":
            r = struct.pack(">H", (struct.unpack(">H", r[:2])[0] + 7) & 0xFFFF) + r[2:]
        elif mode == "truncate":
            r = r[:2] + struct.pack(">H", flags | 0x0200) + r[4:]
        return r


def source_kresd(args) -> Source:
    kresd = need("kresd", "knot-resolver")
    rng = random.Random(f"{args.seed}-kresd")
    with tempfile.TemporaryDirectory(prefix="onb18-kresd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf = os.path.join(work, "kresd.log"), os.path.join(work, "kresd.conf")
        ports = {k: free_port() for k in ("port", "zone", "corp", "public")}
        backs = {"zone": ResolverBackend(ports["zone"], "onb18.test"), "corp": ResolverBackend(ports["corp"], "corp.onb18.test"),
                 "public": ResolverBackend(ports["public"], "example.com")}
        for b in backs.values():
            b.start()

        def conf_text(**kw) -> str:
            return KRESD_CONF.format(**(ports | {"extra": ""} | kw))

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else conf_text(**kw))

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:  # kresd logs to stderr; a config it cannot use too
                sv.start("kresd", [kresd, "-n", "-c", conf, work], stdout=out, stderr=out, cwd=work)
            if wait:
                if not listening(ports["port"], 20):
                    raise RuntimeError("kresd did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("kresd", signal.SIGTERM, 10)

        def control(cmd: str) -> None:
            """An operator's command on kresd's control socket (rundir/control/PID)."""
            proc = sv.procs.get("kresd")
            if proc is None:
                return
            path = os.path.join(work, "control", str(proc.pid))
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(3)
                s.connect(path)
                s.sendall(cmd.encode() + b"\n")
                time.sleep(0.2)
                s.recv(65536)

        def name(r: random.Random) -> tuple[str, str]:
            a = r.random()
            if a < 0.45:
                n = f"{r.choice(KRESD_NAMES)}.onb18.test"
                if r.random() < 0.06:  # a typo: NXDOMAIN from the zone
                    n = f"nx{r.choice(KRESD_NAMES)}.onb18.test"
            elif a < 0.65:
                n = f"{r.choice(['ldap', 'fileserver', 'printer', 'intranet', 'jira', 'build'])}.corp.onb18.test"
            elif a < 0.95:
                n = f"{r.choice(['www', 'mail', 'static', 'api', ''])}.{r.choice(KRESD_EXTERNAL)}".lstrip(".")
            else:  # ads and trackers: refused by the policy
                n = f"{r.choice(['px', 'ad', 'banner'])}{r.randint(1, 9)}.{r.choice(['ads.onb18.test', 'tracker.example.net'])}"
            return n, r.choice(["A", "A", "A", "AAAA", "AAAA", "MX", "TXT", "SRV"])

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(CLIENTS)
            n, t = name(r)
            if t == "SRV":
                n = f"_{r.choice(['sip', 'xmpp', 'ldap'])}._tcp.{n}"
            dns_ask(ports["port"], n, t, src, tcp=r.random() < 0.15, timeout=3)

        write_conf()
        start()
        log = FileLog(logp)
        say(f"kresd on 127.0.0.1:{ports['port']}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 5))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 30 == 0:  # operators on the control socket
                control(rng.choice(["cache.clear()", "cache.stats()", "stats.list()", "cache.clear('onb18.test')",
                                    "worker.stats()", "net.list()"]))
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.05, 0.3))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        def fresh(zone: str) -> str:
            """A name not in the cache, so that kresd has to ask the backend."""
            return f"{rng.choice(WORDS)}{rng.randint(100, 99999)}.{zone}"

        try:
            normal = normal_loop(args, log, "kresd", round_fn)
            templates = {kresd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, kresd_template, kresd_problem))
            zones = {"zone": "onb18.test", "corp": "corp.onb18.test", "public": "example.org"}
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("upstream_down"):  # a backend stopped (its port closed)
                    for b in ["zone", "public", "corp", "zone"]:
                        backs[b].stop()
                        with br.occurrence(2.0):
                            dns_ask(ports["port"], fresh(zones[b]), "A", rng.choice(CLIENTS), timeout=4)
                        backs[b].start()
                        time.sleep(1.0)
                        br.between()
                for kind, mode, order in [("upstream_timeout", "drop", ["corp", "zone", "public"]),
                                          ("upstream_servfail", "servfail", ["zone", "public", "corp"]),
                                          ("upstream_refused", "refused", ["public", "corp", "zone"]),
                                          ("upstream_malformed", "garbage", ["zone", "corp", "public"]),
                                          ("upstream_truncated", "truncate", ["corp", "public", "zone"]),
                                          ("spoofed_answer", "badid", ["public", "zone", "corp"])]:
                    with br.phase(kind):
                        for b in order:
                            backs[b].mode = mode
                            with br.occurrence(2.0):
                                dns_ask(ports["port"], fresh(zones[b]), rng.choice(["A", "AAAA", "MX"]), rng.choice(CLIENTS),
                                        timeout=4 if mode == "drop" else 2)
                            backs[b].mode = "ok"
                            time.sleep(1.0)
                            br.between()
                with br.phase("malformed_query"):  # clients sending packets that are not DNS queries
                    q = dns_packet(f"www.{rng.choice(KRESD_EXTERNAL)}", "A", rng.getrandbits(16))
                    for data in [bytes(rng.getrandbits(8) for _ in range(48)),  # random bytes
                                 q[:2] + struct.pack(">HHHHH", 0x0100, 0, 0, 0, 0),  # no question
                                 q[:4] + struct.pack(">H", 2) + q[6:],  # two questions announced, one sent
                                 q[:-2] + struct.pack(">H", 3),  # class CHAOS
                                 q[:-4] + struct.pack(">HH", 252, 1),  # AXFR over UDP
                                 q + bytes(24)]:  # trailing garbage
                        with br.occurrence(1.5):
                            udp_send(ports["port"], data, rng.choice(CLIENTS))
                with br.phase("bad_config_restart"):  # kresd.conf mistakes, the port taken, kresd restarted
                    blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    blocker.bind(("127.0.0.1", 0))
                    good = conf_text()
                    for kw in [{"port": blocker.getsockname()[1]},
                               {"text": good.replace("cache.size = 20 * MB", "cache.size = 20 * MiB")},
                               {"text": good.replace("log_level('debug')", "log_level('debug'")},
                               {"text": good.replace(f"net.listen('127.0.0.1', {ports['port']}",
                                                     f"net.listen('127.0.0.300', {ports['port']}")},
                               {"text": good + "modules.load('hints > iterate')\nhints.add_hosts('/etc/kresd/hosts.local')\n"}]:
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
    return Source("kresd", "Knot Resolver", dpkg_version("knot-resolver"),
                  "kresd's stderr with log_level('debug'), no time stamps: a subsystem tag in brackets, a request id "
                  "(uid.sub-query) in brackets and an indented message: `[plan  ][00000.00] plan 'www.onb18.test.' type 'A' "
                  "uid [27541.00]`, `[resolv][27541.01]   => id: '50784' querying: '.'@'127.0.0.1#40123' zone cut: '.' "
                  "qname: 'www.onb18.test.' qtype: 'A' proto: 'udp'`, `[iterat][27541.01]   <= rcode: NOERROR`, `[cache "
                  "][27541.01]   => stashed www.onb18.test. A, rank 020, 20 B total, incl. 0 RRSIGs`, `[resolv][27541.01]   "
                  "finished in state: 4, queries: 1, mempool: 16400 B`; [system] lines at start-up; each request traced by "
                  "its uid from its plan through the upstream query and the cache to its end state",
                  "kresd (cache, no DNSSEC trust anchor, a policy refusing ad and tracker names, corp.onb18.test and "
                  "onb18.test forwarded to two python authoritative backends, everything else sent to a third one as a "
                  "stub) with stub resolvers on 6 addresses asking A / AAAA / MX / TXT / SRV over UDP and TCP (a few "
                  "NXDOMAIN typos, some refused ad names, many answers from the cache); operators on the control socket "
                  "(cache.clear, stats); 2 clean restarts (SIGTERM)",
                  "upstream_down (4: a backend's port closed), upstream_timeout (3: a backend dropping queries), "
                  "upstream_servfail (3), upstream_refused (3), upstream_malformed (3: garbage answers), "
                  "upstream_truncated (3: TC=1 over UDP and TCP), spoofed_answer (3: answers with a mismatching id), "
                  "malformed_query (6: random bytes, no question, a wrong question count, class CHAOS, AXFR over UDP, trailing data), bad_config_restart (5: "
                  "the port taken, an unknown unit, a Lua syntax error, a bad address, a missing hosts file)",
                  normal, br.errors)



# --------------------------------------------------------------------------
# upsd (Network UPS Tools 2.8: upsd -F -DD in front of dummy-ups drivers, its stdout and stderr)
# --------------------------------------------------------------------------

UPSD_CONF = """\
LISTEN 127.0.0.1 {port}
MAXAGE 6
MAXCONN 64
{extra}"""
UPSD_USERS = """\
[monuser]
  password = Mon-Onb18
  upsmon primary
[admin]
  password = Adm-Onb18
  actions = SET
  instcmds = ALL
[viewer]
  password = View-Onb18
"""
UPS_CONF = """\
[rack1]
  driver = dummy-ups
  port = rack1.seq
  desc = "Rack 1, core switches"
[rack2]
  driver = dummy-ups
  port = rack2.seq
  desc = "Rack 2, storage"
[rack3]
  driver = dummy-ups
  port = rack3.seq
  desc = "Rack 3, compute"
"""
UPS_DEV = """\
device.mfr: Eaton
device.model: 5PX 1500
ups.mfr: Eaton
ups.model: 5PX 1500
ups.serial: G118E{n}0042
ups.status: OL
ups.load: {load}
ups.delay.shutdown: 20
ups.timer.shutdown: -1
battery.charge: 100
battery.charge.low: 20
battery.runtime: {runtime}
battery.voltage: 54.6
input.voltage: 230.1
input.frequency: 50.0
output.voltage: 230.0
"""
UPSD_HEAD = re.compile(r"^ *\d+\.\d+\t")
upsd_template = templater(UPSD_HEAD, (r"/[\w./-]+", "PATH"), (r"\[len=\d+\] \[[A-Z]+ [^\]]*\]", lambda m: re.sub(
    r"(\[[A-Z]+ [A-Z.]+(?: [\w.]+)?).*", r"\1 ...]", m.group(0))))


def upsd_problem(line: str) -> bool:
    body = UPSD_HEAD.sub("", line, count=1)
    m = re.search(r"\[ERR ([A-Z-]+)\]", body)
    if m:  # the STARTTLS probe every upsc makes: routine
        return m.group(1) != "FEATURE-NOT-CONFIGURED"
    if body.startswith("[D2] write:"):
        return False
    return has_problem_word(body, PROBLEM_WORDS + r"|stale|mismatch|discarding|Can't|not currently connected")


def nut_session(port: int, src: str, cmds: list[bytes]) -> list[bytes]:
    """One client connection speaking the NUT protocol: each command, its answer (multi-line lists read to END)."""
    out = []
    try:
        s = socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0))
    except OSError:
        return out
    with contextlib.suppress(OSError), s:
        s.settimeout(3)
        f = s.makefile("rb")
        for c in cmds:
            s.sendall(c + b"\n")
            line = f.readline()
            out.append(line)
            if line.startswith(b"BEGIN LIST"):
                while line and not line.startswith(b"END LIST"):
                    line = f.readline()
        f.close()
    return out


def source_upsd(args) -> Source:
    upsd, dummy = need("/lib/nut/upsd", "nut-server"), need("/lib/nut/dummy-ups", "nut-server")
    upsc = need("upsc", "nut-client")
    rng = random.Random(f"{args.seed}-upsd")
    with tempfile.TemporaryDirectory(prefix="onb18-upsd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        state_dir = os.path.join(work, "state")
        os.makedirs(state_dir, mode=0o770)
        logp, port = os.path.join(work, "upsd.log"), free_port()
        env = os.environ | {"NUT_CONFPATH": work, "NUT_STATEPATH": state_dir}
        write_atomic(os.path.join(work, "ups.conf"), UPS_CONF)
        write_atomic(os.path.join(work, "upsd.users"), UPSD_USERS)
        write_atomic(os.path.join(work, "nut.conf"), "MODE=netserver\n")
        for n, (lo, hi) in ((1, (21, 26)), (2, (38, 61)), (3, (52, 88))):
            steps = "".join(f"ups.load: {rng.randint(lo, hi)}\ninput.voltage: {rng.uniform(226, 234):.1f}\n"
                            f"battery.runtime: {rng.randint(900, 2400)}\nTIMER {rng.randint(2, 5)}\n" for _ in range(8))
            write_atomic(os.path.join(work, f"rack{n}.seq"), UPS_DEV.format(n=n, load=lo, runtime=1800) + "TIMER 2\n" + steps)
        racks = ["rack1", "rack2", "rack3"]

        def write_conf(extra: str = "", text: str | None = None, **kw) -> None:
            write_atomic(os.path.join(work, "upsd.conf"), text if text is not None else UPSD_CONF.format(
                **({"port": port, "extra": extra} | kw)))

        def start_driver(ups: str) -> None:
            sv.start(f"drv_{ups}", [dummy, "-a", ups, "-u", "root", "-F"], env=env, cwd=work,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:  # upsd's debug output and its stderr
                sv.start("upsd", [upsd, "-u", "root", "-F", "-DD"], env=env, cwd=work, stdout=out, stderr=out)
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("upsd did not start")
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("upsd", signal.SIGTERM, 10)

        def client(r: random.Random, src: str | None = None) -> None:
            src = src or r.choice(CLIENTS)
            ups = r.choice(racks)
            a = r.random()
            if a < 0.3:  # monitoring polls (no login)
                nut_session(port, src, [f"GET VAR {ups} {v}".encode() for v in r.sample(
                    ["ups.status", "battery.charge", "battery.runtime", "ups.load", "input.voltage", "output.voltage"],
                    r.randint(1, 4))] + [b"LOGOUT"])
            elif a < 0.5:  # upsmon-like sessions of the hosts powered by a UPS
                nut_session(port, src, [b"USERNAME monuser", b"PASSWORD Mon-Onb18", f"LOGIN {ups}".encode()]
                            + [f"GET VAR {ups} ups.status".encode()] * r.randint(1, 3)
                            + [f"GET NUMLOGINS {ups}".encode(), b"LOGOUT"])
            elif a < 0.7:  # dashboards reading everything
                nut_session(port, src, [b"VER", b"NETVER", b"LIST UPS", f"LIST VAR {ups}".encode(),
                                        f"GET UPSDESC {ups}".encode(), f"GET DESC {ups} ups.load".encode(),
                                        f"LIST CMD {ups}".encode(),
                                        f"LIST RW {ups}".encode(), b"LOGOUT"])
            elif a < 0.82:  # the upsc command line
                run_quiet([upsc, f"{ups}@127.0.0.1:{port}"] + ([r.choice(["ups.status", "battery.charge", "ups.load"])]
                                                               if r.random() < 0.5 else []), 10)
            elif a < 0.92:  # a viewer logged in, looking at a UPS
                nut_session(port, src, [b"USERNAME viewer", b"PASSWORD View-Onb18", f"LIST VAR {ups}".encode(),
                                        f"GET VAR {ups} ups.status".encode(), b"LOGOUT"])
            else:  # an administrator tuning the shutdown delay
                nut_session(port, src, [b"USERNAME admin", b"PASSWORD Adm-Onb18", f"GET VAR {ups} ups.delay.shutdown".encode(),
                                        f"SET VAR {ups} ups.delay.shutdown {r.choice([20, 30, 45, 60])}".encode(), b"LOGOUT"])

        for ups in racks:
            start_driver(ups)
        time.sleep(1.0)
        write_conf()
        start()
        log = FileLog(logp)
        say(f"upsd on 127.0.0.1:{port} with {', '.join(racks)}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 3))
                       for _ in range(rng.randint(2, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 40 == 0:  # an operator reloads the configuration (upsd -c reload)
                proc = sv.procs.get("upsd")
                if proc is not None:
                    proc.send_signal(signal.SIGHUP)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.1, 0.4))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        try:
            normal = normal_loop(args, log, "upsd", round_fn)
            templates = {upsd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, upsd_template, upsd_problem))
            with Background(client, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):  # hosts and admins with old passwords
                    for user, pw, cmd in [("monuser", "Mon-Onb17", b"LOGIN rack2"), ("admin", "adm-onb18", b"SET VAR rack1 ups.delay.shutdown 30"),
                                          ("monuser", "", b"LOGIN rack3"), ("admin", "Admin-Onb18", b"SET VAR rack3 ups.delay.shutdown 45")]:
                        with br.occurrence(1.0):
                            nut_session(port, rng.choice(CLIENTS), [f"USERNAME {user}".encode(), f"PASSWORD {pw}".encode(), cmd, b"LOGOUT"])
                with br.phase("unknown_user"):  # accounts upsd does not know
                    for user, cmd in [("upsmon", b"LOGIN rack1"), ("root", b"SET VAR rack2 ups.delay.shutdown 5"), ("monitor", b"LOGIN rack3")]:
                        with br.occurrence(1.0):
                            nut_session(port, rng.choice(CLIENTS), [f"USERNAME {user}".encode(), b"PASSWORD secret", cmd, b"LOGOUT"])
                with br.phase("not_permitted"):  # accounts without the right: SET, INSTCMD, FSD
                    for user, pw, cmd in [("viewer", "View-Onb18", b"SET VAR rack1 ups.delay.shutdown 5"),
                                          ("monuser", "Mon-Onb18", b"INSTCMD rack2 load.off"),
                                          ("viewer", "View-Onb18", b"FSD rack3"),
                                          ("viewer", "View-Onb18", b"INSTCMD rack1 load.off")]:
                        with br.occurrence(1.0):
                            nut_session(port, rng.choice(CLIENTS), [f"USERNAME {user}".encode(), f"PASSWORD {pw}".encode(), cmd, b"LOGOUT"])
                with br.phase("unknown_ups"):  # clients configured for UPSes and variables that do not exist
                    for cmds in [[b"GET VAR rack4 ups.status"], [b"USERNAME monuser", b"PASSWORD Mon-Onb18", b"LOGIN ups1"],
                                 [b"LIST VAR rack-1"], [b"GET VAR rack2 battery.temperature", b"GET VAR rack2 ups.beeper.status"]]:
                        with br.occurrence(1.0):
                            nut_session(port, rng.choice(CLIENTS), cmds + [b"LOGOUT"])
                with br.phase("protocol_garbage"):  # TLS, HTTP, binary and oversized lines on the NUT port
                    for data in [TLS_HELLO, b"GET / HTTP/1.1\r\nHost: ups.onb18.test\r\n\r\n",
                                 bytes(rng.getrandbits(8) for _ in range(64)), b"LIST VAR " + b"A" * 3000 + b"\n",
                                 b"STARTTLS\nLIST VAR rack1\nUSERNAME\nPASSWORD\n"]:
                        with br.occurrence(1.0):
                            raw_tcp(port, data, rng.choice(CLIENTS))
                with br.phase("driver_stale"):  # a driver hanging (SIGSTOP) past MAXAGE: stale data
                    for ups in ["rack2", "rack1", "rack3"]:
                        proc = sv.procs.get(f"drv_{ups}")
                        with br.occurrence(2.0):
                            if proc is not None:
                                proc.send_signal(signal.SIGSTOP)
                            time.sleep(9.0)
                            nut_session(port, rng.choice(CLIENTS), [f"GET VAR {ups} ups.status".encode(), b"LOGOUT"])
                            if proc is not None:
                                proc.send_signal(signal.SIGCONT)
                        time.sleep(3.0)
                        br.between()
                with br.phase("driver_down"):  # a driver crashed (SIGKILL): upsd loses the UPS
                    for ups in ["rack3", "rack1", "rack2"]:
                        proc = sv.procs.get(f"drv_{ups}")
                        with br.occurrence(2.0):
                            if proc is not None:
                                proc.kill()
                            time.sleep(3.0)
                            nut_session(port, rng.choice(CLIENTS), [f"GET VAR {ups} ups.status".encode(), b"LOGOUT"])
                            nut_session(port, rng.choice(CLIENTS), [b"USERNAME monuser", b"PASSWORD Mon-Onb18",
                                                                    f"LOGIN {ups}".encode(), b"LOGOUT"])
                        sv.forget(f"drv_{ups}")
                        start_driver(ups)
                        time.sleep(4.0)
                        br.between()
                with br.phase("bad_config_restart"):  # upsd.conf / ups.conf / upsd.users mistakes, the port taken
                    blocker = tcp_blocker()
                    for kw, files in [({"port": blocker.getsockname()[1]}, {}),
                                      ({"extra": "MAXCONN sixty\n"}, {}),
                                      ({"extra": "LISTEN_ALL yes\n"}, {}),
                                      ({}, {"upsd.users": UPSD_USERS.replace("[viewer]", "[viewer")}),
                                      ({}, {"ups.conf": "# all UPS moved to the new rack server\n"})]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        saved = {}
                        for name, text in files.items():
                            with open(os.path.join(work, name)) as f:
                                saved[name] = f.read()
                            write_atomic(os.path.join(work, name), text)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(2.0)
                            client(rng)
                        for name, text in saved.items():
                            write_atomic(os.path.join(work, name), text)
                        restart_clean()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for ups in racks:
                proc = sv.procs.get(f"drv_{ups}")
                if proc is not None:
                    with contextlib.suppress(OSError):
                        proc.send_signal(signal.SIGCONT)
                sv.stop(f"drv_{ups}", signal.SIGTERM, 5)
    return Source("upsd", "Network UPS Tools upsd", dpkg_version("nut-server"),
                  "upsd's output in the foreground at debug level 2 (-F -DD): seconds since its start with microseconds, a "
                  "tab, a debug level in brackets for debug messages, then the message: `   12.345678\\t[D2] Connect from "
                  "127.0.0.3`, `...\\t[D2] write: [destfd=6] [len=26] [VAR rack1 ups.status \"OL\"]`, `...\\tUser "
                  "monuser@127.0.0.3 logged into UPS [rack2]`, `...\\tData for UPS [rack2] is stale - check driver`, "
                  "`...\\t[D2] mainloop: polling 5 filedescriptors`; untimestamped stderr lines (addchar warnings, a "
                  "config it cannot use); the clock restarts at 0 at every start; each client traced from Connect "
                  "through each reply written to its file descriptor to Disconnect",
                  "upsd (3 UPSes: dummy-ups drivers looping through changing load, voltage and runtime) with NUT protocol clients on 6 addresses: monitoring polls, upsmon-like logins, "
                  "dashboards listing variables, commands and writable variables, the upsc command line (which tries "
                  "STARTTLS first), a viewer account, an administrator setting the shutdown delay; operators' reloads (SIGHUP); 2 clean restarts (SIGTERM)",
                  "wrong_password (4), unknown_user (3), not_permitted (4: SET / INSTCMD / FSD without the right), unknown_ups (4: unknown UPS names and variables), protocol_garbage (5: TLS, "
                  "HTTP, binary bytes, an oversized line, commands without arguments), driver_stale (3: a driver "
                  "SIGSTOPped past MAXAGE), driver_down (3: a driver SIGKILLed), bad_config_restart (5: the port taken, "
                  "a bad MAXCONN, an unknown directive, a broken upsd.users, an empty ups.conf)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# shadowsocks (ss-server -v of shadowsocks-libev, its stdout and stderr)
# --------------------------------------------------------------------------

SS_METHOD, SS_KEY = "chacha20-ietf-poly1305", "Onb18-Socks-7Kq2"
SS_ACL = """\
[proxy_all]

[outbound_block_list]
127.0.0.9
10.0.0.0/8
192.168.0.0/16
"""
SS_HEAD = re.compile(r"^ ?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
ss_template = templater(SS_HEAD, (r"/[\w./-]+", "PATH"))


def ss_problem(line: str) -> bool:
    body = SS_HEAD.sub("", line, count=1)
    if body.startswith("INFO: [udp] connection timeout"):
        return False  # routine: an idle UDP association expired
    if re.match(r"(ERROR|WARN|WARNING|FATAL)\b", body):
        return True
    return has_problem_word(body, PROBLEM_WORDS + r"|blocked|suspicious|repeat")


class ShopPage(QuietHandler):
    """The web site and API reached through the proxy (HTTP/1.0, one request per connection)."""

    def do_GET(self):
        body = (b'{"ok": true, "items": [3, 5, 8]}' if self.path.startswith("/api") else
                b"<html><body>" + self.path.encode() + b"</body></html>" * 12)
        self.reply(200, body, "application/json" if self.path.startswith("/api") else "text/html")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.reply(201, b'{"created": true}', "application/json")


class Recorder:
    """A TCP relay in front of ss-server (a load balancer on the path) that keeps the first bytes each client sent:
    what a man in the middle would capture and replay."""

    def __init__(self, target: int):
        self.target, self.port, self.captured, self.sock = target, free_port(), [], None

    def start(self) -> "Recorder":
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(32)
        threading.Thread(target=self.loop, daemon=True).start()
        return self

    def loop(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(c,), daemon=True).start()

    def relay(self, c: socket.socket) -> None:
        try:
            u = socket.create_connection(("127.0.0.1", self.target), 5)
        except OSError:
            c.close()
            return

        def pipe(a: socket.socket, b: socket.socket, keep: bool) -> None:
            first = keep
            with contextlib.suppress(OSError):
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    if first:
                        self.captured = (self.captured + [d])[-20:]
                        first = False
                    b.sendall(d)
            for x in (a, b):
                with contextlib.suppress(OSError):
                    x.shutdown(socket.SHUT_RDWR)

        t = threading.Thread(target=pipe, args=(c, u, True), daemon=True)
        t.start()
        pipe(u, c, False)
        t.join(30)
        c.close()
        u.close()

    def stop(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None


def socks_request(lhost: str, lport: int, host: str, port: int, payload: bytes, timeout: float = 5) -> bytes:
    """One request through a SOCKS5 proxy (ss-local): CONNECT host:port, send payload, read until closed."""
    out = b""
    try:
        s = socket.create_connection((lhost, lport), timeout)
    except OSError:
        return out
    with contextlib.suppress(OSError), s:
        s.settimeout(timeout)
        s.sendall(b"\x05\x01\x00")
        s.recv(2)
        try:
            addr = b"\x01" + socket.inet_aton(host)
        except OSError:
            addr = b"\x03" + bytes([len(host)]) + host.encode()
        s.sendall(b"\x05\x01\x00" + addr + struct.pack(">H", port))
        if len(s.recv(10)) < 2:
            return out
        s.sendall(payload)
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    return out


def source_shadowsocks(args) -> Source:
    ss_server, ss_local, ss_tunnel = (need("ss-server", "shadowsocks-libev"), need("ss-local", "shadowsocks-libev"),
                                      need("ss-tunnel", "shadowsocks-libev"))
    rng = random.Random(f"{args.seed}-shadowsocks")
    with tempfile.TemporaryDirectory(prefix="onb18-ss-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, conf, acl = os.path.join(work, "ss-server.log"), os.path.join(work, "ss.json"), os.path.join(work, "acl.txt")
        write_atomic(acl, SS_ACL)
        port = free_port()
        web, api = ModeServer(ShopPage).start(), ModeServer(ShopPage).start()
        line_port, dns_port = free_port(), free_port()
        lines_backend, dns_backend = TcpBackend(line_port), DnsBackend(dns_port, "onb18.test")
        lines_backend.start()
        dns_backend.start()
        base = {"server": "127.0.0.1", "server_port": port, "password": SS_KEY, "method": SS_METHOD, "timeout": 30,
                "mode": "tcp_and_udp"}

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else json.dumps(base | kw, indent=2) + "\n")

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:
                sv.start("ss-server", [ss_server, "-c", conf, "-v", "--acl", acl], stdout=out, stderr=out, cwd=work)
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("ss-server did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("ss-server", signal.SIGTERM, 10)

        recorder = Recorder(port).start()
        locals_ = {}  # the users' ss-local proxies: address -> local port; 127.0.0.7 goes through the recording relay
        for i, addr in enumerate(["127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7"]):
            lport = free_port()
            locals_[addr] = lport
            sv.start(f"local{i}", [ss_local, "-s", "127.0.0.1", "-p", str(recorder.port if addr == "127.0.0.7" else port),
                                   "-l", str(lport), "-b", addr, "-k", SS_KEY, "-m", SS_METHOD, "-t", "30"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
        dns_local, line_local = free_port(), free_port()
        sv.start("tunnel_dns", [ss_tunnel, "-s", "127.0.0.1", "-p", str(port), "-l", str(dns_local), "-b", "127.0.0.2", "-k",
                                SS_KEY, "-m", SS_METHOD, "-U", "-L", f"127.0.0.1:{dns_port}"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
        sv.start("tunnel_line", [ss_tunnel, "-s", "127.0.0.1", "-p", str(port), "-l", str(line_local), "-b", "127.0.0.2", "-k",
                                 SS_KEY, "-m", SS_METHOD, "-L", f"127.0.0.1:{line_port}"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
        pages = ["/", "/products", "/products/oak-lamp", "/cart", "/account", "/static/app.js", "/static/site.css", "/blog/2026/12"]

        def client(r: random.Random) -> None:
            addr = r.choice(list(locals_))
            a = r.random()
            if a < 0.5:  # browsing through the proxy (by address or by name)
                host = "localhost" if r.random() < 0.25 else "127.0.0.1"
                socks_request(addr, locals_[addr], host, web.port, f"GET {r.choice(pages)} HTTP/1.0\r\nHost: "
                              f"shop.onb18.test\r\nUser-Agent: Mozilla/5.0\r\n\r\n".encode())
            elif a < 0.7:  # the shop's app calling its API
                if r.random() < 0.6:
                    req = f"GET /api/v1/items?page={r.randint(1, 9)} HTTP/1.0\r\nHost: api.onb18.test\r\n\r\n".encode()
                else:
                    body = b'{"sku": %d, "qty": %d}' % (r.randint(100, 999), r.randint(1, 4))
                    req = (f"POST /api/v1/cart HTTP/1.0\r\nHost: api.onb18.test\r\nContent-Type: application/json\r\n"
                           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
                socks_request(addr, locals_[addr], "127.0.0.1", api.port, req)
            elif a < 0.82:  # a line service reached through a TCP tunnel
                s = None
                with contextlib.suppress(OSError):
                    s = socket.create_connection(("127.0.0.2", line_local), 5)
                if s is not None:
                    with contextlib.suppress(OSError), s:
                        s.settimeout(3)
                        for _ in range(r.randint(1, 3)):
                            s.sendall(f"{r.choice(['STAT', 'GET', 'LIST'])} {r.choice(WORDS)}\r\n".encode())
                            s.recv(256)
            else:  # DNS through the UDP tunnel
                with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.settimeout(2)
                    s.sendto(dns_packet(f"{r.choice(['www', 'api', 'mail', 'cdn'])}.onb18.test",
                                        r.choice(["A", "AAAA", "MX"]), r.getrandbits(16)), ("127.0.0.2", dns_local))
                    s.recv(512)

        write_conf()
        start()
        time.sleep(1.0)
        log = FileLog(logp)
        say(f"ss-server on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 2, 5))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            clean_restart(state, elapsed, stop, start)
            time.sleep(rng.uniform(0.05, 0.3))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        def via_bad_local(key: str, method: str) -> None:
            lport = free_port()
            sv.start("bad_local", [ss_local, "-s", "127.0.0.1", "-p", str(port), "-l", str(lport), "-b", "127.0.0.8", "-k", key,
                                   "-m", method], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            listening_ok = False
            for _ in range(30):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.8", lport), 0.5):
                    listening_ok = True
                    break
                time.sleep(0.1)
            if listening_ok:
                socks_request("127.0.0.8", lport, "127.0.0.1", web.port, b"GET / HTTP/1.0\r\nHost: shop.onb18.test\r\n\r\n", 3)
            sv.stop("bad_local", signal.SIGTERM, 5)

        def via(host: str, dport: int) -> None:
            addr = rng.choice(list(locals_)[:4])
            socks_request(addr, locals_[addr], host, dport, b"GET / HTTP/1.0\r\nHost: shop.onb18.test\r\n\r\n", 4)

        try:
            normal = normal_loop(args, log, "shadowsocks", round_fn)
            templates = {ss_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, ss_template, ss_problem))
            with Background(client, random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("wrong_password"):  # users with an old key or the wrong cipher
                    for key, method in [("Onb17-Socks-7Kq2", SS_METHOD), (SS_KEY, "aes-256-gcm"), ("onb18-socks", SS_METHOD),
                                        (SS_KEY, "aes-128-gcm")]:
                        with br.occurrence(1.5):
                            via_bad_local(key, method)
                        br.between()
                with br.phase("replay_attack"):  # captured client streams sent again
                    for _ in range(3):
                        data = rng.choice(recorder.captured) if recorder.captured else b""
                        with br.occurrence(1.5):
                            raw_tcp(port, data, "127.0.0.9", wait=0.8)
                with br.phase("probe_garbage"):  # scanners probing the port: TLS, HTTP, random bytes
                    for data in [TLS_HELLO + bytes(rng.getrandbits(8) for _ in range(200)),
                                 b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Mozilla/5.0 zgrab/0.x\r\nAccept: */*\r\n\r\n",
                                 bytes(rng.getrandbits(8) for _ in range(120)), b"SSH-2.0-OpenSSH_9.2p1\r\n" + bytes(60)]:
                        with br.occurrence(1.5):
                            raw_tcp(port, data, rng.choice(["127.0.0.8", "127.0.0.9"]), wait=0.8)
                with br.phase("udp_garbage"):  # random datagrams on the UDP relay
                    for size in [60, 12, 300]:
                        with br.occurrence(1.0):
                            udp_send(port, bytes(rng.getrandbits(8) for _ in range(size)), "127.0.0.9", read=False)
                with br.phase("target_refused"):  # destinations with nothing listening
                    for _ in range(4):
                        with br.occurrence(1.5):
                            via("127.0.0.1", free_port())
                with br.phase("resolve_failure"):  # names that do not resolve
                    for host in ["db.internal.invalid", "nosuch-host.onb18.test", "api.staging.invalid"]:
                        with br.occurrence(2.0):
                            via(host, 80)
                with br.phase("outbound_blocked"):  # destinations the ACL forbids
                    for host, dport in [("127.0.0.9", web.port), ("10.20.30.40", 22), ("192.168.1.1", 80)]:
                        with br.occurrence(1.5):
                            via(host, dport)
                with br.phase("bad_config_restart"):  # ss.json mistakes, the port taken, ss-server restarted
                    blocker = tcp_blocker()
                    good = json.dumps(base, indent=2) + "\n"
                    for kw in [{"server_port": blocker.getsockname()[1]},
                               {"method": "chacha20-poly1305-ietf"},
                               {"text": good.replace('"timeout": 30,', '"timeout": 30')},
                               {"password": ""},
                               {"server": "127.0.0.300"}]:
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
            recorder.stop()
            web.stop()
            api.stop()
            lines_backend.stop()
            dns_backend.stop()
    return Source("shadowsocks", "shadowsocks-libev ss-server", dpkg_version("shadowsocks-libev"),
                  "ss-server's verbose output (-v): a leading space, a date and time, a level and a message: ` 2026-12-07 "
                  "05:40:01 INFO: new connection from client, 1 opened client connections`, ` ... INFO: [40123] connect to "
                  "127.0.0.1:8080`, ` ... INFO: [udp] server receive a packet`, ` ... ERROR: failed to handshake with "
                  "127.0.0.1: authentication error`; each TCP connection traced from the client connection through the "
                  "connect to its destination (by the server port in brackets) to the two closes, with open-connection "
                  "counts",
                  "ss-server (AEAD chacha20-ietf-poly1305, TCP and UDP relay, an ACL blocking private destinations) with "
                  "5 users' ss-local SOCKS5 proxies (one behind a TCP load balancer) browsing a python web site by address "
                  "and by name, calling its API, plus ss-tunnel forwarding a TCP line service and DNS over UDP; 2 clean "
                  "restarts (SIGTERM)",
                  "wrong_password (4: an old key, another AEAD cipher), replay_attack (3: captured streams sent again), "
                  "probe_garbage (4: TLS, HTTP, random bytes, an SSH banner), udp_garbage (3: random datagrams), "
                  "target_refused (4: destinations with nothing listening), resolve_failure (3: names that do not "
                  "resolve), outbound_blocked (3: destinations the ACL forbids), bad_config_restart (5: the port taken, "
                  "an unknown cipher, broken JSON, an empty password, a bad address)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# tinc (tincd 1.0 -D -d3 as a hub with dummy devices, its log file)
# --------------------------------------------------------------------------

TINC_NODES = ["alpha", "bravo", "cobalt", "delta", "ember", "falcon"]  # on 127.0.0.3-8
TINC_CONF = """\
Name = {name}
DeviceType = dummy
AddressFamily = ipv4
BindToAddress = {addr}
Port = {port}
PingInterval = 4
PingTimeout = 2
{connect}{extra}"""
TINC_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d tinc\.onb18\[\d+\]: ")
tinc_template = templater(TINC_HEAD, (r"/[\w./-]+", "PATH"), (r"\b\d+\.\d+\.\d+\.\d+/\d+(#\d+)?", "SUBNET"))
TINC_PROBLEM = PROBLEM_WORDS + r"|bogus|timeout|didn't respond|incompatible|intruder|unknown identity|second connection|can't|cannot"


def tinc_problem(line: str) -> bool:
    m = TINC_HEAD.match(line)
    body = line[m.end():] if m else line
    if body.startswith("Received UDP packet from unknown source"):
        return False  # routine: a node's UDP packets arriving before its meta connection is up again
    return has_problem_word(body.replace("<unknown>", "<>"), TINC_PROBLEM)


def source_tinc(args) -> Source:
    tincd = need("tincd", "tinc")
    rng = random.Random(f"{args.seed}-tinc")
    with tempfile.TemporaryDirectory(prefix="onb18-tinc-") as work, Group() as sv:
        os.chmod(work, 0o755)
        logp, hub_port = os.path.join(work, "tinc-hub.log"), free_port()
        nodes = {n: (f"127.0.0.{3 + i}", free_port(), [f"10.18.{i + 1}.0/24"]) for i, n in enumerate(TINC_NODES)}
        extra_subnets: dict[str, list[str]] = {n: [] for n in TINC_NODES}

        def host_text(addr: str, port: int, subnets: list[str]) -> str:
            return f"Address = {addr}\nPort = {port}\n" + "".join(f"Subnet = {x}\n" for x in subnets)

        def make_node(d: str, name: str, addr: str, port: int, subnets: list[str], connect: bool = True) -> None:
            os.makedirs(os.path.join(d, "hosts"), exist_ok=True)
            write_atomic(os.path.join(d, "tinc.conf"), TINC_CONF.format(name=name, addr=addr, port=port,
                                                                       connect="ConnectTo = hub\n" if connect else "", extra=""))
            write_atomic(os.path.join(d, "hosts", name), host_text(addr, port, subnets))
            subprocess.run([tincd, "-c", d, "-K", "2048"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, timeout=60)

        hub = os.path.join(work, "hub")
        make_node(hub, "hub", "127.0.0.2", hub_port, ["10.18.0.0/24"], connect=False)
        for n, (addr, port, subnets) in nodes.items():
            make_node(os.path.join(work, n), n, addr, port, subnets)
        # strangers: names the hub has no host file for; imposters: known names with another key
        strangers, imposters = ["mallory", "oscar", "judy", "ivan", "heidi"], ["ember", "bravo", "falcon", "cobalt"]
        for n in strangers:
            make_node(os.path.join(work, "x-" + n), n, "127.0.0.9", free_port(), ["10.66.0.0/24"])
        for n in imposters:
            make_node(os.path.join(work, "imp-" + n), n, "127.0.0.9", free_port(), nodes[n][2])
        everyone = ["hub"] + TINC_NODES
        for d in everyone + [f"x-{n}" for n in strangers] + [f"imp-{n}" for n in imposters]:
            for other in everyone:  # every node knows the others' host files (and keys)
                if d != other and not (d.startswith("imp-") and d[4:] == other):
                    with open(os.path.join(work, other, "hosts", other)) as f:
                        write_atomic(os.path.join(work, d, "hosts", other), f.read())

        def hub_conf(extra: str = "", port: int | None = None) -> None:
            write_atomic(os.path.join(hub, "tinc.conf"), TINC_CONF.format(name="hub", addr="127.0.0.2", port=port or hub_port,
                                                                         connect="", extra=extra))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as out:  # what tincd says on stderr before its log file is open
                sv.start("hub", [tincd, "-n", "onb18", "-c", hub, "-D", "-d3", f"--logfile={logp}",
                                 f"--pidfile={work}/hub.pid"], stdout=out, stderr=out, cwd=work)
            if wait:
                if not log_has(logp, b": Ready", since, 20):
                    raise RuntimeError("tincd did not start")
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("hub", signal.SIGTERM, 10)

        def node_dir(n: str) -> str:
            return os.path.join(work, n)

        def start_node(n: str, d: str | None = None) -> None:
            d = d or node_dir(n)
            sv.start("node_" + os.path.basename(d), [tincd, "-n", "onb18", "-c", d, "-D", "-d0", f"--logfile={d}/tinc.log",
                                                     f"--pidfile={d}/tinc.pid"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)

        def stop_node(n: str, d: str | None = None, sig: int = signal.SIGTERM) -> None:
            sv.stop("node_" + os.path.basename(d or node_dir(n)), sig, 5)

        lock = threading.Lock()
        busy: set[str] = set()

        def churn(r: random.Random) -> None:
            """Nodes of the VPN come and go (laptops, restarts), announce new subnets; the hub's operator looks on."""
            with lock:
                free = [n for n in TINC_NODES if n not in busy]
                if not free:
                    return
                n = r.choice(free)
                busy.add(n)
            try:
                a = r.random()
                proc = sv.procs.get("node_" + n)
                if a < 0.65 or proc is None or proc.poll() is not None:  # a node leaves and comes back
                    stop_node(n)
                    time.sleep(r.uniform(0.2, 1.5))
                    start_node(n)
                elif a < 0.9:  # a node's subnets change (a new office LAN, a retired one), then it reloads
                    new = extra_subnets[n]
                    idx = TINC_NODES.index(n)
                    if len(new) < 3 and r.random() < 0.6:
                        new.append(f"10.{100 + idx}.{len(new) + r.randint(0, 40)}.0/24")
                    elif new:
                        new.pop(r.randrange(len(new)))
                    addr, port, subnets = nodes[n]
                    write_atomic(os.path.join(node_dir(n), "hosts", n), host_text(addr, port, subnets + new))
                    proc.send_signal(signal.SIGHUP)
                else:  # the node asks to retry its connections
                    proc.send_signal(signal.SIGALRM)
            finally:
                with lock:
                    busy.discard(n)

        def hub_signal(sig: int) -> None:
            proc = sv.procs.get("hub")
            if proc is not None:
                proc.send_signal(sig)

        hub_conf()
        start()
        for n in TINC_NODES:
            start_node(n)
        time.sleep(2.0)
        log = FileLog(logp)
        say(f"tinc hub on 127.0.0.2:{hub_port} with {len(TINC_NODES)} nodes; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=churn, args=(random.Random(rng.random()),)) for _ in range(rng.randint(2, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 25 == 0:  # the operator: reload, dump connections / graph, retry
                hub_signal(rng.choice([signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM]))
            clean_restart(state, elapsed, stop, start, pause_s=0.5)
            time.sleep(rng.uniform(0.1, 0.5))

        def restart_clean() -> None:
            stop()
            hub_conf()
            start()

        def raw_hub(data: bytes, wait: float = 0.8) -> None:
            raw_tcp(hub_port, data, rng.choice(["127.0.0.9", "127.0.0.8"]), wait=wait, host="127.0.0.2")

        try:
            normal = normal_loop(args, log, "tinc", round_fn)
            templates = {tinc_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, tinc_template, tinc_problem))
            with Background(churn, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("unknown_node"):  # nodes the hub has no host file for
                    for n in strangers:
                        d = os.path.join(work, "x-" + n)
                        with br.occurrence(1.0):
                            start_node(n, d)
                            time.sleep(2.0)
                        stop_node(n, d)
                        time.sleep(0.5)
                        br.between()
                with br.phase("wrong_key"):  # a known node's name with another key (a reinstalled laptop, an imposter)
                    for n in imposters:
                        d = os.path.join(work, "imp-" + n)
                        with br.occurrence(1.0):
                            start_node(n, d)
                            time.sleep(6.0)
                        stop_node(n, d)
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_handshake"):  # garbage, wrong versions, bad names, silent clients on the meta port
                    for data, wait in [(bytes(rng.getrandbits(8) for _ in range(80)), 0.8),
                                       (b"GET / HTTP/1.1\r\nHost: vpn.onb18.test\r\n\r\n", 0.8),
                                       (b"0 alpha 99.1\n", 0.8), (b"0 hub 17\n", 0.8), (b"0 ops-laptop! 17\n", 0.8),
                                       (TLS_HELLO, 0.8), (b"", 6.0), (b"0 delta 17\n", 6.0)]:
                        with br.occurrence(1.0):
                            raw_hub(data, wait)
                with br.phase("node_unresponsive"):  # a node frozen (SIGSTOP) past PingInterval + PingTimeout
                    for n in ["bravo", "falcon", "alpha", "delta"]:
                        proc = sv.procs.get("node_" + n)
                        with lock:
                            busy.add(n)
                        try:
                            with br.occurrence(1.5):
                                if proc is not None:
                                    proc.send_signal(signal.SIGSTOP)
                                time.sleep(8.0)
                                if proc is not None:
                                    proc.send_signal(signal.SIGCONT)
                            time.sleep(3.0)
                        finally:
                            with lock:
                                busy.discard(n)
                        br.between()
                with br.phase("bad_host_file"):  # the hub's copy of a node's host file broken by a bad edit
                    for n, how in [("alpha", "nokey"), ("delta", "garbled"), ("cobalt", "otherkey"), ("bravo", "nokey")]:
                        path = os.path.join(hub, "hosts", n)
                        good = open(path).read()  # noqa: SIM115
                        if how == "nokey":
                            bad = good.split("-----BEGIN")[0]
                        elif how == "garbled":
                            head, _, rest = good.partition("-----BEGIN RSA PUBLIC KEY-----\n")
                            bad = head + "-----BEGIN RSA PUBLIC KEY-----\n" + rest[:40] + "\n" + rest[120:]
                        else:  # the key of the node's old installation (not updated after a reinstall)
                            with open(os.path.join(work, "imp-" + n, "hosts", n)) as f:
                                bad = good.split("-----BEGIN")[0] + "-----BEGIN" + f.read().split("-----BEGIN", 1)[1]
                        with lock:
                            busy.add(n)
                        try:
                            write_atomic(path, bad)
                            with br.occurrence(1.5):
                                stop_node(n)
                                time.sleep(0.3)
                                start_node(n)
                                time.sleep(3.0)
                            write_atomic(path, good)
                            hub_signal(signal.SIGALRM)
                            time.sleep(4.0)
                        finally:
                            with lock:
                                busy.discard(n)
                        br.between()
                with br.phase("bad_config_restart"):  # tinc.conf / host file / key mistakes, the port taken
                    key = os.path.join(hub, "rsa_key.priv")
                    hub_host = os.path.join(hub, "hosts", "hub")
                    good_host = open(hub_host).read()  # noqa: SIM115
                    for how in ["taken", "nokey", "mode", "syntax", "subnet"]:
                        stop()
                        br.between()
                        blocker = None
                        if how == "taken":  # another VPN daemon holding the address and port
                            blocker = socket.socket()
                            blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                            blocker.bind(("127.0.0.2", hub_port))
                            blocker.listen(1)
                        elif how == "nokey":
                            os.rename(key, key + ".bak")
                        elif how == "mode":
                            hub_conf(extra="Mode = bridge\n")
                        elif how == "syntax":
                            hub_conf(extra="PingTimeout 2\nCompression = 12\n")
                        else:
                            write_atomic(hub_host, good_host.replace("10.18.0.0/24", "10.18.0.0/33"))
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.0)
                        if blocker is not None:
                            stop()
                            blocker.close()
                        if how == "nokey":
                            os.rename(key + ".bak", key)
                        write_atomic(hub_host, good_host)
                        restart_clean()
                        time.sleep(2.0)
                        br.between()
        finally:
            stop()
            for name in list(sv.procs):
                if name.startswith("node_"):
                    proc = sv.procs.get(name)
                    if proc is not None:
                        with contextlib.suppress(OSError):
                            proc.send_signal(signal.SIGCONT)
                    sv.stop(name, signal.SIGTERM, 5)
    return Source("tinc", "tinc VPN daemon", dpkg_version("tinc"),
                  "tincd's log file at debug level 3: a date and time, the net name with the pid, then the message: "
                  "`2026-12-07 05:40:01 tinc.onb18[4242]: Connection from 127.0.0.3 port 40123`, `... Got CHAL_REPLY "
                  "from alpha (127.0.0.3 port 40123)`, `... Sending ADD_EDGE to everyone (BROADCAST)`, `... Connection "
                  "with alpha (127.0.0.3 port 40123) activated`, `... alpha (127.0.0.3 port 40123) didn't respond to PING "
                  "in 2 seconds`; dumps of connections, nodes, edges and subnets on signals, indented; what it writes on "
                  "stderr at a failed start appended; each meta connection traced by the node's name and address from "
                  "its connection through the authentication requests to its activation and close",
                  "a tinc 1.0 hub (DeviceType dummy, PingInterval 4) with 6 nodes (tincd processes on 127.0.0.3-8 with "
                  "their own keys) connecting to it: nodes leaving and coming back, announcing and retiring subnets "
                  "(host files changed, SIGHUP), asking to retry (SIGALRM); the hub's operator reloading it and dumping "
                  "connections, nodes, edges and subnets (SIGHUP, SIGUSR1, SIGUSR2, SIGALRM); 2 clean restarts (SIGTERM)",
                  "unknown_node (5: names without a host file), wrong_key (4: known names with another key), "
                  "bad_handshake (8: random bytes, HTTP, a wrong protocol version, the hub's own name, a bad name, TLS, "
                  "silent clients), node_unresponsive (4: a node SIGSTOPped past the ping timeout), bad_host_file (4: the "
                  "hub's copy of a node's host file without its key, with a garbled key, with an old key), "
                  "bad_config_restart (5: the port taken, a missing private key, an unknown routing mode, a bad "
                  "compression level, a bad subnet)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# znc (ZNC 1.8 --debug in the foreground as nobody, its stdout and stderr)
# --------------------------------------------------------------------------

ZNC_CONF = """\
Version = 1.8.2
AnonIPLimit = 10
ConnectDelay = 1
ServerThrottle = 1
{top}<Listener irc>
  Host = {host}
  Port = {port}
  IPv4 = true
  IPv6 = false
  SSL = false
  AllowIRC = true
  AllowWeb = false
</Listener>
{users}"""
ZNC_USER = """\
<User {user}>
  <Pass password>
    Method = plain
    Hash = {pw}
  </Pass>
  Admin = {admin}
  Nick = {user}
  AltNick = {user}_
  Ident = {user}
  RealName = {real}
  Buffer = 50
  AutoClearChanBuffer = true
  <Network onb>
    Server = 127.0.0.1 {irc}
    <Chan #ops>
    </Chan>
    <Chan #dev>
    </Chan>
  </Network>
</User>
"""
NGIRCD_CONF = """\
[Global]
  Name = irc.onb18.test
  Info = onb18 chat
  Listen = 127.0.0.1
  Ports = {port}
  PidFile = {work}/ngircd.pid
  MotdPhrase = "Welcome to the onb18 team chat"
{password}[Limits]
  MaxConnectionsIP = 0
  PingTimeout = 60
  PongTimeout = 20
[Options]
  PAM = no
  Ident = no
  DNS = no
"""
ZNC_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\] ")
ZNC_MSG = re.compile(r"^\((?P<who>[^)]*)\) (?:CLI -> ZNC|ZNC -> CLI|IRC -> ZNC|ZNC -> IRC) \[(?P<msg>.*)\]( \(queued\))?$")
znc_template = templater(ZNC_HEAD, (r" :[^\]]*(\]( \(queued\))?)$", r" :TEXT\1"), (r"/[\w./-]+", "PATH"), (r"#\w+", "#CHAN"))
ZNC_PROBLEM = PROBLEM_WORDS + r"|Disconnected from IRC|Cannot connect|Sock error|closed|Unhandled|Unable"
ZNC_CHAT_LINES = ["deploy of {w} is done", "lunch at {w} today?", "build {n} of {w} passed", "merged the {w} branch",
                  "who has the notes on {w}?", "see the wiki page about {w}", "standup in {n} minutes", "thanks {w}!",
                  "the {w} dashboard looks good", "moving the {w} ticket to review", "brb", "morning all"]


def znc_problem(line: str) -> bool:
    body = ZNC_HEAD.sub("", line, count=1)
    m = ZNC_MSG.match(body)
    if m:
        msg = m.group("msg")
        if re.match(r":\S+ [45]\d\d ", msg) or msg.startswith("ERROR "):
            return True  # a numeric error reply, an ERROR from the server
        st = re.match(r":\*status!znc@znc\.in (?:PRIVMSG|NOTICE) \S+ :(.*)", msg)
        return bool(st) and has_problem_word(st.group(1), ZNC_PROBLEM)  # chat and commands are the users' words
    return has_problem_word(body, ZNC_PROBLEM)


def chat_line(r: random.Random) -> str:
    return r.choice(ZNC_CHAT_LINES).format(w=r.choice(WORDS), n=r.randint(2, 99))


def irc_talk(port: int, src: str, script: list, settle: float = 0.4) -> bytes:
    """One IRC connection: send each line of the script (numbers: seconds to wait), read what comes back."""
    got = b""
    try:
        s = socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0))
    except OSError:
        return got
    with contextlib.suppress(OSError), s:
        s.settimeout(0.2)

        def drain() -> None:
            nonlocal got
            with contextlib.suppress(OSError):
                while True:
                    d = s.recv(65536)
                    if not d:
                        return
                    got += d
                    for ping in re.findall(rb"(?m)^PING (:?\S+)", d):
                        s.sendall(b"PONG " + ping + b"\r\n")

        for item in script:
            if isinstance(item, (int, float)):
                end = time.time() + item
                while time.time() < end:
                    drain()
            else:
                s.sendall(item.encode() + b"\r\n")
        end = time.time() + settle
        while time.time() < end:
            drain()
    return got


class IrcHolder:
    """A user connected straight to the IRC server, held open in a thread (an operator owning a channel)."""

    def __init__(self, port: int, nick: str, src: str, lines: list[str]):
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(port, nick, src, lines), daemon=True)
        self.thread.start()
        time.sleep(1.5)

    def run(self, port: int, nick: str, src: str, lines: list[str]) -> None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
            s.settimeout(0.3)
            s.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :{nick}\r\n".encode())
            time.sleep(0.5)
            for x in lines:
                s.sendall(x.encode() + b"\r\n")
            while not self.stop_ev.is_set():
                with contextlib.suppress(socket.timeout):
                    d = s.recv(4096)
                    if not d:
                        return
                    for ping in re.findall(rb"(?m)^PING (:?\S+)", d):
                        s.sendall(b"PONG " + ping + b"\r\n")
            s.sendall(b"QUIT :later\r\n")

    def close(self) -> None:
        self.stop_ev.set()
        self.thread.join(10)


def source_znc(args) -> Source:
    znc, ngircd, setpriv = need("znc", "znc"), need("ngircd", "ngircd"), need("setpriv", "util-linux")
    rng = random.Random(f"{args.seed}-znc")
    with tempfile.TemporaryDirectory(prefix="onb18-znc-") as work, Group() as sv:
        os.chmod(work, 0o755)
        data = os.path.join(work, "znc")
        os.makedirs(os.path.join(data, "configs"))
        logp, conf = os.path.join(work, "znc.log"), os.path.join(data, "configs", "znc.conf")
        port, irc_port = free_port(), free_port()
        pws = {u: f"{u.capitalize()}-Znc-18" for u in ACCOUNTS}
        users = "".join(ZNC_USER.format(user=u, pw=pws[u], admin="true" if u == "alice" else "false", real=u.capitalize(),
                                        irc=irc_port) for u in ACCOUNTS)
        base = {"top": "", "host": "127.0.0.1", "port": port, "users": users}

        def conf_text(**kw) -> str:
            return ZNC_CONF.format(**(base | kw))

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else conf_text(**kw))
            subprocess.run(["chown", "-R", "nobody:nogroup", data], check=True)

        def start_irc(password: str = "") -> None:
            write_atomic(os.path.join(work, "ngircd.conf"), NGIRCD_CONF.format(
                port=irc_port, work=work, password=f"  Password = {password}\n" if password else ""))
            sv.start("ngircd", [ngircd, "-n", "-f", os.path.join(work, "ngircd.conf")], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, cwd=work)
            if not listening(irc_port, 20):
                raise RuntimeError("ngircd did not start")

        def stop_irc() -> None:
            sv.stop("ngircd", signal.SIGTERM, 10)

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as out:
                sv.start("znc", [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env", f"HOME={data}",
                                 "stdbuf", "-oL", znc, "-f", "-d", data, "--debug"], stdout=out, stderr=out, cwd=data)
            if wait:
                if not listening(port, 20):
                    raise RuntimeError("znc did not start")
                time.sleep(3.0)  # the users' networks connect (ConnectDelay 1)

        def stop() -> None:
            sv.stop("znc", signal.SIGTERM, 10)

        def attach(r: random.Random, user: str, src: str, script: list, pw: str | None = None) -> None:
            irc_talk(port, src, [f"PASS {user}/onb:{pw or pws[user]}", f"NICK {user}", f"USER {user} 0 * :{user}", 0.4]
                     + script + ["QUIT :detaching"])

        def client(r: random.Random) -> None:
            a = r.random()
            if a < 0.6:  # a user attaching to ZNC from a laptop or phone, reading the buffer, talking, detaching
                user = r.choice(ACCOUNTS)
                script: list = []
                for _ in range(r.randint(1, 3)):
                    b = r.random()
                    if b < 0.55:
                        script += [f"PRIVMSG {r.choice(['#ops', '#dev'])} :{chat_line(r)}", r.uniform(0.1, 0.5)]
                    elif b < 0.7:
                        script += [f"PRIVMSG *status :{r.choice(['ListChans', 'ListNetworks', 'ListClients', 'ListServers', 'Uptime'])}", 0.3]
                    elif b < 0.8:
                        chan = r.choice(["#lobby", "#random", "#builds"])
                        script += [f"JOIN {chan}", 0.4, f"PRIVMSG {chan} :{chat_line(r)}", 0.2, f"PART {chan} :bye", 0.2]
                    elif b < 0.9:
                        script += [f"WHO {r.choice(['#ops', '#dev'])}", 0.3, f"TOPIC {r.choice(['#ops', '#dev'])}", 0.2]
                    else:
                        script += [f"PRIVMSG {r.choice([x for x in ACCOUNTS if x != user])} :{chat_line(r)}", 0.2]
                attach(r, user, r.choice(CLIENTS), script)
            else:  # colleagues on the IRC server directly (their words reach the ZNC users)
                nick = r.choice(USERS[5:9])
                chan = r.choice(["#ops", "#dev"])
                script = [f"NICK {nick}", f"USER {nick} 0 * :{nick}", 0.6, f"JOIN {chan}", 0.3]
                for _ in range(r.randint(1, 3)):
                    script += [f"PRIVMSG {chan} :{chat_line(r)}", r.uniform(0.1, 0.4)]
                if r.random() < 0.15:
                    script += [f"TOPIC {chan} :{chat_line(r)}", 0.2]
                script += [r.choice([f"PART {chan} :later", "QUIT :gone home", "QUIT :meeting"])]
                irc_talk(irc_port, r.choice(CLIENTS), script)

        start_irc()
        write_conf()
        start()
        log = FileLog(logp)
        say(f"znc on 127.0.0.1:{port} in front of ngircd on {irc_port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=burst, args=(client, random.Random(rng.random()), 1, 2))
                       for _ in range(rng.randint(2, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if n % 40 == 0:  # an operator has ZNC save its config
                proc = sv.procs.get("znc")
                if proc is not None:
                    with contextlib.suppress(OSError):
                        os.killpg(proc.pid, signal.SIGUSR1)
            clean_restart(state, elapsed, stop, start, pause_s=0.5)
            time.sleep(rng.uniform(0.05, 0.3))

        def restart_clean() -> None:
            stop()
            write_conf()
            start()

        try:
            normal = normal_loop(args, log, "znc", round_fn)
            templates = {znc_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, znc_template, znc_problem))
            with Background(client, random.Random(rng.random()), (0.3, 0.9)):
                with br.phase("bad_login"):  # wrong passwords, unknown users, a wrong network
                    for user, pw in [("alice", "Alice-Znc-17"), ("bob", "bob-znc-18"), ("frank", "Frank-Znc-18"),
                                     ("root", "toor"), ("carol", "")]:
                        with br.occurrence(1.5):
                            irc_talk(port, rng.choice(CLIENTS), [f"PASS {user}/onb:{pw}", f"NICK {user}",
                                                                  f"USER {user} 0 * :{user}", 1.0])
                with br.phase("irc_server_down"):  # the IRC server stopped: every network disconnected, reconnecting
                    for _ in range(3):
                        with br.occurrence(2.0):
                            stop_irc()
                            time.sleep(4.0)
                        start_irc()
                        time.sleep(8.0)
                        br.between()
                with br.phase("irc_server_password"):  # the IRC server restarted requiring a password ZNC lacks
                    for pw in ["Chat-Gate-18", "onb18-irc", "Chat-Gate-19"]:
                        with br.occurrence(2.0):
                            stop_irc()
                            start_irc(pw)
                            time.sleep(5.0)
                        stop_irc()
                        start_irc()
                        time.sleep(8.0)
                        br.between()
                with br.phase("channel_refused"):  # channels with a key, invite only, a ban, a full limit
                    for i, modes in enumerate(["+k vault-key", "+i", "+b *!*@127.0.0.*", "+l 1"]):
                        chan = f"#vault{i + 1}"
                        op = IrcHolder(irc_port, f"chanop{i + 1}", "127.0.0.8", [f"JOIN {chan}", f"MODE {chan} {modes}"])
                        user = rng.choice(ACCOUNTS)
                        with br.occurrence(1.5):
                            attach(rng, user, rng.choice(CLIENTS), [f"JOIN {chan}", 1.0])
                        attach(rng, user, rng.choice(CLIENTS), [f"PART {chan}", 0.3])
                        op.close()
                        time.sleep(0.5)
                        br.between()
                with br.phase("nick_in_use"):  # a user renaming to a nick someone else holds
                    for nick in ["grace", "heidi", "ivan"]:
                        holder = IrcHolder(irc_port, nick, "127.0.0.8", [])
                        with br.occurrence(1.5):
                            attach(rng, rng.choice(ACCOUNTS), rng.choice(CLIENTS), [f"NICK {nick}", 1.0])
                        holder.close()
                        br.between()
                with br.phase("unknown_target"):  # messages to nicks and channels that do not exist
                    for target in ["olaf", "#sales", "mallory_"]:
                        with br.occurrence(1.5):
                            attach(rng, rng.choice(ACCOUNTS), rng.choice(CLIENTS), [f"PRIVMSG {target} :{chat_line(rng)}", 1.0])
                with br.phase("protocol_garbage"):  # random bytes, TLS, HTTP, an oversized line on the ZNC port
                    for junk in [bytes(rng.getrandbits(8) for _ in range(90)) + b"\r\n", TLS_HELLO,
                                 b"GET / HTTP/1.1\r\nHost: znc.onb18.test\r\n\r\n", b"NICK x\r\n" + b"A" * 3000 + b"\r\n"]:
                        with br.occurrence(1.5):
                            raw_tcp(port, junk, rng.choice(["127.0.0.8", "127.0.0.9"]), wait=1.0)
                with br.phase("bad_config_restart"):  # znc.conf mistakes, the port taken, ZNC restarted
                    blocker = tcp_blocker()
                    good = conf_text()
                    for kw in [{"port": blocker.getsockname()[1]},
                               {"top": "LoadModule = webadmn\n"},
                               {"text": good.replace("Method = plain", "Method = sha512", 1)},
                               {"text": good.replace("</Listener>", "</Listner>")},
                               {"host": "127.0.0.300"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.5)
                        restart_clean()
                        time.sleep(1.0)
                        br.between()
                    blocker.close()
        finally:
            stop()
            stop_irc()
    return Source("znc", "ZNC IRC bouncer", dpkg_version("znc"),
                  "ZNC's debug output in the foreground (--debug): a date and time with microseconds in brackets, then "
                  "either a connection and direction with the raw IRC line in brackets (`[2026-12-07 05:40:01.123456] "
                  "(alice/onb) CLI -> ZNC [PRIVMSG #ops :deploy of cobalt is done]`, `... (alice/onb) IRC -> ZNC "
                  "[:irc.onb18.test 366 alice #ops :End of NAMES list]`, `... (127.0.0.3) ZNC -> CLI [:irc.znc.in 464 "
                  "alice :Invalid Password]`) or ZNC's own events (`... _LISTENER == ConnectionFrom(127.0.0.3, 51234) "
                  "[Allowed]`, `... IRC::alice::onb == Connected()`); untimestamped start-up lines; each session traced by "
                  "its user/network from the client's PASS through the replayed buffer to its detach, each IRC message "
                  "from the client through ZNC to the server and back",
                  "ZNC (as nobody, 5 users each with a network on a local ngircd and channels #ops and #dev) with users "
                  "attaching from 6 addresses, reading the replayed buffer, talking in channels and in private, joining "
                  "and leaving other channels, asking *status for their channels, networks, clients and servers; "
                  "colleagues on the IRC server directly (joining, talking, setting topics, leaving); an operator having "
                  "ZNC save its config (SIGUSR1); 2 clean restarts (SIGTERM)",
                  "bad_login (5: wrong passwords, unknown users, an empty password), irc_server_down (3: ngircd stopped), "
                  "irc_server_password (3: ngircd restarted requiring a password), channel_refused (4: a key, invite only, "
                  "a ban, a full limit), nick_in_use (3), unknown_target (3: nicks and channels that do not exist), "
                  "protocol_garbage (4: random bytes, TLS, HTTP, an oversized line), bad_config_restart (5: the port "
                  "taken, a misspelt module, an unknown password method, a broken tag, a bad address)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_eighteenth", SOURCES, globals(), seed=18018, min_normal_s=75,
               root_for="programs dropping to their own users, ports and processes of several users",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = ("chrony (tried first: chronyd -x with its measurements and tracking logs; it writes no line for the replies it "
            "rejects (KoD DENY, unsynchronised or unauthenticated servers, bogus origin timestamps, late replies), so most "
            "breakages left nothing) was replaced by znc")
ODDITIES = [
    ("rehearsals of each source (--lines 800, --min-normal-seconds 20, written to scratch folders) were checked by eye "
     "before this run; they led to client addresses and names in kresd's quoted names masked, routine lines taken out of "
     "the problem rules (ss-server's idle UDP association expiry, tinc's 'Received UDP packet from unknown source', "
     "kresd's 'closed by peer' after TCP clients), breakages that logged nothing or only normal lines dropped (tinc "
     "duplicate nodes and UDP garbage, a read-only NUT variable that upsd let an admin set), the trailing text of IRC "
     "messages masked in ZNC's templates; nothing had been scored on them"),
    ("kresd: no time stamps; a query answered from the cache is 3-4 lines, one that goes upstream 8-10; '[io    ] => "
     "connection to ... closed by peer (end of file)' after every TCP client is routine; garbage answers "
     "(upstream_malformed) make kresd retry up to its iteration limit, so those events hold hundreds of lines; a backend "
     "stopped and a backend dropping queries both log QUERY_TIMEOUT then TCP_CONNECT_FAILED / a TCP retry; a config error "
     "at a restart comes with an untimestamped Lua stack traceback"),
    ("upsd: a rehearsal had the one dummy-ups driver reading a static .dev file vanish in the middle of the normal "
     "phase (upsd: 'Can't connect to UPS [rack1] ... Connection refused'), so all three drivers loop through .seq files; "
     "the time stamp is seconds since upsd started (back to 0.000000 at every start); '[D2] mainloop: polling N "
     "filedescriptors' follows every command (about a third of normal.log); every upsc run starts with STARTTLS, "
     "answered 'ERR FEATURE-NOT-CONFIGURED' (routine, in normal.log, not counted as a problem); a wrong password and an "
     "unknown user are the same 'ERR ACCESS-DENIED' line (only a SET with a wrong password adds 'password mismatch'); "
     "binary bytes give untimestamped 'addchar: discarding invalid character' lines; a config restart can catch a "
     "dummy-ups driver before it accepts again ('Can't connect to UPS [rackN]')"),
    ("shadowsocks: ss-server names no client address (its clients all come from 127.0.0.1 or the relay); a wrong key, "
     "another cipher, a probe and a replay all end in the same 'failed to handshake with 127.0.0.1: authentication "
     "error' line (a replay adds 'crypto: AEAD: repeat salt detected'); ss-server starts with an empty password, so "
     "that bad_config_restart event is every client's authentication error; the port taken, a bad cipher, a bad address "
     "and broken JSON are ERROR lines of a start that exits"),
    ("tinc: most of normal.log is the meta protocol of nodes joining and leaving (ID, METAKEY, CHALLENGE, ADD_EDGE / "
     "ADD_SUBNET broadcasts, PING / PONG); background churn lines ('Old connection_t ... still lingering, deleting...', "
     "'Metadata socket read error ... Connection reset by peer', DEL_SUBNET) can fall in a breakage window and be kept "
     "when new or problem-worded; a known name with another key shows only as 'Timeout from X ... during "
     "authentication' a few seconds later; unknown_node lines name the stranger, which is masked like the other names"),
    ("znc: --debug prints every IRC line ZNC receives or sends with its direction, so normal.log is mostly raw IRC "
     "(MOTD, NAMES, WHO, buffer playback, chat); chat text comes from a small phrase list; an IRC server outage is seen by "
     "all 5 users at once (ERROR, ConnectionRefused(), *status notices, clients told their messages got lost), so those "
     "events are large; HTTP on the port gives 'Refused HTTP connection to non HTTP port'; a config error at a restart is "
     "untimestamped start-up text"),
]


if __name__ == "__main__":
    sys.exit(main())
