"""Tail log files into the input topic, at least once.

``FileTailer`` polls a set of paths and globs, reads new bytes of every matching file, cuts them
into lines and sends each line to Kafka as a JSON ``LogEnvelope`` keyed by its stream id.

* A file is known by (st_dev, st_ino) plus a fingerprint of its first bytes, not by its name: a
  file renamed away (rotation) is drained through its open descriptor, the new file at the old
  name is read from 0, and a reused inode with other content is a new file.
* A file that shrinks below the read offset, or whose first bytes change, was truncated
  (copytruncate) and is read again from 0, after what was not read of it yet is read from its
  copy (a file next to it, or matched by the patterns, that starts with the same bytes). A copy of
  a followed file (the same first bytes, another inode) that the patterns match is not read again
  as a stream of its own.
* Offsets are saved (atomically) only up to the end of the last line that Kafka acknowledged,
  with every line before it acknowledged too; after a crash the tailer resends from there.
  Lines can arrive twice, never zero times, with two exceptions outside its reach: lines
  copytruncate writes between its copy and its truncate, and the unread end of a file rotated
  (renamed or copied and truncated) while the tailer was not running.
* At most ``max_inflight_lines`` lines are unacknowledged; reading waits while Kafka is behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import glob
import hashlib
import json
import logging
import os
import socket
import stat
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError, UnknownError, UnsupportedVersionError
from aiokafka.partitioner import DefaultPartitioner

from ..config import KafkaSettings, TailSettings
from .envelope import LogEnvelope
from .metrics import TAILER_BROKER_UP, TAILER_FILES, TAILER_LINES, TAILER_TRUNCATED
from .topics import ensure_topics, unreachable

log = logging.getLogger("logstream.tail")

FINGERPRINT_BYTES = 1024  # enough to tell two log files apart by their first lines
COPY_MIN_BYTES = 256  # a file is taken for a copy of another by first bytes only from this many on
READ_CHUNK_BYTES = 64 * 1024
MAX_BYTES_PER_PASS = 1 << 20  # per file and poll, so one busy file cannot starve the others
RESAVE_AFTER_S = 60.0  # re-save even without progress, so last_seen of idle files stays fresh


class TailerError(RuntimeError):
    """The tailer cannot go on (Kafka unreachable or not acknowledging, checkpoint in use)."""


# --- file identity -------------------------------------------------------------------------------

@dataclass(frozen=True)
class FileId:
    dev: int
    ino: int


def fingerprint(fd: int) -> tuple[str, int]:
    """(sha256 hex, length) of the first up to FINGERPRINT_BYTES bytes."""
    head = os.pread(fd, FINGERPRINT_BYTES, 0)
    return hashlib.sha256(head).hexdigest(), len(head)


def fingerprint_matches(fd: int, digest: str, length: int) -> bool:
    """Whether the file still starts with the bytes the fingerprint was taken from."""
    head = os.pread(fd, length, 0)
    return len(head) == length and hashlib.sha256(head).hexdigest() == digest


def printable_path(path: str) -> str:
    """A path as valid UTF-8 text (undecodable file-name bytes become U+FFFD)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# --- lines ---------------------------------------------------------------------------------------

@dataclass
class Line:
    text: str
    end_offset: int  # file offset just past this line's newline: where a restart resumes
    truncated: bool = False


def utf8_cut(data: bytes, limit: int) -> bytes:
    """``data[:limit]``, moved back so that it does not end inside a multi-byte character."""
    cut = limit
    for _ in range(3):  # a UTF-8 character has at most 3 continuation bytes
        if cut < len(data) and data[cut] & 0xC0 == 0x80:
            cut -= 1
        else:
            break
    return data[:cut]


def decode_line(data: bytes) -> str:
    if data.endswith(b"\r"):  # CRLF files
        data = data[:-1]
    return data.decode("utf-8", errors="replace")


class LineSplitter:
    """Cuts a byte stream into lines; holds the partial last line, at most ``max_line_bytes`` of it."""

    def __init__(self, max_line_bytes: int):
        self.max_line_bytes = max_line_bytes
        self._held = bytearray()
        self._overflow = False  # the held line was longer than the cap; the rest is being skipped

    @property
    def holding(self) -> bool:
        return bool(self._held) or self._overflow

    def feed(self, data: bytes, base_offset: int) -> Iterator[Line]:
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            self._hold(data[start:newline])
            yield self._take(base_offset + newline + 1)
            start = newline + 1
        self._hold(data[start:])

    def flush(self, end_offset: int) -> Line | None:
        """The held partial line, as if it had ended at ``end_offset`` (its file is going away)."""
        return self._take(end_offset) if self.holding else None

    def _hold(self, piece: bytes) -> None:
        room = self.max_line_bytes + 3 - len(self._held)  # 3 spare bytes to cut at a character boundary
        if len(piece) > room:
            piece, self._overflow = piece[:max(room, 0)], True
        self._held += piece

    def _take(self, end_offset: int) -> Line:
        data = bytes(self._held)
        truncated = self._overflow or len(data) > self.max_line_bytes
        if truncated:
            data = utf8_cut(data, self.max_line_bytes)
        self._held.clear()
        self._overflow = False
        return Line(decode_line(data), end_offset, truncated)


# --- acknowledgements ----------------------------------------------------------------------------

class AckTracker:
    """The offset up to which every line of one file (one generation of it) was acknowledged.

    Kafka acknowledges batches per partition, and the lines of one file all go to one partition, so
    acks arrive in order in practice; the tracker does not rely on it.
    """

    def __init__(self, committed: int):
        self.committed = committed
        self._pending: deque[list] = deque()  # [end_offset, acknowledged] in send order

    @property
    def idle(self) -> bool:
        return not self._pending

    def add(self, end_offset: int) -> list:
        entry = [end_offset, False]
        self._pending.append(entry)
        return entry

    def skip(self, end_offset: int) -> None:
        """A line that is not sent (empty) counts as acknowledged once the lines before it are."""
        if self._pending:
            self._pending.append([end_offset, True])
        else:
            self.committed = end_offset

    def ack(self, entry: list) -> None:
        entry[1] = True
        while self._pending and self._pending[0][1]:
            self.committed = self._pending.popleft()[0]


# --- checkpoints ---------------------------------------------------------------------------------

@dataclass
class Checkpoint:
    path: str
    dev: int
    ino: int
    fingerprint: str
    fingerprint_bytes: int
    offset: int  # end of the last line acknowledged, with all lines before it
    last_seen: float  # wall-clock time the file was last found at a watched path

    @property
    def file_id(self) -> FileId:
        return FileId(self.dev, self.ino)


class CheckpointStore:
    """One JSON file of checkpoints, replaced atomically (write temp, fsync, rename, fsync dir)."""

    VERSION = 1

    def __init__(self, path: Path):
        self.path = Path(path).absolute()
        self.temp_path = self.path.with_name(self.path.name + ".tmp")
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def load(self) -> list[Checkpoint]:
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text())
            return [Checkpoint(**entry) for entry in data["files"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"checkpoint file {self.path} is not valid ({exc}); move it away to start over "
                             "(files are then read according to --start-at)") from None

    def save(self, entries: list[Checkpoint]) -> None:
        payload = json.dumps({"version": self.VERSION, "files": [asdict(e) for e in entries]}, indent=1)
        fd = os.open(self.temp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, payload.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.temp_path, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # make the rename itself durable
        finally:
            os.close(dir_fd)

    @contextlib.contextmanager
    def locked(self):
        """Exclusive use of the checkpoint: two tailers writing one checkpoint would lose offsets."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise TailerError(f"checkpoint {self.path} is in use by another tailer "
                                  "(give each tailer its own --checkpoint)") from None
            yield
        finally:
            os.close(fd)


# --- one followed file ---------------------------------------------------------------------------

@dataclass
class TrackedFile:
    file_id: FileId
    path: str  # where it was first seen: its stream keeps this name after a rotation
    fd: int | None
    read_offset: int
    splitter: LineSplitter
    acks: AckTracker
    fingerprint: str
    fingerprint_bytes: int
    last_seen: float
    key: bytes = b""  # the stream id its lines are sent with
    partition: int | None = None  # the key's partition, hashed once instead of for every line
    gone_since: float | None = None  # monotonic time it stopped matching (renamed away or deleted)
    quiet_since: float = field(default_factory=time.monotonic)  # monotonic time of the last new bytes

    @property
    def source(self) -> str:
        return printable_path(self.path)

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.path, self.file_id.dev, self.file_id.ino, self.fingerprint,
                          self.fingerprint_bytes, self.acks.committed, self.last_seen)

    def refresh_fingerprint(self) -> None:
        self.fingerprint, self.fingerprint_bytes = fingerprint(self.fd)


# --- the tailer ----------------------------------------------------------------------------------

async def start_producer(kafka: KafkaSettings, ack_timeout_s: float) -> AIOKafkaProducer:
    """An idempotent producer (acks=all); acks=all alone where the broker refuses idempotence."""
    common = {**kafka.client_options(), "client_id": "logstream-tail", "linger_ms": 5,
              "request_timeout_ms": int(ack_timeout_s * 1000)}
    producer = AIOKafkaProducer(enable_idempotence=True, **common)
    try:
        await producer.start()
        return producer
    except KafkaConnectionError as exc:
        await producer.stop()
        raise unreachable(kafka.bootstrap_servers, exc) from None
    except (UnknownError, UnsupportedVersionError) as exc:
        # Tansu 0.6 (the bundled broker) rejects aiokafka's InitProducerId v0 request
        await producer.stop()
        log.warning("the broker at %s refused an idempotent producer (%s); using acks=all without "
                    "idempotence: still at least once, but a batch retried by the client may be written "
                    "twice", kafka.bootstrap_servers, type(exc).__name__)
    producer = AIOKafkaProducer(acks="all", **common)
    try:
        await producer.start()
    except KafkaConnectionError as exc:
        await producer.stop()
        raise unreachable(kafka.bootstrap_servers, exc) from None
    return producer


class FileTailer:
    """Follows ``patterns`` (paths or globs) and sends their lines to ``kafka.input_topic``."""

    def __init__(self, patterns: list[str], tail: TailSettings, kafka: KafkaSettings):
        if not patterns:
            raise ValueError("give at least one path or glob to tail")
        self.patterns = [os.path.expanduser(p) for p in patterns]
        self.tail = tail
        self.kafka = kafka
        self.store = CheckpointStore(tail.checkpoint_path)
        self._own_files = {str(self.store.path), str(self.store.temp_path), str(self.store.lock_path)}
        self._host = socket.gethostname()
        self._files: dict[FileId, TrackedFile] = {}
        self._dormant: dict[FileId, Checkpoint] = {}  # checkpoints of files not (yet) found again
        self._copies: dict[FileId, int] = {}  # copies of followed files (copytruncate), read up to here
        self._producer: AIOKafkaProducer | None = None
        self._inflight = 0
        self._progress = asyncio.Event()  # set on every acknowledgement or failure
        self._failure: BaseException | None = None
        self._dirty = False
        self._last_save = 0.0

    @property
    def inflight_lines(self) -> int:
        """Lines handed to the producer and not yet acknowledged."""
        return self._inflight

    async def run(self, stop: asyncio.Event | None = None, *, once: bool = False) -> None:
        """Tail until ``stop`` is set (or, with ``once``, until every file is read to its end).

        Returns after every sent line is acknowledged and the checkpoint saved; raises TailerError
        (with the checkpoint saved up to what was acknowledged) when Kafka fails.
        """
        stop = stop or asyncio.Event()
        with self.store.locked():
            self._dormant = {cp.file_id: cp for cp in self.store.load()}
            await ensure_topics(self.kafka, [self.kafka.input_topic])
            self._producer = await start_producer(self.kafka, self.tail.ack_timeout_s)
            TAILER_BROKER_UP.set(1)
            try:
                first = True
                while True:
                    # after a stop request, one last pass closes rotated files (sending their last,
                    # unterminated line); lines still incomplete in live files wait for the next run
                    stopping = stop.is_set()
                    read = await self._poll(first_scan=first, closing=once or stopping)
                    first = False
                    self._save_if_due()
                    if stopping or (once and read == 0):
                        break
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(stop.wait(), self.tail.poll_interval_s)
                await self._wait_until(lambda: self._inflight == 0)
            finally:
                with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                    await asyncio.wait_for(self._producer.stop(), self.tail.ack_timeout_s)
                self._close_all()
                self.store.save(self._checkpoints())  # offsets only ever come from acks: always safe
        log.info("tailer stopped; checkpoint saved to %s", self.store.path)

    # -- polling --

    async def _poll(self, first_scan: bool, closing: bool) -> int:
        """One pass over all files; returns the number of bytes read."""
        self._raise_if_failed()
        found = self._scan()
        TAILER_FILES.set(len(found))
        now, mono = time.time(), time.monotonic()
        read = 0
        # files that no longer match (renamed away, deleted): drain them first, so their last lines
        # precede the first lines of the file that replaced them
        for f in list(self._files.values()):
            if f.fd is None or f.file_id in found:
                continue
            if f.gone_since is None:
                f.gone_since = f.quiet_since = mono  # the writer may not have reopened yet: give it time
                log.info("%s was rotated away or deleted; reading it to its end", f.path)
            n = await self._read(f, limit=None)
            read += n
            if n:
                f.quiet_since = mono
            if closing or mono - f.quiet_since >= self.tail.rotate_wait_s:
                await self._close(f)
        for file_id, path in found.items():
            f = self._files.get(file_id)
            if f is None or f.fd is None:
                f = self._open(file_id, path, first_scan)
                if f is None:
                    continue
            f.last_seen, f.gone_since = now, None
            await self._check_truncation(f, found)
            n = await self._read(f, limit=MAX_BYTES_PER_PASS)
            read += n
            if n:
                f.quiet_since = mono
        self._forget(now)
        return read

    def _scan(self) -> dict[FileId, str]:
        """Regular files matching the patterns now (globs are expanded anew on every poll)."""
        found: dict[FileId, str] = {}
        for pattern in self.patterns:
            for path in sorted(glob.glob(pattern, recursive=True)):
                path = os.path.abspath(path)
                if path in self._own_files:
                    continue
                try:
                    st = os.stat(path)
                except OSError:  # gone between glob and stat
                    continue
                if stat.S_ISREG(st.st_mode):
                    found.setdefault(FileId(st.st_dev, st.st_ino), path)
        return found

    def _open(self, file_id: FileId, path: str, first_scan: bool) -> TrackedFile | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            log.warning("cannot open %s: %s", path, exc)
            return None
        st = os.fstat(fd)
        if FileId(st.st_dev, st.st_ino) != file_id:  # replaced between stat and open: next poll
            os.close(fd)
            return None
        known = self._files.get(file_id)
        if known is not None:  # a closed file that matches again (renamed back): go on where it was
            known.fd = fd
            return known
        offset, stream_path = self._start_offset(file_id, path, fd, st.st_size, first_scan)
        original = self._copy_of(file_id, fd)
        if offset == 0 and (file_id in self._copies or original is not None):
            # a rotated copy: its lines went out as the original's (or will, when the original is
            # found truncated: ``_drain_copy``); read only what may be appended to it from now on
            offset = max(self._copies.pop(file_id, 0), st.st_size)
            log.info("%s is a copy of %s (copytruncate): not read again", path,
                     original.path if original else "a followed file")
        digest, length = fingerprint(fd)
        f = TrackedFile(file_id, stream_path, fd, offset, LineSplitter(self.tail.max_line_bytes),
                        AckTracker(offset), digest, length, time.time())
        f.key = printable_path(self._stream_key(f.path)).encode()
        self._files[file_id] = f
        self._dirty = True
        log.info("following %s from offset %d", path, offset)
        return f

    def _start_offset(self, file_id: FileId, path: str, fd: int, size: int,
                      first_scan: bool) -> tuple[int, str]:
        """Where to start reading a file just found, and the path its stream is named after."""
        cp = self._dormant.pop(file_id, None)
        if cp is not None:
            if not fingerprint_matches(fd, cp.fingerprint, cp.fingerprint_bytes):
                log.info("%s reuses the inode of %s with other content: a new file, read from 0", path,
                         cp.path)
                return 0, path
            if size < cp.offset:
                log.info("%s is shorter than its checkpoint: truncated, reading from 0", path)
                return 0, cp.path
            return cp.offset, cp.path
        # start_at is for files the tailer has no history of when it starts; a file that shows up
        # later, or replaced a file it followed before, was created since: every line of it counts
        replaced = any(d.path == path for d in self._dormant.values())
        if first_scan and not replaced and self.tail.start_at == "end":
            return size, path
        return 0, path

    def _copy_of(self, file_id: FileId, fd: int) -> TrackedFile | None:
        """The followed file this new one is a copy of (same first bytes, enough of them), or None."""
        for f in self._files.values():
            if (f.fd is not None and f.file_id != file_id and f.fingerprint_bytes >= COPY_MIN_BYTES
                    and fingerprint_matches(fd, f.fingerprint, f.fingerprint_bytes)):
                return f
        return None

    async def _drain_copy(self, f: TrackedFile, found: dict[FileId, str]) -> None:
        """``f`` was truncated: read what had not been read of it from its copy, if there is one (a file
        beside it named like it, or one the patterns match, that starts with its old first bytes)."""
        directory, name = os.path.split(f.path)
        try:
            siblings = [os.path.join(directory, e) for e in os.listdir(directory or ".") if e.startswith(name)]
        except OSError:
            siblings = []
        for path in dict.fromkeys([*found.values(), *siblings]):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                file_id = FileId(st.st_dev, st.st_ino)
                if (file_id == f.file_id or not stat.S_ISREG(st.st_mode) or st.st_size < f.read_offset
                        or not fingerprint_matches(fd, f.fingerprint, f.fingerprint_bytes)):
                    continue
                copied = st.st_size - f.read_offset
                log.info("%s was truncated with %d bytes not read yet: reading them from its copy %s", f.path,
                         copied, path)
                offset = f.read_offset
                while offset < st.st_size:
                    await self._wait_until(lambda: self._inflight < self.tail.max_inflight_lines)
                    data = os.pread(fd, READ_CHUNK_BYTES, offset)
                    if not data:
                        break
                    for line in f.splitter.feed(data, offset):
                        await self._send(f, line)
                    offset += len(data)
                tracked = self._files.get(file_id)
                if tracked is not None:
                    tracked.read_offset = max(tracked.read_offset, offset)
                else:
                    self._copies[file_id] = offset
                return
            finally:
                os.close(fd)

    async def _check_truncation(self, f: TrackedFile, found: dict[FileId, str]) -> None:
        size = os.fstat(f.fd).st_size
        if size < f.read_offset or not fingerprint_matches(f.fd, f.fingerprint, f.fingerprint_bytes):
            log.info("%s was truncated (copytruncate?); reading it again from 0", f.path)
            await self._drain_copy(f, found)
            await self._flush_partial(f)
            f.read_offset = 0
            f.acks = AckTracker(0)  # acks still due for the old content no longer move the checkpoint
            f.refresh_fingerprint()
            self._dirty = True
        elif f.fingerprint_bytes < FINGERPRINT_BYTES and size > f.fingerprint_bytes:
            f.refresh_fingerprint()

    async def _read(self, f: TrackedFile, limit: int | None) -> int:
        """Read and send new complete lines of ``f``; at most ``limit`` bytes (None: to the end)."""
        total = 0
        while limit is None or total < limit:
            await self._wait_until(lambda: self._inflight < self.tail.max_inflight_lines)
            data = os.pread(f.fd, READ_CHUNK_BYTES, f.read_offset)
            if not data:
                break
            base = f.read_offset
            f.read_offset += len(data)
            total += len(data)
            for line in f.splitter.feed(data, base):
                await self._send(f, line)
        return total

    async def _flush_partial(self, f: TrackedFile) -> None:
        line = f.splitter.flush(f.read_offset)
        if line is not None:
            await self._send(f, line)

    async def _close(self, f: TrackedFile) -> None:
        await self._flush_partial(f)
        os.close(f.fd)
        f.fd = None
        log.info("closed %s", f.path)

    def _close_all(self) -> None:
        for f in self._files.values():
            if f.fd is not None:
                os.close(f.fd)
                f.fd = None

    def _forget(self, now: float) -> None:
        horizon = now - self.tail.forget_after_s
        for file_id, f in list(self._files.items()):
            if f.fd is None and f.acks.idle and f.last_seen < horizon:
                del self._files[file_id]
                self._dirty = True
        for file_id, cp in list(self._dormant.items()):
            if cp.last_seen < horizon:
                del self._dormant[file_id]
                self._dirty = True

    # -- sending --

    def _stream_key(self, path: str) -> str:
        if self.tail.stream_from == "name":
            return os.path.basename(path)
        if self.tail.stream_from == "host":
            return self._host
        return path

    async def _partition_for(self, key: bytes) -> int:
        """The partition Kafka's default partitioner picks for ``key`` (murmur2, as the Java client)."""
        partitions = sorted(await self._producer.partitions_for(self.kafka.input_topic))
        return DefaultPartitioner()(key, partitions, partitions)

    async def _send(self, f: TrackedFile, line: Line) -> None:
        if not line.text:  # an empty line carries nothing to score
            f.acks.skip(line.end_offset)
            return
        if self._inflight >= self.tail.max_inflight_lines or self._failure is not None:
            await self._wait_until(lambda: self._inflight < self.tail.max_inflight_lines)
        if f.partition is None:
            f.partition = await self._partition_for(f.key)
        value = LogEnvelope(line=line.text, source=f.source, truncated=line.truncated).to_bytes()
        entry = f.acks.add(line.end_offset)
        self._inflight += 1
        try:
            delivery = await self._producer.send(self.kafka.input_topic, value, key=f.key,
                                                 partition=f.partition)
        except KafkaError as exc:
            self._inflight -= 1
            raise TailerError(f"Kafka at {self.kafka.bootstrap_servers} did not take a line: "
                              f"{type(exc).__name__}: {exc}") from None
        delivery.add_done_callback(partial(self._delivered, f.acks, entry))
        if line.truncated:
            TAILER_TRUNCATED.inc()

    def _delivered(self, acks: AckTracker, entry: list, delivery: asyncio.Future) -> None:
        self._inflight -= 1
        if delivery.cancelled():
            self._failure = self._failure or asyncio.CancelledError("delivery cancelled")
        elif delivery.exception() is not None:
            self._failure = self._failure or delivery.exception()
        else:
            acks.ack(entry)
            self._dirty = True
            TAILER_LINES.inc()
        self._progress.set()

    async def _wait_until(self, condition) -> None:
        """Wait for acknowledgements until ``condition()`` holds; raise if a delivery failed."""
        while True:
            self._raise_if_failed()
            if condition():
                return
            self._progress.clear()
            await self._progress.wait()

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            exc = self._failure
            raise TailerError(f"Kafka at {self.kafka.bootstrap_servers} did not acknowledge lines within "
                              f"{self.tail.ack_timeout_s:g} s ({type(exc).__name__}: {exc}); the checkpoint "
                              "keeps the last acknowledged offsets, a restart resends the rest")

    # -- checkpoints --

    def _checkpoints(self) -> list[Checkpoint]:
        return [f.checkpoint() for f in self._files.values()] + list(self._dormant.values())

    def _save_if_due(self) -> None:
        since = time.monotonic() - self._last_save
        if (self._dirty and since >= self.tail.checkpoint_interval_s) or since >= RESAVE_AFTER_S:
            self.store.save(self._checkpoints())
            self._dirty = False
            self._last_save = time.monotonic()
