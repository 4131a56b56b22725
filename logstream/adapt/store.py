"""Model versions on disk: every adapted model is kept, the one served is a pointer, any can come back.

    <root>/versions/<version>/   complete model directories (weights, tokenizer, logstream.json)
    <root>/current               the version served (absent: the base model, ``model.path``)
    <root>/history.jsonl         one record per version made or rolled back to

The base model (the shipped one, or ``model.path``) is never written to.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from ..files import write_atomically
from ..scoring.card import ModelCard

BASE = "base"


class ModelStore:
    def __init__(self, root: str | Path, base: str | Path):
        self.root, self.base = Path(root), Path(base)

    @property
    def versions_dir(self) -> Path:
        return self.root / "versions"

    def current_version(self) -> str:
        pointer = self.root / "current"
        if pointer.exists():
            version = pointer.read_text().strip()
            if version == BASE or (self.versions_dir / version).is_dir():
                return version
        return BASE

    def current(self) -> Path:
        """The model directory to serve."""
        return self.path_of(self.current_version())

    def path_of(self, version: str) -> Path:
        if version == BASE:
            return self.base
        path = self.versions_dir / version
        if not path.is_dir():
            known = ", ".join([BASE] + [v["version"] for v in self.history()]) or BASE
            raise ValueError(f"no model version {version!r} in {self.root} (known: {known})")
        return path

    def add(self, staged: str | Path, reason: str) -> str:
        """Move a finished model directory into the store and serve it; returns its version."""
        staged = Path(staged)
        version = ModelCard.load(staged).model_version
        target = self.versions_dir / version
        self.versions_dir.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(staged)
        else:
            staged.rename(target)
        self._point(version, reason)
        return version

    def rollback(self, version: str | None = None) -> str:
        """Serve ``version`` (default: the one the current version was made from: rolling back again
        goes further back, to the base model at last)."""
        if version is None:
            current = self.current_version()
            made = [r for r in self.history() if r["version"] == current and r["reason"] != "rollback"]
            version = made[0]["previous"] if made else BASE
        self.path_of(version)  # exists?
        self._point(version, "rollback")
        return version

    def history(self) -> list[dict]:
        path = self.root / "history.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def _point(self, version: str, reason: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        previous = self.current_version()
        # through a temporary file of this writer's own: workers on one host share the store (``worker_slot``)
        write_atomically(self.root / "current", version + "\n")
        record = {"version": version, "previous": previous, "reason": reason,
                  "time": datetime.now(UTC).isoformat(timespec="seconds")}
        with (self.root / "history.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")
