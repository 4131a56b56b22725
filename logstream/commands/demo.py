"""``logstream demo``: the whole pipeline on this machine, alerts shown live with a running tally.

Starts the embedded broker (unless ``kafka.bootstrap_servers`` is set), the worker (a child
process, ``logstream worker``), the synthetic producer (labeled injected anomalies, side file of
labels) and a follower of the alerts and scores topics that prints each alert as it arrives and a
tally: anomalies injected so far, detected, missed, false alerts. ``--lines N`` stops once N lines
were produced and scored, ``--duration S`` after S seconds; Ctrl-C stops everything cleanly.

First comes the services' history (``--history N`` lines from before the demo, with anomalies at the
same rate), sent as fast as the worker takes them, as ``logstream tail`` reads the lines a file
already holds: a source is judged against its own normal lines, and a service just pointed at logs
starts from what they hold, not from nothing. Its alerts are tallied apart and not printed; the
live part is what a user of a running service sees. ``--history 0`` shows the cold start instead
(measured on these logs: precision 29%, recall 39% over the first 3,000 lines, most false alerts in
each source's first thousand lines).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import socket
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..service.tally import DetectionTally

DEFAULT_SCORES_TOPIC = "logstream-scores"
STATUS_EVERY_S = 10.0
DEFAULT_HISTORY = 7000  # about a thousand lines per stream of the default services
SYNTH_LINES_PER_S = 50  # the synthetic services' own pace (their time stamps): where the history starts


def add_arguments(p):
    p.add_argument("--lines", type=int, metavar="N", help="produce N lines, stop once all are scored")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds of the live part")
    p.add_argument("--rate", type=float, default=50.0, metavar="LINES_PER_S",
                   help="lines per second (default: 50)")
    p.add_argument("--anomaly-rate", type=float, default=0.02, metavar="R",
                   help="fraction of lines that are injected anomalies (default: 0.02)")
    p.add_argument("--history", type=int, default=DEFAULT_HISTORY, metavar="N",
                   help="lines of the services' past logs sent first, as fast as the worker takes them (as "
                        "`logstream tail` reads what a file already holds): the worker learns the sources from "
                        "them; their alerts are counted apart, not shown (default: %(default)s; 0: start cold)")
    p.add_argument("--seed", type=int, default=0, help="synthetic logs seed (default: 0)")
    p.add_argument("--start", type=datetime.fromisoformat, metavar="ISO_TIME",
                   help="time stamp of the first synthetic line (default: now); the model never reads it, "
                        "so any month gives the same alerts")
    p.add_argument("--drain-timeout", type=float, default=300.0, metavar="S",
                   help="with --lines: longest wait, after the last line was sent, for the worker to score "
                        "them all; also for the history (default: 300)")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def run(args, settings) -> int:
    if args.lines is not None and args.lines < 1:
        raise ValueError("--lines must be at least 1")
    if args.duration is not None and args.duration <= 0:
        raise ValueError("--duration must be positive")
    if args.history < 0:
        raise ValueError("--history must not be negative")
    if not settings.model.path.is_dir():
        raise FileNotFoundError(f"no model at {settings.model.path}: set model.path (LOGSTREAM_MODEL__PATH) "
                                "to a checkpoint made by `logstream train`")
    return asyncio.run(Demo(args, settings).run())


class Demo:
    def __init__(self, args, settings):
        from ..service.tally import DetectionTally

        self.args = args
        self.settings = settings
        self.kafka = settings.kafka.model_copy(
            update={"scores_topic": settings.kafka.scores_topic or DEFAULT_SCORES_TOPIC})
        self.tally = DetectionTally()  # the live part
        self.history = DetectionTally()  # the services' past lines, sent first
        self.history_ends: dict[int, int] | None = None if args.history else {}  # partition -> first live offset
        self.history_read = asyncio.Event()  # the live lines wait for the history to be scored
        self.stop = asyncio.Event()
        self.interrupted = False
        self.workdir = Path(tempfile.mkdtemp(prefix="logstream-demo-"))
        self.labels_path = self.workdir / "labels.jsonl"
        self.history_labels_path = self.workdir / "history-labels.jsonl"
        self.broker = None
        self.worker = None
        self.produced = None  # ProducedLogs once the producer finished
        self.history_produced = None  # the same for the history
        self.live_status = sys.stdout.isatty()  # a status line refreshed in place, else periodic lines

    def say(self, text: str) -> None:
        print(text, flush=True)

    async def run(self) -> int:
        from ..service.topics import KafkaUnavailable

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._interrupt)
        code = 1
        try:
            code = await self._run()
        except KafkaUnavailable as exc:
            print(f"logstream demo: error: {exc}", file=sys.stderr)
            code = 2
        finally:
            await self._shutdown(keep_files=code not in (0, 130))
        return code

    def _interrupt(self) -> None:
        if not self.interrupted:
            self.say("\nstopping...")
        self.interrupted = True
        self.stop.set()

    async def _run(self) -> int:
        from ..service.broker import EmbeddedBroker
        from ..service.follow import TopicFollower
        from ..service.topics import ensure_topics
        from ..service.worker import topic_names
        from ..service.worker_process import WorkerProcess

        if not self.kafka.bootstrap_servers:
            self.broker = EmbeddedBroker().start()
            self.kafka = self.kafka.model_copy(update={"bootstrap_servers": self.broker.bootstrap_servers})
            self.say(f"embedded Kafka-compatible broker on {self.kafka.bootstrap_servers}")
        else:
            self.say(f"Kafka at {self.kafka.bootstrap_servers}")
        await ensure_topics(self.kafka, topic_names(self.settings.model_copy(update={"kafka": self.kafka})))

        extra_args = []
        metrics_port = self.settings.metrics.port
        if metrics_port is not None:
            if not _port_free(metrics_port):
                from ..service.broker import free_port
                metrics_port = free_port()
            extra_args = ["--metrics-port", str(metrics_port)]
        env = {"LOGSTREAM_KAFKA__SCORES_TOPIC": self.kafka.scores_topic}
        if self.settings.worker.data_dir is None:  # the default is per consumer group, shared by every run on
            env["LOGSTREAM_WORKER__DATA_DIR"] = str(self.workdir / "worker")  # the machine: a demo starts afresh
        self.worker = WorkerProcess(
            self.kafka.bootstrap_servers, self.workdir / "worker.log", config=self.args.config,
            env=env, extra_args=extra_args).start()
        self.say(f"worker started (pid {self.worker.process.pid}); its log: {self.worker.log_path}")
        if metrics_port is not None:
            self.say(f"metrics: http://127.0.0.1:{metrics_port}/metrics")
        self.say(f"labels of injected anomalies: {self.labels_path} (removed at a clean exit)")
        self.say("waiting for the worker to load the model and join its group...\n")

        async with TopicFollower(self.kafka, [self.kafka.alerts_topic, self.kafka.scores_topic]) as follower:
            producer = asyncio.create_task(self._produce())
            try:
                return await self._follow(follower, producer)
            finally:
                producer.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await producer

    async def _produce(self) -> None:
        from ..synth import SyntheticLogs

        if self.args.history:  # the services' past, up to now (or --start)
            before = (self.args.start or datetime.now(UTC)) - timedelta(seconds=self.args.history / SYNTH_LINES_PER_S)
            past = SyntheticLogs(seed=self.args.seed + 1, anomaly_rate=self.args.anomaly_rate, start_time=before)
            self.history_produced = await past.produce_to_kafka(self.kafka, self.kafka.input_topic,
                                                                self.args.history, 0, self.history_labels_path)
            self.history_ends = self.history_produced.ends
            await self.history_read.wait()
        logs = SyntheticLogs(seed=self.args.seed, anomaly_rate=self.args.anomaly_rate,
                             start_time=self.args.start or datetime.now(UTC))
        self.produced = await logs.produce_to_kafka(self.kafka, self.kafka.input_topic,
                                                    self.args.lines, self.args.rate, self.labels_path)

    def _tally_of(self, partition: int | None, offset: int | None) -> DetectionTally:
        """The history's tally for a line the history sent, else the live one's. Live lines are sent only
        once the history is in, so until its ends are known every line is the history's."""
        if self.history_ends is None:
            return self.history
        if offset is not None and offset < self.history_ends.get(partition, 0):
            return self.history
        return self.tally

    async def _follow(self, follower, producer: asyncio.Task) -> int:
        from pydantic import ValidationError

        from ..alerts import Alert
        from ..service.records import ScoreRecord

        started = time.monotonic()
        live_since = None if self.args.history else started
        history_deadline = None  # the longest wait for the history to be scored, once it is all sent
        drain_deadline = None
        last_status = started
        first_score = True
        labels = _LabelsReader(self.labels_path)
        history_labels = _LabelsReader(self.history_labels_path)

        def read_labels():
            for label in history_labels.read_new():
                self.history.add_label(label)
            for label in labels.read_new():
                self.tally.add_label(label)

        while not self.stop.is_set():
            read_labels()
            for record in await follower.poll(0.5):
                try:
                    if record.topic == self.kafka.scores_topic:
                        score = ScoreRecord.model_validate_json(record.value or b"")
                        self._tally_of(score.partition, score.offset).add_score(score)
                    else:
                        alert = Alert.from_bytes(record.value or b"")
                except ValidationError as exc:  # a stranger's record on a shared topic
                    print(f"skipping an unreadable record on {record.topic}: {exc.errors()[0]['msg']}",
                          file=sys.stderr, flush=True)
                    continue
                if record.topic == self.kafka.scores_topic:
                    if first_score:
                        first_score = False
                        self._print(f"worker is scoring ({time.monotonic() - started:.0f} s after start)"
                                    + (f"; first the services' last {self.args.history:,} lines, as a tailer "
                                       "reads what their files hold (alerts counted, not shown)" if live_since is None
                                       else "") + "\n")
                    continue
                tally = self._tally_of(alert.partition, alert.offset)
                new = tally.add_alert(alert)
                read_labels()  # the label of this very line may have just been written
                if new and tally is self.tally:  # one line per alert; count updates are in the status
                    injected = self.tally.anomaly_of(alert, self.kafka.input_topic) is not None
                    self._print(compact_alert(alert, injected))
            now = time.monotonic()
            if live_since is None:
                past = self.history.summary(self.kafka.input_topic)
                if self.history_ends is not None and history_deadline is None:
                    history_deadline = now + self.args.drain_timeout
                if self.history_ends is not None and past.scored >= self.history_produced.lines:
                    live_since = now
                    self._print(f"history read: {past.scored:,} lines in {now - started:.0f} s; {past.alerts} alerts "
                                f"in it ({past.verdict()}). Live from here:\n")
                    self.history_read.set()
                elif history_deadline is not None and now > history_deadline:
                    live_since = now
                    self._print(f"history: {past.scored:,} of {self.history_produced.lines:,} lines scored after "
                                f"{self.args.drain_timeout:g} s; going live without the rest\n")
                    self.history_read.set()
                status = f"[{now - started:.0f} s] history: {past.scored:,} of {self.args.history:,} lines scored"
            else:
                status = f"[{now - started:.0f} s] {self.tally.summary(self.kafka.input_topic)}"
            if self.live_status:
                self._status(status)
            elif now - last_status >= STATUS_EVERY_S:
                last_status = now
                self.say(status)
            if not self.worker.alive:
                self.say(f"the worker exited with code {self.worker.returncode}; its log ends with:\n"
                         f"{self.worker.log_tail()}")
                return 1
            if self.args.duration is not None and live_since is not None and now - live_since >= self.args.duration:
                break
            if producer.done():
                if producer.exception() is not None:
                    raise producer.exception()
                if drain_deadline is None:
                    drain_deadline = now + self.args.drain_timeout
                if self.produced is not None and self.tally.scored >= self.produced.lines:
                    break
                if now > drain_deadline:
                    self.say(f"gave up waiting: {self.tally.scored} of {self.produced.lines} lines scored "
                             f"after {self.args.drain_timeout:g} s")
                    self._final()
                    return 1
        read_labels()
        self._final()
        return 130 if self.interrupted else 0

    def _final(self) -> None:
        sent = f"{self.produced.lines} lines sent, " if self.produced else ""
        summary = self.tally.summary(self.kafka.input_topic)
        self._status("")
        self.say(f"\nfinal tally: {sent}{summary}")
        self.say(f"summary: {summary.verdict()}")
        if self.args.history:
            past = self.history.summary(self.kafka.input_topic)
            self.say(f"while learning (the history, {past.scored:,} of {self.args.history:,} lines scored): "
                     f"{past.verdict()}")

    def _status(self, text: str) -> None:
        """The status line, rewritten in place on a terminal."""
        if self.live_status:
            print(f"\r\x1b[K{text}", end="", flush=True)

    def _print(self, text: str) -> None:
        """A line above the status line (which is drawn again on the next poll)."""
        if self.live_status:
            print("\r\x1b[K", end="")
        self.say(text)

    async def _shutdown(self, keep_files: bool) -> None:
        loop = asyncio.get_running_loop()
        if self.worker is not None:
            code = await loop.run_in_executor(None, self.worker.stop)
            self.say(f"worker stopped (exit code {code})")
        if self.broker is not None:
            self.broker.stop()
            self.say("broker stopped")
        if keep_files:  # the worker's log and the labels, to see what went wrong
            self.say(f"the worker's log and the labels are kept in {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def compact_alert(alert, injected: bool) -> str:
    """One line per alert: whether it names an injected line, where, how far over which threshold, the line."""
    mark = "INJECTED " if injected else "false    "
    how = f" {alert.threshold_how}" if alert.threshold_how else ""
    threshold = "  -  " if alert.threshold is None else f"{alert.threshold:5.2f}"
    return (f"{mark}{alert.time:%H:%M:%S} {alert.stream:<12} {alert.score:5.2f} > {threshold}{how:<15} "
            f"{alert.line[:110]}")


class _LabelsReader:
    """Follows the producer's labels file (it writes whole lines, one per acknowledged anomaly)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = b""

    def read_new(self) -> list[dict]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        *complete, self.partial = data.split(b"\n")
        return [json.loads(line) for line in complete if line.strip()]
