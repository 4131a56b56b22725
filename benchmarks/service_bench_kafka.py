"""The service benchmark's plumbing: datasets, topics, producing, one worker run, reading results back.

Everything talks to a real broker (``EmbeddedBroker``, Tansu) with aiokafka; the worker is
``logstream worker`` as a child process (``WorkerProcess``), exactly as the service tests start it.
Nothing here measures inside the worker: what the benchmark reports comes from Kafka timestamps of
the records the worker publishes, the worker's Prometheus endpoint and ``/proc`` (CPU time).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from logstream.config import KafkaSettings
from logstream.service.broker import free_port
from logstream.service.envelope import LogEnvelope
from logstream.service.topics import ensure_topics
from logstream.service.worker_process import WorkerProcess
from logstream.synth import SyntheticLogs

REPO = Path(__file__).resolve().parent.parent
LOGHUB = REPO / "sample_logs" / "loghub"
PARTITIONS = 4
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- datasets -----------------------------------------------------------------------------------

@dataclass
class Dataset:
    name: str
    messages: list[tuple[bytes, bytes]]  # (key, value) in produce order
    streams: int
    anomalous: int = 0  # labeled anomalous lines (synthetic only)
    description: str = ""


def synthetic_services(streams_per_service: int) -> dict[str, int]:
    return {name: streams_per_service for name in ("hdfs", "web", "sshd", "zookeeper")}


def synthetic_entries(n: int, streams_per_service: int, seed: int = 0, anomaly_rate: float = 0.01):
    logs = SyntheticLogs(seed=seed, anomaly_rate=anomaly_rate, services=synthetic_services(streams_per_service))
    return list(itertools.islice(logs, n))


def envelope_message(entry) -> tuple[bytes, bytes]:
    """As ``SyntheticLogs.produce_to_kafka`` sends it: a JSON envelope keyed by stream."""
    envelope = LogEnvelope(line=entry.line, source=entry.service, stream=entry.stream, timestamp=entry.timestamp)
    return entry.stream.encode(), envelope.to_bytes()


def synthetic_dataset(n: int, streams_per_service: int, seed: int = 0, anomaly_rate: float = 0.01) -> Dataset:
    entries = synthetic_entries(n, streams_per_service, seed, anomaly_rate)
    return Dataset(
        name="synthetic", messages=[envelope_message(e) for e in entries],
        streams=len({e.stream for e in entries}), anomalous=sum(e.label is not None for e in entries),
        description=f"`logstream.synth.SyntheticLogs(seed={seed}, anomaly_rate={anomaly_rate})`, "
                    f"{streams_per_service} instances each of hdfs/web/sshd/zookeeper, JSON envelopes keyed by stream")


def loghub_dataset(n: int, root: Path = LOGHUB) -> Dataset:
    """The Loghub 2k samples as raw lines keyed by file name, interleaved round-robin (16 sources
    writing at once), each file in its own order; the first ``n`` lines of that interleaving."""
    files = sorted(root.glob("*/*_2k.log"))
    if not files:
        raise FileNotFoundError(f"no */*_2k.log under {root}")
    per_file = [(f.name, [line for line in f.read_text(errors="replace").splitlines() if line.strip()])
                for f in files]
    messages: list[tuple[bytes, bytes]] = []
    for row in itertools.zip_longest(*[lines for _, lines in per_file]):
        for (name, _), line in zip(per_file, row):
            if line is not None:
                messages.append((name.encode(), line.encode()))
    messages = messages[:n]
    return Dataset(name="loghub", messages=messages, streams=len({k for k, _ in messages}),
                   description=f"`sample_logs/loghub/*/*_2k.log` ({len(files)} files), raw lines keyed by "
                               "file name, interleaved round-robin")


def garbage_line(rng: random.Random, length: int = 48) -> str:
    """An obviously anomalous line: random printable characters, different every time (so the alert
    grouper never folds two of them). The default model scores such lines about 7.5 against a
    calibrated threshold of 1.6."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&*+/=?@^~|"
    return "".join(rng.choice(alphabet) for _ in range(length))


# --- /proc ---------------------------------------------------------------------------------------

def process_cpu_s(pid: int | None) -> float:
    """utime + stime of a process (all its threads), in seconds; 0 if it is gone."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot (all cores)."""
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # up to steal; guest time is already in user
    return (total - idle) / CLK_TCK, total / CLK_TCK


# --- metrics -------------------------------------------------------------------------------------

def scrape(port: int, timeout_s: float = 2.0) -> dict[str, list[tuple[str, dict, float]]] | None:
    """The worker's Prometheus samples by family name: [(sample name, labels, value)]; None if not up."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout_s) as response:
            text = response.read().decode()
    except OSError:
        return None
    return {family.name: [(s.name, s.labels, s.value) for s in family.samples]
            for family in text_string_to_metric_families(text)}


def sample_value(metrics: dict | None, family: str, sample: str | None = None, **labels) -> float | None:
    if not metrics or family not in metrics:
        return None
    for name, sample_labels, value in metrics[family]:
        if (sample is None or name == sample) and all(sample_labels.get(k) == v for k, v in labels.items()):
            return value
    return None


def histogram(metrics: dict | None, family: str) -> dict:
    """count, sum and cumulative buckets [(le, count)] of a histogram family."""
    if not metrics or family not in metrics:
        return {"count": 0, "sum": 0.0, "buckets": []}
    buckets = [(float(labels["le"]), value) for name, labels, value in metrics[family] if name.endswith("_bucket")]
    return {"count": sample_value(metrics, family, f"{family}_count") or 0,
            "sum": sample_value(metrics, family, f"{family}_sum") or 0.0,
            "buckets": sorted(buckets)}


def histogram_quantile(h: dict, q: float) -> float | None:
    """Upper bound of the bucket holding quantile q (the bucket edges are what the worker exports)."""
    if not h["count"]:
        return None
    target = q * h["count"]
    for le, cumulative in h["buckets"]:
        if cumulative >= target:
            return le
    return float("inf")


# --- one worker and its topics -------------------------------------------------------------------

@dataclass
class WorkerConfig:
    threads: int | None  # LOGSTREAM_MODEL__THREADS (None: unset, the default)
    batch_size: int  # LOGSTREAM_WORKER__BATCH_SIZE
    extra_env: dict[str, str] = field(default_factory=dict)
    fetch_max_wait_ms: int | None = None  # run the worker through service_bench_fetchwait.py with this wait
    workers: int = 1  # worker processes, all in the same consumer group

    @property
    def label(self) -> str:
        threads = "default" if self.threads is None else str(self.threads)
        extra = "".join(f", {k.removeprefix('LOGSTREAM_').lower()}={v}" for k, v in self.extra_env.items())
        if self.fetch_max_wait_ms is not None:
            extra += f", consumer fetch_max_wait_ms={self.fetch_max_wait_ms} (patched)"
        workers = f"{self.workers} workers x " if self.workers != 1 else ""
        return f"{workers}threads={threads}, batch={self.batch_size}{extra}"


def _free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


ASSIGNED = re.compile(r"input partitions assigned: \[([0-9, ]*)\]")
SYNCED = re.compile(r"Successfully synced group \S+ with generation (-?\d+)")


@dataclass
class Pipeline:
    """Topics + consumer group on the shared broker, and the worker process(es) in that group:
    ``config.workers`` of them, each ``python -m logstream.cli worker`` with its own metrics port,
    Faust data directory and log (Faust's web server is off: ``worker.web_port`` unset)."""

    bootstrap: str
    workdir: Path
    config: WorkerConfig
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    metrics_ports: list[int] = field(default_factory=list)
    workers: list[WorkerProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.metrics_ports:
            self.metrics_ports = _free_ports(max(1, self.config.workers))

    @property
    def processes(self) -> int:
        return len(self.metrics_ports)

    @property
    def worker(self) -> WorkerProcess | None:
        """The first worker process (the only one unless ``config.workers`` > 1)."""
        return self.workers[0] if self.workers else None

    @property
    def metrics_port(self) -> int:
        return self.metrics_ports[0]

    def _suffix(self, i: int) -> str:
        return self.tag if self.processes == 1 else f"{self.tag}-{i + 1}"

    @property
    def kafka(self) -> KafkaSettings:
        t = self.tag
        return KafkaSettings(bootstrap_servers=self.bootstrap, input_topic=f"lines-{t}", alerts_topic=f"alerts-{t}",
                             dead_letter_topic=f"dead-{t}", scores_topic=f"scores-{t}", partitions=PARTITIONS,
                             consumer_group=f"bench-{t}")

    def env(self, i: int = 0) -> dict[str, str]:
        """The environment of worker process ``i``: everything shared but the metrics port and data dir."""
        k = self.kafka
        env = {
            "LOGSTREAM_KAFKA__INPUT_TOPIC": k.input_topic,
            "LOGSTREAM_KAFKA__ALERTS_TOPIC": k.alerts_topic,
            "LOGSTREAM_KAFKA__DEAD_LETTER_TOPIC": k.dead_letter_topic,
            "LOGSTREAM_KAFKA__SCORES_TOPIC": k.scores_topic,
            "LOGSTREAM_KAFKA__CONSUMER_GROUP": k.consumer_group,
            "LOGSTREAM_KAFKA__PARTITIONS": str(PARTITIONS),
            "LOGSTREAM_WORKER__BATCH_SIZE": str(self.config.batch_size),
            "LOGSTREAM_WORKER__SESSION_TIMEOUT_S": "6",  # the bundled broker joins a group in half of it
            "LOGSTREAM_WORKER__DATA_DIR": str(self.workdir / f"faust-{self._suffix(i)}"),
            "LOGSTREAM_METRICS__PORT": str(self.metrics_ports[i]),
            **self.config.extra_env,
        }
        if self.config.threads is not None:
            env["LOGSTREAM_MODEL__THREADS"] = str(self.config.threads)
        return env

    async def create_topics(self) -> None:
        k = self.kafka
        await ensure_topics(k, [k.input_topic, k.alerts_topic, k.dead_letter_topic, k.scores_topic])

    def start_worker(self) -> list[WorkerProcess]:
        """Start every worker process of the pipeline at once (all in the same consumer group)."""
        # LOGSTREAM_ variables of the calling shell must not leak into a run that says what it sets
        base = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
        self.workers = []
        for i in range(self.processes):
            worker = WorkerProcess(self.bootstrap, self.workdir / f"worker-{self._suffix(i)}.log", env=self.env(i))
            worker.env = {**base, **self.env(i)}
            if self.config.fetch_max_wait_ms is not None:
                worker.env["BENCH_FETCH_MAX_WAIT_MS"] = str(self.config.fetch_max_wait_ms)
                worker.command = [sys.executable, str(Path(__file__).with_name("service_bench_fetchwait.py")),
                                  *worker.command[3:]]  # in place of "-m logstream.cli"
            self.workers.append(worker.start())
        return self.workers

    def stop_worker(self) -> None:
        for worker in self.workers:  # SIGTERM to all first: they stop (commit, drain) side by side
            worker.terminate()
        for worker in self.workers:
            worker.stop(timeout_s=20)

    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers if w.process is not None]

    def metrics_each(self) -> list[dict | None]:
        return [scrape(port) for port in self.metrics_ports]

    def metrics(self, require_all: bool = False, tries: int = 1) -> dict | None:
        """The workers' Prometheus samples, summed over the processes (counters, histogram buckets,
        gauges alike: sample by sample with equal name and labels). None if no endpoint answered, or
        with ``require_all`` if any did not (after ``tries`` attempts)."""
        for attempt in range(tries):
            each = self.metrics_each()
            if not require_all or all(m is not None for m in each):
                break
            time.sleep(0.5)
        if require_all and any(m is None for m in each):
            return None
        return merge_metrics(each)

    def scored(self) -> float:
        return sample_value(self.metrics(), "logstream_entries_scored", "logstream_entries_scored_total") or 0.0

    def log_texts(self) -> list[str]:
        out = []
        for w in self.workers:
            try:
                out.append(w.log_path.read_text(errors="replace"))
            except FileNotFoundError:
                out.append("")
        return out

    def assignments(self) -> list[list[int] | None]:
        """Each worker's input partitions, from the last assignment its log shows (None: none yet)."""
        out: list[list[int] | None] = []
        for text in self.log_texts():
            found = ASSIGNED.findall(text)
            out.append(sorted(int(p) for p in found[-1].split(",") if p.strip()) if found else None)
        return out

    def group_generation(self) -> int | None:
        """The newest consumer-group generation any worker's log shows (one more per rebalance)."""
        generations = [int(g) for text in self.log_texts() for g in SYNCED.findall(text)]
        return max(generations) if generations else None

    def group_ready(self) -> bool:
        """Every worker has its own share of the input partitions: the last assignments of all of them
        are disjoint, cover every partition, and each worker holds some (while there are partitions)."""
        assigned = self.assignments()
        if any(a is None for a in assigned):
            return False
        flat = [p for a in assigned for p in a]
        return (len(flat) == len(set(flat)) and set(flat) == set(range(PARTITIONS))
                and sum(bool(a) for a in assigned) == min(len(assigned), PARTITIONS))

    def log_tail(self, chars: int = 3000) -> str:
        if self.processes == 1:
            return self.worker.log_tail(chars) if self.worker else ""
        return "\n".join(f"--- worker {i + 1} ({w.log_path.name}) ---\n{w.log_tail(chars // self.processes)}"
                         for i, w in enumerate(self.workers))


def merge_metrics(each: list[dict | None]) -> dict | None:
    """Sum Prometheus samples of several processes, sample by sample (same family, name, labels)."""
    present = [m for m in each if m is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    merged: dict[str, dict[tuple, list]] = {}
    for metrics in present:
        for family, samples in metrics.items():
            slot = merged.setdefault(family, {})
            for name, labels, value in samples:
                key = (name, tuple(sorted(labels.items())))
                if key in slot:
                    slot[key][2] += value
                else:
                    slot[key] = [name, dict(labels), value]
    return {family: [tuple(v) for v in slot.values()] for family, slot in merged.items()}


async def produce_all(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]], progress=None) -> float:
    """As fast as the broker takes them; returns the seconds it took."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20,
                                max_batch_size=256 * 1024, client_id="bench-preload")
    await producer.start()
    started = time.perf_counter()
    try:
        pending = []
        for i, (key, value) in enumerate(messages):
            pending.append(await producer.send(topic, value=value, key=key))
            if len(pending) >= 2000:
                await asyncio.gather(*pending)
                if progress is not None:
                    progress.update(len(pending))
                pending = []
        await asyncio.gather(*pending)
        if progress is not None:
            progress.update(len(pending))
    finally:
        await producer.stop()
    return time.perf_counter() - started


async def read_topic(bootstrap: str, topic: str, expect: int | None = None, idle_s: float = 1.5,
                     timeout_s: float = 120.0) -> list:
    """Every record of a topic, by partition assignment, until ``expect`` records are in or nothing
    new came for ``idle_s`` after the end offsets were reached."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest", fetch_max_wait_ms=100, client_id="bench-read",
                                max_partition_fetch_bytes=8 << 20)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        end = await consumer.end_offsets(partitions)
        records: list = []
        deadline = time.monotonic() + timeout_s
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=300, max_records=10_000)
            got = [r for rs in batches.values() for r in rs]
            records += got
            if got:
                quiet_since = time.monotonic()
            if expect is not None and len(records) >= expect:
                break
            positions = {tp: await consumer.position(tp) for tp in partitions}
            if expect is None and all(positions[tp] >= end[tp] for tp in partitions) \
                    and time.monotonic() - quiet_since > idle_s:
                break
        return records
    finally:
        await consumer.stop()


async def kafka_floor(bootstrap: str, topic: str, rounds: int = 12) -> dict:
    """What the broker alone adds: produce -> ack (acks=all, linger 0), and produce -> a consumer's
    receipt for a consumer that is waiting at the end of the topic, with Faust's fetch wait (1500 ms,
    fixed in faust/transport/drivers/aiokafka.py) and with 100 ms."""
    import statistics

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, client_id="bench-floor")
    await producer.start()
    out: dict = {}
    try:
        acks = []
        for i in range(50):
            started = time.perf_counter()
            await (await producer.send(topic, b"floor", key=b"k%d" % i))
            acks.append(1000 * (time.perf_counter() - started))
        out["ack_ms"] = {"median": statistics.median(acks), "max": max(acks)}
        for wait_ms in (1500, 100):
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=wait_ms,
                                        enable_auto_commit=False, client_id="bench-floor")
            await consumer.start()
            partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(partitions)
            await consumer.seek_to_end(*partitions)
            await consumer.getmany(timeout_ms=500)
            latencies = []
            for i in range(rounds):
                await asyncio.sleep(0.3 + (i % 3) * 0.37)  # land anywhere in the consumer's fetch cycle
                started = time.perf_counter()
                await producer.send_and_wait(topic, b"floor", key=b"k")
                while not await consumer.getmany(timeout_ms=5000):
                    pass
                latencies.append(1000 * (time.perf_counter() - started))
            await consumer.stop()
            out[f"receive_ms_wait_{wait_ms}"] = {"median": statistics.median(latencies), "max": max(latencies),
                                                 "all": latencies}
    finally:
        await producer.stop()
    return out
