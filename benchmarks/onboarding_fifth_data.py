#!/usr/bin/env python3
"""Generate the fifth onboarding corpus: real log lines written by real programs, grouped into events.

A fifth corpus built exactly like benchmarks/onboarding_fourth_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py and of the fourth script
imported) from five programs that no other corpus uses.  Every line is the verbatim output of a
program started by this script on this machine; the script only *drives* the programs (clients it
runs) and *breaks* them (bad reloads, killed or frozen dependencies, full disks, garbage on the wire,
wrong passwords, SIGKILL...).  It never writes a log line itself.

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one bad reload,
one outage of a dependency (the state-change lines and the requests failing during it).  The
breakages are made one occurrence at a time, each in its own time window followed by a pause for
the program to finish logging about it; what the program logs between two windows (recovery,
restarting it) belongs to no event and is not kept.  Normal background traffic keeps running
during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends postfix
openssh-server openssh-client sshpass dnsmasq-base tinyproxy apache2; also util-linux (unshare,
nsenter, setpriv), openssl and python3; the SMTP, HTTP, DNS and TFTP clients are python code in this
script, the SSH clients are ssh/sftp (with sshpass for passwords).  Nothing is installed by this
script, and no system service of these packages needs to run: each daemon is started directly as a
plain process, without systemd):

  postfix   Postfix 3.7 (`postfix start-fg`) with its own main.cf/master.cf bind-mounted over
            /etc/postfix in a private mount namespace (nothing under /etc is changed), its own queue
            directory, and `maillog_file` (postlogd): `Mon dd hh:mm:ss host postfix/daemon[pid]:
            message`.  Normal: mail from "internet" hosts to virtual mailboxes (maildirs on a 3 MB
            tmpfs), the app servers of mynetworks relaying to partner domains (transport to a local
            SMTP sink, not logged), multi-recipient mail, a few messages to unknown partner users
            (bounces are part of normal mail), a load balancer's EHLO/QUIT health checks, monitoring
            notifications, `postfix reload` / `postqueue -f` / `postfix flush`, two clean restarts.
            Broken: relaying denied, unknown recipients, SMTP protocol errors (garbage, pipelining
            before the greeting, TLS, bad HELO, overlong lines), messages over message_size_limit,
            spam subjects rejected by header_checks, the partner's server down / answering 4xx / 5xx,
            the mailbox tmpfs full, qmgr/pickup/cleanup/trivial-rewrite processes SIGKILLed, a
            client over the connection-rate limit, broken main.cf values reloaded (SIGHUP to master;
            some make master exit: it is started again outside the event window).
  sshd      OpenSSH 9.2 sshd (-D -e, LogLevel VERBOSE, internal-sftp -l INFO) on a free port with its
            own config and host keys; users exist only in a private mount namespace (copies of
            /etc/passwd, /etc/shadow and /etc/group bind-mounted there), homes in a temp dir.  Its
            log is its stderr, message only (`Accepted publickey for alice from 127.0.0.1 port N ssh2:
            ED25519 SHA256:...`, no timestamp, no pid).  Normal: key and password logins (ssh)
            running commands, sftp sessions uploading / downloading / listing / removing files,
            SIGHUP restarts, two clean restarts.
            Broken: wrong passwords, unknown users, garbage / HTTP /
            TLS / SSH-1 banners on the port, clients offering only algorithms the server does not
            have, clients offering more unauthorized keys than MaxAuthTries, users denied by
            DenyUsers / a missing shell / a locked account, StrictModes refusing a home with bad
            modes or owner, too many unauthenticated connections (MaxStartups), TCP
            forwarding refused, broken configs at SIGHUP (sshd exits).  (Clients idle past
            LoginGraceTime were tried too: sshd -e logs nothing about them, the message is written
            from a signal handler only on platforms where that is safe, so they are not used.)
  dnsmasq   dnsmasq 2.90 (-k, DNS + TFTP, DHCP off) with `log-facility` to a file and its stderr on the
            same file (`Mon dd hh:mm:ss dnsmasq[pid]: message`, `dnsmasq-tftp[pid]` for TFTP),
            log-queries.  Normal: clients from several addresses asking A/AAAA/MX/TXT/SRV/PTR names
            of the zones an upstream server (python, not logged) serves (forwarded, then cached),
            local names from an addn-hosts file, ad-blocked names, local-only .lan names, some
            NXDOMAIN; PXE clients fetching boot files over TFTP; SIGHUP (hosts re-read, cache
            cleared), SIGUSR1 statistics dumps, two clean restarts.
            Broken: the upstream answering REFUSED / SERVFAIL, answers with private addresses
            (stop-dns-rebind), more concurrent queries than dns-forward-max while the upstream
            hangs, the hosts file made unreadable / removed / broken (SIGHUP), bad TFTP requests
            (missing and unreadable files, write requests, bad modes, paths outside the root),
            broken configs at a restart.  (The upstream stopped or frozen were tried too: dnsmasq
            logs nothing about them beyond the query/forwarded lines, so they are not used.)
  tinyproxy tinyproxy 1.11 (-d, LogLevel Info) in a private mount namespace whose /etc/hosts names the
            origin sites (bind-mounted copy), its LogFile (`LEVEL     Mon dd hh:mm:ss.mmm [pid]:
            message`).  Normal: clients from 12 addresses fetching pages, assets and APIs of four
            origin sites (python HTTP servers), GET/POST/PUT/DELETE/HEAD, some origin 404s, CONNECT to
            port 443, requests for partner sites through an upstream proxy, config reloads (SIGUSR1),
            two clean restarts.
            Broken: clients outside the Allow list, filtered domains, CONNECT to a forbidden port,
            an origin stopped, an origin hanging past Timeout, names that do not resolve, garbage /
            TLS / malformed requests, more clients than MaxClients, the upstream proxy stopped,
            broken configs reloaded.
  apache2   Apache 2.4 (-DFOREGROUND, event MPM, LogLevel info) with its ErrorLog, its combined
            CustomLog and its stderr on one file: `[Www Mon dd hh:mm:ss.usec yyyy] [module:level]
            [pid N:tid N] [client ip:port] AHnnnnn: message` and combined access lines.  Normal: a
            static site, directory listings, redirects, two API backends behind a mod_proxy_balancer
            and a reports backend (python HTTP servers), basic auth for /admin, a CGI search script,
            server-status polled, some 404s, graceful restarts (SIGUSR1), two clean restarts.
            Broken: a backend stopped, a backend hanging past the proxy timeout, wrong basic-auth
            passwords / unknown users, clients denied by the access rules, garbage / TLS / oversized /
            malformed requests, bodies over LimitRequestBody, clients too slow to send their request
            (mod_reqtimeout), files made unreadable, the CGI script broken, broken configs at a
            graceful restart (apache exits).

Layout written under --out (default benchmarks/data/onboarding_fifth):

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

  * its level marks it as a problem (postfix warning/error/fatal/panic lines,
    rejects, deferred/bounced deliveries, lost connections and timeouts; sshd
    failed/invalid/refused/error lines and [preauth] disconnects; dnsmasq
    failures, refused/SERVFAIL replies and rebind warnings; tinyproxy ERROR/
    WARNING lines; apache error-log lines of level warn or worse and access lines
    with HTTP status >= 400), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; domain names, mail addresses, queue ids, user
    names, key fingerprints and paths masked too) never occurred in the normal
    phase,

minus lines that merely echo the driving workload (postfix connect/client=/
message-id/queue-active/removed lines and successful deliveries, sshd
connection/accept/session lines, sftp file operations, dnsmasq query/forwarded/
reply/cached lines, tinyproxy Connect/Request lines, apache access lines with
status < 400).  An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_fifth_data.py --out benchmarks/data/onboarding_fifth \\
        [--sources postfix,sshd,dnsmasq,tinyproxy,apache2] [--lines 6000] [--seed 5555] \\
        [--min-normal-seconds 75]

Needs root (private mount namespaces with tmpfs and bind mounts, programs dropping to their own
users, dnsmasq's TFTP server on 127.0.0.1:69).  Programs run on free 127.0.0.1 ports from temp dirs
and are always stopped (process groups killed), also on failure; nothing under /etc or any system
service is touched.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import pwd
import random
import re
import shutil
import signal
import smtplib
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import (HARD_CAP, FileLog, arguments, free_port, need, say,  # noqa: E402
                             version_of, wait_port, write_atomic)
from onboarding_blind_data import ModeServer  # noqa: E402
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Namespace, Source,  # noqa: E402
                                     entry_selector, generate, pace, raw_send)
from onboarding_fourth_data import (UAS, Origin, Sink, build_www, dns_query, http_via,  # noqa: E402
                                    mask_names, random_path)

SOURCES = ["postfix", "sshd", "dnsmasq", "tinyproxy", "apache2"]
MAX_NORMAL_S = 480


def normal_loop(args, log: FileLog, name: str, round_fn, extra_fn=None) -> list[str]:
    """The normal phase: round_fn(n, elapsed) until --lines (+5%) and --min-normal-seconds are reached."""
    normal: list[str] = []
    t0, n = time.time(), 0
    while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
        n += 1
        round_fn(n, time.time() - t0)
        normal += log.read_new()
        pace(args, t0, len(normal))
        if n % 50 == 0:
            say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
        if time.time() - t0 > MAX_NORMAL_S:
            say(f"  {name}: normal phase stopped at {MAX_NORMAL_S}s with {len(normal)} lines")
            break
    time.sleep(1.5)
    normal += log.read_new()
    return normal


def clean_restart(state: dict, elapsed: float, stop, start, pause_s: float = 0.3, then=None) -> None:
    """The normal phase's two clean restarts (a real program writes its start-up lines there too): the first
    after 15 s, the second after 30 s; ``then`` runs after the start (clients that must sign in again)."""
    if state["restarts"] < 2 and elapsed > 15 + 15 * state["restarts"]:
        stop()
        time.sleep(pause_s)
        start()
        if then is not None:
            then()
        state["restarts"] += 1


def proc_cmdlines() -> list[tuple[int, str]]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
                out.append((int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")))
    return out


# --------------------------------------------------------------------------
# postfix
# --------------------------------------------------------------------------

POSTFIX_MAIN = """\
compatibility_level = 3.6
myhostname = mx1.example.test
mydomain = example.test
myorigin = example.test
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
queue_directory = {work}/spool
data_directory = {work}/data
maillog_file = {work}/postfix.log
maillog_file_prefixes = {work}
mynetworks = 127.0.0.0/29
smtpd_banner = $myhostname ESMTP
biff = no
alias_maps =
alias_database =
virtual_mailbox_domains = example.test, lists.example.test
virtual_mailbox_base = {mail}
virtual_mailbox_maps = hash:/etc/postfix/vmailbox
virtual_minimum_uid = 8
virtual_uid_maps = static:8
virtual_gid_maps = static:8
relay_domains = partner.test, supplier.test
transport_maps = hash:/etc/postfix/transport
smtp_dns_support_level = disabled
message_size_limit = 200000
header_checks = regexp:/etc/postfix/header_checks
smtpd_helo_required = yes
smtpd_helo_restrictions = reject_invalid_helo_hostname
smtpd_recipient_restrictions = reject_non_fqdn_recipient, reject_unlisted_recipient, permit_mynetworks, reject_unauth_destination
smtpd_data_restrictions = reject_unauth_pipelining
smtpd_client_connection_rate_limit = 40
anvil_rate_time_unit = 30s
smtpd_hard_error_limit = 5
smtpd_soft_error_limit = 3
smtpd_error_sleep_time = 0
line_length_limit = 4096
minimal_backoff_time = 3600s
maximal_backoff_time = 7200s
queue_run_delay = 3600s
bounce_queue_lifetime = 1d
smtp_connect_timeout = 5s
{extra}
"""

PF_USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "sales", "support", "billing"]
PF_HEAD = re.compile(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ ")
PF_QID = re.compile(r"\b[0-9A-F]{8,12}\b")


def postfix_template(line: str) -> str:
    m = PF_HEAD.match(line)
    body = line[m.end():] if m else line
    body = PF_QID.sub("QID", body)
    body = re.sub(r"\[\d+\]:", "[PID]:", body)
    body = re.sub(r"\blocalhost\[", "[", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def postfix_problem(line: str) -> bool:
    return bool(re.search(r"(: (warning|error|fatal|panic): |reject: |status=(deferred|bounced|expired)|lost connection|"
                          r"timeout after|too many errors|improper command pipelining|Connection refused|"
                          r"non-delivery notification|delivery temporarily suspended)", line))


def postfix_echo(line: str) -> bool:
    return bool(re.search(r"\]: (connect from |[0-9A-F]{8,12}: (client=|message-id=|from=<.*\(queue active\)$|removed$|"
                          r"to=<.*status=sent ))", line))


class PostfixDriver:
    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng = port, rng

    def message(self, r: random.Random, sender: str, rcpts: list[str], subject: str | None = None, size: int | None = None) -> str:
        subject = subject or (r.choice(["Invoice", "Re: meeting", "Weekly report", "Order confirmation", "Password reset",
                                        "Build failed", "Lunch?", "Fwd: contract", "Your shipment", "Newsletter"])
                              + f" #{r.randint(100, 9999)}")
        body = "\r\n".join(" ".join(r.choice(WORDS) for _ in range(r.randint(4, 14))) for _ in range(r.randint(2, 25)))
        if size:
            body = ("y" * 76 + "\r\n") * (size // 78)
        return (f"From: <{sender}>\r\nTo: {', '.join(rcpts)}\r\nSubject: {subject}\r\n"
                f"Message-ID: <{r.getrandbits(48):x}@{sender.split('@')[1]}>\r\n\r\n{body}\r\n")

    def session(self, src: str, helo: str, mails: list, timeout: float = 15) -> None:
        """mails: (sender, rcpts[, subject, size])"""
        r = self.rng
        s = smtplib.SMTP(timeout=timeout, local_hostname=helo, source_address=(src, 0))
        try:
            s.connect("127.0.0.1", self.port)
            s.ehlo(helo) if r.random() < 0.9 else s.helo(helo)
            for mail in mails:
                sender, rcpts = mail[0], mail[1]
                subject = mail[2] if len(mail) > 2 else None
                size = mail[3] if len(mail) > 3 else None
                with contextlib.suppress(smtplib.SMTPException):
                    s.sendmail(sender, rcpts, self.message(r, sender, rcpts, subject, size))
            s.quit()
        except (smtplib.SMTPException, OSError):
            s.close()

    def normal(self, r: random.Random) -> None:
        x = r.random()
        local = [f"{u}@example.test" for u in PF_USERS] + ["announce@lists.example.test"]
        if x < 0.5:  # inbound from the internet
            peer = r.choice(["partner.test", "supplier.test", "news.example.org", "shop.example.com", "mail.example.net"])
            self.session(f"127.0.0.{r.randint(20, 30)}", f"mx{r.randint(1, 3)}.{peer}",
                         [(f"{r.choice(USERS)}@{peer}", r.sample(local, r.randint(1, 3))) for _ in range(r.randint(1, 3))])
        elif x < 0.85:  # app servers / staff relaying through mynetworks
            u = r.choice(PF_USERS)
            dests = [f"{r.choice(USERS)}@{r.choice(['partner.test', 'supplier.test'])}" for _ in range(r.randint(1, 2))]
            if r.random() < 0.4:
                dests.append(r.choice(local))
            if r.random() < 0.03:
                dests = [f"{r.choice(WORDS)}.left@partner.test"]  # the partner bounces it
            self.session(f"127.0.0.{r.randint(2, 5)}", f"{r.choice(['app1', 'app2', 'crm', 'laptop-' + u])}.example.test",
                         [(f"{u}@example.test", dests) for _ in range(r.randint(1, 2))])
        elif x < 0.9:  # the load balancer's health check
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 5,
                                                                        source_address=("127.0.0.6", 0)) as s:
                f = s.makefile("rwb")
                f.readline()
                f.write(b"EHLO lb1.example.test\r\n")
                f.flush()
                while f.readline()[3:4] == b"-":
                    pass
                f.write(b"QUIT\r\n")
                f.flush()
                f.readline()
        else:  # notifications from the monitoring host
            self.session("127.0.0.1", "monitor.example.test",
                         [("noreply@example.test", [r.choice(local)], f"[alert] {r.choice(WORDS)} {r.choice(['OK', 'RESOLVED'])}")
                          for _ in range(r.randint(1, 3))])


class LeftAwareSmtp(socketserver.StreamRequestHandler):
    """The partner's SMTP server (not logged): modes ok, tempfail (451), reject (550); '.left@' users get 550."""

    def handle(self):
        owner = self.server.owner
        self.wfile.write(b"220 mx.partner.test ESMTP\r\n")
        data = False
        while True:
            line = self.rfile.readline()
            if not line:
                return
            if data:
                if line in (b".\r\n", b".\n"):
                    data = False
                    self.wfile.write(b"250 2.0.0 OK id=%08x\r\n" % random.getrandbits(32))
                continue
            cmd = line[:4].upper()
            if cmd in (b"EHLO", b"HELO"):
                self.wfile.write(b"250-mx.partner.test\r\n250 8BITMIME\r\n" if cmd == b"EHLO" else b"250 mx.partner.test\r\n")
            elif cmd == b"RCPT" and (owner.mode == "reject" or b".left@" in line):
                self.wfile.write(b"550 5.1.1 <%s>: no such user here\r\n" % line[8:].strip(b"<>\r\n"))
            elif cmd == b"RCPT" and owner.mode == "tempfail":
                self.wfile.write(b"451 4.3.0 mailbox temporarily unavailable, try again later\r\n")
            elif cmd == b"DATA":
                data = True
                self.wfile.write(b"354 go ahead\r\n")
            elif cmd == b"QUIT":
                self.wfile.write(b"221 2.0.0 bye\r\n")
                return
            else:
                self.wfile.write(b"250 2.1.0 OK\r\n")


class SmtpSink5(Sink):
    def start(self):
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), LeftAwareSmtp)
        self.srv.daemon_threads = True
        self.srv.owner = self
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        return self


def source_postfix(args) -> Source:
    postfix = need("/usr/sbin/postfix", "postfix")
    need("/usr/sbin/postmap", "postfix")
    rng = random.Random(f"{args.seed}-postfix")
    with tempfile.TemporaryDirectory(prefix="onb5-postfix-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        etc, mail = os.path.join(work, "etc"), os.path.join(work, "mail")
        shutil.copytree("/etc/postfix", etc, symlinks=True)
        for d in ("spool", "data", "mail"):
            os.makedirs(os.path.join(work, d))
        pf = pwd.getpwnam("postfix")
        os.chown(os.path.join(work, "data"), pf.pw_uid, pf.pw_gid)
        sink = SmtpSink5().start()
        logp = os.path.join(work, "postfix.log")

        def write_conf(extra: str = "") -> None:
            """extra: a 'name = value' edit made in place (or appended when the name is new)."""
            text = POSTFIX_MAIN.format(work=work, mail=mail, extra="")
            if extra:
                name = extra.split("=")[0].strip()
                text, n = re.subn(rf"^{name} = .*$", extra.replace("\\", "\\\\"), text, flags=re.M)
                if not n:
                    text += extra + "\n"
            write_atomic(os.path.join(etc, "main.cf"), text)
            os.chmod(os.path.join(etc, "main.cf"), 0o644)

        master = open("/etc/postfix/master.cf").read()
        master = re.sub(r"^smtp      inet .*$", f"127.0.0.1:{port} inet n - n - - smtpd", master, flags=re.M)
        master = re.sub(r"^(\S+\s+unix(?:-dgram)?\s+[-n]\s+[-n]\s+)y", r"\1n", master, flags=re.M)  # no chroot
        write_atomic(os.path.join(etc, "master.cf"), master)
        write_atomic(os.path.join(etc, "vmailbox"), "".join(f"{u}@example.test example.test/{u}/\n" for u in PF_USERS)
                     + "announce@lists.example.test lists.example.test/announce/\n"
                     + "postmaster@example.test example.test/postmaster/\n")
        write_atomic(os.path.join(etc, "transport"), f"partner.test smtp:[127.0.0.1]:{sink.port}\n"
                                                     f"supplier.test smtp:[127.0.0.1]:{sink.port}\n")
        write_atomic(os.path.join(etc, "header_checks"), "/^Subject:.*(lottery|viagra|crypto giveaway)/ REJECT spam subject\n"
                                                         "/^Subject:.*invoice\\.exe/ REJECT executable attachment\n")
        for f in ("main.cf", "master.cf", "vmailbox", "transport", "header_checks"):
            os.chmod(os.path.join(etc, f), 0o644)
        write_conf()
        ns = Namespace(sv, "postfix-ns", f"mount -t tmpfs -o size=3m,uid=8,gid=8,mode=0755 tmpfs {mail} && "
                                         f"mount --bind {etc} /etc/postfix")
        ns.run("postmap /etc/postfix/vmailbox && postmap /etc/postfix/transport && postfix check")

        def start() -> None:
            sv.start("postfix", ns.argv([postfix, "start-fg"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)

        def master_pid() -> int | None:
            with contextlib.suppress(OSError, ValueError), open(os.path.join(work, "spool", "pid", "master.pid")) as f:
                return int(f.read())
            return None

        def stop() -> None:
            ns.run("postfix stop", timeout=30)
            proc = sv.procs.get("postfix")
            if proc:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
            sv.stop("postfix")

        def cmd(c: str) -> None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                ns.run(c, timeout=30)

        def trim() -> None:  # users' clients delete old mail
            cmd(f"[ $(du -sk {mail} | cut -f1) -gt 1500 ] && find {mail} -path '*/cur/*' -o -path '*/new/*' -type f -delete; true")

        start()
        drv = PostfixDriver(port, rng)
        log = FileLog(logp)
        say(f"postfix on 127.0.0.1:{port} (partner sink :{sink.port}); normal phase...")
        state = {"restarts": 0, "last": time.time(), "t0": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(1, 4)):
                drv.normal(rng)
            if time.time() - state["last"] > rng.uniform(15, 35):
                cmd(rng.choice(["postfix reload", "postfix reload", "postqueue -f", "postfix flush"]))
                trim()
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 30 * (state["restarts"] + 1):
                stop()
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "postfix", round_fn)
            trim()
            templates = {postfix_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, postfix_template, postfix_problem, postfix_echo))

            def ensure_running() -> None:
                proc = sv.procs.get("postfix")
                if proc is None or proc.poll() is not None:
                    sv.forget("postfix")
                    start()

            inbound = lambda r: drv.session(f"127.0.0.{r.randint(20, 30)}", "mx2.partner.test",
                                            [(f"{r.choice(USERS)}@partner.test", [f"{r.choice(PF_USERS)}@example.test"])])
            with Background(inbound, random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("relay_denied"):  # strangers trying to use the server as an open relay
                    for dest in ["victim@gmail.example.com", "list@spam-target.org", "ceo@competitor.test", "x@yahoo.example.net"]:
                        with br.occurrence(1.5):
                            drv.session(f"127.0.0.{rng.randint(40, 60)}", f"{rng.choice(WORDS)}.dyn.example.net",
                                        [(f"{rng.choice(USERS)}@example.org", [dest])])
                with br.phase("unknown_recipient"):  # typos, people who left
                    for dest in ["alcie", "mallory", "bob.smith", "postmaster2", "hr"]:
                        with br.occurrence(1.5):
                            drv.session(f"127.0.0.{rng.randint(20, 30)}", "mx1.supplier.test",
                                        [(f"{rng.choice(USERS)}@supplier.test", [f"{dest}@example.test"])])
                with br.phase("protocol_error"):  # broken clients and scanners on the SMTP port
                    payloads = [b"EHLO scanner.example.net\r\nMAIL FROM:<a@b.test>\r\nRCPT TO:<alice@example.test>\r\nDATA\r\n",
                                b"GARBAGE\r\nMORE GARBAGE\r\nXYZZY\r\nFOO\r\nBAR\r\nBAZ\r\n",
                                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(60),
                                b"HELO bad_helo..name\r\nMAIL FROM:<a@b.test>\r\n",
                                b"GET / HTTP/1.1\r\nHost: mx1.example.test\r\n\r\n",
                                b"EHLO x.example.net\r\nMAIL FROM:<" + b"a" * 5000 + b"@b.test>\r\n"]
                    for i, p in enumerate(payloads):
                        with br.occurrence(2.0):
                            if i == 0:
                                raw_send(port, p, 1.0)  # pipelining before the greeting
                            else:
                                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
                                    s.settimeout(3)
                                    with contextlib.suppress(OSError):
                                        s.recv(512)
                                    s.sendall(p)
                                    time.sleep(1.0)
                                    with contextlib.suppress(OSError):
                                        s.recv(4096)
                with br.phase("message_too_big"):  # attachments over message_size_limit
                    for i in range(4):
                        with br.occurrence(2.0):
                            if i % 2:
                                drv.session("127.0.0.3", "app1.example.test",
                                            [("reports@example.test", ["carol@example.test"], "Quarterly export", 300_000 + i * 40_000)])
                            else:  # no SIZE= announced: found while receiving
                                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 10) as s:
                                    f = s.makefile("rwb")
                                    f.readline()
                                    for c in [b"HELO backup.example.test", b"MAIL FROM:<backup@example.test>", b"RCPT TO:<dave@example.test>", b"DATA"]:
                                        f.write(c + b"\r\n")
                                        f.flush()
                                        f.readline()
                                    f.write(b"Subject: dump\r\n\r\n" + (b"z" * 998 + b"\r\n") * 260 + b".\r\n")
                                    f.flush()
                                    f.readline()
                                    f.write(b"QUIT\r\n")
                                    f.flush()
                with br.phase("content_rejected"):  # spam subjects caught by header_checks
                    for subj in ["You won the lottery!!!", "cheap viagra", "crypto giveaway: 2x your coins", "invoice.exe attached"]:
                        with br.occurrence(1.5):
                            drv.session(f"127.0.0.{rng.randint(20, 30)}", "mail.example.net",
                                        [(f"promo{rng.randint(1, 99)}@example.net", [f"{rng.choice(PF_USERS)}@example.test"], subj)])
                with br.phase("partner_down"):  # the partner's mail server is down
                    for i in range(4):
                        with br.occurrence(3.0):
                            sink.stop()
                            drv.session("127.0.0.2", "app1.example.test",
                                        [(f"{rng.choice(PF_USERS)}@example.test", [f"{rng.choice(USERS)}@{rng.choice(['partner.test', 'supplier.test'])}"])])
                            time.sleep(1.5)
                        sink.start()
                        cmd("postqueue -f")
                        time.sleep(2)
                        br.between()
                with br.phase("partner_rejects"):  # the partner answers 4xx / 5xx
                    for mode in ["tempfail", "reject", "tempfail", "reject"]:
                        with br.occurrence(3.0):
                            sink.mode = mode
                            drv.session("127.0.0.4", "crm.example.test",
                                        [(f"{rng.choice(PF_USERS)}@example.test", [f"{rng.choice(USERS)}@partner.test"])])
                            time.sleep(1.5)
                        sink.mode = "ok"
                        cmd("postqueue -f")
                        time.sleep(2)
                        br.between()
                with br.phase("mailbox_disk_full"):  # something else filled the mail filesystem
                    for i in range(3):
                        with br.occurrence(3.0):
                            cmd(f"dd if=/dev/zero of={mail}/fill.bin bs=64k 2>/dev/null; true")
                            drv.session(f"127.0.0.{rng.randint(20, 30)}", "mx1.partner.test",
                                        [(f"{rng.choice(USERS)}@partner.test", [f"{rng.choice(PF_USERS)}@example.test"], None, 20_000)])
                            time.sleep(1.5)
                        cmd(f"rm -f {mail}/fill.bin")
                        trim()
                        cmd("postqueue -f")
                        time.sleep(2)
                        br.between()
                with br.phase("process_killed"):  # the OOM killer / an admin kills postfix daemons
                    for name in ["qmgr", "pickup", "cleanup", "trivial-rewrite"]:
                        with br.occurrence(2.0):
                            if name == "cleanup":  # a cleanup exists while a message is being received
                                drv.session("127.0.0.2", "app2.example.test", [("app@example.test", ["erin@example.test"])])
                            pids = [pid for pid, c in proc_cmdlines() if c.startswith(name + " ")]
                            for pid in pids[:1]:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGKILL)
                            time.sleep(1)
                        time.sleep(2)
                        br.between()
                with br.phase("rate_limited"):  # a compromised host hammering the server
                    for i in range(3):
                        src = f"127.0.0.{70 + i}"
                        with br.occurrence(2.0):
                            for _ in range(46):
                                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 3, source_address=(src, 0)) as s:
                                    s.settimeout(2)
                                    with contextlib.suppress(OSError):
                                        s.recv(256)
                                    s.sendall(b"EHLO bot.example.net\r\n")
                                    with contextlib.suppress(OSError):
                                        s.recv(1024)
                                    s.sendall(b"QUIT\r\n")
                                    with contextlib.suppress(OSError):
                                        s.recv(256)
                with br.phase("bad_config_reload"):  # main.cf edits with mistakes, master re-reads it (SIGHUP)
                    for extra in ["message_size_limit = 20MB", "smtpd_recipient_restrictions = permit_mynetworks, reject_unauth_destinatoin",
                                  "virtual_mailbox_maps = hash:/etc/postfix/vmailbox_new", "smtpd_client_connection_rate_limit = lots",
                                  "transport_maps = hash:/etc/postfix/transports"]:
                        write_conf(extra)
                        with br.occurrence(3.0):
                            pid = master_pid()
                            if pid:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGHUP)
                            time.sleep(1)
                            drv.session("127.0.0.3", "app1.example.test", [("app@example.test", ["bob@example.test", "x@partner.test"])])
                            drv.session("127.0.0.25", "mx1.partner.test", [("y@partner.test", ["alice@example.test"])])
                            time.sleep(1.5)
                        write_conf()
                        ensure_running()
                        cmd("postfix reload")
                        time.sleep(2)
                        cmd("postqueue -f")
                        time.sleep(2)
                        br.between()
        finally:
            with contextlib.suppress(Exception):
                stop()
            sink.stop()
    return Source("postfix", "Postfix", version_of(["/usr/sbin/postconf", "-h", "mail_version"]),
                  "postfix maillog_file written by postlogd (`Mon dd hh:mm:ss host postfix/daemon[pid]: message`; "
                  "smtpd/cleanup/qmgr/virtual/smtp/bounce/master lines of each message, keyed by queue id)",
                  "postfix start-fg with its own config (bind-mounted over /etc/postfix in a private mount namespace) and queue; "
                  "mail from 'internet' hosts (11 addresses) to virtual maildirs on a 3 MB tmpfs, app servers and staff in "
                  "mynetworks relaying to partner domains (a local SMTP sink, not logged; ~3% to a user that left, bounced), "
                  "multi-recipient mail, monitoring notifications; postfix reload / postqueue -f / postfix flush every 15-35s, "
                  "2 clean restarts (postfix stop)",
                  "relay_denied (4 strangers relaying), unknown_recipient (5 unknown local users), protocol_error (6: "
                  "pipelining before the greeting, garbage, TLS, bad HELO, HTTP, a 5000-char address), message_too_big "
                  "(4 messages > message_size_limit 200 KB, with and without SIZE=), content_rejected (4 spam subjects, "
                  "header_checks), partner_down (4x the partner's server stopped + a relayed message), partner_rejects "
                  "(4x the partner answering 451 / 550), mailbox_disk_full (3x mail tmpfs filled + a delivery), "
                  "process_killed (4 postfix daemons SIGKILLed), rate_limited (3x 50 connections from one address > "
                  "40/30s), bad_config_reload (5 broken main.cf values + SIGHUP to master)", normal, br.errors)


# --------------------------------------------------------------------------
# sshd
# --------------------------------------------------------------------------

SSHD_CONF = """\
Port {port}
ListenAddress 127.0.0.1
HostKey {work}/keys/ssh_host_ed25519_key
HostKey {work}/keys/ssh_host_ecdsa_key
HostKey {work}/keys/ssh_host_rsa_key
PidFile {work}/sshd.pid
LogLevel VERBOSE
UsePAM no
PermitRootLogin no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
StrictModes yes
MaxAuthTries 3
MaxStartups 6:50:12
LoginGraceTime 5
DenyUsers mallory
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
Subsystem sftp internal-sftp -l INFO
{extra}
"""

SSH_KEY_USERS = ["alice", "bob", "carol", "dave", "erin", "deploy", "archiver"]
SSH_PW_USERS = {"frank": "Fr4nk-2024!", "grace": "gr@ce-pass-77", "heidi": "H31di#secret"}
SSH_OTHER = {"mallory": "/bin/sh", "olduser": "/bin/nonexistent", "locked": "/bin/sh"}
SSH_COMMANDS = ["uptime", "df -h /", "ls -la", "id", "uname -a", "free -m", "cat /etc/os-release", "du -sh .", "date -u",
                "ps -eo pid,comm | head -5", "tail -n 3 notes.txt", "wc -l notes.txt", "sleep 0.3", "hostname", "echo ok"]


def sshd_template(line: str) -> str:
    body = re.sub(r"SHA256:[A-Za-z0-9+/]{43}", "FP", line)
    body = re.sub(r"\b(user|for|User|by) (invalid user |authenticating user )?[\w.-]+", r"\1 \2NAME", body)
    body = re.sub(r"/\S*", "PATH", body)
    return mask_names(body)


def sshd_problem(line: str) -> bool:
    return bool(re.search(r"(Failed |Invalid user|invalid user|error:|fatal:|refused|Refused|not allowed|[Bb]ad |Timeout|"
                          r"Unable to negotiate|identification|banner exchange|Bad protocol|drop connection|maximum authentication|"
                          r"authenticating user|terminating|Connection reset|[Mm]ismatch|not permitted|denied)", line))


def sshd_echo(line: str) -> bool:
    return bool(re.search(r"^(Connection from |Accepted (publickey|password|key) |Starting session: |Close session: |"
                          r"Received disconnect from \S+ port \d+:11: disconnected by user|Disconnected from user |"
                          r"session (opened|closed) for local user |received client version |realpath |(open|close|opendir|closedir|"
                          r"remove|mkdir|rmdir|rename|stat|lstat|set) (name )?\")", line))


class SshDriver:
    def __init__(self, port: int, keys: str, work: str, rng: random.Random):
        self.port, self.keys, self.work, self.rng = port, keys, work, rng
        self.base = ["-p", str(port), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                     "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10"]

    def run(self, argv: list[str], timeout: float = 20, input: bytes | None = None) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, input=input,
                           stdin=None if input is not None else subprocess.DEVNULL)

    def key_opts(self, user: str) -> list[str]:
        return ["-i", os.path.join(self.keys, user), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", "PasswordAuthentication=no"]

    def ssh_key(self, user: str, cmd: str, src: str = "127.0.0.1", extra: list[str] | None = None, timeout: float = 20) -> None:
        self.run(["ssh", *self.base, *self.key_opts(user), "-b", src, *(extra or []), f"{user}@127.0.0.1", cmd], timeout)

    def ssh_pw(self, user: str, password: str, cmd: str, src: str = "127.0.0.1", prompts: int = 1, timeout: float = 25) -> None:
        self.run(["sshpass", "-p", password, "ssh", *self.base, "-b", src, "-o", "PubkeyAuthentication=no",
                  "-o", "PreferredAuthentications=password", "-o", f"NumberOfPasswordPrompts={prompts}",
                  f"{user}@127.0.0.1", cmd], timeout)

    def sftp(self, user: str, batch: str, src: str = "127.0.0.1") -> None:
        self.run(["sftp", "-P", str(self.port), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                  "-o", "LogLevel=ERROR", *self.key_opts(user)[:6], "-b", "-", f"{user}@127.0.0.1"],
                 input=batch.encode(), timeout=30)

    def normal(self, r: random.Random) -> None:
        x = r.random()
        src = f"127.0.0.{r.choice([1, 1, 2, 3, 5, 8, 13, 21])}"
        if x < 0.45:
            self.ssh_key(r.choice(SSH_KEY_USERS[:5]), "; ".join(r.sample(SSH_COMMANDS, r.randint(1, 3))), src)
        elif x < 0.65:
            u = r.choice(list(SSH_PW_USERS))
            self.ssh_pw(u, SSH_PW_USERS[u], r.choice(SSH_COMMANDS), src)
        elif x < 0.85:  # a deploy job uploading a release
            rel = f"release-{r.randint(100, 999)}.tar.gz"
            local = os.path.join(self.work, "client", rel)
            with open(local, "wb") as f:
                f.write(r.randbytes(r.randint(2000, 40000)))
            batch = f"-mkdir releases\nput {local} releases/{rel}\nls releases\n"
            if r.random() < 0.5:
                batch += "rm releases/*.tar.gz\n"
            self.sftp("deploy", batch, src)
            os.unlink(local)
        else:  # the backup job pulling files
            batch = f"get notes.txt {self.work}/client/notes-{r.randint(1, 9)}.txt\nls -l\n"
            if r.random() < 0.3:
                batch += f"-get data/db-{r.randint(1, 3)}.dump {self.work}/client/db.dump\n"
            self.sftp("archiver", batch)


def source_sshd(args) -> Source:
    sshd = need("/usr/sbin/sshd", "openssh-server")
    need("ssh", "openssh-client")
    need("sshpass", "sshpass")
    rng = random.Random(f"{args.seed}-sshd")
    with tempfile.TemporaryDirectory(prefix="onb5-sshd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        keys, home = os.path.join(work, "clientkeys"), os.path.join(work, "home")
        for d in (os.path.join(work, "keys"), keys, home, os.path.join(work, "client")):
            os.makedirs(d)
        os.chmod(keys, 0o700)
        for t in ("ed25519", "ecdsa", "rsa"):
            subprocess.run(["ssh-keygen", "-q", "-t", t, "-N", "", "-f", os.path.join(work, "keys", f"ssh_host_{t}_key")],
                           check=True, stdout=subprocess.DEVNULL)
        passwd, shadow, group = open("/etc/passwd").read(), open("/etc/shadow").read(), open("/etc/group").read()
        users = SSH_KEY_USERS + list(SSH_PW_USERS) + list(SSH_OTHER)
        for i, u in enumerate(users):
            uid = 23001 + i
            shell = SSH_OTHER.get(u, "/bin/sh")
            h = os.path.join(home, u)
            passwd += f"{u}:x:{uid}:{uid}:{u.title()}:{h}:{shell}\n"
            group += f"{u}:x:{uid}:\n"
            pw = SSH_PW_USERS.get(u, f"{u}-unused-{rng.getrandbits(32):x}")
            hashed = subprocess.run(["openssl", "passwd", "-6", "-salt", f"{rng.getrandbits(40):x}", pw], capture_output=True,
                                    text=True, check=True).stdout.strip()
            shadow += f"{u}:{'!' if u == 'locked' else ''}{hashed}:19700:0:99999:7:::\n"
            os.makedirs(os.path.join(h, ".ssh"))
            kt = rng.choice(["ed25519", "ed25519", "ecdsa"])
            subprocess.run(["ssh-keygen", "-q", "-t", kt, "-N", "", "-C", f"{u}@laptop", "-f", os.path.join(keys, u)],
                           check=True, stdout=subprocess.DEVNULL)
            shutil.copy(os.path.join(keys, u) + ".pub", os.path.join(h, ".ssh", "authorized_keys"))
            with open(os.path.join(h, "notes.txt"), "w") as f:
                f.write("".join(f"{rng.choice(WORDS)} {rng.randint(1, 999)}\n" for _ in range(rng.randint(5, 40))))
            if u == "archiver":
                os.makedirs(os.path.join(h, "data"))
                for j in range(1, 4):
                    with open(os.path.join(h, "data", f"db-{j}.dump"), "wb") as f:
                        f.write(rng.randbytes(30000))
            subprocess.run(["chown", "-R", f"{uid}:{uid}", h], check=True)
            os.chmod(h, 0o755)
            os.chmod(os.path.join(h, ".ssh"), 0o700)
        strangers = []  # keys of an old laptop, none of them authorized anywhere
        for j in range(4):
            strangers.append(os.path.join(keys, f"stranger{j}"))
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"old-laptop-{j}", "-f", strangers[-1]],
                           check=True, stdout=subprocess.DEVNULL)
        for name, text, mode in (("passwd", passwd, 0o644), ("shadow", shadow, 0o640), ("group", group, 0o644)):
            write_atomic(os.path.join(work, name), text)
            os.chmod(os.path.join(work, name), mode)
        conf, logp = os.path.join(work, "sshd_config"), os.path.join(work, "sshd.log")

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, SSHD_CONF.format(port=port, work=work, extra=extra))
            os.chmod(conf, 0o644)

        write_conf()
        ns = Namespace(sv, "sshd-ns", f"mount --bind {work}/passwd /etc/passwd && mount --bind {work}/shadow /etc/shadow && "
                                      f"mount --bind {work}/group /etc/group")

        def start() -> None:
            with open(logp, "ab") as logf:
                sv.start("sshd", ns.argv([sshd, "-D", "-e", "-f", conf]), stdout=logf, stderr=logf, cwd=work)
            wait_port(port)

        def signal_sshd(sig: int) -> None:
            proc = sv.procs.get("sshd")
            if proc and proc.poll() is None:
                proc.send_signal(sig)

        def ensure_running() -> None:
            proc = sv.procs.get("sshd")
            if proc is None or proc.poll() is not None:
                sv.forget("sshd")
                start()

        start()
        drv = SshDriver(port, keys, work, rng)
        log = FileLog(logp)
        say(f"sshd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "last": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            rs = [random.Random(rng.random()) for _ in range(2)]
            threads = [threading.Thread(target=lambda r=r: [drv.normal(r) for _ in range(r.randint(1, 4))]) for r in rs]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            if time.time() - state["last"] > rng.uniform(20, 40):
                signal_sshd(signal.SIGHUP)
                time.sleep(0.5)
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 35 * (state["restarts"] + 1):
                sv.stop("sshd")
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "sshd", round_fn)
            templates = {sshd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, sshd_template, sshd_problem, sshd_echo))

            def raw(payload: bytes, wait: float = 1.0, src: str = "127.0.0.1") -> None:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
                    s.settimeout(3)
                    with contextlib.suppress(OSError):
                        s.recv(256)
                    if payload:
                        s.sendall(payload)
                    time.sleep(wait)
                    with contextlib.suppress(OSError):
                        s.recv(4096)

            with Background(drv.normal, random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("wrong_password"):  # users mistyping their passwords
                    for u, pw in [("frank", "Fr4nk-2023!"), ("grace", "grace-pass-77"), ("heidi", "heidi"), ("frank", "password"),
                                  ("grace", "gr@ce-pass-7")]:
                        with br.occurrence(2.0):
                            drv.ssh_pw(u, pw, "uptime", f"127.0.0.{rng.randint(30, 60)}")
                with br.phase("invalid_user"):  # scanners trying common account names
                    for u in ["admin", "oracle", "ubuntu", "test"]:
                        with br.occurrence(2.0):
                            drv.ssh_pw(u, rng.choice(["123456", "admin", "password", "changeme"]), "id", f"127.0.0.{rng.randint(100, 120)}")
                with br.phase("too_many_auth_failures"):  # a client offering more wrong keys than MaxAuthTries
                    for u in ["alice", "dave", "carol"]:
                        with br.occurrence(2.5):
                            opts = [o for k in strangers for o in ("-i", k)]
                            drv.run(["ssh", *drv.base, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", *opts, "-b",
                                     f"127.0.0.{rng.randint(2, 5)}", f"{u}@127.0.0.1", "id"])
                with br.phase("protocol_garbage"):  # scanners and other protocols on the SSH port
                    for p in [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(60),
                              b"SSH-1.5-OldClient_1.0\r\n", b"", b"SSH-2.0-libssh_0.9\r\n" + bytes(range(256)) * 4]:
                        with br.occurrence(2.0):
                            raw(p, 1.0, f"127.0.0.{rng.randint(100, 120)}")
                with br.phase("no_matching_algorithm"):  # old clients and devices
                    for opt in ["KexAlgorithms=diffie-hellman-group1-sha1", "Ciphers=3des-cbc", "MACs=hmac-md5",
                                "HostKeyAlgorithms=ssh-dss"]:
                        with br.occurrence(2.0):
                            drv.ssh_key("dave", "uptime", "127.0.0.14", ["-o", opt])
                with br.phase("user_not_allowed"):  # DenyUsers, a removed shell, a locked account
                    for u in ["mallory", "olduser", "locked"]:
                        with br.occurrence(2.0):
                            drv.ssh_key(u, "id", "127.0.0.7")
                with br.phase("bad_home_permissions"):  # StrictModes refusing a group/world-writable home
                    for u, mode in [("carol", 0o777), ("erin", None), ("bob", 0o757)]:
                        h = os.path.join(home, u)
                        st = os.stat(h)
                        if mode is None:  # a restore that left the home owned by another user
                            os.chown(h, st.st_uid + 1, st.st_gid)
                        else:
                            os.chmod(h, mode)
                        with br.occurrence(2.0):
                            drv.ssh_key(u, "ls", "127.0.0.3")
                        os.chown(h, st.st_uid, st.st_gid)
                        os.chmod(h, 0o755)
                with br.phase("forwarding_refused"):  # tunnels the server does not allow
                    for target in ["127.0.0.1:5432", "10.0.0.5:3306", "127.0.0.1:6379"]:
                        with br.occurrence(2.0):
                            drv.ssh_key("alice", "", "127.0.0.2", ["-W", target], timeout=8)
                with br.phase("max_startups"):  # a flood of half-open connections
                    for i in range(2):
                        with br.occurrence(7.0):
                            socks = []
                            for j in range(14):
                                with contextlib.suppress(OSError):
                                    s = socket.create_connection(("127.0.0.1", port), 3, source_address=(f"127.0.0.{130 + i}", 0))
                                    s.sendall(b"SSH-2.0-Go\r\n")
                                    socks.append(s)
                            time.sleep(1)
                            for s in socks:
                                s.close()
                        time.sleep(2)
                        br.between()
                with br.phase("bad_config_restart"):  # config edits with mistakes, SIGHUP (sshd re-executes itself)
                    for extra in ["PermitRootLgoin no", "MaxAuthTries three", "ListenAddress 127.0.0.1:99999",
                                  "Match User deploy\n  ForceCommand", "HostKey /etc/ssh/ssh_host_missing_key"]:
                        write_conf(extra)
                        with br.occurrence(2.5):
                            signal_sshd(signal.SIGHUP)
                            time.sleep(1)
                        write_conf()
                        ensure_running()
                        signal_sshd(signal.SIGHUP)
                        time.sleep(1)
                        br.between()
        finally:
            sv.stop("sshd")
    return Source("sshd", "OpenSSH sshd", version_of([sshd, "-V"]),
                  "sshd -D -e: its log on stderr, the message only (no timestamp, no host, no pid), LogLevel VERBOSE, "
                  "internal-sftp -l INFO lines (`session opened for local user ...`, `open \"path\" flags ...`)",
                  "sshd -D -e on a free port, own config and host keys, users only in a private mount namespace (bind-mounted "
                  "copies of /etc/passwd, /etc/shadow, /etc/group); clients (ssh, sshpass, sftp) from 8 addresses, 2 in "
                  "parallel: key logins running 1-3 commands, password logins, a deploy job uploading/listing/removing "
                  "releases over sftp, a backup job downloading files; SIGHUP restarts every 20-40s, 2 clean restarts",
                  "wrong_password (5), invalid_user (4 unknown accounts), too_many_auth_failures (3 clients offering 4 "
                  "unauthorized keys > MaxAuthTries 3), protocol_garbage (5: HTTP, TLS, an SSH-1 banner, connect-and-close, a banner then binary), "
                  "no_matching_algorithm (4 clients offering only a kex / cipher / MAC / host-key algorithm the server lacks), "
                  "user_not_allowed (3: DenyUsers, a missing shell, a "
                  "locked account), bad_home_permissions (3 homes with bad modes / owner, StrictModes), forwarding_refused (3 ssh -W with "
                  "AllowTcpForwarding no), max_startups (2x 14 half-open connections > MaxStartups 6:50:12), "
                  "bad_config_restart (5 broken configs + SIGHUP; sshd exits)", normal, br.errors)


# --------------------------------------------------------------------------
# dnsmasq
# --------------------------------------------------------------------------

DNSMASQ_CONF = """\
port={port}
listen-address=127.0.0.1
bind-interfaces
no-resolv
no-hosts
no-poll
server=127.0.0.1#{up}
addn-hosts={work}/office.hosts
domain-needed
bogus-priv
stop-dns-rebind
rebind-localhost-ok
local=/lan/
address=/ads.example.test/0.0.0.0
address=/tracker.example.test/
log-queries
log-facility={work}/dnsmasq.log
cache-size=300
neg-ttl=30
dns-forward-max=25
enable-tftp
tftp-root={work}/tftp
pid-file={work}/dnsmasq.pid
user=dnsmasq
group=nogroup
{extra}
"""

DM_ZONES = ["example.test", "shop.test", "corp.test", "partner.test"]
DM_HOSTS = ["www", "mail", "api", "cdn", "vpn", "git", "wiki", "app1", "app2", "db1", "login", "static", "status"] + WORDS[:10]
DM_HEAD = re.compile(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d ")


def dnsmasq_template(line: str) -> str:
    m = DM_HEAD.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"/\S+", "PATH", body)
    body = re.sub(r"\b(query\[\w+\]|forwarded|reply|cached|config) \S+", r"\1 NAME", body)
    return mask_names(body)


def dnsmasq_problem(line: str) -> bool:
    return bool(re.search(r"(fail|error|refused|REFUSED|SERVFAIL|rebind|Maximum number|cannot|not found|unsupported|[Bb]ad |"
                          r"illegal|warning|denied|no servers|unreachable|BOGUS|unknown|Permission|No such)", line))


def dnsmasq_echo(line: str) -> bool:
    return bool(re.search(r"\]: (query\[|forwarded |cached |config |reply |/\S+ \S+ is |sent /)", line)
                and not re.search(r"(SERVFAIL|REFUSED|rebind|BOGUS)", line))


def dns_name_hash(name: str) -> int:
    return int(hashlib.md5(name.encode()).hexdigest()[:8], 16)


def dns_encode(name: str) -> bytes:
    return b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".") if p) + b"\0"


class DnsUpstream:
    """The upstream resolver (not logged): modes ok, refused, servfail, hang, rebind."""

    def __init__(self):
        self.port, self.mode, self.sock, self.thread = free_port(), "ok", None, None

    def answer(self, q: bytes) -> bytes | None:
        qid = struct.unpack(">H", q[:2])[0]
        i, labels = 12, []
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
            i += 1 + q[i]
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        question = q[12:i + 5]
        name = ".".join(labels).lower()
        rcode, answers = 0, []
        if self.mode == "refused":
            rcode = 5
        elif self.mode == "servfail":
            rcode = 2
        else:
            zone = next((z for z in DM_ZONES if name == z or name.endswith("." + z)), None)
            host = name[:-len(zone) - 1] if zone and name != zone else ""
            h = dns_name_hash(name)
            rr = lambda t, data, ttl=300: b"\xc0\x0c" + struct.pack(">HHIH", t, 1, ttl, len(data)) + data
            if name.endswith(".0.185.in-addr.arpa"):
                answers.append(rr(12, dns_encode(f"{DM_HOSTS[h % len(DM_HOSTS)]}.{DM_ZONES[h % 4]}")))
            elif zone is None or (host and host.split(".")[-1] not in DM_HOSTS and not host.startswith("_")):
                rcode = 3
            elif qtype == 1:
                if self.mode == "rebind":
                    answers.append(rr(1, bytes([192, 168, h % 250 + 1, (h >> 8) % 250 + 1])))
                else:
                    answers.append(rr(1, bytes([185, 0 + h % 8, (h >> 8) % 250 + 1, h % 250 + 1]), 60 + h % 600))
            elif qtype == 28:
                answers.append(rr(28, bytes.fromhex("2a0204f8") + bytes(10) + struct.pack(">H", h % 65000)))
            elif qtype == 15:
                answers.append(rr(15, struct.pack(">H", 10) + dns_encode(f"mail.{zone}")))
            elif qtype == 16:
                txt = b"v=spf1 ip4:185.0.0.0/21 -all"
                answers.append(rr(16, bytes([len(txt)]) + txt))
            elif qtype == 33:
                answers.append(rr(33, struct.pack(">HHH", 0, 5, 389) + dns_encode(f"ldap.{zone}")))
        return struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, len(answers), 0, 0) + question + b"".join(answers)

    def serve(self, sock: socket.socket) -> None:
        while True:
            try:
                q, addr = sock.recvfrom(4096)
            except OSError:
                return
            if self.mode == "hang":
                continue
            with contextlib.suppress(Exception):
                resp = self.answer(q)
                if resp:
                    sock.sendto(resp, addr)

    def start(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.thread = threading.Thread(target=self.serve, args=(self.sock,), daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.sock:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None


def tftp_get(path: str, mode: bytes = b"octet", op: int = 1, blksize: int | None = None, src: str = "127.0.0.1",
             timeout: float = 2) -> int:
    """One TFTP read (op 1) or write (op 2) request; the bytes received, -1 on an ERROR packet or a timeout."""
    req = struct.pack(">H", op) + path.encode() + b"\0" + mode + b"\0"
    if blksize:
        req += b"blksize\0" + str(blksize).encode() + b"\0"
    total = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, 0))
        s.settimeout(timeout)
        try:
            s.sendto(req, ("127.0.0.1", 69))
            size = 512
            while True:
                data, addr = s.recvfrom(70000)
                opcode = struct.unpack(">H", data[:2])[0]
                if opcode == 6:  # OACK
                    size = blksize or 512
                    s.sendto(struct.pack(">HH", 4, 0), addr)
                elif opcode == 3:
                    blk = struct.unpack(">H", data[2:4])[0]
                    s.sendto(struct.pack(">HH", 4, blk), addr)
                    total += len(data) - 4
                    if len(data) - 4 < size:
                        return total
                else:
                    return -1
        except OSError:
            return -1


def source_dnsmasq(args) -> Source:
    dnsmasq = need("/usr/sbin/dnsmasq", "dnsmasq-base")
    rng = random.Random(f"{args.seed}-dnsmasq")
    dmu = pwd.getpwnam("dnsmasq")
    with tempfile.TemporaryDirectory(prefix="onb5-dnsmasq-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        up = DnsUpstream().start()
        tftp = os.path.join(work, "tftp")
        macs = [f"52-54-00-{rng.randint(0, 255):02x}-{rng.randint(0, 255):02x}-{rng.randint(0, 255):02x}" for _ in range(8)]
        files = {"pxelinux.0": 26000, "ldlinux.c32": 120000, "pxelinux.cfg/default": 900, "grub/grub.cfg": 1500,
                 "ipxe.efi": 60000, "boot/vmlinuz": 200000, "boot/initrd.img": 300000}
        for i in range(1, 5):
            files[f"firmware/sw-core-{i}.bin"] = 40000
            files[f"phones/SEP{rng.getrandbits(48):012X}.cnf.xml"] = 2500
        for mac in macs[:4]:
            files[f"pxelinux.cfg/01-{mac}"] = 700
        for rel, size in files.items():
            p = os.path.join(tftp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(rng.randbytes(size))
        subprocess.run(["chmod", "-R", "a+rX", tftp], check=False)
        phones = [r for r in files if r.startswith("phones/")]
        hosts_path = os.path.join(work, "office.hosts")
        office = ["nas", "printer", "gw", "ap1", "ap2", "nvr", "pbx", "build", "jenkins", "grafana"]
        write_atomic(hosts_path, "".join(f"10.10.0.{i + 2} {h}.lan {h}\n" for i, h in enumerate(office)))
        os.chmod(hosts_path, 0o644)
        conf, logp = os.path.join(work, "dnsmasq.conf"), os.path.join(work, "dnsmasq.log")
        open(logp, "a").close()
        os.chown(logp, dmu.pw_uid, dmu.pw_gid)

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, DNSMASQ_CONF.format(port=port, up=up.port, work=work, extra=extra))
            os.chmod(conf, 0o644)

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("dnsmasq", [dnsmasq, "-k", "-C", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                for _ in range(100):
                    if dns_query(port, "gw.lan", timeout=0.3) >= 0:
                        return
                raise RuntimeError("dnsmasq does not answer")

        def sig(s: int) -> None:
            proc = sv.procs.get("dnsmasq")
            if proc and proc.poll() is None:
                proc.send_signal(s)

        def ensure_running() -> None:
            proc = sv.procs.get("dnsmasq")
            if proc is None or proc.poll() is not None:
                sv.forget("dnsmasq")
                start()

        write_conf()
        start()

        def client(r: random.Random, clean: bool = False) -> None:
            src = f"127.0.0.{r.randint(1, 24)}"
            for _ in range(r.randint(1, 6)):
                x = r.random()
                zone = r.choice(DM_ZONES)
                if x < 0.5:
                    name, qt = f"{r.choice(DM_HOSTS)}.{zone}", r.choice(["A", "A", "A", "AAAA"])
                elif x < 0.6:
                    name, qt = zone, r.choice(["MX", "TXT"])
                elif x < 0.66:
                    name, qt = f"{r.randint(1, 250)}.{r.randint(1, 250)}.0.185.in-addr.arpa", "PTR"
                elif x < 0.78:
                    name, qt = f"{r.choice(office)}.lan" if r.random() < 0.8 else r.choice(office), "A"
                elif x < 0.82:
                    name, qt = f"_ldap._tcp.{zone}", "SRV"
                elif x < 0.88 and not clean:
                    name, qt = f"{r.choice(['wwww', 'old', 'staging', 'test'])}{r.randint(1, 40)}.{zone}", "A"  # NXDOMAIN
                elif x < 0.92:
                    name, qt = f"{r.choice(WORDS)}.{r.choice(['ads', 'tracker'])}.example.test", "A"
                elif x < 0.95:
                    name, qt = f"{r.choice(['scanner', 'tv', 'old-nas'])}.lan", "A"  # local-only: NXDOMAIN
                else:
                    name, qt = f"{r.randint(1, 250)}.0.10.10.in-addr.arpa", "PTR"
                dns_query(port, name, qt, tcp=r.random() < 0.05, src=src, timeout=3)

        def pxe(r: random.Random) -> None:
            src = f"127.0.0.{r.randint(40, 60)}"
            x = r.random()
            if x < 0.5:  # pxelinux: boot loader, config search (per-MAC, then default), kernel/initrd
                tftp_get("pxelinux.0", src=src)
                tftp_get("ldlinux.c32", blksize=1468, src=src)
                mac = r.choice(macs)
                if tftp_get(f"pxelinux.cfg/01-{mac}", src=src) < 0:
                    tftp_get("pxelinux.cfg/default", src=src)
                if r.random() < 0.4:
                    tftp_get("boot/vmlinuz", blksize=1468, src=src)
                    tftp_get("boot/initrd.img", blksize=1468, src=src)
            elif x < 0.7:
                tftp_get("ipxe.efi", blksize=1468, src=src)
                tftp_get("grub/grub.cfg", src=src)
            elif x < 0.85:
                tftp_get(r.choice(phones), mode=b"netascii", src=src)
            else:
                tftp_get(f"firmware/sw-core-{r.randint(1, 4)}.bin", blksize=1024, src=src)

        log = FileLog(logp)
        say(f"dnsmasq on 127.0.0.1:{port} (upstream :{up.port}, TFTP :69); normal phase...")
        state = {"restarts": 0, "last": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 8)):
                client(rng)
            if rng.random() < 0.12:
                pxe(rng)
            if time.time() - state["last"] > rng.uniform(10, 25):
                sig(rng.choice([signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR1]))
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 35 * (state["restarts"] + 1):
                sv.stop("dnsmasq")
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "dnsmasq", round_fn)
            templates = {dnsmasq_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, dnsmasq_template, dnsmasq_problem, dnsmasq_echo))
            fresh = lambda: f"{rng.choice(['new', 'beta', 'cms', 'sso', 'shop', 'img'])}{rng.randint(100, 999)}"

            with Background(lambda r: client(r, True), random.Random(rng.random()), (0.3, 1.0)):
                for mode in ["refused", "servfail"]:
                    with br.phase(f"upstream_{mode}"):  # the upstream misconfigured / broken
                        for i in range(4):
                            with br.occurrence(1.5):
                                up.mode = mode
                                dns_query(port, f"{fresh()}.{rng.choice(DM_ZONES)}", rng.choice(["A", "AAAA", "MX"]), timeout=4)
                                up.mode = "ok"
                            time.sleep(0.5)
                            br.between()
                with br.phase("dns_rebind"):  # public names answered with private addresses
                    for i in range(4):
                        with br.occurrence(1.5):
                            up.mode = "rebind"
                            dns_query(port, f"{fresh()}.{rng.choice(['www', 'cdn', 'static'])}.{rng.choice(DM_ZONES)}", timeout=4)
                            up.mode = "ok"
                with br.phase("forward_limit"):  # a burst of queries while the upstream hangs
                    for i in range(3):
                        with br.occurrence(2.0):
                            up.mode = "hang"
                            socks = []
                            for j in range(32):
                                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                                q = struct.pack(">HHHHHH", rng.getrandbits(16), 0x0100, 1, 0, 0, 0)
                                q += dns_encode(f"{fresh()}-{j}.{rng.choice(DM_ZONES)}") + struct.pack(">HH", 1, 1)
                                s.sendto(q, ("127.0.0.1", port))
                                socks.append(s)
                            time.sleep(1)
                            for s in socks:
                                s.close()
                            up.mode = "ok"
                        time.sleep(12)  # the refused burst's forwarded queries expire
                        br.between()
                with br.phase("hosts_file_broken"):  # the office hosts file broken by an edit / a deploy
                    good = open(hosts_path).read()
                    for how in ["chmod", "remove", "garbage", "chmod"]:
                        with br.occurrence(1.5):
                            if how == "chmod":
                                os.chmod(hosts_path, 0o600)
                                os.chown(hosts_path, 0, 0)
                            elif how == "remove":
                                os.unlink(hosts_path)
                            else:
                                write_atomic(hosts_path, good + "10.10.0.300 nas2.lan\nprinter2.lan 10.10.0.40\n10.10.0.x\n")
                                os.chmod(hosts_path, 0o644)
                            sig(signal.SIGHUP)
                            time.sleep(0.5)
                            dns_query(port, f"{rng.choice(office)}.lan", timeout=3)
                        write_atomic(hosts_path, good)
                        os.chmod(hosts_path, 0o644)
                        sig(signal.SIGHUP)
                        time.sleep(1)
                        br.between()
                with br.phase("tftp_error"):  # broken PXE / phone configs
                    locked = os.path.join(tftp, "firmware", "sw-core-3.bin")
                    cases = [lambda: (os.chmod(locked, 0o600), tftp_get("firmware/sw-core-3.bin", src="127.0.0.44"), os.chmod(locked, 0o644)),
                             lambda: tftp_get("phones/SEP001122334455.cnf.xml", op=2, src="127.0.0.51"),
                             lambda: tftp_get("pxelinux.0", mode=b"mail", src="127.0.0.47"),
                             lambda: tftp_get("../../../etc/shadow", src="127.0.0.99"),
                             lambda: tftp_get("firmware/sw-core-9.bin", src="127.0.0.45")]
                    for case in cases:
                        with br.occurrence(1.5):
                            case()
                with br.phase("bad_config_restart"):  # config edits with mistakes, found at a restart
                    for extra in ["cache-size=lots", "server=/corp.test/127.0.0.300", "listen-address=10.99.0.1",
                                  "log-querys", "addn-hosts=/nonexistent/extra.hosts"]:
                        sv.stop("dnsmasq")
                        write_conf(extra)
                        time.sleep(0.3)
                        br.between()
                        with br.occurrence(2.0):
                            start(wait=False)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["dnsmasq"].wait(2)
                            dns_query(port, f"{rng.choice(office)}.lan", timeout=1)
                        sv.stop("dnsmasq")
                        write_conf()
                        start()
                        time.sleep(1)
                        br.between()
        finally:
            sv.stop("dnsmasq")
            up.stop()
    return Source("dnsmasq", "dnsmasq", version_of([dnsmasq, "-v"]),
                  "dnsmasq log-facility file (`Mon dd hh:mm:ss dnsmasq[pid]: message`, `dnsmasq-tftp[pid]` for TFTP), "
                  "log-queries (`query[A] name from ip`, `forwarded`, `reply name is addr`, `cached`, `config`); its stderr "
                  "(start-up errors, `dnsmasq: message`) on the same file",
                  "dnsmasq -k (DNS + TFTP, DHCP off) forwarding to an upstream (python, not logged) serving example/shop/corp/"
                  "partner zones and a reverse zone; an addn-hosts office file, ad-block address= rules, local=/lan/; clients "
                  "from 24 addresses asking A/AAAA/MX/TXT/SRV/PTR over UDP and TCP (some NXDOMAIN, private PTRs answered "
                  "locally); PXE/phone clients fetching boot files over TFTP (per-MAC config misses included); SIGHUP / "
                  "SIGUSR1 (statistics) every 10-25s, 2 clean restarts",
                  "upstream_refused (4x REFUSED), upstream_servfail (4x SERVFAIL), dns_rebind (4 answers with private "
                  "addresses, stop-dns-rebind), forward_limit (3x 32 queries > dns-forward-max 25 while the upstream hangs), "
                  "hosts_file_broken (4: unreadable, removed, bad lines; SIGHUP), tftp_error (5: unreadable file, write "
                  "request, bad mode, path outside the root, missing file), bad_config_restart (5 broken configs at a restart)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# tinyproxy
# --------------------------------------------------------------------------

TINYPROXY_CONF = """\
User tinyproxy
Group tinyproxy
Port {port}
Listen 127.0.0.1
Timeout 4
LogFile "{work}/tinyproxy.log"
LogLevel Info
PidFile "{work}/tinyproxy.pid"
MaxClients 16
Allow 127.0.0.0/28
ViaProxyName "proxy1"
ConnectPort 443
ConnectPort {tls}
Filter "{work}/filter"
FilterURLs Off
FilterDefaultDeny No
Upstream http 127.0.0.1:{parent} ".partner.test"
{extra}
"""

TP_HEAD = re.compile(r"^([A-Z]+)\s+\w{3} \d\d \d\d:\d\d:\d\d\.\d+ \[\d+\]: ")


def tinyproxy_template(line: str) -> str:
    m = TP_HEAD.match(line)
    body = (m.group(1) + " " + line[m.end():]) if m else line
    body = re.sub(r"\b(GET|POST|PUT|DELETE|HEAD|CONNECT) \S+", r"\1 URL", body)
    body = re.sub(r"/\S*", "PATH", body)
    return mask_names(body)


def tinyproxy_problem(line: str) -> bool:
    return bool(re.match(r"^(ERROR|WARNING|CRITICAL)\b", line))


def tinyproxy_echo(line: str) -> bool:
    return bool(re.search(r"\]: (Connect \(file descriptor|Request \(file descriptor|Established connection to host|"
                          r"No upstream proxy for|opensock: (opening connection|getaddrinfo returned)|Closed connection between|"
                          r"Found upstream proxy)", line))


class TlsEcho(socketserver.BaseRequestHandler):
    """A 'TLS' service behind CONNECT: reads what the client sends and answers with bytes."""

    def handle(self):
        with contextlib.suppress(OSError):
            self.request.settimeout(3)
            data = self.request.recv(4096)
            if data:
                self.request.sendall(b"\x16\x03\x03\x00\x40" + bytes(64))
                self.request.recv(4096)


def source_tinyproxy(args) -> Source:
    tinyproxy = need("/usr/bin/tinyproxy", "tinyproxy")
    rng = random.Random(f"{args.seed}-tinyproxy")
    tpu = pwd.getpwnam("tinyproxy")
    with tempfile.TemporaryDirectory(prefix="onb5-tinyproxy-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        origins = {"shop": ModeServer(Origin, hang=8).start(), "cdn": ModeServer(Origin, hang=8).start(),
                   "api": ModeServer(Origin, hang=8).start(), "news": ModeServer(Origin, hang=8).start()}
        parent = ModeServer(Origin, hang=8).start()  # the partner network's proxy
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        tls = socketserver.ThreadingTCPServer(("127.0.0.1", 0), TlsEcho)
        tls.daemon_threads = True
        threading.Thread(target=tls.serve_forever, daemon=True).start()
        tls_port = tls.server_address[1]
        names = {"shop": ["shop.example.test", "www.shop.example.test"], "cdn": ["cdn.example.test", "img.example.test"],
                 "api": ["api.example.test"], "news": ["news.example.org", "www.news.example.org"]}
        hosts = os.path.join(work, "hosts")
        write_atomic(hosts, "127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {' '.join(v)}\n" for v in names.values())
                     + "127.0.0.1 secure.example.test pay.example.test\n127.0.0.1 ads.example.test tracker.example.org\n")
        os.chmod(hosts, 0o644)
        write_atomic(os.path.join(work, "filter"), "ads\\.example\\.test\ntracker\\.example\\.org\ncasino\nmalware\n")
        os.chmod(os.path.join(work, "filter"), 0o644)
        conf, logp = os.path.join(work, "tinyproxy.conf"), os.path.join(work, "tinyproxy.log")
        open(logp, "a").close()
        os.chown(logp, tpu.pw_uid, tpu.pw_gid)

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, TINYPROXY_CONF.format(port=port, work=work, tls=tls_port, parent=parent.port, extra=extra))
            os.chmod(conf, 0o644)

        write_conf()
        ns = Namespace(sv, "tinyproxy-ns", f"mount --bind {hosts} /etc/hosts")

        def start() -> None:
            sv.start("tinyproxy", ns.argv([tinyproxy, "-d", "-c", conf]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)

        def sig(s: int) -> None:
            proc = sv.procs.get("tinyproxy")
            if proc and proc.poll() is None:
                proc.send_signal(s)

        def ensure_running() -> None:
            proc = sv.procs.get("tinyproxy")
            if proc is None or proc.poll() is not None:
                sv.forget("tinyproxy")
                start()

        start()
        clients = [f"127.0.0.{i}" for i in range(1, 13)]

        def url(site: str, path: str) -> str:
            return f"http://{rng.choice(names[site])}:{origins[site].port}{path}"

        def visit(r: random.Random, clean: bool = False) -> None:
            src, ua = r.choice(clients), r.choice(UAS)
            for _ in range(r.randint(1, 5)):
                method, path = random_path(r, clean)
                site = "cdn" if path.startswith("/static/") else "api" if "/api/" in path else r.choice(["shop", "shop", "news"])
                headers = {"User-Agent": ua}
                body = json.dumps({"sku": r.randint(1, 999), "qty": r.randint(1, 5)}).encode() if method in ("POST", "PUT") else None
                if body:
                    headers["Content-Type"] = "application/json"
                x = r.random()
                if x < 0.06:  # partner extranet, through the partner's proxy
                    u = f"http://{r.choice(['portal', 'edi', 'docs'])}.partner.test/{r.choice(WORDS)}"
                elif x < 0.1:  # HTTPS through CONNECT
                    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
                        s.settimeout(5)
                        s.sendall(f"CONNECT {r.choice(['secure', 'pay'])}.example.test:{tls_port} HTTP/1.1\r\n"
                                  f"Host: secure.example.test:{tls_port}\r\nUser-Agent: {ua}\r\n\r\n".encode())
                        if s.recv(4096).startswith(b"HTTP/1.0 200"):
                            s.sendall(b"\x16\x03\x01\x00\x40" + bytes(64))
                            with contextlib.suppress(OSError):
                                s.recv(4096)
                    continue
                else:
                    u = url(site, path)
                http_via(port, method, u, headers, body, src)

        log = FileLog(logp)
        say(f"tinyproxy on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "last": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 6)):
                visit(rng)
            if time.time() - state["last"] > rng.uniform(15, 30):
                sig(signal.SIGUSR1)
                state["last"] = time.time()
                time.sleep(0.3)
            if state["restarts"] < 2 and elapsed > 35 * (state["restarts"] + 1):
                sv.stop("tinyproxy")
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "tinyproxy", round_fn)
            templates = {tinyproxy_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, tinyproxy_template, tinyproxy_problem, tinyproxy_echo))
            with Background(lambda r: visit(r, True), random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("client_not_allowed"):  # machines outside the Allow list
                    for src in ["127.0.0.77", "127.0.0.120", "127.0.0.200", "127.0.0.31"]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", url("shop", "/"), {"User-Agent": rng.choice(UAS)}, None, src)
                with br.phase("filtered_domain"):  # blocked ad / tracker / casino sites
                    for u in [f"http://ads.example.test:{origins['shop'].port}/banner.js", f"http://tracker.example.org:{origins['cdn'].port}/p.gif",
                              "http://best-casino.example.net/", "http://malware.example.com/payload.exe"]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", u, {"User-Agent": rng.choice(UAS)})
                with br.phase("connect_denied"):  # CONNECT to ports not in ConnectPort
                    for target in ["mail.example.test:25", "shop.example.test:22", f"api.example.test:{origins['api'].port}"]:
                        with br.occurrence(1.5):
                            raw_send(port, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode(), 0.5)
                with br.phase("origin_down"):  # a web server crashed
                    for site in ["shop", "api", "news", "cdn"]:
                        with br.occurrence(1.5):
                            origins[site].stop()
                            http_via(port, "GET", url(site, f"/products/{rng.choice(WORDS)}"), {"User-Agent": rng.choice(UAS)})
                        origins[site].start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("origin_timeout"):  # an origin stuck past Timeout
                    for site in ["api", "shop", "news"]:
                        with br.occurrence(2.0):
                            origins[site].mode = "hang"
                            http_via(port, "GET", url(site, f"/api/v1/report/{rng.randint(1, 99)}"), {"User-Agent": rng.choice(UAS)}, timeout=15)
                            origins[site].mode = "ok"
                        time.sleep(3)
                        br.between()
                with br.phase("dns_failure"):  # typos, names that do not exist
                    for name in ["shpo.example.test", "api.example.tset", "cdn.exmaple.test", "intranet.corp"]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", f"http://{name}/", {"User-Agent": rng.choice(UAS)}, timeout=15)
                with br.phase("bad_request"):  # garbage, TLS, relative URLs, huge headers
                    for p in [b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(40),
                              b"GET / HTTP/1.1\r\nHost: shop.example.test\r\n\r\n",
                              b"GET http://shop.example.test/ HTTP/1.1\r\nX-Big: " + b"A" * 70000 + b"\r\n\r\n",
                              b"GET http://[::1/ HTTP/1.1\r\n\r\n"]:
                        with br.occurrence(1.5):
                            raw_send(port, p, 0.5)
                with br.phase("too_many_clients"):  # a client opening connections and never sending a request
                    for i in range(2):
                        with br.occurrence(2.0):
                            socks = []
                            for j in range(20):
                                with contextlib.suppress(OSError):
                                    socks.append(socket.create_connection(("127.0.0.1", port), 2, source_address=("127.0.0.9", 0)))
                            time.sleep(1.0)
                            http_via(port, "GET", url("shop", "/"), {"User-Agent": rng.choice(UAS)}, timeout=3)
                            for s in socks:
                                s.close()
                        time.sleep(5)
                        br.between()
                with br.phase("upstream_proxy_down"):  # the partner's proxy is down
                    for i in range(3):
                        with br.occurrence(1.5):
                            parent.stop()
                            http_via(port, "GET", f"http://{rng.choice(['portal', 'edi'])}.partner.test/orders/{rng.randint(1, 99)}",
                                     {"User-Agent": rng.choice(UAS)})
                        parent.start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("bad_config_reload"):  # config edits with mistakes, SIGUSR1
                    for extra in ["MaxClient 50", "Allow 127.0.0.0/40", "Timeout forever", 'Upstream http 127.0.0.1 ".partner.test"',
                                  'Filter "/nonexistent/filter"']:
                        write_conf(extra)
                        with br.occurrence(2.0):
                            sig(signal.SIGUSR1)
                            time.sleep(0.5)
                            http_via(port, "GET", url("shop", "/"), {"User-Agent": rng.choice(UAS)}, timeout=3)
                        write_conf()
                        ensure_running()
                        sig(signal.SIGUSR1)
                        time.sleep(1)
                        br.between()
        finally:
            sv.stop("tinyproxy")
            for o in list(origins.values()) + [parent]:
                o.stop()
            tls.shutdown()
            tls.server_close()
    return Source("tinyproxy", "tinyproxy", version_of([tinyproxy, "-v"]),
                  "tinyproxy LogFile, LogLevel Info (`LEVEL     Mon dd hh:mm:ss.mmm [pid]: message`, levels CONNECT / INFO / "
                  "NOTICE / WARNING / ERROR; several lines per request)",
                  "tinyproxy -d in a private mount namespace whose /etc/hosts names the origin sites; clients from 12 "
                  "addresses fetching pages, static assets, API GET/POST/PUT/DELETE, HEAD (some origin 404s) from four "
                  "origins (python HTTP servers), HTTPS via CONNECT, partner sites through an upstream proxy; config reload "
                  "(SIGUSR1) every 15-30s, 2 clean restarts",
                  "client_not_allowed (4 addresses outside Allow), filtered_domain (4 filtered sites), connect_denied (3 "
                  "CONNECTs to ports not in ConnectPort), origin_down (4x an origin stopped), origin_timeout (3x an origin "
                  "hanging 8s > Timeout 4s), dns_failure (4 unresolvable names), bad_request (5: garbage, TLS, a relative URL, "
                  "a 70 KB header, a bad URL), too_many_clients (2x 20 idle connections > MaxClients 16), upstream_proxy_down "
                  "(3x the partner's proxy stopped), bad_config_reload (5 broken configs + SIGUSR1)", normal, br.errors)


# --------------------------------------------------------------------------
# apache2
# --------------------------------------------------------------------------

APACHE_MODULES = ["mpm_event", "authz_core", "authz_host", "authz_user", "authn_core", "authn_file", "auth_basic", "mime",
                  "dir", "alias", "autoindex", "status", "proxy", "proxy_http", "proxy_balancer", "slotmem_shm",
                  "lbmethod_byrequests", "cgid", "reqtimeout"]

APACHE_CONF = """\
ServerRoot {work}
ServerName www.example.test
Listen 127.0.0.1:{port}
PidFile {work}/run/httpd.pid
DefaultRuntimeDir {work}/run
Mutex file:{work}/run
User www-data
Group www-data
{modules}
TypesConfig /etc/mime.types
ErrorLog {work}/apache.log
LogLevel info
LogFormat "%h %l %u %t \\"%r\\" %>s %O \\"%{{Referer}}i\\" \\"%{{User-Agent}}i\\"" combined
CustomLog {work}/apache.log combined
ScriptSock {work}/run/cgid.sock
StartServers 1
ServerLimit 2
ThreadsPerChild 16
MinSpareThreads 8
MaxSpareThreads 24
MaxRequestWorkers 32
Timeout 10
KeepAlive On
RequestReadTimeout header=4 body=6
LimitRequestBody 131072
LimitRequestFieldSize 8190
DocumentRoot {www}
<Directory />
  Require all denied
</Directory>
<Directory {www}>
  Options Indexes FollowSymLinks
  AllowOverride None
  Require all granted
</Directory>
<FilesMatch "^\\.">
  Require all denied
</FilesMatch>
DirectoryIndex index.html
Redirect permanent /old/ /products/
Redirect /shop /
<Location /admin/>
  AuthType Basic
  AuthName "staff"
  AuthUserFile {work}/htpasswd
  Require valid-user
</Location>
<Location /server-status>
  SetHandler server-status
  Require ip 127.0.0.1 127.0.0.2
</Location>
<Location /internal/>
  Require ip 127.0.0.0/29
</Location>
ScriptAlias /cgi-bin/ {work}/cgi-bin/
<Directory {work}/cgi-bin>
  Require all granted
</Directory>
<Proxy balancer://api>
  BalancerMember http://127.0.0.1:{api1} retry=0
  BalancerMember http://127.0.0.1:{api2} retry=0
</Proxy>
ProxyPass /api/ balancer://api/api/
ProxyPassReverse /api/ balancer://api/api/
ProxyPass /reports/ http://127.0.0.1:{reports}/reports/ timeout=2 retry=0
{extra}
"""

CGI_OK = """#!/bin/sh
echo "Content-Type: text/plain"
echo
echo "search results for: $QUERY_STRING"
"""
CGI_BROKEN = {
    "garbage_header": '#!/bin/sh\necho "results for $QUERY_STRING"\necho\n',
    "stderr_exit": '#!/bin/sh\necho "search: index /var/lib/search/idx.db is corrupt" >&2\nexit 3\n',
    "missing_interpreter": '#!/usr/bin/python2.7\nprint("Content-Type: text/plain\\n")\n',
}

AP_ERR = re.compile(r"^\[\w{3} \w{3} \d\d \d\d:\d\d:\d\d\.\d+ \d{4}\] \[(\w+):(\w+)\] \[pid \d+(?::tid \d+)?\] ")
AP_ACCESS = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "(?:[^"\\]|\\.)*" (\d{3}) ')


def apache_status(line: str) -> int | None:
    m = AP_ACCESS.match(line)
    return int(m.group(1)) if m else None


def apache_problem(line: str) -> bool:
    s = apache_status(line)
    if s is not None:
        return s >= 400
    m = AP_ERR.match(line)
    if m:
        return m.group(2) in ("warn", "error", "crit", "alert", "emerg")
    return bool(re.search(r"(?i)(error|invalid|failed|cannot|unable)", line))


def apache_echo(line: str) -> bool:
    s = apache_status(line)
    return s is not None and s < 400


def apache_template(line: str) -> str:
    m = AP_ERR.match(line)
    if m:
        body = f"[{m.group(1)}:{m.group(2)}] " + line[m.end():]
        body = re.sub(r"\[client [\d.]+:\d+\] ", "[client] ", body)
    elif AP_ACCESS.match(line):
        body = "ACCESS " + re.sub(r'^\S+ \S+ \S+ \[[^\]]+\] "(\S+) \S+', r'"\1 URL', line)
    else:
        body = line
    body = re.sub(r"/\S*", "PATH", body)
    return mask_names(body)


def source_apache2(args) -> Source:
    apache = need("/usr/sbin/apache2", "apache2")
    rng = random.Random(f"{args.seed}-apache2")
    with tempfile.TemporaryDirectory(prefix="onb5-apache2-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        www, cgi = os.path.join(work, "www"), os.path.join(work, "cgi-bin")
        build_www(www, rng)
        for rel, text in [("internal/index.html", "<html>intranet</html>"), ("internal/oncall.html", "<html>on call</html>"),
                          (".env", "DB_PASSWORD=secret\n"), (".git/config", "[core]\n")]:
            os.makedirs(os.path.dirname(os.path.join(www, rel)), exist_ok=True)
            with open(os.path.join(www, rel), "w") as f:
                f.write(text)
        subprocess.run(["chmod", "-R", "a+rX", www], check=False)
        os.makedirs(cgi)
        os.makedirs(os.path.join(work, "run"))
        script = os.path.join(cgi, "search.sh")

        def put_script(text: str, mode: int = 0o755) -> None:
            write_atomic(script, text)
            os.chmod(script, mode)

        put_script(CGI_OK)
        backends = {"api1": ModeServer(Origin).start(), "api2": ModeServer(Origin).start(),
                    "reports": ModeServer(Origin, hang=6).start()}
        subprocess.run(["htpasswd", "-cbB", os.path.join(work, "htpasswd"), "admin", "Adm1n-pass"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for u, p in [("ops", "0ps-rota"), ("editor", "Ed1tor!")]:
            subprocess.run(["htpasswd", "-bB", os.path.join(work, "htpasswd"), u, p], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.chmod(os.path.join(work, "htpasswd"), 0o644)
        conf, logp = os.path.join(work, "apache.conf"), os.path.join(work, "apache.log")
        modules = "\n".join(f"LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so" for m in APACHE_MODULES)

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, APACHE_CONF.format(work=work, port=port, www=www, modules=modules, extra=extra,
                                                  **{k: b.port for k, b in backends.items()}))
            os.chmod(conf, 0o644)

        def start() -> None:
            with open(logp, "ab") as logf:
                sv.start("apache2", [apache, "-f", conf, "-DFOREGROUND"], stdout=logf, stderr=logf, cwd=work)
            wait_port(port)

        def sig(s: int) -> None:
            proc = sv.procs.get("apache2")
            if proc and proc.poll() is None:
                proc.send_signal(s)

        def ensure_running() -> None:
            proc = sv.procs.get("apache2")
            if proc is None or proc.poll() is not None:
                sv.forget("apache2")
                start()

        def stop() -> None:
            sv.stop("apache2", signal.SIGTERM)

        write_conf()
        start()

        def visit(r: random.Random, clean: bool = False) -> None:
            ua = r.choice(UAS)
            src = f"127.0.0.{r.randint(1, 30)}"
            for _ in range(r.randint(1, 6)):
                method, path = random_path(r, clean)
                headers = {"User-Agent": ua, "Host": r.choice(["www.example.test", "example.test", "shop.example.test"])}
                if path.startswith("/static/") and r.random() < 0.3:
                    headers["If-Modified-Since"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())
                if r.random() < 0.2:
                    headers["Referer"] = f"http://www.example.test/products/{r.choice(WORDS)}"
                x = r.random()
                if x < 0.15 and method not in ("GET", "HEAD"):
                    method = "GET"
                if x < 0.04:
                    path = f"/old/{r.choice(WORDS)}"
                elif x < 0.08:
                    path = r.choice(["/files/", "/files/releases/", "/files/docs/"])
                elif x < 0.11:
                    path = f"/reports/{r.choice(['daily', 'weekly', 'sales'])}?d={r.randint(1, 28)}"
                elif x < 0.14:
                    path = r.choice(["/admin/", "/admin/users.html"])
                    headers["Authorization"] = "Basic " + base64.b64encode(r.choice([b"admin:Adm1n-pass", b"ops:0ps-rota", b"editor:Ed1tor!"])).decode()
                elif x < 0.18:
                    method, path = "GET", f"/cgi-bin/search.sh?q={r.choice(WORDS)}&page={r.randint(1, 5)}"
                elif x < 0.2:
                    src = f"127.0.0.{r.randint(1, 7)}"
                    path = r.choice(["/internal/", "/internal/oncall.html"])
                body = json.dumps({"sku": r.randint(1, 999)}).encode() if method in ("POST", "PUT") else None
                http_via(port, method, path, headers, body, src)

        log = FileLog(logp)
        say(f"apache2 on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "last": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 8)):
                visit(rng)
            if rng.random() < 0.08:
                http_via(port, "GET", "/server-status?auto", {"User-Agent": "Prometheus/2.45.0"}, src="127.0.0.2")
            if time.time() - state["last"] > rng.uniform(20, 40):
                sig(signal.SIGUSR1)
                state["last"] = time.time()
                time.sleep(0.5)
            if state["restarts"] < 2 and elapsed > 35 * (state["restarts"] + 1):
                stop()
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "apache2", round_fn)
            templates = {apache_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, apache_template, apache_problem, apache_echo))
            with Background(lambda r: visit(r, True), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("backend_down"):  # an API / reports backend crashed
                    for name in ["reports", "api1", "reports", "api2"]:
                        with br.occurrence(2.0):
                            backends[name].stop()
                            for _ in range(2):
                                http_via(port, "GET", f"/reports/monthly?m={rng.randint(1, 12)}" if name == "reports"
                                         else f"/api/v1/items/{rng.randint(1, 500)}", {"User-Agent": rng.choice(UAS)})
                        backends[name].start()
                        time.sleep(1)
                        br.between()
                with br.phase("backend_timeout"):  # the reports backend stuck past the proxy timeout
                    for i in range(3):
                        with br.occurrence(2.0):
                            backends["reports"].mode = "hang"
                            http_via(port, "GET", f"/reports/yearly?y={2020 + i}", {"User-Agent": rng.choice(UAS)}, timeout=15)
                            backends["reports"].mode = "ok"
                        time.sleep(4)
                        br.between()
                with br.phase("auth_failure"):  # wrong passwords / unknown users on /admin/
                    for cred in [b"admin:admin", b"ops:password", b"root:toor", b"admin:Adm1n-pas", b"editor:"]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", rng.choice(["/admin/", "/admin/users.html"]),
                                     {"User-Agent": rng.choice(UAS), "Authorization": "Basic " + base64.b64encode(cred).decode()},
                                     src=f"127.0.0.{rng.randint(40, 90)}")
                with br.phase("access_denied"):  # access rules: status page, intranet, dot files
                    for path, src in [("/server-status", "127.0.0.44"), ("/internal/oncall.html", "127.0.0.61"),
                                      ("/.env", "127.0.0.12"), ("/.htpasswd", "127.0.0.90")]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", path, {"User-Agent": rng.choice(UAS)}, src=src)
                with br.phase("bad_request"):  # garbage, TLS, oversized or malformed requests
                    for p in [b"GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(40),
                              b"GET / HTTP/1.1\r\nHost: example.test\r\nCookie: " + b"c" * 10000 + b"\r\n\r\n",
                              b"GET / HTTP/1.1\r\nHost: exa mple..test\r\n\r\n", b"GET /../../etc/passwd HTTP/1.1\r\nHost: example.test\r\n\r\n",
                              b"GET / HTTP/9.9\r\n\r\n"]:
                        with br.occurrence(1.5):
                            raw_send(port, p, 0.5)
                with br.phase("request_too_large"):  # uploads over LimitRequestBody
                    for i in range(3):
                        with br.occurrence(1.5):
                            http_via(port, "POST", ["/cgi-bin/search.sh", "/files/upload", "/cgi-bin/search.sh"][i],
                                     {"User-Agent": rng.choice(UAS), "Content-Type": "application/octet-stream"},
                                     rng.randbytes(200_000 + i * 50_000))
                with br.phase("request_timeout"):  # clients too slow to send their request headers
                    for i in range(3):
                        with br.occurrence(1.5):
                            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
                                s.sendall(b"GET /products/" + rng.choice(WORDS).encode() + b" HTTP/1.1\r\nHost: example.test\r\n")
                                s.settimeout(8)
                                with contextlib.suppress(OSError):
                                    s.recv(4096)
                with br.phase("permission_denied"):  # files with a bad mode after a deploy
                    for i in range(4):
                        w = rng.choice(WORDS)
                        target = os.path.join(www, "products", w) if i % 2 else os.path.join(www, "files", "docs")
                        with br.occurrence(1.5):
                            os.chmod(target, 0o000 if i % 2 else 0o700)
                            http_via(port, "GET", f"/products/{w}" if i % 2 else "/files/docs/manual-3.txt", {"User-Agent": rng.choice(UAS)})
                        os.chmod(target, 0o755 if os.path.isdir(target) else 0o644)
                with br.phase("cgi_failure"):  # the search script broken by a deploy
                    for how in ["not_executable", "garbage_header", "stderr_exit", "missing_interpreter"]:
                        with br.occurrence(2.0):
                            if how == "not_executable":
                                put_script(CGI_OK, 0o644)
                            else:
                                put_script(CGI_BROKEN[how])
                            http_via(port, "GET", f"/cgi-bin/search.sh?q={rng.choice(WORDS)}", {"User-Agent": rng.choice(UAS)})
                        put_script(CGI_OK)
                with br.phase("bad_config_restart"):  # config edits with mistakes, graceful restart (apache exits)
                    for extra in ["ProxyPass /legacy/ http://127.0.0.1:notaport/", "Redirect permanent", "LimitRequestBody lots",
                                  "<Location /beta/>\n  Require ip 10.0.0.0/8", "LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite2.so"]:
                        write_conf(extra)
                        with br.occurrence(2.5):
                            sig(signal.SIGUSR1)
                            time.sleep(1)
                        write_conf()
                        ensure_running()
                        time.sleep(1)
                        br.between()
        finally:
            stop()
            for b in backends.values():
                b.stop()
    return Source("apache2", "Apache httpd", version_of([apache, "-v"]),
                  "Apache ErrorLog (`[Www Mon dd hh:mm:ss.usec yyyy] [module:level] [pid N:tid N] [client ip:port] AHnnnnn: "
                  "message`, LogLevel info), combined CustomLog (`client - user [date] \"request\" status bytes \"referer\" "
                  "\"user-agent\"`) and apache's stderr (config errors) on one file",
                  "apache2 -DFOREGROUND (event MPM): static site (pages, assets, IMS 304s, 404s), directory listings, "
                  "redirects, an API balancer of two backends and a reports backend (python HTTP servers, mod_proxy), basic "
                  "auth for /admin, a CGI search script, an intranet path for 127.0.0.0/29, server-status polled; clients "
                  "from 30 addresses; graceful restarts (SIGUSR1) every 20-40s, 2 clean restarts (SIGTERM)",
                  "backend_down (4x a backend stopped), backend_timeout (3x the reports backend hanging 6s > timeout 2s), "
                  "auth_failure (5 wrong / unknown basic-auth credentials), access_denied (4: server-status, intranet and dot "
                  "files from disallowed clients), bad_request (6: garbage method, TLS, 10 KB header, bad Host, path "
                  "traversal, HTTP/9.9), request_too_large (3 uploads > LimitRequestBody 128 KB, to the CGI script and a static path), request_timeout (3 clients "
                  "not finishing their headers > RequestReadTimeout 4s), permission_denied (4x a file/directory with a bad "
                  "mode), cgi_failure (4: script not executable, bad header, error exit, missing interpreter), "
                  "bad_config_restart (5 broken configs + SIGUSR1; apache exits)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def run(doc: str, name: str, sources: list[str], namespace: dict, seed: int, min_normal_s: float,
        root_for: str, record: dict | None = None) -> int:
    """A corpus script's command line: parse its arguments, generate the sources its module (``namespace``)
    defines as ``source_<name>`` functions, then print the summary. Shared by the fifth to fifteenth corpora's
    scripts. ``root_for``: what the script needs root for, said when it is not run as root. ``record``: fields
    the manifest gets after the run, beside its wall time (``replaced_sources``, ``oddities``)."""
    ap = arguments(doc, name, sources, seed=seed)
    ap.add_argument("--min-normal-seconds", dest="min_normal_s", type=float, default=min_normal_s,
                    help=f"shortest normal phase of each source (default {min_normal_s:g})")
    args = ap.parse_args()
    args.lines = min(args.lines, HARD_CAP)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # a TERM still stops every child (Services)
    if os.geteuid() != 0:
        print(f"run as root ({root_for})", file=sys.stderr)
        return 2
    gens = {source: namespace[f"source_{source}"] for source in sources if f"source_{source}" in namespace}
    t0 = time.time()
    rc = generate(ap, args, gens, sources, doc)
    summary(args.out, time.time() - t0)
    if record is not None:
        record_run(args.out, time.time() - t0, record)
    return rc


def record_run(out: str, wall: float, record: dict) -> None:
    """The run's wall time and ``record`` into the manifest under ``out``, next to its generation date."""
    path = os.path.join(out, "manifest.json")
    with contextlib.suppress(OSError, ValueError):
        with open(path) as f:
            manifest = json.load(f)
        manifest["wall_seconds"] = round(wall)
        manifest.update(record)
        write_atomic(path, json.dumps(manifest, indent=2) + "\n")


def main() -> int:
    return run(__doc__, "onboarding_fifth", SOURCES, globals(), seed=5555, min_normal_s=75,
               root_for="mount namespaces with tmpfs, programs dropping to their own users")


def summary(out: str, wall: float) -> None:
    """Sources, programs and versions, normal lines, events and error lines per kind, wall time."""
    with contextlib.suppress(OSError, ValueError):
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        print(f"\nsummary ({out}, generated in {wall / 60:.1f} min):")
        for src in manifest["sources"]:
            events: dict[str, set] = {}
            with open(os.path.join(out, src["name"], "errors.jsonl")) as f:
                for line in f:
                    row = json.loads(line)
                    events.setdefault(row["kind"], set()).add(row["event"])
            print(f"  {src['name']:<10} {src['program']} {src['version']}: {src['normal_lines']} normal lines, "
                  f"{sum(len(v) for v in events.values())} events, {src['error_lines']} error lines")
            for kind, n in src["error_kinds"].items():
                print(f"    {kind:<24} {len(events.get(kind, ())):>3} events {n:>4} lines")


if __name__ == "__main__":
    sys.exit(main())
