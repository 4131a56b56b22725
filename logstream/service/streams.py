"""Which stream a line belongs to, and which input partitions each stream's lines came from.

A stream's window in the engine is only right while this worker sees all of its lines, i.e. while it
owns the partitions they arrive on. After a rebalance takes a partition away, its streams are
dropped from the engine; when partitions arrive, their streams start fresh (warming up).
"""

from __future__ import annotations

import re
from collections import OrderedDict

from ..keys import key_of


class StreamRouter:
    def __init__(self, stream_key: str | None = None, max_streams: int = 1_000_000):
        # a regex whose first match in the line (group 1 if it has one) names the stream, e.g. an
        # HDFS block id; lines it does not match keep the message's stream (key, envelope)
        self.pattern = re.compile(stream_key) if stream_key else None
        # least recently seen first. Bounded: keys may be request ids that never end (no session
        # pattern), and an entry per key ever seen would grow without end (measured: the engine's own
        # memory stays bounded with 80,000 new keys). A stream pushed out is returned by
        # take_pushed_out, to be dropped from the engine too: its partitions are no longer known.
        self._partitions: OrderedDict[str, set[tuple[str, int]]] = OrderedDict()
        self.max_streams = max_streams
        self._pushed_out: list[str] = []

    def stream_for(self, line: str, default: str) -> str:
        if self.pattern is None:
            return default
        return key_of(self.pattern, line) or default

    def seen(self, stream: str, topic: str, partition: int) -> None:
        seen = self._partitions.get(stream)
        if seen is None:
            seen = self._partitions[stream] = set()
            if len(self._partitions) > self.max_streams:
                self._pushed_out.append(self._partitions.popitem(last=False)[0])
        else:
            self._partitions.move_to_end(stream)
        seen.add((topic, partition))

    def take_pushed_out(self) -> list[str]:
        """The streams pushed out (least recently seen) since the last call."""
        out, self._pushed_out = self._pushed_out, []
        return out

    def revoke(self, partitions: set[tuple[str, int]]) -> list[str]:
        """Forget the streams that had lines on any of ``partitions``; returns them (to drop)."""
        gone = [stream for stream, seen in self._partitions.items() if seen & partitions]
        for stream in gone:
            del self._partitions[stream]
        return gone

    def forget(self, streams: list[str]) -> None:
        """Streams that ended (sessions): nothing of them is kept."""
        for stream in streams:
            self._partitions.pop(stream, None)

    def __len__(self) -> int:
        return len(self._partitions)
