"""Alerts as people read them: one block per alert (``logstream alerts``, ``logstream demo``)."""

from __future__ import annotations

from ..alerts import Alert


def _time(alert: Alert) -> str:
    return alert.time.strftime("%Y-%m-%d %H:%M:%S") + "Z"


def format_alert(alert: Alert, update: bool = False) -> str:
    """A block of a few lines. ``update``: a count update of an alert shown before (same alert_id)."""
    position = "" if alert.offset is None else f"  [partition {alert.partition}, offset {alert.offset}]"
    if update:
        return (f"~ {alert.stream}: the alert of {_time(alert)} now counts {alert.count} lines "
                f"(last seen {alert.last_seen:%H:%M:%S}Z){position}\n  {alert.line}")
    count = f"  x{alert.count}" if alert.count > 1 else ""
    how = f" ({alert.threshold_how})" if alert.threshold_how else ""
    score = f"{alert.score_text()}{how}"
    lines = [f"! {_time(alert)}  {alert.stream}  {score}{count}{position}", f"  {alert.line}"]
    if alert.explanation.summary:
        lines.append(f"  {alert.explanation.summary}")
    return "\n".join(lines)
