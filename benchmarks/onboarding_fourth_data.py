#!/usr/bin/env python3
"""Generate the fourth onboarding corpus: real log lines written by real programs, grouped into events.

A fourth corpus built exactly like benchmarks/onboarding_heldout_data.py (same layout, same
separation rule, same event ids, its helpers imported) from five programs that no other corpus uses.
Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad reloads, killed dependencies,
full disks, garbage on the wire, wrong passwords, SIGKILL...).  It never writes a log line itself.

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one bad reload,
one outage of a dependency (the state-change lines and the requests failing during it).  The
breakages are made one occurrence at a time, each in its own time window followed by a pause for
the program to finish logging about it; what the program logs between two windows (recovery,
restarting it) belongs to no event and is not kept.  Normal background traffic keeps running
during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends squid
exim4-daemon-light unbound dovecot-imapd dovecot-pop3d lighttpd; also util-linux (unshare, nsenter,
setpriv) and python3; the DNS, SMTP, IMAP/POP3 and HTTP clients are python code in this script.
Nothing is installed by this script, and no system service of these packages needs to run: each
daemon is started directly as a plain process, without systemd):

  squid     Squid 5 (-N, as user proxy) with cache_log and the native access_log both on its
            stdout/stderr (one pipe, one file): `epoch.ms elapsed client CODE/status bytes method URL
            user HIER/peer type` access lines and `yyyy/mm/dd hh:mm:ss| message` cache.log lines.
            The cache_dir is on a 6 MB tmpfs in a private mount namespace; a private hosts_file names
            the origin sites.  Normal: browsers/apps/bots from 16 client addresses fetching pages,
            static assets (hits, IMS revalidations), API GET/POST/PUT, HEAD, a few origin 404s, the
            cache manager polled by a monitoring job, `squid -k reconfigure` / `-k rotate`, two clean
            restarts (-k shutdown).
            Broken: requests the ACLs deny, an origin server stopped, an origin hanging past
            read_timeout, an origin answering 500/502, names that do not resolve, garbage / TLS /
            oversized requests on the proxy port, broken configs at a restart, the cache tmpfs filled
            (squid asserts and exits: it is started again outside the event window).  (Broken configs
            with `squid -k reconfigure` were tried first: that command checks the file itself and
            refuses to signal squid, which then logs nothing, so it is not used.)
  exim4     Exim 4.96 daemon (-bdf -q15s) with its own exim4.conf bind-mounted over /etc/exim4 in a
            private mount namespace (nothing under /etc is changed), its mainlog
            (`yyyy-mm-dd hh:mm:ss [msgid] message`, log_selector with smtp_connection, protocol and
            syntax errors, subjects, delivery sizes, confirmations).  Normal: SMTP clients (smtplib)
            delivering to local mailboxes (appendfile on a 3 MB tmpfs), authenticated submissions
            relayed to a partner smarthost (a local SMTP sink, not logged), multi-recipient mail,
            queue runs, forced queue runs (-qff), SIGHUP re-execs, two clean restarts.
            Broken: relaying denied, unknown local recipients, wrong AUTH passwords, SMTP protocol
            errors (garbage, pipelining before the greeting, overlong lines), messages over
            message_size_limit, the smarthost down / answering 4xx / 5xx (defer, bounce), the
            mailbox tmpfs full, a mailbox made unwritable, a broken router config (SIGHUP).
  unbound   Unbound 1.17 (-d) with `logfile`, log-time-ascii, verbosity 1, log-queries,
            log-replies, log-servfail, val-log-level 2, statistics-interval
            (`Mon dd hh:mm:ss unbound[pid:tid] level: message`).  Normal: a resolver forwarding to an
            upstream unbound (not logged) that serves example/shop/corp zones, local zones (static
            data, an ad-block list), clients from several addresses asking A/AAAA/MX/TXT/SRV/PTR...
            over UDP and TCP (some NXDOMAIN), unbound-control (stats, flush, local_data, reload),
            two clean restarts.
            Broken: the upstream SIGKILLed, the upstream frozen (SIGSTOP), answers failing DNSSEC
            validation (a trust anchor for an unsigned zone), broken configs reloaded, clients over
            ip-ratelimit, queries from a refused address, malformed / zone-transfer / CHAOS queries.
            (Garbage on the control port and unbound-control commands with bad arguments were tried
            too: unbound logs nothing about them at verbosity 1 (it answers the client only), so they
            are not used.)
  dovecot   Dovecot 2.3 (-F, its own base_dir and instance) with `log_path` and log_timestamp
            (`yyyy-mm-dd hh:mm:ss service(user)<pid><session>: Level: message`), auth_verbose and the
            mail_log plugin.  Normal: IMAP (imaplib) and POP3 (poplib) users reading, flagging,
            copying, moving, expunging and appending mail, mail delivered with dovecot-lda, maildirs on
            a 4 MB tmpfs, SIGHUP reloads, two clean restarts.
            Broken: wrong passwords / unknown users, garbage / TLS / HTTP / overlong commands on the
            IMAP and POP3 ports, IMAP processes SIGKILLed, a mailbox made unreadable, the mail tmpfs
            full, corrupted index files, too many connections for one user, broken configs (SIGHUP).
  lighttpd  lighttpd 1.4 (-D) with its error log and access log both on stderr (one file):
            `yyyy-mm-dd hh:mm:ss: (file.c.line) message` and combined-style access lines (the access
            lines are flushed in batches by lighttpd, so they can come a little after error lines).
            Normal: a static site, directory listings, redirects, two API backends behind
            mod_proxy (local python HTTP servers), basic auth for /admin, server-status polled,
            graceful restarts (SIGUSR1), one clean restart.
            Broken: an API backend stopped, a backend hanging past the proxy read timeout, wrong
            basic-auth passwords, garbage / TLS / oversized requests (with
            debug.log-request-header-on-error), request bodies over server.max-request-size, files
            made unreadable, broken configs at graceful restart.

Layout written under --out (default benchmarks/data/onboarding_fourth):

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

  * its level marks it as a problem (squid and lighttpd access lines with HTTP
    status >= 400 and squid ERROR/WARNING/FATAL lines, exim rejections, defers,
    bounces, failures and errors, unbound warning/error/SERVFAIL/REFUSED/
    validation failures, dovecot Error/Warning/Fatal/Panic messages, lighttpd
    error-log lines about failures), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; domain names, mail addresses, message ids,
    user names and session ids masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (squid and lighttpd access
lines with status < 400, exim "SMTP connection from"/queue-run lines, unbound
query lines and NOERROR/NXDOMAIN replies, dovecot logins, logouts and mail_log
lines).  Lines of an entry that spans several lines (squid FATAL messages, exim
warnings with a "Suggested action") are kept with their entry.  An occurrence
of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_fourth_data.py --out benchmarks/data/onboarding_fourth \
        [--sources squid,exim4,unbound,dovecot,lighttpd] [--lines 6000] [--seed 4444] \
        [--min-normal-seconds 75]

Needs root (private mount namespaces with tmpfs, programs dropping to their own users).  Programs
run on free 127.0.0.1 ports from temp dirs and are always stopped (process groups killed), also on
failure; nothing under /etc or any system service is touched.
"""
from __future__ import annotations

import base64
import contextlib
import http.client
import imaplib
import json
import os
import poplib
import pwd
import random
import re
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
from onboarding_blind_data import ModeServer, QuietHandler, mask_all  # noqa: E402
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Namespace, Source,  # noqa: E402
                                     as_user, entry_selector, generate, kill_group, pace, raw_send)

SOURCES = ["squid", "exim4", "unbound", "dovecot", "lighttpd"]
MAX_NORMAL_S = 480

UAS = ["Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
       "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/119.0 Safari/537.36",
       "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
       "ShopApp/4.1 (Android 14)", "curl/7.88.1", "python-requests/2.31.0", "Googlebot/2.1 (+http://www.google.com/bot.html)",
       "Prometheus/2.45.0", "Wget/1.21.3"]


def mask_names(text: str) -> str:
    """Domain names, mail addresses, <...> ids masked (then mask_all)."""
    text = re.sub(r"<[^<>\s]*>", "<_>", text)
    text = re.sub(r"\b[\w.+-]+@[\w.-]+\b", "ADDR", text)
    text = re.sub(r"\b(?:[\w-]+\.)+(?:test|lan|arpa|com|org)\.?(?=[\s:/,;)\]'\"]|$)", "NAME", text)
    return mask_all(text)


def http_via(port: int, method: str, url: str, headers: dict | None = None, body: bytes | None = None,
             src: str | None = None, timeout: float = 10) -> int:
    """One HTTP request to 127.0.0.1:port (a proxy when url is absolute); the status, 0 when it failed."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(src, 0) if src else None)
    try:
        conn.request(method, url, body=body, headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


class Origin(QuietHandler):
    """A web origin / API backend; modes: ok, hang, fail500, fail502."""

    def route(self, method: str):
        owner = self.server.owner
        if owner.mode == "hang":
            time.sleep(owner.attrs.get("hang", 6))
        if owner.mode in ("fail500", "fail502"):
            return self.reply(int(owner.mode[4:]), b"upstream failure\n")
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        path = self.path.split("?")[0]
        if "missing" in path or path.endswith(".bak"):
            return self.reply(404, b"not found\n")
        if method in ("POST", "PUT"):
            return self.reply(201 if method == "POST" else 200, json.dumps({"ok": True, "id": random.randint(1, 99999)}).encode(),
                              "application/json")
        if method == "DELETE":
            return self.reply(204)
        if path.startswith("/static/") or path.endswith((".css", ".js", ".png", ".woff2")):
            if self.headers.get("If-Modified-Since"):
                self.send_response(304)
                self.send_header("Cache-Control", "max-age=600")
                self.end_headers()
                return
            body = b"x" * (300 + (hash(path) % 9000))
            self.send_response(200)
            self.send_header("Content-Type", "text/css" if path.endswith(".css") else "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "max-age=600")
            self.send_header("Last-Modified", "Mon, 02 Dec 2024 10:00:00 GMT")
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(body)
            return
        if "/api/" in path:
            body = json.dumps({"path": path, "items": list(range(hash(path) % 20))}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(body)
            return
        body = b"<html><body>" + path.encode() * (5 + hash(path) % 60) + b"</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=20")
        self.send_header("Last-Modified", "Tue, 03 Dec 2024 08:00:00 GMT")
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


def random_path(rng: random.Random, clean: bool = False) -> tuple[str, str]:
    """(method, path) of a typical site visit (clean: no request for a missing page)."""
    r = rng.random()
    w = rng.choice(WORDS)
    if r < 0.3:
        return "GET", rng.choice(["/", "/index.html", f"/products/{w}", f"/category/{w}/{rng.randint(1, 9)}", f"/blog/{w}-{rng.randint(1, 40)}"])
    if r < 0.6:
        return "GET", rng.choice([f"/static/css/site-{rng.randint(1, 3)}.css", f"/static/js/app-{rng.randint(1, 4)}.js",
                                  f"/static/img/{w}.png", f"/static/fonts/inter-{rng.randint(1, 2)}.woff2"])
    if r < 0.8:
        return "GET", f"/api/v1/{rng.choice(['items', 'cart', 'prices', 'stock'])}/{rng.randint(1, 500)}?lang={rng.choice(['en', 'de', 'fr'])}"
    if r < 0.88:
        return rng.choice(["POST", "PUT"]), f"/api/v1/{rng.choice(['cart', 'orders', 'events'])}"
    if r < 0.93:
        return "HEAD", f"/products/{w}"
    if r < 0.96:
        return "DELETE", f"/api/v1/cart/{rng.randint(1, 500)}"
    if clean:
        return "GET", "/"
    return "GET", rng.choice([f"/missing/{w}", f"/old/{w}.bak", "/wp-login.php.missing"])


# --------------------------------------------------------------------------
# squid
# --------------------------------------------------------------------------

SQUID_CONF = """\
http_port 127.0.0.1:{port}
pid_filename {work}/run/squid.pid
cache_log /dev/stderr
access_log stdio:/dev/stdout squid
cache_store_log none
logfile_rotate 0
coredump_dir {work}/run
cache_dir ufs {cache} 5 4 16
cache_mem 8 MB
maximum_object_size 512 KB
hosts_file {work}/hosts
dns_nameservers 127.0.0.1
dns_timeout 3 seconds
dns_retransmit_interval 1 seconds
read_timeout 3 seconds
connect_timeout 3 seconds
request_header_max_size 8 KB
request_body_max_size 256 KB
shutdown_lifetime 1 seconds
pinger_enable off
visible_hostname proxy.example.test
acl localnet src 127.0.0.0/28
acl SSL_ports port 443
acl Safe_ports port 80 443 1025-65535
acl CONNECT method CONNECT
acl blocked dstdomain .ads.example.test .tracker.example.test
acl partner_only urlpath_regex ^/partner/
http_access deny !Safe_ports
http_access deny CONNECT !SSL_ports
http_access allow localhost manager
http_access deny manager
http_access deny blocked
http_access deny partner_only
http_access allow localnet
http_access deny all
refresh_pattern -i \\.(css|js|png|woff2)$ 60 50% 600
refresh_pattern . 0 20% 60
{extra}
"""

SQUID_ACCESS = re.compile(r"^\d{9,}\.\d{3}\s+\d+ \S+ [A-Z_]+/(\d{3}) ")
SQUID_CACHE = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?\| ")


def squid_status(line: str) -> int | None:
    m = SQUID_ACCESS.match(line)
    return int(m.group(1)) if m else None


def squid_problem(line: str) -> bool:
    s = squid_status(line)
    if s is not None:
        return s >= 400 or s == 0
    return bool(re.search(r"\b(ERROR|WARNING|FATAL|BUG)\b", line))


def squid_echo(line: str) -> bool:
    s = squid_status(line)
    return s is not None and 0 < s < 400


def squid_template(line: str) -> str:
    m = SQUID_ACCESS.match(line) or SQUID_CACHE.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"\bhttp://\S+", "URL", body)
    return ("A " if SQUID_ACCESS.match(line) else "C ") + mask_names(body)


def source_squid(args) -> Source:
    squid = need("/usr/sbin/squid", "squid")
    rng = random.Random(f"{args.seed}-squid")
    proxy = pwd.getpwnam("proxy")
    with tempfile.TemporaryDirectory(prefix="onb4-squid-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        cache, run = os.path.join(work, "cache"), os.path.join(work, "run")
        for d in (cache, run):
            os.makedirs(d)
            os.chown(d, proxy.pw_uid, proxy.pw_gid)
        ns = Namespace(sv, "squid-ns", f"mount -t tmpfs -o size=6m,uid={proxy.pw_uid},gid={proxy.pw_gid},mode=0750 tmpfs {cache}")
        origins = {"shop": ModeServer(Origin, hang=6).start(), "cdn": ModeServer(Origin, hang=6).start(),
                   "api": ModeServer(Origin, hang=6).start(), "intranet": ModeServer(Origin, hang=6).start()}
        hosts = {"shop": "shop.example.test www.shop.example.test", "cdn": "cdn.example.test static.example.test",
                 "api": "api.example.test", "intranet": "intranet.corp.test wiki.corp.test"}
        write_atomic(os.path.join(work, "hosts"), "127.0.0.1 localhost\n" + "".join(
            f"127.0.0.1 {names}\n" for names in hosts.values()))
        conf = os.path.join(work, "squid.conf")
        logp = os.path.join(work, "squid.log")
        open(logp, "a").close()
        os.chown(logp, proxy.pw_uid, proxy.pw_gid)

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, SQUID_CONF.format(port=port, work=work, cache=cache, extra=extra))
            os.chmod(conf, 0o644)

        def ctl(*cmd: str) -> None:
            subprocess.run(as_user("proxy", [squid, "-f", conf, *cmd]), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30, check=False)

        def start(wait: bool = True) -> None:
            sv.start("squid", ns.argv(as_user("proxy", ["sh", "-c", f"exec {squid} -N -f {conf} 2>&1 | cat >> {logp}"])),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=run)
            if wait:
                wait_port(port)

        def stop() -> None:
            with contextlib.suppress(Exception):
                ctl("-k", "shutdown")
            proc = sv.procs.get("squid")
            if proc:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:  # -k refused (it checks the config file): TERM, a clean shutdown too
                    kill_group(proc, signal.SIGTERM)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(10)
            sv.stop("squid")

        write_conf()
        ns.run(" ".join(as_user("proxy", [squid, "-N", "-z", "-f", conf])))
        start()
        clients = [f"127.0.0.{i}" for i in range(1, 15)]

        def url(site: str, path: str) -> str:
            name = rng.choice(hosts[site].split())
            return f"http://{name}:{origins[site].port}{path}"

        def visit(r: random.Random, clean: bool = False) -> int:
            src, ua = r.choice(clients), r.choice(UAS)
            n = 0
            for _ in range(r.randint(1, 6)):
                method, path = random_path(r, clean)
                site = "cdn" if path.startswith("/static/") else "api" if "/api/" in path else r.choice(["shop", "shop", "intranet"])
                headers = {"User-Agent": ua}
                if path.startswith("/static/") and r.random() < 0.3:
                    headers["If-Modified-Since"] = "Mon, 02 Dec 2024 10:00:00 GMT"
                if r.random() < 0.05:
                    headers["Cache-Control"] = "no-cache"
                body = json.dumps({"sku": r.randint(1, 999), "qty": r.randint(1, 5)}).encode() if method in ("POST", "PUT") else None
                if body:
                    headers["Content-Type"] = "application/json"
                http_via(port, method, url(site, path), headers, body, src)
                n += 1
            return n

        def monitor() -> None:
            http_via(port, "GET", f"http://proxy.example.test:{port}/squid-internal-mgr/{rng.choice(['info', 'counters', 'utilization', 'storedir'])}",
                     {"User-Agent": "squid-exporter/1.10"})

        log, normal = FileLog(logp), []
        say(f"squid on 127.0.0.1:{port}; normal phase...")
        t0, n, restarts, last_reconf = time.time(), 0, 0, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                for _ in range(rng.randint(2, 8)):
                    visit(rng)
                if rng.random() < 0.1:
                    monitor()
                if time.time() - last_reconf > rng.uniform(15, 30):
                    ctl("-k", rng.choice(["reconfigure", "reconfigure", "rotate"]))
                    last_reconf = time.time()
                if restarts < 2 and time.time() - t0 > 30 * (restarts + 1):
                    stop()
                    time.sleep(0.5)
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.05, 0.2))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 50 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > MAX_NORMAL_S:
                    break
            time.sleep(1)
            normal += log.read_new()
            templates = {squid_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, squid_template, squid_problem, squid_echo,
                                             lambda x: bool(SQUID_ACCESS.match(x) or SQUID_CACHE.match(x))))
            def ensure_running() -> None:
                proc = sv.procs.get("squid")
                if proc is None or proc.poll() is not None:  # it died (FATAL config, assertion)
                    sv.forget("squid")
                    start()

            with Background(lambda r: visit(r, True), random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("access_denied"):  # policy: ad domains, SMTP via CONNECT, foreign clients
                    cases = [("GET", f"http://ads.example.test:{origins['shop'].port}/banner.js", None),
                             ("CONNECT", "mail.example.test:25", None),
                             ("GET", f"http://shop.example.test:{origins['shop'].port}/", "127.0.0.77"),
                             ("GET", "http://shop.example.test:22/", None),
                             ("GET", f"http://www.tracker.example.test:{origins['cdn'].port}/pixel.gif", None),
                             ("GET", f"http://intranet.corp.test:{origins['intranet'].port}/partner/reports", None)]
                    for method, u, src in cases:
                        with br.occurrence(1.0):
                            http_via(port, method, u, {"User-Agent": rng.choice(UAS)}, None, src)
                with br.phase("origin_down"):  # a web server crashed
                    for site in ["shop", "api", "intranet", "cdn"]:
                        with br.occurrence(1.0):
                            origins[site].stop()
                            for _ in range(2):
                                http_via(port, "GET", url(site, f"/api/v1/items/{rng.randint(1, 9)}?x={rng.random()}" if site == "api"
                                                          else f"/products/{rng.choice(WORDS)}?nocache={rng.random()}"),
                                         {"User-Agent": rng.choice(UAS), "Cache-Control": "no-cache"})
                        origins[site].start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("origin_timeout"):  # a backend stuck (slow database): past read_timeout
                    for site in ["api", "shop", "api", "intranet"]:
                        with br.occurrence(1.0):
                            origins[site].mode = "hang"
                            http_via(port, "GET", url(site, f"/api/v1/report/{rng.randint(1, 99)}" if site == "api" else f"/blog/{rng.random()}"),
                                     {"User-Agent": rng.choice(UAS)}, timeout=15)
                            origins[site].mode = "ok"
                        time.sleep(3)
                        br.between()
                with br.phase("origin_error"):  # the application failing
                    for site, mode in [("api", "fail500"), ("shop", "fail502"), ("api", "fail500"), ("intranet", "fail500")]:
                        with br.occurrence(1.0):
                            origins[site].mode = mode
                            http_via(port, "POST" if site == "api" else "GET",
                                     url(site, "/api/v1/orders" if site == "api" else f"/products/{rng.random()}"),
                                     {"User-Agent": rng.choice(UAS)}, b"{}" if site == "api" else None)
                            origins[site].mode = "ok"
                with br.phase("dns_failure"):  # typos / names that do not exist
                    for name in ["shpo.example.test", "api.example.tset", "cdn.exmaple.test", "intranet.corp"]:
                        with br.occurrence(1.0):
                            http_via(port, "GET", f"http://{name}/", {"User-Agent": rng.choice(UAS)}, timeout=15)
                with br.phase("bad_request"):  # garbage, TLS, huge headers on the proxy port
                    payloads = [b"GARBAGE / HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(40),
                                b"GET http://shop.example.test/ HTTP/1.1\r\nHost: shop.example.test\r\nX-Big: " + b"A" * 20000 + b"\r\n\r\n",
                                b"GET http://shop.example.test:99999999/ HTTP/1.1\r\n\r\n",
                                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                                b"POST http://api.example.test:%d/api/v1/upload HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 900000\r\n\r\n"
                                % origins["api"].port + b"z" * 300000]
                    for p in payloads:
                        with br.occurrence(1.0):
                            raw_send(port, p, 0.5)
                with br.phase("bad_config_restart"):  # config edits with mistakes, found at the next restart
                    # (squid -k reconfigure checks the file itself and refuses to signal squid: nothing is logged)
                    for extra in ["cache_peer parent.example.test parnet 3128 0 no-query", "acl office srcc 10.0.0.0/8",
                                  "http_access allow undefined_acl", "maximum_object_size 4 XB", "refresh_pattern . 0 20%"]:
                        stop()
                        write_conf(extra)
                        time.sleep(0.5)
                        br.between()
                        with br.occurrence(2.0):
                            start(wait=False)
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                sv.procs["squid"].wait(6)  # a FATAL one exits, a WARNING one keeps running
                        stop()
                        write_conf()
                        start()
                        time.sleep(1.5)
                        br.between()
                with br.phase("cache_disk_full"):  # another writer fills the cache filesystem
                    for i in range(4):
                        with br.occurrence(1.5):
                            ns.run(f"dd if=/dev/zero of={cache}/fill.bin bs=64k 2>/dev/null; true")
                            for j in range(6):
                                http_via(port, "GET", url("cdn", f"/static/img/big-{i}-{j}-{rng.randint(1, 10 ** 6)}.png"),
                                         {"User-Agent": rng.choice(UAS)})
                            time.sleep(1)
                            ns.run(f"rm -f {cache}/fill.bin")
                        time.sleep(1)
                        ensure_running()
                        time.sleep(1)
                        br.between()
        finally:
            stop()
            for o in origins.values():
                o.stop()
    return Source("squid", "Squid", version_of([squid, "-v"]),
                  "Squid native access.log (`epoch.ms elapsed client CODE/status bytes method URL user HIER/peer type`) and "
                  "cache.log (`yyyy/mm/dd hh:mm:ss| message`, some messages span several lines) interleaved on one stream "
                  "(both logs on squid's stdout/stderr)",
                  "squid -N as user proxy, cache_dir on a 6 MB tmpfs, private hosts_file; clients from 14 addresses "
                  "(browsers, apps, bots) fetching pages, static assets (hits, IMS revalidations), API GET/POST/PUT/DELETE, "
                  "HEAD, a few origin 404s, a monitoring job polling the cache manager, squid -k reconfigure/rotate every "
                  "15-30s, 2 clean restarts (-k shutdown)",
                  "access_denied (6: ad/tracker domains, CONNECT to port 25, a client outside the ACL, port 22, a "
                  "forbidden path), origin_down (4x an origin server stopped), origin_timeout (4x an origin hanging 6s > "
                  "read_timeout 3s), origin_error (4x origin answering 500/502), dns_failure (4 unresolvable names), "
                  "bad_request (6: garbage, TLS, a 20 KB header, bad port, HTTP/2 preface, body over request_body_max_size), "
                  "bad_config_restart (5 broken configs found at a restart; -k reconfigure refuses them silently), cache_disk_full (4x cache tmpfs filled + "
                  "cacheable fetches)", normal, br.errors)


# --------------------------------------------------------------------------
# exim4
# --------------------------------------------------------------------------

EXIM_CONF = """\
primary_hostname = mail.example.test
domainlist local_domains = example.test : lists.example.test
domainlist relay_to_domains = partner.test : supplier.test
hostlist relay_from_hosts = 127.0.0.1
daemon_smtp_ports = {port}
local_interfaces = 127.0.0.1
spool_directory = {work}/spool
log_file_path = {work}/log/%slog
keep_environment =
tls_advertise_hosts =
host_lookup =
rfc1413_hosts =
message_size_limit = 200K
smtp_accept_max = 40
smtp_max_unknown_commands = 3
smtp_max_synprot_errors = 3
queue_run_max = 2
log_selector = +smtp_connection +smtp_protocol_error +smtp_syntax_error +smtp_no_mail +received_recipients \\
               +delivery_size +subject +sender_on_delivery +smtp_confirmation +deliver_time +queue_time
acl_smtp_rcpt = acl_check_rcpt
acl_smtp_data = acl_check_data

begin acl

acl_check_rcpt:
  accept hosts = :
  deny   local_parts = ^[./|] : ^.*[@%!] : ^.*/\\\\.\\\\./
         message = restricted characters in address
  deny   domains = +local_domains
         !verify = recipient
         message = unknown user
  accept domains = +local_domains
  accept domains = +relay_to_domains
         authenticated = *
  accept domains = +relay_to_domains
         hosts = +relay_from_hosts
  deny   message = relay not permitted

acl_check_data:
  accept

begin routers

partner:
  driver = manualroute
  domains = +relay_to_domains
  transport = remote_smtp
  route_list = * 127.0.0.1
  self = send
{extra}
local_user:
  driver = accept
  domains = +local_domains
  local_parts = alice : bob : carol : dave : erin : frank : postmaster : sales : support
  transport = local_delivery

begin transports

remote_smtp:
  driver = smtp
  port = {sink}

local_delivery:
  driver = appendfile
  file = {mail}/${{local_part_data}}
  user = Debian-exim
  group = Debian-exim
  mode = 0600
  delivery_date_add
  envelope_to_add
  return_path_add

begin retry

* * F,2h,2m; F,4d,1h

begin authenticators

PLAIN:
  driver = plaintext
  public_name = PLAIN
  server_prompts = :
  server_condition = ${{if eq{{$auth3}}{{${{lookup{{$auth2}}lsearch{{/etc/exim4/passwd}}{{$value}}{{*no*}}}}}}}}
  server_set_id = $auth2
"""

EXIM_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
EXIM_MSGID = re.compile(r"\b[0-9A-Za-z]{6}-[0-9A-Za-z]{6}-[0-9A-Za-z]{2}\b")


def exim_template(line: str) -> str:
    m = EXIM_HEAD.match(line)
    body = line[m.end():] if m else line
    body = EXIM_MSGID.sub("MSGID", body)
    body = re.sub(r'T="(?:[^"\\]|\\.)*"', 'T=_', body)
    return re.sub(r"ADDR( ADDR)+", "ADDR", mask_names(body))


def exim_problem(line: str) -> bool:
    return bool(re.search(r"( \*\* | == |rejected|defer|[Ff]ailed|failure|[Ee]rror|frozen|[Ww]arning|timed out|refused|"
                          r"too big|unexpected disconnection|synchronization|dropped|[Pp]anic|not permitted)", line))


def exim_echo(line: str) -> bool:
    return bool(re.search(r"\] (SMTP connection from |Start queue run|End queue run)|^\S+ \S+ (Start|End) queue run", line))


class SmtpSink(socketserver.StreamRequestHandler):
    """The partner's mail server (not logged): modes ok, tempfail (451 to RCPT), reject (550 to RCPT)."""

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
                    self.wfile.write(b"250 OK id=%08x\r\n" % random.getrandbits(32))
                continue
            cmd = line[:4].upper()
            if cmd in (b"EHLO", b"HELO"):
                self.wfile.write(b"250 mx.partner.test\r\n")
            elif cmd == b"RCPT" and owner.mode == "tempfail":
                self.wfile.write(b"451 4.3.0 mailbox temporarily unavailable\r\n")
            elif cmd == b"RCPT" and owner.mode == "reject":
                self.wfile.write(b"550 5.1.1 no such user here\r\n")
            elif cmd == b"DATA":
                data = True
                self.wfile.write(b"354 go ahead\r\n")
            elif cmd == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            else:
                self.wfile.write(b"250 OK\r\n")


class Sink:
    def __init__(self):
        self.port, self.mode, self.srv = free_port(), "ok", None

    def start(self):
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), SmtpSink)
        self.srv.daemon_threads = True
        self.srv.owner = self
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.srv:
            self.srv.shutdown()
            self.srv.server_close()
            self.srv = None


EXIM_USERS = ["alice", "bob", "carol", "dave", "erin", "frank"]
EXIM_PASSWORDS = {u: f"{u}-pw-{i * 7919 % 1000}" for i, u in enumerate(EXIM_USERS)}


class MailDriver:
    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng = port, rng

    def message(self, sender: str, rcpts: list[str], size: int | None = None) -> str:
        r = self.rng
        subject = r.choice(["Invoice", "Re: meeting", "Weekly report", "Order confirmation", "Password reset",
                            "Build failed", "Lunch?", "Fwd: contract", "Your shipment"]) + f" #{r.randint(100, 9999)}"
        body = "\r\n".join(" ".join(r.choice(WORDS) for _ in range(r.randint(4, 14))) for _ in range(r.randint(2, 30)))
        if size:
            body = ("y" * 76 + "\r\n") * (size // 78)
        return (f"From: <{sender}>\r\nTo: {', '.join(rcpts)}\r\nSubject: {subject}\r\n"
                f"Message-ID: <{r.getrandbits(48):x}@{sender.split('@')[1]}>\r\n\r\n{body}\r\n")

    def session(self, src: str, helo: str, mails: list[tuple[str, list[str]]], auth: tuple | None = None,
                timeout: float = 15) -> None:
        s = smtplib.SMTP(timeout=timeout, local_hostname=helo, source_address=(src, 0))
        try:
            s.connect("127.0.0.1", self.port)
            s.ehlo(helo)
            if auth:
                s.login(*auth)
            for sender, rcpts in mails:
                with contextlib.suppress(smtplib.SMTPException):
                    s.sendmail(sender, rcpts, self.message(sender, rcpts))
            s.quit()
        except (smtplib.SMTPException, OSError):
            s.close()

    def normal(self, r: random.Random) -> None:
        x = r.random()
        local = [f"{u}@example.test" for u in EXIM_USERS] + ["sales@example.test", "support@example.test"]
        if x < 0.45:  # inbound from the internet
            peer = r.choice(["partner.test", "supplier.test", "news.example.org", "shop.example.com"])
            self.session(f"127.0.0.{r.randint(20, 30)}", f"mx{r.randint(1, 3)}.{peer}",
                         [(f"{r.choice(USERS)}@{peer}", r.sample(local, r.randint(1, 3))) for _ in range(r.randint(1, 3))])
        elif x < 0.8:  # authenticated submission
            u = r.choice(EXIM_USERS)
            dests = [f"{r.choice(USERS)}@{r.choice(['partner.test', 'supplier.test'])}" for _ in range(r.randint(1, 2))]
            if r.random() < 0.4:
                dests.append(r.choice(local))
            self.session(f"127.0.0.{r.randint(40, 45)}", f"{u}-laptop.example.test",
                         [(f"{u}@example.test", dests) for _ in range(r.randint(1, 2))], auth=(u, EXIM_PASSWORDS[u]))
        else:  # the internal app server relaying notifications
            self.session("127.0.0.1", "app1.example.test",
                         [("noreply@example.test", [r.choice([f"{r.choice(USERS)}@partner.test", r.choice(local)])])
                          for _ in range(r.randint(1, 4))])


def source_exim4(args) -> Source:
    exim = need("/usr/sbin/exim4", "exim4-daemon-light")
    rng = random.Random(f"{args.seed}-exim4")
    xu = pwd.getpwnam("Debian-exim")
    with tempfile.TemporaryDirectory(prefix="onb4-exim-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, sink = free_port(), Sink().start()
        etc, mail, spool, logd = (os.path.join(work, d) for d in ("etc-exim4", "mail", "spool", "log"))
        for d in (etc, mail, spool, logd):
            os.makedirs(d)
        for d in (mail, spool, logd):
            os.chown(d, xu.pw_uid, xu.pw_gid)
        conf = os.path.join(etc, "exim4.conf")

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, EXIM_CONF.format(port=port, work=work, mail=mail, sink=sink.port, extra=extra))
            os.chmod(conf, 0o644)

        write_conf()
        pw = os.path.join(etc, "passwd")
        write_atomic(pw, "".join(f"{u}: {p}\n" for u, p in EXIM_PASSWORDS.items()))
        os.chown(pw, 0, xu.pw_gid)
        os.chmod(pw, 0o640)
        ns = Namespace(sv, "exim-ns", f"mount --bind {etc} /etc/exim4 && mount -t tmpfs -o size=3m,uid={xu.pw_uid},"
                                      f"gid={xu.pw_gid},mode=0750 tmpfs {mail}")
        logp = os.path.join(logd, "mainlog")

        def start(wait: bool = True) -> None:
            sv.start("exim", ns.argv([exim, "-bdf", "-q15s"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("exim")

        def hup() -> None:
            proc = sv.procs.get("exim")
            if proc:
                proc.send_signal(signal.SIGHUP)

        def queue_run() -> None:
            subprocess.run(ns.argv([exim, "-qff"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)

        def trim_mailboxes() -> None:  # the users' mail clients fetch and delete their mail
            ns.run(f"for f in {mail}/*; do [ $(stat -c %s $f) -gt 150000 ] && : > $f; done; true")

        start()
        drv = MailDriver(port, rng)
        log, normal = FileLog(logp), []
        say(f"exim on 127.0.0.1:{port} (smarthost sink :{sink.port}); normal phase...")
        t0, n, restarts, last_hup = time.time(), 0, 0, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                for _ in range(rng.randint(1, 4)):
                    drv.normal(rng)
                if rng.random() < 0.04:
                    queue_run()
                if rng.random() < 0.05:
                    trim_mailboxes()
                if time.time() - last_hup > rng.uniform(20, 40):
                    hup()
                    last_hup = time.time()
                    time.sleep(0.5)
                if restarts < 2 and time.time() - t0 > 35 * (restarts + 1):
                    stop()
                    time.sleep(0.5)
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.05, 0.3))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 50 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > MAX_NORMAL_S:
                    break
            time.sleep(2)
            normal += log.read_new()
            templates = {exim_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, exim_template, exim_problem, exim_echo,
                                             lambda x: bool(EXIM_HEAD.match(x))))
            bg = random.Random(rng.random())
            with Background(drv.normal, bg, (0.5, 1.5)):
                with br.phase("relay_denied"):  # open-relay probes from the internet
                    for i in range(4):
                        with br.occurrence(1.0):
                            drv.session(f"127.0.0.{rng.randint(50, 60)}", rng.choice(["ylmf-pc", "User", "[127.0.0.1]", "spam.example.org"]),
                                        [(f"{rng.choice(WORDS)}@{rng.choice(['gmail.test', 'promo.example.org'])}",
                                          [f"{rng.choice(USERS)}@{rng.choice(['victim.example.org', 'bank.example.com'])}"])])
                with br.phase("unknown_recipient"):  # typos, dictionary attacks
                    for i in range(4):
                        with br.occurrence(1.0):
                            drv.session(f"127.0.0.{rng.randint(20, 30)}", "mx1.partner.test",
                                        [(f"{rng.choice(USERS)}@partner.test", [f"{rng.choice(['alcie', 'admin', 'info', 'bobb', 'hr'])}@example.test"])])
                with br.phase("auth_failure"):  # wrong passwords, credential stuffing
                    for i in range(5):
                        with br.occurrence(1.0):
                            u = rng.choice(EXIM_USERS + ["admin", "test"])
                            drv.session(f"127.0.0.{rng.randint(40, 60)}", "laptop.example.test",
                                        [(f"{u}@example.test", ["x@partner.test"])], auth=(u, "wrong-" + rng.choice(WORDS)))
                with br.phase("protocol_error"):  # broken clients, scanners, pipelining before the banner
                    payloads = [b"EHLO x\r\nMAIL FROM:<a@b.test>\r\nRCPT TO:<alice@example.test>\r\n",  # before the greeting
                                b"GET / HTTP/1.1\r\nHost: mail\r\n\r\n",
                                b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(40),
                                b"HELO\r\nMAIL FROM:<<>>\r\nRCPT TO:\r\nXYZZY\r\nFOO\r\nBAR\r\n",
                                b"EHLO client.test\r\nMAIL FROM:<" + b"a" * 2000 + b"@example.test>\r\n"]
                    for p in payloads:
                        with br.occurrence(1.5):
                            if p.startswith(b"EHLO x"):
                                raw_send(port, p, 0.5)
                            else:
                                with contextlib.suppress(OSError):
                                    with socket.create_connection(("127.0.0.1", port), 5) as s:
                                        s.settimeout(3)
                                        s.recv(512)
                                        s.sendall(p)
                                        time.sleep(0.8)
                                        with contextlib.suppress(OSError):
                                            s.recv(4096)
                with br.phase("message_too_big"):  # attachments over message_size_limit
                    for i in range(4):
                        with br.occurrence(1.0):
                            u = rng.choice(EXIM_USERS)
                            with contextlib.suppress(smtplib.SMTPException, OSError):
                                s = smtplib.SMTP("127.0.0.1", port, timeout=15, local_hostname=f"{u}-laptop.example.test")
                                s.login(u, EXIM_PASSWORDS[u])
                                with contextlib.suppress(smtplib.SMTPException):
                                    s.sendmail(f"{u}@example.test", [f"{rng.choice(USERS)}@partner.test"],
                                               drv.message(f"{u}@example.test", ["x@partner.test"], size=300_000))
                                s.quit()
                with br.phase("smarthost_down"):  # the partner's server is unreachable
                    for i in range(4):
                        with br.occurrence(1.5):
                            sink.stop()
                            u = rng.choice(EXIM_USERS)
                            drv.session("127.0.0.41", f"{u}-laptop.example.test",
                                        [(f"{u}@example.test", [f"{rng.choice(USERS)}@partner.test"])], auth=(u, EXIM_PASSWORDS[u]))
                            time.sleep(1)
                        sink.start() if sink.srv is None else None
                        queue_run()
                        time.sleep(1)
                        br.between()
                with br.phase("smarthost_rejects"):  # the partner answers 451 (defer) or 550 (bounce)
                    for mode in ["reject", "tempfail", "reject", "tempfail"]:
                        with br.occurrence(2.0):
                            sink.mode = mode
                            u = rng.choice(EXIM_USERS)
                            drv.session("127.0.0.42", f"{u}-laptop.example.test",
                                        [(f"{u}@example.test", [f"{rng.choice(['old', 'former', 'ex'])}.{rng.choice(USERS)}@partner.test"])],
                                        auth=(u, EXIM_PASSWORDS[u]))
                            time.sleep(1)
                        sink.mode = "ok"
                        queue_run()
                        time.sleep(1)
                        br.between()
                with br.phase("mailbox_disk_full"):  # the mail filesystem fills up
                    for i in range(4):
                        with br.occurrence(2.0):
                            ns.run(f"dd if=/dev/zero of={mail}/.fill bs=4k 2>/dev/null; true")
                            drv.session("127.0.0.25", "mx1.partner.test",
                                        [(f"{rng.choice(USERS)}@partner.test", [f"{rng.choice(EXIM_USERS)}@example.test"])])
                            time.sleep(1)
                        ns.run(f"rm -f {mail}/.fill")
                        trim_mailboxes()
                        queue_run()
                        time.sleep(1)
                        br.between()
                with br.phase("mailbox_permission_denied"):  # a bad chown by an admin script
                    for i in range(4):
                        user = rng.choice(EXIM_USERS)
                        with br.occurrence(2.0):
                            ns.run(f"touch {mail}/{user} && chown root:root {mail}/{user} && chmod 0600 {mail}/{user}")
                            drv.session("127.0.0.26", "mx2.supplier.test", [(f"{rng.choice(USERS)}@supplier.test", [f"{user}@example.test"])])
                            time.sleep(1)
                        ns.run(f"chown {xu.pw_uid}:{xu.pw_gid} {mail}/{user}")
                        queue_run()
                        time.sleep(1)
                        br.between()
                with br.phase("bad_router_config"):  # a router edit with a broken expansion, SIGHUP
                    extras = ["archive:\n  driver = redirect\n  condition = ${if eq{$sender_address_domain}{example.test}{yes}\n  data = archive@example.test\n  unseen",
                              "vacation:\n  driver = redirect\n  domains = +local_domains\n  data = ${lookup{$local_part}lsearch{/etc/exim4/vacation}}",
                              "aliases:\n  driver = redirect\n  domains = +local_domains\n  data = ${lookup{$local_part}lsearch{/etc/exim4/aliases}{$value}fail}x}",
                              "catchall:\n  driver = redirect\n  domains = +local_domains\n  data = ${substr_1_x:$local_part}"]
                    for extra in extras:
                        with br.occurrence(2.0):
                            write_conf(extra)
                            hup()
                            time.sleep(1.5)
                            drv.session("127.0.0.22", "mx1.partner.test", [(f"{rng.choice(USERS)}@partner.test", [f"{rng.choice(EXIM_USERS)}@example.test"])])
                            time.sleep(1)
                        write_conf()
                        proc = sv.procs.get("exim")
                        if proc is not None and proc.poll() is not None:
                            sv.forget("exim")
                            start()
                        else:
                            hup()
                        time.sleep(1.5)
                        queue_run()
                        br.between()
        finally:
            stop()
            sink.stop()
    return Source("exim4", "Exim", version_of([exim, "-bV"]),
                  "Exim mainlog (`yyyy-mm-dd hh:mm:ss [message id] message`: <= arrivals, => deliveries, == defers, ** bounces, "
                  "Completed, SMTP connection/rejection lines), log_selector +smtp_connection +smtp_protocol_error "
                  "+smtp_syntax_error +subject +delivery_size +smtp_confirmation +deliver_time...; warnings carry an "
                  "indented continuation line",
                  "exim4 -bdf -q15s as root in a mount namespace with its own /etc/exim4; smtplib clients: inbound mail "
                  "from 11 internet addresses to local users (1-3 recipients), authenticated submissions (PLAIN) relayed "
                  "to a partner smarthost (a local SMTP sink, not logged) and local users, an app server relaying "
                  "notifications; mailboxes (appendfile) on a 3 MB tmpfs emptied from time to time, forced queue runs "
                  "(-qff), SIGHUP re-execs every 20-40s, 2 clean restarts",
                  "relay_denied (4 open-relay probes), unknown_recipient (4), auth_failure (5 wrong passwords/unknown "
                  "users), protocol_error (5: pipelining before the banner, HTTP, TLS, bad commands, overlong address), "
                  "message_too_big (4x 300 KB > message_size_limit 200K), smarthost_down (4x sink stopped: defer), "
                  "smarthost_rejects (4x sink answering 550 (bounce) / 451 (defer)), mailbox_disk_full (4x tmpfs filled), "
                  "mailbox_permission_denied (4x mailbox chowned to root), bad_router_config (4 routers with broken "
                  "expansions + SIGHUP)", normal, br.errors)


# --------------------------------------------------------------------------
# unbound
# --------------------------------------------------------------------------

QTYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16, "AAAA": 28, "SRV": 33}


def dns_query(port: int, name: str, qtype: str = "A", tcp: bool = False, src: str = "127.0.0.1", rd: bool = True,
              timeout: float = 4) -> int:
    """One DNS query; the rcode (-1: no answer)."""
    qid = random.getrandbits(16)
    q = struct.pack(">HHHHHH", qid, 0x0100 if rd else 0, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".") if p) + b"\0"
    q += struct.pack(">HH", QTYPES[qtype], 1)
    try:
        if tcp:
            with socket.create_connection(("127.0.0.1", port), timeout, source_address=(src, 0)) as s:
                s.sendall(struct.pack(">H", len(q)) + q)
                resp = s.recv(4096)[2:]
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind((src, 0))
                s.settimeout(timeout)
                s.sendto(q, ("127.0.0.1", port))
                resp = s.recv(4096)
        return resp[3] & 0xF if len(resp) > 3 else -1
    except OSError:
        return -1


UNBOUND_CONF = """\
server:
  interface: 127.0.0.1
  port: {port}
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{work}"
  pidfile: "{work}/unbound.pid"
  use-syslog: no
  logfile: "{work}/unbound.log"
  log-time-ascii: yes
  verbosity: 1
  log-queries: yes
  log-replies: yes
  log-servfail: yes
  val-log-level: 2
  statistics-interval: 30
  num-threads: 1
  access-control: 127.0.0.0/8 allow
  access-control: 127.0.0.99/32 refuse
  access-control: 127.0.0.98/32 deny
  ip-ratelimit: 40
  do-not-query-localhost: no
  module-config: "validator iterator"
  trust-anchor: "secure.test. DS 31589 8 2 cde0d742d6998aa554a92d890f8184c698cfac8a26fa59875a990c03e576343c"
  domain-insecure: "example.test"
  domain-insecure: "shop.test"
  domain-insecure: "corp.test"
  domain-insecure: "10.in-addr.arpa"
  local-zone: "test." nodefault
  local-zone: "10.in-addr.arpa." nodefault
  local-zone: "internal.lan." static
  local-data: "gw.internal.lan. A 10.1.0.1"
  local-data: "nas.internal.lan. A 10.1.0.20"
  local-data: "printer.internal.lan. A 10.1.0.30"
  local-zone: "ads.example.test." always_nxdomain
  local-zone: "tracker.example.test." always_refuse
{extra}
forward-zone:
  name: "."
  forward-addr: 127.0.0.1@{upstream}
remote-control:
  control-enable: yes
  control-interface: 127.0.0.1
  control-port: {ctl}
  control-use-cert: no
"""

UNB_UPSTREAM = """\
server:
  interface: 127.0.0.1
  port: {port}
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{work}"
  use-syslog: no
  logfile: ""
  verbosity: 0
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "test." nodefault
  local-zone: "10.in-addr.arpa." nodefault
{zones}
"""

UNB_HEAD = re.compile(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d unbound\[\d+:\d+\] ")
UNB_QUERY = re.compile(r" info: \d+\.\d+\.\d+\.\d+ \S+ \w+ IN( (NOERROR|NXDOMAIN) [\d.]+ \d+ \d+)?$")


def unbound_template(line: str) -> str:
    m = UNB_HEAD.match(line)
    body = line[m.end():] if m else line
    return mask_names(re.sub(r"\b[\w-]+(\.[\w-]+)*\.(?=[\s:>]|$)", "NAME.", body))


def unbound_problem(line: str) -> bool:
    return bool(re.search(r" (warning|error|fatal error):|SERVFAIL|REFUSED|validation failure|ratelimit exceeded|FORMERR", line))


def unbound_echo(line: str) -> bool:
    return bool(UNB_QUERY.search(line))


def unbound_zones(rng: random.Random) -> str:
    out = []
    for zone in ["example.test", "shop.test", "corp.test", "secure.test"]:
        out.append(f'  local-zone: "{zone}." static')
        out.append(f'  local-data: "{zone}. SOA ns1.{zone}. hostmaster.{zone}. 2024120401 3600 900 604800 300"')
        out.append(f'  local-data: "{zone}. MX 10 mail.{zone}."')
        out.append(f'  local-data: "{zone}. TXT \\"v=spf1 mx -all\\""')
        for i, host in enumerate(["www", "mail", "api", "cdn", "ns1", "vpn", "git", "wiki", "db1", "db2", "app1", "app2"] + WORDS):
            out.append(f'  local-data: "{host}.{zone}. A 10.{len(zone)}.{i // 200}.{i % 200 + 1}"')
            if i % 3 == 0:
                out.append(f'  local-data: "{host}.{zone}. AAAA fd00::{len(zone):x}:{i:x}"')
        out.append(f'  local-data: "_ldap._tcp.{zone}. SRV 0 5 389 ldap.{zone}."')
    out.append('  local-zone: "10.in-addr.arpa." static')
    for i in range(1, 60):
        out.append(f'  local-data-ptr: "10.12.0.{i} host{i}.example.test"')
    return "\n".join(out)


def source_unbound(args) -> Source:
    unbound = need("/usr/sbin/unbound", "unbound")
    uctl = need("/usr/sbin/unbound-control", "unbound")
    rng = random.Random(f"{args.seed}-unbound")
    with tempfile.TemporaryDirectory(prefix="onb4-unbound-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, ctl_port, up_port = free_port(), free_port(), free_port()
        conf, up_conf = os.path.join(work, "unbound.conf"), os.path.join(work, "upstream.conf")
        logp = os.path.join(work, "unbound.log")

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, UNBOUND_CONF.format(port=port, work=work, upstream=up_port, ctl=ctl_port, extra=extra))

        write_conf()
        write_atomic(up_conf, UNB_UPSTREAM.format(port=up_port, work=work, zones=unbound_zones(rng)))

        def start_upstream() -> None:
            sv.start("upstream", [unbound, "-d", "-c", up_conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(50):
                if dns_query(up_port, "www.example.test", timeout=0.3) >= 0:
                    return

        def start() -> None:
            sv.start("unbound", [unbound, "-d", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(50):
                if dns_query(port, "gw.internal.lan", timeout=0.3) >= 0:
                    return
                time.sleep(0.1)

        def control(*cmd: str) -> None:
            subprocess.run([uctl, "-c", conf, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20, check=False)

        start_upstream()
        start()
        zones = ["example.test", "shop.test", "corp.test"]
        hosts = ["www", "mail", "api", "cdn", "ns1", "vpn", "git", "wiki", "db1", "db2", "app1", "app2"] + WORDS

        def client(r: random.Random) -> None:
            src = f"127.0.0.{r.randint(1, 24)}"
            for _ in range(r.randint(1, 6)):
                x = r.random()
                if x < 0.55:
                    name, qt = f"{r.choice(hosts)}.{r.choice(zones)}", r.choice(["A", "A", "A", "AAAA"])
                elif x < 0.65:
                    name, qt = r.choice(zones), r.choice(["MX", "TXT", "SOA", "NS"])
                elif x < 0.72:
                    name, qt = f"{r.randint(1, 59)}.0.12.10.in-addr.arpa", "PTR"
                elif x < 0.8:
                    name, qt = f"{r.choice(['gw', 'nas', 'printer'])}.internal.lan", "A"
                elif x < 0.85:
                    name, qt = f"_ldap._tcp.{r.choice(zones)}", "SRV"
                elif x < 0.92:
                    name, qt = f"{r.choice(['wwww', 'old', 'staging', 'test'])}{r.randint(1, 40)}.{r.choice(zones)}", "A"  # NXDOMAIN
                elif x < 0.96:
                    name, qt = f"{r.choice(WORDS)}.ads.example.test", "A"
                else:
                    name, qt = f"{r.choice(hosts)}.{r.choice(zones)}", "A"
                dns_query(port, name, qt, tcp=r.random() < 0.1, src=src)

        log, normal = FileLog(logp), []
        say(f"unbound on 127.0.0.1:{port} (upstream :{up_port}); normal phase...")
        t0, n, restarts, last_ctl = time.time(), 0, 0, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                for _ in range(rng.randint(2, 10)):
                    client(rng)
                if time.time() - last_ctl > rng.uniform(8, 20):
                    c = rng.random()
                    if c < 0.25:
                        control("reload")
                    elif c < 0.45:
                        control("flush_zone", rng.choice(zones))
                    elif c < 0.6:
                        control("local_data", f"tmp{rng.randint(1, 99)}.internal.lan. 300 IN A 10.1.9.{rng.randint(1, 250)}")
                    elif c < 0.75:
                        control("flush", f"{rng.choice(hosts)}.{rng.choice(zones)}")
                    elif c < 0.85:
                        control("flush_requestlist")
                    else:
                        control("stats_noreset")
                    last_ctl = time.time()
                if restarts < 2 and time.time() - t0 > 35 * (restarts + 1):
                    control("stop")
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        sv.procs["unbound"].wait(10)
                    sv.forget("unbound")
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.05, 0.2))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 100 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > MAX_NORMAL_S:
                    break
            time.sleep(1)
            normal += log.read_new()
            templates = {unbound_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, unbound_template, unbound_problem, unbound_echo,
                                             lambda x: bool(UNB_HEAD.match(x))))
            with Background(client, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("upstream_down"):  # the upstream resolver crashed
                    for i in range(5):
                        with br.occurrence(1.5):
                            sv.stop("upstream", signal.SIGKILL)
                            for _ in range(2):
                                dns_query(port, f"{rng.choice(['new', 'beta', 'cms', 'sso'])}{rng.randint(100, 999)}.{rng.choice(zones)}",
                                          rng.choice(["A", "MX"]), timeout=6)
                        start_upstream()
                        control("flush_infra", "all")
                        control("flush_bogus")
                        time.sleep(1)
                        br.between()
                with br.phase("upstream_frozen"):  # the upstream hangs (SIGSTOP) past the client's patience
                    for i in range(5):
                        with br.occurrence(2.0):
                            up = sv.procs["upstream"]
                            up.send_signal(signal.SIGSTOP)
                            dns_query(port, f"slow{rng.randint(100, 999)}.{rng.choice(zones)}", timeout=8)
                            up.send_signal(signal.SIGCONT)
                        control("flush_infra", "all")
                        time.sleep(1)
                        br.between()
                with br.phase("dnssec_bogus"):  # a zone with a trust anchor served unsigned
                    for i in range(5):
                        with br.occurrence(1.5):
                            dns_query(port, f"{rng.choice(hosts)}.secure.test", rng.choice(["A", "AAAA", "MX"]), timeout=6)
                        control("flush_bogus")
                        br.between()
                with br.phase("bad_config_reload"):  # config edits with mistakes, unbound-control reload
                    for extra in ["  local-zone: \"lab.lan.\" statik", "  access-control: 10.0.0.0/33 allow",
                                  "  cache-max-ttl: forever", "  local-data: \"x.internal.lan. A 10.1.0\"",
                                  "  forward-zone:\n  name: \"corp.test.\""]:
                        with br.occurrence(2.0):
                            write_conf(extra)
                            control("reload")
                            time.sleep(1)
                        write_conf()
                        proc = sv.procs.get("unbound")
                        if proc is not None and proc.poll() is not None:  # it exits on a config it cannot read
                            sv.forget("unbound")
                            start()
                        else:
                            control("reload")
                        time.sleep(1)
                        br.between()
                with br.phase("ratelimited"):  # a misbehaving client floods the resolver
                    for i in range(4):
                        with br.occurrence(1.5):
                            src = f"127.0.0.{rng.randint(30, 40)}"
                            for j in range(120):
                                dns_query(port, f"{rng.choice(hosts)}.{rng.choice(zones)}", src=src, timeout=0.2)
                        time.sleep(2)
                        br.between()
                with br.phase("refused_client"):  # clients outside the access control list
                    for i in range(5):
                        with br.occurrence(1.0):
                            dns_query(port, f"{rng.choice(hosts)}.{rng.choice(zones)}", src="127.0.0.99", timeout=2)
                            dns_query(port, f"{rng.choice(WORDS)}.tracker.example.test", timeout=2)
                with br.phase("bad_query"):  # broken resolver libraries, zone-transfer probes, CHAOS queries
                    q = b"\x03www\x0bexample\x04test\x00"
                    hdr = lambda qd=1: struct.pack(">HHHHHH", rng.getrandbits(16), 0x0100, qd, 0, 0, 0)
                    for payload in [hdr() + q[:9], hdr() + q + b"\x00\xfc\x00\x01", hdr() + b"\x04corp\x04test\x00\x00\xfb\x00\x01",
                                    hdr() + b"\x07version\x04bind\x00\x00\x10\x00\x03", hdr() + b"\x3fbroken"]:
                        with br.occurrence(1.0):
                            raw_send(port, payload, udp=True)
        finally:
            with contextlib.suppress(Exception):
                control("stop")
            time.sleep(0.5)
            sv.stop("unbound")
            sv.stop("upstream")
    return Source("unbound", "Unbound", version_of([unbound, "-V"]),
                  "unbound logfile with log-time-ascii (`Mon dd hh:mm:ss unbound[pid:tid] level: message`), verbosity 1, "
                  "log-queries + log-replies (`info: client name type class [rcode time cached size]`), log-servfail, "
                  "val-log-level 2, statistics-interval 30",
                  "unbound -d forwarding to an upstream unbound (not logged) serving example/shop/corp zones and a "
                  "reverse zone; local zones (static data, ad-block always_nxdomain/always_refuse); clients from 24 "
                  "addresses asking A/AAAA/MX/TXT/SOA/NS/SRV/PTR over UDP and TCP (some NXDOMAIN); unbound-control "
                  "every 8-20s (reload, flush, flush_zone, local_data, flush_requestlist, stats_noreset), 2 clean "
                  "restarts (unbound-control stop)",
                  "upstream_down (5x upstream SIGKILLed + queries), upstream_frozen (5x upstream SIGSTOPped + a query), "
                  "dnssec_bogus (5 queries into an unsigned zone with a trust anchor), bad_config_reload (5 broken configs "
                  "+ unbound-control reload; some make it exit), ratelimited (4x 120 queries from one address > "
                  "ip-ratelimit 40), refused_client (5x a refused address + an always_refuse zone), bad_query (5 raw "
                  "packets: truncated questions, AXFR, IXFR, CHAOS class)", normal, br.errors)


# --------------------------------------------------------------------------
# dovecot
# --------------------------------------------------------------------------

DOVECOT_CONF = """\
base_dir = {work}/run
state_dir = {work}/state
instance_name = onb4-{imap}
protocols = imap pop3
listen = 127.0.0.1
log_path = {work}/dovecot.log
log_timestamp = "%Y-%m-%d %H:%M:%S "
auth_verbose = yes
auth_mechanisms = plain login
disable_plaintext_auth = no
default_login_user = dovenull
default_internal_user = dovecot
verbose_proctitle = yes
mail_location = maildir:{mail}/%u/Maildir
mail_uid = mail
mail_gid = mail
first_valid_uid = 8
mail_plugins = mail_log notify
mail_max_userip_connections = 6
plugin {{
  mail_log_events = delete undelete expunge copy mailbox_delete mailbox_rename save flag_change mailbox_create
  mail_log_fields = uid box msgid size flags
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {work}/users
}}
userdb {{
  driver = static
  args = uid=mail gid=mail home={mail}/%u
}}
namespace inbox {{
  inbox = yes
  mailbox Sent {{
    special_use = \\Sent
  }}
  mailbox Trash {{
    special_use = \\Trash
  }}
  mailbox Archive {{
    special_use = \\Archive
  }}
}}
service imap-login {{
  inet_listener imap {{
    port = {imap}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service pop3-login {{
  inet_listener pop3 {{
    port = {pop3}
  }}
  inet_listener pop3s {{
    port = 0
  }}
}}
ssl = no
{extra}
"""

DC_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
DC_USERS = ["alice", "bob", "carol", "dave", "erin", "frank"]
DC_PASSWORDS = {u: f"{u[::-1]}-{i * 4099 % 997}" for i, u in enumerate(DC_USERS)}


def dovecot_template(line: str) -> str:
    m = DC_HEAD.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"\((\w+)\)<", "(_)<", body)
    body = re.sub(r"\((\w+),[\d.]+,", "(_,IP,", body)
    body = re.sub(r"/\S*", "PATH", body)
    return mask_names(body)


def dovecot_problem(line: str) -> bool:
    return bool(re.search(r": (Error|Fatal|Panic|Warning):", line))


def dovecot_echo(line: str) -> bool:
    return bool(re.search(r": Info: (Login: user=|Disconnected: Logged out|save:|copy from|delete:|expunge:|flag_change:|"
                          r"undelete:|Mailbox created:|mailbox_create:|msgid=)", line))


class ImapDriver:
    def __init__(self, imap: int, pop3: int, rng: random.Random, deliver):
        self.imap, self.pop3, self.rng, self.deliver = imap, pop3, rng, deliver

    def message(self, r: random.Random, size: int | None = None) -> bytes:
        body = "\r\n".join(" ".join(r.choice(WORDS) for _ in range(r.randint(4, 12))) for _ in range(r.randint(2, 20)))
        if size:
            body = ("z" * 76 + "\r\n") * (size // 78)
        return (f"From: {r.choice(USERS)}@partner.test\r\nTo: {r.choice(DC_USERS)}@example.test\r\n"
                f"Subject: {r.choice(['Invoice', 'Re: plan', 'Report', 'Hello', 'Ticket'])} {r.randint(1, 9999)}\r\n"
                f"Message-ID: <{r.getrandbits(48):x}@partner.test>\r\n\r\n{body}\r\n").encode()

    def imap_session(self, r: random.Random, user: str | None = None) -> None:
        user = user or r.choice(DC_USERS)
        try:
            m = imaplib.IMAP4("127.0.0.1", self.imap, timeout=15)
        except (OSError, imaplib.IMAP4.error, EOFError):
            return
        try:
            m.login(user, DC_PASSWORDS[user])
            for box in ("Archive", "Sent", "Trash"):
                if r.random() < 0.1:
                    m.create(box)
            typ, data = m.select("INBOX")
            count = int(data[0] or 0) if typ == "OK" else 0
            if count:
                lo = max(1, count - r.randint(1, 8))
                m.fetch(f"{lo}:{count}", "(FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS (SUBJECT FROM)])")
                m.store(f"{r.randint(lo, count)}", "+FLAGS", r.choice(["\\Seen", "\\Flagged", "\\Answered"]))
                x = r.random()
                if x < 0.3:
                    m.copy(f"{lo}:{r.randint(lo, count)}", "Archive")
                    m.store(f"{lo}", "+FLAGS", "\\Deleted")
                    m.expunge()
                elif x < 0.5:
                    m.store(f"{r.randint(lo, count)}", "+FLAGS", "\\Deleted")
                    m.expunge()
                elif x < 0.6:
                    m.search(None, "UNSEEN")
            if r.random() < 0.25:
                m.append("Sent", "\\Seen", None, self.message(r))
            if r.random() < 0.15:
                m.select("Trash")
                m.store("1:*", "+FLAGS", "\\Deleted")
                m.expunge()
            m.logout()
        except (imaplib.IMAP4.error, OSError, EOFError):
            with contextlib.suppress(Exception):
                m.shutdown()

    def pop_session(self, r: random.Random) -> None:
        user = r.choice(DC_USERS)
        try:
            p = poplib.POP3("127.0.0.1", self.pop3, timeout=15)
            p.user(user)
            p.pass_(DC_PASSWORDS[user])
            n, _ = p.stat()
            for i in range(1, min(n, r.randint(0, 3)) + 1):
                p.retr(i)
                if r.random() < 0.5:
                    p.dele(i)
            p.quit()
        except (poplib.error_proto, OSError, EOFError):
            pass

    def normal(self, r: random.Random) -> None:
        x = r.random()
        if x < 0.45:
            self.imap_session(r)
        elif x < 0.65:
            self.pop_session(r)
        else:
            for _ in range(r.randint(1, 3)):
                self.deliver(r.choice(DC_USERS), self.message(r))


def source_dovecot(args) -> Source:
    dovecot = need("/usr/sbin/dovecot", "dovecot-imapd")
    lda = need("/usr/lib/dovecot/dovecot-lda", "dovecot-core")
    rng = random.Random(f"{args.seed}-dovecot")
    mu = pwd.getpwnam("mail")
    with tempfile.TemporaryDirectory(prefix="onb4-dovecot-") as work, Group() as sv:
        os.chmod(work, 0o755)
        imap, pop3 = free_port(), free_port()
        mail = os.path.join(work, "mail")
        os.makedirs(mail)
        conf, logp = os.path.join(work, "dovecot.conf"), os.path.join(work, "dovecot.log")
        write_atomic(os.path.join(work, "users"), "".join(f"{u}:{{PLAIN}}{p}\n" for u, p in DC_PASSWORDS.items()))
        os.chmod(os.path.join(work, "users"), 0o644)

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, DOVECOT_CONF.format(work=work, mail=mail, imap=imap, pop3=pop3, extra=extra))
            os.chmod(conf, 0o644)

        write_conf()
        ns = Namespace(sv, "dovecot-ns", f"mount -t tmpfs -o size=4m,uid={mu.pw_uid},gid={mu.pw_gid},mode=0755 tmpfs {mail}")

        def start() -> None:
            sv.start("dovecot", ns.argv([dovecot, "-F", "-c", conf]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(imap)
            wait_port(pop3)

        def stop() -> None:
            sv.stop("dovecot")

        def master_pid() -> int | None:
            with contextlib.suppress(OSError, ValueError), open(os.path.join(work, "run", "master.pid")) as f:
                return int(f.read())
            return None

        def hup() -> None:
            pid = master_pid()
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGHUP)

        def deliver(user: str, msg: bytes) -> None:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run(ns.argv([lda, "-c", conf, "-d", user, "-f", f"{rng.choice(USERS)}@partner.test"]), input=msg,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20, check=False)

        def trim() -> None:  # the users' mailboxes are kept small (their clients delete old mail)
            ns.run(f"find {mail} -path '*/cur/*' -mmin +1 -size +1 -delete 2>/dev/null; "
                   f"[ $(du -sk {mail} | cut -f1) -gt 2500 ] && find {mail} -path '*/cur/*' -delete; true")

        def imap_procs(user: str) -> list[int]:
            out = []
            for pid in os.listdir("/proc"):
                if pid.isdigit():
                    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                        if re.match(r"dovecot(-[\w-]+)?/imap \[", cmd) and f"[{user} " in cmd:  # verbose_proctitle
                            out.append(int(pid))
            return out

        start()
        drv = ImapDriver(imap, pop3, rng, deliver)
        for u in DC_USERS:  # the mailboxes exist (outside any window)
            for _ in range(3):
                deliver(u, drv.message(rng))
            with contextlib.suppress(Exception):
                m = imaplib.IMAP4("127.0.0.1", imap, timeout=15)
                m.login(u, DC_PASSWORDS[u])
                for box in ("Archive", "Sent", "Trash"):
                    m.create(box)
                    m.subscribe(box)
                m.logout()
        log, normal = FileLog(logp), []
        say(f"dovecot on 127.0.0.1:{imap} (imap) / :{pop3} (pop3); normal phase...")
        t0, n, restarts, last_hup = time.time(), 0, 0, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                for _ in range(rng.randint(1, 5)):
                    drv.normal(rng)
                if rng.random() < 0.05:
                    trim()
                if time.time() - last_hup > rng.uniform(20, 40):
                    hup()
                    last_hup = time.time()
                if restarts < 2 and time.time() - t0 > 35 * (restarts + 1):
                    stop()
                    time.sleep(0.5)
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.05, 0.25))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 50 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > MAX_NORMAL_S:
                    break
            time.sleep(1)
            normal += log.read_new()
            templates = {dovecot_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, dovecot_template, dovecot_problem, dovecot_echo,
                                             lambda x: bool(DC_HEAD.match(x))))
            with Background(drv.normal, random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("auth_failure"):  # wrong passwords, unknown users, brute force
                    for i in range(6):
                        with br.occurrence(1.0):
                            user = rng.choice(DC_USERS + ["admin", "root", "test"])
                            with contextlib.suppress(Exception):
                                if i % 3 == 2:
                                    p = poplib.POP3("127.0.0.1", pop3, timeout=10)
                                    p.user(user)
                                    with contextlib.suppress(poplib.error_proto):
                                        p.pass_("hunter2")
                                    p.quit()
                                else:
                                    m = imaplib.IMAP4("127.0.0.1", imap, timeout=10)
                                    with contextlib.suppress(imaplib.IMAP4.error):
                                        m.login(user, rng.choice(["password", "123456", "Winter2024!"]))
                                    m.logout()
                with br.phase("protocol_garbage"):  # scanners, broken clients
                    for port_, p in [(imap, b"GET / HTTP/1.1\r\nHost: mail\r\n\r\n"), (imap, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(40)),
                                     (imap, b"a1 LOGIN\r\nb2 FOO\r\nc3 BAR\r\nd4 BAZ\r\ne5 QUX\r\nf6 XYZ\r\ng7 ABC\r\nh8 DEF\r\ni9 GHI\r\nj10 JKL\r\nk11 MNO\r\n"),
                                     (pop3, b"USER\r\nFOO\r\nBAR\r\nBAZ\r\nQUX\r\nXYZ\r\nABC\r\nDEF\r\nGHI\r\nJKL\r\nMNO\r\n"),
                                     (imap, b"a1 LOGIN " + b"x" * 70000 + b"\r\n")]:
                        with br.occurrence(1.5):
                            raw_send(port_, p, 0.8)
                with br.phase("process_killed"):  # the OOM killer picks a user's imap process
                    for i in range(4):
                        user = rng.choice(DC_USERS)
                        with br.occurrence(1.5):
                            with contextlib.suppress(Exception):
                                m = imaplib.IMAP4("127.0.0.1", imap, timeout=10)
                                m.login(user, DC_PASSWORDS[user])
                                m.select("INBOX")
                                time.sleep(0.3)
                                for pid in imap_procs(user)[-1:]:
                                    os.kill(pid, signal.SIGKILL)
                                time.sleep(0.5)
                                with contextlib.suppress(Exception):
                                    m.noop()
                with br.phase("mailbox_permission_denied"):  # a bad chmod by an admin script
                    for i in range(4):
                        user = DC_USERS[i]
                        with br.occurrence(1.5):
                            ns.run(f"chmod 000 {mail}/{user}/Maildir/cur")
                            drv.imap_session(rng, user)
                        ns.run(f"chmod 0700 {mail}/{user}/Maildir/cur")
                        time.sleep(0.5)
                        br.between()
                with br.phase("disk_full"):  # the mail filesystem fills up
                    for i in range(4):
                        user = rng.choice(DC_USERS)
                        with br.occurrence(1.5):
                            ns.run(f"dd if=/dev/zero of={mail}/.fill bs=4k 2>/dev/null; true")
                            if i % 2:
                                deliver(user, drv.message(rng, size=40000))
                            else:
                                with contextlib.suppress(Exception):
                                    m = imaplib.IMAP4("127.0.0.1", imap, timeout=10)
                                    m.login(user, DC_PASSWORDS[user])
                                    with contextlib.suppress(imaplib.IMAP4.error):
                                        m.append("Sent", "\\Seen", None, drv.message(rng, size=40000))
                                    m.logout()
                        ns.run(f"rm -f {mail}/.fill")
                        trim()
                        time.sleep(0.5)
                        br.between()
                with br.phase("corrupt_index"):  # index files damaged (crash during write, bad restore)
                    for i in range(4):
                        user = DC_USERS[(i + 2) % len(DC_USERS)]
                        with br.occurrence(1.5):
                            ns.run(f"f={mail}/{user}/Maildir/dovecot.index; [ -f $f ] || f={mail}/{user}/Maildir/dovecot.index.log; "
                                   f"dd if=/dev/urandom of=$f bs=1 count=64 seek=8 conv=notrunc 2>/dev/null; true")
                            drv.imap_session(rng, user)
                with br.phase("connection_limit"):  # a misconfigured client opening too many connections
                    for i in range(4):
                        user = rng.choice(DC_USERS)
                        with br.occurrence(1.5):
                            conns = []
                            for j in range(9):
                                with contextlib.suppress(Exception):
                                    m = imaplib.IMAP4("127.0.0.1", imap, timeout=10)
                                    conns.append(m)
                                    m.login(user, DC_PASSWORDS[user])
                            for m in conns:
                                with contextlib.suppress(Exception):
                                    m.logout()
                with br.phase("bad_config_reload"):  # config edits with mistakes, SIGHUP
                    for extra in ["mail_max_userip_connections = lots", "service imap {\n  process_limit = -5\n}",
                                  "protocol imap {\n  mail_plugins = $mail_plugins quota_typo\n}", "auth_mechanisms = plain cram-md6",
                                  "passdb {\n  driver = nonexistent\n}"]:
                        with br.occurrence(2.0):
                            write_conf(extra)
                            hup()
                            time.sleep(1)
                            drv.imap_session(rng)
                        write_conf()
                        if sv.procs["dovecot"].poll() is not None:
                            sv.forget("dovecot")
                            start()
                        else:
                            hup()
                        time.sleep(1.5)
                        br.between()
        finally:
            stop()
    return Source("dovecot", "Dovecot", version_of([dovecot, "--version"]),
                  "Dovecot log_path with log_timestamp (`yyyy-mm-dd hh:mm:ss service(user)<pid><session>: Level: message`, "
                  "services master, auth, imap-login, pop3-login, imap, pop3, lda), auth_verbose, mail_log plugin events",
                  "dovecot -F with its own base_dir/instance in a mount namespace, 6 passwd-file users, maildirs on a 4 MB "
                  "tmpfs; imaplib sessions (select, fetch, flag, copy to Archive, expunge, search, append to Sent, empty "
                  "Trash), poplib sessions (stat, retr, dele), mail delivered with dovecot-lda; old mail deleted from time "
                  "to time; SIGHUP reloads every 20-40s, 2 clean restarts",
                  "auth_failure (6 wrong passwords/unknown users, IMAP and POP3), protocol_garbage (5: HTTP, TLS, invalid "
                  "IMAP/POP3 commands, a 70 KB line), process_killed (4x a user's imap process SIGKILLed), "
                  "mailbox_permission_denied (4x Maildir/cur chmod 000 + a session), disk_full (4x tmpfs filled + APPEND "
                  "or LDA delivery), corrupt_index (4x bytes overwritten in dovecot.index + a session), connection_limit "
                  "(4x 9 logins of one user > mail_max_userip_connections 6), bad_config_reload (5 broken configs + SIGHUP)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# lighttpd
# --------------------------------------------------------------------------

LIGHTTPD_CONF = """\
server.modules = ("mod_access", "mod_auth", "mod_authn_file", "mod_redirect", "mod_status", "mod_proxy",
                  "mod_dirlisting", "mod_staticfile", "mod_accesslog")
server.document-root = "{www}"
server.port = {port}
server.bind = "127.0.0.1"
server.username = "www-data"
server.groupname = "www-data"
server.tag = "lighttpd"
server.max-request-size = 128
server.max-request-field-size = 8192
server.max-keep-alive-requests = 50
accesslog.filename = "/dev/stderr"
debug.log-request-header-on-error = "enable"
index-file.names = ("index.html")
mimetype.assign = (".html" => "text/html", ".css" => "text/css", ".js" => "application/javascript",
                   ".png" => "image/png", ".txt" => "text/plain", ".woff2" => "font/woff2", "" => "text/html")
url.redirect = ("^/old/(.*)$" => "/products/$1", "^/shop$" => "/")
status.status-url = "/server-status"
status.statistics-url = "/server-statistics"
auth.backend = "plain"
auth.backend.plain.userfile = "{work}/htpasswd"
auth.require = ("/admin/" => ("method" => "basic", "realm" => "staff", "require" => "valid-user"))
$HTTP["url"] =~ "^/files/" {{
  dir-listing.activate = "enable"
}}
$HTTP["url"] =~ "^/api/" {{
  proxy.balance = "round-robin"
  proxy.server = ("" => (("host" => "127.0.0.1", "port" => {api1}), ("host" => "127.0.0.1", "port" => {api2})))
}}
$HTTP["url"] =~ "^/reports/" {{
  proxy.server = ("" => (("host" => "127.0.0.1", "port" => {reports}, "read-timeout" => 2, "connect-timeout" => 2)))
}}
{extra}
"""

LT_ERR = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: \(")
LT_ACCESS = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "(?:[^"\\]|\\.)*" (\d{3}) ')


def lighttpd_status(line: str) -> int | None:
    m = LT_ACCESS.match(line)
    return int(m.group(1)) if m else None


def lighttpd_problem(line: str) -> bool:
    s = lighttpd_status(line)
    if s is not None:
        return s >= 400
    return bool(re.search(r"(?i)(fail|error|denied|timeout|down|refused|invalid|too long|too large|doesn't match|"
                          r"warning|not found|unknown|abort|bad )", line))


def lighttpd_echo(line: str) -> bool:
    s = lighttpd_status(line)
    return s is not None and s < 400


def lighttpd_template(line: str) -> str:
    m = LT_ERR.match(line)
    if m:
        body = re.sub(r"^\((\S+?)\.\d+\)", r"(\1)", line[m.end() - 1:])
    elif LT_ACCESS.match(line):
        body = "ACCESS " + re.sub(r'^\S+ \S+ \S+ \[[^\]]+\] "(\S+) \S+', r'"\1 URL', line)
    else:
        body = line
    return mask_names(body)


def build_www(www: str, rng: random.Random) -> None:
    def put(rel: str, data: bytes) -> None:
        path = os.path.join(www, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    page = lambda title: (f"<html><head><title>{title}</title></head><body>" + f"<p>{title}</p>" * rng.randint(3, 60)
                          + "</body></html>").encode()
    put("index.html", page("home"))
    for w in WORDS:
        put(f"products/{w}", page(w))
        put(f"static/img/{w}.png", rng.randbytes(rng.randint(500, 30000)))
        for i in range(1, 10):
            put(f"category/{w}/{i}", page(f"{w} {i}"))
        for i in range(1, 41):
            put(f"blog/{w}-{i}", page(f"{w} post {i}"))
    for i in range(1, 4):
        put(f"static/css/site-{i}.css", b"body{margin:0}" * rng.randint(10, 300))
    for i in range(1, 5):
        put(f"static/js/app-{i}.js", b"console.log(1);" * rng.randint(10, 900))
    for i in range(1, 3):
        put(f"static/fonts/inter-{i}.woff2", rng.randbytes(20000))
    for i in range(1, 12):
        put(f"files/releases/app-1.{i}.tar.gz", rng.randbytes(rng.randint(1000, 20000)))
        put(f"files/docs/manual-{i}.txt", b"manual\n" * rng.randint(10, 500))
    put("admin/index.html", page("admin"))
    put("admin/users.html", page("users"))


def source_lighttpd(args) -> Source:
    lighttpd = need("/usr/sbin/lighttpd", "lighttpd")
    rng = random.Random(f"{args.seed}-lighttpd")
    with tempfile.TemporaryDirectory(prefix="onb4-lighttpd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        www = os.path.join(work, "www")
        build_www(www, rng)
        subprocess.run(["chmod", "-R", "a+rX", www], check=False)
        backends = {"api1": ModeServer(Origin).start(), "api2": ModeServer(Origin).start(),
                    "reports": ModeServer(Origin, hang=6).start()}
        write_atomic(os.path.join(work, "htpasswd"), "admin:Adm1n-pass\nops:0ps-rota\nbackup:b4ckup\n")
        conf, logp = os.path.join(work, "lighttpd.conf"), os.path.join(work, "lighttpd.log")

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, LIGHTTPD_CONF.format(www=www, port=port, work=work, extra=extra,
                                                    **{k: b.port for k, b in backends.items()}))

        www_data = pwd.getpwnam("www-data")

        def start() -> None:
            with open(logp, "ab") as logf:
                os.chown(logp, www_data.pw_uid, www_data.pw_gid)  # mod_accesslog reopens /dev/stderr as www-data
                sv.start("lighttpd", [lighttpd, "-D", "-f", conf], stdout=logf, stderr=logf, cwd=work)
            wait_port(port)

        def graceful() -> None:
            proc = sv.procs.get("lighttpd")
            if proc:
                proc.send_signal(signal.SIGUSR1)

        write_conf()
        start()

        def visit(r: random.Random, clean: bool = False) -> None:
            ua = r.choice(UAS)
            for _ in range(r.randint(1, 6)):
                method, path = random_path(r, clean)
                if path.startswith("/api/v1/report"):
                    path = path.replace("/api/", "/reports/")
                headers = {"User-Agent": ua, "Host": r.choice(["www.example.test", "example.test", "shop.example.test"])}
                if path.startswith("/static/") and r.random() < 0.3:
                    headers["If-Modified-Since"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())
                x = r.random()
                if x < 0.15 and method not in ("GET", "HEAD"):
                    method = "GET"
                if x < 0.04:
                    path = f"/old/{r.choice(WORDS)}"
                elif x < 0.08:
                    path = r.choice(["/files/", "/files/releases/", "/files/docs/"])
                elif x < 0.12:
                    path = f"/reports/{r.choice(['daily', 'weekly', 'sales'])}?d={r.randint(1, 28)}"
                elif x < 0.15:
                    path = r.choice(["/admin/", "/admin/users.html"])
                    headers["Authorization"] = "Basic " + base64.b64encode(r.choice([b"admin:Adm1n-pass", b"ops:0ps-rota"])).decode()
                body = json.dumps({"sku": r.randint(1, 999)}).encode() if method in ("POST", "PUT") else None
                http_via(port, method, path, headers, body)

        log, normal = FileLog(logp), []
        say(f"lighttpd on 127.0.0.1:{port}; normal phase...")
        t0, n, restarts, last_usr1 = time.time(), 0, 0, time.time()
        try:
            while len(normal) < args.lines * 1.05 or time.time() - t0 < args.min_normal_s:
                n += 1
                for _ in range(rng.randint(2, 8)):
                    visit(rng)
                if rng.random() < 0.08:
                    http_via(port, "GET", rng.choice(["/server-status?auto", "/server-statistics"]), {"User-Agent": "Prometheus/2.45.0"})
                if time.time() - last_usr1 > rng.uniform(20, 40):
                    graceful()
                    last_usr1 = time.time()
                    time.sleep(0.5)
                if restarts < 1 and time.time() - t0 > 40:
                    sv.stop("lighttpd")
                    time.sleep(0.5)
                    start()
                    restarts += 1
                time.sleep(rng.uniform(0.05, 0.2))
                normal += log.read_new()
                pace(args, t0, len(normal))
                if n % 50 == 0:
                    say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
                if time.time() - t0 > MAX_NORMAL_S:
                    break
            time.sleep(5)  # lighttpd flushes its access log in batches
            normal += log.read_new()
            templates = {lighttpd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, lighttpd_template, lighttpd_problem, lighttpd_echo))

            def ensure_running() -> None:
                proc = sv.procs.get("lighttpd")
                if proc is None or proc.poll() is not None:
                    sv.forget("lighttpd")
                    start()

            with Background(lambda r: visit(r, True), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("backend_down"):  # the reports service crashed
                    for i in range(4):
                        with br.occurrence(3.0):
                            backends["reports"].stop()
                            for _ in range(2):
                                http_via(port, "GET", f"/reports/{rng.choice(['daily', 'monthly'])}?d={rng.randint(1, 28)}",
                                         {"User-Agent": rng.choice(UAS)})
                        backends["reports"].start()
                        time.sleep(3)
                        br.between()
                with br.phase("backend_timeout"):  # the reports service stuck past read-timeout
                    for i in range(4):
                        with br.occurrence(3.0):
                            backends["reports"].mode = "hang"
                            http_via(port, "GET", f"/reports/yearly?y={2020 + i}", {"User-Agent": rng.choice(UAS)}, timeout=15)
                            backends["reports"].mode = "ok"
                        time.sleep(4)
                        br.between()
                with br.phase("auth_failure"):  # wrong passwords on /admin/
                    for i in range(5):
                        with br.occurrence(3.0):
                            cred = rng.choice([b"admin:admin", b"ops:password", b"root:toor", b"admin:Adm1n-pas", b"backup:"])
                            http_via(port, "GET", rng.choice(["/admin/", "/admin/users.html"]),
                                     {"User-Agent": rng.choice(UAS), "Authorization": "Basic " + base64.b64encode(cred).decode()})
                with br.phase("bad_request"):  # garbage, TLS, oversized or malformed headers
                    for p in [b"GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(40),
                              b"GET / HTTP/1.1\r\nHost: example.test\r\nCookie: " + b"c" * 10000 + b"\r\n\r\n",
                              b"GET / HTTP/1.1\r\nHost: exa mple..test\r\n\r\n", b"GET /../../etc/passwd HTTP/9.9\r\n\r\n"]:
                        with br.occurrence(3.0):
                            raw_send(port, p, 0.5)
                with br.phase("request_too_large"):  # uploads over server.max-request-size
                    for i in range(4):
                        with br.occurrence(3.0):
                            http_via(port, "POST", "/api/v1/upload", {"User-Agent": rng.choice(UAS), "Content-Type": "application/octet-stream"},
                                     rng.randbytes(200_000 + i * 50_000))
                with br.phase("permission_denied"):  # files with a bad mode after a deploy
                    for i in range(4):
                        w = rng.choice(WORDS)
                        target = os.path.join(www, "products", w) if i % 2 else os.path.join(www, "files", "docs")
                        with br.occurrence(3.0):
                            os.chmod(target, 0o000)
                            http_via(port, "GET", f"/products/{w}" if i % 2 else "/files/docs/manual-3.txt", {"User-Agent": rng.choice(UAS)})
                            http_via(port, "GET", f"/products/{w}" if i % 2 else "/files/docs/", {"User-Agent": rng.choice(UAS)})
                        os.chmod(target, 0o755 if os.path.isdir(target) else 0o644)
                with br.phase("bad_config_restart"):  # config edits with mistakes, graceful restart
                    for extra in ['server.max-request-size = "lots"', 'proxy.server = ("" => (("host" => "127.0.0.1", "port" => 0, ))',
                                  'url.redirect += ("^/x$" => "/y"', 'server.modules += ("mod_nonexistent")', 'server.errorlog = "/nonexistent/dir/error.log"']:
                        with br.occurrence(3.0):
                            write_conf(extra)
                            graceful()
                            time.sleep(2)
                        write_conf()
                        ensure_running()
                        time.sleep(1)
                        br.between()
                        time.sleep(3)
                        br.between()
        finally:
            sv.stop("lighttpd")
            for b in backends.values():
                b.stop()
    return Source("lighttpd", "lighttpd", version_of([lighttpd, "-v"]),
                  "lighttpd error log (`yyyy-mm-dd hh:mm:ss: (file.c.line) message`) and access log (default format: `client "
                  "host user [date] \"request\" status bytes \"referer\" \"user-agent\"`) both on stderr, one stream; access "
                  "lines are flushed in batches, so they may come a few seconds after error lines",
                  "lighttpd -D: static site (pages, assets, IMS 304s, 404s), directory listings, redirects, two API backends "
                  "(round-robin mod_proxy, GET/POST/PUT/DELETE) and a reports backend (local python servers), basic auth for "
                  "/admin, server-status/statistics polled; graceful restarts (SIGUSR1) every 20-40s, 1 clean restart; "
                  "debug.log-request-header-on-error",
                  "backend_down (4x the reports backend stopped), backend_timeout (4x it hangs 6s > read-timeout 2s), "
                  "auth_failure (5 wrong basic-auth credentials), bad_request (5: garbage method, TLS, 10 KB header, bad "
                  "Host, bad HTTP version), request_too_large (4 uploads > max-request-size 128 KB), permission_denied "
                  "(4x a file/directory chmod 000), bad_config_restart (5 broken configs + SIGUSR1)",
                  normal, br.errors)



# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def generators() -> dict:
    gens = {"squid": source_squid, "exim4": globals().get("source_exim4"), "unbound": globals().get("source_unbound"),
            "dovecot": globals().get("source_dovecot"), "lighttpd": globals().get("source_lighttpd")}
    return {k: v for k, v in gens.items() if v}


def main() -> int:
    ap = arguments(__doc__, "onboarding_fourth", SOURCES, seed=4444)
    ap.add_argument("--min-normal-seconds", dest="min_normal_s", type=float, default=75,
                    help="shortest normal phase of each source (default 75)")
    args = ap.parse_args()
    args.lines = min(args.lines, HARD_CAP)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # a TERM still stops every child (Services)
    if os.geteuid() != 0:
        print("run as root (mount namespaces with tmpfs, programs dropping to their own users)", file=sys.stderr)
        return 2
    return generate(ap, args, generators(), SOURCES, __doc__)


if __name__ == "__main__":
    sys.exit(main())
