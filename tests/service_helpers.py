"""Shared pieces of the service tests: a scenario (topics, group, worker environment), a topic
reader on kafka-python (an independent client, reading by partition assignment), a webhook receiver
on aiohttp that verifies Standard Webhooks signatures, and the model directory (or a skip)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

with warnings.catch_warnings():  # kafka-python loads its protocol schemas with a deprecated importlib API
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: F401 (KafkaProducer: for tests)

from logstream.alerts import Alert
from logstream.alerts.signing import SignatureError, verify
from logstream.config import KafkaSettings, Settings
from logstream.service.broker import free_port
from logstream.service.topics import ensure_topics
from logstream.service.worker_process import WorkerProcess

PARTITIONS = 4
RESULT_TIMEOUT_S = 240.0  # a worker loads torch and the model and joins its group first: generous


def metric(port: int, name: str) -> float:
    """A sample of a worker's Prometheus endpoint (0 while the endpoint is not up yet or lacks it)."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    except OSError:
        return 0.0
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def readiness(port: int) -> int | None:
    """The HTTP status of a worker's ``/readyz`` (200 ready, 503 not), or None while nothing answers."""
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5).status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def model_dir_or_skip() -> Path:
    """settings.model.path; skips when there is no model there yet (no directory, or an empty one while
    the default model is being trained). A directory with a broken model fails the tests instead."""
    path = Settings().model.path
    if not path.is_dir() or not any(path.iterdir()):
        pytest.skip(f"no model at {path} (model.path): train the default model (pipelines/default_model.py) "
                    "or point LOGSTREAM_MODEL__PATH at a checkpoint")
    return path


@dataclass
class Scenario:
    """One isolated pipeline on the shared broker: its own topics and consumer group."""

    bootstrap: str
    workdir: Path
    settings: dict[str, str] = field(default_factory=dict)  # extra LOGSTREAM_ variables
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    metrics_port: int = field(default_factory=free_port)  # the latest worker's /metrics, /readyz, /feedback
    _started: list = field(default_factory=list, repr=False)

    @property
    def input_topic(self) -> str:
        return f"lines-{self.tag}"

    @property
    def alerts_topic(self) -> str:
        return f"alerts-{self.tag}"

    @property
    def dead_letter_topic(self) -> str:
        return f"dead-{self.tag}"

    @property
    def scores_topic(self) -> str:
        return f"scores-{self.tag}"

    @property
    def feedback_topic(self) -> str:
        return f"feedback-{self.tag}"

    @property
    def kafka(self) -> KafkaSettings:
        return KafkaSettings(bootstrap_servers=self.bootstrap, input_topic=self.input_topic,
                             alerts_topic=self.alerts_topic, dead_letter_topic=self.dead_letter_topic,
                             scores_topic=self.scores_topic, feedback_topic=self.feedback_topic,
                             partitions=PARTITIONS,
                             consumer_group=f"group-{self.tag}")

    def create_topics(self) -> None:
        kafka = self.kafka
        asyncio.run(ensure_topics(kafka, [kafka.input_topic, kafka.alerts_topic, kafka.dead_letter_topic,
                                          kafka.scores_topic, kafka.feedback_topic]))

    def env(self) -> dict[str, str]:
        kafka = self.kafka
        return {
            "LOGSTREAM_KAFKA__INPUT_TOPIC": kafka.input_topic,
            "LOGSTREAM_KAFKA__ALERTS_TOPIC": kafka.alerts_topic,
            "LOGSTREAM_KAFKA__DEAD_LETTER_TOPIC": kafka.dead_letter_topic,
            "LOGSTREAM_KAFKA__SCORES_TOPIC": kafka.scores_topic,
            "LOGSTREAM_KAFKA__FEEDBACK_TOPIC": kafka.feedback_topic,
            "LOGSTREAM_KAFKA__CONSUMER_GROUP": kafka.consumer_group,
            "LOGSTREAM_KAFKA__PARTITIONS": str(PARTITIONS),
            "LOGSTREAM_MODEL__THREADS": "1",  # the test machine is small and shared
            "LOGSTREAM_WORKER__SESSION_TIMEOUT_S": "6",  # the bundled broker joins groups in half of it
            "LOGSTREAM_WORKER__DATA_DIR": str(self.workdir / f"faust-{self.tag}"),
            "LOGSTREAM_METRICS__PORT": str(self.metrics_port),
            **self.settings,
        }

    def worker(self, name: str = "worker", **env: str) -> WorkerProcess:
        """Start a worker; each gets a metrics port of its own (``metrics_port`` is the latest one's)."""
        if self._started:
            self.metrics_port = free_port()
        self._started.append(name)
        return WorkerProcess(self.bootstrap, self.workdir / f"{name}-{self.tag}.log",
                             env={**self.env(), **env}).start()


class TopicReader:
    """Every partition of some topics from the beginning, with kafka-python, by assignment."""

    def __init__(self, bootstrap: str, topics: list[str]):
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                      auto_offset_reset="earliest")
        self.consumer.assign([TopicPartition(t, p) for t in topics for p in range(PARTITIONS)])
        self.consumer.seek_to_beginning()
        self.records: dict[str, list] = {t: [] for t in topics}

    def poll(self) -> None:
        for tp, records in self.consumer.poll(timeout_ms=300).items():
            self.records[tp.topic] += records

    def wait_for(self, condition: Callable[[], bool], what: str, timeout_s: float = RESULT_TIMEOUT_S,
                 workers: list[WorkerProcess] = ()) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            for w in workers:
                if not w.alive:
                    pytest.fail(f"worker exited ({w.returncode}) before {what}; log:\n{w.log_tail()}")
            if time.monotonic() > deadline:
                logs = "\n".join(w.log_tail() for w in workers)
                pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}\n{logs}")
            self.poll()

    def values(self, topic: str) -> list[dict]:
        return [json.loads(r.value) for r in self.records[topic]]

    def close(self) -> None:
        self.consumer.close()


class WebhookReceiver:
    """A real HTTP endpoint (aiohttp, own thread and loop) that accepts only correctly signed alerts."""

    def __init__(self, secret: str):
        self.secret = secret
        self.alerts: list[Alert] = []
        self.webhook_ids: list[str] = []
        self.rejected: list[str] = []
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/logstream"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            verify(self.secret, request.headers, body)
        except SignatureError as exc:
            self.rejected.append(str(exc))
            return web.Response(status=401, text=str(exc))
        self.alerts.append(Alert.from_bytes(body))
        self.webhook_ids.append(request.headers["webhook-id"])
        return web.Response(status=204)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/hooks/logstream", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def start(self) -> "WebhookReceiver":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
