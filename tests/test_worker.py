"""The worker end to end: a real broker (Tansu), ``logstream worker`` as a child process, real clients.

Lines go in with ``logstream tail`` and with kafka-python (an independent client); what comes out
(scores, alerts, dead letters) is read back with kafka-python by partition assignment, and alerts
are also delivered to a real aiohttp webhook receiver that checks their signatures. Crashes and
rebalances are real: a worker is SIGKILLed and restarted, a second worker joins the group.

Each scenario has its own topics and consumer group on the one broker. Workers run with one torch
thread; waits are generous (a worker first loads torch and the model) and nothing asserts timing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaProducer

from logstream.alerts import Alert
from logstream.config import Settings
from logstream.service.broker import EmbeddedBroker, free_port
from logstream.service.model_worker import ModelWorker
from logstream.service.records import DeadLetterRecord
from logstream.service.worker import BatchProcessor, InputMessage
from logstream.service.worker_process import WorkerProcess
from logstream.synth import SyntheticLogs
from service_helpers import (PARTITIONS, KafkaConsumer, KafkaProducer, Scenario, TopicPartition, TopicReader,
                             WebhookReceiver, model_dir_or_skip)

pytestmark = pytest.mark.slow

WEBHOOK_SECRET = "whsec_" + "c2VjcmV0LWZvci10aGUtd29ya2VyLXRlc3Rz"  # base64 of a test key


@pytest.fixture(scope="module")
def model_dir():
    return model_dir_or_skip()


@pytest.fixture(scope="module")
def broker(model_dir):
    with EmbeddedBroker() as b:
        yield b


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("worker")


def normal_lines(n: int, seed: int = 0, service: str = "hdfs") -> list[str]:
    logs = SyntheticLogs(seed=seed, anomaly_rate=0.0, services={service: 1})
    return [entry.line for entry in itertools.islice(logs, n)]


def garbage_line(length: int = 300) -> str:
    """A long random binary-looking line: any byte but a line break, read as Latin-1."""
    rng = random.Random(7)
    byte_values = [b for b in range(1, 256) if b not in (0x0A, 0x0D)]
    return bytes(rng.choice(byte_values) for _ in range(length)).decode("latin-1")


def produce(bootstrap: str, topic: str,
            messages: list[tuple[bytes | None, bytes | None]]) -> list[tuple[int, int]]:
    """Send with kafka-python; the (partition, offset) each message landed at, in order."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=key, value=value) for key, value in messages]
        producer.flush()
        return [(m.partition, m.offset) for m in (f.get(30) for f in futures)]
    finally:
        producer.close()


def positions(records: list[dict]) -> list[tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in records]


# --- two shared workers; the first has the model's own calibrated threshold ------------------------

@dataclass
class SharedWorkers:
    calibrated: tuple[Scenario, WorkerProcess]  # the model's own calibrated threshold
    alert_all: tuple[Scenario, WorkerProcess]  # alerts on every line, delivers to the webhook
    webhook: WebhookReceiver


@pytest.fixture(scope="module")
def shared_workers(broker, workdir):
    """Two long-lived workers, started together so that their start-ups (torch, the model) overlap."""
    receiver = WebhookReceiver(WEBHOOK_SECRET).start()
    calibrated = Scenario(broker.bootstrap_servers, workdir)
    # threshold -1: every score (a mean negative log-probability, >= 0) is over it; no grouping window,
    # so each line is its own alert
    alert_all = Scenario(broker.bootstrap_servers, workdir, settings={
        "LOGSTREAM_SCORING__THRESHOLD": "-1",
        "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0",
        "LOGSTREAM_ALERTS__WEBHOOKS": json.dumps([{"url": receiver.url, "secret": WEBHOOK_SECRET}]),
    })
    started: list[WorkerProcess] = []
    try:
        for scenario, name in ((calibrated, "calibrated"), (alert_all, "alert-all")):
            scenario.create_topics()
            started.append(scenario.worker(name))
        yield SharedWorkers((calibrated, started[0]), (alert_all, started[1]), receiver)
    finally:
        for worker in started:
            worker.terminate()
        for worker in started:
            worker.stop()
        receiver.stop()


@pytest.fixture(scope="module")
def calibrated(shared_workers):
    return shared_workers.calibrated


def test_tailed_lines_are_scored_and_a_garbage_line_raises_an_alert(calibrated, tmp_path):
    scenario, worker = calibrated
    garbage = garbage_line()
    lines = normal_lines(40, seed=11) + [garbage] + normal_lines(5, seed=12)
    log_file = tmp_path / "datanode.log"
    log_file.write_text("\n".join(lines) + "\n")
    tail = subprocess.run(
        [sys.executable, "-m", "logstream.cli", "tail", "--once", "--checkpoint", str(tmp_path / "cp.json"),
         "--bootstrap-servers", scenario.bootstrap, str(log_file)],
        env={**os.environ, **scenario.env()}, capture_output=True, text=True, timeout=120, check=False)
    assert tail.returncode == 0, tail.stderr

    reader = TopicReader(scenario.bootstrap, [scenario.scores_topic, scenario.alerts_topic])
    try:
        stream = str(log_file)

        def mine(topic: str) -> list[dict]:
            return [r for r in reader.values(topic) if r["stream"] == stream]

        reader.wait_for(lambda: len(mine(scenario.scores_topic)) >= len(lines), "every tailed line scored",
                        workers=[worker])
        reader.wait_for(lambda: any(a["line"] == garbage for a in mine(scenario.alerts_topic)),
                        "an alert for the garbage line", timeout_s=30, workers=[worker])
        scores = mine(scenario.scores_topic)
        assert len(set(positions(scores))) == len(lines)  # each line once (no restart happened)
        by_offset = sorted(scores, key=lambda r: r["offset"])
        garbage_score = by_offset[40]
        assert garbage_score["anomaly"] is True
        assert garbage_score["score"] > max(r["score"] for r in by_offset if r is not garbage_score)
        alert = Alert.model_validate(next(a for a in mine(scenario.alerts_topic) if a["line"] == garbage))
        assert (alert.partition, alert.offset) == (garbage_score["partition"], garbage_score["offset"])
        assert alert.score == pytest.approx(garbage_score["score"])
        assert alert.score > alert.threshold
        assert alert.model_version == garbage_score["model_version"]
        assert alert.explanation.summary and alert.explanation.surprising_tokens
    finally:
        reader.close()


def test_malformed_messages_go_to_dead_letter_with_reason(calibrated):
    scenario, worker = calibrated
    bad = [
        (b"dl-json", b'{"line": "a JSON envelope cut short'),
        (b"dl-bytes", b"\xff\xfe\x00\x9c\x81 not text at all"),
        (None, b'{"line": "an envelope with no stream, and no key"}'),
        (b"dl-field", b'{"line": "ok", "colour": "blue"}'),
        (b"dl-none", None),
        (b"dl-surrogate", b'{"line": "half a character: \\ud800"}'),
        (b"dl-deep", b'{"line": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),  # a crash loop before
    ]
    good = [(b"dl-good", normal_lines(1, seed=5)[0].encode())]
    landed = produce(scenario.bootstrap, scenario.input_topic, bad + good)
    bad_at, good_at = landed[:len(bad)], landed[len(bad):]

    reader = TopicReader(scenario.bootstrap, [scenario.dead_letter_topic, scenario.scores_topic])
    try:
        reader.wait_for(lambda: set(bad_at) <= set(positions(reader.values(scenario.dead_letter_topic)))
                        and set(good_at) <= set(positions(reader.values(scenario.scores_topic))),
                        "dead letters for the bad messages, a score for the good one", workers=[worker])
        letters = {(r["partition"], r["offset"]): DeadLetterRecord.model_validate(r)
                   for r in reader.values(scenario.dead_letter_topic)}
    finally:
        reader.close()
    expected_reasons = ["malformed JSON envelope", "not UTF-8", "no stream id", "invalid envelope",
                        "no value", "not valid Unicode text", "nested too deeply"]
    for (key, value), at, reason in zip(bad, bad_at, expected_reasons):
        letter = letters[at]
        assert letter.kind == "envelope"
        assert reason in letter.reason, letter.reason
        assert letter.topic == scenario.input_topic
        assert letter.raw_value() == value  # the message survives bytes for bytes
        assert letter.key == (key.decode() if key else None)
    assert letters[bad_at[1]].value_encoding == "base64"
    assert not set(good_at) & set(letters)


def test_a_huge_line_is_cut_and_scored_and_an_empty_one_is_counted(calibrated):
    """A 1 MB line is cut at tail.max_line_bytes (as the tailer cuts) and scored; it must not take the worker's
    memory and every stream with it. An empty line is skipped and counted, not scored."""
    from service_helpers import metric

    scenario, worker = calibrated
    huge = ("x" * 1_000_000).encode()
    landed = produce(scenario.bootstrap, scenario.input_topic,
                     [(b"big", huge), (b"big", b"   "), (b"big", normal_lines(1, seed=21)[0].encode())])
    reader = TopicReader(scenario.bootstrap, [scenario.scores_topic, scenario.dead_letter_topic])
    try:
        reader.wait_for(lambda: {landed[0], landed[2]} <= set(positions(reader.values(scenario.scores_topic))),
                        "scores for the huge line and the normal one", workers=[worker])
        reader.wait_for(lambda: metric(scenario.metrics_port, "logstream_empty_lines_total") >= 1,
                        "the empty line counted", workers=[worker])
        scored = {(r["partition"], r["offset"]): r for r in reader.values(scenario.scores_topic)}
        assert landed[1] not in scored
        assert landed[1] not in set(positions(reader.values(scenario.dead_letter_topic)))
        assert scored[landed[0]]["tokens"] < 20_000  # what was scored is the cut line
        assert metric(scenario.metrics_port, "logstream_truncated_lines_total") >= 1
    finally:
        reader.close()


class AiokafkaTopic:
    """A topic published to with a real aiokafka producer: all ``BatchProcessor`` needs of a Faust topic."""

    def __init__(self, producer, name: str):
        self.producer, self.name = producer, name

    async def send(self, key: bytes | None, value: bytes):
        return await self.producer.send(self.name, value=value, key=key)


def test_a_batch_that_fails_to_score_is_dead_lettered_entry_by_entry(broker, model_dir, workdir):
    scenario = Scenario(broker.bootstrap_servers, workdir)
    scenario.create_topics()
    settings = Settings(kafka=scenario.kafka.model_dump(), model={"path": model_dir, "threads": 1})
    model = ModelWorker(settings)
    model.close()  # the model thread is gone: scoring fails for real
    topic = scenario.input_topic
    messages = [InputMessage(b"s-1", b"first line", topic, 0, 10),
                InputMessage(b"s-2", b"second line", topic, 1, 7),
                InputMessage(b"s-3", b"{not an envelope", topic, 2, 3)]

    async def process_one_batch():
        producer = AIOKafkaProducer(bootstrap_servers=scenario.bootstrap, acks="all")
        await producer.start()
        try:
            processor = BatchProcessor(settings, model, AiokafkaTopic(producer, scenario.alerts_topic),
                                       AiokafkaTopic(producer, scenario.dead_letter_topic),
                                       AiokafkaTopic(producer, scenario.scores_topic))
            await processor.process(messages)  # returns normally: nothing is left unhandled
            await processor.close()
        finally:
            await producer.stop()

    asyncio.run(process_one_batch())
    reader = TopicReader(scenario.bootstrap, [scenario.dead_letter_topic, scenario.scores_topic,
                                              scenario.alerts_topic])
    try:
        reader.wait_for(lambda: len(reader.records[scenario.dead_letter_topic]) >= 3, "three dead letters",
                        timeout_s=60)
        letters = {(r["partition"], r["offset"]): DeadLetterRecord.model_validate(r)
                   for r in reader.values(scenario.dead_letter_topic)}
        reader.poll()
        assert not reader.records[scenario.scores_topic] and not reader.records[scenario.alerts_topic]
    finally:
        reader.close()
    for message in messages[:2]:
        letter = letters[(message.partition, message.offset)]
        assert letter.kind == "scoring"
        assert letter.reason.startswith("scoring failed: RuntimeError")
        assert letter.raw_value() == message.value and letter.key == message.key.decode()
    assert letters[(2, 3)].kind == "envelope"


# --- a worker that alerts on every line, with a signed webhook ------------------------------------

@pytest.fixture(scope="module")
def webhook(shared_workers):
    return shared_workers.webhook


@pytest.fixture(scope="module")
def alert_on_everything(shared_workers):
    return shared_workers.alert_all


def test_lines_from_kafka_python_raise_alerts_read_back_with_kafka_python(alert_on_everything):
    scenario, worker = alert_on_everything
    lines = normal_lines(12, seed=21, service="web")
    messages = [(f"kp-{i % 3}".encode(), line.encode()) for i, line in enumerate(lines)]
    landed = produce(scenario.bootstrap, scenario.input_topic, messages)

    reader = TopicReader(scenario.bootstrap, [scenario.alerts_topic])
    try:
        reader.wait_for(lambda: set(landed) <= set(positions(reader.values(scenario.alerts_topic))),
                        "an alert for every line", workers=[worker])
        alerts = {(a["partition"], a["offset"]): Alert.model_validate(a)
                  for a in reader.values(scenario.alerts_topic)}
    finally:
        reader.close()
    for (key, value), at in zip(messages, landed):
        alert = alerts[at]
        assert alert.stream == key.decode()
        assert alert.line == value.decode()
        assert alert.threshold == -1 and alert.score > alert.threshold
        assert alert.count == 1


def test_alerts_reach_a_webhook_signed(alert_on_everything, webhook):
    scenario, worker = alert_on_everything
    lines = normal_lines(5, seed=31, service="sshd")
    landed = produce(scenario.bootstrap, scenario.input_topic, [(b"hook-1", line.encode()) for line in lines])

    reader = TopicReader(scenario.bootstrap, [scenario.alerts_topic])
    try:
        reader.wait_for(lambda: len([a for a in webhook.alerts if a.stream == "hook-1"]) >= len(lines),
                        "the webhook to receive an alert per line", workers=[worker])
        reader.wait_for(lambda: set(landed) <= set(positions(reader.values(scenario.alerts_topic))),
                        "the same alerts on the alerts topic", workers=[worker])
        on_topic = {a["alert_id"] for a in reader.values(scenario.alerts_topic) if a["stream"] == "hook-1"}
    finally:
        reader.close()
    received = [a for a in webhook.alerts if a.stream == "hook-1"]
    assert not webhook.rejected  # every delivery carried a valid signature
    assert {a.alert_id for a in received} == on_topic
    assert {(a.partition, a.offset) for a in received} == set(landed)
    assert {a.line for a in received} == set(lines)
    assert all(f"msg_{a.alert_id}_{a.count}" in webhook.webhook_ids for a in received)


def test_metrics_endpoint_reports_scoring(alert_on_everything):
    scenario, worker = alert_on_everything
    landed = produce(scenario.bootstrap, scenario.input_topic, [(b"metrics-1", b"one more line to score")])
    reader = TopicReader(scenario.bootstrap, [scenario.alerts_topic])
    try:
        reader.wait_for(lambda: set(landed) <= set(positions(reader.values(scenario.alerts_topic))),
                        "the line's alert", workers=[worker])
    finally:
        reader.close()
    port = worker.env["LOGSTREAM_METRICS__PORT"]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+) (\S+)$", text, re.MULTILINE)}
    assert values["logstream_entries_scored_total"] >= 1
    assert values["logstream_tokens_scored_total"] > values["logstream_entries_scored_total"]
    assert values["logstream_scoring_latency_seconds_count"] >= 1
    assert values["logstream_publish_wait_seconds_count"] >= 1  # what waiting for Kafka's acks costs a batch
    assert values["logstream_cache_slots"] >= 1 and values["logstream_cache_streams"] >= 1
    assert "logstream_consumer_lag_messages" in values
    # the alerts topic is a sink like the others: its alerts are counted (with labels, by regex)
    labelled = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+\{[^}]*\}) (\S+)$", text, re.MULTILINE)}
    assert labelled['logstream_alerts_total{sink="topic"}'] >= 1
    assert values["logstream_ready"] == 1
    assert any(name.startswith("logstream_model_info{") and value == 1 for name, value in labelled.items())
    assert not any(name.startswith("logstream_tailer_") for name in values)  # the tailer serves its own


# --- crashes and rebalances ------------------------------------------------------------------------

def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """The group's committed offsets on ``topic`` (an offset fetch; this consumer joins no group)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        offsets = {p: consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    finally:
        consumer.close()
    return {p: o for p, o in offsets.items() if o is not None}


def many_streams(n: int, seed: int) -> list[tuple[bytes, bytes]]:
    logs = SyntheticLogs(seed=seed, anomaly_rate=0.0)
    return [(e.stream.encode(), e.line.encode()) for e in itertools.islice(logs, n)]


def test_offsets_are_committed_only_after_scoring_and_a_crash_loses_nothing(broker, workdir):
    # small batches and frequent commits: if offsets were committed on receipt rather than after
    # scoring, lines fetched but not yet scored when the worker is killed would be committed, and lost
    scenario = Scenario(broker.bootstrap_servers, workdir, settings={
        "LOGSTREAM_WORKER__BATCH_SIZE": "4", "LOGSTREAM_WORKER__COMMIT_INTERVAL_S": "0.2"})
    scenario.create_topics()
    # enough lines that the worker is still at them when it is killed (120 were scored before the kill
    # once scoring a batch got faster)
    landed = produce(scenario.bootstrap, scenario.input_topic, many_streams(1_000, seed=41))
    group = scenario.kafka.consumer_group

    first = scenario.worker("crash-first")
    reader = TopicReader(scenario.bootstrap, [scenario.scores_topic])
    try:
        reader.wait_for(lambda: any(committed_offsets(scenario.bootstrap, scenario.input_topic, group)
                                    .values()),
                        "the first worker to commit some offsets", workers=[first])
        first.kill()  # SIGKILL: no shutdown, no final commit
        committed = committed_offsets(scenario.bootstrap, scenario.input_topic, group)
        reader.poll()
        reader.poll()
        scored_before = set(positions(reader.values(scenario.scores_topic)))
        for partition, offset in committed.items():
            unscored = [o for o in range(offset) if (partition, o) not in scored_before]
            assert not unscored, f"partition {partition}: offsets {unscored} committed without a score"
        assert set(landed) - scored_before, "the worker finished before it was killed: nothing was tested"

        second = scenario.worker("crash-second")
        try:
            reader.wait_for(lambda: set(landed) <= set(positions(reader.values(scenario.scores_topic))),
                            "every line scored after the restart", workers=[second])
        finally:
            second.stop()
        counts: dict[tuple[int, int], int] = {}
        for at in positions(reader.values(scenario.scores_topic)):
            counts[at] = counts.get(at, 0) + 1
        # the restart resumed at the committed offsets: below them, nothing was scored twice
        assert all(counts[(p, o)] == 1 for p, offset in committed.items() for o in range(offset))
    finally:
        reader.close()
        first.stop()


def assigned_partitions(worker) -> set[int] | None:
    """The worker's latest input assignment, from its log (None before its first one)."""
    found = re.findall(r"input partitions assigned: \[([\d, ]*)\]", worker.log_tail(200_000))
    if not found:
        return None
    return {int(p) for p in found[-1].split(",") if p.strip()}


def test_a_second_worker_joining_loses_no_lines(broker, workdir):
    scenario = Scenario(broker.bootstrap_servers, workdir)
    scenario.create_topics()
    messages = iter(many_streams(10_000, seed=51))
    landed = produce(scenario.bootstrap, scenario.input_topic, list(itertools.islice(messages, 40)))
    first = scenario.worker("rebalance-first")
    second = None
    reader = TopicReader(scenario.bootstrap, [scenario.scores_topic])
    stop_producing = threading.Event()

    def keep_producing():  # lines keep arriving while the group rebalances
        producer = KafkaProducer(bootstrap_servers=scenario.bootstrap, acks="all")
        try:
            while not stop_producing.is_set():
                key, value = next(messages)
                m = producer.send(scenario.input_topic, key=key, value=value).get(30)
                landed.append((m.partition, m.offset))
                time.sleep(0.1)
        finally:
            producer.close()

    producing = threading.Thread(target=keep_producing)
    try:
        # the first worker owns every partition and has seen streams on all of them before the second joins
        reader.wait_for(lambda: set(landed[:40]) <= set(positions(reader.values(scenario.scores_topic))),
                        "the first worker to score the first lines", workers=[first])
        assert assigned_partitions(first) == set(range(PARTITIONS))
        producing.start()
        second = scenario.worker("rebalance-second")
        reader.wait_for(lambda: bool(assigned_partitions(second)), "the second worker to get partitions",
                        workers=[first, second])
        reader.wait_for(lambda: assigned_partitions(first) != set(range(PARTITIONS)),
                        "the first worker to give partitions up", workers=[first, second])
        stop_producing.set()
        producing.join(60)
        assert assigned_partitions(first) | assigned_partitions(second) == set(range(PARTITIONS))
        assert not assigned_partitions(first) & assigned_partitions(second)
        reader.wait_for(lambda: set(landed) <= set(positions(reader.values(scenario.scores_topic))),
                        "every line scored across the rebalance", workers=[first, second])
        # the first worker forgot the windows of the streams whose partitions moved, and only those
        moved = re.findall(r"partitions \[([\d, ]*)\] moved away", first.log_tail(200_000))
        assert moved and {int(p) for p in moved[-1].split(",")} == assigned_partitions(second)
    finally:
        stop_producing.set()
        if producing.is_alive():
            producing.join(60)
        reader.close()
        for worker in (first, second):
            if worker is not None:
                worker.terminate()
        for worker in (first, second):
            if worker is not None:
                worker.stop()
    # one data_dir, a slot each: neither saved its thresholds over the other's nor read the other's at a restart
    saved = sorted(workdir.glob(f"faust-{scenario.tag}/workers/*/adaptive-thresholds.json"))
    assert [path.parent.name for path in saved] == ["0", "1"]


# --- the demo ---------------------------------------------------------------------------------------

def demo_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_KAFKA__")}
    return {**env, "LOGSTREAM_MODEL__THREADS": "1", "LOGSTREAM_METRICS__PORT": str(free_port())}


def test_demo_runs_end_to_end_and_prints_a_tally(model_dir, tmp_path):
    temp = tmp_path / "tmp"  # the machine's temporary directory, as the demo and its worker see it
    temp.mkdir()
    demo = subprocess.run([sys.executable, "-m", "logstream.cli", "demo", "--lines", "150", "--rate", "100",
                           "--history", "400", "--anomaly-rate", "0.05"],
                          env={**demo_env(), "TMPDIR": str(temp)}, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    # the history first, tallied apart; then the live part, whose alerts are shown and tallied
    read = re.search(r"history read: 400 lines in \d+ s; (\d+) alerts in it", demo.stdout)
    assert read, demo.stdout[-3000:]
    learning = re.search(r"while learning \(the history, 400 of 400 lines scored\): precision .*recall \S+ "
                         r"\((\d+) of (\d+) injected anomalies", demo.stdout)
    assert learning and int(learning.group(2)) > 0, demo.stdout[-3000:]  # the history has anomalies too
    final = re.search(r"final tally: 150 lines sent, injected (\d+) anomalies: (\d+) detected, (\d+) missed, "
                      r"0 not scored yet \| (\d+) alerts, (\d+) false \| 150 lines scored", demo.stdout)
    assert final, demo.stdout[-3000:]
    injected, detected, missed, alerts = (int(final.group(i)) for i in (1, 2, 3, 4))
    assert detected + missed == injected
    live = demo.stdout.split("Live from here:", 1)[1]
    assert len(re.findall(r"^(?:INJECTED|false) ", live, re.MULTILINE)) == alerts  # each live alert shown once
    assert read.start() < demo.stdout.index("final tally")
    assert "metrics: http://127.0.0.1:" in demo.stdout
    # it cleaned up after itself: the worker stopped gracefully, and neither it nor the broker is left
    assert "worker stopped (exit code 0)" in demo.stdout
    worker_pid = int(re.search(r"worker started \(pid (\d+)\)", demo.stdout).group(1))
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)
    broker_port = int(re.search(r"broker on 127\.0\.0\.1:(\d+)", demo.stdout).group(1))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", broker_port), timeout=2).close()
    # the worker learned in the demo's own directory, not in the default one every run on the machine
    # shares (whose saved thresholds a later demo would start from), and that directory is gone
    assert not list(temp.glob("logstream-worker-*")) and not list(temp.glob("logstream-demo-*"))
