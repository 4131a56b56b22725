#!/usr/bin/env python3
"""Generate the ninth onboarding corpus: real log lines written by real programs, grouped into events.

A ninth corpus built exactly like benchmarks/onboarding_eighth_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py, of the first, fourth, fifth
and sixth scripts imported) from five programs that no other corpus uses.  Every line is the verbatim
output of a program started by this script on this machine; the script only *drives* the programs
(clients it runs) and *breaks* them (bad configs, killed processes, wrong passwords, garbage on the
wire, exhausted limits, timeouts...).  It never writes a log line itself.

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one bad restart,
one crash of a worker (the lines it causes).  The breakages are made one occurrence at a time, each
in its own time window followed by a pause for the program to finish logging about it; what the
program logs between two windows (recovery, restarting it) belongs to no event and is not kept.
Normal background traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends php8.2-fpm
uwsgi-core uwsgi-plugin-python3 pdns-server pdns-backend-bind coturn prosody; also util-linux and
python3; the FastCGI, HTTP, DNS and XMPP clients are python code in this script, pdns_control
(pdns-server) reloads zones, the TURN clients are turnutils_uclient and turnutils_peer (coturn).
Nothing is installed by this script, and no system service of these packages needs to run: each
daemon is started directly as a plain process, without systemd):

  php_fpm   PHP-FPM 8.2 (php-fpm8.2 -F, error_log to a file that also gets its stderr, log_level notice,
            catch_workers_output):
            `[05-Dec-2026 17:59:35] NOTICE: [pool www] child 19755 started`, `... NOTICE: [pool www]
            child 19383 exited with code 0 after 3.956315 seconds from start`, `... WARNING: [pool www]
            child 19383 said into stderr: "NOTICE: PHP message: ..."`, `... WARNING: [pool www] child
            19382, script '...' (request: "GET /i.php") executing too slow (1.05 sec), logging`.
            Two pools (www: dynamic, api: ondemand), pm.max_requests recycling children, a slowlog of
            2s, a request_terminate_timeout of 4s.  Normal: a python FastCGI web tier requesting a
            shop's pages, an API and the status / ping pages; the app logging to stderr; SIGUSR1 log
            reopens, SIGUSR2 graceful reloads, two clean restarts.
            Broken: slow requests, requests past request_terminate_timeout, PHP fatal errors (undefined
            functions, memory exhausted, parse errors, uncaught exceptions), workers killed by signals,
            pm.max_children reached, broken configs at a restart.
  uwsgi     uWSGI 2.0 (python3 plugin, --master, 3 workers, --http-socket, --logto a file):
            `[pid: 19862|app: 0|req: 1/1] 127.0.0.1 () {24 vars in 248 bytes} [Sat Dec  5 17:59:48 2026]
            GET /x => generated 2 bytes in 0 msecs (HTTP/1.1 200) 1 headers in 45 bytes (1 switches on
            core 0)`, the start-up banner, `spawned uWSGI worker 1 (pid: 19862, cores: 1)`, `DAMN !
            worker 1 (pid: 19862) died, ...`, HARAKIRI and python tracebacks.  Normal: a python WSGI
            shop API (pages, items, orders, searches, 404s, the app's own stderr lines), workers recycled
            by --max-requests, touch-reloads, a SIGHUP reload, two clean restarts.
            Broken: application exceptions, requests killed by harakiri, workers killed by signals,
            oversized requests, clients disconnecting from a streamed response, broken configs at a
            restart.
  pdns      PowerDNS Authoritative Server 4.7 (pdns_server, bind backend, --log-dns-queries, log on
            stderr with time stamps): `Dec 05 18:00:06 Remote 127.0.0.1 wants 'www.example.test|A', do =
            0, bufsize = 512: packetcache MISS`, `... Zone 'example.test' (/path) reloaded`, `...
            [bindbackend] Done parsing domains, 0 rejected, 1 new, 0 removed`.  Three zones.  Normal:
            UDP and TCP queries of resolvers, names that exist and do not, AXFRs of the secondaries,
            zone edits reloaded with pdns_control bind-reload-now, rediscover, purge, two clean restarts.
            Broken: AXFRs from hosts not allowed, NOTIFYs (slave support is off), zone files broken at a
            reload, garbage on the port, broken configs at a restart.  (Dynamic updates are not made:
            with dnsupdate off pdns refuses them without logging.)
  coturn    coturn 4.6 (turnserver -n -v --log-file=stdout, long-term credentials): `2: : session
            001000000000000002: new, realm=<example.test>, username=<alice>, lifetime=777`, `... realm
            <example.test> user <alice>: incoming packet ALLOCATE processed, success`, `... ERROR:
            check_stun_auth: ...`.  The number in front is the seconds since the start.  Normal:
            turnutils_uclient clients of several users relaying UDP / TCP to a turnutils_peer, with
            and without channels, two clean restarts.
            Broken: wrong passwords, unknown users, relaying to a denied peer address, the user quota
            exceeded, garbage on the port, broken configs at a restart.
  prosody   Prosody 0.12 (prosody -F, as user prosody, log file at level debug): `Dec 05 18:00:58
            c2s5571a711fdc0\tinfo\tClient connected`, `... Authenticated as alice@example.test`, `...
            Client disconnected: connection closed`, debug lines of connections, streams, SASL and
            stanzas sent and received (their first tag), start-up and shutdown lines.  Normal: python XMPP
            clients (SASL PLAIN over a local plain-text port) logging in, binding resources, sending
            presence, roster requests, pings and messages, sessions replaced by a new login,
            in-band registrations, SIGHUP reloads, two clean restarts.
            Broken: wrong passwords and unknown users, invalid XML, streams to unknown hosts, stanzas sent before authentication,
            stanzas over the size limit, broken configs at a restart.

Layout written under --out (default benchmarks/data/onboarding_ninth):

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

  * its level marks it as a problem (php_fpm WARNING / ERROR / ALERT lines other
    than the app's own notices said into stderr; uwsgi lines reporting deaths,
    harakiri, tracebacks, errors, invalid requests, failures and 5xx responses;
    pdns lines reporting errors, denials, refusals, failures and rejected zones;
    coturn ERROR lines and answers with error codes other than the 401 that asks
    for credentials; prosody lines of level warn / error), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; domain names, user and program names, zone and
    file names, connection ids and paths masked too) never occurred in the
    normal phase,

minus lines that merely echo the driving workload (uwsgi request lines of non-5xx
responses; pdns query lines; coturn successful requests; prosody connections,
authentications and disconnections).  An occurrence of which no line is kept
makes no event.

Usage:
    python benchmarks/onboarding_ninth_data.py --out benchmarks/data/onboarding_ninth \\
        [--sources php_fpm,uwsgi,pdns,coturn,prosody] [--lines 6000] [--seed 9999] \\
        [--min-normal-seconds 60]

Needs root (programs dropping to their own users).  Programs run on free 127.0.0.1 ports from temp
dirs and are always stopped (process groups killed), also on failure; nothing under /etc or any
system service is touched.
"""
from __future__ import annotations

import base64
import contextlib
import http.client
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

from onboarding_data import FileLog, MissingProgram, free_port, need, say, version_of, wait_port, write_atomic
from onboarding_eighth_data import tcp_blocker
from onboarding_fifth_data import normal_loop, run
from onboarding_fourth_data import QTYPES, dns_query, http_via, mask_names
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Source, as_user, children, entry_selector,
                                     raw_send)
from onboarding_sixth_data import TLS_HELLO, chown_tree, run_quiet

SOURCES = ["php_fpm", "uwsgi", "pdns", "coturn", "prosody"]
NAMES = re.compile(r"\b(?:%s)\b" % "|".join(USERS + WORDS))


def templater(head: re.Pattern, *subs: tuple[str, str]):
    """A template function: the time stamp (``head``) cut off, ``subs`` applied, then mask_names."""
    def template(line: str) -> str:
        body = head.sub("", line, count=1)
        for pat, rep in subs:
            body = re.sub(pat, rep, body)
        return mask_names(NAMES.sub("NAME", body))
    return template


def wait_for(path: str, needle: bytes, timeout: float = 10.0) -> None:
    """Wait until the tail of a log file shows ``needle`` (a daemon saying it is ready)."""
    end = time.time() + timeout
    while time.time() < end:
        time.sleep(0.1)
        with contextlib.suppress(OSError), open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 2000))
            if needle in f.read():
                return


# --------------------------------------------------------------------------
# php-fpm
# --------------------------------------------------------------------------

FPM_GLOBAL = """\
[global]
pid = {work}/fpm.pid
error_log = {work}/log/fpm.log
log_level = notice
daemonize = no
emergency_restart_threshold = 0
{extra_global}
[www]
user = {user}
group = www-data
listen = 127.0.0.1:{port}
pm = dynamic
pm.max_children = 5
pm.start_servers = 2
pm.min_spare_servers = 1
pm.max_spare_servers = 3
pm.max_requests = 30
pm.status_path = /fpm-status
ping.path = /ping
catch_workers_output = yes
request_slowlog_timeout = 2s
slowlog = {work}/log/www-slow.log
request_terminate_timeout = 4s
php_admin_value[memory_limit] = 32M
{extra_www}
[api]
user = www-data
group = www-data
listen = 127.0.0.1:{api_port}
pm = ondemand
pm.max_children = 4
pm.process_idle_timeout = 4s
pm.max_requests = 20
catch_workers_output = yes
request_slowlog_timeout = 2s
slowlog = {work}/log/api-slow.log
request_terminate_timeout = 4s
"""
FPM_PAGES = {
    "index.php": '<?php $p = $_GET["page"] ?? 1; echo "<h1>Shop</h1>"; foreach (range(1, 20) as $i) echo "<li>item $i</li>";',
    "product.php": '<?php $id = (int)($_GET["id"] ?? 0);\n'
                   'if ($id % 3 == 0) error_log("catalog: cache miss for product $id, loaded in " . random_int(2, 40) . " ms");\n'
                   'echo json_encode(["id" => $id, "name" => "item-$id", "price" => $id * 3.5]);',
    "cart.php": '<?php $u = $_GET["user"] ?? "guest"; $n = (int)($_GET["n"] ?? 1);\n'
                'if ($n > 3) error_log("cart: $u has $n items, applying bulk discount");\necho "cart ok";',
    "checkout.php": '<?php $u = $_GET["user"] ?? "guest"; $o = random_int(1000, 99999);\n'
                    'error_log("checkout: order $o placed by $u"); usleep(random_int(1000, 50000)); echo "order $o";',
    "search.php": '<?php $q = $_GET["q"] ?? ""; $t = random_int(1, 80); usleep($t * 1000);\n'
                  'error_log("search: \'$q\' returned " . random_int(0, 40) . " results in $t ms"); echo "results for " . htmlspecialchars($q);',
    "old.php": '<?php $d = strftime("%Y"); echo $d;',  # PHP 8.1 deprecation notices, part of normal life
    "api.php": '<?php header("Content-Type: application/json"); $r = $_GET["r"] ?? "items";\n'
               'if ($r === "report") error_log("api: report generated in " . random_int(10, 900) . " ms");\n'
               'echo json_encode(["resource" => $r, "ok" => true]);',
    "slow.php": '<?php sleep((int)($_GET["s"] ?? 0)); usleep((int)($_GET["ms"] ?? 0) * 1000); echo "done";',
    "fatal.php": '<?php $mode = $_GET["m"] ?? "fn";\n'
                 'if ($mode === "fn") { echo calculate_shipping(3); }\n'
                 'if ($mode === "mem") { $a = []; while (true) $a[] = str_repeat("x", 1 << 20); }\n'
                 'if ($mode === "exc") { throw new RuntimeException("payment gateway returned an empty response"); }\n'
                 'if ($mode === "type") { echo strlen([1, 2]); }\n'
                 'if ($mode === "inc") { require "/srv/app/config/database.php"; }',
    "broken.php": '<?php\nfunction total($items) {\n  return array_sum($items)\n}\necho total([1, 2]);',
}
FPM_HEAD = re.compile(r"^\[\d\d-\w{3}-\d{4} [\d:]+\] ")
fpm_template = templater(FPM_HEAD, (r'"(?:GET|POST) [^"]*"', '"REQ"'), (r"'/[^']*'", "'PATH'"), (r"/[\w./-]+", "PATH"))


def fpm_problem(line: str) -> bool:
    m = re.match(r"^\[[^\]]+\] (\w+): ", line)
    if not m or m.group(1) not in ("WARNING", "ERROR", "ALERT", "EMERGENCY"):
        return False
    return not re.search(r'said into stderr: "NOTICE: PHP message: (cart|checkout|api|catalog|search): |PHP Deprecated', line)


def fcgi_record(kind: int, rid: int, content: bytes) -> bytes:
    return struct.pack(">BBHHBB", 1, kind, rid, len(content), 0, 0) + content


def fcgi_pair(k: str, v: str) -> bytes:
    def ln(b: bytes) -> bytes:
        return bytes([len(b)]) if len(b) < 128 else struct.pack(">I", len(b) | 0x80000000)
    return ln(k.encode()) + ln(v.encode()) + k.encode() + v.encode()


def fcgi_request(port: int, root: str, uri: str, method: str = "GET", body: bytes = b"", timeout: float = 10,
                 src: str = "127.0.0.1") -> bytes:
    """One FastCGI request (as a web server would make it); the raw answer, b"" when it failed."""
    path, _, qs = uri.partition("?")
    params = {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "nginx/1.22.1", "REQUEST_METHOD": method,
              "SCRIPT_FILENAME": root + path if path.endswith(".php") else path, "SCRIPT_NAME": path,
              "REQUEST_URI": uri, "DOCUMENT_URI": path, "QUERY_STRING": qs, "DOCUMENT_ROOT": root,
              "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": src, "REMOTE_PORT": str(random.randint(30000, 60000)),
              "SERVER_ADDR": "127.0.0.1", "SERVER_PORT": "443", "SERVER_NAME": "shop.example.test",
              "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/x-www-form-urlencoded" if body else ""}
    data = fcgi_record(1, 1, struct.pack(">HB5x", 1, 0)) + fcgi_record(4, 1, b"".join(fcgi_pair(k, v) for k, v in params.items()))
    data += fcgi_record(4, 1, b"") + (fcgi_record(5, 1, body) if body else b"") + fcgi_record(5, 1, b"")
    out = b""
    with contextlib.suppress(OSError):
        with socket.create_connection(("127.0.0.1", port), timeout) as s:
            s.sendall(data)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
    return out


def source_php_fpm(args) -> Source:
    fpm = need("/usr/sbin/php-fpm8.2", "php8.2-fpm")
    rng = random.Random(f"{args.seed}-php_fpm")
    with tempfile.TemporaryDirectory(prefix="onb9-php-fpm-") as work, Group() as sv:
        os.chmod(work, 0o755)
        root = os.path.join(work, "www")
        os.makedirs(root)
        os.makedirs(os.path.join(work, "log"))
        for name, code in FPM_PAGES.items():
            write_atomic(os.path.join(root, name), code + "\n")
        chown_tree(root, "www-data")
        port, api_port = free_port(), free_port()
        conf, logp = os.path.join(work, "php-fpm.conf"), os.path.join(work, "log", "fpm.log")

        def write_conf(**kw) -> None:
            vals = {"work": work, "port": port, "api_port": api_port, "user": "www-data", "extra_global": "", "extra_www": ""}
            vals.update(kw)
            write_atomic(conf, FPM_GLOBAL.format(**vals))

        write_conf()

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what php-fpm says before it opens its error_log goes to the same file
                sv.start("fpm", [fpm, "-F", "-y", conf, "-d", "error_log=", "-d", "log_errors=1"], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                wait_port(api_port)

        def stop() -> None:
            sv.stop("fpm", signal.SIGQUIT, 20)

        def req(uri: str, pool: str = "www", timeout: float = 10) -> bytes:
            return fcgi_request(port if pool == "www" else api_port, root, uri, timeout=timeout)

        def web(r: random.Random) -> None:
            x, user = r.random(), r.choice(USERS)
            if x < 0.25:
                req(f"/index.php?page={r.randint(1, 9)}")
            elif x < 0.45:
                req(f"/product.php?id={r.randint(1, 400)}")
            elif x < 0.55:
                req(f"/cart.php?user={user}&n={r.randint(1, 6)}")
            elif x < 0.6:
                req(f"/checkout.php?user={user}")
            elif x < 0.72:
                req(f"/search.php?q={r.choice(WORDS)}")
            elif x < 0.74:
                req("/old.php")
            elif x < 0.95:
                req(f"/api.php?r={r.choice(['items', 'stock', 'prices', 'report', 'users'])}", "api")
            elif x < 0.98:
                req("/ping", r.choice(["www"]))
            else:
                req("/fpm-status?json" if r.random() < 0.5 else "/fpm-status")

        start()
        log = FileLog(logp)
        say(f"php-fpm on 127.0.0.1:{port} (www) / {api_port} (api); normal phase...")
        state = {"restarts": 0, "usr1": time.time(), "usr2": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(6, 16)):
                web(rng)
            if time.time() - state["usr1"] > rng.uniform(20, 40):
                sv.procs["fpm"].send_signal(signal.SIGUSR1)
                state["usr1"] = time.time()
            if state["usr2"] < 2 and elapsed > 18 + 25 * state["usr2"]:
                sv.procs["fpm"].send_signal(signal.SIGUSR2)
                state["usr2"] += 1
                time.sleep(0.5)
            if state["restarts"] < 2 and elapsed > 30 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "php_fpm", round_fn)
            templates = {fpm_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, fpm_template, fpm_problem))

            def worker_pids() -> list[int]:
                return children(sv.procs["fpm"].pid)

            with Background(web, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("slow_request"):  # a report and a search taking 3-3.5 s (slowlog at 2 s)
                    for uri in ["/slow.php?s=3", "/slow.php?ms=3500", "/slow.php?s=3"]:
                        with br.occurrence(2.0):
                            req(uri)
                with br.phase("request_timeout"):  # past request_terminate_timeout (4 s)
                    for uri, pool in [("/slow.php?s=9", "www"), ("/slow.php?s=12", "api"), ("/slow.php?s=8", "www")]:
                        with br.occurrence(2.0):
                            req(uri, pool, timeout=15)
                with br.phase("php_fatal"):  # bugs in the code: fatal errors
                    for mode in ["fn", "mem", "exc", "type", "inc", "broken"]:
                        with br.occurrence(1.5):
                            req("/broken.php" if mode == "broken" else f"/fatal.php?m={mode}", rng.choice(["www", "api"]))
                with br.phase("worker_killed"):  # a worker killed (OOM killer, a segfault in an extension, an abort)
                    for sig in [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS]:
                        with br.occurrence(2.0):
                            pids = worker_pids()
                            if pids:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(rng.choice(pids), sig)
                with br.phase("max_children"):  # a burst of slow requests: more than pm.max_children (5)
                    for burst in [8, 10, 9]:
                        with br.occurrence(2.0):
                            threads = [threading.Thread(target=req, args=("/slow.php?ms=1800",), kwargs={"timeout": 15})
                                       for _ in range(burst)]
                            for t in threads:
                                t.start()
                            for t in threads:
                                t.join(20)
                        time.sleep(2)
                        br.between()
                with br.phase("bad_config_restart"):  # php-fpm.conf edits with mistakes, php-fpm restarted
                    blocker = tcp_blocker()
                    for kw in [{"user": "www-deploy"}, {"extra_www": "pm.max_children = 0\n"},
                               {"extra_www": "pm = adaptive\n"}, {"port": blocker.getsockname()[1]},
                               {"extra_global": "log_level = verbose\n"}, {"extra_www": "listen.backlog = [\n"},
                               {"extra_www": "slowlog = /nonexistent/log/slow.log\nrequest_slowlog_timeout = 1s\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(2)
                            req("/ping", timeout=2)
                        write_conf()
                        sv.stop("fpm", signal.SIGQUIT, 10)
                        sv.forget("fpm")
                        start()
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("php_fpm", "PHP-FPM (php-fpm8.2)", version_of([fpm, "-v"]),
                  "php-fpm error_log (its stderr appended to the same file), log_level notice, catch_workers_output (`[05-Dec-2026 17:59:35] NOTICE: [pool www] child "
                  "19755 started`, `... NOTICE: [pool www] child 19383 exited with code 0 after 3.956315 seconds from start`, "
                  "`... WARNING: [pool www] child 19383 said into stderr: \"NOTICE: PHP message: ...\"`, `... WARNING: ... "
                  "executing too slow (1.05 sec), logging`, `... ERROR: ...`)",
                  "php-fpm8.2 -F (pools www: dynamic, max_children 5, and api: ondemand, idle timeout 4s; pm.max_requests "
                  "recycling children; slowlog 2s; request_terminate_timeout 4s) with a python FastCGI web tier: shop pages, "
                  "products, carts, checkouts, searches, an API, ping and status pages, the app's own stderr notices and "
                  "deprecation notices; SIGUSR1 log reopens every 20-40s, 2 SIGUSR2 reloads, 2 clean restarts",
                  "slow_request (3 requests of 3-3.5s), request_timeout (3 requests past request_terminate_timeout), php_fatal "
                  "(6: an undefined function, memory exhausted, an uncaught exception, a TypeError, a missing require, a parse "
                  "error), worker_killed (4 workers killed with SIGKILL / SIGSEGV / SIGABRT / SIGBUS), max_children (3 bursts "
                  "of 8-10 requests of 1.8s > pm.max_children 5), bad_config_restart (7: an unknown user, max_children 0, an "
                  "unknown pm, the port in use, a bad log_level, a syntax error, a slowlog in a missing directory)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# uwsgi
# --------------------------------------------------------------------------

UWSGI_APP = r'''
import json, os, random, sys, time

ITEMS = {i: {"id": i, "name": "item-%d" % i, "stock": i % 17} for i in range(1, 300)}


def application(env, start):
    path, method = env.get("PATH_INFO", "/"), env.get("REQUEST_METHOD", "GET")
    qs = dict(p.split("=", 1) for p in env.get("QUERY_STRING", "").split("&") if "=" in p)
    if path == "/slow":
        time.sleep(float(qs.get("s", "1")))
    if path == "/stream":
        start("200 OK", [("Content-Type", "text/csv")])
        def rows():
            for i in range(int(qs.get("n", "200"))):
                time.sleep(0.01)
                yield (("%d,item-%d,%d\n" % (i, i, i * 7)) * 400).encode()
        return rows()
    if path == "/export":
        raise ValueError("export format %r is not supported" % qs.get("fmt"))
    if path == "/api/orders" and method == "POST":
        body = json.loads(env["wsgi.input"].read(int(env.get("CONTENT_LENGTH") or 0)) or b"{}")
        if "qty" in body:
            order = random.randint(1000, 99999)
            if body["qty"] > 5:
                print("order %d: large order of %d items by %s" % (order, body["qty"], body["user"]), file=sys.stderr)
            start("201 Created", [("Content-Type", "application/json")])
            return [json.dumps({"order": order}).encode()]
        total = body["price"] / body["count"]
        start("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"total": total}).encode()]
    if path == "/report":
        import reportlab_pdf_export  # noqa: F401  (a dependency missing on this server)
    if path.startswith("/api/items/"):
        i = int(path.rsplit("/", 1)[1])
        if i not in ITEMS:
            start("404 Not Found", [("Content-Type", "application/json")])
            return [b'{"error": "no such item"}']
        start("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(ITEMS[i]).encode()]
    if path in ("/", "/health", "/api/items", "/search"):
        start("200 OK", [("Content-Type", "text/html")])
        return [("<h1>%s</h1>" % path).encode() * 10]
    if path == "/login" and method == "POST":
        start("302 Found", [("Location", "/")])
        return [b""]
    start("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found"]
'''
UWSGI_HEAD = re.compile(r"^(?:\w{3} \w{3} [ \d]\d [\d:]{8} \d{4} - )")
uwsgi_template = templater(UWSGI_HEAD, (r"\[pid: \d+\|app: -?\d+\|req: \d+/\d+\] \S+ \(\S*\) \{[^}]*\} \[[^\]]+\] \w+ \S+",
                                        "[REQ] METHOD URI"), (r"\b(GET|POST|HEAD|PUT) /\S*", r"\1 URI"),
                            (r"/[\w./-]+", "PATH"))


def uwsgi_problem(line: str) -> bool:
    if re.search(r"\(HTTP/1\.\d 5\d\d\)", line):
        return True
    if line.startswith("[pid: "):
        return False
    return bool(re.search(r"DAMN|HARAKIRI|Traceback|Error|error|!!!|invalid|unable|failed|SIGPIPE|no app loaded|"
                          r"Address already in use|unrecognized", line))


def uwsgi_echo(line: str) -> bool:
    return bool(re.match(r"^\[pid: \d+\|", line)) and not re.search(r"\(HTTP/1\.\d 5\d\d\)", line)


def source_uwsgi(args) -> Source:
    uwsgi = need("/usr/bin/uwsgi", "uwsgi-core")
    if not os.path.exists("/usr/lib/uwsgi/plugins/python3_plugin.so"):
        raise MissingProgram("the python3 plugin of uwsgi not found -- install it with: apt-get install uwsgi-plugin-python3")
    rng = random.Random(f"{args.seed}-uwsgi")
    with tempfile.TemporaryDirectory(prefix="onb9-uwsgi-") as work, Group() as sv:
        os.chmod(work, 0o755)
        app, logp, reload_file = os.path.join(work, "shop.py"), os.path.join(work, "uwsgi.log"), os.path.join(work, "reload")
        write_atomic(app, UWSGI_APP)
        write_atomic(reload_file, "")
        port = free_port()
        chown_tree(work, "www-data")

        def argv(extra: list[str] | None = None, wsgi: str = app, p: int | None = None) -> list[str]:
            return [uwsgi, "--plugin", "python3", "--master", "--processes", "3", "--http-socket", f"127.0.0.1:{p or port}",
                    "--wsgi-file", wsgi, "--uid", "www-data", "--gid", "www-data", "--max-requests", "400",
                    "--harakiri", "4", "--logto", logp, "--pidfile", os.path.join(work, "uwsgi.pid"), "--touch-reload",
                    reload_file, "--need-app", "--die-on-term", "--buffer-size", "4096", *(extra or [])]

        def start(wait: bool = True, **kw) -> None:
            with open(logp, "ab") as logf:  # what uwsgi says before it opens --logto goes to the same file
                shutil.chown(logp, "www-data", "www-data")
                sv.start("uwsgi", argv(**kw), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("uwsgi", signal.SIGTERM, 20)

        def get(path: str, method: str = "GET", body: bytes | None = None, timeout: float = 10) -> int:
            return http_via(port, method, path, {"Content-Type": "application/json"} if body else None, body, timeout=timeout)

        def client(r: random.Random) -> None:
            x = r.random()
            if x < 0.3:
                get(f"/api/items/{r.randint(1, 320)}")
            elif x < 0.45:
                get(r.choice(["/", "/api/items", "/health", f"/search?q={r.choice(WORDS)}"]))
            elif x < 0.6:
                get("/api/orders", "POST", f'{{"user": "{r.choice(USERS)}", "qty": {r.randint(1, 9)}}}'.encode())
            elif x < 0.7:
                get("/login", "POST", b'{"user": "x"}')
            elif x < 0.75:
                get(r.choice(["/favicon.ico", "/robots.txt", "/wp-login.php", "/static/app.js"]))
            elif x < 0.78:
                get(f"/stream?n={r.randint(1, 4)}")
            else:
                get(f"/api/items/{r.randint(1, 50)}")

        start()
        log = FileLog(logp)
        say(f"uwsgi on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "reloads": 0, "hup": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(3, 12)):
                client(rng)
            if state["reloads"] < 3 and elapsed > 12 + 18 * state["reloads"]:  # a deploy: touch-reload
                os.utime(reload_file)
                state["reloads"] += 1
                time.sleep(2)
            if state["hup"] < 1 and elapsed > 40:
                sv.procs["uwsgi"].send_signal(signal.SIGHUP)
                state["hup"] += 1
                time.sleep(2)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.03, 0.15))

        try:
            normal = normal_loop(args, log, "uwsgi", round_fn)
            templates = {uwsgi_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, uwsgi_template, uwsgi_problem, uwsgi_echo))

            def restart_clean() -> None:
                sv.stop("uwsgi", signal.SIGTERM, 10)
                sv.forget("uwsgi")
                start()

            with Background(client, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("app_exception"):  # bugs: exceptions escaping the application
                    for path, method, body in [("/export?fmt=xlsx", "GET", None), ("/api/orders", "POST", b'{"price": 10, "count": 0}'),
                                               ("/api/orders", "POST", b'{"user": "bob", "qty": 2'), ("/report", "GET", None),
                                               ("/api/items/12abc", "GET", None), ("/api/orders", "POST", b'{"price": 3}')]:
                        with br.occurrence(1.5):
                            get(path, method, body)
                with br.phase("harakiri"):  # requests hanging past --harakiri 4
                    for s in [8, 10, 9]:
                        with br.occurrence(2.0):
                            get(f"/slow?s={s}", timeout=12)
                        time.sleep(1)
                        br.between()
                with br.phase("worker_killed"):  # workers killed (OOM killer, a segfault in a C extension, ...)
                    for sig in [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL]:
                        with br.occurrence(2.0):
                            pids = children(sv.procs["uwsgi"].pid)
                            if pids:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(rng.choice(pids), sig)
                        time.sleep(1)
                        br.between()
                with br.phase("oversized_request"):  # requests over --buffer-size 4096
                    for size in [5000, 9000, 20000, 6000]:
                        with br.occurrence(1.5):
                            http_via(port, "GET", "/api/items", {"Cookie": "session=" + "a" * size}, timeout=3)
                with br.phase("client_disconnect"):  # clients going away in the middle of a streamed export
                    for wait in [0.3, 0.5, 0.2, 0.4]:
                        with br.occurrence(2.0):
                            with contextlib.suppress(OSError):
                                with socket.create_connection(("127.0.0.1", port), 5) as s:
                                    s.sendall(b"GET /stream?n=400 HTTP/1.1\r\nHost: shop\r\n\r\n")
                                    s.recv(1000)
                                    time.sleep(wait)
                                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                            time.sleep(1.5)
                with br.phase("bad_config_restart"):  # uwsgi restarted with broken options / a broken app
                    blocker = tcp_blocker()
                    broken_app = os.path.join(work, "shop_broken.py")
                    write_atomic(broken_app, UWSGI_APP.replace("import json, os", "import json, os, flask_cors"))
                    syntax_app = os.path.join(work, "shop_syntax.py")
                    write_atomic(syntax_app, UWSGI_APP.replace("def application(env, start):", "def application(env, start)"))
                    for kw in [{"extra": ["--procesess", "3"]}, {"wsgi": os.path.join(work, "shop_v2.py")},
                               {"wsgi": broken_app}, {"wsgi": syntax_app}, {"p": blocker.getsockname()[1]},
                               {"extra": ["--processes", "many"]}]:
                        stop()
                        br.between()
                        with br.occurrence(1.5):
                            start(wait=False, **kw)
                            time.sleep(2.5)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("uwsgi", "uWSGI", version_of([uwsgi, "--version"]),
                  "uwsgi --logto file (`[pid: 19862|app: 0|req: 1/1] 127.0.0.1 () {24 vars in 248 bytes} [Sat Dec  5 17:59:48 "
                  "2026] GET /x => generated 2 bytes in 0 msecs (HTTP/1.1 200) 1 headers in 45 bytes (1 switches on core 0)`, the "
                  "start-up banner, `spawned uWSGI worker 1 (pid: 19862, cores: 1)`, `DAMN ! worker 1 (pid: 19862) died, ...`, "
                  "`Sat Dec  5 17:59:52 2026 - HARAKIRI ...`, python tracebacks)",
                  "uwsgi (python3 plugin, master + 3 workers as www-data, --http-socket, --max-requests 400, --harakiri 4, "
                  "--need-app) running a python WSGI shop API, with python HTTP clients: pages, items, orders (the app's own "
                  "stderr notes on large orders), logins, 404s, small CSV streams; 3 touch-reloads, a SIGHUP reload, 2 clean "
                  "restarts",
                  "app_exception (6 requests raising ValueError / ZeroDivisionError / JSONDecodeError / ImportError / KeyError), "
                  "harakiri (3 requests hanging 8-10s), worker_killed (4 workers killed with SIGKILL / SIGSEGV / SIGABRT), "
                  "oversized_request (4 requests over --buffer-size 4096), client_disconnect (4 clients resetting a streamed "
                  "export), bad_config_restart (6: an unknown option, a missing wsgi file, an app importing a missing module, a "
                  "syntax error, the port in use, a non-numeric option)", normal, br.errors)


# --------------------------------------------------------------------------
# pdns
# --------------------------------------------------------------------------

PDNS_ZONES = ["example.test", "shop.test", "10.in-addr.arpa"]
PDNS_HOSTS = ["www", "api", "mail", "smtp", "vpn", "git", "ci", "db1", "db2", "cache", "cdn", "static", "intranet", "wiki"]
PDNS_CONF = """\
launch={launch}
bind-config={work}/named.conf
local-address=127.0.0.1
local-port={port}
daemon=no
guardian=no
disable-syslog=yes
log-timestamp=yes
loglevel=6
log-dns-queries=yes
socket-dir={work}
allow-axfr-ips=127.0.0.1,127.0.0.2
allow-notify-from=127.0.0.3
webserver=no
setuid=pdns
setgid=pdns
max-tcp-connections-per-client=4
{extra}"""
PDNS_HEAD = re.compile(r"^\w{3} \d\d [\d:]{8} ")
pdns_template = templater(PDNS_HEAD, (r"'[^']*'", "'NAME'"), (r"\([^)]*\)", "(PATH)"), (r"/[\w./-]+", "PATH"))


def pdns_problem(line: str) -> bool:
    return bool(re.search(r"[Ee]rror|denied|[Nn]ot authorized|[Rr]efus|[Uu]nable|[Ff]atal|[Ww]arning|[Rr]ejected [^0]|"
                          r"\[rejected\]|[Ff]ail|[Ee]xception|disabled|[Dd]ropping|[Mm]alformed|not a |[Ll]imit", line))


def pdns_echo(line: str) -> bool:
    return bool(re.search(r"\bRemote \S+ wants '", line))


def pdns_zone(origin: str, serial: int, rng: random.Random, extra: str = "") -> str:
    out = [f"$TTL 300\n@ IN SOA ns1.example.test. hostmaster.example.test. {serial} 3600 600 86400 300\n",
           "@ IN NS ns1.example.test.\n@ IN NS ns2.example.test.\n"]
    if origin.endswith("arpa"):
        out += [f"{i}.0.0 IN PTR {h}.example.test.\n" for i, h in enumerate(PDNS_HOSTS, 5)]
    else:
        out.append("@ IN A 10.0.0.5\n@ IN MX 10 mail\n@ IN TXT \"v=spf1 mx -all\"\nns1 IN A 127.0.0.1\nns2 IN A 127.0.0.2\n")
        for i, h in enumerate(PDNS_HOSTS, 5):
            out.append(f"{h} IN A 10.0.{rng.randint(0, 3)}.{i}\n")
            if rng.random() < 0.3:
                out.append(f"{h} IN AAAA fd00::{i:x}\n")
        out.append(f"shop IN CNAME www\n_imaps._tcp IN SRV 0 1 993 mail\nbuild-{rng.randint(1, 99)} IN A 10.9.0.{rng.randint(1, 250)}\n")
    return "".join(out) + extra


def dns_packet(name: str, qtype: int, opcode: int = 0, extra: bytes = b"", counts: tuple = (1, 0, 0, 0)) -> bytes:
    q = struct.pack(">HHHHHH", random.getrandbits(16), opcode << 11, *counts)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".") if p) + b"\0"
    return q + struct.pack(">HH", qtype, 1) + extra


def dns_tcp(port: int, packet: bytes, src: str = "127.0.0.1", wait: float = 1.0) -> bytes:
    out = b""
    with contextlib.suppress(OSError):
        with socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
            s.sendall(struct.pack(">H", len(packet)) + packet)
            s.settimeout(wait)
            with contextlib.suppress(OSError):
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    out += chunk
    return out


def dns_udp(port: int, packet: bytes, src: str = "127.0.0.1") -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, 0))
        s.settimeout(1.5)
        s.sendto(packet, ("127.0.0.1", port))
        with contextlib.suppress(OSError):
            return s.recv(4096)
    return b""


def source_pdns(args) -> Source:
    pdns = need("/usr/sbin/pdns_server", "pdns-server")
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/pdns/libbindbackend.so"):
        raise MissingProgram("the bind backend of pdns not found -- install it with: apt-get install pdns-backend-bind")
    control = need("pdns_control", "pdns-server")
    rng = random.Random(f"{args.seed}-pdns")
    with tempfile.TemporaryDirectory(prefix="onb9-pdns-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        logp = os.path.join(work, "pdns.log")
        serials = {z: 2026120501 for z in PDNS_ZONES}

        def write_zone(z: str, extra: str = "") -> None:
            write_atomic(os.path.join(work, f"{z}.zone"), pdns_zone(z, serials[z], rng, extra))

        def write_named(extra: str = "") -> None:
            write_atomic(os.path.join(work, "named.conf"), "".join(
                f'zone "{z}" {{ type master; file "{work}/{z}.zone"; }};\n' for z in PDNS_ZONES) + extra)

        def write_conf(launch: str = "bind", extra: str = "", p: int | None = None) -> None:
            write_atomic(os.path.join(work, "pdns.conf"), PDNS_CONF.format(launch=launch, work=work, port=p or port, extra=extra))

        for z in PDNS_ZONES:
            write_zone(z)
        write_named()
        write_conf()
        chown_tree(work, "pdns")

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("pdns", [pdns, f"--config-dir={work}"], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                wait_for(logp, b"ready to distribute questions")

        def stop() -> None:
            sv.stop("pdns", signal.SIGTERM, 20)

        def ctl(*cmd: str) -> int:
            return run_quiet([control, f"--socket-dir={work}", *cmd], 10)

        def resolver(r: random.Random) -> None:
            src = r.choice(["127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.4"])
            for _ in range(r.randint(1, 4)):
                z = r.choice(PDNS_ZONES[:2] * 3 + PDNS_ZONES[2:])
                if z.endswith("arpa"):
                    name, qt = f"{r.randint(5, 22)}.0.0.10.in-addr.arpa", "PTR"
                else:
                    name = (r.choice(PDNS_HOSTS + ["", "", "old", "test", "printer"]) + "." + z).lstrip(".")
                    qt = r.choice(["A", "A", "A", "AAAA", "MX", "TXT", "SOA", "NS", "SRV"])
                    if qt == "SRV":
                        name = "_imaps._tcp." + z
                dns_query(port, name, qt, tcp=r.random() < 0.1, src=src, timeout=2)

        def axfr(zone: str, src: str = "127.0.0.2") -> bytes:
            return dns_tcp(port, dns_packet(zone, 252), src)

        start()
        log = FileLog(logp)
        say(f"pdns on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "edit": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(3, 10)):
                resolver(rng)
            if rng.random() < 0.03:
                axfr(rng.choice(PDNS_ZONES), rng.choice(["127.0.0.1", "127.0.0.2"]))
            if time.time() - state["edit"] > rng.uniform(12, 25):  # a zone edit (serial bump) pushed by the ops team
                z = rng.choice(PDNS_ZONES)
                serials[z] += 1
                write_zone(z)
                ctl(*(["bind-reload-now", z] if rng.random() < 0.7 else ["rediscover"]))
                if rng.random() < 0.3:
                    ctl("purge", f"{z}$")
                if rng.random() < 0.3:
                    ctl(*rng.choice([["ping"], ["uptime"], ["version"], ["show", "*-queries"], ["bind-domain-status"]]))
                state["edit"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.03, 0.12))

        try:
            normal = normal_loop(args, log, "pdns", round_fn)
            templates = {pdns_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, pdns_template, pdns_problem, pdns_echo))

            def restart_clean() -> None:
                sv.stop("pdns", signal.SIGTERM, 10)
                sv.forget("pdns")
                write_conf()
                write_named()
                start()

            with Background(resolver, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("axfr_denied"):  # zone transfers asked by hosts not in allow-axfr-ips
                    for zone, src in [("example.test", "127.0.0.9"), ("shop.test", "127.0.0.33"), ("10.in-addr.arpa", "127.0.0.9"),
                                      ("example.test", "127.0.0.71"), ("shop.test", "127.0.0.4"), ("example.test", "127.0.0.120")]:
                        with br.occurrence(1.5):
                            axfr(zone, src)
                with br.phase("notify_refused"):  # NOTIFYs from hosts that are not masters of the zone
                    for zone, src in [("example.test", "127.0.0.7"), ("shop.test", "127.0.0.1"), ("unknown.test", "127.0.0.3"),
                                      ("10.in-addr.arpa", "127.0.0.2")]:
                        with br.occurrence(1.5):
                            dns_udp(port, dns_packet(zone, 6, opcode=4), src)
                with br.phase("broken_zone_reload"):  # zone files edited with mistakes, then reloaded
                    for zone, extra in [("example.test", "printer IN A 10.0.0.300\n"), ("shop.test", "cdn IN CNAMEE www\n"),
                                        ("example.test", "$INCLUDE /nonexistent/extra.zone\n"), ("shop.test", "@ IN MX mail\n"),
                                        ("10.in-addr.arpa", "$ORIGIN\n"), ("example.test", "$TTL forever\n")]:
                        serials[zone] += 1
                        write_zone(zone, extra)
                        with br.occurrence(1.5):
                            ctl("bind-reload-now", zone)
                        write_zone(zone)
                        ctl("bind-reload-now", zone)
                        br.between()
                with br.phase("malformed_packet"):  # garbage on the DNS port
                    for data in [b"\x12\x34garbage", dns_packet("example.test", 1)[:-3], TLS_HELLO, b"\x00" * 12 + b"\xff" * 30]:
                        with br.occurrence(1.5):
                            dns_udp(port, data)
                            raw_send(port, struct.pack(">H", len(data)) + data, wait=0.3)
                with br.phase("bad_config_restart"):  # pdns.conf / named.conf edits with mistakes, pdns restarted
                    blocker = tcp_blocker()
                    for kw in [{"extra": "allow-axfr-ip=127.0.0.3\n"}, {"launch": "gmysql"},
                               {"extra": "receiver-threads=many\n"}, {"p": blocker.getsockname()[1]},
                               {"named": 'zone "broken.test" { type master; file "/nonexistent/broken.test.zone"; };\n'},
                               {"named": "zone \"shop.test\" {\n"}]:
                        stop()
                        br.between()
                        write_named(kw.pop("named", ""))
                        write_conf(**kw)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(2.5)
                            dns_query(port, "www.example.test", timeout=1)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("pdns", "PowerDNS Authoritative Server (pdns_server)", version_of([pdns, "--version"]),
                  "pdns_server log on stderr with time stamps, --log-dns-queries (`Dec 05 18:00:06 Remote 127.0.0.1 wants "
                  "'www.example.test|A', do = 0, bufsize = 512: packetcache MISS`, `... Zone 'example.test' (/path) reloaded`, "
                  "`... [bindbackend] Done parsing domains, 0 rejected, 1 new, 0 removed`, error lines)",
                  "pdns_server (bind backend, 3 zones, as user pdns, AXFR allowed to 2 secondaries) with python resolvers "
                  "(UDP and some TCP queries from 3 addresses: A, AAAA, MX, TXT, SOA, NS, SRV, PTR, names that exist and do "
                  "not), AXFRs of the secondaries, zone edits every 12-25s reloaded with pdns_control bind-reload-now or "
                  "rediscover, purges and status commands; 2 clean restarts",
                  "axfr_denied (6 AXFRs from hosts not allowed), notify_refused (4 NOTIFYs (slave support off), one for an "
                  "unknown zone), broken_zone_reload (6 zone files with "
                  "mistakes reloaded), malformed_packet (4 garbage packets over UDP and TCP), bad_config_restart (6: an "
                  "unknown setting, a backend not installed, a non-numeric setting, the port in use, a zone file missing, a "
                  "broken named.conf)", normal, br.errors)


# --------------------------------------------------------------------------
# coturn
# --------------------------------------------------------------------------

TURN_USERS = {u: f"{u.capitalize()}-turn-{len(u) * 7}" for u in USERS[:8]}
COTURN_HEAD = re.compile(r"^\d+: (?:\(\d+\): )?: ?")
coturn_template = templater(COTURN_HEAD, (r"<[^<>]*>", "<_>"), (r"/[\w./-]+", "PATH"))


def coturn_problem(line: str) -> bool:
    if re.search(r"\bERROR\b|[Ee]rror: |[Ff]ail|[Cc]annot|[Ww]rong|[Ii]nvalid|[Uu]nknown|[Ff]orbidden|[Qq]uota", line):
        return True
    m = re.search(r"\berror (\d{3})\b", line)
    return bool(m and m.group(1) != "401")


def coturn_echo(line: str) -> bool:
    return "processed, success" in line


def source_coturn(args) -> Source:
    turnserver = need("/usr/bin/turnserver", "coturn")
    uclient = need("/usr/bin/turnutils_uclient", "coturn")
    peer_bin = need("/usr/bin/turnutils_peer", "coturn")
    rng = random.Random(f"{args.seed}-coturn")
    with tempfile.TemporaryDirectory(prefix="onb9-coturn-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, peer_port = free_port(), free_port()
        logp = os.path.join(work, "turnserver.log")
        base_port = rng.randrange(42000, 60000, 200)

        def argv(extra: list[str] | None = None, p: int | None = None) -> list[str]:
            users = [x for u, pw in TURN_USERS.items() for x in ("--user", f"{u}:{pw}")]
            return [turnserver, "-n", "-v", "--log-file=stdout", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
                    f"--listening-port={p or port}", "--lt-cred-mech", "--realm=example.test", "--no-tls", "--no-dtls",
                    f"--min-port={base_port}", f"--max-port={base_port + 199}", "--allow-loopback-peers", "--no-cli",
                    f"--userdb={work}/turndb", f"--pidfile={work}/turnserver.pid", "--user-quota=12",
                    "--denied-peer-ip=127.0.0.200-127.0.0.250", "--max-allocate-lifetime=600", *users, *(extra or [])]

        def start(wait: bool = True, **kw) -> None:
            with open(logp, "ab") as logf:
                sv.start("turn", argv(**kw), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                time.sleep(1.0)

        def stop() -> None:
            sv.stop("turn", signal.SIGTERM, 15)

        sv.start("peer", [peer_bin, "-p", str(peer_port), "-L", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def client(r: random.Random, user: str | None = None, pw: str | None = None, peer: str = "127.0.0.1",
                   clients: int | None = None, timeout: float = 15) -> int:
            user = user or r.choice(list(TURN_USERS))
            a = [uclient, "-p", str(port), "-u", user, "-w", pw or TURN_USERS[user], "-n", str(r.randint(1, 8)),
                 "-m", str(clients or r.choice([1, 1, 2, 2, 3, 4])), "-l", str(r.choice([60, 120, 200])), "-e", peer,
                 "-r", str(peer_port), "-X"]
            if r.random() < 0.25:
                a.append("-t")  # TCP to the server
            if r.random() < 0.3:
                a.append("-c")  # no channels (send indications)
            return run_quiet(a + ["127.0.0.1"], timeout)

        start()
        log = FileLog(logp)
        say(f"coturn on 127.0.0.1:{port} (peer {peer_port}); normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=client, args=(random.Random(rng.random()),)) for _ in range(rng.randint(3, 5))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.3))

        try:
            normal = normal_loop(args, log, "coturn", round_fn)
            templates = {coturn_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, coturn_template, coturn_problem, coturn_echo))

            def restart_clean() -> None:
                sv.stop("turn", signal.SIGTERM, 10)
                sv.forget("turn")
                start()

            with Background(lambda r: client(r, clients=1), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("wrong_password"):  # clients configured with an old password
                    for user, pw in [("alice", "alice"), ("bob", TURN_USERS["carol"]), ("dave", "Dave-turn-2025"), ("grace", "")]:
                        with br.occurrence(1.5):
                            client(rng, user, pw, clients=1, timeout=0.5)
                with br.phase("unknown_user"):  # accounts that do not exist
                    for user in ["mallory", "guest", "webrtc", "test"]:
                        with br.occurrence(1.5):
                            client(rng, user, "Password1", clients=1, timeout=0.5)
                with br.phase("denied_peer"):  # relaying to an address in --denied-peer-ip
                    for peer in ["127.0.0.200", "127.0.0.222", "127.0.0.250"]:
                        with br.occurrence(1.5):
                            client(rng, peer=peer, clients=1, timeout=8)
                with br.phase("quota_exceeded"):  # more allocations at once than --user-quota 12
                    for n in [16, 14, 18]:
                        with br.occurrence(2.0):
                            client(rng, "erin", clients=n, timeout=10)
                with br.phase("malformed_packet"):  # garbage on the TURN port
                    for data, udp in [(b"\x00\x01\x00\x08\x21\x12\xa4\x42" + bytes(12) + b"\xff" * 8, True),
                                      (b"GET / HTTP/1.1\r\nHost: turn\r\n\r\n", False), (TLS_HELLO, False),
                                      (b"\x00\x03\x00\x00\x21\x12\xa4\x42" + bytes(12), True)]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5, udp=udp)
                with br.phase("bad_config_restart"):  # turnserver restarted with broken options
                    for kw in [{"extra": ["--relay-ip=10.255.0.1"]}, {"extra": ["--user=frank"]},
                               {"extra": ["--min-port=70000"]}, {"extra": ["--listening-ip=192.0.2.10"]},
                               {"extra": ["--userdb=/nonexistent/turn/turndb"]}, {"extra": ["--pidfile=/nonexistent/turn/turnserver.pid"]}]:
                        stop()
                        br.between()
                        with br.occurrence(1.5):
                            start(wait=False, **kw)
                            time.sleep(2.5)
                        restart_clean()
                        br.between()
        finally:
            stop()
            sv.stop("peer", signal.SIGKILL)
    return Source("coturn", "coturn (turnserver)", version_of([turnserver, "--version"]),
                  "turnserver -v --log-file=stdout (`2: : session 001000000000000002: new, realm=<example.test>, "
                  "username=<alice>, lifetime=777`, `... : session ...: realm <example.test> user <alice>: incoming packet "
                  "ALLOCATE processed, success`, `... : ERROR: check_stun_auth: ...`; the number in front is the seconds since "
                  "the start)",
                  "turnserver (long-term credentials, realm example.test, 8 users, user quota 12, loopback peers allowed, "
                  "127.0.0.200-250 denied) with turnutils_uclient clients of the 8 users (3-5 at a time, 1-4 clients each, UDP or TCP, with "
                  "and without channels, 1-8 messages) relaying to a turnutils_peer; 2 clean restarts",
                  "wrong_password (4), unknown_user (4), denied_peer (3 relays to denied peer addresses), quota_exceeded (3x "
                  "14-18 allocations of one user > --user-quota 12), malformed_packet (4 garbage packets over UDP and TCP), "
                  "bad_config_restart (6: a relay address not on the host, a user without password, a port out of "
                  "range, a listening address not on the host, a user database and a pid file in a missing directory)", normal, br.errors)


# --------------------------------------------------------------------------
# prosody
# --------------------------------------------------------------------------

PROSODY_CONF = """\
pidfile = "{work}/prosody.pid"
data_path = "{work}/data"
certificates = "{work}/certs"
daemonize = false
log = {{ debug = "{work}/prosody.log" }}
c2s_ports = {{ {port} }}
c2s_interfaces = {{ "127.0.0.1" }}
s2s_ports = {{ }}
component_ports = {{ }}
http_ports = {{ }}
https_ports = {{ }}
c2s_direct_tls_ports = {{ }}
legacy_ssl_ports = {{ }}
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
allow_registration = true
authentication = "internal_hashed"
c2s_stanza_size_limit = 16384
modules_enabled = {{ "roster"; "saslauth"; "disco"; "ping"; "presence"; "message"; "iq"; "posix"; "version"; "uptime";
                    "time"; "register"; "private"; "vcard_legacy"; "offline"; "carbons"; "blocklist"; {modules} }}
modules_disabled = {{ "s2s"; "tls" }}
{extra}
VirtualHost "example.test"
VirtualHost "chat.example.test"
"""
XMPP_USERS = {u: f"{u.capitalize()}-xmpp-{len(u) * 3}" for u in USERS}
PROSODY_HEAD = re.compile(r"^\w{3} \d\d [\d:]{8} ")
prosody_template = templater(PROSODY_HEAD, (r"^(c2s|s2sin|s2sout|conn|runner|serv)[\w-]+", r"\1ID"),
                             (r"(mechanisms[\w ]*: )[\w, -]+$", r"\1MECHANISMS"), (r"<[^<>]*>", "<_>"),
                             (r"'[^']*'", "'_'"), (r"\S+@\S+", "JID"), (r"/[\w./-]+", "PATH"))


def prosody_problem(line: str) -> bool:
    m = re.match(r"^\w{3} \d\d [\d:]{8} \S+\s+(\w+)\t", line)
    return bool(m and m.group(1) in ("warn", "error")) or bool(re.search(r"[Ee]rror|[Ff]ail|[Cc]ould not|[Uu]nable", line))


def prosody_echo(line: str) -> bool:
    return bool(re.search(r"\tinfo\t(Client connected|Authenticated as |Client disconnected: (connection closed|closed)$)", line))


class XmppClient:
    STREAM = ("<?xml version='1.0'?><stream:stream to='{host}' xmlns='jabber:client' "
              "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>")

    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng, self.s = port, rng, None

    def send(self, data: str, read: float | None = 0.05) -> str:
        """Send data; read the answer (None: a stanza that gets none)."""
        try:
            self.s.sendall(data.encode())
            if read is None:
                return ""
            time.sleep(read)
            self.s.settimeout(1.0)
            return self.s.recv(65536).decode(errors="replace")
        except OSError:
            return ""

    def connect(self, host: str = "example.test") -> str:
        try:
            self.s = socket.create_connection(("127.0.0.1", self.port), 5)
        except OSError:
            self.s = None
            return ""
        return self.send(self.STREAM.format(host=host))

    def login(self, user: str, pw: str, host: str = "example.test") -> bool:
        if not self.connect(host):
            return False
        tok = base64.b64encode(f"\0{user}\0{pw}".encode()).decode()
        if "success" not in self.send(f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{tok}</auth>"):
            return False
        self.send(self.STREAM.format(host=host))
        self.send(f"<iq type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>"
                  f"{self.rng.choice(['laptop', 'phone', 'desktop', 'tablet'])}</resource></bind></iq>")
        return True

    def close(self, clean: bool = True) -> None:
        if self.s is not None:
            with contextlib.suppress(OSError):
                if clean:
                    self.send("</stream:stream>", 0.05)
                self.s.close()
        self.s = None

    def session(self, host: str = "example.test") -> None:
        r = self.rng
        user = r.choice(list(XMPP_USERS))
        if not self.login(user, XMPP_USERS[user], host):
            self.close()
            return
        self.send("<iq type='get' id='r1'><query xmlns='jabber:iq:roster'/></iq>")
        self.send(f"<presence><show>{r.choice(['chat', 'away', 'dnd', 'xa'])}</show><priority>{r.randint(0, 10)}</priority></presence>",
                  None)
        for i in range(r.randint(0, 5)):
            to = r.choice(list(XMPP_USERS))
            self.send(f"<message to='{to}@{host}' type='chat' id='m{i}'><body>{' '.join(r.choices(WORDS, k=r.randint(2, 9)))}</body></message>", None)
        if r.random() < 0.3:
            self.send(f"<iq type='get' id='p1' to='{host}'><ping xmlns='urn:xmpp:ping'/></iq>")
        if r.random() < 0.2:
            self.send(f"<iq type='get' id='v1' to='{host}'><query xmlns='jabber:iq:version'/></iq>")
        self.close(clean=r.random() < 0.85)


def source_prosody(args) -> Source:
    prosody = need("/usr/bin/prosody", "prosody")
    prosodyctl = need("/usr/bin/prosodyctl", "prosody")
    rng = random.Random(f"{args.seed}-prosody")
    with tempfile.TemporaryDirectory(prefix="onb9-prosody-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("data", "certs"):
            os.makedirs(os.path.join(work, d))
        port = free_port()
        conf, logp = os.path.join(work, "prosody.cfg.lua"), os.path.join(work, "prosody.log")

        def write_conf(modules: str = "", extra: str = "", p: int | None = None) -> None:
            write_atomic(conf, PROSODY_CONF.format(work=work, port=p or port, modules=modules, extra=extra))
            chown_tree(work, "prosody")

        write_conf()
        for u, pw in XMPP_USERS.items():
            for host in ("example.test", "chat.example.test"):
                run_quiet(as_user("prosody", [prosodyctl, "--config", conf, "register", u, host, pw]), 30)

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what prosody says before it opens its log goes to the same file
                shutil.chown(logp, "prosody", "prosody")
                sv.start("prosody", as_user("prosody", [prosody, "--config", conf, "-F"]), stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("prosody", signal.SIGTERM, 15)

        start()
        log = FileLog(logp)
        say(f"prosody on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "hup": time.time(), "reg": 0}

        def client(r: random.Random) -> None:
            XmppClient(port, r).session(r.choice(["example.test", "example.test", "chat.example.test"]))

        def round_fn(n: int, elapsed: float) -> None:
            held = []
            for _ in range(rng.randint(2, 8)):
                c = XmppClient(port, random.Random(rng.random()))
                if rng.random() < 0.1:  # a phone that keeps its session and logs in again: replaced
                    u = rng.choice(list(XMPP_USERS))
                    c.login(u, XMPP_USERS[u])
                    c.rng = random.Random(0)
                    c2 = XmppClient(port, c.rng)
                    c2.login(u, XMPP_USERS[u])
                    held += [c, c2]
                else:
                    c.session(rng.choice(["example.test", "example.test", "chat.example.test"]))
            if rng.random() < 0.03:  # an in-band registration
                state["reg"] += 1
                c = XmppClient(port, rng)
                if c.connect():
                    c.send(f"<iq type='set' id='reg1'><query xmlns='jabber:iq:register'><username>new{state['reg']}"
                           f"{rng.choice(WORDS)}</username><password>Welcome-{rng.randint(10, 99)}</password></query></iq>", 0.3)
                c.close()
            for c in held:
                c.close()
            if time.time() - state["hup"] > rng.uniform(20, 40):
                sv.procs["prosody"].send_signal(signal.SIGHUP)
                state["hup"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.03, 0.15))

        try:
            normal = normal_loop(args, log, "prosody", round_fn)
            templates = {prosody_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, prosody_template, prosody_problem, prosody_echo))

            def restart_clean() -> None:
                sv.stop("prosody", signal.SIGTERM, 10)
                sv.forget("prosody")
                write_conf()
                start()

            with Background(client, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("wrong_password"):  # typos, old passwords, unknown accounts
                    for user, pw in [("alice", "alice"), ("bob", XMPP_USERS["carol"]), ("dave", "Dave-xmpp-1"), ("admin", "admin")]:
                        with br.occurrence(1.5):
                            c = XmppClient(port, rng)
                            c.login(user, pw)
                            c.close()
                with br.phase("invalid_xml"):  # clients sending broken XML
                    for data in ["<message to='bob@example.test'><body>hi</message>", "<presence><<<", "\x00\x01\x02garbage",
                                 "<iq type='get' id='x'><query xmlns='jabber:iq:roster'/></iq></stream:strem>"]:
                        with br.occurrence(1.5):
                            c = XmppClient(port, rng)
                            u = rng.choice(list(XMPP_USERS))
                            c.login(u, XMPP_USERS[u])
                            c.send(data, 0.3)
                            c.close(clean=False)
                with br.phase("unknown_host"):  # streams to hosts this server does not serve
                    for host in ["example.org", "chat.example.com", "conference.example.test"]:
                        with br.occurrence(1.5):
                            c = XmppClient(port, rng)
                            c.connect(host)
                            c.close(clean=False)
                with br.phase("unauthenticated_stanza"):  # broken clients sending stanzas before logging in
                    for stanza in ["<message to='alice@example.test'><body>hello</body></message>",
                                   "<iq type='get' id='r1'><query xmlns='jabber:iq:roster'/></iq>", "<presence/>"]:
                        with br.occurrence(1.5):
                            c = XmppClient(port, rng)
                            c.connect()
                            c.send(stanza, 0.3)
                            c.close()
                with br.phase("stanza_too_big"):  # stanzas over c2s_stanza_size_limit (16 KiB)
                    for size in [20000, 40000, 100000]:
                        with br.occurrence(1.5):
                            c = XmppClient(port, rng)
                            c.login("carol", XMPP_USERS["carol"])
                            c.send(f"<message to='dave@example.test' type='chat'><body>{'x' * size}</body></message>", 0.5)
                            c.close(clean=False)
                with br.phase("bad_config_restart"):  # prosody.cfg.lua edits with mistakes, prosody restarted
                    blocker = tcp_blocker()
                    for kw in [{"extra": "c2s_timeout = 60 +\n"}, {"modules": '"muc_mam_archive";'},
                               {"p": blocker.getsockname()[1]},
                               {"extra": 'log = { info = "/nonexistent/prosody/prosody.log" }\n'},
                               {"extra": 'authentication = "ldap"\n'}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2.5)
                            c = XmppClient(port, rng)
                            c.login("alice", XMPP_USERS["alice"])
                            c.close()
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("prosody", "Prosody (XMPP server)", version_of([prosodyctl, "about"]),
                  "prosody log file at level debug (`Dec 05 18:00:58 c2s5571a711fdc0\\tinfo\\tClient connected`, `... "
                  "c2s5571a711fdc0\\tinfo\\tAuthenticated as alice@example.test`, `... Client disconnected: connection closed`, "
                  "debug lines of connections, streams, SASL and stanzas (`... c2s5571a711fdc0\\tdebug\\tReceived[c2s]: <message "
                  "...>`), start-up / shutdown lines, warn / error lines)",
                  "prosody -F (as prosody; 2 virtual hosts, 12 users, plain-text c2s with SASL PLAIN, registration open) with "
                  "python XMPP clients: logins, resource binding, roster requests, presence, chat messages, pings, version "
                  "queries, clean and abrupt disconnects, sessions replaced by a second login, in-band registrations; SIGHUP "
                  "reloads every 20-40s, 2 clean restarts",
                  "wrong_password (4: wrong passwords, an unknown user), invalid_xml (4 logged-in clients sending broken XML), unknown_host (3 streams to hosts not served), "
                  "unauthenticated_stanza (3 stanzas before authentication), stanza_too_big (3 messages over "
                  "c2s_stanza_size_limit 16 KiB), bad_config_restart (5: a Lua syntax error, an unknown module, the port in "
                  "use, a log file in a missing directory, an auth provider whose library is missing)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_ninth", SOURCES, globals(), seed=9999, min_normal_s=60,
               root_for="programs dropping to their own users")


if __name__ == "__main__":
    sys.exit(main())
