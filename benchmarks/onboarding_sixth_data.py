#!/usr/bin/env python3
"""Generate the sixth onboarding corpus: real log lines written by real programs, grouped into events.

A sixth corpus built exactly like benchmarks/onboarding_fifth_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py, of the fourth and of the
fifth script imported) from five programs that no other corpus uses.  Every line is the verbatim
output of a program started by this script on this machine; the script only *drives* the programs
(clients it runs) and *breaks* them (bad configs, killed or frozen dependencies, a full database,
garbage on the wire, wrong passwords and certificates...).  It never writes a log line itself.

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one bad reload,
one outage of a dependency (the state-change lines and the requests failing during it).  The
breakages are made one occurrence at a time, each in its own time window followed by a pause for
the program to finish logging about it; what the program logs between two windows (recovery,
restarting it) belongs to no event and is not kept.  Normal background traffic keeps running
during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends slapd
ldap-utils memcached stunnel4 caddy varnish apache2-utils; also util-linux (setpriv), openssl and
python3; the LDAP clients are ldap-utils (ldapsearch, ldapwhoami, ldapmodify, ldapadd, ldapdelete,
ldappasswd, ldapcompare), the memcached, TLS and HTTP clients are python code in this script.
Nothing is installed by this script, and no system service of these packages needs to run: each
daemon is started directly as a plain process, without systemd):

  slapd     OpenLDAP slapd 2.5 (-d stats, slapd.conf, back-mdb with maxsize 6 MB, as user openldap)
            on a free port; its log is its stderr (`hex-time.hex-ns 0xthread conn=N op=N BIND
            dn="..." method=128`, `... RESULT tag=97 err=0 qtime=... etime=... text=`).  A directory
            of 80 people, groups, service accounts and contractors loaded with slapadd.  Normal: apps
            searching a user as their service account then binding as the user (login), anonymous
            address-book searches, group-membership checks, users changing their phone number
            (ldapmodify) and password (ldappasswd), a provisioning job adding / deleting
            contractors and group members as the rootdn, compares, rootDSE monitoring, two clean
            restarts.
            Broken: wrong passwords, unknown users, operations on missing entries, access denied by
            the ACLs, schema violations (missing / undefined attributes, duplicates, bad syntax,
            deleting a non-leaf), anonymous searches over the size limit, requests for unsupported
            controls / extended operations / StartTLS, clients idle past idletimeout, the database full (MDB_MAP_FULL), broken
            slapd.conf at a restart (slapd exits).
  memcached memcached 1.6 (-vv, -m 16 -M, -I 1m, idle_timeout 6, as user memcache); its log is its
            stderr (`<fd new auto-negotiating client connection`, `<fd set key 0 300 42`,
            `>fd STORED`, `fd: Client using the ascii protocol`, binary-protocol hex dumps).
            Normal: pooled app connections (sessions, cache-aside get/set, counters, add-locks,
            touch, gets/cas, multi-gets, meta commands mg/ms/md), binary-protocol clients, cron /
            monitoring connections (stats, version), two clean restarts.
            Broken: unknown commands and garbage, bad data chunks, malformed command lines,
            incr/decr on non-numeric values, objects over the item size, memory full (-M), bad
            binary-protocol packets, clients idle past idle_timeout, bad options at a restart.
  stunnel   stunnel 5.68 (foreground, debug = info, `output` file, as user stunnel4):
            `yyyy.mm.dd hh:mm:ss LOGn[id]: message`.  Three services: [web] TLS in front of a
            python web origin, [api] mutual TLS (client certificates of a private CA, TLS 1.3
            only) in front of an API, [legacy] a client-mode tunnel (plaintext in, TLS with
            certificate and host-name check out to [web]).  Normal: HTTPS clients (TLS 1.3 and
            1.2, session resumption), API clients with client certificates, legacy plaintext
            clients, SIGHUP reloads, two clean restarts.
            Broken: plaintext / garbage on the TLS ports, handshakes aborted, API clients without
            a certificate / with a certificate of an unknown CA / offering only TLS 1.2, an origin
            stopped, an origin hanging past TIMEOUTidle, a certificate for the wrong host name
            deployed (the legacy tunnel's checkHost fails), broken configs at a SIGHUP reload.
  caddy     Caddy 2.6 (caddy run with a Caddyfile, as user caddy) logging JSON to stderr: its
            server logs (`{"level":"info","ts":...,"logger":"http","msg":...}`) and the access logs
            (`"logger":"http.log.access.log0","msg":"handled request","request":{...},"status":200`)
            on one file.  An HTTP site and an HTTPS site (tls internal): static files, an API
            balanced over two python backends with active health checks, a reports backend,
            uploads, redirects, basic auth for /admin/, gzip.  Normal: browsers and apps from 30
            addresses, config reloads through the admin API (caddy reload) every 20-40s, two
            clean restarts.
            Broken: a backend stopped, the reports backend hanging past response_header_timeout,
            backends answering 500, wrong basic-auth credentials, uploads over max_size, files
            made unreadable, vulnerability scanners probing well-known paths, broken configs pushed
            to the admin API (one loads: a wrong document root, replaced right after).
  varnish   Varnish 7.1 (varnishd -F, malloc storage, a VCL with a round-robin director of two web
            backends, an API backend, a purge ACL and an admin ACL) and its access log written by
            varnishncsa (`client - - [date] "request" status bytes "referer" "user-agent"
            handling time-to-first-byte`).  Normal: browsers and apps (cache hits, misses, passes
            for cookies and POSTs, 304s, 404s), PURGEs from the CMS, admin pages from the office,
            VCL reloads (varnishadm vcl.load / vcl.use) and bans, two clean restarts.
            Broken: a backend stopped, a backend hanging past first_byte_timeout, backends
            answering 500 / 502, PURGE and /admin from outside the ACLs, garbage / malformed
            requests, request headers over http_req_hdr_len.

Layout written under --out (default benchmarks/data/onboarding_sixth):

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

  * its level marks it as a problem (slapd results with an error code other than
    success / compare false / compare true, idle-timeout and error lines; memcached
    CLIENT_ERROR / SERVER_ERROR / ERROR replies, protocol errors, idle kicks and
    start-up failures; stunnel LOG0-LOG4 lines; caddy warn / error / fatal lines
    and access lines with status >= 400; varnishncsa lines with status >= 400), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, IPs and ports masked; domain names, DNs, cache keys, session ids, paths
    and attribute lists masked too) never occurred in the normal phase,

minus lines that merely echo the driving workload (slapd ACCEPT / BIND / SRCH /
MOD / ADD / DEL / CMP / EXT / UNBIND / closed lines and successful results;
memcached connection, protocol-choice and command lines and successful replies;
stunnel accepted / connected / handshake / certificate-accepted / closed lines;
caddy access lines with status < 400; varnishncsa lines with status < 400).
Lines of an entry that spans several lines (slapd continuation lines) are kept
with their entry.  An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_sixth_data.py --out benchmarks/data/onboarding_sixth \\
        [--sources slapd,memcached,stunnel,caddy,varnish] [--lines 6000] [--seed 6666] \\
        [--min-normal-seconds 60]

Needs root (programs dropping to their own users).  Programs run on free 127.0.0.1 ports from temp
dirs and are always stopped (process groups killed), also on failure; nothing under /etc or any
system service is touched.
"""
from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import random
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import (FileLog, free_port, need, say,  # noqa: E402
                             version_of, wait_port, write_atomic)
from onboarding_blind_data import ModeServer, mask_all  # noqa: E402
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Source,  # noqa: E402
                                     as_user, entry_selector, raw_send)
from onboarding_fourth_data import UAS, Origin, build_www, http_via, mask_names, random_path  # noqa: E402
from onboarding_fifth_data import normal_loop, run  # noqa: E402

SOURCES = ["slapd", "memcached", "stunnel", "caddy", "varnish"]

TLS_HELLO = b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(40)


def run_quiet(argv: list[str], timeout: float = 20, stdin: bytes | None = None) -> int:
    try:
        return subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return -1


def chown_tree(path: str, user: str) -> None:
    subprocess.run(["chown", "-R", f"{user}:", path], check=True)


# --------------------------------------------------------------------------
# slapd
# --------------------------------------------------------------------------

SLAPD_CONF = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
pidfile {work}/run/slapd.pid
argsfile {work}/run/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
loglevel stats
idletimeout 6
sizelimit 50
{extra}
database mdb
maxsize 6291456
suffix "dc=example,dc=test"
rootdn "cn=admin,dc=example,dc=test"
rootpw Adm1n-ldap
directory {work}/db
index objectClass eq
index uid,mail,member eq
access to attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to attrs=telephoneNumber,mobile,description,displayName
  by self write
  by users read
  by anonymous read
access to *
  by users read
  by anonymous read
"""

BASE = "dc=example,dc=test"
LDAP_PEOPLE = [f"{u}{i}" if i else u for i in range(7) for u in USERS[:10] + ["kim", "lee"]][:80]
LDAP_SERVICES = {"webapp": "W3bapp-svc", "mail": "Ma1l-svc", "vpn": "Vpn-svc-9", "wiki": "W1ki-svc"}
LDAP_GROUPS = ["staff", "developers", "ops", "vpn-users", "finance", "wiki-editors"]


def ldap_pw(user: str) -> str:
    return f"{user.capitalize()}-{sum(map(ord, user)) % 97:02d}!pw"


def slapd_base_ldif(rng: random.Random, groups: dict) -> str:
    """The directory; groups is filled with each group's members."""
    out = [f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n"]
    for ou in ["people", "groups", "services", "contractors"]:
        out.append(f"dn: ou={ou},{BASE}\nobjectClass: organizationalUnit\nou: {ou}\n")
    for i, u in enumerate(LDAP_PEOPLE):
        out.append(f"dn: uid={u},ou=people,{BASE}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\nuid: {u}\n"
                   f"cn: {u.capitalize()} {rng.choice(WORDS).capitalize()}\nsn: {rng.choice(WORDS).capitalize()}\n"
                   f"mail: {u}@example.test\ntelephoneNumber: +1 555 {rng.randint(1000, 9999)}\n"
                   f"employeeType: {rng.choice(['staff', 'staff', 'intern', 'manager'])}\n"
                   f"uidNumber: {10000 + i}\ngidNumber: 10000\nhomeDirectory: /home/{u}\nuserPassword: {ldap_pw(u)}\n")
    for s, pw in LDAP_SERVICES.items():
        out.append(f"dn: cn={s},ou=services,{BASE}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\n"
                   f"cn: {s}\nuserPassword: {pw}\n")
    for g in LDAP_GROUPS:
        groups[g] = set(rng.sample(LDAP_PEOPLE, rng.randint(5, 25)))
        members = "".join(f"member: uid={u},ou=people,{BASE}\n" for u in sorted(groups[g]))
        out.append(f"dn: cn={g},ou=groups,{BASE}\nobjectClass: groupOfNames\ncn: {g}\n{members}")
    return "\n".join(out)


SLAPD_HEAD = re.compile(r"^[0-9a-f]{8}\.[0-9a-f]{8} 0x[0-9a-f]+ ")


def slapd_template(line: str) -> str:
    m = SLAPD_HEAD.match(line)
    body = line[m.end():] if m else line
    body = re.sub(r"\b(SRCH|MOD) attr=.*", r"\1 attr=ATTRS", body)
    body = re.sub(r"\b(uid|cn|ou|dc)=[\w.-]+", r"\1=NAME", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def slapd_problem(line: str) -> bool:
    m = re.search(r"\berr=(\d+)", line)
    if m:
        return int(m.group(1)) not in (0, 5, 6, 14)
    return bool(re.search(r"(?i)(idletimeout|error|fail|invalid|unknown|denied|could not|unable|cannot|bad |"
                          r"not found|no such|mismatch|refused|too many)", line))


def slapd_echo(line: str) -> bool:
    return bool(re.search(r"conn=\d+ (fd=\d+ ACCEPT from |fd=\d+ closed$|op=\d+ (BIND |SRCH |MOD |ADD |DEL |CMP |EXT |"
                          r"PASSMOD |WHOAMI|UNBIND|MODRDN |(SEARCH )?RESULT .*err=(0|5|6) ))", line))


class LdapDriver:
    def __init__(self, port: int, rng: random.Random, groups: dict):
        self.url, self.rng, self.groups = f"ldap://127.0.0.1:{port}", rng, groups
        self.contractors: list[str] = []

    def tool(self, name: str, *args: str, stdin: str | None = None, timeout: float = 20) -> int:
        return run_quiet([name, "-x", "-H", self.url, *args], timeout, stdin.encode() if stdin is not None else None)

    def as_user(self, u: str, pw: str | None = None) -> list[str]:
        return ["-D", f"uid={u},ou=people,{BASE}", "-w", pw or ldap_pw(u)]

    def as_service(self, s: str, pw: str | None = None) -> list[str]:
        return ["-D", f"cn={s},ou=services,{BASE}", "-w", pw or LDAP_SERVICES[s]]

    def admin(self) -> list[str]:
        return ["-D", f"cn=admin,{BASE}", "-w", "Adm1n-ldap"]

    def normal(self, r: random.Random) -> None:
        x = r.random()
        u = r.choice(LDAP_PEOPLE)
        if x < 0.3:  # an app login: find the user as the service account, then bind as the user
            svc = r.choice(["webapp", "wiki", "vpn"])
            self.tool("ldapsearch", *self.as_service(svc), "-b", f"ou=people,{BASE}", f"(uid={u})", "dn", "cn", "mail")
            self.tool("ldapwhoami", *self.as_user(u))
            if svc == "vpn" or r.random() < 0.3:
                self.tool("ldapsearch", *self.as_service(svc), "-b", f"ou=groups,{BASE}",
                          f"(&(objectClass=groupOfNames)(member=uid={u},ou=people,{BASE}))", "cn")
        elif x < 0.5:  # the address book (anonymous)
            w = r.choice(LDAP_PEOPLE)[:r.randint(2, 4)]
            self.tool("ldapsearch", "-b", f"ou=people,{BASE}", r.choice([f"(cn={w}*)", f"(|(cn={w}*)(mail={w}*))", f"(mail={u}@example.test)"]),
                      *r.sample(["cn", "mail", "telephoneNumber", "displayName", "employeeType"], r.randint(1, 4)))
        elif x < 0.62:  # the mail server resolving recipients
            self.tool("ldapsearch", *self.as_service("mail"), "-b", BASE, f"(mail={u}@example.test)", "uid", "mail")
        elif x < 0.72:  # self service: phone numbers, descriptions
            attr = r.choice(["telephoneNumber", "mobile", "description", "displayName"])
            val = {"telephoneNumber": f"+1 555 {r.randint(1000, 9999)}", "mobile": f"+1 666 {r.randint(1000, 9999)}",
                   "description": f"{r.choice(WORDS)} team", "displayName": f"{u.capitalize()} {r.choice(WORDS)}"}[attr]
            self.tool("ldapmodify", *self.as_user(u), stdin=f"dn: uid={u},ou=people,{BASE}\nchangetype: modify\nreplace: {attr}\n{attr}: {val}\n")
        elif x < 0.77:  # password change (same password: the directory stays consistent)
            self.tool("ldappasswd", *self.as_user(u), "-a", ldap_pw(u), "-s", ldap_pw(u))
        elif x < 0.87:  # provisioning job: contractors and group members
            if self.contractors and (len(self.contractors) > 8 or r.random() < 0.4):
                c = self.contractors.pop(r.randrange(len(self.contractors)))
                self.tool("ldapdelete", *self.admin(), f"uid={c},ou=contractors,{BASE}")
            else:
                c = f"ext-{r.choice(WORDS)}{r.randint(100, 999)}"
                if c not in self.contractors:
                    self.contractors.append(c)
                    self.tool("ldapadd", *self.admin(), stdin=f"dn: uid={c},ou=contractors,{BASE}\nobjectClass: inetOrgPerson\n"
                                                             f"uid: {c}\ncn: {c}\nsn: Contractor\nmail: {c}@partner.test\n")
            g = r.choice(LDAP_GROUPS)
            op = "delete" if u in self.groups[g] else "add"
            if op == "delete" and len(self.groups[g]) < 6:
                return
            (self.groups[g].discard if op == "delete" else self.groups[g].add)(u)
            self.tool("ldapmodify", *self.admin(), stdin=f"dn: cn={g},ou=groups,{BASE}\nchangetype: modify\n{op}: member\n"
                                                                f"member: uid={u},ou=people,{BASE}\n")
        elif x < 0.93:
            self.tool("ldapcompare", *self.as_service("webapp"), f"uid={u},ou=people,{BASE}",
                      f"employeeType:{r.choice(['staff', 'manager'])}")
        else:  # monitoring
            self.tool("ldapsearch", "-b", "", "-s", "base", "(objectClass=*)", "namingContexts", "supportedLDAPVersion")


def ber_bind(msgid: int = 1) -> bytes:
    """An anonymous simple bind request."""
    return bytes([0x30, 0x0c, 0x02, 0x01, msgid, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00])


def source_slapd(args) -> Source:
    slapd = need("/usr/sbin/slapd", "slapd")
    need("ldapsearch", "ldap-utils")
    rng = random.Random(f"{args.seed}-slapd")
    with tempfile.TemporaryDirectory(prefix="onb6-slapd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port = free_port()
        for d in ("db", "run"):
            os.makedirs(os.path.join(work, d))
        conf, logp = os.path.join(work, "slapd.conf"), os.path.join(work, "slapd.log")

        def write_conf(extra: str = "") -> None:
            write_atomic(conf, SLAPD_CONF.format(work=work, extra=extra))
            os.chmod(conf, 0o644)

        write_conf()
        groups: dict[str, set] = {}
        write_atomic(os.path.join(work, "base.ldif"), slapd_base_ldif(rng, groups))
        subprocess.run(["slapadd", "-f", conf, "-l", os.path.join(work, "base.ldif")], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        chown_tree(work, "openldap")
        argv = [slapd, "-d", "stats", "-h", f"ldap://127.0.0.1:{port}/", "-f", conf, "-u", "openldap", "-g", "openldap"]

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("slapd", argv, stdout=logf, stderr=logf)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("slapd", signal.SIGTERM)

        def ensure_running() -> None:
            proc = sv.procs.get("slapd")
            if proc is None or proc.poll() is not None:
                sv.forget("slapd")
                start()

        start()
        drv = LdapDriver(port, rng, groups)
        log = FileLog(logp)
        say(f"slapd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 6)):
                drv.normal(rng)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1

        try:
            normal = normal_loop(args, log, "slapd", round_fn)
            templates = {slapd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, slapd_template, slapd_problem, slapd_echo,
                                             head=lambda line: not line.startswith(("\t", " "))))
            bg = lambda r: drv.normal(r) if r.random() < 0.7 else None
            with Background(bg, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("wrong_password"):  # typos, old passwords, a service account with a stale secret
                    for u, pw in [(LDAP_PEOPLE[3], "password"), (LDAP_PEOPLE[17], ldap_pw(LDAP_PEOPLE[17])[:-1]),
                                  (LDAP_PEOPLE[40], "Summer2024!"), (LDAP_PEOPLE[8], ldap_pw(LDAP_PEOPLE[9]))]:
                        with br.occurrence(1.0):
                            drv.tool("ldapwhoami", *drv.as_user(u, pw))
                    with br.occurrence(1.0):
                        drv.tool("ldapsearch", *drv.as_service("wiki", "W1ki-svc-old"), "-b", f"ou=people,{BASE}", "(uid=alice)", "cn")
                with br.phase("unknown_user"):  # accounts that do not exist (left, typos, guessing)
                    for u in ["admin", "alcie", "root", "j.smith"]:
                        with br.occurrence(1.0):
                            drv.tool("ldapwhoami", *drv.as_user(u, "secret123"))
                with br.phase("no_such_object"):  # operations on entries that are not there
                    cmds = [("ldapsearch", "-b", f"ou=staff,{BASE}", "(uid=alice)", "cn"),
                            ("ldapmodify", *drv.admin()),
                            ("ldapdelete", *drv.admin(), f"uid=ext-gone123,ou=contractors,{BASE}"),
                            ("ldapcompare", *drv.as_service("webapp"), f"uid=nobody,ou=people,{BASE}", "employeeType:staff")]
                    for c in cmds:
                        with br.occurrence(1.0):
                            if c[0] == "ldapmodify":
                                drv.tool(*c, stdin=f"dn: cn=interns,ou=groups,{BASE}\nchangetype: modify\nadd: member\n"
                                                   f"member: uid=alice,ou=people,{BASE}\n")
                            else:
                                drv.tool(*c)
                with br.phase("access_denied"):  # the ACLs refuse the change
                    u, v = LDAP_PEOPLE[5], LDAP_PEOPLE[6]
                    with br.occurrence(1.0):  # a user editing someone else's entry
                        drv.tool("ldapmodify", *drv.as_user(u), stdin=f"dn: uid={v},ou=people,{BASE}\nchangetype: modify\n"
                                                                      f"replace: telephoneNumber\ntelephoneNumber: +1 555 0000\n")
                    with br.occurrence(1.0):  # a user changing their own name
                        drv.tool("ldapmodify", *drv.as_user(u), stdin=f"dn: uid={u},ou=people,{BASE}\nchangetype: modify\n"
                                                                      f"replace: cn\ncn: The Boss\n")
                    with br.occurrence(1.0):  # an anonymous add
                        drv.tool("ldapadd", stdin=f"dn: uid=eve,ou=people,{BASE}\nobjectClass: inetOrgPerson\nuid: eve\ncn: Eve\nsn: E\n")
                    with br.occurrence(1.0):  # a service account deleting a user
                        drv.tool("ldapdelete", *drv.as_service("webapp"), f"uid={v},ou=people,{BASE}")
                with br.phase("schema_violation"):  # broken provisioning input
                    ldifs = [f"dn: uid=ext-nosn,ou=contractors,{BASE}\nobjectClass: inetOrgPerson\nuid: ext-nosn\ncn: No Surname\n",
                             f"dn: uid=ext-badattr,ou=contractors,{BASE}\nobjectClass: inetOrgPerson\nuid: ext-badattr\ncn: X\nsn: Y\n"
                             f"favouriteColour: blue\n",
                             f"dn: uid={LDAP_PEOPLE[2]},ou=people,{BASE}\nobjectClass: inetOrgPerson\nuid: {LDAP_PEOPLE[2]}\ncn: Dup\nsn: Dup\n",
                             f"dn: uid=ext-badnum,ou=contractors,{BASE}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n"
                             f"uid: ext-badnum\ncn: X\nsn: Y\nuidNumber: twelve\ngidNumber: 10000\nhomeDirectory: /home/x\n"]
                    for ldif in ldifs:
                        with br.occurrence(1.0):
                            drv.tool("ldapadd", *drv.admin(), stdin=ldif)
                    with br.occurrence(1.0):  # deleting a non-leaf entry
                        drv.tool("ldapdelete", *drv.admin(), f"ou=groups,{BASE}")
                with br.phase("size_limit"):  # anonymous dumps of the whole directory
                    for f in ["(objectClass=*)", "(uid=*)", "(mail=*example.test)"]:
                        with br.occurrence(1.0):
                            drv.tool("ldapsearch", "-b", f"ou=people,{BASE}", f, "mail")
                with br.phase("unsupported_request"):  # clients asking for what this server does not offer
                    reqs = [("ldapsearch", "-e", "!1.2.840.113556.1.4.319=10", "-b", f"ou=people,{BASE}", "(uid=alice)", "cn"),
                            ("ldapexop", *drv.as_service("webapp"), "1.3.6.1.4.1.4203.1.11.9"),
                            ("ldapwhoami", "-ZZ", *drv.as_service("vpn")),
                            ("ldapsearch", "-e", "!1.3.6.1.4.1.42.2.27.8.5.1", *drv.as_service("wiki"), "-b", BASE, "(uid=bob)", "cn"),
                            ("ldapmodrdn", *drv.as_user(LDAP_PEOPLE[11]), f"uid={LDAP_PEOPLE[11]},ou=people,{BASE}", "uid=boss")]
                    for req in reqs:
                        with br.occurrence(1.0):
                            drv.tool(*req)
                with br.phase("idle_timeout"):  # pooled connections left idle past idletimeout
                    for i in range(3):
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
                                s.sendall(ber_bind(1))
                                s.settimeout(12)
                                with contextlib.suppress(OSError):
                                    s.recv(100)
                                    s.recv(100)
                with br.phase("database_full"):  # an import of photos fills the database (maxsize)
                    photo = os.path.join(work, "photo.bin")
                    with open(photo, "wb") as f:
                        f.write(rng.randbytes(700_000))
                    os.chmod(photo, 0o644)
                    for i in range(3):
                        added = []
                        with br.occurrence(1.5):
                            for j in range(14):
                                c = f"ext-photo{i}{j}"
                                rc = drv.tool("ldapadd", *drv.admin(), stdin=f"dn: uid={c},ou=contractors,{BASE}\n"
                                                                             f"objectClass: inetOrgPerson\nuid: {c}\ncn: {c}\nsn: Photo\n"
                                                                             f"jpegPhoto:< file://{photo}\n")
                                if rc != 0:
                                    break
                                added.append(c)
                        for c in added:
                            drv.tool("ldapdelete", *drv.admin(), f"uid={c},ou=contractors,{BASE}")
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # slapd.conf edits with mistakes, slapd restarted
                    for extra in ["sizelimit lots", "include /etc/ldap/schema/ppolicy-new.schema", "moduleload back_nosuch",
                                  "access to * by nobody read", "idletimeout -5 seconds"]:
                        stop()
                        br.between()
                        write_conf(extra)
                        with br.occurrence(1.5):
                            start(wait=False)
                            time.sleep(2)
                        write_conf()
                        sv.stop("slapd")
                        sv.forget("slapd")
                        start()
                        time.sleep(1)
                        br.between()
        finally:
            stop()
    return Source("slapd", "OpenLDAP slapd", version_of([slapd, "-VV"]),
                  "slapd -d stats on stderr (`hex-seconds.hex-ns 0xthread conn=N op=N BIND dn=\"...\" method=128`, "
                  "`conn=N op=N SRCH base=\"...\" scope=2 deref=0 filter=\"...\"`, `conn=N op=N RESULT tag=97 err=0 qtime=... "
                  "etime=... text=`, `conn=N fd=N ACCEPT from IP=...`; config errors and start/stop messages in between)",
                  "slapd (slapd.conf, back-mdb, as openldap) with 80 people, 6 groups, 4 service accounts; apps searching "
                  "a user as their service account then binding as the user, vpn group checks, anonymous address-book "
                  "searches, the mail server resolving recipients, users changing their phone / description (ldapmodify) "
                  "and password (ldappasswd), a provisioning job adding / deleting contractors and group members as the "
                  "rootdn, compares, rootDSE monitoring (all with ldap-utils); 2 clean restarts",
                  "wrong_password (5, one a service account), unknown_user (4), no_such_object (4: search base, modify, "
                  "delete, compare), access_denied (4: editing another user, own cn, anonymous add, service account "
                  "delete), schema_violation (5: missing sn, undefined attribute, duplicate entry, bad uidNumber syntax, "
                  "non-leaf delete), size_limit (3 anonymous dumps > sizelimit 50), unsupported_request (5: an unknown "
                  "critical control, an unknown extended operation, StartTLS without TLS, an unsupported critical "
                  "control, a rename refused by the ACLs), idle_timeout (3 connections idle > idletimeout 6), database_full (3x 700 KB "
                  "photos added until MDB_MAP_FULL, maxsize 6 MB), bad_config_restart (5 broken slapd.conf at a restart)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# memcached
# --------------------------------------------------------------------------

MC_CMDS = ("get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend", "cas", "incr", "decr", "delete", "touch",
           "mg", "ms", "md", "ma", "mn", "stats", "version", "quit", "verbosity", "flush_all")
MC_LINE = re.compile(r"^([<>])(\d+) ")


def memcached_template(line: str) -> str:
    m = MC_LINE.match(line)
    if m:
        rest = line[m.end():]
        cmd = rest.split(" ", 1)[0]
        if cmd in MC_CMDS:
            rest = cmd + " ARGS"
        elif rest.startswith("sending key "):
            rest = "sending key KEY"
        elif rest.startswith("VALUE ") or rest.startswith("VA "):
            rest = rest.split(" ")[0] + " ARGS"
        line = m.group(1) + "FD " + rest
    return mask_all(re.sub(r"\b\d+: ", "FD: ", line))


def memcached_problem(line: str) -> bool:
    return bool(re.search(r"(^>\d+ (CLIENT_ERROR|SERVER_ERROR|ERROR)|Protocol error|Closing idle fd|Writing an error|"
                          r"(?i:failed|can't|cannot|invalid|illegal|error|too many|not a number|usage))", line))


def memcached_echo(line: str) -> bool:
    m = MC_LINE.match(line)
    if m:
        rest = line[m.end():]
        if m.group(1) == "<":
            if re.match(r"(GET|GETK|GETQ|SET|ADD|REPLACE|DELETE|INCREMENT|DECREMENT|TOUCH|GAT|APPEND|PREPEND) \S+$", rest):
                return True  # binary-protocol commands
            return rest.split(" ", 1)[0] in MC_CMDS or rest in ("new auto-negotiating client connection", "connection closed.",
                                                               "Read binary protocol data:") or rest.startswith("   0x")
        return bool(re.match(r"(STORED|END|DELETED|TOUCHED|NOT_FOUND|NOT_STORED|EXISTS|OK|VERSION |\d+$|sending key |"
                             r"Writing bin response:|  0x|Writing an error: Not found$)", rest))
    return bool(re.match(r"\d+: Client using the (ascii|binary) protocol$", line))


class McClient:
    """A minimal memcached text / binary protocol client."""

    def __init__(self, port: int, timeout: float = 5):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.f = self.s.makefile("rwb")

    def cmd(self, line: bytes, data: bytes | None = None) -> bytes:
        self.f.write(line + b"\r\n" + (data + b"\r\n" if data is not None else b""))
        self.f.flush()
        word = line.split(b" ", 1)[0]
        out = b""
        if word in (b"get", b"gets", b"gat", b"stats"):
            while True:
                x = self.f.readline()
                if not x:
                    break
                out += x
                if x.startswith(b"VALUE "):
                    out += self.f.read(int(x.split()[3]) + 2)
                if x in (b"END\r\n",) or x.startswith((b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")):
                    break
            return out
        out = self.f.readline()
        if out.startswith(b"VA "):
            out += self.f.read(int(out.split()[1]) + 2)
        return out

    def binary(self, opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"") -> bytes:
        body = extras + key + value
        self.f.write(struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(body), 0, 0) + body)
        self.f.flush()
        head = self.f.read(24)
        if len(head) < 24:
            return b""
        return head + self.f.read(struct.unpack(">I", head[8:12])[0])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.f.write(b"quit\r\n")
            self.f.flush()
        with contextlib.suppress(OSError):
            self.s.close()


class McApps:
    """The apps of a web shop using memcached: pooled connections, cron jobs, monitoring."""

    def __init__(self, port: int, rng: random.Random):
        self.port, self.rng, self.pool = port, rng, []

    def conn(self) -> McClient:
        r = self.rng
        if len(self.pool) < 4 or r.random() < 0.05:  # the pool grows / recycles connections
            if len(self.pool) >= 4:
                self.pool.pop(r.randrange(len(self.pool))).close()
            self.pool.append(McClient(self.port))
        return r.choice(self.pool)

    def reset(self) -> None:
        for c in self.pool:
            c.close()
        self.pool = []

    def normal(self, r: random.Random) -> None:
        try:
            self._normal(r)
        except (OSError, ValueError, IndexError):
            self.reset()

    def _normal(self, r: random.Random) -> None:
        x = r.random()
        uid = r.randint(1, 400)
        if x < 0.75:
            c = self.conn()
            y = r.random()
            if y < 0.3:  # sessions
                key = f"session:{r.getrandbits(40):010x}"[:20]
                c.cmd(f"get sess:{uid}".encode())
                if r.random() < 0.5:
                    c.cmd(f"set sess:{uid} 0 1800 {len(key)}".encode(), key.encode())
                else:
                    c.cmd(f"touch sess:{uid} 1800".encode())
            elif y < 0.55:  # cache-aside
                key = f"{r.choice(['product', 'category', 'page', 'user'])}:{r.choice(WORDS)}:{r.randint(1, 60)}"
                got = c.cmd(f"get {key}".encode())
                if got == b"END\r\n":
                    val = json.dumps({"k": key, "v": [r.randint(1, 99) for _ in range(r.randint(1, 30))]}).encode()
                    c.cmd(f"set {key} {r.randint(0, 3)} {r.choice([60, 300, 600])} {len(val)}".encode(), val)
            elif y < 0.65:  # counters
                key = f"views:{r.choice(WORDS)}"
                if c.cmd(f"incr {key} {r.randint(1, 3)}".encode()).startswith(b"NOT_FOUND"):
                    c.cmd(f"add {key} 0 0 1".encode(), b"1")
                if r.random() < 0.2:
                    c.cmd(f"decr stock:{r.choice(WORDS)} 1".encode())
            elif y < 0.72:  # locks
                key = f"lock:order:{r.randint(1, 50)}"
                c.cmd(f"add {key} 0 10 1".encode(), b"1")
                c.cmd(f"delete {key}".encode())
            elif y < 0.8:  # multi-get of a page's fragments
                keys = " ".join(f"frag:{r.choice(WORDS)}:{i}" for i in range(r.randint(2, 6)))
                c.cmd(f"get {keys}".encode())
            elif y < 0.87:  # optimistic updates of a cart
                key = f"cart:{uid}"
                got = c.cmd(f"gets {key}".encode())
                m = re.match(rb"VALUE \S+ \d+ \d+ (\d+)", got)
                val = json.dumps({"items": r.randint(0, 9)}).encode()
                if m:
                    c.cmd(f"cas {key} 0 3600 {len(val)} {m.group(1).decode()}".encode(), val)
                else:
                    c.cmd(f"set {key} 0 3600 {len(val)}".encode(), val)
            elif y < 0.95:  # the new service uses meta commands
                key = f"rate:{r.choice(USERS)}:{r.randint(1, 9)}"
                got = c.cmd(f"mg {key} v t".encode())
                if got.startswith(b"EN"):
                    c.cmd(f"ms {key} 2 T60".encode(), b"ok")
                elif r.random() < 0.2:
                    c.cmd(f"md {key}".encode())
            else:
                c.cmd(f"delete {r.choice(['product', 'page'])}:{r.choice(WORDS)}:{r.randint(1, 60)}".encode())
        elif x < 0.85:  # a java app on the binary protocol
            c = McClient(self.port)
            key = f"bin:{r.choice(WORDS)}".encode()
            c.binary(0x00, key)
            if r.random() < 0.5:
                c.binary(0x01, key, b"v" * r.randint(1, 40), struct.pack(">II", 0, 300))
            c.binary(0x0a)  # noop
            c.binary(0x07)  # quit
            c.close()
        elif x < 0.95:  # cron jobs
            c = McClient(self.port)
            c.cmd(b"set report:last_run 0 0 10", str(int(time.time())).encode())
            c.cmd(b"get report:last_run")
            c.close()
        else:  # monitoring
            c = McClient(self.port)
            c.cmd(r.choice([b"stats", b"stats slabs", b"stats items", b"version"]))
            c.close()


def source_memcached(args) -> Source:
    memcached = need("/usr/bin/memcached", "memcached")
    rng = random.Random(f"{args.seed}-memcached")
    with tempfile.TemporaryDirectory(prefix="onb6-memcached-") as work, Group() as sv:
        port = free_port()
        logp = os.path.join(work, "memcached.log")
        base = ["-u", "memcache", "-l", "127.0.0.1", "-p", str(port), "-m", "16", "-M", "-c", "256", "-t", "2",
                "-I", "1m", "-o", "idle_timeout=6,slab_automove=0"]

        def start(opts: list[str] | None = None, wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("memcached", [memcached, "-vv"] + (opts or base), stdout=logf, stderr=logf)
            if wait:
                wait_port(port)

        def stop() -> None:
            sv.stop("memcached", signal.SIGTERM)

        start()
        apps = McApps(port, rng)
        log = FileLog(logp)
        say(f"memcached on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(3, 10)):
                apps.normal(rng)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                apps.reset()
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.01, 0.05))

        def raw(data: bytes, wait: float = 0.4) -> None:
            raw_send(port, data, wait)

        try:
            normal = normal_loop(args, log, "memcached", round_fn)
            apps.reset()
            templates = {memcached_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, memcached_template, memcached_problem, memcached_echo))
            bg_apps = McApps(port, random.Random(rng.random()))

            def bg(r: random.Random) -> None:  # no pooled connections left idle between two calls
                bg_apps.normal(r)
                bg_apps.reset()

            with Background(bg, random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("unknown_command"):  # other protocols and garbage on the port
                    for p in [b"PING\r\n", b"*1\r\n$4\r\nPING\r\n", b"GET / HTTP/1.1\r\nHost: cache1\r\n\r\n",
                              b"HELO mail.example.test\r\n", b"\x00\x01garbage\xff\r\n"]:
                        with br.occurrence(1.0):
                            raw(p)
                with br.phase("bad_data_chunk"):  # clients sending a value of another length than announced
                    for p in [b"set sess:9 0 1800 5\r\nabcdefgh\r\n", b"add lock:x 0 10 1\r\n12\r\n",
                              b"append frag:a:1 0 0 2\r\nxyz\r\n", b"set cart:3 0 3600 10\r\nshort\r\n\r\nmore\r\n"]:
                        with br.occurrence(1.0):
                            raw(p)
                with br.phase("bad_command_line"):  # malformed command lines from a buggy client library
                    for p in [b"get " + b"k" * 300 + b"\r\n", b"set key 0 0 -1\r\n", b"set key zero 0 3\r\nabc\r\n",
                              b"incr views:x many\r\n", b"touch sess:1\r\n", b"cas cart:1 0 0 3\r\nabc\r\n"]:
                        with br.occurrence(1.0):
                            raw(p)
                with br.phase("non_numeric_value"):  # incr/decr on values that are not counters
                    for key in ["sess:12", "page:home:1", "cart:7"]:
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError):
                                c = McClient(port)
                                c.cmd(f"set {key} 0 300 7".encode(), b"{json:1")
                                c.cmd(f"{rng.choice(['incr', 'decr'])} {key} 1".encode())
                                c.close()
                with br.phase("object_too_large"):  # values over the item size limit (-I 1m)
                    for size in [1_100_000, 2_000_000, 1_500_000]:
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError):
                                c = McClient(port, 10)
                                c.cmd(f"set export:{rng.choice(WORDS)} 0 600 {size}".encode(), b"z" * size)
                                c.close()
                with br.phase("out_of_memory"):  # a batch job filling the cache (-M: no eviction)
                    for i in range(3):
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError):
                                c = McClient(port, 10)
                                for j in range(50):
                                    if c.cmd(f"set bulk:{i}:{j} 0 0 500000".encode(), b"b" * 500_000).startswith(b"SERVER_ERROR"):
                                        c.cmd(f"set bulk:{i}:{j}:retry 0 0 500000".encode(), b"b" * 500_000)
                                        break
                                c.close()
                        with contextlib.suppress(OSError):
                            c = McClient(port)
                            c.cmd(b"flush_all")
                            c.close()
                        time.sleep(0.5)
                        br.between()
                with br.phase("binary_protocol_error"):  # broken binary-protocol packets
                    for p in [struct.pack(">BBHBBHIIQ", 0x80, 0x01, 3, 0, 0, 0, 3, 0, 0) + b"foo",
                              struct.pack(">BBHBBHIIQ", 0x80, 0x5f, 0, 0, 0, 0, 0, 0, 0),
                              struct.pack(">BBHBBHIIQ", 0x80, 0x00, 300, 0, 0, 0, 300, 0, 0) + b"k" * 300]:
                        with br.occurrence(1.0):
                            raw(p)
                with br.phase("idle_timeout"):  # connections left open by a leaking client pool
                    for i in range(3):
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError):
                                cs = [McClient(port) for _ in range(rng.randint(1, 3))]
                                for c in cs:
                                    c.cmd(b"version")
                                time.sleep(8.5)
                                for c in cs:
                                    c.close()
                with br.phase("bad_config_restart"):  # wrong options in the unit file / a second instance
                    for opts in [["-m", "lots"], ["-o", "idle_timeout=5,bogus_option=1"], ["-u", "memcached"],
                                 ["-t", "0"], None]:
                        apps.reset()
                        br.between()
                        with br.occurrence(1.5):
                            if opts is None:  # port already taken by the running instance
                                start(base, wait=False)
                                time.sleep(1)
                                sv.forget("memcached")
                            else:
                                stop()
                                start(base[:] + opts, wait=False)
                                time.sleep(1)
                        proc = sv.procs.get("memcached")
                        if proc is None or proc.poll() is not None:
                            sv.forget("memcached")
                            start()
                        time.sleep(0.5)
                        br.between()
        finally:
            apps.reset()
            stop()
            # the "port taken" instance was forgotten: make sure nothing of ours is left on the port
            for pid, cmd in _procs_with(f"-p {port} "):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    return Source("memcached", "memcached", version_of([memcached, "-V"]),
                  "memcached -vv on stderr, no timestamp (`<fd new auto-negotiating client connection`, `fd: Client using "
                  "the ascii protocol`, `<fd get key`, `>fd sending key key`, `>fd END`, `<fd connection closed.`, binary-"
                  "protocol hex dumps, slab class lines at start-up, start-up errors)",
                  "memcached -vv (-m 16 -M, -I 1m, idle_timeout 6, as memcache); a pool of up to 4 app connections (sessions "
                  "get/set/touch, cache-aside get/set, counters incr/add/decr, add-locks, multi-gets, gets/cas carts, meta "
                  "mg/ms/md rate keys), binary-protocol clients (get/set/noop/quit), cron jobs, monitoring (stats, stats slabs, "
                  "version); 2 clean restarts",
                  "unknown_command (5: PING, RESP, HTTP, SMTP, garbage), bad_data_chunk (4 values longer/shorter than "
                  "announced), bad_command_line (6: 300-char key, negative length, bad flags, bad delta, missing exptime, "
                  "missing cas id), non_numeric_value (3 incr/decr on JSON values), object_too_large (3 values > -I 1m), "
                  "out_of_memory (3x a batch job filling -m 16 with -M), binary_protocol_error (3 bad packets), "
                  "idle_timeout (3x 1-3 connections idle > 6s), bad_config_restart (5: bad -m, unknown -o option, unknown "
                  "user, -t 0, a second instance on the same port)", normal, br.errors)


def _procs_with(needle: str) -> list[tuple[int, str]]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                if needle in cmd and "memcached" in cmd.split(" ")[0]:
                    out.append((int(pid), cmd))
    return out


# --------------------------------------------------------------------------
# stunnel
# --------------------------------------------------------------------------

STUNNEL_CONF = """\
foreground = yes
output = {work}/stunnel.log
debug = info
pid = {work}/stunnel.pid
setuid = stunnel4
setgid = stunnel4

[web]
accept = 127.0.0.1:{web}
connect = 127.0.0.1:{origin}
cert = {work}/{webcert}
CAfile = {work}/ca.crt
TIMEOUTidle = 3

[api]
accept = 127.0.0.1:{api}
connect = 127.0.0.1:{apiorigin}
cert = {work}/server.pem
CAfile = {work}/ca.crt
verifyChain = yes
sslVersionMin = TLSv1.3

[legacy]
client = yes
accept = 127.0.0.1:{legacy}
connect = 127.0.0.1:{web}
CAfile = {work}/ca.crt
verifyChain = yes
checkHost = www.example.test
{extra}
"""

ST_HEAD = re.compile(r"^\d{4}\.\d\d\.\d\d \d\d:\d\d:\d\d LOG(\d)\[[^\]]*\]: ")


def stunnel_template(line: str) -> str:
    m = ST_HEAD.match(line)
    body = (f"LOG{m.group(1)} " + line[m.end():]) if m else line
    body = re.sub(r"Session id: [0-9A-F]+", "Session id: ID", body)
    body = re.sub(r"/\S+", "PATH", body)
    return mask_names(body)


def stunnel_problem(line: str) -> bool:
    m = ST_HEAD.match(line)
    return bool(m and int(m.group(1)) <= 4)


def stunnel_echo(line: str) -> bool:
    m = ST_HEAD.match(line)
    if not m:
        return False
    return bool(re.match(r"(Service \[\w+\] accepted connection from |Service \[\w+\] connected remote server from |"
                         r"s_connect: connect(ing|ed) |persistence: |TLS (accepted|connected): (new session negotiated|"
                         r"previous session reused)|TLSv1\.\d ciphersuite: |Peer temporary key: |Session id: |"
                         r"Peer certificate (not )?required|No peer certificate received|Certificate accepted at depth=|"
                         r"CERT: |Connection closed: |Connection reset/closed: |Certificate verification disabled|"
                         r"Host name \".*\" matched|s_poll_wait: .*|Remote socket \(FD=\d+\) initialized|"
                         r"Local socket \(FD=\d+\) initialized|Deallocating application specific data)", line[m.end():]))


def make_ca(work: str) -> None:
    """A private CA, server certificates (right and wrong host name), client certificates, a rogue CA."""
    def ossl(*a: str) -> None:
        subprocess.run(["openssl", *a], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)

    for ca, cn in [("ca", "Example Internal CA"), ("rogue", "Totally Legit CA")]:
        ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{ca}.key",
             "-out", f"{ca}.crt", "-days", "365", "-subj", f"/CN={cn}")
    for name, cn, ca, ext in [("server", "www.example.test", "ca", "subjectAltName=DNS:www.example.test,DNS:api.example.test"),
                              ("wronghost", "old.example.test", "ca", "subjectAltName=DNS:old.example.test"),
                              ("app1", "app1.example.test", "ca", None), ("app2", "app2.example.test", "ca", None),
                              ("billing", "billing.example.test", "ca", None), ("intruder", "app1.example.test", "rogue", None)]:
        ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key", "-out",
             f"{name}.csr", "-subj", f"/CN={cn}")
        extra = []
        if ext:
            with open(os.path.join(work, f"{name}.ext"), "w") as f:
                f.write(ext + "\n")
            extra = ["-extfile", f"{name}.ext"]
        ossl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.crt", "-days", "90", *extra)
        with open(os.path.join(work, f"{name}.pem"), "w") as f:
            f.write(open(os.path.join(work, f"{name}.key")).read() + open(os.path.join(work, f"{name}.crt")).read())


class TlsClients:
    def __init__(self, work: str, ports: dict, rng: random.Random):
        self.work, self.ports, self.rng = work, ports, rng
        self.sessions: dict = {}
        self.ctxs: dict = {}

    def ctx(self, cert: str | None = None, ca: str = "ca", maxv=None) -> ssl.SSLContext:
        """One context per client kind (a session can only be resumed with the context that made it)."""
        if (cert, ca, maxv) in self.ctxs:
            return self.ctxs[(cert, ca, maxv)]
        c = self.ctxs[(cert, ca, maxv)] = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.load_verify_locations(os.path.join(self.work, f"{ca}.crt"))
        c.check_hostname = False
        if cert:
            c.load_cert_chain(os.path.join(self.work, f"{cert}.crt"), os.path.join(self.work, f"{cert}.key"))
        if maxv:
            c.maximum_version = maxv
        return c

    def request(self, port: int, method: str, path: str, ctx: ssl.SSLContext | None = None, key: str | None = None,
                body: bytes | None = None, timeout: float = 8) -> int:
        """One HTTP/1.0 request through the tunnel (TLS when ctx), resuming the TLS session of `key`."""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout) as raw:
                s = raw
                if ctx:
                    s = ctx.wrap_socket(raw, server_hostname="www.example.test", session=self.sessions.get(key))
                req = (f"{method} {path} HTTP/1.0\r\nHost: www.example.test\r\nUser-Agent: {self.rng.choice(UAS)}\r\n"
                       + (f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n" if body else "") + "\r\n").encode()
                s.sendall(req + (body or b""))
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                if ctx and key:
                    self.sessions[key] = s.session
                with contextlib.suppress(OSError):
                    if ctx:
                        s.unwrap()
                m = re.match(rb"HTTP/1\.\d (\d+)", data)
                return int(m.group(1)) if m else 0
        except (OSError, ValueError):
            return 0

    def normal(self, r: random.Random) -> None:
        x = r.random()
        if x < 0.45:  # browsers on the TLS web front
            who = f"browser{r.randint(1, 12)}"
            tls12 = r.random() < 0.25
            ctx = self.ctx(maxv=ssl.TLSVersion.TLSv1_2 if tls12 else None)
            for _ in range(r.randint(1, 4)):
                method, path = random_path(r, clean=r.random() < 0.9)
                self.request(self.ports["web"], method, path, ctx, who + ("-12" if tls12 else ""),
                             json.dumps({"n": r.randint(1, 9)}).encode() if method in ("POST", "PUT") else None)
        elif x < 0.8:  # services on the mutual-TLS API
            app = r.choice(["app1", "app2", "billing"])
            ctx = self.ctx(cert=app)
            for _ in range(r.randint(1, 3)):
                method = r.choice(["GET", "GET", "GET", "POST", "PUT"])
                self.request(self.ports["api"], method, f"/api/v1/{r.choice(['orders', 'invoices', 'stock', 'users'])}/{r.randint(1, 900)}",
                             ctx, app, json.dumps({"q": r.randint(1, 99)}).encode() if method != "GET" else None)
        else:  # the legacy app speaking plain HTTP into the client-mode tunnel
            method, path = random_path(r, clean=True)
            self.request(self.ports["legacy"], "GET" if method != "HEAD" else "HEAD", path)


def source_stunnel(args) -> Source:
    stunnel = need("/usr/bin/stunnel4", "stunnel4")
    need("openssl", "openssl")
    rng = random.Random(f"{args.seed}-stunnel")
    with tempfile.TemporaryDirectory(prefix="onb6-stunnel-") as work, Group() as sv:
        make_ca(work)
        for f in os.listdir(work):
            os.chmod(os.path.join(work, f), 0o600 if f.endswith((".key", ".pem")) else 0o644)
        chown_tree(work, "stunnel4")
        os.chmod(work, 0o755)
        origin, api_origin = ModeServer(Origin, hang=6).start(), ModeServer(Origin, hang=6).start()
        ports = {"web": free_port(), "api": free_port(), "legacy": free_port()}
        conf, logp = os.path.join(work, "stunnel.conf"), os.path.join(work, "stunnel.log")

        def write_conf(extra: str = "", webcert: str = "server.pem", text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else
                         STUNNEL_CONF.format(work=work, extra=extra, webcert=webcert, origin=origin.port,
                                             apiorigin=api_origin.port, **ports))
            os.chmod(conf, 0o644)

        def start() -> None:
            sv.start("stunnel", [stunnel, conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            wait_port(ports["web"])

        def sig(s: int) -> None:
            proc = sv.procs.get("stunnel")
            if proc and proc.poll() is None:
                proc.send_signal(s)

        def ensure_running() -> None:
            proc = sv.procs.get("stunnel")
            if proc is None or proc.poll() is not None:
                sv.forget("stunnel")
                start()

        def stop() -> None:
            sv.stop("stunnel", signal.SIGTERM)

        write_conf()
        start()
        cl = TlsClients(work, ports, rng)
        log = FileLog(logp)
        say(f"stunnel on 127.0.0.1:{ports['web']}/{ports['api']}/{ports['legacy']}; normal phase...")
        state = {"restarts": 0, "last": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 6)):
                cl.normal(rng)
            if time.time() - state["last"] > rng.uniform(15, 30):
                sig(signal.SIGHUP)
                state["last"] = time.time()
                time.sleep(0.5)
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "stunnel", round_fn)
            templates = {stunnel_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, stunnel_template, stunnel_problem, stunnel_echo))
            bg = TlsClients(work, ports, random.Random(rng.random()))
            with Background(bg.normal, random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("plaintext_on_tls_port"):  # plain HTTP, SMTP, SSH and garbage on the TLS ports
                    for port, p in [("web", b"GET / HTTP/1.1\r\nHost: www.example.test\r\n\r\n"), ("api", b"EHLO scanner\r\n"),
                                    ("web", b"SSH-2.0-OpenSSH_9.2\r\n"), ("api", b"\x00\x00\x00\x00garbage" * 8),
                                    ("web", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")]:
                        with br.occurrence(1.0):
                            raw_send(ports[port], p, 0.5)
                with br.phase("handshake_aborted"):  # clients going away in the middle of the handshake
                    for i in range(3):
                        with br.occurrence(1.0):
                            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", ports["web" if i != 1 else "api"]), 5) as s:
                                if i:
                                    s.sendall(TLS_HELLO[:20])
                                time.sleep(0.3)
                                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                with br.phase("client_cert_missing"):  # API clients without a certificate
                    for i in range(3):
                        with br.occurrence(1.0):
                            cl.request(ports["api"], "GET", f"/api/v1/orders/{rng.randint(1, 900)}", cl.ctx())
                with br.phase("client_cert_untrusted"):  # a certificate issued by another CA
                    for i in range(3):
                        with br.occurrence(1.0):
                            cl.request(ports["api"], "GET", f"/api/v1/users/{rng.randint(1, 900)}", cl.ctx(cert="intruder", ca="ca"))
                with br.phase("tls_version_too_old"):  # an old client library that stops at TLS 1.2
                    for i in range(3):
                        with br.occurrence(1.0):
                            cl.request(ports["api"], "GET", "/api/v1/stock/1", cl.ctx(cert="billing", maxv=ssl.TLSVersion.TLSv1_2))
                with br.phase("backend_down"):  # the web / API origin stopped
                    for name in ["web", "api", "web", "api"]:
                        srv = origin if name == "web" else api_origin
                        with br.occurrence(1.5):
                            srv.stop()
                            cl.request(ports[name], "GET", "/api/v1/orders/1" if name == "api" else "/",
                                       cl.ctx(cert="app1" if name == "api" else None))
                        srv.start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("backend_timeout"):  # the origin hangs past TIMEOUTidle
                    for i in range(3):
                        with br.occurrence(1.5):
                            origin.mode = "hang"
                            cl.request(ports["web"], "GET", f"/reports/{rng.choice(WORDS)}", cl.ctx(), timeout=10)
                            origin.mode = "ok"
                        time.sleep(3)
                        br.between()
                with br.phase("upstream_cert_mismatch"):  # a certificate for the wrong host deployed on [web]
                    write_conf(webcert="wronghost.pem")
                    sig(signal.SIGHUP)
                    time.sleep(1)
                    br.between()
                    for i in range(3):
                        with br.occurrence(1.0):
                            cl.request(ports["legacy"], "GET", random_path(rng, True)[1])
                    write_conf()
                    sig(signal.SIGHUP)
                    time.sleep(1)
                    br.between()
                with br.phase("bad_config_reload"):  # config edits with mistakes, SIGHUP
                    base_text = STUNNEL_CONF.format(work=work, extra="", webcert="server.pem", origin=origin.port,
                                                    apiorigin=api_origin.port, **ports)
                    for text in [base_text.replace("server.pem\nCAfile", "server-2025.pem\nCAfile", 1),
                                 base_text.replace("TIMEOUTidle = 3", "TIMEOUTidel = 3"),
                                 base_text.replace(f"connect = 127.0.0.1:{api_origin.port}", "connect = 127.0.0.1:api-backend"),
                                 base_text.replace("sslVersionMin = TLSv1.3", "sslVersionMin = TLSv1.4"),
                                 base_text.replace("[legacy]", "[legacy")]:
                        write_conf(text=text)
                        with br.occurrence(1.5):
                            sig(signal.SIGHUP)
                            time.sleep(0.5)
                            cl.request(ports["web"], "GET", "/", cl.ctx())
                        write_conf()
                        ensure_running()
                        sig(signal.SIGHUP)
                        time.sleep(1)
                        br.between()
        finally:
            stop()
            origin.stop()
            api_origin.stop()
    return Source("stunnel", "stunnel", version_of([stunnel, "-version"]),
                  "stunnel `output` file, debug = info (`yyyy.mm.dd hh:mm:ss LOGn[id]: message`, n = syslog level 3-6, id = "
                  "connection number or ui / cron; per connection: accepted, TLS handshake, certificate, s_connect, closed lines)",
                  "stunnel (as stunnel4) with [web] (TLS in front of a python web origin, TIMEOUTidle 3), [api] (mutual TLS with "
                  "client certificates of a private CA, TLS 1.3 only, in front of a python API) and [legacy] (client mode: "
                  "plaintext in, TLS with verifyChain + checkHost out to [web]); browsers over TLS 1.3 and 1.2 resuming sessions, "
                  "three API clients with certificates, a legacy plaintext app; SIGHUP reloads every 15-30s, 2 clean restarts",
                  "plaintext_on_tls_port (5: HTTP, SMTP, SSH, garbage, HTTP/2 preface), handshake_aborted (3: connect-and-reset, "
                  "half a ClientHello), client_cert_missing (3), client_cert_untrusted (3 certificates of another CA), "
                  "tls_version_too_old (3 API clients stopping at TLS 1.2), backend_down (4x the web / API origin stopped), "
                  "backend_timeout (3x the web origin hanging 6s > TIMEOUTidle 3), upstream_cert_mismatch (3 legacy requests "
                  "while [web] serves a certificate for another host name), bad_config_reload (5 broken configs + SIGHUP)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# caddy
# --------------------------------------------------------------------------

CADDYFILE = """\
{{
	admin 127.0.0.1:{admin}
	skip_install_trust
	auto_https disable_redirects
	storage file_system {work}/data
	servers {{
		protocols h1 h2
	}}
	log {{
		output stderr
		format json
		level INFO
	}}
}}

(site) {{
	log {{
		output stderr
		format json
	}}
	root * {www}
	encode gzip
	header X-Deploy "{deploy}"
	redir /old/* /products/ permanent
	handle /api/* {{
		reverse_proxy 127.0.0.1:{api1} 127.0.0.1:{api2} {{
			lb_policy round_robin
			fail_duration 5s
			health_uri /api/health
			health_interval 3s
			health_timeout 2s
		}}
	}}
	handle /reports/* {{
		reverse_proxy 127.0.0.1:{reports} {{
			transport http {{
				response_header_timeout 2s
			}}
		}}
	}}
	handle /upload/* {{
		request_body {{
			max_size 128KB
		}}
		reverse_proxy 127.0.0.1:{api1}
	}}
	handle /admin/* {{
		basicauth {{
{users}
		}}
		file_server
	}}
	handle {{
		file_server browse
	}}
{extra}
}}

http://:{http} {{
	import site
}}

https://localhost:{https} {{
	tls internal
	import site
}}
"""

CADDY_USERS = {"admin": "Adm1n-pass", "ops": "0ps-rota", "editor": "Ed1tor!"}


def caddy_level(line: str) -> tuple[str, int | None]:
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        d = json.loads(line)
        status = d.get("status") if d.get("msg") == "handled request" else None
        return d.get("level", ""), status
    return "", None


def caddy_template(line: str) -> str:
    try:
        d = json.loads(line)
    except ValueError:
        return mask_names(re.sub(r"/\S+", "PATH", line))
    if not isinstance(d, dict):
        return mask_names(line)
    req = d.get("request") or {}
    parts = [d.get("level", ""), d.get("logger", ""), re.sub(r"/\S+", "PATH", str(d.get("msg", ""))), req.get("method", ""),
             str(d.get("status", "")), ",".join(sorted(k for k in d if k not in ("ts", "request", "resp_headers", "duration",
                                                                                "size", "user_id", "err_id", "err_trace")))]
    for k in ("error", "upstream", "reason", "host", "signal", "address", "server_name", "identifier"):
        if k in d:
            parts.append(f"{k}={re.sub(r'/[^ ,]+', 'PATH', str(d[k]))}")
    return mask_names(" ".join(parts))


def caddy_problem(line: str) -> bool:
    level, status = caddy_level(line)
    if status is not None:
        return status >= 400
    return level in ("warn", "error", "fatal", "panic") or not level


def caddy_echo(line: str) -> bool:
    level, status = caddy_level(line)
    return status is not None and status < 400


def source_caddy(args) -> Source:
    caddy = need("/usr/bin/caddy", "caddy")
    htpasswd = need("htpasswd", "apache2-utils")
    rng = random.Random(f"{args.seed}-caddy")
    with tempfile.TemporaryDirectory(prefix="onb6-caddy-") as work, Group() as sv:
        os.chmod(work, 0o755)
        www = os.path.join(work, "www")
        build_www(www, rng)
        for d in ("data", "config", "home"):
            os.makedirs(os.path.join(work, d))
        chown_tree(work, "caddy")
        ports = {"http": free_port(), "https": free_port(), "admin": free_port()}
        backends = {"api1": ModeServer(Origin).start(), "api2": ModeServer(Origin).start(),
                    "reports": ModeServer(Origin, hang=5).start()}
        users = []
        for u, pw in CADDY_USERS.items():  # bcrypt, cost 5
            out = subprocess.run([htpasswd, "-nbBC", "5", u, pw], capture_output=True, text=True, check=True).stdout.strip()
            users.append("\t\t\t" + out.replace(":", " ", 1))
        conf, logp = os.path.join(work, "Caddyfile"), os.path.join(work, "caddy.log")
        env = dict(os.environ, HOME=os.path.join(work, "home"), XDG_DATA_HOME=os.path.join(work, "data"),
                   XDG_CONFIG_HOME=os.path.join(work, "config"))
        state = {"restarts": 0, "last": time.time(), "deploy": 1}

        def caddyfile(extra: str = "", text_sub=None) -> str:
            text = CADDYFILE.format(work=work, www=www, users="\n".join(users), extra=extra, deploy=f"r{state['deploy']}",
                                    **ports, **{k: b.port for k, b in backends.items()})
            return text_sub(text) if text_sub else text

        def write_conf(text: str) -> None:
            write_atomic(conf, text)
            os.chmod(conf, 0o644)

        def start() -> None:
            with open(logp, "ab") as logf:
                sv.start("caddy", as_user("caddy", [caddy, "run", "--config", conf, "--adapter", "caddyfile"]),
                         stdout=logf, stderr=logf, cwd=work, env=env)
            wait_port(ports["http"])

        def reload() -> None:
            run_quiet([caddy, "reload", "--config", conf, "--adapter", "caddyfile", "--address", f"127.0.0.1:{ports['admin']}"], 30)

        def stop() -> None:
            sv.stop("caddy", signal.SIGTERM)

        def ensure_running() -> None:
            proc = sv.procs.get("caddy")
            if proc is None or proc.poll() is not None:
                sv.forget("caddy")
                start()

        write_conf(caddyfile())
        start()
        tls_ctx = ssl.create_default_context()
        tls_ctx.check_hostname, tls_ctx.verify_mode = False, ssl.CERT_NONE

        def https(method: str, path: str, headers: dict, body: bytes | None = None, timeout: float = 10) -> int:
            conn = http.client.HTTPSConnection("127.0.0.1", ports["https"], timeout=timeout, context=tls_ctx)
            try:
                conn.request(method, path, body=body, headers=dict(headers, Host=f"localhost:{ports['https']}"))
                resp = conn.getresponse()
                resp.read()
                return resp.status
            except (OSError, http.client.HTTPException):
                return 0
            finally:
                conn.close()

        def visit(r: random.Random, clean: bool = False) -> None:
            ua = r.choice(UAS)
            src = f"127.0.0.{r.randint(1, 30)}"
            secure = r.random() < 0.35
            for _ in range(r.randint(1, 5)):
                method, path = random_path(r, clean)
                headers = {"User-Agent": ua, "Accept-Encoding": r.choice(["gzip", "gzip, deflate, br", "identity"])}
                if r.random() < 0.2:
                    headers["Referer"] = f"https://www.example.test/products/{r.choice(WORDS)}"
                x = r.random()
                if x < 0.05:
                    method, path = "GET", f"/old/{r.choice(WORDS)}"
                elif x < 0.09:
                    method, path = "GET", r.choice(["/files/", "/files/releases/", "/files/docs/"])
                elif x < 0.13:
                    method, path = "GET", f"/reports/{r.choice(['daily', 'weekly', 'sales'])}?d={r.randint(1, 28)}"
                elif x < 0.17:
                    method, path = "GET", r.choice(["/admin/", "/admin/users.html"])
                    u = r.choice(list(CADDY_USERS))
                    headers["Authorization"] = "Basic " + base64.b64encode(f"{u}:{CADDY_USERS[u]}".encode()).decode()
                elif x < 0.2:
                    method, path = "POST", f"/upload/{r.choice(WORDS)}.json"
                body = json.dumps({"sku": r.randint(1, 999), "q": "x" * r.randint(0, 2000)}).encode() if method in ("POST", "PUT") else None
                if secure:
                    https(method, path, headers, body)
                else:
                    http_via(ports["http"], method, path, dict(headers, Host=r.choice(["www.example.test", "example.test"])), body, src)

        log = FileLog(logp)
        say(f"caddy on 127.0.0.1:{ports['http']} / {ports['https']} (admin {ports['admin']}); normal phase...")

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 6)):
                visit(rng)
            if time.time() - state["last"] > rng.uniform(20, 40):
                state["deploy"] += 1
                write_conf(caddyfile())
                reload()
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "caddy", round_fn)
            templates = {caddy_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, caddy_template, caddy_problem, caddy_echo))
            with Background(lambda r: visit(r, True), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("backend_down"):  # an API backend / the reports backend crashed
                    for name in ["api1", "reports", "api2", "reports"]:
                        with br.occurrence(2.0):
                            backends[name].stop()
                            for _ in range(3):
                                http_via(ports["http"], "GET", f"/reports/monthly?m={rng.randint(1, 12)}" if name == "reports"
                                         else f"/api/v1/items/{rng.randint(1, 500)}", {"User-Agent": rng.choice(UAS)})
                            time.sleep(3)
                        backends[name].start()
                        time.sleep(4)
                        br.between()
                with br.phase("backend_timeout"):  # the reports backend stuck past response_header_timeout
                    for i in range(3):
                        with br.occurrence(1.5):
                            backends["reports"].mode = "hang"
                            http_via(ports["http"], "GET", f"/reports/yearly?y={2020 + i}", {"User-Agent": rng.choice(UAS)}, timeout=15)
                            backends["reports"].mode = "ok"
                        time.sleep(3.5)
                        br.between()
                with br.phase("backend_error"):  # the API answering 500 / 502 after a bad deploy
                    for mode in ["fail500", "fail502", "fail500", "fail502"]:
                        with br.occurrence(1.5):
                            backends["api1"].mode = backends["api2"].mode = mode
                            http_via(ports["http"], "POST", "/api/v1/orders", {"User-Agent": "ShopApp/4.1 (Android 14)"}, b'{"sku": 1}')
                            backends["api1"].mode = backends["api2"].mode = "ok"
                with br.phase("auth_failure"):  # wrong passwords / unknown users on /admin/
                    for cred in [b"admin:admin", b"ops:password", b"root:toor", b"editor:", b"admin:Adm1n-pas"]:
                        with br.occurrence(1.0):
                            http_via(ports["http"], "GET", "/admin/users.html", {"User-Agent": rng.choice(UAS),
                                     "Authorization": "Basic " + base64.b64encode(cred).decode()}, src=f"127.0.0.{rng.randint(40, 90)}")
                with br.phase("request_too_large"):  # uploads over max_size
                    for i in range(3):
                        with br.occurrence(1.0):
                            http_via(ports["http"], "POST", f"/upload/export-{i}.bin", {"User-Agent": rng.choice(UAS),
                                     "Content-Type": "application/octet-stream"}, rng.randbytes(200_000 + i * 60_000))
                with br.phase("permission_denied"):  # files with a bad mode after a deploy
                    for i in range(3):
                        w = rng.choice(WORDS)
                        target = os.path.join(www, "products", w) if i != 1 else os.path.join(www, "files", "docs")
                        with br.occurrence(1.0):
                            os.chmod(target, 0o000)
                            http_via(ports["http"], "GET", f"/products/{w}" if i != 1 else "/files/docs/manual-3.txt",
                                     {"User-Agent": rng.choice(UAS)})
                        os.chmod(target, 0o755 if os.path.isdir(target) else 0o644)
                with br.phase("vulnerability_scan"):  # scanners probing for well-known files
                    for i in range(4):
                        src = f"127.0.0.{rng.randint(100, 200)}"
                        with br.occurrence(1.0):
                            for path in rng.sample(["/wp-login.php", "/.env", "/.git/config", "/phpmyadmin/index.php", "/xmlrpc.php",
                                                    "/admin/config.php.bak", "/server-status", "/actuator/health", "/.aws/credentials",
                                                    "/cgi-bin/luci", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php"], 5):
                                http_via(ports["http"], "GET", path, {"User-Agent": rng.choice(["Mozilla/5.0 zgrab/0.x", "curl/7.88.1",
                                                                                              "Go-http-client/1.1", "python-requests/2.31.0"])}, src=src)
                with br.phase("bad_config_reload"):  # config pushes that fail to load (caddy keeps the old config)
                    blocker = socket.socket()
                    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    blocker.bind(("127.0.0.1", 0))
                    blocker.listen(1)
                    busy = blocker.getsockname()[1]
                    pushes = [caddyfile(text_sub=lambda t: t.replace("\ttls internal", "\ttls /etc/ssl/shop/cert.pem /etc/ssl/shop/key.pem")),
                              caddyfile(text_sub=lambda t: t + f"\nhttp://:{busy} {{\n\trespond \"status ok\"\n}}\n"),
                              caddyfile(extra="\t@bad path_regexp ^/(legacy[\n\trewrite @bad /old/"),
                              caddyfile(text_sub=lambda t: t.replace(f"root * {www}", "root * /srv/www-new")), None]
                    for push in pushes:
                        with br.occurrence(2.0):
                            if push is None:  # automation posting a truncated JSON config
                                http_via(ports["admin"], "POST", "/load", {"Content-Type": "application/json"},
                                         b'{"apps": {"http": {"servers": {"srv0": {"listen": [":80"], "routes": [')
                            else:
                                write_conf(push)
                                reload()
                            http_via(ports["http"], "GET", "/files/", {"User-Agent": rng.choice(UAS)})
                        write_conf(caddyfile())
                        ensure_running()
                        reload()  # a push that did load (the missing root) is replaced by the good config
                        time.sleep(0.5)
                        br.between()
                    blocker.close()
        finally:
            stop()
            for b in backends.values():
                b.stop()
    return Source("caddy", "Caddy", version_of([caddy, "version"]),
                  "caddy JSON logs on stderr (`{\"level\":\"info\",\"ts\":1.7e9,\"logger\":\"http.log.access.log0\",\"msg\":\"handled "
                  "request\",\"request\":{...},\"status\":200,...}`; server, admin, tls, health-check and error loggers too)",
                  "caddy run (Caddyfile, as caddy) with an HTTP and an HTTPS (tls internal) site: static files, directory "
                  "listings, redirects, an API balanced over two python backends with active health checks, a reports "
                  "backend, uploads, basic auth for /admin/, gzip; browsers and apps from 30 addresses (35% over HTTPS, some "
                  "404s); caddy reload through the admin API every 20-40s (a changed header), 2 clean restarts",
                  "backend_down (4x an API backend / the reports backend stopped), backend_timeout (3x the reports backend "
                  "hanging 5s > response_header_timeout 2s), backend_error (4x the API answering 500 / 502), auth_failure "
                  "(5 wrong / unknown credentials), request_too_large (3 uploads > max_size 128 KB), permission_denied (3 "
                  "files / directories with mode 000), vulnerability_scan (4 scanners probing 5 well-known paths each), "
                  "bad_config_reload (5: missing certificate files, a port in use, a bad regexp, a missing root, a "
                  "truncated JSON config posted to /load)", normal, br.errors)


# --------------------------------------------------------------------------
# varnish
# --------------------------------------------------------------------------

VARNISH_VCL = """\
vcl 4.1;
import directors;

backend web1 {{ .host = "127.0.0.1"; .port = "{web1}"; .connect_timeout = 1s; .first_byte_timeout = 3s; }}
backend web2 {{ .host = "127.0.0.1"; .port = "{web2}"; .connect_timeout = 1s; .first_byte_timeout = 3s; }}
backend api {{ .host = "127.0.0.1"; .port = "{api}"; .connect_timeout = 1s; .first_byte_timeout = 3s; }}

acl purgers {{ "127.0.0.2"; "127.0.0.3"; }}
acl office {{ "127.0.0.0"/29; }}

sub vcl_init {{
    new web = directors.round_robin();
    web.add_backend(web1);
    web.add_backend(web2);
}}

sub vcl_recv {{
    if (req.method == "PURGE") {{
        if (client.ip !~ purgers) {{ return (synth(405, "Purging not allowed")); }}
        return (purge);
    }}
    if (req.url ~ "^/admin/" && client.ip !~ office) {{ return (synth(403, "Forbidden")); }}
    if (req.url ~ "^/api/") {{
        set req.backend_hint = api;
        if (req.method != "GET" && req.method != "HEAD") {{ return (pass); }}
    }} else {{
        set req.backend_hint = web.backend();
    }}
    if (req.http.Cookie ~ "session=") {{ return (pass); }}
    unset req.http.Cookie;
}}

sub vcl_backend_response {{
    if (bereq.url ~ "^/static/") {{ set beresp.ttl = 1h; }} else {{ set beresp.ttl = {ttl}s; }}
}}
"""

VARNISH_FORMAT = '%h %l %u %t "%r" %s %b "%{Referer}i" "%{User-agent}i" %{Varnish:handling}x %{Varnish:time_firstbyte}x'
VN_LINE = re.compile(r'^(\S+) \S+ \S+ \[[^\]]+\] "(?:[^"\\]|\\.)*" (\d{3}) ')


def varnish_status(line: str) -> int | None:
    m = VN_LINE.match(line)
    return int(m.group(2)) if m else None


def varnish_template(line: str) -> str:
    m = VN_LINE.match(line)
    if not m:
        return mask_names(line)
    rest = line[m.end():]
    req = re.search(r'"(\S+) ', line)
    body = f"{'-' if m.group(1) == '-' else 'IP'} {req.group(1) if req else '-'} {m.group(2)} " + re.sub(r'"[^"]*" "[^"]*"', "", rest)
    return mask_names(body)


def varnish_problem(line: str) -> bool:
    s = varnish_status(line)
    return s is None or s >= 400


def varnish_echo(line: str) -> bool:
    s = varnish_status(line)
    return s is not None and s < 400


def source_varnish(args) -> Source:
    varnishd = need("/usr/sbin/varnishd", "varnish")
    varnishncsa = need("/usr/bin/varnishncsa", "varnish")
    varnishadm = need("/usr/bin/varnishadm", "varnish")
    rng = random.Random(f"{args.seed}-varnish")
    with tempfile.TemporaryDirectory(prefix="onb6-varnish-") as work, Group() as sv:
        os.chmod(work, 0o755)
        port, admin = free_port(), free_port()
        name = os.path.join(work, "vsm")
        backends = {"web1": ModeServer(Origin, hang=6).start(), "web2": ModeServer(Origin, hang=6).start(),
                    "api": ModeServer(Origin, hang=6).start()}
        logp = os.path.join(work, "varnishncsa.log")
        state = {"restarts": 0, "last": time.time(), "vcl": 0}

        def write_vcl() -> str:
            state["vcl"] += 1
            path = os.path.join(work, f"shop-{state['vcl']}.vcl")
            write_atomic(path, VARNISH_VCL.format(ttl=rng.choice([10, 20, 30]), **{k: b.port for k, b in backends.items()}))
            os.chmod(path, 0o644)
            return path

        def start() -> None:
            vcl = write_vcl()
            sv.start("varnishd", [varnishd, "-F", "-n", name, "-a", f"127.0.0.1:{port}", "-T", f"127.0.0.1:{admin}",
                                  "-f", vcl, "-s", "malloc,32m", "-p", "http_req_hdr_len=4096", "-p", "http_req_size=16384",
                                  "-p", "timeout_idle=3"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            wait_port(port)
            sv.start("varnishncsa", [varnishncsa, "-n", name, "-a", "-w", logp, "-F", VARNISH_FORMAT], cwd=work)
            time.sleep(1.5)

        def stop() -> None:
            sv.stop("varnishncsa", signal.SIGTERM)  # flushes its buffer
            sv.stop("varnishd", signal.SIGTERM)

        def adm(*cmd: str) -> None:
            run_quiet([varnishadm, "-n", name, *cmd], 20)

        start()

        def visit(r: random.Random, clean: bool = False) -> None:
            ua = r.choice(UAS)
            src = f"127.0.0.{r.randint(1, 30)}"
            cookie = f"session={r.getrandbits(48):012x}" if r.random() < 0.15 else None
            for _ in range(r.randint(1, 6)):
                method, path = random_path(r, clean)
                headers = {"User-Agent": ua, "Host": r.choice(["www.example.test", "shop.example.test"])}
                if cookie:
                    headers["Cookie"] = cookie
                if path.startswith("/static/") and r.random() < 0.3:
                    headers["If-Modified-Since"] = "Mon, 02 Dec 2024 10:00:00 GMT"
                if r.random() < 0.2:
                    headers["Referer"] = f"https://www.example.test/products/{r.choice(WORDS)}"
                x = r.random()
                if x < 0.04:
                    src = f"127.0.0.{r.randint(1, 7)}"
                    method, path = "GET", r.choice(["/admin/", "/admin/users.html"])
                elif x < 0.07:
                    src = r.choice(["127.0.0.2", "127.0.0.3"])
                    method, path = "PURGE", f"/products/{r.choice(WORDS)}"
                body = json.dumps({"sku": r.randint(1, 999)}).encode() if method in ("POST", "PUT") else None
                http_via(port, method, path, headers, body, src)

        log = FileLog(logp)
        say(f"varnish on 127.0.0.1:{port}; normal phase...")

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 8)):
                visit(rng)
            if time.time() - state["last"] > rng.uniform(15, 30):
                if rng.random() < 0.6:
                    vcl = write_vcl()
                    adm("vcl.load", f"shop{state['vcl']}", vcl)
                    adm("vcl.use", f"shop{state['vcl']}")
                else:
                    adm("ban", "req.url", "~", f"^/{rng.choice(['products', 'category', 'blog'])}/")
                state["last"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 * (state["restarts"] + 1):
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.02, 0.1))

        try:
            normal = normal_loop(args, log, "varnish", round_fn)
            templates = {varnish_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, varnish_template, varnish_problem, varnish_echo))
            with Background(lambda r: visit(r, True), random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("backend_down"):  # a web backend / the API crashed
                    for bname in ["api", "web1", "api", "web2", "api"]:
                        with br.occurrence(2.0):
                            backends[bname].stop()
                            for _ in range(2):
                                http_via(port, "GET", f"/api/v1/stock/{rng.randint(1, 500)}" if bname == "api"
                                         else f"/category/{rng.choice(WORDS)}/{rng.randint(1, 9)}?nocache={rng.randint(1, 10**6)}",
                                         {"User-Agent": rng.choice(UAS)})
                        backends[bname].start()
                        time.sleep(0.5)
                        br.between()
                with br.phase("backend_timeout"):  # the API hanging past first_byte_timeout
                    for i in range(3):
                        with br.occurrence(1.5):
                            backends["api"].mode = "hang"
                            http_via(port, "GET", f"/api/v1/prices/{rng.randint(1, 500)}?q={rng.randint(1, 10**6)}",
                                     {"User-Agent": rng.choice(UAS)}, timeout=15)
                            backends["api"].mode = "ok"
                        time.sleep(4)
                        br.between()
                with br.phase("backend_error"):  # backends answering 500 / 502
                    for bname, mode in [("api", "fail500"), ("web1", "fail502"), ("api", "fail502"), ("web2", "fail500")]:
                        with br.occurrence(1.5):
                            backends[bname].mode = mode
                            for _ in range(2):
                                http_via(port, "GET", f"/api/v1/cart/{rng.randint(1, 500)}" if bname == "api"
                                         else f"/blog/{rng.choice(WORDS)}-{rng.randint(1, 40)}?v={rng.randint(1, 10**6)}",
                                         {"User-Agent": rng.choice(UAS)})
                            backends[bname].mode = "ok"
                with br.phase("purge_denied"):  # PURGE from outside the purge ACL
                    for src in ["127.0.0.44", "127.0.0.61", "127.0.0.90", "127.0.0.133"]:
                        with br.occurrence(1.0):
                            http_via(port, "PURGE", f"/products/{rng.choice(WORDS)}", {"User-Agent": "curl/7.88.1"}, src=src)
                with br.phase("admin_forbidden"):  # /admin/ from outside the office
                    for src in ["127.0.0.55", "127.0.0.77", "127.0.0.12", "127.0.0.201"]:
                        with br.occurrence(1.0):
                            http_via(port, "GET", rng.choice(["/admin/", "/admin/users.html"]), {"User-Agent": rng.choice(UAS)}, src=src)
                with br.phase("bad_request"):  # garbage and malformed requests
                    for p in [b"GARBAGE\r\n\r\n", TLS_HELLO, b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                              b"GET /\x01\x02 HTTP/1.1\r\nHost: x\r\n\r\n", b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                              b"POST /api/v1/orders HTTP/1.1\r\nHost: www.example.test\r\nContent-Length: abc\r\n\r\n"]:
                        with br.occurrence(1.0):
                            raw_send(port, p, 0.5)
                with br.phase("request_too_large"):  # request headers over http_req_hdr_len / http_req_size
                    for name, size in [(b"Cookie", 6000), (b"Referer", 5000), (b"X-Forwarded-For", 4500), (b"Authorization", 7000)]:
                        p = b"GET /products/oak HTTP/1.1\r\nHost: www.example.test\r\n" + name + b": " + b"c" * size + b"\r\n\r\n"
                        with br.occurrence(1.0):
                            raw_send(port, p, 0.5)
        finally:
            stop()
            for b in backends.values():
                b.stop()
    return Source("varnish", "Varnish Cache (varnishd + varnishncsa)", version_of([varnishd, "-V"]),
                  "varnishncsa -F '%h %l %u %t \"%r\" %s %b \"%{Referer}i\" \"%{User-agent}i\" %{Varnish:handling}x "
                  "%{Varnish:time_firstbyte}x' (NCSA combined plus hit/miss/pass/synth handling and time to first byte; "
                  "`- - - [...] \"- http://localhost HTTP/1.0\" 400` for requests that could not be parsed)",
                  "varnishd -F (malloc 32 MB, a VCL with a round-robin director of two web backends, an API backend, a "
                  "purge ACL and an office ACL for /admin/) in front of three python origins, varnishncsa writing the access "
                  "log; browsers and apps from 30 addresses (hits, misses, passes for session cookies and POSTs, 304s, "
                  "404s), PURGEs from the CMS, /admin/ from the office; a VCL reload (varnishadm vcl.load + vcl.use) or a "
                  "ban every 15-30s, 2 clean restarts",
                  "backend_down (5x a web backend / the API stopped), backend_timeout (3x the API hanging 6s > "
                  "first_byte_timeout 3s), backend_error (4x a backend answering 500 / 502), purge_denied (4 PURGEs from "
                  "outside the ACL), admin_forbidden (4), bad_request (6: garbage, TLS, two Host headers, control "
                  "characters, a bad header line, a bad Content-Length), request_too_large (4 headers of 4.5-7 KB > "
                  "http_req_hdr_len 4096)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_sixth", SOURCES, globals(), seed=6666, min_normal_s=60,
               root_for="programs dropping to their own users")


if __name__ == "__main__":
    sys.exit(main())
