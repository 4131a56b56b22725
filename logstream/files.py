"""Writing a file atomically: readers (and a restart) see the old content or the new, never half of it."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file beside it, then one rename. The temporary file is the
    writer's own (its pid and thread): two workers started with one data_dir (its default is one per consumer
    group) each replaced the other's shared ``.tmp``, and one crashed on the missing file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temp.write_text(text)
    os.replace(temp, path)
