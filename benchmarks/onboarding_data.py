#!/usr/bin/env python3
"""Generate the "onboarding" corpus: real log lines written by real programs.

Every line in the corpus is the verbatim output of a program started by this
script on this machine (nginx, PostgreSQL, Alertmanager, systemd-journald...).
The script only *drives* the programs (HTTP requests, SQL sessions, API calls)
and *breaks* them (kills upstreams, bad config reloads, wrong passwords, ...).

Layout written under --out (default benchmarks/data/onboarding):

    manifest.json            one entry per source + generation date + command
    <source>/normal.log      lines of the normal phase, in the order written
    <source>/errors.log      lines caused by breaking the program
    <source>/errors.jsonl    {"line": ..., "kind": ...} for each errors.log line

How normal and error lines are separated (the same rule for every source):
the normal phase runs first and everything the program logs during it goes to
normal.log (truncated to --lines, hard cap 12,000).  Then each breakage runs as
its own phase; only the lines logged during that phase are considered, and a
line is kept in errors.log (with the phase name as its "kind") when

  * its level/status marks it as a problem (warn/error/... level, HTTP status
    >= 400, PostgreSQL WARNING/ERROR/FATAL/PANIC, journald PRIORITY <= 4), or
  * its template (the line with quoted strings, numbers and hex ids masked)
    never occurred in the normal phase (e.g. nginx's info-level "client sent
    too long header line", PostgreSQL's crash-recovery LOG lines),

minus lines that merely echo the driving workload (PostgreSQL "statement:" and
connection lines, access-log lines with status < 400).  Continuation lines of a
kept multi-line entry (PostgreSQL DETAIL/HINT/CONTEXT/STATEMENT, tab-indented
lines) are kept with it.

Usage:
    python benchmarks/onboarding_data.py --out benchmarks/data/onboarding \
        [--sources nginx_access,nginx_error,postgresql,alertmanager,journald] \
        [--lines 6000] [--seed 1337]

Needs root (nginx master, PostgreSQL run as the "postgres" user, journald in a
private mount namespace).  Programs run on free 127.0.0.1 ports from temp dirs
and are always stopped; nothing under /etc or any system service is touched.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import email.utils
import functools
import glob
import http.client
import http.server
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HARD_CAP = 12_000
SOURCES = ["nginx_access", "nginx_error", "postgresql", "alertmanager", "journald"]


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class MissingProgram(Exception):
    pass


def need(prog: str, package: str) -> str:
    """Absolute path of an executable, or MissingProgram naming the Debian package."""
    path = prog if os.path.isabs(prog) else shutil.which(prog)
    if not path or not os.access(path, os.X_OK):
        raise MissingProgram(f"{prog} not found -- install it with: apt-get install {package}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout:.0f}s")


def version_of(argv: list[str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True)
    m = re.search(r"\d+\.\d+(\.\d+)?", out.stdout + out.stderr)
    return m.group(0) if m else "unknown"


def mask(text: str) -> str:
    """Template of a message: quoted strings, numbers and hex ids masked."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '"_"', text)
    return re.sub(r"\b[0-9a-f]*\d[0-9a-f]*\b", "#", text, flags=re.I)


def parallel(fn, args_list) -> None:
    threads = [threading.Thread(target=fn, args=a, daemon=True) for a in args_list]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


class Services:
    """Child processes that are always stopped on exit (SIGTERM, then SIGKILL)."""

    def __init__(self):
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdin", subprocess.DEVNULL)
        self.procs[name] = subprocess.Popen(argv, **kw)
        return self.procs[name]

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for name in reversed(list(self.procs)):
            self.stop(name)


class FileLog:
    """Reads the complete lines appended to a log file since the last call."""

    def __init__(self, path: str):
        self.path, self.pos, self.buf = path, 0, b""

    def read_new(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return []
        *lines, self.buf = (self.buf + data).split(b"\n")
        # invalid UTF-8 (e.g. a TLS ClientHello echoed by nginx) is kept as \xNN escapes
        return [x.decode("utf-8", "backslashreplace").rstrip("\r") for x in lines if x.strip()]


class Collector:
    """Runs breakage phases and keeps the selected lines of each stream."""

    def __init__(self, streams: dict, selectors: dict):
        self.streams, self.selectors = streams, selectors
        self.errors: dict[str, list[tuple[str, str]]] = {n: [] for n in streams}

    @contextlib.contextmanager
    def phase(self, kind: str, settle: float = 1.0):
        for s in self.streams.values():
            s.read_new()  # whatever was logged between phases belongs to no phase
        say(f"  breaking: {kind}")
        yield
        time.sleep(settle)
        for name, s in self.streams.items():
            kept = self.selectors[name](s.read_new())
            self.errors[name] += [(line, kind) for line in kept]
            say(f"    {name}: {len(kept)} error lines")


def novel_or(templates: set, is_problem, template_of=mask, ignore=lambda line: False):
    """Selector: keep lines marked as problems or whose template is new."""
    def select(lines):
        return [x for x in lines if not ignore(x) and (is_problem(x) or template_of(x) not in templates)]
    return select


@dataclasses.dataclass
class Source:
    name: str
    program: str
    version: str
    format_hint: str
    how_normal: str
    how_errors: str
    normal: list
    errors: list  # (line, kind)


# --------------------------------------------------------------------------
# nginx: a small shop site with a proxied python API upstream
# --------------------------------------------------------------------------

UPSTREAM_APP = r'''
import json, os, random, sys, time, traceback, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
DATA = sys.argv[2]
class Handler(BaseHTTPRequestHandler):
    server_version = "shop-api/1.4"
    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def _products(self):
        with open(os.path.join(DATA, "products.json")) as f:
            return json.load(f)
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        parts = url.path.strip("/").split("/")
        time.sleep(random.uniform(0.001, 0.012))
        try:
            if url.path == "/api/health":
                return self._send(200, {"status": "ok"})
            if url.path == "/api/report":
                time.sleep(random.uniform(0.3, 0.8))
                return self._send(200, {"rows": 24})
            if parts[:2] == ["api", "products"]:
                items = self._products()
                if len(parts) == 3:
                    hit = [p for p in items if p["id"] == int(parts[2])]
                    return self._send(200, hit[0]) if hit else self._send(404, {"error": "not found"})
                cat = q.get("category", [None])[0]
                return self._send(200, [p for p in items if cat in (None, p["category"])][:20])
            if url.path == "/api/search":
                term = q.get("q", [""])[0].lower()
                return self._send(200, [p for p in self._products() if term in p["name"].lower()][:20])
            if parts[:2] == ["api", "users"] and len(parts) == 3:
                uid = int(parts[2])
                return self._send(200, {"id": uid}) if uid < 900 else self._send(404, {"error": "no such user"})
            return self._send(404, {"error": "unknown endpoint"})
        except Exception:
            traceback.print_exc()
            return self._send(500, {"error": "internal server error"})
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(random.uniform(0.002, 0.02))
        try:
            payload = json.loads(body or b"{}")
            if self.path == "/api/cart":
                return self._send(200, {"items": len(payload.get("items", []))})
            if self.path == "/api/orders":
                self._products()
                return self._send(201, {"order_id": random.randint(10000, 99999)})
            return self._send(404, {"error": "unknown endpoint"})
        except Exception:
            traceback.print_exc()
            return self._send(500, {"error": "internal server error"})
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''

NGINX_CONF = """\
user www-data {group};
worker_processes 2;
pid {work}/nginx.pid;
error_log {error_log} info;
events {{ worker_connections 512; }}
http {{
    include {work}/mime.types;
    default_type application/octet-stream;
    access_log {access_log};
    client_body_temp_path {work}/tmp/body;
    proxy_temp_path {work}/tmp/proxy;
    fastcgi_temp_path {work}/tmp/fastcgi;
    uwsgi_temp_path {work}/tmp/uwsgi;
    scgi_temp_path {work}/tmp/scgi;
    sendfile on;
    keepalive_timeout 30s;
    client_max_body_size 1m;
    large_client_header_buffers 4 8k;
    server_tokens off;
    upstream shop_api {{ server 127.0.0.1:{api_port}; }}
    server {{
        listen 127.0.0.1:{port};
        server_name shop.example.test;
        root {work}/html;
        index index.html;
        location /static/ {{ expires 7d; }}
        location /api/ {{
            proxy_pass http://shop_api;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_connect_timeout 2s;
            proxy_read_timeout 3s;
        }}
        location = /nginx_status {{ stub_status; allow 127.0.0.0/8; deny all; }}
{extra}
    }}
}}
"""

BROWSERS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.67",
]
APP_UAS = ["ShopApp/3.2.1 (Android 14; Pixel 8)", "ShopApp/3.2.1 (iOS 17.4; iPhone15,2)",
           "ShopApp/3.1.9 (Android 12; SM-A525F)", "okhttp/4.12.0"]
BOTS = ["Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"]
SCANNER_UAS = ["Mozilla/5.0 zgrab/0.x", "python-requests/2.31.0", "curl/7.88.1", "Go-http-client/1.1"]
SCAN_PATHS = ["/wp-login.php", "/.env", "/.git/config", "/phpmyadmin/index.php", "/xmlrpc.php",
              "/admin/config.php", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", "/actuator/health"]
REFERERS = ["https://www.google.com/", "https://duckduckgo.com/", "https://www.bing.com/",
            "https://news.ycombinator.com/", "https://t.co/x7Gq2LmPzA", "-"]
SEARCH_TERMS = ["lamp", "chair", "desk", "mug", "kettle", "rug", "shelf", "sofa", "pillow", "clock", "oak", "linen"]
CATEGORIES = ["kitchen", "living", "office", "bedroom", "outdoor"]
ADJ = ["oak", "walnut", "linen", "steel", "ceramic", "copper", "wool", "bamboo"]
NOUN = ["lamp", "chair", "desk", "mug", "kettle", "rug", "shelf", "sofa", "pillow", "clock", "vase", "stool"]
HOST = "shop.example.test"


def build_site(work: str, rng: random.Random) -> dict:
    """Static pages/assets with fixed mtimes, plus the API's products.json."""
    html, files = os.path.join(work, "html"), {}
    products = [{"id": i, "sku": f"SKU-{1000 + i}", "name": f"{rng.choice(ADJ)} {rng.choice(NOUN)}",
                 "category": rng.choice(CATEGORIES), "price": round(rng.uniform(4, 900), 2)}
                for i in range(1, 201)]
    slugs = sorted({p["name"].replace(" ", "-") for p in products})[:24]

    def put(rel, data):
        path = os.path.join(html, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        mtime = 1_714_000_000 + 3600 * len(files)
        os.utime(path, (mtime, mtime))
        files[rel] = email.utils.formatdate(mtime, usegmt=True)

    def page(title):
        return f"<!doctype html><html><head><title>{title}</title></head><body>" + \
            "<p>lorem ipsum</p>" * rng.randint(20, 400) + "</body></html>"

    for rel in ["/index.html", "/about.html", "/contact.html", "/blog/index.html", "/products/index.html",
                "/docs/index.html", "/docs/install.html", "/docs/shipping.html", "/docs/returns.html", "/search.html"]:
        put(rel, page(rel))
    for i in range(1, 31):
        put(f"/blog/post-{i}.html", page(f"post {i}"))
    for s in slugs:
        put(f"/products/{s}.html", page(s))
        put(f"/static/img/products/{s}.jpg", rng.randbytes(rng.randint(8_000, 90_000)))
    for rel, size in [("/static/css/site.css", 14_200), ("/static/css/print.css", 2_100), ("/static/js/app.js", 41_877),
                      ("/static/js/vendor.js", 128_400), ("/static/img/logo.png", 6_120), ("/static/img/hero.jpg", 212_000),
                      ("/static/fonts/inter.woff2", 98_300), ("/downloads/catalog-2024.pdf", 1_480_000)]:
        put(rel, rng.randbytes(size))
    put("/robots.txt", "User-agent: *\nDisallow: /api/\nSitemap: https://shop.example.test/sitemap.xml\n")
    put("/sitemap.xml", "<?xml version='1.0'?><urlset>" + "<url/>" * 60 + "</urlset>")
    os.makedirs(os.path.join(work, "api-data"), exist_ok=True)
    with open(os.path.join(work, "api-data", "products.json"), "w") as f:
        json.dump(products, f)
    return {"files": files, "slugs": slugs}


class NginxSite:
    """nginx (master + 2 workers as www-data) in front of a python API upstream."""

    def __init__(self, services: Services, work: str, rng: random.Random, nginx: str,
                 access_log: str, error_log: str, stderr_for=None, default_error_log: str = "stderr"):
        self.sv, self.work, self.rng, self.nginx = services, work, rng, nginx
        self.default_error_log = default_error_log  # nginx -e: startup messages (and a copy of syslog ones)
        self.access_log, self.error_log = access_log, error_log
        # stderr_for(name) -> file object/fd for a child's stdout+stderr
        self.stderr_for = stderr_for or (lambda name: open(os.path.join(work, f"{name}.stderr"), "ab"))
        self.port, self.api_port = free_port(), free_port()
        os.chmod(work, 0o755)
        for d in ("tmp", "logs"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        mime = "/etc/nginx/mime.types"
        if os.path.exists(mime):
            shutil.copy(mime, os.path.join(work, "mime.types"))
        else:
            with open(os.path.join(work, "mime.types"), "w") as f:
                f.write("types { text/html html; text/css css; application/javascript js; image/png png;"
                        " image/jpeg jpg; font/woff2 woff2; application/pdf pdf; text/plain txt; text/xml xml; }\n")
        self.site = build_site(work, rng)
        group = "www-data" if _group_exists("www-data") else "nogroup"
        self.conf_vars = dict(work=work, port=self.port, api_port=self.api_port, group=group,
                              access_log=access_log, error_log=error_log)
        self.visitors = [(f"127.{rng.randint(16, 250)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
                          rng.choice(BROWSERS)) for _ in range(220)]
        self.returning: set = set()

    # -- process control ---------------------------------------------------
    def write_conf(self, extra: str = "") -> None:
        with open(os.path.join(self.work, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(extra=extra, **self.conf_vars))

    def start(self) -> None:
        self.write_conf()
        self.start_api()
        err = self.stderr_for("nginx")
        self.master = self.sv.start("nginx", [self.nginx, "-p", self.work, "-c", os.path.join(self.work, "nginx.conf"),
                                              "-e", self.default_error_log, "-g", "daemon off;"], stdout=err, stderr=err)
        wait_port(self.port)

    def start_api(self) -> None:
        out = self.stderr_for("shop-api")
        self.api = self.sv.start("api", [sys.executable, "-u", "-c", UPSTREAM_APP, str(self.api_port),
                                         os.path.join(self.work, "api-data")], stdout=out, stderr=out)
        wait_port(self.api_port)

    def signal_master(self, sig: int) -> None:
        self.master.send_signal(sig)
        time.sleep(0.6)

    def workers(self) -> list[int]:
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == self.master.pid:
                            pids.append(int(d))
                except (OSError, IndexError, ValueError):
                    pass
        return pids

    # -- traffic -------------------------------------------------------------
    def request(self, ip: str, reqs: list, ua: str, keepalive: bool = True, timeout: float = 10) -> list:
        """Send reqs [(method, path, headers, body)] over one connection; returns statuses."""
        statuses = []
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(ip, 0))
        try:
            for method, path, headers, body in reqs:
                h = {"Host": HOST, "User-Agent": ua, "Accept": "*/*", "Accept-Language": "en-US,en;q=0.9"}
                h.update(headers)
                if not keepalive:
                    h["Connection"] = "close"
                conn.request(method, path, body=body, headers=h)
                resp = conn.getresponse()
                resp.read()
                statuses.append(resp.status)
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        return statuses

    def _ims(self, rel: str) -> dict:
        return {"If-Modified-Since": self.site["files"][rel]} if rel in self.site["files"] else {}

    def random_page(self) -> str:
        r, rng = self.rng.random(), self.rng
        if r < 0.25:
            return "/"
        if r < 0.5:
            return f"/products/{rng.choice(self.site['slugs'])}.html"
        if r < 0.65:
            return f"/blog/post-{rng.randint(1, 30)}.html" if rng.random() < 0.8 else "/blog/"
        if r < 0.75:
            return "/products/"
        if r < 0.83:
            return f"/search.html?q={rng.choice(SEARCH_TERMS)}"
        if r < 0.9:
            return rng.choice(["/docs/", "/docs/shipping.html", "/docs/returns.html", "/docs/install.html", "/docs"])
        return rng.choice(["/about.html", "/contact.html"])

    def api_call(self) -> tuple:
        rng = self.rng
        r = rng.random()
        js = {"Accept": "application/json"}
        if r < 0.35:
            return ("GET", f"/api/products?category={rng.choice(CATEGORIES)}&page={rng.randint(1, 5)}", js, None)
        if r < 0.6:
            return ("GET", f"/api/products/{rng.randint(1, 215)}", js, None)
        if r < 0.72:
            return ("GET", f"/api/search?q={rng.choice(SEARCH_TERMS)}", js, None)
        if r < 0.8:
            return ("GET", f"/api/users/{rng.randint(1, 960)}", js, None)
        if r < 0.93:
            body = json.dumps({"items": [{"sku": f"SKU-{rng.randint(1001, 1200)}", "qty": rng.randint(1, 3)}
                                         for _ in range(rng.randint(1, 4))]})
            return ("POST", "/api/cart", {"Content-Type": "application/json"}, body)
        if r < 0.98:
            return ("POST", "/api/orders", {"Content-Type": "application/json"},
                    json.dumps({"cart": rng.randint(1, 10 ** 6), "payment": "card"}))
        return ("GET", "/api/report", js, None)

    def visit(self) -> None:
        """One client connection: browser page view, app, bot, monitor, scanner or download."""
        rng, r = self.rng, self.rng.random()
        if r < 0.56:  # browser page view with assets over one keep-alive connection
            ip, ua = rng.choice(self.visitors)
            back = ip in self.returning
            self.returning.add(ip)
            page = self.random_page()
            reqs = [("GET", page, {"Referer": rng.choice(REFERERS)} if rng.random() < 0.5 else {}, None)]
            ref = {"Referer": f"http://{HOST}{page}"}
            assets = ["/static/css/site.css", "/static/js/app.js", "/static/js/vendor.js", "/static/img/logo.png"]
            if page == "/":
                assets.append("/static/img/hero.jpg")
            if page.startswith("/products/") and page != "/products/":
                assets.append(page.replace("/products/", "/static/img/products/").replace(".html", ".jpg"))
            for a in assets:
                if back and rng.random() < 0.7:
                    continue  # still fresh in the browser cache
                reqs.append(("GET", a, {**ref, **(self._ims(a) if back else {})}, None))
            if rng.random() < 0.15:
                reqs.append(("GET", "/static/fonts/inter.woff2", ref, None))
            if not back and rng.random() < 0.5:
                reqs.append(("GET", "/favicon.ico", ref, None))
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                method, path, headers, body = self.api_call()
                reqs.append((method, path, {**headers, **ref}, body))
            if rng.random() < 0.35:
                reqs.append(("GET", self.random_page(), ref, None))
            self.request(ip, reqs, ua)
        elif r < 0.76:  # mobile app talking to the API
            ip = f"127.{rng.randint(16, 250)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
            self.request(ip, [self.api_call() for _ in range(rng.randint(1, 4))], rng.choice(APP_UAS))
        elif r < 0.84:  # crawler
            ip = rng.choice(["127.66.249.66", "127.66.249.79", "127.157.55.39", "127.54.36.148"])
            reqs = [("GET", rng.choice(["/robots.txt", "/sitemap.xml"]), {}, None)]
            reqs += [("GET", self.random_page(), {}, None) for _ in range(rng.randint(0, 2))]
            if rng.random() < 0.15:
                reqs.append(("GET", f"/blog/post-{rng.randint(31, 60)}.html", {}, None))  # stale link -> 404
            self.request(ip, reqs, rng.choice(BOTS), keepalive=rng.random() < 0.5)
        elif r < 0.95:  # health checks and the metrics exporter
            ip, ua, req = rng.choice([
                ("127.10.0.5", "kube-probe/1.27", ("GET", "/api/health", {}, None)),
                ("127.10.0.6", "kube-probe/1.27", ("GET", "/api/health", {}, None)),
                ("127.10.0.9", "NGINX-Prometheus-Exporter/v0.11.0", ("GET", "/nginx_status", {}, None)),
                ("127.94.46.122", "Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)", ("HEAD", "/", {}, None)),
            ])
            self.request(ip, [req], ua, keepalive=False)
        elif r < 0.975:  # internet background noise: vulnerability scanners
            ip = f"127.{rng.randint(16, 250)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
            reqs = [("GET", p, {}, None) for p in rng.sample(SCAN_PATHS, rng.randint(1, 3))]
            self.request(ip, reqs, rng.choice(SCANNER_UAS), keepalive=False)
        else:  # catalog download, often resumed with a Range request
            ip, ua = rng.choice(self.visitors)
            start = rng.choice([0, 0, 65536, 524288])
            hdr = {"Range": f"bytes={start}-{start + 65535}"} if rng.random() < 0.8 else {}
            self.request(ip, [("GET", "/downloads/catalog-2024.pdf", hdr, None)], ua)

    def normal_phase(self, streams: dict, target: int, max_seconds: float = 600) -> dict:
        """Visits (with a reload every 1,500 and a log reopen every 4,000) until every stream has `target` lines."""
        got = {n: [] for n in streams}
        n, t0 = 0, time.time()
        while True:
            self.visit()
            n += 1
            if n % 1500 == 0:
                self.signal_master(signal.SIGHUP)   # config management reload
            if n % 4000 == 0:
                self.signal_master(signal.SIGUSR1)  # logrotate's reopen
            if n % 200 == 0:
                for name, s in streams.items():
                    got[name] += s.read_new()
                if n % 1000 == 0:
                    say(f"  {n} visits: " + ", ".join(f"{k}={len(v)}" for k, v in got.items()))
                if all(len(v) >= target for v in got.values()) or time.time() - t0 > max_seconds:
                    time.sleep(0.5)
                    for name, s in streams.items():
                        got[name] += s.read_new()
                    return got

    # -- breakage --------------------------------------------------------------
    def break_all(self, col: Collector, n: int = 20) -> None:
        """Each phase breaks one thing, sends ~n requests that hit it, and repairs it."""
        rng, html = self.rng, os.path.join(self.work, "html")
        api_reqs = lambda k: [self.api_call() for _ in range(k)]
        one = lambda req, ua=None: self.request(rng.choice(self.visitors)[0], [req], ua or rng.choice(BROWSERS))
        many = lambda reqs: parallel(lambda q: one(q, rng.choice(APP_UAS)), [(q,) for q in reqs])

        with col.phase("permission_denied"):  # a deploy left files unreadable for the workers
            victims = [f"/products/{s}.html" for s in self.site["slugs"][:5]] + ["/static/css/site.css"]
            for v in victims:
                os.chmod(html + v, 0)
            os.chmod(html + "/static/img/products", 0o700)
            for _ in range(n):
                page = rng.choice(victims + [f"/static/img/products/{rng.choice(self.site['slugs'])}.jpg"])
                one(("GET", page, {"Referer": f"http://{HOST}/products/"}, None))
            for v in victims:
                os.chmod(html + v, 0o644)
            os.chmod(html + "/static/img/products", 0o755)

        with col.phase("upstream_down"):  # the API process dies
            self.sv.stop("api", signal.SIGKILL)
            for req in api_reqs(n):
                one(req, rng.choice(APP_UAS))
            self.start_api()

        with col.phase("upstream_hang"):  # the API process is frozen (SIGSTOP)
            self.api.send_signal(signal.SIGSTOP)
            many(api_reqs(n))
            self.api.send_signal(signal.SIGCONT)

        with col.phase("upstream_crash"):  # the API is killed while answering slow reports
            t = threading.Timer(0.25, lambda: self.api.send_signal(signal.SIGKILL))
            t.start()
            many([("GET", "/api/report", {"Accept": "application/json"}, None)] * n)
            self.api.wait()
            self.start_api()

        with col.phase("upstream_500"):  # the API's data file is corrupted
            path = os.path.join(self.work, "api-data", "products.json")
            good = open(path).read()
            with open(path, "w") as f:
                f.write(good[: len(good) // 2])
            for _ in range(n):
                one(rng.choice([("GET", f"/api/products?category={rng.choice(CATEGORIES)}", {}, None),
                                ("GET", f"/api/products/{rng.randint(1, 200)}", {}, None),
                                ("GET", f"/api/search?q={rng.choice(SEARCH_TERMS)}", {}, None)]), rng.choice(APP_UAS))
            with open(path, "w") as f:
                f.write(good)

        with col.phase("body_too_large"):  # uploads above client_max_body_size
            for _ in range(n):
                body = rng.randbytes(rng.randint(1_100_000, 3_000_000))
                one(("POST", "/api/uploads", {"Content-Type": "image/jpeg"}, body), rng.choice(APP_UAS))

        with col.phase("header_too_large"):  # a cookie that grew past large_client_header_buffers
            for _ in range(max(5, n // 2)):  # long lines: fewer of them
                cookie = "; ".join(f"_ga_{rng.randrange(16 ** 8):08X}=GS1.1.{rng.randrange(10 ** 10)}.{rng.randint(1, 9)}.1"
                                   f".{rng.randrange(10 ** 10)}.60.0.0" for _ in range(rng.randint(190, 260)))
                one(("GET", self.random_page(), {"Cookie": cookie}, None))

        with col.phase("uri_too_long"):  # a client looping on redirects that append query parameters
            for _ in range(max(5, n // 3)):
                q = "&".join(f"utm_source=newsletter&ref={rng.randrange(10 ** 12)}" for _ in range(rng.randint(225, 260)))
                one(("GET", f"/search.html?q={rng.choice(SEARCH_TERMS)}&{q}", {}, None))

        with col.phase("tls_on_http_port"):  # clients speaking HTTPS to the plain HTTP port
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            for _ in range(n):
                with socket.create_connection(("127.0.0.1", self.port), 5,
                                              source_address=(rng.choice(self.visitors)[0], 0)) as raw:
                    with contextlib.suppress(OSError):
                        ctx.wrap_socket(raw, server_hostname=HOST).close()

        with col.phase("worker_killed"):  # the OOM killer / an operator SIGKILLs workers
            for _ in range(6):
                os.kill(rng.choice(self.workers()), signal.SIGKILL)
                time.sleep(0.5)
                for _ in range(5):
                    one(("GET", "/", {}, None))

        with col.phase("bad_config_reload"):  # reloads with broken configs; nginx keeps the old one
            busy = socket.socket()
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            bad = ["        proxy_buffer_sise 16k;",
                   "        location /old-shop/ { return 301 /;",
                   f"        listen 127.0.0.1:{busy.getsockname()[1]};",  # nginx retries bind() 5 times
                   "        client_max_body_size 10q;",
                   "        location ~ ^/api/v2/ { proxy_pass http://shop_api/v2/; }"]
            for extra in bad + bad:
                self.write_conf(extra)
                self.signal_master(signal.SIGHUP)
                time.sleep(3 if "listen" in extra else 0.4)  # let the master finish before the next signal
                one(("GET", "/", {}, None))
            busy.close()
            self.write_conf()
            self.signal_master(signal.SIGHUP)


def _group_exists(name: str) -> bool:
    import grp
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


NGX_ERR_LEVEL = re.compile(r"^\S+ \S+ \[(\w+)\]")
NGX_STATUS = re.compile(r'" (\d{3}) ')


def ngx_err_template(line: str) -> str:
    return mask(re.sub(r"^\S+ \S+ \[(\w+)\] \d+#\d+: (\*\d+ )?", r"\1 ", line))


def ngx_access_status(line: str) -> int:
    m = NGX_STATUS.search(line)
    return int(m.group(1)) if m else 0


@functools.lru_cache(maxsize=None)
def nginx_files_session(seed: int, target: int) -> dict:
    """One nginx run shared by nginx_access and nginx_error (logs written to files)."""
    nginx = need("/usr/sbin/nginx", "nginx")
    rng = random.Random(f"{seed}-nginx")
    with tempfile.TemporaryDirectory(prefix="onb-nginx-") as work, Services() as sv:
        site = NginxSite(sv, work, rng, nginx, f"{work}/logs/access.log combined", f"{work}/logs/error.log")
        streams = {"access": FileLog(f"{work}/logs/access.log"), "error": FileLog(f"{work}/logs/error.log")}
        site.start()
        say(f"nginx on 127.0.0.1:{site.port}, API upstream on :{site.api_port}; normal traffic...")
        normal = site.normal_phase(streams, target)
        err_templates = {ngx_err_template(x) for x in normal["error"]}
        col = Collector(streams, {
            "access": lambda lines: [x for x in lines if ngx_access_status(x) >= 400],
            "error": novel_or(err_templates, lambda x: NGX_ERR_LEVEL.match(x) and NGX_ERR_LEVEL.match(x).group(1)
                              in ("warn", "error", "crit", "alert", "emerg"), ngx_err_template),
        })
        site.break_all(col)
        return {"normal": normal, "errors": col.errors, "version": version_of([nginx, "-v"])}


NGINX_HOW_NORMAL = ("nginx 2 workers on 127.0.0.1 serving a static shop site and proxying /api/ to a python "
                    "http.server upstream; seeded mix of browser page views with assets (200/304/206, favicon 404s), "
                    "mobile-app API calls (GET/POST, upstream 404s), crawlers, health checks, stub_status polls, "
                    "scanner noise (404s); a SIGHUP reload every 1,500 visits and a SIGUSR1 reopen every 4,000")
NGINX_HOW_ERRORS = ("permission_denied: chmod 000 on pages/assets; upstream_down: API SIGKILLed; upstream_hang: API "
                    "SIGSTOPped (timeouts); upstream_crash: API SIGKILLed mid-request; upstream_500: API data file "
                    "corrupted; body_too_large: >1m uploads; header_too_large: >8k Cookie; uri_too_long: >8k URI; "
                    "tls_on_http_port: TLS ClientHello to the HTTP port; worker_killed: SIGKILL a worker; "
                    "bad_config_reload: SIGHUP with broken configs")


def source_nginx_access(args) -> Source:
    """nginx access log ('combined') of nginx 2 workers serving a static shop site and proxying /api/
    to a python http.server upstream, driven by seeded browser/app/crawler/monitor/scanner traffic.
    Broken (NginxSite.break_all): unreadable files, API killed/frozen/crashing/returning 500, oversized
    bodies/headers/URIs, TLS to the HTTP port (worker kills and bad reloads leave no access lines)."""
    s = nginx_files_session(args.seed, args.lines)
    return Source("nginx_access", "nginx", s["version"], "nginx access log, 'combined' log_format",
                  NGINX_HOW_NORMAL, NGINX_HOW_ERRORS + " (only lines with status >= 400 are kept)",
                  s["normal"]["access"], s["errors"]["access"])


def source_nginx_error(args) -> Source:
    """nginx error log at 'info' level of the same run as nginx_access (one nginx run serves both).
    Broken: as nginx_access, plus workers SIGKILLed and SIGHUP reloads of broken configs (unknown
    directive, missing brace, listen port in use, invalid size, URI in a regex location proxy_pass)."""
    s = nginx_files_session(args.seed, args.lines)
    return Source("nginx_error", "nginx", s["version"], "nginx error log ('error_log ... info')",
                  NGINX_HOW_NORMAL, NGINX_HOW_ERRORS + " (kept: warn+ levels and templates unseen in the normal phase)",
                  s["normal"]["error"], s["errors"]["error"])


# --------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------

class Pg:
    """A private PostgreSQL cluster and psql/pgbench sessions against it."""

    PASSWORDS = {"postgres": "pg-super-7Hq", "app_rw": "app-secret-4Tz", "reporting": "report-secret-9Kd"}

    def __init__(self, work: str, bindir: str, psql: str, pgbench: str):
        self.work, self.bindir, self.psql_bin, self.pgbench = work, bindir, psql, pgbench
        self.port = free_port()
        self.data = os.path.join(work, "data")
        self.log = os.path.join(work, "postgresql.log")

    def start(self, sv: Services) -> None:
        shutil.chown(self.work, "postgres", "postgres")
        pw = os.path.join(self.work, "pw")
        with open(pw, "w") as f:
            f.write(self.PASSWORDS["postgres"])
        shutil.chown(pw, "postgres", "postgres")
        subprocess.run([f"{self.bindir}/initdb", "-D", self.data, "-U", "postgres", "-E", "UTF8", "--locale=C",
                        "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pw}"],
                       check=True, user="postgres", group="postgres", extra_groups=[], cwd=self.work,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        settings = dict(port=self.port, listen_addresses="127.0.0.1", unix_socket_directories=self.work,
                        logging_collector="off", log_destination="stderr", log_statement="all",
                        log_connections="on", log_disconnections="on", log_checkpoints="on", log_lock_waits="on",
                        log_autovacuum_min_duration="0", autovacuum_naptime="15s", checkpoint_timeout="30s",
                        deadlock_timeout="200ms", max_connections="20", shared_buffers="32MB",
                        log_timezone="UTC", timezone="UTC", lc_messages="C")
        argv = [f"{self.bindir}/postgres", "-D", self.data]
        for k, v in settings.items():
            argv += ["-c", f"{k}={v}"]
        logf = open(self.log, "ab")
        self.proc = sv.start("postgres", argv, stdout=logf, stderr=logf, user="postgres", group="postgres",
                             extra_groups=[], cwd=self.work)
        wait_port(self.port)
        time.sleep(0.5)

    def session(self, sql: str, user: str = "app_rw", db: str = "shop", app: str = "shop-web",
                password: str | None = None, wait: bool = True):
        """Run a psql session (over TCP with a password; the superuser over the unix socket)."""
        env = dict(os.environ, PGAPPNAME=app, PGPASSWORD=password or self.PASSWORDS.get(user, "x"))
        host = self.work if user == "postgres" else "127.0.0.1"
        proc = subprocess.Popen([self.psql_bin, "-X", "-q", "-w", "-v", "ON_ERROR_STOP=0", "-h", host,
                                 "-p", str(self.port), "-U", user, "-d", db, "-f", "-"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env, text=True)
        proc.stdin.write(sql)
        proc.stdin.close()
        if wait:
            proc.wait(60)
        return proc

    def su(self, sql: str, db: str = "shop") -> None:
        self.session(sql, user="postgres", db=db, app="ops-console")

    def bench(self, args: list[str]) -> None:
        env = dict(os.environ, PGPASSWORD=self.PASSWORDS["app_rw"])
        subprocess.run([self.pgbench, "-h", "127.0.0.1", "-p", str(self.port), "-U", "app_rw", *args, "shopbench"],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)

    def backend_pids(self, app: str) -> list[int]:
        out = subprocess.run([self.psql_bin, "-X", "-At", "-h", self.work, "-p", str(self.port), "-U", "postgres",
                              "-d", "shop", "-c", f"SELECT pid FROM pg_stat_activity WHERE application_name = '{app}'"
                              " AND state = 'active'"], capture_output=True, text=True).stdout
        return [int(x) for x in out.split()]

    def wait_ready(self, timeout: float = 60) -> None:
        end = time.time() + timeout
        while time.time() < end:
            r = subprocess.run([self.psql_bin, "-X", "-At", "-h", self.work, "-p", str(self.port), "-U", "postgres",
                                "-d", "postgres", "-c", "SELECT 1"], capture_output=True, text=True)
            if r.stdout.strip() == "1":
                return
            time.sleep(0.5)
        raise RuntimeError("postgres did not come back")


PG_SETUP_SU = """\
CREATE ROLE app_rw LOGIN PASSWORD '{app_rw}';
CREATE ROLE reporting LOGIN PASSWORD '{reporting}';
CREATE DATABASE shop OWNER app_rw;
CREATE DATABASE shopbench OWNER app_rw;
"""
PG_SETUP_APP = """\
CREATE TABLE customers (id serial PRIMARY KEY, email text UNIQUE NOT NULL, name text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), last_login timestamptz);
CREATE TABLE products (id serial PRIMARY KEY, sku text UNIQUE NOT NULL, name text NOT NULL, category text NOT NULL, price numeric(10,2) NOT NULL, stock int NOT NULL DEFAULT 0);
CREATE TABLE orders (id serial PRIMARY KEY, customer_id int NOT NULL REFERENCES customers, status text NOT NULL, total numeric(10,2) NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE order_items (order_id int NOT NULL REFERENCES orders, product_id int NOT NULL REFERENCES products, qty int NOT NULL, price numeric(10,2) NOT NULL);
CREATE TABLE coupons (code text PRIMARY KEY, discount numeric(4,2) NOT NULL, valid_until date NOT NULL);
CREATE INDEX orders_customer_idx ON orders (customer_id);
INSERT INTO customers (email, name) SELECT 'user' || g || '@example.com', 'Customer ' || g FROM generate_series(1, 500) g;
INSERT INTO products (sku, name, category, price, stock) SELECT 'SKU-' || (1000 + g), 'Product ' || g, (ARRAY['kitchen','living','office','bedroom','outdoor'])[1 + g % 5], round((5 + random() * 400)::numeric, 2), 1000 FROM generate_series(1, 200) g;
INSERT INTO coupons VALUES ('SPRING10', 0.10, '2030-05-31'), ('WELCOME5', 0.05, '2030-12-31'), ('VIP20', 0.20, '2030-01-31');
GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;
"""


class PgWorkload:
    """Seeded SQL sessions of a small web shop."""

    def __init__(self, rng: random.Random):
        self.rng, self.signups = rng, 0

    def web(self, n: int | None = None) -> str:
        rng, out = self.rng, []
        for _ in range(n or rng.randint(3, 14)):
            r = rng.random()
            cid = rng.randint(1, 500)
            if r < 0.3:
                out.append(f"SELECT id, name, price FROM products WHERE category = '{rng.choice(CATEGORIES)}' "
                           f"ORDER BY {rng.choice(['price', 'name', 'id DESC'])} LIMIT 20 OFFSET {20 * rng.randint(0, 4)};")
            elif r < 0.55:
                out.append(f"SELECT id, sku, name, price, stock FROM products WHERE id = {rng.randint(1, 200)};")
            elif r < 0.68:
                out.append(f"SELECT id, name FROM customers WHERE email = 'user{cid}@example.com';")
            elif r < 0.78:
                out.append(f"UPDATE customers SET last_login = now() WHERE id = {cid};")
            elif r < 0.88:
                out.append(f"SELECT o.id, o.status, o.total, o.created_at FROM orders o WHERE o.customer_id = {cid} "
                           "ORDER BY o.created_at DESC LIMIT 10;")
            elif r < 0.95:
                out.append(f"SELECT code, discount FROM coupons WHERE code = '{rng.choice(['SPRING10', 'WELCOME5', 'VIP20', 'FREESHIP'])}'"
                           " AND valid_until >= current_date;")
            else:
                out.append(f"SELECT count(*) FROM products WHERE name ILIKE '%{rng.choice(NOUN)}%';")
        return "\n".join(out) + "\n"

    def checkout(self, product_id: int | None = None) -> str:
        rng = self.rng
        lines = ["BEGIN;", f"INSERT INTO orders (customer_id, status) VALUES ({rng.randint(1, 500)}, 'pending') "
                 "RETURNING id AS order_id \\gset"]
        for _ in range(rng.randint(1, 4)):
            pid, qty = product_id or rng.randint(1, 200), rng.randint(1, 3)
            lines.append(f"INSERT INTO order_items (order_id, product_id, qty, price) SELECT :order_id, id, {qty}, price "
                         f"FROM products WHERE id = {pid};" if product_id is None else
                         f"INSERT INTO order_items (order_id, product_id, qty, price) VALUES (:order_id, {pid}, {qty}, 19.99);")
            lines.append(f"UPDATE products SET stock = stock - {qty} WHERE id = {pid};")
        lines.append("UPDATE orders SET total = (SELECT sum(qty * price) FROM order_items WHERE order_id = :order_id), "
                     "status = 'paid' WHERE id = :order_id;")
        lines.append("COMMIT;")
        return "\n".join(lines) + "\n"

    def signup(self, email: str | None = None) -> str:
        self.signups += 1
        email = email or f"new{self.signups}.{self.rng.randrange(10 ** 6)}@example.org"
        return (f"SELECT id FROM customers WHERE email = '{email}';\n"
                f"INSERT INTO customers (email, name) VALUES ('{email}', 'New Customer {self.signups}');\n")

    def report(self) -> str:
        return self.rng.choice([
            "SELECT date_trunc('hour', created_at) AS hour, count(*), sum(total) FROM orders GROUP BY 1 ORDER BY 1 DESC LIMIT 24;",
            "SELECT p.category, sum(oi.qty) AS units, sum(oi.qty * oi.price) AS revenue FROM order_items oi JOIN products p ON p.id = oi.product_id GROUP BY p.category ORDER BY revenue DESC;",
            "SELECT c.id, c.email, count(o.id) AS orders FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id ORDER BY orders DESC LIMIT 10;",
            "SELECT status, count(*) FROM orders WHERE created_at > now() - interval '1 day' GROUP BY status;",
            "SELECT id, sku, stock FROM products WHERE stock < 950 ORDER BY stock LIMIT 25;",
        ]) + "\n"


PG_LINE = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (\w+):  ")
PG_CONT = ("DETAIL", "HINT", "CONTEXT", "STATEMENT", "QUERY", "LOCATION")


def pg_template(line: str) -> str:
    return mask(PG_LINE.sub(lambda m: m.group(2) + ": ", line))


def pg_selector(templates: set):
    """ERROR/FATAL/PANIC/WARNING lines and novel LOG lines, with their continuation lines."""
    echo = re.compile(r"LOG:  (statement|connection received|connection authenticated|connection authorized|"
                      r"disconnection|duration):|LOG:  automatic (aggressive )?(vacuum|analyze) |"
                      r"LOG:  checkpoint (starting: time|complete)")  # the workload's echo and housekeeping

    def select(lines):
        kept, last = [], {}  # last: pid -> was that pid's last primary line kept
        prev_kept = False
        for line in lines:
            m = PG_LINE.match(line)
            if not m:  # tab-indented continuation of the previous line
                if prev_kept:
                    kept.append(line)
                continue
            pid, sev = m.groups()
            if sev in PG_CONT:
                prev_kept = last.get(pid, False)
            else:
                prev_kept = sev in ("WARNING", "ERROR", "FATAL", "PANIC") or (
                    not echo.search(line) and pg_template(line) not in templates)
                last[pid] = prev_kept
            if prev_kept:
                kept.append(line)
        return kept
    return select


def source_postgresql(args) -> Source:
    """PostgreSQL server log (stderr, default log_line_prefix '%m [%p] ', log_statement=all,
    log_connections/disconnections, checkpoints, autovacuum and lock waits logged).

    Normal: a private cluster (initdb in a temp dir, run as 'postgres' on a free port) serving a
    seeded shop workload: psql web sessions, checkouts in transactions, signups, reporting queries,
    pgbench runs, VACUUM/CHECKPOINT/reload housekeeping.
    Broken: a renamed table, duplicate keys, FK violations, buggy SQL, division by zero, statement
    timeouts, deadlocks, wrong passwords/unknown roles, an unknown database, too many clients,
    pg_terminate_backend, idle-in-transaction timeouts and a SIGKILLed backend (crash recovery).
    """
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bins:
        raise MissingProgram("PostgreSQL server not found -- install it with: apt-get install postgresql")
    bindir = bins[-1]
    need(f"{bindir}/postgres", "postgresql")
    psql = need("psql", "postgresql-client")
    pgbench = need(f"{bindir}/pgbench" if os.path.exists(f"{bindir}/pgbench") else "pgbench", "postgresql-contrib")
    rng = random.Random(f"{args.seed}-postgresql")
    wl = PgWorkload(rng)
    with tempfile.TemporaryDirectory(prefix="onb-pg-") as work, Services() as sv:
        pg = Pg(work, bindir, psql, pgbench)
        pg.start(sv)
        say(f"postgres on 127.0.0.1:{pg.port}; setup + normal workload...")
        log = FileLog(pg.log)
        pg.su(PG_SETUP_SU.format(**Pg.PASSWORDS), db="postgres")
        pg.session(PG_SETUP_APP)
        pg.su("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;")
        pg.bench(["-i", "-s", "1", "-q"])
        normal, n = [], 0
        while len(normal) < args.lines:
            n += 1
            r = rng.random()
            if r < 0.5:
                pg.session(wl.web())
            elif r < 0.7:
                pg.session(wl.web(rng.randint(1, 3)) + wl.checkout())
            elif r < 0.77:
                pg.session(wl.signup() + wl.web(2))
            elif r < 0.87:
                pg.session("".join(wl.report() for _ in range(rng.randint(1, 3))), user="reporting", app="metabase")
            elif r < 0.94:
                pg.bench(["-n", "-c", "2", "-j", "1", "-t", str(rng.randint(5, 20))] + rng.choice([[], ["-S"], ["-N"]]))
            else:
                pg.su(rng.choice(["VACUUM (ANALYZE) orders;", "CHECKPOINT;", "SELECT pg_reload_conf();",
                                  "ANALYZE order_items;", "SELECT count(*) FROM pg_stat_activity;"]))
            normal += log.read_new()
            if n % 100 == 0:
                say(f"  {n} sessions, {len(normal)} lines")
        time.sleep(0.5)
        normal += log.read_new()
        templates = {pg_template(x) for x in normal}
        col = Collector({"pg": log}, {"pg": pg_selector(templates)})

        with col.phase("undefined_table"):  # a migration renamed a table the app still uses
            pg.su("ALTER TABLE coupons RENAME TO coupons_2023;")
            for _ in range(12):
                pg.session(wl.web(2) + "SELECT code, discount FROM coupons WHERE code = 'SPRING10' AND valid_until >= current_date;\n")
            pg.su("ALTER TABLE coupons_2023 RENAME TO coupons;")
        with col.phase("unique_violation"):  # signup retries of existing customers
            for _ in range(12):
                pg.session(wl.signup(f"user{rng.randint(1, 500)}@example.com"))
        with col.phase("foreign_key_violation"):  # checkout of a deleted product
            for _ in range(8):
                pg.session(wl.checkout(product_id=rng.randint(5000, 9000)))
        with col.phase("syntax_error"):  # a buggy app release
            bad = ["SELECT id, name, price FROM products WHERE category = 'office' ORDER BY price LIMIT 20 OFFSET;",
                   "SELECT * FROM orders WHERE status IN ();",
                   "UPDATE customers SET last_login = now() WHERE id = ;",
                   "SELECT id, name FROM products WHERE name ILIKE '%lamp%' ORDER BY;",
                   "INSERT INTO customers (email, name) VALUES ('x@example.org' 'X');"]
            for _ in range(12):
                pg.session(wl.web(1) + rng.choice(bad) + "\n")
        with col.phase("division_by_zero"):  # refund-rate report over an empty window
            for _ in range(8):
                pg.session("SELECT 100.0 * count(*) FILTER (WHERE status = 'refunded') / count(*) AS refund_pct "
                           "FROM orders WHERE created_at > now() + interval '1 day';\n", user="reporting", app="metabase")
        with col.phase("statement_timeout"):  # a runaway report hits statement_timeout
            for _ in range(8):
                pg.session("SET statement_timeout = '300ms';\nSELECT c.id, count(*) FROM customers c CROSS JOIN "
                           "generate_series(1, 200000) g GROUP BY c.id ORDER BY 2 DESC LIMIT 10;\n",
                           user="reporting", app="metabase")
        with col.phase("deadlock"):  # two checkouts update the same products in opposite order
            for _ in range(4):
                a, b = rng.sample(range(1, 200), 2)
                tx = "BEGIN;\nUPDATE products SET stock = stock - 1 WHERE id = {};\nSELECT pg_sleep(0.4);\n" \
                     "UPDATE products SET stock = stock - 1 WHERE id = {};\nCOMMIT;\n"
                p1 = pg.session(tx.format(a, b), wait=False)
                p2 = pg.session(tx.format(b, a), wait=False)
                p1.wait(30), p2.wait(30)
        with col.phase("auth_failure"):  # stale credentials and an unknown role
            for _ in range(8):
                pg.session("SELECT 1;\n", password="app-secret-old")
            for user in ["deploy", "backup", "app_ro", "grafana"]:
                pg.session("SELECT 1;\n", user=user, password="changeme")
        with col.phase("unknown_database"):  # a client pointed at the wrong database
            for db in ["shop_staging", "shop_test", "shop"] * 3:
                pg.session("SELECT 1;\n", db=db if db != "shop" else "shopp")
        with col.phase("too_many_connections"):  # a connection leak exhausts max_connections
            for _ in range(3):
                procs = [pg.session("SELECT pg_sleep(1.5);\n", wait=False) for _ in range(22)]
                for p in procs:
                    p.wait(30)
        with col.phase("backend_terminated"):  # an operator kills long queries
            for _ in range(6):
                p = pg.session("SELECT pg_sleep(5);\n", app="shop-worker", wait=False)
                time.sleep(0.6)
                pg.su("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'shop-worker';")
                p.wait(30)
        with col.phase("idle_in_transaction_timeout"):  # a client stalls inside a transaction
            for _ in range(5):
                pg.session("SET idle_in_transaction_session_timeout = '300ms';\nBEGIN;\n"
                           f"SELECT stock FROM products WHERE id = {rng.randint(1, 200)} FOR UPDATE;\n"
                           "\\! sleep 1\nCOMMIT;\n", app="shop-worker")
        with col.phase("backend_killed", settle=2.0):  # SIGKILL of a backend forces crash recovery
            for _ in range(2):
                p = pg.session("SELECT pg_sleep(10);\n", app="shop-worker", wait=False)
                time.sleep(0.8)
                for pid in pg.backend_pids("shop-worker"):
                    os.kill(pid, signal.SIGKILL)
                p.wait(30)
                pg.wait_ready()
        version = version_of([f"{bindir}/postgres", "--version"])
    return Source("postgresql", "PostgreSQL", version, "PostgreSQL stderr log, log_line_prefix='%m [%p] '",
                  "private cluster; seeded shop workload via psql (web sessions, checkouts, signups, reports), "
                  "pgbench runs, VACUUM/ANALYZE/CHECKPOINT/reload; log_statement=all, connections, checkpoints, "
                  "autovacuum and lock waits logged",
                  "undefined_table, unique_violation, foreign_key_violation, syntax_error, division_by_zero, "
                  "statement_timeout, deadlock, auth_failure, unknown_database, too_many_connections, "
                  "backend_terminated (pg_terminate_backend), idle_in_transaction_timeout, backend_killed (SIGKILL, "
                  "crash recovery); kept: WARNING/ERROR/FATAL/PANIC and novel LOG lines with their DETAIL/STATEMENT/"
                  "CONTEXT/HINT lines", normal, col.errors["pg"])


# --------------------------------------------------------------------------
# Prometheus Alertmanager
# --------------------------------------------------------------------------

AM_CONF = """\
global:
  resolve_timeout: 1m
route:
  receiver: default
  group_by: [alertname, instance]
  group_wait: 2s
  group_interval: 5s
  repeat_interval: 40s
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
      continue: true
    - matchers: ['team="db"']
      receiver: db-oncall
    - matchers: ['team="web"']
      receiver: web-oncall
inhibit_rules:
  - source_matchers: ['severity="critical"']
    target_matchers: ['severity="warning"']
    equal: [alertname, instance]
receivers:
  - name: default
    webhook_configs: [{{url: "http://127.0.0.1:{hook}/hooks/default", send_resolved: true}}]
  - name: pager
    webhook_configs: [{{url: "http://127.0.0.1:{hook}/hooks/pager", send_resolved: true, max_alerts: 10}}]
  - name: db-oncall
    webhook_configs: [{{url: "http://127.0.0.1:{hook}/hooks/db", send_resolved: true}}]
  - name: web-oncall
    webhook_configs: [{{url: "http://127.0.0.1:{hook}/hooks/web", send_resolved: false}}]
"""

AM_RULES = [  # alertname, severity, team, instance prefix, count, port, summary
    ("HighCPUUsage", "warning", "web", "web", 8, 9100, "CPU usage above 90% for 5 minutes"),
    ("HighMemoryUsage", "warning", "web", "web", 8, 9100, "Memory usage above 85%"),
    ("HTTPErrorRateHigh", "critical", "web", "web", 8, 9113, "5xx rate above 5%"),
    ("HighRequestLatency", "warning", "web", "web", 8, 9113, "p99 latency above 1s"),
    ("DiskSpaceLow", "warning", "ops", "node", 12, 9100, "Filesystem has less than 10% space left"),
    ("InstanceDown", "critical", "ops", "node", 12, 9100, "Target has been down for more than 1 minute"),
    ("NodeClockSkew", "warning", "ops", "node", 12, 9100, "Clock skew detected"),
    ("CertificateExpiringSoon", "warning", "ops", "lb", 3, 9115, "TLS certificate expires in less than 14 days"),
    ("PostgresReplicationLag", "warning", "db", "db", 4, 9187, "Replication lag above 30s"),
    ("PostgresTooManyConnections", "critical", "db", "db", 4, 9187, "More than 90% of max_connections in use"),
    ("RedisMemoryHigh", "warning", "db", "cache", 3, 9121, "Redis memory usage above 80%"),
]


class Hook(http.server.BaseHTTPRequestHandler):
    """The webhook receiver; server.mode is ok / fail500 / reject400 / hang."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        mode = self.server.mode
        if mode == "hang":
            time.sleep(13)
        self.send_response({"fail500": 500, "reject400": 400}.get(mode, 200))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


class HookServer:
    def __init__(self, port: int):
        self.port, self.mode, self.srv = port, "ok", None

    def start(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Hook)
        self.srv.daemon_threads, self.srv.mode = True, self.mode
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def set_mode(self, mode):
        self.mode = self.srv.mode = mode

    def stop(self):
        if self.srv:
            self.srv.shutdown()
            self.srv.server_close()
            self.srv = None


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AlertFleet:
    """Two simulated Prometheus servers firing/resolving alerts against the Alertmanager API."""

    def __init__(self, rng: random.Random, port: int):
        self.rng, self.port, self.active, self.tick = rng, port, {}, 0
        self.silence = None

    def api(self, method: str, path: str, body=None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": "application/json", "User-Agent": "Prometheus/2.42.0"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def alert(self, key, labels, summary, start, end) -> dict:
        expr = f"{labels['alertname']}%7Binstance%3D%22{labels['instance']}%22%7D"
        return {"labels": labels, "annotations": {"summary": summary, "runbook_url":
                f"https://runbooks.example.test/{labels['alertname'].lower()}"}, "startsAt": iso(start),
                "endsAt": iso(end), "generatorURL": f"http://prometheus-{labels['cluster']}:9090/graph?g0.expr={expr}"}

    def step(self) -> None:
        rng, now = self.rng, time.time()
        self.tick += 1
        if len(self.active) < 28 and rng.random() < 0.22:
            name, sev, team, prefix, count, port, summary = rng.choice(AM_RULES)
            cluster = rng.choice(["eu-1", "us-1"])
            inst = f"{prefix}-{rng.randint(1, count):02d}.{cluster}:{port}"
            key = (name, inst)
            if key not in self.active:
                labels = {"alertname": name, "severity": sev, "team": team, "instance": inst, "cluster": cluster,
                          "job": {"web": "nginx", "node": "node", "lb": "blackbox", "db": "postgres", "cache": "redis"}[prefix]}
                self.active[key] = dict(labels=labels, summary=summary, start=now, end_tick=self.tick + rng.randint(20, 400),
                                        phase=rng.randint(0, 7))
        batches: dict[str, list] = {}
        for key, a in list(self.active.items()):
            if self.tick >= a["end_tick"]:
                batches.setdefault(a["labels"]["cluster"], []).append(self.alert(key, a["labels"], a["summary"], a["start"], now))
                del self.active[key]
            elif (self.tick + a["phase"]) % 8 == 0:
                batches.setdefault(a["labels"]["cluster"], []).append(
                    self.alert(key, a["labels"], a["summary"], a["start"], now + 240))
        for alerts in batches.values():
            self.api("POST", "/api/v2/alerts", alerts)
        if self.tick % 500 == 100 and self.silence is None:  # a maintenance window
            cluster = rng.choice(["eu-1", "us-1"])
            st, body = self.api("POST", "/api/v2/silences", {
                "matchers": [{"name": "instance", "value": f"db-0{rng.randint(1, 4)}.{cluster}:9187", "isRegex": False,
                              "isEqual": True}], "startsAt": iso(now), "endsAt": iso(now + 600),
                "createdBy": "ops-bot", "comment": f"planned maintenance CHG-{rng.randint(1000, 9999)}"})
            if st == 200:
                self.silence = json.loads(body)["silenceID"]
        if self.tick % 500 == 350 and self.silence:
            self.api("DELETE", f"/api/v2/silence/{self.silence}")
            self.silence = None
        if self.tick % 800 == 700:
            self.api("POST", "/-/reload")  # config management pushes the (unchanged) config
        if self.tick % 40 == 0:
            self.api("GET", "/api/v2/status")
        time.sleep(0.08)


def am_template(line: str) -> str:
    """logfmt template: level, component, msg and the set of keys."""
    keys = re.findall(r'(?:^| )([\w.]+)=', line)
    msg = re.search(r' msg=("(?:[^"\\]|\\.)*"|\S+)', line)
    level = re.search(r" level=(\w+)", line)
    return "|".join([level.group(1) if level else "", msg.group(1) if msg else "", ",".join(sorted(set(keys) - {"ts"}))])


def source_alertmanager(args) -> Source:
    """Prometheus Alertmanager (logfmt, --log.level=debug) receiving alerts from two simulated
    Prometheus servers (fire, re-send, resolve) and notifying local webhook receivers; silences are
    created/expired and the config is reloaded now and then.
    Broken: receiver down (connection refused), receiver answering 500, receiver answering 400,
    receiver hanging (notify timeouts), reloads of broken configs, invalid alert and silence payloads.
    """
    am = need("prometheus-alertmanager" if shutil.which("prometheus-alertmanager") else "alertmanager",
              "prometheus-alertmanager")
    rng = random.Random(f"{args.seed}-alertmanager")
    with tempfile.TemporaryDirectory(prefix="onb-am-") as work, Services() as sv:
        port, hook = free_port(), HookServer(free_port())
        conf = os.path.join(work, "alertmanager.yml")
        good = AM_CONF.format(hook=hook.port)
        with open(conf, "w") as f:
            f.write(good)
        logp = os.path.join(work, "alertmanager.log")
        hook.start()
        logf = open(logp, "ab")
        try:
            sv.start("alertmanager", [am, f"--config.file={conf}", f"--storage.path={work}/data",
                                      f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
                                      "--log.level=debug", "--data.maintenance-interval=30s"], stdout=logf, stderr=logf)
            wait_port(port)
            say(f"alertmanager on 127.0.0.1:{port}, webhook receiver on :{hook.port}; normal traffic...")
            log, fleet, normal = FileLog(logp), AlertFleet(rng, port), []
            while len(normal) < args.lines:
                fleet.step()
                if fleet.tick % 100 == 0:
                    normal += log.read_new()
                if fleet.tick % 1000 == 0:
                    say(f"  tick {fleet.tick}: {len(normal)} lines, {len(fleet.active)} active alerts")
            templates = {am_template(x) for x in normal}
            col = Collector({"am": log}, {"am": novel_or(templates, lambda x: re.search(r" level=(warn|error)", x),
                                                         am_template)})

            def run_for(seconds):
                end = time.time() + seconds
                while time.time() < end:
                    fleet.step()

            # each receiver breakage is followed by 15s of recovery inside the same phase, so late
            # retries/timeouts it caused are attributed to it
            with col.phase("receiver_unreachable"):
                hook.stop()
                run_for(25)
                hook.start()
                run_for(15)
            for kind, mode, secs in [("receiver_http_500", "fail500", 20), ("receiver_rejects_400", "reject400", 12),
                                     ("receiver_timeout", "hang", 28)]:
                with col.phase(kind):
                    hook.set_mode(mode)
                    run_for(secs)
                    hook.set_mode("ok")
                    run_for(15)
            with col.phase("bad_config_reload"):
                bad = [good.replace("receiver: db-oncall", "receiver: db-pager"),           # undefined receiver
                       good.replace("group_wait: 2s", "group_wait: 2 seconds"),             # bad duration
                       good.replace("  routes:\n", "  routes:\n   - matchers: [\n"),        # yaml syntax
                       good.replace("group_by: [alertname, instance]", "group_by: [alertname, instance, alertname]"),
                       good.replace('"http://127.0.0.1', '"htp//127.0.0.1', 1)]
                for text in bad * 2:
                    with open(conf, "w") as f:
                        f.write(text)
                    fleet.api("POST", "/-/reload")
                    run_for(0.5)
                with open(conf, "w") as f:
                    f.write(good)
                fleet.api("POST", "/-/reload")
            with col.phase("invalid_alerts"):
                now = time.time()
                bad_alerts = [[{"labels": {}}],
                              [{"labels": {"alertname": "DiskSpaceLow", "instance-id": "node-03"}}],
                              [{"labels": {"alertname": "HighCPUUsage", "instance": "web-01.eu-1:9100"},
                                "startsAt": iso(now), "endsAt": iso(now - 3600)}],
                              [{"labels": {"alertname": ""}}],
                              [{"labels": {"alertname": "InstanceDown", "1instance": "x"}}]]
                for i in range(15):
                    fleet.api("POST", "/api/v2/alerts", bad_alerts[i % len(bad_alerts)])
                    run_for(0.2)
            with col.phase("invalid_silences"):
                now = time.time()
                bad_sil = [{"matchers": [], "startsAt": iso(now), "endsAt": iso(now + 600), "createdBy": "ops-bot", "comment": "x"},
                           {"matchers": [{"name": "instance", "value": "db-01.eu-1:9187", "isRegex": False}],
                            "startsAt": iso(now), "endsAt": iso(now - 600), "createdBy": "ops-bot", "comment": "x"},
                           {"matchers": [{"name": "job", "value": "(", "isRegex": True}],
                            "startsAt": iso(now), "endsAt": iso(now + 600), "createdBy": "ops-bot", "comment": "x"}]
                for i in range(9):
                    fleet.api("POST", "/api/v2/silences", bad_sil[i % 3])
                    run_for(0.2)
        finally:
            hook.stop()
    return Source("alertmanager", "Prometheus Alertmanager", version_of([am, "--version"]),
                  "logfmt (go-kit log: ts=... caller=... level=... msg=...)",
                  "--log.level=debug; two simulated Prometheus servers post firing/resolved alerts (11 alert rules, "
                  "~50 instances) every few hundred ms; routing to 4 webhook receivers (local HTTP 200), inhibition, "
                  "silences created/expired, periodic config reloads, 30s maintenance",
                  "receiver_unreachable (webhook server stopped), receiver_http_500, receiver_rejects_400, "
                  "receiver_timeout (webhook hangs 13s), bad_config_reload (5 broken configs via /-/reload), "
                  "invalid_alerts, invalid_silences; kept: level=warn/error and templates unseen in the normal phase",
                  normal, col.errors["am"])


# --------------------------------------------------------------------------
# journald (JSON export) of a host running nginx + the API via syslog/stdout
# --------------------------------------------------------------------------

JOURNAL_FIELDS = "MESSAGE,PRIORITY,SYSLOG_IDENTIFIER,_PID,_TRANSPORT"
JOURNALD_CONF = "[Journal]\nStorage=volatile\nRateLimitIntervalSec=0\nReadKMsg=no\nForwardToSyslog=no\nForwardToWall=no\n"


class JournalReader:
    def __init__(self, journalctl: str):
        self.journalctl, self.cursor = journalctl, None

    def read_new(self) -> list[str]:
        argv = [self.journalctl, "-o", "json", "--no-pager", f"--output-fields={JOURNAL_FIELDS}"]
        if self.cursor:
            argv.append(f"--after-cursor={self.cursor}")
        out = subprocess.run(argv, capture_output=True, text=True).stdout
        lines = [x for x in out.splitlines() if x.strip()]
        if lines:
            self.cursor = json.loads(lines[-1])["__CURSOR"]
        return lines


def journal_stream(identifier: str) -> socket.socket:
    """A journald stdout stream (what systemd gives a service as stdout/stderr)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/systemd/journal/stdout")
    s.sendall(f"{identifier}\n\n6\n0\n0\n0\n0\n".encode())
    s.shutdown(socket.SHUT_RD)
    return s


def journal_template(line: str) -> str:
    e = json.loads(line)
    msg = e.get("MESSAGE", "")
    if isinstance(msg, list):  # non-UTF-8 message
        msg = "<binary>"
    return e.get("SYSLOG_IDENTIFIER", "") + " " + mask(re.sub(r"^\*\d+ ", "", str(msg)))


def journal_problem(line: str) -> bool:
    e = json.loads(line)
    if int(e.get("PRIORITY", 6)) <= 4:
        return True
    m = NGX_STATUS.search(str(e.get("MESSAGE", "")))
    return bool(m and int(m.group(1)) >= 400)


def journal_echo(line: str) -> bool:
    """Access-log style entries with status < 400 just echo the driving requests."""
    m = NGX_STATUS.search(str(json.loads(line).get("MESSAGE", "")))
    return bool(m and int(m.group(1)) < 400)


def journald_child(result_path: str, lines: int, seed: int) -> None:
    """Runs inside `unshare --mount`: private tmpfs journal dirs, journald, nginx + API, breakages."""
    journald = need("/lib/systemd/systemd-journald", "systemd")
    journalctl = need("journalctl", "systemd")
    nginx = need("/usr/sbin/nginx", "nginx")
    with tempfile.TemporaryDirectory(prefix="onb-journal-") as work:
        os.chmod(work, 0o755)  # nginx workers (www-data) must traverse it
        for d in ("/run/systemd/journal", "/run/log/journal", "/var/log/journal"):
            if os.path.isdir(d):
                subprocess.run(["mount", "-t", "tmpfs", "tmpfs", d], check=True)
        conf = os.path.join(work, "journald.conf")
        with open(conf, "w") as f:
            f.write(JOURNALD_CONF)
        if os.path.exists("/etc/systemd/journald.conf"):  # only inside this mount namespace
            subprocess.run(["mount", "--bind", conf, "/etc/systemd/journald.conf"], check=True)
        rng = random.Random(f"{seed}-journald")
        site_dir = os.path.join(work, "site")
        os.makedirs(site_dir)
        with Services() as sv:
            sv.start("journald", [journald], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if os.path.exists("/run/systemd/journal/stdout") and os.path.exists("/run/systemd/journal/dev-log"):
                    break
                time.sleep(0.1)
            time.sleep(0.5)
            sock = "unix:/run/systemd/journal/dev-log"
            site = NginxSite(sv, site_dir, rng, nginx, "off", f"syslog:server={sock},tag=nginx,nohostname",
                             stderr_for=journal_stream, default_error_log=f"{site_dir}/logs/default-error.log")
            site.start()
            say(f"journald + nginx on 127.0.0.1:{site.port} (syslog) + API on :{site.api_port} (stdout stream)...")
            reader = JournalReader(journalctl)
            normal = site.normal_phase({"journal": reader}, lines)["journal"]
            templates = {journal_template(x) for x in normal}
            col = Collector({"journal": reader},
                            {"journal": novel_or(templates, journal_problem, journal_template, journal_echo)})
            site.break_all(col, n=10)  # journal entries are big; fewer requests per breakage
    with open(result_path, "w") as f:
        json.dump({"normal": normal, "errors": col.errors["journal"]}, f)


def source_journald(args) -> Source:
    """systemd-journald JSON export (journalctl -o json) of a small host: nginx logging access and
    error (info) lines to journald via syslog, the python API upstream's stderr and nginx's stderr
    attached as journald stdout streams, plus journald's own messages. journald runs by hand in a
    private mount namespace (tmpfs over the journal dirs), so the host's journal is never touched.
    Broken: the same breakages as the nginx sources (a fresh seed, so different traffic).
    """
    need("/lib/systemd/systemd-journald", "systemd")
    need("journalctl", "systemd")
    need("/usr/sbin/nginx", "nginx")
    unshare = need("unshare", "util-linux")
    with tempfile.TemporaryDirectory(prefix="onb-jres-") as tmp:
        res = os.path.join(tmp, "result.json")
        subprocess.run([unshare, "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                        "--_journald-child", res, "--lines", str(args.lines), "--seed", str(args.seed)],
                       check=True, timeout=1800)
        with open(res) as f:
            data = json.load(f)
    version = version_of([need("journalctl", "systemd"), "--version"])
    return Source("journald", "systemd-journald", version,
                  f"journald JSON export (journalctl -o json --output-fields={JOURNAL_FIELDS})",
                  "nginx error log at info level via syslog (/run/systemd/journal/dev-log, tag nginx; access log "
                  "off) + python API upstream's request log and tracebacks (stdout stream 'shop-api') + nginx "
                  "stderr + journald's own messages; same seeded site traffic model as nginx_access",
                  NGINX_HOW_ERRORS + " (kept: PRIORITY<=4, access entries with status >= 400, templates unseen in "
                  "the normal phase)", data["normal"], [tuple(x) for x in data["errors"]])


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------

GENERATORS = {"nginx_access": source_nginx_access, "nginx_error": source_nginx_error,
              "postgresql": source_postgresql, "alertmanager": source_alertmanager, "journald": source_journald}


def write_atomic(path: str, text: str) -> None:
    """Readers never see a half-written file."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_source(out: str, src: Source, max_lines: int) -> dict:
    d = os.path.join(out, src.name)
    os.makedirs(d, exist_ok=True)
    normal = src.normal[:max_lines]
    write_atomic(os.path.join(d, "normal.log"), "".join(x + "\n" for x in normal))
    write_atomic(os.path.join(d, "errors.log"), "".join(x + "\n" for x, _ in src.errors))
    write_atomic(os.path.join(d, "errors.jsonl"), "".join(json.dumps({"line": x, "kind": k}) + "\n"
                                                          for x, k in src.errors))
    kinds: dict[str, int] = {}
    for _, k in src.errors:
        kinds[k] = kinds.get(k, 0) + 1
    return {"name": src.name, "program": src.program, "version": src.version, "format_hint": src.format_hint,
            "normal_lines": len(normal), "error_lines": len(src.errors), "error_kinds": kinds,
            "how_normal": src.how_normal, "how_errors": src.how_errors,
            "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def generate(ap: argparse.ArgumentParser, args, generators: dict, sources: list[str], doc: str) -> int:
    """Make each of ``args.sources`` with its generator and write the corpus and its manifest to
    ``args.out`` (a source that fails or lacks its program is skipped and reported; the others go on).
    ``doc``: the generating script's docstring, whose separation rule goes into the manifest."""
    wanted = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = set(wanted) - set(generators)
    if unknown:
        ap.error(f"unknown sources: {', '.join(sorted(unknown))}")
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    entries = {}
    if os.path.exists(manifest_path):  # regenerating a subset keeps the other sources' entries
        with open(manifest_path) as f:
            entries = {e["name"]: e for e in json.load(f).get("sources", [])}
    t0, failed = time.time(), []
    for name in wanted:
        say(f"== {name}")
        t1 = time.time()
        try:
            src = generators[name](args)
        except MissingProgram as e:
            say(f"SKIPPING {name}: {e}")
            failed.append(name)
            continue
        except Exception as e:  # keep going with the other sources
            say(f"FAILED {name}: {type(e).__name__}: {e}")
            failed.append(name)
            continue
        entries[name] = write_source(args.out, src, args.lines)
        say(f"   {name}: {entries[name]['normal_lines']} normal, {entries[name]['error_lines']} error lines "
            f"{entries[name]['error_kinds']} ({time.time() - t1:.0f}s)")
    manifest = {"generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "command": "python " + shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
                "seed": args.seed, "lines_per_source": args.lines,
                "error_rule": doc.split("How normal and error lines are separated")[1].split("\n\nUsage")[0].strip(),
                "sources": [entries[n] for n in sources if n in entries]}
    write_atomic(manifest_path, json.dumps(manifest, indent=2) + "\n")
    size = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(args.out) for fn in fns)
    say(f"done in {time.time() - t0:.0f}s; corpus {size / 1e6:.2f} MB in {args.out}"
        + (f"; failed/skipped: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def arguments(doc: str, corpus: str, sources: list[str], seed: int) -> argparse.ArgumentParser:
    """The options every corpus generator takes: where (``data/<corpus>`` by default), which sources,
    how many normal lines each, the seed."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", corpus))
    ap.add_argument("--sources", default=",".join(sources), help="comma-separated subset of " + ",".join(sources))
    ap.add_argument("--lines", type=int, default=6000, help=f"normal lines per source (max {HARD_CAP})")
    ap.add_argument("--seed", type=int, default=seed)
    return ap


def main() -> int:
    ap = arguments(__doc__, "onboarding", SOURCES, seed=1337)
    ap.add_argument("--_journald-child", dest="journald_child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.lines = min(args.lines, HARD_CAP)
    if args.journald_child:
        journald_child(args.journald_child, args.lines, args.seed)
        return 0
    if os.geteuid() != 0:
        print("run as root (nginx master, postgres via setuid, journald namespace)", file=sys.stderr)
        return 2
    return generate(ap, args, GENERATORS, SOURCES, __doc__)


if __name__ == "__main__":
    sys.exit(main())
