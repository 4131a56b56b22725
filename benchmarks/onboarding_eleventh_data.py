#!/usr/bin/env python3
"""Generate the eleventh onboarding corpus: real log lines written by real programs, grouped into events.

An eleventh corpus built exactly like benchmarks/onboarding_tenth_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py and of the earlier scripts
imported) from five programs that no other corpus uses.  Every line is the verbatim output of a program
started by this script on this machine; the script only *drives* the programs (clients it runs) and
*breaks* them (bad configs, killed or frozen clients, wrong passwords, garbage on the wire, exhausted
limits, timeouts, an unreachable peer, a step of the work made to fail...).  It never writes a log line
itself.  Four of the five trace multi-step work per named item (a DHCP lease's DISCOVER / OFFER / REQUEST /
ACK per MAC address, a Kerberos login's AS exchange then its service tickets, a VPN client's TLS
handshake / authentication / client-connect / push, an SMB session's authentication then its tree
connects and file operations); some of their breakages are a step of that work failing or never
happening (no OFFER from an exhausted pool, a REQUEST NAKed, a lease DECLINEd, pre-authentication failing,
a service ticket refused, a renewal refused, a VPN handshake never completing, a client-connect hook
refusing the client, a tree connect refused after a good login).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends kea-dhcp4-server
krb5-kdc krb5-admin-server krb5-user openvpn nats-server python3-bcrypt samba smbclient; also util-linux,
iproute2 and python3 with python3-cryptography (or the cryptography wheel).  The clients are the programs'
own CLIs (kinit, kvno, kadmin, openvpn as a client, smbclient, smbcontrol) or python code in this script
(DHCP relays and clients, NATS clients).  Nothing is installed by this script, and no system service of
these packages needs to run: each daemon is started directly as a plain process, without systemd):

  kea       Kea 2.2 kea-dhcp4 (-c, its log file at DEBUG debuglevel 45, the kea-dhcp4.hosts logger at
            INFO; its stdout/stderr appended), on the loopback interface with UDP sockets, reached
            through DHCP relays (giaddr 127.0.0.2 / .3 / .4) driven by this script:
            `2026-12-05 23:17:55.017 INFO  [kea-dhcp4.leases/10004.139859955208704] DHCP4_LEASE_ALLOC
            [hwtype=1 02:11:00:00:00:a7], cid=[01:02:11:00:00:00:a7], tid=0xf16d9d11: lease 10.11.1.10 has been
            allocated for 600 seconds`, `... DEBUG [kea-dhcp4.packets/...] DHCP4_PACKET_SEND ...`.
            Normal: ~50 devices of an office, a lab and a guest network (laptops, phones, VoIP phones of a
            client class, printers with reservations, CI runners): DISCOVER / OFFER / REQUEST / ACK,
            renewals, INIT-REBOOT, releases, INFORMs of servers with static addresses; an admin using the
            control socket (status, statistics, lease queries, config-get), a config-reload, two clean
            restarts.  Broken: an exhausted guest pool (no OFFER), REQUESTs NAKed, DECLINEs, relays of no
            subnet, malformed packets, the service disabled for maintenance, config-reloads of broken
            files, broken configs at a restart.
  krb5kdc   MIT Kerberos 1.20 krb5kdc (-n, its log file through [logging] kdc = FILE:...), with kadmind:
            `Dec 05 23:18:54 vm krb5kdc[10447](info): AS_REQ (8 etypes {...}) 127.0.0.1: NEEDED_PREAUTH:
            alice@ONB11.TEST for krbtgt/ONB11.TEST@ONB11.TEST, Additional pre-authentication required`,
            `... AS_REQ ... ISSUE: authtime ..., etypes {...}, alice@ONB11.TEST for krbtgt/...`, `... TGS_REQ
            ... ISSUE: ... alice@ONB11.TEST for HTTP/intranet.onb11.test@ONB11.TEST`.  Normal: kinit /
            kvno / kinit -R / kdestroy of 8 users (UDP and TCP, renewable and forwardable tickets), service
            accounts logging in from keytabs, an admin's kadmin queries; SIGHUP (log reopen), two clean
            restarts.  Broken: wrong passwords, accounts locked out, unknown clients, expired accounts and
            passwords, disabled accounts, unknown services, refused renewals, clients without a common
            enctype, garbage on the port, broken configs at a restart.
  openvpn   OpenVPN 2.6 server (mode server, tun in a private network namespace, --log-append, verb 3; its
            stderr appended) with openvpn clients (certificates + username / password):
            `2026-12-05 23:23:26 127.0.0.1:48073 VERIFY OK: depth=0, CN=alice`, `... 127.0.0.1:48073 [alice]
            Peer Connection Initiated with [AF_INET]127.0.0.1:48073`, `... alice/127.0.0.1:48073 MULTI:
            primary virtual IP for alice/127.0.0.1:48073: 10.111.0.2`.  Normal: 12 users connecting for a
            few seconds and leaving with an exit notification, two site clients staying connected
            (renegotiations), an admin on the management socket, status dumps (SIGUSR2), a SIGHUP reload,
            two clean restarts.  Broken: certificates of another CA, expired and revoked certificates,
            wrong passwords, a client-connect hook refusing disabled accounts, no common data cipher, a
            wrong tls-crypt key, garbage datagrams, handshakes that never complete, clients gone silent
            (ping-restart), broken configs at a restart.
  nats      NATS server 2.9 (-c, log_file with debug and logtime, a cluster route to a second node; its
            stderr appended): `[12402] 2026/12/05 23:26:40.191234 [DBG] 127.0.0.1:38246 - cid:6 -
            "v1.2:python3:orders-api" - Client connection closed: Client Closed`.  Normal: python clients of
            6 users (publishers, subscribers, request / reply, long-lived services answering PINGs), config
            reloads (SIGHUP), two clean restarts.  Broken: authorization violations, permission violations,
            payloads over max_payload, protocol garbage, stale connections, slow consumers, max_connections
            and max_subscriptions exceeded, the cluster peer down, broken configs at a restart.
  samba     Samba 4.17 smbd (-F, log file at log level 2 auth_audit:3, debug pid; its stdout/stderr
            appended; users of its own through a private /etc/passwd in a mount namespace) with smbclient:
            `[2026/12/05 23:22:47.588485,  2, pid=11200] ../../source3/smbd/smb2_service.c:840(make_connection_snum)`
            followed by `  files11 (ipv4:127.0.0.1:46614) signed connect to service projects initially as user
            bob (uid=2002, gid=2000) (pid 11200)`.  Normal: smbclient sessions of 12 users on 6 shares
            (team folders, homes, a finance share, a scans drop box, a read-only archive; put / get / mkdir /
            rename / del / allinfo, share listings), smbcontrol reload-config, two clean restarts.  Broken:
            wrong passwords, unknown users, disabled accounts, shares refused to a user, a share whose disk
            is gone, a share's max connections exceeded, garbage on the port, broken configs at a restart.

Layout written under --out (default benchmarks/data/onboarding_eleventh):

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

  * its level marks it as a problem (kea WARN / ERROR / FATAL lines and lines of
    failures, NAKs, drops, declines, invalid or rejected packets; krb5kdc Error /
    warning lines and lines of failed pre-authentication, unknown or locked out
    principals, expired or disabled accounts, refused requests; openvpn lines of
    errors, warnings, failures, AUTH_FAILED, inactivity timeouts, refused or
    revoked certificates; nats [ERR] / [WRN] / [FTL] lines and lines of
    violations, slow consumers, stale connections, exceeded limits; samba entries
    whose message reports a failure, an error, a denial, an exceeded limit or an
    NT_STATUS other than NT_STATUS_OK), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, UUIDs, IPs and ports masked; MAC addresses, client / transaction /
    connection ids, user and host names, principals and paths masked too) never
    occurred in the normal phase,

minus lines that merely echo the driving workload (nats connection created /
closed-by-the-client lines).  A multi-line entry (a samba header line with its
indented message lines) is kept or dropped whole.  An occurrence of which no
line is kept makes no event.

Usage:
    python benchmarks/onboarding_eleventh_data.py --out benchmarks/data/onboarding_eleventh \\
        [--sources kea,krb5kdc,openvpn,nats,samba] [--lines 6000] [--seed 11011] \\
        [--min-normal-seconds 60]
"""
from __future__ import annotations

import contextlib
import datetime as dt
import glob
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

from onboarding_data import FileLog, MissingProgram, free_port, need, say, version_of, wait_port, write_atomic
from onboarding_eighth_data import tcp_blocker
from onboarding_fifth_data import normal_loop, run
from onboarding_fourth_data import mask_names
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Namespace, Source, entry_selector,
                                     raw_send)
from onboarding_sixth_data import TLS_HELLO, run_quiet
from onboarding_tenth_data import SYS_PY, log_has, size_of

SOURCES = ["kea", "krb5kdc", "openvpn", "nats", "samba"]
NAMES = re.compile(r"\b(?:%s)\b" % "|".join(USERS + WORDS))


def templater(head: re.Pattern, *subs: tuple[str, str], keep: str = ""):
    """A template function: the time stamp (``head``) replaced by ``keep``, ``subs`` applied, then mask_names."""
    def template(line: str) -> str:
        body = head.sub(keep, line, count=1)
        for pat, rep in subs:
            body = re.sub(pat, rep, body)
        return mask_names(NAMES.sub("NAME", body))
    return template


def grouped_selector(templates: set, template, problem, echo=lambda text: False, head=lambda line: True):
    """Selector: entries (a head line + its continuation lines) kept whole when the entry (its lines joined)
    is problem-level or any of its lines has a new template, and it is not an echo of the workload."""
    def select(lines):
        entries: list[list[str]] = []
        for line in lines:
            if head(line) or not entries:
                entries.append([line])
            else:
                entries[-1].append(line)
        kept = []
        for entry in entries:
            text = "\n".join(entry)
            if not echo(text) and (problem(text) or any(template(x) not in templates for x in entry)):
                kept += entry
        return kept
    return select


class NetNS:
    """A private network namespace (held by a sleeping process) with only its loopback up."""

    def __init__(self, sv: Group, name: str):
        self.proc = sv.start(name, [need("unshare", "util-linux"), "--net", "sh", "-c",
                                    f"{need('ip', 'iproute2')} link set lo up && exec sleep 100000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(50):
            time.sleep(0.1)
            if self.proc.poll() is not None:
                raise RuntimeError("could not set up the network namespace")
            with open(f"/proc/{self.proc.pid}/cmdline", "rb") as f:
                if f.read().startswith(b"sleep"):
                    return
        raise RuntimeError("network namespace setup timed out")

    def argv(self, argv: list[str]) -> list[str]:
        return [need("nsenter", "util-linux"), "-t", str(self.proc.pid), "--net", "--"] + argv

    def send(self, port: int, data: bytes, udp: bool = True) -> None:
        """Bytes sent to 127.0.0.1:port inside the namespace (a datagram, or a TCP connection)."""
        code = ("import socket,sys,time\nd=bytes.fromhex(sys.argv[1]);p=int(sys.argv[2])\n"
                + ("s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.sendto(d,('127.0.0.1',p))\n" if udp else
                   "s=socket.create_connection(('127.0.0.1',p),3);s.sendall(d);time.sleep(0.5)\n"))
        run_quiet(self.argv([sys.executable, "-c", code, data.hex(), str(port)]), 15)


def dpkg_version(pkg: str) -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True).stdout
    m = re.search(r"\d+\.\d+(\.\d+)?", out.split(":", 1)[-1])
    return m.group(0) if m else "unknown"


# --------------------------------------------------------------------------
# kea (kea-dhcp4 on the loopback interface, reached through DHCP relays)
# --------------------------------------------------------------------------

DHCP_MAGIC = b"\x63\x82\x53\x63"
DISCOVER, OFFER, REQUEST, DECLINE, ACK, NAK, RELEASE, INFORM = 1, 2, 3, 4, 5, 6, 7, 8
KEA_RELAYS = {"office": "127.0.0.2", "lab": "127.0.0.3", "guest": "127.0.0.4"}
KEA_HEAD = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+ ")
kea_template = templater(KEA_HEAD, (r"/\d+\.\d+\]", "]"), (r"\[hwtype=\d+ [0-9a-f:]*\]", "[HW]"), (r"cid=\[[^\]]*\]", "cid=[ID]"),
                         (r"tid=0x[0-9a-f]+", "tid=ID"), (r"(hwaddr|client-id)=[0-9A-Fa-f]+", r"\1=ID"),
                         (r"\b[\w-]+\.(office|lab|guest)\b", "HOST"), (r"/[\w./-]+", "PATH"))


def kea_problem(line: str) -> bool:
    return bool(re.match(r"^\S+ \S+ (WARN|ERROR|FATAL) ", line)) or bool(
        re.search(r"_FAIL|_NAK|DHCPNAK|_DROP|DECLINE|[Ff]ail|[Ee]rror|[Ii]nvalid|[Uu]nable|[Rr]eject|[Mm]alformed|"
                  r"[Tt]runcated|not allowed", line))


def kea_echo(line: str) -> bool:
    return False


def dhcp_packet(mtype: int | None, mac: bytes, xid: int, giaddr: str, ciaddr: str = "0.0.0.0", req: str | None = None,
                sid: str | None = None, hostname: str | None = None, vendor: str | None = None, op: int = 1,
                hlen: int = 6) -> bytes:
    p = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", op, 1, hlen, 1 if giaddr != "0.0.0.0" else 0, xid, 0, 0,
                    socket.inet_aton(ciaddr), bytes(4), bytes(4), socket.inet_aton(giaddr), mac + bytes(16 - len(mac)),
                    bytes(64), bytes(128))
    o = b"" if mtype is None else bytes([53, 1, mtype])
    o += bytes([61, 1 + len(mac), 1]) + mac
    if req:
        o += bytes([50, 4]) + socket.inet_aton(req)
    if sid:
        o += bytes([54, 4]) + socket.inet_aton(sid)
    if hostname:
        o += bytes([12, len(hostname)]) + hostname.encode()
    if vendor:
        o += bytes([60, len(vendor)]) + vendor.encode()
    o += bytes([55, 5, 1, 3, 6, 15, 42])
    return p + DHCP_MAGIC + o + b"\xff"


def dhcp_parse(d: bytes) -> tuple[str, dict]:
    yiaddr, opts, i = socket.inet_ntoa(d[16:20]), {}, 240
    while i + 1 < len(d) and d[i] != 255:
        if d[i] == 0:
            i += 1
            continue
        opts[d[i]] = d[i + 2:i + 2 + d[i + 1]]
        i += 2 + d[i + 1]
    return yiaddr, opts


class DhcpRelay:
    """A DHCP relay agent on <addr>:67 through which simulated clients talk to the server (replies by xid)."""

    def __init__(self, addr: str, server_port: int):
        self.addr, self.server_port = addr, server_port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, 67))
        self.sock.settimeout(0.3)
        self.waiting: dict[int, list] = {}
        self.lock, self.stop_ev = threading.Lock(), threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while not self.stop_ev.is_set():
            try:
                d = self.sock.recv(4096)
            except OSError:
                continue
            if len(d) < 240:
                continue
            xid = struct.unpack("!I", d[4:8])[0]
            with self.lock:
                w = self.waiting.get(xid)
            if w:
                w[1] = d
                w[0].set()

    def exchange(self, pkt: bytes, xid: int, timeout: float = 1.0) -> bytes | None:
        w = [threading.Event(), None]
        with self.lock:
            self.waiting[xid] = w
        try:
            self.sock.sendto(pkt, ("127.0.0.1", self.server_port))
            w[0].wait(timeout)
        except OSError:
            pass
        with self.lock:
            self.waiting.pop(xid, None)
        return w[1]

    def send(self, pkt: bytes) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendto(pkt, ("127.0.0.1", self.server_port))

    def close(self) -> None:
        self.stop_ev.set()
        self.sock.close()


class DhcpDevice:
    """A DHCP client (a MAC address, a host name, a network) remembering its lease."""

    def __init__(self, mac: bytes, name: str, net: str, vendor: str | None = None, static: str | None = None):
        self.mac, self.name, self.net, self.vendor, self.static = mac, name, net, vendor, static
        self.ip: str | None = None
        self.sid = "127.0.0.1"
        self.lock = threading.Lock()

    def op(self, relays: dict, rng: random.Random, mtype: int, **kw) -> tuple[int | None, str, dict]:
        relay = relays[kw.pop("via", self.net)]
        xid = rng.getrandbits(32)
        pkt = dhcp_packet(mtype, self.mac, xid, relay.addr, hostname=kw.pop("hostname", self.name), vendor=self.vendor, **kw)
        if mtype in (RELEASE, DECLINE):
            relay.send(pkt)
            return None, "", {}
        d = relay.exchange(pkt, xid)
        if not d:
            return None, "", {}
        yi, o = dhcp_parse(d)
        return (o.get(53, b"\0")[0], yi, o)

    def dora(self, relays: dict, rng: random.Random, **kw) -> bool:
        t, yi, o = self.op(relays, rng, DISCOVER, **kw)
        if t != OFFER:
            return False
        sid = socket.inet_ntoa(o[54]) if 54 in o else self.sid
        t, yi, o = self.op(relays, rng, REQUEST, req=yi, sid=sid, **kw)
        if t == ACK:
            self.ip, self.sid = yi, sid
            return True
        return False

    def step(self, relays: dict, rng: random.Random) -> None:
        """What the device does now: boot (DORA), renew, reboot, release, or INFORM (a server)."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            if self.static:
                self.op(relays, rng, INFORM, ciaddr=self.static)
            elif self.ip is None:
                self.dora(relays, rng)
            else:
                x = rng.random()
                if x < 0.5:  # renewing (T1)
                    t, yi, _ = self.op(relays, rng, REQUEST, ciaddr=self.ip)
                    if t != ACK:
                        self.ip = None
                elif x < 0.7:  # rebooted: INIT-REBOOT with its last address
                    t, yi, _ = self.op(relays, rng, REQUEST, req=self.ip)
                    if t != ACK:
                        self.ip = None
                elif x < 0.9 or self.net == "guest":  # left: releases its lease
                    self.op(relays, rng, RELEASE, ciaddr=self.ip, sid=self.sid)
                    self.ip = None
        finally:
            self.lock.release()


def kea_config(work: str, port_hint: int, lease_file: str | None = None, hooks: list | None = None,
               guest_pool: str = "10.11.3.2 - 10.11.3.7", extra: dict | None = None) -> dict:
    hook_dir = (glob.glob("/usr/lib/*/kea/hooks") or ["/usr/lib/x86_64-linux-gnu/kea/hooks"])[0]
    dns = [{"name": "domain-name-servers", "data": "10.11.0.53, 10.11.0.54"}]
    conf = {"Dhcp4": {
        "interfaces-config": {"interfaces": ["lo"], "dhcp-socket-type": "udp"},
        "control-socket": {"socket-type": "unix", "socket-name": os.path.join(work, "kea4.sock")},
        "lease-database": {"type": "memfile", "persist": True, "name": lease_file or os.path.join(work, "leases4.csv"),
                           "lfc-interval": 0},
        "hooks-libraries": hooks if hooks is not None else [{"library": os.path.join(hook_dir, "libdhcp_lease_cmds.so")}],
        "expired-leases-processing": {"reclaim-timer-wait-time": 5, "flush-reclaimed-timer-wait-time": 15,
                                      "hold-reclaimed-time": 60},
        "valid-lifetime": 600, "renew-timer": 300, "rebind-timer": 500, "decline-probation-period": 3600,
        "authoritative": True,
        "client-classes": [{"name": "voip", "test": "substring(option[60].hex,0,7) == 'Polycom'",
                            "option-data": [{"name": "tftp-server-name", "data": "tftp.office.onb11.test"}]}],
        "subnet4": [
            {"id": 1, "subnet": "10.11.1.0/24", "pools": [{"pool": "10.11.1.50 - 10.11.1.250"}],
             "relay": {"ip-addresses": [KEA_RELAYS["office"]]},
             "option-data": [{"name": "routers", "data": "10.11.1.1"}, {"name": "domain-name", "data": "office.onb11.test"}] + dns,
             "reservations": [{"hw-address": "02:11:05:00:00:01", "ip-address": "10.11.1.10", "hostname": "printer-1f"},
                              {"hw-address": "02:11:05:00:00:02", "ip-address": "10.11.1.11", "hostname": "printer-2f"},
                              {"hw-address": "02:11:05:00:00:03", "ip-address": "10.11.1.12", "hostname": "plotter"}]},
            {"id": 2, "subnet": "10.11.2.0/24", "pools": [{"pool": "10.11.2.20 - 10.11.2.200"}],
             "relay": {"ip-addresses": [KEA_RELAYS["lab"]]}, "valid-lifetime": 300, "renew-timer": 150, "rebind-timer": 250,
             "option-data": [{"name": "routers", "data": "10.11.2.1"}, {"name": "domain-name", "data": "lab.onb11.test"}] + dns},
            {"id": 3, "subnet": "10.11.3.0/28", "pools": [{"pool": guest_pool}],
             "relay": {"ip-addresses": [KEA_RELAYS["guest"]]}, "valid-lifetime": 900,
             "option-data": [{"name": "routers", "data": "10.11.3.1"}] + dns}],
        "loggers": [{"name": "kea-dhcp4", "output_options": [{"output": os.path.join(work, "kea-dhcp4.log"), "flush": True,
                                                               "maxsize": 209715200, "maxver": 1}],
                     "severity": "DEBUG", "debuglevel": 45},
                    {"name": "kea-dhcp4.hosts", "output_options": [{"output": os.path.join(work, "kea-dhcp4.log"), "flush": True,
                                                                    "maxsize": 209715200, "maxver": 1}],
                     "severity": "INFO"}]}}
    for k, v in (extra or {}).items():
        conf["Dhcp4"][k] = v
    return conf


def kea_cmd(path: str, command: str, arguments: dict | None = None, timeout: float = 5) -> dict:
    msg = {"command": command}
    if arguments is not None:
        msg["arguments"] = arguments
    out = b""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(json.dumps(msg).encode())
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            with contextlib.suppress(ValueError):
                return json.loads(out)
    with contextlib.suppress(ValueError):
        return json.loads(out)
    return {}


def source_kea(args) -> Source:
    kea = need("/usr/sbin/kea-dhcp4", "kea-dhcp4-server")
    rng = random.Random(f"{args.seed}-kea")
    with tempfile.TemporaryDirectory(prefix="onb11-kea-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        conf, logp, sockp = os.path.join(work, "kea-dhcp4.conf"), os.path.join(work, "kea-dhcp4.log"), os.path.join(work, "kea4.sock")
        env = dict(os.environ, KEA_PIDFILE_DIR=work, KEA_LOCKFILE_DIR=work)

        def write_conf(text: str | None = None, **kw) -> None:
            write_atomic(conf, text if text is not None else json.dumps(kea_config(work, port, **kw), indent=2) + "\n")

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:  # what kea prints before its loggers are set up goes to the same file
                sv.start("kea", [kea, "-c", conf, "-p", str(port)], stdout=logf, stderr=logf, cwd=work, env=env)
            if wait:
                log_has(logp, b"DHCP4_STARTED", since, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("kea", signal.SIGTERM, 20)

        write_conf()
        relays = {net: DhcpRelay(addr, port) for net, addr in KEA_RELAYS.items()}
        stray = DhcpRelay("127.0.0.9", port)  # a relay of a network this server has no subnet for
        devices: list[DhcpDevice] = []
        for i, u in enumerate(USERS):
            devices.append(DhcpDevice(bytes([2, 0x11, 1, 0, 0, i + 1]), f"laptop-{u}", "office"))
            devices.append(DhcpDevice(bytes([2, 0x11, 2, 0, 0, i + 1]), f"phone-{u}", "office"))
        for i in range(4):
            devices.append(DhcpDevice(bytes([2, 0x11, 4, 0, 0, i + 1]), f"voip-{101 + i}", "office", vendor="Polycom-VVX-450"))
        for i, name in enumerate(["printer-1f", "printer-2f", "plotter"]):
            devices.append(DhcpDevice(bytes([2, 0x11, 5, 0, 0, i + 1]), name, "office"))
        for i in range(8):
            devices.append(DhcpDevice(bytes([2, 0x11, 3, 0, 0, i + 1]), f"ci-runner-{i + 1}", "lab"))
        for i, w in enumerate(WORDS[:10]):
            devices.append(DhcpDevice(bytes([2, 0x11, 3, 1, 0, i + 1]), f"build-{w}", "lab", vendor="PXEClient:Arch:00007"))
        devices.append(DhcpDevice(bytes([2, 0x11, 6, 0, 0, 1]), "nas01", "office", static="10.11.1.5"))
        devices.append(DhcpDevice(bytes([2, 0x11, 6, 0, 0, 2]), "jenkins", "lab", static="10.11.2.5"))
        guest_n = [0]

        def guest(r: random.Random) -> None:  # a visitor's phone: joins the guest network, leaves soon after
            guest_n[0] += 1
            d = DhcpDevice(bytes([2, 0x11, 9, r.randint(0, 255), r.randint(0, 255), r.randint(0, 255)]),
                           r.choice(["android", "iphone", "guest-laptop", "tablet"]) + f"-{guest_n[0]}", "guest")
            if d.dora(relays, r):
                time.sleep(r.uniform(0.1, 0.5))
                d.op(relays, r, RELEASE, ciaddr=d.ip, sid=d.sid)

        def workload(r: random.Random) -> None:
            x = r.random()
            if x < 0.85:
                r.choice(devices).step(relays, r)
            else:
                guest(r)

        start()
        log = FileLog(logp)
        say(f"kea-dhcp4 on 127.0.0.1:{port} (relays {', '.join(KEA_RELAYS.values())}); normal phase...")
        state = {"restarts": 0, "admin": time.time(), "reload": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [workload(rr) for _ in range(rr.randint(2, 6))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            if time.time() - state["admin"] > rng.uniform(6, 14):  # the admin at work on the control socket
                a = rng.random()
                if a < 0.25:
                    kea_cmd(sockp, "statistic-get-all")
                elif a < 0.45:
                    kea_cmd(sockp, "lease4-get-all", {"subnets": [rng.choice([1, 2, 3])]})
                elif a < 0.6:
                    d = rng.choice([d for d in devices if d.ip] or devices)
                    kea_cmd(sockp, "lease4-get", {"ip-address": d.ip or "10.11.1.99"})
                elif a < 0.75:
                    kea_cmd(sockp, "status-get")
                elif a < 0.9:
                    kea_cmd(sockp, "config-get")
                else:
                    kea_cmd(sockp, "leases-reclaim", {"remove": False})
                state["admin"] = time.time()
            if state["reload"] < 1 and elapsed > 30:
                kea_cmd(sockp, "config-reload")
                state["reload"] += 1
            if state["restarts"] < 2 and elapsed > 15 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "kea", round_fn)
            templates = {kea_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, kea_template, kea_problem, kea_echo))

            def restart_clean() -> None:
                sv.stop("kea", signal.SIGTERM, 10)
                sv.forget("kea")
                write_conf()
                start()

            calm = [d for d in devices if d.net != "guest"]
            with Background(lambda r: r.choice(calm).step(relays, r), random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("pool_exhausted"):  # a conference took every guest address: new guests get no OFFER
                    crowd = [DhcpDevice(bytes([2, 0x11, 8, 0, 0, i + 1]), f"conf-{i + 1}", "guest") for i in range(8)]
                    for d in crowd:
                        d.dora(relays, rng)
                    br.between()
                    for i in range(3):
                        with br.occurrence(1.5):
                            d = DhcpDevice(bytes([2, 0x11, 9, 0xee, 0, i + 1]), f"{rng.choice(['android', 'iphone'])}-late{i + 1}", "guest")
                            d.dora(relays, rng)
                    for d in crowd:
                        if d.ip:
                            d.op(relays, rng, RELEASE, ciaddr=d.ip, sid=d.sid)
                    time.sleep(1)
                    br.between()
                with br.phase("request_nak"):  # REQUESTs the server refuses: wrong network, someone else's address
                    mover = DhcpDevice(bytes([2, 0x11, 7, 0, 0, 1]), "laptop-visitor", "lab")
                    mover.dora(relays, rng)
                    owner = next((d for d in devices if d.ip and d.net == "office" and not d.static), None)
                    br.between()
                    with br.occurrence(1.5):  # a laptop moved from the lab to the office asks for its lab address
                        mover.op(relays, rng, REQUEST, req=mover.ip or "10.11.2.20", via="office")
                    with br.occurrence(1.5):  # a cloned VM asks for an address leased to another machine
                        DhcpDevice(bytes([2, 0x11, 7, 0, 0, 2]), "vm-clone", "office").op(
                            relays, rng, REQUEST, req=owner.ip if owner and owner.ip else "10.11.1.50")
                    with br.occurrence(1.5):  # a device with a stale address from another site
                        DhcpDevice(bytes([2, 0x11, 7, 0, 0, 3]), "kiosk-lobby", "office").op(relays, rng, REQUEST, req="192.168.77.23")
                    with br.occurrence(1.5):  # renewing an address it no longer holds
                        DhcpDevice(bytes([2, 0x11, 7, 0, 0, 4]), "scanner-3f", "office").op(relays, rng, REQUEST, ciaddr="10.11.1.249")
                with br.phase("lease_declined"):  # the client finds the address in use (ARP conflict) and DECLINEs it
                    for i in range(3):
                        d = DhcpDevice(bytes([2, 0x11, 7, 1, 0, i + 1]), f"camera-{i + 1}", rng.choice(["office", "lab"]))
                        with br.occurrence(1.5):
                            if d.dora(relays, rng):
                                time.sleep(0.2)
                                d.op(relays, rng, DECLINE, req=d.ip, sid=d.sid)
                with br.phase("unknown_network"):  # relays of networks this server has no subnet for, a direct client
                    for i in range(3):
                        with br.occurrence(1.5):
                            mac = bytes([2, 0x11, 7, 2, 0, i + 1])
                            xid = rng.getrandbits(32)
                            if i < 2:
                                stray.exchange(dhcp_packet(DISCOVER, mac, xid, stray.addr, hostname=f"printer-annex-{i + 1}"), xid)
                            else:
                                raw_send(port, dhcp_packet(DISCOVER, mac, xid, "0.0.0.0", hostname="rogue-ap"), udp=True)
                with br.phase("malformed_packet"):  # garbage on the DHCP port
                    mac = bytes([2, 0x11, 7, 3, 0, 1])
                    good = dhcp_packet(DISCOVER, mac, 7, KEA_RELAYS["office"])
                    for data in [b"\x01\x01\x06\x00" + rng.randbytes(40), good[:236] + b"\x00\x00\x00\x00" + good[240:],
                                 dhcp_packet(None, mac, 8, KEA_RELAYS["office"]), dhcp_packet(OFFER, mac, 9, KEA_RELAYS["office"], op=2),
                                 good[:-1] + bytes([53, 1, 99, 255])]:
                        with br.occurrence(1.5):
                            relays["office"].send(data)
                with br.phase("service_disabled"):  # the admin disabled the service for maintenance: devices get nothing
                    for i in range(2):
                        with br.occurrence(1.5):
                            kea_cmd(sockp, "dhcp-disable", {"max-period": 30})
                            for d in rng.sample([d for d in devices if not d.static], 2):
                                d.step(relays, rng)
                        kea_cmd(sockp, "dhcp-enable")
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_reload"):  # config-reload of a configuration file with mistakes: the old one stays
                    good_conf = json.dumps(kea_config(work, port), indent=2) + "\n"
                    for text in [good_conf.replace('"valid-lifetime": 600,', '"valid-lifetime": 600'),
                                 json.dumps(kea_config(work, port, guest_pool="10.11.4.2 - 10.11.4.7")),
                                 json.dumps(kea_config(work, port, extra={"renew-timers": 300})),
                                 json.dumps(kea_config(work, port, hooks=[{"library": "/usr/lib/kea/hooks/libdhcp_radius.so"}]))]:
                        write_conf(text)
                        with br.occurrence(1.5):
                            kea_cmd(sockp, "config-reload")
                        write_conf()
                        br.between()
                with br.phase("bad_config_restart"):  # kea-dhcp4.conf edits with mistakes, the server restarted
                    for text in [good_conf.replace('"subnet4": [', '"subnet4": [[', 1),
                                 json.dumps(kea_config(work, port, lease_file="/nonexistent/kea/leases4.csv")),
                                 json.dumps(kea_config(work, port, extra={"valid-lifetime": "ten minutes"})),
                                 "port"]:
                        stop()
                        br.between()
                        blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        if text == "port":  # another program took the DHCP port
                            blocker.bind(("127.0.0.1", port))
                            write_conf()
                        else:
                            write_conf(text)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2.5)
                            rng.choice(calm).step(relays, rng)
                        blocker.close()
                        restart_clean()
                        br.between()
        finally:
            stop()
            for r in list(relays.values()) + [stray]:
                r.close()
    return Source("kea", "Kea DHCPv4 server (kea-dhcp4)", version_of([kea, "-v"]),
                  "kea-dhcp4 log file at DEBUG debuglevel 45 (the kea-dhcp4.hosts logger at INFO), its stdout/stderr appended "
                  "(`2026-12-05 23:17:55.017 INFO  [kea-dhcp4.leases/10004.139859955208704] DHCP4_LEASE_ALLOC [hwtype=1 "
                  "02:11:00:00:00:a7], cid=[01:02:11:00:00:00:a7], tid=0xf16d9d11: lease 10.11.1.10 has been allocated for "
                  "600 seconds`, `... DEBUG [kea-dhcp4.packets/...] DHCP4_PACKET_SEND [hwtype=1 ...], cid=[...], tid=0x...: "
                  "trying to send packet DHCPOFFER (type 2) from 127.0.0.1:... to 127.0.0.2:67 on interface lo`): every "
                  "client's DISCOVER / OFFER / REQUEST / ACK traced by MAC address and transaction id",
                  "kea-dhcp4 (UDP sockets on lo, memfile lease database, lease_cmds hook, 3 relayed subnets: office with "
                  "host reservations, lab with PXE clients, a small guest pool; a VoIP client class) with DHCP relays and "
                  "clients simulated by this script: ~50 devices (laptops, phones, VoIP phones, printers, CI runners, "
                  "build machines) booting (DISCOVER / OFFER / REQUEST / ACK), renewing, rebooting (INIT-REBOOT), "
                  "releasing, servers sending INFORMs, guests joining and leaving; an admin using the control socket "
                  "(statistics, lease queries, status, config-get, leases-reclaim), 1 config-reload, 2 clean restarts",
                  "pool_exhausted (3 guests getting no OFFER from a full guest pool), request_nak (4 REQUESTs NAKed: an "
                  "address of another network, another client's address, a foreign address, a renewal of a lease it "
                  "does not hold), lease_declined (3 clients DECLINEing their new address), unknown_network (3: relays "
                  "of no configured subnet, an unrelayed client), malformed_packet (5: truncated, a bad magic cookie, no "
                  "message type, a BOOTREPLY, an unknown message type), service_disabled (2: dhcp-disable for "
                  "maintenance while devices ask), bad_reload (4 config-reloads of broken files: a JSON syntax error, a "
                  "pool outside its subnet, an unknown parameter, a missing hook library), bad_config_restart (4: a "
                  "JSON syntax error, a lease file in a missing directory, a non-numeric lifetime, the port taken)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# krb5kdc (MIT Kerberos KDC, with kadmind)
# --------------------------------------------------------------------------

REALM = "ONB11.TEST"
KRB5_CONF = """\
[libdefaults]
 default_realm = ONB11.TEST
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 udp_preference_limit = {udp_limit}
{extra}
[realms]
 ONB11.TEST = {{
  kdc = 127.0.0.1:{port}
  admin_server = 127.0.0.1:{kadm_port}
  kpasswd_server = 127.0.0.1:{kpw_port}
 }}
[domain_realm]
 .onb11.test = ONB11.TEST
"""
KDC_CONF = """\
[kdcdefaults]
 kdc_ports = {port}
 kdc_tcp_ports = {port}
[realms]
 ONB11.TEST = {{
  database_name = {db}
  key_stash_file = {stash}
  acl_file = {work}/kadm5.acl
  kadmind_port = {kadm_port}
  kpasswd_port = {kpw_port}
  default_principal_flags = +preauth
  max_life = 10h 0m 0s
  max_renewable_life = 7d 0h 0m 0s
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
 }}
[plugins]
 kdcpreauth = {{
  disable = spake
 }}
[logging]
 kdc = FILE:{work}/krb5kdc.log
 admin_server = FILE:{work}/kadmind.log
 default = FILE:{work}/krb5lib.log
"""
KRB_USERS = USERS[:8]  # the staff logging in every day
KRB_SERVICES = ["HTTP/intranet.onb11.test", "HTTP/wiki.onb11.test", "imap/mail.onb11.test", "smtp/mail.onb11.test",
                "nfs/files.onb11.test", "cifs/files.onb11.test", "host/build01.onb11.test", "postgres/db01.onb11.test",
                "ldap/dir.onb11.test", "HTTP/grafana.onb11.test"]
KRB_HEAD = re.compile(r"^\w{3} \d\d [\d:]{8} \S+ krb5kdc\[\d+\]")
krb_template = templater(KRB_HEAD, (r"[\w/.$-]+@ONB11\.TEST", "PRINC"), (r"authtime \d+", "authtime N"),
                         (r"127\.0\.0\.1\.\d+", "ADDR"), (r"/[\w./-]+", "PATH"))


def krb_problem(line: str) -> bool:
    return bool(re.search(r"\((Error|err|warning|WARNING|CRIT|crit|ALERT|alert|EMERG|emerg)\):", line)) or bool(
        re.search(r"PREAUTH_FAILED|NOT_FOUND|LOCKED|EXPIRED|BAD_|UNKNOWN|NOT RENEWABLE|LOOKING_UP|POLICY|[Ff]ail|"
                  r"[Ee]rror|[Ii]nvalid|[Cc]an't|[Cc]annot|[Uu]nable|revoked|not found|[Dd]enied|[Rr]efused", line))


def krb_echo(line: str) -> bool:
    return False


def source_krb5kdc(args) -> Source:
    krb5kdc = need("/usr/sbin/krb5kdc", "krb5-kdc")
    kadmind = need("/usr/sbin/kadmind", "krb5-admin-server")
    kdb5_util, kadmin_local = need("/usr/sbin/kdb5_util", "krb5-kdc"), need("/usr/sbin/kadmin.local", "krb5-admin-server")
    kinit, kvno, kdestroy = need("kinit", "krb5-user"), need("kvno", "krb5-user"), need("kdestroy", "krb5-user")
    kadmin = need("kadmin", "krb5-user")
    rng = random.Random(f"{args.seed}-krb5kdc")
    with tempfile.TemporaryDirectory(prefix="onb11-krb5kdc-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("db", "cc", "keytabs"):
            os.makedirs(os.path.join(work, d))
        port, kadm_port, kpw_port = free_port(), free_port(), free_port()
        logp = os.path.join(work, "krb5kdc.log")
        kconf, kconf_udp, kdc_conf = (os.path.join(work, n) for n in ("krb5.conf", "krb5-udp.conf", "kdc.conf"))
        db, stash = os.path.join(work, "db", "principal"), os.path.join(work, "db", "stash")

        def write_confs(kdc_port: int | None = None, **kw) -> None:
            for path, limit in ((kconf, 1), (kconf_udp, 1465)):
                write_atomic(path, KRB5_CONF.format(udp_limit=limit, port=port, kadm_port=kadm_port, kpw_port=kpw_port, extra=""))
            write_atomic(kdc_conf, KDC_CONF.format(port=kdc_port or port, kadm_port=kadm_port, kpw_port=kpw_port, work=work,
                                                   db=kw.get("db", db), stash=kw.get("stash", stash)))

        write_confs()
        write_atomic(os.path.join(work, "kadm5.acl"), "admin/admin@ONB11.TEST *\nhelpdesk/admin@ONB11.TEST il\n")
        env = dict(os.environ, KRB5_CONFIG=kconf, KRB5_KDC_PROFILE=kdc_conf, KRB5CCNAME=f"FILE:{work}/cc/admin")
        subprocess.run([kdb5_util, "create", "-s", "-P", "Master-key-11", "-r", REALM], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pw = {u: f"{u.capitalize()}-krb-{i + 11}" for i, u in enumerate(USERS)}
        cmds = ["addpol -minlength 8 -maxfailure 5 -failurecountinterval 300 -lockoutduration 20 staff"]
        cmds += [f"addprinc -policy staff -pw {pw[u]} {u}" for u in USERS]
        cmds += [f"addprinc -randkey {s}" for s in KRB_SERVICES]
        cmds += [f"addprinc -randkey svc-{n}" for n in ("backup", "monitor", "ci")]
        cmds += [f"ktadd -k {work}/keytabs/svc-{n}.keytab svc-{n}" for n in ("backup", "monitor", "ci")]
        cmds += ["addprinc -pw Admin-krb-99 admin/admin", "addprinc -pw Helpdesk-krb-98 helpdesk/admin",
                 "addprinc -policy staff -maxrenewlife 0 -pw Kiosk-krb-77 kiosk",
                 "addprinc -policy staff -maxrenewlife 0 -pw Display-krb-78 lab-display",
                 "addprinc -policy staff -expire 2026-01-31 -pw Contractor-krb-1 contractor1",
                 "addprinc -policy staff -expire 2026-03-01 -pw Contractor-krb-2 contractor2",
                 "addprinc -policy staff -pwexpire 2026-02-01 -pw Intern-krb-3 intern3",
                 "addprinc -policy staff -pwexpire 2026-02-01 -pw Intern-krb-4 intern4",
                 "addprinc -policy staff -allow_tix -pw Leaver-krb-5 leaver5",
                 "addprinc -policy staff -allow_tix -pw Leaver-krb-6 leaver6",
                 "modprinc -allow_svr HTTP/grafana.onb11.test"]
        subprocess.run([kadmin_local], input="\n".join(cmds) + "\nquit\n", text=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        kdc_err = open(os.path.join(work, "krb5kdc.stderr"), "ab")

        def start(wait: bool = True) -> None:
            sv.start("krb5kdc", [krb5kdc, "-n"], stdout=kdc_err, stderr=kdc_err, cwd=work, env=env)
            if wait:
                wait_port(port)
                time.sleep(0.2)

        def stop() -> None:
            sv.stop("krb5kdc", signal.SIGTERM, 15)

        def client(argv: list[str], user: str, stdin: str = "", udp: bool = False, e: dict | None = None) -> str:
            cenv = dict(env, KRB5_CONFIG=kconf_udp if udp else kconf, KRB5CCNAME=f"FILE:{work}/cc/{user.replace('/', '_')}")
            cenv.update(e or {})
            try:
                p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=15, env=cenv)
                return p.stdout + p.stderr
            except subprocess.TimeoutExpired:
                return ""

        def login(user: str, password: str, r: random.Random, opts: list[str] | None = None, udp: bool | None = None) -> str:
            udp = r.random() < 0.5 if udp is None else udp
            return client([kinit, *(opts or []), user], user, password + "\n", udp)

        renewable: dict[str, bool] = {}

        def workload(r: random.Random, users: list[str] | None = None) -> None:
            x, user = r.random(), r.choice(users or KRB_USERS)
            udp = r.random() < 0.5
            if x < 0.55:  # a user logs in and uses a few services
                opts = r.choice([[], ["-r", "1d"], ["-f"], ["-r", "2d", "-f"], ["-l", "8h"]])
                login(user, pw[user], r, opts, udp)
                renewable[user] = "-r" in opts
                client([kvno, *r.sample(KRB_SERVICES[:9], r.randint(1, 3))], user, udp=udp)
                if renewable[user] and r.random() < 0.3:
                    client([kinit, "-R"], user, udp=udp)
                if r.random() < 0.4:
                    client([kdestroy], user)
                    renewable[user] = False
            elif x < 0.7:  # a service account from its keytab
                svc = r.choice(["backup", "monitor", "ci"])
                client([kinit, "-k", "-t", f"{work}/keytabs/svc-{svc}.keytab", f"svc-{svc}"], f"svc-{svc}", udp=udp)
                client([kvno, r.choice(["nfs/files.onb11.test", "postgres/db01.onb11.test", "host/build01.onb11.test",
                                        "HTTP/intranet.onb11.test"])], f"svc-{svc}", udp=udp)
            elif x < 0.85:  # a user with a ticket asks for another service ticket
                client([kvno, r.choice(KRB_SERVICES[:9])], user, udp=udp)
            elif x < 0.93:  # a renewal (of a renewable ticket)
                if renewable.get(user):
                    client([kinit, "-R"], user, udp=udp)
            else:  # the admin (or the helpdesk) looks something up with kadmin
                who, wpw = r.choice([("admin/admin", "Admin-krb-99"), ("helpdesk/admin", "Helpdesk-krb-98")])
                q = r.choice([f"getprinc {r.choice(USERS)}", "listprincs", "getpol staff", f"getprinc {r.choice(KRB_SERVICES)}"])
                client([kadmin, "-r", REALM, "-p", who, "-w", wpw, "-s", f"127.0.0.1:{kadm_port}", "-q", q], who.replace("/", "_"))

        start()
        kadm_log = open(os.path.join(work, "kadmind.stderr"), "ab")
        sv.start("kadmind", [kadmind, "-nofork", "-P", os.path.join(work, "kadmind.pid")], stdout=kadm_log, stderr=kadm_log,
                 cwd=work, env=env)
        wait_port(kadm_port, 20)
        log = FileLog(logp)
        say(f"krb5kdc on 127.0.0.1:{port} (kadmind on {kadm_port}); normal phase...")
        state = {"restarts": 0, "hup": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [workload(rr) for _ in range(rr.randint(1, 4))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if state["hup"] < 2 and elapsed > 25 + 20 * state["hup"]:  # logrotate: the KDC reopens its log
                sv.procs["krb5kdc"].send_signal(signal.SIGHUP)
                state["hup"] += 1
            if state["restarts"] < 2 and elapsed > 15 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.25))

        try:
            normal = normal_loop(args, log, "krb5kdc", round_fn)
            templates = {krb_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, krb_template, krb_problem, krb_echo))

            def restart_clean() -> None:
                sv.stop("krb5kdc", signal.SIGTERM, 10)
                sv.forget("krb5kdc")
                write_confs()
                start()

            calm = KRB_USERS[:6]  # the background users; the others are the ones whose logins break
            with Background(lambda r: workload(r, calm), random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("wrong_password"):  # typos, an old password, a caps-lock password
                    for user, bad in [("grace", "Grace-krb-16"), ("heidi", "hunter2"), ("ivan", pw["ivan"].upper())]:
                        with br.occurrence(1.5):
                            login(user, bad, rng)
                with br.phase("account_lockout"):  # a script retrying a stale password until the account locks
                    for user in ["mallory", "oscar"]:
                        with br.occurrence(2.0):
                            for _ in range(7):
                                login(user, "Summer2026!", rng)
                        subprocess.run([kadmin_local, "-q", f"modprinc -unlock {user}"], env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                        br.between()
                with br.phase("unknown_client"):  # principals that do not exist: typos, a departed user, a decommissioned host
                    for user in ["alcie", "olduser", "host/old-laptop.onb11.test"]:
                        with br.occurrence(1.5):
                            login(user, "whatever-1", rng)
                with br.phase("expired_account"):  # accounts past their expiry, passwords past theirs
                    for user, upw in [("contractor1", "Contractor-krb-1"), ("intern3", "Intern-krb-3"),
                                      ("contractor2", "Contractor-krb-2")]:
                        with br.occurrence(1.5):
                            client([kinit, user], user, upw + "\n", rng.random() < 0.5)
                with br.phase("disabled_account"):  # accounts disabled by HR (-allow_tix)
                    for user, upw in [("leaver5", "Leaver-krb-5"), ("leaver6", "Leaver-krb-6")]:
                        with br.occurrence(1.5):
                            login(user, upw, rng)
                with br.phase("service_ticket_refused"):  # the AS step works, the service ticket step does not
                    for user, svc in [("grace", "HTTP/intranet-old.onb11.test"), ("heidi", "cifs/nas02.onb11.test"),
                                      ("ivan", "HTTP/grafana.onb11.test"), ("judy", "postgres/db02.onb11.test")]:
                        with br.occurrence(1.5):
                            login(user, pw[user], rng)
                            client([kvno, svc], user)
                with br.phase("renew_refused"):  # renewing a ticket that is not renewable
                    for user, upw in [("kiosk", "Kiosk-krb-77"), ("lab-display", "Display-krb-78")]:
                        login(user, upw, rng)
                        br.between()
                        with br.occurrence(1.5):
                            client([kinit, "-R"], user)
                with br.phase("enctype_mismatch"):  # legacy clients allowing only enctypes the realm has no keys for
                    for user, enc in [("heidi", "camellia256-cts-cmac"), ("ivan", "aes256-cts-hmac-sha384-192 camellia128-cts-cmac")]:
                        legacy = os.path.join(work, f"krb5-legacy-{user}.conf")
                        write_atomic(legacy, KRB5_CONF.format(udp_limit=1465, port=port, kadm_port=kadm_port, kpw_port=kpw_port,
                                                              extra=f" permitted_enctypes = {enc}\n default_tkt_enctypes = {enc}\n"
                                                                    f" default_tgs_enctypes = {enc}"))
                        with br.occurrence(1.5):
                            client([kinit, user], user, pw[user] + "\n", e={"KRB5_CONFIG": legacy})
                with br.phase("garbage_request"):  # not Kerberos on the KDC port
                    for data, udp in [(b"GET / HTTP/1.1\r\nHost: kdc\r\n\r\n", False), (TLS_HELLO, False),
                                      (b"\x6a\x05hello", True), (bytes(48), True)]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5, udp=udp)
                with br.phase("bad_config_restart"):  # kdc.conf edits with mistakes / a damaged database, the KDC restarted
                    broken_db = os.path.join(work, "db", "principal.restored")
                    with open(broken_db, "wb") as f:
                        f.write(rng.randbytes(8192))
                    blocker = tcp_blocker()
                    for kw in [{"db": "/nonexistent/krb5kdc/principal"}, {"stash": os.path.join(work, "db", "stash.old")},
                               {"db": broken_db}, {"kdc_port": blocker.getsockname()[1]}]:
                        stop()
                        br.between()
                        write_confs(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2)
                            login(rng.choice(calm), "x", rng)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            sv.stop("kadmind", signal.SIGTERM, 10)
            kdc_err.close()
            kadm_log.close()
    return Source("krb5kdc", "MIT Kerberos KDC (krb5kdc)", dpkg_version("krb5-kdc"),
                  "krb5kdc log file ([logging] kdc = FILE:..., syslog-like: `Dec 05 23:18:54 vm krb5kdc[10447](info): AS_REQ "
                  "(8 etypes {aes256-cts-hmac-sha1-96(18), ...}) 127.0.0.1: NEEDED_PREAUTH: alice@ONB11.TEST for "
                  "krbtgt/ONB11.TEST@ONB11.TEST, Additional pre-authentication required`, `... AS_REQ (...) 127.0.0.1: ISSUE: "
                  "authtime 1796512734, etypes {rep=..., tkt=..., ses=...}, alice@ONB11.TEST for krbtgt/ONB11.TEST@ONB11.TEST`, "
                  "`... TGS_REQ (...) 127.0.0.1: ISSUE: ... alice@ONB11.TEST for HTTP/intranet.onb11.test@ONB11.TEST`, `... "
                  "closing down fd 13`): every login traced from its AS exchange (pre-authentication asked, then the ticket) "
                  "through its service tickets and renewals",
                  "krb5kdc -n + kadmind -nofork (db2 database, realm ONB11.TEST, pre-authentication required, a lockout "
                  "policy, 10 service principals, 3 service accounts with keytabs) with kinit / kvno / kdestroy / kadmin "
                  "clients: 8 users logging in over UDP and TCP (renewable, forwardable, shorter tickets) and asking for "
                  "1-3 service tickets, renewals, service accounts logging in from keytabs, the admin and the helpdesk "
                  "querying with kadmin; 2 SIGHUP log reopens, 2 clean restarts",
                  "wrong_password (3 failed pre-authentications), account_lockout (2 scripts retrying a stale password 7 "
                  "times: PREAUTH_FAILED, then LOCKED_OUT), unknown_client (3 unknown principals), expired_account (3: 2 "
                  "expired accounts, 1 expired password), disabled_account (2 accounts with -allow_tix), "
                  "service_ticket_refused (4 logins whose service ticket step fails: unknown services, a service with "
                  "-allow_svr), renew_refused (2 renewals of tickets of kiosk accounts with no renewable life), enctype_mismatch (2 legacy clients "
                  "with no common enctype), garbage_request (4: HTTP, TLS, UDP garbage), bad_config_restart (4: a missing "
                  "database, a missing stash file, a damaged database file, the port taken)", normal, br.errors)


# --------------------------------------------------------------------------
# openvpn (a server in a private network namespace, openvpn clients)
# --------------------------------------------------------------------------

OVPN_SERVER = """\
mode server
tls-server
proto udp4
local 127.0.0.1
port {port}
dev tun
topology subnet
server 10.111.0.0 255.255.255.0
client-config-dir {work}/ccd
ca {work}/pki/ca.crt
cert {work}/pki/server.crt
key {work}/pki/server.key
dh none
tls-crypt {work}/pki/tc.key
crl-verify {work}/pki/crl.pem
remote-cert-tls client
keepalive 2 8
hand-window 8
reneg-sec 30
max-clients 40
verb 3
disable-dco
persist-key
explicit-exit-notify 1
script-security 2
auth-user-pass-verify {work}/verify.sh via-file
client-connect {work}/connect.sh
username-as-common-name
management {work}/mgmt.sock unix
data-ciphers AES-256-GCM:AES-128-GCM:CHACHA20-POLY1305
cipher AES-256-GCM
status {work}/status.log 10
tmp-dir {work}/tmp
writepid {work}/openvpn.pid
{extra}"""
OVPN_CLIENT = """\
client
proto udp4
remote 127.0.0.1 {port}
dev tun
ifconfig-noexec
route-noexec
nobind
ca {work}/pki/ca.crt
tls-crypt {work}/pki/tc.key
remote-cert-tls server
verb 3
disable-dco
explicit-exit-notify 1
connect-retry 1
"""
OVPN_SITES = ["site-lyon", "site-porto"]
OVPN_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
ovpn_template = templater(OVPN_HEAD, (r"\bsite-\w+", "NAME"), (r"openvpn_cc_[0-9a-f]+\.tmp", "openvpn_cc_ID.tmp"),
                          (r"serial=\d+", "serial=N"), (r"/[\w./-]+", "PATH"))


def ovpn_problem(line: str) -> bool:
    return bool(re.search(r"ERROR|Error|WARNING|[Ff]ailed|[Ff]ailure|AUTH_FAILED|[Ii]nactivity timeout|[Uu]nable|[Cc]annot|"
                          r"[Ii]nvalid|[Rr]evoked|expired|[Ff]atal|[Ee]xceed|[Uu]nroutable|[Bb]ad |[Rr]ejected", line))


def ovpn_echo(line: str) -> bool:
    return False


def make_pki(d: str, users: list[str], rng: random.Random) -> dict:
    """A CA, the server's and the clients' certificates (EC keys), a rogue CA's, expired and revoked ones, a CRL."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    now = dt.datetime.now(dt.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Onb11"), x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def save(stem: str, key, cert) -> None:
        with open(os.path.join(d, stem + ".crt"), "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(os.path.join(d, stem + ".key"), "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        os.chmod(os.path.join(d, stem + ".key"), 0o600)

    def ca(cn: str):
        k = ec.generate_private_key(ec.SECP256R1())
        c = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn)).public_key(k.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=400))
             .not_valid_after(now + dt.timedelta(days=3650)).add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
             .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), True)
             .sign(k, hashes.SHA256()))
        return k, c

    def leaf(cak, cac, cn: str, server: bool = False, start: int = -30, end: int = 365):
        k = ec.generate_private_key(ec.SECP256R1())
        c = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(cac.subject).public_key(k.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now + dt.timedelta(days=start))
             .not_valid_after(now + dt.timedelta(days=end)).add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
             .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]), False)
             .sign(cak, hashes.SHA256()))
        return k, c

    cak, cac = ca("Onb11 VPN CA")
    with open(os.path.join(d, "ca.crt"), "wb") as f:
        f.write(cac.public_bytes(serialization.Encoding.PEM))
    save("server", *leaf(cak, cac, "vpn.onb11.test", server=True))
    for u in users:
        save(u, *leaf(cak, cac, u))
    for stem, cn in [("frank-old", "frank"), ("carol-old", "carol")]:  # certificates that ran out last month
        save(stem, *leaf(cak, cac, cn, start=-400, end=-35))
    revoked = []
    for stem, cn in [("grace-stolen", "grace"), ("dave-lost", "dave")]:  # laptops reported stolen / lost
        k, c = leaf(cak, cac, cn)
        save(stem, k, c)
        revoked.append(c.serial_number)
    rk, rc = ca("Onb11 Test Lab CA")  # certificates from the lab's CA, which the VPN does not trust
    for stem, cn in [("lab-erin", "erin"), ("lab-ivan", "ivan")]:
        save(stem, *leaf(rk, rc, cn))
    b = x509.CertificateRevocationListBuilder().issuer_name(cac.subject).last_update(now - dt.timedelta(days=1)).next_update(
        now + dt.timedelta(days=30))
    for s in revoked:
        b = b.add_revoked_certificate(x509.RevokedCertificateBuilder().serial_number(s).revocation_date(now - dt.timedelta(days=2)).build())
    with open(os.path.join(d, "crl.pem"), "wb") as f:
        f.write(b.sign(cak, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    return {"revoked": revoked}


def source_openvpn(args) -> Source:
    openvpn = need("/usr/sbin/openvpn", "openvpn")
    need("ip", "iproute2")
    rng = random.Random(f"{args.seed}-openvpn")
    with tempfile.TemporaryDirectory(prefix="onb11-openvpn-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("pki", "ccd", "tmp", "auth"):
            os.makedirs(os.path.join(work, d))
        users = USERS + OVPN_SITES
        make_pki(os.path.join(work, "pki"), users, rng)
        subprocess.run([openvpn, "--genkey", "tls-crypt", os.path.join(work, "pki", "tc.key")], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([openvpn, "--genkey", "tls-crypt", os.path.join(work, "pki", "tc-old.key")], check=True, stdout=subprocess.DEVNULL)
        pw = {u: f"{u.capitalize()}-vpn-{i + 11}" for i, u in enumerate(users)}
        write_atomic(os.path.join(work, "passwords"), "".join(f"{u}:{p}\n" for u, p in pw.items()))
        write_atomic(os.path.join(work, "disabled"), "mallory\noscar\n")  # accounts suspended by HR
        for u, p in pw.items():
            write_atomic(os.path.join(work, "auth", u), f"{u}\n{p}\n")
        write_atomic(os.path.join(work, "verify.sh"), f'#!/bin/sh\n# $1: a file with the username and the password\n'
                                                      f'u=$(sed -n 1p "$1"); p=$(sed -n 2p "$1")\n'
                                                      f'grep -qxF "$u:$p" {work}/passwords\n')
        write_atomic(os.path.join(work, "connect.sh"), f'#!/bin/sh\n! grep -qxF "$common_name" {work}/disabled\n')
        write_atomic(os.path.join(work, "hang.sh"), "#!/bin/sh\n# an OCSP responder that never answers\nsleep 60\n")
        for f in ("verify.sh", "connect.sh", "hang.sh"):
            os.chmod(os.path.join(work, f), 0o755)
        for i, site in enumerate(OVPN_SITES):  # the sites get fixed addresses
            write_atomic(os.path.join(work, "ccd", site), f"ifconfig-push 10.111.0.{200 + i} 255.255.255.0\n")
        write_atomic(os.path.join(work, "ccd", "alice"), "push \"dhcp-option DNS 10.111.0.1\"\n")
        port = free_port()
        conf, cconf, logp = os.path.join(work, "server.conf"), os.path.join(work, "client.conf"), os.path.join(work, "openvpn.log")
        write_atomic(cconf, OVPN_CLIENT.format(port=port, work=work))
        mgmt = os.path.join(work, "mgmt.sock")

        def write_conf(extra: str = "", p: int | None = None) -> None:
            write_atomic(conf, OVPN_SERVER.format(port=p or port, work=work, extra=extra))

        write_conf()
        ns = NetNS(sv, "netns")

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:  # option errors are printed before the log is opened
                sv.start("openvpn", ns.argv([openvpn, "--config", conf, "--log-append", logp]), stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"Initialization Sequence Completed", since, 20)
                time.sleep(0.2)

        def stop() -> None:
            sv.stop("openvpn", signal.SIGTERM, 15)

        connected: set[str] = set()
        clock = threading.Lock()

        def client(user: str, cert: str | None = None, extra: list[str] | None = None, auth: str | None = None) -> subprocess.Popen:
            argv = [openvpn, "--config", cconf, "--cert", os.path.join(work, "pki", (cert or user) + ".crt"),
                    "--key", os.path.join(work, "pki", (cert or user) + ".key"), "--auth-user-pass", auth or os.path.join(work, "auth", user),
                    *(extra or [])]
            return subprocess.Popen(ns.argv(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)

        def leave(p: subprocess.Popen, wait: float = 4) -> None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(wait)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

        def session(r: random.Random, pool: list[str] | None = None) -> None:
            """A user connects, stays a few seconds, and disconnects (with an exit notification)."""
            with clock:
                free = [u for u in (pool or USERS) if u not in connected and u not in ("mallory", "oscar")]
                if not free:
                    return
                user = r.choice(free)
                connected.add(user)
            try:
                p = client(user)
                time.sleep(r.uniform(2.5, 7))
                leave(p)
                time.sleep(6)  # the server lets a client that said goodbye go 5s later
            finally:
                with clock:
                    connected.discard(user)

        def mgmt_cmd(*cmds: str) -> None:
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
                s.settimeout(3)
                s.connect(mgmt)
                s.recv(4096)
                for c in cmds:
                    s.sendall(c.encode() + b"\n")
                    time.sleep(0.2)
                    with contextlib.suppress(OSError):
                        s.recv(65536)
                s.sendall(b"quit\n")
                time.sleep(0.1)

        start()
        sites = {s: client(s) for s in OVPN_SITES}  # two branch offices stay connected
        log = FileLog(logp)
        say(f"openvpn server on 127.0.0.1:{port} (in a network namespace); normal phase...")
        state = {"restarts": 0, "admin": time.time(), "hup": 0, "threads": []}

        def round_fn(n: int, elapsed: float) -> None:
            state["threads"] = [t for t in state["threads"] if t.is_alive()]
            for _ in range(rng.randint(1, 3)):
                if len(state["threads"]) < 10:
                    t = threading.Thread(target=session, args=(random.Random(rng.random()),), daemon=True)
                    t.start()
                    state["threads"].append(t)
            if time.time() - state["admin"] > rng.uniform(8, 15):  # the admin at work
                a = rng.random()
                if a < 0.6:
                    mgmt_cmd(*rng.sample(["status", "status 2", "load-stats", "version", "state", "log 5"], rng.randint(1, 3)))
                else:
                    sv.procs["openvpn"].send_signal(signal.SIGUSR2)  # the status dumped into the log
                state["admin"] = time.time()
            if state["hup"] < 1 and elapsed > 50:  # a reload (SIGHUP): the server re-reads its config
                sv.procs["openvpn"].send_signal(signal.SIGHUP)
                state["hup"] += 1
                time.sleep(2)
            if state["restarts"] < 2 and elapsed > 15 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.3, 0.9))

        try:
            normal = normal_loop(args, log, "openvpn", round_fn)
            for t in state["threads"]:
                t.join(15)
            templates = {ovpn_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, ovpn_template, ovpn_problem, ovpn_echo))

            def restart_clean() -> None:
                sv.stop("openvpn", signal.SIGTERM, 10)
                sv.forget("openvpn")
                write_conf()
                start()

            def attempt(user: str, hold: float = 3.0, **kw) -> None:
                p = client(user, **kw)
                time.sleep(hold)
                leave(p, 2)

            calm = USERS[:6]
            br.between()
            with Background(lambda r: session(r, calm), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("unknown_ca"):  # certificates issued by the lab's CA
                    for stem in ["lab-erin", "lab-ivan"]:
                        with br.occurrence(1.5):
                            attempt(stem.split("-")[1], cert=stem)
                with br.phase("expired_certificate"):  # last year's certificates
                    for stem in ["frank-old", "carol-old"]:
                        with br.occurrence(1.5):
                            attempt(stem.split("-")[0], cert=stem)
                with br.phase("revoked_certificate"):  # certificates of a stolen and a lost laptop, revoked in the CRL
                    for stem in ["grace-stolen", "dave-lost"]:
                        with br.occurrence(1.5):
                            attempt(stem.split("-")[0], cert=stem)
                with br.phase("wrong_password"):  # stale / mistyped passwords
                    for user, bad in [("heidi", "Heidi-vpn-17"), ("judy", "judy"), ("ivan", pw["ivan"].lower())]:
                        bad_file = os.path.join(work, "auth", f"{user}.bad")
                        write_atomic(bad_file, f"{user}\n{bad}\n")
                        with br.occurrence(2.0):
                            attempt(user, hold=2.5, auth=bad_file)
                with br.phase("client_connect_refused"):  # good certificate and password, the client-connect hook refuses
                    for user in ["mallory", "oscar"]:
                        with br.occurrence(2.0):
                            attempt(user, hold=3)
                with br.phase("cipher_mismatch"):  # old clients with only CBC data ciphers
                    for user, cipher in [("heidi", "AES-128-CBC"), ("judy", "AES-256-CBC")]:
                        with br.occurrence(2.0):
                            attempt(user, hold=3, extra=["--data-ciphers", cipher])
                with br.phase("tls_crypt_mismatch"):  # a client configured with last year's tls-crypt key
                    for user in ["ivan", "judy"]:
                        with br.occurrence(1.5):
                            attempt(user, hold=2.5, extra=["--tls-crypt", os.path.join(work, "pki", "tc-old.key")])
                with br.phase("garbage_packets"):  # datagrams that are not OpenVPN
                    for data in [b"\x38" + rng.randbytes(40), b"\x38" + rng.randbytes(120), b"\x50" + rng.randbytes(150)]:
                        with br.occurrence(1.5):
                            ns.send(port, data)
                with br.phase("handshake_timeout"):  # the client's certificate check hangs: the handshake never completes
                    for user in ["heidi", "ivan"]:
                        with br.occurrence(2.0):
                            since = size_of(logp)
                            p = client(user, extra=["--script-security", "2", "--tls-verify", os.path.join(work, "hang.sh")])
                            log_has(logp, b"TLS key negotiation failed", since, 15)
                            leave(p, 1)
                with br.phase("ping_timeout"):  # a connected client frozen (suspended laptop): no more pings
                    for user in ["judy", "heidi"]:
                        p = client(user)
                        time.sleep(3)
                        br.between()
                        with br.occurrence(2.0):
                            since = size_of(logp)
                            with contextlib.suppress(ProcessLookupError):
                                p.send_signal(signal.SIGSTOP)
                            log_has(logp, b"Inactivity timeout", since, 25)
                        p.kill()
                        p.wait()
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # server.conf edits with mistakes, the server restarted
                    for extra in ["crl-verify /etc/openvpn/crl-2026.pem\n", "server 10.111.0.0 255.255.255.300\n",
                                  "data-ciphers AES-256-GCMX\n", "max-clients many\n", "compress lzo-fast\n"]:
                        stop()
                        br.between()
                        write_conf(extra=extra)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2.5)
                        restart_clean()
                        time.sleep(1)
                        br.between()
        finally:
            for p in sites.values():
                leave(p, 3)
            stop()
    return Source("openvpn", "OpenVPN server (openvpn --mode server)", version_of([openvpn, "--version"]),
                  "openvpn server log (--log-append, verb 3, its stderr appended: `2026-12-05 23:23:26 127.0.0.1:48073 "
                  "VERIFY OK: depth=0, CN=alice`, `... 127.0.0.1:48073 TLS: Username/Password authentication succeeded for "
                  "username 'alice' [CN SET]`, `... 127.0.0.1:48073 [alice] Peer Connection Initiated with "
                  "[AF_INET]127.0.0.1:48073`, `... alice/127.0.0.1:48073 MULTI: primary virtual IP for alice/127.0.0.1:48073: "
                  "10.111.0.2`, `... alice/127.0.0.1:48073 SENT CONTROL [alice]: 'PUSH_REPLY,...'`, status dumps, "
                  "management lines): every client traced by address then by user/address through its TLS handshake, "
                  "authentication, client-connect, push and exit",
                  "openvpn --mode server (UDP, tun in a private network namespace, topology subnet, tls-crypt, a CRL, "
                  "username / password checked by an auth-user-pass-verify script, a client-connect script, "
                  "client-config-dir, keepalive 2 8, reneg-sec 30, management on a unix socket) with openvpn clients: 12 "
                  "users connecting for 2.5-7s and leaving with an exit notification, 2 sites staying connected "
                  "(renegotiations); an admin running status / load-stats / version / state on the management socket "
                  "and SIGUSR2 status dumps; 1 SIGHUP reload, 2 clean restarts",
                  "unknown_ca (2 certificates of another CA), expired_certificate (2), revoked_certificate (2 in the "
                  "CRL), wrong_password (3), client_connect_refused (2 suspended accounts refused by the client-connect "
                  "hook after a good handshake), cipher_mismatch (2 clients with no common data cipher), "
                  "tls_crypt_mismatch (2 clients with an old tls-crypt key), garbage_packets (3 random datagrams with "
                  "OpenVPN reset opcodes), handshake_timeout (2 clients whose certificate check hangs: TLS key negotiation never "
                  "completes), ping_timeout (2 connected clients frozen: inactivity timeout), bad_config_restart (5: a "
                  "missing CRL file, a bad netmask, an unknown data cipher, a non-numeric max-clients read as 0 (every "
                  "client refused), an unknown compression)", normal, br.errors)


# --------------------------------------------------------------------------
# nats (nats-server with a cluster peer, python clients)
# --------------------------------------------------------------------------

NATS_CONF = """\
listen: 127.0.0.1:{port}
server_name: onb11-a
debug: true
trace: false
logtime: true
log_file: "{work}/nats.log"
pid_file: "{work}/nats.pid"
max_payload: {max_payload}
max_pending: 8MB
max_connections: 64
max_subscriptions: 40
ping_interval: "3s"
ping_max: 2
write_deadline: "1s"
cluster {{
  name: onb11
  listen: 127.0.0.1:{route_port}
  routes: ["nats-route://127.0.0.1:{peer_route}"]
}}
authorization {{
  users = [
{users}
  ]
}}
{extra}"""
NATS_PEER = """\
listen: 127.0.0.1:{port}
server_name: onb11-b
cluster {{
  name: onb11
  listen: 127.0.0.1:{route_port}
  routes: ["nats-route://127.0.0.1:{peer_route}"]
}}
authorization {{
  users = [
{users}
  ]
}}
"""
NATS_PERMS = {
    "orders-api": None,
    "billing-worker": '{publish: ["billing.>", "orders.*.paid", "_INBOX.>"], subscribe: ["billing.>", "orders.>", "_INBOX.>"]}',
    "sensor-gw": '{publish: ["telemetry.>"], subscribe: ["_INBOX.>", "sensors.cmd.>"]}',
    "dashboard": '{publish: ["orders.lookup", "_INBOX.>"], subscribe: ["telemetry.>", "orders.>", "billing.>", "_INBOX.>"]}',
    "ops": None,
    "mailer": '{publish: ["mail.>", "_INBOX.>"], subscribe: ["mail.>", "orders.*.paid", "_INBOX.>"]}',
}
NATS_HEAD = re.compile(r"^\[\d+\] \d{4}/\d\d/\d\d [\d:.]+ ")
nats_template = templater(NATS_HEAD, (r"\b(cid|rid|lid|gid):\d+", r"\1:N"), (r'"v[\d.]+:\w+:[^"]*"', '"CLIENT"'),
                          (r"\b[\w-]+(?:\.[\w*>-]+)+", "SUBJ"), (r"\b[A-Z0-9]{56}\b", "ID"), (r"/[\w./-]+", "PATH"))


def nats_problem(line: str) -> bool:
    return bool(re.search(r"\[(ERR|WRN|FTL)\]", line)) or bool(
        re.search(r"[Ee]rror|[Ff]ail|[Vv]iolation|[Ss]low [Cc]onsumer|[Ss]tale|[Ee]xceeded|[Rr]efused|[Ii]nvalid|[Uu]nable|"
                  r"[Mm]aximum", line))


def nats_echo(line: str) -> bool:
    return bool(re.search(r" - Client connection (created|closed: Client Closed)$", line))


class NatsConn:
    """A minimal NATS client over a raw socket (CONNECT, PUB, SUB, UNSUB, PING / PONG)."""

    def __init__(self, port: int, user: str | None, pw: str | None, name: str, lang: str = "python3", version: str = "1.2.0",
                 extra: dict | None = None, timeout: float = 3):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.s.settimeout(timeout)
        self.buf = self.s.recv(4096)  # INFO
        opts = {"verbose": False, "pedantic": False, "name": name, "lang": lang, "version": version, "protocol": 1,
                "headers": True, "no_responders": True}
        if user is not None:
            opts.update(user=user, **{"pass": pw})
        opts.update(extra or {})
        self.send(b"CONNECT " + json.dumps(opts).encode() + b"\r\nPING\r\n")
        self.ok = b"PONG" in self.read_until(b"PONG", 2)

    def send(self, data: bytes) -> None:
        self.s.sendall(data)

    def read_until(self, token: bytes, timeout: float = 1.0) -> bytes:
        end, out = time.time() + timeout, b""
        while time.time() < end and token not in out and b"-ERR" not in out:
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if b"PING\r\n" in chunk:
                with contextlib.suppress(OSError):
                    self.send(b"PONG\r\n")
        return out

    def pub(self, subject: str, payload: bytes, reply: str | None = None) -> None:
        self.send(f"PUB {subject}{' ' + reply if reply else ''} {len(payload)}\r\n".encode() + payload + b"\r\n")

    def sub(self, subject: str, sid: int, queue: str | None = None) -> None:
        self.send(f"SUB {subject}{' ' + queue if queue else ''} {sid}\r\n".encode())

    def flush(self) -> bytes:
        self.send(b"PING\r\n")
        return self.read_until(b"PONG", 2)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.s.setblocking(False)
            with contextlib.suppress(OSError):
                while self.s.recv(65536):  # what is still unread (closing with it would reset the connection)
                    pass
            self.s.close()


class NatsService(threading.Thread):
    """A long-lived client: subscribes, answers PINGs, replies to requests / publishes now and then, until stopped."""

    def __init__(self, port: int, user: str, pw: str, name: str, subs: list[tuple[str, str | None]], rng: random.Random,
                 publish: str | None = None, life: float = 20):
        super().__init__(daemon=True)
        self.args = (port, user, pw, name, subs, publish)
        self.rng, self.end, self.stop_ev = rng, time.time() + life, threading.Event()

    def run(self) -> None:
        port, user, pw, name, subs, publish = self.args
        with contextlib.suppress(OSError):
            c = NatsConn(port, user, pw, name, lang=self.rng.choice(["go", "python3"]), version=self.rng.choice(["1.24.0", "2.2.0"]))
            c.s.settimeout(0.3)
            for i, (subj, q) in enumerate(subs, 1):
                c.sub(subj, i, q)
            buf, last = b"", time.time()
            while not self.stop_ev.is_set() and time.time() < self.end:
                try:
                    chunk = c.s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                except socket.timeout:
                    pass
                while b"\r\n" in buf:
                    line, rest = buf.split(b"\r\n", 1)
                    if line.startswith(b"MSG "):
                        parts = line.split()
                        n = int(parts[-1])
                        if len(rest) < n + 2:
                            break
                        if len(parts) == 5:  # a request: reply to it
                            c.pub(parts[3].decode(), json.dumps({"status": "ok", "items": self.rng.randint(1, 9)}).encode())
                        buf = rest[n + 2:]
                        continue
                    if line == b"PING":
                        c.send(b"PONG\r\n")
                    buf = rest
                if publish and time.time() - last > self.rng.uniform(0.5, 2):
                    c.pub(publish.replace("*", self.rng.choice(WORDS)), json.dumps({"t": round(time.time(), 3),
                                                                                     "v": self.rng.uniform(0, 100)}).encode())
                    last = time.time()
            c.close()


def bcrypt_hash(password: str) -> str:
    out = subprocess.run([SYS_PY, "-c", "import bcrypt,sys; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(rounds=4)).decode())",
                          password], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise MissingProgram("bcrypt for /usr/bin/python3 not found -- install it with: apt-get install python3-bcrypt")
    return "$2a$" + out.stdout.strip()[4:]


def source_nats(args) -> Source:
    nats = need("nats-server", "nats-server")
    rng = random.Random(f"{args.seed}-nats")
    with tempfile.TemporaryDirectory(prefix="onb11-nats-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, route_port, peer_port, peer_route = free_port(), free_port(), free_port(), free_port()
        pw = {u: f"{u.split('-')[0].capitalize()}-nats-{i + 11}" for i, u in enumerate(NATS_PERMS)}
        hashes = {u: bcrypt_hash(p) for u, p in pw.items()}

        def users_block(extra_users: dict | None = None) -> str:
            rows = []
            for u, perms in NATS_PERMS.items():
                rows.append(f'    {{user: "{u}", password: "{hashes[u]}"' + (f", permissions: {perms}" if perms else "") + "}")
            for u, h in (extra_users or {}).items():
                rows.append(f'    {{user: "{u}", password: "{h}"}}')
            return "\n".join(rows)

        conf, logp = os.path.join(work, "nats.conf"), os.path.join(work, "nats.log")
        state = {"extra_users": {}}

        def write_conf(extra: str = "", p: int | None = None, max_payload: str = "64KB", text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else NATS_CONF.format(
                port=p or port, work=work, route_port=route_port, peer_route=peer_route, users=users_block(state["extra_users"]),
                extra=extra, max_payload=max_payload))

        write_conf()
        write_atomic(os.path.join(work, "peer.conf"), NATS_PEER.format(port=peer_port, route_port=peer_route, peer_route=route_port,
                                                                       users=users_block()))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:  # config errors are printed before the log file is opened
                sv.start("nats", [nats, "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"Server is ready", since, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("nats", signal.SIGTERM, 15)

        def start_peer() -> None:
            sv.start("peer", [nats, "-c", os.path.join(work, "peer.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            wait_port(peer_port, 20)

        def conn(user: str, name: str, r: random.Random, password: str | None = None, **kw) -> NatsConn | None:
            try:
                return NatsConn(port, user, password or pw[user], name, lang=r.choice(["python3", "go", "go", "nats.js", "java"]),
                                version=r.choice(["1.24.0", "2.10.2", "2.2.0", "1.1.0"]), **kw)
            except OSError:
                return None

        n_order = [5000]

        def short_client(r: random.Random) -> None:
            x = r.random()
            if x < 0.3:  # the web shop publishes an order and asks for its status
                c = conn("orders-api", f"shop-web-{r.randint(1, 4)}", r)
                if c:
                    n_order[0] += 1
                    c.pub(f"orders.{r.choice(['eu', 'us'])}.created", json.dumps({"order": n_order[0], "user": r.choice(USERS),
                                                                                  "total": round(r.uniform(5, 300), 2)}).encode())
                    if r.random() < 0.5:
                        c.sub("_INBOX.web.%d" % n_order[0], 1)
                        c.pub("orders.lookup", json.dumps({"order": n_order[0] - r.randint(0, 40)}).encode(),
                              reply="_INBOX.web.%d" % n_order[0])
                        c.read_until(b"MSG", 0.5)
                    c.flush()
                    c.close()
            elif x < 0.5:  # billing marks orders paid
                c = conn("billing-worker", f"billing-{r.choice(['charge', 'refund', 'invoice'])}", r)
                if c:
                    for _ in range(r.randint(1, 4)):
                        c.pub(f"orders.{r.choice(['eu', 'us'])}.paid", json.dumps({"order": n_order[0] - r.randint(0, 30)}).encode())
                    c.pub("billing.invoice.created", b'{"ok": true}')
                    c.flush()
                    c.close()
            elif x < 0.7:  # a sensor gateway uploads a batch of readings
                c = conn("sensor-gw", f"gw-{r.choice(WORDS)}", r)
                if c:
                    for _ in range(r.randint(2, 10)):
                        c.pub(f"telemetry.{r.choice(['temp', 'humidity', 'power'])}.{r.choice(WORDS)}",
                              json.dumps({"v": round(r.uniform(0, 99), 2)}).encode())
                    c.flush()
                    c.close()
            elif x < 0.82:  # the dashboard peeks at a subject for a moment
                c = conn("dashboard", f"dashboard-{r.choice(USERS)}", r)
                if c:
                    c.sub(r.choice(["telemetry.>", "orders.>", "billing.>"]), 1)
                    c.read_until(b"MSG", r.uniform(0.05, 0.3))
                    c.send(b"UNSUB 1\r\n")
                    c.flush()
                    c.close()
            elif x < 0.92:  # the mailer sends receipts
                c = conn("mailer", "mailer", r)
                if c:
                    c.pub("mail.receipt", json.dumps({"to": f"{r.choice(USERS)}@example.test"}).encode())
                    c.flush()
                    c.close()
            else:  # ops tools
                c = conn("ops", f"nats-cli-{r.choice(USERS)}", r)
                if c:
                    c.sub("$SYS.>", 1) if r.random() < 0.2 else c.sub("orders.>", 1)
                    c.flush()
                    c.close()

        services: list[NatsService] = []

        def keep_services(r: random.Random) -> None:
            services[:] = [s for s in services if s.is_alive()]
            kinds = [("orders-api", "orders-api", [("orders.lookup", "api")], None),
                     ("billing-worker", "billing-ledger", [("orders.*.paid", "ledger")], "billing.ledger.*"),
                     ("dashboard", "dashboard-wall", [("telemetry.>", None), ("orders.>", None)], None),
                     ("mailer", "mailer-worker", [("orders.*.paid", "mailers")], "mail.sent.*"),
                     ("sensor-gw", "gw-hall", [("sensors.cmd.hall", None)], "telemetry.temp.*")]
            while len(services) < 4:
                user, name, subs, publish = r.choice(kinds)
                s = NatsService(port, user, pw[user], f"{name}-{r.randint(1, 9)}", subs, random.Random(r.random()), publish,
                                life=r.uniform(8, 30))
                s.start()
                services.append(s)

        start_peer()
        start()
        log = FileLog(logp)
        say(f"nats-server on 127.0.0.1:{port} (route {route_port}, peer on {peer_port}); normal phase...")
        st = {"restarts": 0, "reloads": 0}

        def round_fn(n: int, elapsed: float) -> None:
            keep_services(rng)
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [short_client(rr) for _ in range(rr.randint(3, 8))])
                       for _ in range(rng.randint(3, 6))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            if st["reloads"] < 2 and elapsed > 20 + 25 * st["reloads"]:  # a user added / removed, then a reload
                if st["reloads"] == 0:
                    state["extra_users"]["backup-job"] = bcrypt_hash("Backup-nats-99")
                else:
                    state["extra_users"].clear()
                write_conf()
                sv.procs["nats"].send_signal(signal.SIGHUP)
                st["reloads"] += 1
            if st["restarts"] < 2 and elapsed > 12 + 25 * st["restarts"]:
                for s in services:
                    s.stop_ev.set()
                stop()
                time.sleep(0.3)
                start()
                st["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.25))

        try:
            normal = normal_loop(args, log, "nats", round_fn)
            templates = {nats_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, nats_template, nats_problem, nats_echo))

            def restart_clean() -> None:
                sv.stop("nats", signal.SIGTERM, 10)
                sv.forget("nats")
                write_conf()
                start()

            def background(r: random.Random) -> None:
                keep_services(r)
                short_client(r)

            with Background(background, random.Random(rng.random()), (0.1, 0.4)):
                with br.phase("auth_failure"):  # stale / wrong credentials, an unknown user, no credentials
                    for user, bad in [("orders-api", "Orders-nats-10"), ("sensor-gw", ""), ("grafana", "grafana"), (None, None)]:
                        with br.occurrence(1.5):
                            with contextlib.suppress(OSError):
                                NatsConn(port, user, bad, rng.choice(["shop-web-legacy", "gw-old", "metrics-exporter"])).close()
                with br.phase("permission_violation"):  # clients publishing / subscribing where their user may not
                    for user, op, subj in [("sensor-gw", "pub", "orders.eu.created"), ("dashboard", "pub", "billing.invoice.void"),
                                           ("mailer", "sub", "billing.>")]:
                        with br.occurrence(1.5):
                            c = conn(user, f"{user}-{rng.randint(1, 9)}", rng)
                            if c:
                                c.pub(subj, b'{"x": 1}') if op == "pub" else c.sub(subj, 1)
                                c.flush()
                                c.close()
                with br.phase("max_payload"):  # a report over max_payload
                    for size in [200_000, 1_500_000]:
                        with br.occurrence(1.5):
                            c = conn("orders-api", "report-exporter", rng)
                            if c:
                                with contextlib.suppress(OSError):
                                    c.pub("orders.report.daily", rng.randbytes(size))
                                    c.flush()
                                c.close()
                with br.phase("protocol_error"):  # not the NATS protocol on the client port, or broken protocol after login
                    for login, data in [(False, b"GET / HTTP/1.1\r\nHost: nats\r\n\r\n"), (False, TLS_HELLO),
                                        (True, b"PUB orders.eu.created notanumber\r\n"), (True, b"\x00\xff\x13\x37 hello\r\n"),
                                        (True, b"SUB a b c d e f\r\n")]:
                        with br.occurrence(1.5):
                            if not login:
                                raw_send(port, data, wait=0.5)
                                continue
                            c = conn("orders-api", "shop-web-buggy", rng)
                            if c:
                                with contextlib.suppress(OSError):
                                    c.send(data)
                                    c.read_until(b"-ERR", 1)
                                c.close()
                with br.phase("stale_connection"):  # clients that stop answering PINGs (a frozen process)
                    for name in ["gw-basement", "dashboard-lobby"]:
                        with br.occurrence(2.0):
                            since = size_of(logp)
                            c = conn("sensor-gw" if name.startswith("gw") else "dashboard", name, rng)
                            log_has(logp, b"Stale Client Connection", since, 15)
                            if c:
                                c.close()
                with br.phase("slow_consumer"):  # a subscriber that stops reading while a publisher floods it
                    for name in ["dashboard-report", "dashboard-tv"]:
                        with br.occurrence(2.0):
                            sub = conn("dashboard", name, rng)
                            pub = conn("sensor-gw", "gw-replay", rng)
                            if sub and pub:
                                sub.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                                sub.sub("telemetry.replay.>", 1)
                                sub.flush()
                                with contextlib.suppress(OSError):
                                    for _ in range(600):
                                        pub.pub("telemetry.replay.hall", rng.randbytes(60000))
                                time.sleep(2)
                            for c in (sub, pub):
                                if c:
                                    c.close()
                with br.phase("max_connections"):  # a connection leak: a job opening connections until the limit
                    for n in [70, 75]:
                        with br.occurrence(2.0):
                            held = []
                            for i in range(n):
                                c = conn("ops", f"leaky-job-{i}", rng)
                                if c:
                                    held.append(c)
                            time.sleep(0.5)
                            for c in held:
                                c.close()
                with br.phase("max_subscriptions"):  # a client subscribing to more subjects than allowed
                    for n in [60]:
                        with br.occurrence(1.5):
                            c = conn("dashboard", "dashboard-grid", rng)
                            if c:
                                with contextlib.suppress(OSError):
                                    for i in range(n):
                                        c.sub(f"telemetry.temp.room{i}", i + 1)
                                    c.flush()
                                c.close()
                with br.phase("route_down"):  # the cluster peer crashed: the route drops, reconnects fail
                    for down in [4, 6]:
                        with br.occurrence(2.0):
                            sv.stop("peer", signal.SIGKILL, 5)
                            time.sleep(down)
                        start_peer()
                        time.sleep(3)
                        br.between()
                with br.phase("bad_config_restart"):  # nats.conf edits with mistakes, the server restarted
                    blocker = tcp_blocker()
                    good = NATS_CONF.format(port=port, work=work, route_port=route_port, peer_route=peer_route,
                                            users=users_block(), extra="", max_payload="64KB")
                    for kw in [{"text": good.replace("cluster {", "cluster {{", 1)}, {"extra": "max_payloads: 1MB\n"},
                               {"p": blocker.getsockname()[1]}, {"max_payload": "64MB"}, {"extra": 'ping_interval: "soon"\n'}]:
                        for s in services:
                            s.stop_ev.set()
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            for s in services:
                s.stop_ev.set()
            stop()
            sv.stop("peer", signal.SIGTERM, 10)
    return Source("nats", "NATS server (nats-server)", version_of([nats, "--version"]),
                  "nats-server log_file with debug and logtime, its stderr appended (`[12402] 2026/12/05 23:26:40.191234 [DBG] "
                  "127.0.0.1:38246 - cid:6 - \"v1.24.0:go:orders-api-3\" - Client connection closed: Client Closed`, `... [DBG] "
                  "127.0.0.1:54422 - rid:4 - Router Ping Timer`, `... [INF] Reloaded server configuration`, `... [ERR] "
                  "127.0.0.1:58044 - cid:9 - \"v1.2.0:python3:gw-old\" - authentication error - User \"sensor-gw\"`): every "
                  "client connection traced by its cid from created to closed",
                  "nats-server (6 users with bcrypt passwords and per-user permissions, max_payload 64KB, max_connections "
                  "64, max_subscriptions 40, ping_interval 3s, write_deadline 1s, a cluster route to a second node) with "
                  "python clients: short-lived web / billing / sensor-gateway / dashboard / mailer / ops clients "
                  "publishing, subscribing, unsubscribing and making requests, 4 long-lived services (a request responder, "
                  "queue-group workers, a dashboard, a gateway) answering PINGs and replaced every 8-30s; 2 config reloads "
                  "(SIGHUP after adding / removing a user), 2 clean restarts",
                  "auth_failure (4: a stale password, an empty password, an unknown user, no credentials), "
                  "permission_violation (3 publish / subscribe violations), max_payload (2 messages over 64KB), "
                  "protocol_error (5: HTTP and TLS before any CONNECT, then after a login a bad PUB size, binary garbage, a SUB "
                  "with too many arguments), stale_connection (2 clients that stop "
                  "answering PINGs), slow_consumer (2 subscribers that stop reading during a flood), max_connections (2 "
                  "connection leaks past 64), max_subscriptions (1 client over 40 subscriptions), route_down (2 crashes "
                  "of the cluster peer for 4-6s), bad_config_restart (5: a syntax error, an unknown field, the port "
                  "taken, max_payload over max_pending, a bad duration)", normal, br.errors)


# --------------------------------------------------------------------------
# samba (smbd in a mount namespace with its own users, smbclient)
# --------------------------------------------------------------------------

SMB_CONF = """\
[global]
 workgroup = ONB11
 netbios name = FILES11
 server string = Onb11 file server
 server role = standalone server
 smb ports = {port}
 interfaces = 127.0.0.1
 bind interfaces only = yes
 private dir = {work}/private
 lock directory = {work}/lock
 state directory = {work}/state
 cache directory = {work}/cache
 pid directory = {work}/run
 ncalrpc dir = {work}/run/ncalrpc
 usershare path = {work}/usershares
 usershare max shares = 0
 log level = 2 auth_audit:3
 logging = file
 log file = {work}/log/smbd.log
 max log size = 0
 debug pid = yes
 disable spoolss = yes
 load printers = no
 printcap name = /dev/null
 passdb backend = tdbsam:{work}/private/passdb.tdb
 server min protocol = SMB2
 map to guest = never
 disable netbios = yes
{extra}
[homes]
 comment = Home directories
 browseable = no
 read only = no
 valid users = %S

[projects]
 comment = Team folders
 path = {work}/shares/projects
 read only = no
 valid users = @employees

[finance]
 comment = Finance
 path = {work}/shares/finance
 read only = no
 valid users = @finance
 max connections = 3

[scans]
 comment = Scanner drop box
 path = {work}/shares/scans
 read only = yes
 write list = carol dave

[public]
 comment = Handbooks and forms
 path = {work}/shares/public
 read only = yes

[archive]
 comment = Archive (external disk)
 path = {work}/mnt/archive-disk/archive
 read only = yes
{shares_extra}"""
SMB_CLIENT = """\
[global]
 workgroup = ONB11
 client min protocol = SMB2
 log level = 0
"""
SMB_FINANCE = ["alice", "erin", "grace"]
SAMBA_HEAD = re.compile(r"^\[\d{4}/\d\d/\d\d [\d:.]+,\s*(\d+)(?:, pid=\d+)?\]")


def samba_template(line: str) -> str:
    body = SAMBA_HEAD.sub(r"[\1]", line, count=1)
    for pat, rep in [(r"\(pid \d+\)", "(pid N)"), (r"\(uid=\d+, gid=\d+\)", "(uid=N, gid=N)"), (r"'[^']*'", "'_'"),
                     (r"S-1-5-21-[\d-]+", "SID"), (r"ipv4:[\d.]+:\d+", "ADDR"), (r"\[(\w[\w$-]*)\]", "[NAME]"),
                     (r"\b(?:%s)\b" % "|".join(["projects", "finance", "scans", "public", "archive", "homes", "IPC\\$"]), "SHARE"),
                     (r"\b[\w-]+\.(txt|csv|pdf|docx|xlsx|png|md)\b", "FILE"), (r"\bteam-\w+", "TEAM"), (r"/[\w./$-]+", "PATH")]:
        body = re.sub(pat, rep, body)
    return mask_names(NAMES.sub("NAME", body))


def samba_problem(text: str) -> bool:
    return bool(re.search(r"FAILED|[Ff]ailed|[Dd]enied|not permitted|[Ee]xceeded|[Ee]rror|NT_STATUS_(?!OK\b)[A-Z_]+|[Rr]efused|"
                          r"[Uu]nable|[Cc]annot|can't|[Ii]nvalid|[Uu]nknown|disabled|[Nn]o such", text))


def samba_echo(text: str) -> bool:
    return False


def source_samba(args) -> Source:
    smbd = need("/usr/sbin/smbd", "samba")
    smbpasswd, smbclient = need("smbpasswd", "samba-common-bin"), need("smbclient", "smbclient")
    smbcontrol = need("smbcontrol", "samba-common-bin")
    rng = random.Random(f"{args.seed}-samba")
    with tempfile.TemporaryDirectory(prefix="onb11-samba-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("private", "lock", "state", "cache", "run", "log", "homes", "shares/projects", "shares/finance", "shares/scans",
                  "shares/public", "mnt/archive-disk/archive", "local", "usershares"):
            os.makedirs(os.path.join(work, d))
        os.chmod(os.path.join(work, "usershares"), 0o1770)
        os.chmod(os.path.join(work, "private"), 0o700)
        # the file server's own users, in a private /etc/passwd and /etc/group (a mount namespace)
        uid = {u: 3001 + i for i, u in enumerate(USERS)}
        with open("/etc/passwd") as f:
            passwd = f.read()
        with open("/etc/group") as f:
            group = f.read()
        passwd += "".join(f"{u}:x:{uid[u]}:3000:{u.capitalize()}:{work}/homes/{u}:/usr/sbin/nologin\n" for u in USERS)
        group += f"employees:x:3000:{','.join(USERS)}\nfinance:x:3100:{','.join(SMB_FINANCE)}\n"
        write_atomic(os.path.join(work, "passwd"), passwd)
        write_atomic(os.path.join(work, "group"), group)
        os.chmod(os.path.join(work, "passwd"), 0o644)
        os.chmod(os.path.join(work, "group"), 0o644)
        for u in USERS:
            h = os.path.join(work, "homes", u)
            os.makedirs(h)
            os.chown(h, uid[u], 3000)
            os.chmod(h, 0o700)
        for d, gid, mode in (("projects", 3000, 0o2775), ("finance", 3100, 0o2770), ("scans", 3000, 0o2775), ("public", 0, 0o755)):
            os.chown(os.path.join(work, "shares", d), 0, gid)
            os.chmod(os.path.join(work, "shares", d), mode)
        for team in WORDS[:6]:
            p = os.path.join(work, "shares", "projects", f"team-{team}")
            os.makedirs(p)
            os.chown(p, 0, 3000)
            os.chmod(p, 0o2777)
        for i in range(8):
            with open(os.path.join(work, "shares", "public", f"handbook-{i}.pdf"), "wb") as f:
                f.write(rng.randbytes(rng.randint(2000, 60000)))
        for i in range(5):
            with open(os.path.join(work, "mnt", "archive-disk", "archive", f"ledger-{2019 + i}.csv"), "w") as f:
                f.write("".join(f"{rng.randint(1, 9999)},{rng.choice(WORDS)},{rng.uniform(1, 900):.2f}\n" for _ in range(200)))
        local = os.path.join(work, "local")
        for i in range(10):
            ext = rng.choice(["txt", "csv", "docx", "pdf", "xlsx", "png"])
            with open(os.path.join(local, f"doc{i}.{ext}"), "wb") as f:
                f.write(rng.randbytes(rng.randint(500, 120000)))
        port = free_port()
        conf, cconf, logp = os.path.join(work, "smb.conf"), os.path.join(work, "client.conf"), os.path.join(work, "log", "smbd.log")
        write_atomic(cconf, SMB_CLIENT)

        def write_conf(extra: str = "", shares_extra: str = "", p: int | None = None) -> None:
            write_atomic(conf, SMB_CONF.format(port=p or port, work=work, extra=extra, shares_extra=shares_extra))

        write_conf()
        ns = Namespace(sv, "samba-ns", f"mount --bind {work}/passwd /etc/passwd && mount --bind {work}/group /etc/group")
        pw = {u: f"{u.capitalize()}-smb-{i + 11}" for i, u in enumerate(USERS)}
        for u in USERS:
            subprocess.run(ns.argv([smbpasswd, "-c", conf, "-a", "-s", u]), input=f"{pw[u]}\n{pw[u]}\n", text=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:  # what smbd prints before its log file is set up goes to the same file
                sv.start("smbd", ns.argv([smbd, "-F", "--no-process-group", "-s", conf]), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port, 20)
                log_has(logp, b"waiting for connections", since, 10)
                time.sleep(0.2)

        def stop() -> None:
            sv.stop("smbd", signal.SIGTERM, 15)

        def smb(user: str, share: str, cmds: str, password: str | None = None, timeout: float = 20, extra: list[str] | None = None) -> str:
            argv = [smbclient, "-s", cconf, "-p", str(port), f"//127.0.0.1/{share}", "-U", f"{user}%{password or pw[user]}",
                    *(extra or []), "-c", cmds]
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=local)
                return p.stdout + p.stderr
            except subprocess.TimeoutExpired:
                return ""

        def _close_stdin(p: subprocess.Popen) -> None:
            with contextlib.suppress(OSError):
                p.stdin.write(b"ls\nexit\n")
                p.stdin.close()

        def hold(user: str, share: str, secs: float) -> subprocess.Popen:
            """An interactive smbclient session kept open (its last commands come on stdin after ``secs``)."""
            p = subprocess.Popen([smbclient, "-s", cconf, "-p", str(port), f"//127.0.0.1/{share}", "-U", f"{user}%{pw[user]}"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=local,
                                 start_new_session=True)
            threading.Timer(secs, _close_stdin, args=(p,)).start()
            return p

        n_file = [0]

        def workload(r: random.Random, users: list[str] | None = None) -> None:
            user = r.choice(users or USERS)
            x = r.random()
            n_file[0] += 1
            doc = r.choice(os.listdir(local))
            name = f"{user}-{r.choice(WORDS)}-{n_file[0]}.{doc.rsplit('.', 1)[1]}"
            team = f"team-{r.choice(WORDS[:6])}"
            if x < 0.35:  # team folders
                cmds = r.choice([f"cd {team}; ls; put {doc} {name}; allinfo {name}",
                                 f"cd {team}; put {doc} {name}; get {name} /dev/null; del {name}",
                                 f"cd {team}; mkdir {user}-drafts; put {doc} {user}-drafts\\{name}; rename {user}-drafts\\{name} "
                                 f"{user}-drafts\\final-{name}; del {user}-drafts\\final-{name}; rmdir {user}-drafts",
                                 f"ls; cd {team}; ls"])
                smb(user, "projects", cmds)
            elif x < 0.55:  # the home directory
                smb(user, user, r.choice([f"put {doc} {name}; ls", f"ls; put {doc} {name}; get {name} /dev/null; del {name}", "ls"]))
            elif x < 0.65:  # finance
                u = r.choice(SMB_FINANCE) if users is None else r.choice([u for u in users if u in SMB_FINANCE] or [user])
                if u in SMB_FINANCE:
                    smb(u, "finance", r.choice([f"ls; put {doc} {u}-Q{r.randint(1, 4)}-report.xlsx", "ls"]))
            elif x < 0.75:  # the scanner drop box
                u = r.choice(["carol", "dave"])
                if users is None or u in users:
                    smb(u, "scans", f"put {doc} scan-{n_file[0]:05d}.pdf; ls")
                else:
                    smb(user, "scans", "ls")
            elif x < 0.85:  # handbooks and forms
                smb(user, "public", f"ls; get handbook-{r.randint(0, 7)}.pdf /dev/null")
            elif x < 0.93:  # the archive
                smb(user, "archive", f"ls; get ledger-{r.randint(2019, 2023)}.csv /dev/null")
            else:  # browsing the server's shares
                try:
                    subprocess.run([smbclient, "-s", cconf, "-p", str(port), "-L", "//127.0.0.1", "-U", f"{user}%{pw[user]}"],
                                   capture_output=True, timeout=20)
                except subprocess.TimeoutExpired:
                    pass

        start()
        log = FileLog(logp)
        say(f"smbd on 127.0.0.1:{port} (users of its own in a mount namespace); normal phase...")
        state = {"restarts": 0, "reloads": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [workload(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if state["reloads"] < 2 and elapsed > 25 + 25 * state["reloads"]:  # an admin edits smb.conf and reloads
                write_conf(shares_extra="\n[training]\n comment = Training material\n path = {}/shares/public\n read only = yes\n"
                           .format(work) if state["reloads"] == 0 else "")
                run_quiet([smbcontrol, "-s", conf, "smbd", "reload-config"], 20)
                state["reloads"] += 1
            if state["restarts"] < 2 and elapsed > 15 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.3))

        try:
            normal = normal_loop(args, log, "samba", round_fn)
            templates = {samba_template(x) for x in normal}
            is_head = lambda line: bool(SAMBA_HEAD.match(line))  # noqa: E731
            br = Breaker(log, grouped_selector(templates, samba_template, samba_problem, samba_echo, head=is_head))

            def restart_clean() -> None:
                sv.stop("smbd", signal.SIGTERM, 10)
                sv.forget("smbd")
                write_conf()
                start()

            calm = USERS[:7]
            with Background(lambda r: workload(r, calm), random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("wrong_password"):  # mistyped / old passwords
                    for user, bad in [("heidi", "Heidi-smb-17"), ("ivan", "password"), ("judy", pw["judy"].lower())]:
                        with br.occurrence(1.5):
                            smb(user, "projects", "ls", password=bad)
                with br.phase("unknown_user"):  # accounts that do not exist here
                    for user in ["administrator", "scanner"]:
                        with br.occurrence(1.5):
                            smb(user, "projects", "ls", password="Passw0rd!")
                with br.phase("disabled_account"):  # accounts disabled by the admin (smbpasswd -d)
                    for user in ["mallory", "oscar"]:
                        subprocess.run(ns.argv([smbpasswd, "-c", conf, "-d", user]), stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, timeout=30)
                        br.between()
                        with br.occurrence(1.5):
                            smb(user, "projects", "ls")
                        subprocess.run(ns.argv([smbpasswd, "-c", conf, "-e", user]), stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, timeout=30)
                        br.between()
                with br.phase("share_access_denied"):  # a good login, then the tree connect is refused
                    for user, share in [("heidi", "finance"), ("ivan", "finance"), ("judy", "bob")]:
                        with br.occurrence(1.5):
                            smb(user, share, "ls")
                with br.phase("share_path_missing"):  # the archive's external disk is not mounted
                    disk = os.path.join(work, "mnt", "archive-disk")
                    os.rename(disk, disk + ".offline")
                    br.between()
                    for user in ["heidi", "judy"]:
                        with br.occurrence(1.5):
                            smb(user, "archive", "ls")
                    os.rename(disk + ".offline", disk)
                    br.between()
                with br.phase("max_connections"):  # more than 3 people on the finance share at once
                    for who in [["alice", "erin", "grace", "alice"], ["grace", "erin", "alice", "erin", "grace"]]:
                        held = [hold(u, "finance", 3) for u in who[:3]]
                        time.sleep(1.5)
                        br.between()
                        with br.occurrence(1.5):
                            for u in who[3:]:
                                smb(u, "finance", "ls")
                        for p in held:
                            try:
                                p.wait(10)
                            except subprocess.TimeoutExpired:
                                p.kill()
                        br.between()
                with br.phase("garbage"):  # not SMB on the port
                    for data in [b"GET / HTTP/1.1\r\nHost: files\r\n\r\n", TLS_HELLO, b"\x00\x00\x00\x10" + rng.randbytes(16),
                                 b"\x81\x00\x00\x44" + rng.randbytes(68)]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("bad_config_restart"):  # smb.conf edits with mistakes, smbd restarted
                    blocker = tcp_blocker()
                    for kw in [{"p": blocker.getsockname()[1]}, {"extra": " passdb backend = ldapsam:ldap://127.0.0.1:1\n"},
                               {"extra": " max protcol = SMB3\n"}, {"extra": " private dir = /nonexistent/samba/private\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2.5)
                            smb(rng.choice(calm), "projects", "ls", timeout=5)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("samba", "Samba (smbd)", version_of([smbd, "--version"]),
                  "smbd log file at log level 2 auth_audit:3 with debug pid, its stdout/stderr appended: entries of a header "
                  "line and indented message lines (`[2026/12/05 23:22:47.588485,  2, pid=11200] "
                  "../../source3/smbd/smb2_service.c:840(make_connection_snum)` / `  files11 (ipv4:127.0.0.1:46614) signed "
                  "connect to service projects initially as user bob (uid=3002, gid=3000) (pid 11200)`, `  Auth: [SMB2,(null)] "
                  "user [ONB11]\\[bob] at [...] with [NTLMv2] status [NT_STATUS_OK] ...`, `  bob opened file ... read=Yes "
                  "write=No (numopen=2)`, the JSON audit line of failed logins): every session traced by its smbd pid from "
                  "authentication through tree connects and file opens to the closed connections",
                  "smbd -F (standalone, tdbsam, SMB2+, 12 users of its own, shares: homes, team folders for @employees, a "
                  "finance share for @finance with max connections 3, a scanner drop box with a write list, read-only "
                  "handbooks and an archive) with smbclient sessions of the 12 users: put / get / mkdir / rename / del / "
                  "allinfo / ls in team folders and homes, finance reports, scans, handbook and archive downloads, share "
                  "listings (IPC$); 2 smbcontrol reload-config after smb.conf edits, 2 clean restarts",
                  "wrong_password (3), unknown_user (2), disabled_account (2 accounts disabled with smbpasswd -d), "
                  "share_access_denied (3 good logins refused at the tree connect: a share of another group, another "
                  "user's home), share_path_missing (2 connects to a share whose disk is not mounted), "
                  "max_connections (2: a 4th / 5th user on a share of max connections 3), garbage (4: HTTP, TLS, bad "
                  "NetBIOS headers), bad_config_restart (4: the port taken, an unreachable ldapsam passdb, a mistyped "
                  "parameter, a missing private dir)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_eleventh", SOURCES, globals(), seed=11011, min_normal_s=60,
               root_for="network and mount namespaces, programs dropping to their own users")


if __name__ == "__main__":
    sys.exit(main())
