"""Reliability, tried as an operator would: real broker, worker and tailer processes, faults injected.

    python benchmarks/reliability.py                       # -> benchmarks/results/reliability.md (~30 min)
    python benchmarks/reliability.py --soak-s 60 --out /tmp/rel   # a short look

Every input line is counted by its (partition, offset) and matched to its record on the scores topic
(the worker publishes one per scored line); lines the tailer sends carry a sequence number in their
text; alerts are matched by id to the webhook receiver's deliveries and the dead-letter topic.

Scenarios (each on fresh topics and a fresh consumer group of one embedded broker; the outages on a
broker of their own, behind the proxy):

* worker SIGKILL twice: lines produced at a steady rate, the worker killed and restarted twice.
* broker outage 5 s and 45 s: a ``FaultProxy`` in front of the broker (what a real Kafka's restart
  looks like to its clients; the bundled broker keeps its data in memory, so restarting it would be
  a new broker). An application keeps writing its log file; the tailer and the worker go through the
  proxy. Recovery: from the broker's return to the first score of a line written during the outage.
* webhook down + worker SIGKILL: every line alerts; the receiver is down while the worker is killed
  and restarted; then it comes up. Every alert must reach it or the dead-letter topic.
* hostile input: JSON nested 1,000 deep, a 1 MB and a 10 MB line, empty lines, 100,000 stream keys.
* tailer: SIGKILL and restart, a rename rotation with a broad glob (``app.log*``), a copytruncate.
* rated throughput (measured first, ``--rated``): ``live`` (the default), the rate one worker sustains
  while lines arrive as in service, the load generator and the broker sharing this machine's cores
  with it; ``backlog``, the rate it drains lines written before it started (reported either way).
* soak: ``--soak-s`` at 80 % of the worker's rated throughput: worker memory sampled
  throughout; then a burst, with the lag gauge read against the real backlog (end offsets, past the last
  offset the broker acknowledged to the load generator, minus the group's committed offsets, asked of
  the broker at the same moment).
* latency: ingest-to-score (the score record's Kafka timestamp minus the input's) at 25, 50 and
  80 % of the rated throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))  # the service tests' topic reader and webhook receiver

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from service_helpers import PARTITIONS, Scenario, WebhookReceiver, metric, readiness  # noqa: E402

from logstream.service.broker import EmbeddedBroker, free_port  # noqa: E402
from logstream.service.faults import FaultProxy  # noqa: E402
from logstream.synth import SyntheticLogs  # noqa: E402

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


# --- pieces ---------------------------------------------------------------------------------------

class Topic:
    """Every record of some partitions of one topic, read by assignment (no group) with kafka-python."""

    def __init__(self, bootstrap: str, topic: str):
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                      auto_offset_reset="earliest", max_partition_fetch_bytes=32 << 20,
                                      fetch_max_bytes=64 << 20, max_poll_records=50_000)
        self.consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        self.consumer.seek_to_beginning()
        self.records: list = []

    def poll(self, rounds: int = 3) -> list:
        """Read everything the topic held when called: until the position reaches the end offsets of
        that moment (at least ``rounds`` polls; at most a minute)."""
        partitions = list(self.consumer.assignment())
        ends = self.consumer.end_offsets(partitions)
        deadline = time.monotonic() + 60
        for i in range(100_000):
            for records in self.consumer.poll(timeout_ms=300).values():
                self.records += records
            done = all(self.consumer.position(tp) >= ends[tp] for tp in partitions)
            if (done and i + 1 >= rounds) or time.monotonic() > deadline:
                break
        return self.records

    def close(self) -> None:
        self.consumer.close()


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        return {tp.partition: o for tp, o in consumer.end_offsets(
            [TopicPartition(topic, p) for p in range(PARTITIONS)]).items()}
    finally:
        consumer.close()


def committed(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(topic, p)) or 0 for p in range(PARTITIONS)}
    finally:
        consumer.close()


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its children (the worker runs its model in threads, its
    fine-tuning in a child)."""
    total = 0
    for p in [pid] + _children(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _children(pid: int) -> list[int]:
    try:
        kids = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in _children(k)]


def wait(condition, timeout_s: float, step: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


class Steady:
    """Produce synthetic lines at ``rate`` lines/s from a thread (kafka-python), until stopped."""

    def __init__(self, bootstrap: str, topic: str, rate: float, seed: int = 0):
        # linger as the shipped tailer's producer (logstream.service.tailer)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                      max_request_size=32 << 20)
        self.topic, self.rate = topic, rate
        self.logs = iter(SyntheticLogs(seed=seed, anomaly_rate=0.0))
        self.landed: list[tuple[int, int]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        futures = []
        while not self._stop.is_set():
            delay = started + self.sent / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, 0.1))
                continue
            entry = next(self.logs)
            futures.append(self.producer.send(self.topic, key=entry.stream.encode(),
                                              value=json.dumps({"line": entry.line, "source": entry.service}).encode()))
            self.sent += 1
        self.producer.flush()
        for future in futures:
            try:
                m = future.get(60)
            except Exception:  # noqa: BLE001 - a record the broker never took is not an input line
                continue
            self.landed.append((m.partition, m.offset))

    def start(self) -> "Steady":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)
        self.producer.close()


@dataclass
class Row:
    scenario: str
    lines: int = 0
    lost: int = 0
    rescored: int = 0
    behind: int = 0  # not scored yet but still in the topic, past the group's committed offset (not lost)
    alerts: str = "-"
    crash_loop: str = "no"
    recovery_s: str = "-"
    notes: list[str] = field(default_factory=list)
    ok: bool = True


def scores_by_position(bootstrap: str, scenario: Scenario) -> dict[tuple[int, int], int]:
    """Score records so far, counted by the input position they score."""
    return wait_scored(bootstrap, scenario, (), 60)


def wait_scored(bootstrap: str, scenario: Scenario, positions, timeout_s: float) -> dict[tuple[int, int], int]:
    wanted = set(positions)
    reader = Topic(bootstrap, scenario.scores_topic)
    counts: dict[tuple[int, int], int] = {}
    seen = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        records = reader.poll(2)
        for r in records[seen:]:
            s = json.loads(r.value)
            counts[(s["partition"], s["offset"])] = counts.get((s["partition"], s["offset"]), 0) + 1
        seen = len(records)
        if wanted <= counts.keys():
            break
    reader.close()
    return counts


def account(row: Row, landed, counts, done: dict[int, int] | None = None) -> None:
    """Count lost and re-scored lines. With ``done`` (the group's committed offsets), an unscored line
    at or past its partition's commit is one the worker has not reached yet: behind, not lost."""
    row.lines = len(landed)
    unscored = [p for p in landed if p not in counts]
    row.behind = 0 if done is None else sum(1 for part, offset in unscored if offset >= done.get(part, 0))
    row.lost = len(unscored) - row.behind
    row.rescored = sum(counts.get(p, 0) - 1 for p in landed if counts.get(p, 0) > 1)
    row.ok = row.ok and row.lost == 0


# --- scenarios ------------------------------------------------------------------------------------

def worker_kill_twice(broker, workdir: Path, rate: float) -> Row:
    row = Row("worker SIGKILL mid-stream, twice")
    scenario = Scenario(broker.bootstrap_servers, workdir, settings={"LOGSTREAM_WORKER__COMMIT_INTERVAL_S": "1"})
    scenario.create_topics()
    worker = scenario.worker("kill-0")
    steady = Steady(broker.bootstrap_servers, scenario.input_topic, rate, seed=1).start()
    workers = [worker]
    try:
        for i in (1, 2):
            wait(lambda: metric(scenario.metrics_port, "logstream_entries_scored_total") > 100, 240)
            time.sleep(5)
            workers[-1].kill()
            workers.append(scenario.worker(f"kill-{i}"))
        time.sleep(10)
        steady.stop()
        counts = wait_scored(broker.bootstrap_servers, scenario, steady.landed, 300)
        account(row, steady.landed, counts)
        row.notes.append(f"{rate:g} lines/s; killed after 5 s of scoring, twice")
        row.crash_loop = "no" if workers[-1].alive else "worker exited"
    finally:
        steady.stop() if steady._thread.is_alive() else None
        for w in workers:
            w.stop()
    return row


class LogWriter:
    """An application writing numbered lines to a file at a steady rate (its own thread)."""

    def __init__(self, path: Path, rate: float, prefix: str = "request"):
        self.path, self.rate, self.prefix = path, rate, prefix
        self.written = 0
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def line(self, n: int) -> str:
        return f"{self.prefix} {n} served in {n % 97} ms status=200"

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * self.rate)
            with self.lock, self.path.open("a") as f:
                while self.written < due:
                    f.write(self.line(self.written) + "\n")
                    self.written += 1
            time.sleep(0.05)

    def start(self) -> "LogWriter":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def start_tailer(scenario: Scenario, bootstrap: str, pattern: str, workdir: Path, name: str, **env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "logstream.cli", "tail", pattern, "--checkpoint", str(workdir / f"{name}.cp.json"),
         "--bootstrap-servers", bootstrap],
        env={**os.environ, **scenario.env(), "LOGSTREAM_TAIL__METRICS_PORT": str(free_port()), **env},
        stdout=open(workdir / f"{name}.log", "ab"), stderr=subprocess.STDOUT)


def tailed_lines(bootstrap: str, scenario: Scenario) -> tuple[list, dict[str, int]]:
    reader = Topic(bootstrap, scenario.input_topic)
    reader.poll(6)
    reader.close()
    counts: dict[str, int] = {}
    for r in reader.records:
        line = json.loads(r.value)["line"]
        counts[line] = counts.get(line, 0) + 1
    return [(r.partition, r.offset) for r in reader.records], counts


def broker_outage(workdir: Path, outage_s: float, rate: float) -> Row:
    row = Row(f"broker down {outage_s:g} s")
    proxy_port = free_port()
    with EmbeddedBroker(advertised_port=proxy_port) as broker, FaultProxy(broker.port, port=proxy_port) as proxy:
        scenario = Scenario(proxy.address, workdir, settings={"LOGSTREAM_WORKER__COMMIT_INTERVAL_S": "1"})
        scenario.create_topics()
        log = workdir / f"outage-{outage_s:g}.log"
        writer = LogWriter(log, rate, prefix=f"outage{outage_s:g}").start()
        worker = scenario.worker(f"outage-{outage_s:g}")
        tailer = start_tailer(scenario, proxy.address, str(log), workdir, f"tail-outage-{outage_s:g}")
        try:
            wait(lambda: metric(scenario.metrics_port, "logstream_entries_scored_total") > 50, 240)
            time.sleep(3)
            proxy.cut()
            cut_at_line = writer.written
            time.sleep(outage_s)
            not_ready = readiness(scenario.metrics_port) == 503
            proxy.restore()
            back = time.monotonic()
            # recovery: the first line written during the outage scored
            first_during = writer.line(cut_at_line + 1)

            def recovered() -> bool:
                positions, counts = tailed_lines(proxy.address, scenario)
                return first_during in counts and bool(scores_by_position(proxy.address, scenario).keys()
                                                       & set(positions[-200:]))
            wait(recovered, 240, step=1.0)
            row.recovery_s = f"{time.monotonic() - back:.1f}"
            time.sleep(5)
            writer.stop()
            wait(lambda: len(tailed_lines(proxy.address, scenario)[1]) >= writer.written, 120, step=1.0)
            positions, counts = tailed_lines(proxy.address, scenario)
            scores = wait_scored(proxy.address, scenario, positions, 240)
            account(row, positions, scores)
            missing = [n for n in range(writer.written) if writer.line(n) not in counts]
            row.lost += len(missing)
            row.lines = writer.written
            row.ok = row.ok and not missing and float(row.recovery_s) <= 30
            row.crash_loop = "no" if worker.alive and tailer.poll() is None else "a process exited"
            row.notes.append(f"{rate:g} lines/s written to a file throughout; readiness during the outage: "
                             f"{'not ready' if not_ready else 'READY (wrong)'}; "
                             f"{sum(c - 1 for c in counts.values())} lines sent twice by the tailer")
        finally:
            writer.stop()
            tailer.terminate()
            tailer.wait(30)
            worker.stop()
    return row


def webhook_down_and_kill(broker, workdir: Path) -> Row:
    row = Row("webhook down + worker SIGKILL")
    port = free_port()
    receiver = WebhookReceiver(SECRET)
    receiver.port = port
    scenario = Scenario(broker.bootstrap_servers, workdir, settings={
        "LOGSTREAM_SCORING__THRESHOLD": "-1", "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0",
        "LOGSTREAM_SCORING__ADAPTIVE__ENABLED": "false",
        "LOGSTREAM_ALERTS__WEBHOOKS": json.dumps([{"url": receiver.url, "secret": SECRET}])})
    scenario.create_topics()
    worker = scenario.worker("hook-0")
    steady = Steady(broker.bootstrap_servers, scenario.input_topic, 20, seed=3).start()
    workers = [worker]
    try:
        time.sleep(1)
        wait(lambda: metric(scenario.metrics_port, "logstream_alerts_total{sink=\"topic\"}") > 0 or
             metric(scenario.metrics_port, "logstream_entries_scored_total") > 30, 240)
        time.sleep(8)
        workers[-1].kill()
        workers.append(scenario.worker("hook-1"))
        time.sleep(15)
        steady.stop()
        receiver.start()  # the receiver comes back
        alerts = Topic(broker.bootstrap_servers, scenario.alerts_topic)
        dead = Topic(broker.bootstrap_servers, scenario.dead_letter_topic)

        def settled() -> bool:
            ids = {json.loads(r.value)["alert_id"] for r in alerts.poll(2)}
            dead_ids = {json.loads(json.loads(r.value)["value"])["alert_id"] for r in dead.poll(1)
                        if json.loads(r.value).get("kind") == "alert_delivery"}
            return bool(ids) and ids <= {a.alert_id for a in receiver.alerts} | dead_ids
        wait(settled, 300, step=1.0)
        ids = {json.loads(r.value)["alert_id"] for r in alerts.records}
        delivered = {a.alert_id for a in receiver.alerts}
        dead_ids = {json.loads(json.loads(r.value)["value"])["alert_id"] for r in dead.records
                    if json.loads(r.value).get("kind") == "alert_delivery"}
        lost = ids - delivered - dead_ids
        row.alerts = f"{len(ids)} on the topic: {len(ids & delivered)} delivered, {len(ids & dead_ids - delivered)} " \
                     f"dead-lettered, {len(lost)} lost"
        counts = wait_scored(broker.bootstrap_servers, scenario, steady.landed, 120)
        account(row, steady.landed, counts)
        row.ok = row.ok and not lost and bool(ids) and workers[-1].alive
        row.crash_loop = "no" if workers[-1].alive else "worker exited"
        row.notes.append(f"receiver down for the first {time.monotonic() - steady_start(steady):.0f} s; "
                         f"{len(receiver.webhook_ids) - len(set(receiver.webhook_ids))} deliveries repeated "
                         "(same webhook-id)")
        alerts.close()
        dead.close()
    finally:
        for w in workers:
            w.stop()
        try:
            receiver.stop()
        except Exception:  # noqa: BLE001 - never started
            pass
    return row


def steady_start(steady: Steady) -> float:
    return time.monotonic() - steady.sent / steady.rate


def hostile_input(broker, workdir: Path, keys: int) -> Row:
    row = Row(f"hostile input: JSON 1,000 deep, 1 MB and 10 MB lines, empty lines, {keys:,} keys")
    scenario = Scenario(broker.bootstrap_servers, workdir)
    scenario.create_topics()
    worker = scenario.worker("hostile")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", max_request_size=32 << 20)
    try:
        wait(lambda: readiness(scenario.metrics_port) == 200, 240)
        rss_before = rss_mib(worker.process.pid)
        deep = ("[" * 1000 + "]" * 1000).encode()
        messages = [(b"deep", deep), (b"big1", json.dumps({"line": "x" * (1 << 20)}).encode()),
                    (b"big10", json.dumps({"line": "y " * (5 << 20)}).encode()),
                    (b"empty", b""), (b"blank", json.dumps({"line": "   "}).encode())]
        futures = [producer.send(scenario.input_topic, key=k, value=v) for k, v in messages]
        futures += [producer.send(scenario.input_topic, key=f"key-{i}".encode(),
                                  value=json.dumps({"line": f"user {i} logged in"}).encode()) for i in range(keys)]
        producer.flush()
        landed = [(m.partition, m.offset) for m in (f.get(120) for f in futures)]
        started = time.monotonic()
        dead = Topic(broker.bootstrap_servers, scenario.dead_letter_topic)

        def handled() -> bool:
            dead.poll(1)
            return metric(scenario.metrics_port, "logstream_entries_scored_total") + len(dead.records) + \
                metric(scenario.metrics_port, "logstream_empty_lines_total") >= len(landed) - 1
        wait(handled, 1800, step=2.0)
        seconds = time.monotonic() - started
        scored = metric(scenario.metrics_port, "logstream_entries_scored_total")
        reasons = [json.loads(r.value)["reason"][:60] for r in dead.records]
        dead.close()
        row.lines = len(landed)
        row.notes.append(f"scored {scored:.0f}, dead-lettered {len(reasons)} ({'; '.join(reasons)}), empty skipped "
                         f"{metric(scenario.metrics_port, 'logstream_empty_lines_total'):.0f}, truncated "
                         f"{metric(scenario.metrics_port, 'logstream_truncated_lines_total'):.0f}; {seconds:.0f} s; "
                         f"worker RSS {rss_before:.0f} -> {rss_mib(worker.process.pid):.0f} MiB")
        handled_all = scored + len(reasons) + metric(scenario.metrics_port, "logstream_empty_lines_total")
        row.lost = int(max(0, len(landed) - handled_all))
        row.crash_loop = "no" if worker.alive else "worker exited"
        row.ok = row.lost == 0 and worker.alive
    finally:
        producer.close()
        worker.stop()
    return row


def tailer_faults(broker, workdir: Path, rate: float) -> Row:
    row = Row("tailer SIGKILL, rename rotation (broad glob), copytruncate")
    scenario = Scenario(broker.bootstrap_servers, workdir)
    scenario.create_topics()
    folder = workdir / "app"
    folder.mkdir(exist_ok=True)
    log = folder / "app.log"
    writer = LogWriter(log, rate, prefix="tailed").start()
    tailer = start_tailer(scenario, broker.bootstrap_servers, str(folder / "app.log*"), workdir, "tail-faults",
                          LOGSTREAM_TAIL__ROTATE_WAIT_S="1")
    try:
        time.sleep(5)
        tailer.kill()
        tailer.wait()
        time.sleep(2)
        tailer = start_tailer(scenario, broker.bootstrap_servers, str(folder / "app.log*"), workdir, "tail-faults",
                              LOGSTREAM_TAIL__ROTATE_WAIT_S="1")
        time.sleep(5)
        with writer.lock:  # rotation by rename, as logrotate does by default
            log.rename(folder / "app.log.1")
        time.sleep(5)
        with writer.lock:  # copytruncate
            (folder / "app.log.2").write_bytes(log.read_bytes())
            with log.open("r+") as f:
                f.truncate(0)
        time.sleep(5)
        writer.stop()
        wait(lambda: len(tailed_lines(broker.bootstrap_servers, scenario)[1]) >= writer.written, 60, step=1.0)
        positions, counts = tailed_lines(broker.bootstrap_servers, scenario)
        missing = [n for n in range(writer.written) if writer.line(n) not in counts]
        row.lines = writer.written
        row.lost = len(missing)
        row.rescored = sum(c - 1 for c in counts.values())
        row.notes.append(f"{rate:g} lines/s; lines sent twice: {row.rescored} (resent after the SIGKILL, from the "
                         f"checkpoint); the rotated copies matched by the glob were not sent again"
                         if row.rescored < writer.written / 2 else "rotated copies sent again")
        row.ok = not missing
    finally:
        writer.stop()
        tailer.terminate()
        tailer.wait(30)
    return row


def rated_throughput(broker, workdir: Path, lines: int) -> float:
    scenario = Scenario(broker.bootstrap_servers, workdir)
    scenario.create_topics()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=5)
    logs = iter(SyntheticLogs(seed=7, anomaly_rate=0.0))
    for _ in range(lines):
        e = next(logs)
        producer.send(scenario.input_topic, key=e.stream.encode(), value=json.dumps({"line": e.line}).encode())
    producer.flush()
    producer.close()
    worker = scenario.worker("rated")
    try:
        wait(lambda: metric(scenario.metrics_port, "logstream_entries_scored_total") >= 200, 300, step=0.2)
        t0, n0 = time.monotonic(), metric(scenario.metrics_port, "logstream_entries_scored_total")
        wait(lambda: metric(scenario.metrics_port, "logstream_entries_scored_total") >= lines, 900, step=0.5)
        return (metric(scenario.metrics_port, "logstream_entries_scored_total") - n0) / (time.monotonic() - t0)
    finally:
        worker.stop()


PHASE_METRICS = ("logstream_batch_size_entries_sum", "logstream_batch_size_entries_count",
                 "logstream_scoring_latency_seconds_sum", "logstream_publish_wait_seconds_sum",
                 "logstream_publish_wait_seconds_count", "logstream_adapt_trainer_paused_seconds_total",
                 "logstream_model_swaps_total",
                 "logstream_model_swap_pause_seconds_sum", 'logstream_adapt_rounds_total{result="ok"}')


def phase_counters(port: int) -> dict[str, float]:
    return {name: metric(port, name) for name in PHASE_METRICS}


def phase_diagnosis(before: dict, after: dict) -> dict:
    """What the worker did in a latency phase: mean batch, mean scoring time of a batch, swaps and
    fine-tuning rounds finished, scoring paused for swaps."""
    d = {name: after[name] - before[name] for name in PHASE_METRICS}
    batches = max(d["logstream_batch_size_entries_count"], 1)
    return {"batch": d["logstream_batch_size_entries_sum"] / batches,
            "score_ms": 1000 * d["logstream_scoring_latency_seconds_sum"] / batches,
            "ack_ms": 1000 * d["logstream_publish_wait_seconds_sum"] / max(d["logstream_publish_wait_seconds_count"], 1),
            "swaps": d["logstream_model_swaps_total"], "rounds": d['logstream_adapt_rounds_total{result="ok"}'],
            "pause_ms": 1000 * d["logstream_model_swap_pause_seconds_sum"],
            "trainer_paused_s": d["logstream_adapt_trainer_paused_seconds_total"]}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cores:
    """Cores taken by the worker, its fine-tuning child (``trainer``: its reaped children's time is
    counted in the worker's by the kernel, so it is read apart, from the live child), the broker and
    this process (the load generator) between two ``take`` calls."""

    def __init__(self, worker_pid: int, broker_pid: int):
        self.pids = {"worker": worker_pid, "broker": broker_pid, "load generator": os.getpid()}
        self.last = self._read()

    def _read(self) -> tuple[float, dict[str, float]]:
        own = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        trainer = 0.0
        for child in _children(self.pids["worker"]):
            try:
                trainer += cpu_seconds(child)
            except OSError:  # it ended meanwhile
                pass
        return time.monotonic(), {**own, "trainer": trainer}

    def take(self) -> dict[str, float]:
        (t0, before), (t1, after) = self.last, self._read()
        self.last = (t1, after)
        if after["trainer"] < before["trainer"]:  # a round ended and a new one began: its time so far
            before = {**before, "trainer": 0.0}
        return {name: (after[name] - before[name]) / max(t1 - t0, 1e-9) for name in before}


def cores_text(shares: dict[str, float]) -> str:
    return " / ".join(f"{shares[k]:.2f}" for k in ("worker", "trainer", "broker", "load generator"))


def live_throughput(broker, workdir: Path, backlog_rate: float, seconds: float = 30.0) -> tuple[float, dict]:
    """The rate one worker keeps up with while lines arrive live: lines produced at 1.25x the
    backlog rate for ``seconds`` (after 10 s of warm-up) with the worker consuming meanwhile, as a
    running service does; its scoring rate then is what it sustains beside the load generator and
    the broker, which share this machine's cores with it. Also the CPU share each of them took."""
    scenario = Scenario(broker.bootstrap_servers, workdir)
    scenario.create_topics()
    worker = scenario.worker("live")
    try:
        wait(lambda: readiness(scenario.metrics_port) == 200, 240)
        steady = Steady(broker.bootstrap_servers, scenario.input_topic, backlog_rate * 1.25, seed=8).start()
        time.sleep(10)
        pids = {"worker": worker.process.pid, "broker": broker.process.pid, "load generator": os.getpid()}
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        t0, n0 = time.monotonic(), metric(scenario.metrics_port, "logstream_entries_scored_total")
        time.sleep(seconds)
        elapsed = time.monotonic() - t0
        rate = (metric(scenario.metrics_port, "logstream_entries_scored_total") - n0) / elapsed
        shares = {name: (cpu_seconds(pid) - cpu0[name]) / elapsed for name, pid in pids.items()}
        steady.stop()
        return rate, shares
    finally:
        worker.stop()


def soak_and_latency(broker, workdir: Path, rated: float, soak_s: float,
                     shares: tuple[float, ...] = (0.25, 0.5, 0.8)) -> tuple[Row, list[tuple]]:
    row = Row(f"soak {soak_s / 60:g} min at 80 % of rated, then a burst")
    # the lag gauge is a sample every worker.lag_interval_s: 1 s here, so that it is compared with the
    # backlog of the same moment rather than of up to 5 s before
    scenario = Scenario(broker.bootstrap_servers, workdir, settings={"LOGSTREAM_WORKER__LAG_INTERVAL_S": "1"})
    scenario.create_topics()
    worker = scenario.worker("soak")
    latencies = []
    try:
        wait(lambda: readiness(scenario.metrics_port) == 200, 240)
        # latency phases first (a warm worker), then the soak at 80 %
        cores = Cores(worker.process.pid, broker.process.pid)
        for share in shares:
            before = phase_counters(scenario.metrics_port)
            steady = Steady(broker.bootstrap_servers, scenario.input_topic, rated * share, seed=int(share * 100)).start()
            cores.take()
            time.sleep(45)
            taken = cores.take()
            steady.stop()
            diagnosis = {**phase_diagnosis(before, phase_counters(scenario.metrics_port)), "cores": taken}
            lat = latency_of(broker.bootstrap_servers, scenario, set(steady.landed), trace=TRACE_DIR and
                             TRACE_DIR / f"latency-{share:g}.json")
            latencies.append((share, rated * share, lat, diagnosis))
        steady = Steady(broker.bootstrap_servers, scenario.input_topic, rated * 0.8, seed=5).start()
        samples = []
        started = time.monotonic()
        cores.take()
        while time.monotonic() - started < soak_s:
            time.sleep(10)
            samples.append((time.monotonic() - started, rss_mib(worker.process.pid), cores.take()))
        steady.stop()
        wait(lambda: metric(scenario.metrics_port, "logstream_consumer_lag_messages") == 0, 120)
        # a burst: 20 s of lines at 3x the rated rate, then the gauge against the real backlog
        burst = Steady(broker.bootstrap_servers, scenario.input_topic, rated * 3, seed=6).start()
        time.sleep(20)
        burst.stop()
        gauge_vs_real = []
        # the real end of each partition: past the last offset the broker acknowledged to the load
        # generator (the bundled broker's ListOffsets answers its last batch's first offset)
        acknowledged = {}
        for partition, offset in steady.landed + burst.landed:
            acknowledged[partition] = max(acknowledged.get(partition, 0), offset + 1)
        for _ in range(4):
            listed = end_offsets(broker.bootstrap_servers, scenario.input_topic)
            ends = {p: max(listed.get(p, 0), acknowledged.get(p, 0)) for p in set(listed) | set(acknowledged)}
            done = committed(broker.bootstrap_servers, scenario.input_topic, scenario.kafka.consumer_group)
            real = sum(ends[p] - done.get(p, 0) for p in ends)
            gauge = metric(scenario.metrics_port, "logstream_consumer_lag_messages")
            gauge_vs_real.append((gauge, real))
            time.sleep(6)
        first = statistics.mean(r for t, r, _ in samples if t <= 120) if samples else 0
        last = statistics.mean(r for t, r, _ in samples[-6:]) if samples else 0
        # the cores each process took over the soak's first and last minute: the bundled broker's grow
        # with what it holds (see the report's note), and they are this machine's two
        early = {k: statistics.mean(c[k] for t, _, c in samples if t <= 60) for k in samples[0][2]} if samples else {}
        late = {k: statistics.mean(c[k] for _, _, c in samples[-6:]) for k in samples[0][2]} if samples else {}
        # the commit before the scores: the worker commits only what Kafka acknowledged scoring, so every
        # line below this commit has its score on the topic by the read that follows
        done = committed(broker.bootstrap_servers, scenario.input_topic, scenario.kafka.consumer_group)
        counts = wait_scored(broker.bootstrap_servers, scenario, steady.landed + burst.landed, 600)
        account(row, steady.landed + burst.landed, counts, done)
        if row.behind:  # the worker did not keep up: nothing lost, but the goal of the soak is not met
            row.notes.append(f"{row.behind:,} lines not scored by the end, still in the topic past the commit "
                             "(the worker fell behind)")
            row.ok = False
        errors = [abs(g - r) / r for g, r in gauge_vs_real if r > 100]
        worst = max(errors) if errors else 0.0
        if samples:
            row.notes.append("cores taken (worker / trainer / broker / load generator): first minute "
                             f"{cores_text(early)}, last minute {cores_text(late)}")
        row.notes.append(f"{rated * 0.8:.0f} lines/s; worker RSS first 2 min {first:.0f} MiB, last minute "
                         f"{last:.0f} MiB ({(last - first) / max(first, 1) * 100:+.1f} %); lag gauge vs real backlog "
                         f"after the burst: " + ", ".join(f"{g:.0f}/{r}" for g, r in gauge_vs_real)
                         + f" (worst {worst * 100:.1f} % off; gauge sampled every 1 s, worker.lag_interval_s)")
        row.ok = row.ok and worst <= 0.05 and last <= first * 1.1
        row.crash_loop = "no" if worker.alive else "worker exited"
    finally:
        worker.stop()
    return row, latencies


TRACE_DIR: Path | None = None  # --trace: each latency phase's (input ms, latency ms) pairs go there


def latency_of(bootstrap: str, scenario: Scenario, positions: set, trace: Path | None = None) -> list[float]:
    inputs = Topic(bootstrap, scenario.input_topic)
    stamps = {(r.partition, r.offset): r.timestamp for r in inputs.poll(10) if (r.partition, r.offset) in positions}
    inputs.close()
    time.sleep(5)  # the last lines' scores
    scores = Topic(bootstrap, scenario.scores_topic)
    out = []
    for r in scores.poll(10):
        s = json.loads(r.value)
        at = (s["partition"], s["offset"])
        if at in stamps:
            out.append((stamps[at], r.timestamp - stamps.pop(at)))
    scores.close()
    if trace:
        trace.write_text(json.dumps(sorted(out)))
    return [latency for _, latency in out]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q / 100 * len(values)))] if values else float("nan")


# --- report ---------------------------------------------------------------------------------------

def write_report(path: Path, rows: list[Row], latencies: list, rates: tuple, args, seconds: float) -> None:
    from cache_bench_setup import cpu_name  # next to this script (it imports torch: only for the report)

    rated, backlog, live, shares = rates
    load = os.getloadavg()
    out = [
        "# Reliability: faults injected into real broker, worker and tailer processes", "",
        f"```\npython benchmarks/reliability.py {' '.join(sys.argv[1:])}\n```", "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds / 60:.1f} min. Machine: "
        f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average at the end "
        f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}. One embedded broker (Tansu); one worker (`logstream "
        "worker`, default model, 1 torch thread, session timeout 6 s) per scenario; the tailer is `logstream tail`.",
        "", f"Rated throughput of one worker here: **{rated:.0f} lines/s** ({args.rated}). From a backlog of "
        f"synthetic lines (written before the worker starts, the broker and the load generator idle meanwhile): "
        f"{backlog:.0f} lines/s; live (lines produced at 1.25x that rate while the worker consumes, as in service): "
        f"{live:.0f} lines/s, with the cores shared as " + ", ".join(f"{k} {v:.2f}" for k, v in shares.items())
        + " (of 2). The latency phases and the soak run at shares of the rated figure, on a broker of their own "
        "started empty: the bundled broker's CPU grows with the record batches it holds "
        "(`benchmarks/results/broker_growth.md`), so a long soak here also measures the broker taking the "
        "worker's cores.", "",
        "| scenario | input lines | lost | scored twice (or sent twice) | alerts | crash loop | recovery after "
        "the broker's return (s) | goal met | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(f"| {r.scenario} | {r.lines:,} | {r.lost} | {r.rescored} | {r.alerts} | {r.crash_loop} | "
                   f"{r.recovery_s} | {'yes' if r.ok else 'no'} | {'; '.join(r.notes)} |")
    out += ["", "## Latency", "",
            "Ingest-to-score: the score record's Kafka timestamp minus the input record's (the worker scores "
            "and alerts in the same batch: an alert is published with its score). Beside it, what the worker "
            "did in the phase (its own metrics): mean lines per micro-batch, mean time to score one, mean wait "
            "for Kafka to acknowledge what a batch published, model "
            "versions swapped in (fine-tuning rounds finished), how long scoring paused for the swaps and how "
            "long the trainer was paused for scoring (`adapt.pause_above_ms`); and "
            "the cores each process took in the phase (of this machine's two).", "",
            "| share of rated | lines/s | lines | p50 ms | p99 ms | lines per batch | ms to score a batch | ms "
            "waiting for acks | swaps (rounds) | paused for swaps ms | trainer paused s | cores: worker / trainer / "
            "broker / load generator |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for share, rate, lat, d in latencies:
        out.append(f"| {share * 100:.0f} % | {rate:.0f} | {len(lat):,} | {pct(lat, 50):.0f} | {pct(lat, 99):.0f} | "
                   f"{d['batch']:.1f} | {d['score_ms']:.0f} | {d['ack_ms']:.0f} | {d['swaps']:.0f} ({d['rounds']:.0f}) | "
                   f"{d['pause_ms']:.0f} | {d['trainer_paused_s']:.1f} | {cores_text(d['cores'])} |")
    out += ["", "Goals (issue 13): 0 input lines lost, 0 alerts lost, no crash loop, recovery within 30 s of the "
            "broker's return, lag gauge within 5 % of the real backlog, memory flat; p99 under 250 ms at 50 %."]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--soak-s", type=float, default=600.0)
    parser.add_argument("--shares", default="0.25,0.5,0.8", help="shares of the rated throughput of the latency "
                        "phases")
    parser.add_argument("--trace", type=Path, help="a directory for each latency phase's (input time, latency) "
                        "pairs, as JSON")
    parser.add_argument("--rated", choices=("live", "backlog"), default="live",
                        help="which throughput the latency phases and the soak take shares of")
    parser.add_argument("--rated-lines", type=int, default=4000)
    parser.add_argument("--hostile-keys", type=int, default=100_000, help="distinct stream keys of the hostile input")
    parser.add_argument("--only", default="", help="comma-separated scenario names: kill,outage5,outage45,"
                        "webhook,hostile,tailer,soak")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    # a SIGTERM (a timeout, a supervisor) unwinds like an exception, so the broker and workers stop too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    global TRACE_DIR
    TRACE_DIR = args.trace
    if TRACE_DIR:
        TRACE_DIR.mkdir(parents=True, exist_ok=True)
    only = {s for s in args.only.split(",") if s}
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="logstream-reliability-"))
    rows: list[Row] = []
    latencies: list = []
    os.environ.setdefault("LOGSTREAM_EXTRAS", "")

    def want(name: str) -> bool:
        return not only or name in only

    with EmbeddedBroker() as broker:
        print("measuring the rated throughput...", flush=True)
        backlog = rated_throughput(broker, workdir, args.rated_lines)
        live, shares = live_throughput(broker, workdir, backlog)
        rated = live if args.rated == "live" else backlog
        print(f"rated: {backlog:.0f} lines/s from a backlog, {live:.0f} lines/s live (cores taken: "
              + ", ".join(f"{k} {v:.2f}" for k, v in shares.items()) + f"); the phases use {rated:.0f}", flush=True)
        plan = [("kill", lambda: worker_kill_twice(broker, workdir, rated * 0.5)),
                ("outage5", lambda: broker_outage(workdir, 5, 50)),
                ("outage45", lambda: broker_outage(workdir, 45, 50)),
                ("webhook", lambda: webhook_down_and_kill(broker, workdir)),
                ("tailer", lambda: tailer_faults(broker, workdir, 50)),
                ("hostile", lambda: hostile_input(broker, workdir, args.hostile_keys))]
        for name, run in plan:
            if want(name):
                print(f"[{time.monotonic() - started:5.0f}s] {name}...", flush=True)
                rows.append(run())
                print(f"  {rows[-1]}", flush=True)
    if want("soak"):
        print(f"[{time.monotonic() - started:5.0f}s] soak and latency...", flush=True)
        # on a broker of its own, started empty: the bundled broker's CPU grows with what it holds
        with EmbeddedBroker() as broker:
            row, latencies = soak_and_latency(broker, workdir, rated, args.soak_s,
                                              tuple(float(x) for x in args.shares.split(",")))
            rows.append(row)
            print(f"  {row}", flush=True)
    path = args.out / "reliability.md"
    write_report(path, rows, latencies, (rated, backlog, live, shares), args, time.monotonic() - started)
    print(path.read_text())
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
