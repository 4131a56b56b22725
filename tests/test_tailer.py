"""``logstream tail`` against a real Kafka-compatible broker (Tansu), read back with aiokafka.

Every test writes real files and reads the input topic back; the tailer runs in-process
(``FileTailer``) or as the ``logstream tail`` command in a subprocess where a process has to die.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from logstream.config import KafkaSettings, TailSettings
from logstream.service.broker import EmbeddedBroker, free_port
from logstream.service.envelope import LogEnvelope
from logstream.service.tailer import FileTailer
from logstream.service.topics import ensure_topics

PARTITIONS = 4
TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker() as b:
        yield b


# --- helpers -------------------------------------------------------------------------------------

@dataclass
class Received:
    key: str
    line: str
    source: str | None
    truncated: bool
    partition: int
    offset: int


def kafka_settings(bootstrap: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, input_topic=f"lines-{uuid.uuid4().hex[:8]}",
                         partitions=PARTITIONS)


def tail_settings(tmp_path: Path, **overrides) -> TailSettings:
    fast = {"checkpoint_path": tmp_path / "checkpoint.json", "poll_interval_s": 0.02,
            "checkpoint_interval_s": 0.05, "rotate_wait_s": 0.3}
    return TailSettings(**{**fast, **overrides})


class TopicReader:
    """Reads every partition of a topic from the beginning, accumulating ``records``."""

    def __init__(self, kafka: KafkaSettings):
        self.kafka = kafka
        self.records: list[Received] = []

    async def __aenter__(self):
        await ensure_topics(self.kafka, [self.kafka.input_topic])
        self.consumer = AIOKafkaConsumer(bootstrap_servers=self.kafka.bootstrap_servers,
                                         auto_offset_reset="earliest", enable_auto_commit=False,
                                         fetch_max_wait_ms=50)
        await self.consumer.start()
        self.consumer.assign([TopicPartition(self.kafka.input_topic, p) for p in range(PARTITIONS)])
        return self

    async def __aexit__(self, *exc):
        await self.consumer.stop()

    @property
    def lines(self) -> list[str]:
        return [r.line for r in self.records]

    async def poll(self, timeout_ms: int = 100) -> None:
        batch = await self.consumer.getmany(timeout_ms=timeout_ms)
        for tp in sorted(batch):
            for message in batch[tp]:
                envelope = LogEnvelope.model_validate_json(message.value)
                self.records.append(Received(message.key.decode(), envelope.line, envelope.source,
                                             envelope.truncated, tp.partition, message.offset))

    async def read_to_end(self) -> set[str]:
        """The lines in the topic right now (read up to each partition's end offset as of this call)."""
        partitions = [TopicPartition(self.kafka.input_topic, p) for p in range(PARTITIONS)]
        ends = await self.consumer.end_offsets(partitions)
        for tp in partitions:
            while await self.consumer.position(tp) < ends[tp]:
                await self.poll(50)
        topic = self.kafka.input_topic
        return {r.line for r in self.records if r.offset < ends[TopicPartition(topic, r.partition)]}

    async def wait_for(self, condition, timeout_s: float = TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition(self.lines):
            assert time.monotonic() < deadline, f"timed out; received {len(self.records)}: {self.lines[-5:]}"
            await self.poll()

    async def wait_for_lines(self, expected, timeout_s: float = TIMEOUT_S) -> None:
        expected = set(expected)
        await self.wait_for(lambda lines: expected <= set(lines), timeout_s)

    async def settle(self, seconds: float = 0.3) -> None:
        """Read whatever arrives in the next ``seconds`` (to show something did NOT arrive)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await self.poll(50)


class RunningTailer:
    """A FileTailer running as a task of the current event loop until the block ends."""

    def __init__(self, patterns, tail: TailSettings, kafka: KafkaSettings):
        self.tailer = FileTailer([str(p) for p in patterns], tail, kafka)
        self.stop = asyncio.Event()

    async def __aenter__(self):
        self.task = asyncio.create_task(self.tailer.run(self.stop))
        return self.tailer

    async def __aexit__(self, exc_type, *exc):
        self.stop.set()
        await asyncio.wait_for(self.task, TIMEOUT_S)


def append(path: Path, *lines: str) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


def append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def checkpoint_entries(path: Path) -> list[dict]:
    """The checkpoint's entries; json.loads fails the test if a save left it half written."""
    return json.loads(path.read_text())["files"] if path.exists() else []


def checkpoint_offset(checkpoint: Path, log_file: Path) -> int | None:
    ino = os.stat(log_file).st_ino
    return next((e["offset"] for e in checkpoint_entries(checkpoint) if e["ino"] == ino), None)


def tail_command(paths, checkpoint: Path, bootstrap: str, topic: str, *extra: str) -> tuple[list[str], dict]:
    cmd = [sys.executable, "-m", "logstream.cli", "tail", *map(str, paths), "--checkpoint", str(checkpoint),
           "--bootstrap-servers", bootstrap, *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
    env.update(LOGSTREAM_KAFKA__INPUT_TOPIC=topic, LOGSTREAM_KAFKA__PARTITIONS=str(PARTITIONS),
               LOGSTREAM_TAIL__POLL_INTERVAL_S="0.02", LOGSTREAM_TAIL__CHECKPOINT_INTERVAL_S="0.05",
               LOGSTREAM_TAIL__METRICS_PORT=str(free_port()))
    return cmd, env


def tailer_metrics(port: int) -> dict[str, float]:
    import urllib.request

    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return {}
    return {name: float(value) for name, value in
            (line.split() for line in text.splitlines() if line and not line.startswith("#"))}


def run_async(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 50))


# --- topics --------------------------------------------------------------------------------------

def test_ensure_topics_creates_the_three_topics_with_the_configured_partitions(broker):
    suffix = uuid.uuid4().hex[:8]
    kafka = KafkaSettings(bootstrap_servers=broker.bootstrap_servers, input_topic=f"in-{suffix}",
                          alerts_topic=f"alerts-{suffix}", dead_letter_topic=f"dead-{suffix}", partitions=3)

    async def scenario():
        first = await ensure_topics(kafka)
        again = await ensure_topics(kafka)  # existing topics are fine
        return first, again

    first, again = run_async(scenario())
    expected = {f"in-{suffix}": 3, f"alerts-{suffix}": 3, f"dead-{suffix}": 3}
    assert first == expected and again == expected


# --- reading -------------------------------------------------------------------------------------

def test_follows_a_growing_file_in_order_keyed_by_path(broker, tmp_path):
    log_file = tmp_path / "app.log"
    append(log_file, "first", "second")
    kafka = kafka_settings(broker.bootstrap_servers)

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail_settings(tmp_path), kafka):
            await reader.wait_for_lines(["first", "second"])
            for batch in range(5):
                append(log_file, *(f"batch {batch} line {i}" for i in range(10)))
                await asyncio.sleep(0.03)
            expected = ["first", "second"] + [f"batch {b} line {i}" for b in range(5) for i in range(10)]
            await reader.wait_for_lines(expected)
        return reader, expected

    reader, expected = run_async(scenario())
    assert reader.lines == expected  # one file, one key, one partition: in order, once each
    assert {r.key for r in reader.records} == {str(log_file)}
    assert {r.source for r in reader.records} == {str(log_file)}
    assert checkpoint_offset(tmp_path / "checkpoint.json", log_file) == log_file.stat().st_size


def test_partial_last_line_waits_for_its_newline(broker, tmp_path):
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail_settings(tmp_path), kafka):
            append_bytes(log_file, b"complete\nhalf a li")
            await reader.wait_for_lines(["complete"])
            await reader.settle(0.3)
            held_back = list(reader.lines)
            # the checkpoint must not cover the partial line either: a restart has to read it again
            partial_checkpoint = checkpoint_offset(tmp_path / "checkpoint.json", log_file)
            append_bytes(log_file, b"ne, now complete\n")
            await reader.wait_for_lines(["half a line, now complete"])
        return reader, held_back, partial_checkpoint

    reader, held_back, partial_checkpoint = run_async(scenario())
    assert held_back == ["complete"]
    assert partial_checkpoint == len(b"complete\n")
    assert reader.lines == ["complete", "half a line, now complete"]


def test_long_lines_are_capped_and_marked_and_their_rest_skipped(broker, tmp_path):
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)
    tail = tail_settings(tmp_path, max_line_bytes=64)

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail, kafka):
            append(log_file, "A" * 1000, "short")
            append(log_file, "é" * 100)           # 200 bytes: cut between characters, never inside one
            append(log_file, "x" * 63 + "é" * 5)  # the 64th byte is the first half of an é
            append_bytes(log_file, b"B" * 40)     # a long line arriving in pieces, across polls
            await asyncio.sleep(0.1)
            append_bytes(log_file, b"B" * 2000)
            await asyncio.sleep(0.1)
            append(log_file, "B" * 100, "after")
            await reader.wait_for_lines(["after"])
        return reader

    reader = run_async(scenario())
    assert [(r.line, r.truncated) for r in reader.records] == [
        ("A" * 64, True), ("short", False), ("é" * 32, True), ("x" * 63, True), ("B" * 64, True),
        ("after", False)]


def test_invalid_utf8_is_replaced_and_still_delivered(broker, tmp_path):
    log_file = tmp_path / "app.log"
    append_bytes(log_file, b"ok \xff\xfe bad \xc3\n" + "caf\u00e9\n".encode("latin-1") + b"next\n")
    kafka = kafka_settings(broker.bootstrap_servers)

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail_settings(tmp_path), kafka):
            await reader.wait_for_lines(["next"])
        return reader

    assert run_async(scenario()).lines == ["ok \ufffd\ufffd bad \ufffd", "caf\ufffd", "next"]


def test_start_at_end_skips_old_lines_but_new_files_are_read_from_their_start(broker, tmp_path):
    old_file, new_file = tmp_path / "a.log", tmp_path / "b.log"
    append(old_file, "old 1", "old 2")
    kafka = kafka_settings(broker.bootstrap_servers)
    tail = tail_settings(tmp_path, start_at="end")

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([tmp_path / "*.log"], tail, kafka):
            while checkpoint_offset(tmp_path / "checkpoint.json", old_file) is None:  # first scan done
                await asyncio.sleep(0.01)
            append(old_file, "appended")
            append(new_file, "new file line 1", "new file line 2")  # the glob picks it up on a later poll
            await reader.wait_for_lines(["appended", "new file line 1", "new file line 2"])
            await reader.settle(0.2)
        return reader

    reader = run_async(scenario())
    assert sorted(reader.lines) == ["appended", "new file line 1", "new file line 2"]
    assert {r.key for r in reader.records} == {str(old_file), str(new_file)}


# --- rotation and truncation ---------------------------------------------------------------------

def test_rotation_by_rename_drains_the_old_file_then_reads_the_new_one(broker, tmp_path):
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)
    before = [f"before {i}" for i in range(50)]
    late = [f"late {i}" for i in range(5)]
    after = [f"after {i}" for i in range(50)]

    async def scenario(writer):
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail_settings(tmp_path), kafka):
            writer.write("".join(f"{line}\n" for line in before[:10]))
            writer.flush()
            await reader.wait_for_lines(before[:10])
            writer.write("".join(f"{line}\n" for line in before[10:]))
            writer.flush()
            os.rename(log_file, tmp_path / "app.log.1")
            # the application has not reopened yet: it still writes to the renamed file
            writer.write("".join(f"{line}\n" for line in late) + "unterminated last line")
            writer.close()
            append(log_file, *after)
            await reader.wait_for_lines(before + late + after + ["unterminated last line"])
        return reader

    with open(log_file, "a") as writer:  # the application's log handle
        reader = run_async(scenario(writer))
    assert sorted(reader.lines) == sorted(before + late + after + ["unterminated last line"])
    # same stream (the watched path) before and after the rotation; the old file's complete lines
    # went out before the new file's
    assert {r.key for r in reader.records} == {str(log_file)}
    assert reader.lines[:len(before) + len(late)] == before + late
    entries = checkpoint_entries(tmp_path / "checkpoint.json")
    assert sorted(e["offset"] for e in entries) == sorted(
        [(tmp_path / "app.log.1").stat().st_size, log_file.stat().st_size])


def test_copytruncate_reads_the_file_again_from_the_start(broker, tmp_path):
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)
    first = [f"first generation line {i}" for i in range(50)]
    second = [f"second {i}" for i in range(5)]  # shorter than the saved offset
    third = [f"third generation, a longer line this time {i}" for i in range(100)]  # longer than it

    def copytruncate():
        shutil.copy(log_file, tmp_path / "app.log.1")
        with open(log_file, "r+") as f:
            f.truncate(0)

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail_settings(tmp_path), kafka):
            append(log_file, *first)
            await reader.wait_for_lines(first)
            copytruncate()
            append(log_file, *second)
            await reader.wait_for_lines(second)
            copytruncate()
            append(log_file, *third)  # grows past the old offset at once: found by the fingerprint
            await reader.wait_for_lines(third)
        return reader

    reader = run_async(scenario())
    assert reader.lines == first + second + third
    assert checkpoint_offset(tmp_path / "checkpoint.json", log_file) == log_file.stat().st_size


def test_copytruncate_while_alive_loses_no_unread_line_and_its_copy_is_not_sent_again(broker, tmp_path):
    """logrotate's copytruncate with lines the tailer had not read yet: they are read from the copy
    (then the file again from 0), and the copy, matched by the glob too, is not a second stream."""
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)
    first = [f"first generation line {i}, long enough for the first bytes to tell" for i in range(50)]
    unread = [f"written just before the copy {i}" for i in range(30)]
    after = [f"after the truncation {i}" for i in range(5)]

    async def scenario():
        tail = tail_settings(tmp_path, poll_interval_s=2.0)  # the tailer sleeps while the rotation runs
        async with TopicReader(kafka) as reader, RunningTailer([f"{tmp_path}/app.log*"], tail, kafka):
            append(log_file, *first)
            await reader.wait_for_lines(first)
            append(log_file, *unread)
            shutil.copy(log_file, tmp_path / "app.log.1")
            with open(log_file, "r+") as f:
                f.truncate(0)
            append(log_file, *after)
            await reader.wait_for_lines(first + unread + after)
            await reader.settle(5.0)  # two more polls: nothing of the copy comes again
        return reader

    reader = run_async(scenario())
    assert reader.lines == first + unread + after
    assert {r.key for r in reader.records} == {str(log_file)}


def test_a_file_rewritten_while_the_tailer_was_down_is_read_from_its_start(broker, tmp_path):
    """Same inode, at least as long as the saved offset, other first bytes: the fingerprint tells."""
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)
    tail = tail_settings(tmp_path)
    append(log_file, "one", "two")

    async def scenario():
        async with TopicReader(kafka) as reader:
            await FileTailer([str(log_file)], tail, kafka).run(once=True)
            inode = log_file.stat().st_ino
            log_file.write_text("rewritten 1\nrewritten 2\n")  # in place: same inode
            assert log_file.stat().st_ino == inode
            await FileTailer([str(log_file)], tail, kafka).run(once=True)
            await reader.wait_for_lines(["rewritten 1", "rewritten 2"])
            await reader.settle(0.2)
        return reader

    assert run_async(scenario()).lines == ["one", "two", "rewritten 1", "rewritten 2"]


def test_checkpoints_of_files_gone_for_good_are_forgotten(broker, tmp_path):
    kept, deleted = tmp_path / "kept.log", tmp_path / "deleted.log"
    append(kept, "kept")
    append(deleted, "deleted")
    deleted_ino = deleted.stat().st_ino
    kafka = kafka_settings(broker.bootstrap_servers)
    tail = tail_settings(tmp_path, forget_after_s=0.5, rotate_wait_s=0.05)
    checkpoint = tmp_path / "checkpoint.json"

    async def scenario():
        async with TopicReader(kafka) as reader, RunningTailer([tmp_path / "*.log"], tail, kafka):
            await reader.wait_for_lines(["kept", "deleted"])
            await asyncio.sleep(0.2)
            remembered = {e["ino"] for e in checkpoint_entries(checkpoint)}
            deleted.unlink()
            deadline = time.monotonic() + 5
            while deleted_ino in {e["ino"] for e in checkpoint_entries(checkpoint)}:
                assert time.monotonic() < deadline, "the deleted file's checkpoint was never dropped"
                await asyncio.sleep(0.05)
            # the file still there is remembered all along, however long it stays quiet
            await asyncio.sleep(0.6)
            return remembered, {e["ino"] for e in checkpoint_entries(checkpoint)}

    remembered, at_end = run_async(scenario())
    assert remembered == {kept.stat().st_ino, deleted_ino}
    assert at_end == {kept.stat().st_ino}


# --- at least once -------------------------------------------------------------------------------

def test_checkpoint_never_runs_ahead_of_kafka(broker, tmp_path):
    """Whenever the checkpoint says offset N, every line before N is already in the topic."""
    log_file = tmp_path / "app.log"
    checkpoint = tmp_path / "checkpoint.json"
    kafka = kafka_settings(broker.bootstrap_servers)

    async def scenario():
        samples = []
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail_settings(tmp_path), kafka):
            for batch in range(40):
                append(log_file, *(f"line {batch}.{i}" for i in range(50)))
                await asyncio.sleep(0.01)
                offset = checkpoint_offset(checkpoint, log_file)
                if offset:
                    covered = set(log_file.read_bytes()[:offset].decode().splitlines())
                    in_kafka = await reader.read_to_end()
                    assert covered <= in_kafka, f"checkpoint at {offset} covers lines Kafka does not have"
                    samples.append(offset)
            await reader.wait_for_lines(log_file.read_text().splitlines())
        return samples

    samples = run_async(scenario())
    assert len(samples) > 5 and samples == sorted(samples)
    assert checkpoint_offset(checkpoint, log_file) == log_file.stat().st_size


class CheckpointWatcher(threading.Thread):
    """Parses the checkpoint file over and over while a tailer saves it: every read must be valid JSON."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.reads, self.errors = path, 0, []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                checkpoint_entries(self.path)
                self.reads += 1
            except ValueError as exc:  # json.JSONDecodeError: a torn write
                self.errors.append(exc)
            time.sleep(0.001)


def test_a_tailer_killed_mid_file_loses_no_line_after_restart(broker, tmp_path):
    log_file = tmp_path / "app.log"
    checkpoint = tmp_path / "checkpoint.json"
    kafka = kafka_settings(broker.bootstrap_servers)
    written: list[str] = []
    stop_writing = threading.Event()

    def writer():  # appends until told to stop, so the kill and the restart happen mid-file
        with open(log_file, "a") as f:
            batch = 0
            while not stop_writing.is_set():
                lines = [f"line {batch:05d}.{i:02d} " + "x" * 60 for i in range(20)]
                f.write("".join(line + "\n" for line in lines))
                f.flush()
                written.extend(lines)
                batch += 1
                time.sleep(0.005)

    log_file.touch()
    cmd, env = tail_command([log_file], checkpoint, broker.bootstrap_servers, kafka.input_topic)
    watcher = CheckpointWatcher(checkpoint)
    writing = threading.Thread(target=writer)
    processes = [subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)]
    watcher.start()
    writing.start()
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not (checkpoint_offset(checkpoint, log_file) or 0) > 0:
            assert processes[0].poll() is None, processes[0].stderr.read()
            assert time.monotonic() < deadline, "the tailer never saved a checkpoint"
            time.sleep(0.01)
        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait(5)
        killed_at = checkpoint_offset(checkpoint, log_file)
        time.sleep(0.3)  # lines pile up while no tailer runs
        processes.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True))
        time.sleep(1.0)
        stop_writing.set()
        writing.join()
        assert 0 < killed_at < log_file.stat().st_size

        async def read_all():
            async with TopicReader(kafka) as reader:
                await reader.wait_for_lines(written)
            return reader

        reader = run_async(read_all())
        processes[1].send_signal(signal.SIGTERM)
        assert processes[1].wait(TIMEOUT_S) == 0, processes[1].stderr.read()
    finally:
        stop_writing.set()
        watcher.done.set()
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert set(reader.lines) >= set(written)  # duplicates allowed, losses not
    assert checkpoint_offset(checkpoint, log_file) == log_file.stat().st_size  # clean stop: all acked
    assert watcher.reads > 100 and not watcher.errors


def test_once_against_an_unreachable_broker_fails_clearly_and_keeps_the_checkpoint(broker, tmp_path):
    log_file = tmp_path / "app.log"
    checkpoint = tmp_path / "checkpoint.json"
    kafka = kafka_settings(broker.bootstrap_servers)
    append(log_file, "one", "two")
    cmd, env = tail_command([log_file], checkpoint, broker.bootstrap_servers, kafka.input_topic, "--once")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr
    saved = checkpoint.read_bytes()
    assert checkpoint_offset(checkpoint, log_file) == log_file.stat().st_size

    append(log_file, "three", "four")
    closed = f"127.0.0.1:{free_port()}"
    cmd_down, env = tail_command([log_file], checkpoint, closed, kafka.input_topic, "--once")
    failed = subprocess.run(cmd_down, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert failed.returncode == 1
    assert f"cannot reach a Kafka broker at {closed}" in failed.stderr
    assert "--bootstrap-servers" in failed.stderr and "Traceback" not in failed.stderr
    assert checkpoint.read_bytes() == saved  # nothing acknowledged, nothing advanced

    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert resumed.returncode == 0, resumed.stderr

    async def read_all():
        async with TopicReader(kafka) as reader:
            await reader.wait_for_lines(["one", "two", "three", "four"])
            await reader.settle(0.2)
        return reader

    assert run_async(read_all()).lines == ["one", "two", "three", "four"]  # resumed where it stopped


def test_reading_pauses_while_kafka_does_not_acknowledge(tmp_path):
    log_file = tmp_path / "app.log"
    append(log_file, "warm-up")
    lines = [f"line {i}" for i in range(200)]
    tail = tail_settings(tmp_path, max_inflight_lines=5)

    async def scenario(stalled_broker):
        kafka = kafka_settings(stalled_broker.bootstrap_servers)
        async with TopicReader(kafka) as reader, RunningTailer([log_file], tail, kafka) as tailer:
            await reader.wait_for_lines(["warm-up"])
            while checkpoint_offset(tmp_path / "checkpoint.json", log_file) != len(b"warm-up\n"):
                await asyncio.sleep(0.01)
            os.kill(stalled_broker.process.pid, signal.SIGSTOP)
            try:
                append(log_file, *lines)
                await asyncio.sleep(0.5)
                inflight_while_stalled = tailer.inflight_lines
                offset_while_stalled = checkpoint_offset(tmp_path / "checkpoint.json", log_file)
            finally:
                os.kill(stalled_broker.process.pid, signal.SIGCONT)
            await reader.wait_for_lines(lines)
        return reader, inflight_while_stalled, offset_while_stalled

    with EmbeddedBroker() as stalled_broker:  # its own broker: this test freezes it
        reader, inflight, offset = run_async(scenario(stalled_broker))
    assert inflight == 5  # stopped at the limit, not reading on
    assert offset == len(b"warm-up\n")  # nothing unacknowledged was checkpointed
    assert reader.lines == ["warm-up"] + lines


def test_the_tailer_serves_its_own_metrics_and_refuses_a_port_in_use(broker, tmp_path):
    log_file = tmp_path / "app.log"
    kafka = kafka_settings(broker.bootstrap_servers)
    append(log_file, *(f"line {i}" for i in range(50)), "y" * 20_000)  # the last is cut at the 16 KiB cap
    cmd, env = tail_command([log_file], tmp_path / "cp.json", broker.bootstrap_servers, kafka.input_topic)
    port = int(env["LOGSTREAM_TAIL__METRICS_PORT"])
    process = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while tailer_metrics(port).get("logstream_tailer_lines_total", 0) < 51:
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, f"the tailer's endpoint never counted 51 lines: {tailer_metrics(port)}"
            time.sleep(0.05)
        values = tailer_metrics(port)
        assert values["logstream_tailer_lines_total"] == 51
        assert values["logstream_tailer_truncated_lines_total"] == 1
        assert values["logstream_tailer_files"] == 1
        assert not any(name.startswith("logstream_entries") for name in values)  # the worker's are not here
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 1
        assert f"127.0.0.1:{port}" in second.stderr and "LOGSTREAM_TAIL__METRICS_PORT" in second.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(TIMEOUT_S) == 0, process.stderr.read()
