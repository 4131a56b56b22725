"""Poison pills: an input message that kills the worker is dead-lettered, never looped on.

A worker that dies while it handles a batch (killed by the kernel for memory, a crash below
Python, a message that makes it exit) starts again at the last committed offset and reads the
same batch again: if a message in it is what killed it, it dies again, for ever. So the messages
of the batch in hand are written down (``<data_dir>/inflight.json``, atomically) before they are
handled and struck off after. At the next start, the messages written down are suspects: they are
handled one at a time, each written down alone; a worker that dies on a suspect alone finds it
alone at its next start, and dead-letters it with the reason, then goes on.

One file write per batch; an orderly stop finishes or abandons its batch without a verdict
(suspects are only handled one by one, never dead-lettered, unless the worker dies on one alone).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..files import write_atomically

log = logging.getLogger("logstream.inflight")

Key = tuple[str, int, int]  # topic, partition, offset


class InflightLog:
    def __init__(self, path: Path):
        self.path = path
        self.suspects: set[Key] = set()
        self.poison: Key | None = None  # the suspect the worker died on when it held it alone
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s (%s)", self.path, exc)
            return
        held = [tuple(key) for key in data.get("held", [])]
        self.suspects = set(held)
        if data.get("alone") and len(held) == 1:
            self.poison = held[0]
        if held:
            log.warning("the worker stopped while it held %d input messages%s: they are handled one at a time",
                        len(held), " (one alone: it is dead-lettered)" if self.poison else "")

    def hold(self, keys: list[Key], alone: bool = False) -> None:
        """Write down the messages about to be handled (before any work on them)."""
        write_atomically(self.path, json.dumps({"held": [list(k) for k in keys], "alone": alone}))

    def done(self, keys: list[Key]) -> None:
        """The messages were handled: strike them off (and off the suspects)."""
        self.suspects.difference_update(keys)
        if self.poison in keys:
            self.poison = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
