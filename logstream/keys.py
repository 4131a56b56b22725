"""Stream and group keys read off a log line by a regex (an HDFS block id, a host, a service)."""

from __future__ import annotations

import re


def key_of(pattern: re.Pattern, text: str) -> str | None:
    """The regex's first match in ``text`` (its group 1 when it has groups), or None."""
    match = pattern.search(text)
    if match is None:
        return None
    return match.group(1) if pattern.groups else match.group(0)
