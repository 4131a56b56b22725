#!/usr/bin/env python3
"""Generate the twelfth onboarding corpus: real log lines written by real programs, grouped into events.

A twelfth corpus built exactly like benchmarks/onboarding_eleventh_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py and of the earlier scripts
imported) from five programs that no other corpus uses.  Every line is the verbatim output of a program
started by this script on this machine; the script only *drives* the programs (clients it runs) and
*breaks* them (bad configs, killed clients, wrong passwords, garbage on the wire, exhausted limits, an
unreachable upstream, a step of the work made to fail...).  It never writes a log line itself.  Four of
the five trace multi-step work per named item (a zone change's reload, then the notify and the
secondaries' transfers; an XMPP session's connection, authentication, bound resource, room joins and
close; a CalDAV client's login, then its PROPFIND / REPORT / PUT requests and their statuses; a message
scan's stages and its result line); some of their breakages are a step of that work failing or never
happening (a zone reload failing on a broken zone file, a transfer refused, an XMPP authentication
failing, a stream dropped before the session closes, a PUT refused after a good login, a scan's DNS
lookups timing out).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one refused step,
one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends mariadb-server
mariadb-client nsd rspamd ejabberd radicale; also util-linux and python3.  The clients are the programs'
own CLIs (mariadb, mariadb-dump, mariadb-admin, nsd-control, rspamc, ejabberdctl) or python code in this
script (DNS secondaries and resolvers, XMPP clients over raw sockets, CalDAV / CardDAV clients over
http.client, an HTTP client of rspamd, a small DNS resolver for rspamd).  Nothing is installed by this
script, and no system service of these packages needs to run: each daemon is started directly as a plain
process, without systemd):

  mariadb   MariaDB 10.11 mariadbd (--no-defaults, a private datadir, socket and port, --log-error with
            log_warnings=4 and innodb_print_all_deadlocks; its stdout/stderr appended):
            `2026-12-06  2:36:54 5 [Warning] Access denied for user 'app'@'localhost' (using password: YES)`.
            Its error log has no line for a successful connection or query, so it logs little: the
            normal phase (app users' queries through the mariadb client, pooled connections idle past
            their wait_timeout, a load balancer's TCP health checks, mariadb-dump backups, an admin's
            FLUSH LOGS / buffer pool dumps, two clean restarts) is cut at 3 x --min-normal-seconds.  Broken: wrong
            passwords, unknown users, access denied to a database, clients killed
            mid-query, deadlocks, a full table, broken configs at a restart, a crash (SIGKILL) with
            InnoDB crash recovery at the next start.
  nsd       NSD 4.6 (nsd -d, its own config, logfile, verbosity 5, a unix control socket; its
            stdout/stderr appended): `[2026-12-06 02:39:11.750] nsd[12194]: info: axfr for onb12.test. from
            127.0.0.5`.  A hidden primary of 12 zones: a provisioning job bumps zone serials and runs
            nsd-control reload <zone>, NSD notifies two secondaries (python, on 127.0.0.5 / .6) which
            transfer the zone (AXFR); resolvers' queries, nsd-control stats / zonestatus / reload, two
            clean restarts.  Broken: zone files with errors at reload, zone files gone, AXFRs from hosts
            not allowed, NOTIFYs from unknown masters, IXFRs from hosts not allowed, both secondaries down (notifies
            unanswered), broken configs at a
            restart.
  rspamd    Rspamd 3.4 (rspamd -f, the Debian config with a private local.d, log file at info; its
            stdout/stderr appended), one normal worker and a controller, Bayes and Redis off, DNS through a
            small resolver run by this script: `2026-12-06 02:38:33 #11905(normal) <15338a>; task;
            rspamd_task_write_log: id: <1@b.test>, ... (default: F (no action): [3.40/15.00] [...]`.
            Normal: ham and spam-ish mail of several senders scanned over HTTP (/checkv2) and with rspamc,
            rspamc stat / counters on the controller, two clean restarts.  Broken: malformed HTTP
            requests, oversized messages, controller requests with a wrong password, the DNS upstream
            unreachable, an unreachable Redis for the ratelimit module, broken configs at a restart.
  ejabberd  ejabberd 23.01 (ejabberdctl foreground with a private config, spool and log dir, loglevel info;
            ejabberd.log): `2026-12-06 02:37:51.850798+00:00 [info] <0.549.0>@ejabberd_c2s:process_auth_result/3:272
            (tcp|<0.549.0>) Accepted c2s PLAIN authentication for alice@onb12.test by mnesia backend from
            127.0.0.1`.  Normal: XMPP clients (raw XML over a socket) of 12 users logging in, binding a
            resource, presence, roster, messages, joining and leaving MUC rooms, logging out; users
            registered and their passwords changed by an admin with ejabberdctl, two clean restarts.
            Broken: wrong passwords, unknown users, malformed XML, clients dropped mid-stream, s2s to an
            unreachable domain, clients over the stanza size limit, broken configs at a restart.
  radicale  Radicale 3.1 (python3 -m radicale as the radicale user, a private storage folder, htpasswd auth,
            owner_only rights, logging level info; its stderr is its log): `[2026-12-06 02:40:01 +0000]
            [1234/Thread-5] [INFO] PROPFIND request for '/alice/' with depth '1' received from 127.0.0.1
            using 'DAVx5/4.3'`.  Normal: 10 users syncing calendars and address books (PROPFIND, REPORT,
            PUT, GET, DELETE, MKCOL), two clean restarts.  Broken: wrong passwords, another user's
            collection (403), malformed XML bodies, invalid iCalendar / vCard data in a PUT, conflicting
            writes (If-Match of a stale ETag), a read-only storage folder, broken configs at a restart.

Layout written under --out (default benchmarks/data/onboarding_twelfth):

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

  * its level marks it as a problem (mariadb [ERROR] / [Warning] lines and lines
    of denied access, aborted connections, deadlocks, full tables, crash
    recovery; nsd error / warning lines and lines of refused transfers or
    notifies, failed reads, unknown zones; rspamd error / warning lines (the
    level word of the module's message) and lines of failures, timeouts,
    rejected or invalid requests, wrong passwords; ejabberd [error] / [warning]
    lines and lines of failed authentication, errors, timeouts, refused
    or invalid stanzas; radicale [ERROR] / [WARNING] lines and responses of
    status 4xx / 5xx, failed logins, denied access), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, UUIDs, IPs and ports masked; process / connection / task ids, user and
    host names, zone names, JIDs and paths masked too) never occurred in the
    normal phase,

minus lines that merely echo the driving workload (none for these sources).  A
multi-line entry (a mariadb entry with its continuation lines, e.g. the
deadlock dump of innodb_print_all_deadlocks) is kept or dropped whole.  An
occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_twelfth_data.py --out benchmarks/data/onboarding_twelfth \\
        [--sources mariadb,nsd,rspamd,ejabberd,radicale] [--lines 6000] [--seed 12012] \\
        [--min-normal-seconds 60]
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

from onboarding_data import FileLog, free_port, need, say, wait_port, write_atomic  # noqa: E402
from onboarding_eighth_data import tcp_blocker  # noqa: E402
from onboarding_eleventh_data import dpkg_version, grouped_selector, templater  # noqa: E402
from onboarding_fifth_data import normal_loop, proc_cmdlines, run  # noqa: E402
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Source, as_user,  # noqa: E402
                                     entry_selector, raw_send)
from onboarding_sixth_data import TLS_HELLO, run_quiet  # noqa: E402
from onboarding_tenth_data import SYS_PY, kill_pids, log_has, pids_named, size_of  # noqa: E402

SOURCES = ["mariadb", "nsd", "rspamd", "ejabberd", "radicale"]
NAMES = re.compile(r"\b(?:%s)\b" % "|".join(USERS + WORDS))


def timed_normal_loop(args, log: FileLog, name: str, round_fn, seconds: float) -> list[str]:
    """normal_loop for a program that logs little: round_fn(n, elapsed) until --lines or ``seconds`` are reached."""
    normal: list[str] = []
    t0, n = time.time(), 0
    while len(normal) < args.lines * 1.05 and time.time() - t0 < seconds:
        n += 1
        round_fn(n, time.time() - t0)
        normal += log.read_new()
        if n % 50 == 0:
            say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
    say(f"  {name}: normal phase stopped at {time.time() - t0:.0f}s with {len(normal)} lines")
    time.sleep(1.5)
    return normal + log.read_new()


# --------------------------------------------------------------------------
# mariadb (mariadbd on a private datadir)
# --------------------------------------------------------------------------

MDB_HEAD = re.compile(r"^\d{4}-\d\d-\d\d +\d+:\d\d:\d\d ")
mariadb_template = templater(MDB_HEAD, (r"^\d+ ", "N "), (r"'[^']*'", "'S'"), (r"`[^`]*`", "`S`"), (r"/[\w./-]+", "PATH"),
                             (r"\b\d{6} +\d+:\d\d:\d\d\b", "TIME"))
MDB_APPS = {"shop": ["alice", "bob", "carol"], "crm": ["dave", "erin"], "wiki": ["frank", "grace"]}


def mariadb_problem(text: str) -> bool:
    return bool(re.search(r"\[(ERROR|Warning)\]", text)) or bool(
        re.search(r"[Aa]ccess denied|[Aa]borted|[Dd]eadlock|is full|[Cc]rash recovery|[Cc]orrupt|[Ee]rror|[Ff]ail", text))


def mariadb_echo(text: str) -> bool:
    return False


def source_mariadb(args) -> Source:
    mariadbd = need("/usr/sbin/mariadbd", "mariadb-server")
    client = need("mariadb", "mariadb-client")
    dump, install = need("mariadb-dump", "mariadb-client"), need("mariadb-install-db", "mariadb-server")
    rng = random.Random(f"{args.seed}-mariadb")
    with tempfile.TemporaryDirectory(prefix="onb12-mariadb-") as work, Group() as sv:
        os.chmod(work, 0o755)
        shutil.chown(work, "mysql", "mysql")
        data, sock, logp = os.path.join(work, "data"), os.path.join(work, "mysqld.sock"), os.path.join(work, "error.log")
        port = free_port()
        os.makedirs(data)
        shutil.chown(data, "mysql", "mysql")
        subprocess.run([install, "--no-defaults", f"--datadir={data}", "--user=mysql", "--skip-test-db",
                        "--auth-root-authentication-method=normal"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=120, check=True)
        pw = {u: f"{u.capitalize()}-db-{i + 12}" for i, u in enumerate(USERS)}

        def argv(extra: list[str] | None = None, p: int | None = None) -> list[str]:
            return [mariadbd, "--no-defaults", f"--datadir={data}", "--user=mysql", f"--socket={sock}", f"--port={p or port}",
                    "--bind-address=127.0.0.1", f"--log-error={logp}", f"--pid-file={work}/mysqld.pid", "--log-warnings=4",
                    "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M", "--performance-schema=OFF",
                    "--max-connections=24", "--innodb-print-all-deadlocks=ON",
                    "--innodb-lock-wait-timeout=3", "--max-heap-table-size=65536", "--table-open-cache=200"] + (extra or [])

        def start(wait: bool = True, extra: list[str] | None = None, p: int | None = None) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                shutil.chown(logp, "mysql", "mysql")  # mariadbd (as mysql) reopens its error log itself
                sv.start("mariadbd", argv(extra, p), stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"ready for connections", since, 60)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("mariadbd", signal.SIGTERM, 60)

        def sql(user: str, query: str, db: str = "", password: str | None = None, timeout: float = 20,
                tcp: bool = True) -> int:
            cmd = [client, "--no-defaults", "-u", user, "-B", "-e", query, "--connect-timeout=5"]
            cmd += ["-h", "127.0.0.1", "-P", str(port)] if tcp else ["-S", sock]
            if user != "root" or password:
                cmd.append(f"-p{password if password is not None else pw.get(user, '')}")
            if db:
                cmd.append(db)
            return run_quiet(cmd, timeout)

        def root(query: str, timeout: float = 30) -> int:
            return sql("root", query, tcp=False, timeout=timeout)

        start()
        setup = []
        for db, users in MDB_APPS.items():
            setup.append(f"CREATE DATABASE {db}")
            for u in users:
                setup.append(f"CREATE USER '{u}'@'%' IDENTIFIED BY '{pw[u]}'")
                setup.append(f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, LOCK TABLES ON {db}.* TO '{u}'@'%'")
        for u in ["heidi", "ivan", "judy"]:  # reporting users: read only, on shop and crm
            setup.append(f"CREATE USER '{u}'@'%' IDENTIFIED BY '{pw[u]}'")
            setup += [f"GRANT SELECT ON shop.* TO '{u}'@'%'", f"GRANT SELECT ON crm.* TO '{u}'@'%'"]
        setup.append("CREATE DATABASE payroll")
        setup.append(f"CREATE USER 'backup'@'localhost' IDENTIFIED BY 'Backup-db-1'")
        setup.append("GRANT SELECT, LOCK TABLES, SHOW VIEW, EVENT, TRIGGER, RELOAD ON *.* TO 'backup'@'localhost'")
        setup += ["CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(40), amount DECIMAL(10,2), "
                  "status VARCHAR(16), KEY (customer)) ENGINE=InnoDB",
                  "CREATE TABLE shop.stock (sku VARCHAR(16) PRIMARY KEY, qty INT) ENGINE=InnoDB",
                  "INSERT INTO shop.stock VALUES " + ",".join(f"('SKU-{i}', 100)" for i in range(50)),
                  "CREATE TABLE crm.contacts (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40), email VARCHAR(80)) ENGINE=InnoDB",
                  "CREATE TABLE wiki.pages (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(80), body TEXT) ENGINE=InnoDB",
                  "CREATE TABLE shop.sessions (id INT PRIMARY KEY, data VARCHAR(200)) ENGINE=MEMORY",
                  "CREATE TABLE payroll.salaries (name VARCHAR(40), amount INT) ENGINE=InnoDB"]
        root("; ".join(setup))

        def app_query(r: random.Random, users=None) -> None:
            db = r.choice(list(MDB_APPS))
            u = r.choice(users or MDB_APPS[db])
            if u not in MDB_APPS[db]:
                db = next(d for d, us in MDB_APPS.items() if u in us)
            if db == "shop":
                q = r.choice([f"INSERT INTO orders (customer, amount, status) VALUES ('{r.choice(WORDS)}', {r.randint(5, 500)}, 'new')",
                              "SELECT status, COUNT(*) FROM orders GROUP BY status",
                              f"UPDATE stock SET qty = qty - 1 WHERE sku = 'SKU-{r.randint(0, 49)}'",
                              f"UPDATE orders SET status = 'paid' WHERE id = {r.randint(1, 200)}",
                              f"REPLACE INTO sessions VALUES ({r.randint(1, 20)}, '{r.choice(WORDS)}')"])
            elif db == "crm":
                q = r.choice([f"INSERT INTO contacts (name, email) VALUES ('{r.choice(WORDS)}', '{r.choice(WORDS)}@example.test')",
                              "SELECT COUNT(*) FROM contacts", f"SELECT * FROM contacts WHERE id = {r.randint(1, 100)}"])
            else:
                q = r.choice([f"INSERT INTO pages (title, body) VALUES ('{r.choice(WORDS)}', REPEAT('x', {r.randint(10, 900)}))",
                              f"SELECT title FROM pages WHERE id > {r.randint(0, 50)} LIMIT 10"])
            sql(u, q, db)

        def report(r: random.Random) -> None:
            sql(r.choice(["heidi", "ivan", "judy"]), "SELECT customer, SUM(amount) FROM shop.orders GROUP BY customer")

        def health_check() -> None:  # the load balancer's TCP check: connect, read the greeting, close
            raw_send(port, b"", wait=0.05)

        pool: list = []

        def pooled(r: random.Random) -> None:  # a worker's pooled connection, idle past its wait_timeout
            u = r.choice(MDB_APPS["shop"])
            p = subprocess.Popen([client, "--no-defaults", "-u", u, f"-p{pw[u]}", "-h", "127.0.0.1", "-P", str(port), "shop"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with contextlib.suppress(OSError):
                p.stdin.write(b"SET SESSION wait_timeout = 2;\nSELECT COUNT(*) FROM orders;\n")
                p.stdin.flush()
            pool.append(p)

        def reap_pool(all_: bool = False) -> None:
            for p in list(pool):
                if all_ or p.poll() is not None or len(pool) > 6:
                    with contextlib.suppress(OSError):
                        p.kill()
                        p.wait(5)
                    pool.remove(p)

        def backup() -> None:
            run_quiet([dump, "--no-defaults", "-u", "backup", "-pBackup-db-1", "-S", sock, "--single-transaction",
                       "--databases", "shop", "crm", "wiki", f"--result-file={work}/backup.sql"], 60)

        log = FileLog(logp)
        say(f"mariadbd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [app_query(rr) for _ in range(rr.randint(1, 4))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if rng.random() < 0.5:
                health_check()
            if rng.random() < 0.25:
                pooled(rng)
            if rng.random() < 0.1:
                report(rng)
            reap_pool()
            if time.time() - state["admin"] > rng.uniform(15, 30):  # the admin at work
                a = rng.random()
                if a < 0.3:
                    backup()
                elif a < 0.5:
                    root("FLUSH LOGS")
                elif a < 0.7:
                    root("SET GLOBAL innodb_buffer_pool_dump_now = ON")
                elif a < 0.85:
                    root("SHOW ENGINE INNODB STATUS")
                else:
                    root("ANALYZE TABLE shop.orders, crm.contacts")
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 40 + 60 * state["restarts"]:
                reap_pool(True)
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.1, 0.4))

        try:
            normal = timed_normal_loop(args, log, "mariadb", round_fn, max(args.min_normal_s, 60) * 3)
            reap_pool(True)
            templates = {mariadb_template(x) for x in normal}
            is_head = lambda line: bool(MDB_HEAD.match(line))  # noqa: E731
            br = Breaker(log, grouped_selector(templates, mariadb_template, mariadb_problem, mariadb_echo, head=is_head))

            def restart_clean() -> None:
                sv.stop("mariadbd", signal.SIGTERM, 30)
                sv.forget("mariadbd")
                start()

            calm = ["alice", "bob", "dave", "frank"]
            with Background(lambda r: app_query(r, calm), random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("wrong_password"):
                    for u, bad in [("alice", "alice123"), ("dave", pw["dave"].lower()), ("grace", "Grace-db-17"),
                                   ("backup", "backup")]:
                        with br.occurrence(1.5):
                            sql(u, "SELECT 1", password=bad)
                with br.phase("unknown_user"):
                    for u in ["admin", "shop_rw", "test"]:
                        with br.occurrence(1.5):
                            sql(u, "SELECT 1", password="Passw0rd!")
                with br.phase("db_access_denied"):  # good logins refused a database or a table
                    for u, db, q in [("heidi", "payroll", "SELECT * FROM salaries"), ("frank", "shop", "SELECT 1"),
                                     ("erin", "payroll", "SELECT 1"), ("judy", "wiki", "SELECT title FROM pages")]:
                        with br.occurrence(1.5):
                            sql(u, q, db)
                with br.phase("client_killed"):  # a client killed (SIGKILL) in the middle of a long query
                    for u in ["bob", "heidi", "carol"]:
                        with br.occurrence(4.0):
                            p = subprocess.Popen([client, "--no-defaults", "-u", u, f"-p{pw[u]}", "-h", "127.0.0.1", "-P", str(port),
                                                  "shop", "-e", "SELECT SLEEP(2), COUNT(*) FROM orders"],
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                            time.sleep(0.7)
                            p.kill()
                            p.wait()
                with br.phase("deadlock"):  # two sessions updating the same rows in opposite order
                    for i in range(3):
                        a, b = f"SKU-{10 + 2 * i}", f"SKU-{11 + 2 * i}"
                        u1, u2 = rng.sample(MDB_APPS["shop"], 2)
                        with br.occurrence(2.0):
                            t1 = threading.Thread(target=sql, args=(u1, f"START TRANSACTION; UPDATE stock SET qty = qty - 1 WHERE "
                                                                        f"sku = '{a}'; SELECT SLEEP(1); UPDATE stock SET qty = qty - 1 "
                                                                        f"WHERE sku = '{b}'; COMMIT", "shop"))
                            t2 = threading.Thread(target=sql, args=(u2, f"START TRANSACTION; UPDATE stock SET qty = qty + 1 WHERE "
                                                                        f"sku = '{b}'; SELECT SLEEP(1); UPDATE stock SET qty = qty + 1 "
                                                                        f"WHERE sku = '{a}'; COMMIT", "shop"))
                            t1.start()
                            time.sleep(0.2)
                            t2.start()
                            t1.join(30)
                            t2.join(30)
                with br.phase("table_full"):  # the MEMORY sessions table reaches max_heap_table_size
                    for u in ["alice", "bob"]:
                        with br.occurrence(1.5):
                            sql(u, "INSERT INTO sessions SELECT seq + 1000, REPEAT('s', 200) FROM seq_1_to_3000", "shop")
                        root("DELETE FROM shop.sessions WHERE id >= 1000")
                        br.between()
                with br.phase("crash_recovery"):  # mariadbd killed (SIGKILL) while apps write; InnoDB recovers at start
                    for i in range(2):
                        writers = [threading.Thread(target=app_query, args=(random.Random(rng.random()), ["alice", "bob"]))
                                   for _ in range(3)]
                        for t in writers:
                            t.start()
                        time.sleep(0.2)
                        sv.stop("mariadbd", signal.SIGKILL, 10)
                        sv.forget("mariadbd")
                        for t in writers:
                            t.join(30)
                        br.between()
                        with br.occurrence(3.0):
                            start()
                            app_query(rng, calm)
                        br.between()
                with br.phase("bad_config_restart"):  # option mistakes, the port taken, a missing directory
                    blocker = tcp_blocker()
                    for kw in [{"extra": ["--innodb-buffer-pool-szie=64M"]}, {"p": blocker.getsockname()[1]},
                               {"extra": ["--tmpdir=/nonexistent/mariadb/tmp"]}, {"extra": ["--default-storage-engine=RocksDB"]}]:
                        stop()
                        br.between()
                        with br.occurrence(3.0):
                            start(wait=False, **kw)
                            time.sleep(3.5)
                            sql(rng.choice(calm), "SELECT 1", "")
                        sv.stop("mariadbd", signal.SIGTERM, 30)
                        sv.forget("mariadbd")
                        start()
                        br.between()
                    blocker.close()
        finally:
            reap_pool(True)
            stop()
    return Source("mariadb", "MariaDB server (mariadbd)", dpkg_version("mariadb-server"),
                  "mariadbd error log (--log-error, log_warnings=4, innodb_print_all_deadlocks), its stdout/stderr appended: "
                  "`2026-12-06  2:36:54 5 [Warning] Access denied for user 'app'@'localhost' (using password: YES)`, "
                  "`... 0 [Note] InnoDB: Buffer pool(s) dump completed at 261206  2:40:01`, `... 12 [Warning] Aborted connection "
                  "12 to db: 'shop' user: 'bob' host: '127.0.0.1' (Got timeout reading communication packets)`; entries with "
                  "continuation lines (the startup banner, deadlock dumps); the number after the time is the connection id",
                  "mariadbd (a private datadir; 3 app databases with 7 users, 3 read-only reporting users, a backup user, a "
                  "MEMORY sessions table, max_connections 24) with the mariadb client: app users' INSERT / SELECT / UPDATE / "
                  "REPLACE queries, reports, pooled connections left idle past a 2 s wait_timeout (aborted connection "
                  "warnings), a load balancer's TCP health checks (connections closed without authentication), "
                  "mariadb-dump backups, an admin's FLUSH LOGS / buffer pool dumps / SHOW ENGINE INNODB STATUS / ANALYZE "
                  "TABLE, 2 clean restarts.  Its error log has no line for successful connections or queries: the normal "
                  "phase ends after 3 x --min-normal-seconds (180 s) with fewer than --lines lines",
                  "wrong_password (4), unknown_user (3), db_access_denied (4 good logins refused a database), client_killed (3 clients "
                  "SIGKILLed during a 2 s query), deadlock (3 pairs of transactions updating 2 rows in opposite order), "
                  "table_full (2 inserts past max_heap_table_size into a MEMORY table), crash_recovery (2: mariadbd "
                  "SIGKILLed while apps write, the next start recovering), bad_config_restart (4: a mistyped option, the "
                  "port taken, a missing tmpdir, an unknown default storage engine)", normal, br.errors)


# --------------------------------------------------------------------------
# nsd (a hidden primary with two python secondaries)
# --------------------------------------------------------------------------

NSD_ZONES = ["onb12.test", "shop.onb12.test", "lab.onb12.test", "corp.test", "mail.corp.test", "eu.corp.test",
             "us.corp.test", "partners.test", "cdn.partners.test", "status.test", "10.12.in-addr.arpa", "dev.onb12.test"]
NSD_SECONDARIES = ["127.0.0.5", "127.0.0.6"]
NSD_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:.]+\] nsd\[\d+\]: ")
nsd_template = templater(NSD_HEAD, (r"\b(?:[\w-]+\.)+(?:test|arpa)\.?", "ZONE"), (r"/[\w./-]+", "PATH"),
                         (r"\b[\w-]+\.zone\b", "FILE"))
NSD_CONF = """\
server:
  ip-address: 127.0.0.1
  port: {port}
  logfile: "{work}/nsd.log"
  verbosity: 5
  log-time-ascii: yes
  pidfile: "{work}/nsd.pid"
  database: ""
  zonelistfile: "{work}/zone.list"
  xfrdfile: "{work}/xfrd.state"
  xfrdir: "{work}"
  zonesdir: "{work}/zones"
  username: ""
  server-count: 1
  tcp-count: 20
  reuseport: no
{extra}
remote-control:
  control-enable: yes
  control-interface: {work}/nsd.ctl

pattern:
  name: "hidden-primary"
  notify: 127.0.0.5@{sport} NOKEY
  notify: 127.0.0.6@{sport} NOKEY
  provide-xfr: 127.0.0.5 NOKEY
  provide-xfr: 127.0.0.6 NOKEY
  notify-retry: 1
{zones}"""


def nsd_problem(line: str) -> bool:
    return bool(re.search(r"\]: (error|warning|critical):", line)) or bool(
        re.search(r"[Rr]efused|[Ff]ail|[Ee]rror|[Cc]ould not|[Cc]annot|[Nn]ot found|does not exist|[Uu]nknown|[Ii]nvalid|"
                  r"[Bb]ad |[Tt]imeout|[Dd]enied", line))


def nsd_echo(line: str) -> bool:
    return False


def dns_packet(name: str, qtype: int, opcode: int = 0, rd: bool = True, qid: int | None = None, aa: bool = False) -> bytes:
    flags = (opcode << 11) | (0x100 if rd else 0) | (0x400 if aa else 0)
    q = struct.pack(">HHHHHH", random.getrandbits(16) if qid is None else qid, flags, 1, 0, 0, 0)
    return q + b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".") if p) + b"\0" + struct.pack(">HH", qtype, 1)


def dns_udp(port: int, data: bytes, src: str = "127.0.0.1", timeout: float = 2) -> bytes:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, 0))
        s.settimeout(timeout)
        s.sendto(data, ("127.0.0.1", port))
        return s.recv(4096)
    return b""


def dns_tcp(port: int, data: bytes, src: str = "127.0.0.1", timeout: float = 3) -> bytes:
    out = b""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout, source_address=(src, 0)) as s:
        s.sendall(struct.pack(">H", len(data)) + data)
        s.settimeout(timeout)
        while True:  # an AXFR: messages until the connection goes quiet or closes
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            if len(chunk) < 65536:
                s.settimeout(0.3)
    return out


class Secondary:
    """A secondary name server on <addr>:sport: answers NOTIFYs, then transfers the zone (AXFR) from the primary."""

    def __init__(self, addr: str, sport: int, primary_port: int):
        self.addr, self.primary_port = addr, primary_port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, sport))
        self.sock.settimeout(0.3)
        self.stop_ev = threading.Event()
        self.paused = False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while not self.stop_ev.is_set():
            try:
                d, peer = self.sock.recvfrom(4096)
            except OSError:
                continue
            if len(d) < 12 or (d[2] >> 3) & 0xF != 4 or self.paused:
                continue
            with contextlib.suppress(OSError):  # NOTIFY response: the same id, QR + AA set
                self.sock.sendto(d[:2] + bytes([d[2] | 0x84, d[3] & 0xF0]) + d[4:], peer)
            i, labels = 12, []
            while i < len(d) and d[i]:
                labels.append(d[i + 1:i + 1 + d[i]].decode(errors="replace"))
                i += 1 + d[i]
            zone = ".".join(labels)
            threading.Thread(target=self.transfer, args=(zone,), daemon=True).start()

    def transfer(self, zone: str) -> None:
        time.sleep(random.uniform(0.05, 0.3))
        dns_udp(self.primary_port, dns_packet(zone, 6, rd=False), self.addr)  # SOA check, then the AXFR
        dns_tcp(self.primary_port, dns_packet(zone, 252, rd=False), self.addr)

    def close(self) -> None:
        self.stop_ev.set()
        self.sock.close()


def nsd_zone_text(zone: str, serial: int, rng: random.Random, extra: str = "") -> str:
    rows = [f"$ORIGIN {zone}.", "$TTL 300", f"@ IN SOA ns1.onb12.test. hostmaster.onb12.test. {serial} 3600 600 86400 300",
            "@ IN NS ns1.onb12.test.", "@ IN NS ns2.onb12.test."]
    if zone.endswith("arpa"):
        rows += [f"{i}.0 IN PTR host{i}.onb12.test." for i in range(1, 20)]
    else:
        rows += ["@ IN A 10.12.0.80", "@ IN MX 10 mx1.corp.test.", "www IN CNAME @"]
        rows += [f"{w} IN A 10.12.{(serial + i) % 250}.{i + 10}" for i, w in enumerate(WORDS[: 6 + serial % 10])]
        rows.append(f'@ IN TXT "v=spf1 ip4:10.12.0.0/16 -all"')
    return "\n".join(rows) + "\n" + extra


def source_nsd(args) -> Source:
    nsd, ctl = need("/usr/sbin/nsd", "nsd"), need("nsd-control", "nsd")
    rng = random.Random(f"{args.seed}-nsd")
    with tempfile.TemporaryDirectory(prefix="onb12-nsd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        zdir = os.path.join(work, "zones")
        os.makedirs(zdir)
        port, sport = free_port(), free_port()
        conf, logp = os.path.join(work, "nsd.conf"), os.path.join(work, "nsd.log")
        serial = {z: 2026120600 for z in NSD_ZONES}

        def zfile(z: str) -> str:
            return os.path.join(zdir, f"{z}.zone")

        for z in NSD_ZONES:
            write_atomic(zfile(z), nsd_zone_text(z, serial[z], rng))

        def write_conf(extra: str = "", p: int | None = None, zones_extra: str = "", text: str | None = None) -> None:
            zones = "".join(f"zone:\n  name: {z}\n  zonefile: {z}.zone\n  include-pattern: \"hidden-primary\"\n" for z in NSD_ZONES)
            write_atomic(conf, text if text is not None else NSD_CONF.format(port=p or port, work=work, sport=sport, extra=extra,
                                                                            zones=zones + zones_extra))

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("nsd", [nsd, "-d", "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                log_has(logp, b"nsd started", since, 20)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("nsd", signal.SIGTERM, 15)

        def control(*cmd: str) -> int:
            return run_quiet([ctl, "-c", conf] + list(cmd), 15)

        def change(r: random.Random, zone: str | None = None) -> None:  # the provisioning job: new serial, reload the zone
            z = zone or r.choice(NSD_ZONES)
            serial[z] += 1
            write_atomic(zfile(z), nsd_zone_text(z, serial[z], r))
            control("reload", z)

        def resolver(r: random.Random) -> None:  # recursive resolvers asking (not logged by nsd, but served)
            for _ in range(r.randint(1, 4)):
                z = r.choice(NSD_ZONES)
                dns_udp(port, dns_packet(f"{r.choice(['www', 'alpha', 'mx', ''])}.{z}".lstrip("."), r.choice([1, 15, 16, 28]), rd=False))

        write_conf()
        secs = [Secondary(a, sport, port) for a in NSD_SECONDARIES]
        start()
        log = FileLog(logp)
        say(f"nsd on 127.0.0.1:{port} (secondaries {', '.join(NSD_SECONDARIES)}:{sport}); normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(1, 3)):
                change(rng)
            resolver(rng)
            if rng.random() < 0.15:  # a secondary's periodic refresh: SOA query then AXFR
                sec = rng.choice(secs)
                sec.transfer(rng.choice(NSD_ZONES))
            if time.time() - state["admin"] > rng.uniform(4, 10):
                a = rng.random()
                if a < 0.35:
                    control("stats_noreset")
                elif a < 0.6:
                    control("zonestatus", rng.choice(NSD_ZONES))
                elif a < 0.75:
                    control("notify", rng.choice(NSD_ZONES))
                elif a < 0.9:
                    control("reload")
                else:
                    control("log_reopen")
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 20 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "nsd", round_fn)
            templates = {nsd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, nsd_template, nsd_problem, nsd_echo))

            def restart_clean() -> None:
                sv.stop("nsd", signal.SIGTERM, 10)
                sv.forget("nsd")
                write_conf()
                start()

            calm = NSD_ZONES[:6]
            with Background(lambda r: (change(r, r.choice(calm)), resolver(r)), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("zone_syntax_error"):  # the provisioning job writes a broken zone file, then reloads it
                    for z, bad in [("partners.test", "ftp IN A 10.12.0.300\n"), ("status.test", "api IN CNAME\n"),
                                   ("lab.onb12.test", "gpu01 IN AAA 10.12.5.1\n"), ("eu.corp.test", "$TTL ten-minutes\n")]:
                        serial[z] += 1
                        write_atomic(zfile(z), nsd_zone_text(z, serial[z], rng, extra=bad))
                        with br.occurrence(2.0):
                            control("reload", z)
                        serial[z] += 1
                        write_atomic(zfile(z), nsd_zone_text(z, serial[z], rng))
                        control("reload", z)
                        time.sleep(1)
                        br.between()
                with br.phase("zone_file_missing"):  # a zone file removed by mistake, then reloaded
                    for z in ["cdn.partners.test", "us.corp.test"]:
                        os.rename(zfile(z), zfile(z) + ".bak")
                        with br.occurrence(2.0):
                            control("reload", z)
                        os.rename(zfile(z) + ".bak", zfile(z))
                        change(rng, z)
                        time.sleep(1)
                        br.between()
                with br.phase("axfr_refused"):  # zone transfers asked by hosts not in provide-xfr
                    for src, z in [("127.0.0.9", "corp.test"), ("127.0.0.10", "onb12.test"), ("127.0.0.11", "10.12.in-addr.arpa"),
                                   ("127.0.0.9", "partners.test")]:
                        with br.occurrence(1.5):
                            dns_tcp(port, dns_packet(z, 252, rd=False), src)
                with br.phase("notify_refused"):  # NOTIFYs from masters this server does not know
                    for src, z in [("127.0.0.8", "onb12.test"), ("127.0.0.12", "shop.onb12.test"), ("127.0.0.8", "status.test")]:
                        with br.occurrence(1.5):
                            dns_udp(port, dns_packet(z, 6, opcode=4, rd=False, aa=True), src)
                with br.phase("ixfr_refused"):  # incremental transfers from a host without provide-xfr
                    for src, z in [("127.0.0.13", "corp.test"), ("127.0.0.14", "lab.onb12.test")]:
                        with br.occurrence(1.5):
                            dns_tcp(port, dns_packet(z, 251, rd=False), src)
                with br.phase("secondary_down"):  # both secondaries down: notifies get no answer
                    for z in ["corp.test", "onb12.test"]:
                        for s in secs:
                            s.paused = True
                        br.between()
                        with br.occurrence(8.0):
                            change(rng, z)
                        for s in secs:
                            s.paused = False
                        time.sleep(3)
                        br.between()
                with br.phase("bad_config_restart"):  # nsd.conf edits with mistakes, nsd restarted
                    blocker = tcp_blocker()
                    good = open(conf).read()
                    for text in [good.replace("verbosity: 5", "verbosity 5"), good.replace("  server-count: 1", "  server-cuont: 1"),
                                 good.replace(f"port: {port}", f"port: {blocker.getsockname()[1]}"),
                                 good + "zone:\n  name: legacy.test\n  zonefile: legacy.test.zone\n  include-pattern: \"secondary\"\n"]:
                        stop()
                        br.between()
                        write_conf(text=text)
                        with br.occurrence(3.0):
                            start(wait=False)
                            time.sleep(2.5)
                            control("status")
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            for s in secs:
                s.close()
    return Source("nsd", "NSD authoritative DNS server (nsd)", dpkg_version("nsd"),
                  "nsd logfile at verbosity 5 with log-time-ascii, its stdout/stderr appended: `[2026-12-06 02:39:13.765] "
                  "nsd[12192]: info: control cmd:  reload onb12.test`, `... nsd[12193]: info: zone onb12.test read with "
                  "success`, `... nsd[12194]: info: axfr for onb12.test. from 127.0.0.5`; nsd does not log ordinary queries: "
                  "every zone change traced by zone name from the control command to the zone read and the secondaries' "
                  "transfers",
                  "nsd -d (a hidden primary of 12 zones with a pattern notifying two secondaries and providing them "
                  "transfers, a unix control socket) with a provisioning job bumping zone serials and running nsd-control "
                  "reload <zone>, two python secondaries answering the NOTIFYs with a SOA query and an AXFR (and refreshing "
                  "on their own), resolvers' queries, an admin's nsd-control stats_noreset / zonestatus / notify / reload / "
                  "log_reopen, 2 clean restarts",
                  "zone_syntax_error (4 reloads of zone files with errors: a bad address, a CNAME without target, an "
                  "unknown type, a bad $TTL), zone_file_missing (2 reloads of a removed zone file), axfr_refused (4 AXFRs from hosts not allowed), notify_refused (3 "
                  "NOTIFYs from unknown masters), ixfr_refused (2 IXFRs from hosts not allowed), secondary_down (2 zone changes whose notifies get no answer), bad_config_restart (4: "
                  "a syntax error, an unknown option, the port taken, an unknown pattern)", normal, br.errors)


# --------------------------------------------------------------------------
# rspamd (the Debian config with a private local.d, a small DNS resolver of this script)
# --------------------------------------------------------------------------

RSPAMD_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d #\d+\((\w+)\) <\w+>; ")
rspamd_template = templater(RSPAMD_HEAD, (r"<[^<>]*>", "<ID>"), (r"\{[^{}]*\}", "{}"), (r"\[[-\d.]+/[-\d.]+\]", "[S]"),
                            (r"\[[A-Z][A-Z0-9_]*\([-\d.]+\)\{\}[^\]]*\]", "[SYMBOLS]"), (r"\b[A-Z][A-Z0-9_]{2,}\(", "SYM("),
                            (r"\b(?=[a-z]*\d)[0-9a-z]{8}\b", "ID"), (r"/[\w./-]+", "PATH"), (r"\b[0-9a-f]{6,}\b", "HEX"),
                            keep="")
RSPAMD_LOCAL = {
    "logging.inc": 'type = "file";\nfilename = "{work}/rspamd.log";\nlevel = "info";\n',
    "worker-normal.inc": 'bind_socket = "127.0.0.1:{port}";\ncount = 1;\n',
    "worker-controller.inc": 'bind_socket = "127.0.0.1:{cport}";\ncount = 1;\npassword = "Ctrl-onb12";\n'
                             'enable_password = "Ctrl-onb12-admin";\nsecure_ip = "192.0.2.1";\nstatic_dir = "${{WWWDIR}}";\n',
    "worker-proxy.inc": "enabled = false;\n",
    "options.inc": 'dns {{ nameserver = ["127.0.0.1:{dport}"]; timeout = 1s; retransmits = 1; }}\nmax_message = 2097152;\n'
                   'local_addrs = "127.0.0.0/8";\n',
    "fuzzy_check.conf": "enabled = false;\n",
    "multimap.conf": "",
}
HAM_SUBJECTS = ["Weekly status", "Lunch on Friday?", "Re: build broken on main", "Invoice 2026-118", "Minutes of the planning meeting",
                "Your order has shipped", "Re: holiday schedule", "Q4 roadmap draft"]
SPAM_BODIES = ["CONGRATULATIONS!!! You have WON $1,000,000 USD. Click http://bit.ly/claim-now to claim your PRIZE today!!!",
               "Cheap meds online, no prescription needed, viagra cialis 90% off, order now at http://pharma.example.biz",
               "Dear friend, I am a barrister with an inheritance of 15 million dollars for you. Reply with your bank details.",
               "Your mailbox is full. Verify your password at http://login-verify.example.ru/mail within 24 hours."]


def rspamd_problem(line: str) -> bool:
    m = RSPAMD_HEAD.match(line)
    body = line[m.end():] if m else line
    return bool(re.match(r"\w*;? ?\w*: ?(error|warn)", body)) or bool(
        re.search(r"[Ee]rror|[Ff]ail|[Tt]imed? ?out|[Cc]annot|[Rr]eject|[Ii]nvalid|[Ww]rong password|[Tt]oo large|"
                  r"[Uu]nauthori[sz]ed|[Dd]enied|[Mm]alformed|[Bb]ad ", body))


def rspamd_echo(line: str) -> bool:
    return False


class FakeResolver:
    """A small DNS resolver for rspamd: NXDOMAIN for every name (RBLs list nothing), until stopped."""

    def __init__(self, port: int):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.3)
        self.stop_ev, self.down = threading.Event(), False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while not self.stop_ev.is_set():
            try:
                d, peer = self.sock.recvfrom(4096)
            except OSError:
                continue
            if self.down or len(d) < 12:
                continue
            with contextlib.suppress(OSError):
                self.sock.sendto(d[:2] + bytes([0x81 | (d[2] & 0x78), 0x83]) + d[4:6] + b"\0\0\0\0\0\0" + d[12:], peer)

    def close(self) -> None:
        self.stop_ev.set()
        self.sock.close()


def mail(rng: random.Random, spam: bool = False, size: int = 0) -> bytes:
    sender = rng.choice(USERS)
    to = rng.choice(USERS)
    body = rng.choice(SPAM_BODIES) if spam else " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
    if size:
        body = ("x" * 76 + "\r\n") * (size // 78)
    subj = rng.choice(["FREE MONEY!!!", "URGENT: account suspended", "You are a winner"]) if spam else rng.choice(HAM_SUBJECTS)
    frm = f"{sender}@corp.onb12.test" if not spam else f"promo{rng.randint(1, 99)}@deals.example.biz"
    msg = (f"From: {sender.capitalize()} <{frm}>\r\nTo: {to}@onb12.test\r\nSubject: {subj}\r\n"
           f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\r\n"
           f"Message-ID: <{rng.getrandbits(48):x}@{frm.split('@')[1]}>\r\nMIME-Version: 1.0\r\n"
           f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n")
    return msg.encode()


def rspamd_http(port: int, path: str, body: bytes = b"", headers: dict | None = None, method: str = "POST",
                timeout: float = 20) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body if method == "POST" else None, headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def source_rspamd(args) -> Source:
    rspamd, rspamc = need("/usr/bin/rspamd", "rspamd"), need("rspamc", "rspamd")
    rng = random.Random(f"{args.seed}-rspamd")
    with tempfile.TemporaryDirectory(prefix="onb12-rspamd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        local = os.path.join(work, "local.d")
        for d in ["local.d", "override.d", "db", "run"]:
            os.makedirs(os.path.join(work, d))
        port, cport, dport = free_port(), free_port(), free_port()
        logp = os.path.join(work, "rspamd.log")

        def write_conf(changes: dict | None = None, p: int | None = None) -> None:
            for fn in os.listdir(local):
                os.remove(os.path.join(local, fn))
            files = dict(RSPAMD_LOCAL, **(changes or {}))
            for fn, text in files.items():  # the controller's file replaces Debian's (which trusts 127.0.0.1 without password)
                where = os.path.join(work, "override.d") if fn == "worker-controller.inc" else local
                write_atomic(os.path.join(where, fn), text.format(work=work, port=p or port, cport=cport, dport=dport))
            subprocess.run(["chown", "-R", "_rspamd:_rspamd", work], check=False)

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(logp, "ab") as logf:
                sv.start("rspamd", [rspamd, "-f", "-u", "_rspamd", "-g", "_rspamd", "-c", "/etc/rspamd/rspamd.conf",
                                    f"--var=LOCAL_CONFDIR={work}", f"--var=DBDIR={work}/db", f"--var=RUNDIR={work}/run",
                                    f"--var=LOGDIR={work}"], stdout=logf, stderr=logf, cwd=work)
            if wait:
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 60)
                    wait_port(cport, 30)
                log_has(logp, b"hs_helper", since, 30)
                time.sleep(1.0)

        def stop() -> None:
            sv.stop("rspamd", signal.SIGTERM, 30)

        def scan(r: random.Random, spam: bool | None = None, cli: bool = False) -> None:
            s = r.random() < 0.25 if spam is None else spam
            msg = mail(r, s)
            hdrs = {"IP": r.choice(["10.12.1.20", "10.12.1.21", "192.0.2.55", "198.51.100.7"]), "Helo": "mx.example.test",
                    "From": f"{r.choice(USERS)}@corp.onb12.test", "Rcpt": f"{r.choice(USERS)}@onb12.test",
                    "Queue-Id": f"{r.getrandbits(40):X}"}
            if cli:
                run_quiet([rspamc, "-h", f"127.0.0.1:{port}", "-i", hdrs["IP"], "-F", hdrs["From"], "-r", hdrs["Rcpt"],
                           "symbols"], 30, stdin=msg)
            else:
                if r.random() < 0.5:
                    hdrs["User"] = r.choice(USERS)
                rspamd_http(port, "/checkv2", msg, hdrs)

        write_conf()
        resolver = FakeResolver(dport)
        start()
        log = FileLog(logp)
        say(f"rspamd on 127.0.0.1:{port} (controller {cport}, resolver {dport}); normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [scan(rr, cli=rr.random() < 0.15)
                                                                                       for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 2))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["admin"] > rng.uniform(5, 12):
                a = rng.random()
                if a < 0.4:
                    run_quiet([rspamc, "-h", f"127.0.0.1:{cport}", "-P", "Ctrl-onb12", "stat"], 20)
                elif a < 0.7:
                    run_quiet([rspamc, "-h", f"127.0.0.1:{cport}", "-P", "Ctrl-onb12", "counters"], 20)
                else:
                    rspamd_http(cport, "/stat", headers={"Password": "Ctrl-onb12"}, method="GET")
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 25 + 30 * state["restarts"]:
                stop()
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "rspamd", round_fn)
            templates = {rspamd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, rspamd_template, rspamd_problem, rspamd_echo))

            def restart_clean() -> None:
                sv.stop("rspamd", signal.SIGTERM, 20)
                sv.forget("rspamd")
                write_conf()
                start()

            with Background(lambda r: scan(r, spam=False), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("malformed_request"):  # not HTTP, broken HTTP, an empty body, a bad content length
                    for data in [b"HELO mx.example.test\r\n\r\n", b"POST /checkv2 HTTP/1.1\r\nContent-Length: abc\r\n\r\nxx",
                                 b"POST /checkv2 HTTP/1.1\r\nContent-Length: 0\r\n\r\n", TLS_HELLO,
                                 b"POST /nosuchcommand HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("oversized_message"):  # messages over max_message (2 MB)
                    for size in [3 * 1024 * 1024, 5 * 1024 * 1024]:
                        with br.occurrence(2.0):
                            rspamd_http(port, "/checkv2", mail(rng, size=size), {"IP": "192.0.2.99"})
                with br.phase("controller_wrong_password"):  # controller requests with a wrong or a missing password
                    for path, pw, method in [("/stat", "ctrl-onb12", "GET"), ("/learnspam", "Ctrl-onb12", "POST"),
                                             ("/counters", "admin", "GET"), ("/saveactions", "", "POST")]:
                        with br.occurrence(1.5):
                            rspamd_http(cport, path, b"[1,2,3]" if method == "POST" else b"",
                                        {"Password": pw} if pw else {}, method=method)
                with br.phase("dns_upstream_down"):  # the resolver stops answering during scans
                    resolver.down = True
                    br.between()
                    for i in range(3):
                        with br.occurrence(3.0):
                            scan(rng, spam=bool(i % 2))
                    resolver.down = False
                    time.sleep(2)
                    br.between()
                with br.phase("redis_unreachable"):  # ratelimit and greylisting configured with a Redis that is down
                    stop()
                    dead = free_port()
                    write_conf({"redis.conf": f'servers = "127.0.0.1:{dead}";\ntimeout = 1s;\n',
                                "greylist.conf": "enabled = true;\n"})
                    start()
                    br.between()
                    for i in range(3):
                        with br.occurrence(3.0):
                            scan(rng, spam=bool(i % 2))
                    restart_clean()
                    br.between()
                with br.phase("bad_config_restart"):  # local.d edits with mistakes, rspamd restarted
                    blocker = tcp_blocker()
                    for changes, p in [({"options.inc": RSPAMD_LOCAL["options.inc"] + "dns {{\n"}, None),
                                       ({}, blocker.getsockname()[1]),
                                       ({"logging.inc": RSPAMD_LOCAL["logging.inc"] + 'level = "verbose-ish";\n'}, None),
                                       ({"worker-controller.inc": 'bind_socket = "127.0.0.1:{cport}";\ncount = "two";\n'
                                                                  'password = "Ctrl-onb12";\n'}, None)]:
                        stop()
                        br.between()
                        write_conf(changes, p)
                        with br.occurrence(4.0):
                            start(wait=False)
                            time.sleep(4)
                            scan(rng, spam=False)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            resolver.close()
    return Source("rspamd", "Rspamd spam filter (rspamd)", dpkg_version("rspamd"),
                  "rspamd log file at info, its stdout/stderr appended: `2026-12-06 02:38:33 #11905(normal) <15338a>; task; "
                  "rspamd_task_write_log: id: <1@b.test>, (default: F (no action): [3.40/15.00] [HFILTER_HOSTNAME_UNKNOWN(2.50){},"
                  "...]), len: 270, time: 1160.9ms, dns req: 22, digest: <...>, rcpts: <...>, mime_rcpts: <...>`, `... "
                  "#11906(hs_helper) <821ff1>; re_cache; rspamd_re_cache_compile_timer_cb: compiled class ...`; every scan "
                  "traced by its task id (<15338a>) through its stages to its result line",
                  "rspamd -f (the Debian config with a private local.d: one normal worker, a controller with a password, no "
                  "proxy, fuzzy off, Bayes off for want of Redis, DNS through a resolver of this script answering NXDOMAIN) "
                  "scanning ham (several senders, subjects, sizes) and some spam-ish mail over HTTP /checkv2 (with IP, "
                  "Helo, From, Rcpt, Queue-Id, User headers) and with rspamc; rspamc stat / counters and GET /stat on the "
                  "controller; 2 clean restarts",
                  "malformed_request (5: a SMTP greeting, a bad Content-Length, an empty body, TLS, an unknown command), "
                  "oversized_message (2 messages of 3 and 5 MB over max_message 2 MB), controller_wrong_password (4: a "
                  "wrong, a normal instead of the enable password, a bad, no password), dns_upstream_down (3 scans while "
                  "the resolver does not answer), redis_unreachable (3 scans with ratelimit / greylisting on a Redis that "
                  "is down), bad_config_restart (4: a syntax error, the port taken, a bad log level, a bad worker count)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# ejabberd (XMPP clients over raw sockets)
# --------------------------------------------------------------------------

EJ_HOST = "onb12.test"
EJ_CONF = """\
hosts:
  - {host}
loglevel: info
log_rotate_count: 0
log_rotate_size: infinity
hide_sensitive_log_data: false
certfiles: []
listen:
  - port: {port}
    ip: "127.0.0.1"
    module: ejabberd_c2s
    max_stanza_size: 16384
    shaper: c2s_shaper
    access: c2s
    starttls_required: false
s2s_use_starttls: false
s2s_dns_timeout: 2
s2s_timeout: 5
outgoing_s2s_families: [ipv4]
acl:
  admin:
    user: admin@{host}
  local:
    user_regexp: ""
access_rules:
  local:
    allow: local
  c2s:
    deny: blocked
    allow: all
  announce:
    allow: admin
  configure:
    allow: admin
  muc_create:
    allow: local
  register:
    allow: admin
shaper:
  normal: 1000000
shaper_rules:
  c2s_shaper:
    none: admin
    normal: all
auth_method: internal
auth_password_format: plain
{extra}modules:
  mod_roster: {{}}
  mod_disco: {{}}
  mod_ping: {{}}
  mod_muc:
    access_create: muc_create
    host: conference.{host}
    default_room_options:
      persistent: false
  mod_offline: {{}}
  mod_last: {{}}
  mod_vcard: {{}}
  mod_private: {{}}
  mod_stream_mgmt: {{}}
  mod_admin_extra: {{}}
"""
EJ_HEAD = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+\+\d\d:\d\d ")
ejabberd_template = templater(EJ_HEAD, (r"<\d+\.\d+\.\d+>", "<PID>"), (r"\b[\w.-]+@[\w.-]+(/[\w.-]+)?", "JID"),
                              (r":\d+\b", ":N"), (r"/[\w./-]+", "PATH"))
EJ_ROOMS = ["standup", "ops", "random", "release"]


def ejabberd_problem(line: str) -> bool:
    return bool(re.search(r"\[(error|warning|critical|alert|emergency)\]", line)) or bool(
        re.search(r"[Ff]ail|[Ee]rror|[Tt]imeout|[Tt]imed out|[Rr]efused|[Ii]nvalid|[Nn]ot allowed|[Dd]enied|"
                  r"[Uu]nable|[Cc]annot|[Bb]ad |too big|[Mm]alformed", line))


def ejabberd_echo(line: str) -> bool:
    return False


class Xmpp:
    """A minimal XMPP client over a raw socket: stream, SASL PLAIN, bind, then stanzas."""

    def __init__(self, port: int, timeout: float = 5):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.s.settimeout(timeout)
        self.n = 0

    def tx(self, data: str, until: str | None = None, wait: float = 0.05) -> str:
        with contextlib.suppress(OSError):
            self.s.sendall(data.encode())
        out, end = "", time.time() + 3
        if until is None:
            time.sleep(wait)
            self.s.settimeout(0.05)
            with contextlib.suppress(OSError):
                out = self.s.recv(65536).decode(errors="replace")
            self.s.settimeout(5)
            return out
        while until not in out and time.time() < end:
            try:
                chunk = self.s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk.decode(errors="replace")
        return out

    def open(self, host: str = EJ_HOST) -> str:
        return self.tx(f"<?xml version='1.0'?><stream:stream to='{host}' xmlns='jabber:client' "
                       "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>", "</stream:features>")

    def login(self, user: str, pw: str, resource: str, host: str = EJ_HOST) -> bool:
        self.open(host)
        a = base64.b64encode(f"\0{user}\0{pw}".encode()).decode()
        r = self.tx(f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{a}</auth>", "/>")
        if "<success" not in r:
            return False
        self.open(host)
        self.tx(f"<iq type='set' id='bind1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>{resource}</resource>"
                "</bind></iq>", "</iq>")
        return True

    def iq(self, body: str, typ: str = "get", to: str = "") -> str:
        self.n += 1
        return self.tx(f"<iq type='{typ}' id='q{self.n}'{f' to={chr(39)}{to}{chr(39)}' if to else ''}>{body}</iq>", f"id='q{self.n}'")

    def close(self) -> None:
        self.tx("</stream:stream>", "</stream:stream>")
        with contextlib.suppress(OSError):  # a clean close: no more writes, read until the server closes
            self.s.shutdown(socket.SHUT_WR)
            self.s.settimeout(2)
            while self.s.recv(65536):
                pass
        with contextlib.suppress(OSError):
            self.s.close()

    def drop(self) -> None:
        with contextlib.suppress(OSError):
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.s.close()


def source_ejabberd(args) -> Source:
    ctl_bin = need("/usr/sbin/ejabberdctl", "ejabberd")
    rng = random.Random(f"{args.seed}-ejabberd")
    epmd_before = set(pids_named("epmd"))
    with tempfile.TemporaryDirectory(prefix="onb12-ejabberd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ["conf", "db", "log"]:
            os.makedirs(os.path.join(work, d))
        write_atomic(os.path.join(work, "conf", "inetrc"), "")
        port = free_port()
        node = f"onb12ej{os.getpid()}@localhost"
        conf, logp = os.path.join(work, "conf", "ejabberd.yml"), os.path.join(work, "log", "ejabberd.log")
        base = [ctl_bin, "--config-dir", os.path.join(work, "conf"), "--config", conf, "--spool", os.path.join(work, "db"),
                "--logs", os.path.join(work, "log"), "--node", node]
        pw = {u: f"{u.capitalize()}-xmpp-{i + 12}" for i, u in enumerate(USERS)}

        def write_conf(extra: str = "", p: int | None = None, text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else EJ_CONF.format(host=EJ_HOST, port=p or port, extra=extra))
            subprocess.run(["chown", "-R", "ejabberd:ejabberd", work], check=False)

        def ctl(*cmd: str, timeout: float = 30) -> int:
            return run_quiet(base + list(cmd), timeout)

        def start(wait: bool = True) -> None:
            since = size_of(logp)
            with open(os.path.join(work, "foreground.out"), "ab") as out:
                sv.start("ejabberd", base + ["foreground"], stdout=out, stderr=out, cwd=work)
            if wait:
                log_has(logp, b"Start accepting TCP connections", since, 90)
                time.sleep(0.5)

        def reap() -> None:  # su -c runs the node in a session of its own: what is left of it is killed by node name
            sv.stop("ejabberd", signal.SIGTERM, 20)
            sv.forget("ejabberd")
            kill_pids([pid for pid, cmd in proc_cmdlines() if node in cmd and pid != os.getpid()])
            time.sleep(0.5)

        def stop() -> None:
            proc = sv.procs.get("ejabberd")
            if proc is not None and proc.poll() is None:
                ctl("stop", timeout=30)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(30)
            reap()

        def session(r: random.Random, user: str | None = None, actions: int | None = None) -> None:
            user = user or r.choice(USERS)
            try:
                c = Xmpp(port)
            except OSError:
                return
            try:
                if not c.login(user, pw[user], r.choice(["laptop", "phone", "desktop", "tablet"]) + f"-{r.randint(1, 9)}"):
                    return
                c.iq("<query xmlns='jabber:iq:roster'/>")
                c.tx("<presence/>")
                room = None
                for _ in range(actions if actions is not None else r.randint(1, 5)):
                    a = r.random()
                    if a < 0.45:
                        to = r.choice(USERS)
                        c.tx(f"<message to='{to}@{EJ_HOST}' type='chat' id='m{r.getrandbits(24)}'><body>"
                             f"{' '.join(r.choice(WORDS) for _ in range(r.randint(2, 12)))}</body></message>")
                    elif a < 0.65 and room is None:
                        room = r.choice(EJ_ROOMS)
                        c.tx(f"<presence to='{room}@conference.{EJ_HOST}/{user}'><x xmlns='http://jabber.org/protocol/muc'/>"
                             "</presence>", wait=0.2)
                        c.tx(f"<message to='{room}@conference.{EJ_HOST}' type='groupchat'><body>{r.choice(WORDS)}</body></message>")
                    elif a < 0.75:
                        c.iq("<vCard xmlns='vcard-temp'/>", to=f"{r.choice(USERS)}@{EJ_HOST}")
                    elif a < 0.85:
                        c.iq("<query xmlns='http://jabber.org/protocol/disco#items'/>", to=f"conference.{EJ_HOST}")
                    else:
                        c.iq("<ping xmlns='urn:xmpp:ping'/>", to=EJ_HOST)
                    time.sleep(r.uniform(0.02, 0.2))
                if room:
                    c.tx(f"<presence to='{room}@conference.{EJ_HOST}/{user}' type='unavailable'/>", wait=0.1)
                c.tx("<presence type='unavailable'/>")
            finally:
                c.close()

        write_conf()
        start()
        for u in USERS + ["admin"]:
            ctl("register", u, EJ_HOST, pw.get(u, "Admin-xmpp-1"))
        log = FileLog(logp)
        say(f"ejabberd on 127.0.0.1:{port} (node {node}); normal phase...")
        state = {"restarts": 0, "admin": time.time(), "new": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [session(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["admin"] > rng.uniform(15, 30):  # the admin: new accounts, password changes, listings
                a = rng.random()
                if a < 0.4:
                    state["new"] += 1
                    ctl("register", f"intern{state['new']}", EJ_HOST, f"Intern-xmpp-{state['new']}")
                elif a < 0.6:
                    ctl("connected_users")
                elif a < 0.8:
                    ctl("registered_users", EJ_HOST)
                else:
                    u = rng.choice(USERS[:8])
                    ctl("change_password", u, EJ_HOST, pw[u])
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 30 + 40 * state["restarts"]:
                stop()
                time.sleep(0.5)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.3))

        try:
            normal = normal_loop(args, log, "ejabberd", round_fn)
            templates = {ejabberd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, ejabberd_template, ejabberd_problem, ejabberd_echo))

            def restart_clean() -> None:
                reap()
                write_conf()
                start()

            calm = USERS[:6]
            with Background(lambda r: session(r, r.choice(calm), 2), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):
                    for u, bad in [("heidi", "heidi"), ("ivan", pw["ivan"].lower()), ("judy", "Judy-xmpp-11"),
                                   ("mallory", "letmein")]:
                        with br.occurrence(1.5):
                            c = Xmpp(port)
                            c.login(u, bad, "phone")
                            c.close()
                with br.phase("unknown_user"):
                    for u in ["trent", "peggy", "root"]:
                        with br.occurrence(1.5):
                            c = Xmpp(port)
                            c.login(u, "Passw0rd!", "laptop")
                            c.close()
                with br.phase("malformed_xml"):  # broken XML before and after a login
                    for i, data in enumerate(["<stream:stream to='onb12.test' xmlns='jabber:client' <<>>",
                                              "<message to='bob@onb12.test'><body>unclosed</bod></message>",
                                              "<?xml version='1.0'?><stream:stream to='onb12.test' xmlns='jabber:client' "
                                              "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'><iq type='get' id='x'>"
                                              "<query xmlns='jabber:iq:roster'/></iq>",
                                              "<presence><show>away</show><status>&undefined;</status></presence>"]):
                        with br.occurrence(2.0):
                            c = Xmpp(port)
                            if i in (1, 3):
                                u = rng.choice(["heidi", "judy"])
                                c.login(u, pw[u], "laptop")
                            c.tx(data, wait=0.5)
                            c.drop()
                with br.phase("client_dropped"):  # a client vanishing mid-stream (connection reset, no stream close)
                    for u in ["grace", "ivan", "oscar"]:
                        with br.occurrence(2.0):
                            c = Xmpp(port)
                            c.login(u, pw[u], "phone")
                            c.tx("<presence/>")
                            c.tx(f"<presence to='ops@conference.{EJ_HOST}/{u}'><x xmlns='http://jabber.org/protocol/muc'/></presence>",
                                 wait=0.2)
                            c.tx("<message to='alice@onb12.test' type='chat'><body>brb, tra")
                            c.drop()
                with br.phase("s2s_unreachable"):  # messages to users of domains that cannot be reached
                    for u, dom in [("bob", "partner.example"), ("carol", "nonexistent.invalid"), ("erin", "xmpp.unreachable.test")]:
                        with br.occurrence(6.0):
                            c = Xmpp(port)
                            c.login(u, pw[u], "desktop")
                            c.tx(f"<message to='ceo@{dom}' type='chat'><body>hello from onb12</body></message>", wait=0.3)
                            c.iq("<query xmlns='http://jabber.org/protocol/disco#info'/>", to=dom)
                            time.sleep(3)
                            c.close()
                with br.phase("stanza_too_big"):  # stanzas over max_stanza_size (16 KB)
                    for u in ["dave", "frank"]:
                        with br.occurrence(2.0):
                            c = Xmpp(port)
                            c.login(u, pw[u], "laptop")
                            c.tx(f"<message to='alice@{EJ_HOST}' type='chat'><body>{'A' * 40000}</body></message>", wait=0.5)
                            c.drop()
                with br.phase("bad_config_restart"):  # ejabberd.yml edits with mistakes, ejabberd restarted
                    blocker = tcp_blocker()
                    good = EJ_CONF.format(host=EJ_HOST, port=port, extra="")
                    for kw in [{"text": good.replace("loglevel: info", "loglevel: chatty")}, {"p": blocker.getsockname()[1]},
                               {"text": good.replace("  - {}\nloglevel".format(EJ_HOST), "  {}\nloglevel".format(EJ_HOST))},
                               {"text": good.replace("  mod_vcard: {}", "  mod_vcards: {}")}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(8.0):
                            start(wait=False)
                            time.sleep(10)
                            with contextlib.suppress(OSError):
                                session(rng, rng.choice(calm), 1)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            kill_pids(set(pids_named("epmd")) - epmd_before, signal.SIGTERM)
    return Source("ejabberd", "ejabberd XMPP server", dpkg_version("ejabberd"),
                  "ejabberd.log at loglevel info: `2026-12-06 02:37:51.850798+00:00 [info] <0.549.0>@ejabberd_c2s:"
                  "process_auth_result/3:272 (tcp|<0.549.0>) Accepted c2s PLAIN authentication for alice@onb12.test by mnesia "
                  "backend from 127.0.0.1`, `... [info] <0.549.0>@ejabberd_c2s:bind/2:450 (tcp|<0.549.0>) Opened c2s session for "
                  "alice@onb12.test/laptop`, `... [info] <0.552.0>@mod_muc_room:init/1:307 Created MUC room "
                  "room1@conference.onb12.test by alice@onb12.test/laptop`: every XMPP session traced by its Erlang pid from the "
                  "accepted connection through authentication, the bound resource and room joins to its close",
                  "ejabberd 23.01 (ejabberdctl foreground; one virtual host, c2s without TLS, internal auth, MUC, offline "
                  "messages, vCard, roster, stream management, max_stanza_size 16 KB) with XMPP clients of 12 users "
                  "(raw XML over a socket: SASL PLAIN login, resource binding, roster, presence, chat messages, MUC rooms "
                  "joined and left, vCard / disco / ping IQs, logout); an admin's ejabberdctl register / change_password / "
                  "connected_users / registered_users, 2 clean restarts (ejabberdctl stop)",
                  "wrong_password (4), unknown_user (3), malformed_xml (4: a broken stream header, mismatched tags, a stanza "
                  "before authentication, an undefined entity), client_dropped (3 clients reset mid-stream), s2s_unreachable "
                  "(3 messages to domains that cannot be resolved), stanza_too_big (2 messages over 16 KB), "
                  "bad_config_restart (4: a bad loglevel, the port taken, hosts not a list, an unknown module)",
                  normal, br.errors)


# --------------------------------------------------------------------------
# radicale (CalDAV / CardDAV)
# --------------------------------------------------------------------------

RAD_CONF = """\
[server]
hosts = 127.0.0.1:{port}
max_connections = 8
timeout = 10

[auth]
type = htpasswd
htpasswd_filename = {work}/users
htpasswd_encryption = plain
delay = 0

[rights]
type = owner_only

[storage]
filesystem_folder = {work}/collections

[logging]
level = info
mask_passwords = True
{extra}"""
RAD_USERS = USERS[:10]
RAD_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:]+ [+-]\d{4}\] \[[^\]]+\] ")
radicale_template = templater(RAD_HEAD, (r"using '[^']*'", "using 'UA'"), (r"'/[^']*'", "'PATH'"), (r"\b[0-9a-f]{8}-[0-9a-f-]{27}\b", "UUID"),
                              (r"/[\w./@-]+", "PATH"), (r"\d+\.\d+ seconds", "N seconds"))
UAS_DAV = ["DAVx5/4.3.10-ose (2023/12/01; dav4jvm; okhttp/4.12.0) Android/13", "Thunderbird/115.6.0",
           "macOS/14.2 (23C64) dataaccessd/1.0", "Evolution/3.46.4", "iOS/17.2 (21C62) dataaccessd/1.0"]


def radicale_problem(line: str) -> bool:
    return bool(re.search(r"\] \[(ERROR|WARNING|CRITICAL)\] ", line)) or bool(
        re.search(r"status .*: [45]\d\d |[Ff]ailed login|[Aa]ccess .*denied|[Ee]rror|[Ii]nvalid|[Ff]ail|[Bb]ad ", line))


def radicale_echo(line: str) -> bool:
    return False


def vevent(uid: str, summary: str, rng: random.Random) -> str:
    day = rng.randint(1, 28)
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//onb12//EN\r\nBEGIN:VEVENT\r\n"
            f"UID:{uid}\r\nDTSTAMP:20261201T090000Z\r\nDTSTART:202612{day:02d}T{rng.randint(8, 17):02d}0000Z\r\n"
            f"DURATION:PT{rng.choice([30, 45, 60])}M\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


def vcard(uid: str, name: str) -> str:
    return (f"BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}\r\nFN:{name.capitalize()}\r\nN:{name.capitalize()};;;;\r\n"
            f"EMAIL:{name}@onb12.test\r\nEND:VCARD\r\n")


class Dav:
    """A CalDAV / CardDAV client of one user (http.client, basic auth)."""

    def __init__(self, port: int, user: str, pw: str, ua: str):
        self.port, self.user, self.ua = port, user, ua
        self.auth = "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()

    def req(self, method: str, path: str, body: str | bytes | None = None, headers: dict | None = None) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        h = {"Authorization": self.auth, "User-Agent": self.ua}
        if body is not None:
            h["Content-Type"] = "text/calendar; charset=utf-8" if "VCALENDAR" in str(body)[:40] else (
                "text/vcard; charset=utf-8" if "VCARD" in str(body)[:20] else "application/xml; charset=utf-8")
        h.update(headers or {})
        try:
            conn.request(method, path, body=body.encode() if isinstance(body, str) else body, headers=h)
            resp = conn.getresponse()
            resp.read()
            return resp.status, dict(resp.getheaders())
        except (OSError, http.client.HTTPException):
            return 0, {}
        finally:
            conn.close()


PROPFIND = ('<?xml version="1.0" encoding="utf-8"?><propfind xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav" '
            'xmlns:CS="http://calendarserver.org/ns/"><prop><resourcetype/><displayname/><CS:getctag/><getetag/></prop></propfind>')
REPORT = ('<?xml version="1.0" encoding="utf-8"?><C:calendar-query xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
          '<prop><getetag/></prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"/></C:comp-filter>'
          '</C:filter></C:calendar-query>')
MKCALENDAR = ('<?xml version="1.0" encoding="utf-8"?><mkcol xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><set><prop>'
              '<resourcetype><collection/><C:calendar/></resourcetype><displayname>{name}</displayname></prop></set></mkcol>')
MKBOOK = ('<?xml version="1.0" encoding="utf-8"?><mkcol xmlns="DAV:" xmlns:CR="urn:ietf:params:xml:ns:carddav"><set><prop>'
          '<resourcetype><collection/><CR:addressbook/></resourcetype><displayname>Contacts</displayname></prop></set></mkcol>')


def source_radicale(args) -> Source:
    py = need(SYS_PY, "python3")
    if subprocess.run([py, "-c", "import radicale"], capture_output=True).returncode:
        raise RuntimeError("python3 -m radicale: the radicale module is missing (apt-get install radicale)")
    rng = random.Random(f"{args.seed}-radicale")
    with tempfile.TemporaryDirectory(prefix="onb12-radicale-") as work, Group() as sv:
        os.chmod(work, 0o755)
        store = os.path.join(work, "collections")
        os.makedirs(store)
        port = free_port()
        conf, logp = os.path.join(work, "config"), os.path.join(work, "radicale.log")
        pw = {u: f"{u.capitalize()}-cal-{i + 12}" for i, u in enumerate(RAD_USERS)}
        write_atomic(os.path.join(work, "users"), "".join(f"{u}:{p}\n" for u, p in pw.items()))

        def write_conf(extra: str = "", p: int | None = None, text: str | None = None) -> None:
            write_atomic(conf, text if text is not None else RAD_CONF.format(port=p or port, work=work, extra=extra))
            subprocess.run(["chown", "-R", "radicale:radicale", work], check=False)

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:
                sv.start("radicale", as_user("radicale", [py, "-m", "radicale", "--config", conf]), stdout=logf, stderr=logf,
                         cwd=work)
            if wait:
                with contextlib.suppress(RuntimeError):
                    wait_port(port, 30)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("radicale", signal.SIGTERM, 15)

        clients = {u: Dav(port, u, pw[u], rng.choice(UAS_DAV)) for u in RAD_USERS}
        events: dict[str, list[str]] = {u: [] for u in RAD_USERS}

        def setup(u: str) -> None:
            c = clients[u]
            c.req("PROPFIND", "/", PROPFIND, {"Depth": "0"})
            c.req("MKCOL", f"/{u}/calendar/", MKCALENDAR.format(name=f"{u.capitalize()}'s calendar"))
            c.req("MKCOL", f"/{u}/contacts/", MKBOOK)

        def sync(r: random.Random, u: str | None = None) -> None:  # one client's sync: discovery, then changes
            u = u or r.choice(RAD_USERS)
            c = clients[u]
            c.req("PROPFIND", f"/{u}/", PROPFIND, {"Depth": "1"})
            a = r.random()
            if a < 0.4:
                uid = f"{r.getrandbits(64):016x}-{u}"
                c.req("PUT", f"/{u}/calendar/{uid}.ics", vevent(uid, r.choice(HAM_SUBJECTS), r))
                events[u].append(uid)
            elif a < 0.6:
                c.req("REPORT", f"/{u}/calendar/", REPORT, {"Depth": "1"})
                if events[u]:
                    c.req("GET", f"/{u}/calendar/{r.choice(events[u])}.ics")
            elif a < 0.72 and events[u]:
                uid = events[u].pop(r.randrange(len(events[u])))
                c.req("DELETE", f"/{u}/calendar/{uid}.ics")
            elif a < 0.9:
                other = r.choice(USERS)
                c.req("PUT", f"/{u}/contacts/{other}.vcf", vcard(f"{other}-{u}", other))
                c.req("PROPFIND", f"/{u}/contacts/", PROPFIND, {"Depth": "1"})
            else:
                c.req("PROPFIND", f"/{u}/calendar/", PROPFIND, {"Depth": "0"})
                c.req("GET", f"/{u}/contacts/")

        write_conf()
        start()
        for u in RAD_USERS:
            setup(u)
        log = FileLog(logp)
        say(f"radicale on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda rr=random.Random(rng.random()): [sync(rr) for _ in range(rr.randint(1, 3))])
                       for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if state["restarts"] < 2 and elapsed > 20 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.2))

        try:
            normal = normal_loop(args, log, "radicale", round_fn)
            templates = {radicale_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, radicale_template, radicale_problem, radicale_echo))

            def restart_clean() -> None:
                sv.stop("radicale", signal.SIGTERM, 10)
                sv.forget("radicale")
                write_conf()
                start()

            calm = RAD_USERS[:5]
            with Background(lambda r: sync(r, r.choice(calm)), random.Random(rng.random()), (0.3, 0.8)):
                with br.phase("wrong_password"):
                    for u, bad in [("frank", "frank"), ("grace", pw["grace"].upper()), ("heidi", "Heidi-cal-11")]:
                        with br.occurrence(1.5):
                            Dav(port, u, bad, rng.choice(UAS_DAV)).req("PROPFIND", f"/{u}/", PROPFIND, {"Depth": "1"})
                with br.phase("unknown_user"):
                    for u in ["trent", "calendar-bot"]:
                        with br.occurrence(1.5):
                            Dav(port, u, "Passw0rd!", "curl/7.88.1").req("PROPFIND", f"/{u}/", PROPFIND, {"Depth": "1"})
                with br.phase("forbidden_collection"):  # good logins asking for another user's collections
                    for u, other, m in [("ivan", "alice", "PROPFIND"), ("judy", "bob", "GET"), ("ivan", "carol", "PUT")]:
                        with br.occurrence(1.5):
                            c = clients[u]
                            if m == "PUT":
                                c.req("PUT", f"/{other}/calendar/intruder.ics", vevent("intruder", "Injected", rng))
                            else:
                                c.req(m, f"/{other}/calendar/", PROPFIND if m == "PROPFIND" else None, {"Depth": "1"})
                with br.phase("malformed_xml"):  # PROPFIND / REPORT / MKCOL bodies that are not well-formed XML
                    for u, m, body in [("frank", "PROPFIND", "<?xml version='1.0'?><propfind xmlns='DAV:'><prop><getetag></prop>"),
                                       ("grace", "REPORT", "<C:calendar-query xmlns:C='urn:ietf:params:xml:ns:caldav'><C:filter"),
                                       ("heidi", "MKCOL", "this is not xml at all"),
                                       ("frank", "PROPPATCH", "<?xml version='1.0'?><propertyupdate xmlns='DAV:'><set>&bogus;</set>"
                                                              "</propertyupdate>")]:
                        with br.occurrence(1.5):
                            clients[u].req(m, f"/{u}/calendar/" if m != "MKCOL" else f"/{u}/tasks/", body, {"Depth": "1"})
                with br.phase("invalid_ical"):  # PUTs of broken iCalendar / vCard data
                    for u, path, body in [("ivan", "calendar/broken1.ics", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\n"
                                                                          "SUMMARY:no end\r\n"),
                                          ("judy", "calendar/broken2.ics", vevent("x1", "Bad date", rng).replace("DTSTART:2026", "DTSTART:9999x")),
                                          ("frank", "contacts/broken3.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN;;;\r\nEND:VCARD\r\n"),
                                          ("grace", "calendar/broken4.ics", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n")]:
                        with br.occurrence(1.5):
                            clients[u].req("PUT", f"/{u}/{path}", body, {"Content-Type": "text/calendar" if "ics" in path else "text/vcard"})
                with br.phase("conflicting_write"):  # two clients editing the same event: a PUT with a stale ETag
                    for u in ["heidi", "ivan", "judy"]:
                        uid = f"shared-{u}-{rng.getrandbits(24):x}"
                        clients[u].req("PUT", f"/{u}/calendar/{uid}.ics", vevent(uid, "Team offsite", rng))
                        br.between()
                        with br.occurrence(1.5):
                            clients[u].req("PUT", f"/{u}/calendar/{uid}.ics", vevent(uid, "Team offsite (moved)", rng),
                                           {"If-Match": '"0123456789abcdef0123456789abcdef"'})
                        with br.occurrence(1.5):  # creating an event that another device already created
                            clients[u].req("PUT", f"/{u}/calendar/{uid}.ics", vevent(uid, "Team offsite", rng), {"If-None-Match": "*"})
                with br.phase("readonly_storage"):  # the storage folder made read-only (a full or remounted disk)
                    subprocess.run(["chmod", "-R", "a-w", store], check=False)
                    br.between()
                    for u in ["frank", "grace", "heidi"]:
                        with br.occurrence(1.5):
                            uid = f"{rng.getrandbits(64):016x}-{u}"
                            clients[u].req("PUT", f"/{u}/calendar/{uid}.ics", vevent(uid, "Dentist", rng))
                    subprocess.run(["chmod", "-R", "u+w", store], check=False)
                    br.between()
                with br.phase("bad_config_restart"):  # config edits with mistakes, radicale restarted
                    blocker = tcp_blocker()
                    good = RAD_CONF.format(port=port, work=work, extra="")
                    for kw in [{"text": good.replace("type = owner_only", "type = owner_onyl")}, {"p": blocker.getsockname()[1]},
                               {"text": good.replace("max_connections = 8", "max_connections = eight")},
                               {"text": good + "[web]\ntype = internal\nbogus_option = 1\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.5):
                            start(wait=False)
                            time.sleep(2)
                            sync(rng, rng.choice(calm))
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("radicale", "Radicale CalDAV / CardDAV server", dpkg_version("radicale"),
                  "radicale's log (stderr, logging level info): `[2026-12-06 02:40:01 +0000] [1234/Thread-5] [INFO] PROPFIND "
                  "request for '/alice/' with depth '1' received from 127.0.0.1 using 'DAVx5/4.3.10-ose ...'`, `... [INFO] "
                  "Successful login: 'alice'`, `... [INFO] PROPFIND response status for '/alice/' with depth '1' in 0.004 "
                  "seconds: 207 Multi-Status`: every request traced by its thread from received through the login to its "
                  "response status",
                  "python3 -m radicale as the radicale user (htpasswd auth of 10 users, owner_only rights, a private "
                  "filesystem storage) with CalDAV / CardDAV clients of the 10 users (DAVx5, Thunderbird, macOS, iOS, "
                  "Evolution user agents): discovery PROPFINDs, calendar and address book creation (MKCOL), event PUTs, "
                  "calendar-query REPORTs, GETs, DELETEs, contact PUTs; 2 clean restarts",
                  "wrong_password (3), unknown_user (2), forbidden_collection (3 good logins asking for another user's "
                  "collection: PROPFIND, GET, PUT), malformed_xml (4 PROPFIND / REPORT / MKCOL / PROPPATCH bodies), "
                  "invalid_ical (4 PUTs of broken iCalendar / vCard data), conflicting_write (6: 3 PUTs with a stale "
                  "If-Match, 3 with If-None-Match on an existing event), readonly_storage (3 PUTs on a read-only storage "
                  "folder), bad_config_restart (4: an unknown rights type, the port taken, a non-numeric max_connections, "
                  "an unknown option)", normal, br.errors)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_twelfth", SOURCES, globals(), seed=12012, min_normal_s=60,
               root_for="programs dropping to their own users",
               record={"replaced_sources": "none: the five programs of the brief (mariadb, nsd, rspamd, ejabberd, radicale)"})


if __name__ == "__main__":
    sys.exit(main())
