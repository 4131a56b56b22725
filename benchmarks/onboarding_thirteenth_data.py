#!/usr/bin/env python3
"""Generate the thirteenth onboarding corpus: real log lines written by real programs, grouped into events.

A thirteenth corpus built exactly like benchmarks/onboarding_twelfth_data.py (same layout, same separation
rule, same event ids, the helpers of the earlier scripts imported) from five programs that no other corpus
uses.  Every line is the verbatim output of a program started by this script on this machine; the script
only *drives* the programs (clients it runs) and *breaks* them (bad configs, wrong passwords, garbage on the
wire, exhausted limits, an unreachable next hop, a step of the work made to fail...).  It never writes a log
line itself.  The programs trace multi-step work per named item (a request's filter dump in Tomcat, a mail
transaction's session id from connect to delivery in OpenSMTPD, a Mumble session's connection, version,
authentication and close, an FTP session's commands from USER to Logout, a gunicorn worker's requests).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends tomcat10 tomcat10-admin
opensmtpd mumble-server pure-ftpd python3-gunicorn rsyslog; also util-linux, openssl and python3.  The
clients are python code in this script (HTTP over http.client / raw sockets, smtplib, a Mumble client
speaking the protobuf control protocol over TLS, ftplib) and the programs' own CLIs (smtpctl, pure-pw).
No system service of these packages needs to run: each daemon is started directly as a plain process,
without systemd.  OpenSMTPD and pure-ftpd log only through syslog(3): each runs in a private mount
namespace whose /dev holds the usual device nodes and a /dev/log served by a private rsyslogd (imuxsock,
no rate limit, RSYSLOG_FileFormat) writing to the source's log file; the daemon's stdout/stderr is appended
to the same file):

  tomcat     Apache Tomcat 10.1 (catalina.sh run, a private CATALINA_BASE: its own server.xml with a NIO
             connector, an AccessLogValve writing to /dev/stdout, a LockOutRealm; JULI's ConsoleHandler with
             the OneLineFormatter; the RequestDumperFilter on the shop's checkout and account paths; its
             stdout/stderr appended, i.e. catalina.out): `06-Dec-2026 05:40:01.123 INFO [http-nio-127.0.0.1-8080-exec-3]
             org.apache.catalina.filters.RequestDumperFilter.doLog http-nio-...-exec-3 requestURI=/shop/checkout.jsp`.
             Normal: shoppers' JSP pages (index, product, search, cart, checkout, account), an admin's
             manager text API (list, serverinfo, sessions, reload of the shop), 2 clean restarts.  Broken:
             JSPs throwing (500 with stack traces), a JSP that does not compile, webapps with a bad web.xml
             deployed through the manager, wrong manager passwords (until the LockOutRealm locks the user),
             malformed HTTP requests, the port taken at a restart, a broken server.xml at a restart.
  opensmtpd  OpenSMTPD 6.8 (smtpd -F through rsyslog): `2026-12-06T05:29:05.696467+00:00 vm smtpd[16880]:
             168ed7c38cd314e0 smtp failed-command command="rcpt TO:<x@example.org>" result="550 Invalid
             recipient: <x@example.org>"`.  Normal: mail of 12 users from SMTP clients (smtplib) on
             several internal hosts, local maildir delivery for onb13.test and relay of outgoing mail to
             a smarthost (an SMTP sink run by this script); smtpctl show stats / show queue / schedule all;
             2 clean restarts.  Broken: relaying denied (outside hosts), unknown recipients, bad SMTP
             commands, STARTTLS failing and TLS garbage, the smarthost unreachable, broken smtpd.conf at a restart.
  mumble     Mumble server 1.3 (murmurd -fg -ini, a private ini and sqlite database; its stdout):
             `<W>2026-12-06 05:34:25.431 1 => <1:alice(-1)> Authenticated`.  Normal: Mumble clients (TLS,
             the protobuf control protocol: Version, Authenticate with the server password, Pings, then a
             close) of 12 users with several client versions and OSes, 2 clean restarts.  Broken: wrong
             server passwords, invalid user names, the server full, plain text /
             garbage on the TLS port, broken ini at a restart.  It logs little (about 6
             lines a session): its normal phase is cut at 3 x --min-normal-seconds.
  pureftpd   pure-ftpd 1.0 (standalone, -d verbose, puredb virtual users, chroot, quotas; through rsyslog):
             `2026-12-06T05:23:13.094359+00:00 vm pure-ftpd: (alice@127.0.0.2) [INFO] alice is now logged
             in`.  Normal: FTP sessions of 10 users (login, PWD / CWD, LIST, uploads, downloads, renames,
             deletes, MKD, logout) from several hosts, 2 clean restarts.  Broken: wrong passwords, unknown
             users, anonymous logins refused, permission denied (read-only folders, missing files), too
             many connections from one host, bad commands, broken options at a restart.
  gunicorn   Gunicorn 20.1 (python3 -m gunicorn, sync workers, --timeout 4, access log and error log
             at debug into one file): `[2026-12-06 05:40:01 +0000] [1234] [DEBUG] GET /api/orders/12`,
             `127.0.0.1 - - [06/Dec/2026:05:40:01 +0000] "GET /api/orders/12 HTTP/1.1" 200 51 "-" "curl/7.88.1"`.
             Normal: a small WSGI shop API used by several clients, HUP reloads, 2 clean restarts.
             Broken: worker timeouts (a slow endpoint), app exceptions (tracebacks), workers SIGKILLed,
             garbage / oversized request lines and bad headers, an import error at a restart.

Layout written under --out (default benchmarks/data/onboarding_thirteenth):

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

  * its level marks it as a problem (tomcat SEVERE / WARNING lines and access log
    lines of status 4xx / 5xx, exceptions; opensmtpd warn lines and lines of failed
    commands, bad input, errors, temporary / permanent failures; mumble <C> lines
    and lines of rejected connections, errors, timeouts; pure-ftpd [WARNING] /
    [ERROR] lines and lines of failures and denials; gunicorn [WARNING] / [ERROR] /
    [CRITICAL] lines and access log lines of status 4xx / 5xx), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; process / thread / session ids, user and host names,
    mail addresses and paths masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (none for these sources).  A
multi-line entry (a Tomcat or gunicorn record with its stack trace / traceback
lines) is kept or dropped whole.  An occurrence of which no line is kept makes no
event.

Usage:
    python benchmarks/onboarding_thirteenth_data.py --out benchmarks/data/onboarding_thirteenth \\
        [--sources tomcat,opensmtpd,mumble,pureftpd,gunicorn] [--lines 6000] [--seed 13013] \\
        [--min-normal-seconds 40]
"""
from __future__ import annotations

import contextlib
import ftplib
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import smtplib
import socket
import ssl
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
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Namespace, Source,  # noqa: E402
                                     entry_selector, raw_send)
from onboarding_sixth_data import TLS_HELLO, run_quiet  # noqa: E402
from onboarding_tenth_data import SYS_PY, log_has, size_of  # noqa: E402
from onboarding_twelfth_data import HAM_SUBJECTS, timed_normal_loop  # noqa: E402

SOURCES = ["tomcat", "opensmtpd", "mumble", "pureftpd", "gunicorn"]


def http_req(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
             timeout: float = 15, src: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(src, 0) if src else None)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


class SyslogNS:
    """A private mount namespace whose /dev holds the usual device nodes and a /dev/log served by a private
    rsyslogd writing every message (but its own) to ``logp``: for daemons that log only through syslog(3)."""

    def __init__(self, sv: Group, work: str, logp: str):
        rsyslogd = need("/usr/sbin/rsyslogd", "rsyslog")
        self.work = os.path.join(work, "syslog")
        os.makedirs(os.path.join(self.work, "olddev"))
        conf = os.path.join(self.work, "rsyslog.conf")
        write_atomic(conf, f'global(workDirectory="{self.work}")\n'
                           'module(load="imuxsock" SysSock.RateLimit.Interval="0" SysSock.Name="/dev/log")\n'
                           f"if $programname != 'rsyslogd' then action(type=\"omfile\" file=\"{logp}\" "
                           'template="RSYSLOG_FileFormat")\n')
        od = os.path.join(self.work, "olddev")
        setup = (f"mount --bind /dev {od} && mount -t tmpfs -o mode=755 devns /dev && "
                 f"for n in null zero full random urandom tty; do touch /dev/$n && mount --bind {od}/$n /dev/$n; done && "
                 "ln -s /proc/self/fd /dev/fd && mkdir /dev/shm /dev/pts")
        self.ns = Namespace(sv, "mountns", setup)
        self.sv = sv
        sv.start("rsyslogd", self.ns.argv([rsyslogd, "-n", "-f", conf, "-i", os.path.join(self.work, "rsyslogd.pid")]),
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)

    def argv(self, argv: list[str]) -> list[str]:
        return self.ns.argv(argv)


# --------------------------------------------------------------------------
# tomcat (catalina.sh run with a private CATALINA_BASE)
# --------------------------------------------------------------------------

TC_HOME = "/usr/share/tomcat10"
TC_SERVER = """<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1" shutdown="SHUTDOWN">
  <Listener className="org.apache.catalina.startup.VersionLoggerListener" />
  <Listener className="org.apache.catalina.core.JreMemoryLeakPreventionListener" />
  <Listener className="org.apache.catalina.mbeans.GlobalResourcesLifecycleListener" />
  <Listener className="org.apache.catalina.core.ThreadLocalLeakPreventionListener" />
  <GlobalNamingResources>
    <Resource name="UserDatabase" auth="Container" type="org.apache.catalina.UserDatabase"
              factory="org.apache.catalina.users.MemoryUserDatabaseFactory" pathname="conf/tomcat-users.xml" />
  </GlobalNamingResources>
  <Service name="Catalina">
    <Connector port="{port}" address="127.0.0.1" protocol="HTTP/1.1" connectionTimeout="20000" maxThreads="40"{conn_extra} />
    <Engine name="Catalina" defaultHost="localhost">
      <Realm className="org.apache.catalina.realm.LockOutRealm" failureCount="3" lockOutTime="600">
        <Realm className="org.apache.catalina.realm.UserDatabaseRealm" resourceName="UserDatabase"/>
      </Realm>
      <Host name="localhost" appBase="webapps" unpackWARs="true" autoDeploy="false">
        <Valve className="org.apache.catalina.valves.AccessLogValve" directory="/dev" prefix="stdout" suffix=""
               rotatable="false" buffered="false" pattern="%h %l %u %t &quot;%r&quot; %s %b %D" />
      </Host>
    </Engine>
  </Service>
</Server>
"""
TC_LOGGING = """handlers = java.util.logging.ConsoleHandler
.handlers = java.util.logging.ConsoleHandler
java.util.logging.ConsoleHandler.level = FINE
java.util.logging.ConsoleHandler.formatter = org.apache.juli.OneLineFormatter
java.util.logging.ConsoleHandler.encoding = UTF-8
"""
TC_USERS = """<?xml version="1.0" encoding="UTF-8"?>
<tomcat-users xmlns="http://tomcat.apache.org/xml" version="1.0">
  <role rolename="manager-script"/>
  <user username="deployer" password="Deploy-onb13" roles="manager-script"/>
  <user username="ops" password="Ops-onb13" roles="manager-script"/>
</tomcat-users>
"""
TC_WEBXML = """<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
  <display-name>{name}</display-name>
  <session-config><session-timeout>1</session-timeout></session-config>
  <filter><filter-name>requestdumper</filter-name>
    <filter-class>org.apache.catalina.filters.RequestDumperFilter</filter-class></filter>
  <filter-mapping><filter-name>requestdumper</filter-name><url-pattern>/checkout.jsp</url-pattern></filter-mapping>
  <filter-mapping><filter-name>requestdumper</filter-name><url-pattern>/account.jsp</url-pattern></filter-mapping>
  <welcome-file-list><welcome-file>index.jsp</welcome-file></welcome-file-list>
</web-app>
"""
TC_JSP = {
    "index.jsp": '<%@ page contentType="text/html; charset=UTF-8" %><html><body><h1>Shop</h1>'
                 '<% for (int i = 1; i <= 5; i++) { %><a href="product.jsp?id=<%= i %>">item <%= i %></a> <% } %></body></html>',
    "product.jsp": '<%@ page contentType="text/html; charset=UTF-8" %><% int id = Integer.parseInt(request.getParameter("id")); '
                   'String[] names = {"lamp", "desk", "chair", "shelf", "rug", "mirror", "clock", "vase"}; %>'
                   '<html><body><h2><%= names[id % names.length] %></h2><p>price <%= 10 + id * 3 %></p></body></html>',
    "search.jsp": '<%@ page contentType="text/html; charset=UTF-8" %><% String q = request.getParameter("q"); %>'
                  '<html><body>results for <%= q.trim().toLowerCase() %>: <%= q.length() % 7 %></body></html>',
    "cart.jsp": '<%@ page contentType="text/html; charset=UTF-8" %><% Integer n = (Integer) session.getAttribute("items"); '
                'if (n == null) n = 0; String add = request.getParameter("add"); if (add != null) n += Integer.parseInt(add); '
                'session.setAttribute("items", n); %><html><body>cart: <%= n %> items</body></html>',
    "checkout.jsp": '<%@ page contentType="text/html; charset=UTF-8" %><% Integer n = (Integer) session.getAttribute("items"); '
                    'int qty = Integer.parseInt(request.getParameter("qty")); int unit = 100 / qty; '
                    'if ("GET".equals(request.getMethod()) && n == null) { response.sendError(409, "empty cart"); return; } %>'
                    '<html><body>order placed: <%= qty %> x <%= unit %></body></html>',
    "account.jsp": '<%@ page contentType="text/html; charset=UTF-8" %><% String u = request.getParameter("user"); '
                   'java.util.Map<String, String> tiers = new java.util.HashMap<>(); tiers.put("alice", "gold"); '
                   'tiers.put("bob", "silver"); String t = tiers.getOrDefault(u, "basic"); %>'
                   '<html><body><%= u.toUpperCase() %>: <%= t %></body></html>',
    "report.jsp": '<%@ page contentType="text/html; charset=UTF-8" import="java.util.*" %><% List<Integer> xs = new ArrayList<>(); '
                  'int n = Integer.parseInt(request.getParameter("days")); for (int i = 0; i < n; i++) xs.add(i * 7 % 13); %>'
                  '<html><body>days <%= n %> max <%= Collections.max(xs) %></body></html>',
}
TC_HEAD = re.compile(r"^(\d\d-\w{3}-\d{4} [\d:.]+ |\d+\.\d+\.\d+\.\d+ \S+ \S+ \[)")
tomcat_template = templater(re.compile(r"^\d\d-\w{3}-\d{4} [\d:.]+ |\[[^\]]*\] "),
                            (r"\[[\w-]*exec-\d+\]", "[EXEC]"), (r"exec-\d+", "exec-N"), (r"\b[0-9A-F]{32}\b", "SESSION"),
                            (r"\?[^ \"]*", "?Q"), (r"\[\d+\] milliseconds", "[N] milliseconds"), (r"/[\w./-]+", "PATH"),
                            (r"\bline: \d+", "line: N"))


def tomcat_problem(text: str) -> bool:
    first = text.split("\n", 1)[0]
    return bool(re.search(r"^\S+ \S+ (SEVERE|WARNING) ", first)) or bool(re.search(r'" [45]\d\d \S+ \d+$', first)) or bool(
        re.search(r"Exception|[Ee]rror|[Ff]ail|[Ii]nvalid|[Ll]ocked|[Dd]enied", text))


def source_tomcat(args) -> Source:
    catalina = need(os.path.join(TC_HOME, "bin", "catalina.sh"), "tomcat10")
    manager_dir = "/usr/share/tomcat10-admin/manager"
    if not os.path.isdir(manager_dir):
        raise RuntimeError("the manager webapp is missing (apt-get install tomcat10-admin)")
    rng = random.Random(f"{args.seed}-tomcat")
    with tempfile.TemporaryDirectory(prefix="onb13-tomcat-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ["conf/Catalina/localhost", "webapps/shop/WEB-INF", "logs", "temp", "work", "deploy"]:
            os.makedirs(os.path.join(work, d))
        port = free_port()
        logp = os.path.join(work, "logs", "catalina.out")
        for fn in ["web.xml", "catalina.properties", "context.xml"]:
            shutil.copy(os.path.join("/etc/tomcat10", fn), os.path.join(work, "conf", fn))
        write_atomic(os.path.join(work, "conf", "logging.properties"), TC_LOGGING)
        write_atomic(os.path.join(work, "conf", "tomcat-users.xml"), TC_USERS)
        write_atomic(os.path.join(work, "conf", "Catalina", "localhost", "manager.xml"),
                     f'<Context docBase="{manager_dir}" antiResourceLocking="false" privileged="true" />\n')
        shop = os.path.join(work, "webapps", "shop")
        write_atomic(os.path.join(shop, "WEB-INF", "web.xml"), TC_WEBXML.format(name="onb13 shop"))
        for fn, text in TC_JSP.items():
            write_atomic(os.path.join(shop, fn), text)
        env = dict(os.environ, CATALINA_HOME=TC_HOME, CATALINA_BASE=work, CATALINA_TMPDIR=os.path.join(work, "temp"),
                   JAVA_OPTS="-Xms64m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.security.egd=file:/dev/./urandom")

        def write_conf(p: int | None = None, conn_extra: str = "", text: str | None = None) -> None:
            write_atomic(os.path.join(work, "conf", "server.xml"),
                         text if text is not None else TC_SERVER.format(port=p or port, conn_extra=conn_extra))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("tomcat", [catalina, "run"], stdout=logf, stderr=logf, cwd=work, env=env)
            if wait:
                log_has(logp, b"Server startup in", since, 90)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("tomcat", signal.SIGTERM, 40)

        mgr = {"deployer": "Basic " + __import__("base64").b64encode(b"deployer:Deploy-onb13").decode(),
               "ops": "Basic " + __import__("base64").b64encode(b"ops:Ops-onb13").decode()}

        def manager(cmd: str, who: str = "deployer", auth: str | None = None) -> int:
            return http_req(port, "GET", f"/manager/text/{cmd}", headers={"Authorization": auth or mgr[who]}, timeout=60)

        def shopper(r: random.Random, calm: bool = False) -> None:  # one shopper's visit: a few pages with a session cookie
            ua = r.choice(["Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Firefox/120.0", "ShopApp/4.1 (Android 14)", "curl/7.88.1",
                           "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X)"])
            src = f"127.0.0.{r.randint(2, 9)}"
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(src, 0))
            cookie = None
            try:
                steps = [("GET", "/shop/", None)]
                for _ in range(r.randint(1, 4)):
                    a = r.random()
                    if a < 0.35:
                        steps.append(("GET", f"/shop/product.jsp?id={r.randint(1, 400)}", None))
                    elif a < 0.5:
                        steps.append(("GET", f"/shop/search.jsp?q={r.choice(WORDS)}", None))
                    elif a < 0.75:
                        steps.append(("GET", f"/shop/cart.jsp?add={r.randint(1, 3)}", None))
                    elif a < 0.85 and not calm:
                        steps.append(("GET", f"/shop/account.jsp?user={r.choice(USERS)}", None))
                    else:
                        steps.append(("GET", f"/shop/report.jsp?days={r.randint(1, 30)}", None))
                if r.random() < 0.3 and not calm:
                    steps += [("GET", f"/shop/cart.jsp?add={r.randint(1, 3)}", None),
                              ("POST", f"/shop/checkout.jsp?qty={r.randint(1, 9)}", b"pay=card")]
                if r.random() < 0.05:
                    steps.append(("GET", f"/shop/{r.choice(['favicon.ico', 'robots.txt', 'old/index.html'])}", None))
                for m, path, body in steps:
                    h = {"User-Agent": ua}
                    if cookie:
                        h["Cookie"] = cookie
                    if body:
                        h["Content-Type"] = "application/x-www-form-urlencoded"
                    conn.request(m, path, body=body, headers=h)
                    resp = conn.getresponse()
                    resp.read()
                    sc = resp.getheader("Set-Cookie")
                    if sc:
                        cookie = sc.split(";", 1)[0]
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()

        write_conf()
        start()
        log = FileLog(logp)
        say(f"tomcat on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [shopper(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["admin"] > rng.uniform(4, 10):
                a = rng.random()
                who = rng.choice(["deployer", "ops"])
                if a < 0.3:
                    manager("list", who)
                elif a < 0.5:
                    manager("serverinfo", who)
                elif a < 0.7:
                    manager("sessions?path=/shop", who)
                elif a < 0.85:
                    manager("reload?path=/shop", who)
                else:
                    manager("findleaks?statusLine=true", who)
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "tomcat", round_fn)
            templates = {tomcat_template(x) for x in normal}
            is_head = lambda line: bool(TC_HEAD.match(line))  # noqa: E731
            br = Breaker(log, grouped_selector(templates, tomcat_template, tomcat_problem, head=is_head))

            def restart_clean() -> None:
                sv.stop("tomcat", signal.SIGTERM, 30)
                sv.forget("tomcat")
                write_conf()
                start()

            with Background(lambda r: shopper(r, calm=True), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("jsp_exception"):  # requests that make a JSP throw: 500 with a stack trace
                    for path in ["/shop/product.jsp?id=abc", "/shop/search.jsp", "/shop/checkout.jsp?qty=0",
                                 "/shop/account.jsp", "/shop/report.jsp?days=0", "/shop/product.jsp?id=-7"]:
                        with br.occurrence(2.0):
                            http_req(port, "POST" if "checkout" in path else "GET", path, b"pay=card" if "checkout" in path else None,
                                     {"User-Agent": "ShopApp/4.1 (Android 14)"})
                with br.phase("jsp_compile_error"):  # a JSP pushed with a Java mistake, then requested
                    for fn, text in [("promo.jsp", '<% int x = "ten"; %><html><body><%= x %></body></html>'),
                                     ("wishlist.jsp", '<%@ page import="java.util.Lisst" %><% Lisst<String> w = null; %>ok'),
                                     ("banner.jsp", '<html><body><% if (true) { %>open</body></html>')]:
                        write_atomic(os.path.join(shop, fn), text)
                        with br.occurrence(3.0):
                            http_req(port, "GET", f"/shop/{fn}", timeout=60)
                with br.phase("bad_deployment"):  # webapps with a broken WEB-INF/web.xml deployed through the manager
                    for i, (name, webxml) in enumerate([
                            ("blog", TC_WEBXML.format(name="blog").replace("</web-app>", "<servlet><servlet-name>x</servlet-name>")),
                            ("api", TC_WEBXML.format(name="api").replace("org.apache.catalina.filters.RequestDumperFilter",
                                                                          "org.onb13.filters.AuditFilter")),
                            ("admin", TC_WEBXML.format(name="admin").replace("<url-pattern>/checkout.jsp</url-pattern>",
                                                                            "<url-pattern>checkout</url-pattern>")),
                            ("promo", "this is not xml\n")]):
                        d = os.path.join(work, "deploy", name)
                        os.makedirs(os.path.join(d, "WEB-INF"))
                        write_atomic(os.path.join(d, "WEB-INF", "web.xml"), webxml)
                        write_atomic(os.path.join(d, "index.jsp"), "<html><body>hello</body></html>")
                        subprocess.run(["chmod", "-R", "a+rX", d], check=False)
                        with br.occurrence(3.0):
                            manager(f"deploy?path=/{name}&war=file:{d}")
                        manager(f"undeploy?path=/{name}")
                        br.between()
                with br.phase("manager_wrong_password"):  # wrong passwords on the manager, until the realm locks the user
                    b64 = __import__("base64").b64encode
                    for who, pw in [("deployer", "deploy-onb13"), ("deployer", "Deploy-onb12"), ("deployer", "Deploy"),
                                    ("deployer", "Deploy-onb13"), ("admin", "admin"), ("tomcat", "s3cret")]:
                        with br.occurrence(1.5):
                            manager("list", auth="Basic " + b64(f"{who}:{pw}".encode()).decode())
                with br.phase("malformed_request"):  # not HTTP, a TLS hello on the plain port, a bad request line
                    for data in [TLS_HELLO, b"GET /shop/ HTTP/1.1\r\nHost: \x01bad\r\n\r\n", b"\x00\x01\x02garbage\r\n\r\n",
                                 b"GET /shop/<script> HTTP/1.1\r\nHost: x\r\n\r\n"]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("bad_config_restart"):  # server.xml edits with mistakes, the port taken, tomcat restarted
                    blocker = tcp_blocker()
                    good = TC_SERVER.format(port=port, conn_extra="")
                    for kw in [{"p": blocker.getsockname()[1]}, {"text": good.replace("</Service>", "</Servce>")},
                               {"conn_extra": ' maxThreadz="40" compresion="on"'},
                               {"text": good.replace("org.apache.catalina.valves.AccessLogValve", "org.apache.catalina.valves.AccessLogValv")},
                               {"text": good.replace('<Realm className="org.apache.catalina.realm.UserDatabaseRealm" '
                                                     'resourceName="UserDatabase"/>',
                                                     '<Realm className="org.apache.catalina.realm.UserDatabaseRealm" '
                                                     'resourceName="UserDB"/>')}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(4.0):
                            since = size_of(logp)
                            start(wait=False)
                            log_has(logp, b"Server startup in", since, 20)
                            time.sleep(1.5)
                            shopper(rng, calm=True)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("tomcat", "Apache Tomcat (catalina.sh run)", dpkg_version("tomcat10"),
                  "Tomcat's stdout (catalina.out): JULI ConsoleHandler with the OneLineFormatter, multi-line Java stack "
                  "traces as written, and the AccessLogValve writing to /dev/stdout: `06-Dec-2026 05:40:01.123 INFO "
                  "[http-nio-127.0.0.1-40123-exec-3] org.apache.catalina.filters.RequestDumperFilter.doLog "
                  "http-nio-127.0.0.1-40123-exec-3        requestURI=/shop/checkout.jsp`, `127.0.0.3 - - [06/Dec/2026:05:40:01 "
                  "+0000] \"GET /shop/product.jsp?id=12 HTTP/1.1\" 200 120 3`; the RequestDumperFilter traces each checkout / "
                  "account request by its exec thread from START TIME through headers, parameters and session to END TIME",
                  "catalina.sh run (a private CATALINA_BASE; a shop webapp of 7 JSPs with sessions and the RequestDumperFilter "
                  "on checkout.jsp / account.jsp, the manager app with a LockOutRealm over tomcat-users.xml) with shoppers "
                  "from 8 hosts (index, product, search, cart, checkout, account, report pages with a session cookie, some "
                  "404s) and an admin's manager text API (list, serverinfo, sessions, reload of /shop, findleaks); 2 clean "
                  "restarts (SIGTERM)",
                  "jsp_exception (6 requests making JSPs throw: NumberFormatException, NullPointerException, "
                  "ArithmeticException, NoSuchElementException), jsp_compile_error (3 JSPs that do not compile), "
                  "bad_deployment (4 webapps with a bad web.xml deployed through the manager: truncated, unknown filter class, "
                  "invalid url-pattern, not XML), manager_wrong_password (6: 3 wrong passwords locking the user, then the "
                  "right one refused while locked, 2 unknown users), malformed_request (4: a TLS hello, a bad header, garbage, "
                  "a bad character in the URI), bad_config_restart (5: the port taken, a mismatched tag in server.xml, unknown "
                  "connector attributes, an unknown valve class, a realm naming a missing resource)", normal, br.errors)


# --------------------------------------------------------------------------
# opensmtpd (smtpd -F through a private rsyslogd)
# --------------------------------------------------------------------------

SMTP_DOMAIN = "onb13.test"
SMTPD_CONF = """\
pki mx.{dom} cert "{work}/cert.pem"
pki mx.{dom} key "{work}/key.pem"
table virtuals file:{work}/virtuals
table recipients file:{work}/recipients
table trusted file:{work}/trusted
listen on 127.0.0.1 port {port} tls pki mx.{dom} hostname mx.{dom}
action "local" maildir "{work}/mail/%{{dest.user:lowercase}}" virtual <virtuals>
action "outbound" relay host smtp://127.0.0.1:{sink} helo mx.{dom}
match from any for domain "{dom}" rcpt-to <recipients> action "local"
match from src <trusted> for any action "outbound"
{extra}"""
SMTP_HEAD = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+[+-]\d\d:\d\d \S+ ")
opensmtpd_template = templater(SMTP_HEAD, (r"\[\d+\]", "[PID]"), (r"\b[0-9a-f]{16}\b", "ID"), (r"\b[0-9a-f]{8}\b", "ID"),
                               (r"<[^<>]*>", "<ADDR>"), (r"delay=\w+", "delay=N"), (r"/[\w./%{}:-]+", "PATH"))
EXT_DOMAINS = ["example.org", "partner.example", "customers.example.net", "lists.example.com"]


def opensmtpd_problem(line: str) -> bool:
    m = SMTP_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.search(r"\]: (warn|fatal|error)", line)) or bool(
        re.search(r"failed-command|bad-input|[Ee]rror|TempFail|PermFail|[Ff]ail|[Rr]efused|[Ii]nvalid|[Dd]enied|"
                  r"reason=(io-error|timeout|disconnect)|[Nn]o such|syntax", body))


class SmtpSink:
    """The smarthost: a minimal SMTP server accepting every message (until stopped), on 127.0.0.1:port."""

    def __init__(self, port: int):
        self.port = port
        self.srv = None
        self.up()

    def up(self) -> None:
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for _ in range(50):  # the old listener may take a moment to go
            try:
                self.srv.bind(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.2)
        self.srv.listen(32)
        threading.Thread(target=self.loop, args=(self.srv,), daemon=True).start()

    def down(self) -> None:
        with contextlib.suppress(OSError):  # shutdown wakes the thread blocked in accept(), so the port is freed
            self.srv.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.srv.close()

    def loop(self, srv: socket.socket) -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=self.session, args=(c,), daemon=True).start()

    @staticmethod
    def session(c: socket.socket) -> None:
        with contextlib.suppress(OSError), c:
            c.settimeout(20)
            f = c.makefile("rb")
            c.sendall(b"220 smarthost.onb13.test ESMTP sink\r\n")
            data = False
            for raw in f:
                line = raw.strip().upper()
                if data:
                    if line == b".":
                        data = False
                        c.sendall(b"250 2.0.0 Ok: queued\r\n")
                    continue
                if line.startswith(b"EHLO"):
                    c.sendall(b"250-smarthost.onb13.test\r\n250-8BITMIME\r\n250 SIZE 10485760\r\n")
                elif line.startswith(b"DATA"):
                    data = True
                    c.sendall(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                elif line.startswith(b"QUIT"):
                    c.sendall(b"221 2.0.0 Bye\r\n")
                    return
                else:
                    c.sendall(b"250 2.0.0 Ok\r\n")


def smtp_mail(rng: random.Random, frm: str, to: list[str]) -> bytes:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 120)))
    return (f"From: {frm}\r\nTo: {', '.join(to)}\r\nSubject: {rng.choice(HAM_SUBJECTS)}\r\n"
            f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\r\n"
            f"Message-ID: <{rng.getrandbits(48):x}@{frm.split('@')[1]}>\r\n\r\n{body}\r\n").encode()


def source_opensmtpd(args) -> Source:
    smtpd, smtpctl = need("/usr/sbin/smtpd", "opensmtpd"), need("smtpctl", "opensmtpd")
    openssl = need("openssl", "openssl")
    rng = random.Random(f"{args.seed}-opensmtpd")
    with tempfile.TemporaryDirectory(prefix="onb13-smtpd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        os.makedirs(os.path.join(work, "mail"))
        shutil.chown(os.path.join(work, "mail"), "nobody", "nogroup")
        port, sink_port = free_port(), free_port()
        conf, logp = os.path.join(work, "smtpd.conf"), os.path.join(work, "smtpd.log")
        subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", f"{work}/key.pem", "-out", f"{work}/cert.pem", "-days", "30", "-subj", f"/CN=mx.{SMTP_DOMAIN}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        os.chmod(f"{work}/key.pem", 0o600)
        local_users = USERS[:10]
        write_atomic(os.path.join(work, "virtuals"), "".join(f"{u}@{SMTP_DOMAIN} nobody\n" for u in local_users))
        write_atomic(os.path.join(work, "recipients"), "".join(f"{u}@{SMTP_DOMAIN}\n" for u in local_users))
        internal = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
        outside = ["127.0.0.20", "127.0.0.21", "127.0.0.22"]
        write_atomic(os.path.join(work, "trusted"), "".join(f"{a}\n" for a in internal))

        def write_conf(extra: str = "", p: int | None = None, text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else SMTPD_CONF.format(dom=SMTP_DOMAIN, work=work, port=p or port,
                                                                               sink=sink_port, extra=extra))

        ns = SyslogNS(sv, work, logp)
        sink = SmtpSink(sink_port)

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("smtpd", ns.argv([smtpd, "-F", "-f", conf]), stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"starting", since, 20)
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("smtpd", signal.SIGTERM, 20)

        def ctl(*cmd: str) -> int:
            return run_quiet([smtpctl] + list(cmd), 15)

        def send(r: random.Random, src: str, frm: str, to: list[str], helo: str | None = None) -> None:
            try:
                with smtplib.SMTP("127.0.0.1", port, local_hostname=helo or f"ws{src.rsplit('.', 1)[1]}.{SMTP_DOMAIN}",
                                  timeout=15, source_address=(src, 0)) as s:
                    s.sendmail(frm, to, smtp_mail(r, frm, to))
            except (OSError, smtplib.SMTPException):
                pass

        def mail_round(r: random.Random, calm: bool = False) -> None:
            a = r.random()
            if a < 0.45:  # internal mail
                u = r.choice(local_users)
                send(r, r.choice(internal), f"{u}@{SMTP_DOMAIN}", r.sample(local_users, r.randint(1, 3)))
            elif a < 0.75 or calm:  # inbound mail from the outside (MX)
                send(r, r.choice(outside), f"{r.choice(WORDS)}@{r.choice(EXT_DOMAINS)}", [f"{r.choice(local_users)}@{SMTP_DOMAIN}"],
                     helo=f"mail.{r.choice(EXT_DOMAINS)}")
            else:  # outgoing mail through the smarthost
                u = r.choice(local_users)
                send(r, r.choice(internal), f"{u}@{SMTP_DOMAIN}", [f"{r.choice(WORDS)}@{d}" for d in r.sample(EXT_DOMAINS, r.randint(1, 2))])

        write_conf()
        ctl("remove", "all")
        start()
        ctl("remove", "all")
        log = FileLog(logp)
        say(f"opensmtpd on 127.0.0.1:{port} (smarthost {sink_port}); normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [mail_round(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["admin"] > rng.uniform(5, 12):
                a = rng.random()
                if a < 0.4:
                    ctl("show", "stats")
                elif a < 0.7:
                    ctl("show", "queue")
                else:
                    ctl("schedule", "all")
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "opensmtpd", round_fn)
            templates = {opensmtpd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, opensmtpd_template, opensmtpd_problem))

            def restart_clean() -> None:
                sv.stop("smtpd", signal.SIGTERM, 20)
                sv.forget("smtpd")
                write_conf()
                start()

            def raw(src: str, lines: list[bytes], tls: bool = False) -> None:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0)) as s:
                    s.settimeout(3)
                    with contextlib.suppress(OSError):
                        s.recv(512)
                    for x in lines:
                        s.sendall(x)
                        time.sleep(0.15)
                        with contextlib.suppress(OSError):
                            s.recv(4096)

            with Background(lambda r: mail_round(r, calm=True), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("relay_denied"):  # outside hosts asking to relay to other domains
                    for src, frm, to in [("127.0.0.20", "promo@deals.example.biz", "ceo@example.org"),
                                         ("127.0.0.21", "info@spam.example", "someone@partner.example"),
                                         ("127.0.0.22", "bounce@list.example", "root@lists.example.com"),
                                         ("127.0.0.23", f"alice@{SMTP_DOMAIN}", "x@customers.example.net")]:
                        with br.occurrence(1.5):
                            send(rng, src, frm, [to], helo="relay.example.biz")
                with br.phase("unknown_recipient"):
                    for to in ["zed", "postmaster2", "alice.smith", "sales"]:
                        with br.occurrence(1.5):
                            send(rng, rng.choice(outside), f"{rng.choice(WORDS)}@{rng.choice(EXT_DOMAINS)}", [f"{to}@{SMTP_DOMAIN}"])
                with br.phase("bad_command"):  # SMTP clients speaking nonsense or out of order
                    for lines in [[b"HELO\r\n"], [b"EHLO ws2.onb13.test\r\n", b"RCPT TO:<alice@onb13.test>\r\n"],
                                  [b"EHLO ws2.onb13.test\r\n", b"MAIL FROM:<broken\r\n"], [b"XYZZY plugh\r\n", b"QUIT\r\n"],
                                  [b"EHLO ws3.onb13.test\r\nMAIL FROM:<a@onb13.test>\r\nRCPT TO:<bob@onb13.test>\r\n"],
                                  [b"EHLO ws3.onb13.test\r\n", b"MAIL FROM:<" + b"a" * 600 + b"@onb13.test>\r\n"]]:
                        with br.occurrence(1.5):
                            raw(rng.choice(internal + outside), lines)
                with br.phase("tls_failure"):  # STARTTLS handshakes failing, TLS garbage on the plain port
                    for i in range(4):
                        with br.occurrence(2.0):
                            if i % 2 == 0:
                                with contextlib.suppress(OSError, smtplib.SMTPException, ssl.SSLError):
                                    with smtplib.SMTP("127.0.0.1", port, timeout=10, source_address=(internal[i], 0)) as s:
                                        s.ehlo(f"ws{i}.{SMTP_DOMAIN}")
                                        ctx = ssl.create_default_context()
                                        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
                                        s.starttls(context=ctx)
                            elif i == 1:
                                raw(outside[0], [TLS_HELLO, b"\r\n"])
                            else:
                                raw(outside[1], [b"EHLO x.example\r\n", b"STARTTLS\r\n", b"\x16\x03\x01\x02\x00garbage-not-tls\r\n"])
                with br.phase("smarthost_unreachable"):  # the next hop down: outgoing mail deferred
                    sink.down()
                    br.between()
                    for i in range(3):
                        with br.occurrence(4.0):
                            u = rng.choice(local_users)
                            send(rng, rng.choice(internal), f"{u}@{SMTP_DOMAIN}", [f"{rng.choice(WORDS)}@{rng.choice(EXT_DOMAINS)}"])
                    sink.up()
                    ctl("schedule", "all")
                    time.sleep(3)
                    br.between()
                with br.phase("bad_config_restart"):  # smtpd.conf edits with mistakes, smtpd restarted
                    blocker = tcp_blocker()
                    good = SMTPD_CONF.format(dom=SMTP_DOMAIN, work=work, port=port, sink=sink_port, extra="")
                    for kw in [{"text": good.replace('action "local" maildir', 'action "local" mailbox')},
                               {"p": blocker.getsockname()[1]},
                               {"text": good.replace(f"file:{work}/recipients", f"file:{work}/recipients.db")},
                               {"text": good + 'match from any for domain "corp.test" action "archive"\n'}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.5)
                            mail_round(rng, calm=True)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            sink.down()
            ctl("remove", "all")
    return Source("opensmtpd", "OpenSMTPD (smtpd)", dpkg_version("opensmtpd"),
                  "smtpd -F logging through syslog to a private rsyslogd (RSYSLOG_FileFormat), its stdout/stderr appended: "
                  "`2026-12-06T05:29:05.695919+00:00 vm smtpd[16880]: 168ed7c38cd314e0 smtp connected address=127.0.0.9 "
                  "host=<unknown>`, `... smtp envelope evpid=01192cf98509a7ad from=<carol@onb13.test> to=<alice@onb13.test>`, "
                  "`... mda delivery evpid=... result=Ok stat=Delivered`; every SMTP session traced by its session id from "
                  "connected through message / envelope to disconnected, and each envelope by its evpid to its mda or mta "
                  "delivery",
                  "smtpd -F (a private smtpd.conf: one listener with STARTTLS offered, maildir delivery for 10 virtual "
                  "users of onb13.test, relay of outgoing mail from 4 trusted internal hosts to a smarthost run by this "
                  "script) with SMTP clients (smtplib): internal mail to 1-3 local users, inbound mail from 3 outside "
                  "hosts, outgoing mail to 1-2 external domains; smtpctl show stats / show queue / schedule all; 2 clean "
                  "restarts.  The queue lives in the system's /var/spool/smtpd (emptied with smtpctl remove all)",
                  "relay_denied (4 outside hosts relaying to other domains), unknown_recipient (4), bad_command (6: HELO "
                  "without a name, RCPT before MAIL, a broken MAIL FROM, an unknown command, pipelining, an over-long "
                  "address), tls_failure (4: 2 STARTTLS handshakes that fail (OpenSMTPD 6.8's privsep engine with "
                  "OpenSSL 3), a TLS hello on the plain port, garbage after STARTTLS), smarthost_unreachable (3 outgoing "
                  "mails while the smarthost is down), bad_config_restart (4: an unknown action keyword, the port taken, a "
                  "missing table file, an undefined action)", normal, br.errors)


# --------------------------------------------------------------------------
# mumble (murmurd -fg with a private ini)
# --------------------------------------------------------------------------

MUMBLE_INI = """\
database={work}/murmur.sqlite
host=127.0.0.1
port={port}
serverpassword=Srv-onb13-pass
users={users}
timeout=6
autobanAttempts=0
uname=mumble-server
welcometext="Welcome to the onb13 Mumble server"
bandwidth=72000
registerName=onb13 voice
{extra}"""
MUMBLE_HEAD = re.compile(r"^<\w>\d{4}-\d\d-\d\d [\d:.]+ ")
mumble_template = templater(MUMBLE_HEAD, (r"<\d+:[^(>]*\(-?\d+\)>", "<SESSION>"), (r"\b[0-9a-f]{8,}\b", "HEX"),
                            (r"/[\w./-]+", "PATH"), (r"\([^()]*: [^()]*\)", "(OS)"), keep="<L>")
MUMBLE_CLIENTS = [((1, 3, 4), "1.3.4", "Linux", "Debian GNU/Linux 12"), ((1, 3, 4), "1.3.4", "Win", "10.0.19045"),
                  ((1, 3, 3), "1.3.3", "OSX", "13.5"), ((1, 4, 230), "1.4.230", "X11", "Ubuntu 22.04"),
                  ((1, 3, 0), "1.3.0", "Android", "Mumla 3.6")]


def mumble_problem(line: str) -> bool:
    return line.startswith("<C>") or bool(
        re.search(r"[Rr]ejected|[Ee]rror|[Ff]ail|[Tt]imeout|[Ii]nvalid|[Dd]enied|[Cc]ould not|[Uu]nable|[Ww]rong", line))


def pb_varint(v: int) -> bytes:
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_field(n: int, v) -> bytes:
    if isinstance(v, int):
        return pb_varint(n << 3) + pb_varint(v)
    b = v.encode() if isinstance(v, str) else v
    return pb_varint((n << 3) | 2) + pb_varint(len(b)) + b


def mumble_msg(typ: int, *fields) -> bytes:
    payload = b"".join(pb_field(n, v) for n, v in fields)
    return struct.pack(">HI", typ, len(payload)) + payload


class MumbleClient:
    """A Mumble client speaking the control protocol (TLS, 6-byte framed protobuf messages): Version,
    Authenticate, Pings, UserState (self mute), TextMessage."""

    def __init__(self, port: int, timeout: float = 5):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        self.s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout))
        self.s.settimeout(timeout)

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            self.s.sendall(data)

    def drain(self, wait: float = 0.3) -> bytes:
        self.s.settimeout(wait)
        out = b""
        with contextlib.suppress(OSError):
            while True:
                chunk = self.s.recv(65536)
                if not chunk:
                    break
                out += chunk
        return out

    def login(self, user: str, password: str, client=MUMBLE_CLIENTS[0]) -> bytes:
        (ma, mi, pa), rel, os_, osv = client
        self.send(mumble_msg(0, (1, (ma << 16) | (mi << 8) | pa), (2, rel), (3, os_), (4, osv)))
        self.send(mumble_msg(2, (1, user), (2, password), (5, 1)))
        return self.drain(0.2)

    def ping(self) -> None:
        self.send(mumble_msg(3, (1, int(time.time() * 1000))))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.s.close()


def source_mumble(args) -> Source:
    murmurd = need("/usr/sbin/murmurd", "mumble-server")
    rng = random.Random(f"{args.seed}-mumble")
    with tempfile.TemporaryDirectory(prefix="onb13-mumble-") as work, Group() as sv:
        os.chmod(work, 0o755)
        shutil.chown(work, "mumble-server", "mumble-server")
        port = free_port()
        ini, logp = os.path.join(work, "murmur.ini"), os.path.join(work, "murmur.log")

        def write_conf(extra: str = "", p: int | None = None, text: str | None = None, users: int = 40) -> None:
            write_atomic(ini, text if text is not None else MUMBLE_INI.format(work=work, port=p or port, extra=extra, users=users))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("murmurd", [murmurd, "-fg", "-ini", ini], stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"Server listening", since, 30)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("murmurd", signal.SIGTERM, 20)

        def session(r: random.Random, user: str | None = None, calm: bool = False) -> None:
            user = user or r.choice(USERS)
            name = user if r.random() < 0.7 else f"{user}-{r.choice(['laptop', 'phone', 'desk'])}"
            try:
                c = MumbleClient(port)
            except OSError:
                return
            try:
                c.login(name, "Srv-onb13-pass", r.choice(MUMBLE_CLIENTS))
                for _ in range(r.randint(1, 3)):
                    c.ping()
                    if r.random() < 0.4:
                        c.send(mumble_msg(9, (9, 1)))  # UserState: self mute
                    if r.random() < 0.4:
                        c.send(mumble_msg(11, (3, 0), (5, " ".join(r.choice(WORDS) for _ in range(r.randint(2, 8))))))
                    c.drain(r.uniform(0.05, 0.15))
            finally:
                c.close()

        write_conf()
        start()
        log = FileLog(logp)
        say(f"murmurd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [session(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(4, 10))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:  # murmurd logs about 6 lines a session: the normal phase is cut at 3 x --min-normal-seconds
            normal = timed_normal_loop(args, log, "mumble", round_fn, max(args.min_normal_s, 40) * 3)
            templates = {mumble_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, mumble_template, mumble_problem))

            def restart_clean(**kw) -> None:
                sv.stop("murmurd", signal.SIGTERM, 20)
                sv.forget("murmurd")
                write_conf(**kw)
                start()

            calm = USERS[:6]
            with Background(lambda r: session(r, r.choice(calm)), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_server_password"):
                    for u, pw in [("heidi", "srv-onb13-pass"), ("ivan", ""), ("judy", "Srv-onb12-pass"), ("mallory", "letmein"),
                                  ("oscar", "Srv-onb13-pas"), ("erin", "SRV-ONB13-PASS")]:
                        with br.occurrence(1.5):
                            with contextlib.suppress(OSError):
                                c = MumbleClient(port)
                                c.login(u, pw, rng.choice(MUMBLE_CLIENTS))
                                c.close()
                with br.phase("invalid_username"):  # names the server's username regexp refuses
                    for u in ["bad name with spaces", "<script>", "", "x" * 200, "admin;drop", "tab\tname"]:
                        with br.occurrence(1.5):
                            with contextlib.suppress(OSError):
                                c = MumbleClient(port)
                                c.login(u, "Srv-onb13-pass", rng.choice(MUMBLE_CLIENTS))
                                c.close()
                with br.phase("server_full"):  # more clients than users= allows
                    restart_clean(users=6)
                    held = []
                    for u in USERS[6:12]:
                        with contextlib.suppress(OSError):
                            held.append(MumbleClient(port))
                            held[-1].login(u, "Srv-onb13-pass")
                    br.between()
                    for u in ["zoe", "yann", "xavier"]:
                        with br.occurrence(1.5):
                            with contextlib.suppress(OSError):
                                c = MumbleClient(port)
                                c.login(u, "Srv-onb13-pass")
                                c.close()
                    for c in held:
                        c.close()
                    restart_clean()
                    br.between()
                with br.phase("garbage_on_tls_port"):  # plain text and garbage where TLS is expected
                    for data in [b"GET / HTTP/1.1\r\nHost: voice.onb13.test\r\n\r\n", b"\x00\x00\x00\x05hello",
                                 b"SSH-2.0-OpenSSH_9.2p1\r\n", bytes(range(256)),
                                 b"\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00"]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("bad_config_restart"):  # murmur.ini edits with mistakes, murmurd restarted
                    blocker = tcp_blocker()
                    for kw in [{"p": blocker.getsockname()[1]}, {"extra": f"sslCert={work}/missing-cert.pem\nsslKey={work}/missing-key.pem\n"},
                               {"extra": "database=/nonexistent/dir/murmur.sqlite\n"}, {"extra": "host=192.0.2.77\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.5)
                            session(rng, rng.choice(calm), calm=True)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("mumble", "Mumble server (murmurd)", dpkg_version("mumble-server"),
                  "murmurd -fg log on stdout (<level letter><time> [server id =>] message): `<W>2026-12-06 05:34:25.431 1 => "
                  "<1:alice(-1)> Authenticated`, `<W>... 1 => <2:(-1)> New connection: 127.0.0.1:53852`, `<C>... Failed to "
                  "set initial capabilities`; every client session traced by its session number from New connection "
                  "through the client version and authentication to Connection closed",
                  "murmurd -fg -ini (a private ini: server password, users=40, timeout 6 s, autoban off, a private sqlite "
                  "database; no Ice / D-Bus; capabilities cannot be set in this container, a <C> line at every start) with "
                  "Mumble clients of this script (TLS, protobuf control messages: Version with 5 client versions / OSes, "
                  "Authenticate with the server password, Pings, self mute UserState, TextMessages, then a close) of 12 "
                  "users, some with device suffixes; 2 clean restarts",
                  "wrong_server_password (6), invalid_username (6: spaces, markup, empty, 200 characters, a semicolon, a tab), server_full (3 clients past users=6), garbage_on_tls_port (5: "
                  "HTTP, binary, an SSH banner, 256 bytes, a truncated TLS hello), bad_config_restart (4: the port taken, missing certificate files, a database in "
                  "a missing folder, an address not on this host)", normal, br.errors)


# --------------------------------------------------------------------------
# pureftpd (pure-ftpd standalone through a private rsyslogd)
# --------------------------------------------------------------------------

FTP_HEAD = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+[+-]\d\d:\d\d \S+ ")
pureftpd_template = templater(FTP_HEAD, (r"\[\d+\]", "[PID]"), (r"\(\?@[\d.]+\)|\([\w.-]+@[\d.]+\)", "(SESSION)"),
                              (r"\[[^\[\]]*\]$", "[ARG]"), (r"/[\w./-]+", "PATH"), (r"\([\d.]+ bytes, [\d.]+KB/sec\)", "(N bytes)"))


def pureftpd_problem(line: str) -> bool:
    return bool(re.search(r"\[(WARNING|ERROR)\]", line)) or bool(
        re.search(r"[Ff]ail|[Dd]enied|[Rr]efused|[Ii]nvalid|[Ee]rror|[Cc]an't|[Tt]oo many|[Uu]nknown|[Ss]orry|[Nn]ot allowed", line))


def source_pureftpd(args) -> Source:
    pureftpd = need("/usr/sbin/pure-ftpd", "pure-ftpd")
    pure_pw, openssl = need("pure-pw", "pure-ftpd"), need("openssl", "openssl")
    rng = random.Random(f"{args.seed}-pureftpd")
    with tempfile.TemporaryDirectory(prefix="onb13-pureftpd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        home = os.path.join(work, "ftp")
        users = USERS[:10]
        pw = {u: f"{u.capitalize()}-ftp-{i + 13}" for i, u in enumerate(users)}
        rows = []
        for u in users:
            os.makedirs(os.path.join(home, u, "incoming"))
            os.makedirs(os.path.join(home, u, "public"))
            for i in range(3):
                write_atomic(os.path.join(home, u, "public", f"{rng.choice(WORDS)}-{i}.txt"), "report\n" * rng.randint(5, 400))
            h = subprocess.run([openssl, "passwd", "-6", pw[u]], capture_output=True, text=True, check=True).stdout.strip()
            quota = "5242880" if u in ("heidi", "ivan") else ""  # a 5 MB quota for two users
            rows.append(f"{u}:{h}:65534:65534::{home}/{u}/./:::::::{quota}:::::")
        os.makedirs(os.path.join(home, "judy", "archive"))
        subprocess.run(["chown", "-R", "nobody:nogroup", home], check=False)
        os.chmod(os.path.join(home, "judy", "archive"), 0o555)
        write_atomic(os.path.join(work, "pureftpd.passwd"), "".join(r + "\n" for r in rows))
        subprocess.run([pure_pw, "mkdb", os.path.join(work, "pureftpd.pdb"), "-f", os.path.join(work, "pureftpd.passwd")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        port = free_port()
        logp = os.path.join(work, "pureftpd.log")
        ns = SyslogNS(sv, work, logp)

        def argv(p: int | None = None, extra: list[str] | None = None) -> list[str]:
            return [pureftpd, "-S", f"127.0.0.1,{p or port}", "-l", f"puredb:{work}/pureftpd.pdb", "-E", "-A", "-d", "-H",
                    "-u", "1", "-p", "40000:40999", "-C", "4", "-c", "40", "-I", "1", "-g", f"{work}/pure-ftpd.pid"] + (extra or [])

        def start(wait: bool = True, **kw) -> None:
            with open(logp, "ab") as logf:
                sv.start("pure-ftpd", ns.argv(argv(**kw)), stdout=logf, stderr=logf, cwd=work)
            if wait:
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("pure-ftpd", signal.SIGTERM, 15)

        hosts = [f"127.0.0.{i}" for i in range(2, 12)]

        def ftp(user: str, password: str, src: str) -> ftplib.FTP | None:
            f = ftplib.FTP(timeout=10, source_address=(src, 0))
            try:
                f.connect("127.0.0.1", port)
                f.login(user, password)
                return f
            except (OSError, ftplib.Error, EOFError):
                with contextlib.suppress(OSError, ftplib.Error, EOFError):
                    f.close()
                return None

        def session(r: random.Random, user: str | None = None, calm: bool = False) -> None:
            u = user or r.choice(users)
            f = ftp(u, pw[u], r.choice(hosts))
            if f is None:
                return
            try:
                f.pwd()
                for _ in range(r.randint(1, 4)):
                    a = r.random()
                    if a < 0.25:
                        f.cwd("/public")
                        names = f.nlst()
                        if names:
                            f.retrbinary(f"RETR {r.choice(names)}", lambda b: None)
                        f.cwd("/")
                    elif a < 0.5:
                        f.storbinary(f"STOR incoming/{r.choice(WORDS)}-{r.getrandbits(16):04x}.csv",
                                     io.BytesIO(b"id,qty\n" * r.randint(10, 3000)))
                    elif a < 0.65:
                        f.retrlines("LIST incoming", lambda x: None)
                    elif a < 0.75:
                        names = [n for n in f.nlst("incoming") if n.endswith(".csv")]
                        if names:
                            src = r.choice(names)
                            f.rename(src, src.replace(".csv", ".done"))
                    elif a < 0.85:
                        names = [n for n in f.nlst("incoming") if n.endswith(".done")]
                        if names:
                            f.delete(r.choice(names))
                    elif a < 0.92:
                        with contextlib.suppress(ftplib.Error):
                            f.mkd(f"incoming/{r.choice(WORDS)}")
                    else:
                        f.sendcmd("NOOP")
                        f.size(f"/public/{r.choice(f.nlst('/public')).rsplit('/', 1)[-1]}")
                f.quit()
            except (OSError, ftplib.Error, EOFError, IndexError):
                with contextlib.suppress(OSError):
                    f.close()

        start()
        log = FileLog(logp)
        say(f"pure-ftpd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [session(rr) for _ in range(rr.randint(1, 2))])
                       for _ in range(rng.randint(2, 5))]
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
            normal = normal_loop(args, log, "pureftpd", round_fn)
            templates = {pureftpd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, pureftpd_template, pureftpd_problem))

            def restart_clean() -> None:
                sv.stop("pure-ftpd", signal.SIGTERM, 10)
                sv.forget("pure-ftpd")
                start()

            calm = users[:5]
            with Background(lambda r: session(r, r.choice(calm)), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):
                    for u, bad in [("frank", "frank"), ("grace", pw["grace"].lower()), ("heidi", "Heidi-ftp-12")]:
                        with br.occurrence(1.5):
                            ftp(u, bad, rng.choice(hosts))
                with br.phase("unknown_user"):
                    for u in ["root", "admin", "backup", "www-data"]:
                        with br.occurrence(1.5):
                            ftp(u, "Passw0rd!", "127.0.0.30")
                with br.phase("anonymous_refused"):
                    for u in ["anonymous", "ftp"]:
                        with br.occurrence(1.5):
                            ftp(u, "guest@example.org", "127.0.0.31")
                with br.phase("permission_denied"):  # a read-only folder, files that are not there, outside the chroot
                    for u, op in [("judy", "stor"), ("judy", "mkd"), ("ivan", "retr"), ("grace", "dele"), ("frank", "cwd"),
                                  ("heidi", "quota")]:
                        with br.occurrence(1.5):
                            f = ftp(u, pw[u], rng.choice(hosts))
                            if f is not None:
                                with contextlib.suppress(OSError, ftplib.Error, EOFError):
                                    if op == "stor":
                                        f.storbinary("STOR archive/report.csv", io.BytesIO(b"x,y\n" * 50))
                                    elif op == "mkd":
                                        f.mkd("archive/2026")
                                    elif op == "retr":
                                        f.retrbinary("RETR public/missing-file.txt", lambda b: None)
                                    elif op == "dele":
                                        f.delete("incoming/nothing-here.csv")
                                    elif op == "cwd":
                                        f.cwd("../../etc")
                                    else:
                                        f.storbinary("STOR incoming/big.iso", io.BytesIO(b"\0" * 6 * 1024 * 1024))
                                with contextlib.suppress(OSError, ftplib.Error, EOFError):
                                    f.quit()
                with br.phase("too_many_connections"):  # one host opening more than 4 sessions at once
                    for src in ["127.0.0.8", "127.0.0.9"]:
                        with br.occurrence(2.0):
                            held = [ftp("carol", pw["carol"], src) for _ in range(6)]
                            for f in held:
                                if f is not None:
                                    with contextlib.suppress(OSError, ftplib.Error, EOFError):
                                        f.quit()
                with br.phase("bad_command"):  # unknown commands, commands before login, garbage
                    for lines in [[b"SITE EXEC /bin/sh\r\n"], [b"USER alice\r\n", b"RETR /etc/passwd\r\n"],
                                  [b"XYZZY\r\n", b"PORT 1,2,3\r\n"], [TLS_HELLO], [b"USER bob\r\n", b"PASS\r\n"]]:
                        with br.occurrence(2.0):
                            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5,
                                                                                        source_address=("127.0.0.32", 0)) as s:
                                s.settimeout(2)
                                with contextlib.suppress(OSError):
                                    s.recv(1024)
                                for x in lines:
                                    s.sendall(x)
                                    time.sleep(0.2)
                                    with contextlib.suppress(OSError):
                                        s.recv(1024)
                with br.phase("bad_options_restart"):  # pure-ftpd restarted with mistaken options
                    blocker = tcp_blocker()
                    for kw in [{"p": blocker.getsockname()[1]}, {"extra": ["-l", f"puredb:{work}/missing.pdb"]},
                               {"extra": ["-p", "50000:40000"]}, {"extra": ["--maxclientsperip", "many"]}]:
                        stop()
                        br.between()
                        with br.occurrence(3.0):
                            start(wait=False, **kw)
                            time.sleep(2)
                            session(rng, rng.choice(calm), calm=True)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("pureftpd", "Pure-FTPd (pure-ftpd)", dpkg_version("pure-ftpd"),
                  "pure-ftpd -d logging through syslog to a private rsyslogd (RSYSLOG_FileFormat), its stdout/stderr "
                  "appended: `2026-12-06T05:23:13.094359+00:00 vm pure-ftpd: (?@127.0.0.3) [INFO] New connection from "
                  "127.0.0.3`, `... (alice@127.0.0.3) [DEBUG] Command [stor] [incoming/x.csv]`, `... (alice@127.0.0.3) "
                  "[NOTICE] /tmp/.../alice//incoming/x.csv uploaded  (3000 bytes, 33665.75KB/sec)`; every FTP session "
                  "traced by (user@host) from the connection through each command to Logout",
                  "pure-ftpd standalone (puredb virtual users mapped to nobody, chroot, no anonymous, -d verbose, 4 "
                  "sessions per host, 5 MB quota for 2 users) with ftplib sessions of 10 users from 10 hosts: login, PWD, "
                  "CWD / NLST / RETR in public, STOR / LIST / RNFR-RNTO / DELE / MKD in incoming, NOOP / SIZE, QUIT; 2 clean "
                  "restarts",
                  "wrong_password (3), unknown_user (4), anonymous_refused (2), permission_denied (6: STOR / MKD in a "
                  "read-only folder, RETR / DELE of missing files, CWD outside the chroot, an upload past the quota), "
                  "too_many_connections (2: 6 sessions at once from one host), bad_command (5: SITE EXEC, RETR before "
                  "login, unknown commands, a TLS hello, PASS without a password), bad_options_restart (4: the port taken, "
                  "a missing puredb, an inverted passive port range, a non-numeric option)", normal, br.errors)


# --------------------------------------------------------------------------
# gunicorn (a small WSGI shop API)
# --------------------------------------------------------------------------

GUNI_APP = r'''
import json, time, hashlib
ORDERS = {}


def app(environ, start_response):
    path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
    q = dict(p.split("=", 1) for p in environ.get("QUERY_STRING", "").split("&") if "=" in p)
    status, body = "200 OK", {}
    parts = path.strip("/").split("/")
    if path == "/health":
        body = {"status": "ok"}
    elif parts[:2] == ["api", "products"]:
        body = {"id": int(parts[2]) if len(parts) > 2 else None, "price": 10}
    elif parts[:2] == ["api", "orders"] and method == "POST":
        data = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
        oid = len(ORDERS) + 1
        ORDERS[oid] = {"sku": data["sku"], "qty": int(data["qty"])}
        status, body = "201 Created", {"id": oid}
    elif parts[:2] == ["api", "orders"]:
        oid = int(parts[2]) if len(parts) > 2 else 0
        body = ORDERS[oid] if oid in ORDERS else {"orders": len(ORDERS)}
    elif path == "/api/report":
        time.sleep(float(q.get("seconds", "0.2")))
        body = {"rows": 24}
    elif path == "/api/hash":
        body = {"digest": hashlib.sha256(q.get("text", "").encode()).hexdigest(), "ratio": 100 // int(q.get("parts", "1"))}
    elif path == "/api/export":
        body = {"rows": [dict(sku=f"SKU-{i}", qty=i) for i in range(int(q["limit"]))][:50]}
    else:
        status, body = "404 Not Found", {"error": "not found"}
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
'''
GUNI_HEAD = re.compile(r"^(\[\d{4}-\d\d-\d\d [\d:]+ [+-]\d{4}\] \[\d+\] |\d+\.\d+\.\d+\.\d+ \S+ \S+ \[)")
gunicorn_template = templater(re.compile(r"^\[\d{4}-\d\d-\d\d [\d:]+ [+-]\d{4}\] |\[[^\]]*\] "), (r"\[\d+\]", "[PID]"),
                              (r"pid:? ?\d+", "pid N"), (r"\?[^ \"]*", "?Q"), (r"/[\w./-]+", "PATH"),
                              (r'"[^"]*"', '"S"'))
UAS_API = ["python-requests/2.31.0", "curl/7.88.1", "ShopApp/4.1 (Android 14)", "Go-http-client/1.1", "okhttp/4.12.0"]


def gunicorn_problem(text: str) -> bool:
    first = text.split("\n", 1)[0]
    return bool(re.search(r"\] \[(WARNING|ERROR|CRITICAL)\] ", first)) or bool(re.search(r'" [45]\d\d ', first)) or bool(
        re.search(r"[Ee]rror|[Ee]xception|[Ff]ail|TIMEOUT|[Ii]nvalid|SIGKILL|[Ee]xiting", first)) or "\nTraceback" in text


def source_gunicorn(args) -> Source:
    py = need(SYS_PY, "python3")
    if subprocess.run([py, "-c", "import gunicorn"], capture_output=True).returncode:
        raise RuntimeError("python3 -m gunicorn: the gunicorn module is missing (apt-get install python3-gunicorn)")
    rng = random.Random(f"{args.seed}-gunicorn")
    with tempfile.TemporaryDirectory(prefix="onb13-gunicorn-") as work, Group() as sv:
        os.chmod(work, 0o755)
        write_atomic(os.path.join(work, "shopapi.py"), GUNI_APP)
        port = free_port()
        logp = os.path.join(work, "gunicorn.log")

        def argv(p: int | None = None, app: str = "shopapi:app", extra: list[str] | None = None) -> list[str]:
            return [py, "-m", "gunicorn", "--chdir", work, "-b", f"127.0.0.1:{p or port}", "-w", "3", "--timeout", "4",
                    "--graceful-timeout", "5", "--log-level", "debug", "--access-logfile", logp, "--error-logfile", logp,
                    "--limit-request-line", "2048", "--limit-request-fields", "30", "--pid", f"{work}/gunicorn.pid",
                    "--name", "shopapi"] + (extra or []) + [app]

        def start(wait: bool = True, **kw) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("gunicorn", argv(**kw), stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"Booting worker", since, 30)
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 20)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("gunicorn", signal.SIGTERM, 20)

        def client(r: random.Random, calm: bool = False) -> None:
            ua, src = r.choice(UAS_API), f"127.0.0.{r.randint(2, 9)}"
            h = {"User-Agent": ua}
            for _ in range(r.randint(1, 4)):
                a = r.random()
                if a < 0.3:
                    http_req(port, "GET", f"/api/products/{r.randint(1, 300)}", headers=h, src=src)
                elif a < 0.5:
                    http_req(port, "POST", "/api/orders", json.dumps({"sku": f"SKU-{r.randint(1, 50)}", "qty": r.randint(1, 5)}).encode(),
                             dict(h, **{"Content-Type": "application/json"}), src=src)
                elif a < 0.65:
                    http_req(port, "GET", f"/api/orders/{r.randint(1, 40)}", headers=h, src=src)
                elif a < 0.75:
                    http_req(port, "GET", f"/api/hash?text={r.choice(WORDS)}&parts={r.randint(1, 9)}", headers=h, src=src)
                elif a < 0.83:
                    http_req(port, "GET", f"/api/report?seconds={r.choice(['0.1', '0.3', '0.6', '1.2'])}", headers=h, src=src)
                elif a < 0.9:
                    http_req(port, "GET", f"/api/export?limit={r.randint(1, 80)}", headers=h, src=src)
                elif a < 0.97 or calm:
                    http_req(port, "GET", "/health", headers={"User-Agent": "kube-probe/1.28"}, src="127.0.0.1")
                else:
                    http_req(port, "GET", f"/{r.choice(['favicon.ico', 'wp-login.php', 'api/v2/products'])}", headers=h, src=src)

        start()
        log = FileLog(logp)
        say(f"gunicorn on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "hup": time.time()}

        def master_pid() -> int:
            with contextlib.suppress(OSError, ValueError), open(f"{work}/gunicorn.pid") as f:
                return int(f.read().strip())
            return 0

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [client(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 4))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["hup"] > rng.uniform(12, 20):  # a deploy: HUP reloads the workers
                pid = master_pid()
                if pid:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGHUP)
                state["hup"] = time.time()
            if state["restarts"] < 2 and elapsed > 15 + 20 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "gunicorn", round_fn)
            templates = {gunicorn_template(x) for x in normal}
            is_head = lambda line: bool(GUNI_HEAD.match(line))  # noqa: E731
            br = Breaker(log, grouped_selector(templates, gunicorn_template, gunicorn_problem, head=is_head))

            def restart_clean() -> None:
                sv.stop("gunicorn", signal.SIGTERM, 20)
                sv.forget("gunicorn")
                write_atomic(os.path.join(work, "shopapi.py"), GUNI_APP)
                start()

            def workers() -> list[int]:
                out = []
                with contextlib.suppress(OSError):
                    for tid in os.listdir(f"/proc/{master_pid()}/task"):
                        with open(f"/proc/{master_pid()}/task/{tid}/children") as f:
                            out += [int(x) for x in f.read().split()]
                return out

            with Background(lambda r: client(r, calm=True), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("worker_timeout"):  # a report slower than --timeout 4: the worker is killed
                    for s in ["6", "9", "12"]:
                        with br.occurrence(3.0):
                            http_req(port, "GET", f"/api/report?seconds={s}", headers={"User-Agent": "python-requests/2.31.0"})
                with br.phase("app_exception"):  # requests that make the app raise: tracebacks and 500s
                    for m, path, body in [("POST", "/api/orders", b'{"sku": "SKU-1"}'), ("POST", "/api/orders", b"not json"),
                                          ("GET", "/api/hash?text=x&parts=0", None), ("GET", "/api/export", None),
                                          ("GET", "/api/products/abc", None), ("POST", "/api/orders", b'{"sku": "SKU-2", "qty": "two"}')]:
                        with br.occurrence(1.5):
                            http_req(port, m, path, body, {"User-Agent": rng.choice(UAS_API), "Content-Type": "application/json"})
                with br.phase("worker_killed"):  # a worker SIGKILLed (as by the OOM killer)
                    for i in range(3):
                        ws = workers()
                        with br.occurrence(3.0):
                            if ws:
                                with contextlib.suppress(OSError):
                                    os.kill(rng.choice(ws), signal.SIGKILL)
                        time.sleep(1)
                        br.between()
                with br.phase("bad_request"):  # garbage, over-long request lines, too many or broken headers
                    for data in [TLS_HELLO, b"GET /api/products/1 HTTP/1.1\r\nHost: x\r\n" + b"".join(
                                     f"X-H{i}: v\r\n".encode() for i in range(40)) + b"\r\n",
                                 b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"HELLO\r\n\r\n",
                                 b"GET /health HTTP/1.1\r\nHost x\r\n\r\n", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n"]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("bad_restart"):  # the app broken at a deploy, bad options, the port taken
                    blocker = tcp_blocker()
                    for kw in [{"file": GUNI_APP.replace("import json, time, hashlib", "import json, time, hashlib, simplejsn")},
                               {"file": GUNI_APP.replace("    elif path == \"/api/report\":", "    elif path == \"/api/report\"")},
                               {"app": "shopapi:application"}, {"p": blocker.getsockname()[1]},
                               {"extra": ["--worker-class", "geventlet"]}]:
                        stop()
                        br.between()
                        if "file" in kw:
                            write_atomic(os.path.join(work, "shopapi.py"), kw.pop("file"))
                        with br.occurrence(4.0):
                            start(wait=False, **kw)
                            time.sleep(3)
                            client(rng, calm=True)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("gunicorn", "Gunicorn WSGI server", dpkg_version("python3-gunicorn"),
                  "gunicorn's error log at debug and its access log written to the same file, its stdout/stderr appended: "
                  "`[2026-12-06 05:40:01 +0000] [1234] [DEBUG] GET /api/orders/12`, `127.0.0.3 - - [06/Dec/2026:05:40:01 +0000] "
                  "\"GET /api/orders/12 HTTP/1.1\" 200 26 \"-\" \"curl/7.88.1\"`, `[...] [1230] [INFO] Booting worker with pid: "
                  "1234`; tracebacks as continuation lines; each request traced by its worker pid (the DEBUG line) to its "
                  "access log line",
                  "python3 -m gunicorn (3 sync workers, --timeout 4, limits on request line and header count) serving a "
                  "small WSGI shop API to clients from 8 hosts with 5 user agents (product and order GETs, order POSTs, "
                  "hashes, reports of 0.1-1.2 s, exports, health probes, a few 404s), HUP reloads every 12-20 s, 2 clean "
                  "restarts",
                  "worker_timeout (3 reports slower than the timeout), app_exception (6: KeyError, JSONDecodeError, "
                  "ZeroDivisionError, a missing query parameter, ValueError x2), worker_killed (3 workers SIGKILLed), "
                  "bad_request (6: a TLS hello, too many headers, an over-long request line, garbage, a header without "
                  "colon, a bad HTTP version), bad_restart (5: an import error, a syntax error, a missing app object, the "
                  "port taken, an unknown worker class)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_thirteenth", SOURCES, globals(), seed=13013, min_normal_s=40,
               root_for="mount namespaces for syslog, programs dropping to their own users",
               record={"replaced_sources": REPLACED, "oddities": ODDITIES})


REPLACED = "none: the five programs of the brief (tomcat, opensmtpd, mumble, pureftpd, gunicorn)"
ODDITIES = [
    "mumble: murmurd logs about 6 lines a session, so its normal phase is cut at 3 x --min-normal-seconds and holds "
    "fewer than --lines lines",
    "mumble: every murmurd start writes <C> lines (capabilities and priority limits cannot be set in this container); "
    "they occur in the normal phase (restarts) and inside bad_config_restart events",
    "opensmtpd and pureftpd log only through syslog: their lines are written by a private rsyslogd (RSYSLOG_FileFormat, "
    "host name of this machine), the daemons' own stderr appended to the same file",
    "opensmtpd: STARTTLS is offered but every TLS handshake fails (OpenSMTPD 6.8's privsep key engine with OpenSSL 3), so "
    "the normal clients never use it; every delivery to a virtual user (mapped to nobody) writes a warn line about "
    "/nonexistent/.forward, in the normal phase too",
    "opensmtpd: the queue is the system's /var/spool/smtpd (emptied with smtpctl remove all before and after)",
    "tomcat and gunicorn: multi-line entries (stack traces, tracebacks, gunicorn's debug 'Current configuration' dump at "
    "a start) are kept whole, so restart events hold benign startup lines and a few events hold hundreds of lines",
    "restart events (bad_config_restart, bad_options_restart, bad_restart) hold the program's benign startup lines when "
    "they have a template not seen in the normal phase",
    "events may hold lines of the background traffic whose template never occurred in the normal phase (e.g. a request "
    "or session of a rarer shape)",
    "tomcat: only the first malformed HTTP request is logged at INFO (later ones at DEBUG), so malformed_request events "
    "after the first hold only access log lines",
]


if __name__ == "__main__":
    sys.exit(main())
