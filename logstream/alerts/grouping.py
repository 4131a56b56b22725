"""Alert grouping: a burst of the same anomaly in one stream raises one alert with a count.

Group key: (stream, template), or (stream, the line with numbers/ids/IPs masked) when the line has
no template. The first anomaly of a group is emitted at once; the ones that follow within
``window_s`` of the group's last emission, both on the clock and in their entries' own time, are
folded into it (``count`` grows, nothing is sent): a backlog read in seconds (a tailer catching up,
a worker back from an outage, a demo's history) holds anomalies minutes apart, each news of its own;
once the window has passed, ``flush`` emits one update per group that folded anything (same
``alert_id``, the total count, the latest ``last_seen``). The first anomaly after a quiet window
opens a new alert.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from logstream.alerts.model import Alert
from logstream.service.metrics import ALERTS_SUPPRESSED


@dataclass
class _Group:
    alert: Alert          # the alert as last emitted (its id is the group's id)
    emitted_at: float     # clock time of the last emission
    entry_at: datetime    # entry time of the newest anomaly in the last emission
    touched_at: float     # clock time of the last anomaly or emission
    count: int            # anomalies in this alert so far
    folded: int = 0       # anomalies folded since the last emission
    last_seen: datetime | None = None  # entry time of the newest folded anomaly

    def update(self) -> Alert:
        return self.alert.model_copy(update={"count": self.count, "last_seen": self.last_seen})


class AlertGrouper:
    """Folds repeated anomalies. Not thread-safe: call it from one task (the worker's event loop)."""

    def __init__(self, window_s: float, clock: Callable[[], float] = time.monotonic, *,
                 max_groups: int = 10_000, forget_after_windows: float = 3.0):
        if window_s < 0:
            raise ValueError("window_s must be >= 0")
        if max_groups < 1:
            raise ValueError("max_groups must be >= 1")
        self.window_s = window_s
        self.clock = clock
        self.max_groups = max_groups
        # A group quiet for this long is forgotten; its next anomaly is news again anyway.
        self.forget_after_s = max(window_s * forget_after_windows, window_s)
        self._groups: OrderedDict[tuple[str, str], _Group] = OrderedDict()  # least recently touched first

    def __len__(self) -> int:
        return len(self._groups)

    def add(self, alert: Alert) -> list[Alert]:
        """The alerts to deliver now because of this anomaly, in order: usually [alert] or [].

        An anomaly that arrives after its group's window, before ``flush`` ran, also returns the
        group's pending count update first; so does one whose arrival evicts a group with folds.
        """
        now = self.clock()
        key = alert.group_key
        group = self._groups.get(key)
        if (group is not None and now - group.emitted_at < self.window_s
                and abs((alert.time - group.entry_at).total_seconds()) < self.window_s):
            group.count += alert.count
            group.folded += alert.count
            group.last_seen = max(group.last_seen or alert.last_seen, alert.last_seen)
            group.touched_at = now
            self._groups.move_to_end(key)
            ALERTS_SUPPRESSED.inc(alert.count)
            return []
        out: list[Alert] = []
        if group is not None and group.folded:
            out.append(group.update())
        self._groups[key] = _Group(alert=alert, emitted_at=now, entry_at=alert.time, touched_at=now,
                                   count=alert.count)
        self._groups.move_to_end(key)
        out.append(alert)
        while len(self._groups) > self.max_groups:
            _, evicted = self._groups.popitem(last=False)
            if evicted.folded:
                out.insert(0, evicted.update())
        return out

    def flush(self, now: float | None = None, *, force: bool = False) -> list[Alert]:
        """Count updates of the groups whose window has passed (all groups with folds if ``force``,
        e.g. at shutdown); forgets groups idle for longer than a few windows."""
        now = self.clock() if now is None else now
        updates: list[Alert] = []
        for key, group in list(self._groups.items()):
            if group.folded and (force or now - group.emitted_at >= self.window_s):
                update = group.update()
                updates.append(update)
                # Folds after this update count towards the same alert, one window from now.
                group.alert, group.emitted_at, group.touched_at, group.folded = update, now, now, 0
                group.entry_at = group.last_seen or group.entry_at
                self._groups.move_to_end(key)
            elif not group.folded and now - group.touched_at > self.forget_after_s:
                del self._groups[key]
        return updates
