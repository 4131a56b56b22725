"""Where models a user makes go: never into the installed package.

``logstream calibrate`` (and ``train``) write into a model directory of the user's
(``$XDG_DATA_HOME/logstream/models``, default ``~/.local/share/logstream/models``) when the model
they start from is the shipped one, and point the user's configuration
(``$XDG_CONFIG_HOME/logstream/logstream.yaml``, read when no ``--config``/``LOGSTREAM_CONFIG`` is given)
at it. The shipped model stays as it was installed.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import yaml

from .config import PACKAGE_DIR, user_config_path
from .files import write_atomically


def user_models_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "logstream" / "models"


def inside_package(path: str | Path) -> bool:
    return Path(path).resolve().is_relative_to(PACKAGE_DIR)


def writable_copy(model_dir: str | Path, name: str) -> Path:
    """``model_dir`` itself, or, for a model inside the installed package, a fresh copy of it under the
    user's models directory (``<name>-<time>``)."""
    model_dir = Path(model_dir)
    if not inside_package(model_dir):
        return model_dir
    target = user_models_dir() / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns("checkpoint"))
    return target


def point_config_at(model_dir: Path) -> Path | None:
    """Set model.path in the user's configuration file (created if missing); None when an explicit
    configuration is in use (LOGSTREAM_CONFIG), which is left alone."""
    if os.environ.get("LOGSTREAM_CONFIG"):
        return None
    path = user_config_path()
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    data = data or {}
    data.setdefault("model", {})["path"] = str(model_dir)
    write_atomically(path, yaml.safe_dump(data, sort_keys=False))
    return path
