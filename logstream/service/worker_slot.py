"""Each worker process's own part of ``worker.data_dir``: its saved thresholds and its record of the batch in hand.

Workers started on one host with one configuration share ``worker.data_dir`` (its default is one per consumer
group, and the README's way to scale is one worker per core): each saved its adaptive thresholds over the
other's, and each read, at its next start, what the other had learned of the other's partitions; one worker's
record of the messages in hand (``inflight.json``) overwrote the other's, so a worker that died on a poison
message could find the other's batch at its restart instead of its own. So a worker claims a slot,
``<data_dir>/workers/<n>``, the lowest one no live process holds, by an exclusive lock on a file in it, held
for its life and released by the kernel when it dies: a restarted worker takes a free slot again, on one host
the one it had whenever the others keep theirs (one that starts while a dead worker's slot is free takes that
slot, and its state, as a restart of that worker would). Locks are ``flock``s: one host and a local
filesystem (a network filesystem may not lock across hosts). The model versions (``<data_dir>/models``) stay shared: a
rollback from the CLI names one store for every worker.
"""

from __future__ import annotations

import fcntl
import logging
import os
import weakref
from pathlib import Path

log = logging.getLogger("logstream.worker")

MAX_SLOTS = 1024  # workers of one data_dir on one host
# what a worker kept in data_dir itself before slots: the first slot takes it over
UNSLOTTED = ("adaptive-thresholds.json", "inflight.json")


class WorkerSlot:
    """A claimed slot: ``path`` is this worker's own directory until ``release`` (or the process ends)."""

    def __init__(self, path: Path, handle: int):
        self.path = path
        self._release = weakref.finalize(self, os.close, handle)

    @property
    def held(self) -> bool:
        return self._release.alive

    def release(self) -> None:
        self._release()


def claim_slot(data_dir: Path, max_slots: int = MAX_SLOTS) -> WorkerSlot:
    """The lowest slot of ``data_dir`` that no live process holds, now held by this one."""
    for number in range(max_slots):
        path = data_dir / "workers" / str(number)
        path.mkdir(parents=True, exist_ok=True)
        try:
            handle = os.open(path / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:  # another user's worker made it: not this one's to take
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a live worker holds it
            os.close(handle)
            continue
        except OSError:  # no locks here (ENOLCK): the caller says what to do
            os.close(handle)
            raise
        os.ftruncate(handle, 0)
        os.write(handle, f"{os.getpid()}\n".encode())  # who holds it, for a person looking
        if number == 0:
            _take_over_unslotted(data_dir, path)
        log.info("worker slot %s (its saved thresholds and messages in hand)", path)
        return WorkerSlot(path, handle)
    raise ValueError(f"all {max_slots} worker slots of {data_dir} are held by live processes: give these "
                       "workers data directories of their own (LOGSTREAM_WORKER__DATA_DIR)")


def _take_over_unslotted(data_dir: Path, slot: Path) -> None:
    """Files a worker kept in ``data_dir`` itself (before slots) move into the first slot, unless it has its own."""
    for name in UNSLOTTED:
        old, new = data_dir / name, slot / name
        if old.exists() and not new.exists():
            os.replace(old, new)
            log.info("moved %s into the worker slot %s", old, slot)
