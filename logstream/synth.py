"""Synthetic multi-service logs with labeled injected anomalies.

Several simulated services write interleaved logs, each instance its own stream (``hdfs-1``,
``web-2``, ``sshd-1``, ``zookeeper-1``...). Line formats follow the Loghub samples in
``sample_logs/loghub`` (HDFS, OpenSSH, Apache, Zookeeper). Normal behaviour has structure worth
learning: message templates with realistic variable fields, *flows* whose steps always come in the
same order (an HDFS block is allocated, received, acknowledged, stored, then maybe served; a web
request is opened, routed, processed, closed; an ssh login opens and later closes a session; a
ZooKeeper client connects, establishes a session, later closes it), and values in typical ranges.

Anomalies replace a flow now and then, so that labeled lines are ``anomaly_rate`` of all lines:

* ``unseen_message``: a message normal logs never show (OOM, kernel panic, disk failure, a stack
  trace line);
* ``error_burst``: a run of 4-8 of the service's known error lines, back to back in one stream;
* ``out_of_range_value``: a normal flow with one field of one line far outside its normal range
  (a 40,000 ms latency, a negative size, port 99999);
* ``broken_sequence``: a flow with a required step missing (the step after the gap is labeled), or
  a late step of a flow that never started (a close without an open, a block served that was never
  received; that line is labeled).

Everything is deterministic given the seed: iterating the same ``SyntheticLogs`` twice, or two
equal ones, yields the same entries.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import logging
import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from .config import KafkaSettings

PRODUCER_STOP_TIMEOUT_S = 10.0  # at most this long to flush and close the Kafka producer when stopping

ANOMALY_KINDS = ("unseen_message", "error_burst", "out_of_range_value", "broken_sequence")
DEFAULT_SERVICES: Mapping[str, int] = {"hdfs": 2, "web": 2, "sshd": 2, "zookeeper": 1}
DEFAULT_START = datetime(2024, 3, 4, 9, 0, 0, tzinfo=UTC)
MAX_ANOMALY_RATE = 0.5
ERROR_BURST_LINES = (4, 8)  # longer than any run of errors normal logs show
LABELS_FILE = "labels.jsonl"

# English names, whatever the process locale (strftime's %a and %b follow LC_TIME)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class SynthEntry:
    stream: str  # the service instance, e.g. "web-1"
    service: str  # e.g. "web"
    timestamp: datetime
    line: str
    label: str | None = None  # one of ANOMALY_KINDS, or None for a normal line
    anomaly_id: int | None = None  # shared by the lines of one injected anomaly


# --- flows: what a service does ------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One line of a flow, ``at_s`` seconds after the flow starts; the message is ``template`` filled
    with ``fields``, so that one field can be swapped for an abnormal value."""

    at_s: float
    name: str  # the step's role in its flow: "opened", "stored", ...
    level: str
    template: str
    fields: dict = field(default_factory=dict)
    origin: str = ""  # where the line comes from inside the service: a thread, a process
    bare: bool = False  # a continuation line (stack trace) written without the usual prefix

    @property
    def message(self) -> str:
        return self.template.format(**self.fields)


def step(at_s: float, name: str, template: str, level: str = "INFO", origin: str = "", bare: bool = False,
         **fields) -> Step:
    return Step(at_s, name, level, template, fields, origin, bare)


@dataclass(frozen=True)
class Flow:
    steps: list[Step]  # in time order
    # required middle steps whose absence breaks the sequence; the step after each must name the
    # flow (its block, request, pid or client), since that step is the one labeled out of order
    skippable: tuple[str, ...] = ()
    orphanable: tuple[str, ...] = ()  # steps that never open a flow: alone they are out of order


# Fields an out_of_range_value anomaly may replace, with their abnormal values. Every service keeps
# such a field in its own whitespace-separated token, within the normal range noted here.
ABNORMAL_VALUES: dict[str, Callable[[Random], int]] = {
    # normal: 1 KiB..64 MiB
    "size": lambda r: r.choice((-r.randint(1, 1 << 26), r.randint(1 << 40, 1 << 42))),
    "bytes": lambda r: -r.randint(1, 500_000),  # normal: 0..400,000
    "ms": lambda r: r.randint(40_000, 120_000),  # normal: 1..3,000
    "port": lambda r: r.randint(65_536, 99_999),  # normal: 1024..65535
    "timeout": lambda r: r.choice((0, r.randint(3_600_000, 86_400_000))),  # normal: 10,000..30,000
}


def _abnormal_fields(s: Step) -> list[str]:
    return [name for name in s.fields if name in ABNORMAL_VALUES]


def _public_ip(rng: Random) -> str:
    first = rng.choice([n for n in range(1, 224) if n not in (10, 127, 169, 172, 192)])
    return f"{first}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


class Service:
    """One simulated service instance: its line format, its normal flows, its known errors and the
    messages it never writes when healthy."""

    name: str = ""
    flows_per_s: float = 1.0

    def __init__(self, instance: int, rng: Random, start: datetime):
        self.instance = instance
        self.rng = rng
        self.start = start

    def next_flow_in(self) -> float:
        return self.rng.expovariate(self.flows_per_s)

    def flow(self) -> Flow:
        raise NotImplementedError

    def error(self) -> Step:
        """One of the service's known error lines (rare and isolated in normal logs)."""
        raise NotImplementedError

    def unseen(self) -> Step:
        """A message this service never writes when healthy."""
        raise NotImplementedError

    def render(self, ts: datetime, s: Step) -> str:
        raise NotImplementedError


class HdfsDataNode(Service):
    """HDFS datanode plus namenode lines, as in Loghub's HDFS log (``081109 203615 148 INFO ...``)."""

    name = "hdfs"
    flows_per_s = 0.5
    BLOCK_SIZE = 64 << 20

    def __init__(self, instance, rng, start):
        super().__init__(instance, rng, start)
        self.ip = f"10.251.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        self.peers = [f"10.{rng.choice((250, 251))}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
                      for _ in range(24)]
        self.job = f"{start:%Y%m%d%H%M}_{rng.randint(1, 40):04d}"
        self.task = 0
        self.thread = rng.randint(100, 900)  # DataXceiver threads are numbered in creation order

    def _block(self) -> str:
        return f"blk_{self.rng.randint(-(1 << 63), (1 << 63) - 1)}"

    def _xceiver(self) -> str:
        self.thread += self.rng.randint(1, 5)
        return str(self.thread)

    def _namesystem(self) -> str:
        return str(self.rng.randint(26, 35))

    def flow(self) -> Flow:
        r = self.rng.random()
        if r < 0.88:
            return self._write_block()
        if r < 0.97:
            return Flow([step(0.0, "verified", "dfs.DataBlockScanner: Verification succeeded for {blk}",
                              origin=str(self.rng.randint(13, 19)), blk=self._block())])
        return Flow([self.error()])

    def _write_block(self) -> Flow:
        rng = self.rng
        blk = self._block()
        size = self.BLOCK_SIZE if rng.random() < 0.8 else rng.randint(1024, self.BLOCK_SIZE - 1)
        replicas = rng.choice((1, 2, 3, 3, 3))
        pipeline = [self.ip] + rng.sample(self.peers, replicas - 1)
        sources = [rng.choice(self.peers)] + pipeline[:-1]  # the writer, then each node forwards
        self.task += 1
        path = f"/user/root/rand/_temporary/_task_{self.job}_m_{self.task:06d}_0/part-{self.task:05d}."
        steps = [step(0.0, "allocate", "dfs.FSNamesystem: BLOCK* NameSystem.allocateBlock: {path} {blk}",
                      origin=self._namesystem(), path=path, blk=blk)]
        t = rng.uniform(0.01, 0.3)
        for src, dest in zip(sources, pipeline):
            t += rng.uniform(0.001, 0.05)
            steps.append(step(t, "receiving", "dfs.DataNode$DataXceiver: Receiving block {blk} src: "
                              "/{src}:{src_port} dest: /{dest}:50010", origin=self._xceiver(), blk=blk,
                              src=src, src_port=rng.randint(32768, 60999), dest=dest))
        t += size / rng.uniform(20e6, 80e6)  # the transfer itself
        for k in reversed(range(replicas)):
            t += rng.uniform(0.001, 0.05)
            steps.append(step(t, "responder", "dfs.DataNode$PacketResponder: PacketResponder {k} for block "
                              "{blk} terminating", origin=self._xceiver(), k=k, blk=blk))
        for src in sources:
            t += rng.uniform(0.001, 0.05)
            steps.append(step(t, "received", "dfs.DataNode$PacketResponder: Received block {blk} of size "
                              "{size} from /{src}", origin=self._xceiver(), blk=blk, size=size, src=src))
        for node in pipeline:
            t += rng.uniform(0.01, 0.5)
            steps.append(step(t, "stored", "dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap "
                              "updated: {node}:50010 is added to {blk} size {size}",
                              origin=self._namesystem(), node=node, blk=blk, size=size))
        for _ in range(rng.choices((0, 1, 2), (5, 3, 2))[0]):
            t += rng.uniform(1, 120)
            node, reader = rng.choice(pipeline), rng.choice(self.peers)
            if rng.random() < 0.05:
                steps.append(step(t, "serve_failed", "dfs.DataNode$DataXceiver: {node}:50010:Got exception "
                                  "while serving {blk} to /{reader}:", "WARN", self._xceiver(),
                                  node=node, blk=blk, reader=reader))
            else:
                steps.append(step(t, "served", "dfs.DataNode$DataXceiver: {node}:50010 Served block {blk} to "
                                  "/{reader}", origin=self._xceiver(), node=node, blk=blk, reader=reader))
        if rng.random() < 0.2:
            t += rng.uniform(30, 300)
            node = rng.choice(pipeline)
            steps.append(step(t, "invalidate", "dfs.FSNamesystem: BLOCK* NameSystem.delete: {blk} is added "
                              "to invalidSet of {node}:50010", origin=self._namesystem(), blk=blk, node=node))
            t += rng.uniform(0.5, 3)
            steps.append(step(t, "deleting", "dfs.FSDataset: Deleting block {blk} file "
                              "/mnt/hadoop/dfs/data/current/subdir{subdir}/{blk}",
                              origin=str(rng.randint(13, 19)), blk=blk, subdir=rng.randint(0, 63)))
        return Flow(steps, skippable=("receiving", "responder", "received"), orphanable=("served", "stored"))

    def error(self) -> Step:
        if self.rng.random() < 0.5:
            return step(0.0, "error", "dfs.DataNode$DataXceiver: {ip}:50010:DataXceiver: "
                        "java.io.IOException: Block {blk} is valid, and cannot be written to.", "ERROR",
                        self._xceiver(),
                        ip=self.ip, blk=self._block())
        return step(0.0, "error", "dfs.DataNode: {ip}:50010:Failed to transfer {blk} to {peer}:50010 got "
                    "java.net.SocketException: Connection reset", "ERROR", self._xceiver(),
                    ip=self.ip, blk=self._block(), peer=self.rng.choice(self.peers))

    def unseen(self) -> Step:
        rng = self.rng
        return rng.choice((
            lambda: step(0.0, "oom", "dfs.DataNode: java.lang.OutOfMemoryError: Java heap space", "FATAL",
                         self._xceiver()),
            lambda: step(0.0, "disk", "dfs.FSDataset: Disk failure on /mnt/hadoop/dfs/data{disk}: "
                         "java.io.IOException: Input/output error", "ERROR", self._xceiver(),
                         disk=rng.randint(1, 4)),
            lambda: step(0.0, "trace", "Caused by: java.io.IOException: No space left on device", bare=True),
            lambda: step(0.0, "trace", 'Exception in thread "DataXceiver-{n}" java.lang.StackOverflowError',
                         bare=True, n=rng.randint(100, 9999)),
            lambda: step(0.0, "checksum", "dfs.DataBlockScanner: Reporting bad block {blk} to namenode: "
                         "checksum mismatch at offset {offset}", "ERROR", str(rng.randint(13, 19)),
                         blk=self._block(), offset=rng.randint(0, self.BLOCK_SIZE)),
        ))()

    def render(self, ts, s):
        if s.bare:
            return s.message
        return f"{ts:%y%m%d %H%M%S} {s.origin} {s.level} {s.message}"


class Sshd(Service):
    """OpenSSH in syslog, as in Loghub's OpenSSH log (``Dec 10 06:55:46 LabSZ sshd[24200]: ...``):
    logins from the office, and the internet's steady brute forcing."""

    name = "sshd"
    flows_per_s = 1.0
    USERS = ("alice", "bob", "deploy", "backup", "git", "ubuntu")
    INVALID_USERS = ("admin", "test", "oracle", "support", "guest", "pi", "user", "ftpuser", "postgres",
                     "webmaster")
    ISPS = ("static.hinet.net", "dynamic.163data.com.cn", "rev.poneytelecom.eu", "customer.uninet-ide.com.mx")

    def __init__(self, instance, rng, start):
        super().__init__(instance, rng, start)
        self.host = f"bastion{instance}"
        self.pid = rng.randint(2000, 200_000)
        self.office = [f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
                       for _ in range(8)]
        self.attackers = []
        for _ in range(40):
            ip = _public_ip(rng)
            rdns = f"{ip.replace('.', '-')}.{rng.choice(self.ISPS)}" if rng.random() < 0.3 else None
            self.attackers.append((ip, rdns))

    def _sshd(self) -> str:
        self.pid += self.rng.randint(1, 60)
        return f"sshd[{self.pid}]"

    def flow(self) -> Flow:
        builders = (self._login, self._invalid_user, self._root_guess, self._no_identification)
        return self.rng.choices(builders, (3, 3, 4, 0.5))[0]()

    def _login(self) -> Flow:
        rng = self.rng
        proc, user = self._sshd(), rng.choice(self.USERS)
        ip, port = rng.choice(self.office), rng.randint(1024, 65535)
        t = rng.uniform(0.01, 0.05)
        end = t + min(900.0, rng.lognormvariate(math.log(60), 1.0))
        return Flow([
            step(0.0, "accepted", "Accepted {method} for {user} from {ip} port {port} ssh2", origin=proc,
                 method=rng.choice(("password", "publickey")), user=user, ip=ip, port=port),
            step(t, "session_opened", "pam_unix(sshd:session): session opened for user {user} by (uid=0)",
                 origin=proc, user=user),
            step(end, "received_disconnect", "Received disconnect from {ip} port {port}:11: disconnected by "
                 "user", origin=proc, ip=ip, port=port),
            step(end + 0.001, "disconnected", "Disconnected from user {user} {ip} port {port}", origin=proc,
                 user=user, ip=ip, port=port),
            step(end + 0.002, "session_closed", "pam_unix(sshd:session): session closed for user {user}",
                 origin=proc, user=user),
        ], skippable=("session_opened", "received_disconnect", "disconnected"),
            orphanable=("session_closed", "disconnected"))

    def _invalid_user(self) -> Flow:
        rng = self.rng
        proc, user = self._sshd(), rng.choice(self.INVALID_USERS)
        ip, rdns = rng.choice(self.attackers)
        steps = []
        if rdns:
            steps.append(step(0.0, "reverse_mapping", "reverse mapping checking getaddrinfo for {rdns} "
                              "[{ip}] failed - POSSIBLE BREAK-IN ATTEMPT!", origin=proc, rdns=rdns, ip=ip))
        t = 0.001
        steps += [
            step(t, "invalid_user", "Invalid user {user} from {ip}", origin=proc, user=user, ip=ip),
            step(t + 0.001, "userauth_request", "input_userauth_request: invalid user {user} [preauth]",
                 origin=proc, user=user),
            step(t + 0.002, "check_pass", "pam_unix(sshd:auth): check pass; user unknown", origin=proc),
            step(t + 0.003, "auth_failure", "pam_unix(sshd:auth): authentication failure; logname= uid=0 "
                 "euid=0 tty=ssh ruser= rhost={ip}", origin=proc, ip=ip),
        ]
        t += rng.uniform(1.5, 3.0)
        steps.append(step(t, "failed_password", "Failed password for invalid user {user} from {ip} port "
                          "{port} ssh2", origin=proc, user=user, ip=ip, port=rng.randint(1024, 65535)))
        t += rng.uniform(0.05, 0.5)
        if rng.random() < 0.5:
            steps.append(step(t, "connection_closed", "Connection closed by {ip} [preauth]", origin=proc,
                              ip=ip))
        else:
            steps.append(self._bye(t, proc, ip))
        return Flow(steps, skippable=("userauth_request", "check_pass"), orphanable=("failed_password",))

    def _root_guess(self) -> Flow:
        rng = self.rng
        proc, port = self._sshd(), rng.randint(1024, 65535)
        ip, _ = rng.choice(self.attackers)
        steps, t = [], 0.0
        for _ in range(rng.randint(1, 3)):
            steps.append(step(t, "auth_failure_root", "pam_unix(sshd:auth): authentication failure; "
                              "logname= uid=0 euid=0 tty=ssh ruser= rhost={ip} user=root", origin=proc,
                              ip=ip))
            t += rng.uniform(1.5, 3.0)
            steps.append(step(t, "failed_root", "Failed password for root from {ip} port {port} ssh2",
                              origin=proc, ip=ip, port=port))
            t += rng.uniform(0.2, 1.0)
        if rng.random() < 0.08:
            steps.append(replace(self._auth_exhausted(proc, ip), at_s=t))
        else:
            steps.append(self._bye(t, proc, ip))
        return Flow(steps)

    def _no_identification(self) -> Flow:
        ip, _ = self.rng.choice(self.attackers)
        return Flow([step(0.0, "no_identification", "Did not receive identification string from {ip}",
                          origin=self._sshd(), ip=ip)])

    @staticmethod
    def _bye(at_s: float, proc: str, ip: str) -> Step:
        return step(at_s, "bye", "Received disconnect from {ip}: 11: Bye Bye [preauth]", origin=proc, ip=ip)

    @staticmethod
    def _auth_exhausted(proc: str, ip: str) -> Step:
        return step(0.0, "error", "error: Received disconnect from {ip}: 14: No more user authentication "
                    "methods available. [preauth]", "ERROR", proc, ip=ip)

    def error(self) -> Step:
        return self._auth_exhausted(self._sshd(), self.rng.choice(self.attackers)[0])

    def unseen(self) -> Step:
        rng = self.rng
        return rng.choice((
            lambda: step(0.0, "oom", "Out of memory: Kill process {pid} (sshd) score {score} or sacrifice "
                         "child", origin="kernel", pid=self.pid, score=rng.randint(600, 999)),
            lambda: step(0.0, "panic", "Kernel panic - not syncing: Fatal exception in interrupt",
                         origin="kernel"),
            lambda: step(0.0, "disk", "EXT4-fs error (device sda{part}): ext4_journal_check_start:56: "
                         "Detected aborted journal", origin="kernel", part=rng.randint(1, 3)),
            lambda: step(0.0, "segfault", "sshd[{pid}]: segfault at 0 ip 00007f3a2b1c4d5e sp "
                         "00007ffd9e8b7c60 error 4 in libcrypto.so.1.1[7f3a2b000000+2b0000]", origin="kernel",
                         pid=self.pid),
            lambda: step(0.0, "fatal", "fatal: Write failed: No space left on device [preauth]",
                         origin=self._sshd()),
        ))()

    def render(self, ts, s):
        if s.bare:
            return s.message
        return f"{_MONTHS[ts.month - 1]} {ts.day:2d} {ts:%H:%M:%S} {self.host} {s.origin}: {s.message}"


class WebServer(Service):
    """An Apache-like web server in the Apache error-log format of Loghub's Apache log
    (``[Sun Dec 04 04:47:44 2005] [notice] ...``), logging each request's life at info level."""

    name = "web"
    flows_per_s = 2.0
    ROUTES = (("GET", "/", 5), ("GET", "/index.html", 3), ("POST", "/login", 2),
              ("GET", "/api/orders/{n}", 6), ("POST", "/api/orders", 2), ("GET", "/api/users/{n}", 4),
              ("GET", "/api/cart", 3),
              ("GET", "/static/css/site.css", 3), ("GET", "/static/js/app.js", 3),
              ("GET", "/static/img/logo.png", 2), ("GET", "/favicon.ico", 2))
    SLOTS = range(6, 11)

    def __init__(self, instance, rng, start):
        super().__init__(instance, rng, start)
        self.clients = [f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(20)]
        self.clients += [_public_ip(rng) for _ in range(40)]
        self.next_child = rng.randint(2000, 30000)
        self.children = {slot: self._spawn() for slot in self.SLOTS}
        self.requests = rng.getrandbits(32)

    def _spawn(self) -> int:
        self.next_child += self.rng.randint(1, 8)
        return self.next_child

    def _request_id(self) -> str:
        # an odd multiplier permutes 32-bit integers: ids look random and never repeat
        self.requests += 1
        return f"{(self.requests * 0x9E3779B1) & 0xFFFFFFFF:08x}"

    def flow(self) -> Flow:
        r = self.rng.random()
        if r < 0.97:
            return self._request()
        if r < 0.99:
            return self._child_recycled()
        return Flow([self.error()])

    def _request(self) -> Flow:
        rng = self.rng
        method, path, _ = rng.choices(self.ROUTES, [w for *_, w in self.ROUTES])[0]
        path = path.format(n=rng.randint(1, 99_999))
        slot = rng.choice(self.SLOTS)
        common = {"ip": rng.choice(self.clients), "rid": self._request_id()}
        steps = [
            step(0.0, "opened", "[client {ip}] request {rid} opened: {method} {path} HTTP/1.1", "info",
                 method=method, path=path, **common),
            step(rng.uniform(0.0001, 0.002), "routed", "[client {ip}] request {rid} routed to worker ajp13w, "
                 "child {child} slot {slot}", "info", child=self.children[slot], slot=slot, **common),
        ]
        ms = min(3000, max(1, round(rng.lognormvariate(math.log(40), 1.0))))
        missing = path.startswith(("/static/", "/favicon")) and rng.random() < 0.05
        if missing:
            steps.append(step(steps[-1].at_s + 0.0005, "not_found", "[client {ip}] request {rid}: File "
                              "does not exist: /var/www/html{path}", "error", path=path, **common))
            status, size = 404, rng.randint(200, 320)
        elif method == "POST" and path == "/login":
            status, size = 302, rng.randint(0, 400)
        elif path.startswith("/static/") and rng.random() < 0.3:
            status, size = 304, 0
        else:
            status, size = 200, rng.randint(200, 400_000)
        done = steps[-1].at_s + ms / 1000
        steps += [
            step(done, "processed", "[client {ip}] request {rid} processed: status {status}, {bytes} bytes "
                 "in {ms} ms", "info", status=status, bytes=size, ms=ms, **common),
            step(done + rng.uniform(0.0001, 0.001), "closed", "[client {ip}] request {rid} closed", "info",
                 **common),
        ]
        return Flow(steps, skippable=("routed", "processed"), orphanable=("processed", "closed"))

    def _child_recycled(self) -> Flow:
        rng = self.rng
        slot = rng.choice(self.SLOTS)
        self.children[slot] = child = self._spawn()
        steps = [
            step(0.0, "found_child", "jk2_init() Found child {child} in scoreboard slot {slot}", "notice",
                 child=child, slot=slot),
            step(rng.uniform(0.1, 1.0), "worker_env",
                 "workerEnv.init() ok /etc/httpd/conf/workers2.properties", "notice"),
        ]
        if rng.random() < 0.05:
            steps.append(replace(self._worker_env_error(), at_s=steps[-1].at_s + rng.uniform(0.001, 0.1)))
        return Flow(steps)

    def _worker_env_error(self) -> Step:
        return step(0.0, "error", "mod_jk child workerEnv in error state {state}", "error",
                    state=self.rng.choice((6, 7)))

    def error(self) -> Step:
        if self.rng.random() < 0.6:
            return self._worker_env_error()
        return step(0.0, "error", "[client {ip}] Directory index forbidden by rule: /var/www/html/", "error",
                    ip=self.rng.choice(self.clients))

    def unseen(self) -> Step:
        rng = self.rng
        child = rng.choice(list(self.children.values()))
        return rng.choice((
            lambda: step(0.0, "disk", "(28)No space left on device: mod_jk: could not create jk_log_lock",
                         "crit"),
            lambda: step(0.0, "mutex", "(43)Identifier removed: couldn't grab the accept mutex", "emerg"),
            lambda: step(0.0, "exit", "Child {child} returned a Fatal error... Apache is exiting!", "alert",
                         child=child),
            lambda: step(0.0, "segfault", "child pid {child} exit signal Segmentation fault (11)", "notice",
                         child=child),
            lambda: step(0.0, "oom", "[client {ip}] PHP Fatal error: Allowed memory size of 134217728 bytes "
                         "exhausted (tried to allocate {n} bytes) in /var/www/html/index.php on line {line}",
                         "error", ip=rng.choice(self.clients), n=rng.randint(1 << 12, 1 << 24),
                         line=rng.randint(10, 900)),
        ))()

    def render(self, ts, s):
        if s.bare:
            return s.message
        return (f"[{_DAYS[ts.weekday()]} {_MONTHS[ts.month - 1]} {ts:%d %H:%M:%S %Y}] "
                f"[{s.level}] {s.message}")


class ZooKeeper(Service):
    """A ZooKeeper server, as in Loghub's Zookeeper log (``2015-07-29 19:04:12,394 - INFO  [...] - ...``):
    client sessions, and the quorum's chatter between servers."""

    name = "zookeeper"
    flows_per_s = 1.5
    FACTORY = "NIOServerCxn.Factory:0.0.0.0/0.0.0.0:2181"

    def __init__(self, instance, rng, start):
        super().__init__(instance, rng, start)
        self.myid = instance
        self.ip = f"10.10.34.{10 + instance}"
        # a three-server ensemble; a fourth instance and beyond pretends the first two are its peers
        peer_ids = [j for j in (1, 2, 3) if j != instance][:2]
        self.peers = [(f"10.10.34.{10 + j}", rng.randint(10 ** 11, 10 ** 12)) for j in peer_ids]
        # clients take ephemeral ports in sequence, like Linux does: an address is never reused soon
        self.next_port = {f"10.10.34.{n}": rng.randint(32768, 40000) for n in rng.sample(range(11, 60), 20)}
        self.session_prefix = f"0x{self.myid:x}{rng.getrandbits(40):010x}"
        self.sessions = rng.randint(1, 100)

    def _client(self) -> str:
        ip = self.rng.choice(list(self.next_port))
        port = self.next_port[ip] = 32768 + (self.next_port[ip] - 32768 + self.rng.randint(1, 20)) % 28232
        return f"{ip}:{port}"

    def flow(self) -> Flow:
        r = self.rng.random()
        if r < 0.65:
            return self._session()
        if r < 0.98:
            return self._quorum_chatter()
        return Flow([self.error()])

    def _session(self) -> Flow:
        rng = self.rng
        client = self._client()
        self.sessions += 1
        sid = f"{self.session_prefix}{self.sessions:04x}"
        t1 = rng.uniform(0.001, 0.005)
        t2 = t1 + rng.uniform(0.002, 0.02)
        end = t2 + min(600.0, rng.lognormvariate(math.log(30), 1.0))
        steps = [
            step(0.0, "accepted", "Accepted socket connection from /{client}",
                 origin=f"{self.FACTORY}:NIOServerCnxnFactory@197", client=client),
            step(t1, "attempting", "Client attempting to establish new session at /{client}",
                 origin=f"{self.FACTORY}:ZooKeeperServer@839", client=client),
            step(t2, "established", "Established session {sid} with negotiated timeout {timeout} for client "
                 "/{client}", origin=f"CommitProcessor:{self.myid}:ZooKeeperServer@595", sid=sid,
                 timeout=rng.choice((10000,) * 8 + (20000, 30000)), client=client),
        ]
        if rng.random() < 0.3:
            steps.append(step(end - 0.001, "end_of_stream", "caught end of stream exception", "WARN",
                              f"{self.FACTORY}:NIOServerCnxn@349"))
        steps.append(step(end, "closed", "Closed socket connection for client /{client} which had "
                          "sessionid {sid}", origin=f"{self.FACTORY}:NIOServerCnxn@1001", client=client,
                          sid=sid))
        return Flow(steps, skippable=("attempting",), orphanable=("established", "closed"))

    def _quorum_chatter(self) -> Flow:
        rng = self.rng
        peer_ip, peer_sid = rng.choice(self.peers)
        kind = rng.randrange(4)
        if kind == 0:
            send = f"SendWorker:{peer_sid}:QuorumCnxManager$SendWorker"
            return Flow([
                step(0.0, "interrupted", "Interrupted while waiting for message on queue", "WARN",
                     f"{send}@679"),
                step(rng.uniform(0.001, 0.01), "leaving", "Send worker leaving thread", "WARN",
                     f"{send}@688"),
            ])
        if kind == 1:
            recv = f"RecvWorker:{peer_sid}:QuorumCnxManager$RecvWorker"
            return Flow([
                step(0.0, "broken", "Connection broken for id {sid}, my id = {myid}, error =", "WARN",
                     f"{recv}@762", sid=peer_sid, myid=self.myid),
                step(rng.uniform(0.001, 0.1), "interrupting", "Interrupting SendWorker", "WARN",
                     f"{recv}@765"),
            ])
        if kind == 2:
            return Flow([step(0.0, "connection_request", "Received connection request /{peer}:{peer_port}",
                              origin=f"/{self.ip}:3888:QuorumCnxManager$Listener@493", peer=peer_ip,
                              peer_port=rng.randint(32768, 60999))])
        return Flow([step(0.0, "notification", "Notification time out: {wait}",
                          origin=f"QuorumPeer[myid={self.myid}]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774",
                          wait=rng.choice((200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000)))])

    def error(self) -> Step:
        if self.rng.random() < 0.5:
            peer_ip, _ = self.rng.choice(self.peers)
            return step(0.0, "error", "Unexpected exception causing shutdown while sock still open", "ERROR",
                        f"LearnerHandler-/{peer_ip}:{self.rng.randint(32768, 60999)}:LearnerHandler@562")
        return step(0.0, "error", "Unexpected Exception:", "ERROR",
                    f"CommitProcessor:{self.myid}:NIOServerCnxn@180")

    def unseen(self) -> Step:
        rng = self.rng
        peer_ip, _ = rng.choice(self.peers)
        return rng.choice((
            lambda: step(0.0, "critical", "Severe unrecoverable error, from thread : SyncThread:{myid}",
                         "ERROR", f"SyncThread:{self.myid}:ZooKeeperCriticalThread@49", myid=self.myid),
            lambda: step(0.0, "trace", "java.io.IOException: No space left on device", bare=True),
            lambda: step(0.0, "trace", "java.lang.OutOfMemoryError: GC overhead limit exceeded", bare=True),
            lambda: step(0.0, "config", "Invalid config, exiting abnormally", "FATAL",
                         "main:QuorumPeerMain@86"),
            lambda: step(0.0, "follower", "Unexpected exception, tries={n}, connecting to /{peer}:2888",
                         "ERROR", f"QuorumPeer[myid={self.myid}]/0:0:0:0:0:0:0:0:2181:Learner@233",
                         n=rng.randint(0, 4), peer=peer_ip),
        ))()

    def render(self, ts, s):
        if s.bare:
            return s.message
        return (f"{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d} - {s.level:<5} [{s.origin}] - "
                f"{s.message}")


SERVICES: dict[str, type[Service]] = {cls.name: cls for cls in (HdfsDataNode, WebServer, Sshd, ZooKeeper)}


# --- anomalies: what replaces a normal flow ------------------------------------------------------

# A plan is what a stream writes instead of one flow: (seconds after the flow start, lines written
# back to back then), each line with whether it is the anomaly.
Plan = list[tuple[float, list[tuple[Step, bool]]]]


def _normal(flow: Flow) -> Plan:
    return [(s.at_s, [(s, False)]) for s in flow.steps]


def _flow_where(service: Service, fits: Callable[[Flow], bool], tries: int = 200) -> Flow:
    for _ in range(tries):
        flow = service.flow()
        if fits(flow):
            return flow
    raise RuntimeError(f"service {service.name!r} produced no flow fit for this anomaly in {tries} tries")


def _unseen_message(service: Service, rng: Random) -> Plan:
    return [(0.0, [(service.unseen(), True)])]


def _error_burst(service: Service, rng: Random) -> Plan:
    # one group, so no other line of the stream comes between
    return [(0.0, [(service.error(), True) for _ in range(rng.randint(*ERROR_BURST_LINES))])]


def _out_of_range_value(service: Service, rng: Random) -> Plan:
    flow = _flow_where(service, lambda f: any(_abnormal_fields(s) for s in f.steps))
    target = rng.choice([s for s in flow.steps if _abnormal_fields(s)])
    name = rng.choice(_abnormal_fields(target))
    odd = replace(target, fields={**target.fields, name: ABNORMAL_VALUES[name](rng)})
    return [(s.at_s, [(odd, True)] if s is target else [(s, False)]) for s in flow.steps]


def _broken_sequence(service: Service, rng: Random) -> Plan:
    def variants(flow: Flow) -> list[tuple[str, str]]:
        present = {s.name for s in flow.steps}
        return ([("skip", n) for n in flow.skippable if n in present]
                + [("orphan", n) for n in flow.orphanable if n in present])

    flow = _flow_where(service, lambda f: bool(variants(f)))
    how, name = rng.choice(variants(flow))
    if how == "orphan":  # a late step of a flow that never started
        orphan = next(s for s in flow.steps if s.name == name)
        return [(0.0, [(orphan, True)])]
    first = next(i for i, s in enumerate(flow.steps) if s.name == name)
    kept = [s for s in flow.steps if s.name != name]
    arrives_early = kept[first]  # skippable steps are never last, so some step follows the gap
    return [(s.at_s, [(s, s is arrives_early)]) for s in kept]


INJECTORS: dict[str, Callable[[Service, Random], Plan]] = {
    "unseen_message": _unseen_message,
    "error_burst": _error_burst,
    "out_of_range_value": _out_of_range_value,
    "broken_sequence": _broken_sequence,
}


class _AnomalyBudget:
    """Keeps anomalous lines at ``rate`` of all lines: an anomaly is due once the lines owed pass a
    random threshold, so positions vary while the rate holds within a burst's length at any point."""

    def __init__(self, rate: float, rng: Random):
        self.rate, self.rng = rate, rng
        self.anomalous = 0
        self.threshold = rng.random()

    def due(self, lines: int) -> bool:
        return self.rate > 0 and self.rate * lines - self.anomalous >= self.threshold

    def spend(self, anomalous_lines: int) -> None:
        self.anomalous += anomalous_lines
        self.threshold = self.rng.random()


# --- the simulation ------------------------------------------------------------------------------

@dataclass
class _Stream:
    name: str
    service: Service


class _Simulation:
    """One run: every stream starts flows at random times; their lines wait in one time-ordered queue."""

    def __init__(self, spec: SyntheticLogs):
        self.start = spec.start_time
        self.kinds = spec.kinds
        self.streams = [
            _Stream(f"{name}-{i}", SERVICES[name](i, Random(f"{spec.seed}:{name}-{i}"), spec.start_time))
            for name, count in spec.services.items() for i in range(1, count + 1)]
        self.rng = Random(f"{spec.seed}:anomalies")
        self.budget = _AnomalyBudget(spec.anomaly_rate, self.rng)
        self.queue: list = []  # (seconds, tie-breaker, stream index, lines or None for "start a flow")
        self.order = itertools.count()
        self.emitted = 0
        self.anomalies = 0

    def _push(self, at_s: float, index: int, lines) -> None:
        heapq.heappush(self.queue, (at_s, next(self.order), index, lines))

    def entries(self) -> Iterator[SynthEntry]:
        for index, stream in enumerate(self.streams):
            self._push(stream.service.next_flow_in(), index, None)
        while True:
            now, _, index, lines = heapq.heappop(self.queue)
            stream = self.streams[index]
            if lines is None:
                self._start_flow(index, now)
                self._push(now + stream.service.next_flow_in(), index, None)
                continue
            ts = self.start + timedelta(seconds=now)
            for s, label, anomaly_id in lines:
                self.emitted += 1
                yield SynthEntry(stream.name, stream.service.name, ts, stream.service.render(ts, s), label,
                                 anomaly_id)

    def _start_flow(self, index: int, now: float) -> None:
        service = self.streams[index].service
        if not self.budget.due(self.emitted):
            plan, kind, anomaly_id = _normal(service.flow()), None, None
        else:
            kind = self.rng.choice(self.kinds)
            plan = INJECTORS[kind](service, self.rng)
            self.anomalies += 1
            anomaly_id = self.anomalies
            self.budget.spend(sum(odd for _, group in plan for _, odd in group))
        for at_s, group in plan:
            self._push(now + at_s, index, [(s, kind if odd else None, anomaly_id if odd else None)
                                           for s, odd in group])


# --- the public face -----------------------------------------------------------------------------

@dataclass(frozen=True)
class WrittenLogs:
    out_dir: Path
    files: dict[str, Path]  # stream -> its log file
    labels_path: Path
    lines: int
    anomalous_lines: int


@dataclass(frozen=True)
class ProducedLogs:
    lines: int
    anomalous_lines: int
    ends: dict[int, int] = field(default_factory=dict)  # partition -> the offset after the last line sent there


class SyntheticLogs:
    """Deterministic interleaved logs of several services with labeled injected anomalies.

    Iterating yields ``SynthEntry`` records without end, the same ones every time for the same
    arguments. ``services`` maps a service name (``hdfs``, ``web``, ``sshd``, ``zookeeper``) to its
    number of instances, each instance one stream; ``kinds`` limits which anomalies are injected.
    """

    def __init__(self, seed: int = 0, anomaly_rate: float = 0.01, services: Mapping[str, int] | None = None,
                 start_time: datetime = DEFAULT_START, kinds: tuple[str, ...] = ANOMALY_KINDS):
        services = dict(DEFAULT_SERVICES if services is None else services)
        unknown = sorted(set(services) - set(SERVICES))
        if unknown:
            raise ValueError(f"unknown services {', '.join(unknown)}; known: {', '.join(SERVICES)}")
        if not services or any(count < 1 for count in services.values()):
            raise ValueError(f"every service needs at least one instance: {services}")
        if not 0 <= anomaly_rate <= MAX_ANOMALY_RATE:
            raise ValueError(f"anomaly rate must be between 0 and {MAX_ANOMALY_RATE}, not {anomaly_rate}")
        bad_kinds = sorted(set(kinds) - set(ANOMALY_KINDS))
        if bad_kinds or not kinds:
            raise ValueError(f"anomaly kinds must be some of {', '.join(ANOMALY_KINDS)}, not {kinds}")
        if start_time.tzinfo is None:
            start_time = start_time.replace(tzinfo=UTC)
        self.seed, self.anomaly_rate, self.services = seed, anomaly_rate, services
        self.start_time, self.kinds = start_time, tuple(kinds)

    @property
    def streams(self) -> list[str]:
        return [f"{name}-{i}" for name, count in self.services.items() for i in range(1, count + 1)]

    def __iter__(self) -> Iterator[SynthEntry]:
        return _Simulation(self).entries()

    def write_files(self, out_dir: str | Path, n_lines: int, progress: bool = False) -> WrittenLogs:
        """``n_lines`` lines into ``out_dir/<stream>.log``, plus ``out_dir/labels.jsonl`` with one
        record per anomalous line: stream, file, line_number (1-based), kind, anomaly_id, line, timestamp."""
        from tqdm import tqdm

        if n_lines < 0:
            raise ValueError(f"line count must not be negative: {n_lines}")
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        files = {stream: out_dir / f"{stream}.log" for stream in self.streams}
        line_numbers = dict.fromkeys(files, 0)
        anomalous = 0
        handles = {stream: path.open("w", encoding="utf-8") for stream, path in files.items()}
        try:
            with (out_dir / LABELS_FILE).open("w", encoding="utf-8") as labels:
                entries = itertools.islice(self, n_lines)
                for entry in tqdm(entries, total=n_lines, unit="line", disable=not progress, desc="synth"):
                    handles[entry.stream].write(entry.line + "\n")
                    line_numbers[entry.stream] += 1
                    if entry.label:
                        anomalous += 1
                        labels.write(json.dumps({
                            "stream": entry.stream, "file": files[entry.stream].name,
                            "line_number": line_numbers[entry.stream], "kind": entry.label,
                            "anomaly_id": entry.anomaly_id, "line": entry.line,
                            "timestamp": entry.timestamp.isoformat()}) + "\n")
        finally:
            for handle in handles.values():
                handle.close()
        return WrittenLogs(out_dir, files, out_dir / LABELS_FILE, n_lines, anomalous)

    async def produce_to_kafka(self, kafka: KafkaSettings, topic: str, n_lines: int | None = None,
                               rate_lines_per_s: float | None = None,
                               labels_path: str | Path | None = None) -> ProducedLogs:
        """Send ``n_lines`` entries (None: forever) to ``topic`` as ``LogEnvelope`` JSON keyed by stream,
        at most ``rate_lines_per_s`` a second (None or 0: as fast as the broker takes them). Each
        anomalous entry goes to ``labels_path`` once Kafka acknowledged it, with the topic, partition
        and offset it landed at. The topic must exist (``logstream.service.topics.ensure_topics``)."""
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import KafkaConnectionError

        from .service.envelope import LogEnvelope
        from .service.topics import unreachable

        # plain acks=all: the bundled broker refuses aiokafka's idempotent-producer handshake
        producer = AIOKafkaProducer(**kafka.client_options(), client_id="logstream-synth", acks="all", linger_ms=5)
        try:
            await producer.start()
        except KafkaConnectionError as exc:
            await producer.stop()
            raise unreachable(kafka.bootstrap_servers, exc) from None
        unacknowledged: deque = deque()  # (entry, send future) of anomalous entries, in send order
        last_of_stream: dict = {}  # stream -> the send future of its latest entry (a stream is one partition)
        pace = _Pace(rate_lines_per_s)
        sent = anomalous = 0
        try:
            with _KafkaLabels(labels_path) as labels:
                for entry in itertools.islice(self, n_lines):
                    await pace.wait(sent)
                    envelope = LogEnvelope(line=entry.line, source=entry.service, stream=entry.stream,
                                           timestamp=entry.timestamp)
                    future = await producer.send(topic, value=envelope.to_bytes(), key=entry.stream.encode())
                    last_of_stream[entry.stream] = future
                    sent += 1
                    if entry.label:
                        anomalous += 1
                        unacknowledged.append((entry, future))
                    while unacknowledged and unacknowledged[0][1].done():
                        entry, future = unacknowledged.popleft()
                        labels.write(entry, future.result())
                await producer.flush()
                while unacknowledged:
                    entry, future = unacknowledged.popleft()
                    labels.write(entry, await future)
                ends: dict[int, int] = {}
                for future in last_of_stream.values():
                    landed = await future
                    ends[landed.partition] = max(ends.get(landed.partition, 0), landed.offset + 1)
        finally:
            # stop() flushes what is still buffered; bounded, so Ctrl-C (or SIGTERM) never hangs on a
            # slow or gone broker: what was not acknowledged by then may or may not have landed
            try:
                await asyncio.wait_for(producer.stop(), PRODUCER_STOP_TIMEOUT_S)
            except TimeoutError:
                logging.getLogger(__name__).warning(
                    "the broker did not acknowledge the last lines within %g s; stopped without them",
                    PRODUCER_STOP_TIMEOUT_S)
        return ProducedLogs(sent, anomalous, ends)


class _KafkaLabels:
    """The labels side file of a Kafka run: one JSON line per anomalous entry, written once Kafka
    acknowledged it, flushed line by line so that a reader can follow a run that never ends."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.file = None

    def __enter__(self) -> Self:
        if self.path:
            self.file = self.path.open("w", encoding="utf-8", buffering=1)
        return self

    def __exit__(self, *exc) -> None:
        if self.file:
            self.file.close()

    def write(self, entry: SynthEntry, metadata) -> None:
        if self.file:
            self.file.write(json.dumps({
                "stream": entry.stream, "kind": entry.label, "anomaly_id": entry.anomaly_id,
                "line": entry.line, "timestamp": entry.timestamp.isoformat(), "topic": metadata.topic,
                "partition": metadata.partition, "offset": metadata.offset}) + "\n")


class _Pace:
    """Holds line ``i`` back until ``i / rate`` seconds after the first one."""

    def __init__(self, rate_lines_per_s: float | None):
        self.rate = rate_lines_per_s or None
        self.started: float | None = None

    async def wait(self, i: int) -> None:
        if self.rate is None:
            if i % 1000 == 0:
                await asyncio.sleep(0)  # let the producer's sender run even when nothing else waits
            return
        loop = asyncio.get_running_loop()
        if self.started is None:
            self.started = loop.time()
        delay = self.started + i / self.rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)


def write_training_corpus(out_dir: str | Path, n_lines: int, seed: int = 0,
                          services: Mapping[str, int] | None = None, start_time: datetime = DEFAULT_START,
                          progress: bool = False) -> WrittenLogs:
    """A purely normal corpus (no anomalies, an empty labels file) for training and calibration."""
    logs = SyntheticLogs(seed=seed, anomaly_rate=0.0, services=services, start_time=start_time)
    return logs.write_files(out_dir, n_lines, progress=progress)
